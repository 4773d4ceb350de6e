//! The little of tmux that freezing and restoring need: where a run is (`$TMUX`, `$TMUX_PANE`
//! and `display-message`), and a window of a named session to restore it in (`new-session`,
//! `new-window`), through the `tmux` command of the server the process runs in (`man tmux`:
//! COMMANDS, FORMATS; checked: tmux 3.3a).
//!
//! Nothing here fails a run: a tmux that cannot be asked is no place.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::registry::{Size, TmuxPlace};

/// A tmux server, named by its socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    /// The socket path (`-S`).
    pub socket: PathBuf,
}

/// The tmux server and pane this process runs in, from `$TMUX` (`<socket>,<pid>,<session>`)
/// and `$TMUX_PANE` (`%3`); `None` outside tmux.
pub fn here() -> Option<(Server, String)> {
    let tmux = std::env::var("TMUX").ok().filter(|t| !t.is_empty())?;
    let socket = tmux.split(',').next().filter(|s| !s.is_empty())?;
    let pane = std::env::var("TMUX_PANE")
        .ok()
        .filter(|p| p.starts_with('%'))?;
    Some((
        Server {
            socket: PathBuf::from(socket),
        },
        pane,
    ))
}

/// What [`Server::place`] asks tmux for, tab-separated.
const PLACE_FORMAT: &str = "#{session_name}\t#{window_name}\t#{window_index}\t#{pane_index}\t#{pane_width}\t#{pane_height}";

impl Server {
    fn cmd(&self) -> Command {
        let mut cmd = Command::new("tmux");
        cmd.arg("-S")
            .arg(&self.socket)
            .stdin(Stdio::null())
            .stderr(Stdio::piped());
        cmd
    }

    /// Runs `tmux args…`; its standard output, or its error message.
    fn run(&self, args: &[&str]) -> Result<String, String> {
        let out = self
            .cmd()
            .args(args)
            .output()
            .map_err(|e| format!("tmux could not be started: {e}"))?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
            Err(if err.is_empty() {
                format!("`tmux {}` failed ({})", args.join(" "), out.status)
            } else {
                format!("tmux: {err}")
            })
        }
    }

    /// Where pane `pane` is (session, window, indexes) and its size; `None` when tmux cannot
    /// be asked or the pane is gone.
    pub fn place(&self, pane: &str) -> Option<(TmuxPlace, Size)> {
        let out = self
            .run(&["display-message", "-p", "-t", pane, PLACE_FORMAT])
            .ok()?;
        let line = out.lines().next()?;
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() != 6 {
            return None;
        }
        let place = TmuxPlace {
            socket: self.socket.to_string_lossy().into_owned(),
            pane: pane.to_string(),
            session: Some(f[0].to_string()).filter(|s| !s.is_empty()),
            window: Some(f[1].to_string()).filter(|s| !s.is_empty()),
            window_index: f[2].parse().ok(),
            pane_index: f[3].parse().ok(),
        };
        let size = Size {
            cols: f[4].parse().ok()?,
            rows: f[5].parse().ok()?,
        };
        Some((place, size))
    }

    /// Whether a session named exactly `name` exists.
    pub fn has_session(&self, name: &str) -> bool {
        self.run(&["has-session", "-t", &format!("={name}")])
            .is_ok()
    }

    /// Starts `command` (a shell command line) in a new window named `window` of session
    /// `session` (created, `size` large, when it does not exist), in `cwd`, without switching
    /// to it; the window's pane stays after the command exits ([`Server::release`] undoes
    /// that), so that a failed start can be read. Returns the new pane's id.
    ///
    /// Errors: tmux's message.
    pub fn open_window(
        &self,
        session: &str,
        window: &str,
        cwd: &Path,
        size: Option<Size>,
        command: &str,
    ) -> Result<String, String> {
        let cwd = cwd.to_string_lossy();
        let out = if self.has_session(session) {
            let target = format!("={session}:");
            self.run(&[
                "new-window",
                "-d",
                "-P",
                "-F",
                "#{pane_id}",
                "-t",
                &target,
                "-n",
                window,
                "-c",
                &cwd,
                command,
            ])?
        } else {
            let (cols, rows) = size.map_or((80, 24), |s| (s.cols.max(20), s.rows.max(5)));
            let (cols, rows) = (cols.to_string(), rows.to_string());
            self.run(&[
                "new-session",
                "-d",
                "-P",
                "-F",
                "#{pane_id}",
                "-s",
                session,
                "-n",
                window,
                "-c",
                &cwd,
                "-x",
                &cols,
                "-y",
                &rows,
                command,
            ])?
        };
        let pane = out.trim().to_string();
        if !pane.starts_with('%') {
            return Err(format!(
                "tmux did not name the new pane (it printed {pane:?})"
            ));
        }
        // A pane whose command fails at once stays, for its message to be read.
        let _ = self.run(&["set-option", "-p", "-t", &pane, "remain-on-exit", "on"]);
        Ok(pane)
    }

    /// Lets pane `pane` close when its command exits again (undoes what
    /// [`Server::open_window`] set).
    pub fn release(&self, pane: &str) {
        let _ = self.run(&["set-option", "-p", "-t", pane, "remain-on-exit", "off"]);
        // A command that already exited left the pane dead: close it now.
        if self.pane_dead(pane) == Some(true) {
            self.kill_pane(pane);
        }
    }

    /// Whether pane `pane`'s command has exited (`Some(true)`), still runs (`Some(false)`), or
    /// the pane cannot be found (`None`).
    pub fn pane_dead(&self, pane: &str) -> Option<bool> {
        let out = self
            .run(&["display-message", "-p", "-t", pane, "#{pane_dead}"])
            .ok()?;
        Some(out.trim() == "1")
    }

    /// The text on pane `pane`'s screen (empty when it cannot be read).
    pub fn screen(&self, pane: &str) -> String {
        self.run(&["capture-pane", "-p", "-J", "-t", pane])
            .unwrap_or_default()
    }

    /// Closes pane `pane` (and its window when it is the last one).
    pub fn kill_pane(&self, pane: &str) {
        let _ = self.run(&["kill-pane", "-t", pane]);
    }
}

/// `s` as one word for `sh`: single-quoted unless it is plain.
pub fn sh_word(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_quoted_for_sh() {
        assert_eq!(sh_word("abc-1.2"), "abc-1.2");
        assert_eq!(sh_word("a b"), "'a b'");
        assert_eq!(sh_word("it's"), "'it'\\''s'");
        assert_eq!(sh_word(""), "''");
    }
}
