//! The session: its data model, the store on disk, the lock, and the changes commands make.
//!
//! # How a session is stored and read
//!
//! `.pas-agent/session.json` stays the one portable record, schema version 1, loadable by
//! the original PAS-Agent 0.2.x and pas-agent 0.3.0 (every field they know, in their order,
//! unknown fields kept). Four things keep it small, cheap to read and mergeable:
//!
//! 1. **Bounded file lists** ([`bound`]): a checkpoint's or run's `files_changed` collapses
//!    untracked directories into one `dir/` entry with a count and a combined fingerprint, and
//!    is capped at 200 entries with the full count in `files_changed_total`. 100,000 untracked
//!    files add one entry, not 14 MB.
//! 2. **Old checkpoints' bulk out of the hot file** ([`history`]): only the latest 5
//!    checkpoints keep their file lists and task snapshots in `session.json`; older ones are
//!    appended to `.pas-agent/history.jsonl`, one line per checkpoint. The checkpoints
//!    themselves (ids, times, messages, git) stay, so the original still lists and numbers them
//!    all (it never shows a snapshot or an old file list). What is left grows by about 700
//!    bytes per checkpoint. The log is append-only JSON lines, which git's built-in `union`
//!    merge joins. `prune` shrinks both. Old runs get the same: all but the latest 10 (and the
//!    latest 5 that the context block lists, and running ones) keep a skeleton of about
//!    0.7 KB in `session.json` (every run stays, in its place) and move their commits, file
//!    lists, transcripts, launcher fields and other large fields to one line each in the same
//!    file; `runs N` and `runs --json` read them back (`runs N` decodes only its run). Commands
//!    that read no old run (`update`, `checkpoint`, `export`, the hooks' inside-a-run check)
//!    load the file with its leading skeletons left undecoded ([`store::Project::load_recent`],
//!    [`codec::parse_recent`]) when its stored summary matches it (pas-agent wrote it last, or
//!    read it in full since: every value was checked; a file changed by anything else is read
//!    in full once): scanned, kept as the raw JSON they were and written back byte for byte
//!    ([`crate::model::Runs`]), so what those commands cost barely grows with the number of
//!    runs (a scan is about a twelfth of a decode).
//! 3. **A summary for readers** ([`summary`]): every save also writes a small summary (the
//!    session with only its latest checkpoint and its live runs, plus counts) outside the work
//!    tree, keyed by the session file's path and stamped with its `stat` identity. The prompt,
//!    text `status` and the reconcile check read the summary when the identity matches, so
//!    their cost does not depend on the history at all; anything that replaced the file (git,
//!    an older pas-agent, an editor) changes the identity and the file is read in full (and
//!    the summary rewritten). Beside it, [`prompt_record`] keeps only what the prompt shows,
//!    with the same stamp, so the prompt deserialises no session. Writers (`update`, `checkpoint`, `run`) still parse and rewrite
//!    `session.json`, whose size (2) keeps small.
//! 4. **A merge driver** ([`merge`], [`teams`]): `.pas-agent/.gitattributes` (written by
//!    `init`, committed with the session) asks for `merge=pas-agent`; the repo-local git config
//!    defines it as this binary's `merge-driver`, set up by `init` and by any command in a clone
//!    that lacks it. Without it, a conflicted file is [`crate::error::Error::Unmerged`]
//!    (exit 7), never "damaged", and `pas-agent resolve` merges the two sides.
//!
//! Rejected: lazy parsing of old checkpoints (serde_json `RawValue`): their bulk is already in
//! the history file, and what is left is read by most commands. (Old runs' skeletons are left
//! undecoded, above: they are not read by the commands that change the session most, and what
//! is written back as it was needs no exact-value check ([`exact`]); one that is decoded gets
//! it ([`codec::decode_run`]).) A session split into many files breaks the original's reading
//! of `session.json` as the whole record, and merges worse than one file with a driver.

pub mod backup;
pub mod bound;
pub mod codec;
pub mod exact;
pub mod history;
pub mod lock;
pub mod merge;
pub mod ops;
pub mod project;
pub mod prompt_record;
pub mod read;
pub mod store;
pub mod summary;
pub mod teams;

pub use crate::model::Session;
pub use store::Project;
