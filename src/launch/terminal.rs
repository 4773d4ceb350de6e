//! The user's terminal while an agent runs in a pseudo-terminal: raw mode with a guaranteed
//! restore, and the window size.
//!
//! Raw mode (`cfmakeraw`, through rustix) makes every key a byte for the agent's pty, so
//! Ctrl-C, Ctrl-Z and Ctrl-\ reach the agent through its own line discipline instead of
//! signalling the launcher, and input is not echoed twice (microsoft/node-pty#78). The saved
//! settings are restored by the guard's `Drop` (normal return, error return, unwinding) and by
//! a panic hook (a panic on any thread); every catchable signal is forwarded or handled
//! ([`super::signals::TABLE`]), so the main loop returns and drops the guard; a fault in the
//! launcher itself restores the settings from its signal handler
//! ([`restore_in_signal_handler`]). Only SIGKILL escapes, and then the shell's own reset is the
//! remedy. The modes the agent turned on (alternate screen, mouse, …) are
//! [`super::modes`]'s.

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Mutex, Once};

use rustix::termios::{self, OptionalActions, Termios};

/// The terminal settings to put back, for the panic hook.
static SAVED: Mutex<Option<(RawFd, Termios)>> = Mutex::new(None);
static HOOK: Once = Once::new();

/// What undoes the modes the agent turned on ([`super::modes`]), for the panic hook and the
/// fault handler: written to stdout before the settings go back. Kept up to date by the
/// output thread ([`set_modes_reset`]).
static MODES_RESET: Mutex<Vec<u8>> = Mutex::new(Vec::new());

/// Sets the bytes that undo the agent's modes, for a launcher that panics or faults.
pub fn set_modes_reset(bytes: &[u8]) {
    if let Ok(mut slot) = MODES_RESET.lock() {
        slot.clear();
        slot.extend_from_slice(bytes);
    }
}

/// Writes the modes' reset to stdout, if the lock is free (never waits: a panic or a signal
/// may come while it is held). Only `write(2)`, so a signal handler may call it.
fn write_modes_reset() {
    if let Ok(slot) = MODES_RESET.try_lock()
        && !slot.is_empty()
    {
        // SAFETY: write(2) of a live buffer to fd 1.
        unsafe {
            libc::write(1, slot.as_ptr().cast(), slot.len());
        }
    }
}

/// The same settings for a signal handler, which may take no lock: written only while
/// `ready` is false.
struct SignalCopy {
    ready: AtomicBool,
    fd: AtomicI32,
    termios: UnsafeCell<MaybeUninit<libc::termios>>,
}

// SAFETY: `termios` is written only by `RawMode::enable`/`drop` (one guard at a time, on the
// main thread) while `ready` is false, and read only while `ready` is true.
unsafe impl Sync for SignalCopy {}

static SIGNAL_COPY: SignalCopy = SignalCopy {
    ready: AtomicBool::new(false),
    fd: AtomicI32::new(-1),
    termios: UnsafeCell::new(MaybeUninit::uninit()),
};

/// Puts the terminal's saved settings back from a signal handler (tcsetattr is
/// async-signal-safe); nothing when raw mode is not on.
pub fn restore_in_signal_handler() {
    if SIGNAL_COPY.ready.load(Ordering::SeqCst) {
        write_modes_reset();
        let fd = SIGNAL_COPY.fd.load(Ordering::SeqCst);
        // SAFETY: `ready` says the copy was fully written (see `SignalCopy`).
        unsafe {
            libc::tcsetattr(fd, libc::TCSANOW, (*SIGNAL_COPY.termios.get()).as_ptr());
        }
    }
}

fn keep_signal_copy(fd: RawFd) {
    SIGNAL_COPY.ready.store(false, Ordering::SeqCst);
    // SAFETY: `ready` is false, so no handler reads the copy while it is written; tcgetattr
    // fills the termios it is given.
    unsafe {
        let slot = &mut *SIGNAL_COPY.termios.get();
        if libc::tcgetattr(fd, slot.as_mut_ptr()) == 0 {
            SIGNAL_COPY.fd.store(fd, Ordering::SeqCst);
            SIGNAL_COPY.ready.store(true, Ordering::SeqCst);
        }
    }
}

/// A window size in character cells (and pixels, when the terminal reports them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size {
    /// Height in character cells (`ws_row`).
    pub rows: u16,
    /// Width in character cells (`ws_col`).
    pub cols: u16,
    /// Width in pixels (`ws_xpixel`); 0 when the terminal does not say.
    pub pixel_width: u16,
    /// Height in pixels (`ws_ypixel`); 0 when the terminal does not say.
    pub pixel_height: u16,
}

impl Size {
    /// 80×24, for when the terminal does not say.
    pub const FALLBACK: Size = Size {
        rows: 24,
        cols: 80,
        pixel_width: 0,
        pixel_height: 0,
    };
}

/// The window size of the terminal on `fd`, `None` when it is not a terminal or reports 0×0.
pub fn size(fd: BorrowedFd<'_>) -> Option<Size> {
    let w = termios::tcgetwinsize(fd).ok()?;
    (w.ws_row > 0 && w.ws_col > 0).then_some(Size {
        rows: w.ws_row,
        cols: w.ws_col,
        pixel_width: w.ws_xpixel,
        pixel_height: w.ws_ypixel,
    })
}

/// Puts the terminal back as it was when dropped.
#[derive(Debug)]
pub struct RawMode {
    fd: RawFd,
    saved: Termios,
    raw: Termios,
}

impl RawMode {
    /// Switches the terminal on `fd` to raw mode. The fd must stay open for the guard's life
    /// (it is the process's stdin).
    ///
    /// Errors: the terminal's settings cannot be read or written.
    pub fn enable(fd: BorrowedFd<'_>) -> std::io::Result<RawMode> {
        let saved = termios::tcgetattr(fd)?;
        let mut raw = saved.clone();
        raw.make_raw();
        install_hook();
        if let Ok(mut slot) = SAVED.lock() {
            *slot = Some((raw_fd(fd), saved.clone()));
        }
        keep_signal_copy(raw_fd(fd));
        termios::tcsetattr(fd, OptionalActions::Now, &raw)?;
        Ok(RawMode {
            fd: raw_fd(fd),
            saved,
            raw,
        })
    }

    /// Applies raw mode again (after a stop, the shell may have put its own settings back).
    pub fn reapply(&self) {
        // SAFETY: as in `restore`.
        let fd = unsafe { BorrowedFd::borrow_raw(self.fd) };
        let _ = termios::tcsetattr(fd, OptionalActions::Now, &self.raw);
    }
}

fn raw_fd(fd: BorrowedFd<'_>) -> RawFd {
    use std::os::fd::AsRawFd;
    fd.as_raw_fd()
}

fn restore(fd: RawFd, saved: &Termios) {
    // SAFETY: `fd` is the process's stdin, open for the whole run (see `RawMode::enable`).
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    let _ = termios::tcsetattr(fd.as_fd(), OptionalActions::Now, saved);
}

impl Drop for RawMode {
    fn drop(&mut self) {
        SIGNAL_COPY.ready.store(false, Ordering::SeqCst);
        restore(self.fd, &self.saved);
        if let Ok(mut slot) = SAVED.lock() {
            *slot = None;
        }
    }
}

/// Chains a panic hook that restores the terminal before the default hook prints the panic.
fn install_hook() {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            // try_lock: a panic while the lock is held must not deadlock the hook.
            if let Ok(slot) = SAVED.try_lock()
                && let Some((fd, saved)) = slot.as_ref()
            {
                write_modes_reset();
                restore(*fd, saved);
            }
            previous(info);
        }));
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::{FromRawFd, OwnedFd};

    fn pty() -> (OwnedFd, OwnedFd) {
        let (mut master, mut slave) = (0, 0);
        // SAFETY: openpty with valid out pointers and no name, termios or size.
        let r = unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null(),
                std::ptr::null(),
            )
        };
        assert_eq!(r, 0, "openpty: {}", std::io::Error::last_os_error());
        // SAFETY: openpty returned two fresh fds that nothing else owns.
        unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) }
    }

    fn canonical(fd: BorrowedFd<'_>) -> bool {
        termios::tcgetattr(fd)
            .unwrap()
            .local_modes
            .contains(termios::LocalModes::ICANON)
    }

    #[test]
    fn raw_mode_is_undone_by_drop_and_by_a_panic() {
        let (_master, slave) = pty();
        assert!(canonical(slave.as_fd()));
        let guard = RawMode::enable(slave.as_fd()).unwrap();
        assert!(!canonical(slave.as_fd()));
        drop(guard);
        assert!(canonical(slave.as_fd()));

        // A panic on another thread while the guard is alive (and never dropped): the hook
        // restores the terminal.
        let guard = RawMode::enable(slave.as_fd()).unwrap();
        assert!(!canonical(slave.as_fd()));
        let joined = std::thread::spawn(|| panic!("deliberate panic in a test")).join();
        assert!(joined.is_err());
        assert!(canonical(slave.as_fd()));
        std::mem::forget(guard);
        *SAVED.lock().unwrap() = None;
    }

    #[test]
    fn size_of_a_pty() {
        let (_master, slave) = pty();
        let w = rustix::termios::Winsize {
            ws_row: 33,
            ws_col: 101,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        termios::tcsetwinsize(slave.as_fd(), w).unwrap();
        let s = size(slave.as_fd()).unwrap();
        assert_eq!((s.rows, s.cols), (33, 101));
    }
}
