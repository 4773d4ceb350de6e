//! End-to-end tests: the real `pas-agent` binary in temporary git repositories, real shells
//! and real programs. One test binary, one module per area.

mod common;

mod agents;
mod architecture;
mod commands;
mod conformance;
mod delivery;
mod docs;
mod ecosystem;
mod export;
mod exports;
mod field_kinds;
mod field_runs;
mod field_terminal;
mod freeze;
mod git;
mod handoff;
mod hooks;
mod hooks_tmux;
mod integrate;
mod launcher;
mod launcher_support;
mod mcp;
mod mock_model;
mod newcomer;
mod once;
mod perf;
mod prompt_record;
mod ptyfast;
mod ptyfloor;
mod resume;
mod run;
mod runs_history;
mod safety_fs;
mod safety_limits;
mod safety_text;
mod startup;
mod status1k;
mod store;
mod teams;
mod tool_mock;
mod trial;
mod words;
