//! Where git keeps a work tree's HEAD and the ref it names, read from the files themselves (no
//! gix, no git process): enough to check that nothing there would block a reader, and to list
//! the files whose modification times move whenever HEAD, the branch or the branch's commit
//! move, in every layout git has — a `.git` directory, a `.git` file (`gitdir: …`: submodules,
//! `--separate-git-dir`, linked work trees with their `commondir`), loose and packed refs, and
//! reftable.
//!
//! Every file is checked with `stat` (which never blocks) before it is opened, and opened
//! non-blocking: a FIFO, a socket or a device where git keeps HEAD or a ref is reported as an
//! error, never read (a FIFO as `.git/HEAD` would otherwise hang the prompt forever).

use std::io::Read;
use std::path::{Path, PathBuf};

/// At most this many bytes of `.git`, `HEAD` or `commondir` are read.
const MAX_SMALL_FILE: u64 = 64 * 1024;

/// A git directory laid out as git does it, for one work tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// The `.git` file, when the work tree has one instead of a directory.
    pub dot_git_file: Option<PathBuf>,
    /// This work tree's own git directory (`.git`, `.git/worktrees/<name>`, `.git/modules/<m>`):
    /// where its `HEAD` and `logs/HEAD` live.
    pub git_dir: PathBuf,
    /// The directory shared by all work trees (`commondir`), where branches and `packed-refs`
    /// live; the same as `git_dir` outside linked work trees.
    pub common_dir: PathBuf,
    /// The ref HEAD names (`refs/heads/main`), or `None` when HEAD is detached (or holds a
    /// reftable stub, whose real value lives in the reftable).
    pub head_ref: Option<String>,
}

/// Why a layout could not be read safely: the path and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {problem}", path.display())]
pub struct LayoutError {
    /// The file that is not what git expects.
    pub path: PathBuf,
    /// What it is instead ("a FIFO, not a file", "a dangling symbolic link", …).
    pub problem: String,
}

/// Finds the git layout of the work tree containing `dir`: the nearest ancestor (or `dir`
/// itself) holding a `.git` entry. `Ok(None)` when there is none.
///
/// Errors: [`LayoutError`] when `.git` (as a file), `HEAD`, `commondir`, the loose ref HEAD
/// names, `packed-refs`, `config`, `config.worktree` or `index` is a special file (FIFO,
/// socket, device), a directory where a file belongs, a dangling symbolic link, or unreadable.
pub fn find(dir: &Path) -> Result<Option<Layout>, LayoutError> {
    for at in dir.ancestors() {
        let dot_git = at.join(".git");
        let Ok(link_meta) = std::fs::symlink_metadata(&dot_git) else {
            continue;
        };
        let meta = std::fs::metadata(&dot_git).map_err(|_| LayoutError {
            path: dot_git.clone(),
            problem: if link_meta.file_type().is_symlink() {
                "a dangling symbolic link".into()
            } else {
                "cannot be read".into()
            },
        })?;
        let (git_dir, dot_git_file) = if meta.is_dir() {
            (dot_git, None)
        } else {
            let text = read_small(&dot_git)?;
            let text = String::from_utf8_lossy(&text);
            let Some(rest) = text.lines().next().and_then(|l| l.strip_prefix("gitdir:")) else {
                return Err(LayoutError {
                    path: dot_git,
                    problem: "a .git file without a `gitdir:` line".into(),
                });
            };
            (at.join(rest.trim()), Some(dot_git))
        };
        return of_git_dir(git_dir, dot_git_file).map(Some);
    }
    Ok(None)
}

fn of_git_dir(git_dir: PathBuf, dot_git_file: Option<PathBuf>) -> Result<Layout, LayoutError> {
    let head = read_small(&git_dir.join("HEAD"))?;
    let common_dir = match optional(&git_dir.join("commondir"))? {
        Some(text) => git_dir.join(String::from_utf8_lossy(&text).trim()),
        None => git_dir.clone(),
    };
    let head = String::from_utf8_lossy(&head);
    let head_ref = head
        .trim()
        .strip_prefix("ref:")
        .map(|r| r.trim().to_string())
        .filter(|r| r.starts_with("refs/") && !r.split('/').any(|c| c == ".." || c.is_empty()));
    let layout = Layout {
        dot_git_file,
        git_dir,
        common_dir,
        head_ref,
    };
    // What gix and git open next, checked by `stat` only (the index can be large).
    let mut next = vec![
        layout.common_dir.join("packed-refs"),
        layout.common_dir.join("config"),
        layout.git_dir.join("config.worktree"),
        layout.git_dir.join("index"),
    ];
    next.extend(layout.loose_ref());
    for path in next {
        check(&path)?;
    }
    Ok(layout)
}

/// Checks that `path` is missing or a regular file (through symbolic links), without opening it.
fn check(path: &Path) -> Result<(), LayoutError> {
    let bad = |problem: String| LayoutError {
        path: path.to_path_buf(),
        problem,
    };
    let link = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if absent(&e) => return Ok(()),
        Err(e) => return Err(bad(format!("cannot be read ({e})"))),
    };
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => Ok(()),
        Ok(m) => Err(bad(format!("{}, not a file", kind_of(&m)))),
        Err(_) if link.file_type().is_symlink() => Err(bad("a dangling symbolic link".into())),
        Err(e) => Err(bad(format!("cannot be read ({e})"))),
    }
}

impl Layout {
    /// Where the loose file of the ref HEAD names would be: per-work-tree refs
    /// (`refs/worktree/…`, `refs/bisect/…`, `refs/rewritten/…`) in [`Layout::git_dir`], the
    /// rest in [`Layout::common_dir`].
    pub fn loose_ref(&self) -> Option<PathBuf> {
        let r = self.head_ref.as_deref()?;
        let own = ["refs/worktree/", "refs/bisect/", "refs/rewritten/"]
            .iter()
            .any(|p| r.starts_with(p));
        let base = if own { &self.git_dir } else { &self.common_dir };
        Some(base.join(r))
    }

    /// The files and directories whose modification time changes whenever HEAD, the branch it
    /// names or that branch's commit changes, however it is done (commit, checkout, reset,
    /// `update-ref`, fetch into the branch, a commit in another work tree of the same branch,
    /// `pack-refs`, reftable compaction): HEAD and its log; the loose ref and every directory
    /// from its own up to `refs/` (a ref that appears, is replaced through its lock file, or
    /// disappears changes the directory); `packed-refs`; the reftable's `tables.list` and
    /// directory; and the `.git` file. Paths that do not exist yet are listed too: a file that
    /// appears later is newer than any stamp.
    pub fn watched(&self) -> Vec<PathBuf> {
        let mut out = vec![self.git_dir.join("HEAD"), self.git_dir.join("logs/HEAD")];
        if let Some(loose) = self.loose_ref() {
            let refs_root = if loose.starts_with(self.common_dir.join("refs")) {
                self.common_dir.join("refs")
            } else {
                self.git_dir.join("refs")
            };
            out.push(loose.clone());
            let mut dir = loose.parent();
            while let Some(d) = dir {
                out.push(d.to_path_buf());
                if d == refs_root || !d.starts_with(&refs_root) {
                    break;
                }
                dir = d.parent();
            }
        }
        out.push(self.common_dir.join("packed-refs"));
        let reftable = self.common_dir.join("reftable");
        if reftable.is_dir() {
            out.push(reftable.join("tables.list"));
            out.push(reftable);
        }
        out.extend(self.dot_git_file.clone());
        out
    }
}

/// Reads a file that must exist, at most [`MAX_SMALL_FILE`] bytes, never blocking.
fn read_small(path: &Path) -> Result<Vec<u8>, LayoutError> {
    optional(path)?.ok_or_else(|| LayoutError {
        path: path.to_path_buf(),
        problem: "is missing".into(),
    })
}

/// Reads a file that may be missing (`Ok(None)`); anything but a regular file (through
/// symbolic links) is an error.
fn optional(path: &Path) -> Result<Option<Vec<u8>>, LayoutError> {
    let bad = |problem: &str| LayoutError {
        path: path.to_path_buf(),
        problem: problem.to_string(),
    };
    let link = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if absent(&e) => return Ok(None),
        Err(e) => return Err(bad(&format!("cannot be read ({e})"))),
    };
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(_) if link.file_type().is_symlink() => return Err(bad("a dangling symbolic link")),
        Err(e) => return Err(bad(&format!("cannot be read ({e})"))),
    };
    if !meta.is_file() {
        return Err(bad(&format!("{}, not a file", kind_of(&meta))));
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Swapped for a FIFO between the stat and the open, it still does not block.
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options
        .open(path)
        .map_err(|e| bad(&format!("cannot be read ({e})")))?;
    match file.metadata() {
        Ok(m) if m.is_file() => {}
        Ok(m) => return Err(bad(&format!("{}, not a file", kind_of(&m)))),
        Err(e) => return Err(bad(&format!("cannot be read ({e})"))),
    }
    let mut bytes = Vec::new();
    file.take(MAX_SMALL_FILE)
        .read_to_end(&mut bytes)
        .map_err(|e| bad(&format!("cannot be read ({e})")))?;
    Ok(Some(bytes))
}

/// Whether a lookup failed because nothing is there: missing, or a file where a directory of
/// the path would be (a reftable repository keeps a file named `refs/heads`).
fn absent(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
    )
}

/// "a FIFO", "a directory", … for an error message.
fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_socket() {
            return "a socket";
        }
        if t.is_block_device() || t.is_char_device() {
            return "a device";
        }
    }
    "a special file"
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn plain_linked_and_gitfile_layouts() {
        let tmp = tempfile::tempdir().unwrap();
        let main = tmp.path().join("main");
        write(&main.join(".git/HEAD"), "ref: refs/heads/feat/x\n");
        let l = find(&main.join("src/deep")).unwrap().unwrap();
        assert_eq!(l.git_dir, main.join(".git"));
        assert_eq!(l.common_dir, main.join(".git"));
        assert_eq!(l.head_ref.as_deref(), Some("refs/heads/feat/x"));
        let w = l.watched();
        for p in [
            ".git/HEAD",
            ".git/logs/HEAD",
            ".git/refs/heads/feat/x",
            ".git/refs/heads/feat",
            ".git/refs/heads",
            ".git/refs",
            ".git/packed-refs",
        ] {
            assert!(w.contains(&main.join(p)), "{p} in {w:?}");
        }

        let wt = tmp.path().join("wt");
        write(&wt.join(".git"), "gitdir: ../main/.git/worktrees/wt\n");
        write(&main.join(".git/worktrees/wt/HEAD"), "0123abcd\n");
        write(&main.join(".git/worktrees/wt/commondir"), "../..\n");
        let l = find(&wt).unwrap().unwrap();
        assert_eq!(l.head_ref, None);
        assert_eq!(l.common_dir, wt.join("../main/.git/worktrees/wt/../.."));
        assert!(l.watched().contains(&wt.join(".git")));
    }

    #[cfg(unix)]
    #[test]
    fn special_files_are_errors_never_read() {
        let tmp = tempfile::tempdir().unwrap();
        let head = tmp.path().join(".git/HEAD");
        std::fs::create_dir_all(tmp.path().join(".git")).unwrap();
        let fifo = std::ffi::CString::new(head.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let e = find(tmp.path()).unwrap_err();
        assert!(e.to_string().contains("a FIFO, not a file"), "{e}");
        std::fs::remove_file(&head).unwrap();
        std::fs::create_dir(&head).unwrap();
        assert!(find(tmp.path()).unwrap_err().problem.contains("directory"));
        std::fs::remove_dir(&head).unwrap();
        std::os::unix::fs::symlink("nowhere", &head).unwrap();
        assert!(find(tmp.path()).unwrap_err().problem.contains("dangling"));
    }
}
