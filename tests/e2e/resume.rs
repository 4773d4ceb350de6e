//! `pas-agent sessions` and `pas-agent run AGENT --resume SELECTOR` with the real Claude Code and
//! Codex against the mock model (docs/freeze.md, "Resume any conversation by name"): a selector
//! by run number and by the end of an id, a miss that names the close matches, a conversation
//! started without pas-agent listed and resumed, one whose directory is gone, and the docs'
//! example of waking a finished conversation with new input.

use serde_json::Value;

use crate::common::{Sandbox, last_run, runs, stderr, stdout};
use crate::launcher_support::isolated;
use crate::mock_model::{Mock, REPLY, require_agent};

fn claude_sandbox(mock: &Mock) -> Sandbox {
    let mut sb = Sandbox::with_session();
    sb.env.extend(mock.claude_env("sk-ant-test"));
    sb.env.push((
        "PAS_AGENT_STATE_DIR".into(),
        sb.tmp.path().join("state").to_string_lossy().into_owned(),
    ));
    sb
}

/// Some request after the first `before` carried `prompt` and `earlier`.
fn asked_with(mock: &Mock, before: usize, prompt: &str, earlier: &str) -> bool {
    mock.requests()[before..]
        .iter()
        .any(|r| r.body.contains(prompt) && r.body.contains(earlier))
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
fn a_selector_by_run_number_or_suffix_resumes_and_a_miss_names_close_matches() {
    require_agent("claude", "@anthropic-ai/claude-code");
    let mock = Mock::start();
    let sb = claude_sandbox(&mock);
    sb.ok(&["run", "claude", "--", "-p", "First question"]);
    let id = last_run(&sb)["agent_session_id"]
        .as_str()
        .unwrap()
        .to_string();
    // A second conversation, so that a selector has something to tell apart.
    sb.ok(&["run", "claude", "--", "-p", "Another question"]);

    let before = mock.requests().len();
    sb.ok(&["run", "claude", "--resume", "1", "--", "-p", "By number"]);
    assert_eq!(
        argv(&last_run(&sb))[..3],
        ["claude", "--resume", id.as_str()]
    );
    assert!(asked_with(&mock, before, "By number", "First question"));

    let suffix = &id[id.len() - 8..];
    let before = mock.requests().len();
    sb.ok(&["run", "claude", "--resume", suffix, "--", "-p", "By suffix"]);
    assert_eq!(last_run(&sb)["agent_session_id"], id.as_str());
    assert!(asked_with(&mock, before, "By suffix", "First question"));

    // One character off: nothing runs, and the message names the close match.
    let mut wrong: Vec<char> = suffix.chars().collect();
    wrong[3] = if wrong[3] == 'f' { 'e' } else { 'f' };
    let wrong: String = wrong.into_iter().collect();
    let count = runs(&sb).len();
    let out = sb.run(&[
        "run",
        "claude",
        "--resume",
        &wrong,
        "--",
        "-p",
        "Never sent",
    ]);
    assert_eq!(out.status.code(), Some(125), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("Close matches") && err.contains(&id), "{err}");
    assert!(
        err.contains("First question") && err.contains("run #"),
        "{err}"
    );
    assert_eq!(runs(&sb).len(), count, "a miss records no run");
    assert!(
        !mock
            .requests()
            .iter()
            .any(|r| r.body.contains("Never sent"))
    );
}

#[test]
fn a_conversation_started_without_pas_agent_is_listed_and_resumed() {
    require_agent("claude", "@anthropic-ai/claude-code");
    let mock = Mock::start();
    let sb = claude_sandbox(&mock);
    let out = isolated(&sb, "claude")
        .args(["-p", "Outside question"])
        .output()
        .unwrap();
    assert!(stdout(&out).contains(REPLY), "{}", stderr(&out));

    let listed: Value = serde_json::from_str(&sb.ok(&["sessions", "--json"])).unwrap();
    let sessions = listed["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{listed}");
    let s = &sessions[0];
    assert_eq!(s["agent"], "claude-code");
    assert_eq!(s["first_prompt"], "Outside question");
    assert!(s["run"].is_null(), "no run recorded it: {s}");
    assert_eq!(s["cwd"], sb.work.to_string_lossy().as_ref());
    let id = s["id"].as_str().unwrap().to_string();
    let table = sb.ok(&["sessions", "claude"]);
    assert!(
        table.contains(&id) && table.contains("Outside question") && table.contains("claude"),
        "{table}"
    );

    let before = mock.requests().len();
    sb.ok(&[
        "run",
        "claude",
        "--resume",
        &id[id.len() - 6..],
        "--",
        "-p",
        "Follow up",
    ]);
    assert!(asked_with(&mock, before, "Follow up", "Outside question"));
    assert_eq!(last_run(&sb)["agent_session_id"], id.as_str());
    let table = sb.ok(&["sessions"]);
    assert!(table.contains("#1"), "the run that resumed it: {table}");
}

#[test]
fn a_conversation_whose_directory_is_gone_says_so_and_how_to_go_on() {
    require_agent("claude", "@anthropic-ai/claude-code");
    let mock = Mock::start();
    let sb = claude_sandbox(&mock);
    let sub = sb.work.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    let out = sb
        .cmd()
        .current_dir(&sub)
        .args(["run", "claude", "--", "-p", "In a subdirectory"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    // From the root, the conversation is resumed where it was started.
    let before = mock.requests().len();
    let out = sb.run(&[
        "run",
        "claude",
        "--resume",
        "1",
        "--",
        "-p",
        "From the root",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("where it was started"),
        "{}",
        stderr(&out)
    );
    assert_eq!(last_run(&sb)["cwd"], sub.to_string_lossy().as_ref());
    assert!(asked_with(
        &mock,
        before,
        "From the root",
        "In a subdirectory"
    ));

    std::fs::remove_dir_all(&sub).unwrap();
    let out = sb.run(&["run", "claude", "--resume", "1", "--", "-p", "Too late"]);
    assert_eq!(out.status.code(), Some(125));
    let err = stderr(&out);
    assert!(
        err.contains("no longer exists") && err.contains("mkdir -p"),
        "{err}"
    );
}

/// The lines of docs/freeze.md's example that wake a finished conversation, each with its
/// selector (the word after `--resume`) replaced by `select(agent)`.
fn wake_example(select: impl Fn(&str) -> String) -> Vec<String> {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/freeze.md")).unwrap();
    let lines: Vec<String> = doc
        .lines()
        .filter(|l| l.starts_with("pas-agent run ") && l.contains("--resume") && l.contains(" -- "))
        .map(|l| {
            let words: Vec<&str> = l.split(' ').collect();
            let agent = words[2];
            let at = words.iter().position(|w| *w == "--resume").unwrap() + 1;
            let mut words: Vec<String> = words.iter().map(|w| w.to_string()).collect();
            words[at] = select(agent);
            words.join(" ")
        })
        .collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    lines
}

#[test]
fn the_docs_example_wakes_finished_conversations_with_new_input() {
    require_agent("claude", "@anthropic-ai/claude-code");
    require_agent("codex", "@openai/codex");
    let mock = Mock::start();
    let mut sb = claude_sandbox(&mock);
    sb.env.push(("OPENAI_API_KEY".into(), "sk-test".into()));
    // Codex pointed at the mock by its configuration, so that the example runs as written.
    std::fs::create_dir_all(sb.home.join(".codex")).unwrap();
    std::fs::write(
        sb.home.join(".codex/config.toml"),
        format!(
            "model_provider = \"mock\"\nmodel = \"mock-model\"\ncheck_for_update_on_startup = false\n[model_providers.mock]\nname = \"mock\"\nbase_url = \"{}/v1\"\nwire_api = \"responses\"\nenv_key = \"OPENAI_API_KEY\"\n",
            mock.base()
        ),
    )
    .unwrap();
    sb.ok(&["run", "claude", "--", "-p", "Write the invoice job"]);
    let claude = last_run(&sb)["agent_session_id"]
        .as_str()
        .unwrap()
        .to_string();
    sb.ok(&["run", "codex", "--", "exec", "Rename the ledger tables"]);
    let codex_run = runs(&sb).len();
    let before = mock.requests().len();
    for line in wake_example(|agent| match agent {
        "claude" => claude[claude.len() - 8..].to_string(),
        _ => codex_run.to_string(),
    }) {
        let out = isolated(&sb, "sh")
            .env(
                "PATH",
                format!(
                    "{}:{}",
                    crate::common::bin().parent().unwrap().display(),
                    std::env::var("PATH").unwrap_or_default()
                ),
            )
            .args(["-c", &line])
            .output()
            .unwrap();
        assert!(out.status.success(), "{line}: {}", stderr(&out));
    }
    let prompt = "Answer the review comments in review.md";
    assert!(asked_with(&mock, before, prompt, "Write the invoice job"));
    assert!(asked_with(
        &mock,
        before,
        prompt,
        "Rename the ledger tables"
    ));
}
