//! The binary's start-up (std's runtime, src/main.rs): what it does that changes what the
//! program does. A write to a closed pipe is an error the command handles (exit 0 for output
//! nobody reads), not a `SIGPIPE` death; standard descriptors that are closed get `/dev/null`,
//! so no file the command opens becomes its stdout or stderr.

use std::os::unix::process::CommandExt as _;
use std::os::unix::process::ExitStatusExt as _;
use std::process::Stdio;

use crate::common::Sandbox;

/// Runs pas-agent with `args`, stdout the write end of a pipe whose read end is already closed.
fn into_closed_pipe(sb: &Sandbox, args: &[&str]) -> std::process::ExitStatus {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    sb.cmd()
        .args(args)
        .stdout(writer)
        .stderr(Stdio::null())
        .status()
        .expect("run pas-agent")
}

#[test]
fn output_into_a_closed_pipe_is_not_a_signal() {
    let sb = Sandbox::with_session();
    // clap's help, the prompt's own path, the status fast path, and clap-parsed commands.
    for args in [
        &["--help"][..],
        &["prompt"],
        &["prompt", "--hook", "7"],
        &["status"],
        &["status", "--json"],
        &["list"],
        &["export", "--to", "claude", "--output", "-"],
    ] {
        let status = into_closed_pipe(&sb, args);
        assert_eq!(
            status.signal(),
            None,
            "{args:?} was killed by a signal ({status:?}): SIGPIPE is not ignored"
        );
        assert_eq!(status.code(), Some(0), "{args:?}: {status:?}");
    }
}

#[test]
fn closed_standard_descriptors_get_dev_null() {
    let sb = Sandbox::with_session();
    let before = sb.read(".pas-agent/session.json");
    // stdout and stderr closed: the first files the command opens would take numbers 1 and 2,
    // and what it prints would be written into them.
    let mut cmd = sb.cmd();
    cmd.args([
        "update",
        "--next",
        "Write the parser",
        "--remaining",
        "Parser",
    ]);
    // SAFETY: `close` is async-signal-safe, and the child only runs it before `exec`.
    unsafe {
        cmd.pre_exec(|| {
            libc::close(1);
            libc::close(2);
            Ok(())
        });
    }
    let status = cmd.status().expect("run pas-agent");
    assert_eq!(status.code(), Some(0), "{status:?}");
    let after = sb.session();
    assert_eq!(after["task"]["next_action"], "Write the parser", "{after}");
    assert_ne!(sb.read(".pas-agent/session.json"), before);
    // Every file the update wrote is whole: no line of its output landed in one.
    for file in crate::common::walk(&sb.work.join(".pas-agent"))
        .into_iter()
        .chain(crate::common::walk(&sb.home))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
    {
        let text = std::fs::read_to_string(&file).expect("read");
        assert!(
            serde_json::from_str::<serde_json::Value>(&text).is_ok(),
            "{} is not JSON: {text:?}",
            file.display()
        );
    }
    // What a closed descriptor is given is /dev/null: a child started with `run --no-pty`
    // inherits the launcher's descriptors, and sees it there.
    let mut cmd = sb.cmd();
    cmd.args([
        "run",
        "--no-pty",
        "--no-checkpoint",
        "--no-export",
        "--",
        "sh",
        "-c",
    ])
    .arg(r#"fds="$(readlink /proc/$$/fd/1 /proc/$$/fd/2)"; echo "$fds" > fds.txt"#);
    // SAFETY: as above.
    unsafe {
        cmd.pre_exec(|| {
            libc::close(1);
            libc::close(2);
            Ok(())
        });
    }
    assert_eq!(cmd.status().expect("run").code(), Some(0));
    // The words are expanded before `> fds.txt` is opened: the shell's own 1 and 2.
    assert_eq!(sb.read("fds.txt"), "/dev/null\n/dev/null\n");
}
