//! One conformance suite for every agent pas-agent launches: the same scenarios, table-driven,
//! against the real agent CLIs (pinned and installed by `.ci/run`) and the loopback mock of
//! the API each one speaks (tests/e2e/mock_model.rs). An agent gets the suite by a row in
//! [`rows!`] below: how to point it at the mock, one non-interactive turn, a command that
//! starts no session, and what it has (tools through the mock, hooks, MCP).
//!
//! Per agent, in one sandbox and in order (each run builds on the one before):
//!
//! 1. `pas-agent run AGENT -- <turn>`: the exported session reaches the model, and no request
//!    carries it twice; the run records the agent's own session id, which the test finds in the
//!    agent's store itself; the words are the prompt as typed, the mock's answer, the model
//!    and tokens; a file the agent's write tool made is among the run's edits.
//! 2. `pas-agent run AGENT -- <no-session command>`: nothing is recorded, so nothing is
//!    offered to `--resume`.
//! 3. `pas-agent run AGENT --resume [--mcp] -- <turn>`: the model's next request holds the
//!    earlier turn; the run records the id it continued as (the same, or a fork's new one,
//!    found in the store) and only its new turn; a failing command the agent ran is recorded
//!    with its exit code; with `--mcp`, pas-agent's tools are offered to the model.
//! 4. Started directly, after `pas-agent integrate AGENT` and/or with `pas-agent mcp --config
//!    AGENT` saved where the agent reads it: the run is recorded from its hooks, the model gets
//!    the session from the start hook (the context file removed first), and pas-agent's tools
//!    are offered.
//!
//! Factory droid and Kilo install from x86_64 Linux packages only: elsewhere their rows say so
//! and pass.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common::{Sandbox, last_run, runs, walk};
use crate::launcher_support::isolated;
use crate::mock_model::{
    CHAT_MODEL, Mock, REPLY, RUN_COMMAND, RUN_MARK, WRITE_MARK, WRITTEN, codex_args, require_agent,
};

/// The task every session carries; the model must see it, once.
const TASK: &str = "Migrate the zebra-billing service to the new ledger";
/// The first prompt, and what a resumed request must still hold.
const FIRST: &str = "Say hello to the ledger";
/// The resumed run's prompt.
const SECOND: &str = "Next step please";
/// The prompt of the agent started directly.
const THIRD: &str = "Third question";
/// A name only pas-agent's MCP tools carry (`read_session`), in whatever form each agent
/// prefixes it.
const MCP_TOOL: &str = "read_session";

/// How a resumed run's session id relates to the one it resumed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Continues {
    /// The same id (the agent appends to the session).
    Same,
    /// A new id in the store (the agent resumes by forking, or aider's new chat).
    New,
}

/// One agent's row.
struct Row {
    /// What `pas-agent run` takes.
    name: &'static str,
    /// The agent id its runs record.
    id: &'static str,
    /// Its executable, and the package `.ci/run` installs it from.
    program: &'static str,
    package: &'static str,
    /// Its package exists for x86_64 Linux only.
    x86_64_only: bool,
    /// What the paths of its model requests contain.
    endpoint: &'static str,
    /// Points it at the mock (its settings, environment), auto-update and telemetry off.
    setup: fn(&mut Sandbox, &Mock),
    /// The arguments of one non-interactive turn with a prompt.
    turn: fn(&Sandbox, &Mock, &str) -> Vec<String>,
    /// A command line that starts no session.
    no_session: &'static [&'static str],
    /// Whether its tools write a file and run a command through the mock (its transcript then
    /// names them).
    writes: bool,
    /// Whether it edits files through text (aider's edit blocks, which the mock's reply then
    /// holds after [`REPLY`]) rather than through a tool and a second request.
    edits_in_text: bool,
    runs_commands: bool,
    /// How a resume continues.
    continues: Continues,
    /// Whether its store holds session `id` (the test's own look into the store).
    store_holds: fn(&Sandbox, &str) -> bool,
    /// The model its runs record, where the mock decides it.
    model: Option<&'static str>,
    /// Its hooks: `pas-agent integrate <key>`, and whether the start hook's context reaches
    /// the model (else the context file is what it reads).
    hooks: Option<(&'static str, bool)>,
    /// Other agents' hooks installed beside its own, which must record nothing for it.
    foreign_hooks: &'static [&'static str],
    /// Saves `pas-agent mcp --config AGENT`'s snippet where it reads it.
    mcp_config: Option<fn(&Sandbox, &str)>,
    /// `pas-agent run --mcp` works for it.
    run_mcp: bool,
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// A directory under the build's temporary directory shared by the tests: a cache the agents
/// fill once (Copilot unpacks its native code there on a first start, about five seconds).
fn shared_cache() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("agent-cache");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Whether any file under `dir` has a name for which `name` holds.
fn has_file(dir: &Path, name: impl Fn(&str) -> bool) -> bool {
    walk(dir)
        .iter()
        .any(|p| p.file_name().is_some_and(|n| name(&n.to_string_lossy())))
}

/// Whether `program session list --format json` (OpenCode, Kilo) lists `id`.
fn listed(sb: &Sandbox, program: &str, id: &str) -> bool {
    let out = isolated(sb, which::which(program).unwrap())
        .env("PWD", &sb.work)
        .args(["session", "list", "--format", "json"])
        .output()
        .unwrap();
    let list: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    list.as_array()
        .is_some_and(|l| l.iter().any(|s| s["id"] == id))
}

macro_rules! rows {
    ($($test:ident => $row:expr,)*) => {
        /// Every row, for the tests that look at the table as a whole.
        fn all_rows() -> Vec<Row> {
            vec![$($row),*]
        }
        $(
            #[test]
            fn $test() {
                conform(&$row);
            }
        )*
    };
}

rows! {
    claude_code => Row {
        name: "claude",
        id: "claude-code",
        program: "claude",
        package: "@anthropic-ai/claude-code",
        x86_64_only: false,
        endpoint: "/v1/messages",
        setup: |sb, mock| sb.env.extend(mock.claude_env("sk-ant-test")),
        turn: |_, _, p| strings(&["-p", p, "--permission-mode", "acceptEdits"]),
        no_session: &["mcp", "list"],
        writes: false,
        edits_in_text: false,
        runs_commands: false,
        continues: Continues::Same,
        store_holds: |sb, id| has_file(&sb.home.join(".claude/projects"), |n| n == format!("{id}.jsonl")),
        model: None,
        hooks: Some(("claude", true)),
        foreign_hooks: &[],
        mcp_config: Some(|sb, snippet| {
            sb.write(".mcp.json", snippet);
            // A project's .mcp.json needs the user's approval; this is it.
            sb.write(".claude/settings.local.json", r#"{"enabledMcpjsonServers":["pas-agent"]}"#);
        }),
        run_mcp: true,
    },
    codex => Row {
        name: "codex",
        id: "codex",
        program: "codex",
        package: "@openai/codex",
        x86_64_only: false,
        endpoint: "/v1/responses",
        setup: |sb, _| {
            // Codex reads a project's .codex/config.toml only in a trusted project.
            std::fs::create_dir_all(sb.home.join(".codex")).unwrap();
            std::fs::write(
                sb.home.join(".codex/config.toml"),
                format!("check_for_update_on_startup = false\n[projects.\"{}\"]\ntrust_level = \"trusted\"\n", sb.work.display()),
            )
            .unwrap();
            sb.env.push(("OPENAI_API_KEY".into(), "sk-test".into()));
        },
        turn: |_, mock, p| {
            let mut args = codex_args(&mock.base(), p);
            // Codex runs new hooks only once the user reviewed them (`/hooks`): the test
            // stands in for the review.
            args.insert(1, "--dangerously-bypass-hook-trust".into());
            args
        },
        no_session: &["mcp", "list"],
        writes: false,
        edits_in_text: false,
        runs_commands: false,
        continues: Continues::Same,
        store_holds: |sb, id| has_file(&sb.home.join(".codex/sessions"), |n| n.ends_with(&format!("-{id}.jsonl"))),
        model: Some("mock-model"),
        hooks: Some(("codex", true)),
        foreign_hooks: &[],
        mcp_config: None,
        run_mcp: true,
    },
    gemini_cli => Row {
        name: "gemini",
        id: "gemini-cli",
        program: "gemini",
        package: "@google/gemini-cli",
        x86_64_only: false,
        endpoint: "/v1beta/models/",
        setup: |sb, mock| mock.point_gemini_at_me(sb),
        // An explicit model skips the model router's extra classification calls.
        turn: |_, _, p| strings(&["-m", "gemini-2.5-flash", "-p", p]),
        no_session: &["mcp", "list"],
        writes: false,
        edits_in_text: false,
        runs_commands: false,
        continues: Continues::Same,
        store_holds: |sb, id| has_file(&sb.home.join(".gemini/tmp"), |n| n.starts_with("session-") && n.contains(&id[..8])),
        model: Some("gemini-2.5-flash"),
        hooks: Some(("gemini", true)),
        foreign_hooks: &[],
        mcp_config: Some(|sb, snippet| sb.write(".gemini/settings.json", snippet)),
        run_mcp: false,
    },
    opencode => Row {
        name: "opencode",
        id: "opencode",
        program: "opencode",
        package: "opencode-ai",
        x86_64_only: false,
        endpoint: "/v1/responses",
        setup: |sb, mock| mock.point_opencode_at_me(sb),
        turn: |_, _, p| strings(&["run", p]),
        no_session: &["mcp", "list"],
        writes: false,
        edits_in_text: false,
        runs_commands: false,
        continues: Continues::Same,
        store_holds: |sb, id| listed(sb, "opencode", id),
        model: Some("gpt-4o"),
        hooks: None,
        foreign_hooks: &[],
        mcp_config: Some(|sb, snippet| sb.write("opencode.json", snippet)),
        run_mcp: false,
    },
    copilot => Row {
        name: "copilot",
        id: "copilot",
        program: "copilot",
        package: "@github/copilot",
        x86_64_only: false,
        endpoint: "/chat/completions",
        setup: |sb, mock| {
            sb.env.extend([
                ("COPILOT_OFFLINE".to_string(), "true".to_string()),
                ("COPILOT_PROVIDER_BASE_URL".to_string(), format!("{}/v1", mock.base())),
                ("COPILOT_PROVIDER_TYPE".to_string(), "openai".to_string()),
                ("COPILOT_MODEL".to_string(), CHAT_MODEL.to_string()),
                ("COPILOT_AUTO_UPDATE".to_string(), "false".to_string()),
                // The folder's hooks and .mcp.json run only in a trusted folder.
                ("COPILOT_ALLOW_ALL".to_string(), "true".to_string()),
                ("XDG_CACHE_HOME".to_string(), shared_cache().display().to_string()),
            ]);
        },
        turn: |_, _, p| strings(&["-p", p, "--allow-all-tools"]),
        no_session: &["mcp", "list"],
        writes: true,
        edits_in_text: false,
        runs_commands: true,
        continues: Continues::Same,
        store_holds: |sb, id| sb.home.join(".copilot/session-state").join(id).join("events.jsonl").is_file(),
        model: Some(CHAT_MODEL),
        hooks: Some(("copilot", true)),
        // Copilot also runs Claude Code's hooks: they must not record its session.
        foreign_hooks: &["claude"],
        mcp_config: Some(|sb, snippet| sb.write(".mcp.json", snippet)),
        run_mcp: true,
    },
    qwen_code => Row {
        name: "qwen",
        id: "qwen-code",
        program: "qwen",
        package: "@qwen-code/qwen-code",
        x86_64_only: false,
        endpoint: "/chat/completions",
        setup: |sb, mock| {
            std::fs::create_dir_all(sb.home.join(".qwen")).unwrap();
            std::fs::write(
                sb.home.join(".qwen/settings.json"),
                json!({"general": {"enableAutoUpdate": false}, "privacy": {"usageStatisticsEnabled": false},
                    "telemetry": {"enabled": false}, "security": {"auth": {"selectedType": "openai"}},
                    "model": {"name": CHAT_MODEL}}).to_string(),
            )
            .unwrap();
            let npm = sb.home.join("npm-prefix");
            sb.env.extend([
                ("OPENAI_API_KEY".to_string(), "sk-test".to_string()),
                ("OPENAI_BASE_URL".to_string(), format!("{}/v1", mock.base())),
                ("OPENAI_MODEL".to_string(), CHAT_MODEL.to_string()),
                // An update, were one ever attempted, goes to the sandbox.
                ("npm_config_prefix".to_string(), npm.display().to_string()),
            ]);
        },
        turn: |_, _, p| strings(&["--yolo", p]),
        no_session: &["mcp", "list"],
        writes: true,
        edits_in_text: false,
        runs_commands: true,
        continues: Continues::Same,
        store_holds: |sb, id| has_file(&sb.home.join(".qwen/projects"), |n| n == format!("{id}.jsonl")),
        model: Some(CHAT_MODEL),
        // Its SessionStart and SessionEnd fire only interactively: tests/e2e/conformance.rs
        // `qwen_code_started_interactively_is_recorded`.
        hooks: None,
        foreign_hooks: &[],
        mcp_config: Some(|sb, snippet| sb.write(".qwen/settings.json", snippet)),
        run_mcp: true,
    },
    factory_droid => Row {
        name: "droid",
        id: "droid",
        program: "droid",
        package: "@factory/cli-linux-x64",
        x86_64_only: true,
        endpoint: "/chat/completions",
        setup: |sb, mock| {
            std::fs::create_dir_all(sb.home.join(".factory")).unwrap();
            // Not named like an OpenAI model: droid then adds a notice to the conversation.
            std::fs::write(
                sb.home.join(".factory/settings.json"),
                json!({"customModels": [{"model": CHAT_MODEL, "baseUrl": format!("{}/v1", mock.base()), "apiKey": "x",
                    "provider": "generic-chat-completion-api", "maxOutputTokens": 4096}],
                    "autoUpdateEnabled": false, "cloudSessionSync": false}).to_string(),
            )
            .unwrap();
            // No calls to Factory's service (and no login for the interactive mode).
            sb.env.push(("FACTORY_AIRGAP_ENABLED".into(), "true".into()));
        },
        turn: |_, _, p| strings(&["exec", "-m", "custom:mock-model", "--auto", "medium", p]),
        no_session: &["mcp", "list"],
        writes: true,
        edits_in_text: false,
        runs_commands: true,
        continues: Continues::New,
        store_holds: |sb, id| has_file(&sb.home.join(".factory/sessions"), |n| n == format!("{id}.jsonl")),
        model: Some("custom:mock-model-0"),
        hooks: Some(("droid", true)),
        foreign_hooks: &[],
        mcp_config: Some(|sb, snippet| sb.write(".factory/mcp.json", snippet)),
        run_mcp: false,
    },
    pi => Row {
        name: "pi",
        id: "pi",
        program: "pi",
        package: "@mariozechner/pi-coding-agent",
        x86_64_only: false,
        endpoint: "/chat/completions",
        setup: |sb, mock| {
            let dir = sb.home.join(".pi/agent");
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(
                dir.join("models.json"),
                json!({"providers": {"mock": {"baseUrl": format!("{}/v1", mock.base()), "api": "openai-completions",
                    "apiKey": "sk-test", "compat": {"supportsDeveloperRole": false, "supportsReasoningEffort": false},
                    "models": [{"id": CHAT_MODEL}]}}}).to_string(),
            )
            .unwrap();
            std::fs::write(
                dir.join("settings.json"),
                json!({"defaultProvider": "mock", "defaultModel": CHAT_MODEL, "enableInstallTelemetry": false}).to_string(),
            )
            .unwrap();
            sb.env.extend([
                ("PI_OFFLINE".to_string(), "1".to_string()),
                ("PI_TELEMETRY".to_string(), "0".to_string()),
            ]);
        },
        turn: |_, _, p| strings(&["-p", p]),
        no_session: &["list"],
        writes: true,
        edits_in_text: false,
        runs_commands: true,
        continues: Continues::Same,
        store_holds: |sb, id| has_file(&sb.home.join(".pi/agent/sessions"), |n| n.ends_with(&format!("_{id}.jsonl"))),
        model: Some(CHAT_MODEL),
        hooks: Some(("pi", true)),
        foreign_hooks: &[],
        mcp_config: None,
        run_mcp: false,
    },
    kilo => Row {
        name: "kilo",
        id: "kilo",
        program: "kilo",
        package: "@kilocode/cli-linux-x64",
        x86_64_only: true,
        endpoint: "/chat/completions",
        setup: |sb, mock| {
            let config = sb.home.join(".config/kilo");
            std::fs::create_dir_all(&config).unwrap();
            std::fs::write(
                config.join("kilo.json"),
                json!({"$schema": "https://app.kilo.ai/config.json", "autoupdate": false, "share": "disabled",
                    "model": "mock/mock-model", "small_model": "mock/mock-model",
                    "provider": {"mock": {"npm": "@ai-sdk/openai-compatible", "name": "Mock",
                        "options": {"baseURL": format!("{}/v1", mock.base()), "apiKey": "x"},
                        "models": {CHAT_MODEL: {"name": "Mock Model", "tool_call": true}}}},
                    "permission": {"bash": "allow", "edit": "allow"}, "enabled_providers": ["mock"]}).to_string(),
            )
            .unwrap();
            for var in ["KILO_DISABLE_AUTOUPDATE", "KILO_DISABLE_MODELS_FETCH", "KILO_DISABLE_SESSION_INGEST",
                "KILO_DISABLE_SHARE", "KILO_DISABLE_PRESENCE", "KILO_NO_DAEMON", "KILO_DISABLE_LSP_DOWNLOAD",
                "KILO_DISABLE_CODEBASE_INDEXING"] {
                sb.env.push((var.into(), "1".into()));
            }
            sb.env.push(("KILO_TELEMETRY_LEVEL".into(), "off".into()));
        },
        turn: |_, _, p| strings(&["run", p]),
        no_session: &["mcp", "list"],
        writes: true,
        edits_in_text: false,
        runs_commands: true,
        continues: Continues::Same,
        store_holds: |sb, id| listed(sb, "kilo", id),
        model: Some(CHAT_MODEL),
        hooks: None,
        foreign_hooks: &[],
        mcp_config: Some(|sb, snippet| sb.write("kilo.json", snippet)),
        run_mcp: false,
    },
    continue_cli => Row {
        name: "cn",
        id: "continue-cli",
        program: "cn",
        package: "@continuedev/cli",
        x86_64_only: false,
        endpoint: "/chat/completions",
        setup: |sb, mock| {
            std::fs::write(sb.home.join("cn.yaml"), cn_config(mock)).unwrap();
        },
        turn: |sb, _, p| {
            let config = sb.home.join("cn.yaml").display().to_string();
            strings(&["--config", &config, "--auto", "-p", p])
        },
        no_session: &["ls", "--json"],
        writes: true,
        edits_in_text: false,
        runs_commands: true,
        continues: Continues::New,
        store_holds: |sb, id| sb.home.join(".continue/sessions").join(format!("{id}.json")).is_file(),
        model: Some(CHAT_MODEL),
        hooks: None,
        foreign_hooks: &[],
        mcp_config: Some(|sb, snippet| {
            let config = sb.home.join("cn.yaml");
            let mut text = std::fs::read_to_string(&config).unwrap();
            text.push_str(snippet);
            std::fs::write(config, text).unwrap();
        }),
        run_mcp: false,
    },
    aider => Row {
        name: "aider",
        id: "aider",
        program: "aider",
        package: "aider-chat (PyPI)",
        x86_64_only: false,
        endpoint: "/chat/completions",
        setup: |sb, mock| {
            sb.env.extend([
                ("OPENAI_API_BASE".to_string(), format!("{}/v1", mock.base())),
                ("OPENAI_API_KEY".to_string(), "sk-test".to_string()),
                ("AIDER_CHECK_UPDATE".to_string(), "false".to_string()),
                ("AIDER_ANALYTICS_DISABLE".to_string(), "true".to_string()),
                // litellm's price list comes with it: no fetch from GitHub.
                ("LITELLM_LOCAL_MODEL_COST_MAP".to_string(), "True".to_string()),
            ]);
        },
        turn: |_, _, p| strings(&["--model", "openai/mock-model", "--edit-format", "diff", "--yes-always",
            "--no-gitignore", "--no-auto-commits", "--no-show-release-notes", "--no-show-model-warnings",
            "--message", p]),
        no_session: &["--version"],
        writes: true,
        edits_in_text: true,
        runs_commands: false,
        continues: Continues::New,
        store_holds: |sb, id| {
            let heading = format!("# aider chat started at {}-{}-{} {}:{}:{}",
                &id[0..4], &id[4..6], &id[6..8], &id[9..11], &id[11..13], &id[13..15]);
            std::fs::read_to_string(sb.path(".aider.chat.history.md")).is_ok_and(|h| h.contains(&heading))
        },
        model: Some("openai/mock-model"),
        hooks: None,
        foreign_hooks: &[],
        mcp_config: None,
        run_mcp: false,
    },
}

/// The Continue CLI's configuration: the mock as its one model.
fn cn_config(mock: &Mock) -> String {
    format!(
        "name: mock\nversion: 0.0.1\nschema: v1\nmodels:\n  - name: mock\n    provider: openai\n    model: {CHAT_MODEL}\n    apiBase: {}/v1\n    apiKey: sk-test\n    roles: [chat, edit, apply]\n",
        mock.base()
    )
}

fn transcript(run: &Value) -> &Value {
    &run["transcript"]
}

fn prompts(run: &Value) -> Vec<String> {
    transcript(run)["prompts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p.as_str().map(str::to_string))
        .collect()
}

/// The model requests received since request number `from`.
fn requests_since(mock: &Mock, row: &Row, from: usize) -> Vec<String> {
    mock.requests()[from..]
        .iter()
        .filter(|r| r.path.contains(row.endpoint))
        .map(|r| r.body.clone())
        .collect()
}

/// The session reached the model, and no request carried it twice.
fn assert_task_once(row: &Row, bodies: &[String]) {
    assert!(
        bodies.iter().any(|b| b.contains(TASK)),
        "{}: no request carried the exported task",
        row.name
    );
    for b in bodies {
        assert!(
            b.matches(TASK).count() <= 1,
            "{}: a request carried the task {} times",
            row.name,
            b.matches(TASK).count()
        );
    }
}

/// The names of the tools a request offers (for failure messages).
fn tool_names(body: &str) -> Vec<String> {
    let v: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    v["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| {
            t["name"]
                .as_str()
                .or_else(|| t["function"]["name"].as_str())
                .map(str::to_string)
        })
        .collect()
}

fn run_agent(sb: &Sandbox, args: &[String]) -> Value {
    sb.ok(args);
    last_run(sb)
}

/// The scenarios, in order, for one agent. (A row that cannot run on this machine says so on
/// stderr, in the test's own output.)
#[allow(clippy::disallowed_macros)]
fn conform(row: &Row) {
    if row.x86_64_only && std::env::consts::ARCH != "x86_64" {
        eprintln!(
            "{}: its package ({}) exists for x86_64 Linux only; not run on {}",
            row.name,
            row.package,
            std::env::consts::ARCH
        );
        return;
    }
    require_agent(row.program, row.package);
    let mut sb = Sandbox::repo();
    sb.ok(&["init", "--task", TASK]);
    std::os::unix::fs::symlink(crate::common::bin(), sb.bin_dir.join("pas-agent")).unwrap();
    let mock = Mock::start();
    (row.setup)(&mut sb, &mock);
    let base = |extra: &[&str]| -> Vec<String> {
        let mut v = strings(&["run", row.name]);
        v.extend(strings(extra));
        v.push("--".into());
        v
    };

    // 1. A run: export, id, store, words, edits.
    let target = "pas-written.txt";
    let first = if row.writes {
        format!("{FIRST} {WRITE_MARK} {}", sb.path(target).display())
    } else {
        FIRST.to_string()
    };
    let first = if row.id == "aider" && row.writes {
        // aider's edit blocks name files from the repository's top.
        format!("{FIRST} {WRITE_MARK} {target}")
    } else {
        first
    };
    let mut args = base(&[]);
    args.extend((row.turn)(&sb, &mock, &first));
    let run = run_agent(&sb, &args);
    assert_eq!(run["agent"], row.id, "{run:#}");
    assert_eq!(run["exit_code"], 0, "{run:#}");
    assert_task_once(row, &requests_since(&mock, row, 0));
    let id = run["agent_session_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{}: no session id recorded: {run:#}", row.name))
        .to_string();
    assert!(
        (row.store_holds)(&sb, &id),
        "{}: its store does not hold session {id}",
        row.name
    );
    assert_eq!(prompts(&run), [first.as_str()], "{run:#}");
    let answer = transcript(&run)["last_answer"].as_str().unwrap_or_default();
    if row.edits_in_text && row.writes {
        assert!(answer.starts_with(REPLY), "{run:#}");
    } else {
        assert_eq!(answer, REPLY, "{run:#}");
    }
    match row.model {
        Some(m) => assert_eq!(transcript(&run)["model"], m, "{run:#}"),
        None => assert!(transcript(&run)["model"].is_string(), "{run:#}"),
    }
    assert!(transcript(&run)["tokens"].is_object(), "{run:#}");
    if row.writes {
        assert_eq!(
            sb.read(target),
            WRITTEN,
            "{}: the file was written",
            row.name
        );
        let edits = transcript(&run)["edits"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert!(
            edits
                .iter()
                .any(|e| e.as_str().is_some_and(|e| e.ends_with(target))),
            "{}: the write is among the edits: {run:#}",
            row.name
        );
    }

    // 2. A command that starts no session: nothing recorded.
    let before = runs(&sb).len();
    let mut args = base(&[]);
    args.extend(strings(row.no_session));
    let out = sb.run(&args);
    assert!(
        out.status.code().is_some(),
        "{}: {:?} ran",
        row.name,
        row.no_session
    );
    assert_eq!(
        runs(&sb).len(),
        before,
        "{}: {:?} starts no session and is not recorded",
        row.name,
        row.no_session
    );

    // 3. Resume: the earlier turn is in the next request; only the new turn is recorded.
    let from = mock.requests().len();
    let second = if row.runs_commands {
        format!("{SECOND} {RUN_MARK}")
    } else {
        SECOND.to_string()
    };
    let mut args = base(if row.run_mcp {
        &["--resume", "--mcp"]
    } else {
        &["--resume"]
    });
    args.extend((row.turn)(&sb, &mock, &second));
    let resumed = run_agent(&sb, &args);
    assert_eq!(resumed["exit_code"], 0, "{resumed:#}");
    let later = requests_since(&mock, row, from);
    assert!(
        later
            .iter()
            .any(|b| b.contains(FIRST) && b.contains(SECOND)),
        "{}: the resumed request holds the earlier turn",
        row.name
    );
    let now = resumed["agent_session_id"].as_str().unwrap_or_default();
    match row.continues {
        Continues::Same => assert_eq!(now, id, "{resumed:#}"),
        Continues::New => {
            assert!(!now.is_empty() && now != id, "{resumed:#}");
            assert!(
                (row.store_holds)(&sb, now),
                "{}: {now} in the store",
                row.name
            );
        }
    }
    assert_eq!(prompts(&resumed), [second.as_str()], "{resumed:#}");
    assert_eq!(transcript(&resumed)["last_answer"], REPLY, "{resumed:#}");
    if row.runs_commands {
        let commands = transcript(&resumed)["commands"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert!(
            commands
                .iter()
                .any(|c| c["command"] == RUN_COMMAND && c["exit_code"] == 2),
            "{}: the command and its exit code: {resumed:#}",
            row.name
        );
    }
    if row.run_mcp {
        assert!(
            later.iter().any(|b| b.contains(MCP_TOOL)),
            "{}: run --mcp offered pas-agent's tools",
            row.name
        );
    }

    // 4. Started directly: recorded by its hooks, the session from the start hook, MCP.
    if row.hooks.is_none() && row.mcp_config.is_none() {
        return;
    }
    if let Some(save) = row.mcp_config {
        let snippet = sb.ok(&["mcp", "--config", row.name]);
        save(&sb, &snippet);
    }
    if let Some((key, true)) = row.hooks {
        // Only the hook can give the model the session now.
        sb.ok(&["export", "--to", row.name, "--remove"]);
        let _ = key;
    }
    if let Some((key, _)) = row.hooks {
        for other in row.foreign_hooks.iter().chain([&key]) {
            sb.ok(&["integrate", other]);
        }
    }
    let before = runs(&sb).len();
    // An agent that connects its MCP servers in the background (droid) may ask its model
    // before a server slow to start (a debug build on a loaded machine) has answered: such a
    // turn is taken again, at most twice, and each is a run of its own.
    let mut attempts = 0;
    let later = loop {
        attempts += 1;
        let from = mock.requests().len();
        // As a shell would start it: PWD is the directory it starts in (Kilo goes by PWD).
        let out = isolated(&sb, which::which(row.program).unwrap())
            .env("PWD", &sb.work)
            .args((row.turn)(&sb, &mock, THIRD))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{} failed\n{}\n{}",
            row.program,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let later = requests_since(&mock, row, from);
        if row.mcp_config.is_none() || later.iter().any(|b| b.contains(MCP_TOOL)) {
            break later;
        }
        assert!(
            attempts < 3,
            "{}: the saved `mcp --config` snippet offered pas-agent's tools; the tools offered: {:?}\n{}",
            row.name,
            later.iter().map(|b| tool_names(b)).collect::<Vec<_>>(),
            String::from_utf8_lossy(&out.stderr)
        );
        if row.hooks.is_some() {
            crate::integrate::settled(&sb);
        }
    };
    let Some((key, _)) = row.hooks else {
        assert_eq!(runs(&sb).len(), before);
        return;
    };
    assert_task_once(row, &later);
    // The session-end hook only marks the end; a detached completion records the run.
    crate::integrate::settled(&sb);
    let all = runs(&sb);
    assert_eq!(
        all.len(),
        before + attempts,
        "{}: one run recorded for each start: {all:#?}",
        row.name
    );
    let direct = all.last().unwrap();
    assert_eq!(direct["agent"], row.id, "{direct:#}");
    assert_eq!(direct["recorded_by"], format!("{key} hooks"), "{direct:#}");
    let hooked = direct["agent_session_id"].as_str().unwrap_or_default();
    assert!((row.store_holds)(&sb, hooked), "{direct:#}");
    assert_eq!(prompts(direct), [THIRD], "{direct:#}");
    assert_eq!(transcript(direct)["last_answer"], REPLY, "{direct:#}");
}

/// Every agent that `pas-agent run` launches has a row here, but for those that cannot run here
/// (docs/agents.md, "Agents that cannot run here"): the agents come from the binary itself,
/// the executables its shell hooks wrap.
#[test]
fn every_agent_that_run_launches_has_a_row_or_a_reason() {
    let out = Sandbox::plain().run(&["hook", "bash"]);
    let script = String::from_utf8_lossy(&out.stdout).into_owned();
    let wrapped: Vec<String> = script
        .lines()
        .filter_map(|l| l.trim().strip_prefix("if __pas_agent_may_wrap "))
        .filter_map(|l| l.split(';').next())
        .map(str::to_string)
        .collect();
    assert!(wrapped.len() > 10, "{script}");
    let rows: Vec<&str> = all_rows().iter().map(|r| r.program).collect();
    let cannot_run = ["cursor-agent", "kiro-cli", "agy", "amp", "goose"];
    for program in &wrapped {
        assert!(
            rows.contains(&program.as_str()) || cannot_run.contains(&program.as_str()),
            "{program} has no conformance row"
        );
    }
}

/// Qwen Code fires its `SessionStart` and `SessionEnd` hooks only in its interactive mode, and
/// drops what a start hook prints: started in a terminal after `pas-agent integrate qwen`, one
/// prompt and `/quit`, it is recorded from its hooks, and the session reached it through
/// QWEN.md.
#[test]
fn qwen_code_started_interactively_is_recorded_from_its_hooks() {
    let row = all_rows()
        .into_iter()
        .find(|r| r.id == "qwen-code")
        .expect("Qwen Code's row");
    require_agent(row.program, row.package);
    let mut sb = Sandbox::repo();
    sb.ok(&["init", "--task", TASK]);
    std::os::unix::fs::symlink(crate::common::bin(), sb.bin_dir.join("pas-agent")).unwrap();
    let mock = Mock::start();
    (row.setup)(&mut sb, &mock);
    sb.ok(&["export", "--to", "qwen"]);
    sb.ok(&["integrate", "qwen"]);
    let t = crate::launcher_support::Tmux::start_shell(&sb, "qwen", 150, 45);
    t.wait_screen("Type your message");
    // Keys typed in one burst are taken as a paste, Enter included: the text first, then
    // Enter once it is shown.
    t.keys(&[THIRD]);
    t.wait_screen(&format!("> {THIRD}"));
    std::thread::sleep(std::time::Duration::from_millis(500));
    t.keys(&["Enter"]);
    t.wait_screen(REPLY);
    t.keys(&["/quit"]);
    t.wait_screen("> /quit");
    std::thread::sleep(std::time::Duration::from_millis(500));
    t.keys(&["Enter"]);
    assert_eq!(t.exit_code_only(), 0);
    assert_task_once(&row, &requests_since(&mock, &row, 0));
    // The session-end hook only marks the end; a detached completion records the run.
    crate::integrate::settled(&sb);
    let all = runs(&sb);
    assert_eq!(all.len(), 1, "{all:#?}");
    let run = &all[0];
    assert_eq!(run["agent"], "qwen-code", "{run:#}");
    assert_eq!(run["recorded_by"], "qwen hooks", "{run:#}");
    let id = run["agent_session_id"].as_str().unwrap_or_default();
    assert!((row.store_holds)(&sb, id), "{run:#}");
    assert_eq!(prompts(run), [THIRD], "{run:#}");
    assert_eq!(transcript(run)["last_answer"], REPLY, "{run:#}");
}
