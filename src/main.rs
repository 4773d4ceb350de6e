//! The `pas-agent` binary: parse arguments, run the command, map errors to exit codes.
//!
//! std's own start-up and `main`: a panic prints its message and exits with 101. (The release
//! profile keeps `panic = "unwind"`: the launcher and the readers of agents' stores catch a
//! panic and go on.)

use pas_agent::cli::Command;
use pas_agent::error::{Error, exit};
use pas_agent::term;

/// Runs the command line's command and exits with its code.
fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(run() as u8)
}

/// The command line's command, run; the process's exit code (0–255).
fn run() -> i32 {
    // The prompt hook's command, without building clap's parser (see `fast_prompt_args`).
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    if let Some(prompt) = pas_agent::cli::fast_prompt_args(&args) {
        return outcome(pas_agent::cmd::dispatch(Command::Prompt(prompt)));
    }
    // The agents' lifecycle hooks: never a usage error, which an agent may read as "block".
    if let Some(lifecycle) = pas_agent::cli::lifecycle_args(&args) {
        return outcome(pas_agent::cmd::dispatch(Command::Lifecycle(lifecycle)));
    }
    // A completion script calling back (`PAS_AGENT_COMPLETE=bash pas-agent -- …`), after
    // the prompt and the lifecycle hooks, which nothing in the environment may divert: answer and exit.
    if pas_agent::cmd::complete::complete_if_asked() {
        return code(exit::OK);
    }
    // `status`, `list`, `doctor` with at most `--json`: without building clap's parser either.
    if let Some(command) = pas_agent::cli::fast_json_args(&args) {
        term::set_color(term::ColorChoice::default());
        return outcome(pas_agent::cmd::dispatch(command));
    }
    let cli = match pas_agent::cli::parse_from(std::env::args_os()) {
        Ok(cli) => cli,
        Err(e) => return clap_exit(&visible(e)),
    };
    term::set_color(cli.color);
    if let Some(dir) = &cli.dir
        && let Err(e) = std::env::set_current_dir(dir)
    {
        term::error(&format!("cannot change to {}: {e}", dir.to_string_lossy()));
        return code(exit::USAGE);
    }
    outcome(pas_agent::cmd::dispatch(cli.command))
}

/// The exit code of a command's result; an error is reported first.
fn outcome(result: pas_agent::error::Result<i32>) -> i32 {
    match result {
        Ok(c) => code(c),
        Err(Error::BrokenPipe) => code(exit::OK),
        Err(e) => {
            term::error(&e.to_string());
            code(e.exit_code())
        }
    }
}

/// What clap would print and exit with, but through the sanitiser: clap's messages quote the
/// offending argument (`invalid value 'A<ESC>]52;…' for '--to'`), and clap writes them raw.
/// Help and version go to stdout (exit 0), errors to stderr (exit 2), as clap does; the text is
/// clap's plain rendering, without its colours.
fn clap_exit(e: &clap::Error) -> i32 {
    let mut text = e.render().to_string();
    if let Some(tip) = value_tip(e) {
        text = format!("{}\n{tip}\n", text.trim_end_matches('\n'));
    }
    if e.use_stderr() {
        term::note(text.trim_end_matches('\n'));
    } else if let Err(err) = term::print(&text)
        && !matches!(err, Error::BrokenPipe)
    {
        return code(exit::FAILURE);
    }
    code(e.exit_code())
}

/// For an unexpected argument that starts with `-` right after an option that takes a value
/// (`update --remaining -x`, `export -o -q`): the tip to write the value attached
/// (`--remaining=-x`, `-o=-q`), which clap reads as the value. Found from clap's own
/// definition, so it holds for every such option of every command.
fn value_tip(e: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() != ErrorKind::UnknownArgument {
        return None;
    }
    let Some(ContextValue::String(bad)) = e.get(ContextKind::InvalidArg) else {
        return None;
    };
    let args: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let at = args.iter().position(|a| a == bad)?;
    let option = args.get(at.checked_sub(1)?)?;
    let cmd = pas_agent::cli::command();
    let sub = args[..at]
        .iter()
        .find_map(|a| cmd.find_subcommand(a))
        .unwrap_or(&cmd);
    let takes_value = |arg: &clap::Arg| {
        arg.get_num_args().is_none_or(|n| n.takes_values())
            && !matches!(
                arg.get_action(),
                clap::ArgAction::SetTrue
                    | clap::ArgAction::SetFalse
                    | clap::ArgAction::Count
                    | clap::ArgAction::Help
                    | clap::ArgAction::HelpShort
                    | clap::ArgAction::HelpLong
                    | clap::ArgAction::Version
            )
    };
    let known = sub.get_arguments().chain(cmd.get_arguments()).any(|arg| {
        takes_value(arg)
            && (option
                .strip_prefix("--")
                .is_some_and(|l| arg.get_long() == Some(l))
                || option
                    .strip_prefix('-')
                    .and_then(|s| s.chars().next().filter(|_| s.len() == 1))
                    .is_some_and(|c| arg.get_short() == Some(c)))
    });
    known.then(|| {
        format!(
            "  tip: to give '{bad}' as the value of '{option}', write it attached: '{option}={bad}'"
        )
    })
}

/// clap's plain rendering drops escape sequences from the arguments it quotes, so that
/// `--to $'cl\e[2Jaude'` reads as "invalid value 'claude'". Parsing the arguments again with
/// their unsafe characters shown as `?` gives the same error quoting what was really typed
/// (`cl?[2Jaude`); when that parse does not fail the same way, the first error stands.
fn visible(e: clap::Error) -> clap::Error {
    if !e.use_stderr() {
        return e;
    }
    let args: Vec<String> = std::env::args_os()
        .map(|a| term::clean(&a.to_string_lossy()))
        .collect();
    let changed = std::env::args_os()
        .zip(&args)
        .any(|(raw, shown)| raw.to_str() != Some(shown.as_str()));
    if !changed {
        return e;
    }
    match pas_agent::cli::parse_from(args) {
        Err(shown) if shown.kind() == e.kind() => shown,
        _ => e,
    }
}

/// Exit codes above 255 (possible on Windows) are passed on as the low byte.
fn code(c: i32) -> i32 {
    c & 0xff
}
