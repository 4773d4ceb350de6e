//! The session summary: a small copy of what the prompt and `status` show, kept beside the
//! user's other pas-agent caches, so that their cost does not grow with the session's history
//! (the design is in `super` (mod.rs)).
//!
//! A summary is the session with its checkpoints cut to the latest one and its runs cut to
//! those still running plus the latest other one (so its last run is the session's latest,
//! which `runs N` reads from it), with the full counts, and the `stat`
//! identity (size, modification time in nanoseconds, inode, device) of the `session.json` it
//! was made from. It is written after every save ([`super::Project`]) and by a reader that had
//! to load the whole file; a reader uses it only when `session.json`'s identity is the one
//! recorded, so a file changed by anything else (git checkout, merge, an older pas-agent, a
//! hand edit) is read in full. It lives in `$XDG_RUNTIME_DIR/pas-agent/summary/` (or the cache
//! directory [`crate::fsutil::cache_dir`] falls back to), named after a hash of the session file's path: never
//! in the work tree, so it is never committed.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::project::{Identity, Project, cache_file};
use crate::fsutil::{self, Links, Named, WriteGuard};
use crate::model::{RunState, Session};

/// Largest summary read or written (1 MiB); a session whose summary would be larger is
/// always read in full.
pub const MAX_SUMMARY_BYTES: u64 = 1024 * 1024;

/// What the prompt and `status` need of a session.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Summary {
    /// The `session.json` this summary was made from.
    pub source: Identity,
    /// How many checkpoints the session has.
    pub checkpoint_count: usize,
    /// How many runs the session has.
    pub run_count: usize,
    /// The session, with only the latest checkpoint and the runs described above.
    pub session: Session,
    /// The latest checkpoint's `files_changed` as one string of rows ([`rows`]), moved out of
    /// `session` when no file has fields this build does not know nor a status it does not
    /// know: one JSON string and a scan of it cost a tenth of what JSON objects (or arrays with
    /// an untagged status) cost to parse, which was most of what reading the summary cost
    /// (`status` on 1,000 files, docs/performance-history.md). [`fresh`] puts them back.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub(super) files: String,
}

/// The row encoding of a checkpoint's files in a stored [`Summary`]: per file, one status
/// letter (`A`dded, `M`odified, `D`eleted, `U`ntracked, `R`enamed), then its fields, each
/// either `-` (none) or `<length in bytes>:<text>`: the path, the fingerprint, the
/// outside-block fingerprint and, for `R` only, the old path. Length-prefixed, so a path may
/// hold any character. A summary whose rows do not read back whole is not used (the session
/// file is then read in full).
mod rows {
    use std::fmt::Write as _;

    use crate::model::{FileState, FileStatus};

    /// The rows of `files`, or `None` when one cannot be a row (a status this build does not
    /// know, or fields it does not know: such files stay objects in the summary's session).
    pub(super) fn encode(files: &[FileState]) -> Option<String> {
        let mut out = String::with_capacity(files.len() * 64);
        for f in files {
            if !f.extra.is_empty() {
                return None;
            }
            let (letter, from) = match &f.status {
                FileStatus::Added => ('A', None),
                FileStatus::Modified => ('M', None),
                FileStatus::Deleted => ('D', None),
                FileStatus::Untracked => ('U', None),
                FileStatus::Renamed { from } => ('R', Some(from.as_str())),
                FileStatus::Other(_) => return None,
            };
            out.push(letter);
            field(&mut out, Some(&f.path));
            field(&mut out, f.fingerprint.as_deref());
            field(&mut out, f.fingerprint_outside_block.as_deref());
            if from.is_some() {
                field(&mut out, from);
            }
        }
        Some(out)
    }

    fn field(out: &mut String, text: Option<&str>) {
        match text {
            None => out.push('-'),
            Some(text) => {
                let _ = write!(out, "{}:", text.len());
                out.push_str(text);
            }
        }
    }

    /// The files `rows` encodes, or `None` when they do not read back whole.
    pub(super) fn decode(rows: &str) -> Option<Vec<FileState>> {
        let mut files = Vec::new();
        let mut rest = rows;
        while let Some(letter) = rest.as_bytes().first().copied() {
            rest = &rest[1..];
            let path = take(&mut rest)?.map(str::to_owned)?;
            let fingerprint = take(&mut rest)?.map(str::to_owned);
            let outside = take(&mut rest)?.map(str::to_owned);
            let status = match letter {
                b'A' => FileStatus::Added,
                b'M' => FileStatus::Modified,
                b'D' => FileStatus::Deleted,
                b'U' => FileStatus::Untracked,
                b'R' => FileStatus::Renamed {
                    from: take(&mut rest)?.map(str::to_owned)?,
                },
                _ => return None,
            };
            let mut f = FileState::new(path, status);
            f.fingerprint = fingerprint;
            f.fingerprint_outside_block = outside;
            files.push(f);
        }
        Some(files)
    }

    /// One field off the front of `rest`: `Some(None)` for `-`, `None` when malformed.
    fn take<'a>(rest: &mut &'a str) -> Option<Option<&'a str>> {
        if let Some(after) = rest.strip_prefix('-') {
            *rest = after;
            return Some(None);
        }
        let bytes = rest.as_bytes();
        let mut len: usize = 0;
        let mut colon = 0;
        while let Some(&b) = bytes.get(colon).filter(|b| b.is_ascii_digit()) {
            len = len.checked_mul(10)?.checked_add(usize::from(b - b'0'))?;
            colon += 1;
        }
        if colon == 0 || bytes.get(colon) != Some(&b':') {
            return None;
        }
        let end = (colon + 1).checked_add(len)?;
        let text = rest.get(colon + 1..end)?;
        *rest = &rest[end..];
        Some(Some(text))
    }
}

impl Summary {
    /// The summary of `session`, read from (or just written to) a file of identity `source`.
    pub fn of(session: &Session, source: Identity) -> Summary {
        let mut small = session.clone_without_history();
        small.checkpoints = session.checkpoints.last().cloned().into_iter().collect();
        let last_other = session
            .runs
            .iter()
            .rposition(|r| r.state != RunState::Running);
        small.runs = session
            .runs
            .iter()
            .enumerate()
            .filter(|(i, r)| r.state == RunState::Running || Some(*i) == last_other)
            .map(|(_, r)| r.clone())
            .collect();
        // Every decoded run is running (or there is none): the latest other one is the last
        // of those left undecoded (`Project::load_recent`), never running.
        if last_other.is_none()
            && let Some(last) = session.runs.undecoded().checked_sub(1)
            && let Some(run) = super::codec::decode_old(&session.runs, last)
        {
            small.runs.insert(0, run);
        }
        let mut files = String::new();
        if let Some(cp) = small.checkpoints.last_mut()
            && let Some(encoded) = rows::encode(&cp.files_changed)
        {
            files = encoded;
            cp.files_changed.clear();
        }
        Summary {
            source,
            checkpoint_count: session.checkpoints.len(),
            run_count: session.runs.total(),
            session: small,
            files,
        }
    }

    /// Puts the rows back into the latest checkpoint; `None` when they do not read back.
    fn unpack(mut self) -> Option<Summary> {
        if !self.files.is_empty() {
            let files = rows::decode(&self.files)?;
            self.session
                .checkpoints
                .last_mut()?
                .files_changed
                .extend(files);
            self.files = String::new();
        }
        Some(self)
    }
}

/// Where the summary of the session at `session_path` goes.
fn path_for(session_path: &Path) -> Option<PathBuf> {
    // `3.json`: the shape with the files as one string of rows; a build that reads an older
    // shape (`{key}.json`, `{key}.2.json`) never sees it (it would take the checkpoint for one
    // without files).
    cache_file(session_path, "3.json")
}

/// Writes the summary of `session`, just saved as `project`'s session file. Best effort: a
/// summary that cannot be written only means the next reader loads the whole file.
pub fn store(project: &Project, session: &Session) {
    let session_path = project.session_path();
    if let Some(source) = Identity::of(&session_path) {
        write(&session_path, &Summary::of(session, source));
    }
}

pub(super) fn write(session_path: &Path, summary: &Summary) -> Option<()> {
    let path = path_for(session_path)?;
    let dir = path.parent()?;
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir).ok()?;
    // The prompt's record first: it is kept even for a session whose summary is too large.
    super::prompt_record::store(session_path, &summary.session, summary.source);
    let bytes = serde_json::to_vec(summary).ok()?;
    if bytes.len() as u64 > MAX_SUMMARY_BYTES {
        let _ = std::fs::remove_file(&path);
        return None;
    }
    // A cache, checked against the session file's identity before use: it needs no fsync
    // (a torn or lost summary only means the next reader loads the whole file).
    let guard = WriteGuard::new(dir).ok()?;
    let written = guard
        .write_volatile(&path, &bytes, Named::ByUs, Links::Replace)
        .ok()
        .map(drop);
    // Temp files of writers killed mid-write (no lock guards this directory).
    crate::fsutil::remove_old_temps(dir, crate::fsutil::OLD_TEMP);
    written
}

/// The stored summary last parsed by [`with_fresh`], with its session file's path and identity,
/// kept for the command's next reader, which takes it ([`fresh`]) instead of parsing it again.
type Parsed = Option<(PathBuf, Identity, Summary)>;
static PARSED: std::sync::Mutex<Parsed> = std::sync::Mutex::new(None);

/// The summary of `project`'s session when one matches the file as it is now.
pub fn fresh(project: &Project) -> Option<Summary> {
    let session_path = project.session_path();
    let now = Identity::of(&session_path)?;
    // A command that reads the summary twice (closing dead runs, then its own work) parses
    // it once: the one [`with_fresh`] kept is taken while the file's identity is unchanged.
    if let Ok(mut parsed) = PARSED.lock()
        && let Some((path, identity, _)) = parsed.as_ref()
        && *path == session_path
        && *identity == now
    {
        return parsed.take().map(|(_, _, summary)| summary);
    }
    parse(&session_path, now)
}

/// The session file this process last saved without a summary (a provisional save), as it was
/// then: a later change in the same process (the run's after-record) knows the file is as
/// pas-agent wrote it while its identity is unchanged ([`matches_file`]).
static WRITTEN: std::sync::Mutex<Option<(PathBuf, Identity)>> = std::sync::Mutex::new(None);

/// Notes that this process just wrote the session file at `session_path` from values it had
/// checked, without storing a summary ([`WRITTEN`]).
pub fn note_written(session_path: &Path) {
    if let (Some(now), Ok(mut written)) = (Identity::of(session_path), WRITTEN.lock()) {
        *written = Some((session_path.to_path_buf(), now));
    }
}

/// Whether the session file at `session_path` is as pas-agent last wrote it, or read it in
/// full, every value in it checked: a stored summary was made from it as it is now, or this
/// process wrote it so ([`note_written`]). The summary found is kept for the next [`fresh`] of
/// the same file.
pub fn matches_file(session_path: &Path) -> bool {
    let Some(now) = Identity::of(session_path) else {
        return false;
    };
    if WRITTEN
        .lock()
        .is_ok_and(|w| matches!(w.as_ref(), Some((path, identity)) if path == session_path && *identity == now))
    {
        return true;
    }
    let Ok(mut parsed) = PARSED.lock() else {
        return false;
    };
    if matches!(parsed.as_ref(), Some((path, identity, _)) if path == session_path && *identity == now)
    {
        return true;
    }
    match parse(session_path, now) {
        Some(summary) => {
            *parsed = Some((session_path.to_path_buf(), now, summary));
            true
        }
        None => false,
    }
}

/// `f` of the summary of `project`'s session when one matches the file as it is now, which is
/// kept for the next [`fresh`] of the same file.
pub fn with_fresh<R>(project: &Project, f: impl FnOnce(&Summary) -> R) -> Option<R> {
    let session_path = project.session_path();
    let now = Identity::of(&session_path)?;
    let mut parsed = PARSED.lock().ok()?;
    if !matches!(parsed.as_ref(), Some((path, identity, _)) if *path == session_path && *identity == now)
    {
        *parsed = Some((session_path.clone(), now, parse(&session_path, now)?));
    }
    parsed.as_ref().map(|(_, _, summary)| f(summary))
}

/// The stored summary of the session at `session_path` when it was made from the file of
/// identity `now`.
fn parse(session_path: &Path, now: Identity) -> Option<Summary> {
    let summary: Summary = serde_json::from_slice(&stored_bytes(session_path)?).ok()?;
    if summary.source != now {
        return None;
    }
    summary.unpack()
}

/// The stored summary file of the session at `session_path`, as bytes (at most
/// [`MAX_SUMMARY_BYTES`]); `None` when there is none or it cannot be read.
pub(super) fn stored_bytes(session_path: &Path) -> Option<Vec<u8>> {
    fsutil::read_limited(&path_for(session_path)?, MAX_SUMMARY_BYTES).ok()?
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{FileState, FileStatus};

    fn stored(summary: &Summary) -> Summary {
        let bytes = serde_json::to_vec(summary).unwrap();
        serde_json::from_slice::<Summary>(&bytes)
            .unwrap()
            .unpack()
            .unwrap()
    }

    #[test]
    fn a_summary_counts_and_keeps_the_runs_left_undecoded() {
        // Three old runs' skeletons, then a running run: the summary holds the running run
        // and the latest other one (the last skeleton), and counts all four, however the
        // session was read.
        let t = "2026-11-30T10:00:00Z";
        let runs: Vec<_> = (0..4)
            .map(|i| {
                let mut r = serde_json::json!({
                    "id": format!("00000000-0000-4000-8000-{i:012}"), "agent": "codex",
                    "argv": ["codex"], "cwd": "/w", "state": "finished", "started_at": t,
                    "commits": [], "files_changed": []
                });
                if i < 3 {
                    r["details_in_history"] = true.into();
                } else {
                    r["state"] = "running".into();
                }
                r
            })
            .collect();
        let text = serde_json::to_string_pretty(&serde_json::json!({
            "id": "3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b", "project_name": "p",
            "created_at": t, "updated_at": t, "task": {}, "runs": runs
        }))
        .unwrap();
        let path = Path::new("session.json");
        let full = crate::session::codec::parse(path, text.as_bytes()).unwrap();
        let recent = crate::session::codec::parse_recent(path, text.as_bytes()).unwrap();
        assert_eq!(recent.runs.undecoded(), 3);
        let source = Identity {
            len: 1,
            mtime_ns: 2,
            ino: 3,
            dev: 4,
        };
        let (a, b) = (Summary::of(&recent, source), Summary::of(&full, source));
        assert_eq!((a.run_count, b.run_count), (4, 4));
        assert_eq!(a.session.runs.len(), 2);
        assert_eq!(a.session, b.session);
    }

    #[test]
    fn file_rows_round_trip_and_unknown_fields_stay_inline() {
        let now = chrono::Utc::now();
        let mut session = crate::session::ops::new_session("p".into(), "t".into(), now);
        let mut a = FileState::new("a.txt", FileStatus::Modified);
        a.fingerprint = Some("0123456789abcdef".into());
        a.fingerprint_outside_block = Some("fedcba9876543210".into());
        let b = FileState::new(
            "b.txt",
            FileStatus::Renamed {
                from: "old.txt".into(),
            },
        );
        crate::session::ops::add_checkpoint(&mut session, "one".into(), None, now);
        crate::session::ops::add_checkpoint(&mut session, "two".into(), None, now);
        session.checkpoints.last_mut().unwrap().files_changed = vec![a.clone(), b.clone()];
        let source = Identity {
            len: 1,
            mtime_ns: 2,
            ino: 3,
            dev: 4,
        };
        let summary = Summary::of(&session, source);
        assert!(!summary.files.is_empty());
        assert!(summary.session.checkpoints[0].files_changed.is_empty());
        let back = stored(&summary);
        assert_eq!(
            back.session.checkpoints[0].files_changed,
            vec![a.clone(), b]
        );
        assert_eq!(back.checkpoint_count, 2);

        // A file with a field this build does not know keeps the object form, whole.
        let mut c = a;
        c.extra.insert("new_field".into(), serde_json::json!(1));
        session.checkpoints.last_mut().unwrap().files_changed = vec![c.clone()];
        let summary = Summary::of(&session, source);
        assert!(summary.files.is_empty());
        assert_eq!(
            stored(&summary).session.checkpoints[0].files_changed,
            vec![c]
        );

        // So does a status this build does not know.
        let d = FileState::new("d.txt", FileStatus::Other(serde_json::json!("Copied")));
        session.checkpoints.last_mut().unwrap().files_changed = vec![d.clone()];
        let summary = Summary::of(&session, source);
        assert!(summary.files.is_empty());
        assert_eq!(
            stored(&summary).session.checkpoints[0].files_changed,
            vec![d]
        );
    }

    #[test]
    fn rows_hold_any_path_and_refuse_what_does_not_read_back() {
        let mut files = Vec::new();
        for (i, path) in [
            "plain.txt",
            "",
            "-",
            "12:34",
            "with \"quotes\" and \\ and\ttab\nnewline",
            "\"\\303\\251t\\351\"",
            "déjà vu/ü.txt",
            "M5:a",
            "\u{1f}\u{0}",
        ]
        .into_iter()
        .enumerate()
        {
            let status = match i % 5 {
                0 => FileStatus::Added,
                1 => FileStatus::Modified,
                2 => FileStatus::Deleted,
                3 => FileStatus::Untracked,
                _ => FileStatus::Renamed {
                    from: format!("{path}.old"),
                },
            };
            let mut f = FileState::new(path, status);
            f.fingerprint = (i % 2 == 0).then(|| format!("{i:016x}"));
            f.fingerprint_outside_block = (i % 3 == 0).then(|| "-1:".into());
            files.push(f);
        }
        let encoded = rows::encode(&files).unwrap();
        assert_eq!(rows::decode(&encoded).unwrap(), files);
        // Through JSON, as stored.
        let json = serde_json::to_string(&encoded).unwrap();
        let back: String = serde_json::from_str(&json).unwrap();
        assert_eq!(rows::decode(&back).unwrap(), files);
        assert_eq!(rows::decode("").unwrap(), vec![]);
        for bad in [
            "X1:a--",
            "M1:a-",
            "M2:a--",
            "M:a--",
            "M-1:a--",
            "M1a--",
            "R1:a---",
            "M99999999999999999999999:a--",
            "M1:é--",
            "M",
        ] {
            assert_eq!(rows::decode(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_prompt_reads_a_summary_without_its_file_rows() {
        let now = chrono::Utc::now();
        let mut session = crate::session::ops::new_session("p".into(), "t".into(), now);
        crate::session::ops::add_checkpoint(&mut session, "one".into(), None, now);
        session.checkpoints[0].files_changed = vec![FileState::new("a.txt", FileStatus::Modified)];
        let source = Identity {
            len: 1,
            mtime_ns: 2,
            ino: 3,
            dev: 4,
        };
        let bytes = serde_json::to_vec(&Summary::of(&session, source)).unwrap();
        let light: crate::session::read::WithoutFiles = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(light.source, source);
        let cp = &light.session.checkpoints[0];
        assert!(cp.files_changed.is_empty(), "rows skipped, not built");
        assert_eq!(cp.task_snapshot, session.checkpoints[0].task_snapshot);
        assert_eq!(cp.git, session.checkpoints[0].git);
        assert_eq!(light.session.task, session.task);
    }
}
