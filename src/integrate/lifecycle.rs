//! What `pas-agent lifecycle <agent> <event>` does when the agent runs it from its hooks: the
//! agent's JSON payload (`session_id`, `transcript_path`, `cwd`, …) arrives on stdin. The
//! session's marker and the run recorded from it are [`crate::launch::hooked`]'s.
//!
//! - **session-start** prints the session (the block's Markdown) as
//!   `{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":…}}`, which all
//!   three agents add to the model's context — unless a file the agent reads holds a current
//!   block already, so that the model gets the session once; a block gone out of date is
//!   brought up to date in place first, and an agent that read it before the hook gets the
//!   session with a note that it supersedes that block ([`give_context`]) — then writes the
//!   session's marker: the time,
//!   HEAD, the directory, the transcript's path and the agent's process. No work-tree scan:
//!   the start stays cheap on a large repository. A session already started (a second start
//!   from hooks installed at two levels, Claude Code's start after compacting) keeps its
//!   start; an ended one not recorded yet is set aside for its completion.
//! - **stop** (end of a turn) keeps the agent's last message and the time in the marker.
//! - **session-end** only marks the end in the marker and starts the completion detached
//!   (`pas-agent lifecycle <agent> complete`), which records the run off the agent's clock.
//!
//! A hook never fails the agent: every error is a warning on stderr and the exit code is 0,
//! which all three agents treat as success. Outside a session it does nothing. Inside a run
//! started by `pas-agent run` (`PAS_AGENT_RUN_ID` names a running run of this session whose
//! launcher is an ancestor of the hook) it does nothing either (the launcher exports before
//! and records after, so the run is recorded once), except that session-start gives the
//! session when the run could not put it in a file the agent reads (its context file is
//! tracked by git and it has no other).

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};

use chrono::Utc;
use serde_json::Value;

use super::{Event, Integration};
use crate::agents::hooks::ContextOutput;
use crate::git;
use crate::launch::hooked::{self, Marker, Turn};
use crate::model::RunState;
use crate::session::Project;

/// Largest payload read from stdin (1 MiB); a longer one is cut there and then fails to parse.
pub const MAX_PAYLOAD_BYTES: u64 = 1024 * 1024;
/// Longest last message kept, in characters.
pub const MAX_LAST_MESSAGE_CHARS: usize = 4000;

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

/// `pas-agent lifecycle <agent> complete`, started detached by a session-end hook in the
/// session root: records the runs of the sessions that are over ([`hooked::complete`]).
/// Always returns 0.
pub fn complete() -> i32 {
    let Ok(cwd) = std::env::current_dir() else {
        return 0;
    };
    if let Some(project) = Project::find_opt(&cwd)
        && let Err(e) = hooked::complete(&project, Turn::Wait)
    {
        crate::term::warn(&format!(
            "the agent sessions that ended are not recorded yet: {e}"
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
        Event::SessionStart => start(&project, integration, session_id.as_deref(), &payload, &cwd),
        Event::Stop => stop(&project, integration, session_id.as_deref(), &payload, &cwd),
        Event::SessionEnd => end(&project, integration, session_id.as_deref(), &payload, &cwd),
    }
}

/// Whether this process runs inside a run of `project` that `pas-agent run` records: the run
/// `PAS_AGENT_RUN_ID` names is running and its launcher is an ancestor of this process. (A
/// variable alone is not proof: Codex's background server runs the hooks of every later
/// session with the environment of the terminal that started it, checked: codex-cli 0.171.0.)
fn inside_run(project: &Project) -> bool {
    let Ok(id) = std::env::var(crate::launch::RUN_ID_ENV) else {
        return false;
    };
    // A running run is never one of the old runs `load_recent` leaves undecoded.
    let Ok(session) = project.load_recent() else {
        // Cannot tell: recording nothing is the safe side of "never twice".
        return true;
    };
    session.runs.iter().any(|r| {
        r.id.to_string() == id
            && r.state == RunState::Running
            && r.launcher_pid.is_none_or(|pid| {
                crate::launch::process::is_ancestor(pid, r.launcher_started.as_deref())
            })
    })
}

/// The marker of `session_id`, and what it holds now (a new one when there is none).
fn marker_of(
    project: &Project,
    integration: &Integration,
    session_id: &str,
) -> Result<(PathBuf, Option<Marker>), String> {
    let path = hooked::path(project, integration.key(), session_id)?;
    let marker = hooked::read(&path);
    Ok((path, marker))
}

/// Fills in what the payload tells about the session when the marker does not have it yet.
fn note_payload(marker: &mut Marker, payload: &Payload, cwd: &Path) {
    if marker.cwd.is_none() {
        marker.cwd = Some(cwd.to_string_lossy().into_owned());
    }
    if marker.transcript_path.is_none() {
        marker.transcript_path = payload
            .transcript_path
            .as_ref()
            .map(|p| p.to_string_lossy().into_owned());
    }
}

fn start(
    project: &Project,
    integration: &Integration,
    session_id: Option<&str>,
    payload: &Payload,
    cwd: &Path,
) -> Result<(), String> {
    give_context(project, integration)?;
    // Sessions of the project that ended without being recorded (a completion cut short):
    // recorded now, off this agent's clock.
    if hooked::any_over(project) {
        hooked::spawn_completion(&project.root, integration.key());
    }
    let Some(session_id) = session_id else {
        return Err("the payload has no session id; this session will not be recorded".into());
    };
    let (path, existing) = marker_of(project, integration, session_id)?;
    let mut marker = match existing {
        // The same session going on (a second start from hooks installed at two levels,
        // Claude Code's start after compacting its context): it keeps its start.
        Some(m) if m.started_at.is_some() && m.over(None).is_none() => return Ok(()),
        // The session ended and is not recorded yet: set aside for its completion, and this
        // start (a resume) begins a run of its own.
        Some(m) if m.over(None).is_some() => {
            hooked::set_aside(project, &path, &m)?;
            hooked::spawn_completion(&project.root, integration.key());
            Marker::default()
        }
        // Made by a turn's end before this start was seen.
        Some(m) => m,
        None => Marker::default(),
    };
    marker.started_at = Some(Utc::now());
    marker.head_before = git::try_for_root(&project.root)
        .ok()
        .flatten()
        .and_then(|repo| repo.head().ok())
        .and_then(|h| h.commit);
    note_payload(&mut marker, payload, cwd);
    if let Some((pid, token)) = crate::launch::process::runner() {
        marker.agent_pid = Some(pid);
        marker.agent_started = token;
    }
    hooked::write(project, &path, &marker)
}

/// How long the start hook waits for the session lock to bring a stale block up to date:
/// the start must not wait on a busy session (the hook then gives the session itself).
const REFRESH_LOCK_WAIT: std::time::Duration = std::time::Duration::from_millis(500);

/// Gives the agent the session at its start, so that the model receives it once and current
/// (docs/handoff.md, "The start hook"):
///
/// - a file the agent reads holds a block that is out of date: it is brought up to date in
///   place, as `export` would (a file that holds a block, tracked or not, is where `run` keeps
///   it current too), without the live git state;
/// - the hook prints the session (the block's Markdown) when the agent reads no current block
///   after that: none was there, or it could not be brought up to date, or the agent had read
///   its files before the hook ran ([`crate::agents::hooks::Hooks::reads_files_first`]). When
///   the agent has read an out-of-date block, the printed session starts by saying that it
///   supersedes the block in that file.
fn give_context(project: &Project, integration: &Integration) -> Result<(), String> {
    use crate::export::delivery;
    let agent = integration.agent;
    // The block names only the latest runs: old ones stay undecoded.
    let mut session = project.load_recent().map_err(|e| e.to_string())?;
    let before = delivery::held(agent, &project.root, &session);
    // The session the block was refreshed from (read again under the lock: a run recorded in
    // between is in it) is the one checked and given below.
    let refreshed = before.stale.is_empty()
        || {
            match refresh(project, agent, &before.stale) {
                Ok(locked) => {
                    session = locked;
                    true
                }
                Err(e) => {
                    crate::term::warn(&format!(
                        "pas-agent's start hook for {} could not bring the out-of-date session block up to date: {e}",
                        agent.name
                    ));
                    false
                }
            }
        };
    let read_stale =
        !before.stale.is_empty() && (integration.hooks.reads_files_first || !refreshed);
    if !read_stale && delivery::held(agent, &project.root, &session).current {
        return Ok(());
    }
    // The Markdown of the block, without the live git state: reading the work tree is what
    // would make a start slow on a large repository.
    let (mut content, _) = crate::export::content(&session, None, None);
    if read_stale {
        let files = shown_all(project, &before.stale);
        let fate = if refreshed {
            "it has been brought up to date there for the next start"
        } else {
            "it could not be brought up to date there"
        };
        content = format!(
            "Note: the pas-agent session block in {files} was out of date when this session started; if your context holds it as well, the session below is the current one and supersedes it ({fate}).\n\n{content}"
        );
    }
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

/// Brings the out-of-date blocks in `stale` up to date where they are
/// ([`crate::export::refresh_blocks`]), under the session lock if it comes within
/// [`REFRESH_LOCK_WAIT`]; returns the session as read under the lock, which the blocks now
/// hold.
fn refresh(
    project: &Project,
    agent: &'static crate::agents::Agent,
    stale: &[PathBuf],
) -> Result<crate::session::Session, String> {
    let _guard = crate::session::lock::acquire_existing(&project.state_dir(), REFRESH_LOCK_WAIT)
        .map_err(|e| e.to_string())?;
    let session = project.load_recent().map_err(|e| e.to_string())?;
    crate::export::refresh_blocks(&session, agent, &project.root, stale)?;
    Ok(session)
}

/// The files as the session root sees them, joined with "and".
fn shown_all(project: &Project, files: &[PathBuf]) -> String {
    files
        .iter()
        .map(|f| crate::export::shown(&project.root, f))
        .collect::<Vec<_>>()
        .join(" and ")
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
    cwd: &Path,
) -> Result<(), String> {
    let Some(session_id) = session_id else {
        return Ok(());
    };
    let (path, existing) = marker_of(project, integration, session_id)?;
    // Made here when the start was not seen: `started_at` stays `None`, so the end knows.
    let mut marker = existing.unwrap_or_default();
    if let Some(message) = last_message(integration, payload) {
        marker.last_message = Some(message);
    }
    marker.last_turn_at = Some(Utc::now());
    note_payload(&mut marker, payload, cwd);
    hooked::write(project, &path, &marker)
}

/// Marks the session's end and leaves the rest to a detached completion: nothing here reads
/// the work tree, the session or the transcript.
fn end(
    project: &Project,
    integration: &Integration,
    session_id: Option<&str>,
    payload: &Payload,
    cwd: &Path,
) -> Result<(), String> {
    let Some(session_id) = session_id else {
        return Err(
            "the payload has no session id, so there is no session to record; nothing was recorded"
                .into(),
        );
    };
    let (path, existing) = marker_of(project, integration, session_id)?;
    let mut marker = existing.unwrap_or_default();
    // A second delivery of the same end (hooks at two levels, Gemini CLI's repeated
    // SessionEnd) keeps the first one's time.
    if marker.ended_at.is_none() {
        marker.ended_at = Some(Utc::now());
        marker.end_reason = payload
            .raw
            .get("reason")
            .and_then(Value::as_str)
            .map(|r| r.chars().take(100).collect());
    }
    if let Some(message) = last_message(integration, payload) {
        marker.last_message = Some(message);
    }
    note_payload(&mut marker, payload, cwd);
    hooked::write(project, &path, &marker)?;
    if !hooked::spawn_completion(&project.root, integration.key()) {
        // No process could be started: complete here, on the agent's clock.
        hooked::complete(project, Turn::Wait)?;
    }
    Ok(())
}
