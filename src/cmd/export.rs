//! `pas-agent export --to AGENT` (or `--all`): write the session into agents' files, check
//! that they hold it (`--check`), or take it out (`--remove`).

use std::path::{Path, PathBuf};

use super::{cwd, live, project};
use crate::agents::{self, Agent};
use crate::cli::ExportArgs;
use crate::error::{Error, Result};
use crate::export::{self, Checked, Other, Outcome, Removed, Target, Why, delivery};
use crate::git::Detail;
use crate::term::{clean, warn};

pub fn run(args: ExportArgs) -> Result<i32> {
    let chosen = match &args.to {
        Some(name) => vec![
            agents::export_agent(name)
                .ok_or_else(|| Error::Usage(format!("unknown agent `{}`", clean(name))))?,
        ],
        None => Vec::new(),
    };
    let cwd = cwd()?;
    let project = project()?;
    let chosen = if args.all {
        in_use(&project.root)
    } else {
        chosen
    };
    if args.output.as_deref() == Some(Path::new("-")) {
        if args.check || args.remove {
            return Err(Error::Usage(
                "`-o -` prints the block; it cannot be checked or removed (name the file with -o PATH)".into(),
            ));
        }
        // The file's text alone, on stdout: nothing is written, so no lock is needed.
        let session = project.load_recent()?;
        let (repo, tree) = live(&project, detail(&session));
        let limit = chosen.first().and_then(|a| a.read_limit);
        let (content, _) = export::content_within(&session, tree.as_ref(), repo.as_ref(), limit);
        let text = match chosen.first().map(|a| a.layout) {
            Some(agents::Layout::Owned { front_matter }) => {
                crate::block::owned_file(front_matter, &content)
            }
            _ => crate::block::make_block(&content, "\n"),
        };
        crate::term::print_data(&text)?;
        return Ok(0);
    }
    if args.check || args.remove {
        let targets = distinct(
            chosen
                .iter()
                .flat_map(|a| {
                    if args.remove && args.output.is_none() {
                        remove_targets(&project, a)
                    } else {
                        vec![Target::for_agent(&project, a, args.output.as_deref(), &cwd)]
                    }
                })
                .collect(),
        );
        if targets.is_empty() && chosen.is_empty() {
            return nothing_in_use();
        }
        let mut code = 0;
        let mut failed = |e: Error| -> Result<()> {
            if !args.all {
                return Err(e);
            }
            crate::term::error(&e.to_string());
            code = code.max(e.exit_code());
            Ok(())
        };
        if args.check {
            let session = project.load_recent()?;
            let mut stale = false;
            for target in &targets {
                let shown = display(&target.path, &cwd);
                let fix = format!("run `pas-agent export --to {}`", target.agent.id);
                match export::check(&session, target) {
                    Ok(Checked::Current) => {
                        crate::term::print(&format!("{shown}: current\n"))?;
                    }
                    Ok(Checked::Missing(why)) => {
                        stale = true;
                        crate::term::print(&format!("{shown}: missing ({why}); {fix}\n"))?;
                    }
                    Ok(Checked::Outdated) => {
                        stale = true;
                        crate::term::print(&format!("{shown}: out of date; {fix}\n"))?;
                    }
                    Err(e) => failed(e)?,
                }
            }
            return Ok(if code != 0 { code } else { i32::from(stale) });
        }
        for target in &targets {
            let shown = display(&target.path, &cwd);
            match export::remove(&project, target) {
                Ok(Removed::Block) => crate::term::print(&format!(
                    "Took the pas-agent block out of {shown}; the rest of the file is as it was before the export.\n"
                ))?,
                Ok(Removed::File) => crate::term::print(&format!(
                    "Deleted {shown}: it held nothing but the pas-agent block.\n"
                ))?,
                Ok(Removed::Nothing) => {
                    crate::term::print(&format!("{shown} holds no pas-agent block.\n"))?
                }
                Err(e) => failed(e)?,
            }
        }
        return Ok(code);
    }
    if chosen.is_empty() {
        return nothing_in_use();
    }
    let (repo, tree) = live(&project, detail(&project.load_recent()?));
    let mut code = 0;
    let mut written: Vec<PathBuf> = Vec::new();
    for agent in &chosen {
        // Chosen one by one: a block written for one agent is where the next one that reads
        // that file finds it, so a file several agents read gets one block.
        let target = Target::for_agent(&project, agent, args.output.as_deref(), &cwd);
        let key = export::canonical(&target.path);
        if args.all && written.contains(&key) {
            continue;
        }
        written.push(key);
        match export::export(&project, &target, args.force, tree.as_ref(), repo.as_ref()) {
            Ok(report) => {
                print_report(agent, &report, &cwd)?;
            }
            Err(e) if args.all => {
                crate::term::error(&e.to_string());
                code = code.max(e.exit_code());
            }
            Err(e) => return Err(e),
        }
    }
    Ok(code)
}

fn nothing_in_use() -> Result<i32> {
    crate::term::note(
        "no agent is in use here: no agent's file exists, no agent's executable is on PATH and no agent's directory is in the project; name one with --to",
    );
    Ok(0)
}

/// What `export --remove --to AGENT` takes the block out of: every file the agent reads that
/// holds one (its own, one it imports, one it reads as well), and a copy of its context file
/// a killed run left behind.
fn remove_targets(project: &crate::session::Project, agent: &'static Agent) -> Vec<Target> {
    let root = &project.root;
    let mut files: Vec<(PathBuf, export::Why)> = Vec::new();
    // What the agent reads now (a copy a killed run left included) and once that copy is gone.
    for r in delivery::reads(agent, root)
        .into_iter()
        .chain(delivery::reads_of(agent, root, false))
    {
        let keep = r.how == export::How::Own || delivery::holds_block(&r.path);
        if !keep || files.iter().any(|(q, _)| export::canonical(q) == r.real) {
            continue;
        }
        let why = match r.how {
            export::How::Own => export::Why::Own,
            how => export::Why::Holds(how),
        };
        files.push((r.path, why));
    }
    files
        .into_iter()
        .map(|(p, why)| Target::at(project, agent, p, why, crate::fsutil::Named::ByUs))
        .collect()
}

/// How much git status an export needs: changed files when there is a checkpoint to compare
/// them with, else only whether the tree is dirty.
fn detail(session: &crate::session::Session) -> Detail {
    if session.checkpoints.is_empty() {
        Detail::Dirty
    } else {
        Detail::Files
    }
}

/// The agents in use under `root` (`export --all`): those whose context file exists, whose
/// executable is on `PATH` (not the generic `agent`), or whose own directory (or file, such as
/// `CRUSH.md`) is in the project.
fn in_use(root: &Path) -> Vec<&'static Agent> {
    let exists = |p: PathBuf| p.symlink_metadata().is_ok();
    agents::AGENTS
        .iter()
        .copied()
        .filter(|a| {
            exists(root.join(a.context_file))
                || a.marks.iter().any(|m| exists(root.join(m)))
                || a.own_executables().any(|x| which::which(x).is_ok())
        })
        .collect()
}

/// The targets with each file once (the first agent that names it), in order.
fn distinct(targets: Vec<Target>) -> Vec<Target> {
    let mut out: Vec<Target> = Vec::new();
    for t in targets {
        let key = t.shown();
        if !out.iter().any(|o| o.shown() == key) {
            out.push(t);
        }
    }
    out
}

/// Prints what an export did: warnings (a checkpoint behind the work tree, a file longer than
/// the agent reads, blocks it reads twice) on stderr; on stdout the outcome, why the block is
/// in that file, what became of the other blocks the agent reads, and, for a file git tracks,
/// that it is. Task edits since the last checkpoint are not warned about here: the export
/// shows the current task.
fn print_report(agent: &'static Agent, report: &export::Report, cwd: &Path) -> Result<i32> {
    if let Some(stale) = report.stale.as_ref().filter(|s| s.tree_moved()) {
        crate::term::note(&stale.headline());
        for line in stale.details() {
            crate::term::note(&format!("    {}", clean(&line)));
        }
    }
    let path = display(&report.target.path, cwd);
    for warning in report.warnings(&path) {
        warn(&warning);
    }
    let root = &report.target.root;
    let name = |p: &Path| clean(&export::shown(root, p));
    let file = name(&report.target.path);
    let own = name(&delivery::own_file(agent, root));
    let what = match report.outcome {
        Outcome::Created => format!("Created {path} for {}.", agent.name),
        Outcome::Updated => format!("Updated the pas-agent block in {path}."),
        Outcome::Appended => {
            format!("Added a pas-agent block to {path}; the existing content was kept.")
        }
        Outcome::Inserted => format!(
            "Added a pas-agent block at the top of {path}, where {} reads it; the existing content was kept after it.",
            agent.name
        ),
        Outcome::Overwritten => format!("Overwrote {path} with the pas-agent block."),
    };
    let mut lines = vec![what, hint(agent, report, &file, &own, &path)];
    for (other, what, result) in &report.others {
        if result.is_err() {
            continue;
        }
        let other = name(other);
        lines.push(match what {
            Other::Remove => format!(
                "Took the pas-agent block out of {other}: every agent that reads {other} reads the one in {file} too."
            ),
            Other::Refresh(_) => format!("Updated the pas-agent block in {other} too."),
            Other::Leftover => format!(
                "Deleted {other}, a copy of {own} with the session that a run which did not end left behind: {} would have read it instead of {own}.",
                agent.name
            ),
        });
    }
    if report.tracked {
        lines.push(format!(
            "{file} is tracked by git, so the block shows in `git status` and in diffs until you commit it or take it out (`pas-agent export --to {} --remove`). `pas-agent run {}` keeps a block it finds in a tracked file current, and never adds one: without it, {}.",
            agent.id,
            agent.short_name(),
            private_way(agent, &file)
        ));
    }
    let mut text = lines.join("\n");
    text.push('\n');
    crate::term::print(&text)?;
    Ok(0)
}

/// Why the agent reads the file written, in one sentence.
fn hint(
    agent: &'static Agent,
    report: &export::Report,
    file: &str,
    own: &str,
    path: &str,
) -> String {
    let name = |p: &Path| clean(&export::shown(&report.target.root, p));
    if !report.target.at_default {
        return format!(
            "{} reads {own} from the project root at startup, not this file; point it at {path} yourself.",
            agent.name
        );
    }
    if !agent.context_args.is_empty() {
        let args = agent.context_args().join(std::ffi::OsStr::new(" "));
        return format!(
            "{} reads no file by itself: `pas-agent run {}` passes it `{}`; started another way, it does not see the session unless you pass that yourself.",
            agent.name,
            agent.short_name(),
            clean(&args.to_string_lossy()).replace(agent.context_file, file)
        );
    }
    match &report.target.why {
        Why::Holds(export::How::Imported { by }) => format!(
            "{} reads {file} through the `@` import in {}, so that block is the one it sees; {own} was left as it was.",
            agent.name,
            name(by)
        ),
        Why::Holds(_) => format!(
            "{} reads {file} as well as {own}, so that block is the one it sees; {own} was left as it was.",
            agent.name
        ),
        Why::Bridge { by } => format!(
            "{} imports {file} (`@{file}`), so {} reads the block there; no second block was put into {}.",
            name(by),
            agent.name,
            name(by)
        ),
        Why::Private { tracked, .. } => format!(
            "{} reads {file} as well; {} is tracked by git and was left as it was.",
            agent.name,
            name(tracked)
        ),
        Why::Own => format!(
            "{} reads {file} from the project root when it starts.",
            agent.name
        ),
    }
}

/// How `run` gives `agent` the session when its file `file` is tracked, in a phrase.
fn private_way(agent: &'static Agent, file: &str) -> String {
    use crate::agents::Private;
    if !agent.context_args.is_empty() {
        return "it passes a file of the run's own, which git ignores".into();
    }
    match agent.private {
        Private::AlsoReads(f) => format!(
            "{} gets the session from {f}, which it reads as well and git is told to ignore",
            agent.name
        ),
        Private::Shadows(f) => format!(
            "{} gets the session from {f}, a copy of {file} with the block that it reads instead, which git is told to ignore and the run deletes when it ends",
            agent.name
        ),
        Private::ConfigEnv { var, .. } => format!(
            "{} gets the session from a file of the run's own that {var} names",
            agent.name
        ),
        Private::None => match agent.hooks {
            Some(h) => format!(
                "{} gets the session from pas-agent's SessionStart hook, once `pas-agent integrate {}` installed it",
                agent.name, h.key
            ),
            None => format!("{} has no other way to get the session", agent.name),
        },
    }
}

/// A path relative to `cwd` when it is inside it, else as is; sanitised.
pub(super) fn display(path: &std::path::Path, cwd: &std::path::Path) -> String {
    let shown = path.strip_prefix(cwd).unwrap_or(path);
    clean(&shown.to_string_lossy())
}
