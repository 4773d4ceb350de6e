//! The session data model: `.pas-agent/session.json`, schema version 1.
//!
//! Field names, order and encodings follow the original PAS-Agent 0.2.x
//! (docs/format.md), so a file it wrote loads here and a file written here loads
//! there. Additions are optional fields (`runs`, `fingerprint_outside_block`) that the
//! original ignores. Every record keeps the fields it does not know in `extra`, so data
//! written by a newer pas-agent survives a load and save by this one.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use uuid::Uuid;

/// The schema version this build reads and writes.
pub const SCHEMA_VERSION: u32 = 1;

/// Fields a record does not know, kept in file order and written back unchanged.
pub type Extra = serde_json::Map<String, Value>;

/// One task's portable record. Shape: the original PAS-Agent's plus `runs` (docs/format.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Session {
    /// Missing counts as 1 (a file of the original PAS-Agent 0.1.0). When present it must be
    /// written as a whole number (`1`, not `1.0`, `1e0` or `"1"`); values too large for `u32`
    /// saturate, and `session::codec` refuses every version but [`SCHEMA_VERSION`].
    #[serde(default = "one", deserialize_with = "exact_version")]
    pub schema_version: u32,
    /// UUID v4 naming this session.
    pub id: Uuid,
    /// Defaults to the last component of the session root.
    pub project_name: String,
    /// RFC 3339 UTC.
    pub created_at: DateTime<Utc>,
    /// Set by `init`, `update`, `remove`, `checkpoint` and the launcher; not by `export`.
    pub updated_at: DateTime<Utc>,
    /// The task as it stands now.
    pub task: TaskState,
    /// Git state as of the last command that refreshed it; null outside git.
    #[serde(default)]
    pub git: Option<GitRef>,
    /// Oldest first; "#N" is the 1-based position.
    #[serde(default)]
    pub checkpoints: Vec<Checkpoint>,
    /// Launcher records, oldest first (docs/launcher.md, "The run record"). Omitted when empty so that a session without
    /// runs is byte-for-byte what the original writes.
    #[serde(default, skip_serializing_if = "Runs::is_none")]
    pub runs: Runs,
    /// Fields this build does not know, kept in file order and written back unchanged.
    #[serde(flatten)]
    pub extra: Extra,
}

impl Session {
    /// A copy without the checkpoints and runs: cheap however long the history is.
    pub fn clone_without_history(&self) -> Session {
        Session {
            schema_version: self.schema_version,
            id: self.id,
            project_name: self.project_name.clone(),
            created_at: self.created_at,
            updated_at: self.updated_at,
            task: self.task.clone(),
            git: self.git.clone(),
            checkpoints: Vec::new(),
            runs: Runs::default(),
            extra: self.extra.clone(),
        }
    }
}

/// A session's runs, oldest first: the old runs left undecoded (only by the session store's
/// `Project::load_recent`, for commands that never read them), then the decoded ones, which
/// [`Runs`] dereferences to.
///
/// After a full load (`Project::load`) nothing is undecoded and a `Runs` is
/// its `Vec<Run>`: `len()`, indices and iteration cover every run. After `load_recent` they
/// cover only the runs after the undecoded ones ([`Runs::undecoded`] of them, numbered
/// `1..=undecoded`), which are written back byte for byte.
#[derive(Debug, Clone, Default)]
pub struct Runs {
    /// The leading old runs as they were in the file (each one JSON object).
    old: Vec<Box<serde_json::value::RawValue>>,
    /// The runs after them, decoded.
    list: Vec<Run>,
}

impl Runs {
    /// Runs whose first `old.len()` are the undecoded `old`, then `list`.
    pub fn with_undecoded(old: Vec<Box<serde_json::value::RawValue>>, list: Vec<Run>) -> Runs {
        Runs { old, list }
    }

    /// How many leading runs are left undecoded (0 after a full load).
    pub fn undecoded(&self) -> usize {
        self.old.len()
    }

    /// How many runs the session has, undecoded ones included.
    pub fn total(&self) -> usize {
        self.old.len() + self.list.len()
    }

    /// Whether the session has no run at all (the field is then left out of the file).
    pub fn is_none(&self) -> bool {
        self.total() == 0
    }

    /// The decoded runs (every run after a full load).
    pub fn into_decoded(self) -> Vec<Run> {
        self.list
    }

    /// The number of the decoded run at `index` (0-based in the decoded runs): its place among
    /// all the session's runs, from 1.
    pub fn number(&self, index: usize) -> usize {
        self.old.len() + index + 1
    }

    /// What the launcher's records read of the undecoded runs ([`Brief`]), oldest first; a run
    /// that does not read so (never, for a file whose values were checked) is left out.
    pub fn undecoded_briefs(&self) -> Vec<Brief<'_>> {
        self.old
            .iter()
            .filter_map(|raw| serde_json::from_str(raw.get()).ok())
            .collect()
    }

    /// The JSON of the undecoded run at `index` (0-based among [`Runs::undecoded`]), as the
    /// file holds it; `None` when out of range. The session's codec decodes it
    /// (`decode_old`).
    pub fn undecoded_json(&self, index: usize) -> Option<&str> {
        self.old.get(index).map(|raw| raw.get())
    }
}

impl std::ops::Deref for Runs {
    type Target = Vec<Run>;
    fn deref(&self) -> &Vec<Run> {
        &self.list
    }
}

impl std::ops::DerefMut for Runs {
    fn deref_mut(&mut self) -> &mut Vec<Run> {
        &mut self.list
    }
}

impl From<Vec<Run>> for Runs {
    fn from(list: Vec<Run>) -> Runs {
        Runs {
            old: Vec::new(),
            list,
        }
    }
}

impl FromIterator<Run> for Runs {
    fn from_iter<I: IntoIterator<Item = Run>>(iter: I) -> Runs {
        Runs::from(iter.into_iter().collect::<Vec<_>>())
    }
}

impl PartialEq for Runs {
    fn eq(&self, other: &Runs) -> bool {
        self.list == other.list
            && self.old.len() == other.old.len()
            && self
                .old
                .iter()
                .zip(&other.old)
                .all(|(a, b)| a.get() == b.get())
    }
}

/// The fields of an old run (left undecoded, [`Runs`]) that the launcher's records weigh against
/// a new run: whose agent session it recorded, and when. The agent, directory and start are
/// borrowed from the run's JSON where it holds them unescaped; the times are read when asked
/// ([`Brief::start`], [`Brief::end`]).
#[derive(Debug, Clone, Deserialize)]
pub struct Brief<'a> {
    /// As [`Run::agent`].
    #[serde(borrow)]
    pub agent: std::borrow::Cow<'a, str>,
    /// As [`Run::cwd`].
    #[serde(borrow)]
    pub cwd: std::borrow::Cow<'a, str>,
    /// As [`Run::started_at`], as the file spells it (RFC 3339).
    #[serde(borrow)]
    pub started_at: std::borrow::Cow<'a, str>,
    /// As [`Run::ended_at`], as the file spells it.
    #[serde(borrow, default)]
    pub ended_at: Option<std::borrow::Cow<'a, str>>,
    /// As [`Run::agent_session_id`].
    #[serde(borrow, default)]
    pub agent_session_id: Option<std::borrow::Cow<'a, str>>,
    /// Whether the run did no work ([`Run::result`] is set).
    #[serde(default)]
    pub result: Option<serde::de::IgnoredAny>,
    /// When a later command closed it, for a run whose launcher was gone (`reconciled_at`).
    #[serde(borrow, default)]
    pub reconciled_at: Option<std::borrow::Cow<'a, str>>,
}

impl Brief<'_> {
    /// When it started; `None` when the time does not read.
    pub fn start(&self) -> Option<DateTime<Utc>> {
        rfc3339(&self.started_at)
    }

    /// When it ended; `None` when it has no end or the time does not read.
    pub fn end(&self) -> Option<DateTime<Utc>> {
        self.ended_at.as_deref().and_then(rfc3339)
    }

    /// Whether the run started by `end` and ended at or after `start` (a run that did not end,
    /// or whose times do not read, did not).
    pub fn ended_after(&self, start: DateTime<Utc>, end: DateTime<Utc>) -> bool {
        self.start().is_some_and(|s| s <= end) && self.end().is_some_and(|e| e >= start)
    }
}

/// A time as the full decode of a run reads it (chrono's `DateTime<Utc>` from its text, which
/// takes `+0000` and other spellings besides RFC 3339's); `None` when it does not read.
fn rfc3339(t: &str) -> Option<DateTime<Utc>> {
    t.parse().ok()
}

/// The fields of a run that are read from running and recent runs only (the launcher, the
/// prompt, freeze, reconcile) and from `runs N` / `runs --json`, which put an old run's details
/// back: an old run's skeleton leaves them out (their values move to the history file with its
/// other details, `session::history`), which keeps a skeleton about 0.7 KB instead of 1.1 KB.
pub const SKELETON_LEAVES_OUT: [&str; 8] = [
    "launcher_pid",
    "launcher_started",
    "nonce",
    "head_before",
    "head_after",
    "checkpoint_before",
    "checkpoint_after",
    "capture",
];

/// The field that marks an old run's skeleton: its details are in the history file.
pub const SKELETON_KEY: &str = "details_in_history";

thread_local! {
    /// Set while [`Stored`] writes a skeleton: [`Run`]'s fields named in
    /// [`SKELETON_LEAVES_OUT`] are then left out when null ([`left_out`]).
    static WRITING_SKELETON: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether a launcher field of a run is left out of the JSON being written: null, in a
/// skeleton ([`Stored`]).
fn left_out<T>(value: &Option<T>) -> bool {
    value.is_none() && WRITING_SKELETON.with(std::cell::Cell::get)
}

/// A decoded run as a session file holds it: a skeleton ([`SKELETON_KEY`]) without the
/// [`SKELETON_LEAVES_OUT`] fields that are null (the others were moved out when it became one);
/// any other run with all its fields.
struct Stored<'a>(&'a Run);

impl Serialize for Stored<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        /// Clears the flag however the write ends.
        struct Reset;
        impl Drop for Reset {
            fn drop(&mut self) {
                WRITING_SKELETON.with(|f| f.set(false));
            }
        }
        let skeleton = self.0.extra.get(SKELETON_KEY) == Some(&Value::Bool(true));
        WRITING_SKELETON.with(|f| f.set(skeleton));
        let _reset = Reset;
        self.0.serialize(s)
    }
}

impl Serialize for Runs {
    /// One array: the undecoded runs as they were, then the decoded ones ([`Stored`]).
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = s.serialize_seq(Some(self.total()))?;
        for raw in &self.old {
            seq.serialize_element(raw)?;
        }
        for run in &self.list {
            seq.serialize_element(&Stored(run))?;
        }
        seq.end()
    }
}

impl<'de> Deserialize<'de> for Runs {
    /// Every run decoded.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Runs, D::Error> {
        Vec::<Run>::deserialize(d).map(Runs::from)
    }
}

fn one() -> u32 {
    1
}

/// Reads `schema_version` by the one rule every number of the file follows: exactly the
/// integer its spelling says. `2.0`, `1e3`, `-1`, `"1"` and `null` are errors (the file is
/// refused and left alone), so a newer or foreign file is never read as version 1.
fn exact_version<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    struct Exact;
    impl serde::de::Visitor<'_> for Exact {
        type Value = u32;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            write!(
                f,
                "a whole number written without a fraction or exponent (this version reads {SCHEMA_VERSION})"
            )
        }
        fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<u32, E> {
            Ok(u32::try_from(v).unwrap_or(u32::MAX))
        }
    }
    d.deserialize_u64(Exact)
}

/// What the task is and where it stands. Every field defaults, so any subset loads.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TaskState {
    /// What the task is, trimmed; `init` and `update --task` refuse an empty one ("" when missing).
    pub description: String,
    /// What the task aims at, beyond its description; trimmed, "" when unset.
    pub objective: String,
    /// Items done, in the order they were done; `status` numbers them from 1.
    pub completed: Vec<String>,
    /// Items still to do, in order; `update --done N` moves item N (1-based) to `completed`.
    pub remaining: Vec<String>,
    /// The very next step, trimmed; null when unset (a blank value counts as unset, see
    /// [`TaskState::next`]).
    pub next_action: Option<String>,
    /// What stops progress now; `update --resolve N` drops item N (1-based).
    pub blockers: Vec<String>,
    /// Choices made and to be kept, oldest first.
    pub decisions: Vec<String>,
    /// Rules the work must respect (requirements, limits), oldest first.
    pub constraints: Vec<String>,
    /// Facts learned along the way, oldest first.
    pub discoveries: Vec<String>,
    /// Fields this build does not know, kept in file order and written back unchanged.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The numbered lists of a task, as `remove` and `status` name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListKind {
    /// `task.completed`.
    Completed,
    /// `task.remaining`.
    Remaining,
    /// `task.blockers`.
    Blockers,
    /// `task.decisions`.
    Decisions,
    /// `task.constraints`.
    Constraints,
    /// `task.discoveries`.
    Discoveries,
}

impl ListKind {
    /// Every list, in the order `status` shows them.
    pub const IN_STATUS_ORDER: [ListKind; 6] = [
        ListKind::Completed,
        ListKind::Remaining,
        ListKind::Blockers,
        ListKind::Decisions,
        ListKind::Constraints,
        ListKind::Discoveries,
    ];

    /// The list's heading in text output ("Completed", "Remaining", …).
    pub fn title(self) -> &'static str {
        match self {
            ListKind::Completed => "Completed",
            ListKind::Remaining => "Remaining",
            ListKind::Blockers => "Blockers",
            ListKind::Decisions => "Decisions",
            ListKind::Constraints => "Constraints",
            ListKind::Discoveries => "Discoveries",
        }
    }

    /// The list's name as the user types it and as `session.json` spells it.
    pub fn name(self) -> &'static str {
        match self {
            ListKind::Completed => "completed",
            ListKind::Remaining => "remaining",
            ListKind::Blockers => "blockers",
            ListKind::Decisions => "decisions",
            ListKind::Constraints => "constraints",
            ListKind::Discoveries => "discoveries",
        }
    }
}

impl TaskState {
    /// The list of the given kind.
    pub fn list(&self, kind: ListKind) -> &Vec<String> {
        match kind {
            ListKind::Completed => &self.completed,
            ListKind::Remaining => &self.remaining,
            ListKind::Blockers => &self.blockers,
            ListKind::Decisions => &self.decisions,
            ListKind::Constraints => &self.constraints,
            ListKind::Discoveries => &self.discoveries,
        }
    }

    /// The list of the given kind, mutable.
    pub fn list_mut(&mut self, kind: ListKind) -> &mut Vec<String> {
        match kind {
            ListKind::Completed => &mut self.completed,
            ListKind::Remaining => &mut self.remaining,
            ListKind::Blockers => &mut self.blockers,
            ListKind::Decisions => &mut self.decisions,
            ListKind::Constraints => &mut self.constraints,
            ListKind::Discoveries => &mut self.discoveries,
        }
    }

    /// `next_action` when it is set and not blank.
    pub fn next(&self) -> Option<&str> {
        self.next_action.as_deref().filter(|s| !s.trim().is_empty())
    }
}

/// Branch, commit and dirty flag of a work tree.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct GitRef {
    /// Short branch name; null on a detached HEAD.
    pub branch: Option<String>,
    /// Full 40-hex commit id; null before the first commit.
    pub commit: Option<String>,
    /// Uncommitted changes (untracked files included), ignoring `.pas-agent/`.
    pub dirty: bool,
    /// Fields this build does not know, kept in file order and written back unchanged.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A saved snapshot of progress.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// UUID v4. There is no stored ordinal: "#N" is the 1-based array position.
    pub id: Uuid,
    /// RFC 3339 UTC.
    pub timestamp: DateTime<Utc>,
    /// What the checkpoint marks, trimmed and never empty; the launcher writes
    /// `before <agent> run` and `after <agent> run`.
    pub message: String,
    /// A copy of the task at checkpoint time.
    pub task_snapshot: TaskState,
    /// A copy of the git state at checkpoint time; null outside git.
    #[serde(default)]
    pub git: Option<GitRef>,
    /// Files with uncommitted changes at checkpoint time, `.pas-agent/` excluded.
    #[serde(default)]
    pub files_changed: Vec<FileState>,
    /// Fields this build does not know, kept in file order and written back unchanged.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One changed file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileState {
    /// Path relative to the repository top level, `/`-separated (git's porcelain path); the
    /// new path for a rename.
    pub path: String,
    /// How the file differs from the last commit (or, in a run's `files_changed`, how it changed).
    pub status: FileStatus,
    /// Content fingerprint, see [`crate::fingerprint`]; absent for deleted, unreadable files
    /// and directories.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    /// For a file holding a pas-agent block: the fingerprint of the text outside the block,
    /// so that an export does not look like an edit and a hand edit does (an addition of this
    /// tool; the original ignores it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint_outside_block: Option<String>,
    /// In a run's `files_changed` only: the file changed in the work tree during the run while
    /// another run of the session was working in it too, and the run's own transcript does not
    /// name it among the files its tools edited, so the change may be the other run's (an
    /// addition of this tool; absent, meaning `false`, everywhere else).
    #[serde(default, skip_serializing_if = "is_false")]
    pub shared: bool,
    /// Fields this build does not know, kept in file order and written back unchanged.
    #[serde(flatten)]
    pub extra: Extra,
}

impl FileState {
    /// A file state without fingerprints.
    pub fn new(path: impl Into<String>, status: FileStatus) -> Self {
        FileState {
            path: path.into(),
            status,
            fingerprint: None,
            fingerprint_outside_block: None,
            shared: false,
            extra: Extra::new(),
        }
    }

    /// Sorts `files` by path, keeping the order of equal paths. One function rather than a
    /// closure at each caller: a stable sort is compiled once per element type and comparator.
    pub fn sort_by_path(files: &mut [FileState]) {
        files.sort_by(|a, b| a.path.cmp(&b.path));
    }
}

/// How a file differs from the last commit. Serialized as serde's externally tagged enum, as
/// the original writes it: `"Added"`, `"Modified"`, `"Deleted"`, `"Untracked"` or
/// `{"Renamed": {"from": "<old path>"}}`. A status this build does not know (a newer writer's
/// string or single-key object) is kept as [`FileStatus::Other`] and written back unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileStatus {
    /// Git status `A` or `C`: a new or copied file (`git add -N` included). JSON `"Added"`.
    Added,
    /// Any other change to a tracked file: content, mode, type, a conflict. JSON `"Modified"`.
    Modified,
    /// Git status `D`: tracked but removed. JSON `"Deleted"`.
    Deleted,
    /// Git status `?`: on disk, not ignored, not tracked. JSON `"Untracked"`.
    Untracked,
    /// Git status `R`; the entry's `path` is the new path.
    /// JSON `{"Renamed": {"from": "<old path>"}}`.
    Renamed {
        /// The old path, relative to the repository top level, `/`-separated.
        from: String,
    },
    /// A status written by a newer pas-agent (a string or single-key object), kept verbatim.
    Other(Value),
}

impl FileStatus {
    /// Lower-case word used in terminal and Markdown output ("renamed from x" for renames).
    pub fn describe(&self) -> String {
        match self {
            FileStatus::Added => "added".into(),
            FileStatus::Modified => "modified".into(),
            FileStatus::Deleted => "deleted".into(),
            FileStatus::Untracked => "untracked".into(),
            FileStatus::Renamed { from } => format!("renamed from {from}"),
            FileStatus::Other(v) => match v {
                Value::String(s) => s.to_lowercase(),
                Value::Object(m) => m
                    .keys()
                    .next()
                    .map(|k| k.to_lowercase())
                    .unwrap_or_default(),
                _ => "changed".into(),
            },
        }
    }
}

impl Serialize for FileStatus {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            FileStatus::Added => s.serialize_str("Added"),
            FileStatus::Modified => s.serialize_str("Modified"),
            FileStatus::Deleted => s.serialize_str("Deleted"),
            FileStatus::Untracked => s.serialize_str("Untracked"),
            FileStatus::Renamed { from } => {
                let mut inner = serde_json::Map::new();
                inner.insert("from".into(), Value::String(from.clone()));
                let mut outer = serde_json::Map::new();
                outer.insert("Renamed".into(), Value::Object(inner));
                Value::Object(outer).serialize(s)
            }
            FileStatus::Other(v) => v.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for FileStatus {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let v = Value::deserialize(d)?;
        match &v {
            Value::String(s) => Ok(match s.as_str() {
                "Added" => FileStatus::Added,
                "Modified" => FileStatus::Modified,
                "Deleted" => FileStatus::Deleted,
                "Untracked" => FileStatus::Untracked,
                "" => return Err(D::Error::custom("empty file status")),
                _ => FileStatus::Other(v),
            }),
            Value::Object(m) if m.len() == 1 => {
                if let Some(inner) = m.get("Renamed") {
                    match inner.get("from").and_then(Value::as_str) {
                        Some(from) => Ok(FileStatus::Renamed { from: from.into() }),
                        None => Err(D::Error::custom(
                            "a Renamed file status needs a string \"from\"",
                        )),
                    }
                } else {
                    Ok(FileStatus::Other(v))
                }
            }
            other => Err(D::Error::custom(format!(
                "invalid file status {other}: expected \"Added\", \"Modified\", \"Deleted\", \"Untracked\" or {{\"Renamed\": {{\"from\": …}}}}"
            ))),
        }
    }
}

/// The lifecycle of a launcher run (docs/launcher.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunState {
    /// The launcher wrote the record and started (or is about to start) the agent.
    Running,
    /// The launcher saw the agent exit and wrote the after-record.
    Finished,
    /// A later command found the launcher gone and closed the record.
    Abandoned,
    /// A state written by a newer pas-agent, kept as is.
    Other(String),
}

impl RunState {
    /// The name stored in `session.json`.
    pub fn as_str(&self) -> &str {
        match self {
            RunState::Running => "running",
            RunState::Finished => "finished",
            RunState::Abandoned => "abandoned",
            RunState::Other(s) => s,
        }
    }
}

impl Serialize for RunState {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for RunState {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Ok(match s.as_str() {
            "running" => RunState::Running,
            "finished" => RunState::Finished,
            "abandoned" => RunState::Abandoned,
            _ => RunState::Other(s),
        })
    }
}

/// [`Transcript::missing`] of a transcript read in full that holds no prompt or answer of
/// the run.
pub const NO_WORDS: &str = "the session holds no prompt or answer after the run started";

/// What a run that did no work amounted to (`runs[].result`, docs/format.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunResult {
    /// `failed_start`: the agent exited non-zero within [`FAILED_START_MS`] without an answer
    /// from its model, a tool call, a commit or a changed file: it never got to work (no
    /// authentication, an untrusted folder, a bad flag).
    FailedStart,
    /// `nothing_asked`: the agent's session holds no prompt and no answer, and nothing changed
    /// (it was opened and closed).
    NothingAsked,
    /// A result written by a newer pas-agent, kept as is.
    Other(String),
}

/// A run that exits non-zero within this many milliseconds (60 s) without doing anything
/// failed to start. Failures to start take seconds (checked: Claude Code 2.1.197 not logged
/// in 1.6 s, Codex 0.171.0 without a key 0.8 s, with a bad key 6.6 s, Gemini CLI 0.61.0 without
/// authentication or in an untrusted folder 3-4 s, 16 s on a cold start).
pub const FAILED_START_MS: u64 = 60_000;

impl RunResult {
    /// The name stored in `session.json`.
    pub fn as_str(&self) -> &str {
        match self {
            RunResult::FailedStart => "failed_start",
            RunResult::NothingAsked => "nothing_asked",
            RunResult::Other(s) => s,
        }
    }

    /// How `runs` shows it in its state column.
    pub fn label(&self) -> &str {
        match self {
            RunResult::FailedStart => "failed start",
            RunResult::NothingAsked => "nothing asked",
            RunResult::Other(s) => s,
        }
    }

    /// What a finished run amounted to, judged from its record (exit code, duration, commits,
    /// files, and the transcript read from the agent's store): `None` for a run that worked,
    /// or that cannot be judged (no transcript: pas-agent does not read that agent's store,
    /// or the run is still going).
    pub fn of(run: &Run) -> Option<RunResult> {
        RunResult::judged(run, false)
    }

    /// [`RunResult::of`], where `no_session_file` says the agent's store holds no file of the
    /// run's session though the session is known (the path a hook's payload gave, or the id
    /// pas-agent started it with): the agent wrote nothing, so nothing was asked.
    pub fn judged(run: &Run, no_session_file: bool) -> Option<RunResult> {
        let t = run.transcript.as_ref()?;
        if run.state == RunState::Running {
            return None;
        }
        let worked = !run.commits.is_empty()
            || !run.files_changed.is_empty()
            || !t.edits.is_empty()
            || !t.commands.is_empty()
            || t.last_answer.is_some();
        if worked {
            return None;
        }
        let quick = run.duration_ms.is_some_and(|ms| ms <= FAILED_START_MS);
        match run.exit_code {
            Some(code) if code != 0 && quick => Some(RunResult::FailedStart),
            // A transcript read in full that holds no prompt; one with damaged entries or an
            // error of the agent's own may have lost them, and says nothing.
            Some(0) | None
                if no_session_file
                    || (t.source.is_some()
                        && t.prompts.is_empty()
                        && t.missing.as_deref().is_none_or(|m| m == NO_WORDS)) =>
            {
                Some(RunResult::NothingAsked)
            }
            _ => None,
        }
    }
}

impl Serialize for RunResult {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for RunResult {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Ok(match s.as_str() {
            "failed_start" => RunResult::FailedStart,
            "nothing_asked" => RunResult::NothingAsked,
            _ => RunResult::Other(s),
        })
    }
}

/// A commit made during a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommitRef {
    /// Full commit id.
    pub id: String,
    /// First line of the message.
    pub summary: String,
    /// Fields this build does not know, kept in file order and written back unchanged.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One launcher run (`pas-agent run`, docs/launcher.md). The field names are a contract read by scripts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// UUID v4.
    pub id: Uuid,
    /// Canonical agent id from the agent table, or the program name for other programs.
    pub agent: String,
    /// The command line that was started, program first.
    pub argv: Vec<String>,
    /// Absolute directory the agent ran in.
    pub cwd: String,
    /// `running` until the launcher writes the after-record (`finished`) or a later command finds
    /// it gone (`abandoned`).
    pub state: RunState,
    /// When the launcher began the run (before checkpoint, export and agent start); RFC 3339 UTC.
    pub started_at: DateTime<Utc>,
    /// When the agent exited; RFC 3339 UTC. Null while running, and for an abandoned run (nobody
    /// saw it end).
    #[serde(default)]
    pub ended_at: Option<DateTime<Utc>>,
    /// Whole milliseconds; null while running.
    #[serde(default)]
    pub duration_ms: Option<u64>,
    /// The agent's exit code; null if a signal ended it or it is still running.
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// The number of the signal that ended the agent.
    #[serde(default)]
    pub signal: Option<i32>,
    /// The launcher's process id.
    #[serde(default, skip_serializing_if = "left_out")]
    pub launcher_pid: Option<u32>,
    /// An opaque token identifying the launcher process's start, to tell it from a later
    /// process that reuses the pid (see [`crate::launch::process`]).
    #[serde(default, skip_serializing_if = "left_out")]
    pub launcher_started: Option<String>,
    /// A random value only the launcher knows, so that it finalizes its own record and no other.
    #[serde(default, skip_serializing_if = "left_out")]
    pub nonce: Option<String>,
    /// Full commit id of `HEAD` when the run started; null outside git or before the first commit.
    #[serde(default, skip_serializing_if = "left_out")]
    pub head_before: Option<String>,
    /// Full commit id of `HEAD` at the end (or when found abandoned); null while running, outside
    /// git, or with no commit.
    #[serde(default, skip_serializing_if = "left_out")]
    pub head_after: Option<String>,
    /// Commits made during the run, oldest first.
    #[serde(default)]
    pub commits: Vec<CommitRef>,
    /// Files whose content or status changed during the run.
    #[serde(default)]
    pub files_changed: Vec<FileState>,
    /// The agent's own session id, for `run <agent> --resume`; null when it could not be learned.
    #[serde(default)]
    pub agent_session_id: Option<String>,
    /// Id of the checkpoint taken at the start (`before <agent> run`, or the latest one if nothing
    /// changed since); null with `--no-checkpoint`.
    #[serde(default, skip_serializing_if = "left_out")]
    pub checkpoint_before: Option<Uuid>,
    /// Id of the checkpoint taken at the end (`after <agent> run`, or the latest if unchanged);
    /// null while running, if abandoned, or with `--no-checkpoint`.
    #[serde(default, skip_serializing_if = "left_out")]
    pub checkpoint_after: Option<Uuid>,
    /// Path of the output capture, relative to the project root.
    #[serde(default, skip_serializing_if = "left_out")]
    pub capture: Option<String>,
    /// While running: the changed files at the start (with fingerprints), from which the
    /// after-record (or a later reconcile) computes `files_changed`. Dropped once finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<Vec<FileState>>,
    /// What the run amounted to, when it did no work: the agent failed to start, or nothing was
    /// asked in its session ([`RunResult`]); absent for a run that worked (and for runs recorded
    /// before this field existed). Such runs are listed by `runs` but left out of the block's
    /// recent runs (an addition; the original ignores it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<RunResult>,
    /// What the agent itself said during the run, read from its own session store after it
    /// exited ([`crate::agents::Agent::transcript`]): prompts, last answer, model, tokens, or why they are
    /// missing. Absent for programs whose store pas-agent does not read, for runs recorded
    /// before this field existed, and while running (an addition; the original ignores it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript: Option<Transcript>,
    /// Fields this build does not know, kept in file order and written back unchanged.
    #[serde(flatten)]
    pub extra: Extra,
}

impl TaskState {
    /// Names of the task fields that differ between `self` (then) and `now`.
    pub fn changes(&self, now: &TaskState) -> Vec<&'static str> {
        let then = self;
        let mut fields = Vec::new();
        let mut check = |name, changed: bool| {
            if changed {
                fields.push(name)
            }
        };
        check("description", then.description != now.description);
        check("objective", then.objective != now.objective);
        check("completed", then.completed != now.completed);
        check("remaining", then.remaining != now.remaining);
        check("next action", then.next_action != now.next_action);
        check("blockers", then.blockers != now.blockers);
        check("decisions", then.decisions != now.decisions);
        check("constraints", then.constraints != now.constraints);
        check("discoveries", then.discoveries != now.discoveries);
        fields
    }
}

// ---- What an agent said during a run (`runs[].transcript`) ----

/// At most this many of a run's prompts are kept: the first and the latest ones
/// ([`Transcript::prompts_omitted`] counts the others).
pub const MAX_PROMPTS: usize = 8;
/// Each prompt is cut to this many characters (an ellipsis marks the cut).
pub const MAX_PROMPT_CHARS: usize = 1000;
/// At most this many files written by the agent's tools are kept ([`Transcript::edits`]).
pub const MAX_EDITS: usize = 50;
/// At most this many of the agent's shell commands are kept, the latest
/// ([`Transcript::commands`]).
pub const MAX_COMMANDS: usize = 20;
/// Each command line is cut to this many characters.
pub const MAX_COMMAND_CHARS: usize = 300;
/// The last answer is cut to this many characters ([`Transcript::answer_truncated`]).
pub const MAX_ANSWER_CHARS: usize = 4000;

/// What the agent itself said during one run, read from its own session store
/// (`runs[].transcript` in `session.json`, documented in `docs/format.md`).
///
/// Every field is optional in the file: a record written by a newer pas-agent loads, and its
/// unknown fields are kept in [`Transcript::extra`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Transcript {
    /// The store file the words were read from (absolute path), when one was found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The user's prompts during the run, oldest first: the first one and the latest ones, at
    /// most [`MAX_PROMPTS`], each at most [`MAX_PROMPT_CHARS`] characters (a cut one ends in
    /// `…`). Tool results and the agent's own injected messages are not prompts.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub prompts: Vec<String>,
    /// How many prompts of the run are not in [`Transcript::prompts`] (left out between the
    /// first and the latest ones).
    #[serde(skip_serializing_if = "is_zero")]
    pub prompts_omitted: usize,
    /// The agent's last answer (the text of its last message in the run), at most
    /// [`MAX_ANSWER_CHARS`] characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_answer: Option<String>,
    /// Whether [`Transcript::last_answer`] was cut.
    #[serde(skip_serializing_if = "is_false")]
    pub answer_truncated: bool,
    /// The model the agent used (the last one named during the run), as the store names it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Token counts of the run, where the store has them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens: Option<Tokens>,
    /// The files the agent's own tools wrote during the run (its edit, write and patch tools,
    /// with the paths its transcript gives), each once, in the order first written; at most
    /// [`MAX_EDITS`].
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub edits: Vec<String>,
    /// How many more files the tools wrote than [`Transcript::edits`] holds.
    #[serde(skip_serializing_if = "is_zero")]
    pub edits_omitted: usize,
    /// The shell commands the agent's tools ran during the run, the latest
    /// [`MAX_COMMANDS`], oldest first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<CommandRun>,
    /// How many earlier commands are not in [`Transcript::commands`].
    #[serde(skip_serializing_if = "is_zero")]
    pub commands_omitted: usize,
    /// Why the words are missing or incomplete (no session id, no store file, a damaged or
    /// huge file, an unknown layout); `None` when they were read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing: Option<String>,
    /// Fields this build does not know, kept in file order and written back unchanged.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One shell command an agent's tool ran, as its transcript records it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CommandRun {
    /// The command line, at most [`MAX_COMMAND_CHARS`] characters (a cut one ends in `…`).
    pub command: String,
    /// Its exit code, when the transcript records one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    /// Fields this build does not know, kept in file order and written back unchanged.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Token counts of one run, summed over the model calls the store records for it. A count the
/// store does not have is `None` (left out of the file).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Tokens {
    /// Input (prompt) tokens, cached ones included where the store counts them so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<u64>,
    /// Output (completion) tokens, reasoning included where the store counts them so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<u64>,
    /// Input tokens read from the provider's prompt cache.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_read: Option<u64>,
    /// Input tokens written to the provider's prompt cache.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<u64>,
    /// Fields this build does not know, kept in file order and written back unchanged.
    #[serde(flatten)]
    pub extra: Extra,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl Transcript {
    /// A transcript with no words, saying why.
    pub fn missing(why: impl Into<String>) -> Transcript {
        Transcript {
            missing: Some(why.into()),
            ..Transcript::default()
        }
    }

    /// Whether the agent's last answer or any prompt was read.
    pub fn has_words(&self) -> bool {
        self.last_answer.is_some() || !self.prompts.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_brief_reads_an_old_runs_session_and_span() {
        let raw = serde_json::value::RawValue::from_string(
            r#"{"id": "x", "agent": "codex", "argv": ["codex", "-m"], "cwd": "/w\\a",
                "state": "finished", "started_at": "2026-01-01T00:00:00Z",
                "ended_at": "2026-01-01T00:10:00.5+00:00", "agent_session_id": "s-1",
                "details_in_history": true}"#
                .into(),
        )
        .unwrap();
        let runs = Runs::with_undecoded(vec![raw], Vec::new());
        let briefs = runs.undecoded_briefs();
        let b = &briefs[0];
        assert_eq!((&*b.agent, &*b.cwd), ("codex", "/w\\a"));
        assert_eq!(b.agent_session_id.as_deref(), Some("s-1"));
        let at = |t: &str| t.parse::<DateTime<Utc>>().unwrap();
        // It overlaps a span that starts before it ended and ends after it started.
        assert!(b.ended_after(at("2026-01-01T00:10:00Z"), at("2026-01-01T01:00:00Z")));
        assert!(!b.ended_after(at("2026-01-01T00:10:01Z"), at("2026-01-01T01:00:00Z")));
        assert!(!b.ended_after(at("2025-12-31T00:00:00Z"), at("2025-12-31T23:59:59Z")));
        // Read as the full decode reads them, in its other spellings too.
        for spelt in ["2026-01-01T00:10:00+0000", "2026-01-01 00:10:00 UTC"] {
            let raw = serde_json::value::RawValue::from_string(format!(
                r#"{{"agent": "codex", "cwd": "/w", "started_at": "{spelt}", "ended_at": "{spelt}"}}"#
            ))
            .unwrap();
            let full: DateTime<Utc> = serde_json::from_value(spelt.into()).unwrap();
            let runs = Runs::with_undecoded(vec![raw], Vec::new());
            let b = &runs.undecoded_briefs()[0];
            assert_eq!((b.start(), b.end()), (Some(full), Some(full)), "{spelt}");
        }
        assert_eq!(runs.number(0), 2);
        assert_eq!(runs.total(), 1);
    }

    /// A finished run of `exit_code` that lasted `ms`, with `transcript`.
    fn run_of(exit_code: Option<i64>, ms: u64, transcript: serde_json::Value) -> Run {
        serde_json::from_value(serde_json::json!({
            "id": "00000000-0000-4000-8000-000000000001", "agent": "claude-code",
            "argv": ["claude"], "cwd": "/w", "state": "finished",
            "started_at": "2026-01-01T00:00:00Z", "ended_at": "2026-01-01T00:00:03Z",
            "duration_ms": ms, "exit_code": exit_code, "transcript": transcript,
        }))
        .unwrap()
    }

    #[test]
    fn a_result_only_for_runs_that_did_no_work() {
        let empty = serde_json::json!({"source": "/s.jsonl", "missing": NO_WORDS});
        assert_eq!(
            RunResult::of(&run_of(Some(1), 3000, empty.clone())),
            Some(RunResult::FailedStart)
        );
        // A late failure is a run that failed, not a failed start.
        assert_eq!(
            RunResult::of(&run_of(Some(1), 120_000, empty.clone())),
            None
        );
        assert_eq!(
            RunResult::of(&run_of(Some(0), 3000, empty.clone())),
            Some(RunResult::NothingAsked)
        );
        // Damaged entries may have held the prompt: nothing is said.
        let damaged = serde_json::json!({"source": "/s.jsonl",
            "missing": format!("{NO_WORDS} (2 entries of /s.jsonl could not be read)")});
        assert_eq!(RunResult::of(&run_of(Some(0), 3000, damaged)), None);
        // No store file read: nothing is known, unless the agent never wrote the file it named.
        let unread = serde_json::json!({"missing": "the agent's session id is not known"});
        assert_eq!(RunResult::of(&run_of(None, 3000, unread.clone())), None);
        assert_eq!(
            RunResult::judged(&run_of(None, 3000, unread), true),
            Some(RunResult::NothingAsked)
        );
        // An answer, a command or an edit is work.
        for worked in [
            serde_json::json!({"source": "/s.jsonl", "last_answer": "done"}),
            serde_json::json!({"source": "/s.jsonl", "commands": [{"command": "false", "exit_code": 1}]}),
            serde_json::json!({"source": "/s.jsonl", "edits": ["a.rs"]}),
        ] {
            assert_eq!(RunResult::of(&run_of(Some(1), 3000, worked)), None);
        }
    }

    #[test]
    fn file_status_round_trips_known_and_unknown_forms() {
        for text in [
            r#""Added""#,
            r#""Untracked""#,
            r#"{"Renamed":{"from":"a b.txt"}}"#,
            r#""Copied""#,
            r#"{"Copied":{"from":"x","score":90}}"#,
        ] {
            let status: FileStatus = serde_json::from_str(text).unwrap();
            assert_eq!(serde_json::to_string(&status).unwrap(), text);
        }
    }

    #[test]
    fn file_status_rejects_wrong_types() {
        for text in ["5", "null", "[]", r#"{"Renamed":{}}"#, r#""""#] {
            assert!(serde_json::from_str::<FileStatus>(text).is_err(), "{text}");
        }
    }

    #[test]
    fn version_is_read_exactly() {
        #[derive(Deserialize)]
        struct V {
            #[serde(deserialize_with = "exact_version")]
            v: u32,
        }
        let read = |t: &str| serde_json::from_str::<V>(&format!("{{\"v\":{t}}}")).map(|v| v.v);
        assert_eq!(read("1").unwrap(), 1);
        assert_eq!(read("2").unwrap(), 2);
        assert_eq!(read("18446744073709551615").unwrap(), u32::MAX);
        for bad in [
            "1.0", "2.0", "1e3", "1E0", "-1", "-0", "1.5", "\"1\"", "null", "true", "[1]",
        ] {
            assert!(read(bad).is_err(), "{bad}");
        }
    }
}
