//! `run AGENT --resume SELECTOR`: which conversation of the agent a selector names, and where
//! (docs/launcher.md, "`--resume`").
//!
//! The selector is tried as, in order: a path to the conversation's file in the agent's store;
//! a run number of this project (`3`, as `pas-agent runs` numbers them); an exact session id
//! among the conversations known here; any other id of the agent's own id shape, taken as
//! given; and a unique suffix of a known id (`a41c9e`, as `pas-agent sessions` lists them). A
//! miss names the closest known ids. The conversations known here are this project's runs of
//! the agent and what its store holds for the project's root, the current directory and every
//! directory a run of the project ran in ([`conversations`]); an agent keeps its conversations
//! per directory, so the one chosen is resumed in its own, which must still exist.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use crate::agents::Agent;
use crate::agents::store::Conversation;
use crate::model::Run;

/// A conversation an agent can resume.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Known {
    /// The conversation as the agent's store (or a run record) has it.
    pub conversation: Conversation,
    /// The number of the latest run of this project that recorded it, if any.
    pub run: Option<usize>,
}

/// The directories whose conversations belong to the project at `root`: the root, `here`
/// when it is inside it, and every directory its runs ran in that still exists.
pub fn directories(root: &Path, here: &Path, runs: &[Run]) -> Vec<PathBuf> {
    let mut dirs = vec![root.to_path_buf()];
    if here.starts_with(root) {
        dirs.push(here.to_path_buf());
    }
    for r in runs {
        dirs.push(PathBuf::from(&r.cwd));
    }
    let mut out: Vec<PathBuf> = Vec::new();
    for d in dirs {
        if d.is_dir()
            && !out
                .iter()
                .any(|o| crate::agents::store::same_dir(&o.to_string_lossy(), &d))
        {
            out.push(d);
        }
    }
    out
}

/// The conversations of `agent` known for a project: what its store holds for `dirs`
/// ([`crate::agents::Store::conversations`]), and the sessions `runs` recorded for it (also in
/// directories that are gone), each with the number of the latest run that recorded it;
/// newest first. Only ids of the agent's id shape are kept.
pub fn conversations(
    agent: &Agent,
    program: Option<&Path>,
    dirs: &[PathBuf],
    runs: &[Run],
) -> Vec<Known> {
    let mut out: Vec<Known> = Vec::new();
    if let Some(store) = agent.store {
        for dir in dirs {
            let listed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                store.conversations(dir, program)
            }))
            .unwrap_or_default();
            for c in listed {
                if agent.id_shape.accepts(&c.id) && !out.iter().any(|k| k.conversation.id == c.id) {
                    out.push(Known {
                        conversation: c,
                        run: None,
                    });
                }
            }
        }
    }
    for (i, r) in runs.iter().enumerate() {
        if r.agent != agent.id {
            continue;
        }
        let Some(id) = r
            .agent_session_id
            .as_ref()
            .filter(|id| agent.id_shape.accepts(id))
        else {
            continue;
        };
        match out.iter_mut().find(|k| &k.conversation.id == id) {
            Some(k) => k.run = Some(i + 1),
            None => out.push(Known {
                conversation: Conversation {
                    id: id.clone(),
                    updated: r.ended_at.unwrap_or(r.started_at),
                    first_prompt: r
                        .transcript
                        .as_ref()
                        .and_then(|t| t.prompts.first().cloned()),
                    cwd: PathBuf::from(&r.cwd),
                    file: None,
                },
                run: Some(i + 1),
            }),
        }
    }
    out.sort_by_key(|k| std::cmp::Reverse(k.conversation.updated));
    out
}

/// How a selector was resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// The session id to resume.
    pub id: String,
    /// The directory to resume it in.
    pub cwd: PathBuf,
}

/// Resolves `selector` for `agent` against `known` (see the module docs); `runs` are the
/// project's runs, for run numbers; `here` the directory of an id taken as given. The error is
/// the message for the user: a miss with the closest ids, an ambiguous suffix with the ids it
/// fits, or a conversation whose directory is gone, with how to go on.
pub fn resolve(
    agent: &Agent,
    selector: &str,
    known: &[Known],
    runs: &[Run],
    here: &Path,
) -> Result<Choice, String> {
    let sel = selector.trim();
    let name = agent.name;
    let short = agent.short_name();
    let found = |k: &Known| Choice {
        id: k.conversation.id.clone(),
        cwd: k.conversation.cwd.clone(),
    };
    let choice = if let Some(k) = by_path(sel, known) {
        found(k)
    } else if let Some(n) = sel
        .parse::<usize>()
        .ok()
        .filter(|n| (1..=runs.len()).contains(n))
    {
        let r = &runs[n - 1];
        if r.agent != agent.id {
            return Err(format!(
                "run #{n} is a run of {}, not of {name}",
                crate::term::clean_line(&r.agent)
            ));
        }
        let id = r
            .agent_session_id
            .clone()
            .filter(|id| agent.id_shape.accepts(id))
            .ok_or_else(|| {
                format!("run #{n} recorded no {name} session id, so there is nothing to resume")
            })?;
        Choice {
            id,
            cwd: PathBuf::from(&r.cwd),
        }
    } else if let Some(k) = known
        .iter()
        .find(|k| k.conversation.id.eq_ignore_ascii_case(sel))
    {
        found(k)
    } else if agent.id_shape.accepts(sel) {
        // An id of the agent's own shape that is not known here: the agent decides.
        Choice {
            id: sel.to_string(),
            cwd: here.to_path_buf(),
        }
    } else {
        let lower = sel.to_ascii_lowercase();
        let fits: Vec<&Known> = if lower.is_empty() {
            Vec::new()
        } else {
            known
                .iter()
                .filter(|k| k.conversation.id.to_ascii_lowercase().ends_with(&lower))
                .collect()
        };
        match fits.as_slice() {
            [one] => found(one),
            [] => return Err(miss(agent, sel, known)),
            many => {
                let list: Vec<String> = many.iter().take(5).map(|k| line(k)).collect();
                return Err(format!(
                    "`{}` ends {} {name} session ids; give more of one:\n{}",
                    crate::term::clean_line(sel),
                    many.len(),
                    list.join("\n")
                ));
            }
        }
    };
    if !choice.cwd.is_dir() {
        return Err(format!(
            "{name} session {} was started in {}, which no longer exists; {name} looks its sessions up by directory, so it is not resumed from elsewhere.\n  To go on: recreate the directory (`mkdir -p {}`) and run this again, or start a new session with `pas-agent run {short}`",
            choice.id,
            crate::term::clean_line(&choice.cwd.to_string_lossy()),
            super::tmux::sh_word(&choice.cwd.to_string_lossy()),
        ));
    }
    Ok(choice)
}

/// The conversation kept in the file `sel` names, when `sel` is a path to one.
fn by_path<'a>(sel: &str, known: &'a [Known]) -> Option<&'a Known> {
    if !(sel.contains('/') || sel.contains(std::path::MAIN_SEPARATOR)) {
        return None;
    }
    let path = Path::new(sel).canonicalize().ok()?;
    known.iter().find(|k| {
        k.conversation
            .file
            .as_ref()
            .and_then(|f| f.canonicalize().ok())
            .is_some_and(|f| f == path)
    })
}

/// One conversation as a line of a message: id, age, run, first prompt.
fn line(k: &Known) -> String {
    let now = Utc::now();
    let run = k.run.map_or_else(String::new, |n| format!(" (run #{n})"));
    let prompt = k
        .conversation
        .first_prompt
        .as_deref()
        .map(|p| format!("  {}", crate::term::clean_line(&first_words(p, 60))))
        .unwrap_or_default();
    format!(
        "    {}  {}{run}{prompt}",
        k.conversation.id,
        age(&k.conversation.updated, &now)
    )
}

fn age(t: &DateTime<Utc>, now: &DateTime<Utc>) -> String {
    crate::display::ago(t, now)
}

/// The first line of `text`, at most `max` characters (an ellipsis marks a cut).
pub fn first_words(text: &str, max: usize) -> String {
    let line = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    if line.chars().count() <= max {
        line.to_string()
    } else {
        format!(
            "{}…",
            line.chars().take(max.saturating_sub(1)).collect::<String>()
        )
    }
}

/// The message for a selector that names nothing known: the closest ids, by edit distance
/// to the part of each id as long as the selector (its end), or containing it.
fn miss(agent: &Agent, sel: &str, known: &[Known]) -> String {
    let lower = sel.to_ascii_lowercase();
    let mut scored: Vec<(usize, &Known)> = known
        .iter()
        .map(|k| {
            let id = k.conversation.id.to_ascii_lowercase();
            let n = lower.chars().count().min(id.chars().count());
            let tail: String = id.chars().skip(id.chars().count() - n).collect();
            let score = if id.contains(&lower) {
                0
            } else {
                strsim::levenshtein(&lower, &tail).min(strsim::levenshtein(
                    &lower,
                    &id.chars().take(n).collect::<String>(),
                ))
            };
            (score, k)
        })
        .filter(|(score, _)| *score <= (lower.chars().count() / 2).max(2))
        .collect();
    scored.sort_by_key(|(score, k)| (*score, std::cmp::Reverse(k.conversation.updated)));
    let head = format!(
        "no {} session matches `{}` (a run number, a session id or the end of one)",
        agent.name,
        crate::term::clean_line(sel)
    );
    if scored.is_empty() {
        let hint = if known.is_empty() {
            format!("no {} session is known for this project", agent.name)
        } else {
            format!(
                "{} known for this project: `pas-agent sessions {}` lists them",
                crate::display::count(known.len(), "session is", "sessions are"),
                agent.short_name()
            )
        };
        return format!("{head}; {hint}");
    }
    let list: Vec<String> = scored.iter().take(3).map(|(_, k)| line(k)).collect();
    format!("{head}. Close matches:\n{}", list.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known(id: &str, cwd: &Path, run: Option<usize>) -> Known {
        Known {
            conversation: Conversation {
                id: id.into(),
                updated: Utc::now(),
                first_prompt: Some("Port the invoice job".into()),
                cwd: cwd.to_path_buf(),
                file: None,
            },
            run,
        }
    }

    #[test]
    fn exact_explicit_suffix_ambiguous_and_miss() {
        let tmp = tempfile::tempdir().unwrap();
        let here = tmp.path();
        let claude = crate::agents::by_name("claude").unwrap();
        let a = "3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b";
        let b = "9e8d7c6b-5a49-4382-8170-6f5e4d3c2a5b";
        let all = [known(a, here, Some(1)), known(b, here, None)];
        let pick = |s: &str| resolve(claude, s, &all, &[], here);
        assert_eq!(pick(a).unwrap().id, a);
        assert_eq!(pick(&a.to_uppercase()).unwrap().id, a);
        assert_eq!(pick("2e3f4a5b").unwrap().id, a);
        // Not known, but an id of Claude's shape: taken as given, here.
        let other = "00000000-0000-4000-8000-000000000000";
        assert_eq!(
            pick(other).unwrap(),
            Choice {
                id: other.into(),
                cwd: here.into()
            }
        );
        let err = pick("a5b").unwrap_err();
        assert!(
            err.contains("ends 2") && err.contains(a) && err.contains(b),
            "{err}"
        );
        let err = pick("2e3f4a5c").unwrap_err();
        assert!(
            err.contains("Close matches") && err.contains(a) && !err.contains(b),
            "{err}"
        );
        assert!(
            err.contains("Port the invoice job") && err.contains("run #1"),
            "{err}"
        );
        let err = pick("zzzz").unwrap_err();
        assert!(
            err.contains("2 sessions are known") && err.contains("pas-agent sessions claude"),
            "{err}"
        );
        // A directory that is gone: said, with how to go on.
        let gone = here.join("gone");
        let err = resolve(claude, "4a5b", &[known(a, &gone, None)], &[], here).unwrap_err();
        assert!(
            err.contains("no longer exists") && err.contains("mkdir -p"),
            "{err}"
        );
    }
}
