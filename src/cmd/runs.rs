//! `pas-agent runs`: the agent runs recorded in this session.

use std::fmt::Write as _;

use serde::Serialize;

use super::{print_json, project};
use crate::cli::RunsArgs;
use crate::display::{duration, minute};
use crate::error::Result;
use crate::session::model::Run;
use crate::term::clean_line;

/// `runs --json`: `{"runs": [<run record as in session.json>, …]}`, oldest first.
#[derive(Serialize)]
struct RunsJson<'a> {
    runs: &'a [Run],
}

pub fn run(args: RunsArgs) -> Result<i32> {
    let project = project()?;
    let session = project.load()?;
    if args.json {
        print_json(&RunsJson {
            runs: &session.runs,
        })?;
        return Ok(0);
    }
    let mut out = String::new();
    if session.runs.is_empty() {
        out.push_str("No runs yet. Start an agent with `pas-agent run <agent>`, e.g. `pas-agent run codex`.\n");
        crate::term::print(&out)?;
        return Ok(0);
    }
    let _ = writeln!(
        out,
        "{:>3}  {:<20}  {:<12}  {:<9}  {:>6}  {:>8}  {:>7}  {:>5}",
        "#", "started", "agent", "state", "exit", "time", "commits", "files"
    );
    for (i, r) in session.runs.iter().enumerate() {
        let exit = match (r.exit_code, r.signal) {
            (Some(c), _) => c.to_string(),
            (None, Some(s)) => format!("sig{s}"),
            _ => "-".into(),
        };
        let _ = writeln!(
            out,
            "{:>3}  {:<20}  {:<12}  {:<9}  {:>6}  {:>8}  {:>7}  {:>5}",
            i + 1,
            minute(&r.started_at),
            clean_line(&r.agent),
            r.state.as_str(),
            exit,
            r.duration_ms.map_or("-".into(), duration),
            r.commits.len(),
            r.files_changed.len()
        );
    }
    crate::term::print(&out)?;
    Ok(0)
}
