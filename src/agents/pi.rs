//! pi (`pi`, npm `@mariozechner/pi-coding-agent`): everything pas-agent knows about it.
//!
//! - **Context**: `AGENTS.md`, else `CLAUDE.md`, in the working directory and each parent (one
//!   file per directory, AGENTS.md first), and `~/.pi/agent/AGENTS.md`; no `@path` imports
//!   (the package's docs/usage.md "Context Files"; checked: pi 0.73.1, with both files present
//!   only AGENTS.md reached the model).
//! - **Launch**: no way to choose a new session's id (`--session <unknown id>` is an error):
//!   it is read from the store. `--session <id>` resumes one, `--fork <id>` copies it under a
//!   new id, `-c/--continue` and `-r/--resume` pick the latest or from a list, `--no-session`
//!   keeps none (checked: pi 0.73.1 `--help`, and the earlier turns in the model's request).
//! - **Store**: `$PI_CODING_AGENT_SESSION_DIR`, else `$PI_CODING_AGENT_DIR` (default
//!   `~/.pi/agent`) `/sessions/--<cwd without its leading '/', each '/', '\' and ':' as
//!   '-'>--/<time>_<id>.jsonl`; the first line is `{"type":"session","id","timestamp","cwd"}`
//!   (a fork adds `parentSession` and copies the entries with their times), then entries with
//!   `id` and `parentId` forming a tree: the conversation is the branch that ends at the last
//!   entry (`getDefaultSessionDir` and `forkFrom` in dist/core/session-manager.js; checked: pi
//!   0.73.1 one-shots, resumes, an extension).
//! - **Transcript**: on that branch, after `since`, `message` entries: `user` messages are
//!   prompts; `assistant` ones give the answer (text parts), `model`, `usage.{input,output,
//!   cacheRead,cacheWrite}`, an error (`stopReason` `error`, `errorMessage`), and tool calls:
//!   `write`, `edit` (`arguments.path`) wrote a file, `bash` (`arguments.command`) ran one,
//!   whose `toolResult` ends in `Command exited with code N` when it failed. Extensions'
//!   `custom_message` entries (pas-agent's context among them), summaries and the user's own
//!   `!` commands are not the conversation's words.
//! - **Hooks**: extensions, TypeScript files in `.pi/extensions/` (and the home's
//!   `extensions/`) loaded at start; pas-agent owns `pas-agent.ts`, which runs `pas-agent
//!   lifecycle pi <event>` on `session_start`, `agent_end` and `session_shutdown` with a JSON
//!   payload, and gives the model the session as a hidden message before the first prompt
//!   (github.com/badlogic/pi-mono packages/coding-agent docs/extensions.md; checked: pi 0.73.1
//!   in print mode).
//! - **MCP**: none, by design (the package's README).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::hooks::{ContextOutput, Event, Format, Hooks, Unit};
use super::store::{
    Candidate, Home, Query, Resumable, Store, VarIs, copy_rehomed, env_dir, files, first_line,
    same_dir, subdirs,
};
use super::words::{Collector, exit_code_after, session_file, time_of};
use super::{Agent, BASE, IdShape, Resume, SessionId, Straight};
use crate::model::Transcript;

/// `$PI_CODING_AGENT_DIR`, default `~/.pi/agent`.
pub const HOME: Home = Home {
    var: Some("PI_CODING_AGENT_DIR"),
    var_is: VarIs::Dir,
    dir: ".pi/agent",
};

/// The extension pas-agent owns (`.pi/extensions/pas-agent.ts`).
const EXTENSION: &str = r#"// pas-agent's extension for pi, written by `pas-agent integrate pi` (`--remove` deletes it).
// It runs pas-agent's lifecycle hooks from pi's events, with a JSON payload on stdin, and hands
// the model the session that the start hook prints before the first prompt.
import { spawnSync } from "node:child_process";

const START = {command:session-start};
const STOP = {command:stop};
const END = {command:session-end};

function lastAnswer(ctx: any): string | undefined {
  const entries = ctx.sessionManager.getBranch ? ctx.sessionManager.getBranch() : ctx.sessionManager.getEntries();
  for (let i = entries.length - 1; i >= 0; i--) {
    const e = entries[i];
    if (e.type === "message" && e.message?.role === "assistant") {
      const text = (e.message.content || []).filter((c: any) => c.type === "text").map((c: any) => c.text).join("");
      if (text) return text;
    }
  }
  return undefined;
}

function run(command: string, ctx: any, extra: Record<string, unknown>): string {
  try {
    const sm = ctx.sessionManager;
    const payload = { session_id: sm.getSessionId(), transcript_path: sm.getSessionFile(), cwd: ctx.cwd, ...extra };
    const r = spawnSync("sh", ["-c", command], { input: JSON.stringify(payload), encoding: "utf8", timeout: 30000 });
    return r.stdout || "";
  } catch {
    return "";
  }
}

export default function (pi: any) {
  let context: string | undefined;
  pi.on("session_start", async (event: any, ctx: any) => {
    const out = run(START, ctx, { source: event?.reason });
    try {
      context = JSON.parse(out).additionalContext;
    } catch {
      context = undefined;
    }
  });
  pi.on("before_agent_start", async () => {
    if (!context) return undefined;
    const content = context;
    context = undefined;
    return { message: { customType: "pas-agent", content, display: false } };
  });
  pi.on("agent_end", async (_event: any, ctx: any) => {
    run(STOP, ctx, { last_assistant_message: lastAnswer(ctx) });
  });
  pi.on("session_shutdown", async (_event: any, ctx: any) => {
    run(END, ctx, {});
  });
}
"#;

/// pi's row.
pub const AGENT: Agent = Agent {
    id: "pi",
    name: "pi",
    aliases: &["pi-coding-agent"],
    executables: &["pi"],
    context_file: "AGENTS.md",
    also_reads: &["CLAUDE.md"],
    resume: Some(Resume {
        args: &["--session", "{id}"],
        subcommands: &[],
        after_subcommand: &[],
    }),
    session_id: SessionId::Discover,
    // Ids: UUID v7, in the file name and the header (checked: pi 0.73.1).
    id_shape: IdShape::Uuid,
    straight: Straight {
        // checked: pi 0.73.1 `--help` (Commands; options that print and exit).
        subcommands: &["install", "remove", "uninstall", "update", "list", "config"],
        flags: &[
            "-h",
            "--help",
            "-v",
            "--version",
            "--export",
            "--list-models",
        ],
    },
    home: Some(HOME),
    store: Some(&Sessions),
    hooks: Some(Hooks {
        key: "pi",
        project_file: ".pi/extensions/pas-agent.ts",
        user_file: "extensions/pas-agent.ts",
        format: Format::Owned {
            template: EXTENSION,
        },
        events: &[
            ("session_start", Event::SessionStart),
            ("agent_end", Event::Stop),
            ("session_shutdown", Event::SessionEnd),
        ],
        timeout: 30,
        end_timeout: None,
        unit: Unit::Seconds,
        payload: super::hooks::CLAUDE_PAYLOAD,
        context: ContextOutput::TopLevel,
        // Not checked: assumed, so that a stale block it read is never left uncontradicted.
        reads_files_first: true,
        caveat: None,
        approvals: None,
        settings: &[],
        env_marker: None,
    }),
    ..BASE
};

/// The `sessions` store.
struct Sessions;

impl Sessions {
    /// The directory of `cwd`'s session files.
    fn of(&self, cwd: &Path) -> Option<PathBuf> {
        if let Some(dir) = env_dir("PI_CODING_AGENT_SESSION_DIR") {
            return Some(dir);
        }
        let cwd = cwd.to_string_lossy();
        let safe = cwd
            .strip_prefix(['/', '\\'])
            .unwrap_or(&cwd)
            .replace(['/', '\\', ':'], "-");
        Some(HOME.path()?.join("sessions").join(format!("--{safe}--")))
    }
}

impl Store for Sessions {
    fn dir(&self) -> Option<PathBuf> {
        env_dir("PI_CODING_AGENT_SESSION_DIR").or_else(|| Some(HOME.path()?.join("sessions")))
    }

    fn sessions(&self, q: &Query<'_>) -> Vec<Candidate> {
        self.of(q.cwd).map(|d| sessions(&d, q)).unwrap_or_default()
    }

    /// pi opens `--session <id>` directly only from this directory's key; one found under
    /// another key makes it ask on the terminal whether to fork it (`resolveSessionPath` in
    /// dist/main.js; checked: pi 0.73.1), and it takes the session's directory from the file's
    /// header. A session kept under another key is copied here with this directory in its
    /// header. With `$PI_CODING_AGENT_SESSION_DIR` (one directory for all) it is found as it is.
    fn resumable(&self, id: &str, cwd: &Path) -> Resumable {
        if env_dir("PI_CODING_AGENT_SESSION_DIR").is_some() {
            return Resumable::Here;
        }
        let real = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
        match (self.dir(), self.of(&real)) {
            (Some(root), Some(here)) => resumable(&root, &here, id, &real),
            _ => Resumable::Here,
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
            self.of(cwd),
            |d| find(d, id),
            &format!("pi session {id}"),
            "~/.pi/agent/sessions (no HOME)",
        ) {
            Ok((path, text)) => parse(&text, since).finish(&path),
            Err(why) => Transcript::missing(why),
        }
    }
}

/// [`Store::resumable`] for the store at `root`: the session `id` in `here` (the directory of
/// `cwd`'s sessions), else one in another directory of `root` copied there with `cwd` in its
/// header.
fn resumable(root: &Path, here: &Path, id: &str, cwd: &Path) -> Resumable {
    if find(here, id).is_some() {
        return Resumable::Here;
    }
    let Some(from) = subdirs(root).find_map(|d| find(&d, id)) else {
        return Resumable::Missing(format!(
            "pi keeps no session {id} (looked in {})",
            root.display()
        ));
    };
    let to = here.join(from.file_name().unwrap_or_default());
    match std::fs::create_dir_all(here).and_then(|()| copy_rehomed(&from, &to, cwd)) {
        Ok(()) => Resumable::Copied { from, to },
        Err(e) => Resumable::Missing(format!(
            "its file {} could not be copied to {}, where pi started here looks: {e}",
            from.display(),
            here.display()
        )),
    }
}

/// `<dir>/<time>_<id>.jsonl`.
fn find(dir: &Path, id: &str) -> Option<PathBuf> {
    if id.is_empty() || id.contains(['/', '\\']) {
        return None;
    }
    let suffix = format!("_{id}.jsonl");
    files(dir).find(|p| {
        p.file_name()
            .is_some_and(|n| n.to_string_lossy().ends_with(&suffix))
    })
}

/// The sessions in `dir` of this cwd whose header says they started in the window.
fn sessions(dir: &Path, q: &Query<'_>) -> Vec<Candidate> {
    let mut out = Vec::new();
    for path in files(dir) {
        if path.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        let Some(head) = first_line(&path) else {
            continue;
        };
        let (Some(id), Some(at)) = (head["id"].as_str(), time_of(&head["timestamp"])) else {
            continue;
        };
        let cwd_ok = head["cwd"].as_str().is_none_or(|c| same_dir(c, q.cwd));
        if head["type"] == "session" && cwd_ok && q.inside(at) {
            out.push(Candidate {
                id: id.to_string(),
                at,
                file: Some(path),
            });
        }
    }
    out
}

/// The text parts of a message's content (a string is its own text).
fn text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        _ => content
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p["type"] == "text")
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
    }
}

/// The words of the current branch's messages after `since`.
pub(crate) fn parse(text_: &str, since: DateTime<Utc>) -> Collector {
    let mut c = Collector::default();
    let mut entries: Vec<Value> = Vec::new();
    super::words::json_lines(text_, &mut c, |v, _| entries.push(v.clone()));
    // The branch: the last entry and its ancestors.
    let parent: HashMap<&str, &str> = entries
        .iter()
        .filter_map(|e| Some((e["id"].as_str()?, e["parentId"].as_str()?)))
        .collect();
    let mut branch: HashSet<&str> = HashSet::new();
    let mut at = entries.iter().rev().find_map(|e| e["id"].as_str());
    while let Some(id) = at {
        if !branch.insert(id) {
            break;
        }
        at = parent.get(id).copied();
    }
    let mut commands: HashMap<String, String> = HashMap::new();
    for e in &entries {
        if e["type"] != "message" || !e["id"].as_str().is_some_and(|id| branch.contains(id)) {
            continue;
        }
        if time_of(&e["timestamp"]).is_none_or(|t| t < since) {
            continue;
        }
        let m = &e["message"];
        match m["role"].as_str().unwrap_or_default() {
            "user" => c.prompt(&text(&m["content"])),
            "assistant" => {
                if let Some(model) = m["model"].as_str() {
                    c.model(model);
                }
                let u = &m["usage"];
                if u.is_object() {
                    c.tokens(
                        u["input"].as_u64(),
                        u["output"].as_u64(),
                        u["cacheRead"].as_u64(),
                        u["cacheWrite"].as_u64(),
                    );
                }
                for call in m["content"].as_array().into_iter().flatten() {
                    if call["type"] != "toolCall" {
                        continue;
                    }
                    let args = &call["arguments"];
                    match call["name"].as_str().unwrap_or_default() {
                        "write" | "edit" => c.edited(args["path"].as_str().unwrap_or_default()),
                        "bash" => {
                            if let (Some(id), Some(command)) =
                                (call["id"].as_str(), args["command"].as_str())
                            {
                                commands.insert(id.to_string(), command.to_string());
                            }
                        }
                        _ => {}
                    }
                }
                if m["stopReason"] == "error" {
                    c.error(
                        m["errorMessage"]
                            .as_str()
                            .unwrap_or("the model call failed"),
                    );
                } else {
                    c.answer(&text(&m["content"]));
                }
            }
            "toolResult" => {
                if let Some(command) = m["toolCallId"].as_str().and_then(|id| commands.remove(id)) {
                    let code = exit_code_after(&text(&m["content"]), "exited with code")
                        .or_else(|| (m["isError"] == false).then_some(0));
                    c.ran(&command, code);
                }
            }
            _ => {}
        }
    }
    for command in commands.into_values() {
        c.ran(&command, None);
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_kept_under_another_directory_is_copied_here_with_this_cwd() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("sessions");
        let id = "01a23211-19b1-73b9-9db9-703f23332ed7";
        let text = include_str!("../../tests/fixtures/agents/pi/resumed.jsonl");
        let name = format!("2026-12-01T14-45-11-218Z_{id}.jsonl");
        let kept = root.join("--old-proj--");
        std::fs::create_dir_all(&kept).unwrap();
        std::fs::write(kept.join(&name), text).unwrap();
        let here = root.join("--new-proj--");
        let cwd = Path::new("/new/proj");
        let Resumable::Copied { from, to } = resumable(&root, &here, id, cwd) else {
            panic!("not copied");
        };
        assert_eq!((from, to.clone()), (kept.join(&name), here.join(&name)));
        let copied = std::fs::read_to_string(&to).unwrap();
        let head: Value = serde_json::from_str(copied.lines().next().unwrap()).unwrap();
        assert_eq!(
            (head["cwd"].as_str(), head["id"].as_str()),
            (Some("/new/proj"), Some(id))
        );
        assert_eq!(
            copied.split_once('\n').unwrap().1,
            text.split_once('\n').unwrap().1
        );
        assert_eq!(resumable(&root, &here, id, cwd), Resumable::Here);
        assert!(matches!(
            resumable(&root, &here, "01a23211-0000-73b9-9db9-703f23332ed7", cwd),
            Resumable::Missing(_)
        ));
    }

    fn since(t: &str) -> DateTime<Utc> {
        t.parse().unwrap()
    }

    #[test]
    fn prompts_answers_edits_and_commands_of_real_sessions() {
        let text = include_str!("../../tests/fixtures/agents/pi/write.jsonl");
        let t = parse(text, since("2026-01-01T00:00:00Z")).finish(Path::new("/s.jsonl"));
        assert_eq!(t.prompts, ["please WRITEFILE for the fixture"]);
        assert_eq!(
            t.last_answer.as_deref(),
            Some("Mock answer #26 after tool result")
        );
        assert_eq!(t.model.as_deref(), Some("mock-model"));
        assert_eq!(t.tokens.unwrap().input, Some(275 + 286));
        assert_eq!(t.edits, ["probe.txt"]);
        let text = include_str!("../../tests/fixtures/agents/pi/runcmd.jsonl");
        let t = parse(text, since("2026-01-01T00:00:00Z")).finish(Path::new("/s.jsonl"));
        assert_eq!(
            (t.commands[0].command.as_str(), t.commands[0].exit_code),
            ("ls /nonexistent", Some(2))
        );
    }

    #[test]
    fn a_resumed_session_gives_its_new_turns_and_injected_context_is_no_prompt() {
        let text = include_str!("../../tests/fixtures/agents/pi/resumed.jsonl");
        let t = parse(text, since("2026-12-01T14:45:14Z")).finish(Path::new("/s.jsonl"));
        assert_eq!(t.prompts, ["resumed second prompt"]);
        assert_eq!(
            t.last_answer.as_deref(),
            Some("Mock answer #30 (resumed second prompt)")
        );
        let text = include_str!("../../tests/fixtures/agents/pi/extension.jsonl");
        let t = parse(text, since("2026-01-01T00:00:00Z")).finish(Path::new("/s.jsonl"));
        assert_eq!(t.prompts, ["extension fixture prompt"]);
    }

    #[test]
    fn only_the_current_branch_counts() {
        let lines = [
            r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-02T00:00:00Z","cwd":"/w"}"#,
            r#"{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-02T00:00:01Z","message":{"role":"user","content":[{"type":"text","text":"first"}]}}"#,
            r#"{"type":"message","id":"b","parentId":"a","timestamp":"2026-01-02T00:00:02Z","message":{"role":"assistant","content":[{"type":"text","text":"abandoned"}]}}"#,
            r#"{"type":"branch_summary","id":"c","parentId":"a","timestamp":"2026-01-02T00:00:03Z","summary":"recap"}"#,
            r#"{"type":"message","id":"d","parentId":"c","timestamp":"2026-01-02T00:00:04Z","message":{"role":"assistant","content":[{"type":"text","text":"kept"}]}}"#,
        ]
        .join("\n");
        let t = parse(&lines, since("2026-01-01T00:00:00Z")).finish(Path::new("/s.jsonl"));
        assert_eq!(t.prompts, ["first"]);
        assert_eq!(t.last_answer.as_deref(), Some("kept"));
    }

    #[test]
    fn sessions_are_found_by_their_header() {
        let tmp = tempfile::tempdir().unwrap();
        let name = "2026-12-01T14-45-11-218Z_01a23211-19b1-73b9-9db9-703f23332ed7.jsonl";
        std::fs::write(
            tmp.path().join(name),
            include_str!("../../tests/fixtures/agents/pi/resumed.jsonl"),
        )
        .unwrap();
        let at = since("2026-12-01T14:45:11Z");
        let q = Query {
            cwd: Path::new("/work/notes/probe-b/pi/fxproj"),
            from: at - chrono::Duration::seconds(2),
            to: at + chrono::Duration::seconds(2),
            program: None,
        };
        let found = sessions(tmp.path(), &q);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].id, "01a23211-19b1-73b9-9db9-703f23332ed7");
        assert!(find(tmp.path(), "01a23211-19b1-73b9-9db9-703f23332ed7").is_some());
    }
}
