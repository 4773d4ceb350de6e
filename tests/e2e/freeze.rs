//! `pas-agent freeze` and `pas-agent restore` (docs/freeze.md) with the real Claude Code and
//! Codex against the mock model, in real tmux servers: two agents in two projects are frozen,
//! the tmux server is killed, and `restore --all` brings both back in windows of their own
//! sessions, named as before, in their own conversations (the model's next request holds the
//! earlier turns); the same after their launchers were killed with no freeze (a crash). And
//! two coordinators racing on one registry entry: one acts, the other writes nothing.
//!
//! Each test has its own tmux servers (sockets in its temporary directory), its own HOME and
//! its own `PAS_AGENT_STATE_DIR`, so they run in parallel.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{Sandbox, bin};
use crate::launcher_support::{PATIENCE, isolated, sh_quote, wait_for};
use crate::mock_model::{Mock, REPLY, require_agent};

/// A tmux server of its own for a test, on a socket in the sandbox, started with the
/// sandbox's environment (which its windows inherit).
struct Server {
    socket: PathBuf,
    env: Vec<(String, Option<String>)>,
    dir: PathBuf,
}

impl Server {
    fn new(sb: &Sandbox, name: &str) -> Server {
        let template = isolated(sb, "tmux");
        Server {
            socket: sb.tmp.path().join(format!("tmux-{name}.sock")),
            env: template
                .get_envs()
                .map(|(k, v)| {
                    (
                        k.to_string_lossy().into_owned(),
                        v.map(|v| v.to_string_lossy().into_owned()),
                    )
                })
                .collect(),
            dir: sb.work.clone(),
        }
    }

    fn cmd(&self) -> Command {
        let mut cmd = Command::new("tmux");
        cmd.current_dir(&self.dir).stdin(Stdio::null());
        for (k, v) in &self.env {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        cmd.arg("-f").arg("/dev/null").arg("-S").arg(&self.socket);
        cmd
    }

    fn try_run(&self, args: &[&str]) -> Output {
        self.cmd().args(args).output().expect("run tmux")
    }

    fn run(&self, args: &[&str]) -> String {
        let out = self.try_run(args);
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A new session `name` whose window `window` runs `line` (sh) in `dir`.
    fn session(&self, name: &str, window: &str, dir: &Path, line: &str) {
        self.run(&[
            "new-session",
            "-d",
            "-s",
            name,
            "-n",
            window,
            "-c",
            &dir.to_string_lossy(),
            "-x",
            "120",
            "-y",
            "36",
            line,
        ]);
    }

    fn screen(&self, target: &str) -> String {
        String::from_utf8_lossy(
            &self
                .try_run(&["capture-pane", "-p", "-J", "-t", target])
                .stdout,
        )
        .into_owned()
    }

    fn wait_screen(&self, target: &str, text: &str) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen(target);
            if screen.contains(text) {
                return screen;
            }
            assert!(
                start.elapsed() < PATIENCE,
                "timed out waiting for {text:?} in {target}:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Types `text` into `target` and sends it.
    fn say(&self, target: &str, text: &str) {
        self.run(&["send-keys", "-t", target, "-l", text]);
        std::thread::sleep(Duration::from_millis(500));
        self.run(&["send-keys", "-t", target, "Enter"]);
    }

    /// Every window as `session:window`.
    fn windows(&self) -> Vec<String> {
        let out = self.try_run(&["list-windows", "-a", "-F", "#{session_name}:#{window_name}"]);
        let mut w: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect();
        w.sort();
        w
    }

    fn kill(&self) {
        let _ = self.try_run(&["kill-server"]);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `pas-agent <args>` as a shell command line.
fn line(args: &[&str]) -> String {
    let mut line = sh_quote(&bin().to_string_lossy());
    for a in args {
        line.push(' ');
        line.push_str(&sh_quote(a));
    }
    line
}

/// Two projects with sessions: the sandbox's work directory (Claude Code's) and `proj-b`
/// (Codex's), both trusted by both agents, pointed at `mock`; Codex with its auto-update check
/// off, Claude Code with its auto-updater off (the mock's environment).
fn two_projects(sb: &mut Sandbox, mock: &Mock) -> PathBuf {
    sb.ok(&["init", "--task", "Port the invoice job"]);
    let b = sb.tmp.path().canonicalize().unwrap().join("proj-b");
    std::fs::create_dir_all(&b).unwrap();
    let git = |args: &[&str]| {
        let out = sb.git_cmd().current_dir(&b).args(args).output().unwrap();
        assert!(out.status.success(), "git {args:?}");
    };
    git(&["init", "-q", "-b", "main"]);
    git(&["commit", "-q", "--allow-empty", "-m", "init"]);
    let out = sb
        .cmd()
        .current_dir(&b)
        .args(["init", "--task", "Rename the ledger tables"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let key = "sk-ant-test-0123456789abcdef";
    let trusted =
        serde_json::json!({"hasTrustDialogAccepted": true, "hasCompletedProjectOnboarding": true});
    let state = serde_json::json!({
        "hasCompletedOnboarding": true,
        "theme": "dark",
        "customApiKeyResponses": {"approved": [&key[key.len() - 20..]], "rejected": []},
        "projects": {sb.work.to_string_lossy(): trusted, b.to_string_lossy(): trusted},
    });
    std::fs::write(sb.home.join(".claude.json"), state.to_string()).unwrap();
    // Codex asks whether to trust a git repository it has not seen: answered in advance.
    std::fs::create_dir_all(sb.home.join(".codex")).unwrap();
    std::fs::write(
        sb.home.join(".codex/config.toml"),
        format!(
            "check_for_update_on_startup = false\n[projects.{:?}]\ntrust_level = \"trusted\"\n[projects.{:?}]\ntrust_level = \"trusted\"\n",
            sb.work.to_string_lossy(),
            b.to_string_lossy()
        ),
    )
    .unwrap();
    sb.env.extend(mock.claude_env(key));
    sb.env.push(("OPENAI_API_KEY".into(), "sk-test".into()));
    let state_dir = sb.tmp.path().join("state");
    sb.env.push((
        "PAS_AGENT_STATE_DIR".into(),
        state_dir.to_string_lossy().into_owned(),
    ));
    b
}

/// The interactive Codex's arguments against the mock: without the shared background server
/// (`--no-daemon`), which would outlive the test.
fn codex_tui(base: &str) -> Vec<String> {
    vec![
        "--no-daemon".into(),
        "-c".into(),
        "model_provider=mock".into(),
        "-c".into(),
        "model=mock-model".into(),
        "-c".into(),
        format!(
            "model_providers.mock={{name=\"mock\",base_url=\"{base}/v1\",wire_api=\"responses\",env_key=\"OPENAI_API_KEY\"}}"
        ),
    ]
}

/// Waits until a file of the agent's store under `dir` holds `text`: the agent saved its turn
/// (Claude Code writes its transcript a moment after the answer is on the screen).
fn saved(dir: &Path, text: &str) {
    wait_for("the agent to save its turn", || {
        crate::common::walk(dir)
            .into_iter()
            .any(|p| std::fs::read_to_string(p).is_ok_and(|t| t.contains(text)))
            .then_some(())
    });
}

/// Starts Claude Code in `proj-a:claude` and Codex in `proj-b:codex` through `pas-agent run`,
/// and has one turn with each.
fn start_two(server: &Server, sb: &Sandbox, b: &Path, mock: &Mock) {
    server.session("proj-a", "claude", &sb.work, &line(&["run", "claude"]));
    let mut codex = vec!["run".to_string(), "codex".into(), "--".into()];
    codex.extend(codex_tui(&mock.base()));
    let codex: Vec<&str> = codex.iter().map(String::as_str).collect();
    server.session("proj-b", "codex", b, &line(&codex));
    server.wait_screen("proj-a:claude", "shortcuts");
    server.say("proj-a:claude", "Say hello to the ledger");
    server.wait_screen("proj-a:claude", REPLY);
    server.wait_screen("proj-b:codex", "Ask Codex");
    server.say("proj-b:codex", "First codex turn");
    server.wait_screen("proj-b:codex", REPLY);
    saved(&sb.home.join(".claude/projects"), REPLY);
    saved(&sb.home.join(".codex/sessions"), REPLY);
}

/// `runs --all --json`'s entries.
fn registry(sb: &Sandbox) -> Vec<Value> {
    let out = sb.ok(&["runs", "--all", "--json"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    v["runs"].as_array().unwrap().clone()
}

/// Runs `pas-agent restore --all` in a new tmux server (as a user would, from a shell in
/// tmux) and returns that server and what the command printed.
fn restore_all_in_tmux(sb: &Sandbox, name: &str) -> (Server, String) {
    let server = Server::new(sb, name);
    let out = sb.tmp.path().join(format!("{name}.out"));
    let rc = sb.tmp.path().join(format!("{name}.rc"));
    let script = format!(
        "{} > {} 2>&1; echo $? > {}.tmp && mv {}.tmp {}; sleep 600",
        line(&["restore", "--all"]),
        sh_quote(&out.to_string_lossy()),
        sh_quote(&rc.to_string_lossy()),
        sh_quote(&rc.to_string_lossy()),
        sh_quote(&rc.to_string_lossy()),
    );
    server.session("ctl", "ctl", &sb.work, &script);
    let code = wait_for("restore --all to finish", || {
        std::fs::read_to_string(&rc).ok()
    });
    let printed = std::fs::read_to_string(&out).unwrap_or_default();
    assert_eq!(code.trim(), "0", "{printed}");
    (server, printed)
}

/// Both agents answer a new prompt in their restored windows, and the model's request for it
/// carries each one's earlier turn.
fn both_continue(server: &Server, mock: &Mock, earlier_claude: &str, earlier_codex: &str) {
    let before = mock.requests().len();
    server.wait_screen("proj-a:claude", "shortcuts");
    server.wait_screen("proj-b:codex", "Ask Codex");
    let prompt = format!("Next step please {before}");
    server.say("proj-a:claude", &prompt);
    server.say("proj-b:codex", &prompt);
    wait_for("both agents to answer the new prompt", || {
        let later = &mock.requests()[before..];
        let claude = later.iter().any(|r| {
            r.path.starts_with("/v1/messages")
                && r.body.contains(&prompt)
                && r.body.contains(earlier_claude)
        });
        let codex = later.iter().any(|r| {
            r.path.starts_with("/v1/responses")
                && r.body.contains(&prompt)
                && r.body.contains(earlier_codex)
        });
        (claude && codex).then_some(())
    });
}

#[test]
fn freeze_all_then_restore_all_after_the_tmux_server_is_gone() {
    require_agent("claude", "@anthropic-ai/claude-code");
    require_agent("codex", "@openai/codex");
    let mut sb = Sandbox::repo();
    let mock = Mock::start();
    let b = two_projects(&mut sb, &mock);
    let first = Server::new(&sb, "first");
    start_two(&first, &sb, &b, &mock);

    let live = registry(&sb);
    assert_eq!(live.len(), 2, "{live:?}");
    assert!(live.iter().all(|e| e["state"] == "running"), "{live:?}");

    let out = sb.ok(&["freeze", "--all"]);
    assert_eq!(out.matches("Frozen ").count(), 2, "{out}");
    let frozen = registry(&sb);
    assert_eq!(frozen.len(), 2, "{frozen:?}");
    let by_agent = |entries: &[Value], agent: &str| -> Value {
        entries
            .iter()
            .find(|e| e["agent"] == agent)
            .cloned()
            .unwrap_or_else(|| panic!("no {agent} entry in {entries:?}"))
    };
    let claude = by_agent(&frozen, "claude-code");
    let codex = by_agent(&frozen, "codex");
    for (e, session, window) in [(&claude, "proj-a", "claude"), (&codex, "proj-b", "codex")] {
        assert_eq!(e["state"], "frozen", "{e}");
        assert_eq!(e["tmux"]["session"], session, "{e}");
        assert_eq!(e["tmux"]["window"], window, "{e}");
        assert_eq!(e["frozen"]["cause"], "freeze", "{e}");
        assert!(e["agent_session_id"].is_string(), "{e}");
        assert_eq!(e["terminal"]["cols"], 120, "{e}");
        // The frozen run's capture is kept beside the registry.
        let kept = Path::new(e["frozen"]["capture"].as_str().expect("a kept capture"));
        assert!(kept.join("capture.txt").is_file(), "{e}");
    }
    // Codex is restored without its one-shot or session arguments: as it was started.
    assert_eq!(
        codex["frozen"]["args"],
        serde_json::json!(codex_tui(&mock.base()))
    );
    // The runs were recorded by their launchers, which said they were frozen.
    let run = crate::common::last_run(&sb);
    assert_eq!(run["ended_by"], "freeze", "{run}");
    first.kill();

    let (second, printed) = restore_all_in_tmux(&sb, "second");
    assert_eq!(printed.matches("Restored ").count(), 2, "{printed}");
    assert_eq!(printed.matches("verified: ").count(), 2, "{printed}");
    assert_eq!(
        second.windows(),
        ["ctl:ctl", "proj-a:claude", "proj-b:codex"],
        "each back in a window of its own session, named as before"
    );
    both_continue(
        &second,
        &mock,
        "Say hello to the ledger",
        "First codex turn",
    );
    let restored = registry(&sb);
    assert_eq!(restored.len(), 2, "{restored:?}");
    for (old, agent) in [(&claude, "claude-code"), (&codex, "codex")] {
        let new = by_agent(&restored, agent);
        assert_eq!(new["state"], "running", "{new}");
        assert_eq!(new["restored_from"], old["run_id"], "{new}");
        assert_eq!(new["restore"], "verified", "{new}");
        assert_eq!(new["agent_session_id"], old["agent_session_id"], "{new}");
        // A verified restore deletes the frozen capture.
        let kept = Path::new(old["frozen"]["capture"].as_str().unwrap());
        assert!(!kept.exists(), "{}", kept.display());
    }
}

#[test]
fn after_a_crash_restore_all_brings_back_the_runs_that_were_live() {
    require_agent("claude", "@anthropic-ai/claude-code");
    require_agent("codex", "@openai/codex");
    let mut sb = Sandbox::repo();
    let mock = Mock::start();
    let b = two_projects(&mut sb, &mock);
    let first = Server::new(&sb, "first");
    start_two(&first, &sb, &b, &mock);
    let live = registry(&sb);
    assert_eq!(live.len(), 2, "{live:?}");
    // Codex's session id is not known while it runs (it is learned from its store).
    let codex = live.iter().find(|e| e["agent"] == "codex").unwrap();
    assert!(codex["agent_session_id"].is_null(), "{codex}");
    // No freeze: the launchers die, then the terminal server (a crash, a reboot).
    for e in &live {
        crate::launcher_support::kill(e["launcher_pid"].as_i64().unwrap() as i32, libc::SIGKILL);
    }
    first.kill();

    let (second, printed) = restore_all_in_tmux(&sb, "second");
    assert_eq!(printed.matches("Restored ").count(), 2, "{printed}");
    assert_eq!(
        second.windows(),
        ["ctl:ctl", "proj-a:claude", "proj-b:codex"]
    );
    both_continue(
        &second,
        &mock,
        "Say hello to the ledger",
        "First codex turn",
    );
    let restored = registry(&sb);
    assert_eq!(restored.len(), 2, "{restored:?}");
    for new in &restored {
        assert!(new["restored_from"].is_string(), "{new}");
        assert_eq!(new["state"], "running", "{new}");
    }
    // The projects closed the crashed runs as abandoned, and Codex's learned its session id.
    let out = sb
        .cmd()
        .current_dir(&b)
        .args(["runs", "--json"])
        .output()
        .unwrap();
    let runs: Value = serde_json::from_slice(&out.stdout).unwrap();
    let first_run = &runs["runs"][0];
    assert_eq!(first_run["state"], "abandoned", "{first_run}");
    assert!(first_run["agent_session_id"].is_string(), "{first_run}");
    assert!(
        first_run["agent_session_learned"].is_string(),
        "{first_run}"
    );
}

/// A stand-in for Claude Code: it keeps a transcript where Claude Code keeps its own (named by
/// the `--session-id` or `--resume` it is given, with its working directory), appends to it
/// when resumed, and runs until interrupted; resumed, it stays `STAND_IN_SECONDS` if set.
const STAND_IN: &str = r#"#!/bin/sh
id=""; prev=""
for a in "$@"; do
  case "$prev" in --session-id|--resume) id="$a";; esac
  prev="$a"
done
dir="$HOME/.claude/projects/$(printf '%s' "$PWD" | sed 's/[^A-Za-z0-9]/-/g')"
mkdir -p "$dir"
printf '{"type":"user","sessionId":"%s","cwd":"%s","timestamp":"%s","message":{"role":"user","content":"stand-in turn"}}\n' "$id" "$PWD" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >> "$dir/$id.jsonl"
trap 'exit 0' INT TERM
if [ -n "$STAND_IN_SECONDS" ]; then sleep "$STAND_IN_SECONDS"; exit 0; fi
while :; do sleep 1; done
"#;

/// Starts two `pas-agent <args>` at once, each under strace (what it renames and creates),
/// and returns each one's output and the paths its trace shows it wrote under `dir`.
fn race(sb: &Sandbox, args: &[&str], dir: &Path) -> Vec<(Output, Vec<String>)> {
    let traces: Vec<PathBuf> = (0..2)
        .map(|i| sb.tmp.path().join(format!("trace-{}-{i}.txt", args[0])))
        .collect();
    let children: Vec<_> = traces
        .iter()
        .map(|trace| {
            let mut cmd = isolated(sb, "strace");
            cmd.args([
                "-f",
                "-qq",
                "-e",
                "trace=openat,open,creat,rename,renameat,renameat2,unlink,unlinkat",
                "-o",
            ])
            .arg(trace)
            .arg(bin())
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
            cmd.spawn().expect("strace")
        })
        .collect();
    let dir = dir.to_string_lossy().into_owned();
    children
        .into_iter()
        .zip(&traces)
        .map(|(child, trace)| {
            let out = child.wait_with_output().unwrap();
            let text = std::fs::read_to_string(trace).unwrap_or_default();
            let wrote = text
                .lines()
                .filter(|l| l.contains(&dir) && l.contains("runs.json"))
                .filter(|l| {
                    l.contains("rename")
                        || l.contains("O_CREAT")
                        || l.contains("O_WRONLY")
                        || l.contains("O_RDWR")
                        || l.contains("unlink")
                })
                .map(str::to_string)
                .collect();
            (out, wrote)
        })
        .collect()
}

/// One of two racing coordinators acted; the other was refused and wrote nothing.
fn one_acts(results: &[(Output, Vec<String>)], acted: &str) -> String {
    let text = |o: &Output| {
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    };
    let winners: Vec<&(Output, Vec<String>)> = results
        .iter()
        .filter(|(o, _)| o.status.success() && text(o).contains(acted))
        .collect();
    assert_eq!(
        winners.len(),
        1,
        "{:?}",
        results.iter().map(|(o, _)| text(o)).collect::<Vec<_>>()
    );
    let (winner, wrote) = winners[0];
    assert!(
        !wrote.is_empty(),
        "the winner wrote the registry: {}",
        text(winner)
    );
    let (loser, wrote) = results
        .iter()
        .find(|(o, _)| !std::ptr::eq(o, winner))
        .unwrap();
    assert!(!loser.status.success(), "{}", text(loser));
    assert!(
        wrote.is_empty(),
        "the refused coordinator wrote: {wrote:#?}\n{}",
        text(loser)
    );
    text(loser)
}

#[test]
fn two_coordinators_racing_on_one_record_one_acts_the_other_writes_nothing() {
    let mut sb = Sandbox::with_session();
    let state = sb.tmp.path().join("state");
    sb.env.push((
        "PAS_AGENT_STATE_DIR".into(),
        state.to_string_lossy().into_owned(),
    ));
    sb.env
        .push(("PAS_AGENT_RESTORE_ACK_MS".into(), "3000".into()));
    let claude = sb.bin_dir.join("claude");
    std::fs::write(&claude, STAND_IN).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&claude, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let mut launcher = sb.cmd();
    launcher
        .args(["run", "claude"])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut launcher = launcher.spawn().unwrap();
    let id = wait_for("the live run in the registry", || {
        let e = registry(&sb).into_iter().next()?;
        (e["state"] == "running").then(|| e["run_id"].as_str().unwrap()[..8].to_string())
    });
    let dir = state.canonicalize().unwrap();

    let results = race(&sb, &["freeze", &id], &dir);
    let loser = one_acts(&results, "Frozen ");
    assert!(loser.contains("not frozen"), "{loser}");
    assert!(launcher.wait().unwrap().success());
    let entry = registry(&sb).into_iter().next().unwrap();
    assert_eq!(entry["state"], "frozen", "{entry}");

    sb.env.push(("STAND_IN_SECONDS".into(), "2".into()));
    let results = race(&sb, &["restore", &id], &dir);
    let loser = one_acts(&results, "verified");
    assert!(
        loser.contains("not restored") || loser.contains("no run"),
        "{loser}"
    );
    // One restore, one new run: the frozen entry is gone, the run it started recorded.
    let runs = crate::common::runs(&sb);
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert_eq!(runs[1]["restored_from"], entry["run_id"], "{:?}", runs[1]);
    assert!(registry(&sb).is_empty());
}

#[test]
fn outside_tmux_one_run_comes_back_in_this_terminal_and_all_prints_commands() {
    require_agent("claude", "@anthropic-ai/claude-code");
    let mut sb = Sandbox::repo();
    let mock = Mock::start();
    two_projects(&mut sb, &mock);
    let first = Server::new(&sb, "first");
    first.session("proj-a", "claude", &sb.work, &line(&["run", "claude"]));
    first.wait_screen("proj-a:claude", "shortcuts");
    first.say("proj-a:claude", "Say hello to the ledger");
    first.wait_screen("proj-a:claude", REPLY);
    saved(&sb.home.join(".claude/projects"), REPLY);
    let id = registry(&sb)[0]["run_id"].as_str().unwrap()[..8].to_string();
    let out = sb.ok(&["freeze", &id]);
    assert!(out.contains(&format!("Frozen {id}")), "{out}");

    // Outside tmux, `--all` prints a command per run and restores nothing.
    let out = sb.ok(&["restore", "--all"]);
    assert!(out.contains(&format!("pas-agent restore {id}")), "{out}");
    assert_eq!(registry(&sb)[0]["state"], "frozen");

    // One run comes back in the terminal the command runs in (a tmux pane, told it is not
    // in tmux).
    let rc = sb.tmp.path().join("here.rc");
    let script = format!(
        "env -u TMUX -u TMUX_PANE {} ; echo $? > {}; sleep 600",
        line(&["restore", &id]),
        sh_quote(&rc.to_string_lossy())
    );
    first.session("here", "here", &sb.work, &script);
    first.wait_screen("here:here", "shortcuts");
    assert_eq!(first.windows(), ["here:here"], "no window of its own");
    let before = mock.requests().len();
    first.say("here:here", "Next step please");
    wait_for("the restored conversation to go on", || {
        mock.requests()[before..]
            .iter()
            .any(|r| {
                r.body.contains("Next step please") && r.body.contains("Say hello to the ledger")
            })
            .then_some(())
    });
    first.wait_screen("here:here", REPLY);
    let new = registry(&sb);
    assert_eq!(new.len(), 1, "{new:?}");
    assert_eq!(new[0]["state"], "running");
    assert_eq!(new[0]["restore"], "verified", "{:?}", new[0]);
    // Claude's own way out, Ctrl-C twice; the restore then says how it went. On a loaded
    // machine Claude Code may take the first press for an interruption of its own work and
    // let the second one's window pass: the pair is pressed again every two seconds until the
    // restore has exited.
    let mut polls = 0;
    wait_for("the restore to exit", || {
        let code = std::fs::read_to_string(&rc).ok();
        if code.is_none() && polls % 40 == 0 {
            first.run(&["send-keys", "-t", "here:here", "C-c"]);
            std::thread::sleep(Duration::from_millis(300));
            first.run(&["send-keys", "-t", "here:here", "C-c"]);
        }
        polls += 1;
        code
    });
    first.wait_screen("here:here", "verified");
}
