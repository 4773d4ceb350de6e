//! Claude Code (`claude`): everything pas-agent knows about it.
//!
//! - **Context**: `CLAUDE.md`, and `.claude/CLAUDE.md` and `CLAUDE.local.md`, in each directory
//!   from the one it starts in up to the root, plus `.claude/rules/*.md`; `@path` imports
//!   (code.claude.com/docs/en/memory; checked: the 2.1.197 binary's memory loader). It does
//!   not read `AGENTS.md`, with or without a `CLAUDE.md` (checked: claude 2.1.197 `-p`, each
//!   file's text looked for in the request to a mock model). `CLAUDE.local.md` is the
//!   personal file the documentation says to keep out of git: where `CLAUDE.md` is tracked,
//!   `run` puts the session there ([`Private::AlsoReads`]).
//! - **Launch**: `--session-id <uuid>` uses a caller-chosen id, `-r/--resume <id>` resumes one
//!   (code.claude.com/docs/en/cli-reference; checked: claude 2.1.197 `--help`). Issue
//!   anthropics/claude-code#44607 reports the flag not controlling the on-disk id in
//!   interactive mode, hence the store check after the run.
//! - **Store**: `$CLAUDE_CONFIG_DIR` (default `~/.claude`) `/projects/<cwd with every
//!   non-alphanumeric character as '-'>/<session id>.jsonl`, one JSON event per line, each
//!   with `sessionId` and `cwd` (code.claude.com/docs/en/claude-directory; checked: claude
//!   2.1.197 in `-p` mode and resumed with `--resume`, against a mock model).
//! - **Transcript** lines read (each has an RFC 3339 `timestamp`; a resumed session appends
//!   to the same file):
//!   - `{"type":"user","message":{"role":"user","content":"<prompt>"|[{"type":"text","text"}…]}}`
//!     is a prompt, unless it is `isMeta` (Claude's own injected text), `isCompactSummary`
//!     (the summary Claude writes after compacting), `isSidechain` (a subagent's), a tool
//!     result (content parts of type `tool_result`), or a slash command's echo (text starting
//!     with `<command-` or `<local-command-`);
//!   - `{"type":"assistant","message":{"model","content":[{"type":"text","text"}…],"usage":{
//!     "input_tokens","output_tokens","cache_read_input_tokens","cache_creation_input_tokens"}}}`
//!     is an answer; Claude writes one line per content block of a message, each with the
//!     message's `id` and usage, so usage is counted once per run of lines with one `id`, and
//!     the answer is the text of all the blocks of the last message that has text. Its
//!     `tool_use` parts name the files written (`Write`, `Edit`, `MultiEdit`: `file_path`;
//!     `NotebookEdit`: `notebook_path`) and the commands run (`Bash`: `command`); the
//!     `tool_result` part of a later user line with the call's `tool_use_id` says whether the
//!     file was written (not when `is_error`: a call refused for want of permission) and gives
//!     a command's exit code (`is_error` with `Exit code <n>`, else 0).
//!
//!   Other line types (`queue-operation`, `attachment`, `last-prompt`, `mode`, `summary`, …)
//!   are skipped.
//! - **Hooks**: `.claude/settings.json` (and the user's `settings.json` in its home),
//!   `SessionStart`, `Stop`, `SessionEnd`, each with a JSON payload holding `session_id`,
//!   `transcript_path` and `cwd`; a session-start hook's
//!   `hookSpecificOutput.additionalContext` reaches the model (code.claude.com/docs/en/hooks;
//!   checked: claude 2.1.197, tests/e2e/integrate.rs).
//! - **MCP**: `.mcp.json` at the project root, `claude mcp add`, and `--mcp-config <json>` for
//!   one run (code.claude.com/docs/en/mcp; checked: claude 2.1.197 `--help`).

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use super::args::ArgShape;
use super::hooks::{Event, Format, Hooks, Unit};
use super::mcp::{Mcp, OneRun, Place, Registration, Shape};
use super::store::{
    Candidate, Conversation, HEAD_BYTES, Home, MAX_LINE, Query, Resumable, Store, VarIs, copy_new,
    dashed, files, head, modified, same_dir, subdirs,
};
use super::words::{Collector, json_lines, read_file, text_of, time_of};
use super::{Agent, BASE, IdShape, Private, RESUME_FLAG, SessionId, Stop, StopSignal, Straight};
use crate::model::Transcript;

/// `$CLAUDE_CONFIG_DIR`, default `~/.claude`.
pub const HOME: Home = Home {
    var: Some("CLAUDE_CONFIG_DIR"),
    var_is: VarIs::Dir,
    dir: ".claude",
};

/// Claude Code's row.
pub const AGENT: Agent = Agent {
    id: "claude-code",
    name: "Claude Code",
    aliases: &["claude"],
    executables: &["claude"],
    context_file: "CLAUDE.md",
    also_reads: &[".claude/CLAUDE.md", "CLAUDE.local.md"],
    at_imports: true,
    private: Private::AlsoReads("CLAUDE.local.md"),
    resume: Some(RESUME_FLAG),
    session_id: SessionId::Choose {
        flag: "--session-id",
        unless: &[
            "--session-id",
            "-r",
            "--resume",
            "-c",
            "--continue",
            "--fork-session",
            "--from-pr",
            "--no-session-persistence",
        ],
    },
    // Ids: UUIDs, `<id>.jsonl` in the store (checked: claude 2.1.197).
    id_shape: IdShape::Uuid,
    straight: Straight {
        // checked: claude 2.1.197 `--help` (Commands; `-v/--version`, `-h/--help`).
        // `ultrareview` runs in the cloud and prints findings: no local session.
        subcommands: &[
            "agents",
            "auth",
            "auto-mode",
            "doctor",
            "gateway",
            "install",
            "mcp",
            "plugin",
            "plugins",
            "project",
            "setup-token",
            "ultrareview",
            "update",
            "upgrade",
        ],
        flags: &["-v", "--version", "-h", "--help"],
    },
    home: Some(HOME),
    store: Some(&Projects),
    hooks: Some(Hooks {
        key: "claude",
        project_file: ".claude/settings.json",
        user_file: "settings.json",
        format: Format::Json { comments: false },
        events: &[
            ("SessionStart", Event::SessionStart),
            ("Stop", Event::Stop),
            ("SessionEnd", Event::SessionEnd),
        ],
        // Claude Code gives session-end hooks 1.5 s unless a handler asks for more, up to
        // 60 s (code.claude.com/docs/en/hooks).
        timeout: 30,
        end_timeout: None,
        unit: Unit::Seconds,
        payload: super::hooks::CLAUDE_PAYLOAD,
        context: super::hooks::ContextOutput::HookSpecific,
        // Claude Code loads CLAUDE.md while its SessionStart hook runs: the model got the stale block
        // in one start and the refreshed one in another (checked: claude 2.1.197, tests/e2e/delivery.rs).
        reads_files_first: true,
        caveat: None,
        approvals: None,
        settings: &[],
        env_marker: None,
    }),
    mcp: Some(Mcp {
        shape: Shape::ClaudeJson,
        hint: "# Claude Code: save as .mcp.json at the project root (or pass it with --mcp-config), or run `claude mcp add pas-agent -- pas-agent mcp`",
        one_run: Some(OneRun::JsonFlag {
            flag: "--mcp-config",
        }),
        registrations: &[
            // checked: Claude Code 2.1.197 `claude mcp add` (local scope: the project's entry in
            // ~/.claude.json; `-s user`: its top level; `-s project`: .mcp.json).
            Registration {
                file: Place::Project(".mcp.json"),
                table: &["mcpServers"],
                comments: false,
            },
            Registration {
                file: Place::UserHome(".claude.json"),
                table: &["projects", "{root}", "mcpServers"],
                comments: false,
            },
            Registration {
                file: Place::UserHome(".claude.json"),
                table: &["mcpServers"],
                comments: false,
            },
        ],
    }),
    // checked: claude 2.1.197, interactive, against a mock model: SIGINT (as `kill` sends it,
    // not the key, which the TUI reads itself) and SIGTERM both end it within a second, the
    // transcript whole and a `last-prompt` line added, printing `claude --resume <id>`.
    stop: Stop {
        signals: &[StopSignal::Interrupt],
        checked: true,
    },
    // checked: claude 2.1.197 `--help` (commander: `<v>` one value, `[v]` an optional one,
    // `<v...>` every word up to the next flag; the prompt is positional).
    arg_shape: ArgShape {
        known: true,
        value_flags: &[
            "--agent",
            "--agents",
            "--append-system-prompt",
            "--append-system-prompt-file",
            "--debug-file",
            "--effort",
            "--fallback-model",
            "--input-format",
            "--json-schema",
            "--max-budget-usd",
            "--model",
            "-n",
            "--name",
            "--output-format",
            "--permission-mode",
            "--plugin-dir",
            "--plugin-url",
            "--remote-control-session-name-prefix",
            "--session-id",
            "--setting-sources",
            "--settings",
            "--system-prompt",
            "--system-prompt-file",
        ],
        optional_flags: &[
            "-d",
            "--debug",
            "--from-pr",
            "--prompt-suggestions",
            "--remote-control",
            "-r",
            "--resume",
            "-w",
            "--worktree",
        ],
        many_flags: &[
            "--add-dir",
            "--allowedTools",
            "--allowed-tools",
            "--betas",
            "--disallowedTools",
            "--disallowed-tools",
            "--file",
            "--mcp-config",
            "--tools",
        ],
        one_shot: &[
            "-p",
            "--print",
            "--input-format",
            "--output-format",
            "--json-schema",
            "--include-partial-messages",
            "--include-hook-events",
            "--replay-user-messages",
            "--max-budget-usd",
        ],
        prompt_flags: &[],
        session_flags: &[
            "--session-id",
            "-r",
            "--resume",
            "-c",
            "--continue",
            "--fork-session",
            "--from-pr",
            "--no-session-persistence",
        ],
        positional_prompts: true,
    },
    ..BASE
};

/// At most this many lines of a transcript are read looking for its `cwd`.
const CWD_LINES: usize = 50;

/// The `projects` store.
struct Projects;

impl Store for Projects {
    fn dir(&self) -> Option<PathBuf> {
        Some(HOME.path()?.join("projects"))
    }

    fn sessions(&self, q: &Query<'_>) -> Vec<Candidate> {
        self.dir().map(|d| sessions(&d, q)).unwrap_or_default()
    }

    fn has(&self, id: &str, _cwd: &Path) -> Option<bool> {
        Some(self.dir().is_some_and(|d| has(&d, id)))
    }

    fn resumable(&self, id: &str, cwd: &Path) -> Resumable {
        match self.dir() {
            Some(projects) => resumable(&projects, id, cwd),
            None => Resumable::Here,
        }
    }

    fn conversations(&self, dir: &Path, _program: Option<&Path>) -> Vec<Conversation> {
        self.dir()
            .map(|d| conversations(&d, dir))
            .unwrap_or_default()
    }

    fn session_file(&self, id: &str, _cwd: &Path) -> Option<PathBuf> {
        find(id, None)
    }

    fn transcript(
        &self,
        id: &str,
        _cwd: &Path,
        since: DateTime<Utc>,
        hint: Option<&Path>,
    ) -> Transcript {
        read(id, since, hint)
    }
}

/// Past this many characters a project key is cut and a hash of the whole path added.
const KEY_CHARS: usize = 200;

/// The key of `cwd` in the `projects` store: the path with every character that is not an
/// ASCII letter or digit as `-`; one longer than [`KEY_CHARS`] is cut there and followed by
/// `-` and the absolute value of the path's 32-bit Java-style string hash (over its UTF-16
/// units) in base 36 (checked: the 2.1.197 binary's project directory function).
pub(crate) fn project_key(cwd: &Path) -> String {
    let key = super::store::dashed(cwd);
    if key.len() <= KEY_CHARS {
        return key;
    }
    let hash = cwd.to_string_lossy().encode_utf16().fold(0i32, |h, u| {
        h.wrapping_shl(5).wrapping_sub(h).wrapping_add(i32::from(u))
    });
    let mut n = i64::from(hash).unsigned_abs();
    let mut digits = Vec::new();
    loop {
        digits.push(std::char::from_digit((n % 36) as u32, 36).unwrap_or('0'));
        n /= 36;
        if n == 0 {
            break;
        }
    }
    let base36: String = digits.into_iter().rev().collect();
    format!("{}-{base36}", &key[..KEY_CHARS])
}

/// Claude Code resumes a session from the project directory of the directory it starts in
/// (`No conversation found with session ID` otherwise): a transcript kept under another
/// directory's key is copied there, with its directory of subagent transcripts and tool
/// results.
fn resumable(projects: &Path, id: &str, cwd: &Path) -> Resumable {
    if id.contains(['/', '\\']) || id.starts_with('.') || id.is_empty() {
        return Resumable::Missing(format!("`{id}` is not a Claude Code session id"));
    }
    let name = format!("{id}.jsonl");
    let here = projects.join(project_key(cwd));
    if here.join(&name).is_file() {
        return Resumable::Here;
    }
    let Some(from) = subdirs(projects)
        .map(|d| d.join(&name))
        .find(|p| p.is_file())
    else {
        return Resumable::Missing(format!(
            "Claude Code keeps no transcript of session {id} (looked in {})",
            projects.display()
        ));
    };
    let to = here.join(&name);
    let copied = std::fs::create_dir_all(&here).and_then(|()| copy_new(&from, &to));
    if let Err(e) = copied {
        return Resumable::Missing(format!(
            "its transcript {} could not be copied to {}, where Claude Code started here looks: {e}",
            from.display(),
            here.display()
        ));
    }
    if let Some(dir) = from.parent().map(|p| p.join(id))
        && dir.is_dir()
    {
        let _ = copy_new(&dir, &here.join(id));
    }
    Resumable::Copied { from, to }
}

/// Whether `projects/<any>/<id>.jsonl` exists.
fn has(projects: &Path, id: &str) -> bool {
    let name = format!("{id}.jsonl");
    subdirs(projects).any(|d| d.join(&name).is_file())
}

/// Transcripts under `projects` written during the window whose events name this cwd (a
/// transcript has no start time of its own: its last write stands for it).
fn sessions(projects: &Path, q: &Query<'_>) -> Vec<Candidate> {
    let mut out = Vec::new();
    for dir in subdirs(projects) {
        for path in files(&dir) {
            if path.extension() != Some(OsStr::new("jsonl")) {
                continue;
            }
            let Some(mtime) = modified(&path) else {
                continue;
            };
            if mtime < q.from {
                continue;
            }
            let Some(id) = session_of(&path, q.cwd) else {
                continue;
            };
            out.push(Candidate {
                id,
                at: mtime,
                file: Some(path),
            });
        }
    }
    out
}

/// The transcripts of `dir`: those in its project directory (`projects/<dir with every
/// character but letters and digits as '-'>`, for the path as given and made canonical) whose
/// events name `dir`, each with its first prompt from the first [`HEAD_BYTES`] of the file.
fn conversations(projects: &Path, dir: &Path) -> Vec<Conversation> {
    let mut keys = vec![dashed(dir)];
    if let Ok(real) = dir.canonicalize()
        && !keys.contains(&dashed(&real))
    {
        keys.push(dashed(&real));
    }
    let mut out = Vec::new();
    for key in keys {
        for path in files(&projects.join(key)) {
            if path.extension() != Some(OsStr::new("jsonl")) {
                continue;
            }
            let (Some(id), Some(updated)) = (session_of(&path, dir), modified(&path)) else {
                continue;
            };
            let first_prompt = head(&path, HEAD_BYTES).and_then(|text| {
                parse(&text, DateTime::<Utc>::UNIX_EPOCH)
                    .finish(&path)
                    .prompts
                    .into_iter()
                    .next()
            });
            out.push(Conversation {
                id,
                updated,
                first_prompt,
                cwd: dir.to_path_buf(),
                file: Some(path),
            });
        }
    }
    out
}

/// The session id of a transcript whose events name `cwd`.
fn session_of(path: &Path, cwd: &Path) -> Option<String> {
    let file = std::fs::File::open(path).ok()?;
    for line in BufReader::new(file.take(MAX_LINE)).lines().take(CWD_LINES) {
        let Ok(line) = line else { break };
        let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue;
        };
        if let (Some(id), Some(dir)) = (v["sessionId"].as_str(), v["cwd"].as_str()) {
            return same_dir(dir, cwd).then(|| id.to_string());
        }
    }
    None
}

/// The transcript of session `id`: `hint` when it is a file, else the store's
/// `projects/*/<id>.jsonl`.
fn read(id: &str, since: DateTime<Utc>, hint: Option<&Path>) -> Transcript {
    let Some(path) = find(id, hint) else {
        return Transcript::missing(format!(
            "no Claude Code transcript of session {id} was found under {}",
            Projects
                .dir()
                .map(|d| d.display().to_string())
                .unwrap_or_else(|| "~/.claude/projects (no HOME)".into())
        ));
    };
    match read_file(&path) {
        Ok(text) => parse(&text, since).finish(&path),
        Err(why) => Transcript::missing(why),
    }
}

fn find(id: &str, hint: Option<&Path>) -> Option<PathBuf> {
    if let Some(h) = hint.filter(|h| h.is_file()) {
        return Some(h.to_path_buf());
    }
    // An id is a file name here: nothing that could leave the directory.
    if id.contains(['/', '\\']) || id.starts_with('.') {
        return None;
    }
    let projects = Projects.dir()?;
    let name = format!("{id}.jsonl");
    super::words::first_file(
        std::fs::read_dir(projects)
            .ok()?
            .flatten()
            .map(|e| e.path().join(&name)),
    )
}

/// The words of the lines after `since`.
pub(crate) fn parse(text: &str, since: DateTime<Utc>) -> Collector {
    let mut c = Collector::default();
    let mut last_message: Option<String> = None;
    // Files an edit tool call names, until its result says it wrote them (a call refused for
    // want of permission writes nothing).
    let mut writing: std::collections::HashMap<String, String> = Default::default();
    // The text blocks of the current message, one line each: its answer is all of them.
    let mut blocks: Vec<String> = Vec::new();
    json_lines(text, &mut c, |v, c| {
        let kind = v["type"].as_str().unwrap_or_default();
        if kind != "user" && kind != "assistant" {
            return;
        }
        if time_of(&v["timestamp"]).is_none_or(|t| t < since) {
            return;
        }
        if v["isSidechain"] == true || v["isMeta"] == true || v["isCompactSummary"] == true {
            return;
        }
        let message = &v["message"];
        // Claude Code writes its own errors ("Not logged in · Please run /login", an API
        // failure) as assistant entries with `isApiErrorMessage` and the model `<synthetic>`.
        if kind != "user" && (v["isApiErrorMessage"] == true || message["model"] == "<synthetic>") {
            c.error(&text_of(&message["content"], &["text"]));
            return;
        }
        if kind == "user" {
            last_message = None;
            let content = &message["content"];
            let is_tool_result = content
                .as_array()
                .is_some_and(|parts| parts.iter().any(|p| p["type"] == "tool_result"));
            if is_tool_result {
                for part in content.as_array().into_iter().flatten() {
                    if let Some(id) = part["tool_use_id"].as_str() {
                        c.exited(id, exit_code(part));
                        if let Some(path) = writing.remove(id)
                            && part["is_error"] != true
                        {
                            c.edited(&path);
                        }
                    }
                }
                return;
            }
            let text = text_of(content, &["text"]);
            let t = text.trim_start();
            if t.starts_with("<command-") || t.starts_with("<local-command-") {
                return;
            }
            c.prompt(&text);
            return;
        }
        if let Some(model) = message["model"].as_str()
            && model != "<synthetic>"
        {
            c.model(model);
        }
        let id = message["id"].as_str().map(str::to_string);
        let same_message = id.is_some() && id == last_message;
        if !same_message {
            blocks.clear();
        }
        if id.is_none() || id != last_message {
            let u = &message["usage"];
            if u.is_object() {
                c.tokens(
                    u["input_tokens"].as_u64(),
                    u["output_tokens"].as_u64(),
                    u["cache_read_input_tokens"].as_u64(),
                    u["cache_creation_input_tokens"].as_u64(),
                );
            }
        }
        last_message = id;
        for part in message["content"].as_array().into_iter().flatten() {
            if part["type"] != "tool_use" {
                continue;
            }
            let input = &part["input"];
            let id = part["id"].as_str().unwrap_or_default().to_string();
            match part["name"].as_str().unwrap_or_default() {
                "Write" | "Edit" | "MultiEdit" => {
                    let path = input["file_path"].as_str().unwrap_or_default();
                    writing.insert(id, path.to_string());
                }
                "NotebookEdit" => {
                    let path = input["notebook_path"].as_str().unwrap_or_default();
                    writing.insert(id, path.to_string());
                }
                "Bash" => c.ran_as(&id, input["command"].as_str().unwrap_or_default()),
                _ => {}
            }
        }
        let text = text_of(&message["content"], &["text"]);
        if !text.trim().is_empty() {
            blocks.push(text);
            c.answer(&blocks.join("\n\n"));
        }
    });
    c
}

/// The exit code of a `Bash` call from its `tool_result`: a failure is `is_error` with a text
/// starting `Exit code <n>`; a success has no code and means 0; an error without one (the call
/// was refused or interrupted) has none (checked: claude 2.1.197).
fn exit_code(result: &serde_json::Value) -> Option<i64> {
    if result["is_error"] != true {
        return Some(0);
    }
    let text = text_of(&result["content"], &["text"]);
    text.trim_start()
        .strip_prefix("Exit code ")?
        .split(|c: char| !c.is_ascii_digit() && c != '-')
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// Claude Code's own error entries are why the answer is missing, never the answer.
    #[test]
    fn an_api_error_entry_is_not_the_answer() {
        let f = Path::new("/s.jsonl");
        let error = serde_json::json!({"type": "assistant", "timestamp": "2026-01-02T00:00:02Z",
            "isApiErrorMessage": true,
            "message": {"role": "assistant", "id": "e", "model": "<synthetic>",
                        "content": [{"type": "text", "text": "Not logged in · Please run /login"}]}});
        let text = [
            line(
                "user",
                "2026-01-02T00:00:01Z",
                serde_json::json!("Port the job"),
                serde_json::json!({}),
            ),
            error.to_string(),
        ]
        .join("\n");
        let t = parse(&text, "2026-01-01T00:00:00Z".parse().unwrap()).finish(f);
        assert_eq!(t.prompts, ["Port the job"]);
        assert_eq!(t.last_answer, None);
        assert!(
            t.missing
                .as_deref()
                .is_some_and(|m| m.contains("Not logged in")),
            "{t:?}"
        );
        assert_eq!(t.model, None);
    }

    fn line(kind: &str, t: &str, content: Value, extra: Value) -> String {
        let mut v = serde_json::json!({"type": kind, "timestamp": t,
            "message": {"role": kind, "id": "m", "model": "claude-x", "content": content,
                        "usage": {"input_tokens": 10, "output_tokens": 5}}});
        if let (Some(o), Some(e)) = (v.as_object_mut(), extra.as_object()) {
            o.extend(e.clone());
        }
        v.to_string()
    }

    #[test]
    fn only_turns_after_since_and_only_real_prompts() {
        let text = [
            line(
                "user",
                "2026-01-01T00:00:00Z",
                "old prompt".into(),
                Value::Null,
            ),
            line(
                "assistant",
                "2026-01-01T00:00:01Z",
                serde_json::json!([{"type":"text","text":"old answer"}]),
                Value::Null,
            ),
            line(
                "user",
                "2026-01-02T00:00:00Z",
                "new prompt".into(),
                Value::Null,
            ),
            line(
                "user",
                "2026-01-02T00:00:00Z",
                "injected".into(),
                serde_json::json!({"isMeta": true}),
            ),
            line(
                "user",
                "2026-01-02T00:00:00Z",
                serde_json::json!([{"type":"tool_result","content":"x"}]),
                Value::Null,
            ),
            line(
                "assistant",
                "2026-01-02T00:00:01Z",
                serde_json::json!([{"type":"tool_use","name":"Write"}]),
                Value::Null,
            ),
            line(
                "assistant",
                "2026-01-02T00:00:02Z",
                serde_json::json!([{"type":"text","text":"new answer"}]),
                Value::Null,
            ),
            "{not json".to_string(),
        ]
        .join("\n");
        let since = time_of(&"2026-01-01T12:00:00Z".into()).unwrap();
        let t = parse(&text, since).finish(Path::new("/t.jsonl"));
        assert_eq!(t.prompts, ["new prompt"]);
        assert_eq!(t.last_answer.as_deref(), Some("new answer"));
        assert_eq!(t.model.as_deref(), Some("claude-x"));
        // One message id across its lines: its usage counts once.
        assert_eq!(t.tokens.as_ref().unwrap().input, Some(10));
        assert!(t.missing.unwrap().contains("1 entry"));
    }

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn window(cwd: &Path, start: DateTime<Utc>) -> Query<'_> {
        Query {
            cwd,
            from: start - chrono::Duration::seconds(2),
            to: start + chrono::Duration::seconds(32),
            program: None,
        }
    }

    fn ids(mut found: Vec<Candidate>) -> Vec<String> {
        found.sort_by_key(|c| std::cmp::Reverse(c.at));
        found.into_iter().map(|c| c.id).collect()
    }

    #[test]
    fn project_keys_follow_claude_codes_rule() {
        assert_eq!(project_key(Path::new("/home/u/my.app")), "-home-u-my-app");
        assert_eq!(project_key(Path::new("/tmp/é😀")), "-tmp----");
        // Long paths: cut at 200, then the path's hash in base 36 (values from the rule as the
        // 2.1.197 binary computes it: `(h << 5) - h + unit | 0` over UTF-16 units).
        let long = format!("/{}", "a".repeat(250));
        let key = project_key(Path::new(&long));
        assert!(key.starts_with(&format!("-{}", "a".repeat(199))), "{key}");
        let hash = long
            .encode_utf16()
            .fold(0i32, |h, u| h.wrapping_mul(31).wrapping_add(i32::from(u)));
        let tail = &key[201..];
        assert_eq!(
            i64::from_str_radix(tail, 36).unwrap(),
            i64::from(hash).abs()
        );
    }

    #[test]
    fn a_transcript_kept_under_another_directory_is_copied_where_claude_looks() {
        let tmp = tempfile::tempdir().unwrap();
        let projects = tmp.path().join("projects");
        let old = Path::new("/old/place/repo");
        let new = Path::new("/new/place/repo");
        let id = "3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b";
        write(
            &projects.join(project_key(old)).join(format!("{id}.jsonl")),
            "{}\n",
        );
        write(
            &projects
                .join(project_key(old))
                .join(id)
                .join("subagents/a.jsonl"),
            "{}\n",
        );
        assert_eq!(resumable(&projects, id, old), Resumable::Here);
        let Resumable::Copied { to, .. } = resumable(&projects, id, new) else {
            panic!("not copied");
        };
        assert_eq!(
            to,
            projects.join(project_key(new)).join(format!("{id}.jsonl"))
        );
        assert!(
            projects
                .join(project_key(new))
                .join(id)
                .join("subagents/a.jsonl")
                .is_file()
        );
        assert_eq!(resumable(&projects, id, new), Resumable::Here);
        assert!(matches!(
            resumable(&projects, "0000", new),
            Resumable::Missing(_)
        ));
        assert!(matches!(
            resumable(&projects, "../x", new),
            Resumable::Missing(_)
        ));
    }

    #[test]
    fn transcripts_are_matched_by_their_cwd() {
        let tmp = tempfile::tempdir().unwrap();
        let projects = tmp.path().join("projects");
        let cwd = tmp.path().join("w");
        std::fs::create_dir_all(&cwd).unwrap();
        let line = |id: &str, dir: &Path| {
            format!(
                "{{\"type\":\"queue-operation\",\"sessionId\":\"{id}\"}}\n{{\"type\":\"user\",\"sessionId\":\"{id}\",\"cwd\":\"{}\"}}\n",
                dir.display()
            )
        };
        write(&projects.join("-w/abc.jsonl"), &line("abc", &cwd));
        write(&projects.join("-other/zzz.jsonl"), &line("zzz", tmp.path()));
        let start = Utc::now() - chrono::Duration::seconds(1);
        assert_eq!(ids(sessions(&projects, &window(&cwd, start))), ["abc"]);
        assert!(has(&projects, "abc") && !has(&projects, "nope"));
    }

    /// Claude Code writes each content block of a message as a line of its own, with the
    /// message's id: the answer is every text block of the message, not the last one.
    #[test]
    fn an_answer_in_several_text_blocks_is_whole() {
        let block = |t: &str, text: &str| {
            serde_json::json!({"type": "assistant", "timestamp": t,
                "message": {"role": "assistant", "id": "msg_1", "model": "claude-x",
                            "content": [{"type": "text", "text": text}]}})
            .to_string()
        };
        let text = [
            line(
                "user",
                "2026-01-02T00:00:00Z",
                "Summarise".into(),
                Value::Null,
            ),
            block("2026-01-02T00:00:01Z", "First part."),
            serde_json::json!({"type": "assistant", "timestamp": "2026-01-02T00:00:01Z",
                "message": {"role": "assistant", "id": "msg_1", "model": "claude-x",
                            "content": [{"type": "tool_use", "name": "Read", "input": {}}]}})
            .to_string(),
            block("2026-01-02T00:00:02Z", "Second part."),
        ]
        .join("\n");
        let since = time_of(&"2026-01-01T12:00:00Z".into()).unwrap();
        let t = parse(&text, since).finish(Path::new("/t.jsonl"));
        assert_eq!(
            t.last_answer.as_deref(),
            Some("First part.\n\nSecond part.")
        );
    }

    #[test]
    fn the_files_its_tools_wrote_and_the_commands_they_ran_are_kept() {
        let text = [
            line(
                "assistant",
                "2026-01-02T00:00:01Z",
                serde_json::json!([
                    {"type": "tool_use", "id": "w", "name": "Write", "input": {"file_path": "/w/a.rs", "content": "x"}},
                    {"type": "tool_use", "id": "b", "name": "Bash", "input": {"command": "cargo test"}},
                    {"type": "tool_use", "id": "e", "name": "Edit", "input": {"file_path": "/w/c.rs"}},
                    {"type": "tool_use", "id": "r", "name": "Read", "input": {"file_path": "/w/b.rs"}}
                ]),
                Value::Null,
            ),
            line(
                "user",
                "2026-01-02T00:00:02Z",
                serde_json::json!([
                    {"type": "tool_result", "tool_use_id": "w", "content": "File created"},
                    {"type": "tool_result", "tool_use_id": "b", "is_error": true, "content": "Exit code 101\ntest failed"},
                    {"type": "tool_result", "tool_use_id": "e", "is_error": true, "content": "Claude requested permissions to write to /w/c.rs, but you haven't granted it yet."},
                    {"type": "tool_result", "tool_use_id": "r", "content": "1\tx"}
                ]),
                Value::Null,
            ),
        ]
        .join("\n");
        let since = time_of(&"2026-01-01T12:00:00Z".into()).unwrap();
        let t = parse(&text, since).finish(Path::new("/t.jsonl"));
        assert_eq!(t.edits, ["/w/a.rs"], "a refused edit wrote nothing");
        assert_eq!(t.commands.len(), 1);
        assert_eq!(t.commands[0].command, "cargo test");
        assert_eq!(t.commands[0].exit_code, Some(101));
    }

    /// A transcript Claude Code 2.1.197 wrote: `Write`, `Edit`, `Bash` exiting 2, `echo ok`
    /// and `touch`, each exit code from its `tool_result`.
    #[test]
    fn bash_exit_codes_come_from_the_tool_results() {
        let text = include_str!("../../tests/fixtures/transcripts/claude-write-edit-bash.jsonl");
        let t = parse(text, DateTime::UNIX_EPOCH).finish(Path::new("/t.jsonl"));
        assert_eq!(
            t.edits,
            ["/work/notes/probe-c/scratch/pas-claude/work/probe_written.txt"]
        );
        let ran: Vec<(&str, Option<i64>)> = t
            .commands
            .iter()
            .map(|c| (c.command.as_str(), c.exit_code))
            .collect();
        assert_eq!(
            ran,
            [
                ("ls /nonexistent", Some(2)),
                ("echo ok", Some(0)),
                ("touch touched.txt", Some(0))
            ]
        );
    }
}
