//! Gemini CLI (`gemini`): everything pas-agent knows about it.
//!
//! - **Context**: `GEMINI.md` in the workspace and its parents, with `@path` imports
//!   (geminicli.com/docs/cli/gemini-md, docs/reference/memport; checked: `findImports` in the
//!   0.61.0 bundle).
//! - **Launch**: `-r/--resume <uuid|index|latest>` (geminicli.com/docs/cli/session-management;
//!   checked: gemini 0.61.0, which resumes by UUID). 0.61 also has `--session-id`, which older
//!   releases lack; the chat store works for all of them.
//! - **Store**: `$GEMINI_CLI_HOME` (default `~`) `/.gemini/tmp/<project>/chats/`, where
//!   `<project>` is the short id `.gemini/projects.json` maps the working directory to (each
//!   such directory also holds `.project_root`); the first line of a chat file is
//!   `{"sessionId","projectHash","startTime",…,"kind":"main"}` (github.com/google-gemini/
//!   gemini-cli `packages/core/src/config/storage.ts`, `chatRecordingService.ts`; checked:
//!   gemini 0.61.0 `packages/core/src/config/storage.ts` in its bundle).
//! - **Transcript**: the chat file `session-<start time>-<first 8 characters of the session
//!   id>.jsonl` (legacy: one `.json` object with a `messages` array) (checked with gemini
//!   0.61.0 `-p` and `--resume`, against a mock model).
//!
//!   The JSON-lines file is a log of changes to one conversation record: a header line
//!   (`sessionId`, `startTime`, `kind`), message lines (`{"id","timestamp","type":"user"|
//!   "gemini"|"info"|"error",…,"content"}`), and `{"$set":{…}}` lines that replace fields,
//!   `messages` included (a resumed session rewrites its earlier messages this way). Messages
//!   are therefore taken by `id`, the latest version of each, in the order they first appeared:
//!   - `type` `user`: a prompt (`content` a string or `[{"text"}…]`), except the
//!     `<session_context>` text Gemini CLI sends first and the `<hook_context>` block a hook's
//!     context (pas-agent's session) becomes before the prompt;
//!   - `type` `gemini`: an answer (`content`), its `model` and `tokens` (`input`, `output`,
//!     `cached`), and its `toolCalls` (`name`, `args`, `status`, `result`): the files
//!     `write_file` and `replace` wrote (`args.file_path`) and the commands
//!     `run_shell_command` ran (`args.command`), with their exit codes.
//!
//!   A resume can leave a second file with the same `sessionId`: Gemini CLI 0.61.0 starts a
//!   new chat file when it starts (named by that minute), then switches to the resumed one and
//!   appends the new turns there, so the new file holds only the header and the session
//!   context. Every file of the session is therefore read, and their messages joined by `id`.
//! - **Hooks**: `.gemini/settings.json` (JSON with comments; and `settings.json` in its home)
//!   `SessionStart`, `AfterAgent`, `SessionEnd`, timeouts in milliseconds
//!   (geminicli.com/docs/hooks/reference; checked: gemini 0.61.0, tests/e2e/integrate.rs).
//! - **MCP**: `mcpServers` in `.gemini/settings.json`, `gemini mcp add`
//!   (geminicli.com/docs/tools/mcp-server); no option for one run.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::args::ArgShape;
use super::hooks::{Event, Format, Hooks, Unit};
use super::mcp::{Mcp, Place, Registration, Shape};
use super::store::{
    Candidate, Conversation, Home, Query, Resumable, Store, VarIs, copy_new, files, first_line,
    modified, same_dir, subdirs, whole_json,
};
use super::words::{Collector, read_file, text_of, time_of, together};
use super::{Agent, BASE, IdShape, RESUME_FLAG, SessionId, Straight};
use crate::model::Transcript;

/// `$GEMINI_CLI_HOME/.gemini`, default `~/.gemini`.
pub const HOME: Home = Home {
    var: Some("GEMINI_CLI_HOME"),
    var_is: VarIs::Home,
    dir: ".gemini",
};

/// Gemini CLI's row.
pub const AGENT: Agent = Agent {
    id: "gemini-cli",
    name: "Gemini CLI",
    aliases: &["gemini"],
    executables: &["gemini"],
    context_file: "GEMINI.md",
    at_imports: true,
    resume: Some(RESUME_FLAG),
    session_id: SessionId::Discover,
    // Ids: UUIDs, `sessionId` (checked: gemini 0.61.0 chat files).
    id_shape: IdShape::Uuid,
    straight: Straight {
        // checked: gemini 0.61.0 `--help` (Commands, with their aliases; flags that list or
        // delete and exit).
        subcommands: &[
            "mcp",
            "extensions",
            "extension",
            "skills",
            "skill",
            "hooks",
            "hook",
            "gemma",
        ],
        flags: &[
            "-v",
            "--version",
            "-h",
            "--help",
            "-l",
            "--list-extensions",
            "--list-sessions",
            "--delete-session",
        ],
    },
    home: Some(HOME),
    store: Some(&Chats),
    hooks: Some(Hooks {
        key: "gemini",
        project_file: ".gemini/settings.json",
        user_file: "settings.json",
        format: Format::Json { comments: true },
        events: &[
            ("SessionStart", Event::SessionStart),
            ("AfterAgent", Event::Stop),
            ("SessionEnd", Event::SessionEnd),
        ],
        timeout: 30_000,
        end_timeout: None,
        unit: Unit::Millis,
        payload: super::hooks::Payload {
            last_message: "prompt_response",
            ..super::hooks::CLAUDE_PAYLOAD
        },
        context: super::hooks::ContextOutput::HookSpecific,
        // Gemini CLI has read GEMINI.md when SessionStart runs (checked: gemini 0.61.0,
        // tests/e2e/delivery.rs).
        reads_files_first: true,
        caveat: None,
        approvals: None,
        settings: &[],
        env_marker: None,
    }),
    mcp: Some(Mcp {
        shape: Shape::GeminiJson,
        hint: "# Gemini CLI: merge into .gemini/settings.json (this project) or ~/.gemini/settings.json, or run `gemini mcp add pas-agent pas-agent mcp`",
        one_run: None,
        // checked: Gemini CLI 0.61.0 `gemini mcp add` (project: .gemini/settings.json; `-s
        // user`: ~/.gemini/settings.json), `mcpServers.<name>`.
        registrations: &[
            Registration {
                file: Place::Project(".gemini/settings.json"),
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
    // Not checked: the default SIGINT (docs/freeze.md). Its chat file is written as messages
    // come (checked: gemini 0.61.0 `-p`).
    // checked: gemini 0.61.0 `--help` (yargs; the query is positional).
    arg_shape: ArgShape {
        known: true,
        value_flags: &[
            "-m",
            "--model",
            "-p",
            "--prompt",
            "-i",
            "--prompt-interactive",
            "-w",
            "--worktree",
            "--approval-mode",
            "--policy",
            "--admin-policy",
            "--allowed-mcp-server-names",
            "--allowed-tools",
            "-e",
            "--extensions",
            "-r",
            "--resume",
            "--session-file",
            "--session-id",
            "--delete-session",
            "--include-directories",
            "-o",
            "--output-format",
        ],
        optional_flags: &[],
        many_flags: &[],
        one_shot: &["-o", "--output-format"],
        prompt_flags: &["-p", "--prompt", "-i", "--prompt-interactive"],
        session_flags: &["-r", "--resume", "--session-file", "--session-id"],
        positional_prompts: true,
    },
    ..BASE
};

/// The chats store (`~/.gemini`).
struct Chats;

impl Store for Chats {
    fn dir(&self) -> Option<PathBuf> {
        HOME.path()
    }

    fn sessions(&self, q: &Query<'_>) -> Vec<Candidate> {
        HOME.path().map(|d| sessions(&d, q)).unwrap_or_default()
    }

    fn resumable(&self, id: &str, cwd: &Path) -> Resumable {
        match HOME.path() {
            Some(root) => resumable(&root, id, cwd),
            None => Resumable::Here,
        }
    }

    /// The sessions of `dir` and the first prompt of each, read from all of its chat files (a
    /// resume can leave a file holding only the header: the prompts are in the other).
    fn conversations(&self, dir: &Path, _program: Option<&Path>) -> Vec<Conversation> {
        let Some(root) = HOME.path() else {
            return Vec::new();
        };
        let query = Query {
            cwd: dir,
            from: DateTime::<Utc>::UNIX_EPOCH,
            to: Utc::now(),
            program: None,
        };
        let mut out: Vec<Conversation> = Vec::new();
        for c in sessions(&root, &query) {
            let updated = c.file.as_deref().and_then(modified).unwrap_or(c.at);
            match out.iter_mut().find(|o| o.id == c.id) {
                Some(o) => {
                    if updated > o.updated {
                        o.updated = updated;
                        o.file = c.file;
                    }
                }
                None => out.push(Conversation {
                    first_prompt: None,
                    cwd: dir.to_path_buf(),
                    updated,
                    file: c.file,
                    id: c.id,
                }),
            }
        }
        for o in &mut out {
            o.first_prompt = read(&o.id, DateTime::<Utc>::UNIX_EPOCH, None)
                .prompts
                .into_iter()
                .next();
        }
        out
    }

    /// The chat file of the session written last (a resume starts a new one, then writes to
    /// the session's first file).
    fn session_file(&self, id: &str, _cwd: &Path) -> Option<PathBuf> {
        store_files(id)?.into_iter().max_by_key(|p| modified(p))
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

/// The project's chat files under `root` (`~/.gemini`) whose first line says a main session
/// started inside the window.
fn sessions(root: &Path, q: &Query<'_>) -> Vec<Candidate> {
    let tmp = root.join("tmp");
    let mut dirs: Vec<PathBuf> = Vec::new();
    // The registry maps the project directory to its short id.
    if let Ok(text) = std::fs::read_to_string(root.join("projects.json"))
        && let Ok(v) = serde_json::from_str::<Value>(&text)
        && let Some(map) = v["projects"].as_object()
    {
        for (dir, short) in map {
            if same_dir(dir, q.cwd)
                && let Some(short) = short.as_str()
            {
                dirs.push(tmp.join(short));
            }
        }
    }
    // Every project directory names its root in `.project_root`.
    for dir in subdirs(&tmp) {
        if let Ok(r) = std::fs::read_to_string(dir.join(".project_root"))
            && same_dir(r.trim(), q.cwd)
            && !dirs.contains(&dir)
        {
            dirs.push(dir);
        }
    }
    let mut out = Vec::new();
    for dir in dirs {
        for path in files(&dir.join("chats")) {
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
            if !name.is_some_and(|n| {
                n.starts_with("session-") && (n.ends_with(".jsonl") || n.ends_with(".json"))
            }) {
                continue;
            }
            let Some(head) = first_line(&path).or_else(|| whole_json(&path)) else {
                continue;
            };
            if head["kind"].as_str().is_some_and(|k| k != "main") {
                continue;
            }
            let (Some(id), Some(t)) = (head["sessionId"].as_str(), time_of(&head["startTime"]))
            else {
                continue;
            };
            if q.inside(t) {
                out.push(Candidate {
                    id: id.to_string(),
                    at: t,
                    file: Some(path),
                });
            }
        }
    }
    out
}

/// The project directories (`tmp/<slug>`) of `cwd`: the one `projects.json` maps it to, and
/// every one whose `.project_root` names it.
fn project_dirs(root: &Path, cwd: &Path) -> Vec<PathBuf> {
    let tmp = root.join("tmp");
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Ok(text) = std::fs::read_to_string(root.join("projects.json"))
        && let Ok(v) = serde_json::from_str::<Value>(&text)
        && let Some(map) = v["projects"].as_object()
    {
        for (dir, short) in map {
            if same_dir(dir, cwd)
                && let Some(short) = short.as_str()
            {
                dirs.push(tmp.join(short));
            }
        }
    }
    for dir in subdirs(&tmp) {
        if let Ok(r) = std::fs::read_to_string(dir.join(".project_root"))
            && same_dir(r.trim(), cwd)
            && !dirs.contains(&dir)
        {
            dirs.push(dir);
        }
    }
    dirs
}

/// Gemini CLI resumes a session from the chats of the project it starts in (the slug
/// `projects.json` maps the directory to, or, for a directory it does not list, the project
/// directory whose `.project_root` names it: `ProjectRegistry.findExistingSlugForPath`;
/// checked: gemini 0.61.0 `packages/core/src/config/projectRegistry.ts` in its bundle). A
/// session kept under another project is copied into this one's `chats/`; a directory Gemini
/// has no project for gets one, a new slug (its base name made lower-case, `a-z0-9-`, with a
/// number when taken, as Gemini names them) holding `.project_root` and the copies, which
/// Gemini then adopts. `projects.json` itself is never written.
fn resumable(root: &Path, id: &str, cwd: &Path) -> Resumable {
    let Some(files) = store_files_in(root, id).filter(|f| !f.is_empty()) else {
        return Resumable::Missing(format!(
            "Gemini CLI keeps no chat of session {id} (looked in {})",
            root.join("tmp").display()
        ));
    };
    let mine = project_dirs(root, cwd);
    if files.iter().any(|f| mine.iter().any(|d| f.starts_with(d))) {
        return Resumable::Here;
    }
    let dir = match mine.into_iter().next() {
        Some(dir) => dir,
        None => match new_project(root, cwd) {
            Ok(dir) => dir,
            Err(e) => {
                return Resumable::Missing(format!(
                    "no Gemini CLI project could be made for {}: {e}",
                    cwd.display()
                ));
            }
        },
    };
    let chats = dir.join("chats");
    let copied = std::fs::create_dir_all(&chats).and_then(|()| {
        for f in &files {
            copy_new(f, &chats.join(f.file_name().unwrap_or_default()))?;
        }
        Ok(())
    });
    match copied {
        Ok(()) => Resumable::Copied {
            from: files[0].parent().map(Path::to_path_buf).unwrap_or_default(),
            to: chats,
        },
        Err(e) => Resumable::Missing(format!(
            "its chat could not be copied to {}: {e}",
            chats.display()
        )),
    }
}

/// A new project directory `tmp/<slug>` for `cwd`, with its `.project_root`.
fn new_project(root: &Path, cwd: &Path) -> std::io::Result<PathBuf> {
    let base = cwd
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let mut slug: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_lowercase() || c.is_ascii_digit() {
                c
            } else {
                '-'
            }
        })
        .collect();
    while slug.contains("--") {
        slug = slug.replace("--", "-");
    }
    let slug = slug.trim_matches('-');
    let slug = if slug.is_empty() { "project" } else { slug };
    let taken: Vec<String> = std::fs::read_to_string(root.join("projects.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .and_then(|v| v["projects"].as_object().cloned())
        .map(|m| {
            m.values()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    for n in 0..1000 {
        let candidate = if n == 0 {
            slug.to_string()
        } else {
            format!("{slug}-{n}")
        };
        if taken.contains(&candidate) || root.join("history").join(&candidate).exists() {
            continue;
        }
        let dir = root.join("tmp").join(&candidate);
        match std::fs::create_dir_all(root.join("tmp")).and_then(|()| std::fs::create_dir(&dir)) {
            Ok(()) => {
                std::fs::write(dir.join(".project_root"), cwd.to_string_lossy().as_bytes())?;
                return Ok(dir);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("every name for it is taken"))
}

/// The chat file of session `id`: `hint` when it is a file, else the store's
/// `tmp/*/chats/session-*-<id[..8]>.jsonl` (or `.json`) whose `sessionId` is `id`.
fn read(id: &str, since: DateTime<Utc>, hint: Option<&Path>) -> Transcript {
    let paths = find(id, hint);
    if paths.is_empty() {
        return Transcript::missing(format!(
            "no Gemini CLI chat of session {id} was found under {}",
            HOME.path()
                .map(|d| d.join("tmp").display().to_string())
                .unwrap_or_else(|| "~/.gemini/tmp (no HOME)".into())
        ));
    }
    let limit = crate::limits::TRANSCRIPT;
    let mut texts = Vec::new();
    let mut total = 0u64;
    for path in &paths {
        match read_file(path) {
            Ok(text) => {
                total += text.len() as u64;
                texts.push(text);
            }
            Err(why) => return Transcript::missing(why),
        }
        // Together, the files are held to one transcript's limit.
        if total > limit.bytes {
            return Transcript::missing(format!(
                "the {} chat files of session {id} are not read: {}",
                paths.len(),
                together(limit, total)
            ));
        }
    }
    // The words are in the file written last.
    let source = paths
        .iter()
        .max_by_key(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok())
        .unwrap_or(&paths[0]);
    parse_all(&texts, since).finish(source)
}

/// At most this many chat files of one session are read.
const MAX_FILES: usize = 16;

/// The chat files of session `id`, oldest name first: `hint` when it is a file, else the
/// store's.
fn find(id: &str, hint: Option<&Path>) -> Vec<PathBuf> {
    if let Some(h) = hint.filter(|h| h.is_file()) {
        return vec![h.to_path_buf()];
    }
    store_files(id).unwrap_or_default()
}

fn store_files(id: &str) -> Option<Vec<PathBuf>> {
    store_files_in(&HOME.path()?, id)
}

/// The chat files of session `id` under `root` (`~/.gemini`), oldest name first.
fn store_files_in(root: &Path, id: &str) -> Option<Vec<PathBuf>> {
    let short: String = id.chars().take(8).collect();
    if short.is_empty() || !short.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        return None;
    }
    let tmp = root.join("tmp");
    let mut found: Vec<PathBuf> = Vec::new();
    for project in std::fs::read_dir(tmp).ok()?.flatten() {
        for chat in std::fs::read_dir(project.path().join("chats"))
            .into_iter()
            .flatten()
            .flatten()
        {
            let name = chat.file_name().to_string_lossy().into_owned();
            if name.starts_with("session-")
                && (name.ends_with(&format!("-{short}.jsonl"))
                    || name.ends_with(&format!("-{short}.json")))
                && header_id(&chat.path()).as_deref() == Some(id)
            {
                found.push(chat.path());
            }
        }
    }
    found.sort_by_key(|p| p.file_name().map(|n| n.to_os_string()));
    let skip = found.len().saturating_sub(MAX_FILES);
    Some(found.split_off(skip))
}

/// The `sessionId` of a chat file's first line (or of a legacy file's object).
fn header_id(path: &Path) -> Option<String> {
    use std::io::{BufRead, BufReader, Read};
    let file = std::fs::File::open(path).ok()?;
    let mut line = Vec::new();
    BufReader::new(file.take(1024 * 1024))
        .read_until(b'\n', &mut line)
        .ok()?;
    let v: Value = serde_json::from_slice(&line).ok()?;
    v["sessionId"].as_str().map(str::to_string)
}

/// What the user typed in a user message's text: without the `<hook_context>…</hook_context>`
/// block Gemini CLI puts before it when a hook added context (pas-agent's session among them),
/// which in the interactive mode is a message of its own, left empty here (checked: gemini
/// 0.61.0 with pas-agent's hooks, `-p` and interactive).
fn typed(text: &str) -> &str {
    let t = text.trim_start();
    match t.strip_prefix("<hook_context>") {
        Some(rest) => rest
            .split_once("</hook_context>")
            .map_or("", |(_, after)| after.trim_start()),
        None => text,
    }
}

/// The words of the messages after `since`, in one chat file.
#[cfg(test)]
pub(crate) fn parse(text: &str, since: DateTime<Utc>) -> Collector {
    parse_all(&[text.to_string()], since)
}

/// The words of the messages after `since`, in the chat files of one session (oldest first).
pub(crate) fn parse_all(texts: &[String], since: DateTime<Utc>) -> Collector {
    let mut c = Collector::default();
    // Messages by id, latest version, in first-seen order.
    let mut order: Vec<String> = Vec::new();
    // A resumed session rewrites its earlier messages with the resume's time: a message's
    // time is the earliest it was written with.
    let mut messages: std::collections::HashMap<String, (Option<DateTime<Utc>>, Value)> =
        Default::default();
    let mut keep = |m: &Value| {
        let Some(id) = m["id"].as_str() else { return };
        let t = time_of(&m["timestamp"]);
        match messages.get_mut(id) {
            Some((first, value)) => {
                *first = match (*first, t) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                *value = m.clone();
            }
            None => {
                order.push(id.to_string());
                messages.insert(id.to_string(), (t, m.clone()));
            }
        }
    };
    for text in texts {
        let whole = serde_json::from_str::<Value>(text)
            .ok()
            .filter(|v| v["messages"].is_array());
        match whole {
            // A legacy `.json` chat: one object.
            Some(v) => v["messages"]
                .as_array()
                .into_iter()
                .flatten()
                .for_each(&mut keep),
            None => {
                for line in text.lines().filter(|l| !l.trim().is_empty()) {
                    let Ok(v) = serde_json::from_str::<Value>(line) else {
                        c.damaged += 1;
                        continue;
                    };
                    if let Some(set) = v.get("$set") {
                        set["messages"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .for_each(&mut keep);
                    } else if v["id"].is_string() && v["type"].is_string() {
                        keep(&v);
                    }
                }
            }
        }
    }
    for id in order {
        let (first, m) = &messages[&id];
        if first.is_none_or(|t| t < since) {
            continue;
        }
        match m["type"].as_str().unwrap_or_default() {
            "user" => {
                let text = text_of(&m["content"], &[]);
                if !text.trim_start().starts_with("<session_context>") {
                    c.prompt(typed(&text));
                }
            }
            "gemini" => {
                if let Some(model) = m["model"].as_str() {
                    c.model(model);
                }
                let t = &m["tokens"];
                if t.is_object() {
                    c.tokens(
                        t["input"].as_u64(),
                        t["output"].as_u64(),
                        t["cached"].as_u64(),
                        None,
                    );
                }
                for call in m["toolCalls"].as_array().into_iter().flatten() {
                    tool_call(call, &mut c);
                }
                c.answer(&text_of(&m["content"], &[]));
            }
            _ => {}
        }
    }
    c
}

/// The file a successful `write_file` or `replace` call wrote, or the command a
/// `run_shell_command` call ran with its exit code: `Exit Code: <n>` in the tool's output
/// (or `Command exited with code: <n>` in what it displayed), 0 for a successful call without
/// one, unknown for a call that failed or was cancelled (checked: gemini 0.61.0, whose
/// `status` is `success` even for a command that exits non-zero).
fn tool_call(call: &Value, c: &mut Collector) {
    let ok = call["status"] == "success";
    let args = &call["args"];
    match call["name"].as_str().unwrap_or_default() {
        "write_file" | "replace" if ok => c.edited(args["file_path"].as_str().unwrap_or_default()),
        "run_shell_command" => {
            let output: String = call["result"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|r| r["functionResponse"]["response"]["output"].as_str())
                .collect::<Vec<_>>()
                .join("\n");
            let display = call["resultDisplay"].as_str().unwrap_or_default();
            let code = after(&output, "Exit Code: ")
                .or_else(|| after(display, "Command exited with code: "))
                .or(ok.then_some(0));
            c.ran(args["command"].as_str().unwrap_or_default(), code);
        }
        _ => {}
    }
}

/// The integer right after the first `marker` in `text`.
fn after(text: &str, marker: &str) -> Option<i64> {
    let rest = &text[text.find(marker)? + marker.len()..];
    let digits: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '-')
        .collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::super::store::Candidate;
    use super::*;

    #[test]
    fn set_lines_replace_messages_and_only_new_ones_count() {
        let text = [
            r#"{"sessionId":"s","startTime":"2026-01-02T00:00:00Z","kind":"main"}"#,
            r#"{"$set":{"messages":[{"id":"c","timestamp":"2026-01-02T00:00:00Z","type":"user","content":[{"text":"<session_context>x"}]},{"id":"a","timestamp":"2026-01-01T00:00:00Z","type":"user","content":[{"text":"old"}]}]}}"#,
            r#"{"id":"b","timestamp":"2026-01-02T00:00:01Z","type":"user","content":[{"text":"new"}]}"#,
            r#"{"id":"g","timestamp":"2026-01-02T00:00:02Z","type":"gemini","content":"reply","model":"gemini-x","tokens":{"input":3,"output":1,"cached":0}}"#,
            r#"{"$set":{"lastUpdated":"2026-01-02T00:00:02Z"}}"#,
            // A resume rewrites the old message with its own time: still old.
            r#"{"$set":{"messages":[{"id":"a","timestamp":"2026-01-02T00:00:03Z","type":"user","content":[{"text":"old"}]}]}}"#,
        ]
        .join("\n");
        let since = time_of(&"2026-01-01T12:00:00Z".into()).unwrap();
        let t = parse(&text, since).finish(Path::new("/c.jsonl"));
        assert_eq!(t.prompts, ["new"]);
        assert_eq!(t.last_answer.as_deref(), Some("reply"));
        assert_eq!(t.model.as_deref(), Some("gemini-x"));
        assert!(t.missing.is_none());
    }

    /// Gemini CLI 0.61.0 with pas-agent's hooks: the start hook's context is a
    /// `<hook_context>` block before the prompt (`-p`) or a message of its own (interactive).
    #[test]
    fn a_hooks_context_is_never_the_prompt() {
        let since = time_of(&"2026-01-01T00:00:00Z".into()).unwrap();
        let text = include_str!("../../tests/fixtures/agents/gemini/p-mode-hooks.jsonl");
        let t = parse(text, since).finish(Path::new("/c.jsonl"));
        assert_eq!(t.prompts, ["p mode prompt RUNOK"]);
        let text = include_str!("../../tests/fixtures/agents/gemini/interactive-hooks.jsonl");
        let t = parse(text, since).finish(Path::new("/c.jsonl"));
        assert_eq!(
            t.prompts,
            [
                "interactive WRITEFILE please",
                "then RUNCMD please",
                "now EDITFILE please"
            ]
        );
        assert_eq!(
            t.last_answer.as_deref(),
            Some("Final answer after the tool ran.")
        );
    }

    #[test]
    fn a_resume_stub_file_does_not_hide_the_new_turns() {
        let old = [
            r#"{"sessionId":"s","startTime":"2026-01-01T00:00:00Z","kind":"main"}"#,
            r#"{"id":"a","timestamp":"2026-01-01T00:00:01Z","type":"user","content":[{"text":"old"}]}"#,
            r#"{"id":"b","timestamp":"2026-01-02T00:00:05Z","type":"user","content":[{"text":"new"}]}"#,
            r#"{"id":"g","timestamp":"2026-01-02T00:00:06Z","type":"gemini","content":"reply"}"#,
        ]
        .join("\n");
        let stub = [
            r#"{"sessionId":"s","startTime":"2026-01-02T00:00:00Z","kind":"main"}"#,
            r#"{"$set":{"messages":[{"id":"c","timestamp":"2026-01-02T00:00:00Z","type":"user","content":[{"text":"<session_context>x"}]}]}}"#,
        ]
        .join("\n");
        let since = time_of(&"2026-01-01T12:00:00Z".into()).unwrap();
        let t = parse_all(&[old, stub], since).finish(Path::new("/c.jsonl"));
        assert_eq!(t.prompts, ["new"]);
        assert_eq!(t.last_answer.as_deref(), Some("reply"));
    }

    /// A chat file Gemini CLI 0.61.0 wrote: `write_file`, a command exiting 2, `replace`; and
    /// one whose write outside the workspace failed.
    #[test]
    fn the_files_its_tools_wrote_and_the_commands_they_ran() {
        let text = include_str!("../../tests/fixtures/transcripts/gemini-write-edit-shell.jsonl");
        let t = parse(text, DateTime::UNIX_EPOCH).finish(Path::new("/c.jsonl"));
        assert_eq!(
            t.edits,
            ["/work/notes/probe-c/scratch/pas-gemini/work/probe_written.txt"]
        );
        let ran: Vec<(&str, Option<i64>)> = t
            .commands
            .iter()
            .map(|c| (c.command.as_str(), c.exit_code))
            .collect();
        assert_eq!(ran, [("ls /nonexistent", Some(2))]);
        let text =
            include_str!("../../tests/fixtures/transcripts/gemini-write-outside-workspace.jsonl");
        let t = parse(text, DateTime::UNIX_EPOCH).finish(Path::new("/c.jsonl"));
        assert!(t.edits.is_empty(), "{:?}", t.edits);
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
    fn a_chat_kept_under_another_project_is_copied_where_gemini_looks() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join(".gemini");
        let old = tmp.path().join("old/Work.Dir");
        let new = tmp.path().join("new/Work.Dir");
        let id = "3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b";
        write(
            &root.join("projects.json"),
            &format!("{{\"projects\":{{\"{}\":\"work-dir\"}}}}", old.display()),
        );
        let name = "session-2026-01-01T00-00-3f2a1b4c.jsonl";
        write(
            &root.join("tmp/work-dir/chats").join(name),
            &format!("{{\"sessionId\":\"{id}\",\"kind\":\"main\"}}\n"),
        );
        assert_eq!(resumable(&root, id, &old), Resumable::Here);
        // A directory Gemini has no project for gets one, named as Gemini names them (the
        // base name's slug is taken by the old place, so a number follows).
        let Resumable::Copied { to, .. } = resumable(&root, id, &new) else {
            panic!("not copied");
        };
        assert_eq!(to, root.join("tmp/work-dir-1/chats"));
        assert!(to.join(name).is_file());
        assert_eq!(
            std::fs::read_to_string(root.join("tmp/work-dir-1/.project_root")).unwrap(),
            new.display().to_string()
        );
        assert_eq!(resumable(&root, id, &new), Resumable::Here);
        assert!(matches!(
            resumable(&root, "00000000-0000-4000-8000-000000000000", &new),
            Resumable::Missing(_)
        ));
    }

    #[test]
    fn chats_are_found_through_the_project_registry_or_project_root() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join(".gemini");
        let cwd = tmp.path().join("work");
        std::fs::create_dir_all(&cwd).unwrap();
        let start = Utc::now();
        let chat = |id: &str, t: DateTime<Utc>, kind: &str| {
            format!(
                "{{\"sessionId\":\"{id}\",\"startTime\":\"{}\",\"kind\":\"{kind}\"}}\n",
                t.to_rfc3339()
            )
        };
        write(
            &root.join("projects.json"),
            &format!("{{\"projects\":{{\"{}\":\"work\"}}}}", cwd.display()),
        );
        let chats = root.join("tmp/work/chats");
        write(
            &chats.join("session-1-aaaa.jsonl"),
            &chat("main-id", start + chrono::Duration::seconds(2), "main"),
        );
        write(
            &chats.join("session-2-bbbb.jsonl"),
            &chat("sub-id", start + chrono::Duration::seconds(3), "subagent"),
        );
        write(
            &chats.join("session-0-old.json"),
            &chat("old-id", start - chrono::Duration::hours(2), "main"),
        );
        let q = window(&cwd, start);
        assert_eq!(ids(sessions(&root, &q)), ["main-id"]);
        // Without the registry, `.project_root` names the directory.
        std::fs::remove_file(root.join("projects.json")).unwrap();
        write(
            &root.join("tmp/work/.project_root"),
            &cwd.display().to_string(),
        );
        assert_eq!(ids(sessions(&root, &q)), ["main-id"]);
        std::fs::remove_file(root.join("tmp/work/.project_root")).unwrap();
        assert!(sessions(&root, &q).is_empty());
    }
}
