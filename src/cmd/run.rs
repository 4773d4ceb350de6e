//! `pas-agent run [AGENT] [--resume] [--no-pty] [-- ARGS...]`: the launcher.

use std::ffi::OsString;

use chrono::Utc;
use uuid::Uuid;

use super::cwd;
use crate::agents::Agent;
use crate::cli::RunArgs;
use crate::display::{count, duration};
use crate::error::{Error, Result, exit};
use crate::export;
use crate::launch::{self, Plan, capture, plain, record, session_id, signals};
use crate::session::Project;
use crate::term::{clean, clean_line, note, warn};

/// Environment variable: any value but empty or `0` turns the pseudo-terminal off, as
/// `--no-pty` does.
pub const NO_PTY_ENV: &str = "PAS_AGENT_NO_PTY";

pub fn run(args: RunArgs) -> Result<i32> {
    let program = args
        .agent
        .clone()
        .or_else(|| args.args.first().map(|a| a.to_string_lossy().into_owned()));
    match launch_and_record(args) {
        Ok(code) => Ok(code),
        // The launcher's own failures exit 125 (126/127 for the program), so they are never
        // confused with the agent's exit codes (docs/commands.md, "Exit codes").
        Err(e @ (Error::Launch { .. } | Error::Usage(_))) => Err(e),
        Err(Error::BrokenPipe) => Ok(exit::OK),
        Err(e) => {
            // Typed through the shell hook, the user may not know pas-agent is involved: say
            // how to start the program without it (only the agents' commands are wrapped).
            let hint = program
                .filter(|p| crate::agents::executables().contains(&p.as_str()))
                .map(|p| {
                    format!(
                        "\n  hint: to start {0} without pas-agent: `command {0}` (or PAS_AGENT_WRAP=0 for the shell hook)",
                        clean_line(&p)
                    )
                })
                .unwrap_or_default();
            Err(Error::Launch {
                message: format!("{e}{hint}"),
                code: exit::LAUNCHER_FAILED,
            })
        }
    }
}

/// Why the agent did not run.
enum NotStarted {
    /// It could not be started.
    Failed(Error),
    /// This signal asked the launcher to stop before it was started.
    #[cfg_attr(not(unix), allow(dead_code))]
    Signal(i32),
}

fn launcher_error(message: String) -> Error {
    Error::Launch {
        message,
        code: exit::LAUNCHER_FAILED,
    }
}

/// The user's arguments turned into the agent's: the agent's resume syntax with the id of its
/// latest recorded session (`--resume`) or the one `selected` (`--resume SELECTOR`), or the
/// flag that chooses a new session's id; plus `context`, the arguments that make it read the
/// file the session is in. Returns `(args, chosen id, resumed id)`.
fn agent_args(
    agent: Option<&'static Agent>,
    user: Vec<OsString>,
    resume: bool,
    selected: Option<String>,
    project: &Project,
    cwd: &std::path::Path,
    context: Vec<OsString>,
) -> Result<(Vec<OsString>, Option<String>, Option<String>)> {
    let (mut args, chosen, resumed) = match (agent, resume) {
        (None, true) => {
            return Err(Error::Usage(
                "--resume needs a known agent (`pas-agent run codex --resume`), not a plain program".into(),
            ));
        }
        (Some(a), true) if a.resume.is_some_and(|r| r.mentioned_in(&user)) => {
            return Err(Error::Usage(format!(
                "--resume would add {}'s own resume arguments, and yours already choose a session; drop one of them",
                a.name
            )));
        }
        (Some(a), true) => {
            let syntax = a.resume.ok_or_else(|| {
                launcher_error(format!(
                    "{} has no known way to resume a session by id",
                    a.name
                ))
            })?;
            let session = project.load()?;
            // Agents keep sessions per directory: the latest one started here, else the
            // latest one anywhere in the project.
            let here = cwd.to_string_lossy();
            let latest = |same_dir: bool| {
                session
                    .runs
                    .iter()
                    .rev()
                    .filter(|r| r.agent == a.id && (!same_dir || r.cwd == here))
                    .find_map(|r| r.agent_session_id.clone())
            };
            let id = selected
                .or_else(|| latest(true))
                .or_else(|| latest(false))
                .ok_or_else(|| {
                    launcher_error(format!(
                        "no {} session is recorded in this project, so there is nothing to resume\n  hint: start one with `pas-agent run {}`; `pas-agent runs` lists the runs",
                        a.name,
                        a.aliases.first().copied().unwrap_or(a.id)
                    ))
                })?;
            // The id comes from session.json, which a cloned repository controls: only an id
            // of the agent's own shape (never starting with `-`) reaches its command line.
            if !a.id_shape.accepts(&id) {
                return Err(launcher_error(format!(
                    "the session id recorded for {} in {}, `{}`, is not a {} session id, so it is not passed to {}; nothing was started\n  hint: start a new session with `pas-agent run {}`",
                    a.name,
                    project.session_path().display(),
                    crate::term::clean(&id),
                    a.name,
                    a.name,
                    a.aliases.first().copied().unwrap_or(a.id)
                )));
            }
            (syntax.apply(&id, &user), None, Some(id))
        }
        (Some(a), false) => {
            let prepared = session_id::prepare(a, &user);
            let mut args = prepared.args;
            args.extend(user);
            (args, prepared.id, None)
        }
        (None, false) => (user, None, None),
    };
    let mut with = context;
    with.append(&mut args);
    Ok((with, chosen, resumed))
}

/// Says that `agent`'s file `tracked` is tracked by git and the agent has no other file that
/// could take the session: it gets it from pas-agent's start hook when that is installed,
/// else not at all, with the ways to give it.
fn tracked_without_private(project: &Project, agent: &'static Agent, tracked: &std::path::Path) {
    let file = clean(&export::shown(&project.root, tracked));
    let hooks = crate::integrate::all().find(|i| i.agent.id == agent.id);
    match hooks {
        Some(i) if crate::integrate::start_hook_installed(&i, &project.root) => note(&format!(
            "pas-agent: {file} is tracked by git, so the session is not written into it; {} gets it from pas-agent's SessionStart hook",
            agent.name
        )),
        _ => {
            let integrate = hooks.map_or_else(String::new, |i| {
                format!(
                    "`pas-agent integrate {}` gives it the session through its hook; ",
                    i.key()
                )
            });
            warn(&format!(
                "{file} is tracked by git, so the session is not written into it, and {} has no other file pas-agent can use: it starts without the session\n  hint: {integrate}`pas-agent export --to {}` writes {file} anyway",
                agent.name, agent.id
            ));
        }
    }
}

fn pty_wanted(args: &RunArgs) -> bool {
    let off = std::env::var_os(NO_PTY_ENV).is_some_and(|v| !v.is_empty() && v != "0");
    #[cfg(unix)]
    {
        !args.no_pty && !off && launch::pty::wanted()
    }
    #[cfg(not(unix))]
    {
        let _ = (args, off);
        false
    }
}

/// The `pas-agent run` options a restore of this run passes again.
fn carried_options(args: &RunArgs) -> Vec<String> {
    let mut out = Vec::new();
    for (on, flag) in [
        (args.no_checkpoint, "--no-checkpoint"),
        (args.no_export, "--no-export"),
        (args.no_pty, "--no-pty"),
        (args.mcp, "--mcp"),
    ] {
        if on {
            out.push(flag.to_string());
        }
    }
    if let Some(to) = &args.to {
        out.push(format!("--to={to}"));
    }
    out
}

/// The terminal's size and the tmux pane this run is in (only tmux is asked, and only inside
/// tmux).
fn whereabouts(
    use_pty: bool,
) -> (
    Option<launch::registry::Size>,
    Option<launch::registry::TmuxPlace>,
) {
    #[cfg(unix)]
    let size = use_pty
        .then(|| {
            launch::terminal::size(std::os::fd::AsFd::as_fd(&std::io::stdout())).map(|s| {
                launch::registry::Size {
                    cols: s.cols,
                    rows: s.rows,
                }
            })
        })
        .flatten();
    #[cfg(not(unix))]
    let size = {
        let _ = use_pty;
        None
    };
    match launch::tmux::here() {
        Some((server, pane)) => match server.place(&pane) {
            Some((place, pane_size)) => (size.or(Some(pane_size)), Some(place)),
            None => (
                size,
                Some(launch::registry::TmuxPlace {
                    socket: server.socket.to_string_lossy().into_owned(),
                    pane,
                    session: None,
                    window: None,
                    window_index: None,
                    pane_index: None,
                }),
            ),
        },
        None => (size, None),
    }
}

fn launch_and_record(args: RunArgs) -> Result<i32> {
    let mut cwd = cwd()?;
    let use_pty = pty_wanted(&args);
    let options = carried_options(&args);
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
    // `claude --version`, `codex login`, `gemini mcp list`: no agent session starts, so there
    // is nothing to record, checkpoint or export (the agent table says which lines these are).
    if let Some(agent) = program.agent
        && args.resume.is_none()
        && agent.straight.matches(&rest)
    {
        #[cfg(unix)]
        let watch = signals::Watch::install(&signals::caught(false))?;
        #[cfg(not(unix))]
        let watch = signals::Watch::install(&[])?;
        let ran = plain::run(&program.path, &program.name, &rest, &[], &cwd, &watch)?;
        return Ok(ran.exit.launcher_code());
    }
    // Every signal is caught from before the run record is written to the end (see
    // `launch::signals::TABLE`): none can end the launcher with the run half-recorded.
    #[cfg(unix)]
    let watch = {
        signals::install_fault_handlers();
        let watch = signals::Watch::install(&signals::caught(use_pty))?;
        watch.flag(&signals::stop_before_start(use_pty))?;
        watch
    };
    #[cfg(not(unix))]
    let watch = signals::Watch::install(&[])?;
    let project = super::project()?;
    let restoring = match args.restoring.as_deref() {
        Some(t) => Some(launch::freeze::Token::decode(t).ok_or_else(|| {
            Error::Usage(format!(
                "`{}` is not a restore token (`pas-agent restore` gives one)",
                clean_line(t)
            ))
        })?),
        None => None,
    };
    // `--resume SELECTOR`: the session it names, resumed in the directory it was started in.
    let selected = match (args.resume.as_deref().map(str::trim), program.agent) {
        (Some(sel), Some(agent)) if !sel.is_empty() => {
            let session = project.load()?;
            let dirs = launch::resume::directories(&project.root, &cwd, &session.runs);
            let known =
                launch::resume::conversations(agent, Some(&program.path), &dirs, &session.runs);
            let choice = launch::resume::resolve(agent, sel, &known, &session.runs, &cwd)
                .map_err(launcher_error)?;
            if !crate::agents::store::same_dir(&choice.cwd.to_string_lossy(), &cwd) {
                note(&format!(
                    "pas-agent: resuming {} session {} in {}, where it was started",
                    agent.name,
                    clean_line(&choice.id),
                    clean(&choice.cwd.to_string_lossy())
                ));
                cwd = choice.cwd;
            }
            Some(choice.id)
        }
        _ => None,
    };
    let run_id = Uuid::new_v4();
    // Where the session goes for this run (docs/commands.md, "Where the block goes"): decided
    // before the command line, which may name the file.
    let export_agent = if args.no_export {
        None
    } else {
        args.to
            .as_deref()
            .and_then(crate::agents::by_name)
            .or(program.agent)
    };
    let delivery = export_agent.map(|a| {
        let run_file = project
            .root
            .join(capture::RUNS_DIR)
            .join(run_id.to_string())
            .join("context.md");
        let repo = crate::git::for_root(&project.root);
        (
            a,
            export::delivery::for_run(a, &project.root, repo.as_ref(), &run_file),
        )
    });
    let context = match (program.agent, &delivery) {
        (Some(a), Some((b, d))) if a.id == b.id => d.args.clone(),
        (Some(a), None) if project.root.join(a.context_file).exists() => a.context_args(),
        _ => Vec::new(),
    };
    let user_args: Vec<String> = rest
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let (mut agent_args, chosen, resumed) = agent_args(
        program.agent,
        rest,
        args.resume.is_some(),
        selected,
        &project,
        &cwd,
        context,
    )?;
    if args.mcp {
        let exe = std::env::current_exe().map_err(|e| Error::io("the pas-agent executable", e))?;
        let mut with = super::mcp::run_args(program.agent, &exe, &project.root)?;
        with.append(&mut agent_args);
        agent_args = with;
    }

    // Where a restore would bring it back: only agents are restored.
    let (terminal, tmux) = if program.agent.is_some() {
        whereabouts(use_pty)
    } else {
        (None, None)
    };
    let capture = match capture::limit().filter(|_| use_pty) {
        Some(limit) => match capture::Capture::create(&project.root, &run_id, limit) {
            Ok(c) => Some(c),
            Err(e) => {
                warn(&format!("the agent's output is not captured: {e}"));
                None
            }
        },
        None => None,
    };
    let plan = Plan {
        run_id,
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
        argv: launch::argv(&program, &agent_args),
        cwd: cwd.clone(),
        checkpoint: !args.no_checkpoint,
        export: delivery
            .as_ref()
            .and_then(|(a, d)| export::Target::for_run(&project, a, d)),
        capture: capture.as_ref().map(|_| capture::paths(&run_id).0),
        agent_session_id: resumed.clone(),
        chosen: chosen.clone(),
        user_args,
        options,
        terminal,
        tmux,
        restoring,
    };
    let started = match record::before(&project, &plan) {
        Ok(started) => started,
        // A session left unmerged by git is no reason to keep the user from their agent: it
        // starts without a record, and the user is told how to resolve the session.
        Err(e @ Error::Unmerged { .. }) => {
            warn(&format!(
                "{e}\n  the agent starts without a run record, checkpoint or export"
            ));
            drop(capture);
            let ran = plain::run(&program.path, &program.name, &agent_args, &[], &cwd, &watch)?;
            return Ok(ran.exit.launcher_code());
        }
        Err(e) => return Err(e),
    };
    match (&started.export, &delivery) {
        (Some(Ok(report)), _) => {
            let shown = clean(&report.target.shown());
            let name = report.target.agent.name;
            match &report.target.why {
                export::Why::Private { tracked, .. } => note(&format!(
                    "pas-agent: exported the session to {shown} for {name}: {} is tracked by git, and git ignores {shown}",
                    clean(&export::shown(&project.root, tracked))
                )),
                _ => note(&format!(
                    "pas-agent: exported the session to {shown} for {name}"
                )),
            }
            for warning in report.warnings(&shown) {
                warn(&warning);
            }
        }
        (Some(Err(e)), _) => warn(&format!("export skipped, the agent starts without it: {e}")),
        (None, Some((a, d))) => {
            if let Some(tracked) = &d.tracked {
                tracked_without_private(&project, a, tracked);
            }
        }
        (None, None) => {}
    }
    for (number, agent, pid) in &started.others {
        let pid = pid.map_or_else(String::new, |p| format!(", pid {p}"));
        warn(&format!(
            "run #{number} ({}{pid}) is still running in this project: two agents now share this work tree",
            clean_line(agent)
        ));
    }
    let mut env = vec![(launch::RUN_ID_ENV, started.run_id.to_string())];
    if matches!(started.export, Some(Ok(_))) {
        env.extend(delivery.iter().flat_map(|(_, d)| d.env.iter().cloned()));
    }
    // Which of the agent's session files its processes hold open: the run's own session, even
    // when another run of the agent starts one in this directory at the same moment.
    let witness = program
        .agent
        .filter(|_| chosen.is_none())
        .and_then(session_id::store_dir)
        .and_then(launch::witness::Witness::start);
    let started_at = Utc::now();
    // A signal that came while the run was prepared (checkpoint, export, record) and that
    // would have gone to the agent: the user or the system asked to stop before it started.
    // A fault signal (`kill -SEGV`) sent meanwhile counts the same.
    let stopped = watch.stop_requested();
    #[cfg(unix)]
    let stopped = stopped.or_else(signals::take_pending_fault);
    watch.started();
    // Without Unix signals nothing is flagged (`stopped` is `None`) and there is no pty.
    #[cfg(not(unix))]
    drop(capture);
    let result = match stopped {
        Some(signal) => Err(NotStarted::Signal(signal)),
        #[cfg(unix)]
        None if use_pty => launch::pty::run(
            &program.path,
            &program.name,
            &agent_args,
            &env,
            &cwd,
            capture,
            &watch,
        )
        .map_err(NotStarted::Failed),
        None => plain::run(
            &program.path,
            &program.name,
            &agent_args,
            &env,
            &cwd,
            &watch,
        )
        .map_err(NotStarted::Failed),
    };
    let held = witness
        .map(launch::witness::Witness::finish)
        .unwrap_or_default();
    // What was made for this run only goes now that the agent has read it.
    if let Some((_, d)) = &delivery {
        export::delivery::clean_up(d);
    }
    let ran = match result {
        Ok(ran) => ran,
        Err(why) => {
            if let Err(forget) = record::forget(&project, &started) {
                warn(&format!(
                    "could not remove the record of the run that did not start: {forget}"
                ));
            }
            if plan.capture.is_some() {
                let _ = std::fs::remove_dir_all(
                    project
                        .root
                        .join(capture::RUNS_DIR)
                        .join(run_id.to_string()),
                );
            }
            return match why {
                NotStarted::Failed(e) => Err(e),
                NotStarted::Signal(signal) => {
                    note(&format!(
                        "pas-agent: signal {signal} arrived before {} started: it was not started, and the run is not recorded",
                        clean(&plan.label)
                    ));
                    Ok(128 + signal)
                }
            };
        }
    };
    let exit = ran.exit;
    let ended_at = Utc::now();
    let capture_txt = plan
        .capture
        .as_ref()
        .map(|_| project.root.join(capture::paths(&run_id).1));
    let agent_session = program
        .agent
        .map_or_else(session_id::Found::default, |agent| {
            let finished = session_id::RunFacts {
                agent,
                program: &program.path,
                cwd: &cwd,
                started: started_at,
                ended: ended_at,
                chosen: chosen.as_deref(),
                capture_txt: capture_txt.as_deref(),
                taken: &started.taken,
                held: &held,
            };
            match &resumed {
                Some(id) => session_id::after_resume(&finished, id),
                None => session_id::discover(&finished),
            }
        });
    let words = record::words(program.agent, &agent_session, &cwd, started_at);
    match record::finish(&project, &plan, started, exit, agent_session, &words) {
        Ok(done) => {
            if let Some(why) = &done.session_note {
                warn(&format!(
                    "no {} session id is recorded for this run: {why}",
                    clean_line(&plan.label)
                ));
            }
            let run = &done.run;
            // Words that should have been there and are not: say why (an unknown session id
            // is said above, or is the agent's way).
            if let Some(t) = &run.transcript
                && run.agent_session_id.is_some()
                && !t.has_words()
                && let Some(why) = &t.missing
            {
                warn(&format!(
                    "{}'s own words are not in the run record: {}",
                    clean_line(&plan.label),
                    clean_line(why)
                ));
            }
            let how = match (exit.code, exit.signal) {
                (Some(c), _) => format!("exited {c}"),
                (None, Some(s)) => format!("was killed by signal {s}"),
                _ => "ended".into(),
            };
            let session = run
                .agent_session_id
                .as_deref()
                .map_or_else(String::new, |id| format!(", session {}", clean_line(id)));
            // A reset or a checkout moves HEAD without new commits: say so.
            let moved = match (&run.head_before, &run.head_after) {
                (before, Some(after))
                    if run.commits.is_empty() && before.as_ref() != Some(after) =>
                {
                    format!(
                        "; HEAD moved {} → {}",
                        crate::stale::short(before),
                        crate::stale::short(&run.head_after)
                    )
                }
                _ => String::new(),
            };
            // After a `^C` echo (or output that ended mid-line) the summary starts on a line
            // of its own.
            let fresh = if ran.mid_line { "\n" } else { "" };
            // Outside git no file or commit is tracked: "0 files changed" would be untrue.
            let changes = if matches!(crate::git::try_for_root(&project.root), Ok(None)) {
                "files and commits are not tracked here (not a git repository)".to_string()
            } else {
                format!(
                    "{}, {} changed{moved}",
                    count(run.commits.len(), "commit", "commits"),
                    count(run.files_changed.len(), "file", "files"),
                )
            };
            if done.frozen {
                note(&format!(
                    "{fresh}pas-agent: {} frozen after {} (run #{}{session}); `pas-agent restore {}` brings it back",
                    clean(&plan.label),
                    duration(run.duration_ms.unwrap_or(0)),
                    done.number,
                    &plan.run_id.simple().to_string()[..8]
                ));
                return Ok(exit.launcher_code());
            }
            note(&format!(
                "{fresh}pas-agent: {} {how} after {}; {changes} (run #{}{session}, `pas-agent runs`)",
                clean(&plan.label),
                duration(run.duration_ms.unwrap_or(0)),
                done.number
            ));
        }
        Err(Error::NoSession { .. }) => warn(&format!(
            "the session ({}) was deleted while {} ran, so this run ({}) is not recorded; nothing was recreated",
            clean(&project.state_dir().to_string_lossy()),
            clean(&plan.label),
            record::describe(exit)
        )),
        Err(e) => warn(&format!(
            "the outcome of this run ({} {}) could not be written to the session: {e}",
            clean(&plan.label),
            record::describe(exit)
        )),
    }
    Ok(exit.launcher_code())
}
