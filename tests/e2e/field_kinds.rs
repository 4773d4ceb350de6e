//! The field, round 3: each fault fixed for its whole kind of input, not for the one spelling
//! that was reported — numbers in the session file, stored paths, line ends, sizes, locks a
//! file system cannot give, damaged sessions and their recovery, killed launchers, planted
//! links and torn appends — each with several inputs of its kind, against the real binary.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::{Sandbox, last_run, runs, stderr, stdout, walk};

const SESSION: &str = ".pas-agent/session.json";

/// The session file with `field` replaced by `raw` (JSON text, written as it is).
fn with_raw(sb: &Sandbox, field: &str, raw: &str) -> Vec<u8> {
    let text = sb.read(SESSION);
    let start = text.find(&format!("\"{field}\": ")).expect("the field") + field.len() + 4;
    let end = start
        + text[start..]
            .find([',', '\n'])
            .expect("the end of the value");
    let mut out = text[..start].to_string();
    out.push_str(raw);
    out.push_str(&text[end..]);
    out.into_bytes()
}

// ---- 1. Every number by one exact rule ----

#[test]
fn a_schema_version_that_is_not_exactly_a_known_integer_is_refused_and_kept() {
    let sb = Sandbox::with_session();
    for raw in [
        "1e3", "2.0", "1.5", "-1", "1.0", "1E0", "0.1e1", "-0", "0", "\"1\"", "null", "true",
        "[1]", "{}",
    ] {
        let bytes = with_raw(&sb, "schema_version", raw);
        std::fs::write(sb.path(SESSION), &bytes).unwrap();
        for args in [
            &["update", "--next", "x"][..],
            &["checkpoint", "x"],
            &["status"],
        ] {
            let err = sb.fails(args, 5);
            assert!(err.contains("schema"), "{raw} {args:?}: {err}");
            assert_eq!(sb.bytes(SESSION), bytes, "{raw}: the file was changed");
        }
    }
    // Integers this version does not know are newer versions, refused as such.
    for raw in ["2", "7", "4294967296", "18446744073709551615"] {
        let bytes = with_raw(&sb, "schema_version", raw);
        std::fs::write(sb.path(SESSION), &bytes).unwrap();
        let err = sb.fails(&["update", "--next", "x"], 5);
        assert!(err.contains("newer than this pas-agent"), "{raw}: {err}");
        assert_eq!(sb.bytes(SESSION), bytes);
    }
    // What it writes itself, and a file without the field (the original 0.1.0's), load.
    let bytes = with_raw(&sb, "schema_version", "1");
    std::fs::write(sb.path(SESSION), &bytes).unwrap();
    sb.ok(&["update", "--next", "x"]);
}

#[test]
fn counts_pas_agent_reads_must_be_whole_numbers() {
    let sb = Sandbox::with_session();
    sb.write("a.txt", "a\n");
    sb.ok(&["checkpoint", "one"]);
    let good = sb.session();
    for (place, value) in [
        ("total", json!(2.0)),
        ("total", json!(-3)),
        ("total", json!("3")),
        ("total", json!(1.5)),
        ("files", json!(0)),
        ("files", json!(2.5)),
        ("files", json!(null)),
    ] {
        let mut s = good.clone();
        let cp = &mut s["checkpoints"][0];
        if place == "total" {
            cp["files_changed_total"] = value.clone();
        } else {
            cp["files_changed"][0]["files"] = value.clone();
        }
        let bytes = serde_json::to_vec_pretty(&s).unwrap();
        std::fs::write(sb.path(SESSION), &bytes).unwrap();
        let err = sb.fails(&["update", "--next", "x"], 5);
        assert!(
            err.contains("whole number of files"),
            "{place} {value}: {err}"
        );
        assert_eq!(sb.bytes(SESSION), bytes);
    }
}

// ---- 1. Stored paths in one portable form ----

#[test]
fn stored_paths_in_any_spelling_are_one_file() {
    let sb = Sandbox::with_session();
    sb.write("sub/dir/f.txt", "one\n");
    sb.git(&["add", "sub/dir/f.txt"]);
    sb.git(&["commit", "-q", "-m", "f"]);
    sb.write("sub/dir/f.txt", "two\n");
    sb.ok(&["checkpoint", "edited"]);
    let good = sb.read(SESSION);
    assert!(good.contains("\"sub/dir/f.txt\""));
    for spelling in [
        r"sub\\dir\\f.txt",
        r"sub\\dir/f.txt",
        "./sub/dir/f.txt",
        "sub//dir/f.txt",
        "sub/./dir/f.txt",
        r".\\sub\\dir\\f.txt",
    ] {
        std::fs::write(
            sb.path(SESSION),
            good.replace("\"sub/dir/f.txt\"", &format!("\"{spelling}\"")),
        )
        .unwrap();
        // Nothing changed since the checkpoint: one file, the same one.
        let status: Value = serde_json::from_str(&sb.ok(&["status", "--json"])).unwrap();
        assert!(
            status["stale"].is_null()
                || status["stale"]["changed"]
                    .as_array()
                    .is_none_or(Vec::is_empty),
            "{spelling}: {}",
            status["stale"]
        );
        let show: Value = serde_json::from_str(&sb.ok(&["show", "1", "--json"])).unwrap();
        let paths: Vec<&str> = show["files_changed"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["path"].as_str().unwrap())
            .collect();
        assert_eq!(paths, ["sub/dir/f.txt"], "{spelling}");
        // The next save writes the portable form.
        sb.ok(&["update", "--next", "x"]);
        assert!(sb.read(SESSION).contains("\"sub/dir/f.txt\""), "{spelling}");
        assert!(!sb.read(SESSION).contains(spelling), "{spelling}");
    }
}

#[test]
fn a_file_name_with_a_backslash_is_recorded_quoted_and_stays_one_file() {
    let sb = Sandbox::with_session();
    sb.write("a\\b.txt", "x\n");
    sb.ok(&["checkpoint", "odd name"]);
    let s = sb.session();
    let paths: Vec<&str> = s["checkpoints"][0]["files_changed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["\"a\\\\b.txt\""]);
    let status: Value = serde_json::from_str(&sb.ok(&["status", "--json"])).unwrap();
    assert!(
        status["stale"].is_null()
            || status["stale"]["changed"]
                .as_array()
                .is_none_or(Vec::is_empty),
        "{}",
        status["stale"]
    );
}

// ---- 1. Never started, or started then lost ----

/// Runs `pas-agent args` in the background with the sandbox's environment and `env`.
fn spawn(sb: &Sandbox, args: &[&str], env: &[(&str, &str)]) -> std::process::Child {
    let mut cmd = sb.cmd();
    cmd.args(args).stdout(Stdio::null()).stderr(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.spawn().expect("start pas-agent")
}

/// An exclusive `flock` on a file, held by `flock FILE sleep 60` in a process group of its
/// own, released (the whole group killed) when dropped.
struct Held(std::process::Child, bool);

impl Held {
    fn release(&mut self) {
        if std::mem::replace(&mut self.1, true) {
            return;
        }
        let pid = i32::try_from(self.0.id()).unwrap();
        // SAFETY: kill(2) on the group this test made.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
        let _ = self.0.wait();
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.release();
    }
}

/// Holds an exclusive `flock` on `path` until the returned guard is released or dropped.
fn hold_lock(path: &Path) -> Held {
    use std::os::unix::process::CommandExt;
    let child = Command::new("flock")
        .arg(path)
        .args(["sleep", "60"])
        .stdin(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("flock (util-linux) is needed for this test");
    let child = Held(child, false);
    // The lock is taken once flock runs its command.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let probe = Command::new("flock")
            .args(["-n"])
            .arg(path)
            .arg("true")
            .status()
            .unwrap();
        if !probe.success() {
            break;
        }
        assert!(Instant::now() < deadline, "the lock was never taken");
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "{what} never happened");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_launcher_lost_before_its_agent_started_is_unstarted_and_after_it_lost() {
    let sb = Sandbox::with_session();
    // Before: the launcher has written its record and waits for the run registry's lock, so
    // it never gets to start the agent.
    let state = sb.home.join(".local/state/pas-agent");
    std::fs::create_dir_all(&state).unwrap();
    let mut held = hold_lock(&state.join("runs.lock"));
    let mut launcher = spawn(
        &sb,
        &["run", "--", "sh", "-c", "touch started"],
        &[("PAS_AGENT_LOCK_TIMEOUT_MS", "60000")],
    );
    wait_until("the running record", || {
        runs(&sb).iter().any(|r| r["state"] == "running")
    });
    launcher.kill().unwrap();
    launcher.wait().unwrap();
    held.release();
    assert!(!sb.path("started").exists(), "the agent was started");
    let out = sb.ok(&["runs"]);
    let run = last_run(&sb);
    assert_eq!(run["state"], "abandoned", "{run}");
    assert_eq!(run["agent_started_at"], Value::Null, "{run}");
    assert!(out.contains("unstarted"), "{out}");
    let one = sb.ok(&["runs", "1"]);
    assert!(one.contains("before the agent started"), "{one}");

    // After: the agent itself kills its launcher (its parent) and goes on — once the
    // launcher has noted the start (in the run's reserve, where the next command reads it).
    let out = sb.run(&[
        "run",
        "--",
        "sh",
        "-c",
        "until grep -aqs agent_started .pas-agent/runs/*/outcome.reserve; do sleep 0.05; done; kill -9 $PPID; touch started2",
    ]);
    assert_eq!(out.status.code(), None, "the launcher was killed");
    wait_until("the agent", || sb.path("started2").exists());
    let out = sb.ok(&["runs"]);
    let run = last_run(&sb);
    assert_eq!(run["state"], "abandoned", "{run}");
    let at = run["agent_started_at"].as_str().expect("a start time");
    assert!(chrono::DateTime::parse_from_rfc3339(at).is_ok(), "{at}");
    assert!(out.lines().last().unwrap().contains("abandoned"), "{out}");
    let two = sb.ok(&["runs", "2"]);
    assert!(two.contains("the agent started at"), "{two}");
    // A run that finished says when its agent started too.
    sb.ok(&["run", "--", "true"]);
    assert!(last_run(&sb)["agent_started_at"].is_string());
}

// ---- 8. Reserves of killed launchers ----

fn reserves(sb: &Sandbox) -> Vec<std::path::PathBuf> {
    walk(&sb.path(".pas-agent"))
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n == "outcome.reserve"))
        .collect()
}

#[test]
fn reserves_left_by_killed_launchers_are_removed_and_a_live_ones_kept() {
    let sb = Sandbox::with_session();
    // Killed while it waited for the session lock: its reserve exists, no record says so.
    let mut held = hold_lock(&sb.path(".pas-agent/session.lock"));
    let mut launcher = spawn(
        &sb,
        &["run", "--", "true"],
        &[("PAS_AGENT_LOCK_TIMEOUT_MS", "60000")],
    );
    wait_until("the reserve", || !reserves(&sb).is_empty());
    launcher.kill().unwrap();
    launcher.wait().unwrap();
    held.release();
    assert_eq!(reserves(&sb).len(), 1);
    assert!(runs(&sb).is_empty());
    // One of an older version (no header), long ago.
    let old = sb.path(".pas-agent/runs/5a7f2b1e-0000-4000-8000-000000000000/outcome.reserve");
    std::fs::create_dir_all(old.parent().unwrap()).unwrap();
    std::fs::write(&old, vec![0u8; 4096]).unwrap();
    let touched = Command::new("touch")
        .args(["-d", "3 days ago"])
        .arg(&old)
        .status()
        .unwrap();
    assert!(touched.success());
    // A live launcher's reserve stays while the next run sweeps.
    let mut live = spawn(&sb, &["run", "--", "sh", "-c", "touch live; sleep 30"], &[]);
    wait_until("the live agent", || sb.path("live").exists());
    let live_reserves = reserves(&sb);
    sb.ok(&["run", "--", "true"]);
    let left = reserves(&sb);
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(live_reserves.contains(&left[0]));
    live.kill().unwrap();
    live.wait().unwrap();
}

// ---- 2. Locks the file system cannot give ----

/// `pas-agent args` under strace, with every `flock` failing with `errno`.
fn with_lock_error(sb: &Sandbox, errno: &str, args: &[&str]) -> std::process::Output {
    let mut cmd = Command::new("strace");
    let template = sb.cmd();
    for (k, v) in template.get_envs() {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    cmd.current_dir(&sb.work)
        .stdin(Stdio::null())
        .args(["-f", "-qq", "-o", "/dev/null", "-e", "trace=flock", "-e"])
        .arg(format!("inject=flock:error={errno}"))
        .arg(crate::common::bin())
        .args(args);
    cmd.output()
        .expect("strace is needed for this test (apt-get install strace)")
}

#[test]
fn a_lock_the_file_system_cannot_give_is_a_warning_and_the_command_goes_on() {
    let sb = Sandbox::with_session();
    sb.stand_in("agent", "echo started > started.txt");
    for errno in ["ENOLCK", "EOPNOTSUPP", "ENOSYS"] {
        let out = with_lock_error(&sb, errno, &["update", "--next", errno]);
        assert_eq!(out.status.code(), Some(0), "{errno}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("cannot lock files"),
            "{errno}: {}",
            stderr(&out)
        );
        assert_eq!(sb.session()["task"]["next_action"], errno);
        let _ = std::fs::remove_file(sb.path("started.txt"));
        let out = with_lock_error(&sb, errno, &["run", "--", "agent"]);
        assert_eq!(out.status.code(), Some(0), "{errno}: {}", stderr(&out));
        assert!(sb.path("started.txt").exists(), "{errno}");
        assert_eq!(last_run(&sb)["state"], "finished", "{errno}");
    }
    // A lock that fails otherwise stops a command that changes the session, but never an agent.
    let out = with_lock_error(&sb, "EIO", &["update", "--next", "io"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let _ = std::fs::remove_file(sb.path("started.txt"));
    let out = with_lock_error(&sb, "EIO", &["run", "--", "agent"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(sb.path("started.txt").exists());
    assert!(
        stderr(&out).contains("starts without a run record"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn run_starts_the_agent_when_the_lock_stays_taken() {
    let sb = Sandbox::with_session();
    sb.stand_in("agent", "echo started > started.txt; exit 3");
    let mut held = hold_lock(&sb.path(".pas-agent/session.lock"));
    let out = sb
        .cmd()
        .args(["run", "--", "agent"])
        .env("PAS_AGENT_LOCK_TIMEOUT_MS", "100")
        .output()
        .unwrap();
    held.release();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(sb.path("started.txt").exists());
    let err = stderr(&out);
    let warning: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("warning:"))
        .collect::<Vec<_>>();
    assert_eq!(warning.len(), 1, "{}", stderr(&out));
    assert!(warning[0].contains("locked"), "{}", warning[0]);
}

// ---- 6. A damaged session never stops an agent; recover brings it back ----

/// Damaged sessions of every kind: bytes, and what `session.json` becomes.
fn damages() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        (
            "truncated",
            b"{\"schema_version\": 1, \"id\": \"46d8".to_vec(),
        ),
        ("empty", Vec::new()),
        ("not UTF-8", b"{\"id\": \"\xff\xfe\"}".to_vec()),
        ("not JSON", b"hello".to_vec()),
        ("byte order mark", b"\xEF\xBB\xBF{}".to_vec()),
        ("wrong type", b"{\"id\": 5}".to_vec()),
        (
            "not an integer version",
            b"{\"schema_version\": 2.0}".to_vec(),
        ),
    ]
}

#[test]
fn a_damaged_session_never_stops_an_agent() {
    let sb = Sandbox::with_session();
    sb.stand_in("claude", "echo started > started.txt; exit 4");
    for (what, bytes) in damages() {
        std::fs::write(sb.path(SESSION), &bytes).unwrap();
        let _ = std::fs::remove_file(sb.path("started.txt"));
        let out = sb.cmd().args(["run", "claude"]).output().unwrap();
        assert_eq!(out.status.code(), Some(4), "{what}: {}", stderr(&out));
        assert!(sb.path("started.txt").exists(), "{what}");
        let err = stderr(&out);
        let warnings: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(warnings.len(), 1, "{what}: one line: {err}");
        assert!(
            warnings[0].starts_with("warning:") && warnings[0].contains("pas-agent recover"),
            "{what}: {err}"
        );
        assert_eq!(sb.bytes(SESSION), bytes, "{what}: the file was changed");
        // Asked to resume, it starts a new conversation: the file names none it can read.
        let _ = std::fs::remove_file(sb.path("started.txt"));
        let out = sb
            .cmd()
            .args(["run", "claude", "--resume"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(4), "{what}: {}", stderr(&out));
        assert!(sb.path("started.txt").exists(), "{what}");
        assert!(
            stderr(&out).contains("starts a new session"),
            "{what}: {}",
            stderr(&out)
        );
        assert_eq!(sb.bytes(SESSION), bytes, "{what}: the file was changed");
    }
}

#[test]
fn entering_a_project_with_a_damaged_session_says_so_and_names_recover() {
    let sb = Sandbox::with_session();
    for (what, bytes) in damages() {
        std::fs::write(sb.path(SESSION), &bytes).unwrap();
        let out = sb.ok(&["prompt", "--hook", "1", "--notice"]);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "session damaged", "{what}: {out}");
        assert!(lines[1].contains("pas-agent recover"), "{what}: {out}");
    }
}

#[test]
fn recover_brings_back_the_last_good_session_whatever_happened_to_it() {
    let sb = Sandbox::with_session();
    sb.ok(&[
        "update",
        "--remaining",
        "Port the invoice job",
        "--decision",
        "Keep v1",
    ]);
    sb.ok(&["checkpoint", "planned"]);
    let good = sb.bytes(SESSION);
    let mut kinds = damages();
    kinds.push(("deleted", Vec::new()));
    kinds.push(("state directory deleted", Vec::new()));
    for (what, bytes) in kinds {
        match what {
            "deleted" => std::fs::remove_file(sb.path(SESSION)).unwrap(),
            "state directory deleted" => {
                std::fs::remove_dir_all(sb.path(".pas-agent")).unwrap();
            }
            _ => std::fs::write(sb.path(SESSION), &bytes).unwrap(),
        }
        let out = sb.run(&["recover"]);
        assert!(out.status.success(), "{what}: {}", stderr(&out));
        assert!(
            stdout(&out).contains("Port the invoice job")
                || stdout(&out).contains("Build the thing"),
            "{what}: {}",
            stdout(&out)
        );
        assert_eq!(sb.bytes(SESSION), good, "{what}");
        assert_eq!(sb.session()["task"]["remaining"][0], "Port the invoice job");
        // What it replaced is kept, outside the work tree.
        if !bytes.is_empty() {
            let kept = walk(&sb.home.join(".local/state/pas-agent/sessions"))
                .into_iter()
                .filter(|p| {
                    p.file_name()
                        .unwrap()
                        .to_string_lossy()
                        .starts_with("replaced-")
                })
                .any(|p| std::fs::read(p).unwrap() == bytes);
            assert!(kept, "{what}: the damaged file was not kept");
        }
    }
    // The last save is the copy: nothing to recover.
    let out = sb.ok(&["recover"]);
    assert!(out.contains("nothing to recover"), "{out}");
    // A session that loads but is not what pas-agent saved (a hand edit, a checkout of
    // another branch) is left alone unless asked.
    let edited = sb
        .read(SESSION)
        .replace("Port the invoice job", "Edited by hand");
    std::fs::write(sb.path(SESSION), &edited).unwrap();
    let err = sb.fails(&["recover"], 1);
    assert!(err.contains("--force"), "{err}");
    assert_eq!(sb.read(SESSION), edited);
    sb.ok(&["recover", "--force"]);
    assert_eq!(sb.bytes(SESSION), good);
    // An unmerged one is for `resolve`, or `--force`.
    std::fs::write(
        sb.path(SESSION),
        "<<<<<<< ours\n{}\n=======\n{}\n>>>>>>> theirs\n",
    )
    .unwrap();
    let err = sb.fails(&["recover"], 1);
    assert!(err.contains("resolve") && err.contains("--force"), "{err}");
    sb.ok(&["recover", "--force"]);
    assert_eq!(sb.bytes(SESSION), good);
}

#[test]
fn recover_without_a_kept_copy_says_so_and_changes_nothing() {
    let sb = Sandbox::with_session();
    std::fs::remove_dir_all(sb.home.join(".local/state/pas-agent/sessions")).unwrap();
    std::fs::write(sb.path(SESSION), b"{").unwrap();
    let err = sb.fails(&["recover"], 1);
    assert!(err.contains("no copy of this session was kept"), "{err}");
    assert_eq!(sb.bytes(SESSION), b"{");
}

#[test]
fn doctor_names_recover_first_for_a_damaged_session() {
    let sb = Sandbox::with_session();
    std::fs::write(sb.path(SESSION), b"{\"truncated\": ").unwrap();
    for tracked in [false, true] {
        if tracked {
            sb.git(&["add", "-f", SESSION]);
            sb.git(&["commit", "-q", "-m", "session"]);
            std::fs::write(sb.path(SESSION), b"{\"truncated\": ").unwrap();
        }
        let out = sb.run(&["doctor", "--json"]);
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let fix = v["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["area"] == "session" && c["name"] == "session file")
            .and_then(|c| c["fix"].as_str())
            .expect("a fix for the session file")
            .to_string();
        assert!(
            fix.starts_with("pas-agent recover"),
            "tracked={tracked}: {fix}"
        );
    }
}

// ---- 4. Line ends kept; sizes bounded ----

#[test]
fn a_crlf_session_stays_crlf_through_every_writer() {
    let sb = Sandbox::with_session();
    let crlf = sb.read(SESSION).replace('\n', "\r\n");
    std::fs::write(sb.path(SESSION), &crlf).unwrap();
    sb.stand_in("agent", "true");
    for args in [
        &["update", "--next", "one field"][..],
        &["checkpoint", "two"],
        &["run", "--", "agent"],
        &["remove", "completed", "1"],
        &["prune"],
    ] {
        let _ = sb.run(args);
        let text = sb.read(SESSION);
        assert_eq!(
            text.matches('\n').count(),
            text.matches("\r\n").count(),
            "{args:?} changed the line ends"
        );
        assert!(text.ends_with("}\r\n"), "{args:?}");
    }
    // And an LF one stays LF.
    std::fs::write(sb.path(SESSION), sb.read(SESSION).replace("\r\n", "\n")).unwrap();
    sb.ok(&["update", "--next", "lf"]);
    assert!(!sb.read(SESSION).contains('\r'));
}

#[test]
fn command_lines_are_bounded_in_the_run_record() {
    let sb = Sandbox::with_session();
    let huge = "P".repeat(120 * 1024);
    let wide = "é".repeat(5000);
    let many: Vec<String> = (0..500).map(|i| format!("a{i}")).collect();
    for args in [
        vec![
            "-c".to_string(),
            "exit 0".to_string(),
            "x".into(),
            huge.clone(),
        ],
        vec![
            "-c".to_string(),
            "exit 0".to_string(),
            "x".into(),
            wide.clone(),
        ],
        [
            vec!["-c".to_string(), "exit 0".to_string(), "x".into()],
            many.clone(),
        ]
        .concat(),
    ] {
        let mut all = vec!["run".to_string(), "--".into(), "sh".into()];
        all.extend(args.iter().cloned());
        sb.ok(&all);
        let argv: Vec<String> = last_run(&sb)["argv"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_string())
            .collect();
        assert!(argv.len() <= 100, "{}", argv.len());
        assert!(
            argv.iter().all(|a| a.chars().count() <= 1100),
            "an argument is whole"
        );
    }
    let text = sb.read(SESSION);
    assert!(text.len() < 64 * 1024, "{} bytes", text.len());
    assert!(text.contains("characters]") && text.contains("more arguments]"));
}

#[test]
fn oversized_items_are_refused_with_the_limit_named() {
    let sb = Sandbox::with_session();
    let long = "x".repeat(10_001);
    let just = "y".repeat(10_000);
    let before = sb.bytes(SESSION);
    for flag in [
        "--task",
        "--objective",
        "--next",
        "--completed",
        "--remaining",
        "--decision",
        "--blocker",
        "--constraint",
        "--discovery",
    ] {
        let err = sb.fails(&["update", flag, &long], 2);
        assert!(
            err.contains("10,000 characters") && err.contains("10,001"),
            "{flag}: {err}"
        );
        assert_eq!(sb.bytes(SESSION), before, "{flag}");
    }
    let err = sb.fails(&["checkpoint", &long], 2);
    assert!(err.contains("10,000 characters"), "{err}");
    sb.ok(&["update", "--discovery", &just]);
    let other = Sandbox::repo();
    let err = other.fails(&["init", "--task", &long], 2);
    assert!(err.contains("10,000 characters"), "{err}");
    assert!(!other.path(SESSION).exists());
}

#[test]
fn prune_shrinks_the_words_of_old_runs() {
    let sb = Sandbox::with_session();
    let mut s = sb.session();
    let run = |i: usize| {
        json!({
            "id": format!("5a7f2b1e-0000-4000-8000-00000000000{i}"),
            "agent": "claude-code",
            "argv": ["claude", "-p", "Q".repeat(120 * 1024)],
            "cwd": sb.work.to_string_lossy(),
            "state": "finished",
            "started_at": "2026-01-01T00:00:00Z",
            "ended_at": "2026-01-01T00:01:00Z",
            "duration_ms": 60000,
            "exit_code": 0,
            "transcript": {
                "prompts": ["W".repeat(900), "second", "third"],
                "last_answer": "A".repeat(3900),
                "commands": [{"command": "make test", "exit_code": 0}],
                "edits": ["src/a.rs"],
            },
        })
    };
    s["runs"] = json!([run(1), run(2), run(3)]);
    std::fs::write(sb.path(SESSION), serde_json::to_vec_pretty(&s).unwrap()).unwrap();
    let before = sb.bytes(SESSION).len();
    let out = sb.ok(&["prune", "--keep", "1"]);
    assert!(out.contains("Shrank the words of 3 runs"), "{out}");
    let after = sb.session();
    assert!(
        sb.bytes(SESSION).len() < before / 10,
        "{} → {}",
        before,
        sb.bytes(SESSION).len()
    );
    for (i, r) in after["runs"].as_array().unwrap().iter().enumerate() {
        assert!(r["argv"][2].as_str().unwrap().chars().count() < 1100);
        let t = &r["transcript"];
        if i < 2 {
            assert_eq!(t["prompts"].as_array().unwrap().len(), 1);
            assert!(t["prompts"][0].as_str().unwrap().chars().count() <= 201);
            assert!(t["last_answer"].as_str().unwrap().chars().count() <= 501);
            assert_eq!(t["prompts_omitted"], 2);
            assert_eq!(t["commands_omitted"], 1);
            assert_eq!(t["pruned"], true);
        } else {
            assert_eq!(
                t["prompts"].as_array().unwrap().len(),
                3,
                "the last run keeps its words"
            );
        }
    }
}

// ---- 5. ASCII when the locale is not UTF-8 ----

#[test]
fn output_is_ascii_when_the_locale_is_not_utf8() {
    let sb = Sandbox::with_session();
    sb.ok(&[
        "update",
        "--remaining",
        "Café — naïve",
        "--next",
        "Café — naïve",
    ]);
    sb.ok(&["checkpoint", "one"]);
    sb.write("moved.txt", "x\n");
    sb.ok(&["run", "--", "true"]);
    let commands: &[&[&str]] = &[
        &["status"],
        &["list"],
        &["runs"],
        &["runs", "1"],
        &["show", "1"],
        &["prompt"],
        &["prune", "--dry-run"],
        &["update", "--remaining", "x"],
        &["remove", "completed", "9"],
    ];
    let locales: &[&[(&str, &str)]] = &[
        &[("LC_ALL", "C")],
        &[("LC_ALL", "POSIX")],
        &[("LC_ALL", ""), ("LC_CTYPE", ""), ("LANG", "")],
        &[("LC_ALL", ""), ("LANG", "en_US.ISO-8859-1")],
        &[("LC_ALL", ""), ("LC_CTYPE", "C"), ("LANG", "en_US.UTF-8")],
    ];
    for env in locales {
        for args in commands {
            let mut cmd = sb.cmd();
            cmd.args(*args);
            for (k, v) in *env {
                cmd.env(k, v);
            }
            let out = cmd.output().unwrap();
            for (name, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
                assert!(
                    bytes.is_ascii(),
                    "{env:?} {args:?} {name}: {}",
                    String::from_utf8_lossy(bytes)
                );
            }
        }
        // JSON stays the same data, in ASCII.
        let mut cmd = sb.cmd();
        cmd.args(["status", "--json"]);
        for (k, v) in *env {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        assert!(out.stdout.is_ascii());
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["session"]["task"]["next_action"], "Café — naïve");
    }
    // Under UTF-8 the marks are there.
    let out = sb.ok(&["status"]);
    assert!(out.contains("Café — naïve"), "{out}");
}

// ---- 8. Planted links: removals and renames through the guard ----

#[test]
fn a_planted_run_directory_link_leads_no_removal_outside() {
    let sb = Sandbox::with_session();
    let outside = sb.tmp.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    for name in ["outcome.json", "outcome.reserve", "capture.txt", "keep.txt"] {
        std::fs::write(outside.join(name), "precious\n").unwrap();
    }
    let id = "5a7f2b1e-1111-4000-8000-000000000000";
    std::fs::create_dir_all(sb.path(".pas-agent/runs")).unwrap();
    std::os::unix::fs::symlink(&outside, sb.path(&format!(".pas-agent/runs/{id}"))).unwrap();
    // A running record whose launcher is long gone.
    let mut s = sb.session();
    s["runs"] = json!([{
        "id": id, "agent": "claude-code", "argv": ["claude"], "cwd": sb.work.to_string_lossy(),
        "state": "running", "started_at": "2026-01-01T00:00:00Z",
        "launcher_pid": 999_999_999u32, "launcher_started": "1:1", "nonce": "n",
        "capture": format!(".pas-agent/runs/{id}/capture.txt")
    }]);
    std::fs::write(sb.path(SESSION), serde_json::to_vec_pretty(&s).unwrap()).unwrap();
    sb.ok(&["status"]);
    sb.ok(&["run", "--", "true"]);
    let _ = sb.run(&["prune", "--captures-older-than", "1s"]);
    // And the whole runs directory as a link.
    std::fs::remove_file(sb.path(&format!(".pas-agent/runs/{id}"))).unwrap();
    let _ = std::fs::remove_dir_all(sb.path(".pas-agent/runs"));
    std::fs::create_dir_all(outside.join(id)).unwrap();
    std::fs::write(outside.join(id).join("outcome.reserve"), "precious\n").unwrap();
    std::os::unix::fs::symlink(&outside, sb.path(".pas-agent/runs")).unwrap();
    let _ = sb.run(&["run", "--", "true"]);
    let _ = sb.run(&["prune", "--captures-older-than", "1s"]);
    let _ = sb.run(&["status"]);
    for name in ["outcome.json", "outcome.reserve", "capture.txt", "keep.txt"] {
        assert_eq!(
            std::fs::read_to_string(outside.join(name)).unwrap(),
            "precious\n",
            "{name} outside the project was touched"
        );
    }
    assert!(outside.join(id).join("outcome.reserve").exists());
}

// ---- 8. Torn appends to history.jsonl ----

#[test]
fn a_torn_history_line_is_skipped_and_show_tells_damaged_from_pruned() {
    let sb = Sandbox::with_session();
    let history = ".pas-agent/history.jsonl";
    let checkpoint = |n: usize| {
        sb.write(&format!("f{n}.txt"), "x\n");
        sb.ok(&["checkpoint", &format!("cp {n}")]);
    };
    for n in 1..=6 {
        checkpoint(n);
    }
    assert!(sb.read(history).ends_with('\n'));
    for tear in [
        "{\"checkpoint\": \"5a7f",
        "{\"checkpoint\":\"5a7f2b1e-2222-4000-8000-000000000000\",\"files_changed\":[{\"pa",
        "\u{0}\u{0}\u{0}",
    ] {
        // A writer killed mid-line, then more checkpoints: each new line stays whole.
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(sb.path(history))
            .unwrap();
        std::io::Write::write_all(&mut f, tear.as_bytes()).unwrap();
        drop(f);
        let count = sb.session()["checkpoints"].as_array().unwrap().len();
        checkpoint(count + 1);
        // The checkpoint just moved out reads back whole.
        let moved = count + 1 - 5;
        let show = sb.ok(&["show", &moved.to_string()]);
        assert!(show.contains(&format!("f{moved}.txt")), "{tear:?}: {show}");
    }
    // A line fused by an older version (a torn line, then a whole one on the same line).
    let text = sb.read(history);
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let last = lines.pop().unwrap();
    lines.push(format!("{{\"checkpoint\": \"torn{last}"));
    std::fs::write(sb.path(history), lines.join("\n") + "\n").unwrap();
    let n = sb.session()["checkpoints"].as_array().unwrap().len() - 5;
    let show = sb.ok(&["show", &n.to_string()]);
    assert!(
        !show.contains("pruned") && !show.contains("damaged"),
        "{show}"
    );
    // A line edited out of shape: damaged, not pruned.
    let text = sb.read(history);
    let first_id = sb.session()["checkpoints"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let broken: Vec<String> = text
        .lines()
        .map(|l| {
            if l.contains(&first_id) {
                l.replace("\"files_changed\"", "\"files_changed\": oops")
            } else {
                l.to_string()
            }
        })
        .collect();
    std::fs::write(sb.path(history), broken.join("\n") + "\n").unwrap();
    let show = sb.ok(&["show", "1"]);
    assert!(
        show.contains("damaged") && !show.contains("pruned"),
        "{show}"
    );
    let json: Value = serde_json::from_str(&sb.ok(&["show", "1", "--json"])).unwrap();
    assert_eq!(json["history_line_damaged"], true);
    // Pruned: said so.
    sb.ok(&["prune", "--keep", "5"]);
    let show = sb.ok(&["show", "2"]);
    assert!(show.contains("pruned"), "{show}");
}

// ---- 8. Settings and context files keep their line ends and byte order mark ----

#[test]
fn settings_keep_their_line_ends_and_byte_order_mark_through_integrate() {
    for (agent, file, body) in [
        (
            "codex",
            ".codex/config.toml",
            "model = \"o3\"\n\n[profiles.x]\nmodel = \"o4\"\n",
        ),
        (
            "claude",
            ".claude/settings.json",
            "{\n  \"model\": \"opus\",\n  \"env\": {\"A\": \"1\"}\n}\n",
        ),
        (
            "gemini",
            ".gemini/settings.json",
            "{\n  // mine\n  \"theme\": \"dark\"\n}\n",
        ),
    ] {
        for (crlf, bom) in [(true, false), (false, true), (true, true), (false, false)] {
            let sb = Sandbox::with_session();
            let mut text = if crlf {
                body.replace('\n', "\r\n")
            } else {
                body.to_string()
            };
            if bom {
                text = format!("\u{feff}{text}");
            }
            sb.write(file, &text);
            sb.ok(&["integrate", agent]);
            let installed = sb.read(file);
            let check = |t: &str, when: &str| {
                assert_eq!(
                    t.starts_with('\u{feff}'),
                    bom,
                    "{agent} {when} crlf={crlf} bom={bom}"
                );
                if crlf {
                    assert_eq!(
                        t.matches('\n').count(),
                        t.matches("\r\n").count(),
                        "{agent} {when}: {t:?}"
                    );
                } else {
                    assert!(!t.contains('\r'), "{agent} {when}: {t:?}");
                }
            };
            check(&installed, "installed");
            assert!(installed.contains("pas-agent"), "{agent}");
            sb.ok(&["integrate", agent, "--remove"]);
            check(&sb.read(file), "removed");
        }
    }
}

#[test]
fn exporting_into_its_own_output_changes_nothing_whatever_the_line_ends() {
    for text in [
        "# Notes\rfirst\rsecond\r",
        "# Notes\rno final line end",
        "# Notes\r\nfirst\r\n",
        "# Notes\nfirst\n",
        "\u{feff}# Notes\rfirst\r",
        "# Mixed\r\nline\nand\rmore",
    ] {
        let sb = Sandbox::with_session();
        sb.write("AGENTS.md", text);
        sb.ok(&["export", "--to", "codex"]);
        let once = sb.bytes("AGENTS.md");
        assert!(once.starts_with(text.as_bytes()), "{text:?}");
        sb.ok(&["export", "--to", "codex"]);
        assert_eq!(sb.bytes("AGENTS.md"), once, "{text:?}");
        let check = sb.run(&["export", "--to", "codex", "--check"]);
        assert!(check.status.success(), "{text:?}: {}", stdout(&check));
    }
}

// ---- 3. Resume follows a moved checkout ----

/// Moves the sandbox's checkout to `name` beside it (as `mv` would, with its session), and
/// points the sandbox there.
fn move_checkout(sb: &mut Sandbox, name: &str) {
    let to = sb.tmp.path().canonicalize().unwrap().join(name);
    std::fs::rename(&sb.work, &to).unwrap();
    sb.work = to;
}

fn run_argv(run: &Value) -> Vec<String> {
    run["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect()
}

/// A request after the first `before` carried `now` and the earlier `then`: the conversation
/// went on.
fn continued(mock: &crate::mock_model::Mock, before: usize, then: &str, now: &str) -> bool {
    mock.requests()[before..]
        .iter()
        .any(|r| r.body.contains(now) && r.body.contains(then))
}

#[test]
fn claude_code_resumes_a_conversation_of_a_checkout_that_moved() {
    crate::mock_model::require_agent("claude", "@anthropic-ai/claude-code");
    let mut sb = Sandbox::with_session();
    let mock = crate::mock_model::Mock::start();
    sb.env.extend(mock.claude_env("sk-ant-test"));
    sb.ok(&["run", "claude", "--", "-p", "Say hello to the ledger"]);
    let id = last_run(&sb)["agent_session_id"]
        .as_str()
        .unwrap()
        .to_string();
    for place in ["moved", "moved again/with space"] {
        if place.contains('/') {
            std::fs::create_dir_all(sb.tmp.path().join("moved again")).unwrap();
        }
        move_checkout(&mut sb, place);
        let before = mock.requests().len();
        let out = sb.run(&["run", "claude", "--resume", "--", "-p", "Next step please"]);
        assert!(out.status.success(), "{place}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("copied to"),
            "{place}: {}",
            stderr(&out)
        );
        let run = last_run(&sb);
        assert_eq!(
            run_argv(&run)[..3],
            ["claude", "--resume", id.as_str()],
            "{place}"
        );
        assert!(
            continued(&mock, before, "Say hello to the ledger", "Next step please"),
            "{place}: the resumed request carries the earlier conversation"
        );
    }
    // The conversation gone from Claude's store: a new one starts, never a refused id.
    std::fs::remove_dir_all(sb.home.join(".claude/projects")).unwrap();
    let out = sb.run(&["run", "claude", "--resume", "--", "-p", "Start over"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("cannot resume session"),
        "{}",
        stderr(&out)
    );
    let run = last_run(&sb);
    assert_eq!(run_argv(&run)[1], "--session-id");
    assert_eq!(run["exit_code"], 0);
}

/// `--resume SELECTOR` (a run number, a suffix of the id) names a conversation started in a
/// subdirectory of the checkout before it moved: it is resumed in the same subdirectory here,
/// made findable there first. A subdirectory removed inside the project still says so.
#[test]
fn a_selected_conversation_of_a_moved_checkout_is_resumed_in_the_same_place_here() {
    crate::mock_model::require_agent("claude", "@anthropic-ai/claude-code");
    let mut sb = Sandbox::with_session();
    let mock = crate::mock_model::Mock::start();
    sb.env.extend(mock.claude_env("sk-ant-test"));
    std::fs::create_dir_all(sb.work.join("src/app")).unwrap();
    let out = sb.run_in(
        "src/app",
        &["run", "claude", "--", "-p", "Count the invoices"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let id = last_run(&sb)["agent_session_id"]
        .as_str()
        .unwrap()
        .to_string();
    move_checkout(&mut sb, "moved");
    // The suffix first: once resumed here, the conversation is known here as well.
    for selector in [id[id.len() - 8..].to_string(), "1".to_string()] {
        let before = mock.requests().len();
        let out = sb.run(&[
            "run",
            "claude",
            "--resume",
            &selector,
            "--",
            "-p",
            "And the refunds",
        ]);
        assert!(out.status.success(), "{selector}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains("the same place in this checkout"),
            "{selector}: {err}"
        );
        let run = last_run(&sb);
        assert_eq!(
            run["cwd"],
            sb.work.join("src/app").to_string_lossy().as_ref(),
            "{selector}"
        );
        assert_eq!(
            run_argv(&run)[..3],
            ["claude", "--resume", id.as_str()],
            "{selector}"
        );
        assert!(
            continued(&mock, before, "Count the invoices", "And the refunds"),
            "{selector}: the resumed request carries the earlier conversation"
        );
    }
    // Gone inside the project: not a move, so it is said, with how to go on.
    std::fs::remove_dir_all(sb.work.join("src/app")).unwrap();
    let out = sb.run(&["run", "claude", "--resume", "3", "--", "-p", "Too late"]);
    assert_eq!(out.status.code(), Some(125), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no longer exists"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn gemini_cli_resumes_a_conversation_of_a_checkout_that_moved() {
    crate::mock_model::require_agent("gemini", "@google/gemini-cli");
    let mut sb = Sandbox::with_session();
    let mock = crate::mock_model::Mock::start();
    mock.point_gemini_at_me(&mut sb);
    let model = ["-m", "gemini-2.5-flash"];
    let mut first = vec!["run", "gemini", "--"];
    first.extend(model);
    first.extend(["-p", "Say hello to the ledger"]);
    sb.ok(&first);
    let id = last_run(&sb)["agent_session_id"]
        .as_str()
        .unwrap()
        .to_string();
    // Moved twice: the first time to a place Gemini CLI has no project for, the second time
    // back to one it has (the first place, with a project made there).
    for place in ["moved", "work"] {
        move_checkout(&mut sb, place);
        let before = mock.requests().len();
        let mut args = vec!["run", "gemini", "--resume", "--"];
        args.extend(model);
        args.extend(["-p", "Next step please"]);
        let out = sb.run(&args);
        assert!(out.status.success(), "{place}: {}", stderr(&out));
        let run = last_run(&sb);
        assert_eq!(
            run_argv(&run)[..3],
            ["gemini", "--resume", id.as_str()],
            "{place}"
        );
        assert!(
            continued(&mock, before, "Say hello to the ledger", "Next step please"),
            "{place}: the resumed request carries the earlier conversation"
        );
    }
    std::fs::remove_dir_all(sb.home.join(".gemini/tmp")).unwrap();
    let mut args = vec!["run", "gemini", "--resume", "--"];
    args.extend(model);
    args.extend(["-p", "Start over"]);
    let out = sb.run(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("cannot resume session"),
        "{}",
        stderr(&out)
    );
    assert_ne!(run_argv(&last_run(&sb))[1], "--resume");
}

// ---- 6. Typed in a hooked shell, a damaged session still starts the agent ----

#[test]
fn an_agent_typed_in_a_hooked_shell_starts_whatever_the_session_file_holds() {
    let sb = Sandbox::with_session();
    sb.stand_in("claude", "echo \"claude ran with $#\"; exit 6");
    for (what, bytes) in damages() {
        std::fs::write(sb.path(SESSION), &bytes).unwrap();
        let out = crate::hooks::shell(
            &sb,
            "bash",
            &["--norc", "--noprofile", "-i"],
            "eval \"$PAS_HOOK\"\nclaude hello\necho \"exit $?\"",
        );
        let text = stdout(&out);
        assert!(
            text.contains("claude ran with"),
            "{what}: {text} {}",
            stderr(&out)
        );
        assert!(text.contains("exit 6"), "{what}: {text}");
    }
}

#[test]
fn a_hooked_shell_entering_a_project_with_a_damaged_session_prints_the_notice() {
    let sb = Sandbox::with_session();
    std::fs::create_dir_all(sb.tmp.path().join("elsewhere")).unwrap();
    let bash = crate::hooks::require("bash");
    for (what, bytes) in damages() {
        std::fs::write(sb.path(SESSION), &bytes).unwrap();
        let body = format!(
            "cd '{}'\neval \"$PAS_HOOK\"\neval \"$PROMPT_COMMAND\"\ncd '{}'\neval \"$PROMPT_COMMAND\"\necho \"segment: $PAS_AGENT_PROMPT\"",
            sb.tmp.path().join("elsewhere").display(),
            sb.work.display()
        );
        let out = crate::hooks::isolated(&sb, &bash)
            .env("PAS_HOOK", crate::hooks::hook(&sb, "bash"))
            .args(["--norc", "--noprofile", "-i", "-c", &body])
            .output()
            .unwrap();
        assert!(
            stdout(&out).contains("segment: session damaged"),
            "{what}: {}",
            stdout(&out)
        );
        let err = stderr(&out);
        assert!(
            err.lines()
                .any(|l| l.starts_with("pas-agent: the session file is damaged")
                    && l.contains("pas-agent recover")),
            "{what}: {err}"
        );
    }
}
