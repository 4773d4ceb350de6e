//! The machine-wide registry of live runs (the seeds' "framework session"): one small JSON file
//! listing every `pas-agent run` in progress on this machine, across projects, so that
//! `pas-agent runs --all` can show them and a crashed launcher is found even when nobody
//! visits its project again.
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
//! "started_at", "launcher_pid", "launcher_started", "nonce"}]}` — `project` is the session
//! root, `session_id` the pas-agent session's id, the rest as in the run record (docs/launcher.md).
//!
//! Adding and removing a run's entry is atomic but not `fsync`ed
//! ([`crate::fsutil::WriteGuard::write_volatile`]): a power cut can lose the last change, and
//! costs nothing that counts — every launcher is gone after a reboot, and the session's own
//! record, written durably, is what the next command in the project reconciles. Only an outcome
//! kept here because the project's disk was full ([`Registry::keep_outcome`]) is written
//! durably. So a bare `pas-agent run` makes one durable write before the agent starts (the
//! session) and one after.
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
            extra: Extra::new(),
        }
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
        create_private_dir(&self.dir)?;
        let _guard = lock::acquire_file(&self.dir.join(LOCK))?;
        let path = self.file();
        let mut file = match self.read() {
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
        let out = change(&mut file.runs);
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
        Ok(out)
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

    /// Removes the entries of these runs; returns how many were there.
    pub fn remove(&self, run_ids: &[Uuid]) -> Result<usize> {
        if run_ids.is_empty() {
            return Ok(0);
        }
        self.modify(false, |runs| {
            let before = runs.len();
            runs.retain(|e| !run_ids.contains(&e.run_id));
            before - runs.len()
        })
    }
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
