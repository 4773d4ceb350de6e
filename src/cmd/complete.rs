//! `pas-agent completions` and the dynamic completion behind it, and `pas-agent man`.
//!
//! Completion is clap_complete's dynamic completion (`unstable-dynamic`): the script that
//! `completions <shell>` prints calls pas-agent back with `PAS_AGENT_COMPLETE=<shell>` and the words
//! typed so far, and [`complete_if_asked`] answers from the same clap definition that parses
//! the command line, plus candidates read from the session in the current directory (agent
//! names, checkpoint, run and item numbers). Commands added to `crate::cli` complete without
//! any change here.

use clap_complete::engine::{ArgValueCandidates, CompletionCandidate};
use clap_complete::env::Shells;

use crate::cli::{CompletionsArgs, ManArgs};
use crate::error::{Error, Result};
use crate::model::{ListKind, Session};
use crate::session::Project;
use crate::term::clean_line;

/// The environment variable that asks for completions. Not clap_complete's default
/// `COMPLETE`: a name that generic is set in people's environments for other reasons, and it
/// would turn every pas-agent call (the prompt segment, an agent's lifecycle hook) into a
/// completion answer.
pub const COMPLETE_ENV: &str = "PAS_AGENT_COMPLETE";

/// The command line definition with the session-dependent completers attached: agent names
/// for `run`'s AGENT, checkpoint numbers for `show`, item numbers for `remove`, `update
/// --done` and `update --resolve`, and run numbers for any argument named `run`, a value
/// named `RUN`, or a positional argument of `runs`.
pub fn command_with_completers() -> clap::Command {
    crate::cli::command().mut_subcommands(|sub| {
        let name = sub.get_name().to_string();
        sub.mut_args(|arg| {
            let value_name = arg
                .get_value_names()
                .and_then(|v| v.first())
                .map(|v| v.to_string());
            let completer = match (name.as_str(), arg.get_id().as_str(), value_name.as_deref()) {
                ("run", "agent", _) => ArgValueCandidates::new(agent_candidates),
                ("show", "checkpoint", _) => ArgValueCandidates::new(checkpoint_candidates),
                ("update", "done", _) => {
                    ArgValueCandidates::new(|| item_candidates(Some(ListKind::Remaining)))
                }
                ("update", "resolve", _) => {
                    ArgValueCandidates::new(|| item_candidates(Some(ListKind::Blockers)))
                }
                ("remove", "numbers", _) => ArgValueCandidates::new(|| item_candidates(None)),
                (_, "run", _) | (_, _, Some("RUN")) => ArgValueCandidates::new(run_candidates),
                // `runs N`: any positional of `runs` is a run number.
                ("runs", _, _) if arg.is_positional() => ArgValueCandidates::new(run_candidates),
                _ => return arg,
            };
            arg.add(completer)
        })
    })
}

/// Answers a completion request and returns `true` when [`COMPLETE_ENV`] is set (the shell's
/// completion script calling back); `false` otherwise, at the cost of one environment lookup.
/// The answer is written to stdout by clap_complete; candidates read from the session are
/// cleaned for the terminal first.
pub fn complete_if_asked() -> bool {
    if std::env::var_os(COMPLETE_ENV).is_none_or(|v| v.is_empty() || v == "0") {
        return false;
    }
    clap_complete::CompleteEnv::with_factory(command_with_completers)
        .var(COMPLETE_ENV)
        .complete();
    true
}

/// `pas-agent completions <shell>`: the registration script, which calls this binary (by
/// its absolute path) back for every completion.
pub fn completions(args: CompletionsArgs) -> Result<i32> {
    let shells = Shells::builtins();
    let shell = shells.completer(args.shell.name()).ok_or_else(|| {
        Error::Message(format!("no completion support for {}", args.shell.name()))
    })?;
    let bin = crate::hook::binary_path()?;
    let bin = bin.to_str().ok_or_else(|| {
        Error::Message(format!(
            "the path of this program ({}) is not UTF-8, which the completion scripts cannot hold",
            crate::term::clean(&bin.to_string_lossy())
        ))
    })?;
    let mut buf = Vec::new();
    shell
        .write_registration(COMPLETE_ENV, "pas-agent", "pas-agent", bin, &mut buf)
        .map_err(|e| Error::io("<stdout>", e))?;
    let text = String::from_utf8(buf)
        .map_err(|e| Error::Message(format!("completion script is not UTF-8: {e}")))?;
    crate::term::print_data(&text)?;
    Ok(0)
}

/// The session of the current directory, if there is one and it can be read: completion
/// never reports errors (it would print into the user's command line).
fn session() -> Option<Session> {
    let cwd = std::env::current_dir().ok()?;
    Project::find_opt(&cwd)?.load().ok()
}

fn candidate(value: String, help: &str) -> CompletionCandidate {
    let help = clean_line(help);
    let help: String = help.chars().take(60).collect();
    CompletionCandidate::new(value).help(Some(help.into()))
}

/// Every agent id, alias and executable name in the agents table, each with the agent's
/// display name.
pub fn agent_candidates() -> Vec<CompletionCandidate> {
    let mut out = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for agent in crate::agents::launched() {
        let names = std::iter::once(agent.id)
            .chain(agent.aliases.iter().copied())
            .chain(agent.executables.iter().copied());
        for name in names {
            if seen.insert(name) {
                out.push(candidate(name.to_string(), agent.name));
            }
        }
    }
    out
}

/// Checkpoint numbers of the session here (as `list` shows them), each with its message,
/// newest first.
pub fn checkpoint_candidates() -> Vec<CompletionCandidate> {
    let Some(session) = session() else {
        return Vec::new();
    };
    session
        .checkpoints
        .iter()
        .enumerate()
        .rev()
        .map(|(i, c)| candidate((i + 1).to_string(), &c.message))
        .collect()
}

/// Run numbers of the session here (as `runs` shows them), each with its agent, newest first.
pub fn run_candidates() -> Vec<CompletionCandidate> {
    let Some(session) = session() else {
        return Vec::new();
    };
    session
        .runs
        .iter()
        .enumerate()
        .rev()
        .map(|(i, r)| {
            candidate(
                (i + 1).to_string(),
                &format!("{} {}", r.agent, crate::display::minute(&r.started_at)),
            )
        })
        .collect()
}

/// Item numbers of one list of the session here (as `status` shows them) with their text;
/// with `None`, the numbers of the longest list (`remove`'s list is typed before them, and
/// clap_complete does not tell which).
fn item_candidates(kind: Option<ListKind>) -> Vec<CompletionCandidate> {
    let Some(session) = session() else {
        return Vec::new();
    };
    let items = match kind {
        Some(kind) => session.task.list(kind).clone(),
        None => [
            ListKind::Completed,
            ListKind::Remaining,
            ListKind::Blockers,
            ListKind::Decisions,
            ListKind::Constraints,
            ListKind::Discoveries,
        ]
        .into_iter()
        .map(|k| session.task.list(k).clone())
        .max_by_key(|l| l.len())
        .unwrap_or_default(),
    };
    items
        .iter()
        .enumerate()
        .map(|(i, text)| candidate((i + 1).to_string(), if kind.is_some() { text } else { "" }))
        .collect()
}

/// The manual pages: the command's and one per reachable subcommand, by path
/// (`["run"]` → `pas-agent-run`). `None` when `path` names no command.
fn man_page_of(path: &[String]) -> Option<clap::Command> {
    let mut cmd = crate::cli::command().disable_help_subcommand(true);
    cmd.build();
    for name in path {
        let found = cmd
            .get_subcommands()
            .find(|s| s.get_name() == name || s.get_all_aliases().any(|a| a == name))?
            .clone();
        cmd = found;
    }
    Some(cmd)
}

fn render(cmd: clap::Command) -> Result<(String, String)> {
    let man = clap_mangen::Man::new(cmd)
        .manual("pas-agent manual")
        .source(concat!("pas-agent ", env!("CARGO_PKG_VERSION")));
    let mut buf = Vec::new();
    man.render(&mut buf)
        .map_err(|e| Error::io("<man page>", e))?;
    let text = String::from_utf8(buf)
        .map_err(|e| Error::Message(format!("man page is not UTF-8: {e}")))?;
    Ok((man.get_filename(), text))
}

/// Every page: pas-agent's and each reachable subcommand's, depth first.
fn all_pages() -> Vec<clap::Command> {
    fn walk(cmd: &clap::Command, out: &mut Vec<clap::Command>) {
        out.push(cmd.clone());
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            walk(sub, out);
        }
    }
    let mut cmd = crate::cli::command().disable_help_subcommand(true);
    cmd.build();
    let mut out = Vec::new();
    walk(&cmd, &mut out);
    out
}

/// `pas-agent man [COMMAND…] [--dir DIR]`.
pub fn man(args: ManArgs) -> Result<i32> {
    if let Some(dir) = &args.dir {
        let guard = crate::fsutil::WriteGuard::new(dir).map_err(|e| Error::io(dir, e))?;
        let mut written = 0;
        for cmd in all_pages() {
            let (name, text) = render(cmd)?;
            let path = dir.join(&name);
            guard
                .write(
                    &path,
                    text.as_bytes(),
                    crate::fsutil::Named::ByUs,
                    crate::fsutil::Links::Replace,
                )
                .map_err(|e| Error::write(&path, e))?;
            written += 1;
        }
        crate::term::note(&format!(
            "wrote {written} manual pages to {}",
            crate::term::clean(&dir.to_string_lossy())
        ));
        return Ok(0);
    }
    let Some(cmd) = man_page_of(&args.command) else {
        return Err(Error::Usage(format!(
            "`{}` is not a pas-agent command; `pas-agent --help` lists them",
            clean_line(&args.command.join(" "))
        )));
    };
    let (_, text) = render(cmd)?;
    crate::term::print_data(&text)?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Cli;
    use clap::CommandFactory;

    #[test]
    fn every_subcommand_has_a_page() {
        let pages = all_pages();
        let cmd = Cli::command();
        // Hidden commands (the agents' `lifecycle` hook entry) have no page.
        let shown = cmd.get_subcommands().filter(|s| !s.is_hide_set()).count();
        assert_eq!(pages.len(), 1 + shown);
        assert!(cmd.get_subcommands().any(|s| s.is_hide_set()));
        for page in pages {
            let (name, text) = render(page).unwrap();
            assert!(
                name.starts_with("pas-agent") && name.ends_with(".1"),
                "{name}"
            );
            assert!(text.contains(".TH"), "{name}");
        }
    }

    #[test]
    fn completers_attach_to_existing_arguments() {
        let mut cmd = command_with_completers();
        cmd.build();
        let run = cmd.find_subcommand("run").unwrap();
        let agent = run.get_arguments().find(|a| a.get_id() == "agent").unwrap();
        assert!(agent.get::<ArgValueCandidates>().is_some());
    }
}
