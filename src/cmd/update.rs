//! `pas-agent update`: record progress.

use chrono::Utc;

use super::{project, seen};
use crate::cli::UpdateArgs;
use crate::error::Result;
use crate::git::Detail;
use crate::model::TaskState;
use crate::session::Project;
use crate::session::ops::{self, Update};

pub fn run(args: UpdateArgs) -> Result<i32> {
    let project = project()?;
    let update = Update {
        task: args.task,
        objective: args.objective,
        next: args.next,
        clear_next: args.clear_next,
        completed: args.completed,
        remaining: args.remaining,
        decisions: args.decision,
        blockers: args.blocker,
        constraints: args.constraint,
        discoveries: args.discovery,
        done: args.done,
        resolve: args.resolve,
    };
    let task = apply(&project, &update)?;
    let mut line = summary(&task);
    line.push('\n');
    crate::term::print(&line)?;
    Ok(0)
}

/// Applies `update` to the session of `project` as `pas-agent update` does: git is read before
/// the lock (the slow part), then the task changes under the lock, with the git state and
/// `updated_at`. Shared with the MCP server's `update_session`. Returns the task after it.
///
/// Errors: those of [`ops::apply_update`] (nothing changed) and of [`Project::modify`].
pub(crate) fn apply(project: &Project, update: &Update) -> Result<TaskState> {
    let seen = seen(project, Detail::Dirty);
    let now = Utc::now();
    project.modify_recent(|s| {
        ops::apply_update(&mut s.task, update)?;
        if !seen.unknown {
            ops::set_git(s, seen.tree.as_ref().map(|t| t.git_ref()));
        }
        s.updated_at = now;
        Ok(s.task.clone())
    })
}

/// `Session updated: 2 done, 3 remaining, 1 blocked; next: …` (no newline), cleaned.
pub(crate) fn summary(task: &TaskState) -> String {
    let mut line = format!(
        "Session updated: {} done, {} remaining",
        task.completed.len(),
        task.remaining.len()
    );
    if !task.blockers.is_empty() {
        line.push_str(&format!(", {} blocked", task.blockers.len()));
    }
    if let Some(next) = task.next() {
        line.push_str(&format!("; next: {}", crate::term::clean_line(next)));
    }
    line
}
