//! `pas-agent integrate claude|codex|gemini`: pas-agent in the agents' own lifecycle hooks.
//!
//! The settings files: other hooks and settings kept byte for byte, installing twice changes
//! nothing, `--remove` gives back the original bytes, a file that does not parse is refused
//! (exit 6) and left alone. The hooks: the real Claude Code, Codex and Gemini CLI started
//! *directly* (not through pas-agent), offline against the mock model with their own HOME,
//! are recorded as runs with their own session id and last answer, and the model sees the
//! session's task though no context file exists; started through `pas-agent run`, a run is
//! recorded once.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use serde_json::Value;

use crate::common::{Sandbox, changed_paths, last_run, runs, stderr, stdout, walk};
use crate::hooks::isolated;
use crate::mock_model::{Mock, REPLY, codex_args, require_agent};

/// The task every test session carries; the model must see it.
const TASK: &str = "Reconcile the walrus-ledger exports with the bank feed";

fn session() -> Sandbox {
    let sb = Sandbox::repo();
    sb.ok(&["init", "--task", TASK]);
    sb
}

/// Runs `program` (an agent CLI) directly in the sandbox, as a user would from a shell.
fn direct(sb: &Sandbox, program: &str, args: &[String]) -> Output {
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

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| a.to_string()).collect()
}

/// The lines of `original` appear in `edited`, in order, unchanged (but for the comma JSON
/// needs after an element that is no longer the last).
fn assert_lines_kept(original: &str, edited: &str) {
    let mut rest = edited.lines();
    for line in original.lines() {
        assert!(
            rest.any(|l| l == line || l.strip_suffix(',') == Some(line)),
            "line {line:?} of the original is not kept in order:\n{edited}"
        );
    }
}

/// A settings file per agent that already holds a hook of the user's and other settings.
fn settings_with_other_hooks() -> [(&'static str, &'static str, &'static str); 3] {
    [
        (
            "claude",
            ".claude/settings.json",
            "{\n  \"permissions\": { \"allow\": [\"Bash(npm test)\"] },\n  \"hooks\": {\n    \"PostToolUse\": [\n      { \"matcher\": \"Write\", \"hooks\": [ { \"type\": \"command\", \"command\": \"prettier --write .\" } ] }\n    ],\n    \"Stop\": [\n      { \"hooks\": [ { \"type\": \"command\", \"command\": \"notify-send done\" } ] }\n    ]\n  },\n  \"model\": \"opus\"\n}\n",
        ),
        (
            "gemini",
            ".gemini/settings.json",
            "{\n  // my own hooks\n  \"hooks\": {\n    \"BeforeTool\": [{\"matcher\": \"write_file\", \"hooks\": [{\"type\": \"command\", \"command\": \"./check.sh\"}]}]\n  },\n  \"ui\": {\"theme\": \"GitHub\"}\n}\n",
        ),
        (
            "codex",
            ".codex/config.toml",
            "# team settings\nmodel = \"o3\"   # keep\n\n[[hooks.Stop]]\nmatcher = \"\"\n[[hooks.Stop.hooks]]\ntype = \"command\"\ncommand = \"notify-send done\"\n\n[mcp_servers.docs]\ncommand = \"docs-server\"\n",
        ),
    ]
}

#[test]
fn settings_with_other_hooks_are_kept_byte_for_byte_and_remove_restores_them() {
    let sb = session();
    for (agent, file, original) in settings_with_other_hooks() {
        sb.write(file, original);
        let out = sb.ok(&["integrate", agent]);
        assert!(out.contains("Installed"), "{out}");
        let installed = sb.read(file);
        assert_ne!(installed, original);
        assert_lines_kept(original, &installed);
        assert!(
            installed.contains(&format!("lifecycle {agent} session-start")),
            "{installed}"
        );
        assert!(installed.contains(&format!("lifecycle {agent} session-end")));
        // Idempotent.
        let again = sb.ok(&["integrate", agent]);
        assert!(again.contains("already"), "{again}");
        assert_eq!(sb.read(file), installed);
        // Remove: exactly what was installed.
        let out = sb.ok(&["integrate", agent, "--remove"]);
        assert!(out.contains("Removed"), "{out}");
        assert_eq!(
            sb.read(file),
            original,
            "{agent}: remove gives back the bytes"
        );
        let out = sb.ok(&["integrate", agent, "--remove"]);
        assert!(out.contains("nothing to remove"), "{out}");
        assert_eq!(sb.read(file), original);
    }
    // The parsed settings keep the user's hooks next to ours.
    sb.ok(&["integrate", "claude"]);
    let v: Value = serde_json::from_str(&sb.read(".claude/settings.json")).unwrap();
    assert_eq!(
        v["hooks"]["Stop"][0]["hooks"][0]["command"],
        "notify-send done"
    );
    assert_eq!(v["hooks"]["PostToolUse"][0]["matcher"], "Write");
    assert_eq!(v["hooks"]["SessionEnd"][0]["hooks"][0]["timeout"], 30);
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["permissions", "hooks", "model"]);
}

#[test]
fn a_new_settings_file_is_created_and_user_level_goes_to_the_agents_own_directory() {
    let mut sb = session();
    sb.ok(&["integrate", "gemini"]);
    let v: Value = serde_json::from_str(&sb.read(".gemini/settings.json")).unwrap();
    assert!(
        v["hooks"]["AfterAgent"][0]["hooks"][0]["command"]
            .as_str()
            .unwrap()
            .ends_with("lifecycle gemini stop")
    );
    sb.ok(&["integrate", "claude", "--user"]);
    let user = sb.home.join(".claude/settings.json");
    assert!(
        std::fs::read_to_string(&user)
            .unwrap()
            .contains("lifecycle claude session-start")
    );
    assert!(
        !sb.path(".claude").exists(),
        "--user leaves the project alone"
    );
    let codex_home = sb.tmp.path().join("codex-home");
    sb.env
        .push(("CODEX_HOME".into(), codex_home.to_string_lossy().into()));
    sb.ok(&["integrate", "codex", "--user"]);
    assert!(
        std::fs::read_to_string(codex_home.join("config.toml"))
            .unwrap()
            .contains("lifecycle codex session-end")
    );
    sb.ok(&["integrate", "claude", "--user", "--remove"]);
    // The file and the folder `integrate` created are gone again.
    assert!(!user.exists() && !sb.home.join(".claude").exists());
}

#[test]
fn a_settings_file_that_does_not_parse_is_refused_and_left_unchanged() {
    let sb = session();
    let cases = [
        ("claude", ".claude/settings.json", "{\n  \"hooks\": {\n"),
        // Claude Code reads plain JSON: no comments.
        (
            "claude",
            ".claude/settings.json",
            "{ // mine\n \"a\": 1 }\n",
        ),
        (
            "claude",
            ".claude/settings.json",
            "{\"hooks\": [\"not an object\"]}\n",
        ),
        (
            "gemini",
            ".gemini/settings.json",
            "{\"hooks\": {\"SessionStart\": 3}}\n",
        ),
        ("gemini", ".gemini/settings.json", "\u{0}\u{1}binary"),
        ("codex", ".codex/config.toml", "model = \"o3\"\n[hooks\n"),
        (
            "codex",
            ".codex/config.toml",
            "hooks = { SessionStart = [] }\n",
        ),
    ];
    for (agent, file, bad) in cases {
        sb.write(file, bad);
        for extra in [&[][..], &["--remove"][..]] {
            let mut args = vec!["integrate", agent];
            args.extend_from_slice(extra);
            let err = sb.fails(&args, 6);
            assert!(err.contains(file), "{agent} {bad:?}: {err}");
            assert!(err.contains("left unchanged"), "{err}");
            assert_eq!(sb.bytes(file), bad.as_bytes(), "{agent} {bad:?}");
        }
    }
}

/// Waits until every agent session that ended has been recorded: the session-end hook only
/// marks the end, and a detached `pas-agent lifecycle <agent> complete` records the run.
pub fn settled(sb: &Sandbox) {
    let dir = sb.path(".pas-agent/runs/hooks");
    crate::launcher_support::wait_for("the ended sessions to be recorded", || {
        let pending = walk(&dir)
            .into_iter()
            .any(|p| std::fs::read_to_string(&p).is_ok_and(|t| t.contains("\"ended_at\"")));
        (!pending).then_some(())
    });
}

/// Runs `pas-agent lifecycle <agent> <event>` with `payload` on stdin.
fn lifecycle(sb: &Sandbox, agent: &str, event: &str, payload: &str) -> Output {
    let mut cmd = sb.cmd();
    cmd.args(["lifecycle", agent, event]).stdin(Stdio::piped());
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    // A command that exits without reading (an unknown event) closes the pipe first.
    let _ = child.stdin.take().unwrap().write_all(payload.as_bytes());
    child.wait_with_output().unwrap()
}

#[test]
fn hooks_never_fail_the_agent_and_count_only_what_changed_during_the_session() {
    let sb = session();
    let id = "0f0e0d0c-1111-4222-8333-444455556666";
    let cwd = sb.work.to_string_lossy().into_owned();
    let payload = |extra: &str| format!(r#"{{"session_id":"{id}","cwd":"{cwd}"{extra}}}"#);
    // Already changed before the session started: not the session's work.
    sb.write("README.md", "# Project\nedited before\n");
    // Not a timing assertion: the session starts clearly after that edit.
    std::thread::sleep(std::time::Duration::from_millis(300));

    let out = lifecycle(&sb, "claude", "session-start", &payload(""));
    assert!(out.status.success());
    let context: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(
        context["hookSpecificOutput"]["hookEventName"],
        "SessionStart"
    );
    assert!(
        context["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .unwrap()
            .contains(TASK)
    );
    sb.write("src.rs", "fn main() {}\n");
    sb.git(&["add", "src.rs"]);
    sb.git(&["commit", "-q", "-m", "Add src.rs"]);
    // Claude Code compacts its context and starts the same session again: it keeps its start.
    let out = lifecycle(
        &sb,
        "claude",
        "session-start",
        &payload(r#","source":"compact""#),
    );
    assert!(out.status.success());
    assert!(
        stdout(&out).contains(TASK),
        "the context again after compaction"
    );
    sb.write("notes.txt", "new\n");
    let out = lifecycle(
        &sb,
        "claude",
        "stop",
        &payload(r#","last_assistant_message":"I added src.rs and notes.""#),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let out = lifecycle(
        &sb,
        "claude",
        "session-end",
        &payload(r#","reason":"other""#),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stderr(&out), "");
    settled(&sb);

    let all = runs(&sb);
    assert_eq!(all.len(), 1);
    let run = &all[0];
    assert_eq!(run["agent"], "claude-code");
    assert_eq!(run["state"], "finished");
    assert_eq!(run["agent_session_id"], id);
    assert_eq!(run["last_message"], "I added src.rs and notes.");
    assert_eq!(run["commits"][0]["summary"], "Add src.rs");
    let mut changed = changed_paths(run);
    changed.sort();
    assert_eq!(changed, ["notes.txt", "src.rs"], "README.md changed before");
    assert!(run["checkpoint_after"].is_string());
    // The end seen twice records nothing more.
    lifecycle(&sb, "claude", "session-end", &payload(""));
    settled(&sb);
    assert_eq!(runs(&sb).len(), 1);

    // Bad input: exit 0, the reason on stderr, nothing recorded.
    for bad in ["not json", r#"{"session_id": 5}"#] {
        let out = lifecycle(&sb, "claude", "session-end", bad);
        assert_eq!(out.status.code(), Some(0));
        assert!(!stderr(&out).is_empty(), "{bad}");
    }
    let out = lifecycle(&sb, "claude", "session-end", "not json");
    assert!(stderr(&out).contains("not JSON"), "{}", stderr(&out));
    let out = lifecycle(&sb, "nobody", "session-end", "{}");
    assert_eq!(out.status.code(), Some(0));
    assert!(stderr(&out).contains("unknown agent or event"));
    // Never a usage error (exit 2 is "block" to Claude Code's Stop hook).
    for args in [
        &["lifecycle"][..],
        &["lifecycle", "claude", "stop", "--bogus", "x"],
    ] {
        let out = sb.run(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
    }
    assert_eq!(runs(&sb).len(), 1);

    // Outside a session: nothing, silently.
    let plain = Sandbox::repo();
    let out = lifecycle(&plain, "claude", "session-start", "{}");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout(&out), "");
    assert_eq!(stderr(&out), "");
}

/// The agent's own store holds one transcript for `id`.
fn store_holds(dir: &Path, id: &str) {
    let found: Vec<PathBuf> = walk(dir)
        .into_iter()
        .filter(|p| p.to_string_lossy().contains(id))
        .collect();
    assert!(
        !found.is_empty(),
        "no file of session {id} under {}",
        dir.display()
    );
}

/// The one run recorded from the hooks of `agent`, started directly.
fn recorded_directly(sb: &Sandbox, agent: &str) -> Value {
    settled(sb);
    let all = runs(sb);
    assert_eq!(all.len(), 1, "{all:#?}");
    let run = all[0].clone();
    assert_eq!(run["agent"], agent);
    assert_eq!(run["state"], "finished");
    assert_eq!(run["last_message"], REPLY);
    assert!(run["agent_session_id"].is_string(), "{run:#}");
    // The agent's own words, read from its transcript as after `pas-agent run`.
    assert_eq!(run["transcript"]["last_answer"], REPLY, "{run:#}");
    assert!(
        run["transcript"]["prompts"]
            .as_array()
            .is_some_and(|p| !p.is_empty()),
        "{run:#}"
    );
    run
}

#[test]
fn claude_code_started_directly_is_recorded_and_sees_the_task() {
    require_agent("claude", "@anthropic-ai/claude-code");
    let mut sb = session();
    let mock = Mock::start();
    sb.env.extend(mock.claude_env("sk-ant-test"));
    sb.ok(&["integrate", "claude"]);
    let target = sb.path("hello.txt");
    mock.claude_write(&target.to_string_lossy(), "written by claude\n");
    direct(
        &sb,
        "claude",
        &strings(&[
            "-p",
            "Please write hello.txt",
            "--permission-mode",
            "acceptEdits",
        ]),
    );
    assert!(
        !sb.path("CLAUDE.md").exists(),
        "no context file was written"
    );
    assert!(
        mock.model_requests("/v1/messages")
            .iter()
            .any(|r| r.body.contains(TASK)),
        "the session-start hook gave the model the task"
    );
    let run = recorded_directly(&sb, "claude-code");
    let id = run["agent_session_id"].as_str().unwrap();
    store_holds(&sb.home.join(".claude/projects"), id);
    assert_eq!(changed_paths(&run), ["hello.txt"]);
    assert_eq!(sb.read("hello.txt"), "written by claude\n");
}

#[test]
fn claude_code_through_pas_agent_run_with_the_hooks_is_recorded_once() {
    require_agent("claude", "@anthropic-ai/claude-code");
    let mut sb = session();
    let mock = Mock::start();
    sb.env.extend(mock.claude_env("sk-ant-test"));
    sb.ok(&["integrate", "claude"]);
    sb.ok(&["run", "claude", "--", "-p", "Say hello"]);
    let all = runs(&sb);
    assert_eq!(all.len(), 1, "{all:#?}");
    let run = last_run(&sb);
    assert_eq!(run["exit_code"], 0);
    assert!(run["launcher_pid"].is_number(), "the launcher's record");
    assert!(run.get("recorded_by").is_none());
    assert!(
        walk(&sb.path(".pas-agent/runs"))
            .iter()
            .all(|p| !p.to_string_lossy().contains("/hooks/")),
        "the hooks left no marker inside a recorded run"
    );
}

#[test]
fn gemini_cli_started_directly_is_recorded_and_sees_the_task() {
    require_agent("gemini", "@google/gemini-cli");
    let mut sb = session();
    let mock = Mock::start();
    mock.point_gemini_at_me(&mut sb);
    sb.ok(&["integrate", "gemini"]);
    direct(
        &sb,
        "gemini",
        &strings(&["-m", "gemini-2.5-flash", "-p", "Say hello to the ledger"]),
    );
    assert!(!sb.path("GEMINI.md").exists());
    assert!(
        mock.model_requests("/v1beta/models/")
            .iter()
            .any(|r| r.body.contains(TASK)),
        "the session-start hook gave the model the task"
    );
    let run = recorded_directly(&sb, "gemini-cli");
    store_holds(
        &sb.home.join(".gemini/tmp"),
        &run["agent_session_id"].as_str().unwrap()[..8],
    );
}

/// Codex reads a project's `.codex/config.toml` only in a trusted project, and runs hooks
/// only once the user reviewed them (`/hooks`): the test trusts the project in the user's
/// config and stands in for the review with `--dangerously-bypass-hook-trust`.
fn codex_ready(sb: &mut Sandbox) {
    std::fs::create_dir_all(sb.home.join(".codex")).unwrap();
    std::fs::write(
        sb.home.join(".codex/config.toml"),
        format!(
            "[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
            sb.work.display()
        ),
    )
    .unwrap();
    sb.env.push(("OPENAI_API_KEY".into(), "sk-test".into()));
}

#[test]
fn codex_started_directly_is_recorded_and_sees_the_task() {
    require_agent("codex", "@openai/codex");
    let mut sb = session();
    let mock = Mock::start();
    codex_ready(&mut sb);
    sb.ok(&["integrate", "codex"]);
    let mut args = codex_args(&mock.base(), "Say hello to the ledger");
    args.insert(1, "--dangerously-bypass-hook-trust".into());
    direct(&sb, "codex", &args);
    assert!(!sb.path("AGENTS.md").exists());
    assert!(
        mock.model_requests("/v1/responses")
            .iter()
            .any(|r| r.body.contains(TASK)),
        "the session-start hook gave the model the task"
    );
    let run = recorded_directly(&sb, "codex");
    store_holds(
        &sb.home.join(".codex/sessions"),
        run["agent_session_id"].as_str().unwrap(),
    );
}

#[test]
fn codex_through_pas_agent_run_with_the_hooks_is_recorded_once() {
    require_agent("codex", "@openai/codex");
    let mut sb = session();
    let mock = Mock::start();
    codex_ready(&mut sb);
    sb.ok(&["integrate", "codex"]);
    let mut args = vec!["run".to_string(), "codex".into(), "--".into()];
    let mut agent_args = codex_args(&mock.base(), "Say hello");
    agent_args.insert(1, "--dangerously-bypass-hook-trust".into());
    args.extend(agent_args);
    sb.ok(&args);
    let all = runs(&sb);
    assert_eq!(all.len(), 1, "{all:#?}");
    assert!(all[0]["launcher_pid"].is_number());
}

#[test]
fn a_damaged_session_never_fails_the_agent_and_old_markers_are_cleared() {
    let sb = session();
    let id = "0f0e0d0c-1111-4222-8333-444455556666";
    let payload = format!(r#"{{"session_id":"{id}","cwd":"{}"}}"#, sb.work.display());
    // A marker left by a session whose end was never seen, long ago.
    let stale = sb.path(".pas-agent/runs/hooks/gemini-11111111-2222-4333-8444-555566667777.json");
    std::fs::create_dir_all(stale.parent().unwrap()).unwrap();
    std::fs::write(&stale, "{}").unwrap();
    let long_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(30 * 86_400);
    std::fs::File::options()
        .write(true)
        .open(&stale)
        .unwrap()
        .set_modified(long_ago)
        .unwrap();
    let out = lifecycle(&sb, "gemini", "session-start", &payload);
    assert!(out.status.success());
    crate::launcher_support::wait_for("the old marker to be cleared", || {
        (!stale.exists()).then_some(())
    });
    assert!(
        runs(&sb).is_empty(),
        "nothing of that session was seen but a stray file"
    );
    assert!(
        sb.path(&format!(".pas-agent/runs/hooks/gemini-{id}.json"))
            .exists()
    );

    let good = sb.read(".pas-agent/session.json");
    let damaged = "{ this is not a session";
    sb.write(".pas-agent/session.json", damaged);
    for event in ["session-start", "stop", "session-end"] {
        let out = lifecycle(&sb, "gemini", event, &payload);
        assert_eq!(out.status.code(), Some(0), "{event}");
        assert_eq!(
            stdout(&out),
            "",
            "{event}: no context from a damaged session"
        );
        if event == "session-start" {
            assert!(
                stderr(&out).contains("warning:"),
                "{event}: {}",
                stderr(&out)
            );
        }
    }
    // The end only marks; its completion cannot record the run in a damaged session, and
    // leaves the marker for later.
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_eq!(sb.read(".pas-agent/session.json"), damaged);
    let marker = sb.path(&format!(".pas-agent/runs/hooks/gemini-{id}.json"));
    assert!(marker.exists());
    // Repaired, the next command records the session.
    sb.write(".pas-agent/session.json", &good);
    let out = sb.ok(&["runs"]);
    assert!(out.contains("gemini-cli"), "{out}");
    assert_eq!(runs(&sb).len(), 1);
    assert!(!marker.exists());
}

#[test]
fn gemini_cli_through_pas_agent_run_with_the_hooks_is_recorded_once() {
    require_agent("gemini", "@google/gemini-cli");
    let mut sb = session();
    let mock = Mock::start();
    mock.point_gemini_at_me(&mut sb);
    sb.ok(&["integrate", "gemini"]);
    sb.ok(&[
        "run",
        "gemini",
        "--",
        "-m",
        "gemini-2.5-flash",
        "-p",
        "Say hello",
    ]);
    let all = runs(&sb);
    assert_eq!(all.len(), 1, "{all:#?}");
    assert!(all[0]["launcher_pid"].is_number());
}

#[test]
fn a_link_in_the_project_never_leads_the_write_out_but_the_users_own_link_is_followed() {
    let sb = session();
    // A cloned repository's `.claude` leading into the user's home: refused, nothing written.
    let outside = sb.home.join("claude-config");
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, sb.path(".claude")).unwrap();
    let err = sb.fails(&["integrate", "claude"], 6);
    assert!(err.contains(".claude/settings.json"), "{err}");
    assert!(!outside.join("settings.json").exists());

    // The user's own settings linked into a dotfiles directory: written there, link kept.
    let dotfiles = sb.home.join("dotfiles");
    std::fs::create_dir_all(&dotfiles).unwrap();
    let mine = "{\n  \"ui\": {\"theme\": \"x\"}\n}\n";
    std::fs::write(dotfiles.join("gemini.json"), mine).unwrap();
    std::fs::create_dir_all(sb.home.join(".gemini")).unwrap();
    let link = sb.home.join(".gemini/settings.json");
    std::os::unix::fs::symlink(dotfiles.join("gemini.json"), &link).unwrap();
    sb.ok(&["integrate", "gemini", "--user"]);
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let written = std::fs::read_to_string(dotfiles.join("gemini.json")).unwrap();
    assert!(
        written.contains("lifecycle gemini session-start"),
        "{written}"
    );
    sb.ok(&["integrate", "gemini", "--user", "--remove"]);
    assert_eq!(
        std::fs::read_to_string(dotfiles.join("gemini.json")).unwrap(),
        mine
    );
}

#[test]
fn claude_code_resumed_directly_is_recorded_again_under_its_session_id() {
    require_agent("claude", "@anthropic-ai/claude-code");
    let mut sb = session();
    let mock = Mock::start();
    sb.env.extend(mock.claude_env("sk-ant-test"));
    sb.ok(&["integrate", "claude"]);
    direct(&sb, "claude", &strings(&["-p", "Say hello"]));
    let first = recorded_directly(&sb, "claude-code");
    let id = first["agent_session_id"].as_str().unwrap().to_string();
    sb.write("later.txt", "after the first session\n");
    direct(&sb, "claude", &strings(&["--resume", &id, "-p", "Go on"]));
    settled(&sb);
    let all = runs(&sb);
    assert_eq!(all.len(), 2, "{all:#?}");
    assert_eq!(all[1]["agent_session_id"], id.as_str());
    assert_eq!(all[1]["last_message"], REPLY);
    assert!(all[1]["started_at"].as_str() > first["ended_at"].as_str());
    // later.txt was written between the sessions, before the resumed one started.
    assert!(changed_paths(&all[1]).is_empty(), "{:#}", all[1]);
}

/// Sets the modification time of `path` to 30 days ago (older than the markers' 7 days).
fn age(path: &Path) {
    let long_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(30 * 86_400);
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(long_ago)
        .unwrap();
}

#[test]
fn markers_never_go_through_a_link_and_only_old_markers_are_cleared() {
    let id = "0f0e0d0c-1111-4222-8333-444455556666";
    let other = "gemini-11111111-2222-4333-8444-555566667777.json";
    // A cloned repository that commits `runs/hooks` (or `runs`) as a link into the project:
    // its old files (even ones named like markers) are not deleted, no marker is written there.
    for (link, target) in [
        (".pas-agent/runs/hooks", "../../config"),
        (".pas-agent/runs", "../config"),
    ] {
        let sb = session();
        let payload = format!(r#"{{"session_id":"{id}","cwd":"{}"}}"#, sb.work.display());
        sb.write("config/app.json", "{\"keep\": true}\n");
        sb.write(&format!("config/{other}"), "{}");
        age(&sb.path("config/app.json"));
        age(&sb.path(&format!("config/{other}")));
        std::fs::create_dir_all(sb.path(link).parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, sb.path(link)).unwrap();
        for event in ["session-start", "stop", "session-end"] {
            let out = lifecycle(&sb, "gemini", event, &payload);
            assert_eq!(out.status.code(), Some(0), "{event}");
        }
        assert_eq!(sb.read("config/app.json"), "{\"keep\": true}\n", "{link}");
        assert!(sb.path(&format!("config/{other}")).exists(), "{link}");
        let written: Vec<PathBuf> = walk(&sb.path("config"));
        assert_eq!(written.len(), 2, "{link}: {written:?}");
        let out = lifecycle(&sb, "gemini", "session-start", &payload);
        assert!(stderr(&out).contains("symbolic link"), "{}", stderr(&out));
    }

    // In the real directory: an old file that is not named as a marker, or does not hold one,
    // stays; an old marker goes.
    let sb = session();
    let payload = format!(r#"{{"session_id":"{id}","cwd":"{}"}}"#, sb.work.display());
    let dir = ".pas-agent/runs/hooks";
    sb.write(&format!("{dir}/notes.json"), "{}");
    sb.write(&format!("{dir}/claude-not-a-uuid.json"), "{}");
    sb.write(
        &format!("{dir}/claude-22222222-2222-4333-8444-555566667777.json"),
        "{\"mine\": 1}",
    );
    sb.write(&format!("{dir}/{other}"), "{\"started_at\":null}");
    for name in [
        "notes.json",
        "claude-not-a-uuid.json",
        "claude-22222222-2222-4333-8444-555566667777.json",
        other,
    ] {
        age(&sb.path(&format!("{dir}/{name}")));
    }
    let out = lifecycle(&sb, "gemini", "session-start", &payload);
    assert!(out.status.success());
    crate::launcher_support::wait_for("the old marker to be cleared", || {
        (!sb.path(&format!("{dir}/{other}")).exists()).then_some(())
    });
    assert!(sb.path(&format!("{dir}/notes.json")).exists());
    assert!(sb.path(&format!("{dir}/claude-not-a-uuid.json")).exists());
    assert!(
        sb.path(&format!(
            "{dir}/claude-22222222-2222-4333-8444-555566667777.json"
        ))
        .exists()
    );
    assert!(!sb.path(&format!("{dir}/{other}")).exists());
    assert!(sb.path(&format!("{dir}/gemini-{id}.json")).exists());
}

#[test]
fn a_session_whose_start_was_not_seen_is_recorded_once_whatever_comes_after() {
    let sb = session();
    let id = "0f0e0d0c-1111-4222-8333-444455556666";
    let cwd = sb.work.to_string_lossy().into_owned();
    let payload = |extra: &str| format!(r#"{{"session_id":"{id}","cwd":"{cwd}"{extra}}}"#);
    // No session start: the end records the session; a later turn and end record nothing more.
    for (event, extra) in [
        ("stop", r#","last_assistant_message":"first""#),
        ("session-end", ""),
        ("stop", r#","last_assistant_message":"second""#),
        ("session-end", ""),
        ("session-end", ""),
    ] {
        let out = lifecycle(&sb, "claude", event, &payload(extra));
        assert!(out.status.success(), "{}", stderr(&out));
        if event == "session-end" {
            settled(&sb);
        }
    }
    let all = runs(&sb);
    assert_eq!(all.len(), 1, "{all:#?}");
    assert_eq!(all[0]["last_message"], "first");
    // A start seen later (the session resumed) is recorded again.
    lifecycle(&sb, "claude", "session-start", &payload(""));
    lifecycle(&sb, "claude", "session-end", &payload(""));
    settled(&sb);
    assert_eq!(runs(&sb).len(), 2);
    let markers = walk(&sb.path(".pas-agent/runs/hooks"));
    assert!(markers.is_empty(), "{markers:?}");
}

#[test]
fn a_key_twice_or_a_hook_shape_not_understood_is_refused_and_inline_codex_handlers_are_found() {
    let sb = session();
    let cases = [
        (
            "claude",
            ".claude/settings.json",
            "{\"hooks\": {}, \"model\": \"x\", \"hooks\": {\"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"pas-agent lifecycle claude stop\"}]}]}}\n",
            "more than once",
        ),
        (
            "gemini",
            ".gemini/settings.json",
            "{\"hooks\": {\"AfterAgent\": [{\"hooks\": {\"type\": \"command\", \"command\": \"pas-agent lifecycle gemini stop\"}}]}}\n",
            "is not a list",
        ),
        (
            "codex",
            ".codex/config.toml",
            "[[hooks.Stop]]\nhooks = { type = \"command\", command = \"pas-agent lifecycle codex stop\" }\n",
            "hooks.Stop[0]",
        ),
    ];
    for (agent, file, bad, why) in cases {
        sb.write(file, bad);
        for extra in [&[][..], &["--remove"][..]] {
            let mut args = vec!["integrate", agent];
            args.extend_from_slice(extra);
            let err = sb.fails(&args, 6);
            assert!(err.contains(why), "{agent} {extra:?}: {err}");
            assert!(err.contains("left unchanged"), "{err}");
            assert_eq!(sb.read(file), bad, "{agent} {extra:?}");
        }
    }
    // Codex handlers written as an inline list of tables: found, not installed twice, removed.
    let inline = "[[hooks.Stop]]\nmatcher = \"\"\nhooks = [{ type = \"command\", command = \"pas-agent lifecycle codex stop\" }]\n";
    sb.write(".codex/config.toml", inline);
    let out = sb.ok(&["integrate", "codex", "--remove"]);
    assert!(out.contains("Removed"), "{out}");
    // Nothing else was in it: the file goes (and, empty, its folder).
    assert!(!sb.path(".codex").exists(), "{out}");
    sb.write(".codex/config.toml", inline);
    sb.ok(&["integrate", "codex"]);
    let text = sb.read(".codex/config.toml");
    assert_eq!(text.matches("lifecycle codex stop").count(), 1, "{text}");
}
