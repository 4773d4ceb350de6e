//! Content fingerprints of changed files, compatible with the original PAS-Agent
//! (docs/format.md, FileState): 16 lower-case hex digits of the 64-bit FNV-1a hash of the
//! file's bytes; `size:<bytes>` for files over 8 MiB; `link:<16 hex>` (FNV-1a of the target
//! path) for symlinks; none for directories, deleted and unreadable files. Changing this
//! would make every old checkpoint look stale, so a test pins the values.

use std::path::Path;

use crate::block;

pub mod cache;

/// Files larger than this are fingerprinted by size alone.
pub const MAX_HASHED_BYTES: u64 = 8 * 1024 * 1024;
/// Files up to this size are checked for a pas-agent block.
pub const MAX_BLOCK_FILE_BYTES: u64 = 1024 * 1024;

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// 64-bit FNV-1a of `bytes`.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(FNV_OFFSET, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(FNV_PRIME)
    })
}

/// `fnv1a64` as 16 lower-case hex digits.
pub fn hex(bytes: &[u8]) -> String {
    format!("{:016x}", fnv1a64(bytes))
}

/// Both fingerprints of one file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fingerprints {
    /// The original's fingerprint (see the module docs).
    pub content: Option<String>,
    /// For a file of at most 1 MiB holding exactly one pas-agent block: the FNV-1a of the
    /// text outside the block ([`block::outside_block`]).
    pub outside_block: Option<String>,
}

/// Fingerprints the file at `path` without following a final symlink.
pub fn of_path(path: &Path) -> Fingerprints {
    match std::fs::symlink_metadata(path) {
        Ok(meta) => of_meta(path, &meta),
        Err(_) => Fingerprints::default(),
    }
}

/// Fingerprints the file at `path`, whose `lstat` data is `meta`.
fn of_meta(path: &Path, meta: &std::fs::Metadata) -> Fingerprints {
    if meta.file_type().is_symlink() {
        return Fingerprints {
            content: std::fs::read_link(path)
                .ok()
                .map(|t| format!("link:{}", hex(&path_bytes(&t)))),
            outside_block: None,
        };
    }
    if !meta.is_file() {
        return Fingerprints::default();
    }
    if meta.len() > MAX_HASHED_BYTES {
        return Fingerprints {
            content: Some(format!("size:{}", meta.len())),
            outside_block: None,
        };
    }
    match std::fs::read(path) {
        Ok(bytes) => of_bytes(&bytes),
        Err(_) => Fingerprints::default(),
    }
}

/// Fingerprints file contents held in memory (a file up to 8 MiB, or a blob from git).
pub fn of_bytes(bytes: &[u8]) -> Fingerprints {
    if bytes.len() as u64 > MAX_HASHED_BYTES {
        return Fingerprints {
            content: Some(format!("size:{}", bytes.len())),
            outside_block: None,
        };
    }
    Fingerprints {
        content: Some(hex(bytes)),
        outside_block: outside_block_of(bytes),
    }
}

/// The outside-block fingerprint, only for small files that hold a complete block.
pub fn outside_block_of(bytes: &[u8]) -> Option<String> {
    if bytes.len() as u64 > MAX_BLOCK_FILE_BYTES || !block::has_block(bytes) {
        return None;
    }
    block::outside_block(bytes).map(|b| hex(&b))
}

/// The fingerprint of a file's text outside any block, whether or not it has one (for
/// comparing a file that gained a block with its version before the export).
pub fn outside_block_any(bytes: &[u8]) -> Option<String> {
    block::outside_block(bytes).map(|b| hex(&b))
}

#[cfg(unix)]
fn path_bytes(p: &Path) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    p.as_os_str().as_bytes().to_vec()
}

#[cfg(not(unix))]
fn path_bytes(p: &Path) -> Vec<u8> {
    p.to_string_lossy().into_owned().into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_values_are_pinned() {
        // Published FNV-1a 64 test vectors.
        assert_eq!(hex(b""), "cbf29ce484222325");
        assert_eq!(hex(b"a"), "af63dc4c8601ec8c");
        assert_eq!(hex(b"foobar"), "85944171f73967e8");
    }

    #[test]
    fn special_files() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(of_path(dir.path()), Fingerprints::default());
        assert_eq!(
            of_path(&dir.path().join("missing")),
            Fingerprints::default()
        );
        let big = dir.path().join("big");
        let f = std::fs::File::create(&big).unwrap();
        f.set_len(MAX_HASHED_BYTES + 1).unwrap();
        assert_eq!(
            of_path(&big).content.unwrap(),
            format!("size:{}", MAX_HASHED_BYTES + 1)
        );
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink("target/path", dir.path().join("l")).unwrap();
            assert_eq!(
                of_path(&dir.path().join("l")).content.unwrap(),
                format!("link:{}", hex(b"target/path"))
            );
        }
    }
}
