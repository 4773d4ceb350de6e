//! Everything pas-agent knows about each agent, one module per agent (or per store a family of
//! agents shares), and the table of them all: [`AGENTS`]. A new agent is one new module and one
//! row in the table; the rest of pas-agent asks the [`Agent`] it gets from here and never
//! matches on an agent's name (docs/architecture.md, "Adding an agent").
//!
//! An agent module holds: the files the agent reads at startup (the export target and the
//! others), how it is launched and resumed and which of its commands start no session, where
//! it keeps its files ([`store::Home`]), how a run's session id is found in its store and how
//! its transcript is read ([`store::Store`]), its lifecycle hooks ([`hooks::Hooks`]) and its MCP
//! registration ([`mcp::Mcp`]). Every fact carries its source in a comment: the agent's public
//! documentation, or "checked: <tool> <version>" when it was read in the installed tool's
//! `--help`, files or behaviour for this table. An agent marked "unverified" could not be
//! installed or run here, so its module follows the documentation named and may need updating;
//! docs/agents.md says per agent what a test proves.
//!
//! The first seven ids, their aliases and their files are those of the original PAS-Agent's
//! `export --to` (docs/format.md), so every target it accepts is accepted here.

use std::ffi::OsString;

pub mod args;
pub mod hooks;
pub mod mcp;
pub mod store;
pub mod words;

mod aider;
mod amp;
mod antigravity;
mod claude;
mod codex;
mod continue_cli;
mod copilot;
mod cursor;
mod droid;
mod gemini;
mod goose;
mod kilo;
mod kiro;
mod opencode;
mod pi;
mod qwen;
mod rules;

pub use store::{Home, Store};

/// Every known agent: the agent CLIs that `run` launches first, in the order `--help` lists
/// them, then the editors' and IDEs' agents that `export` alone writes for.
pub static AGENTS: &[&Agent] = &[
    &claude::AGENT,
    &codex::AGENT,
    &gemini::AGENT,
    &opencode::AGENT,
    &cursor::AGENT,
    &kiro::AGENT,
    &antigravity::AGENT,
    &aider::AGENT,
    &copilot::AGENT,
    &qwen::AGENT,
    &amp::AGENT,
    &goose::AGENT,
    &droid::AGENT,
    &kilo::AGENT,
    &continue_cli::AGENT,
    &pi::AGENT,
    &rules::CURSOR,
    &rules::WINDSURF,
    &rules::CLINE,
    &rules::KIRO_STEERING,
    &rules::ROO_CODE,
    &rules::CONTINUE,
    &rules::JUNIE,
    &rules::COPILOT_INSTRUCTIONS,
    &rules::CRUSH,
    &rules::WARP,
    &rules::ZED,
];

/// One agent: everything pas-agent knows about it.
#[derive(Debug, Clone, Copy)]
pub struct Agent {
    /// Canonical id, stored in run records (`claude-code`, `codex`, …).
    pub id: &'static str,
    /// Human name.
    pub name: &'static str,
    /// Other names accepted wherever an agent is named (`claude`, `gemini`, …).
    pub aliases: &'static [&'static str],
    /// Executables to look for on `PATH`, in order. For an agent `run` does not launch, their
    /// presence says the agent is installed (`export --all`).
    pub executables: &'static [&'static str],
    /// Whether `pas-agent run` launches it (an agent CLI, whose executables the shell hooks
    /// wrap) rather than only exporting for it (an editor's or IDE's agent).
    pub runs: bool,
    /// The file the agent reads at startup that `export` writes, relative to the project root.
    pub context_file: &'static str,
    /// How `export` writes the context file.
    pub layout: Layout,
    /// Files the agent reads instead of `context_file`, the first that exists winning (Zed):
    /// export goes to the first of these that exists, else to `context_file`.
    pub reads_first: &'static [&'static str],
    /// Other files the agent loads at startup besides its context file, relative to the
    /// project root.
    pub also_reads: &'static [&'static str],
    /// Paths (relative to the project root) whose presence says the agent is used in the
    /// project, for `export --all` (its own configuration directory).
    pub marks: &'static [&'static str],
    /// How much of its context file the agent reads, where it is known to cut off: the block
    /// is placed and checked against it (see `crate::export`).
    pub read_limit: Option<ReadLimit>,
    /// Whether the agent reads `@path` in its context file as an import of that file; export
    /// then looks through those imports for another pas-agent block the agent would see too.
    pub at_imports: bool,
    /// Arguments the launcher adds so that the agent reads the context file, for agents that
    /// load no file by themselves (`{context}` stands for the file the session is in: the
    /// context file, or a file of the run's own when that one is tracked by git).
    pub context_args: &'static [&'static str],
    /// How `pas-agent run` gives the agent the session when its context file is tracked by git
    /// and holds no block, so that a personal session never shows in `git status`
    /// (docs/commands.md, `export`, "Where the block goes").
    pub private: Private,
    /// How to resume a known session id, when the agent has a way.
    pub resume: Option<Resume>,
    /// How the launcher learns the id of the agent's session for a new run.
    pub session_id: SessionId,
    /// What the agent's session ids look like. An id read from any file (`session.json`, the
    /// agent's own store, a capture, a hook's payload) reaches a command line or a record only
    /// when it has this shape, and no shape admits a leading `-`, so an id is never read as a
    /// flag.
    pub id_shape: IdShape,
    /// Command lines that start no agent session (version, help, configuration, listing,
    /// login, …): `pas-agent run` runs them straight, with no record, checkpoint or export.
    pub straight: Straight,
    /// Where the agent keeps its own files (sessions, user-level settings).
    pub home: Option<Home>,
    /// The agent's session store, when pas-agent reads it.
    pub store: Option<&'static dyn Store>,
    /// The agent's lifecycle hooks, when `pas-agent integrate` installs into them.
    pub hooks: Option<hooks::Hooks>,
    /// How the agent registers an MCP server, when it is an MCP client pas-agent has a
    /// snippet for.
    pub mcp: Option<mcp::Mcp>,
    /// How `pas-agent freeze` ends the agent so that its conversation is saved.
    pub stop: Stop,
    /// What its arguments mean: which to leave out when a frozen run is restored.
    pub arg_shape: args::ArgShape,
}

/// The fields every row starts from (`Agent { id: …, ..BASE }`): an agent `run` launches as a
/// plain program would be, with no store, hooks or MCP.
pub const BASE: Agent = Agent {
    id: "",
    name: "",
    aliases: &[],
    executables: &[],
    runs: true,
    context_file: "AGENTS.md",
    layout: Layout::Block,
    reads_first: &[],
    also_reads: &[],
    marks: &[],
    read_limit: None,
    at_imports: false,
    context_args: &[],
    private: Private::None,
    resume: None,
    session_id: SessionId::Unknown,
    id_shape: IdShape::None,
    straight: Straight {
        subcommands: &[],
        flags: HELP_VERSION,
    },
    home: None,
    store: None,
    hooks: None,
    mcp: None,
    stop: Stop::INTERRUPT,
    arg_shape: args::UNKNOWN,
};

impl Agent {
    /// [`Agent::context_args`] with `{context}` replaced by the context file.
    pub fn context_args(&self) -> Vec<OsString> {
        self.context_args
            .iter()
            .map(|a| a.replace("{context}", self.context_file).into())
            .collect()
    }

    /// The name to type for it: its first alias, else its id (`claude` for Claude Code).
    pub fn short_name(&self) -> &'static str {
        self.aliases.first().copied().unwrap_or(self.id)
    }

    /// The file `export` writes under `root`: the first of [`Agent::reads_first`] that exists
    /// there as a file, else the agent's context file.
    pub fn file(&self, root: &std::path::Path) -> std::path::PathBuf {
        self.reads_first
            .iter()
            .map(|f| root.join(f))
            // A directory of that name (Cline's `.clinerules/`) is not the file Zed reads.
            .find(|p| p.metadata().is_ok_and(|m| m.is_file()))
            .unwrap_or_else(|| root.join(self.context_file))
    }

    /// What the agent said in its session `session_id`, run in `cwd`, after `since`, read from
    /// its store ([`Store::transcript`]; `hint`: a path to the session's file that the agent
    /// itself gave, such as a hook payload's `transcript_path`).
    ///
    /// Never fails and never panics: whatever goes wrong is said in the transcript's
    /// `missing`.
    pub fn transcript(
        &self,
        session_id: &str,
        cwd: &std::path::Path,
        since: chrono::DateTime<chrono::Utc>,
        hint: Option<&std::path::Path>,
    ) -> crate::model::Transcript {
        use crate::model::Transcript;
        let Some(store) = self.store else {
            return Transcript::missing(format!(
                "pas-agent does not read the sessions of {}",
                self.name
            ));
        };
        if session_id.is_empty() {
            return Transcript::missing("the agent's session id is not known");
        }
        let read = || store.transcript(session_id, cwd, since, hint);
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(read)).unwrap_or_else(|_| {
            Transcript::missing("reading the agent's session failed unexpectedly")
        })
    }

    /// Its executables that name it unambiguously: all but the generic `agent` (Cursor's newer
    /// name), which says nothing about which agent is installed and is never wrapped.
    pub fn own_executables(&self) -> impl Iterator<Item = &'static str> {
        self.executables.iter().copied().filter(|e| *e != "agent")
    }
}

/// How `export` writes an agent's file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// A marked block in a file the user may share with other text (`CLAUDE.md`,
    /// `AGENTS.md`, …): the text around the block is kept byte for byte.
    Block,
    /// A file pas-agent owns entirely, in a directory of rule files the agent reads: the
    /// agent's front matter (YAML between `---` lines, ending in a line feed; empty for agents
    /// that need none), then the block. The block's markers stay, so `--check` and
    /// `--remove` treat it as any other.
    Owned {
        /// The front matter, `---` lines included, `\n` line ends.
        front_matter: &'static str,
    },
}

/// Another way into the agent's context than its context file, one git does not see (see
/// [`Agent::private`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Private {
    /// None known. An agent with lifecycle hooks gets the session from pas-agent's start hook
    /// when it is installed (`pas-agent integrate`); without them, a run whose context file is
    /// tracked starts without the session and says so. An agent with
    /// [`Agent::context_args`] needs none: the run passes it a file of its own.
    None,
    /// A file the agent reads as well as its context file (Claude Code's `CLAUDE.local.md`):
    /// the block goes there, and git is told to ignore it on this machine only (the
    /// repository's `info/exclude`).
    AlsoReads(&'static str),
    /// A file the agent reads instead of its context file when it exists (Codex's
    /// `AGENTS.override.md`): for the run it holds the context file's text with the block, is
    /// ignored by git as above, and is deleted when the run ends, so that no copy of the
    /// context file outlives the run.
    Shadows(&'static str),
    /// An environment variable holding JSON configuration that the agent merges into its own
    /// (OpenCode's `OPENCODE_CONFIG_CONTENT`), whose array `key` (`instructions`) lists files
    /// it reads: the run sets it, naming a file of the run's own that holds the block (an
    /// object already in the variable keeps its other settings and entries).
    ConfigEnv {
        /// The variable.
        var: &'static str,
        /// The key of the array of files to read.
        key: &'static str,
    },
}

/// How much of a context file an agent reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadLimit {
    /// The amount read, in `unit`s from the start of the file.
    pub amount: usize,
    /// What `amount` counts.
    pub unit: LimitUnit,
}

/// The unit of a [`ReadLimit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitUnit {
    /// Bytes.
    Bytes,
    /// Unicode characters (a file that is not UTF-8 counts one per replaced sequence).
    Chars,
}

impl ReadLimit {
    /// The length of `bytes` in this limit's unit.
    pub fn measure(&self, bytes: &[u8]) -> usize {
        match self.unit {
            LimitUnit::Bytes => bytes.len(),
            LimitUnit::Chars => String::from_utf8_lossy(bytes).chars().count(),
        }
    }

    /// `32768 bytes`, `12000 characters`.
    pub fn describe(&self, n: usize) -> String {
        match self.unit {
            LimitUnit::Bytes => format!("{n} bytes"),
            LimitUnit::Chars => format!("{n} characters"),
        }
    }
}

/// The shape of an agent's session ids. Every shape starts with an ASCII letter or digit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdShape {
    /// No ids are learned or resumed: every id is refused.
    None,
    /// A UUID: 8-4-4-4-12 hexadecimal digits, either case, any version (Claude Code's v4,
    /// Codex's v7).
    Uuid,
    /// `prefix` then a UUID (Amp's `T-…`).
    PrefixedUuid(&'static str),
    /// `prefix` then exactly `len` ASCII letters and digits (OpenCode's `ses_…`).
    PrefixedAlnum {
        /// What the id starts with (`ses_`).
        prefix: &'static str,
        /// How many letters and digits follow.
        len: usize,
    },
    /// Digits, `_`, digits (Goose's `20251108_1`).
    DateSerial,
}

impl IdShape {
    /// Whether `id` has this shape.
    pub fn accepts(&self, id: &str) -> bool {
        fn uuid(s: &str) -> bool {
            let groups: Vec<&str> = s.split('-').collect();
            groups.len() == 5
                && groups
                    .iter()
                    .zip([8, 4, 4, 4, 12])
                    .all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()))
        }
        match *self {
            IdShape::None => false,
            IdShape::Uuid => uuid(id),
            IdShape::PrefixedUuid(prefix) => id.strip_prefix(prefix).is_some_and(uuid),
            IdShape::PrefixedAlnum { prefix, len } => id
                .strip_prefix(prefix)
                .is_some_and(|r| r.len() == len && r.bytes().all(|b| b.is_ascii_alphanumeric())),
            IdShape::DateSerial => id.split_once('_').is_some_and(|(a, b)| {
                !a.is_empty()
                    && !b.is_empty()
                    && a.len() <= 16
                    && b.len() <= 16
                    && a.bytes().chain(b.bytes()).all(|c| c.is_ascii_digit())
            }),
        }
    }
}

/// The agent's subcommands and flags that start no agent session, from its own `--help`.
///
/// A command line runs straight when one of `flags` appears before any `--`, or when its first
/// word that is not an option is one of `subcommands`. Options with a value before the
/// subcommand (`claude --model opus mcp list`) hide it, so such a line is recorded as a run:
/// the safe side, since a run is recorded rather than lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Straight {
    /// Subcommands that configure, list, log in, update or diagnose (`mcp`, `login`, …).
    pub subcommands: &'static [&'static str],
    /// Flags that print and exit (`--version`, `--help`, …).
    pub flags: &'static [&'static str],
}

impl Straight {
    /// Whether the user's arguments `args` (what follows the agent's name) start no session.
    pub fn matches(&self, args: &[std::ffi::OsString]) -> bool {
        let words: Vec<std::borrow::Cow<'_, str>> = args
            .iter()
            .map(|a| a.to_string_lossy())
            .take_while(|a| a != "--")
            .collect();
        if words.iter().any(|w| self.flags.contains(&w.as_ref())) {
            return true;
        }
        words
            .iter()
            .find(|w| !w.starts_with('-'))
            .is_some_and(|w| self.subcommands.contains(&w.as_ref()))
    }
}

/// `--help` and `--version`: the flags nearly every CLI prints and exits on (used for the rows
/// that could not be checked here, where `-h`/`-v` may mean something else).
pub const HELP_VERSION: &[&str] = &["--help", "--version"];

/// The agent's own syntax for resuming a session by id: `args` (with `{id}` replaced) go before
/// the user's arguments, or right after the first of them that is one of `subcommands` (so
/// `codex exec -c …` resumes as `codex exec resume <id> -c …`), where `after_subcommand` is
/// used instead when it is not empty (`droid exec --fork <id> …`, where the interactive
/// `droid --resume <id>` does not apply).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resume {
    /// The resume arguments, `{id}` standing for the session id (`["--resume", "{id}"]`).
    pub args: &'static [&'static str],
    /// Subcommands after which the arguments go instead of at the front (`["exec", "e"]` for
    /// Codex).
    pub subcommands: &'static [&'static str],
    /// The arguments used after one of `subcommands`, when they differ from `args`; empty:
    /// `args`.
    pub after_subcommand: &'static [&'static str],
}

impl Resume {
    /// Whether the user's own arguments already resume a session this way (their first word,
    /// `--resume` or `resume`, is there).
    pub fn mentioned_in(&self, user: &[std::ffi::OsString]) -> bool {
        let firsts: Vec<&str> = [self.args.first(), self.after_subcommand.first()]
            .into_iter()
            .flatten()
            .copied()
            .collect();
        user.iter().any(|a| {
            let a = a.to_string_lossy();
            firsts.iter().any(|first| {
                a == *first || (first.starts_with("--") && a.starts_with(&format!("{first}=")))
            })
        })
    }

    /// The command line that resumes session `id`, given the user's own arguments.
    ///
    /// Shape: `args` with every `{id}` replaced, inserted at the front of `user`, or after the
    /// first element of `user` equal to one of `subcommands`.
    pub fn apply(&self, id: &str, user: &[std::ffi::OsString]) -> Vec<std::ffi::OsString> {
        let at = user
            .iter()
            .position(|a| self.subcommands.iter().any(|s| a == *s))
            .map_or(0, |i| i + 1);
        let args = if at > 0 && !self.after_subcommand.is_empty() {
            self.after_subcommand
        } else {
            self.args
        };
        let ours = args
            .iter()
            .map(|a| std::ffi::OsString::from(a.replace("{id}", id)));
        let mut out: Vec<std::ffi::OsString> = user[..at].to_vec();
        out.extend(ours);
        out.extend(user[at..].iter().cloned());
        out
    }
}

/// How `pas-agent freeze` ends an agent: the signals it handles by saving its conversation and
/// exiting, sent one after the other (each given the freeze's grace period to work), before
/// the freeze falls back to SIGTERM and SIGKILL. The signals go to the run's launcher, which
/// sends them on to the agent's process group (docs/launcher.md, "Signals and exit codes").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stop {
    /// The signals, in order.
    pub signals: &'static [StopSignal],
    /// Whether the sequence was checked with the installed agent (docs/freeze.md says which).
    pub checked: bool,
}

impl Stop {
    /// SIGINT: what a terminal's interrupt key sends, and what nearly every CLI takes as "quit"
    /// when it is not reading keys itself. The default for an agent not checked.
    pub const INTERRUPT: Stop = Stop {
        signals: &[StopSignal::Interrupt],
        checked: false,
    };
}

/// A signal in an agent's [`Stop`] sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopSignal {
    /// SIGINT.
    Interrupt,
    /// SIGTERM.
    Terminate,
    /// SIGHUP: the terminal went away.
    HangUp,
}

/// How to learn the agent's own session id for a new run (the run record's
/// `agent_session_id`, docs/format.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionId {
    /// No documented way: the run records no session id.
    Unknown,
    /// The launcher chooses a UUID v4 and passes `flag <uuid>`, unless the user's arguments
    /// already hold one of `unless` (their own session choice wins, and nothing is recorded
    /// for it). When the agent has a store, the id is recorded only if the store holds it
    /// after the run; otherwise the run's session is looked up there as for
    /// [`SessionId::Discover`].
    Choose {
        /// The flag that takes the id (`--session-id`).
        flag: &'static str,
        /// User flags that already pick a session (`--resume`, `--continue`, …), alone or
        /// `--flag=value`.
        unless: &'static [&'static str],
    },
    /// The launcher reads the agent's store ([`Agent::store`]) after the run.
    Discover,
    /// The agent prints the id when it exits: the text after `marker` in the run's plain-text
    /// capture (only with a pseudo-terminal, where output is captured).
    Printed {
        /// The text just before the id; the last occurrence wins, the id being the run of
        /// ASCII letters, digits, `-` and `_` after it.
        marker: &'static str,
    },
}

/// The most common resume syntax: `--resume <id>` before the user's arguments.
pub const RESUME_FLAG: Resume = Resume {
    args: &["--resume", "{id}"],
    subcommands: &[],
    after_subcommand: &[],
};

/// Every agent that `run` launches (the agent CLIs).
pub fn launched() -> impl Iterator<Item = &'static Agent> + Clone {
    AGENTS.iter().copied().filter(|a| a.runs)
}

/// The agent `run` launches whose id or alias is `name` (exact, as `--to` and `--config`
/// take them).
pub fn by_name(name: &str) -> Option<&'static Agent> {
    launched().find(|a| a.id == name || a.aliases.contains(&name))
}

/// The agent `run` launches that is named by id, alias or executable name, in any case (what
/// `run` accepts: `claude`, `Claude`, `cursor-agent`, `agy` …). Ids and aliases win over
/// executables.
pub fn lookup(name: &str) -> Option<&'static Agent> {
    named(launched(), name)
}

/// The agent whose executable's file name is `name` (a path to `~/.local/bin/claude` is Claude
/// Code; an alias is not an executable).
pub fn by_executable(name: &str) -> Option<&'static Agent> {
    launched().find(|a| a.executables.contains(&name))
}

/// The first of `agents` whose id or alias is `name` (ASCII case ignored), else the first
/// with an executable of that name.
fn named(
    agents: impl Iterator<Item = &'static Agent> + Clone,
    name: &str,
) -> Option<&'static Agent> {
    let eq = |a: &str| a.eq_ignore_ascii_case(name);
    agents
        .clone()
        .find(|a| eq(a.id) || a.aliases.iter().any(|n| eq(n)))
        .or_else(|| {
            agents
                .into_iter()
                .find(|a| a.executables.iter().any(|n| eq(n)))
        })
}

/// The agent `export --to NAME` means: an id, alias or executable name of any agent, in any
/// case (`claude`, `Claude`, `cursor-agent`, `cursor-rules`).
pub fn export_agent(name: &str) -> Option<&'static Agent> {
    named(AGENTS.iter().copied(), name)
}

/// Every name `export --to` accepts, lower case, each once: ids, aliases and executables
/// (not the generic `agent`).
pub fn export_names() -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for a in AGENTS {
        for n in std::iter::once(a.id)
            .chain(a.aliases.iter().copied())
            .chain(a.own_executables())
        {
            if !out.contains(&n) {
                out.push(n);
            }
        }
    }
    out
}

/// Every id and alias of the agents `run` launches, for the command line's list of possible
/// values.
pub fn names() -> Vec<&'static str> {
    launched()
        .flat_map(|a| std::iter::once(a.id).chain(a.aliases.iter().copied()))
        .collect()
}

/// Every executable of the agents `run` launches: the commands the shell hooks wrap.
pub fn executables() -> Vec<&'static str> {
    launched().flat_map(Agent::own_executables).collect()
}

/// The agents `pas-agent integrate` installs into.
pub fn with_hooks() -> impl Iterator<Item = (&'static Agent, &'static hooks::Hooks)> {
    AGENTS
        .iter()
        .filter_map(|a| a.hooks.as_ref().map(|h| (*a, h)))
}

/// The agent whose hooks are named `key` (`claude`), or by the agent's id or aliases
/// (`claude-code`).
pub fn by_hook_key(key: &str) -> Option<(&'static Agent, &'static hooks::Hooks)> {
    with_hooks()
        .find(|(_, h)| h.key == key)
        .or_else(|| with_hooks().find(|(a, _)| a.id == key || a.aliases.contains(&key)))
}

/// The words `pas-agent integrate` takes: each agent's hook key.
pub fn hook_keys() -> Vec<&'static str> {
    with_hooks().map(|(_, h)| h.key).collect()
}

/// The ids and aliases of the agents `mcp --config` has a snippet for.
pub fn mcp_names() -> Vec<&'static str> {
    AGENTS
        .iter()
        .filter(|a| a.mcp.is_some())
        .flat_map(|a| std::iter::once(a.id).chain(a.aliases.iter().copied()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn an_agent_without_a_store_or_a_missing_id_says_why() {
        let now = chrono::Utc::now();
        let t = by_name("cursor")
            .unwrap()
            .transcript("x", std::path::Path::new("/"), now, None);
        assert!(t.missing.unwrap().contains("Cursor"));
        let t = by_name("codex")
            .unwrap()
            .transcript("", std::path::Path::new("/"), now, None);
        assert!(t.missing.unwrap().contains("not known"));
    }

    #[test]
    fn names_and_executables_resolve() {
        // Every target and alias of the original is checked end to end in tests/e2e/export.rs.
        assert_eq!(lookup("cursor-agent").unwrap().id, "cursor");
        assert_eq!(lookup("qwen").unwrap().context_file, "QWEN.md");
        assert!(by_name("vim").is_none());
    }

    #[test]
    fn export_names_resolve_in_any_case_to_one_agent() {
        assert_eq!(export_agent("Claude").unwrap().id, "claude-code");
        assert_eq!(export_agent("CURSOR-AGENT").unwrap().id, "cursor");
        assert_eq!(export_agent("cursor").unwrap().id, "cursor");
        assert_eq!(export_agent("Cursor-Rules").unwrap().id, "cursor-rules");
        assert_eq!(lookup("Codex").unwrap().id, "codex");
        assert!(export_agent("vim").is_none());
        // Every name leads back to its own agent: no two agents share a name.
        for a in AGENTS {
            for n in std::iter::once(a.id).chain(a.aliases.iter().copied()) {
                assert_eq!(export_agent(n).unwrap().id, a.id, "{n}");
            }
        }
        let names = export_names();
        let mut seen = std::collections::HashSet::new();
        for n in &names {
            assert!(seen.insert(n.to_ascii_lowercase()), "{n} twice");
            assert!(export_agent(n).is_some(), "{n}");
        }
        // Owned files are pas-agent's own, in the agent's rules directory.
        for a in AGENTS {
            if let Layout::Owned { front_matter } = a.layout {
                assert!(!a.runs && a.context_file.contains("pas-agent"), "{}", a.id);
                assert!(
                    front_matter.is_empty()
                        || (front_matter.starts_with("---\n") && front_matter.ends_with("\n---\n")),
                    "{}",
                    a.id
                );
            }
        }
    }

    #[test]
    fn names_and_executables_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for n in names() {
            assert!(seen.insert(n), "duplicate name {n}");
        }
        let mut seen = std::collections::HashSet::new();
        for a in launched() {
            for e in a.executables {
                assert!(seen.insert(*e), "two agents claim {e}");
            }
        }
    }

    #[test]
    fn resume_goes_first_or_after_the_subcommand() {
        let claude = by_name("claude").unwrap().resume.unwrap();
        assert_eq!(
            claude.apply("abc", &os(&["-p", "hi"])),
            os(&["--resume", "abc", "-p", "hi"])
        );
        let codex = by_name("codex").unwrap().resume.unwrap();
        assert_eq!(codex.apply("x-1", &[]), os(&["resume", "x-1"]));
        assert_eq!(
            codex.apply("x-1", &os(&["exec", "--skip-git-repo-check", "go on"])),
            os(&["exec", "resume", "x-1", "--skip-git-repo-check", "go on"])
        );
        let kiro = by_name("kiro").unwrap().resume.unwrap();
        assert_eq!(kiro.apply("k", &[]), os(&["chat", "--resume-id", "k"]));
        // droid: interactively by id; after `exec`, a fork (exec -s needs Factory's service).
        let droid = by_name("droid").unwrap().resume.unwrap();
        assert_eq!(droid.apply("d", &[]), os(&["--resume", "d"]));
        assert_eq!(
            droid.apply("d", &os(&["exec", "-m", "x", "go on"])),
            os(&["exec", "--fork", "d", "-m", "x", "go on"])
        );
        assert!(droid.mentioned_in(&os(&["exec", "--fork", "x"])));
        assert!(droid.mentioned_in(&os(&["--resume=x"])));
        let cn = by_name("cn").unwrap().resume.unwrap();
        assert_eq!(
            cn.apply("c", &os(&["-p", "hi"])),
            os(&["--fork", "c", "-p", "hi"])
        );
        let aider = by_name("aider").unwrap().resume.unwrap();
        assert_eq!(
            aider.apply("20261201_154306", &os(&["--message", "hi"])),
            os(&["--restore-chat-history", "--message", "hi"])
        );
    }

    #[test]
    fn the_new_agents_straight_lists_are_their_own() {
        let straight =
            |agent: &str, line: &[&str]| by_name(agent).unwrap().straight.matches(&os(line));
        // checked against each CLI: these start no session …
        for (agent, line) in [
            ("copilot", &["mcp", "list"][..]),
            ("copilot", &["--version"]),
            ("copilot", &["app"]),
            ("qwen", &["-v"]),
            ("qwen", &["mcp", "list"]),
            ("qwen", &["hook", "list"]),
            ("droid", &["exec", "--list-tools"]),
            ("droid", &["find", "x"]),
            ("kilo", &["session", "list"]),
            ("cn", &["ls", "--json"]),
            ("pi", &["list"]),
            ("aider", &["--list-models", "gpt"]),
        ] {
            assert!(straight(agent, line), "{agent} {line:?}");
        }
        // … and these do.
        for (agent, line) in [
            ("copilot", &["init"][..]),
            ("copilot", &["-p", "hi"]),
            ("qwen", &["-l"]),
            ("droid", &["exec", "hi"]),
            ("kilo", &["run", "hi"]),
            ("cn", &["-p", "hi"]),
            ("pi", &["-p", "list the files"]),
            ("aider", &["--message", "hi"]),
        ] {
            assert!(!straight(agent, line), "{agent} {line:?}");
        }
    }

    #[test]
    fn commands_that_start_no_session_run_straight() {
        let claude = by_name("claude").unwrap().straight;
        for line in [
            &["--version"][..],
            &["-v"],
            &["mcp", "list"],
            &["--debug", "mcp", "list"],
            &["doctor"],
            &["-p", "hi", "--help"],
        ] {
            assert!(claude.matches(&os(line)), "{line:?}");
        }
        for line in [
            &[][..],
            &["-p", "mcp list"],
            &["fix the mcp server"],
            &["--", "--version"],
            &["-p", "--", "mcp"],
        ] {
            assert!(!claude.matches(&os(line)), "{line:?}");
        }
        let codex = by_name("codex").unwrap().straight;
        assert!(codex.matches(&os(&["login", "status"])) && codex.matches(&os(&["-V"])));
        assert!(!codex.matches(&os(&["exec", "go"])) && !codex.matches(&os(&["resume"])));
        assert!(
            by_name("aider")
                .unwrap()
                .straight
                .matches(&os(&["--version"]))
        );
    }

    #[test]
    fn every_choose_row_names_its_own_flag_in_unless() {
        for a in AGENTS {
            if let SessionId::Choose { flag, unless } = a.session_id {
                assert!(unless.contains(&flag), "{}", a.id);
            }
        }
        assert_eq!(
            by_name("aider").unwrap().context_args(),
            os(&["--read", "AGENTS.md"])
        );
    }

    #[test]
    fn id_shapes_accept_real_ids_and_never_a_flag() {
        let ok = [
            ("claude-code", "3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b"),
            ("codex", "0199a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b"),
            ("gemini-cli", "3F2A1B4C-5D6E-4F70-8A9B-0C1D2E3F4A5B"),
            ("opencode", "ses_3a9f0c1e2b4dAbCdEfGhIjKlMn"),
            ("amp", "T-3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b"),
            ("goose", "20251108_1"),
            ("copilot", "44444444-2222-4333-8444-555555555555"),
            ("droid", "7d0567c3-429f-4686-9433-fa604695a8d3"),
            ("kilo", "ses_dcd836b90ffe9Zvdo1yrT090O7"),
            ("pi", "01a23211-19b1-73b9-9db9-703f23332ed7"),
            ("aider", "20261201_154306"),
        ];
        for (agent, id) in ok {
            assert!(by_name(agent).unwrap().id_shape.accepts(id), "{agent} {id}");
        }
        let hostile = [
            "--dangerously-skip-permissions",
            "-c",
            "--yolo",
            "--approval-mode=yolo",
            "",
            "-3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b",
            "3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b --yolo",
            "3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b\n",
            "ses_--dangerously-skip-per",
            "T---yolo",
            "_1",
        ];
        for a in AGENTS {
            for id in hostile {
                assert!(!a.id_shape.accepts(id), "{} accepts {id:?}", a.id);
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn no_shape_admits_a_leading_dash_or_a_space(id in "\\PC{0,60}") {
            for a in AGENTS {
                if a.id_shape.accepts(&id) {
                    proptest::prop_assert!(
                        id.starts_with(|c: char| c.is_ascii_alphanumeric())
                            && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'),
                        "{} accepts {:?}", a.id, id
                    );
                }
            }
        }
    }
}
