//! Git through gix, in process. Facts about the gix 0.90 API (relative work-dir paths, collapsed
//! untracked directories by default, unordered parallel status items, reftable and sparse-index
//! gaps) were checked against gix 0.90 itself (its `crate-status.md`, GitoxideLabs/gitoxide#109
//! and #562).

use std::path::Path;

use gix::bstr::ByteSlice;

use super::{Detail, Found, GitError, GitResult, Head, RawStatus, TreeChange};
use crate::model::{CommitRef, FileStatus};

/// An open repository, and whether some of its features need the git CLI.
pub(crate) struct Native {
    repo: gix::Repository,
    /// The same repository as opened, for the status pass's helper threads (kept from the
    /// open: making one from `repo` again clones it and opens another object database handle).
    sync: gix::ThreadSafeRepository,
    /// Reftable refs or a sparse index: gix 0.90 cannot read HEAD or run status there.
    pub needs_cli: bool,
}

impl std::fmt::Debug for Native {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Native")
            .field("git_dir", &self.repo.git_dir())
            .field("needs_cli", &self.needs_cli)
            .finish()
    }
}

fn err(context: &str, e: impl std::fmt::Display) -> GitError {
    GitError(format!("{context}: {e}"))
}

pub(crate) fn discover(dir: &Path) -> GitResult<Found> {
    // "No repository here" is a typed error of the discovery step, inside gix's error chain.
    if let Err(e) = gix::discover::upwards(dir) {
        use gix::discover::upwards::Error as Up;
        return match e.downcast_any_ref::<Up>() {
            Some(
                Up::NoGitRepository { .. }
                | Up::NoGitRepositoryWithinCeiling { .. }
                | Up::NoGitRepositoryWithinFs { .. },
            ) => Ok(Found::None),
            _ => Err(err("finding the repository", e)),
        };
    }
    // Reading only, so the index's trailing checksum is not verified — git does not verify it
    // on reads either (read-cache.c, `verify_index_checksum` is off outside fsck) — which saves
    // hashing the whole index with collision-detecting SHA-1 on every command.
    let trust = gix::sec::trust::Mapping {
        full: open_options(gix::sec::Trust::Full),
        reduced: open_options(gix::sec::Trust::Reduced),
    };
    let sync = gix::ThreadSafeRepository::discover_opts(dir, Default::default(), trust)
        .map_err(|e| err("opening the repository", e))?;
    let repo = sync.to_thread_local();
    let git_dir = repo
        .git_dir()
        .canonicalize()
        .unwrap_or_else(|_| repo.git_dir().to_path_buf());
    let Some(workdir) = repo.workdir() else {
        return Ok(Found::Bare);
    };
    if dir.starts_with(&git_dir) {
        return Ok(Found::InsideGitDir);
    }
    let top = workdir
        .canonicalize()
        .map_err(|e| err("resolving the work tree", e))?;
    let config = repo.config_snapshot();
    let reftable = config
        .string("extensions.refStorage")
        .is_some_and(|v| v.as_slice() == b"reftable");
    let sparse = config.boolean("index.sparse").unwrap_or(false);
    Ok(Found::WorkTree {
        top,
        native: Some(Box::new(Native {
            needs_cli: reftable || sparse,
            repo,
            sync,
        })),
    })
}

/// One side of a path's porcelain status, with a rename's source, or an untracked file.
enum Mark {
    X(char, Option<String>),
    Y(char),
    Untracked,
}

/// Environment variable that, set to `1`, turns the fast paths off (the cache-tree shortcut,
/// the fingerprint cache, the prompt's HEAD read from files), so that the full computation can be compared with them. For tests and benchmarks.
pub(crate) const FULL_STATUS_ENV: &str = "PAS_AGENT_FULL_STATUS";

/// Environment variable that, set to `1`, makes every in-process status say on stderr which
/// path answered it (`pas-agent: status: fast`, or which gix path and why), so that tests can
/// tell that the fast path they compare was taken. For tests and benchmarks.
pub(crate) const TRACE_ENV: &str = "PAS_AGENT_STATUS_TRACE";

fn trace(path: &str) {
    if std::env::var_os(TRACE_ENV).is_some_and(|v| v == "1") {
        crate::term::note(&format!("pas-agent: status: {path}"));
    }
}

pub(crate) fn full_status_forced() -> bool {
    std::env::var_os(FULL_STATUS_ENV).is_some_and(|v| v == "1")
}

/// Whether the index's cache-tree extension proves that the index holds exactly HEAD's tree, so
/// that comparing HEAD with the index would find nothing — the test git itself makes before it
/// trusts the cache-tree (`cache-tree.c`): the root is valid (git writes `-1` entries for an
/// invalidated tree, gix reads that as `None`), names HEAD's tree and covers every entry of the
/// index, and no entry is unmerged or added with intent (git invalidates the tree for both; this
/// check does not rely on that).
fn cache_tree_matches(index: &gix::index::State, head_tree: gix::ObjectId) -> bool {
    let Some(root) = index.tree() else {
        return false;
    };
    let entries = index.entries();
    root.name.is_empty()
        && root.id == head_tree
        && root
            .num_entries
            .is_some_and(|n| n as usize == entries.len())
        && entries.iter().all(|e| {
            e.stage_raw() == 0 && !e.flags.contains(gix::index::entry::Flags::INTENT_TO_ADD)
        })
}

fn open_options(trust: gix::sec::Trust) -> gix::open::Options {
    use gix::sec::trust::DefaultForLevel;
    gix::open::Options::default_for_level(trust).config_overrides(["index.skipHash=true"])
}

fn to_string(b: &gix::bstr::BStr) -> String {
    b.to_str_lossy().into_owned()
}

/// A path as recorded: reversibly, whatever its encoding ([`super::record_path`]).
fn path_string(b: &gix::bstr::BStr) -> String {
    super::record_path(b.as_bytes())
}

impl Native {
    pub fn git_dir(&self) -> &Path {
        self.repo.git_dir()
    }

    /// Whether the index holds `path` (relative to the top level, `/`-separated).
    pub fn tracked(&self, path: &str) -> GitResult<bool> {
        let index = self
            .repo
            .index_or_empty()
            .map_err(|e| err("reading the index", e))?;
        Ok(index.entry_by_path(path.as_bytes().as_bstr()).is_some())
    }

    /// Whether git's ignore rules (`.gitignore` files, `info/exclude`, `core.excludesFile`)
    /// exclude the file `path` (relative to the top level).
    pub fn ignored(&self, path: &str) -> GitResult<bool> {
        let index = self
            .repo
            .index_or_empty()
            .map_err(|e| err("reading the index", e))?;
        let mut stack = self
            .repo
            .excludes(
                &index,
                None,
                gix::worktree::stack::state::ignore::Source::WorktreeThenIdMappingIfNotSkipped,
            )
            .map_err(|e| err("reading the ignore rules", e))?;
        let platform = stack
            .at_path(Path::new(path), Some(gix::index::entry::Mode::FILE))
            .map_err(|e| err("matching the ignore rules", e))?;
        Ok(platform.is_excluded())
    }

    /// The repository's `info/exclude` file (in the common directory that linked work trees
    /// share).
    pub fn exclude_file(&self) -> std::path::PathBuf {
        self.repo.common_dir().join("info").join("exclude")
    }

    pub fn head(&self) -> GitResult<Head> {
        let head = self.repo.head().map_err(|e| err("reading HEAD", e))?;
        Ok(Head {
            branch: head.referent_name().map(|n| to_string(n.shorten())),
            commit: head.id().map(|id| id.to_string()),
        })
    }

    /// HEAD and the changed paths that `in_scope` keeps; `prefix` is the session root's
    /// (see `Repo::in_scope`), for ending a dirty check at its first change.
    pub fn status(
        &self,
        detail: Detail,
        prefix: &str,
        in_scope: &dyn Fn(&str) -> bool,
    ) -> GitResult<(Head, RawStatus)> {
        use gix::status::{Item, UntrackedFiles, index_worktree};
        let head = self.head()?;
        // Set once the first change is found in `Detail::Dirty` mode, so that the threads
        // producing the rest of the status stop instead of finishing a walk nobody reads.
        let interrupt = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let index = self
            .repo
            .index_or_empty()
            .map_err(|e| err("reading the index", e))?;
        let head_tree = self
            .repo
            .head_tree_id_or_empty()
            .map_err(|e| err("reading HEAD's tree", e))?
            .detach();
        let skip_tree_index = !full_status_forced() && cache_tree_matches(&index, head_tree);
        // With HEAD → index proven empty, what is left is the work tree: compared by the fast
        // pass where its answer cannot differ from gix's (`fast.rs`), else by gix below.
        if skip_tree_index {
            match self.fast_status(&index, detail, prefix, in_scope) {
                Ok(out) => {
                    trace("fast");
                    return Ok((head, out));
                }
                Err(why) => trace(&format!("gix, work tree only ({})", why.0)),
            }
        } else {
            trace("gix, HEAD → index included");
        }
        let platform = self
            .repo
            .status(gix::progress::Discard)
            .map_err(|e| err("status", e))?
            .index(gix::worktree::IndexPersistedOrInMemory::Persisted(index))
            .head_tree(head_tree)
            .untracked_files(UntrackedFiles::Files)
            .index_worktree_rewrites(None)
            .should_interrupt_owned(interrupt.clone());
        // HEAD → index: skipped when the index's cache-tree proves it empty, as git does;
        // only the index → work tree side (and the untracked walk) runs then.
        let iter: Box<dyn Iterator<Item = GitResult<Item>>> = if skip_tree_index {
            Box::new(
                platform
                    .into_index_worktree_iter(Vec::new())
                    .map_err(|e| err("status", e))?
                    .map(|item| item.map(Item::IndexWorktree).map_err(|e| err("status", e))),
            )
        } else {
            Box::new(
                platform
                    .into_iter(Vec::new())
                    .map_err(|e| err("status", e))?
                    .map(|item| item.map_err(|e| err("status", e))),
            )
        };
        let mut out = RawStatus::new();
        for item in iter {
            let item = item?;
            // Each item sets one side of the path's two-letter status: X (HEAD → index) or
            // Y (index → work tree), as git's porcelain output has them.
            let (path, mark) = match &item {
                Item::TreeIndex(change) => {
                    use gix::diff::index::ChangeRef;
                    match change {
                        ChangeRef::Addition { location, .. } => {
                            (path_string(location.as_ref()), Mark::X('A', None))
                        }
                        ChangeRef::Deletion { location, .. } => {
                            (path_string(location.as_ref()), Mark::X('D', None))
                        }
                        ChangeRef::Modification { location, .. } => {
                            (path_string(location.as_ref()), Mark::X('M', None))
                        }
                        ChangeRef::Rewrite {
                            source_location,
                            location,
                            copy,
                            ..
                        } => (
                            path_string(location.as_ref()),
                            Mark::X(
                                if *copy { 'C' } else { 'R' },
                                Some(path_string(source_location.as_ref())),
                            ),
                        ),
                    }
                }
                Item::IndexWorktree(iw) => {
                    use gix::status::index_worktree::iter::Summary;
                    let Some(summary) = iw.summary() else {
                        continue;
                    };
                    let mut path = path_string(iw.rela_path());
                    if let index_worktree::Item::DirectoryContents { entry, .. } = iw {
                        match entry.disk_kind {
                            Some(gix::dir::entry::Kind::Directory) | None => continue,
                            // A nested repository shows as its directory, as `git status` does.
                            Some(gix::dir::entry::Kind::Repository) => path.push('/'),
                            _ => {}
                        }
                        (path, Mark::Untracked)
                    } else {
                        let letter = match summary {
                            Summary::Removed => 'D',
                            Summary::TypeChange => 'T',
                            Summary::Renamed => 'R',
                            Summary::Copied => 'C',
                            Summary::IntentToAdd | Summary::Added => 'A',
                            Summary::Conflict => 'U',
                            Summary::Modified => 'M',
                        };
                        (path, Mark::Y(letter))
                    }
                }
            };
            if !in_scope(&path) {
                continue;
            }
            let entry = out.entry(path).or_default();
            match mark {
                Mark::X(letter, from) => {
                    entry.x = Some(letter);
                    if from.is_some() {
                        entry.from = from;
                    }
                }
                Mark::Y(letter) => entry.y = Some(letter),
                Mark::Untracked => entry.untracked = true,
            }
            if detail == Detail::Dirty {
                interrupt.store(true, std::sync::atomic::Ordering::Relaxed);
                break;
            }
        }
        Ok((head, out))
    }

    /// The index → work tree side and the untracked files through `fast.rs`, kept as
    /// `in_scope` says. Errors: why the fast pass gave up (gix's full status answers then).
    fn fast_status(
        &self,
        index: &gix::index::State,
        detail: Detail,
        prefix: &str,
        in_scope: &dyn Fn(&str) -> bool,
    ) -> Result<RawStatus, super::fast::GiveUp> {
        use super::fast::GiveUp;
        let workdir = self.repo.workdir().ok_or(GiveUp("no work tree"))?;
        let caps = self
            .repo
            .filesystem_options()
            .map_err(|_| GiveUp("unreadable core settings"))?;
        let rules = super::fast::Rules {
            stat: self
                .repo
                .stat_options()
                .map_err(|_| GiveUp("unreadable core settings"))?,
            symlinks: caps.symlink,
            executable_bit: caps.executable_bit,
        };
        if caps.ignore_case {
            return Err(GiveUp("a case-insensitive repository"));
        }
        let git_dir_realpath = gix::path::realpath(self.repo.git_dir())
            .map_err(|_| GiveUp("the repository's own directory cannot be resolved"))?;
        // What each directory held beyond the index, as last read (`dircache.rs`), keyed on the
        // work tree's real path.
        let cache = gix::path::realpath(workdir)
            .map(|top| super::dircache::DirCache::open(&top))
            .unwrap_or_default();
        let mut found = super::fast::status(
            workdir,
            index,
            rules,
            &super::fast::Shared {
                repo: &self.sync,
                git_dir_realpath: &git_dir_realpath,
                first_change_below: (detail == Detail::Dirty).then_some(prefix.as_bytes()),
                cache: &cache,
            },
        )?;
        let used = std::mem::take(&mut found.cache);
        trace(&format!(
            "directories: {} read, {} from the cache",
            used.read.len(),
            used.kept.len()
        ));
        // Only a complete pass knows every directory: a dirty check stops at its first change.
        if detail != Detail::Dirty {
            cache.save(used);
        }
        // Collected, sorted once and built in one go: the changes come in index order, so
        // the sort is mostly a check, where inserting into the map one by one compared every
        // path with several others.
        let mut rows: Vec<(String, super::Entry)> =
            Vec::with_capacity(found.changes.len() + found.untracked.len());
        let entries = index.entries();
        for (i, letter) in found.changes {
            let entry = entries.get(i).ok_or(GiveUp("an entry out of range"))?;
            let path = path_string(entry.path(index));
            if in_scope(&path) {
                rows.push((
                    path,
                    super::Entry {
                        y: Some(letter),
                        ..Default::default()
                    },
                ));
            }
        }
        for path in found.untracked {
            let path = super::record_path(&path);
            if in_scope(&path) {
                rows.push((
                    path,
                    super::Entry {
                        untracked: true,
                        ..Default::default()
                    },
                ));
            }
        }
        super::Entry::sort_rows(&mut rows);
        // One entry per path (a path both changed and untracked cannot happen, but would keep
        // both marks, as the map's entries did).
        let mut unique: Vec<(String, super::Entry)> = Vec::with_capacity(rows.len());
        for (path, entry) in rows {
            match unique.last_mut() {
                Some((last, kept)) if *last == path => kept.merge(entry),
                _ => unique.push((path, entry)),
            }
        }
        let out: RawStatus = unique.into_iter().collect();
        Ok(out)
    }

    fn commit(&self, id: &str) -> GitResult<gix::Commit<'_>> {
        let oid = gix::ObjectId::from_hex(id.as_bytes()).map_err(|e| err("commit id", e))?;
        self.repo
            .find_commit(oid)
            .map_err(|e| err(&format!("reading commit {id}"), e))
    }

    pub fn commits_between(
        &self,
        before: Option<&str>,
        after: &str,
        limit: usize,
    ) -> GitResult<Vec<CommitRef>> {
        let tip = self.commit(after)?.id;
        let mut walk = self.repo.rev_walk([tip]);
        if let Some(before) = before {
            walk = walk.with_hidden([self.commit(before)?.id]);
        }
        let mut out = Vec::new();
        for info in walk.all().map_err(|e| err("walking commits", e))? {
            if out.len() >= limit {
                break;
            }
            let info = info.map_err(|e| err("walking commits", e))?;
            let commit = info.object().map_err(|e| err("reading a commit", e))?;
            let summary = commit
                .message()
                .map(|m| to_string(m.summary().as_ref()))
                .unwrap_or_default();
            out.push(CommitRef {
                id: info.id.to_string(),
                summary,
                extra: Default::default(),
            });
        }
        out.reverse();
        Ok(out)
    }

    pub fn tree_changes(&self, before: Option<&str>, after: &str) -> GitResult<Vec<TreeChange>> {
        use gix::object::tree::diff::ChangeDetached as C;
        let new_tree = self
            .commit(after)?
            .tree()
            .map_err(|e| err("reading a tree", e))?;
        let old_tree = match before {
            Some(b) => Some(
                self.commit(b)?
                    .tree()
                    .map_err(|e| err("reading a tree", e))?,
            ),
            None => None,
        };
        let changes = self
            .repo
            .diff_tree_to_tree(old_tree.as_ref(), Some(&new_tree), None)
            .map_err(|e| err("diffing trees", e))?;
        let mut out = Vec::new();
        for change in changes {
            let (path, mode, status) = match change {
                C::Addition {
                    location,
                    entry_mode,
                    ..
                } => (location, entry_mode, FileStatus::Added),
                C::Deletion {
                    location,
                    entry_mode,
                    ..
                } => (location, entry_mode, FileStatus::Deleted),
                C::Modification {
                    location,
                    entry_mode,
                    ..
                } => (location, entry_mode, FileStatus::Modified),
                C::Rewrite {
                    source_location,
                    location,
                    entry_mode,
                    copy,
                    ..
                } => {
                    let status = if copy {
                        FileStatus::Added
                    } else {
                        FileStatus::Renamed {
                            from: path_string(source_location.as_ref()),
                        }
                    };
                    (location, entry_mode, status)
                }
            };
            if mode.is_tree() {
                continue;
            }
            out.push(TreeChange {
                path: path_string(path.as_ref()),
                status,
            });
        }
        TreeChange::sort_by_path(&mut out);
        Ok(out)
    }

    pub fn blob_at(&self, commit: &str, path: &str) -> GitResult<Option<Vec<u8>>> {
        let tree = self
            .commit(commit)?
            .tree()
            .map_err(|e| err("reading a tree", e))?;
        let bytes = super::path_bytes(path);
        #[cfg(unix)]
        let path = {
            use std::os::unix::ffi::OsStrExt;
            std::path::PathBuf::from(std::ffi::OsStr::from_bytes(&bytes))
        };
        #[cfg(not(unix))]
        let path = std::path::PathBuf::from(String::from_utf8_lossy(&bytes).into_owned());
        let entry = tree
            .lookup_entry_by_path(&path)
            .map_err(|e| err("looking up a path", e))?;
        let Some(entry) = entry else {
            return Ok(None);
        };
        if !entry.mode().is_blob() {
            return Ok(None);
        }
        let object = entry.object().map_err(|e| err("reading a blob", e))?;
        Ok(Some(object.data.clone()))
    }
}
