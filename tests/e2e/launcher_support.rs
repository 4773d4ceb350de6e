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
        let mut line = sh_quote(&bin().to_string_lossy());
        for a in args {
            line.push(' ');
            line.push_str(&sh_quote(a));
        }
        Tmux::start_shell(sb, &line, cols, rows)
    }

    /// Starts a shell command line (`sh -c`; redirections allowed) in a `cols`×`rows` window.
    /// Around it the window's shell records the terminal's full state (see [`PANE_STATE`]
    /// and `stty -g`) before, and after it: [`Tmux::exit_code`] compares them.
    pub fn start_shell(sb: &Sandbox, line: &str, cols: u16, rows: u16) -> Tmux {
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
        let file = |name: &str| sh_quote(&t.exit_file.with_extension(name).to_string_lossy());
        // A Ctrl-C at the window's terminal (after pas-agent gave it back) must not end this
        // shell; a trap (unlike an ignored signal) is not inherited by pas-agent. After the
        // command: its exit status, a marker (capitals and digits, drawn alike in every
        // character set) once all its output is on the screen, and a line read for the paste
        // probe.
        let script = format!(
            "trap : INT QUIT\nstty -g > {before}; tmux display -p -t \"$TMUX_PANE\" {fmt} > {state}\n{line}\ncode=$?; stty -g > {after}; echo $code > {0}.tmp && mv {0}.tmp {0}\nprintf '%s\\n' {marker}\nwhile IFS= read -r pasted; do [ -n \"$pasted\" ] && break; done; printf '%s' \"$pasted\" > {pasted}\nsleep 600",
            sh_quote(&t.exit_file.to_string_lossy()),
            before = file("before"),
            after = file("after"),
            state = file("state"),
            pasted = file("pasted"),
            fmt = sh_quote(PANE_STATE),
            marker = sh_quote(DONE_MARKER),
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

    /// Waits for pas-agent to exit and returns its exit status. Also checks that it gave the
    /// terminal back exactly as it found it (see [`Tmux::assert_terminal_restored`]).
    pub fn exit_code(&self) -> i32 {
        let code = self.exit_code_only();
        self.assert_terminal_restored();
        code
    }

    /// Waits for the command to exit and returns its exit status, without checking the
    /// terminal.
    pub fn exit_code_only(&self) -> i32 {
        let text = wait_for("pas-agent to exit", || {
            std::fs::read_to_string(&self.exit_file).ok()
        });
        text.trim().parse().expect("exit status")
    }

    /// The terminal after the command is the terminal before it, in every respect tmux shows:
    /// its settings (`stty -g`), the pane's modes ([`PANE_STATE`]: alternate screen, cursor,
    /// keypad, mouse reporting and encodings, insert, wrap, origin, scroll region, colours),
    /// the attributes and character set of text printed afterwards (the marker line is plain
    /// text in the default rendition), and bracketed paste (a paste reaches the shell without
    /// bracket sequences).
    pub fn assert_terminal_restored(&self) {
        self.exit_code_only();
        let before = read(&self.exit_file.with_extension("before"));
        let after = read(&self.exit_file.with_extension("after"));
        assert!(!before.trim().is_empty(), "stty -g printed nothing");
        assert_eq!(before, after, "pas-agent left the terminal's settings changed");
        self.wait_screen(DONE_MARKER);
        let state_before = read(&self.exit_file.with_extension("state"));
        assert!(!state_before.trim().is_empty(), "tmux display printed nothing");
        let state_after = self.pane_state();
        let before = normal_state(&state_before);
        let after = normal_state(&state_after);
        let diff: Vec<String> = before
            .iter()
            .zip(after.iter())
            .filter(|(b, a)| b != a)
            .map(|(b, a)| format!("{b} became {a}"))
            .collect();
        assert!(diff.is_empty(), "pas-agent left the terminal changed: {diff:?}\n{}", self.screen());
        let rendered = String::from_utf8_lossy(&self.tmux(&["capture-pane", "-p", "-e"]).stdout)
            .into_owned();
        let line = rendered
            .lines()
            .find(|l| l.contains("PAS-AFTER"))
            .unwrap_or_default()
            .trim_end()
            .to_string();
        assert_eq!(
            line, DONE_MARKER,
            "text after pas-agent is not drawn plainly (attributes or character set left on)"
        );
        self.tmux(&["set-buffer", "PASTE-PROBE"]);
        self.tmux(&["paste-buffer", "-p"]);
        self.keys(&["Enter"]);
        let pasted = wait_for("the paste probe", || {
            std::fs::read_to_string(self.exit_file.with_extension("pasted")).ok()
        });
        assert_eq!(pasted, "PASTE-PROBE", "bracketed paste was left on");
    }

    /// The pane's modes now, as [`PANE_STATE`] prints them.
    pub fn pane_state(&self) -> String {
        String::from_utf8_lossy(&self.tmux(&["display", "-p", PANE_STATE]).stdout).into_owned()
    }
}

/// [`PANE_STATE`]'s `name=value` pairs, with the scroll region's bottom counted from the
/// pane's last line (a resized window moves it) and the height itself left out.
fn normal_state(state: &str) -> Vec<String> {
    let height: i64 = state
        .split_whitespace()
        .find_map(|p| p.strip_prefix("pane_height="))
        .and_then(|h| h.parse().ok())
        .unwrap_or(0);
    state
        .split_whitespace()
        .filter(|p| !p.starts_with("pane_height="))
        .map(|p| match p.strip_prefix("scroll_region_lower=") {
            Some(v) => format!(
                "scroll_region_lower=last{:+}",
                v.parse::<i64>().unwrap_or(0) - (height - 1)
            ),
            None => p.to_string(),
        })
        .collect()
}

/// The line the window's shell prints after the command, once its output is on the screen.
pub const DONE_MARKER: &str = "PAS-AFTER-1 probe_xyz";

/// The pane state tmux (3.3) shows as formats (`man tmux`, FORMATS): every mode a program can
/// leave on that tmux follows.
pub const PANE_STATE: &str = "alternate_on=#{alternate_on} cursor_flag=#{cursor_flag} \
keypad_cursor_flag=#{keypad_cursor_flag} keypad_flag=#{keypad_flag} mouse_any_flag=#{mouse_any_flag} \
mouse_standard_flag=#{mouse_standard_flag} mouse_button_flag=#{mouse_button_flag} \
mouse_all_flag=#{mouse_all_flag} mouse_sgr_flag=#{mouse_sgr_flag} mouse_utf8_flag=#{mouse_utf8_flag} \
insert_flag=#{insert_flag} wrap_flag=#{wrap_flag} origin_flag=#{origin_flag} \
scroll_region_upper=#{scroll_region_upper} scroll_region_lower=#{scroll_region_lower} \
pane_fg=#{pane_fg} pane_bg=#{pane_bg} pane_height=#{pane_height}";

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd().arg("kill-server").output();
    }
}

/// A path's text, or "".
pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}
