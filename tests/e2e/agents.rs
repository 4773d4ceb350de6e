//! The launcher with the real agent CLIs (installed by `.ci/run` from the npm registry), each
//! pointed at the mock model on 127.0.0.1 so it runs offline, each with its own HOME so the
//! agents' own session stores are the test's.
//!
//! For each agent: `pas-agent run <agent> -- <non-interactive args>` exports the session so the
//! model sees the task, exits 0, and records the agent's own session id — checked against the
//! agent's own store; then `pas-agent run <agent> --resume -- …` resumes that session with the
//! agent's own syntax, and the model sees the earlier conversation.
//!
//! A missing CLI fails the test with the command that installs it: these tests exist to show
//! the launcher works with the real tools, so they never pass without them.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{Sandbox, changed_paths, last_run, runs, walk};
use crate::mock_model::{Mock, REPLY, codex_args, require_agent};

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

/// Some request to `endpoint` carried the session's task: the exported `file` reached the model.
fn assert_task_reached(mock: &Mock, endpoint: &str, file: &str) {
    let requests = mock.model_requests(endpoint);
    assert!(
        requests.iter().any(|r| r.body.contains(TASK)),
        "{file} reached the model"
    );
}

/// A request made after the first `before` carried the new prompt and the earlier one: the
/// resumed session kept its conversation.
fn assert_resumed_conversation(mock: &Mock, before: usize) {
    let later = &mock.requests()[before..];
    assert!(
        later
            .iter()
            .any(|r| r.body.contains("Next step please")
                && r.body.contains("Say hello to the ledger")),
        "the resumed request carries the earlier conversation"
    );
}

fn argv(run: &Value) -> Vec<String> {
    run["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect()
}

fn first_line(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_str(text.lines().next().unwrap()).unwrap()
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

#[test]
fn codex_runs_records_its_rollout_id_and_resumes_it() {
    require_agent("codex", "@openai/codex");
    let mut sb = session();
    let mock = Mock::start();
    sb.env.push(("OPENAI_API_KEY".into(), "sk-test".into()));
    let mut args = vec!["run".to_string(), "codex".into(), "--".into()];
    args.extend(codex_args(&mock.base(), "Say hello to the ledger"));
    let out = sb.ok(&args);
    assert!(out.contains(REPLY), "{out}");
    let (_, id) = finished_ok(&sb, "codex");
    let rollouts: Vec<PathBuf> = store_files(&sb.home.join(".codex/sessions"), |p| {
        p.to_string_lossy().ends_with(".jsonl")
    });
    assert_eq!(rollouts.len(), 1, "{rollouts:?}");
    let meta = first_line(&rollouts[0]);
    assert_eq!(meta["type"], "session_meta");
    assert_eq!(meta["payload"]["id"], id.as_str());
    assert_task_reached(&mock, "/v1/responses", "AGENTS.md");

    let before = mock.requests().len();
    let mut args = vec![
        "run".to_string(),
        "codex".into(),
        "--resume".into(),
        "--".into(),
    ];
    args.extend(codex_args(&mock.base(), "Next step please"));
    sb.ok(&args);
    let resumed = last_run(&sb);
    assert_eq!(
        argv(&resumed)[..5],
        [
            "codex",
            "exec",
            "resume",
            id.as_str(),
            "--skip-git-repo-check"
        ]
    );
    assert_eq!(resumed["agent_session_id"], id.as_str());
    assert_resumed_conversation(&mock, before);
    assert_eq!(runs(&sb).len(), 2);
}

#[test]
fn gemini_cli_runs_records_its_chat_id_and_resumes_it() {
    require_agent("gemini", "@google/gemini-cli");
    let mut sb = session();
    let mock = Mock::start();
    mock.point_gemini_at_me(&mut sb);
    // An explicit model skips the model router's extra classification calls.
    let out = sb.ok(&[
        "run",
        "gemini",
        "--",
        "-m",
        "gemini-2.5-flash",
        "-p",
        "Say hello to the ledger",
    ]);
    assert!(out.contains(REPLY), "{out}");
    let (_, id) = finished_ok(&sb, "gemini-cli");
    let chats: Vec<PathBuf> = store_files(&sb.home.join(".gemini/tmp"), |p| {
        p.to_string_lossy().contains("/chats/session-")
    });
    assert_eq!(chats.len(), 1, "{chats:?}");
    assert_eq!(first_line(&chats[0])["sessionId"], id.as_str());
    assert_task_reached(&mock, "/v1beta/models/", "GEMINI.md");

    let before = mock.requests().len();
    sb.ok(&[
        "run",
        "gemini",
        "--resume",
        "--",
        "-m",
        "gemini-2.5-flash",
        "-p",
        "Next step please",
    ]);
    let resumed = last_run(&sb);
    assert_eq!(argv(&resumed)[..3], ["gemini", "--resume", id.as_str()]);
    assert_eq!(resumed["agent_session_id"], id.as_str());
    assert_resumed_conversation(&mock, before);
}

#[test]
fn opencode_runs_records_its_listed_session_and_resumes_it() {
    require_agent("opencode", "opencode-ai");
    let sb = session();
    let mock = Mock::start();
    mock.point_opencode_at_me(&sb);
    let out = sb.ok(&["run", "opencode", "--", "run", "Say hello to the ledger"]);
    assert!(out.contains(REPLY), "{out}");
    let (_, id) = finished_ok(&sb, "opencode");
    assert!(id.starts_with("ses_"), "{id}");
    assert_task_reached(&mock, "/v1/responses", "AGENTS.md");

    let before = mock.requests().len();
    sb.ok(&[
        "run",
        "opencode",
        "--resume",
        "--",
        "run",
        "Next step please",
    ]);
    let resumed = last_run(&sb);
    assert_eq!(
        argv(&resumed)[..4],
        ["opencode", "run", "--session", id.as_str()]
    );
    assert_resumed_conversation(&mock, before);
}
