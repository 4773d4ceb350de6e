//! Learning the agent's own session id for a run (the run record's `agent_session_id`), by
//! the way its row in [`crate::agents`] names: chosen before launch, read from its session
//! store ([`crate::agents::Store`]), or printed at exit.
//!
//! A store is asked only for sessions that may belong to this run: the agent's recorded
//! working directory equals the run's, and the session started inside the run (with a small
//! slack for clocks that tick in whole seconds). A session file the agent's own processes held
//! open during the run ([`super::witness`]) is this run's for sure. Otherwise the candidates
//! are guesses, and [`choose`] settles them under the session lock against what other runs
//! claimed: a session another run recorded is never this one's, and when runs of the agent
//! overlapped in this directory and the guesses cannot be told apart, no id is recorded and
//! the run says why. Nothing found is never an error: the run is recorded either way.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::agents::store::{Candidate, Query};
use crate::agents::{Agent, SessionId};

/// Slack allowed around the run's start and end when matching a session's start time.
const SLACK: Duration = Duration::from_secs(2);

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
        SessionId::Choose { flag, unless } if !mentions(args, unless) => {
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
    /// The resolved executable (for a store read through the agent itself).
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
    /// The id the launcher chose and passed on the agent's command line, when the agent's
    /// store holds no session under it and no other session of the run was found (the agent
    /// did not start one: it failed before, or ignored the flag).
    pub unconfirmed: Option<String>,
}

impl Found {
    fn sure(id: impl Into<String>) -> Found {
        Found {
            sure: Some(id.into()),
            ..Found::default()
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
            unconfirmed: self.unconfirmed.filter(|id| shape.accepts(id)),
        }
    }
}

/// Turns a store's candidates into [`Found`]: one held open by the agent is sure; the rest are
/// guesses, newest first.
fn settle(run: &RunFacts<'_>, mut all: Vec<Candidate>) -> Found {
    all.retain(|c| run.fresh(&c.id));
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
    Candidate::newest_first(&mut all);
    let mut guesses: Vec<String> = Vec::new();
    for c in all {
        if !guesses.contains(&c.id) {
            guesses.push(c.id);
        }
    }
    Found {
        sure: None,
        guesses,
        unconfirmed: None,
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
        SessionId::Choose { .. } => {
            let Some(chosen) = run.chosen else {
                return Found::default();
            };
            // The agent may have ignored the flag (claude-code#44607): believe the store.
            match run.agent.store.and_then(|s| s.has(chosen, run.cwd)) {
                Some(false) => {
                    let found = read_store(run);
                    if found.sure.is_none() && found.guesses.is_empty() {
                        return Found {
                            unconfirmed: Some(chosen.to_string()),
                            ..found
                        };
                    }
                    found
                }
                _ => Found::sure(chosen),
            }
        }
        SessionId::Discover => read_store(run),
        SessionId::Printed { marker } => run
            .capture_txt
            .and_then(|c| printed(c, marker))
            .map(Found::sure)
            .unwrap_or_default(),
    }
}

/// The session a resumed run ended in: the agent's store says which session was written during
/// the run (a resume that forks, or an agent that starts a new id on resume, shows up there);
/// otherwise the id that was resumed.
pub fn after_resume(run: &RunFacts<'_>, resumed: &str) -> Found {
    let found = run
        .agent
        .store
        .is_some_and(|s| s.checked_after_resume())
        .then(|| read_store(run).of_shape(run.agent.id_shape));
    match found {
        Some(found) if found.sure.is_some() => found,
        Some(Found { guesses, .. }) if !guesses.is_empty() => Found {
            sure: None,
            guesses,
            unconfirmed: None,
        },
        _ => Found::sure(resumed),
    }
}

fn slack() -> chrono::Duration {
    chrono::Duration::from_std(SLACK).unwrap_or_default()
}

/// What the agent's store says of a run still going (a freeze) or cut short (a crash): the
/// sessions of its directory that started between its start and `run.ended` (now), one held
/// open by its processes being sure; only ids of the agent's shape. Settle with [`choose`].
pub fn from_store(run: &RunFacts<'_>) -> Found {
    read_store(run).of_shape(run.agent.id_shape)
}

/// The sessions of the run's directory that the agent's store says started during the run.
fn read_store(run: &RunFacts<'_>) -> Found {
    let Some(store) = run.agent.store else {
        return Found::default();
    };
    let query = Query {
        cwd: run.cwd,
        from: run.started - slack(),
        to: run.ended + slack(),
        program: Some(run.program),
    };
    settle(run, store.sessions(&query))
}

/// The directory of an agent's session store, whose files the witness looks for among the
/// agent's open files (`None` for agents whose session is not read from a directory of files).
pub fn store_dir(agent: &Agent) -> Option<PathBuf> {
    agent.store?.dir()
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

    #[test]
    fn guesses_are_newest_first_never_taken_and_a_held_file_is_sure() {
        let tmp = tempfile::tempdir().unwrap();
        let start = Utc::now();
        let at = |s: i64| start + chrono::Duration::seconds(s);
        let file = |name: &str| {
            let p = tmp.path().join(name);
            std::fs::write(&p, "x").unwrap();
            Some(p)
        };
        let all = vec![
            Candidate {
                id: "in-run".into(),
                at: at(1),
                file: file("a"),
            },
            Candidate {
                id: "newest".into(),
                at: at(5),
                file: file("b"),
            },
        ];
        let agent = crate::agents::by_name("codex").unwrap();
        let run = finished(agent, tmp.path(), start);
        assert_eq!(best(&run, all.clone()).as_deref(), Some("newest"));
        // A session an earlier run recorded is never this run's, however close in time.
        let taken = ["newest".to_string()];
        let run = RunFacts {
            taken: &taken,
            ..finished(agent, tmp.path(), start)
        };
        assert_eq!(best(&run, all.clone()).as_deref(), Some("in-run"));
        // A file the agent's processes held open is this run's, newest or not.
        let held = [tmp.path().join("a").canonicalize().unwrap()];
        let run = RunFacts {
            held: &held,
            ..finished(agent, tmp.path(), start)
        };
        assert_eq!(settle(&run, all).sure.as_deref(), Some("in-run"));
    }

    #[test]
    fn guesses_are_settled_against_other_runs() {
        let found = Found {
            sure: None,
            guesses: vec!["b".into(), "a".into()],
            unconfirmed: None,
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
}
