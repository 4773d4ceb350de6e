//! Aider (`aider`).
//!
//! - **Context**: aider loads no instruction file by itself; the convention is `--read <file>`
//!   (aider.chat/docs/usage/conventions.html; ruler, github.com/intellectronica/ruler, writes
//!   AGENTS.md and adds it to `read:`), so the launcher adds `--read AGENTS.md` (a file of
//!   the run's own when `AGENTS.md` is tracked by git). Started otherwise, it does not read
//!   AGENTS.md (checked: aider 0.86.2 against a mock model, the task text not in the request)
//!   unless `read: AGENTS.md` is in its `.aider.conf.yml`.
//! - **Launch**: no session ids: history is a per-repository Markdown file
//!   (aider.chat/docs/usage/commands.html).

use super::{Agent, BASE};

/// Aider's row.
pub const AGENT: Agent = Agent {
    id: "aider",
    name: "Aider",
    executables: &["aider"],
    context_file: "AGENTS.md",
    context_args: &["--read", "{context}"],
    ..BASE
};
