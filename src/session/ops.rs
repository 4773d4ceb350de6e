//! Changes to a session, as pure functions over the model (no I/O): creating one, updating
//! the task, removing items, taking a checkpoint. Behaviour follows the original PAS-Agent's (docs/commands.md).

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::error::{Error, Result};
use crate::git::WorkTree;
use crate::model::{Checkpoint, GitRef, ListKind, SCHEMA_VERSION, Session, TaskState};

/// A new session.
pub fn new_session(project_name: String, description: String, now: DateTime<Utc>) -> Session {
    Session {
        schema_version: SCHEMA_VERSION,
        id: Uuid::new_v4(),
        project_name,
        created_at: now,
        updated_at: now,
        task: TaskState {
            description,
            ..Default::default()
        },
        git: None,
        checkpoints: Vec::new(),
        runs: crate::model::Runs::default(),
        extra: Default::default(),
    }
}

/// What `update` asks for. Strings are taken as typed; trimming happens here.
#[derive(Debug, Clone, Default)]
pub struct Update {
    /// `--task`: the new description; blank is an error.
    pub task: Option<String>,
    /// `--objective`: the new objective; blank clears it.
    pub objective: Option<String>,
    /// `--next`: the new next action; blank clears it.
    pub next: Option<String>,
    /// `--clear-next`: set the next action to null (after `next`, so it wins).
    pub clear_next: bool,
    /// `--completed`: items to append to `completed`; blank ones are dropped.
    pub completed: Vec<String>,
    /// `--remaining`: items to append to `remaining`; blank ones are dropped.
    pub remaining: Vec<String>,
    /// `--decision`: items to append to `decisions`; blank ones are dropped.
    pub decisions: Vec<String>,
    /// `--blocker`: items to append to `blockers`; blank ones are dropped.
    pub blockers: Vec<String>,
    /// `--constraint`: items to append to `constraints`; blank ones are dropped.
    pub constraints: Vec<String>,
    /// `--discovery`: items to append to `discoveries`; blank ones are dropped.
    pub discoveries: Vec<String>,
    /// 1-based numbers of remaining items to move to completed.
    pub done: Vec<usize>,
    /// 1-based numbers of blockers to drop.
    pub resolve: Vec<usize>,
}

/// Refuses a text longer than [`crate::limits::ITEM_CHARS`] characters; `what` names it for
/// the message (`--discovery`, "the checkpoint message").
///
/// Errors: [`Error::Usage`] with the text's length and the limit; nothing was changed.
pub fn check_text(what: &str, text: &str) -> Result<()> {
    let limit = crate::limits::ITEM_CHARS;
    let len = text.trim().chars().count();
    if len <= limit {
        return Ok(());
    }
    Err(Error::Usage(format!(
        "{what} is {} characters long; one item may hold at most {} characters (docs/format.md, \"Size limits\"); nothing was changed\n  hint: keep the gist here and put the rest in a file of the project, named in the item",
        crate::display::thousands(len),
        crate::display::thousands(limit)
    )))
}

/// Checks that every number names an item of `list`, and returns them sorted and de-duplicated.
///
/// Errors: [`Error::Usage`] naming the first bad number and the list's size.
pub fn check_numbers(task: &TaskState, kind: ListKind, numbers: &[usize]) -> Result<Vec<usize>> {
    let len = task.list(kind).len();
    let set: BTreeSet<usize> = numbers.iter().copied().collect();
    if let Some(bad) = set.iter().find(|&&n| n == 0 || n > len) {
        let size = match len {
            0 => format!("the {} list is empty", kind.name()),
            1 => format!("the {} list has 1 item", kind.name()),
            n => format!("the {} list has {n} items", kind.name()),
        };
        return Err(Error::Usage(format!(
            "there is no item #{bad} in {}: {size} (see `pas-agent status` for the numbers); nothing was changed",
            kind.name()
        )));
    }
    Ok(set.into_iter().collect())
}

/// Applies `update` to `task`: numbered operations first, against the lists as loaded (so the
/// numbers match what `status` showed), then the replacements, then the appends. All or
/// nothing: on error `task` is unchanged.
///
/// Errors: a bad item number, an empty `--task`, or nothing changing ("nothing to update").
pub fn apply_update(task: &mut TaskState, update: &Update) -> Result<()> {
    let single = [
        ("--task", &update.task),
        ("--objective", &update.objective),
        ("--next", &update.next),
    ];
    for (flag, text) in single {
        if let Some(t) = text {
            check_text(&format!("the {flag} text"), t)?;
        }
    }
    let lists = [
        ("--completed", &update.completed),
        ("--remaining", &update.remaining),
        ("--decision", &update.decisions),
        ("--blocker", &update.blockers),
        ("--constraint", &update.constraints),
        ("--discovery", &update.discoveries),
    ];
    for (flag, items) in lists {
        for t in items {
            check_text(&format!("the {flag} item"), t)?;
        }
    }
    let done = check_numbers(task, ListKind::Remaining, &update.done)?;
    let resolve = check_numbers(task, ListKind::Blockers, &update.resolve)?;
    if update.task.as_ref().is_some_and(|t| t.trim().is_empty()) {
        return Err(Error::Usage(
            "the task description cannot be empty; nothing was changed".into(),
        ));
    }
    let before = task.clone();
    let mut next = task.clone();
    let moved: Vec<String> = done
        .iter()
        .map(|&n| next.remaining[n - 1].clone())
        .collect();
    for &n in done.iter().rev() {
        next.remaining.remove(n - 1);
    }
    // A next action that was just done is no longer next (unless this command sets another).
    if next
        .next_action
        .as_deref()
        .is_some_and(|a| moved.iter().any(|m| m == a))
    {
        next.next_action = None;
    }
    next.completed.extend(moved);
    for &n in resolve.iter().rev() {
        next.blockers.remove(n - 1);
    }
    if let Some(t) = &update.task {
        next.description = t.trim().to_string();
    }
    if let Some(o) = &update.objective {
        next.objective = o.trim().to_string();
    }
    if let Some(n) = &update.next {
        let n = n.trim();
        next.next_action = (!n.is_empty()).then(|| n.to_string());
    }
    if update.clear_next {
        next.next_action = None;
    }
    let appends = [
        (ListKind::Completed, &update.completed),
        (ListKind::Remaining, &update.remaining),
        (ListKind::Decisions, &update.decisions),
        (ListKind::Blockers, &update.blockers),
        (ListKind::Constraints, &update.constraints),
        (ListKind::Discoveries, &update.discoveries),
    ];
    for (kind, items) in appends {
        next.list_mut(kind).extend(
            items
                .iter()
                .map(|i| i.trim())
                .filter(|i| !i.is_empty())
                .map(String::from),
        );
    }
    if next == before {
        return Err(Error::Message(
            "nothing to update: no flag changed the task (see `pas-agent update --help`)".into(),
        ));
    }
    *task = next;
    Ok(())
}

/// Removes items #`numbers` (1-based) from the list `kind`; returns the removed texts in list
/// order. All or nothing.
pub fn remove_items(
    task: &mut TaskState,
    kind: ListKind,
    numbers: &[usize],
) -> Result<Vec<String>> {
    let numbers = check_numbers(task, kind, numbers)?;
    let list = task.list_mut(kind);
    let removed: Vec<String> = numbers.iter().map(|&n| list[n - 1].clone()).collect();
    for &n in numbers.iter().rev() {
        list.remove(n - 1);
    }
    Ok(removed)
}

/// Replaces `session.git` with a fresh capture, keeping any fields of the old value that this
/// build does not know (a newer writer's additions survive a refresh).
pub fn set_git(session: &mut Session, git: Option<GitRef>) {
    session.git = match (session.git.take(), git) {
        (Some(old), Some(mut new)) => {
            for (k, v) in old.extra {
                new.extra.entry(k).or_insert(v);
            }
            Some(new)
        }
        (_, new) => new,
    };
}

/// Runs `change` on the session; when `unknown` (git could not be read: missing, failing),
/// puts `session.git` back as it was, so that a missing git never erases the recorded state.
pub fn keeping_git_if_unknown<T>(
    session: &mut Session,
    unknown: bool,
    change: impl FnOnce(&mut Session) -> T,
) -> T {
    let recorded = unknown.then(|| session.git.clone());
    let out = change(session);
    if let Some(recorded) = recorded {
        session.git = recorded;
    }
    out
}

/// Appends a checkpoint of the current task and `tree` (`None` outside git), refreshes
/// `session.git`, sets `updated_at`, and returns the checkpoint's 1-based number.
pub fn add_checkpoint(
    session: &mut Session,
    message: String,
    tree: Option<&WorkTree>,
    now: DateTime<Utc>,
) -> usize {
    let git = tree.map(WorkTree::git_ref);
    set_git(session, git.clone());
    let mut checkpoint = Checkpoint {
        id: Uuid::new_v4(),
        timestamp: now,
        message,
        task_snapshot: session.task.clone(),
        git,
        files_changed: tree.map(|t| t.files.clone()).unwrap_or_default(),
        extra: Default::default(),
    };
    super::bound::bound_into(&mut checkpoint.files_changed, &mut checkpoint.extra);
    session.checkpoints.push(checkpoint);
    session.updated_at = now;
    session.checkpoints.len()
}

/// A checkpoint taken by the launcher around a run: like [`add_checkpoint`], except that when
/// nothing differs from the latest checkpoint (same task, git state and changed files) that
/// one is reused, so runs that change nothing do not pile up identical checkpoints. Returns the
/// id of the checkpoint that stands for this moment.
pub fn auto_checkpoint(
    session: &mut Session,
    message: String,
    tree: Option<&WorkTree>,
    now: DateTime<Utc>,
) -> Option<Uuid> {
    let git = tree.map(WorkTree::git_ref);
    let files = tree.map(|t| t.files.as_slice()).unwrap_or_default();
    if let Some(last) = session.checkpoints.last()
        && last.task_snapshot == session.task
        && same_git(last.git.as_ref(), git.as_ref())
        && last.files_changed == super::bound::bound(files).0
    {
        return Some(last.id);
    }
    add_checkpoint(session, message, tree, now);
    session.checkpoints.last().map(|c| c.id)
}

fn same_git(a: Option<&GitRef>, b: Option<&GitRef>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a.branch == b.branch && a.commit == b.commit && a.dirty == b.dirty,
        (None, None) => true,
        _ => false,
    }
}

/// Finds a checkpoint by 1-based number, or by the start or end (at least 4 characters) of its
/// id.
///
/// Errors: [`Error::Usage`] when nothing or more than one checkpoint matches.
pub fn find_checkpoint<'a>(
    session: &'a Session,
    selector: &str,
) -> Result<(usize, &'a Checkpoint)> {
    let selector = selector.trim();
    let count = session.checkpoints.len();
    if let Ok(n) = selector.parse::<usize>() {
        if n >= 1 && n <= count {
            return Ok((n, &session.checkpoints[n - 1]));
        }
        if selector.len() < 4 {
            return Err(Error::Usage(format!(
                "there is no checkpoint #{n}: the session has {} (see `pas-agent list`)",
                crate::display::count(count, "checkpoint", "checkpoints")
            )));
        }
    }
    let wanted = selector.to_ascii_lowercase();
    if wanted.len() < 4 {
        return Err(Error::Usage(format!(
            "`{}` is neither a checkpoint number nor at least 4 characters of a checkpoint id",
            crate::term::clean(selector)
        )));
    }
    let matches: Vec<(usize, &Checkpoint)> = session
        .checkpoints
        .iter()
        .enumerate()
        .filter(|(_, c)| {
            let id = c.id.to_string();
            let plain = id.replace('-', "");
            id.starts_with(&wanted)
                || id.ends_with(&wanted)
                || plain.starts_with(&wanted)
                || plain.ends_with(&wanted)
        })
        .map(|(i, c)| (i + 1, c))
        .collect();
    match matches.as_slice() {
        [one] => Ok(*one),
        [] => Err(Error::Usage(format!(
            "no checkpoint id starts or ends with `{}` (see `pas-agent list`)",
            crate::term::clean(selector)
        ))),
        _ => Err(Error::Usage(format!(
            "`{}` matches {} checkpoints; give more of the id",
            crate::term::clean(selector),
            matches.len()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_longer_than_the_limit_are_refused_naming_it() {
        let limit = crate::limits::ITEM_CHARS;
        assert!(check_text("x", &"é".repeat(limit)).is_ok());
        assert!(check_text("x", &format!("  {}  ", "a".repeat(limit))).is_ok());
        let err = check_text("the --discovery item", &"a".repeat(limit + 1)).unwrap_err();
        assert!(
            err.to_string().contains("10,001") && err.to_string().contains("10,000"),
            "{err}"
        );
        let mut task = TaskState::default();
        let update = Update {
            remaining: vec!["ok".into(), "b".repeat(limit + 1)],
            ..Update::default()
        };
        assert!(apply_update(&mut task, &update).is_err());
        assert!(task.remaining.is_empty(), "all or nothing");
    }

    fn task() -> TaskState {
        TaskState {
            description: "t".into(),
            remaining: vec!["a".into(), "b".into(), "c".into()],
            blockers: vec!["x".into(), "y".into()],
            ..Default::default()
        }
    }

    #[test]
    fn done_moves_in_list_order_and_dedups() {
        let mut t = task();
        apply_update(
            &mut t,
            &Update {
                done: vec![3, 1, 3],
                resolve: vec![2],
                remaining: vec!["  d ".into(), "".into()],
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(t.completed, vec!["a", "c"]);
        assert_eq!(t.remaining, vec!["b", "d"]);
        assert_eq!(t.blockers, vec!["x"]);
    }

    #[test]
    fn bad_numbers_change_nothing() {
        let mut t = task();
        let err = apply_update(
            &mut t,
            &Update {
                done: vec![1, 4],
                remaining: vec!["new".into()],
                ..Default::default()
            },
        )
        .unwrap_err();
        assert!(err.to_string().contains("no item #4 in remaining"), "{err}");
        assert!(err.to_string().contains("3 items"));
        assert_eq!(t, task());
        assert!(
            apply_update(
                &mut t,
                &Update {
                    resolve: vec![0],
                    ..Default::default()
                }
            )
            .is_err()
        );
    }

    #[test]
    fn nothing_to_update() {
        let mut t = task();
        let same = Update {
            task: Some(" t ".into()),
            completed: vec!["   ".into()],
            ..Default::default()
        };
        assert!(
            apply_update(&mut t, &same)
                .unwrap_err()
                .to_string()
                .contains("nothing to update")
        );
    }

    #[test]
    fn doing_the_next_action_clears_it() {
        let mut t = task();
        t.next_action = Some("b".into());
        apply_update(
            &mut t,
            &Update {
                done: vec![2],
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(t.next_action, None);
        t.next_action = Some("a".into());
        apply_update(
            &mut t,
            &Update {
                done: vec![1],
                next: Some("c".into()),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(t.next_action.as_deref(), Some("c"));
    }

    #[test]
    fn next_and_clear() {
        let mut t = task();
        apply_update(
            &mut t,
            &Update {
                next: Some(" go ".into()),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(t.next_action.as_deref(), Some("go"));
        apply_update(
            &mut t,
            &Update {
                next: Some("  ".into()),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(t.next_action, None);
    }

    #[test]
    fn remove_returns_texts() {
        let mut t = task();
        assert_eq!(
            remove_items(&mut t, ListKind::Remaining, &[3, 1]).unwrap(),
            vec!["a", "c"]
        );
        assert_eq!(t.remaining, vec!["b"]);
    }
}
