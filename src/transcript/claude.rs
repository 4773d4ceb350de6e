//! Claude Code's transcript: `$CLAUDE_CONFIG_DIR` (default `~/.claude`)
//! `/projects/<cwd with every non-alphanumeric character as '-'>/<session id>.jsonl`, one JSON
//! event per line ([CC-sessions], [CC-claudedir] in `../shared/reference/agents.md`; checked
//! with claude 2.1.197 in `-p` mode and resumed with `--resume`, against the mock model).
//!
//! Lines read (each has an RFC 3339 `timestamp`; a resumed session appends to the same file):
//! - `{"type":"user","message":{"role":"user","content":"<prompt>"|[{"type":"text","text"}…]}}`
//!   is a prompt, unless it is `isMeta` (Claude's own injected text), `isCompactSummary` (the
//!   summary Claude writes after compacting), `isSidechain` (a subagent's), a tool result (content parts of type `tool_result`), or a slash command's
//!   echo (text starting with `<command-` or `<local-command-`);
//! - `{"type":"assistant","message":{"model","content":[{"type":"text","text"}…],"usage":{
//!   "input_tokens","output_tokens","cache_read_input_tokens","cache_creation_input_tokens"}}}`
//!   is an answer; Claude writes one line per content block of a message, each with the
//!   message's `id` and usage, so usage is counted once per run of lines with one `id`.
//!
//! Other line types (`queue-operation`, `attachment`, `last-prompt`, `mode`, `summary`, …) are
//! skipped.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use super::{Collector, Transcript, json_lines, read_file, text_of, time_of};

/// The transcript of session `id`: `hint` when it is a file, else the store's
/// `projects/*/<id>.jsonl`.
pub fn read(id: &str, _cwd: &Path, since: DateTime<Utc>, hint: Option<&Path>) -> Transcript {
    let Some(path) = find(id, hint) else {
        return Transcript::missing(format!(
            "no Claude Code transcript of session {id} was found under {}",
            crate::launch::session_id::claude_dir()
                .map(|d| d.join("projects").display().to_string())
                .unwrap_or_else(|| "~/.claude/projects (no HOME)".into())
        ));
    };
    match read_file(&path) {
        Ok(text) => parse(&text, since).finish(&path),
        Err(why) => Transcript::missing(why),
    }
}

fn find(id: &str, hint: Option<&Path>) -> Option<PathBuf> {
    if let Some(h) = hint.filter(|h| h.is_file()) {
        return Some(h.to_path_buf());
    }
    // An id is a file name here: nothing that could leave the directory.
    if id.contains(['/', '\\']) || id.starts_with('.') {
        return None;
    }
    let projects = crate::launch::session_id::claude_dir()?.join("projects");
    let name = format!("{id}.jsonl");
    super::first_file(
        std::fs::read_dir(projects)
            .ok()?
            .flatten()
            .map(|e| e.path().join(&name)),
    )
}

/// The words of the lines after `since`.
pub(crate) fn parse(text: &str, since: DateTime<Utc>) -> Collector {
    let mut c = Collector::default();
    let mut last_message: Option<String> = None;
    json_lines(text, &mut c, |v, c| {
        let kind = v["type"].as_str().unwrap_or_default();
        if kind != "user" && kind != "assistant" {
            return;
        }
        if time_of(&v["timestamp"]).is_none_or(|t| t < since) {
            return;
        }
        if v["isSidechain"] == true || v["isMeta"] == true || v["isCompactSummary"] == true {
            return;
        }
        let message = &v["message"];
        // Claude Code writes its own errors ("Not logged in · Please run /login", an API
        // failure) as assistant entries with `isApiErrorMessage` and the model `<synthetic>`.
        if kind != "user" && (v["isApiErrorMessage"] == true || message["model"] == "<synthetic>") {
            c.error(&text_of(&message["content"], &["text"]));
            return;
        }
        if kind == "user" {
            last_message = None;
            let content = &message["content"];
            let is_tool_result = content
                .as_array()
                .is_some_and(|parts| parts.iter().any(|p| p["type"] == "tool_result"));
            if is_tool_result {
                return;
            }
            let text = text_of(content, &["text"]);
            let t = text.trim_start();
            if t.starts_with("<command-") || t.starts_with("<local-command-") {
                return;
            }
            c.prompt(&text);
            return;
        }
        if let Some(model) = message["model"].as_str()
            && model != "<synthetic>"
        {
            c.model(model);
        }
        let id = message["id"].as_str().map(str::to_string);
        if id.is_none() || id != last_message {
            let u = &message["usage"];
            if u.is_object() {
                c.tokens(
                    u["input_tokens"].as_u64(),
                    u["output_tokens"].as_u64(),
                    u["cache_read_input_tokens"].as_u64(),
                    u["cache_creation_input_tokens"].as_u64(),
                );
            }
        }
        last_message = id;
        c.answer(&text_of(&message["content"], &["text"]));
    });
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// Claude Code's own error entries are why the answer is missing, never the answer.
    #[test]
    fn an_api_error_entry_is_not_the_answer() {
        let f = Path::new("/s.jsonl");
        let error = serde_json::json!({"type": "assistant", "timestamp": "2026-01-02T00:00:02Z",
            "isApiErrorMessage": true,
            "message": {"role": "assistant", "id": "e", "model": "<synthetic>",
                        "content": [{"type": "text", "text": "Not logged in · Please run /login"}]}});
        let text = [
            line(
                "user",
                "2026-01-02T00:00:01Z",
                serde_json::json!("Port the job"),
                serde_json::json!({}),
            ),
            error.to_string(),
        ]
        .join("\n");
        let t = parse(&text, "2026-01-01T00:00:00Z".parse().unwrap()).finish(f);
        assert_eq!(t.prompts, ["Port the job"]);
        assert_eq!(t.last_answer, None);
        assert!(
            t.missing
                .as_deref()
                .is_some_and(|m| m.contains("Not logged in")),
            "{t:?}"
        );
        assert_eq!(t.model, None);
    }

    fn line(kind: &str, t: &str, content: Value, extra: Value) -> String {
        let mut v = serde_json::json!({"type": kind, "timestamp": t,
            "message": {"role": kind, "id": "m", "model": "claude-x", "content": content,
                        "usage": {"input_tokens": 10, "output_tokens": 5}}});
        if let (Some(o), Some(e)) = (v.as_object_mut(), extra.as_object()) {
            o.extend(e.clone());
        }
        v.to_string()
    }

    #[test]
    fn only_turns_after_since_and_only_real_prompts() {
        let text = [
            line(
                "user",
                "2026-01-01T00:00:00Z",
                "old prompt".into(),
                Value::Null,
            ),
            line(
                "assistant",
                "2026-01-01T00:00:01Z",
                serde_json::json!([{"type":"text","text":"old answer"}]),
                Value::Null,
            ),
            line(
                "user",
                "2026-01-02T00:00:00Z",
                "new prompt".into(),
                Value::Null,
            ),
            line(
                "user",
                "2026-01-02T00:00:00Z",
                "injected".into(),
                serde_json::json!({"isMeta": true}),
            ),
            line(
                "user",
                "2026-01-02T00:00:00Z",
                serde_json::json!([{"type":"tool_result","content":"x"}]),
                Value::Null,
            ),
            line(
                "assistant",
                "2026-01-02T00:00:01Z",
                serde_json::json!([{"type":"tool_use","name":"Write"}]),
                Value::Null,
            ),
            line(
                "assistant",
                "2026-01-02T00:00:02Z",
                serde_json::json!([{"type":"text","text":"new answer"}]),
                Value::Null,
            ),
            "{not json".to_string(),
        ]
        .join("\n");
        let since = time_of(&"2026-01-01T12:00:00Z".into()).unwrap();
        let t = parse(&text, since).finish(Path::new("/t.jsonl"));
        assert_eq!(t.prompts, ["new prompt"]);
        assert_eq!(t.last_answer.as_deref(), Some("new answer"));
        assert_eq!(t.model.as_deref(), Some("claude-x"));
        // One message id across its lines: its usage counts once.
        assert_eq!(t.tokens.as_ref().unwrap().input, Some(10));
        assert!(t.missing.unwrap().contains("1 entry"));
    }
}
