//! Gemini CLI's chat file: `$GEMINI_CLI_HOME` (default `~`) `/.gemini/tmp/<project>/chats/
//! session-<start time>-<first 8 characters of the session id>.jsonl` (legacy: one `.json`
//! object with a `messages` array) ([GM-sessions], [GM-src-chatrec]; checked with gemini
//! 0.61.0 `-p` and `--resume`, against the mock model).
//!
//! The JSON-lines file is a log of changes to one conversation record: a header line
//! (`sessionId`, `startTime`, `kind`), message lines (`{"id","timestamp","type":"user"|"gemini"|
//! "info"|"error",…,"content"}`), and `{"$set":{…}}` lines that replace fields, `messages`
//! included (a resumed session rewrites its earlier messages this way). Messages are therefore
//! taken by `id`, the latest version of each, in the order they first appeared:
//! - `type` `user`: a prompt (`content` a string or `[{"text"}…]`), except the
//!   `<session_context>` text Gemini CLI sends first;
//! - `type` `gemini`: an answer (`content`), its `model` and `tokens` (`input`, `output`,
//!   `cached`).
//!
//! A resume can leave a second file with the same `sessionId`: Gemini CLI 0.61.0 starts a new
//! chat file when it starts (named by that minute), then switches to the resumed one and
//! appends the new turns there, so the new file holds only the header and the session context.
//! Every file of the session is therefore read, and their messages joined by `id`.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::{Collector, Transcript, read_file, text_of, time_of, together};

/// The chat file of session `id`: `hint` when it is a file, else the store's
/// `tmp/*/chats/session-*-<id[..8]>.jsonl` (or `.json`) whose `sessionId` is `id`.
pub fn read(id: &str, _cwd: &Path, since: DateTime<Utc>, hint: Option<&Path>) -> Transcript {
    let paths = find(id, hint);
    if paths.is_empty() {
        return Transcript::missing(format!(
            "no Gemini CLI chat of session {id} was found under {}",
            crate::launch::session_id::gemini_dir()
                .map(|d| d.join("tmp").display().to_string())
                .unwrap_or_else(|| "~/.gemini/tmp (no HOME)".into())
        ));
    }
    let limit = crate::limits::TRANSCRIPT;
    let mut texts = Vec::new();
    let mut total = 0u64;
    for path in &paths {
        match read_file(path) {
            Ok(text) => {
                total += text.len() as u64;
                texts.push(text);
            }
            Err(why) => return Transcript::missing(why),
        }
        // Together, the files are held to one transcript's limit.
        if total > limit.bytes {
            return Transcript::missing(format!(
                "the {} chat files of session {id} are not read: {}",
                paths.len(),
                together(limit, total)
            ));
        }
    }
    // The words are in the file written last.
    let source = paths
        .iter()
        .max_by_key(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok())
        .unwrap_or(&paths[0]);
    parse_all(&texts, since).finish(source)
}

/// At most this many chat files of one session are read.
const MAX_FILES: usize = 16;

/// The chat files of session `id`, oldest name first: `hint` when it is a file, else the
/// store's.
fn find(id: &str, hint: Option<&Path>) -> Vec<PathBuf> {
    if let Some(h) = hint.filter(|h| h.is_file()) {
        return vec![h.to_path_buf()];
    }
    store_files(id).unwrap_or_default()
}

fn store_files(id: &str) -> Option<Vec<PathBuf>> {
    let short: String = id.chars().take(8).collect();
    if short.is_empty() || !short.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        return None;
    }
    let tmp = crate::launch::session_id::gemini_dir()?.join("tmp");
    let mut found: Vec<PathBuf> = Vec::new();
    for project in std::fs::read_dir(tmp).ok()?.flatten() {
        for chat in std::fs::read_dir(project.path().join("chats"))
            .into_iter()
            .flatten()
            .flatten()
        {
            let name = chat.file_name().to_string_lossy().into_owned();
            if name.starts_with("session-")
                && (name.ends_with(&format!("-{short}.jsonl"))
                    || name.ends_with(&format!("-{short}.json")))
                && header_id(&chat.path()).as_deref() == Some(id)
            {
                found.push(chat.path());
            }
        }
    }
    found.sort_by_key(|p| p.file_name().map(|n| n.to_os_string()));
    let skip = found.len().saturating_sub(MAX_FILES);
    Some(found.split_off(skip))
}

/// The `sessionId` of a chat file's first line (or of a legacy file's object).
fn header_id(path: &Path) -> Option<String> {
    use std::io::{BufRead, BufReader, Read};
    let file = std::fs::File::open(path).ok()?;
    let mut line = Vec::new();
    BufReader::new(file.take(1024 * 1024))
        .read_until(b'\n', &mut line)
        .ok()?;
    let v: Value = serde_json::from_slice(&line).ok()?;
    v["sessionId"].as_str().map(str::to_string)
}

/// The words of the messages after `since`, in one chat file.
#[cfg(test)]
pub(crate) fn parse(text: &str, since: DateTime<Utc>) -> Collector {
    parse_all(&[text.to_string()], since)
}

/// The words of the messages after `since`, in the chat files of one session (oldest first).
pub(crate) fn parse_all(texts: &[String], since: DateTime<Utc>) -> Collector {
    let mut c = Collector::default();
    // Messages by id, latest version, in first-seen order.
    let mut order: Vec<String> = Vec::new();
    // A resumed session rewrites its earlier messages with the resume's time: a message's
    // time is the earliest it was written with.
    let mut messages: std::collections::HashMap<String, (Option<DateTime<Utc>>, Value)> =
        Default::default();
    let mut keep = |m: &Value| {
        let Some(id) = m["id"].as_str() else { return };
        let t = time_of(&m["timestamp"]);
        match messages.get_mut(id) {
            Some((first, value)) => {
                *first = match (*first, t) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                *value = m.clone();
            }
            None => {
                order.push(id.to_string());
                messages.insert(id.to_string(), (t, m.clone()));
            }
        }
    };
    for text in texts {
        let whole = serde_json::from_str::<Value>(text)
            .ok()
            .filter(|v| v["messages"].is_array());
        match whole {
            // A legacy `.json` chat: one object.
            Some(v) => v["messages"]
                .as_array()
                .into_iter()
                .flatten()
                .for_each(&mut keep),
            None => {
                for line in text.lines().filter(|l| !l.trim().is_empty()) {
                    let Ok(v) = serde_json::from_str::<Value>(line) else {
                        c.damaged += 1;
                        continue;
                    };
                    if let Some(set) = v.get("$set") {
                        set["messages"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .for_each(&mut keep);
                    } else if v["id"].is_string() && v["type"].is_string() {
                        keep(&v);
                    }
                }
            }
        }
    }
    for id in order {
        let (first, m) = &messages[&id];
        if first.is_none_or(|t| t < since) {
            continue;
        }
        match m["type"].as_str().unwrap_or_default() {
            "user" => {
                let text = text_of(&m["content"], &[]);
                if !text.trim_start().starts_with("<session_context>") {
                    c.prompt(&text);
                }
            }
            "gemini" => {
                if let Some(model) = m["model"].as_str() {
                    c.model(model);
                }
                let t = &m["tokens"];
                if t.is_object() {
                    c.tokens(
                        t["input"].as_u64(),
                        t["output"].as_u64(),
                        t["cached"].as_u64(),
                        None,
                    );
                }
                c.answer(&text_of(&m["content"], &[]));
            }
            _ => {}
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_lines_replace_messages_and_only_new_ones_count() {
        let text = [
            r#"{"sessionId":"s","startTime":"2026-01-02T00:00:00Z","kind":"main"}"#,
            r#"{"$set":{"messages":[{"id":"c","timestamp":"2026-01-02T00:00:00Z","type":"user","content":[{"text":"<session_context>x"}]},{"id":"a","timestamp":"2026-01-01T00:00:00Z","type":"user","content":[{"text":"old"}]}]}}"#,
            r#"{"id":"b","timestamp":"2026-01-02T00:00:01Z","type":"user","content":[{"text":"new"}]}"#,
            r#"{"id":"g","timestamp":"2026-01-02T00:00:02Z","type":"gemini","content":"reply","model":"gemini-x","tokens":{"input":3,"output":1,"cached":0}}"#,
            r#"{"$set":{"lastUpdated":"2026-01-02T00:00:02Z"}}"#,
            // A resume rewrites the old message with its own time: still old.
            r#"{"$set":{"messages":[{"id":"a","timestamp":"2026-01-02T00:00:03Z","type":"user","content":[{"text":"old"}]}]}}"#,
        ]
        .join("\n");
        let since = time_of(&"2026-01-01T12:00:00Z".into()).unwrap();
        let t = parse(&text, since).finish(Path::new("/c.jsonl"));
        assert_eq!(t.prompts, ["new"]);
        assert_eq!(t.last_answer.as_deref(), Some("reply"));
        assert_eq!(t.model.as_deref(), Some("gemini-x"));
        assert!(t.missing.is_none());
    }

    #[test]
    fn a_resume_stub_file_does_not_hide_the_new_turns() {
        let old = [
            r#"{"sessionId":"s","startTime":"2026-01-01T00:00:00Z","kind":"main"}"#,
            r#"{"id":"a","timestamp":"2026-01-01T00:00:01Z","type":"user","content":[{"text":"old"}]}"#,
            r#"{"id":"b","timestamp":"2026-01-02T00:00:05Z","type":"user","content":[{"text":"new"}]}"#,
            r#"{"id":"g","timestamp":"2026-01-02T00:00:06Z","type":"gemini","content":"reply"}"#,
        ]
        .join("\n");
        let stub = [
            r#"{"sessionId":"s","startTime":"2026-01-02T00:00:00Z","kind":"main"}"#,
            r#"{"$set":{"messages":[{"id":"c","timestamp":"2026-01-02T00:00:00Z","type":"user","content":[{"text":"<session_context>x"}]}]}}"#,
        ]
        .join("\n");
        let since = time_of(&"2026-01-01T12:00:00Z".into()).unwrap();
        let t = parse_all(&[old, stub], since).finish(Path::new("/c.jsonl"));
        assert_eq!(t.prompts, ["new"]);
        assert_eq!(t.last_answer.as_deref(), Some("reply"));
    }
}
