//! How an agent registers an MCP server ([`Mcp`], one per agent that is an MCP client): the
//! shape of its settings (`pas-agent mcp --config AGENT` prints it) and, where it has one, the
//! option that adds a server for one run (`pas-agent run --mcp AGENT`). The shapes are the
//! agents' own; the agent modules cite where each is documented.

use std::ffi::OsString;
use std::path::Path;

use serde_json::{Value, json};

/// The server's name: agents show its tools as `mcp__pas-agent__update_session` (Claude Code,
/// Codex) or under this name.
pub const SERVER_NAME: &str = "pas-agent";

/// One agent's MCP registration.
#[derive(Debug, Clone, Copy)]
pub struct Mcp {
    /// The shape of the agent's MCP settings.
    pub shape: Shape,
    /// Where the snippet goes, one line for the user (printed as a `#` comment).
    pub hint: &'static str,
    /// The agent's option that adds a server for one run, if it has one.
    pub one_run: Option<OneRun>,
}

/// The shape of an agent's MCP settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `{"mcpServers": {"pas-agent": {"type": "stdio", "command", "args"}}}` (Claude Code's
    /// `.mcp.json`).
    ClaudeJson,
    /// `{"mcpServers": {"pas-agent": {"command", "args"}}}` (Gemini CLI's settings).
    GeminiJson,
    /// `{"$schema": schema, "mcp": {"pas-agent": {"type": "local", "command": [..], "enabled":
    /// true}}}` (OpenCode's `opencode.json`, Kilo's `kilo.json`).
    OpenCodeJson {
        /// The agent's configuration schema URL.
        schema: &'static str,
    },
    /// `[mcp_servers.pas-agent]` with `command` and `args` (Codex's `config.toml`).
    CodexToml,
    /// `mcpServers:` as a YAML list of `{name, command, args}` (the Continue CLI's
    /// `config.yaml`).
    ContinueYaml,
}

/// An agent's option that adds an MCP server for one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OneRun {
    /// `<flag>=<the agent's own JSON document ([`Mcp::shape`])>`, as one argument (the `=`
    /// form keeps the option from taking the words after it): Claude Code's `--mcp-config=`.
    JsonFlag {
        /// The flag (`--mcp-config`).
        flag: &'static str,
    },
    /// `-c mcp_servers.pas-agent.command=… -c mcp_servers.pas-agent.args=…`: Codex's
    /// configuration overrides.
    CodexOverrides,
}

impl Mcp {
    /// The snippet for the agent's settings that starts `pas-agent mcp` (found on `PATH`, in
    /// the directory the agent starts it in; with `root`, `pas-agent -C <root> mcp`, which
    /// serves that project wherever the agent starts it).
    ///
    /// Errors: `root` is not valid UTF-8 (the agents read their settings as text).
    pub fn snippet(&self, root: Option<&Path>) -> Result<String, String> {
        let mut args = Vec::new();
        if let Some(root) = root {
            args.push("-C".to_string());
            args.push(utf8(root)?.to_string());
        }
        args.push("mcp".into());
        Ok(render(self.shape, "pas-agent", &args))
    }

    /// The arguments that make the agent use `pas-agent mcp` for one run, serving the session
    /// at `root`, started as `exe` (this binary). They go before the agent's other arguments.
    /// `None` when the agent has no such option.
    ///
    /// Errors: a path is not valid UTF-8.
    pub fn run_args(&self, exe: &Path, root: &Path) -> Option<Result<Vec<OsString>, String>> {
        let one_run = self.one_run?;
        Some((|| {
            let exe = utf8(exe)?;
            let server_args = json!(["-C", utf8(root)?, "mcp"]);
            Ok(match one_run {
                OneRun::JsonFlag { flag } => {
                    let args = ["-C".to_string(), utf8(root)?.to_string(), "mcp".into()];
                    let config = document(self.shape, exe, &args);
                    vec![format!("{flag}={config}").into()]
                }
                OneRun::CodexOverrides => vec![
                    "-c".into(),
                    // A JSON string is a TOML basic string: the same escapes.
                    format!("mcp_servers.{SERVER_NAME}.command={}", json!(exe)).into(),
                    "-c".into(),
                    format!("mcp_servers.{SERVER_NAME}.args={server_args}").into(),
                ],
            })
        })())
    }
}

fn utf8(p: &Path) -> Result<&str, String> {
    p.to_str().ok_or_else(|| {
        format!(
            "{}: the path is not valid UTF-8, and the agent reads its MCP settings as text",
            crate::term::clean(&p.to_string_lossy())
        )
    })
}

/// `shape`'s JSON document for a server started as `command args…`, on one line; `Null` for
/// the shapes that are not JSON.
fn document(shape: Shape, command: &str, args: &[String]) -> Value {
    match shape {
        Shape::ClaudeJson => {
            json!({"mcpServers": {SERVER_NAME: {"type": "stdio", "command": command, "args": args}}})
        }
        Shape::GeminiJson => {
            json!({"mcpServers": {SERVER_NAME: {"command": command, "args": args}}})
        }
        Shape::OpenCodeJson { schema } => {
            let mut line = vec![command.to_string()];
            line.extend(args.iter().cloned());
            json!({
                "$schema": schema,
                "mcp": {SERVER_NAME: {"type": "local", "command": line, "enabled": true}}
            })
        }
        Shape::CodexToml | Shape::ContinueYaml => Value::Null,
    }
}

/// `shape`'s document for a server started as `command args…`.
fn render(shape: Shape, command: &str, args: &[String]) -> String {
    match shape {
        Shape::CodexToml => format!(
            "[mcp_servers.{SERVER_NAME}]\ncommand = {}\nargs = {}\n",
            json!(command),
            json!(args)
        ),
        // A JSON string is a valid YAML scalar: the same escapes, no quoting rules to get wrong.
        Shape::ContinueYaml => {
            let mut out = format!(
                "mcpServers:\n  - name: {SERVER_NAME}\n    command: {}\n    args:\n",
                json!(command)
            );
            for a in args {
                out.push_str(&format!("      - {}\n", json!(a)));
            }
            out
        }
        _ => {
            serde_json::to_string_pretty(&document(shape, command, args)).unwrap_or_default() + "\n"
        }
    }
}
