//! Running the agent inside a pseudo-terminal (portable-pty) when stdin and stdout are
//! terminals: the agent gets a real terminal of the user's size, the user's keys and the
//! agent's output pass through unchanged, and the output is also captured.
//!
//! Lifecycle (the order that avoids the known hangs: python/cpython#121606 for the slave
//! descriptor, wezterm/wezterm#7898 for the writer, uim/uim#300 for the drain):
//! 1. signal handlers first, so no signal is lost between reading the size and the loop;
//! 2. `openpty` (portable-pty) at the user's window size; spawn the resolved absolute path with
//!    an explicit cwd through `std::process::Command`, as the leader of a new session whose
//!    controlling terminal is the pty (`setsid`, `TIOCSCTTY`), with the pty as its stdin and
//!    stdout, and as its stderr only when pas-agent's stderr is a terminal too: a redirected
//!    stderr (`2>err.txt`) reaches its file as it would without pas-agent (portable-pty's own
//!    spawn makes all three the pty, and hides a failed `exec`, wezterm#7893; std reports it,
//!    so a missing `#!` interpreter gives 127 as with inherited stdio and in the shells). Then drop
//!    the slave at once (EOF on the master only comes once every slave fd is closed);
//! 3. raw mode on the user's terminal (restored on every path, see [`super::terminal`]);
//! 4. threads: output (master → stdout, and chunks to the capture thread, which parses and
//!    writes them off the relay's path), capture, input (stdin → master, written to a dup
//!    of the master fd, never through portable-pty's writer, whose `Drop` types `\n` + Ctrl-D
//!    into the agent, wezterm#7898), waiter (the exit status from `wait()`, not reader EOF);
//! 5. the main loop, each signal as [`super::signals::TABLE`] says: SIGWINCH → read the
//!    user's size, resize the pty (the kernel then sends the agent SIGWINCH); SIGINT, SIGQUIT,
//!    SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGALRM, the realtime signals, … → the agent's process
//!    group (it is a session leader on its pty, so nothing else would reach it; keys arrive as
//!    bytes); after SIGTERM, SIGHUP or SIGQUIT the agent gets [`GRACE`] to exit, then SIGKILL,
//!    as util-linux `script` and asciinema do; SIGTSTP stops the agent, which suspends the run
//!    as below;
//!    when the agent stops itself (Ctrl-Z), the user's terminal is restored and pas-agent
//!    stops too, so the user's shell has a stopped job; `fg` continues pas-agent, which puts
//!    the terminal back in raw mode and continues the agent (util-linux `script` does the same);
//! 6. on exit: drain the output for at most [`DRAIN`] (a background grandchild may hold the
//!    pty open forever, uim PR #300), stop the input thread, undo the modes the agent left on
//!    ([`super::modes`]: alternate screen, mouse, keyboard protocols, …), restore the
//!    terminal's settings, close the master (the kernel hangs up what is left on the pty),
//!    close the capture (its thread writes what is queued, then ends).

use std::ffi::OsString;
use std::io::{IsTerminal, Read};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{MasterPty, PtySize, native_pty_system};
use signal_hook::consts::{SIGCONT, SIGKILL, SIGSTOP};

use super::capture::Capture;
use super::modes::Tracker;
use super::plain::{Exit, Ran};
use super::signals::{self, Action, Event, Watch};
use super::terminal::{self, RawMode, Size};
use crate::error::{Error, exit};

/// How long the agent has to exit after a forwarded SIGTERM, SIGHUP or SIGQUIT before it is
/// killed.
pub const GRACE: Duration = Duration::from_secs(5);
/// How long output is still read after the agent exited.
pub const DRAIN: Duration = Duration::from_secs(2);

/// Whether the launcher should use a pseudo-terminal: stdin and stdout are terminals.
pub fn wanted() -> bool {
    std::io::stdin().is_terminal() && std::io::stdout().is_terminal()
}

fn failed(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Launch {
        message: format!("{what}: {e}"),
        code: exit::LAUNCHER_FAILED,
    }
}

fn pty_size(s: Size) -> PtySize {
    PtySize {
        rows: s.rows,
        cols: s.cols,
        pixel_width: s.pixel_width,
        pixel_height: s.pixel_height,
    }
}

/// Opens the pty's slave side by name (portable-pty keeps its own fd private), without making
/// it pas-agent's controlling terminal, close-on-exec.
fn open_slave(master: &dyn MasterPty) -> Result<OwnedFd, Error> {
    use std::os::unix::fs::OpenOptionsExt;
    let name = master
        .tty_name()
        .ok_or_else(|| failed("opening a pseudo-terminal", "it has no name"))?;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOCTTY)
        .open(&name)
        .map_err(|e| failed(&format!("opening {}", name.display()), e))?;
    Ok(OwnedFd::from(file))
}

/// Output shared between the output thread and the main loop.
struct Sink {
    /// The capture thread's end: chunks go there in order (see [`Teller`]).
    capture: Option<Teller>,
    /// What the agent's output turned on in the user's terminal.
    modes: Tracker,
    /// Set by the main loop when it stops waiting: the output thread stops.
    closed: bool,
}

/// Runs `program args…` (`argv0` as its `argv[0]`) in `cwd` inside a pseudo-terminal, with
/// `env` added to its environment, teeing its output to `capture`. Waits for it and returns how it ended.
/// `watch` is the launcher's event stream, installed before the run record was written.
///
/// Errors: [`Error::Launch`] with 126/127 when the program cannot be executed, 125 when the
/// pty or the launcher's threads cannot be set up. The terminal is restored before returning,
/// on every path.
pub fn run(
    program: &Path,
    argv0: &str,
    args: &[OsString],
    env: &[(&str, String)],
    cwd: &Path,
    capture: Option<Capture>,
    watch: &Watch,
) -> Result<Ran, Error> {
    let stdin = std::io::stdin();
    let stdout_fd = std::io::stdout();
    let size = terminal::size(stdout_fd.as_fd())
        .or_else(|| terminal::size(stdin.as_fd()))
        .unwrap_or(Size::FALLBACK);
    let pair = native_pty_system()
        .openpty(pty_size(size))
        .map_err(|e| failed("opening a pseudo-terminal", e))?;

    // Everything that can fail is set up before the agent starts.
    let reader = pair
        .master
        .try_clone_reader()
        .map_err(|e| failed("reading the pseudo-terminal", e))?;
    let (wake_read, wake_write) = rustix::pipe::pipe().map_err(|e| failed("creating a pipe", e))?;
    // Not for the agent (std closes nothing it is not told to).
    for fd in [&wake_read, &wake_write] {
        rustix::io::fcntl_setfd(fd, rustix::io::FdFlags::CLOEXEC)
            .map_err(|e| failed("creating a pipe", e))?;
    }
    let slave = open_slave(&*pair.master)?;
    let slave_stdio = || {
        slave
            .try_clone()
            .map(Stdio::from)
            .map_err(|e| failed("opening a pseudo-terminal", e))
    };

    let mut cmd = Command::new(program);
    cmd.arg0(argv0).args(args).current_dir(cwd);
    cmd.env("PWD", cwd); // see plain::run
    cmd.env_remove(crate::hook::PROMPT_ENV);
    for (k, v) in env {
        cmd.env(k, v);
    }
    if std::env::var_os("TERM").is_none_or(|t| t.is_empty() || t == "dumb") {
        cmd.env("TERM", "xterm-256color");
    }
    // The pty for the streams that are terminals; a redirected stderr keeps its destination.
    cmd.stdin(slave_stdio()?).stdout(slave_stdio()?);
    if std::io::stderr().is_terminal() {
        cmd.stderr(slave_stdio()?);
    }
    let slave_fd = slave.as_raw_fd();
    // SAFETY: only async-signal-safe calls (setsid, ioctl) between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setsid() == -1 {
                return Err(std::io::Error::last_os_error());
            }
            #[allow(clippy::useless_conversion)]
            if libc::ioctl(slave_fd, libc::TIOCSCTTY.into(), 0) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = cmd
        .spawn()
        .map_err(|e| super::plain::spawn_error(program, &e))?;
    watch.spawned();
    drop(cmd);
    drop(slave);
    drop(pair.slave);
    let master = pair.master;
    let pid = i32::try_from(child.id()).unwrap_or(0);
    // The agent leads its own process group: signals go to the whole group.
    signals::set_agent_target(-pid);
    signals::wait_or_stop_in_background(child, watch.sender());

    // The user's title, to put back after the agent (which may set its own).
    let _ = write_all(stdout_fd.as_fd(), super::modes::TITLE_PUSH);
    let mut raw = match RawMode::enable(stdin.as_fd()) {
        Ok(r) => Some(r),
        Err(e) => {
            crate::term::warn(&format!(
                "cannot switch the terminal to raw mode ({e}); keys may echo twice"
            ));
            None
        }
    };

    let (capture, capture_thread) = match capture {
        Some(c) => {
            let (teller, thread) =
                Teller::start(c).map_err(|e| failed("starting the capture thread", e))?;
            (Some(teller), Some(thread))
        }
        None => (None, None),
    };
    let sink = Arc::new(Mutex::new(Sink {
        capture,
        modes: Tracker::default(),
        closed: false,
    }));
    let (out_done_tx, out_done) = std::sync::mpsc::channel::<()>();
    {
        let sink = Arc::clone(&sink);
        std::thread::Builder::new()
            .name("pas-agent-output".into())
            .spawn(move || {
                pump_output(reader, &sink);
                let _ = out_done_tx.send(());
            })
            .map_err(|e| failed("starting the output thread", e))?;
    }
    let master_fd: Option<OwnedFd> = master.as_raw_fd().and_then(|fd| {
        // SAFETY: the master fd is open while `master` lives; it is only duplicated here.
        let borrowed = unsafe { BorrowedFd::borrow_raw(fd) };
        borrowed.try_clone_to_owned().ok()
    });
    if let Some(master_fd) = master_fd {
        std::thread::Builder::new()
            .name("pas-agent-input".into())
            .spawn(move || pump_input(master_fd, wake_read))
            .map_err(|e| failed("starting the input thread", e))?;
    }

    let resize = |master: &dyn MasterPty| {
        if let Some(s) = terminal::size(std::io::stdout().as_fd()) {
            let _ = master.resize(pty_size(s));
        }
    };
    let mut deadline: Option<Instant> = None;
    let outcome = loop {
        let timeout = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        match watch.next(timeout) {
            Some(Event::Exited(status)) => break Ok(Exit::from_status(status)),
            Some(Event::WaitFailed(e)) => break Err(failed("waiting for the agent", e)),
            Some(Event::Stopped) => {
                // The agent suspended itself (or SIGTSTP to the launcher stopped it). Nothing
                // in its session can continue it, so do what `script` does: give the user's
                // terminal back, modes and all, stop pas-agent too (the user's shell sees a
                // stopped job), and on `fg` resume both. The output waits meanwhile (the sink
                // stays locked), so nothing the agent still prints lands on the shell's screen.
                let mut guard = sink.lock().ok();
                if let Some(sink) = guard.as_mut() {
                    let _ = write_all(std::io::stdout().as_fd(), &sink.modes.state.reset_bytes());
                }
                let had_raw = raw.take().is_some();
                signals::send(std::process::id() as i32, SIGSTOP);
                if had_raw {
                    raw = RawMode::enable(std::io::stdin().as_fd()).ok();
                }
                if let Some(sink) = guard.as_mut() {
                    let _ = write_all(std::io::stdout().as_fd(), &sink.modes.state.reapply_bytes());
                }
                drop(guard);
                resize(&*master);
                signals::send(-pid, SIGCONT);
            }
            Some(Event::Signal {
                signal,
                from_kernel,
            }) => match signals::action(signal, true) {
                Action::Resize => resize(&*master),
                Action::Continue => {
                    // Continued after a stop the launcher did not make (SIGSTOP from
                    // elsewhere): the shell may have put its own settings back meanwhile.
                    if let Some(r) = &raw {
                        r.reapply();
                    }
                    resize(&*master);
                }
                Action::Suspend => signals::send(-pid, SIGSTOP),
                Action::Forward { ends } => {
                    signals::send(-pid, signal);
                    if ends && deadline.is_none() {
                        deadline = Some(Instant::now() + GRACE);
                    }
                }
                Action::ForwardSent if !from_kernel => signals::send(-pid, signal),
                Action::ForwardSent | Action::Default | Action::Fault => {}
            },
            None if deadline.is_some() => {
                signals::send(-pid, SIGKILL);
                deadline = None;
            }
            None => break Err(failed("waiting for the agent", "lost track of it")),
        }
    };
    // The agent is gone: from here on what the user types cannot stop the recording.
    signals::shield_recording();

    // Take what is left of its output, within bounds.
    let _ = out_done.recv_timeout(DRAIN);
    let _ = rustix::io::write(&wake_write, b"x");
    let mut mid_line = false;
    if let Ok(mut sink) = sink.lock() {
        sink.closed = true;
        // Undo what the agent left on, before the settings go back (a terminal in
        // synchronized-output or alternate-screen mode would hide the shell's prompt).
        let mut reset = sink.modes.state.reset_bytes();
        if sink.modes.state.title_stack_intact() {
            reset.extend_from_slice(super::modes::TITLE_POP);
        }
        let _ = write_all(std::io::stdout().as_fd(), &reset);
        terminal::set_modes_reset(&[]);
        mid_line = !sink.modes.state.at_line_start();
        // Closing the channel lets the capture thread write what is queued and finish.
        sink.capture.take();
    }
    if let Some(thread) = capture_thread {
        let _ = thread.join();
    }
    drop(raw);
    drop(master);
    outcome.map(|exit| Ran { exit, mid_line })
}

/// Copies the agent's output to stdout and the capture until EOF (every slave fd closed; EIO
/// reads as EOF) or until the main loop closes the sink. When stdout fails (the user's terminal
/// went away) the output is still read, so the agent never blocks on a full pty.
fn pump_output(mut reader: Box<dyn Read + Send>, sink: &Mutex<Sink>) {
    // Straight to fd 1, one write per read: std's line-buffered stdout would split each chunk
    // at its last newline into two writes. Nothing else writes to stdout during the run.
    let stdout = std::io::stdout();
    let mut stdout_ok = true;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let chunk = &buf[..n];
        // Under the lock: the main loop undoes the modes the agent turned on, and that must
        // not interleave with the output that turned them on.
        let Ok(mut sink) = sink.lock() else { break };
        if sink.closed {
            break;
        }
        if stdout_ok {
            stdout_ok = write_all(stdout.as_fd(), chunk).is_ok();
        }
        // Only a byte that is not plain text can change a mode.
        if sink.modes.feed(chunk) {
            terminal::set_modes_reset(&sink.modes.state.reset_bytes());
        }
        if let Some(c) = sink.capture.as_mut() {
            c.tell(chunk);
        }
    }
}

/// Hands the output to the capture on a thread of its own, so that the relay to the terminal
/// does not wait for the capture's parsing and writing (about 9 ns a byte: as much CPU as the
/// relay itself). Chunks queue in a bounded channel (at most [`Teller::QUEUE`] chunks of at most
/// 64 KiB), so a slow disk slows the relay rather than fill memory; nothing past the capture's
/// limit (and the one byte that makes it note the cut) is sent.
struct Teller {
    tx: Option<std::sync::mpsc::SyncSender<Vec<u8>>>,
    /// Bytes still worth sending: the limit and one more.
    left: u64,
}

impl Teller {
    const QUEUE: usize = 64;

    fn start(mut capture: Capture) -> std::io::Result<(Teller, std::thread::JoinHandle<()>)> {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(Self::QUEUE);
        let left = capture.limit().saturating_add(1);
        let thread = std::thread::Builder::new()
            .name("pas-agent-capture".into())
            .spawn(move || {
                while let Some(chunk) = super::capture::recv_coalesced(&rx) {
                    capture.write(&chunk);
                }
                capture.finish();
            })?;
        Ok((Teller { tx: Some(tx), left }, thread))
    }

    fn tell(&mut self, chunk: &[u8]) {
        if self.left == 0 {
            return;
        }
        let take = chunk
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        self.left -= take as u64;
        let sent = self
            .tx
            .as_ref()
            .is_some_and(|tx| tx.send(chunk[..take].to_vec()).is_ok());
        if !sent || self.left == 0 {
            // The capture thread is gone, or has all it will keep: stop sending.
            self.tx = None;
            self.left = 0;
        }
    }
}

/// Copies the user's keys to the agent until the wake pipe is written to or stdin ends.
fn pump_input(master: OwnedFd, wake: OwnedFd) {
    use rustix::event::{PollFd, PollFlags, poll};
    let stdin = std::io::stdin();
    let mut stdin_open = true;
    let mut buf = [0u8; 8192];
    loop {
        let mut fds = vec![PollFd::new(&wake, PollFlags::IN)];
        if stdin_open {
            fds.push(PollFd::new(&stdin, PollFlags::IN));
        }
        match poll(&mut fds, None) {
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => return,
        }
        if !fds[0].revents().is_empty() {
            return;
        }
        let ready = stdin_open && !fds[1].revents().is_empty();
        drop(fds);
        if !ready {
            continue;
        }
        match rustix::io::read(&stdin, &mut buf) {
            Ok(0) => stdin_open = false,
            Ok(n) => {
                if write_all(master.as_fd(), &buf[..n]).is_err() {
                    return;
                }
            }
            Err(rustix::io::Errno::INTR | rustix::io::Errno::AGAIN) => {}
            Err(_) => stdin_open = false,
        }
    }
}

fn write_all(fd: BorrowedFd<'_>, mut bytes: &[u8]) -> rustix::io::Result<()> {
    while !bytes.is_empty() {
        match rustix::io::write(fd, bytes) {
            Ok(n) => bytes = &bytes[n..],
            Err(rustix::io::Errno::INTR | rustix::io::Errno::AGAIN) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
