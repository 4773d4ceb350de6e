//! The one place that decides whether a path may be written ([`WriteGuard`]), the one atomic
//! writer ([`WriteGuard::write`]), and small file helpers around them.
//!
//! Rules every write under a session root follows (docs/security.md):
//! - **Inside the root.** A path is resolved component by component, following every symbolic
//!   link (parents and chains included) and `..` as the OS would. The real target must lie
//!   inside the canonical session root. A path the user named on the command line (`-o`) may
//!   lie outside it, as long as no link *inside* the root leads it out: a committed
//!   `CLAUDE.md -> ~/.ssh/authorized_keys` or `docs -> /etc` is refused even when named.
//! - **Never into `.git`.** A real target inside a `.git` directory under the root (git's
//!   configuration and hooks) is refused, however it was reached.
//! - **No links for private files.** Lock and capture files are opened with `O_NOFOLLOW` and
//!   created with `O_EXCL`; an existing file is never truncated to take a lock.
//! - **Permissions for everyone.** A file or directory with no write bit for anyone is
//!   read-only, root included (root bypasses the kernel's check, so the mode bits are read
//!   here); other users get the kernel's own answer (`access(2)` with the effective ids, ACLs
//!   included).
//! - **Owner and mode kept.** A replaced file keeps its mode, owner and group (the temp file is
//!   `fchown`ed before the rename; when that is not permitted the write is refused). A new file
//!   or directory made by root inside a directory owned by someone else is given to that
//!   directory's owner, so the owner's next command does not fail.
//! - **Hard links kept.** A file whose every hard link is a file the caller names as a peer
//!   (context files hard-linked to each other) is rewritten in place, after a backup of the old
//!   bytes; otherwise it is replaced, which breaks a link to anything else and leaves it as it
//!   was.
//!
//! Atomic recipe (tempfile's `persist` documentation; the durability order of
//! npm/write-file-atomic#64 and delta-io/delta-rs#142): a uniquely named temp file in the
//! target's directory (a rename cannot cross filesystems); write; copy the old file's owner and
//! permissions; `fsync` the file; rename over the target; `fsync` the directory (errors there
//! are tolerated: some network filesystems refuse it after the rename already happened).
//!
//! Limits: the checks and the write are separate system calls, so a local process racing to
//! swap links between them is not stopped; the threat is a repository's committed contents.

use std::fs::{self, File, Metadata, OpenOptions};
use std::io::{self, Read, Seek, Write};
use std::path::{Component, Path, PathBuf};

/// Why a write was refused or failed. In every case nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The existing target is read-only (no write bit for anyone, or the kernel says so).
    #[error("the file is read-only; refusing to replace it")]
    ReadOnly,
    /// The directory the file would be created or replaced in is read-only.
    #[error("its directory {} is read-only (no write permission for this user{})", .0.display(), if is_root() { "; as root, a directory with no write bit for anyone counts as read-only" } else { "" })]
    ReadOnlyDir(PathBuf),
    /// The target path resolves to something that is not a regular file.
    #[error("not a regular file ({0})")]
    NotAFile(&'static str),
    /// The real target lies outside the session root, reached through `link`.
    #[error("{}, outside the session root {}; refusing to write there{}", describe_outside(.link.as_deref(), .real, .root), .root.display(), remedy_outside(.link.as_deref(), .root))]
    Outside {
        /// Where the path really leads.
        real: PathBuf,
        /// The first symbolic link inside the root on the way, if any.
        link: Option<PathBuf>,
        /// The canonical session root.
        root: PathBuf,
    },
    /// The real target lies inside a `.git` directory (git's own configuration and hooks): a
    /// link in the project must not make pas-agent write there.
    #[error("it leads to {}, inside a git directory; refusing to write there", .real.display())]
    GitDir {
        /// Where the path really leads.
        real: PathBuf,
    },
    /// A file that is never written through a link is one.
    #[error("it is a symbolic link{}; pas-agent never opens its own files through a link (delete the link {})", .target.as_ref().map(|t| format!(" to {}", t.display())).unwrap_or_default(), .path.display())]
    Symlink {
        /// The link.
        path: PathBuf,
        /// What it points to, as stored.
        target: Option<PathBuf>,
    },
    /// The replaced file's owner or group could not be kept.
    #[error(
        "the file belongs to uid {uid} gid {gid}, and replacing it would change that ({reason}); run the command as that user, or change the file's owner first"
    )]
    Owner {
        /// The existing file's owner.
        uid: u32,
        /// The existing file's group.
        gid: u32,
        /// The error from `fchown`.
        reason: io::Error,
    },
    /// Any I/O failure (the target is unchanged).
    #[error(transparent)]
    Io(#[from] io::Error),
}

fn describe_outside(link: Option<&Path>, real: &Path, root: &Path) -> String {
    match link {
        Some(link) => format!(
            "the symbolic link {} leads to {}",
            link.strip_prefix(root).unwrap_or(link).display(),
            real.display()
        ),
        None => format!("it resolves to {}", real.display()),
    }
}

/// What to do about a link that leads out of the root. It never suggests writing to the
/// link's target: a committed link names a file a stranger chose (`~/.bashrc`).
fn remedy_outside(link: Option<&Path>, root: &Path) -> String {
    match link {
        Some(link) => format!(
            " (a link like this usually comes with a cloned repository: delete it, `rm {}`, and pas-agent will create a real file in its place)",
            link.strip_prefix(root).unwrap_or(link).display()
        ),
        None => String::new(),
    }
}

impl WriteError {
    /// Whether this is a refusal about *where* the path leads (outside the root, through a
    /// link): those are exit code 6 in every command.
    pub fn is_location(&self) -> bool {
        matches!(
            self,
            WriteError::Outside { .. } | WriteError::Symlink { .. } | WriteError::GitDir { .. }
        )
    }
}

/// Who named a path: pas-agent itself (a context file at the root, the state directory), or
/// the user on the command line (`export -o PATH`), which may lie outside the root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Named {
    /// A path pas-agent chose: it must resolve inside the root.
    ByUs,
    /// A path the user typed: allowed outside the root unless a link inside the root leads
    /// there.
    ByUser,
}

/// How [`WriteGuard::write`] treats an existing file with more than one hard link.
#[derive(Debug, Clone, Copy)]
pub enum Links<'a> {
    /// Replace it (the other links keep the old contents): for pas-agent's own files.
    Replace,
    /// Rewrite it in place when every one of its links is among these paths (context files
    /// hard-linked to each other stay linked); otherwise replace it.
    KeepAmong(&'a [PathBuf]),
}

/// What [`WriteGuard::write`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    /// A new file was created.
    Created,
    /// The file was replaced atomically.
    Replaced,
    /// The file was rewritten in place to keep its hard links.
    InPlace,
}

/// The one place that decides whether a path may be written: inside the session root `root`,
/// not through a link that leaves it, with the permissions, owner and links of what is there
/// respected (see the module docs for the rules).
#[derive(Debug, Clone)]
pub struct WriteGuard {
    root: PathBuf,
}

impl WriteGuard {
    /// A guard for the session root (or another store's directory) `root`, which must exist.
    ///
    /// Errors: `root` cannot be canonicalised.
    pub fn new(root: &Path) -> io::Result<WriteGuard> {
        Ok(WriteGuard {
            root: fs::canonicalize(root)?,
        })
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves `path` and checks it may be written; returns the real path (every link
    /// followed, `..` applied; the last components may not exist yet).
    ///
    /// Errors: [`WriteError::Outside`]; I/O errors while reading links (a loop of more than
    /// 40 links included).
    pub fn check(&self, path: &Path, named: Named) -> Result<PathBuf, WriteError> {
        let (real, link) = resolve(path, &self.root)?;
        let in_git_dir = real
            .strip_prefix(&self.root)
            .is_ok_and(|rel| rel.components().any(|c| c.as_os_str() == ".git"));
        if in_git_dir {
            return Err(WriteError::GitDir { real });
        }
        if real.starts_with(&self.root) || (named == Named::ByUser && link.is_none()) {
            return Ok(real);
        }
        Err(WriteError::Outside {
            real,
            link: link.or_else(|| Some(path.to_path_buf()).filter(|p| p.starts_with(&self.root))),
            root: self.root.clone(),
        })
    }

    /// Creates the directory `dir` and any missing parents (each new one with `mode` on Unix,
    /// and, when root creates it inside a directory owned by someone else, that owner).
    /// Returns the real path.
    ///
    /// Errors: as [`WriteGuard::check`]; [`WriteError::ReadOnlyDir`]; I/O errors.
    pub fn create_dir_all(
        &self,
        dir: &Path,
        named: Named,
        mode: u32,
    ) -> Result<PathBuf, WriteError> {
        let real = self.check(dir, named)?;
        let mut missing = Vec::new();
        let mut existing = real.as_path();
        loop {
            match fs::metadata(existing) {
                Ok(meta) if meta.is_dir() => break,
                Ok(_) => {
                    return Err(io::Error::new(
                        io::ErrorKind::NotADirectory,
                        format!("{} is not a directory", existing.display()),
                    )
                    .into());
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    missing.push(existing.to_path_buf());
                    existing = match existing.parent() {
                        Some(p) => p,
                        None => return Err(e.into()),
                    };
                }
                Err(e) => return Err(e.into()),
            }
        }
        for new in missing.into_iter().rev() {
            let parent = new.parent().unwrap_or(Path::new("/")).to_path_buf();
            let parent_meta = writable_dir(&parent)?;
            let mut builder = fs::DirBuilder::new();
            #[cfg(unix)]
            {
                use std::os::unix::fs::DirBuilderExt;
                builder.mode(mode);
            }
            #[cfg(not(unix))]
            let _ = mode;
            match builder.create(&new) {
                Ok(()) => adopt_owner_path(&new, &parent_meta)?,
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && new.is_dir() => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(real)
    }

    /// Creates a new file at `path` (never following a link there, failing with
    /// `AlreadyExists` when anything is there) with `mode` on Unix, owned like
    /// [`WriteGuard::create_dir_all`] describes.
    ///
    /// Errors: as [`WriteGuard::check`]; [`WriteError::ReadOnlyDir`]; I/O errors.
    pub fn create_new(&self, path: &Path, mode: u32) -> Result<File, WriteError> {
        let real_dir = self.check(parent_of(path), Named::ByUs)?;
        let real = real_dir.join(path.file_name().unwrap_or_default());
        if !real.starts_with(&self.root) {
            return Err(WriteError::Outside {
                real,
                link: None,
                root: self.root.clone(),
            });
        }
        if fs::symlink_metadata(&real).is_ok() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{} already exists", real.display()),
            )
            .into());
        }
        let dir_meta = writable_dir(&real_dir)?;
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(mode).custom_flags(libc::O_NOFOLLOW);
        }
        #[cfg(not(unix))]
        let _ = mode;
        let file = options.open(&real)?;
        adopt_owner(&file, &dir_meta)?;
        Ok(file)
    }

    /// Opens (creating it when missing) the lock file at `path` for reading and writing,
    /// never through a link and never truncating it. Returns the file and whether this call
    /// created it.
    ///
    /// Errors: [`WriteError::Symlink`] when `path` is a link; [`WriteError::NotAFile`] for a
    /// directory, FIFO or other special file; as [`WriteGuard::create_new`].
    pub fn open_lock(&self, path: &Path) -> Result<(File, bool), WriteError> {
        if let Ok(meta) = fs::symlink_metadata(path)
            && meta.file_type().is_symlink()
        {
            return Err(WriteError::Symlink {
                path: path.to_path_buf(),
                target: fs::read_link(path).ok(),
            });
        }
        match self.create_new(path, 0o644) {
            Ok(file) => return Ok((file, true)),
            Err(WriteError::Io(e)) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        let mut options = OpenOptions::new();
        options.read(true).write(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
        }
        let file = options.open(path).map_err(|e| symlink_error(path, e))?;
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(WriteError::NotAFile(kind_of(&meta)));
        }
        Ok((file, false))
    }

    /// Appends `contents` to the file at `path` (created 0644 when missing), for an
    /// append-only log of lines (`.pas-agent/history.jsonl`): the path is checked as by
    /// [`WriteGuard::check`], a link at the last component is refused, and the data is synced
    /// before returning. A last line left without its newline by a writer that was killed
    /// mid-append is ended first, so the torn line stays a line of its own (which readers
    /// skip) instead of fusing with the first line appended now.
    ///
    /// Errors: as [`WriteGuard::check`]; [`WriteError::Symlink`]; [`WriteError::NotAFile`];
    /// I/O errors.
    pub fn append(&self, path: &Path, contents: &[u8]) -> Result<(), WriteError> {
        use std::io::Write as _;
        let real = self.check(path, Named::ByUs)?;
        if let Ok(meta) = fs::symlink_metadata(&real)
            && meta.file_type().is_symlink()
        {
            return Err(WriteError::Symlink {
                path: path.to_path_buf(),
                target: fs::read_link(&real).ok(),
            });
        }
        let mut options = OpenOptions::new();
        options.append(true).read(true).create(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o644);
            options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
        }
        let mut file = options.open(&real).map_err(|e| symlink_error(path, e))?;
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(WriteError::NotAFile(kind_of(&meta)));
        }
        let torn = meta.len() > 0 && {
            let mut last = [0u8; 1];
            file.seek(io::SeekFrom::End(-1))?;
            file.read_exact(&mut last)?;
            last[0] != b'\n'
        };
        if torn {
            let mut whole = Vec::with_capacity(contents.len() + 1);
            whole.push(b'\n');
            whole.extend_from_slice(contents);
            file.write_all(&whole)?;
        } else {
            file.write_all(contents)?;
        }
        file.sync_data()?;
        Ok(())
    }

    /// Deletes the regular file at `path` (for a file pas-agent wrote and owns: an export's own
    /// rules file), after the same checks as [`WriteGuard::check`]: a path that resolves
    /// outside the root, or into `.git`, is refused, and so is a link at the last component
    /// (the link is not what pas-agent wrote).
    ///
    /// Errors: as [`WriteGuard::check`]; [`WriteError::Symlink`]; [`WriteError::NotAFile`];
    /// I/O errors (a missing file is one: `NotFound`).
    pub fn remove(&self, path: &Path, named: Named) -> Result<(), WriteError> {
        let real = self.check(path, named)?;
        let meta = fs::symlink_metadata(path)?;
        if meta.file_type().is_symlink() {
            return Err(WriteError::Symlink {
                path: path.to_path_buf(),
                target: fs::read_link(path).ok(),
            });
        }
        if !meta.is_file() {
            return Err(WriteError::NotAFile(kind_of(&meta)));
        }
        fs::remove_file(&real)?;
        Ok(())
    }

    /// Deletes the directory at `path` and everything in it (a run's directory under
    /// `.pas-agent/runs/`), after the checks of [`WriteGuard::check`]: a path that resolves
    /// outside the root or into `.git` is refused, and so is a link at the last component (the
    /// link is not what pas-agent made, and its target is never emptied). Links inside the
    /// directory are removed, never followed.
    ///
    /// Errors: as [`WriteGuard::check`]; [`WriteError::Symlink`]; [`WriteError::NotAFile`]
    /// when it is not a directory; I/O errors (a missing directory is `NotFound`).
    pub fn remove_dir_all(&self, path: &Path) -> Result<(), WriteError> {
        let real = self.checked_dir(path, Named::ByUs)?;
        fs::remove_dir_all(&real)?;
        Ok(())
    }

    /// Deletes the empty directory at `path` (one pas-agent made for a file it then deleted),
    /// after the same checks as [`WriteGuard::remove_dir_all`]: never through a link, never
    /// outside the root or into `.git`.
    ///
    /// Errors: as [`WriteGuard::check`]; [`WriteError::Symlink`]; [`WriteError::NotAFile`]
    /// for anything but a directory; I/O errors (a directory that is not empty is one).
    pub fn remove_dir(&self, path: &Path, named: Named) -> Result<(), WriteError> {
        let real = self.checked_dir(path, named)?;
        fs::remove_dir(&real)?;
        Ok(())
    }

    fn checked_dir(&self, path: &Path, named: Named) -> Result<PathBuf, WriteError> {
        let real = self.check(path, named)?;
        let meta = fs::symlink_metadata(path)?;
        if meta.file_type().is_symlink() {
            return Err(WriteError::Symlink {
                path: path.to_path_buf(),
                target: fs::read_link(path).ok(),
            });
        }
        if !meta.is_dir() {
            return Err(WriteError::NotAFile(kind_of(&meta)));
        }
        Ok(real)
    }

    /// Renames the regular file `from` to `to`, both checked as by [`WriteGuard::check`]
    /// (inside the root, never into `.git`), `from` never a link.
    ///
    /// Errors: as [`WriteGuard::check`]; [`WriteError::Symlink`]; [`WriteError::NotAFile`];
    /// I/O errors.
    pub fn rename(&self, from: &Path, to: &Path) -> Result<(), WriteError> {
        let real_from = self.check(from, Named::ByUs)?;
        let real_to = self.check(to, Named::ByUs)?;
        let meta = fs::symlink_metadata(from)?;
        if meta.file_type().is_symlink() {
            return Err(WriteError::Symlink {
                path: from.to_path_buf(),
                target: fs::read_link(from).ok(),
            });
        }
        if !meta.is_file() {
            return Err(WriteError::NotAFile(kind_of(&meta)));
        }
        fs::rename(&real_from, &real_to)?;
        Ok(())
    }

    /// Reads the file at `path` as [`read_limited`] does, after the checks of
    /// [`WriteGuard::check`]: a file the repository could have planted (a link under
    /// `.pas-agent/`) is never read from outside the root. `Ok(None)` when nothing is there.
    ///
    /// Errors: [`ReadError::Io`] holding the refusal; those of [`read_limited`].
    pub fn read(&self, path: &Path, limit: u64) -> Result<Option<Vec<u8>>, ReadError> {
        let real = self
            .check(path, Named::ByUs)
            .map_err(|e| ReadError::Io(io::Error::other(e.to_string())))?;
        read_limited(&real, limit)
    }

    /// Replaces (or creates) the file at `path` with `contents` so that a crash at any instant
    /// leaves the old file or the new one, whole; through links that stay inside the root (the
    /// link survives and its target is written). Keeps the old file's mode, owner and group; a
    /// new file gets 0666 minus the umask. Hard links are treated as `links` says.
    ///
    /// Errors: [`WriteError::Outside`]; [`WriteError::ReadOnly`] or
    /// [`WriteError::ReadOnlyDir`]; [`WriteError::NotAFile`] for a directory or other special
    /// file; [`WriteError::Owner`]; I/O errors from any step, after which the target is
    /// unchanged and the temp file removed.
    pub fn write(
        &self,
        path: &Path,
        contents: &[u8],
        named: Named,
        links: Links<'_>,
    ) -> Result<Written, WriteError> {
        self.write_with(path, contents, named, links, Sync::FileAndDir)
    }

    /// [`WriteGuard::write`] without the `fsync` of the directory: the new file's bytes are on
    /// disk before the rename, so a power cut leaves the old file or the new one, whole, but
    /// the rename itself may be lost (the old file is found after the reboot). For a write
    /// whose loss costs nothing a user cannot get back, and that a durable write follows (a
    /// run's `running` record, completed by the after-record). Same errors.
    pub fn write_ordered(
        &self,
        path: &Path,
        contents: &[u8],
        named: Named,
        links: Links<'_>,
    ) -> Result<Written, WriteError> {
        self.write_with(path, contents, named, links, Sync::File)
    }

    /// [`WriteGuard::write`] without `fsync`: the same checks and the same atomic rename, so a
    /// reader sees the old file or the new one, whole, but a power cut (not a crash of the
    /// process) may lose the last write. For files that can be rebuilt or whose content is
    /// worthless after a reboot (a cache, the registry of live processes). Same errors.
    pub fn write_volatile(
        &self,
        path: &Path,
        contents: &[u8],
        named: Named,
        links: Links<'_>,
    ) -> Result<Written, WriteError> {
        self.write_with(path, contents, named, links, Sync::Nothing)
    }

    fn write_with(
        &self,
        path: &Path,
        contents: &[u8],
        named: Named,
        links: Links<'_>,
        sync: Sync,
    ) -> Result<Written, WriteError> {
        let real = self.check(path, named)?;
        let dir = parent_of(&real).to_path_buf();
        let existing = match fs::metadata(&real) {
            Ok(meta) => Some(meta),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(e.into()),
        };
        if let Some(meta) = &existing {
            if !meta.is_file() {
                return Err(WriteError::NotAFile(kind_of(meta)));
            }
            if !writable(meta, &real) {
                return Err(WriteError::ReadOnly);
            }
        }
        if !dir.is_dir() {
            let what = if real == path {
                format!("its directory {} does not exist", dir.display())
            } else {
                format!(
                    "it is a link to {}, whose directory does not exist",
                    real.display()
                )
            };
            return Err(io::Error::new(io::ErrorKind::NotFound, what).into());
        }
        let dir_meta = writable_dir(&dir)?;
        if let (Some(meta), Links::KeepAmong(peers)) = (&existing, links)
            && link_count(meta) > 1
            && all_links_among(meta, &real, peers)
        {
            write_in_place(&real, &dir, contents)?;
            return Ok(Written::InPlace);
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
        match &existing {
            Some(meta) => {
                keep_owner(tmp.as_file(), meta)?;
                tmp.as_file().set_permissions(meta.permissions())?;
            }
            None => {
                adopt_owner(tmp.as_file(), &dir_meta)?;
                if let Some(permissions) = new_file_permissions() {
                    tmp.as_file().set_permissions(permissions)?;
                }
            }
        }
        if sync != Sync::Nothing {
            tmp.as_file().sync_all()?;
        }
        // Close the handle before renaming (Windows cannot rename an open file).
        let tmp_path = tmp.into_temp_path();
        fs::rename(&tmp_path, &real)?;
        // The rename happened: the temp path no longer exists, so disarm its delete-on-drop.
        let _ = tmp_path.keep();
        if sync == Sync::FileAndDir {
            sync_dir(&dir);
        }
        Ok(if existing.is_some() {
            Written::Replaced
        } else {
            Written::Created
        })
    }
}

/// What a write `fsync`s: the three strengths of [`WriteGuard::write`],
/// [`WriteGuard::write_ordered`] and [`WriteGuard::write_volatile`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sync {
    Nothing,
    File,
    FileAndDir,
}

/// `path`'s parent, `.` for a bare name.
fn parent_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

fn symlink_error(path: &Path, e: io::Error) -> WriteError {
    #[cfg(unix)]
    if e.raw_os_error() == Some(libc::ELOOP) {
        return WriteError::Symlink {
            path: path.to_path_buf(),
            target: fs::read_link(path).ok(),
        };
    }
    let _ = path;
    WriteError::Io(e)
}

/// Resolves `path` the way the OS would (absolute against the current directory; every link
/// followed, `..` taken after the links before it), also when its last components do not
/// exist. Returns the real path and the first link on the way that sits inside `root`.
fn resolve(path: &Path, root: &Path) -> io::Result<(PathBuf, Option<PathBuf>)> {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()?.join(path)
    };
    let mut pending: Vec<std::ffi::OsString> = Vec::new();
    let mut current = PathBuf::new();
    push_components(&absolute, &mut pending, &mut current);
    let mut hops = 0;
    let mut first_link = None;
    while let Some(part) = pending.pop() {
        if part == ".." {
            current.pop();
            continue;
        }
        let next = current.join(&part);
        match fs::symlink_metadata(&next) {
            Ok(meta) if meta.file_type().is_symlink() => {
                hops += 1;
                if hops > 40 {
                    return Err(io::Error::other(format!(
                        "{}: too many levels of symbolic links",
                        path.display()
                    )));
                }
                let target = fs::read_link(&next)?;
                if first_link.is_none() && current.starts_with(root) {
                    first_link = Some(next.clone());
                }
                push_components(&target, &mut pending, &mut current);
            }
            _ => current = next,
        }
    }
    Ok((current, first_link))
}

/// Puts `p`'s components on the `pending` stack (next component last); an absolute `p`
/// restarts `current` from its root.
fn push_components(p: &Path, pending: &mut Vec<std::ffi::OsString>, current: &mut PathBuf) {
    let mut anchor = PathBuf::new();
    let mut parts = Vec::new();
    for c in p.components() {
        match c {
            Component::Prefix(_) | Component::RootDir => anchor.push(c.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => parts.push(std::ffi::OsString::from("..")),
            Component::Normal(n) => parts.push(n.to_os_string()),
        }
    }
    if !anchor.as_os_str().is_empty() {
        *current = anchor;
    }
    pending.extend(parts.into_iter().rev());
}

/// A readable name for a file's type, for messages.
pub fn kind_of(meta: &Metadata) -> &'static str {
    let t = meta.file_type();
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if t.is_socket() {
            return "a socket";
        }
        if t.is_block_device() || t.is_char_device() {
            return "a device";
        }
    }
    if t.is_dir() {
        "a directory"
    } else if t.is_symlink() {
        "a symbolic link"
    } else if t.is_file() {
        "a regular file"
    } else {
        "a special file"
    }
}

/// Whether this process runs with effective uid 0.
#[cfg(unix)]
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Whether this process runs with effective uid 0 (never on Windows).
#[cfg(not(unix))]
pub fn is_root() -> bool {
    false
}

/// Whether the file or directory `meta` (at `path`) may be written by this process. Root:
/// when anyone has a write bit. Others: `access(2)` with the effective ids.
#[cfg(unix)]
fn writable(meta: &Metadata, path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    if meta.permissions().mode() & 0o222 == 0 {
        return false;
    }
    if is_root() {
        return true;
    }
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return true;
    };
    // SAFETY: `c` is a valid NUL-terminated path for the duration of the call.
    unsafe { libc::faccessat(libc::AT_FDCWD, c.as_ptr(), libc::W_OK, libc::AT_EACCESS) == 0 }
}

#[cfg(not(unix))]
fn writable(meta: &Metadata, _path: &Path) -> bool {
    !meta.permissions().readonly()
}

/// The metadata of `dir` when this process may create and rename entries in it.
fn writable_dir(dir: &Path) -> Result<Metadata, WriteError> {
    let meta = fs::metadata(dir)?;
    if !writable(&meta, dir) {
        return Err(WriteError::ReadOnlyDir(dir.to_path_buf()));
    }
    Ok(meta)
}

#[cfg(unix)]
fn link_count(meta: &Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt;
    meta.nlink()
}

#[cfg(not(unix))]
fn link_count(_meta: &Metadata) -> u64 {
    1
}

/// Whether every hard link of the file `meta` (at `real`) is one of `peers` (or `real`).
#[cfg(unix)]
fn all_links_among(meta: &Metadata, real: &Path, peers: &[PathBuf]) -> bool {
    use std::os::unix::fs::MetadataExt;
    let mut seen: Vec<PathBuf> = vec![real.to_path_buf()];
    for peer in peers {
        let Ok(canon) = fs::canonicalize(peer) else {
            continue;
        };
        if seen.contains(&canon) {
            continue;
        }
        if let Ok(m) = fs::metadata(&canon)
            && m.dev() == meta.dev()
            && m.ino() == meta.ino()
        {
            seen.push(canon);
        }
    }
    seen.len() as u64 >= meta.nlink()
}

#[cfg(not(unix))]
fn all_links_among(_meta: &Metadata, _real: &Path, _peers: &[PathBuf]) -> bool {
    false
}

/// Rewrites `real` in place (keeping its inode, so its hard links, owner and mode), after a
/// backup of the old bytes in a temp file next to it that is removed once the new bytes are
/// on disk. A crash in between leaves the backup (`.NAME.XXXXXX.bak`).
fn write_in_place(real: &Path, dir: &Path, contents: &[u8]) -> io::Result<()> {
    let old = fs::read(real)?;
    let name = real
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut backup = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".bak")
        .tempfile_in(dir)?;
    backup.write_all(&old)?;
    backup.as_file().sync_all()?;
    let mut file = OpenOptions::new().write(true).open(real)?;
    file.rewind()?;
    file.write_all(contents)?;
    file.set_len(contents.len() as u64)?;
    file.sync_all()?;
    drop(backup);
    Ok(())
}

/// Gives the temp file the replaced file's owner and group when they differ from its own.
#[cfg(unix)]
fn keep_owner(tmp: &File, old: &Metadata) -> Result<(), WriteError> {
    use std::os::unix::fs::MetadataExt;
    let now = tmp.metadata()?;
    if now.uid() == old.uid() && now.gid() == old.gid() {
        return Ok(());
    }
    std::os::unix::fs::fchown(tmp, Some(old.uid()), Some(old.gid())).map_err(|reason| {
        WriteError::Owner {
            uid: old.uid(),
            gid: old.gid(),
            reason,
        }
    })
}

#[cfg(not(unix))]
fn keep_owner(_tmp: &File, _old: &Metadata) -> Result<(), WriteError> {
    Ok(())
}

/// The owner and group that root gives what it creates in `dir`: the directory's, when
/// someone else owns it (the user's next command must be able to replace the file).
#[cfg(unix)]
fn owner_for_new(dir: &Metadata) -> Option<(u32, u32)> {
    use std::os::unix::fs::MetadataExt;
    (is_root() && dir.uid() != 0).then(|| (dir.uid(), dir.gid()))
}

/// Root creating a file in a directory owned by someone else gives it to that owner.
#[cfg(unix)]
fn adopt_owner(file: &File, dir: &Metadata) -> io::Result<()> {
    match owner_for_new(dir) {
        Some((uid, gid)) => std::os::unix::fs::fchown(file, Some(uid), Some(gid)),
        None => Ok(()),
    }
}

#[cfg(not(unix))]
fn adopt_owner(_file: &File, _dir: &Metadata) -> io::Result<()> {
    Ok(())
}

/// [`adopt_owner`] for a directory just made, by its path (never following a link there).
#[cfg(unix)]
fn adopt_owner_path(path: &Path, dir: &Metadata) -> io::Result<()> {
    match owner_for_new(dir) {
        Some((uid, gid)) => std::os::unix::fs::lchown(path, Some(uid), Some(gid)),
        None => Ok(()),
    }
}

#[cfg(not(unix))]
fn adopt_owner_path(_path: &Path, _dir: &Metadata) -> io::Result<()> {
    Ok(())
}

/// Removes temp files left by writers that were killed mid-write: regular files in `dir`
/// named like the atomic writer's temp files (`.NAME.XXXXXX.tmp`, six letters or digits).
/// Call only while holding the lock that every writer of `dir` holds while its temp file
/// exists: then any such file belongs to a writer that is gone. Returns how many were removed;
/// errors are ignored (a temp file left is harmless).
pub fn remove_stale_temps(dir: &Path) -> usize {
    remove_stale_temps_of(dir, None)
}

/// [`remove_stale_temps`], limited to the temp files of the files named in `names` when given
/// (for a directory that also holds other people's files, such as the session root with its
/// context files). The same rule applies: call it only under the lock every writer holds.
pub fn remove_stale_temps_of(dir: &Path, names: Option<&[&str]>) -> usize {
    temp_files_of(dir, names)
        .iter()
        .filter(|path| fs::remove_file(path).is_ok())
        .count()
}

/// Removes temp files of the atomic writer's pattern in `dir` that were last written more
/// than `age` ago: for the per-user directories written without a lock (the summary cache,
/// the kept copies of sessions), where a writer killed mid-write (a launcher killed while it
/// saved) leaves one that no lock can prove stale. A writer holds its temp file for
/// milliseconds, so one an hour old is a dead writer's. Returns how many were removed; errors
/// are ignored.
pub fn remove_old_temps(dir: &Path, age: std::time::Duration) -> usize {
    temp_files_of(dir, None)
        .iter()
        .filter(|path| {
            fs::symlink_metadata(path)
                .and_then(|m| m.modified())
                .is_ok_and(|t| t.elapsed().is_ok_and(|a| a > age))
        })
        .filter(|path| fs::remove_file(path).is_ok())
        .count()
}

/// How old a temp file in a directory without a lock must be to be taken for a dead writer's
/// ([`remove_old_temps`]).
pub const OLD_TEMP: std::time::Duration = std::time::Duration::from_secs(3600);

/// The regular files in `dir` named like the atomic writer's temp files (`.NAME.XXXXXX.tmp`),
/// limited to the temp files of `names` when given, without links or directories. Whether
/// they are stale depends on the lock (see [`remove_stale_temps`]); nothing is removed.
pub fn temp_files_of(dir: &Path, names: Option<&[&str]>) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !is_temp_name(name) {
            continue;
        }
        if let Some(names) = names
            && !names
                .iter()
                .any(|n| name.starts_with(&format!(".{n}.")) && name.len() == n.len() + 12)
        {
            continue;
        }
        // Not through links, and never a directory.
        if entry.file_type().is_ok_and(|t| t.is_file()) {
            found.push(entry.path());
        }
    }
    found.sort();
    found
}

/// `.NAME.XXXXXX.tmp`, as [`WriteGuard::write`] names its temp files.
fn is_temp_name(name: &str) -> bool {
    let Some(stem) = name.strip_prefix('.').and_then(|n| n.strip_suffix(".tmp")) else {
        return false;
    };
    match stem.rsplit_once('.') {
        Some((base, rand)) => {
            !base.is_empty() && rand.len() == 6 && rand.bytes().all(|b| b.is_ascii_alphanumeric())
        }
        None => false,
    }
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

/// Reads at most `limit` bytes of the regular file `path` (opened without blocking, so a FIFO
/// is reported, never waited on). Returns `Ok(None)` when the file does not exist (a dangling
/// link included), `Err(NotAFile(kind))` for anything but a regular file and
/// `Err(TooLarge(size))` when it is larger than `limit`.
pub fn read_limited(path: &Path, limit: u64) -> Result<Option<Vec<u8>>, ReadError> {
    // What a link in a repository leads to is looked at before it is opened: opening a device
    // can have effects of its own (a tape rewinds, a terminal becomes the controlling one).
    match fs::metadata(path) {
        Ok(meta) if !meta.is_file() => return Err(ReadError::NotAFile(kind_of(&meta))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        _ => {}
    }
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        // A FIFO put there since the check must still not block the open, nor a terminal
        // become ours.
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    let mut file = match options.open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        // A socket cannot be opened (ENXIO): report what it is.
        Err(e) => {
            return Err(match fs::metadata(path) {
                Ok(meta) if !meta.is_file() => ReadError::NotAFile(kind_of(&meta)),
                _ => ReadError::Io(e),
            });
        }
    };
    let meta = file.metadata().map_err(ReadError::Io)?;
    if !meta.is_file() {
        return Err(ReadError::NotAFile(kind_of(&meta)));
    }
    // Sized from the metadata: one read and one to see the end, not a doubling from 32 bytes
    // (ten reads for a 7 KB summary on the prompt's path). The limit still bounds it.
    let mut buf = Vec::with_capacity(usize::try_from(meta.len().min(limit) + 1).unwrap_or(0));
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
    /// The path is not a regular file (a directory, FIFO, socket, device): what it is.
    #[error("it is {0}, not a regular file")]
    NotAFile(&'static str),
    /// Opening or reading failed (a missing file is not an error but `Ok(None)`).
    #[error(transparent)]
    Io(io::Error),
}

/// pas-agent's per-user state directory: `$PAS_AGENT_STATE_DIR`, else
/// `$XDG_STATE_HOME/pas-agent`, else `$HOME/.local/state/pas-agent` (the XDG base directory
/// default for state). Holds the run registry and the last good session of each project.
/// `None` when none of them is set.
pub fn state_dir() -> Option<PathBuf> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("PAS_AGENT_STATE_DIR")
        .or_else(|| var("XDG_STATE_HOME").map(|d| d.join("pas-agent")))
        .or_else(|| var("HOME").map(|h| h.join(".local/state/pas-agent")))
}

/// pas-agent's per-user cache directory: `$XDG_RUNTIME_DIR/pas-agent` (per-user, emptied at
/// logout), else `pas-agent` under `$XDG_CACHE_HOME`, `$HOME/.cache` or `%LOCALAPPDATA%`. Only
/// absolute settings count; `None` when none is set. Holds the prompt's stamps, the summary
/// cache and the fingerprint cache, each in a directory of its own.
pub fn cache_dir() -> Option<PathBuf> {
    let abs = |v: Option<std::ffi::OsString>| v.map(PathBuf::from).filter(|p| p.is_absolute());
    let base = abs(std::env::var_os("XDG_RUNTIME_DIR"))
        .or_else(|| abs(std::env::var_os("XDG_CACHE_HOME")))
        .or_else(|| abs(std::env::var_os("HOME")).map(|h| h.join(".cache")))
        .or_else(|| abs(std::env::var_os("LOCALAPPDATA")))?;
    Some(base.join("pas-agent"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_temp_files_of_dead_writers_go_and_fresh_ones_stay() {
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join(".3.json.a1b2c3.tmp");
        let fresh = dir.path().join(".3.json.d4e5f6.tmp");
        let other = dir.path().join("3.json");
        for p in [&old, &fresh, &other] {
            fs::write(p, "x").unwrap();
        }
        let long_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
        for p in [&old, &other] {
            File::options()
                .write(true)
                .open(p)
                .unwrap()
                .set_modified(long_ago)
                .unwrap();
        }
        assert_eq!(remove_old_temps(dir.path(), OLD_TEMP), 1);
        assert!(!old.exists() && fresh.exists() && other.exists());
    }

    #[test]
    fn an_append_after_a_torn_line_starts_a_line_of_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let g = guard(dir.path());
        let log = g.root().join("log.jsonl");
        for (before, want) in [
            ("", "{\"b\":2}\n"),
            ("{\"a\":1}\n", "{\"a\":1}\n{\"b\":2}\n"),
            ("{\"a\":1}\n{\"to", "{\"a\":1}\n{\"to\n{\"b\":2}\n"),
            ("{\"to", "{\"to\n{\"b\":2}\n"),
        ] {
            fs::write(&log, before).unwrap();
            g.append(&log, b"{\"b\":2}\n").unwrap();
            assert_eq!(fs::read_to_string(&log).unwrap(), want, "{before:?}");
        }
    }

    fn guard(dir: &Path) -> WriteGuard {
        WriteGuard::new(dir).unwrap()
    }

    #[cfg(unix)]
    #[test]
    fn writes_through_an_inside_link_and_keeps_mode() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let g = guard(dir.path());
        let real = g.root().join("AGENTS.md");
        fs::write(&real, "old").unwrap();
        fs::set_permissions(&real, fs::Permissions::from_mode(0o640)).unwrap();
        std::os::unix::fs::symlink("AGENTS.md", g.root().join("CLAUDE.md")).unwrap();
        g.write(
            &g.root().join("CLAUDE.md"),
            b"new",
            Named::ByUs,
            Links::Replace,
        )
        .unwrap();
        assert!(
            fs::symlink_metadata(g.root().join("CLAUDE.md"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(fs::read_to_string(&real).unwrap(), "new");
        let mode = fs::metadata(&real).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
        let leftovers: Vec<_> = fs::read_dir(g.root())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty());
    }

    #[cfg(unix)]
    #[test]
    fn dangling_inside_link_creates_its_target() {
        let dir = tempfile::tempdir().unwrap();
        let g = guard(dir.path());
        std::os::unix::fs::symlink("sub/target.md", g.root().join("link.md")).unwrap();
        fs::create_dir(g.root().join("sub")).unwrap();
        g.write(&g.root().join("link.md"), b"x", Named::ByUs, Links::Replace)
            .unwrap();
        assert_eq!(
            fs::read_to_string(g.root().join("sub/target.md")).unwrap(),
            "x"
        );
    }

    #[cfg(unix)]
    #[test]
    fn links_and_dotdot_leading_out_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("repo");
        let outside = tmp.path().join("outside");
        fs::create_dir_all(root.join("sub")).unwrap();
        fs::create_dir_all(&outside).unwrap();
        fs::write(outside.join("keys"), "KEEP").unwrap();
        let g = guard(&root);
        let link = |name: &str, to: &Path| std::os::unix::fs::symlink(to, root.join(name)).unwrap();
        link("CLAUDE.md", &outside.join("keys"));
        link("docs", &outside);
        link("dangling.md", &outside.join("new.md"));
        std::os::unix::fs::symlink("../../outside/keys", root.join("sub/rel.md")).unwrap();
        link("chain1", Path::new("chain2"));
        link("chain2", &outside.join("keys"));
        for (path, named) in [
            ("CLAUDE.md", Named::ByUs),
            ("CLAUDE.md", Named::ByUser),
            ("docs/x.md", Named::ByUser),
            ("dangling.md", Named::ByUs),
            ("sub/rel.md", Named::ByUs),
            ("chain1", Named::ByUser),
            ("docs/../repo/../outside/keys", Named::ByUs),
        ] {
            let err = g
                .write(&root.join(path), b"bad", named, Links::Replace)
                .unwrap_err();
            assert!(matches!(err, WriteError::Outside { .. }), "{path}: {err}");
            assert!(err.to_string().contains("outside"), "{err}");
        }
        assert_eq!(fs::read_to_string(outside.join("keys")).unwrap(), "KEEP");
        assert!(!outside.join("new.md").exists());
        assert!(!outside.join("x.md").exists());
        // The user typing the outside path itself is allowed.
        g.write(
            &outside.join("mine.md"),
            b"ok",
            Named::ByUser,
            Links::Replace,
        )
        .unwrap();
        assert!(matches!(
            g.write(&outside.join("ours.md"), b"no", Named::ByUs, Links::Replace),
            Err(WriteError::Outside { .. })
        ));
    }

    #[test]
    fn refuses_read_only_files() {
        let dir = tempfile::tempdir().unwrap();
        let g = guard(dir.path());
        let path = g.root().join("f");
        fs::write(&path, "keep").unwrap();
        let mut perms = fs::metadata(&path).unwrap().permissions();
        perms.set_readonly(true);
        fs::set_permissions(&path, perms).unwrap();
        assert!(matches!(
            g.write(&path, b"x", Named::ByUs, Links::Replace),
            Err(WriteError::ReadOnly)
        ));
        assert_eq!(fs::read_to_string(&path).unwrap(), "keep");
    }

    #[cfg(unix)]
    #[test]
    fn lock_files_are_never_links_and_never_truncated() {
        let tmp = tempfile::tempdir().unwrap();
        let g = guard(tmp.path());
        fs::write(tmp.path().join("victim"), "data").unwrap();
        std::os::unix::fs::symlink("victim", g.root().join("l.lock")).unwrap();
        assert!(matches!(
            g.open_lock(&g.root().join("l.lock")),
            Err(WriteError::Symlink { .. })
        ));
        let (_, created) = g.open_lock(&g.root().join("victim")).unwrap();
        assert!(!created);
        assert_eq!(
            fs::read_to_string(tmp.path().join("victim")).unwrap(),
            "data"
        );
        let (_, created) = g.open_lock(&g.root().join("new.lock")).unwrap();
        assert!(created);
    }

    /// Every file under `dir` (not following links) with its bytes, and every link with its
    /// target: a snapshot to prove nothing there changed.
    #[cfg(unix)]
    fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
        let mut out = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in fs::read_dir(&d).unwrap().flatten() {
                let t = e.file_type().unwrap();
                if t.is_dir() {
                    stack.push(e.path());
                    out.push((e.path(), b"<dir>".to_vec()));
                } else if t.is_symlink() {
                    let target = fs::read_link(e.path()).unwrap();
                    out.push((e.path(), target.to_string_lossy().as_bytes().to_vec()));
                } else {
                    out.push((e.path(), fs::read(e.path()).unwrap()));
                }
            }
        }
        out.sort();
        out
    }

    #[cfg(unix)]
    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// Whatever tree of links a repository holds, a write pas-agent chooses either lands
        /// inside the root or is refused, and nothing outside changes.
        #[test]
        fn no_link_tree_leads_a_write_outside(
            entries in proptest::collection::vec((0usize..6, 0usize..4, 0usize..10), 1..8),
            target in (0usize..6, proptest::option::of(0usize..6)),
        ) {
            let names = ["a", "b", "c", "CLAUDE.md", ".pas-agent", "docs"];
            let links = [
                "../outside/keys", "../outside", "a", "b/c", "..", "../repo/a",
                "../outside/new", ".", "docs/../../outside/keys", "/",
            ];
            let tmp = tempfile::tempdir().unwrap();
            let root = tmp.path().join("repo");
            let outside = tmp.path().join("outside");
            fs::create_dir_all(&root).unwrap();
            fs::create_dir_all(outside.join("sub")).unwrap();
            fs::write(outside.join("keys"), "KEEP").unwrap();
            for (name, kind, link) in entries {
                let p = root.join(names[name]);
                if fs::symlink_metadata(&p).is_ok() {
                    continue;
                }
                match kind {
                    0 => fs::create_dir(&p).unwrap(),
                    1 => fs::write(&p, "mine").unwrap(),
                    _ => std::os::unix::fs::symlink(links[link], &p).unwrap(),
                }
            }
            let before = snapshot(&outside);
            let g = WriteGuard::new(&root).unwrap();
            let mut path = root.join(names[target.0]);
            if let Some(second) = target.1 {
                path = path.join(names[second]);
            }
            let wrote = g.write(&path, b"block", Named::ByUs, Links::Replace);
            if let Some(parent) = path.parent() {
                let _ = g.create_dir_all(parent, Named::ByUs, 0o777);
            }
            let _ = g.create_new(&path.with_extension("new"), 0o600);
            let _ = g.open_lock(&path.with_extension("lock"));
            proptest::prop_assert_eq!(snapshot(&outside), before);
            if wrote.is_ok() {
                let real = g.check(&path, Named::ByUs).unwrap();
                proptest::prop_assert!(real.starts_with(g.root()));
                proptest::prop_assert_eq!(fs::read(&real).unwrap(), b"block".to_vec());
            }
        }
    }

    #[test]
    fn temp_names() {
        assert!(is_temp_name(".session.json.a1B2c3.tmp"));
        assert!(is_temp_name(".runs.json.zzzzzz.tmp"));
        assert!(!is_temp_name("session.json"));
        assert!(!is_temp_name(".session.json.tmp"));
        assert!(!is_temp_name(".x.toolong1.tmp"));
        assert!(!is_temp_name("..abcdef.tmp"));
    }

    /// A device is named for what it is and never opened (a link in a repository may lead to
    /// one); `/dev/tty` would otherwise become the controlling terminal or block.
    #[cfg(unix)]
    #[test]
    fn read_limited_never_opens_a_device() {
        for dev in ["/dev/null", "/dev/zero", "/dev/tty"] {
            if Path::new(dev).exists() {
                assert!(
                    matches!(
                        read_limited(Path::new(dev), 10),
                        Err(ReadError::NotAFile(_))
                    ),
                    "{dev}"
                );
            }
        }
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("/dev/zero", dir.path().join("CLAUDE.md")).unwrap();
        assert!(matches!(
            read_limited(&dir.path().join("CLAUDE.md"), 10),
            Err(ReadError::NotAFile(_))
        ));
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
        assert!(matches!(
            read_limited(dir.path(), 5),
            Err(ReadError::NotAFile("a directory"))
        ));
    }
}
