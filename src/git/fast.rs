//! The index → work tree half of `status`, without gix's per-path machinery (docs/performance.md).
//!
//! When the index's cache-tree proves that HEAD → index has nothing to report (see
//! `cache_tree_matches` in `native.rs`), what is left of a status is: compare every index entry
//! with the file on disk, and list the untracked files. gix answers both, but pays for things
//! this one question does not need: an absolute path per entry (every lookup walks the whole
//! directory chain in the kernel again), a leading-directory symlink check kept as a path stack,
//! a pathspec and attribute stack per entry, and a second, separate walk of every directory for
//! the untracked files. Here the index is shared between threads the way git's `preload-index`
//! shares it (500 entries a thread at least), each directory is opened once (one component at
//! a time with `O_NOFOLLOW`, so a directory replaced by a symbolic link is never followed), its
//! tracked files are looked up by name relative to it, and the thread that holds the first
//! entry below a directory also reads that directory for the untracked files, with the same
//! descriptor.
//!
//! Every decision uses gix's own rules and primitives, so the answer is gix's answer:
//! - tracked files: `Stat::matches` and `Stat::is_racy` with the repository's `stat_options()`,
//!   `Mode::change_to_match_fs_with_values` with its `filesystem_options()`, and the size test
//!   of gix-status' `FastEq` (a size other than the one the index recorded is a modification,
//!   unless the index zeroed it for a racily clean entry);
//! - untracked paths: gix-dir's classification — a name the index has (as a file, or as a
//!   directory of entries) is tracked; any other is checked against the ignore rules through
//!   gix's own exclude stack (`Repository::excludes`, the sources gix's status uses); an
//!   untracked directory that is not ignored is a nested repository (`dir/`) when its `.git`
//!   is one (`gix::discover::is_git`, and not this repository's own), else it is read in turn;
//!   `.git` is never listed; only files and symbolic links are reported.
//!
//! An entry that only a look at its content can settle — stat data moved but the size did not,
//! or a racily clean entry — and anything unusual (a submodule, an error other than "not
//! there", a path git would never write, a case-insensitive repository, a directory nested
//! deeper than [`MAX_DEPTH`]) makes the pass give up, and the caller runs gix's full status
//! instead: the fast path is only ever taken where its answer cannot differ.
//!
//! Facts from gix 0.90, gix-status 0.37 (`index_as_worktree::function::State::compute_status`,
//! `traits::FastEq`), gix-dir 0.32 (`walk::classify::path`) and git 2.47 (`preload-index.c`).

use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use gix::bstr::{BStr, ByteSlice};
use gix::index::entry::{Flags, Stat, stat};
use rustix::fs::{AtFlags, FileType, OFlags};
use rustix::io::Errno;

use super::dircache::{ChildrenHash, DirCache, DirStat, Row, Used};

/// What the entry pass found for one index entry that changed in the work tree: its index
/// position and git's Y letter (`M` modified, `D` deleted, `T` type changed).
pub(super) type Change = (usize, char);

/// What the pass found, unsorted: the changed entries, and the untracked paths (nested
/// repositories as `dir/`); and what it did with the directory cache.
#[derive(Default)]
pub(super) struct Found {
    pub changes: Vec<Change>,
    pub untracked: Vec<Vec<u8>>,
    pub cache: Used,
}

/// Why the fast pass gave up, in a few words: the caller runs gix's full status instead.
#[derive(Debug)]
pub(super) struct GiveUp(pub &'static str);

/// Fewest entries worth a thread of their own (git's `preload-index.c` uses 500).
const ENTRIES_PER_THREAD: usize = 500;
/// Most threads the entry pass uses.
const MAX_THREADS: usize = 8;
/// Deepest untracked directory the pass reads (a deeper one is left to gix).
pub(super) const MAX_DEPTH: usize = 256;
/// Entries a thread takes at a time.
const CHUNK: usize = 256;
/// Bytes of directory entries read at a time.
const DIR_BUFFER: usize = 32 * 1024;

/// The repository's settings the comparison needs, read once.
#[derive(Clone, Copy)]
pub(super) struct Rules {
    pub stat: stat::Options,
    pub symlinks: bool,
    pub executable_bit: bool,
}

/// What the untracked side needs from the repository: a handle each thread can open, and the
/// real path of the repository's own directory (a nested `.git` that resolves to it is not a
/// nested repository, as gix-dir decides).
pub(super) struct Shared<'a> {
    pub repo: &'a gix::ThreadSafeRepository,
    pub git_dir_realpath: &'a Path,
    /// For a dirty check only: the session root's prefix (`/`-terminated, "" for the top).
    /// The pass then ends at the first change below it (outside `.pas-agent/`).
    pub first_change_below: Option<&'a [u8]>,
    /// What each directory held that the index does not, as last read (`dircache.rs`).
    pub cache: &'a DirCache,
}

/// Compares every index entry with the work tree at `workdir` and lists the untracked paths.
///
/// Errors: [`GiveUp`] when an entry needs more than its stat data to decide, or anything else
/// the module documentation lists, or the work tree cannot be read as expected.
pub(super) fn status(
    workdir: &Path,
    index: &gix::index::State,
    rules: Rules,
    shared: &Shared<'_>,
) -> Result<Found, GiveUp> {
    let stop = AtomicBool::new(false);
    let stop = &stop;
    let enough = AtomicBool::new(false);
    let enough = &enough;
    let root = rustix::fs::open(
        workdir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .map_err(|_| GiveUp("the work tree cannot be opened"))?;
    let all = index.entries();
    // gix's exclude stack takes a `.gitignore` from the index only for entries marked
    // skip-worktree (gix-worktree 0.59, `State::id_mappings_from_index`), and finds them by
    // looking at every entry's name, once per thread. Without such entries an empty index gives
    // the same rules for nothing.
    let no_entries = gix::index::State::new(index.object_hash());
    let ignore_index = if all.iter().any(|e| e.flags.contains(Flags::SKIP_WORKTREE)) {
        index
    } else {
        &no_entries
    };
    let threads = threads_for(all.len());
    // Threads take chunks of entries in order from a shared counter, so that the one that also
    // started the process's other work does less of it.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let next = &next;
    let pass = || {
        // A handle of this thread's own, made only if an untracked name must be checked
        // against the ignore rules.
        let repo = std::cell::OnceCell::new();
        let result = Pass {
            root: root.as_fd(),
            workdir,
            index,
            ignore_index,
            rules,
            dirs: Vec::new(),
            dir: Vec::new(),
            dir_state: DirState::Root,
            repo: &repo,
            shared: shared.repo,
            git_dir_realpath: shared.git_dir_realpath,
            excludes: None,
            buf: Vec::new(),
            children: Children::default(),
            found: Found::default(),
            first_change_below: shared.first_change_below,
            enough,
            cache: shared.cache,
        }
        .run(all, next, stop);
        if result.is_err() {
            stop.store(true, Ordering::Relaxed);
        }
        result
    };
    // This thread and `threads - 1` helpers.
    let parts: Vec<Result<Found, GiveUp>> = std::thread::scope(|s| {
        let helpers: Vec<_> = (1..threads)
            .map(|_| {
                std::thread::Builder::new()
                    .name("pas-agent-status".into())
                    .spawn_scoped(s, pass)
            })
            .collect();
        let mut parts = vec![pass()];
        for h in helpers {
            parts.push(match h {
                Ok(h) => h.join().unwrap_or(Err(GiveUp("a thread failed"))),
                Err(_) => Err(GiveUp("no thread")),
            });
        }
        parts
    });
    let mut out = Found::default();
    for part in parts {
        let part = part?;
        out.changes.extend(part.changes);
        out.untracked.extend(part.untracked);
        out.cache.kept.extend(part.cache.kept);
        out.cache.read.extend(part.cache.read);
    }
    Ok(out)
}

/// How many threads share `entries` index entries.
fn threads_for(entries: usize) -> usize {
    // The CPUs this process may run on: one system call, where std's `available_parallelism`
    // also reads three cgroup files (a tenth of a small repository's status).
    let cpus = rustix::thread::sched_getaffinity(None).map_or(1, |set| set.count() as usize);
    (entries / ENTRIES_PER_THREAD).clamp(1, cpus.clamp(1, MAX_THREADS))
}

/// Whether the directory of the entries being compared is open, gone, or the root.
enum DirState {
    /// The entries are at the top of the work tree.
    Root,
    /// `dirs.last()` is the directory.
    Open,
    /// The directory is missing, is a file, or is a symbolic link: its entries are deleted.
    Gone,
}

/// One thread's share of the entries.
struct Pass<'a> {
    root: BorrowedFd<'a>,
    workdir: &'a Path,
    index: &'a gix::index::State,
    /// The index gix's exclude stack is made from: `index`, or an empty one when no entry is
    /// skip-worktree (the only entries the stack reads from it).
    ignore_index: &'a gix::index::State,
    rules: Rules,
    /// The open directories of the current path, one per component, outermost first.
    dirs: Vec<OwnedFd>,
    /// The current directory's path, `/`-separated, without a trailing `/`.
    dir: Vec<u8>,
    dir_state: DirState,
    repo: &'a std::cell::OnceCell<gix::Repository>,
    shared: &'a gix::ThreadSafeRepository,
    git_dir_realpath: &'a Path,
    /// gix's exclude stack, made when the first untracked name is seen.
    excludes: Option<gix::AttributeStack<'a>>,
    /// Directory entries as read.
    buf: Vec<MaybeUninit<u8>>,
    /// The children of the directory being read, kept for the next one.
    children: Children<'a>,
    found: Found,
    first_change_below: Option<&'a [u8]>,
    /// Set once a dirty check has its answer: every thread stops.
    enough: &'a AtomicBool,
    cache: &'a DirCache,
}

impl<'a> Pass<'a> {
    fn run(
        mut self,
        all: &[gix::index::Entry],
        next: &std::sync::atomic::AtomicUsize,
        stop: &AtomicBool,
    ) -> Result<Found, GiveUp> {
        if all.is_empty() {
            self.read_dir(self.root, &[], 0..0, 0)?;
        }
        loop {
            let start = next.fetch_add(CHUNK, Ordering::Relaxed);
            if start >= all.len() || self.enough.load(Ordering::Relaxed) {
                break;
            }
            if start == 0 {
                // Whoever takes the first chunk reads the top of the work tree.
                self.read_dir(self.root, &[], 0..all.len(), 0)?;
            }
            self.chunk(all, start..(start + CHUNK).min(all.len()), stop)?;
        }
        Ok(self.found)
    }

    /// Compares the entries of `range`.
    fn chunk(
        &mut self,
        all: &[gix::index::Entry],
        range: std::ops::Range<usize>,
        stop: &AtomicBool,
    ) -> Result<(), GiveUp> {
        for i in range {
            if self.enough.load(Ordering::Relaxed) {
                return Ok(());
            }
            if i % 64 == 0 && stop.load(Ordering::Relaxed) {
                return Err(GiveUp("another thread gave up"));
            }
            let entry = &all[i];
            // As gix-status: entries git marks as not to be looked at count as unchanged. Their
            // directory is still entered: when such an entry is a directory's first, this
            // share is the one that reads the directory for untracked names.
            if entry.flags.intersects(
                Flags::UPTODATE
                    | Flags::SKIP_WORKTREE
                    | Flags::ASSUME_VALID
                    | Flags::FSMONITOR_VALID,
            ) {
                let path = entry.path_in(self.index.path_backing());
                let dir = last_slash(path).map_or(&path[..0], |k| &path[..k]);
                self.enter(i, dir)?;
                continue;
            }
            if entry.stage_raw() != 0 || entry.flags.contains(Flags::INTENT_TO_ADD) {
                return Err(GiveUp("an unmerged or intent-to-add entry"));
            }
            if entry.mode.is_submodule() {
                return Err(GiveUp("a submodule"));
            }
            let path = entry.path_in(self.index.path_backing());
            if let Some(letter) = self.compare(i, entry, path)? {
                self.found.changes.push((i, letter));
                self.note_change(path);
            }
        }
        Ok(())
    }

    /// The Y letter of one entry, `None` when it is unchanged.
    fn compare(
        &mut self,
        i: usize,
        entry: &gix::index::Entry,
        path: &BStr,
    ) -> Result<Option<char>, GiveUp> {
        let (dir, name) = match last_slash(path) {
            Some(i) => (&path[..i], &path[i + 1..]),
            None => (&path[..0], path),
        };
        if !sane(name) {
            return Err(GiveUp("a path git would not write"));
        }
        self.enter(i, dir)?;
        let at = match self.dir_state {
            DirState::Gone => return Ok(Some('D')),
            DirState::Root => self.root,
            DirState::Open => match self.dirs.last() {
                Some(fd) => fd.as_fd(),
                None => return Err(GiveUp("no open directory")),
            },
        };
        let st = match rustix::fs::statat(at, name.as_bytes(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => st,
            Err(Errno::NOENT | Errno::NOTDIR) => return Ok(Some('D')),
            Err(_) => return Err(GiveUp("a file cannot be looked at")),
        };
        let kind = FileType::from_raw_mode(st.st_mode);
        if kind == FileType::Directory {
            // A file that became a directory was removed (submodules gave up above).
            return Ok(Some('D'));
        }
        let is_file = kind == FileType::RegularFile;
        let is_symlink = kind == FileType::Symlink;
        let is_executable = is_file && st.st_mode & 0o100 != 0;
        let executable_bit_changed = match entry.mode.change_to_match_fs_with_values(
            is_file,
            false,
            is_symlink,
            is_executable,
            self.rules.symlinks,
            self.rules.executable_bit,
        ) {
            Some(gix::index::entry::mode::Change::Type { .. }) => return Ok(Some('T')),
            Some(gix::index::entry::mode::Change::ExecutableBit) => true,
            None => false,
        };
        let size = u64::try_from(st.st_size).unwrap_or(0);
        let now = Stat {
            mtime: time(st.st_mtime, st.st_mtime_nsec),
            ctime: time(st.st_ctime, st.st_ctime_nsec),
            dev: st.st_dev as u32,
            ino: st.st_ino as u32,
            uid: st.st_uid,
            gid: st.st_gid,
            size: size as u32,
        };
        if !executable_bit_changed
            && now.matches(&entry.stat, self.rules.stat)
            && (!entry.id.is_empty_blob() || entry.stat.size == 0)
        {
            // Unchanged, unless racily clean: only the content can tell then.
            return if now.is_racy(self.index.timestamp(), self.rules.stat) {
                Err(GiveUp("a racily clean entry"))
            } else {
                Ok(None)
            };
        }
        // gix-status' `FastEq`: a size other than the recorded one is a modification.
        if u64::from(entry.stat.size) != size && (entry.id.is_empty_blob() || entry.stat.size != 0)
        {
            return Ok(Some('M'));
        }
        // An executable bit that changed is a modification whatever the content says.
        if executable_bit_changed {
            return Ok(Some('M'));
        }
        Err(GiveUp("a file's stat data moved but not its size"))
    }

    /// Makes `dir` (a `/`-separated path relative to the top, "" for the top) the current
    /// directory of entry `i`, opening what is not open yet, one component at a time without
    /// following symbolic links; a directory whose first entry is `i` is read for untracked
    /// names as it is opened.
    fn enter(&mut self, i: usize, dir: &BStr) -> Result<(), GiveUp> {
        if dir.as_bytes() == self.dir.as_slice() && !matches!(self.dir_state, DirState::Root) {
            return Ok(());
        }
        if dir.is_empty() {
            self.dirs.clear();
            self.dir.clear();
            self.dir_state = DirState::Root;
            return Ok(());
        }
        let components: Vec<&[u8]> = dir.split(|&b| b == b'/').collect();
        if !components.iter().all(|c| sane(c.as_bstr())) {
            return Err(GiveUp("a path git would not write"));
        }
        // Keep the open directories the new path shares with the current one.
        let current: Vec<&[u8]> = if self.dir.is_empty() {
            Vec::new()
        } else {
            self.dir.split(|&b| b == b'/').collect()
        };
        let shared = match self.dir_state {
            DirState::Open => current
                .iter()
                .zip(&components)
                .take_while(|(a, b)| a == b)
                .count()
                .min(self.dirs.len()),
            DirState::Root | DirState::Gone => 0,
        };
        self.dirs.truncate(shared);
        self.dir_state = DirState::Open;
        for (depth, component) in components.iter().enumerate().skip(shared) {
            let parent = match self.dirs.last() {
                Some(fd) => fd.as_fd(),
                None => self.root,
            };
            match open_dir(parent, component) {
                Ok(fd) => {
                    // The first entry below this directory: this share reads it.
                    let prefix = &dir[..components[..=depth]
                        .iter()
                        .map(|c| c.len() + 1)
                        .sum::<usize>()
                        - 1];
                    if self.first_below(i, prefix) {
                        let below = i..entries_below(self.index, i, prefix);
                        self.read_dir(fd.as_fd(), prefix, below, 0)?;
                    }
                    self.dirs.push(fd);
                }
                // Missing, a file, or a symbolic link (O_NOFOLLOW | O_DIRECTORY): gix's path
                // check calls the entries below it removed.
                Err(Errno::NOENT | Errno::NOTDIR | Errno::LOOP) => {
                    self.dirs.clear();
                    self.dir_state = DirState::Gone;
                    break;
                }
                Err(_) => return Err(GiveUp("a directory cannot be opened")),
            }
        }
        self.dir.clear();
        self.dir.extend_from_slice(dir.as_bytes());
        Ok(())
    }

    /// Whether entry `i` is the first index entry below the directory `prefix`.
    fn first_below(&self, i: usize, prefix: &[u8]) -> bool {
        let Some(before) = i.checked_sub(1).and_then(|j| self.index.entries().get(j)) else {
            return true;
        };
        let path = before.path(self.index);
        !(path.len() > prefix.len() && path.starts_with(prefix) && path[prefix.len()] == b'/')
    }

    /// Reads the directory open as `fd` (`prefix` from the top, empty for the top) and records
    /// its untracked names; `below` is the range of index entries below it, `depth` counts
    /// untracked directories above it.
    ///
    /// Each name is looked up among the directory's children in the index (its files, and the
    /// directories that hold entries) in a small hash table made for the directory, instead of
    /// a binary search of the index per name: a name is tracked when the index has a file of
    /// that name and the name is not a directory, or has entries below it and it is one.
    fn read_dir(
        &mut self,
        fd: BorrowedFd<'_>,
        prefix: &[u8],
        below: std::ops::Range<usize>,
        depth: usize,
    ) -> Result<(), GiveUp> {
        if depth > MAX_DEPTH {
            return Err(GiveUp("an untracked directory nested too deep"));
        }
        let mut table = std::mem::take(&mut self.children);
        table.fill(self.index, prefix, below)?;
        // The names the index does not have, as last read when the directory has not changed.
        let cache: &'a DirCache = self.cache;
        let stat = if cache.enabled() {
            DirStat::of(fd)
        } else {
            None
        };
        if let Some(at) = stat.and_then(|stat| cache.lookup(prefix, stat, table.hash)) {
            self.children = table;
            self.found.cache.kept.push(at);
            return self.untracked_names(fd, prefix, cache.names(at), depth);
        }
        table.index();
        if self.buf.is_empty() {
            self.buf.resize(DIR_BUFFER, MaybeUninit::uninit());
        }
        // First the names the index does not have (tracked ones are only looked up), then
        // what they are.
        let mut untracked: Vec<(Vec<u8>, FileType)> = Vec::new();
        let mut buf = std::mem::take(&mut self.buf);
        let mut raw = rustix::fs::RawDir::new(fd, &mut buf);
        while let Some(entry) = raw.next() {
            let entry = entry.map_err(|_| GiveUp("a directory cannot be read"))?;
            let name = entry.file_name().to_bytes();
            if name == b"." || name == b".." || name == b".git" {
                continue;
            }
            let mut kind = entry.file_type();
            if kind == FileType::Unknown {
                // The file system does not say: ask.
                kind = match rustix::fs::statat(fd, name, AtFlags::SYMLINK_NOFOLLOW) {
                    Ok(st) => FileType::from_raw_mode(st.st_mode),
                    Err(Errno::NOENT) => continue,
                    Err(_) => return Err(GiveUp("a file cannot be looked at")),
                };
            }
            if !table.has(name, kind == FileType::Directory) {
                untracked.push((name.to_vec(), kind));
            }
        }
        self.buf = buf;
        let children = table.hash;
        self.children = table;
        self.untracked_names(
            fd,
            prefix,
            untracked
                .iter()
                .map(|(name, kind)| (name.as_slice(), *kind)),
            depth,
        )?;
        if let Some(stat) = stat {
            self.found.cache.read.push(Row {
                path: prefix.to_vec(),
                stat,
                children,
                names: untracked,
            });
        }
        Ok(())
    }

    /// Records what the names of the directory open as `fd` (at `prefix`) that the index does
    /// not have are: untracked files and symbolic links unless ignored, and untracked
    /// directories ([`Pass::untracked_dir`]); anything else is not listed.
    fn untracked_names<'n>(
        &mut self,
        fd: BorrowedFd<'_>,
        prefix: &[u8],
        names: impl Iterator<Item = (&'n [u8], FileType)>,
        depth: usize,
    ) -> Result<(), GiveUp> {
        let mut path = Vec::with_capacity(prefix.len() + 64);
        for (name, kind) in names {
            if self.enough.load(Ordering::Relaxed) {
                return Ok(());
            }
            path.clear();
            if !prefix.is_empty() {
                path.extend_from_slice(prefix);
                path.push(b'/');
            }
            path.extend_from_slice(name);
            if kind == FileType::Directory {
                // No index entry is below it (else it would be a tracked directory).
                self.untracked_dir(fd, name, &path, depth + 1)?;
            } else if matches!(kind, FileType::RegularFile | FileType::Symlink)
                && !self.excluded(&path, false)?
            {
                self.note_change(&path);
                self.found.untracked.push(path.clone());
            }
        }
        Ok(())
    }

    /// For a dirty check: a change at `path` in the session's part of the tree is the answer.
    fn note_change(&self, path: &[u8]) {
        if let Some(prefix) = self.first_change_below
            && let Some(rest) = path.strip_prefix(prefix)
            && !(rest.starts_with(b".pas-agent/") || rest == b".pas-agent")
        {
            self.enough.store(true, Ordering::Relaxed);
        }
    }

    /// An untracked directory `name` in `parent`, at `path`: ignored, a nested repository, or
    /// read in turn.
    fn untracked_dir(
        &mut self,
        parent: BorrowedFd<'_>,
        name: &[u8],
        path: &[u8],
        depth: usize,
    ) -> Result<(), GiveUp> {
        if self.excluded(path, true)? {
            return Ok(());
        }
        let dot_git = {
            use std::os::unix::ffi::OsStrExt;
            self.workdir
                .join(std::ffi::OsStr::from_bytes(path))
                .join(".git")
        };
        if gix::discover::is_git(&dot_git).is_ok()
            && gix::path::realpath(&dot_git).ok().as_deref() != Some(self.git_dir_realpath)
        {
            let mut repo = path.to_vec();
            repo.push(b'/');
            self.note_change(&repo);
            self.found.untracked.push(repo);
            return Ok(());
        }
        match open_dir(parent, name) {
            Ok(fd) => self.read_dir(fd.as_fd(), path, 0..0, depth),
            Err(Errno::NOENT | Errno::NOTDIR | Errno::LOOP) => Ok(()),
            Err(_) => Err(GiveUp("a directory cannot be opened")),
        }
    }

    /// Whether gix's ignore rules exclude `path` (a directory when `is_dir`).
    fn excluded(&mut self, path: &[u8], is_dir: bool) -> Result<bool, GiveUp> {
        if self.excludes.is_none() {
            self.excludes = Some(
                self.repo
                    .get_or_init(|| self.shared.to_thread_local())
                    .excludes(
                        self.ignore_index,
                        None,
                        gix::worktree::stack::state::ignore::Source::WorktreeThenIdMappingIfNotSkipped,
                    )
                    .map_err(|_| GiveUp("the ignore rules cannot be read"))?,
            );
        }
        let Some(stack) = self.excludes.as_mut() else {
            return Err(GiveUp("the ignore rules cannot be read"));
        };
        let mode = if is_dir {
            gix::index::entry::Mode::DIR
        } else {
            gix::index::entry::Mode::FILE
        };
        stack
            .at_entry(path.as_bstr(), Some(mode))
            .map(|platform| platform.is_excluded())
            .map_err(|_| GiveUp("the ignore rules cannot be read"))
    }
}

/// The position of the last `/` in `path`: a plain loop from the end, which for a path's short
/// last component costs a tenth of a vectorised search's set-up (1,000 calls in a
/// 1,000-file status).
fn last_slash(path: &[u8]) -> Option<usize> {
    path.iter().rposition(|&b| b == b'/')
}

/// Opens the directory `name` in `parent` for reading, never through a symbolic link.
fn open_dir(parent: BorrowedFd<'_>, name: &[u8]) -> rustix::io::Result<OwnedFd> {
    rustix::fs::openat(
        parent,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
}

/// A path component git could have written: not empty, not `.` or `..`, no NUL. Anything else
/// (a hostile index) goes to gix, which refuses it.
fn sane(component: &BStr) -> bool {
    !component.is_empty() && component != "." && component != ".." && !component.contains(&0)
}

/// A file time as gix's `Stat::from_fs` keeps it: seconds truncated to 32 bits, and zero for a
/// time before 1970 or with nanoseconds out of range.
fn time(secs: impl TryInto<u64>, nsecs: impl TryInto<u32>) -> gix::index::entry::stat::Time {
    match (secs.try_into(), nsecs.try_into()) {
        (Ok(secs), Ok(nsecs)) if nsecs < 1_000_000_000u32 => gix::index::entry::stat::Time {
            secs: secs as u32, // truncated to 32 bits, as git and gix keep it
            nsecs,
        },
        _ => Default::default(),
    }
}

/// The end of the index entries below the directory `prefix` (no trailing `/`) that start at
/// entry `first`, the first of them: a galloping search, as a directory's entries are mostly
/// few and near.
fn entries_below(index: &gix::index::State, first: usize, prefix: &[u8]) -> usize {
    let entries = index.entries();
    let inside = |j: usize| {
        let path = entries[j].path(index).as_bytes();
        path.len() > prefix.len() && path.starts_with(prefix) && path[prefix.len()] == b'/'
    };
    // Entries below the directory are contiguous from `first`: find an index past them by
    // doubling steps, then the boundary by bisection.
    let mut lo = first + 1; // entries[..lo] from `first` are inside
    let mut step = 1;
    let mut hi = loop {
        let probe = first.saturating_add(step);
        if probe >= entries.len() {
            break entries.len();
        }
        if !inside(probe) {
            break probe;
        }
        lo = probe + 1;
        step *= 2;
    };
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if inside(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// A directory's children in the index — the names of its files, and of the directories that
/// hold entries — as a small open-addressing hash table, made once per directory read and
/// reused.
#[derive(Default)]
struct Children<'a> {
    /// The children: name, and whether it is a directory.
    names: Vec<(&'a [u8], bool)>,
    /// Indices into `names`, `u32::MAX` for an empty slot; a power of two long. Made by
    /// [`Children::index`], only when the directory is read.
    slots: Vec<u32>,
    /// The hash of `names`, the directory cache's key (`dircache.rs`).
    hash: u64,
}

impl<'a> Children<'a> {
    /// Collects the children of the directory `prefix` (empty for the top), whose entries are
    /// `below` (sorted, as the index is), and their hash; [`Children::index`] makes the table.
    fn fill(
        &mut self,
        index: &'a gix::index::State,
        prefix: &[u8],
        below: std::ops::Range<usize>,
    ) -> Result<(), GiveUp> {
        self.names.clear();
        self.slots.clear();
        let mut hash = ChildrenHash::default();
        let entries = index.entries();
        let skip = if prefix.is_empty() {
            0
        } else {
            prefix.len() + 1
        };
        let mut j = below.start;
        while j < below.end {
            let path = entries[j].path(index).as_bytes();
            let Some(rel) = path.get(skip..) else {
                return Err(GiveUp("an index entry out of place"));
            };
            match rel.find_byte(b'/') {
                Some(k) => {
                    // A directory: its entries are contiguous (the index sorts by bytes, so
                    // `a/…` stays together even with `a.txt` or `a-b/…` around it).
                    let dir = &path[..skip + k + 1];
                    self.names.push((&rel[..k], true));
                    hash.add(&rel[..k], true);
                    j += 1 + entries[j + 1..below.end]
                        .partition_point(|e| e.path(index).as_bytes().starts_with(dir));
                }
                None => {
                    self.names.push((rel, false));
                    hash.add(rel, false);
                    j += 1;
                }
            }
        }
        self.hash = hash.value();
        if u32::try_from(self.names.len()).is_err() {
            return Err(GiveUp("a directory with too many entries"));
        }
        Ok(())
    }

    /// Makes the hash table of the names [`Children::fill`] collected.
    fn index(&mut self) {
        let len = (self.names.len() * 2).next_power_of_two().max(8);
        self.slots.clear();
        self.slots.resize(len, u32::MAX);
        let mask = len - 1;
        for (n, &(name, is_dir)) in self.names.iter().enumerate() {
            let mut at = hash(name, is_dir) & mask;
            while self.slots[at] != u32::MAX {
                at = (at + 1) & mask;
            }
            self.slots[at] = n as u32; // fewer than `u32::MAX` names, checked by `fill`
        }
    }

    /// Whether the directory has a child `name` that is a directory (`is_dir`) or not.
    fn has(&self, name: &[u8], is_dir: bool) -> bool {
        let mask = self.slots.len().wrapping_sub(1);
        if self.names.is_empty() {
            return false;
        }
        let mut at = hash(name, is_dir) & mask;
        loop {
            match self.slots[at] {
                u32::MAX => return false,
                n => {
                    if self.names[n as usize] == (name, is_dir) {
                        return true;
                    }
                }
            }
            at = (at + 1) & mask;
        }
    }
}

/// FNV-1a of a name and whether it is a directory.
fn hash(name: &[u8], is_dir: bool) -> usize {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ u64::from(is_dir);
    for &b in name {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    (h ^ (h >> 32)) as usize
}
