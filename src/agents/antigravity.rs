//! Antigravity (its CLI is `agy`). Unverified: not installable from the registries reached
//! here, so these facts follow secondary documentation and may need updating.
//!
//! - **Context**: root `AGENTS.md` since 1.20.3, and only the first 12,000 characters of a
//!   rules file (skly.ai/docs/rules/antigravity, getpromptscript.dev/v1.11/reference/
//!   formatters/antigravity); its CLI is `agy` (hermes-agent.nousresearch.com, antigravity-cli).
//! - **Launch**: no documented resume flag or session id (docs.specstory.com/integrations/
//!   antigravity-cli only shows a `brain/<id>` store).

use super::{Agent, BASE, LimitUnit, ReadLimit};

/// Antigravity's row.
pub const AGENT: Agent = Agent {
    id: "antigravity",
    name: "Antigravity",
    aliases: &["agy"],
    executables: &["agy"],
    context_file: "AGENTS.md",
    read_limit: Some(ReadLimit {
        amount: 12_000,
        unit: LimitUnit::Chars,
    }),
    ..BASE
};
