//! Amp (`amp`, npm `@ampcode/cli`). Unverified: it needs a login to ampcode.com, which cannot
//! be reached here, so these facts follow secondary documentation and may need updating.
//!
//! - **Context**: `AGENTS.md` (github.com/whit3rabbit/agent-config docs/agents/amp.md).
//! - **Launch**: `amp threads continue <T-…>`; thread ids are `T-` then a UUID and come from
//!   its service (`amp threads new`), so no id is learned (ralph-tui.com/docs/plugins/agents/
//!   ampcode, hex.pm amp_sdk guides/threads.md).

use super::{Agent, BASE, IdShape, Resume};

/// Amp's row.
pub const AGENT: Agent = Agent {
    id: "amp",
    name: "Amp",
    executables: &["amp"],
    context_file: "AGENTS.md",
    resume: Some(Resume {
        args: &["threads", "continue", "{id}"],
        subcommands: &[],
        after_subcommand: &[],
    }),
    id_shape: IdShape::PrefixedUuid("T-"),
    ..BASE
};
