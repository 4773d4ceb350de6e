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
    /// The code the launcher exits with: the agent's own, or 128 + the signal (docs/commands.md, "Exit codes").
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

/// How a run ended, for the launcher's summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ran {
    /// How the agent ended.
    pub exit: Exit,
    /// The cursor is probably not at the start of a line (the terminal echoed `^C`, or the
    /// agent's last output left it mid-line): the summary starts on a fresh line.
    pub mid_line: bool,
}

/// Maps a failure to start `program` to the launcher's exit codes, as the shells do (bash,
/// dash, zsh and fish alike): 127 when it, or the `#!` interpreter it names, does not exist;
/// 126 when it exists but cannot be executed (permissions, a directory, an unknown format).
pub fn spawn_error(program: &Path, e: &std::io::Error) -> Error {
    let exists = program.exists();
    let code = match e.kind() {
        std::io::ErrorKind::NotFound => exit::NOT_FOUND,
        _ => exit::NOT_EXECUTABLE,
    };
    let why = match (e.kind(), interpreter(program)) {
        (std::io::ErrorKind::NotFound, Some(interp)) if exists => {
            format!("bad interpreter {interp}: {e}")
        }
        _ => e.to_string(),
    };
    Error::Launch {
        message: format!("cannot run {}: {why}", program.display()),
        code,
    }
}

/// The interpreter a script names on its `#!` line.
fn interpreter(program: &Path) -> Option<String> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(program).ok()?.read(&mut head).ok()?;
    let line = head[..n].strip_prefix(b"#!")?;
    let line = line.split(|b| *b == b'\n').next()?;
    let text = String::from_utf8_lossy(line);
    text.split_whitespace().next().map(crate::term::clean_line)
}

/// Runs `program args…` in `cwd` with inherited stdio and waits for it, with `env` added to
/// its environment. `watch` is the launcher's event stream, installed before the run record
/// was written.
///
/// Signals ([`super::signals::TABLE`], as uv does): the agent shares the
/// terminal's foreground process group, so what the kernel raises there (Ctrl-C, Ctrl-\\, a
/// hang-up) has already reached it and is not sent again; a signal that a process sent to the
/// launcher alone (`kill`: SIGTERM, SIGUSR1, a realtime signal, …) is forwarded to the agent.
/// Either way the launcher lives on to write the after-record.
///
/// Errors: [`Error::Launch`] with 126 or 127 when it cannot be started (see [`spawn_error`]),
/// 125 when waiting fails.
pub fn run(
    program: &Path,
    argv0: &str,
    args: &[OsString],
    env: &[(&str, String)],
    cwd: &Path,
    watch: &Watch,
) -> Result<Ran, Error> {
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
    let child = cmd.spawn().map_err(|e| spawn_error(program, &e))?;
    watch.spawned();
    #[cfg(unix)]
    let pid = i32::try_from(child.id()).unwrap_or(0);
    #[cfg(unix)]
    signals::set_agent_target(pid);
    signals::wait_in_background(child, watch.sender());
    loop {
        match watch.next(None) {
            Some(Event::Exited(status)) => {
                // From here on what the user types cannot stop the recording.
                signals::shield_recording();
                let exit = Exit::from_status(status);
                // The terminal echoed `^C` (or `^\\`) and the agent died of it: like bash,
                // start what follows on a new line.
                #[cfg(unix)]
                let mid_line = matches!(exit.signal, Some(libc::SIGINT | libc::SIGQUIT)) && {
                    use std::io::IsTerminal;
                    std::io::stderr().is_terminal()
                };
                #[cfg(not(unix))]
                let mid_line = false;
                return Ok(Ran { exit, mid_line });
            }
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
            }) => match signals::action(signal, false) {
                signals::Action::Forward { .. } | signals::Action::ForwardSent if !from_kernel => {
                    signals::send(pid, signal)
                }
                _ => {}
            },
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
