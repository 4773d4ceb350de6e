//! Qwen Code (`qwen`, a Gemini CLI fork).
//!
//! - **Context**: `QWEN.md`, with `@path` imports as in Gemini CLI
//!   (github.com/whit3rabbit/agent-config docs/agents/qwen.md).
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
    at_imports: true,
    resume: Some(RESUME_FLAG),
    session_id: SessionId::Choose {
        flag: "--session-id",
        unless: &["--session-id", "-r", "--resume", "-c", "--continue"],
    },
    id_shape: IdShape::Uuid,
    ..BASE
};
