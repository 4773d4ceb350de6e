//! Signals and the agent's exit as one stream of events for the launcher's main loop, and
//! what the launcher does with every signal it can catch ([`TABLE`]).
//!
//! signal-hook turns signals into values on a thread (never logic in async-signal context,
//! as signal-hook and tokio do), with their origin: a keyboard signal comes from the kernel
//! (the terminal driver), a `kill` from a process. A waiter thread adds the agent's exit. The
//! handlers are installed before the run record is written and stay installed until the
//! launcher exits, so no catchable signal can kill the launcher with the user's terminal in
//! raw mode or the run half-recorded: each one is either sent on to the agent (whose exit
//! then ends the run, recorded as it happened), or handled, or left with a default action that
//! neither ends the launcher nor touches the terminal (see [`TABLE`] for each).
//!
//! The signals that report a fault (SIGILL, SIGTRAP, SIGABRT, SIGBUS, SIGFPE, SIGSEGV,
//! SIGSYS) cannot go through signal-hook (a handler that returns from a real fault runs the
//! faulting instruction again). [`install_fault_handlers`] gives them a small handler of
//! their own: one that a process sent with `kill` is passed on to the agent like any other;
//! a real fault (or the launcher's own `abort`) puts the terminal's settings back and lets the
//! signal kill the launcher (the next command marks the run abandoned).

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::Duration;

use crate::error::{Error, exit};

/// What the launcher does with a signal while the agent runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Sent on to the agent: in a pseudo-terminal to its process group (it leads its own
    /// session, nothing else would reach it), with inherited stdio to the agent when a process
    /// sent it (what the kernel raises there, keys and hang-ups, already reached the agent's
    /// process group). With `ends`, the agent gets [`super::pty::GRACE`] to exit afterwards,
    /// then SIGKILL (pseudo-terminal only).
    Forward {
        /// The signal asks the program to end: a pseudo-terminal agent that outlives it by
        /// the grace period is killed.
        ends: bool,
    },
    /// Sent on like [`Action::Forward`] when a process sent it; when the kernel raised it, it
    /// is about the launcher's own doing (a write to a closed pipe, its own file-size or CPU
    /// limit) and is dropped: the failing call reports the error instead.
    ForwardSent,
    /// The window changed size: the pseudo-terminal is resized (the kernel then tells the
    /// agent).
    Resize,
    /// The launcher was continued (`fg`, `kill -CONT`): its terminal goes back to raw mode,
    /// as the shell may have reset it while the launcher was stopped.
    Continue,
    /// Suspend the run: the agent is stopped, the user's terminal is given back and the
    /// launcher stops too; `fg` resumes both.
    Suspend,
    /// Not caught: the default action, which neither ends the launcher nor leaves the
    /// terminal changed (ignored, or a stop the shell handles as job control).
    Default,
    /// A fault: see [`install_fault_handlers`].
    Fault,
}

/// One row of [`TABLE`]: a signal and what the launcher does with it in a pseudo-terminal
/// run and in a run with inherited stdio.
#[derive(Debug, Clone, Copy)]
pub struct Row {
    /// The signal number on this platform.
    pub signal: i32,
    /// Its name, `SIGHUP` and so on.
    pub name: &'static str,
    /// In a pseudo-terminal run.
    pub pty: Action,
    /// With inherited stdio (`--no-pty`, or no terminal).
    pub plain: Action,
}

/// A [`TABLE`] row for `libc::<NAME>`, named `"<NAME>"`.
#[cfg(unix)]
macro_rules! row {
    ($signal:ident, $pty:expr, $plain:expr) => {
        Row {
            signal: libc::$signal,
            name: stringify!($signal),
            pty: $pty,
            plain: $plain,
        }
    };
}

#[cfg(unix)]
const FWD: Action = Action::Forward { ends: false };
#[cfg(unix)]
const END: Action = Action::Forward { ends: true };

/// Every catchable signal but the realtime ones (see [`realtime`], all forwarded), and what
/// the launcher does with it. Why:
/// - HUP, INT, QUIT, TERM ask the program to end; USR1, USR2, ALRM, URG, VTALRM, PROF, IO,
///   PWR and STKFLT are messages for it: all are the agent's to handle, as they would be
///   without pas-agent (uv's `crates/uv/src/child.rs` and dotenv-cli forward the same set).
/// - PIPE, XFSZ, XCPU from the kernel are about the launcher's own writes and limits.
/// - CHLD is the launcher's own (the waiter reaps the agent); WINCH resizes the pty.
/// - TSTP in a pseudo-terminal suspends the run cleanly; TTIN and TTOU keep their default
///   (job control stops the launcher when it touches the terminal from the background;
///   catching them would turn a `tcsetattr` from the background into a loop), and so do all
///   three with inherited stdio, where the agent shares the launcher's job.
/// - CONT re-enters raw mode after a stop that the launcher did not make itself.
/// - The faults: see [`install_fault_handlers`].
#[cfg(unix)]
pub const TABLE: &[Row] = &[
    row!(SIGHUP, END, Action::ForwardSent),
    row!(SIGINT, FWD, Action::ForwardSent),
    row!(SIGQUIT, END, Action::ForwardSent),
    row!(SIGILL, Action::Fault, Action::Fault),
    row!(SIGTRAP, Action::Fault, Action::Fault),
    row!(SIGABRT, Action::Fault, Action::Fault),
    row!(SIGBUS, Action::Fault, Action::Fault),
    row!(SIGFPE, Action::Fault, Action::Fault),
    row!(SIGUSR1, FWD, Action::ForwardSent),
    row!(SIGSEGV, Action::Fault, Action::Fault),
    row!(SIGUSR2, FWD, Action::ForwardSent),
    row!(SIGPIPE, Action::ForwardSent, Action::ForwardSent),
    row!(SIGALRM, FWD, Action::ForwardSent),
    row!(SIGTERM, END, Action::ForwardSent),
    #[cfg(any(target_os = "linux", target_os = "android"))]
    row!(SIGSTKFLT, FWD, Action::ForwardSent),
    row!(SIGCHLD, Action::Default, Action::Default),
    row!(SIGCONT, Action::Continue, Action::Default),
    row!(SIGTSTP, Action::Suspend, Action::Default),
    row!(SIGTTIN, Action::Default, Action::Default),
    row!(SIGTTOU, Action::Default, Action::Default),
    row!(SIGURG, FWD, Action::ForwardSent),
    row!(SIGXCPU, Action::ForwardSent, Action::ForwardSent),
    row!(SIGXFSZ, Action::ForwardSent, Action::ForwardSent),
    row!(SIGVTALRM, FWD, Action::ForwardSent),
    row!(SIGPROF, FWD, Action::ForwardSent),
    row!(SIGWINCH, Action::Resize, Action::Default),
    row!(SIGIO, FWD, Action::ForwardSent),
    #[cfg(any(target_os = "linux", target_os = "android"))]
    row!(SIGPWR, FWD, Action::ForwardSent),
    row!(SIGSYS, Action::Fault, Action::Fault),
];

/// The realtime signals (`SIGRTMIN` to `SIGRTMAX`, 34 to 64 on Linux with glibc): messages
/// for the program, forwarded like SIGUSR1.
#[cfg(target_os = "linux")]
pub fn realtime() -> std::ops::RangeInclusive<i32> {
    libc::SIGRTMIN()..=libc::SIGRTMAX()
}

/// No realtime signals outside Linux.
#[cfg(all(unix, not(target_os = "linux")))]
pub fn realtime() -> std::ops::RangeInclusive<i32> {
    1..=0
}

/// What the launcher does with `signal` in a pseudo-terminal run (`pty`) or with inherited
/// stdio.
#[cfg(unix)]
pub fn action(signal: i32, pty: bool) -> Action {
    match TABLE.iter().find(|r| r.signal == signal) {
        Some(r) if pty => r.pty,
        Some(r) => r.plain,
        None if realtime().contains(&signal) => {
            if pty {
                FWD
            } else {
                Action::ForwardSent
            }
        }
        None => Action::Default,
    }
}

/// The signals the event stream catches in a run of this kind: every one whose action is not
/// [`Action::Default`] or [`Action::Fault`].
#[cfg(unix)]
pub fn caught(pty: bool) -> Vec<i32> {
    TABLE
        .iter()
        .map(|r| r.signal)
        .chain(realtime())
        .filter(|s| !matches!(action(*s, pty), Action::Default | Action::Fault))
        .collect()
}

/// The signals that, arriving while the run is prepared (before the agent starts), stop it:
/// every caught one that would be sent to the agent or end it, except the ones the kernel
/// raises for the launcher's own doing (SIGPIPE, SIGXFSZ, SIGXCPU).
#[cfg(unix)]
pub fn stop_before_start(pty: bool) -> Vec<i32> {
    caught(pty)
        .into_iter()
        .filter(|s| {
            matches!(
                action(*s, pty),
                Action::Forward { .. } | Action::ForwardSent
            ) && ![libc::SIGPIPE, libc::SIGXFSZ, libc::SIGXCPU].contains(s)
        })
        .collect()
}

/// Where a forwarded signal goes, for the fault handler: the agent's pid, or minus its
/// process group; 0 before the agent started.
static AGENT_TARGET: AtomicI32 = AtomicI32::new(0);

/// A fault signal another process sent before the agent's pid was known (between the run
/// record and the spawn's return): held here and forwarded by [`set_agent_target`], as the
/// signals of the event stream wait in its queue.
static PENDING_FAULT: AtomicI32 = AtomicI32::new(0);

/// Takes the fault signal another process sent while the agent had not started yet, if any:
/// like a flagged signal ([`Watch::stop_requested`]), it asks the run to stop before the
/// agent starts. One that arrives after this call waits for [`set_agent_target`].
pub fn take_pending_fault() -> Option<i32> {
    match PENDING_FAULT.swap(0, Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// Tells the fault handler where the agent is (`target` as for [`send`]), and forwards a
/// fault signal that was sent to the launcher before it knew.
pub fn set_agent_target(target: i32) {
    AGENT_TARGET.store(target, Ordering::SeqCst);
    let pending = PENDING_FAULT.swap(0, Ordering::SeqCst);
    if pending != 0 {
        send(target, pending);
    }
}

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
    stop: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    count: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    preparing: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// What to do once the agent's process exists ([`Watch::when_spawned`]).
    on_spawn: std::sync::Mutex<Option<Box<dyn FnOnce() + Send>>>,
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
        Ok(Watch {
            tx,
            rx,
            handle,
            stop: Default::default(),
            count: Default::default(),
            preparing: std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true)),
            on_spawn: Default::default(),
        })
    }

    /// Without Unix signals there is nothing to install: only the exit event arrives.
    #[cfg(not(unix))]
    pub fn install(_signals: &[i32]) -> Result<Watch, Error> {
        let (tx, rx) = mpsc::channel();
        Ok(Watch {
            tx,
            rx,
            stop: Default::default(),
            count: Default::default(),
            preparing: std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true)),
            on_spawn: Default::default(),
        })
    }

    /// Remembers, from inside the signal handler itself (no thread in between), the last of
    /// `signals` that arrives: see [`Watch::stop_requested`]. While the run is prepared
    /// ([`Watch::started`] not called yet), a second one ends pas-agent at once, from the
    /// handler: the preparation may be stuck (a git status that hangs), and the first one only
    /// asked it to stop before the agent starts.
    ///
    /// Errors: [`Error::Launch`] (125) when a handler cannot be installed.
    #[cfg(unix)]
    pub fn flag(&self, signals: &[i32]) -> Result<(), Error> {
        for s in signals {
            let signal = *s;
            let stop = std::sync::Arc::clone(&self.stop);
            let count = std::sync::Arc::clone(&self.count);
            let preparing = std::sync::Arc::clone(&self.preparing);
            let action = move || {
                stop.store(usize::try_from(signal).unwrap_or(0), Ordering::SeqCst);
                if preparing.load(Ordering::SeqCst) && count.fetch_add(1, Ordering::SeqCst) >= 1 {
                    const NOTE: &[u8] = b"\npas-agent: stopped while the run was prepared; the agent was not started\n";
                    // SAFETY: write(2) and _exit(2) are async-signal-safe.
                    unsafe {
                        libc::write(2, NOTE.as_ptr().cast(), NOTE.len());
                        libc::_exit(128 + signal);
                    }
                }
            };
            // SAFETY: the action only touches atomics and calls async-signal-safe functions.
            unsafe { signal_hook::low_level::register(signal, action) }.map_err(|e| {
                Error::Launch {
                    message: format!("installing signal handlers: {e}"),
                    code: exit::LAUNCHER_FAILED,
                }
            })?;
        }
        Ok(())
    }

    /// The agent is about to start: from now on flagged signals are only remembered.
    pub fn started(&self) {
        self.preparing.store(false, Ordering::SeqCst);
    }

    /// Runs `f` once the agent's process exists ([`Watch::spawned`]); `f` should return at
    /// once (the agent's input and output wait for it).
    pub fn when_spawned(&self, f: Box<dyn FnOnce() + Send>) {
        if let Ok(mut slot) = self.on_spawn.lock() {
            *slot = Some(f);
        }
    }

    /// Called by the runners right after the agent's process was created.
    pub fn spawned(&self) {
        let f = self.on_spawn.lock().ok().and_then(|mut slot| slot.take());
        if let Some(f) = f {
            f();
        }
    }

    /// The last flagged signal that arrived (see [`Watch::flag`]), if any.
    pub fn stop_requested(&self) -> Option<i32> {
        match self.stop.load(Ordering::SeqCst) {
            0 => None,
            s => i32::try_from(s).ok(),
        }
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
        {
            // The signal thread ends once the handle is closed, and may end before `close`
            // writes its wake-up (it checks the flag first), dropping the reading end of
            // signal-hook's socket. A write to that socket then fails with EPIPE and raises
            // SIGPIPE, whose handler (installed here for forwarding) writes to it again: a
            // loop that never returns (seen once in the e2e suite: `run codex --resume` with
            // no session spun at full CPU). SIGPIPE goes back to ignored, as the launcher
            // starts with it, so such a write only fails.
            // SAFETY: signal(2) with SIG_IGN has no memory-safety preconditions.
            unsafe {
                libc::signal(libc::SIGPIPE, libc::SIG_IGN);
            }
            self.handle.close();
        }
    }
}

/// While the run is recorded (the agent has exited): what the user types at the terminal no
/// longer stops the launcher or the git processes it starts. Ctrl-C, Ctrl-\\, Ctrl-Z, the
/// background stops and a hang-up are ignored from here on, by the launcher and, since an
/// ignored signal stays ignored across `exec`, by its children; a SIGTERM or any other caught
/// signal is taken by the handlers and changes nothing. Only SIGKILL cuts the record short
/// (the next command then marks the run abandoned, with what git still knows).
#[cfg(unix)]
pub fn shield_recording() {
    for s in [
        libc::SIGINT,
        libc::SIGQUIT,
        libc::SIGTSTP,
        libc::SIGTTIN,
        libc::SIGTTOU,
        libc::SIGHUP,
    ] {
        // SAFETY: signal(2) with SIG_IGN has no memory-safety preconditions.
        unsafe {
            libc::signal(s, libc::SIG_IGN);
        }
    }
}

/// Nothing to shield without Unix signals.
#[cfg(not(unix))]
pub fn shield_recording() {}

/// Installs the handler for the fault signals ([`Action::Fault`] in [`TABLE`]): SIGILL,
/// SIGTRAP, SIGABRT, SIGBUS, SIGFPE, SIGSEGV, SIGSYS. One that another process sent
/// (`kill -SEGV <launcher>`) is passed on to the agent, like SIGUSR1: at once when it runs,
/// or, sent before its pid is known, held and passed on by [`set_agent_target`]. A real
/// fault or the launcher's own `abort` puts the terminal's settings back
/// ([`super::terminal`]) and then kills the launcher with the default action.
#[cfg(unix)]
pub fn install_fault_handlers() {
    for r in TABLE.iter().filter(|r| r.pty == Action::Fault) {
        // SAFETY: a zeroed sigaction with a valid handler, SA_SIGINFO (three arguments) and
        // SA_ONSTACK (std's alternate stack, so a stack overflow still reaches the handler).
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_fault as *const () as usize;
            sa.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(r.signal, &sa, std::ptr::null_mut());
        }
    }
}

/// The fault handler: only async-signal-safe calls (getpid, kill, tcsetattr, signal, raise).
#[cfg(unix)]
extern "C" fn on_fault(signal: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo with SA_SIGINFO; the calls below are
    // async-signal-safe.
    unsafe {
        let code = (*info).si_code;
        let sender = (*info).si_pid();
        #[cfg(target_os = "linux")]
        let sent = code <= 0; // SI_USER, SI_QUEUE, SI_TKILL: a process, not the CPU
        #[cfg(not(target_os = "linux"))]
        let sent = code <= 0 || code == 0x10001; // SI_USER on the BSDs and macOS
        let target = AGENT_TARGET.load(Ordering::SeqCst);
        if sent && sender != libc::getpid() {
            if target != 0 && target != -1 {
                libc::kill(target, signal);
                return;
            }
            if target == 0 {
                // No agent yet: hold it for set_agent_target; it re-checks after its store.
                PENDING_FAULT.store(signal, Ordering::SeqCst);
                let target = AGENT_TARGET.load(Ordering::SeqCst);
                if target != 0 && target != -1 && PENDING_FAULT.swap(0, Ordering::SeqCst) != 0 {
                    libc::kill(target, signal);
                }
                return;
            }
        }
        super::terminal::restore_in_signal_handler();
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
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
