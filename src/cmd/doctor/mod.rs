//! `pas-agent doctor`: what this set-up has and what needs attention — git and which reader
//! this repository takes, the agents installed, pas-agent's entries in the agents' own
//! settings (lifecycle hooks, their approval, MCP servers), the shell hooks and completions,
//! this session's health and the run registry's. Reads only: no lock is taken and nothing is
//! written (a lock is only tried, and let go at once), and no agent is started: an agent's
//! version is read from the package it was installed from.
//!
//! Exit 0 when nothing needs attention, 1 otherwise. Each problem names the command that
//! fixes it; what is only worth knowing (an agent not installed, HEAD moved since the last
//! checkpoint) is information and never fails `doctor`.
//!
//! Adding a finding: write a function `fn(&Context, &mut Vec<Check>)` in the file of its area
//! (or a new file here) and add it to [`CHECKS`]. [`Context`] has what several checks share
//! (the project, its session loaded once, this binary, [`Context::runs`] to tell which
//! pas-agent a command line starts); [`Check::ok`], [`Check::info`] and [`Check::problem`]
//! make the lines, [`Check::fix`] adds the command that fixes a problem. A session that cannot
//! be read gets its fix from [`session::fix_for`].

mod integrations;
mod session;
mod shell;
mod system;

use std::cell::OnceCell;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::print_json;
use crate::cli::JsonArgs;
use crate::error::{Error, Result};
use crate::session::{Project, Session};
use crate::term::{Out, clean, style};

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// All well.
    Ok,
    /// Worth knowing, nothing to fix (an agent not installed, no hook set up, HEAD moved).
    Info,
    /// Needs attention: `doctor` exits 1.
    Problem,
}

/// One line of the report. `doctor --json` prints `{"ok": bool, "checks": [Check, …]}`.
#[derive(Debug, Serialize)]
pub struct Check {
    /// `git`, `agents`, `integrations`, `shell`, `session` or `registry` (set from [`CHECKS`]).
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

impl Check {
    fn new(level: Level, name: impl Into<String>, detail: impl Into<String>) -> Check {
        Check {
            area: "",
            name: name.into(),
            level,
            detail: detail.into(),
            fix: None,
        }
    }

    /// All well.
    pub fn ok(name: impl Into<String>, detail: impl Into<String>) -> Check {
        Check::new(Level::Ok, name, detail)
    }

    /// Worth knowing; does not fail `doctor`.
    pub fn info(name: impl Into<String>, detail: impl Into<String>) -> Check {
        Check::new(Level::Info, name, detail)
    }

    /// Needs attention; give it a [`Check::fix`].
    pub fn problem(name: impl Into<String>, detail: impl Into<String>) -> Check {
        Check::new(Level::Problem, name, detail)
    }

    /// The command that fixes the problem, or sets up what is missing.
    pub fn fix(mut self, fix: impl Into<String>) -> Check {
        self.fix = Some(fix.into());
        self
    }
}

/// A check: adds its lines for what it finds in the context.
type CheckFn = fn(&Context, &mut Vec<Check>);

/// Every check, in the order the report shows them, with its area.
const CHECKS: &[(&str, CheckFn)] = &[
    ("git", system::git),
    ("agents", system::agents),
    ("integrations", integrations::hooks),
    ("integrations", integrations::mcp),
    ("shell", shell::checks),
    ("session", session::checks),
    ("registry", session::registry),
];

/// What the checks share.
pub struct Context {
    /// The current directory.
    pub cwd: PathBuf,
    /// The session's project here, if there is one.
    pub project: Option<Project>,
    session: OnceCell<std::result::Result<Session, Error>>,
    /// This binary, links resolved.
    pub me: Option<PathBuf>,
    /// The `pas-agent` found on `PATH`, links resolved.
    on_path: Option<PathBuf>,
}

/// Which pas-agent a command line starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Runs {
    /// This binary.
    Me,
    /// Another pas-agent that exists there.
    Other(PathBuf),
    /// None: why (not on `PATH`, no such file).
    Missing(String),
}

impl Context {
    fn new(cwd: PathBuf) -> Context {
        let project = Project::find_opt(&cwd);
        Context {
            cwd,
            project,
            session: OnceCell::new(),
            me: std::env::current_exe()
                .ok()
                .and_then(|p| p.canonicalize().ok()),
            on_path: which::which("pas-agent")
                .ok()
                .and_then(|p| p.canonicalize().ok()),
        }
    }

    /// The session here, loaded once: `None` outside a session, `Err` when it cannot be read.
    pub fn session(&self) -> Option<&std::result::Result<Session, Error>> {
        let project = self.project.as_ref()?;
        Some(self.session.get_or_init(|| project.load()))
    }

    /// Which pas-agent the program word `program` of a command line starts (`pas-agent`, found
    /// on `PATH`, or a path, possibly in single or double quotes).
    pub fn runs(&self, program: &str) -> Runs {
        let word = program.trim();
        let word = word
            .strip_prefix('\'')
            .and_then(|w| w.strip_suffix('\''))
            .or_else(|| word.strip_prefix('"').and_then(|w| w.strip_suffix('"')))
            .unwrap_or(word);
        let found = if word.contains('/') {
            let path = expand_home(word);
            match path.canonicalize() {
                Ok(p) => p,
                Err(_) => return Runs::Missing(format!("{} does not exist", clean(word))),
            }
        } else {
            match (&self.on_path, word == "pas-agent") {
                (Some(p), true) => p.clone(),
                (None, true) => return Runs::Missing("`pas-agent` is not on PATH".into()),
                (_, false) => match which::which(word).ok().and_then(|p| p.canonicalize().ok()) {
                    Some(p) => p,
                    None => return Runs::Missing(format!("`{}` is not on PATH", clean(word))),
                },
            }
        };
        if self.me.as_ref() == Some(&found) {
            Runs::Me
        } else {
            Runs::Other(found)
        }
    }

    /// This binary, for people.
    pub fn me_shown(&self) -> String {
        self.me
            .as_deref()
            .map(shown)
            .unwrap_or_else(|| "this pas-agent".into())
    }
}

/// `~/x` → `$HOME/x`.
fn expand_home(word: &str) -> PathBuf {
    match (word.strip_prefix("~/"), crate::agents::store::home()) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => PathBuf::from(word),
    }
}

#[derive(Serialize)]
struct Report {
    ok: bool,
    checks: Vec<Check>,
}

/// A path for people, cleaned.
pub fn shown(path: &Path) -> String {
    clean(&path.to_string_lossy())
}

/// `path` as a word of a shell command line: `~/x` under HOME, the path itself when it has
/// nothing a shell would read otherwise, else in single quotes.
pub fn shell_path(path: &Path) -> String {
    let safe = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"/._-+,@%=".contains(&b))
    };
    let whole = path.to_string_lossy();
    if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty())
        && let Ok(rest) = path.strip_prefix(&home)
        && safe(&rest.to_string_lossy())
    {
        return format!("~/{}", rest.to_string_lossy());
    }
    if safe(&whole) {
        whole.into_owned()
    } else {
        crate::hook::quote_posix(&clean(&whole))
    }
}

/// `~/x` for a path under HOME, cleaned.
pub fn home_relative(path: &Path) -> String {
    if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty())
        && let Ok(rest) = path.strip_prefix(&home)
    {
        return format!("~/{}", shown(rest));
    }
    shown(path)
}

pub fn run(args: JsonArgs) -> Result<i32> {
    let cwd = std::env::current_dir().map_err(|e| Error::io(".", e))?;
    let cx = Context::new(cwd);
    let mut checks = Vec::new();
    for (area, check) in CHECKS {
        let from = checks.len();
        check(&cx, &mut checks);
        for c in &mut checks[from..] {
            c.area = area;
        }
    }
    let ok = !checks.iter().any(|c| c.level == Level::Problem);
    if args.json {
        print_json(&Report { ok, checks })?;
    } else {
        print_text(&checks, ok)?;
    }
    Ok(if ok { 0 } else { 1 })
}

/// The report's width in terminal columns: it fits an 80-column terminal.
const WIDTH: usize = 80;

/// The widest check name that gets a column of its own; a longer name puts its detail on the
/// next line.
const NAME_COLUMN: usize = 22;

/// `text` broken at spaces into lines of at most `width` terminal columns (a word longer than
/// that, such as a path, stays whole on a line of its own).
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    use unicode_width::UnicodeWidthStr;
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let w = UnicodeWidthStr::width(word);
        let have = UnicodeWidthStr::width(line.as_str());
        if !line.is_empty() && have + 1 + w > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

fn print_text(checks: &[Check], ok: bool) -> Result<()> {
    use unicode_width::UnicodeWidthStr;
    let mut out = Out::new();
    let mut area = "";
    let width = checks
        .iter()
        .map(|c| UnicodeWidthStr::width(c.name.as_str()))
        .filter(|w| *w <= NAME_COLUMN)
        .max()
        .unwrap_or(0);
    // "  ok " then the name column, two spaces, the detail.
    let indent = 2 + 2 + 1 + width + 2;
    let room = WIDTH.saturating_sub(indent).max(30);
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
        let name_w = UnicodeWidthStr::width(c.name.as_str());
        let mut detail = wrap(&c.detail, room).into_iter();
        if name_w > width {
            let _ = writeln!(out, " {}", c.name);
        } else {
            let first = detail.next().unwrap_or_default();
            let _ = writeln!(out, " {}{}  {first}", c.name, " ".repeat(width - name_w));
        }
        for line in detail {
            let _ = writeln!(out, "{}{line}", " ".repeat(indent));
        }
        if let Some(fix) = &c.fix {
            // A problem's fix, or how to set up what is worth having: under the name, where a
            // command has the most room to stay on one line.
            let label = if c.level == Level::Problem {
                "fix:"
            } else {
                "hint:"
            };
            let at = 5;
            let lines = wrap(fix, WIDTH - at - label.len() - 1);
            for (i, line) in lines.iter().enumerate() {
                out.push_str(&" ".repeat(at));
                if i == 0 {
                    out.paint(style::WARN, label);
                    out.push(' ');
                } else {
                    out.push_str(&" ".repeat(label.len() + 1));
                }
                let _ = writeln!(out, "{line}");
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_breaks_at_spaces_and_keeps_long_words() {
        assert_eq!(wrap("a bb ccc", 4), ["a bb", "ccc"]);
        assert_eq!(wrap("", 10), [""]);
        assert_eq!(
            wrap("see /a/very/long/path/indeed now", 8),
            ["see", "/a/very/long/path/indeed", "now"]
        );
    }
}
