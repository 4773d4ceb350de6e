//! The table of known agents. A new agent is a new row here, not a new branch elsewhere.
//!
//! Sources (see `../shared/reference/agents.md` §1–2 for the full citations):
//! - Claude Code reads `CLAUDE.md` at the project root at startup ([CC-memory]); executable
//!   `claude` ([CC-cli]).
//! - Codex reads `AGENTS.md` from the git root down to the working directory ([CX-agentsmd]);
//!   executable `codex`.
//! - Gemini CLI reads `GEMINI.md` in the workspace and its parents ([GM-geminimd]); executable
//!   `gemini`.
//! - OpenCode reads `AGENTS.md` found walking up from the working directory ([OC-cli]);
//!   executable `opencode`.
//! - Cursor's CLI reads `AGENTS.md` at the root; its executable is `cursor-agent`, newer
//!   releases also install it as `agent` ([CU-devhints], [CU-changelog]).
//! - Kiro CLI ≥ 2.18 loads `AGENTS.md` from the workspace ([KI-sessions], [RS-ff]); executable
//!   `kiro-cli`.
//! - Antigravity reads root `AGENTS.md` since 1.20.3 and only the first 12,000 characters of a
//!   rules file ([AG-skly], [AG-promptscript]); its CLI is `agy`.
//!
//! The seven ids, their aliases and their files are those of the original PAS-Agent's
//! `export --to` (`pas-agent-format.md` §3), so every target it accepts is accepted here.

/// One agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Agent {
    /// Canonical id, stored in run records (`claude-code`, `codex`, …).
    pub id: &'static str,
    /// Human name.
    pub name: &'static str,
    /// Other names accepted wherever an agent is named (`claude`, `gemini`, …).
    pub aliases: &'static [&'static str],
    /// Executables to look for on `PATH`, in order.
    pub executables: &'static [&'static str],
    /// The context file the agent reads at startup, relative to the project root.
    pub context_file: &'static str,
    /// How many characters of a rules file the agent reads, where it is known to cut off.
    pub context_char_limit: Option<usize>,
}

/// Every known agent, in the order `--help` lists them.
pub const AGENTS: &[Agent] = &[
    Agent {
        id: "claude-code",
        name: "Claude Code",
        aliases: &["claude"],
        executables: &["claude"],
        context_file: "CLAUDE.md",
        context_char_limit: None,
    },
    Agent {
        id: "codex",
        name: "Codex",
        aliases: &[],
        executables: &["codex"],
        context_file: "AGENTS.md",
        context_char_limit: None,
    },
    Agent {
        id: "gemini-cli",
        name: "Gemini CLI",
        aliases: &["gemini"],
        executables: &["gemini"],
        context_file: "GEMINI.md",
        context_char_limit: None,
    },
    Agent {
        id: "opencode",
        name: "OpenCode",
        aliases: &[],
        executables: &["opencode"],
        context_file: "AGENTS.md",
        context_char_limit: None,
    },
    Agent {
        id: "cursor",
        name: "Cursor CLI",
        aliases: &[],
        executables: &["cursor-agent", "agent"],
        context_file: "AGENTS.md",
        context_char_limit: None,
    },
    Agent {
        id: "kiro-cli",
        name: "Kiro CLI",
        aliases: &["kiro"],
        executables: &["kiro-cli"],
        context_file: "AGENTS.md",
        context_char_limit: None,
    },
    Agent {
        id: "antigravity",
        name: "Antigravity",
        aliases: &["agy"],
        executables: &["agy"],
        context_file: "AGENTS.md",
        context_char_limit: Some(12_000),
    },
];

/// The agent whose id or alias is `name` (what `export --to` accepts).
pub fn by_name(name: &str) -> Option<&'static Agent> {
    AGENTS
        .iter()
        .find(|a| a.id == name || a.aliases.contains(&name))
}

/// The agent named by id, alias or executable name (what `run` accepts: `claude`,
/// `cursor-agent`, `agy` …).
pub fn lookup(name: &str) -> Option<&'static Agent> {
    by_name(name).or_else(|| AGENTS.iter().find(|a| a.executables.contains(&name)))
}

/// Every id and alias, for the command line's list of possible values.
pub fn names() -> Vec<&'static str> {
    AGENTS
        .iter()
        .flat_map(|a| std::iter::once(a.id).chain(a.aliases.iter().copied()))
        .collect()
}

/// Every executable name with a row in the table: the commands the shell hooks wrap.
pub fn executables() -> Vec<&'static str> {
    AGENTS
        .iter()
        .flat_map(|a| a.executables.iter().copied())
        .filter(|e| *e != "agent")
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn original_targets_and_aliases_resolve() {
        let want = [
            ("claude-code", "CLAUDE.md"),
            ("claude", "CLAUDE.md"),
            ("codex", "AGENTS.md"),
            ("opencode", "AGENTS.md"),
            ("cursor", "AGENTS.md"),
            ("kiro-cli", "AGENTS.md"),
            ("kiro", "AGENTS.md"),
            ("antigravity", "AGENTS.md"),
            ("agy", "AGENTS.md"),
            ("gemini-cli", "GEMINI.md"),
            ("gemini", "GEMINI.md"),
        ];
        for (name, file) in want {
            assert_eq!(by_name(name).unwrap().context_file, file, "{name}");
        }
        assert_eq!(lookup("cursor-agent").unwrap().id, "cursor");
        assert!(by_name("vim").is_none());
    }

    #[test]
    fn names_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for n in names() {
            assert!(seen.insert(n), "duplicate name {n}");
        }
    }
}
