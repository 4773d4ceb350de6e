//! GitHub Copilot CLI (`copilot`, npm `@github/copilot`): everything pas-agent knows about it.
//!
//! - **Context**: `AGENTS.md`, and also `CLAUDE.md`, `GEMINI.md`,
//!   `.github/copilot-instructions.md` and `.github/instructions/*.instructions.md`, each sent
//!   to the model (files with the same text once); `@path` imports are followed
//!   (docs.github.com/en/copilot/how-tos/copilot-cli/customize-copilot/add-custom-instructions;
//!   checked: copilot 1.0.102, markers of each file looked for in the model's request).
//! - **Launch**: `--session-id <uuid>` sets the id of a new session (and resumes an existing
//!   one), `-r/--resume[=<id>]`, `--continue` (checked: copilot 1.0.102 `--help`, and the
//!   store after each). Subcommands take `--session-id` and ignore it, but `copilot init` starts
//!   a session of its own with another id, and `copilot app` leaves a session directory
//!   without events: the id is recorded only when the store holds it.
//! - **Store**: `$COPILOT_HOME` (default `~/.copilot`) `/session-state/<id>/events.jsonl`, one
//!   event per line, `{"type","data","id","timestamp","parentId"}`; the first is
//!   `session.start` with `data.sessionId`, `data.startTime` and `data.context.cwd`; a resume
//!   appends `session.resume` to the same file. A session exists once `events.jsonl` does
//!   (`--resume` refuses a directory without it) (checked: copilot 1.0.102, one-shots, the
//!   interactive mode, resumes, failed starts).
//! - **Transcript** events read (after `since`, by their `timestamp`):
//!   - `user.message`: `data.content` is the prompt as typed (what the model got, with the
//!     date and hook context, is `data.transformedContent`, not read); a start hook's context
//!     and the context files are never `user.message` events;
//!   - `assistant.message`: `data.content` (empty when the message only calls tools) and
//!     `data.model`; the answer is the last message with text that calls no tool, else the
//!     last with text;
//!   - `session.usage_record`: `data.usage.{inputTokens,outputTokens,cacheReadTokens,
//!     cacheWriteTokens}` of one model call;
//!   - `tool.execution_start` (`toolName`, `arguments.command` for `bash`) and
//!     `tool.execution_complete` (`fileEdits[].path`, `shellExecution.exitCode`): the files
//!     its tools wrote and the commands they ran;
//!   - `session.error`: `data.message`, why an answer is missing.
//! - **Hooks**: `.github/hooks/<name>.json` (a file pas-agent owns: `pas-agent.json`) and
//!   `$COPILOT_HOME/hooks/<name>.json` for the user, `{"version":1,"hooks":{"sessionStart":
//!   [{"type":"command","bash","timeoutSec"}],"agentStop":[…],"sessionEnd":[…]}}`; payloads in
//!   camelCase (`sessionId`, `cwd`; `agentStop` adds `transcriptPath` but no message); only a
//!   top-level `{"additionalContext"}` printed by a start hook reaches the model. A
//!   repository's hooks run only in a trusted folder; the user's always. Copilot also runs the
//!   hooks in `.claude/settings.json`, with `COPILOT_PROJECT_DIR` set, as it does for its own
//!   (docs.github.com/en/copilot/reference/hooks-reference; checked: copilot 1.0.102, payloads
//!   logged, the context found in the model's request).
//! - **MCP**: `.mcp.json` at the project root (used in a trusted folder), or
//!   `$COPILOT_HOME/mcp-config.json`, `{"mcpServers":…}`; `--additional-mcp-config <json>`
//!   for one run (checked: copilot 1.0.102, pas-agent's tools offered to the model).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use super::hooks::{ContextOutput, Event, Format, Hooks, Payload, Unit};
use super::mcp::{Mcp, OneRun, Place, Registration, Shape};
use super::store::{Candidate, Home, Query, Store, VarIs, first_line, same_dir, subdirs};
use super::words::{Collector, json_lines, session_file, time_of};
use super::{Agent, BASE, IdShape, RESUME_FLAG, SessionId, Straight};
use crate::model::Transcript;

/// `$COPILOT_HOME`, default `~/.copilot`.
pub const HOME: Home = Home {
    var: Some("COPILOT_HOME"),
    var_is: VarIs::Dir,
    dir: ".copilot",
};

/// The hook file pas-agent owns (`.github/hooks/pas-agent.json`): Copilot's own event names,
/// its `bash` command field and `timeoutSec` in seconds.
const HOOK_FILE: &str = r#"{
  "version": 1,
  "hooks": {
    "sessionStart": [
      {
        "type": "command",
        "bash": {command:session-start},
        "timeoutSec": 30
      }
    ],
    "agentStop": [
      {
        "type": "command",
        "bash": {command:stop},
        "timeoutSec": 30
      }
    ],
    "sessionEnd": [
      {
        "type": "command",
        "bash": {command:session-end},
        "timeoutSec": 30
      }
    ]
  }
}
"#;

/// GitHub Copilot CLI's row.
pub const AGENT: Agent = Agent {
    id: "copilot",
    name: "GitHub Copilot CLI",
    aliases: &["copilot-cli"],
    executables: &["copilot"],
    context_file: "AGENTS.md",
    also_reads: &[
        "CLAUDE.md",
        "GEMINI.md",
        ".github/copilot-instructions.md",
        ".github/instructions/*.instructions.md",
    ],
    at_imports: true,
    resume: Some(RESUME_FLAG),
    session_id: SessionId::Choose {
        flag: "--session-id",
        unless: &["--session-id", "-r", "--resume", "--continue", "--connect"],
    },
    id_shape: IdShape::Uuid,
    straight: Straight {
        // checked: copilot 1.0.102 `--help` (Commands), each run with a fresh store: none made
        // a session. Not straight: `init` (a session of Copilot's own) and `workflow`.
        subcommands: &[
            "login",
            "help",
            "config",
            "update",
            "version",
            "sessions",
            "memories",
            "plugin",
            "mcp",
            "skill",
            "instruction",
            "lsp",
            "sandbox",
            "completion",
            "app",
        ],
        flags: &["-v", "--version", "-h", "--help"],
    },
    home: Some(HOME),
    store: Some(&SessionState),
    hooks: Some(Hooks {
        key: "copilot",
        project_file: ".github/hooks/pas-agent.json",
        user_file: "hooks/pas-agent.json",
        format: Format::Owned {
            template: HOOK_FILE,
        },
        events: &[
            ("sessionStart", Event::SessionStart),
            ("agentStop", Event::Stop),
            ("sessionEnd", Event::SessionEnd),
        ],
        timeout: 30,
        end_timeout: None,
        unit: Unit::Seconds,
        payload: Payload {
            session_id: "sessionId",
            transcript: "transcriptPath",
            cwd: "cwd",
            last_message: "",
        },
        context: ContextOutput::TopLevel,
        // Not checked: assumed, so that a stale block it read is never left uncontradicted.
        reads_files_first: true,
        caveat: Some(
            "Copilot runs a repository's hooks only in a folder you trust (answer \"Yes, and remember\" when it asks, or start it with --trust-folder or COPILOT_ALLOW_ALL=true); `--user` installs them where they always run.",
        ),
        approvals: None,
        settings: &[],
        env_marker: Some("COPILOT_PROJECT_DIR"),
    }),
    mcp: Some(Mcp {
        shape: Shape::ClaudeJson,
        hint: "# GitHub Copilot CLI: save as .mcp.json at the project root (used once the folder is trusted) or ~/.copilot/mcp-config.json, or pass it with --additional-mcp-config",
        one_run: Some(OneRun::JsonFlag {
            flag: "--additional-mcp-config",
        }),
        // checked (/work/notes/probe-a): `mcpServers` in $COPILOT_HOME/mcp-config.json, the
        // project's .mcp.json (once the folder is trusted), .github/mcp.json when there is no
        // .mcp.json.
        registrations: &[
            Registration {
                file: Place::Project(".mcp.json"),
                table: &["mcpServers"],
                comments: false,
            },
            Registration {
                file: Place::Project(".github/mcp.json"),
                table: &["mcpServers"],
                comments: false,
            },
            Registration {
                file: Place::AgentHome("mcp-config.json"),
                table: &["mcpServers"],
                comments: false,
            },
        ],
    }),
    ..BASE
};

/// The `session-state` store.
struct SessionState;

impl Store for SessionState {
    fn dir(&self) -> Option<PathBuf> {
        Some(HOME.path()?.join("session-state"))
    }

    fn sessions(&self, q: &Query<'_>) -> Vec<Candidate> {
        self.dir().map(|d| sessions(&d, q)).unwrap_or_default()
    }

    fn has(&self, id: &str, _cwd: &Path) -> Option<bool> {
        Some(self.dir().and_then(|d| events_of(&d, id)).is_some())
    }

    /// Copilot writes its events behind: at `sessionEnd` the last answer may not be in the
    /// file yet (checked: copilot 1.0.102, hooks reading the file).
    fn written_late(&self) -> bool {
        true
    }

    fn transcript(
        &self,
        id: &str,
        _cwd: &Path,
        since: DateTime<Utc>,
        hint: Option<&Path>,
    ) -> Transcript {
        match session_file(
            hint,
            self.dir(),
            |d| events_of(d, id),
            &format!("GitHub Copilot CLI session {id}"),
            "~/.copilot/session-state (no HOME)",
        ) {
            Ok((path, text)) => parse(&text, since).finish(&path),
            Err(why) => Transcript::missing(why),
        }
    }
}

/// `<dir>/<id>/events.jsonl`, when it is a file (an id is a directory name here: nothing that
/// could leave the directory).
fn events_of(dir: &Path, id: &str) -> Option<PathBuf> {
    if id.is_empty() || id.contains(['/', '\\']) || id.starts_with('.') {
        return None;
    }
    Some(dir.join(id).join("events.jsonl")).filter(|p| p.is_file())
}

/// The sessions under `dir` whose `session.start` names this cwd and a start in the window.
fn sessions(dir: &Path, q: &Query<'_>) -> Vec<Candidate> {
    let mut out = Vec::new();
    for session in subdirs(dir) {
        let events = session.join("events.jsonl");
        let Some(start) = first_line(&events) else {
            continue;
        };
        if start["type"] != "session.start" {
            continue;
        }
        let d = &start["data"];
        let (Some(id), Some(cwd), Some(at)) = (
            d["sessionId"].as_str(),
            d["context"]["cwd"].as_str(),
            time_of(&d["startTime"]),
        ) else {
            continue;
        };
        if same_dir(cwd, q.cwd) && q.inside(at) {
            out.push(Candidate {
                id: id.to_string(),
                at,
                file: Some(events),
            });
        }
    }
    out
}

/// The words of the events after `since`.
pub(crate) fn parse(text: &str, since: DateTime<Utc>) -> Collector {
    let mut c = Collector::default();
    // An answer that came with tool calls: the answer only if nothing follows it.
    let mut with_tools: Option<String> = None;
    let mut commands: HashMap<String, String> = HashMap::new();
    json_lines(text, &mut c, |v, c| {
        if time_of(&v["timestamp"]).is_none_or(|t| t < since) {
            return;
        }
        let d = &v["data"];
        match v["type"].as_str().unwrap_or_default() {
            "user.message" => {
                with_tools = None;
                c.prompt(d["content"].as_str().unwrap_or_default());
            }
            "assistant.message" => {
                if let Some(m) = d["model"].as_str() {
                    c.model(m);
                }
                let text = d["content"].as_str().unwrap_or_default();
                let calls = d["toolRequests"].as_array().is_some_and(|r| !r.is_empty());
                if !text.trim().is_empty() {
                    if calls {
                        with_tools = Some(text.to_string());
                    } else {
                        with_tools = None;
                        c.answer(text);
                    }
                }
            }
            "session.start" | "session.resume" => {
                if let Some(m) = d["selectedModel"].as_str() {
                    c.model(m);
                }
            }
            "session.usage_record" => {
                let u = &d["usage"];
                c.tokens(
                    u["inputTokens"].as_u64(),
                    u["outputTokens"].as_u64(),
                    u["cacheReadTokens"].as_u64(),
                    u["cacheWriteTokens"].as_u64(),
                );
            }
            "tool.execution_start" => {
                if d["toolName"] == "bash"
                    && let (Some(id), Some(command)) =
                        (d["toolCallId"].as_str(), d["arguments"]["command"].as_str())
                {
                    commands.insert(id.to_string(), command.to_string());
                }
            }
            "tool.execution_complete" => {
                for edit in d["fileEdits"].as_array().into_iter().flatten() {
                    c.edited(edit["path"].as_str().unwrap_or_default());
                }
                if let Some(command) = d["toolCallId"].as_str().and_then(|id| commands.remove(id)) {
                    c.ran(&command, d["shellExecution"]["exitCode"].as_i64());
                }
            }
            "session.error" => c.error(d["message"].as_str().unwrap_or_default()),
            _ => {}
        }
    });
    if let Some(text) = with_tools {
        c.answer(&text);
    }
    for command in commands.into_values() {
        c.ran(&command, None);
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    fn since(t: &str) -> DateTime<Utc> {
        t.parse().unwrap()
    }

    /// A one-shot that wrote a file, resumed to run a failing command (copilot 1.0.102).
    const TOOLS: &str = include_str!("../../tests/fixtures/agents/copilot/tools.events.jsonl");

    #[test]
    fn prompts_answers_edits_and_commands_of_a_real_session() {
        let t = parse(TOOLS, since("2026-01-01T00:00:00Z")).finish(Path::new("/e.jsonl"));
        assert_eq!(
            t.prompts,
            [
                "please WRITEFILE /work/notes/probe-a/proj-copilot/probe.txt",
                "now RUNCMD please"
            ]
        );
        assert_eq!(t.last_answer.as_deref(), Some("MOCK-ANSWER-18"));
        assert_eq!(t.model.as_deref(), Some("gpt-4.1"));
        let tokens = t.tokens.unwrap();
        assert_eq!(
            (tokens.input, tokens.output),
            (Some(115 + 116 + 117 + 118), Some(28))
        );
        assert_eq!(t.edits, ["/work/notes/probe-a/proj-copilot/probe.txt"]);
        assert_eq!(t.commands.len(), 1);
        assert_eq!(t.commands[0].command, "ls /nonexistent");
        assert_eq!(t.commands[0].exit_code, Some(2));
        assert!(t.missing.is_none(), "{:?}", t.missing);
    }

    #[test]
    fn a_resumed_session_gives_only_its_new_turns() {
        let text = include_str!("../../tests/fixtures/agents/copilot/resumed.events.jsonl");
        // The third run (`--session-id <existing>`) started at 14:40:00.
        let t = parse(text, since("2026-12-01T14:40:00Z")).finish(Path::new("/e.jsonl"));
        assert_eq!(t.prompts, ["third SESSIONID4", "fourth CONTINUE5"]);
        assert_eq!(t.last_answer.as_deref(), Some("MOCK-ANSWER-7"));
        let t = parse(text, since("2026-12-01T14:40:07Z")).finish(Path::new("/e.jsonl"));
        assert_eq!(t.prompts, ["fourth CONTINUE5"]);
    }

    #[test]
    fn a_model_that_cannot_be_reached_is_why_the_answer_is_missing() {
        let text = include_str!("../../tests/fixtures/agents/copilot/deadport.events.jsonl");
        let t = parse(text, since("2026-01-01T00:00:00Z")).finish(Path::new("/e.jsonl"));
        assert_eq!(t.prompts, ["fail deadport"]);
        assert_eq!(t.last_answer, None);
        assert!(
            t.missing
                .as_deref()
                .is_some_and(|m| m.contains("Could not connect")),
            "{t:?}"
        );
    }

    #[test]
    fn sessions_are_found_by_cwd_and_start_and_exist_once_they_have_events() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("session-state");
        let id = "44444444-2222-4333-8444-555555555555";
        std::fs::create_dir_all(dir.join(id)).unwrap();
        std::fs::write(dir.join(id).join("events.jsonl"), TOOLS).unwrap();
        // A session directory without events (`copilot app`, a start with no prompt).
        std::fs::create_dir_all(dir.join("11111111-2222-4333-8444-555555555555")).unwrap();
        assert!(events_of(&dir, id).is_some());
        assert!(events_of(&dir, "11111111-2222-4333-8444-555555555555").is_none());
        assert!(events_of(&dir, "../x").is_none());
        let at = since("2026-12-01T14:44:16Z");
        let q = Query {
            cwd: Path::new("/work/notes/probe-a/proj-copilot"),
            from: at - chrono::Duration::seconds(5),
            to: at + chrono::Duration::seconds(5),
            program: None,
        };
        let found = sessions(&dir, &q);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].id, id);
        let elsewhere = Query {
            cwd: tmp.path(),
            ..q
        };
        assert!(sessions(&dir, &elsewhere).is_empty());
    }
}
