//! The index → work tree half of `status`, without gix's per-path machinery (issue 10).
//!
//! When the index's cache-tree proves that HEAD → index has nothing to report (see
//! `cache_tree_matches` in `native.rs`), what is left of a status is: compare every index entry
//! with the file on disk, and list the untracked files. gix answers both, but its comparison
//! pays for things this one question does not need: an absolute path per entry (every lookup
//! walks the whole directory chain in the kernel again), a leading-directory symlink check kept
//! as a path stack, and a pathspec and attribute stack per entry. Here the entries are compared
//! the way git's `preload-index` does it, a share of the index per thread, but each directory is
//! opened once (`O_PATH | O_NOFOLLOW`, one component at a time, so a directory replaced by a
//! symbolic link is never followed) and its files are looked up by name relative to it. The
//! untracked files come from gix's own directory walk (`Repository::dirwalk`, configured as gix's
//! status configures it), on a thread of its own while the entries are compared.
//!
//! Every decision uses gix's own rules and primitives, so the answer is gix's answer:
//! `Stat::matches` and `Stat::is_racy` with the repository's `stat_options()`,
//! `Mode::change_to_match_fs_with_values` with its `filesystem_options()`, and the size test of
//! gix-status' `FastEq` (a tracked file whose size differs from the size the index recorded is
//! modified, unless the index zeroed that size for a racily clean entry). An entry that only a
//! look at its content can settle — stat data moved but the size did not, or a racily clean
//! entry — and anything unusual (a submodule, an error other than "not there", a path git would
//! never write) makes this pass give up, and the caller runs gix's full status instead, so the
//! fast path is only ever taken where its answer cannot differ.
//!
//! Facts from gix 0.90 / gix-status 0.37 (`index_as_worktree::function::State::compute_status`,
//! `traits::FastEq`) and git 2.47 (`preload-index.c`: 500 entries a thread at least).

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use gix::bstr::{BStr, ByteSlice};
use gix::index::entry::{Flags, Stat, stat};
use rustix::fs::{AtFlags, FileType, OFlags};
use rustix::io::Errno;

/// What the entry pass found for one index entry that changed in the work tree: its index
/// position and git's Y letter (`M` modified, `D` deleted, `T` type changed).
pub(super) type Change = (usize, char);

/// Why the fast pass gave up, in a few words: the caller runs gix's full status instead.
#[derive(Debug)]
pub(super) struct GiveUp(pub &'static str);

/// Fewest entries worth a thread of their own (git's `preload-index.c` uses 500).
const ENTRIES_PER_THREAD: usize = 500;
/// Most threads the entry pass uses.
const MAX_THREADS: usize = 8;

/// The repository's settings the comparison needs, read once.
#[derive(Clone, Copy)]
pub(super) struct Rules {
    pub stat: stat::Options,
    pub symlinks: bool,
    pub executable_bit: bool,
}

/// Compares every index entry with the work tree at `workdir`; returns the changed ones sorted
/// by index position. `stop` is set by the caller to end the pass early (its result is then
/// not used).
///
/// Errors: [`GiveUp`] when an entry needs more than its stat data to decide (see the module
/// documentation) or the work tree cannot be read as expected.
pub(super) fn entries(
    workdir: &Path,
    index: &gix::index::State,
    rules: Rules,
    stop: &AtomicBool,
) -> Result<Vec<Change>, GiveUp> {
    let root = rustix::fs::open(
        workdir,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .map_err(|_| GiveUp("the work tree cannot be opened"))?;
    let all = index.entries();
    let threads = threads_for(all.len());
    let share = all.len().div_ceil(threads.max(1)).max(1);
    let pass = |start: usize| {
        let end = (start + share).min(all.len());
        Pass {
            root: root.as_fd(),
            index,
            rules,
            dirs: Vec::new(),
            dir: Vec::new(),
            dir_state: DirState::Root,
        }
        .run(all, start..end, stop)
    };
    let mut out = Vec::new();
    if threads <= 1 {
        out = pass(0)?;
    } else {
        let parts: Vec<Result<Vec<Change>, GiveUp>> = std::thread::scope(|s| {
            let handles: Vec<_> = (1..threads)
                .map(|i| {
                    let pass = &pass;
                    std::thread::Builder::new()
                        .name("pas-agent-status".into())
                        .spawn_scoped(s, move || pass(i * share))
                })
                .collect();
            let mut parts = vec![pass(0)];
            for h in handles {
                parts.push(match h {
                    Ok(h) => h.join().unwrap_or(Err(GiveUp("a thread failed"))),
                    Err(_) => Err(GiveUp("no thread")),
                });
            }
            parts
        });
        for part in parts {
            out.extend(part?);
        }
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
    index: &'a gix::index::State,
    rules: Rules,
    /// The open directories of the current path, one per component, outermost first.
    dirs: Vec<OwnedFd>,
    /// The current directory's path, `/`-separated, without a trailing `/`.
    dir: Vec<u8>,
    dir_state: DirState,
}

impl Pass<'_> {
    fn run(
        mut self,
        all: &[gix::index::Entry],
        range: std::ops::Range<usize>,
        stop: &AtomicBool,
    ) -> Result<Vec<Change>, GiveUp> {
        let mut out = Vec::new();
        for i in range {
            if i % 64 == 0 && stop.load(Ordering::Relaxed) {
                break;
            }
            let entry = &all[i];
            // As gix-status: entries git marks as not to be looked at count as unchanged.
            if entry.flags.intersects(
                Flags::UPTODATE | Flags::SKIP_WORKTREE | Flags::ASSUME_VALID | Flags::FSMONITOR_VALID,
            ) {
                continue;
            }
            if entry.stage_raw() != 0 || entry.flags.contains(Flags::INTENT_TO_ADD) {
                return Err(GiveUp("an unmerged or intent-to-add entry"));
            }
            if entry.mode.is_submodule() {
                return Err(GiveUp("a submodule"));
            }
            let path = entry.path_in(self.index.path_backing());
            if let Some(letter) = self.compare(entry, path)? {
                out.push((i, letter));
            }
        }
        Ok(out)
    }

    /// The Y letter of one entry, `None` when it is unchanged.
    fn compare(&mut self, entry: &gix::index::Entry, path: &BStr) -> Result<Option<char>, GiveUp> {
        let (dir, name) = match path.rfind_byte(b'/') {
            Some(i) => (&path[..i], &path[i + 1..]),
            None => (&path[..0], &path[..]),
        };
        if !sane(name) {
            return Err(GiveUp("a path git would not write"));
        }
        self.enter(dir)?;
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
    /// directory, opening what is not open yet, one component at a time without following
    /// symbolic links.
    fn enter(&mut self, dir: &BStr) -> Result<(), GiveUp> {
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
        for component in &components[shared..] {
            let parent = match self.dirs.last() {
                Some(fd) => fd.as_fd(),
                None => self.root,
            };
            match rustix::fs::openat(
                parent,
                *component,
                OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                rustix::fs::Mode::empty(),
            ) {
                Ok(fd) => self.dirs.push(fd),
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

/// The untracked files and nested repositories (`dir/`), from gix's directory walk configured
/// as gix's status configures it with untracked files listed one by one. Runs on the calling
/// thread; `stop` ends it early.
pub(super) fn untracked(
    repo: &gix::Repository,
    index: &gix::index::State,
    stop: &AtomicBool,
) -> Result<Vec<String>, GiveUp> {
    let options = repo
        .dirwalk_options()
        .map_err(|_| GiveUp("no directory walk options"))?
        .emit_untracked(gix::dir::walk::EmissionMode::Matching);
    let mut found = Untracked(Vec::new());
    repo.dirwalk(
        index,
        std::iter::empty::<&BStr>(),
        stop,
        options,
        &mut found,
    )
    .map_err(|_| GiveUp("the directory walk failed"))?;
    Ok(found.0)
}

/// Collects what gix's status reports as untracked, named as `native.rs` names it.
struct Untracked(Vec<String>);

impl gix::dir::walk::Delegate for Untracked {
    fn emit(
        &mut self,
        entry: gix::dir::EntryRef<'_>,
        _collapsed: Option<gix::dir::entry::Status>,
    ) -> gix::dir::walk::Action {
        use gix::dir::entry::Kind;
        if entry.status == gix::dir::entry::Status::Untracked {
            match entry.disk_kind {
                Some(Kind::Untrackable | Kind::Directory) | None => {}
                Some(Kind::Repository) => {
                    let mut path = super::record_path(entry.rela_path.as_bytes());
                    path.push('/');
                    self.0.push(path);
                }
                Some(_) => self.0.push(super::record_path(entry.rela_path.as_bytes())),
            }
        }
        std::ops::ControlFlow::Continue(())
    }
}
