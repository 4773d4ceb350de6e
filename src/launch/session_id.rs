//! Learning the agent's own session id for a run (SPEC §5 `agent_session_id`), by the way its
//! row in [`crate::agents`] names: chosen before launch, read from its session store, printed
//! at exit, or listed by the agent itself. Store layouts and their sources are documented on
//! [`Store`].
//!
//! A store is read only for sessions that may belong to this run: the agent's recorded working
//! directory equals the run's, and the session started inside the run (with a small slack for
//! clocks that tick in whole seconds). A session file the agent's own processes held open
//! during the run ([`super::witness`]) is this run's for sure. Otherwise the candidates are
//! guesses, and [`choose`] settles them under the session lock against what other runs
//! claimed: a session another run recorded is never this one's, and when runs of the agent
//! overlapped in this directory and the guesses cannot be told apart, no id is recorded and
//! the run says why. Nothing found is never an error: the run is recorded either way.

use std::ffi::{OsStr, OsString};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::agents::{Agent, SessionId, Store};

/// Slack allowed around the run's start and end when matching a session's start time.
const SLACK: Duration = Duration::from_secs(2);
/// At most this much of a first line is read (a Codex rollout's first line carries the whole
/// system prompt, tens of kilobytes).
const MAX_LINE: u64 = 4 * 1024 * 1024;
/// At most this many lines of a Claude transcript are read looking for its `cwd`.
const CLAUDE_LINES: usize = 50;
/// How long a `Listed` command may take.
const LIST_TIMEOUT: Duration = Duration::from_secs(20);

/// What the launcher decided before the run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prepared {
    /// Arguments to put before the user's (`--session-id <uuid>`).
    pub args: Vec<OsString>,
    /// The id chosen or resumed, if any.
    pub id: Option<String>,
}

/// Prepares a new run of `agent` with the user's `args`: for an agent whose id the launcher
/// chooses, a fresh UUID v4 and the flag that passes it, unless the user's arguments already
/// choose a session (then nothing is chosen).
pub fn prepare(agent: &Agent, args: &[OsString]) -> Prepared {
    match agent.session_id {
        SessionId::Choose { flag, unless, .. } if !mentions(args, unless) => {
            let id = uuid::Uuid::new_v4().to_string();
            Prepared {
                args: vec![flag.into(), id.clone().into()],
                id: Some(id),
            }
        }
        _ => Prepared::default(),
    }
}

/// Whether `args` holds any of `flags`, alone or as `--flag=value`.
fn mentions(args: &[OsString], flags: &[&str]) -> bool {
    args.iter().any(|a| {
        let a = a.to_string_lossy();
        flags
            .iter()
            .any(|f| a == *f || (f.starts_with("--") && a.starts_with(&format!("{f}="))))
    })
}

/// What is known after the run, for discovery.
#[derive(Debug, Clone)]
pub struct RunFacts<'a> {
    /// The agent's row, which says how to learn the id ([`Agent::session_id`]).
    pub agent: &'a Agent,
    /// The resolved executable (for [`SessionId::Listed`]).
    pub program: &'a Path,
    /// The directory the agent ran in.
    pub cwd: &'a Path,
    /// When the run started (the record's `started_at`); sessions are matched to it with a
    /// 2-second slack.
    pub started: DateTime<Utc>,
    /// When the agent exited (the record's `ended_at`), matched with the same slack.
    pub ended: DateTime<Utc>,
    /// The id chosen before the run (see [`prepare`]).
    pub chosen: Option<&'a str>,
    /// The plain-text capture, when there is one.
    pub capture_txt: Option<&'a Path>,
    /// Session ids earlier runs of this project already recorded: never this run's (a session
    /// that an earlier, quick run wrote can look as if it started inside this one).
    pub taken: &'a [String],
    /// Files of the agent's store that its processes held open during the run (absolute,
    /// canonical; empty where this cannot be seen).
    pub held: &'a [PathBuf],
}

/// What the agent's store or output says about this run's session: one id for sure, or
/// guesses to be settled by [`choose`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Found {
    /// The id known for sure: chosen by the launcher and confirmed, printed in this run's own
    /// output, or in a file the agent's processes held open.
    pub sure: Option<String>,
    /// Sessions of this directory that started inside the run, newest first.
    pub guesses: Vec<String>,
}

impl Found {
    fn sure(id: impl Into<String>) -> Found {
        Found {
            sure: Some(id.into()),
            guesses: Vec::new(),
        }
    }

    /// Keeps only the ids that have `shape`.
    fn of_shape(self, shape: crate::agents::IdShape) -> Found {
        Found {
            sure: self.sure.filter(|id| shape.accepts(id)),
            guesses: self
                .guesses
                .into_iter()
                .filter(|id| shape.accepts(id))
                .collect(),
        }
    }
}

/// One session read from a store: its id, its start, and the file it is kept in.
#[derive(Debug, Clone)]
struct Candidate {
    id: String,
    at: DateTime<Utc>,
    file: Option<PathBuf>,
}

/// Turns a store's candidates into [`Found`]: one held open by the agent is sure; the rest are
/// guesses, newest first.
fn settle(run: &RunFacts<'_>, mut all: Vec<Candidate>) -> Found {
    let held = |f: &Option<PathBuf>| {
        f.as_ref().is_some_and(|f| {
            let f = f.canonicalize().unwrap_or_else(|_| f.clone());
            run.held.contains(&f)
        })
    };
    let mut sure: Vec<&Candidate> = all.iter().filter(|c| held(&c.file)).collect();
    sure.dedup_by(|a, b| a.id == b.id);
    if let [one] = sure.as_slice() {
        return Found::sure(one.id.clone());
    }
    all.sort_by_key(|c| std::cmp::Reverse(c.at));
    let mut guesses: Vec<String> = Vec::new();
    for c in all {
        if !guesses.contains(&c.id) {
            guesses.push(c.id);
        }
    }
    Found {
        sure: None,
        guesses,
    }
}

/// Settles what discovery found, under the session lock: `claimed` are the ids other runs of
/// the project recorded, and `unresolved` says whether another run of this agent in this
/// directory overlapped this one in time and has no session id (it may still be running).
///
/// Returns the id to record and, when none is recorded though sessions were found, why.
pub fn choose(
    found: &Found,
    claimed: &[String],
    unresolved: bool,
    agent: &str,
) -> (Option<String>, Option<String>) {
    if let Some(id) = &found.sure {
        return (Some(id.clone()), None);
    }
    let free: Vec<&String> = found
        .guesses
        .iter()
        .filter(|g| !claimed.contains(g))
        .collect();
    match free.as_slice() {
        [] if found.guesses.is_empty() => (None, None),
        [] => (
            None,
            Some(format!(
                "every {agent} session that started in this directory during the run is recorded by another run"
            )),
        ),
        _ if unresolved => (
            None,
            Some(format!(
                "another {agent} run overlapped this one in the same directory, and which of the {} session(s) that started meanwhile is this run's cannot be told, so none is recorded",
                free.len()
            )),
        ),
        [newest, ..] => (Some((*newest).clone()), None),
    }
}

impl RunFacts<'_> {
    /// Whether `id` is not another run's.
    fn fresh(&self, id: &str) -> bool {
        !self.taken.iter().any(|t| t == id)
    }
}

/// What is known of the agent's session for a finished new run (settle it with [`choose`]).
/// Only ids of the agent's id shape ([`Agent::id_shape`]) are kept: what a store or a capture
/// holds is not trusted to be an id.
pub fn discover(run: &RunFacts<'_>) -> Found {
    discover_any(run).of_shape(run.agent.id_shape)
}

fn discover_any(run: &RunFacts<'_>) -> Found {
    match run.agent.session_id {
        SessionId::Unknown => Found::default(),
        SessionId::Choose { store, .. } => {
            let Some(chosen) = run.chosen else {
                return Found::default();
            };
            match store {
                // The agent may have ignored the flag (claude-code#44607): believe the store.
                Some(store) if !in_store(store, chosen) => read_store(store, run),
                _ => Found::sure(chosen),
            }
        }
        SessionId::Discover(store) => read_store(store, run),
        SessionId::Printed { marker } => run
            .capture_txt
            .and_then(|c| printed(c, marker))
            .map(Found::sure)
            .unwrap_or_default(),
        SessionId::Listed { args } => Found {
            sure: None,
            guesses: listed(run, args),
        },
    }
}

/// The session a resumed run ended in: the agent's store says which session was written during
/// the run (a resume that forks, or an agent that starts a new id on resume, shows up there);
/// otherwise the id that was resumed.
pub fn after_resume(run: &RunFacts<'_>, resumed: &str) -> Found {
    let store = match run.agent.session_id {
        SessionId::Choose { store, .. } => store,
        SessionId::Discover(store) => Some(store),
        _ => None,
    };
    match store.map(|s| read_store(s, run).of_shape(run.agent.id_shape)) {
        Some(found) if found.sure.is_some() => found,
        Some(Found { guesses, .. }) if !guesses.is_empty() => Found {
            sure: None,
            guesses,
        },
        _ => Found::sure(resumed),
    }
}

fn env_dir(var: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

fn home() -> Option<PathBuf> {
    env_dir("HOME").or_else(|| env_dir("USERPROFILE"))
}

pub(crate) fn claude_dir() -> Option<PathBuf> {
    env_dir("CLAUDE_CONFIG_DIR").or_else(|| Some(home()?.join(".claude")))
}

pub(crate) fn codex_dir() -> Option<PathBuf> {
    env_dir("CODEX_HOME").or_else(|| Some(home()?.join(".codex")))
}

pub(crate) fn gemini_dir() -> Option<PathBuf> {
    Some(env_dir("GEMINI_CLI_HOME").or_else(home)?.join(".gemini"))
}

/// Whether the store holds a session with this id.
fn in_store(store: Store, id: &str) -> bool {
    match store {
        Store::ClaudeProjects => claude_dir().is_some_and(|d| claude_has(&d.join("projects"), id)),
        Store::CodexRollouts | Store::GeminiChats => false,
    }
}

/// Whether `projects/<any>/<id>.jsonl` exists.
fn claude_has(projects: &Path, id: &str) -> bool {
    let name = format!("{id}.jsonl");
    subdirs(projects).any(|d| d.join(&name).is_file())
}

fn read_store(store: Store, run: &RunFacts<'_>) -> Found {
    let all = match store {
        Store::ClaudeProjects => claude_dir().map(|d| claude(&d.join("projects"), run)),
        Store::CodexRollouts => codex_dir().map(|d| codex(&d.join("sessions"), run)),
        Store::GeminiChats => gemini_dir().map(|d| gemini(&d, run)),
    };
    settle(run, all.unwrap_or_default())
}

/// The directory of an agent's session store, whose files the witness looks for among the
/// agent's open files (`None` for agents whose session is not read from a store).
pub fn store_dir(agent: &Agent) -> Option<PathBuf> {
    let store = match agent.session_id {
        SessionId::Choose { store, .. } => store?,
        SessionId::Discover(store) => store,
        _ => return None,
    };
    match store {
        Store::ClaudeProjects => Some(claude_dir()?.join("projects")),
        Store::CodexRollouts => Some(codex_dir()?.join("sessions")),
        Store::GeminiChats => gemini_dir(),
    }
}

fn subdirs(dir: &Path) -> impl Iterator<Item = PathBuf> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
}

fn files(dir: &Path) -> impl Iterator<Item = PathBuf> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.path())
}

fn modified(path: &Path) -> Option<DateTime<Utc>> {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .map(DateTime::<Utc>::from)
}

fn slack() -> chrono::Duration {
    chrono::Duration::from_std(SLACK).unwrap_or_default()
}

/// Whether `t` falls inside the run, with slack.
fn inside(run: &RunFacts<'_>, t: DateTime<Utc>) -> bool {
    t >= run.started - slack() && t <= run.ended + slack()
}

/// The first line of a file, at most [`MAX_LINE`] bytes, as JSON.
fn first_line(path: &Path) -> Option<Value> {
    let file = std::fs::File::open(path).ok()?;
    let mut line = Vec::new();
    BufReader::new(file.take(MAX_LINE))
        .read_until(b'\n', &mut line)
        .ok()?;
    serde_json::from_slice(&line).ok()
}

fn time_of(v: &Value) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(v.as_str()?)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

fn same_dir(a: &str, b: &Path) -> bool {
    let a = Path::new(a);
    a == b || a.canonicalize().ok().as_deref() == b.canonicalize().ok().as_deref()
}

/// Claude Code: transcripts under `projects` written during the run whose events name this cwd.
fn claude(projects: &Path, run: &RunFacts<'_>) -> Vec<Candidate> {
    let mut out = Vec::new();
    for dir in subdirs(projects) {
        for path in files(&dir) {
            if path.extension() != Some(OsStr::new("jsonl")) {
                continue;
            }
            let Some(mtime) = modified(&path) else {
                continue;
            };
            if mtime < run.started - slack() {
                continue;
            }
            let Some(id) = claude_session(&path, run.cwd) else {
                continue;
            };
            if run.fresh(&id) {
                out.push(Candidate {
                    id,
                    at: mtime,
                    file: Some(path),
                });
            }
        }
    }
    out
}

fn claude_session(path: &Path, cwd: &Path) -> Option<String> {
    let file = std::fs::File::open(path).ok()?;
    for line in BufReader::new(file.take(MAX_LINE))
        .lines()
        .take(CLAUDE_LINES)
    {
        let Ok(line) = line else { break };
        let Ok(v) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if let (Some(id), Some(dir)) = (v["sessionId"].as_str(), v["cwd"].as_str()) {
            return same_dir(dir, cwd).then(|| id.to_string());
        }
    }
    None
}

/// Codex: rollouts under `sessions` in the day directories the run touched (local and UTC
/// dates, a day either side) whose `session_meta` has this cwd and a start inside the run.
fn codex(sessions: &Path, run: &RunFacts<'_>) -> Vec<Candidate> {
    let mut days = std::collections::BTreeSet::new();
    let mut day = (run.started - chrono::Duration::days(1)).date_naive();
    let last = (run.ended + chrono::Duration::days(1)).date_naive();
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
            if modified(&path).is_some_and(|m| m < run.started - slack()) {
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
            if same_dir(cwd, run.cwd) && inside(run, t) && run.fresh(id) {
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

/// Gemini CLI: the project's chat files under `root` (`~/.gemini`) whose first line says a main
/// session started inside the run.
fn gemini(root: &Path, run: &RunFacts<'_>) -> Vec<Candidate> {
    let tmp = root.join("tmp");
    let mut dirs: Vec<PathBuf> = Vec::new();
    // The registry maps the project directory to its short id.
    if let Ok(text) = std::fs::read_to_string(root.join("projects.json"))
        && let Ok(v) = serde_json::from_str::<Value>(&text)
        && let Some(map) = v["projects"].as_object()
    {
        for (dir, short) in map {
            if same_dir(dir, run.cwd)
                && let Some(short) = short.as_str()
            {
                dirs.push(tmp.join(short));
            }
        }
    }
    // Every project directory names its root in `.project_root`.
    for dir in subdirs(&tmp) {
        if let Ok(r) = std::fs::read_to_string(dir.join(".project_root"))
            && same_dir(r.trim(), run.cwd)
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
            if inside(run, t) && run.fresh(id) {
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

/// A legacy `.json` chat file, read whole (up to [`MAX_LINE`]).
fn whole_json(path: &Path) -> Option<Value> {
    let mut text = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(MAX_LINE)
        .read_to_end(&mut text)
        .ok()?;
    serde_json::from_slice(&text).ok()
}

/// The last id printed after `marker` in the capture.
fn printed(capture: &Path, marker: &str) -> Option<String> {
    let text = std::fs::read_to_string(capture).ok()?;
    text.rmatch_indices(marker).find_map(|(i, _)| {
        let id: String = text[i + marker.len()..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
            .collect();
        (!id.is_empty()).then_some(id)
    })
}

/// Runs the agent's own session listing: the sessions of this cwd created inside the run,
/// newest first.
fn listed(run: &RunFacts<'_>, args: &[&str]) -> Vec<String> {
    listed_sessions(run, args).unwrap_or_default()
}

fn listed_sessions(run: &RunFacts<'_>, args: &[&str]) -> Option<Vec<String>> {
    let mut child = std::process::Command::new(run.program)
        .args(args)
        .current_dir(run.cwd)
        .env("PWD", run.cwd)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let mut stdout = child.stdout.take()?;
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = stdout.read_to_end(&mut out);
        out
    });
    let deadline = std::time::Instant::now() + LIST_TIMEOUT;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let out = reader.join().ok()?;
    let sessions: Value = serde_json::from_slice(&out).ok()?;
    let from = (run.started - slack()).timestamp_millis();
    let to = (run.ended + slack()).timestamp_millis();
    let mut found: Vec<(i64, String)> = sessions
        .as_array()?
        .iter()
        .filter(|s| {
            s["directory"]
                .as_str()
                .is_some_and(|d| same_dir(d, run.cwd))
        })
        .filter_map(|s| Some((s["created"].as_i64()?, s["id"].as_str()?.to_string())))
        .filter(|(t, id)| (from..=to).contains(t) && run.fresh(id))
        .collect();
    found.sort_by_key(|f| std::cmp::Reverse(f.0));
    Some(found.into_iter().map(|(_, id)| id).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chosen_id_is_skipped_when_the_user_picks_a_session() {
        let claude = crate::agents::by_name("claude").unwrap();
        let p = prepare(claude, &["-p".into(), "hi".into()]);
        assert_eq!(p.args.len(), 2);
        assert_eq!(p.args[0], "--session-id");
        assert!(uuid::Uuid::parse_str(p.id.as_deref().unwrap()).is_ok());
        for user in [&["--resume", "x"][..], &["-c"], &["--session-id=abc"]] {
            let user: Vec<OsString> = user.iter().map(OsString::from).collect();
            assert_eq!(prepare(claude, &user), Prepared::default(), "{user:?}");
        }
        let codex = crate::agents::by_name("codex").unwrap();
        assert_eq!(prepare(codex, &[]), Prepared::default());
    }

    #[test]
    fn printed_ids_are_read_from_the_capture() {
        let dir = tempfile::tempdir().unwrap();
        let cap = dir.path().join("capture.txt");
        std::fs::write(
            &cap,
            "bye\nTo resume: kiro-cli chat --resume-id 0b1c-22aa\nold --resume-id zz\n",
        )
        .unwrap();
        assert_eq!(printed(&cap, "--resume-id ").as_deref(), Some("zz"));
        std::fs::write(&cap, "nothing\n").unwrap();
        assert_eq!(printed(&cap, "--resume-id "), None);
    }

    fn finished<'a>(agent: &'a Agent, cwd: &'a Path, started: DateTime<Utc>) -> RunFacts<'a> {
        RunFacts {
            agent,
            program: Path::new("/nonexistent"),
            cwd,
            started,
            ended: started + chrono::Duration::seconds(30),
            chosen: None,
            capture_txt: None,
            taken: &[],
            held: &[],
        }
    }

    /// The newest guess, as `choose` takes it when no other run is in the way.
    fn best(run: &RunFacts<'_>, all: Vec<Candidate>) -> Option<String> {
        settle(run, all).guesses.into_iter().next()
    }

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn codex_rollouts_match_on_cwd_and_start_time() {
        let tmp = tempfile::tempdir().unwrap();
        let sessions = tmp.path().join("sessions");
        let cwd = tmp.path().join("proj");
        std::fs::create_dir_all(&cwd).unwrap();
        let start = Utc::now();
        let day = sessions.join(start.format("%Y/%m/%d").to_string());
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
        let agent = crate::agents::by_name("codex").unwrap();
        let run = finished(agent, &cwd, start);
        assert_eq!(
            best(&run, codex(&sessions, &run)).as_deref(),
            Some("newest")
        );
        // A session an earlier run recorded is never this run's, however close in time.
        let taken = ["newest".to_string()];
        let run = RunFacts {
            taken: &taken,
            ..finished(agent, &cwd, start)
        };
        assert_eq!(
            best(&run, codex(&sessions, &run)).as_deref(),
            Some("in-run")
        );
        let run = finished(agent, tmp.path(), start - chrono::Duration::hours(1));
        assert_eq!(
            best(&run, codex(&sessions, &run)),
            None,
            "nothing of that cwd started then"
        );
        // A rollout the agent's processes held open is this run's, newest or not.
        let held = [day.join("rollout-a-1.jsonl").canonicalize().unwrap()];
        let run = RunFacts {
            held: &held,
            ..finished(agent, &cwd, start)
        };
        assert_eq!(
            settle(&run, codex(&sessions, &run)).sure.as_deref(),
            Some("in-run")
        );
    }

    #[test]
    fn guesses_are_settled_against_other_runs() {
        let found = Found {
            sure: None,
            guesses: vec!["b".into(), "a".into()],
        };
        assert_eq!(
            choose(&found, &[], false, "Codex"),
            (Some("b".into()), None)
        );
        assert_eq!(
            choose(&found, &["b".into()], false, "Codex").0.as_deref(),
            Some("a")
        );
        let (id, why) = choose(&found, &[], true, "Codex");
        assert_eq!(id, None);
        assert!(why.unwrap().contains("overlapped"));
        let (id, why) = choose(&found, &["a".into(), "b".into()], false, "Codex");
        assert!(id.is_none() && why.unwrap().contains("another run"));
        assert_eq!(choose(&Found::default(), &[], true, "Codex"), (None, None));
        assert_eq!(
            choose(&Found::sure("s"), &["s".into()], true, "Codex")
                .0
                .as_deref(),
            Some("s")
        );
    }

    #[test]
    fn gemini_chats_are_found_through_the_project_registry_or_project_root() {
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
        let gemini_agent = crate::agents::by_name("gemini").unwrap();
        let run = finished(gemini_agent, &cwd, start);
        assert_eq!(best(&run, gemini(&root, &run)).as_deref(), Some("main-id"));

        // Without the registry, `.project_root` names the directory.
        std::fs::remove_file(root.join("projects.json")).unwrap();
        write(
            &root.join("tmp/work/.project_root"),
            &cwd.display().to_string(),
        );
        assert_eq!(best(&run, gemini(&root, &run)).as_deref(), Some("main-id"));
        std::fs::remove_file(root.join("tmp/work/.project_root")).unwrap();
        assert_eq!(best(&run, gemini(&root, &run)), None);
    }

    #[test]
    fn claude_transcripts_are_matched_by_their_cwd() {
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
        let claude_agent = crate::agents::by_name("claude").unwrap();
        let start = Utc::now() - chrono::Duration::seconds(1);
        let run = finished(claude_agent, &cwd, start);
        assert_eq!(best(&run, claude(&projects, &run)).as_deref(), Some("abc"));
        assert!(claude_has(&projects, "abc") && !claude_has(&projects, "nope"));
    }
}
