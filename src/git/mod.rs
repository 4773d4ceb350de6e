//! The one place that reads git: work-tree discovery, HEAD, changed files, commits and tree
//! diffs. Reads go through gix in-process (no processes started, no `index.lock` taken); where
//! gix cannot answer — reftable refs, a sparse index, or any gix error — the same questions go
//! to the git CLI (`git --no-optional-locks status --porcelain=v2 -z`, …), as starship does
//! (its `uses_reftables()` and sparse-index checks). `PAS_AGENT_GIT=cli` or `=gix` forces one side.
//!
//! Paths are relative to the repository top level, `/`-separated, exactly as git's porcelain
//! output gives them. Only files under the session root count, and its `.pas-agent/` never does.

mod cli;
mod dircache;
mod fast;
pub mod layout;
mod native;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::fingerprint;
use crate::model::{CommitRef, FileState, FileStatus, GitRef};

/// Environment variable choosing the git backend: `cli`, `gix`, or unset for gix with the CLI
/// as fallback.
pub const BACKEND_ENV: &str = "PAS_AGENT_GIT";

/// A git failure, with what was being asked.
#[derive(Debug, Clone, thiserror::Error)]
#[error("git: {0}")]
pub struct GitError(pub String);

type GitResult<T> = std::result::Result<T, GitError>;

/// HEAD of a work tree.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Head {
    /// Short branch name; `None` when detached.
    pub branch: Option<String>,
    /// Full commit id; `None` before the first commit.
    pub commit: Option<String>,
}

/// A work tree's state: HEAD plus the files that differ from it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkTree {
    /// Branch and commit HEAD points at.
    pub head: Head,
    /// Changed files under the session root, sorted by path, `.pas-agent/` excluded, and files
    /// whose only change is pas-agent's own block left out (see `Repo::only_block_changed`);
    /// with fingerprints when asked for [`Detail::Files`].
    pub files: Vec<FileState>,
}

impl WorkTree {
    /// The [`GitRef`] stored in the session (dirty = any changed file, untracked included).
    pub fn git_ref(&self) -> GitRef {
        GitRef {
            branch: self.head.branch.clone(),
            commit: self.head.commit.clone(),
            dirty: !self.files.is_empty(),
            extra: Default::default(),
        }
    }
}

/// How much of the status to compute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// Stop at the first changed file: enough for the dirty flag. No fingerprints.
    Dirty,
    /// Every changed file, with fingerprints.
    Files,
}

/// A path and how it changed between two commits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeChange {
    /// Path relative to the repository top level, `/`-separated; the new path for a rename.
    pub path: String,
    /// Added, modified, deleted or renamed (a copy counts as added); never untracked.
    pub status: FileStatus,
}

impl TreeChange {
    /// Sorts `changes` by path, keeping the order of equal paths (one comparator for both
    /// readers: a stable sort is compiled once per element type and comparator).
    pub(crate) fn sort_by_path(changes: &mut [TreeChange]) {
        changes.sort_by(|a, b| a.path.cmp(&b.path));
    }
}

/// A git work tree containing the session root.
#[derive(Debug)]
pub struct Repo {
    /// Canonical work-tree top level.
    pub top: PathBuf,
    /// The session root relative to `top` as a `/`-terminated prefix ("" when they are equal).
    prefix: String,
    native: Option<Box<native::Native>>,
    force_cli: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Choice {
    Auto,
    Cli,
    Gix,
}

/// The backend asked for, read (and warned about) once per process.
fn choice() -> Choice {
    static CHOICE: std::sync::OnceLock<Choice> = std::sync::OnceLock::new();
    *CHOICE.get_or_init(read_choice)
}

fn read_choice() -> Choice {
    match std::env::var(BACKEND_ENV).as_deref() {
        Ok("cli") => Choice::Cli,
        Ok("gix") => Choice::Gix,
        Ok("") | Ok("auto") | Err(_) => Choice::Auto,
        Ok(other) => {
            crate::term::warn(&format!(
                "{BACKEND_ENV}={} is not one of cli, gix, auto; using auto",
                crate::term::clean(other)
            ));
            Choice::Auto
        }
    }
}

/// Finds the work tree containing `dir`.
///
/// Returns `Ok(None)` outside any repository (git data is then simply absent).
///
/// Errors: [`Error::BadRoot`] when `dir` is inside a bare repository or inside a `.git`
/// directory: neither has a work tree to keep a session for (both backends agree);
/// [`Error::Message`] when git cannot be asked (the git CLI is missing or fails where it is
/// needed): whether `dir` is in a repository is then unknown, which is not the same as
/// "outside git"; likewise when a file git keeps (`HEAD`, a ref, `packed-refs`, the index) is a
/// FIFO, a directory or another special file, which is never opened.
pub fn discover(dir: &Path) -> Result<Option<Repo>> {
    let dir = dir.canonicalize().map_err(|e| Error::io(dir, e))?;
    // Neither gix nor git checks what kind of file HEAD is before opening it: a FIFO there
    // would block every command for ever. Checked first, without opening anything special.
    // Such a repository cannot be read, which is not the same as "outside git": callers keep
    // what was recorded (and `init` does not guess where the session belongs).
    if let Err(e) = layout::find(&dir) {
        return Err(Error::Message(format!("git: {e}")));
    }
    discover_canonical(&dir)
}

/// HEAD of the work tree at `root`, whose layout [`layout::find`] has just accepted: read from
/// git's files ([`layout::Layout::head`]) in the common cases, else through [`discover_checked`]
/// and the chosen backend. With `PAS_AGENT_GIT` set to `cli` or `gix`, or the fast paths
/// turned off (`PAS_AGENT_FULL_STATUS=1`), always through the backend. `None` when HEAD cannot
/// be read.
pub fn head_of_layout(layout: &layout::Layout, root: &Path) -> Option<Head> {
    if choice() == Choice::Auto
        && !native::full_status_forced()
        && let Some(head) = layout.head()
    {
        return Some(head);
    }
    discover_checked(root).ok().flatten()?.head().ok()
}

/// [`discover`] for a directory whose layout [`layout::find`] has just accepted (the prompt
/// reads the layout for its watch list first): the same answer without reading it again.
///
/// Errors: as [`discover`], but a special file where git keeps `HEAD` or a ref is not looked
/// for again.
pub fn discover_checked(dir: &Path) -> Result<Option<Repo>> {
    let dir = dir.canonicalize().map_err(|e| Error::io(dir, e))?;
    discover_canonical(&dir)
}

fn discover_canonical(dir: &Path) -> Result<Option<Repo>> {
    let dir = dir.to_path_buf();
    let choice = choice();
    let found = if choice == Choice::Cli {
        cli::discover(&dir)
    } else {
        match native::discover(&dir) {
            Ok(found) => Ok(found),
            Err(_) if choice == Choice::Auto => cli::discover(&dir),
            Err(e) => Err(e),
        }
    };
    match found {
        Ok(Found::None) => Ok(None),
        Ok(Found::Bare) => Err(Error::BadRoot {
            path: dir,
            problem: "this is a bare git repository, which has no work tree for a session".into(),
        }),
        Ok(Found::InsideGitDir) => Err(Error::BadRoot {
            path: dir,
            problem: "this is inside a .git directory; run pas-agent from the work tree".into(),
        }),
        Ok(Found::WorkTree { top, native }) => Ok(Some(Repo {
            top,
            prefix: String::new(),
            force_cli: choice == Choice::Cli || native.as_ref().is_some_and(|n| n.needs_cli),
            native,
        })),
        // Git itself is broken or missing: the answer is unknown, not "no repository".
        Err(e) => Err(Error::Message(format!(
            "{e}\n  cannot tell whether {} is in a git repository ({})",
            crate::term::clean(&dir.to_string_lossy()),
            match choice {
                Choice::Cli => "install git or put it on PATH, or unset PAS_AGENT_GIT",
                Choice::Gix => "the in-process reader cannot open it: unset PAS_AGENT_GIT",
                Choice::Auto => "install git or put it on PATH",
            }
        ))),
    }
}

/// What discovery found.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // one value per discovery, moved once
enum Found {
    None,
    Bare,
    InsideGitDir,
    WorkTree {
        top: PathBuf,
        native: Option<Box<native::Native>>,
    },
}

/// The git data of a session root: `None` outside git, and also (after a warning) when git
/// fails, so that session commands keep working without git. Callers that record git state
/// use [`try_for_root`], to keep what was recorded when git fails.
pub fn for_root(root: &Path) -> Option<Repo> {
    try_for_root(root).unwrap_or_else(|e| {
        crate::term::warn(&format!("{e}; continuing without git information"));
        None
    })
}

/// The git data of a session root: `Ok(None)` outside git.
///
/// Errors: those of [`discover`] (a bare repository, a missing or failing git).
pub fn try_for_root(root: &Path) -> Result<Option<Repo>> {
    Ok(discover(root)?.map(|mut repo| {
        repo.prefix = prefix_of(&repo.top, root);
        repo
    }))
}

/// What a command saw of git: the repository and its state, or that git could not be read.
#[derive(Debug, Default)]
pub struct Seen {
    /// The repository, when one was found.
    pub repo: Option<Repo>,
    /// Its state, when it could be read.
    pub tree: Option<WorkTree>,
    /// Whether git could not be read (missing, failing): the state is unknown, and what the
    /// session recorded must be kept rather than replaced by "no git".
    pub unknown: bool,
}

impl Seen {
    /// Reads the session root's repository and its state; a failure is a warning naming
    /// `consequence`.
    pub fn of_root(root: &Path, detail: Detail, consequence: &str) -> Seen {
        match try_for_root(root) {
            Ok(Some(repo)) => {
                let tree = repo.status_or_warn(detail, consequence);
                let unknown = tree.is_none();
                Seen {
                    repo: Some(repo),
                    tree,
                    unknown,
                }
            }
            Ok(None) => Seen::default(),
            Err(e) => {
                crate::term::warn(&format!("{e}; {consequence}"));
                Seen {
                    unknown: true,
                    ..Seen::default()
                }
            }
        }
    }

    /// Reads the session root's repository and its HEAD only, with no look at the work tree
    /// (`tree` is `None`): what a run launched without a checkpoint or an export needs before
    /// its program starts. A failure is a warning naming `consequence`; the HEAD read is
    /// returned beside.
    pub fn head_of_root(root: &Path, consequence: &str) -> (Seen, Option<Head>) {
        match try_for_root(root) {
            Ok(Some(repo)) => match repo.head() {
                Ok(head) => (
                    Seen {
                        repo: Some(repo),
                        ..Seen::default()
                    },
                    Some(head),
                ),
                Err(e) => {
                    crate::term::warn(&format!("{e}; {consequence}"));
                    (
                        Seen {
                            repo: Some(repo),
                            tree: None,
                            unknown: true,
                        },
                        None,
                    )
                }
            },
            Ok(None) => (Seen::default(), None),
            Err(e) => {
                crate::term::warn(&format!("{e}; {consequence}"));
                (
                    Seen {
                        unknown: true,
                        ..Seen::default()
                    },
                    None,
                )
            }
        }
    }
}

/// `root` relative to `top`, `/`-separated and `/`-terminated, or "" when equal (or unrelated).
fn prefix_of(top: &Path, root: &Path) -> String {
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    match root.strip_prefix(top) {
        Ok(rel) if !rel.as_os_str().is_empty() => {
            let mut s = rel.to_string_lossy().replace('\\', "/");
            s.push('/');
            s
        }
        _ => String::new(),
    }
}

impl Repo {
    fn use_native(&self) -> Option<&native::Native> {
        if self.force_cli {
            None
        } else {
            self.native.as_deref()
        }
    }

    /// Runs the native query, falling back to the CLI on error unless `gix` was forced.
    fn ask<T>(
        &self,
        native_query: impl FnOnce(&native::Native) -> GitResult<T>,
        cli_query: impl FnOnce() -> GitResult<T>,
    ) -> GitResult<T> {
        match self.use_native() {
            Some(n) => match native_query(n) {
                Ok(v) => Ok(v),
                Err(e) if choice() == Choice::Gix => Err(e),
                Err(_) => cli_query(),
            },
            None => cli_query(),
        }
    }

    /// The repository's own directory for this work tree (`.git`, or `.git/worktrees/<name>`
    /// for a linked work tree), where `HEAD` and `logs/HEAD` live; `None` when gix could not
    /// open the repository and the git CLI answers instead.
    pub fn git_dir(&self) -> Option<&Path> {
        self.native.as_ref().map(|n| n.git_dir())
    }

    /// Which reader answers for this repository, and why: `("in-process (gix)", why)` or
    /// `("git CLI", why)` (for `doctor`).
    pub fn backend(&self) -> (&'static str, &'static str) {
        const GIX: &str = "in-process (gix)";
        const CLI: &str = "git CLI";
        match (&self.native, choice()) {
            (_, Choice::Cli) => (CLI, "PAS_AGENT_GIT=cli asks for it"),
            (None, _) => (
                CLI,
                "the in-process reader (gix) cannot open this repository",
            ),
            (Some(n), _) if n.needs_cli => (
                CLI,
                "this repository uses reftable refs or a sparse index, which gix cannot read",
            ),
            (Some(_), Choice::Gix) => (GIX, "PAS_AGENT_GIT=gix asks for it (no fallback)"),
            (Some(_), Choice::Auto) => (
                GIX,
                "the default: no process started; the git CLI answers where gix fails",
            ),
        }
    }

    /// HEAD's branch and commit.
    pub fn head(&self) -> GitResult<Head> {
        self.ask(|n| n.head(), || cli::head(&self.top))
    }

    /// HEAD and the changed files under the session root (see [`Detail`]).
    pub fn status(&self, detail: Detail) -> GitResult<WorkTree> {
        let in_scope = |path: &str| self.in_scope(path);
        let (head, raw) = self.ask(
            |n| n.status(detail, &self.prefix, &in_scope),
            || cli::status(&self.top, detail, &in_scope),
        )?;
        let mut files: Vec<FileState> = raw
            .into_iter()
            .map(|(path, entry)| entry.into_file_state(path))
            .collect();
        if detail == Detail::Dirty {
            files.truncate(1);
        }
        // The full list's fingerprints go through the stat-keyed cache (only files whose stat
        // data moved are read); a dirty check reads its one file and leaves the cache alone,
        // which holds the last full list.
        let mut cache =
            (detail == Detail::Files).then(|| fingerprint::cache::Cache::open(&self.top));
        for f in &mut files {
            if f.status != FileStatus::Deleted
                && let Some(abs) = self.abs(&f.path)
            {
                let fp = match cache.as_mut() {
                    Some(c) => c.of_path(&f.path, &abs),
                    None => fingerprint::of_path(&abs),
                };
                f.fingerprint = fp.content;
                f.fingerprint_outside_block = fp.outside_block;
            }
        }
        if let Some(c) = cache {
            c.save();
        }
        let own = |f: &FileState| self.only_block_changed(head.commit.as_deref(), f);
        if detail == Detail::Dirty {
            // The first change found may be pas-agent's own export: then look at them all.
            if files.iter().any(own) {
                let mut all = self.status(Detail::Files)?;
                all.files.truncate(1);
                files = all.files;
            }
            for f in &mut files {
                f.fingerprint = None;
                f.fingerprint_outside_block = None;
            }
        } else {
            files.retain(|f| !own(f));
        }
        Ok(WorkTree { head, files })
    }

    /// Whether a changed file differs from HEAD only inside pas-agent's block: it holds one
    /// block, and its text outside the block is HEAD's version of the file (or nothing, for a
    /// file HEAD does not have). Such a change is pas-agent's own export, never the user's or an
    /// agent's: it does not make the work tree dirty, appear in a checkpoint's or a run's files,
    /// or make a checkpoint stale. Any edit outside the block still counts.
    fn only_block_changed(&self, head: Option<&str>, f: &FileState) -> bool {
        let Some(outside_now) = f.fingerprint_outside_block.as_deref() else {
            return false;
        };
        let then = match f.status {
            FileStatus::Modified => head
                .and_then(|c| self.blob_at(c, &f.path))
                .unwrap_or_default(),
            FileStatus::Untracked | FileStatus::Added => Vec::new(),
            _ => return false,
        };
        fingerprint::outside_block_any(&then).as_deref() == Some(outside_now)
    }

    /// Whether a change committed between `before` and `after` is only pas-agent's block (as in
    /// [`Repo::status`]): the file in `after` holds one block and its text outside it is the
    /// same as in `before`.
    pub fn only_block_committed(
        &self,
        before: Option<&str>,
        after: &str,
        change: &TreeChange,
    ) -> bool {
        if !matches!(change.status, FileStatus::Modified | FileStatus::Added) {
            return false;
        }
        let Some(now) = self.blob_at(after, &change.path) else {
            return false;
        };
        let Some(outside_now) = fingerprint::outside_block_of(&now) else {
            return false;
        };
        let then = before
            .and_then(|c| self.blob_at(c, &change.path))
            .unwrap_or_default();
        fingerprint::outside_block_any(&then) == Some(outside_now)
    }

    /// [`Repo::status`], with a failure reported as a warning (naming `consequence`, what the
    /// command does without it) instead of an error: session commands keep working when git
    /// does not.
    pub fn status_or_warn(&self, detail: Detail, consequence: &str) -> Option<WorkTree> {
        match self.status(detail) {
            Ok(tree) => Some(tree),
            Err(e) => {
                crate::term::warn(&format!("{e}; {consequence}"));
                None
            }
        }
    }

    /// Commits reachable from `after` and not from `before`, oldest first, at most `limit`.
    pub fn commits_between(
        &self,
        before: Option<&str>,
        after: &str,
        limit: usize,
    ) -> GitResult<Vec<CommitRef>> {
        self.ask(
            |n| n.commits_between(before, after, limit),
            || cli::commits_between(&self.top, before, after, limit),
        )
    }

    /// Files that differ between the trees of two commits (`before = None`: the empty tree),
    /// with renames, limited to the session root.
    pub fn tree_changes(&self, before: Option<&str>, after: &str) -> GitResult<Vec<TreeChange>> {
        let all = self.ask(
            |n| n.tree_changes(before, after),
            || cli::tree_changes(&self.top, before, after),
        )?;
        Ok(all.into_iter().filter(|c| self.in_scope(&c.path)).collect())
    }

    /// The content of `path` in `commit`, `None` when it is not there.
    pub fn blob_at(&self, commit: &str, path: &str) -> Option<Vec<u8>> {
        self.ask(
            |n| n.blob_at(commit, path),
            || cli::blob_at(&self.top, commit, path),
        )
        .ok()
        .flatten()
    }

    /// The absolute path of a top-relative git path as recorded ([`record_path`]), or `None`
    /// when it is not a portable relative path that stays inside the work tree (absolute, a
    /// `.`/`..`/empty component, a NUL byte; on Windows also `\\` or `:`). Paths read from a
    /// session file may be anything: such a path is data to compare, never a file to open.
    pub fn abs(&self, path: &str) -> Option<PathBuf> {
        let bytes = path_bytes_borrowed(path);
        let windows_only = cfg!(windows) && bytes.iter().any(|&b| b == b'\\' || b == b':');
        let portable = !bytes.is_empty()
            && !bytes.contains(&0)
            && !windows_only
            && bytes
                .split(|&b| b == b'/')
                .all(|c| !c.is_empty() && c != b"." && c != b"..");
        if !portable {
            return None;
        }
        #[cfg(unix)]
        let rel = {
            use std::os::unix::ffi::OsStrExt;
            std::ffi::OsStr::from_bytes(&bytes)
        };
        #[cfg(not(unix))]
        let rel = std::ffi::OsString::from(String::from_utf8(bytes.into_owned()).ok()?);
        // Sized once, and joined by hand: `rel` is relative and has no empty component, so
        // this is `top.join(rel)` without `push`'s component checks.
        let mut abs = std::ffi::OsString::with_capacity(self.top.as_os_str().len() + 1 + rel.len());
        abs.push(self.top.as_os_str());
        if !std::path::is_separator(
            self.top
                .as_os_str()
                .as_encoded_bytes()
                .last()
                .map_or('/', |&b| b as char),
        ) {
            abs.push(std::path::MAIN_SEPARATOR_STR);
        }
        abs.push(rel);
        Some(PathBuf::from(abs))
    }

    /// `path` (absolute, the file itself need not exist) relative to the top level,
    /// `/`-separated, as git names it; `None` when it is not inside the work tree.
    pub fn rel(&self, path: &Path) -> Option<String> {
        let real = path
            .canonicalize()
            .ok()
            .or_else(|| Some(path.parent()?.canonicalize().ok()?.join(path.file_name()?)))?;
        let rel = real.strip_prefix(&self.top).ok()?;
        let rel = rel.to_str()?.replace('\\', "/");
        (!rel.is_empty()).then_some(rel)
    }

    /// Whether git tracks the file at `path` (absolute): the index holds it. A path outside
    /// the work tree is not tracked.
    pub fn tracked(&self, path: &Path) -> GitResult<bool> {
        let Some(rel) = self.rel(path) else {
            return Ok(false);
        };
        self.ask(|n| n.tracked(&rel), || cli::tracked(&self.top, &rel))
    }

    /// Whether git's ignore rules exclude the file at `path` (absolute), whether or not it
    /// exists.
    pub fn ignored(&self, path: &Path) -> GitResult<bool> {
        let Some(rel) = self.rel(path) else {
            return Ok(false);
        };
        self.ask(|n| n.ignored(&rel), || cli::ignored(&self.top, &rel))
    }

    /// Makes git ignore the file at `path` (absolute, inside the work tree) on this machine
    /// only: unless the ignore rules already exclude it, a line `/<path from the top level>`
    /// is added to the repository's `info/exclude` (created when missing), which is never
    /// committed, so `git status` and every tracked file stay as they were. Returns whether a
    /// line was added.
    ///
    /// Errors: git cannot be asked, or `info/exclude` cannot be read or written (a link or
    /// anything but a regular file there is refused).
    pub fn exclude(&self, path: &Path) -> GitResult<bool> {
        if self.ignored(path)? {
            return Ok(false);
        }
        let Some(rel) = self.rel(path) else {
            return Err(GitError(format!(
                "{} is not inside the work tree {}",
                path.display(),
                self.top.display()
            )));
        };
        let file = match &self.native {
            Some(n) if !self.force_cli => n.exclude_file(),
            _ => cli::exclude_file(&self.top)?,
        };
        let fail = |e: std::io::Error| GitError(format!("{}: {e}", file.display()));
        let existing = match std::fs::symlink_metadata(&file) {
            Ok(m) if !m.file_type().is_file() => {
                return Err(GitError(format!(
                    "{} is not a regular file; nothing was added to it",
                    file.display()
                )));
            }
            Ok(_) => std::fs::read(&file).map_err(fail)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(fail(e)),
        };
        // Special characters of ignore patterns are escaped, so the line names this file only.
        let mut pattern = String::from("/");
        let last = rel.chars().count().saturating_sub(1);
        for (i, c) in rel.chars().enumerate() {
            // `!` and `#` are special only at the start, which is the `/` here; a trailing
            // space would be dropped.
            if matches!(c, '*' | '?' | '[' | '\\') || (c == ' ' && i == last) {
                pattern.push('\\');
            }
            pattern.push(c);
        }
        let mut add = Vec::new();
        if !existing.is_empty() && !existing.ends_with(b"\n") {
            add.push(b'\n');
        }
        add.extend_from_slice(pattern.as_bytes());
        add.push(b'\n');
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir).map_err(fail)?;
        }
        use std::io::Write as _;
        std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(&file)
            .and_then(|mut f| f.write_all(&add))
            .map_err(fail)?;
        Ok(true)
    }

    /// Whether a path read back from a session file is in the portable form a recorded path
    /// has on every platform: [`Repo::abs`] accepts it, and it holds no `\\` and no drive
    /// prefix (`C:`). Anything else (`..\\evil`, `/etc/passwd`) is data, never a file.
    pub fn portable(&self, path: &str) -> bool {
        let bytes = path_bytes(path);
        let drive = bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':';
        !drive && !bytes.contains(&b'\\') && self.abs(path).is_some()
    }

    /// Whether a top-relative path is under the session root and outside its `.pas-agent/`.
    pub fn in_scope(&self, path: &str) -> bool {
        let bytes = path_bytes_borrowed(path);
        let Some(rest) = bytes.strip_prefix(self.prefix.as_bytes()) else {
            return false;
        };
        !(rest == b".pas-agent" || rest.starts_with(b".pas-agent/"))
    }
}

/// How a file name git holds is written in the record: as it is when it is UTF-8 (and does not
/// start with `"` or hold a backslash), else in git's own C-style quoting — `"…"` with `\\"`,
/// `\\\\` and each byte that is not UTF-8 as a three-digit octal escape (`"caf\\351.txt"`) —
/// so that every name is recorded reversibly ([`path_bytes`]) and two different names never
/// become one entry. A backslash outside the quoted form is a separator written on Windows
/// (`session::codec::portable_path` reads it as `/`), so a name that holds one is quoted.
pub fn record_path(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) if !s.starts_with('"') && !s.contains('\\') => s.to_string(),
        _ => {
            let mut out = String::from("\"");
            for chunk in bytes.utf8_chunks() {
                for c in chunk.valid().chars() {
                    match c {
                        '"' => out.push_str("\\\""),
                        '\\' => out.push_str("\\\\"),
                        c => out.push(c),
                    }
                }
                for b in chunk.invalid() {
                    out.push_str(&format!("\\{b:03o}"));
                }
            }
            out.push('"');
            out
        }
    }
}

/// [`path_bytes`], borrowed when the name needs no unquoting (almost always).
fn path_bytes_borrowed(recorded: &str) -> std::borrow::Cow<'_, [u8]> {
    let quoted = recorded.len() >= 2 && recorded.starts_with('"') && recorded.ends_with('"');
    if quoted {
        std::borrow::Cow::Owned(path_bytes(recorded))
    } else {
        std::borrow::Cow::Borrowed(recorded.as_bytes())
    }
}

/// The bytes of a file name as [`record_path`] wrote it. A string that is not in the quoted
/// form (or not validly quoted) is taken as it is.
pub fn path_bytes(recorded: &str) -> Vec<u8> {
    let quoted = recorded.len() >= 2 && recorded.starts_with('"') && recorded.ends_with('"');
    if !quoted {
        return recorded.as_bytes().to_vec();
    }
    let inner = &recorded.as_bytes()[1..recorded.len() - 1];
    let mut out = Vec::with_capacity(inner.len());
    let mut i = 0;
    while i < inner.len() {
        match inner[i] {
            b'\\' => match inner.get(i + 1) {
                Some(b'"') | Some(b'\\') => {
                    out.push(inner[i + 1]);
                    i += 2;
                }
                Some(b'0'..=b'3')
                    if inner.len() >= i + 4
                        && inner[i + 2..i + 4]
                            .iter()
                            .all(|b| (b'0'..=b'7').contains(b)) =>
                {
                    let digits = std::str::from_utf8(&inner[i + 1..i + 4]).unwrap_or("0");
                    out.push(u8::from_str_radix(digits, 8).unwrap_or(0));
                    i += 4;
                }
                _ => return recorded.as_bytes().to_vec(),
            },
            b'"' => return recorded.as_bytes().to_vec(),
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    out
}

/// A file's two-letter status as git's porcelain gives it (X: HEAD→index, Y: index→work tree),
/// the source of a rename or copy, and whether an untracked file is at the path. A path can be
/// both in the index diff and untracked (`git rm --cached f` leaves `D` staged and `f`
/// untracked), so being untracked is a flag of its own, not a letter that could overwrite X.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Entry {
    pub x: Option<char>,
    pub y: Option<char>,
    pub from: Option<String>,
    pub untracked: bool,
}

impl Entry {
    /// Sorts status rows by path, keeping the order of equal paths (one comparator for both
    /// readers, as [`TreeChange::sort_by_path`]).
    pub fn sort_rows(rows: &mut [(String, Entry)]) {
        rows.sort_by(|a, b| a.0.cmp(&b.0));
    }

    /// Adds what another record says about the same path.
    pub fn merge(&mut self, other: Entry) {
        self.x = other.x.or(self.x);
        self.y = other.y.or(self.y);
        self.from = other.from.or(self.from.take());
        self.untracked |= other.untracked;
    }

    /// The original's classification (docs/format.md, FileState): `?` untracked; `R` renamed;
    /// `C` added (a copy); `D` deleted; `A` added; anything else modified. An intent-to-add
    /// entry (`git add -N`, Y = `A`) counts as added. A file that is on disk but untracked is
    /// untracked, whatever the index says (a staged deletion of a file that is still there).
    pub fn status(&self) -> FileStatus {
        let has = |c: char| self.x == Some(c) || self.y == Some(c);
        if self.untracked {
            FileStatus::Untracked
        } else if has('R') {
            FileStatus::Renamed {
                from: self.from.clone().unwrap_or_default(),
            }
        } else if has('C') {
            FileStatus::Added
        } else if has('D') {
            FileStatus::Deleted
        } else if has('A') {
            FileStatus::Added
        } else {
            FileStatus::Modified
        }
    }

    fn into_file_state(self, path: String) -> FileState {
        FileState::new(path, self.status())
    }
}

/// Changed paths with their entries, sorted by path.
pub(crate) type RawStatus = BTreeMap<String, Entry>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_with_a_backslash_is_recorded_quoted_and_read_back() {
        for name in [&b"a\\b.txt"[..], b"dir\\", b"\\", b"x\\\"y"] {
            let recorded = record_path(name);
            assert!(
                recorded.starts_with('"') && recorded.ends_with('"'),
                "{recorded}"
            );
            assert_eq!(path_bytes(&recorded), name, "{recorded}");
        }
        assert_eq!(record_path(b"sub/dir/f.txt"), "sub/dir/f.txt");
    }

    fn entry(x: char, y: char) -> Entry {
        Entry {
            x: (x != '.' && x != '?').then_some(x),
            y: (y != '.' && y != '?').then_some(y),
            from: Some("old".into()),
            untracked: x == '?',
        }
    }

    #[test]
    fn classification_follows_the_original() {
        assert_eq!(entry('?', '?').status(), FileStatus::Untracked);
        assert_eq!(
            entry('R', 'M').status(),
            FileStatus::Renamed { from: "old".into() }
        );
        assert_eq!(entry('C', '.').status(), FileStatus::Added);
        assert_eq!(entry('A', 'D').status(), FileStatus::Deleted);
        assert_eq!(entry('A', 'M').status(), FileStatus::Added);
        assert_eq!(entry('.', 'A').status(), FileStatus::Added);
        assert_eq!(entry('M', 'T').status(), FileStatus::Modified);
        assert_eq!(entry('U', 'U').status(), FileStatus::Modified);
        // Staged deletion plus the file still on disk, in either order of arrival.
        let mut a = entry('D', '.');
        a.merge(entry('?', '?'));
        let mut b = entry('?', '?');
        b.merge(entry('D', '.'));
        assert_eq!(a.status(), FileStatus::Untracked);
        assert_eq!(a, b);
    }

    #[test]
    fn recorded_paths_are_reversible_and_distinct() {
        for name in [
            &b"plain.txt"[..],
            b"caf\xe9.txt",
            b"caf\xe8.txt",
            b"\"quoted\".txt",
            b"back\\slash \xff\"",
            "ü.txt".as_bytes(),
        ] {
            let rec = record_path(name);
            assert_eq!(path_bytes(&rec), name, "{rec}");
        }
        assert_ne!(record_path(b"a\xe9"), record_path(b"a\xe8"));
        assert_eq!(record_path(b"caf\xe9.txt"), "\"caf\\351.txt\"");
        assert_eq!(record_path("ü.txt".as_bytes()), "ü.txt");
    }

    proptest::proptest! {
        /// Any name git can hold (bytes without NUL) is recorded reversibly, and names that
        /// are UTF-8, do not start with `"` and hold no backslash (recorded quoted, so that a
        /// stored `sub\dir` is never read as a Windows path) are recorded as they are.
        #[test]
        fn any_name_round_trips(name in proptest::collection::vec(1u8..=255, 0..40)) {
            let rec = record_path(&name);
            proptest::prop_assert_eq!(path_bytes(&rec), name.clone());
            if let Ok(s) = std::str::from_utf8(&name)
                && !s.starts_with('"')
                && !s.contains('\\')
            {
                proptest::prop_assert_eq!(rec, s);
            }
        }
    }

    #[test]
    fn recorded_paths_that_leave_the_work_tree_are_never_files() {
        let repo = Repo {
            top: PathBuf::from("/r"),
            prefix: String::new(),
            native: None,
            force_cli: true,
        };
        for bad in [
            "/etc/passwd",
            "../x",
            "a/../../x",
            "a//b",
            "./a",
            "",
            "\"..\"",
            "a\u{0}b",
        ] {
            assert_eq!(repo.abs(bad), None, "{bad:?}");
        }
        assert_eq!(repo.abs("src/a.rs"), Some(PathBuf::from("/r/src/a.rs")));
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            let p = repo.abs("\"caf\\351\"").unwrap();
            assert_eq!(p.as_os_str().as_bytes(), b"/r/caf\xe9");
        }
    }

    #[test]
    fn scope_excludes_state_dir_and_other_subtrees() {
        let repo = Repo {
            top: PathBuf::from("/r"),
            prefix: "sub/".into(),
            native: None,
            force_cli: true,
        };
        assert!(repo.in_scope("sub/a.rs"));
        assert!(!repo.in_scope("other/a.rs"));
        assert!(!repo.in_scope("sub/.pas-agent/session.json"));
        assert!(repo.in_scope("sub/.pas-agent-notes"));
    }
}
