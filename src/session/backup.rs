//! The last good session, kept outside the work tree at every save, and brought back by
//! `pas-agent recover` (docs/format.md, "The last good session").
//!
//! Every save of `session.json` also writes the same bytes to
//! `<state>/sessions/<key>/session.json`, where `<state>` is `$PAS_AGENT_STATE_DIR`, else
//! `$XDG_STATE_HOME/pas-agent`, else `~/.local/state/pas-agent` (as for the run registry), and
//! `<key>` is 16 hex digits of the FNV-1a hash of the session root's path. Beside it, `root`
//! names the project. The copy is outside the work tree, so git never sees it and a checkout,
//! a bad merge or a hand edit that damages `session.json` cannot touch it; the directory is
//! 0700, as the session may hold private text. It is written without `fsync` (the session
//! itself is written durably; the copy only has to survive what happens to the work tree).
//!
//! A copy that cannot be written is a warning, never a failed save.

use std::path::{Path, PathBuf};

use super::project::Project;
use crate::fsutil::{Links, Named, WriteGuard};

/// The name of the kept copy in a project's backup directory.
pub const FILE: &str = "session.json";
/// The file beside it that names the project's root.
pub const ROOT_FILE: &str = "root";

/// The directory that keeps the last good session of the project at `root` (by its real
/// path, so a link to the project finds the same copy).
pub fn dir_for(root: &Path) -> Option<PathBuf> {
    let real = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let key = format!(
        "{:016x}",
        crate::fingerprint::fnv1a64(real.as_os_str().as_encoded_bytes())
    );
    Some(crate::fsutil::state_dir()?.join("sessions").join(key))
}

/// Path of the kept copy of `project`'s session.
pub fn path_for(project: &Project) -> Option<PathBuf> {
    Some(dir_for(&project.root)?.join(FILE))
}

/// Keeps `bytes`, the session just saved for `project`, as its last good session.
///
/// Errors: the directory or the copy could not be written (the caller warns).
pub fn keep(project: &Project, bytes: &[u8]) -> std::io::Result<()> {
    let dir = dir_for(&project.root)
        .ok_or_else(|| std::io::Error::other("no HOME, XDG_STATE_HOME or PAS_AGENT_STATE_DIR"))?;
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(&dir)?;
    let guard = WriteGuard::new(&dir)?;
    let refused = |e: crate::fsutil::WriteError| match e {
        crate::fsutil::WriteError::Io(e) => e,
        e => std::io::Error::other(e.to_string()),
    };
    let root_file = dir.join(ROOT_FILE);
    let root_text = format!("{}\n", project.root.display());
    if std::fs::read(&root_file).ok().as_deref() != Some(root_text.as_bytes()) {
        guard
            .write_volatile(
                &root_file,
                root_text.as_bytes(),
                Named::ByUs,
                Links::Replace,
            )
            .map_err(refused)?;
    }
    guard
        .write_volatile(&dir.join(FILE), bytes, Named::ByUs, Links::Replace)
        .map_err(refused)?;
    crate::fsutil::remove_old_temps(&dir, crate::fsutil::OLD_TEMP);
    Ok(())
}

/// The kept copy of `project`'s session: its path and bytes, when there is one.
pub fn read(project: &Project) -> Option<(PathBuf, Vec<u8>)> {
    let path = path_for(project)?;
    let bytes =
        crate::fsutil::read_limited(&path, crate::limits::SESSION_RECOVERY_BYTES).ok()??;
    Some((path, bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_project_has_its_own_directory() {
        let a = dir_for(Path::new("/p/a"));
        let b = dir_for(Path::new("/p/b"));
        if crate::fsutil::state_dir().is_some() {
            assert_ne!(a, b);
            assert_eq!(a, dir_for(Path::new("/p/a")));
        }
    }
}
