//! The prompt record: the few values the prompt segment and the notice show, kept beside the
//! [`summary`](super::summary) so that `pas-agent prompt` reads a few hundred bytes of flat JSON
//! instead of deserialising a session (a prompt that costs nothing: docs/performance.md).
//!
//! It is written with every summary, from the same session, and stamped with the same `stat`
//! identity of `session.json` ([`Identity`]); the prompt uses it only when that identity is
//! the file's now, else it loads the session the way it did before (and the reload stores a new
//! record). Strings are kept whole (already cleaned to one line), so the prompt's cuts to its
//! width give exactly what they give from the session; a record whose JSON would pass
//! [`MAX_RECORD_BYTES`] is not written and the prompt reads the summary.
//!
//! File: `<summary directory>/<hash of the session path>.prompt.json`, never in the work tree.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::project::{Identity, cache_file};
use crate::fsutil::{self, Links, Named, WriteGuard};
use crate::model::{RunState, Session};
use crate::term::clean_line;

/// Largest prompt record written or read (64 KiB).
pub const MAX_RECORD_BYTES: u64 = 64 * 1024;

/// What the prompt shows of a session: the shape both of the stored record and of what the
/// prompt builds from a session it had to load.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptView {
    /// The task's description, cleaned to one line (may be empty).
    pub description: String,
    /// The project's name, cleaned to one line: the segment's text when the description is
    /// empty.
    pub project_name: String,
    /// Number of completed items.
    pub completed: usize,
    /// Number of completed plus remaining items.
    pub total: usize,
    /// The next action, cleaned to one line, when set and not blank.
    pub next: Option<String>,
    /// The latest checkpoint, when the session has one.
    pub checkpoint: Option<CheckpointView>,
    /// Runs whose record says `running`: the prompt checks whether their launcher lives.
    pub running: Vec<RunningView>,
}

/// What the stale mark needs of the latest checkpoint.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointView {
    /// Whether the task changed since the checkpoint ([`crate::model::TaskState::changes`]).
    pub task_changed: bool,
    /// The checkpoint's git state: `Some((branch, commit))` when it recorded one.
    pub git: Option<(Option<String>, Option<String>)>,
}

/// A run whose record says `running`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunningView {
    /// The agent's name, cleaned to one line.
    pub agent: String,
    /// The launcher's process id.
    pub launcher_pid: Option<u32>,
    /// The launcher's start time as recorded ([`crate::launch::process`]).
    pub launcher_started: Option<String>,
}

impl PromptView {
    /// What the prompt shows of `session`.
    pub fn of(session: &Session) -> PromptView {
        let task = &session.task;
        PromptView {
            description: clean_line(&task.description),
            project_name: clean_line(&session.project_name),
            completed: task.completed.len(),
            total: task.completed.len() + task.remaining.len(),
            next: task.next().map(clean_line),
            checkpoint: session.checkpoints.last().map(|cp| CheckpointView {
                task_changed: !cp.task_snapshot.changes(task).is_empty(),
                git: cp
                    .git
                    .as_ref()
                    .map(|g| (g.branch.clone(), g.commit.clone())),
            }),
            running: session
                .runs
                .iter()
                .filter(|r| r.state == RunState::Running)
                .map(|r| RunningView {
                    agent: clean_line(&r.agent),
                    launcher_pid: r.launcher_pid,
                    launcher_started: r.launcher_started.clone(),
                })
                .collect(),
        }
    }
}

/// The record as stored: the view and the identity of the `session.json` it was made from.
#[derive(Serialize, Deserialize)]
struct Record {
    source: Identity,
    view: PromptView,
}

/// Where the prompt record of the session at `session_path` goes.
fn path_for(session_path: &Path) -> Option<PathBuf> {
    cache_file(session_path, "prompt.json")
}

/// Writes the prompt record of `session`, read from or saved as the file of identity
/// `source`. Best effort, like the summary: no fsync (a lost or torn record only means the
/// prompt reads the summary); a record too large to keep removes the old one.
pub(super) fn store(session_path: &Path, session: &Session, source: Identity) -> Option<()> {
    let path = path_for(session_path)?;
    let record = Record {
        source,
        view: PromptView::of(session),
    };
    let bytes = serde_json::to_vec(&record).ok()?;
    if bytes.len() as u64 > MAX_RECORD_BYTES {
        let _ = std::fs::remove_file(&path);
        return None;
    }
    let guard = WriteGuard::new(path.parent()?).ok()?;
    guard
        .write_volatile(&path, &bytes, Named::ByUs, Links::Replace)
        .ok()
        .map(drop)
}

/// The stored view of the session at `session_path` when its record matches the file as it
/// is now (`now`, taken before any read of the session); `None` when there is none, it cannot
/// be read or parsed, or it was made from another version of the file.
pub fn fresh(session_path: &Path, now: Identity) -> Option<PromptView> {
    let bytes = fsutil::read_limited(&path_for(session_path)?, MAX_RECORD_BYTES).ok()??;
    let record: Record = serde_json::from_slice(&bytes).ok()?;
    (record.source == now).then_some(record.view)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_view_keeps_what_the_prompt_shows_and_nothing_else() {
        let text = r#"{"id":"46d89609-104d-4a43-907d-dbca99704a85","project_name":"p\nq","created_at":"2026-09-17T04:30:00Z","updated_at":"2026-09-17T04:39:00Z","task":{"description":"Build\tit","completed":["a"],"remaining":["b","c"],"next_action":"  "}}"#;
        let session: Session = serde_json::from_str(text).unwrap();
        let view = PromptView::of(&session);
        assert_eq!(view.description, clean_line("Build\tit"));
        assert_eq!(view.project_name, clean_line("p\nq"));
        assert_eq!((view.completed, view.total), (1, 3));
        assert_eq!(view.next, None, "a blank next action is none");
        assert_eq!(view.checkpoint, None);
        assert!(view.running.is_empty());
    }
}
