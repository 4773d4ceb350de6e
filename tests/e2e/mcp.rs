//! `pas-agent mcp`: the MCP server driven over pipes by a raw JSON-RPC client (one line per
//! message, as the stdio transport has it), the snippets of `mcp --config` checked by the real
//! agents' own `mcp list`, and `run --mcp` with the real Claude Code and Codex against the mock
//! model, which answers with a call of the server's update tool.

#![allow(clippy::disallowed_macros)]

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::Sandbox;
use crate::mock_model::{
    Mock, REPLY, anthropic_tool_call, codex_args, offered_tool, openai_tool_call, require_agent,
};

const SESSION: &str = ".pas-agent/session.json";

/// Guards against a hung server only; never a timing assertion.
const PATIENCE: Duration = Duration::from_secs(120);

/// A raw MCP client: the real `pas-agent mcp` with its stdin and stdout piped.
struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    /// Every line the server wrote on stdout, in order.
    stdout: Vec<String>,
    next_id: u64,
}

impl Client {
    /// Starts `pas-agent mcp` in `dir` (relative to the work directory) with `env`.
    fn start(sb: &Sandbox, dir: &str, env: &[(&str, &str)]) -> Client {
        let mut cmd = sb.cmd();
        cmd.current_dir(sb.work.join(dir))
            .arg("mcp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("start pas-agent mcp");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Client {
            child,
            stdin,
            lines,
            stdout: Vec::new(),
            next_id: 1,
        }
    }

    /// Starts the server and completes the handshake.
    fn ready(sb: &Sandbox, env: &[(&str, &str)]) -> Client {
        let mut c = Client::start(sb, ".", env);
        let init = c.initialize();
        assert_eq!(init["result"]["serverInfo"]["name"], "pas-agent", "{init}");
        c
    }

    fn send_raw(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// The next message the server writes.
    fn recv(&mut self) -> Value {
        let line = self
            .lines
            .recv_timeout(PATIENCE)
            .expect("the server answered");
        self.stdout.push(line.clone());
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON on stdout ({e}): {line}"))
    }

    /// Sends a request and returns the response with its id.
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let mut msg = json!({"jsonrpc": "2.0", "id": id, "method": method});
        if !params.is_null() {
            msg["params"] = params;
        }
        self.send_raw(&msg.to_string());
        let deadline = Instant::now() + PATIENCE;
        loop {
            assert!(Instant::now() < deadline, "no response to {method}");
            let m = self.recv();
            if m["id"] == id {
                return m;
            }
        }
    }

    fn initialize(&mut self) -> Value {
        let init = self.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw-test", "version": "1"}}),
        );
        self.send_raw(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        init
    }

    /// Calls `tool`; returns the call's result (a JSON-RPC error fails the test).
    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let r = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        assert!(r.get("error").is_none(), "{tool}: {r}");
        r["result"].clone()
    }

    /// A call that must succeed; returns its result.
    fn call_ok(&mut self, tool: &str, arguments: Value) -> Value {
        let r = self.call(tool, arguments);
        assert_eq!(r["isError"], false, "{tool}: {r}");
        r
    }

    /// A call that must be a tool error; returns its text.
    fn call_err(&mut self, tool: &str, arguments: Value) -> (String, Value) {
        let r = self.call(tool, arguments);
        assert_eq!(r["isError"], true, "{tool} should fail: {r}");
        (text(&r), r["structuredContent"].clone())
    }

    /// The server still answers.
    fn alive(&mut self) {
        let r = self.request("ping", Value::Null);
        assert_eq!(r["result"], json!({}), "{r}");
    }

    /// Closes stdin, waits for the server to exit 0, and checks that everything it wrote on
    /// stdout was a JSON-RPC message without raw control characters. Returns its stderr.
    fn finish(mut self) -> String {
        drop(self.stdin.take());
        let out = self.child.wait_with_output().unwrap();
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(5)) {
            self.stdout.push(line);
        }
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        for line in &self.stdout {
            let v: Value = serde_json::from_str(line).expect("JSON-RPC on stdout");
            assert_eq!(v["jsonrpc"], "2.0", "{line}");
            assert!(
                !line
                    .chars()
                    .any(|c| c.is_control() || ('\u{202A}'..='\u{202E}').contains(&c)),
                "raw control character on stdout: {line:?}"
            );
        }
        stderr
    }
}

/// The text content of a tool result.
fn text(result: &Value) -> String {
    result["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

fn task(sb: &Sandbox) -> Value {
    let status: Value = serde_json::from_str(&sb.ok(&["status", "--json"])).unwrap();
    status["session"]["task"].clone()
}

/// `program` in the work directory with the sandbox's isolated environment (HOME, PATH, …).
fn agent_cmd(sb: &Sandbox, program: &str) -> std::process::Command {
    let template = sb.cmd();
    let mut cmd = std::process::Command::new(program);
    cmd.current_dir(&sb.work).stdin(Stdio::null());
    for (k, v) in template.get_envs() {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    cmd.env("GEMINI_CLI_TRUST_WORKSPACE", "true")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
    cmd
}

#[test]
fn initialize_lists_the_tools_and_every_tool_and_the_resource_work() {
    let sb = Sandbox::with_session();
    let mut c = Client::start(&sb, ".", &[]);
    let init = c.initialize();
    let caps = &init["result"]["capabilities"];
    assert!(
        caps["tools"].is_object() && caps["resources"].is_object(),
        "{init}"
    );
    assert!(
        init["result"]["instructions"]
            .as_str()
            .unwrap()
            .contains("update_session")
    );

    let tools = c.request("tools/list", Value::Null)["result"]["tools"].clone();
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for name in ["read_session", "update_session", "checkpoint"] {
        assert!(names.contains(&name), "{names:?}");
    }
    let update = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "update_session")
        .unwrap();
    let props = update["inputSchema"]["properties"].as_object().unwrap();
    // Every list `update` has, the numbered moves and the next action.
    for field in [
        "completed",
        "remaining",
        "decisions",
        "blockers",
        "constraints",
        "discoveries",
        "done",
        "resolve",
        "next",
        "clear_next",
        "objective",
        "task",
    ] {
        assert!(props.contains_key(field), "{field}: {update}");
        assert!(props[field]["description"].is_string(), "{field}");
    }
    assert_eq!(props["done"]["type"], "array");
    assert_eq!(props["done"]["items"]["type"], "integer");

    // update_session: every list at once.
    let r = c.call_ok(
        "update_session",
        json!({
            "remaining": ["Token refresh", "Logout", "Docs"],
            "completed": ["Login form"],
            "decisions": ["JWT, not sessions"],
            "blockers": ["Staging is down"],
            "constraints": ["No new dependencies"],
            "discoveries": ["The old API returns 200 on errors"],
            "next": "Token refresh",
            "objective": "Ship OAuth2"
        }),
    );
    assert!(
        text(&r)
            .starts_with("Session updated: 1 done, 3 remaining, 1 blocked; next: Token refresh"),
        "{}",
        text(&r)
    );
    assert_eq!(r["structuredContent"]["task"]["remaining"][2], "Docs");
    let t = task(&sb);
    assert_eq!(t["remaining"], json!(["Token refresh", "Logout", "Docs"]));
    assert_eq!(t["completed"], json!(["Login form"]));
    assert_eq!(t["decisions"], json!(["JWT, not sessions"]));
    assert_eq!(t["blockers"], json!(["Staging is down"]));
    assert_eq!(t["constraints"], json!(["No new dependencies"]));
    assert_eq!(
        t["discoveries"],
        json!(["The old API returns 200 on errors"])
    );
    assert_eq!(t["next_action"], "Token refresh");
    assert_eq!(t["objective"], "Ship OAuth2");

    // Done by number (as read_session numbers them), a blocker resolved, the next action
    // cleared with it, as `update --done 1 --done 3 --resolve 1` does.
    let read = c.call_ok("read_session", json!({}));
    let shown = text(&read);
    assert!(shown.contains("Remaining (3):"), "{shown}");
    assert!(shown.contains("   1. Token refresh"), "{shown}");
    assert!(shown.contains("Task:      Build the thing"), "{shown}");
    assert_eq!(
        read["structuredContent"]["task"]["remaining"],
        json!(["Token refresh", "Logout", "Docs"])
    );
    assert_eq!(read["structuredContent"]["checkpoints"], 0);
    c.call_ok("update_session", json!({"done": [1, 3], "resolve": [1]}));
    let t = task(&sb);
    assert_eq!(t["remaining"], json!(["Logout"]));
    assert_eq!(
        t["completed"],
        json!(["Login form", "Token refresh", "Docs"])
    );
    assert_eq!(t["blockers"], json!([]));
    assert_eq!(t["next_action"], Value::Null);
    c.call_ok("update_session", json!({"next": "Logout"}));
    c.call_ok("update_session", json!({"clear_next": true}));
    assert_eq!(task(&sb)["next_action"], Value::Null);

    // checkpoint: as `pas-agent checkpoint`, with the changed files.
    sb.write("src.rs", "fn main() {}\n");
    let r = c.call_ok("checkpoint", json!({"message": "  login flow done "}));
    assert!(
        text(&r).starts_with("Checkpoint #1 saved: login flow done"),
        "{}",
        text(&r)
    );
    assert_eq!(r["structuredContent"]["number"], 1);
    assert_eq!(r["structuredContent"]["files_changed"], 1);
    let list: Value = serde_json::from_str(&sb.ok(&["list", "--json"])).unwrap();
    assert_eq!(
        list["checkpoints"][0]["message"], "login flow done",
        "{list}"
    );
    let read = c.call_ok("read_session", json!({}));
    assert_eq!(read["structuredContent"]["checkpoints"], 1);
    assert_eq!(
        read["structuredContent"]["latest_checkpoint"]["message"],
        "login flow done"
    );

    // The resource: the block `export` writes, as Markdown.
    let list = c.request("resources/list", Value::Null);
    assert_eq!(
        list["result"]["resources"][0]["uri"], "pas-agent://session",
        "{list}"
    );
    assert_eq!(list["result"]["resources"][0]["mimeType"], "text/markdown");
    let read = c.request("resources/read", json!({"uri": "pas-agent://session"}));
    let contents = &read["result"]["contents"][0];
    assert_eq!(contents["mimeType"], "text/markdown", "{read}");
    let md = contents["text"].as_str().unwrap();
    assert!(md.contains("# PAS-Agent Session Context"), "{md}");
    assert!(md.contains("Logout"), "{md}");
    let block = sb.ok(&["export", "--to", "claude", "-o", "-"]);
    assert!(
        block.contains(md.trim_end()),
        "resource:\n{md}\nblock:\n{block}"
    );
    c.finish();
}

#[test]
fn bad_requests_are_answered_and_the_server_keeps_serving() {
    let sb = Sandbox::with_session();
    sb.ok(&["update", "--remaining", "One", "--blocker", "B"]);
    let before = sb.bytes(SESSION);
    let mut c = Client::ready(&sb, &[]);

    // Not JSON at all: rmcp skips the line (there is no id to answer); the next request is
    // served.
    c.send_raw("this is not json {");
    c.send_raw(r#"{"jsonrpc":"2.0","id":"cut"#);
    c.alive();
    // A line longer than the transport reads (16 MiB): dropped, and the server goes on.
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{{"name":"update_session","arguments":{{"remaining":["{}"]}}}}}}"#,
        "x".repeat(17 << 20)
    );
    c.send_raw(&huge);
    c.alive();
    // JSON that is no JSON-RPC request: "Invalid request".
    for line in [
        r#"[1,2]"#,
        r#"{"id":13}"#,
        r#"{"jsonrpc":"2.0","id":14,"method":"tools/call","params":"x"}"#,
    ] {
        c.send_raw(line);
        let r = c.recv();
        assert_eq!(r["error"]["code"], -32600, "{line}: {r}");
        c.alive();
    }
    // An unknown method, an unknown tool, an unknown resource: JSON-RPC errors.
    let r = c.request("sessions/explode", json!({}));
    assert_eq!(r["error"]["code"], -32601, "{r}");
    let r = c.request("tools/call", json!({"name": "rm_rf", "arguments": {}}));
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let r = c.request("resources/read", json!({"uri": "file:///etc/passwd"}));
    assert!(r["error"]["code"].is_i64(), "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("pas-agent://session")
    );
    // Wrong argument types and unknown arguments: tool errors naming the problem, nothing
    // changed.
    for (tool, args, says) in [
        (
            "update_session",
            json!({"done": "1"}),
            "expected a sequence",
        ),
        ("update_session", json!({"done": [-1]}), "invalid value"),
        (
            "update_session",
            json!({"remaining": "One string"}),
            "expected a sequence",
        ),
        (
            "update_session",
            json!({"remaining": [1, 2]}),
            "expected a string",
        ),
        (
            "update_session",
            json!({"clear_next": "yes"}),
            "expected a boolean",
        ),
        (
            "update_session",
            json!({"decision": ["typo"]}),
            "unknown field `decision`",
        ),
        ("checkpoint", json!({"message": 5}), "expected a string"),
        ("checkpoint", json!({}), "missing field `message`"),
    ] {
        let (shown, _) = c.call_err(tool, args.clone());
        assert!(shown.contains(says), "{tool} {args}: {shown}");
    }
    // The CLI's own refusals, with its message and exit code.
    for (tool, args, says, code) in [
        (
            "update_session",
            json!({"done": [2]}),
            "there is no item #2 in remaining: the remaining list has 1 item",
            2,
        ),
        (
            "update_session",
            json!({"resolve": [5]}),
            "there is no item #5 in blockers",
            2,
        ),
        (
            "update_session",
            json!({"task": "   "}),
            "the task description cannot be empty",
            2,
        ),
        ("update_session", json!({}), "nothing to update", 1),
        (
            "update_session",
            json!({"remaining": ["  "]}),
            "nothing to update",
            1,
        ),
        (
            "checkpoint",
            json!({"message": " \n "}),
            "the checkpoint message cannot be empty",
            2,
        ),
    ] {
        let (shown, structured) = c.call_err(tool, args.clone());
        assert!(shown.contains(says), "{tool} {args}: {shown}");
        assert_eq!(structured["exit_code"], code, "{tool} {args}");
        // The same words as the CLI's.
        let cli_args: Vec<String> = match (tool, args.as_object().unwrap().iter().next()) {
            ("checkpoint", _) => vec!["checkpoint".into(), " \n ".into()],
            (_, None) => vec!["update".into()],
            (_, Some((k, v))) => {
                let flag = match k.as_str() {
                    "done" => "--done",
                    "resolve" => "--resolve",
                    "task" => "--task",
                    _ => "--remaining",
                };
                let value = v
                    .as_array()
                    .map(|a| a[0].to_string().trim_matches('"').to_string())
                    .unwrap_or_else(|| v.as_str().unwrap().to_string());
                vec!["update".into(), flag.into(), value]
            }
        };
        let out = sb.cmd().args(&cli_args).output().unwrap();
        assert_eq!(out.status.code(), Some(code), "{cli_args:?}");
        let cli = String::from_utf8_lossy(&out.stderr);
        assert!(cli.contains(says), "{cli_args:?}: {cli}");
    }
    assert_eq!(sb.bytes(SESSION), before, "nothing was changed");
    // Still serving, and a good call works.
    c.call_ok("update_session", json!({"done": [1]}));
    assert_eq!(task(&sb)["completed"], json!(["One"]));
    c.finish();
}

/// Holds the session lock with flock(1), as another pas-agent would, until dropped.
struct LockHolder(Child);

impl LockHolder {
    fn hold(path: &Path) -> LockHolder {
        // Dropped (killed and waited for) on every path, a failed assertion included.
        let holder = LockHolder(
            std::process::Command::new("flock")
                .arg("--no-fork")
                .arg(path)
                .args(["sleep", "120"])
                .stdout(Stdio::null())
                .spawn()
                .expect("flock(1) from util-linux"),
        );
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let probe = std::process::Command::new("flock")
                .arg("-n")
                .arg(path)
                .arg("true")
                .status()
                .unwrap();
            if !probe.success() {
                return holder;
            }
            assert!(Instant::now() < deadline, "flock never took the lock");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for LockHolder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_locked_session_is_a_tool_error_and_the_file_is_kept() {
    let sb = Sandbox::with_session();
    let before = sb.bytes(SESSION);
    let mut c = Client::ready(&sb, &[("PAS_AGENT_LOCK_TIMEOUT_MS", "300")]);
    let holder = LockHolder::hold(&sb.path(".pas-agent/session.lock"));
    for (tool, args) in [
        ("update_session", json!({"remaining": ["Wait for it"]})),
        ("checkpoint", json!({"message": "while locked"})),
    ] {
        let (shown, structured) = c.call_err(tool, args);
        assert!(shown.contains("locked by another process"), "{shown}");
        assert!(shown.contains("session.lock"), "{shown}");
        assert_eq!(structured["exit_code"], 4);
        assert_eq!(sb.bytes(SESSION), before);
    }
    // Readers do not lock, as with the CLI.
    let read = c.call_ok("read_session", json!({}));
    assert!(text(&read).contains("Build the thing"));
    let r = c.request("resources/read", json!({"uri": "pas-agent://session"}));
    assert!(r["result"]["contents"][0]["text"].is_string(), "{r}");
    drop(holder);
    c.call_ok("update_session", json!({"remaining": ["Wait for it"]}));
    assert_eq!(task(&sb)["remaining"], json!(["Wait for it"]));
    c.finish();
}

#[test]
fn damaged_newer_and_missing_sessions_are_tool_errors_with_the_clis_message() {
    let sb = Sandbox::with_session();
    let good = sb.read(SESSION);
    let mut c = Client::ready(&sb, &[]);

    // Damaged: every tool says what the CLI says, exit 5, and the file is untouched.
    sb.write(SESSION, "{\"schema_version\": 1, \"task\": ");
    let damaged = sb.bytes(SESSION);
    let cli = sb.cmd().args(["update", "--next", "x"]).output().unwrap();
    assert_eq!(cli.status.code(), Some(5));
    let cli_first = String::from_utf8_lossy(&cli.stderr)
        .lines()
        .next()
        .unwrap()
        .trim_start_matches("error: ")
        .to_string();
    for (tool, args) in [
        ("read_session", json!({})),
        ("update_session", json!({"next": "x"})),
        ("checkpoint", json!({"message": "m"})),
    ] {
        let (shown, structured) = c.call_err(tool, args);
        assert!(
            shown.contains(&cli_first),
            "{tool}: {shown}\nCLI: {cli_first}"
        );
        assert!(shown.contains("the file was left unchanged"), "{shown}");
        assert_eq!(structured["exit_code"], 5);
    }
    let r = c.request("resources/read", json!({"uri": "pas-agent://session"}));
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("the file was left unchanged"),
        "{r}"
    );
    assert_eq!(r["error"]["data"]["exit_code"], 5);
    assert_eq!(sb.bytes(SESSION), damaged);

    // Newer: refused, untouched.
    let mut newer: Value = serde_json::from_str(&good).unwrap();
    newer["schema_version"] = json!(99);
    sb.write(SESSION, newer.to_string());
    let newer_bytes = sb.bytes(SESSION);
    let (shown, structured) = c.call_err("update_session", json!({"next": "x"}));
    assert!(shown.contains("schema version 99 is newer"), "{shown}");
    assert_eq!(structured["exit_code"], 5);
    assert_eq!(sb.bytes(SESSION), newer_bytes);

    // Repaired while the server runs: the next call sees it.
    sb.write(SESSION, &good);
    c.call_ok("update_session", json!({"next": "x"}));
    assert_eq!(task(&sb)["next_action"], "x");
    c.alive();
    c.finish();

    // Missing: the server starts anyway; every tool says there is no session (exit 3), until
    // `init` makes one.
    let plain = Sandbox::repo();
    let mut c = Client::ready(&plain, &[]);
    for (tool, args) in [
        ("read_session", json!({})),
        ("update_session", json!({"next": "x"})),
        ("checkpoint", json!({"message": "m"})),
    ] {
        let (shown, structured) = c.call_err(tool, args);
        assert!(shown.contains("no pas-agent session found"), "{shown}");
        assert_eq!(structured["exit_code"], 3);
    }
    let r = c.request("resources/read", json!({"uri": "pas-agent://session"}));
    assert_eq!(r["error"]["data"]["exit_code"], 3, "{r}");
    assert!(!plain.path(".pas-agent").exists(), "nothing was created");
    plain.ok(&["init", "--task", "Late start"]);
    let read = c.call_ok("read_session", json!({}));
    assert!(text(&read).contains("Late start"));
    c.finish();
}

#[test]
fn hostile_text_is_cleaned_in_answers_and_escaped_in_the_markdown() {
    let sb = Sandbox::with_session();
    let mut c = Client::ready(&sb, &[]);
    let hostile = "Fix \u{1b}[2Jthe\u{9b}31m bug \u{202e}evil @~/.ssh/id_rsa\n# Heading";
    c.call_ok("update_session", json!({"remaining": [hostile]}));
    // Stored as given (the record is the record) ...
    assert_eq!(task(&sb)["remaining"][0], hostile.trim());
    // ... answered without control characters (`finish` checks every line of stdout) ...
    let read = c.call_ok("read_session", json!({}));
    let shown = text(&read);
    assert!(shown.contains("Fix ?[2Jthe?31m bug ?evil"), "{shown}");
    assert!(
        !read["structuredContent"]["task"]["remaining"][0]
            .as_str()
            .unwrap()
            .contains('\u{1b}')
    );
    // ... and escaped in the Markdown as in the exported block: no import, no heading.
    let r = c.request("resources/read", json!({"uri": "pas-agent://session"}));
    let md = r["result"]["contents"][0]["text"].as_str().unwrap();
    assert!(md.contains("\\@\\~/.ssh/id\\_rsa"), "{md}");
    assert!(!md.contains("\n# Heading"), "{md}");
    c.finish();
}

#[test]
fn mcp_config_snippets_are_read_by_each_agent() {
    // Each agent's own `mcp list` reads the snippet and (Claude Code, Gemini CLI, OpenCode)
    // starts the server to check it.
    let sb = Sandbox::with_session();
    std::os::unix::fs::symlink(crate::common::bin(), sb.bin_dir.join("pas-agent")).unwrap();
    let snippet = |agent: &str| {
        let out = sb.cmd().args(["mcp", "--config", agent]).output().unwrap();
        assert!(out.status.success(), "{agent}");
        (
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    };
    let agent_out = |sb: &Sandbox, program: &str, args: &[&str]| {
        let out = agent_cmd(sb, program).args(args).output().unwrap();
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    };

    require_agent("claude", "@anthropic-ai/claude-code");
    let (claude, hint) = snippet("claude");
    assert!(hint.contains(".mcp.json"), "{hint}");
    serde_json::from_str::<Value>(&claude).expect("JSON");
    sb.write(".mcp.json", &claude);
    // A project's .mcp.json needs the user's approval; this is it.
    sb.write(
        ".claude/settings.local.json",
        r#"{"enabledMcpjsonServers":["pas-agent"]}"#,
    );
    let out = agent_out(&sb, "claude", &["mcp", "list"]);
    assert!(
        out.contains("pas-agent") && out.contains("Connected"),
        "{out}"
    );

    require_agent("codex", "@openai/codex");
    let (codex, hint) = snippet("codex");
    assert!(hint.contains("config.toml"), "{hint}");
    std::fs::create_dir_all(sb.home.join(".codex")).unwrap();
    std::fs::write(sb.home.join(".codex/config.toml"), &codex).unwrap();
    let out = agent_out(&sb, "codex", &["mcp", "get", "pas-agent"]);
    assert!(out.contains("command: pas-agent"), "{out}");
    assert!(out.contains("args: mcp"), "{out}");

    require_agent("gemini", "@google/gemini-cli");
    let (gemini, _) = snippet("gemini");
    sb.write(".gemini/settings.json", &gemini);
    let out = agent_out(&sb, "gemini", &["mcp", "list"]);
    assert!(
        out.contains("pas-agent") && out.contains("Connected"),
        "{out}"
    );

    require_agent("opencode", "opencode-ai");
    let (opencode, _) = snippet("opencode");
    sb.write("opencode.json", &opencode);
    let out = agent_out(&sb, "opencode", &["mcp", "list"]);
    assert!(
        out.contains("pas-agent") && out.contains("connected"),
        "{out}"
    );

    // Agents without a snippet are refused by the parser.
    let out = sb
        .cmd()
        .args(["mcp", "--config", "aider"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn run_mcp_refuses_agents_without_a_per_run_option() {
    let sb = Sandbox::with_session();
    let before = sb.bytes(SESSION);
    for (agent, says) in [
        ("gemini", "pas-agent mcp --config gemini"),
        ("opencode", "pas-agent mcp --config opencode"),
        ("aider", "register `pas-agent mcp`"),
    ] {
        // A stand-in executable: the refusal comes before anything starts.
        sb.stand_in(agent, "echo ran >> ran.txt");
        let out = sb.cmd().args(["run", "--mcp", agent]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{agent}: {err}");
        assert!(
            err.contains("no option to add an MCP server for one run"),
            "{err}"
        );
        assert!(err.contains(says), "{err}");
    }
    let out = sb
        .cmd()
        .args(["run", "--mcp", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--mcp needs a known agent"));
    assert!(!sb.path("ran.txt").exists());
    assert_eq!(sb.bytes(SESSION), before, "no run was recorded");
}

/// The item the mock's tool call asks the agent to record.
const ITEM: &str = "Verified the ledger migration through MCP";

#[test]
fn claude_code_records_progress_through_pas_agent_mcp() {
    require_agent("claude", "@anthropic-ai/claude-code");
    let mut sb = Sandbox::with_session();
    let mock = Mock::start();
    // The model calls the update tool from the list Claude sent, once, then replies.
    mock.script(|req, body| {
        if !req.path.starts_with("/v1/messages") || req.body.contains("\"tool_result\"") {
            return None;
        }
        let (_, name) = offered_tool(body, "update_session")?;
        Some(anthropic_tool_call(
            body,
            &name,
            &json!({"completed": [ITEM], "next": "Ship it"}),
        ))
    });
    sb.env.extend(mock.claude_env("sk-ant-test"));
    let out = sb.ok(&[
        "run",
        "--mcp",
        "claude",
        "--",
        "-p",
        "Record your progress",
        "--allowedTools",
        "mcp__pas-agent__update_session",
    ]);
    assert!(out.contains(REPLY), "{out}");
    let t = task(&sb);
    assert_eq!(t["completed"], json!([ITEM]), "{t}");
    assert_eq!(t["next_action"], "Ship it");
    // The tool's name came from the tool list Claude sent, and its answer went back.
    let requests = mock.model_requests("/v1/messages");
    assert!(
        requests
            .iter()
            .any(|r| r.body.contains("mcp__pas-agent__update_session")),
        "Claude offered the tool"
    );
    assert!(
        requests
            .iter()
            .any(|r| r.body.contains("tool_result") && r.body.contains("Session updated: 1 done")),
        "the tool's answer reached the model: {:?}",
        requests
            .iter()
            .filter(|r| r.body.contains("tool_result"))
            .map(|r| r
                .body
                .find("\"tool_result\"")
                .map(|i| r.body[i.saturating_sub(200)..(i + 1500).min(r.body.len())].to_string()))
            .collect::<Vec<_>>()
    );
    let run = crate::common::last_run(&sb);
    let argv: Vec<&str> = run["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert!(argv[1].starts_with("--mcp-config="), "{argv:?}");
}

#[test]
fn codex_records_progress_through_pas_agent_mcp() {
    require_agent("codex", "@openai/codex");
    let mut sb = Sandbox::with_session();
    let mock = Mock::start();
    mock.script(|req, body| {
        if !req.path.starts_with("/v1/responses") || req.body.contains("function_call_output") {
            return None;
        }
        let (namespace, name) = offered_tool(body, "update_session")?;
        Some(openai_tool_call(
            namespace.as_deref(),
            &name,
            &json!({"completed": [ITEM], "next": "Ship it"}),
        ))
    });
    sb.env.push(("OPENAI_API_KEY".into(), "sk-test".into()));
    let mut args = vec![
        "run".to_string(),
        "--mcp".into(),
        "codex".into(),
        "--".into(),
    ];
    args.extend(codex_args(&mock.base(), "Record your progress"));
    let out = sb.ok(&args);
    let t = task(&sb);
    let offered: Vec<String> = mock
        .model_requests("/v1/responses")
        .iter()
        .map(|r| {
            let body: Value = serde_json::from_str(&r.body).unwrap_or_default();
            body["tools"]
                .as_array()
                .map(|t| {
                    t.iter()
                        .map(|t| {
                            if t["type"] == "namespace" {
                                t.to_string().chars().take(700).collect()
                            } else {
                                format!("{}:{}", t["type"], t["name"])
                            }
                        })
                        .collect::<Vec<_>>()
                        .join(",")
                })
                .unwrap_or_default()
        })
        .collect();
    assert_eq!(
        t["completed"],
        json!([ITEM]),
        "{t}\n{out}\ntools offered: {offered:?}"
    );
    assert_eq!(t["next_action"], "Ship it");
    let requests = mock.model_requests("/v1/responses");
    assert!(
        requests
            .iter()
            .any(|r| r.body.contains("function_call_output")
                && r.body.contains("Session updated: 1 done")),
        "the tool's answer reached the model"
    );
}

// ---- The field, round 3: bounded and pageable, pinned projects, oversized messages ----

/// The largest answer `read_session` may give, text and structured content each (Claude Code
/// puts results over 50,000 characters in a file, and warns above 10,000 tokens).
const ANSWER_CHARS: usize = 25_000;

/// A session whose task lists hold `lists` (name, items), written as the file.
fn session_with_items(sb: &Sandbox, description: &str, lists: &[(&str, Vec<String>)]) {
    let mut s = sb.session();
    s["task"]["description"] = json!(description);
    for (name, items) in lists {
        s["task"][*name] = json!(items);
    }
    sb.write(SESSION, serde_json::to_vec_pretty(&s).unwrap());
}

/// Reads every page; returns each list's items as `(number, text)` in the order given, and
/// checks every answer's size.
fn read_all_pages(c: &mut Client) -> std::collections::BTreeMap<String, Vec<(u64, String)>> {
    let mut got: std::collections::BTreeMap<String, Vec<(u64, String)>> = Default::default();
    let mut page = 1u64;
    loop {
        let r = c.call_ok("read_session", json!({"page": page}));
        let shown = text(&r);
        let structured = r["structuredContent"].clone();
        assert!(
            shown.chars().count() <= ANSWER_CHARS,
            "page {page}: {} characters of text",
            shown.chars().count()
        );
        let json_len = structured.to_string().chars().count();
        assert!(
            json_len <= ANSWER_CHARS,
            "page {page}: {json_len} characters of structured content"
        );
        let first = &structured["page"]["first_numbers"];
        for list in [
            "completed",
            "remaining",
            "blockers",
            "decisions",
            "constraints",
            "discoveries",
        ] {
            let items = structured["task"][list]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let from = first[list].as_u64().unwrap_or(1);
            for (i, item) in items.iter().enumerate() {
                let n = from + i as u64;
                let item = item.as_str().unwrap().to_string();
                // The text numbers it the same way.
                let head: String = item.chars().take(30).collect();
                assert!(
                    shown.contains(&format!("{n:>2}. {head}")),
                    "page {page}: #{n} of {list}"
                );
                got.entry(list.to_string()).or_default().push((n, item));
            }
        }
        match structured["page"]["next"].as_u64() {
            Some(next) => {
                assert!(
                    shown.contains("Not all here") && shown.contains(&format!("\"page\": {next}")),
                    "{shown}"
                );
                assert!(
                    structured["left_out"]
                        .as_str()
                        .is_some_and(|l| l.contains("page"))
                );
                page = next;
            }
            None => break,
        }
    }
    got
}

#[test]
fn read_session_is_bounded_and_pages_through_every_kind_of_large_session() {
    let long = |n: usize, c: char| -> String { std::iter::repeat_n(c, n).collect() };
    type Lists = Vec<(&'static str, Vec<String>)>;
    let cases: Vec<(&str, String, Lists)> = vec![
        (
            "many small items",
            "Task".into(),
            vec![(
                "remaining",
                (0..3000)
                    .map(|i| format!("item {i} {}", long(190, 'r')))
                    .collect(),
            )],
        ),
        (
            "few huge items",
            long(30_000, 'T'),
            vec![(
                "decisions",
                (0..40)
                    .map(|i| format!("d{i} {}", long(9_000, 'd')))
                    .collect(),
            )],
        ),
        (
            "every list",
            "Task".into(),
            vec![
                (
                    "completed",
                    (0..400)
                        .map(|i| format!("c{i} {}", long(100, 'c')))
                        .collect(),
                ),
                (
                    "remaining",
                    (0..400)
                        .map(|i| format!("r{i} {}", long(100, 'r')))
                        .collect(),
                ),
                (
                    "blockers",
                    (0..400)
                        .map(|i| format!("b{i} {}", long(100, 'b')))
                        .collect(),
                ),
                (
                    "discoveries",
                    (0..400)
                        .map(|i| format!("v{i} {}", long(100, 'v')))
                        .collect(),
                ),
            ],
        ),
    ];
    for (what, description, lists) in cases {
        let sb = Sandbox::with_session();
        session_with_items(&sb, &description, &lists);
        let mut c = Client::ready(&sb, &[]);
        let got = read_all_pages(&mut c);
        for (list, items) in &lists {
            let seen = &got[*list];
            assert_eq!(seen.len(), items.len(), "{what}: {list}");
            for (i, (n, item)) in seen.iter().enumerate() {
                assert_eq!(*n, i as u64 + 1, "{what}: {list} numbered in order");
                let whole = &items[i];
                if whole.chars().count() <= 2000 {
                    assert_eq!(item, whole, "{what}");
                } else {
                    assert!(
                        item.contains("cut:") && whole.starts_with(item.split('…').next().unwrap()),
                        "{what}"
                    );
                }
            }
        }
        c.finish();
    }
    // A small session answers in one piece, as before.
    let sb = Sandbox::with_session();
    let mut c = Client::ready(&sb, &[]);
    let r = c.call_ok("read_session", json!({}));
    assert!(r["structuredContent"].get("page").is_none(), "{r}");
    assert!(!text(&r).contains("Not all here"));
    c.finish();
}

#[test]
fn read_session_refuses_unknown_arguments_and_pages_that_do_not_exist() {
    let sb = Sandbox::with_session();
    let mut c = Client::ready(&sb, &[]);
    for args in [
        json!({"pages": 2}),
        json!({"page": 0}),
        json!({"page": "2"}),
        json!({"page": 1.5}),
        json!({"verbose": true}),
    ] {
        let r = c.request(
            "tools/call",
            json!({"name": "read_session", "arguments": args}),
        );
        let refused = r.get("error").is_some() || r["result"]["isError"] == true;
        assert!(refused, "{args}: {r}");
    }
    let (shown, structured) = c.call_err("read_session", json!({"page": 2}));
    assert!(
        shown.contains("no page 2") && shown.contains("1 page"),
        "{shown}"
    );
    assert_eq!(structured["exit_code"], 2);
    c.alive();
    c.finish();
}

#[test]
fn a_server_started_outside_any_session_points_at_dash_c() {
    let sb = Sandbox::repo();
    let mut c = Client::ready(&sb, &[]);
    for (tool, args) in [
        ("read_session", json!({})),
        ("update_session", json!({"next": "x"})),
        ("checkpoint", json!({"message": "x"})),
    ] {
        let (shown, structured) = c.call_err(tool, args);
        assert!(
            shown.contains("pas-agent -C") && shown.contains("started in"),
            "{tool}: {shown}"
        );
        assert_eq!(structured["exit_code"], 3);
    }
    c.finish();
}

#[test]
fn mcp_config_with_dash_c_pins_the_project() {
    let sb = Sandbox::with_session();
    sb.write("sub/x.txt", "x\n");
    for agent in ["claude", "codex", "gemini", "opencode"] {
        for dir in [".", "sub"] {
            let out = sb.run_in(dir, &["-C", ".", "mcp", "--config", agent]);
            assert!(
                out.status.success(),
                "{agent}: {}",
                crate::common::stderr(&out)
            );
            let snippet = String::from_utf8_lossy(&out.stdout).into_owned();
            let root = sb.work.to_string_lossy().into_owned();
            assert!(
                snippet.contains("-C") && snippet.contains(&root),
                "{agent} in {dir}: {snippet}"
            );
            // Without -C: the directory the agent starts it in.
            let plain = sb.run_in(dir, &["mcp", "--config", agent]);
            assert!(
                !String::from_utf8_lossy(&plain.stdout).contains(&root),
                "{agent}"
            );
        }
    }
    // A directory without a session yet is pinned as it is.
    let other = Sandbox::plain();
    let out = other.ok(&["-C", ".", "mcp", "--config", "claude"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v["mcpServers"]["pas-agent"]["args"],
        json!(["-C", other.work.to_string_lossy(), "mcp"])
    );
}

#[test]
fn an_oversized_message_gets_an_error_with_its_id() {
    let sb = Sandbox::with_session();
    let mut c = Client::ready(&sb, &[]);
    let big = "x".repeat(16 * 1024 * 1024 + 10);
    for (id, line) in [
        (
            json!(901),
            format!(
                r#"{{"jsonrpc":"2.0","id":901,"method":"tools/call","params":{{"name":"update_session","arguments":{{"next":"{big}"}}}}}}"#
            ),
        ),
        (
            json!(902),
            format!(
                r#"{{"jsonrpc":"2.0","method":"tools/call","params":{{"name":"update_session","arguments":{{"next":"{big}"}}}},"id":902}}"#
            ),
        ),
        (
            json!("big-one"),
            format!(
                r#"{{"id":"big-one","jsonrpc":"2.0","method":"tools/call","params":{{"x":"{big}"}}}}"#
            ),
        ),
    ] {
        c.send_raw(&line);
        let deadline = Instant::now() + PATIENCE;
        let answer = loop {
            assert!(Instant::now() < deadline, "no answer to {id}");
            let m = c.recv();
            if m["id"] == id {
                break m;
            }
        };
        assert_eq!(answer["error"]["code"], -32600, "{answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains("16777216"), "{message}");
        c.alive();
    }
    // Without an id there is no one to answer; the server goes on.
    c.send_raw(&format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/x","params":{{"x":"{big}"}}}}"#
    ));
    c.alive();
    let r = c.call_ok("read_session", json!({}));
    assert!(text(&r).contains("Build the thing"));
    c.finish();
}
