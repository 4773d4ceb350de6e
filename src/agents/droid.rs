//! Factory droid (`droid`, npm `@factory/cli`, whose platform packages hold the binary):
//! everything pas-agent knows about it.
//!
//! - **Context**: `AGENTS.md`, and also `CLAUDE.md` and `.factory/AGENTS.md`, each sent (the
//!   same text twice); `@path` is not followed (docs.factory.ai/cli/configuration/agents-md;
//!   checked: droid 0.225.2, markers of each file looked for in the model's request).
//! - **Launch**: no way to choose the id of a new interactive session: it is read from the
//!   store. `droid --resume <id>` resumes one interactively; `droid exec -s <id>` first fetches
//!   the session from Factory's service and fails silently without it, while `droid exec --fork
//!   <id> <prompt>` continues a copy of it under a new id offline, so that is how a `exec` run
//!   is resumed (checked: droid 0.225.2 `--help`, `exec --help`, with
//!   `FACTORY_AIRGAP_ENABLED=true`).
//! - **Store**: `$FACTORY_HOME_OVERRIDE` (default `$HOME`) `/.factory/sessions/<cwd with each
//!   '/' as '-'>/<id>.jsonl` and `<id>.settings.json`. The first line is `{"type":
//!   "session_start","id","cwd",…}` (a fork adds `parent` and `forkedAtMessageId`, and copies
//!   the parent's messages with their times); then `{"type":"message","id","timestamp",
//!   "message":{"role","content":[…]}}` lines. The interactive mode writes the file when it
//!   starts, before any prompt (checked: droid 0.225.2, exec, resume, fork, interactive).
//! - **Transcript**: user messages are prompts unless droid wrote them: the context reminder
//!   (id `context-…`), a hook's record or a notice (`message.visibility`), a tool result;
//!   assistant messages give the answer (text parts), the model (`modelId`), the files written
//!   (`Create`, `Edit`, `MultiEdit`: `file_path`; `ApplyPatch`: the patch's file lines) and
//!   the commands run (`Execute`: `command`, its result's `exit code`). Tokens are the
//!   session's `tokenUsage` in `<id>.settings.json`, which counts the whole session (a fork's
//!   own turns only): they are kept only when every turn of the session is this run's.
//! - **Hooks**: `.factory/settings.json` (and `settings.json` in its home), Claude Code's
//!   shape and events, `timeout` in seconds; the payload has `session_id`, `transcript_path`,
//!   `cwd`, and a start hook's `hookSpecificOutput.additionalContext` reaches the model. `exec`
//!   runs a project's hooks without asking; the interactive mode after the folder is trusted
//!   (docs.factory.ai/cli/configuration/hooks-guide; checked: droid 0.225.2).
//! - **MCP**: `.factory/mcp.json` (and `mcp.json` in its home), Claude Code's `{"mcpServers":
//!   …}`; no option for one run (checked: droid 0.225.2, `droid mcp list`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::hooks::{ContextOutput, Event, Format, Hooks, Unit};
use super::mcp::{Mcp, Place, Registration, Shape};
use super::store::{Candidate, Home, Query, Store, VarIs, files, modified, same_dir, subdirs};
use super::words::{Collector, exit_code_after, json_lines, read_file, session_file, time_of};
use super::{Agent, BASE, IdShape, Resume, SessionId, Straight};
use crate::model::Transcript;

/// `$FACTORY_HOME_OVERRIDE/.factory`, default `~/.factory`.
pub const HOME: Home = Home {
    var: Some("FACTORY_HOME_OVERRIDE"),
    var_is: VarIs::Home,
    dir: ".factory",
};

/// Factory droid's row.
pub const AGENT: Agent = Agent {
    id: "droid",
    name: "Factory Droid",
    aliases: &["factory-droid"],
    executables: &["droid"],
    context_file: "AGENTS.md",
    also_reads: &["CLAUDE.md", ".factory/AGENTS.md"],
    resume: Some(Resume {
        args: &["--resume", "{id}"],
        subcommands: &["exec"],
        after_subcommand: &["--fork", "{id}"],
    }),
    session_id: SessionId::Discover,
    id_shape: IdShape::Uuid,
    straight: Straight {
        // checked: droid 0.225.2 `--help` (Commands; `search` is also `find`), each run with
        // a fresh store: none made a session. Not straight: `exec`, `resume`.
        subcommands: &[
            "mcp", "plugin", "computer", "doctor", "search", "find", "daemon", "update", "help",
        ],
        flags: &["-v", "--version", "-h", "--help", "--list-tools"],
    },
    home: Some(HOME),
    store: Some(&Sessions),
    hooks: Some(Hooks {
        key: "droid",
        project_file: ".factory/settings.json",
        user_file: "settings.json",
        format: Format::Json { comments: false },
        events: &[
            ("SessionStart", Event::SessionStart),
            ("Stop", Event::Stop),
            ("SessionEnd", Event::SessionEnd),
        ],
        timeout: 30,
        end_timeout: None,
        unit: Unit::Seconds,
        payload: super::hooks::CLAUDE_PAYLOAD,
        context: ContextOutput::HookSpecific,
        // Not checked: assumed, so that a stale block it read is never left uncontradicted.
        reads_files_first: true,
        caveat: Some(
            "In its interactive mode droid runs a project's hooks only after you trust the folder; `droid exec` runs them at once.",
        ),
        approvals: None,
        settings: &[],
        env_marker: None,
    }),
    mcp: Some(Mcp {
        shape: Shape::ClaudeJson,
        hint: "# Factory droid: save as .factory/mcp.json (this project) or ~/.factory/mcp.json",
        one_run: None,
        // checked: droid 0.225.2 `droid mcp list`: `mcpServers` in .factory/mcp.json
        // ([project]) and ~/.factory/mcp.json ([user]).
        registrations: &[
            Registration {
                file: Place::Project(".factory/mcp.json"),
                table: &["mcpServers"],
                comments: false,
            },
            Registration {
                file: Place::AgentHome("mcp.json"),
                table: &["mcpServers"],
                comments: false,
            },
        ],
    }),
    ..BASE
};

/// The `sessions` store.
struct Sessions;

// `Store::resumable` keeps its default (found as it is): droid keeps sessions per directory,
// but whether `droid --resume <id>` finds one kept under another directory's key is not
// checked (docs/launcher.md, "Resume follows the project").
impl Store for Sessions {
    fn dir(&self) -> Option<PathBuf> {
        Some(HOME.path()?.join("sessions"))
    }

    fn sessions(&self, q: &Query<'_>) -> Vec<Candidate> {
        let Some(dir) = self.dir() else {
            return Vec::new();
        };
        sessions(&dir.join(slashed(q.cwd)), q)
    }

    fn has(&self, id: &str, _cwd: &Path) -> Option<bool> {
        Some(self.dir().and_then(|d| find(&d, id)).is_some())
    }

    fn transcript(
        &self,
        id: &str,
        _cwd: &Path,
        since: DateTime<Utc>,
        hint: Option<&Path>,
    ) -> Transcript {
        let (path, text) = match session_file(
            hint,
            self.dir(),
            |d| find(d, id),
            &format!("Factory droid session {id}"),
            "~/.factory/sessions (no HOME)",
        ) {
            Ok(found) => found,
            Err(why) => return Transcript::missing(why),
        };
        let settings = super::store::whole_json(&path.with_extension("settings.json"));
        parse(&text, settings.as_ref(), since).finish(&path)
    }
}

/// `cwd` with each `/` as `-`: the name of its directory in the store (droid keeps every other
/// character).
fn slashed(cwd: &Path) -> String {
    cwd.to_string_lossy().replace(['/', '\\'], "-")
}

/// `sessions/*/<id>.jsonl`.
fn find(dir: &Path, id: &str) -> Option<PathBuf> {
    if id.is_empty() || id.contains(['/', '\\']) || id.starts_with('.') {
        return None;
    }
    let name = format!("{id}.jsonl");
    subdirs(dir).map(|d| d.join(&name)).find(|p| p.is_file())
}

/// When the session in `text` started for this store's purposes: its first message that is
/// not copied from the session it was forked from, else (no message yet) `None`.
fn own_start(text: &str) -> Option<DateTime<Utc>> {
    let mut lines = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok());
    let head = lines.next()?;
    let mut copied = head["forkedAtMessageId"].as_str().map(str::to_string);
    for v in lines {
        if v["type"] != "message" {
            continue;
        }
        if let Some(last) = &copied {
            if v["id"].as_str() == Some(last.as_str()) {
                copied = None;
            }
            continue;
        }
        return time_of(&v["timestamp"]);
    }
    None
}

/// The sessions in `dir` (the cwd's directory) of this cwd that started in the window.
fn sessions(dir: &Path, q: &Query<'_>) -> Vec<Candidate> {
    let mut out = Vec::new();
    for path in files(dir) {
        if path.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        if modified(&path).is_some_and(|m| m < q.from) {
            continue;
        }
        let Ok(text) = read_file(&path) else {
            continue;
        };
        let Some(head) = text
            .lines()
            .next()
            .and_then(|l| serde_json::from_str::<Value>(l).ok())
        else {
            continue;
        };
        let (Some(id), Some(cwd)) = (head["id"].as_str(), head["cwd"].as_str()) else {
            continue;
        };
        if head["type"] != "session_start" || !same_dir(cwd, q.cwd) {
            continue;
        }
        // A session with no message yet (the interactive mode writes its file when it starts)
        // started when the file was written.
        let Some(at) = own_start(&text).or_else(|| modified(&path)) else {
            continue;
        };
        if q.inside(at) {
            out.push(Candidate {
                id: id.to_string(),
                at,
                file: Some(path),
            });
        }
    }
    out
}

/// The words of the messages after `since`; `settings`: the session's `<id>.settings.json`.
pub(crate) fn parse(text: &str, settings: Option<&Value>, since: DateTime<Utc>) -> Collector {
    let mut c = Collector::default();
    let mut commands: HashMap<String, String> = HashMap::new();
    // Messages copied from the parent of a fork, up to and with this id.
    let mut copied: Option<String> = None;
    // Whether every message of the session's own is this run's.
    let mut all_new = true;
    json_lines(text, &mut c, |v, c| {
        if v["type"] == "session_start" {
            copied = v["forkedAtMessageId"].as_str().map(str::to_string);
            return;
        }
        if v["type"] != "message" {
            return;
        }
        if let Some(last) = &copied {
            if v["id"].as_str() == Some(last.as_str()) {
                copied = None;
            }
            return;
        }
        if time_of(&v["timestamp"]).is_none_or(|t| t < since) {
            all_new = false;
            return;
        }
        let m = &v["message"];
        let parts = m["content"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        let text = || -> String {
            parts
                .iter()
                .filter(|p| p["type"] == "text")
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join("")
        };
        match m["role"].as_str().unwrap_or_default() {
            "user" => {
                for p in parts.iter().filter(|p| p["type"] == "tool_result") {
                    if let Some(command) =
                        p["tool_use_id"].as_str().and_then(|id| commands.remove(id))
                    {
                        let output = match &p["content"] {
                            Value::String(s) => s.clone(),
                            other => super::words::text_of(other, &[]),
                        };
                        let code = exit_code_after(&output, "exited with code")
                            .or_else(|| exit_code_after(&output, "exit code:"))
                            .or_else(|| (p["is_error"] == false).then_some(0));
                        c.ran(&command, code);
                    }
                }
                let injected = v["id"]
                    .as_str()
                    .is_some_and(|id| id.starts_with("context-"));
                match m["visibility"].as_str() {
                    // A notice droid showed the user in place of an answer.
                    Some("user_only") if m.get("hookEventName").is_none() => c.error(&text()),
                    Some(_) => {}
                    None if injected || parts.iter().any(|p| p["type"] == "tool_result") => {}
                    None => c.prompt(&text()),
                }
            }
            "assistant" => {
                if let Some(model) = m["modelId"].as_str() {
                    c.model(model);
                }
                for p in parts.iter().filter(|p| p["type"] == "tool_use") {
                    let input = &p["input"];
                    match p["name"].as_str().unwrap_or_default() {
                        "Create" | "Edit" | "MultiEdit" => {
                            c.edited(input["file_path"].as_str().unwrap_or_default());
                        }
                        "ApplyPatch" => {
                            let patch = input["patch"]
                                .as_str()
                                .or_else(|| input["input"].as_str())
                                .unwrap_or_default();
                            for line in patch.lines() {
                                for head in
                                    ["*** Add File: ", "*** Update File: ", "*** Delete File: "]
                                {
                                    if let Some(file) = line.strip_prefix(head) {
                                        c.edited(file.trim());
                                    }
                                }
                            }
                        }
                        "Execute" => {
                            if let (Some(id), Some(command)) =
                                (p["id"].as_str(), input["command"].as_str())
                            {
                                commands.insert(id.to_string(), command.to_string());
                            }
                        }
                        _ => {}
                    }
                }
                c.answer(&text());
            }
            _ => {}
        }
    });
    for command in commands.into_values() {
        c.ran(&command, None);
    }
    if let Some(s) = settings {
        if let Some(model) = s["model"].as_str() {
            c.model(model);
        }
        let u = &s["tokenUsage"];
        if all_new && u.is_object() {
            c.tokens(
                u["inputTokens"].as_u64(),
                u["outputTokens"].as_u64(),
                u["cacheReadTokens"].as_u64(),
                u["cacheCreationTokens"].as_u64(),
            );
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    fn since(t: &str) -> DateTime<Utc> {
        t.parse().unwrap()
    }

    fn json(text: &str) -> Value {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn prompts_answers_edits_commands_and_tokens_of_a_real_session() {
        let text = include_str!("../../tests/fixtures/agents/droid/tools.jsonl");
        let settings = json(include_str!(
            "../../tests/fixtures/agents/droid/tools.settings.json"
        ));
        let t = parse(text, Some(&settings), since("2026-01-01T00:00:00Z"))
            .finish(Path::new("/s.jsonl"));
        assert_eq!(
            t.prompts,
            [
                "please WRITEFILE /work/notes/probe-a/proj-droid/probe.txt",
                "now RUNCMD please"
            ]
        );
        assert_eq!(t.last_answer.as_deref(), Some("MOCK-ANSWER-20"));
        assert_eq!(t.model.as_deref(), Some("custom:mock-model-0"));
        assert_eq!(t.tokens.unwrap().input, Some(466));
        assert_eq!(t.edits, ["/work/notes/probe-a/proj-droid/probe.txt"]);
        assert_eq!(
            (t.commands[0].command.as_str(), t.commands[0].exit_code),
            ("ls /nonexistent", Some(2))
        );
        // A later `since`: the second run only, and the session's cumulative tokens are not
        // this run's.
        let t = parse(text, Some(&settings), since("2026-12-01T15:05:17Z"))
            .finish(Path::new("/s.jsonl"));
        assert_eq!(t.prompts, ["now RUNCMD please"]);
        assert_eq!(t.tokens, None);
    }

    #[test]
    fn hook_records_context_reminders_and_notices_are_never_prompts() {
        let text = include_str!("../../tests/fixtures/agents/droid/hooks.jsonl");
        let t = parse(text, None, since("2026-01-01T00:00:00Z")).finish(Path::new("/s.jsonl"));
        assert_eq!(
            t.prompts,
            [
                "hooks WRITEFILE /work/notes/probe-a/proj-drhooks/probe.txt",
                "hooks RUNCMD",
                "tui hooks TUIHOOK2"
            ]
        );
        let text = include_str!("../../tests/fixtures/agents/droid/notice.jsonl");
        let t = parse(text, None, since("2026-01-01T00:00:00Z")).finish(Path::new("/s.jsonl"));
        assert_eq!(t.prompts, ["say hi ONESHOT1"]);
        let text = include_str!("../../tests/fixtures/agents/droid/deadport.jsonl");
        let t = parse(text, None, since("2026-01-01T00:00:00Z")).finish(Path::new("/s.jsonl"));
        assert_eq!(t.prompts, ["fail deadport"]);
        assert!(t.missing.unwrap().contains("Unable to reach"));
    }

    #[test]
    fn a_fork_gives_only_its_own_turns_and_tokens() {
        let text = include_str!("../../tests/fixtures/agents/droid/fork.jsonl");
        let settings = json(include_str!(
            "../../tests/fixtures/agents/droid/fork.settings.json"
        ));
        // The copied turns keep their old times: even an early `since` skips them.
        let t = parse(text, Some(&settings), since("2026-01-01T00:00:00Z"))
            .finish(Path::new("/s.jsonl"));
        assert_eq!(t.prompts, ["forked DR2"]);
        assert_eq!(t.last_answer.as_deref(), Some("MOCK-ANSWER-6"));
        assert_eq!(t.tokens.unwrap().input, Some(106));
        assert_eq!(own_start(text), Some(since("2026-12-01T15:42:08.199Z")));
    }

    #[test]
    fn sessions_are_found_in_the_cwds_directory_by_their_own_start() {
        let tmp = tempfile::tempdir().unwrap();
        let cwd = Path::new("/tmp/agp/dr/p");
        assert_eq!(slashed(cwd), "-tmp-agp-dr-p");
        let dir = tmp.path().join(slashed(cwd));
        std::fs::create_dir_all(&dir).unwrap();
        let id = "7d0567c3-429f-4686-9433-fa604695a8d3";
        std::fs::write(
            dir.join(format!("{id}.jsonl")),
            include_str!("../../tests/fixtures/agents/droid/fork.jsonl"),
        )
        .unwrap();
        let at = since("2026-12-01T15:42:08Z");
        let q = Query {
            cwd,
            from: at - chrono::Duration::seconds(2),
            to: at + chrono::Duration::seconds(2),
            program: None,
        };
        // The copied turns are older than the window; its own first turn is inside.
        let found = sessions(&dir, &q);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].id, id);
        assert!(find(tmp.path(), id).is_some() && find(tmp.path(), "nope").is_none());
    }
}
