//! Running the agent with the user's own stdin, stdout and stderr (no pseudo-terminal: stdin
//! or stdout is not a terminal, or `--no-pty`).
//!
//! The signal handlers are installed with signal-hook; handlers (unlike ignored signals) are
//! reset to the default in the child when it executes, so the agent sees signals as it would
//! without pas-agent.

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;

use super::signals::{self, Event, Watch};
use crate::error::{Error, exit};

/// How the agent ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exit {
    /// Its exit code, when it exited.
    pub code: Option<i32>,
    /// The number of the signal that killed it.
    pub signal: Option<i32>,
}

impl Exit {
    /// The code the launcher exits with: the agent's own, or 128 + the signal (SPEC §7).
    pub fn launcher_code(&self) -> i32 {
        match (self.code, self.signal) {
            (Some(c), _) => c,
            (None, Some(s)) => 128 + s,
            (None, None) => exit::LAUNCHER_FAILED,
        }
    }

    /// The exit of a finished process: its code, or the signal that killed it.
    pub fn from_status(status: std::process::ExitStatus) -> Exit {
        #[cfg(unix)]
        let signal = std::os::unix::process::ExitStatusExt::signal(&status);
        #[cfg(not(unix))]
        let signal = None;
        Exit {
            code: status.code(),
            signal,
        }
    }
}

/// Maps a failure to start `program` to the launcher's exit codes: 127 when it does not exist,
/// 126 when it exists but cannot be executed (permissions, a bad `#!` interpreter).
pub fn spawn_error(program: &Path, e: &std::io::Error) -> Error {
    let code = match e.kind() {
        std::io::ErrorKind::NotFound if !program.exists() => exit::NOT_FOUND,
        std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied => exit::NOT_EXECUTABLE,
        _ => exit::NOT_EXECUTABLE,
    };
    Error::Launch {
        message: format!("cannot run {}: {e}", program.display()),
        code,
    }
}

/// Runs `program args…` in `cwd` with inherited stdio and waits for it, with `env` added to
/// its environment.
///
/// Signals (`launcher-store.md` §B2 rule 1): the agent shares the terminal's foreground process
/// group, so what the kernel raises there (Ctrl-C, Ctrl-\\, a hang-up) has already reached it
/// and is not sent again; a signal that a process sent to the launcher alone (`kill`) is
/// forwarded to the agent. Either way the launcher lives on to write the after-record.
///
/// Errors: [`Error::Launch`] with 126 or 127 when it cannot be started (see [`spawn_error`]),
/// 125 when the signal handlers cannot be installed or waiting fails.
pub fn run(
    program: &Path,
    argv0: &str,
    args: &[OsString],
    env: &[(&str, String)],
    cwd: &Path,
) -> Result<Exit, Error> {
    let mut cmd = Command::new(program);
    // PWD as a shell would set it: pas-agent's own may be stale (`-C DIR`, a test harness), and
    // some agents (OpenCode) take their project directory from it.
    cmd.args(args).current_dir(cwd).env("PWD", cwd);
    // The prompt segment belongs to the shell that computed it; shells the agent opens would
    // show it frozen.
    cmd.env_remove(crate::hook::PROMPT_ENV);
    for (k, v) in env {
        cmd.env(k, v);
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.arg0(argv0);
    }
    #[cfg(not(unix))]
    let _ = argv0;
    let watch = Watch::install(FORWARDED)?;
    let child = cmd.spawn().map_err(|e| spawn_error(program, &e))?;
    #[cfg(unix)]
    let pid = i32::try_from(child.id()).unwrap_or(0);
    signals::wait_in_background(child, watch.sender());
    loop {
        match watch.next(None) {
            Some(Event::Exited(status)) => return Ok(Exit::from_status(status)),
            Some(Event::WaitFailed(e)) => {
                return Err(Error::Launch {
                    message: format!("waiting for {}: {e}", program.display()),
                    code: exit::LAUNCHER_FAILED,
                });
            }
            #[cfg(unix)]
            Some(Event::Signal {
                signal,
                from_kernel,
            }) => {
                if !from_kernel {
                    signals::send(pid, signal);
                }
            }
            #[cfg(not(unix))]
            Some(Event::Signal { .. }) => {}
            Some(Event::Stopped) => {}
            None => {
                return Err(Error::Launch {
                    message: "lost track of the agent process".into(),
                    code: exit::LAUNCHER_FAILED,
                });
            }
        }
    }
}

/// The signals the launcher catches and forwards: Ctrl-C, Ctrl-\\, termination, hang-up.
#[cfg(unix)]
const FORWARDED: &[i32] = &[
    signal_hook::consts::SIGINT,
    signal_hook::consts::SIGQUIT,
    signal_hook::consts::SIGTERM,
    signal_hook::consts::SIGHUP,
];

#[cfg(not(unix))]
const FORWARDED: &[i32] = &[];
