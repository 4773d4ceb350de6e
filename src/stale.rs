//! Stale-checkpoint detection: has the work moved on since the latest checkpoint?
//!
//! The original's rules (`pas-agent-format.md` §4) with its blind spots closed (§7 defect 5):
//! - a file holding a pas-agent block is compared by its text *outside* the block, so an
//!   export never looks like an edit but a hand edit to the rest of CLAUDE.md does;
//! - a branch switch is noticed even when the commit stays the same;
//! - a task edited since the checkpoint is reported (in the terminal; it does not make the
//!   exported files list stale, since the export shows the current task anyway).

use chrono::{DateTime, Utc};

use crate::fingerprint;
use crate::git::{Repo, WorkTree};
use crate::model::{Checkpoint, FileState, Session};

/// At most this many files are listed, in the terminal and in Markdown.
pub const MAX_FILES_LISTED: usize = 50;

/// What moved on since the latest checkpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct Stale {
    /// The checkpoint's time.
    pub since: DateTime<Utc>,
    /// HEAD before → now, when it moved (`None` = no commits).
    pub head: Option<(Option<String>, Option<String>)>,
    /// Branch before → now, when it changed (`None` = detached).
    pub branch: Option<(Option<String>, Option<String>)>,
    /// Files new, edited or with a new status since the checkpoint.
    pub changed: Vec<FileState>,
    /// Paths the checkpoint listed that no longer differ from HEAD.
    pub resolved: Vec<String>,
    /// Task fields that differ from the checkpoint's snapshot.
    pub task_fields: Vec<&'static str>,
}

impl Stale {
    /// Whether the work tree moved (as opposed to only the task).
    pub fn tree_moved(&self) -> bool {
        self.head.is_some()
            || self.branch.is_some()
            || !self.changed.is_empty()
            || !self.resolved.is_empty()
    }

    /// One line: what moved, since when, and what to do.
    pub fn headline(&self) -> String {
        let n = self.changed.len();
        let what = if n == 1 {
            "1 file changed".to_string()
        } else if n > 1 {
            format!("{n} files changed")
        } else if self.head.is_some() {
            "HEAD moved".to_string()
        } else if self.branch.is_some() {
            "branch changed".to_string()
        } else if !self.resolved.is_empty() {
            let r = self.resolved.len();
            format!(
                "{r} checkpointed file{} no longer changed",
                if r == 1 { "" } else { "s" }
            )
        } else {
            // Only the task moved: worth knowing, not worth a warning sign.
            return format!(
                "Task updated since the last checkpoint ({}); `pas-agent checkpoint` records it",
                crate::display::minute(&self.since)
            );
        };
        format!(
            "⚠ {what} since the last checkpoint ({}); run `pas-agent checkpoint` to record the current state",
            crate::display::minute(&self.since)
        )
    }

    /// Detail lines (unsanitised): HEAD and branch moves, changed and resolved files (capped at
    /// [`MAX_FILES_LISTED`]), and the task fields that changed.
    pub fn details(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if let Some((old, new)) = &self.head {
            lines.push(format!("HEAD {} → {}", short(old), short(new)));
        }
        if let Some((old, new)) = &self.branch {
            lines.push(format!("branch {} → {}", branch(old), branch(new)));
        }
        lines.extend(self.file_lines().into_iter().map(|(path, what)| {
            if path.is_empty() {
                what
            } else {
                format!("{path} ({what})")
            }
        }));
        if !self.task_fields.is_empty() {
            lines.push(format!("task: {} changed", self.task_fields.join(", ")));
        }
        lines
    }

    /// `(path, status)` pairs for changed then resolved files, capped, with a final
    /// `("", "…and N more")` when cut.
    pub fn file_lines(&self) -> Vec<(String, String)> {
        let all: Vec<(String, String)> = self
            .changed
            .iter()
            .map(|f| (f.path.clone(), f.status.describe()))
            .chain(
                self.resolved
                    .iter()
                    .map(|p| (p.clone(), "no longer changed".to_string())),
            )
            .collect();
        let total = all.len();
        let mut lines: Vec<_> = all.into_iter().take(MAX_FILES_LISTED).collect();
        if total > MAX_FILES_LISTED {
            lines.push((
                String::new(),
                format!("…and {} more", total - MAX_FILES_LISTED),
            ));
        }
        lines
    }
}

/// First 8 characters of a commit id, or "no commits".
pub fn short(commit: &Option<String>) -> String {
    match commit {
        Some(c) => c.chars().take(8).collect(),
        None => "no commits".into(),
    }
}

fn branch(b: &Option<String>) -> String {
    b.clone().unwrap_or_else(|| "detached HEAD".into())
}

/// Compares the session's latest checkpoint with the current work tree (`None` outside git).
/// `repo` reads the checkpointed version of a file that gained a block since. Returns `None`
/// when nothing moved or there is no checkpoint.
pub fn check(session: &Session, now: Option<&WorkTree>, repo: Option<&Repo>) -> Option<Stale> {
    let cp = session.checkpoints.last()?;
    let mut stale = Stale {
        since: cp.timestamp,
        head: None,
        branch: None,
        changed: Vec::new(),
        resolved: Vec::new(),
        task_fields: cp.task_snapshot.changes(&session.task),
    };
    if let Some(now) = now {
        compare_tree(cp, now, repo, &mut stale);
    }
    (stale.tree_moved() || !stale.task_fields.is_empty()).then_some(stale)
}

fn compare_tree(cp: &Checkpoint, now: &WorkTree, repo: Option<&Repo>, stale: &mut Stale) {
    if let Some(git) = &cp.git {
        if git.commit != now.head.commit {
            stale.head = Some((git.commit.clone(), now.head.commit.clone()));
        }
        if git.branch != now.head.branch {
            stale.branch = Some((git.branch.clone(), now.head.branch.clone()));
        }
    }
    // The checkpoint's files by path (the last of a path listed twice), sorted stably: lists
    // are recorded in path order, so this is one pass.
    let mut before: Vec<&FileState> = cp.files_changed.iter().collect();
    before.sort_by(|a, b| a.path.cmp(&b.path));
    // The checkpoint's list was bounded when it was taken: compare like with like.
    let bounded;
    let now_files: &[FileState] = if crate::session::bound::leaves_unchanged(&now.files) {
        &now.files
    } else {
        bounded = crate::session::bound::bound(&now.files).0;
        &bounded
    };
    for file in now_files {
        let old = last_with_path(&before, &file.path);
        if differs(file, old, cp, repo) {
            stale.changed.push(file.clone());
        }
    }
    let mut current: Vec<&str> = now_files.iter().map(|f| f.path.as_str()).collect();
    current.sort_unstable();
    stale.resolved = cp
        .files_changed
        .iter()
        .filter(|f| current.binary_search(&f.path.as_str()).is_err())
        .map(|f| f.path.clone())
        .collect();
}

/// The last of `files` (sorted by path) whose path is `path`.
fn last_with_path<'a>(files: &[&'a FileState], path: &str) -> Option<&'a FileState> {
    let end = files.partition_point(|f| f.path.as_str() <= path);
    files[..end].last().copied().filter(|f| f.path == path)
}

/// Whether `path` is a rules file pas-agent owns whole (`.cursor/rules/pas-agent.mdc`, …)
/// and the text outside its block is exactly the front matter export writes there: a file
/// that only an export made, which is not work.
fn owned_front_matter_only(path: &str, outside: &str) -> bool {
    crate::agents::AGENTS.iter().any(|a| {
        matches!(a.layout, crate::agents::Layout::Owned { front_matter }
            if a.context_file == path
                && fingerprint::outside_block_any(
                    crate::block::owned_file(front_matter, "").as_bytes()
                )
                .as_deref()
                    == Some(outside))
    })
}

fn differs(now: &FileState, old: Option<&FileState>, cp: &Checkpoint, repo: Option<&Repo>) -> bool {
    if let Some(outside_now) = &now.fingerprint_outside_block {
        // The file holds a block: compare what a person wrote, not what export generated.
        return match old {
            Some(old) => match &old.fingerprint_outside_block {
                Some(outside_then) => outside_then != outside_now || old.status != now.status,
                // A checkpoint from before this field existed: the original ignored such
                // files, and so do we rather than call every export an edit.
                None => false,
            },
            None => {
                // Not changed at checkpoint time, so it matched the checkpoint's commit then.
                let then = cp
                    .git
                    .as_ref()
                    .and_then(|g| g.commit.as_deref())
                    .and_then(|c| repo?.blob_at(c, &now.path))
                    .unwrap_or_default();
                fingerprint::outside_block_any(&then).as_ref() != Some(outside_now)
                    && !(then.is_empty() && owned_front_matter_only(&now.path, outside_now))
            }
        };
    }
    match old {
        None => true,
        Some(old) if old.status != now.status => true,
        Some(old) => match (&old.fingerprint, &now.fingerprint) {
            (Some(a), Some(b)) => a != b,
            // A fingerprint missing on either side is no evidence of change.
            _ => false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::Head;
    use crate::model::{FileStatus, GitRef};

    fn session_with(files: Vec<FileState>, commit: &str) -> Session {
        let text = r#"{"id":"46d89609-104d-4a43-907d-dbca99704a85","project_name":"p","created_at":"2026-09-17T04:30:00Z","updated_at":"2026-09-17T04:39:00Z","task":{"description":"t"}}"#;
        let mut s: Session = serde_json::from_str(text).unwrap();
        s.checkpoints.push(Checkpoint {
            id: uuid::Uuid::new_v4(),
            timestamp: s.updated_at,
            message: "m".into(),
            task_snapshot: s.task.clone(),
            git: Some(GitRef {
                branch: Some("main".into()),
                commit: Some(commit.into()),
                dirty: !files.is_empty(),
                extra: Default::default(),
            }),
            files_changed: files,
            extra: Default::default(),
        });
        s
    }

    fn file(path: &str, status: FileStatus, fp: Option<&str>) -> FileState {
        let mut f = FileState::new(path, status);
        f.fingerprint = fp.map(String::from);
        f
    }

    fn tree(files: Vec<FileState>, commit: &str, branch: &str) -> WorkTree {
        WorkTree {
            head: Head {
                branch: Some(branch.into()),
                commit: Some(commit.into()),
            },
            files,
        }
    }

    #[test]
    fn unchanged_is_not_stale() {
        let f = file("a", FileStatus::Modified, Some("1"));
        let s = session_with(vec![f.clone()], "c1");
        assert_eq!(check(&s, Some(&tree(vec![f], "c1", "main")), None), None);
    }

    #[test]
    fn edits_new_files_and_resolutions_are_found() {
        let s = session_with(
            vec![
                file("a", FileStatus::Modified, Some("1")),
                file("gone", FileStatus::Untracked, Some("2")),
            ],
            "c1",
        );
        let now = tree(
            vec![
                file("a", FileStatus::Modified, Some("9")),
                file("new", FileStatus::Untracked, Some("3")),
            ],
            "c1",
            "main",
        );
        let st = check(&s, Some(&now), None).unwrap();
        assert_eq!(st.changed.len(), 2);
        assert_eq!(st.resolved, vec!["gone".to_string()]);
        assert!(
            st.headline()
                .contains("2 files changed since the last checkpoint")
        );
    }

    #[test]
    fn missing_fingerprint_is_no_evidence() {
        let s = session_with(vec![file("a", FileStatus::Modified, None)], "c1");
        let now = tree(
            vec![file("a", FileStatus::Modified, Some("9"))],
            "c1",
            "main",
        );
        assert_eq!(check(&s, Some(&now), None), None);
    }

    #[test]
    fn branch_switch_at_same_commit_and_task_edits_count() {
        let mut s = session_with(vec![], "c1");
        let st = check(&s, Some(&tree(vec![], "c1", "other")), None).unwrap();
        assert_eq!(
            st.headline().split(" since").next(),
            Some("⚠ branch changed")
        );
        s.task.remaining.push("more".into());
        let st = check(&s, Some(&tree(vec![], "c1", "main")), None).unwrap();
        assert!(!st.tree_moved());
        assert_eq!(st.task_fields, vec!["remaining"]);
    }

    #[test]
    fn block_files_compare_outside_text() {
        let mut then = file("AGENTS.md", FileStatus::Modified, Some("1"));
        then.fingerprint_outside_block = Some("out".into());
        let s = session_with(vec![then.clone()], "c1");
        let mut export_only = then.clone();
        export_only.fingerprint = Some("2".into());
        assert_eq!(
            check(
                &s,
                Some(&tree(vec![export_only.clone()], "c1", "main")),
                None
            ),
            None
        );
        let mut hand_edit = export_only;
        hand_edit.fingerprint_outside_block = Some("edited".into());
        assert!(check(&s, Some(&tree(vec![hand_edit], "c1", "main")), None).is_some());
    }

    #[test]
    fn a_path_listed_twice_compares_with_its_last_entry() {
        let s = session_with(
            vec![
                file("b", FileStatus::Modified, Some("old")),
                file("a", FileStatus::Modified, Some("1")),
                file("b", FileStatus::Modified, Some("2")),
            ],
            "c1",
        );
        let same = vec![
            file("a", FileStatus::Modified, Some("1")),
            file("b", FileStatus::Modified, Some("2")),
        ];
        assert_eq!(check(&s, Some(&tree(same, "c1", "main")), None), None);
        let st = check(
            &s,
            Some(&tree(
                vec![file("b", FileStatus::Modified, Some("old"))],
                "c1",
                "main",
            )),
            None,
        )
        .unwrap();
        assert_eq!(st.changed.len(), 1);
        assert_eq!(st.resolved, vec!["a".to_string()]);
    }
}
