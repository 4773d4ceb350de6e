//! Reading the session through its summary cache ([`super::summary`]): what the prompt and
//! `status` load, the whole file only when the stored summary does not match it.

use serde::Deserialize;

use super::project::{Identity, Project};
use super::summary::{Summary, fresh, stored_bytes, write};
use crate::model::Session;

/// A stored summary read without its file rows: serde skips them unbuilt. Parsing the rows
/// was most of what reading the summary cost (286,000 of 372,000 instructions for the
/// 121-file checkpoint of bench/prompt.sh).
#[derive(Deserialize)]
pub(super) struct WithoutFiles {
    pub(super) source: Identity,
    pub(super) session: Session,
}

/// The session as the prompt needs it: the summary's session, whose latest checkpoint has no
/// `files_changed` when the stored summary matches the file (the prompt shows no file),
/// else as [`load`] gives it (and the summary is stored for the next reader). Either way the
/// [`super::prompt_record`] of that session is stored too.
///
/// Errors: those of [`Project::load`].
pub fn load_without_files(project: &Project) -> crate::error::Result<Session> {
    let session_path = project.session_path();
    let stored = || {
        let now = Identity::of(&session_path)?;
        let summary: WithoutFiles = serde_json::from_slice(&stored_bytes(&session_path)?).ok()?;
        let session = (summary.source == now).then_some(summary.session)?;
        // The prompt comes here when its record was missing or stale: the record of this
        // summary, for the next prompt (a rebuild below writes one with the summary).
        super::prompt_record::store(&session_path, &session, now);
        Some(session)
    };
    match stored() {
        Some(session) => Ok(session),
        None => rebuild(project).map(|s| s.session),
    }
}

/// The summary of `project`'s session: the stored one when it matches the file, else made from
/// a load that checks every value (and stored for the next reader).
///
/// Errors: those of [`Project::load`].
pub fn load(project: &Project) -> crate::error::Result<Summary> {
    match fresh(project) {
        Some(s) => Ok(s),
        None => rebuild(project),
    }
}

/// The summary made from a load of `project`'s session that checks every value (no stored
/// summary matches the file, so [`Project::load_recent`] reads it in full), stored for the next
/// reader.
fn rebuild(project: &Project) -> crate::error::Result<Summary> {
    let session_path = project.session_path();
    // The identity is taken before the read: if the file changes meanwhile, the summary
    // records the older identity and is never used for the newer file.
    let before = Identity::of(&session_path);
    // Old runs stay undecoded: the summary counts them and holds none of them.
    let session = project.load_recent()?;
    let summary = Summary::of(
        &session,
        before.unwrap_or(Identity {
            len: 0,
            mtime_ns: 0,
            ino: 0,
            dev: 0,
        }),
    );
    if before.is_some() {
        write(&session_path, &summary);
    }
    // The caller gets the latest checkpoint's files as loaded, not read back from the rows.
    let mut summary = summary;
    summary.files = String::new();
    if let (Some(small), Some(latest)) = (
        summary.session.checkpoints.last_mut(),
        session.checkpoints.last(),
    ) {
        small.files_changed.clone_from(&latest.files_changed);
    }
    Ok(summary)
}
