//! `pas-agent run`: checkpoint and export before the agent starts, run it, record what it did
//! after it exits (docs/launcher.md). The launcher stays the agent's parent (it never `exec`s), since
//! only a parent can write the after-record.

pub mod attribution;
pub mod capture;
pub mod delta;
pub mod freeze;
pub mod hooked;
pub mod modes;
pub mod outcome;
pub mod plain;
pub mod process;
#[cfg(unix)]
pub mod pty;
pub mod reconcile;
pub mod record;
pub mod registry;
pub mod resume;
pub mod session_id;
pub mod signals;
#[cfg(unix)]
pub mod terminal;
pub mod tmux;
pub mod witness;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::agents::{self, Agent};
use crate::error::{Error, exit};

pub use plain::Exit;

/// Set in the agent's environment to the id of the run that started it, so that shells the
/// agent opens (and pas-agent itself) know they are inside a recorded run: the shell hooks do
/// not wrap agent commands there.
pub const RUN_ID_ENV: &str = "PAS_AGENT_RUN_ID";
pub use record::{Finished, Plan, Started};

/// A program to start: the agent's row (for a known agent), the resolved executable, and the
/// name it is recorded under.
#[derive(Debug, Clone)]
pub struct Program {
    /// The agent's row when the name is a known agent (or one of its executables); `None` for
    /// a plain program.
    pub agent: Option<&'static Agent>,
    /// Absolute path of the executable.
    pub path: PathBuf,
    /// The name typed or looked up (`codex`), used as argv[0] and in the record.
    pub name: String,
}

/// Resolves what `run` was asked to start: an agent id, alias or executable name maps to the
/// agent's executables (first found on `PATH` wins); any other name is a plain program. A
/// name containing a path separator is taken relative to `cwd`. pas-agent's own executable is
/// skipped, so a shell function or shim named `codex` that calls `pas-agent run codex` cannot
/// make the launcher start itself.
///
/// Errors: [`Error::Launch`] with 127 when nothing is found, 126 when a path names something
/// that is not an executable file.
pub fn resolve(name: &str, cwd: &Path) -> Result<Program, Error> {
    if name.contains('/') || name.contains(std::path::MAIN_SEPARATOR) {
        let path = cwd.join(name);
        // A path to an agent's executable (`~/.local/bin/claude`) is that agent: only the
        // executable's own name counts, not an alias (a script called `kiro` is not Kiro).
        let agent = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(agents::by_executable);
        if !path.exists() {
            return Err(Error::Launch {
                message: format!("{}: no such file", path.display()),
                code: exit::NOT_FOUND,
            });
        }
        if !is_executable(&path) {
            return Err(Error::Launch {
                message: format!("{}: not an executable file", path.display()),
                code: exit::NOT_EXECUTABLE,
            });
        }
        return Ok(Program {
            agent,
            path,
            name: name.to_string(),
        });
    }
    let agent = agents::lookup(name);
    let me = std::env::current_exe().and_then(|p| p.canonicalize()).ok();
    let candidates: Vec<&str> = match agent {
        Some(a) if !a.executables.contains(&name) => a.executables.to_vec(),
        Some(a) => std::iter::once(name)
            .chain(a.executables.iter().copied().filter(|e| *e != name))
            .collect(),
        None => vec![name],
    };
    for exe in &candidates {
        let Ok(found) = which::which_all(exe) else {
            continue;
        };
        for path in found {
            let is_me = me.is_some() && path.canonicalize().ok() == me;
            if !is_me {
                return Ok(Program {
                    agent,
                    path,
                    name: exe.to_string(),
                });
            }
        }
    }
    let quoted: Vec<String> = candidates.iter().map(|c| format!("`{c}`")).collect();
    let what = match (agent, quoted.as_slice()) {
        (Some(a), [one]) => format!("{} is not installed: {one} was not found on PATH", a.name),
        (Some(a), _) => format!(
            "{} is not installed: none of {} was found on PATH",
            a.name,
            quoted.join(", ")
        ),
        (None, _) => format!("{name}: command not found on PATH"),
    };
    Err(Error::Launch {
        message: what,
        code: exit::NOT_FOUND,
    })
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

#[cfg(not(unix))]
fn is_executable(path: &Path) -> bool {
    path.is_file()
}

/// The recorded command line: the program name, then the arguments (lossily as UTF-8).
pub fn argv(program: &Program, args: &[OsString]) -> Vec<String> {
    std::iter::once(program.name.clone())
        .chain(args.iter().map(|a| a.to_string_lossy().into_owned()))
        .collect()
}
