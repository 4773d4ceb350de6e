#![cfg_attr(all(target_os = "linux", target_env = "gnu", not(test)), no_main)]
//! The `pas-agent` binary: parse arguments, run the command, map errors to exit codes.
//!
//! On Linux with glibc the binary has its own C `main` (`no_main`): Rust's runtime start-up
//! (`std::rt::lang_start`) reads `/proc/self/maps` to find the main thread's stack guard, sets
//! up a signal stack and handlers that only print "stack overflow": 17 system calls, and about
//! a tenth of what `pas-agent prompt` costs in all (docs/performance.md, "Fifth round: the
//! prompt's start-up").
//! `runtime` keeps the parts of it that change what the program does: standard descriptors
//! that are closed get `/dev/null`, `SIGPIPE` is ignored, a panic exits with 101, and stdout
//! is flushed at exit. `std::env::args_os` needs nothing: on glibc, std takes the arguments
//! from an `.init_array` entry, before any `main` runs.

use pas_agent::cli::Command;
use pas_agent::error::{Error, exit};
use pas_agent::term;

#[cfg(all(target_os = "linux", target_env = "gnu", not(test)))]
mod runtime {
    /// The process's entry point, called by glibc's `__libc_start_main`: the runtime set-up
    /// std's would do that matters here, the command, then [`std::process::exit`] (which flushes
    /// stdout, as returning from std's `main` does).
    #[unsafe(no_mangle)]
    extern "C" fn main(_argc: libc::c_int, _argv: *const *const libc::c_char) -> libc::c_int {
        standard_fds();
        // As std's runtime does: a write to a closed pipe is an `EPIPE` error, not a signal.
        // Children get the default back: std's `Command` resets it before `exec`.
        // SAFETY: `signal` with `SIG_IGN` installs no handler code.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
        // A panic has printed its message through the hook; exit 101, as std's `main` does.
        let code = std::panic::catch_unwind(super::run).unwrap_or(101);
        std::process::exit(code)
    }

    /// Opens `/dev/null` on each of descriptors 0, 1 and 2 that is closed, lowest first (so it
    /// takes that number), as std's runtime does: otherwise the first file opened would become
    /// stdout, and output would be written into it. Aborts if `/dev/null` cannot be opened.
    fn standard_fds() {
        let mut fds = [0, 1, 2].map(|fd| libc::pollfd {
            fd,
            events: 0,
            revents: 0,
        });
        // SAFETY: `fds` is a valid array of three `pollfd`s; a timeout of 0 never blocks.
        let polled = unsafe { libc::poll(fds.as_mut_ptr(), 3, 0) } != -1;
        for pollfd in fds {
            let closed = if polled {
                pollfd.revents & libc::POLLNVAL != 0
            } else {
                // SAFETY: `F_GETFD` only reads the descriptor's flags.
                let flags = unsafe { libc::fcntl(pollfd.fd, libc::F_GETFD) };
                flags == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EBADF)
            };
            // SAFETY: a NUL-terminated path and plain flags.
            if closed && unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) } == -1 {
                std::process::abort();
            }
        }
    }
}

/// Elsewhere, and in the unit-test build (whose harness brings its own `main`), std's start-up.
#[cfg(any(not(all(target_os = "linux", target_env = "gnu")), test))]
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
