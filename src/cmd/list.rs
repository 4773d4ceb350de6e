//! `pas-agent list`: the checkpoints, one per line.

use std::fmt::Write as _;

use serde::Serialize;

use super::{print_json, project};
use crate::cli::JsonArgs;
use crate::display::{count, second};
use crate::error::Result;
use crate::model::Checkpoint;
use crate::term::clean_line;

/// One checkpoint in `list --json` and `show --json`: its 1-based number, then its fields as
/// stored (`task_snapshot` left out of `list`).
#[derive(Serialize)]
pub(super) struct Numbered<'a> {
    pub number: usize,
    #[serde(flatten)]
    pub checkpoint: Summary<'a>,
}

#[derive(Serialize)]
#[serde(untagged)]
pub(super) enum Summary<'a> {
    Full(&'a Checkpoint),
    Brief {
        id: uuid::Uuid,
        timestamp: chrono::DateTime<chrono::Utc>,
        message: &'a str,
        git: &'a Option<crate::model::GitRef>,
        files_changed: &'a [crate::model::FileState],
    },
}

#[derive(Serialize)]
struct ListJson<'a> {
    checkpoints: Vec<Numbered<'a>>,
}

pub fn run(args: JsonArgs) -> Result<i32> {
    let project = project()?;
    let session = project.load()?;
    if args.json {
        let checkpoints = session
            .checkpoints
            .iter()
            .enumerate()
            .map(|(i, c)| Numbered {
                number: i + 1,
                checkpoint: Summary::Brief {
                    id: c.id,
                    timestamp: c.timestamp,
                    message: &c.message,
                    git: &c.git,
                    files_changed: &c.files_changed,
                },
            })
            .collect();
        print_json(&ListJson { checkpoints })?;
        return Ok(0);
    }
    let mut out = String::new();
    if session.checkpoints.is_empty() {
        out.push_str("No checkpoints yet. Save one with `pas-agent checkpoint \"<message>\"`.\n");
    } else {
        let _ = writeln!(
            out,
            "{} — {}",
            clean_line(&session.project_name),
            count(session.checkpoints.len(), "checkpoint", "checkpoints")
        );
        for (i, c) in session.checkpoints.iter().enumerate() {
            let mut line = format!(
                "{:>3}  {}  {}  ({})",
                i + 1,
                second(&c.timestamp),
                clean_line(&c.message),
                count(
                    usize::try_from(crate::session::bound::total_of(&c.files_changed, &c.extra))
                        .unwrap_or(usize::MAX),
                    "file",
                    "files"
                )
            );
            if let Some(git) = &c.git {
                match &git.commit {
                    Some(commit) => {
                        let _ = write!(line, " [{}]", commit.chars().take(8).collect::<String>());
                    }
                    None => line.push_str(" [no commits]"),
                }
            }
            let _ = writeln!(out, "{line}");
        }
    }
    crate::term::print(&out)?;
    Ok(0)
}
