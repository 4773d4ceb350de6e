//! GitHub Copilot CLI (`copilot`).
//!
//! - **Context**: `AGENTS.md` among others (docs.github.com/en/copilot/how-tos/copilot-cli/
//!   customize-copilot/add-custom-instructions): `CLAUDE.md`, `GEMINI.md`,
//!   `.github/copilot-instructions.md` and `.github/instructions/*.instructions.md` too, each
//!   sent (files with identical text once), `@path` imports followed (checked: copilot
//!   1.0.102 `-p` against a mock model, each file's text looked for in the request).
//! - **Launch**: `--session-id <id>` "Resume an existing session or task by ID, or set the UUID
//!   for a new session"; `-r/--resume [id]`, `--continue`, `--connect` (checked: copilot
//!   1.0.102 `--help`).

use super::{Agent, BASE, IdShape, RESUME_FLAG, SessionId};

/// GitHub Copilot CLI's row.
pub const AGENT: Agent = Agent {
    id: "copilot",
    name: "GitHub Copilot CLI",
    aliases: &["copilot-cli"],
    executables: &["copilot"],
    context_file: "AGENTS.md",
    also_reads: &[
        "CLAUDE.md",
        "GEMINI.md",
        ".github/copilot-instructions.md",
        ".github/instructions/*.instructions.md",
    ],
    at_imports: true,
    resume: Some(RESUME_FLAG),
    session_id: SessionId::Choose {
        flag: "--session-id",
        unless: &["--session-id", "-r", "--resume", "--continue", "--connect"],
    },
    id_shape: IdShape::Uuid,
    ..BASE
};
