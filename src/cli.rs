//! The command line: every command and flag, in one place (clap derive).

use std::ffi::OsString;
use std::path::PathBuf;

use clap::builder::PossibleValuesParser;
use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::model::ListKind;

/// Portable agent sessions: one record of a coding task that follows you from one AI coding
/// agent to the next.
#[derive(Debug, Parser)]
#[command(
    name = "pas-agent",
    version,
    about,
    long_about = "Portable agent sessions: one record of a coding task that follows you from one AI \
coding agent to the next.\n\nThe record lives in .pas-agent/session.json at the project root. \
`export` writes it into the file an agent reads at startup (CLAUDE.md, AGENTS.md, GEMINI.md), \
and `run` launches an agent with a checkpoint and export before and a record of what it did after.",
    after_help = "Start here:\n  pas-agent init --task \"Migrate auth to OAuth2\"\n  pas-agent update --remaining \"Token refresh\" --next \"Token refresh\"\n  pas-agent run codex            # checkpoint + export, run codex, record the run\n  pas-agent status\n\nExit codes: 0 ok, 1 error, 2 usage, 3 no session, 4 locked, 5 damaged or newer session file,\n6 context or settings file cannot be updated safely, 7 session unmerged (`pas-agent resolve`); `run` exits with the agent's own code.\n\nManual: `pas-agent man [COMMAND]` (`pas-agent man run | man -l -`). Docs: https://docs.rs/crate/pas-agent/latest/source/docs/"
)]
pub struct Cli {
    /// Run as if pas-agent was started in DIR (like `git -C`).
    #[arg(short = 'C', value_name = "DIR", global = true)]
    pub dir: Option<PathBuf>,

    /// When to colour the output of status, runs and doctor: auto (on a terminal, unless
    /// NO_COLOR is set), always, never.
    #[arg(long, value_name = "WHEN", global = true, default_value = "auto")]
    pub color: crate::term::ColorChoice,

    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
}

/// Where the documentation of this version is read without the source tree.
pub const DOCS_URL: &str = "https://docs.rs/crate/pas-agent/latest/source/docs/";

/// The command line as parsed: [`Cli`], each command's help ending with where its manual page
/// and the docs are (`pas-agent help run`, `run --help`), so that no help points to a file a
/// `cargo install` user does not have. Every command added to [`Command`] gets the line.
pub fn command() -> clap::Command {
    use clap::CommandFactory;
    Cli::command().mut_subcommands(|sub| {
        let line = format!(
            "Manual: `pas-agent man {}`. Docs: {DOCS_URL}",
            sub.get_name()
        );
        let text = match sub.get_after_help() {
            Some(help) => format!("{help}\n\n{line}"),
            None => line,
        };
        sub.after_help(text)
    })
}

/// Parses `args` (program name first) with [`command`].
///
/// Errors: clap's, for bad arguments, `--help` and `--version`.
pub fn parse_from<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    use clap::FromArgMatches;
    let mut cmd = command();
    let matches = cmd.try_get_matches_from_mut(args)?;
    Cli::from_arg_matches(&matches).map_err(|e| e.format(&mut cmd))
}

/// The commands.
// Parsed once per process: the size difference between variants does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Start a session for this project (the git work tree, or this directory outside git).
    Init(InitArgs),
    /// Record progress: task, objective, next action, and items in the task's lists.
    Update(UpdateArgs),
    /// Remove items from one of the task's lists by number.
    Remove(RemoveArgs),
    /// Save a snapshot of the task and the changed files.
    Checkpoint(CheckpointArgs),
    /// Show the session: task, lists, git state, checkpoints, and whether the last checkpoint
    /// is behind.
    Status(JsonArgs),
    /// List the checkpoints.
    List(JsonArgs),
    /// Show one checkpoint: its task snapshot and changed files.
    Show(ShowArgs),
    /// Write the session into an agent's context file (between pas-agent markers), or its own
    /// rules file; `--check` for CI, `--remove` to take the block out, `--all` for every agent
    /// in use (docs/agents.md).
    Export(ExportArgs),
    /// Run an agent: checkpoint and export before, record the run after.
    #[command(after_help = RUN_HELP)]
    Run(RunArgs),
    /// List the agent runs recorded in this session, or show one in full (`runs N`).
    Runs(RunsArgs),
    /// End live agents so that each can be restored later in its own conversation, project and
    /// tmux window (docs/freeze.md).
    Freeze(FreezeArgs),
    /// Bring frozen runs back (`pas-agent freeze`), or the runs that were live when the machine
    /// went down, each resumed in its own conversation (docs/freeze.md).
    Restore(RestoreArgs),
    /// List this project's agent conversations from the agents' own stores, newest first, also
    /// those started without pas-agent (resume one with `pas-agent run AGENT --resume ID`).
    Sessions(SessionsArgs),
    /// Print the shell integration script: a prompt segment, and agent commands sent through
    /// `run` inside a session (`pas-agent man hook`; https://docs.rs/crate/pas-agent/latest/source/docs/hooks.md).
    #[command(
        after_help = "Add one line to your shell's start-up file:\n  bash        eval \"$(pas-agent hook bash)\"            (~/.bashrc)\n  zsh         eval \"$(pas-agent hook zsh)\"             (~/.zshrc)\n  fish        pas-agent hook fish | source              (~/.config/fish/config.fish)\n  PowerShell  Invoke-Expression (& pas-agent hook powershell | Out-String)   ($PROFILE)"
    )]
    Hook(HookArgs),
    /// Install pas-agent in an agent's own lifecycle hooks (claude, codex, gemini): the agent
    /// gets the session as context when it starts and is recorded as a run when it ends,
    /// however it was started (docs/integrate.md).
    Integrate(IntegrateArgs),
    /// Run by the hooks `integrate` installs, with the agent's JSON payload on stdin.
    #[command(hide = true)]
    Lifecycle(LifecycleArgs),
    /// Print a one-line summary of the session for a shell prompt (task, progress, stale mark,
    /// running agent); nothing outside a session. Exits 0 whatever state the session is in.
    Prompt(PromptArgs),
    /// Merge an unmerged session.json (git conflict markers after a merge, rebase or
    /// cherry-pick) into one session, as the merge driver would have (https://docs.rs/crate/pas-agent/latest/source/docs/teams.md).
    Resolve,
    /// Shrink the session: drop the file lists of all but the last N checkpoints and runs,
    /// and delete old output captures (https://docs.rs/crate/pas-agent/latest/source/docs/teams.md).
    Prune(PruneArgs),
    /// The git merge driver for session.json (`merge-driver %O %A %B %P`, set up by `init`),
    /// or `merge-driver --install` to set it up in this repository.
    MergeDriver(MergeDriverArgs),
    /// Serve this session to agents over the Model Context Protocol (stdio): tools to read
    /// and update it and take checkpoints (docs/mcp.md). `--config AGENT` prints the snippet
    /// that registers the server with that agent.
    Mcp(McpArgs),
    /// Print the shell completion script: commands, flags, agent names, export targets, and
    /// checkpoint, run and item numbers from the session in the current directory.
    #[command(after_help = COMPLETIONS_HELP)]
    Completions(CompletionsArgs),
    /// Print the manual page of pas-agent, or of one of its commands, in roff
    /// (`pas-agent man run | man -l -`).
    Man(ManArgs),
    /// Check the set-up: git, the agents, the shell hooks, this session and the run registry.
    /// Each problem comes with the command that fixes it; exits 1 when something needs
    /// attention.
    Doctor(JsonArgs),
}

/// `run --help`: how flags reach the agent.
pub const RUN_HELP: &str = "Flags for the agent go after its name: `pas-agent run codex --model o3` passes `--model o3` to\ncodex; pas-agent's own options go before the name. `--help` and `-h` there still show this help:\nwrite `pas-agent run codex -- --help` for the agent's own (everything after `--` is the agent's).\nCommands that start no session (`pas-agent run codex --version`) run straight, with no record.";

/// One line per shell for its start-up file (`completions --help`, README.md).
pub const COMPLETIONS_HELP: &str = "Add one line to your shell's start-up file:\n  bash        source <(pas-agent completions bash)                  (~/.bashrc)\n  zsh         source <(pas-agent completions zsh)                   (~/.zshrc, after compinit)\n  fish        pas-agent completions fish | source                   (~/.config/fish/config.fish)\n  PowerShell  pas-agent completions powershell | Out-String | Invoke-Expression   ($PROFILE)\n  elvish      eval (pas-agent completions elvish | slurp)           (~/.config/elvish/rc.elv)\nThe script calls pas-agent back (PAS_AGENT_COMPLETE=<shell>) for each completion, so what it offers\nfollows the session of the directory you are in.";

/// A shell `completions` writes a script for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompletionShell {
    /// bash
    Bash,
    /// zsh
    Zsh,
    /// fish
    Fish,
    /// PowerShell (also: pwsh)
    #[value(alias = "pwsh")]
    Powershell,
    /// elvish
    Elvish,
}

impl CompletionShell {
    /// The shell's name as clap_complete's dynamic completion knows it (`PAS_AGENT_COMPLETE=<name>`).
    pub fn name(self) -> &'static str {
        match self {
            CompletionShell::Bash => "bash",
            CompletionShell::Zsh => "zsh",
            CompletionShell::Fish => "fish",
            CompletionShell::Powershell => "powershell",
            CompletionShell::Elvish => "elvish",
        }
    }
}

/// `completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to print the script for.
    pub shell: CompletionShell,
}

/// `man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// The command whose page to print (`run`, or `help` for none): without it, the page of
    /// pas-agent itself, which lists the others.
    #[arg(value_name = "COMMAND")]
    pub command: Vec<String>,
    /// Write every page (pas-agent.1, pas-agent-run.1, …) into this directory instead, e.g.
    /// ~/.local/share/man/man1.
    #[arg(long, value_name = "DIR", conflicts_with = "command")]
    pub dir: Option<PathBuf>,
}

/// `mcp`.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// Print the snippet for this agent's MCP settings instead of serving (claude, codex,
    /// gemini, opencode); where it goes is said on stderr.
    #[arg(long, value_name = "AGENT", value_parser = PossibleValuesParser::new(crate::agents::mcp_names()))]
    pub config: Option<String>,
}

/// `prune`.
#[derive(Debug, Args)]
pub struct PruneArgs {
    /// Keep the file lists of the last N checkpoints (and of the last N runs).
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub keep: usize,
    /// Delete output captures of runs that started longer ago than this (`30d`, `12h`, `90m`).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub captures_older_than: Option<std::time::Duration>,
    /// Say what would be dropped, change nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// `30d`, `12h`, `90m`, `45s`, `2w`.
fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (n, unit) = s.split_at(split);
    let n: u64 = n.parse().map_err(|_| {
        format!("`{s}` is not a duration: write a number and a unit, like 30d, 12h or 90m")
    })?;
    let secs = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 7 * 86_400,
        _ => {
            return Err(format!(
                "`{s}`: the unit must be one of s, m, h, d, w (like 30d)"
            ));
        }
    };
    n.checked_mul(secs)
        .map(std::time::Duration::from_secs)
        .ok_or_else(|| format!("`{s}` is too long"))
}

/// `merge-driver`.
#[derive(Debug, Args)]
pub struct MergeDriverArgs {
    /// Set the driver up here: the `.gitattributes` line and the repo-local git config.
    #[arg(long, conflicts_with = "files")]
    pub install: bool,
    /// `%O %A %B %P` as git passes them: the ancestor's, our and their versions (the result
    /// is written over ours), and the path in the repository.
    #[arg(value_name = "FILES", num_args = 3..=4, required_unless_present = "install")]
    pub files: Vec<PathBuf>,
}

/// `init`.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// Project name (default: the name of the session root directory).
    #[arg(short, long)]
    pub name: Option<String>,
    /// What you are working on (asked for on a terminal when missing).
    #[arg(short, long)]
    pub task: Option<String>,
    /// Outside git, start a session here even though a parent directory has one.
    #[arg(long)]
    pub nested: bool,
}

/// `update`.
#[derive(Debug, Args)]
pub struct UpdateArgs {
    /// Replace the task description.
    #[arg(long)]
    pub task: Option<String>,
    /// Replace the objective ("" clears it).
    #[arg(long)]
    pub objective: Option<String>,
    /// Set the next action ("" clears it).
    #[arg(long, conflicts_with = "clear_next")]
    pub next: Option<String>,
    /// Clear the next action.
    #[arg(long)]
    pub clear_next: bool,
    /// Add a completed item (repeatable; each value is one item).
    #[arg(long, value_name = "ITEM")]
    pub completed: Vec<String>,
    /// Add a remaining item (repeatable).
    #[arg(long, value_name = "ITEM")]
    pub remaining: Vec<String>,
    /// Add a decision (repeatable).
    #[arg(long, value_name = "ITEM")]
    pub decision: Vec<String>,
    /// Add a blocker (repeatable).
    #[arg(long, value_name = "ITEM")]
    pub blocker: Vec<String>,
    /// Add a constraint (repeatable).
    #[arg(long, value_name = "ITEM")]
    pub constraint: Vec<String>,
    /// Add a discovery (repeatable).
    #[arg(long, value_name = "ITEM")]
    pub discovery: Vec<String>,
    /// Move remaining item #N to completed (repeatable; numbers as `status` shows them).
    #[arg(long, value_name = "N", value_parser = item_number, allow_negative_numbers = true)]
    pub done: Vec<usize>,
    /// Drop blocker #N (repeatable).
    #[arg(long, value_name = "N", value_parser = item_number, allow_negative_numbers = true)]
    pub resolve: Vec<usize>,
}

/// Parses an item number as `status` shows it, with a message that says so.
fn item_number(s: &str) -> Result<usize, String> {
    s.trim().parse::<usize>().map_err(|_| {
        "expected an item number, as `pas-agent status` shows them (1, 2, …)".to_string()
    })
}

/// A task list, as `remove` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ListArg {
    /// Items done
    Completed,
    /// Items still to do
    Remaining,
    /// Decisions made (also: decision)
    #[value(alias = "decision")]
    Decisions,
    /// What stops progress (also: blocker)
    #[value(alias = "blocker")]
    Blockers,
    /// Rules the work must respect (also: constraint)
    #[value(alias = "constraint")]
    Constraints,
    /// Facts learned along the way (also: discovery)
    #[value(alias = "discovery")]
    Discoveries,
}

impl From<ListArg> for ListKind {
    fn from(l: ListArg) -> Self {
        match l {
            ListArg::Completed => ListKind::Completed,
            ListArg::Remaining => ListKind::Remaining,
            ListArg::Decisions => ListKind::Decisions,
            ListArg::Blockers => ListKind::Blockers,
            ListArg::Constraints => ListKind::Constraints,
            ListArg::Discoveries => ListKind::Discoveries,
        }
    }
}

/// `remove`.
#[derive(Debug, Args)]
pub struct RemoveArgs {
    /// The list to remove from.
    pub list: ListArg,
    /// Item numbers, as `status` shows them.
    #[arg(required = true, value_name = "N", value_parser = item_number, allow_negative_numbers = true)]
    pub numbers: Vec<usize>,
}

/// `checkpoint`.
#[derive(Debug, Args)]
pub struct CheckpointArgs {
    /// What this checkpoint marks (asked for on a terminal when missing).
    #[arg(value_name = "MESSAGE")]
    pub message: Vec<String>,
}

/// Commands that can print JSON.
#[derive(Debug, Args)]
pub struct JsonArgs {
    /// Print one JSON document instead of text (https://docs.rs/crate/pas-agent/latest/source/docs/json.md).
    #[arg(long)]
    pub json: bool,
}

/// `show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// Checkpoint number (as `list` shows it), or the start or end of its id (4+ characters).
    pub checkpoint: String,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// `export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The agent to export for: an id, alias or executable name, in any case (`claude`,
    /// `Claude`, `cursor-agent`, `cursor-rules`, `windsurf`, …; docs/agents.md lists them).
    #[arg(
        short = 't',
        long = "to",
        value_name = "AGENT",
        value_parser = PossibleValuesParser::new(crate::agents::export_names()),
        ignore_case = true,
        hide_possible_values = true,
        required_unless_present = "all",
        conflicts_with = "all"
    )]
    pub to: Option<String>,
    /// Write to this file instead of the agent's own (relative to the current directory);
    /// `-` prints the block on stdout.
    #[arg(short, long, value_name = "PATH", conflicts_with = "all")]
    pub output: Option<PathBuf>,
    /// Replace the whole file with the block, even if its markers are broken.
    #[arg(long, conflicts_with_all = ["check", "remove"])]
    pub force: bool,
    /// Write nothing; exit 0 when the file holds the block `export` would write now (the live
    /// git state aside), 1 when it is missing or out of date. For pre-commit hooks and CI.
    #[arg(long, conflicts_with = "remove")]
    pub check: bool,
    /// Take the block out of the file, leaving every other byte as it was; delete the file
    /// when nothing else is left (and pas-agent's own rules files).
    #[arg(long)]
    pub remove: bool,
    /// Every agent whose file already exists, whose executable is on PATH, or whose own
    /// directory is in the project (`.cursor`, `.windsurf`, …); each file once.
    #[arg(long)]
    pub all: bool,
}

/// `run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The agent (claude, codex, gemini, opencode, copilot, qwen, pi, droid, kilo, cn, aider,
    /// cursor-agent, kiro-cli, agy, amp, goose, or an id or alias), or any program. Without it,
    /// the program is the first word after `--`.
    #[arg(value_name = "AGENT")]
    pub agent: Option<String>,
    /// Do not take the checkpoints before and after the run.
    #[arg(long)]
    pub no_checkpoint: bool,
    /// Do not export to the agent's context file before the run.
    #[arg(long, conflicts_with = "to")]
    pub no_export: bool,
    /// Export to this agent's context file before the run (default: the agent's own; a plain
    /// program gets an export only with this).
    #[arg(long, value_name = "AGENT", value_parser = PossibleValuesParser::new(crate::agents::names()))]
    pub to: Option<String>,
    /// Resume a session with the agent's own resume syntax (`claude --resume <id>`, `codex
    /// resume <id>`, …): without SELECTOR the agent's most recent one recorded in this project;
    /// SELECTOR is a run number, a session id, the end of one (as `pas-agent sessions` lists
    /// them) or the path of its file. Write it as `--resume=SELECTOR` or put `--` after it.
    #[arg(long, value_name = "SELECTOR", num_args = 0..=1, default_missing_value = "")]
    pub resume: Option<String>,
    /// Restore the frozen run this token names (given by `pas-agent restore`).
    #[arg(long, value_name = "TOKEN", hide = true, requires = "resume")]
    pub restoring: Option<String>,
    /// Run the agent with pas-agent's own stdin and stdout instead of a pseudo-terminal (no
    /// output capture). Also PAS_AGENT_NO_PTY=1.
    #[arg(long)]
    pub no_pty: bool,
    /// Give the agent the pas-agent MCP server (`pas-agent mcp`) for this run only: Claude
    /// Code through --mcp-config, Codex through -c mcp_servers.… (docs/mcp.md).
    #[arg(long)]
    pub mcp: bool,
    /// Arguments for the agent: what follows its name (`run codex exec "fix it"`). pas-agent's
    /// own options go before the agent's first argument; after `--` everything is the agent's.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "ARGS"
    )]
    pub args: Vec<OsString>,
}

/// `runs`.
#[derive(Debug, Args)]
pub struct RunsArgs {
    /// Show run N in full (its number as the list shows it): command line, outcome, commits,
    /// files, the agent's prompts and last answer, and where its capture is.
    #[arg(value_name = "N", conflicts_with = "all")]
    pub number: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// List the live runs of every project on this machine (the run registry).
    #[arg(long)]
    pub all: bool,
}

/// `freeze`.
#[derive(Debug, Args)]
pub struct FreezeArgs {
    /// The runs to freeze: a registry id as `runs --all` shows it (or the start of one), or,
    /// inside a project, a run number as `runs` shows it.
    #[arg(
        value_name = "RUN",
        required_unless_present = "all",
        conflicts_with = "all"
    )]
    pub runs: Vec<String>,
    /// Every live run on this machine.
    #[arg(long)]
    pub all: bool,
    /// End an agent whose session id is not known, though it cannot be restored.
    #[arg(long)]
    pub force: bool,
    /// Seconds each signal is given to end the agent before the next is sent.
    #[arg(long, value_name = "SECONDS", default_value_t = 10)]
    pub grace: u64,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// `restore`.
#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// The runs to restore: a registry id as `runs --all` shows it (or the start of one), or,
    /// inside a project, a run number. Without RUN or --all: the frozen runs are listed.
    #[arg(value_name = "RUN", conflicts_with = "all")]
    pub runs: Vec<String>,
    /// Every frozen run on this machine, and every run whose launcher died with a known session.
    #[arg(long)]
    pub all: bool,
    /// Forget these frozen runs instead (their captures too).
    #[arg(long, requires = "runs")]
    pub drop: bool,
    /// Print JSON (for the list).
    #[arg(long)]
    pub json: bool,
    /// Receive a restore's environment and start it (the command of a restored tmux window).
    #[arg(long, value_name = "SOCKET", hide = true, conflicts_with_all = ["runs", "all", "drop"])]
    pub receive: Option<PathBuf>,
}

/// `sessions`.
#[derive(Debug, Args)]
pub struct SessionsArgs {
    /// Only this agent's conversations (claude, codex, gemini, opencode, …).
    #[arg(value_name = "AGENT")]
    pub agent: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// A shell `hook` can integrate with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ShellArg {
    /// bash 4.4 or later
    Bash,
    /// zsh 5.3 or later
    Zsh,
    /// fish 3.1 or later
    Fish,
    /// PowerShell 7 or Windows PowerShell 5.1 (also: pwsh)
    #[value(alias = "pwsh")]
    Powershell,
}

impl From<ShellArg> for crate::hook::Shell {
    fn from(s: ShellArg) -> Self {
        match s {
            ShellArg::Bash => crate::hook::Shell::Bash,
            ShellArg::Zsh => crate::hook::Shell::Zsh,
            ShellArg::Fish => crate::hook::Shell::Fish,
            ShellArg::Powershell => crate::hook::Shell::PowerShell,
        }
    }
}

/// `hook`.
#[derive(Debug, Args)]
pub struct HookArgs {
    /// The shell to print the script for.
    pub shell: ShellArg,
}

/// `integrate`.
#[derive(Debug, Args)]
pub struct IntegrateArgs {
    /// The agent whose hooks to install pas-agent in.
    #[arg(value_name = "AGENT", value_parser = PossibleValuesParser::new(crate::agents::hook_keys()))]
    pub agent: String,
    /// Install in the user's settings (all projects) instead of this project's.
    #[arg(long)]
    pub user: bool,
    /// Take out what `integrate` installed, and nothing else.
    #[arg(long)]
    pub remove: bool,
}

/// `lifecycle` (hidden).
#[derive(Debug, Args)]
pub struct LifecycleArgs {
    /// The integration (`claude`, `codex`, `gemini`).
    pub agent: String,
    /// `session-start`, `stop` or `session-end`.
    pub event: String,
}

/// The arguments of `pas-agent lifecycle`, read without clap: the command runs inside an
/// agent's hook, where a usage error's exit code 2 means "block" to Claude Code (a `Stop` hook
/// exiting 2 keeps the agent going). Takes the arguments after the program name; returns
/// `None` unless the first is `lifecycle`. Missing words are empty (and reported by the
/// command as unknown, with exit code 0); extra words are ignored.
pub fn lifecycle_args(args: &[std::ffi::OsString]) -> Option<LifecycleArgs> {
    let (first, rest) = args.split_first()?;
    if first != "lifecycle" {
        return None;
    }
    let word = |i: usize| {
        rest.get(i)
            .map(|a| a.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    Some(LifecycleArgs {
        agent: word(0),
        event: word(1),
    })
}

/// The prompt segment's default width, in characters (`prompt --width`).
pub const PROMPT_WIDTH: u16 = 32;
/// The narrowest `prompt --width` accepted, in characters.
pub const PROMPT_MIN_WIDTH: u16 = 8;

/// A `prompt --width` value: ASCII digits, any number of them; below [`PROMPT_MIN_WIDTH`] counts
/// as that, above 65535 as 65535, so that a width never makes the prompt fail (it promises exit
/// 0 and a silent stderr). Errors: not a number.
pub fn prompt_width(s: &str) -> Result<u16, String> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("`{s}` is not a number of columns"));
    }
    let n = s.bytes().fold(0u64, |n, b| {
        n.saturating_mul(10).saturating_add(u64::from(b - b'0'))
    });
    Ok(n.clamp(u64::from(PROMPT_MIN_WIDTH), u64::from(u16::MAX)) as u16)
}

/// `prompt`.
#[derive(Debug, Args)]
pub struct PromptArgs {
    /// Longest task text shown, in terminal columns (CJK and emoji take two); longer text is
    /// cut with "…". Less than 8 counts as 8.
    #[arg(long, value_name = "COLUMNS", default_value_t = PROMPT_WIDTH, value_parser = prompt_width)]
    pub width: u16,
    /// For the shell hooks: also print the notice line, a stamp file and the files to watch,
    /// one per line (https://docs.rs/crate/pas-agent/latest/source/docs/hooks.md). ID names the shell, usually its process id.
    #[arg(long, value_name = "ID")]
    pub hook: Option<String>,
    /// With --hook: fill the notice line (the shell has just entered this project), unless
    /// PAS_AGENT_NOTICE=0.
    #[arg(long, requires = "hook")]
    pub notice: bool,
}

/// The arguments of `pas-agent prompt`, read without building clap's parser: the shell hooks run
/// `prompt` at every prompt whose session or HEAD changed, and building the whole command line
/// parser is a large part of its cost. Takes the arguments after the program name; returns
/// `None` (parse with clap, which then also reports any error) unless they are `prompt` and
/// then only `--width N`, `--width=N` (digits, see [`prompt_width`]), `--hook ID`, `--hook=ID` and `--notice` (with
/// `--hook`), each at most once, values not starting with `-` — the forms clap accepts with the
/// same meaning. Anything else (`-C`, `--help`, a typo) goes to clap.
pub fn fast_prompt_args(args: &[std::ffi::OsString]) -> Option<PromptArgs> {
    let (first, rest) = args.split_first()?;
    if first != "prompt" {
        return None;
    }
    let mut width = None;
    let mut hook = None;
    let mut notice = false;
    let mut i = 0;
    while i < rest.len() {
        let arg = rest[i].to_str()?;
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v)),
            _ => (arg, None),
        };
        let mut value = || -> Option<&str> {
            let v = match inline {
                Some(v) => v,
                None => {
                    i += 1;
                    rest.get(i)?.to_str()?
                }
            };
            (!v.is_empty() && !v.starts_with('-')).then_some(v)
        };
        match name {
            "--width" if width.is_none() => {
                width = Some(prompt_width(value()?).ok()?);
            }
            "--hook" if hook.is_none() => hook = Some(value()?.to_string()),
            "--notice" if !notice && inline.is_none() => notice = true,
            _ => return None,
        }
        i += 1;
    }
    if notice && hook.is_none() {
        return None;
    }
    Some(PromptArgs {
        width: width.unwrap_or(PROMPT_WIDTH),
        hook,
        notice,
    })
}

/// The commands whose only argument is `--json` ([`JsonArgs`]), read without building clap's
/// parser: building it (every command's arguments and help) costs more than the rest of a
/// `status` in a small repository. Takes the arguments after the program name; returns `None`
/// (parse with clap, which then also reports any error) unless they are one of these commands'
/// names, then at most one `--json` — what clap reads the same way, with `-C` unset and
/// `--color` at its default. Anything else (`-C`, `--color`, `--help`, an alias, a typo) goes
/// to clap.
pub fn fast_json_args(args: &[std::ffi::OsString]) -> Option<Command> {
    type Make = fn(JsonArgs) -> Command;
    const COMMANDS: [(&str, Make); 3] = [
        ("status", Command::Status),
        ("list", Command::List),
        ("doctor", Command::Doctor),
    ];
    let (first, rest) = args.split_first()?;
    let (_, make) = COMMANDS.iter().find(|(name, _)| first == *name)?;
    let json = match rest {
        [] => false,
        [flag] if flag == "--json" => true,
        _ => return None,
    };
    Some(make(JsonArgs { json }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every list of up to three of `pieces` (repeats allowed), the empty one first.
    fn up_to_three<'a>(pieces: &[&'a str]) -> Vec<Vec<&'a str>> {
        let mut lists: Vec<Vec<&str>> = vec![vec![]];
        let mut level: Vec<Vec<&str>> = vec![vec![]];
        for _ in 0..3 {
            level = level
                .iter()
                .flat_map(|l| {
                    pieces.iter().map(move |p| {
                        let mut l = l.clone();
                        l.push(*p);
                        l
                    })
                })
                .collect();
            lists.extend(level.iter().cloned());
        }
        lists
    }

    use clap::CommandFactory;

    /// Every argument list the prompt's fast path accepts means the same to clap; the ones it
    /// declines are left to clap (whatever clap makes of them).
    #[test]
    fn fast_prompt_args_agree_with_clap() {
        let pieces = [
            "--width",
            "--width=8",
            "--width=7",
            "--width=65536",
            "--width=+9",
            "--width=",
            "12",
            "7",
            "-3",
            "--hook",
            "--hook=",
            "--hook=42",
            "42",
            "-x",
            "--notice",
            "--notice=1",
            "-C",
            ".",
            "--help",
            "--",
            "x",
        ];
        let mut lists = up_to_three(&pieces);
        lists.push(vec!["--width", "12", "--hook", "42", "--notice"]);
        let mut accepted = 0;
        for rest in lists {
            let args: Vec<std::ffi::OsString> = std::iter::once("prompt")
                .chain(rest.iter().copied())
                .map(Into::into)
                .collect();
            let Some(fast) = fast_prompt_args(&args) else {
                continue;
            };
            accepted += 1;
            let full = Cli::try_parse_from(std::iter::once("pas-agent".into()).chain(args))
                .unwrap_or_else(|e| panic!("{rest:?}: fast path accepted, clap said {e}"));
            assert!(full.dir.is_none());
            match full.command {
                Command::Prompt(p) => assert_eq!(format!("{p:?}"), format!("{fast:?}"), "{rest:?}"),
                other => panic!("{rest:?}: clap parsed {other:?}"),
            }
        }
        assert!(accepted > 40, "only {accepted} lists took the fast path");
        for other in [
            &["status"][..],
            &["prompt", "--hook"],
            &["-C", ".", "prompt"],
        ] {
            let args: Vec<std::ffi::OsString> = other.iter().map(Into::into).collect();
            assert!(fast_prompt_args(&args).is_none(), "{other:?}");
        }
    }

    /// The argument lists the `--json` commands' fast path accepts mean the same to clap, and
    /// it declines the rest.
    #[test]
    fn fast_json_args_agree_with_clap() {
        let pieces = [
            "--json", "--json=1", "--jso", "-j", "--color", "never", "-C", ".", "--help", "-h",
            "--", "x", "json",
        ];
        let lists = up_to_three(&pieces);
        let mut accepted = 0;
        for name in ["status", "list", "doctor", "stat", "show", "runs", "prompt"] {
            for rest in &lists {
                let args: Vec<std::ffi::OsString> = std::iter::once(name)
                    .chain(rest.iter().copied())
                    .map(Into::into)
                    .collect();
                let Some(fast) = fast_json_args(&args) else {
                    continue;
                };
                accepted += 1;
                let full = parse_from(std::iter::once("pas-agent".into()).chain(args))
                    .unwrap_or_else(|e| {
                        panic!("{name} {rest:?}: fast path accepted, clap said {e}")
                    });
                assert!(full.dir.is_none());
                assert_eq!(full.color, crate::term::ColorChoice::Auto);
                assert_eq!(
                    format!("{:?}", full.command),
                    format!("{fast:?}"),
                    "{name} {rest:?}"
                );
            }
        }
        assert_eq!(accepted, 6, "each command alone and with --json");
    }

    #[test]
    fn definitions_are_consistent() {
        Cli::command().debug_assert();
        command().debug_assert();
    }

    #[test]
    fn every_command_help_names_its_manual_page() {
        let mut cmd = command();
        for sub in cmd.get_subcommands_mut() {
            let name = sub.get_name().to_string();
            let help = sub.render_help().to_string();
            assert!(
                help.contains(&format!("pas-agent man {name}")) && help.contains(DOCS_URL),
                "{name}: {help}"
            );
        }
    }
}
