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
use crate::term::{Out, clean_line, style};
use unicode_width::UnicodeWidthStr;

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
    let agents: Vec<String> = runs.iter().map(|r| clean_line(&r.entry.agent)).collect();
    let agent_w = column_width("agent", &agents);
    let mut out = Out::new();
    let _ = write!(out, "{}  ", pad("agent", agent_w));
    let _ = writeln!(out, "{:<8}  {:>8}  {:>8}  project", "state", "age", "pid");
    for (r, agent) in runs.iter().zip(&agents) {
        let _ = write!(out, "{}  ", pad(agent, agent_w));
        let st = if r.state == "running" {
            style::LIVE
        } else {
            style::DIM
        };
        out.paint(st, &format!("{:<8}", r.state));
        let _ = writeln!(
            out,
            "  {:>8}  {:>8}  {}",
            ago(&r.entry.started_at, &now),
            r.entry.launcher_pid.map_or("-".into(), |p| p.to_string()),
            clean_line(&r.entry.project)
        );
    }
    out.print()?;
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
    // The agent column is as wide as the widest agent name (in terminal columns), so that
    // the columns after it line up whatever the names.
    let agents: Vec<String> = session.runs.iter().map(|r| clean_line(&r.agent)).collect();
    let agent_w = column_width("agent", &agents);
    let mut out = Out::new();
    let _ = writeln!(
        out,
        "{:>3}  {:<20}  {}  {:<9}  {:>6}  {:>8}  {:>7}  {:>5}  session",
        "#",
        "started",
        pad("agent", agent_w),
        "state",
        "exit",
        "time",
        "commits",
        "files"
    );
    for (i, (r, agent)) in session.runs.iter().zip(&agents).enumerate() {
        let exit = match (r.exit_code, r.signal) {
            (Some(c), _) => c.to_string(),
            (None, Some(s)) => format!("sig{s}"),
            _ => "-".into(),
        };
        let _ = write!(
            out,
            "{:>3}  {:<20}  {}  ",
            i + 1,
            minute(&r.started_at),
            pad(agent, agent_w),
        );
        out.paint(state_style(r), &format!("{:<9}", r.state.as_str()));
        let _ = writeln!(
            out,
            "  {:>6}  {:>8}  {:>7}  {:>5}  {}",
            exit,
            r.duration_ms.map_or("-".into(), duration),
            counted(r, r.commits.len()),
            counted(r, r.files_changed.len()),
            r.agent_session_id.as_deref().map_or("-".into(), clean_line)
        );
    }
    out.print()?;
    Ok(0)
}

/// The colour of a run's state: running cyan, a failure (non-zero exit, signal, abandoned)
/// red, a clean exit green.
fn state_style(run: &Run) -> anstyle::Style {
    match run.state {
        RunState::Running => style::LIVE,
        RunState::Abandoned => style::BAD,
        _ if run.exit_code == Some(0) => style::GOOD,
        _ if run.exit_code.is_some() || run.signal.is_some() => style::BAD,
        _ => anstyle::Style::new(),
    }
}

/// The agent column's narrowest width: the usual names fit, and the table keeps its layout.
const AGENT_MIN_WIDTH: usize = 12;

/// The width in terminal columns of a column headed `head` holding `cells`: the widest of
/// them, at least [`AGENT_MIN_WIDTH`].
fn column_width(head: &str, cells: &[String]) -> usize {
    cells
        .iter()
        .map(|c| UnicodeWidthStr::width(c.as_str()))
        .chain([head.len(), AGENT_MIN_WIDTH])
        .max()
        .unwrap_or(0)
}

/// `text` padded with spaces to `width` terminal columns (wide characters count two).
fn pad(text: &str, width: usize) -> String {
    let w = UnicodeWidthStr::width(text);
    format!("{text}{}", " ".repeat(width.saturating_sub(w)))
}

/// A count that is only known once the run is over: `-` while it is running.
fn counted(run: &Run, n: usize) -> String {
    if run.state == RunState::Running {
        "-".into()
    } else {
        n.to_string()
    }
}
