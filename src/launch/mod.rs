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
    let me = std::env::current_exe().ok().and_then(|p| FileId::of(&p));
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
            let is_me = me.is_some() && FileId::of(&path) == me;
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

/// What tells one file from another: its device and inode on Unix (one `stat`, where a
/// canonical path costs a `readlink` for every component), its canonical path elsewhere.
#[derive(Debug, PartialEq, Eq)]
struct FileId(#[cfg(unix)] (u64, u64), #[cfg(not(unix))] PathBuf);

impl FileId {
    fn of(path: &Path) -> Option<FileId> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            std::fs::metadata(path)
                .ok()
                .map(|m| FileId((m.dev(), m.ino())))
        }
        #[cfg(not(unix))]
        {
            path.canonicalize().ok().map(FileId)
        }
    }
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

/// Each recorded argument keeps at most this many characters (a one-shot prompt of 120 KB
/// passed as `-p "…"` would otherwise be stored whole in the run record, the registry and every
/// copy of the session).
pub const MAX_ARG_CHARS: usize = crate::model::MAX_PROMPT_CHARS;
/// At most this many arguments are recorded (the program name included).
pub const MAX_ARGS: usize = 100;

/// The recorded command line: the program name, then the arguments (lossily as UTF-8),
/// bounded: an argument longer than [`MAX_ARG_CHARS`] keeps its start and ends in
/// `… [N characters]`, and past [`MAX_ARGS`] arguments the last one kept says
/// `… [N more arguments]`. The agent itself gets its arguments whole.
pub fn argv(program: &Program, args: &[OsString]) -> Vec<String> {
    let all: Vec<String> = std::iter::once(program.name.clone())
        .chain(args.iter().map(|a| a.to_string_lossy().into_owned()))
        .collect();
    bound_argv(all)
}

/// `argv` bounded as [`argv`] says.
pub fn bound_argv(mut argv: Vec<String>) -> Vec<String> {
    if argv.len() > MAX_ARGS {
        let more = argv.len() - (MAX_ARGS - 1);
        argv.truncate(MAX_ARGS - 1);
        argv.push(format!(
            "… [{} more arguments]",
            crate::display::thousands(more)
        ));
    }
    for a in &mut argv {
        if let Some((end, _)) = a.char_indices().nth(MAX_ARG_CHARS) {
            let total = a.chars().count();
            a.truncate(end);
            a.push_str(&format!(
                "… [{} characters]",
                crate::display::thousands(total)
            ));
        }
    }
    argv
}

#[cfg(test)]
mod bound_tests {
    use super::*;

    #[test]
    fn recorded_command_lines_are_bounded() {
        let argv = bound_argv(vec!["claude".into(), "-p".into(), "é".repeat(120_000)]);
        assert_eq!(argv.len(), 3);
        assert!(argv[2].starts_with(&"é".repeat(MAX_ARG_CHARS)));
        assert!(
            argv[2].ends_with("… [120,000 characters]"),
            "{}",
            &argv[2][argv[2].len() - 40..]
        );
        let many: Vec<String> = (0..250).map(|i| i.to_string()).collect();
        let argv = bound_argv(many);
        assert_eq!(argv.len(), MAX_ARGS);
        assert_eq!(argv[MAX_ARGS - 1], "… [151 more arguments]");
        let short = vec!["codex".to_string(), "exec".into()];
        assert_eq!(bound_argv(short.clone()), short);
    }
}
