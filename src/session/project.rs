//! Where a project's session lives: the session root, `.pas-agent/`, `session.json`, and the
//! per-user cache files kept for it. Nothing here reads or writes the session itself
//! ([`super::store`] does).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Name of the per-project state directory.
pub const STATE_DIR: &str = ".pas-agent";
/// Name of the session file inside [`STATE_DIR`].
pub const SESSION_FILE: &str = "session.json";
/// A project with (or about to have) a session: its root and state directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Project {
    /// The session root: the git work-tree top level, or where `init` ran outside git.
    pub root: PathBuf,
}

impl Project {
    /// The project rooted at `root`.
    pub fn at(root: impl Into<PathBuf>) -> Self {
        Project { root: root.into() }
    }

    /// Walks up from `start` (itself included) to the nearest directory holding
    /// `.pas-agent/session.json` in any form: a regular file, a link (even a dangling one), a
    /// directory or a special file. Whatever stands there is this directory's session, and
    /// [`Project::load`] reports what is wrong with it; the walk never falls through to a
    /// parent's session. A `.pas-agent` that is itself something other than a directory (a
    /// file, a dangling link) counts the same way.
    ///
    /// Errors: [`Error::NoSession`] when no ancestor has one.
    pub fn find(start: &Path) -> Result<Project> {
        Self::find_opt(start).ok_or_else(|| Error::NoSession {
            start: start.to_path_buf(),
        })
    }

    /// Like [`Project::find`], but `None` when there is no session.
    pub fn find_opt(start: &Path) -> Option<Project> {
        start
            .ancestors()
            .find(|dir| {
                let state = dir.join(STATE_DIR);
                match std::fs::symlink_metadata(&state) {
                    Err(_) => false,
                    Ok(_) if !state.is_dir() => true,
                    Ok(_) => std::fs::symlink_metadata(state.join(SESSION_FILE)).is_ok(),
                }
            })
            .map(Project::at)
    }

    /// `<root>/.pas-agent`.
    pub fn state_dir(&self) -> PathBuf {
        self.root.join(STATE_DIR)
    }

    /// `<root>/.pas-agent/session.json`.
    pub fn session_path(&self) -> PathBuf {
        self.state_dir().join(SESSION_FILE)
    }

    /// Whether a session file exists here (a regular file, or a link to one).
    pub fn has_session(&self) -> bool {
        std::fs::metadata(self.session_path())
            .map(|m| m.is_file())
            .unwrap_or(false)
    }
}

/// The `stat` identity of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    /// Size in bytes.
    pub len: u64,
    /// Modification time, nanoseconds since the Unix epoch.
    pub mtime_ns: u128,
    /// Inode number (0 where there is none).
    pub ino: u64,
    /// Device number (0 where there is none).
    pub dev: u64,
}

impl Identity {
    /// The identity of `path` (following links), or `None` when it cannot be read.
    pub fn of(path: &Path) -> Option<Identity> {
        let meta = std::fs::metadata(path).ok()?;
        let mtime_ns = meta
            .modified()
            .ok()?
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?
            .as_nanos();
        #[cfg(unix)]
        let (ino, dev) = {
            use std::os::unix::fs::MetadataExt;
            (meta.ino(), meta.dev())
        };
        #[cfg(not(unix))]
        let (ino, dev) = (0, 0);
        Some(Identity {
            len: meta.len(),
            mtime_ns,
            ino,
            dev,
        })
    }
}

/// `<summary directory>/<hash of session_path>.<suffix>`: where the caches kept for the
/// session at `session_path` go (the summary, the prompt's record). `None` when no
/// cache directory is known ([`crate::fsutil::cache_dir`]).
pub fn cache_file(session_path: &Path, suffix: &str) -> Option<PathBuf> {
    let dir = crate::fsutil::cache_dir()?.join("summary");
    let key = crate::fingerprint::hex(session_path.as_os_str().as_encoded_bytes());
    Some(dir.join(format!("{key}.{suffix}")))
}
