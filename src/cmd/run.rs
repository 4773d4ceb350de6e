//! `pas-agent run [AGENT] [-- ARGS...]`: the launcher.

use std::ffi::OsString;

use super::cwd;
use crate::cli::RunArgs;
use crate::display::{count, duration};
use crate::error::{Error, Result, exit};
use crate::launch::{self, Plan, plain, record};
use crate::session::Project;
use crate::term::{clean, note, warn};

pub fn run(args: RunArgs) -> Result<i32> {
    match launch_and_record(args) {
        Ok(code) => Ok(code),
        // The launcher's own failures exit 125 (126/127 for the program), so they are never
        // confused with the agent's exit codes (SPEC §7).
        Err(e @ Error::Launch { .. }) => Err(e),
        Err(Error::BrokenPipe) => Ok(exit::OK),
        Err(e) => Err(Error::Launch {
            message: e.to_string(),
            code: exit::LAUNCHER_FAILED,
        }),
    }
}

fn launch_and_record(args: RunArgs) -> Result<i32> {
    let cwd = cwd()?;
    let mut rest: Vec<OsString> = args.args;
    let name = match args.agent {
        Some(a) => a,
        None if !rest.is_empty() => rest.remove(0).to_string_lossy().into_owned(),
        None => {
            return Err(Error::Usage(
                "nothing to run: name an agent (`pas-agent run codex`) or a program after `--` (`pas-agent run -- make test`)".into(),
            ));
        }
    };
    let program = launch::resolve(&name, &cwd)?;
    let project = Project::find(&cwd)?;
    let plan = Plan {
        label: program.agent.map_or_else(
            || {
                std::path::Path::new(&program.name).file_name().map_or_else(
                    || program.name.clone(),
                    |n| n.to_string_lossy().into_owned(),
                )
            },
            |a| a.id.to_string(),
        ),
        agent: program.agent,
        argv: launch::argv(&program, &rest),
        cwd: cwd.clone(),
        checkpoint: !args.no_checkpoint,
        export: !args.no_export,
    };
    let started = record::before(&project, &plan)?;
    match &started.export {
        Some(Ok(report)) => note(&format!(
            "pas-agent: exported the session to {} for {}",
            clean(&report.target.path.to_string_lossy()),
            plan.agent.map_or("the agent", |a| a.name)
        )),
        Some(Err(e)) => warn(&format!("export skipped, the agent starts without it: {e}")),
        None => {}
    }
    let env = [(launch::RUN_ID_ENV, started.run_id.to_string())];
    let exit = match plain::run(&program.path, &program.name, &rest, &env) {
        Ok(exit) => exit,
        Err(e) => {
            if let Err(forget) = record::forget(&project, &started) {
                warn(&format!(
                    "could not remove the record of the run that did not start: {forget}"
                ));
            }
            return Err(e);
        }
    };
    match record::finish(&project, &plan, started, exit) {
        Ok(done) => {
            let run = &done.run;
            let how = match (exit.code, exit.signal) {
                (Some(c), _) => format!("exited {c}"),
                (None, Some(s)) => format!("was killed by signal {s}"),
                _ => "ended".into(),
            };
            note(&format!(
                "pas-agent: {} {how} after {}; {}, {} changed (run #{}, `pas-agent runs`)",
                clean(&plan.label),
                duration(run.duration_ms.unwrap_or(0)),
                count(run.commits.len(), "commit", "commits"),
                count(run.files_changed.len(), "file", "files"),
                done.number
            ));
        }
        Err(e) => warn(&format!("the run could not be recorded: {e}")),
    }
    Ok(exit.launcher_code())
}
