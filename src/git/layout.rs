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

    /// HEAD's branch and commit, read from the files as git writes them, in the common cases
    /// only: HEAD naming a branch under `refs/heads/` whose commit is in its loose file or in
    /// `packed-refs` (or nowhere: a branch without commits), or a detached HEAD holding a
    /// commit id. `None` whenever anything else is found (a reftable, a symbolic ref
    /// pointing at another symbolic ref, a ref outside `refs/heads/`, a file that is not
    /// what git writes, a `packed-refs` over 1 MiB): the caller then asks gix, which knows
    /// every case. Costs a few small reads instead of opening the repository (a third of the
    /// prompt's instructions).
    pub fn head(&self) -> Option<super::Head> {
        if self.common_dir.join("reftable").exists() {
            return None;
        }
        let text = optional(&self.git_dir.join("HEAD")).ok()??;
        let text = std::str::from_utf8(&text).ok()?.trim_end_matches('\n');
        let Some(name) = self.head_ref.as_deref() else {
            // Detached: the commit itself.
            return object_id(text).map(|id| super::Head {
                branch: None,
                commit: Some(id.to_string()),
            });
        };
        let branch = name.strip_prefix("refs/heads/")?.to_string();
        let commit = match optional(&self.loose_ref()?).ok()? {
            Some(bytes) => {
                let loose = std::str::from_utf8(&bytes).ok()?.trim_end_matches('\n');
                Some(object_id(loose)?.to_string())
            }
            None => self.packed(name)?,
        };
        Some(super::Head {
            branch: Some(branch),
            commit,
        })
    }

    /// The commit of `name` in `packed-refs`: `Some(None)` when the file or the name is not
    /// there, `None` when it cannot be read as git writes it.
    fn packed(&self, name: &str) -> Option<Option<String>> {
        let path = self.common_dir.join("packed-refs");
        // Bounded by what it leads to, not by a link's own length; never a device or a FIFO.
        let bytes = match crate::fsutil::read_limited(&path, 1024 * 1024) {
            Ok(None) => return Some(None),
            Ok(Some(bytes)) => bytes,
            Err(_) => return None,
        };
        let text = std::str::from_utf8(&bytes).ok()?;
        for line in text.lines() {
            if line.starts_with('#') || line.starts_with('^') {
                continue;
            }
            let (id, refname) = line.split_once(' ')?;
            if refname == name {
                return Some(Some(object_id(id)?.to_string()));
            }
        }
        Some(None)
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

/// `text` when it is an object id as git writes it (40 or 64 lower-case hex digits).
fn object_id(text: &str) -> Option<&str> {
    ((text.len() == 40 || text.len() == 64)
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
    .then_some(text)
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

    /// `packed-refs` is bounded by what it leads to: a short link to a large file is not read
    /// (the caller defers to gix, which has its own limits), and a missing file is no error.
    #[cfg(unix)]
    #[test]
    fn packed_refs_through_a_link_to_a_large_file_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout {
            dot_git_file: None,
            git_dir: dir.path().to_path_buf(),
            common_dir: dir.path().to_path_buf(),
            head_ref: Some("refs/heads/main".into()),
        };
        assert_eq!(layout.packed("refs/heads/main"), Some(None));
        let big = dir.path().join("big");
        let line = format!("{} refs/heads/main\n", "a".repeat(40));
        write(&big, &line.repeat(40_000));
        std::os::unix::fs::symlink(&big, dir.path().join("packed-refs")).unwrap();
        assert_eq!(layout.packed("refs/heads/main"), None);
        std::fs::remove_file(dir.path().join("packed-refs")).unwrap();
        write(&dir.path().join("packed-refs"), &line);
        assert_eq!(layout.packed("refs/heads/main"), Some(Some("a".repeat(40))));
    }

    /// `Layout::head` agrees with gix on real repositories (git makes them), or defers.
    #[test]
    fn head_from_files_agrees_with_gix() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path().canonicalize().unwrap();
        let git = |args: &[&str]| {
            let out = std::process::Command::new("git")
                .args([
                    "-c",
                    "user.name=t",
                    "-c",
                    "user.email=t@t",
                    "-c",
                    "init.defaultBranch=main",
                ])
                .args(args)
                .current_dir(&top)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .output()
                .unwrap();
            assert!(out.status.success(), "git {args:?}: {out:?}");
        };
        let by_gix = || {
            let repo = gix::open(&top).unwrap();
            let head = repo.head().unwrap();
            super::super::Head {
                branch: head.referent_name().map(|n| n.shorten().to_string()),
                commit: head.id().map(|id| id.to_string()),
            }
        };
        let by_files = || find(&top).unwrap().unwrap().head();
        git(&["init", "-q"]);
        // Unborn branch.
        assert_eq!(by_files(), Some(by_gix()));
        assert_eq!(by_gix().commit, None);
        std::fs::write(top.join("a"), "a").unwrap();
        git(&["add", "a"]);
        git(&["commit", "-q", "-m", "one"]);
        // Loose ref.
        assert_eq!(by_files(), Some(by_gix()));
        // Packed ref only.
        git(&["pack-refs", "--all", "--prune"]);
        assert!(!top.join(".git/refs/heads/main").exists());
        assert_eq!(by_files(), Some(by_gix()));
        // Loose and packed: the loose one wins.
        git(&["commit", "-q", "--allow-empty", "-m", "two"]);
        assert_eq!(by_files(), Some(by_gix()));
        // Detached.
        git(&["checkout", "-q", "--detach", "HEAD~1"]);
        assert_eq!(by_files(), Some(by_gix()));
        assert_eq!(by_gix().branch, None);
        // A branch with a slash in its name, packed.
        git(&["checkout", "-q", "-b", "feature/x"]);
        git(&["pack-refs", "--all", "--prune"]);
        assert_eq!(by_files(), Some(by_gix()));
        // HEAD naming a symbolic ref: left to gix.
        git(&["symbolic-ref", "refs/heads/alias", "refs/heads/main"]);
        git(&["symbolic-ref", "HEAD", "refs/heads/alias"]);
        assert_eq!(by_files(), None);
        // A ref outside refs/heads: left to gix.
        std::fs::write(top.join(".git/HEAD"), "ref: refs/remotes/origin/main\n").unwrap();
        assert_eq!(by_files(), None);
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
