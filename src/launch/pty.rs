//! Running the agent inside a pseudo-terminal (portable-pty) when stdin and stdout are
//! terminals: the agent gets a real terminal of the user's size, the user's keys and the
//! agent's output pass through unchanged, and the output is also captured.
//!
//! Lifecycle (`launcher-store.md` §A2, the order that avoids the known hangs):
//! 1. signal handlers first, so no signal is lost between reading the size and the loop;
//! 2. `openpty` at the user's window size, spawn the resolved absolute path with an explicit
//!    cwd (portable-pty's default is `$HOME`), drop the slave at once (EOF on the master only
//!    comes once every slave fd is closed);
//! 3. raw mode on the user's terminal (restored on every path, see [`super::terminal`]);
//! 4. threads: output (master → stdout and capture), input (stdin → master, written to a dup
//!    of the master fd, never through portable-pty's writer, whose `Drop` types `\n` + Ctrl-D
//!    into the agent, wezterm#7898), waiter (the exit status from `wait()`, not reader EOF);
//! 5. the main loop: SIGWINCH → read the user's size, resize the pty (the kernel then sends
//!    the agent SIGWINCH); SIGINT/SIGQUIT/SIGTERM/SIGHUP → the agent's process group (it is a
//!    session leader on its pty, so nothing else would reach it; keys arrive as bytes);
//!    after SIGTERM, SIGHUP or SIGQUIT the agent gets [`GRACE`] to exit, then SIGKILL, as
//!    util-linux `script` and asciinema do;
//!    when the agent stops itself (Ctrl-Z), the user's terminal is restored and pas-agent
//!    stops too, so the user's shell has a stopped job; `fg` continues pas-agent, which puts
//!    the terminal back in raw mode and continues the agent (util-linux `script` does the same);
//! 6. on exit: drain the output for at most [`DRAIN`] (a background grandchild may hold the
//!    pty open forever, uim PR #300), stop the input thread, restore the terminal, close the
//!    master (the kernel hangs up what is left on the pty), close the capture.

use std::ffi::OsString;
use std::io::Read;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};
use signal_hook::consts::{SIGCONT, SIGHUP, SIGINT, SIGKILL, SIGQUIT, SIGSTOP, SIGTERM, SIGWINCH};

use super::capture::Capture;
use super::plain::Exit;
use super::signals::{self, Event, Watch};
use super::terminal::{self, RawMode, Size};
use crate::error::{Error, exit};

/// How long the agent has to exit after a forwarded SIGTERM, SIGHUP or SIGQUIT before it is
/// killed.
pub const GRACE: Duration = Duration::from_secs(5);
/// How long output is still read after the agent exited.
pub const DRAIN: Duration = Duration::from_secs(2);

/// Whether the launcher should use a pseudo-terminal: stdin and stdout are terminals.
pub fn wanted() -> bool {
    use std::io::IsTerminal;
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

/// portable-pty closes the pipe std uses to report a failed `exec`, so a program that cannot
/// be executed would look like one that ran and failed (wezterm#7893). The checks `exec` would
/// make are made first: the file is executable, and a `#!` interpreter exists and is too.
///
/// Errors: [`Error::Launch`] with 126 (not executable) or 127 (interpreter not found).
fn preflight(program: &Path) -> Result<(), Error> {
    let not_exec = |why: String| Error::Launch {
        message: format!("cannot run {}: {why}", program.display()),
        code: exit::NOT_EXECUTABLE,
    };
    let meta = std::fs::metadata(program).map_err(|e| not_exec(e.to_string()))?;
    {
        use std::os::unix::fs::PermissionsExt;
        if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
            return Err(not_exec("not an executable file".into()));
        }
    }
    let mut head = [0u8; 256];
    let n = std::fs::File::open(program)
        .and_then(|mut f| f.read(&mut head))
        .map_err(|e| not_exec(e.to_string()))?;
    if let Some(line) = head[..n].strip_prefix(b"#!") {
        let line = line.split(|b| *b == b'\n').next().unwrap_or_default();
        let text = String::from_utf8_lossy(line);
        if let Some(interp) = text.split_whitespace().next() {
            let interp = Path::new(interp);
            if !interp.exists() {
                return Err(Error::Launch {
                    message: format!(
                        "cannot run {}: its interpreter {} does not exist",
                        program.display(),
                        interp.display()
                    ),
                    code: exit::NOT_FOUND,
                });
            }
        }
    }
    Ok(())
}

/// Output shared between the output thread and the main loop.
struct Sink {
    capture: Option<Capture>,
    /// Set by the main loop when it stops waiting: the output thread stops.
    closed: bool,
}

/// Runs `program args…` in `cwd` inside a pseudo-terminal, with `env` added to its
/// environment, teeing its output to `capture`. Waits for it and returns how it ended.
///
/// Errors: [`Error::Launch`] with 126/127 when the program cannot be executed, 125 when the
/// pty or the launcher's threads cannot be set up. The terminal is restored before returning,
/// on every path.
pub fn run(
    program: &Path,
    args: &[OsString],
    env: &[(&str, String)],
    cwd: &Path,
    capture: Option<Capture>,
) -> Result<Exit, Error> {
    preflight(program)?;
    let watch = Watch::install(&[SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGWINCH])?;
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

    let mut cmd = CommandBuilder::new(program);
    cmd.args(args);
    cmd.cwd(cwd);
    cmd.env("PWD", cwd); // see plain::run
    cmd.env_remove(crate::hook::PROMPT_ENV);
    for (k, v) in env {
        cmd.env(k, v);
    }
    if std::env::var_os("TERM").is_none_or(|t| t.is_empty() || t == "dumb") {
        cmd.env("TERM", "xterm-256color");
    }
    let child =
        pair.slave
            .spawn_command(cmd)
            .map_err(|e| match e.downcast_ref::<std::io::Error>() {
                Some(io) => super::plain::spawn_error(program, io),
                None => failed(&format!("starting {}", program.display()), e),
            })?;
    drop(pair.slave);
    let master = pair.master;
    let pid = child
        .process_id()
        .and_then(|p| i32::try_from(p).ok())
        .unwrap_or(0);
    let child: Box<dyn portable_pty::Child> = child;
    let child = match child.downcast::<std::process::Child>() {
        Ok(c) => *c,
        Err(_) => return Err(failed("waiting for the agent", "unsupported child type")),
    };
    signals::wait_or_stop_in_background(child, watch.sender());

    let mut raw = match RawMode::enable(stdin.as_fd()) {
        Ok(r) => Some(r),
        Err(e) => {
            crate::term::warn(&format!(
                "cannot switch the terminal to raw mode ({e}); keys may echo twice"
            ));
            None
        }
    };

    let sink = Arc::new(Mutex::new(Sink {
        capture,
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

    let mut deadline: Option<Instant> = None;
    let outcome = loop {
        let timeout = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        match watch.next(timeout) {
            Some(Event::Exited(status)) => break Ok(Exit::from_status(status)),
            Some(Event::WaitFailed(e)) => break Err(failed("waiting for the agent", e)),
            Some(Event::Stopped) => {
                // The agent suspended itself (Ctrl-Z in its terminal). Nothing in its session
                // can continue it, so do what `script` does: give the user's terminal back,
                // stop pas-agent too (the user's shell sees a stopped job), and on `fg`
                // resume both.
                let had_raw = raw.take().is_some();
                signals::send(std::process::id() as i32, SIGSTOP);
                if had_raw {
                    raw = RawMode::enable(std::io::stdin().as_fd()).ok();
                }
                if let Some(s) = terminal::size(std::io::stdout().as_fd()) {
                    let _ = master.resize(pty_size(s));
                }
                signals::send(-pid, SIGCONT);
            }
            Some(Event::Signal {
                signal: SIGWINCH, ..
            }) => {
                if let Some(s) = terminal::size(std::io::stdout().as_fd()) {
                    let _ = master.resize(pty_size(s));
                }
            }
            Some(Event::Signal { signal, .. }) => {
                signals::send(-pid, signal);
                if signal != SIGINT && deadline.is_none() {
                    deadline = Some(Instant::now() + GRACE);
                }
            }
            None if deadline.is_some() => {
                signals::send(-pid, SIGKILL);
                deadline = None;
            }
            None => break Err(failed("waiting for the agent", "lost track of it")),
        }
    };

    // The agent is gone: take what is left of its output, within bounds.
    let _ = out_done.recv_timeout(DRAIN);
    let _ = rustix::io::write(&wake_write, b"x");
    drop(raw);
    if let Ok(mut sink) = sink.lock() {
        sink.closed = true;
        if let Some(c) = sink.capture.take() {
            c.finish();
        }
    }
    drop(master);
    outcome
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
        if stdout_ok {
            stdout_ok = write_all(stdout.as_fd(), chunk).is_ok();
        }
        let Ok(mut sink) = sink.lock() else { break };
        if sink.closed {
            break;
        }
        if let Some(c) = sink.capture.as_mut() {
            c.write(chunk);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preflight_maps_what_exec_would_refuse() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("s");
        std::fs::write(&script, "#!/nonexistent/interp\necho hi\n").unwrap();
        let code = |p: &Path| match preflight(p) {
            Err(Error::Launch { code, .. }) => code,
            other => panic!("{other:?}"),
        };
        assert_eq!(code(&script), exit::NOT_EXECUTABLE);
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(code(&script), exit::NOT_FOUND);
        std::fs::write(&script, "#!/bin/sh\necho hi\n").unwrap();
        assert!(preflight(&script).is_ok());
        assert_eq!(code(dir.path()), exit::NOT_EXECUTABLE);
    }
}
