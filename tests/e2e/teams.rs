//! Teams : a committed session merges across branches with the merge driver, a
//! clone gets the driver on its first command, an unmerged session is reported and resolvable
//! without blocking the agent, and session files stay small on big trees.

use std::path::Path;

use serde_json::Value;

use crate::common::{Sandbox, stderr, stdout};

fn git_in(sb: &Sandbox, dir: &Path, args: &[&str]) -> std::process::Output {
    sb.git_cmd()
        .current_dir(dir)
        .args(args)
        .output()
        .expect("git")
}

fn items(v: &Value, list: &str) -> Vec<String> {
    v["task"][list]
        .as_array()
        .map(|a| a.iter().map(|i| i.as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

/// A session committed on main with two remaining items, then changed on `feat` (item 1 done,
/// one item added, a checkpoint) and on main (one item added, a checkpoint).
fn diverged() -> Sandbox {
    let sb = Sandbox::with_session();
    sb.ok(&[
        "update",
        "--remaining",
        "shared one",
        "--remaining",
        "shared two",
    ]);
    sb.git(&["add", "-A"]);
    sb.git(&["commit", "-q", "-m", "session"]);
    sb.git(&["checkout", "-q", "-b", "feat"]);
    sb.ok(&["update", "--done", "1", "--remaining", "from feat"]);
    sb.write("feat.txt", "feat\n");
    sb.ok(&["checkpoint", "on feat"]);
    sb.git(&["add", "-A"]);
    sb.git(&["commit", "-q", "-m", "feat work"]);
    sb.git(&["checkout", "-q", "main"]);
    sb.ok(&["update", "--remaining", "from main"]);
    sb.write("main.txt", "main\n");
    sb.ok(&["checkpoint", "on main"]);
    sb.git(&["add", "-A"]);
    sb.git(&["commit", "-q", "-m", "main work"]);
    sb
}

fn assert_union(sb: &Sandbox) {
    let s = sb.session();
    assert_eq!(items(&s, "completed"), ["shared one"], "{s:#}");
    let remaining = items(&s, "remaining");
    for want in ["shared two", "from feat", "from main"] {
        assert!(remaining.contains(&want.to_string()), "{remaining:?}");
    }
    assert!(!remaining.contains(&"shared one".to_string()));
    let messages: Vec<&str> = s["checkpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["message"].as_str().unwrap())
        .collect();
    assert!(
        messages.contains(&"on feat") && messages.contains(&"on main"),
        "{messages:?}"
    );
    // Every command still reads it.
    sb.ok(&["status"]);
    sb.ok(&["list"]);
    assert_eq!(sb.git(&["status", "--porcelain", "--", ".pas-agent"]), "");
}

#[test]
fn init_sets_up_attributes_and_repo_local_config() {
    let sb = Sandbox::with_session();
    assert!(
        sb.read(".pas-agent/.gitattributes")
            .contains("/session.json merge=pas-agent")
    );
    // Nothing outside .pas-agent/: the work tree stays clean.
    assert!(!sb.path(".gitattributes").exists());
    let driver = sb.git(&["config", "--local", "merge.pas-agent.driver"]);
    assert!(driver.contains("merge-driver %O %A %B %P"), "{driver}");
    assert!(
        driver.contains(
            &crate::common::bin()
                .canonicalize()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        )
    );
    // Nothing global.
    let global = sb
        .git_cmd()
        .args(["config", "--global", "merge.pas-agent.driver"])
        .output()
        .unwrap();
    assert!(!global.status.success());
    // Idempotent.
    sb.ok(&["merge-driver", "--install"]);
    assert_eq!(
        sb.read(".pas-agent/.gitattributes")
            .matches("merge=pas-agent")
            .count(),
        1
    );
}

#[test]
fn merge_of_diverged_branches_unions_both_sides() {
    let sb = diverged();
    let out = sb
        .git_cmd()
        .args(["merge", "-q", "feat", "-m", "merge feat"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_union(&sb);
}

#[test]
fn rebase_of_diverged_branches_unions_both_sides() {
    let sb = diverged();
    sb.git(&["checkout", "-q", "feat"]);
    let out = sb
        .git_cmd()
        .args(["rebase", "-q", "main"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert_union(&sb);
}

#[test]
fn cherry_pick_unions_both_sides() {
    let sb = diverged();
    let out = sb.git_cmd().args(["cherry-pick", "feat"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_union(&sb);
}

#[test]
fn both_sides_changing_the_task_keeps_the_loser_as_a_discovery() {
    let sb = Sandbox::with_session();
    sb.git(&["add", "-A"]);
    sb.git(&["commit", "-q", "-m", "session"]);
    sb.git(&["checkout", "-q", "-b", "feat"]);
    sb.ok(&["update", "--next", "feat step"]);
    sb.git(&["commit", "-q", "-am", "feat"]);
    sb.git(&["checkout", "-q", "main"]);
    sb.ok(&["update", "--next", "main step"]);
    sb.git(&["commit", "-q", "-am", "main"]);
    sb.git(&["merge", "-q", "feat", "-m", "m"]);
    let s = sb.session();
    let next = s["task"]["next_action"].as_str().unwrap().to_string();
    let other = if next == "main step" {
        "feat step"
    } else {
        "main step"
    };
    let discoveries = items(&s, "discoveries");
    assert!(
        discoveries
            .iter()
            .any(|d| d.contains(&format!("\"{other}\""))),
        "{discoveries:?}"
    );
}

#[test]
fn original_fields_and_unknown_fields_survive_a_merge() {
    let sb = Sandbox::with_session();
    // A file as the original (and a newer writer) might have it: unknown fields everywhere.
    let mut s = sb.session();
    s["future_top"] = serde_json::json!({"keep": [1, 2]});
    s["task"]["mood"] = "calm".into();
    sb.write(
        ".pas-agent/session.json",
        serde_json::to_string_pretty(&s).unwrap() + "\n",
    );
    sb.git(&["add", "-A"]);
    sb.git(&["commit", "-q", "-m", "session"]);
    sb.git(&["checkout", "-q", "-b", "feat"]);
    sb.ok(&["update", "--decision", "feat decision"]);
    sb.git(&["commit", "-q", "-am", "feat"]);
    sb.git(&["checkout", "-q", "main"]);
    sb.ok(&["update", "--constraint", "main constraint"]);
    sb.git(&["commit", "-q", "-am", "main"]);
    sb.git(&["merge", "-q", "feat", "-m", "m"]);
    let s = sb.session();
    assert_eq!(s["future_top"], serde_json::json!({"keep": [1, 2]}));
    assert_eq!(s["task"]["mood"], "calm");
    assert_eq!(s["schema_version"], 1);
    for key in [
        "id",
        "project_name",
        "created_at",
        "updated_at",
        "task",
        "git",
        "checkpoints",
    ] {
        assert!(s.get(key).is_some(), "{key} missing");
    }
    assert_eq!(items(&s, "decisions"), ["feat decision"]);
    assert_eq!(items(&s, "constraints"), ["main constraint"]);
}

#[test]
fn a_clone_gets_the_driver_on_its_first_command() {
    let sb = diverged();
    let clone = sb.tmp.path().join("clone");
    let out = git_in(
        &sb,
        sb.tmp.path(),
        &["clone", "-q", sb.work.to_str().unwrap(), "clone"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        !git_in(
            &sb,
            &clone,
            &["config", "--local", "merge.pas-agent.driver"]
        )
        .status
        .success()
    );
    let out = sb.cmd().current_dir(&clone).arg("status").output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("merge driver"), "{}", stderr(&out));
    let driver = git_in(
        &sb,
        &clone,
        &["config", "--local", "merge.pas-agent.driver"],
    );
    assert!(driver.status.success());
    assert!(stdout(&driver).contains("merge-driver"));
    // And it merges there.
    let out = git_in(&sb, &clone, &["merge", "-q", "origin/feat", "-m", "m"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let s: Value = serde_json::from_str(
        &std::fs::read_to_string(clone.join(".pas-agent/session.json")).unwrap(),
    )
    .unwrap();
    assert!(items(&s, "remaining").contains(&"from feat".to_string()));
}

#[test]
fn a_repository_cannot_choose_what_the_driver_runs() {
    let sb = Sandbox::with_session();
    // The repository's own files only name the driver; only our binary is ever configured.
    std::fs::remove_file(sb.path(".pas-agent/.gitattributes")).unwrap();
    sb.write(
        ".gitattributes",
        "/.pas-agent/session.json merge=pas-agent\n",
    );
    sb.git(&["config", "--local", "--unset-all", "merge.pas-agent.driver"]);
    sb.git(&["config", "--local", "--remove-section", "merge.pas-agent"]);
    sb.write(".pas-agent/evil.sh", "touch pwned\n");
    sb.ok(&["status"]);
    let driver = sb.git(&["config", "--local", "merge.pas-agent.driver"]);
    assert!(
        driver.starts_with(&format!(
            "'{}'",
            crate::common::bin().canonicalize().unwrap().display()
        )),
        "{driver}"
    );
    assert!(!sb.path("pwned").exists());
}

#[test]
fn without_the_driver_the_unmerged_session_is_reported_resolvable_and_does_not_block_agents() {
    let sb = Sandbox::with_session();
    std::fs::remove_file(sb.path(".pas-agent/.gitattributes")).unwrap();
    sb.git(&["config", "--local", "--remove-section", "merge.pas-agent"]);
    sb.ok(&[
        "update",
        "--remaining",
        "base item",
        "--remaining",
        "dropped on feat",
    ]);
    sb.git(&["add", "-A"]);
    sb.git(&["commit", "-q", "-m", "session"]);
    sb.git(&["checkout", "-q", "-b", "feat"]);
    sb.ok(&["remove", "remaining", "2"]);
    sb.ok(&["update", "--remaining", "from feat"]);
    sb.git(&["commit", "-q", "-am", "feat"]);
    sb.git(&["checkout", "-q", "main"]);
    sb.ok(&["update", "--remaining", "from main"]);
    sb.git(&["commit", "-q", "-am", "main"]);
    let out = sb
        .git_cmd()
        .args(["merge", "-q", "feat", "-m", "m"])
        .output()
        .unwrap();
    assert!(!out.status.success(), "plain git should conflict");
    assert!(sb.read(".pas-agent/session.json").contains("<<<<<<<"));

    let err = sb.fails(&["status"], 7);
    assert!(
        err.contains("unmerged") && err.contains("pas-agent resolve"),
        "{err}"
    );
    assert!(!err.contains("damaged"), "{err}");
    let prompt = sb.ok(&["prompt"]);
    assert_eq!(prompt.trim(), "session unmerged");
    // The hooked agent command still starts the agent (without a record).
    sb.stand_in("codex", "echo codex-ran \"$@\"");
    let out = sb.run(&["run", "codex", "--", "hello"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("codex-ran"), "{}", stdout(&out));
    assert!(stderr(&out).contains("unmerged"), "{}", stderr(&out));
    // A hooked shell's wrapper goes through `run` the same way; the bash hook prints the notice.

    sb.ok(&["resolve"]);
    let s = sb.session();
    let remaining = items(&s, "remaining");
    for want in ["base item", "from feat", "from main"] {
        assert!(remaining.contains(&want.to_string()), "{remaining:?}");
    }
    // The base comes from git's index: what feat removed stays removed.
    assert!(
        !remaining.contains(&"dropped on feat".to_string()),
        "{remaining:?}"
    );
    sb.git(&["add", ".pas-agent/session.json"]);
    sb.git(&["commit", "-q", "--no-edit"]);
    sb.ok(&["status"]);
}

fn file_count(dir: &Path, n: usize) {
    std::fs::create_dir_all(dir).unwrap();
    for i in 0..n {
        std::fs::write(dir.join(format!("f{i:06}.txt")), format!("{i}\n")).unwrap();
    }
}

#[test]
fn untracked_trees_add_kilobytes_per_checkpoint() {
    let sb = Sandbox::with_session();
    sb.git(&["add", "-A"]);
    sb.git(&["commit", "-q", "-m", "session"]);
    // 100,000 untracked files in 100 directories.
    for d in 0..100 {
        file_count(&sb.path(&format!("gen/d{d:03}")), 1000);
    }
    sb.write("src/edited.txt", "x\n");
    let mut sizes = Vec::new();
    for i in 0..5 {
        sb.write("src/edited.txt", format!("edit {i}\n"));
        sb.ok(&["checkpoint", &format!("cp {i}")]);
        sizes.push(
            std::fs::metadata(sb.path(".pas-agent/session.json"))
                .unwrap()
                .len(),
        );
    }
    // Kilobytes per checkpoint, not the ~14 MB of one entry per file.
    let per = (sizes[4] - sizes[0]) / 4;
    assert!(per < 8 * 1024, "{sizes:?}");
    assert!(sizes[4] < 64 * 1024, "{sizes:?}");
    let s = sb.session();
    let last = s["checkpoints"].as_array().unwrap().last().unwrap().clone();
    let generated = last["files_changed"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "gen/")
        .cloned();
    assert_eq!(
        generated.as_ref().map(|g| g["files"].clone()),
        Some(Value::from(100_000)),
        "{last:#}"
    );
    // `show` says how many files the collapsed entry stands for.
    let shown = sb.ok(&["show", "5"]);
    assert!(
        shown.contains("gen/ (") && shown.contains("100000 files)"),
        "{shown}"
    );
    // Every command still works, and an edit inside the collapsed tree is still seen.
    for args in [
        &["status"][..],
        &["list"],
        &["show", "5"],
        &["export", "--to", "codex"],
        &["prompt"],
    ] {
        sb.ok(args);
    }
    sb.ok(&["checkpoint", "after export"]);
    std::fs::write(sb.path("gen/d007/f000003.txt"), "changed\n").unwrap();
    let status = sb.ok(&["status"]);
    assert!(status.contains("gen/"), "{status}");
    sb.ok(&["prune", "--keep", "1"]);
    sb.ok(&["status"]);
}

#[test]
fn a_thousand_checkpoints_stay_small_on_a_ten_thousand_file_repository() {
    let sb = Sandbox::with_session();
    for d in 0..10 {
        file_count(&sb.path(&format!("src/m{d}")), 1000);
    }
    sb.git(&["add", "-A"]);
    sb.git(&["commit", "-q", "-m", "10k files"]);
    file_count(&sb.path("notes"), 50);
    sb.write("src/m0/f000001.txt", "edited\n");
    // Real checkpoints for the shape; the rest are copies of the last one with fresh ids (the
    // file size is what is measured, not the time of 1,000 tree scans).
    for i in 0..3 {
        sb.ok(&["checkpoint", &format!("real {i}")]);
    }
    let mut s = sb.session();
    let one = s["checkpoints"][2].clone();
    let per = serde_json::to_string_pretty(&one).unwrap().len();
    assert!(per < 4 * 1024, "one checkpoint is {per} bytes: {one:#}");
    let cps = s["checkpoints"].as_array_mut().unwrap();
    for i in 0..997 {
        let mut c = one.clone();
        c["id"] = Value::String(uuid_like(i));
        cps.push(c);
    }
    sb.write(
        ".pas-agent/session.json",
        serde_json::to_string_pretty(&s).unwrap() + "\n",
    );
    let size = std::fs::metadata(sb.path(".pas-agent/session.json"))
        .unwrap()
        .len();
    assert!(size < 4 * 1024 * 1024, "{size}");
    for args in [&["status"][..], &["list"], &["show", "1000"], &["prompt"]] {
        sb.ok(args);
    }
    sb.ok(&["update", "--remaining", "more"]);
    // The first change moves the old lists out: session.json keeps the latest 20.
    let moved = std::fs::metadata(sb.path(".pas-agent/session.json"))
        .unwrap()
        .len();
    assert!(moved < 1024 * 1024, "{moved}");
    assert!(sb.path(".pas-agent/history.jsonl").exists());
    sb.ok(&["checkpoint", "the 1001st"]);
    sb.ok(&["prune", "--keep", "10"]);
    let after = std::fs::metadata(sb.path(".pas-agent/session.json"))
        .unwrap()
        .len();
    assert!(after < size, "{after} >= {size}");
    assert_eq!(sb.session()["checkpoints"].as_array().unwrap().len(), 1001);
}

fn uuid_like(i: usize) -> String {
    format!("00000000-0000-4000-8000-{i:012}")
}

#[test]
fn prune_dry_run_changes_nothing_and_captures_age_out() {
    let sb = Sandbox::with_session();
    sb.write("a.txt", "a\n");
    sb.ok(&["checkpoint", "one"]);
    sb.write("b.txt", "b\n");
    sb.ok(&["checkpoint", "two"]);
    let before = sb.read(".pas-agent/session.json");
    let out = sb.ok(&["prune", "--keep", "1", "--dry-run"]);
    assert!(
        out.contains("Would drop the file lists of 1 checkpoint"),
        "{out}"
    );
    assert_eq!(sb.read(".pas-agent/session.json"), before);
    let listed = sb.session()["checkpoints"][0]["files_changed"]
        .as_array()
        .unwrap()
        .len();
    sb.ok(&["prune", "--keep", "1"]);
    let s = sb.session();
    assert_eq!(s["checkpoints"][0]["files_changed"], serde_json::json!([]));
    assert_eq!(s["checkpoints"][0]["files_changed_total"], listed);
    assert_eq!(
        s["checkpoints"][1]["files_changed"]
            .as_array()
            .unwrap()
            .len(),
        listed + 1
    );
    let bad = sb.run(&["prune", "--captures-older-than", "soon"]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn old_file_lists_move_to_the_history_file_and_show_reads_them_back() {
    let sb = Sandbox::with_session();
    for i in 0..25 {
        sb.write(&format!("f{i:02}.txt"), "x\n");
        sb.ok(&["checkpoint", &format!("cp {i}")]);
    }
    let s = sb.session();
    let cps = s["checkpoints"].as_array().unwrap();
    assert_eq!(cps.len(), 25);
    // The oldest 20 keep their place, message and count; their lists and task snapshots are
    // in history.jsonl.
    assert_eq!(cps[0]["files_changed"], serde_json::json!([]));
    assert_eq!(cps[0]["files_in_history"], true);
    assert!(cps[0]["files_changed_total"].as_u64().unwrap() >= 1);
    assert!(!cps[24]["files_changed"].as_array().unwrap().is_empty());
    let history = sb.read(".pas-agent/history.jsonl");
    assert_eq!(history.lines().count(), 20, "{history}");
    assert_eq!(
        cps[0]["task_snapshot"],
        serde_json::json!({
            "description": "", "objective": "", "completed": [], "remaining": [],
            "next_action": null, "blockers": [], "decisions": [], "constraints": [], "discoveries": []
        })
    );
    let shown = sb.ok(&["show", "1"]);
    assert!(shown.contains("f00.txt"), "{shown}");
    assert!(shown.contains("Build the thing"), "{shown}");
    let listed = sb.ok(&["list"]);
    assert!(!listed.contains(" 0 files"), "{listed}");
    // Committed and merged with git's union driver.
    assert!(
        sb.read(".pas-agent/.gitattributes")
            .contains("/history.jsonl merge=union")
    );
    sb.ok(&["prune", "--keep", "3"]);
    assert_eq!(sb.read(".pas-agent/history.jsonl").lines().count(), 0);
    assert!(sb.ok(&["show", "1"]).contains("the list was pruned"));
}

#[test]
fn show_warns_when_the_history_file_holding_a_list_cannot_be_read() {
    let sb = Sandbox::with_session();
    for i in 0..22 {
        sb.write(&format!("f{i:02}.txt"), "x\n");
        sb.ok(&["checkpoint", &format!("cp {i}")]);
    }
    assert_eq!(sb.session()["checkpoints"][0]["files_in_history"], true);
    // Past the read limit (64 MiB), cheaply: a sparse tail of zeros.
    let file = sb.path(".pas-agent/history.jsonl");
    let big = 64 * 1024 * 1024 + 1;
    std::fs::OpenOptions::new()
        .write(true)
        .open(&file)
        .unwrap()
        .set_len(big)
        .unwrap();
    let out = sb.run(&["show", "1"]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("warning: cannot read .pas-agent/history.jsonl") && err.contains("too large"),
        "{err}"
    );
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains(".pas-agent/history.jsonl cannot be read, so the list cannot be shown"),
        "{shown}"
    );
    assert!(!shown.contains("was pruned"), "{shown}");
    assert_eq!(std::fs::metadata(&file).unwrap().len(), big);
}

#[test]
fn readers_never_use_a_summary_of_another_version_of_the_file() {
    let sb = Sandbox::with_session();
    sb.ok(&["update", "--next", "first step"]);
    sb.git(&["add", "-A"]);
    sb.git(&["commit", "-q", "-m", "one"]);
    assert!(sb.ok(&["status"]).contains("first step"));
    sb.ok(&["update", "--next", "second step"]);
    assert!(sb.ok(&["status"]).contains("second step"));
    // Git puts the committed version back: same path, other content.
    sb.git(&["checkout", "--", ".pas-agent/session.json"]);
    let status = sb.ok(&["status"]);
    assert!(status.contains("first step"), "{status}");
    assert!(!status.contains("second step"), "{status}");
    let notice = sb.ok(&["prompt"]);
    assert!(notice.contains("Build the thing"), "{notice}");
}

/// A driver defined for a binary that is gone (moved, reinstalled elsewhere) would make git
/// leave the session unmerged with one side only and no markers: the next command points the
/// definition at the running binary again. A definition the user wrote is left alone.
#[test]
fn a_driver_whose_binary_is_gone_is_pointed_at_this_one_again() {
    let sb = Sandbox::with_session();
    let gone = sb.tmp.path().join("old-install/pas-agent");
    let value = format!("'{}' merge-driver %O %A %B %P", gone.display());
    sb.git(&["config", "--local", "merge.pas-agent.driver", &value]);
    sb.ok(&["status"]);
    let now = sb.git(&["config", "--local", "merge.pas-agent.driver"]);
    assert!(!now.contains("old-install"), "{now}");
    assert!(now.contains("merge-driver %O %A %B %P"), "{now}");
    let exe = now.trim().trim_end_matches(" merge-driver %O %A %B %P");
    assert!(
        Path::new(exe.trim_matches('\'')).is_file(),
        "the driver names no file: {now}"
    );
    // With the set-up turned off, nothing is written.
    sb.git(&["config", "--local", "--remove-section", "merge.pas-agent"]);
    let mut cmd = sb.cmd();
    let out = cmd
        .env("PAS_AGENT_MERGE_DRIVER", "0")
        .arg("status")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        sb.git_cmd()
            .args(["config", "--local", "merge.pas-agent.driver"])
            .output()
            .unwrap()
            .status
            .code(),
        Some(1),
        "the driver was defined although the set-up is off"
    );
    // The user's own definition stays as it is.
    sb.git(&[
        "config",
        "--local",
        "merge.pas-agent.driver",
        "my-merge %O %A %B",
    ]);
    sb.ok(&["status"]);
    assert_eq!(
        sb.git(&["config", "--local", "merge.pas-agent.driver"])
            .trim(),
        "my-merge %O %A %B"
    );
}

/// A merge driver that cannot run (a user's definition that fails, a binary that is gone
/// since) makes git leave `session.json` unmerged in the index but holding one side only, with
/// no conflict markers. `resolve` merges the two sides from git's index all the same.
#[test]
fn resolve_merges_from_the_index_when_the_driver_could_not_run() {
    let sb = diverged();
    sb.git(&["config", "--local", "merge.pas-agent.driver", "false"]);
    let out = sb
        .git_cmd()
        .args(["merge", "-q", "feat", "-m", "merge feat"])
        .output()
        .unwrap();
    assert!(!out.status.success(), "the failing driver made no conflict");
    assert!(
        !sb.read(".pas-agent/session.json").contains("<<<<<<<"),
        "git wrote markers: this test needs the markerless case"
    );
    let said = sb.ok(&["resolve"]);
    assert!(said.contains("Merged both sides"), "{said}");
    sb.git(&["add", ".pas-agent/session.json"]);
    sb.git(&["commit", "-q", "--no-edit"]);
    assert_union(&sb);
}
