//! The launcher with stand-in agents (shell scripts on PATH): a real terminal (tmux), real
//! signals, real exit codes, a launcher killed with SIGKILL, the machine-wide registry.

use std::process::Stdio;

use crate::common::{Sandbox, changed_paths, last_run, runs, stderr};
use crate::launcher_support::{Tmux, alive, kill, read, running_launcher, stopped, wait_for};

const SIGHUP: i32 = 1;
const SIGINT: i32 = 2;
const SIGQUIT: i32 = 3;
const SIGKILL: i32 = 9;
const SIGTERM: i32 = 15;

/// A stand-in TUI: prints its window size at start and on every SIGWINCH, echoes lines, says
/// when Ctrl-C reached it, exits 7 on `quit`.
///
/// bash installs its SIGWINCH handler with SA_RESTART, so a `read` without a timeout would
/// run the WINCH trap only after the next whole line; `read -t 1` lets it run within a second,
/// as a real TUI redraws at once. (The terminal is in canonical mode: a timeout never splits a
/// typed line.)
const TUI: &str = r#"
trap 'echo "resized to $(stty size)"' WINCH
trap 'echo "agent got SIGINT"' INT
printf '\033[1;31mred\033[0m size %s\n' "$(stty size)"
echo "ready"
while :; do
  if read -r -t 1 line; then
    echo "line: $line"
    [ "$line" = quit ] && exit 7
  fi
done
"#;

#[test]
fn pty_gives_the_agent_the_window_size_resizes_keys_and_a_clean_capture() {
    let sb = Sandbox::with_session();
    sb.stand_in(
        "tui",
        &format!("exec bash -c {}", crate::launcher_support::sh_quote(TUI)),
    );
    let t = Tmux::start(&sb, &["run", "--", "tui"], 91, 27);
    t.wait_screen("ready");
    assert!(t.screen().contains("size 27 91"), "{}", t.screen());
    t.resize(120, 40);
    // The resize travels tmux → launcher → pty → agent while keys take another path: wait for
    // it to arrive before typing, so the two cannot overtake each other.
    t.wait_screen("resized to 40 120");
    t.keys(&["hello", "Enter"]);
    let screen = t.wait_screen("line: hello");
    // Raw mode: the keys are echoed once, by the agent's terminal, not also by the user's.
    assert_eq!(screen.matches("hello").count(), 2, "{screen}");
    t.keys(&["quit", "Enter"]);
    assert_eq!(t.exit_code(), 7);
    let screen = t.wait_screen("exited 7");
    assert!(screen.contains("run #1"), "{screen}");

    let run = last_run(&sb);
    assert_eq!(run["state"], "finished");
    assert_eq!(run["exit_code"], 7);
    let capture = run["capture"].as_str().expect("capture path");
    let id = run["id"].as_str().unwrap();
    assert_eq!(capture, format!(".pas-agent/runs/{id}/capture.ansi"));
    let ansi = read(&sb.path(capture));
    assert!(ansi.contains("\u{1b}[1;31mred\u{1b}[0m"), "{ansi:?}");
    let text = read(&sb.path(&capture.replace("capture.ansi", "capture.txt")));
    assert!(text.contains("red size 27 91\n"), "{text:?}");
    assert!(text.contains("resized to 40 120"), "{text:?}");
    assert!(text.contains("line: quit"), "{text:?}");
    assert!(!text.contains('\u{1b}') && !text.contains('\r'), "{text:?}");
    // The capture is private and ignored by git.
    assert_eq!(
        sb.git(&["status", "--porcelain", "--", ".pas-agent/runs"]),
        ""
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(sb.path(capture))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
}

#[test]
fn ctrl_c_reaches_the_agent_and_the_launcher_carries_on() {
    let sb = Sandbox::with_session();
    sb.stand_in(
        "tui",
        &format!("exec bash -c {}", crate::launcher_support::sh_quote(TUI)),
    );
    let t = Tmux::start(&sb, &["run", "--", "tui"], 80, 24);
    t.wait_screen("ready");
    t.keys(&["C-c"]);
    t.wait_screen("agent got SIGINT");
    // The launcher is still there: the agent keeps reading its keys.
    t.keys(&["after", "Enter"]);
    t.wait_screen("line: after");
    t.keys(&["quit", "Enter"]);
    assert_eq!(t.exit_code(), 7);
    let run = last_run(&sb);
    assert_eq!(run["state"], "finished");
    assert_eq!(run["exit_code"], 7);
}

#[test]
fn ctrl_c_that_kills_the_agent_gives_130_and_a_record() {
    let sb = Sandbox::with_session();
    sb.stand_in("sleeper", "echo ready; exec sleep 600");
    let t = Tmux::start(&sb, &["run", "--", "sleeper"], 80, 24);
    t.wait_screen("ready");
    t.keys(&["C-c"]);
    assert_eq!(t.exit_code(), 130);
    let run = last_run(&sb);
    assert_eq!(run["state"], "finished");
    assert_eq!(run["signal"], SIGINT);
    assert_eq!(run["exit_code"], serde_json::Value::Null);
    t.wait_screen("was killed by signal 2");
}

#[test]
fn signals_sent_to_a_pty_launcher_reach_the_agent() {
    for signal in [SIGTERM, SIGHUP, SIGQUIT] {
        let sb = Sandbox::with_session();
        sb.stand_in("sleeper", "echo ready; exec sleep 600");
        let t = Tmux::start(&sb, &["run", "--", "sleeper"], 80, 24);
        t.wait_screen("ready");
        let pid = running_launcher(&sb);
        kill(pid, signal);
        assert_eq!(t.exit_code(), 128 + signal, "signal {signal}");
        let run = last_run(&sb);
        assert_eq!(run["state"], "finished", "signal {signal}");
        assert_eq!(run["signal"], signal);
    }
}

#[test]
fn an_agent_that_handles_sigterm_decides_the_exit_code() {
    let sb = Sandbox::with_session();
    sb.stand_in(
        "careful",
        "trap 'echo agent saw TERM; exit 3' TERM\necho ready\nwhile :; do sleep 0.1; done",
    );
    let t = Tmux::start(&sb, &["run", "--", "careful"], 80, 24);
    t.wait_screen("ready");
    kill(running_launcher(&sb), SIGTERM);
    assert_eq!(t.exit_code(), 3);
    let text = read(&sb.path(last_run(&sb)["capture"].as_str().unwrap()));
    assert!(text.contains("agent saw TERM"), "{text}");
    assert_eq!(last_run(&sb)["exit_code"], 3);
}

#[test]
fn an_agent_that_ignores_sigterm_is_killed_after_the_grace_period() {
    let sb = Sandbox::with_session();
    sb.stand_in(
        "stubborn",
        "trap '' TERM HUP\necho ready\nwhile :; do sleep 0.1; done",
    );
    let t = Tmux::start(&sb, &["run", "--", "stubborn"], 80, 24);
    t.wait_screen("ready");
    kill(running_launcher(&sb), SIGTERM);
    assert_eq!(t.exit_code(), 128 + SIGKILL);
    assert_eq!(last_run(&sb)["signal"], SIGKILL);
}

#[test]
fn an_agent_that_suspends_itself_suspends_the_launcher_and_fg_resumes_both() {
    let sb = Sandbox::with_session();
    sb.stand_in(
        "suspender",
        "trap 'echo agent continued' CONT\necho ready\nread -r x\nkill -STOP $$\necho after stop\nread -r y\necho \"got $y\"\nexit 5",
    );
    let t = Tmux::start(&sb, &["run", "--", "suspender"], 80, 24);
    t.wait_screen("ready");
    let launcher = running_launcher(&sb);
    t.keys(&["go", "Enter"]);
    // The agent stopped: the launcher stops too and the terminal is the user's again.
    wait_for("the launcher to stop", || stopped(launcher).then_some(()));
    kill(launcher, 18); // SIGCONT, as the shell's `fg` sends
    t.wait_screen("after stop");
    t.keys(&["more", "Enter"]);
    t.wait_screen("got more");
    assert_eq!(t.exit_code(), 5);
    assert_eq!(last_run(&sb)["exit_code"], 5);
}

#[test]
fn no_pty_flag_under_a_terminal_runs_with_inherited_stdio_and_no_capture() {
    let sb = Sandbox::with_session();
    sb.stand_in("tty", "if [ -t 0 ]; then echo stdin-is-tty; fi; exit 4");
    let t = Tmux::start(&sb, &["run", "--no-pty", "--", "tty"], 80, 24);
    assert_eq!(t.exit_code(), 4);
    t.wait_screen("stdin-is-tty");
    let run = last_run(&sb);
    assert_eq!(run["capture"], serde_json::Value::Null);
    assert!(!sb.path(".pas-agent/runs").exists());
}

#[test]
fn capture_is_cut_at_the_limit() {
    let sb = Sandbox::with_session();
    sb.stand_in(
        "chatty",
        "i=0; while [ $i -lt 2000 ]; do echo \"line $i of chatter\"; i=$((i+1)); done",
    );
    let t = Tmux::start(&sb, &["run", "--", "chatty"], 80, 24);
    assert_eq!(t.exit_code(), 0);
    drop(t);
    // Again with a limit, through the environment.
    let mut sb = sb;
    sb.env
        .push(("PAS_AGENT_CAPTURE_LIMIT".into(), "1000".into()));
    let t = Tmux::start(&sb, &["run", "--", "chatty"], 80, 24);
    assert_eq!(t.exit_code(), 0);
    let all = runs(&sb);
    let first = read(
        &sb.path(all[0]["capture"].as_str().unwrap())
            .with_extension("txt"),
    );
    let cut = read(
        &sb.path(all[1]["capture"].as_str().unwrap())
            .with_extension("txt"),
    );
    assert!(first.contains("line 1999 of chatter"), "{}", first.len());
    assert!(cut.contains("capture cut at 1000 bytes"), "{cut}");
    assert!(cut.len() < 1200, "{}", cut.len());
}

/// Runs pas-agent without a terminal (stdio piped), returning the child.
fn spawn_plain(sb: &Sandbox, args: &[&str]) -> std::process::Child {
    let mut cmd = sb.cmd();
    cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd.spawn().expect("spawn pas-agent")
}

#[test]
fn plain_mode_forwards_signals_sent_to_the_launcher() {
    for signal in [SIGTERM, SIGHUP, SIGINT, SIGQUIT] {
        let sb = Sandbox::with_session();
        let marker = sb.tmp.path().join("agent-pid");
        sb.stand_in(
            "sleeper",
            &format!("echo $$ > {}\nexec sleep 600", marker.display()),
        );
        let child = spawn_plain(&sb, &["run", "--", "sleeper"]);
        let pid = running_launcher(&sb);
        wait_for("the agent's pid", || std::fs::read_to_string(&marker).ok());
        kill(pid, signal);
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(128 + signal),
            "signal {signal}: {}",
            stderr(&out)
        );
        let run = last_run(&sb);
        assert_eq!(run["state"], "finished");
        assert_eq!(run["signal"], signal);
        assert_eq!(
            run["capture"],
            serde_json::Value::Null,
            "no capture without a terminal"
        );
    }
}

#[test]
fn exit_codes_of_the_agent_and_of_the_launcher() {
    let sb = Sandbox::with_session();
    sb.stand_in("fails", "echo out; echo err >&2; exit 42");
    let out = sb.run(&["run", "--", "fails"]);
    assert_eq!(out.status.code(), Some(42));
    assert_eq!(crate::common::stdout(&out), "out\n");
    assert!(stderr(&out).contains("err\n"));
    assert_eq!(last_run(&sb)["exit_code"], 42);

    let err = sb.fails(&["run", "--", "no-such-program-here"], 127);
    assert!(err.contains("not found"), "{err}");
    let path = sb.path("not-exec.sh");
    std::fs::write(&path, "#!/bin/sh\nexit 0\n").unwrap();
    sb.fails(&["run", "--", "./not-exec.sh"], 126);
    assert_eq!(runs(&sb).len(), 1, "failed starts leave no record");

    sb.stand_in("codex", "exit 0");
    let err = sb.fails(&["run", "codex", "--resume"], 125);
    assert!(err.contains("no Codex session is recorded"), "{err}");
    let err = sb.fails(&["run", "--resume", "--", "fails"], 2);
    assert!(err.contains("known agent"), "{err}");

    let outside = Sandbox::repo();
    outside.stand_in("fails", "exit 42");
    let err = outside.fails(&["run", "--", "fails"], 125);
    assert!(err.contains("no pas-agent session"), "{err}");
}

#[test]
fn the_agent_runs_in_the_current_directory_with_pwd_and_its_run_id() {
    let sb = Sandbox::with_session();
    std::fs::create_dir_all(sb.path("sub/dir")).unwrap();
    // `-C` changes the directory without a shell: PWD must still name it.
    let out = sb.run(&["-C", "sub/dir", "run", "--", "env"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let env = crate::common::stdout(&out);
    let dir = sb.path("sub/dir");
    assert!(
        env.lines().any(|l| l == format!("PWD={}", dir.display())),
        "{env}"
    );
    let run = last_run(&sb);
    assert_eq!(run["cwd"], dir.to_string_lossy().as_ref());
    let id = run["id"].as_str().unwrap();
    assert!(
        env.lines().any(|l| l == format!("PAS_AGENT_RUN_ID={id}")),
        "{env}"
    );
}

#[test]
fn a_killed_launcher_leaves_a_running_record_that_the_next_command_abandons() {
    killed_launcher_abandoned(&[]);
}

/// A run with `--no-checkpoint --no-export` keeps no baseline: the command that closes it
/// judges its files by their modification times, as the launcher would have.
#[test]
fn a_killed_bare_launcher_is_abandoned_with_the_files_changed_during_its_run() {
    killed_launcher_abandoned(&["--no-checkpoint", "--no-export"]);
}

fn killed_launcher_abandoned(options: &[&str]) {
    let sb = Sandbox::with_session();
    sb.write("dirty-before.txt", "x\n");
    // Well before the run (not a timing assertion: the file system's clock is a tick behind).
    std::thread::sleep(std::time::Duration::from_millis(300));
    let agent_pid = sb.tmp.path().join("agent-pid");
    sb.stand_in(
        "worker",
        &format!(
            "echo $$ > {}\necho one > made.txt\ngit add made.txt && git commit -qm 'agent commit'\necho two > later.txt\necho done > {0}.done\nexec sleep 600",
            agent_pid.display()
        ),
    );
    let args = [&["run"][..], options, &["--", "worker"]].concat();
    let mut child = spawn_plain(&sb, &args);
    let launcher = running_launcher(&sb);
    assert_eq!(
        last_run(&sb).get("baseline").is_some(),
        options.is_empty(),
        "a baseline only when the work tree was scanned before the run"
    );
    let done = agent_pid.with_extension("done");
    wait_for("the agent's work", || done.exists().then_some(()));
    kill(launcher, SIGKILL);
    child.wait().unwrap();
    let agent: i32 = read(&agent_pid).trim().parse().unwrap();
    assert!(
        alive(agent),
        "the agent outlives a SIGKILLed plain launcher"
    );

    let run = last_run(&sb);
    assert_eq!(run["state"], "running", "nobody closed it yet");
    assert!(run["nonce"].is_string() && run["launcher_started"].is_string());

    let out = sb.run(&["status"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("run #1 (worker) was marked abandoned"),
        "{}",
        stderr(&out)
    );
    let run = last_run(&sb);
    assert_eq!(run["state"], "abandoned");
    assert_eq!(run["exit_code"], serde_json::Value::Null);
    assert_eq!(run["head_after"], sb.git(&["rev-parse", "HEAD"]));
    assert_eq!(run["commits"].as_array().unwrap().len(), 1);
    assert_eq!(run["commits"][0]["summary"], "agent commit");
    assert_eq!(
        changed_paths(&run),
        ["later.txt", "made.txt"],
        "the dirty file from before is not the agent's"
    );
    assert!(run["reconciled_at"].is_string());
    assert!(run.get("baseline").is_none());
    // Once closed, it stays closed.
    let out = sb.run(&["runs"]);
    assert!(!stderr(&out).contains("abandoned"), "{}", stderr(&out));
    kill(agent, SIGKILL);
}

#[test]
fn a_killed_pty_launcher_takes_its_agent_down_and_is_abandoned() {
    let sb = Sandbox::with_session();
    let agent_pid = sb.tmp.path().join("agent-pid");
    sb.stand_in(
        "sleeper",
        &format!(
            "echo $$ > {}\necho ready\nexec sleep 600",
            agent_pid.display()
        ),
    );
    let t = Tmux::start(&sb, &["run", "--", "sleeper"], 80, 24);
    t.wait_screen("ready");
    let launcher = running_launcher(&sb);
    let agent: i32 = wait_for("the agent's pid", || read(&agent_pid).trim().parse().ok());
    kill(launcher, SIGKILL);
    // The pty's master closed with the launcher: the kernel hangs up the agent's session.
    wait_for("the agent to be hung up", || (!alive(agent)).then_some(()));
    assert_eq!(last_run(&sb)["state"], "running");
    let out = sb.run(&["runs", "--json"]);
    assert!(
        stderr(&out).contains("was marked abandoned"),
        "{}",
        stderr(&out)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["runs"][0]["state"], "abandoned");
    assert!(
        v["runs"][0]["capture"].is_string(),
        "the capture so far is kept"
    );
}

#[test]
fn a_live_run_is_left_alone_and_a_second_run_warns_of_sharing() {
    let sb = Sandbox::with_session();
    let release = sb.tmp.path().join("release");
    sb.stand_in(
        "waiter",
        &format!("while [ ! -e {} ]; do sleep 0.05; done", release.display()),
    );
    let first = spawn_plain(&sb, &["run", "--", "waiter"]);
    running_launcher(&sb);
    sb.ok(&["status"]);
    assert_eq!(
        last_run(&sb)["state"],
        "running",
        "a live launcher is not abandoned"
    );
    sb.stand_in("quick", "exit 0");
    let out = sb.run(&["run", "--", "quick"]);
    assert!(out.status.success());
    assert!(
        stderr(&out).contains("run #1 (waiter") && stderr(&out).contains("two agents now share"),
        "{}",
        stderr(&out)
    );
    std::fs::write(&release, "").unwrap();
    assert!(first.wait_with_output().unwrap().status.success());
    let all = runs(&sb);
    assert!(all.iter().all(|r| r["state"] == "finished"));
}

#[test]
fn the_machine_wide_registry_lists_live_runs_of_every_project() {
    let a = Sandbox::with_session();
    let state = a.tmp.path().join("state");
    let mut b = Sandbox::with_session();
    let mut a = a;
    for sb in [&mut a, &mut b] {
        sb.env.push((
            "PAS_AGENT_STATE_DIR".into(),
            state.to_string_lossy().into_owned(),
        ));
    }
    let agent_pid = b.tmp.path().join("agent-pid");
    b.stand_in(
        "sleeper",
        &format!("echo $$ > {}\nexec sleep 600", agent_pid.display()),
    );
    let mut child = spawn_plain(&b, &["run", "--", "sleeper"]);
    let launcher = running_launcher(&b);

    // From the other project: the live run of b is listed. The launcher registers the run
    // just after it wrote the run record that `running_launcher` waited for.
    let (out, v) = wait_for("the run in the registry", || {
        let out = a.ok(&["runs", "--all", "--json"]);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        (!v["runs"].as_array().unwrap().is_empty()).then_some((out, v))
    });
    let list = v["runs"].as_array().unwrap();
    assert_eq!(list.len(), 1, "{out}");
    assert_eq!(list[0]["agent"], "sleeper");
    assert_eq!(list[0]["state"], "running");
    assert_eq!(list[0]["project"], b.work.to_string_lossy().as_ref());
    assert_eq!(list[0]["launcher_pid"], launcher);
    let text = a.ok(&["runs", "--all"]);
    assert!(
        text.contains("sleeper") && text.contains("running"),
        "{text}"
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(state.join("runs.json"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);

    // Its launcher dies: the registry forgets it and b's record is closed, from a.
    kill(launcher, SIGKILL);
    child.wait().unwrap();
    let out = a.run(&["runs", "--all", "--json"]);
    assert!(out.status.success());
    assert!(
        stderr(&out).contains("was marked abandoned"),
        "{}",
        stderr(&out)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["runs"].as_array().unwrap().len(), 0);
    assert_eq!(last_run(&b)["state"], "abandoned");
    // The orphaned agent is the test's to clean up.
    let agent: i32 = wait_for("the agent's pid", || read(&agent_pid).trim().parse().ok());
    kill(agent, SIGKILL);

    // A finished run leaves the registry too.
    b.stand_in("quick", "exit 0");
    b.ok(&["run", "--", "quick"]);
    let v: serde_json::Value = serde_json::from_str(&a.ok(&["runs", "--all", "--json"])).unwrap();
    assert_eq!(v["runs"].as_array().unwrap().len(), 0);
}
