//! Loading and saving `.pas-agent/session.json` (docs/format.md).
//!
//! Readers load without a lock: every save is an atomic rename, so a reader sees the old file
//! or the new one, whole. Writers go through [`Project::modify`], which holds the session lock
//! for the whole read–modify–write and re-reads the file under it, so concurrent writers never
//! lose an update. A file that cannot be understood is reported and never written.

use std::path::Path;

use super::codec::{parse, parse_recent, to_json};
use super::lock::{self, LockGuard};
pub use super::project::{Project, SESSION_FILE, STATE_DIR};
use crate::error::{Error, Result};
use crate::fsutil::{self, Links, Named, ReadError, WriteGuard};
use crate::model::Session;

/// Largest `session.json` that is read or written (64 MiB, [`crate::limits::SESSION`]); a
/// larger file is reported as damaged, and a change that would make it larger is refused.
pub const MAX_SESSION_BYTES: u64 = crate::limits::SESSION.bytes;

/// The line ends of a session file, kept as found: a `session.json` committed with CRLF (by
/// git's `core.autocrlf` on Windows, or an editor there) is written back with CRLF, so one
/// changed field is one changed line, not a whole-file diff.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineEnds {
    /// `\n`, as pas-agent and the original write.
    Lf,
    /// `\r\n`.
    CrLf,
}

impl LineEnds {
    /// The line ends of `bytes`: those of its first line (a file of one line: LF).
    pub fn of(bytes: &[u8]) -> LineEnds {
        match bytes.iter().position(|&b| b == b'\n') {
            Some(i) if i > 0 && bytes[i - 1] == b'\r' => LineEnds::CrLf,
            _ => LineEnds::Lf,
        }
    }

    /// `json` (pas-agent's own output: every newline is a line end, strings hold none raw)
    /// with these line ends. A line that already ends in `\r\n` (an old run written back as
    /// it was, from a file with CRLF) keeps it.
    pub fn apply(self, json: Vec<u8>) -> Vec<u8> {
        match self {
            LineEnds::Lf => json,
            LineEnds::CrLf => {
                let mut out = Vec::with_capacity(json.len() + json.len() / 16);
                for b in json {
                    if b == b'\n' && out.last() != Some(&b'\r') {
                        out.push(b'\r');
                    }
                    out.push(b);
                }
                out
            }
        }
    }
}

/// How a change to the session is saved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Save {
    /// Durably (the file and its directory `fsync`ed), with the readers' summary and prompt
    /// record rewritten to match and the last good session kept.
    Settled,
    /// For a change a settled save completes soon (a run's `running` record):
    /// - the file is `fsync`ed before the rename, so after a power cut `session.json` is the
    ///   old file or the new one, whole; the directory is not, so the rename may be lost. What
    ///   is lost then is a record of a run that the power cut ended, with no outcome to record:
    ///   the session is as it was before the run (its agent's own session store still has the
    ///   conversation), and the run's reserve is removed by the next run (its launcher is of
    ///   an earlier boot). Nothing that was saved before is lost.
    /// - the summary and prompt record ([`super::summary`], [`super::prompt_record`]) are not
    ///   rewritten: the new file's `stat` identity does not match theirs, so a reader in the
    ///   meantime reads the file itself (and rewrites them), and the settled save that
    ///   follows rewrites them anyway.
    /// - the last good session is kept as for a settled save (`pas-agent recover` brings back
    ///   the running record, should the agent damage the file during the run).
    Provisional,
}

/// [`parse_recent`] for a file pas-agent last wrote or read in full (a stored summary matches
/// it, [`super::summary::matches_file`]), else [`parse`]: old runs' skeletons are left
/// undecoded, and written back as they are, only once every value in them was checked, so a
/// skeleton damaged by a hand edit or a merge is refused as a full load refuses it, never
/// copied on into the last good copy `recover` restores.
fn parse_recent_if_checked(path: &Path, bytes: &[u8]) -> Result<Session> {
    if super::summary::matches_file(path) {
        parse_recent(path, bytes)
    } else {
        parse(path, bytes)
    }
}

impl Project {
    /// Loads the session without locking.
    ///
    /// Errors: [`Error::NoSession`] if nothing is there; [`Error::Damaged`] when what stands
    /// where the file should be is not a regular file (a directory, a FIFO — never waited on —,
    /// a socket, a dangling link, a `.pas-agent` that is not a directory), or as described in
    /// [`parse`]; [`Error::Io`] on read failures.
    pub fn load(&self) -> Result<Session> {
        self.load_up_to(MAX_SESSION_BYTES)
    }

    /// Loads the session as [`Project::load`] does, but with the leading old runs' skeletons
    /// left undecoded ([`super::codec::parse_recent`]): `session.runs` then holds only the
    /// runs after them ([`crate::model::Runs`]). For commands that read no old run.
    ///
    /// Errors: those of [`Project::load`].
    pub fn load_recent(&self) -> Result<Session> {
        self.load_bytes_with(MAX_SESSION_BYTES, parse_recent_if_checked)
            .map(|(s, _)| s)
    }

    /// How many runs the session has and run `number` (1-based; `None` when out of range),
    /// decoding nothing else ([`super::codec::one_run`]), for `runs N`.
    ///
    /// Errors: those of [`Project::load`] (a file that is not JSON, or whose run `number`
    /// does not read, is read in full to say why).
    pub fn load_run(&self, number: usize) -> Result<(usize, Option<crate::model::Run>)> {
        self.load_bytes_with(
            MAX_SESSION_BYTES,
            |path, bytes| match super::codec::one_run(bytes, number) {
                Some(found) => Ok(found),
                None => parse(path, bytes).map(|s| {
                    let run = number.checked_sub(1).and_then(|i| s.runs.get(i)).cloned();
                    (s.runs.total(), run)
                }),
            },
        )
        .map(|(found, _)| found)
    }

    /// Loads the session for a change: like [`Project::load`], but a file above the limit
    /// (up to [`crate::limits::SESSION_RECOVERY_BYTES`]) is still read, so that a change that
    /// shrinks it (`remove`) can bring it back under the limit; [`Project::save`] refuses any
    /// result above the limit.
    fn load_for_change(
        &self,
        parse: fn(&Path, &[u8]) -> Result<Session>,
    ) -> Result<(Session, LineEnds)> {
        self.load_bytes_with(crate::limits::SESSION_RECOVERY_BYTES, parse)
            .map(|(s, bytes)| (s, LineEnds::of(&bytes)))
    }

    fn load_up_to(&self, cap: u64) -> Result<Session> {
        self.load_bytes(cap).map(|(s, _)| s)
    }

    fn load_bytes(&self, cap: u64) -> Result<(Session, Vec<u8>)> {
        self.load_bytes_with(cap, parse)
    }

    fn load_bytes_with<T>(
        &self,
        cap: u64,
        parse: impl FnOnce(&Path, &[u8]) -> Result<T>,
    ) -> Result<(T, Vec<u8>)> {
        let path = self.session_path();
        if let Some(problem) = self.not_a_session_file() {
            return Err(Error::Damaged { path, problem });
        }
        match fsutil::read_limited(&path, cap) {
            Ok(Some(bytes)) => parse(&path, &bytes).map(|s| (s, bytes)),
            Ok(None) => Err(Error::NoSession {
                start: self.root.clone(),
            }),
            Err(ReadError::TooLarge(size)) => {
                let hint = if size <= crate::limits::SESSION_RECOVERY_BYTES {
                    "; commands that change the session still read it, and `pas-agent remove` can bring it back under the limit"
                } else {
                    ""
                };
                Err(Error::Damaged {
                    path,
                    problem: format!("{}{hint}", crate::limits::SESSION.read_refusal(size)),
                })
            }
            Err(ReadError::NotAFile(kind)) => Err(Error::Damaged {
                path,
                problem: format!(
                    "this is {kind}, not a session file; remove it or put the session file back"
                ),
            }),
            Err(ReadError::Io(e)) => Err(Error::io(path, e)),
        }
    }

    /// Checks that what stands at the session path is a regular file (or a link to one) or
    /// nothing, without opening it.
    ///
    /// Errors: [`Error::Damaged`] naming the file and what it is instead (a directory, FIFO,
    /// socket, dangling link, or a `.pas-agent` that is not a directory).
    pub fn check_session_file(&self) -> Result<()> {
        match self.not_a_session_file() {
            Some(problem) => Err(Error::Damaged {
                path: self.session_path(),
                problem,
            }),
            None => Ok(()),
        }
    }

    /// Why what stands at the session path (or the state directory) cannot be a session file,
    /// or `None` when it is a regular file, a link to one, or absent.
    fn not_a_session_file(&self) -> Option<String> {
        let state = self.state_dir();
        let link = |p: &Path| {
            std::fs::read_link(p)
                .map(|t| crate::term::clean(&t.to_string_lossy()))
                .unwrap_or_default()
        };
        match std::fs::symlink_metadata(&state) {
            Err(_) => return None,
            Ok(meta) if !state.is_dir() => {
                return Some(if meta.file_type().is_symlink() {
                    format!(
                        "{STATE_DIR} is a symbolic link to {}, which is not a directory",
                        link(&state)
                    )
                } else {
                    format!("{STATE_DIR} is {}, not a directory", fsutil::kind_of(&meta))
                });
            }
            Ok(_) => {}
        }
        let path = self.session_path();
        let meta = std::fs::symlink_metadata(&path).ok()?;
        if meta.file_type().is_symlink() {
            return match std::fs::metadata(&path) {
                Err(_) => Some(format!(
                    "this is a dangling symbolic link (to {}); remove it or restore its target",
                    link(&path)
                )),
                Ok(target) if !target.is_file() => Some(format!(
                    "this is a symbolic link to {} ({}), not a session file",
                    link(&path),
                    fsutil::kind_of(&target)
                )),
                Ok(_) => None,
            };
        }
        (!meta.is_file()).then(|| {
            format!(
                "this is {}, not a session file; remove it or put the session file back",
                fsutil::kind_of(&meta)
            )
        })
    }

    /// Takes the session lock until the guard is dropped, in a state directory that exists
    /// ([`lock::acquire_existing`]: a session deleted meanwhile is not made again).
    pub fn lock(&self) -> Result<LockGuard> {
        lock::acquire_existing(&self.state_dir(), lock::timeout())
    }

    /// Locks, loads, applies `change`, saves and unlocks. When `change` fails nothing is saved.
    /// Keep slow work (git, prompts) out of `change`: it runs while other writers wait.
    pub fn modify<T>(&self, change: impl FnOnce(&mut Session) -> Result<T>) -> Result<T> {
        self.modify_within(lock::timeout(), change)
    }

    /// [`Project::modify`] for a change that reads no old run: `change` gets the session as
    /// [`Project::load_recent`] gives it, and the old runs left undecoded are written back as
    /// they were (`update`, `checkpoint`).
    pub fn modify_recent<T>(&self, change: impl FnOnce(&mut Session) -> Result<T>) -> Result<T> {
        self.modify_as(
            lock::timeout(),
            Save::Settled,
            parse_recent_if_checked,
            change,
        )
    }

    /// [`Project::modify`], waiting up to `limit` for the lock: for a write that must not be
    /// lost to a busy moment (a run's after-record).
    pub fn modify_within<T>(
        &self,
        limit: std::time::Duration,
        change: impl FnOnce(&mut Session) -> Result<T>,
    ) -> Result<T> {
        self.modify_as(limit, Save::Settled, parse, change)
    }

    /// [`Project::modify_recent`], waiting up to `limit` for the lock: for a write that must not
    /// be lost to a busy moment (a run's after-record).
    pub fn modify_recent_within<T>(
        &self,
        limit: std::time::Duration,
        change: impl FnOnce(&mut Session) -> Result<T>,
    ) -> Result<T> {
        self.modify_as(limit, Save::Settled, parse_recent_if_checked, change)
    }

    /// [`Project::modify_recent`] for a change that a settled save completes soon: a run's
    /// `running` record, which its after-record (or the reconcile of a launcher that was lost)
    /// replaces. It is saved as [`Save::Provisional`] says, which keeps two `fsync`s and two
    /// file writes off the time before the agent starts.
    pub fn modify_provisional<T>(
        &self,
        change: impl FnOnce(&mut Session) -> Result<T>,
    ) -> Result<T> {
        self.modify_as(
            lock::timeout(),
            Save::Provisional,
            parse_recent_if_checked,
            change,
        )
    }

    fn modify_as<T>(
        &self,
        limit: std::time::Duration,
        how: Save,
        parse: fn(&Path, &[u8]) -> Result<Session>,
        change: impl FnOnce(&mut Session) -> Result<T>,
    ) -> Result<T> {
        let (_guard, mut session, ends) = self.lock_and_load_within(limit, parse)?;
        let out = change(&mut session)?;
        self.save_changed(&mut session, ends, how)?;
        Ok(out)
    }

    /// [`Project::modify_as`]'s first half, not generic so that it is compiled once: the lock,
    /// then the session as it is under it.
    fn lock_and_load_within(
        &self,
        limit: std::time::Duration,
        parse: fn(&Path, &[u8]) -> Result<Session>,
    ) -> Result<(LockGuard, Session, LineEnds)> {
        // A session deleted meanwhile (say `rm -rf .pas-agent` during a run) must not come
        // back as a directory holding only a lock and a .gitignore: the lock is taken only in a
        // state directory that exists (also when it goes between this check and the lock).
        if std::fs::symlink_metadata(self.state_dir()).is_err() {
            return Err(Error::NoSession {
                start: self.root.clone(),
            });
        }
        let guard = lock::acquire_existing(&self.state_dir(), limit)?;
        let (session, ends) = self.load_for_change(parse)?;
        Ok((guard, session, ends))
    }

    /// [`Project::modify_as`]'s second half, under the lock: old runs moved out to the
    /// history, then the session saved as `how` says.
    fn save_changed(&self, session: &mut Session, ends: LineEnds, how: Save) -> Result<()> {
        super::history::move_out(self, session)?;
        self.save_as(session, ends, how)
    }

    /// Writes a new session, failing if one appeared meanwhile (checked under the lock, so of
    /// several concurrent `init`s exactly one succeeds).
    pub fn create(&self, session: &Session) -> Result<()> {
        let _guard = lock::acquire(&self.state_dir())?;
        if let Some(problem) = self.not_a_session_file() {
            return Err(Error::Damaged {
                path: self.session_path(),
                problem,
            });
        }
        if self.has_session() {
            return Err(Error::SessionExists {
                path: self.session_path(),
            });
        }
        self.save(session, LineEnds::Lf)
    }

    /// Replaces the session file with `session` under the lock, without reading what is there
    /// first: for `resolve`, whose file holds conflict markers no load accepts.
    pub fn overwrite(&self, session: &Session) -> Result<()> {
        if std::fs::symlink_metadata(self.state_dir()).is_err() {
            return Err(Error::NoSession {
                start: self.root.clone(),
            });
        }
        let _guard = self.lock()?;
        let ends =
            fsutil::read_limited(&self.session_path(), crate::limits::SESSION_RECOVERY_BYTES)
                .ok()
                .flatten()
                .map_or(LineEnds::Lf, |b| LineEnds::of(&b));
        self.save(session, ends)
    }

    /// Puts `bytes` (the kept copy of a good session, see [`super::backup`]) back as the
    /// session file under the lock, after keeping what stands there now (a damaged file, or,
    /// when `keep_current` says so, one that loads) in `aside`. Returns the session restored.
    ///
    /// Errors: [`Error::Damaged`] when `bytes` do not hold a good session; what stands at the
    /// session path is not a file; the lock, the copy aside or the write failed (nothing was
    /// replaced then).
    pub fn restore(&self, bytes: &[u8], from: &Path, aside: &Path) -> Result<Session> {
        let session = parse(from, bytes)?;
        let _guard = lock::acquire(&self.state_dir())?;
        let path = self.session_path();
        if let Some(problem) = self.not_a_session_file() {
            return Err(Error::Damaged { path, problem });
        }
        if let Some(current) =
            fsutil::read_limited(&path, 4 * crate::limits::SESSION_RECOVERY_BYTES)
                .map_err(|e| Error::io(&path, std::io::Error::other(e.to_string())))?
        {
            let dir = aside.parent().unwrap_or(Path::new("."));
            let guard = WriteGuard::new(dir).map_err(|e| Error::io(dir, e))?;
            guard
                .write(aside, &current, Named::ByUs, Links::Replace)
                .map_err(|e| Error::write(aside, e))?;
        }
        let guard = WriteGuard::new(&self.root).map_err(|e| Error::io(&self.root, e))?;
        guard
            .write(&path, bytes, Named::ByUs, Links::Replace)
            .map_err(|e| Error::write(&path, e))?;
        super::summary::store(self, &session);
        Ok(session)
    }

    /// Saves atomically, with the line ends the file had (`ends`). Callers hold the lock.
    ///
    /// Errors: [`Error::TooLarge`] (nothing written) when the file would be larger than
    /// [`MAX_SESSION_BYTES`], which [`Project::load`] would refuse.
    fn save(&self, session: &Session, ends: LineEnds) -> Result<()> {
        self.save_as(session, ends, Save::Settled)
    }

    /// [`Project::save`], as `how` says.
    fn save_as(&self, session: &Session, ends: LineEnds, how: Save) -> Result<()> {
        let path = self.session_path();
        let mut bytes =
            to_json(session).map_err(|e| Error::io(&path, std::io::Error::other(e.to_string())))?;
        bytes.push(b'\n');
        let bytes = ends.apply(bytes);
        crate::limits::SESSION
            .check_write(bytes.len())
            .map_err(|problem| Error::TooLarge {
                path: path.clone(),
                problem,
            })?;
        let guard = WriteGuard::new(&self.root).map_err(|e| Error::io(&self.root, e))?;
        match how {
            Save::Settled => guard.write(&path, &bytes, Named::ByUs, Links::Replace),
            Save::Provisional => guard.write_ordered(&path, &bytes, Named::ByUs, Links::Replace),
        }
        .map_err(|e| Error::write(&path, e))?;
        // Still under the lock: the file's identity is the one just written.
        match how {
            Save::Settled => super::summary::store(self, session),
            Save::Provisional => super::summary::note_written(&path),
        }
        // The last good session, for `pas-agent recover`.
        if let Err(e) = super::backup::keep(self, &bytes) {
            crate::term::warn(&format!(
                "the copy of the session that `pas-agent recover` brings back was not kept: {e}"
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_ends_are_those_of_the_first_line() {
        assert_eq!(LineEnds::of(b"{\r\n  \"a\": 1\r\n}\r\n"), LineEnds::CrLf);
        assert_eq!(LineEnds::of(b"{\n}\n"), LineEnds::Lf);
        assert_eq!(LineEnds::of(b"{}"), LineEnds::Lf);
        assert_eq!(LineEnds::of(b"\n"), LineEnds::Lf);
        let json = b"{\n  \"a\": \"x\\ny\"\n}\n".to_vec();
        assert_eq!(
            LineEnds::CrLf.apply(json.clone()),
            b"{\r\n  \"a\": \"x\\ny\"\r\n}\r\n".to_vec()
        );
        assert_eq!(LineEnds::Lf.apply(json.clone()), json);
        // An old run written back as it was in a CRLF file keeps its line ends, once.
        let mixed = b"[\n  {\r\n    \"a\": 1\r\n  }\n]".to_vec();
        assert_eq!(
            LineEnds::CrLf.apply(mixed),
            b"[\r\n  {\r\n    \"a\": 1\r\n  }\r\n]".to_vec()
        );
    }
}
