//! Helpers for the launcher tests: isolated commands other than pas-agent, a real terminal
//! (tmux on its own socket), polling, and reading run records.

#![allow(dead_code)]

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::{Sandbox, bin, runs};

/// How long any wait may take before the test fails: generous, since CI has two cores and the
/// real agents start slowly. Nothing is asserted about speed.
pub const PATIENCE: Duration = Duration::from_secs(120);

/// `program` with the sandbox's isolated environment (HOME, XDG, git config, PATH), in the
/// work directory, stdin closed.
pub fn isolated(sb: &Sandbox, program: impl AsRef<OsStr>) -> Command {
    let template = sb.cmd();
    let mut cmd = Command::new(program);
    cmd.current_dir(&sb.work).stdin(Stdio::null());
    for (k, v) in template.get_envs() {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    cmd
}

/// Polls `check` every 50 ms until it returns `Some`, failing with `what` after [`PATIENCE`].
pub fn wait_for<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = check() {
            return v;
        }
        assert!(start.elapsed() < PATIENCE, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits until the last run is `running` and returns its launcher pid.
pub fn running_launcher(sb: &Sandbox) -> i32 {
    wait_for("a running run record", || {
        let run = runs(sb).pop()?;
        (run["state"] == "running").then(|| run["launcher_pid"].as_i64())?
    }) as i32
}

/// Sends `signal` to `pid`.
pub fn kill(pid: i32, signal: i32) {
    // SAFETY: plain kill(2).
    let r = unsafe { libc::kill(pid, signal) };
    assert_eq!(
        r,
        0,
        "kill({pid}, {signal}): {}",
        std::io::Error::last_os_error()
    );
}

/// Whether `pid` exists (and is not a zombie).
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// Single-quotes a string for sh.
pub fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// A tmux server on the sandbox's own socket, running one command in a window of a given
/// size: a real terminal for pas-agent. The command's exit status is written to `exit.txt`.
pub struct Tmux {
    socket: PathBuf,
    pub exit_file: PathBuf,
    env: Vec<(String, Option<String>)>,
    work: PathBuf,
}

impl Tmux {
    /// Starts `pas-agent <args>` (shell-quoted) in a `cols`×`rows` window, in `dir`, with the
    /// sandbox's environment plus `extra_env`.
    pub fn start(sb: &Sandbox, args: &[&str], cols: u16, rows: u16) -> Tmux {
        // A fresh socket per server: a new server on the socket of one just killed can race
        // its shutdown ("server exited unexpectedly").
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let socket = sb.tmp.path().join(format!("tmux-{n}.sock"));
        let exit_file = sb.tmp.path().join(format!("exit-{n}.txt"));
        let template = isolated(sb, "tmux");
        let env = template
            .get_envs()
            .map(|(k, v)| {
                (
                    k.to_string_lossy().into_owned(),
                    v.map(|v| v.to_string_lossy().into_owned()),
                )
            })
            .collect();
        let t = Tmux {
            socket,
            exit_file,
            env,
            work: sb.work.clone(),
        };
        let mut line = sh_quote(&bin().to_string_lossy());
        for a in args {
            line.push(' ');
            line.push_str(&sh_quote(a));
        }
        // The terminal's settings before and after, to check pas-agent restores them.
        let stty = |name: &str| sh_quote(&t.exit_file.with_extension(name).to_string_lossy());
        let script = format!(
            "stty -g > {before}; {line}; code=$?; stty -g > {after}; echo $code > {0}.tmp && mv {0}.tmp {0}; sleep 600",
            sh_quote(&t.exit_file.to_string_lossy()),
            before = stty("before"),
            after = stty("after"),
        );
        let out = t
            .cmd()
            .args(["-f", "/dev/null", "new-session", "-d"])
            .args(["-x", &cols.to_string(), "-y", &rows.to_string()])
            .args(["sh", "-c", &script])
            .output()
            .expect("run tmux");
        assert!(
            out.status.success(),
            "tmux: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        t
    }

    fn cmd(&self) -> Command {
        let mut cmd = Command::new("tmux");
        cmd.current_dir(&self.work).stdin(Stdio::null());
        for (k, v) in &self.env {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        cmd.arg("-S").arg(&self.socket);
        cmd
    }

    fn tmux(&self, args: &[&str]) -> Output {
        let out = self.cmd().args(args).output().expect("run tmux");
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// The visible screen, as text.
    pub fn screen(&self) -> String {
        String::from_utf8_lossy(&self.tmux(&["capture-pane", "-p", "-J"]).stdout).into_owned()
    }

    /// Waits until the screen contains `text`; returns the screen.
    pub fn wait_screen(&self, text: &str) -> String {
        let start = Instant::now();
        loop {
            let last = self.screen();
            if last.contains(text) {
                return last;
            }
            assert!(
                start.elapsed() < PATIENCE,
                "timed out waiting for {text:?} on the screen:\n{last}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Types keys (tmux key names such as `C-c`, `Enter`, or literal text).
    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys"];
        args.extend_from_slice(keys);
        self.tmux(&args);
    }

    /// Resizes the window.
    pub fn resize(&self, cols: u16, rows: u16) {
        self.tmux(&[
            "resize-window",
            "-x",
            &cols.to_string(),
            "-y",
            &rows.to_string(),
        ]);
    }

    /// Waits for pas-agent to exit and returns its exit status. Also checks that the terminal's
    /// settings after pas-agent are those from before it (raw mode was undone).
    pub fn exit_code(&self) -> i32 {
        let text = wait_for("pas-agent to exit", || {
            std::fs::read_to_string(&self.exit_file).ok()
        });
        let before = read(&self.exit_file.with_extension("before"));
        let after = read(&self.exit_file.with_extension("after"));
        assert!(!before.trim().is_empty(), "stty -g printed nothing");
        assert_eq!(before, after, "pas-agent left the terminal changed");
        text.trim().parse().expect("exit status")
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd().arg("kill-server").output();
    }
}

/// A path's text, or "".
pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}
