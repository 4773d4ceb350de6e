//! `doctor`'s checks of what is installed: git and the reader this repository takes, and each
//! agent in the table with the version of the package it came in.

use std::path::{Path, PathBuf};
use std::process::{Command as Process, Stdio};
use std::time::{Duration, Instant};

use super::{Check, Context, shown};
use crate::term::clean_line;

/// How long `git --version` may take before it is reported as not answering.
const VERSION_TIMEOUT: Duration = Duration::from_secs(10);

/// git on PATH and its version; which reader this repository takes and why.
pub fn git(cx: &Context, checks: &mut Vec<Check>) {
    let root = cx.project.as_ref().map_or(&cx.cwd, |p| &p.root);
    match which::which("git") {
        Ok(path) => {
            let version = version_of(&path, &["--version"]);
            checks.push(Check::ok(
                "git",
                format!("{} ({})", version.unwrap_or_else(|e| e), shown(&path)),
            ));
        }
        Err(_) => checks.push(
            Check::problem(
                "git",
                "not found on PATH: repositories the in-process reader cannot open (reftable refs, a sparse index) cannot be read, and `git` is not there for you either",
            )
            .fix("install git (`sudo apt-get install git`, `brew install git`, …) or add its directory to PATH"),
        ),
    }
    match crate::git::try_for_root(root) {
        Ok(Some(repo)) => {
            let (reader, why) = repo.backend();
            let detail = format!("{}: {reader}, {why}", shown(&repo.top));
            if reader == "git CLI" && which::which("git").is_err() {
                checks.push(
                    Check::problem("repository", detail)
                        .fix("install git: this repository is read with the git CLI"),
                );
            } else {
                checks.push(Check::ok("repository", detail));
            }
        }
        Ok(None) => checks.push(Check::info(
            "repository",
            format!("{} is not in a git repository", shown(root)),
        )),
        Err(e) => checks.push(
            Check::problem("repository", clean_line(&e.to_string()))
                .fix("install git or put it on PATH, or unset PAS_AGENT_GIT"),
        ),
    }
}

/// The first line `program args…` prints, cleaned, or why there is none. Stdin is empty; a
/// program still running after [`VERSION_TIMEOUT`] is killed.
fn version_of(program: &Path, args: &[&str]) -> Result<String, String> {
    let mut child = Process::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run it: {e}"))?;
    let start = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if start.elapsed() < VERSION_TIMEOUT => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(100));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "`{} --version` did not answer within {} s",
                    shown(program),
                    VERSION_TIMEOUT.as_secs()
                ));
            }
        }
    }
    let output = child
        .wait_with_output()
        .map_err(|e| format!("cannot read its output: {e}"))?;
    let text = String::from_utf8_lossy(&output.stdout);
    let first = text.lines().map(str::trim).find(|l| !l.is_empty());
    match first {
        Some(line) => Ok(clean_line(line).chars().take(80).collect()),
        None if output.status.success() => Ok("version unknown".into()),
        None => Err(format!("`--version` failed ({})", output.status)),
    }
}

/// How many folders above an executable are searched for its package's `package.json`.
const PACKAGE_DEPTH: usize = 4;

/// The version of the package an agent's executable came in, read without starting it (an
/// agent's `--version` takes up to seconds, and some write into the user's home): the
/// `version` of the nearest `package.json` above the executable's real path, within
/// [`PACKAGE_DEPTH`] folders and below `node_modules` (npm, pnpm, bun: `…/node_modules/@openai/
/// codex/bin/codex.js`); else a folder or file name on that path that is a version (native
/// installers and Homebrew: `~/.local/share/claude/versions/2.1.197`,
/// `…/Cellar/codex/0.171.0/bin/codex`). `None` when neither says.
pub fn package_version(exe: &Path) -> Option<String> {
    let real = exe.canonicalize().ok()?;
    let mut dir = real.parent();
    for _ in 0..PACKAGE_DEPTH {
        let Some(d) = dir else { break };
        if d.file_name().is_some_and(|n| n == "node_modules") {
            break;
        }
        if let Ok(Some(bytes)) = crate::fsutil::read_limited(&d.join("package.json"), 1 << 20)
            && let Ok(v) = serde_json::from_slice::<serde_json::Value>(&bytes)
            && let Some(version) = v.get("version").and_then(|v| v.as_str())
        {
            return Some(clean_line(version).chars().take(40).collect());
        }
        dir = d.parent();
    }
    real.iter()
        .rev()
        .filter_map(|c| c.to_str())
        .find(|c| looks_like_version(c))
        .map(clean_line)
}

/// `1.2`, `0.171.0`, `v2.1.197`, `1.0.0-beta.3`: digits and dots (at least one dot) after an
/// optional `v`, then anything.
fn looks_like_version(s: &str) -> bool {
    let s = s.strip_prefix('v').unwrap_or(s);
    let head: String = s
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    head.contains('.')
        && head.starts_with(|c: char| c.is_ascii_digit())
        && head.split('.').filter(|p| !p.is_empty()).count() >= 2
}

/// Every agent in the table: found on PATH (which executable) and the version of its package.
pub fn agents(_cx: &Context, checks: &mut Vec<Check>) {
    for agent in crate::agents::launched() {
        let path: Option<PathBuf> = agent.executables.iter().find_map(|e| which::which(e).ok());
        checks.push(match path {
            Some(path) => Check::ok(
                agent.id,
                match package_version(&path) {
                    Some(v) => format!("{v} ({})", shown(&path)),
                    None => format!(
                        "{} (its version: `{} --version`)",
                        shown(&path),
                        path.file_name()
                            .map(|n| clean_line(&n.to_string_lossy()))
                            .unwrap_or_default()
                    ),
                },
            ),
            None => Check::info(
                agent.id,
                format!(
                    "not installed ({} not on PATH)",
                    agent.executables.join(", ")
                ),
            ),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_read_from_the_package_or_the_path() {
        let tmp = tempfile::tempdir().unwrap();
        let pkg = tmp.path().join("lib/node_modules/@x/agent");
        std::fs::create_dir_all(pkg.join("bin")).unwrap();
        std::fs::write(pkg.join("bin/agent.js"), "").unwrap();
        std::fs::write(
            pkg.join("package.json"),
            r#"{"name": "@x/agent", "version": "1.18.33"}"#,
        )
        .unwrap();
        assert_eq!(
            package_version(&pkg.join("bin/agent.js")).as_deref(),
            Some("1.18.33")
        );
        let native = tmp.path().join("share/claude/versions/2.1.197");
        std::fs::create_dir_all(native.parent().unwrap()).unwrap();
        std::fs::write(&native, "").unwrap();
        assert_eq!(package_version(&native).as_deref(), Some("2.1.197"));
        let plain = tmp.path().join("bin/tool");
        std::fs::create_dir_all(plain.parent().unwrap()).unwrap();
        std::fs::write(&plain, "").unwrap();
        assert_eq!(package_version(&plain), None);
        assert!(
            !looks_like_version("bin") && !looks_like_version("12") && !looks_like_version(".1")
        );
        assert!(looks_like_version("v0.4.0") && looks_like_version("1.0.0-beta.3"));
    }
}
