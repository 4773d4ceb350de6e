//! The launcher in the field: its terminal, signals, capture, streams and exit codes.
//! Every terminal test runs pas-agent in a real terminal (tmux) and compares the terminal's
//! full state before and after (`Tmux::exit_code`, `Tmux::assert_terminal_restored`).

use std::process::Stdio;

use crate::common::{Sandbox, changed_paths, last_run, runs, stderr};
use crate::launcher_support::{
    PATIENCE, Tmux, alive, kill, read, run_args, running_launcher, sh_quote, stopped, wait_for,
};

const SIGHUP: i32 = 1;
const SIGINT: i32 = 2;
const SIGUSR1: i32 = 10;
const SIGUSR2: i32 = 12;
const SIGALRM: i32 = 14;
const SIGTERM: i32 = 15;

/// A realtime signal (SIGRTMIN + 2 with glibc).
fn realtime() -> i32 {
    libc::SIGRTMIN() + 2
}

fn bin() -> String {
    sh_quote(&crate::common::bin().to_string_lossy())
}

/// A stand-in agent that says it is ready and waits.
fn sleeper(sb: &Sandbox) {
    sb.stand_in("sleeper", "echo READY; exec sleep 600");
}

// ---- Item 1: every catchable signal is forwarded or ends the run cleanly ----

fn a_signal_ends_the_run_cleanly(no_pty: bool, signal: i32) {
    let sb = Sandbox::with_session();
    sleeper(&sb);
    let t = Tmux::start(&sb, &run_args(no_pty, "sleeper"), 80, 24);
    t.wait_screen("READY");
    let launcher = running_launcher(&sb);
    kill(launcher, signal);
    // The agent got it and died of it; the launcher says so, the terminal is as before.
    assert_eq!(
        t.exit_code(),
        128 + signal,
        "signal {signal}, no_pty {no_pty}"
    );
    let run = last_run(&sb);
    assert_eq!(run["state"], "finished", "signal {signal}: {run}");
    assert_eq!(run["signal"], signal, "signal {signal}: {run}");
    assert!(!alive(launcher));
}

#[test]
fn signals_the_launcher_does_not_use_reach_a_pty_agent_and_the_terminal_comes_back() {
    for signal in [SIGUSR1, SIGUSR2, SIGALRM, SIGHUP, SIGTERM, realtime()] {
        a_signal_ends_the_run_cleanly(false, signal);
    }
}

#[test]
fn signals_the_launcher_does_not_use_reach_a_no_pty_agent() {
    for signal in [SIGUSR1, SIGUSR2, SIGALRM, SIGHUP, SIGTERM, realtime()] {
        a_signal_ends_the_run_cleanly(true, signal);
    }
}

#[test]
fn every_other_signal_that_ends_a_program_is_forwarded_in_both_modes() {
    // The rest of the table's forwarded signals, each of which kills `sleep` by default.
    let others = [
        libc::SIGQUIT,
        libc::SIGILL,
        libc::SIGTRAP,
        libc::SIGABRT,
        libc::SIGFPE,
        libc::SIGPIPE,
        libc::SIGSTKFLT,
        libc::SIGXCPU,
        libc::SIGXFSZ,
        libc::SIGVTALRM,
        libc::SIGPROF,
        libc::SIGIO,
        libc::SIGPWR,
        libc::SIGSYS,
        libc::SIGRTMAX(),
    ];
    for signal in others {
        for no_pty in [false, true] {
            a_signal_ends_the_run_cleanly(no_pty, signal);
        }
    }
}

#[test]
fn a_message_signal_the_agent_handles_does_not_end_the_run() {
    let sb = Sandbox::with_session();
    sb.stand_in(
        "listener",
        "trap 'echo GOT-USR1' USR1\necho READY\nwhile :; do sleep 0.1; done",
    );
    let t = Tmux::start(&sb, &["run", "--", "listener"], 80, 24);
    t.wait_screen("READY");
    let launcher = running_launcher(&sb);
    kill(launcher, SIGUSR1);
    t.wait_screen("GOT-USR1");
    assert_eq!(last_run(&sb)["state"], "running");
    kill(launcher, SIGTERM);
    assert_eq!(t.exit_code(), 128 + SIGTERM);
}

#[test]
fn a_fault_signal_sent_with_kill_is_forwarded_not_fatal() {
    // SIGSEGV and SIGBUS from another process are messages like any other: the agent gets
    // them, the launcher records how it ended.
    for (signal, no_pty) in [(libc::SIGSEGV, false), (libc::SIGBUS, true)] {
        a_signal_ends_the_run_cleanly(no_pty, signal);
    }
}

#[test]
fn the_signal_table_covers_every_catchable_signal() {
    use pas_agent::launch::signals::{Action, TABLE, action, caught, realtime};
    for s in (1..=31).chain(realtime()) {
        if s == libc::SIGKILL || s == libc::SIGSTOP {
            continue;
        }
        assert!(
            TABLE.iter().any(|r| r.signal == s) || realtime().contains(&s),
            "signal {s} has no row"
        );
        for pty in [true, false] {
            let a = action(s, pty);
            // What is not caught keeps a default that neither kills the launcher nor leaves
            // the terminal raw.
            if a == Action::Default {
                assert!(
                    [
                        libc::SIGCHLD,
                        libc::SIGCONT,
                        libc::SIGWINCH,
                        libc::SIGTSTP,
                        libc::SIGTTIN,
                        libc::SIGTTOU
                    ]
                    .contains(&s),
                    "signal {s} would kill the launcher (pty {pty})"
                );
            }
            assert_eq!(
                caught(pty).contains(&s),
                !matches!(a, Action::Default | Action::Fault),
                "signal {s}"
            );
        }
    }
}

// ---- Item 2: the terminal is given back in every respect ----

/// Everything a TUI may turn on, printed in upper case only (the DEC graphics set it
/// selects would redraw lower-case letters).
const MODES_ON: &str = r"printf '\033[?1049h\033[?1h\033=\033[?25l\033[?2004h\033[?1000h\033[?1002h\033[?1003h\033[?1005h\033[?1006h\033[?1015h\033[?1004h\033[>1u\033[>4;2m\033[3;10r\033[4h\033[?6h\033[?7l\033[1;31;44m\033[5 q\033[22;0t\033(0\016\033]11;#102030\033\\\033]10;#a0b0c0\033\\\033]2;AGENT TITLE\033\\\033[?2026h'";

#[test]
fn modes_the_agent_left_on_are_undone_when_it_exits() {
    let sb = Sandbox::with_session();
    sb.stand_in("tui", &format!("{MODES_ON}\necho READY\nexit 3"));
    let t = Tmux::start(&sb, &["run", "--", "tui"], 80, 24);
    assert_eq!(t.exit_code(), 3);
}

#[test]
fn modes_are_undone_when_the_agent_is_killed() {
    // Killed through the launcher (SIGTERM, forwarded), and killed by SIGKILL from elsewhere.
    let sb = Sandbox::with_session();
    let pid_file = sb.tmp.path().join("agent-pid");
    sb.stand_in(
        "tui",
        &format!(
            "echo $$ > {}\n{MODES_ON}\necho READY\nexec sleep 600",
            pid_file.display()
        ),
    );
    let t = Tmux::start(&sb, &["run", "--", "tui"], 80, 24);
    t.wait_screen("READY");
    kill(running_launcher(&sb), SIGTERM);
    assert_eq!(t.exit_code(), 128 + SIGTERM);
    drop(t);
    let _ = std::fs::remove_file(&pid_file);
    let t = Tmux::start(&sb, &["run", "--", "tui"], 80, 24);
    t.wait_screen("READY");
    let agent: i32 = wait_for("the agent's pid", || read(&pid_file).trim().parse().ok());
    kill(agent, libc::SIGKILL);
    assert_eq!(t.exit_code(), 128 + libc::SIGKILL);
}

#[test]
fn a_suspended_run_gives_the_terminal_back_and_fg_restores_the_agents_screen() {
    let sb = Sandbox::with_session();
    sb.stand_in(
        "tui",
        "printf '\\033[?1049h\\033[?1000h\\033[?25l'\necho READY\nread -r x\nkill -STOP $$\necho RESUMED\nread -r y\nexit 4",
    );
    let t = Tmux::start(&sb, &["run", "--", "tui"], 80, 24);
    t.wait_screen("READY");
    let launcher = running_launcher(&sb);
    t.keys(&["go", "Enter"]);
    wait_for("the launcher to stop", || stopped(launcher).then_some(()));
    // While stopped, the user's terminal is the shell's: main screen, no mouse, cursor shown.
    let state = t.pane_state();
    for flag in ["alternate_on=0", "mouse_standard_flag=0", "cursor_flag=1"] {
        assert!(state.contains(flag), "{flag} while stopped: {state}");
    }
    kill(launcher, libc::SIGCONT);
    t.wait_screen("RESUMED");
    let state = t.pane_state();
    for flag in ["alternate_on=1", "mouse_standard_flag=1", "cursor_flag=0"] {
        assert!(state.contains(flag), "{flag} after fg: {state}");
    }
    t.keys(&["more", "Enter"]);
    assert_eq!(t.exit_code(), 4);
}

#[test]
fn sigtstp_to_a_pty_launcher_suspends_the_run_cleanly() {
    let sb = Sandbox::with_session();
    sb.stand_in(
        "tui",
        "printf '\\033[?1049h\\033[?1h'\necho READY\nread -r y\necho \"GOT $y\"\nexit 6",
    );
    let t = Tmux::start(&sb, &["run", "--", "tui"], 80, 24);
    t.wait_screen("READY");
    let launcher = running_launcher(&sb);
    kill(launcher, libc::SIGTSTP);
    wait_for("the launcher to stop", || stopped(launcher).then_some(()));
    let state = t.pane_state();
    assert!(state.contains("alternate_on=0"), "{state}");
    assert!(state.contains("keypad_cursor_flag=0"), "{state}");
    kill(launcher, libc::SIGCONT);
    wait_for("the launcher to go on", || {
        (!stopped(launcher)).then_some(())
    });
    t.keys(&["ON", "Enter"]);
    assert_eq!(t.exit_code(), 6);
    // It answered on its alternate screen, which is gone now: the capture has it.
    let capture = last_run(&sb)["capture"].as_str().unwrap().to_string();
    assert!(read(&sb.path(&capture).with_extension("txt")).contains("GOT ON"));
}

// ---- Item 3: the record completes whatever the user types ----

#[test]
fn ctrl_c_while_the_run_is_recorded_does_not_lose_its_git_facts() {
    for no_pty in [false, true] {
        let mut sb = Sandbox::with_session();
        let flag = sb.tmp.path().join("agent-done");
        let slow = sb.tmp.path().join("slow-git-started");
        // A git that is slow to report the status once the agent is done.
        wrap_git(
            &mut sb,
            &format!(
                "if [ -e {flag} ]; then case \" $* \" in *' status '*) touch {slow}; sleep 4;; esac; fi",
                flag = sh_quote(&flag.to_string_lossy()),
                slow = sh_quote(&slow.to_string_lossy()),
            ),
        );
        sb.stand_in(
            "worker",
            &format!(
                "echo one > made.txt\ngit add made.txt && git commit -qm 'agent commit'\ntouch {}\necho WORKED",
                sh_quote(&flag.to_string_lossy())
            ),
        );
        let t = Tmux::start(&sb, &run_args(no_pty, "worker"), 80, 24);
        wait_for("the slow git status", || slow.exists().then_some(()));
        t.keys(&["C-c"]);
        t.keys(&["C-c"]);
        t.keys(&["C-\\"]);
        assert_eq!(t.exit_code(), 0, "no_pty {no_pty}");
        let run = last_run(&sb);
        assert_eq!(run["state"], "finished");
        assert_eq!(run["head_after"], sb.git(&["rev-parse", "HEAD"]), "{run}");
        assert_eq!(run["commits"].as_array().map(Vec::len), Some(1), "{run}");
        assert_eq!(changed_paths(&run), ["made.txt"]);
    }
}

/// Puts a `git` on the sandbox's PATH that runs the shell code `first` and then the real git,
/// and makes pas-agent use the git CLI, so that every git it runs goes through `first`.
fn wrap_git(sb: &mut Sandbox, first: &str) {
    let out = std::process::Command::new("sh")
        .args(["-c", "command -v git"])
        .output()
        .unwrap();
    let real_git = String::from_utf8_lossy(&out.stdout).trim().to_string();
    sb.stand_in(
        "git",
        &format!("{first}\nexec {} \"$@\"", sh_quote(&real_git)),
    );
    sb.env.push(("PAS_AGENT_GIT".into(), "cli".into()));
}

// ---- Item 4: the capture does not depend on how output is chunked ----

#[test]
fn a_character_split_between_writes_is_captured_whole() {
    let sb = Sandbox::with_session();
    // `xéC─😀y`, written in two pieces cut after the first byte of `é`, then the same kind of
    // text with escape sequences in 1 to 5 byte pieces.
    sb.stand_in(
        "splitter",
        r#"printf 'x\303'; sleep 0.3; printf '\251C\342\224\200\360\237\230\200y\n'
for piece in 'a' '\303' '\251\033' '[1;3' '1m' '\342\224' '\200' 'B\033]0' ';t' '\303\257' 'tle\007' '\360\237' '\230\200' 'Z\033[0' 'm\n'; do printf '%b' "$piece"; sleep 0.05; done"#,
    );
    let t = Tmux::start(&sb, &["run", "--", "splitter"], 80, 24);
    assert_eq!(t.exit_code(), 0);
    let capture = last_run(&sb)["capture"].as_str().unwrap().to_string();
    let text = read(&sb.path(&capture).with_extension("txt"));
    assert_eq!(text, "xéC─😀y\naé─B😀Z\n");
    // And the text is what the screen makes of the raw capture in one piece.
    let ansi = std::fs::read(sb.path(&capture)).unwrap();
    let whole = pas_agent::launch::capture::ScreenText::render(&ansi, 80, 24);
    assert_eq!(whole, text);
}

// ---- Item 5: streams that are not terminals reach their destination ----

/// A program that reports which of its streams are terminals, writes to stdout and stderr,
/// and copies a line of stdin when stdin is not a terminal.
const PROBE: &str = r#"r=''; for fd in 0 1 2; do if [ -t $fd ]; then r="$r$fd=tty "; else r="$r$fd=other "; fi; done
echo "$r" > "$REPORT"
echo OUT-LINE
echo ERR-LINE >&2
if [ ! -t 0 ]; then IFS= read -r line; echo "IN:$line"; fi
exit 0"#;

#[test]
fn each_stream_that_is_not_a_terminal_reaches_its_destination() {
    // Redirections of the window's shell: the same command with and without pas-agent must
    // leave the same files and the same report.
    let cases = [
        "{cmd} 2>err.txt",
        "{cmd} >out.txt",
        "{cmd} >out.txt 2>err.txt",
        "{cmd} <in.txt",
        "{cmd} <in.txt 2>err.txt",
        "{cmd} 2>&1 >out.txt",
        "{cmd} | cat > out.txt",
        "{cmd} 2>&1 | cat > out.txt",
        // stdin and stdout the terminal, stderr a pipe
        "{ {cmd} 2>&1 1>&3 3>&- | cat > err.txt; } 3>&1",
    ];
    for redirect in cases {
        let outcome = |via_pas_agent: bool| {
            let sb = Sandbox::with_session();
            sb.write("in.txt", "INPUT-LINE\n");
            let probe = sb.stand_in("probe", PROBE);
            let report = sb.tmp.path().join("report");
            let prefix = if via_pas_agent {
                format!("{} run --no-checkpoint --no-export -- ", bin())
            } else {
                String::new()
            };
            let cmd = format!(
                "REPORT={} {prefix}{}",
                sh_quote(&report.to_string_lossy()),
                sh_quote(&probe.to_string_lossy())
            );
            let line = redirect.replace("{cmd}", &cmd);
            let t = Tmux::start_shell(&sb, &line, 100, 30);
            assert_eq!(t.exit_code(), 0, "{redirect}");
            let screen = t.screen();
            let on_screen: Vec<&str> = ["OUT-LINE", "ERR-LINE", "IN:INPUT-LINE"]
                .into_iter()
                .filter(|w| screen.contains(w))
                .collect();
            // pas-agent's own summary goes to its stderr too: leave it out.
            let files: Vec<String> = ["out.txt", "err.txt"]
                .iter()
                .map(|f| {
                    read(&sb.path(f))
                        .lines()
                        .filter(|l| !l.starts_with("pas-agent: "))
                        .map(|l| format!("{l}\n"))
                        .collect()
                })
                .collect();
            (read(&report), on_screen.join(","), files)
        };
        let without = outcome(false);
        let with = outcome(true);
        assert_eq!(
            with, without,
            "with `{redirect}`: with pas-agent, then without"
        );
    }
}

#[test]
fn the_agent_inherits_no_descriptor_of_the_launcher() {
    for no_pty in ["", "--no-pty "] {
        let sb = Sandbox::with_session();
        let list = sb.tmp.path().join("fds");
        let line = format!(
            "{} run {no_pty}-- sh -c {}",
            bin(),
            sh_quote(&format!(
                "exec ls /proc/self/fd > {}",
                sh_quote(&list.to_string_lossy())
            ))
        );
        let t = Tmux::start_shell(&sb, &line, 80, 24);
        assert_eq!(t.exit_code(), 0);
        // 0, 1, 2 and the one `ls` opens to read the directory.
        let fds: Vec<String> = read(&list).split_whitespace().map(String::from).collect();
        assert_eq!(fds, ["0", "1", "2", "3"], "{no_pty}");
    }
}

// ---- Item 11: exit codes and messages match the docs ----

#[test]
fn a_missing_interpreter_is_127_on_every_path_as_in_the_shells() {
    let sb = Sandbox::with_session();
    let script = sb.stand_in("badinterp", "");
    std::fs::write(&script, "#!/nonexistent/interp\necho never\n").unwrap();
    let bash = std::process::Command::new("bash")
        .arg("-c")
        .arg(script.to_string_lossy().as_ref())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    // bash 5.2 (and dash, zsh, fish) give 127: the interpreter was not found.
    assert_eq!(
        bash.code(),
        Some(127),
        "bash's own code for a bad interpreter"
    );

    let err = sb.fails(&["run", "--no-pty", "--", "badinterp"], 127);
    assert!(err.contains("bad interpreter /nonexistent/interp"), "{err}");
    let t = Tmux::start(&sb, &["run", "--", "badinterp"], 80, 24);
    assert_eq!(t.exit_code(), 127);
    t.wait_screen("bad interpreter");
    assert!(
        runs(&sb).is_empty(),
        "a program that did not start is not recorded"
    );
}

#[test]
fn run_without_a_session_exits_125_as_documented() {
    let sb = Sandbox::repo();
    sb.stand_in("agent-x", "exit 0");
    let err = sb.fails(&["run", "--", "agent-x"], 125);
    assert!(err.contains("no pas-agent session"), "{err}");
    // The docs say the same everywhere.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let hooks = std::fs::read_to_string(root.join("docs/hooks.md")).unwrap();
    assert!(!hooks.contains("fails with exit 3"), "docs/hooks.md");
    assert!(hooks.contains("exit code 125"), "docs/hooks.md");
}

#[test]
fn after_ctrl_c_the_summary_starts_on_a_line_of_its_own() {
    for no_pty in [false, true] {
        let sb = Sandbox::with_session();
        sleeper(&sb);
        let t = Tmux::start(&sb, &run_args(no_pty, "sleeper"), 80, 24);
        t.wait_screen("READY");
        t.keys(&["C-c"]);
        assert_eq!(t.exit_code(), 128 + SIGINT);
        let screen = t.wait_screen("pas-agent: sleeper was killed by signal 2");
        let line = screen
            .lines()
            .find(|l| l.contains("was killed by signal 2"))
            .unwrap();
        assert!(
            line.starts_with("pas-agent: "),
            "no_pty {no_pty}: the summary shares a line: {line:?}\n{screen}"
        );
        assert!(screen.contains("^C"), "{screen}");
    }
}

// ---- Item 12: a run stopped before its program started says so ----

#[test]
fn a_signal_before_the_agent_started_is_not_recorded_as_a_run() {
    // SIGSEGV sent with kill: a fault signal, caught outside the event stream (by the fault
    // handler), stops the run the same way.
    for signal in [SIGTERM, libc::SIGSEGV] {
        stopped_before_the_agent_started(signal);
    }
}

fn stopped_before_the_agent_started(signal: i32) {
    let sb = Sandbox::with_session();
    let started = sb.tmp.path().join("agent-started");
    sb.stand_in(
        "agent-y",
        &format!("touch {}", sh_quote(&started.to_string_lossy())),
    );
    // Hold the machine-wide registry's lock: the launcher, having written the `running`
    // record, waits for it before it starts the agent.
    let state = sb.home.join(".local/state/pas-agent");
    std::fs::create_dir_all(&state).unwrap();
    let held = sb.tmp.path().join("held");
    let mut holder = std::process::Command::new("flock")
        .arg(state.join("runs.lock"))
        .args([
            "-c",
            &format!("touch {}; sleep 60", sh_quote(&held.to_string_lossy())),
        ])
        .spawn()
        .expect("flock");
    wait_for("the lock to be held", || held.exists().then_some(()));
    let mut cmd = sb.cmd();
    cmd.args(["run", "--", "agent-y"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = cmd.spawn().unwrap();
    let launcher = running_launcher(&sb);
    kill(launcher, signal);
    // Let the launcher go on: it must not start the agent now.
    std::thread::sleep(std::time::Duration::from_millis(200));
    let _ = holder.kill();
    let _ = holder.wait();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(128 + signal), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("before agent-y started: it was not started"),
        "{}",
        stderr(&out)
    );
    assert!(!started.exists(), "the agent was started");
    assert!(runs(&sb).is_empty(), "{:?}", runs(&sb));
    // Nothing is left for the next command to call abandoned.
    let out = sb.run(&["status"]);
    assert!(!stderr(&out).contains("abandoned"), "{}", stderr(&out));
    let _ = PATIENCE;
}

#[test]
fn a_second_signal_ends_a_preparation_that_is_stuck() {
    let mut sb = Sandbox::with_session();
    let started = sb.tmp.path().join("agent-started");
    let slow = sb.tmp.path().join("slow-git-started");
    let finished = sb.tmp.path().join("slow-git-finished");
    // A git status that hangs (for a minute) while the run is prepared.
    wrap_git(
        &mut sb,
        &format!(
            "case \" $* \" in *' status '*) touch {slow}; sleep 60; touch {finished};; esac",
            slow = sh_quote(&slow.to_string_lossy()),
            finished = sh_quote(&finished.to_string_lossy()),
        ),
    );
    sb.stand_in(
        "agent-z",
        &format!("touch {}", sh_quote(&started.to_string_lossy())),
    );
    let mut cmd = sb.cmd();
    cmd.args(["run", "--", "agent-z"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let launcher = i32::try_from(child.id()).unwrap();
    wait_for("the stuck git status", || slow.exists().then_some(()));
    // Signals of one kind that arrive together count once: send until it is gone.
    wait_for("pas-agent to exit", || {
        if child.try_wait().unwrap().is_some() {
            return Some(());
        }
        kill(launcher, SIGINT);
        None
    });
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(128 + SIGINT), "{}", stderr(&out));
    assert!(
        !finished.exists(),
        "pas-agent waited for the stuck git status"
    );
    assert!(
        stderr(&out).contains("the agent was not started"),
        "{}",
        stderr(&out)
    );
    assert!(!started.exists());
}
