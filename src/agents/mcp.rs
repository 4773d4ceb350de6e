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
    /// Where the agent keeps the servers it starts (`doctor` checks pas-agent's entry there).
    pub registrations: &'static [Registration],
}

/// A settings file where an agent keeps MCP servers, and the table in it that names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Registration {
    /// The file.
    pub file: Place,
    /// The keys from the file's top level to the table of servers by name; `{root}` stands for
    /// the project's root (Claude Code's servers of one project in `~/.claude.json`).
    pub table: &'static [&'static str],
    /// Whether the agent reads the file as JSON with `//` and `/* */` comments (Gemini CLI,
    /// Qwen Code, OpenCode, Kilo; checked: `qwen mcp list` 0.15.10, `opencode mcp list` 1.18.33,
    /// `kilo mcp list` 7.7.9), so that `doctor` reads such a file as the agent does.
    pub comments: bool,
}

/// Where a [`Registration`]'s file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// Relative to the project's root.
    Project(&'static str),
    /// Relative to the agent's home directory (`crate::agents::Agent::home`).
    AgentHome(&'static str),
    /// Relative to the user's home directory.
    UserHome(&'static str),
    /// Relative to the user's configuration directory (`$XDG_CONFIG_HOME`, `~/.config`).
    UserConfig(&'static str),
}

/// pas-agent's server as registered in one file: the file, the table, and the command line the
/// agent starts (program first), or why it cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registered {
    /// The settings file.
    pub file: std::path::PathBuf,
    /// Whether the entry is the project's (in its files, or its part of the user's), else the
    /// user's for every project.
    pub project: bool,
    /// The command line, or what is wrong with the entry or the file.
    pub command: Result<Vec<String>, String>,
}

/// Largest settings file read for a registration (Claude Code's `~/.claude.json` keeps every
/// project's state and grows).
const MAX_SETTINGS: u64 = 16 << 20;

impl Registration {
    /// The file, for project root `root` and the agent's home `home`; `None` when it cannot
    /// be named (no project here, no home).
    pub fn path(&self, root: Option<&Path>, home: Option<&Path>) -> Option<std::path::PathBuf> {
        match self.file {
            Place::Project(f) => Some(root?.join(f)),
            Place::AgentHome(f) => Some(home?.join(f)),
            Place::UserHome(f) => Some(super::store::home()?.join(f)),
            Place::UserConfig(f) => Some(
                super::store::env_dir("XDG_CONFIG_HOME")
                    .or_else(|| Some(super::store::home()?.join(".config")))?
                    .join(f),
            ),
        }
    }
}

impl Mcp {
    /// pas-agent's server in each of the agent's registration files that has one. Reads only;
    /// a file that is missing or has no pas-agent entry is left out, one that cannot be parsed
    /// is reported only when it mentions pas-agent.
    pub fn registered(&self, root: Option<&Path>, home: Option<&Path>) -> Vec<Registered> {
        let mut out = Vec::new();
        for reg in self.registrations {
            let Some(file) = reg.path(root, home) else {
                continue;
            };
            let Ok(Some(bytes)) = crate::fsutil::read_limited(&file, MAX_SETTINGS) else {
                continue;
            };
            let text = String::from_utf8_lossy(&bytes);
            if !text.contains(SERVER_NAME) {
                continue;
            }
            // A project's own entry, in its files or in the user's (Claude Code's local scope).
            let project = matches!(reg.file, Place::Project(_)) || reg.table.contains(&"{root}");
            let keys: Vec<String> = reg
                .table
                .iter()
                .map(|k| match (*k, root) {
                    ("{root}", Some(r)) => r.to_string_lossy().into_owned(),
                    (k, _) => k.to_string(),
                })
                .collect();
            let toml = file.extension().is_some_and(|e| e == "toml");
            let doc: Result<Value, String> = if toml {
                text.parse::<toml_edit::DocumentMut>()
                    .map_err(|e| format!("not valid TOML: {}", e.to_string().trim()))
                    .and_then(|d| {
                        serde_json::to_value(toml_to_json(d.as_item())).map_err(|e| e.to_string())
                    })
            } else if reg.comments {
                jsonc_parser::parse_to_serde_value(&text, &super::hooks::json_options(true))
                    .map_err(|e| format!("not valid JSON: {e}"))
            } else {
                serde_json::from_str(&text).map_err(|e| format!("not valid JSON: {e}"))
            };
            let doc = match doc {
                Ok(d) => d,
                Err(e) => {
                    out.push(Registered {
                        file,
                        project,
                        command: Err(e),
                    });
                    continue;
                }
            };
            let mut at = &doc;
            let mut found = true;
            for k in &keys {
                match at.get(k) {
                    Some(v) => at = v,
                    None => {
                        found = false;
                        break;
                    }
                }
            }
            let Some(server) = found.then(|| at.get(SERVER_NAME)).flatten() else {
                continue;
            };
            let strings = |v: Option<&Value>| -> Option<Vec<String>> {
                match v {
                    None => Some(Vec::new()),
                    Some(Value::Array(a)) => {
                        a.iter().map(|x| x.as_str().map(String::from)).collect()
                    }
                    Some(_) => None,
                }
            };
            let command = match server.get("command") {
                Some(Value::String(c)) => strings(server.get("args"))
                    .map(|args| std::iter::once(c.clone()).chain(args).collect())
                    .ok_or_else(|| "its `args` is not a list of strings".to_string()),
                Some(v @ Value::Array(_)) => strings(Some(v))
                    .filter(|l| !l.is_empty())
                    .ok_or_else(|| "its `command` is not a list of strings".to_string()),
                Some(_) => Err("its `command` is neither a string nor a list".into()),
                None => Err("it has no `command` (a server reached by URL?)".into()),
            };
            out.push(Registered {
                file,
                project,
                command,
            });
        }
        out
    }
}

/// A TOML item as JSON (only tables, arrays, strings, numbers and booleans matter here).
fn toml_to_json(item: &toml_edit::Item) -> Value {
    fn value(v: &toml_edit::Value) -> Value {
        match v {
            toml_edit::Value::String(s) => Value::from(s.value().as_str()),
            toml_edit::Value::Integer(i) => Value::from(*i.value()),
            toml_edit::Value::Float(f) => Value::from(*f.value()),
            toml_edit::Value::Boolean(b) => Value::from(*b.value()),
            toml_edit::Value::Datetime(d) => Value::from(d.value().to_string()),
            toml_edit::Value::Array(a) => Value::Array(a.iter().map(value).collect()),
            toml_edit::Value::InlineTable(t) => {
                Value::Object(t.iter().map(|(k, v)| (k.to_string(), value(v))).collect())
            }
        }
    }
    match item {
        toml_edit::Item::None => Value::Null,
        toml_edit::Item::Value(v) => value(v),
        toml_edit::Item::Table(t) => Value::Object(
            t.iter()
                .map(|(k, v)| (k.to_string(), toml_to_json(v)))
                .collect(),
        ),
        toml_edit::Item::ArrayOfTables(a) => Value::Array(
            a.iter()
                .map(|t| toml_to_json(&toml_edit::Item::Table(t.clone())))
                .collect(),
        ),
    }
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
