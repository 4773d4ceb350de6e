//! `status` on small repositories, fifth round: the fast pass's per-directory
//! lookup of names (a hash table of the directory's children in the index, filled by walking
//! the index in byte order) and the summary's files stored as one string of rows must give
//! the answers gix's full status, git and a full read of `session.json` give.

use std::process::Command;

use crate::common::*;

/// `status --json` as shipped, with the fast paths off, and through the git CLI: the three
/// must agree, and the fast pass must be the one that answered as shipped.
fn status_agrees(sb: &Sandbox, state: &str) -> serde_json::Value {
    let run = |env: &[(&str, &str)]| {
        let mut cmd = sb.cmd();
        cmd.args(["status", "--json"])
            .env("PAS_AGENT_STATUS_TRACE", "1");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().expect("run pas-agent");
        assert!(
            out.status.success(),
            "{state}: status {env:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let json = serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("json");
        (json, String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (fast, trace) = run(&[]);
    assert!(
        trace.contains("pas-agent: status: fast"),
        "{state}: the fast pass did not answer: {trace}"
    );
    let (full, _) = run(&[("PAS_AGENT_FULL_STATUS", "1")]);
    let (cli, _) = run(&[("PAS_AGENT_GIT", "cli")]);
    assert_eq!(fast["stale"], full["stale"], "{state}: fast vs full");
    assert_eq!(fast["stale"], cli["stale"], "{state}: in process vs git");
    fast
}

/// Every file's times set long before the index is written (no racily clean entry).
fn age_files(sb: &Sandbox) {
    let status = Command::new("find")
        .arg(sb.path("."))
        .args(["-path", "*/.git", "-prune", "-o", "-exec", "touch", "-h"])
        .args(["-d", "2020-01-01 00:00:00", "{}", "+"])
        .status()
        .unwrap();
    assert!(status.success());
}

/// Names whose order as bytes differs from their order as index paths (`a-b/…` < `a.txt` <
/// `a/…` < `a0.txt`: a directory sorts as if followed by `/`), names that are a tracked file
/// in one place and a directory in another, and every kind of untracked name among them:
/// the fast pass must tell tracked from untracked exactly as gix and git do.
#[test]
fn fast_pass_names_that_sort_differently_as_bytes_and_as_index_paths() {
    let sb = Sandbox::with_session();
    let tracked = [
        "a-b/c.txt",
        "a.txt",
        "a/b.txt",
        "a/b/c.txt",
        "a/b-c.txt",
        "a/b.c/d.txt",
        "a0.txt",
        "a0/x.txt",
        "b/file-or-dir",
        "c/dir-or-file/inner.txt",
        "c/keep.txt",
        "d/sub/deep/e.txt",
        "d/sub.txt",
        "d/sub0",
    ];
    for path in tracked {
        sb.write(path, format!("{path}\n"));
    }
    age_files(&sb);
    sb.git(&["add", "-A"]);
    sb.git(&["commit", "-q", "-m", "names"]);
    sb.git(&["update-index", "-q", "--refresh"]);
    sb.ok(&["checkpoint", "baseline"]);
    let clean = status_agrees(&sb, "clean");
    assert_eq!(stale_changed(&clean), Vec::<String>::new(), "{clean}");

    // Untracked names beside and between the tracked ones, at every level.
    for path in [
        "a.b",
        "a-b/new.txt",
        "a/b.d",
        "a/b/new.txt",
        "a/b.c/new.txt",
        "a/new-dir/x.txt",
        "a00",
        "d/sub/deep0/y.txt",
        "d/sub.txt0",
        "d/sub0.d/z.txt",
    ] {
        sb.write(path, "new\n");
    }
    // A tracked file replaced by a directory of that name, and a tracked directory by a file.
    std::fs::remove_file(sb.path("b/file-or-dir")).unwrap();
    sb.write("b/file-or-dir/now-a-file-inside.txt", "x\n");
    std::fs::remove_dir_all(sb.path("c/dir-or-file")).unwrap();
    sb.write("c/dir-or-file", "now a file\n");
    // Nothing tracked is touched again: `touch` would move every tracked file's ctime, and
    // the fast pass rightly hands a file whose stat data moved to gix (when the test crossed
    // a second since the index was refreshed). Untracked names are never stat-compared.
    let after = status_agrees(&sb, "changed");
    let mut listed = stale_changed(&after);
    listed.sort();
    assert_eq!(
        listed,
        vec![
            "a-b/new.txt:Untracked",
            "a.b:Untracked",
            "a/b.c/new.txt:Untracked",
            "a/b.d:Untracked",
            "a/b/new.txt:Untracked",
            "a/new-dir/x.txt:Untracked",
            "a00:Untracked",
            "b/file-or-dir/now-a-file-inside.txt:Untracked",
            "b/file-or-dir:Deleted",
            "c/dir-or-file/inner.txt:Deleted",
            "c/dir-or-file:Untracked",
            "d/sub.txt0:Untracked",
            "d/sub/deep0/y.txt:Untracked",
            "d/sub0.d/z.txt:Untracked",
        ],
        "{after}"
    );
}

/// The latest checkpoint's files, stored as rows in the summary, read back as recorded: names
/// with the characters the rows and JSON treat specially (`-`, digits and `:`, quotes,
/// backslashes, a tab, a newline, non-ASCII), a rename, and a deletion. `status`'s text must be
/// the same from the summary, from a full read (summary removed), and with the rows damaged
/// (then the summary is not used).
#[test]
fn summary_rows_give_the_same_status_as_a_full_read() {
    let (sb, runtime) = session_with_runtime();
    let names = [
        "-",
        "12:34",
        "3:abc",
        "with \"quotes\"",
        "back\\slash",
        "tab\there",
        "new\nline",
        "déjà vu.txt",
        "old name.txt",
        "gone.txt",
    ];
    for name in names {
        sb.write(name, format!("{name}\n"));
    }
    sb.git(&["add", "-A"]);
    sb.git(&["commit", "-q", "-m", "names"]);
    for name in &names[..8] {
        sb.write(name, format!("{name} changed\n"));
    }
    sb.git(&["mv", "old name.txt", "new name.txt"]);
    std::fs::remove_file(sb.path("gone.txt")).unwrap();
    sb.ok(&["checkpoint", "odd names"]);
    let session_files = sb.session()["checkpoints"][0]["files_changed"].clone();
    assert_eq!(
        session_files.as_array().map(Vec::len),
        Some(10),
        "{session_files}"
    );
    // Half of them move on; the others must be matched by the fingerprints read back from
    // the rows, or they would be listed as changed too.
    for name in &names[..4] {
        sb.write(name, format!("{name} changed again\n"));
    }
    sb.write("gone.txt", "back\n");

    let from_summary = sb.ok(&["status"]);
    let stored = std::fs::read_to_string(one_cache_file(&runtime, ".3.json")).unwrap();
    let stored: serde_json::Value = serde_json::from_str(&stored).unwrap();
    assert!(
        stored["files"]
            .as_str()
            .is_some_and(|rows| !rows.is_empty()),
        "the files are stored as rows: {stored}"
    );
    assert!(
        stored["session"]["checkpoints"][0]["files_changed"]
            .as_array()
            .is_some_and(Vec::is_empty),
        "{stored}"
    );
    for name in ["-", "12:34", "3:abc", "with \"quotes\"", "gone.txt"] {
        assert!(from_summary.contains(name), "{name}: {from_summary}");
    }
    for name in ["back\\slash", "déjà vu.txt", "new name.txt"] {
        assert!(!from_summary.contains(name), "{name}: {from_summary}");
    }
    let json = sb.ok(&["status", "--json"]);
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        json["session"]["checkpoints"][0]["files_changed"],
        session_files
    );

    // Without the summary (a full read, which stores it again), and with damaged rows.
    std::fs::remove_file(one_cache_file(&runtime, ".3.json")).unwrap();
    assert_eq!(sb.ok(&["status"]), from_summary);
    assert_eq!(sb.ok(&["status"]), from_summary);
    let path = one_cache_file(&runtime, ".3.json");
    let mut damaged: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let rows = damaged["files"].as_str().unwrap().to_string();
    for bad in [format!("{rows}M"), format!("X{}", &rows[1..])] {
        damaged["files"] = serde_json::Value::String(bad.clone());
        std::fs::write(&path, serde_json::to_vec(&damaged).unwrap()).unwrap();
        assert_eq!(sb.ok(&["status"]), from_summary, "rows {bad:?}");
    }
}
