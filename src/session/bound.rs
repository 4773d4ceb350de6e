//! Bounded file lists: what a checkpoint or a run records about changed files stays small
//! however many files changed (docs/teams.md, "Bounded growth").
//!
//! Two rules, applied in this order, both deterministic (the same list always gives the same
//! result, and bounding a bounded list changes nothing), so that a live list bounded the same
//! way can be compared with a recorded one:
//!
//! 1. **Untracked directories collapse**, much as `git status` shows an untracked directory
//!    as one `dir/` entry: the untracked files under the top-most directory that holds at
//!    least [`COLLAPSE_AT`] of them and no other listed change become one entry
//!    `{"path": "dir/", "status": "Untracked", "fingerprint": "dir:<16 hex>", "files": N}`.
//!    The fingerprint is FNV-1a over the collapsed files' paths and fingerprints, so an edit
//!    inside the directory still makes a checkpoint stale; `files` is the number of files
//!    (an addition the original PAS-Agent ignores; to it the entry is one untracked path).
//!    Unlike git, a directory that also holds unchanged tracked files can collapse: the entry
//!    says "N untracked files under dir/", not "dir/ is untracked".
//! 2. **The list is capped** at [`MAX_LISTED`] entries (in path order); the record keeps the
//!    full count in `files_changed_total` ([`TOTAL_KEY`]).
//!
//! The run's `baseline` (the files at the start of a live run, dropped when it ends) is not
//! bounded: the after-record needs it whole.

use std::collections::HashMap;

use crate::model::{Extra, FileState, FileStatus};

/// Fewest untracked files under one directory that collapse into one entry.
pub const COLLAPSE_AT: u64 = 16;
/// Most entries a checkpoint's or a run's `files_changed` keeps.
pub const MAX_LISTED: usize = 200;
/// Field of a checkpoint or run (in its unknown-field map) holding the full count of changed
/// files when its list was capped.
pub const TOTAL_KEY: &str = "files_changed_total";
/// Field of a collapsed entry holding how many files it stands for.
pub const FILES_KEY: &str = "files";

/// How many files an entry stands for: its `files` count for a collapsed directory, else 1.
pub fn files_of(f: &FileState) -> u64 {
    f.extra
        .get(FILES_KEY)
        .and_then(super::exact::count)
        .unwrap_or(1)
}

/// The number of changed files a record stands for: `files_changed_total` when the list was
/// capped, else the sum of its entries' counts.
pub fn total_of(files: &[FileState], extra: &Extra) -> u64 {
    extra
        .get(TOTAL_KEY)
        .and_then(super::exact::count)
        .unwrap_or_else(|| files.iter().map(files_of).sum())
}

/// `files` bounded by both rules, and the full count when the list had to be capped.
pub fn bound(files: &[FileState]) -> (Vec<FileState>, Option<u64>) {
    let collapsed = collapse(files);
    let total: u64 = collapsed.iter().map(files_of).sum();
    if collapsed.len() <= MAX_LISTED {
        return (collapsed, None);
    }
    let mut kept = collapsed;
    kept.truncate(MAX_LISTED);
    (kept, Some(total))
}

/// Bounds `files` in place and records the count in `extra` (removing a stale count when the
/// list is short again).
pub fn bound_into(files: &mut Vec<FileState>, extra: &mut Extra) {
    let (kept, total) = bound(files);
    *files = kept;
    match total {
        Some(n) => {
            extra.insert(TOTAL_KEY.into(), n.into());
        }
        None => {
            extra.remove(TOTAL_KEY);
        }
    }
}

fn parents(path: &str) -> impl Iterator<Item = &str> {
    // "a/b/c.txt" → "a/", "a/b/"; a collapsed "a/b/" → "a/" (itself excluded).
    let trimmed = path.strip_suffix('/').unwrap_or(path);
    trimmed.match_indices('/').map(move |(i, _)| &path[..=i])
}

/// Whether [`bound`] gives `files` back as they are: few enough entries, and too few untracked
/// files below any directory for one to collapse (their sum bounds every directory's count).
/// A test that costs no allocation, for readers that compare a live list with a recorded one.
pub fn leaves_unchanged(files: &[FileState]) -> bool {
    files.len() <= MAX_LISTED && !may_collapse(files)
}

fn may_collapse(files: &[FileState]) -> bool {
    let below_some_dir: u64 = files
        .iter()
        .filter(|f| f.status == FileStatus::Untracked && parents(&f.path).next().is_some())
        .map(files_of)
        .sum();
    below_some_dir >= COLLAPSE_AT
}

fn collapse(files: &[FileState]) -> Vec<FileState> {
    if !may_collapse(files) {
        return files.to_vec();
    }
    // Per directory: untracked files below it, and whether anything else is listed below it.
    let mut dirs: HashMap<&str, (u64, bool)> = HashMap::new();
    for f in files {
        let untracked = f.status == FileStatus::Untracked;
        for dir in parents(&f.path) {
            let e = dirs.entry(dir).or_insert((0, false));
            if untracked {
                e.0 += files_of(f);
            } else {
                e.1 = true;
            }
        }
    }
    fn target<'a>(dirs: &HashMap<&str, (u64, bool)>, f: &'a FileState) -> Option<&'a str> {
        if f.status != FileStatus::Untracked {
            return None;
        }
        parents(&f.path).find(|d| matches!(dirs.get(d), Some(&(n, false)) if n >= COLLAPSE_AT))
    }
    if !files.iter().any(|f| target(&dirs, f).is_some()) {
        return files.to_vec();
    }
    let mut out: Vec<FileState> = Vec::new();
    // Collapsed directories, in order of first appearance: (path, count, hash input).
    let mut groups: Vec<(String, u64, Vec<u8>)> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for f in files {
        match target(&dirs, f) {
            None => out.push(f.clone()),
            Some(dir) => {
                let at = *index.entry(dir).or_insert_with(|| {
                    groups.push((dir.to_string(), 0, Vec::new()));
                    groups.len() - 1
                });
                let g = &mut groups[at].2;
                g.extend_from_slice(f.path.as_bytes());
                g.push(0);
                g.extend_from_slice(f.fingerprint.as_deref().unwrap_or("").as_bytes());
                g.push(0);
                groups[at].1 += files_of(f);
            }
        }
    }
    for (dir, count, input) in groups {
        let mut entry = FileState::new(dir, FileStatus::Untracked);
        entry.fingerprint = Some(format!("dir:{}", crate::fingerprint::hex(&input)));
        entry.extra.insert(FILES_KEY.into(), count.into());
        out.push(entry);
    }
    FileState::sort_by_path(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(path: &str, status: FileStatus) -> FileState {
        let mut s = FileState::new(path, status);
        s.fingerprint = Some(format!("fp-{path}"));
        s
    }

    fn many(dir: &str, n: usize) -> Vec<FileState> {
        (0..n)
            .map(|i| f(&format!("{dir}f{i:05}.txt"), FileStatus::Untracked))
            .collect()
    }

    #[test]
    fn collapses_the_top_most_untracked_directory() {
        let mut files = many("build/out/", 40);
        files.extend(many("build/more/", 10));
        files.push(f("src/main.rs", FileStatus::Modified));
        files.push(f("src/new.rs", FileStatus::Untracked));
        files.sort_by(|a, b| a.path.cmp(&b.path));
        let (out, total) = bound(&files);
        assert_eq!(total, None);
        let paths: Vec<&str> = out.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["build/", "src/main.rs", "src/new.rs"]);
        assert_eq!(files_of(&out[0]), 50);
        assert!(out[0].fingerprint.as_deref().unwrap().starts_with("dir:"));
        // Idempotent.
        assert_eq!(bound(&out).0, out);
    }

    #[test]
    fn a_directory_with_other_changes_is_not_collapsed_but_its_subdirectory_is() {
        let mut files = many("src/gen/", 20);
        files.push(f("src/lib.rs", FileStatus::Modified));
        files.sort_by(|a, b| a.path.cmp(&b.path));
        let (out, _) = bound(&files);
        let paths: Vec<&str> = out.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["src/gen/", "src/lib.rs"]);
    }

    #[test]
    fn an_edit_inside_changes_the_fingerprint() {
        let a = many("d/", 20);
        let mut b = a.clone();
        b[3].fingerprint = Some("other".into());
        assert_ne!(bound(&a).0[0].fingerprint, bound(&b).0[0].fingerprint);
    }

    #[test]
    fn long_lists_are_capped_with_a_total() {
        let files: Vec<FileState> = (0..500)
            .map(|i| f(&format!("f{i:04}"), FileStatus::Modified))
            .collect();
        let (out, total) = bound(&files);
        assert_eq!(out.len(), MAX_LISTED);
        assert_eq!(total, Some(500));
        let mut extra = Extra::new();
        let mut list = files.clone();
        bound_into(&mut list, &mut extra);
        assert_eq!(total_of(&list, &extra), 500);
    }

    #[test]
    fn leaves_unchanged_is_true_only_where_bound_changes_nothing() {
        let mut lists = vec![
            Vec::new(),
            many("d/", 15),
            many("d/", 16),
            many("d/", 40),
            (0..MAX_LISTED + 1)
                .map(|i| f(&format!("f{i:04}"), FileStatus::Modified))
                .collect(),
        ];
        // Top-level untracked files never collapse, however many.
        lists.push(
            (0..30)
                .map(|i| f(&format!("u{i:02}"), FileStatus::Untracked))
                .collect(),
        );
        // Sixteen below different directories: no one directory has enough, but the sum does.
        lists.push(
            (0..16)
                .map(|i| f(&format!("d{i:02}/x"), FileStatus::Untracked))
                .collect(),
        );
        let mut mixed = many("a/b/", 10);
        mixed.extend(many("a/c/", 10));
        mixed.push(f("a/b/tracked", FileStatus::Modified));
        lists.push(mixed);
        for files in &lists {
            if leaves_unchanged(files) {
                assert_eq!(bound(files), (files.clone(), None), "{} files", files.len());
            }
        }
        assert!(leaves_unchanged(&lists[1]) && leaves_unchanged(&lists[5]));
        assert!(!leaves_unchanged(&lists[2]) && !leaves_unchanged(&lists[4]));
    }
}
