#![warn(missing_docs)]
//! pas-agent keeps one portable record of a coding task — what it is, what is done and left,
//! decisions, blockers, git state, checkpoints and agent runs — in `.pas-agent/session.json`,
//! writes it into the context file each AI coding agent reads at startup, and launches agents
//! so that every switch is checkpointed before and recorded after.
//!
//! The core (everything but [`cli`] and [`cmd`]) knows nothing about the command line:
//! [`session`] is the model and store, [`git`] reads repository state, [`export`] renders and
//! splices the Markdown block, [`stale`] tells whether the last checkpoint is behind,
//! [`agents`] is the table of known agents, and [`launch`] runs them.

pub mod agents;
pub mod block;
pub mod cli;
pub mod cmd;
pub mod display;
pub mod error;
pub mod export;
pub mod fingerprint;
pub mod fsutil;
pub mod git;
pub mod hook;
pub mod integrate;
pub mod launch;
pub mod limits;
pub mod model;
pub mod session;
pub mod stale;
pub mod term;

pub use error::{Error, Result};
