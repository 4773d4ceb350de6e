//! Freezing and restoring runs (docs/freeze.md): the steps `pas-agent freeze` and `pas-agent
//! restore` take on the machine-wide registry ([`super::registry`]), each a guarded transition
//! that writes nothing when it does not apply.
//!
//! - **Freeze** (`live → freezing → frozen`): the coordinator leases the entry, ends the agent
//!   with the signals its row names ([`crate::agents::Stop`]) and then SIGTERM and SIGKILL, each
//!   given a grace period, lets the launcher record the run as usual, keeps a copy of the
//!   run's capture, and commits the entry as `frozen` with what a restore needs. A run whose
//!   agent session id is not known is refused before anything is done (it could not be
//!   restored), unless forced.
//! - **Restore** (`frozen → restoring → live`): the coordinator leases the entry and starts
//!   `pas-agent run AGENT --resume <id>` in the run's directory with a token naming the entry
//!   and the lease's nonce ([`Token`]). That launcher takes the entry over
//!   ([`take_over`]): the frozen entry is replaced by its own live one, which says which run it
//!   restores. The coordinator then watches for evidence that the agent is in the conversation
//!   asked for ([`verify`]): the agent's own session-start hook reporting that session id, the
//!   session's file written after the restore began, or the agent's processes holding it
//!   open. Seen: the restore is `verified` and the frozen capture is deleted. Not seen within
//!   the grace period: `unverified`, and the capture is kept.
//! - **Abort** (`restoring → aborting → frozen`): a restore whose launcher did not take over in
//!   time is undone by the attempt that failed; while `aborting`, a late launcher cannot take
//!   the entry over, and no other restore can start.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use chrono::Utc;
use uuid::Uuid;

use super::process::{self, Liveness};
use super::registry::{Entry, Frozen, Lease, Registry, State};
use crate::agents::{Agent, StopSignal};
use crate::error::Result;
use crate::model::Run;
use crate::session::Project;

/// How long a restore waits for its launcher to take the frozen entry over.
pub const TAKEOVER_TIMEOUT: Duration = Duration::from_secs(30);
/// After the agent is gone, how long its launcher may take to record the run before a freeze
/// gives up waiting for it (reading a long transcript can take a while).
pub const RECORD_WAIT: Duration = Duration::from_secs(120);
/// How long a launcher that was sent SIGTERM gets before SIGKILL (it gives its agent 5 s).
const AFTER_TERM: Duration = Duration::from_secs(8);
/// A session file not written for this long is taken as settled before the agent is asked to
/// quit ...
const QUIET: Duration = Duration::from_secs(1);
/// ... which is waited for at most this long.
const SETTLE: Duration = Duration::from_secs(3);
/// Environment variable: how long (milliseconds) a restore watches for evidence that the agent
/// is in its conversation; default [`ACK_GRACE`].
pub const ACK_GRACE_ENV: &str = "PAS_AGENT_RESTORE_ACK_MS";
/// The default of [`ACK_GRACE_ENV`].
pub const ACK_GRACE: Duration = Duration::from_secs(20);
/// How often a coordinator looks again.
const POLL: Duration = Duration::from_millis(200);

/// The grace period for evidence of a restore ([`ACK_GRACE_ENV`]).
pub fn ack_grace() -> Duration {
    std::env::var(ACK_GRACE_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map_or(ACK_GRACE, Duration::from_millis)
}

/// Polls `done` every [`POLL`] until it is true or `limit` has passed; returns its last answer.
fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    loop {
        if done() {
            return true;
        }
        if start.elapsed() >= limit {
            return false;
        }
        std::thread::sleep(POLL);
    }
}

/// The project's record of the entry's run, if it can be read.
pub fn run_record(entry: &Entry) -> Option<(usize, Run)> {
    let project = Project::at(&entry.project);
    let session = project.load().ok()?;
    session
        .runs
        .iter()
        .position(|r| r.id == entry.run_id)
        .map(|i| (i + 1, session.runs[i].clone()))
}

/// The agent whose id the entry records, when it is one `run` launches.
pub fn agent_of(entry: &Entry) -> Option<&'static Agent> {
    crate::agents::by_name(&entry.agent)
}

// ---- Freezing ---------------------------------------------------------------------------------

/// How `freeze` goes about it.
#[derive(Debug, Clone, Copy)]
pub struct FreezeOptions {
    /// How long each signal is given to end the agent.
    pub grace: Duration,
    /// End an agent whose session id is not known (it cannot be restored).
    pub force: bool,
}

/// What a freeze did.
#[derive(Debug, Clone)]
pub enum Froze {
    /// The entry is `frozen`, as committed.
    Frozen(Box<Entry>),
    /// The agent was ended but nothing can restore it (forced with no session id, or the agent
    /// saved nothing of its session): why. Its entry is gone.
    Ended(String),
}

/// The session id of the live run `entry`, as far as it is known now: recorded at its start
/// (chosen or resumed), in the run record, or found in the agent's store — a session file the
/// agent's processes hold open, else the newest session of the run's directory that started
/// during the run and that no other run claims, when no other run of the agent in that
/// directory could be its owner.
pub fn known_session(entries: &[Entry], entry: &Entry, agent: &Agent) -> Option<String> {
    let shaped = |id: &String| agent.id_shape.accepts(id);
    if let Some(id) = entry.agent_session_id.as_ref().filter(|i| shaped(i)) {
        return Some(id.clone());
    }
    let record = run_record(entry);
    if let Some(id) = record
        .as_ref()
        .and_then(|(_, r)| r.agent_session_id.clone())
        .filter(|i| shaped(i))
    {
        return Some(id);
    }
    let cwd = Path::new(&entry.cwd);
    let held: Vec<PathBuf> = match (entry.launcher_pid, super::session_id::store_dir(agent)) {
        (Some(pid), Some(dir)) => {
            let dir = dir.canonicalize().unwrap_or(dir);
            super::witness::open_under(pid, &dir).into_iter().collect()
        }
        _ => Vec::new(),
    };
    let mut claimed: Vec<String> = entries
        .iter()
        .filter(|e| e.run_id != entry.run_id)
        .filter_map(|e| e.agent_session_id.clone())
        .collect();
    if let Ok(session) = Project::at(&entry.project).load() {
        claimed.extend(
            session
                .runs
                .iter()
                .filter(|r| r.id != entry.run_id)
                .filter_map(|r| r.agent_session_id.clone()),
        );
    }
    let unresolved = entries.iter().any(|e| {
        e.run_id != entry.run_id
            && e.agent == entry.agent
            && e.cwd == entry.cwd
            && e.agent_session_id.is_none()
            && e.state == State::Live
    });
    let program = super::resolve(agent.short_name(), cwd)
        .ok()
        .map(|p| p.path)
        .unwrap_or_else(|| PathBuf::from(agent.short_name()));
    let facts = super::session_id::RunFacts {
        agent,
        program: &program,
        cwd,
        started: entry.started_at,
        ended: Utc::now(),
        chosen: None,
        capture_txt: None,
        taken: &claimed,
        held: &held,
    };
    let found = super::session_id::from_store(&facts);
    super::session_id::choose(&found, &claimed, unresolved, agent.name).0
}

/// Freezes the live run `entry`: see the module docs. `Ok(Err(why))` when it was refused (then
/// nothing was written, and the agent was not touched) or could not be completed (the entry
/// is back to `live`).
///
/// Errors: the registry cannot be read or written.
pub fn freeze(
    reg: &Registry,
    entries: &[Entry],
    entry: &Entry,
    opts: FreezeOptions,
) -> Result<std::result::Result<Froze, String>> {
    let agent = agent_of(entry);
    match &entry.state {
        State::Live => {}
        State::Frozen => return Ok(Err("it is already frozen".into())),
        other => {
            return Ok(Err(format!(
                "it is {}{}",
                other.as_str(),
                holder(entry.lease.as_ref())
            )));
        }
    }
    match entry.liveness() {
        Liveness::Alive => {}
        Liveness::Dead => {
            return Ok(Err(
                "its launcher is gone (`pas-agent restore` offers it if its session is known)"
                    .into(),
            ));
        }
        Liveness::Unknown => {
            return Ok(Err(
                "whether its launcher still runs cannot be told (another host, or no permission to see it)".into(),
            ));
        }
    }
    let known = agent.and_then(|a| known_session(entries, entry, a));
    if known.is_none() && !opts.force {
        let why = match agent {
            None => format!(
                "{} is not an agent pas-agent can resume",
                crate::term::clean_line(&entry.agent)
            ),
            Some(a) if a.resume.is_none() => {
                format!("{} has no known way to resume a session", a.name)
            }
            Some(a) => format!(
                "its {} session id is not known (none of the sessions of its directory is surely this run's)",
                a.name
            ),
        };
        return Ok(Err(format!(
            "{why}, so it could not be restored; `--force` ends it anyway"
        )));
    }
    // A session the agent's store surely does not hold (nothing of it saved yet) could not be
    // resumed either.
    let saved = |id: &str| {
        agent
            .and_then(|a| a.store)
            .and_then(|s| s.has(id, Path::new(&entry.cwd)))
            != Some(false)
    };
    if let Some(id) = known.as_deref()
        && !saved(id)
        && !opts.force
    {
        return Ok(Err(format!(
            "nothing of its session {id} is saved yet (no conversation to resume), so it could not be restored; `--force` ends it anyway"
        )));
    }
    // Where it is in tmux now: windows are renamed while agents run.
    #[cfg(unix)]
    let place = entry.tmux.as_ref().and_then(|t| {
        super::tmux::Server {
            socket: PathBuf::from(&t.socket),
        }
        .place(&t.pane)
    });
    #[cfg(not(unix))]
    let place: Option<(super::registry::TmuxPlace, super::registry::Size)> = None;
    let lease = Lease::mine();
    let nonce = lease.nonce.clone();
    let begun = reg.transition(entry.run_id, |e| {
        if e.state != State::Live {
            return Err(format!(
                "it is {}{}",
                e.state.as_str(),
                holder(e.lease.as_ref())
            ));
        }
        if e.nonce != entry.nonce || e.liveness() != Liveness::Alive {
            return Err("its launcher ended meanwhile".into());
        }
        e.state = State::Freezing;
        e.lease = Some(lease);
        if let Some((p, size)) = &place {
            e.tmux = Some(p.clone());
            e.terminal = Some(*size);
        }
        if e.agent_session_id.is_none() {
            e.agent_session_id = known.clone();
        }
        Ok(e.clone())
    })?;
    let entry = match begun {
        Ok(e) => e,
        Err(why) => return Ok(Err(why)),
    };
    // Let a write the agent is making to its session settle before it is asked to quit.
    if let (Some(id), Some(store)) = (known.as_deref(), agent.and_then(|a| a.store))
        && let Some(file) = store.session_file(id, Path::new(&entry.cwd))
    {
        wait_until(opts.grace.min(SETTLE), || {
            crate::agents::store::modified(&file).is_none_or(|m| {
                Utc::now()
                    .signed_duration_since(m)
                    .to_std()
                    .is_ok_and(|age| age >= QUIET)
            })
        });
    }
    let stop = agent.map_or(crate::agents::Stop::INTERRUPT, |a| a.stop);
    let exited = entry
        .launcher_pid
        .is_some_and(|pid| end_launcher(pid, stop.signals, opts.grace));
    if !exited {
        let back = reg.transition(entry.run_id, |e| {
            if e.state == State::Freezing && e.leased_by(&nonce) {
                e.state = State::Live;
                e.lease = None;
                Ok(())
            } else {
                Err(String::new())
            }
        })?;
        let _ = back;
        return Ok(Err(format!(
            "its launcher (pid {}) did not exit within {} s after SIGKILL; it is left live",
            entry.launcher_pid.unwrap_or(0),
            RECORD_WAIT.as_secs()
        )));
    }
    // The launcher recorded the run; its record holds the session id it learned (and, for an
    // id chosen at the start, only if the agent's store holds it).
    let record = run_record(&entry);
    let session_id = match &record {
        Some((_, r)) => r
            .agent_session_id
            .clone()
            .filter(|id| agent.is_some_and(|a| a.id_shape.accepts(id)))
            .or_else(|| {
                known.clone().filter(|_| {
                    agent.is_some_and(|a| a.session_id == crate::agents::SessionId::Discover)
                })
            }),
        None => known.clone(),
    }
    .filter(|id| saved(id));
    let Some(session_id) = session_id else {
        let why = match known.as_deref().or(record
            .as_ref()
            .and_then(|(_, r)| r.agent_session_id.as_deref()))
        {
            Some(id) if !saved(id) => format!(
                "{} saved nothing of its session {id}, so there is nothing to resume",
                agent.map_or("the agent", |a| a.name)
            ),
            _ => "its session id is not known, so it cannot be restored".to_string(),
        };
        reg.apply(true, |runs| {
            let at = runs
                .iter()
                .position(|e| e.run_id == entry.run_id && e.leased_by(&nonce))
                .ok_or(())?;
            runs.remove(at);
            Ok::<(), ()>(())
        })?
        .ok();
        return Ok(Ok(Froze::Ended(why)));
    };
    let capture = record
        .as_ref()
        .and_then(|(_, r)| keep_capture(reg, &entry, r));
    let args = entry
        .args
        .clone()
        .unwrap_or_else(|| entry.argv.iter().skip(1).cloned().collect());
    let args = agent.map_or(args.clone(), |a| a.arg_shape.for_restore(&args));
    let committed = reg.transition(entry.run_id, |e| {
        if e.state != State::Freezing || !e.leased_by(&nonce) {
            return Err(format!(
                "another pas-agent took it over meanwhile ({}{})",
                e.state.as_str(),
                holder(e.lease.as_ref())
            ));
        }
        e.state = State::Frozen;
        e.lease = None;
        e.agent_session_id = Some(session_id.clone());
        e.frozen = Some(Frozen {
            at: Utc::now(),
            cause: "freeze".into(),
            args: args.clone(),
            capture: capture.clone(),
        });
        Ok(e.clone())
    })?;
    Ok(committed.map(|e| Froze::Frozen(Box::new(e))))
}

/// ` (pid N)`: who holds a lease, for messages.
pub fn holder(lease: Option<&Lease>) -> String {
    lease.map_or_else(String::new, |l| format!(" by pas-agent pid {}", l.pid))
}

/// Whether the launcher `pid` still has its agent (a child process). Where children cannot be
/// seen, while the launcher runs.
fn agent_running(pid: u32) -> bool {
    if cfg!(target_os = "linux") {
        process::children(pid).into_iter().any(process::running)
    } else {
        process::running(pid)
    }
}

/// Ends the agent of launcher `pid`: each of `signals`, then SIGTERM, sent to the launcher
/// (which sends them on to its agent's process group, docs/launcher.md), each given `grace` to
/// end the agent; then, if the agent still runs, SIGKILL to the launcher (its agent's terminal
/// then hangs up). Once the agent is gone the launcher records the run; that is waited for,
/// up to [`RECORD_WAIT`]. Returns whether the launcher exited.
#[cfg(unix)]
fn end_launcher(pid: u32, signals: &[StopSignal], grace: Duration) -> bool {
    let Ok(target) = i32::try_from(pid) else {
        return false;
    };
    let number = |s: &StopSignal| match s {
        StopSignal::Interrupt => libc::SIGINT,
        StopSignal::Terminate => libc::SIGTERM,
        StopSignal::HangUp => libc::SIGHUP,
    };
    let sequence: Vec<i32> = signals
        .iter()
        .map(number)
        .chain(std::iter::once(libc::SIGTERM))
        .collect();
    let gone = || !process::running(pid) || !agent_running(pid);
    for (i, signal) in sequence.iter().enumerate() {
        if gone() {
            break;
        }
        super::signals::send(target, *signal);
        let limit = if i + 1 == sequence.len() {
            grace.max(AFTER_TERM)
        } else {
            grace
        };
        wait_until(limit, gone);
    }
    if !gone() {
        super::signals::send(target, libc::SIGKILL);
    }
    wait_until(RECORD_WAIT, || !process::running(pid))
}

#[cfg(not(unix))]
fn end_launcher(_pid: u32, _signals: &[StopSignal], _grace: Duration) -> bool {
    false
}

/// Copies the run's capture (`capture.txt`, `capture.ansi`) into the registry's
/// `frozen/<run id>/` (linked when it is on the same file system), and returns that directory;
/// `None` when the run has no capture or it cannot be kept (a warning says why).
fn keep_capture(reg: &Registry, entry: &Entry, run: &Run) -> Option<String> {
    run.capture.as_ref()?;
    let (ansi, txt) = super::capture::paths(&entry.run_id);
    let root = Path::new(&entry.project);
    let dir = match super::registry::create_frozen_dir(reg, entry.run_id) {
        Ok(d) => d,
        Err(e) => {
            crate::term::warn(&format!("the capture of the frozen run is not kept: {e}"));
            return None;
        }
    };
    let mut kept = false;
    for rel in [txt, ansi] {
        let from = root.join(&rel);
        let Some(name) = from.file_name() else {
            continue;
        };
        let to = dir.join(name);
        let _ = std::fs::remove_file(&to);
        if std::fs::hard_link(&from, &to).is_ok() || std::fs::copy(&from, &to).is_ok() {
            kept = true;
        }
    }
    kept.then(|| dir.to_string_lossy().into_owned())
}

// ---- Restoring --------------------------------------------------------------------------------

/// A restore's token: the frozen entry and the lease's nonce, handed to the launcher that
/// restores it (`run --restoring <run id>:<nonce>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// The frozen run's id.
    pub run_id: Uuid,
    /// The restore lease's nonce.
    pub nonce: String,
}

impl Token {
    /// `<run id>:<nonce>`.
    pub fn encode(&self) -> String {
        format!("{}:{}", self.run_id, self.nonce)
    }

    /// Reads `<run id>:<nonce>`.
    pub fn decode(s: &str) -> Option<Token> {
        let (id, nonce) = s.split_once(':')?;
        Some(Token {
            run_id: Uuid::parse_str(id).ok()?,
            nonce: nonce.to_string(),
        })
    }
}

/// What restoring a frozen entry runs: `pas-agent run <agent> --resume <id> [options] --
/// <args>` in `cwd`.
#[derive(Debug, Clone)]
pub struct Restore {
    /// The frozen entry.
    pub entry: Entry,
    /// Its agent.
    pub agent: &'static Agent,
    /// The agent session id to resume.
    pub session_id: String,
    /// The directory to run it in.
    pub cwd: PathBuf,
    /// The agent's arguments.
    pub args: Vec<String>,
}

impl Restore {
    /// The restore of the frozen entry `entry`, or why it cannot be restored (nothing written).
    pub fn of(entry: &Entry) -> std::result::Result<Restore, String> {
        match &entry.state {
            State::Frozen => {}
            State::Live => return Err("it is live, not frozen".into()),
            other => {
                return Err(format!(
                    "it is {}{}",
                    other.as_str(),
                    holder(entry.lease.as_ref())
                ));
            }
        }
        let agent = agent_of(entry).ok_or_else(|| {
            format!(
                "{} is not an agent pas-agent can resume",
                crate::term::clean_line(&entry.agent)
            )
        })?;
        let session_id = entry
            .agent_session_id
            .clone()
            .filter(|id| agent.id_shape.accepts(id))
            .ok_or_else(|| format!("no {} session id is recorded for it", agent.name))?;
        let cwd = PathBuf::from(&entry.cwd);
        if !cwd.is_dir() {
            return Err(format!(
                "its directory {} no longer exists; recreate it (`mkdir -p {}`) and restore again, or drop it (`pas-agent restore --drop {}`)",
                crate::term::clean_line(&entry.cwd),
                super::tmux::sh_word(&entry.cwd),
                entry.short_id()
            ));
        }
        let args = entry
            .frozen
            .as_ref()
            .map(|f| f.args.clone())
            .unwrap_or_default();
        Ok(Restore {
            entry: entry.clone(),
            agent,
            session_id,
            cwd,
            args,
        })
    }

    /// The arguments of `pas-agent` that restore it (after `-C <cwd>`): `run <agent> [--restoring
    /// <token>] --resume <id> [options] -- <args>`.
    pub fn run_args(&self, token: Option<&Token>) -> Vec<String> {
        let mut out = vec!["run".to_string(), self.agent.short_name().to_string()];
        if let Some(t) = token {
            out.push("--restoring".into());
            out.push(t.encode());
        }
        out.push("--resume".into());
        out.push(self.session_id.clone());
        out.extend(self.entry.options.iter().cloned());
        out.push("--".into());
        out.extend(self.args.iter().cloned());
        out
    }

    /// The tmux session and window to restore it in: as before, else the current session and
    /// the agent's short name.
    pub fn window(&self, current_session: Option<&str>) -> (String, String) {
        let place = self.entry.tmux.as_ref();
        let session = place
            .and_then(|p| p.session.clone())
            .or_else(|| current_session.map(str::to_string))
            .unwrap_or_else(|| "pas-agent".into());
        let window = place
            .and_then(|p| p.window.clone())
            .unwrap_or_else(|| self.agent.short_name().to_string());
        (session, window)
    }
}

/// `restore-begin`: leases the frozen entry `run_id` for a restore (`frozen → restoring`).
/// `Ok(Err(why))` when it is not frozen any more (another coordinator got there first):
/// nothing is written.
///
/// Errors: the registry cannot be read or written.
pub fn begin_restore(
    reg: &Registry,
    run_id: Uuid,
) -> Result<std::result::Result<(Entry, Token), String>> {
    let lease = Lease::mine();
    let token = Token {
        run_id,
        nonce: lease.nonce.clone(),
    };
    let begun = reg.transition(run_id, |e| {
        if e.state != State::Frozen {
            return Err(format!(
                "it is {}{}",
                e.state.as_str(),
                holder(e.lease.as_ref())
            ));
        }
        e.state = State::Restoring;
        e.lease = Some(lease);
        e.last_error = None;
        Ok(e.clone())
    })?;
    Ok(begun.map(|e| (e, token)))
}

/// `restore-abort`: the restore of `token` failed (`why`); the entry goes `restoring →
/// aborting` (no late launcher can take it over now), `undo` runs (closing the window it was
/// started in), and it goes back to `frozen`. Nothing is written when the entry is not this
/// restore's.
///
/// Errors: the registry cannot be read or written.
pub fn abort_restore(reg: &Registry, token: &Token, why: &str, undo: impl FnOnce()) -> Result<()> {
    let aborting = reg.transition(token.run_id, |e| {
        if e.state != State::Restoring || !e.leased_by(&token.nonce) {
            return Err(String::new());
        }
        e.state = State::Aborting;
        e.last_error = Some(why.to_string());
        Ok(())
    })?;
    if aborting.is_err() {
        return Ok(());
    }
    undo();
    reg.transition(token.run_id, |e| {
        if e.state != State::Aborting || !e.leased_by(&token.nonce) {
            return Err(String::new());
        }
        e.state = State::Frozen;
        e.lease = None;
        Ok(())
    })?
    .ok();
    Ok(())
}

/// `restore` taking effect, in the launcher that restores: the frozen entry of `token` (still
/// `restoring` under its nonce) is replaced by `new`, the launcher's own live entry, which
/// then says which run it restores (`restored_from`, `restore: pending`). `Ok(Err(why))` when
/// the entry is not waiting for this restore: `new` is added as a plain run.
///
/// Errors: the registry cannot be read or written.
pub fn take_over(
    reg: &Registry,
    token: &Token,
    new: Entry,
) -> Result<std::result::Result<(), String>> {
    let plain = new.clone();
    let mut new = new;
    let taken = reg.apply(true, |runs| {
        let at = runs
            .iter()
            .position(|e| e.run_id == token.run_id)
            .ok_or_else(|| "it is no longer in the run registry".to_string())?;
        let old = &runs[at];
        if old.state != State::Restoring || !old.leased_by(&token.nonce) {
            return Err(format!(
                "it is {}{}",
                old.state.as_str(),
                holder(old.lease.as_ref())
            ));
        }
        let old = runs.remove(at);
        new.restored_from = Some(old.run_id);
        new.restore = Some("pending".into());
        new.tmux = new.tmux.or(old.tmux);
        runs.retain(|e| e.run_id != new.run_id);
        runs.push(new.clone());
        Ok(())
    })?;
    if taken.is_err() {
        reg.add(plain)?;
    }
    Ok(taken)
}

/// What became of a restore started with `token`.
#[derive(Debug, Clone)]
pub enum Takeover {
    /// A launcher took the entry over: its live entry.
    Taken(Box<Entry>),
    /// The entry went back to `frozen` or away: why, when known.
    Failed(String),
}

/// Waits up to `limit` for a launcher to take over the entry of `token`, or for the attempt
/// to fail (`alive` says `false` once the window or process it was started in is gone).
///
/// Errors: the registry cannot be read.
pub fn wait_takeover(
    reg: &Registry,
    token: &Token,
    limit: Duration,
    mut alive: impl FnMut() -> bool,
) -> Result<Option<Takeover>> {
    let start = Instant::now();
    loop {
        let entries = reg.entries()?;
        if let Some(new) = entries
            .iter()
            .find(|e| e.restored_from == Some(token.run_id))
        {
            return Ok(Some(Takeover::Taken(Box::new(new.clone()))));
        }
        match entries.iter().find(|e| e.run_id == token.run_id) {
            None => {
                return Ok(Some(Takeover::Failed(
                    "its entry left the run registry".into(),
                )));
            }
            Some(e) if !(e.state == State::Restoring && e.leased_by(&token.nonce)) => {
                return Ok(Some(Takeover::Failed(
                    e.last_error
                        .clone()
                        .unwrap_or_else(|| format!("it is {} now", e.state.as_str())),
                )));
            }
            Some(_) => {}
        }
        if start.elapsed() >= limit || !alive() {
            return Ok(None);
        }
        std::thread::sleep(POLL);
    }
}

/// Watches the run `new_run` (a launcher that took over a frozen entry) for up to `grace` for
/// evidence that its agent is in session `session_id`: the agent's session-start hook
/// reported it (`restore_ack`), the session's file was written after `since`, or the agent's
/// processes hold it open. Then settles the restore in the entry (`verified` or `unverified`)
/// and, when verified, deletes the frozen run's capture copy. Returns whether it was verified.
///
/// Errors: the registry cannot be read or written.
pub fn verify(
    reg: &Registry,
    new_run: Uuid,
    restore: &Restore,
    since: chrono::DateTime<Utc>,
    grace: Duration,
) -> Result<bool> {
    let store = restore.agent.store;
    let id = restore.session_id.as_str();
    let written_since =
        |file: &Path| crate::agents::store::modified(file).is_some_and(|m| m > since);
    let mut seen = false;
    wait_until(grace, || {
        let entry = match reg.get(new_run) {
            Ok(Some(entry)) => entry,
            Ok(None) => {
                // The run ended: its record says which session it ended in.
                seen = store
                    .and_then(|s| s.session_file(id, &restore.cwd))
                    .is_some_and(|f| written_since(&f))
                    && read_session_of(restore, new_run).as_deref() == Some(id);
                return true;
            }
            Err(_) => return false,
        };
        if entry.restore_ack.as_deref() == Some(id) {
            seen = true;
            return true;
        }
        let Some(file) = store.and_then(|s| s.session_file(id, &restore.cwd)) else {
            return false;
        };
        if written_since(&file) {
            seen = true;
            return true;
        }
        // Held open by the agent's processes (Codex keeps its rollout open).
        if let Some(pid) = entry.launcher_pid {
            let real = file.canonicalize().unwrap_or(file);
            let dir = real.parent().map(Path::to_path_buf).unwrap_or_default();
            if super::witness::open_under(pid, &dir).contains(&real) {
                seen = true;
                return true;
            }
        }
        false
    });
    let verdict = if seen { "verified" } else { "unverified" };
    reg.apply(false, |runs| {
        let e = runs.iter_mut().find(|e| e.run_id == new_run).ok_or(())?;
        e.restore = Some(verdict.into());
        Ok::<(), ()>(())
    })?
    .ok();
    if seen {
        reg.remove_capture(restore.entry.run_id);
    }
    Ok(seen)
}

/// The session id the project's record of run `run_id` ended with.
fn read_session_of(restore: &Restore, run_id: Uuid) -> Option<String> {
    let session = Project::at(&restore.entry.project).load().ok()?;
    session
        .runs
        .iter()
        .find(|r| r.id == run_id)
        .and_then(|r| r.agent_session_id.clone())
}

/// Records the session id an agent's session-start hook reported for run `run_id`
/// (`restore_ack`), when that run restores a frozen one and has not been settled yet. Failures
/// are ignored: a hook never fails the agent.
pub fn acknowledge(run_id: &str, session_id: &str) {
    if let (Ok(run_id), Ok(reg)) = (Uuid::parse_str(run_id), Registry::open()) {
        acknowledge_in(&reg, run_id, session_id);
    }
}

/// [`acknowledge`] in `reg`; writes only when the run is a pending restore.
fn acknowledge_in(reg: &Registry, run_id: Uuid, session_id: &str) {
    let _ = reg.apply(false, |runs| {
        let e = runs
            .iter_mut()
            .find(|e| e.run_id == run_id)
            .filter(|e| e.restored_from.is_some() && e.restore.as_deref() == Some("pending"))
            .ok_or(())?;
        e.restore_ack = Some(session_id.to_string());
        Ok::<(), ()>(())
    });
}

// ---- Handing a restore's environment to its tmux window ---------------------------------------

/// What a restored tmux window is told to run: `pas-agent -C <cwd> <args>` with `env`, the
/// environment of the command that restores (a run's environment is never stored: it may
/// hold secrets; it goes from process to process through a private socket, never through a
/// command line, which other users can read).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Handed {
    /// The directory to run in.
    pub cwd: String,
    /// The arguments of `pas-agent` after `-C <cwd>`.
    pub args: Vec<String>,
    /// The environment, as `[name, value]` pairs (variables that are not UTF-8 are left out).
    pub env: Vec<(String, String)>,
}

/// Variables a restored window keeps its own of (or goes without): they name its own terminal
/// and tmux pane, and the run the restoring command may itself run inside.
pub const WINDOW_OWN: &[&str] = &[
    "TMUX",
    "TMUX_PANE",
    "TERM",
    "COLUMNS",
    "LINES",
    super::RUN_ID_ENV,
];

/// A private socket that one restored window connects to for its [`Handed`].
#[cfg(unix)]
#[derive(Debug)]
pub struct Handoff {
    dir: tempfile::TempDir,
    listener: std::os::unix::net::UnixListener,
}

#[cfg(unix)]
impl Handoff {
    /// A socket in a new private (0700) directory of the system's temporary directory (a
    /// socket's path is limited to about 100 bytes, which a state directory may exceed).
    ///
    /// Errors: it cannot be created.
    pub fn new() -> std::io::Result<Handoff> {
        let dir = tempfile::Builder::new()
            .prefix("pas-agent-restore-")
            .tempdir()?;
        let listener = std::os::unix::net::UnixListener::bind(dir.path().join("s"))?;
        listener.set_nonblocking(true)?;
        Ok(Handoff { dir, listener })
    }

    /// The socket's path, for the window's command.
    pub fn path(&self) -> PathBuf {
        self.dir.path().join("s")
    }

    /// Waits up to `limit` for the window to connect and sends it `handed`.
    ///
    /// Errors: nobody connected in time, or the write failed.
    pub fn send(&self, handed: &Handed, limit: Duration) -> std::result::Result<(), String> {
        use std::io::Write;
        let bytes = serde_json::to_vec(handed).map_err(|e| e.to_string())?;
        let start = Instant::now();
        loop {
            match self.listener.accept() {
                Ok((mut stream, _)) => {
                    stream.set_nonblocking(false).map_err(|e| e.to_string())?;
                    stream
                        .set_write_timeout(Some(Duration::from_secs(10)))
                        .map_err(|e| e.to_string())?;
                    return stream.write_all(&bytes).map_err(|e| {
                        format!("the restored window did not take its environment: {e}")
                    });
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if start.elapsed() >= limit {
                        return Err(format!(
                            "the restored window did not ask for its environment within {} s",
                            limit.as_secs()
                        ));
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(e) => return Err(format!("the restore's socket failed: {e}")),
            }
        }
    }
}

/// In the restored window: connects to the socket at `path` and reads its [`Handed`].
///
/// Errors: the socket cannot be reached or read within `limit`, or what it sent is not one.
#[cfg(unix)]
pub fn receive(path: &Path, limit: Duration) -> std::result::Result<Handed, String> {
    use std::io::Read;
    let start = Instant::now();
    let stream = loop {
        match std::os::unix::net::UnixStream::connect(path) {
            Ok(s) => break s,
            Err(e) if start.elapsed() >= limit => {
                return Err(format!("{} could not be reached: {e}", path.display()));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    };
    stream
        .set_read_timeout(Some(limit))
        .map_err(|e| e.to_string())?;
    let mut bytes = Vec::new();
    stream
        .take(crate::limits::REGISTRY.bytes)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{} could not be read: {e}", path.display()))?;
    serde_json::from_slice(&bytes).map_err(|e| format!("the restore sent something else ({e})"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Extra;

    fn entry(pid: u32) -> Entry {
        Entry {
            run_id: Uuid::new_v4(),
            project: "/nowhere".into(),
            session_id: Uuid::new_v4(),
            agent: "claude-code".into(),
            argv: vec!["claude".into()],
            cwd: "/".into(),
            started_at: Utc::now(),
            launcher_pid: Some(pid),
            launcher_started: process::start_token(pid),
            nonce: Some("n".into()),
            state: State::Live,
            lease: None,
            agent_session_id: Some("3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b".into()),
            args: Some(vec![
                "-p".into(),
                "hi".into(),
                "--model".into(),
                "opus".into(),
            ]),
            options: Vec::new(),
            terminal: None,
            tmux: None,
            frozen: None,
            restored_from: None,
            restore: None,
            restore_ack: None,
            last_error: None,
            extra: Extra::new(),
        }
    }

    /// The registry file's bytes, inode and modification time: what any write would change.
    fn fingerprint(reg: &Registry) -> (Vec<u8>, u64, std::time::SystemTime) {
        use std::os::unix::fs::MetadataExt;
        let path = reg.dir.join(super::super::registry::FILE);
        let meta = std::fs::metadata(&path).unwrap();
        (
            std::fs::read(&path).unwrap(),
            meta.ino(),
            meta.modified().unwrap(),
        )
    }

    #[cfg(unix)]
    #[test]
    fn a_refused_transition_writes_nothing_and_only_the_lease_holder_moves_on() {
        let tmp = tempfile::tempdir().unwrap();
        let reg = Registry {
            dir: tmp.path().join("state"),
        };
        let live = entry(std::process::id());
        reg.add(live.clone()).unwrap();
        let before = fingerprint(&reg);
        // Not frozen: no restore begins, and nothing is written.
        let refused = begin_restore(&reg, live.run_id).unwrap();
        assert!(refused.unwrap_err().contains("live"));
        assert_eq!(fingerprint(&reg), before);
        assert!(Restore::of(&live).unwrap_err().contains("live"));

        reg.transition(live.run_id, |e| {
            e.state = State::Frozen;
            Ok(())
        })
        .unwrap()
        .unwrap();
        let frozen = reg.get(live.run_id).unwrap().unwrap();
        let restore = Restore::of(&frozen).unwrap();
        assert_eq!(
            restore.run_args(None),
            [
                "run",
                "claude",
                "--resume",
                "3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b",
                "--"
            ]
        );
        let (_, token) = begin_restore(&reg, live.run_id).unwrap().unwrap();
        let held = reg.get(live.run_id).unwrap().unwrap();
        assert_eq!(held.state, State::Restoring);
        assert_eq!(held.lease.as_ref().unwrap().pid, std::process::id());
        // A second coordinator is refused and writes nothing.
        let before = fingerprint(&reg);
        let second = begin_restore(&reg, live.run_id).unwrap().unwrap_err();
        assert!(second.contains("restoring by pas-agent pid"), "{second}");
        let stranger = Token {
            run_id: live.run_id,
            nonce: "not-the-nonce".into(),
        };
        abort_restore(&reg, &stranger, "no", || {
            panic!("not this restore's to undo")
        })
        .unwrap();
        assert_eq!(fingerprint(&reg), before);
        // A launcher with the wrong nonce does not take it over (it runs as a plain run).
        let mut plain = entry(std::process::id());
        plain.agent_session_id = None;
        let refused = take_over(&reg, &stranger, plain.clone())
            .unwrap()
            .unwrap_err();
        assert!(refused.contains("restoring"), "{refused}");
        assert_eq!(
            reg.get(live.run_id).unwrap().unwrap().state,
            State::Restoring
        );
        // The right one does: the frozen entry is replaced by the new run's.
        let new = entry(std::process::id());
        take_over(&reg, &token, new.clone()).unwrap().unwrap();
        assert!(reg.get(live.run_id).unwrap().is_none());
        let taken = reg.get(new.run_id).unwrap().unwrap();
        assert_eq!(taken.restored_from, Some(live.run_id));
        assert_eq!(taken.restore.as_deref(), Some("pending"));
        // And now the restore's token names nothing any more: aborting it changes nothing.
        let before = fingerprint(&reg);
        abort_restore(&reg, &token, "late", || panic!("nothing to undo")).unwrap();
        assert_eq!(fingerprint(&reg), before);
    }

    #[cfg(unix)]
    #[test]
    fn an_aborted_restore_goes_back_to_frozen_through_aborting() {
        let tmp = tempfile::tempdir().unwrap();
        let reg = Registry {
            dir: tmp.path().join("state"),
        };
        let mut e = entry(std::process::id());
        e.state = State::Frozen;
        reg.add(e.clone()).unwrap();
        let (_, token) = begin_restore(&reg, e.run_id).unwrap().unwrap();
        let mut seen = None;
        abort_restore(&reg, &token, "the window closed", || {
            seen = Some(reg.get(e.run_id).unwrap().unwrap());
        })
        .unwrap();
        let during = seen.unwrap();
        assert_eq!(during.state, State::Aborting);
        // While aborting, a late launcher cannot take it over.
        let late = take_over(&reg, &token, entry(std::process::id()))
            .map(|r| r.is_err())
            .unwrap();
        assert!(late);
        let after = reg.get(e.run_id).unwrap().unwrap();
        assert_eq!(after.state, State::Frozen);
        assert!(after.lease.is_none());
        assert_eq!(after.last_error.as_deref(), Some("the window closed"));
    }

    #[cfg(unix)]
    #[test]
    fn the_agents_session_start_hook_verifies_a_restore() {
        let tmp = tempfile::tempdir().unwrap();
        let reg = Registry {
            dir: tmp.path().join("state"),
        };
        let mut old = entry(std::process::id());
        old.state = State::Frozen;
        old.cwd = tmp.path().to_string_lossy().into_owned();
        reg.add(old.clone()).unwrap();
        let restore = Restore::of(&old).unwrap();
        let (_, token) = begin_restore(&reg, old.run_id).unwrap().unwrap();
        let new = entry(std::process::id());
        take_over(&reg, &token, new.clone()).unwrap().unwrap();
        // A run that restores nothing is not acknowledged.
        let plain = entry(std::process::id());
        reg.add(plain.clone()).unwrap();
        acknowledge_in(&reg, plain.run_id, &restore.session_id);
        assert!(
            reg.get(plain.run_id)
                .unwrap()
                .unwrap()
                .restore_ack
                .is_none()
        );
        acknowledge_in(&reg, new.run_id, &restore.session_id);
        let since = Utc::now();
        let verified = verify(&reg, new.run_id, &restore, since, Duration::from_secs(5)).unwrap();
        assert!(verified);
        assert_eq!(
            reg.get(new.run_id).unwrap().unwrap().restore.as_deref(),
            Some("verified")
        );
        // Settled: a later report changes nothing.
        let before = fingerprint(&reg);
        acknowledge_in(&reg, new.run_id, "another");
        assert_eq!(fingerprint(&reg), before);
    }

    #[test]
    fn tokens_round_trip() {
        let t = Token {
            run_id: Uuid::new_v4(),
            nonce: "abc".into(),
        };
        assert_eq!(Token::decode(&t.encode()), Some(t));
        assert_eq!(Token::decode("nope"), None);
    }
}
