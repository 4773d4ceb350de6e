//! `pas-agent export --to AGENT`: write the session into the agent's context file.

use super::{cwd, live, project};
use crate::agents;
use crate::cli::ExportArgs;
use crate::error::{Error, Result};
use crate::export::{self, Outcome, Target};
use crate::git::Detail;
use crate::term::{clean, warn};

pub fn run(args: ExportArgs) -> Result<i32> {
    let agent = agents::by_name(&args.to)
        .ok_or_else(|| Error::Usage(format!("unknown agent `{}`", clean(&args.to))))?;
    let cwd = cwd()?;
    let project = project()?;
    let has_checkpoints = !project.load()?.checkpoints.is_empty();
    let detail = if has_checkpoints {
        Detail::Files
    } else {
        Detail::Dirty
    };
    let (repo, tree) = live(&project, detail);
    if args.output.as_deref() == Some(std::path::Path::new("-")) {
        // The block alone, on stdout: nothing is written, so no lock is needed.
        let session = project.load()?;
        let (content, _) = export::content(&session, tree.as_ref(), repo.as_ref());
        crate::term::print(&export::block::make_block(&content, "\n"))?;
        return Ok(0);
    }
    let target = Target::new(&project, agent, args.output.as_deref(), &cwd);
    let report = export::export(&project, &target, args.force, tree.as_ref(), repo.as_ref())?;
    print_report(agent, &report, &cwd, &project.root)
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
        .and_then(|rel| agents::also_reads(agent).iter().find(|f| **f == rel));
    let hint = if report.target.at_default {
        format!(
            "{} reads {} from the project root when it starts.",
            agent.name, agent.context_file
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
