//! What the next agent is told about the runs before it: only runs that did work (a start
//! that failed and a session in which nothing was asked are recorded as such, listed by
//! `runs`, and left out of the block); each run's own files, never another run's; and what
//! each run did (the files its tools wrote, the commands they ran with their exit codes).
//! Real Claude Code, Codex and Gemini CLI against the mock model, each with its own HOME.

use std::path::Path;
use std::process::{Child, Output, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::common::{Sandbox, changed_paths, runs, stderr, stdout};
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

/// Claude Code's environment pointed at the mock, without an API key (not logged in).
fn claude_without_key(mock: &Mock) -> Vec<(String, String)> {
    mock.claude_env("unused")
        .into_iter()
        .filter(|(k, _)| k != "ANTHROPIC_API_KEY")
        .collect()
}

/// Runs pas-agent with `args` and the sandbox's environment plus `env`; returns the output.
fn run_with(sb: &Sandbox, env: &[(String, String)], args: &[&str]) -> Output {
    let mut cmd = sb.cmd();
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run pas-agent")
}

/// Codex pointed at the mock through its user config, with `gpt-5.5` (whose tools include
/// `apply_patch`), the project trusted; no key unless `key`.
fn codex_config(sb: &Sandbox, mock: &Mock) -> std::path::PathBuf {
    let home = sb.home.join(".codex");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join("config.toml"),
        format!(
            "model_provider = \"mock\"\nmodel = \"gpt-5.5\"\ncheck_for_update_on_startup = false\n\n[model_providers.mock]\nname = \"mock\"\nbase_url = \"{}/v1\"\nwire_api = \"responses\"\nenv_key = \"OPENAI_API_KEY\"\n\n[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
            mock.base(),
            sb.work.display()
        ),
    )
    .unwrap();
    home
}

/// The block `export` writes for Gemini CLI, as the next agent would read it.
fn block(sb: &Sandbox) -> String {
    sb.ok(&["export", "--to", "gemini", "-o", "-"])
}

/// The lines of the block's "Recent Agent Runs" section.
fn recent_runs(block: &str) -> Vec<String> {
    block
        .split("## Recent Agent Runs")
        .nth(1)
        .map(|rest| {
            rest.lines()
                .skip(1)
                .take_while(|l| !l.starts_with("---") && !l.starts_with("## "))
                .filter(|l| !l.trim().is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Claude Code's own state for an interactive start in `dir`: onboarding done, the test key
/// approved, the folder trusted (what a user has answered once).
fn claude_onboarded(sb: &Sandbox, dir: &Path) {
    let config = sb.home.join(".claude");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        sb.home.join(".claude.json"),
        serde_json::json!({
            "hasCompletedOnboarding": true,
            "lastOnboardingVersion": "2.1.197",
            "customApiKeyResponses": {"approved": ["sk-ant-test"], "rejected": []},
            "projects": {dir.to_string_lossy(): {
                "hasTrustDialogAccepted": true, "hasCompletedProjectOnboarding": true}}
        })
        .to_string(),
    )
    .unwrap();
}

#[test]
fn failed_starts_and_a_session_with_nothing_asked_are_recorded_as_such_and_left_out_of_the_block() {
    require_agent("claude", "@anthropic-ai/claude-code");
    require_agent("codex", "@openai/codex");
    require_agent("gemini", "@google/gemini-cli");
    let mut sb = session();
    let mock = Mock::start();
    // Claude Code not logged in: it says so and exits 1 (its transcript holds the prompt and
    // its own error, no answer).
    let out = run_with(
        &sb,
        &claude_without_key(&mock),
        &["run", "claude", "--", "-p", "Say hello"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    // Claude Code refusing its command line: no session at all under the id pas-agent gave it.
    let out = run_with(
        &sb,
        &mock.claude_env("sk-ant-test"),
        &[
            "run",
            "claude",
            "--",
            "-p",
            "Say hello",
            "--permission-mode",
            "no-such-mode",
        ],
    );
    assert_ne!(out.status.code(), Some(0), "{}", stderr(&out));
    // Codex without its key.
    codex_config(&sb, &mock);
    let out = run_with(
        &sb,
        &[],
        &[
            "run",
            "codex",
            "--",
            "exec",
            "--skip-git-repo-check",
            "Say hello",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    // Gemini CLI in a folder it does not trust: 55.
    std::fs::create_dir_all(sb.home.join(".gemini")).unwrap();
    std::fs::write(
        sb.home.join(".gemini/settings.json"),
        r#"{"security":{"auth":{"selectedType":"gemini-api-key"}}}"#,
    )
    .unwrap();
    let gemini_env = [
        ("GOOGLE_GEMINI_BASE_URL".to_string(), mock.base()),
        ("GEMINI_API_KEY".to_string(), "test-key".to_string()),
    ];
    let out = run_with(
        &sb,
        &gemini_env,
        &[
            "run",
            "gemini",
            "--",
            "-m",
            "gemini-2.5-flash",
            "-p",
            "Say hello",
        ],
    );
    assert_eq!(out.status.code(), Some(55), "{}", stderr(&out));
    // One run that works.
    sb.env.extend(mock.claude_env("sk-ant-test"));
    sb.ok(&["run", "claude", "--", "-p", "Port the invoice job please"]);
    // A session in which nothing is asked: Claude Code opened in a terminal and closed, seen
    // through its hooks.
    sb.ok(&["integrate", "claude"]);
    claude_onboarded(&sb, &sb.work);
    let claude = which::which("claude").unwrap();
    let term = crate::launcher_support::Tmux::start_shell(
        &sb,
        &crate::launcher_support::sh_quote(&claude.to_string_lossy()),
        200,
        50,
    );
    term.wait_screen("? for shortcuts");
    wait_for("the session's start", || {
        crate::common::walk(&sb.path(".pas-agent/runs/hooks"))
            .first()
            .cloned()
    });
    let start = std::time::Instant::now();
    term.keys(&["-l", "/exit"]);
    while !term.screen().contains("/exit") {
        assert!(start.elapsed() < crate::launcher_support::PATIENCE);
        std::thread::sleep(Duration::from_millis(200));
    }
    term.keys(&["Enter"]);
    assert_eq!(term.exit_code_only(), 0);
    settled(&sb);

    let all = runs(&sb);
    let outcomes: Vec<(&str, &Value)> = all
        .iter()
        .map(|r| (r["agent"].as_str().unwrap(), &r["result"]))
        .collect();
    assert_eq!(
        outcomes,
        [
            ("claude-code", &Value::from("failed_start")),
            ("claude-code", &Value::from("failed_start")),
            ("codex", &Value::from("failed_start")),
            ("gemini-cli", &Value::from("failed_start")),
            ("claude-code", &Value::Null),
            ("claude-code", &Value::from("nothing_asked")),
        ],
        "{all:#?}"
    );
    // `runs` lists them all, and says what each amounted to.
    let list = sb.ok(&["runs"]);
    assert_eq!(list.matches("failed start").count(), 4, "{list}");
    assert_eq!(list.matches("nothing asked").count(), 1, "{list}");
    // `runs 2` never contradicts its own command line: the id pas-agent chose is on it, and
    // the record says the agent's store holds no session under it.
    let second = sb.ok(&["runs", "2"]);
    let chosen = all[1]["argv"]
        .as_array()
        .unwrap()
        .iter()
        .skip_while(|a| *a != "--session-id")
        .nth(1)
        .and_then(Value::as_str)
        .expect("the id pas-agent chose")
        .to_string();
    let session_line = second
        .lines()
        .find(|l| l.starts_with("Session:"))
        .unwrap_or_default();
    assert!(session_line.contains(&chosen), "{second}");
    assert!(!second.contains("not known"), "{second}");
    assert!(second.contains("failed start"), "{second}");
    // The block shows the one run that worked.
    let recent = recent_runs(&block(&sb));
    assert_eq!(recent.len(), 3, "{recent:#?}");
    assert!(recent[0].contains("claude-code"), "{recent:#?}");
    assert!(recent[1].contains("Asked: Port the invoice job please"));
    assert!(recent[2].contains(&format!("Answered: {REPLY}")));
}

/// Runs `program` directly in the sandbox; asserts success.
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

/// The run of `agent` in `runs`.
fn run_of<'a>(all: &'a [Value], agent: &str) -> &'a Value {
    all.iter()
        .find(|r| r["agent"] == agent)
        .unwrap_or_else(|| panic!("no {agent} run in {all:#?}"))
}

/// `(path, shared)` of a run's files.
fn files(run: &Value) -> Vec<(String, bool)> {
    run["files_changed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["path"].as_str().unwrap().to_string(), f["shared"] == true))
        .collect()
}

#[test]
fn two_overlapping_runs_keep_their_own_files_and_the_block_says_what_each_did() {
    require_agent("claude", "@anthropic-ai/claude-code");
    require_agent("codex", "@openai/codex");
    let mut sb = session();
    let mock = Mock::start();
    mock.use_tools();
    let finish = sb.tmp.path().join("codex-may-finish");
    // Codex's last turn (its answer after its tools ran) waits until Claude Code is done.
    {
        let finish = finish.clone();
        mock.script(move |req, body| {
            if req.path.starts_with("/v1/responses")
                && body["input"].as_array().is_some_and(|i| {
                    i.iter()
                        .filter(|x| {
                            matches!(
                                x["type"].as_str(),
                                Some("function_call_output" | "custom_tool_call_output")
                            )
                        })
                        .count()
                        == 2
                })
            {
                let start = std::time::Instant::now();
                while !finish.exists() && start.elapsed() < Duration::from_secs(100) {
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
            crate::tool_mock::answer(req, body)
        });
    }
    codex_config(&sb, &mock);
    sb.env.push(("OPENAI_API_KEY".into(), "sk-test".into()));
    sb.env.extend(mock.claude_env("sk-ant-test"));
    sb.ok(&["integrate", "claude"]);
    let (a, b) = (sb.path("a.txt"), sb.path("b.txt"));
    // Codex through the launcher: writes b.txt, runs `false`, then waits.
    let codex_prompt = format!("Please [[write {}]] then [[run false]]", b.display());
    let codex: Child = sb
        .cmd()
        .args([
            "run",
            "codex",
            "--no-pty",
            "--",
            "exec",
            "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox",
            &codex_prompt,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("Codex to write b.txt", || b.exists().then_some(()));
    // Meanwhile Claude Code, started directly: writes a.txt, touches shared.txt, runs `false`.
    let claude_prompt = format!(
        "Please [[write {}]] then [[run touch shared.txt]] then [[run false]]",
        a.display()
    );
    direct(
        &sb,
        "claude",
        &[
            "-p",
            &claude_prompt,
            "--permission-mode",
            "acceptEdits",
            "--allowedTools",
            "Bash",
        ],
    );
    settled(&sb);
    std::fs::write(&finish, "").unwrap();
    let out = codex.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let all = runs(&sb);
    assert_eq!(all.len(), 2, "{all:#?}");
    let claude = run_of(&all, "claude-code");
    let codex = run_of(&all, "codex");
    // Each run's own file is its own; a file neither transcript names is shared; the other
    // run's file is never this run's.
    assert_eq!(
        files(claude),
        [
            ("a.txt".to_string(), false),
            ("shared.txt".to_string(), true)
        ],
        "{claude:#}"
    );
    assert_eq!(
        files(codex),
        [
            ("b.txt".to_string(), false),
            ("shared.txt".to_string(), true)
        ],
        "{codex:#}"
    );
    assert_eq!(changed_paths(claude).len(), 2);
    // What each did, from its own transcript.
    let ran = |r: &Value| -> Vec<(String, Option<i64>)> {
        r["transcript"]["commands"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["command"].as_str().unwrap().to_string(),
                    c["exit_code"].as_i64(),
                )
            })
            .collect()
    };
    assert_eq!(
        ran(claude),
        [
            ("touch shared.txt".to_string(), Some(0)),
            ("false".to_string(), Some(1))
        ]
    );
    assert_eq!(ran(codex), [("false".to_string(), Some(1))]);
    // The next agent's block says it, and never that one run changed the other's file.
    let text = block(&sb);
    let recent = recent_runs(&text).join("\n");
    // Codex started first, so it is listed first.
    let codex_part = recent
        .split("— codex")
        .nth(1)
        .and_then(|p| p.split("— claude-code").next())
        .expect("codex's run");
    let claude_part = recent.split("— claude-code").nth(1).expect("claude's run");
    assert!(claude_part.contains("Changed: `a.txt`"), "{recent}");
    assert!(!claude_part.contains("b.txt"), "{recent}");
    assert!(
        claude_part.contains("Ran: `touch shared.txt` (exit 0), `false` (exit 1)"),
        "{recent}"
    );
    assert!(
        claude_part.contains(
            "Also changed while another run worked here (maybe not by this one): `shared.txt`"
        ),
        "{recent}"
    );
    assert!(codex_part.contains("Changed: `b.txt`"), "{recent}");
    assert!(!codex_part.contains("a.txt"), "{recent}");
    assert!(codex_part.contains("Ran: `false` (exit 1)"), "{recent}");
    // `runs N` shows all of it.
    let full = sb.ok(&["runs", "2"]);
    assert!(full.contains("[exit 1] false"), "{full}");
    assert!(full.contains("shared.txt (untracked; shared"), "{full}");
}
