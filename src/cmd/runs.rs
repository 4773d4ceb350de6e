//! `pas-agent runs`: the agent runs recorded in this session.

use std::fmt::Write as _;

use serde::Serialize;

use super::{print_json, project};
use crate::cli::RunsArgs;
use crate::display::{ago, duration, minute};
use crate::error::Result;
use crate::launch::process::Liveness;
use crate::launch::reconcile;
use crate::launch::registry::{Entry, Registry};
use crate::session::model::{Run, RunState};
use crate::term::clean_line;

/// `runs --json`: `{"runs": [<run record as in session.json>, …]}`, oldest first.
#[derive(Serialize)]
struct RunsJson<'a> {
    runs: &'a [Run],
}

/// `runs --all --json`: `{"runs": [<registry entry>, …]}`, each entry as in the registry file
/// (see [`crate::launch::registry`]) plus `"state"`: `"running"` (its launcher is alive) or
/// `"unknown"` (it cannot be told, e.g. another host).
#[derive(Serialize)]
struct AllJson {
    runs: Vec<AllEntry>,
}

#[derive(Serialize)]
struct AllEntry {
    #[serde(flatten)]
    entry: Entry,
    state: &'static str,
}

fn all(args: &RunsArgs) -> Result<i32> {
    let reg = Registry::open()?;
    let live = reconcile::registry(&reg)?;
    let runs: Vec<AllEntry> = live
        .into_iter()
        .map(|entry| {
            let state = match entry.liveness() {
                Liveness::Alive => "running",
                _ => "unknown",
            };
            AllEntry { entry, state }
        })
        .collect();
    if args.json {
        print_json(&AllJson { runs })?;
        return Ok(0);
    }
    let mut out = String::new();
    if runs.is_empty() {
        out.push_str("No agent runs in progress on this machine.\n");
        crate::term::print(&out)?;
        return Ok(0);
    }
    let now = chrono::Utc::now();
    let _ = writeln!(
        out,
        "{:<12}  {:<8}  {:>8}  {:>8}  project",
        "agent", "state", "age", "pid"
    );
    for r in &runs {
        let _ = writeln!(
            out,
            "{:<12}  {:<8}  {:>8}  {:>8}  {}",
            clean_line(&r.entry.agent),
            r.state,
            ago(&r.entry.started_at, &now),
            r.entry.launcher_pid.map_or("-".into(), |p| p.to_string()),
            clean_line(&r.entry.project)
        );
    }
    crate::term::print(&out)?;
    Ok(0)
}

pub fn run(args: RunsArgs) -> Result<i32> {
    if args.all {
        return all(&args);
    }
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
        "{:>3}  {:<20}  {:<12}  {:<9}  {:>6}  {:>8}  {:>7}  {:>5}  session",
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
            "{:>3}  {:<20}  {:<12}  {:<9}  {:>6}  {:>8}  {:>7}  {:>5}  {}",
            i + 1,
            minute(&r.started_at),
            clean_line(&r.agent),
            r.state.as_str(),
            exit,
            r.duration_ms.map_or("-".into(), duration),
            counted(r, r.commits.len()),
            counted(r, r.files_changed.len()),
            r.agent_session_id.as_deref().map_or("-".into(), clean_line)
        );
    }
    crate::term::print(&out)?;
    Ok(0)
}

/// A count that is only known once the run is over: `-` while it is running.
fn counted(run: &Run, n: usize) -> String {
    if run.state == RunState::Running {
        "-".into()
    } else {
        n.to_string()
    }
}
