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
//!
//! An abandoned run's agent session id, when it was not known at the start, is looked for in
//! the agent's store (a session of the run's directory that started during the run and that no
//! other run claims, when no other run of the agent there could own it); and the run's entry in
//! the machine-wide registry becomes `frozen` (cause `crash`) when its session id is known, so
//! that `pas-agent restore` can bring it back after a crash or a reboot, or is removed when it
//! is not (docs/freeze.md, "After a crash"). The registry's own reconcile ([`registry`]) also
//! settles entries whose freeze or restore was cut short: only once the coordinator holding
//! the lease is provably gone and the lease is older than
//! [`super::registry::LEASE_GRACE`], and only on what can be seen.

use chrono::Utc;
use uuid::Uuid;

use super::delta::GitOutcome;
use super::outcome::{self, Pending};
use super::process::{Liveness, liveness};
use super::record;
use super::registry::{Entry, Frozen, Registry, State};
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
    let now = Utc::now();
    let outcomes: Vec<Closing> = dead
        .iter()
        .map(|r| {
            // A run launched without a scan before it has no baseline: its files are those
            // that changed since it started.
            let outcome = match &r.baseline {
                Some(baseline) => {
                    super::record::git_outcome(repo.as_ref(), r.head_before.as_deref(), baseline)
                }
                None => super::record::git_outcome_since(
                    repo.as_ref(),
                    r.head_before.as_deref(),
                    record::files_since(r),
                    now,
                ),
            };
            // The launcher saw the agent end but could not save it (a full disk).
            let pending = outcome::pending(&project.root, &r.id)
                .filter(|p| r.nonce.as_deref() == Some(p.nonce.as_str()));
            // Whether the agent was started before the launcher was lost: its reserve says.
            let started = outcome::agent_started(&project.root, &r.id);
            // A run whose agent never started has no session to find.
            let never_started = started.is_none() && record::agent_started_at(r) == Some(None);
            let learned = match (&r.agent_session_id, &pending) {
                (None, None) if !never_started => learn_session(r, &session.runs, now),
                _ => None,
            };
            (r.id, r.nonce.clone(), outcome, pending, started, learned)
        })
        .collect();
    let closed = project.modify(|s| {
        let mut closed = Vec::new();
        for (id, nonce, outcome, pending, started, learned) in &outcomes {
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
            run.extra.remove(record::FILES_SINCE_KEY);
            if let Some(at) = started
                && !matches!(record::agent_started_at(run), Some(Some(_)))
            {
                run.extra
                    .insert(record::AGENT_STARTED_KEY.into(), record::started_value(*at));
            }
            if run.agent_session_id.is_none()
                && let Some(learned) = learned
            {
                run.agent_session_id = Some(learned.clone());
                run.extra.insert(
                    LEARNED_KEY.into(),
                    serde_json::Value::String(
                        "found in the agent's store after its launcher was gone".into(),
                    ),
                );
            }
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
            closed.push((
                Abandoned {
                    number: index + 1,
                    agent: run.agent.clone(),
                    launcher_pid: run.launcher_pid,
                    late: pending.is_some(),
                },
                (
                    *id,
                    nonce.clone(),
                    run.agent_session_id.clone(),
                    // A run whose agent never started has no conversation to restore.
                    pending.is_none() && record::agent_started_at(run) != Some(None),
                ),
            ));
        }
        if !closed.is_empty() {
            s.updated_at = now;
        }
        Ok(closed)
    })?;
    let (closed, settled): (Vec<Abandoned>, Vec<Dead>) = closed.into_iter().unzip();
    // The runs closed by another command meanwhile settled their entries there.
    match Registry::open() {
        Ok(reg) => {
            if let Err(e) = settle_dead(&reg, &settled) {
                crate::term::warn(&format!(
                    "could not update the machine-wide run registry: {e}"
                ));
            }
        }
        Err(e) => crate::term::warn(&format!(
            "could not update the machine-wide run registry: {e}"
        )),
    }
    // Their launchers are gone: nobody needs their reserved space or kept outcome any more.
    for (id, ..) in &outcomes {
        outcome::clear(&project.root, id);
    }
    Ok(closed)
}

/// What closing a dead run needs: its id and nonce, what git says, an outcome its launcher
/// kept, when its reserve says the agent was started, and a session id found in the agent's
/// store.
type Closing = (
    Uuid,
    Option<String>,
    GitOutcome,
    Option<Pending>,
    Option<chrono::DateTime<Utc>>,
    Option<String>,
);

/// A run whose launcher is gone: its id, nonce, agent session id (if known), and whether it
/// was cut short with its agent started (`false`: its launcher saw the agent end and kept the
/// outcome, or the agent never started: there is nothing to restore).
type Dead = (Uuid, Option<String>, Option<String>, bool);

/// The run record's key saying its agent session id was learned after its launcher was gone.
pub const LEARNED_KEY: &str = "agent_session_learned";

/// The agent session id of the abandoned run `run`, from the agent's store: a session of its
/// directory that started during the run (until `now`), claimed by no other run of `runs`,
/// when no other run of the agent in that directory overlapped it without a session id.
fn learn_session(run: &Run, runs: &[Run], now: chrono::DateTime<Utc>) -> Option<String> {
    let agent = crate::agents::by_name(&run.agent)?;
    agent.store?;
    let claimed: Vec<String> = runs
        .iter()
        .filter(|r| r.id != run.id)
        .filter_map(|r| r.agent_session_id.clone())
        .collect();
    let unresolved = runs.iter().any(|r| {
        r.id != run.id
            && r.agent == run.agent
            && r.cwd == run.cwd
            && r.agent_session_id.is_none()
            && r.started_at <= now
            && r.ended_at.is_none_or(|e| e >= run.started_at)
    });
    let cwd = std::path::Path::new(&run.cwd);
    let program = super::resolve(agent.short_name(), cwd)
        .ok()
        .map(|p| p.path)
        .unwrap_or_else(|| std::path::PathBuf::from(agent.short_name()));
    let facts = super::session_id::RunFacts {
        agent,
        program: &program,
        cwd,
        started: run.started_at,
        ended: now,
        chosen: None,
        capture_txt: None,
        taken: &claimed,
        held: &[],
    };
    let found = super::session_id::from_store(&facts);
    super::session_id::choose(&found, &claimed, unresolved, agent.name).0
}

/// Settles the registry entries of runs whose launcher is gone, in one guarded write: an entry
/// still `live` under the same nonce becomes `frozen` (cause `crash`) when its agent session
/// id is known (given here, or recorded in the entry), and is removed otherwise; every other
/// entry is left as it is.
///
/// Errors: the registry cannot be read or written.
fn settle_dead(reg: &Registry, dead: &[Dead]) -> Result<()> {
    if dead.is_empty() {
        return Ok(());
    }
    let now = Utc::now();
    reg.apply(true, |entries| {
        let mut changed = false;
        entries.retain_mut(|e| {
            let Some((_, _, id, cut_short)) = dead
                .iter()
                .find(|(run, nonce, _, _)| *run == e.run_id && *nonce == e.nonce)
            else {
                return true;
            };
            if e.state != State::Live || e.liveness() != Liveness::Dead {
                return true;
            }
            changed = true;
            if !cut_short {
                return false;
            }
            let agent = crate::agents::by_name(&e.agent);
            let id = id
                .clone()
                .or_else(|| e.agent_session_id.clone())
                .filter(|id| agent.is_some_and(|a| a.id_shape.accepts(id) && a.resume.is_some()));
            let Some(id) = id else {
                return false;
            };
            let args = e
                .args
                .clone()
                .unwrap_or_else(|| e.argv.iter().skip(1).cloned().collect());
            e.state = State::Frozen;
            e.agent_session_id = Some(id);
            e.frozen = Some(Frozen {
                at: now,
                cause: "crash".into(),
                args: agent.map_or(args.clone(), |a| a.arg_shape.for_restore(&args)),
                capture: None,
            });
            true
        });
        if changed { Ok(()) } else { Err(()) }
    })?
    .ok();
    Ok(())
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

/// Reconciles the machine-wide registry. Entries whose launcher is gone are settled through
/// their project (its runs closed as abandoned, their entries made `frozen` when their session
/// is known, see [`project`]); an entry holding an outcome its project has not recorded stays
/// until it has. When the project is gone (no session), the entry is settled from what it
/// holds itself; when the project cannot be read now, it is left for later (never on a
/// partial view). Then the entries whose freeze or restore was cut short are settled
/// ([`settle_leases`]). Returns the entries left, but for live ones whose launcher is gone.
///
/// Errors: the registry cannot be read or written.
pub fn registry(reg: &Registry) -> Result<Vec<Entry>> {
    let entries = reg.entries()?;
    let dead = |e: &Entry| e.state == State::Live && e.liveness() == Liveness::Dead;
    let mut projects = std::collections::BTreeSet::new();
    for e in entries.iter().filter(|e| dead(e)) {
        projects.insert(e.project.clone());
    }
    let mut gone_projects = Vec::new();
    for root in projects {
        let p = Project::at(&root);
        if !p.has_session() {
            gone_projects.push(root);
            continue;
        }
        match project(&p) {
            Ok(closed) => report(&closed),
            Err(e) => crate::term::warn(&format!(
                "could not close the abandoned runs of {}: {e}",
                crate::term::clean(&p.root.to_string_lossy())
            )),
        }
    }
    // Entries of projects that are gone: settled from what they hold.
    let left: Vec<Dead> = reg
        .entries()?
        .into_iter()
        .filter(|e| dead(e) && gone_projects.contains(&e.project))
        .map(|e| {
            let cut_short = super::outcome::of_entry(&e).is_none();
            (
                e.run_id,
                e.nonce.clone(),
                e.agent_session_id.clone(),
                cut_short,
            )
        })
        .collect();
    settle_dead(reg, &left)?;
    settle_leases(reg)?;
    Ok(reg.entries()?.into_iter().filter(|e| !dead(e)).collect())
}

/// Settles entries left `freezing`, `restoring` or `aborting` by a coordinator that is gone
/// (its lease no longer held, [`super::registry::Lease::held`]), each by one guarded
/// transition that applies only if the lease is still the one seen:
/// - `freezing`: back to `live` while its launcher runs; once the launcher is gone, `frozen`
///   when its session id is known (in the entry or its run record), else removed;
/// - `restoring`: removed when a launcher has taken its place (an entry says it restores it),
///   else back to `frozen`, with why;
/// - `aborting`: back to `frozen`.
///
/// A launcher whose liveness cannot be told leaves a `freezing` entry alone.
///
/// Errors: the registry cannot be read or written.
pub fn settle_leases(reg: &Registry) -> Result<()> {
    let entries = reg.entries()?;
    let now = Utc::now();
    for e in &entries {
        let Some(lease) = e.lease.clone() else {
            continue;
        };
        if !e.state.transitional() || lease.held(now) {
            continue;
        }
        let restored = entries.iter().any(|o| o.restored_from == Some(e.run_id));
        let recorded = (e.state == State::Freezing && e.liveness() == Liveness::Dead)
            .then(|| super::freeze::run_record(e))
            .flatten();
        let launcher = e.liveness();
        reg.apply(true, |runs| {
            let at = runs
                .iter()
                .position(|r| r.run_id == e.run_id && r.lease.as_ref() == Some(&lease))
                .ok_or(())?;
            let r = &mut runs[at];
            match r.state {
                State::Freezing if launcher == Liveness::Alive => {
                    r.state = State::Live;
                    r.lease = None;
                }
                State::Freezing if launcher == Liveness::Dead => {
                    let agent = crate::agents::by_name(&r.agent);
                    let id = r
                        .agent_session_id
                        .clone()
                        .or_else(|| {
                            recorded
                                .as_ref()
                                .and_then(|(_, run)| run.agent_session_id.clone())
                        })
                        .filter(|id| agent.is_some_and(|a| a.id_shape.accepts(id)));
                    match id {
                        Some(id) => {
                            let args = r
                                .args
                                .clone()
                                .unwrap_or_else(|| r.argv.iter().skip(1).cloned().collect());
                            r.state = State::Frozen;
                            r.lease = None;
                            r.agent_session_id = Some(id);
                            r.frozen = Some(Frozen {
                                at: now,
                                cause: "freeze".into(),
                                args: agent
                                    .map_or(args.clone(), |a| a.arg_shape.for_restore(&args)),
                                capture: None,
                            });
                        }
                        None => {
                            runs.remove(at);
                        }
                    }
                }
                State::Restoring if restored => {
                    runs.remove(at);
                }
                State::Restoring | State::Aborting => {
                    if r.state == State::Restoring {
                        r.last_error = Some(format!(
                            "the pas-agent that was restoring it (pid {}) ended before it was done",
                            lease.pid
                        ));
                    }
                    r.state = State::Frozen;
                    r.lease = None;
                }
                _ => return Err(()),
            }
            Ok(())
        })?
        .ok();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launch::registry::Lease;
    use crate::model::Extra;

    /// A pid that provably ran and is gone now.
    fn dead_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    }

    fn entry(state: State, lease: Option<Lease>, launcher: u32) -> Entry {
        Entry {
            run_id: Uuid::new_v4(),
            project: "/nowhere".into(),
            session_id: Uuid::new_v4(),
            agent: "claude-code".into(),
            argv: vec!["claude".into()],
            cwd: "/".into(),
            started_at: Utc::now(),
            launcher_pid: Some(launcher),
            launcher_started: super::super::process::start_token(launcher)
                .or_else(super::super::process::own_start_token),
            nonce: Some("n".into()),
            state,
            lease,
            agent_session_id: Some("3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b".into()),
            args: None,
            options: Vec::new(),
            terminal: None,
            tmux: None,
            frozen: None,
            restored_from: None,
            restore: None,
            restore_ack: None,
            last_error: None,
            extra: Extra::new(),
        }
    }

    fn lease(pid: u32, age_secs: i64) -> Lease {
        Lease {
            nonce: Uuid::new_v4().simple().to_string(),
            pid,
            started: super::super::process::start_token(pid)
                .or_else(super::super::process::own_start_token),
            at: Utc::now() - chrono::Duration::seconds(age_secs),
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_lease_is_settled_only_once_its_holder_is_gone_and_it_is_old() {
        let tmp = tempfile::tempdir().unwrap();
        let reg = Registry {
            dir: tmp.path().join("state"),
        };
        let me = std::process::id();
        let gone = dead_pid();
        let cases = [
            // (state, lease holder, lease age, launcher) → expected state, or None: removed.
            (State::Restoring, gone, 120, gone, Some(State::Frozen)),
            (State::Restoring, gone, 5, gone, Some(State::Restoring)),
            (State::Restoring, me, 120, gone, Some(State::Restoring)),
            (State::Aborting, gone, 120, gone, Some(State::Frozen)),
            (State::Freezing, gone, 120, me, Some(State::Live)),
            (State::Freezing, gone, 120, gone, Some(State::Frozen)),
        ];
        let mut ids = Vec::new();
        for (state, holder, age, launcher, _) in &cases {
            let e = entry(state.clone(), Some(lease(*holder, *age)), *launcher);
            ids.push(e.run_id);
            reg.add(e).unwrap();
        }
        // A freezing entry with no session id anywhere and its launcher gone: nothing to keep.
        let mut lost = entry(State::Freezing, Some(lease(gone, 120)), gone);
        lost.agent_session_id = None;
        reg.add(lost.clone()).unwrap();
        settle_leases(&reg).unwrap();
        for ((state, _, age, _, want), id) in cases.iter().zip(&ids) {
            let got = reg.get(*id).unwrap().map(|e| e.state);
            assert_eq!(got.as_ref(), want.as_ref(), "{state:?} aged {age}s");
        }
        assert!(reg.get(lost.run_id).unwrap().is_none());
        let restored = reg.get(ids[0]).unwrap().unwrap();
        assert!(restored.lease.is_none());
        assert!(
            restored
                .last_error
                .unwrap()
                .contains("ended before it was done")
        );
        // Settled as frozen from a freeze: restorable, with its arguments.
        let frozen = reg.get(ids[5]).unwrap().unwrap();
        assert_eq!(frozen.frozen.unwrap().cause, "freeze");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_crashed_run_is_frozen_when_its_session_is_known_and_an_unreadable_project_waits() {
        let tmp = tempfile::tempdir().unwrap();
        let reg = Registry {
            dir: tmp.path().join("state"),
        };
        let gone = dead_pid();
        // Its project is gone: settled from the entry itself.
        let known = entry(State::Live, None, gone);
        let mut unknown = entry(State::Live, None, gone);
        unknown.agent_session_id = None;
        // Its project's session cannot be read now: left for later.
        let damaged = tmp.path().join("damaged");
        std::fs::create_dir_all(damaged.join(".pas-agent")).unwrap();
        std::fs::write(damaged.join(".pas-agent/session.json"), "{not json").unwrap();
        let mut waiting = entry(State::Live, None, gone);
        waiting.project = damaged.to_string_lossy().into_owned();
        waiting.agent_session_id = None;
        for e in [&known, &unknown, &waiting] {
            reg.add(e.clone()).unwrap();
        }
        let left = registry(&reg).unwrap();
        let frozen = reg.get(known.run_id).unwrap().unwrap();
        assert_eq!(frozen.state, State::Frozen);
        assert_eq!(frozen.frozen.as_ref().unwrap().cause, "crash");
        assert!(left.iter().any(|e| e.run_id == known.run_id));
        assert!(reg.get(unknown.run_id).unwrap().is_none());
        assert_eq!(reg.get(waiting.run_id).unwrap().unwrap().state, State::Live);
    }
}
