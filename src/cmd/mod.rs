//! One module per command. Each turns parsed arguments into calls on the core and prints the
//! result; `dispatch` returns the process exit code.

mod checkpoint;
pub mod complete;
mod doctor;
mod export;
mod freeze;
mod hook;
mod init;
mod integrate;
mod list;
mod mcp;
mod merge;
mod prompt;
mod prune;
mod recover;
mod remove;
mod restore;
mod run;
mod runs;
mod sessions;
mod show;
mod status;
mod update;

use std::path::PathBuf;

pub use prompt::stamp_dir;

use crate::cli::Command;
use crate::error::{Error, Result};
use crate::git::{self, Detail, Repo, WorkTree};
use crate::model::{GitRef, ListKind, TaskState};
use crate::session::Project;
use crate::term::{clean, clean_line};

/// Runs one command; returns the exit code on success.
pub fn dispatch(command: Command) -> Result<i32> {
    if reconciles(&command)
        && let Ok(dir) = cwd()
    {
        crate::launch::reconcile::here(&dir);
    }
    if sets_up_driver(&command)
        && let Ok(dir) = cwd()
        && let Some(found) = Project::find_opt(&dir)
    {
        crate::session::teams::ensure_if_named(&found.root);
    }
    match command {
        Command::Init(a) => init::run(a),
        Command::Update(a) => update::run(a),
        Command::Remove(a) => remove::run(a),
        Command::Checkpoint(a) => checkpoint::run(a),
        Command::Status(a) => status::run(a),
        Command::List(a) => list::run(a),
        Command::Show(a) => show::run(a),
        Command::Export(a) => export::run(a),
        Command::Run(a) => run::run(a),
        Command::Runs(a) => runs::run(a),
        Command::Freeze(a) => freeze::run(a),
        Command::Restore(a) => restore::run(a),
        Command::Sessions(a) => sessions::run(a),
        Command::Hook(a) => hook::run(a),
        Command::Integrate(a) => integrate::run(a),
        Command::Lifecycle(a) => Ok(integrate::lifecycle(a)),
        Command::Prompt(a) => prompt::run(a),
        Command::Resolve => merge::resolve(),
        Command::Prune(a) => prune::run(a),
        Command::Recover(a) => recover::run(a),
        Command::MergeDriver(a) => merge::driver(a),
        Command::Mcp(a) => mcp::run(a),
        Command::Completions(a) => complete::completions(a),
        Command::Man(a) => complete::man(a),
        Command::Doctor(a) => doctor::run(a),
    }
}

/// Whether a command first sets up the session merge driver in a clone whose
/// `.gitattributes` asks for it (docs/teams.md): every command that works on a session but the
/// prompt (kept cheap) and the driver itself. `mcp` does it at each tool call instead.
fn sets_up_driver(command: &Command) -> bool {
    !matches!(
        command,
        Command::Prompt(_)
            | Command::Hook(_)
            | Command::MergeDriver(_)
            | Command::Init(_)
            | Command::Mcp(_)
            | Command::Completions(_)
            | Command::Man(_)
            | Command::Doctor(_)
            | Command::Lifecycle(_)
            | Command::Freeze(_)
            | Command::Restore(_)
    )
}

/// Whether a command first closes the records of runs whose launcher died (docs/launcher.md, "Runs that were cut short"). Commands
/// not listed (and any added later) skip it.
fn reconciles(command: &Command) -> bool {
    matches!(
        command,
        Command::Update(_)
            | Command::Remove(_)
            | Command::Checkpoint(_)
            | Command::Status(_)
            | Command::List(_)
            | Command::Show(_)
            | Command::Export(_)
            | Command::Run(_)
            | Command::Runs(_)
            | Command::Sessions(_)
    )
}

/// The current directory.
fn cwd() -> Result<PathBuf> {
    std::env::current_dir().map_err(|e| Error::io(".", e))
}

/// The session above the current directory. When the current directory is inside a separate
/// git repository nested below the session root (its own `git init`, a submodule), the
/// session is still the one above, and it records the git state of its own root's repository,
/// not the nested one's: say so on stderr rather than silently.
fn project() -> Result<Project> {
    let cwd = cwd()?;
    let project = Project::find(&cwd)?;
    if let Some(nested) = nested_repository(&cwd, &project.root) {
        crate::term::note(&format!(
            "note: {} is a separate git repository inside the session at {}; this command uses that session, which records the git state of {}, not of {}\n  hint: `pas-agent init` in {} starts a session of its own",
            clean(&nested.to_string_lossy()),
            clean(&project.root.to_string_lossy()),
            clean(&project.root.to_string_lossy()),
            clean(&nested.to_string_lossy()),
            clean(&nested.to_string_lossy()),
        ));
    }
    Ok(project)
}

/// The innermost directory between `cwd` (included) and `root` (excluded) that holds a
/// `.git` (a directory, or the file of a submodule or linked work tree): a repository of its
/// own below the session root. A few `stat` calls, no git.
fn nested_repository(cwd: &std::path::Path, root: &std::path::Path) -> Option<PathBuf> {
    if !cwd.starts_with(root) || cwd == root {
        return None;
    }
    cwd.ancestors()
        .take_while(|dir| *dir != root)
        .find(|dir| std::fs::symlink_metadata(dir.join(".git")).is_ok())
        .map(|dir| dir.to_path_buf())
}

/// The session root's git repository and its live state (`None`s outside git; a git failure
/// is a warning, not an error).
fn live(project: &Project, detail: Detail) -> (Option<Repo>, Option<WorkTree>) {
    let seen = git::Seen::of_root(&project.root, detail, "continuing without git information");
    (seen.repo, seen.tree)
}

/// Like [`live`], for commands that record git state: a git that cannot be read leaves
/// [`git::Seen::unknown`] set, and the recorded state is kept.
fn seen(project: &Project, detail: Detail) -> git::Seen {
    git::Seen::of_root(
        &project.root,
        detail,
        "the git state recorded earlier is kept",
    )
}

/// `main @ 1a2b3c4d (uncommitted changes)`, `detached HEAD @ …`, `main @ no commits`.
fn git_line(git: &GitRef) -> String {
    let branch = match &git.branch {
        Some(b) => clean(b),
        None => "detached HEAD".into(),
    };
    let commit = match &git.commit {
        Some(c) => clean_line(&c.chars().take(8).collect::<String>()),
        None => "no commits".to_string(),
    };
    let dirty = if git.dirty {
        " (uncommitted changes)"
    } else {
        ""
    };
    format!("{branch} @ {commit}{dirty}")
}

/// The numbered lists of a task, in `status` order, as text.
fn task_lists(task: &TaskState, out: &mut String) {
    use std::fmt::Write as _;
    for kind in ListKind::IN_STATUS_ORDER {
        let title = kind.title();
        let items = task.list(kind);
        if items.is_empty() {
            continue;
        }
        let _ = writeln!(out, "\n{title} ({}):", items.len());
        for (i, item) in items.iter().enumerate() {
            let _ = writeln!(out, "  {:>2}. {}", i + 1, clean_line(item));
        }
    }
}

/// Task, objective and next action, as text.
fn task_head(task: &TaskState, out: &mut String) {
    use std::fmt::Write as _;
    let _ = writeln!(out, "Task:      {}", clean_line(&task.description));
    if !task.objective.trim().is_empty() {
        let _ = writeln!(out, "Objective: {}", clean_line(&task.objective));
    }
    if let Some(next) = task.next() {
        let _ = writeln!(out, "Next:      {}", clean_line(next));
    }
}

/// Prints `value` as pretty JSON on stdout ([`crate::term::print_json`]).
fn print_json(value: &impl serde::Serialize) -> Result<()> {
    crate::term::print_json(value)
}
