//! The store: bad input, compatibility with the original's format, locking and concurrency.

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::{Sandbox, session_readers, stderr, stdout};

const SESSION: &str = ".pas-agent/session.json";

#[test]
fn damaged_session_files_are_reported_and_never_rewritten() {
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty", Vec::new(), "empty"),
        ("whitespace", b"  \n\t".to_vec(), "empty"),
        ("truncated", br#"{"schema_version": 1, "id": "46d89609-104d-4a43-907d-dbca99704a85", "task": {"descr"#.to_vec(), "truncated"),
        ("not utf-8", b"{\"id\": \"\xff\xfe\"}".to_vec(), "not valid UTF-8"),
        ("bom", b"\xEF\xBB\xBF{}".to_vec(), "byte order mark"),
        ("wrong type", br#"{"id": "46d89609-104d-4a43-907d-dbca99704a85", "project_name": ["x"], "created_at": "2026-09-17T04:30:00Z", "updated_at": "2026-09-17T04:30:00Z", "task": {}}"#.to_vec(), "line 1 column"),
        ("bad timestamp", br#"{"id": "46d89609-104d-4a43-907d-dbca99704a85", "project_name": "x", "created_at": "yesterday", "updated_at": "2026-09-17T04:30:00Z", "task": {}}"#.to_vec(), "not a valid session file"),
        ("not an object", b"[]".to_vec(), "not a valid session file"),
        ("trailing garbage", br#"{"id": "46d89609-104d-4a43-907d-dbca99704a85", "project_name": "x", "created_at": "2026-09-17T04:30:00Z", "updated_at": "2026-09-17T04:30:00Z", "task": {}} }"#.to_vec(), "trailing characters"),
    ];
    for (name, bytes, problem) in cases {
        let sb = Sandbox::with_session();
        sb.write(SESSION, &bytes);
        for args in session_readers() {
            let out = sb.run(&args);
            assert_eq!(
                out.status.code(),
                Some(5),
                "{name}: {args:?}: {}",
                stderr(&out)
            );
            let err = stderr(&out);
            assert!(
                err.contains("session.json"),
                "{name}: error names the file: {err}"
            );
            assert!(err.contains(problem), "{name}: {args:?}: {err}");
            assert!(!err.contains("panicked"), "{err}");
            assert_eq!(
                sb.bytes(SESSION),
                bytes,
                "{name}: {args:?} changed the file"
            );
        }
        assert!(
            !sb.path("AGENTS.md").exists(),
            "{name}: export wrote nothing"
        );
    }
}

#[test]
fn a_newer_schema_version_is_refused_and_kept() {
    let sb = Sandbox::with_session();
    let mut s = sb.session();
    s["schema_version"] = json!(2);
    s["task"] = json!("a newer layout");
    let bytes = serde_json::to_vec_pretty(&s).unwrap();
    sb.write(SESSION, &bytes);
    for args in session_readers() {
        let err = sb.fails(&args, 5);
        assert!(err.contains("schema version 2 is newer"), "{args:?}: {err}");
        assert!(err.contains("upgrade pas-agent"), "{err}");
    }
    assert_eq!(sb.bytes(SESSION), bytes);
}

#[test]
fn an_oversized_session_file_is_refused() {
    let sb = Sandbox::with_session();
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(sb.path(SESSION))
        .unwrap();
    f.set_len(64 * 1024 * 1024 + 1).unwrap();
    drop(f);
    let err = sb.fails(&["status"], 5);
    assert!(err.contains("larger than"), "{err}");
    assert_eq!(
        std::fs::metadata(sb.path(SESSION)).unwrap().len(),
        64 * 1024 * 1024 + 1
    );
}

/// A session file as the original PAS-Agent 0.2.x writes it (docs/format.md), plus
/// fields from a hypothetical newer writer at every level.
fn original_session(commit: &str) -> Value {
    json!({
        "schema_version": 1,
        "id": "46d89609-104d-4a43-907d-dbca99704a85",
        "project_name": "my-project",
        "created_at": "2026-09-17T04:30:00Z",
        "updated_at": "2026-09-17T04:39:00.123456789Z",
        "task": {
            "description": "Implement user authentication",
            "objective": "",
            "completed": ["Created login endpoint"],
            "remaining": ["Add token refresh", "Logout"],
            "next_action": "Implement token refresh endpoint",
            "blockers": [],
            "decisions": ["Use bcrypt for hashing"],
            "constraints": [],
            "discoveries": [],
            "priority": "high"
        },
        "git": { "branch": "main", "commit": commit, "dirty": true, "stash": 2 },
        "checkpoints": [
            {
                "id": "0b6e4a8e-6f3c-4d52-9a1e-3f1d2c4b5a69",
                "timestamp": "2026-09-17T04:35:00Z",
                "message": "Login flow done",
                "task_snapshot": { "description": "Implement user authentication", "completed": ["Created login endpoint"] },
                "git": { "branch": "main", "commit": commit, "dirty": true },
                "files_changed": [
                    { "path": "src/auth.rs", "status": "Modified", "fingerprint": "a9bc80cca21f28b3" },
                    { "path": "src/new name.rs", "status": { "Renamed": { "from": "src/old.rs" } }, "fingerprint": "617edd5024bb1003" },
                    { "path": "gone.txt", "status": "Deleted" },
                    { "path": "link", "status": "Untracked", "fingerprint": "link:92002be171f85b3e" },
                    { "path": "copied.rs", "status": "Copied", "fingerprint": "cbf29ce484222325", "similarity": 90 }
                ],
                "author": "someone"
            }
        ],
        "future_top_level": { "nested": [1, 2, 3] }
    })
}

#[test]
fn a_session_written_by_the_original_loads_shows_and_survives_an_update() {
    let sb = Sandbox::repo();
    let head = sb.git(&["rev-parse", "HEAD"]);
    let original = original_session(&head);
    sb.write(SESSION, serde_json::to_vec_pretty(&original).unwrap());

    let out = sb.ok(&["status"]);
    for want in [
        "Project:  my-project",
        "Task:      Implement user authentication",
        "Next:      Implement token refresh endpoint",
        "Remaining (2):",
        "Checkpoints: 1 (latest 2026-09-17 04:35 UTC — Login flow done)",
    ] {
        assert!(out.contains(want), "{want:?} in:\n{out}");
    }
    let show = sb.ok(&["show", "1"]);
    assert!(
        show.contains("src/new name.rs (renamed from src/old.rs)"),
        "{show}"
    );
    assert!(show.contains("copied.rs (copied)"), "{show}");

    sb.ok(&["update", "--completed", "Token refresh"]);
    let after = sb.session();
    // Everything the update did not touch is exactly as it was, unknown fields included.
    let mut expected = original.clone();
    expected["task"]["completed"] = json!(["Created login endpoint", "Token refresh"]);
    expected["updated_at"] = after["updated_at"].clone();
    // The git state is refreshed from the repository (the tree is clean now); the field this
    // tool does not know stays.
    expected["git"]["dirty"] = json!(false);
    // Task fields the original left out of a snapshot are written with their defaults, as the
    // original itself does on save.
    expected["checkpoints"][0]["task_snapshot"] = json!({
        "description": "Implement user authentication", "objective": "",
        "completed": ["Created login endpoint"], "remaining": [], "next_action": null,
        "blockers": [], "decisions": [], "constraints": [], "discoveries": []
    });
    assert_eq!(after, expected);
    assert_ne!(after["updated_at"], original["updated_at"]);
}

#[test]
fn a_legacy_file_without_schema_version_loads_as_version_1() {
    let sb = Sandbox::repo();
    let mut s = original_session(&sb.git(&["rev-parse", "HEAD"]));
    s.as_object_mut().unwrap().remove("schema_version");
    sb.write(SESSION, serde_json::to_vec(&s).unwrap());
    sb.ok(&["update", "--next", "go"]);
    assert_eq!(sb.session()["schema_version"], 1);
}

#[test]
fn files_we_write_stay_in_the_original_layout() {
    let sb = Sandbox::with_session();
    sb.write("a.txt", "hello\n");
    sb.ok(&["checkpoint", "m"]);
    let text = sb.read(SESSION);
    assert!(text.ends_with("}\n"), "trailing newline");
    assert!(
        text.starts_with("{\n  \"schema_version\": 1,\n  \"id\": "),
        "{text}"
    );
    let keys: Vec<String> = sb.session().as_object().unwrap().keys().cloned().collect();
    assert_eq!(
        keys,
        [
            "schema_version",
            "id",
            "project_name",
            "created_at",
            "updated_at",
            "task",
            "git",
            "checkpoints"
        ]
    );
    let task_keys: Vec<String> = sb.session()["task"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(
        task_keys,
        [
            "description",
            "objective",
            "completed",
            "remaining",
            "next_action",
            "blockers",
            "decisions",
            "constraints",
            "discoveries"
        ]
    );
}

#[test]
fn permissions_and_symlinks_of_the_session_file_are_kept() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::with_session();
    std::fs::set_permissions(sb.path(SESSION), std::fs::Permissions::from_mode(0o600)).unwrap();
    sb.ok(&["update", "--next", "a"]);
    let mode = std::fs::metadata(sb.path(SESSION))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);

    // session.json as a link to a file elsewhere in the project: written through, link kept.
    // (A link out of the session root is refused: tests/e2e/safety_fs.rs.)
    let elsewhere = sb.path("kept-elsewhere.json");
    std::fs::rename(sb.path(SESSION), &elsewhere).unwrap();
    std::os::unix::fs::symlink("../kept-elsewhere.json", sb.path(SESSION)).unwrap();
    sb.ok(&["update", "--next", "b"]);
    assert!(
        std::fs::symlink_metadata(sb.path(SESSION))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let v: Value = serde_json::from_slice(&std::fs::read(&elsewhere).unwrap()).unwrap();
    assert_eq!(v["task"]["next_action"], "b");
}

#[test]
fn a_read_only_session_file_is_not_replaced() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::with_session();
    std::fs::set_permissions(sb.path(SESSION), std::fs::Permissions::from_mode(0o444)).unwrap();
    let before = sb.bytes(SESSION);
    let err = sb.fails(&["update", "--next", "a"], 1);
    assert!(err.contains("read-only"), "{err}");
    assert_eq!(sb.bytes(SESSION), before);
}

#[test]
fn existing_gitignore_is_never_changed() {
    let sb = Sandbox::repo();
    std::fs::create_dir_all(sb.path(".pas-agent")).unwrap();
    sb.write(".pas-agent/.gitignore", "# mine\n*\n");
    sb.ok(&["init", "--task", "t"]);
    sb.ok(&["update", "--next", "n"]);
    assert_eq!(sb.read(".pas-agent/.gitignore"), "# mine\n*\n");
}

#[test]
fn a_held_lock_times_out_writers_with_exit_4_but_never_readers() {
    let sb = Sandbox::with_session();
    // flock(1) takes the same kind of lock (flock(2)) that pas-agent takes.
    let mut holder = std::process::Command::new("flock")
        .arg("--no-fork")
        .arg(sb.path(".pas-agent/session.lock"))
        .args(["sleep", "30"])
        .stdout(Stdio::null())
        .spawn()
        .expect("flock(1) from util-linux");
    // Wait until the lock is really held.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let probe = std::process::Command::new("flock")
            .args([
                "-n",
                sb.path(".pas-agent/session.lock").to_str().unwrap(),
                "true",
            ])
            .status()
            .unwrap();
        if !probe.success() {
            break;
        }
        assert!(Instant::now() < deadline, "flock never took the lock");
        std::thread::sleep(Duration::from_millis(20));
    }
    let before = sb.bytes(SESSION);
    let mut cmd = sb.cmd();
    cmd.env("PAS_AGENT_LOCK_TIMEOUT_MS", "300")
        .args(["update", "--next", "x"]);
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("locked by another process"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("session.lock"), "{}", stderr(&out));
    assert_eq!(sb.bytes(SESSION), before);
    let mut cmd = sb.cmd();
    cmd.env("PAS_AGENT_LOCK_TIMEOUT_MS", "300")
        .args(["export", "--to", "claude"]);
    assert_eq!(cmd.output().unwrap().status.code(), Some(4));
    assert!(!sb.path("CLAUDE.md").exists());
    // Readers do not lock.
    for args in [
        vec!["status"],
        vec!["list"],
        vec!["runs"],
        vec!["status", "--json"],
    ] {
        sb.ok(&args);
    }
    holder.kill().unwrap();
    holder.wait().unwrap();
    sb.ok(&["update", "--next", "x"]);
}

#[test]
fn thirty_two_concurrent_updates_all_land_while_a_reader_loops() {
    let sb = Sandbox::with_session();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let stop = stop.clone();
        let mut proto = sb.cmd();
        proto.arg("status");
        let bin = crate::common::bin();
        let work = sb.work.clone();
        let envs: Vec<(std::ffi::OsString, std::ffi::OsString)> = proto
            .get_envs()
            .filter_map(|(k, v)| v.map(|v| (k.to_owned(), v.to_owned())))
            .collect();
        std::thread::spawn(move || {
            let mut reads = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                let out = std::process::Command::new(&bin)
                    .arg("status")
                    .current_dir(&work)
                    .envs(envs.iter().map(|(k, v)| (k, v)))
                    .stdin(Stdio::null())
                    .output()
                    .unwrap();
                assert!(out.status.success(), "reader failed: {}", stderr(&out));
                reads += 1;
            }
            reads
        })
    };
    let children: Vec<_> = (0..32)
        .map(|i| {
            let mut c = sb.cmd();
            c.env("PAS_AGENT_LOCK_TIMEOUT_MS", "60000")
                .args(["update", "--remaining", &format!("item {i:02}")])
                .stdout(Stdio::null())
                .stderr(Stdio::piped());
            c.spawn().unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let reads = reader.join().expect("the reader never saw an error");
    assert!(reads > 0);
    let mut items: Vec<String> = sb.session()["task"]["remaining"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    items.sort();
    let want: Vec<String> = (0..32).map(|i| format!("item {i:02}")).collect();
    assert_eq!(items, want);
    // No temp files left behind.
    let leftovers: Vec<_> = std::fs::read_dir(sb.path(".pas-agent"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn status_json_is_stable_for_scripts() {
    let sb = Sandbox::with_session();
    let v: Value = serde_json::from_str(&sb.ok(&["status", "--json"])).unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["root", "session_file", "session", "git", "stale"]);
    assert_eq!(v["stale"], Value::Null);
    let out = sb.run(&["status", "--json"]);
    assert!(stdout(&out).ends_with("}\n"));
}
