//! `pas-agent export --to AGENT` (or `--all`): write the session into agents' files, check
//! that they hold it (`--check`), or take it out (`--remove`).

use std::path::{Path, PathBuf};

use super::{cwd, live, project};
use crate::agents::{self, Agent};
use crate::cli::ExportArgs;
use crate::error::{Error, Result};
use crate::export::{self, Checked, Outcome, Removed, Target};
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
        let session = project.load()?;
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
    let targets = distinct(
        chosen
            .iter()
            .map(|a| Target::for_agent(&project, a, args.output.as_deref(), &cwd))
            .collect(),
    );
    if targets.is_empty() {
        crate::term::note(
            "no agent is in use here: no agent's file exists, no agent's executable is on PATH and no agent's directory is in the project; name one with --to",
        );
        return Ok(0);
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
        let session = project.load()?;
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
    if args.remove {
        for target in &targets {
            let shown = display(&target.path, &cwd);
            match export::remove(&project, target) {
                Ok(Removed::Block) => crate::term::print(&format!(
                    "Took the pas-agent block out of {shown}; the rest of the file is as it was.\n"
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
    let (repo, tree) = live(&project, detail(&project.load()?));
    for target in &targets {
        match export::export(&project, target, args.force, tree.as_ref(), repo.as_ref()) {
            Ok(report) => {
                print_report(target.agent, &report, &cwd, &project.root)?;
            }
            Err(e) => failed(e)?,
        }
    }
    Ok(code)
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
/// the agent reads) on stderr, the outcome and a hint on stdout. Task edits since the last
/// checkpoint are not warned about here: the export shows the current task.
fn print_report(
    agent: &agents::Agent,
    report: &export::Report,
    cwd: &std::path::Path,
    root: &std::path::Path,
) -> Result<i32> {
    if let Some(stale) = report.stale.as_ref().filter(|s| s.tree_moved()) {
        crate::term::note(&stale.headline());
        for line in stale.details() {
            crate::term::note(&format!("    {}", clean(&line)));
        }
    }
    for warning in report.warnings(&display(&report.target.path, cwd)) {
        warn(&warning);
    }
    let path = display(&report.target.path, cwd);
    if let Some(via) = &report.via_import {
        let via = display(via, cwd);
        crate::term::print(&format!(
            "{path} imports {via}, which holds the pas-agent block: updated that block and left {path} as it was, so {} sees one current block.\n",
            agent.name
        ))?;
        return Ok(0);
    }
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
    // Other files the agent loads by itself (Claude Code's `.claude/CLAUDE.md`,
    // `CLAUDE.local.md`), by their path from the project root.
    let also = report
        .target
        .path
        .strip_prefix(root)
        .ok()
        .map(|rel| rel.to_string_lossy().replace('\\', "/"))
        .and_then(|rel| agent.also_reads.iter().find(|f| **f == rel));
    let hint = if report.target.at_default {
        format!(
            "{} reads {} from the project root when it starts.",
            agent.name,
            clean(&report.target.shown())
        )
    } else if let Some(file) = also {
        format!(
            "{} reads {file} from the project root when it starts, as well as {}.",
            agent.name, agent.context_file
        )
    } else {
        format!(
            "{} reads {} from the project root at startup, not this file; point it at {path} yourself.",
            agent.name, agent.context_file
        )
    };
    crate::term::print(&format!("{what}\n{hint}\n"))?;
    Ok(0)
}

/// A path relative to `cwd` when it is inside it, else as is; sanitised.
pub(super) fn display(path: &std::path::Path, cwd: &std::path::Path) -> String {
    let shown = path.strip_prefix(cwd).unwrap_or(path);
    clean(&shown.to_string_lossy())
}
