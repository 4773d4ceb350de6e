//! Each agent session is recorded exactly once, from its own hooks (`pas-agent integrate`):
//! the session-end hook only marks the end and returns, the run is recorded off the agent's
//! clock by a detached completion, and whoever comes next completes a run whose completion
//! was cut short. Real Claude Code and Codex against the mock model, with their own HOME; the
//! session-end hooks of agents at two levels, end hooks delivered together, a completion
//! killed, and interactive Codex quit in a real terminal.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::common::{Sandbox, runs, stderr, stdout, walk};
use crate::hooks::isolated;
use crate::integrate::settled;
use crate::launcher_support::wait_for;
use crate::mock_model::{Mock, REPLY, require_agent};

const TASK: &str = "Reconcile the walrus-ledger exports with the bank feed";

fn session() -> Sandbox {
    let sb = Sandbox::repo();
    sb.ok(&["init", "--task", TASK]);
    sb
}

/// Runs `program` directly in the sandbox, as a user would from a shell; asserts success.
fn direct(sb: &Sandbox, program: &str, args: &[&str]) -> Output {
    let exe = which::which(program).expect("agent installed");
    let out = isolated(sb, &exe)
        .args(args)
        .output()
        .expect("run the agent");
    assert!(
        out.status.success(),
        "{program} failed\nstdout:\n{}\nstderr:\n{}",
        stdout(&out),
        stderr(&out)
    );
    out
}

/// Runs `pas-agent lifecycle <agent> <event>` with `payload` on stdin, without waiting.
fn lifecycle_spawn(sb: &Sandbox, agent: &str, event: &str, payload: &str) -> Child {
    let mut child = sb
        .cmd()
        .args(["lifecycle", agent, event])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    let _ = child.stdin.take().unwrap().write_all(payload.as_bytes());
    child
}

/// Holds the session lock with flock(1), as another pas-agent would, until dropped.
struct LockHolder(Child);

impl LockHolder {
    fn hold(sb: &Sandbox) -> LockHolder {
        let path = sb.path(".pas-agent/session.lock");
        let holder = LockHolder(
            Command::new("flock")
                .arg("--no-fork")
                .arg(&path)
                .args(["sleep", "300"])
                .stdout(Stdio::null())
                .spawn()
                .expect("flock(1) from util-linux"),
        );
        wait_for("the lock to be held", || {
            let free = Command::new("flock")
                .arg("-n")
                .arg(&path)
                .arg("true")
                .status()
                .unwrap()
                .success();
            (!free).then_some(())
        });
        holder
    }
}

impl Drop for LockHolder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The pids of the detached completions running in the sandbox's work directory.
fn completions(sb: &Sandbox) -> Vec<i32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let words: Vec<String> = cmdline
            .split(|b| *b == 0)
            .filter(|w| !w.is_empty())
            .map(|w| String::from_utf8_lossy(w).into_owned())
            .collect();
        let cwd = std::fs::read_link(entry.path().join("cwd")).ok();
        if words.iter().any(|w| w == "lifecycle")
            && words.last().is_some_and(|w| w == "complete")
            && cwd.as_deref() == Some(sb.work.as_path())
        {
            out.push(pid);
        }
    }
    out
}

/// The markers of the sandbox's session, and what they hold.
fn markers(sb: &Sandbox) -> Vec<(PathBuf, Value)> {
    walk(&sb.path(".pas-agent/runs/hooks"))
        .into_iter()
        .filter_map(|p| {
            let v = serde_json::from_str(&std::fs::read_to_string(&p).ok()?).ok()?;
            Some((p, v))
        })
        .collect()
}

#[test]
fn end_hooks_delivered_together_record_one_run_each_time() {
    let sb = session();
    let cwd = sb.work.to_string_lossy().into_owned();
    for round in 0..6 {
        // A file changed within a clock tick's margin (`MTIME_LAG`, 50 ms, in
        // src/launch/hooked.rs) before a session starts counts as the session's: the next
        // round starts clearly after the last one's file.
        std::thread::sleep(std::time::Duration::from_millis(120));
        let id = format!("0f0e0d0c-1111-4222-8333-44445555666{round}");
        let payload = format!(r#"{{"session_id":"{id}","cwd":"{cwd}"}}"#);
        let out = lifecycle_spawn(&sb, "claude", "session-start", &payload)
            .wait_with_output()
            .unwrap();
        assert!(out.status.success());
        sb.write(&format!("round{round}.txt"), "work\n");
        // Two deliveries of the end at once, as from hooks installed at two levels.
        let ends: Vec<Child> = (0..2)
            .map(|_| lifecycle_spawn(&sb, "claude", "session-end", &payload))
            .collect();
        for end in ends {
            let out = end.wait_with_output().unwrap();
            assert!(out.status.success());
            assert_eq!(stderr(&out), "");
        }
        settled(&sb);
        let of_session: Vec<Value> = runs(&sb)
            .into_iter()
            .filter(|r| r["agent_session_id"] == id.as_str())
            .collect();
        assert_eq!(of_session.len(), 1, "round {round}: {of_session:#?}");
        assert_eq!(
            crate::common::changed_paths(&of_session[0]),
            [format!("round{round}.txt")]
        );
    }
    assert!(markers(&sb).is_empty());
}

/// Points Claude Code at the mock, with its non-essential traffic off.
fn claude_ready(sb: &mut Sandbox, mock: &Mock) {
    sb.env.extend(mock.claude_env("sk-ant-test"));
}

#[test]
fn a_completion_cut_short_is_finished_by_the_next_command_and_the_agent_never_waits() {
    require_agent("claude", "@anthropic-ai/claude-code");
    let mut sb = session();
    let mock = Mock::start();
    claude_ready(&mut sb, &mock);
    sb.ok(&["integrate", "claude"]);
    // Another pas-agent holds the session for a long time: the old session-end hook waited
    // for it on Claude Code's clock, and Claude Code cancelled it after 1.5 s.
    let lock = LockHolder::hold(&sb);
    let out = direct(&sb, "claude", &["-p", "Say hello"]);
    assert!(
        !stderr(&out).contains("Hook cancelled"),
        "the session-end hook ran to its end: {}",
        stderr(&out)
    );
    // The end is marked; its completion waits for the session and is killed there (a
    // reboot, the user's kill): nothing is recorded, the marker stays.
    let pids = wait_for("the completion to be waiting", || {
        let p = completions(&sb);
        (!p.is_empty()).then_some(p)
    });
    for pid in pids {
        crate::launcher_support::kill(pid, 9);
    }
    drop(lock);
    std::thread::sleep(Duration::from_millis(300));
    assert!(runs(&sb).is_empty());
    let left = markers(&sb);
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(left[0].1["ended_at"].is_string(), "{left:?}");
    // The next pas-agent command records it, once, with the agent's words.
    let list = sb.ok(&["runs"]);
    assert!(list.contains("claude-code"), "{list}");
    let all = runs(&sb);
    assert_eq!(all.len(), 1, "{all:#?}");
    assert_eq!(all[0]["transcript"]["last_answer"], REPLY);
    assert_eq!(all[0]["recorded_by"], "claude hooks");
    assert!(markers(&sb).is_empty());
    sb.ok(&["status"]);
    assert_eq!(runs(&sb).len(), 1);
}

/// Another spelling of pas-agent's own command (`env <path>`), so that an agent that skips a
/// hook it already ran from another file (Claude Code, Gemini CLI: by command string) runs
/// this one too.
fn respell(file: &Path) {
    let text = std::fs::read_to_string(file).unwrap();
    let bin = crate::common::bin();
    let text = text
        .replace(
            &format!("\"{} lifecycle", bin.display()),
            &format!("\"env {} lifecycle", bin.display()),
        )
        .replace("\"pas-agent lifecycle", "\"env pas-agent lifecycle");
    assert!(text.contains("env "), "{text}");
    std::fs::write(file, text).unwrap();
}

#[test]
fn claude_code_with_hooks_at_two_levels_is_recorded_once() {
    require_agent("claude", "@anthropic-ai/claude-code");
    let mut sb = session();
    let mock = Mock::start();
    claude_ready(&mut sb, &mock);
    sb.ok(&["integrate", "claude"]);
    sb.ok(&["integrate", "claude", "--user"]);
    respell(&sb.home.join(".claude/settings.json"));
    sb.write("note.txt", "before\n");
    direct(&sb, "claude", &["-p", "Say hello"]);
    settled(&sb);
    let all = runs(&sb);
    assert_eq!(all.len(), 1, "{all:#?}");
    assert_eq!(all[0]["transcript"]["last_answer"], REPLY);
}

/// Codex reads a project's `.codex/config.toml` only in a trusted project, and runs hooks
/// only once the user reviewed them: the project is trusted in the user's config, and
/// `--dangerously-bypass-hook-trust` stands in for the review.
fn codex_ready(sb: &mut Sandbox, mock: &Mock) -> PathBuf {
    let home = sb.home.join(".codex");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join("config.toml"),
        format!(
            "model_provider = \"mock\"\nmodel = \"gpt-5.5\"\ncheck_for_update_on_startup = false\n\n[notice.model_migrations]\n\"gpt-5.5\" = \"gpt-6-sol\"\n\n[model_providers.mock]\nname = \"mock\"\nbase_url = \"{}/v1\"\nwire_api = \"responses\"\nenv_key = \"OPENAI_API_KEY\"\n\n[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
            mock.base(),
            sb.work.display()
        ),
    )
    .unwrap();
    sb.env.push(("OPENAI_API_KEY".into(), "sk-test".into()));
    sb.env
        .push(("CODEX_HOME".into(), home.to_string_lossy().into_owned()));
    home
}

#[test]
fn codex_exec_with_hooks_at_two_levels_is_recorded_once_without_a_clamping_warning() {
    require_agent("codex", "@openai/codex");
    let mut sb = session();
    let mock = Mock::start();
    codex_ready(&mut sb, &mock);
    sb.ok(&["integrate", "codex"]);
    sb.ok(&["integrate", "codex", "--user"]);
    let out = direct(
        &sb,
        "codex",
        &[
            "exec",
            "--dangerously-bypass-hook-trust",
            "--skip-git-repo-check",
            "Say hello",
        ],
    );
    assert!(
        !stderr(&out).contains("clamping"),
        "timeouts Codex honours: {}",
        stderr(&out)
    );
    settled(&sb);
    let all = runs(&sb);
    assert_eq!(all.len(), 1, "Codex ran every hook twice: {all:#?}");
    assert_eq!(all[0]["agent"], "codex");
    assert_eq!(all[0]["transcript"]["last_answer"], REPLY);
    assert!(
        mock.model_requests("/v1/responses")
            .iter()
            .any(|r| r.body.contains(TASK))
    );
}

/// Stops the background server an interactive Codex left running (it outlives the TUI), by
/// the pids Codex wrote for it, when dropped.
struct CodexDaemon(PathBuf);

impl Drop for CodexDaemon {
    fn drop(&mut self) {
        for file in ["daemon.pid", "daemon-updater.pid"] {
            let pid = std::fs::read_to_string(self.0.join("app-server-daemon").join(file))
                .ok()
                .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                .and_then(|v| v["pid"].as_i64())
                .and_then(|p| i32::try_from(p).ok());
            if let Some(pid) = pid {
                // SAFETY: plain kill(2) of a process this test started.
                unsafe {
                    libc::kill(pid, libc::SIGTERM);
                }
            }
        }
    }
}

#[test]
fn interactive_codex_is_recorded_when_the_user_quits() {
    require_agent("codex", "@openai/codex");
    let mut sb = session();
    let mock = Mock::start();
    mock.use_tools();
    let home = codex_ready(&mut sb, &mock);
    let _daemon = CodexDaemon(home);
    sb.ok(&["integrate", "codex"]);
    let codex = which::which("codex").unwrap();
    let term = crate::launcher_support::Tmux::start_shell(
        &sb,
        &crate::launcher_support::sh_quote(&codex.to_string_lossy()),
        200,
        50,
    );
    // Codex asks the user to review new hooks once: trusted, as a user does.
    term.wait_screen("Hooks need review");
    // The dialog takes keys once it is drawn whole: choose until the choice shows.
    wait_for("the trust choice to be selected", || {
        term.keys(&["2"]);
        std::thread::sleep(Duration::from_millis(300));
        term.screen().contains("› 2. Trust all").then_some(())
    });
    term.keys(&["Enter"]);
    term.wait_screen("Ask Codex");
    std::thread::sleep(Duration::from_millis(500));
    let target = sb.path("by-codex.txt");
    let prompt = format!("Please [[write {}]]", target.display());
    let start = std::time::Instant::now();
    term.keys(&["-l", &prompt]);
    while !term.screen().contains(&prompt) {
        assert!(
            start.elapsed() < crate::launcher_support::PATIENCE,
            "the prompt never showed; the screen:\n{}",
            term.screen()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    term.keys(&["Enter"]);
    let start = std::time::Instant::now();
    while !(target.exists() && term.screen().contains(REPLY)) {
        assert!(
            start.elapsed() < crate::launcher_support::PATIENCE,
            "Codex did not write {} and answer; the screen:\n{}\nthe requests: {:?}",
            target.display(),
            term.screen(),
            mock.requests()
                .iter()
                .map(|r| format!(
                    "{} {} {}",
                    r.method,
                    r.path,
                    r.body.chars().take(300).collect::<String>()
                ))
                .collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // The turn is over (its Stop hook ran); the user quits.
    wait_for("the turn's end in the marker", || {
        markers(&sb)
            .iter()
            .any(|(_, m)| m["last_turn_at"].is_string())
            .then_some(())
    });
    let quit = chrono::Utc::now();
    term.keys(&["-l", "/quit"]);
    term.wait_screen("› /quit");
    // Codex's command popup can swallow an Enter that comes while it is drawn: press it
    // until Codex exits.
    wait_for("Codex to take /quit", || {
        term.keys(&["Enter"]);
        std::thread::sleep(Duration::from_millis(1000));
        term.exit_file.exists().then_some(())
    });
    assert_eq!(term.exit_code_only(), 0);
    // Recorded when the user quit: Codex's background server runs the session's end at once
    // (`thread_unload_delay_secs = 0`, which `integrate codex` writes), not a minute later.
    let run = wait_for("the run to be recorded", || runs(&sb).pop());
    let ended = chrono::DateTime::parse_from_rfc3339(run["ended_at"].as_str().unwrap()).unwrap();
    assert!(
        ended.signed_duration_since(quit) < chrono::Duration::seconds(30),
        "ended {ended}, quit {quit}"
    );
    assert_eq!(run["agent"], "codex");
    assert_eq!(run["recorded_by"], "codex hooks");
    assert_eq!(crate::common::changed_paths(&run), ["by-codex.txt"]);
    assert_eq!(
        run["transcript"]["edits"][0],
        target.to_string_lossy().as_ref()
    );
    assert_eq!(run["last_message"], REPLY);
    settled(&sb);
    assert_eq!(runs(&sb).len(), 1);
}
