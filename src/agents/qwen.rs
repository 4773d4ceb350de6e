//! Qwen Code (`qwen`, npm `@qwen-code/qwen-code`, a Gemini CLI fork): everything pas-agent
//! knows about it.
//!
//! - **Context**: `QWEN.md`, and also `AGENTS.md` and `.qwen/rules/*.md`, with `@path` imports
//!   followed in each (github.com/QwenLM/qwen-code docs/users/configuration/context-files;
//!   checked: qwen 0.15.10, markers of each file looked for in the model's request; the same
//!   text in QWEN.md and AGENTS.md is sent twice).
//! - **Launch**: `--session-id <uuid>` "Specify a session ID for this run" (an id already used
//!   is an error, not a resume), `-r/--resume <id>`, `-c/--continue` (checked: qwen 0.15.10
//!   `--help`). Its subcommands refuse `--session-id` ("Unknown arguments"), and `-l` starts
//!   the interactive mode rather than listing.
//! - **Store**: `$QWEN_RUNTIME_DIR`, else `$QWEN_HOME` (default `~/.qwen`),
//!   `/projects/<cwd with every character but ASCII letters and digits as '-'>/chats/<id>.jsonl`,
//!   written at the first prompt (not when the interactive mode starts); every line has
//!   `sessionId`, `cwd`, `timestamp` and `type` (`Storage.getRuntimeBaseDir` and
//!   `sanitizeCwd` in the 0.15.10 bundle; checked: qwen 0.15.10).
//! - **Transcript** lines read (after `since`):
//!   - `user`: `message.parts[0].text` is the prompt as typed; a prompt hook's context is
//!     added as further parts, and the context files and Qwen's own set-up message are never
//!     written here;
//!   - `assistant`: `model`, `usageMetadata.{promptTokenCount,candidatesTokenCount,
//!     cachedContentTokenCount}`, text parts (not `thought` ones) as the answer, and
//!     `functionCall` parts: `write_file`, `edit`, `replace` (`args.file_path`) wrote a file,
//!     `run_shell_command` (`args.command`) ran one;
//!   - `tool_result` (its message's role is `user`): a command's `Exit Code: N`;
//!   - `system` `ui_telemetry` `qwen-code.api_error`: why an answer is missing.
//! - **Hooks**: `.qwen/settings.json` (JSON with comments; `settings.json` in its home for the
//!   user), Claude Code's shape, `SessionStart`, `Stop` (with `last_assistant_message`),
//!   `SessionEnd`; `timeout` in milliseconds whatever its schema says. `SessionStart` and
//!   `SessionEnd` fire only in the interactive mode, and what a start hook prints is dropped
//!   (checked: qwen 0.15.10, hooks that log their payload; `hookRunner` in the bundle).
//! - **MCP**: `mcpServers` in `.qwen/settings.json` (Gemini CLI's shape), `--mcp-config
//!   <json>` for one run (checked: qwen 0.15.10, `qwen mcp list` and the tools it offered).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use super::hooks::{ContextOutput, Event, Format, Hooks, Unit};
use super::mcp::{Mcp, OneRun, Place, Registration, Shape};
use super::store::{
    Candidate, Home, Query, Resumable, Store, VarIs, copy_rehomed, dashed, env_dir, files,
    first_line, subdirs,
};
use super::words::{Collector, exit_code_after, json_lines, session_file, time_of};
use super::{Agent, BASE, IdShape, RESUME_FLAG, SessionId, Straight};
use crate::model::Transcript;

/// `$QWEN_HOME`, default `~/.qwen`.
pub const HOME: Home = Home {
    var: Some("QWEN_HOME"),
    var_is: VarIs::Dir,
    dir: ".qwen",
};

/// Qwen Code's row.
pub const AGENT: Agent = Agent {
    id: "qwen-code",
    name: "Qwen Code",
    aliases: &["qwen"],
    executables: &["qwen"],
    context_file: "QWEN.md",
    also_reads: &["AGENTS.md", ".qwen/rules/*.md"],
    at_imports: true,
    resume: Some(RESUME_FLAG),
    session_id: SessionId::Choose {
        flag: "--session-id",
        unless: &["--session-id", "-r", "--resume", "-c", "--continue"],
    },
    id_shape: IdShape::Uuid,
    straight: Straight {
        // checked: qwen 0.15.10 `--help` (Commands; `hooks` is also `hook`), each run with a
        // fresh store: none made a session.
        subcommands: &[
            "mcp",
            "extensions",
            "auth",
            "hooks",
            "hook",
            "channel",
            "review",
        ],
        flags: &["-v", "--version", "-h", "--help"],
    },
    home: Some(HOME),
    store: Some(&Chats),
    hooks: Some(Hooks {
        key: "qwen",
        project_file: ".qwen/settings.json",
        user_file: "settings.json",
        format: Format::Json { comments: true },
        events: &[
            ("SessionStart", Event::SessionStart),
            ("Stop", Event::Stop),
            ("SessionEnd", Event::SessionEnd),
        ],
        timeout: 30_000,
        end_timeout: None,
        unit: Unit::Millis,
        payload: super::hooks::CLAUDE_PAYLOAD,
        context: ContextOutput::Ignored,
        // Not checked: assumed, so that a stale block it read is never left uncontradicted.
        reads_files_first: true,
        caveat: Some(
            "Qwen Code runs its session hooks only in its interactive mode (a one-shot `qwen \"…\"` is not recorded), and it drops what a start hook prints: the session reaches it through QWEN.md (`pas-agent export --to qwen`).",
        ),
        approvals: None,
        settings: &[],
        env_marker: None,
    }),
    mcp: Some(Mcp {
        shape: Shape::GeminiJson,
        hint: "# Qwen Code: merge into .qwen/settings.json (this project) or ~/.qwen/settings.json, or pass it with --mcp-config",
        one_run: Some(OneRun::JsonFlag {
            flag: "--mcp-config",
        }),
        // checked: qwen 0.15.10 `qwen mcp list`: `mcpServers` in .qwen/settings.json and
        // $QWEN_HOME/settings.json (.mcp.json is not read).
        registrations: &[
            Registration {
                file: Place::Project(".qwen/settings.json"),
                table: &["mcpServers"],
                comments: true,
            },
            Registration {
                file: Place::AgentHome("settings.json"),
                table: &["mcpServers"],
                comments: true,
            },
        ],
    }),
    ..BASE
};

/// The chats store.
struct Chats;

impl Chats {
    /// `projects/` under the runtime directory.
    fn projects(&self) -> Option<PathBuf> {
        let base = env_dir("QWEN_RUNTIME_DIR").or_else(|| HOME.path())?;
        Some(base.join("projects"))
    }

    /// The chats directory of `cwd`.
    fn chats(&self, cwd: &Path) -> Option<PathBuf> {
        Some(self.projects()?.join(dashed(cwd)).join("chats"))
    }
}

impl Store for Chats {
    fn dir(&self) -> Option<PathBuf> {
        self.projects()
    }

    fn sessions(&self, q: &Query<'_>) -> Vec<Candidate> {
        self.chats(q.cwd)
            .map(|d| sessions(&d, q))
            .unwrap_or_default()
    }

    fn has(&self, id: &str, cwd: &Path) -> Option<bool> {
        Some(self.chats(cwd).and_then(|d| chat_of(&d, id)).is_some())
    }

    /// Qwen Code resumes only a chat kept under this directory's key whose first record names
    /// this directory (`SessionService.loadSession` compares the hash of its `cwd`; checked:
    /// qwen 0.15.10 bundle): one kept under another key is copied here with that `cwd`.
    fn resumable(&self, id: &str, cwd: &Path) -> Resumable {
        match self.projects() {
            Some(projects) => resumable(&projects, id, cwd),
            None => Resumable::Here,
        }
    }

    fn transcript(
        &self,
        id: &str,
        cwd: &Path,
        since: DateTime<Utc>,
        hint: Option<&Path>,
    ) -> Transcript {
        match session_file(
            hint,
            self.chats(cwd),
            |d| chat_of(d, id),
            &format!("Qwen Code chat of session {id}"),
            "~/.qwen/projects (no HOME)",
        ) {
            Ok((path, text)) => parse(&text, since).finish(&path),
            Err(why) => Transcript::missing(why),
        }
    }
}

/// [`Store::resumable`] for the store at `projects`: the chat of `id` under `cwd`'s key (the
/// directory as the agent sees it: its real path), else one under another key copied there.
fn resumable(projects: &Path, id: &str, cwd: &Path) -> Resumable {
    let real = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    let here = projects.join(dashed(&real)).join("chats");
    if chat_of(&here, id).is_some()
        || chat_of(&projects.join(dashed(cwd)).join("chats"), id).is_some()
    {
        return Resumable::Here;
    }
    let Some(from) = subdirs(projects).find_map(|d| chat_of(&d.join("chats"), id)) else {
        return Resumable::Missing(format!(
            "Qwen Code keeps no chat of session {id} (looked in {})",
            projects.display()
        ));
    };
    let to = here.join(format!("{id}.jsonl"));
    match std::fs::create_dir_all(&here).and_then(|()| copy_rehomed(&from, &to, &real)) {
        Ok(()) => Resumable::Copied { from, to },
        Err(e) => Resumable::Missing(format!(
            "its chat {} could not be copied to {}, where Qwen Code started here looks: {e}",
            from.display(),
            here.display()
        )),
    }
}

/// `<chats>/<id>.jsonl`, when it is a file.
fn chat_of(chats: &Path, id: &str) -> Option<PathBuf> {
    if id.is_empty() || id.contains(['/', '\\']) || id.starts_with('.') {
        return None;
    }
    Some(chats.join(format!("{id}.jsonl"))).filter(|p| p.is_file())
}

/// The chats of the directory whose first line says they started in the window.
fn sessions(chats: &Path, q: &Query<'_>) -> Vec<Candidate> {
    let mut out = Vec::new();
    for path in files(chats) {
        if path.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        let Some(first) = first_line(&path) else {
            continue;
        };
        let (Some(id), Some(at)) = (first["sessionId"].as_str(), time_of(&first["timestamp"]))
        else {
            continue;
        };
        let cwd_ok = first["cwd"]
            .as_str()
            .is_none_or(|c| super::store::same_dir(c, q.cwd));
        if cwd_ok && q.inside(at) {
            out.push(Candidate {
                id: id.to_string(),
                at,
                file: Some(path),
            });
        }
    }
    out
}

/// The words of the lines after `since`.
pub(crate) fn parse(text: &str, since: DateTime<Utc>) -> Collector {
    let mut c = Collector::default();
    let mut commands: HashMap<String, String> = HashMap::new();
    json_lines(text, &mut c, |v, c| {
        if time_of(&v["timestamp"]).is_none_or(|t| t < since) {
            return;
        }
        let parts = v["message"]["parts"].as_array();
        match v["type"].as_str().unwrap_or_default() {
            "user" => {
                // The first part is what was typed; a prompt hook's context follows it.
                let typed = parts
                    .and_then(|p| p.first())
                    .and_then(|p| p["text"].as_str())
                    .unwrap_or_default();
                c.prompt(typed);
            }
            "assistant" => {
                if let Some(m) = v["model"].as_str() {
                    c.model(m);
                }
                let u = &v["usageMetadata"];
                if u.is_object() {
                    c.tokens(
                        u["promptTokenCount"].as_u64(),
                        u["candidatesTokenCount"].as_u64(),
                        u["cachedContentTokenCount"].as_u64(),
                        None,
                    );
                }
                let mut text = Vec::new();
                for part in parts.into_iter().flatten() {
                    if let Some(t) = part["text"].as_str()
                        && part["thought"] != true
                    {
                        text.push(t);
                    }
                    let call = &part["functionCall"];
                    let args = &call["args"];
                    match call["name"].as_str().unwrap_or_default() {
                        "write_file" | "edit" | "replace" => {
                            c.edited(args["file_path"].as_str().unwrap_or_default());
                        }
                        "run_shell_command" => {
                            if let (Some(id), Some(command)) =
                                (call["id"].as_str(), args["command"].as_str())
                            {
                                commands.insert(id.to_string(), command.to_string());
                            }
                        }
                        _ => {}
                    }
                }
                c.answer(&text.join(""));
            }
            "tool_result" => {
                for part in parts.into_iter().flatten() {
                    let r = &part["functionResponse"];
                    if let Some(command) = r["id"].as_str().and_then(|id| commands.remove(id)) {
                        let output = r["response"]["output"].as_str().unwrap_or_default();
                        c.ran(&command, exit_code_after(output, "Exit Code:"));
                    }
                }
            }
            "system" => {
                let event = &v["systemPayload"]["uiEvent"];
                if event["event.name"] == "qwen-code.api_error" {
                    c.error(event["error_message"].as_str().unwrap_or_default());
                }
            }
            _ => {}
        }
    });
    for command in commands.into_values() {
        c.ran(&command, None);
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chat_kept_under_another_directory_is_copied_here_with_this_cwd() {
        let tmp = tempfile::tempdir().unwrap();
        let projects = tmp.path().join("projects");
        let old = tmp.path().join("old/proj");
        let new = tmp.path().join("new/proj");
        std::fs::create_dir_all(&new).unwrap();
        let new = std::fs::canonicalize(&new).unwrap();
        let id = "11111111-2222-4333-8444-555555555555";
        let text = include_str!("../../tests/fixtures/agents/qwen/resumed.jsonl");
        let kept = projects.join(dashed(&old)).join("chats");
        std::fs::create_dir_all(&kept).unwrap();
        std::fs::write(kept.join(format!("{id}.jsonl")), text).unwrap();
        let Resumable::Copied { from, to } = resumable(&projects, id, &new) else {
            panic!("not copied");
        };
        assert_eq!(from, kept.join(format!("{id}.jsonl")));
        assert_eq!(
            to,
            projects
                .join(dashed(&new))
                .join("chats")
                .join(format!("{id}.jsonl"))
        );
        // The first record names the new directory (Qwen Code checks it); the rest is as it was.
        let copied = std::fs::read_to_string(&to).unwrap();
        let first: serde_json::Value =
            serde_json::from_str(copied.lines().next().unwrap()).unwrap();
        assert_eq!(first["cwd"], new.to_string_lossy().as_ref());
        assert_eq!(first["sessionId"], id);
        assert_eq!(
            copied.split_once('\n').unwrap().1,
            text.split_once('\n').unwrap().1
        );
        // The original is untouched, and found here now.
        assert_eq!(std::fs::read_to_string(&from).unwrap(), text);
        assert_eq!(resumable(&projects, id, &new), Resumable::Here);
        assert!(matches!(
            resumable(&projects, "00000000-0000-4000-8000-000000000000", &new),
            Resumable::Missing(_)
        ));
        assert!(matches!(
            resumable(&projects, "../x", &new),
            Resumable::Missing(_)
        ));
    }

    fn since(t: &str) -> DateTime<Utc> {
        t.parse().unwrap()
    }

    #[test]
    fn prompts_answers_edits_and_commands_of_a_real_chat() {
        let text = include_str!("../../tests/fixtures/agents/qwen/tools.jsonl");
        let t = parse(text, since("2026-01-01T00:00:00Z")).finish(Path::new("/c.jsonl"));
        assert_eq!(
            t.prompts,
            [
                "please WRITEFILE /work/notes/probe-a/proj-qwen/probe.txt",
                "now RUNCMD please"
            ]
        );
        assert_eq!(t.last_answer.as_deref(), Some("MOCK-ANSWER-28"));
        assert_eq!(t.model.as_deref(), Some("gpt-4.1"));
        assert_eq!(t.tokens.unwrap().input, Some(125 + 126 + 127 + 128));
        assert_eq!(t.edits, ["/work/notes/probe-a/proj-qwen/probe.txt"]);
        assert_eq!(t.commands.len(), 1);
        assert_eq!(
            (t.commands[0].command.as_str(), t.commands[0].exit_code),
            ("ls /nonexistent", Some(2))
        );
    }

    #[test]
    fn a_prompt_hooks_context_is_not_part_of_the_prompt() {
        let text = include_str!("../../tests/fixtures/agents/qwen/hooks.jsonl");
        let t = parse(text, since("2026-01-01T00:00:00Z")).finish(Path::new("/c.jsonl"));
        assert_eq!(
            t.prompts[0],
            "hooks WRITEFILE /work/notes/probe-a/proj-qwhooks/probe.txt"
        );
        assert!(
            t.prompts.iter().all(|p| !p.contains("MARK-HOOK")),
            "{:?}",
            t.prompts
        );
    }

    #[test]
    fn a_resumed_chat_gives_only_its_new_turns_and_a_failed_call_says_why() {
        let text = include_str!("../../tests/fixtures/agents/qwen/resumed.jsonl");
        let all = parse(text, since("2026-01-01T00:00:00Z")).finish(Path::new("/c.jsonl"));
        assert!(all.prompts.len() >= 2, "{:?}", all.prompts);
        let second_at = text
            .lines()
            .filter(|l| l.contains("\"type\":\"user\""))
            .nth(1)
            .and_then(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .and_then(|v| time_of(&v["timestamp"]))
            .unwrap();
        let t = parse(text, second_at).finish(Path::new("/c.jsonl"));
        assert_eq!(t.prompts, all.prompts[1..]);
        let text = include_str!("../../tests/fixtures/agents/qwen/deadport.jsonl");
        let t = parse(text, since("2026-01-01T00:00:00Z")).finish(Path::new("/c.jsonl"));
        assert_eq!(t.prompts, ["fail deadport"]);
        assert!(t.missing.unwrap().contains("Connection error"));
    }

    #[test]
    fn chats_are_found_in_the_directory_of_the_cwd() {
        let tmp = tempfile::tempdir().unwrap();
        let cwd = Path::new("/work/notes/probe-a/proj-qwen");
        let chats = tmp.path().join(dashed(cwd)).join("chats");
        std::fs::create_dir_all(&chats).unwrap();
        let id = "44444444-2222-4333-8444-555555555555";
        std::fs::write(
            chats.join(format!("{id}.jsonl")),
            include_str!("../../tests/fixtures/agents/qwen/tools.jsonl"),
        )
        .unwrap();
        assert!(chat_of(&chats, id).is_some() && chat_of(&chats, "x").is_none());
        let at = since("2026-12-01T14:57:22Z");
        let q = Query {
            cwd,
            from: at - chrono::Duration::seconds(3),
            to: at + chrono::Duration::seconds(3),
            program: None,
        };
        let found = sessions(&chats, &q);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].id, id);
    }
}
