//! `pas-agent run` with real programs (no terminal: inherited stdio) and `pas-agent runs`.

use serde_json::{Value, json};

use crate::common::{Sandbox, changed_paths, last_run, stderr, stdout};

#[test]
fn a_program_that_edits_and_commits_is_recorded() {
    let sb = Sandbox::with_session();
    sb.write("already-dirty.txt", "before the run\n");
    let script = sb.stand_in(
        "edit-and-commit",
        r#"echo "args: $*"
echo "fresh" > lib.rs
git add lib.rs && git commit -q -m "Add lib.rs"
echo "scratch" > notes.txt
echo "tracked edit" >> README.md
exit 3"#,
    );
    let head_before = sb.git(&["rev-parse", "HEAD"]);
    let out = sb.run(&["run", "--", script.to_str().unwrap(), "one", "two words"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stdout(&out).contains("args: one two words"));
    assert!(stderr(&out).contains("exited 3"), "{}", stderr(&out));
    let head_after = sb.git(&["rev-parse", "HEAD"]);
    let run = last_run(&sb);
    assert_eq!(run["agent"], "edit-and-commit");
    assert_eq!(
        run["argv"],
        json!([script.to_str().unwrap(), "one", "two words"])
    );
    assert_eq!(run["cwd"], sb.work.to_str().unwrap());
    assert_eq!(run["state"], "finished");
    assert_eq!(run["exit_code"], 3);
    assert_eq!(run["signal"], Value::Null);
    assert_eq!(run["head_before"], head_before.as_str());
    assert_eq!(run["head_after"], head_after.as_str());
    assert_eq!(
        run["commits"],
        json!([{"id": head_after, "summary": "Add lib.rs"}])
    );
    let files: Vec<(String, String)> = run["files_changed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_string(),
                f["status"].to_string(),
            )
        })
        .collect();
    assert_eq!(
        files,
        vec![
            ("README.md".to_string(), "\"Modified\"".to_string()),
            ("lib.rs".to_string(), "\"Added\"".to_string()),
            ("notes.txt".to_string(), "\"Untracked\"".to_string()),
        ],
        "the pre-existing dirty file is not the run's"
    );
    assert!(run["duration_ms"].as_u64().is_some());
    assert!(run["ended_at"].as_str().unwrap() >= run["started_at"].as_str().unwrap());
    let pid = run["launcher_pid"].as_u64().expect("launcher pid");
    assert!(pid > 0 && pid != u64::from(std::process::id()));
    assert!(
        run["launcher_started"]
            .as_str()
            .is_some_and(|t| t.starts_with("linux:"))
    );
    assert!(
        run.get("baseline").is_none(),
        "the baseline is dropped once finished"
    );
    // Checkpoints around the run.
    let s = sb.session();
    let cps = s["checkpoints"].as_array().unwrap();
    assert_eq!(cps.len(), 2);
    assert_eq!(cps[0]["message"], "before edit-and-commit run");
    assert_eq!(cps[1]["message"], "after edit-and-commit run");
    assert_eq!(run["checkpoint_before"], cps[0]["id"]);
    assert_eq!(run["checkpoint_after"], cps[1]["id"]);
    assert_eq!(cps[1]["git"]["commit"], head_after.as_str());
    assert_eq!(s["git"]["commit"], head_after.as_str());
}

#[test]
fn a_known_agent_gets_its_context_file_before_it_starts() {
    let sb = Sandbox::with_session();
    sb.ok(&["update", "--next", "Write the parser"]);
    // A stand-in `codex` that proves AGENTS.md was there when it started, and that it runs in a
    // recorded run.
    sb.stand_in(
        "codex",
        r#"grep -q "Write the parser" AGENTS.md || exit 42
test -n "$PAS_AGENT_RUN_ID" || exit 43
echo "$PAS_AGENT_RUN_ID" > run-id.txt"#,
    );
    let out = sb.run(&["run", "codex", "--", "exec", "hi"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let run = last_run(&sb);
    assert_eq!(run["agent"], "codex");
    assert_eq!(run["argv"], json!(["codex", "exec", "hi"]));
    assert_eq!(sb.read("run-id.txt").trim(), run["id"].as_str().unwrap());
    // Our own export is not counted as the agent's change.
    assert_eq!(changed_paths(&run), ["run-id.txt"]);
    // Aliases and executable names resolve to the agent.
    sb.stand_in("claude", "test -f CLAUDE.md");
    let out = sb.run(&["run", "claude"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(last_run(&sb)["agent"], "claude-code");
    sb.stand_in("gemini", "test -f GEMINI.md");
    assert_eq!(sb.run(&["run", "gemini-cli"]).status.code(), Some(0));
    assert_eq!(last_run(&sb)["agent"], "gemini-cli");
}

#[test]
fn no_checkpoint_and_no_export() {
    let sb = Sandbox::with_session();
    sb.stand_in("codex", "test ! -f AGENTS.md");
    let out = sb.run(&["run", "--no-checkpoint", "--no-export", "codex"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!sb.path("AGENTS.md").exists());
    let s = sb.session();
    assert_eq!(s["checkpoints"], json!([]));
    let run = last_run(&sb);
    assert_eq!(run["checkpoint_before"], Value::Null);
    assert_eq!(run["checkpoint_after"], Value::Null);
    assert_eq!(run["state"], "finished");
}

#[test]
fn launcher_failures_use_125_to_127_and_record_nothing() {
    let sb = Sandbox::with_session();
    let err = sb.fails(&["run", "--", "no-such-program-xyz"], 127);
    assert!(
        err.contains("no-such-program-xyz: command not found"),
        "{err}"
    );
    let err = sb.fails(&["run", "kiro-cli"], 127);
    assert!(err.contains("Kiro CLI is not installed"), "{err}");
    sb.write("not-exec.sh", "#!/bin/sh\necho hi\n");
    let err = sb.fails(&["run", "--", "./not-exec.sh"], 126);
    assert!(err.contains("not an executable"), "{err}");
    sb.write("bad-interp.sh", "#!/nonexistent/interpreter\n");
    crate::common::make_executable(&sb.path("bad-interp.sh"));
    // A missing interpreter is "not found", as bash, dash, zsh and fish say (127).
    sb.fails(&["run", "--", "./bad-interp.sh"], 127);
    let err = sb.fails(&["run"], 2);
    assert!(err.contains("nothing to run"), "{err}");
    assert!(
        sb.session()
            .get("runs")
            .is_none_or(|r| r.as_array().unwrap().is_empty())
    );

    let outside = Sandbox::repo();
    outside.stand_in("codex", "exit 0");
    let err = outside.fails(&["run", "codex"], 125);
    assert!(err.contains("no pas-agent session found"), "{err}");
}

#[test]
fn a_broken_context_file_skips_the_export_but_the_agent_runs() {
    let sb = Sandbox::with_session();
    let broken = "<!-- pas-agent:start\nhalf a block\n";
    sb.write("AGENTS.md", broken);
    sb.stand_in("codex", "touch ran.txt");
    let out = sb.run(&["run", "codex"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(stderr(&out).contains("export skipped"), "{}", stderr(&out));
    assert!(sb.path("ran.txt").exists());
    assert_eq!(sb.read("AGENTS.md"), broken);
}

#[test]
fn death_by_signal_exits_128_plus_the_signal() {
    let sb = Sandbox::with_session();
    let out = sb.run(&["run", "--", "sh", "-c", "kill -TERM $$"]);
    assert_eq!(out.status.code(), Some(143), "{}", stderr(&out));
    let run = last_run(&sb);
    assert_eq!(run["exit_code"], Value::Null);
    assert_eq!(run["signal"], 15);
    assert_eq!(run["state"], "finished");
}

#[test]
fn an_interrupt_reaches_the_agent_and_the_launcher_still_records() {
    let sb = Sandbox::with_session();
    let mut cmd = sb.cmd();
    // The agent traps SIGINT and exits 7; the interrupt is sent to the whole process group, as
    // a terminal's Ctrl-C is.
    cmd.args([
        "run",
        "--",
        "sh",
        "-c",
        "trap 'exit 7' INT; touch started; while :; do sleep 0.1; done",
    ]);
    use std::os::unix::process::CommandExt;
    cmd.process_group(0);
    let mut child = cmd.spawn().unwrap();
    sb.wait_for("started");
    let pgid = child.id() as i32;
    let status = std::process::Command::new("kill")
        .args(["-INT", "--", &format!("-{pgid}")])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait().unwrap();
    assert_eq!(out.code(), Some(7));
    let run = last_run(&sb);
    assert_eq!(run["state"], "finished");
    assert_eq!(run["exit_code"], 7);
}

#[test]
fn sigterm_to_the_launcher_is_forwarded_to_the_agent() {
    let sb = Sandbox::with_session();
    let mut cmd = sb.cmd();
    cmd.args([
        "run",
        "--",
        "sh",
        "-c",
        "trap 'exit 9' TERM; touch started; while :; do sleep 0.1; done",
    ]);
    let mut child = cmd.spawn().unwrap();
    sb.wait_for("started");
    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(child.wait().unwrap().code(), Some(9));
    assert_eq!(last_run(&sb)["exit_code"], 9);
}

#[test]
fn runs_lists_the_records() {
    let sb = Sandbox::with_session();
    let out = sb.ok(&["runs"]);
    assert!(out.contains("No runs yet"), "{out}");
    sb.run(&["run", "--", "true"]);
    sb.run(&["run", "--", "false"]);
    let out = sb.ok(&["runs"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(
        lines[1].contains(" true ") && lines[1].contains("finished") && lines[1].contains(" 0 "),
        "{out}"
    );
    assert!(
        lines[2].contains(" false ") && lines[2].contains(" 1 "),
        "{out}"
    );
    let v: Value = serde_json::from_str(&sb.ok(&["runs", "--json"])).unwrap();
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[1]["exit_code"], 1);
    for key in [
        "id",
        "agent",
        "argv",
        "cwd",
        "state",
        "started_at",
        "ended_at",
        "duration_ms",
        "exit_code",
        "signal",
        "launcher_pid",
        "launcher_started",
        "head_before",
        "head_after",
        "commits",
        "files_changed",
        "agent_session_id",
        "checkpoint_before",
        "checkpoint_after",
        "capture",
    ] {
        assert!(runs[0].get(key).is_some(), "run record field {key}");
    }
    // status mentions the latest run.
    assert!(
        sb.ok(&["status"])
            .contains("Runs:     2 (latest finished: false"),
        "{}",
        sb.ok(&["status"])
    );
    // And the export tells the next agent about it.
    sb.ok(&["export", "--to", "codex"]);
    assert!(sb.read("AGENTS.md").contains("## Recent Agent Runs"));
}

#[test]
fn a_run_outside_git_records_without_git_data() {
    let sb = Sandbox::plain();
    sb.ok(&["init", "--task", "t"]);
    let out = sb.run(&["run", "--", "sh", "-c", "echo x > f.txt"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let run = last_run(&sb);
    assert_eq!(run["head_before"], Value::Null);
    assert_eq!(run["files_changed"], json!([]));
    assert_eq!(run["state"], "finished");
}

#[test]
fn to_chooses_the_context_file_even_for_a_plain_program() {
    let sb = Sandbox::with_session();
    sb.ok(&["update", "--next", "Wire the wrapper"]);
    let script = sb.stand_in(
        "my-wrapper",
        "grep -q 'Wire the wrapper' CLAUDE.md || exit 42",
    );
    let out = sb.run(&["run", "--to", "claude", "--", script.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("exported the session to"),
        "{}",
        stderr(&out)
    );
    // Without it, a plain program gets no export.
    std::fs::remove_file(sb.path("CLAUDE.md")).unwrap();
    sb.run(&["run", "--", script.to_str().unwrap()]);
    assert!(!sb.path("CLAUDE.md").exists() && !sb.path("AGENTS.md").exists());
    sb.fails(&["run", "--to", "vim", "--", "true"], 2);
    sb.fails(&["run", "--to", "codex", "--no-export", "--", "true"], 2);
}

#[test]
fn a_head_that_moves_without_commits_is_reported() {
    let sb = Sandbox::with_session();
    sb.write("a.txt", "a");
    sb.git(&["add", "a.txt"]);
    sb.git(&["commit", "-qm", "second"]);
    let first = sb.git(&["rev-list", "--max-parents=0", "HEAD"]);
    let out = sb.run(&["run", "--", "git", "reset", "-q", "--hard", "HEAD~1"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        stderr(&out).contains("0 commits, 1 file changed; HEAD moved "),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains(&format!("→ {}", &first[..8])),
        "{}",
        stderr(&out)
    );
}

#[test]
fn agent_arguments_need_no_double_dash() {
    let sb = Sandbox::with_session();
    sb.stand_in("codex", r#"printf '%s|' "$@" > args.txt"#);
    let out = sb.run(&["run", "codex", "exec", "--model", "o3", "fix it"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(sb.read("args.txt"), "exec|--model|o3|fix it|");
    // pas-agent's own options go before the agent's first argument.
    let out = sb.run(&["run", "--no-export", "codex", "-x"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(sb.read("args.txt"), "-x|");
}

#[test]
fn a_path_to_an_agents_executable_is_that_agent() {
    let sb = Sandbox::with_session();
    let claude = sb.stand_in(
        "claude",
        r#"test -f CLAUDE.md && printf '%s|' "$@" > args.txt"#,
    );
    let out = sb.run(&["run", claude.to_str().unwrap(), "--", "-p", "hi"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(last_run(&sb)["agent"], "claude-code");
    assert!(
        sb.read("args.txt").starts_with("--session-id|"),
        "{}",
        sb.read("args.txt")
    );
}

#[test]
fn runs_that_change_nothing_add_no_checkpoints() {
    let sb = Sandbox::with_session();
    sb.run(&["run", "--", "true"]);
    let after_first = sb.session()["checkpoints"].as_array().unwrap().len();
    for _ in 0..3 {
        sb.run(&["run", "--", "true"]);
    }
    let s = sb.session();
    assert_eq!(s["checkpoints"].as_array().unwrap().len(), after_first);
    let last = s["runs"].as_array().unwrap().last().unwrap().clone();
    let cp = s["checkpoints"].as_array().unwrap().last().unwrap()["id"].clone();
    assert_eq!(last["checkpoint_before"], cp);
    assert_eq!(last["checkpoint_after"], cp);
    // A run that changes something gets its own "after" checkpoint.
    sb.run(&["run", "--", "sh", "-c", "echo x > new.txt"]);
    let s = sb.session();
    assert_eq!(s["checkpoints"].as_array().unwrap().len(), after_first + 1);
}

#[test]
fn a_run_inside_a_run_is_nested_not_a_second_agent() {
    let sb = Sandbox::with_session();
    let bin = crate::common::bin();
    let inner = format!("{} run -- true", bin.display());
    let out = sb.run(&["run", "--", "sh", "-c", &inner]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stderr(&out).contains("two agents"), "{}", stderr(&out));
    // Two runs side by side do warn.
    let mut outer = sb.cmd();
    outer.args(["run", "--", "sh", "-c", "touch started; sleep 30"]);
    let mut outer = outer.spawn().unwrap();
    sb.wait_for("started");
    let out = sb.run(&["run", "--", "true"]);
    outer.kill().unwrap();
    outer.wait().unwrap();
    assert!(
        stderr(&out).contains("two agents now share this work tree"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_prompt_segment_does_not_leak_into_the_agent() {
    let sb = Sandbox::with_session();
    let mut cmd = sb.cmd();
    cmd.env("PAS_AGENT_PROMPT", "Build the thing 0/0").args([
        "run",
        "--",
        "sh",
        "-c",
        "echo \"[${PAS_AGENT_PROMPT-unset}]\" > env.txt",
    ]);
    assert!(cmd.status().unwrap().success());
    assert_eq!(sb.read("env.txt"), "[unset]\n");
}

#[test]
fn resume_conflicts_with_the_users_own_session_choice() {
    let sb = Sandbox::with_session();
    sb.stand_in("claude", "exit 0");
    sb.run(&["run", "claude"]);
    let err = sb.fails(&["run", "claude", "--resume", "--", "--resume", "abc"], 2);
    assert!(err.contains("drop one of them"), "{err}");
}

#[test]
fn resume_prefers_the_session_started_in_this_directory() {
    let sb = Sandbox::with_session();
    std::fs::create_dir_all(sb.path("docs")).unwrap();
    // Qwen Code takes the session id the launcher chooses (`--session-id`), and keeps the chat
    // under its directory's key (which the launcher checks before a resume).
    sb.stand_in(
        "qwen",
        r#"printf '%s|' "$@" > "$ARGS_FILE"
if [ "$1" = --session-id ]; then
  d="$HOME/.qwen/projects/$(pwd -P | sed 's/[^A-Za-z0-9]/-/g')/chats"
  mkdir -p "$d"
  printf '{"sessionId":"%s","cwd":"%s","type":"user"}\n' "$2" "$(pwd -P)" > "$d/$2.jsonl"
fi"#,
    );
    let args_file = sb.path("args.txt");
    let run_in = |dir: &str, extra: &[&str]| {
        let mut cmd = sb.cmd();
        cmd.current_dir(sb.path(dir))
            .env("ARGS_FILE", &args_file)
            .args(["run", "qwen"])
            .args(extra);
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
    };
    run_in("", &[]);
    let root_id = last_run(&sb)["agent_session_id"]
        .as_str()
        .unwrap()
        .to_string();
    run_in("docs", &[]);
    let docs_id = last_run(&sb)["agent_session_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_ne!(root_id, docs_id);
    run_in("", &["--resume"]);
    assert_eq!(sb.read("args.txt"), format!("--resume|{root_id}|"));
    run_in("docs", &["--resume"]);
    assert_eq!(sb.read("args.txt"), format!("--resume|{docs_id}|"));
}

/// `run --no-checkpoint --no-export` looks at the work tree only after its program: the files
/// it records are those that differ from HEAD and changed while the program ran (by their
/// modification or change times), plus what it committed — not the files that were dirty before and left alone.
#[test]
fn a_bare_run_records_the_files_its_program_changed_and_not_those_dirty_before() {
    let sb = Sandbox::with_session();
    sb.write("lib.rs", "fn lib() {}\n");
    sb.write("sub/gone.txt", "to be deleted by the program\n");
    sb.write("old/stale.txt", "deleted before the run\n");
    sb.write("again.txt", "committed\n");
    sb.git(&[
        "add",
        "lib.rs",
        "sub/gone.txt",
        "old/stale.txt",
        "again.txt",
    ]);
    sb.git(&["commit", "-q", "-m", "More files"]);
    // Dirty before the run: a tracked edit, an untracked file and a deletion left alone, and
    // a file the program edits again.
    sb.write("README.md", "# Project\nedited before the run\n");
    sb.write("already.txt", "untracked before the run\n");
    sb.write("again.txt", "committed\nedited before the run\n");
    std::fs::remove_file(sb.path("old/stale.txt")).unwrap();
    // The run's start is well after those changes (not a timing assertion: a wait so that the
    // file system's clock, a tick behind, cannot place them inside the run).
    std::thread::sleep(std::time::Duration::from_millis(300));
    let script = sb.stand_in(
        "bare-program",
        r#"echo "fresh" > new.txt
echo "more" >> again.txt
echo "edited" >> lib.rs
rm sub/gone.txt
echo "committed" > committed.rs
git add committed.rs && git commit -q -m "Add committed.rs""#,
    );
    let head_before = sb.git(&["rev-parse", "HEAD"]);
    let out = bare_run(&sb, script.to_str().unwrap());
    let run = last_run(&sb);
    assert_eq!(run["state"], "finished");
    assert_eq!(run["head_before"], head_before.as_str());
    assert_eq!(run["commits"].as_array().unwrap().len(), 1, "{run:#}");
    let files: Vec<(&str, &str)> = run["files_changed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["path"].as_str().unwrap(), f["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        files,
        vec![
            ("again.txt", "Modified"),
            ("committed.rs", "Added"),
            ("lib.rs", "Modified"),
            ("new.txt", "Untracked"),
            ("sub/gone.txt", "Deleted"),
        ],
        "the files dirty before the run and left alone are not the run's: {run:#}"
    );
    assert!(run.get("baseline").is_none(), "{run:#}");
    assert!(
        stderr(&out).contains("1 commit, 5 files changed"),
        "{}",
        stderr(&out)
    );
}

/// The paths and statuses a run record lists in `files_changed`.
fn changed(run: &Value) -> Vec<(String, String)> {
    run["files_changed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["path"].as_str().unwrap().into(), f["status"].to_string()))
        .collect()
}

/// Runs `sh -c script` with `run --no-checkpoint --no-export --no-pty` and checks that it
/// exited 0.
fn bare_run(sb: &Sandbox, script: &str) -> std::process::Output {
    let out = sb.run(&[
        "run",
        "--no-checkpoint",
        "--no-export",
        "--no-pty",
        "--",
        "sh",
        "-c",
        script,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    out
}

/// [`bare_run`], then the files its record lists.
fn bare(sb: &Sandbox, script: &str) -> Vec<(String, String)> {
    bare_run(sb, script);
    changed(&last_run(sb))
}

/// Renames (`mv`, `git mv`) keep a file's modification time and `chmod` does not touch it: a
/// bare run sees them by their change times, and records what a run with a scan before it does.
#[test]
fn a_bare_run_records_renames_and_permission_changes_as_a_full_run_does() {
    let record = |flags: &[&str]| {
        let sb = Sandbox::with_session();
        for f in ["b.txt", "d.txt", "s.sh"] {
            sb.write(f, format!("{f}\n"));
        }
        sb.git(&["add", "b.txt", "d.txt", "s.sh"]);
        sb.git(&["commit", "-q", "-m", "Files"]);
        // Not a timing assertion: the files are clearly older than the run.
        std::thread::sleep(std::time::Duration::from_millis(300));
        let mut args = vec!["run"];
        args.extend(flags);
        args.extend([
            "--no-pty",
            "--",
            "sh",
            "-c",
            "mv b.txt c.txt && git mv d.txt e.txt && chmod +x s.sh",
        ]);
        let out = sb.run(&args);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        changed(&last_run(&sb))
    };
    let full = record(&[]);
    assert_eq!(full.len(), 4, "{full:?}");
    assert_eq!(record(&["--no-checkpoint", "--no-export"]), full);
}

/// A directory deleted before a bare run is not the run's (its parent changed before the run);
/// one the run deletes is, with every file in it.
#[test]
fn a_bare_run_judges_deleted_directories_by_the_nearest_directory_left() {
    let sb = Sandbox::with_session();
    for f in [
        "old/a.txt",
        "old/deep/b.txt",
        "sub/gone/c.txt",
        "sub/gone/deep/d.txt",
    ] {
        sb.write(f, "tracked\n");
    }
    sb.write("sub/kept.txt", "tracked\n");
    sb.git(&["add", "old", "sub"]);
    sb.git(&["commit", "-q", "-m", "Directories"]);
    std::fs::remove_dir_all(sb.path("old")).unwrap();
    // Not a timing assertion: the deletion is clearly older than the runs.
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(bare(&sb, "true"), Vec::<(String, String)>::new());
    let deleted = |p: &str| (p.to_string(), "\"Deleted\"".to_string());
    assert_eq!(
        bare(&sb, "rm -rf sub/gone"),
        vec![deleted("sub/gone/c.txt"), deleted("sub/gone/deep/d.txt")]
    );
}

/// Bare runs started one right after the other each record only the file their own program
/// wrote, not the ones written just before them (a timestamp step of the file system apart:
/// Linux stamps files from a clock that moves every few milliseconds, and a file stamped in
/// the step the run started in is the run's).
#[test]
fn bare_runs_back_to_back_each_record_only_their_own_files() {
    let sb = Sandbox::with_session();
    for name in ["one", "two", "three"] {
        // Not a timing assertion: one timestamp step (4 ms at Linux's usual 250 Hz) between
        // the last run's file and this run's start.
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_eq!(
            bare(&sb, &format!("echo {name} > {name}.txt")),
            vec![(format!("{name}.txt"), "\"Untracked\"".to_string())]
        );
        // Where its span started is kept only while it runs.
        assert!(last_run(&sb).get("files_since").is_none());
    }
}
