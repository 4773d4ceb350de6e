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

use super::{Collector, Transcript, json_lines, read_file, text_of, time_of, together};

/// The rollout of session `id`: `hint` when it is a file, else every
/// `sessions/**/rollout-*-<id>.jsonl` (a session resumed another day may be written to a new
/// file; the files are read oldest first).
pub fn read(id: &str, _cwd: &Path, since: DateTime<Utc>, hint: Option<&Path>) -> Transcript {
    let paths = find(id, hint);
    let Some(newest) = paths.last() else {
        return Transcript::missing(format!(
            "no Codex rollout of session {id} was found under {}",
            crate::launch::session_id::codex_dir()
                .map(|d| d.join("sessions").display().to_string())
                .unwrap_or_else(|| "~/.codex/sessions (no HOME)".into())
        ));
    };
    let limit = crate::limits::TRANSCRIPT;
    let mut text = String::new();
    for path in &paths {
        match read_file(path) {
            Ok(t) => {
                text.push_str(&t);
                text.push('\n');
            }
            Err(why) => return Transcript::missing(why),
        }
        // Together, the rollouts are held to one transcript's limit.
        if text.len() as u64 > limit.bytes {
            return Transcript::missing(format!(
                "the {} rollouts of session {id} are not read: {}",
                paths.len(),
                together(limit, text.len() as u64)
            ));
        }
    }
    parse(&text, since).finish(newest)
}

/// At most this many rollouts of one session are read.
const MAX_FILES: usize = 16;

/// The subdirectories of `dir`, by name.
fn dirs(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

fn find(id: &str, hint: Option<&Path>) -> Vec<PathBuf> {
    if let Some(h) = hint.filter(|h| h.is_file()) {
        return vec![h.to_path_buf()];
    }
    let Some(home) = crate::launch::session_id::codex_dir() else {
        return Vec::new();
    };
    let suffix = format!("-{id}.jsonl");
    let mut found = Vec::new();
    for year in dirs(&home.join("sessions")) {
        for month in dirs(&year) {
            for day in dirs(&month) {
                let mut here: Vec<PathBuf> = std::fs::read_dir(&day)
                    .into_iter()
                    .flatten()
                    .flatten()
                    .filter(|e| {
                        let name = e.file_name().to_string_lossy().into_owned();
                        name.starts_with("rollout-") && name.ends_with(&suffix)
                    })
                    .map(|e| e.path())
                    .collect();
                here.sort();
                found.extend(here);
            }
        }
    }
    let skip = found.len().saturating_sub(MAX_FILES);
    found.split_off(skip)
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
