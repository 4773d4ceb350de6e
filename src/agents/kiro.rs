//! Kiro CLI (`kiro-cli`). Unverified: not installable from the registries reached here, so
//! these facts follow its documentation and may need updating.
//!
//! - **Context**: `AGENTS.md` from the workspace, from 2.18 on
//!   (github.com/dyoshikawa/rulesync docs/reference/file-formats.md).
//! - **Launch**: `kiro-cli chat --resume-id <id>`; on exit it prints
//!   `kiro-cli chat --resume-id <ID>`, and ids are UUIDs
//!   (kiro.dev/docs/cli/chat/session-management).

use super::{Agent, BASE, IdShape, Resume, SessionId};

/// Kiro CLI's row.
pub const AGENT: Agent = Agent {
    id: "kiro-cli",
    name: "Kiro CLI",
    aliases: &["kiro"],
    executables: &["kiro-cli"],
    context_file: "AGENTS.md",
    resume: Some(Resume {
        args: &["chat", "--resume-id", "{id}"],
        subcommands: &[],
        after_subcommand: &[],
    }),
    session_id: SessionId::Printed {
        marker: "--resume-id ",
    },
    id_shape: IdShape::Uuid,
    ..BASE
};
