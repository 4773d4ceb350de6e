//! Agent sessions seen through the agents' own lifecycle hooks (`pas-agent integrate`,
//! docs/integrate.md): the marker each session keeps in `.pas-agent/runs/hooks/` from its
//! start to its end, and completing the run record from it.
//!
//! The work is split so that nothing slow runs on the agent's clock (Claude Code gives a
//! session-end hook 1.5 s unless it asks for more, Codex at most 3 s):
//!
//! - the **start** hook writes the marker: when the session started, HEAD then, the directory,
//!   the transcript's path and the agent's process (what the end needs);
//! - the **stop** hook (each turn's end) keeps the turn's last message and time in it;
//! - the **end** hook only marks the end (its time and reason) and starts a detached
//!   `pas-agent lifecycle <agent> complete`, which outlives it;
//! - **completing** ([`complete`]) is done by that detached process, or by whoever comes next
//!   when it was cut short: a later hook of any agent session in the project, or any
//!   pas-agent command that closes runs (`runs`, `status`, `update`, …). For every marker
//!   whose session is over — its end marked, its agent's process gone, or older than
//!   [`MARKER_MAX_AGE`] — it reads git (commits, files changed since the start), the agent's
//!   transcript, records the run with an "after" checkpoint under the session lock, and
//!   deletes the marker.
//!
//! A run is recorded once per agent session and start, whoever completes it and however
//! often: the session's end delivered twice, hooks installed at two levels that each run,
//! completions racing each other. Completions take turns on `.pas-agent/runs/hooks.lock`,
//! and under the session lock a run already recorded for the session and start is not
//! recorded again.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use super::attribution::{self, Other};
use super::process::{Liveness, liveness};
use crate::agents::Agent;
use crate::fsutil::{Links, Named, WriteGuard};
use crate::git::{self, Detail};
use crate::model::{Run, RunResult, RunState};
use crate::session::{Project, ops};

/// Largest marker read (1 MiB).
pub const MAX_MARKER_BYTES: u64 = 1024 * 1024;
/// The run record's key for the agent's last message as its end-of-turn hook reported it.
pub const LAST_MESSAGE_KEY: &str = "last_message";
/// The run record's key saying the run was recorded from the agent's hooks.
pub const RECORDED_BY_KEY: &str = "recorded_by";
/// The run record's key for what the hooks could not record, and why.
pub const HOOK_NOTE_KEY: &str = "hook_note";

/// A session whose marker is older than this (7 days) and whose end was never seen (an agent
/// that does not wait for its session-end hooks, one that was killed, a process that cannot be
/// watched) is completed anyway, as ended at its last turn.
pub const MARKER_MAX_AGE: Duration = Duration::from_secs(7 * 86_400);

/// How long a completion waits for the session lock and for another completion: it runs off
/// the agent's clock, so it may wait long rather than lose the run.
pub const COMPLETE_WAIT: Duration = Duration::from_secs(60);

/// The name of the completions' lock file in `.pas-agent/runs/`.
const LOCK_NAME: &str = "hooks.lock";

/// Two recorded starts of one agent session closer than this are one start (the same marker
/// completed twice: its start is written once, whatever hooks and levels run).
const SAME_START: chrono::Duration = chrono::Duration::milliseconds(100);
/// Slack around a launcher's run when deciding that a hooked session was inside it (clocks
/// read at different moments by different processes).
const LAUNCHER_SLACK: chrono::Duration = chrono::Duration::seconds(2);

/// What the hooks remember about one agent session until its run is recorded:
/// `.pas-agent/runs/hooks/<agent>-<session id>.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Marker {
    /// When the session started; `None` when the marker was made by a later event (the start
    /// was not seen).
    #[serde(default)]
    pub started_at: Option<DateTime<Utc>>,
    /// HEAD at the start.
    #[serde(default)]
    pub head_before: Option<String>,
    /// The last message of the last turn.
    #[serde(default)]
    pub last_message: Option<String>,
    /// When the last turn ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_turn_at: Option<DateTime<Utc>>,
    /// The directory the agent runs in (the payload's `cwd`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The session's transcript, as the agent named it in the payload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript_path: Option<String>,
    /// The agent's process (the one that ran the hook), whose end says the session ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_pid: Option<u32>,
    /// That process's start token ([`super::process::start_token`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_started: Option<String>,
    /// When the session-end hook ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<DateTime<Utc>>,
    /// The session end's `reason`, as the agent gave it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_reason: Option<String>,
}

/// Why a session is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Over {
    /// Its session-end hook ran.
    Ended,
    /// The agent's process is gone, with no end seen.
    AgentGone,
    /// Its marker is older than [`MARKER_MAX_AGE`].
    Old,
}

impl Marker {
    /// Whether the session is over; `modified` is when the marker was last written.
    pub fn over(&self, modified: Option<std::time::SystemTime>) -> Option<Over> {
        if self.ended_at.is_some() {
            return Some(Over::Ended);
        }
        if self.agent_pid.is_some()
            && liveness(self.agent_pid, self.agent_started.as_deref()) == Liveness::Dead
        {
            return Some(Over::AgentGone);
        }
        let old = modified
            .and_then(|m| std::time::SystemTime::now().duration_since(m).ok())
            .is_some_and(|age| age > MARKER_MAX_AGE);
        old.then_some(Over::Old)
    }
}

/// The directory of the markers, `.pas-agent/runs/hooks`, when it may be used: neither `runs`
/// nor `hooks` may be a symbolic link (a cloned repository that commits
/// `.pas-agent/runs/hooks -> ../../config` would otherwise have pas-agent write markers among,
/// and delete files from, the project's own files).
///
/// Errors: `runs` or `hooks` is a link, or something else than a directory.
pub fn dir(project: &Project) -> Result<PathBuf, String> {
    let runs = project.state_dir().join("runs");
    let hooks = runs.join("hooks");
    for dir in [&runs, &hooks] {
        match std::fs::symlink_metadata(dir) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(format!(
                    "{} is a symbolic link; pas-agent keeps its hook markers only in a real directory there (remove the link)",
                    dir.display()
                ));
            }
            Ok(meta) if !meta.is_dir() => {
                return Err(format!("{} is not a directory", dir.display()));
            }
            _ => {}
        }
    }
    Ok(hooks)
}

/// The marker of session `session_id` of the integration `key`:
/// `.pas-agent/runs/hooks/<key>-<session id>.json`.
///
/// Errors: as [`dir`].
pub fn path(project: &Project, key: &str, session_id: &str) -> Result<PathBuf, String> {
    Ok(dir(project)?.join(format!("{key}-{session_id}.json")))
}

/// What a marker's file name says: the integration's key and its agent, the session id.
/// Names are `<key>-<session id>.json`, or `<key>-<session id>.<ms>.json` for an ended
/// session set aside when the same session started again ([`set_aside`]), with a session id
/// of the agent's shape.
pub fn parse_name(name: &str) -> Option<(&'static str, &'static Agent, String)> {
    let stem = name.strip_suffix(".json")?;
    // A set-aside marker ends in `.<digits>`.
    let stem = match stem.rsplit_once('.') {
        Some((s, ms)) if !ms.is_empty() && ms.bytes().all(|b| b.is_ascii_digit()) => s,
        _ => stem,
    };
    crate::agents::with_hooks().find_map(|(agent, hooks)| {
        let id = stem.strip_prefix(hooks.key)?.strip_prefix('-')?;
        agent
            .id_shape
            .accepts(id)
            .then(|| (hooks.key, agent, id.to_string()))
    })
}

/// The marker at `path`, if it is one.
pub fn read(path: &Path) -> Option<Marker> {
    let bytes = crate::fsutil::read_limited(path, MAX_MARKER_BYTES).ok()??;
    serde_json::from_slice(&bytes).ok()
}

/// Writes `marker` at `path` (a temp file renamed over it, through the project's write guard).
///
/// Errors: the markers' directory may not be used ([`dir`]), or the write failed.
pub fn write(project: &Project, path: &Path, marker: &Marker) -> Result<(), String> {
    let guard = WriteGuard::new(&project.root).map_err(|e| e.to_string())?;
    if let Some(dir) = path.parent() {
        guard
            .create_dir_all(dir, Named::ByUs, 0o755)
            .map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    // Checked again now that the directories exist: one may have been made a link meanwhile.
    dir(project)?;
    let bytes = serde_json::to_vec(marker).map_err(|e| e.to_string())?;
    guard
        .write_volatile(path, &bytes, Named::ByUs, Links::Replace)
        .map(drop)
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Deletes the marker at `path` through the write guard; a missing one is no error.
///
/// Errors: as [`write`].
pub fn remove(project: &Project, path: &Path) -> Result<(), String> {
    dir(project)?;
    let guard = WriteGuard::new(&project.root).map_err(|e| e.to_string())?;
    match guard.remove(path, Named::ByUs) {
        Ok(()) => Ok(()),
        Err(crate::fsutil::WriteError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// Moves an ended session's marker out of the way of a new start of the same session (a
/// resume before the ended one was completed): it becomes `<key>-<id>.<start ms>.json`, which
/// the next completion records.
///
/// Errors: as [`write`].
pub fn set_aside(project: &Project, path: &Path, marker: &Marker) -> Result<(), String> {
    let ms = marker
        .started_at
        .or(marker.ended_at)
        .map_or(0, |t| t.timestamp_millis().max(0));
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_suffix(".json"))
        .ok_or("not a marker")?;
    let aside = path.with_file_name(format!("{name}.{ms}.json"));
    write(project, &aside, marker)?;
    remove(project, path)
}

/// Every marker of the project: its path, file name parts and contents, and when it was last
/// written. Files that are not markers (by name or contents) are left alone.
fn all(project: &Project) -> Vec<(PathBuf, &'static str, &'static Agent, String, Marker)> {
    let Ok(dir) = dir(project) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        let name = entry.file_name();
        let Some((key, agent, id)) = name.to_str().and_then(parse_name) else {
            continue;
        };
        let path = entry.path();
        if !std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
            continue;
        }
        if let Some(marker) = read(&path) {
            out.push((path, key, agent, id, marker));
        }
    }
    // One entry per file of one directory: no two paths are equal, so the unstable sort (half
    // the code of a stable one) gives the same order.
    out.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    out
}

fn modified(path: &Path) -> Option<std::time::SystemTime> {
    std::fs::symlink_metadata(path)
        .and_then(|m| m.modified())
        .ok()
}

/// Whether some marker of the project belongs to a session that is over (and so waits to be
/// completed). Cheap: a directory listing and a few small files.
pub fn any_over(project: &Project) -> bool {
    all(project)
        .iter()
        .any(|(path, _, _, _, m)| m.over(modified(path)).is_some())
}

/// The hooked agent sessions of the project not recorded yet (going on, or ended and waiting
/// for their completion), except the one at `except`: for telling whose files changed
/// ([`attribution`]); what their own transcripts name is not known yet.
pub fn in_progress(project: &Project, except: Option<&Path>) -> Vec<Other> {
    all(project)
        .into_iter()
        .filter(|(path, ..)| Some(path.as_path()) != except)
        .filter_map(|(_, _, _, _, m)| {
            let start = m.started_at.or(m.last_turn_at)?;
            Some(Other {
                start,
                end: m.ended_at,
                edits: None,
            })
        })
        .collect()
}

/// Starts `pas-agent lifecycle <key> complete` in `root`, detached: in a session of its own,
/// with no standard streams, so that it outlives the hook and the agent waits for neither.
/// Returns whether it started.
pub fn spawn_completion(root: &Path, key: &str) -> bool {
    let Ok(exe) = std::env::current_exe() else {
        return false;
    };
    let mut cmd = std::process::Command::new(exe);
    cmd.args([SUBCOMMAND, key, COMPLETE_WORD])
        .current_dir(root)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: setsid(2) is async-signal-safe and touches no memory of the parent.
        unsafe {
            cmd.pre_exec(|| {
                libc::setsid();
                Ok(())
            });
        }
    }
    cmd.spawn().is_ok()
}

/// The hidden subcommand the installed hooks run (`pas-agent lifecycle <key> <event>`).
pub const SUBCOMMAND: &str = "lifecycle";

/// The word after `lifecycle <key>` that runs [`complete`].
pub const COMPLETE_WORD: &str = "complete";

/// How [`complete`] treats a completion already under way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turn {
    /// Wait for it (up to [`COMPLETE_WAIT`]), then complete what is left: the detached
    /// process the end hook starts.
    Wait,
    /// Leave the work to it: a pas-agent command on its way to something else.
    Skip,
}

/// Completes the run of every session of the project that is over (see the module
/// documentation); returns how many runs were recorded. A marker whose run cannot be
/// recorded now stays for the next completion.
///
/// Errors: the markers' directory or the completions' lock cannot be used, or (with
/// [`Turn::Wait`]) another completion held the lock past [`COMPLETE_WAIT`].
pub fn complete(project: &Project, turn: Turn) -> Result<usize, String> {
    let dir = dir(project)?;
    if !dir.is_dir() {
        return Ok(0);
    }
    let wait = match turn {
        Turn::Wait => COMPLETE_WAIT,
        Turn::Skip => Duration::ZERO,
    };
    let lock_path = project.state_dir().join("runs").join(LOCK_NAME);
    let _lock = match crate::session::lock::acquire_only(&lock_path, wait) {
        Ok(l) => l,
        Err(crate::error::Error::Locked { .. }) if turn == Turn::Skip => return Ok(0),
        Err(e) => return Err(e.to_string()),
    };
    let mut recorded = 0;
    for (path, key, agent, id, marker) in all(project) {
        let Some(over) = marker.over(modified(&path)) else {
            continue;
        };
        // Long forgotten and nothing seen of it but a stray event: nothing to record.
        if over == Over::Old && marker.started_at.is_none() && marker.ended_at.is_none() {
            let _ = remove(project, &path);
            continue;
        }
        match complete_one(project, &path, key, agent, &id, &marker, over) {
            Ok(true) => {
                recorded += 1;
                // Before the marker goes: whoever waits for the marker finds the block current.
                if let Err(e) = refresh_blocks(project, agent) {
                    crate::term::warn(&format!(
                        "the session block {} reads was not brought up to date after its run: {e}",
                        agent.name
                    ));
                }
            }
            Ok(false) => {}
            Err(e) => {
                crate::term::warn(&format!(
                    "the {} session {id} is not recorded yet ({e}); the next pas-agent command here tries again",
                    agent.name
                ));
                continue;
            }
        }
        // The run is recorded: a marker left behind is only a warning. A marker that changed
        // meanwhile (the session resumed: its start hook set the ended one aside and wrote a
        // new one here) is the next run's, and stays.
        if read(&path).as_ref() != Some(&marker) {
            continue;
        }
        if let Err(e) = remove(project, &path) {
            crate::term::warn(&format!("the session's marker was not deleted: {e}"));
        }
    }
    Ok(recorded)
}

/// Brings the blocks `agent` reads up to date after its run was recorded (the block lists the
/// recent runs, so the run made it stale), where they are and only there
/// ([`crate::export::refresh_blocks`]): the agent's next start then finds a current block and
/// its start hook has nothing to add.
fn refresh_blocks(project: &Project, agent: &'static Agent) -> Result<(), String> {
    // Best effort: the run is recorded already, and the next start hook refreshes a block
    // still out of date; no longer than any command waits for the lock.
    let _guard = crate::session::lock::acquire_existing(
        &project.state_dir(),
        crate::session::lock::timeout(),
    )
    .map_err(|e| e.to_string())?;
    let session = project.load_recent().map_err(|e| e.to_string())?;
    let held = crate::export::delivery::held(agent, &project.root, &session);
    if held.stale.is_empty() {
        return Ok(());
    }
    crate::export::refresh_blocks(&session, agent, &project.root, &held.stale)
}

/// The agent's own words for the run of `marker`'s session (its prompts, last answer, model,
/// tokens, edits and commands; [`Agent::transcript`]): only the turns after its start (with
/// none seen, the whole transcript: no run of this session was recorded before, see
/// [`recorded_already`]). An agent that writes its store behind its hooks
/// ([`crate::agents::Store::written_late`]) is read again, up to [`WRITTEN_LATE_PATIENCE`],
/// until the answer is there. The last message the end-of-turn hook reported is the newer
/// answer when the transcript lags behind it.
fn words(
    agent: &'static Agent,
    session_id: &str,
    cwd: &Path,
    started: Option<DateTime<Utc>>,
    marker: &Marker,
) -> crate::model::Transcript {
    let read = || {
        agent.transcript(
            session_id,
            cwd,
            started.unwrap_or(DateTime::UNIX_EPOCH),
            marker.transcript_path.as_deref().map(Path::new),
        )
    };
    let mut words = read();
    if agent.store.is_some_and(|s| s.written_late()) {
        let deadline = std::time::Instant::now() + WRITTEN_LATE_PATIENCE;
        while words.last_answer.is_none() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
            words = read();
        }
    }
    if let Some(m) = marker.last_message.as_deref() {
        crate::agents::words::hook_answer(&mut words, m);
    }
    words
}

/// How long a completion waits for an agent that writes its store behind its hooks
/// ([`crate::agents::Store::written_late`]) to write the last answer.
const WRITTEN_LATE_PATIENCE: Duration = Duration::from_secs(3);

/// How far behind the clock a file's times may be: the kernel stamps them from its coarse
/// clock, a tick (up to 10 ms) behind the time a process reads, so a file written just after a
/// session's start (a time its start hook read from the clock) must not look older than it.
const MTIME_LAG: Duration = Duration::from_millis(50);

/// Records the run of one session that is over; `Ok(false)` when it was recorded already.
fn complete_one(
    project: &Project,
    path: &Path,
    key: &str,
    agent: &'static Agent,
    session_id: &str,
    marker: &Marker,
    over: Over,
) -> Result<bool, String> {
    let started = marker.started_at;
    let ended_at = match over {
        Over::Ended => marker.ended_at.unwrap_or_else(Utc::now),
        // Nobody saw it end: its last sign of life.
        Over::AgentGone | Over::Old => marker
            .last_turn_at
            .or(started)
            .or_else(|| modified(path).map(DateTime::<Utc>::from))
            .unwrap_or_else(Utc::now),
    };
    let cwd = marker
        .cwd
        .as_ref()
        .map(PathBuf::from)
        .unwrap_or_else(|| project.root.clone());
    let mut notes = Vec::new();
    if over != Over::Ended {
        notes.push(
            "its session-end hook did not run (the agent ended without it): the run ends at its last turn"
                .to_string(),
        );
    }
    let seen = git::Seen::of_root(
        &project.root,
        Detail::Files,
        "the run is recorded without git data",
    );
    let (repo, tree) = (seen.repo, seen.tree);
    let (head_before, baseline) = match (started, &tree, &repo) {
        (Some(started), Some(tree), Some(repo)) => (
            marker.head_before.clone(),
            super::delta::unchanged_in_span(
                repo,
                &tree.files,
                SystemTime::from(started) - MTIME_LAG,
                ended_at,
            ),
        ),
        (None, Some(tree), _) => {
            notes.push(
                "the session's start was not seen (no session-start hook ran for it), so its commits and changed files are not recorded"
                    .to_string(),
            );
            (tree.head.commit.clone(), tree.files.clone())
        }
        _ => (marker.head_before.clone(), Vec::new()),
    };
    let git_unknown = tree.is_none() && (repo.is_some() || seen.unknown);
    let outcome =
        super::delta::git_outcome_of(repo.as_ref(), tree, head_before.as_deref(), &baseline);
    // The agent named the file its session is kept in, and wrote none: nothing was asked,
    // unless a turn ended (its end-of-turn hook ran: a prompt was answered).
    let no_session_file = marker.last_turn_at.is_none()
        && marker.last_message.is_none()
        && marker
            .transcript_path
            .as_deref()
            .is_some_and(|p| !Path::new(p).exists());
    let transcript = words(agent, session_id, &cwd, started, marker);
    let top = repo.as_ref().map(|r| r.top.clone());
    let own_edits = top
        .as_ref()
        .filter(|_| transcript.source.is_some())
        .map(|top| attribution::relative_edits(&transcript.edits, &cwd, top));
    let others_live = in_progress(project, Some(path));
    let started_at = started.unwrap_or(ended_at);
    let mut run = Run {
        id: Uuid::new_v4(),
        agent: agent.id.to_string(),
        argv: vec![agent.executables[0].to_string()],
        cwd: cwd.to_string_lossy().into_owned(),
        state: RunState::Finished,
        started_at,
        ended_at: Some(ended_at),
        duration_ms: started.map(|s| u64::try_from((ended_at - s).num_milliseconds()).unwrap_or(0)),
        exit_code: None,
        signal: None,
        launcher_pid: None,
        launcher_started: None,
        nonce: None,
        head_before,
        head_after: outcome.head_after.clone(),
        commits: outcome.commits.clone(),
        files_changed: outcome.files_changed.clone(),
        agent_session_id: Some(session_id.to_string()),
        checkpoint_before: None,
        checkpoint_after: None,
        capture: None,
        baseline: None,
        result: None,
        transcript: Some(transcript),
        extra: Default::default(),
    };
    run.extra.insert(
        RECORDED_BY_KEY.into(),
        Value::String(format!("{key} hooks")),
    );
    if let Some(message) = &marker.last_message {
        run.extra
            .insert(LAST_MESSAGE_KEY.into(), Value::String(message.clone()));
    }
    if !notes.is_empty() {
        run.extra
            .insert(HOOK_NOTE_KEY.into(), Value::String(notes.join("; ")));
    }
    let tree = outcome.tree;
    let label = agent.id;
    let patience = crate::session::lock::timeout().max(COMPLETE_WAIT);
    project
        .modify_within(patience, |s| {
            if recorded_already(&s.runs, label, session_id, started) {
                return Ok(false);
            }
            // Whose files: against the other runs of the session at that time.
            let mut others: Vec<Other> = top
                .as_ref()
                .map(|top| {
                    s.runs
                        .iter()
                        .filter_map(|r| Other::of_run(r, top))
                        .collect()
                })
                .unwrap_or_default();
            others.extend(others_live.iter().cloned());
            attribution::attribute(
                &mut run.files_changed,
                own_edits.as_deref(),
                &others,
                started_at,
                ended_at,
            );
            if let Some(edits) = own_edits.as_deref().filter(|e| !e.is_empty()) {
                for r in s.runs.iter_mut() {
                    if r.started_at < ended_at && r.ended_at.is_none_or(|e| e > started_at) {
                        attribution::give_back(r, edits);
                    }
                }
            }
            crate::session::bound::bound_into(&mut run.files_changed, &mut run.extra);
            run.result = RunResult::judged(&run, no_session_file);
            run.checkpoint_after = ops::keeping_git_if_unknown(s, git_unknown, |s| {
                ops::auto_checkpoint(s, format!("after {label} session"), tree.as_ref(), ended_at)
            });
            s.runs.push(run);
            s.updated_at = Utc::now();
            Ok(true)
        })
        .map_err(|e| e.to_string())
}

/// Whether the run of `agent`'s session `session_id` started at `started` is recorded in
/// `runs` already: by a completion of its hooks (the same start, give or take
/// [`SAME_START`]), or by `pas-agent run` around it (a launcher's run of the session that was
/// going on then). A session whose start was not seen counts as recorded when any run of it
/// is.
fn recorded_already(
    runs: &[Run],
    agent: &str,
    session_id: &str,
    started: Option<DateTime<Utc>>,
) -> bool {
    let of_session =
        |r: &&Run| r.agent == agent && r.agent_session_id.as_deref() == Some(session_id);
    let Some(started) = started else {
        return runs.iter().any(|r| of_session(&r));
    };
    runs.iter().filter(of_session).any(|r| {
        let by_hooks = r.extra.contains_key(RECORDED_BY_KEY);
        if by_hooks {
            // A run whose start was not seen has no duration: its `started_at` is its end.
            r.duration_ms.is_some() && (r.started_at - started).abs() <= SAME_START
        } else {
            r.started_at <= started + LAUNCHER_SLACK
                && r.ended_at.is_none_or(|e| e + LAUNCHER_SLACK >= started)
        }
    })
}

/// Takes out of `runs` the runs recorded from the hooks of `agent`'s session `session_id`
/// that a launcher's run from `started` to `ended` recorded too (its hooks ran though the
/// launcher was around them, as when Codex's background server started earlier runs the
/// hooks with another environment). Returns how many were taken out.
pub fn drop_inside(
    runs: &mut Vec<Run>,
    agent: &str,
    session_id: &str,
    started: DateTime<Utc>,
    ended: DateTime<Utc>,
) -> usize {
    let before = runs.len();
    runs.retain(|r| {
        !(r.extra.contains_key(RECORDED_BY_KEY)
            && r.agent == agent
            && r.agent_session_id.as_deref() == Some(session_id)
            && r.started_at + LAUNCHER_SLACK >= started
            && r.started_at <= ended + LAUNCHER_SLACK)
    });
    before - runs.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_set_aside_names_are_markers_of_their_agent() {
        let id = "0f0e0d0c-1111-4222-8333-444455556666";
        let (key, agent, sid) = parse_name(&format!("claude-{id}.json")).unwrap();
        assert_eq!((key, agent.id, sid.as_str()), ("claude", "claude-code", id));
        let (key, _, sid) = parse_name(&format!("codex-{id}.1796137308117.json")).unwrap();
        assert_eq!((key, sid.as_str()), ("codex", id));
        for bad in [
            "notes.json",
            "claude-not-a-uuid.json",
            "claude-.json",
            &format!("claude-{id}.x1.json"),
            &format!("claude-{id}.txt"),
        ] {
            assert!(parse_name(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn an_old_marker_without_a_start_token_is_read() {
        let m: Marker =
            serde_json::from_str(r#"{"started_at":null,"head_before":null,"last_message":"x"}"#)
                .unwrap();
        assert_eq!(m.last_message.as_deref(), Some("x"));
        assert_eq!(m.over(Some(std::time::SystemTime::now())), None);
        let ended = Marker {
            ended_at: Some(Utc::now()),
            ..m.clone()
        };
        assert_eq!(ended.over(None), Some(Over::Ended));
        let long_ago = std::time::SystemTime::now() - Duration::from_secs(8 * 86_400);
        assert_eq!(m.over(Some(long_ago)), Some(Over::Old));
    }

    fn run(agent: &str, id: &str, start: i64, end: i64, hooks: bool) -> Run {
        let t = |s: i64| DateTime::from_timestamp(1_800_000_000 + s, 0).unwrap();
        let mut r: Run = serde_json::from_value(serde_json::json!({
            "id": Uuid::new_v4(), "agent": agent, "argv": [agent], "cwd": "/w",
            "state": "finished", "started_at": t(start), "ended_at": t(end),
            "agent_session_id": id
        }))
        .unwrap();
        if hooks {
            r.extra.insert(RECORDED_BY_KEY.into(), "codex hooks".into());
            r.duration_ms = Some(u64::try_from(end - start).unwrap() * 1000);
        }
        r
    }

    #[test]
    fn a_session_is_recorded_once_per_start_whoever_recorded_it() {
        let t = |s: i64| Some(DateTime::from_timestamp(1_800_000_000 + s, 0).unwrap());
        let runs = vec![
            run("codex", "s1", 0, 10, true),
            run("codex", "s2", 20, 40, false),
        ];
        assert!(recorded_already(&runs, "codex", "s1", t(0)));
        assert!(
            !recorded_already(&runs, "codex", "s1", t(10)),
            "resumed at its end"
        );
        assert!(!recorded_already(&runs, "claude-code", "s1", t(0)));
        // Inside a launcher's run of the same session.
        assert!(recorded_already(&runs, "codex", "s2", t(25)));
        assert!(!recorded_already(&runs, "codex", "s2", t(45)));
        // The start not seen: any run of the session.
        assert!(recorded_already(&runs, "codex", "s1", None));
        assert!(!recorded_already(&runs, "codex", "s3", None));
        let mut runs = runs;
        let at = |s: i64| DateTime::from_timestamp(1_800_000_000 + s, 0).unwrap();
        assert_eq!(drop_inside(&mut runs, "codex", "s1", at(0), at(12)), 1);
        assert_eq!(runs.len(), 1);
        assert_eq!(drop_inside(&mut runs, "codex", "s2", at(0), at(50)), 0);
    }
}
