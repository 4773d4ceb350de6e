//! What `pas-agent lifecycle <agent> <event>` does when the agent runs it from its hooks: the
//! agent's JSON payload (`session_id`, `transcript_path`, `cwd`, …) arrives on stdin.
//!
//! - **session-start** prints the session (the block's Markdown) as
//!   `{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":…}}`, which all
//!   three agents add to the model's context — unless a file the agent reads holds a current
//!   block already, so that the model gets the session once — then leaves a small marker in
//!   `.pas-agent/runs/hooks/` with the time and HEAD. No work-tree scan: the start stays cheap
//!   on a large repository (the files changed are worked out at the end, see below).
//! - **stop** (end of a turn) keeps the agent's last message in the marker.
//! - **session-end** records a finished run, as `pas-agent run` would have: the agent, its
//!   session id, the commits since the marker's HEAD, the files changed since the start, the
//!   last message, and an "after" checkpoint; then deletes the marker.
//!
//! Files changed: a file that differs from HEAD at the end counts as changed by the session
//! unless it was last modified before the session started (it was already changed then, and
//! the session left it alone). A file deleted since HEAD counts as changed.
//!
//! A hook never fails the agent: every error is a warning on stderr and the exit code is 0,
//! which all three agents treat as success. Outside a session it does nothing. Inside a run
//! started by `pas-agent run` (`PAS_AGENT_RUN_ID` names a running run of this session) it does
//! nothing either (the launcher exports before and records after, so the run is recorded
//! once), except that session-start gives the session when the run could not put it in a file
//! the agent reads (its context file is tracked by git and it has no other).

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use super::{Event, Integration};
use crate::agents::Agent;
use crate::agents::hooks::ContextOutput;
use crate::fsutil::{Links, Named, WriteGuard};
use crate::git::{self, Detail};
use crate::launch::record;
use crate::model::{FileState, FileStatus, Run, RunState};
use crate::session::{Project, ops};

/// Largest payload read from stdin (1 MiB); a longer one is cut there and then fails to parse.
pub const MAX_PAYLOAD_BYTES: u64 = 1024 * 1024;
/// Longest last message kept, in characters.
pub const MAX_LAST_MESSAGE_CHARS: usize = 4000;
/// The run record's key for the agent's last message as its end-of-turn hook reported it.
pub const LAST_MESSAGE_KEY: &str = "last_message";
/// The run record's key saying the run was recorded from the agent's hooks.
pub const RECORDED_BY_KEY: &str = "recorded_by";
/// The run record's key for what the hooks could not record, and why.
pub const HOOK_NOTE_KEY: &str = "hook_note";

/// A marker older than this (7 days) belongs to a session whose end was never seen (Gemini CLI
/// does not wait for its session-end hooks; a killed agent runs none): the next session start
/// deletes it.
pub const MARKER_MAX_AGE: std::time::Duration = std::time::Duration::from_secs(7 * 86_400);

/// What the session-start hook remembers until the session ends.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Marker {
    /// When the session started; `None` when the marker was made by a later event.
    started_at: Option<DateTime<Utc>>,
    /// HEAD at the start.
    head_before: Option<String>,
    /// The last message of the last turn.
    last_message: Option<String>,
}

/// The fields of the agent's payload pas-agent uses.
#[derive(Debug, Default)]
struct Payload {
    session_id: Option<String>,
    transcript_path: Option<PathBuf>,
    cwd: Option<PathBuf>,
    raw: Value,
}

/// Runs `event` for `integration`; always returns exit code 0 (errors are warnings).
pub fn run(integration: &Integration, event: Event) -> i32 {
    if let Err(e) = handle(integration, event) {
        let consequence = match event {
            Event::SessionStart => "the agent goes on without the session in its context",
            Event::Stop => "its last message is not kept",
            Event::SessionEnd => "this agent session is not recorded as a run",
        };
        crate::term::warn(&format!(
            "pas-agent's {} hook for {}: {e}\n  {consequence}; the agent is not affected",
            event.word(),
            integration.agent.name
        ));
    }
    0
}

fn read_payload(fields: &crate::agents::hooks::Payload) -> Result<Payload, String> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return Ok(Payload::default());
    }
    let mut bytes = Vec::new();
    stdin
        .lock()
        .take(MAX_PAYLOAD_BYTES)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read the payload on stdin: {e}"))?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Payload::default());
    }
    let raw: Value = serde_json::from_slice(&bytes)
        .map_err(|e| format!("the payload on stdin is not JSON ({e})"))?;
    let text = |k: &str| raw.get(k).and_then(Value::as_str).map(str::to_string);
    Ok(Payload {
        session_id: text(fields.session_id).filter(|s| !s.is_empty()),
        transcript_path: text(fields.transcript).map(PathBuf::from),
        cwd: text(fields.cwd).map(PathBuf::from),
        raw,
    })
}

fn handle(integration: &Integration, event: Event) -> Result<(), String> {
    // Another agent running this agent's hooks (GitHub Copilot CLI runs Claude Code's): its
    // session is not this agent's, and is recorded by its own hooks if they are installed.
    if super::run_by_another(integration).is_some() {
        return Ok(());
    }
    let payload = read_payload(&integration.hooks.payload)?;
    let cwd = match &payload.cwd {
        Some(c) if c.is_absolute() => c.clone(),
        _ => std::env::current_dir().map_err(|e| format!("no current directory: {e}"))?,
    };
    let Some(project) = Project::find_opt(&cwd) else {
        // No session here: nothing to give or record (a user-level hook in another project).
        return Ok(());
    };
    let agent = integration.agent;
    // A restored run (`pas-agent restore`) asks for this: the session the agent came up in.
    if event == Event::SessionStart
        && let (Ok(run), Some(id)) = (
            std::env::var(crate::launch::RUN_ID_ENV),
            payload
                .session_id
                .as_deref()
                .filter(|i| agent.id_shape.accepts(i)),
        )
    {
        crate::launch::freeze::acknowledge(&run, id);
    }
    if inside_run(&project) {
        // The launcher records the run; at the start the hook only gives the session when
        // the run could not put it in a file the agent reads (a tracked context file).
        if event == Event::SessionStart {
            give_context(&project, integration)?;
        }
        return Ok(());
    }
    let session_id = payload
        .session_id
        .clone()
        .filter(|id| agent.id_shape.accepts(id));
    if session_id.is_none()
        && payload
            .raw
            .get(integration.hooks.payload.session_id)
            .is_some()
    {
        crate::term::warn(&format!(
            "the `session_id` in the hook's payload does not look like a {} session id",
            agent.name
        ));
    }
    match event {
        Event::SessionStart => start(&project, integration, session_id.as_deref(), &payload),
        Event::Stop => stop(&project, integration, session_id.as_deref(), &payload),
        Event::SessionEnd => end(&project, integration, session_id.as_deref(), &payload, &cwd),
    }
}

/// Whether this process runs inside a run of `project` that `pas-agent run` records.
fn inside_run(project: &Project) -> bool {
    let Ok(id) = std::env::var(crate::launch::RUN_ID_ENV) else {
        return false;
    };
    let Ok(session) = project.load() else {
        // Cannot tell: recording nothing is the safe side of "never twice".
        return true;
    };
    session
        .runs
        .iter()
        .any(|r| r.id.to_string() == id && r.state == RunState::Running)
}

/// The directory of the markers, `.pas-agent/runs/hooks`, when it may be used: neither `runs`
/// nor `hooks` may be a symbolic link (a cloned repository that commits
/// `.pas-agent/runs/hooks -> ../../config` would otherwise have pas-agent write markers among,
/// and clear old files from, the project's own files).
///
/// Errors: `runs` or `hooks` is a link, or something else than a directory.
fn hooks_dir(project: &Project) -> Result<PathBuf, String> {
    let runs = project.state_dir().join("runs");
    let hooks = runs.join("hooks");
    for dir in [&runs, &hooks] {
        match std::fs::symlink_metadata(dir) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(format!(
                    "{} is a symbolic link; pas-agent keeps its hook markers only in a real directory there (remove the link)",
                    dir.display()
                ));
            }
            Ok(meta) if !meta.is_dir() => {
                return Err(format!("{} is not a directory", dir.display()));
            }
            _ => {}
        }
    }
    Ok(hooks)
}

/// The marker's file name for `session_id` of `integration`: `<key>-<session id>.json`.
fn marker_name(integration: &Integration, session_id: &str) -> String {
    format!("{}-{session_id}.json", integration.key())
}

fn marker_path(
    project: &Project,
    integration: &Integration,
    session_id: &str,
) -> Result<PathBuf, String> {
    Ok(hooks_dir(project)?.join(marker_name(integration, session_id)))
}

/// Whether the file name `name` is one pas-agent gives its markers: `<key>-<session id>.json`
/// for a known integration and a session id of its agent's shape.
fn is_marker_name(name: &str) -> bool {
    let Some(stem) = name.strip_suffix(".json") else {
        return false;
    };
    super::all().any(|i| {
        stem.strip_prefix(i.key())
            .and_then(|rest| rest.strip_prefix('-'))
            .is_some_and(|id| i.agent.id_shape.accepts(id))
    })
}

fn read_marker(path: &Path) -> Option<Marker> {
    let bytes = crate::fsutil::read_limited(path, MAX_PAYLOAD_BYTES).ok()??;
    serde_json::from_slice(&bytes).ok()
}

fn write_marker(project: &Project, path: &Path, marker: &Marker) -> Result<(), String> {
    let guard = WriteGuard::new(&project.root).map_err(|e| e.to_string())?;
    if let Some(dir) = path.parent() {
        guard
            .create_dir_all(dir, Named::ByUs, 0o755)
            .map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    // Checked again now that the directories exist: one may have been made a link meanwhile.
    hooks_dir(project)?;
    let bytes = serde_json::to_vec(marker).map_err(|e| e.to_string())?;
    guard
        .write_volatile(path, &bytes, Named::ByUs, Links::Replace)
        .map(drop)
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Deletes the marker at `path` through the write guard; a missing one is no error.
fn remove_marker(project: &Project, path: &Path) -> Result<(), String> {
    hooks_dir(project)?;
    let guard = WriteGuard::new(&project.root).map_err(|e| e.to_string())?;
    match guard.remove(path, Named::ByUs) {
        Ok(()) => Ok(()),
        Err(crate::fsutil::WriteError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

fn start(
    project: &Project,
    integration: &Integration,
    session_id: Option<&str>,
    payload: &Payload,
) -> Result<(), String> {
    give_context(project, integration)?;
    let Some(session_id) = session_id else {
        return Err("the payload has no session id; this session will not be recorded".into());
    };
    let path = marker_path(project, integration, session_id)?;
    // Claude Code starts a session again after compacting its context: the same session goes
    // on, and keeps the start it had.
    if payload.raw.get("source").and_then(Value::as_str) == Some("compact")
        && read_marker(&path).is_some_and(|m| m.started_at.is_some())
    {
        return Ok(());
    }
    let head_before = git::try_for_root(&project.root)
        .ok()
        .flatten()
        .and_then(|repo| repo.head().ok())
        .and_then(|h| h.commit);
    let marker = Marker {
        started_at: Some(Utc::now()),
        head_before,
        last_message: None,
    };
    write_marker(project, &path, &marker)?;
    remove_old_markers(project);
    Ok(())
}

/// Prints the session for the agent's context, unless a file the agent reads already holds a
/// current block (`export::delivery::hook_gives_context`): the model gets the session once.
fn give_context(project: &Project, integration: &Integration) -> Result<(), String> {
    let session = project.load().map_err(|e| e.to_string())?;
    if !crate::export::delivery::hook_gives_context(integration.agent, &project.root, &session) {
        return Ok(());
    }
    // The Markdown of the block, without the live git state: reading the work tree is what
    // would make a start slow on a large repository.
    let (content, _) = crate::export::content(&session, None, None);
    let output = match integration.hooks.context {
        ContextOutput::HookSpecific => Some(serde_json::json!({
            "hookSpecificOutput": {
                "hookEventName": "SessionStart",
                "additionalContext": content,
            }
        })),
        ContextOutput::TopLevel => Some(serde_json::json!({ "additionalContext": content })),
        ContextOutput::Ignored => None,
    };
    if let Some(output) = output {
        crate::term::print_json(&output).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Deletes the markers older than [`MARKER_MAX_AGE`]: only regular files named as markers
/// ([`is_marker_name`]) whose contents are a marker, through the write guard; nothing when the
/// markers' directory is not a real directory of the project ([`hooks_dir`]).
fn remove_old_markers(project: &Project) {
    let Ok(dir) = hooks_dir(project) else { return };
    let now = std::time::SystemTime::now();
    for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        let name = entry.file_name();
        if !name.to_str().is_some_and(is_marker_name) {
            continue;
        }
        let path = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let old = meta
            .modified()
            .ok()
            .and_then(|m| now.duration_since(m).ok())
            .is_some_and(|age| age > MARKER_MAX_AGE);
        if meta.is_file() && old && read_marker(&path).is_some() {
            let _ = remove_marker(project, &path);
        }
    }
}

fn last_message(integration: &Integration, payload: &Payload) -> Option<String> {
    let text = payload
        .raw
        .get(integration.hooks.payload.last_message)?
        .as_str()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.chars().take(MAX_LAST_MESSAGE_CHARS).collect())
}

fn stop(
    project: &Project,
    integration: &Integration,
    session_id: Option<&str>,
    payload: &Payload,
) -> Result<(), String> {
    let (Some(session_id), Some(message)) = (session_id, last_message(integration, payload)) else {
        return Ok(());
    };
    let path = marker_path(project, integration, session_id)?;
    // Made here when the start was not seen: `started_at` stays `None`, so the end knows.
    let mut marker = read_marker(&path).unwrap_or_default();
    marker.last_message = Some(message);
    write_marker(project, &path, &marker)
}

/// The agent's own words (its prompts, last answer, model and tokens; [`Agent::transcript`])
/// for a run recorded from the hooks: only the turns after `since`, the session's start (from
/// the start marker; with none, the whole transcript, since no run of this session was
/// recorded before: see the caller).
fn add_words(
    run: &mut Run,
    agent: &Agent,
    session_id: &str,
    cwd: &Path,
    since: DateTime<Utc>,
    transcript_path: Option<&Path>,
) {
    let read = || agent.transcript(session_id, cwd, since, transcript_path);
    let mut words = read();
    // An agent that writes its store behind its hooks: a few more reads, until the answer is
    // there (the agent waits for this hook, up to its timeout, while it writes).
    if agent.store.is_some_and(|s| s.written_late()) {
        let deadline = std::time::Instant::now() + WRITTEN_LATE_PATIENCE;
        while words.last_answer.is_none() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(100));
            words = read();
        }
    }
    run.transcript = Some(words);
}

/// How long a session-end hook waits for an agent that writes its store behind
/// ([`crate::agents::Store::written_late`]) to write the last answer.
const WRITTEN_LATE_PATIENCE: std::time::Duration = std::time::Duration::from_secs(3);

/// The files that differed from HEAD before the session started, as far as the end can tell:
/// those changed now whose modification time is older than the start.
fn baseline_before(
    repo: &git::Repo,
    files: &[FileState],
    started: DateTime<Utc>,
) -> Vec<FileState> {
    let started = std::time::SystemTime::from(started);
    files
        .iter()
        .filter(|f| f.status != FileStatus::Deleted)
        .filter(|f| {
            repo.abs(&f.path)
                .and_then(|p| std::fs::symlink_metadata(p).ok())
                .and_then(|m| m.modified().ok())
                .is_some_and(|m| m < started)
        })
        .cloned()
        .collect()
}

fn end(
    project: &Project,
    integration: &Integration,
    session_id: Option<&str>,
    payload: &Payload,
    cwd: &Path,
) -> Result<(), String> {
    let agent = integration.agent;
    let Some(session_id) = session_id else {
        return Err(
            "the payload has no session id, so there is no session to record; nothing was recorded"
                .into(),
        );
    };
    let session_id = Some(session_id);
    let ended_at = Utc::now();
    let marker_file = match session_id {
        Some(id) => Some(marker_path(project, integration, id)?),
        None => None,
    };
    let marker = marker_file.as_deref().and_then(read_marker);
    let started = marker.as_ref().and_then(|m| m.started_at);
    let mut note = None;
    let seen = git::Seen::of_root(
        &project.root,
        Detail::Files,
        "the run is recorded without git data",
    );
    let (repo, tree_now) = (seen.repo, seen.tree);
    let (head_before, baseline) = match (started, &tree_now, &repo) {
        (Some(started), Some(tree), Some(repo)) => (
            marker.as_ref().and_then(|m| m.head_before.clone()),
            baseline_before(repo, &tree.files, started),
        ),
        (None, Some(tree), _) => {
            note = Some(
                "the session's start was not seen (no session-start hook ran for it), so its commits and changed files are not recorded"
                    .to_string(),
            );
            (tree.head.commit.clone(), tree.files.clone())
        }
        _ => (
            marker.as_ref().and_then(|m| m.head_before.clone()),
            Vec::new(),
        ),
    };
    let outcome = record::git_outcome(repo.as_ref(), head_before.as_deref(), &baseline);
    let git_unknown = outcome.tree.is_none() && (repo.is_some() || seen.unknown);
    let started_at = started.unwrap_or(ended_at);
    let mut run = Run {
        id: Uuid::new_v4(),
        agent: agent.id.to_string(),
        argv: vec![agent.executables[0].to_string()],
        cwd: cwd.to_string_lossy().into_owned(),
        state: RunState::Finished,
        started_at,
        ended_at: Some(ended_at),
        duration_ms: started.map(|s| u64::try_from((ended_at - s).num_milliseconds()).unwrap_or(0)),
        exit_code: None,
        signal: None,
        launcher_pid: None,
        launcher_started: None,
        nonce: None,
        head_before,
        head_after: outcome.head_after.clone(),
        commits: outcome.commits.clone(),
        files_changed: outcome.files_changed.clone(),
        agent_session_id: session_id.map(str::to_string),
        checkpoint_before: None,
        checkpoint_after: None,
        capture: None,
        baseline: None,
        transcript: None,
        extra: Default::default(),
    };
    crate::session::bound::bound_into(&mut run.files_changed, &mut run.extra);
    run.extra.insert(
        RECORDED_BY_KEY.into(),
        Value::String(format!("{} hooks", integration.key())),
    );
    let message = last_message(integration, payload)
        .or_else(|| marker.as_ref().and_then(|m| m.last_message.clone()));
    if let Some(message) = &message {
        run.extra
            .insert(LAST_MESSAGE_KEY.into(), Value::String(message.clone()));
    }
    if let Some(note) = note {
        run.extra.insert(HOOK_NOTE_KEY.into(), Value::String(note));
    }
    if let Some(id) = session_id {
        add_words(
            &mut run,
            agent,
            id,
            cwd,
            started.unwrap_or(DateTime::UNIX_EPOCH),
            payload.transcript_path.as_deref(),
        );
        // The end-of-turn hook can fire before the agent wrote that turn to its transcript:
        // the message the hook reported is the newer answer.
        if let (Some(t), Some(m)) = (run.transcript.as_mut(), message.as_deref()) {
            crate::agents::words::hook_answer(t, m);
        }
    }
    let tree = outcome.tree;
    let label = agent.id;
    let patience = crate::session::lock::timeout().max(std::time::Duration::from_secs(10));
    project
        .modify_within(patience, |s| {
            // A session end seen twice, or a session already recorded whose start was not seen
            // (no marker, or one a later event made without a start): record it once.
            if started.is_none()
                && let Some(id) = session_id
                && s.runs
                    .iter()
                    .any(|r| r.agent == label && r.agent_session_id.as_deref() == Some(id))
            {
                return Ok(());
            }
            run.checkpoint_after = ops::keeping_git_if_unknown(s, git_unknown, |s| {
                ops::auto_checkpoint(s, format!("after {label} session"), tree.as_ref(), ended_at)
            });
            s.runs.push(run);
            s.updated_at = ended_at;
            Ok(())
        })
        .map_err(|e| e.to_string())?;
    if let Some(path) = marker_file
        && marker.is_some()
    {
        // The run is recorded: a marker left behind is only a warning.
        if let Err(e) = remove_marker(project, &path) {
            crate::term::warn(&format!("the session's start marker was not deleted: {e}"));
        }
    }
    Ok(())
}
