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

use crate::cli::{CompletionShell, CompletionsArgs, ManArgs};
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
    crate::term::print_data(&script(args.shell)?)?;
    Ok(0)
}

/// What zsh runs in place of clap_complete's last line (`compdef <function> pas-agent`), so
/// that the script works however it is loaded: from `fpath` as `_pas-agent` (compinit then
/// calls it for the first completion, which it answers at once), sourced after `compinit`
/// (`compdef` registers it), or sourced before (`compdef` does not exist yet: it is registered
/// at the first prompt, when compinit has run; without compinit nothing is done, silently).
const ZSH_LOADER: &str = r#"if [[ ${funcstack[1]-} == _pas-agent ]]; then
    # Loaded from fpath by compinit: this call is the first completion; answer it.
    {FUNCTION} "$@"
elif (( $+functions[compdef] )); then
    compdef {FUNCTION} pas-agent
else
    # Sourced before compinit: register at the first prompt, once compinit has run.
    autoload -Uz add-zsh-hook
    _pas_agent_compdef() {
        add-zsh-hook -d precmd _pas_agent_compdef
        unfunction _pas_agent_compdef
        (( $+functions[compdef] )) && compdef {FUNCTION} pas-agent
    }
    add-zsh-hook precmd _pas_agent_compdef
fi
"#;

/// The completion script for `shell`, as `completions` prints it: clap_complete's registration
/// for this binary, made to load every documented way (zsh: [`ZSH_LOADER`]; fish: earlier
/// definitions for pas-agent erased first, so that the script loaded last is the one used).
///
/// Errors: the path of this binary is not UTF-8; clap_complete has no script for the shell or
/// wrote one of another shape than this version expects.
pub fn script(shell: CompletionShell) -> Result<String> {
    let shells = Shells::builtins();
    let completer = shells
        .completer(shell.name())
        .ok_or_else(|| Error::Message(format!("no completion support for {}", shell.name())))?;
    let bin = crate::hook::binary_path()?;
    let bin = bin.to_str().ok_or_else(|| {
        Error::Message(format!(
            "the path of this program ({}) is not UTF-8, which the completion scripts cannot hold",
            crate::term::clean(&bin.to_string_lossy())
        ))
    })?;
    let mut buf = Vec::new();
    completer
        .write_registration(COMPLETE_ENV, "pas-agent", "pas-agent", bin, &mut buf)
        .map_err(|e| Error::io("<stdout>", e))?;
    let text = String::from_utf8(buf)
        .map_err(|e| Error::Message(format!("completion script is not UTF-8: {e}")))?;
    Ok(match shell {
        CompletionShell::Zsh => zsh_loader(&text)?,
        CompletionShell::Fish => format!(
            "# pas-agent completions (`pas-agent completions fish`)\ncomplete --erase --command pas-agent\n{text}"
        ),
        _ => text,
    })
}

/// clap_complete's zsh script with its last line, `compdef <function> pas-agent`, replaced by
/// [`ZSH_LOADER`].
///
/// Errors: the script does not end that way (a clap_complete of another shape).
fn zsh_loader(text: &str) -> Result<String> {
    let body = text.trim_end();
    let (head, last) = body.rsplit_once('\n').unwrap_or(("", body));
    let function = last
        .strip_prefix("compdef ")
        .and_then(|rest| rest.strip_suffix(" pas-agent"))
        .filter(|f| !f.is_empty() && f.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
        .ok_or_else(|| {
            Error::Message(
                "the zsh completion script does not end with `compdef … pas-agent` as this pas-agent expects".into(),
            )
        })?;
    Ok(format!(
        "{}\n\n{}",
        head.trim_end(),
        ZSH_LOADER.replace("{FUNCTION}", function)
    ))
}

/// The files `shell` loads completions for `pas-agent` from by itself (bash-completion's
/// folders, zsh's usual `fpath` folders, fish's completion folders), the user's first; the
/// first is where the documentation installs it. A file there wins over, or stands in for, a
/// line in the start-up file, so `doctor` compares each with [`script`].
///
/// Sources: bash-completion's README (`$BASH_COMPLETION_USER_DIR` or
/// `$XDG_DATA_HOME/bash-completion/completions`, then the system's `completions` folders);
/// fish's documentation, "Where to put completions" (`~/.config/fish/completions` first, then
/// the vendor folders); zsh's `compinit` reads `fpath` (`~/.zfunc` is the folder the
/// documentation adds to it).
pub fn completion_files(shell: CompletionShell) -> Vec<std::path::PathBuf> {
    use std::path::PathBuf;
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let home = var("HOME");
    let data = var("XDG_DATA_HOME").or_else(|| home.as_ref().map(|h| h.join(".local/share")));
    let config = var("XDG_CONFIG_HOME").or_else(|| home.as_ref().map(|h| h.join(".config")));
    let mut out: Vec<PathBuf> = Vec::new();
    match shell {
        CompletionShell::Bash => {
            if let Some(dir) = var("BASH_COMPLETION_USER_DIR")
                .or_else(|| data.as_ref().map(|d| d.join("bash-completion")))
            {
                out.push(dir.join("completions/pas-agent"));
            }
            out.extend(
                [
                    "/usr/local/share/bash-completion/completions/pas-agent",
                    "/usr/share/bash-completion/completions/pas-agent",
                    "/etc/bash_completion.d/pas-agent",
                ]
                .map(PathBuf::from),
            );
        }
        CompletionShell::Zsh => {
            if let Some(home) = &home {
                let zdot = var("ZDOTDIR").unwrap_or_else(|| home.clone());
                out.push(zdot.join(".zfunc/_pas-agent"));
                if zdot != *home {
                    out.push(home.join(".zfunc/_pas-agent"));
                }
                out.push(home.join(".zsh/completions/_pas-agent"));
            }
            if let Some(data) = &data {
                out.push(data.join("zsh/site-functions/_pas-agent"));
            }
            out.extend(
                [
                    "/usr/local/share/zsh/site-functions/_pas-agent",
                    "/usr/share/zsh/site-functions/_pas-agent",
                    "/usr/share/zsh/vendor-completions/_pas-agent",
                ]
                .map(PathBuf::from),
            );
        }
        CompletionShell::Fish => {
            if let Some(config) = &config {
                out.push(config.join("fish/completions/pas-agent.fish"));
            }
            if let Some(data) = &data {
                out.push(data.join("fish/vendor_completions.d/pas-agent.fish"));
            }
            out.extend(
                [
                    "/etc/fish/completions/pas-agent.fish",
                    "/usr/local/share/fish/vendor_completions.d/pas-agent.fish",
                    "/usr/share/fish/vendor_completions.d/pas-agent.fish",
                ]
                .map(PathBuf::from),
            );
        }
        CompletionShell::Powershell | CompletionShell::Elvish => {}
    }
    out
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
        None => ListKind::IN_STATUS_ORDER
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

/// What to do so that `man pas-agent` finds the pages written to `dir`, or `None` when it
/// will (or when this cannot be told: no man-db `manpath` here).
///
/// `man` looks for `man1/pas-agent.1` under each folder of its search path, which man-db's
/// `manpath` prints: `$MANPATH` when it is set (an empty element there stands for the system's
/// folders), else the system's folders plus, for each folder `X/bin` on `PATH`, `X/share/man`
/// and `X/man` when they exist (manpath(5); checked: man-db 2.11). So the pages of a binary in
/// `~/.cargo/bin` or `~/.local/bin` are found in `~/.cargo/share/man/man1` or
/// `~/.local/share/man/man1` with no setting.
fn man_finds(dir: &std::path::Path) -> Option<String> {
    let dir = dir.canonicalize().ok()?;
    let shown = crate::term::clean(&dir.to_string_lossy());
    let section = dir.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if !section.starts_with("man") || section.len() < 4 {
        return Some(format!(
            "man reads pages from man1/ folders: `man pas-agent` will not find them in {shown}; write them to a folder named man1, such as ~/.local/share/man/man1"
        ));
    }
    let out = std::process::Command::new(which::which("manpath").ok()?)
        .arg("-q")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let base = dir.parent()?;
    let listed = String::from_utf8_lossy(&out.stdout)
        .trim()
        .split(':')
        .filter_map(|p| std::path::Path::new(p).canonicalize().ok())
        .any(|p| p == base);
    if listed {
        return None;
    }
    let base_shown = crate::term::clean(&base.to_string_lossy());
    // This binary's `X/bin` on PATH: man-db looks in `X/share/man` by itself.
    let on_path = |d: &std::path::Path| {
        std::env::var_os("PATH").is_some_and(|p| {
            std::env::split_paths(&p).any(|e| e.canonicalize().ok().as_deref() == Some(d))
        })
    };
    let beside = std::env::current_exe()
        .ok()
        .and_then(|p| p.canonicalize().ok())
        .and_then(|p| p.parent().map(std::path::Path::to_path_buf))
        .filter(|bin| bin.file_name().is_some_and(|n| n == "bin") && on_path(bin))
        .and_then(|bin| Some(bin.parent()?.join("share/man/man1")))
        .filter(|_| std::env::var_os("MANPATH").is_none())
        .map(|p| {
            format!(
                " (or write them beside this binary, where man-db looks by itself: `pas-agent man --dir {}`)",
                crate::term::clean(&p.to_string_lossy())
            )
        })
        .unwrap_or_default();
    Some(format!(
        "`man pas-agent` will not find these pages: {base_shown} is not on man's search path (`manpath`). Add it in your shell's start-up file: export MANPATH=\"{base_shown}:$MANPATH\" (an empty part keeps the system's pages){beside}"
    ))
}

/// `pas-agent man [COMMAND…] [--dir DIR]`.
pub fn man(args: ManArgs) -> Result<i32> {
    if let Some(dir) = &args.dir {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
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
        if let Some(advice) = man_finds(dir) {
            crate::term::note(&advice);
        }
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
