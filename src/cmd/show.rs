//! `pas-agent show N`: one checkpoint in full.

use std::fmt::Write as _;

use super::list::{Numbered, Summary};
use super::{git_line, print_json, project, task_head, task_lists};
use crate::cli::ShowArgs;
use crate::display::{count, second};
use crate::error::Result;
use crate::session::{history, ops};
use crate::term::{clean, clean_line};

pub fn run(args: ShowArgs) -> Result<i32> {
    let project = project()?;
    let session = project.load()?;
    let (number, found) = ops::find_checkpoint(&session, &args.checkpoint)?;
    // A list moved to `.pas-agent/history.jsonl` is read back from there.
    let mut full = found.clone();
    let mut damaged = None;
    if full.extra.get(history::MOVED_KEY) == Some(&true.into()) {
        match history::moved_of(&project, &full.id) {
            history::Moved::Found(files, snapshot) => {
                full.files_changed = files;
                if let Some(snapshot) = *snapshot {
                    full.task_snapshot = snapshot;
                }
                full.extra.remove(history::MOVED_KEY);
            }
            history::Moved::Damaged => {
                damaged = Some("its line in .pas-agent/history.jsonl is damaged".to_owned());
                full.extra.insert(history::DAMAGED_KEY.into(), true.into());
            }
            history::Moved::Unreadable(why) => {
                history::warn_unreadable(
                    &why,
                    "the file list of this checkpoint kept there is not shown, only its count",
                );
                damaged = Some(".pas-agent/history.jsonl cannot be read".to_owned());
            }
            history::Moved::Missing => {}
        }
    }
    let cp = &full;
    if args.json {
        print_json(&Numbered {
            number,
            checkpoint: Summary::Full(cp),
        })?;
        return Ok(0);
    }
    let mut out = String::new();
    let _ = writeln!(out, "Checkpoint #{number} ({})", cp.id);
    let _ = writeln!(out, "Saved:    {}", second(&cp.timestamp));
    let _ = writeln!(out, "Message:  {}", clean_line(&cp.message));
    if let Some(git) = &cp.git {
        let _ = writeln!(out, "Git:      {}", git_line(git));
    }
    out.push('\n');
    task_head(&cp.task_snapshot, &mut out);
    task_lists(&cp.task_snapshot, &mut out);
    let total = crate::session::bound::total_of(&cp.files_changed, &cp.extra);
    if total == 0 {
        out.push_str("\nNo changed files recorded.\n");
    } else if cp.files_changed.is_empty() {
        let why = match &damaged {
            Some(why) => format!("{why}, so the list cannot be shown"),
            None => "the list was pruned".to_owned(),
        };
        let _ = writeln!(
            out,
            "\n{} changed ({why})",
            count(
                usize::try_from(total).unwrap_or(usize::MAX),
                "file",
                "files"
            )
        );
    } else {
        let _ = writeln!(
            out,
            "\n{} changed:",
            count(
                usize::try_from(total).unwrap_or(usize::MAX),
                "file",
                "files"
            )
        );
        for f in &cp.files_changed {
            // A collapsed directory (`dir/`, see `session::bound`) stands for many files.
            let n = crate::session::bound::files_of(f);
            let many = if n > 1 {
                format!(
                    ", {}",
                    count(usize::try_from(n).unwrap_or(usize::MAX), "file", "files")
                )
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "  {} ({}{many})",
                clean(&f.path),
                clean(&f.status.describe())
            );
        }
    }
    crate::term::print(&out)?;
    Ok(0)
}
