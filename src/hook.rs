//! Shell integration (`pas-agent hook <shell>`, docs/hooks.md): the scripts in `shell/`, embedded at
//! build time and rendered with this binary's path quoted for the shell and one wrapper
//! function per agent command from the agent table.
//!
//! A template holds two tokens, each alone on its line: [`BIN_TOKEN`], where the quoted path
//! goes, and [`WRAPPERS_TOKEN`], which becomes one wrapper definition per executable in
//! [`crate::agents::executables`]. Everything else is the template's text, unchanged.
//!
//! Quoting (the shells' own manuals: bash(1) QUOTING, zsh's QUOTING, fish's "Quotes", and
//! PowerShell's about_Quoting_Rules): bash and zsh get POSIX
//! single quotes with `'` written as `'\''`; fish single quotes, inside which only `\\` and `\'`
//! are escapes; PowerShell single quotes with `'` doubled, used with the call operator `&`
//! (a bare quoted string is an expression, not a command; direnv#1597 is the unquoted-path bug).

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// A shell with a hook script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shell {
    /// bash 4.4+; template `shell/pas-agent.bash`.
    Bash,
    /// zsh 5.3+; template `shell/pas-agent.zsh`.
    Zsh,
    /// fish 3.1+; template `shell/pas-agent.fish`.
    Fish,
    /// PowerShell 7 and Windows PowerShell 5.1; template `shell/pas-agent.ps1`.
    PowerShell,
}

impl Shell {
    /// Every shell, in the order the documentation lists them.
    pub const ALL: [Shell; 4] = [Shell::Bash, Shell::Zsh, Shell::Fish, Shell::PowerShell];

    /// The name `pas-agent hook` takes.
    pub fn name(self) -> &'static str {
        match self {
            Shell::Bash => "bash",
            Shell::Zsh => "zsh",
            Shell::Fish => "fish",
            Shell::PowerShell => "powershell",
        }
    }

    /// The template, as it is in `shell/`.
    pub fn template(self) -> &'static str {
        match self {
            Shell::Bash => include_str!("../shell/pas-agent.bash"),
            Shell::Zsh => include_str!("../shell/pas-agent.zsh"),
            Shell::Fish => include_str!("../shell/pas-agent.fish"),
            Shell::PowerShell => include_str!("../shell/pas-agent.ps1"),
        }
    }

    /// `text` as one literal word (a string, in PowerShell) of this shell's syntax.
    pub fn quote(self, text: &str) -> String {
        match self {
            Shell::Bash | Shell::Zsh => quote_posix(text),
            Shell::Fish => quote_fish(text),
            Shell::PowerShell => quote_powershell(text),
        }
    }

    /// The definition of the wrapper function for agent command `name`, guarded so that a
    /// function the user already has under that name is kept.
    fn wrapper(self, name: &str) -> String {
        match self {
            Shell::Bash | Shell::Zsh => format!(
                "if __pas_agent_may_wrap {name}; then function {name} {{ __pas_agent_wrap {name} \"$@\"; }}; fi"
            ),
            Shell::Fish => format!(
                "if __pas_agent_may_wrap {name}; function {name} --description 'pas-agent: {name}, through pas-agent run inside a session'; __pas_agent_wrap {name} $argv; end; end"
            ),
            Shell::PowerShell => format!(
                "if (__PasAgentMayWrap '{name}') {{ function global:{name} {{ __PasAgentWrap '{name}' $args }} }}"
            ),
        }
    }
}

/// The start-up files each shell reads where people put `eval "$(pas-agent hook …)"` (and the
/// completion line), in the order the shell reads them: bash `~/.bashrc`, `~/.bash_profile`,
/// `~/.bash_login`, `~/.profile`; zsh `$ZDOTDIR/.zshrc` and `.zprofile` (`ZDOTDIR` defaults to
/// `HOME`); fish `$XDG_CONFIG_HOME/fish/config.fish` and `conf.d/*.fish` (default
/// `~/.config`); PowerShell's current-user profiles under `$XDG_CONFIG_HOME/powershell` (Unix).
/// Files that do not exist are listed too; an empty list when no `HOME` is known.
pub fn startup_files(shell: Shell) -> Vec<PathBuf> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let Some(home) = var("HOME") else {
        return Vec::new();
    };
    let config = var("XDG_CONFIG_HOME").unwrap_or_else(|| home.join(".config"));
    match shell {
        Shell::Bash => [".bashrc", ".bash_profile", ".bash_login", ".profile"]
            .iter()
            .map(|f| home.join(f))
            .collect(),
        Shell::Zsh => {
            let dir = var("ZDOTDIR").unwrap_or_else(|| home.clone());
            vec![
                dir.join(".zshrc"),
                dir.join(".zprofile"),
                dir.join(".zshenv"),
            ]
        }
        Shell::Fish => {
            let dir = config.join("fish");
            let mut files = vec![dir.join("config.fish")];
            if let Ok(entries) = std::fs::read_dir(dir.join("conf.d")) {
                let mut more: Vec<PathBuf> = entries
                    .flatten()
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|e| e == "fish"))
                    .collect();
                more.sort();
                files.extend(more);
            }
            files
        }
        Shell::PowerShell => {
            let dir = config.join("powershell");
            vec![
                dir.join("Microsoft.PowerShell_profile.ps1"),
                dir.join("profile.ps1"),
            ]
        }
    }
}

/// The variable the hooks keep the prompt segment in (exported, so prompt programs such as
/// starship can read it). The launcher removes it from an agent's environment.
pub const PROMPT_ENV: &str = "PAS_AGENT_PROMPT";

/// Where the quoted binary path goes in a template.
pub const BIN_TOKEN: &str = "__PAS_AGENT_BIN__";
/// Where the agent wrapper functions go in a template.
pub const WRAPPERS_TOKEN: &str = "__PAS_AGENT_WRAPPERS__";

/// POSIX shell single quotes: everything between `'` is literal, so the only character to
/// handle is `'` itself, written as `'\''` (close, escaped quote, reopen).
pub fn quote_posix(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// fish single quotes: literal except for `\\` and `\'` (fish documentation, "Quotes").
pub fn quote_fish(text: &str) -> String {
    format!("'{}'", text.replace('\\', r"\\").replace('\'', r"\'"))
}

/// PowerShell verbatim string: literal except for the quote, which is doubled. PowerShell also
/// takes the typographic single quotes U+2018–U+201B as quote characters
/// (about_Quoting_Rules), so they are doubled too.
pub fn quote_powershell(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('\'');
    for c in text.chars() {
        if matches!(c, '\'' | '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}') {
            out.push(c);
        }
        out.push(c);
    }
    out.push('\'');
    out
}

/// Whether `name` can be used bare as a function name in every supported shell: ASCII
/// letters, digits, `-` and `_`, starting with a letter. The agent table's executables all are
/// (a unit test checks); anything else is skipped rather than quoted into code.
pub fn is_plain_command_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// The script for `shell` with `bin` as the pas-agent to call and a wrapper for each of
/// `commands`.
///
/// Errors: [`Error::Message`] when `bin` is not valid UTF-8 (it could not be written into the
/// script faithfully) or contains a line break (it would not survive `Out-String` and line-based
/// `eval` forms).
pub fn render(shell: Shell, bin: &Path, commands: &[&str]) -> Result<String> {
    let Some(path) = bin.to_str() else {
        return Err(Error::Message(format!(
            "the path of this pas-agent ({}) is not valid UTF-8, so it cannot be written into a {} script; install pas-agent under a UTF-8 path",
            bin.display(),
            shell.name()
        )));
    };
    if path.contains(['\n', '\r']) {
        return Err(Error::Message(format!(
            "the path of this pas-agent ({}) contains a line break; install pas-agent under another path",
            crate::term::clean(path)
        )));
    }
    let mut out = String::with_capacity(shell.template().len() + 1024);
    for line in shell.template().split_inclusive('\n') {
        let indent = &line[..line.len() - line.trim_start().len()];
        if line.trim() == WRAPPERS_TOKEN {
            for name in commands.iter().filter(|n| is_plain_command_name(n)) {
                out.push_str(indent);
                out.push_str(&shell.wrapper(name));
                out.push('\n');
            }
        } else if line.contains(BIN_TOKEN) {
            out.push_str(&line.replacen(BIN_TOKEN, &shell.quote(path), 1));
        } else {
            out.push_str(line);
        }
    }
    Ok(out)
}

/// The path the scripts should call: the `pas-agent` found on `PATH` when it is this very
/// binary (a package manager's stable link such as `/opt/homebrew/bin/pas-agent` survives
/// upgrades, where the versioned target behind it does not: starship#910, #3030), else the
/// path this process was started from.
///
/// Errors: [`Error::Io`] when the running executable's path cannot be found.
pub fn binary_path() -> Result<PathBuf> {
    let me = std::env::current_exe().map_err(|e| Error::io("<current executable>", e))?;
    let canonical = |p: &Path| p.canonicalize().ok();
    if let Ok(on_path) = which::which("pas-agent")
        && canonical(&on_path).is_some()
        && canonical(&on_path) == canonical(&me)
    {
        return Ok(on_path);
    }
    Ok(me)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BIN: &str = "/usr/local/bin/pas-agent";

    fn commands() -> Vec<&'static str> {
        crate::agents::executables()
    }

    /// Paths that break naive quoting: spaces, both quotes, `$`, backticks, backslashes,
    /// globs, `;`, a typographic quote, non-ASCII text and a Windows path.
    const NASTY: &[&str] = &[
        "/opt/my tools/pas-agent",
        "/home/o'brien/bin/pas-agent",
        "/tmp/\"quoted\"/pas-agent",
        "/tmp/$HOME/$(touch pwned)/pas-agent",
        "/tmp/`touch pwned`/pas-agent",
        r"/tmp/back\slash\/pas-agent",
        "/tmp/*?[a]/pas-agent; rm -rf x",
        "/tmp/it\u{2019}s/pas-agent",
        "/tmp/ünïcödé ✓/pas-agent",
        r"C:\Program Files\pas-agent\pas-agent.exe",
        "",
    ];

    #[test]
    fn posix_quoting() {
        assert_eq!(quote_posix("/usr/bin/pas-agent"), "'/usr/bin/pas-agent'");
        assert_eq!(quote_posix("a b"), "'a b'");
        assert_eq!(quote_posix("o'brien"), r"'o'\''brien'");
        assert_eq!(quote_posix("$x `y` \"z\" \\"), "'$x `y` \"z\" \\'");
        assert_eq!(quote_posix(""), "''");
    }

    #[test]
    fn fish_quoting() {
        assert_eq!(quote_fish("a b"), "'a b'");
        assert_eq!(quote_fish("o'brien"), r"'o\'brien'");
        assert_eq!(quote_fish(r"back\slash"), r"'back\\slash'");
        assert_eq!(quote_fish(r"end\"), r"'end\\'");
        assert_eq!(quote_fish("$x (y) `z`"), "'$x (y) `z`'");
    }

    #[test]
    fn powershell_quoting() {
        assert_eq!(
            quote_powershell(r"C:\Program Files\pas-agent.exe"),
            r"'C:\Program Files\pas-agent.exe'"
        );
        assert_eq!(quote_powershell(r"C:\'x.exe"), r"'C:\''x.exe'");
        assert_eq!(quote_powershell("$env:x `n \"y\""), "'$env:x `n \"y\"'");
        assert_eq!(quote_powershell("it\u{2019}s"), "'it\u{2019}\u{2019}s'");
    }

    #[test]
    fn quoted_words_have_no_unbalanced_quotes() {
        // A weaker, shell-free check that complements the real-shell round trip in the e2e
        // tests: after removing escapes, every quote opens and closes.
        for p in NASTY {
            let fish = quote_fish(p).replace(r"\\", "").replace(r"\'", "");
            assert_eq!(fish.matches('\'').count(), 2, "{fish}");
            let posix = quote_posix(p).replace(r"'\''", "");
            assert_eq!(posix.matches('\'').count(), 2, "{posix}");
        }
    }

    #[test]
    fn every_template_has_each_token_once() {
        for shell in Shell::ALL {
            let t = shell.template();
            assert_eq!(t.matches(BIN_TOKEN).count(), 1, "{}", shell.name());
            assert_eq!(
                t.lines().filter(|l| l.trim() == WRAPPERS_TOKEN).count(),
                1,
                "{}",
                shell.name()
            );
            assert_eq!(t.matches(WRAPPERS_TOKEN).count(), 1, "{}", shell.name());
        }
    }

    #[test]
    fn templates_are_lf_and_ascii() {
        for shell in Shell::ALL {
            let t = shell.template();
            assert!(!t.contains('\r'), "{}: CR in template", shell.name());
            assert!(t.is_ascii(), "{}: non-ASCII in template", shell.name());
            assert!(!t.contains('\t'), "{}: tab in template", shell.name());
        }
    }

    #[test]
    fn agent_commands_are_plain_names_and_all_wrapped() {
        let names = commands();
        assert!(names.contains(&"claude") && names.contains(&"cursor-agent"));
        for name in &names {
            assert!(is_plain_command_name(name), "{name}");
        }
        for shell in Shell::ALL {
            let script = render(shell, Path::new(BIN), &names).unwrap();
            for name in &names {
                assert!(
                    script.contains(&shell.wrapper(name)),
                    "{}: no wrapper for {name}",
                    shell.name()
                );
            }
            assert!(!script.contains(BIN_TOKEN) && !script.contains(WRAPPERS_TOKEN));
        }
    }

    #[test]
    fn odd_names_are_never_written_into_a_script() {
        for bad in ["", "-x", "a b", "a;b", "$(x)", "a'b", "ä"] {
            assert!(!is_plain_command_name(bad), "{bad:?}");
        }
        let script = render(Shell::Bash, Path::new(BIN), &["ok", "a;rm"]).unwrap();
        assert!(script.contains("function ok {"));
        assert!(!script.contains("a;rm"));
    }

    #[test]
    fn the_path_is_written_once_and_quoted() {
        for shell in Shell::ALL {
            let assignment = match shell {
                Shell::Bash | Shell::Zsh => "__pas_agent_bin=",
                Shell::Fish => "set -g __pas_agent_bin ",
                Shell::PowerShell => "$global:__PasAgentBin = ",
            };
            for p in NASTY {
                let script = render(shell, Path::new(p), &commands()).unwrap();
                let lines: Vec<&str> = script.lines().filter(|l| l.contains(assignment)).collect();
                assert_eq!(lines.len(), 1, "{}: {p}", shell.name());
                let want = format!("{assignment}{}", shell.quote(p));
                assert!(
                    lines[0].trim_start().ends_with(&want),
                    "{}: {}",
                    shell.name(),
                    lines[0]
                );
            }
        }
    }

    #[test]
    fn unusable_paths_are_refused() {
        let err = render(Shell::Bash, Path::new("/tmp/a\nb/pas-agent"), &[]).unwrap_err();
        assert!(err.to_string().contains("line break"), "{err}");
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            let p = Path::new(std::ffi::OsStr::from_bytes(b"/tmp/\xff/pas-agent"));
            let err = render(Shell::Zsh, p, &[]).unwrap_err();
            assert!(err.to_string().contains("UTF-8"), "{err}");
        }
    }

    #[test]
    fn rendered_scripts_match_their_snapshots() {
        // A fixed list: the snapshots pin the rendering, and a new agent in the table
        // (crate::agents::AGENTS) changes no snapshot.
        let wrapped = ["claude", "codex", "cursor-agent"];
        for shell in Shell::ALL {
            let script = render(shell, Path::new(BIN), &wrapped).unwrap();
            insta::assert_snapshot!(format!("hook_{}", shell.name()), script);
        }
    }

    /// Parses `text` as PowerShell with the tree-sitter grammar; returns the ERROR and MISSING
    /// nodes as `(row, column, kind)`.
    fn powershell_errors(text: &str) -> Vec<(usize, usize, String)> {
        let mut parser = tree_sitter::Parser::new();
        parser
            .set_language(&tree_sitter_powershell::LANGUAGE.into())
            .expect("load the PowerShell grammar");
        let tree = parser.parse(text, None).expect("parse");
        let mut bad = Vec::new();
        let mut cursor = tree.walk();
        let mut done = false;
        while !done {
            let node = cursor.node();
            if node.is_error() || node.is_missing() {
                let p = node.start_position();
                bad.push((p.row + 1, p.column + 1, node.kind().to_string()));
            }
            if cursor.goto_first_child() || cursor.goto_next_sibling() {
                continue;
            }
            loop {
                if !cursor.goto_parent() {
                    done = true;
                    break;
                }
                if cursor.goto_next_sibling() {
                    break;
                }
            }
        }
        bad
    }

    #[test]
    fn the_powershell_checker_finds_broken_scripts() {
        // The gate below must be able to fail: each of these is a real syntax error.
        for broken in [
            "function f { if ($a -eq 1) { 'x' }\n",
            "if ($a -eq 1 { 'x' }\n",
            "$x = 'unterminated\n",
            "& $global:x run $Name '--' @Arguments)\n",
        ] {
            assert!(
                !powershell_errors(broken).is_empty(),
                "not caught: {broken}"
            );
        }
        assert!(powershell_errors("& 'C:\\x y\\p.exe' prompt\n").is_empty());
    }

    #[test]
    fn the_powershell_examples_in_the_docs_parse() {
        let doc = include_str!("../docs/hooks.md");
        let blocks: Vec<&str> = doc
            .split("```powershell\n")
            .skip(1)
            .filter_map(|b| b.split("```").next())
            .collect();
        assert!(
            !blocks.is_empty(),
            "docs/hooks.md shows a PowerShell set-up"
        );
        for block in blocks {
            let bad = powershell_errors(block);
            assert!(bad.is_empty(), "{bad:?} in\n{block}");
        }
    }

    #[test]
    fn the_powershell_script_parses_as_written_and_rendered() {
        let template = Shell::PowerShell.template();
        let bad = powershell_errors(template);
        assert!(bad.is_empty(), "shell/pas-agent.ps1: {bad:?}");
        for p in NASTY.iter().chain(&[BIN]) {
            let script = render(Shell::PowerShell, Path::new(p), &commands()).unwrap();
            let bad = powershell_errors(&script);
            assert!(bad.is_empty(), "rendered with {p:?}: {bad:?}\n{script}");
        }
    }
}
