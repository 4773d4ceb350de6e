//! The run record: written as `running` before the agent starts (with the launcher's pid,
//! start token and a nonce, and — unless the run has neither checkpoint nor export — the
//! changed files at that moment), and completed after it exits with what happened
//! (docs/launcher.md).

use std::path::Path;
use std::time::{Instant, SystemTime};

use chrono::Utc;
use uuid::Uuid;

use super::delta::{self, GitOutcome};
use super::outcome;
use super::plain::Exit;
use super::process::{self, Liveness};
use super::registry;
use crate::agents::Agent;
use crate::error::Result;
use crate::export::{self, Target};
use crate::fingerprint;
use crate::git::{self, Detail, Repo, WorkTree};
use crate::model::{FileState, FileStatus, Run, RunState, Session};
use crate::session::{Project, ops};

/// What to do around the run.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The run's id, chosen before anything is written (it names the capture directory).
    pub run_id: Uuid,
    /// Canonical agent id, or the program name.
    pub label: String,
    /// The agent's row, for a known agent.
    pub agent: Option<&'static Agent>,
    /// The command line as recorded (program name first).
    pub argv: Vec<String>,
    /// Directory the agent runs in.
    pub cwd: std::path::PathBuf,
    /// Take the checkpoints before and after the run (false with `--no-checkpoint`).
    pub checkpoint: bool,
    /// Where the export before the run goes, if anywhere (`export::delivery::for_run`).
    pub export: Option<Target>,
    /// The capture path relative to the project root, when output is captured.
    pub capture: Option<String>,
    /// The agent's session id when it is known before the run (a resumed session).
    pub agent_session_id: Option<String>,
    /// The session id the launcher chose for a new session (`--session-id`): recorded from
    /// the start, and kept after the run only if the agent's store confirms it.
    pub chosen: Option<String>,
    /// The user's arguments for the agent (what followed its name), for a later restore.
    pub user_args: Vec<String>,
    /// The `pas-agent run` options a restore starts it with again (`--mcp`, …).
    pub options: Vec<String>,
    /// The terminal's size at the start, when it runs in one.
    pub terminal: Option<registry::Size>,
    /// Where in tmux it runs, when it does.
    pub tmux: Option<registry::TmuxPlace>,
    /// The frozen run this run restores (`pas-agent restore`).
    pub restoring: Option<super::freeze::Token>,
}

impl Plan {
    /// A run with neither checkpoint nor export (`--no-checkpoint --no-export`): nothing
    /// before it needs the work tree, so it is not scanned before the program starts.
    pub fn is_bare(&self) -> bool {
        !self.checkpoint && self.export.is_none()
    }
}

/// The run record's key naming the frozen run a run restores.
pub const RESTORED_FROM_KEY: &str = "restored_from";
/// The run record's key saying what ended the run, when it was not the agent itself
/// (`freeze`: `pas-agent freeze`).
pub const ENDED_BY_KEY: &str = "ended_by";

/// A run that has been recorded as started.
#[derive(Debug)]
pub struct Started {
    /// The run's id, as in [`Plan::run_id`].
    pub run_id: Uuid,
    nonce: String,
    /// 1-based position of the run in `runs`.
    pub number: usize,
    started: Instant,
    repo: Option<Repo>,
    /// Git could not be read before the run: keep the recorded git state.
    git_unknown: bool,
    head_before: Option<String>,
    /// The changed files when the run started; `None` for a run that did not look at the work
    /// tree before its program started (no checkpoint, no export): its files come from the
    /// one scan after it, by their modification and change times
    /// ([`delta::unchanged_in_span`]).
    baseline: Option<Vec<FileState>>,
    /// Where the span of a run without a baseline starts: a time of the work tree's file
    /// system's clock taken just before the program started ([`files_since`]).
    files_since: SystemTime,
    /// What the export did, when it ran.
    pub export: Option<std::result::Result<export::Report, String>>,
    /// Other runs of this project whose launcher is alive or may be: `(number, agent, pid)`.
    pub others: Vec<(usize, String, Option<u32>)>,
    /// Agent session ids earlier runs recorded: never this run's.
    pub taken: Vec<String>,
    /// When the agent was started, once it was (set by the launcher).
    pub agent_started_at: Option<chrono::DateTime<Utc>>,
    /// Whether the run's reserve was made (`outcome::reserve`): when it is gone by the time
    /// the agent started, the note is dropped.
    has_reserve: bool,
}

/// How long the after-record waits for the session lock at least.
pub const AFTER_RECORD_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// What the after-record says, for the summary line.
#[derive(Debug, Clone)]
pub struct Finished {
    /// The run record as saved, state `finished`.
    pub run: Run,
    /// 1-based position of the run in `runs`.
    pub number: usize,
    /// Why no agent session id is recorded though sessions were found (also kept in the run
    /// record as `agent_session_note`).
    pub session_note: Option<String>,
    /// `pas-agent freeze` ended the agent.
    pub frozen: bool,
}

/// The key under which a run record keeps why it has no agent session id.
pub const SESSION_NOTE_KEY: &str = "agent_session_note";

/// The key under which a run record keeps when its agent was started (RFC 3339 UTC): null in
/// the record written before the start, set as soon as the agent's process exists. So a run
/// whose launcher was lost says whether its agent ever ran (null: it did not).
pub const AGENT_STARTED_KEY: &str = "agent_started_at";

/// The key under which the running record of a run without a baseline keeps when its span
/// starts (RFC 3339 UTC, nanoseconds): the modification time of the run's reserve, a time of the
/// work tree's file system's own clock, so that the reconcile of a lost launcher judges the
/// files by the same start as the launcher ([`files_since`]).
pub const FILES_SINCE_KEY: &str = "files_since";

/// Where the files of `run`, recorded without a baseline, are judged from: its
/// [`FILES_SINCE_KEY`], or else when it started.
pub fn files_since(run: &Run) -> SystemTime {
    run.extra
        .get(FILES_SINCE_KEY)
        .and_then(|v| v.as_str())
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .map_or(SystemTime::from(run.started_at), SystemTime::from)
}

/// When the run record says its agent was started: `Some(Some(time))` once started,
/// `Some(None)` for a record that says it was not (yet), `None` for a record written before
/// pas-agent noted it.
pub fn agent_started_at(run: &Run) -> Option<Option<chrono::DateTime<Utc>>> {
    match run.extra.get(AGENT_STARTED_KEY)? {
        serde_json::Value::String(t) => Some(
            chrono::DateTime::parse_from_rfc3339(t)
                .ok()
                .map(|t| t.with_timezone(&Utc)),
        ),
        _ => Some(None),
    }
}

/// What notes that the agent of `started` was started: call it with the moment of the start.
/// The note goes into the run's reserve ([`outcome::mark_started`]: no lock, no `fsync`),
/// which the after-record, or the reconcile of a launcher that was lost, turns into
/// [`AGENT_STARTED_KEY`]. When the reserve could not be made or written, a thread writes the
/// key into the running record (a record no longer running is left alone; a failure is a
/// warning); when the reserve was made and is gone, the session was deleted with it, and the
/// note is dropped.
pub fn agent_started(
    project: &Project,
    started: &Started,
) -> impl FnOnce(chrono::DateTime<Utc>) + Send + 'static {
    let project = project.clone();
    let (run_id, nonce) = (started.run_id, started.nonce.clone());
    let has_reserve = started.has_reserve;
    move |at| {
        if outcome::mark_started(&project.root, &run_id, at).is_ok() {
            return;
        }
        // A reserve that is gone now was removed with the session (`rm -rf .pas-agent` by the
        // agent): the note is dropped, and nothing takes the session lock.
        let reserve = outcome::run_dir(&project.root, &run_id).join(outcome::RESERVE_FILE);
        if has_reserve && std::fs::symlink_metadata(reserve).is_err() {
            return;
        }
        let write = move || {
            let noted = project.modify_recent(|s| {
                if let Some(run) = s.runs.iter_mut().find(|r| {
                    r.id == run_id
                        && r.nonce.as_deref() == Some(nonce.as_str())
                        && r.state == RunState::Running
                }) {
                    run.extra
                        .insert(AGENT_STARTED_KEY.into(), started_value(at));
                }
                Ok(())
            });
            if let Err(e) = noted {
                crate::term::warn(&format!(
                    "the run record does not say yet that the agent started: {e}"
                ));
            }
        };
        // Off the agent's path: it takes the session lock.
        let _ = std::thread::Builder::new()
            .name("pas-agent-started".into())
            .spawn(write);
    }
}

/// The value of [`AGENT_STARTED_KEY`] for a start at `at`.
pub fn started_value(at: chrono::DateTime<Utc>) -> serde_json::Value {
    serde_json::Value::String(at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
}

fn live_tree(repo: Option<&Repo>) -> Option<WorkTree> {
    repo?.status_or_warn(Detail::Files, "the run is recorded without git data")
}

/// A record in state `running`, as written before the agent starts: this launcher's pid,
/// start token and `nonce`, and nothing yet of the outcome.
fn running_record(
    plan: &Plan,
    nonce: &str,
    started_at: chrono::DateTime<Utc>,
    head_before: Option<String>,
) -> Run {
    Run {
        id: plan.run_id,
        agent: plan.label.clone(),
        argv: plan.argv.clone(),
        cwd: plan.cwd.to_string_lossy().into_owned(),
        state: RunState::Running,
        started_at,
        ended_at: None,
        duration_ms: None,
        exit_code: None,
        signal: None,
        launcher_pid: Some(std::process::id()),
        launcher_started: process::own_start_token(),
        nonce: Some(nonce.to_string()),
        head_before,
        head_after: None,
        commits: Vec::new(),
        files_changed: Vec::new(),
        agent_session_id: plan.agent_session_id.clone().or(plan.chosen.clone()),
        checkpoint_before: None,
        checkpoint_after: None,
        capture: plan.capture.clone(),
        baseline: None,
        result: None,
        transcript: None,
        extra: {
            // Whether the agent started is noted when it does (null until then).
            let mut extra: crate::model::Extra =
                [(AGENT_STARTED_KEY.to_string(), serde_json::Value::Null)]
                    .into_iter()
                    .collect();
            if let Some(t) = &plan.restoring {
                extra.insert(
                    RESTORED_FROM_KEY.into(),
                    serde_json::Value::String(t.run_id.to_string()),
                );
            }
            extra
        },
    }
}

/// Takes the "before" checkpoint, exports to the agent's context file and writes the run as
/// `running`, all under one lock. An export that fails (broken markers, a read-only file) is
/// reported and skipped: the agent still starts.
///
/// The work tree is scanned once for the checkpoint, the export and the run's baseline; a run
/// with neither checkpoint nor export ([`Plan::is_bare`]) reads HEAD only, and its files are
/// decided after it ([`finish`]).
pub fn before(project: &Project, plan: &Plan) -> Result<Started> {
    const WITHOUT_GIT: &str =
        "the run is recorded without git data; the git state recorded earlier is kept";
    let bare = plan.is_bare();
    let (seen, head) = if bare {
        git::Seen::head_of_root(&project.root, WITHOUT_GIT)
    } else {
        let seen = git::Seen::of_root(&project.root, Detail::Files, WITHOUT_GIT);
        let head = seen.tree.as_ref().map(|t| t.head.clone());
        (seen, head)
    };
    let (repo, tree, git_unknown) = (seen.repo, seen.tree, seen.unknown);
    let head_before = head.and_then(|h| h.commit);
    let now = Utc::now();
    let run_id = plan.run_id;
    let nonce = Uuid::new_v4().simple().to_string();
    let target = plan.export.clone();
    // Room for the after-record, should the agent fill the disk (see `outcome`); taken before
    // the record says `running`, so the agent starts as soon after that as it did without.
    let session_len = std::fs::metadata(project.session_path()).map_or(0, |m| m.len());
    // A bare run's span starts at the reserve: written just now, on the work tree's file
    // system, its time is of the same clock and granularity as the files the program writes.
    let reserved = outcome::reserve(&project.root, &run_id, session_len)
        .inspect_err(|e| {
            crate::term::warn(&format!(
                "could not reserve disk space for this run's record ({e}); if the disk fills up, its outcome may not be saved"
            ));
        })
        .ok();
    // The record of a run without a checkpoint holds nothing saved nowhere else before its
    // after-record, so it is saved provisionally ([`crate::session::store::Save`]): a power
    // cut during the run may take it (the session is then as it was before the run), and the
    // readers' summary waits for the after-record. A checkpoint is saved durably.
    // The session is loaded with its old runs undecoded (`modify_provisional`,
    // `modify_recent`): what is read of those comes from their briefs.
    let change = |s: &mut Session| {
        let taken: Vec<String> = (s.runs.undecoded_briefs().into_iter())
            .filter_map(|b| b.agent_session_id.map(String::from))
            .chain(s.runs.iter().filter_map(|r| r.agent_session_id.clone()))
            .collect();
        // A run started from inside another (an agent's shell running `pas-agent run`) is
        // nested in it, not beside it.
        let parent = std::env::var(super::RUN_ID_ENV).ok();
        let others: Vec<(usize, String, Option<u32>)> = s
            .runs
            .iter()
            .enumerate()
            .filter(|(_, r)| r.state == RunState::Running)
            .filter(|(_, r)| parent.as_deref() != Some(r.id.to_string().as_str()))
            .filter(|(_, r)| {
                process::liveness(r.launcher_pid, r.launcher_started.as_deref()) != Liveness::Dead
            })
            .map(|(i, r)| (s.runs.number(i), r.agent.clone(), r.launcher_pid))
            .collect();
        let checkpoint_before = plan.checkpoint.then(|| {
            ops::keeping_git_if_unknown(s, git_unknown, |s| {
                ops::auto_checkpoint(s, format!("before {} run", plan.label), tree.as_ref(), now)
            })
        });
        let mut baseline = tree.as_ref().map(|t| t.files.clone()).unwrap_or_default();
        let export = target.as_ref().map(|target| {
            export::write(s, target, false, tree.as_ref(), repo.as_ref())
                .inspect(|report| {
                    if let Some(repo) = &repo {
                        note_export(repo, report, &mut baseline);
                    }
                })
                .map_err(|e| e.to_string())
        });
        let mut run = Run {
            checkpoint_before: checkpoint_before.flatten(),
            baseline: (!bare).then(|| baseline.clone()),
            ..running_record(plan, &nonce, now, head_before.clone())
        };
        if let Some(at) = reserved.filter(|_| bare) {
            let at = chrono::DateTime::<Utc>::from(at)
                .to_rfc3339_opts(chrono::SecondsFormat::Nanos, true);
            run.extra
                .insert(FILES_SINCE_KEY.into(), serde_json::Value::String(at));
        }
        s.runs.push(run);
        s.updated_at = now;
        let run = s.runs.last().cloned();
        Ok((s.runs.total(), baseline, export, others, taken, s.id, run))
    };
    let recorded = if plan.checkpoint {
        project.modify_recent(change)
    } else {
        project.modify_provisional(change)
    };
    let (number, baseline, export, others, taken, session_id, run) =
        recorded.inspect_err(|_| outcome::clear(&project.root, &run_id))?;
    // Without a reserve, the session file just saved gives the file system's time.
    let files_since = reserved
        .or_else(|| {
            std::fs::metadata(project.session_path())
                .and_then(|m| m.modified())
                .ok()
        })
        .unwrap_or_else(|| SystemTime::from(now));
    if let Some(run) = run {
        let mut entry = registry::Entry::of(&run, &project.root, session_id);
        entry.args = Some(plan.user_args.clone());
        entry.options = plan.options.clone();
        entry.terminal = plan.terminal;
        entry.tmux = plan.tmux.clone();
        let added = registry::Registry::open().and_then(|r| match &plan.restoring {
            Some(token) => super::freeze::take_over(&r, token, entry).map(|taken| {
                if let Err(why) = taken {
                    crate::term::warn(&format!(
                        "this run does not take the place of frozen run {}: {why}",
                        &token.run_id.simple().to_string()[..8]
                    ));
                }
            }),
            None => r.add(entry),
        });
        if let Err(e) = added {
            crate::term::warn(&format!("the run is not in the machine-wide registry: {e}"));
        }
    }
    Ok(Started {
        run_id,
        nonce,
        number,
        started: Instant::now(),
        head_before,
        repo,
        git_unknown,
        baseline: (!bare).then_some(baseline),
        files_since,
        export,
        others,
        taken,
        agent_started_at: None,
        has_reserve: reserved.is_some(),
    })
}

/// Makes the export part of the baseline, so the launcher's own writes to context files (the
/// target, and blocks updated through imports) are not counted as the agent's change.
fn note_export(repo: &Repo, report: &export::Report, baseline: &mut Vec<FileState>) {
    for (path, created) in report.written() {
        note_written(repo, &path, created, baseline);
    }
}

fn note_written(repo: &Repo, path: &Path, created: bool, baseline: &mut Vec<FileState>) {
    let Ok(real) = path.canonicalize() else {
        return;
    };
    let Ok(rel) = real.strip_prefix(&repo.top) else {
        return;
    };
    let rel = rel.to_string_lossy().replace('\\', "/");
    if !repo.in_scope(&rel) {
        return;
    }
    let fp = fingerprint::of_path(&real);
    match baseline.iter_mut().find(|f| f.path == rel) {
        Some(f) => {
            f.fingerprint = fp.content;
            f.fingerprint_outside_block = fp.outside_block;
        }
        None => {
            let status = if created {
                FileStatus::Untracked
            } else {
                FileStatus::Modified
            };
            let mut f = FileState::new(rel, status);
            f.fingerprint = fp.content;
            f.fingerprint_outside_block = fp.outside_block;
            baseline.push(f);
            FileState::sort_by_path(baseline);
        }
    }
}

/// Compares the work tree now with a run's start: `head_before` and `baseline` (the files that
/// differed from HEAD then, with fingerprints). Git failures are warnings; what could not be
/// read stays empty.
pub fn git_outcome(
    repo: Option<&Repo>,
    head_before: Option<&str>,
    baseline: &[FileState],
) -> GitOutcome {
    delta::git_outcome_of(repo, live_tree(repo), head_before, baseline)
}

/// Compares the work tree now with a run's start known only by its time, `since` (a time of
/// the work tree's file system, [`files_since`]), and `head_before` (a run that did not scan
/// the work tree before it): of the files that differ from HEAD now, those that did not change
/// between `since` and `ended_at` are taken as the baseline ([`delta::unchanged_in_span`]).
/// One scan of the work tree.
pub fn git_outcome_since(
    repo: Option<&Repo>,
    head_before: Option<&str>,
    since: SystemTime,
    ended_at: chrono::DateTime<Utc>,
) -> GitOutcome {
    let tree = live_tree(repo);
    let baseline = match (repo, &tree) {
        (Some(repo), Some(tree)) => delta::unchanged_in_span(repo, &tree.files, since, ended_at),
        _ => Vec::new(),
    };
    delta::git_outcome_of(repo, tree, head_before, &baseline)
}

/// How long reading the agent's transcripts after a run may take in all; past it the run is
/// recorded without its words, and says so.
pub const WORDS_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(45);

/// The agent's own words for the sessions a run may have been in, read before the
/// after-record takes the session lock (see [`words`]).
#[derive(Debug, Clone, Default)]
pub struct Words {
    /// Whether the agent's store is read at all (a known agent pas-agent reads).
    pub readable: bool,
    /// The transcript of each candidate session id.
    pub by_session: Vec<(String, crate::model::Transcript)>,
    /// Why no transcript was read, when the reading did not finish in time.
    pub failed: Option<String>,
}

impl Words {
    /// What the run record keeps for the session id it settled on: that session's transcript,
    /// or why there is none; `None` for agents whose store pas-agent does not read.
    pub fn for_session(&self, id: Option<&str>) -> Option<crate::model::Transcript> {
        if !self.readable {
            return None;
        }
        if let Some(why) = &self.failed {
            return Some(crate::model::Transcript::missing(why.clone()));
        }
        let Some(id) = id else {
            return Some(crate::model::Transcript::missing(
                "the agent's session id is not known, so its transcript could not be read",
            ));
        };
        Some(
            self.by_session
                .iter()
                .find(|(s, _)| s == id)
                .map(|(_, t)| t.clone())
                .unwrap_or_else(|| {
                    crate::model::Transcript::missing(format!(
                        "the transcript of session {id} was not read"
                    ))
                }),
        )
    }
}

/// Reads, outside the session lock and within [`WORDS_TIMEOUT`], the transcripts of the
/// sessions `found` names (the sure one, or the first few guesses) for agent `agent`, taking
/// only turns after `since`.
pub fn words(
    agent: Option<&'static crate::agents::Agent>,
    found: &super::session_id::Found,
    cwd: &Path,
    since: chrono::DateTime<Utc>,
) -> Words {
    let Some(agent) = agent.filter(|a| a.store.is_some()) else {
        return Words::default();
    };
    let ids: Vec<String> = found
        .sure
        .iter()
        .chain(found.guesses.iter().take(3))
        .cloned()
        .collect();
    let cwd = cwd.to_path_buf();
    let (tx, rx) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("transcript".into())
        .spawn(move || {
            let all: Vec<(String, crate::model::Transcript)> = ids
                .into_iter()
                .map(|s| {
                    let t = agent.transcript(&s, &cwd, since, None);
                    (s, t)
                })
                .collect();
            let _ = tx.send(all);
        });
    let failed = |why: String| Words {
        readable: true,
        by_session: Vec::new(),
        failed: Some(why),
    };
    if spawned.is_err() {
        return failed("the agent's transcript could not be read (no thread)".into());
    }
    match rx.recv_timeout(WORDS_TIMEOUT) {
        Ok(by_session) => Words {
            readable: true,
            by_session,
            failed: None,
        },
        // The thread is left to finish on its own; the process exits soon after.
        Err(_) => failed(format!(
            "reading the agent's transcript took longer than {} s",
            WORDS_TIMEOUT.as_secs()
        )),
    }
}

/// Completes the run record after the agent exited: exit code or signal, duration, HEAD after,
/// commits, changed files, the agent's session id, and the "after" checkpoint; and takes the
/// run out of the machine-wide registry.
///
/// When the save fails (a disk the agent filled), the outcome is written into the space
/// reserved by [`before`], which frees the rest of it, and the save is tried once more; if that
/// fails too, the outcome stays in `.pas-agent/runs/<id>/outcome.json` (or, with no reserve,
/// in the run's registry entry) for the next command to record (see [`super::outcome`]), and
/// the error is returned.
pub fn finish(
    project: &Project,
    plan: &Plan,
    started: Started,
    exit: Exit,
    agent_session: super::session_id::Found,
    words: &Words,
) -> Result<Finished> {
    let ended_at = Utc::now();
    let duration_ms = u64::try_from(started.started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let GitOutcome {
        tree,
        head_after,
        commits,
        files_changed,
    } = match &started.baseline {
        Some(baseline) => git_outcome(
            started.repo.as_ref(),
            started.head_before.as_deref(),
            baseline,
        ),
        None => git_outcome_since(
            started.repo.as_ref(),
            started.head_before.as_deref(),
            started.files_since,
            ended_at,
        ),
    };
    let git_unknown = tree.is_none() && (started.repo.is_some() || started.git_unknown);
    let run_id = started.run_id;
    let nonce = started.nonce.clone();
    // Agent sessions started outside the launcher that are still going on: their files are
    // not known yet (see `attribution`).
    let live = super::hooked::in_progress(project, None);
    let top = started.repo.as_ref().map(|r| r.top.clone());
    // `pas-agent freeze` ended it (the registry says so while it holds the entry).
    let frozen = registry::Registry::open()
        .and_then(|r| r.get(run_id))
        .is_ok_and(|e| e.is_some_and(|e| e.state == registry::State::Freezing));
    // The agent's outcome is known only now: wait longer for the lock than a command would,
    // rather than lose it.
    let patience = crate::session::lock::timeout().max(AFTER_RECORD_LOCK_WAIT);
    let apply = |s: &mut Session| -> Result<Finished> {
        let checkpoint_after = plan.checkpoint.then(|| {
            ops::keeping_git_if_unknown(s, git_unknown, |s| {
                ops::auto_checkpoint(
                    s,
                    format!("after {} run", plan.label),
                    tree.as_ref(),
                    ended_at,
                )
            })
        });
        let index = s
            .runs
            .iter()
            .position(|r| r.id == run_id && r.nonce.as_deref() == Some(nonce.as_str()));
        let index = match index {
            Some(i) => i,
            None => {
                crate::term::warn(
                    "this run's record disappeared from the session while the agent ran; writing it again",
                );
                let started_at = ended_at
                    - chrono::Duration::milliseconds(i64::try_from(duration_ms).unwrap_or(0));
                s.runs.push(running_record(
                    plan,
                    &nonce,
                    started_at,
                    started.head_before.clone(),
                ));
                s.runs.len() - 1
            }
        };
        // Settled under the lock, against what the other runs recorded by now: two runs never
        // record one agent session. The old runs left undecoded are read from their briefs
        // (none of them is running).
        let me = &s.runs[index];
        let old = s.runs.undecoded_briefs();
        let claimed: Vec<String> = (old.iter())
            .filter_map(|b| b.agent_session_id.as_deref().map(String::from))
            .chain(
                s.runs
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| *i != index)
                    .filter_map(|(_, r)| r.agent_session_id.clone()),
            )
            .collect();
        // For the run's files: an old run that overlapped it (its transcript's edits moved
        // out with its details, so its files count as shared).
        let old_others: Vec<super::attribution::Other> = old
            .iter()
            .filter_map(super::attribution::Other::of_brief)
            .collect();
        let unresolved = old.iter().any(|b| {
            b.agent == me.agent
                && b.cwd == me.cwd
                && b.agent_session_id.is_none()
                && b.ended_after(me.started_at, ended_at)
        }) || s.runs.iter().enumerate().any(|(i, r)| {
            i != index
                && r.agent == me.agent
                && r.cwd == me.cwd
                && r.agent_session_id.is_none()
                && r.started_at <= ended_at
                && match r.ended_at {
                    Some(e) => e >= me.started_at,
                    // Without an end: only a run still going counts (an abandoned one
                    // left no session to tell apart from).
                    None => {
                        r.state == RunState::Running
                            && process::liveness(r.launcher_pid, r.launcher_started.as_deref())
                                != Liveness::Dead
                    }
                }
        });
        let agent_name = plan.agent.map_or(plan.label.as_str(), |a| a.name);
        let (session_id, mut session_note) =
            super::session_id::choose(&agent_session, &claimed, unresolved, agent_name);
        let unconfirmed = match (&session_id, &agent_session.unconfirmed) {
            (None, Some(id)) if session_note.is_none() => {
                session_note = Some(format!(
                    "pas-agent started it with session id {id}, but {agent_name}'s store holds no session under that id: the agent did not start one"
                ));
                Some(id.clone())
            }
            _ => None,
        };
        // The agent's hooks may have recorded this very session (they ran with another
        // environment than the launcher's): the launcher's record is the one kept.
        let mut index = index;
        if let Some(id) = session_id
            .as_deref()
            .or(s.runs[index].agent_session_id.as_deref())
        {
            let id = id.to_string();
            let me = &s.runs[index];
            let (agent, from) = (me.agent.clone(), me.started_at);
            if super::hooked::drop_inside(&mut s.runs, &agent, &id, from, ended_at) > 0 {
                index = s
                    .runs
                    .iter()
                    .position(|r| r.id == run_id && r.nonce.as_deref() == Some(nonce.as_str()))
                    .unwrap_or(index);
            }
        }
        let others: Vec<super::attribution::Other> = top
            .as_ref()
            .map(|top| {
                s.runs
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| *i != index)
                    .filter_map(|(_, r)| super::attribution::Other::of_run(r, top))
                    .chain(old_others)
                    .chain(live.iter().cloned())
                    .collect()
            })
            .unwrap_or_default();
        let run = &mut s.runs[index];
        run.state = RunState::Finished;
        run.ended_at = Some(ended_at);
        run.duration_ms = Some(duration_ms);
        run.exit_code = exit.code;
        run.signal = exit.signal;
        run.head_after = head_after.clone();
        run.commits = commits.clone();
        run.files_changed = files_changed.clone();
        run.checkpoint_after = checkpoint_after.flatten();
        if session_id.is_some() {
            run.agent_session_id = session_id;
        } else if plan.agent_session_id.is_none() {
            // An id chosen at the start that the agent's store does not hold is not its.
            run.agent_session_id = None;
        }
        if frozen {
            run.extra.insert(
                ENDED_BY_KEY.into(),
                serde_json::Value::String("freeze".into()),
            );
        }
        if let Some(t) = words.for_session(run.agent_session_id.as_deref()) {
            run.transcript = Some(t);
        }
        if let (Some(id), Some(t)) = (&unconfirmed, run.transcript.as_mut())
            && run.agent_session_id.is_none()
        {
            *t = crate::model::Transcript::missing(format!(
                "{agent_name}'s store holds no session {id}, the id pas-agent started it with"
            ));
        }
        // Whose files: the agent's own transcript against the other runs at that time.
        let own = top
            .as_ref()
            .zip(run.transcript.as_ref())
            .and_then(|(top, t)| {
                t.source.is_some().then(|| {
                    super::attribution::relative_edits(
                        &t.edits,
                        std::path::Path::new(&run.cwd),
                        top,
                    )
                })
            });
        super::attribution::attribute(
            &mut run.files_changed,
            own.as_deref(),
            &others,
            run.started_at,
            ended_at,
        );
        crate::session::bound::bound_into(&mut run.files_changed, &mut run.extra);
        run.result = crate::model::RunResult::judged(run, unconfirmed.is_some());
        match &session_note {
            Some(note) => {
                run.extra.insert(
                    SESSION_NOTE_KEY.into(),
                    serde_json::Value::String(note.clone()),
                );
            }
            None => {
                run.extra.remove(SESSION_NOTE_KEY);
            }
        }
        if plan.capture.is_some() {
            run.capture = plan.capture.clone();
        }
        if let Some(at) = started.agent_started_at {
            run.extra
                .insert(AGENT_STARTED_KEY.into(), started_value(at));
        }
        run.baseline = None;
        run.extra.remove(FILES_SINCE_KEY);
        let run = run.clone();
        if let Some(edits) = own.as_deref().filter(|e| !e.is_empty()) {
            for (i, r) in s.runs.iter_mut().enumerate() {
                if i != index
                    && r.started_at < ended_at
                    && r.ended_at.is_none_or(|e| e > run.started_at)
                {
                    super::attribution::give_back(r, edits);
                }
            }
        }
        s.updated_at = ended_at;
        Ok(Finished {
            run,
            number: s.runs.number(index),
            session_note,
            frozen,
        })
    };
    let finished = match project.modify_recent_within(patience, apply) {
        Ok(done) => Ok(done),
        // The session was deleted while the program ran (`rm -rf .pas-agent`): there is no
        // session to record the run in later either, so its outcome is not kept anywhere.
        Err(gone @ crate::error::Error::NoSession { .. }) => Err(gone),
        Err(first) => {
            // Most likely the disk is full (the agent filled it): put the outcome in the space
            // reserved before the run, which frees the rest of it, and try once more.
            let pending = outcome::Pending {
                run_id,
                nonce: nonce.clone(),
                ended_at,
                duration_ms,
                exit_code: exit.code,
                signal: exit.signal,
                reason: first.to_string(),
            };
            let kept = outcome::keep(&project.root, &pending);
            match project.modify_recent_within(patience, apply) {
                Ok(done) => {
                    crate::term::warn(&format!(
                        "saving the run's record failed at first ({first}); it was saved with the disk space reserved for it"
                    ));
                    Ok(done)
                }
                Err(second) => {
                    let later = "the next pas-agent command in this project records it";
                    match &kept {
                        Ok(path) => {
                            crate::term::warn(&format!(
                                "the run's outcome ({}) is kept in {}; {later}",
                                describe(exit),
                                crate::term::clean(&path.to_string_lossy())
                            ));
                            unregister(&[run_id]);
                        }
                        Err(e) => {
                            outcome::clear(&project.root, &run_id);
                            // No room in the project: the registry's entry (kept, not removed).
                            let value = serde_json::to_value(&pending).unwrap_or_default();
                            match registry::Registry::open()
                                .and_then(|r| r.keep_outcome(run_id, value))
                            {
                                Ok(true) => crate::term::warn(&format!(
                                    "the run's outcome ({}) is kept in the machine-wide run registry; {later}",
                                    describe(exit)
                                )),
                                Ok(false) => crate::term::warn(&format!(
                                    "the run's outcome ({}) could not be kept anywhere (the project: {e}; the run registry has no entry for it)",
                                    describe(exit)
                                )),
                                Err(r) => crate::term::warn(&format!(
                                    "the run's outcome ({}) could not be kept anywhere (the project: {e}; the run registry: {r})",
                                    describe(exit)
                                )),
                            }
                        }
                    }
                    return Err(second);
                }
            }
        }
    };
    outcome::clear(&project.root, &run_id);
    unregister(&[run_id]);
    finished
}

/// "exited 3", "was killed by signal 9": how the agent ended, for messages.
pub fn describe(exit: Exit) -> String {
    match (exit.code, exit.signal) {
        (Some(c), _) => format!("exited {c}"),
        (None, Some(s)) => format!("was killed by signal {s}"),
        _ => "ended".into(),
    }
}

/// Takes runs out of the machine-wide registry; failures are warnings.
pub fn unregister(run_ids: &[Uuid]) {
    if let Err(e) = registry::Registry::open().and_then(|r| r.remove(run_ids).map(|_| ())) {
        crate::term::warn(&format!(
            "could not update the machine-wide run registry: {e}"
        ));
    }
}

/// Removes a run record that never started (the program could not be executed).
pub fn forget(project: &Project, started: &Started) -> Result<()> {
    unregister(&[started.run_id]);
    outcome::clear(&project.root, &started.run_id);
    project.modify(|s| {
        s.runs.retain(|r| r.id != started.run_id);
        Ok(())
    })
}
