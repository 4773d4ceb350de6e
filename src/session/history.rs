//! Old checkpoints' file lists, kept out of `session.json` in the append-only
//! `.pas-agent/history.jsonl` (the design is in `super` (mod.rs)).
//!
//! `session.json` keeps every checkpoint (id, time, message, git), but only the latest
//! [`RECENT`] keep their `files_changed` and `task_snapshot` there. When a save would leave an
//! older one with either, they are appended to `history.jsonl` as one line
//! `{"checkpoint": "<id>", "files_changed": [...], "task_snapshot": {...}}` and the checkpoint
//! keeps `"files_changed": []`, `"task_snapshot": {}` (every field at its default),
//! `"files_changed_total": N` and `"files_in_history": true`. The original PAS-Agent reads such
//! a checkpoint as one with no files and an empty snapshot (it shows neither anyway).
//! The log only grows by appends, so git's built-in `union` merge joins two branches' logs
//! (`init` names it in `.pas-agent/.gitattributes`); a checkpoint id found twice is the same
//! list, and the first line counts. `pas-agent show` reads a moved list back; `prune` drops
//! the lines of checkpoints it prunes.
//!
//! Finished runs get the same treatment. `session.json` keeps every run, in order (a run's
//! number is its position), but only the latest [`RECENT_RUNS`], every running one and the
//! latest [`RUNS_SHOWN`] finished runs that did work (the context block lists those) keep
//! their details there. An older run's details (`commits`, `files_changed`, `transcript`,
//! `baseline`, its `last_message` and any other field of more than [`BIG_FIELD`] bytes this
//! build does not read from old runs, and the launcher's fields [`SKELETON_LEAVES_OUT`]) are
//! appended as one line `{"run": "<id>", "details": {<field>: <value as it was>, ...}}` and
//! the run keeps a skeleton: every other field, those fields at their defaults (`"commits": []`,
//! `"files_changed": []`, no transcript, the launcher's fields left out),
//! `"files_changed_total": N`, `"commits_total": N` and `"details_in_history": true`. A
//! skeleton written before the launcher's fields moved gives them up at its next full save.
//! `runs N` and `runs --json` put the details back ([`fill_runs`]); a run's lines are read in
//! file order and a later one wins.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use super::bound::{TOTAL_KEY, total_of};
use super::project::Project;
use crate::error::{Error, Result};
use crate::fsutil::{self, Links, Named, WriteGuard};
use crate::model::{Extra, FileState, Run, RunState, SKELETON_LEAVES_OUT, Session, TaskState};

/// Name of the history file inside `.pas-agent/`.
pub const HISTORY_FILE: &str = "history.jsonl";
/// How many of the latest checkpoints keep their file lists and task snapshots in
/// `session.json` (the stale check, the launcher's reuse of an unchanged checkpoint and the
/// export read only the latest).
pub const RECENT: usize = 5;
/// Field of a checkpoint whose file list is in the history file.
pub const MOVED_KEY: &str = "files_in_history";
/// Field `show --json` adds to a checkpoint, and `runs N --json` / `runs --json` to a run,
/// whose line in the history file cannot be read (never stored).
pub const DAMAGED_KEY: &str = "history_line_damaged";
/// How many of the latest runs keep their details in `session.json`, whatever their state
/// (`runs` shows their counts; the launcher, the hooks and `runs N` read them most).
pub const RECENT_RUNS: usize = 10;
/// How many of the latest finished runs that did work (no [`crate::model::RunResult`]) keep
/// their details in `session.json`, however old: the context block's "Recent Agent Runs"
/// lists these, with their words and files.
pub const RUNS_SHOWN: usize = 5;
/// Field of a run whose details are in the history file.
pub const RUN_MOVED_KEY: &str = crate::model::SKELETON_KEY;
/// Field of a run whose details are in the history file: how many commits it made.
pub const COMMITS_KEY: &str = "commits_total";
/// A field of a run this build does not read from old runs moves to the history file when its
/// JSON is longer than this many bytes (`last_message` always moves).
pub const BIG_FIELD: usize = 200;
/// Fields of a run that always stay in its skeleton: the counts and the marker, and the short
/// notes the hooks' dedup, `runs` and the abandoned-run check read.
const KEPT_FIELDS: [&str; 12] = [
    TOTAL_KEY,
    RUN_MOVED_KEY,
    COMMITS_KEY,
    "recorded_by",
    "hook_note",
    "agent_session_note",
    "agent_session_learned",
    "agent_started_at",
    "ended_by",
    "restored_from",
    "reconciled_at",
    "outcome",
];
/// The typed fields of a run that move ([`Run`]'s names).
const MOVED_FIELDS: [&str; 4] = ["commits", "files_changed", "transcript", "baseline"];

#[derive(Serialize, Deserialize)]
struct Line {
    checkpoint: Uuid,
    files_changed: Vec<FileState>,
    /// The checkpoint's task snapshot, when it was moved too (absent in lines that carry only
    /// a file list).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    task_snapshot: Option<TaskState>,
}

fn movable(cp: &crate::model::Checkpoint) -> bool {
    !cp.files_changed.is_empty() || cp.task_snapshot != TaskState::default()
}

/// `<root>/.pas-agent/history.jsonl`.
pub fn path(project: &Project) -> PathBuf {
    project.state_dir().join(HISTORY_FILE)
}

/// Moves the file lists of checkpoints older than the [`RECENT`] latest, and the details of
/// runs [`keeps_details`] leaves out, into the history file. Runs under the lock, before the
/// save; when the save then fails the lines are there twice at worst, which readers allow.
///
/// Errors: the history file cannot be appended to (nothing in `session` changes then).
pub fn move_out(project: &Project, session: &mut Session) -> Result<()> {
    let n = session.checkpoints.len();
    let old = &mut session.checkpoints[..n.saturating_sub(RECENT)];
    let runs_kept = keeps_details(&session.runs);
    let runs_moving: Vec<(usize, Extra)> = session
        .runs
        .iter()
        .enumerate()
        .filter(|(i, _)| !runs_kept[*i])
        .filter_map(|(i, r)| details_of(r).map(|d| (i, d)))
        .collect();
    if !old.iter().any(movable) && runs_moving.is_empty() {
        return Ok(());
    }
    let encode =
        |e: serde_json::Error| Error::io(path(project), std::io::Error::other(e.to_string()));
    let mut out = Vec::new();
    for (i, details) in &runs_moving {
        let line = RunLine {
            run: session.runs[*i].id,
            details: details.clone(),
        };
        out.extend_from_slice(&serde_json::to_vec(&line).map_err(encode)?);
        out.push(b'\n');
    }
    for cp in old.iter() {
        if !movable(cp) {
            continue;
        }
        let line = Line {
            checkpoint: cp.id,
            files_changed: cp.files_changed.clone(),
            task_snapshot: Some(cp.task_snapshot.clone()),
        };
        let json = serde_json::to_vec(&line)
            .map_err(|e| Error::io(path(project), std::io::Error::other(e.to_string())))?;
        out.extend_from_slice(&json);
        out.push(b'\n');
    }
    let file = path(project);
    let guard = WriteGuard::new(&project.root).map_err(|e| Error::io(&project.root, e))?;
    guard
        .append(&file, &out)
        .map_err(|e| Error::write(&file, e))?;
    for cp in old.iter_mut() {
        if !movable(cp) {
            continue;
        }
        if !cp.files_changed.is_empty() {
            let total = total_of(&cp.files_changed, &cp.extra);
            cp.files_changed.clear();
            cp.extra.insert(TOTAL_KEY.into(), total.into());
        }
        cp.task_snapshot = TaskState::default();
        cp.extra.insert(MOVED_KEY.into(), true.into());
    }
    for (i, details) in runs_moving {
        strip(&mut session.runs[i], &details);
    }
    Ok(())
}

/// Which of `runs` keep their details in `session.json`: the latest [`RECENT_RUNS`], every
/// running one, and the latest [`RUNS_SHOWN`] finished runs that did work.
pub fn keeps_details(runs: &[Run]) -> Vec<bool> {
    let n = runs.len();
    let mut keep = vec![false; n];
    let mut shown = 0;
    for (i, r) in runs.iter().enumerate().rev() {
        if i + RECENT_RUNS >= n || r.state == RunState::Running {
            keep[i] = true;
        }
        if shown < RUNS_SHOWN && r.state != RunState::Running && r.result.is_none() {
            keep[i] = true;
            shown += 1;
        }
    }
    keep
}

/// Whether a field of a run this build does not read from old runs moves out.
fn field_moves(key: &str, value: &Value) -> bool {
    if key == "last_message" {
        return true;
    }
    if KEPT_FIELDS.contains(&key) {
        return false;
    }
    match value {
        Value::String(s) => s.len() > BIG_FIELD,
        Value::Array(_) | Value::Object(_) => {
            serde_json::to_string(value).is_ok_and(|s| s.len() > BIG_FIELD)
        }
        _ => false,
    }
}

/// What of `run` moves to the history file, as its fields were; `None` when nothing does.
/// A run moved before gives only what came back into it since (a merge with a branch that
/// had not moved it).
fn details_of(run: &Run) -> Option<Extra> {
    let mut d = Extra::new();
    let mut put = |key: &str, value: serde_json::Result<Value>| {
        if let Ok(v) = value {
            d.insert(key.into(), v);
        }
    };
    if !run.commits.is_empty() {
        put("commits", serde_json::to_value(&run.commits));
    }
    if !run.files_changed.is_empty() {
        put("files_changed", serde_json::to_value(&run.files_changed));
    }
    if let Some(t) = &run.transcript {
        put("transcript", serde_json::to_value(t));
    }
    if let Some(b) = &run.baseline {
        put("baseline", serde_json::to_value(b));
    }
    // The launcher's fields, which the skeleton then leaves out ([`SKELETON_LEAVES_OUT`]).
    let id = |u: Option<Uuid>| u.map(|u| Value::from(u.to_string()));
    let text = |t: &Option<String>| t.clone().map(Value::from);
    let launch = [
        run.launcher_pid.map(Value::from),
        text(&run.launcher_started),
        text(&run.nonce),
        text(&run.head_before),
        text(&run.head_after),
        id(run.checkpoint_before),
        id(run.checkpoint_after),
        text(&run.capture),
    ];
    for (key, value) in SKELETON_LEAVES_OUT.iter().zip(launch) {
        if let Some(v) = value {
            d.insert((*key).into(), v);
        }
    }
    for (k, v) in &run.extra {
        if field_moves(k, v) {
            d.insert(k.clone(), v.clone());
        }
    }
    if d.is_empty() {
        return None;
    }
    // The counts a run had before its first move come back with its details.
    if !run.extra.contains_key(RUN_MOVED_KEY) {
        for k in [TOTAL_KEY, COMMITS_KEY] {
            if let Some(v) = run.extra.get(k) {
                d.insert(k.into(), v.clone());
            }
        }
    }
    Some(d)
}

/// Leaves `run` the skeleton of a run whose `details` were appended to the history file.
fn strip(run: &mut Run, details: &Extra) {
    let total = total_of(&run.files_changed, &run.extra);
    let commits = if run.commits.is_empty() {
        run.extra
            .get(COMMITS_KEY)
            .and_then(super::exact::count)
            .unwrap_or(0)
    } else {
        run.commits.len() as u64
    };
    run.commits.clear();
    run.files_changed.clear();
    run.transcript = None;
    run.baseline = None;
    // Their values are in `details` (`details_of` took every one that was set).
    run.launcher_pid = None;
    run.launcher_started = None;
    run.nonce = None;
    run.head_before = None;
    run.head_after = None;
    run.checkpoint_before = None;
    run.checkpoint_after = None;
    run.capture = None;
    for k in details.keys() {
        if !MOVED_FIELDS.contains(&k.as_str()) && !KEPT_FIELDS.contains(&k.as_str()) {
            run.extra.remove(k);
        }
    }
    run.extra.insert(TOTAL_KEY.into(), total.into());
    run.extra.insert(COMMITS_KEY.into(), commits.into());
    run.extra.insert(RUN_MOVED_KEY.into(), true.into());
}

/// One run's line in the history file.
#[derive(Serialize, Deserialize)]
struct RunLine {
    run: Uuid,
    /// The fields that moved, as they were in the run.
    details: Extra,
}

/// How every line `serde_json` writes for a [`RunLine`] begins.
const RUN_LINE_START: &str = "{\"run\":\"";

/// The run record a line holds, if it is one: the whole line, else (a torn append fused with
/// the line after it) the last run record in it.
fn parse_run_line(line: &str) -> Option<RunLine> {
    if line.starts_with(RUN_LINE_START)
        && let Ok(l) = serde_json::from_str::<RunLine>(line)
    {
        return Some(l);
    }
    let start = line.rfind(RUN_LINE_START)?;
    (start > 0)
        .then(|| serde_json::from_str::<RunLine>(&line[start..]).ok())
        .flatten()
}

/// The ids of every run record a line begins, whole or torn (a fused line names two or more).
fn run_line_ids(line: &str) -> impl Iterator<Item = Uuid> + '_ {
    line.match_indices(RUN_LINE_START).filter_map(|(start, _)| {
        let at = start + RUN_LINE_START.len();
        line.get(at..at + 36)
            .and_then(|id| Uuid::parse_str(id).ok())
    })
}

/// `skeleton` with `details` put back: the counts and the marker it got when it moved go, and
/// each moved field takes its value from the details unless the skeleton holds one of its own
/// (a merge with a branch that had not moved it).
fn restore(skeleton: &Run, details: &Extra) -> Option<Run> {
    let mut v = serde_json::to_value(skeleton).ok()?;
    let o = v.as_object_mut()?;
    for k in [RUN_MOVED_KEY, TOTAL_KEY, COMMITS_KEY, DAMAGED_KEY] {
        o.remove(k);
    }
    for (k, val) in details {
        let own = match o.get(k) {
            None | Some(Value::Null) => false,
            Some(Value::Array(a)) => !a.is_empty(),
            Some(_) => true,
        };
        if !own {
            o.insert(k.clone(), val.clone());
        }
    }
    let mut run: Run = serde_json::from_value(v).ok()?;
    super::codec::portable_run(&mut run);
    Some(run)
}

/// Puts back the details of every run of `runs` whose details are in the history file, in
/// one pass over it. A run none of whose lines can be read whole (torn, edited) keeps its
/// skeleton and gets [`DAMAGED_KEY`]; one whose lines were pruned (or whose history file is gone) keeps
/// its skeleton as it is.
///
/// Returns why the history file cannot be read when a run's details are there and it cannot
/// (the runs keep their skeletons then), for a warning.
pub fn fill_runs(project: &Project, runs: &mut [Run]) -> Option<String> {
    let wanted: HashSet<Uuid> = runs
        .iter()
        .filter(|r| r.extra.get(RUN_MOVED_KEY) == Some(&true.into()))
        .map(|r| r.id)
        .collect();
    if wanted.is_empty() {
        return None;
    }
    let text = match read(project) {
        Ok(Some(text)) => text,
        Ok(None) => return None,
        Err(why) => return Some(why),
    };
    // One run (`runs N`): only the lines that name it, found by their start, not line by line.
    let lines: Vec<&str> = match wanted.iter().next() {
        Some(id) if wanted.len() == 1 => {
            let needle = format!("{RUN_LINE_START}{id}\"");
            text.match_indices(&needle)
                .map(|(at, _)| {
                    let rest = &text[at..];
                    rest.find('\n').map_or(rest, |end| &rest[..end])
                })
                .collect()
        }
        _ => text.lines().collect(),
    };
    put_back(runs, lines.into_iter(), &wanted);
    None
}

/// Puts back, from the history file's `lines`, the details of the runs of `runs` whose ids are
/// in `wanted` ([`fill_runs`]).
fn put_back<'a>(runs: &mut [Run], lines: impl Iterator<Item = &'a str>, wanted: &HashSet<Uuid>) {
    let mut found: HashMap<Uuid, Extra> = HashMap::new();
    // Ids a line names but does not hold whole: damaged, unless a whole record of theirs is
    // found on another line.
    let mut torn: HashSet<Uuid> = HashSet::new();
    for line in lines {
        let line = line.strip_suffix('\r').unwrap_or(line);
        // The record is the one the line holds (a fused line's last whole one), whatever id
        // the line starts with.
        let whole = parse_run_line(line);
        for id in run_line_ids(line) {
            if wanted.contains(&id) && whole.as_ref().is_none_or(|l| l.run != id) {
                torn.insert(id);
            }
        }
        if let Some(l) = whole.filter(|l| wanted.contains(&l.run)) {
            let d = found.entry(l.run).or_default();
            for (k, v) in l.details {
                d.insert(k, v);
            }
        }
    }
    for run in runs.iter_mut() {
        if let Some(d) = found.get(&run.id) {
            match restore(run, d) {
                Some(full) => *run = full,
                None => {
                    run.extra.insert(DAMAGED_KEY.into(), true.into());
                }
            }
        } else if torn.contains(&run.id) {
            run.extra.insert(DAMAGED_KEY.into(), true.into());
        }
    }
}

/// The history file's text: `Ok(None)` when there is none, `Err` with the reason when it
/// cannot be read (larger than the session limit, not a file, permission denied).
fn read(project: &Project) -> std::result::Result<Option<String>, String> {
    let bytes = fsutil::read_limited(&path(project), crate::limits::SESSION.bytes)
        .map_err(|e| e.to_string())?;
    Ok(bytes.map(|bytes| {
        String::from_utf8(bytes)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    }))
}

/// Warns on stderr that the history file cannot be read (`why`), and what that means for the
/// command (`so`: what it does not show, or leaves alone).
pub fn warn_unreadable(why: &str, so: &str) {
    crate::term::warn(&format!(
        "cannot read .pas-agent/history.jsonl ({why}): {so}"
    ));
}

/// Why the history file cannot be read, when it cannot, without reading it (its size and
/// whether it opens): for a command that shows runs' skeletons only (`runs`).
pub fn unreadable(project: &Project) -> Option<String> {
    let file = path(project);
    match std::fs::metadata(&file) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => Some(e.to_string()),
        Ok(m) if !m.is_file() => Some(fsutil::ReadError::NotAFile(fsutil::kind_of(&m)).to_string()),
        Ok(m) if m.len() > crate::limits::SESSION.bytes => {
            Some(fsutil::ReadError::TooLarge(m.len()).to_string())
        }
        Ok(_) => std::fs::File::open(&file).err().map(|e| e.to_string()),
    }
}

/// The record a line holds. A line that is not one whole record is a torn append (a writer
/// killed mid-line) or, written by an older version, such a torn line fused with the whole
/// line appended after it: the last whole record in it, if any, is taken.
fn parse_line(line: &str) -> Option<Line> {
    if let Ok(l) = serde_json::from_str::<Line>(line) {
        return Some(l);
    }
    let start = line.rfind(LINE_START)?;
    (start > 0)
        .then(|| serde_json::from_str::<Line>(&line[start..]).ok())
        .flatten()
}

/// How every line `serde_json` writes for a [`Line`] begins.
const LINE_START: &str = "{\"checkpoint\":";

/// What the history file says of one checkpoint.
#[derive(Debug, PartialEq)]
pub enum Moved {
    /// Its file list and, when it was moved too, its task snapshot.
    Found(Vec<FileState>, Box<Option<TaskState>>),
    /// A line names the checkpoint but cannot be read (a torn or edited line).
    Damaged,
    /// No line names it: its list was pruned (or the file is gone).
    Missing,
    /// The history file exists but cannot be read (too large, not a file, permission
    /// denied): the reason.
    Unreadable(String),
}

/// What the history file holds of checkpoint `id`, its paths in the portable form
/// ([`super::codec::portable_path`]).
pub fn moved_of(project: &Project, id: &Uuid) -> Moved {
    let text = match read(project) {
        Ok(Some(text)) => text,
        Ok(None) => return Moved::Missing,
        Err(why) => return Moved::Unreadable(why),
    };
    let needle = id.to_string();
    let mut damaged = false;
    for l in text.lines().filter(|l| l.contains(&needle)) {
        match parse_line(l) {
            Some(mut line) if line.checkpoint == *id => {
                super::codec::portable_files(&mut line.files_changed);
                return Moved::Found(line.files_changed, Box::new(line.task_snapshot));
            }
            Some(_) => {}
            None => damaged = true,
        }
    }
    if damaged {
        Moved::Damaged
    } else {
        Moved::Missing
    }
}

/// What [`retain`] did (or, with `dry_run`, would do) to the history file.
#[derive(Debug, Default, PartialEq)]
pub struct Retained {
    /// Lines dropped: of checkpoints not kept, of runs no longer in the session, and lines
    /// that cannot be read.
    pub dropped: usize,
    /// Run lines rewritten smaller by `prune_run`.
    pub shrunk: usize,
    /// The file's size before, in bytes.
    pub bytes: usize,
    /// Why the file cannot be read, when it cannot: it was left as it is.
    pub unreadable: Option<String>,
}

/// Keeps the lines of checkpoints in `keep` and of runs in `runs` (a run's id, and whether it
/// is old enough that `prune_run` shrinks its details: it returns whether it changed them).
/// With `dry_run`, only counts. A file that cannot be read (too large, permission denied) is
/// left as it is, the reason in [`Retained::unreadable`]: no line it holds is dropped unread.
///
/// Errors: the history file cannot be rewritten.
pub fn retain(
    project: &Project,
    keep: &HashSet<Uuid>,
    runs: &HashMap<Uuid, bool>,
    prune_run: &dyn Fn(&mut Extra) -> bool,
    dry_run: bool,
) -> Result<Retained> {
    let text = match read(project) {
        Ok(Some(text)) => text,
        Ok(None) => return Ok(Retained::default()),
        Err(why) => {
            return Ok(Retained {
                unreadable: Some(why),
                ..Retained::default()
            });
        }
    };
    let (kept, r) = retain_lines(&text, keep, runs, prune_run)
        .map_err(|e| Error::io(path(project), std::io::Error::other(e.to_string())))?;
    if (r.dropped > 0 || r.shrunk > 0) && !dry_run {
        let file = path(project);
        let guard = WriteGuard::new(&project.root).map_err(|e| Error::io(&project.root, e))?;
        guard
            .write(&file, kept.as_bytes(), Named::ByUs, Links::Replace)
            .map_err(|e| Error::write(&file, e))?;
    }
    Ok(r)
}

/// [`retain`] of the history file's `text`: what stays, and the counts.
fn retain_lines(
    text: &str,
    keep: &HashSet<Uuid>,
    runs: &HashMap<Uuid, bool>,
    prune_run: &dyn Fn(&mut Extra) -> bool,
) -> serde_json::Result<(String, Retained)> {
    let mut kept = String::new();
    let mut r = Retained {
        bytes: text.len(),
        ..Retained::default()
    };
    for line in text.lines() {
        // A run's record, else (a torn run line fused with a checkpoint's) a checkpoint's.
        if line.contains(RUN_LINE_START)
            && let Some(mut l) = parse_run_line(line)
        {
            if runs.contains_key(&l.run) {
                if runs[&l.run] && prune_run(&mut l.details) {
                    r.shrunk += 1;
                }
                // Written anew: a fused line keeps only its whole record.
                kept.push_str(&serde_json::to_string(&l)?);
                kept.push('\n');
            } else {
                r.dropped += 1;
            }
            continue;
        }
        match parse_line(line) {
            Some(l) if keep.contains(&l.checkpoint) => {
                // A fused line keeps only its whole record.
                let whole = line
                    .rfind(LINE_START)
                    .filter(|_| serde_json::from_str::<Line>(line).is_err());
                kept.push_str(whole.map_or(line, |at| &line[at..]));
                kept.push('\n');
            }
            _ => r.dropped += 1,
        }
    }
    Ok((kept, r))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::RunResult;

    fn run(i: usize) -> Run {
        serde_json::from_value(serde_json::json!({
            "id": format!("00000000-0000-4000-8000-{i:012}"),
            "agent": "codex", "argv": ["codex"], "cwd": "/w", "state": "finished",
            "started_at": "2026-01-01T00:00:00Z", "ended_at": "2026-01-01T00:01:00Z",
            "duration_ms": 60000, "exit_code": 0,
            "commits": [{"id": "abc", "summary": "work"}],
            "files_changed": [{"path": "a.txt", "status": "modified", "fingerprint": "x"}],
            "agent_session_id": "s",
            "transcript": {"prompts": ["do it"], "last_answer": "done"},
            "last_message": "done",
            "small_unknown": 1,
            "big_unknown": "y".repeat(BIG_FIELD + 1),
            "recorded_by": "codex hooks"
        }))
        .unwrap()
    }

    #[test]
    fn the_latest_runs_running_ones_and_the_blocks_runs_keep_their_details() {
        let mut runs: Vec<Run> = (0..30).map(run).collect();
        runs[2].state = RunState::Running;
        // The latest 12 did no work: the block lists the 5 before them.
        for r in &mut runs[18..] {
            r.result = Some(RunResult::FailedStart);
        }
        let keep = keeps_details(&runs);
        let kept: Vec<usize> = (0..30).filter(|&i| keep[i]).collect();
        assert_eq!(
            kept,
            vec![
                2, 13, 14, 15, 16, 17, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29
            ]
        );
    }

    #[test]
    fn a_skeleton_with_its_details_is_the_run_it_was() {
        let mut r = run(1);
        r.extra.insert(TOTAL_KEY.into(), 7.into());
        let before = serde_json::to_value(&r).unwrap();
        let details = details_of(&r).unwrap();
        assert!(details.contains_key("big_unknown") && details.contains_key("last_message"));
        assert!(!details.contains_key("small_unknown") && !details.contains_key("recorded_by"));
        strip(&mut r, &details);
        assert!(r.transcript.is_none() && r.commits.is_empty() && r.files_changed.is_empty());
        assert_eq!(r.extra[TOTAL_KEY], 7);
        assert_eq!(r.extra[COMMITS_KEY], 1);
        assert_eq!(r.extra["recorded_by"], "codex hooks");
        assert!(!r.extra.contains_key("big_unknown"));
        // A skeleton has nothing more to move.
        assert!(details_of(&r).is_none());
        let back = restore(&r, &details).unwrap();
        assert_eq!(serde_json::to_value(&back).unwrap(), before);
        // Without a count of its own before, none after.
        let mut plain = run(2);
        let before = serde_json::to_value(&plain).unwrap();
        let details = details_of(&plain).unwrap();
        strip(&mut plain, &details);
        let back = restore(&plain, &details).unwrap();
        assert_eq!(serde_json::to_value(&back).unwrap(), before);
    }

    #[test]
    fn a_skeleton_leaves_out_the_launchers_fields_and_gets_them_back() {
        let mut r = run(3);
        r.launcher_pid = Some(42);
        r.launcher_started = Some("linux:boot:1@host".into());
        r.nonce = Some("n".into());
        r.head_before = Some("a".repeat(40));
        r.head_after = Some("b".repeat(40));
        r.checkpoint_before = Some(Uuid::new_v4());
        r.checkpoint_after = Some(Uuid::new_v4());
        r.capture = Some(".pas-agent/runs/x/capture.ansi".into());
        let before = serde_json::to_value(&r).unwrap();
        let details = details_of(&r).unwrap();
        for key in SKELETON_LEAVES_OUT {
            assert_eq!(details.get(key), before.get(key), "{key}");
        }
        strip(&mut r, &details);
        // As the session file holds it: without them (a run that is not a skeleton keeps its
        // nulls).
        let stored =
            serde_json::to_value(crate::model::Runs::from(vec![r.clone(), run(4)])).unwrap();
        for key in SKELETON_LEAVES_OUT {
            assert!(stored[0].get(key).is_none(), "{key}: {:#}", stored[0]);
            assert_eq!(stored[1].get(key), Some(&Value::Null), "{key}");
        }
        assert!(details_of(&r).is_none());
        let back = restore(&r, &details).unwrap();
        assert_eq!(serde_json::to_value(&back).unwrap(), before);
    }

    #[test]
    fn run_lines_are_found_whole_and_in_a_fused_line() {
        let line = serde_json::to_string(&RunLine {
            run: run(3).id,
            details: details_of(&run(3)).unwrap(),
        })
        .unwrap();
        assert!(line.starts_with(RUN_LINE_START));
        assert_eq!(run_line_ids(&line).collect::<Vec<_>>(), vec![run(3).id]);
        assert!(parse_run_line(&line).is_some());
        let torn = format!("{}{line}", &line[..line.len() / 2]);
        assert_eq!(parse_run_line(&torn).unwrap().run, run(3).id);
        assert!(parse_run_line(&line[..line.len() / 2]).is_none());
    }

    /// A moved run's skeleton and its line in the history file.
    fn moved(i: usize) -> (Run, String) {
        let mut r = run(i);
        let details = details_of(&r).unwrap();
        let line = serde_json::to_string(&RunLine {
            run: r.id,
            details: details.clone(),
        })
        .unwrap();
        strip(&mut r, &details);
        (r, line)
    }

    #[test]
    fn a_torn_line_fused_with_another_runs_line_gives_that_run_back_whole() {
        let (a, line_a) = moved(1);
        let (b, line_b) = moved(2);
        let wanted: HashSet<Uuid> = [a.id, b.id].into();
        // A writer died mid-append of A's line; the next append is B's, on the same line.
        let fused = format!("{}{line_b}", &line_a[..line_a.len() / 2]);
        let mut runs = [a.clone(), b.clone()];
        put_back(&mut runs, [fused.as_str()].into_iter(), &wanted);
        assert_eq!(runs[1].transcript, run(2).transcript, "B is back whole");
        assert!(!runs[1].extra.contains_key(DAMAGED_KEY));
        assert!(!runs[1].extra.contains_key(RUN_MOVED_KEY));
        // A's only line is the torn one.
        assert_eq!(runs[0].extra.get(DAMAGED_KEY), Some(&true.into()));
        assert!(runs[0].transcript.is_none());
        // With A's whole line elsewhere (written again after the tear), nothing is damaged.
        let mut runs = [a, b];
        put_back(
            &mut runs,
            [fused.as_str(), line_a.as_str()].into_iter(),
            &wanted,
        );
        for (r, i) in runs.iter().zip([1, 2]) {
            assert_eq!(r.transcript, run(i).transcript);
            assert!(!r.extra.contains_key(DAMAGED_KEY), "{i}");
        }
    }

    #[test]
    fn prune_keeps_a_checkpoints_line_fused_after_a_torn_run_line() {
        let (a, line_a) = moved(1);
        let cp = Uuid::from_u128(7);
        let cp_line = serde_json::to_string(&Line {
            checkpoint: cp,
            files_changed: vec![],
            task_snapshot: None,
        })
        .unwrap();
        let text = format!("{}{cp_line}\n{line_a}\n", &line_a[..line_a.len() / 2]);
        let runs: HashMap<Uuid, bool> = [(a.id, false)].into();
        let (kept, r) = retain_lines(&text, &[cp].into(), &runs, &|_| false).unwrap();
        assert_eq!(kept, format!("{cp_line}\n{line_a}\n"));
        assert_eq!(r.dropped, 0);
    }
}
