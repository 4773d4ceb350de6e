//! `export`: render the session and splice it into an agent's context file (SPEC §4).

pub mod block;
pub mod render;

use std::path::{Path, PathBuf};

use crate::agents::Agent;
use crate::error::{Error, Result};
use crate::fsutil::{self, Links, Named, ReadError, WriteError, WriteGuard};
use crate::git::{Repo, WorkTree};
use crate::session::Project;
use crate::stale::{self, Stale};

pub use block::Outcome;

/// Context files larger than this are not read, and an export that would make one larger is
/// refused (16 MiB, [`crate::limits::CONTEXT_FILE`]).
pub const MAX_CONTEXT_FILE_BYTES: u64 = crate::limits::CONTEXT_FILE.bytes;

/// Where an export goes.
#[derive(Debug, Clone)]
pub struct Target {
    /// The agent it is for.
    pub agent: &'static Agent,
    /// The file to write (absolute).
    pub path: PathBuf,
    /// Whether this is the file the agent reads at startup: its context file at the project
    /// root (compared by full path, not by name as the original did).
    pub at_default: bool,
    /// The session root: the path must resolve inside it unless the user named it.
    pub root: PathBuf,
    /// Who named the path: [`Named::ByUser`] for `-o PATH`, which may lie outside the root as
    /// long as no link inside the root leads there.
    pub named: Named,
}

impl Target {
    /// The agent's own file at the project root, or `output` resolved against `cwd` (as every
    /// command-line path is).
    pub fn new(
        project: &Project,
        agent: &'static Agent,
        output: Option<&Path>,
        cwd: &Path,
    ) -> Target {
        let default = project.root.join(agent.context_file);
        match output {
            None => Target {
                agent,
                path: default,
                at_default: true,
                root: project.root.clone(),
                named: Named::ByUs,
            },
            Some(out) => {
                let path = cwd.join(out);
                let at_default = same_file_path(&path, &default);
                Target {
                    agent,
                    path,
                    at_default,
                    root: project.root.clone(),
                    named: Named::ByUser,
                }
            }
        }
    }
}

/// Whether two paths name the same place, comparing canonical parents and file names (the file
/// itself need not exist yet).
fn same_file_path(a: &Path, b: &Path) -> bool {
    let norm = |p: &Path| -> Option<PathBuf> {
        let parent = p.parent()?.canonicalize().ok()?;
        Some(parent.join(p.file_name()?))
    };
    match (norm(a), norm(b)) {
        (Some(a), Some(b)) => a == b,
        _ => a == b,
    }
}

/// What an export did.
#[derive(Debug, Clone)]
pub struct Report {
    /// The file written and the agent it is for.
    pub target: Target,
    /// How the file changed: created, block updated or appended, or overwritten (`--force`).
    pub outcome: Outcome,
    /// Set when the work moved on since the latest checkpoint.
    pub stale: Option<Stale>,
    /// Characters in the whole file after the export (for agents that cut files off).
    pub file_chars: usize,
}

/// Renders the session and writes it into `target`, under the session lock (so two exports to
/// one file cannot interleave). `session.json` itself is not rewritten. `now` and `repo` are
/// the live git state, read by the caller before locking.
///
/// Errors: those of [`write`], and session errors from loading.
pub fn export(
    project: &Project,
    target: &Target,
    force: bool,
    now: Option<&WorkTree>,
    repo: Option<&Repo>,
) -> Result<Report> {
    let _guard = project.lock()?;
    let session = project.load()?;
    write(&session, target, force, now, repo)
}

/// The Markdown for `session` with the live git state `now` (and the stale report it implies).
pub fn content(
    session: &crate::session::Session,
    now: Option<&WorkTree>,
    repo: Option<&Repo>,
) -> (String, Option<Stale>) {
    let stale = stale::check(session, now, repo);
    let git = now.map(WorkTree::git_ref);
    (render::render(session, git.as_ref(), stale.as_ref()), stale)
}

/// Renders `session` and splices it into `target`. The caller holds the session lock.
///
/// Errors: [`Error::ExportUnsafe`] when the file's markers do not form exactly one block (and
/// `force` is off), the file is read-only (or its directory is), too large (or would be after
/// the export), not a regular file, resolves outside the session root through a link or (not
/// named by the user) at all, or cannot be read or written — in every case the file is left as
/// it was.
pub fn write(
    session: &crate::session::Session,
    target: &Target,
    force: bool,
    now: Option<&WorkTree>,
    repo: Option<&Repo>,
) -> Result<Report> {
    let (content, stale) = content(session, now, repo);
    let unsafe_ = |problem: String| Error::ExportUnsafe {
        path: target.path.clone(),
        problem,
    };
    // Where the file may be written is decided by the one guard, before anything is read.
    let guard = WriteGuard::new(&target.root).map_err(|e| {
        unsafe_(format!(
            "cannot resolve the session root ({e}); nothing was written"
        ))
    })?;
    let refused = |e: WriteError| {
        match e {
        WriteError::Outside { ref real, .. } => unsafe_(format!(
            "{e}; nothing was written\n  hint: to write to that file anyway, name it yourself: `pas-agent export --to {} -o {}`",
            target.agent.id,
            crate::term::clean(&real.to_string_lossy())
        )),
        WriteError::ReadOnly => unsafe_(
            "the file is read-only; nothing was written (make it writable, or export elsewhere with -o)".into(),
        ),
        WriteError::NotAFile(kind) => unsafe_(format!("it is {kind}, not a regular file; nothing was written")),
        WriteError::Io(e) => unsafe_(format!("cannot write the file ({e}); it was left as it was")),
        other => unsafe_(format!("{other}; nothing was written")),
    }
    };
    guard.check(&target.path, target.named).map_err(refused)?;
    let existing = match fsutil::read_limited(&target.path, MAX_CONTEXT_FILE_BYTES) {
        Ok(bytes) => bytes,
        Err(ReadError::TooLarge(size)) => {
            return Err(unsafe_(format!(
                "{}; nothing was written",
                crate::limits::CONTEXT_FILE.read_refusal(size)
            )));
        }
        Err(ReadError::NotAFile("a directory")) => {
            return Err(unsafe_(
                "is a directory; give the path of a file to write".into(),
            ));
        }
        Err(ReadError::NotAFile(kind)) => {
            return Err(unsafe_(format!(
                "it is {kind}, not a regular file; nothing was written"
            )));
        }
        Err(ReadError::Io(e)) => {
            return Err(unsafe_(format!(
                "cannot read the file ({e}); nothing was written"
            )));
        }
    };
    let (bytes, outcome) = block::splice(existing.as_deref(), &content, force).map_err(|reason| {
        unsafe_(format!(
            "{reason}; nothing was written\n  hint: fix the file by hand, or replace all of it with the block: `pas-agent export --to {} --force`",
            target.agent.id
        ))
    })?;
    // Never write a file the next export would refuse to read.
    crate::limits::CONTEXT_FILE
        .check_write(bytes.len())
        .map_err(unsafe_)?;
    if existing.is_none()
        && let Some(parent) = target.path.parent()
    {
        guard
            .create_dir_all(parent, target.named, 0o777)
            .map_err(|e| match e {
                WriteError::Io(e) => unsafe_(format!(
                    "cannot create its directory ({e}); nothing was written"
                )),
                e => refused(e),
            })?;
    }
    // Context files hard-linked to each other (CLAUDE.md and AGENTS.md) stay linked.
    let peers: Vec<PathBuf> = crate::agents::AGENTS
        .iter()
        .map(|a| target.root.join(a.context_file))
        .chain(std::iter::once(target.path.clone()))
        .collect();
    guard
        .write(&target.path, &bytes, target.named, Links::KeepAmong(&peers))
        .map_err(refused)?;
    Ok(Report {
        target: target.clone(),
        outcome,
        stale,
        file_chars: String::from_utf8_lossy(&bytes).chars().count(),
    })
}
