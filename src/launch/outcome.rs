//! Keeping a run's outcome when its after-record cannot be saved — typically because the agent
//! filled the disk.
//!
//! Before the agent starts, the launcher reserves space next to the session:
//! `.pas-agent/runs/<run-id>/outcome.reserve`, a file of zeros about twice the size of
//! `session.json` plus [`MARGIN`] (really written, so the blocks are allocated). When saving
//! the after-record fails, the launcher
//! 1. writes the outcome (exit code or signal, end time, duration, why the save failed) over the
//!    start of the reserve, in place (no new blocks needed), truncates it — which frees the rest
//!    — and renames it to `outcome.json` (the [`Pending`] outcome);
//! 2. saves the after-record again, now with the freed space; on success `outcome.json` goes.
//!
//! If that save fails too, `outcome.json` stays (or, when there was no reserve to write it in,
//! the outcome goes into the run's entry in the machine-wide registry, often on another disk),
//! and the next pas-agent command in the project
//! that finds the run `running` with its launcher gone records it as `finished` with that
//! outcome (and `outcome_recorded_late` saying why) instead of `abandoned`. Nothing here ever
//! claims a kill: a run whose outcome was lost is `abandoned` with exit code and signal null.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Seek, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::capture::RUNS_DIR;
use crate::fsutil::{Named, WriteError, WriteGuard};

/// Space reserved beyond twice the session file's size: 256 KiB.
pub const MARGIN: u64 = 256 * 1024;
/// The most space reserved for one run: 160 MiB (the session limit, twice, plus margin).
pub const MAX_RESERVE: u64 = 2 * crate::limits::SESSION.bytes + 32 * 1024 * 1024;
/// Name of the reserve file in the run's directory.
pub const RESERVE_FILE: &str = "outcome.reserve";
/// Name of the pending outcome in the run's directory.
pub const PENDING_FILE: &str = "outcome.json";
/// Largest pending outcome read or written: 64 KiB (the reason is cut to fit).
pub const PENDING_MAX_BYTES: u64 = 64 * 1024;
/// The reason is cut to this many characters, so the file stays under [`PENDING_MAX_BYTES`].
const MAX_REASON_CHARS: usize = 4096;

/// The outcome of a run whose after-record could not be saved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pending {
    /// The run's id.
    pub run_id: Uuid,
    /// The run record's nonce (the outcome applies only to that record).
    pub nonce: String,
    /// When the agent exited; RFC 3339 UTC.
    pub ended_at: DateTime<Utc>,
    /// Run time in whole milliseconds.
    pub duration_ms: u64,
    /// The agent's exit code, null when a signal ended it.
    pub exit_code: Option<i32>,
    /// The signal that ended it, else null.
    pub signal: Option<i32>,
    /// Why the after-record could not be saved.
    pub reason: String,
}

pub(crate) fn run_dir(root: &Path, run_id: &Uuid) -> PathBuf {
    root.join(RUNS_DIR).join(run_id.to_string())
}

/// Path of a run's pending outcome.
pub fn pending_path(root: &Path, run_id: &Uuid) -> PathBuf {
    run_dir(root, run_id).join(PENDING_FILE)
}

/// Reserves space for the after-record of a run of the project at `root` whose session file is
/// `session_len` bytes now.
///
/// Returns the reserve's modification time: a time of the project's file system's own clock,
/// taken just before the run starts (the span of a bare run starts there, see
/// `delta::unchanged_in_span`).
///
/// Errors: the space could not be reserved (the caller warns and the run goes on; a full disk
/// may then cost the outcome, which is reported).
pub fn reserve(root: &Path, run_id: &Uuid, session_len: u64) -> io::Result<SystemTime> {
    let dir = run_dir(root, run_id);
    // Never create files through a link that leaves the project, nor into one planted there.
    let guard = guard(root)?;
    for d in [&root.join(RUNS_DIR), &dir] {
        if fs::symlink_metadata(d).is_ok_and(|m| m.file_type().is_symlink() || !m.is_dir()) {
            return Err(io::Error::other(format!(
                "{} is not a plain directory",
                d.display()
            )));
        }
    }
    guard
        .create_dir_all(&dir, Named::ByUs, 0o700)
        .map_err(refused)?;
    let size = session_len
        .saturating_mul(2)
        .saturating_add(MARGIN)
        .min(MAX_RESERVE);
    let path = dir.join(RESERVE_FILE);
    // Reserves of launchers killed before they could clear them go first.
    sweep(root);
    let result = (|| {
        let mut file = guard.create_new(&path, 0o600).map_err(refused)?;
        // Who holds the reserve, so that [`sweep`] can tell when its launcher is gone.
        let header = format!(
            "{RESERVE_HEADER} pid={} start={}\n",
            std::process::id(),
            super::process::own_start_token().unwrap_or_default()
        );
        file.write_all(header.as_bytes())?;
        // Real zeros, not `set_len`: a sparse file would reserve nothing. No fsync: the
        // filesystem accounts for the space at `write` (ext4's delayed allocation included),
        // and the contents do not matter.
        let chunk = vec![0u8; 64 * 1024];
        let mut left = size.saturating_sub(header.len() as u64);
        while left > 0 {
            let n = left.min(chunk.len() as u64) as usize;
            file.write_all(&chunk[..n])?;
            left -= n as u64;
        }
        file.metadata()?.modified()
    })();
    if result.is_err() {
        let _ = guard.remove(&path, Named::ByUs);
    }
    result
}

/// How a reserve begins: this, then ` pid=<launcher pid> start=<its start token>` and a
/// newline, then zeros.
const RESERVE_HEADER: &str = "pas-agent outcome reserve";

/// A reserve without a header (written by pas-agent 0.4 and earlier) is taken for a killed
/// launcher's once it is this old.
const HEADERLESS_STALE: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// Removes the reserves whose launcher is gone (killed before it could free its reserve: a
/// SIGKILL, a crash, a power cut), and the run directories they leave empty. Judged on
/// positive evidence only: the launcher named in the reserve's header is provably not
/// running ([`super::process::liveness`]). A pending outcome is left for the reconcile that
/// records it. Returns how many reserves were removed; errors are ignored.
pub fn sweep(root: &Path) -> usize {
    let Ok(guard) = guard(root) else {
        return 0;
    };
    let runs = root.join(RUNS_DIR);
    // Never listed through a link the repository planted.
    if guard.check(&runs, Named::ByUs).is_err()
        || fs::symlink_metadata(&runs).is_ok_and(|m| m.file_type().is_symlink())
    {
        return 0;
    }
    let Ok(entries) = fs::read_dir(&runs) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let dir = entry.path();
        let reserve = dir.join(RESERVE_FILE);
        let Some(head) = head_of(&guard, &reserve) else {
            continue;
        };
        if !reserve_is_stale(&head, &reserve) {
            continue;
        }
        if guard.remove(&reserve, Named::ByUs).is_ok() {
            removed += 1;
            let _ = guard.remove_dir(&dir, Named::ByUs);
        }
    }
    removed
}

/// The first line of the reserve at `path` (at most 256 bytes), when it is a regular file
/// inside the root.
fn head_of(guard: &WriteGuard, path: &Path) -> Option<String> {
    use std::io::Read as _;
    let real = guard.check(path, Named::ByUs).ok()?;
    if !fs::symlink_metadata(path).ok()?.is_file() {
        return None;
    }
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    let mut buf = Vec::with_capacity(256);
    options
        .open(real)
        .ok()?
        .take(256)
        .read_to_end(&mut buf)
        .ok()?;
    let end = buf.iter().position(|&c| c == b'\n').unwrap_or(buf.len());
    Some(String::from_utf8_lossy(&buf[..end]).into_owned())
}

/// Notes in the run's reserve that its agent was started at `at` (its first line gains
/// ` agent_started=<RFC 3339>`, over the zeros after it): no lock, no `fsync`, so the agent
/// starts as fast as before. A later reconcile of a run whose launcher was lost reads it
/// ([`agent_started`]) into the record.
///
/// Errors: there is no reserve (it could not be made), or writing failed.
pub fn mark_started(root: &Path, run_id: &Uuid, at: DateTime<Utc>) -> io::Result<()> {
    let guard = guard(root)?;
    let path = run_dir(root, run_id).join(RESERVE_FILE);
    let head = head_of(&guard, &path).ok_or_else(|| io::Error::other("no reserve"))?;
    if !head.starts_with(RESERVE_HEADER) || head.contains(" agent_started=") {
        return Err(io::Error::other("not a reserve of this version"));
    }
    let line = format!(
        "{head} agent_started={}\n",
        at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
    );
    let real = guard.check(&path, Named::ByUs).map_err(refused)?;
    let mut options = OpenOptions::new();
    options.write(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW);
    }
    let mut file = options.open(real)?;
    if file.metadata()?.len() < line.len() as u64 {
        return Err(io::Error::other("the reserve is too small"));
    }
    file.write_all(line.as_bytes())
}

/// When the run's reserve says its agent was started ([`mark_started`]), if it does.
pub fn agent_started(root: &Path, run_id: &Uuid) -> Option<DateTime<Utc>> {
    let guard = guard(root).ok()?;
    let head = head_of(&guard, &run_dir(root, run_id).join(RESERVE_FILE))?;
    let at = head
        .strip_prefix(RESERVE_HEADER)?
        .split_whitespace()
        .find_map(|w| w.strip_prefix("agent_started="))?;
    DateTime::parse_from_rfc3339(at)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

fn reserve_is_stale(head: &str, path: &Path) -> bool {
    let Some(rest) = head.strip_prefix(RESERVE_HEADER) else {
        return fs::metadata(path)
            .and_then(|m| m.modified())
            .is_ok_and(|t| t.elapsed().is_ok_and(|age| age > HEADERLESS_STALE));
    };
    let field = |name: &str| {
        rest.split_whitespace()
            .find_map(|w| w.strip_prefix(name))
            .filter(|v| !v.is_empty())
    };
    let pid = field("pid=").and_then(|p| p.parse::<u32>().ok());
    super::process::liveness(pid, field("start=")) == super::process::Liveness::Dead
}

fn guard(root: &Path) -> io::Result<WriteGuard> {
    WriteGuard::new(root)
}

fn refused(e: WriteError) -> io::Error {
    match e {
        WriteError::Io(e) => e,
        e => io::Error::other(e.to_string()),
    }
}

/// Writes `pending` over the start of the run's reserve (in place, no new space needed),
/// truncates it and renames it to [`PENDING_FILE`]. Returns the pending file's path.
///
/// Errors: there is no reserve, or writing failed (the reserve is then removed, to free its
/// space for the retry anyway).
pub fn keep(root: &Path, pending: &Pending) -> io::Result<PathBuf> {
    let dir = run_dir(root, &pending.run_id);
    let reserve = dir.join(RESERVE_FILE);
    let target = dir.join(PENDING_FILE);
    let mut pending = pending.clone();
    if pending.reason.chars().count() > MAX_REASON_CHARS {
        pending.reason = pending.reason.chars().take(MAX_REASON_CHARS).collect();
    }
    let mut bytes = serde_json::to_vec_pretty(&pending).map_err(io::Error::other)?;
    bytes.push(b'\n');
    if bytes.len() as u64 > PENDING_MAX_BYTES {
        return Err(io::Error::other("the outcome does not fit its file"));
    }
    let guard = guard(root)?;
    let result = (|| {
        let real = guard.check(&reserve, Named::ByUs).map_err(refused)?;
        let meta = fs::symlink_metadata(&reserve)?;
        if !meta.is_file() {
            return Err(io::Error::other("the reserve is not a regular file"));
        }
        let mut options = OpenOptions::new();
        options.write(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.custom_flags(libc::O_NOFOLLOW);
        }
        let mut file = options.open(&real)?;
        file.seek(io::SeekFrom::Start(0))?;
        file.write_all(&bytes)?;
        file.set_len(bytes.len() as u64)?;
        file.sync_all()?;
        drop(file);
        guard.rename(&reserve, &target).map_err(refused)?;
        if let Ok(d) = File::open(&dir) {
            let _ = d.sync_all();
        }
        Ok(target.clone())
    })();
    if result.is_err() {
        let _ = guard.remove(&reserve, Named::ByUs);
    }
    result
}

/// The pending outcome of a run, if one was kept and is readable: in the project, else in
/// the machine-wide registry.
pub fn pending(root: &Path, run_id: &Uuid) -> Option<Pending> {
    let in_project = || {
        let bytes = guard(root)
            .ok()?
            .read(&pending_path(root, run_id), PENDING_MAX_BYTES)
            .ok()??;
        serde_json::from_slice::<Pending>(&bytes).ok()
    };
    let in_registry = || {
        super::registry::Registry::open()
            .ok()?
            .entries()
            .ok()?
            .into_iter()
            .find(|e| e.run_id == *run_id)
            .and_then(|e| of_entry(&e))
    };
    in_project()
        .or_else(in_registry)
        .filter(|p| p.run_id == *run_id)
}

/// The pending outcome a registry entry keeps for its project, if it holds a readable one.
pub fn of_entry(entry: &super::registry::Entry) -> Option<Pending> {
    serde_json::from_value(entry.outcome()?.clone()).ok()
}

/// Removes what this module left for a run (reserve, pending outcome), and the run's
/// directory and `.pas-agent/runs` when nothing else is in them.
pub fn clear(root: &Path, run_id: &Uuid) {
    // Through the guard: a run directory the repository planted as a link leads nowhere.
    let Ok(guard) = guard(root) else {
        return;
    };
    let dir = run_dir(root, run_id);
    for name in [RESERVE_FILE, PENDING_FILE] {
        let _ = guard.remove(&dir.join(name), Named::ByUs);
    }
    // These fail (and are meant to) while a capture or another run's files are there.
    let _ = guard.remove_dir(&dir, Named::ByUs);
    let _ = guard.remove_dir(&root.join(RUNS_DIR), Named::ByUs);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserve_keep_and_read_back() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        fs::create_dir(root.join(".pas-agent")).unwrap();
        let id = Uuid::new_v4();
        reserve(root, &id, 1000).unwrap();
        let reserved = fs::metadata(run_dir(root, &id).join(RESERVE_FILE)).unwrap();
        assert_eq!(reserved.len(), 2000 + MARGIN);
        let p = Pending {
            run_id: id,
            nonce: "n".into(),
            ended_at: Utc::now(),
            duration_ms: 5,
            exit_code: Some(3),
            signal: None,
            reason: "No space left on device".into(),
        };
        let path = keep(root, &p).unwrap();
        assert_eq!(path, pending_path(root, &id));
        assert!(!run_dir(root, &id).join(RESERVE_FILE).exists());
        assert_eq!(pending(root, &id), Some(p));
        clear(root, &id);
        assert!(!root.join(RUNS_DIR).exists());
    }
}
