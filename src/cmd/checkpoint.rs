//! `pas-agent checkpoint [MESSAGE]`: snapshot the task and the changed files.

use chrono::Utc;

use super::{project, seen};
use crate::cli::CheckpointArgs;
use crate::display::count;
use crate::error::{Error, Result};
use crate::git::Detail;
use crate::session::Project;
use crate::session::ops;
use crate::term::{clean_line, prompt_line};

pub fn run(args: CheckpointArgs) -> Result<i32> {
    let project = project()?;
    let typed = args.message.join(" ");
    // The prompt comes before the lock (the original held the lock while waiting for it).
    let message = if args.message.is_empty() {
        prompt_line(
            "Checkpoint message:",
            "no message given: pass one, as in `pas-agent checkpoint \"login flow done\"`",
        )?
    } else {
        typed
    };
    let taken = take(&project, &message)?;
    crate::term::print(&taken.report)?;
    Ok(0)
}

/// A checkpoint [`take`] saved.
pub(crate) struct Taken {
    /// Its 1-based number.
    pub number: usize,
    /// Its message, trimmed.
    pub message: String,
    /// How many changed files it records; `None` when git was not read (outside git, or git
    /// failed).
    pub files: Option<usize>,
    /// What `pas-agent checkpoint` prints: `Checkpoint #N saved: …` and a line about the
    /// files, cleaned, ending in a newline.
    pub report: String,
}

/// Takes a checkpoint of the session of `project` with `message`, as `pas-agent checkpoint`
/// does: git is read before the lock, the checkpoint is added under it. Shared with the MCP
/// server's `checkpoint` tool.
///
/// Errors: [`Error::Usage`] for a blank message; those of [`Project::modify`].
pub(crate) fn take(project: &Project, message: &str) -> Result<Taken> {
    let message = message.trim().to_string();
    if message.is_empty() {
        return Err(Error::Usage(
            "the checkpoint message cannot be empty".into(),
        ));
    }
    ops::check_text("the checkpoint message", &message)?;
    let seen = seen(project, Detail::Files);
    let tree = seen.tree;
    let now = Utc::now();
    let number = project.modify_recent(|s| {
        Ok(ops::keeping_git_if_unknown(s, seen.unknown, |s| {
            ops::add_checkpoint(s, message.clone(), tree.as_ref(), now)
        }))
    })?;
    let files = match &tree {
        Some(t) if t.files.is_empty() => "no uncommitted changes".to_string(),
        Some(t) => format!(
            "{} with uncommitted changes",
            count(t.files.len(), "file", "files")
        ),
        None if seen.unknown => "git could not be read: no files recorded".to_string(),
        None => "not in a git repository: no files recorded".to_string(),
    };
    let report = format!(
        "Checkpoint #{number} saved: {}\n  {files}\n",
        clean_line(&message)
    );
    Ok(Taken {
        number,
        message,
        files: tree.as_ref().map(|t| t.files.len()),
        report,
    })
}
