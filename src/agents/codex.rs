//! Codex (`codex`): everything pas-agent knows about it.
//!
//! - **Context**: `AGENTS.md` from the git root down to the working directory, at most
//!   `project_doc_max_bytes` (default 32 KiB) of it (github.com/openai/codex docs/agents_md.md,
//!   docs/config.md). In each directory an `AGENTS.override.md` is read instead of
//!   `AGENTS.md` when it exists (the same documentation; checked: codex-cli 0.171.0 `exec`,
//!   each file's text looked for in the request to a mock model: only the override's was
//!   there). Where `AGENTS.md` is tracked by git, `run` writes the override for the run
//!   ([`Private::Shadows`]).
//! - **Launch**: no way to choose the session id (openai/codex discussion #3827): it is read
//!   from the rollout. `codex resume <id>` and `codex exec resume <id> [prompt]` (checked:
//!   codex-cli 0.171.0 `resume --help`, `exec resume --help`; `exec` is also `e`).
//! - **Store**: `$CODEX_HOME` (default `~/.codex`) `/sessions/YYYY/MM/DD/rollout-<local
//!   time>-<session id>.jsonl`, one `{"timestamp","type","payload"}` per line, the first a
//!   `session_meta` whose `payload` has the session `id`, its `timestamp` and `cwd` (checked:
//!   codex-cli 0.171.0 `exec` and `exec resume` against a mock model: a resumed session appends
//!   to the same file).
//! - **Transcript** lines read (after `since`, by their `timestamp`):
//!   - `event_msg` with `payload.type` `item_completed` and `payload.item.type` `UserMessage`
//!     (0.171.0) or `user_message` with `payload.message` (earlier versions): a prompt. The
//!     `response_item` user messages are not read: they also carry the AGENTS.md text Codex
//!     injects;
//!   - `event_msg` `item_completed` with an `AgentMessage` item, `agent_message`
//!     (`payload.message`), or `task_complete` (`payload.last_agent_message`): an answer,
//!     unless its `phase` is `commentary` (what the model says while it works); and a
//!     `response_item` assistant `message` whose `phase` is `final_answer`, which may be all a
//!     rollout holds of the answer (checked: codex-cli 0.171.0 rollouts with commentary);
//!   - `event_msg` `token_count`: `payload.info.last_token_usage` (`input_tokens`,
//!     `output_tokens`, `cached_input_tokens`, `cache_write_input_tokens`) of one model call;
//!   - `turn_context`: `payload.model`;
//!   - `event_msg` `item_completed` with a `FileChange` item (`changes`: each path the
//!     `apply_patch` tool wrote) or a `CommandExecution` item (`command`, `exit_code`): the
//!     files its tools edited and the commands they ran (checked: codex-cli 0.171.0, in
//!     `exec` and in the TUI).
//! - **Hooks**: `.codex/config.toml` (and `config.toml` in its home), `[[hooks.<Event>]]`
//!   tables for `SessionStart`, `Stop`, `SessionEnd` (developers.openai.com/codex/hooks;
//!   checked: codex-cli 0.171.0, tests/e2e/integrate.rs).
//! - **Hook approval**: Codex runs a hook that is not managed only once the user trusted it in
//!   `/hooks`, which records `[hooks.state."<settings file>:<event>:<group>:<handler>"]` with
//!   `trusted_hash = "sha256:…"` (and `enabled = false` for one turned off) in
//!   `$CODEX_HOME/config.toml`; a project's `.codex/config.toml` is read only when
//!   `[projects."<dir>"]` there says `trust_level = "trusted"` (checked: codex-cli 0.171.0, its
//!   app-server's `hooks/list`; github.com/openai/codex codex-rs/hooks/src/engine/discovery.rs).
//!   [`TrustedHashes`] reads both for `doctor`.
//! - **Session end**: a session-end hook runs for at most
//!   3 s. The interactive `codex` runs its sessions, and their hooks, in a background server
//!   (`codex app-server`) that outlives it and keeps the environment of the terminal that
//!   started it; the server runs a session's `SessionEnd` when it unloads the session,
//!   `thread_unload_delay_secs` (default 60) after the user quit, and at once with 0
//!   (checked: codex-cli 0.171.0 under tmux; `SessionStart` runs at the first prompt, not
//!   when the TUI opens).
//! - **MCP**: `[mcp_servers.<name>]` in `config.toml`, `codex mcp add`, and `-c` overrides
//!   of the same keys for one run (github.com/openai/codex docs/config.md).

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::args::ArgShape;
use super::hooks::{Event, Format, Hooks, Setting, Unit};
use super::mcp::{Mcp, OneRun, Place, Registration, Shape};
use super::store::{
    Candidate, Conversation, HEAD_BYTES, Home, Query, Store, VarIs, files, first_line, head,
    modified, same_dir,
};
use super::words::{Collector, json_lines, read_file, text_of, time_of, together};
use super::{
    Agent, BASE, IdShape, LimitUnit, Private, ReadLimit, Resume, SessionId, Stop, StopSignal,
    Straight,
};
use crate::model::Transcript;

/// `$CODEX_HOME`, default `~/.codex`.
pub const HOME: Home = Home {
    var: Some("CODEX_HOME"),
    var_is: VarIs::Dir,
    dir: ".codex",
};

/// Codex's row.
pub const AGENT: Agent = Agent {
    id: "codex",
    name: "Codex",
    executables: &["codex"],
    context_file: "AGENTS.md",
    reads_first: &["AGENTS.override.md"],
    private: Private::Shadows("AGENTS.override.md"),
    read_limit: Some(ReadLimit {
        amount: 32 * 1024,
        unit: LimitUnit::Bytes,
    }),
    resume: Some(Resume {
        args: &["resume", "{id}"],
        subcommands: &["exec", "e"],
        after_subcommand: &[],
    }),
    session_id: SessionId::Discover,
    // Ids: UUID v7, `session_meta.payload.id` (checked: codex-cli 0.171.0 rollouts).
    id_shape: IdShape::Uuid,
    straight: Straight {
        // checked: codex-cli 0.171.0 `--help` (Commands; `-V/--version`, `-h/--help`).
        // Not straight: `exec`/`e`, `review`, `resume`, `fork`, `agents` (sessions), and
        // `apply`/`a`, `cloud` (they change the work tree, worth a record).
        subcommands: &[
            "login",
            "logout",
            "mcp",
            "plugin",
            "app-server",
            "remote-control",
            "completion",
            "update",
            "doctor",
            "sandbox",
            "debug",
            "queue",
            "archive",
            "delete",
            "unarchive",
            "migrate-rollouts",
            "migrate-nfs-db",
            "exec-server",
            "features",
            "help",
        ],
        flags: &["-V", "--version", "-h", "--help"],
    },
    home: Some(HOME),
    store: Some(&Rollouts),
    hooks: Some(Hooks {
        key: "codex",
        project_file: ".codex/config.toml",
        user_file: "config.toml",
        format: Format::Toml,
        events: &[
            ("SessionStart", Event::SessionStart),
            ("Stop", Event::Stop),
            ("SessionEnd", Event::SessionEnd),
        ],
        timeout: 30,
        // Codex runs a session-end hook for at most 3 s, and warns at every start about a
        // larger timeout, which it clamps (checked: codex-cli 0.171.0;
        // `codex-rs/hooks/src/engine/discovery.rs`).
        end_timeout: Some(3),
        unit: Unit::Seconds,
        payload: super::hooks::CLAUDE_PAYLOAD,
        context: super::hooks::ContextOutput::HookSpecific,
        // Codex has read AGENTS.md when SessionStart runs (checked: codex-cli 0.171.0,
        // tests/e2e/delivery.rs).
        reads_files_first: true,
        settings: &[Setting {
            key: "thread_unload_delay_secs",
            value: 0,
            why: "pas-agent: run the SessionEnd hook when you quit, not a minute later",
        }],
        caveat: Some(
            "Codex runs new hooks only after you review and trust them: start `codex` and approve them in `/hooks`. It reads a project's .codex/config.toml only when the project is trusted.",
        ),
        approvals: Some(&TrustedHashes),
        env_marker: None,
    }),
    mcp: Some(Mcp {
        shape: Shape::CodexToml,
        hint: "# Codex: add to ~/.codex/config.toml, or run `codex mcp add pas-agent -- pas-agent mcp`",
        one_run: Some(OneRun::CodexOverrides),
        // checked: codex-cli 0.171.0 `codex mcp add` writes `[mcp_servers.<name>]` into
        // $CODEX_HOME/config.toml; a trusted project's .codex/config.toml is read too.
        registrations: &[
            Registration {
                file: Place::Project(".codex/config.toml"),
                table: &["mcp_servers"],
                comments: false,
            },
            Registration {
                file: Place::AgentHome("config.toml"),
                table: &["mcp_servers"],
                comments: false,
            },
        ],
    }),
    // checked: codex-cli 0.171.0 TUI (`--no-daemon`), against a mock model: SIGINT and SIGTERM
    // to its process group end it at once; the rollout is written line by line as the turns
    // go, so it is whole.
    stop: Stop {
        signals: &[StopSignal::Interrupt],
        checked: true,
    },
    // checked: codex-cli 0.171.0 `--help`, `exec --help`, `resume --help` (the prompt is
    // positional; `exec`'s own flags mean nothing to the interactive `codex resume`).
    arg_shape: ArgShape {
        known: true,
        value_flags: &[
            "-c",
            "--config",
            "--enable",
            "--disable",
            "--remote",
            "--remote-auth-token-env",
            "-m",
            "--model",
            "--local-provider",
            "-p",
            "--profile",
            "-s",
            "--sandbox",
            "-C",
            "--cd",
            "--add-dir",
            "-a",
            "--ask-for-approval",
            "--thread-source",
            "--cyber-access-program",
            "--output-schema",
            "--color",
            "-o",
            "--output-last-message",
        ],
        optional_flags: &["resume", "fork"],
        many_flags: &["-i", "--image"],
        one_shot: &[
            "exec",
            "e",
            "--skip-git-repo-check",
            "--trust",
            "--ephemeral",
            "--ignore-user-config",
            "--ignore-rules",
            "--json",
            "--thread-source",
            "--cyber-access-program",
            "--output-schema",
            "--color",
            "-o",
            "--output-last-message",
        ],
        prompt_flags: &[],
        session_flags: &[
            "resume",
            "fork",
            "--last",
            "--all",
            "--include-non-interactive",
        ],
        positional_prompts: true,
    },
    ..BASE
};

/// The `sessions` store of rollouts.
struct Rollouts;

impl Store for Rollouts {
    fn dir(&self) -> Option<PathBuf> {
        Some(HOME.path()?.join("sessions"))
    }

    fn sessions(&self, q: &Query<'_>) -> Vec<Candidate> {
        self.dir().map(|d| sessions(&d, q)).unwrap_or_default()
    }

    fn conversations(&self, dir: &Path, _program: Option<&Path>) -> Vec<Conversation> {
        self.dir()
            .map(|d| conversations(&d, dir))
            .unwrap_or_default()
    }

    fn session_file(&self, id: &str, _cwd: &Path) -> Option<PathBuf> {
        find(id, None).pop()
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

/// Rollouts under `sessions` in the day directories of the window (local and UTC dates, a day
/// either side) whose `session_meta` has this cwd and a start inside the window.
fn sessions(sessions: &Path, q: &Query<'_>) -> Vec<Candidate> {
    let mut days = std::collections::BTreeSet::new();
    let mut day = (q.from - chrono::Duration::days(1)).date_naive();
    let last = (q.to + chrono::Duration::days(1)).date_naive();
    while day <= last {
        days.insert(day);
        match day.succ_opt() {
            Some(next) => day = next,
            None => break,
        }
    }
    let mut out = Vec::new();
    for day in days {
        let dir = sessions.join(day.format("%Y/%m/%d").to_string());
        for path in files(&dir) {
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
            if !name.is_some_and(|n| n.starts_with("rollout-") && n.ends_with(".jsonl")) {
                continue;
            }
            if modified(&path).is_some_and(|m| m < q.from) {
                continue;
            }
            let Some(meta) = first_line(&path) else {
                continue;
            };
            if meta["type"] != "session_meta" {
                continue;
            }
            let p = &meta["payload"];
            let (Some(id), Some(cwd), Some(t)) = (
                p["id"].as_str(),
                p["cwd"].as_str(),
                time_of(&p["timestamp"]),
            ) else {
                continue;
            };
            if same_dir(cwd, q.cwd) && q.inside(t) {
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

/// Every rollout under `sessions` (all days) whose `session_meta` has the cwd `dir`, one per
/// session id (the newest file of a session resumed on another day), each with its first
/// prompt from the first [`HEAD_BYTES`] after the `session_meta` line.
fn conversations(sessions: &Path, dir: &Path) -> Vec<Conversation> {
    let mut out: Vec<Conversation> = Vec::new();
    for year in dirs(sessions) {
        for month in dirs(&year) {
            for day in dirs(&month) {
                for path in files(&day) {
                    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
                    if !name.is_some_and(|n| n.starts_with("rollout-") && n.ends_with(".jsonl")) {
                        continue;
                    }
                    let Some(meta) = first_line(&path) else {
                        continue;
                    };
                    let p = &meta["payload"];
                    let (Some(id), Some(cwd)) = (p["id"].as_str(), p["cwd"].as_str()) else {
                        continue;
                    };
                    if meta["type"] != "session_meta" || !same_dir(cwd, dir) {
                        continue;
                    }
                    let Some(updated) = modified(&path) else {
                        continue;
                    };
                    let first_prompt = head(&path, HEAD_BYTES).and_then(|text| {
                        parse(&text, DateTime::<Utc>::UNIX_EPOCH)
                            .finish(&path)
                            .prompts
                            .into_iter()
                            .next()
                    });
                    let c = Conversation {
                        id: id.to_string(),
                        updated,
                        first_prompt,
                        cwd: dir.to_path_buf(),
                        file: Some(path),
                    };
                    match out.iter_mut().find(|o| o.id == c.id) {
                        // The first file has the first prompt; the newest one the time.
                        Some(o) if c.updated > o.updated => {
                            o.updated = c.updated;
                            o.file = c.file;
                        }
                        Some(_) => {}
                        None => out.push(c),
                    }
                }
            }
        }
    }
    out
}

/// The rollout of session `id`: `hint` when it is a file, else every
/// `sessions/**/rollout-*-<id>.jsonl` (a session resumed another day may be written to a new
/// file; the files are read oldest first).
fn read(id: &str, since: DateTime<Utc>, hint: Option<&Path>) -> Transcript {
    let paths = find(id, hint);
    let Some(newest) = paths.last() else {
        return Transcript::missing(format!(
            "no Codex rollout of session {id} was found under {}",
            Rollouts
                .dir()
                .map(|d| d.display().to_string())
                .unwrap_or_else(|| "~/.codex/sessions (no HOME)".into())
        ));
    };
    let limit = crate::limits::TRANSCRIPT;
    let mut text = String::new();
    for path in &paths {
        match read_file(path) {
            Ok(t) => {
                text.push_str(&t);
                text.push('\n');
            }
            Err(why) => return Transcript::missing(why),
        }
        // Together, the rollouts are held to one transcript's limit.
        if text.len() as u64 > limit.bytes {
            return Transcript::missing(format!(
                "the {} rollouts of session {id} are not read: {}",
                paths.len(),
                together(limit, text.len() as u64)
            ));
        }
    }
    parse(&text, since).finish(newest)
}

/// At most this many rollouts of one session are read.
const MAX_FILES: usize = 16;

/// The subdirectories of `dir`, by name.
fn dirs(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

fn find(id: &str, hint: Option<&Path>) -> Vec<PathBuf> {
    if let Some(h) = hint.filter(|h| h.is_file()) {
        return vec![h.to_path_buf()];
    }
    let Some(sessions) = Rollouts.dir() else {
        return Vec::new();
    };
    let suffix = format!("-{id}.jsonl");
    let mut found = Vec::new();
    for year in dirs(&sessions) {
        for month in dirs(&year) {
            for day in dirs(&month) {
                let mut here: Vec<PathBuf> = std::fs::read_dir(&day)
                    .into_iter()
                    .flatten()
                    .flatten()
                    .filter(|e| {
                        let name = e.file_name().to_string_lossy().into_owned();
                        name.starts_with("rollout-") && name.ends_with(&suffix)
                    })
                    .map(|e| e.path())
                    .collect();
                here.sort();
                found.extend(here);
            }
        }
    }
    let skip = found.len().saturating_sub(MAX_FILES);
    found.split_off(skip)
}

/// The words of the lines after `since`. The model comes from the last `turn_context`
/// before `since` when none after it names one: Codex writes a turn's `turn_context` before
/// its `SessionStart` hook runs, so a run noted by the hook starts a moment after it (checked:
/// codex-cli 0.171.0, 21 ms apart).
pub(crate) fn parse(text: &str, since: DateTime<Utc>) -> Collector {
    let mut c = Collector::default();
    let mut earlier: Option<String> = None;
    let mut after = false;
    json_lines(text, &mut c, |v, c| {
        if time_of(&v["timestamp"]).is_none_or(|t| t < since) {
            if v["type"] == "turn_context"
                && let Some(m) = v["payload"]["model"].as_str()
            {
                earlier = Some(m.to_string());
            }
            return;
        }
        after = true;
        let p = &v["payload"];
        match v["type"].as_str().unwrap_or_default() {
            "turn_context" => {
                if let Some(m) = p["model"].as_str() {
                    c.model(m);
                }
            }
            // The final answer as the model gave it: with a phase, only `final_answer` (not
            // `commentary`); it is all a rollout may hold of the answer.
            "response_item"
                if p["type"] == "message"
                    && p["role"] == "assistant"
                    && p["phase"] == "final_answer" =>
            {
                c.answer(&text_of(&p["content"], &["output_text"]));
            }
            "event_msg" => match p["type"].as_str().unwrap_or_default() {
                "item_completed" => {
                    let item = &p["item"];
                    match item["type"].as_str().unwrap_or_default() {
                        "UserMessage" => c.prompt(&text_of(&item["content"], &[])),
                        "AgentMessage" if item["phase"] != "commentary" => {
                            c.answer(&text_of(&item["content"], &[]));
                        }
                        "FileChange" => file_change(item, c),
                        "CommandExecution" => {
                            c.ran(&command_line(&item["command"]), item["exit_code"].as_i64());
                        }
                        _ => {}
                    }
                }
                "user_message" => c.prompt(p["message"].as_str().unwrap_or_default()),
                "agent_message" if p["phase"] != "commentary" => {
                    c.answer(p["message"].as_str().unwrap_or_default());
                }
                "task_complete" => {
                    if let Some(m) = p["last_agent_message"].as_str() {
                        c.answer(m);
                    }
                }
                "token_count" => {
                    let u = &p["info"]["last_token_usage"];
                    if u.is_object() {
                        c.tokens(
                            u["input_tokens"].as_u64(),
                            u["output_tokens"].as_u64(),
                            u["cached_input_tokens"].as_u64(),
                            u["cache_write_input_tokens"].as_u64(),
                        );
                    }
                }
                _ => {}
            },
            _ => {}
        }
    });
    if after && let Some(m) = earlier {
        c.model_before(&m);
    }
    c
}

/// The files of a completed `FileChange` item (`apply_patch`): `changes` maps each path to
/// `{"type": "add"|"update"|"delete", …}` (checked: codex-cli 0.171.0; a list of
/// `{"path", …}` is read too). A patch that failed wrote nothing.
fn file_change(item: &Value, c: &mut Collector) {
    if item["status"].as_str().is_some_and(|s| s != "completed") {
        return;
    }
    match &item["changes"] {
        Value::Object(map) => map.keys().for_each(|p| c.edited(p)),
        Value::Array(list) => list
            .iter()
            .filter_map(|ch| ch["path"].as_str())
            .for_each(|p| c.edited(p)),
        _ => {}
    }
}

/// A `CommandExecution` item's `command` as the user would type it: the script of a
/// `["/bin/bash", "-lc", "<script>"]` call, else the words joined (checked: codex-cli 0.171.0
/// runs `exec_command` through the user's shell with `-lc`).
fn command_line(command: &Value) -> String {
    match command {
        Value::String(s) => s.clone(),
        Value::Array(words) => {
            let words: Vec<&str> = words.iter().filter_map(Value::as_str).collect();
            match words.as_slice() {
                [shell, flag, script]
                    if matches!(*flag, "-lc" | "-c")
                        && shell.rsplit('/').next().is_some_and(|s| s.ends_with("sh")) =>
                {
                    (*script).to_string()
                }
                _ => words.join(" "),
            }
        }
        _ => String::new(),
    }
}

/// Codex's record of trusted hooks and projects (see the module's notes).
struct TrustedHashes;

/// The longest `SessionEnd` handler Codex runs: it clamps a larger `timeout` to this, and
/// fingerprints the clamped value (checked: codex-cli 0.171.0, "clamping SessionEnd hook timeout
/// to 3s").
const SESSION_END_MAX_SECS: u64 = 3;

/// `SessionStart` → `session_start`: the event's label in Codex's hook keys.
fn event_label(event: &str) -> String {
    let mut out = String::new();
    for (i, c) in event.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// The fingerprint Codex keeps in `trusted_hash` for a handler pas-agent wrote (a group with
/// only `hooks`, a handler with only `type`, `command` and `timeout`): SHA-256 of the
/// normalized identity as compact JSON with sorted keys, `sha256:<hex>` (checked: codex-cli
/// 0.171.0, whose app-server reports the same `currentHash`; codex-rs/config/src/fingerprint.rs
/// `version_for_toml`).
fn trusted_hash(event: &str, command: &str, timeout: Option<u64>) -> String {
    use sha2::Digest as _;
    let mut secs = timeout.unwrap_or(600).max(1);
    if event == "SessionEnd" {
        secs = secs.min(SESSION_END_MAX_SECS);
    }
    // serde_json's maps keep keys sorted without `preserve_order`; this crate turns that on,
    // so the keys are written in order by hand.
    let identity = format!(
        "{{\"event_name\":{},\"hooks\":[{{\"async\":false,\"command\":{},\"timeout\":{secs},\"type\":\"command\"}}]}}",
        serde_json::Value::from(event_label(event)),
        serde_json::Value::from(command),
    );
    let digest = sha2::Sha256::digest(identity.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

impl super::hooks::Approvals for TrustedHashes {
    fn check(
        &self,
        settings: &Path,
        project: Option<&Path>,
        found: &[super::hooks::Installed],
    ) -> Vec<super::hooks::Approval> {
        use super::hooks::Approval;
        let Some(home) = HOME.path() else {
            return Vec::new();
        };
        let config = home.join("config.toml");
        let shown = crate::term::clean(&config.to_string_lossy());
        let doc: Option<toml_edit::DocumentMut> = match crate::fsutil::read_limited(
            &config,
            4 << 20,
        ) {
            Ok(Some(bytes)) => match String::from_utf8(bytes).ok().and_then(|t| t.parse().ok()) {
                Some(doc) => Some(doc),
                None => {
                    return vec![Approval {
                        approved: false,
                        detail: format!(
                            "{shown} does not parse, so whether Codex trusts pas-agent's hooks cannot be told (Codex will not start either)"
                        ),
                        fix: Some(format!("fix {shown} by hand")),
                    }];
                }
            },
            _ => None,
        };
        let mut out = Vec::new();
        // The same path may be written as given or with its links resolved.
        let spellings = |p: &Path| {
            let mut v = vec![p.to_string_lossy().into_owned()];
            if let Ok(c) = p.canonicalize()
                && c != p
            {
                v.push(c.to_string_lossy().into_owned());
            }
            v
        };
        if let Some(root) = project {
            let level = spellings(root).into_iter().find_map(|key| {
                doc.as_ref()?
                    .get("projects")?
                    .get(&key)?
                    .get("trust_level")?
                    .as_str()
                    .map(str::to_string)
            });
            let dir = crate::term::clean(&root.to_string_lossy());
            match level.as_deref() {
                Some("trusted") => {}
                Some(other) => out.push(Approval {
                    approved: false,
                    detail: format!("Codex has {dir} as `{}`, so it ignores its .codex/config.toml and pas-agent's hooks there", crate::term::clean_line(other)),
                    fix: Some(format!("set `trust_level = \"trusted\"` under [projects.\"{dir}\"] in {shown}")),
                }),
                None => out.push(Approval {
                    approved: false,
                    detail: format!("Codex does not trust {dir} yet, so it ignores its .codex/config.toml and pas-agent's hooks there"),
                    fix: Some(format!("start `codex` in {dir} and answer yes when it asks whether you trust the folder")),
                }),
            }
        }
        let mut unapproved = Vec::new();
        let mut changed = Vec::new();
        let mut off = Vec::new();
        for entry in found {
            let state = spellings(settings).into_iter().find_map(|path| {
                let key = format!(
                    "{path}:{}:{}:{}",
                    event_label(entry.event),
                    entry.group,
                    entry.handler
                );
                doc.as_ref()?.get("hooks")?.get("state")?.get(&key).cloned()
            });
            let Some(state) = state else {
                unapproved.push(entry.event);
                continue;
            };
            if state.get("enabled").and_then(|e| e.as_bool()) == Some(false) {
                off.push(entry.event);
                continue;
            }
            match state.get("trusted_hash").and_then(|h| h.as_str()) {
                None => unapproved.push(entry.event),
                Some(h)
                    if entry.plain
                        && h != trusted_hash(entry.event, &entry.command, entry.timeout) =>
                {
                    changed.push(entry.event);
                }
                Some(_) => {}
            }
        }
        let approve = "start `codex` and approve pas-agent's hooks in `/hooks`".to_string();
        if !unapproved.is_empty() {
            out.push(Approval {
                approved: false,
                detail: format!(
                    "Codex has not approved pas-agent's hooks ({}), so it does not run them",
                    unapproved.join(", ")
                ),
                fix: Some(approve.clone()),
            });
        }
        if !changed.is_empty() {
            out.push(Approval {
                approved: false,
                detail: format!("pas-agent's hooks ({}) changed since Codex approved them, so it does not run them until approved again", changed.join(", ")),
                fix: Some(approve.clone()),
            });
        }
        if !off.is_empty() {
            out.push(Approval {
                approved: false,
                detail: format!(
                    "pas-agent's hooks ({}) are turned off in Codex's `/hooks`",
                    off.join(", ")
                ),
                fix: Some("start `codex` and turn pas-agent's hooks on in `/hooks`".into()),
            });
        }
        if out.is_empty() && !found.is_empty() {
            out.push(Approval {
                approved: true,
                detail: format!("approved in {shown}"),
                fix: None,
            });
        }
        out
    }
}

#[cfg(test)]
mod trust_tests {
    use super::*;

    /// The fingerprints Codex 0.171.0 reported (`hooks/list`, `currentHash`) for the entries
    /// `pas-agent integrate codex` wrote with a 30 s timeout.
    #[test]
    fn fingerprints_match_what_codex_computes() {
        assert_eq!(
            trusted_hash(
                "SessionStart",
                "pas-agent lifecycle codex session-start",
                Some(30)
            ),
            "sha256:e0ce467040de9daac32cff0742bcfdcf6705c68d2b583dacbbb61c09ddad841d"
        );
        assert_eq!(
            trusted_hash("Stop", "pas-agent lifecycle codex stop", Some(30)),
            "sha256:619f813b5d83b3e27b595a869d5f2ff64143168d6d0ce4f8f395dab9af1a6e75"
        );
        // SessionEnd's timeout is clamped to 3 s before it is fingerprinted.
        assert_eq!(
            trusted_hash(
                "SessionEnd",
                "pas-agent lifecycle codex session-end",
                Some(30)
            ),
            "sha256:249aa610cdbf6f5a99093c960deea8dc7378d83cd4fece48f9dd979603ceb438"
        );
        assert_eq!(event_label("SessionStart"), "session_start");
        assert_eq!(event_label("Stop"), "stop");
    }
}

#[cfg(test)]
mod tests {
    use super::super::store::Candidate;
    use super::*;
    use serde_json::Value;

    #[test]
    fn both_event_layouts_are_read_after_since() {
        let l = |t: &str, kind: &str, payload: Value| {
            serde_json::json!({"timestamp": t, "type": kind, "payload": payload}).to_string()
        };
        let text = [
            l("2026-01-01T00:00:00Z", "session_meta", serde_json::json!({"id": "x"})),
            l("2026-01-01T00:00:01Z", "event_msg", serde_json::json!({"type": "user_message", "message": "old"})),
            l("2026-01-02T00:00:00Z", "turn_context", serde_json::json!({"model": "gpt-x"})),
            l("2026-01-02T00:00:01Z", "event_msg", serde_json::json!({"type": "item_completed", "item": {"type": "UserMessage", "content": [{"type": "text", "text": "new"}]}})),
            l("2026-01-02T00:00:02Z", "event_msg", serde_json::json!({"type": "agent_message", "message": "answer"})),
            l("2026-01-02T00:00:03Z", "event_msg", serde_json::json!({"type": "token_count", "info": {"last_token_usage": {"input_tokens": 7, "output_tokens": 2}}})),
        ]
        .join("\n");
        let since = time_of(&"2026-01-01T12:00:00Z".into()).unwrap();
        let t = parse(&text, since).finish(Path::new("/r.jsonl"));
        assert_eq!(t.prompts, ["new"]);
        assert_eq!(t.last_answer.as_deref(), Some("answer"));
        assert_eq!(t.model.as_deref(), Some("gpt-x"));
        assert_eq!(t.tokens.unwrap().input, Some(7));
        assert!(t.missing.is_none());
    }

    /// A run noted by the start hook a moment after the turn's `turn_context`: the model is
    /// the session's, and an older conversation's turns stay out.
    #[test]
    fn the_model_written_just_before_the_run_is_its_model() {
        let l = |t: &str, kind: &str, payload: Value| {
            serde_json::json!({"timestamp": t, "type": kind, "payload": payload}).to_string()
        };
        let text = [
            l(
                "2026-01-02T00:00:00.749Z",
                "turn_context",
                serde_json::json!({"model": "gpt-y"}),
            ),
            l(
                "2026-01-02T00:00:01Z",
                "event_msg",
                serde_json::json!({"type": "user_message", "message": "hi"}),
            ),
        ]
        .join("\n");
        let since = time_of(&"2026-01-02T00:00:00.770Z".into()).unwrap();
        let t = parse(&text, since).finish(Path::new("/r.jsonl"));
        assert_eq!(t.model.as_deref(), Some("gpt-y"));
        assert_eq!(t.prompts, ["hi"]);
        // Nothing of the run after `since`: no model is claimed for it.
        let later = time_of(&"2026-01-03T00:00:00Z".into()).unwrap();
        assert_eq!(
            parse(&text, later).finish(Path::new("/r.jsonl")).model,
            None
        );
    }

    /// A rollout Codex 0.171.0's TUI wrote: an `apply_patch` and two failing commands.
    #[test]
    fn the_files_its_tools_wrote_and_the_commands_they_ran_with_their_exit_codes() {
        let text =
            include_str!("../../tests/fixtures/transcripts/codex-tui-write-runcmd-runfalse.jsonl");
        let t = parse(text, DateTime::UNIX_EPOCH).finish(Path::new("/r.jsonl"));
        assert_eq!(
            t.edits,
            ["/work/notes/probe-c/scratch/pas-codex/work/probe_written.txt"]
        );
        let ran: Vec<(&str, Option<i64>)> = t
            .commands
            .iter()
            .map(|c| (c.command.as_str(), c.exit_code))
            .collect();
        assert_eq!(ran, [("ls /nonexistent", Some(2)), ("false", Some(1))]);
        assert_eq!(
            command_line(&serde_json::json!(["git", "status"])),
            "git status"
        );
    }

    /// codex-cli 0.171.0: commentary, a command, then the final answer.
    const COMMENTARY: &str =
        include_str!("../../tests/fixtures/agents/codex/commentary.rollout.jsonl");

    #[test]
    fn the_answer_is_the_final_one_never_commentary() {
        let since = time_of(&"2026-01-01T00:00:00Z".into()).unwrap();
        let t = parse(COMMENTARY, since).finish(Path::new("/r.jsonl"));
        assert_eq!(t.prompts, ["COMMENTARY then RUNCMD please"]);
        assert_eq!(
            t.last_answer.as_deref(),
            Some("Final answer after the tool ran.")
        );
        // Without the events of the final answer, its response item is the answer, and the
        // commentary before it never is.
        let only_items: String = COMMENTARY
            .lines()
            .filter(|l| {
                !(l.contains("\"task_complete\"")
                    || (l.contains("\"AgentMessage\"") && l.contains("final_answer")))
            })
            .map(|l| format!("{l}\n"))
            .collect();
        let t = parse(&only_items, since).finish(Path::new("/r.jsonl"));
        assert_eq!(
            t.last_answer.as_deref(),
            Some("Final answer after the tool ran.")
        );
        let no_final: String = COMMENTARY
            .lines()
            .filter(|l| !l.contains("final_answer") && !l.contains("\"task_complete\""))
            .map(|l| format!("{l}\n"))
            .collect();
        let t = parse(&no_final, since).finish(Path::new("/r.jsonl"));
        assert_eq!(t.last_answer, None, "commentary is no answer");
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
    fn rollouts_match_on_cwd_and_start_time() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("sessions");
        let cwd = tmp.path().join("proj");
        std::fs::create_dir_all(&cwd).unwrap();
        let start = Utc::now();
        let day = root.join(start.format("%Y/%m/%d").to_string());
        let meta = |id: &str, dir: &Path, t: DateTime<Utc>| {
            format!(
                "{{\"type\":\"session_meta\",\"payload\":{{\"id\":\"{id}\",\"timestamp\":\"{}\",\"cwd\":\"{}\"}}}}\n{{}}\n",
                t.to_rfc3339(),
                dir.display()
            )
        };
        let later = start + chrono::Duration::seconds(5);
        write(
            &day.join("rollout-a-1.jsonl"),
            &meta("in-run", &cwd, start + chrono::Duration::seconds(1)),
        );
        write(&day.join("rollout-a-2.jsonl"), &meta("newest", &cwd, later));
        write(
            &day.join("rollout-b.jsonl"),
            &meta("elsewhere", tmp.path(), later),
        );
        write(
            &day.join("rollout-c.jsonl"),
            &meta("before", &cwd, start - chrono::Duration::minutes(10)),
        );
        write(&day.join("notes.txt"), "not a rollout");
        assert_eq!(
            ids(sessions(&root, &window(&cwd, start))),
            ["newest", "in-run"]
        );
        let an_hour_ago = start - chrono::Duration::hours(1);
        assert!(
            sessions(&root, &window(tmp.path(), an_hour_ago)).is_empty(),
            "nothing of that cwd started then"
        );
    }
}
