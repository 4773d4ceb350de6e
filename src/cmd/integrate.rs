//! `pas-agent integrate AGENT [--user] [--remove]`: pas-agent in the agent's own lifecycle
//! hooks (docs/integrate.md); and the hidden `pas-agent lifecycle AGENT EVENT` they run.

use super::{cwd, project};
use crate::cli::{IntegrateArgs, LifecycleArgs};
use crate::error::{Error, Result};
use crate::fsutil::{Links, Named, WriteGuard};
use crate::integrate::{self, Event, settings};
use crate::term::clean;

/// Largest settings file read (4 MiB): larger is no settings file pas-agent should edit.
const MAX_SETTINGS_BYTES: u64 = 4 * 1024 * 1024;

pub fn run(args: IntegrateArgs) -> Result<i32> {
    let integration = integrate::by_key(&args.agent)
        .ok_or_else(|| Error::Usage(format!("unknown agent `{}`", clean(&args.agent))))?;
    let agent = integration.agent;
    // Project level: the session's root. The user level needs no session here, but the hooks
    // only act in projects that have one.
    let root = if args.user {
        None
    } else {
        Some(project()?.root)
    };
    let path = integration
        .settings_path(root.as_deref().unwrap_or(&cwd()?), args.user)
        .map_err(Error::Usage)?;
    let unsafe_ = |problem: String| Error::ExportUnsafe {
        path: path.clone(),
        problem,
    };
    let text = match crate::fsutil::read_limited(&path, MAX_SETTINGS_BYTES) {
        Ok(bytes) => bytes
            .map(|b| {
                String::from_utf8(b)
                    .map_err(|_| unsafe_("not UTF-8 text; nothing was changed".into()))
            })
            .transpose()?,
        Err(e) => {
            return Err(unsafe_(format!(
                "cannot be read ({e}); nothing was changed"
            )));
        }
    };
    let edit = settings::edit(
        text.as_deref(),
        &integration,
        &integrate::program(),
        args.remove,
    )
    .map_err(|problem| {
        unsafe_(format!(
            "{problem}\n  the file was left unchanged; fix it (or move it away), then run `pas-agent integrate {}{}{}` again",
            integration.key(),
            if args.user { " --user" } else { "" },
            if args.remove { " --remove" } else { "" },
        ))
    })?;
    let here = cwd()?;
    let shown = clean(&path.strip_prefix(&here).unwrap_or(&path).to_string_lossy());
    let Some(new_text) = edit.text else {
        let what = if args.remove {
            format!("No pas-agent hooks in {shown}; nothing to remove.\n")
        } else {
            format!(
                "pas-agent's hooks for {} are already in {shown}; nothing changed.\n",
                agent.name
            )
        };
        crate::term::print(&what)?;
        return Ok(0);
    };
    // The guard's root: the project, where a link must not lead a write out (a cloned
    // repository's `.claude -> ~/.claude`); or for the user's own file its real directory, so
    // that a settings file linked into a dotfiles repository is written where it lives.
    let (guard_root, target) = match &root {
        Some(r) => (r.clone(), path.clone()),
        None => {
            let target = path.canonicalize().unwrap_or_else(|_| path.clone());
            let dir = target.parent().unwrap_or(&target).to_path_buf();
            std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
            (dir, target)
        }
    };
    let guard = WriteGuard::new(&guard_root).map_err(|e| Error::io(&guard_root, e))?;
    let write_err = |e: crate::fsutil::WriteError| unsafe_(format!("{e}; nothing was changed"));
    if let Some(dir) = target.parent().filter(|_| !edit.delete) {
        guard
            .create_dir_all(dir, Named::ByUs, 0o755)
            .map_err(write_err)?;
    }
    if edit.delete {
        match guard.remove(&target, Named::ByUs) {
            Ok(()) => {}
            Err(crate::fsutil::WriteError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(write_err(e)),
        }
    } else {
        guard
            .write(&target, new_text.as_bytes(), Named::ByUs, Links::Replace)
            .map_err(write_err)?;
    }
    let events = edit.events.join(", ");
    let message = if args.remove {
        format!(
            "Removed pas-agent's {} hooks ({events}) from {shown}.\n",
            agent.name
        )
    } else {
        let mut m = format!(
            "Installed pas-agent in {}'s hooks ({events}) in {shown}: at start it gets the session as context; at the end it is recorded as a run.\n",
            agent.name
        );
        if let Some(caveat) = integration.hooks.caveat {
            m.push_str(&format!("note: {caveat}\n"));
        }
        m
    };
    crate::term::print(&message)?;
    Ok(0)
}

/// The hidden command the hooks run. Always exit code 0: a hook never fails the agent.
pub fn lifecycle(args: LifecycleArgs) -> i32 {
    if args.event == crate::launch::hooked::COMPLETE_WORD
        && integrate::by_key(&args.agent).is_some()
    {
        return integrate::lifecycle::complete();
    }
    let (Some(integration), Some(event)) = (
        integrate::by_key(&args.agent),
        Event::from_word(&args.event),
    ) else {
        crate::term::warn(&format!(
            "pas-agent lifecycle: unknown agent or event `{} {}` (this pas-agent knows {} and session-start, stop, session-end); run `pas-agent integrate` again",
            clean(&args.agent),
            clean(&args.event),
            crate::agents::hook_keys().join(", ")
        ));
        return 0;
    };
    integrate::lifecycle::run(&integration, event)
}
