//! Whose files a run changed, when runs of one session overlapped in the same work tree.
//!
//! What git sees change during a run (its work-tree delta, [`super::delta`]) is every change
//! made meanwhile, whoever made it. The agent's own transcript is exact where it names the
//! files its edit tools wrote ([`crate::model::Transcript::edits`]). So, when another run of
//! the session worked in the tree at the same time:
//!
//! - a file the run's own transcript names is the run's;
//! - a file another overlapping run's transcript names (and this one's does not) is that
//!   run's, and is left out of this run's files;
//! - any other file is kept, marked `shared`: it changed while both worked, and neither
//!   transcript says whose it is (a shell command's output, a formatter, the user).
//!
//! With no other run at the same time, the delta is the run's own, as it always was.

use std::path::{Component, Path, PathBuf};

use chrono::{DateTime, Utc};

use crate::model::{FileState, Run, RunState};

/// Another run (or hooked agent session) of the session, as far as its files go.
#[derive(Debug, Clone, PartialEq)]
pub struct Other {
    /// When it started.
    pub start: DateTime<Utc>,
    /// When it ended; `None` while it goes on.
    pub end: Option<DateTime<Utc>>,
    /// The files its transcript names as edited, relative to the repository's top level;
    /// `None` when not known (still running, or no transcript).
    pub edits: Option<Vec<String>>,
}

impl Other {
    /// An old run left undecoded, from its brief: as [`Other::of_run`], with no edits (its
    /// transcript moved to the history file with its details). `None` also when its start does
    /// not read.
    pub fn of_brief(run: &crate::model::Brief<'_>) -> Option<Other> {
        if run.result.is_some() {
            return None;
        }
        let end = run.end().or_else(|| {
            run.reconciled_at
                .as_deref()
                .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
                .map(|t| t.with_timezone(&Utc))
        });
        Some(Other {
            start: run.start()?,
            end,
            edits: None,
        })
    }

    /// A recorded run: its times and the files its transcript names (made relative to `top`).
    /// A run that did no work (it failed to start, nothing was asked) is `None`: it changed
    /// nothing. An abandoned run, whose end nobody saw, counts as going on until it was closed.
    pub fn of_run(run: &Run, top: &Path) -> Option<Other> {
        if run.result.is_some() {
            return None;
        }
        let end = match run.state {
            RunState::Running => None,
            _ => run.ended_at.or_else(|| {
                run.extra
                    .get("reconciled_at")
                    .and_then(|v| v.as_str())
                    .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
                    .map(|t| t.with_timezone(&Utc))
            }),
        };
        let edits = run
            .transcript
            .as_ref()
            .filter(|t| t.source.is_some())
            .map(|t| relative_edits(&t.edits, Path::new(&run.cwd), top));
        Some(Other {
            start: run.started_at,
            end,
            edits,
        })
    }

    /// Whether it worked at some time between `start` and `end`.
    pub fn overlaps(&self, start: DateTime<Utc>, end: DateTime<Utc>) -> bool {
        self.start < end && self.end.is_none_or(|e| e > start)
    }
}

/// The files of a run's transcript (`edits`, as its tools named them: absolute, or relative to
/// the run's directory `cwd`) relative to the repository's top level `top`, `/`-separated;
/// files outside it are left out.
pub fn relative_edits(edits: &[String], cwd: &Path, top: &Path) -> Vec<String> {
    let top_real = top.canonicalize().unwrap_or_else(|_| top.to_path_buf());
    edits
        .iter()
        .filter_map(|e| relative(e, cwd, &top_real))
        .collect()
}

/// `path` (absolute, or relative to `cwd`) relative to `top`.
fn relative(path: &str, cwd: &Path, top: &Path) -> Option<String> {
    let p = Path::new(path);
    let joined = if p.is_absolute() {
        p.to_path_buf()
    } else {
        cwd.join(p)
    };
    let plain = lexical(&joined);
    let inside = plain
        .strip_prefix(top)
        .ok()
        .map(Path::to_path_buf)
        .or_else(|| {
            // The tool may name the file through a link to the work tree (`/tmp` and
            // `/private/tmp`): the directory made canonical.
            let dir = plain.parent()?.canonicalize().ok()?;
            dir.join(plain.file_name()?)
                .strip_prefix(top)
                .ok()
                .map(Path::to_path_buf)
        })?;
    let text = inside.to_string_lossy().replace('\\', "/");
    (!text.is_empty()).then_some(text)
}

/// `path` with `.` and `..` resolved without the filesystem.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Settles which of `files` (a run's work-tree delta) are the run's, given the files its own
/// transcript names (`own`, relative to the top level; `None` when it has no transcript) and
/// the other runs that worked between `start` and `end` (see the module documentation).
/// Returns the files left out, those another run's transcript names.
pub fn attribute(
    files: &mut Vec<FileState>,
    own: Option<&[String]>,
    others: &[Other],
    start: DateTime<Utc>,
    end: DateTime<Utc>,
) -> Vec<String> {
    let overlapping: Vec<&Other> = others.iter().filter(|o| o.overlaps(start, end)).collect();
    let mut left_out = Vec::new();
    if overlapping.is_empty() {
        return left_out;
    }
    files.retain_mut(|f| {
        if own.is_some_and(|o| o.contains(&f.path)) {
            f.shared = false;
            return true;
        }
        let theirs = overlapping
            .iter()
            .any(|o| o.edits.as_ref().is_some_and(|e| e.contains(&f.path)));
        if theirs {
            left_out.push(f.path.clone());
            return false;
        }
        f.shared = true;
        true
    });
    left_out
}

/// Takes out of an earlier run's files those it marked shared that a later run's transcript
/// names (`edits`, relative to the top level): they were the later run's. Returns whether
/// anything changed.
pub fn give_back(run: &mut Run, edits: &[String]) -> bool {
    let before = run.files_changed.len();
    run.files_changed
        .retain(|f| !(f.shared && edits.contains(&f.path)));
    run.files_changed.len() != before
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::FileStatus;

    fn t(s: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + s, 0).unwrap()
    }

    fn files(paths: &[&str]) -> Vec<FileState> {
        paths
            .iter()
            .map(|p| FileState::new(*p, FileStatus::Modified))
            .collect()
    }

    #[test]
    fn alone_a_run_keeps_its_delta() {
        let mut f = files(&["a.rs", "b.rs"]);
        let earlier = Other {
            start: t(0),
            end: Some(t(5)),
            edits: Some(vec!["a.rs".into()]),
        };
        assert!(attribute(&mut f, None, &[earlier], t(10), t(20)).is_empty());
        assert_eq!(f, files(&["a.rs", "b.rs"]));
    }

    #[test]
    fn overlapping_runs_keep_their_own_and_share_the_rest() {
        let mut f = files(&["mine.rs", "theirs.rs", "unknown.txt"]);
        let other = Other {
            start: t(5),
            end: None,
            edits: Some(vec!["theirs.rs".into()]),
        };
        let own = vec!["mine.rs".to_string()];
        let out = attribute(&mut f, Some(&own), &[other], t(0), t(20));
        assert_eq!(out, ["theirs.rs"]);
        let kept: Vec<(&str, bool)> = f.iter().map(|f| (f.path.as_str(), f.shared)).collect();
        assert_eq!(kept, [("mine.rs", false), ("unknown.txt", true)]);
        // An other run whose files are not known: everything not named is shared.
        let mut f = files(&["mine.rs", "theirs.rs"]);
        let unknown = Other {
            start: t(5),
            end: Some(t(8)),
            edits: None,
        };
        attribute(&mut f, Some(&own), &[unknown], t(0), t(20));
        assert!(!f[0].shared && f[1].shared);
    }

    #[test]
    fn edits_are_made_relative_to_the_top_level() {
        let tmp = tempfile::tempdir().unwrap();
        let top = tmp.path().canonicalize().unwrap();
        std::fs::create_dir_all(top.join("src")).unwrap();
        let edits = vec![
            top.join("src/a.rs").to_string_lossy().into_owned(),
            "b.rs".into(),
            "../src/../c.rs".into(),
            "/elsewhere/d.rs".into(),
        ];
        assert_eq!(
            relative_edits(&edits, &top.join("src"), &top),
            ["src/a.rs", "src/b.rs", "c.rs"]
        );
    }
}
