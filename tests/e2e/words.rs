//! The agents' own words in the handoff : after `pas-agent run`, the run
//! record holds what the real agent CLI (offline, against the mock model) was asked and
//! answered, read from the agent's own session store; the next agent's export shows it; a
//! resumed session records only its new turns; a damaged or huge transcript never fails the run
//! and the record says why; `runs N` shows one run in full; and the `pas-agent update` commands
//! the block gives run as written.

use serde_json::Value;

use crate::common::{Sandbox, last_run, runs, stderr, stdout};
use crate::mock_model::{Mock, REPLY, codex_args, require_agent};

const TASK: &str = "Migrate the zebra-billing service to the new ledger";

fn session() -> Sandbox {
    let sb = Sandbox::repo();
    sb.ok(&["init", "--task", TASK]);
    sb.ok(&["update", "--remaining", "Port the invoice job"]);
    sb
}

fn transcript(run: &Value) -> &Value {
    let t = &run["transcript"];
    assert!(t.is_object(), "no transcript in {run:#}");
    t
}

fn prompts(run: &Value) -> Vec<String> {
    transcript(run)["prompts"]
        .as_array()
        .map(|a| a.iter().map(|p| p.as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

fn codex(sb: &Sandbox, mock: &Mock, resume: bool, prompt: &str) -> String {
    let mut args = vec!["run".to_string(), "codex".into()];
    if resume {
        args.push("--resume".into());
    }
    args.push("--".into());
    args.extend(codex_args(&mock.base(), prompt));
    sb.ok(&args)
}

#[test]
fn claude_codes_answer_is_recorded_and_codex_receives_it_then_codex_resumes_with_new_turns_only() {
    require_agent("claude", "@anthropic-ai/claude-code");
    require_agent("codex", "@openai/codex");
    let mut sb = session();
    let mock = Mock::start();
    sb.env.extend(mock.claude_env("sk-ant-test"));
    sb.env.push(("OPENAI_API_KEY".into(), "sk-test".into()));
    sb.ok(&["run", "claude", "--", "-p", "Port the invoice job please"]);

    // Claude Code's own words, from its own transcript.
    let run = last_run(&sb);
    assert_eq!(run["exit_code"], 0);
    let t = transcript(&run);
    assert_eq!(t["last_answer"], REPLY, "{t:#}");
    assert_eq!(prompts(&run), ["Port the invoice job please"]);
    assert!(t["model"].as_str().is_some_and(|m| !m.is_empty()), "{t:#}");
    assert_eq!(t["tokens"]["input"], 10, "{t:#}");
    assert_eq!(t["tokens"]["output"], 5, "{t:#}");
    assert!(t.get("missing").is_none(), "{t:#}");
    let source = t["source"].as_str().unwrap();
    assert!(
        source.ends_with(&format!(
            "{}.jsonl",
            run["agent_session_id"].as_str().unwrap()
        )),
        "{source}"
    );

    // `runs 1` shows it in full, and as JSON.
    let one = sb.ok(&["runs", "1"]);
    for want in [
        "Run #1",
        "Agent:    claude-code",
        "Command:  claude --session-id",
        "Outcome:  exited 0",
        "Prompts:\n  Port the invoice job please",
        &format!("Last answer:\n  {REPLY}"),
    ] {
        assert!(one.contains(want), "{want:?} in\n{one}");
    }
    let json: Value = serde_json::from_str(&sb.ok(&["runs", "1", "--json"])).unwrap();
    assert_eq!(json["number"], 1);
    assert_eq!(json["run"]["transcript"]["last_answer"], REPLY);

    // Codex continues: the block it receives carries Claude's answer, and the model sees it.
    let before = mock.requests().len();
    codex(&sb, &mock, false, "Continue where Claude stopped");
    let agents_md = sb.read("AGENTS.md");
    assert!(
        agents_md.contains(&format!("  - Answered: {REPLY}")),
        "{agents_md}"
    );
    assert!(
        agents_md.contains("  - Asked: Port the invoice job please"),
        "{agents_md}"
    );
    let first_codex = mock.requests()[before..]
        .iter()
        .find(|r| r.path.contains("/v1/responses"))
        .cloned()
        .expect("codex asked the model");
    assert!(
        first_codex.body.contains(&format!("Answered: {REPLY}")),
        "Claude's answer reached Codex's model"
    );
    let run = last_run(&sb);
    assert_eq!(run["agent"], "codex");
    assert_eq!(prompts(&run), ["Continue where Claude stopped"]);
    assert_eq!(transcript(&run)["last_answer"], REPLY);
    assert_eq!(transcript(&run)["model"], "mock-model");

    // A resumed Codex session: its rollout holds both turns, the run records the new one only.
    codex(&sb, &mock, true, "Next step please");
    let resumed = last_run(&sb);
    assert_eq!(resumed["agent_session_id"], run["agent_session_id"]);
    assert_eq!(prompts(&resumed), ["Next step please"]);
    assert_eq!(transcript(&resumed)["last_answer"], REPLY);
    assert_eq!(transcript(&resumed)["tokens"]["input"], 10);
    assert_eq!(runs(&sb).len(), 3);
}

#[test]
fn a_resumed_claude_code_session_records_only_its_new_turns() {
    require_agent("claude", "@anthropic-ai/claude-code");
    let mut sb = session();
    let mock = Mock::start();
    sb.env.extend(mock.claude_env("sk-ant-test"));
    sb.ok(&["run", "claude", "--", "-p", "First question"]);
    sb.ok(&["run", "claude", "--resume", "--", "-p", "Second question"]);
    let all = runs(&sb);
    assert_eq!(all[0]["agent_session_id"], all[1]["agent_session_id"]);
    assert_eq!(prompts(&all[0]), ["First question"]);
    assert_eq!(prompts(&all[1]), ["Second question"]);
    assert_eq!(transcript(&all[1])["last_answer"], REPLY);
    assert_eq!(transcript(&all[1])["tokens"]["input"], 10);
}

#[test]
fn gemini_clis_answer_is_recorded_and_a_resume_records_only_new_turns() {
    require_agent("gemini", "@google/gemini-cli");
    let mut sb = session();
    let mock = Mock::start();
    mock.point_gemini_at_me(&mut sb);
    let gemini = |resume: bool, prompt: &str| {
        let mut args = vec!["run", "gemini"];
        if resume {
            args.push("--resume");
        }
        args.extend(["--", "-m", "gemini-2.5-flash", "-p", prompt]);
        sb.ok(&args);
    };
    gemini(false, "Say hello to the ledger");
    let run = last_run(&sb);
    assert_eq!(transcript(&run)["last_answer"], REPLY);
    assert_eq!(prompts(&run), ["Say hello to the ledger"]);
    assert_eq!(transcript(&run)["model"], "gemini-2.5-flash");
    // Gemini CLI names a chat file by the minute it starts, and a resume first starts a file of
    // its own before it appends to the resumed one: give the first file an earlier minute, as
    // a resume a minute or more later finds it, so that the resume leaves that second file.
    let chats = |sb: &Sandbox| -> Vec<std::path::PathBuf> {
        crate::common::walk(&sb.home.join(".gemini/tmp"))
            .into_iter()
            .filter(|p| p.to_string_lossy().contains("/chats/session-"))
            .collect()
    };
    let first = chats(&sb).pop().expect("a chat file");
    let name = first.file_name().unwrap().to_string_lossy().into_owned();
    let earlier = first.with_file_name(format!(
        "session-2026-01-01T00-00-{}",
        &name[name.len() - 14..]
    ));
    std::fs::rename(&first, &earlier).unwrap();
    gemini(true, "Next step please");
    let resumed = last_run(&sb);
    assert_eq!(resumed["agent_session_id"], run["agent_session_id"]);
    assert_eq!(chats(&sb).len(), 2, "{:?}", chats(&sb));
    assert_eq!(prompts(&resumed), ["Next step please"], "{resumed:#}");
    assert_eq!(transcript(&resumed)["last_answer"], REPLY);
    // The next export, for another agent, carries Gemini CLI's answer.
    sb.ok(&["export", "--to", "claude"]);
    assert!(
        sb.read("CLAUDE.md")
            .contains(&format!("  - Answered: {REPLY}"))
    );
}

#[test]
fn opencodes_answer_is_recorded_through_its_own_export() {
    require_agent("opencode", "opencode-ai");
    let sb = session();
    let mock = Mock::start();
    mock.point_opencode_at_me(&sb);
    sb.ok(&["run", "opencode", "--", "run", "Say hello to the ledger"]);
    let run = last_run(&sb);
    let t = transcript(&run);
    assert_eq!(t["last_answer"], REPLY, "{t:#}");
    assert_eq!(t["model"], "gpt-4o");
    // OpenCode stores the words of `opencode run` as one message (quoting those with spaces).
    let asked = prompts(&run);
    assert_eq!(asked.len(), 1);
    assert!(asked[0].contains("Say hello to the ledger"), "{asked:?}");
    sb.ok(&[
        "run",
        "opencode",
        "--resume",
        "--",
        "run",
        "Next step please",
    ]);
    let resumed = last_run(&sb);
    assert_eq!(resumed["agent_session_id"], run["agent_session_id"]);
    let asked = prompts(&resumed);
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(asked[0].contains("Next step please"), "{asked:?}");
}

/// Runs the real Claude Code through a wrapper that does `damage` to its transcript after it
/// exits (before pas-agent reads it): the run is recorded in full, and says why the words are
/// missing.
fn claude_with_damaged_transcript(damage: &str) -> (Sandbox, Value, String) {
    require_agent("claude", "@anthropic-ai/claude-code");
    let real = which::which("claude").unwrap();
    let mut sb = session();
    let mock = Mock::start();
    sb.env.extend(mock.claude_env("sk-ant-test"));
    sb.stand_in(
        "claude",
        &format!(
            "'{}' \"$@\"\nrc=$?\nfor f in \"$HOME\"/.claude/projects/*/*.jsonl; do {damage}; done\nexit $rc",
            real.display()
        ),
    );
    sb.write("new.txt", "x\n");
    let out = sb.run(&["run", "claude", "--", "-p", "Hello"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let run = last_run(&sb);
    // Everything else is recorded as usual.
    assert_eq!(run["state"], "finished");
    assert_eq!(run["exit_code"], 0);
    assert!(run["agent_session_id"].is_string(), "{run:#}");
    assert!(run["checkpoint_after"].is_string(), "{run:#}");
    let why = transcript(&run)["missing"]
        .as_str()
        .expect("the record says why the words are missing")
        .to_string();
    assert!(transcript(&run).get("last_answer").is_none(), "{run:#}");
    // The user is told, on stderr.
    let told = stderr(&out);
    assert!(
        told.contains("claude-code's own words are not in the run record: ") && told.contains(&why),
        "{told}"
    );
    (sb, run, why)
}

#[test]
fn a_damaged_transcript_does_not_fail_the_run_and_the_record_says_why() {
    let (sb, _, why) = claude_with_damaged_transcript(
        r#"printf '{"type":"user","timestamp":"20\n\001\377 not json\n' > "$f""#,
    );
    assert!(why.contains("could not be read"), "{why}");
    assert!(why.contains(".jsonl"), "{why}");
    // The export and `runs N` still work, and say why.
    sb.ok(&["export", "--to", "codex"]);
    assert!(
        sb.read("AGENTS.md")
            .contains("  - Its words were not recorded: the session holds no prompt"),
        "{}",
        sb.read("AGENTS.md")
    );
    assert!(sb.ok(&["runs", "1"]).contains("Words missing:"));
}

#[test]
fn a_huge_transcript_is_not_read_and_the_record_says_why() {
    // Past the 64 MiB limit (a sparse tail: no disk is used).
    let (_, _, why) = claude_with_damaged_transcript(r#"truncate -s 70M "$f""#);
    assert!(why.contains("larger than the 64 MiB"), "{why}");
    assert!(why.contains("agent transcript"), "{why}");
}

#[test]
fn runs_n_refuses_a_number_that_is_not_a_run() {
    let sb = session();
    sb.ok(&["run", "--no-pty", "sh", "-c", "true"]);
    let err = sb.fails(&["runs", "2"], 2);
    assert!(
        err.contains("there is no run #2: the session has 1 run"),
        "{err}"
    );
    let err = sb.fails(&["runs", "x"], 2);
    assert!(err.contains("is not a run number"), "{err}");
    // A program whose store pas-agent does not read has no transcript; its record is unchanged.
    assert!(last_run(&sb).get("transcript").is_none());
    let one = sb.ok(&["runs", "1"]);
    assert!(one.contains("Command:  sh -c true"), "{one}");
    assert!(!one.contains("Words missing"), "{one}");
}

/// The `pas-agent update` commands the block gives, as written (split as a shell would: words,
/// double-quoted strings).
fn update_commands(block: &str) -> Vec<Vec<String>> {
    block
        .split('`')
        .filter(|s| s.starts_with("pas-agent update "))
        .map(|cmd| {
            let mut words = Vec::new();
            let mut word = String::new();
            let mut quoted = false;
            for c in cmd.chars() {
                match c {
                    '"' => quoted = !quoted,
                    ' ' if !quoted => {
                        if !word.is_empty() {
                            words.push(std::mem::take(&mut word));
                        }
                    }
                    c => word.push(c),
                }
            }
            words.push(word);
            words
        })
        .collect()
}

#[test]
fn the_update_commands_in_the_block_run_as_written_and_change_the_record() {
    let sb = session();
    let out = sb
        .cmd()
        .args(["export", "--to", "codex", "-o", "-"])
        .output()
        .unwrap();
    let block = stdout(&out);
    let commands = update_commands(&block);
    let flags: Vec<&str> = commands.iter().map(|c| c[2].as_str()).collect();
    assert_eq!(
        flags,
        ["--done", "--completed", "--discovery", "--next"],
        "{block}"
    );
    for cmd in &commands {
        assert_eq!(cmd[0], "pas-agent");
        sb.ok(&cmd[1..]);
    }
    let task = &sb.session()["task"];
    assert_eq!(task["remaining"], serde_json::json!([]));
    assert_eq!(
        task["completed"],
        serde_json::json!(["Port the invoice job", "what you finished"])
    );
    assert_eq!(task["discoveries"], serde_json::json!(["what you learned"]));
    assert_eq!(task["next_action"], "what comes next");
    // With nothing remaining, the block offers no `--done`.
    sb.ok(&["export", "--to", "codex"]);
    let flags: Vec<String> = update_commands(&sb.read("AGENTS.md"))
        .into_iter()
        .map(|c| c[2].clone())
        .collect();
    assert_eq!(flags, ["--completed", "--discovery", "--next"]);
}

/// A run recorded by Claude Code's lifecycle hooks whose transcript cannot be found still
/// hands off the last message the stop event gave: in `runs N` and in the next agent's block.
#[test]
fn a_run_recorded_by_the_hooks_hands_off_its_stop_message() {
    let sb = session();
    let id = "5a4b3c2d-1111-4222-8333-444455556666";
    let cwd = sb.work.to_string_lossy().into_owned();
    for (event, extra) in [
        ("session-start", ""),
        ("stop", r#","last_assistant_message":"I made g.txt""#),
        ("session-end", r#","transcript_path":"/nonexistent.jsonl""#),
    ] {
        let payload = format!(r#"{{"session_id":"{id}","cwd":"{cwd}"{extra}}}"#);
        let mut child = sb
            .cmd()
            .args(["lifecycle", "claude", event])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        let _ = child.stdin.take().unwrap().write_all(payload.as_bytes());
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{event}: {}", stderr(&out));
    }
    crate::integrate::settled(&sb);
    assert_eq!(runs(&sb).len(), 1);
    let shown = sb.ok(&["runs", "1"]);
    assert!(shown.contains("I made g.txt"), "{shown}");
    assert!(shown.contains("Recorded by"), "{shown}");
    let block = sb.ok(&["export", "--to", "codex", "-o", "-"]);
    assert!(block.contains("Answered: I made g.txt"), "{block}");
}
