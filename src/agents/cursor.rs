//! Cursor CLI (`cursor-agent`, newer releases also `agent`). Unverified: not installable from
//! the registries reached here, so these facts follow its documentation and may need updating.
//!
//! - **Context**: `AGENTS.md` at the root (cursor.com/docs/cli/changelog, devhints.io/cursor-cli).
//! - **Launch**: `--resume <chatId>` (devhints.io/cursor-cli). The id of a new chat is only
//!   known by creating it first (`agent create-chat`, github.com/coder/registry/issues/747);
//!   not done, since its behaviour could not be checked. Chat ids are UUIDs (same issue).

use super::{Agent, BASE, IdShape, RESUME_FLAG};

/// Cursor CLI's row.
pub const AGENT: Agent = Agent {
    id: "cursor",
    name: "Cursor CLI",
    executables: &["cursor-agent", "agent"],
    context_file: "AGENTS.md",
    resume: Some(RESUME_FLAG),
    id_shape: IdShape::Uuid,
    ..BASE
};
