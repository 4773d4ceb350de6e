//! `pas-agent integrate`: pas-agent in the agents' own lifecycle hooks, so that an agent
//! started any way (an IDE, a plain shell) gets the session as context when it starts and is
//! recorded as a run when it ends (docs/integrate.md).
//!
//! What each agent's hooks look like is its module's ([`crate::agents::hooks::Hooks`]): its
//! settings files, their format, and which of its hook events run which pas-agent event.
//! [`settings`] merges the entries into (or takes them out of) the agent's settings file,
//! keeping everything else byte for byte; [`lifecycle`] is what the installed command
//! (`pas-agent lifecycle <agent> <event>`) does when the agent runs it.

pub mod installs;
pub mod lifecycle;
pub mod settings;

use std::path::{Path, PathBuf};

use crate::agents::{self, Agent, hooks::Hooks};

pub use crate::agents::hooks::{Event, Format};

/// The name of the hidden subcommand the installed hooks run (`pas-agent lifecycle …`).
pub const SUBCOMMAND: &str = crate::launch::hooked::SUBCOMMAND;

/// One agent's lifecycle hooks, as pas-agent installs them: the agent and its hooks' facts.
#[derive(Debug, Clone, Copy)]
pub struct Integration {
    /// The agent.
    pub agent: &'static Agent,
    /// Its hooks.
    pub hooks: &'static Hooks,
}

impl Integration {
    /// The word on the command line (`pas-agent integrate claude`).
    pub fn key(&self) -> &'static str {
        self.hooks.key
    }

    /// The settings file for project root `root`, or the user's (`user`): the hooks' user file
    /// in the agent's home directory.
    ///
    /// Errors: with `user`, when neither the agent's variable nor `HOME` is set.
    pub fn settings_path(&self, root: &Path, user: bool) -> Result<PathBuf, String> {
        if !user {
            return Ok(root.join(self.hooks.project_file));
        }
        let home = self
            .agent
            .home
            .and_then(|h| h.path())
            .ok_or("HOME is not set, so the user's settings file cannot be found")?;
        Ok(home.join(self.hooks.user_file))
    }
}

/// The integration named `key` (`claude`) or by its agent's id or aliases (`claude-code`).
pub fn by_key(key: &str) -> Option<Integration> {
    agents::by_hook_key(key).map(|(agent, hooks)| Integration { agent, hooks })
}

/// Every agent pas-agent integrates with.
pub fn all() -> impl Iterator<Item = Integration> {
    agents::with_hooks().map(|(agent, hooks)| Integration { agent, hooks })
}

/// The agent that really ran a hook installed for `integration`, when it is another one: an
/// agent that runs other agents' hooks too (GitHub Copilot CLI runs Claude Code's) sets its
/// [`Hooks::env_marker`] for them, and the hook then belongs to that agent, not to the one it
/// was installed for.
pub fn run_by_another(integration: &Integration) -> Option<Integration> {
    all()
        .filter(|i| i.agent.id != integration.agent.id)
        .find(|i| {
            i.hooks
                .env_marker
                .is_some_and(|var| std::env::var_os(var).is_some_and(|v| !v.is_empty()))
        })
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
        integration.key(),
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
        && words[words.len() - 2] == integration.key()
        && words[words.len() - 1] == event.word()
}

/// Whether pas-agent's session-start hook for `integration` is in its settings file for the
/// project at `root` or in the user's: a command ending `lifecycle <key> session-start` is in
/// the file's text (a plain look, for saying how a run's agent gets the session; `doctor`
/// checks the entries in full).
pub fn start_hook_installed(integration: &Integration, root: &Path) -> bool {
    let needle = format!(
        "{SUBCOMMAND} {} {}",
        integration.key(),
        Event::SessionStart.word()
    );
    [false, true].into_iter().any(|user| {
        integration
            .settings_path(root, user)
            .ok()
            .and_then(|p| crate::fsutil::read_limited(&p, 1024 * 1024).ok().flatten())
            .is_some_and(|b| String::from_utf8_lossy(&b).contains(&needle))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_integration_has_each_event_once() {
        for i in all() {
            for e in Event::ALL {
                assert_eq!(i.hooks.events.iter().filter(|(_, x)| *x == e).count(), 1);
                assert_eq!(Event::from_word(e.word()), Some(e));
            }
        }
        assert_eq!(by_key("claude-code").unwrap().key(), "claude");
        assert_eq!(by_key("gemini").unwrap().agent.id, "gemini-cli");
        assert!(by_key("aider").is_none());
    }

    #[test]
    fn our_commands_are_recognised_whatever_the_path() {
        let claude = by_key("claude").unwrap();
        let c = command("'/opt/my tools/pas-agent'", &claude, Event::Stop);
        assert!(is_ours(&c, &claude, Event::Stop));
        assert!(!is_ours(&c, &claude, Event::SessionEnd));
        assert!(!is_ours("echo lifecycle claude stop", &claude, Event::Stop));
        assert!(!is_ours(&c, &by_key("codex").unwrap(), Event::Stop));
    }
}
