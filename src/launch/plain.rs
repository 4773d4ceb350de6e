//! Running the agent with the user's own stdin, stdout and stderr.
//!
//! Signal rules (`launcher-store.md` §B1–B2): the agent shares the terminal's foreground
//! process group, so a Ctrl-C or Ctrl-\ from the keyboard reaches it directly; the launcher
//! only has to survive those (it must outlive the agent to write the record). SIGTERM and
//! SIGHUP sent to the launcher alone are forwarded to the agent. The handlers are installed
//! with signal-hook, and handlers (unlike ignored signals) are reset to the default in the
//! child when it executes, so the agent sees the signals as it would without pas-agent.

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;

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

    fn from_status(status: std::process::ExitStatus) -> Exit {
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

/// Runs `program args…` in the current directory with inherited stdio and waits for it, with
/// `env` added to its environment.
///
/// Errors: [`Error::Launch`] with 126 or 127 when it cannot be started (see [`spawn_error`]),
/// 125 when waiting fails.
pub fn run(
    program: &Path,
    argv0: &str,
    args: &[OsString],
    env: &[(&str, String)],
) -> Result<Exit, Error> {
    let mut cmd = Command::new(program);
    cmd.args(args);
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
    let forwarder = signals::Forwarder::install()?;
    let mut child = cmd.spawn().map_err(|e| spawn_error(program, &e))?;
    forwarder.target(child.id());
    let status = child.wait().map_err(|e| Error::Launch {
        message: format!("waiting for {}: {e}", program.display()),
        code: exit::LAUNCHER_FAILED,
    })?;
    forwarder.done();
    Ok(Exit::from_status(status))
}

#[cfg(unix)]
mod signals {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicI32, Ordering};

    use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
    use signal_hook::iterator::Signals;

    use crate::error::{Error, exit};

    /// Keeps the launcher alive through keyboard signals and forwards termination requests.
    pub struct Forwarder {
        pid: Arc<AtomicI32>,
    }

    impl Forwarder {
        pub fn install() -> Result<Forwarder, Error> {
            let mut signals =
                Signals::new([SIGINT, SIGQUIT, SIGTERM, SIGHUP]).map_err(|e| Error::Launch {
                    message: format!("installing signal handlers: {e}"),
                    code: exit::LAUNCHER_FAILED,
                })?;
            let pid = Arc::new(AtomicI32::new(0));
            let target = Arc::clone(&pid);
            std::thread::spawn(move || {
                for sig in signals.forever() {
                    let pid = target.load(Ordering::SeqCst);
                    // Keyboard signals already reached the agent through the terminal.
                    if pid > 0 && matches!(sig, SIGTERM | SIGHUP) {
                        // SAFETY: kill(2) with a positive pid and a valid signal number has no
                        // memory-safety preconditions.
                        unsafe {
                            libc::kill(pid, sig);
                        }
                    }
                }
            });
            Ok(Forwarder { pid })
        }

        pub fn target(&self, pid: u32) {
            self.pid
                .store(i32::try_from(pid).unwrap_or(0), Ordering::SeqCst);
        }

        /// The agent has exited: stop forwarding. Keyboard signals stay caught until the
        /// launcher exits, so the after-record is written even if the user presses Ctrl-C again.
        pub fn done(&self) {
            self.pid.store(0, Ordering::SeqCst);
        }
    }
}

#[cfg(not(unix))]
mod signals {
    use crate::error::Error;

    pub struct Forwarder;

    impl Forwarder {
        pub fn install() -> Result<Forwarder, Error> {
            Ok(Forwarder)
        }
        pub fn target(&self, _pid: u32) {}
        pub fn done(&self) {}
    }
}
