//! `pas-agent merge-driver` (git's merge driver for `session.json`) and `pas-agent resolve`
//! (the same merge, for a session git already left with conflict markers). docs/teams.md.

use std::path::Path;
use std::process::Command;

use crate::cli::MergeDriverArgs;
use crate::error::{Error, Result};
use crate::fsutil::{self, Links, Named, ReadError, WriteGuard};
use crate::session::{merge, teams};
use crate::term::{clean, note};

fn read(path: &Path) -> std::result::Result<Vec<u8>, String> {
    match fsutil::read_limited(path, crate::limits::SESSION_RECOVERY_BYTES) {
        Ok(Some(bytes)) => Ok(bytes),
        Ok(None) => Ok(Vec::new()),
        Err(ReadError::TooLarge(n)) => Err(crate::limits::SESSION.read_refusal(n)),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// `merge-driver %O %A %B %P`: writes the merge of the three versions over `%A` and exits 0,
/// or, for a file that is not a session (an attribute naming the driver for other paths) or
/// a side that cannot be read as one, leaves the merge to `git merge-file` (conflict markers,
/// exit 1 when it conflicts), as git would without the driver.
pub fn driver(args: MergeDriverArgs) -> Result<i32> {
    if args.install {
        return install();
    }
    let (base, ours, theirs) = (&args.files[0], &args.files[1], &args.files[2]);
    let name = args.files.get(3).map_or_else(
        || ours.to_string_lossy().into_owned(),
        |p| p.to_string_lossy().into_owned(),
    );
    let is_session = args
        .files
        .get(3)
        .is_none_or(|p| p.ends_with(".pas-agent/session.json"));
    if is_session {
        let merged = (|| {
            let bytes = merge::merge_files(&read(base)?, &read(ours)?, &read(theirs)?)?;
            let abs = std::path::absolute(ours).map_err(|e| e.to_string())?;
            let dir = abs.parent().unwrap_or(Path::new("/"));
            let guard = WriteGuard::new(dir).map_err(|e| e.to_string())?;
            guard
                .write(&abs, &bytes, Named::ByUs, Links::Replace)
                .map_err(|e| e.to_string())
        })();
        match merged {
            Ok(_) => return Ok(0),
            Err(why) => note(&format!(
                "pas-agent merge-driver: {}: {}; falling back to git's line merge",
                clean(&name),
                clean(&why)
            )),
        }
    }
    let status = Command::new("git")
        .args(["merge-file", "-L", "ours", "-L", "base", "-L", "theirs"])
        .arg(ours)
        .arg(base)
        .arg(theirs)
        .status()
        .map_err(|e| Error::io("git merge-file", e))?;
    Ok(if status.success() { 0 } else { 1 })
}

fn install() -> Result<i32> {
    let cwd = super::cwd()?;
    let Some(repo) = crate::git::discover(&cwd)? else {
        return Err(Error::Message(
            "not inside a git repository: the merge driver is for a session committed to git"
                .into(),
        ));
    };
    let wrote_attr = teams::ensure_attributes(&repo.top)?;
    let wrote_config = teams::ensure_config(&repo.top)?;
    let mut out = String::new();
    out.push_str(if wrote_attr {
        "Added the merge-driver line to .pas-agent/.gitattributes (commit it with the session, so that clones use the driver).\n"
    } else {
        "A .gitattributes file already names the merge driver.\n"
    });
    out.push_str(if wrote_config {
        "Defined the pas-agent merge driver in this repository's git config.\n"
    } else {
        "This repository's git config already defines the pas-agent merge driver.\n"
    });
    crate::term::print(&out)?;
    Ok(0)
}

/// The common ancestor's version of the session file from git's index (stage 1 of an unmerged
/// path), by `git cat-file`, which runs nothing the repository configures.
fn index_base(project: &crate::session::Project) -> Option<Vec<u8>> {
    index_stage(project, 1)
}

/// Stage `n` of `session.json` in git's index (1 the common ancestor, 2 ours, 3 theirs), while
/// a merge, rebase or cherry-pick has left it unmerged.
fn index_stage(project: &crate::session::Project, n: u8) -> Option<Vec<u8>> {
    let repo = crate::git::discover(&project.root).ok()??;
    let rel = project.session_path();
    let rel = rel
        .strip_prefix(&repo.top)
        .ok()?
        .to_str()?
        .replace('\\', "/");
    let out = Command::new("git")
        .arg("-C")
        .arg(&repo.top)
        .args(["cat-file", "blob", &format!(":{n}:{rel}")])
        .output()
        .ok()?;
    out.status.success().then_some(out.stdout)
}

/// `resolve`: merges the two sides of a `session.json` holding conflict markers and writes the
/// result under the lock.
///
/// Errors: no session; the file is not unmerged and not readable ([`Error::Damaged`]); the
/// sides cannot be merged ([`Error::Damaged`], the file unchanged).
pub fn resolve() -> Result<i32> {
    let project = super::project()?;
    let path = project.session_path();
    project.check_session_file()?;
    let bytes = read(&path).map_err(|problem| Error::Damaged {
        path: path.clone(),
        problem,
    })?;
    let text = String::from_utf8_lossy(&bytes);
    let (base, ours, theirs) = match merge::split_conflict(&text) {
        // Without a base in the markers (git's default conflict style), the index still has it.
        Some((base, ours, theirs)) => (
            if base.is_empty() {
                index_base(&project).unwrap_or_default()
            } else {
                base.into_bytes()
            },
            ours.into_bytes(),
            theirs.into_bytes(),
        ),
        // No markers, but git's index still holds both sides: a merge driver that could not
        // run (a binary that is gone) leaves the file as one side only.
        None => match (index_stage(&project, 2), index_stage(&project, 3)) {
            (Some(ours), Some(theirs)) => (index_base(&project).unwrap_or_default(), ours, theirs),
            _ => {
                // Not unmerged: say so when it loads, report why not otherwise.
                project.load()?;
                crate::term::print("The session is not unmerged; there is nothing to resolve.\n")?;
                return Ok(0);
            }
        },
    };
    let merged = merge::merge_files(&base, &ours, &theirs).map_err(|why| Error::Damaged {
        path: path.clone(),
        problem: format!("the two sides of the conflict cannot be merged: {why}"),
    })?;
    let session = crate::session::codec::parse(&path, &merged)?;
    project.overwrite(&session)?;
    crate::term::print(
        "Merged both sides of .pas-agent/session.json into one session.\nNext: `git add .pas-agent/session.json`, then `git merge --continue` (or `git rebase --continue`, `git cherry-pick --continue`).\n",
    )?;
    Ok(0)
}
