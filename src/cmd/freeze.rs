//! `pas-agent freeze [RUN… | --all] [--force] [--grace SECONDS]`: end live agents so that each
//! can be restored later (docs/freeze.md).

use std::time::Duration;

use serde::Serialize;

use super::{cwd, print_json};
use crate::cli::FreezeArgs;
use crate::error::{Error, Result};
use crate::launch::freeze::{self, FreezeOptions, Froze};
use crate::launch::process::Liveness;
use crate::launch::reconcile;
use crate::launch::registry::{Entry, Registry, State};
use crate::session::Project;
use crate::term::{clean_line, note, warn};

/// The registry entries `selectors` name: each a run number of the project around the current
/// directory (`3`), or the start of a registry id (`1a2b3c4d`, dashes optional), as
/// `runs --all` shows them.
///
/// Errors: [`Error::Usage`] for a selector that names no entry, or several.
pub(super) fn select(entries: &[Entry], selectors: &[String]) -> Result<Vec<Entry>> {
    let project = cwd().ok().and_then(|d| Project::find_opt(&d));
    let runs = project
        .as_ref()
        .and_then(|p| p.load().ok())
        .map(|s| s.runs)
        .unwrap_or_default();
    let mut out: Vec<Entry> = Vec::new();
    for sel in selectors {
        let s = sel.trim();
        let entry = match s
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=runs.len()).contains(n))
        {
            Some(n) if s.len() < 8 => {
                let id = runs[n - 1].id;
                entries.iter().find(|e| e.run_id == id).ok_or_else(|| {
                    Error::Usage(format!(
                        "run #{n} of this project is neither live nor frozen (`pas-agent runs --all` lists those)"
                    ))
                })?
            }
            _ => {
                let prefix: String = s.to_ascii_lowercase().replace('-', "");
                let fits: Vec<&Entry> = if prefix.is_empty() {
                    Vec::new()
                } else {
                    entries
                        .iter()
                        .filter(|e| e.run_id.simple().to_string().starts_with(&prefix))
                        .collect()
                };
                match fits.as_slice() {
                    [one] => *one,
                    [] => {
                        return Err(Error::Usage(format!(
                            "no run in the machine-wide registry is `{}` (a run number here, or the start of an id as `pas-agent runs --all` shows it)",
                            clean_line(s)
                        )));
                    }
                    many => {
                        return Err(Error::Usage(format!(
                            "`{}` starts the ids of {} runs; give more of it",
                            clean_line(s),
                            many.len()
                        )));
                    }
                }
            }
        };
        if !out.iter().any(|o| o.run_id == entry.run_id) {
            out.push(entry.clone());
        }
    }
    Ok(out)
}

/// `freeze --json`: `{"runs": [{"run_id", "agent", "project", "cwd", "outcome", "reason",
/// "entry"}]}` (docs/json.md).
#[derive(Serialize)]
struct FreezeJson {
    runs: Vec<Outcome>,
}

#[derive(Serialize)]
struct Outcome {
    run_id: uuid::Uuid,
    agent: String,
    project: String,
    cwd: String,
    /// `frozen`, `ended` (forced, no session id: it cannot be restored) or `refused`.
    outcome: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    entry: Option<Entry>,
}

pub fn run(args: FreezeArgs) -> Result<i32> {
    let reg = Registry::open()?;
    reconcile::registry(&reg)?;
    let entries = reg.entries()?;
    let targets: Vec<Entry> = if args.all {
        // Not the run this command runs inside (a shell of an agent): ending it ends this.
        let inside = std::env::var(crate::launch::RUN_ID_ENV).ok();
        entries
            .iter()
            .filter(|e| e.state == State::Live && e.liveness() == Liveness::Alive)
            .filter(|e| {
                let me = inside.as_deref() == Some(e.run_id.to_string().as_str());
                if me {
                    warn(&format!(
                        "{} is left live: this freeze runs inside it",
                        describe(e)
                    ));
                }
                !me
            })
            .cloned()
            .collect()
    } else {
        select(&entries, &args.runs)?
    };
    if targets.is_empty() {
        if args.json {
            print_json(&FreezeJson { runs: Vec::new() })?;
        } else {
            crate::term::print("No live agent runs to freeze on this machine.\n")?;
        }
        return Ok(0);
    }
    let opts = FreezeOptions {
        grace: Duration::from_secs(args.grace),
        force: args.force,
    };
    if !args.json {
        let what: Vec<String> = targets.iter().map(describe).collect();
        note(&format!("pas-agent: freezing {}", what.join(", ")));
    }
    // All at once: each waits for its own agent.
    let results: Vec<Result<std::result::Result<Froze, String>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = targets
            .iter()
            .map(|e| {
                let (reg, entries) = (&reg, &entries);
                scope.spawn(move || freeze::freeze(reg, entries, e, opts))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(Error::Message("the freeze failed unexpectedly".into()))
                })
            })
            .collect()
    });
    let mut outcomes = Vec::new();
    let mut failed = false;
    for (e, result) in targets.iter().zip(results) {
        let (outcome, reason, entry) = match result {
            Ok(Ok(Froze::Frozen(entry))) => ("frozen", None, Some(*entry)),
            Ok(Ok(Froze::Ended(why))) => ("ended", Some(why), None),
            Ok(Err(why)) => ("refused", Some(why), None),
            Err(err) => ("refused", Some(err.to_string()), None),
        };
        failed |= outcome == "refused";
        outcomes.push(Outcome {
            run_id: e.run_id,
            agent: e.agent.clone(),
            project: e.project.clone(),
            cwd: e.cwd.clone(),
            outcome,
            reason,
            entry,
        });
    }
    if args.json {
        print_json(&FreezeJson { runs: outcomes })?;
    } else {
        let mut out = String::new();
        for o in &outcomes {
            let short = &o.run_id.simple().to_string()[..8];
            let agent = clean_line(&o.agent);
            match (o.outcome, &o.entry) {
                ("frozen", Some(entry)) => {
                    let place = entry
                        .tmux
                        .as_ref()
                        .and_then(|t| {
                            Some(format!(
                                ", tmux {}:{}",
                                t.session.as_deref()?,
                                t.window.as_deref()?
                            ))
                        })
                        .map(|p| clean_line(&p))
                        .unwrap_or_default();
                    out.push_str(&format!(
                        "Frozen {short}: {agent} in {}{place}, session {}\n",
                        clean_line(&o.cwd),
                        clean_line(entry.agent_session_id.as_deref().unwrap_or("-"))
                    ));
                }
                ("ended", _) => out.push_str(&format!(
                    "Ended {short}: {agent} in {} ({})\n",
                    clean_line(&o.cwd),
                    o.reason.as_deref().unwrap_or_default()
                )),
                _ => warn(&format!(
                    "not frozen: {short} ({agent} in {}): {}",
                    clean_line(&o.cwd),
                    clean_line(o.reason.as_deref().unwrap_or_default())
                )),
            }
        }
        if outcomes.iter().any(|o| o.outcome == "frozen") {
            out.push_str("Restore with `pas-agent restore --all` (or `pas-agent restore <id>`).\n");
        }
        crate::term::print(&out)?;
    }
    Ok(if failed { 1 } else { 0 })
}

/// `claude-code 1a2b3c4d`, for messages.
fn describe(e: &Entry) -> String {
    format!("{} {}", clean_line(&e.agent), e.short_id())
}
