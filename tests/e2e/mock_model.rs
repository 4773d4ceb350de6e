//! A small mock of four model APIs on 127.0.0.1 (port 0, one per test), so the real agent
//! CLIs run offline: the Anthropic Messages API (`POST /v1/messages`, streamed as server-sent
//! events or as one JSON message), the OpenAI Responses API (`POST /v1/responses`, SSE), the
//! OpenAI Chat Completions API (`POST /v1/chat/completions`, streamed or not, and `GET
//! /v1/models`), and the Gemini API (`POST /v1beta/models/<m>:generateContent`,
//! `:streamGenerateContent?alt=sse`, `:countTokens`). Every request is kept, body included, for
//! the test to inspect; any other path is a 404 (what Factory droid's service calls get).
//!
//! The replies are the minimum each client accepts, with the event names and fields of the
//! public API references. Scripted behaviours: when a Messages request offers Claude's
//! `Write` tool and carries no tool result yet, the reply is a `tool_use` that writes
//! [`Mock::claude_write`]'s file; when a Chat Completions request's last message is a user
//! message holding [`WRITE_MARK`] or [`RUN_MARK`], the reply calls the agent's own tool that
//! writes a file or runs a command (found among the tools it offers, by name), and a request
//! without tools gets an aider edit block instead.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::common::Sandbox;

/// The text every reply carries.
pub const REPLY: &str = "Mock reply from the test model.";

/// In a Chat Completions prompt: `PAS-WRITE <absolute path>` makes the reply call the agent's
/// tool that writes a file, with [`WRITTEN`] as the content.
pub const WRITE_MARK: &str = "PAS-WRITE";
/// In a Chat Completions prompt: the reply calls the agent's shell tool with [`RUN_COMMAND`].
pub const RUN_MARK: &str = "PAS-RUN";
/// The content the write tool is given.
pub const WRITTEN: &str = "written by the agent\n";
/// The command the shell tool is given (it fails with exit code 2).
pub const RUN_COMMAND: &str = "ls /nonexistent-pas-agent";
/// The model id Chat Completions replies name and `/v1/models` lists first.
pub const CHAT_MODEL: &str = "mock-model";

/// One request the mock received.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub body: String,
}

#[derive(Default)]
struct State {
    requests: Vec<Request>,
    claude_write: Option<(String, String)>,
    script: Option<Script>,
}

/// A running mock. Its listener thread lives as long as the test process; each test has its
/// own port.
#[derive(Clone)]
pub struct Mock {
    pub port: u16,
    state: Arc<Mutex<State>>,
}

impl Mock {
    /// Binds 127.0.0.1:0 and serves in the background.
    pub fn start() -> Mock {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let port = listener.local_addr().expect("local addr").port();
        let state = Arc::new(Mutex::new(State::default()));
        let shared = Arc::clone(&state);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let state = Arc::clone(&shared);
                std::thread::spawn(move || {
                    let _ = serve(stream, &state);
                });
            }
        });
        Mock { port, state }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Makes Claude's next tool-offering turn write `content` to the absolute `path`.
    pub fn claude_write(&self, path: &str, content: &str) {
        self.state.lock().unwrap().claude_write = Some((path.into(), content.into()));
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Request> {
        self.state.lock().unwrap().requests.clone()
    }

    /// Requests whose path starts with `prefix` or contains it.
    pub fn model_requests(&self, needle: &str) -> Vec<Request> {
        self.requests()
            .into_iter()
            .filter(|r| r.path.contains(needle))
            .collect()
    }

    /// The environment that points Claude Code at this mock with the API key `key`, with
    /// its non-essential traffic and auto-updater off.
    pub fn claude_env(&self, key: &str) -> [(String, String); 4] {
        [
            ("ANTHROPIC_BASE_URL".to_string(), self.base()),
            ("ANTHROPIC_API_KEY".to_string(), key.to_string()),
            (
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".to_string(),
                "1".to_string(),
            ),
            ("DISABLE_AUTOUPDATER".to_string(), "1".to_string()),
        ]
    }

    /// Points Gemini CLI in `sb` at this mock: API-key auth and no auto-update in its
    /// settings, the mock's URL and key in the environment, the work directory trusted.
    pub fn point_gemini_at_me(&self, sb: &mut Sandbox) {
        std::fs::create_dir_all(sb.home.join(".gemini")).unwrap();
        std::fs::write(
            sb.home.join(".gemini/settings.json"),
            r#"{"security":{"auth":{"selectedType":"gemini-api-key"}},"general":{"enableAutoUpdate":false,"enableAutoUpdateNotification":false}}"#,
        )
        .unwrap();
        sb.env.extend([
            ("GOOGLE_GEMINI_BASE_URL".to_string(), self.base()),
            ("GEMINI_API_KEY".to_string(), "test-key".to_string()),
            ("GEMINI_CLI_TRUST_WORKSPACE".to_string(), "true".to_string()),
        ]);
    }

    /// Points OpenCode in `sb` at this mock: its user config names the mock as the OpenAI
    /// provider's base URL, a test key and model, with updates and sharing off.
    pub fn point_opencode_at_me(&self, sb: &Sandbox) {
        let config = sb.home.join(".config/opencode");
        std::fs::create_dir_all(&config).unwrap();
        std::fs::write(
            config.join("opencode.json"),
            format!(
                r#"{{"provider":{{"openai":{{"options":{{"baseURL":"{}/v1","apiKey":"sk-test"}}}}}},"model":"openai/gpt-4o","autoupdate":false,"share":"disabled"}}"#,
                self.base()
            ),
        )
        .unwrap();
    }
}

/// Fails the test with the install command when an agent CLI is missing: the tests with the
/// real agents exist to show the launcher works with them, so they never pass without them.
pub fn require_agent(program: &str, package: &str) {
    assert!(
        which::which(program).is_ok(),
        "{program} is not installed; install it with `npm install -g {package}` (as .ci/run does)"
    );
}

/// Codex's arguments (after `--`) for one non-interactive turn with `prompt`, against a
/// Responses API at `<base>/v1` (the mock's [`Mock::base`], or a proxy in front of it). The
/// key is read from `OPENAI_API_KEY`.
pub fn codex_args(base: &str, prompt: &str) -> Vec<String> {
    vec![
        "exec".into(),
        "--skip-git-repo-check".into(),
        "-c".into(),
        "model_provider=mock".into(),
        "-c".into(),
        "model=mock-model".into(),
        "-c".into(),
        format!(
            "model_providers.mock={{name=\"mock\",base_url=\"{base}/v1\",wire_api=\"responses\",env_key=\"OPENAI_API_KEY\"}}"
        ),
        prompt.into(),
    ]
}

fn read_request(stream: &mut BufReader<TcpStream>) -> std::io::Result<Option<Request>> {
    let mut line = String::new();
    if stream.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_string();
    let path = parts.next().unwrap_or_default().to_string();
    let mut length = 0usize;
    let mut chunked = false;
    loop {
        let mut h = String::new();
        if stream.read_line(&mut h)? == 0 {
            break;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            let (k, v) = (k.trim().to_ascii_lowercase(), v.trim());
            if k == "content-length" {
                length = v.parse().unwrap_or(0);
            } else if k == "transfer-encoding" && v.eq_ignore_ascii_case("chunked") {
                chunked = true;
            }
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            let mut size = String::new();
            stream.read_line(&mut size)?;
            let n = usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16)
                .unwrap_or(0);
            if n == 0 {
                let mut end = String::new();
                stream.read_line(&mut end)?;
                break;
            }
            let mut chunk = vec![0u8; n];
            stream.read_exact(&mut chunk)?;
            body.extend_from_slice(&chunk);
            let mut crlf = [0u8; 2];
            stream.read_exact(&mut crlf)?;
        }
    } else {
        body.resize(length, 0);
        stream.read_exact(&mut body)?;
    }
    Ok(Some(Request {
        method,
        path,
        body: String::from_utf8_lossy(&body).into_owned(),
    }))
}

fn serve(stream: TcpStream, state: &Mutex<State>) -> std::io::Result<()> {
    let mut out = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    let Some(req) = read_request(&mut reader)? else {
        return Ok(());
    };
    state.lock().unwrap().requests.push(req.clone());
    let (status, content_type, body) = respond(&req, state);
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    out.write_all(head.as_bytes())?;
    out.write_all(body.as_bytes())?;
    out.flush()
}

fn sse(events: &[(&str, Value)]) -> String {
    events
        .iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect()
}

fn respond(req: &Request, state: &Mutex<State>) -> (&'static str, &'static str, String) {
    let path = req.path.as_str();
    if req.method == "GET" && path.split('?').next().unwrap_or(path).ends_with("/models") {
        let ids = [CHAT_MODEL, "gpt-4.1", "gpt-4o"];
        let data: Vec<Value> = ids
            .iter()
            .map(|id| json!({"id": id, "object": "model", "created": 1, "owned_by": "mock"}))
            .collect();
        return (
            "200 OK",
            "application/json",
            json!({"object": "list", "data": data}).to_string(),
        );
    }
    if req.method != "POST" {
        return ("404 Not Found", "text/plain", String::new());
    }
    let body: Value = serde_json::from_str(&req.body).unwrap_or(Value::Null);
    if let Some(reply) = scripted(req, &body, state) {
        return reply;
    }
    if path.starts_with("/v1/messages/count_tokens") {
        return (
            "200 OK",
            "application/json",
            json!({"input_tokens": 10}).to_string(),
        );
    }
    if path.starts_with("/v1/messages") {
        return anthropic(&body, &req.body, state);
    }
    if path
        .split('?')
        .next()
        .unwrap_or(path)
        .ends_with("/chat/completions")
    {
        return chat_completions(&body);
    }
    if path.starts_with("/v1/responses") {
        return ("200 OK", "text/event-stream", openai_responses());
    }
    if path.contains(":countTokens") {
        return (
            "200 OK",
            "application/json",
            json!({"totalTokens": 10}).to_string(),
        );
    }
    if path.contains(":streamGenerateContent") {
        return (
            "200 OK",
            "text/event-stream",
            format!("data: {}\n\n", gemini_reply()),
        );
    }
    if path.contains(":generateContent") {
        return ("200 OK", "application/json", gemini_reply().to_string());
    }
    ("404 Not Found", "text/plain", String::new())
}

fn anthropic(
    body: &Value,
    raw: &str,
    state: &Mutex<State>,
) -> (&'static str, &'static str, String) {
    let model = body["model"].as_str().unwrap_or("claude-mock").to_string();
    let offers_write = body["tools"]
        .as_array()
        .is_some_and(|t| t.iter().any(|t| t["name"] == "Write"));
    let has_result = raw.contains("\"tool_result\"");
    let write = if offers_write && !has_result {
        state.lock().unwrap().claude_write.clone()
    } else {
        None
    };
    let usage = json!({"input_tokens": 10, "output_tokens": 5});
    let (block, delta, stop) = match &write {
        Some((path, content)) => (
            json!({"type": "tool_use", "id": "toolu_mock_1", "name": "Write", "input": {}}),
            json!({"type": "input_json_delta", "partial_json": json!({"file_path": path, "content": content}).to_string()}),
            "tool_use",
        ),
        None => (
            json!({"type": "text", "text": ""}),
            json!({"type": "text_delta", "text": REPLY}),
            "end_turn",
        ),
    };
    if body["stream"] != true {
        let content = match &write {
            Some((path, content)) => {
                json!([{"type": "tool_use", "id": "toolu_mock_1", "name": "Write", "input": {"file_path": path, "content": content}}])
            }
            None => json!([{"type": "text", "text": REPLY}]),
        };
        let msg = json!({"id": "msg_mock", "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": stop, "stop_sequence": null, "usage": usage});
        return ("200 OK", "application/json", msg.to_string());
    }
    let events = [
        (
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_mock", "type": "message", "role": "assistant", "model": model, "content": [], "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 10, "output_tokens": 1}}}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": block}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": delta}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 5}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ];
    ("200 OK", "text/event-stream", sse(&events))
}

fn openai_responses() -> String {
    let item = json!({"type": "message", "role": "assistant", "id": "msg_mock", "status": "completed",
        "content": [{"type": "output_text", "text": REPLY, "annotations": []}]});
    let response = |status: &str, output: Value| {
        json!({"id": "resp_mock", "object": "response", "created_at": 1, "status": status, "model": "mock", "output": output,
            "usage": {"input_tokens": 10, "input_tokens_details": null, "output_tokens": 5, "output_tokens_details": null, "total_tokens": 15}})
    };
    let part = json!({"type": "output_text", "text": REPLY, "annotations": []});
    sse(&[
        (
            "response.created",
            json!({"type": "response.created", "response": response("in_progress", json!([]))}),
        ),
        (
            "response.output_item.added",
            json!({"type": "response.output_item.added", "output_index": 0,
            "item": {"type": "message", "role": "assistant", "id": "msg_mock", "status": "in_progress", "content": []}}),
        ),
        (
            "response.content_part.added",
            json!({"type": "response.content_part.added", "item_id": "msg_mock", "output_index": 0, "content_index": 0,
            "part": {"type": "output_text", "text": "", "annotations": []}}),
        ),
        (
            "response.output_text.delta",
            json!({"type": "response.output_text.delta", "item_id": "msg_mock", "output_index": 0, "content_index": 0, "delta": REPLY}),
        ),
        (
            "response.output_text.done",
            json!({"type": "response.output_text.done", "item_id": "msg_mock", "output_index": 0, "content_index": 0, "text": REPLY}),
        ),
        (
            "response.content_part.done",
            json!({"type": "response.content_part.done", "item_id": "msg_mock", "output_index": 0, "content_index": 0, "part": part}),
        ),
        (
            "response.output_item.done",
            json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
        ),
        (
            "response.completed",
            json!({"type": "response.completed", "response": response("completed", json!([item]))}),
        ),
    ])
}

/// Tool names an agent's file-writing tool goes by (Copilot, Qwen Code, Factory droid, the
/// Continue CLI, pi, Kilo), tried in this order.
const WRITE_TOOLS: &[&str] = &["create", "write_file", "Create", "Write", "write"];
/// Tool names of an agent's shell tool, tried in this order.
const SHELL_TOOLS: &[&str] = &["bash", "run_shell_command", "Execute", "Bash", "shell"];

/// The text of a Chat Completions message's content (a string, or parts with `text`).
fn chat_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Arguments for `function` (a tool's `function` object) from its JSON schema: the path and
/// content for a write, the command for a shell; any other required one a placeholder.
fn tool_args(function: &Value, write: Option<&str>) -> Value {
    let params = &function["parameters"];
    let required: Vec<&str> = params["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let mut args = serde_json::Map::new();
    for (name, spec) in params["properties"].as_object().into_iter().flatten() {
        let lower = name.to_ascii_lowercase();
        let value = match write {
            Some(path) if lower.contains("path") || lower == "file" || lower == "filename" => {
                json!(path)
            }
            Some(_) if ["content", "file_text", "text", "contents"].contains(&lower.as_str()) => {
                json!(WRITTEN)
            }
            None if ["command", "cmd"].contains(&lower.as_str()) => json!(RUN_COMMAND),
            None if lower == "description" || lower == "summary" => json!("a command"),
            None if lower == "risklevel" => json!("low"),
            None if lower == "risklevelreason" => json!("read-only listing"),
            _ if required.contains(&name.as_str()) => match spec["enum"].get(0) {
                Some(first) => first.clone(),
                None => match spec["type"].as_str() {
                    Some("boolean") => json!(false),
                    Some("integer") | Some("number") => json!(1),
                    Some("array") => json!([]),
                    Some("object") => json!({}),
                    _ => json!("x"),
                },
            },
            _ => continue,
        };
        args.insert(name.clone(), value);
    }
    Value::Object(args)
}

/// The tool call a Chat Completions request asks for by the marks in its last message, if any:
/// `(name, arguments)`; or, when it offers no tools (aider edits through text), the edit block
/// that writes the file.
fn chat_tool_call(body: &Value) -> Option<Result<(String, Value), String>> {
    let messages = body["messages"].as_array()?;
    let last = messages.last()?;
    if last["role"] != "user" {
        return None;
    }
    let text = chat_text(&last["content"]);
    // The path: the word after the mark, without quotes (Kilo's `run` quotes its message).
    let write = text.split_once(WRITE_MARK).map(|(_, rest)| {
        rest.split_whitespace()
            .next()
            .unwrap_or("pas-written.txt")
            .trim_matches(|c| c == '"' || c == '\'')
            .to_string()
    });
    if write.is_none() && !text.contains(RUN_MARK) {
        return None;
    }
    let tools = body["tools"].as_array().cloned().unwrap_or_default();
    if tools.is_empty() {
        // aider: a SEARCH/REPLACE block with an empty SEARCH creates the file.
        let path = write?;
        return Some(Err(format!(
            "{REPLY}\n\n{path}\n```\n<<<<<<< SEARCH\n=======\n{WRITTEN}>>>>>>> REPLACE\n```\n"
        )));
    }
    let names: &[&str] = if write.is_some() {
        WRITE_TOOLS
    } else {
        SHELL_TOOLS
    };
    let function = names.iter().find_map(|n| {
        tools
            .iter()
            .map(|t| &t["function"])
            .find(|f| f["name"] == *n)
    })?;
    let name = function["name"].as_str()?.to_string();
    Some(Ok((name, tool_args(function, write.as_deref()))))
}

/// A Chat Completions reply: a tool call when the request asks for one, else [`REPLY`]; as
/// server-sent events when the request streams.
fn chat_completions(body: &Value) -> (&'static str, &'static str, String) {
    let model = body["model"].as_str().unwrap_or(CHAT_MODEL).to_string();
    let usage = json!({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15});
    let (message, finish) = match chat_tool_call(body) {
        Some(Ok((name, args))) => (
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_mock_1", "type": "function",
                "function": {"name": name, "arguments": args.to_string()}}]}),
            "tool_calls",
        ),
        Some(Err(text)) => (json!({"role": "assistant", "content": text}), "stop"),
        None => (json!({"role": "assistant", "content": REPLY}), "stop"),
    };
    if body["stream"] != true {
        let reply = json!({"id": "chatcmpl-mock", "object": "chat.completion", "created": 1, "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage});
        return ("200 OK", "application/json", reply.to_string());
    }
    let chunk = |choices: Value, usage: Value| {
        let mut c = json!({"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 1, "model": model, "choices": choices});
        if !usage.is_null() {
            c["usage"] = usage;
        }
        format!("data: {c}\n\n")
    };
    let mut delta = message.clone();
    if let Some(calls) = delta["tool_calls"].as_array_mut() {
        for (i, call) in calls.iter_mut().enumerate() {
            call["index"] = json!(i);
        }
    }
    let mut out = chunk(
        json!([{"index": 0, "delta": delta, "finish_reason": null}]),
        Value::Null,
    );
    out.push_str(&chunk(
        json!([{"index": 0, "delta": {}, "finish_reason": finish}]),
        Value::Null,
    ));
    out.push_str(&chunk(json!([]), usage));
    out.push_str("data: [DONE]\n\n");
    ("200 OK", "text/event-stream", out)
}

/// The Chat Completions requests received so far, bodies as JSON.
impl Mock {
    pub fn chat_requests(&self) -> Vec<Value> {
        self.model_requests("/chat/completions")
            .into_iter()
            .filter_map(|r| serde_json::from_str(&r.body).ok())
            .collect()
    }
}

fn gemini_reply() -> Value {
    json!({"candidates": [{"content": {"role": "model", "parts": [{"text": REPLY}]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}, "modelVersion": "mock"})
}

// ---------------------------------------------------------------------------------------------
// Scripted replies (the MCP tests, tests/e2e/mcp.rs). A test sets a [`Script`]; it sees every
// POST first and either answers it or returns `None` for the mock's usual reply, so without a
// script nothing above changes.

/// A reply chosen by a test: `(status, content type, body)`, or `None` for the usual reply.
pub type Reply = (&'static str, &'static str, String);

/// A test's hook over the requests: sees each POST (the request and its body as JSON).
pub type Script = Arc<dyn Fn(&Request, &Value) -> Option<Reply> + Send + Sync>;

fn scripted(req: &Request, body: &Value, state: &Mutex<State>) -> Option<Reply> {
    let script = state.lock().unwrap().script.clone()?;
    script(req, body)
}

impl Mock {
    /// Lets `script` answer requests before the usual replies (see [`Script`]).
    pub fn script(
        &self,
        script: impl Fn(&Request, &Value) -> Option<Reply> + Send + Sync + 'static,
    ) {
        self.state.lock().unwrap().script = Some(Arc::new(script));
    }
}

/// The name of the first tool offered in a Messages or Responses request `body` whose name
/// contains `needle` (the agents prefix MCP tools with the server's name, each its own way),
/// with the namespace it is offered in, if any (Codex offers each MCP server's tools as a
/// Responses API `namespace` tool).
pub fn offered_tool(body: &Value, needle: &str) -> Option<(Option<String>, String)> {
    body["tools"].as_array()?.iter().find_map(|t| {
        if t["type"] == "namespace" {
            let ns = t["name"].as_str()?;
            return t["tools"].as_array()?.iter().find_map(|f| {
                let name = f["name"].as_str()?;
                name.contains(needle)
                    .then(|| (Some(ns.to_string()), name.to_string()))
            });
        }
        let name = t["name"]
            .as_str()
            .or_else(|| t["function"]["name"].as_str())?;
        name.contains(needle).then(|| (None, name.to_string()))
    })
}

/// A Messages API reply (streamed when the request asked for it) that calls the tool `name`
/// with `input`.
pub fn anthropic_tool_call(body: &Value, name: &str, input: &Value) -> Reply {
    let model = body["model"].as_str().unwrap_or("claude-mock").to_string();
    let usage = json!({"input_tokens": 10, "output_tokens": 5});
    if body["stream"] != true {
        let msg = json!({"id": "msg_mock_tool", "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "tool_use", "id": "toolu_mock_mcp", "name": name, "input": input}],
            "stop_reason": "tool_use", "stop_sequence": null, "usage": usage});
        return ("200 OK", "application/json", msg.to_string());
    }
    let events = [
        (
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_mock_tool", "type": "message", "role": "assistant", "model": model, "content": [], "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 10, "output_tokens": 1}}}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_mock_mcp", "name": name, "input": {}}}),
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

/// A Responses API stream that calls the function `name` (of `namespace`, if given) with
/// `arguments`.
pub fn openai_tool_call(namespace: Option<&str>, name: &str, arguments: &Value) -> Reply {
    let item = |status: &str| {
        let mut item = json!({"type": "function_call", "id": "fc_mock_mcp", "call_id": "call_mock_mcp", "name": name,
            "arguments": arguments.to_string(), "status": status});
        if let Some(ns) = namespace {
            item["namespace"] = json!(ns);
        }
        item
    };
    let response = |status: &str, output: Value| {
        json!({"id": "resp_mock_tool", "object": "response", "created_at": 1, "status": status, "model": "mock", "output": output,
            "usage": {"input_tokens": 10, "input_tokens_details": null, "output_tokens": 5, "output_tokens_details": null, "total_tokens": 15}})
    };
    let body = sse(&[
        (
            "response.created",
            json!({"type": "response.created", "response": response("in_progress", json!([]))}),
        ),
        (
            "response.output_item.added",
            json!({"type": "response.output_item.added", "output_index": 0, "item": item("in_progress")}),
        ),
        (
            "response.function_call_arguments.done",
            json!({"type": "response.function_call_arguments.done", "item_id": "fc_mock_mcp", "output_index": 0, "arguments": arguments.to_string()}),
        ),
        (
            "response.output_item.done",
            json!({"type": "response.output_item.done", "output_index": 0, "item": item("completed")}),
        ),
        (
            "response.completed",
            json!({"type": "response.completed", "response": response("completed", json!([item("completed")]))}),
        ),
    ]);
    ("200 OK", "text/event-stream", body)
}
