//! A cache of content fingerprints keyed on `lstat` data, so that `status`, `checkpoint` and
//! `export` read only the changed files whose stat data moved since the last call (issue 10,
//! item 1).
//!
//! One file per work tree, in `$XDG_RUNTIME_DIR/pas-agent/fingerprints/` (or the cache
//! directory [`crate::cmd::stamp_dir`] falls back to), named after a hash of the work tree's
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

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::Fingerprints;
use crate::fsutil::{self, Links, Named, WriteGuard};

/// Most entries kept: fingerprints of more changed files than this are computed every time
/// beyond the first `MAX_ENTRIES`.
pub const MAX_ENTRIES: usize = 20_000;
/// Largest cache file read or written (8 MiB); a larger one is ignored (and not written).
pub const MAX_CACHE_BYTES: u64 = 8 * 1024 * 1024;

/// Bumped when the stored shape or the meaning of a fingerprint changes; with the binary's
/// version, so that a cache written by another build is never trusted.
const FORMAT: &str = concat!("1/", env!("CARGO_PKG_VERSION"));

/// The `lstat` data an entry is keyed on: kind and permission bits (`st_mode`), size,
/// modification time (seconds since the epoch, nanoseconds), change time (the same), inode,
/// device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Entry {
    stat: Stat,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    content: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    outside_block: Option<String>,
}

/// The file: rows (`[path, stat, content, outside]`) rather than objects, which parse
/// several times faster.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Stored {
    format: String,
    /// The work tree the entries' paths are relative to.
    top: PathBuf,
    entries: Vec<Row>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Row(String, Stat, Option<String>, Option<String>);

/// The fingerprints of one work tree's changed files, as read from the cache and as computed
/// by this call. Build with [`Cache::open`], ask with [`Cache::of_path`], finish with
/// [`Cache::save`].
#[derive(Debug)]
pub struct Cache {
    file: Option<PathBuf>,
    top: PathBuf,
    old: BTreeMap<String, Entry>,
    new: BTreeMap<String, Entry>,
    /// Whether `new` differs from `old` (a write is needed).
    changed: bool,
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
    let dir = crate::cmd::stamp_dir()?.parent()?.join("fingerprints");
    let key = super::hex(top.as_os_str().as_encoded_bytes());
    Some(dir.join(format!("{key}.json")))
}

impl Cache {
    /// The cache of the work tree at `top` (an absolute, canonical path); empty when there is
    /// none, it cannot be read, was written by another build or for another path, or the
    /// cache is turned off.
    pub fn open(top: &Path) -> Cache {
        let file = if disabled() { None } else { file_for(top) };
        let old = file
            .as_deref()
            .and_then(|f| fsutil::read_limited(f, MAX_CACHE_BYTES).ok().flatten())
            .and_then(|bytes| serde_json::from_slice::<Stored>(&bytes).ok())
            .filter(|s| s.format == FORMAT && s.top == top)
            .map(|s| {
                s.entries
                    .into_iter()
                    .map(|Row(path, stat, content, outside_block)| {
                        let entry = Entry {
                            stat,
                            content,
                            outside_block,
                        };
                        (path, entry)
                    })
                    .collect()
            })
            .unwrap_or_default();
        Cache {
            file,
            top: top.to_path_buf(),
            old,
            new: BTreeMap::new(),
            changed: false,
            hits: 0,
        }
    }

    /// The fingerprints of the file at `abs`, recorded as `path`: from the cache when its stat
    /// data is the recorded one, else computed (and recorded when not racy).
    pub fn of_path(&mut self, path: &str, abs: &Path) -> Fingerprints {
        let meta = std::fs::symlink_metadata(abs).ok();
        let stat = meta.as_ref().and_then(Stat::of);
        if let Some(stat) = stat
            && let Some(e) = self.old.get(path).filter(|e| e.stat == stat)
        {
            self.hits += 1;
            let fp = Fingerprints {
                content: e.content.clone(),
                outside_block: e.outside_block.clone(),
            };
            if self.new.len() < MAX_ENTRIES {
                self.new.insert(path.to_owned(), e.clone());
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
            && self.new.len() < MAX_ENTRIES
        {
            self.new.insert(
                path.to_owned(),
                Entry {
                    stat,
                    content: fp.content.clone(),
                    outside_block: fp.outside_block.clone(),
                },
            );
        }
        fp
    }

    /// Writes the entries of this call's paths, when they differ from what was read. Best
    /// effort: a cache that cannot be written only means the next call reads the files again.
    pub fn save(mut self) {
        self.changed |= self.new != self.old;
        if !self.changed {
            return;
        }
        let Some(file) = self.file.take() else {
            return;
        };
        let stored = Stored {
            format: FORMAT.to_owned(),
            top: self.top,
            entries: self
                .new
                .into_iter()
                .map(|(path, e)| Row(path, e.stat, e.content, e.outside_block))
                .collect(),
        };
        let _ = write(&file, &stored);
    }
}

fn write(file: &Path, stored: &Stored) -> Option<()> {
    let dir = file.parent()?;
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir).ok()?;
    let bytes = serde_json::to_vec(stored).ok()?;
    if bytes.len() as u64 > MAX_CACHE_BYTES {
        let _ = std::fs::remove_file(file);
        return None;
    }
    // A cache, checked against each file's stat data before use: no fsync needed.
    let guard = WriteGuard::new(dir).ok()?;
    guard
        .write_volatile(file, &bytes, Named::ByUs, Links::Replace)
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
            file: Some(dir.path().join("cache.json")),
            top: dir.path().to_path_buf(),
            old: BTreeMap::new(),
            new: BTreeMap::new(),
            changed: false,
            hits: 0,
        };
        let first = cache.of_path("a.txt", &f);
        assert_eq!(first, super::super::of_path(&f));
        // The change time is now, so the entry is racy and not recorded yet.
        assert!(cache.new.is_empty());
        // An entry with the file's stat data but other content is believed (that is the
        // cache's contract) ...
        let stat = Stat::of(&std::fs::symlink_metadata(&f).unwrap()).unwrap();
        cache.old.insert(
            "a.txt".into(),
            Entry {
                stat,
                content: Some("cached".into()),
                outside_block: None,
            },
        );
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
}
