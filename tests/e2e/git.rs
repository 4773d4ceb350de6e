//! Git state through gix and through the git CLI fallback, on real repositories of every shape,
//! and stale-checkpoint detection.

use serde_json::{Value, json};

use crate::common::{Sandbox, stderr};

/// Runs `checkpoint` with the given backend and returns the checkpoint's files.
fn checkpoint_files(sb: &Sandbox, backend: &str, message: &str) -> Value {
    let mut cmd = sb.cmd();
    cmd.env("PAS_AGENT_GIT", backend)
        .args(["checkpoint", message]);
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{backend}: {}", stderr(&out));
    assert!(
        !stderr(&out).contains("warning"),
        "{backend}: {}",
        stderr(&out)
    );
    sb.session()["checkpoints"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()["files_changed"]
        .clone()
}

#[test]
fn every_kind_of_change_is_recorded_the_same_by_gix_and_the_cli() {
    let sb = Sandbox::repo();
    sb.write("tracked.txt", "one\n");
    sb.write("to-delete.txt", "bye\n");
    sb.write("old-name.txt", "moving\n");
    sb.write(".gitignore", "ignored.log\n");
    sb.git(&["add", "."]);
    sb.git(&["commit", "-qm", "files"]);
    sb.ok(&["init", "--task", "t"]);

    sb.write("tracked.txt", "hello\n"); // modified in the work tree
    std::fs::remove_file(sb.path("to-delete.txt")).unwrap(); // deleted
    sb.git(&["mv", "old-name.txt", "new name ü.txt"]); // staged rename
    sb.write("staged.txt", "staged\n");
    sb.git(&["add", "staged.txt"]);
    sb.write("staged.txt", "changed\n"); // AM
    sb.write("newdir/a/b.txt", "hello\n"); // untracked directory, expanded
    sb.write("newdir/c.txt", "c\n");
    sb.write("ignored.log", "never listed");
    std::os::unix::fs::symlink("target.txt", sb.path("link")).unwrap();

    let want = json!([
        {"path": "link", "status": "Untracked", "fingerprint": "link:92002be171f85b3e"},
        {"path": "new name ü.txt", "status": {"Renamed": {"from": "old-name.txt"}}, "fingerprint": "1e7133566094ccf7"},
        {"path": "newdir/a/b.txt", "status": "Untracked", "fingerprint": "a9bc80cca21f28b3"},
        {"path": "newdir/c.txt", "status": "Untracked", "fingerprint": "08a2b407b54ac268"},
        {"path": "staged.txt", "status": "Added", "fingerprint": "617edd5024bb1003"},
        {"path": "to-delete.txt", "status": "Deleted"},
        {"path": "tracked.txt", "status": "Modified", "fingerprint": "a9bc80cca21f28b3"},
    ]);
    let gix = checkpoint_files(&sb, "gix", "gix");
    let cli = checkpoint_files(&sb, "cli", "cli");
    assert_eq!(gix, cli, "both backends agree");
    assert_eq!(gix, want);
    assert_eq!(sb.session()["git"]["dirty"], true);
}

#[test]
fn a_repository_without_commits() {
    let sb = Sandbox::plain();
    sb.git(&["init", "-q", "-b", "trunk"]);
    let out = sb.ok(&["init", "--task", "t"]);
    assert!(out.contains("Git:     trunk @ no commits"), "{out}");
    assert!(!out.contains("HEAD"), "{out}");
    let s = sb.session();
    assert_eq!(
        s["git"],
        json!({"branch": "trunk", "commit": null, "dirty": false})
    );
    sb.write("a.txt", "x");
    for backend in ["gix", "cli"] {
        let files = checkpoint_files(&sb, backend, backend);
        assert_eq!(files[0]["path"], "a.txt");
        assert_eq!(files[0]["status"], "Untracked");
    }
    sb.ok(&["export", "--to", "codex"]);
    assert!(
        sb.read("AGENTS.md")
            .contains("- **Commit:** (no commits yet)")
    );
    let list = sb.ok(&["list"]);
    assert!(list.contains("[no commits]"), "{list}");
}

#[test]
fn a_detached_head() {
    let sb = Sandbox::repo();
    sb.ok(&["init", "--task", "t"]);
    let head = sb.git(&["rev-parse", "HEAD"]);
    sb.git(&["checkout", "-q", "--detach"]);
    for backend in ["gix", "cli"] {
        let mut cmd = sb.cmd();
        cmd.env("PAS_AGENT_GIT", backend).args(["status"]);
        let out = String::from_utf8(cmd.output().unwrap().stdout).unwrap();
        assert!(
            out.contains(&format!("Git:      detached HEAD @ {}", &head[..8])),
            "{backend}: {out}"
        );
    }
    sb.ok(&["checkpoint", "m"]);
    assert_eq!(sb.session()["git"]["branch"], Value::Null);
    sb.ok(&["export", "--to", "codex"]);
    assert!(
        sb.read("AGENTS.md")
            .contains("- **Branch:** (detached HEAD)")
    );
}

#[test]
fn reftable_repositories_fall_back_to_the_git_cli() {
    let sb = Sandbox::plain();
    sb.git(&["init", "-q", "-b", "main", "--ref-format=reftable"]);
    sb.write("a.txt", "a");
    sb.git(&["add", "a.txt"]);
    sb.git(&["commit", "-qm", "a"]);
    let head = sb.git(&["rev-parse", "HEAD"]);
    let out = sb.run(&["init", "--task", "t"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
    let s = sb.session();
    assert_eq!(s["git"]["branch"], "main");
    assert_eq!(s["git"]["commit"], head.as_str());
    sb.write("b.txt", "hello\n");
    sb.write("a.txt", "changed\n");
    let out = sb.ok(&["checkpoint", "m"]);
    assert!(out.contains("2 files"), "{out}");
    let files = &sb.session()["checkpoints"][0]["files_changed"];
    assert_eq!(
        files[0],
        json!({"path": "a.txt", "status": "Modified", "fingerprint": "617edd5024bb1003"})
    );
    assert_eq!(files[1]["status"], "Untracked");
}

#[test]
fn sparse_index_repositories_fall_back_to_the_git_cli() {
    let sb = Sandbox::repo();
    sb.write("in/a.txt", "a");
    sb.write("out/b.txt", "b");
    sb.git(&["add", "."]);
    sb.git(&["commit", "-qm", "dirs"]);
    sb.git(&["sparse-checkout", "set", "--cone", "--sparse-index", "in"]);
    assert!(!sb.path("out/b.txt").exists());
    sb.ok(&["init", "--task", "t"]);
    sb.write("in/a.txt", "hello\n");
    let out = sb.run(&["checkpoint", "m"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
    let files = &sb.session()["checkpoints"][0]["files_changed"];
    assert_eq!(
        files,
        &json!([{"path": "in/a.txt", "status": "Modified", "fingerprint": "a9bc80cca21f28b3"}])
    );
}

#[test]
fn each_linked_worktree_has_its_own_session() {
    let sb = Sandbox::repo();
    sb.ok(&["init", "--task", "main work"]);
    let wt = sb.tmp.path().join("feature-wt");
    sb.git(&[
        "worktree",
        "add",
        "-q",
        "-b",
        "feature",
        wt.to_str().unwrap(),
    ]);
    let mut cmd = sb.cmd();
    cmd.current_dir(&wt).args(["status"]);
    let out = cmd.output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(3),
        "the worktree has no session yet"
    );
    let mut cmd = sb.cmd();
    cmd.current_dir(&wt)
        .args(["init", "--task", "feature work"]);
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value =
        serde_json::from_slice(&std::fs::read(wt.join(".pas-agent/session.json")).unwrap())
            .unwrap();
    assert_eq!(v["git"]["branch"], "feature");
    assert_eq!(v["task"]["description"], "feature work");
    assert_eq!(sb.session()["task"]["description"], "main work");
}

#[test]
fn submodules_have_their_own_root_and_show_as_modified_in_the_parent() {
    let sub = Sandbox::repo();
    let sb = Sandbox::repo();
    let mut cmd = sb.git_cmd();
    cmd.args(["-c", "protocol.file.allow=always", "submodule", "add", "-q"])
        .arg(&sub.work)
        .arg("lib");
    assert!(cmd.status().unwrap().success());
    sb.git(&["commit", "-qm", "submodule"]);
    sb.ok(&["init", "--task", "parent"]);
    let out = sb.run_in("lib", &["init", "--task", "child"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(sb.path("lib/.pas-agent/session.json").exists());
    // A change inside the submodule is one modified entry in the parent.
    sb.write("lib/README.md", "changed\n");
    for backend in ["gix", "cli"] {
        let files = checkpoint_files(&sb, backend, backend);
        assert_eq!(files.as_array().unwrap().len(), 1, "{backend}: {files}");
        assert_eq!(files[0]["path"], "lib");
        assert_eq!(files[0]["status"], "Modified");
    }
}

#[test]
fn a_session_rooted_below_the_repository_top_only_counts_its_subtree() {
    let sb = Sandbox::plain();
    std::fs::create_dir_all(sb.path("app")).unwrap();
    sb.run_in("app", &["init", "--task", "app work"]);
    sb.git(&["init", "-q", "-b", "main"]);
    sb.write("outside.txt", "x");
    sb.write("app/inside.txt", "hello\n");
    let out = sb.run_in("app", &["checkpoint", "m"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&sb.read("app/.pas-agent/session.json")).unwrap();
    let files = &v["checkpoints"][0]["files_changed"];
    assert_eq!(
        files,
        &json!([{"path": "app/inside.txt", "status": "Untracked", "fingerprint": "a9bc80cca21f28b3"}])
    );
}

#[test]
fn stale_detection_follows_the_original_and_closes_its_gaps() {
    let sb = Sandbox::with_session();
    sb.write("README.md", "edited once\n");
    sb.write("notes.txt", "n1\n");
    sb.ok(&["checkpoint", "cp"]);
    assert!(!sb.ok(&["status"]).contains("⚠"));

    // Editing an already-modified file again is stale.
    sb.write("README.md", "edited twice\n");
    let out = sb.ok(&["status"]);
    assert!(
        out.contains("⚠ 1 file changed since the last checkpoint"),
        "{out}"
    );
    assert!(out.contains("    README.md (modified)"), "{out}");
    sb.ok(&["checkpoint", "cp2"]);

    // Committing the files: HEAD moved and each file is no longer changed.
    sb.git(&["add", "README.md", "notes.txt"]);
    sb.git(&["commit", "-qm", "work"]);
    let out = sb.ok(&["status"]);
    assert!(
        out.contains("⚠ HEAD moved since the last checkpoint"),
        "{out}"
    );
    assert!(out.contains("README.md (no longer changed)"), "{out}");
    assert!(out.contains("notes.txt (no longer changed)"), "{out}");
    sb.ok(&["checkpoint", "cp3"]);

    // A source file that merely mentions the marker is still tracked.
    sb.write("src.md", "see <!-- pas-agent:start in the docs\n");
    sb.ok(&["checkpoint", "cp4"]);
    sb.write("src.md", "see <!-- pas-agent:start in the docs, edited\n");
    assert!(sb.ok(&["status"]).contains("src.md (untracked)"));
    sb.ok(&["checkpoint", "cp5"]);

    // An export of a committed context file does not make the checkpoint stale…
    sb.write("CLAUDE.md", "# Rules\n\nBe careful.\n");
    sb.git(&["add", "CLAUDE.md", "src.md"]);
    sb.git(&["commit", "-qm", "rules"]);
    sb.ok(&["checkpoint", "cp6"]);
    sb.ok(&["export", "--to", "claude"]);
    assert!(!sb.ok(&["status"]).contains("⚠"), "{}", sb.ok(&["status"]));
    sb.ok(&["export", "--to", "claude"]);
    sb.ok(&["checkpoint", "cp7"]);
    sb.ok(&["update", "--next", "something"]);
    sb.ok(&["export", "--to", "claude"]);
    let out = sb.ok(&["status"]);
    assert!(!out.contains("CLAUDE.md"), "{out}");
    // …but a hand edit outside the block does (the original missed it).
    let text = sb
        .read("CLAUDE.md")
        .replace("Be careful.", "Be very careful.");
    sb.write("CLAUDE.md", text);
    let out = sb.ok(&["status"]);
    assert!(out.contains("CLAUDE.md (modified)"), "{out}");
    sb.ok(&["checkpoint", "cp8"]);

    // A branch switch at the same commit is noticed (the original missed it).
    sb.git(&["switch", "-q", "-c", "other"]);
    let out = sb.ok(&["status"]);
    assert!(
        out.contains("⚠ branch changed since the last checkpoint"),
        "{out}"
    );
    assert!(out.contains("branch main → other"), "{out}");
    sb.ok(&["checkpoint", "cp9"]);

    // Task edits are reported by status.
    sb.ok(&["update", "--remaining", "more"]);
    let out = sb.ok(&["status"]);
    assert!(
        out.contains("Task updated since the last checkpoint"),
        "{out}"
    );
    assert!(
        !out.contains('⚠'),
        "a task edit alone is not a warning: {out}"
    );
    assert!(out.contains("    task: remaining changed"), "{out}");
}

#[test]
fn a_staged_deletion_of_a_file_still_on_disk_is_untracked_every_time() {
    let sb = Sandbox::repo();
    sb.write("Cargo.lock", "hello\n");
    sb.write("other.txt", "x\n");
    // Enough tracked files that the parallel parts of the status take comparable time.
    for i in 0..400 {
        sb.write(&format!("src/m{}/f{i}.rs", i % 20), "fn f() {}\n");
    }
    sb.git(&["add", "."]);
    sb.git(&["commit", "-qm", "lock"]);
    sb.ok(&["init", "--task", "t"]);
    sb.git(&["rm", "-q", "--cached", "Cargo.lock"]);
    sb.git(&["rm", "-q", "--cached", "other.txt"]);
    let want = json!([
        {"path": "Cargo.lock", "status": "Untracked", "fingerprint": "a9bc80cca21f28b3"},
        {"path": "other.txt", "status": "Untracked", "fingerprint": "08f0de07b58d2b17"},
    ]);
    let first = checkpoint_files(&sb, "cli", "cli");
    assert_eq!(first, want);
    // The in-process status reports the index deletion and the untracked file from parallel
    // threads, in any order; the result must not depend on it.
    for i in 0..15 {
        assert_eq!(
            checkpoint_files(&sb, "gix", &format!("gix {i}")),
            first,
            "run {i}"
        );
    }
}
