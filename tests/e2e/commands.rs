//! init, update, remove, checkpoint, status, list and show on real repositories.

use std::time::{Duration, Instant};

use crate::common::{Sandbox, stderr, stdout};

#[test]
fn init_in_a_subdirectory_roots_the_session_at_the_git_top_level() {
    let sb = Sandbox::repo();
    sb.write("src/deep/x.txt", "x");
    let out = sb.run_in("src/deep", &["init", "--task", "  Migrate auth  "]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("Started a pas-agent session"), "{text}");
    assert!(text.contains("Git:     main @ "), "{text}");
    assert!(
        text.contains("(uncommitted changes)"),
        "untracked src/ makes it dirty: {text}"
    );
    let s = sb.session();
    assert_eq!(s["schema_version"], 1);
    assert_eq!(s["task"]["description"], "Migrate auth");
    assert_eq!(s["project_name"], "work");
    assert_eq!(s["git"]["branch"], "main");
    assert_eq!(s["git"]["commit"], sb.git(&["rev-parse", "HEAD"]));
    assert_eq!(s["git"]["dirty"], true);
    assert!(uuid::Uuid::parse_str(s["id"].as_str().unwrap()).is_ok());
    assert_eq!(s["created_at"], s["updated_at"]);
    assert!(s.get("runs").is_none(), "no runs key until there is a run");
    let ignore = sb.read(".pas-agent/.gitignore");
    assert!(ignore.lines().any(|l| l == "session.lock"), "{ignore}");
    // The session's own directory never makes the tree dirty.
    sb.git(&["add", "src"]);
    sb.git(&["commit", "-qm", "src"]);
    sb.ok(&["update", "--next", "x"]);
    assert_eq!(sb.session()["git"]["dirty"], false);
}

#[test]
fn init_names_and_refusals() {
    let sb = Sandbox::repo();
    sb.ok(&["init", "-n", "My Project", "-t", "t"]);
    assert_eq!(sb.session()["project_name"], "My Project");
    let err = sb.fails(&["init", "-t", "again"], 1);
    assert!(err.contains("already exists"), "{err}");

    let sb = Sandbox::repo();
    let err = sb.fails(&["init", "--task", "   "], 2);
    assert!(err.contains("cannot be empty"), "{err}");
    assert!(!sb.path(".pas-agent/session.json").exists());
}

#[test]
fn init_without_task_and_without_terminal_fails_at_once() {
    let sb = Sandbox::repo();
    let start = Instant::now();
    let err = sb.fails(&["init"], 2);
    assert!(err.contains("--task"), "{err}");
    assert!(start.elapsed() < Duration::from_secs(20));
    assert!(!sb.path(".pas-agent/session.json").exists());
}

#[test]
fn init_outside_git_uses_this_directory_and_notices_a_parent_session() {
    let sb = Sandbox::plain();
    let out = sb.ok(&["init", "--task", "notes"]);
    assert!(!out.contains("Git:"), "{out}");
    assert_eq!(sb.session()["git"], serde_json::Value::Null);
    std::fs::create_dir_all(sb.path("child")).unwrap();
    let out = sb.run_in("child", &["init", "--task", "inner"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("--nested"), "{}", stderr(&out));
    assert!(!sb.path("child/.pas-agent").exists());
    let out = sb.run_in("child", &["init", "--task", "inner", "--nested"]);
    assert!(out.status.success());
    assert!(sb.path("child/.pas-agent/session.json").exists());
}

#[test]
fn init_refuses_bare_repositories_and_git_directories() {
    let sb = Sandbox::plain();
    sb.git(&["init", "-q", "--bare", "bare.git"]);
    let out = sb.run_in("bare.git", &["init", "--task", "t"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("bare git repository"),
        "{}",
        stderr(&out)
    );

    let sb = Sandbox::repo();
    let out = sb.run_in(".git", &["init", "--task", "t"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains(".git directory"), "{}", stderr(&out));
    assert!(!sb.path(".git/.pas-agent").exists());
}

#[test]
fn concurrent_inits_create_exactly_one_session() {
    let sb = Sandbox::repo();
    let children: Vec<_> = (0..8)
        .map(|i| {
            let mut c = sb.cmd();
            c.args(["init", "--task", &format!("task {i}")]);
            c.stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null());
            c.spawn().unwrap()
        })
        .collect();
    let ok = children
        .into_iter()
        .map(|mut c| c.wait().unwrap().success())
        .filter(|&s| s)
        .count();
    assert_eq!(ok, 1);
    assert!(
        sb.session()["task"]["description"]
            .as_str()
            .unwrap()
            .starts_with("task ")
    );
}

#[test]
fn commands_without_a_session_exit_3() {
    let sb = Sandbox::repo();
    for args in [
        vec!["status"],
        vec!["list"],
        vec!["update", "--next", "x"],
        vec!["remove", "remaining", "1"],
        vec!["checkpoint", "m"],
        vec!["export", "--to", "codex"],
        vec!["runs"],
        vec!["show", "1"],
    ] {
        let err = sb.fails(&args, 3);
        assert!(
            err.contains("no pas-agent session found"),
            "{args:?}: {err}"
        );
    }
    assert!(!sb.path("AGENTS.md").exists());
}

#[test]
fn update_applies_every_flag() {
    let sb = Sandbox::with_session();
    let before = sb.session();
    sb.ok(&[
        "update",
        "--task",
        " New task ",
        "--objective",
        "Ship it",
        "--next",
        " Write tests ",
        "--completed",
        "a, with a comma",
        "--remaining",
        "r1",
        "--remaining",
        "r2",
        "--remaining",
        "   ",
        "--decision",
        "d1",
        "--blocker",
        "b1",
        "--blocker",
        "b2",
        "--constraint",
        "c1",
        "--discovery",
        "x1",
    ]);
    let s = sb.session();
    let t = &s["task"];
    assert_eq!(t["description"], "New task");
    assert_eq!(t["objective"], "Ship it");
    assert_eq!(t["next_action"], "Write tests");
    assert_eq!(t["completed"], serde_json::json!(["a, with a comma"]));
    assert_eq!(t["remaining"], serde_json::json!(["r1", "r2"]));
    assert_eq!(t["decisions"], serde_json::json!(["d1"]));
    assert_eq!(t["blockers"], serde_json::json!(["b1", "b2"]));
    assert_eq!(t["constraints"], serde_json::json!(["c1"]));
    assert_eq!(t["discoveries"], serde_json::json!(["x1"]));
    assert_ne!(s["updated_at"], before["updated_at"]);

    // Numbers refer to the lists as loaded; appends come after.
    sb.ok(&[
        "update",
        "--done",
        "2",
        "--done",
        "1",
        "--done",
        "2",
        "--resolve",
        "1",
        "--remaining",
        "r3",
    ]);
    let t = sb.session()["task"].clone();
    assert_eq!(
        t["completed"],
        serde_json::json!(["a, with a comma", "r1", "r2"])
    );
    assert_eq!(t["remaining"], serde_json::json!(["r3"]));
    assert_eq!(t["blockers"], serde_json::json!(["b2"]));

    sb.ok(&["update", "--clear-next", "--objective", ""]);
    let t = sb.session()["task"].clone();
    assert_eq!(t["next_action"], serde_json::Value::Null);
    assert_eq!(t["objective"], "");
    sb.ok(&["update", "--next", "again"]);
    sb.ok(&["update", "--next", ""]);
    assert_eq!(sb.session()["task"]["next_action"], serde_json::Value::Null);
}

#[test]
fn update_refusals_change_nothing() {
    let sb = Sandbox::with_session();
    sb.ok(&["update", "--remaining", "one", "--blocker", "b"]);
    let before = sb.bytes(".pas-agent/session.json");
    let err = sb.fails(&["update", "--done", "2", "--completed", "x"], 2);
    assert!(err.contains("no item #2 in remaining"), "{err}");
    assert!(err.contains("1 item"), "{err}");
    let err = sb.fails(&["update", "--resolve", "0"], 2);
    assert!(err.contains("no item #0 in blockers"), "{err}");
    let err = sb.fails(&["update"], 1);
    assert!(err.contains("nothing to update"), "{err}");
    let err = sb.fails(
        &["update", "--completed", "  ", "--task", "Build the thing"],
        1,
    );
    assert!(err.contains("nothing to update"), "{err}");
    let err = sb.fails(&["update", "--task", " "], 2);
    assert!(err.contains("cannot be empty"), "{err}");
    sb.fails(&["update", "--next", "a", "--clear-next"], 2);
    sb.fails(&["update", "--done", "one"], 2);
    assert_eq!(sb.bytes(".pas-agent/session.json"), before);
}

#[test]
fn remove_by_list_name_and_singular_alias() {
    let sb = Sandbox::with_session();
    sb.ok(&[
        "update",
        "--decision",
        "d1",
        "--decision",
        "d2",
        "--decision",
        "d3",
        "--remaining",
        "r1",
    ]);
    let out = sb.ok(&["remove", "decision", "3", "1"]);
    assert_eq!(
        out,
        "Removed from decisions: d1\nRemoved from decisions: d3\n"
    );
    assert_eq!(sb.session()["task"]["decisions"], serde_json::json!(["d2"]));
    let before = sb.bytes(".pas-agent/session.json");
    let err = sb.fails(&["remove", "remaining", "1", "2"], 2);
    assert!(err.contains("no item #2 in remaining"), "{err}");
    sb.fails(&["remove", "remainings", "1"], 2);
    sb.fails(&["remove", "remaining"], 2);
    assert_eq!(sb.bytes(".pas-agent/session.json"), before);
    for list in [
        "completed",
        "remaining",
        "decisions",
        "blockers",
        "blocker",
        "constraints",
        "constraint",
        "discoveries",
        "discovery",
    ] {
        let out = sb.run(&["remove", list, "9"]);
        assert_eq!(out.status.code(), Some(2), "{list}: {}", stderr(&out));
        assert!(stderr(&out).contains("no item #9"), "{list}");
    }
}

#[test]
fn checkpoint_records_task_git_and_fingerprinted_files() {
    let sb = Sandbox::with_session();
    sb.write("new/dir/a.txt", "hello\n");
    sb.write("README.md", "changed\n");
    let out = sb.ok(&["checkpoint", "first", "words"]);
    assert!(out.starts_with("Checkpoint #1 saved: first words"), "{out}");
    assert!(out.contains("2 files with uncommitted changes"), "{out}");
    let s = sb.session();
    let cp = &s["checkpoints"][0];
    assert_eq!(cp["message"], "first words");
    assert_eq!(cp["task_snapshot"]["description"], "Build the thing");
    assert_eq!(cp["git"]["commit"], sb.git(&["rev-parse", "HEAD"]));
    let files = cp["files_changed"].as_array().unwrap();
    assert_eq!(
        files,
        &vec![
            serde_json::json!({"path": "README.md", "status": "Modified", "fingerprint": "617edd5024bb1003"}),
            serde_json::json!({"path": "new/dir/a.txt", "status": "Untracked", "fingerprint": "a9bc80cca21f28b3"}),
        ]
    );
    assert_eq!(s["updated_at"], cp["timestamp"]);
    assert_eq!(s["git"]["dirty"], true);
    // Two checkpoints in the same second are both kept.
    sb.ok(&["checkpoint", "second"]);
    sb.ok(&["checkpoint", "third"]);
    assert_eq!(sb.session()["checkpoints"].as_array().unwrap().len(), 3);
}

#[test]
fn checkpoint_without_message_and_terminal_fails_at_once() {
    let sb = Sandbox::with_session();
    let before = sb.bytes(".pas-agent/session.json");
    let err = sb.fails(&["checkpoint"], 2);
    assert!(err.contains("no message given"), "{err}");
    let err = sb.fails(&["checkpoint", "  "], 2);
    assert!(err.contains("cannot be empty"), "{err}");
    assert_eq!(sb.bytes(".pas-agent/session.json"), before);
}

#[test]
fn checkpoint_outside_git_records_no_files() {
    let sb = Sandbox::plain();
    sb.ok(&["init", "--task", "t"]);
    sb.write("a.txt", "x");
    let out = sb.ok(&["checkpoint", "m"]);
    assert!(out.contains("not in a git repository"), "{out}");
    let cp = &sb.session()["checkpoints"][0];
    assert_eq!(cp["git"], serde_json::Value::Null);
    assert_eq!(cp["files_changed"], serde_json::json!([]));
    let status = sb.ok(&["status"]);
    assert!(!status.contains("Git:"), "{status}");
    assert!(!status.contains("⚠"), "{status}");
}

#[test]
fn status_shows_lists_in_order_with_numbers() {
    let sb = Sandbox::with_session();
    sb.ok(&[
        "update",
        "--objective",
        "obj",
        "--next",
        "nx",
        "--completed",
        "c1",
        "--remaining",
        "r1",
        "--remaining",
        "r2",
        "--blocker",
        "b1",
        "--decision",
        "d1",
        "--constraint",
        "k1",
        "--discovery",
        "x1",
    ]);
    let out = sb.ok(&["status"]);
    let order = [
        "Task:",
        "Objective: obj",
        "Next:      nx",
        "Completed (1):",
        "Remaining (2):",
        "   2. r2",
        "Blockers (1):",
        "Decisions (1):",
        "Constraints (1):",
        "Discoveries (1):",
        "Git:      main @",
        "Checkpoints: none yet",
    ];
    let mut at = 0;
    for want in order {
        let found = out[at..]
            .find(want)
            .unwrap_or_else(|| panic!("{want:?} not after byte {at} in:\n{out}"));
        at += found + want.len();
    }
    assert!(out.contains("Root:     "), "{out}");
}

#[test]
fn status_json_has_the_documented_shape() {
    let sb = Sandbox::with_session();
    sb.ok(&["checkpoint", "m"]);
    sb.write("x.txt", "x");
    let out = sb.ok(&["status", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["root"], sb.work.to_string_lossy().as_ref());
    assert!(
        v["session_file"]
            .as_str()
            .unwrap()
            .ends_with(".pas-agent/session.json")
    );
    assert_eq!(v["session"]["task"]["description"], "Build the thing");
    assert_eq!(v["git"]["branch"], "main");
    assert_eq!(v["git"]["dirty"], true);
    assert_eq!(v["stale"]["changed"][0]["path"], "x.txt");
    assert_eq!(v["stale"]["changed"][0]["status"], "Untracked");
    assert_eq!(v["stale"]["head"], serde_json::Value::Null);
}

#[test]
fn list_and_show() {
    let sb = Sandbox::with_session();
    let out = sb.ok(&["list"]);
    assert!(out.contains("pas-agent checkpoint"), "{out}");
    sb.write("a.txt", "a");
    sb.ok(&["checkpoint", "one"]);
    sb.ok(&["update", "--remaining", "later"]);
    sb.write("b.txt", "b");
    sb.ok(&["checkpoint", "two"]);
    let out = sb.ok(&["list"]);
    let head = sb.git(&["rev-parse", "--short=8", "HEAD"]);
    assert!(out.starts_with("work — 2 checkpoints\n"), "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[1].starts_with("  1  20")
            && lines[1].contains("  one  (1 file) [")
            && lines[1].ends_with(&format!("[{head}]")),
        "{out}"
    );
    assert!(lines[2].contains("  two  (2 files)"), "{out}");

    let json: serde_json::Value = serde_json::from_str(&sb.ok(&["list", "--json"])).unwrap();
    assert_eq!(json["checkpoints"][1]["number"], 2);
    assert_eq!(json["checkpoints"][1]["message"], "two");
    assert!(json["checkpoints"][1].get("task_snapshot").is_none());

    let out = sb.ok(&["show", "1"]);
    assert!(out.contains("Checkpoint #1"), "{out}");
    assert!(out.contains("Message:  one"), "{out}");
    assert!(
        !out.contains("later"),
        "the first snapshot predates the item: {out}"
    );
    assert!(out.contains("a.txt (untracked)"), "{out}");
    let id = sb.session()["checkpoints"][1]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let out = sb.ok(&["show", &id[id.len() - 6..]]);
    assert!(
        out.contains("Checkpoint #2") && out.contains("later"),
        "{out}"
    );
    let json: serde_json::Value = serde_json::from_str(&sb.ok(&["show", "2", "--json"])).unwrap();
    assert_eq!(json["number"], 2);
    assert_eq!(
        json["task_snapshot"]["remaining"],
        serde_json::json!(["later"])
    );
    let err = sb.fails(&["show", "3"], 2);
    assert!(err.contains("no checkpoint #3"), "{err}");
    sb.fails(&["show", "zzzzzz"], 2);
}

#[test]
fn global_dir_option_works_like_git() {
    let sb = Sandbox::with_session();
    let other = tempfile::tempdir().unwrap();
    let out = sb
        .cmd()
        .current_dir(other.path())
        .args(["-C", sb.work.to_str().unwrap(), "status"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("Build the thing"));
    let out = sb.run(&["-C", "/nonexistent/dir", "status"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("cannot change to /nonexistent/dir"));
}

#[test]
fn control_characters_never_reach_the_terminal() {
    let sb = Sandbox::with_session();
    sb.ok(&[
        "update",
        "--remaining",
        "evil \x1b[2J\x1b]0;title\x07 item",
        "--next",
        "\u{9b}31m",
    ]);
    sb.write("bad\x1b[31mname.txt", "x");
    sb.ok(&["checkpoint", "msg \x1b[1m"]);
    for args in [vec!["status"], vec!["list"], vec!["show", "1"]] {
        let out = sb.run(&args);
        for stream in [&out.stdout, &out.stderr] {
            let text = String::from_utf8_lossy(stream);
            assert!(
                !text.contains('\x1b') && !text.contains('\x07') && !text.contains('\u{9b}'),
                "{args:?}: {text:?}"
            );
        }
    }
}

#[test]
fn output_to_a_closed_pipe_is_not_a_crash() {
    let sb = Sandbox::with_session();
    for i in 0..30 {
        sb.ok(&[
            "checkpoint",
            &format!("checkpoint number {i} with a long message to fill the pipe"),
        ]);
    }
    let mut child = sb
        .cmd()
        .arg("list")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    assert!(out.status.code().is_some_and(|c| c == 0));
}

/// Runs pas-agent under `script(1)`, which gives it a terminal. Once `prompt` shows up in its
/// output, runs `meanwhile`, then types `answer`.
fn with_terminal(
    sb: &Sandbox,
    args: &str,
    prompt: &str,
    meanwhile: impl FnOnce(),
    answer: &str,
) -> (std::process::ExitStatus, String) {
    use std::io::{Read, Write};
    use std::sync::{Arc, Mutex};
    let mut cmd = std::process::Command::new("script");
    let bin = crate::common::bin();
    cmd.args([
        "-q",
        "-e",
        "-c",
        &format!("{} {args}", bin.display()),
        "/dev/null",
    ])
    .current_dir(&sb.work)
    .stdin(std::process::Stdio::piped())
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::null());
    for (k, v) in sb.cmd().get_envs() {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    let mut child = cmd.spawn().expect("script(1) from util-linux");
    let seen = Arc::new(Mutex::new(String::new()));
    let mut out = child.stdout.take().unwrap();
    let reader = {
        let seen = seen.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 1024];
            while let Ok(n) = out.read(&mut buf) {
                if n == 0 {
                    break;
                }
                seen.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        })
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while !seen.lock().unwrap().contains(prompt) {
        assert!(
            Instant::now() < deadline,
            "no {prompt:?} in {:?}",
            seen.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    meanwhile();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(answer.as_bytes()).unwrap();
    stdin.flush().unwrap();
    let status = child.wait().unwrap();
    drop(stdin);
    reader.join().unwrap();
    let text = seen.lock().unwrap().clone();
    (status, text)
}

#[test]
fn prompts_on_a_terminal_and_before_taking_the_lock() {
    let sb = Sandbox::repo();
    let (status, out) = with_terminal(&sb, "init", "Task description:", || {}, "Typed task\n");
    assert!(status.success(), "{out}");
    assert_eq!(sb.session()["task"]["description"], "Typed task");

    // While `checkpoint` waits for its message, other writers are not blocked (the original
    // held the lock during the prompt).
    let (status, out) = with_terminal(
        &sb,
        "checkpoint",
        "Checkpoint message:",
        || {
            let mut cmd = sb.cmd();
            cmd.env("PAS_AGENT_LOCK_TIMEOUT_MS", "200").args([
                "update",
                "--next",
                "written meanwhile",
            ]);
            let out = cmd.output().unwrap();
            assert!(out.status.success(), "{}", stderr(&out));
        },
        "Typed message\n",
    );
    assert!(status.success(), "{out}");
    let s = sb.session();
    assert_eq!(s["checkpoints"][0]["message"], "Typed message");
    assert_eq!(s["task"]["next_action"], "written meanwhile");
    assert_eq!(
        s["checkpoints"][0]["task_snapshot"]["next_action"],
        "written meanwhile"
    );
}

#[test]
fn item_numbers_that_are_not_numbers_get_a_clear_message() {
    let sb = Sandbox::with_session();
    sb.ok(&["update", "--remaining", "one"]);
    for args in [
        vec!["update", "--done", "one"],
        vec!["update", "--done", "-1"],
        vec!["update", "--resolve", "x"],
        vec!["remove", "remaining", "first"],
    ] {
        let err = sb.fails(&args, 2);
        assert!(
            err.contains("expected an item number, as `pas-agent status` shows them"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn show_accepts_the_start_of_an_id() {
    let sb = Sandbox::with_session();
    sb.ok(&["checkpoint", "one"]);
    let id = sb.session()["checkpoints"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(sb.ok(&["show", &id[..8]]).contains("Checkpoint #1"));
    assert!(sb.ok(&["show", &id]).contains("Checkpoint #1"));
}

#[test]
fn bad_environment_values_are_warned_about_not_ignored() {
    let sb = Sandbox::with_session();
    let mut cmd = sb.cmd();
    cmd.env("PAS_AGENT_LOCK_TIMEOUT_MS", "soon")
        .env("PAS_AGENT_GIT", "libgit2")
        .args(["update", "--next", "x"]);
    let out = cmd.output().unwrap();
    assert!(out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("PAS_AGENT_LOCK_TIMEOUT_MS=soon is not a number"),
        "{err}"
    );
    assert_eq!(
        err.matches("PAS_AGENT_GIT=libgit2 is not one of").count(),
        1,
        "once: {err}"
    );
}

#[test]
fn nested_inside_git_is_explained() {
    let sb = Sandbox::repo();
    std::fs::create_dir_all(sb.path("sub")).unwrap();
    let out = sb.run_in("sub", &["init", "--task", "t", "--nested"]);
    assert!(out.status.success());
    assert!(
        stderr(&out).contains("--nested only applies outside git"),
        "{}",
        stderr(&out)
    );
    assert!(sb.path(".pas-agent/session.json").exists());
}
