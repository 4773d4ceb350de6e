//! `pas-agent prune [--keep N] [--captures-older-than DURATION] [--dry-run]`: keeps a session
//! small (docs/teams.md, "Pruning").
//!
//! The file lists of all but the last N checkpoints and the last N finished runs are dropped,
//! their counts kept in `files_changed_total`; checkpoints and runs themselves stay (their
//! ids, messages and task snapshots, which a merge needs and the original reads). The words of
//! those older runs shrink too (their first prompt and the start of their last answer stay),
//! and every run's command line is bounded as a new record's is. Output captures of runs that
//! started before the retention are deleted.

use std::fmt::Write as _;

use chrono::Utc;

use crate::cli::PruneArgs;
use crate::display::count;
use crate::error::{Error, Result};
use crate::model::RunState;
use crate::session::Session;
use crate::session::bound::{TOTAL_KEY, total_of};

/// What a prune drops (or would drop).
#[derive(Default)]
struct Dropped {
    checkpoints: usize,
    runs: usize,
    entries: usize,
    /// Runs (by index) whose words (prompts, answer, commands, edits) or command line shrank.
    words: std::collections::BTreeSet<usize>,
}

/// An old run keeps its first prompt cut to this many characters.
pub const OLD_PROMPT_CHARS: usize = 200;
/// An old run keeps the start of its last answer, this many characters.
pub const OLD_ANSWER_CHARS: usize = 500;

/// `text` cut to `max` characters (`…` marks a cut); whether it was cut.
fn cut(text: &mut String, max: usize) -> bool {
    match text.char_indices().nth(max) {
        Some((end, _)) => {
            text.truncate(end);
            text.push('…');
            true
        }
        None => false,
    }
}

/// Shrinks what an old run says: its first prompt and the start of its last answer stay (cut
/// to [`OLD_PROMPT_CHARS`] and [`OLD_ANSWER_CHARS`]), the other prompts, the commands and the
/// edited files go (their counts are kept in the `…_omitted` fields), and `pruned: true` marks
/// the transcript. Returns whether anything changed.
fn shrink_words(run: &mut crate::model::Run) -> bool {
    run.transcript.as_mut().is_some_and(shrink_transcript)
}

/// [`shrink_words`] of one transcript.
fn shrink_transcript(t: &mut crate::model::Transcript) -> bool {
    let mut changed = false;
    if t.prompts.len() > 1 {
        t.prompts_omitted += t.prompts.len() - 1;
        t.prompts.truncate(1);
        changed = true;
    }
    for p in &mut t.prompts {
        changed |= cut(p, OLD_PROMPT_CHARS);
    }
    if let Some(a) = &mut t.last_answer
        && cut(a, OLD_ANSWER_CHARS)
    {
        t.answer_truncated = true;
        changed = true;
    }
    if !t.commands.is_empty() {
        t.commands_omitted += t.commands.len();
        t.commands.clear();
        changed = true;
    }
    if !t.edits.is_empty() {
        t.edits_omitted += t.edits.len();
        t.edits.clear();
        changed = true;
    }
    if changed {
        t.extra.insert("pruned".into(), true.into());
    }
    changed
}

fn prune_lists(s: &mut Session, keep: usize) -> Dropped {
    let mut d = Dropped::default();
    let n = s.checkpoints.len();
    for cp in s.checkpoints.iter_mut().take(n.saturating_sub(keep)) {
        if cp.files_changed.is_empty() {
            continue;
        }
        let total = total_of(&cp.files_changed, &cp.extra);
        d.checkpoints += 1;
        d.entries += cp.files_changed.len();
        cp.files_changed.clear();
        cp.extra.insert(TOTAL_KEY.into(), total.into());
    }
    let finished: Vec<usize> = (0..s.runs.len())
        .filter(|&i| s.runs[i].state != RunState::Running)
        .collect();
    // Every run's command line within the bounds a new record has (a record written before
    // them may hold a whole 120 KB prompt).
    for (i, run) in s.runs.iter_mut().enumerate() {
        let bounded = crate::launch::bound_argv(run.argv.clone());
        if bounded != run.argv {
            run.argv = bounded;
            d.words.insert(i);
        }
    }
    for &i in finished.iter().take(finished.len().saturating_sub(keep)) {
        let run = &mut s.runs[i];
        if shrink_words(run) {
            d.words.insert(i);
        }
        if run.files_changed.is_empty() {
            continue;
        }
        let total = total_of(&run.files_changed, &run.extra);
        d.runs += 1;
        d.entries += run.files_changed.len();
        run.files_changed.clear();
        run.extra.insert(TOTAL_KEY.into(), total.into());
    }
    d
}

/// Every run of `s` by id, and whether it is one whose lists and words a prune keeping the
/// last `keep` finished runs drops (as [`prune_lists`] picks them).
fn old_runs(s: &Session, keep: usize) -> std::collections::HashMap<uuid::Uuid, bool> {
    let finished: Vec<usize> = (0..s.runs.len())
        .filter(|&i| s.runs[i].state != RunState::Running)
        .collect();
    let old: std::collections::HashSet<usize> = finished
        .iter()
        .take(finished.len().saturating_sub(keep))
        .copied()
        .collect();
    s.runs
        .iter()
        .enumerate()
        .map(|(i, r)| (r.id, old.contains(&i)))
        .collect()
}

/// What [`prune_lists`] does to an old run, done to its details in the history file (the
/// fields as the run had them): its file list goes, its count kept in `files_changed_total`,
/// and its words shrink. Returns whether they changed.
fn prune_details(d: &mut crate::model::Extra) -> bool {
    let mut changed = false;
    if let Some(v) = d.get("files_changed") {
        let files: Vec<crate::model::FileState> =
            serde_json::from_value(v.clone()).unwrap_or_default();
        if !files.is_empty() {
            let total = total_of(&files, d);
            d.remove("files_changed");
            d.insert(TOTAL_KEY.into(), total.into());
            changed = true;
        }
    }
    if let Some(v) = d.get_mut("transcript")
        && let Ok(mut t) = serde_json::from_value::<crate::model::Transcript>(v.clone())
        && shrink_transcript(&mut t)
        && let Ok(shrunk) = serde_json::to_value(&t)
    {
        *v = shrunk;
        changed = true;
    }
    changed
}

/// Lists moved to the history file go the way [`prune_lists`] sends those of `s`, and the
/// details of old runs moved there shrink as the runs' own would. Call under the session lock.
fn prune_history(
    project: &crate::session::Project,
    s: &Session,
    keep: usize,
    dry_run: bool,
) -> Result<crate::session::history::Retained> {
    let n = s.checkpoints.len();
    let kept: std::collections::HashSet<uuid::Uuid> = s.checkpoints[n.saturating_sub(keep)..]
        .iter()
        .map(|c| c.id)
        .collect();
    let runs = old_runs(s, keep);
    crate::session::history::retain(project, &kept, &runs, &prune_details, dry_run)
}

pub fn run(args: PruneArgs) -> Result<i32> {
    let project = super::project()?;
    let size = |p: &std::path::Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    let before = size(&project.session_path());
    // The history file is rewritten under the session lock, with the session it goes with:
    // a line another writer appends meanwhile (a run's completion moving old runs out) is
    // never lost to the rewrite.
    let (dropped, history) = if args.dry_run {
        let mut s = project.load()?;
        let dropped = prune_lists(&mut s, args.keep);
        (dropped, prune_history(&project, &s, args.keep, true)?)
    } else {
        project.modify(|s| {
            let dropped = prune_lists(s, args.keep);
            Ok((dropped, prune_history(&project, s, args.keep, false)?))
        })?
    };
    if let Some(why) = &history.unreadable {
        crate::session::history::warn_unreadable(why, "its lines are left as they are");
    }
    let mut out = String::new();
    if history.dropped > 0 {
        let _ = writeln!(
            out,
            "{} {} older lines from .pas-agent/history.jsonl ({} KB before).",
            if args.dry_run {
                "Would drop"
            } else {
                "Dropped"
            },
            history.dropped,
            history.bytes / 1024
        );
    }
    if history.shrunk > 0 {
        let _ = writeln!(
            out,
            "{} the file lists and words of {} in .pas-agent/history.jsonl.",
            if args.dry_run {
                "Would drop"
            } else {
                "Dropped"
            },
            count(history.shrunk, "older run", "older runs"),
        );
    }
    let verb = if args.dry_run {
        "Would drop"
    } else {
        "Dropped"
    };
    let _ = writeln!(
        out,
        "{verb} the file lists of {} and {} ({} entries), keeping the last {}.",
        count(dropped.checkpoints, "checkpoint", "checkpoints"),
        count(dropped.runs, "run", "runs"),
        dropped.entries,
        args.keep
    );
    if !dropped.words.is_empty() {
        let _ = writeln!(
            out,
            "{} the words of {} (the first prompt and the start of the last answer stay).",
            if args.dry_run {
                "Would shrink"
            } else {
                "Shrank"
            },
            count(dropped.words.len(), "run", "runs"),
        );
    }
    if !args.dry_run {
        let after = size(&project.session_path());
        let _ = writeln!(
            out,
            "session.json: {} KB → {} KB.",
            before / 1024,
            after / 1024
        );
    }
    if let Some(age) = args.captures_older_than {
        let cutoff = Utc::now()
            - chrono::Duration::from_std(age).map_err(|e| Error::Usage(e.to_string()))?;
        let session = project.load()?;
        // Through the guard: a run directory (or `.pas-agent/runs`) the repository planted as
        // a link leads nowhere, and nothing outside the project is ever deleted.
        let guard = crate::fsutil::WriteGuard::new(&project.root)
            .map_err(|e| Error::io(&project.root, e))?;
        let mut removed = 0usize;
        let mut bytes = 0u64;
        for r in session
            .runs
            .iter()
            .filter(|r| r.state != RunState::Running && r.started_at < cutoff)
        {
            let dir = project
                .root
                .join(crate::launch::capture::RUNS_DIR)
                .join(r.id.to_string());
            // A real directory inside the project only: a link there is not followed, nor
            // removed.
            let Ok(meta) = std::fs::symlink_metadata(&dir) else {
                continue;
            };
            if !meta.is_dir() || guard.check(&dir, crate::fsutil::Named::ByUs).is_err() {
                continue;
            }
            let size: u64 = std::fs::read_dir(&dir)
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum();
            if !args.dry_run {
                guard
                    .remove_dir_all(&dir)
                    .map_err(|e| Error::write(&dir, e))?;
            }
            removed += 1;
            bytes += size;
        }
        let verb = if args.dry_run {
            "Would delete"
        } else {
            "Deleted"
        };
        let _ = writeln!(
            out,
            "{verb} the output captures of {} ({} KB).",
            count(removed, "run", "runs"),
            bytes / 1024
        );
    }
    crate::term::print(&out)?;
    Ok(0)
}
