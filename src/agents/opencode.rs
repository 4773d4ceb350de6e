//! OpenCode (`opencode`): everything pas-agent knows about it.
//!
//! - **Context**: `AGENTS.md` found walking up from the working directory, else `CLAUDE.md`
//!   (opencode.ai/docs/rules; checked: opencode 1.18.33 `run`, each file's text looked for in
//!   the request to a mock model: `CLAUDE.md` only when there is no `AGENTS.md`), and the
//!   files named in the configuration's `instructions`, which merges the JSON object in
//!   `OPENCODE_CONFIG_CONTENT` with the user's own (checked: both lists' files reached the
//!   model). Where `AGENTS.md` is tracked by git, `run` names a file of its own there
//!   ([`Private::ConfigEnv`]).
//! - **Launch**: `-s/--session <id>` continues a session, for the TUI and for `opencode run`
//!   (opencode.ai/docs/cli; checked: opencode 1.18.33 `--help`, `run --help`).
//! - **Store**: an SQLite database (`~/.local/share/opencode/opencode.db` in 1.x) whose tables
//!   are not a public interface; OpenCode's own commands are: `opencode session list --format
//!   json` prints `[{"id","title","updated","created","projectId","directory"}]`, times in ms,
//!   and `opencode export <id>` one JSON object, `{"info":{…},"messages":[{"info":{"role":
//!   "user"|"assistant","time":{"created":<ms>},"modelID","tokens":{"input","output","cache":
//!   {"read","write"}}},"parts":[{"type":"text","text"}…]}…]}` (checked: opencode 1.18.33 `run`
//!   and `run --session` against a mock model).
//! - **Transcript**: messages created after `since`: a user message's text parts are a
//!   prompt, an assistant message's text parts an answer (with its model and tokens), and its
//!   `tool` parts the files its tools wrote and the commands they ran (see `tool_part`). The
//!   commands run in the run's directory with a timeout, and at most
//!   [`crate::limits::TRANSCRIPT`] bytes of their output are read.
//! - **MCP**: `mcp` in `opencode.json` (opencode.ai/docs/mcp-servers); no option for one run.

use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::args::ArgShape;
use super::mcp::{Mcp, Place, Registration, Shape};
use super::store::{Candidate, Conversation, Query, Store, run_program, same_dir};
use super::words::Collector;
use super::{Agent, BASE, IdShape, Private, Resume, SessionId, Straight};
use crate::model::Transcript;

/// OpenCode's row.
pub const AGENT: Agent = Agent {
    id: "opencode",
    name: "OpenCode",
    executables: &["opencode"],
    context_file: "AGENTS.md",
    reads_first: &["AGENTS.md", "CLAUDE.md"],
    private: Private::ConfigEnv {
        var: "OPENCODE_CONFIG_CONTENT",
        key: "instructions",
    },
    resume: Some(Resume {
        args: &["--session", "{id}"],
        subcommands: &["run"],
        after_subcommand: &[],
    }),
    session_id: SessionId::Discover,
    // Ids: `ses_` then 12 hex digits and 14 base-62 characters (checked: opencode 1.18.33,
    // `Identifier.create` in its bundle).
    id_shape: IdShape::PrefixedAlnum {
        prefix: "ses_",
        len: 26,
    },
    straight: Straight {
        // checked: opencode 1.18.33 `--help`. Not straight: the TUI (`[project]`), `run`,
        // `attach`, `acp`, `serve`, `web` (they host sessions) and `pr` (starts one).
        subcommands: &[
            "completion",
            "mcp",
            "debug",
            "providers",
            "auth",
            "agent",
            "upgrade",
            "uninstall",
            "models",
            "stats",
            "export",
            "import",
            "github",
            "session",
            "plugin",
            "plug",
            "db",
        ],
        flags: &["-v", "--version", "-h", "--help"],
    },
    store: Some(&Listed {
        program: "opencode",
        unquote: true,
    }),
    mcp: Some(Mcp {
        shape: Shape::OpenCodeJson {
            schema: "https://opencode.ai/config.json",
        },
        hint: "# OpenCode: merge into opencode.json at the project root or ~/.config/opencode/opencode.json",
        one_run: None,
        // opencode.ai/docs/mcp-servers: `mcp.<name>` in opencode.json (project) or
        // ~/.config/opencode/opencode.json.
        registrations: &[
            Registration {
                file: Place::Project("opencode.json"),
                table: &["mcp"],
                comments: true,
            },
            Registration {
                file: Place::UserConfig("opencode/opencode.json"),
                table: &["mcp"],
                comments: true,
            },
        ],
    }),
    // Not checked: the default SIGINT (docs/freeze.md).
    // checked: opencode 1.18.33 `--help`, `run --help` (`run [message..]` is the one-shot
    // mode; the TUI's positional is a project directory, kept).
    arg_shape: ArgShape {
        known: true,
        value_flags: &[
            "--log-level",
            "--port",
            "--hostname",
            "--mdns-domain",
            "--cors",
            "-m",
            "--model",
            "-s",
            "--session",
            "--prompt",
            "--agent",
            "--replay-limit",
            "--command",
            "--format",
            "--title",
            "--attach",
            "--password",
            "-u",
            "--username",
            "--dir",
            "--variant",
        ],
        optional_flags: &[],
        many_flags: &["-f", "--file"],
        one_shot: &[
            "run",
            "--command",
            "--format",
            "--title",
            "--attach",
            "--password",
            "-u",
            "--username",
            "--share",
            "--thinking",
            "-i",
            "--interactive",
        ],
        prompt_flags: &["--prompt"],
        session_flags: &["-s", "--session", "-c", "--continue", "--fork"],
        positional_prompts: false,
    },
    ..BASE
};

/// How long listing sessions may take: it starts the agent's whole runtime, about 5 s of
/// CPU for Kilo 7.7.9, and more than a minute of waiting on a loaded machine.
const LIST_TIMEOUT: Duration = Duration::from_secs(90);
/// How long an export may take (it starts the agent's whole runtime too).
pub const EXPORT_TIMEOUT: Duration = Duration::from_secs(90);

/// A store read through the agent's own `session list` and `export` commands: OpenCode's,
/// and those of its forks.
pub struct Listed {
    /// The executable looked for on `PATH` when the launcher has not resolved one.
    pub program: &'static str,
    /// Whether a prompt given as one JSON string literal (`"fix it"`) is that string:
    /// `opencode run <message>` (and Kilo's) stores and sends its message quoted so (checked:
    /// opencode 1.18.33, kilo 7.7.9), though the quotes were never typed.
    pub unquote: bool,
}

impl Listed {
    fn program(&self, given: Option<&Path>) -> Option<PathBuf> {
        given
            .map(Path::to_path_buf)
            .or_else(|| which::which(self.program).ok())
    }
}

impl Store for Listed {
    fn dir(&self) -> Option<PathBuf> {
        None
    }

    fn checked_after_resume(&self) -> bool {
        false
    }

    fn sessions(&self, q: &Query<'_>) -> Vec<Candidate> {
        let Some(program) = self.program(q.program) else {
            return Vec::new();
        };
        let Ok(out) = run_program(
            &program,
            &["session", "list", "--format", "json"],
            q.cwd,
            LIST_TIMEOUT,
            crate::limits::TRANSCRIPT.bytes,
        ) else {
            return Vec::new();
        };
        let Ok(sessions) = serde_json::from_slice::<Value>(&out) else {
            return Vec::new();
        };
        sessions
            .as_array()
            .into_iter()
            .flatten()
            .filter(|s| s["directory"].as_str().is_some_and(|d| same_dir(d, q.cwd)))
            .filter_map(|s| {
                let at = DateTime::<Utc>::from_timestamp_millis(s["created"].as_i64()?)?;
                Some(Candidate {
                    id: s["id"].as_str()?.to_string(),
                    at,
                    file: None,
                })
            })
            .filter(|c| q.inside(c.at))
            .collect()
    }

    /// From one `session list`: each session of `dir` with its `updated` time and, for its
    /// first prompt, its `title` (OpenCode names a session after its first message; exporting
    /// every session for the message itself takes seconds each).
    fn conversations(&self, dir: &Path, program: Option<&Path>) -> Vec<Conversation> {
        let Some(program) = self.program(program) else {
            return Vec::new();
        };
        let Ok(out) = run_program(
            &program,
            &["session", "list", "--format", "json"],
            dir,
            LIST_TIMEOUT,
            crate::limits::TRANSCRIPT.bytes,
        ) else {
            return Vec::new();
        };
        let Ok(sessions) = serde_json::from_slice::<Value>(&out) else {
            return Vec::new();
        };
        sessions
            .as_array()
            .into_iter()
            .flatten()
            .filter(|s| s["directory"].as_str().is_some_and(|d| same_dir(d, dir)))
            .filter_map(|s| {
                let at = |k: &str| DateTime::<Utc>::from_timestamp_millis(s[k].as_i64()?);
                Some(Conversation {
                    id: s["id"].as_str()?.to_string(),
                    updated: at("updated").or_else(|| at("created"))?,
                    first_prompt: s["title"].as_str().map(str::to_string),
                    cwd: dir.to_path_buf(),
                    file: None,
                })
            })
            .collect()
    }

    fn transcript(
        &self,
        id: &str,
        cwd: &Path,
        since: DateTime<Utc>,
        _hint: Option<&Path>,
    ) -> Transcript {
        let Some(program) = self.program(None) else {
            return Transcript::missing(format!(
                "{} is not on PATH, so its session could not be exported",
                self.program
            ));
        };
        read(&program, id, cwd, since, self.unquote)
    }
}

/// The words of session `id` after `since`. `hint` is not used: OpenCode has no session file.
fn read(program: &Path, id: &str, cwd: &Path, since: DateTime<Utc>, unquote: bool) -> Transcript {
    if !id.starts_with("ses_") || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Transcript::missing(format!("{id} is not a session id of {}", program.display()));
    }
    let name = program
        .file_name()
        .map_or_else(|| program.to_string_lossy(), |n| n.to_string_lossy());
    let text = match run_program(
        program,
        &["export", id],
        cwd,
        EXPORT_TIMEOUT,
        crate::limits::TRANSCRIPT.bytes,
    ) {
        Ok(out) => String::from_utf8_lossy(&out).into_owned(),
        Err(why) => return Transcript::missing(why),
    };
    let start = text.find('{').unwrap_or(0);
    let Ok(v) = serde_json::from_str::<Value>(&text[start..]) else {
        return Transcript::missing(format!(
            "`{name} export {id}` printed no session this version can read"
        ));
    };
    let Some(messages) = v["messages"].as_array() else {
        return Transcript::missing(format!(
            "`{name} export {id}` printed a layout this version does not know (no messages)"
        ));
    };
    parse(messages, since, unquote).finish(Path::new(&format!("{name} export {id}")))
}

/// The text parts of a message that are its own words: not `synthetic` ones (text the agent
/// added, such as a file's contents for an `@` mention) nor `ignored` ones.
fn own_text(parts: &Value) -> String {
    parts
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["type"] == "text" && p["synthetic"] != true && p["ignored"] != true)
        .filter_map(|p| p["text"].as_str())
        .filter(|t| !t.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// The words of an export's messages created after `since`: a user message's own text parts
/// are a prompt; an assistant message's give the answer, its model and tokens, its completed
/// `tool` parts the files written and the commands run ([`tool_part`]), and its `patch` parts
/// (`files`) the files a step changed. A summary
/// (`info.summary` true, written when the conversation is compacted) is no answer.
pub(crate) fn parse(messages: &[Value], since: DateTime<Utc>, unquote: bool) -> Collector {
    let mut c = Collector::default();
    for m in messages {
        let info = &m["info"];
        let created = info["time"]["created"]
            .as_i64()
            .and_then(DateTime::<Utc>::from_timestamp_millis);
        if created.is_none_or(|t| t < since) {
            continue;
        }
        let text = own_text(&m["parts"]);
        match info["role"].as_str().unwrap_or_default() {
            "user" => {
                let quoted = unquote
                    .then(|| serde_json::from_str::<String>(text.trim()).ok())
                    .flatten();
                c.prompt(quoted.as_deref().unwrap_or(&text));
            }
            "assistant" => {
                if info["summary"] == true {
                    continue;
                }
                if let Some(model) = info["modelID"].as_str() {
                    c.model(model);
                }
                let t = &info["tokens"];
                if t.is_object() {
                    c.tokens(
                        t["input"].as_u64(),
                        t["output"].as_u64(),
                        t["cache"]["read"].as_u64(),
                        t["cache"]["write"].as_u64(),
                    );
                }
                for part in m["parts"].as_array().into_iter().flatten() {
                    match part["type"].as_str() {
                        Some("tool") => tool_part(part, &mut c),
                        // The files a step changed, from OpenCode's snapshot of the work tree.
                        Some("patch") => {
                            for f in part["files"].as_array().into_iter().flatten() {
                                c.edited(f.as_str().unwrap_or_default());
                            }
                        }
                        _ => {}
                    }
                }
                if let Some(error) = info["error"]["data"]["message"].as_str() {
                    c.error(error);
                }
                c.answer(&text);
            }
            _ => {}
        }
    }
    c
}

/// A completed tool call of an assistant message, `{"type": "tool", "tool", "state":
/// {"status", "input", "metadata"}}`: the files `edit` and `write` wrote (`input.filePath`)
/// and those an `apply_patch` names (`*** Add File:`, `*** Update File:`, `*** Delete File:`,
/// `*** Move to:` lines of `input.patchText`), and the commands `bash` ran (`input.command`)
/// with their exit code (`metadata.exit`) (checked: the tools of opencode 1.18.33's bundle).
fn tool_part(part: &Value, c: &mut Collector) {
    let state = &part["state"];
    if state["status"] != "completed" {
        return;
    }
    let input = &state["input"];
    match part["tool"].as_str().unwrap_or_default() {
        "edit" | "write" => c.edited(input["filePath"].as_str().unwrap_or_default()),
        "apply_patch" => {
            for line in input["patchText"].as_str().unwrap_or_default().lines() {
                let path = [
                    "*** Add File: ",
                    "*** Update File: ",
                    "*** Delete File: ",
                    "*** Move to: ",
                ]
                .iter()
                .find_map(|h| line.strip_prefix(h));
                if let Some(path) = path {
                    c.edited(path.trim());
                }
            }
        }
        "bash" => c.ran(
            input["command"].as_str().unwrap_or_default(),
            state["metadata"]["exit"].as_i64(),
        ),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(text: &str) -> Vec<Value> {
        let v: Value = serde_json::from_str(text).unwrap();
        v["messages"].as_array().unwrap().clone()
    }

    fn since(t: &str) -> DateTime<Utc> {
        t.parse().unwrap()
    }

    /// Kilo 7.7.9's exports (OpenCode's layout): a write, then a failing command.
    #[test]
    fn kilo_exports_give_prompts_answers_edits_and_commands() {
        let m = messages(include_str!(
            "../../tests/fixtures/agents/kilo/write.export.json"
        ));
        let t = parse(&m, since("2026-01-01T00:00:00Z"), true).finish(Path::new("/k"));
        assert_eq!(t.prompts, ["please WRITEFILE for the fixture"]);
        assert_eq!(
            t.last_answer.as_deref(),
            Some("Mock answer #23 after tool result")
        );
        assert_eq!(t.model.as_deref(), Some("mock-model"));
        assert!(
            t.edits.iter().any(|e| e.ends_with("probe.txt")),
            "{:?}",
            t.edits
        );
        let m = messages(include_str!(
            "../../tests/fixtures/agents/kilo/runcmd.export.json"
        ));
        let t = parse(&m, since("2026-01-01T00:00:00Z"), true).finish(Path::new("/k"));
        assert_eq!(
            (t.commands[0].command.as_str(), t.commands[0].exit_code),
            ("ls /nonexistent", Some(2))
        );
        // Without unquoting, the text is kept as it is.
        let t = parse(&m, since("2026-01-01T00:00:00Z"), false).finish(Path::new("/k"));
        assert_eq!(t.prompts, ["\"please RUNCMD for the fixture\""]);
    }

    #[test]
    fn synthetic_parts_and_summaries_are_not_words() {
        let m: Vec<Value> = serde_json::from_value(serde_json::json!([
            {"info": {"role": "user", "time": {"created": 1_800_000_000_000_i64}},
             "parts": [{"type": "text", "text": "Fix @a.rs"},
                       {"type": "text", "synthetic": true, "text": "Called the Read tool: fn main"}]},
            {"info": {"role": "assistant", "time": {"created": 1_800_000_001_000_i64}},
             "parts": [{"type": "text", "text": "Fixed."}]},
            {"info": {"role": "assistant", "summary": true, "time": {"created": 1_800_000_002_000_i64}},
             "parts": [{"type": "text", "text": "Summary of the conversation"}]}
        ]))
        .unwrap();
        let t = parse(&m, since("2026-01-01T00:00:00Z"), false).finish(Path::new("/o"));
        assert_eq!(t.prompts, ["Fix @a.rs"]);
        assert_eq!(t.last_answer.as_deref(), Some("Fixed."));
    }

    #[test]
    fn the_files_its_tools_wrote_and_the_commands_they_ran() {
        let tool = |tool: &str, status: &str, input: Value, metadata: Value| {
            serde_json::json!({"type": "tool", "tool": tool,
                "state": {"status": status, "input": input, "metadata": metadata}})
        };
        let parts = [
            tool(
                "write",
                "completed",
                serde_json::json!({"filePath": "/w/a.rs", "content": "x"}),
                Value::Null,
            ),
            tool(
                "edit",
                "error",
                serde_json::json!({"filePath": "/w/refused.rs"}),
                Value::Null,
            ),
            tool(
                "apply_patch",
                "completed",
                serde_json::json!({"patchText": "*** Begin Patch\n*** Update File: /w/b.rs\n@@\n-x\n+y\n*** Add File: /w/c.rs\n+z\n*** End Patch"}),
                Value::Null,
            ),
            tool(
                "bash",
                "completed",
                serde_json::json!({"command": "cargo test"}),
                serde_json::json!({"exit": 101}),
            ),
            tool(
                "read",
                "completed",
                serde_json::json!({"filePath": "/w/d.rs"}),
                Value::Null,
            ),
        ];
        let mut c = Collector::default();
        for p in &parts {
            tool_part(p, &mut c);
        }
        let t = c.finish(Path::new("/x"));
        assert_eq!(t.edits, ["/w/a.rs", "/w/b.rs", "/w/c.rs"]);
        assert_eq!(t.commands.len(), 1);
        assert_eq!(t.commands[0].exit_code, Some(101));
    }
}
