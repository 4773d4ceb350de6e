//! The core's one error type and the exit code each kind maps to (docs/commands.md, "Exit codes").

use std::io;
use std::path::PathBuf;

/// Exit codes shared by every command (docs/commands.md, "Exit codes"). `run` passes the agent's own code through
/// and uses [`exit::LAUNCHER_FAILED`], [`exit::NOT_EXECUTABLE`] and [`exit::NOT_FOUND`] for its
/// own failures.
pub mod exit {
    /// Success.
    pub const OK: i32 = 0;
    /// Any error without a more specific code.
    pub const FAILURE: i32 = 1;
    /// Usage error: bad arguments (clap's own code), or input the command needs is missing.
    pub const USAGE: i32 = 2;
    /// No `.pas-agent/session.json` in the current directory or any parent.
    pub const NO_SESSION: i32 = 3;
    /// Another process held the session lock past the timeout.
    pub const LOCKED: i32 = 4;
    /// `session.json` is damaged, or from a newer schema version.
    pub const DAMAGED: i32 = 5;
    /// The export target cannot be updated safely (markers, permissions), or a write would
    /// leave the session root.
    pub const EXPORT_UNSAFE: i32 = 6;
    /// `session.json` holds git conflict markers (unmerged); `pas-agent resolve` fixes it.
    pub const UNMERGED: i32 = 7;
    /// `run`: the launcher itself failed before or after the agent ran.
    pub const LAUNCHER_FAILED: i32 = 125;
    /// `run`: the program was found but could not be executed.
    pub const NOT_EXECUTABLE: i32 = 126;
    /// `run`: the program was not found.
    pub const NOT_FOUND: i32 = 127;
}

/// Everything that can go wrong in the core. Each variant names the file or thing involved, so
/// the message alone tells the user what happened and where.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Walked from `start` to the filesystem root without finding `.pas-agent/session.json`.
    #[error(
        "no pas-agent session found in {} or any parent directory\n  hint: start one with `pas-agent init --task \"<what you are working on>\"`",
        start.display()
    )]
    NoSession {
        /// The directory the search started from.
        start: PathBuf,
    },

    /// `init` found a session already in place.
    #[error("a session already exists at {}\n  hint: `pas-agent status` shows it; delete the .pas-agent directory to start over", path.display())]
    SessionExists {
        /// The existing `.pas-agent/session.json`.
        path: PathBuf,
    },

    /// The session lock was held by another process for longer than the timeout.
    #[error(
        "the session is locked by another process{holder} ({})\n  hint: retry shortly, or raise PAS_AGENT_LOCK_TIMEOUT_MS (waited {waited_ms} ms)",
        path.display()
    )]
    Locked {
        /// The lock file (`.pas-agent/session.lock`, or the registry's lock file).
        path: PathBuf,
        /// `" (the last pas-agent to take it was pid N)"` when the lock file names a pid, else "".
        holder: String,
        /// How long this process waited, in milliseconds.
        waited_ms: u64,
    },

    /// The session file cannot be understood. The file has not been touched.
    #[error("{}: {problem}\n  the file was left unchanged; {}", path.display(), damaged_hint(path))]
    Damaged {
        /// The session file (or the run registry's `runs.json`).
        path: PathBuf,
        /// What is wrong (for bad JSON: the field path, line and column from serde).
        problem: String,
    },

    /// The session file was written by a newer pas-agent. The file has not been touched.
    #[error("{}: schema version {found} is newer than this pas-agent understands (up to {supported})\n  the file was left unchanged; upgrade pas-agent to work with it", path.display())]
    Unsupported {
        /// The session file.
        path: PathBuf,
        /// The `schema_version` the file declares.
        found: u64,
        /// The newest schema version this build reads ([`crate::model::SCHEMA_VERSION`]).
        supported: u32,
    },

    /// A write was refused because the file would be larger than pas-agent reads back
    /// ([`crate::limits`]). Nothing was written; the file is unchanged.
    #[error("{}: {problem}", path.display())]
    TooLarge {
        /// The file that was not written.
        path: PathBuf,
        /// The sizes, the limit and what to do.
        problem: String,
    },

    /// An export target (context file) cannot be updated without risking the user's text.
    #[error("{}: {problem}", path.display())]
    ExportUnsafe {
        /// The context file that was not written.
        path: PathBuf,
        /// What is wrong and that nothing was written, with a hint where one helps.
        problem: String,
    },

    /// A write that would leave the session root (through a committed symbolic link, a
    /// symlinked `.pas-agent/`, …) or go through a link pas-agent never follows. Nothing was
    /// written.
    #[error("{}: {problem}", path.display())]
    Refused {
        /// The path pas-agent was about to write (as named, not resolved).
        path: PathBuf,
        /// Where it really leads and why that is refused, with a hint.
        problem: String,
    },

    /// Bad input the command line parser could not catch (an item number out of range,
    /// missing input with no terminal to ask on, …).
    #[error("{0}")]
    Usage(String),

    /// A user-facing failure that is none of the above ("nothing to update", …).
    #[error("{0}")]
    Message(String),

    /// The session file holds git conflict markers: a merge of branches that both changed the
    /// session, without the merge driver. The file has not been touched.
    #[error("{}: the session is unmerged (git left conflict markers in it after a merge, rebase or cherry-pick)\n  the file was left unchanged; `pas-agent resolve` merges both sides into one session, then `git add .pas-agent/session.json` (and `git merge --continue`, `git rebase --continue` or `git cherry-pick --continue`)\n  hint: `pas-agent merge-driver --install` sets up the merge driver that avoids this ({})", path.display(), crate::display::TEAMS_URL)]
    Unmerged {
        /// The session file.
        path: PathBuf,
    },

    /// The project cannot be used as a session root (a bare repository, inside `.git`).
    #[error("{}: {problem}", path.display())]
    BadRoot {
        /// The directory pas-agent was run in.
        path: PathBuf,
        /// Why it cannot hold a session, and where to run instead.
        problem: String,
    },

    /// An I/O error, with the path it happened on.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory being read, written or created.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },

    /// Writing to stdout failed because the reader went away (`pas-agent list | head -1`).
    #[error("broken pipe")]
    BrokenPipe,

    /// The launcher could not start the program.
    #[error("{message}")]
    Launch {
        /// The whole message shown to the user, hints included.
        message: String,
        /// The exit code: [`exit::LAUNCHER_FAILED`], [`exit::NOT_EXECUTABLE`] or
        /// [`exit::NOT_FOUND`].
        code: i32,
    },
}

impl Error {
    /// The process exit code for this error (docs/commands.md, "Exit codes").
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::NoSession { .. } => exit::NO_SESSION,
            Error::Locked { .. } => exit::LOCKED,
            Error::Damaged { .. } | Error::Unsupported { .. } => exit::DAMAGED,
            Error::Unmerged { .. } => exit::UNMERGED,
            Error::ExportUnsafe { .. } | Error::Refused { .. } => exit::EXPORT_UNSAFE,
            Error::Usage(_) => exit::USAGE,
            Error::Launch { code, .. } => *code,
            Error::BrokenPipe => exit::OK,
            Error::SessionExists { .. }
            | Error::Message(_)
            | Error::BadRoot { .. }
            | Error::TooLarge { .. }
            | Error::Io { .. } => exit::FAILURE,
        }
    }

    /// The error for a failed write of pas-agent's own file `path` (the session, the lock, the
    /// run registry): refusals about where the path leads become [`Error::Refused`] (exit 6),
    /// the rest [`Error::Io`] with the reason.
    pub fn write(path: impl Into<PathBuf>, e: crate::fsutil::WriteError) -> Self {
        let path = path.into();
        match e {
            e if e.is_location() => Error::Refused {
                path,
                problem: format!("{e}; nothing was written"),
            },
            crate::fsutil::WriteError::Io(source) => Error::Io { path, source },
            other => Error::Io {
                path,
                source: io::Error::other(other.to_string()),
            },
        }
    }

    /// Wraps an I/O error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

/// What to do about a damaged file: for a session file, `pas-agent recover` first (it brings
/// back the copy kept at the last save and keeps the damaged file).
fn damaged_hint(path: &std::path::Path) -> &'static str {
    if path.file_name().is_some_and(|n| n == "session.json") {
        "`pas-agent recover` brings back the session as pas-agent last saved it (the damaged file is kept); or fix it by hand, or, if it is committed, restore it with `git checkout -- .pas-agent/session.json`"
    } else {
        "fix it by hand, or move it aside"
    }
}

/// Result with the core [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
