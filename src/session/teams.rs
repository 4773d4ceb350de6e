//! Setting up a repository for a committed session (docs/teams.md): the `.gitattributes` line
//! that sends `session.json` through pas-agent's merge driver, and the repo-local git config
//! that defines the driver.
//!
//! Trust: a cloned repository's `.gitattributes` is the repository's to choose, so it only
//! *asks* for the driver by name (`merge=pas-agent`); what the name runs is defined in the
//! repo-local config (`.git/config`, never cloned), and pas-agent only ever writes its own
//! binary's path there. Nothing the repository names is run. An existing definition (the
//! user's own) is left alone.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{Error, Result};
use crate::fsutil::{self, Links, Named, WriteGuard};

/// The merge driver's name in `.gitattributes` and git config.
pub const DRIVER: &str = "pas-agent";
/// The line `init` writes into `.pas-agent/.gitattributes` (git reads attributes files in
/// subdirectories too, with paths relative to them): committed with the session, outside the
/// files pas-agent records as changed.
pub const ATTRIBUTE_LINE: &str = "/session.json merge=pas-agent";
/// The line that merges `.pas-agent/history.jsonl` with git's built-in `union` driver.
pub const HISTORY_ATTRIBUTE_LINE: &str = "/history.jsonl merge=union";
/// Largest `.gitattributes` or git config read here (1 MiB); a larger one is left alone.
const MAX_READ: u64 = 1024 * 1024;

fn read_small(path: &Path) -> Option<String> {
    match fsutil::read_limited(path, MAX_READ) {
        Ok(Some(bytes)) => Some(String::from_utf8_lossy(&bytes).into_owned()),
        _ => None,
    }
}

/// Whether `.pas-agent/.gitattributes` (or the root's `.gitattributes`) asks for the driver
/// (`merge=pas-agent` on a line naming `session.json`). One or two small reads; no git.
pub fn attributes_name_driver(root: &Path) -> bool {
    [
        root.join(super::project::STATE_DIR).join(".gitattributes"),
        root.join(".gitattributes"),
    ]
    .iter()
    .any(|p| read_small(p).is_some_and(|text| names_driver(&text)))
}

fn names_driver(text: &str) -> bool {
    text.lines().any(|l| {
        let l = l.trim();
        !l.starts_with('#')
            && l.contains("session.json")
            && l.split_whitespace().any(|w| w == "merge=pas-agent")
    })
}

/// Adds [`ATTRIBUTE_LINE`] to `<root>/.pas-agent/.gitattributes` unless an attributes file
/// already names the driver. Returns whether it wrote. Through the [`WriteGuard`] of `root`.
///
/// Errors: the file cannot be written (the guard's refusals included).
pub fn ensure_attributes(root: &Path) -> Result<bool> {
    if attributes_name_driver(root) {
        return Ok(false);
    }
    let path = root.join(super::project::STATE_DIR).join(".gitattributes");
    let old = read_small(&path);
    let mut text = old.unwrap_or_default();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(
        "# pas-agent: merge the committed session with its format-aware driver (docs/teams.md)\n",
    );
    text.push_str(ATTRIBUTE_LINE);
    text.push('\n');
    // The history log only grows by appends: git's own union merge joins two branches' logs.
    text.push_str(HISTORY_ATTRIBUTE_LINE);
    text.push('\n');
    let guard = WriteGuard::new(root).map_err(|e| Error::io(root, e))?;
    guard
        .write(&path, text.as_bytes(), Named::ByUs, Links::Replace)
        .map_err(|e| Error::write(&path, e))?;
    Ok(true)
}

/// The repo-local git config file of the repository whose work tree holds `root`.
fn config_file(root: &Path) -> Option<PathBuf> {
    let layout = crate::git::layout::find(root).ok()??;
    Some(layout.common_dir.join("config"))
}

/// The `driver` value of `[merge "pas-agent"]` in the repo-local config, as written there.
fn configured_driver(config: &Path) -> Option<String> {
    let text = read_small(config)?;
    let mut inside = false;
    for line in text.lines() {
        let l = line.trim();
        if l.starts_with('[') {
            let section: String = l.chars().filter(|c| !c.is_whitespace()).collect();
            inside = section.eq_ignore_ascii_case("[merge\"pas-agent\"]");
        } else if inside
            && let Some((key, value)) = l.split_once('=')
            && key.trim().eq_ignore_ascii_case("driver")
        {
            return Some(value.trim().to_string());
        }
    }
    None
}

/// Whether the repo-local config defines the driver (`[merge "pas-agent"]` with a `driver`)
/// in a way that can run: a definition this program wrote whose binary is gone (moved,
/// reinstalled elsewhere, deleted) does not count, because git would then leave the file
/// unmerged without conflict markers, showing one side only. Any other definition is the
/// user's and counts.
pub fn config_defines_driver(config: &Path) -> bool {
    configured_driver(config).is_some_and(|value| !own_driver_is_gone(&value))
}

/// Whether `value` is a definition [`ensure_config`] wrote (`'<path>' merge-driver %O %A %B
/// %P`) whose `<path>` no longer names a file.
fn own_driver_is_gone(value: &str) -> bool {
    let value = value.trim_matches('"');
    let Some(quoted) = value.strip_suffix(DRIVER_ARGS) else {
        return false;
    };
    match quoted.strip_prefix('\'').and_then(|q| q.strip_suffix('\'')) {
        Some(path) if !path.contains('\'') => !Path::new(path).is_file(),
        _ => false,
    }
}

/// What follows the binary's path in the driver's definition.
const DRIVER_ARGS: &str = " merge-driver %O %A %B %P";

/// `'<path>'` for `sh`, which git runs the driver through.
fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Defines the driver in the repo-local config of the repository holding `root`, pointing at
/// this binary, unless a definition is there already (one this program wrote for a binary that
/// is gone is replaced: see [`config_defines_driver`]). Returns whether it wrote; `Ok(false)`
/// outside git too.
///
/// Errors: this binary's path cannot be learned, or `git config` fails.
pub fn ensure_config(root: &Path) -> Result<bool> {
    let Some(config) = config_file(root) else {
        return Ok(false);
    };
    if config_defines_driver(&config) {
        return Ok(false);
    }
    let exe = std::env::current_exe()
        .and_then(|p| p.canonicalize())
        .map_err(|e| Error::io("pas-agent (this program)", e))?;
    let exe = exe.to_str().ok_or_else(|| {
        Error::Message("the path of pas-agent is not UTF-8; the merge driver was not set up".into())
    })?;
    let driver = format!("{}{DRIVER_ARGS}", sh_quote(exe));
    for (key, value) in [
        (
            "merge.pas-agent.name",
            "pas-agent session merge (docs/teams.md)",
        ),
        ("merge.pas-agent.driver", driver.as_str()),
    ] {
        // `--file`: only this file is read and written; nothing of the repository runs.
        let out = Command::new("git")
            .arg("config")
            .arg("--file")
            .arg(&config)
            .arg(key)
            .arg(value)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .map_err(|e| Error::io(&config, e))?;
        if !out.status.success() {
            return Err(Error::Message(format!(
                "{}: `git config {key}` failed: {}",
                config.display(),
                crate::term::clean_line(String::from_utf8_lossy(&out.stderr).trim())
            )));
        }
    }
    Ok(true)
}

/// Environment variable: `0` turns off the automatic set-up of the merge driver in clones
/// ([`ensure_if_named`]); `pas-agent merge-driver --install` and `init` still set it up.
pub const SETUP_ENV: &str = "PAS_AGENT_MERGE_DRIVER";

fn setup_off() -> bool {
    std::env::var_os(SETUP_ENV).is_some_and(|v| v == "0")
}

/// For every command but the prompt: when the repository's `.gitattributes` asks for the
/// driver and the repo-local config lacks it (a fresh clone), define it. A note on stderr says
/// so once; failures are warnings. Costs one small read when nothing is named.
pub fn ensure_if_named(root: &Path) {
    if setup_off() || !attributes_name_driver(root) {
        return;
    }
    match ensure_config(root) {
        Ok(true) => crate::term::note(
            "pas-agent: set up the merge driver for .pas-agent/session.json in this repository's git config (docs/teams.md)",
        ),
        Ok(false) => {}
        Err(e) => crate::term::warn(&format!("the session merge driver is not set up: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attribute_lines() {
        assert!(names_driver("/.pas-agent/session.json merge=pas-agent\n"));
        assert!(names_driver(ATTRIBUTE_LINE));
        assert!(names_driver(
            "x\n.pas-agent/session.json  text merge=pas-agent\n"
        ));
        assert!(!names_driver("# .pas-agent/session.json merge=pas-agent\n"));
        assert!(!names_driver("* merge=pas-agent\n"));
        assert!(!names_driver(".pas-agent/session.json merge=union\n"));
    }

    #[test]
    fn quoting() {
        assert_eq!(sh_quote("/a b/it's"), r"'/a b/it'\''s'");
    }
}
