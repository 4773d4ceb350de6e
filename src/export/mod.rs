//! `export`: render the session and splice it into an agent's context file (SPEC §4).

pub mod block;
pub mod render;

use std::path::{Path, PathBuf};

use crate::agents::{Agent, ReadLimit};
use crate::error::{Error, Result};
use crate::fsutil::{self, ReadError, WriteError};
use crate::git::{Repo, WorkTree};
use crate::session::Project;
use crate::stale::{self, Stale};

pub use block::{Outcome, Place};

/// Context files larger than this are not touched (16 MiB).
pub const MAX_CONTEXT_FILE_BYTES: u64 = 16 * 1024 * 1024;

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
            },
            Some(out) => {
                let path = cwd.join(out);
                let at_default = same_file_path(&path, &default);
                Target {
                    agent,
                    path,
                    at_default,
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
    /// Where the file stands against the agent's read limit, for agents that have one.
    pub limit: Option<LimitReport>,
}

/// How a written file measures against the agent's [`ReadLimit`], in the limit's unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitReport {
    /// The agent's limit.
    pub limit: ReadLimit,
    /// The whole file's length.
    pub file: usize,
    /// Where the block ends (just past its end marker line).
    pub block_end: usize,
}

impl Report {
    /// Warnings about what the agent will not read, naming the file as `shown`: the block (or
    /// part of it) past the agent's read limit, or the rest of the file past it.
    pub fn warnings(&self, shown: &str) -> Vec<String> {
        let Some(l) = self.limit else {
            return Vec::new();
        };
        let agent = self.target.agent.name;
        let amount = l.limit.describe(l.limit.amount);
        if l.block_end > l.limit.amount {
            vec![format!(
                "{agent} reads only the first {amount} of {shown}, and the pas-agent block ends at {} of its {}, so {agent} does not see all of it; move the block nearer the top of the file or shorten the text before it",
                l.limit.describe(l.block_end),
                l.limit.describe(l.file),
            )]
        } else if l.file > l.limit.amount {
            let placed = if self.outcome == Outcome::Inserted {
                "the pas-agent block was put at the top of the file, so it is read, "
            } else {
                "the pas-agent block is within them, "
            };
            vec![format!(
                "{shown} is {} long, and {agent} reads only the first {amount}; {placed}but the rest of the file past that point is not read",
                l.limit.describe(l.file)
            )]
        } else {
            Vec::new()
        }
    }
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
/// `force` is off), the file is read-only, too large, or cannot be read or written — in every
/// case the file is left as it was.
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
    let existing = match fsutil::read_limited(&target.path, MAX_CONTEXT_FILE_BYTES) {
        Ok(bytes) => bytes,
        Err(ReadError::TooLarge(size)) => {
            return Err(unsafe_(format!(
                "the file is {size} bytes, more than the {MAX_CONTEXT_FILE_BYTES}-byte limit for a context file; nothing was written"
            )));
        }
        Err(ReadError::Io(_)) if target.path.is_dir() => {
            return Err(unsafe_(
                "is a directory; give the path of a file to write".into(),
            ));
        }
        Err(ReadError::Io(e)) => {
            return Err(unsafe_(format!(
                "cannot read the file ({e}); nothing was written"
            )));
        }
    };
    if !force
        && let Some(bytes) = &existing
        && let Err(reason) = block::check_text(bytes)
    {
        return Err(unsafe_(format!("{reason}; nothing was written")));
    }
    let limit = target.agent.read_limit;
    let splice = |place| {
        block::splice(existing.as_deref(), &content, force, place).map_err(|reason| {
            unsafe_(format!(
                "{reason}; nothing was written\n  hint: fix the file by hand, or replace all of it with the block: `pas-agent export --to {} --force`",
                target.agent.id
            ))
        })
    };
    let (mut bytes, mut outcome) = splice(Place::End)?;
    // An agent that reads only the start of the file would miss a block appended past that
    // point: a new block then goes to the top instead (the file's own text is kept as is).
    if let Some(l) = limit
        && outcome == Outcome::Appended
        && block::block_end(&bytes).is_some_and(|end| l.measure(&bytes[..end]) > l.amount)
    {
        (bytes, outcome) = splice(Place::Top)?;
    }
    if existing.is_none()
        && let Some(parent) = target.path.parent()
    {
        std::fs::create_dir_all(parent).map_err(|e| {
            unsafe_(format!(
                "cannot create its directory ({e}); nothing was written"
            ))
        })?;
    }
    fsutil::write_atomic(&target.path, &bytes).map_err(|e| match e {
        WriteError::ReadOnly => unsafe_(
            "the file is read-only; nothing was written (make it writable, or export elsewhere with -o)".into(),
        ),
        WriteError::NotAFile => unsafe_("not a regular file; nothing was written".into()),
        WriteError::Io(e) => unsafe_(format!("cannot write the file ({e}); it was left as it was")),
    })?;
    Ok(Report {
        target: target.clone(),
        outcome,
        stale,
        limit: limit.map(|l| LimitReport {
            limit: l,
            file: l.measure(&bytes),
            block_end: l.measure(&bytes[..block::block_end(&bytes).unwrap_or(bytes.len())]),
        }),
    })
}
