//! `pas-agent update`: record progress.

use chrono::Utc;

use super::{project, seen};
use crate::cli::UpdateArgs;
use crate::error::Result;
use crate::git::Detail;
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
    // Git is read before the lock: it is the slow part.
    let seen = seen(&project, Detail::Dirty);
    let now = Utc::now();
    let task = project.modify(|s| {
        ops::apply_update(&mut s.task, &update)?;
        if !seen.unknown {
            ops::set_git(s, seen.tree.as_ref().map(|t| t.git_ref()));
        }
        s.updated_at = now;
        Ok(s.task.clone())
    })?;
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
    line.push('\n');
    crate::term::print(&line)?;
    Ok(0)
}
