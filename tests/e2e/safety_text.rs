//! Hostile text : what a cloned repository's `session.json` or
//! context files hold, and what a user types, never reaches a terminal raw, never breaks the
//! block, never becomes an agent's flag or import, and never costs a byte of the user's files.

use serde_json::{Value, json};

use crate::common::{Sandbox, last_run, stderr, stdout};
use crate::mock_model::{Mock, codex_args, require_agent};

/// Where `needle` first occurs in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Every kind of character that must not reach a terminal raw, plus Markdown and import tricks.
const HOSTILE: &str = "\u{1b}[2J\u{1b}[8mzz\u{7}\u{9b}31m\u{202e}evil\u{2066}\u{2028}\u{2029}\u{7f}\u{85}\u{0}\r\n~~~~~~~\n@notes/x.md\n---\n<!-- pas-agent:end -->";

/// The characters that may never be printed raw: C0 controls except newline and tab, DEL, C1
/// controls, bidi embeddings, overrides, isolates and marks, and the Unicode line separators.
///
/// This restates the list in `pas_agent::term::is_unsafe` on purpose: it is the test's own oracle, so a
/// character dropped from the code's list is caught here rather than trusted. Keep the two
/// apart.
fn forbidden(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(
            c,
            '\u{202A}'..='\u{202E}'
                | '\u{2066}'..='\u{2069}'
                | '\u{200E}'
                | '\u{200F}'
                | '\u{061C}'
                | '\u{2028}'
                | '\u{2029}'
        )
}

/// Asserts that neither stdout nor stderr of a command holds a forbidden character.
fn assert_clean(what: &str, out: &std::process::Output) {
    for (stream, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        let text = String::from_utf8_lossy(bytes);
        if let Some(c) = text.chars().find(|&c| forbidden(c)) {
            panic!("{what}: {stream} holds U+{:04X} raw:\n{text:?}", c as u32);
        }
    }
}

/// Replaces every string in `v` (recursively, keys kept) except ids and times with `hostile`.
fn poison(v: &mut Value, hostile: &str) {
    match v {
        Value::String(s) => *s = hostile.to_string(),
        Value::Array(a) => a.iter_mut().for_each(|x| poison(x, hostile)),
        Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                let keep = matches!(
                    k.as_str(),
                    "id" | "created_at"
                        | "updated_at"
                        | "timestamp"
                        | "started_at"
                        | "ended_at"
                        | "state"
                        | "checkpoint_before"
                        | "checkpoint_after"
                        | "status"
                );
                if !keep {
                    poison(x, hostile);
                }
            }
        }
        _ => {}
    }
}

/// A session whose every string field (task, lists, git, checkpoints, files, runs, commits,
/// unknown fields) holds `hostile`.
fn hostile_session(hostile: &str) -> Sandbox {
    let sb = Sandbox::with_session();
    sb.ok(&[
        "update",
        "--objective",
        "o",
        "--completed",
        "c",
        "--remaining",
        "r",
        "--next",
        "n",
        "--blocker",
        "b",
        "--decision",
        "d",
        "--constraint",
        "k",
        "--discovery",
        "x",
    ]);
    sb.write("changed.txt", "x\n");
    sb.ok(&["checkpoint", "first"]);
    let mut s = sb.session();
    let cp_id = s["checkpoints"][0]["id"].clone();
    s["checkpoints"][0]["files_changed"] = json!([
        { "path": "p", "status": "Modified" },
        { "path": "p", "status": { "Renamed": { "from": "f" } } }
    ]);
    s["runs"] = json!([{
        "id": "3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b",
        "agent": "a", "argv": ["a", "b"], "cwd": "c", "state": "finished",
        "started_at": "2026-01-01T00:00:00Z", "ended_at": "2026-01-01T00:00:05Z",
        "duration_ms": 5000, "exit_code": 0, "signal": null,
        "launcher_pid": null, "launcher_started": "l", "nonce": "n",
        "head_before": "h", "head_after": "h",
        "commits": [{ "id": "c", "summary": "s" }],
        "files_changed": [{ "path": "p", "status": "Added" }],
        "agent_session_id": "i", "checkpoint_before": cp_id, "checkpoint_after": null,
        "capture": "c", "x_unknown": "u"
    }]);
    s["x_unknown"] = json!("u");
    s["task"]["x_unknown"] = json!("u");
    poison(&mut s, hostile);
    // Unknown fields' names are printed by `--json` too.
    s.as_object_mut()
        .unwrap()
        .insert(hostile.to_string(), json!(hostile));
    sb.write(
        ".pas-agent/session.json",
        serde_json::to_string_pretty(&s).unwrap(),
    );
    sb
}

/// Where the block's marker lines are: (start lines, end lines), each a whole line.
fn marker_lines(text: &str) -> (usize, usize) {
    let starts = text
        .lines()
        .filter(|l| l.starts_with("<!-- pas-agent:start"))
        .count();
    let ends = text
        .lines()
        .filter(|l| l.starts_with("<!-- pas-agent:end"))
        .count();
    (starts, ends)
}

#[test]
fn stored_text_never_reaches_the_terminal_raw_in_any_command() {
    let sb = hostile_session(HOSTILE);
    let commands: &[&[&str]] = &[
        &["status"],
        &["status", "--json"],
        &["list"],
        &["list", "--json"],
        &["show", "1"],
        &["show", "1", "--json"],
        &["runs"],
        &["runs", "--json"],
        &["runs", "--all"],
        &["runs", "--all", "--json"],
        &["prompt"],
        &["prompt", "--hook", "4242", "--notice"],
        &["export", "--to", "claude", "-o", "-"],
        &["export", "--to", "claude"],
        &["export", "--to", "codex"],
        &["export", "--to", "gemini"],
        &["export", "--to", "agy"],
        &["checkpoint", "again"],
        &["update", "--next", "m"],
        &["remove", "completed", "1"],
    ];
    for args in commands {
        let out = sb.run(args);
        assert_clean(&args.join(" "), &out);
    }
    // `--json` escapes what it may not print raw, and decodes to the stored text.
    let out = sb.ok(&["status", "--json"]);
    assert!(out.contains("\\u009b") && out.contains("\\u202e"), "{out}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["session"]["task"]["description"], HOSTILE, "{out}");
    let v: Value = serde_json::from_str(&sb.ok(&["list", "--json"])).unwrap();
    assert_eq!(v["checkpoints"][0]["git"]["commit"], HOSTILE);
    // The context files each hold exactly one block, and stay exportable.
    for file in ["CLAUDE.md", "AGENTS.md", "GEMINI.md"] {
        let text = sb.read(file);
        assert_eq!(marker_lines(&text), (1, 1), "{file}:\n{text}");
        assert!(!text.chars().any(|c| forbidden(c) && c != '\r'), "{text:?}");
    }
    sb.ok(&["export", "--to", "claude"]);
}

#[test]
fn a_stored_escape_sequence_commit_id_is_not_printed_raw_by_list_and_show() {
    let sb = Sandbox::with_session();
    sb.ok(&["checkpoint", "first"]);
    let mut s = sb.session();
    s["checkpoints"][0]["git"]["commit"] = json!("\u{1b}[2J\u{1b}[8mzz");
    sb.write(".pas-agent/session.json", s.to_string());
    for args in [&["list"][..], &["show", "1"], &["status"]] {
        let out = sb.run(args);
        assert!(out.status.success(), "{}", stderr(&out));
        assert_clean(&args.join(" "), &out);
    }
    assert!(sb.ok(&["list"]).contains("?[2J?[8m"));
}

#[test]
fn a_stored_commit_id_cannot_open_a_fence_that_swallows_the_end_marker() {
    let sb = Sandbox::with_session();
    sb.ok(&["checkpoint", "first"]);
    let mut s = sb.session();
    // A checkpoint's commit that differs from HEAD is shown in the block ("HEAD … → …").
    s["checkpoints"][0]["git"]["commit"] = json!("\n~~~~~~~");
    s["checkpoints"][0]["message"] = json!("\n```\n");
    sb.write(".pas-agent/session.json", s.to_string());
    sb.ok(&["export", "--to", "claude"]);
    sb.ok(&["update", "--next", "again"]);
    sb.ok(&["export", "--to", "claude"]);
    let text = sb.read("CLAUDE.md");
    assert_eq!(marker_lines(&text), (1, 1), "{text}");
    assert!(
        !text
            .lines()
            .any(|l| l.starts_with("~~~") || l.starts_with("```")),
        "{text}"
    );
    assert!(text.contains("again"), "{text}");
}

#[test]
fn arguments_echoed_in_errors_are_cleaned_clap_included() {
    let sb = Sandbox::with_session();
    let out = sb.run(&["export", "--to", "A\u{1b}]52;c;cHduZWQ=\u{7}B"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_clean("export --to", &out);
    assert!(
        stderr(&out).contains("invalid value 'A"),
        "{}",
        stderr(&out)
    );

    let out = sb.run(&["run", "--no-pty", "--", "nope\u{1b}[2J\u{7}"]);
    assert_eq!(out.status.code(), Some(127), "{}", stderr(&out));
    assert_clean("run", &out);
    assert!(stderr(&out).contains("nope?[2J?"), "{}", stderr(&out));

    // clap's plain rendering drops an escape sequence from the value it quotes, which made
    // `cl<ESC>[2Jaude` read as "invalid value 'claude' … a similar value exists: 'claude'":
    // the value is quoted as typed, its unsafe characters shown as `?`.
    let out = sb.run(&["export", "--to", "cl\u{1b}[2Jaude"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_clean("export --to cl…aude", &out);
    assert!(
        stderr(&out).contains("invalid value 'cl?[2Jaude'"),
        "{}",
        stderr(&out)
    );

    // clap's own errors: an unknown flag, a bad value, a missing directory for -C.
    for (args, code) in [
        (vec!["--bo\u{1b}[2Jgus"], 2),
        (vec!["status", "--x\u{9b}31m"], 2),
        (vec!["remove", "completed", "o\u{1b}[8mne"], 2),
        (vec!["-C", "no\u{1b}[2Jdir", "status"], 2),
        (vec!["show", "\u{202e}12"], 1),
    ] {
        let out = sb.run(&args);
        assert_clean(&format!("{args:?}"), &out);
        if code == 2 {
            assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        } else {
            assert!(!out.status.success(), "{args:?}");
        }
    }
    // An io error that quotes a path.
    let out = sb.run(&["export", "--to", "claude", "-o", "README.md/\u{1b}[2Jx.md"]);
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    assert_clean("export -o", &out);
    // Help still prints, on stdout, with exit 0.
    let out = sb.run(&["--help"]);
    assert!(out.status.success());
    assert!(stdout(&out).contains("Usage:"));
}

/// Runs pas-agent with `args` on a pseudo-terminal (util-linux `script`), where clap would
/// keep escape sequences that it strips on a pipe; returns what the terminal received.
fn on_a_terminal(sb: &Sandbox, args: &[&str]) -> String {
    let quote = |a: &str| format!("'{}'", a.replace('\'', r"'\''"));
    let line = std::iter::once(quote(&crate::common::bin().to_string_lossy()))
        .chain(args.iter().map(|a| quote(a)))
        .collect::<Vec<_>>()
        .join(" ");
    let out = std::process::Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .current_dir(&sb.work)
        .env("HOME", &sb.home)
        .env("XDG_STATE_HOME", sb.home.join(".local/state"))
        .env("TERM", "xterm-256color")
        .env_remove("NO_COLOR")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run script(1)");
    // The terminal turns each newline into CR LF.
    String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n")
}

#[test]
fn errors_shown_on_a_terminal_hold_no_control_character() {
    let sb = Sandbox::with_session();
    for args in [
        &["export", "--to", "A\u{1b}]52;c;cHduZWQ=\u{7}B"][..],
        &["run", "--no-pty", "--", "nope\u{1b}[2J\u{7}"],
        &["--bo\u{1b}[2Jgus"],
        &["-C", "no\u{1b}[2Jdir", "status"],
    ] {
        let text = on_a_terminal(&sb, args);
        assert!(text.contains("error"), "{args:?}: {text:?}");
        if let Some(c) = text.chars().find(|&c| forbidden(c)) {
            panic!("{args:?}: the terminal got U+{:04X}: {text:?}", c as u32);
        }
    }
}

/// Writes a run of `agent` with `id` as its recorded session id.
fn record_session_id(sb: &Sandbox, agent: &str, id: &str) {
    let mut s = sb.session();
    s["runs"] = json!([{
        "id": "3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b",
        "agent": agent, "argv": [agent], "cwd": sb.work.to_string_lossy(), "state": "finished",
        "started_at": "2026-01-01T00:00:00Z", "ended_at": "2026-01-01T00:00:05Z",
        "duration_ms": 5000, "exit_code": 0, "signal": null,
        "head_before": null, "head_after": null, "commits": [], "files_changed": [],
        "agent_session_id": id, "checkpoint_before": null, "checkpoint_after": null,
        "capture": null
    }]);
    sb.write(".pas-agent/session.json", s.to_string());
}

#[test]
fn resume_never_passes_a_recorded_id_that_is_not_the_agents_own_shape() {
    let sb = Sandbox::with_session();
    for (agent, exe, flag) in [
        ("claude-code", "claude", "--dangerously-skip-permissions"),
        (
            "codex",
            "codex",
            "--dangerously-bypass-approvals-and-sandbox",
        ),
        ("gemini-cli", "gemini", "--yolo"),
        ("opencode", "opencode", "--port=1"),
        (
            "claude-code",
            "claude",
            "3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b --yolo",
        ),
        ("codex", "codex", "ses_3a9f0c1e2b4dAbCdEfGhIjKlMn"),
    ] {
        sb.stand_in(exe, "printf '%s|' \"$@\" > args.txt");
        let _ = std::fs::remove_file(sb.path("args.txt"));
        record_session_id(&sb, agent, flag);
        let out = sb.run(&["run", exe, "--resume", "--no-export", "--no-checkpoint"]);
        assert_eq!(
            out.status.code(),
            Some(125),
            "{exe} {flag}: {}",
            stderr(&out)
        );
        assert!(!sb.path("args.txt").exists(), "{exe} started with {flag}");
        assert!(
            stderr(&out).contains("is not a") && stderr(&out).contains("session.json"),
            "{}",
            stderr(&out)
        );
    }
    // Ids of the right shape are passed as before.
    for (agent, exe, id, want) in [
        (
            "claude-code",
            "claude",
            "3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b",
            "--resume|3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b|",
        ),
        (
            "codex",
            "codex",
            "0199a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b",
            "resume|0199a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b|",
        ),
        (
            "opencode",
            "opencode",
            "ses_3a9f0c1e2b4dAbCdEfGhIjKlMn",
            "--session|ses_3a9f0c1e2b4dAbCdEfGhIjKlMn|",
        ),
    ] {
        // After the run, pas-agent asks OpenCode for the session's words (`opencode export
        // <id>`): that call is not the one under test.
        sb.stand_in(
            exe,
            "[ \"$1\" = export ] && exit 1\nprintf '%s|' \"$@\" > args.txt",
        );
        record_session_id(&sb, agent, id);
        let out = sb.run(&["run", exe, "--resume", "--no-export", "--no-checkpoint"]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(
            sb.read("args.txt").starts_with(want),
            "{}",
            sb.read("args.txt")
        );
    }
}

#[test]
fn a_session_id_read_from_an_agents_store_is_checked_before_it_is_recorded() {
    // A stand-in Codex that writes a rollout whose id is `$ID`.
    let mut sb = Sandbox::with_session();
    let codex_home = sb.tmp.path().join("codex-home");
    sb.env.push((
        "CODEX_HOME".into(),
        codex_home.to_string_lossy().into_owned(),
    ));
    sb.stand_in(
        "codex",
        &format!(
            r#"d={home}/sessions/$(date -u +%Y/%m/%d); mkdir -p "$d"; t=$(date -u +%Y-%m-%dT%H:%M:%S.000Z)
printf '{{"timestamp":"%s","type":"session_meta","payload":{{"id":"%s","timestamp":"%s","cwd":"%s"}}}}\n' "$t" "$ID" "$t" "$PWD" > "$d/rollout-$(date -u +%Y-%m-%dT%H-%M-%S)-$$.jsonl""#,
            home = codex_home.display()
        ),
    );
    let run = |id: &str| {
        let out = sb
            .cmd()
            .env("ID", id)
            .args(["run", "codex", "--no-export", "--no-checkpoint"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        last_run(&sb)["agent_session_id"].clone()
    };
    // An id of Codex's shape is learned from the rollout; a flag is not.
    assert_eq!(
        run("0199a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b"),
        "0199a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b"
    );
    assert_eq!(
        run("--dangerously-bypass-approvals-and-sandbox"),
        Value::Null
    );
}

/// What the model saw (`bodies`): the block, and the user's own import (`notes/y.md`, so
/// imports work at all), but not `notes/x.md`, named only in session text.
fn assert_only_the_users_import_reached(bodies: &[String]) {
    assert!(
        bodies.iter().any(|b| b.contains("Build the thing")),
        "the block reached the model"
    );
    assert!(
        bodies
            .iter()
            .any(|b| b.contains("USER-IMPORT-REACHED-5512")),
        "imports work here"
    );
    assert!(
        !bodies
            .iter()
            .any(|b| b.contains("SECRET-NOTES-IMPORTED-7731")),
        "session text imported notes/x.md"
    );
}

#[test]
fn session_text_never_forms_an_import_for_claude_code() {
    require_agent("claude", "@anthropic-ai/claude-code");
    let mut sb = Sandbox::with_session();
    let mock = Mock::start();
    sb.write("notes/x.md", "SECRET-NOTES-IMPORTED-7731\n");
    sb.write("notes/y.md", "USER-IMPORT-REACHED-5512\n");
    // The user's own import outside the block works, so the mock sees imports at all.
    sb.write("CLAUDE.md", "# Rules\n\nSee @notes/y.md\n");
    sb.ok(&[
        "update",
        "--discovery",
        "see @notes/x.md",
        "--decision",
        "@./notes/x.md",
        "--constraint",
        "tab\t@notes/x.md",
    ]);
    sb.env.extend(mock.claude_env("sk-ant-test"));
    sb.ok(&["run", "claude", "--", "-p", "hello"]);
    let bodies: Vec<String> = mock
        .model_requests("/v1/messages")
        .into_iter()
        .map(|r| r.body)
        .collect();
    assert_only_the_users_import_reached(&bodies);
}

#[test]
fn session_text_never_forms_an_import_for_gemini_cli() {
    require_agent("gemini", "@google/gemini-cli");
    let mut sb = Sandbox::with_session();
    let mock = Mock::start();
    mock.point_gemini_at_me(&mut sb);
    sb.write("notes/x.md", "SECRET-NOTES-IMPORTED-7731\n");
    sb.write("notes/y.md", "USER-IMPORT-REACHED-5512\n");
    sb.write("GEMINI.md", "# Rules\n\nSee @notes/y.md\n");
    sb.ok(&["update", "--discovery", "see @notes/x.md"]);
    sb.write("notes/z`q.md", "x");
    sb.ok(&[
        "run",
        "gemini",
        "--",
        "-m",
        "gemini-2.5-flash",
        "-p",
        "hello",
    ]);
    let bodies: Vec<String> = mock
        .model_requests("/v1beta/models/")
        .into_iter()
        .map(|r| r.body)
        .collect();
    assert_only_the_users_import_reached(&bodies);
}

#[test]
fn an_end_marker_with_text_after_it_is_refused_and_nothing_is_lost() {
    let sb = Sandbox::with_session();
    sb.ok(&["export", "--to", "claude"]);
    let text = sb.read("CLAUDE.md").replace(
        "<!-- pas-agent:end -->",
        "<!-- pas-agent:end -->TRAILING USER TEXT",
    );
    sb.write("CLAUDE.md", &text);
    let err = sb.fails(&["export", "--to", "claude"], 6);
    assert!(
        err.contains("not exactly") && err.contains("CLAUDE.md"),
        "{err}"
    );
    assert_eq!(sb.read("CLAUDE.md"), text);
    // The same for a start marker line with text after it, and in `run`'s export.
    let sb = Sandbox::with_session();
    sb.ok(&["export", "--to", "codex"]);
    let text = sb.read("AGENTS.md").replacen("-->\n", "--> KEEP THIS\n", 1);
    sb.write("AGENTS.md", &text);
    sb.fails(&["export", "--to", "codex"], 6);
    sb.stand_in("codex", "exit 0");
    sb.ok(&["run", "codex"]);
    assert_eq!(sb.read("AGENTS.md"), text);
}

#[test]
fn every_byte_outside_the_block_is_kept() {
    for (file, agent, content) in [
        ("CLAUDE.md", "claude", &b"Notes  "[..]),
        (".goosehints", "goose", b"hints\n\n\n"),
        ("AGENTS.md", "codex", b"\xEF\xBB\xBFrules\r\n\r\n \t\r\n"),
        ("GEMINI.md", "gemini", b"  \n"),
        ("QWEN.md", "qwen", b"x\n\t"),
    ] {
        let sb = Sandbox::with_session();
        sb.write(file, content);
        sb.ok(&["export", "--to", agent]);
        let out = sb.bytes(file);
        assert!(out.starts_with(content), "{file}: {out:?}");
        let at = find(&out, b"<!-- pas-agent:start").unwrap();
        let between = &out[content.len()..at];
        assert!(
            between.iter().all(|b| *b == b'\n' || *b == b'\r'),
            "{file}: only line endings are added before the block: {between:?}"
        );
        // Text added after the block, and a second export: still every byte.
        let mut with_tail = out.clone();
        with_tail.extend_from_slice(b"tail  \n\n\n");
        sb.write(file, &with_tail);
        sb.ok(&["update", "--next", "changed"]);
        sb.ok(&["export", "--to", agent]);
        let again = sb.bytes(file);
        assert!(again.starts_with(&out[..content.len()]), "{file}");
        assert!(
            again.ends_with(b"-->\ntail  \n\n\n") || again.ends_with(b"-->\r\ntail  \n\n\n"),
            "{file}: {:?}",
            String::from_utf8_lossy(&again)
        );
    }
}

#[test]
fn context_files_in_other_encodings_are_refused_by_name() {
    let utf16: Vec<u8> = std::iter::once([0xFF, 0xFE])
        .chain("# Rules\r\n".encode_utf16().map(u16::to_le_bytes))
        .flatten()
        .collect();
    let utf16be: Vec<u8> = std::iter::once([0xFE, 0xFF])
        .chain("# Rules\n".encode_utf16().map(u16::to_be_bytes))
        .flatten()
        .collect();
    let utf32: Vec<u8> = [0xFF, 0xFE, 0, 0]
        .into_iter()
        .chain("R\n".chars().flat_map(|c| (c as u32).to_le_bytes()))
        .collect();
    let no_bom: Vec<u8> = "# Rules\n"
        .encode_utf16()
        .flat_map(u16::to_le_bytes)
        .collect();
    for (content, name) in [
        (utf16, "UTF-16 LE"),
        (utf16be, "UTF-16 BE"),
        (utf32, "UTF-32 LE"),
        (no_bom, "NUL byte"),
        (b"caf\xe9 r\xe8gles\n".to_vec(), "not UTF-8"),
    ] {
        let sb = Sandbox::with_session();
        sb.write("CLAUDE.md", &content);
        let err = sb.fails(&["export", "--to", "claude"], 6);
        assert!(err.contains(name) && err.contains("CLAUDE.md"), "{err}");
        assert_eq!(sb.bytes("CLAUDE.md"), content);
        // `run` starts the agent without the export, and leaves the file alone.
        sb.stand_in("claude", "exit 0");
        sb.ok(&["run", "claude"]);
        assert_eq!(sb.bytes("CLAUDE.md"), content);
    }
}

#[test]
fn a_new_block_goes_where_an_agent_with_a_read_limit_reads_it() {
    // Codex reads the first 32 KiB of AGENTS.md: a 39,200-byte file gets the block on top.
    let sb = Sandbox::with_session();
    let mine = format!(
        "# Rules\n\n{}",
        "rule line of forty bytes, more or less.\n".repeat(980)
    );
    assert_eq!(mine.len(), 9 + 40 * 980);
    sb.write("AGENTS.md", &mine);
    let out = sb.run(&["export", "--to", "codex"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("at the top of AGENTS.md"),
        "{}",
        stdout(&out)
    );
    let text = sb.read("AGENTS.md");
    assert!(text.starts_with("<!-- pas-agent:start"), "{}", &text[..200]);
    assert!(text.ends_with(&mine));
    let end = text.find("<!-- pas-agent:end -->").unwrap();
    assert!(end < 32 * 1024);
    // Codex does not see the rest of the file: said with the numbers.
    let err = stderr(&out);
    assert!(
        err.contains("32768 bytes") && err.contains(&text.len().to_string()),
        "{err}"
    );
    // Updated later, it stays on top.
    sb.ok(&["update", "--next", "again"]);
    sb.ok(&["export", "--to", "codex"]);
    assert!(sb.read("AGENTS.md").starts_with("<!-- pas-agent:start"));
    assert!(sb.read("AGENTS.md").ends_with(&mine));

    // A block that already sits past the limit is not moved, but the export says so.
    let sb = Sandbox::with_session();
    sb.ok(&["export", "--to", "codex"]);
    let block = sb.read("AGENTS.md");
    sb.write("AGENTS.md", format!("{mine}\n{block}"));
    let out = sb.run(&["export", "--to", "codex"]);
    assert!(out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("reads only the first 32768 bytes") && err.contains("does not see all of it"),
        "{err}"
    );
    // Below the limit: appended, no warning.
    let sb = Sandbox::with_session();
    sb.write("AGENTS.md", "# Rules\n");
    let out = sb.run(&["export", "--to", "codex"]);
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
    assert!(
        sb.read("AGENTS.md")
            .starts_with("# Rules\n\n<!-- pas-agent:start")
    );
}

/// The text of the block in `text` (markers included).
fn block_of(text: &str) -> &str {
    let start = text.find("<!-- pas-agent:start").expect("a block");
    let end = text.find("<!-- pas-agent:end -->").expect("an end marker");
    &text[start..end]
}

#[test]
fn a_context_file_that_imports_another_with_a_block_gets_no_second_block() {
    for (agent, file, import) in [
        ("claude", "CLAUDE.md", "@AGENTS.md"),
        ("gemini", "GEMINI.md", "See @./AGENTS.md for the rules."),
    ] {
        let sb = Sandbox::with_session();
        sb.ok(&["export", "--to", "codex"]);
        let mine = format!("# Rules\n\n{import}\n");
        sb.write(file, &mine);
        sb.ok(&["update", "--next", "the current next step"]);
        let out = sb.ok(&["export", "--to", agent]);
        assert!(
            out.contains(&format!("reads AGENTS.md through the `@` import in {file}")),
            "{out}"
        );
        assert_eq!(sb.read(file), mine, "{file} got a second block");
        assert!(sb.read("AGENTS.md").contains("the current next step"));
        // `run` does the same.
        sb.stand_in(agent, "exit 0");
        sb.ok(&["update", "--next", "a later step"]);
        sb.ok(&["run", agent]);
        assert_eq!(sb.read(file), mine);
        assert!(sb.read("AGENTS.md").contains("a later step"));
        // The launcher's own write is not the agent's change.
        let run = last_run(&sb);
        assert!(
            crate::common::changed_paths(&run).is_empty(),
            "{}",
            run["files_changed"]
        );
    }
}

#[test]
fn a_block_made_redundant_by_an_import_is_taken_out() {
    let sb = Sandbox::with_session();
    // CLAUDE.md with a block of its own, which later starts importing AGENTS.md.
    sb.ok(&["export", "--to", "claude"]);
    let claude = format!("@AGENTS.md\n\n{}", sb.read("CLAUDE.md"));
    sb.write("CLAUDE.md", &claude);
    sb.ok(&["update", "--next", "the newest step"]);
    let out = sb.run(&["export", "--to", "codex"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("Took the pas-agent block out of CLAUDE.md"),
        "{}",
        stdout(&out)
    );
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
    // Claude Code reads one block, the one in AGENTS.md, through the import.
    assert_eq!(sb.read("CLAUDE.md"), "@AGENTS.md\n\n");
    assert!(block_of(&sb.read("AGENTS.md")).contains("the newest step"));
    // From Claude Code's side, the block stays where it is.
    sb.ok(&["update", "--next", "one more"]);
    let out = sb.ok(&["export", "--to", "claude"]);
    assert!(
        out.contains("Updated the pas-agent block in AGENTS.md"),
        "{out}"
    );
    assert!(block_of(&sb.read("AGENTS.md")).contains("one more"));
    assert_eq!(sb.read("CLAUDE.md"), "@AGENTS.md\n\n");
}

#[test]
fn real_codex_sees_the_block_of_a_long_agents_md() {
    require_agent("codex", "@openai/codex");
    let mut sb = Sandbox::with_session();
    let mock = Mock::start();
    sb.env.push(("OPENAI_API_KEY".into(), "sk-test".into()));
    // 39,200 bytes of the user's own rules: past Codex's 32 KiB `project_doc_max_bytes`.
    let mine = format!(
        "# Rules\n\n{}",
        "rule line of forty bytes, more or less.\n".repeat(980)
    );
    sb.write("AGENTS.md", &mine);
    let mut args = vec!["run".to_string(), "codex".into(), "--".into()];
    args.extend(codex_args(&mock.base(), "hello"));
    sb.ok(&args);
    let bodies: Vec<String> = mock
        .model_requests("/v1/responses")
        .into_iter()
        .map(|r| r.body)
        .collect();
    assert!(
        bodies.iter().any(|b| b.contains("Build the thing")),
        "Codex did not see the block"
    );
    assert!(sb.read("AGENTS.md").ends_with(&mine));
}
