//! The Continue CLI (`cn`, npm `@continuedev/cli`): everything pas-agent knows about it. The
//! rules file that `export --to continue` writes for Continue's editor extensions is the row in
//! `rules.rs`; this is the terminal agent.
//!
//! - **Context**: the first that exists of `AGENTS.md`, `AGENT.md`, `CLAUDE.md`, `CODEX.md` at
//!   the working directory, and every rule in `.continue/rules/*.md` (and in its home's
//!   `rules/`) that applies always. AGENTS.md is the file exported here: it is the one most
//!   agents share, and once it exists cn reads no other of the four; a block in
//!   `.continue/rules/` is then a second copy (`n7e` and `jDt` in the 1.5.47 bundle; checked:
//!   cn 1.5.47, each file's text in the model's request).
//! - **Launch**: no way to choose a session's id, and `--resume` takes none: it resumes the
//!   newest session of any directory. `--fork <id>` continues a copy of session `<id>` under
//!   a new id, which is how pas-agent resumes one (checked: cn 1.5.47 `--help`; the fork's
//!   request held the earlier turns).
//! - **Store**: `$CONTINUE_GLOBAL_DIR` (default `~/.continue`) `/sessions/<id>.json`,
//!   `{"sessionId","title","workspaceDirectory","history":[{"message":{"role","content",
//!   "usage","toolCalls"},"toolCallStates":[…]}…],"usage"}`, written once the history has a
//!   message, and the index `sessions/sessions.json`, `[{"sessionId","dateCreated" (ms, a
//!   string),"workspaceDirectory"}]`. Messages have no times; a fork starts with a copy of
//!   its parent's history and names no parent (checked: cn 1.5.47 against a mock model).
//! - **Transcript**: the history, less the prefix copied from another session of the same
//!   directory (a fork's parent): user messages are prompts, the last assistant message with
//!   text the answer; `usage` (`prompt_tokens`, `completion_tokens`, `model`); tool calls'
//!   states: `Write`, `Edit`, `MultiEdit` (`filepath`) wrote a file, `Bash` (`command`) ran
//!   one, with `exit code N` in an error's output, 0 when it is `done`.
//! - **Hooks**: cn 1.5.47 has a loader for Claude Code's hooks (`.continue/settings.json`,
//!   `.claude/settings.json`), but no hook fired in a one-shot or interactive run: none are
//!   installed.
//! - **MCP**: `mcpServers` in the YAML configuration passed with `--config` (or
//!   `~/.continue/config.yaml`); `--mcp` takes only Continue Hub slugs (checked: cn 1.5.47
//!   `--help`).

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::mcp::{Mcp, Shape};
use super::store::{Candidate, Home, Query, Store, VarIs, same_dir, whole_json};
use super::words::{Collector, exit_code_after, read_file};
use super::{Agent, BASE, IdShape, Resume, SessionId, Straight};
use crate::model::Transcript;

/// `$CONTINUE_GLOBAL_DIR`, default `~/.continue`.
pub const HOME: Home = Home {
    var: Some("CONTINUE_GLOBAL_DIR"),
    var_is: VarIs::Dir,
    dir: ".continue",
};

/// The Continue CLI's row.
pub const AGENT: Agent = Agent {
    id: "continue-cli",
    name: "Continue CLI",
    aliases: &["cn"],
    executables: &["cn"],
    context_file: "AGENTS.md",
    also_reads: &[".continue/rules/*.md"],
    resume: Some(Resume {
        args: &["--fork", "{id}"],
        subcommands: &[],
        after_subcommand: &[],
    }),
    session_id: SessionId::Discover,
    id_shape: IdShape::Uuid,
    straight: Straight {
        // checked: cn 1.5.47 `--help` (Commands). Not straight: `review`, `serve`.
        subcommands: &["ls", "checks"],
        flags: &["-v", "--version", "-h", "--help"],
    },
    home: Some(HOME),
    store: Some(&Sessions),
    mcp: Some(Mcp {
        shape: Shape::ContinueYaml,
        hint: "# Continue CLI: merge into the config.yaml you start cn with (`cn --config …`) or ~/.continue/config.yaml",
        one_run: None,
    }),
    ..BASE
};

/// At most this many other sessions of the directory are compared with a session to find the
/// history it was forked from.
const MAX_PARENTS: usize = 64;

/// The `sessions` store.
struct Sessions;

impl Sessions {
    fn index(&self) -> Vec<Value> {
        self.dir()
            .and_then(|d| whole_json(&d.join("sessions.json")))
            .and_then(|v| v.as_array().cloned())
            .unwrap_or_default()
    }
}

impl Store for Sessions {
    fn dir(&self) -> Option<PathBuf> {
        Some(HOME.path()?.join("sessions"))
    }

    fn sessions(&self, q: &Query<'_>) -> Vec<Candidate> {
        let Some(dir) = self.dir() else {
            return Vec::new();
        };
        sessions(&dir, &self.index(), q)
    }

    fn has(&self, id: &str, _cwd: &Path) -> Option<bool> {
        Some(self.dir().and_then(|d| file_of(&d, id)).is_some())
    }

    fn transcript(
        &self,
        id: &str,
        cwd: &Path,
        _since: DateTime<Utc>,
        hint: Option<&Path>,
    ) -> Transcript {
        let Some(dir) = self.dir() else {
            return Transcript::missing("HOME is not set, so ~/.continue cannot be found");
        };
        let Some(path) = hint
            .filter(|h| h.is_file())
            .map(Path::to_path_buf)
            .or_else(|| file_of(&dir, id))
        else {
            return Transcript::missing(format!(
                "no Continue CLI session {id} was found under {}",
                dir.display()
            ));
        };
        let session = match read_file(&path).map(|t| serde_json::from_str::<Value>(&t)) {
            Ok(Ok(v)) => v,
            Ok(Err(e)) => {
                return Transcript::missing(format!("{} is not JSON: {e}", path.display()));
            }
            Err(why) => return Transcript::missing(why),
        };
        let others: Vec<Value> = self
            .index()
            .iter()
            .filter(|s| s["sessionId"].as_str().is_some_and(|s| s != id))
            .filter(|s| {
                s["workspaceDirectory"]
                    .as_str()
                    .is_some_and(|w| same_dir(w, cwd))
            })
            .filter_map(|s| file_of(&dir, s["sessionId"].as_str()?))
            .take(MAX_PARENTS)
            .filter_map(|p| read_file(&p).ok())
            .filter_map(|t| serde_json::from_str::<Value>(&t).ok())
            .collect();
        parse(&session, &others).finish(&path)
    }
}

/// `<dir>/<id>.json`, when it is a file.
fn file_of(dir: &Path, id: &str) -> Option<PathBuf> {
    if id.is_empty() || id.contains(['/', '\\']) || id.starts_with('.') || id == "sessions" {
        return None;
    }
    Some(dir.join(format!("{id}.json"))).filter(|p| p.is_file())
}

/// The sessions in the index of this directory created in the window.
fn sessions(dir: &Path, index: &[Value], q: &Query<'_>) -> Vec<Candidate> {
    index
        .iter()
        .filter(|s| {
            s["workspaceDirectory"]
                .as_str()
                .is_some_and(|w| same_dir(w, q.cwd))
        })
        .filter_map(|s| {
            let id = s["sessionId"].as_str()?;
            let ms: i64 = match &s["dateCreated"] {
                Value::String(t) => t.parse().ok()?,
                other => other.as_i64()?,
            };
            let at = DateTime::<Utc>::from_timestamp_millis(ms)?;
            Some(Candidate {
                id: id.to_string(),
                at,
                file: file_of(dir, id),
            })
        })
        .filter(|c| q.inside(c.at))
        .collect()
}

/// The `message` of each history item: what a fork copies.
fn messages(session: &Value) -> Vec<&Value> {
    session["history"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|h| &h["message"])
        .collect()
}

/// How many history items `session` starts with that are the whole history of one of
/// `others` (the session it was forked from), by role and content.
fn copied(session: &Value, others: &[Value]) -> usize {
    let mine = messages(session);
    let same = |a: &Value, b: &Value| a["role"] == b["role"] && a["content"] == b["content"];
    others
        .iter()
        .map(messages)
        .filter(|theirs| {
            !theirs.is_empty()
                && theirs.len() < mine.len()
                && theirs.iter().zip(&mine).all(|(a, b)| same(a, b))
        })
        .map(|theirs| theirs.len())
        .max()
        .unwrap_or(0)
}

/// The words of `session`'s history, but for what it copied from one of `others`.
pub(crate) fn parse(session: &Value, others: &[Value]) -> Collector {
    let mut c = Collector::default();
    let skip = copied(session, others);
    for item in session["history"]
        .as_array()
        .into_iter()
        .flatten()
        .skip(skip)
    {
        let m = &item["message"];
        let text = super::words::text_of(&m["content"], &["text"]);
        match m["role"].as_str().unwrap_or_default() {
            "user" => c.prompt(&text),
            "assistant" => {
                let u = &m["usage"];
                if u.is_object() {
                    if let Some(model) = u["model"].as_str() {
                        c.model(model);
                    }
                    c.tokens(
                        u["prompt_tokens"].as_u64(),
                        u["completion_tokens"].as_u64(),
                        u["prompt_tokens_details"]["cached_tokens"].as_u64(),
                        None,
                    );
                }
                for state in item["toolCallStates"].as_array().into_iter().flatten() {
                    let args = &state["parsedArgs"];
                    let output: String = state["output"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|o| o["content"].as_str())
                        .collect();
                    match state["toolCall"]["function"]["name"]
                        .as_str()
                        .unwrap_or_default()
                    {
                        "Write" | "Edit" | "MultiEdit" | "SearchAndReplaceInFile" => {
                            c.edited(args["filepath"].as_str().unwrap_or_default());
                        }
                        "Bash" => {
                            let code = match state["status"].as_str() {
                                Some("done") => Some(0),
                                _ => exit_code_after(&output, "exit code"),
                            };
                            c.ran(args["command"].as_str().unwrap_or_default(), code);
                        }
                        _ => {}
                    }
                }
                c.answer(&text);
            }
            _ => {}
        }
    }
    if let Some(model) = session["chatModelTitle"].as_str() {
        c.model(model);
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(text: &str) -> Value {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn prompts_answers_edits_and_commands_of_real_sessions() {
        let write = json(include_str!(
            "../../tests/fixtures/agents/continue/write.json"
        ));
        let t = parse(&write, &[]).finish(Path::new("/s.json"));
        assert_eq!(t.prompts, ["please WRITEFILE /tmp/agp/cn/p/probe.txt"]);
        assert_eq!(t.last_answer.as_deref(), Some("MOCK-ANSWER-9"));
        assert_eq!(t.model.as_deref(), Some("gpt-4.1"));
        assert_eq!(t.tokens.unwrap().input, Some(108 + 109));
        assert_eq!(t.edits, ["/tmp/agp/cn/p/probe.txt"]);
        let run = json(include_str!(
            "../../tests/fixtures/agents/continue/runcmd.json"
        ));
        let t = parse(&run, &[]).finish(Path::new("/s.json"));
        assert_eq!(
            (t.commands[0].command.as_str(), t.commands[0].exit_code),
            ("ls /nonexistent", Some(2))
        );
    }

    #[test]
    fn a_fork_gives_only_its_new_turns() {
        let base = json(include_str!(
            "../../tests/fixtures/agents/continue/base.json"
        ));
        let fork = json(include_str!(
            "../../tests/fixtures/agents/continue/fork.json"
        ));
        let other = json(include_str!(
            "../../tests/fixtures/agents/continue/write.json"
        ));
        assert_eq!(copied(&fork, &[other.clone(), base.clone()]), 2);
        let t = parse(&fork, &[other, base]).finish(Path::new("/s.json"));
        assert_eq!(t.prompts, ["second CN2"]);
        assert_eq!(t.last_answer.as_deref(), Some("MOCK-ANSWER-2"));
        assert_eq!(t.tokens.unwrap().input, Some(102));
        // Without its parent in the store, the whole history is read.
        let t = parse(&fork, &[]).finish(Path::new("/s.json"));
        assert_eq!(t.prompts, ["hello CN1", "second CN2"]);
    }

    #[test]
    fn sessions_come_from_the_index_by_directory_and_creation() {
        let index = json(include_str!(
            "../../tests/fixtures/agents/continue/sessions.json"
        ));
        let index = index.as_array().unwrap();
        let at = DateTime::<Utc>::from_timestamp_millis(1_796_139_601_608).unwrap();
        let q = Query {
            cwd: Path::new("/tmp/agp/cn/p"),
            from: at - chrono::Duration::seconds(2),
            to: at + chrono::Duration::seconds(2),
            program: None,
        };
        let found = sessions(Path::new("/nonexistent"), index, &q);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].id, "0935e687-16da-4380-844b-1a69ac480385");
        assert!(file_of(Path::new("/x"), "../y").is_none());
    }
}
