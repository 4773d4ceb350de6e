//! The one atomic writer, and small file helpers around it.
//!
//! Recipe (facts from `launcher-store.md` §D1): resolve symlinks so the link survives and its
//! target is replaced; create a uniquely named temp file in the target's directory (a rename
//! cannot cross filesystems); write; copy the old file's permissions (tempfile creates 0600);
//! `fsync` the file; rename over the target; `fsync` the directory (errors there are
//! tolerated: some network filesystems refuse it after the rename already happened).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

/// Why [`write_atomic`] refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The existing target is not writable by us: replacing it would defeat its permissions.
    #[error("the file is read-only; refusing to replace it")]
    ReadOnly,
    /// The target path resolves to something that is not a regular file.
    #[error("not a regular file")]
    NotAFile,
    /// Any I/O failure (the target is unchanged).
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// Follows `path` through any chain of symlinks to the file that should be written. A dangling
/// link resolves to its target (relative targets are joined onto the link's directory), so the
/// write creates the target and keeps the link.
///
/// Errors: a loop of more than 40 links, or an unreadable link.
pub fn resolve_symlinks(path: &Path) -> io::Result<PathBuf> {
    let mut current = path.to_path_buf();
    for _ in 0..40 {
        match fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let target = fs::read_link(&current)?;
                current = if target.is_absolute() {
                    target
                } else {
                    current.parent().map(|p| p.join(&target)).unwrap_or(target)
                };
            }
            _ => return Ok(current),
        }
    }
    Err(io::Error::other("too many levels of symbolic links"))
}

/// Replaces `target` with `contents` so that a crash at any instant leaves the old file or the
/// new one, whole. Writes through symlinks; keeps the old file's permissions (a new file gets
/// 0666 minus the process umask).
///
/// Errors: [`WriteError::ReadOnly`] when the existing file is read-only (checked by its mode and
/// by opening it for writing, which changes nothing); [`WriteError::NotAFile`] for a directory
/// or other special file; I/O errors from any step, after which the target is unchanged and
/// the temp file removed.
pub fn write_atomic(target: &Path, contents: &[u8]) -> Result<(), WriteError> {
    let real = resolve_symlinks(target)?;
    let dir = match real.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let existing = match fs::metadata(&real) {
        Ok(meta) => Some(meta),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(e.into()),
    };
    if let Some(meta) = &existing {
        if !meta.is_file() {
            return Err(WriteError::NotAFile);
        }
        if meta.permissions().readonly() {
            return Err(WriteError::ReadOnly);
        }
        if let Err(e) = OpenOptions::new().write(true).open(&real) {
            if e.kind() == io::ErrorKind::PermissionDenied {
                return Err(WriteError::ReadOnly);
            }
            return Err(e.into());
        }
    }
    if !dir.is_dir() {
        let what = if real == target {
            format!("its directory {} does not exist", dir.display())
        } else {
            format!(
                "it is a link to {}, whose directory does not exist",
                real.display()
            )
        };
        return Err(io::Error::new(io::ErrorKind::NotFound, what).into());
    }
    let name = real
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .tempfile_in(&dir)?;
    tmp.write_all(contents)?;
    let permissions = match &existing {
        Some(meta) => Some(meta.permissions()),
        None => new_file_permissions(),
    };
    if let Some(permissions) = permissions {
        tmp.as_file().set_permissions(permissions)?;
    }
    tmp.as_file().sync_all()?;
    // Close the handle before renaming (Windows cannot rename an open file).
    let tmp_path = tmp.into_temp_path();
    fs::rename(&tmp_path, &real)?;
    // The rename happened: the temp path no longer exists, so disarm its delete-on-drop.
    let _ = tmp_path.keep();
    sync_dir(&dir);
    Ok(())
}

#[cfg(unix)]
fn new_file_permissions() -> Option<fs::Permissions> {
    use std::os::unix::fs::PermissionsExt;
    Some(fs::Permissions::from_mode(0o666 & !process_umask()))
}

/// Windows only knows the read-only flag, and a fresh temp file is writable already.
#[cfg(not(unix))]
fn new_file_permissions() -> Option<fs::Permissions> {
    None
}

/// The process umask, read from `/proc/self/status` (Linux ≥ 4.7) without changing it;
/// `0o022` where that is not available.
#[cfg(unix)]
fn process_umask() -> u32 {
    fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Umask:"))
                .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
        })
        .unwrap_or(0o022)
}

#[cfg(unix)]
fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

#[cfg(not(unix))]
fn sync_dir(_dir: &Path) {}

/// Reads at most `limit` bytes of `path`. Returns `Ok(None)` when the file does not exist and
/// `Err(TooLarge(size))` when it is larger than `limit`.
pub fn read_limited(path: &Path, limit: u64) -> Result<Option<Vec<u8>>, ReadError> {
    let mut file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(ReadError::Io(e)),
    };
    let mut buf = Vec::new();
    (&mut file)
        .take(limit + 1)
        .read_to_end(&mut buf)
        .map_err(ReadError::Io)?;
    if buf.len() as u64 > limit {
        let size = file.metadata().map(|m| m.len()).unwrap_or(limit + 1);
        return Err(ReadError::TooLarge(size));
    }
    Ok(Some(buf))
}

/// Why [`read_limited`] failed.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file is larger than the limit: its size in bytes (`limit + 1` when unknown).
    #[error("the file is too large ({0} bytes)")]
    TooLarge(u64),
    /// Opening or reading failed (a missing file is not an error but `Ok(None)`).
    #[error(transparent)]
    Io(io::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_through_a_symlink_and_keeps_mode() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("AGENTS.md");
        fs::write(&real, "old").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(&real, fs::Permissions::from_mode(0o640)).unwrap();
            std::os::unix::fs::symlink("AGENTS.md", dir.path().join("CLAUDE.md")).unwrap();
            write_atomic(&dir.path().join("CLAUDE.md"), b"new").unwrap();
            assert!(
                fs::symlink_metadata(dir.path().join("CLAUDE.md"))
                    .unwrap()
                    .file_type()
                    .is_symlink()
            );
            assert_eq!(fs::read_to_string(&real).unwrap(), "new");
            let mode = fs::metadata(&real).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o640);
        }
        let leftovers: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty());
    }

    #[cfg(unix)]
    #[test]
    fn dangling_link_creates_its_target() {
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("sub/target.md", dir.path().join("link.md")).unwrap();
        fs::create_dir(dir.path().join("sub")).unwrap();
        write_atomic(&dir.path().join("link.md"), b"x").unwrap();
        assert_eq!(
            fs::read_to_string(dir.path().join("sub/target.md")).unwrap(),
            "x"
        );
    }

    #[test]
    fn refuses_read_only_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        fs::write(&path, "keep").unwrap();
        let mut perms = fs::metadata(&path).unwrap().permissions();
        perms.set_readonly(true);
        fs::set_permissions(&path, perms).unwrap();
        assert!(matches!(
            write_atomic(&path, b"x"),
            Err(WriteError::ReadOnly)
        ));
        assert_eq!(fs::read_to_string(&path).unwrap(), "keep");
    }

    #[test]
    fn read_limited_reports_size() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        fs::write(&path, vec![b'a'; 10]).unwrap();
        assert!(matches!(
            read_limited(&path, 5),
            Err(ReadError::TooLarge(10))
        ));
        assert_eq!(read_limited(&path, 10).unwrap().unwrap().len(), 10);
        assert!(read_limited(&dir.path().join("none"), 5).unwrap().is_none());
    }
}
