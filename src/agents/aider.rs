//! Aider (`aider`).
//!
//! - **Context**: aider loads no instruction file by itself; the convention is `--read <file>`
//!   (aider.chat/docs/usage/conventions.html; ruler, github.com/intellectronica/ruler, writes
//!   AGENTS.md and adds it to `read:`), so the launcher adds `--read AGENTS.md`.
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
