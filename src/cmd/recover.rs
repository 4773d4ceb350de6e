//! `pas-agent recover [--force]`: brings back the session as pas-agent last saved it
//! (`crate::session::backup` keeps a copy outside the work tree at every save).
//!
//! Nothing is lost on the way: what stands at `.pas-agent/session.json` (a damaged, unmerged or
//! hand-edited file) is kept beside the copy, as `replaced-<time>.json`, before the copy takes
//! its place. A session that loads is replaced only with `--force`.

use std::fmt::Write as _;
use std::path::Path;

use super::cwd;
use crate::cli::RecoverArgs;
use crate::display::{count, second};
use crate::error::{Error, Result};
use crate::session::{Project, backup};
use crate::term::{clean, clean_line};

pub fn run(args: RecoverArgs) -> Result<i32> {
    let cwd = cwd()?;
    let project = find(&cwd).ok_or_else(|| Error::NoSession { start: cwd.clone() })?;
    let shown = clean(&project.session_path().to_string_lossy());
    let Some((kept, bytes)) = backup::read(&project) else {
        let dir = backup::dir_for(&project.root)
            .map(|d| clean(&d.to_string_lossy()))
            .unwrap_or_else(|| "(no state directory: HOME is not set)".into());
        return Err(Error::Message(format!(
            "no copy of this session was kept (pas-agent keeps one at every save, in {dir}), so there is nothing to recover\n  hint: if session.json is committed, `git checkout -- .pas-agent/session.json` brings back the committed one"
        )));
    };
    match project.load() {
        Ok(current) => {
            let same = std::fs::read(project.session_path()).is_ok_and(|b| b == bytes);
            if same {
                crate::term::print(&format!(
                    "{shown} loads, and is the copy pas-agent last saved: there is nothing to recover.\n"
                ))?;
                return Ok(0);
            }
            if !args.force {
                return Err(Error::Message(format!(
                    "{shown} loads (last changed {}), so it is left as it is\n  hint: `pas-agent recover --force` replaces it with the copy pas-agent saved at {} (the current file is kept)",
                    second(&current.updated_at),
                    modified(&kept)
                )));
            }
        }
        Err(e @ Error::Unmerged { .. }) if !args.force => {
            return Err(Error::Message(format!(
                "{}\n  hint: `pas-agent resolve` merges both sides; `pas-agent recover --force` replaces it with the copy pas-agent last saved instead (the unmerged file is kept)",
                e.to_string().lines().next().unwrap_or_default()
            )));
        }
        Err(_) => {}
    }
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
    let aside = kept.with_file_name(format!("replaced-{stamp}.json"));
    let session = project.restore(&bytes, &kept, &aside)?;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Recovered {shown} as pas-agent saved it at {}.",
        modified(&kept)
    );
    let _ = writeln!(out, "  Task:    {}", clean_line(&session.task.description));
    let _ = writeln!(
        out,
        "  Saved:   {} checkpoint{}, {}, {} done, {} remaining",
        session.checkpoints.len(),
        if session.checkpoints.len() == 1 {
            ""
        } else {
            "s"
        },
        count(session.runs.len(), "run", "runs"),
        session.task.completed.len(),
        session.task.remaining.len()
    );
    if aside.exists() {
        let _ = writeln!(
            out,
            "  The file it replaced is kept in {}",
            clean(&aside.to_string_lossy())
        );
    }
    crate::term::print(&out)?;
    Ok(0)
}

/// The project around `cwd`: the nearest session; when its `session.json` is gone, the
/// nearest directory whose `.pas-agent/` is still there; when that is gone too, the nearest
/// directory pas-agent kept a session of.
fn find(cwd: &Path) -> Option<Project> {
    Project::find_opt(cwd)
        .or_else(|| {
            cwd.ancestors()
                .find(|d| d.join(crate::session::store::STATE_DIR).is_dir())
                .map(Project::at)
        })
        .or_else(|| {
            cwd.ancestors()
                .find(|d| backup::dir_for(d).is_some_and(|k| k.join(backup::FILE).is_file()))
                .map(Project::at)
        })
}

/// When the kept copy was written, for messages.
fn modified(path: &Path) -> String {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .map(|t| second(&chrono::DateTime::<chrono::Utc>::from(t)))
        .unwrap_or_else(|_| "its last save".into())
}
