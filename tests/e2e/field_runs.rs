//! Runs' truths and typed commands, from field reports: each run records its own
//! agent session when two overlap (real Codex against the mock model); pas-agent's own writes
//! are never counted as the agent's or the work tree's; aliases of an agent's name reach the
//! launcher in every shell; commands that start no agent session run straight; the hook's
//! cheap change check sees every way HEAD and the refs can move in every repository layout;
//! and special files in `.git` never hang a command.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{Sandbox, changed_paths, last_run, runs, stderr, stdout, walk};
use crate::hooks::{isolated, quiet_success, require, shell};
use crate::launcher_support::wait_for;
use crate::mock_model::{Mock, REPLY, codex_args};

// ---------------------------------------------------------------------------------------------
// Item 9: commands that start no agent session run straight.

/// A stand-in agent that says what it was given and whether it runs inside a recorded run.
fn reporting_stand_in(sb: &Sandbox, name: &str) {
    sb.stand_in(
        name,
        &format!("echo \"{name} got: $*\"; echo \"run: ${{PAS_AGENT_RUN_ID:-none}}\""),
    );
}

/// The line that loads the hook from `$PAS_HOOK` in `program`.
fn load_hook(program: &str) -> &'static str {
    if program == "fish" {
        "eval $PAS_HOOK"
    } else {
        "eval \"$PAS_HOOK\""
    }
}

/// Asserts exit 0; returns stdout (a recorded run says so on stderr).
#[track_caller]
fn succeeded(out: &Output) -> String {
    assert!(out.status.success(), "{out:?}");
    stdout(out)
}

#[test]
fn version_help_and_mcp_typed_through_every_hook_run_straight_with_no_record() {
    for (program, args) in [
        ("bash", &["--norc", "--noprofile", "-i"][..]),
        ("zsh", &["-f", "-i"]),
        ("fish", &["--no-config", "-i"]),
    ] {
        let sb = Sandbox::with_session();
        reporting_stand_in(&sb, "claude");
        reporting_stand_in(&sb, "codex");
        let load = load_hook(program);
        let body = format!(
            "{load}\nclaude --version\nclaude mcp list\ncodex login status\ncodex --help\n"
        );
        let out = quiet_success(&shell(&sb, program, args, &body));
        assert_eq!(
            out,
            "claude got: --version\nrun: none\nclaude got: mcp list\nrun: none\n\
             codex got: login status\nrun: none\ncodex got: --help\nrun: none\n",
            "{program}"
        );
        let session = sb.session();
        assert!(
            session
                .get("runs")
                .is_none_or(|r| r == &Value::Array(vec![])),
            "{program}"
        );
        assert!(
            session["checkpoints"].as_array().is_none_or(Vec::is_empty),
            "{program}: no checkpoint"
        );
        assert!(!sb.path("CLAUDE.md").exists() && !sb.path("AGENTS.md").exists());

        // A prompt is a session: recorded, with the chosen id and the export.
        let out = succeeded(&shell(
            &sb,
            program,
            args,
            &format!("{load}\nclaude -p hi\n"),
        ));
        assert!(
            out.contains("claude got: --session-id "),
            "{program}: {out}"
        );
        assert!(!out.contains("run: none"), "{program}: {out}");
        assert_eq!(runs(&sb).len(), 1, "{program}");
        assert!(sb.path("CLAUDE.md").exists());
    }
}

#[test]
fn run_itself_decides_so_the_real_clis_print_their_version_with_no_record() {
    let sb = Sandbox::plain();
    // Outside any session too: nothing is recorded, so nothing needs one.
    for (agent, package, version) in [
        ("claude", "@anthropic-ai/claude-code", "Claude Code"),
        ("codex", "@openai/codex", "codex-cli"),
    ] {
        assert!(
            which::which(agent).is_ok(),
            "{agent} is not installed; npm install -g {package}"
        );
        let out = sb.ok(&["run", agent, "--", "--version"]);
        assert!(out.contains(version), "{agent}: {out}");
    }
    assert!(!sb.path(".pas-agent").exists());
    let repo = Sandbox::with_session();
    reporting_stand_in(&repo, "gemini");
    let out = repo.ok(&["run", "gemini", "--", "mcp", "list"]);
    assert_eq!(out, "gemini got: mcp list\nrun: none\n");
    assert!(runs(&repo).is_empty());
    // `--` ends the options: what follows is a prompt, and a prompt is a session.
    let out = repo.ok(&["run", "gemini", "--", "-p", "--", "--version"]);
    assert!(!out.contains("run: none"), "{out}");
    assert_eq!(runs(&repo).len(), 1);
}

// ---------------------------------------------------------------------------------------------
// Item 8: aliases and functions of an agent's name, before or after the hook, in every shell.

#[test]
fn an_alias_of_an_agents_name_goes_through_the_launcher_in_every_shell_either_side_of_the_hook() {
    for (program, args, alias, user_fn) in [
        (
            "bash",
            &["--norc", "--noprofile", "-i"][..],
            "alias claude='claude --model opus'",
            "claude() { echo mine; }",
        ),
        (
            "zsh",
            &["-f", "-i"],
            "alias claude='claude --model opus'",
            "claude() { echo mine; }",
        ),
        (
            "fish",
            &["--no-config", "-i"],
            "alias claude 'claude --model opus'",
            "function claude; echo mine; end",
        ),
    ] {
        let sb = Sandbox::with_session();
        reporting_stand_in(&sb, "claude");
        let load = load_hook(program);
        // A prompt is drawn between the start-up file and the first typed command.
        let prompt = if program == "fish" {
            "emit fish_prompt"
        } else {
            ":"
        };
        for (n, (first, second)) in [(alias, load), (load, alias)].into_iter().enumerate() {
            // Typed at a prompt, a line is parsed after the lines before it ran: `eval` does
            // the same inside one `-c` script (zsh parses a whole `-c` script at once).
            let body = format!("{first}\n{second}\n{prompt}\neval 'claude -p hi'\n");
            let out = succeeded(&shell(&sb, program, args, &body));
            assert!(
                out.contains("claude got: --session-id ") && out.contains("--model opus -p hi"),
                "{program}, alias {}: {out}",
                if n == 0 { "before" } else { "after" }
            );
            assert!(!out.contains("run: none"), "{program}: {out}");
            assert_eq!(runs(&sb).len(), n + 1, "{program}: one run each");
            let argv = &last_run(&sb)["argv"];
            assert!(argv.to_string().contains("\"--model\",\"opus\""), "{argv}");
        }
        // A function of one's own is one's own in every shell, before or after the hook.
        for (first, second) in [(user_fn, load), (load, user_fn)] {
            let body = format!("{first}\n{second}\n{prompt}\neval 'claude -p hi'\n");
            let out = quiet_success(&shell(&sb, program, args, &body));
            assert_eq!(out, "mine\n", "{program}");
        }
        assert_eq!(runs(&sb).len(), 2, "{program}");
    }
}

// ---------------------------------------------------------------------------------------------
// Item 7: pas-agent's own writes are never the agent's, nor the work tree's.

/// The session's last checkpoint.
fn last_checkpoint(sb: &Sandbox) -> Value {
    sb.session()["checkpoints"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone()
}

#[test]
fn two_exports_in_a_row_are_byte_identical_and_a_committed_context_file_settles() {
    let sb = Sandbox::with_session();
    sb.ok(&["export", "--to", "codex"]);
    let first = sb.bytes("AGENTS.md");
    sb.ok(&["export", "--to", "codex"]);
    assert_eq!(
        String::from_utf8_lossy(&sb.bytes("AGENTS.md")),
        String::from_utf8_lossy(&first)
    );
    assert!(sb.read("AGENTS.md").contains("**Uncommitted changes:** no"));

    // Committed with its block, then exported again after a checkpoint: it stays settled.
    sb.git(&["add", "AGENTS.md"]);
    sb.git(&["commit", "-q", "-m", "context"]);
    sb.ok(&["update", "--next", "Write the parser"]);
    sb.ok(&["checkpoint", "plan"]);
    sb.ok(&["export", "--to", "codex"]);
    let third = sb.bytes("AGENTS.md");
    sb.ok(&["export", "--to", "codex"]);
    assert_eq!(sb.bytes("AGENTS.md"), third);
    let text = sb.read("AGENTS.md");
    assert!(text.contains("**Uncommitted changes:** no"), "{text}");
    assert!(!text.contains("## Files Changed"), "{text}");
    sb.ok(&["export", "--to", "claude"]);
    sb.ok(&["checkpoint", "after exports"]);
    let cp = last_checkpoint(&sb);
    assert!(changed_paths(&cp).is_empty(), "{cp}");
    assert_eq!(cp["git"]["dirty"], false);
    let status = sb.ok(&["status"]);
    assert!(
        !status.contains("changed since the last checkpoint"),
        "{status}"
    );

    // A person's edit outside the block counts, everywhere.
    let mut edited = sb.read("AGENTS.md");
    edited.push_str("\nAlways run the tests.\n");
    sb.write("AGENTS.md", edited);
    let status = sb.ok(&["status"]);
    assert!(status.contains("AGENTS.md"), "{status}");
    sb.ok(&["checkpoint", "hand edit"]);
    let cp = last_checkpoint(&sb);
    assert_eq!(changed_paths(&cp), ["AGENTS.md"]);
    sb.ok(&["export", "--to", "codex"]);
    assert!(
        sb.read("AGENTS.md")
            .contains("**Uncommitted changes:** yes")
    );
}

#[test]
fn a_run_counts_only_the_agents_files_not_the_exports_made_during_it() {
    let sb = Sandbox::with_session();
    let pas = crate::common::bin();
    // The agent edits three files, and meanwhile the user (or the agent) updates the task and
    // exports to every context file; the second run commits everything, exports included.
    sb.stand_in(
        "codex",
        &format!(
            "set -e\nfor f in a b c; do echo \"$f $1\" >> \"$f.txt\"; done\n\
             '{pas}' update --completed \"step $1\" >/dev/null\n\
             for t in codex claude gemini qwen goose; do '{pas}' export --to $t >/dev/null; done\n\
             if [ \"$1\" = commit ]; then git add -A && git commit -q -m work; fi",
            pas = pas.display()
        ),
    );
    sb.ok(&["run", "codex", "--", "one"]);
    let run = last_run(&sb);
    assert_eq!(changed_paths(&run), ["a.txt", "b.txt", "c.txt"], "{run}");
    let cp_after = run["checkpoint_after"].as_str().unwrap().to_string();
    let session = sb.session();
    let cp = session["checkpoints"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == cp_after.as_str())
        .unwrap();
    assert_eq!(changed_paths(cp), ["a.txt", "b.txt", "c.txt"]);

    sb.ok(&["run", "codex", "--", "commit"]);
    let run = last_run(&sb);
    assert_eq!(run["commits"].as_array().unwrap().len(), 1);
    assert_eq!(changed_paths(&run), ["a.txt", "b.txt", "c.txt"], "{run}");

    // The block's "Files Changed" lists the real files only.
    sb.write("d.txt", "new\n");
    sb.ok(&["checkpoint", "more"]);
    sb.ok(&["export", "--to", "codex"]);
    let text = sb.read("AGENTS.md");
    let files = text.split("## Files Changed").nth(1).unwrap_or_default();
    let files = files.split("\n## ").next().unwrap_or_default();
    assert!(files.contains("d.txt"), "{text}");
    for own in [
        "AGENTS.md",
        "CLAUDE.md",
        "GEMINI.md",
        "QWEN.md",
        ".goosehints",
    ] {
        assert!(!files.contains(own), "{own} in {files}");
    }
}

// ---------------------------------------------------------------------------------------------
// Item 6: two overlapping runs of Codex in one work tree record their own sessions.

/// A TCP gate in front of the mock: connections wait until it opens, then pass through.
struct Gate {
    port: u16,
    open: Arc<AtomicBool>,
}

impl Gate {
    fn to(target: u16) -> Gate {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let open = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&open);
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let flag = Arc::clone(&flag);
                std::thread::spawn(move || {
                    while !flag.load(Ordering::SeqCst) {
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    let Ok(server) = TcpStream::connect(("127.0.0.1", target)) else {
                        return;
                    };
                    pipe(client, server);
                });
            }
        });
        Gate { port, open }
    }

    fn open(&self) {
        self.open.store(true, Ordering::SeqCst);
    }
}

fn pipe(a: TcpStream, b: TcpStream) {
    let (mut a2, mut b2) = (a.try_clone().unwrap(), b.try_clone().unwrap());
    let t = std::thread::spawn(move || {
        let _ = std::io::copy(&mut a2, &mut b2);
        let _ = b2.shutdown(std::net::Shutdown::Write);
    });
    let (mut a, mut b) = (a, b);
    let _ = std::io::copy(&mut b, &mut a);
    let _ = a.shutdown(std::net::Shutdown::Write);
    let _ = t.join();
}

fn rollouts(sb: &Sandbox) -> Vec<PathBuf> {
    walk(&sb.home.join(".codex/sessions"))
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(".jsonl"))
        .collect()
}

#[test]
fn two_overlapping_codex_runs_each_record_their_own_session() {
    let real = which::which("codex").expect("codex is not installed; npm install -g @openai/codex");
    let mut sb = Sandbox::with_session();
    let mock = Mock::start();
    sb.env.push(("OPENAI_API_KEY".into(), "sk-test".into()));
    // Each run's codex waits for its own go-ahead, so that the second run starts before the
    // first one's session file appears.
    sb.stand_in(
        "codex",
        &format!(
            "while [ ! -e \"$GO\" ]; do sleep 0.05; done\nexec '{}' \"$@\"",
            real.display()
        ),
    );
    let (gate_a, gate_b) = (Gate::to(mock.port), Gate::to(mock.port));
    let spawn = |go: &str, gate: &Gate, prompt: &str| {
        let mut cmd = sb.cmd();
        cmd.env("GO", sb.tmp.path().join(go))
            .args(["run", "codex", "--"])
            .args(codex_args(
                &format!("http://127.0.0.1:{}", gate.port),
                prompt,
            ));
        cmd.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let a = spawn("go-a", &gate_a, "Alpha task please");
    wait_for("run A recorded as running", || {
        (runs(&sb).len() == 1).then_some(())
    });
    let b = spawn("go-b", &gate_b, "Beta task please");
    wait_for("run B recorded as running", || {
        (runs(&sb).len() == 2).then_some(())
    });
    std::fs::write(sb.tmp.path().join("go-a"), "").unwrap();
    wait_for("A's rollout", || (rollouts(&sb).len() == 1).then_some(()));
    std::fs::write(sb.tmp.path().join("go-b"), "").unwrap();
    wait_for("B's rollout", || (rollouts(&sb).len() == 2).then_some(()));
    // A ends first, while B's newer session is in the store and B is still running.
    gate_a.open();
    let out_a = a.wait_with_output().unwrap();
    assert!(
        out_a.status.success(),
        "{}",
        String::from_utf8_lossy(&out_a.stderr)
    );
    assert!(String::from_utf8_lossy(&out_a.stdout).contains(REPLY));
    gate_b.open();
    let out_b = b.wait_with_output().unwrap();
    assert!(
        out_b.status.success(),
        "{}",
        String::from_utf8_lossy(&out_b.stderr)
    );

    // The rollout whose user turn asked `needle` (an event, not the instructions around it:
    // the context file another run wrote may quote an earlier run's words).
    let asked = |text: &str, needle: &str| {
        text.lines().any(|line| {
            serde_json::from_str::<Value>(line).is_ok_and(|v| {
                v["type"] == "event_msg"
                    && ["user_message", "item_completed"]
                        .contains(&v["payload"]["type"].as_str().unwrap_or_default())
                    && v["payload"].to_string().contains(needle)
            })
        })
    };
    let id_of = |needle: &str| -> String {
        let file = rollouts(&sb)
            .into_iter()
            .find(|p| asked(&std::fs::read_to_string(p).unwrap(), needle))
            .unwrap_or_else(|| panic!("a rollout with {needle}"));
        let text = std::fs::read_to_string(file).unwrap();
        let meta: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        meta["payload"]["id"].as_str().unwrap().to_string()
    };
    let recorded = |needle: &str| -> Value {
        runs(&sb)
            .into_iter()
            .find(|r| r["argv"].to_string().contains(needle))
            .unwrap()["agent_session_id"]
            .clone()
    };
    let (alpha, beta) = (id_of("Alpha task please"), id_of("Beta task please"));
    assert_ne!(alpha, beta);
    let all = runs(&sb);
    assert_eq!(recorded("Alpha task please"), alpha.as_str(), "{all:#?}");
    assert_eq!(recorded("Beta task please"), beta.as_str(), "{all:#?}");
}

/// Two overlapping runs whose sessions nothing ties to either run (the stand-in writes its
/// rollout and closes it at once, so no open file tells them apart): neither records the other's
/// session, none is recorded, and each says why.
#[test]
fn overlapping_runs_that_cannot_be_told_apart_record_no_session_and_say_why() {
    let sb = Sandbox::with_session();
    sb.codex_writing_rollout("while [ ! -e \"$GO\" ]; do sleep 0.05; done");
    let spawn = |id: &str| {
        let mut cmd = sb.cmd();
        cmd.env("ID", id)
            .env("GO", sb.tmp.path().join(format!("go-{id}")))
            .args(["run", "codex", "--", id])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        cmd.spawn().unwrap()
    };
    let day = sb.home.join(".codex/sessions");
    let count = || walk(&day).len();
    let a = spawn("0199aaaa-0000-7000-8000-00000000000a");
    wait_for("A's rollout", || (count() == 1).then_some(()));
    let b = spawn("0199bbbb-0000-7000-8000-00000000000b");
    wait_for("B's rollout", || (count() == 2).then_some(()));
    std::fs::write(
        sb.tmp
            .path()
            .join("go-0199aaaa-0000-7000-8000-00000000000a"),
        "",
    )
    .unwrap();
    let out_a = a.wait_with_output().unwrap();
    std::fs::write(
        sb.tmp
            .path()
            .join("go-0199bbbb-0000-7000-8000-00000000000b"),
        "",
    )
    .unwrap();
    let out_b = b.wait_with_output().unwrap();
    for out in [&out_a, &out_b] {
        assert!(out.status.success(), "{out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("no codex session id is recorded for this run"),
            "{err}"
        );
    }
    for run in runs(&sb) {
        assert_eq!(run["agent_session_id"], Value::Null, "{run}");
        assert!(
            run["agent_session_note"]
                .as_str()
                .unwrap()
                .contains("overlapped"),
            "{run}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Item 10: the hook's cheap check never lags `pas-agent prompt`, in any layout, for any move.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    Plain,
    Packed,
    NoReflog,
    Reftable,
    Linked,
    Submodule,
    SeparateGitDir,
    Detached,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Move {
    Commit,
    NewBranchSameCommit,
    UpdateRef,
    ResetHard,
    PackThenUpdateRef,
    CommitInAnotherWorktreeOfTheBranch,
    FetchIntoTheBranch,
    Detach,
}

const MOVES: [Move; 8] = [
    Move::Commit,
    Move::NewBranchSameCommit,
    Move::UpdateRef,
    Move::ResetHard,
    Move::PackThenUpdateRef,
    Move::CommitInAnotherWorktreeOfTheBranch,
    Move::FetchIntoTheBranch,
    Move::Detach,
];

fn git_in(sb: &Sandbox, dir: &Path, args: &[&str]) -> String {
    let out = sb
        .git_cmd()
        .current_dir(dir)
        .args(args)
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        stderr(&out)
    );
    stdout(&out)
}

fn pas_in(sb: &Sandbox, dir: &Path, args: &[&str]) -> String {
    let out = sb.cmd().current_dir(dir).args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {out:?}");
    stdout(&out)
}

/// A work tree in `layout` with two commits, a session and a checkpoint; returns its path.
fn lay_out(sb: &Sandbox, layout: Layout) -> PathBuf {
    let root = sb.tmp.path();
    let two_commits = |dir: &Path| {
        for m in ["one", "two"] {
            git_in(sb, dir, &["commit", "-q", "--allow-empty", "-m", m]);
        }
    };
    let dir = match layout {
        Layout::Reftable => {
            let dir = root.join("rt");
            git_in(
                sb,
                root,
                &["init", "-q", "-b", "main", "--ref-format=reftable", "rt"],
            );
            two_commits(&dir);
            dir
        }
        Layout::SeparateGitDir => {
            let dir = root.join("sep");
            git_in(
                sb,
                root,
                &[
                    "init",
                    "-q",
                    "-b",
                    "main",
                    "--separate-git-dir",
                    "sep.git",
                    "sep",
                ],
            );
            two_commits(&dir);
            dir
        }
        Layout::Linked => {
            two_commits(&sb.work);
            git_in(
                sb,
                &sb.work,
                &["worktree", "add", "-q", "-b", "linked", "../linked"],
            );
            root.join("linked")
        }
        Layout::Submodule => {
            let src = root.join("subsrc");
            git_in(sb, root, &["init", "-q", "-b", "main", "subsrc"]);
            two_commits(&src);
            git_in(
                sb,
                &sb.work,
                &[
                    "-c",
                    "protocol.file.allow=always",
                    "submodule",
                    "add",
                    "-q",
                    "../subsrc",
                    "sub",
                ],
            );
            let dir = sb.work.join("sub");
            git_in(sb, &dir, &["checkout", "-q", "-B", "main"]);
            dir
        }
        _ => {
            two_commits(&sb.work);
            sb.work.clone()
        }
    };
    match layout {
        Layout::Packed => {
            git_in(sb, &dir, &["pack-refs", "--all", "--prune"]);
        }
        Layout::NoReflog => {
            git_in(sb, &dir, &["config", "core.logAllRefUpdates", "false"]);
            std::fs::remove_dir_all(dir.join(".git/logs")).unwrap();
        }
        Layout::Detached => {
            git_in(sb, &dir, &["checkout", "-q", "--detach"]);
        }
        _ => {}
    }
    pas_in(sb, &dir, &["init", "--task", "Layouts"]);
    pas_in(sb, &dir, &["checkpoint", "start"]);
    dir
}

fn make_move(sb: &Sandbox, dir: &Path, m: Move) -> bool {
    let branch = git_in(sb, dir, &["rev-parse", "--symbolic-full-name", "HEAD"]);
    let branch = branch.trim();
    let detached = branch == "HEAD";
    match m {
        Move::Commit => {
            git_in(sb, dir, &["commit", "-q", "--allow-empty", "-m", "moved"]);
        }
        Move::NewBranchSameCommit => {
            git_in(sb, dir, &["checkout", "-q", "-b", "other"]);
        }
        Move::UpdateRef => {
            git_in(sb, dir, &["update-ref", "HEAD", "HEAD~1"]);
        }
        Move::ResetHard => {
            git_in(sb, dir, &["reset", "-q", "--hard", "HEAD~1"]);
        }
        Move::PackThenUpdateRef => {
            git_in(sb, dir, &["pack-refs", "--all", "--prune"]);
            git_in(sb, dir, &["update-ref", "HEAD", "HEAD~1"]);
        }
        Move::CommitInAnotherWorktreeOfTheBranch => {
            if detached {
                return false;
            }
            let short = branch.trim_start_matches("refs/heads/");
            let other = sb.tmp.path().join("other-wt");
            git_in(
                sb,
                dir,
                &[
                    "worktree",
                    "add",
                    "-q",
                    "--force",
                    other.to_str().unwrap(),
                    short,
                ],
            );
            git_in(
                sb,
                &other,
                &["commit", "-q", "--allow-empty", "-m", "elsewhere"],
            );
        }
        Move::FetchIntoTheBranch => {
            if detached {
                return false;
            }
            git_in(sb, dir, &["update-ref", "refs/upstream/tip", "HEAD~1"]);
            let spec = format!("+refs/upstream/tip:{branch}");
            git_in(sb, dir, &["fetch", "-q", "--update-head-ok", ".", &spec]);
        }
        Move::Detach => {
            if detached {
                git_in(sb, dir, &["checkout", "-q", "HEAD~1"]);
            } else {
                git_in(sb, dir, &["checkout", "-q", "--detach"]);
            }
        }
    }
    true
}

/// What the hooks compute: is any watched file newer than the stamp (bash's own `-nt`)?
fn cheap_check_sees_a_change(sb: &Sandbox, stamp: &str, watched: &[String]) -> bool {
    let mut cmd = isolated(sb, &require("bash"));
    cmd.args(["--norc", "--noprofile", "-c"])
        .arg("s=$1; shift; for f; do [[ $f -nt $s ]] && exit 0; done; exit 1")
        .arg("check")
        .arg(stamp)
        .args(watched);
    cmd.status().unwrap().success()
}

fn check_layout(layout: Layout) {
    for m in MOVES {
        let sb = Sandbox::repo();
        let dir = lay_out(&sb, layout);
        let hooked = pas_in(&sb, &dir, &["prompt", "--hook", "4242"]);
        let lines: Vec<String> = hooked.lines().map(String::from).collect();
        assert_eq!(lines[0], "Layouts", "{layout:?}");
        let (stamp, watched) = (lines[2].clone(), lines[3..].to_vec());
        // Let the clock move past the stamp, as a person typing does.
        std::thread::sleep(Duration::from_millis(50));
        if !make_move(&sb, &dir, m) {
            continue;
        }
        let full = pas_in(&sb, &dir, &["prompt"]);
        assert_eq!(
            full, "Layouts · stale\n",
            "{layout:?} {m:?}: the move is one prompt shows"
        );
        assert!(
            cheap_check_sees_a_change(&sb, &stamp, &watched),
            "{layout:?} {m:?}: the hook's check missed it; watched {watched:#?}"
        );
    }
}

#[test]
fn cheap_check_plain_repository() {
    check_layout(Layout::Plain);
}

#[test]
fn cheap_check_packed_refs() {
    check_layout(Layout::Packed);
}

#[test]
fn cheap_check_without_reflogs() {
    check_layout(Layout::NoReflog);
}

#[test]
fn cheap_check_reftable() {
    check_layout(Layout::Reftable);
}

#[test]
fn cheap_check_linked_worktree() {
    check_layout(Layout::Linked);
}

#[test]
fn cheap_check_submodule() {
    check_layout(Layout::Submodule);
}

#[test]
fn cheap_check_separate_git_dir() {
    check_layout(Layout::SeparateGitDir);
}

#[test]
fn cheap_check_detached_head() {
    check_layout(Layout::Detached);
}

// ---------------------------------------------------------------------------------------------
// Item 12: special files in .git never hang or crash a command.

/// Runs `cmd`, failing the test if it has not exited after `limit` (a hang, not a slowness:
/// the limit is far above any normal run).
fn within(mut cmd: Command, limit: Duration) -> Output {
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + limit;
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?} hung");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut out = Output {
        status: child.wait().unwrap(),
        stdout: Vec::new(),
        stderr: Vec::new(),
    };
    child
        .stdout
        .take()
        .unwrap()
        .read_to_end(&mut out.stdout)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_end(&mut out.stderr)
        .unwrap();
    out
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

#[test]
fn special_files_where_git_keeps_head_or_refs_never_hang_any_command() {
    type Plant = fn(&Path);
    let plants: [(&str, &str, Plant); 7] = [
        ("a FIFO as HEAD", ".git/HEAD", |p| mkfifo(p)),
        ("a directory as HEAD", ".git/HEAD", |p| {
            std::fs::create_dir(p).unwrap()
        }),
        ("a dangling symlink as HEAD", ".git/HEAD", |p| {
            std::os::unix::fs::symlink("nowhere", p).unwrap()
        }),
        ("a FIFO as the branch", ".git/refs/heads/main", |p| {
            mkfifo(p)
        }),
        ("a FIFO as packed-refs", ".git/packed-refs", |p| mkfifo(p)),
        ("a FIFO as the index", ".git/index", |p| mkfifo(p)),
        ("a FIFO as the config", ".git/config", |p| mkfifo(p)),
    ];
    for (what, rel, plant) in plants {
        let sb = Sandbox::with_session();
        sb.ok(&["checkpoint", "start"]);
        let path = sb.path(rel);
        let _ = std::fs::remove_file(&path);
        plant(&path);
        for args in [
            &["prompt"][..],
            &["prompt", "--hook", "77"],
            &["status"],
            &["export", "--to", "codex"],
            &["checkpoint", "again"],
        ] {
            let mut cmd = sb.cmd();
            cmd.args(args);
            let out = within(cmd, Duration::from_secs(60));
            assert!(out.status.success(), "{what}: {args:?}: {out:?}");
            if args[0] == "prompt" {
                assert!(stderr(&out).is_empty(), "{what}: prompt is quiet: {out:?}");
                assert!(
                    stdout(&out).starts_with("Build the thing"),
                    "{what}: {out:?}"
                );
            } else {
                let err = stderr(&out);
                assert!(
                    err.contains(rel.trim_start_matches(".git/")),
                    "{what}: {args:?}: {err}"
                );
            }
        }
    }
    // A repository that cannot be read is not "outside git": the git state recorded earlier
    // is kept, and `init` below the top level refuses instead of guessing where the session
    // belongs (a newcomer's trial: it made a session in the subdirectory).
    let sb = Sandbox::repo();
    std::fs::create_dir(sb.path("sub")).unwrap();
    let head = sb.path(".git/HEAD");
    std::fs::remove_file(&head).unwrap();
    mkfifo(&head);
    let mut cmd = sb.cmd();
    cmd.current_dir(sb.path("sub"))
        .args(["init", "--task", "x"]);
    let out = within(cmd, Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(stderr(&out).contains("HEAD"), "{out:?}");
    assert!(!sb.path("sub/.pas-agent").exists());
    assert!(!sb.path(".pas-agent").exists());
    let sb = Sandbox::with_session();
    sb.ok(&["checkpoint", "start"]);
    let recorded = sb.session()["git"].clone();
    assert!(recorded["commit"].is_string(), "{recorded}");
    let head = sb.path(".git/HEAD");
    std::fs::remove_file(&head).unwrap();
    mkfifo(&head);
    let mut cmd = sb.cmd();
    cmd.args(["update", "--next", "y"]);
    let out = within(cmd, Duration::from_secs(60));
    assert!(out.status.success(), "{out:?}");
    assert_eq!(sb.session()["git"], recorded);

    // A hook in a real shell draws its prompt too.
    let sb = Sandbox::with_session();
    sb.ok(&["checkpoint", "start"]);
    let head = sb.path(".git/HEAD");
    std::fs::remove_file(&head).unwrap();
    mkfifo(&head);
    let mut cmd = isolated(&sb, &require("bash"));
    cmd.env("PAS_HOOK", crate::hooks::hook(&sb, "bash"))
        .env("PAS_AGENT_NOTICE", "0")
        .args(["--norc", "--noprofile", "-i", "-c"])
        .arg("eval \"$PAS_HOOK\"; __pas_agent_precmd; echo \"[$PAS_AGENT_PROMPT]\"");
    let out = within(cmd, Duration::from_secs(60));
    assert_eq!(stdout(&out), "[Build the thing]\n", "{out:?}");
    let _ = std::io::stdout().flush();
}
