//! Finished runs out of the hot file: the details of old runs move to
//! `.pas-agent/history.jsonl`, `runs N` and `runs --json` read them back, merges, `prune` and
//! damaged lines (docs/teams.md, "Old runs").

use serde_json::{Value, json};

use crate::common::{Sandbox, stdout};

/// A session of `n` runs as a version before this one wrote it (every run whole in
/// `session.json`): two real runs (one edits and commits), then the first one given an agent's
/// words and a hook's last message and cloned with fresh ids and later times. Returns the
/// sandbox; nothing has changed the session since it was written.
fn old_format_session(n: usize) -> Sandbox {
    let sb = Sandbox::with_session();
    sb.ok(&[
        "run",
        "--no-pty",
        "--",
        "sh",
        "-c",
        "echo a > a.txt && echo b > b.txt && git add -A && git commit -qm 'agent work'",
    ]);
    sb.ok(&["run", "--no-pty", "--", "sh", "-c", "echo c > c.txt"]);
    let mut s = sb.session();
    let mut run = s["runs"][0].clone();
    assert_eq!(run["commits"].as_array().unwrap().len(), 1, "{run:#}");
    assert!(!run["files_changed"].as_array().unwrap().is_empty());
    run["agent_session_id"] = "sess-0".into();
    run["transcript"] = json!({
        "source": "/home/u/.claude/projects/x/s.jsonl",
        "prompts": ["Add the a and b files", "and commit them"],
        "last_answer": "Added a.txt and b.txt and committed them.",
        "model": "claude-sonnet-4-5",
        "tokens": {"input": 1200, "output": 300},
        "edits": ["a.txt", "b.txt"],
        "commands": [{"command": "git add -A && git commit -m 'agent work'", "exit_code": 0}]
    });
    run["last_message"] = "Added a.txt and b.txt.".into();
    run["a_newer_writers_field"] = json!({"note": "x".repeat(300)});
    let last = s["runs"][1].clone();
    let runs = s["runs"].as_array_mut().unwrap();
    runs.clear();
    for i in 0..n - 1 {
        let mut r = run.clone();
        r["id"] = format!("00000000-0000-4000-8000-{i:012}").into();
        r["agent_session_id"] = format!("sess-{i}").into();
        r["started_at"] = format!("2026-01-01T00:{:02}:{:02}Z", i / 60, i % 60).into();
        r["ended_at"] = format!("2026-01-01T01:{:02}:{:02}Z", i / 60, i % 60).into();
        runs.push(r);
    }
    runs.push(last);
    sb.write(
        ".pas-agent/session.json",
        serde_json::to_string_pretty(&s).unwrap() + "\n",
    );
    sb
}

fn json_of(sb: &Sandbox, args: &[&str]) -> Value {
    serde_json::from_str(&sb.ok(args)).unwrap()
}

fn size(sb: &Sandbox, rel: &str) -> u64 {
    std::fs::metadata(sb.path(rel)).map_or(0, |m| m.len())
}

fn run_lines(sb: &Sandbox) -> Vec<String> {
    sb.read(".pas-agent/history.jsonl")
        .lines()
        .filter(|l| l.starts_with("{\"run\":"))
        .map(String::from)
        .collect()
}

#[test]
fn old_runs_keep_a_skeleton_and_runs_n_gives_them_back_whole() {
    let sb = old_format_session(30);
    // What every reader gave before anything moved.
    let one = json_of(&sb, &["runs", "1", "--json"]);
    let all = json_of(&sb, &["runs", "--json"]);
    let one_text = sb.ok(&["runs", "1"]);
    let table = sb.ok(&["runs"]);
    let before = size(&sb, ".pas-agent/session.json");
    assert!(!sb.path(".pas-agent/history.jsonl").exists());

    // The first change shrinks a session written before this version.
    sb.ok(&["update", "--discovery", "x"]);
    let after = size(&sb, ".pas-agent/session.json");
    assert!(after * 4 < before * 3, "{after} vs {before}");
    let s = sb.session();
    let runs = s["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 30, "every run keeps its place");
    // The oldest 20 keep a skeleton; the latest 10 keep everything.
    let old = &runs[0];
    let skeleton = serde_json::to_string_pretty(old).unwrap().len();
    assert!(skeleton < 1500, "{skeleton} bytes: {old:#}");
    assert_eq!(old["details_in_history"], true, "{old:#}");
    assert_eq!(old["commits"], json!([]));
    assert_eq!(old["files_changed"], json!([]));
    assert_eq!(old["commits_total"], 1);
    assert_eq!(
        old["files_changed_total"].as_u64().unwrap(),
        one["run"]["files_changed"].as_array().unwrap().len() as u64
    );
    for gone in ["transcript", "last_message", "a_newer_writers_field"] {
        assert!(old.get(gone).is_none(), "{gone}: {old:#}");
    }
    for kept in [
        "id",
        "agent",
        "argv",
        "cwd",
        "state",
        "started_at",
        "ended_at",
        "duration_ms",
        "exit_code",
        "agent_session_id",
    ] {
        assert_eq!(old[kept], one["run"][kept], "{kept}");
    }
    // The launcher's fields moved with the details: a skeleton leaves them out.
    for moved in [
        "launcher_pid",
        "launcher_started",
        "nonce",
        "head_before",
        "head_after",
        "checkpoint_before",
        "checkpoint_after",
        "capture",
    ] {
        assert!(old.get(moved).is_none(), "{moved}: {old:#}");
    }
    assert!(one["run"]["head_before"].is_string() && one["run"]["launcher_pid"].is_u64());
    assert_eq!(runs[19]["details_in_history"], true);
    assert!(runs[20].get("details_in_history").is_none());
    assert!(runs[20]["transcript"].is_object());
    assert_eq!(run_lines(&sb).len(), 20);

    // Read back whole: the same records, the same text, the same table.
    assert_eq!(json_of(&sb, &["runs", "1", "--json"]), one);
    assert_eq!(json_of(&sb, &["runs", "--json"]), all);
    assert_eq!(sb.ok(&["runs", "1"]), one_text);
    assert_eq!(sb.ok(&["runs"]), table);

    // Nothing moves twice; a later change adds no line.
    sb.ok(&["update", "--discovery", "y"]);
    assert_eq!(run_lines(&sb).len(), 20);
    // The session still loads for every reader.
    for args in [
        &["status"][..],
        &["export", "--to", "codex"],
        &["list"],
        &["prompt"],
    ] {
        sb.ok(args);
    }
}

#[test]
fn a_skeleton_that_still_holds_the_launchers_fields_gives_them_up_and_reads_the_same() {
    let sb = old_format_session(14);
    sb.ok(&["update", "--discovery", "x"]);
    let one = json_of(&sb, &["runs", "1", "--json"]);
    let table = sb.ok(&["runs"]);
    // A skeleton as the previous version wrote it: the launcher's fields still in it.
    let mut s = sb.session();
    let old = s["runs"][0].as_object_mut().unwrap();
    assert!(old.get("head_before").is_none(), "{old:?}");
    for key in [
        "launcher_pid",
        "launcher_started",
        "head_before",
        "head_after",
    ] {
        old.insert(key.into(), one["run"][key].clone());
    }
    sb.write(
        ".pas-agent/session.json",
        serde_json::to_string_pretty(&s).unwrap() + "\n",
    );
    let lines = run_lines(&sb).len();
    let before = size(&sb, ".pas-agent/session.json");

    // The next change that reads the whole file moves them out, once.
    sb.ok(&["update", "--discovery", "y"]);
    assert!(size(&sb, ".pas-agent/session.json") < before);
    let old = &sb.session()["runs"][0];
    for key in [
        "launcher_pid",
        "launcher_started",
        "head_before",
        "head_after",
    ] {
        assert!(old.get(key).is_none(), "{key}: {old:#}");
    }
    assert_eq!(run_lines(&sb).len(), lines + 1);
    assert_eq!(json_of(&sb, &["runs", "1", "--json"]), one);
    assert_eq!(sb.ok(&["runs"]), table);
    sb.ok(&["update", "--discovery", "z"]);
    assert_eq!(run_lines(&sb).len(), lines + 1);
}

#[test]
fn a_damaged_history_line_is_said_not_a_crash() {
    let sb = old_format_session(14);
    sb.ok(&["update", "--discovery", "x"]);
    let history = sb.read(".pas-agent/history.jsonl");
    let first = history.lines().next().unwrap().to_string();
    assert!(first.starts_with("{\"run\":\"00000000-0000-4000-8000-000000000000\""));
    // A hand edit cut the first run's line short.
    sb.write(
        ".pas-agent/history.jsonl",
        history.replacen(&first, &first[..first.len() / 2], 1),
    );
    let v = json_of(&sb, &["runs", "1", "--json"]);
    assert_eq!(v["run"]["history_line_damaged"], true, "{v:#}");
    assert_eq!(v["run"]["details_in_history"], true);
    let text = sb.ok(&["runs", "1"]);
    assert!(text.contains("history.jsonl is damaged"), "{text}");
    assert!(text.contains("1 commit (not listed)"), "{text}");
    assert!(text.contains("HEAD:     unknown (it was kept"), "{text}");
    // The other moved runs read back whole.
    let two = json_of(&sb, &["runs", "2", "--json"]);
    assert!(two["run"]["transcript"].is_object(), "{two:#}");
    assert!(two["run"]["head_before"].is_string(), "{two:#}");
    assert!(!sb.ok(&["runs", "2"]).contains("HEAD:     unknown"));
    assert!(two["run"].get("history_line_damaged").is_none());
    let all = json_of(&sb, &["runs", "--json"]);
    assert_eq!(all["runs"][0]["history_line_damaged"], true);
    assert!(all["runs"][1]["transcript"].is_object());
}

#[test]
fn a_torn_line_fused_with_the_next_runs_line_loses_neither_run() {
    let sb = old_format_session(14);
    let all = json_of(&sb, &["runs", "--json"]);
    sb.ok(&["update", "--discovery", "x"]);
    let history = sb.read(".pas-agent/history.jsonl");
    let lines: Vec<&str> = history.lines().collect();
    assert!(lines[0].contains("8000-000000000000") && lines[1].contains("8000-000000000001"));
    // A writer died mid-append of run 1's line, the next append (run 2's) went on the same
    // line, and run 1's line was written whole again later.
    let mut torn = format!("{}{}\n", &lines[0][..lines[0].len() / 2], lines[1]);
    for l in &lines[2..] {
        torn.push_str(l);
        torn.push('\n');
    }
    torn.push_str(lines[0]);
    torn.push('\n');
    sb.write(".pas-agent/history.jsonl", torn);
    let back = json_of(&sb, &["runs", "--json"]);
    for i in 0..2 {
        assert!(back["runs"][i].get("history_line_damaged").is_none(), "{i}");
        assert_eq!(back["runs"][i], all["runs"][i], "{i}");
    }
    for n in ["1", "2"] {
        let text = sb.ok(&["runs", n]);
        assert!(!text.contains("damaged"), "{n}: {text}");
        assert_eq!(
            json_of(&sb, &["runs", n, "--json"])["run"],
            all["runs"][n.parse::<usize>().unwrap() - 1]
        );
    }
    // Without run 1's later line, only run 1 is damaged.
    let history = sb.read(".pas-agent/history.jsonl");
    let without = history
        .lines()
        .filter(|l| *l != lines[0])
        .collect::<Vec<_>>()
        .join("\n")
        + "\n";
    sb.write(".pas-agent/history.jsonl", without);
    let back = json_of(&sb, &["runs", "--json"]);
    assert_eq!(back["runs"][0]["history_line_damaged"], true);
    assert_eq!(back["runs"][1], all["runs"][1]);
    assert!(sb.ok(&["runs", "1"]).contains("damaged"));
}

#[test]
fn a_history_file_too_large_to_read_is_warned_of_and_left_alone() {
    let sb = old_format_session(14);
    sb.ok(&["update", "--discovery", "x"]);
    let history = sb.read(".pas-agent/history.jsonl");
    // Past the 64 MiB read limit, cheaply: a sparse tail of zeros.
    let big = 64 * 1024 * 1024 + 1;
    std::fs::OpenOptions::new()
        .write(true)
        .open(sb.path(".pas-agent/history.jsonl"))
        .unwrap()
        .set_len(big)
        .unwrap();
    for args in [
        &["runs", "--json"][..],
        &["runs", "1"],
        &["runs", "1", "--json"],
        &["runs"],
        &["prune", "--keep", "2"],
    ] {
        let out = sb.run(args);
        assert!(out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("warning: cannot read .pas-agent/history.jsonl")
                && err.contains("too large"),
            "{args:?}: {err}"
        );
    }
    // Nothing of it was dropped or rewritten.
    assert_eq!(size(&sb, ".pas-agent/history.jsonl"), big);
    let bytes = std::fs::read(sb.path(".pas-agent/history.jsonl")).unwrap();
    assert!(bytes.starts_with(history.as_bytes()));
    // The runs keep their skeletons, still marked as moved.
    let v = json_of(&sb, &["runs", "1", "--json"]);
    assert_eq!(v["run"]["details_in_history"], true, "{v:#}");
}

#[test]
fn prune_shrinks_old_runs_lines_and_drops_those_of_runs_not_in_the_session() {
    let sb = old_format_session(14);
    // The same prune on the same runs, whole in session.json (`--keep 2` moves nothing out
    // before it prunes): what `runs 1 --json` gives must match.
    let twin = old_format_session(14);
    sb.ok(&["update", "--discovery", "x"]);
    assert_eq!(run_lines(&sb).len(), 4);
    // A line of a run no session has (a branch's, since dropped).
    let mut history = sb.read(".pas-agent/history.jsonl");
    history.push_str(
        "{\"run\":\"00000000-0000-4000-8000-999999999999\",\"details\":{\"commits\":[]}}\n",
    );
    sb.write(".pas-agent/history.jsonl", history);
    let dry = sb.ok(&["prune", "--keep", "2", "--dry-run"]);
    assert!(dry.contains("Would drop 1 older lines"), "{dry}");
    assert!(
        dry.contains("4 older runs in .pas-agent/history.jsonl"),
        "{dry}"
    );
    let out = sb.ok(&["prune", "--keep", "2"]);
    assert!(
        out.contains("4 older runs in .pas-agent/history.jsonl"),
        "{out}"
    );
    assert_eq!(run_lines(&sb).len(), 4);
    assert!(!sb.read(".pas-agent/history.jsonl").contains("999999999999"));
    twin.ok(&["prune", "--keep", "2"]);
    let pruned = json_of(&sb, &["runs", "1", "--json"]);
    assert_eq!(pruned["run"]["files_changed"], json!([]));
    assert_eq!(pruned["run"]["transcript"]["pruned"], true, "{pruned:#}");
    // The twin's run has other ids, times and paths: its details must be the same.
    let twin = json_of(&twin, &["runs", "1", "--json"]);
    for key in [
        "files_changed",
        "files_changed_total",
        "transcript",
        "last_message",
        "a_newer_writers_field",
        "commits_total",
        "details_in_history",
    ] {
        assert_eq!(pruned["run"].get(key), twin["run"].get(key), "{key}");
    }
    assert_eq!(pruned["run"]["commits"].as_array().unwrap().len(), 1);
    let text = sb.ok(&["runs", "1"]);
    assert!(
        text.contains("file changed") || text.contains("files changed"),
        "{text}"
    );
}

/// A repository whose committed session holds 12 whole runs (as a version before this one
/// wrote it), on `main`, with a branch `feat` at the same commit.
fn shared_old_session() -> Sandbox {
    let sb = old_format_session(12);
    sb.git(&["add", "-A"]);
    sb.git(&["commit", "-q", "-m", "session"]);
    sb.git(&["branch", "feat"]);
    sb
}

/// Changes run 1 by hand, as a version that does not move runs would: a field of its skeleton
/// and one of its details.
fn hand_edit_first_run(sb: &Sandbox) {
    let mut s = sb.session();
    s["runs"][0]["agent_session_id"] = "learned-later".into();
    s["task"]["next_action"] = "hand step".into();
    s["updated_at"] = "2099-01-01T00:00:00Z".into();
    sb.write(
        ".pas-agent/session.json",
        serde_json::to_string_pretty(&s).unwrap() + "\n",
    );
}

#[test]
fn a_merge_of_a_side_that_moved_runs_with_one_that_did_not_keeps_both() {
    // Into the side that did not move them, and into the side that did.
    for merging in ["main", "feat"] {
        let moving = "feat";
        let sb = shared_old_session();
        let whole = json_of(&sb, &["runs", "1", "--json"]);
        // One side changes the session with this version: runs 1 and 2 move out.
        sb.git(&["checkout", "-q", moving]);
        sb.ok(&["update", "--discovery", "moved"]);
        assert_eq!(sb.session()["runs"][0]["details_in_history"], true);
        sb.git(&["add", "-A"]);
        sb.git(&["commit", "-q", "-m", "moved"]);
        // The other side keeps them whole and changes run 1 by hand.
        sb.git(&["checkout", "-q", "main"]);
        hand_edit_first_run(&sb);
        sb.git(&["commit", "-q", "-am", "hand"]);
        // Merge into `merging`.
        sb.git(&["checkout", "-q", merging]);
        let from = if merging == "main" { "feat" } else { "main" };
        let out = sb
            .git_cmd()
            .args(["merge", "-q", from, "-m", "merge"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{moving}: {}", stdout(&out));
        let s = sb.session();
        let runs = s["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 12);
        assert_eq!(
            runs[0]["details_in_history"], true,
            "{moving}: {:#}",
            runs[0]
        );
        assert!(runs[0].get("transcript").is_none(), "{moving}");
        assert_eq!(runs[0]["agent_session_id"], "learned-later");
        assert_eq!(s["task"]["next_action"], "hand step");
        let mut want = whole.clone();
        want["run"]["agent_session_id"] = "learned-later".into();
        assert_eq!(json_of(&sb, &["runs", "1", "--json"]), want, "{moving}");
        assert_eq!(sb.git(&["status", "--porcelain", "--", ".pas-agent"]), "");
    }
}

#[test]
fn both_sides_moving_the_same_runs_merge_to_one_skeleton_and_readable_lines() {
    let sb = shared_old_session();
    let whole = json_of(&sb, &["runs", "1", "--json"]);
    sb.git(&["checkout", "-q", "feat"]);
    sb.ok(&["update", "--discovery", "on feat"]);
    sb.git(&["add", "-A"]);
    sb.git(&["commit", "-q", "-m", "feat"]);
    sb.git(&["checkout", "-q", "main"]);
    sb.ok(&["update", "--discovery", "on main"]);
    sb.git(&["add", "-A"]);
    sb.git(&["commit", "-q", "-m", "main"]);
    let out = sb
        .git_cmd()
        .args(["merge", "-q", "feat", "-m", "merge"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stdout(&out));
    let history = sb.read(".pas-agent/history.jsonl");
    assert!(!history.contains("<<<<<<<"), "{history}");
    assert_eq!(sb.session()["runs"][0]["details_in_history"], true);
    assert_eq!(json_of(&sb, &["runs", "1", "--json"]), whole);
}

/// The text of `runs[..n]` in the session file, as it stands.
fn old_runs_text(sb: &Sandbox, n: usize) -> String {
    let text = sb.read(".pas-agent/session.json");
    let start = text.find("\"runs\": [").unwrap();
    let end = text
        .match_indices("\"details_in_history\": true")
        .nth(n - 1)
        .unwrap()
        .0;
    text[start..end].to_string()
}

#[test]
fn commands_that_read_no_old_run_write_old_skeletons_back_byte_for_byte() {
    let sb = old_format_session(30);
    sb.ok(&["update", "--discovery", "x"]);
    // A field of a newer writer in the oldest skeleton, spelt as this build would not write
    // it once decoded (`1E2` comes back as `100.0`, the array on several lines).
    let text = sb.read(".pas-agent/session.json").replacen(
        "\"details_in_history\": true",
        "\"a_future_field\": [1E2, {\"z\": \"1\"}],\n      \"details_in_history\": true",
        1,
    );
    sb.write(".pas-agent/session.json", &text);
    // A file changed outside pas-agent is read in full once, every value checked (`status`
    // keeps the summary of that read); from then on old skeletons stay undecoded.
    sb.ok(&["status"]);
    let old = old_runs_text(&sb, 20);
    assert!(old.contains("[1E2, {\"z\": \"1\"}]"), "{old}");
    let all = json_of(&sb, &["runs", "--json"]);
    let latest = json_of(&sb, &["runs", "30", "--json"]);
    for args in [
        &["update", "--discovery", "y"][..],
        &["checkpoint", "m"],
        &["export", "--to", "codex"],
        &["status"],
        &["runs", "30"],
        &["runs", "25", "--json"],
        &["runs", "3"],
    ] {
        sb.ok(args);
        assert_eq!(old_runs_text(&sb, 20), old, "after {args:?}");
    }
    assert_eq!(json_of(&sb, &["runs", "30", "--json"]), latest);
    assert_eq!(json_of(&sb, &["runs", "--json"]), all);
    assert_eq!(
        json_of(&sb, &["runs", "1", "--json"])["run"]["a_future_field"],
        json!([100.0, {"z": "1"}])
    );
    // A run's number counts the old runs: 31 is the run just added.
    sb.ok(&["run", "--no-pty", "--no-checkpoint", "--", "true"]);
    assert_eq!(json_of(&sb, &["runs", "31", "--json"])["number"], 31);
    assert_eq!(
        json_of(&sb, &["runs", "--json"])["runs"]
            .as_array()
            .unwrap()
            .len(),
        31
    );
}

#[test]
fn old_skeletons_of_a_crlf_session_keep_one_cr_per_line() {
    let sb = old_format_session(15);
    sb.ok(&["update", "--discovery", "x"]);
    let all = json_of(&sb, &["runs", "--json"]);
    let crlf = sb.read(".pas-agent/session.json").replace('\n', "\r\n");
    sb.write(".pas-agent/session.json", &crlf);
    sb.ok(&["update", "--discovery", "y"]);
    let text = sb.read(".pas-agent/session.json");
    assert!(!text.contains("\r\r"), "{text}");
    assert_eq!(text.matches('\n').count(), text.matches("\r\n").count());
    assert_eq!(json_of(&sb, &["runs", "--json"]), all);
}

#[test]
fn a_damaged_old_skeleton_is_reported_by_the_commands_that_read_it() {
    let sb = old_format_session(15);
    sb.ok(&["update", "--discovery", "x"]);
    // Not JSON: every command says so, naming the file, and nothing is rewritten.
    let text = sb.read(".pas-agent/session.json");
    let broken = text.replacen("\"commits_total\": 1,", "\"commits_total\": 1,,", 1);
    sb.write(".pas-agent/session.json", &broken);
    for args in [
        &["update", "--discovery", "y"][..],
        &["runs", "12"],
        &["runs"],
    ] {
        let err = sb.fails(args, 5);
        assert!(err.contains("session.json"), "{args:?}: {err}");
    }
    assert_eq!(sb.read(".pas-agent/session.json"), broken);
    // A newer schema: `runs N`, which decodes one run, refuses it as `runs` does.
    let newer = text.replacen("\"schema_version\": 1", "\"schema_version\": 2", 1);
    sb.write(".pas-agent/session.json", &newer);
    let code = sb.run(&["runs"]).status.code();
    assert_ne!(code, Some(0));
    for args in [&["runs", "12"][..], &["runs", "1", "--json"]] {
        assert_eq!(sb.run(args).status.code(), code, "{args:?}");
    }
    // A count that is not a whole number, or a number this build cannot keep exactly, put
    // there by hand: every command refuses the file, naming it and the field, and nothing is
    // rewritten — a change does not copy it on into the last good copy `recover` restores,
    // which still restores the session.
    for (from, to, field) in [
        (
            "\"files_changed_total\": ",
            "\"files_changed_total\": 2.5, \"was\": ",
            "runs[0].files_changed_total",
        ),
        (
            "\"commits_total\": 1,",
            "\"commits_total\": 1, \"n\": 1e-400,",
            "line ",
        ),
    ] {
        let wrong = text.replacen(from, to, 1);
        sb.write(".pas-agent/session.json", &wrong);
        for args in [&["runs", "1"][..], &["runs", "1", "--json"], &["runs"]] {
            let err = sb.fails(args, 5);
            assert!(err.contains("session.json") && err.contains(field), "{err}");
        }
        for args in [
            &["update", "--discovery", "y"][..],
            &["checkpoint", "m"],
            &["export", "--to", "codex"],
        ] {
            let err = sb.fails(args, 5);
            assert!(
                err.contains("session.json") && err.contains(field),
                "{args:?}: {err}"
            );
        }
        assert_eq!(sb.read(".pas-agent/session.json"), wrong);
        sb.ok(&["recover"]);
        sb.ok(&["runs", "1"]);
        sb.ok(&["update", "--discovery", "y"]);
        assert!(!sb.read(".pas-agent/session.json").contains(to), "{to}");
    }
}

/// The launcher's records leave old runs undecoded, yet weigh them: an agent session an old
/// run recorded is not recorded again by a new run, and a new run's number counts every run.
#[test]
fn the_launcher_weighs_old_undecoded_runs_and_numbers_runs_after_them() {
    let sb = Sandbox::with_session();
    // A stand-in codex that writes a rollout for the session id `$ID`, started now, and exits.
    sb.codex_writing_rollout("");
    let id = "0199cccc-0000-7000-8000-00000000000c";
    let codex = |sb: &Sandbox| {
        let out = sb
            .cmd()
            .env("ID", id)
            .args(["run", "codex"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    codex(&sb);
    assert_eq!(sb.session()["runs"][0]["agent_session_id"], id);
    for _ in 0..12 {
        sb.ok(&[
            "run",
            "--no-pty",
            "--no-checkpoint",
            "--",
            "sh",
            "-c",
            "echo x >> a.txt",
        ]);
    }
    // The first run is an old run's skeleton now, left undecoded by the launcher.
    assert_eq!(sb.session()["runs"][0]["details_in_history"], true);

    // The same session id turns up again: the old run has it, the new one does not take it.
    let err = codex(&sb);
    assert!(err.contains("(run #14,"), "{err}");
    let s = sb.session();
    let runs = s["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 14);
    assert_eq!(runs[0]["agent_session_id"], id);
    assert_eq!(runs[13]["agent_session_id"], Value::Null, "{:#}", runs[13]);
    // Left out of the guesses from the start (no note that another run holds it).
    assert!(
        runs[13].get("agent_session_note").is_none(),
        "{:#}",
        runs[13]
    );
    let number = json_of(&sb, &["runs", "14", "--json"]);
    assert_eq!(number["run"]["id"], runs[13]["id"]);
}

/// An old run left undecoded that overlapped a new run still counts for the new run's files:
/// its edits moved out with its details, so what the new run changed may be either's (shared).
#[test]
fn an_old_undecoded_run_that_overlapped_a_new_one_makes_its_files_shared() {
    let sb = old_format_session(14);
    sb.ok(&["update", "--discovery", "x"]);
    // The oldest run's span, set by hand, covers the next hours; a future writer's value in it
    // shows whether the launcher decoded and rewrote it (`1E2` would come back as `100.0`).
    let now = chrono::Utc::now();
    let text = sb.read(".pas-agent/session.json");
    let oldest = &sb.session()["runs"][0];
    let text = text
        .replacen(
            oldest["started_at"].as_str().unwrap(),
            &(now - chrono::Duration::hours(1)).to_rfc3339(),
            1,
        )
        .replacen(
            oldest["ended_at"].as_str().unwrap(),
            &(now + chrono::Duration::hours(2)).to_rfc3339(),
            1,
        )
        .replacen(
            "\"details_in_history\": true",
            "\"a_future_field\": [1E2],\n      \"details_in_history\": true",
            1,
        );
    sb.write(".pas-agent/session.json", &text);
    // Read in full once (every value checked); from then on it stays undecoded.
    sb.ok(&["status"]);
    for args in [
        &[
            "run",
            "--no-pty",
            "--no-checkpoint",
            "--",
            "sh",
            "-c",
            "echo x > f.txt",
        ][..],
        &["run", "--no-pty", "--", "sh", "-c", "echo y > g.txt"],
    ] {
        sb.ok(args);
        let s = sb.session();
        let last = s["runs"].as_array().unwrap().last().unwrap().clone();
        let files = last["files_changed"].as_array().unwrap();
        assert_eq!(files.len(), 1, "{last:#}");
        assert_eq!(files[0]["shared"], true, "{last:#}");
        assert!(
            sb.read(".pas-agent/session.json").contains("[1E2]"),
            "the old run was decoded and written again after {args:?}"
        );
    }
}
