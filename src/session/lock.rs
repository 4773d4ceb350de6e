//! The session lock: an exclusive OS lock (std's `File::try_lock`: `flock` on Unix, `LockFileEx` on Windows) on
//! `.pas-agent/session.lock`, a file that is never renamed, so every writer locks the same
//! inode (as coreos/bootupd#1149, "use stable inode for write lock", explains). The lock belongs to the open handle: process exit or a
//! crash releases it, and the empty file left behind is harmless.
//!
//! The lock file is opened through [`WriteGuard::open_lock`]: never through a symbolic link,
//! never truncated unless it holds nothing but a pid (a committed `session.lock` that is a
//! link to, or a hard link of, someone's file is refused or left alone). Holding the lock, the
//! taker removes temp files of writers that were killed mid-save (every writer of the
//! directory holds the lock while its temp file exists, so any it sees is stale).

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::fsutil::{self, Named, WriteGuard};

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
    /// False when the filesystem does not support locks and the guard holds none.
    held: bool,
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
/// file and (if missing) `.gitignore` first, all through the [`WriteGuard`] of the session
/// root (`state_dir`'s parent). Waits up to [`timeout`], polling with a short backoff;
/// contention is a wait, not an error. Once held, stale temp files in `state_dir` (and those of
/// the agents' context files in the root) are removed.
///
/// Errors: [`Error::Locked`] after the timeout; [`Error::Refused`] when the state directory or
/// the lock file leads outside the root or the lock file is a link; [`Error::Io`] if the
/// directory or file cannot be created. A filesystem that does not support locks (some network
/// mounts) is used without one, with a warning on stderr.
pub fn acquire(state_dir: &Path) -> Result<LockGuard> {
    acquire_within(state_dir, timeout())
}

/// [`acquire`] with a given timeout instead of [`timeout`].
pub fn acquire_within(state_dir: &Path, limit: Duration) -> Result<LockGuard> {
    acquire_in(state_dir, limit, true)
}

/// [`acquire_within`] for a session that exists: a state directory that is gone (deleted
/// meanwhile, `rm -rf .pas-agent`) is not made again, so that no writer brings back a session
/// its user removed.
///
/// Errors: as [`acquire`]; [`Error::NoSession`] when the state directory is gone.
pub fn acquire_existing(state_dir: &Path, limit: Duration) -> Result<LockGuard> {
    acquire_in(state_dir, limit, false)
}

fn acquire_in(state_dir: &Path, limit: Duration, create: bool) -> Result<LockGuard> {
    let root = match state_dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let guard = WriteGuard::new(root).map_err(|e| Error::io(root, e))?;
    let existing = match std::fs::metadata(state_dir) {
        Err(_) if !create => {
            return Err(Error::NoSession {
                start: root.to_path_buf(),
            });
        }
        Ok(m) if !create && m.is_dir() => Some(()),
        _ => None,
    };
    // Something else than a directory there is said as it always was: `create_dir_all` makes
    // nothing over it, and names what it is.
    let real = match existing {
        Some(()) => guard.check(state_dir, Named::ByUs),
        None => guard.create_dir_all(state_dir, Named::ByUs, 0o777),
    }
    .map_err(|e| Error::write(state_dir, e))?;
    ensure_gitignore_in(&guard, state_dir)?;
    let lock = lock_file(&guard, &state_dir.join(LOCK_FILE), limit)?;
    if lock.held {
        fsutil::remove_stale_temps(&real);
        // Exports of the agents' context files at the root also run under this lock.
        let names: Vec<&str> = crate::agents::launched().map(|a| a.context_file).collect();
        fsutil::remove_stale_temps_of(guard.root(), Some(&names));
    }
    Ok(lock)
}

/// Takes the exclusive lock on the file at `path` (created if missing; its directory must
/// exist and is the guarded root), waiting as [`acquire`] does, then removes stale temp files
/// in that directory. Used for other stores that follow the session's locking rules, such as
/// the launcher's machine-wide registry.
///
/// Errors: as [`acquire`].
pub fn acquire_file(path: &Path) -> Result<LockGuard> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let guard = WriteGuard::new(dir).map_err(|e| Error::io(dir, e))?;
    let lock = lock_file(&guard, path, timeout())?;
    if lock.held {
        fsutil::remove_stale_temps(guard.root());
    }
    Ok(lock)
}

/// Takes the exclusive lock on the file at `path` (created if missing, through the
/// [`WriteGuard`] of its directory), waiting at most `limit` (zero: one try), and nothing
/// else: no temp files are removed, so the directory may hold files written without this
/// lock (the hooks' session markers).
///
/// Errors: as [`acquire`]; [`Error::Locked`] when another process holds it past `limit`.
pub fn acquire_only(path: &Path, limit: Duration) -> Result<LockGuard> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let guard = WriteGuard::new(dir).map_err(|e| Error::io(dir, e))?;
    lock_file(&guard, path, limit)
}

fn lock_file(guard: &WriteGuard, path: &Path, limit: Duration) -> Result<LockGuard> {
    let path = path.to_path_buf();
    let (mut file, _created) = guard.open_lock(&path).map_err(|e| match e {
        fsutil::WriteError::NotAFile(kind) => Error::Refused {
            path: path.clone(),
            problem: format!(
                "the lock file is {kind}, not a regular file; nothing was written (remove it)"
            ),
        },
        e => Error::write(&path, e),
    })?;
    let start = Instant::now();
    let mut pause = Duration::from_millis(2);
    let mut held = true;
    loop {
        match file.try_lock() {
            Ok(()) => break,
            Err(std::fs::TryLockError::WouldBlock) => {
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
            Err(std::fs::TryLockError::Error(e)) if lock_unsupported(&e) => {
                crate::term::warn(&format!(
                    "{}: this file system cannot lock files ({e}); continuing without the lock, so two pas-agent commands writing at the same moment could lose one change",
                    path.display()
                ));
                held = false;
                break;
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(Error::io(&path, e)),
        }
    }
    // For diagnostics only: who holds the lock. Mutual exclusion comes from the OS lock. Only
    // a file that holds nothing but a pid, with no other hard link, is rewritten: a committed
    // or linked file with other contents is never truncated.
    // The pid is written padded to a fixed width, over what was there: truncating the file
    // first is a change of its size, which costs a journal update on every lock taken.
    if let Some(len) = ours(&mut file) {
        let line = format!("{:<PID_WIDTH$}\n", std::process::id());
        if len > line.len() as u64 {
            let _ = file.set_len(0);
        }
        let _ = file.rewind();
        let _ = file.write_all(line.as_bytes());
    }
    Ok(LockGuard { _file: file, held })
}

/// The width the pid in a lock file is padded to with spaces (a pid is at most 7 digits on
/// Linux, 10 anywhere): every pas-agent writes the same length, so none has to truncate.
const PID_WIDTH: usize = 10;

/// The length of the open lock file when it is one pas-agent wrote: one link, empty or a pid
/// line.
fn ours(file: &mut File) -> Option<u64> {
    let meta = file.metadata().ok()?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if meta.nlink() != 1 {
            return None;
        }
    }
    if meta.len() > 32 {
        return None;
    }
    let mut text = String::new();
    let _ = file.rewind();
    file.take(32).read_to_string(&mut text).ok()?;
    let t = text.trim();
    (t.is_empty() || t.bytes().all(|b| b.is_ascii_digit())).then_some(meta.len())
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

/// Whether a lock error says the file system cannot give a lock at all (as opposed to a
/// failure worth stopping for): `ENOLCK` (no locks available — NFS mounted without a lock
/// manager, `nolock`), `EOPNOTSUPP`/`ENOTSUP` (a FUSE or SMB mount without locks) and `ENOSYS`.
/// Numbers from the platform's own headers through `libc`: ENOLCK 37, EOPNOTSUPP 95, ENOSYS 38
/// on Linux; ENOLCK 77, EOPNOTSUPP 102, ENOTSUP 45, ENOSYS 78 on macOS.
#[cfg(unix)]
fn is_unsupported_errno(code: i32) -> bool {
    code == libc::ENOLCK
        || code == libc::EOPNOTSUPP
        || code == libc::ENOTSUP
        || code == libc::ENOSYS
}

#[cfg(not(unix))]
fn is_unsupported_errno(code: i32) -> bool {
    code == 1 // ERROR_INVALID_FUNCTION
}

/// Writes `.pas-agent/.gitignore` if it does not exist. An existing file (or link, even a
/// dangling one) is the user's and is never changed or followed.
///
/// Errors: as [`acquire`].
pub fn ensure_gitignore(state_dir: &Path) -> Result<()> {
    let root = state_dir.parent().unwrap_or(Path::new("."));
    let guard = WriteGuard::new(root).map_err(|e| Error::io(root, e))?;
    ensure_gitignore_in(&guard, state_dir)
}

fn ensure_gitignore_in(guard: &WriteGuard, state_dir: &Path) -> Result<()> {
    let path: PathBuf = state_dir.join(".gitignore");
    match guard.create_new(&path, 0o666) {
        Ok(mut f) => f
            .write_all(GITIGNORE.as_bytes())
            .map_err(|e| Error::io(&path, e)),
        Err(fsutil::WriteError::Io(e)) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(Error::write(&path, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_of_an_existing_session_never_makes_its_directory() {
        let root = tempfile::tempdir().unwrap();
        let state = root.path().join(".pas-agent");
        let err = acquire_existing(&state, Duration::from_millis(50)).unwrap_err();
        assert!(matches!(err, Error::NoSession { .. }), "{err}");
        assert!(!state.exists());
        // `init`'s lock makes it; then the lock of an existing session is taken there.
        drop(acquire_within(&state, Duration::from_millis(50)).unwrap());
        assert!(state.join(".gitignore").is_file());
        let held = acquire_existing(&state, Duration::from_millis(50)).unwrap();
        assert!(held.held);
    }

    #[cfg(unix)]
    #[test]
    fn every_lockless_file_system_errno_is_a_warning() {
        #[cfg(target_os = "linux")]
        let (lockless, others) = (
            [37, 95, 38],
            [libc::EIO, libc::EACCES, libc::EAGAIN, libc::EBADF],
        );
        #[cfg(target_os = "macos")]
        let (lockless, others) = (
            [77, 102, 45, 78],
            [libc::EIO, libc::EACCES, libc::EAGAIN, libc::EBADF],
        );
        #[cfg(not(any(target_os = "linux", target_os = "macos")))]
        let (lockless, others): ([i32; 0], [i32; 0]) = ([], []);
        for code in lockless {
            assert!(
                lock_unsupported(&std::io::Error::from_raw_os_error(code)),
                "{code}"
            );
        }
        for code in others {
            assert!(
                !lock_unsupported(&std::io::Error::from_raw_os_error(code)),
                "{code}"
            );
        }
    }

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
