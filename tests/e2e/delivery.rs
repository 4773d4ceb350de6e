//! How the session reaches each agent at startup (docs/commands.md, "Where the block goes"):
//! the model's request holds the session exactly once, whichever files are present, through
//! `run`, `export` and the start hook; tracked context files stay as git has them; `export
//! --remove` gives back the bytes; a name that differs in case only is never created beside
//! another.
//!
//! The helpers at the top ([`Cli`], [`CLIS`], [`times_received`], [`assert_received_once`])
//! are for any suite that runs the real agents against the mock model: a new agent is a
//! [`Cli`] row.

#![allow(dead_code)]

use std::process::Output;

use crate::common::{Sandbox, last_run, stderr, stdout};
use crate::hooks::isolated;
use crate::mock_model::{Mock, codex_args, require_agent};

/// The task of every session here: what the model must receive once.
pub const TASK: &str = "Reconcile the quokka ledger with the bank feed";

/// One agent CLI as the tests start it against the mock model.
#[derive(Clone, Copy)]
pub struct Cli {
    /// The name `pas-agent run` and `export --to` take.
    pub name: &'static str,
    /// Its executable.
    pub program: &'static str,
    /// The npm package that installs it (for the message when it is missing).
    pub package: &'static str,
    /// The file it reads at startup that `export` writes.
    pub context_file: &'static str,
    /// The part of the model API's path its requests go to.
    pub endpoint: &'static str,
    /// The word `pas-agent integrate` takes, when it has lifecycle hooks.
    pub hooks: Option<&'static str>,
    /// Points the agent in the sandbox at the mock: environment, user configuration.
    pub setup: fn(&mut Sandbox, &Mock),
    /// Its arguments for one non-interactive turn with the prompt; `hooks` adds what running
    /// pas-agent's hooks needs without a person to approve them.
    pub args: fn(&Mock, &str, bool) -> Vec<String>,
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| a.to_string()).collect()
}

pub const CLAUDE: Cli = Cli {
    name: "claude",
    program: "claude",
    package: "@anthropic-ai/claude-code",
    context_file: "CLAUDE.md",
    endpoint: "/v1/messages",
    hooks: Some("claude"),
    setup: |sb, mock| sb.env.extend(mock.claude_env("sk-ant-test")),
    args: |_, prompt, _| strings(&["-p", prompt]),
};

pub const CODEX: Cli = Cli {
    name: "codex",
    program: "codex",
    package: "@openai/codex",
    context_file: "AGENTS.md",
    endpoint: "/v1/responses",
    hooks: Some("codex"),
    // Codex reads a project's `.codex/config.toml` only in a trusted project: the user's
    // config trusts the work directory.
    setup: |sb, _| {
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
    },
    // Codex runs hooks only once a person reviewed them (`/hooks`); the flag stands in.
    args: |mock, prompt, hooks| {
        let mut args = codex_args(&mock.base(), prompt);
        if hooks {
            args.insert(1, "--dangerously-bypass-hook-trust".into());
        }
        args
    },
};

pub const GEMINI: Cli = Cli {
    name: "gemini",
    program: "gemini",
    package: "@google/gemini-cli",
    context_file: "GEMINI.md",
    endpoint: "/v1beta/models/",
    hooks: Some("gemini"),
    setup: |sb, mock| mock.point_gemini_at_me(sb),
    // An explicit model skips the model router's extra classification calls.
    args: |_, prompt, _| strings(&["-m", "gemini-2.5-flash", "-p", prompt]),
};

pub const OPENCODE: Cli = Cli {
    name: "opencode",
    program: "opencode",
    package: "opencode-ai",
    context_file: "AGENTS.md",
    endpoint: "/v1/responses",
    hooks: None,
    setup: |sb, mock| mock.point_opencode_at_me(sb),
    args: |_, prompt, _| strings(&["run", prompt]),
};

/// The agents whose delivery is proven here with the real CLIs.
pub const CLIS: &[Cli] = &[CLAUDE, CODEX, GEMINI, OPENCODE];

impl Cli {
    /// A sandbox with a repository, a session whose task is [`TASK`], and the agent pointed at
    /// a new mock.
    pub fn ready(&self) -> (Sandbox, Mock) {
        require_agent(self.program, self.package);
        let mut sb = Sandbox::repo();
        sb.ok(&["init", "--task", TASK]);
        let mock = Mock::start();
        (self.setup)(&mut sb, &mock);
        (sb, mock)
    }

    /// `pas-agent run <agent> -- <one turn with prompt>`, which must succeed.
    pub fn run(&self, sb: &Sandbox, mock: &Mock, prompt: &str, hooks: bool) -> Output {
        let mut args = strings(&["run", self.name, "--"]);
        args.extend((self.args)(mock, prompt, hooks));
        let out = sb.run(&args);
        assert!(
            out.status.success(),
            "run {}:\n{}\n{}",
            self.name,
            stdout(&out),
            stderr(&out)
        );
        out
    }

    /// The agent started directly, as from a plain shell, which must succeed.
    pub fn direct(&self, sb: &Sandbox, mock: &Mock, prompt: &str, hooks: bool) -> Output {
        let exe = which::which(self.program).expect("agent installed");
        let out = isolated(sb, &exe)
            .args((self.args)(mock, prompt, hooks))
            .output()
            .expect("run the agent");
        assert!(
            out.status.success(),
            "{}:\n{}\n{}",
            self.program,
            stdout(&out),
            stderr(&out)
        );
        out
    }
}

/// How many times `marker` is in each request to `endpoint` that carries `prompt` (the
/// agent's turn; a request that does not carry it, a title or a classification, is not one).
pub fn times_received(mock: &Mock, endpoint: &str, prompt: &str, marker: &str) -> Vec<usize> {
    mock.model_requests(endpoint)
        .iter()
        .filter(|r| r.body.contains(prompt))
        .map(|r| r.body.matches(marker).count())
        .collect()
}

/// The model received `marker` (the session's task) exactly once: some request of the turn
/// carries it once, and none carries it more often.
pub fn assert_received_once(mock: &Mock, endpoint: &str, prompt: &str, marker: &str) {
    let times = times_received(mock, endpoint, prompt, marker);
    assert!(
        times.contains(&1) && times.iter().all(|&n| n <= 1),
        "the session reached the model {times:?} times in the requests of the turn `{prompt}` (once expected)"
    );
}

/// `git status`, untracked files listed one by one.
pub fn git_status(sb: &Sandbox) -> String {
    sb.git(&["status", "--porcelain", "--untracked-files=all"])
}

/// Commits `files` (written with `text`) as the project's own.
fn commit(sb: &Sandbox, files: &[(&str, &str)]) {
    for (f, text) in files {
        sb.write(f, text);
        sb.git(&["add", f]);
    }
    sb.git(&["commit", "-qm", "the project's own context files"]);
}

// ---- The real agents: the session once ----

#[test]
fn every_agent_receives_the_session_once_through_run() {
    for cli in CLIS {
        let (sb, mock) = cli.ready();
        cli.run(&sb, &mock, "Say hello to the ledger", false);
        assert_received_once(&mock, cli.endpoint, "Say hello to the ledger", TASK);
        assert!(sb.read(cli.context_file).contains(TASK), "{}", cli.name);
    }
}

#[test]
fn a_tracked_context_file_stays_as_git_has_it_and_the_agent_still_receives_the_session_once() {
    for cli in [CLAUDE, CODEX, OPENCODE] {
        let (sb, mock) = cli.ready();
        let rules = "# Team rules\n\nRULE-WALRUS: always run the tests.\n";
        commit(&sb, &[(cli.context_file, rules)]);
        let before = git_status(&sb);
        let out = cli.run(&sb, &mock, "Say hello to the ledger", false);
        assert!(
            stderr(&out).contains(&format!("{} is tracked by git", cli.context_file)),
            "{}",
            stderr(&out)
        );
        assert_eq!(git_status(&sb), before, "{}: git status moved", cli.name);
        assert_eq!(sb.read(cli.context_file), rules, "{}", cli.name);
        assert_received_once(&mock, cli.endpoint, "Say hello to the ledger", TASK);
        // The team's rules reached the model too (Codex reads the copy instead of them).
        assert_received_once(
            &mock,
            cli.endpoint,
            "Say hello to the ledger",
            "RULE-WALRUS",
        );
        // Nothing of the run is left that an agent would read later, but a private file.
        assert!(!sb.path("AGENTS.override.md").exists(), "{}", cli.name);
        let run = last_run(&sb);
        assert!(
            crate::common::changed_paths(&run).is_empty(),
            "{}: {}",
            cli.name,
            run["files_changed"]
        );
    }
}

#[test]
fn gemini_with_a_tracked_gemini_md_gets_the_session_from_its_hook_or_is_told_it_does_not() {
    let cli = GEMINI;
    let (sb, mock) = cli.ready();
    commit(&sb, &[("GEMINI.md", "# Team rules\n")]);
    let before = git_status(&sb);
    let out = cli.run(&sb, &mock, "Say hello to the ledger", false);
    let err = stderr(&out);
    assert!(
        err.contains("GEMINI.md is tracked by git")
            && err.contains("starts without the session")
            && err.contains("pas-agent integrate gemini"),
        "{err}"
    );
    assert_eq!(git_status(&sb), before);
    assert_eq!(
        times_received(&mock, cli.endpoint, "Say hello to the ledger", TASK),
        [0]
    );
    // With pas-agent's hooks, the start hook gives it, inside the run as well.
    sb.ok(&["integrate", "gemini"]);
    let before = git_status(&sb);
    let out = cli.run(&sb, &mock, "Next step please", true);
    assert!(
        stderr(&out).contains("gets it from pas-agent's SessionStart hook"),
        "{}",
        stderr(&out)
    );
    assert_eq!(git_status(&sb), before);
    assert_eq!(sb.read("GEMINI.md"), "# Team rules\n");
    assert_received_once(&mock, cli.endpoint, "Next step please", TASK);
}

#[test]
fn with_the_hooks_and_a_current_block_the_model_gets_the_session_once() {
    for cli in [CLAUDE, CODEX, GEMINI] {
        let (sb, mock) = cli.ready();
        sb.ok(&["integrate", cli.hooks.unwrap()]);
        // Started directly with a current block: the file gives it, the hook does not.
        sb.ok(&["export", "--to", cli.name]);
        cli.direct(&sb, &mock, "Say hello to the ledger", true);
        assert_received_once(&mock, cli.endpoint, "Say hello to the ledger", TASK);
        // No block: the hook gives it.
        sb.ok(&["export", "--to", cli.name, "--remove"]);
        cli.direct(&sb, &mock, "Next step please", true);
        assert_received_once(&mock, cli.endpoint, "Next step please", TASK);
        // Through `run`: the launcher's export, and no hook context.
        cli.run(&sb, &mock, "One more thing", true);
        assert_received_once(&mock, cli.endpoint, "One more thing", TASK);
    }
}

#[test]
fn with_the_hooks_a_tracked_context_file_stays_clean_and_the_hook_gives_the_session() {
    for cli in [CLAUDE, CODEX, GEMINI] {
        let (sb, mock) = cli.ready();
        commit(&sb, &[(cli.context_file, "# Team rules\n")]);
        sb.ok(&["integrate", cli.hooks.unwrap()]);
        let before = git_status(&sb);
        cli.direct(&sb, &mock, "Say hello to the ledger", true);
        assert_received_once(&mock, cli.endpoint, "Say hello to the ledger", TASK);
        assert_eq!(git_status(&sb), before, "{}", cli.name);
        assert_eq!(sb.read(cli.context_file), "# Team rules\n");
        // Through `run` as well: its private file, or (Gemini CLI) the hook, once.
        cli.run(&sb, &mock, "Next step please", true);
        assert_received_once(&mock, cli.endpoint, "Next step please", TASK);
        assert_eq!(git_status(&sb), before, "{}", cli.name);
    }
}

#[test]
fn a_tracked_override_of_the_users_is_never_replaced_by_a_copy() {
    let sb = Sandbox::with_session();
    commit(
        &sb,
        &[
            ("AGENTS.md", "# Rules\n"),
            ("AGENTS.override.md", "# Team override\n"),
        ],
    );
    sb.stand_in("codex", "exit 0");
    let before = git_status(&sb);
    let out = sb.run(&["run", "--no-pty", "codex"]);
    assert!(out.status.success());
    assert!(
        stderr(&out).contains("AGENTS.override.md is tracked by git"),
        "{}",
        stderr(&out)
    );
    assert_eq!(sb.read("AGENTS.override.md"), "# Team override\n");
    assert_eq!(git_status(&sb), before);
}

#[test]
fn claude_code_behind_an_import_bridge_receives_one_block() {
    let cli = CLAUDE;
    let (sb, mock) = cli.ready();
    // The common set-up: CLAUDE.md is a one-line bridge to AGENTS.md.
    sb.write("CLAUDE.md", "@AGENTS.md\n");
    sb.write("AGENTS.md", "# Rules\n");
    let out = sb.ok(&["export", "--all"]);
    assert!(
        out.contains("CLAUDE.md imports AGENTS.md")
            && out.contains("no second block was put into CLAUDE.md"),
        "{out}"
    );
    assert_eq!(sb.read("CLAUDE.md"), "@AGENTS.md\n");
    assert!(sb.read("AGENTS.md").contains(TASK));
    cli.run(&sb, &mock, "Say hello to the ledger", false);
    assert_eq!(sb.read("CLAUDE.md"), "@AGENTS.md\n");
    assert_received_once(&mock, cli.endpoint, "Say hello to the ledger", TASK);
    // A block CLAUDE.md got before it imported AGENTS.md goes when AGENTS.md gets one.
    sb.write(
        "CLAUDE.md",
        format!(
            "@AGENTS.md\n\n{}",
            stdout(&sb.run(&["export", "--to", "claude", "-o", "-"]))
        ),
    );
    let out = sb.ok(&["export", "--to", "codex"]);
    assert!(
        out.contains("Took the pas-agent block out of CLAUDE.md"),
        "{out}"
    );
    assert_eq!(sb.read("CLAUDE.md"), "@AGENTS.md\n\n");
    cli.run(&sb, &mock, "Next step please", false);
    assert_received_once(&mock, cli.endpoint, "Next step please", TASK);
}

// ---- Stand-ins: what each way writes and leaves ----

/// A stand-in for `name` that prints, at its start, each file given as `--read` and the
/// files `show` (relative to the work directory) as they are then.
fn stand_in_showing(sb: &Sandbox, name: &str, show: &[&str]) {
    let mut script = String::from(
        "while [ $# -gt 0 ]; do if [ \"$1\" = --read ]; then echo \"READ $2\"; cat \"$2\"; fi; shift; done\n\
         echo \"ENV ${OPENCODE_CONFIG_CONTENT:-}\"\n",
    );
    for f in show {
        script.push_str(&format!(
            "if [ -f '{f}' ]; then echo 'FILE {f}'; cat '{f}'; fi\n"
        ));
    }
    sb.stand_in(name, &script);
}

#[test]
fn run_puts_the_session_where_git_does_not_see_it_and_takes_away_what_was_for_one_run() {
    // Claude Code: CLAUDE.local.md, which git is told to ignore, and which stays.
    let sb = Sandbox::with_session();
    commit(&sb, &[("CLAUDE.md", "# Rules\n")]);
    stand_in_showing(&sb, "claude", &["CLAUDE.local.md"]);
    let before = git_status(&sb);
    let out = sb.ok(&["run", "--no-pty", "claude"]);
    assert!(
        out.contains("FILE CLAUDE.local.md") && out.contains("Build the thing"),
        "{out}"
    );
    assert_eq!(git_status(&sb), before);
    assert!(sb.read("CLAUDE.local.md").contains("Build the thing"));
    let exclude = std::fs::read_to_string(sb.path(".git/info/exclude")).unwrap();
    assert!(
        exclude.lines().any(|l| l == "/CLAUDE.local.md"),
        "{exclude}"
    );
    // The next run updates it there; the exclude line is not added twice.
    sb.ok(&["update", "--next", "the second step"]);
    sb.ok(&["run", "--no-pty", "claude"]);
    assert!(sb.read("CLAUDE.local.md").contains("the second step"));
    let exclude = std::fs::read_to_string(sb.path(".git/info/exclude")).unwrap();
    assert_eq!(exclude.matches("/CLAUDE.local.md").count(), 1);
    assert_eq!(git_status(&sb), before);

    // Codex: AGENTS.override.md, a copy of AGENTS.md with the block, for the run only.
    let sb = Sandbox::with_session();
    commit(&sb, &[("AGENTS.md", "# Rules\n\nRULE-WALRUS\n")]);
    stand_in_showing(&sb, "codex", &["AGENTS.override.md"]);
    let before = git_status(&sb);
    let out = sb.ok(&["run", "--no-pty", "codex"]);
    let copy = &out[out.find("FILE AGENTS.override.md").expect("the copy")..];
    assert!(
        copy.contains("RULE-WALRUS") && copy.contains("Build the thing"),
        "{out}"
    );
    assert!(!sb.path("AGENTS.override.md").exists());
    assert_eq!(git_status(&sb), before);
    assert_eq!(sb.read("AGENTS.md"), "# Rules\n\nRULE-WALRUS\n");
    // A copy a killed run left is made again from AGENTS.md as it is now, and goes.
    let left = format!(
        "{}\n# Old rules\n",
        "<!-- pas-agent: a copy of the context file with the session, for one run; git ignores it and the run deletes it -->"
    );
    sb.write("AGENTS.override.md", &left);
    let out = sb.ok(&["run", "--no-pty", "codex"]);
    assert!(
        out.contains("RULE-WALRUS") && !out.contains("Old rules"),
        "{out}"
    );
    assert!(!sb.path("AGENTS.override.md").exists());
    // The user's own override is Codex's file: the block goes there, and it stays.
    sb.write("AGENTS.override.md", "# My override\n");
    sb.ok(&["run", "--no-pty", "codex"]);
    let own = sb.read("AGENTS.override.md");
    assert!(
        own.starts_with("# My override\n") && own.contains("Build the thing"),
        "{own}"
    );

    // OpenCode: a file of the run's own, named in OPENCODE_CONFIG_CONTENT with what the
    // variable held.
    let mut sb = Sandbox::with_session();
    commit(&sb, &[("AGENTS.md", "# Rules\n")]);
    sb.env.push((
        "OPENCODE_CONFIG_CONTENT".into(),
        r#"{"instructions":["mine.md"],"share":"disabled"}"#.into(),
    ));
    sb.stand_in(
        "opencode",
        "echo \"ENV $OPENCODE_CONFIG_CONTENT\"; cat .pas-agent/runs/*/context.md",
    );
    let before = git_status(&sb);
    let out = sb.ok(&["run", "--no-pty", "opencode"]);
    assert!(
        out.contains(r#""instructions":["mine.md","#) && out.contains(r#""share":"disabled""#),
        "{out}"
    );
    assert!(out.contains("Build the thing"), "{out}");
    assert_eq!(git_status(&sb), before);
    assert!(
        crate::common::walk(&sb.path(".pas-agent/runs"))
            .iter()
            .all(|p| !p.ends_with("context.md")),
        "the run's own file is gone"
    );

    // Aider: `--read` names the run's own file.
    let sb = Sandbox::with_session();
    commit(&sb, &[("AGENTS.md", "# Rules\n")]);
    stand_in_showing(&sb, "aider", &[]);
    let before = git_status(&sb);
    let out = sb.ok(&["run", "--no-pty", "aider"]);
    assert!(
        out.contains("READ /") && out.contains("context.md"),
        "{out}"
    );
    assert!(out.contains("Build the thing"), "{out}");
    assert_eq!(git_status(&sb), before);
    assert_eq!(sb.read("AGENTS.md"), "# Rules\n");
}

#[test]
fn a_block_committed_on_purpose_is_kept_current_where_it_is() {
    let sb = Sandbox::with_session();
    sb.ok(&["export", "--to", "codex"]);
    sb.git(&["add", "AGENTS.md"]);
    sb.git(&["commit", "-qm", "the team shares the session"]);
    sb.stand_in("codex", "exit 0");
    sb.ok(&["update", "--next", "the shared next step"]);
    sb.ok(&["run", "--no-pty", "codex"]);
    assert!(sb.read("AGENTS.md").contains("the shared next step"));
    assert!(!sb.path("AGENTS.override.md").exists());
}

#[test]
fn explicit_export_writes_a_tracked_file_and_says_so() {
    let sb = Sandbox::with_session();
    commit(&sb, &[("AGENTS.md", "# Rules\n")]);
    let clean = git_status(&sb);
    let out = sb.ok(&["export", "--to", "codex"]);
    assert!(
        out.contains("AGENTS.md is tracked by git")
            && out.contains("--remove")
            && out.contains("AGENTS.override.md"),
        "{out}"
    );
    assert!(sb.read("AGENTS.md").contains("Build the thing"));
    // And takes it out again with nothing left over: git sees no change.
    sb.ok(&["export", "--to", "codex", "--remove"]);
    assert_eq!(git_status(&sb), clean);
    assert_eq!(sb.read("AGENTS.md"), "# Rules\n");
}

#[test]
fn export_then_remove_gives_back_every_tracked_file_byte_for_byte() {
    let sb = Sandbox::with_session();
    let files: [(&str, &str); 4] = [
        ("CLAUDE.md", "# Rules\n\nBe careful.\n"),
        ("GEMINI.md", "no final newline"),
        ("AGENTS.md", "\u{feff}# CRLF rules\r\n\r\n"),
        ("QWEN.md", "# Ends with a blank line\n\n"),
    ];
    commit(&sb, &files);
    let clean = git_status(&sb);
    for agent in ["claude", "gemini", "codex", "qwen"] {
        sb.ok(&["export", "--to", agent]);
    }
    assert_ne!(git_status(&sb), clean);
    for agent in ["claude", "gemini", "codex", "qwen"] {
        sb.ok(&["export", "--to", agent, "--remove"]);
    }
    assert_eq!(git_status(&sb), clean);
    for (f, text) in files {
        assert_eq!(sb.read(f), text, "{f}");
    }
    // A file export created goes, and so do the directories it made for it.
    sb.ok(&["export", "--to", "windsurf"]);
    sb.ok(&["export", "--to", "copilot-instructions"]);
    sb.ok(&["export", "--to", "windsurf", "--remove"]);
    sb.ok(&["export", "--to", "copilot-instructions", "--remove"]);
    assert!(!sb.path(".windsurf").exists());
    assert!(!sb.path(".github").exists());
    assert_eq!(git_status(&sb), clean);
}

#[test]
fn a_name_that_differs_in_case_only_is_never_created_beside_another() {
    let sb = Sandbox::with_session();
    sb.write("agents.md", "# lower-case rules\n");
    if sb.path("AGENTS.md").exists() {
        return; // a file system that ignores case: they are one file
    }
    let err = sb.fails(&["export", "--to", "codex"], 6);
    assert!(
        err.contains("agents.md is there") && err.contains("git mv agents.md AGENTS.md"),
        "{err}"
    );
    assert!(!sb.path("AGENTS.md").exists());
    // `run` goes on without it, and says why.
    sb.stand_in("codex", "exit 0");
    let out = sb.run(&["run", "--no-pty", "codex"]);
    assert!(out.status.success());
    assert!(
        stderr(&out).contains("agents.md is there"),
        "{}",
        stderr(&out)
    );
    assert!(!sb.path("AGENTS.md").exists());
    // With both there already, export writes and warns.
    sb.write("Claude.md", "x\n");
    sb.write("CLAUDE.md", "y\n");
    let out = sb.run(&["export", "--to", "claude"]);
    assert!(out.status.success());
    assert!(
        stderr(&out).contains("Claude.md is beside CLAUDE.md"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn an_agent_that_reads_two_files_gets_the_block_in_one() {
    let sb = Sandbox::with_session();
    // Qwen Code reads QWEN.md and AGENTS.md: with AGENTS.md holding the block, that is where
    // it stays, and QWEN.md gets none.
    sb.ok(&["export", "--to", "codex"]);
    sb.write("QWEN.md", "# Qwen rules\n");
    let out = sb.ok(&["export", "--to", "qwen"]);
    assert!(
        out.contains("Updated the pas-agent block in AGENTS.md")
            && out.contains("Qwen Code reads AGENTS.md as well as QWEN.md"),
        "{out}"
    );
    assert_eq!(sb.read("QWEN.md"), "# Qwen rules\n");
    // A second block in QWEN.md is taken out, as Qwen Code reads the one in AGENTS.md.
    sb.ok(&["export", "--to", "qwen", "-o", "QWEN.md"]);
    let out = sb.ok(&["export", "--to", "codex"]);
    assert!(
        out.contains("Took the pas-agent block out of QWEN.md"),
        "{out}"
    );
    assert_eq!(sb.read("QWEN.md"), "# Qwen rules\n");
    // Copilot reads CLAUDE.md as well: Claude Code's only block is kept, and current, and
    // Copilot is said to receive the session twice.
    sb.ok(&["export", "--to", "claude"]);
    sb.ok(&["update", "--next", "a newer step"]);
    let out = sb.run(&["export", "--to", "copilot"]);
    let err = stderr(&out);
    assert!(
        err.contains("GitHub Copilot CLI reads pas-agent blocks in")
            && err.contains("the one in CLAUDE.md is the only one Claude Code reads"),
        "{err}"
    );
    assert!(sb.read("CLAUDE.md").contains("a newer step"));
}

#[test]
fn the_export_message_says_how_each_agent_reads_the_file() {
    let sb = Sandbox::with_session();
    let out = sb.ok(&["export", "--to", "aider"]);
    assert!(
        out.contains("Aider reads no file by itself")
            && out.contains("`pas-agent run aider` passes it `--read AGENTS.md`"),
        "{out}"
    );
    let out = sb.ok(&["export", "--to", "claude"]);
    assert!(
        out.contains("Claude Code reads CLAUDE.md from the project root when it starts."),
        "{out}"
    );
}

/// `pas-agent lifecycle <agent> session-start` with a payload, as the agent runs it.
fn session_start(sb: &Sandbox, agent: &str) -> String {
    let mut cmd = sb.cmd();
    cmd.args(["lifecycle", agent, "session-start"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(
            format!(
                r#"{{"session_id":"3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b","cwd":"{}"}}"#,
                sb.work.display()
            )
            .as_bytes(),
        )
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    stdout(&out)
}

#[test]
fn the_start_hook_gives_the_session_only_when_no_file_holds_a_current_block() {
    let sb = Sandbox::with_session();
    assert!(session_start(&sb, "claude").contains("Build the thing"));
    sb.ok(&["export", "--to", "claude"]);
    assert_eq!(session_start(&sb, "claude"), "");
    // Out of date: given again.
    sb.ok(&["update", "--next", "something new"]);
    assert!(session_start(&sb, "claude").contains("something new"));
    // A block Claude Code reads through an import counts; one it does not read does not.
    sb.ok(&["export", "--to", "claude", "--remove"]);
    sb.ok(&["export", "--to", "codex"]);
    assert!(session_start(&sb, "claude").contains("something new"));
    sb.write("CLAUDE.md", "@AGENTS.md\n");
    assert_eq!(session_start(&sb, "claude"), "");
}

#[test]
fn a_copy_a_killed_run_left_is_deleted_by_export_and_by_remove() {
    let sb = Sandbox::with_session();
    let left = "<!-- pas-agent: a copy of the context file with the session, for one run; git ignores it and the run deletes it -->\n# Old rules\n";
    sb.write("AGENTS.override.md", left);
    let out = sb.ok(&["export", "--to", "codex"]);
    assert!(
        out.contains("Deleted AGENTS.override.md, a copy of AGENTS.md"),
        "{out}"
    );
    assert!(!sb.path("AGENTS.override.md").exists());
    assert!(sb.read("AGENTS.md").contains("Build the thing"));
    sb.write("AGENTS.override.md", left);
    let out = sb.ok(&["export", "--to", "codex", "--remove"]);
    assert!(out.contains("Deleted AGENTS.override.md"), "{out}");
    assert!(!sb.path("AGENTS.override.md").exists());
    assert!(!sb.path("AGENTS.md").exists());
}

/// The next action of a session's block that went out of date.
const OLD_NEXT: &str = "Feed the aardvark";
/// The next action of the session now.
const NEW_NEXT: &str = "Brush the bison";

/// How many requests of the turn `prompt` hold `text`.
fn requests_holding(mock: &Mock, endpoint: &str, prompt: &str, text: &str) -> usize {
    times_received(mock, endpoint, prompt, text)
        .iter()
        .filter(|&&n| n > 0)
        .count()
}

#[test]
fn with_the_hooks_a_stale_block_never_reaches_the_model_beside_a_contradicting_one() {
    // Whether the agent has read its context file when its SessionStart hook runs: it then
    // has the stale block, and the hook says that its session supersedes it.
    for (cli, reads_first) in [(CLAUDE, true), (CODEX, true), (GEMINI, true)] {
        let (sb, mock) = cli.ready();
        sb.ok(&["update", "--next", OLD_NEXT]);
        sb.ok(&["export", "--to", cli.name]);
        sb.ok(&["integrate", cli.hooks.unwrap()]);
        sb.ok(&["update", "--next", NEW_NEXT]);
        let check = sb.run(&["export", "--to", cli.name, "--check"]);
        assert!(!check.status.success(), "{}: the block is stale", cli.name);
        let prompt = "Say hello to the ledger";
        cli.direct(&sb, &mock, prompt, true);
        let new = times_received(&mock, cli.endpoint, prompt, NEW_NEXT);
        // The current session reached the model; a request holding two sessions (the stale
        // file read before the hook, or the refreshed one read after it: Claude Code reads
        // either, the order is a race) holds the hook's note that its session supersedes the
        // block in the file.
        assert!(new.iter().any(|&n| n >= 1), "{}: {new:?}", cli.name);
        for r in mock
            .model_requests(cli.endpoint)
            .iter()
            .filter(|r| r.body.contains(prompt))
        {
            let n = r.body.matches(TASK).count();
            let noted = r.body.contains(&format!(
                "the pas-agent session block in {} was out of date when this session started",
                cli.context_file
            )) && r.body.contains("supersedes it");
            assert!(
                n == 1 || (n == 2 && noted),
                "{}: the session {n} times, note: {noted}",
                cli.name
            );
            assert!(
                !r.body.contains(OLD_NEXT) || noted,
                "{}: the stale block without the note",
                cli.name
            );
            if !reads_first {
                assert_eq!(n, 1, "{}", cli.name);
            }
        }
        // The file is brought up to date by the start hook, and again once the run this
        // session made is recorded (the block lists the last runs): the next start finds a
        // current block, and the hook adds nothing.
        let file = sb.read(cli.context_file);
        assert!(
            file.contains(NEW_NEXT) && !file.contains(OLD_NEXT),
            "{}: {file}",
            cli.name
        );
        crate::integrate::settled(&sb);
        let prompt = "Next step please";
        cli.direct(&sb, &mock, prompt, true);
        assert_eq!(requests_holding(&mock, cli.endpoint, prompt, OLD_NEXT), 0);
        for r in mock
            .model_requests(cli.endpoint)
            .iter()
            .filter(|r| r.body.contains(prompt))
        {
            let n = r.body.matches(TASK).count();
            assert_eq!(
                n, 1,
                "{}: the session {n} times at the next start",
                cli.name
            );
            assert!(!r.body.contains("supersedes it"), "{}", cli.name);
        }
    }
}
