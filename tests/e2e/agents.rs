//! The launcher with the real agent CLIs (installed by `.ci/run` from the npm registry), each
//! pointed at the mock model on 127.0.0.1 so it runs offline, each with its own HOME so the
//! agents' own session stores are the test's.
//!
//! Claude Code through the launcher in detail: the file its tool wrote is the run's only change,
//! and its interactive mode runs in the launcher's terminal. What every agent must do (export,
//! id, resume, words, hooks, MCP) is tests/e2e/conformance.rs, the same scenarios per agent.
//!
//! A missing CLI fails the test with the command that installs it: these tests exist to show
//! the launcher works with the real tools, so they never pass without them.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{Sandbox, changed_paths, last_run, walk};
use crate::mock_model::{Mock, REPLY, require_agent};

/// The task every test session carries; the model must see it.
const TASK: &str = "Migrate the zebra-billing service to the new ledger";

fn session() -> Sandbox {
    let sb = Sandbox::repo();
    sb.ok(&["init", "--task", TASK]);
    sb
}

/// The last run, checked to be a successful run of `agent`, with the agent's own session id
/// it recorded.
fn finished_ok(sb: &Sandbox, agent: &str) -> (Value, String) {
    let run = last_run(sb);
    assert_eq!(run["agent"], agent);
    assert_eq!(run["exit_code"], 0);
    let id = run["agent_session_id"]
        .as_str()
        .expect("session id")
        .to_string();
    (run, id)
}

/// The files of an agent's store under `dir` that `keep` selects.
fn store_files(dir: &Path, keep: impl Fn(&Path) -> bool) -> Vec<PathBuf> {
    walk(dir).into_iter().filter(|p| keep(p)).collect()
}

fn argv(run: &Value) -> Vec<String> {
    run["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn claude_code_runs_records_its_session_writes_a_file_and_resumes() {
    require_agent("claude", "@anthropic-ai/claude-code");
    let mut sb = session();
    let mock = Mock::start();
    let target = sb.path("hello.txt");
    mock.claude_write(&target.to_string_lossy(), "written by claude\n");
    sb.env.extend(mock.claude_env("sk-ant-test"));
    let out = sb.ok(&[
        "run",
        "claude",
        "--",
        "-p",
        "Please write hello.txt",
        "--permission-mode",
        "acceptEdits",
    ]);
    assert!(out.contains(REPLY), "{out}");
    assert_eq!(sb.read("hello.txt"), "written by claude\n");

    let (run, id) = finished_ok(&sb, "claude-code");
    assert_eq!(argv(&run)[..3], ["claude", "--session-id", id.as_str()]);
    // The id is the one Claude wrote in its own store.
    let transcripts: Vec<PathBuf> = store_files(&sb.home.join(".claude/projects"), |p| {
        p.extension().is_some_and(|e| e == "jsonl")
    });
    assert_eq!(transcripts.len(), 1, "{transcripts:?}");
    assert_eq!(transcripts[0].file_stem().unwrap().to_string_lossy(), id);
    assert_eq!(
        changed_paths(&run),
        ["hello.txt"],
        "CLAUDE.md was written by the export, not by Claude"
    );
    // The model saw the exported session (CLAUDE.md) in the request.
    let requests = mock.model_requests("/v1/messages");
    assert!(
        requests.iter().any(|r| r.body.contains(TASK)),
        "no request carried the task"
    );

    // Resume: the same session, with Claude's own syntax; the model sees the earlier turn.
    let before = mock.requests().len();
    sb.ok(&[
        "run",
        "claude",
        "--resume",
        "--",
        "-p",
        "What did you write?",
    ]);
    let resumed = last_run(&sb);
    assert_eq!(argv(&resumed)[..3], ["claude", "--resume", id.as_str()]);
    // Claude kept the session: still one transcript, named by the id, and it is what the
    // resumed run records.
    let transcripts: Vec<PathBuf> = store_files(&sb.home.join(".claude/projects"), |p| {
        p.extension().is_some_and(|e| e == "jsonl")
    });
    assert_eq!(transcripts.len(), 1, "{transcripts:?}");
    assert_eq!(resumed["agent_session_id"], id.as_str());
    let later: Vec<_> = mock.requests()[before..]
        .iter()
        .filter(|r| r.path.starts_with("/v1/messages") && r.body.contains("What did you write?"))
        .cloned()
        .collect();
    assert!(!later.is_empty(), "the resumed prompt reached the model");
    assert!(
        later
            .iter()
            .any(|r| r.body.contains("Please write hello.txt")),
        "the resumed request carries the earlier conversation"
    );
}

#[test]
fn claude_code_tui_runs_in_the_launchers_terminal_and_ctrl_c_reaches_it() {
    require_agent("claude", "@anthropic-ai/claude-code");
    let mut sb = session();
    let mock = Mock::start();
    let key = "sk-ant-test-0123456789abcdef";
    // A first start asks about the theme, the API key and the folder: answered in advance.
    let state = serde_json::json!({
        "hasCompletedOnboarding": true,
        "theme": "dark",
        "customApiKeyResponses": {"approved": [&key[key.len() - 20..]], "rejected": []},
        "projects": {sb.work.to_string_lossy(): {"hasTrustDialogAccepted": true, "hasCompletedProjectOnboarding": true}},
    });
    std::fs::write(sb.home.join(".claude.json"), state.to_string()).unwrap();
    sb.env.extend(mock.claude_env(key));
    let t = crate::launcher_support::Tmux::start(&sb, &["run", "claude"], 110, 36);
    t.wait_screen("Claude Code");
    t.wait_screen("shortcuts");
    t.keys(&["Say hello to the ledger"]);
    t.wait_screen("Say hello to the ledger");
    t.keys(&["Enter"]);
    t.wait_screen(REPLY);
    // Ctrl-C twice: Claude's own way out. The launcher is not interrupted; it records the run.
    t.keys(&["C-c"]);
    std::thread::sleep(std::time::Duration::from_millis(300));
    t.keys(&["C-c"]);
    assert_eq!(t.exit_code(), 0);
    let screen = t.wait_screen("pas-agent: claude-code exited 0");
    let run = last_run(&sb);
    assert_eq!(run["state"], "finished");
    let id = run["agent_session_id"].as_str().expect("session id");
    assert!(
        screen.contains(&format!("claude --resume {id}")) || screen.contains(id),
        "{screen}"
    );
    let transcript = walk(&sb.home.join(".claude/projects"))
        .into_iter()
        .find(|p| p.file_stem().is_some_and(|s| s.to_string_lossy() == id));
    assert!(
        transcript.is_some(),
        "Claude's own transcript is named by the recorded id"
    );
    let capture = sb.path(run["capture"].as_str().expect("a pty run is captured"));
    // Claude Code redraws only the cells that changed, so the reply's letters can reach the
    // terminal out of order and the plain text need not hold it in one piece; replaying the
    // raw capture through a terminal emulator must show it as the user saw it.
    let ansi = std::fs::read(&capture).unwrap();
    assert!(
        replay_shows(&ansi, 36, 110, REPLY),
        "{}",
        String::from_utf8_lossy(&ansi)
    );
    assert!(replay_shows(&ansi, 36, 110, "Say hello to the ledger"));
    let text = std::fs::read_to_string(capture.with_extension("txt")).unwrap();
    assert!(
        text.contains("Claude Code") && !text.contains('\u{1b}'),
        "{text}"
    );
    // capture.txt is the screen as read: the reply is one whole line of it, and so is every
    // line of the last screen a terminal emulator shows (the plain text before had
    // "Press   Ctrl-C again to exit": Claude redraws only the cells that change).
    assert!(text.lines().any(|l| l.contains(REPLY)), "{text}");
    let mut term = vt100::Parser::new(36, 110, 0);
    term.process(&ansi);
    for line in term.screen().contents().lines().map(str::trim_end) {
        assert!(
            line.is_empty() || text.lines().any(|t| t.trim_end() == line),
            "{line:?} is not a line of capture.txt:\n{text}"
        );
    }
    assert!(mock.requests().iter().any(|r| r.body.contains(TASK)));
}

/// Whether a terminal of `rows`×`cols` fed `bytes` (in 64-byte steps) shows `needle` on its
/// screen at some point.
fn replay_shows(bytes: &[u8], rows: u16, cols: u16, needle: &str) -> bool {
    let mut term = vt100::Parser::new(rows, cols, 0);
    bytes.chunks(64).any(|chunk| {
        term.process(chunk);
        term.screen().contents().contains(needle)
    })
}
