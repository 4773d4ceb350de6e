//! End-to-end tests: the real `pas-agent` binary in temporary git repositories, real shells
//! and real programs. One test binary, one module per area.

mod common;

mod commands;
mod docs;
mod export;
mod git;
mod hooks;
mod hooks_tmux;
mod run;
mod store;
