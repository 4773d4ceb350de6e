//! Signals and the agent's exit as one stream of events for the launcher's main loop.
//!
//! signal-hook turns signals into values on a thread (never logic in async-signal context,
//! `launcher-store.md` §B2 rule 3), with their origin: a keyboard signal comes from the kernel
//! (the terminal driver), a `kill` from a process. A waiter thread adds the agent's exit. The
//! handlers stay installed until the launcher exits, so a signal that arrives while the
//! after-record is written does not kill the launcher half-way: the record is written on every
//! path the launcher can catch.

use std::sync::mpsc::{self, Receiver, Sender};
use std::time::Duration;

use crate::error::{Error, exit};

/// Something the main loop reacts to.
#[derive(Debug)]
pub enum Event {
    /// A signal reached the launcher. `from_kernel` is true when the kernel raised it (a key
    /// the terminal turned into SIGINT or SIGQUIT, a hang-up, a window resize), false when a
    /// process sent it with `kill` or similar.
    Signal {
        /// The signal number (`SIGINT` = 2, …).
        signal: i32,
        /// True when the kernel raised it, false when a process sent it.
        from_kernel: bool,
    },
    /// The agent exited.
    Exited(std::process::ExitStatus),
    /// The agent stopped itself (SIGTSTP from its terminal, SIGSTOP); only reported by
    /// [`wait_or_stop_in_background`].
    Stopped,
    /// Waiting for the agent failed.
    WaitFailed(std::io::Error),
}

/// The launcher's event stream. Dropping it stops the signal thread; the handlers themselves
/// stay (a second Ctrl-C during the final write must not kill the launcher).
pub struct Watch {
    tx: Sender<Event>,
    rx: Receiver<Event>,
    #[cfg(unix)]
    handle: signal_hook::iterator::Handle,
}

impl Watch {
    /// Installs handlers for `signals` and starts the thread that turns them into events.
    ///
    /// Errors: [`Error::Launch`] (125) when the handlers cannot be installed.
    #[cfg(unix)]
    pub fn install(signals: &[i32]) -> Result<Watch, Error> {
        use signal_hook::iterator::SignalsInfo;
        use signal_hook::iterator::exfiltrator::WithOrigin;
        use signal_hook::low_level::siginfo::Cause;

        let mut info = SignalsInfo::<WithOrigin>::new(signals).map_err(|e| Error::Launch {
            message: format!("installing signal handlers: {e}"),
            code: exit::LAUNCHER_FAILED,
        })?;
        let handle = info.handle();
        let (tx, rx) = mpsc::channel();
        let to_loop = tx.clone();
        std::thread::Builder::new()
            .name("pas-agent-signals".into())
            .spawn(move || {
                for origin in info.forever() {
                    let event = Event::Signal {
                        signal: origin.signal,
                        from_kernel: matches!(origin.cause, Cause::Kernel),
                    };
                    if to_loop.send(event).is_err() {
                        break;
                    }
                }
            })
            .map_err(|e| Error::Launch {
                message: format!("starting the signal thread: {e}"),
                code: exit::LAUNCHER_FAILED,
            })?;
        Ok(Watch { tx, rx, handle })
    }

    /// Without Unix signals there is nothing to install: only the exit event arrives.
    #[cfg(not(unix))]
    pub fn install(_signals: &[i32]) -> Result<Watch, Error> {
        let (tx, rx) = mpsc::channel();
        Ok(Watch { tx, rx })
    }

    /// A sender for other event sources (the waiter thread).
    pub fn sender(&self) -> Sender<Event> {
        self.tx.clone()
    }

    /// The next event, waiting at most `timeout` (forever when `None`). `None` on timeout.
    pub fn next(&self, timeout: Option<Duration>) -> Option<Event> {
        match timeout {
            None => self.rx.recv().ok(),
            Some(t) => self.rx.recv_timeout(t).ok(),
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        #[cfg(unix)]
        self.handle.close();
    }
}

/// Sends `signal` to `pid` (a process group when `pid` is negative). Errors (the process is
/// already gone) are ignored: the waiter reports how it ended.
#[cfg(unix)]
pub fn send(pid: i32, signal: i32) {
    if pid == 0 || pid == -1 {
        return; // never the launcher's own group, never every process
    }
    // SAFETY: kill(2) has no memory-safety preconditions; 0 and -1 are excluded above.
    unsafe {
        libc::kill(pid, signal);
    }
}

/// Starts a thread that waits for `child` and reports its exit as an event, and every time it
/// stops as [`Event::Stopped`] (`waitpid` with `WUNTRACED`). After a stop the thread waits
/// again, so the exit is still reported once the agent is continued.
#[cfg(unix)]
pub fn wait_or_stop_in_background(child: std::process::Child, tx: Sender<Event>) {
    use std::os::unix::process::ExitStatusExt;
    let Ok(pid) = i32::try_from(child.id()) else {
        return wait_in_background(child, tx);
    };
    // The child is reaped below by pid; the std handle is only dropped (that neither waits nor
    // kills).
    drop(child);
    let spawned = std::thread::Builder::new()
        .name("pas-agent-wait".into())
        .spawn({
            let tx = tx.clone();
            move || {
                loop {
                    let mut status = 0;
                    // SAFETY: waitpid on our own child with a valid out pointer.
                    let r = unsafe { libc::waitpid(pid, &mut status, libc::WUNTRACED) };
                    let event = if r == -1 {
                        let e = std::io::Error::last_os_error();
                        if e.kind() == std::io::ErrorKind::Interrupted {
                            continue;
                        }
                        Event::WaitFailed(e)
                    } else if libc::WIFSTOPPED(status) {
                        Event::Stopped
                    } else {
                        Event::Exited(std::process::ExitStatus::from_raw(status))
                    };
                    let done = !matches!(event, Event::Stopped);
                    if tx.send(event).is_err() || done {
                        break;
                    }
                }
            }
        });
    if let Err(e) = spawned {
        let _ = tx.send(Event::WaitFailed(e));
    }
}

/// Starts a thread that waits for `child` and reports its exit as an event.
pub fn wait_in_background(mut child: std::process::Child, tx: Sender<Event>) {
    let spawned = std::thread::Builder::new()
        .name("pas-agent-wait".into())
        .spawn({
            let tx = tx.clone();
            move || {
                let event = match child.wait() {
                    Ok(status) => Event::Exited(status),
                    Err(e) => Event::WaitFailed(e),
                };
                let _ = tx.send(event);
            }
        });
    if let Err(e) = spawned {
        let _ = tx.send(Event::WaitFailed(e));
    }
}
