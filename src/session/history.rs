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

use std::collections::HashSet;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::bound::{TOTAL_KEY, total_of};
use super::project::Project;
use crate::error::{Error, Result};
use crate::fsutil::{self, Links, Named, WriteGuard};
use crate::model::{FileState, Session, TaskState};

/// Name of the history file inside `.pas-agent/`.
pub const HISTORY_FILE: &str = "history.jsonl";
/// How many of the latest checkpoints keep their file lists and task snapshots in
/// `session.json` (the stale check, the launcher's reuse of an unchanged checkpoint and the
/// export read only the latest).
pub const RECENT: usize = 5;
/// Field of a checkpoint whose file list is in the history file.
pub const MOVED_KEY: &str = "files_in_history";
/// Field `show --json` adds to a checkpoint whose line in the history file cannot be read
/// (never stored).
pub const DAMAGED_KEY: &str = "history_line_damaged";

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

/// Moves the file lists of checkpoints older than the [`RECENT`] latest into the history
/// file. Runs under the lock, before the save; when the save then fails the lines are there
/// twice at worst, which readers allow.
///
/// Errors: the history file cannot be appended to (nothing in `session` changes then).
pub fn move_out(project: &Project, session: &mut Session) -> Result<()> {
    let n = session.checkpoints.len();
    if n <= RECENT {
        return Ok(());
    }
    let old = &mut session.checkpoints[..n - RECENT];
    if !old.iter().any(movable) {
        return Ok(());
    }
    let mut out = Vec::new();
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
    Ok(())
}

fn read(project: &Project) -> Option<String> {
    let bytes = fsutil::read_limited(&path(project), crate::limits::SESSION.bytes).ok()??;
    Some(String::from_utf8_lossy(&bytes).into_owned())
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
}

/// What the history file holds of checkpoint `id`, its paths in the portable form
/// ([`super::codec::portable_path`]).
pub fn moved_of(project: &Project, id: &Uuid) -> Moved {
    let Some(text) = read(project) else {
        return Moved::Missing;
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

/// Keeps only the lines of checkpoints in `keep`; returns `(lines dropped, bytes before)`.
/// With `dry_run`, only counts.
///
/// Errors: the history file cannot be rewritten.
pub fn retain(project: &Project, keep: &HashSet<Uuid>, dry_run: bool) -> Result<(usize, usize)> {
    let Some(text) = read(project) else {
        return Ok((0, 0));
    };
    let mut kept = String::new();
    let mut dropped = 0;
    for line in text.lines() {
        match parse_line(line) {
            Some(l) if keep.contains(&l.checkpoint) => {
                // A fused line keeps only its whole record.
                let whole = line
                    .rfind(LINE_START)
                    .filter(|_| serde_json::from_str::<Line>(line).is_err());
                kept.push_str(whole.map_or(line, |at| &line[at..]));
                kept.push('\n');
            }
            _ => dropped += 1,
        }
    }
    if dropped > 0 && !dry_run {
        let file = path(project);
        let guard = WriteGuard::new(&project.root).map_err(|e| Error::io(&project.root, e))?;
        guard
            .write(&file, kept.as_bytes(), Named::ByUs, Links::Replace)
            .map_err(|e| Error::write(&file, e))?;
    }
    Ok((dropped, text.len()))
}
