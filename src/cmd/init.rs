//! `pas-agent init`: start a session at the project root.

use std::fmt::Write as _;

use chrono::Utc;

use super::{cwd, git_line};
use crate::cli::InitArgs;
use crate::error::{Error, Result};
use crate::git::{self, Detail};
use crate::session::{Project, ops};
use crate::term::{clean, prompt_line};

pub fn run(args: InitArgs) -> Result<i32> {
    let cwd = cwd()?;
    let repo = git::discover(&cwd)?;
    let root = repo.as_ref().map_or_else(|| cwd.clone(), |r| r.top.clone());
    let project = Project::at(&root);
    if args.nested && repo.is_some() {
        crate::term::warn(
            "--nested only applies outside git; inside a repository the session is at the top level of its work tree",
        );
    }
    project.check_session_file()?;
    if project.has_session() {
        return Err(Error::SessionExists {
            path: project.session_path(),
        });
    }
    if repo.is_none()
        && !args.nested
        && let Some(parent) = cwd.parent().and_then(Project::find_opt)
    {
        return Err(Error::Message(format!(
            "{} already has a session, and this directory belongs to it\n  hint: pas-agent commands here use that session; pass --nested to start a separate one here",
            parent.root.display()
        )));
    }
    let task = match args.task {
        Some(t) => t,
        None => prompt_line(
            "Task description:",
            "no task given: pass --task \"<what you are working on>\"",
        )?,
    };
    let task = task.trim().to_string();
    if task.is_empty() {
        return Err(Error::Usage("the task description cannot be empty".into()));
    }
    ops::check_text("the --task text", &task)?;
    let name = args
        .name
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty())
        .or_else(|| root.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "unknown".into());
    let tree = repo
        .as_ref()
        .and_then(|r| r.status_or_warn(Detail::Dirty, "the session starts without git data"));
    let mut session = ops::new_session(name, task, Utc::now());
    session.git = tree.as_ref().map(|t| t.git_ref());
    project.create(&session)?;
    // A committed session merges with pas-agent's driver (docs/teams.md): the attribute that
    // asks for it, committed with the session, and this clone's definition of it.
    let mut setup = Vec::new();
    if let Some(repo) = &repo
        && let Err(e) = crate::session::teams::ensure_attributes(&repo.top)
            .and_then(|_| crate::session::teams::ensure_config(&repo.top))
    {
        setup.push(format!("the session merge driver is not set up: {e}"));
    }

    let mut out = String::new();
    let _ = writeln!(out, "Started a pas-agent session.");
    let _ = writeln!(out, "  Project: {}", clean(&session.project_name));
    let _ = writeln!(out, "  Session: {}", session.id);
    let _ = writeln!(
        out,
        "  Store:   {}",
        clean(&project.session_path().to_string_lossy())
    );
    if let Some(git) = &session.git {
        let _ = writeln!(out, "  Git:     {}", git_line(git));
    }
    let _ = writeln!(
        out,
        "Tip: commit .pas-agent/ to carry the session across machines and merge it across branches ({}), or add .pas-agent/ to .gitignore to keep it local.",
        crate::display::TEAMS_URL
    );
    let _ = writeln!(
        out,
        "Next: `pas-agent update --remaining \"<step>\"` to plan, `pas-agent run <agent>` to start an agent."
    );
    crate::term::print(&out)?;
    for w in setup {
        crate::term::warn(&w);
    }
    Ok(0)
}
