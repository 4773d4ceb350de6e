//! What an agent's lifecycle hooks look like to pas-agent ([`Hooks`], one per agent that has
//! them): where its settings files are, in which format, which of its events run which of
//! pas-agent's, and the fields of the payload it sends. `crate::integrate` edits the files and
//! handles the events from these facts alone.

/// What pas-agent does on one of the agent's hook events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// The agent session starts: print the session as context, remember HEAD and the time.
    SessionStart,
    /// The agent finished a turn: remember its last message.
    Stop,
    /// The agent session ends: record a run.
    SessionEnd,
}

impl Event {
    /// Every event, in the order a session sees them.
    pub const ALL: [Event; 3] = [Event::SessionStart, Event::Stop, Event::SessionEnd];

    /// The word on the installed command line (`session-start`, `stop`, `session-end`).
    pub fn word(self) -> &'static str {
        match self {
            Event::SessionStart => "session-start",
            Event::Stop => "stop",
            Event::SessionEnd => "session-end",
        }
    }

    /// The event named by [`Event::word`].
    pub fn from_word(word: &str) -> Option<Event> {
        Event::ALL.into_iter().find(|e| e.word() == word)
    }
}

/// How the agent's settings file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// JSON with Claude Code's hook shape (`hooks.<Event>: [{matcher?, hooks: [{type:
    /// "command", command, timeout}]}]`), shared by Gemini CLI; `comments`: the agent strips
    /// `//` and `/* */` comments before parsing (Gemini CLI), so a file with comments is valid
    /// and they are kept.
    Json {
        /// Whether comments are allowed.
        comments: bool,
    },
    /// TOML (Codex's `config.toml`, `[[hooks.<Event>]]` tables).
    Toml,
    /// A file pas-agent owns whole (GitHub Copilot CLI's `.github/hooks/pas-agent.json`, a pi
    /// extension): `template` with every `{command:<event>}` replaced by the installed command
    /// of that event (`session-start`, `stop`, `session-end`) as a JSON string literal, which
    /// is also a valid JavaScript string. The file is pas-agent's when it is the template with
    /// some commands of pas-agent's in those places; another file there is never touched.
    Owned {
        /// The file's text.
        template: &'static str,
    },
}

/// The unit of [`Hooks::timeout`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Seconds.
    Seconds,
    /// Milliseconds.
    Millis,
}

/// The names of the payload fields pas-agent reads (the payload is one JSON object on stdin).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Payload {
    /// The agent's session id (`session_id`; Copilot's own events: `sessionId`).
    pub session_id: &'static str,
    /// The path of the session's transcript file (`transcript_path`).
    pub transcript: &'static str,
    /// The directory the agent runs in (`cwd`).
    pub cwd: &'static str,
    /// The agent's last message, in the end-of-turn payload (`last_assistant_message`); empty
    /// when the agent's payloads carry none.
    pub last_message: &'static str,
}

/// Claude Code's payload fields, which Codex, Gemini CLI (but for the last message) and the
/// agents that copied Claude Code's hooks share.
pub const CLAUDE_PAYLOAD: Payload = Payload {
    session_id: "session_id",
    transcript: "transcript_path",
    cwd: "cwd",
    last_message: "last_assistant_message",
};

/// How a session-start hook hands the model extra context on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContextOutput {
    /// `{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":…}}`
    /// (Claude Code, Codex, Gemini CLI).
    HookSpecific,
    /// `{"additionalContext":…}` (GitHub Copilot CLI).
    TopLevel,
    /// The agent drops what a start hook prints: nothing is printed, the context file alone
    /// carries the session.
    Ignored,
}

/// One agent's lifecycle hooks, as pas-agent installs them.
#[derive(Debug, Clone, Copy)]
pub struct Hooks {
    /// The word on the command line (`pas-agent integrate claude`) and in the installed
    /// command (`pas-agent lifecycle claude stop`).
    pub key: &'static str,
    /// The project-level settings file, relative to the project root.
    pub project_file: &'static str,
    /// The user-level settings file, relative to the agent's home directory
    /// (`crate::agents::Agent::home`).
    pub user_file: &'static str,
    /// The settings file's format.
    pub format: Format,
    /// The agent's hook event names and what pas-agent does on each, in install order.
    pub events: &'static [(&'static str, Event)],
    /// The `timeout` put on each installed handler, in [`Hooks::unit`].
    pub timeout: u64,
    /// The `timeout` of the session-end handler instead, where the agent allows less there
    /// (Codex: at most 3 s); see [`Hooks::timeout_for`].
    pub end_timeout: Option<u64>,
    /// The unit the agent reads `timeout` in.
    pub unit: Unit,
    /// The payload's fields.
    pub payload: Payload,
    /// How the session-start hook gives the model the session.
    pub context: ContextOutput,
    /// Whether the agent may have read its context files by the time it runs its
    /// session-start hook (or reads them while it runs): a block the hook brings up to date
    /// there may then reach the model only at the next start, so the hook gives the current
    /// session itself, saying that it supersedes the older block. `false`: the agent reads
    /// them after the hook, and reads what the hook wrote.
    pub reads_files_first: bool,
    /// What the user must still do before the agent runs the hooks, if anything.
    pub caveat: Option<&'static str>,
    /// Where the agent records the user's approval of hooks, for an agent that asks for it.
    pub approvals: Option<&'static dyn Approvals>,
    /// Top-level settings written next to the hooks, and taken out with them (TOML settings
    /// files only): what the agent needs so that its hooks run when pas-agent needs them.
    pub settings: &'static [Setting],
    /// An environment variable the agent sets for every hook it runs and no other agent does
    /// (GitHub Copilot CLI's `COPILOT_PROJECT_DIR`). A hook installed for another agent that
    /// finds it set was run by this agent, which also runs other agents' hooks (Copilot runs
    /// Claude Code's in `.claude/settings.json`): it does nothing, so the session is never
    /// recorded as the other agent's.
    pub env_marker: Option<&'static str>,
}

/// One of pas-agent's handlers as found in an agent's settings file (what
/// `crate::integrate::settings::installed` reads), with its place there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    /// The agent's event name (`SessionStart`).
    pub event: &'static str,
    /// The index of its matcher group in the event's list, from 0.
    pub group: usize,
    /// The index of the handler in the group's list, from 0.
    pub handler: usize,
    /// The command line.
    pub command: String,
    /// The `timeout` written, if any (in [`Hooks::unit`]).
    pub timeout: Option<u64>,
    /// Whether the group and handler hold nothing but what pas-agent writes (`hooks`; `type`,
    /// `command`, `timeout`): an agent's fingerprint of the entry can then be computed.
    pub plain: bool,
}

/// What an agent's record of the user's approval says about pas-agent's handlers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approval {
    /// Whether the agent will run them: approved, unchanged since, and not turned off.
    pub approved: bool,
    /// What was found, for people (`Codex has not approved SessionStart, Stop`).
    pub detail: String,
    /// What the user does about it, when something is to be done.
    pub fix: Option<String>,
}

/// How an agent records that the user approved (trusted) the hooks in a settings file, for
/// agents that run new hooks only after that (Codex). `doctor` asks it.
pub trait Approvals: Sync {
    /// What the agent's records say about `found`, pas-agent's handlers in the settings file
    /// `settings`; `project`: the project's root for a project-level file, `None` for the
    /// user's own file. Reads only; never fails (what cannot be read is said in the detail).
    fn check(
        &self,
        settings: &std::path::Path,
        project: Option<&std::path::Path>,
        found: &[Installed],
    ) -> Vec<Approval>;
}

impl std::fmt::Debug for dyn Approvals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Approvals")
    }
}
impl Hooks {
    /// The `timeout` installed on the handler of `event`.
    pub fn timeout_for(&self, event: Event) -> u64 {
        match (event, self.end_timeout) {
            (Event::SessionEnd, Some(t)) => t,
            _ => self.timeout,
        }
    }
}

/// A top-level setting pas-agent writes into an agent's settings file with its hooks
/// ([`Hooks::settings`]). It is added only when the file does not set the key, with a comment
/// naming pas-agent, and removed with the hooks only when that comment is still there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setting {
    /// The key (`thread_unload_delay_secs`).
    pub key: &'static str,
    /// Its value.
    pub value: i64,
    /// Why, as the comment above it says.
    pub why: &'static str,
}

/// How pas-agent reads an agent's JSON settings: strict JSON, with `//` and `/* */` comments
/// when `comments` (Gemini CLI, Qwen Code, OpenCode and Kilo strip them; Qwen Code 0.15.10
/// refuses a trailing comma, checked), and nothing looser.
pub fn json_options(comments: bool) -> jsonc_parser::ParseOptions {
    jsonc_parser::ParseOptions {
        allow_comments: comments,
        allow_loose_object_property_names: false,
        allow_trailing_commas: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    }
}
