//! The directory cache of `status`'s work-tree pass (`fast.rs`): what each directory held that
//! the index does not, keyed on the directory's stat data, so that a warm `status` reads only
//! the directories that changed — the idea of git's untracked cache
//! (`Documentation/technical/index-format.txt`, "Untracked cache"), kept by pas-agent itself
//! so that it works whether or not the repository turns git's on (`core.untrackedCache`).
//!
//! For each directory the pass read, one row: its path from the top, its `fstat` data (mode,
//! size, modification and change times to the nanosecond, inode, device), a hash of its
//! children in the index (the names of its files and of the directories that hold entries),
//! and the names it held that the index does not have, with their kinds (file, symbolic link,
//! directory). A row is used only when the directory's stat data and its children in the index
//! are exactly the recorded ones: a name is added, removed or renamed only through its
//! directory, which moves the directory's times, and `git add`/`git rm` change the children.
//! What a name is then — ignored, a nested repository, a directory to read in turn — is
//! decided again every time, with the rules of the moment, from the kinds recorded; so a
//! changed `.gitignore` (anywhere) or `info/exclude` needs nothing here.
//!
//! A row is recorded only when both of the directory's times fall at least two whole seconds
//! before the moment after it was read: the racy-git rule the fingerprint cache uses
//! (`crate::fingerprint::cache`), since a directory changed in the same clock tick as the read
//! could change again without its times moving. The change time cannot be set back by a
//! program, so `touch -d` on a directory is seen.
//!
//! One file per work tree, in `$XDG_RUNTIME_DIR/pas-agent/directories/` (else the cache
//! directory [`crate::fsutil::cache_dir`] falls back to), named after a hash of the work tree's
//! path; volatile, rewritten only after a complete pass whose rows differ from those read, at
//! most [`MAX_ROWS`] rows and [`MAX_BYTES`] bytes. A file that does not decode exactly (another
//! build's, a torn write, bytes left over, rows out of order) is treated as absent.
//! `PAS_AGENT_FULL_STATUS=1` turns it off with the other fast paths.

use std::path::{Path, PathBuf};

use rustix::fs::FileType;

/// Most rows kept (directories beyond are read every time).
pub(super) const MAX_ROWS: usize = 200_000;
/// Largest cache file read or written (32 MiB).
pub(super) const MAX_BYTES: u64 = 32 * 1024 * 1024;

/// Bumped when the stored shape or its meaning changes; with the binary's version, so that a
/// cache written by another build is never trusted.
const FORMAT: &str = concat!("1/", env!("CARGO_PKG_VERSION"));

/// The start of a cache file, before [`FORMAT`]. Binary, little-endian:
///
/// ```text
/// MAGIC, bytes(FORMAT), bytes(top), u32 count, count × row
/// row:   bytes(path), u32 mode, u64 size, i64 mtime s, i64 mtime ns, i64 ctime s, i64 ctime ns,
///        u64 inode, u64 device, u64 children hash, u32 names, names × (u8 kind, bytes(name))
/// bytes: u32 length, then the bytes; kind: 1 file, 2 symbolic link, 3 directory
/// ```
///
/// Rows are sorted by path, each path once.
const MAGIC: &[u8] = b"pas-agent directories\n";

/// Whether two whole seconds lie between a directory's times and the moment after it was read
/// (see the module documentation).
const RACY_SECONDS: i64 = 2;

/// A directory's `fstat` data: mode, size, modification time (seconds, nanoseconds), change
/// time (the same), inode, device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct DirStat(u32, u64, i64, i64, i64, i64, u64, u64);

impl DirStat {
    /// The stat data of the directory open as `fd`; `None` when it cannot be read.
    pub fn of(fd: rustix::fd::BorrowedFd<'_>) -> Option<DirStat> {
        let st = rustix::fs::fstat(fd).ok()?;
        Some(DirStat(
            st.st_mode,
            u64::try_from(st.st_size).ok()?,
            st.st_mtime,
            st.st_mtime_nsec as i64,
            st.st_ctime,
            st.st_ctime_nsec as i64,
            st.st_ino,
            st.st_dev,
        ))
    }

    /// Whether a directory with these times, read before `now`, could change again without its
    /// times moving.
    fn racy(&self, now: std::time::SystemTime) -> bool {
        let Ok(now) = now.duration_since(std::time::UNIX_EPOCH) else {
            return true;
        };
        let second = i64::try_from(now.as_secs()).unwrap_or(i64::MAX);
        let safe_before = second.saturating_sub(RACY_SECONDS);
        self.2 >= safe_before || self.4 >= safe_before
    }
}

/// The kinds of name a row keeps: the only ones the pass does anything with.
fn kind_code(kind: FileType) -> Option<u8> {
    match kind {
        FileType::RegularFile => Some(1),
        FileType::Symlink => Some(2),
        FileType::Directory => Some(3),
        _ => None,
    }
}

fn kind_of(code: u8) -> Option<FileType> {
    match code {
        1 => Some(FileType::RegularFile),
        2 => Some(FileType::Symlink),
        3 => Some(FileType::Directory),
        _ => None,
    }
}

/// Where a field lies in the bytes read: start and end.
use crate::fingerprint::cache::{Reader, Span};

/// A row as read: spans of the file's bytes.
#[derive(Debug, Clone, Copy)]
struct Stored {
    path: Span,
    stat: DirStat,
    children: u64,
    /// The encoded names: `(u8 kind, bytes(name))` each.
    names: Span,
}

/// A row this pass made: a directory it read.
#[derive(Debug)]
pub(super) struct Row {
    pub path: Vec<u8>,
    pub stat: DirStat,
    pub children: u64,
    pub names: Vec<(Vec<u8>, FileType)>,
}

/// What one thread of the pass did with the cache: the rows it used (by their place in the
/// file read) and the directories it read (rows to record when not racy).
#[derive(Debug, Default)]
pub(super) struct Used {
    pub kept: Vec<usize>,
    pub read: Vec<Row>,
}

/// The cache of one work tree as read. Shared, read-only, by the pass's threads.
#[derive(Debug, Default)]
pub(super) struct DirCache {
    file: Option<PathBuf>,
    top: PathBuf,
    data: Vec<u8>,
    rows: Vec<Stored>,
}

/// Environment variable that, set to `1`, turns the cache off with the other fast paths (the
/// full computation, for comparison).
const OFF_ENV: &str = "PAS_AGENT_FULL_STATUS";

fn file_for(top: &Path) -> Option<PathBuf> {
    let dir = crate::fsutil::cache_dir()?.join("directories");
    let key = crate::fingerprint::hex(top.as_os_str().as_encoded_bytes());
    Some(dir.join(format!("{key}.bin")))
}

impl DirCache {
    /// The cache of the work tree at `top` (absolute, canonical): empty when there is none, it
    /// cannot be read, was written by another build or for another path, or is turned off.
    pub fn open(top: &Path) -> DirCache {
        if std::env::var_os(OFF_ENV).is_some_and(|v| v == "1") {
            return DirCache::default();
        }
        let file = file_for(top);
        let (data, rows) = file
            .as_deref()
            .and_then(|f| crate::fsutil::read_limited(f, MAX_BYTES).ok().flatten())
            .and_then(|bytes| {
                let rows = decode(&bytes, top)?;
                Some((bytes, rows))
            })
            .unwrap_or_default();
        DirCache {
            file,
            top: top.to_path_buf(),
            data,
            rows,
        }
    }

    /// Whether rows can be recorded (a cache file is known).
    pub fn enabled(&self) -> bool {
        self.file.is_some()
    }

    /// The row of the directory `path` when its stat data and children hash are the recorded
    /// ones: its place, to hand to [`DirCache::names`].
    pub fn lookup(&self, path: &[u8], stat: DirStat, children: u64) -> Option<usize> {
        let at = self
            .rows
            .binary_search_by(|r| self.data[r.path.0..r.path.1].cmp(path))
            .ok()?;
        let row = &self.rows[at];
        (row.stat == stat && row.children == children).then_some(at)
    }

    /// The names of the row at `at` that the index did not have, with their kinds.
    pub fn names(&self, at: usize) -> impl Iterator<Item = (&[u8], FileType)> + '_ {
        let (mut i, end) = self.rows[at].names;
        let data = &self.data;
        std::iter::from_fn(move || {
            if i >= end {
                return None;
            }
            // Checked when the file was read.
            let kind = kind_of(data[i])?;
            let len = u32::from_le_bytes(data[i + 1..i + 5].try_into().ok()?) as usize;
            let name = &data[i + 5..i + 5 + len];
            i += 5 + len;
            Some((name, kind))
        })
    }

    /// Writes the rows of a complete pass — those kept and those read, when not racy — if they
    /// differ from what was read. Best effort: a cache that cannot be written only means the
    /// next pass reads the directories again.
    pub fn save(self, used: Used) {
        let Some(file) = self.file.as_deref() else {
            return;
        };
        let now = std::time::SystemTime::now();
        let Used { mut kept, mut read } = used;
        read.retain(|r| !r.stat.racy(now));
        if read.is_empty() && kept.len() == self.rows.len() {
            // Every row read was used and nothing new was seen: the file stands.
            return;
        }
        kept.sort_unstable();
        kept.dedup();
        let mut out: Vec<(&[u8], Encoded<'_>)> = kept
            .iter()
            .map(|&at| {
                let r = &self.rows[at];
                (
                    &self.data[r.path.0..r.path.1],
                    Encoded::Old(r.stat, r.children, &self.data[r.names.0..r.names.1]),
                )
            })
            .chain(read.iter().map(|r| {
                (
                    r.path.as_slice(),
                    Encoded::New(r.stat, r.children, &r.names),
                )
            }))
            .collect();
        out.sort_by(|a, b| a.0.cmp(b.0));
        out.dedup_by(|later, first| later.0 == first.0);
        out.truncate(MAX_ROWS);
        let bytes = encode(&self.top, &out);
        crate::fingerprint::cache::write_file(file, &bytes, MAX_BYTES);
    }
}

/// A row to write: as read (its names still encoded) or as made.
enum Encoded<'a> {
    Old(DirStat, u64, &'a [u8]),
    New(DirStat, u64, &'a [(Vec<u8>, FileType)]),
}

/// The hash of a directory's children in the index, in index order: each name and whether it
/// is a directory (FNV-1a, 64 bits).
#[derive(Debug, Clone, Copy)]
pub(super) struct ChildrenHash(u64);

impl Default for ChildrenHash {
    fn default() -> Self {
        ChildrenHash(0xcbf2_9ce4_8422_2325)
    }
}

impl ChildrenHash {
    pub fn add(&mut self, name: &[u8], is_dir: bool) {
        let mut h = self.0;
        for &b in name {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        // A byte no name holds ends each name, then the kind.
        h = (h ^ 0x100).wrapping_mul(0x0000_0100_0000_01b3);
        h = (h ^ u64::from(is_dir)).wrapping_mul(0x0000_0100_0000_01b3);
        self.0 = h;
    }

    pub fn value(self) -> u64 {
        self.0
    }
}

fn encode(top: &Path, rows: &[(&[u8], Encoded<'_>)]) -> Vec<u8> {
    fn bytes(out: &mut Vec<u8>, b: &[u8]) {
        out.extend_from_slice(&u32::try_from(b.len()).unwrap_or(u32::MAX).to_le_bytes());
        out.extend_from_slice(b);
    }
    let mut out = Vec::with_capacity(64 + rows.len() * 96);
    out.extend_from_slice(MAGIC);
    bytes(&mut out, FORMAT.as_bytes());
    bytes(&mut out, top.as_os_str().as_encoded_bytes());
    out.extend_from_slice(&u32::try_from(rows.len()).unwrap_or(u32::MAX).to_le_bytes());
    for (path, row) in rows {
        let (stat, children) = match row {
            Encoded::Old(s, c, _) | Encoded::New(s, c, _) => (*s, *c),
        };
        let DirStat(mode, size, ms, mns, cs, cns, ino, dev) = stat;
        bytes(&mut out, path);
        out.extend_from_slice(&mode.to_le_bytes());
        out.extend_from_slice(&size.to_le_bytes());
        for t in [ms, mns, cs, cns] {
            out.extend_from_slice(&t.to_le_bytes());
        }
        out.extend_from_slice(&ino.to_le_bytes());
        out.extend_from_slice(&dev.to_le_bytes());
        out.extend_from_slice(&children.to_le_bytes());
        match row {
            Encoded::Old(_, _, names) => {
                let count = count_names(names).unwrap_or(0);
                out.extend_from_slice(&count.to_le_bytes());
                out.extend_from_slice(names);
            }
            Encoded::New(_, _, names) => {
                let names: Vec<(u8, &[u8])> = names
                    .iter()
                    .filter_map(|(n, k)| Some((kind_code(*k)?, n.as_slice())))
                    .collect();
                out.extend_from_slice(&(names.len() as u32).to_le_bytes());
                for (kind, name) in names {
                    out.push(kind);
                    bytes(&mut out, name);
                }
            }
        }
    }
    out
}

/// How many encoded names `names` holds; `None` when it is not a whole list of them.
fn count_names(names: &[u8]) -> Option<u32> {
    let mut i = 0;
    let mut count = 0u32;
    while i < names.len() {
        kind_of(*names.get(i)?)?;
        let len = u32::from_le_bytes(names.get(i + 1..i + 5)?.try_into().ok()?) as usize;
        let end = (i + 5).checked_add(len)?;
        if end > names.len() || len == 0 {
            return None;
        }
        i = end;
        count += 1;
    }
    Some(count)
}

/// The rows of a cache file written by [`encode`] for `top` by this build, as spans of `data`;
/// `None` for anything else.
fn decode(data: &[u8], top: &Path) -> Option<Vec<Stored>> {
    let (mut r, count) = Reader::open(data, MAGIC, FORMAT, top, MAX_ROWS)?;
    let mut rows: Vec<Stored> = Vec::with_capacity(count);
    for _ in 0..count {
        let path = r.bytes()?;
        if rows
            .last()
            .is_some_and(|last| data[last.path.0..last.path.1] >= data[path.0..path.1])
        {
            return None;
        }
        let stat = DirStat(
            u32::from_le_bytes(r.array()?),
            r.u64()?,
            r.i64()?,
            r.i64()?,
            r.i64()?,
            r.i64()?,
            r.u64()?,
            r.u64()?,
        );
        let children = r.u64()?;
        let n = r.u32()?;
        let start = r.at;
        for _ in 0..n {
            let [kind] = r.array::<1>()?;
            kind_of(kind)?;
            let name = r.bytes()?;
            if name.0 == name.1 {
                return None;
            }
        }
        rows.push(Stored {
            path,
            stat,
            children,
            names: (start, r.at),
        });
    }
    (r.at == data.len()).then_some(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(m: i64) -> DirStat {
        DirStat(0o40755, 4096, m, 5, m, 6, 7, 8)
    }

    #[test]
    fn rows_round_trip_and_anything_else_is_absent() {
        let top = Path::new("/w");
        let names = vec![
            (b"a.txt".to_vec(), FileType::RegularFile),
            (b"link".to_vec(), FileType::Symlink),
            (b"sub".to_vec(), FileType::Directory),
            (b"fifo".to_vec(), FileType::Fifo),
        ];
        let rows = vec![
            (&b""[..], Encoded::New(stat(1), 9, &names)),
            (&b"src"[..], Encoded::New(stat(2), 10, &[])),
        ];
        let bytes = encode(top, &rows);
        let cache = DirCache {
            file: None,
            top: top.into(),
            rows: decode(&bytes, top).unwrap(),
            data: bytes.clone(),
        };
        let at = cache.lookup(b"", stat(1), 9).unwrap();
        let got: Vec<(&[u8], FileType)> = cache.names(at).collect();
        assert_eq!(
            got,
            vec![
                (&b"a.txt"[..], FileType::RegularFile),
                (&b"link"[..], FileType::Symlink),
                (&b"sub"[..], FileType::Directory),
            ]
        );
        assert!(cache.lookup(b"", stat(1), 8).is_none(), "other children");
        assert!(cache.lookup(b"", stat(3), 9).is_none(), "other stat data");
        assert!(cache.lookup(b"src", stat(2), 10).is_some());
        assert!(cache.lookup(b"other", stat(2), 10).is_none());
        // The rows kept are written as they were read.
        let again = encode(
            top,
            &[(
                &b""[..],
                Encoded::Old(
                    stat(1),
                    9,
                    &bytes[cache.rows[0].names.0..cache.rows[0].names.1],
                ),
            )],
        );
        let reread = decode(&again, top).unwrap();
        assert_eq!(reread.len(), 1);
        // Another work tree, a torn file, bytes left over, another format: absent.
        assert!(decode(&bytes, Path::new("/x")).is_none());
        for cut in [0, 5, MAGIC.len() + 3, bytes.len() - 1] {
            assert!(decode(&bytes[..cut], top).is_none(), "cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode(&longer, top).is_none());
        let mut other = bytes.clone();
        let at = MAGIC.len() + 4;
        assert_eq!(&other[at..at + FORMAT.len()], FORMAT.as_bytes());
        other[at] = b'9';
        assert!(decode(&other, top).is_none());
    }

    #[test]
    fn racy_rule_uses_whole_seconds() {
        use std::time::{Duration, SystemTime};
        let now = SystemTime::UNIX_EPOCH + Duration::new(100, 500);
        assert!(!stat(97).racy(now));
        assert!(stat(98).racy(now));
        assert!(stat(100).racy(now));
    }

    #[test]
    fn children_hash_tells_names_and_kinds_apart() {
        let of = |names: &[(&[u8], bool)]| {
            let mut h = ChildrenHash::default();
            for (n, d) in names {
                h.add(n, *d);
            }
            h.value()
        };
        assert_ne!(of(&[(b"a", false)]), of(&[(b"a", true)]));
        assert_ne!(of(&[(b"ab", false)]), of(&[(b"a", false), (b"b", false)]));
        assert_ne!(of(&[]), of(&[(b"a", false)]));
        assert_eq!(of(&[(b"a", false)]), of(&[(b"a", false)]));
    }
}
