//! `pas-agent integrate AGENT [--user] [--remove]`: pas-agent in the agent's own lifecycle
//! hooks (docs/integrate.md); and the hidden `pas-agent lifecycle AGENT EVENT` they run.

use super::{cwd, project};
use crate::cli::{IntegrateArgs, LifecycleArgs};
use crate::error::{Error, Result};
use crate::fsutil::{Links, Named, WriteGuard};
use crate::integrate::{self, Event, installs, settings};
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
    let shown_path =
        |p: &std::path::Path| clean(&p.strip_prefix(&here).unwrap_or(p).to_string_lossy());
    let shown = shown_path(&path);
    let recorded = installs::find(&path);
    let Some(new_text) = edit.text else {
        let what = if args.remove {
            // Nothing of ours is left (the agent rewrote the file): nothing to give back.
            if recorded.is_some() {
                forget(&path);
            }
            format!("No pas-agent hooks in {shown}; nothing to remove.\n")
        } else {
            if recorded.is_none() {
                // Installed before pas-agent kept a record: what was there before is unknown.
                remember(installs::Install {
                    agent: integration.key().to_string(),
                    path: path.clone(),
                    user: args.user,
                    created: false,
                    dirs: Vec::new(),
                    before: None,
                    after: text.clone(),
                    extra: Default::default(),
                });
            }
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
            // The folder above the agent's own (its home), so that the agent's folder, when
            // `integrate` creates it, is inside the guard and recorded.
            let above = target.parent().and_then(|d| d.parent()).unwrap_or(&target);
            let mut guard_root = missing_ancestor(above);
            // The folder above the outermost one an install created (Copilot's `~/.copilot`
            // for `~/.copilot/hooks/pas-agent.json`), so that `--remove` can take it away.
            if let Some(top) = recorded
                .as_ref()
                .and_then(|r| r.dirs.first())
                .and_then(|d| d.parent())
                && guard_root.starts_with(top)
            {
                guard_root = top.to_path_buf();
            }
            (guard_root, target)
        }
    };
    let write_err = |e: crate::fsutil::WriteError| unsafe_(format!("{e}; nothing was changed"));
    // The events, then (after "and") the top-level settings written with them.
    let (hooked, settings): (Vec<&str>, Vec<&str>) = edit
        .events
        .iter()
        .partition(|e| integration.hooks.events.iter().any(|(n, _)| n == *e));
    let events = if settings.is_empty() {
        hooked.join(", ")
    } else {
        format!(
            "{}; and the setting {}",
            hooked.join(", "),
            settings.join(", ")
        )
    };
    if args.remove {
        let guard = WriteGuard::new(&guard_root).map_err(|e| Error::io(&guard_root, e))?;
        // A file that holds nothing once pas-agent's entries are out goes, when `integrate`
        // created it (or, with no record, when it is an empty object: a file that says
        // nothing); one the user had is given back as it was.
        let created = recorded.as_ref().is_none_or(|r| r.created);
        // Untouched since `integrate` wrote it: what was there before goes back as it was.
        let untouched = recorded
            .as_ref()
            .filter(|r| r.after.is_some() && r.after == text && (r.created || r.before.is_some()));
        let mut gone = Vec::new();
        // A file pas-agent owns whole (`edit.delete`) goes whatever the record says.
        if let Some(r) = untouched
            && !r.created
            && !edit.delete
        {
            let before = r.before.clone().unwrap_or_default();
            guard
                .write(&target, before.as_bytes(), Named::ByUs, Links::Replace)
                .map_err(write_err)?;
        } else if edit.delete
            || untouched.is_some()
            || (created && settings::is_empty(&new_text, integration.hooks.format))
        {
            match guard.remove(&target, Named::ByUs) {
                Ok(()) => {}
                Err(crate::fsutil::WriteError::Io(e))
                    if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(write_err(e)),
            }
            gone.push(shown.clone());
            let dirs: Vec<std::path::PathBuf> = match &recorded {
                Some(r) => r.dirs.iter().rev().cloned().collect(),
                // No record: the agent's own folder of the settings file, when it is empty.
                None => target
                    .parent()
                    .map(|d| vec![d.to_path_buf()])
                    .unwrap_or_default(),
            };
            for dir in dirs {
                let inside = guard.check(&dir, Named::ByUs).is_ok() && dir != guard_root;
                let user_home = crate::agents::store::home().is_some_and(|h| h == dir);
                if inside && !user_home && std::fs::remove_dir(&dir).is_ok() {
                    gone.push(format!("{}/", shown_path(&dir)));
                }
            }
        } else {
            guard
                .write(&target, new_text.as_bytes(), Named::ByUs, Links::Replace)
                .map_err(write_err)?;
        }
        forget(&path);
        let mut m = format!(
            "Removed pas-agent's {} hooks ({events}) from {shown}.\n",
            agent.name
        );
        if !gone.is_empty() {
            m.push_str(&format!(
                "Nothing else was in it: removed {}, which `integrate` had created.\n",
                gone.join(" and ")
            ));
        }
        crate::term::print(&m)?;
        return Ok(0);
    }
    // What is missing now is what this install creates.
    let created = std::fs::symlink_metadata(&target).is_err();
    let mut new_dirs = Vec::new();
    let mut dir = target.parent();
    while let Some(d) = dir {
        if d.exists() || !d.starts_with(&guard_root) {
            break;
        }
        new_dirs.insert(0, d.to_path_buf());
        dir = d.parent();
    }
    let guard = WriteGuard::new(&guard_root).map_err(|e| Error::io(&guard_root, e))?;
    if let Some(dir) = target.parent() {
        guard
            .create_dir_all(dir, Named::ByUs, 0o755)
            .map_err(write_err)?;
    }
    guard
        .write(&target, new_text.as_bytes(), Named::ByUs, Links::Replace)
        .map_err(write_err)?;
    // What `--remove` gives back: while the file is as the last install left it, what was
    // there before that one; once it changed, the file as it is now (changes since are the
    // user's and are kept).
    let install = match recorded {
        Some(r) if r.after.is_some() && r.after == text => installs::Install {
            after: Some(new_text),
            ..r
        },
        recorded => installs::Install {
            agent: integration.key().to_string(),
            path: path.clone(),
            user: args.user,
            created,
            dirs: if created {
                new_dirs
            } else {
                recorded.map(|r| r.dirs).unwrap_or_default()
            },
            before: if created { None } else { text.clone() },
            after: Some(new_text),
            extra: Default::default(),
        },
    };
    remember(install);
    let mut m = format!(
        "Installed pas-agent in {}'s hooks ({events}) in {shown}: at start it gets the session as context; at the end it is recorded as a run.\n",
        agent.name
    );
    if let Some(caveat) = integration.hooks.caveat {
        m.push_str(&format!("note: {caveat}\n"));
    }
    crate::term::print(&m)?;
    Ok(0)
}

/// The nearest existing directory at or above `dir`: the root of the guard for a user's
/// settings file whose folders may not exist yet (they are created, and recorded, below it).
fn missing_ancestor(dir: &std::path::Path) -> std::path::PathBuf {
    let mut at = dir;
    while !at.exists() {
        match at.parent() {
            Some(p) => at = p,
            None => break,
        }
    }
    at.to_path_buf()
}

/// Records an install ([`installs`]); a record that cannot be written is a warning.
fn remember(install: installs::Install) {
    if let Err(e) = installs::put(install) {
        crate::term::warn(&format!(
            "the hooks are installed, but pas-agent could not note it ({}); `integrate --remove` and `doctor` still work from the settings file",
            crate::term::clean_line(&e.to_string())
        ));
    }
}

/// Forgets an install; a record that cannot be written is a warning.
fn forget(path: &std::path::Path) {
    if let Err(e) = installs::remove(path) {
        crate::term::warn(&format!(
            "could not update pas-agent's record of integrations: {}",
            crate::term::clean_line(&e.to_string())
        ));
    }
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
