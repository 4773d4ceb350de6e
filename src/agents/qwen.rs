//! Qwen Code (`qwen`, a Gemini CLI fork).
//!
//! - **Context**: `QWEN.md`, with `@path` imports as in Gemini CLI
//!   (github.com/whit3rabbit/agent-config docs/agents/qwen.md); `AGENTS.md` and
//!   `.qwen/rules/*.md` as well, each sent, identical text twice (checked: qwen 0.15.10
//!   against a mock model, each file's text looked for in the request).
//! - **Launch**: `--session-id` "Specify a session ID for this run", `-r/--resume <id>`,
//!   `-c/--continue` (checked: qwen 0.15.10 `--help`). Ids are UUIDs, as in Gemini CLI.

use super::{Agent, BASE, IdShape, RESUME_FLAG, SessionId};

/// Qwen Code's row.
pub const AGENT: Agent = Agent {
    id: "qwen-code",
    name: "Qwen Code",
    aliases: &["qwen"],
    executables: &["qwen"],
    context_file: "QWEN.md",
    also_reads: &["AGENTS.md", ".qwen/rules/*.md"],
    at_imports: true,
    resume: Some(RESUME_FLAG),
    session_id: SessionId::Choose {
        flag: "--session-id",
        unless: &["--session-id", "-r", "--resume", "-c", "--continue"],
    },
    id_shape: IdShape::Uuid,
    ..BASE
};
