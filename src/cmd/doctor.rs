//! `pas-agent doctor`: what this set-up has and what needs attention — git and which reader
//! this repository takes, every agent in the table, the shell hooks and completions in the
//! start-up files, this session's health and the run registry's. Reads only: no lock is taken
//! and nothing is written (a lock is only tried, and let go at once).
//!
//! Exit 0 when nothing needs attention, 1 otherwise. Each problem names the command that
//! fixes it.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command as Process, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::print_json;
use crate::cli::JsonArgs;
use crate::error::{Error, Result};
use crate::hook::{Shell, quote_posix};
use crate::launch::process::Liveness;
use crate::launch::registry::{Registry, State};
use crate::model::RunState;
use crate::session::Project;
use crate::session::lock::LOCK_FILE;
use crate::term::{Out, clean, clean_line, style};

/// How long an agent's `--version` may take before it is reported as not answering.
const VERSION_TIMEOUT: Duration = Duration::from_secs(20);

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Level {
    /// All well.
    Ok,
    /// Worth knowing, nothing to fix (an agent not installed, no hook set up).
    Info,
    /// Needs attention: `doctor` exits 1.
    Problem,
}

/// One line of the report. `doctor --json` prints `{"ok": bool, "checks": [Check, …]}`.
#[derive(Debug, Serialize)]
struct Check {
    /// `git`, `agents`, `shell`, `session` or `registry`.
    area: &'static str,
    /// What was checked (`git`, `claude`, `bash hook`, `session file`, …).
    name: String,
    level: Level,
    /// What was found.
    detail: String,
    /// The command that fixes a problem (or sets up what is missing), when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    fix: Option<String>,
}

#[derive(Serialize)]
struct Report {
    ok: bool,
    checks: Vec<Check>,
}

fn check(area: &'static str, name: impl Into<String>, level: Level, detail: String) -> Check {
    Check {
        area,
        name: name.into(),
        level,
        detail,
        fix: None,
    }
}

impl Check {
    fn fix(mut self, fix: impl Into<String>) -> Check {
        self.fix = Some(fix.into());
        self
    }
}

fn shown(path: &Path) -> String {
    clean(&path.to_string_lossy())
}

pub fn run(args: JsonArgs) -> Result<i32> {
    let cwd = std::env::current_dir().map_err(|e| Error::io(".", e))?;
    let project = Project::find_opt(&cwd);
    let mut checks = Vec::new();
    git_checks(project.as_ref().map_or(&cwd, |p| &p.root), &mut checks);
    agent_checks(&mut checks);
    shell_checks(&mut checks);
    session_checks(project.as_ref(), &mut checks);
    registry_checks(&mut checks);
    let ok = !checks.iter().any(|c| c.level == Level::Problem);
    if args.json {
        print_json(&Report { ok, checks })?;
    } else {
        print_text(&checks, ok)?;
    }
    Ok(if ok { 0 } else { 1 })
}

fn print_text(checks: &[Check], ok: bool) -> Result<()> {
    let mut out = Out::new();
    let mut area = "";
    let width = checks
        .iter()
        .map(|c| unicode_width::UnicodeWidthStr::width(c.name.as_str()))
        .max()
        .unwrap_or(0);
    for c in checks {
        if c.area != area {
            area = c.area;
            if !out.is_empty() {
                out.push('\n');
            }
            out.paint(style::HEAD, area);
            out.push('\n');
        }
        let (mark, st) = match c.level {
            Level::Ok => ("ok", style::GOOD),
            Level::Info => ("--", style::DIM),
            Level::Problem => ("!!", style::BAD),
        };
        out.push_str("  ");
        out.paint(st, mark);
        let pad = width.saturating_sub(unicode_width::UnicodeWidthStr::width(c.name.as_str()));
        let _ = writeln!(out, " {}{}  {}", c.name, " ".repeat(pad), c.detail);
        if let Some(fix) = &c.fix {
            let _ = write!(out, "     {}", " ".repeat(width));
            // A problem's fix, or how to set up what is worth having.
            let label = if c.level == Level::Problem {
                "fix:"
            } else {
                "set up:"
            };
            out.paint(style::WARN, label);
            let _ = writeln!(out, " {fix}");
        }
    }
    out.push('\n');
    let problems = checks.iter().filter(|c| c.level == Level::Problem).count();
    if ok {
        out.paint(style::GOOD, "All well.");
    } else {
        out.paint(
            style::BAD,
            &crate::display::count(problems, "problem needs", "problems need"),
        );
        out.push_str(" attention.");
    }
    out.push('\n');
    out.print()
}

/// git on PATH and its version; which reader this repository takes and why.
fn git_checks(root: &Path, checks: &mut Vec<Check>) {
    match which::which("git") {
        Ok(path) => {
            let version = version_of(&path, &["--version"]);
            checks.push(check(
                "git",
                "git",
                Level::Ok,
                format!(
                    "{} ({})",
                    version.unwrap_or_else(|e| e),
                    shown(&path)
                ),
            ));
        }
        Err(_) => checks.push(
            check(
                "git",
                "git",
                Level::Problem,
                "not found on PATH: repositories the in-process reader cannot open (reftable refs, a sparse index) cannot be read, and `git` is not there for you either".into(),
            )
            .fix("install git (`sudo apt-get install git`, `brew install git`, …) or add its directory to PATH"),
        ),
    }
    match crate::git::try_for_root(root) {
        Ok(Some(repo)) => {
            let (reader, why) = repo.backend();
            let level = if reader == "git CLI" && which::which("git").is_err() {
                Level::Problem
            } else {
                Level::Ok
            };
            let mut c = check(
                "git",
                "repository",
                level,
                format!("{}: {reader}, {why}", shown(&repo.top)),
            );
            if level == Level::Problem {
                c = c.fix("install git: this repository is read with the git CLI");
            }
            checks.push(c);
        }
        Ok(None) => checks.push(check(
            "git",
            "repository",
            Level::Info,
            format!("{} is not in a git repository", shown(root)),
        )),
        Err(e) => checks.push(
            check(
                "git",
                "repository",
                Level::Problem,
                clean_line(&e.to_string()),
            )
            .fix("install git or put it on PATH, or unset PAS_AGENT_GIT"),
        ),
    }
}

/// The first line `program args…` prints, cleaned, or why there is none. Stdin is empty; a
/// program still running after [`VERSION_TIMEOUT`] is killed.
fn version_of(program: &Path, args: &[&str]) -> std::result::Result<String, String> {
    let mut child = Process::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run it: {e}"))?;
    let start = Instant::now();
    let mut pause = Duration::from_millis(5);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if start.elapsed() < VERSION_TIMEOUT => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(200));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "`{} --version` did not answer within {} s",
                    shown(program),
                    VERSION_TIMEOUT.as_secs()
                ));
            }
        }
    }
    let output = child
        .wait_with_output()
        .map_err(|e| format!("cannot read its output: {e}"))?;
    let text = String::from_utf8_lossy(&output.stdout);
    let text = if text.trim().is_empty() {
        String::from_utf8_lossy(&output.stderr)
    } else {
        text
    };
    let first = text.lines().map(str::trim).find(|l| !l.is_empty());
    match first {
        Some(line) => Ok(clean_line(line).chars().take(80).collect()),
        None if output.status.success() => Ok("version unknown".into()),
        None => Err(format!("`--version` failed ({})", output.status)),
    }
}

/// Every agent in the table: found on PATH (which executable) and its version. The version
/// commands run side by side.
fn agent_checks(checks: &mut Vec<Check>) {
    let found: Vec<(&crate::agents::Agent, Option<PathBuf>)> = crate::agents::launched()
        .map(|a| {
            let path = a.executables.iter().find_map(|e| which::which(e).ok());
            (a, path)
        })
        .collect();
    let versions: Vec<Option<std::result::Result<String, String>>> = std::thread::scope(|s| {
        let handles: Vec<_> = found
            .iter()
            .map(|(_, path)| s.spawn(move || path.as_ref().map(|p| version_of(p, &["--version"]))))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or(None))
            .collect()
    });
    for ((agent, path), version) in found.iter().zip(versions) {
        let c = match (path, version) {
            (Some(path), Some(Ok(v))) => check(
                "agents",
                agent.id,
                Level::Ok,
                format!("{v} ({})", shown(path)),
            ),
            (Some(path), Some(Err(why))) => check(
                "agents",
                agent.id,
                Level::Info,
                format!("{} is there, but: {why}", shown(path)),
            ),
            _ => check(
                "agents",
                agent.id,
                Level::Info,
                format!(
                    "not installed ({} not on PATH)",
                    agent.executables.join(", ")
                ),
            ),
        };
        checks.push(c);
    }
}

/// Which start-up files hold the hook and the completion line, for each shell.
fn shell_checks(checks: &mut Vec<Check>) {
    for shell in Shell::ALL {
        let files = crate::hook::startup_files(shell);
        let holding = |needle: &str| -> Vec<String> {
            files
                .iter()
                .filter(|f| {
                    crate::fsutil::read_limited(f, 1 << 20)
                        .ok()
                        .flatten()
                        .is_some_and(|b| {
                            String::from_utf8_lossy(&b)
                                .lines()
                                .any(|l| !l.trim_start().starts_with('#') && l.contains(needle))
                        })
                })
                .map(|f| home_relative(f))
                .collect()
        };
        let name = shell.name();
        let (hook_line, completion_line) = match shell {
            Shell::Bash => (
                "eval \"$(pas-agent hook bash)\"",
                "source <(pas-agent completions bash)",
            ),
            Shell::Zsh => (
                "eval \"$(pas-agent hook zsh)\"",
                "source <(pas-agent completions zsh)",
            ),
            Shell::Fish => (
                "pas-agent hook fish | source",
                "pas-agent completions fish | source",
            ),
            Shell::PowerShell => (
                "Invoke-Expression (& pas-agent hook powershell | Out-String)",
                "pas-agent completions powershell | Out-String | Invoke-Expression",
            ),
        };
        let target = files
            .first()
            .map(|f| home_relative(f))
            .unwrap_or_else(|| "the shell's start-up file".into());
        for (what, needle, line) in [
            ("hook", "pas-agent hook", hook_line),
            ("completions", "pas-agent completions", completion_line),
        ] {
            let found = holding(needle);
            let c = if found.is_empty() {
                check(
                    "shell",
                    format!("{name} {what}"),
                    Level::Info,
                    "not set up".into(),
                )
                .fix(format!("add `{line}` to {target}"))
            } else {
                check(
                    "shell",
                    format!("{name} {what}"),
                    Level::Ok,
                    format!("in {}", found.join(", ")),
                )
            };
            checks.push(c);
        }
    }
}

/// `~/x` for a path under HOME, cleaned.
fn home_relative(path: &Path) -> String {
    if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty())
        && let Ok(rest) = path.strip_prefix(&home)
    {
        return format!("~/{}", shown(rest));
    }
    shown(path)
}

/// Size, damage, stale checkpoint, lock and stale temp files of the session here.
fn session_checks(project: Option<&Project>, checks: &mut Vec<Check>) {
    let Some(project) = project else {
        checks.push(
            check(
                "session",
                "session",
                Level::Info,
                "no session in this directory or above".into(),
            )
            .fix("pas-agent init --task \"<what you are working on>\""),
        );
        return;
    };
    let path = project.session_path();
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let session = match project.load() {
        Ok(s) => {
            checks.push(check(
                "session",
                "session file",
                Level::Ok,
                format!(
                    "{} ({} KB, {} checkpoints, {} runs)",
                    shown(&path),
                    size.div_ceil(1024),
                    s.checkpoints.len(),
                    s.runs.len()
                ),
            ));
            Some(s)
        }
        Err(e) => {
            let fix = match &e {
                Error::Unmerged { .. } => "pas-agent resolve".to_string(),
                Error::TooLarge { .. } => "pas-agent prune".to_string(),
                _ if tracked(project, &path) => format!(
                    "git restore --source=HEAD -- {} (the last committed session; or fix the file by hand)",
                    quote_posix(&shown(&path))
                ),
                _ => format!(
                    "mv {} {}.damaged && pas-agent init (or fix the file by hand)",
                    quote_posix(&shown(&path)),
                    quote_posix(&shown(&path))
                ),
            };
            checks.push(
                check(
                    "session",
                    "session file",
                    Level::Problem,
                    clean_line(&e.to_string()),
                )
                .fix(fix),
            );
            None
        }
    };
    if size > crate::limits::SESSION_WARN_BYTES {
        checks.push(
            check(
                "session",
                "size",
                Level::Problem,
                format!(
                    "{} KB: every change rewrites it, and at {} it is refused",
                    size / 1024,
                    crate::limits::human(crate::limits::SESSION.bytes)
                ),
            )
            .fix("pas-agent prune"),
        );
    }
    if let Some(session) = &session {
        if !session.checkpoints.is_empty() {
            let seen = crate::git::Seen::of_root(
                &project.root,
                crate::git::Detail::Files,
                "the stale check is skipped",
            );
            match crate::stale::check(session, seen.tree.as_ref(), seen.repo.as_ref()) {
                Some(stale) => checks.push(
                    check(
                        "session",
                        "checkpoint",
                        Level::Problem,
                        clean_line(&stale.headline()),
                    )
                    .fix("pas-agent checkpoint \"<what changed>\""),
                ),
                None => checks.push(check(
                    "session",
                    "checkpoint",
                    Level::Ok,
                    "the latest checkpoint matches the work tree".into(),
                )),
            }
        }
        let running: Vec<_> = session
            .runs
            .iter()
            .filter(|r| r.state == RunState::Running)
            .collect();
        if !running.is_empty() {
            checks.push(check(
                "session",
                "runs",
                Level::Info,
                format!(
                    "{} marked running ({})",
                    running.len(),
                    running
                        .iter()
                        .map(|r| clean_line(&r.agent))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
    }
    let state = project.state_dir();
    let held = lock_held(&state.join(LOCK_FILE));
    checks.push(check(
        "session",
        "lock",
        Level::Ok,
        if held {
            "held now: a pas-agent command is changing the session".into()
        } else {
            "free".into()
        },
    ));
    let names: Vec<&str> = crate::agents::launched().map(|a| a.context_file).collect();
    let mut temps = crate::fsutil::temp_files_of(&state, None);
    temps.extend(crate::fsutil::temp_files_of(&project.root, Some(&names)));
    for temp in temps {
        let c = if held {
            check(
                "session",
                "temp file",
                Level::Info,
                format!("{} (a write under way)", shown(&temp)),
            )
        } else {
            check(
                "session",
                "temp file",
                Level::Problem,
                format!(
                    "{} was left by a write that was killed; nobody holds the lock, so nothing will finish it",
                    shown(&temp)
                ),
            )
            .fix(format!("rm -- {}", quote_posix(&shown(&temp))))
        };
        checks.push(c);
    }
}

/// Whether the session file is tracked by git (so that `git restore` can bring it back).
fn tracked(project: &Project, path: &Path) -> bool {
    which::which("git").is_ok()
        && Process::new("git")
            .arg("-C")
            .arg(&project.root)
            .args(["ls-files", "--error-unmatch", "--"])
            .arg(path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
}

/// Whether another process holds the lock at `path`: the lock is tried (never waited for) on
/// the file opened read-only, and let go at once. A missing file is not held.
fn lock_held(path: &Path) -> bool {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return false;
    };
    if !meta.is_file() {
        return false;
    }
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    match fs4::FileExt::try_lock(&file) {
        Ok(()) => {
            let _ = fs4::FileExt::unlock(&file);
            false
        }
        Err(fs4::TryLockError::WouldBlock) => true,
        Err(_) => false,
    }
}

/// The machine-wide run registry: readable, and whose entries' launchers are alive.
fn registry_checks(checks: &mut Vec<Check>) {
    let reg = match Registry::open() {
        Ok(r) => r,
        Err(e) => {
            checks.push(check(
                "registry",
                "run registry",
                Level::Info,
                clean_line(&e.to_string()),
            ));
            return;
        }
    };
    let file = reg.dir.join(crate::launch::registry::FILE);
    match reg.entries() {
        Ok(entries) => {
            // A frozen run's launcher is gone by design: only live ones count.
            let dead = entries
                .iter()
                .filter(|e| e.state == State::Live && e.liveness() == Liveness::Dead)
                .count();
            let frozen = entries.iter().filter(|e| e.state == State::Frozen).count();
            checks.push(check(
                "registry",
                "run registry",
                Level::Ok,
                format!(
                    "{} ({})",
                    shown(&file),
                    crate::display::count(entries.len(), "run listed", "runs listed")
                ),
            ));
            if frozen > 0 {
                checks.push(
                    check(
                        "registry",
                        "frozen runs",
                        Level::Info,
                        format!(
                            "{} waiting to be restored",
                            crate::display::count(frozen, "run is", "runs are")
                        ),
                    )
                    .fix("pas-agent restore --all"),
                );
            }
            if dead > 0 {
                checks.push(
                    check(
                        "registry",
                        "dead runs",
                        Level::Problem,
                        format!(
                            "{} listed as running, but their launchers are gone",
                            crate::display::count(dead, "run is", "runs are")
                        ),
                    )
                    .fix("pas-agent runs --all"),
                );
            }
        }
        Err(e) => checks.push(
            check(
                "registry",
                "run registry",
                Level::Problem,
                clean_line(&e.to_string()),
            )
            .fix(format!(
                "rm -- {} (it lists live and frozen runs: running launchers add themselves again, frozen runs are forgotten)",
                quote_posix(&shown(&file))
            )),
        ),
    }
}
