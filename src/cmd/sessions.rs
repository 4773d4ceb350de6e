//! `pas-agent sessions [AGENT] [--json]`: this project's agent conversations, read from the
//! agents' own stores (also those started without pas-agent), newest first.

use std::fmt::Write as _;
use std::path::PathBuf;

use serde::Serialize;

use super::{cwd, print_json};
use crate::agents::Agent;
use crate::cli::SessionsArgs;
use crate::display::ago;
use crate::error::{Error, Result};
use crate::launch::resume::{self, Known};
use crate::session::Project;
use crate::term::{Out, clean_line};

/// `sessions --json`: `{"sessions": [{"agent", "id", "updated", "cwd", "first_prompt", "run",
/// "file"}]}`, newest first (docs/json.md).
#[derive(Serialize)]
struct SessionsJson {
    sessions: Vec<One>,
}

#[derive(Serialize)]
struct One {
    agent: &'static str,
    id: String,
    updated: chrono::DateTime<chrono::Utc>,
    cwd: String,
    first_prompt: Option<String>,
    run: Option<usize>,
    file: Option<String>,
}

pub fn run(args: SessionsArgs) -> Result<i32> {
    let here = cwd()?;
    let agents: Vec<&'static Agent> = match &args.agent {
        Some(name) => {
            let a = crate::agents::lookup(name).ok_or_else(|| {
                Error::Usage(format!(
                    "`{}` is not an agent pas-agent launches (claude, codex, gemini, opencode, …)",
                    clean_line(name)
                ))
            })?;
            if a.store.is_none() {
                return Err(Error::Usage(format!(
                    "pas-agent does not read the sessions of {}",
                    a.name
                )));
            }
            vec![a]
        }
        None => crate::agents::launched()
            .filter(|a| a.store.is_some())
            .collect(),
    };
    // This project: its root, where you are, and wherever its runs ran; outside a session,
    // the directory you are in.
    let (root, runs) = match Project::find_opt(&here) {
        Some(p) => {
            let runs = p.load()?.runs.into_decoded();
            (p.root, runs)
        }
        None => (here.clone(), Vec::new()),
    };
    let dirs = resume::directories(&root, &here, &runs);
    // Each agent's store on its own thread: one of them may be read through the agent itself.
    let found: Vec<(&'static Agent, Vec<Known>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = agents
            .iter()
            .map(|a| {
                let (dirs, runs) = (&dirs, &runs);
                scope.spawn(move || {
                    let program: Option<PathBuf> =
                        a.executables.iter().find_map(|e| which::which(e).ok());
                    (*a, resume::conversations(a, program.as_deref(), dirs, runs))
                })
            })
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    });
    let mut all: Vec<(&'static Agent, Known)> = found
        .into_iter()
        .flat_map(|(a, ks)| ks.into_iter().map(move |k| (a, k)))
        .collect();
    all.sort_by_key(|(_, k)| std::cmp::Reverse(k.conversation.updated));
    if args.json {
        print_json(&SessionsJson {
            sessions: all
                .into_iter()
                .map(|(a, k)| One {
                    agent: a.id,
                    id: k.conversation.id,
                    updated: k.conversation.updated,
                    cwd: k.conversation.cwd.to_string_lossy().into_owned(),
                    first_prompt: k.conversation.first_prompt,
                    run: k.run,
                    file: k
                        .conversation
                        .file
                        .map(|f| f.to_string_lossy().into_owned()),
                })
                .collect(),
        })?;
        return Ok(0);
    }
    if all.is_empty() {
        crate::term::print("No agent conversations found for this project.\n")?;
        return Ok(0);
    }
    let now = chrono::Utc::now();
    let agent_w = all
        .iter()
        .map(|(a, _)| a.short_name().len())
        .chain([5])
        .max()
        .unwrap_or(5);
    let id_w = all
        .iter()
        .map(|(_, k)| k.conversation.id.len())
        .chain([2])
        .max()
        .unwrap_or(2);
    let mut out = Out::new();
    let _ = writeln!(
        out,
        "{:<agent_w$}  {:<id_w$}  {:>8}  {:>4}  first prompt",
        "agent", "id", "age", "run"
    );
    for (a, k) in &all {
        let c = &k.conversation;
        let dir = if crate::agents::store::same_dir(&c.cwd.to_string_lossy(), &root) {
            String::new()
        } else {
            format!(
                "[{}] ",
                c.cwd
                    .strip_prefix(&root)
                    .map(|p| p.to_string_lossy().into_owned())
                    .unwrap_or_else(|_| c.cwd.to_string_lossy().into_owned())
            )
        };
        let _ = writeln!(
            out,
            "{:<agent_w$}  {:<id_w$}  {:>8}  {:>4}  {}{}",
            a.short_name(),
            clean_line(&c.id),
            ago(&c.updated, &now),
            k.run.map_or_else(|| "-".to_string(), |n| format!("#{n}")),
            clean_line(&dir),
            clean_line(&resume::first_words(
                c.first_prompt.as_deref().unwrap_or("-"),
                60
            ))
        );
    }
    let _ = writeln!(
        out,
        "Resume one with `pas-agent run AGENT --resume ID` (the end of an id is enough)."
    );
    out.print()?;
    Ok(0)
}
