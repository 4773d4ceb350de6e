//! The `pas-agent` binary: parse arguments, run the command, map errors to exit codes.

use std::process::ExitCode;

use clap::Parser;
use pas_agent::cli::Cli;
use pas_agent::error::{Error, exit};

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(dir) = &cli.dir
        && let Err(e) = std::env::set_current_dir(dir)
    {
        eprintln_safe(&format!(
            "error: cannot change to {}: {e}",
            pas_agent::term::clean(&dir.to_string_lossy())
        ));
        return code(exit::USAGE);
    }
    match pas_agent::cmd::dispatch(cli.command) {
        Ok(c) => code(c),
        Err(Error::BrokenPipe) => code(exit::OK),
        Err(e) => {
            eprintln_safe(&format!("error: {e}"));
            code(e.exit_code())
        }
    }
}

fn eprintln_safe(message: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{message}");
}

/// Exit codes above 255 (possible on Windows) are passed on as the low byte.
fn code(c: i32) -> ExitCode {
    ExitCode::from((c & 0xff) as u8)
}
