//! An agent's own session store: the [`Store`] interface each agent module implements, where
//! an agent keeps its files ([`Home`]), and the small readers the stores share.
//!
//! A store answers three questions for the rest of pas-agent: which sessions of a directory
//! started in a window of time ([`Store::sessions`], how the launcher learns a run's session
//! id), whether a session id is really there ([`Store::has`], how a chosen id is confirmed),
//! and what was said in a session ([`Store::transcript`], the run's words). Nothing here fails:
//! a store that is missing, damaged or in a layout this version does not know yields no
//! sessions, and a transcript whose `missing` says why.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::model::Transcript;

/// At most this much of a first line is read (a Codex rollout's first line carries the whole
/// system prompt, tens of kilobytes).
pub const MAX_LINE: u64 = 4 * 1024 * 1024;

/// One agent's session store.
pub trait Store: Sync {
    /// The directory whose files hold the agent's sessions: the launcher watches which of them
    /// the agent's processes hold open during a run (`None` when it cannot be found, or the
    /// store is not a directory of files).
    fn dir(&self) -> Option<PathBuf>;

    /// The sessions of `query.cwd` that started between `query.from` and `query.to`, in any
    /// order. Errors are no sessions.
    fn sessions(&self, query: &Query<'_>) -> Vec<Candidate>;

    /// Whether a resumed run's session is looked up here afterwards (a resume that forks, or
    /// an agent that starts a new id on resume, shows up in the store); `false` where asking
    /// costs a start of the agent itself, and the resumed id is recorded as it was.
    fn checked_after_resume(&self) -> bool {
        true
    }

    /// Whether the agent may write a finished turn to its store only after its session-end
    /// hook ran (GitHub Copilot CLI writes its events file behind): a hook then reads the
    /// transcript again for a moment until it holds an answer.
    fn written_late(&self) -> bool {
        false
    }

    /// Whether the store holds session `id` of directory `cwd`: `Some(false)` when it surely
    /// does not (a chosen id the agent did not use), `None` when the store cannot tell.
    fn has(&self, id: &str, cwd: &Path) -> Option<bool> {
        let _ = (id, cwd);
        None
    }

    /// Makes session `id` findable by the agent started in `cwd`, before a resume: a store
    /// keyed by the directory (Claude Code's `projects/<dashed cwd>/`, Gemini CLI's project
    /// slugs) holds a conversation started elsewhere — a checkout that moved, a devcontainer's
    /// bind mount — under another key, where the agent, started here, would not find it and
    /// would refuse the id. The default, for stores not keyed by directory: [`Resumable::Here`].
    fn resumable(&self, id: &str, cwd: &Path) -> Resumable {
        let _ = (id, cwd);
        Resumable::Here
    }

    /// What was said in session `id`, run in `cwd`, after `since`. `hint` is a path to the
    /// session's file that the agent itself gave (a hook payload's `transcript_path`); it is
    /// tried first, and the store is searched when it is absent or not that session's.
    fn transcript(
        &self,
        id: &str,
        cwd: &Path,
        since: DateTime<Utc>,
        hint: Option<&Path>,
    ) -> Transcript;

    /// Every conversation the store holds for directory `dir` (started there, whoever started
    /// it), in any order, each with when it was last written and its first prompt
    /// (`pas-agent sessions`, and `run --resume SELECTOR`). `program`: the agent's executable,
    /// as in [`Query::program`]. Errors are no conversations.
    ///
    /// The default asks [`Store::sessions`] for every session of `dir` since 1970 and reads
    /// each one's transcript for its first prompt; a store that can say it more cheaply (the
    /// first lines of a file, a listing) overrides it.
    fn conversations(&self, dir: &Path, program: Option<&Path>) -> Vec<Conversation> {
        let query = Query {
            cwd: dir,
            from: DateTime::<Utc>::UNIX_EPOCH,
            to: Utc::now(),
            program,
        };
        let found = self.sessions(&query);
        conversations_of(found, dir, &|id, file| {
            self.transcript(id, dir, DateTime::<Utc>::UNIX_EPOCH, file)
        })
    }

    /// The file session `id` (run in `cwd`) is kept in, when the store keeps one file per
    /// session and it is there: written when the agent works in that session, which is what
    /// `pas-agent restore` looks at to confirm a restored agent is in its conversation.
    /// `None` when the store cannot say (the default).
    fn session_file(&self, id: &str, cwd: &Path) -> Option<PathBuf> {
        let _ = (id, cwd);
        None
    }
}

/// One conversation in an agent's store ([`Store::conversations`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conversation {
    /// The agent's session id (checked against the agent's id shape by the caller).
    pub id: String,
    /// When it was last written: its newest entry, or its file's modification time.
    pub updated: DateTime<Utc>,
    /// The first prompt of it, as the transcript reader keeps prompts (cut at
    /// [`crate::model::MAX_PROMPT_CHARS`]); `None` when it holds none.
    pub first_prompt: Option<String>,
    /// The directory the agent recorded for it.
    pub cwd: PathBuf,
    /// The file it is kept in, when it is one file.
    pub file: Option<PathBuf>,
}

impl Candidate {
    /// Sorts `found` newest first by [`Candidate::at`], keeping the order of equal times. One
    /// function rather than a closure in each caller: a stable sort is compiled once per
    /// element type and comparator, and this one is used by every store.
    pub fn newest_first(found: &mut [Candidate]) {
        found.sort_by_key(|c| std::cmp::Reverse(c.at));
    }
}

impl std::fmt::Debug for dyn Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Store")
    }
}

/// Whether the agent, started in a directory, finds a session to resume ([`Store::resumable`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resumable {
    /// It finds it there as it is (or the store cannot tell otherwise).
    Here,
    /// It was kept under another directory's key, `from`, and is now also at `to`, where the
    /// agent started here looks (a copy: the original stays as it was).
    Copied {
        /// Where the session was (its file or directory).
        from: PathBuf,
        /// Where it now also is.
        to: PathBuf,
    },
    /// The agent would refuse the id: the session is not in its store, or cannot be made
    /// findable from here (why, in words).
    Missing(String),
}

/// Which sessions [`Store::sessions`] is asked for.
#[derive(Debug, Clone, Copy)]
pub struct Query<'a> {
    /// The directory the agent ran in.
    pub cwd: &'a Path,
    /// The earliest start time (inclusive).
    pub from: DateTime<Utc>,
    /// The latest start time (inclusive).
    pub to: DateTime<Utc>,
    /// The agent's executable, for stores read through the agent itself (OpenCode's session
    /// list); `None`: found on `PATH`.
    pub program: Option<&'a Path>,
}

impl Query<'_> {
    /// Whether `t` falls inside the window.
    pub fn inside(&self, t: DateTime<Utc>) -> bool {
        t >= self.from && t <= self.to
    }
}

/// One session found in a store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// The agent's session id, as the store holds it (checked against the agent's id shape by
    /// the caller).
    pub id: String,
    /// When the session started (or, where the store has no start time, when its file was
    /// last written).
    pub at: DateTime<Utc>,
    /// The file the session is kept in, when it is one file.
    pub file: Option<PathBuf>,
}

/// Where an agent keeps its files: `var`, when set to a non-empty value, names either that
/// directory itself or a replacement for `$HOME` under which `dir` is looked for; otherwise
/// `$HOME/dir`. One rule for the store, the user-level settings and the MCP settings alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Home {
    /// The agent's environment variable (`CLAUDE_CONFIG_DIR`, `GEMINI_CLI_HOME`), if it has one.
    pub var: Option<&'static str>,
    /// What the variable names.
    pub var_is: VarIs,
    /// The directory relative to `$HOME` (`.claude`, `.pi/agent`).
    pub dir: &'static str,
}

/// What an agent's home variable names (see [`Home`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VarIs {
    /// The agent's directory itself (`CODEX_HOME=/x` → `/x`).
    Dir,
    /// A replacement for `$HOME` (`GEMINI_CLI_HOME=/x` → `/x/.gemini`).
    Home,
}

impl Home {
    /// The agent's directory, or `None` when neither its variable nor `HOME` is set.
    pub fn path(&self) -> Option<PathBuf> {
        match self.var.and_then(env_dir) {
            Some(v) if self.var_is == VarIs::Dir => Some(v),
            Some(v) => Some(v.join(self.dir)),
            None => Some(home()?.join(self.dir)),
        }
    }
}

/// [`Store::conversations`]'s default after the store's sessions are found: newest first, each
/// id once, with its first prompt from `transcript(id, file)`. Not generic, so it is compiled
/// once rather than once per store.
fn conversations_of(
    mut found: Vec<Candidate>,
    dir: &Path,
    transcript: &dyn Fn(&str, Option<&Path>) -> Transcript,
) -> Vec<Conversation> {
    Candidate::newest_first(&mut found);
    let mut out: Vec<Conversation> = Vec::new();
    for c in found {
        if out.iter().any(|o| o.id == c.id) {
            continue;
        }
        let t = transcript(&c.id, c.file.as_deref());
        out.push(Conversation {
            updated: c.file.as_deref().and_then(modified).unwrap_or(c.at),
            first_prompt: t.prompts.into_iter().next(),
            cwd: dir.to_path_buf(),
            file: c.file,
            id: c.id,
        });
    }
    out
}

/// A non-empty environment variable as a path.
pub fn env_dir(var: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// The user's home directory: `HOME`, else `USERPROFILE`.
pub fn home() -> Option<PathBuf> {
    env_dir("HOME").or_else(|| env_dir("USERPROFILE"))
}

/// The subdirectories of `dir`, in no particular order.
pub fn subdirs(dir: &Path) -> impl Iterator<Item = PathBuf> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
}

/// The regular files in `dir`, in no particular order.
pub fn files(dir: &Path) -> impl Iterator<Item = PathBuf> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.path())
}

/// When `path` was last written.
pub fn modified(path: &Path) -> Option<DateTime<Utc>> {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .map(DateTime::<Utc>::from)
}

/// The first line of a file, at most [`MAX_LINE`] bytes, as JSON.
pub fn first_line(path: &Path) -> Option<Value> {
    let file = std::fs::File::open(path).ok()?;
    let mut line = Vec::new();
    BufReader::new(file.take(MAX_LINE))
        .read_until(b'\n', &mut line)
        .ok()?;
    serde_json::from_slice(&line).ok()
}

/// How much of a session file is read for its first prompt ([`head`]).
pub const HEAD_BYTES: u64 = 1024 * 1024;

/// The start of a file, at most `max` bytes, up to its last whole line (`None` when it cannot
/// be read): enough to find a conversation's first prompt without reading all of it.
pub fn head(path: &Path, max: u64) -> Option<String> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(max)
        .read_to_end(&mut bytes)
        .ok()?;
    if bytes.len() as u64 == max
        && let Some(end) = bytes.iter().rposition(|b| *b == b'\n')
    {
        bytes.truncate(end + 1);
    }
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// A whole file (at most [`MAX_LINE`] bytes) as one JSON value.
pub fn whole_json(path: &Path) -> Option<Value> {
    let mut text = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(MAX_LINE)
        .read_to_end(&mut text)
        .ok()?;
    serde_json::from_slice(&text).ok()
}

/// Whether the directory an agent recorded, `a`, is `b` (as written, or once both are made
/// canonical; two directories that do not exist are not the same one).
pub fn same_dir(a: &str, b: &Path) -> bool {
    let a = Path::new(a);
    a == b || matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y)
}

/// `cwd` with every character that is not an ASCII letter or digit as `-`: the project key of
/// Claude Code's and Qwen Code's stores (`/home/u/my.app` → `-home-u-my-app`). They work on
/// JavaScript strings, so a character outside the Basic Multilingual Plane (two UTF-16 units)
/// becomes `--`.
pub fn dashed(cwd: &Path) -> String {
    cwd.to_string_lossy()
        .chars()
        .flat_map(|c| {
            let n = if c.is_ascii_alphanumeric() {
                1
            } else {
                c.len_utf16()
            };
            std::iter::repeat_n(if c.is_ascii_alphanumeric() { c } else { '-' }, n)
        })
        .collect()
}

/// Copies the file or directory `from` to `to`, which must not exist (a file already there is
/// never replaced; a directory's entries are copied when missing). Links are not followed:
/// only regular files and directories are copied.
///
/// Errors: the first copy that failed.
pub fn copy_new(from: &Path, to: &Path) -> std::io::Result<()> {
    let meta = std::fs::symlink_metadata(from)?;
    if meta.is_dir() {
        std::fs::create_dir_all(to)?;
        for entry in std::fs::read_dir(from)?.flatten() {
            copy_new(&entry.path(), &to.join(entry.file_name()))?;
        }
        return Ok(());
    }
    if !meta.is_file() || std::fs::symlink_metadata(to).is_ok() {
        return Ok(());
    }
    let mut source = std::fs::File::open(from)?;
    let mut target = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(to)?;
    std::io::copy(&mut source, &mut target)?;
    target.sync_all()
}

/// Copies the session file `from` (JSON lines) to `to`, which must not exist, with the `cwd`
/// field of its first line set to `cwd`: for stores keyed by directory whose agent also checks
/// that a session's first record names the directory it was started in (Qwen Code compares the
/// hash of that `cwd` with its project's; pi takes it as the session's directory). The rest of
/// the file is copied byte for byte; the original is left as it was.
///
/// Errors: `from` cannot be read or its first line is no JSON object; `to` exists or cannot be
/// written.
pub fn copy_rehomed(from: &Path, to: &Path, cwd: &Path) -> std::io::Result<()> {
    let bytes = std::fs::read(from)?;
    let end = bytes
        .iter()
        .position(|&b| b == b'\n')
        .unwrap_or(bytes.len());
    let mut head: serde_json::Value = serde_json::from_slice(&bytes[..end])
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    let Some(fields) = head.as_object_mut() else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "its first line is not a JSON object",
        ));
    };
    fields.insert(
        "cwd".into(),
        serde_json::Value::String(cwd.to_string_lossy().into_owned()),
    );
    let mut target = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(to)?;
    let mut out = serde_json::to_vec(&head).map_err(std::io::Error::other)?;
    out.extend_from_slice(&bytes[end..]);
    std::io::Write::write_all(&mut target, &out)?;
    target.sync_all()
}

/// Runs `program args…` in `cwd` with no input and at most `timeout`, and returns at most
/// `limit` bytes of its standard output, or why not (it could not start, took too long,
/// printed more than `limit`, or failed). Past the limit the rest is drained unread, so that a
/// huge output ends at pipe speed rather than at the timeout.
pub fn run_program(
    program: &Path,
    args: &[&str],
    cwd: &Path,
    timeout: Duration,
    limit: u64,
) -> Result<Vec<u8>, String> {
    let shown = format!(
        "`{} {}`",
        program
            .file_name()
            .map_or_else(|| program.to_string_lossy(), |n| n.to_string_lossy()),
        args.join(" ")
    );
    let mut child = std::process::Command::new(program)
        .args(args)
        .current_dir(cwd)
        .env("PWD", cwd)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("{shown} could not be started: {e}"))?;
    let stdout = child.stdout.take();
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        if let Some(mut s) = stdout {
            let _ = (&mut s).take(limit + 1).read_to_end(&mut out);
            let _ = std::io::copy(&mut s, &mut std::io::sink());
        }
        out
    });
    let deadline = std::time::Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "{shown} did not finish within {} s",
                    timeout.as_secs()
                ));
            }
        }
    };
    let out = reader.join().unwrap_or_default();
    if out.len() as u64 > limit {
        return Err(format!(
            "{shown} printed more than {} ({limit} bytes) an agent transcript may hold",
            crate::limits::human(limit),
        ));
    }
    if !status.success() {
        return Err(format!("{shown} failed ({status})"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_home_variable_names_the_directory_or_a_home() {
        // Read without changing the process's environment: a variable that is never set.
        let dir = Home {
            var: Some("PAS_AGENT_TEST_NEVER_SET"),
            var_is: VarIs::Dir,
            dir: ".x",
        };
        assert_eq!(dir.path(), home().map(|h| h.join(".x")));
        assert_eq!(dashed(Path::new("/home/u/my.app")), "-home-u-my-app");
    }
}
