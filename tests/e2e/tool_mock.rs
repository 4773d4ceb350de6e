//! Tool calls from the mock model ([`crate::mock_model::Mock`]): a prompt holding
//! `[[write <absolute path>]]` or `[[run <command>]]` (in that order, any number) makes the
//! model call the agent's own file-writing or shell tool for each, one per turn, then answer
//! [`crate::mock_model::REPLY`]. Claude Code gets `Write` and `Bash` calls, Codex `apply_patch`
//! and `exec_command`, Gemini CLI `write_file` and `run_shell_command`, each in the shape of
//! the public API it speaks. The steps are read from the latest typed prompt only: a copy of
//! an earlier prompt in pas-agent's block is escaped (`\[\[write …`) and never matches.

#![allow(dead_code)]

use serde_json::{Value, json};

use crate::mock_model::{Mock, REPLY, Reply, Request};

/// What the model is asked to do, step by step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Write this absolute path.
    Write(String),
    /// Run this shell command.
    Run(String),
}

/// The steps a prompt asks for.
pub fn steps(prompt: &str) -> Vec<Step> {
    let mut out = Vec::new();
    let mut rest = prompt;
    while let Some(i) = rest.find("[[") {
        let after = &rest[i + 2..];
        let Some(end) = after.find("]]") else { break };
        let inner = &after[..end];
        if let Some(p) = inner.strip_prefix("write ") {
            out.push(Step::Write(p.trim().to_string()));
        } else if let Some(c) = inner.strip_prefix("run ") {
            out.push(Step::Run(c.trim().to_string()));
        }
        rest = &after[end + 2..];
    }
    out
}

/// The text every written file gets.
pub const CONTENT: &str = "written by the agent's tool\n";

impl Mock {
    /// Makes the model call the agents' tools as the prompt's steps say (see the module
    /// documentation).
    pub fn use_tools(&self) {
        self.script(answer);
    }
}

/// The reply to one request when the prompt asks for steps (see the module documentation);
/// `None` for the mock's usual reply.
pub fn answer(req: &Request, body: &Value) -> Option<Reply> {
    let path = req.path.as_str();
    if path.starts_with("/v1/messages") && !path.contains("count_tokens") {
        return claude(body);
    }
    if path.starts_with("/v1/responses") {
        return codex(body);
    }
    if path.contains(":generateContent") || path.contains(":streamGenerateContent") {
        return gemini(path, body);
    }
    None
}

fn text_parts(content: &Value) -> Vec<String> {
    match content {
        Value::String(s) => vec![s.clone()],
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    }
}

/// Claude Code: the last user message that is not a tool result is the prompt; the tool
/// results after it count the steps done.
fn claude(body: &Value) -> Option<Reply> {
    let messages = body["messages"].as_array()?;
    let is_result = |m: &Value| {
        m["content"]
            .as_array()
            .is_some_and(|p| p.iter().any(|x| x["type"] == "tool_result"))
    };
    let at = messages
        .iter()
        .rposition(|m| m["role"] == "user" && !is_result(m))?;
    let prompt = text_parts(&messages[at]["content"])
        .into_iter()
        .filter(|t| !t.trim_start().starts_with("<system-reminder>"))
        .collect::<Vec<_>>()
        .join("\n");
    let done = messages[at..].iter().filter(|m| is_result(m)).count();
    let step = steps(&prompt).into_iter().nth(done)?;
    let (name, input) = match step {
        Step::Write(p) => ("Write", json!({"file_path": p, "content": CONTENT})),
        Step::Run(c) => ("Bash", json!({"command": c, "description": "run it"})),
    };
    Some(anthropic_call(
        body,
        &format!("toolu_step_{done}"),
        name,
        &input,
    ))
}

fn sse(events: &[(&str, Value)]) -> String {
    events
        .iter()
        .map(|(n, d)| format!("event: {n}\ndata: {d}\n\n"))
        .collect()
}

/// A Messages API reply (streamed when asked) calling tool `name` with `input`, as call `id`.
fn anthropic_call(body: &Value, id: &str, name: &str, input: &Value) -> Reply {
    let model = body["model"].as_str().unwrap_or("claude-mock").to_string();
    let msg_id = format!("msg_{id}");
    if body["stream"] != true {
        let msg = json!({"id": msg_id, "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "tool_use", "id": id, "name": name, "input": input}],
            "stop_reason": "tool_use", "stop_sequence": null,
            "usage": {"input_tokens": 10, "output_tokens": 5}});
        return ("200 OK", "application/json", msg.to_string());
    }
    let events = [
        (
            "message_start",
            json!({"type": "message_start", "message": {"id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [], "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 10, "output_tokens": 1}}}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": input.to_string()}}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 5}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ];
    ("200 OK", "text/event-stream", sse(&events))
}

/// A Responses API stream whose one output `item` (a function or custom tool call) is
/// streamed as added, then done.
fn openai_item(item: Value) -> Reply {
    let with = |status: &str| {
        let mut i = item.clone();
        i["status"] = json!(status);
        i
    };
    let response = |status: &str, output: Value| {
        json!({"id": "resp_step", "object": "response", "created_at": 1, "status": status,
            "model": "mock", "output": output,
            "usage": {"input_tokens": 10, "input_tokens_details": null, "output_tokens": 5,
                      "output_tokens_details": null, "total_tokens": 15}})
    };
    let events = [
        (
            "response.created",
            json!({"type": "response.created", "response": response("in_progress", json!([]))}),
        ),
        (
            "response.output_item.added",
            json!({"type": "response.output_item.added", "output_index": 0, "item": with("in_progress")}),
        ),
        (
            "response.output_item.done",
            json!({"type": "response.output_item.done", "output_index": 0, "item": with("completed")}),
        ),
        (
            "response.completed",
            json!({"type": "response.completed", "response": response("completed", json!([with("completed")]))}),
        ),
    ];
    ("200 OK", "text/event-stream", sse(&events))
}

fn function_call(done: usize, name: &str, arguments: &Value) -> Reply {
    openai_item(
        json!({"type": "function_call", "id": format!("fc_step_{done}"),
        "call_id": format!("call_step_{done}"), "name": name,
        "arguments": arguments.to_string()}),
    )
}

/// Codex: the last user message is the prompt (its AGENTS.md and environment messages come
/// before it); the tool outputs after it count the steps done.
fn codex(body: &Value) -> Option<Reply> {
    let items = body["input"].as_array()?;
    let at = items
        .iter()
        .rposition(|i| i["type"] == "message" && i["role"] == "user")?;
    let prompt = text_parts(&items[at]["content"]).join("\n");
    let done = items[at..]
        .iter()
        .filter(|i| {
            matches!(
                i["type"].as_str(),
                Some("function_call_output" | "custom_tool_call_output")
            )
        })
        .count();
    let step = steps(&prompt).into_iter().nth(done)?;
    let offered = |name: &str| {
        body["tools"].as_array().and_then(|t| {
            t.iter()
                .find(|t| t["name"] == name)
                .map(|t| t["type"].as_str().unwrap_or_default().to_string())
        })
    };
    Some(match step {
        Step::Write(p) => {
            let patch = format!(
                "*** Begin Patch\n*** Add File: {p}\n+{}\n*** End Patch\n",
                CONTENT.trim_end()
            );
            match offered("apply_patch").as_deref() {
                Some("custom") => openai_item(json!({"type": "custom_tool_call",
                    "id": format!("ctc_step_{done}"), "call_id": format!("call_step_{done}"),
                    "name": "apply_patch", "input": patch})),
                Some(_) => function_call(done, "apply_patch", &json!({"input": patch})),
                None => function_call(
                    done,
                    "exec_command",
                    &json!({"cmd": format!("apply_patch <<'EOF'\n{patch}EOF\n")}),
                ),
            }
        }
        Step::Run(c) => {
            if offered("exec_command").is_some() {
                function_call(done, "exec_command", &json!({"cmd": c}))
            } else {
                function_call(done, "shell_command", &json!({"command": c}))
            }
        }
    })
}

/// Gemini CLI: the last user content with text is the prompt (`-p` puts pas-agent's hook
/// context before it in the same text, escaped); function responses after it count the steps.
fn gemini(path: &str, body: &Value) -> Option<Reply> {
    let contents = body["contents"].as_array()?;
    let has_result = |c: &Value| {
        c["parts"]
            .as_array()
            .is_some_and(|p| p.iter().any(|x| x.get("functionResponse").is_some()))
    };
    let at = contents
        .iter()
        .rposition(|c| c["role"] == "user" && !has_result(c))?;
    let prompt = text_parts(&contents[at]["parts"]).join("\n");
    let done = contents[at..].iter().filter(|c| has_result(c)).count();
    let offered: Vec<&str> = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|t| t["functionDeclarations"].as_array().into_iter().flatten())
        .filter_map(|d| d["name"].as_str())
        .collect();
    let call = match steps(&prompt).into_iter().nth(done) {
        Some(Step::Write(p)) if offered.contains(&"write_file") => {
            json!({"name": "write_file", "args": {"file_path": p, "content": CONTENT}})
        }
        Some(Step::Run(c)) if offered.contains(&"run_shell_command") => {
            json!({"name": "run_shell_command", "args": {"command": c, "description": "run it"}})
        }
        _ => return None,
    };
    let reply = json!({"candidates": [{"content": {"role": "model", "parts": [{"functionCall": call}]},
        "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
        "modelVersion": "mock"});
    Some(if path.contains(":streamGenerateContent") {
        ("200 OK", "text/event-stream", format!("data: {reply}\n\n"))
    } else {
        ("200 OK", "application/json", reply.to_string())
    })
}

/// The answer the mock gives once every step is done.
pub const DONE: &str = REPLY;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_come_in_order_and_an_escaped_copy_is_no_step() {
        assert_eq!(
            steps("Please [[write /w/a.txt]] then [[run cargo test]]"),
            [
                Step::Write("/w/a.txt".into()),
                Step::Run("cargo test".into())
            ]
        );
        assert!(steps(r"Asked: Please \[\[write /w/a.txt\]\]").is_empty());
    }
}
