//! Goose (`goose`). Unverified: not on the registries reached here, so these facts follow its
//! documentation and may need updating.
//!
//! - **Context**: `.goosehints` (block.github.io/goose/docs/guides/using-goosehints).
//! - **Launch**: `goose session -r --session-id <id>`; sessions are named (`20251108_1`), not
//!   announced (block.github.io/goose/docs/guides/goose-cli-commands).

use super::{Agent, BASE, IdShape, Resume};

/// Goose's row.
pub const AGENT: Agent = Agent {
    id: "goose",
    name: "Goose",
    executables: &["goose"],
    context_file: ".goosehints",
    resume: Some(Resume {
        args: &["session", "--resume", "--session-id", "{id}"],
        subcommands: &[],
        after_subcommand: &[],
    }),
    id_shape: IdShape::DateSerial,
    ..BASE
};
