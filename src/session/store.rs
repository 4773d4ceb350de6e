//! Finding, loading and saving `.pas-agent/session.json` (SPEC §1).
//!
//! Readers load without a lock: every save is an atomic rename, so a reader sees the old file
//! or the new one, whole. Writers go through [`Project::modify`], which holds the session lock
//! for the whole read–modify–write and re-reads the file under it, so concurrent writers never
//! lose an update. A file that cannot be understood is reported and never written.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::lock::{self, LockGuard};
use super::model::{SCHEMA_VERSION, Session};
use crate::error::{Error, Result};
use crate::fsutil::{self, Links, Named, ReadError, WriteGuard};

/// Name of the per-project state directory.
pub const STATE_DIR: &str = ".pas-agent";
/// Name of the session file inside [`STATE_DIR`].
pub const SESSION_FILE: &str = "session.json";
/// Largest `session.json` that is read or written (64 MiB, [`crate::limits::SESSION`]); a
/// larger file is reported as damaged, and a change that would make it larger is refused.
pub const MAX_SESSION_BYTES: u64 = crate::limits::SESSION.bytes;

/// A project with (or about to have) a session: its root and state directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Project {
    /// The session root: the git work-tree top level, or where `init` ran outside git.
    pub root: PathBuf,
}

impl Project {
    /// The project rooted at `root`.
    pub fn at(root: impl Into<PathBuf>) -> Self {
        Project { root: root.into() }
    }

    /// Walks up from `start` (itself included) to the nearest directory holding
    /// `.pas-agent/session.json` in any form: a regular file, a link (even a dangling one), a
    /// directory or a special file. Whatever stands there is this directory's session, and
    /// [`Project::load`] reports what is wrong with it; the walk never falls through to a
    /// parent's session. A `.pas-agent` that is itself something other than a directory (a
    /// file, a dangling link) counts the same way.
    ///
    /// Errors: [`Error::NoSession`] when no ancestor has one.
    pub fn find(start: &Path) -> Result<Project> {
        Self::find_opt(start).ok_or_else(|| Error::NoSession {
            start: start.to_path_buf(),
        })
    }

    /// Like [`Project::find`], but `None` when there is no session.
    pub fn find_opt(start: &Path) -> Option<Project> {
        start
            .ancestors()
            .find(|dir| {
                let state = dir.join(STATE_DIR);
                match std::fs::symlink_metadata(&state) {
                    Err(_) => false,
                    Ok(_) if !state.is_dir() => true,
                    Ok(_) => std::fs::symlink_metadata(state.join(SESSION_FILE)).is_ok(),
                }
            })
            .map(Project::at)
    }

    /// `<root>/.pas-agent`.
    pub fn state_dir(&self) -> PathBuf {
        self.root.join(STATE_DIR)
    }

    /// `<root>/.pas-agent/session.json`.
    pub fn session_path(&self) -> PathBuf {
        self.state_dir().join(SESSION_FILE)
    }

    /// Whether a session file exists here (a regular file, or a link to one).
    pub fn has_session(&self) -> bool {
        std::fs::metadata(self.session_path())
            .map(|m| m.is_file())
            .unwrap_or(false)
    }

    /// Loads the session without locking.
    ///
    /// Errors: [`Error::NoSession`] if nothing is there; [`Error::Damaged`] when what stands
    /// where the file should be is not a regular file (a directory, a FIFO — never waited on —,
    /// a socket, a dangling link, a `.pas-agent` that is not a directory), or as described in
    /// [`parse`]; [`Error::Io`] on read failures.
    pub fn load(&self) -> Result<Session> {
        self.load_up_to(MAX_SESSION_BYTES)
    }

    /// Loads the session for a change: like [`Project::load`], but a file above the limit
    /// (up to [`crate::limits::SESSION_RECOVERY_BYTES`]) is still read, so that a change that
    /// shrinks it (`remove`) can bring it back under the limit; [`Project::save`] refuses any
    /// result above the limit.
    fn load_for_change(&self) -> Result<Session> {
        self.load_up_to(crate::limits::SESSION_RECOVERY_BYTES)
    }

    fn load_up_to(&self, cap: u64) -> Result<Session> {
        let path = self.session_path();
        if let Some(problem) = self.not_a_session_file() {
            return Err(Error::Damaged { path, problem });
        }
        match fsutil::read_limited(&path, cap) {
            Ok(Some(bytes)) => parse(&path, &bytes),
            Ok(None) => Err(Error::NoSession {
                start: self.root.clone(),
            }),
            Err(ReadError::TooLarge(size)) => {
                let hint = if size <= crate::limits::SESSION_RECOVERY_BYTES {
                    "; commands that change the session still read it, and `pas-agent remove` can bring it back under the limit"
                } else {
                    ""
                };
                Err(Error::Damaged {
                    path,
                    problem: format!("{}{hint}", crate::limits::SESSION.read_refusal(size)),
                })
            }
            Err(ReadError::NotAFile(kind)) => Err(Error::Damaged {
                path,
                problem: format!(
                    "this is {kind}, not a session file; remove it or put the session file back"
                ),
            }),
            Err(ReadError::Io(e)) => Err(Error::io(path, e)),
        }
    }

    /// Checks that what stands at the session path is a regular file (or a link to one) or
    /// nothing, without opening it.
    ///
    /// Errors: [`Error::Damaged`] naming the file and what it is instead (a directory, FIFO,
    /// socket, dangling link, or a `.pas-agent` that is not a directory).
    pub fn check_session_file(&self) -> Result<()> {
        match self.not_a_session_file() {
            Some(problem) => Err(Error::Damaged {
                path: self.session_path(),
                problem,
            }),
            None => Ok(()),
        }
    }

    /// Why what stands at the session path (or the state directory) cannot be a session file,
    /// or `None` when it is a regular file, a link to one, or absent.
    fn not_a_session_file(&self) -> Option<String> {
        let state = self.state_dir();
        let link = |p: &Path| {
            std::fs::read_link(p)
                .map(|t| crate::term::clean(&t.to_string_lossy()))
                .unwrap_or_default()
        };
        match std::fs::symlink_metadata(&state) {
            Err(_) => return None,
            Ok(meta) if !state.is_dir() => {
                return Some(if meta.file_type().is_symlink() {
                    format!(
                        "{STATE_DIR} is a symbolic link to {}, which is not a directory",
                        link(&state)
                    )
                } else {
                    format!("{STATE_DIR} is {}, not a directory", fsutil::kind_of(&meta))
                });
            }
            Ok(_) => {}
        }
        let path = self.session_path();
        let meta = std::fs::symlink_metadata(&path).ok()?;
        if meta.file_type().is_symlink() {
            return match std::fs::metadata(&path) {
                Err(_) => Some(format!(
                    "this is a dangling symbolic link (to {}); remove it or restore its target",
                    link(&path)
                )),
                Ok(target) if !target.is_file() => Some(format!(
                    "this is a symbolic link to {} ({}), not a session file",
                    link(&path),
                    fsutil::kind_of(&target)
                )),
                Ok(_) => None,
            };
        }
        (!meta.is_file()).then(|| {
            format!(
                "this is {}, not a session file; remove it or put the session file back",
                fsutil::kind_of(&meta)
            )
        })
    }

    /// Takes the session lock until the guard is dropped.
    pub fn lock(&self) -> Result<LockGuard> {
        lock::acquire(&self.state_dir())
    }

    /// Locks, loads, applies `change`, saves and unlocks. When `change` fails nothing is saved.
    /// Keep slow work (git, prompts) out of `change`: it runs while other writers wait.
    pub fn modify<T>(&self, change: impl FnOnce(&mut Session) -> Result<T>) -> Result<T> {
        self.modify_within(lock::timeout(), change)
    }

    /// [`Project::modify`], waiting up to `limit` for the lock: for a write that must not be
    /// lost to a busy moment (a run's after-record).
    pub fn modify_within<T>(
        &self,
        limit: std::time::Duration,
        change: impl FnOnce(&mut Session) -> Result<T>,
    ) -> Result<T> {
        // Taking the lock creates the state directory: a session deleted meanwhile (say
        // `rm -rf .pas-agent` during a run) must not come back as a directory holding only a
        // lock and a .gitignore.
        if std::fs::symlink_metadata(self.state_dir()).is_err() {
            return Err(Error::NoSession {
                start: self.root.clone(),
            });
        }
        let _guard = lock::acquire_within(&self.state_dir(), limit)?;
        let mut session = self.load_for_change()?;
        let out = change(&mut session)?;
        super::history::move_out(self, &mut session)?;
        self.save(&session)?;
        Ok(out)
    }

    /// Writes a new session, failing if one appeared meanwhile (checked under the lock, so of
    /// several concurrent `init`s exactly one succeeds).
    pub fn create(&self, session: &Session) -> Result<()> {
        let _guard = self.lock()?;
        if let Some(problem) = self.not_a_session_file() {
            return Err(Error::Damaged {
                path: self.session_path(),
                problem,
            });
        }
        if self.has_session() {
            return Err(Error::SessionExists {
                path: self.session_path(),
            });
        }
        self.save(session)
    }

    /// Replaces the session file with `session` under the lock, without reading what is there
    /// first: for `resolve`, whose file holds conflict markers no load accepts.
    pub fn overwrite(&self, session: &Session) -> Result<()> {
        if std::fs::symlink_metadata(self.state_dir()).is_err() {
            return Err(Error::NoSession {
                start: self.root.clone(),
            });
        }
        let _guard = self.lock()?;
        self.save(session)
    }

    /// Saves atomically. Callers hold the lock.
    ///
    /// Errors: [`Error::TooLarge`] (nothing written) when the file would be larger than
    /// [`MAX_SESSION_BYTES`], which [`Project::load`] would refuse.
    fn save(&self, session: &Session) -> Result<()> {
        let path = self.session_path();
        let mut bytes =
            to_json(session).map_err(|e| Error::io(&path, std::io::Error::other(e.to_string())))?;
        bytes.push(b'\n');
        crate::limits::SESSION
            .check_write(bytes.len())
            .map_err(|problem| Error::TooLarge {
                path: path.clone(),
                problem,
            })?;
        let guard = WriteGuard::new(&self.root).map_err(|e| Error::io(&self.root, e))?;
        guard
            .write(&path, &bytes, Named::ByUs, Links::Replace)
            .map_err(|e| Error::write(&path, e))?;
        // Still under the lock: the file's identity is the one just written.
        super::summary::store(self, session);
        Ok(())
    }
}

/// Pretty JSON (two-space indent), as the original writes it, with `schema_version` set to
/// this build's version.
pub fn to_json(session: &Session) -> serde_json::Result<Vec<u8>> {
    if session.schema_version == SCHEMA_VERSION {
        return serde_json::to_vec_pretty(session);
    }
    let mut s = session.clone();
    s.schema_version = SCHEMA_VERSION;
    serde_json::to_vec_pretty(&s)
}

/// Parses the bytes of a session file.
///
/// Errors, all naming `path` and leaving the file alone:
/// - [`Error::Damaged`] for an empty file, a UTF-8 byte order mark, invalid UTF-8 (with the
///   byte offset), invalid JSON or a wrongly typed field (with serde's line and column);
/// - [`Error::Damaged`] also for values this build cannot write back exactly (see
///   [`super::exact`]): numbers beyond `f64`/`u64`/`i64` precision, duplicate keys;
/// - [`Error::Unsupported`] when `schema_version` is newer than [`SCHEMA_VERSION`], checked
///   before the shape so a newer layout is reported as such.
pub fn parse(path: &Path, bytes: &[u8]) -> Result<Session> {
    let damaged = |problem: String| Error::Damaged {
        path: path.to_path_buf(),
        problem,
    };
    if bytes.starts_with(b"\xEF\xBB\xBF") {
        return Err(damaged(
            "the file starts with a UTF-8 byte order mark, which JSON does not allow; remove the first three bytes".into(),
        ));
    }
    let text = std::str::from_utf8(bytes).map_err(|e| {
        damaged(format!(
            "the file is not valid UTF-8 (bad byte at offset {})",
            e.valid_up_to()
        ))
    })?;
    if text.trim().is_empty() {
        return Err(damaged("the file is empty".into()));
    }
    if super::merge::is_conflicted(text)
        && serde_json::from_str::<serde::de::IgnoredAny>(text).is_err()
    {
        return Err(Error::Unmerged {
            path: path.to_path_buf(),
        });
    }
    let unsupported = |found: u64| Error::Unsupported {
        path: path.to_path_buf(),
        found,
        supported: SCHEMA_VERSION,
    };
    let mut de = serde_json::Deserializer::from_str(text);
    // The error carries the path of the field being read (`task.remaining[0]`).
    let parsed: std::result::Result<Session, (String, serde_json::Error)> =
        match serde_path_to_error::deserialize::<_, Session>(&mut de) {
            Ok(s) => de.end().map(|()| s).map_err(|e| (String::new(), e)),
            Err(e) => Err((e.path().to_string(), e.into_inner())),
        };
    match parsed {
        Ok(s) if s.schema_version > SCHEMA_VERSION => Err(unsupported(s.schema_version.into())),
        // Fields this build does not know are written back: refuse what it cannot keep exactly.
        Ok(s) => match super::exact::check(text) {
            Ok(()) => Ok(s),
            Err(problem) => Err(damaged(format!(
                "{problem}; pas-agent will not rewrite a file it cannot write back exactly"
            ))),
        },
        Err((path, e)) => {
            #[derive(Deserialize)]
            struct Probe {
                #[serde(default)]
                schema_version: serde_json::Value,
            }
            if let Ok(probe) = serde_json::from_str::<Probe>(text)
                && let Some(v) = probe.schema_version.as_u64()
                && v > u64::from(SCHEMA_VERSION)
            {
                return Err(unsupported(v));
            }
            let hint = if e.is_eof() {
                " (the file looks truncated)"
            } else {
                ""
            };
            // Name the field when the JSON is well formed but a value is wrong.
            let field = if e.is_data() && !path.is_empty() && path != "." {
                format!("field `{path}`: ")
            } else {
                String::new()
            };
            Err(damaged(format!(
                "not a valid session file: {field}{e}{hint}"
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p() -> PathBuf {
        PathBuf::from("/x/.pas-agent/session.json")
    }

    fn minimal() -> &'static str {
        r#"{"id":"46d89609-104d-4a43-907d-dbca99704a85","project_name":"p","created_at":"2026-09-17T04:30:00Z","updated_at":"2026-09-17T04:39:00Z","task":{}}"#
    }

    #[test]
    fn legacy_file_without_version_loads_as_v1() {
        let s = parse(&p(), minimal().as_bytes()).unwrap();
        assert_eq!(s.schema_version, 1);
        assert!(s.checkpoints.is_empty());
    }

    #[test]
    fn bad_inputs_are_damaged_with_a_reason() {
        let cases: [(&[u8], &str); 6] = [
            (b"", "empty"),
            (b"  \n", "empty"),
            (b"\xEF\xBB\xBF{}", "byte order mark"),
            (b"{\"id\": \"\xff\"}", "UTF-8"),
            (b"{\"id\": ", "truncated"),
            (b"[1,2]", "not a valid session file"),
        ];
        for (bytes, want) in cases {
            let err = parse(&p(), bytes).unwrap_err();
            assert!(
                matches!(err, Error::Damaged { .. }) && err.to_string().contains(want),
                "{err}"
            );
        }
    }

    #[test]
    fn wrong_type_names_line_and_column() {
        let text = minimal().replace(r#""project_name":"p""#, r#""project_name":5"#);
        let err = parse(&p(), text.as_bytes()).unwrap_err().to_string();
        assert!(err.contains("line 1 column"), "{err}");
    }

    #[test]
    fn wrong_values_name_their_field() {
        let text = minimal().replace("2026-09-17T04:30:00Z", "yesterday");
        let err = parse(&p(), text.as_bytes()).unwrap_err().to_string();
        assert!(err.contains("field `created_at`"), "{err}");
        let text = minimal().replace(r#""task":{}"#, r#""task":{"remaining":[1]}"#);
        let err = parse(&p(), text.as_bytes()).unwrap_err().to_string();
        assert!(err.contains("field `task.remaining[0]`"), "{err}");
    }

    #[test]
    fn newer_version_is_unsupported_even_with_an_unknown_shape() {
        let err = parse(&p(), br#"{"schema_version": 7, "whatever": true}"#).unwrap_err();
        assert!(matches!(err, Error::Unsupported { found: 7, .. }));
        let text = minimal().replacen('{', r#"{"schema_version":2,"#, 1);
        assert!(matches!(
            parse(&p(), text.as_bytes()).unwrap_err(),
            Error::Unsupported { found: 2, .. }
        ));
    }

    #[test]
    fn unknown_fields_survive_a_round_trip() {
        let text = minimal().replace(
            r#""task":{}"#,
            r#""task":{"mood":"good"},"future":[1,{"a":null}]"#,
        );
        let s = parse(&p(), text.as_bytes()).unwrap();
        let again: serde_json::Value = serde_json::from_slice(&to_json(&s).unwrap()).unwrap();
        assert_eq!(again["future"], serde_json::json!([1, {"a": null}]));
        assert_eq!(again["task"]["mood"], "good");
    }
}
