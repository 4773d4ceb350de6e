//! The machine-wide registry of runs: one small JSON file listing every `pas-agent run` in
//! progress on this machine, across projects, and every run frozen to be restored later
//! (docs/freeze.md), so that `pas-agent runs --all` can show them, a crashed launcher is found
//! even when nobody visits its project again, and `pas-agent restore` knows what to bring back.
//!
//! Each entry is in one of five states ([`State`]): `live` (a launcher runs it), `freezing`,
//! `frozen`, `restoring` and `aborting`. Every change of state is one guarded transition under
//! the lock: one that does not apply (the entry is gone, in another state, or leased by someone
//! else) is refused and writes nothing ([`Registry::apply`]). `freezing`, `restoring` and
//! `aborting` are held by a [`Lease`] (a nonce and the coordinator's process): only the holder
//! of the nonce moves the entry on, and [`super::reconcile`] settles a leased entry only once
//! its holder is provably gone and the lease is older than [`LEASE_GRACE`].
//!
//! Where: `$PAS_AGENT_STATE_DIR`, else `$XDG_STATE_HOME/pas-agent`, else
//! `~/.local/state/pas-agent` (the XDG base directory default for state). Files: `runs.json`
//! (mode 0600, in a 0700 directory: it names projects and command lines) and `runs.lock`.
//! Writes follow the session's rules: the exclusive OS lock on `runs.lock` for the whole
//! read–modify–write, then the one atomic writer ([`crate::fsutil::WriteGuard::write`], with the
//! registry directory as its root); reads take no lock. Holding the lock, temp files left by
//! killed writers are removed.
//!
//! Shape (`schema_version` 1; unknown fields are kept):
//! `{"schema_version": 1, "runs": [{"run_id", "project", "session_id", "agent", "argv", "cwd",
//! "started_at", "launcher_pid", "launcher_started", "nonce", …}]}` — `project` is the session
//! root, `session_id` the pas-agent session's id, the rest as in the run record (docs/launcher.md);
//! the fields of [`Entry`] after `nonce` are written only when set (docs/freeze.md lists them).
//!
//! Adding and removing a live run's entry is atomic but not `fsync`ed
//! ([`crate::fsutil::WriteGuard::write_volatile`]): a power cut can lose the last change, and
//! costs nothing that counts — every launcher is gone after a reboot, and the session's own
//! record, written durably, is what the next command in the project reconciles. What must
//! survive a reboot is written durably: an outcome kept here because the project's disk was
//! full ([`Registry::keep_outcome`]), and every transition into or out of `frozen`. So a bare
//! `pas-agent run` makes one durable write before the agent starts (the session) and one after.
//!
//! The registry is a convenience: when it cannot be read or written the launcher warns and the
//! run goes on (the session's own record is what counts). An empty or half-written file (a
//! writer killed before the atomic writer existed, a full disk) reads as empty; a damaged one
//! is moved aside to `runs.json.damaged` by the next write and a new one started.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::process::{self, Liveness};
use crate::error::{Error, Result};
use crate::fsutil::{Links, Named, WriteError, WriteGuard};
use crate::model::{Extra, Run};
use crate::session::lock;

/// Environment variable naming the registry directory.
pub const STATE_DIR_ENV: &str = "PAS_AGENT_STATE_DIR";
/// The registry file's name.
pub const FILE: &str = "runs.json";
/// The registry's lock file.
pub const LOCK: &str = "runs.lock";
/// A registry larger than this (4 MiB, [`crate::limits::REGISTRY`]) is treated as damaged,
/// and a change that would make it larger is refused.
pub const MAX_BYTES: u64 = crate::limits::REGISTRY.bytes;

/// Field of an [`Entry`] holding the outcome its launcher could not save in the project
/// ([`super::outcome::Pending`]); such an entry stays until the outcome is recorded.
pub const OUTCOME_FIELD: &str = "outcome";

/// A lease younger than this is left alone by [`super::reconcile`], whatever its holder's
/// liveness: a coordinator that has only just taken it may not be visible yet.
pub const LEASE_GRACE: std::time::Duration = std::time::Duration::from_secs(60);

/// The directory under the registry's holding frozen runs' captures (`frozen/<run id>/`).
pub const FROZEN_DIR: &str = "frozen";

/// Where an entry is in the freeze/restore lifecycle (docs/freeze.md, "States").
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum State {
    /// A launcher runs it (or ran it: its liveness says which).
    #[default]
    Live,
    /// `pas-agent freeze` is ending its agent; leased.
    Freezing,
    /// Its agent was ended (or its launcher died) and it can be restored.
    Frozen,
    /// `pas-agent restore` is bringing it back; leased.
    Restoring,
    /// A restore failed and is being undone; leased by the failed attempt.
    Aborting,
    /// A state written by a newer pas-agent, kept as is and left alone.
    Other(String),
}

impl State {
    /// The name stored in the registry and shown by `runs --all`.
    pub fn as_str(&self) -> &str {
        match self {
            State::Live => "live",
            State::Freezing => "freezing",
            State::Frozen => "frozen",
            State::Restoring => "restoring",
            State::Aborting => "aborting",
            State::Other(s) => s,
        }
    }

    /// Whether an operation is in flight (the entry is leased).
    pub fn transitional(&self) -> bool {
        matches!(self, State::Freezing | State::Restoring | State::Aborting)
    }

    fn is_live(&self) -> bool {
        *self == State::Live
    }
}

impl Serialize for State {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for State {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Ok(match s.as_str() {
            "live" => State::Live,
            "freezing" => State::Freezing,
            "frozen" => State::Frozen,
            "restoring" => State::Restoring,
            "aborting" => State::Aborting,
            _ => State::Other(s),
        })
    }
}

/// An operation's hold on an entry: only the coordinator that knows `nonce` moves it on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Lease {
    /// A random value only the coordinator knows.
    pub nonce: String,
    /// The coordinator's process id.
    pub pid: u32,
    /// Its start token ([`crate::launch::process`]), to tell it from a later process with the
    /// same pid.
    #[serde(default)]
    pub started: Option<String>,
    /// When the lease was taken; RFC 3339 UTC.
    pub at: DateTime<Utc>,
}

impl Lease {
    /// A new lease held by this process.
    pub fn mine() -> Lease {
        Lease {
            nonce: Uuid::new_v4().simple().to_string(),
            pid: std::process::id(),
            started: process::own_start_token(),
            at: Utc::now(),
        }
    }

    /// Whether [`super::reconcile`] must leave the entry alone: its holder runs (or cannot be
    /// judged), or the lease is younger than [`LEASE_GRACE`].
    pub fn held(&self, now: DateTime<Utc>) -> bool {
        let young = now
            .signed_duration_since(self.at)
            .to_std()
            .map_or(true, |age| age < LEASE_GRACE);
        young || process::liveness(Some(self.pid), self.started.as_deref()) != Liveness::Dead
    }
}

/// The size of the terminal a run had, in character cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Size {
    /// Columns.
    pub cols: u16,
    /// Rows.
    pub rows: u16,
}

/// Where in tmux a run ran (`man tmux`, FORMATS: `session_name`, `window_name`, …).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TmuxPlace {
    /// The server's socket path (the first field of `$TMUX`).
    pub socket: String,
    /// The pane's id (`$TMUX_PANE`, `%3`).
    pub pane: String,
    /// The session's name.
    #[serde(default)]
    pub session: Option<String>,
    /// The window's name.
    #[serde(default)]
    pub window: Option<String>,
    /// The window's index in its session.
    #[serde(default)]
    pub window_index: Option<u32>,
    /// The pane's index in its window.
    #[serde(default)]
    pub pane_index: Option<u32>,
}

/// What a frozen entry keeps for its restore.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Frozen {
    /// When it was frozen (or found with its launcher gone); RFC 3339 UTC.
    pub at: DateTime<Utc>,
    /// `freeze` (by `pas-agent freeze`) or `crash` (its launcher ended without one: a crash,
    /// a reboot, a kill).
    pub cause: String,
    /// The agent's arguments for the restore: those it was started with, without one-shot
    /// prompts, one-shot modes and session choices ([`crate::agents::args::ArgShape`]).
    #[serde(default)]
    pub args: Vec<String>,
    /// The directory holding a copy of the run's capture (`capture.txt`, `capture.ansi`),
    /// deleted when a restore is verified.
    #[serde(default)]
    pub capture: Option<String>,
}

/// One live run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// The run's `id` in the project's `session.json`.
    pub run_id: Uuid,
    /// Absolute session root of the project.
    pub project: String,
    /// The pas-agent session's id.
    pub session_id: Uuid,
    /// Canonical agent id, or the program name (the run record's `agent`).
    pub agent: String,
    /// The command line that was started, program first.
    pub argv: Vec<String>,
    /// Absolute directory the agent runs in.
    pub cwd: String,
    /// When the run started; RFC 3339 UTC.
    pub started_at: DateTime<Utc>,
    /// The launcher's process id.
    #[serde(default)]
    pub launcher_pid: Option<u32>,
    /// Opaque token for the launcher's start, to detect pid reuse (see [`crate::launch::process`]).
    #[serde(default)]
    pub launcher_started: Option<String>,
    /// A copy of the run record's `nonce`, the token only its launcher knows.
    #[serde(default)]
    pub nonce: Option<String>,
    /// Where it is in the freeze/restore lifecycle (not written while `live`).
    #[serde(default, skip_serializing_if = "State::is_live")]
    pub state: State,
    /// The operation holding it, in a transitional state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease: Option<Lease>,
    /// The agent's own session id, once known (chosen or resumed at the start; learned at a
    /// freeze or after a crash otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_session_id: Option<String>,
    /// The arguments the user gave the agent (what followed its name), before pas-agent's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<String>>,
    /// The `pas-agent run` options to start it with again (`--mcp`, `--no-checkpoint`, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
    /// The size of its terminal at the start (or at the freeze, in tmux).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminal: Option<Size>,
    /// Where in tmux it ran, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tmux: Option<TmuxPlace>,
    /// What a frozen entry keeps for its restore.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frozen: Option<Frozen>,
    /// For a run that restored a frozen one: that run's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restored_from: Option<Uuid>,
    /// For a run that restored a frozen one: `pending` until the restore is settled, then
    /// `verified` (the agent was seen in the session asked for) or `unverified`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore: Option<String>,
    /// The session id the agent's own session-start hook reported for it (`pas-agent
    /// integrate`), the strongest evidence for a restore.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore_ack: Option<String>,
    /// Why the last restore of a frozen entry failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// Fields this build does not know, written back unchanged.
    #[serde(flatten)]
    pub extra: Extra,
}

impl Entry {
    /// The registry entry for a run record of the project at `root`.
    pub fn of(run: &Run, root: &Path, session_id: Uuid) -> Entry {
        Entry {
            run_id: run.id,
            project: root.to_string_lossy().into_owned(),
            session_id,
            agent: run.agent.clone(),
            argv: run.argv.clone(),
            cwd: run.cwd.clone(),
            started_at: run.started_at,
            launcher_pid: run.launcher_pid,
            launcher_started: run.launcher_started.clone(),
            nonce: run.nonce.clone(),
            state: State::Live,
            lease: None,
            agent_session_id: run.agent_session_id.clone(),
            args: None,
            options: Vec::new(),
            terminal: None,
            tmux: None,
            frozen: None,
            restored_from: None,
            restore: None,
            restore_ack: None,
            last_error: None,
            extra: Extra::new(),
        }
    }

    /// Whether `lease` is this entry's (same nonce).
    pub fn leased_by(&self, nonce: &str) -> bool {
        self.lease.as_ref().is_some_and(|l| l.nonce == nonce)
    }

    /// The run's id as shown and typed: its first 8 hexadecimal digits.
    pub fn short_id(&self) -> String {
        self.run_id.simple().to_string()[..8].to_string()
    }

    /// The outcome kept here for its project, if any, as stored (read by
    /// [`super::outcome::pending`]).
    pub fn outcome(&self) -> Option<&serde_json::Value> {
        self.extra.get(OUTCOME_FIELD)
    }

    /// Whether its launcher still runs.
    pub fn liveness(&self) -> Liveness {
        process::liveness(self.launcher_pid, self.launcher_started.as_deref())
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct RegistryFile {
    #[serde(default = "one")]
    schema_version: u32,
    #[serde(default)]
    runs: Vec<Entry>,
    #[serde(flatten)]
    extra: Extra,
}

fn one() -> u32 {
    1
}

/// The registry directory (see the module docs), `None` when no home is known.
pub fn dir() -> Option<PathBuf> {
    crate::fsutil::state_dir()
}

/// The machine-wide registry.
#[derive(Debug, Clone)]
pub struct Registry {
    /// Directory holding `runs.json` and `runs.lock` (see [`dir`]).
    pub dir: PathBuf,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |e| Error::io(path, e)
}

impl Registry {
    /// The registry in [`dir`].
    ///
    /// Errors: [`Error::Message`] when no directory can be named (no `HOME`).
    pub fn open() -> Result<Registry> {
        dir().map(|dir| Registry { dir }).ok_or_else(|| {
            Error::Message(
                "no HOME, XDG_STATE_HOME or PAS_AGENT_STATE_DIR for the run registry".into(),
            )
        })
    }

    fn file(&self) -> PathBuf {
        self.dir.join(FILE)
    }

    /// The live runs, as last written (no lock, no liveness check). A missing, empty or
    /// half-written (truncated JSON) file is empty.
    ///
    /// Errors: the file cannot be read, or is damaged otherwise.
    pub fn entries(&self) -> Result<Vec<Entry>> {
        Ok(self.read()?.runs)
    }

    fn read(&self) -> Result<RegistryFile> {
        let path = self.file();
        let bytes = match crate::fsutil::read_limited(&path, MAX_BYTES) {
            Ok(Some(b)) => b,
            Ok(None) => return Ok(RegistryFile::default()),
            Err(crate::fsutil::ReadError::TooLarge(n)) => {
                return Err(Error::Damaged {
                    path,
                    problem: format!("{n} bytes is more than a run registry can hold"),
                });
            }
            Err(crate::fsutil::ReadError::NotAFile(kind)) => {
                return Err(Error::Damaged {
                    path,
                    problem: format!("it is {kind}, not a regular file"),
                });
            }
            Err(crate::fsutil::ReadError::Io(e)) => return Err(Error::io(path, e)),
        };
        // Empty, or cut off by a crash: some filesystems leave a file of NUL bytes (blocks
        // allocated, data never written) after a crash mid-write.
        if bytes.iter().all(|b| b.is_ascii_whitespace() || *b == 0) {
            return Ok(RegistryFile::default());
        }
        if let Some(end) = bytes.iter().position(|b| *b == 0)
            && bytes[end..].iter().all(|b| *b == 0)
            && serde_json::from_slice::<RegistryFile>(&bytes[..end]).is_err()
        {
            return Ok(RegistryFile::default());
        }
        match serde_json::from_slice(&bytes) {
            Ok(file) => Ok(file),
            // Cut off mid-write: nothing in it can be trusted, and nothing in it is needed (the
            // sessions hold the runs' records).
            Err(e) if e.is_eof() => Ok(RegistryFile::default()),
            Err(e) => Err(Error::Damaged {
                path,
                problem: format!("not a valid run registry: {e}"),
            }),
        }
    }

    /// Applies `change` to the entries under the registry lock and saves atomically.
    /// `durable`: written with `fsync` ([`WriteGuard::write`]) or without
    /// ([`WriteGuard::write_volatile`]).
    fn modify<T>(&self, durable: bool, change: impl FnOnce(&mut Vec<Entry>) -> T) -> Result<T> {
        match self.apply(durable, |runs| {
            Ok::<T, std::convert::Infallible>(change(runs))
        })? {
            Ok(out) => Ok(out),
        }
    }

    /// A guarded transition: under the registry lock, `change` either changes the entries and
    /// returns `Ok`, which is saved atomically, or refuses with `Err(why)`, and then nothing is
    /// written at all (the file, its inode and its time stay as they were).
    ///
    /// Errors (outer): the registry cannot be locked, read or written.
    pub fn apply<T, E>(
        &self,
        durable: bool,
        change: impl FnOnce(&mut Vec<Entry>) -> std::result::Result<T, E>,
    ) -> Result<std::result::Result<T, E>> {
        let (_guard, mut file) = self.lock_and_read()?;
        let out = match change(&mut file.runs) {
            Ok(out) => out,
            Err(refused) => return Ok(Err(refused)),
        };
        self.write(durable, &mut file)?;
        Ok(Ok(out))
    }

    /// [`Registry::apply`]'s first half, not generic so that it is compiled once: takes the
    /// registry lock and reads the file (a damaged one is moved aside and a new one started).
    fn lock_and_read(&self) -> Result<(lock::LockGuard, RegistryFile)> {
        create_private_dir(&self.dir)?;
        let guard = lock::acquire_file(&self.dir.join(LOCK))?;
        let path = self.file();
        let file = match self.read() {
            Ok(f) => f,
            Err(Error::Damaged { problem, .. }) => {
                let aside = self.dir.join(format!("{FILE}.damaged"));
                crate::term::warn(&format!(
                    "{}: {problem}; moved to {} and starting a new registry",
                    path.display(),
                    aside.display()
                ));
                std::fs::rename(&path, &aside).map_err(io(&path))?;
                RegistryFile::default()
            }
            Err(e) => return Err(e),
        };
        Ok((guard, file))
    }

    /// [`Registry::apply`]'s second half, under the lock: writes `file` atomically (durably or
    /// not, see [`Registry::modify`]).
    fn write(&self, durable: bool, file: &mut RegistryFile) -> Result<()> {
        let path = self.file();
        file.schema_version = 1;
        let mut bytes = serde_json::to_vec_pretty(&file)
            .map_err(|e| Error::Message(format!("cannot encode the run registry: {e}")))?;
        bytes.push(b'\n');
        crate::limits::REGISTRY
            .check_write(bytes.len())
            .map_err(|problem| Error::TooLarge {
                path: path.clone(),
                problem,
            })?;
        let guard = WriteGuard::new(&self.dir).map_err(io(&self.dir))?;
        create_private_file(&guard, &path)?;
        let written = if durable {
            guard.write(&path, &bytes, Named::ByUs, Links::Replace)
        } else {
            guard.write_volatile(&path, &bytes, Named::ByUs, Links::Replace)
        };
        written.map_err(|e| Error::write(&path, e))?;
        Ok(())
    }

    /// Adds (or replaces) the entry for a run.
    pub fn add(&self, entry: Entry) -> Result<()> {
        self.modify(false, |runs| {
            runs.retain(|e| e.run_id != entry.run_id);
            runs.push(entry);
        })
    }

    /// Keeps a run's outcome in its entry (field [`OUTCOME_FIELD`]), for when the project's
    /// own disk cannot take it (see [`super::outcome`]). Returns whether the entry was there.
    pub fn keep_outcome(&self, run_id: Uuid, outcome: serde_json::Value) -> Result<bool> {
        self.modify(true, |runs| {
            match runs.iter_mut().find(|e| e.run_id == run_id) {
                Some(e) => {
                    e.extra.insert(OUTCOME_FIELD.into(), outcome);
                    true
                }
                None => false,
            }
        })
    }

    /// Removes the `live` entries of these runs (a launcher done with its run); an entry being
    /// frozen, or frozen, stays. Returns how many were removed; nothing is written when none.
    pub fn remove(&self, run_ids: &[Uuid]) -> Result<usize> {
        if run_ids.is_empty() {
            return Ok(0);
        }
        let removed = self.apply(false, |runs| {
            let before = runs.len();
            runs.retain(|e| !(run_ids.contains(&e.run_id) && e.state.is_live()));
            match before - runs.len() {
                0 => Err(()),
                n => Ok(n),
            }
        })?;
        Ok(removed.unwrap_or(0))
    }

    /// The entry of run `run_id`, as last written.
    ///
    /// Errors: as [`Registry::entries`].
    pub fn get(&self, run_id: Uuid) -> Result<Option<Entry>> {
        Ok(self.entries()?.into_iter().find(|e| e.run_id == run_id))
    }

    /// One guarded transition of entry `run_id`: `change` sees the entry (refusing with why
    /// not, or changing it); a missing entry is refused. Durable: transitions of the
    /// freeze/restore lifecycle must survive a reboot.
    pub fn transition<T>(
        &self,
        run_id: Uuid,
        change: impl FnOnce(&mut Entry) -> std::result::Result<T, String>,
    ) -> Result<std::result::Result<T, String>> {
        self.apply(true, |runs| {
            let entry = runs
                .iter_mut()
                .find(|e| e.run_id == run_id)
                .ok_or_else(|| "it is no longer in the run registry".to_string())?;
            change(entry)
        })
    }

    /// The directory keeping a frozen run's capture.
    pub fn frozen_dir(&self, run_id: Uuid) -> PathBuf {
        self.dir.join(FROZEN_DIR).join(run_id.to_string())
    }

    /// Removes entry `run_id` in whatever state (`restore --drop`), with its frozen capture.
    /// Returns the entry that was removed.
    ///
    /// Errors: the registry cannot be read or written.
    pub fn drop_entry(&self, run_id: Uuid) -> Result<Option<Entry>> {
        let dropped = self.apply(true, |runs| {
            let at = runs.iter().position(|e| e.run_id == run_id).ok_or(())?;
            Ok::<Entry, ()>(runs.remove(at))
        })?;
        let dropped = dropped.ok();
        if dropped.is_some() {
            self.remove_capture(run_id);
        }
        Ok(dropped)
    }

    /// Deletes a frozen run's capture copy, if any (missing is fine).
    pub fn remove_capture(&self, run_id: Uuid) {
        let dir = self.frozen_dir(run_id);
        if let Err(e) = std::fs::remove_dir_all(&dir)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            crate::term::warn(&format!("could not delete {}: {e}", dir.display()));
        }
    }
}

/// Creates the directory for a frozen run's capture, private (0700 like the registry's).
///
/// Errors: it cannot be created.
pub fn create_frozen_dir(reg: &Registry, run_id: Uuid) -> Result<PathBuf> {
    create_private_dir(&reg.dir.join(FROZEN_DIR))?;
    let dir = reg.frozen_dir(run_id);
    create_private_dir(&dir)?;
    Ok(dir)
}

/// Creates `dir` (and parents) with mode 0700 for the last component.
fn create_private_dir(dir: &Path) -> Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir).map_err(io(dir))
}

/// Creates an empty file with mode 0600 if it does not exist, so that the atomic writer (which
/// keeps a file's mode) never publishes the registry with wider permissions.
fn create_private_file(guard: &WriteGuard, path: &Path) -> Result<()> {
    match guard.create_new(path, 0o600) {
        Ok(_) => Ok(()),
        Err(WriteError::Io(e)) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(Error::write(path, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: Uuid) -> Entry {
        Entry {
            run_id: id,
            project: "/p".into(),
            session_id: Uuid::new_v4(),
            agent: "codex".into(),
            argv: vec!["codex".into()],
            cwd: "/p".into(),
            started_at: Utc::now(),
            launcher_pid: Some(std::process::id()),
            launcher_started: process::own_start_token(),
            nonce: Some("n".into()),
            state: State::Live,
            lease: None,
            agent_session_id: None,
            args: None,
            options: Vec::new(),
            terminal: None,
            tmux: None,
            frozen: None,
            restored_from: None,
            restore: None,
            restore_ack: None,
            last_error: None,
            extra: Extra::new(),
        }
    }

    #[test]
    fn add_remove_and_private_modes() {
        let tmp = tempfile::tempdir().unwrap();
        let reg = Registry {
            dir: tmp.path().join("state/pas-agent"),
        };
        assert!(reg.entries().unwrap().is_empty());
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        reg.add(entry(a)).unwrap();
        reg.add(entry(b)).unwrap();
        assert_eq!(reg.entries().unwrap().len(), 2);
        assert_eq!(reg.entries().unwrap()[0].liveness(), Liveness::Alive);
        assert_eq!(reg.remove(&[a]).unwrap(), 1);
        assert_eq!(reg.entries().unwrap()[0].run_id, b);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&reg.dir.join(FILE)), 0o600);
            assert_eq!(mode(&reg.dir), 0o700);
        }
        // A change that would make the file larger than its reader accepts is refused, and
        // the file is left as it was.
        let before = std::fs::read(reg.dir.join(FILE)).unwrap();
        let mut big = entry(Uuid::new_v4());
        big.argv = vec!["x".repeat(MAX_BYTES as usize)];
        assert!(matches!(reg.add(big), Err(Error::TooLarge { .. })));
        assert_eq!(std::fs::read(reg.dir.join(FILE)).unwrap(), before);
        std::fs::write(reg.dir.join(FILE), "{not json").unwrap();
        assert!(matches!(reg.entries(), Err(Error::Damaged { .. })));
        reg.add(entry(a)).unwrap();
        assert_eq!(reg.entries().unwrap().len(), 1);
        assert!(reg.dir.join("runs.json.damaged").exists());
    }
}
