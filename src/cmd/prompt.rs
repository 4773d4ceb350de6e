//! `pas-agent prompt`: the prompt segment, a one-line summary of the session for a shell prompt
//! (task, progress `3/5`, a stale mark, a live run), and the protocol the shell hooks use.
//!
//! It must be cheap and quiet (docs/hooks.md, "How it stays cheap"): it reads `session.json` and, when the session has a
//! checkpoint, git's HEAD — never a git status, never the session lock. It always exits 0:
//! outside a session it prints nothing; a session it cannot read gives a short marker.
//!
//! With `--hook ID` (the shell's process id) it prints four kinds of line for the hooks in
//! `shell/`: the segment, the notice (filled with `--notice`, empty otherwise), the path of a
//! stamp file whose modification time is set to the newest of the watched files as they were
//! read, and then the watched files (the session, and, when the prompt depends on HEAD, git's
//! `HEAD`, `logs/HEAD`, the branch's ref and its directories, `packed-refs` and the reftable:
//! [`crate::git::layout::Layout::watched`]). A hook compares the watched files with the stamp using its shell's
//! own `-nt` test, so a prompt where nothing changed starts no process.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::cli::PromptArgs;
use crate::error::{Error, Result};
use crate::git::{self, Head};
use crate::session::Project;
use crate::session::project::Identity;
use crate::session::prompt_record::{self, PromptView, RunningView};

/// Environment variable that turns the notice off when set to `0`.
pub const NOTICE_ENV: &str = "PAS_AGENT_NOTICE";

/// Longest notice part (task, next action), in characters.
const NOTICE_PART_CHARS: usize = 100;

pub fn run(args: PromptArgs) -> Result<i32> {
    let text = output(&args).unwrap_or_default();
    // A prompt has nowhere to report a write error; stay quiet. The segment and notice are in
    // the locale's character set already; the paths after them are data.
    let _ = crate::term::print_data(&text);
    Ok(0)
}

/// Whether a run counts as live in the prompt: its record says `running` (the view holds only
/// those) and its launcher is not provably gone (a killed launcher's record is closed by the
/// next command that reconciles, docs/launcher.md).
fn is_live(run: &RunningView) -> bool {
    use crate::launch::process::{Liveness, liveness};
    liveness(run.launcher_pid, run.launcher_started.as_deref()) != Liveness::Dead
}

/// What the prompt shows of `project`'s session: the stored [`prompt_record`] when it matches
/// `session.json` as it is now, else the session loaded from its summary or in full (which
/// stores the record for the next prompt).
///
/// Errors: those of [`Project::load`].
fn view(project: &Project, session_path: &Path) -> Result<PromptView> {
    let now = Identity::of(session_path);
    if let Some(view) = now.and_then(|now| prompt_record::fresh(session_path, now)) {
        return Ok(view);
    }
    // Stores the record for the next prompt.
    let session = crate::session::read::load_without_files(project)?;
    Ok(PromptView::of(&session))
}

/// Everything `prompt` prints, or `None` outside a session.
fn output(args: &PromptArgs) -> Option<String> {
    let cwd = std::env::current_dir().ok()?;
    let project = Project::find_opt(&cwd)?;
    let session_path = project.session_path();
    // Times are taken before the reads: a write that lands after them makes the file newer
    // than the stamp, so the hook asks again rather than keep an old segment.
    let mut watched = vec![(session_path.clone(), mtime(&session_path))];
    // The prompt record, else the summary: the cost does not grow with the history.
    let view = view(&project, &session_path);
    let loaded = view.as_ref();
    let mut head = None;
    // HEAD matters only for the stale mark, and that needs a checkpoint.
    // The files watched are git's own (HEAD, the branch's ref wherever the layout keeps it,
    // packed-refs, the reftable), read before HEAD is: whatever moves HEAD or the branch
    // touches one of them, so the hook's `-nt` test sees every move `prompt` would show.
    // A layout with a special file where git keeps HEAD or a ref is not read at all.
    if let Ok(session) = loaded
        && session.checkpoint.is_some()
        && let Ok(Some(layout)) = git::layout::find(&project.root)
    {
        for file in layout.watched() {
            let time = mtime(&file);
            watched.push((file, time));
        }
        head = git::head_of_layout(&layout, &project.root);
    }
    let (segment, notice) = match loaded {
        Ok(session) => {
            let stale = is_stale(session, head.as_ref());
            (
                segment(session, stale, args.width.into()),
                notice(session, stale),
            )
        }
        Err(e @ Error::Unmerged { .. }) => (
            marker(e).to_string(),
            "pas-agent: the session has unresolved git merge conflicts; `pas-agent resolve` merges both sides (agents still start, without a record)".to_string(),
        ),
        Err(e @ Error::Damaged { .. }) => (
            marker(e).to_string(),
            "pas-agent: the session file is damaged; agents still start, without a record; `pas-agent recover` brings back the session as pas-agent last saved it (`pas-agent status` says what is wrong)".to_string(),
        ),
        Err(e) => (
            marker(e).to_string(),
            format!(
                "pas-agent: the session file cannot be read ({}); `pas-agent status` says why",
                marker(e)
            ),
        ),
    };
    let segment = crate::term::for_locale(&segment).into_owned();
    let notice = crate::term::for_locale(&notice).into_owned();
    let Some(id) = &args.hook else {
        return Some(if segment.is_empty() {
            String::new()
        } else {
            format!("{segment}\n")
        });
    };
    let notice = if args.notice && std::env::var_os(NOTICE_ENV).is_none_or(|v| v != "0") {
        notice
    } else {
        String::new()
    };
    let newest = watched.iter().filter_map(|(_, t)| *t).max();
    let stamp = newest
        .and_then(|t| write_stamp(id, t))
        .and_then(|p| one_line(&p))
        .unwrap_or_default();
    let mut out = format!("{segment}\n{notice}\n{stamp}\n");
    for (file, _) in &watched {
        if let Some(line) = one_line(file) {
            let _ = writeln!(out, "{line}");
        }
    }
    Some(out)
}

/// The short marker shown instead of the segment when the session cannot be read.
fn marker(e: &Error) -> &'static str {
    match e {
        Error::Damaged { .. } => "session damaged",
        Error::Unmerged { .. } => "session unmerged",
        Error::Unsupported { .. } => "session from a newer pas-agent",
        _ => "session unreadable",
    }
}

/// Whether the latest checkpoint is behind, judged without a git status: HEAD or the branch
/// moved, or the task changed since it was taken. (`status` also compares the changed files.)
fn is_stale(session: &PromptView, head: Option<&Head>) -> bool {
    let Some(cp) = &session.checkpoint else {
        return false;
    };
    if cp.task_changed {
        return true;
    }
    match (head, &cp.git) {
        (Some(now), Some((branch, commit))) => now.commit != *commit || now.branch != *branch,
        _ => false,
    }
}

/// `Build the thing 3/5 · stale · codex running`: the task (cut to `width` characters), the
/// done/total count of completed and remaining items when there are any, `stale` when the
/// latest checkpoint is behind, and the agent of a live run. Sanitised: one line, no control
/// characters.
pub fn segment(session: &PromptView, stale: bool, width: usize) -> String {
    let what = if session.description.is_empty() {
        &session.project_name
    } else {
        &session.description
    };
    let mut out = cut(what, width);
    let total = session.total;
    if total > 0 {
        let _ = write!(out, " {}/{total}", session.completed);
    }
    if stale {
        out.push_str(" · stale");
    }
    let live: Vec<&RunningView> = session.running.iter().filter(|r| is_live(r)).collect();
    match live.as_slice() {
        [] => {}
        [one] => {
            let _ = write!(out, " · {} running", cut(&one.agent, 24));
        }
        many => {
            let _ = write!(out, " · {} agents running", many.len());
        }
    }
    out.trim().to_string()
}

/// `pas-agent: Build the thing (3/5 done) · next: Token refresh`.
pub fn notice(session: &PromptView, stale: bool) -> String {
    let mut out = format!(
        "pas-agent: {}",
        cut(&session.description, NOTICE_PART_CHARS)
    );
    let total = session.total;
    if total > 0 {
        let _ = write!(out, " ({}/{total} done)", session.completed);
    }
    match &session.next {
        Some(next) => {
            let _ = write!(out, " · next: {}", cut(next, NOTICE_PART_CHARS));
        }
        None => out.push_str(" · no next action (`pas-agent update --next ...`)"),
    }
    if stale {
        out.push_str(" · last checkpoint is behind");
    }
    out
}

/// `text` cut to at most `max` terminal columns, the last one `…` when cut. Width is counted
/// as a terminal shows it (unicode-width): CJK ideographs and most emoji take two columns,
/// combining marks none.
fn cut(text: &str, max: usize) -> String {
    use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};
    if text.width() <= max {
        return text.to_string();
    }
    let room = max.saturating_sub(1);
    let mut used = 0;
    let mut out = String::new();
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > room {
            break;
        }
        used += w;
        out.push(c);
    }
    out.push('…');
    out
}

fn mtime(path: &Path) -> Option<SystemTime> {
    fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// `path` as one line of text, or `None` when it cannot be one (not UTF-8, or a line break).
fn one_line(path: &Path) -> Option<String> {
    let s = path.to_str()?;
    (!s.contains(['\n', '\r'])).then(|| s.to_string())
}

/// Whether `id` is a plausible shell id (a process id, or a short word).
fn valid_id(id: &str) -> bool {
    (1..=40).contains(&id.len())
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Where stamps live: `prompt` in [`crate::fsutil::cache_dir`].
pub fn stamp_dir() -> Option<PathBuf> {
    Some(crate::fsutil::cache_dir()?.join("prompt"))
}

/// Creates or updates the stamp for shell `id` with modification time `time`; `None` when it
/// cannot (the hook then refreshes only when the directory changes). A new stamp also removes
/// the stamps of shells that have exited.
fn write_stamp(id: &str, time: SystemTime) -> Option<PathBuf> {
    if !valid_id(id) {
        return None;
    }
    let dir = stamp_dir()?;
    let path = dir.join(id);
    let open = |create: bool| {
        let mut options = fs::OpenOptions::new();
        options.write(true).create(create);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            // Never follow a link planted where the stamp goes.
            options.custom_flags(libc::O_NOFOLLOW);
        }
        options.open(&path)
    };
    // The stamp usually exists: one open, and the directory is made only when it does not.
    let (file, new) = match open(false) {
        Ok(file) => (file, false),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let mut builder = fs::DirBuilder::new();
            builder.recursive(true);
            #[cfg(unix)]
            {
                use std::os::unix::fs::DirBuilderExt;
                builder.mode(0o700);
            }
            builder.create(&dir).ok()?;
            (open(true).ok()?, true)
        }
        Err(_) => return None,
    };
    file.set_modified(time).ok()?;
    if new {
        prune(&dir, id);
    }
    Some(path)
}

/// Removes stamps named after process ids that no longer exist.
fn prune(dir: &Path, keep: &str) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if name == keep {
            continue;
        }
        if let Ok(pid) = name.parse::<u32>()
            && process_is_gone(pid)
        {
            let _ = fs::remove_file(entry.path());
        }
    }
}

#[cfg(unix)]
fn process_is_gone(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: kill with signal 0 sends nothing; it only checks that the process exists.
    let rc = unsafe { libc::kill(pid, 0) };
    rc != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

#[cfg(not(unix))]
fn process_is_gone(_pid: u32) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Checkpoint, RunState};
    use crate::session::Session;

    /// What the prompt shows of `s`, as a stored record would give it.
    fn v(s: &Session) -> PromptView {
        PromptView::of(s)
    }

    fn session(json: &str) -> Session {
        let base = r#"{"id":"46d89609-104d-4a43-907d-dbca99704a85","project_name":"proj","created_at":"2026-09-17T04:30:00Z","updated_at":"2026-09-17T04:39:00Z","task":{}}"#;
        let mut v: serde_json::Value = serde_json::from_str(base).unwrap();
        let extra: serde_json::Value = serde_json::from_str(json).unwrap();
        for (k, x) in extra.as_object().unwrap() {
            v[k] = x.clone();
        }
        serde_json::from_value(v).unwrap()
    }

    fn run_json(agent: &str, state: &str) -> serde_json::Value {
        serde_json::json!({
            "id": uuid::Uuid::new_v4(), "agent": agent, "argv": [agent], "cwd": "/x",
            "state": state, "started_at": "2026-09-17T04:30:00Z"
        })
    }

    #[test]
    fn segment_shows_task_progress_stale_and_live_run() {
        let s = session(
            r#"{"task":{"description":"Build the thing","completed":["a","b","c"],"remaining":["d","e"]}}"#,
        );
        assert_eq!(segment(&v(&s), false, 32), "Build the thing 3/5");
        assert_eq!(segment(&v(&s), true, 32), "Build the thing 3/5 · stale");
        let mut s = s;
        s.runs = serde_json::from_value(serde_json::json!([
            run_json("codex", "finished"),
            run_json("claude-code", "running")
        ]))
        .unwrap();
        assert_eq!(
            segment(&v(&s), false, 32),
            "Build the thing 3/5 · claude-code running"
        );
        s.runs[0].state = RunState::Running;
        assert_eq!(
            segment(&v(&s), false, 32),
            "Build the thing 3/5 · 2 agents running"
        );
    }

    #[test]
    fn segment_is_one_clean_line_cut_to_width() {
        let s = session(
            r#"{"task":{"description":"Fix \u001b[2J the\nlogin  \u202e page for everyone everywhere"}}"#,
        );
        let seg = segment(&v(&s), false, 20);
        assert_eq!(seg.chars().count(), 20, "{seg}");
        assert!(seg.ends_with('…'));
        assert!(
            !seg.chars().any(|c| c.is_control() || c == '\u{202e}'),
            "{seg:?}"
        );
        assert!(seg.starts_with("Fix ?[2J the login"), "{seg}");
        let empty = session(r#"{"task":{}}"#);
        assert_eq!(segment(&v(&empty), false, 32), "proj");
    }

    #[test]
    fn notice_names_task_and_next_action() {
        let s = session(
            r#"{"task":{"description":"Migrate auth","remaining":["x"],"next_action":"Token\nrefresh"}}"#,
        );
        assert_eq!(
            notice(&v(&s), false),
            "pas-agent: Migrate auth (0/1 done) · next: Token refresh"
        );
        let s = session(r#"{"task":{"description":"Migrate auth","next_action":"  "}}"#);
        assert!(notice(&v(&s), true).contains("no next action"));
        assert!(notice(&v(&s), true).ends_with("last checkpoint is behind"));
    }

    fn with_checkpoint(commit: &str, branch: &str) -> Session {
        let mut s = session(r#"{"task":{"description":"t"}}"#);
        s.checkpoints.push(Checkpoint {
            id: uuid::Uuid::new_v4(),
            timestamp: s.updated_at,
            message: "m".into(),
            task_snapshot: s.task.clone(),
            git: Some(crate::model::GitRef {
                branch: Some(branch.into()),
                commit: Some(commit.into()),
                dirty: false,
                extra: Default::default(),
            }),
            files_changed: vec![],
            extra: Default::default(),
        });
        s
    }

    #[test]
    fn stale_means_head_branch_or_task_moved() {
        let head = |c: &str, b: &str| Head {
            branch: Some(b.into()),
            commit: Some(c.into()),
        };
        let s = with_checkpoint("c1", "main");
        assert!(!is_stale(&v(&s), Some(&head("c1", "main"))));
        assert!(is_stale(&v(&s), Some(&head("c2", "main"))));
        assert!(is_stale(&v(&s), Some(&head("c1", "other"))));
        assert!(!is_stale(&v(&s), None), "no git: only the task counts");
        let mut s = s;
        s.task.remaining.push("more".into());
        assert!(is_stale(&v(&s), None));
        assert!(
            !is_stale(&v(&session(r#"{"task":{}}"#)), None),
            "no checkpoint, not stale"
        );
    }

    #[test]
    fn cut_counts_characters() {
        assert_eq!(cut("héllo", 5), "héllo");
        assert_eq!(cut("héllo", 4), "hél…");
        assert_eq!(cut("abc", 0), "…");
    }

    #[test]
    fn ids_are_short_plain_words() {
        assert!(valid_id("12345") && valid_id("a-b_c"));
        for bad in ["", "../x", "a/b", "a b", &"9".repeat(41)] {
            assert!(!valid_id(bad), "{bad}");
        }
    }
}
