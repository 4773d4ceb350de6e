//! `pas-agent integrate`: pas-agent in the agents' own lifecycle hooks, so that an agent
//! started any way (an IDE, a plain shell) gets the session as context when it starts and is
//! recorded as a run when it ends (SPEC §9, docs/integrate.md).
//!
//! [`INTEGRATIONS`] is the table: per agent, its settings files, their format, and which of its
//! hook events run which pas-agent event. [`settings`] merges the entries into (or takes them
//! out of) the agent's settings file, keeping everything else byte for byte; [`lifecycle`] is
//! what the installed command (`pas-agent lifecycle <agent> <event>`) does when the agent runs it.

pub mod lifecycle;
pub mod settings;

use std::path::{Path, PathBuf};

use crate::agents::{self, Agent};

/// The name of the hidden subcommand the installed hooks run (`pas-agent lifecycle …`).
pub const SUBCOMMAND: &str = "lifecycle";

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
        [Event::SessionStart, Event::Stop, Event::SessionEnd]
            .into_iter()
            .find(|e| e.word() == word)
    }
}

/// How the agent's settings file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// JSON; `comments`: the agent strips `//` and `/* */` comments before parsing (Gemini CLI),
    /// so a file with comments is valid and they are kept.
    Json {
        /// Whether comments are allowed.
        comments: bool,
    },
    /// TOML (Codex's `config.toml`, `[[hooks.<Event>]]` tables).
    Toml,
}

/// Where the agent's user-level settings live: `env` names a directory that replaces
/// `home_dir` (relative to `$HOME`) when set; `file` is relative to that directory.
#[derive(Debug, Clone, Copy)]
pub struct UserFile {
    /// Environment variable naming the agent's configuration directory, if the agent has one.
    pub env: Option<&'static str>,
    /// The configuration directory relative to `$HOME`.
    pub home_dir: &'static str,
    /// The settings file inside it.
    pub file: &'static str,
}

/// One agent's lifecycle hooks, as pas-agent installs them.
#[derive(Debug)]
pub struct Integration {
    /// The word on the command line (`pas-agent integrate claude`).
    pub key: &'static str,
    /// Canonical agent id from [`agents::AGENTS`], recorded in the run.
    pub agent_id: &'static str,
    /// The project-level settings file, relative to the project root.
    pub project_file: &'static str,
    /// The user-level settings file.
    pub user_file: UserFile,
    /// The settings file's format.
    pub format: Format,
    /// The agent's hook event names and what pas-agent does on each, in install order.
    pub events: &'static [(&'static str, Event)],
    /// The `timeout` put on each installed handler, in the agent's unit: long enough for the
    /// session-end record on a large repository (Claude Code gives session-end hooks 1.5 s
    /// unless a handler asks for more, up to 60 s).
    pub timeout: u64,
    /// Name of the field of the end-of-turn payload that holds the agent's last message.
    pub last_message_field: &'static str,
    /// What the user must still do before the agent runs the hooks, if anything.
    pub caveat: Option<&'static str>,
}

impl Integration {
    /// The agent's row.
    pub fn agent(&self) -> &'static Agent {
        agents::by_name(self.agent_id).expect("every integration names a known agent")
    }

    /// The settings file for project root `root`, or the user's (`user`).
    ///
    /// Errors: with `user`, when neither the agent's variable nor `HOME` is set.
    pub fn settings_path(&self, root: &Path, user: bool) -> Result<PathBuf, String> {
        if !user {
            return Ok(root.join(self.project_file));
        }
        let u = self.user_file;
        if let Some(dir) = u.env.and_then(std::env::var_os).filter(|v| !v.is_empty()) {
            return Ok(PathBuf::from(dir).join(u.file));
        }
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .ok_or("HOME is not set, so the user's settings file cannot be found")?;
        Ok(PathBuf::from(home).join(u.home_dir).join(u.file))
    }
}

/// The agents pas-agent integrates with. Facts checked against the installed CLIs (Claude Code
/// 2.1.197, Codex 0.171.0, Gemini CLI 0.61.0) with tests/e2e/integrate.rs: each runs the
/// session-start, end-of-turn and session-end hooks in non-interactive mode too, passes a JSON
/// payload with `session_id`, `transcript_path` and `cwd` on stdin, and adds a session-start
/// hook's `hookSpecificOutput.additionalContext` to the model's context.
pub const INTEGRATIONS: &[Integration] = &[
    Integration {
        key: "claude",
        agent_id: "claude-code",
        project_file: ".claude/settings.json",
        user_file: UserFile {
            env: Some("CLAUDE_CONFIG_DIR"),
            home_dir: ".claude",
            file: "settings.json",
        },
        format: Format::Json { comments: false },
        events: &[
            ("SessionStart", Event::SessionStart),
            ("Stop", Event::Stop),
            ("SessionEnd", Event::SessionEnd),
        ],
        // Seconds.
        timeout: 30,
        last_message_field: "last_assistant_message",
        caveat: None,
    },
    Integration {
        key: "codex",
        agent_id: "codex",
        project_file: ".codex/config.toml",
        user_file: UserFile {
            env: Some("CODEX_HOME"),
            home_dir: ".codex",
            file: "config.toml",
        },
        format: Format::Toml,
        events: &[
            ("SessionStart", Event::SessionStart),
            ("Stop", Event::Stop),
            ("SessionEnd", Event::SessionEnd),
        ],
        // Seconds.
        timeout: 30,
        last_message_field: "last_assistant_message",
        caveat: Some(
            "Codex runs new hooks only after you review and trust them: start `codex` and approve them in `/hooks`. It reads a project's .codex/config.toml only when the project is trusted.",
        ),
    },
    Integration {
        key: "gemini",
        agent_id: "gemini-cli",
        project_file: ".gemini/settings.json",
        user_file: UserFile {
            env: None,
            home_dir: ".gemini",
            file: "settings.json",
        },
        format: Format::Json { comments: true },
        events: &[
            ("SessionStart", Event::SessionStart),
            ("AfterAgent", Event::Stop),
            ("SessionEnd", Event::SessionEnd),
        ],
        // Milliseconds.
        timeout: 30_000,
        last_message_field: "prompt_response",
        caveat: None,
    },
];

/// The integration named `key` (`claude`) or by its agent's id or aliases (`claude-code`).
pub fn by_key(key: &str) -> Option<&'static Integration> {
    INTEGRATIONS.iter().find(|i| i.key == key).or_else(|| {
        let agent = agents::by_name(key)?;
        INTEGRATIONS.iter().find(|i| i.agent_id == agent.id)
    })
}

/// The keys of [`INTEGRATIONS`], for the command line.
pub fn keys() -> Vec<&'static str> {
    INTEGRATIONS.iter().map(|i| i.key).collect()
}

/// The program part of the installed command: `pas-agent` when the `pas-agent` found on
/// `PATH` is this executable, else this executable's absolute path, quoted for `sh`.
pub fn program() -> String {
    let me = std::env::current_exe().ok();
    let me_real = me.as_ref().and_then(|p| p.canonicalize().ok());
    let on_path = which::which("pas-agent")
        .ok()
        .and_then(|p| p.canonicalize().ok());
    if me_real.is_some() && on_path == me_real {
        return "pas-agent".into();
    }
    match me {
        Some(p) => {
            let s = p.to_string_lossy();
            if s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"/._-+".contains(&b))
            {
                s.into_owned()
            } else {
                crate::hook::quote_posix(&s)
            }
        }
        None => "pas-agent".into(),
    }
}

/// The command installed for `event` of `integration`.
pub fn command(program: &str, integration: &Integration, event: Event) -> String {
    format!(
        "{program} {SUBCOMMAND} {} {}",
        integration.key,
        event.word()
    )
}

/// Whether `command` is one pas-agent installed for `event` of `integration` (whatever the
/// program's path): it ends with `lifecycle <key> <event>` and names pas-agent.
pub fn is_ours(command: &str, integration: &Integration, event: Event) -> bool {
    let words: Vec<&str> = command.split_whitespace().collect();
    words.len() >= 4
        && command.contains("pas-agent")
        && words[words.len() - 3] == SUBCOMMAND
        && words[words.len() - 2] == integration.key
        && words[words.len() - 1] == event.word()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_integration_names_a_known_agent_and_each_event_once() {
        for i in INTEGRATIONS {
            assert_eq!(i.agent().id, i.agent_id);
            for e in [Event::SessionStart, Event::Stop, Event::SessionEnd] {
                assert_eq!(i.events.iter().filter(|(_, x)| *x == e).count(), 1);
                assert_eq!(Event::from_word(e.word()), Some(e));
            }
        }
        assert_eq!(by_key("claude-code").unwrap().key, "claude");
        assert_eq!(by_key("gemini").unwrap().agent_id, "gemini-cli");
        assert!(by_key("aider").is_none());
    }

    #[test]
    fn our_commands_are_recognised_whatever_the_path() {
        let claude = by_key("claude").unwrap();
        let c = command("'/opt/my tools/pas-agent'", claude, Event::Stop);
        assert!(is_ours(&c, claude, Event::Stop));
        assert!(!is_ours(&c, claude, Event::SessionEnd));
        assert!(!is_ours("echo lifecycle claude stop", claude, Event::Stop));
        assert!(!is_ours(&c, by_key("codex").unwrap(), Event::Stop));
    }
}
