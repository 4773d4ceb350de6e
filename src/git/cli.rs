//! Git through the `git` executable: the fallback for what gix cannot read. Every call runs
//! with `--no-optional-locks` (no index refresh racing the user's own git), `LC_ALL=C`, no
//! terminal prompts, and without inherited `GIT_DIR`-style variables.
//! Output formats: git-status(1) "Porcelain Format Version 2", git-diff(1) `--name-status -z`.

use std::path::Path;
use std::process::{Command, Stdio};

use super::{
    Detail, Entry, Found, GitError, GitResult, Head, RawStatus, TreeChange, path_bytes, record_path,
};
use crate::model::{CommitRef, FileStatus};

fn git(dir: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.arg("-C")
        .arg(dir)
        .arg("--no-optional-locks")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("LC_ALL", "C")
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .stdout(Stdio::piped());
    for var in [
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_COMMON_DIR",
        "GIT_OBJECT_DIRECTORY",
        "GIT_PREFIX",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

/// Runs git; `Ok(None)` when it exits non-zero (the caller decides what that means).
fn run(dir: &Path, args: &[&str]) -> GitResult<Option<Vec<u8>>> {
    let out = git(dir)
        .args(args)
        .output()
        .map_err(|e| GitError(format!("cannot run git: {e}")))?;
    if out.status.success() {
        Ok(Some(out.stdout))
    } else {
        Ok(None)
    }
}

fn run_ok(dir: &Path, args: &[&str]) -> GitResult<Vec<u8>> {
    let out = git(dir)
        .args(args)
        .output()
        .map_err(|e| GitError(format!("cannot run git: {e}")))?;
    if out.status.success() {
        Ok(out.stdout)
    } else {
        Err(GitError(format!(
            "`git {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

pub(crate) fn discover(dir: &Path) -> GitResult<Found> {
    // Asked separately from `--show-toplevel`: in a bare repository that one fails, and a
    // combined call would read as "not a repository" and put a session inside the bare one.
    let args = ["rev-parse", "--is-bare-repository", "--is-inside-git-dir"];
    let out = git(dir)
        .args(args)
        .output()
        .map_err(|e| GitError(format!("cannot run git: {e}")))?;
    if !out.status.success() {
        let err = text(&out.stderr);
        // Only this answer means "no repository" (messages are in English: `LC_ALL=C`). Any
        // other failure (a broken git, a repository git refuses to use) leaves it unknown.
        if err.contains("not a git repository") {
            return Ok(Found::None);
        }
        return Err(GitError(format!(
            "`git {}` failed: {}",
            args.join(" "),
            err.trim()
        )));
    }
    let out = text(&out.stdout);
    let mut lines = out.lines();
    let bare = lines.next() == Some("true");
    let inside_git_dir = lines.next() == Some("true");
    if bare {
        return Ok(Found::Bare);
    }
    if inside_git_dir {
        return Ok(Found::InsideGitDir);
    }
    let top = run_ok(dir, &["rev-parse", "--show-toplevel"])?;
    let top = text(&top);
    match top.lines().next() {
        Some(top) if !top.is_empty() => Ok(Found::WorkTree {
            top: Path::new(top)
                .canonicalize()
                .map_err(|e| GitError(format!("resolving {top}: {e}")))?,
            native: None,
        }),
        _ => Ok(Found::Bare),
    }
}

pub(crate) fn head(top: &Path) -> GitResult<Head> {
    // Not `--short`: it says `heads/main` when a tag is also named `main`, where gix and
    // `git status` say `main`.
    let branch = run(top, &["symbolic-ref", "--quiet", "HEAD"])?.map(|b| {
        let full = text(&b).trim().to_string();
        full.strip_prefix("refs/heads/")
            .map_or_else(|| full.clone(), str::to_string)
    });
    let commit = run(top, &["rev-parse", "--verify", "--quiet", "HEAD"])?
        .map(|b| text(&b).trim().to_string());
    Ok(Head { branch, commit })
}

pub(crate) fn status(
    top: &Path,
    detail: Detail,
    in_scope: &dyn Fn(&str) -> bool,
) -> GitResult<(Head, RawStatus)> {
    let out = run_ok(
        top,
        &[
            "status",
            "--porcelain=v2",
            "-z",
            "--branch",
            "--untracked-files=all",
        ],
    )?;
    let (head, raw) = parse_porcelain_v2(&out);
    let mut files = RawStatus::new();
    for (path, entry) in raw {
        if in_scope(&path) {
            files.entry(path).or_default().merge(entry);
            if detail == Detail::Dirty {
                break;
            }
        }
    }
    Ok((head, files))
}

/// The first `n` space-separated fields of a porcelain record (the last holds the rest).
fn fields(rest: &[u8], n: usize) -> Vec<&[u8]> {
    rest.splitn(n, |&b| b == b' ').collect()
}

/// Parses `git status --porcelain=v2 -z --branch` output. Paths are kept as bytes until
/// [`record_path`] writes them (reversibly, whatever their encoding).
pub(crate) fn parse_porcelain_v2(out: &[u8]) -> (Head, Vec<(String, Entry)>) {
    let mut head = Head::default();
    let mut files = Vec::new();
    let mut records = out.split(|&b| b == 0);
    let letters = |xy: &[u8]| {
        let pick = |c: Option<&u8>| c.map(|&c| c as char).filter(|&c| c != '.');
        (pick(xy.first()), pick(xy.get(1)))
    };
    while let Some(record) = records.next() {
        if let Some(rest) = record.strip_prefix(b"# branch.oid ") {
            let rest = text(rest);
            head.commit = (rest != "(initial)").then_some(rest);
        } else if let Some(rest) = record.strip_prefix(b"# branch.head ") {
            let rest = text(rest);
            head.branch = (rest != "(detached)").then_some(rest);
        } else if let Some(rest) = record.strip_prefix(b"1 ") {
            if let [xy, _, _, _, _, _, _, path] = fields(rest, 8).as_slice() {
                let (x, y) = letters(xy);
                files.push((
                    record_path(path),
                    Entry {
                        x,
                        y,
                        ..Entry::default()
                    },
                ));
            }
        } else if let Some(rest) = record.strip_prefix(b"2 ") {
            let from = records.next().map(record_path);
            if let [xy, _, _, _, _, _, _, _, path] = fields(rest, 9).as_slice() {
                let (x, y) = letters(xy);
                files.push((
                    record_path(path),
                    Entry {
                        x,
                        y,
                        from,
                        untracked: false,
                    },
                ));
            }
        } else if let Some(rest) = record.strip_prefix(b"u ") {
            if let Some(path) = fields(rest, 10).get(9) {
                files.push((
                    record_path(path),
                    Entry {
                        x: Some('U'),
                        y: Some('U'),
                        ..Entry::default()
                    },
                ));
            }
        } else if let Some(path) = record.strip_prefix(b"? ") {
            files.push((
                record_path(path),
                Entry {
                    untracked: true,
                    ..Entry::default()
                },
            ));
        }
    }
    Entry::sort_rows(&mut files);
    (head, files)
}

pub(crate) fn commits_between(
    top: &Path,
    before: Option<&str>,
    after: &str,
    limit: usize,
) -> GitResult<Vec<CommitRef>> {
    let range = match before {
        Some(b) => format!("{b}..{after}"),
        None => after.to_string(),
    };
    let max = format!("--max-count={limit}");
    let out = run_ok(top, &["log", "-z", "--format=%H %s", &max, &range, "--"])?;
    let mut commits: Vec<CommitRef> = out
        .split(|&b| b == 0)
        .filter(|r| !r.is_empty())
        .map(|r| {
            let r = text(r);
            let (id, summary) = r.split_once(' ').unwrap_or((r.as_str(), ""));
            CommitRef {
                id: id.trim().to_string(),
                summary: summary.to_string(),
                extra: Default::default(),
            }
        })
        .collect();
    commits.reverse();
    Ok(commits)
}

pub(crate) fn tree_changes(
    top: &Path,
    before: Option<&str>,
    after: &str,
) -> GitResult<Vec<TreeChange>> {
    // For a run that started before the first commit: the empty tree, whose id depends on
    // the repository's hash (SHA-1 or SHA-256), so git computes it.
    let empty;
    let before = match before {
        Some(b) => b,
        None => {
            empty = text(&run_ok(top, &["hash-object", "-t", "tree", "--stdin"])?)
                .trim()
                .to_string();
            empty.as_str()
        }
    };
    let out = run_ok(
        top,
        &[
            "diff",
            "--no-ext-diff",
            "--name-status",
            "-z",
            "-M",
            before,
            after,
            "--",
        ],
    )?;
    Ok(parse_name_status(&out))
}

/// Parses `git diff --name-status -z` output: `X\0path\0`, or `R<score>\0old\0new\0`.
pub(crate) fn parse_name_status(out: &[u8]) -> Vec<TreeChange> {
    let mut fields = out.split(|&b| b == 0);
    let mut changes = Vec::new();
    while let Some(code) = fields.next() {
        let status = match code.first() {
            Some(b'A') | Some(b'C') => FileStatus::Added,
            Some(b'D') => FileStatus::Deleted,
            Some(b'R') => {
                let from = fields.next().map(record_path).unwrap_or_default();
                FileStatus::Renamed { from }
            }
            Some(_) => FileStatus::Modified,
            None => continue,
        };
        if code.starts_with(b"C") {
            fields.next();
        }
        if let Some(path) = fields.next() {
            changes.push(TreeChange {
                path: record_path(path),
                status,
            });
        }
    }
    TreeChange::sort_by_path(&mut changes);
    changes
}

/// Whether the index holds `path` (`git ls-files`, the path taken literally).
pub(crate) fn tracked(top: &Path, path: &str) -> GitResult<bool> {
    let out = run_ok(top, &["--literal-pathspecs", "ls-files", "-z", "--", path])?;
    Ok(!out.is_empty())
}

/// Whether the ignore rules exclude the file `path` (`git check-ignore --no-index`, which
/// exits 0 for an ignored path and 1 for one that is not).
pub(crate) fn ignored(top: &Path, path: &str) -> GitResult<bool> {
    let out = git(top)
        .args(["check-ignore", "-q", "--no-index", "--", path])
        .output()
        .map_err(|e| GitError(format!("cannot run git: {e}")))?;
    match out.status.code() {
        Some(0) => Ok(true),
        Some(1) => Ok(false),
        _ => Err(GitError(format!(
            "`git check-ignore` failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))),
    }
}

/// The repository's `info/exclude` file (`git rev-parse --git-path info/exclude`).
pub(crate) fn exclude_file(top: &Path) -> GitResult<std::path::PathBuf> {
    let out = run_ok(top, &["rev-parse", "--git-path", "info/exclude"])?;
    let path = text(&out).trim_end_matches(['\n', '\r']).to_string();
    Ok(top.join(path))
}

pub(crate) fn blob_at(top: &Path, commit: &str, path: &str) -> GitResult<Option<Vec<u8>>> {
    let mut spec = format!("{commit}:").into_bytes();
    spec.extend(path_bytes(path));
    #[cfg(unix)]
    let spec = {
        use std::os::unix::ffi::OsStringExt;
        std::ffi::OsString::from_vec(spec)
    };
    #[cfg(not(unix))]
    let spec = std::ffi::OsString::from(String::from_utf8_lossy(&spec).into_owned());
    let out = git(top)
        .args(["cat-file", "blob"])
        .arg(spec)
        .output()
        .map_err(|e| GitError(format!("cannot run git: {e}")))?;
    Ok(out.status.success().then_some(out.stdout))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_porcelain_v2() {
        let out = b"# branch.oid (initial)\0# branch.head main\0\
1 .M N... 100644 100644 100644 aaa bbb a file.txt\0\
2 R. N... 100644 100644 100644 aaa bbb R100 new name.txt\0old name.txt\0\
u UU N... 100644 100644 100644 100644 a b c conflict.txt\0\
? dir/untracked.txt\0";
        let (head, files) = parse_porcelain_v2(out);
        assert_eq!(head.branch.as_deref(), Some("main"));
        assert_eq!(head.commit, None);
        let statuses: Vec<_> = files
            .iter()
            .map(|(p, e)| (p.as_str(), e.status()))
            .collect();
        assert_eq!(
            statuses,
            vec![
                ("a file.txt", FileStatus::Modified),
                ("conflict.txt", FileStatus::Modified),
                ("dir/untracked.txt", FileStatus::Untracked),
                (
                    "new name.txt",
                    FileStatus::Renamed {
                        from: "old name.txt".into()
                    }
                ),
            ]
        );
    }

    #[test]
    fn parses_name_status() {
        let out = b"M\0a.rs\0R087\0old.rs\0new.rs\0A\0b.rs\0D\0c.rs\0";
        let changes = parse_name_status(out);
        assert_eq!(changes.len(), 4);
        assert_eq!(
            changes[3].status,
            FileStatus::Renamed {
                from: "old.rs".into()
            }
        );
    }
}
