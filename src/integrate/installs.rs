//! What `pas-agent integrate` installed, and where, for this user: so that `--remove` gives
//! back what was there before (a settings file and the folders it created are removed again
//! when nothing else is in them), and `doctor` notices when an agent rewrote its settings
//! without pas-agent's entries.
//!
//! Where: `integrations.json` in the per-user state directory of the run registry
//! (`$PAS_AGENT_STATE_DIR`, else `$XDG_STATE_HOME/pas-agent`, else `~/.local/state/pas-agent`),
//! mode 0600, written under the lock `integrations.lock` with the one atomic writer.
//!
//! Shape (`schema_version` 1; unknown fields are kept): `{"schema_version": 1, "installs":
//! [{"agent": "claude", "path": "/abs/.claude/settings.json", "user": false, "created": true,
//! "dirs": ["/abs/.claude"], "before": null, "after": "{…}"}]}` — `agent` is the word
//! `integrate` takes, `path` the settings file, `user` whether it is the user's own, `created`
//! whether `integrate` created the file, `dirs` the folders it created for it (outermost
//! first), `before` the file's text before the first install when it had one, `after` the text
//! the last install wrote. While the file still holds `after`, `--remove` writes `before` back
//! as it was (or removes what was created); once the file changed, it takes pas-agent's
//! entries out and keeps the rest.
//!
//! The record is a convenience: when it cannot be read or written, `integrate` warns and goes
//! on, `--remove` then removes a settings file only when nothing but an empty object is left in
//! it, and `doctor` checks only what it finds.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::fsutil::{Links, Named, WriteError, WriteGuard};
use crate::model::Extra;
use crate::session::lock;

/// The record's file name in the state directory.
pub const FILE: &str = "integrations.json";
const LOCK: &str = "integrations.lock";
/// Largest record read (1 MiB): thousands of entries.
const MAX_BYTES: u64 = 1 << 20;

/// One settings file pas-agent's hooks were installed in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Install {
    /// The word `integrate` takes for the agent (`claude`, `codex`, `gemini`).
    pub agent: String,
    /// The settings file, absolute.
    pub path: PathBuf,
    /// Whether it is the user's own settings file (`integrate --user`).
    #[serde(default)]
    pub user: bool,
    /// Whether `integrate` created the file.
    #[serde(default)]
    pub created: bool,
    /// The folders `integrate` created for the file, outermost first.
    #[serde(default)]
    pub dirs: Vec<PathBuf>,
    /// The file's text before the first install, when it had one and it was known.
    #[serde(default)]
    pub before: Option<String>,
    /// The text the last install wrote.
    #[serde(default)]
    pub after: Option<String>,
    /// Fields this version does not know, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct InstallsFile {
    #[serde(default)]
    schema_version: u32,
    #[serde(default)]
    installs: Vec<Install>,
    #[serde(flatten)]
    extra: Extra,
}

fn dir() -> Option<PathBuf> {
    crate::launch::registry::dir()
}

fn read(path: &Path) -> Result<InstallsFile> {
    let bytes = match crate::fsutil::read_limited(path, MAX_BYTES) {
        Ok(Some(b)) => b,
        Ok(None) => return Ok(InstallsFile::default()),
        Err(crate::fsutil::ReadError::TooLarge(n)) => {
            return Err(Error::Damaged {
                path: path.to_path_buf(),
                problem: format!("{n} bytes is more than a record of integrations can hold"),
            });
        }
        Err(crate::fsutil::ReadError::NotAFile(what)) => {
            return Err(Error::Damaged {
                path: path.to_path_buf(),
                problem: format!("it is {what}, not a file"),
            });
        }
        Err(crate::fsutil::ReadError::Io(e)) => return Err(Error::io(path, e)),
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(InstallsFile::default());
    }
    serde_json::from_slice(&bytes).map_err(|e| Error::Damaged {
        path: path.to_path_buf(),
        problem: format!("not a valid record of integrations: {e}"),
    })
}

/// Every install recorded; empty when there is no record or it cannot be read (`doctor`
/// reads it and never fails for it).
pub fn all() -> Vec<Install> {
    dir()
        .and_then(|d| read(&d.join(FILE)).ok())
        .map(|f| f.installs)
        .unwrap_or_default()
}

/// The install recorded for the settings file `path`, if any (read without the lock: the
/// record is a convenience, and a concurrent `integrate` of the same file is the user's race).
pub fn find(path: &Path) -> Option<Install> {
    all().into_iter().find(|i| i.path == path)
}

/// Applies `change` to the recorded installs under the record's lock, and saves them.
///
/// Errors: no state directory can be named, the lock cannot be taken, the record is damaged
/// (it is then left as it is), or it cannot be written.
fn modify<T>(change: impl FnOnce(&mut Vec<Install>) -> T) -> Result<T> {
    let dir = dir().ok_or_else(|| {
        Error::Message("no HOME, XDG_STATE_HOME or PAS_AGENT_STATE_DIR for the record".into())
    })?;
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(&dir).map_err(|e| Error::io(&dir, e))?;
    let _lock = lock::acquire_file(&dir.join(LOCK))?;
    let path = dir.join(FILE);
    let mut file = read(&path)?;
    let out = change(&mut file.installs);
    file.schema_version = 1;
    let mut bytes = serde_json::to_vec_pretty(&file)
        .map_err(|e| Error::Message(format!("cannot encode the record of integrations: {e}")))?;
    bytes.push(b'\n');
    let guard = WriteGuard::new(&dir).map_err(|e| Error::io(&dir, e))?;
    match guard.create_new(&path, 0o600) {
        Ok(_) => {}
        Err(WriteError::Io(e)) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(Error::write(&path, e)),
    }
    guard
        .write(&path, &bytes, Named::ByUs, Links::Replace)
        .map_err(|e| Error::write(&path, e))?;
    Ok(out)
}

/// Records an install, in place of one recorded for the same file.
///
/// Errors: as [`modify`].
pub fn put(install: Install) -> Result<()> {
    modify(
        |all| match all.iter_mut().find(|i| i.path == install.path) {
            Some(known) => *known = install,
            None => all.push(install),
        },
    )
}

/// Forgets the install of the settings file `path`; returns it when it was recorded.
///
/// Errors: as [`modify`].
pub fn remove(path: &Path) -> Result<Option<Install>> {
    modify(|all| {
        let at = all.iter().position(|i| i.path == path)?;
        Some(all.remove(at))
    })
}
