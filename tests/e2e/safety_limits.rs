//! Size limits that writers respect, the git CLI path
//! agreeing with the in-process one (and a missing git never erasing what was recorded), a run
//! outcome that survives a full disk, and session values or file names this version cannot
//! keep exactly.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::common::{Sandbox, changed_paths, last_run, session_readers, stderr, stdout};

const SESSION: &str = ".pas-agent/session.json";
const MIB: usize = 1024 * 1024;

/// FNV-1a 64 of `bytes` as 16 hex digits: the record's fingerprint of a small file.
fn fnv(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x100000001b3);
    }
    format!("{h:016x}")
}

/// Rewrites `session.json` through a JSON edit (bypassing pas-agent).
fn edit_session(sb: &Sandbox, edit: impl FnOnce(&mut Value)) {
    let mut s = sb.session();
    edit(&mut s);
    sb.write(SESSION, serde_json::to_vec_pretty(&s).unwrap());
}

// ---------------------------------------------------------------------------------------------
// Item 8: never write what will not be read back.

#[test]
fn a_session_near_the_limit_refuses_the_update_that_would_cross_it_and_remove_still_works() {
    let sb = Sandbox::with_session();
    let size = std::fs::metadata(sb.path(SESSION)).unwrap().len() as usize;
    // One discovery that brings the file to 100 bytes under 64 MiB.
    let filler = "x".repeat(64 * MIB - size - 100 - 40);
    edit_session(&sb, |s| s["task"]["discoveries"] = json!([filler]));
    let before = sb.bytes(SESSION);
    assert!(before.len() <= 64 * MIB, "{}", before.len());
    assert!(before.len() > 64 * MIB - 400, "{}", before.len());

    let err = sb.fails(&["update", "--discovery", &"y".repeat(400)], 1);
    assert!(err.contains("session.json"), "{err}");
    assert!(err.contains("64 MiB"), "{err}");
    assert!(err.contains("nothing was written"), "{err}");
    assert!(err.contains("pas-agent remove"), "{err}");
    assert!(sb.bytes(SESSION) == before, "the file was changed");

    // Still readable, and the way out works.
    sb.ok(&["status"]);
    sb.ok(&["remove", "discoveries", "1"]);
    assert!(sb.bytes(SESSION).len() < 4096);
    sb.ok(&["update", "--discovery", "small"]);
}

#[test]
fn a_session_already_over_the_limit_can_be_shrunk_by_remove() {
    // As pas-agent 0.3.0 could leave it: one update past the limit.
    let sb = Sandbox::with_session();
    let filler = "x".repeat(64 * MIB + 1000);
    edit_session(&sb, |s| {
        s["task"]["discoveries"] = json!([filler, "keep me"]);
    });
    let before = sb.bytes(SESSION);
    let err = sb.fails(&["status"], 5);
    assert!(err.contains("64 MiB"), "{err}");
    assert!(err.contains("pas-agent remove"), "{err}");
    // A change that stays over the limit is refused, with the file untouched.
    let err = sb.fails(&["update", "--discovery", "more"], 1);
    assert!(err.contains("nothing was written"), "{err}");
    assert!(sb.bytes(SESSION) == before);
    // One that brings it under is written.
    sb.ok(&["remove", "discoveries", "1"]);
    assert_eq!(sb.session()["task"]["discoveries"], json!(["keep me"]));
    sb.ok(&["status"]);
}

#[test]
fn an_export_that_would_cross_the_context_file_limit_is_refused_before_writing() {
    let sb = Sandbox::with_session();
    // About 17 MB of discoveries: a session well under its own limit.
    let chunk = "d".repeat(MIB);
    edit_session(&sb, |s| {
        s["task"]["discoveries"] = Value::Array((0..17).map(|_| json!(chunk)).collect());
    });
    sb.write("AGENTS.md", "# My notes\n");
    let err = sb.fails(&["export", "--to", "codex"], 6);
    assert!(err.contains("AGENTS.md"), "{err}");
    assert!(err.contains("16 MiB"), "{err}");
    assert!(err.contains("nothing was written"), "{err}");
    assert_eq!(sb.read("AGENTS.md"), "# My notes\n");
    // No file is created either.
    let err = sb.fails(&["export", "--to", "claude"], 6);
    assert!(err.contains("CLAUDE.md"), "{err}");
    assert!(!sb.path("CLAUDE.md").exists());
    // After shrinking, the export goes through and the next one reads it back.
    sb.ok(&[
        "remove",
        "discoveries",
        "1",
        "2",
        "3",
        "4",
        "5",
        "6",
        "7",
        "8",
        "9",
        "10",
    ]);
    sb.ok(&["export", "--to", "codex"]);
    sb.ok(&["export", "--to", "codex"]);
    // The block may stand above the notes (Codex reads only the first 32 KiB), but the notes
    // are kept as they were.
    let text = sb.read("AGENTS.md");
    assert!(
        text.starts_with("# My notes\n") || text.ends_with("\n# My notes\n"),
        "{}",
        &text[..200.min(text.len())]
    );
}

// ---------------------------------------------------------------------------------------------
// Item 12: the git CLI path gives the same answers as gix, and a missing git erases nothing.

/// Runs pas-agent with a backend (`None`: the default) and returns the output.
fn with_backend(
    sb: &Sandbox,
    dir: &str,
    backend: Option<&str>,
    args: &[&str],
) -> std::process::Output {
    let mut cmd = sb.cmd();
    cmd.current_dir(sb.path(dir)).args(args);
    if let Some(b) = backend {
        cmd.env("PAS_AGENT_GIT", b);
    }
    cmd.output().unwrap()
}

#[test]
fn a_bare_repository_is_refused_by_every_backend() {
    let sb = Sandbox::plain();
    sb.git(&["init", "-q", "--bare", "s.git"]);
    std::fs::create_dir_all(sb.path("s.git/refs/sub")).unwrap();
    for dir in ["s.git", "s.git/refs/sub"] {
        for backend in [None, Some("gix"), Some("cli")] {
            let out = with_backend(&sb, dir, backend, &["init", "--task", "t"]);
            assert_eq!(
                out.status.code(),
                Some(1),
                "{backend:?} in {dir}: {}",
                stderr(&out)
            );
            assert!(
                stderr(&out).contains("bare git repository"),
                "{backend:?}: {}",
                stderr(&out)
            );
            assert!(
                !sb.path("s.git/.pas-agent").exists(),
                "{backend:?} wrote into the bare repository"
            );
            assert!(!sb.path(&format!("{dir}/.pas-agent")).exists());
        }
    }
    // Inside the .git directory of a work tree: refused alike.
    let sb = Sandbox::repo();
    for backend in [None, Some("gix"), Some("cli")] {
        let out = with_backend(&sb, ".git", backend, &["init", "--task", "t"]);
        assert_eq!(out.status.code(), Some(1), "{backend:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("inside a .git directory"),
            "{}",
            stderr(&out)
        );
        assert!(!sb.path(".git/.pas-agent").exists());
    }
}

/// What a backend says about the work tree: the session's git state after `checkpoint`, and
/// the checkpoint's files.
fn observe(sb: &Sandbox, backend: Option<&str>) -> (Value, Value) {
    let out = with_backend(sb, "", backend, &["checkpoint", "observe"]);
    assert!(out.status.success(), "{backend:?}: {}", stderr(&out));
    assert!(
        !stderr(&out).contains("warning"),
        "{backend:?}: {}",
        stderr(&out)
    );
    let s = sb.session();
    let files = s["checkpoints"].as_array().unwrap().last().unwrap()["files_changed"].clone();
    (s["git"].clone(), files)
}

fn some_changes(sb: &Sandbox) {
    sb.write("README.md", "changed\n");
    sb.write("new dir/untracked.txt", "u\n");
}

#[test]
fn both_backends_agree_on_every_repository_shape() {
    // (name, how to make it, whether gix can read it in-process)
    type Make = fn(&Sandbox);
    let shapes: Vec<(&str, Make, bool)> = vec![
        (
            "plain",
            |sb| {
                sb.git(&["init", "-q", "-b", "main"]);
                sb.write("README.md", "r\n");
                sb.git(&["add", "."]);
                sb.git(&["commit", "-qm", "c"]);
            },
            true,
        ),
        (
            "unborn",
            |sb| {
                sb.git(&["init", "-q", "-b", "trunk"]);
                sb.write("README.md", "r\n");
            },
            true,
        ),
        (
            "detached",
            |sb| {
                sb.git(&["init", "-q", "-b", "main"]);
                sb.write("README.md", "r\n");
                sb.git(&["add", "."]);
                sb.git(&["commit", "-qm", "c"]);
                sb.git(&["checkout", "-q", "--detach"]);
            },
            true,
        ),
        (
            "sha256",
            |sb| {
                sb.git(&["init", "-q", "-b", "main", "--object-format=sha256"]);
                sb.write("README.md", "r\n");
                sb.git(&["add", "."]);
                sb.git(&["commit", "-qm", "c"]);
            },
            false,
        ),
        (
            "sha256 unborn",
            |sb| {
                sb.git(&["init", "-q", "-b", "main", "--object-format=sha256"]);
            },
            false,
        ),
        (
            "reftable",
            |sb| {
                sb.git(&["init", "-q", "-b", "main", "--ref-format=reftable"]);
                sb.write("README.md", "r\n");
                sb.git(&["add", "."]);
                sb.git(&["commit", "-qm", "c"]);
            },
            true,
        ),
    ];
    for (name, make, in_process) in shapes {
        let sb = Sandbox::plain();
        make(&sb);
        let out = sb.run(&["init", "--task", name]);
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        assert!(
            !stderr(&out).contains("warning"),
            "{name}: {}",
            stderr(&out)
        );
        some_changes(&sb);
        let head = sb
            .git_cmd()
            .args(["rev-parse", "--verify", "-q", "HEAD"])
            .output()
            .unwrap();
        let head = String::from_utf8_lossy(&head.stdout).trim().to_string();
        let cli = observe(&sb, Some("cli"));
        let auto = observe(&sb, None);
        assert_eq!(cli, auto, "{name}: the CLI and the default disagree");
        if in_process {
            assert_eq!(
                cli,
                observe(&sb, Some("gix")),
                "{name}: the CLI and gix disagree"
            );
        }
        let want_commit = if head.is_empty() {
            Value::Null
        } else {
            json!(head)
        };
        assert_eq!(cli.0["commit"], want_commit, "{name}");
        assert_eq!(cli.0["dirty"], true, "{name}");
        let paths: Vec<&str> = cli
            .1
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["path"].as_str().unwrap())
            .collect();
        assert!(
            paths.contains(&"new dir/untracked.txt"),
            "{name}: {paths:?}"
        );
    }
}

#[test]
fn a_run_in_a_sha256_repository_that_makes_the_first_commit_records_its_files() {
    let sb = Sandbox::plain();
    sb.git(&["init", "-q", "-b", "main", "--object-format=sha256"]);
    sb.ok(&["init", "--task", "t"]);
    sb.stand_in(
        "committer",
        "echo hi > first.txt && git add first.txt && git commit -qm first",
    );
    let out = sb.run(&["run", "--no-pty", "--", "committer"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
    let run = last_run(&sb);
    assert_eq!(run["commits"].as_array().unwrap().len(), 1, "{run}");
    assert_eq!(run["head_after"].as_str().unwrap().len(), 64, "{run}");
    assert_eq!(run["files_changed"][0]["path"], "first.txt", "{run}");
}

/// A `PATH` with no git on it (only the sandbox's own bin directory).
fn without_git(sb: &Sandbox, backend: Option<&str>, args: &[&str]) -> std::process::Output {
    let mut cmd = sb.cmd();
    cmd.env("PATH", &sb.bin_dir).args(args);
    if let Some(b) = backend {
        cmd.env("PAS_AGENT_GIT", b);
    }
    cmd.output().unwrap()
}

#[test]
fn a_missing_or_failing_git_never_erases_the_recorded_git_state() {
    let sb = Sandbox::with_session();
    sb.ok(&["update", "--next", "x"]);
    let recorded = sb.session()["git"].clone();
    assert!(recorded["commit"].is_string(), "{recorded}");
    for args in [
        &["update", "--discovery", "no git here"][..],
        &["checkpoint", "no git"][..],
        &["run", "--no-pty", "--", "true-agent"][..],
    ] {
        sb.stand_in("true-agent", "exit 0");
        let out = without_git(&sb, Some("cli"), args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("recorded earlier is kept"),
            "{args:?}: {}",
            stderr(&out)
        );
        assert_eq!(
            sb.session()["git"],
            recorded,
            "{args:?} erased the git state"
        );
    }
    assert_eq!(sb.session()["task"]["discoveries"], json!(["no git here"]));
    // A git that runs but fails.
    sb.stand_in("git", "echo 'fatal: broken' >&2; exit 128");
    let out = with_backend(
        &sb,
        "",
        Some("cli"),
        &["update", "--discovery", "broken git"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(sb.session()["git"], recorded);
    std::fs::remove_file(sb.bin_dir.join("git")).unwrap();

    // A reftable repository needs the CLI even by default.
    let sb = Sandbox::plain();
    sb.git(&["init", "-q", "-b", "main", "--ref-format=reftable"]);
    sb.write("a", "a");
    sb.git(&["add", "a"]);
    sb.git(&["commit", "-qm", "a"]);
    sb.ok(&["init", "--task", "t"]);
    let recorded = sb.session()["git"].clone();
    assert!(recorded["commit"].is_string(), "{recorded}");
    let out = without_git(&sb, None, &["update", "--next", "y"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(sb.session()["git"], recorded);

    // `init` with the CLI forced and no git cannot know where the session belongs: it says so
    // rather than guessing.
    let sb = Sandbox::repo();
    std::fs::create_dir_all(sb.path("sub")).unwrap();
    let mut cmd = sb.cmd();
    cmd.current_dir(sb.path("sub"))
        .env("PATH", &sb.bin_dir)
        .env("PAS_AGENT_GIT", "cli")
        .args(["init", "--task", "t"]);
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("cannot tell whether"),
        "{}",
        stderr(&out)
    );
    assert!(!sb.path("sub/.pas-agent").exists());
}

// ---------------------------------------------------------------------------------------------
// Item 13: an agent that fills the disk does not lose the run's outcome.

/// A tmpfs mounted on a directory for the length of a test.
struct SmallFs(PathBuf);

impl SmallFs {
    /// Mounts a `size` tmpfs on `dir`; `None` (with a message) where mounting is not permitted.
    // A test may say on stderr why it skipped; nothing here prints session text.
    #[allow(clippy::disallowed_macros)]
    fn mount(dir: &Path, size: &str) -> Option<SmallFs> {
        let out = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0755"),
                "tmpfs",
            ])
            .arg(dir)
            .output();
        match out {
            Ok(o) if o.status.success() => Some(SmallFs(dir.to_path_buf())),
            Ok(o) => {
                eprintln!(
                    "SKIPPED: cannot mount a {size} tmpfs here (needs root or CAP_SYS_ADMIN): {}",
                    String::from_utf8_lossy(&o.stderr).trim()
                );
                None
            }
            Err(e) => {
                eprintln!("SKIPPED: cannot run mount: {e}");
                None
            }
        }
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// A sandbox on a small disk. Fields drop in order: the filesystem is unmounted before the
/// sandbox's directory is removed.
struct OnSmallDisk {
    _fs: SmallFs,
    sb: Sandbox,
}

/// A sandbox whose work directory is a 2 MiB filesystem holding a repository and a session.
fn sandbox_on_a_small_disk() -> Option<OnSmallDisk> {
    let sb = Sandbox::plain();
    let fs = SmallFs::mount(&sb.work, "2m")?;
    sb.init_repo();
    sb.ok(&["init", "--task", "fill the disk"]);
    Some(OnSmallDisk { _fs: fs, sb })
}

#[test]
fn an_agent_that_fills_the_disk_keeps_its_outcome() {
    let Some(disk) = sandbox_on_a_small_disk() else {
        return;
    };
    let sb = &disk.sb;
    sb.stand_in(
        "filler",
        "head -c 8000000 /dev/zero > fill 2>/dev/null; exit 3",
    );
    let out = sb.run(&["run", "--no-pty", "--", "filler"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let run = last_run(sb);
    assert_eq!(run["state"], "finished", "{run}\n{}", stderr(&out));
    assert_eq!(run["exit_code"], 3, "{run}");
    assert!(run["ended_at"].is_string(), "{run}");
    assert!(changed_paths(&run).contains(&"fill"), "{run}");
    // Nothing of the reserve is left, and later commands agree.
    assert!(
        !sb.path(".pas-agent/runs")
            .read_dir()
            .is_ok_and(|mut d| d.next().is_some())
    );
    std::fs::remove_file(sb.path("fill")).unwrap();
    let runs: Value = serde_json::from_str(&sb.ok(&["runs", "--json"])).unwrap();
    assert_eq!(runs["runs"][0]["state"], "finished");
}

/// A hostile agent: fills the disk, takes the launcher's reserve too, fills it again.
const GREEDY: &str = "head -c 8000000 /dev/zero > fill 2>/dev/null; rm -f .pas-agent/runs/*/outcome.reserve; head -c 8000000 /dev/zero > fill2 2>/dev/null; exit 3";

/// Runs [`GREEDY`] with inherited stdio: it exits 3 and the launcher says the outcome could
/// not be written. Returns the launcher's stderr.
fn run_greedy(sb: &Sandbox) -> String {
    sb.stand_in("greedy", GREEDY);
    let out = sb.run(&["run", "--no-pty", "--", "greedy"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("could not be written"), "{err}");
    assert!(err.contains("exited 3"), "{err}");
    err
}

/// Removes what [`GREEDY`] wrote, so there is space again, and runs `pas-agent runs`.
fn free_the_disk_and_list_runs(sb: &Sandbox) -> std::process::Output {
    std::fs::remove_file(sb.path("fill")).unwrap();
    std::fs::remove_file(sb.path("fill2")).unwrap();
    let out = sb.run(&["runs"]);
    assert!(out.status.success(), "{}", stderr(&out));
    out
}

#[test]
fn an_outcome_with_no_room_in_the_project_is_kept_in_the_run_registry() {
    let Some(disk) = sandbox_on_a_small_disk() else {
        return;
    };
    let sb = &disk.sb;
    let err = run_greedy(sb);
    assert!(err.contains("No space left"), "{err}");
    assert!(
        err.contains("kept in the machine-wide run registry"),
        "{err}"
    );
    assert_eq!(last_run(sb)["state"], "running");
    // While the disk is still full, commands work and the outcome waits.
    let out = sb.run(&["status"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(last_run(sb)["state"], "running");
    // Space again: the next command records the outcome.
    free_the_disk_and_list_runs(sb);
    let run = last_run(sb);
    assert_eq!(run["state"], "finished", "{run}");
    assert_eq!(run["exit_code"], 3, "{run}");
    assert!(
        run["outcome_recorded_late"]
            .as_str()
            .unwrap()
            .contains("No space left"),
        "{run}"
    );
    let all: Value = serde_json::from_str(&sb.ok(&["runs", "--all", "--json"])).unwrap();
    assert_eq!(
        all["runs"],
        json!([]),
        "the registry entry is gone once recorded"
    );
}

#[test]
fn an_outcome_that_cannot_be_kept_anywhere_is_reported_and_never_called_a_kill() {
    let Some(mut disk) = sandbox_on_a_small_disk() else {
        return;
    };
    // The run registry on the same full disk.
    let state = disk.sb.path(".git/pas-agent-state");
    disk.sb.env.push((
        "PAS_AGENT_STATE_DIR".into(),
        state.to_string_lossy().into_owned(),
    ));
    let sb = &disk.sb;
    let err = run_greedy(sb);
    assert!(err.contains("could not be kept anywhere"), "{err}");
    // Space again: the run is closed without claiming a kill.
    let out = free_the_disk_and_list_runs(sb);
    assert!(!stderr(&out).contains("killed"), "{}", stderr(&out));
    let run = last_run(sb);
    assert_eq!(run["state"], "abandoned", "{run}");
    assert_eq!(run["signal"], Value::Null);
    sb.ok(&["export", "--to", "codex"]);
    let block = sb.read("AGENTS.md");
    assert!(block.contains("abandoned"), "{block}");
    assert!(!block.contains("killed"), "{block}");
}

#[test]
fn a_kept_outcome_is_recorded_by_the_next_command() {
    // The launcher died after keeping the outcome it could not save: the next command records
    // the run as finished with that outcome, not as abandoned.
    let sb = Sandbox::with_session();
    sb.stand_in("suicidal", "kill -9 $PPID; sleep 1; exit 0");
    let out = sb.run(&["run", "--no-pty", "--", "suicidal"]);
    assert_eq!(
        out.status.code(),
        None,
        "the launcher was killed: {}",
        stderr(&out)
    );
    let run = last_run(&sb);
    assert_eq!(run["state"], "running");
    let id = run["id"].as_str().unwrap();
    let pending = json!({
        "run_id": id,
        "nonce": run["nonce"],
        "ended_at": "2026-11-30T12:00:00Z",
        "duration_ms": 1234,
        "exit_code": 3,
        "signal": null,
        "reason": "No space left on device (os error 28)",
    });
    sb.write(
        &format!(".pas-agent/runs/{id}/outcome.json"),
        serde_json::to_vec(&pending).unwrap(),
    );
    let out = sb.run(&["status"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("recorded as finished"),
        "{}",
        stderr(&out)
    );
    let run = last_run(&sb);
    assert_eq!(run["state"], "finished", "{run}");
    assert_eq!(run["exit_code"], 3);
    assert_eq!(run["duration_ms"], 1234);
    assert_eq!(
        run["outcome_recorded_late"],
        "No space left on device (os error 28)"
    );
    assert!(!sb.path(&format!(".pas-agent/runs/{id}")).exists());
}

// ---------------------------------------------------------------------------------------------
// Item 18: values, names and paths this version must not mangle.

#[test]
fn values_this_version_cannot_keep_exactly_are_refused_and_never_rewritten() {
    let base = |extra: &str| {
        format!(
            r#"{{"schema_version": 1, "id": "46d89609-104d-4a43-907d-dbca99704a85", "project_name": "p", "created_at": "2026-09-17T04:30:00Z", "updated_at": "2026-09-17T04:30:00Z", "task": {{"description": "t", "remaining": ["a"]}}{extra}}}"#
        )
    };
    let cases = [
        (
            r#", "future": 123456789012345678901234567890"#,
            "cannot be kept exactly",
        ),
        (
            r#", "future": -99999999999999999999"#,
            "cannot be kept exactly",
        ),
        (
            r#", "future": 0.10000000000000000000000001"#,
            "cannot be kept exactly",
        ),
        (
            r#", "future": {"deep": [1e-400]}"#,
            "cannot be kept exactly",
        ),
        (r#", "future": 1e400"#, "number out of range"),
        (r#", "future": [-0]"#, "cannot be kept exactly"),
        (
            r#", "runs": [{"duration_ms": 1.0}]"#,
            "invalid type: floating point",
        ),
        (r#", "future": 1, "future": 2"#, "appears twice"),
        (r#", "task": {"description": "other"}"#, "duplicate field"),
        (r#", "future": "\ud800""#, "hex escape"),
        (
            r#", "git": {"branch": "main", "commit": null, "dirty": false, "x": 1, "x": 1}"#,
            "appears twice",
        ),
    ];
    for (extra, want) in cases {
        let sb = Sandbox::with_session();
        let text = base(extra);
        sb.write(SESSION, &text);
        for args in session_readers() {
            let out = sb.run(&args);
            assert_eq!(
                out.status.code(),
                Some(5),
                "{extra} / {args:?}: {}",
                stderr(&out)
            );
            assert!(
                stderr(&out).contains(want),
                "{extra} / {args:?}: {}",
                stderr(&out)
            );
            assert!(stderr(&out).contains("session.json"), "{}", stderr(&out));
            assert_eq!(
                sb.read(SESSION),
                text,
                "{extra} / {args:?} rewrote the file"
            );
        }
        assert!(!sb.path("AGENTS.md").exists());
    }
    // Values that survive the trip exactly are fine, spelled differently or not.
    let sb = Sandbox::with_session();
    sb.write(
        SESSION,
        base(r#", "future": [1E2, 0.5, 18446744073709551615, -9223372036854775808, 1.0]"#),
    );
    sb.ok(&["update", "--next", "x"]);
    // A double that serde_json's fast float parser would have read one bit off.
    let sb2 = Sandbox::with_session();
    sb2.write(SESSION, base(r#", "future": -1.66445586627509e-109"#));
    sb2.ok(&["update", "--next", "x"]);
    assert!(
        sb2.read(SESSION)
            .contains(r#""future": -1.66445586627509e-109"#),
        "{}",
        sb2.read(SESSION)
    );
    assert_eq!(
        sb.session()["future"],
        json!([
            100.0,
            0.5,
            18446744073709551615u64,
            -9223372036854775808i64,
            1.0
        ])
    );
}

#[cfg(target_os = "linux")]
#[test]
fn file_names_that_are_not_utf8_are_recorded_reversibly_by_both_backends() {
    use std::os::unix::ffi::OsStrExt;
    let sb = Sandbox::with_session();
    // Two names that read the same once decoded lossily, and one with a quote.
    let names: [&[u8]; 3] = [b"caf\xe9.txt", b"caf\xe8.txt", b"\"quoted\".txt"];
    for (i, n) in names.iter().enumerate() {
        std::fs::write(
            sb.work.join(std::ffi::OsStr::from_bytes(n)),
            format!("{i}\n"),
        )
        .unwrap();
    }
    let want = json!([
        {"path": "\"\\\"quoted\\\".txt\"", "status": "Untracked", "fingerprint": fnv(b"2\n")},
        {"path": "\"caf\\350.txt\"", "status": "Untracked", "fingerprint": fnv(b"1\n")},
        {"path": "\"caf\\351.txt\"", "status": "Untracked", "fingerprint": fnv(b"0\n")},
    ]);
    let cli = observe(&sb, Some("cli"));
    let gix = observe(&sb, Some("gix"));
    assert_eq!(cli.1, want);
    assert_eq!(gix.1, want);
    // Committed in a run: the run's changed files name them the same way.
    sb.stand_in(
        "committer",
        "printf x >> \"$(printf 'caf\\351.txt')\" && git add -A && git commit -qm names",
    );
    let out = sb.run(&["run", "--no-pty", "--", "committer"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let run = last_run(&sb);
    // The other two were untracked before and committed unchanged: not changed by the run.
    assert_eq!(changed_paths(&run), vec!["\"caf\\351.txt\""], "{run}");
    let fp = run["files_changed"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "\"caf\\351.txt\"")
        .unwrap()["fingerprint"]
        .clone();
    assert_eq!(fp, json!(fnv(b"0\nx")));
}

#[test]
fn paths_in_the_record_that_leave_the_work_tree_are_never_opened() {
    let sb = Sandbox::with_session();
    // Files outside the work tree, whose content differs from what the record claims.
    let outside = sb.work.parent().unwrap().join("outside.txt");
    std::fs::write(&outside, "outside, now\n").unwrap();
    let hostile = [
        "../outside.txt".to_string(),
        outside.to_string_lossy().into_owned(),
        "..\\outside.txt".to_string(),
        "a/../../outside.txt".to_string(),
    ];
    sb.stand_in("suicidal", "kill -9 $PPID; sleep 1; exit 0");
    let out = sb.run(&["run", "--no-pty", "--", "suicidal"]);
    assert_eq!(out.status.code(), None, "{}", stderr(&out));
    edit_session(&sb, |s| {
        let files: Vec<Value> = hostile
            .iter()
            .map(|p| json!({"path": p, "status": "Modified", "fingerprint": fnv(b"before\n")}))
            .collect();
        let n = s["runs"].as_array().unwrap().len();
        s["runs"][n - 1]["baseline"] = json!(files.clone());
        s["checkpoints"][0]["files_changed"] = json!(files);
    });
    // The next command closes the run: the outside file is not read, so not reported as
    // modified with its real fingerprint.
    for args in [
        &["status"][..],
        &["export", "--to", "codex"][..],
        &["list"][..],
    ] {
        let out = sb.run(args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    }
    let run = last_run(&sb);
    assert_eq!(run["state"], "abandoned", "{run}");
    // The killed launcher's reserved space is given back.
    assert!(!sb.path(".pas-agent/runs").exists());
    let real = fnv(b"outside, now\n");
    for f in run["files_changed"].as_array().unwrap() {
        assert_ne!(f["fingerprint"], json!(real), "{run}");
    }
    assert!(
        changed_paths(&run)
            .iter()
            .all(|p| !hostile.iter().any(|h| h == p)),
        "{run}"
    );
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "outside, now\n");
    // Stale detection treats them as text.
    let out = sb.run(&["status"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn a_nested_repository_is_never_silently_recorded_as_the_outer_one() {
    let sb = Sandbox::with_session();
    let outer_head = sb.git(&["rev-parse", "HEAD"]);
    std::fs::create_dir_all(sb.path("inner")).unwrap();
    let inner = |args: &[&str]| {
        let out = sb
            .git_cmd()
            .current_dir(sb.path("inner"))
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    inner(&["init", "-q", "-b", "side"]);
    std::fs::write(sb.path("inner/x.txt"), "x").unwrap();
    inner(&["add", "x.txt"]);
    inner(&["commit", "-qm", "inner"]);
    let inner_head = inner(&["rev-parse", "HEAD"]);
    for backend in ["cli", "gix"] {
        let mut cmd = sb.cmd();
        cmd.current_dir(sb.path("inner"))
            .env("PAS_AGENT_GIT", backend)
            .args(["update", "--discovery", backend]);
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains("separate git repository"), "{backend}: {err}");
        assert!(err.contains("pas-agent init"), "{backend}: {err}");
        let git = &sb.session()["git"];
        assert_eq!(git["commit"], json!(outer_head), "{backend}: {git}");
        assert_ne!(git["commit"], json!(inner_head));
        assert_eq!(git["branch"], "main");
    }
    // From the outer top, both backends see the nested repository as one untracked entry.
    let cli = observe(&sb, Some("cli"));
    assert_eq!(cli, observe(&sb, Some("gix")));
    assert_eq!(cli.1, json!([{"path": "inner/", "status": "Untracked"}]));
    // `init` there starts the nested repository's own session, and then it is used silently.
    let out = sb.run_in("inner", &["init", "--task", "inner work"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = sb.run_in("inner", &["update", "--next", "n"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        !stderr(&out).contains("separate git repository"),
        "{}",
        stderr(&out)
    );
    let s: Value = serde_json::from_str(&sb.read("inner/.pas-agent/session.json")).unwrap();
    assert_eq!(s["git"]["commit"], json!(inner_head));
    assert_eq!(s["git"]["branch"], "side");
    let _ = stdout;
}
