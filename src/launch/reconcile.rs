//! Closing the records of launchers that died (docs/launcher.md, "Runs that were cut short").
//!
//! A run is written as `running` before the agent starts. If its launcher is then killed
//! (SIGKILL, a crash, a power cut) nobody writes the after-record; the next pas-agent command
//! in the project finds the record, sees that the launcher is provably gone
//! ([`super::process::liveness`] says [`Liveness::Dead`]: the pid does not exist, or belongs to
//! another process) and marks the run `abandoned`, filling in what git still knows: HEAD after,
//! the commits since HEAD before, and the files changed since the start (from the baseline kept
//! in the record). The exit code, signal, end time and duration stay null: nobody saw the
//! agent end. The moment the record was closed is kept as `reconciled_at` (an additive field).
//! A launcher whose liveness is unknown is left alone.

use chrono::Utc;
use uuid::Uuid;

use super::outcome::{self, Pending};
use super::process::{Liveness, liveness};
use super::record::{self, GitOutcome};
use super::registry::Registry;
use crate::error::{Error, Result};
use crate::git;
use crate::model::{Run, RunState};
use crate::session::Project;

/// A run this module closed.
#[derive(Debug, Clone)]
pub struct Abandoned {
    /// 1-based position in `runs`.
    pub number: usize,
    /// The run's `agent`: canonical agent id or program name.
    pub agent: String,
    /// The pid of the launcher that is gone, when the record has one.
    pub launcher_pid: Option<u32>,
    /// The launcher had kept the outcome it could not save: the run was recorded as
    /// `finished` with it, not `abandoned`.
    pub late: bool,
}

fn is_dead(r: &Run) -> bool {
    r.state == RunState::Running
        && liveness(r.launcher_pid, r.launcher_started.as_deref()) == Liveness::Dead
}

/// Marks this project's runs whose launcher is gone as abandoned. Reads without a lock and
/// locks only when there is something to close; a run finished or closed meanwhile by someone
/// else (checked by id and nonce under the lock) is left as it is.
///
/// Errors: the session cannot be loaded or saved.
pub fn project(project: &Project) -> Result<Vec<Abandoned>> {
    if !may_have_dead_runs(project) {
        return Ok(Vec::new());
    }
    let session = project.load()?;
    let dead: Vec<&Run> = session.runs.iter().filter(|r| is_dead(r)).collect();
    if dead.is_empty() {
        return Ok(Vec::new());
    }
    let repo = git::for_root(&project.root);
    let outcomes: Vec<(Uuid, Option<String>, GitOutcome, Option<Pending>)> = dead
        .iter()
        .map(|r| {
            let baseline = r.baseline.clone().unwrap_or_default();
            let outcome = record::git_outcome(repo.as_ref(), r.head_before.as_deref(), &baseline);
            // The launcher saw the agent end but could not save it (a full disk).
            let pending = outcome::pending(&project.root, &r.id)
                .filter(|p| r.nonce.as_deref() == Some(p.nonce.as_str()));
            (r.id, r.nonce.clone(), outcome, pending)
        })
        .collect();
    let now = Utc::now();
    let closed = project.modify(|s| {
        let mut closed = Vec::new();
        for (id, nonce, outcome, pending) in &outcomes {
            let Some(index) = s
                .runs
                .iter()
                .position(|r| r.id == *id && r.nonce == *nonce && r.state == RunState::Running)
            else {
                continue;
            };
            let run = &mut s.runs[index];
            run.head_after = outcome.head_after.clone();
            run.commits = outcome.commits.clone();
            run.files_changed = outcome.files_changed.clone();
            crate::session::bound::bound_into(&mut run.files_changed, &mut run.extra);
            run.baseline = None;
            run.extra.insert(
                "reconciled_at".into(),
                serde_json::Value::String(now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
            );
            match pending {
                Some(p) => {
                    run.state = RunState::Finished;
                    run.ended_at = Some(p.ended_at);
                    run.duration_ms = Some(p.duration_ms);
                    run.exit_code = p.exit_code;
                    run.signal = p.signal;
                    run.extra.insert(
                        "outcome_recorded_late".into(),
                        serde_json::Value::String(p.reason.clone()),
                    );
                }
                None => run.state = RunState::Abandoned,
            }
            closed.push(Abandoned {
                number: index + 1,
                agent: run.agent.clone(),
                launcher_pid: run.launcher_pid,
                late: pending.is_some(),
            });
        }
        if !closed.is_empty() {
            s.updated_at = now;
        }
        Ok(closed)
    })?;
    let ids: Vec<Uuid> = outcomes.iter().map(|(id, _, _, _)| *id).collect();
    record::unregister(&ids);
    // Their launchers are gone: nobody needs their reserved space or kept outcome any more.
    for id in &ids {
        outcome::clear(&project.root, id);
    }
    Ok(closed)
}

/// The fields of a run that its liveness needs.
#[derive(serde::Deserialize)]
struct RunLiveness {
    #[serde(default)]
    state: Option<String>,
    #[serde(default)]
    launcher_pid: Option<u32>,
    #[serde(default)]
    launcher_started: Option<String>,
}

/// Only the runs of a session file, each with only what liveness needs.
#[derive(serde::Deserialize)]
struct RunsOnly {
    #[serde(default)]
    runs: Vec<RunLiveness>,
}

/// Whether any run may be running with its launcher gone, judged from the runs alone: every
/// command asks before it starts, so it must not pay for reading a large session twice. Reading
/// the whole session (and reporting what is wrong with it) is left to the full load; anything
/// unreadable here says "maybe".
fn may_have_dead_runs(project: &Project) -> bool {
    // A summary that matches the file holds every running run: no need to read the file.
    // It is kept for the command's own read of the summary (`status`), which then takes it.
    if let Some(dead) = crate::session::summary::with_fresh(project, |summary| {
        summary.session.runs.iter().any(|r| {
            r.state == RunState::Running
                && liveness(r.launcher_pid, r.launcher_started.as_deref()) == Liveness::Dead
        })
    }) {
        return dead;
    }
    let Ok(Some(bytes)) = crate::fsutil::read_limited(
        &project.session_path(),
        crate::session::store::MAX_SESSION_BYTES,
    ) else {
        return true;
    };
    match serde_json::from_slice::<RunsOnly>(&bytes) {
        Ok(view) => view.runs.iter().any(|r| {
            r.state.as_deref() == Some(RunState::Running.as_str())
                && liveness(r.launcher_pid, r.launcher_started.as_deref()) == Liveness::Dead
        }),
        Err(_) => true,
    }
}

/// Reconciles the project around `cwd`, if any, telling the user on stderr what was closed.
/// Every failure is a warning: reconciling must never stop the command the user asked for.
pub fn here(cwd: &std::path::Path) {
    let Some(found) = Project::find_opt(cwd) else {
        return;
    };
    // Agent sessions seen through their hooks whose run was not recorded when they ended.
    if super::hooked::any_over(&found)
        && let Err(e) = super::hooked::complete(&found, super::hooked::Turn::Skip)
    {
        crate::term::warn(&format!(
            "could not record the agent sessions that ended: {e}"
        ));
    }
    match project(&found) {
        Ok(closed) => report(&closed),
        // The command itself loads the session next and reports these, once.
        Err(
            Error::Damaged { .. }
            | Error::Unmerged { .. }
            | Error::Unsupported { .. }
            | Error::NoSession { .. }
            | Error::Locked { .. },
        ) => {}
        Err(e) => crate::term::warn(&format!("could not check for abandoned runs: {e}")),
    }
}

fn report(closed: &[Abandoned]) {
    for a in closed {
        let pid = a
            .launcher_pid
            .map_or_else(String::new, |p| format!(" (pid {p})"));
        if a.late {
            crate::term::note(&format!(
                "pas-agent: run #{} ({}) is now recorded as finished, with the outcome its launcher could not save at the time",
                a.number,
                crate::term::clean_line(&a.agent)
            ));
            continue;
        }
        crate::term::note(&format!(
            "pas-agent: run #{} ({}) was marked abandoned: its launcher{pid} ended without recording how the agent ended",
            a.number,
            crate::term::clean_line(&a.agent)
        ));
    }
}

/// Reconciles the machine-wide registry: every entry whose launcher is gone is removed (one
/// holding an outcome its project has not recorded yet stays), and its project (when it
/// still has a session) is reconciled too. Returns the entries whose launcher is not gone.
///
/// Errors: the registry cannot be read or written.
pub fn registry(reg: &Registry) -> Result<Vec<super::registry::Entry>> {
    let entries = reg.entries()?;
    let mut dead = Vec::new();
    let mut projects = std::collections::BTreeSet::new();
    let mut gone = Vec::new();
    for e in &entries {
        if e.liveness() == Liveness::Dead {
            gone.push(e.run_id);
            // An entry holding an outcome stays until its project has recorded it (the
            // project's reconcile removes it), unless the project is gone.
            if super::outcome::of_entry(e).is_none() || !Project::at(&e.project).has_session() {
                dead.push(e.run_id);
            }
            projects.insert(e.project.clone());
        }
    }
    for root in projects {
        let p = Project::at(root);
        if p.has_session() {
            match project(&p) {
                Ok(closed) => report(&closed),
                Err(e) => crate::term::warn(&format!(
                    "could not close the abandoned runs of {}: {e}",
                    crate::term::clean(&p.root.to_string_lossy())
                )),
            }
        }
    }
    reg.remove(&dead)?;
    Ok(entries
        .into_iter()
        .filter(|e| !gone.contains(&e.run_id))
        .collect())
}
