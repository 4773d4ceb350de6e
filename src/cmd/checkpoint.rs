//! `pas-agent checkpoint [MESSAGE]`: snapshot the task and the changed files.

use chrono::Utc;

use super::{project, seen};
use crate::cli::CheckpointArgs;
use crate::display::count;
use crate::error::{Error, Result};
use crate::git::Detail;
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
    let message = message.trim().to_string();
    if message.is_empty() {
        return Err(Error::Usage(
            "the checkpoint message cannot be empty".into(),
        ));
    }
    let seen = seen(&project, Detail::Files);
    let tree = seen.tree;
    let now = Utc::now();
    let number = project.modify(|s| {
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
    crate::term::print(&format!(
        "Checkpoint #{number} saved: {}\n  {files}\n",
        clean_line(&message)
    ))?;
    Ok(0)
}
