//! `doctor`'s checks of this session (its file, size, checkpoint, lock, temp files) and of the
//! machine-wide run registry.

use std::path::Path;
use std::process::{Command as Process, Stdio};

use super::{Check, Context, shown};
use crate::error::Error;
use crate::hook::quote_posix;
use crate::launch::process::Liveness;
use crate::launch::registry::{Registry, State};
use crate::model::RunState;
use crate::session::Project;
use crate::session::lock::LOCK_FILE;
use crate::term::clean_line;

/// The command that fixes a session file that cannot be read (`error`, from loading it at
/// `path` in `project`).
pub fn fix_for(project: &Project, path: &Path, error: &Error) -> String {
    match error {
        // The copy pas-agent kept at the last save comes first: it loses nothing.
        Error::Damaged { .. } if crate::session::backup::read(project).is_some() => {
            "pas-agent recover (the session as pas-agent last saved it; the damaged file is kept)"
                .to_string()
        }
        Error::Unmerged { .. } => "pas-agent resolve".to_string(),
        Error::TooLarge { .. } => "pas-agent prune".to_string(),
        _ if tracked(project, path) => format!(
            "git restore --source=HEAD -- {} (the last committed session; or fix the file by hand)",
            quote_posix(&shown(path))
        ),
        _ => format!(
            "mv {} {}.damaged && pas-agent init (or fix the file by hand)",
            quote_posix(&shown(path)),
            quote_posix(&shown(path))
        ),
    }
}

/// Size, damage, stale checkpoint, lock and stale temp files of the session here.
pub fn checks(cx: &Context, checks: &mut Vec<Check>) {
    let Some(project) = cx.project.as_ref() else {
        checks.push(
            Check::info("session", "no session in this directory or above")
                .fix("pas-agent init --task \"<what you are working on>\""),
        );
        return;
    };
    let path = project.session_path();
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let session = match cx.session() {
        Some(Ok(s)) => {
            checks.push(Check::ok(
                "session file",
                format!(
                    "{} ({} KB, {} checkpoints, {} runs)",
                    shown(&path),
                    size.div_ceil(1024),
                    s.checkpoints.len(),
                    s.runs.len()
                ),
            ));
            Some(s)
        }
        Some(Err(e)) => {
            checks.push(
                Check::problem("session file", clean_line(&e.to_string()))
                    .fix(fix_for(project, &path, e)),
            );
            None
        }
        None => None,
    };
    if size > crate::limits::SESSION_WARN_BYTES {
        checks.push(
            Check::problem(
                "size",
                format!(
                    "{} KB: every change rewrites it, and at {} it is refused",
                    size / 1024,
                    crate::limits::human(crate::limits::SESSION.bytes)
                ),
            )
            .fix("pas-agent prune"),
        );
    }
    if let Some(session) = session {
        if !session.checkpoints.is_empty() {
            let seen = crate::git::Seen::of_root(
                &project.root,
                crate::git::Detail::Files,
                "the stale check is skipped",
            );
            // Work since the last checkpoint is what a checkpoint is for, not a fault.
            match crate::stale::check(session, seen.tree.as_ref(), seen.repo.as_ref()) {
                Some(stale) => checks.push(
                    Check::info("checkpoint", clean_line(&stale.headline()))
                        .fix("pas-agent checkpoint \"<what changed>\""),
                ),
                None => checks.push(Check::ok(
                    "checkpoint",
                    "the latest checkpoint matches the work tree",
                )),
            }
        }
        let running: Vec<_> = session
            .runs
            .iter()
            .filter(|r| r.state == RunState::Running)
            .collect();
        if !running.is_empty() {
            checks.push(Check::info(
                "runs",
                format!(
                    "{} marked running ({})",
                    running.len(),
                    running
                        .iter()
                        .map(|r| clean_line(&r.agent))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
    }
    let state = project.state_dir();
    let held = lock_held(&state.join(LOCK_FILE));
    checks.push(Check::ok(
        "lock",
        if held {
            "held now: a pas-agent command is changing the session"
        } else {
            "free"
        },
    ));
    let names: Vec<&str> = crate::agents::launched().map(|a| a.context_file).collect();
    let mut temps = crate::fsutil::temp_files_of(&state, None);
    temps.extend(crate::fsutil::temp_files_of(&project.root, Some(&names)));
    for temp in temps {
        checks.push(if held {
            Check::info("temp file", format!("{} (a write under way)", shown(&temp)))
        } else {
            Check::problem(
                "temp file",
                format!(
                    "{} was left by a write that was killed; nobody holds the lock, so nothing will finish it",
                    shown(&temp)
                ),
            )
            .fix(format!("rm -- {}", quote_posix(&shown(&temp))))
        });
    }
}

/// Whether the session file is tracked by git (so that `git restore` can bring it back).
fn tracked(project: &Project, path: &Path) -> bool {
    which::which("git").is_ok()
        && Process::new("git")
            .arg("-C")
            .arg(&project.root)
            .args(["ls-files", "--error-unmatch", "--"])
            .arg(path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
}

/// Whether another process holds the lock at `path`: the lock is tried (never waited for) on
/// the file opened read-only, and let go at once. A missing file is not held.
fn lock_held(path: &Path) -> bool {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return false;
    };
    if !meta.is_file() {
        return false;
    }
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    match file.try_lock() {
        Ok(()) => {
            let _ = file.unlock();
            false
        }
        Err(std::fs::TryLockError::WouldBlock) => true,
        Err(_) => false,
    }
}

/// The machine-wide run registry: readable, and whose entries' launchers are alive.
pub fn registry(_cx: &Context, checks: &mut Vec<Check>) {
    let reg = match Registry::open() {
        Ok(r) => r,
        Err(e) => {
            checks.push(Check::info("run registry", clean_line(&e.to_string())));
            return;
        }
    };
    let file = reg.dir.join(crate::launch::registry::FILE);
    match reg.entries() {
        Ok(entries) => {
            // A frozen run's launcher is gone by design: only live ones count.
            let dead = entries
                .iter()
                .filter(|e| e.state == State::Live && e.liveness() == Liveness::Dead)
                .count();
            let frozen = entries.iter().filter(|e| e.state == State::Frozen).count();
            checks.push(Check::ok(
                "run registry",
                format!(
                    "{} ({})",
                    shown(&file),
                    crate::display::count(entries.len(), "run listed", "runs listed")
                ),
            ));
            if frozen > 0 {
                checks.push(
                    Check::info(
                        "frozen runs",
                        format!(
                            "{} waiting to be restored",
                            crate::display::count(frozen, "run is", "runs are")
                        ),
                    )
                    .fix("pas-agent restore --all"),
                );
            }
            if dead > 0 {
                checks.push(
                    Check::problem(
                        "dead runs",
                        format!(
                            "{} listed as running, but their launchers are gone",
                            crate::display::count(dead, "run is", "runs are")
                        ),
                    )
                    .fix("pas-agent runs --all"),
                );
            }
        }
        Err(e) => checks.push(
            Check::problem("run registry", clean_line(&e.to_string())).fix(format!(
                "rm -- {} (it lists live and frozen runs: running launchers add themselves again, frozen runs are forgotten)",
                quote_posix(&shown(&file))
            )),
        ),
    }
}
