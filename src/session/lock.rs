//! The session lock: an exclusive OS lock (fs4: `flock` on Unix, `LockFileEx` on Windows) on
//! `.pas-agent/session.lock`, a file that is never renamed, so every writer locks the same
//! inode (`launcher-store.md` §D2). The lock belongs to the open handle: process exit or a
//! crash releases it, and the empty file left behind is harmless.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// Environment variable: how long to wait for the lock, in milliseconds (default 5000).
pub const TIMEOUT_ENV: &str = "PAS_AGENT_LOCK_TIMEOUT_MS";
/// Default lock timeout in milliseconds.
pub const DEFAULT_TIMEOUT_MS: u64 = 5000;
/// Name of the lock file inside `.pas-agent/`.
pub const LOCK_FILE: &str = "session.lock";
/// Contents of a new `.pas-agent/.gitignore`: what is local to this machine.
pub const GITIGNORE: &str =
    "# Local to this machine; session.json is the portable record.\nsession.lock\nruns/\n.*.tmp\n";

/// Holds the session lock until dropped.
#[derive(Debug)]
pub struct LockGuard {
    _file: File,
}

/// The lock timeout from [`TIMEOUT_ENV`]; a missing value gives the default, and so does an
/// unparseable one, with a warning.
pub fn timeout() -> Duration {
    let ms = match std::env::var(TIMEOUT_ENV) {
        Err(_) => DEFAULT_TIMEOUT_MS,
        Ok(v) => v.trim().parse::<u64>().unwrap_or_else(|_| {
            crate::term::warn(&format!(
                "{TIMEOUT_ENV}={} is not a number of milliseconds; waiting the default {DEFAULT_TIMEOUT_MS} ms",
                crate::term::clean(&v)
            ));
            DEFAULT_TIMEOUT_MS
        }),
    };
    Duration::from_millis(ms)
}

/// Takes the exclusive lock on `<state_dir>/session.lock`, creating the directory, the lock
/// file and (if missing) `.gitignore` first. Waits up to [`timeout`], polling with a short
/// backoff; contention is a wait, not an error.
///
/// Errors: [`Error::Locked`] after the timeout; [`Error::Io`] if the directory or file cannot
/// be created. A filesystem that does not support locks (some network mounts) is used
/// without one, with a warning on stderr.
pub fn acquire(state_dir: &Path) -> Result<LockGuard> {
    acquire_within(state_dir, timeout())
}

/// [`acquire`] with a given timeout instead of [`timeout`].
pub fn acquire_within(state_dir: &Path, limit: Duration) -> Result<LockGuard> {
    std::fs::create_dir_all(state_dir).map_err(|e| Error::io(state_dir, e))?;
    ensure_gitignore(state_dir)?;
    lock_file(&state_dir.join(LOCK_FILE), limit)
}

/// Takes the exclusive lock on the file at `path` (created if missing; its directory must
/// exist), waiting as [`acquire`] does. Used for other stores that follow the session's
/// locking rules, such as the launcher's machine-wide registry.
///
/// Errors: as [`acquire`].
pub fn acquire_file(path: &Path) -> Result<LockGuard> {
    lock_file(path, timeout())
}

fn lock_file(path: &Path, limit: Duration) -> Result<LockGuard> {
    let path = path.to_path_buf();
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)
        .map_err(|e| Error::io(&path, e))?;
    let start = Instant::now();
    let mut pause = Duration::from_millis(2);
    loop {
        // Fully qualified: std's inherent `File::try_lock` would otherwise win resolution.
        match fs4::FileExt::try_lock(&file) {
            Ok(()) => break,
            Err(fs4::TryLockError::WouldBlock) => {
                let waited = start.elapsed();
                if waited >= limit {
                    return Err(Error::Locked {
                        holder: holder_of(&mut file),
                        path,
                        waited_ms: waited.as_millis() as u64,
                    });
                }
                std::thread::sleep(pause.min(limit.saturating_sub(waited)));
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            Err(fs4::TryLockError::Error(e)) if lock_unsupported(&e) => {
                crate::term::warn(&format!(
                    "{}: this filesystem does not support file locks ({e}); continuing without one",
                    path.display()
                ));
                break;
            }
            Err(fs4::TryLockError::Error(e)) => return Err(Error::io(&path, e)),
        }
    }
    // For diagnostics only: who holds the lock. Mutual exclusion comes from the OS lock.
    let _ = file.set_len(0);
    let _ = file.rewind();
    let _ = writeln!(file, "{}", std::process::id());
    Ok(LockGuard { _file: file })
}

fn holder_of(file: &mut File) -> String {
    let mut text = String::new();
    let _ = file.rewind();
    let _ = file.take(32).read_to_string(&mut text);
    match text.trim().parse::<u32>() {
        Ok(pid) => format!(" (the last pas-agent to take it was pid {pid})"),
        Err(_) => String::new(),
    }
}

fn lock_unsupported(e: &std::io::Error) -> bool {
    matches!(e.kind(), std::io::ErrorKind::Unsupported)
        || matches!(e.raw_os_error(), Some(code) if is_unsupported_errno(code))
}

#[cfg(unix)]
fn is_unsupported_errno(code: i32) -> bool {
    // ENOSYS 38, EOPNOTSUPP/ENOTSUP 95 on Linux; 78 and 45 on macOS.
    matches!(code, 38 | 95 | 78 | 45)
}

#[cfg(not(unix))]
fn is_unsupported_errno(code: i32) -> bool {
    code == 1 // ERROR_INVALID_FUNCTION
}

/// Writes `.pas-agent/.gitignore` if it does not exist. An existing file is the user's and is
/// never changed.
pub fn ensure_gitignore(state_dir: &Path) -> Result<()> {
    let path: PathBuf = state_dir.join(".gitignore");
    match OpenOptions::new().write(true).create_new(true).open(&path) {
        Ok(mut f) => f
            .write_all(GITIGNORE.as_bytes())
            .map_err(|e| Error::io(&path, e)),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(Error::io(&path, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gitignore_written_once_and_never_changed() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join(".pas-agent");
        drop(acquire(&state).unwrap());
        assert_eq!(
            std::fs::read_to_string(state.join(".gitignore")).unwrap(),
            GITIGNORE
        );
        std::fs::write(state.join(".gitignore"), "mine\n").unwrap();
        drop(acquire(&state).unwrap());
        assert_eq!(
            std::fs::read_to_string(state.join(".gitignore")).unwrap(),
            "mine\n"
        );
    }

    #[test]
    fn second_holder_waits_then_gets_it() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join(".pas-agent");
        let first = acquire(&state).unwrap();
        let state2 = state.clone();
        let waiter = std::thread::spawn(move || acquire(&state2).map(|_| ()));
        std::thread::sleep(Duration::from_millis(100));
        drop(first);
        waiter.join().unwrap().unwrap();
    }
}
