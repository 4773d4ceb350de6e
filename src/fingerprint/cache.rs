//! A cache of content fingerprints keyed on `lstat` data, so that `status`, `checkpoint` and
//! `export` read only the changed files whose stat data moved since the last call (docs/performance.md).
//!
//! One file per work tree, in `$XDG_RUNTIME_DIR/pas-agent/fingerprints/` (or the cache
//! directory [`crate::fsutil::cache_dir`] falls back to), named after a hash of the work tree's
//! path: volatile (written with [`WriteGuard::write_volatile`], lost at reboot), private to the
//! user (mode 0700 directory), never in the work tree. It holds the fingerprints of the paths
//! of the last call only, at most [`MAX_ENTRIES`] of them and [`MAX_CACHE_BYTES`] bytes, so it
//! stays as small as the list of changed files.
//!
//! An entry is used only when the file's kind, size, modification time, change time (both in
//! nanoseconds), inode and device are exactly the recorded ones. It is recorded only when both
//! times fall in a second earlier than the moment after the file was read — git's racy-git
//! rule (`Documentation/technical/racy-git.txt`): a file written in the same second as the read
//! could be written again without its times moving, so such a file is always read again. The
//! change time cannot be set back by a program (`touch -d` and `rsync -t` set the modification
//! time only), so a rewrite that restores size and modification time is still seen.

use std::path::{Path, PathBuf};

use super::Fingerprints;
use crate::fsutil::{self, Links, Named, WriteGuard};

/// Most entries kept: fingerprints of more changed files than this are computed every time
/// beyond the first `MAX_ENTRIES`.
pub const MAX_ENTRIES: usize = 20_000;
/// Largest cache file read or written (8 MiB); a larger one is ignored (and not written).
pub const MAX_CACHE_BYTES: u64 = 8 * 1024 * 1024;

/// Bumped when the stored shape or the meaning of a fingerprint changes; with the binary's
/// version, so that a cache written by another build is never trusted.
const FORMAT: &str = concat!("2/", env!("CARGO_PKG_VERSION"));

/// The `lstat` data an entry is keyed on: kind and permission bits (`st_mode`), size,
/// modification time (seconds since the epoch, nanoseconds), change time (the same), inode,
/// device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stat(u32, u64, i64, i64, i64, i64, u64, u64);

impl Stat {
    #[cfg(unix)]
    fn of(meta: &std::fs::Metadata) -> Option<Stat> {
        use std::os::unix::fs::MetadataExt;
        Some(Stat(
            meta.mode(),
            meta.len(),
            meta.mtime(),
            meta.mtime_nsec(),
            meta.ctime(),
            meta.ctime_nsec(),
            meta.ino(),
            meta.dev(),
        ))
    }

    /// Without change times and inodes the stat data cannot prove a file unchanged.
    #[cfg(not(unix))]
    fn of(_meta: &std::fs::Metadata) -> Option<Stat> {
        None
    }

    /// Whether a file with these times, read before `now`, could still change without its
    /// times moving: either time is within [`RACY_SECONDS`] whole seconds of `now`'s second,
    /// or later. The margin covers file systems that stamp with a coarse clock (Linux's lags
    /// the one `now` reads by up to a jiffy, so a write just after a read can carry a time
    /// before the read) and those with 2-second times (FAT, exFAT).
    fn racy(&self, now: std::time::SystemTime) -> bool {
        let Ok(now) = now.duration_since(std::time::UNIX_EPOCH) else {
            return true;
        };
        let second = i64::try_from(now.as_secs()).unwrap_or(i64::MAX);
        let safe_before = second.saturating_sub(RACY_SECONDS);
        self.2 >= safe_before || self.4 >= safe_before
    }
}

/// How many whole seconds before the current one a file's times must lie for its entry to be
/// kept (see `Stat::racy`).
const RACY_SECONDS: i64 = 2;

#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    stat: Stat,
    content: Option<String>,
    outside_block: Option<String>,
}

impl Entry {
    fn view(&self) -> View<'_> {
        View {
            stat: self.stat,
            content: self.content.as_deref().map(str::as_bytes),
            outside_block: self.outside_block.as_deref().map(str::as_bytes),
        }
    }
}

/// An entry's fields, borrowed: what is compared and written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct View<'a> {
    stat: Stat,
    content: Option<&'a [u8]>,
    outside_block: Option<&'a [u8]>,
}

/// Where a field lies in the bytes read: start and end.
/// A range of a cache file's bytes: start, end.
pub(crate) type Span = (usize, usize);

/// An entry as read: its path and fingerprints are spans of the cache file's bytes
/// ([`Cache::data`]), so that reading the file copies none of them (a copy each cost more
/// than the rest of the read, docs/performance-history.md); the fingerprints of an entry used are copied then,
/// and checked to be UTF-8 (an entry whose are not is not used).
#[derive(Debug, Clone, Copy)]
struct Stored {
    path: Span,
    stat: Stat,
    content: Option<Span>,
    outside_block: Option<Span>,
}

impl Stored {
    fn path<'a>(&self, data: &'a [u8]) -> &'a [u8] {
        &data[self.path.0..self.path.1]
    }

    fn view<'a>(&self, data: &'a [u8]) -> View<'a> {
        View {
            stat: self.stat,
            content: self.content.map(|(a, b)| &data[a..b]),
            outside_block: self.outside_block.map(|(a, b)| &data[a..b]),
        }
    }
}

/// The start of a cache file, before [`FORMAT`]. The file is binary (the JSON rows of the
/// first version cost more to parse than the rest of a small repository's `status`):
///
/// ```text
/// MAGIC, str(FORMAT), bytes(top), u32 count, count × row
/// row:   bytes(path), u32 mode, u64 size, i64 mtime s, i64 mtime ns, i64 ctime s, i64 ctime ns,
///        u64 inode, u64 device, opt(content), opt(outside block)
/// bytes: u32 length, then the bytes; str: bytes holding UTF-8; opt: u8 0, or u8 1 then str
/// ```
///
/// Integers are little-endian; rows are sorted by path, each path once. A file that does not
/// decode exactly (another format, a torn write, bytes left over) is treated as absent.
const MAGIC: &[u8] = b"pas-agent fingerprints\n";

/// Whether [`Cache::save`] may leave the entries it read to the process's exit instead of
/// freeing them (see [`leave_to_exit`]).
static LEAVE_TO_EXIT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Lets [`Cache::save`] leave the entries it read (at most [`MAX_ENTRIES`]) to the process's
/// exit instead of freeing them string by string (a few percent of `status` on 1,000 files,
/// docs/performance-history.md). Only for a process that takes a status once or twice and exits: `status` calls
/// it. A long-lived one (the MCP server's checkpoints, the launcher) frees as usual, or each
/// call would keep its entries for good.
pub fn leave_to_exit() {
    LEAVE_TO_EXIT.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// One entry of this call: the one read at an index of `Cache::old`, unchanged, or a new one.
#[derive(Debug)]
enum Slot {
    Old(usize),
    New(String, Entry),
}

/// The fingerprints of one work tree's changed files, as read from the cache and as computed
/// by this call. Build with [`Cache::open`], ask with [`Cache::of_path`], finish with
/// [`Cache::save`].
#[derive(Debug)]
pub struct Cache {
    file: Option<PathBuf>,
    top: PathBuf,
    /// The cache file as read (empty when none was used).
    data: Vec<u8>,
    /// The entries read, sorted by path: spans of `data`.
    old: Vec<Stored>,
    /// This call's entries, at most [`MAX_ENTRIES`].
    new: Vec<Slot>,
    /// How many fingerprints came from the cache (for tests and benchmarks).
    pub hits: usize,
}

/// Environment variable that, set to `1`, turns the cache off: every fingerprint is computed
/// and nothing is read or written (as with `PAS_AGENT_FULL_STATUS=1`).
pub const NO_CACHE_ENV: &str = "PAS_AGENT_FULL_STATUS";

fn disabled() -> bool {
    std::env::var_os(NO_CACHE_ENV).is_some_and(|v| v == "1")
}

fn file_for(top: &Path) -> Option<PathBuf> {
    let dir = crate::fsutil::cache_dir()?.join("fingerprints");
    let key = super::hex(top.as_os_str().as_encoded_bytes());
    // `.bin`: the binary shape; the JSON files of earlier builds (`{key}.json`) are never read.
    Some(dir.join(format!("{key}.bin")))
}

impl Cache {
    /// The cache of the work tree at `top` (an absolute, canonical path); empty when there is
    /// none, it cannot be read, was written by another build or for another path, or the
    /// cache is turned off.
    pub fn open(top: &Path) -> Cache {
        let file = if disabled() { None } else { file_for(top) };
        let (data, old) = file
            .as_deref()
            .and_then(|f| fsutil::read_limited(f, MAX_CACHE_BYTES).ok().flatten())
            .and_then(|bytes| {
                let old = decode(&bytes, top)?;
                Some((bytes, old))
            })
            .unwrap_or_default();
        Cache {
            file,
            top: top.to_path_buf(),
            data,
            old,
            new: Vec::new(),
            hits: 0,
        }
    }

    /// The fingerprints of the file at `abs`, recorded as `path`: from the cache when its stat
    /// data is the recorded one, else computed (and recorded when not racy).
    pub fn of_path(&mut self, path: &str, abs: &Path) -> Fingerprints {
        let meta = std::fs::symlink_metadata(abs).ok();
        let stat = meta.as_ref().and_then(Stat::of);
        let room = self.new.len() < MAX_ENTRIES;
        if let Some(stat) = stat
            && let Ok(at) = self
                .old
                .binary_search_by(|e| e.path(&self.data).cmp(path.as_bytes()))
            && self.old[at].stat == stat
            && let Some(fp) = fingerprints(self.old[at].view(&self.data))
        {
            self.hits += 1;
            if room {
                self.new.push(Slot::Old(at));
            }
            return fp;
        }
        let fp = match &meta {
            Some(meta) => super::of_meta(abs, meta),
            None => Fingerprints::default(),
        };
        if let Some(stat) = stat
            && !stat.racy(std::time::SystemTime::now())
            && self.file.is_some()
            && room
        {
            self.new.push(Slot::New(
                path.to_owned(),
                Entry {
                    stat,
                    content: fp.content.clone(),
                    outside_block: fp.outside_block.clone(),
                },
            ));
        }
        fp
    }

    /// Writes the entries of this call's paths, when they differ from what was read. Best
    /// effort: a cache that cannot be written only means the next call reads the files again.
    pub fn save(self) {
        let Some(file) = self.file else {
            return;
        };
        let Cache {
            top,
            data,
            old,
            new,
            ..
        } = self;
        let mut rows: Vec<(&[u8], View<'_>)> = new
            .iter()
            .map(|slot| match slot {
                Slot::Old(i) => (old[*i].path(&data), old[*i].view(&data)),
                Slot::New(path, e) => (path.as_bytes(), e.view()),
            })
            .collect();
        // Sorted, each path once (the last answer for a path asked twice).
        rows.reverse();
        rows.sort_by(|a, b| a.0.cmp(b.0));
        rows.dedup_by(|later, first| later.0 == first.0);
        let unchanged = rows.len() == old.len()
            && rows
                .iter()
                .zip(&old)
                .all(|((path, e), o)| *path == o.path(&data) && *e == o.view(&data));
        if !unchanged && write_file(&file, &encode(&top, &rows), MAX_CACHE_BYTES).is_some() {
            // The JSON cache an earlier build kept for this work tree is never read again.
            let _ = std::fs::remove_file(file.with_extension("json"));
        }
        drop(rows);
        if LEAVE_TO_EXIT.load(std::sync::atomic::Ordering::Relaxed) {
            std::mem::forget((data, old, new));
        }
    }
}

/// The cache file's bytes for `rows` (sorted by path) of the work tree at `top`.
fn encode(top: &Path, rows: &[(&[u8], View<'_>)]) -> Vec<u8> {
    fn bytes(out: &mut Vec<u8>, b: &[u8]) {
        out.extend_from_slice(&u32::try_from(b.len()).unwrap_or(u32::MAX).to_le_bytes());
        out.extend_from_slice(b);
    }
    fn opt(out: &mut Vec<u8>, s: Option<&[u8]>) {
        match s {
            None => out.push(0),
            Some(s) => {
                out.push(1);
                bytes(out, s);
            }
        }
    }
    let mut out = Vec::with_capacity(64 + rows.len() * 128);
    out.extend_from_slice(MAGIC);
    bytes(&mut out, FORMAT.as_bytes());
    bytes(&mut out, top.as_os_str().as_encoded_bytes());
    out.extend_from_slice(&u32::try_from(rows.len()).unwrap_or(u32::MAX).to_le_bytes());
    for (path, e) in rows {
        let Stat(mode, size, ms, mns, cs, cns, ino, dev) = e.stat;
        bytes(&mut out, path);
        out.extend_from_slice(&mode.to_le_bytes());
        out.extend_from_slice(&size.to_le_bytes());
        for t in [ms, mns, cs, cns] {
            out.extend_from_slice(&t.to_le_bytes());
        }
        out.extend_from_slice(&ino.to_le_bytes());
        out.extend_from_slice(&dev.to_le_bytes());
        opt(&mut out, e.content);
        opt(&mut out, e.outside_block);
    }
    out
}

/// A cache file's bytes `data` read forwards from `at`, each read `None` past the end: the
/// decoder of this cache and of the directory cache (`crate::git::dircache`).
pub(crate) struct Reader<'a> {
    /// The whole file.
    pub data: &'a [u8],
    /// Where the next read starts.
    pub at: usize,
}
impl<'a> Reader<'a> {
    /// Opens a cache file's bytes `data`: they start with `magic`, name this build's `format`
    /// and the work tree `top`, and give a row count of at most `max`. The reader is left at
    /// the first row; `None` for a file that is anything else.
    pub(crate) fn open(
        data: &'a [u8],
        magic: &[u8],
        format: &str,
        top: &Path,
        max: usize,
    ) -> Option<(Self, usize)> {
        let rest = data.strip_prefix(magic)?;
        let mut r = Reader {
            data,
            at: data.len() - rest.len(),
        };
        let stored_format = r.bytes()?;
        let stored_top = r.bytes()?;
        if r.slice(stored_format) != format.as_bytes()
            || r.slice(stored_top) != top.as_os_str().as_encoded_bytes()
        {
            return None;
        }
        let count = r.u32()?;
        (count <= max).then_some((r, count))
    }
    pub(crate) fn span(&mut self, n: usize) -> Option<Span> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&end| end <= self.data.len())?;
        let span = (self.at, end);
        self.at = end;
        Some(span)
    }
    pub(crate) fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        let (a, b) = self.span(N)?;
        self.data[a..b].try_into().ok()
    }
    pub(crate) fn bytes(&mut self) -> Option<Span> {
        let n = u32::from_le_bytes(self.array()?);
        self.span(usize::try_from(n).ok()?)
    }
    pub(crate) fn opt(&mut self) -> Option<Option<Span>> {
        match self.array::<1>()? {
            [0] => Some(None),
            [1] => self.bytes().map(Some),
            _ => None,
        }
    }
    pub(crate) fn slice(&self, (a, b): Span) -> &[u8] {
        &self.data[a..b]
    }
    /// A little-endian `u32`, as a `usize`.
    pub(crate) fn u32(&mut self) -> Option<usize> {
        usize::try_from(u32::from_le_bytes(self.array()?)).ok()
    }
    /// A little-endian `i64`.
    pub(crate) fn i64(&mut self) -> Option<i64> {
        Some(i64::from_le_bytes(self.array()?))
    }
    /// A little-endian `u64`.
    pub(crate) fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.array()?))
    }
}

/// The entries of a cache file's bytes `data`, as spans of it, for the work tree at `top`;
/// `None` when the file is not one this build wrote for `top` whole (rows out of order
/// included). A path or fingerprint that is not UTF-8 is only checked when used
/// ([`fingerprints`]): such a path matches no file, such an entry is not used.
fn decode(data: &[u8], top: &Path) -> Option<Vec<Stored>> {
    let (mut r, count) = Reader::open(data, MAGIC, FORMAT, top, MAX_ENTRIES)?;
    let mut rows: Vec<Stored> = Vec::with_capacity(count);
    for _ in 0..count {
        let path = r.bytes()?;
        if rows
            .last()
            .is_some_and(|last| last.path(data) >= r.slice(path))
        {
            return None;
        }
        let stat = Stat(
            u32::from_le_bytes(r.array()?),
            u64::from_le_bytes(r.array()?),
            i64::from_le_bytes(r.array()?),
            i64::from_le_bytes(r.array()?),
            i64::from_le_bytes(r.array()?),
            i64::from_le_bytes(r.array()?),
            u64::from_le_bytes(r.array()?),
            u64::from_le_bytes(r.array()?),
        );
        let content = r.opt()?;
        let outside_block = r.opt()?;
        rows.push(Stored {
            path,
            stat,
            content,
            outside_block,
        });
    }
    (r.at == data.len()).then_some(rows)
}

/// The fingerprints an entry read holds, or `None` when one is not UTF-8.
fn fingerprints(view: View<'_>) -> Option<Fingerprints> {
    let text = |b: Option<&[u8]>| match b {
        None => Some(None),
        Some(b) => std::str::from_utf8(b).ok().map(|s| Some(s.to_owned())),
    };
    Some(Fingerprints {
        content: text(view.content)?,
        outside_block: text(view.outside_block)?,
    })
}

/// Writes a per-user cache file (`bytes`, at most `limit` of them; a larger one removes the
/// file instead) in a directory of mode 0700 made when missing, without `fsync`: a cache is
/// checked before use. `None` when it could not be written.
pub(crate) fn write_file(file: &Path, bytes: &[u8], limit: u64) -> Option<()> {
    if bytes.len() as u64 > limit {
        let _ = std::fs::remove_file(file);
        return None;
    }
    let dir = file.parent()?;
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir).ok()?;
    // A cache, checked against each file's stat data before use: no fsync needed.
    let guard = WriteGuard::new(dir).ok()?;
    guard
        .write_volatile(file, bytes, Named::ByUs, Links::Replace)
        .ok()
        .map(drop)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};

    fn set_times(path: &Path, secs_ago: u64) {
        let t = SystemTime::now() - Duration::from_secs(secs_ago);
        let f = std::fs::File::options().write(true).open(path).unwrap();
        f.set_modified(t).unwrap();
    }

    #[test]
    fn racy_rule_uses_whole_seconds() {
        let now = SystemTime::UNIX_EPOCH + Duration::new(100, 500);
        let s = |m: i64, c: i64| Stat(0, 0, m, 999_999_999, c, 999_999_999, 0, 0);
        assert!(!s(97, 97).racy(now));
        // A coarse file-system clock, or 2-second times: the two seconds before are racy too.
        assert!(s(98, 1).racy(now));
        assert!(s(1, 99).racy(now));
        assert!(s(100, 1).racy(now));
        assert!(s(1, 100).racy(now));
        assert!(s(200, 1).racy(now));
    }

    #[test]
    fn an_entry_is_used_only_with_the_same_stat_data() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a.txt");
        std::fs::write(&f, "one").unwrap();
        set_times(&f, 10);
        let mut cache = Cache {
            file: Some(dir.path().join("cache.bin")),
            top: dir.path().to_path_buf(),
            data: Vec::new(),
            old: Vec::new(),
            new: Vec::new(),
            hits: 0,
        };
        let first = cache.of_path("a.txt", &f);
        assert_eq!(first, super::super::of_path(&f));
        // The change time is now, so the entry is racy and not recorded yet.
        assert!(cache.new.is_empty());
        // An entry with the file's stat data but other content is believed (that is the
        // cache's contract) ...
        let stat = Stat::of(&std::fs::symlink_metadata(&f).unwrap()).unwrap();
        let cached = Entry {
            stat,
            content: Some("cached".into()),
            outside_block: None,
        };
        cache.data = encode(dir.path(), &[(b"a.txt", cached.view())]);
        cache.old = decode(&cache.data, dir.path()).unwrap();
        assert_eq!(
            cache.of_path("a.txt", &f).content.as_deref(),
            Some("cached")
        );
        assert_eq!(cache.hits, 1);
        // ... and dropped once the file is rewritten with the same size and times: the change
        // time moved.
        std::thread::sleep(Duration::from_millis(20));
        std::fs::write(&f, "two").unwrap();
        set_times(&f, 10);
        assert_eq!(cache.of_path("a.txt", &f), super::super::of_path(&f));
        assert_eq!(cache.hits, 1);
    }

    #[test]
    fn the_file_round_trips_and_anything_else_reads_as_absent() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path();
        let e = |n: u64, content: Option<&str>, outside: Option<&str>| Entry {
            stat: Stat(0o100644, n, -1, 2, i64::MAX, 4, u64::MAX, 6),
            content: content.map(String::from),
            outside_block: outside.map(String::from),
        };
        let a = e(1, Some("0123456789abcdef"), None);
        let b = e(2, None, Some("fedcba9876543210"));
        let c = e(3, Some("link:00000000000000ff"), Some(""));
        let rows: [(&[u8], View<'_>); 3] = [
            ("a b/é.txt".as_bytes(), a.view()),
            (b"b", b.view()),
            (b"c/d", c.view()),
        ];
        let bytes = encode(top, &rows);
        let back = decode(&bytes, top).unwrap();
        let again: Vec<(&[u8], View<'_>)> = back
            .iter()
            .map(|e| (e.path(&bytes), e.view(&bytes)))
            .collect();
        assert_eq!(again, rows);
        assert_eq!(
            fingerprints(again[0].1).unwrap().content.as_deref(),
            a.content.as_deref()
        );
        assert!(decode(&encode(top, &[]), top).is_some_and(|rows| rows.is_empty()));
        // A fingerprint that is not UTF-8 is not used.
        let mut bad = c.view();
        bad.content = Some(b"\xff");
        assert_eq!(fingerprints(bad), None);
        // Another work tree, a torn or extended file, another format, unsorted rows, JSON.
        assert!(decode(&bytes, &top.join("x")).is_none());
        for n in 0..bytes.len() {
            assert!(decode(&bytes[..n], top).is_none(), "cut at {n}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode(&longer, top).is_none());
        let other = String::from_utf8_lossy(&bytes).replace(FORMAT, "1/0.0.0");
        assert!(decode(other.as_bytes(), top).is_none());
        assert!(decode(&encode(top, &[(b"b", b.view()), (b"a", a.view())]), top).is_none());
        assert!(decode(&encode(top, &[(b"a", a.view()), (b"a", a.view())]), top).is_none());
        assert!(decode(br#"{"format":"1/0.3.0","top":"/","entries":[]}"#, top).is_none());
    }

    #[test]
    fn save_writes_only_what_changed_sorted() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path().join("tree");
        std::fs::create_dir(&top).unwrap();
        for name in ["b.txt", "a.txt"] {
            std::fs::write(top.join(name), name).unwrap();
            set_times(&top.join(name), 10);
        }
        // Change times are now: wait until they are no longer racy.
        std::thread::sleep(Duration::from_millis(3100));
        let file = dir.path().join("cache.bin");
        let open = || {
            let data = std::fs::read(&file).unwrap_or_default();
            let old = decode(&data, &top).unwrap_or_default();
            Cache {
                file: Some(file.clone()),
                top: top.clone(),
                data,
                old,
                new: Vec::new(),
                hits: 0,
            }
        };
        // An earlier build's JSON cache beside it goes at the first write.
        let json = dir.path().join("cache.json");
        std::fs::write(&json, "{}").unwrap();
        let mut cache = open();
        for name in ["b.txt", "a.txt"] {
            cache.of_path(name, &top.join(name));
        }
        cache.save();
        assert!(!json.exists());
        let bytes = std::fs::read(&file).unwrap();
        let stored = decode(&bytes, &top).unwrap();
        let paths: Vec<&[u8]> = stored.iter().map(|e| e.path(&bytes)).collect();
        assert_eq!(paths, [b"a.txt", b"b.txt"]);
        let written = std::fs::metadata(&file).unwrap().modified().unwrap();
        std::thread::sleep(Duration::from_millis(20));
        // The same answers: all hits, nothing written.
        let mut cache = open();
        for name in ["a.txt", "b.txt"] {
            cache.of_path(name, &top.join(name));
        }
        assert_eq!(cache.hits, 2);
        cache.save();
        assert_eq!(
            std::fs::metadata(&file).unwrap().modified().unwrap(),
            written
        );
        // One path fewer: written again, without it.
        let mut cache = open();
        cache.of_path("b.txt", &top.join("b.txt"));
        assert_eq!(cache.hits, 1);
        cache.save();
        let bytes = std::fs::read(&file).unwrap();
        let stored = decode(&bytes, &top).unwrap();
        assert_eq!(stored.len(), 1);
        assert_eq!(stored[0].path(&bytes), b"b.txt");
    }
}
