//! Which files a run changed: those whose content or existence differs between the moment the
//! agent started and the moment it exited, whether the change is still uncommitted or was
//! committed during the run. A file that was already dirty before the run and is untouched
//! by it does not count, and neither does pas-agent's own export (the launcher's, or one made
//! during the run): a file holding a pas-agent block counts only for its text outside the block.

use std::collections::{BTreeMap, BTreeSet};

use std::path::Path;
use std::time::{Duration, SystemTime};

use chrono::{DateTime, Utc};

use crate::fingerprint::{self, Fingerprints};
use crate::git::{Repo, TreeChange, WorkTree};
use crate::model::{CommitRef, FileState, FileStatus};

/// At most this many commits are recorded for one run.
pub const MAX_COMMITS: usize = 1000;

/// Computes a run's changed files.
///
/// - `baseline`: files that differed from HEAD when the agent started, with fingerprints of
///   their content then (a deleted file has status `Deleted`);
/// - `end`: files that differ from HEAD now;
/// - `committed`: files that differ between HEAD before and HEAD after;
/// - `now`: fingerprints of a path's current content, `None` when the path does not exist.
///
/// A file clean at the start (not in `baseline`) that is dirty now or was committed counts as
/// changed. A file in `baseline` counts when it appeared, disappeared, or its fingerprint
/// changed. Statuses are relative to the start: `Added`/`Untracked`/`Renamed` for files that
/// did not exist then, `Deleted` for files gone now, `Modified` otherwise.
pub fn files_changed(
    baseline: &[FileState],
    end: &[FileState],
    committed: &[TreeChange],
    now: impl Fn(&str) -> Option<Fingerprints>,
) -> Vec<FileState> {
    let base: BTreeMap<&str, &FileState> = baseline.iter().map(|f| (f.path.as_str(), f)).collect();
    let end_map: BTreeMap<&str, &FileState> = end.iter().map(|f| (f.path.as_str(), f)).collect();
    let com: BTreeMap<&str, &TreeChange> = committed.iter().map(|c| (c.path.as_str(), c)).collect();
    let paths: BTreeSet<&str> = base
        .keys()
        .chain(end_map.keys())
        .chain(com.keys())
        .copied()
        .collect();
    let mut out = Vec::new();
    for path in paths {
        let current = now(path);
        let exists_now = current.is_some();
        let fp = current.unwrap_or_default();
        let (existed, changed) = match base.get(path) {
            Some(b) => {
                let existed = b.status != FileStatus::Deleted;
                let changed = if existed != exists_now {
                    true
                } else if !existed {
                    false
                } else {
                    match (&b.fingerprint, &fp.content) {
                        // Both hold a pas-agent block: what changed inside it is pas-agent's
                        // export (before or during the run), only the text around it counts.
                        _ if b.fingerprint_outside_block.is_some()
                            && fp.outside_block.is_some() =>
                        {
                            b.fingerprint_outside_block != fp.outside_block
                        }
                        (Some(a), Some(n)) => a != n,
                        // No content to compare (a directory, an unreadable file): compare how it
                        // differs from HEAD, and a file that became clean has changed.
                        _ => end_map.get(path).is_none_or(|e| e.status != b.status),
                    }
                };
                (existed, changed)
            }
            None => {
                let new_in_commit = com.get(path).is_some_and(|c| {
                    matches!(c.status, FileStatus::Added | FileStatus::Renamed { .. })
                });
                let new_in_tree = !com.contains_key(path)
                    && end_map.get(path).is_some_and(|e| {
                        matches!(
                            e.status,
                            FileStatus::Added | FileStatus::Untracked | FileStatus::Renamed { .. }
                        )
                    });
                (!(new_in_commit || new_in_tree), true)
            }
        };
        if !changed || (!existed && !exists_now) {
            continue;
        }
        let status = if existed && exists_now {
            FileStatus::Modified
        } else if existed {
            FileStatus::Deleted
        } else {
            let renamed_from = |s: &FileStatus| match s {
                FileStatus::Renamed { from } => Some(from.clone()),
                _ => None,
            };
            match (
                end_map.get(path).map(|e| &e.status),
                com.get(path).map(|c| &c.status),
            ) {
                (Some(FileStatus::Untracked), None) => FileStatus::Untracked,
                (e, c) => match e
                    .and_then(renamed_from)
                    .or_else(|| c.and_then(renamed_from))
                {
                    Some(from) => FileStatus::Renamed { from },
                    None => FileStatus::Added,
                },
            }
        };
        let mut state = FileState::new(path, status);
        if exists_now {
            state.fingerprint = fp.content;
            state.fingerprint_outside_block = fp.outside_block;
        }
        out.push(state);
    }
    out
}

/// When a file or directory last changed: the later of its modification time and its change
/// time (a rename, `chmod`, `git mv` move only the change time); `None` when it cannot be read.
fn changed_at(path: &Path) -> Option<SystemTime> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    let modified = meta.modified().ok()?;
    Some(match change_time(&meta) {
        Some(ctime) => modified.max(ctime),
        None => modified,
    })
}

/// A file's change time (the inode's status change: a write, rename, `chmod`, link count);
/// `None` where there is none (outside Unix) or before 1970.
#[cfg(unix)]
fn change_time(meta: &std::fs::Metadata) -> Option<SystemTime> {
    use std::os::unix::fs::MetadataExt;
    let secs = u64::try_from(meta.ctime()).ok()?;
    let nanos = u32::try_from(meta.ctime_nsec()).ok()?;
    SystemTime::UNIX_EPOCH.checked_add(Duration::new(secs, nanos))
}

#[cfg(not(unix))]
fn change_time(_: &std::fs::Metadata) -> Option<SystemTime> {
    None
}

/// The baseline of a span of work seen only at its end — a run launched without a scan before
/// it (`run --no-checkpoint --no-export`), an agent session recorded from its hooks: of `files`
/// (what differs from HEAD at the end, with fingerprints), those that did not change between
/// `started` and `ended`, so that [`files_changed`] leaves them out. `started` is best a time
/// read from the work tree's file system itself (a file written just before the span), so that
/// its clock and granularity are those of the files; a file stamped at `started` itself is in
/// the span.
///
/// - A file that exists counts as changed when its modification time or its change time (a
///   rename, `chmod`) falls in the span; one changed only before it was dirty already and left
///   alone, one changed after it (a session recorded late) is someone else's.
/// - A deleted file is judged by the nearest of its ancestor directories that still exists
///   (removing a directory changes its parent): it counts when that directory changed in the
///   span or after it; one whose directory last changed before the start was deleted before.
///
/// What this cannot see: a file dirty before the span that the span made clean again (it is
/// not in `files`); a file dirty before and written again with the same content counts; a file
/// deleted before the span counts when its directory changed in the span for another reason
/// (another file added or removed there).
pub fn unchanged_in_span(
    repo: &Repo,
    files: &[FileState],
    started: SystemTime,
    ended: DateTime<Utc>,
) -> Vec<FileState> {
    let ended = SystemTime::from(ended);
    files
        .iter()
        .filter(|f| {
            let Some(abs) = repo.abs(&f.path) else {
                return false;
            };
            if f.status == FileStatus::Deleted {
                abs.ancestors()
                    .skip(1)
                    .find(|d| exists(d))
                    .and_then(changed_at)
                    .is_some_and(|t| t < started)
            } else {
                let Ok(meta) = std::fs::symlink_metadata(&abs) else {
                    return false;
                };
                let in_span = |t: SystemTime| t >= started && t <= ended;
                !(meta.modified().is_ok_and(in_span) || change_time(&meta).is_some_and(in_span))
            }
        })
        .cloned()
        .collect()
}

fn exists(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

/// What git says a run did, from its start (HEAD and changed files then) to now.
#[derive(Debug, Clone, Default)]
pub struct GitOutcome {
    /// The work tree now, with fingerprints; `None` outside git or when git failed.
    pub tree: Option<WorkTree>,
    /// Full commit id of HEAD now; `None` outside git or before the first commit.
    pub head_after: Option<String>,
    /// Commits from `head_before` to `head_after`, oldest first, at most [`MAX_COMMITS`].
    pub commits: Vec<CommitRef>,
    /// Files whose content or status changed since the start, committed changes included.
    pub files_changed: Vec<FileState>,
}

/// Compares the work tree as it is now, `tree` (read by the caller), with a run's start:
/// `head_before` and `baseline` (the files that differed from HEAD then, with fingerprints).
/// Git failures are warnings; what could not be read stays empty.
pub fn git_outcome_of(
    repo: Option<&Repo>,
    tree: Option<WorkTree>,
    head_before: Option<&str>,
    baseline: &[FileState],
) -> GitOutcome {
    let head_after = tree.as_ref().and_then(|t| t.head.commit.clone());
    let (commits, committed) = match (repo, &head_after) {
        (Some(repo), Some(after)) if head_before != Some(after.as_str()) => {
            let commits = repo
                .commits_between(head_before, after, MAX_COMMITS)
                .unwrap_or_else(|e| {
                    crate::term::warn(&format!("{e}; commits of this run not recorded"));
                    Vec::new()
                });
            let mut changes = repo.tree_changes(head_before, after).unwrap_or_else(|e| {
                crate::term::warn(&format!("{e}; committed files of this run not recorded"));
                Vec::new()
            });
            // A commit that took pas-agent's export along changed nothing of the agent's there.
            changes.retain(|c| !repo.only_block_committed(head_before, after, c));
            (commits, changes)
        }
        _ => (Vec::new(), Vec::new()),
    };
    let files_changed = match (repo, &tree) {
        (Some(repo), Some(tree)) => {
            // A baseline read back from the session may hold anything: a path that is not a
            // portable path inside the work tree is no file of this repository, and is left out.
            let baseline: Vec<FileState> = baseline
                .iter()
                .filter(|f| repo.portable(&f.path))
                .cloned()
                .collect();
            // The files that differ from HEAD now were just read by the scan that found them:
            // their fingerprints are taken from it rather than read a second time.
            let scanned: BTreeMap<&str, &FileState> = tree
                .files
                .iter()
                .filter(|f| f.status != FileStatus::Deleted && f.fingerprint.is_some())
                .map(|f| (f.path.as_str(), f))
                .collect();
            files_changed(&baseline, &tree.files, &committed, |p| {
                if let Some(f) = scanned.get(p) {
                    return Some(Fingerprints {
                        content: f.fingerprint.clone(),
                        outside_block: f.fingerprint_outside_block.clone(),
                    });
                }
                let abs = repo.abs(p)?;
                exists(&abs).then(|| fingerprint::of_path(&abs))
            })
        }
        _ => Vec::new(),
    };
    GitOutcome {
        tree,
        head_after,
        commits,
        files_changed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fs(path: &str, status: FileStatus, fp: Option<&str>) -> FileState {
        let mut f = FileState::new(path, status);
        f.fingerprint = fp.map(String::from);
        f
    }

    fn now_from(
        map: &'static [(&'static str, &'static str)],
    ) -> impl Fn(&str) -> Option<Fingerprints> {
        move |p| {
            map.iter()
                .find(|(k, _)| *k == p)
                .map(|(_, v)| Fingerprints {
                    content: Some(v.to_string()),
                    outside_block: None,
                })
        }
    }

    #[test]
    fn untouched_dirty_files_do_not_count() {
        let base = [fs("a", FileStatus::Modified, Some("1"))];
        let end = [fs("a", FileStatus::Modified, Some("1"))];
        assert!(files_changed(&base, &end, &[], now_from(&[("a", "1")])).is_empty());
    }

    #[test]
    fn edits_new_files_deletions_and_commits() {
        let base = [
            fs("dirty", FileStatus::Modified, Some("1")),
            fs("reverted", FileStatus::Modified, Some("2")),
        ];
        let end = [
            fs("dirty", FileStatus::Modified, Some("9")),
            fs("new.txt", FileStatus::Untracked, Some("3")),
            fs("gone", FileStatus::Deleted, None),
        ];
        let committed = [
            TreeChange {
                path: "lib.rs".into(),
                status: FileStatus::Modified,
            },
            TreeChange {
                path: "added.rs".into(),
                status: FileStatus::Added,
            },
            TreeChange {
                path: "moved.rs".into(),
                status: FileStatus::Renamed {
                    from: "old.rs".into(),
                },
            },
        ];
        let out = files_changed(
            &base,
            &end,
            &committed,
            now_from(&[
                ("dirty", "9"),
                ("new.txt", "3"),
                ("reverted", "0"),
                ("lib.rs", "4"),
                ("added.rs", "5"),
                ("moved.rs", "6"),
            ]),
        );
        let got: Vec<(String, FileStatus)> = out.into_iter().map(|f| (f.path, f.status)).collect();
        assert_eq!(
            got,
            vec![
                ("added.rs".into(), FileStatus::Added),
                ("dirty".into(), FileStatus::Modified),
                ("gone".into(), FileStatus::Deleted),
                ("lib.rs".into(), FileStatus::Modified),
                (
                    "moved.rs".into(),
                    FileStatus::Renamed {
                        from: "old.rs".into()
                    }
                ),
                ("new.txt".into(), FileStatus::Untracked),
                ("reverted".into(), FileStatus::Modified),
            ]
        );
    }

    #[test]
    fn created_and_removed_during_the_run_is_nothing() {
        let base = [fs("tmp", FileStatus::Deleted, None)];
        assert!(files_changed(&base, &[], &[], now_from(&[])).is_empty());
    }
}
