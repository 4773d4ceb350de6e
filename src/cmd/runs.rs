//! `pas-agent runs`: the agent runs recorded in this session.

use std::fmt::Write as _;

use serde::Serialize;

use super::{print_json, project};
use crate::cli::RunsArgs;
use crate::display::{ago, duration, minute};
use crate::error::{Error, Result};
use crate::launch::process::Liveness;
use crate::launch::reconcile;
use crate::launch::registry::{Entry, Registry, State};
use crate::model::{Run, RunState};
use crate::session::history;
use crate::term::{Out, clean, clean_line, style};
use unicode_width::UnicodeWidthStr;

/// `runs --json`: `{"runs": [<run record as in session.json>, …]}`, oldest first.
#[derive(Serialize)]
struct RunsJson<'a> {
    runs: &'a [Run],
}

/// `runs --all --json`: `{"runs": [<registry entry>, …]}`, each entry as in the registry file
/// (see [`crate::launch::registry`]) with `"state"`: for a live run `"running"` (its launcher is
/// alive) or `"unknown"` (it cannot be told, e.g. another host); otherwise the entry's own
/// state, `"freezing"`, `"frozen"`, `"restoring"` or `"aborting"` (docs/json.md).
#[derive(Serialize)]
struct AllJson {
    runs: Vec<serde_json::Value>,
}

/// What `runs --all` shows as an entry's state (see [`AllJson`]).
fn entry_state(entry: &Entry) -> String {
    match entry.state {
        State::Live => match entry.liveness() {
            Liveness::Alive => "running".into(),
            _ => "unknown".into(),
        },
        ref other => other.as_str().to_string(),
    }
}

/// An entry as `runs --all --json` prints it.
pub(super) fn entry_json(entry: &Entry) -> serde_json::Value {
    let mut v = serde_json::to_value(entry).unwrap_or_default();
    if let Some(o) = v.as_object_mut() {
        o.insert(
            "state".into(),
            serde_json::Value::String(entry_state(entry)),
        );
    }
    v
}

fn all(args: &RunsArgs) -> Result<i32> {
    let reg = Registry::open()?;
    let runs = reconcile::registry(&reg)?;
    if args.json {
        print_json(&AllJson {
            runs: runs.iter().map(entry_json).collect(),
        })?;
        return Ok(0);
    }
    let mut out = String::new();
    if runs.is_empty() {
        out.push_str("No agent runs in progress or frozen on this machine.\n");
        crate::term::print(&out)?;
        return Ok(0);
    }
    let now = chrono::Utc::now();
    let mut table = Table::new(&[
        ("id", Align::Left, 0),
        ("agent", Align::Left, 2),
        ("state", Align::Left, 2),
        ("age", Align::Right, 2),
        ("pid", Align::Right, 2),
        ("project", Align::Left, 2),
    ]);
    for r in &runs {
        let state = entry_state(r);
        let st = match state.as_str() {
            "running" => style::LIVE,
            "frozen" => style::GOOD,
            _ => style::DIM,
        };
        let pid = match r.state {
            State::Live => r.launcher_pid.map_or("-".into(), |p| p.to_string()),
            _ => "-".into(),
        };
        table.row(vec![
            Cell::plain(r.short_id()),
            Cell::plain(clean_line(&r.agent)),
            Cell::painted(state, st),
            Cell::plain(ago(&r.started_at, &now)),
            Cell::plain(pid),
            Cell::plain(home_relative(&clean_line(&r.project))),
        ]);
    }
    if !args.wide {
        // The project's path takes what is left of the 80 columns, cut from the left.
        table.fit_last(WIDTH);
    }
    table.print()?;
    Ok(0)
}

/// `~/x` for a path under HOME.
fn home_relative(path: &str) -> String {
    match std::env::var("HOME") {
        Ok(home) if !home.is_empty() && home != "/" => match path.strip_prefix(&home) {
            Some(rest) if rest.starts_with('/') => format!("~{rest}"),
            _ => path.to_string(),
        },
        _ => path.to_string(),
    }
}

/// The width in terminal columns the lists fit without `--wide`.
const WIDTH: usize = 80;

/// How a column's cells line up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Align {
    Left,
    Right,
}

/// One cell: its text and the colour it gets on a terminal.
struct Cell {
    text: String,
    style: anstyle::Style,
}

impl Cell {
    fn plain(text: impl Into<String>) -> Cell {
        Cell {
            text: text.into(),
            style: anstyle::Style::new(),
        }
    }

    fn painted(text: impl Into<String>, style: anstyle::Style) -> Cell {
        Cell {
            text: text.into(),
            style,
        }
    }
}

/// A table whose columns are as wide as their widest cell (in terminal columns: wide
/// characters count two), with the header row first.
struct Table {
    /// Header, alignment and the spaces before it.
    columns: Vec<(&'static str, Align, usize)>,
    rows: Vec<Vec<Cell>>,
}

impl Table {
    fn new(columns: &[(&'static str, Align, usize)]) -> Table {
        Table {
            columns: columns.to_vec(),
            rows: Vec::new(),
        }
    }

    fn row(&mut self, cells: Vec<Cell>) {
        self.rows.push(cells);
    }

    fn widths(&self) -> Vec<usize> {
        self.columns
            .iter()
            .enumerate()
            .map(|(i, (head, _, _))| {
                self.rows
                    .iter()
                    .map(|r| UnicodeWidthStr::width(r[i].text.as_str()))
                    .chain([head.len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect()
    }

    /// Cuts the last column's cells from the left (`…` first) so that every line fits `width`.
    fn fit_last(&mut self, width: usize) {
        let widths = self.widths();
        let n = self.columns.len();
        let used: usize =
            widths[..n - 1].iter().sum::<usize>() + self.columns.iter().map(|c| c.2).sum::<usize>();
        let room = width.saturating_sub(used).max(12);
        for row in &mut self.rows {
            row[n - 1].text = tail(&row[n - 1].text, room);
        }
    }

    fn print(&self) -> Result<()> {
        let widths = self.widths();
        let last = self.columns.len() - 1;
        let mut out = Out::new();
        let line = |out: &mut Out, cells: Vec<(&str, anstyle::Style)>| {
            for (i, ((text, st), ((_, align, gap), w))) in cells
                .into_iter()
                .zip(self.columns.iter().zip(&widths))
                .enumerate()
            {
                out.push_str(&" ".repeat(*gap));
                let pad = " ".repeat(w.saturating_sub(UnicodeWidthStr::width(text)));
                if *align == Align::Right {
                    out.push_str(&pad);
                }
                out.paint(st, text);
                if *align == Align::Left && i != last {
                    out.push_str(&pad);
                }
            }
            out.push('\n');
        };
        line(
            &mut out,
            self.columns
                .iter()
                .map(|(h, _, _)| (*h, anstyle::Style::new()))
                .collect(),
        );
        for row in &self.rows {
            line(
                &mut out,
                row.iter().map(|c| (c.text.as_str(), c.style)).collect(),
            );
        }
        out.print()
    }
}

/// `text` cut to `width` terminal columns from the left, `…` and its end kept.
fn tail(text: &str, width: usize) -> String {
    if UnicodeWidthStr::width(text) <= width {
        return text.to_string();
    }
    let mut kept: Vec<char> = Vec::new();
    let mut w = 1;
    for c in text.chars().rev() {
        let cw = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if w + cw > width {
            break;
        }
        w += cw;
        kept.push(c);
    }
    std::iter::once('…').chain(kept.into_iter().rev()).collect()
}

/// A run's start for the list: `11-30 19:47` (UTC) this year, `2025-11-30` before; with
/// `wide`, `2025-11-30 19:47 UTC`.
fn started(
    t: &chrono::DateTime<chrono::Utc>,
    now: &chrono::DateTime<chrono::Utc>,
    wide: bool,
) -> String {
    use chrono::Datelike;
    if wide {
        minute(t)
    } else if t.year() == now.year() {
        t.format("%m-%d %H:%M").to_string()
    } else {
        t.format("%Y-%m-%d").to_string()
    }
}

/// An agent's session id for the list: its last 7 characters after `…` (the end of an id is
/// its random part: Codex's UUID v7 and OpenCode's ids start with the time), whole with `wide`.
fn short_id(id: &str, wide: bool) -> String {
    if wide || id.chars().count() <= 8 {
        id.to_string()
    } else {
        tail(id, 8)
    }
}

/// Warns that `.pas-agent/history.jsonl` cannot be read (`why`), so moved details are not shown.
fn warn_unreadable(why: &str) {
    history::warn_unreadable(
        why,
        "the details of old runs kept there are not shown, only their counts",
    );
}

pub fn run(args: RunsArgs) -> Result<i32> {
    if args.all {
        return all(&args);
    }
    let project = project()?;
    if let Some(n) = &args.number {
        // Only the run asked for is decoded; the latest is the last run the summary keeps
        // (when it matches the file), which is all that is read then.
        let wanted: usize = n.trim().parse().unwrap_or(0);
        let latest = crate::session::summary::fresh(&project)
            .filter(|s| wanted > 0 && s.run_count == wanted)
            .and_then(|s| s.session.runs.into_decoded().pop())
            .map(|run| (wanted, Some(run)));
        let (count, run) = match latest {
            Some(found) => found,
            None => project.load_run(wanted)?,
        };
        let number = number_of(n, count)?;
        let run = run.ok_or_else(|| Error::Damaged {
            path: project.session_path(),
            problem: format!("run #{number} cannot be read"),
        })?;
        return one(&project, number, run, args.json);
    }
    let mut session = project.load()?;
    if args.json {
        // Old runs' details come back from `.pas-agent/history.jsonl`, in one pass over it.
        if let Some(why) = history::fill_runs(&project, &mut session.runs) {
            warn_unreadable(&why);
        }
        print_json(&RunsJson {
            runs: &session.runs,
        })?;
        return Ok(0);
    }
    let mut out = String::new();
    if session.runs.is_empty() {
        out.push_str("No runs yet. Start an agent with `pas-agent run <agent>`, e.g. `pas-agent run codex`.\n");
        crate::term::print(&out)?;
        return Ok(0);
    }
    if session
        .runs
        .iter()
        .any(|r| r.extra.get(history::RUN_MOVED_KEY) == Some(&true.into()))
        && let Some(why) = history::unreadable(&project)
    {
        warn_unreadable(&why);
    }
    let now = chrono::Utc::now();
    let mut table = Table::new(&[
        ("#", Align::Right, 0),
        ("started", Align::Left, 2),
        ("agent", Align::Left, 2),
        ("state", Align::Left, 2),
        ("exit", Align::Right, 1),
        ("time", Align::Right, 1),
        ("commits", Align::Right, 1),
        ("files", Align::Right, 1),
        ("session", Align::Left, 2),
    ]);
    for (i, r) in session.runs.iter().enumerate() {
        let exit = match (r.exit_code, r.signal) {
            (Some(c), _) => c.to_string(),
            (None, Some(s)) => format!("sig{s}"),
            _ => "-".into(),
        };
        table.row(vec![
            Cell::plain(format!("{:>3}", i + 1)),
            Cell::plain(started(&r.started_at, &now, args.wide)),
            Cell::plain(clean_line(&r.agent)),
            Cell::painted(state_label(r), state_style(r)),
            Cell::plain(exit),
            Cell::plain(r.duration_ms.map_or("-".into(), duration)),
            Cell::plain(counted(r, commits_of(r))),
            Cell::plain(counted(
                r,
                usize::try_from(crate::session::bound::total_of(&r.files_changed, &r.extra))
                    .unwrap_or(usize::MAX),
            )),
            Cell::plain(
                r.agent_session_id
                    .as_deref()
                    .map_or("-".into(), |id| short_id(&clean_line(id), args.wide)),
            ),
        ]);
    }
    table.print()?;
    Ok(0)
}

/// A run's state as the table shows it: its recorded state, except that an abandoned run
/// whose agent never started (its launcher was lost while preparing it) is `unstarted`.
fn shown_state(run: &Run) -> &str {
    match (&run.state, crate::launch::record::agent_started_at(run)) {
        (RunState::Abandoned, Some(None)) => "unstarted",
        (state, _) => state.as_str(),
    }
}

/// What the state column says of a run: its result when it did no work, else its state as
/// [`shown_state`] gives it.
fn state_label(run: &Run) -> String {
    match &run.result {
        Some(o) if run.state == RunState::Finished => clean_line(o.label()),
        _ => shown_state(run).to_string(),
    }
}

/// The colour of a run's state: running cyan, a failure (non-zero exit, signal, abandoned,
/// a failed start) red, a session with nothing asked dim, a clean exit green.
fn state_style(run: &Run) -> anstyle::Style {
    match run.state {
        RunState::Running => style::LIVE,
        RunState::Abandoned => style::BAD,
        _ if run.result == Some(crate::model::RunResult::NothingAsked) => style::DIM,
        _ if run.result == Some(crate::model::RunResult::FailedStart) => style::BAD,
        _ if run.exit_code == Some(0) => style::GOOD,
        _ if run.exit_code.is_some() || run.signal.is_some() => style::BAD,
        _ => anstyle::Style::new(),
    }
}

/// How many commits a run made: its list, or the count its skeleton keeps when the list is in
/// `.pas-agent/history.jsonl`.
fn commits_of(run: &Run) -> usize {
    match run.extra.get(history::COMMITS_KEY) {
        Some(n) if run.commits.is_empty() => crate::session::exact::count(n)
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(0),
        _ => run.commits.len(),
    }
}

/// A count that is only known once the run is over: `-` while it is running.
fn counted(run: &Run, n: usize) -> String {
    if run.state == RunState::Running {
        "-".into()
    } else {
        n.to_string()
    }
}

/// `runs N --json`: `{"number": N, "run": <run record as in session.json>}`.
#[derive(Serialize)]
struct OneJson<'a> {
    number: usize,
    run: &'a Run,
}

/// The run number `selector` names (1-based, as the list numbers runs) of a session of
/// `count` runs, or a usage error that says how many there are.
fn number_of(selector: &str, count: usize) -> Result<usize> {
    match selector.trim().parse::<usize>() {
        Ok(n) if (1..=count).contains(&n) => Ok(n),
        Ok(n) => Err(Error::Usage(format!(
            "there is no run #{n}: the session has {} (see `pas-agent runs`)",
            crate::display::count(count, "run", "runs")
        ))),
        Err(_) => Err(Error::Usage(format!(
            "`{}` is not a run number, as `pas-agent runs` shows them (1, 2, …)",
            clean_line(selector)
        ))),
    }
}

/// `runs N`: one run in full.
fn one(project: &crate::session::Project, number: usize, r: Run, json: bool) -> Result<i32> {
    // An old run's details come back from `.pas-agent/history.jsonl`.
    let mut full = [r];
    if let Some(why) = history::fill_runs(project, &mut full) {
        warn_unreadable(&why);
    }
    let r = &full[0];
    if json {
        print_json(&OneJson { number, run: r })?;
        return Ok(0);
    }
    let mut out = String::new();
    let _ = writeln!(out, "Run #{number} ({})", r.id);
    let _ = writeln!(out, "Agent:    {}", clean_line(&r.agent));
    let argv: Vec<String> = r.argv.iter().map(|a| shell_word(a)).collect();
    let _ = writeln!(out, "Command:  {}", argv.join(" "));
    let _ = writeln!(out, "In:       {}", clean_line(&r.cwd));
    let _ = writeln!(out, "State:    {}", clean_line(r.state.as_str()));
    let _ = writeln!(out, "Started:  {}", crate::display::second(&r.started_at));
    if let Some(end) = &r.ended_at {
        let _ = writeln!(out, "Ended:    {}", crate::display::second(end));
    }
    if let Some(ms) = r.duration_ms {
        let _ = writeln!(out, "Took:     {}", duration(ms));
    }
    let outcome = match (r.exit_code, r.signal, &r.state) {
        (Some(c), _, _) => format!("exited {c}"),
        (None, Some(s), _) => format!("killed by signal {s}"),
        (_, _, RunState::Running) => "still running".into(),
        (_, _, RunState::Abandoned) => match crate::launch::record::agent_started_at(r) {
            Some(None) => "abandoned before the agent started (its launcher ended while preparing the run; the agent never ran)".into(),
            Some(Some(at)) => format!(
                "abandoned: the agent started at {}, then its launcher ended without recording how the agent ended",
                crate::display::second(&at)
            ),
            None => "abandoned (its launcher ended without recording how the agent ended)".into(),
        },
        _ if r.extra.contains_key(crate::launch::hooked::RECORDED_BY_KEY) => {
            "its session ended (the agent's hooks do not see its exit code)".into()
        }
        _ => "unknown".into(),
    };
    let _ = writeln!(out, "Outcome:  {outcome}");
    match &r.result {
        Some(crate::model::RunResult::FailedStart) => {
            let _ = writeln!(
                out,
                "Result:   failed start: it ended within {} s with no answer from its model, no tool call and no change (left out of the block's recent runs)",
                crate::model::FAILED_START_MS / 1000
            );
        }
        Some(crate::model::RunResult::NothingAsked) => {
            let _ = writeln!(
                out,
                "Result:   nothing asked: its session holds no prompt and nothing changed (left out of the block's recent runs)"
            );
        }
        Some(other) => {
            let _ = writeln!(out, "Result:   {}", clean_line(other.as_str()));
        }
        None => {}
    }
    if let Some(id) = &r.agent_session_id {
        let _ = writeln!(out, "Session:  {}", clean_line(id));
    } else if let Some(serde_json::Value::String(note)) =
        r.extra.get(crate::launch::record::SESSION_NOTE_KEY)
    {
        let _ = writeln!(out, "Session:  none recorded ({})", clean_line(note));
    }
    if let Some(capture) = &r.capture {
        let path = project.root.join(capture);
        let _ = writeln!(out, "Capture:  {}", clean_line(&path.to_string_lossy()));
    }
    if r.extra.get(history::DAMAGED_KEY) == Some(&true.into()) {
        out.push_str(
            "Details:  its line in .pas-agent/history.jsonl is damaged, so what it held (commits, files, HEAD, checkpoints, the agent's words) cannot all be shown\n",
        );
    } else if r.extra.get(history::RUN_MOVED_KEY) == Some(&true.into()) {
        out.push_str(
            "Details:  not in .pas-agent/history.jsonl (pruned, or the file is gone or too large to read); the counts below stay\n",
        );
    }
    if r.state != RunState::Running {
        let short = |c: &Option<String>| {
            c.as_deref().map_or("-".to_string(), |c| {
                clean_line(&c.chars().take(8).collect::<String>())
            })
        };
        // A skeleton whose details did not come back keeps no heads: not the same as no git.
        if r.extra.get(history::RUN_MOVED_KEY) == Some(&true.into())
            && r.head_before.is_none()
            && r.head_after.is_none()
        {
            out.push_str("HEAD:     unknown (it was kept with the run's details)\n");
        } else {
            let _ = writeln!(
                out,
                "HEAD:     {} → {}",
                short(&r.head_before),
                short(&r.head_after)
            );
        }
        if r.commits.is_empty() && commits_of(r) > 0 {
            let _ = writeln!(
                out,
                "\n{} (not listed).",
                crate::display::count(commits_of(r), "commit", "commits")
            );
        } else if r.commits.is_empty() {
            out.push_str("\nNo commits.\n");
        } else {
            let _ = writeln!(
                out,
                "\n{}:",
                crate::display::count(r.commits.len(), "commit", "commits")
            );
            for c in &r.commits {
                let _ = writeln!(
                    out,
                    "  {} {}",
                    clean_line(&c.id.chars().take(8).collect::<String>()),
                    clean_line(&c.summary)
                );
            }
        }
        let total = crate::session::bound::total_of(&r.files_changed, &r.extra);
        if total == 0 {
            out.push_str("\nNo changed files.\n");
        } else {
            let _ = writeln!(
                out,
                "\n{} changed:",
                crate::display::count(
                    usize::try_from(total).unwrap_or(usize::MAX),
                    "file",
                    "files"
                )
            );
            for f in &r.files_changed {
                let shared = if f.shared {
                    "; shared: another run worked here at the same time, and this run's transcript does not name it"
                } else {
                    ""
                };
                let _ = writeln!(
                    out,
                    "  {} ({}{shared})",
                    clean_line(&f.path),
                    clean_line(&f.status.describe())
                );
            }
        }
    }
    words(&mut out, r);
    crate::term::print(&out)?;
    Ok(0)
}

/// The agent's own words of a run ([`crate::agents::Agent::transcript`]), cleaned for the terminal.
fn words(out: &mut String, r: &Run) {
    // Runs recorded by an agent's lifecycle hooks (`pas-agent integrate`) say so, and carry
    // the last message of the agent's stop event.
    let hook = |key: &str| r.extra.get(key).and_then(|v| v.as_str());
    if let Some(by) = hook("recorded_by") {
        let _ = writeln!(out, "\nRecorded by: {}", clean_line(by));
    }
    let from_hook = hook("last_message").filter(|m| !m.trim().is_empty());
    let Some(t) = &r.transcript else {
        if let Some(message) = from_hook {
            let _ = writeln!(out, "\nLast answer:\n{}", indent(message));
        }
        return;
    };
    out.push('\n');
    if let Some(model) = &t.model {
        let _ = writeln!(out, "Model:    {}", clean_line(model));
    }
    if let Some(tk) = &t.tokens {
        let n = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
        let _ = writeln!(
            out,
            "Tokens:   {} in, {} out, {} cache read, {} cache write",
            n(tk.input),
            n(tk.output),
            n(tk.cache_read),
            n(tk.cache_write)
        );
    }
    if let Some(source) = &t.source {
        let _ = writeln!(out, "Transcript: {}", clean_line(source));
    }
    if let Some(why) = &t.missing {
        let _ = writeln!(out, "Words missing: {}", clean_line(why));
    }
    if !t.prompts.is_empty() {
        let omitted = if t.prompts_omitted > 0 {
            format!(" ({} more not kept)", t.prompts_omitted)
        } else {
            String::new()
        };
        let _ = writeln!(out, "\nPrompts{omitted}:");
        for p in &t.prompts {
            let _ = writeln!(out, "{}", indent(p));
        }
    }
    if !t.edits.is_empty() {
        let omitted = if t.edits_omitted > 0 {
            format!(" ({} more not kept)", t.edits_omitted)
        } else {
            String::new()
        };
        let _ = writeln!(out, "\nEdited by its tools{omitted}:");
        for e in &t.edits {
            let _ = writeln!(out, "  {}", clean_line(e));
        }
    }
    if !t.commands.is_empty() {
        let omitted = if t.commands_omitted > 0 {
            format!(" ({} earlier not kept)", t.commands_omitted)
        } else {
            String::new()
        };
        let _ = writeln!(out, "\nCommands{omitted}:");
        for c in &t.commands {
            let exit = c
                .exit_code
                .map_or_else(|| "exit ?".to_string(), |code| format!("exit {code}"));
            let mut lines = c.command.lines();
            let first = lines.next().unwrap_or_default();
            let _ = writeln!(out, "  [{exit}] {}", clean_line(first));
            for more in lines {
                let _ = writeln!(out, "           {}", clean_line(more));
            }
        }
    }
    if let Some(answer) = &t.last_answer {
        let cut = if t.answer_truncated { " (cut)" } else { "" };
        let _ = writeln!(out, "\nLast answer{cut}:");
        let _ = writeln!(out, "{}", indent(answer));
    } else if let Some(message) = from_hook {
        let _ = writeln!(
            out,
            "\nLast answer (from the agent's stop event):\n{}",
            indent(message)
        );
    }
}

/// Multi-line text, cleaned for the terminal, each line indented by two spaces.
fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("  {}", clean(l)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// An argument as a shell word: as is when it is plain, else single-quoted (cleaned for the
/// terminal either way).
fn shell_word(arg: &str) -> String {
    let arg = clean_line(arg);
    let plain = !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
    if plain {
        arg
    } else {
        format!("'{}'", arg.replace('\'', "'\\''"))
    }
}
