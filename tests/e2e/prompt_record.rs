//! The prompt record (`src/session/prompt_record.rs`): the prompt reads a small record kept
//! beside the summary, only while it was made from `session.json` as the file is now.

use crate::common::*;

/// The segment and the notice (the first two lines of the hook protocol).
fn shown(sb: &Sandbox) -> (String, String) {
    let out = sb.ok(&["prompt", "--hook", "1", "--notice"]);
    let mut lines = out.lines();
    (
        lines.next().unwrap_or_default().to_string(),
        lines.next().unwrap_or_default().to_string(),
    )
}

#[test]
fn the_prompt_reads_its_record_only_for_the_file_it_was_made_from() {
    let (sb, runtime) = session_with_runtime();
    sb.ok(&[
        "update",
        "--completed",
        "plan",
        "--remaining",
        "code",
        "--next",
        "first step",
    ]);
    sb.ok(&["checkpoint", "one"]);
    sb.git(&["add", "-A"]);
    sb.git(&["commit", "-q", "-m", "one"]);
    let first = shown(&sb);
    assert_eq!(
        first.0, "Build the thing 1/2 · stale",
        "HEAD moved: {first:?}"
    );
    assert!(first.1.contains("next: first step"), "{first:?}");

    // The same answer without the record (it is rebuilt) and with a damaged one.
    let path = one_cache_file(&runtime, ".prompt.json");
    std::fs::remove_file(&path).unwrap();
    assert_eq!(shown(&sb), first);
    assert!(path.is_file(), "the prompt stored the record again");
    std::fs::write(&path, "{not json").unwrap();
    assert_eq!(shown(&sb), first);
    let stored: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap())
        .expect("the damaged record was replaced");

    // The record is what the prompt reads while it matches the file.
    let mut planted = stored.clone();
    planted["view"]["description"] = "planted".into();
    std::fs::write(&path, planted.to_string()).unwrap();
    assert!(
        shown(&sb).0.starts_with("planted"),
        "the record was not read"
    );

    // A save writes a new record; a file put back by git is read again, whatever the record.
    sb.ok(&["update", "--next", "second step"]);
    assert!(shown(&sb).1.contains("next: second step"));
    std::fs::write(&path, planted.to_string()).unwrap();
    sb.git(&["checkout", "--", ".pas-agent/session.json"]);
    let back = shown(&sb);
    assert_eq!(back.0, first.0);
    assert!(back.1.contains("next: first step"), "{back:?}");
    // A hand edit that keeps the size is still a new file.
    let text = sb.read(".pas-agent/session.json");
    sb.write(
        ".pas-agent/session.json",
        text.replace("first step", "first stop"),
    );
    assert!(shown(&sb).1.contains("next: first stop"));
}

#[test]
fn a_running_agent_and_an_unreadable_session_show_as_before() {
    let (sb, _runtime) = session_with_runtime();
    // A live run: the launcher's process still runs while the agent sleeps.
    sb.stand_in("slowagent", "sleep 30");
    let mut child = sb
        .cmd()
        .args([
            "run",
            "--no-pty",
            "--no-checkpoint",
            "--no-export",
            "--",
            "slowagent",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut seen = String::new();
    while std::time::Instant::now() < deadline {
        seen = shown(&sb).0;
        if seen.contains("slowagent running") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(seen.contains("slowagent running"), "{seen:?}");
    let _ = child.kill();
    let _ = child.wait();
    // The launcher is gone: the record still says `running`, the prompt does not.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::time::Instant::now() < deadline && shown(&sb).0.contains("running") {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(shown(&sb).0, "Build the thing");

    sb.write(".pas-agent/session.json", "{ damaged");
    let (segment, notice) = shown(&sb);
    assert_eq!(segment, "session damaged");
    assert!(
        notice.contains("damaged") && notice.contains("pas-agent recover"),
        "{notice}"
    );
}
