//! `@path` imports between context files, so that an export keeps what an agent sees single
//! and current: a `CLAUDE.md` holding `@AGENTS.md` shows Claude Code the
//! block in `AGENTS.md` as well as its own.
//!
//! The rule followed is the union of Claude Code's and Gemini CLI's (both read in the installed
//! tools, see [`crate::export::render`]): an `@` at the start of the text or after whitespace,
//! then the path up to the next whitespace (a `#fragment` dropped), starting with `./`, `/`,
//! `~/` or a letter, digit, `.`, `_` or `-`; not inside fenced code blocks or code spans;
//! relative to the importing file's directory; followed up to 5 files deep (Gemini CLI's
//! `maxDepth`; Claude Code documents 4 or 5 hops). Only files inside the session root count:
//! pas-agent never writes outside it on an import's behalf.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::MAX_CONTEXT_FILE_BYTES;
use crate::fsutil;

/// How many imports deep a chain is followed.
pub const MAX_DEPTH: usize = 5;

/// The import paths in `text`, as written.
pub fn imports_in(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fence: Option<(u8, usize)> = None;
    for line in text.split('\n') {
        let trimmed = line.trim_start_matches(' ');
        let indent = line.len() - trimmed.len();
        let bytes = trimmed.as_bytes();
        let opener = (indent <= 3)
            .then(|| bytes.first().copied())
            .flatten()
            .filter(|c| *c == b'`' || *c == b'~')
            .map(|c| (c, bytes.iter().take_while(|&&b| b == c).count()))
            .filter(|(_, n)| *n >= 3);
        match (fence, opener) {
            (Some((c, n)), Some((c2, n2))) if c == c2 && n2 >= n => {
                fence = None;
                continue;
            }
            (Some(_), _) => continue,
            (None, Some(o)) => {
                fence = Some(o);
                continue;
            }
            (None, None) => {}
        }
        scan_line(line, &mut out);
    }
    out
}

/// The imports of one line outside code spans.
fn scan_line(line: &str, out: &mut Vec<String>) {
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '`' {
            // A code span: skip to the closing run of the same length, if there is one.
            let n = chars[i..].iter().take_while(|&&c| c == '`').count();
            let mut j = i + n;
            let mut closed = None;
            while j < chars.len() {
                if chars[j] == '`' {
                    let m = chars[j..].iter().take_while(|&&c| c == '`').count();
                    if m == n {
                        closed = Some(j + m);
                        break;
                    }
                    j += m;
                } else {
                    j += 1;
                }
            }
            i = closed.unwrap_or(i + n);
            continue;
        }
        if chars[i] == '@' && (i == 0 || chars[i - 1].is_whitespace()) {
            let end = chars[i + 1..]
                .iter()
                .position(|c| c.is_whitespace())
                .map_or(chars.len(), |p| i + 1 + p);
            let path: String = chars[i + 1..end].iter().collect();
            let path = path.split('#').next().unwrap_or("").to_string();
            let ok = path.starts_with("./")
                || path.starts_with("~/")
                || (path.starts_with('/') && path != "/")
                || path
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
            if ok {
                out.push(path);
            }
            i = end;
            continue;
        }
        i += 1;
    }
}

/// The files `file` imports, directly or through other imports (up to [`MAX_DEPTH`]), that
/// exist inside `root` (or are `pending`, a canonical path about to be written), as canonical
/// paths, `file` itself excluded. Unreadable files import nothing.
pub fn imported_files(file: &Path, root: &Path, pending: Option<&Path>) -> Vec<PathBuf> {
    let Ok(root) = root.canonicalize() else {
        return Vec::new();
    };
    let Ok(start) = file.canonicalize() else {
        return Vec::new();
    };
    // A context file that leads out of the root (a committed link) is not read at all.
    if !start.starts_with(&root) {
        return Vec::new();
    }
    let mut seen = BTreeSet::from([start.clone()]);
    let mut found = Vec::new();
    let mut level = vec![start];
    for _ in 0..MAX_DEPTH {
        let mut next = Vec::new();
        for f in &level {
            let Ok(Some(bytes)) = fsutil::read_limited(f, MAX_CONTEXT_FILE_BYTES) else {
                continue;
            };
            let dir = f.parent().unwrap_or(&root).to_path_buf();
            for path in imports_in(&String::from_utf8_lossy(&bytes)) {
                if path.starts_with("~/") {
                    continue; // the home directory is never inside a session root
                }
                let joined = dir.join(&path);
                let real = match joined.canonicalize() {
                    Ok(real) if real.is_file() => real,
                    _ => match (joined.parent().map(Path::canonicalize), joined.file_name()) {
                        (Some(Ok(d)), Some(n)) if Some(d.join(n).as_path()) == pending => d.join(n),
                        _ => continue,
                    },
                };
                if real.starts_with(&root) && seen.insert(real.clone()) {
                    found.push(real.clone());
                    next.push(real);
                }
            }
        }
        level = next;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imports_follow_the_agents_rules() {
        let text = "See @AGENTS.md and @./docs/a.md#part, mail a@b.c, \\@not.md\n`@code.md` ``x @c2.md``\n```\n@fenced.md\n```\n@/abs/p.md\t@~/home.md @ @#x";
        assert_eq!(
            imports_in(text),
            ["AGENTS.md", "./docs/a.md", "/abs/p.md", "~/home.md"]
        );
    }

    #[test]
    fn chains_stay_inside_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("docs")).unwrap();
        std::fs::write(root.join("CLAUDE.md"), "@AGENTS.md\n@../outside.md\n").unwrap();
        std::fs::write(root.join("AGENTS.md"), "@docs/more.md @CLAUDE.md\n").unwrap();
        std::fs::write(root.join("docs/more.md"), "@../AGENTS.md\n").unwrap();
        std::fs::write(dir.path().join("outside.md"), "x").unwrap();
        let found = imported_files(&root.join("CLAUDE.md"), &root, None);
        let root = root.canonicalize().unwrap();
        assert_eq!(found, [root.join("AGENTS.md"), root.join("docs/more.md")]);
    }
}
