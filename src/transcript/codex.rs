//! Codex's rollout: `$CODEX_HOME` (default `~/.codex`) `/sessions/YYYY/MM/DD/
//! rollout-<local time>-<session id>.jsonl`, one `{"timestamp","type","payload"}` per line,
//! the first a `session_meta` whose `payload.id` is the session id ([CX-txcript],
//! launcher-store.md §A7; checked with codex-cli 0.171.0 `exec` and `exec resume`, against the
//! mock model: a resumed session appends to the same file).
//!
//! Lines read (after `since`, by their `timestamp`):
//! - `event_msg` with `payload.type` `item_completed` and `payload.item.type` `UserMessage`
//!   (0.171.0) or `user_message` with `payload.message` (earlier versions): a prompt. The
//!   `response_item` user messages are not read: they also carry the AGENTS.md text Codex
//!   injects;
//! - `event_msg` `item_completed` with an `AgentMessage` item, `agent_message`
//!   (`payload.message`), or `task_complete` (`payload.last_agent_message`): an answer;
//! - `event_msg` `token_count`: `payload.info.last_token_usage` (`input_tokens`,
//!   `output_tokens`, `cached_input_tokens`, `cache_write_input_tokens`) of one model call;
//! - `turn_context`: `payload.model`.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use super::{Collector, Transcript, json_lines, read_file, text_of, time_of};

/// The rollout of session `id`: `hint` when it is a file, else the newest
/// `sessions/**/rollout-*-<id>.jsonl`.
pub fn read(id: &str, _cwd: &Path, since: DateTime<Utc>, hint: Option<&Path>) -> Transcript {
    let Some(path) = find(id, hint) else {
        return Transcript::missing(format!(
            "no Codex rollout of session {id} was found under {}",
            crate::launch::session_id::codex_dir()
                .map(|d| d.join("sessions").display().to_string())
                .unwrap_or_else(|| "~/.codex/sessions (no HOME)".into())
        ));
    };
    match read_file(&path) {
        Ok(text) => parse(&text, since).finish(&path),
        Err(why) => Transcript::missing(why),
    }
}

fn dirs(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect();
    // Newest day first: names are zero-padded numbers.
    out.sort();
    out.reverse();
    out
}

fn find(id: &str, hint: Option<&Path>) -> Option<PathBuf> {
    if let Some(h) = hint.filter(|h| h.is_file()) {
        return Some(h.to_path_buf());
    }
    let sessions = crate::launch::session_id::codex_dir()?.join("sessions");
    let suffix = format!("-{id}.jsonl");
    for year in dirs(&sessions) {
        for month in dirs(&year) {
            for day in dirs(&month) {
                let found = std::fs::read_dir(&day).ok()?.flatten().find(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    name.starts_with("rollout-") && name.ends_with(&suffix)
                });
                if let Some(e) = found {
                    return Some(e.path());
                }
            }
        }
    }
    None
}

/// The words of the lines after `since`.
pub(crate) fn parse(text: &str, since: DateTime<Utc>) -> Collector {
    let mut c = Collector::default();
    json_lines(text, &mut c, |v, c| {
        if time_of(&v["timestamp"]).is_none_or(|t| t < since) {
            return;
        }
        let p = &v["payload"];
        match v["type"].as_str().unwrap_or_default() {
            "turn_context" => {
                if let Some(m) = p["model"].as_str() {
                    c.model(m);
                }
            }
            "event_msg" => match p["type"].as_str().unwrap_or_default() {
                "item_completed" => {
                    let item = &p["item"];
                    match item["type"].as_str().unwrap_or_default() {
                        "UserMessage" => c.prompt(&text_of(&item["content"], &[])),
                        "AgentMessage" => c.answer(&text_of(&item["content"], &[])),
                        _ => {}
                    }
                }
                "user_message" => c.prompt(p["message"].as_str().unwrap_or_default()),
                "agent_message" => c.answer(p["message"].as_str().unwrap_or_default()),
                "task_complete" => {
                    if let Some(m) = p["last_agent_message"].as_str() {
                        c.answer(m);
                    }
                }
                "token_count" => {
                    let u = &p["info"]["last_token_usage"];
                    if u.is_object() {
                        c.tokens(
                            u["input_tokens"].as_u64(),
                            u["output_tokens"].as_u64(),
                            u["cached_input_tokens"].as_u64(),
                            u["cache_write_input_tokens"].as_u64(),
                        );
                    }
                }
                _ => {}
            },
            _ => {}
        }
    });
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn both_event_layouts_are_read_after_since() {
        let l = |t: &str, kind: &str, payload: Value| {
            serde_json::json!({"timestamp": t, "type": kind, "payload": payload}).to_string()
        };
        let text = [
            l("2026-01-01T00:00:00Z", "session_meta", serde_json::json!({"id": "x"})),
            l("2026-01-01T00:00:01Z", "event_msg", serde_json::json!({"type": "user_message", "message": "old"})),
            l("2026-01-02T00:00:00Z", "turn_context", serde_json::json!({"model": "gpt-x"})),
            l("2026-01-02T00:00:01Z", "event_msg", serde_json::json!({"type": "item_completed", "item": {"type": "UserMessage", "content": [{"type": "text", "text": "new"}]}})),
            l("2026-01-02T00:00:02Z", "event_msg", serde_json::json!({"type": "agent_message", "message": "answer"})),
            l("2026-01-02T00:00:03Z", "event_msg", serde_json::json!({"type": "token_count", "info": {"last_token_usage": {"input_tokens": 7, "output_tokens": 2}}})),
        ]
        .join("\n");
        let since = time_of(&"2026-01-01T12:00:00Z".into()).unwrap();
        let t = parse(&text, since).finish(Path::new("/r.jsonl"));
        assert_eq!(t.prompts, ["new"]);
        assert_eq!(t.last_answer.as_deref(), Some("answer"));
        assert_eq!(t.model.as_deref(), Some("gpt-x"));
        assert_eq!(t.tokens.unwrap().input, Some(7));
        assert!(t.missing.is_none());
    }
}
