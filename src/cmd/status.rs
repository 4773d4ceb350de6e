//! `pas-agent status`: the whole session at a glance. Reads only: no lock, no write.

use std::fmt::Write as _;

use chrono::Utc;
use serde::Serialize;

use super::{git_line, live, print_json, project, task_head, task_lists};
use crate::cli::JsonArgs;
use crate::display::{ago, count, duration, minute};
use crate::error::Result;
use crate::git::Detail;
use crate::model::{FileState, GitRef, RunState, Session};
use crate::stale::{self, Stale};
use crate::term::{Out, clean, clean_line, style};

/// `status --json`: `{root, session_file, session, git, stale}` (docs/json.md).
#[derive(Serialize)]
struct StatusJson<'a> {
    root: String,
    session_file: String,
    session: &'a Session,
    git: Option<GitRef>,
    stale: Option<StaleJson>,
}

/// The stale report in JSON: from → to pairs, changed files as in a checkpoint, resolved paths.
#[derive(Serialize)]
pub(super) struct StaleJson {
    since: chrono::DateTime<Utc>,
    head: Option<Move>,
    branch: Option<Move>,
    changed: Vec<FileState>,
    resolved: Vec<String>,
    task_fields: Vec<&'static str>,
}

#[derive(Serialize)]
pub(super) struct Move {
    from: Option<String>,
    to: Option<String>,
}

impl From<&Stale> for StaleJson {
    fn from(s: &Stale) -> Self {
        let mv = |m: &Option<(Option<String>, Option<String>)>| {
            m.as_ref().map(|(from, to)| Move {
                from: from.clone(),
                to: to.clone(),
            })
        };
        StaleJson {
            since: s.since,
            head: mv(&s.head),
            branch: mv(&s.branch),
            changed: s.changed.clone(),
            resolved: s.resolved.clone(),
            task_fields: s.task_fields.clone(),
        }
    }
}

pub fn run(args: JsonArgs) -> Result<i32> {
    // One status, then exit: what it read is left to the exit (see `leak`).
    crate::fingerprint::cache::leave_to_exit();
    let project = project()?;
    // Text needs only the task, the latest checkpoint and the runs: the summary has them, at
    // a cost that does not grow with the history. JSON prints the whole session.
    let loaded = if args.json {
        Loaded::Full(project.load()?)
    } else {
        Loaded::Summary(crate::session::read::load(&project)?)
    };
    let (session, checkpoint_count, run_count) = loaded.parts();
    let detail = if session.checkpoints.is_empty() {
        Detail::Dirty
    } else {
        Detail::Files
    };
    let (repo, tree) = live(&project, detail);
    let stale = stale::check(session, tree.as_ref(), repo.as_ref());
    let git = tree.as_ref().map(|t| t.git_ref());
    if args.json {
        print_json(&StatusJson {
            root: project.root.to_string_lossy().into_owned(),
            session_file: project.session_path().to_string_lossy().into_owned(),
            session,
            git,
            stale: stale.as_ref().map(StaleJson::from),
        })?;
        leak((loaded, repo, tree));
        return Ok(0);
    }
    let mut out = String::new();
    let _ = writeln!(out, "Project:  {}", clean_line(&session.project_name));
    let _ = writeln!(out, "Session:  {}", session.id);
    let _ = writeln!(out, "Root:     {}", clean(&project.root.to_string_lossy()));
    let _ = writeln!(out, "Created:  {}", minute(&session.created_at));
    let _ = writeln!(out, "Updated:  {}", minute(&session.updated_at));
    out.push('\n');
    task_head(&session.task, &mut out);
    task_lists(&session.task, &mut out);
    out.push('\n');
    if let Some(git) = &git {
        let _ = writeln!(out, "Git:      {}", git_line(git));
    }
    match session.checkpoints.last() {
        None => {
            let _ = writeln!(
                out,
                "Checkpoints: none yet (`pas-agent checkpoint \"<message>\"`)"
            );
        }
        Some(last) => {
            let _ = writeln!(
                out,
                "Checkpoints: {} (latest {} — {})",
                checkpoint_count,
                minute(&last.timestamp),
                clean_line(&last.message)
            );
        }
    }
    let now = Utc::now();
    if let Some(last) = session
        .runs
        .iter()
        .rev()
        .find(|r| r.state != RunState::Running)
    {
        let mut line = format!(
            "Runs:     {} (latest finished: {} {}",
            run_count,
            clean_line(&last.agent),
            ago(&last.started_at, &now)
        );
        if let Some(ms) = last.duration_ms {
            let _ = write!(line, ", {}", duration(ms));
        }
        match (last.exit_code, last.signal, &last.state) {
            (_, _, RunState::Abandoned) => line.push_str(", abandoned"),
            (Some(c), _, _) => {
                let _ = write!(line, ", exit {c}");
            }
            (None, Some(s), _) => {
                let _ = write!(line, ", signal {s}");
            }
            _ => {}
        }
        if !last.commits.is_empty() {
            let _ = write!(line, ", {}", count(last.commits.len(), "commit", "commits"));
        }
        line.push(')');
        let _ = writeln!(out, "{line}");
    }
    // From here on, lines that want attention are coloured on a terminal.
    let mut out = {
        let mut o = Out::new();
        o.push_str(&out);
        o
    };
    for live_run in session.runs.iter().filter(|r| r.state == RunState::Running) {
        out.paint(style::LIVE, "Running:");
        let _ = writeln!(
            out,
            "  {} since {} (launcher pid {})",
            clean_line(&live_run.agent),
            minute(&live_run.started_at),
            live_run.launcher_pid.map_or("?".into(), |p| p.to_string())
        );
    }
    if let Some(size) = std::fs::metadata(project.session_path())
        .ok()
        .map(|m| m.len())
        .filter(|&n| n > crate::limits::SESSION_WARN_BYTES)
    {
        out.push('\n');
        out.paint(
            style::WARN,
            &format!(
                "⚠ session.json is {} KB: every change rewrites it, and at {} it is refused; `pas-agent prune` drops the file lists of old checkpoints ({})",
                size / 1024,
                crate::limits::human(crate::limits::SESSION.bytes),
                crate::display::TEAMS_URL
            ),
        );
        out.push('\n');
    }
    if let Some(stale) = &stale {
        out.push('\n');
        out.paint(style::WARN, &stale.headline());
        out.push('\n');
        for line in stale.details() {
            let _ = writeln!(out, "    {}", clean(&line));
        }
    }
    out.print()?;
    leak((loaded, repo, tree));
    Ok(0)
}

/// The session as `status` read it: whole (`--json`), or its summary.
enum Loaded {
    Full(Session),
    Summary(crate::session::summary::Summary),
}

impl Loaded {
    /// The session, its checkpoint count and its run count.
    fn parts(&self) -> (&Session, usize, usize) {
        match self {
            Loaded::Full(s) => (s, s.checkpoints.len(), s.runs.len()),
            Loaded::Summary(s) => (&s.session, s.checkpoint_count, s.run_count),
        }
    }
}

/// Leaves `what` to the process's exit instead of dropping it: freeing a repository handle, its
/// index and a session piece by piece costs a few percent of a small repository's `status`
/// (docs/performance-history.md). Only for what owns nothing but memory and descriptors: `status` holds no lock,
/// temporary file or unflushed buffer (it writes nothing but its output, printed before this;
/// the fingerprint cache is saved explicitly in `Repo::status`).
fn leak<T>(what: T) {
    std::mem::forget(what);
}
