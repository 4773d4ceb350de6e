//! `doctor`'s checks of the shells on this machine: the hook and the completion line in the
//! start-up files (and which pas-agent they start), and completion files the shells load by
//! themselves, compared with what this pas-agent prints.

use std::path::{Path, PathBuf};

use super::{Check, Context, Runs, home_relative, shell_path, shown};
use crate::cli::CompletionShell;
use crate::hook::Shell;

/// The programs whose presence on `PATH` says the shell is installed.
fn programs(shell: Shell) -> &'static [&'static str] {
    match shell {
        Shell::Bash => &["bash"],
        Shell::Zsh => &["zsh"],
        Shell::Fish => &["fish"],
        Shell::PowerShell => &["pwsh", "powershell"],
    }
}

/// The line that loads the hook, and the documented way to install completions (a start-up
/// line, or for fish a file in its completions folder), for each shell.
fn set_up(shell: Shell) -> (&'static str, &'static str) {
    match shell {
        Shell::Bash => (
            "eval \"$(pas-agent hook bash)\"",
            "source <(pas-agent completions bash)",
        ),
        Shell::Zsh => (
            "eval \"$(pas-agent hook zsh)\"",
            "source <(pas-agent completions zsh)",
        ),
        Shell::Fish => ("pas-agent hook fish | source", ""),
        Shell::PowerShell => (
            "Invoke-Expression (& pas-agent hook powershell | Out-String)",
            "pas-agent completions powershell | Out-String | Invoke-Expression",
        ),
    }
}

fn completion_shell(shell: Shell) -> CompletionShell {
    match shell {
        Shell::Bash => CompletionShell::Bash,
        Shell::Zsh => CompletionShell::Zsh,
        Shell::Fish => CompletionShell::Fish,
        Shell::PowerShell => CompletionShell::Powershell,
    }
}

/// The lines of the start-up files `files` that run `pas-agent <what>` (not commented out),
/// with their file.
fn lines_with(files: &[PathBuf], what: &str) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    for f in files {
        let Ok(Some(bytes)) = crate::fsutil::read_limited(f, 1 << 20) else {
            continue;
        };
        for line in String::from_utf8_lossy(&bytes).lines() {
            let t = line.trim_start();
            if !t.starts_with('#') && t.contains(&format!(" {what} ")) && t.contains("pas-agent") {
                out.push((f.clone(), t.to_string()));
            }
        }
    }
    out
}

/// The program word before ` <what> ` in a start-up line (`eval "$(pas-agent hook bash)"` →
/// `pas-agent`; `source <(/opt/bin/pas-agent completions bash)` → `/opt/bin/pas-agent`).
fn program_in(line: &str, what: &str) -> Option<String> {
    let at = line.find(&format!(" {what} "))?;
    let before = &line[..at];
    let word = before
        .rsplit(|c: char| c.is_whitespace() || "($&;|`{".contains(c))
        .next()?;
    (!word.is_empty()).then(|| word.to_string())
}

/// For every shell installed here (or already set up in a start-up file): the hook, and the
/// completions.
pub fn checks(cx: &Context, checks: &mut Vec<Check>) {
    for shell in Shell::ALL {
        let files = crate::hook::startup_files(shell);
        let hooks = lines_with(&files, "hook");
        let completion_lines = lines_with(&files, "completions");
        let installed = programs(shell).iter().any(|p| which::which(p).is_ok());
        let comp = completion_shell(shell);
        let comp_files: Vec<PathBuf> = crate::cmd::complete::completion_files(comp)
            .into_iter()
            .filter(|f| f.is_file())
            .collect();
        if !installed && hooks.is_empty() && completion_lines.is_empty() && comp_files.is_empty() {
            continue;
        }
        let name = shell.name();
        let target = files
            .first()
            .map(|f| home_relative(f))
            .unwrap_or_else(|| "the shell's start-up file".into());
        let (hook_line, completion_line) = set_up(shell);
        // The hook.
        checks.push(if hooks.is_empty() {
            Check::info(format!("{name} hook"), "not set up")
                .fix(format!("add `{hook_line}` to {target}"))
        } else {
            started(cx, &hooks, "hook", name, hook_line)
        });
        // Completions: start-up lines, and files the shell loads by itself.
        let mut found = Vec::new();
        if !completion_lines.is_empty() {
            found.push(started(
                cx,
                &completion_lines,
                "completions",
                name,
                completion_line,
            ));
        }
        let current = crate::cmd::complete::script(comp).ok();
        for file in &comp_files {
            found.push(compare(file, current.as_deref(), comp));
        }
        if found.is_empty() {
            let documented = crate::cmd::complete::completion_files(comp)
                .into_iter()
                .next();
            let how = match (completion_line, documented) {
                ("", Some(file)) => {
                    let dir = file.parent().unwrap_or(Path::new("."));
                    let write = format!("pas-agent completions {name} > {}", shell_path(&file));
                    if dir.is_dir() {
                        write
                    } else {
                        format!("mkdir -p {} && {write}", shell_path(dir))
                    }
                }
                (line, _) => format!("add `{line}` to {target}"),
            };
            found.push(Check::info(format!("{name} completions"), "not set up").fix(how));
        }
        checks.extend(found);
    }
}

/// The check of start-up lines that run `pas-agent <what>`: which files hold them, and whether
/// the pas-agent they start is this one.
fn started(
    cx: &Context,
    lines: &[(PathBuf, String)],
    what: &str,
    shell: &str,
    documented: &str,
) -> Check {
    let mut files: Vec<String> = lines.iter().map(|(f, _)| home_relative(f)).collect();
    files.dedup();
    let name = format!("{shell} {what}");
    let mut others = Vec::new();
    for (file, line) in lines {
        let Some(program) = program_in(line, what) else {
            continue;
        };
        match cx.runs(&program) {
            Runs::Me => {}
            Runs::Other(p) => others.push(format!("{} runs {}", home_relative(file), shown(&p))),
            Runs::Missing(why) => {
                return Check::problem(
                    name,
                    format!(
                        "the line in {} cannot start pas-agent: {why}",
                        home_relative(file)
                    ),
                )
                .fix(format!(
                    "replace it with `{documented}`, with pas-agent's folder on PATH before it"
                ));
            }
        }
    }
    if others.is_empty() {
        Check::ok(name, format!("in {}", files.join(", ")))
    } else {
        Check::info(
            name,
            format!(
                "in {}; {}, not this pas-agent ({})",
                files.join(", "),
                others.join(", "),
                cx.me_shown()
            ),
        )
    }
}

/// A completion file the shell loads by itself, against what this pas-agent prints.
fn compare(file: &Path, current: Option<&str>, shell: CompletionShell) -> Check {
    let name = format!("{} completions", shell.name());
    let text = crate::fsutil::read_limited(file, 1 << 20)
        .ok()
        .flatten()
        .map(|b| String::from_utf8_lossy(&b).into_owned());
    let regenerate = format!(
        "pas-agent completions {} > {}",
        shell.name(),
        shell_path(file)
    );
    match (text, current) {
        (Some(t), Some(c)) if t.trim_end() == c.trim_end() => {
            Check::ok(name, format!("{} (current)", home_relative(file)))
        }
        (Some(_), _) => Check::problem(
            name,
            format!(
                "{} differs from what this pas-agent prints (an older pas-agent's, or another binary's): the shell loads it, and it wins",
                home_relative(file)
            ),
        )
        .fix(regenerate),
        (None, _) => Check::problem(
            name,
            format!("{} cannot be read", home_relative(file)),
        )
        .fix(regenerate),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_program_of_a_start_up_line() {
        assert_eq!(
            program_in("eval \"$(pas-agent hook bash)\"", "hook").as_deref(),
            Some("pas-agent")
        );
        assert_eq!(
            program_in("source <(/opt/x/pas-agent completions bash)", "completions").as_deref(),
            Some("/opt/x/pas-agent")
        );
        assert_eq!(
            program_in("pas-agent hook fish | source", "hook").as_deref(),
            Some("pas-agent")
        );
        assert_eq!(
            program_in(
                "Invoke-Expression (& pas-agent hook powershell | Out-String)",
                "hook"
            )
            .as_deref(),
            Some("pas-agent")
        );
    }
}
