//! Ecosystem: shell completions in real shells under tmux, man pages rendered by
//! `man -l`, `doctor` on healthy and broken set-ups, colour only on a terminal, and the
//! newcomer's findings (runs alignment, prompt width, hints, outside git, a deleted session,
//! value tips, links in the docs).
#![allow(clippy::disallowed_macros)]

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;
use unicode_width::UnicodeWidthStr;

use crate::common::{Sandbox, bin, stderr, stdout};
use crate::hooks::require;
use crate::launcher_support::{Tmux, sh_quote};

/// A session with two checkpoints and `pas-agent` on PATH (as a user types it).
fn completion_world() -> Sandbox {
    let sb = Sandbox::with_session();
    sb.ok(&["checkpoint", "first mark"]);
    sb.ok(&["checkpoint", "second mark"]);
    std::os::unix::fs::symlink(bin(), sb.bin_dir.join("pas-agent")).unwrap();
    sb
}

/// Loads the completion script in `shell` (started by `line`), then: `pas-agent run cod<Tab>`
/// completes to `codex`, and `pas-agent show <Tab><Tab>` lists the session's checkpoint
/// numbers 1 and 2.
fn completes_in(shell: &str, rc: &str, line: &str, prompt: &str) {
    let sb = completion_world();
    let rc_path = sb.home.join(format!("rc.{shell}"));
    std::fs::write(&rc_path, rc).unwrap();
    let line = line
        .replace("{RC}", &sh_quote(&rc_path.to_string_lossy()))
        .replace("{HOME}", &sh_quote(&sb.home.to_string_lossy()));
    if shell == "zsh" {
        std::fs::write(sb.home.join(".zshrc"), rc).unwrap();
    }
    let term = Tmux::start_shell(&sb, &line, 160, 40);
    let screen = term.wait_screen(prompt);
    assert!(
        !screen.contains("error") && !screen.contains("command not found"),
        "{shell}: the completion script did not load cleanly:\n{screen}"
    );
    term.keys(&["-l", "pas-agent run cod"]);
    term.keys(&["Tab"]);
    term.wait_screen("pas-agent run codex");
    term.keys(&["C-u"]);
    term.keys(&["-l", "pas-agent show "]);
    term.keys(&["Tab"]);
    term.keys(&["Tab"]);
    let screen = term.wait_screen("--json");
    // The words offered, below the line typed.
    let offered: Vec<&str> = screen
        .lines()
        .skip_while(|l| !l.contains("pas-agent show"))
        .skip(1)
        .flat_map(str::split_whitespace)
        .collect();
    assert!(
        offered.contains(&"1") && offered.contains(&"2"),
        "{shell}: checkpoint numbers 1 and 2 were not offered:\n{screen}"
    );
    // Nothing offers a third checkpoint: the numbers come from the session.
    assert!(!offered.contains(&"3"), "{screen}");
}

#[test]
fn bash_completes_agents_and_checkpoints() {
    require("bash");
    completes_in(
        "bash",
        "PS1='READY$ '\nsource <(pas-agent completions bash)\n",
        "exec bash --noprofile --rcfile {RC} -i",
        "READY$",
    );
}

#[test]
fn zsh_completes_agents_and_checkpoints() {
    require("zsh");
    completes_in(
        "zsh",
        "PROMPT='READY%% '\nautoload -U compinit && compinit -u\nsource <(pas-agent completions zsh)\n",
        "ZDOTDIR={HOME} exec zsh -d -i",
        "READY%",
    );
}

#[test]
fn fish_completes_agents_and_checkpoints() {
    require("fish");
    completes_in(
        "fish",
        "function fish_prompt; echo -n 'READY> '; end\npas-agent completions fish | source\n",
        "exec fish --no-config -i -C \"source {RC}\"",
        "READY>",
    );
}

/// Every shell's script is printed, and names this binary for the call back.
#[test]
fn completion_scripts_for_every_shell() {
    let sb = Sandbox::plain();
    for shell in ["bash", "zsh", "fish", "powershell", "elvish", "pwsh"] {
        let script = sb.ok(&["completions", shell]);
        assert!(script.contains("PAS_AGENT_COMPLETE"), "{shell}: {script}");
        assert!(
            script.contains(&*bin().canonicalize().unwrap().to_string_lossy()),
            "{shell}: {script}"
        );
    }
    sb.fails(&["completions", "tcsh"], 2);
}

/// `man --dir` writes one page per command (the same list clap completes), and each renders
/// with `man -l` without a warning.
#[test]
fn man_pages_render_for_every_command() {
    let man = require("man");
    let sb = Sandbox::plain();
    let dir = sb.tmp.path().join("man1");
    std::fs::create_dir_all(&dir).unwrap();
    sb.ok(&["man", "--dir", dir.to_str().unwrap()]);
    // The commands, as the completion engine lists them.
    let out = sb
        .cmd()
        .env("PAS_AGENT_COMPLETE", "fish")
        .args(["--", "pas-agent", ""])
        .output()
        .unwrap();
    let commands: Vec<String> = stdout(&out)
        .lines()
        .filter_map(|l| l.split('\t').next())
        .filter(|w| !w.starts_with('-') && *w != "help")
        .map(String::from)
        .collect();
    assert!(commands.len() > 15, "{commands:?}");
    for c in &commands {
        assert!(
            dir.join(format!("pas-agent-{c}.1")).is_file(),
            "no page for {c}"
        );
    }
    let pages: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
    assert_eq!(pages.len(), commands.len() + 1);
    for page in pages {
        let out = Command::new(&man)
            .args(["--warnings", "-l"])
            .arg(page.path())
            .env("MANPAGER", "cat")
            .env("MANWIDTH", "100")
            .env("LC_ALL", "C.UTF-8")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let text = stdout(&out);
        assert!(out.status.success(), "{:?}: {}", page.path(), stderr(&out));
        assert!(
            stderr(&out).trim().is_empty(),
            "{:?}: {}",
            page.path(),
            stderr(&out)
        );
        assert!(text.contains("SYNOPSIS") && text.contains("NAME"), "{text}");
    }
    // On stdout: the page of one command, and an unknown command is a usage error.
    let run_page = sb.ok(&["man", "run"]);
    assert!(run_page.contains("pas\\-agent\\-run"), "{run_page}");
    sb.fails(&["man", "nope"], 2);
    // Help points to the manual and the docs by URL, not to a file of the source tree.
    let help = sb.ok(&["--help"]);
    assert!(
        help.contains("pas-agent man") && help.contains("https://"),
        "{help}"
    );
}

fn doctor(sb: &Sandbox, path: Option<&str>) -> (i32, Value) {
    let mut cmd = sb.cmd();
    if let Some(p) = path {
        cmd.env("PATH", p);
    }
    let out = cmd.args(["doctor", "--json"]).output().unwrap();
    let json: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", stdout(&out), stderr(&out)));
    (out.status.code().unwrap(), json)
}

fn problems(json: &Value) -> Vec<&Value> {
    json["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["level"] == "problem")
        .collect()
}

#[test]
fn doctor_on_a_healthy_set_up() {
    let sb = Sandbox::with_session();
    sb.write("a.txt", "a\n");
    sb.git(&["add", "-A"]);
    sb.git(&["commit", "-qm", "one"]);
    sb.ok(&["checkpoint", "clean"]);
    // The start-up line runs the pas-agent on PATH: this one.
    std::os::unix::fs::symlink(bin(), sb.bin_dir.join("pas-agent")).unwrap();
    std::fs::write(sb.home.join(".bashrc"), "eval \"$(pas-agent hook bash)\"\n").unwrap();
    let (code, json) = doctor(&sb, None);
    assert_eq!(code, 0, "{json:#}");
    assert_eq!(json["ok"], true);
    assert!(problems(&json).is_empty(), "{json:#}");
    let find = |name: &str| {
        json["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no {name}: {json:#}"))
            .clone()
    };
    assert!(
        find("git")["detail"]
            .as_str()
            .unwrap()
            .starts_with("git version")
    );
    assert!(
        find("repository")["detail"]
            .as_str()
            .unwrap()
            .contains("in-process")
    );
    assert_eq!(find("bash hook")["detail"], "in ~/.bashrc");
    assert_eq!(find("zsh hook")["level"], "info");
    // Every agent in the table is reported, found or not.
    for agent in [
        "claude-code",
        "codex",
        "gemini-cli",
        "opencode",
        "aider",
        "goose",
    ] {
        find(agent);
    }
    // Text: the same verdict.
    let text = sb.ok(&["doctor"]);
    assert!(text.contains("All well."), "{text}");
}

#[test]
fn doctor_on_a_broken_set_up() {
    // git missing from PATH.
    let sb = Sandbox::with_session();
    let (code, json) = doctor(&sb, Some(&sb.bin_dir.to_string_lossy()));
    assert_eq!(code, 1, "{json:#}");
    let git = problems(&json)
        .into_iter()
        .find(|c| c["name"] == "git")
        .unwrap_or_else(|| panic!("{json:#}"))
        .clone();
    assert!(
        git["fix"].as_str().unwrap().contains("install git"),
        "{git}"
    );

    // A damaged session and a stale temp file.
    let sb = Sandbox::with_session();
    sb.write(".pas-agent/session.json", "{ not json");
    sb.write(".pas-agent/.session.json.Ab12Cd.tmp", "half");
    let (code, json) = doctor(&sb, None);
    assert_eq!(code, 1, "{json:#}");
    let found = problems(&json);
    let session = found
        .iter()
        .find(|c| c["name"] == "session file")
        .unwrap_or_else(|| panic!("{json:#}"));
    assert!(session["fix"].is_string(), "{session}");
    let temp = found
        .iter()
        .find(|c| c["name"] == "temp file")
        .unwrap_or_else(|| panic!("{json:#}"));
    assert!(
        temp["fix"]
            .as_str()
            .unwrap()
            .contains(".session.json.Ab12Cd.tmp"),
        "{temp}"
    );
    // doctor changes nothing.
    assert!(sb.path(".pas-agent/.session.json.Ab12Cd.tmp").exists());
    assert_eq!(sb.read(".pas-agent/session.json"), "{ not json");
    // Text: each problem with its fix, and the count.
    let out = sb.cmd().arg("doctor").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(text.contains("fix: rm -- "), "{text}");
    assert!(text.contains("need attention"), "{text}");
}

/// Runs `pas-agent <args>` on a pseudo-terminal (util-linux `script`); returns what it wrote.
fn on_terminal(sb: &Sandbox, args: &str, env: &[(&str, &str)]) -> String {
    let script = require("script");
    let log = sb.tmp.path().join("typescript");
    let mut cmd = crate::launcher_support::isolated(sb, &script);
    cmd.env_remove("NO_COLOR").env("TERM", "xterm-256color");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let line = format!("{} {args}", sh_quote(&bin().to_string_lossy()));
    let out = cmd
        .args(["-q", "-e", "-c", &line])
        .arg(&log)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let _ = out;
    String::from_utf8_lossy(&std::fs::read(&log).unwrap()).into_owned()
}

#[test]
fn colour_on_a_terminal_only() {
    let sb = Sandbox::with_session();
    sb.ok(&["checkpoint", "one"]);
    sb.write("new.txt", "x\n");
    for args in ["status", "doctor", "runs --all"] {
        let _ = args;
    }
    let coloured = on_terminal(&sb, "status", &[]);
    assert!(coloured.contains("\u{1b}[33m"), "{coloured:?}");
    let doctor = on_terminal(&sb, "doctor", &[]);
    assert!(doctor.contains("\u{1b}[32m"), "{doctor:?}");
    for (args, env) in [
        ("status", &[("NO_COLOR", "1")][..]),
        ("status --color never", &[][..]),
        ("doctor", &[("NO_COLOR", "1")][..]),
        ("doctor --color=never", &[][..]),
    ] {
        let plain = on_terminal(&sb, args, env);
        assert!(!plain.contains('\u{1b}'), "{args}: {plain:?}");
    }
    // A pipe: none; `--color always`: even there.
    assert!(!sb.ok(&["status"]).contains('\u{1b}'));
    let forced = sb.ok(&["status", "--color", "always"]);
    assert!(forced.contains("\u{1b}[33m"), "{forced:?}");
}

#[test]
fn runs_columns_line_up_with_long_and_wide_agent_names() {
    let sb = Sandbox::with_session();
    for name in ["a-very-long-agent-name-indeed", "エージェント", "sh"] {
        sb.stand_in(name, "exit 0");
        sb.ok(&["run", "--no-pty", "--no-checkpoint", "--no-export", name]);
    }
    let out = sb.ok(&["runs"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 4, "{out}");
    // The state column starts at the same terminal column on every line.
    let state_col = |l: &str, word: &str| {
        let at = l.find(word).unwrap_or_else(|| panic!("{word} in {l}"));
        UnicodeWidthStr::width(&l[..at])
    };
    let head = state_col(lines[0], "state");
    for l in &lines[1..] {
        assert_eq!(state_col(l, "finished"), head, "{out}");
    }
}

#[test]
fn prompt_cuts_by_terminal_columns_and_takes_any_width() {
    let sb = Sandbox::repo();
    sb.ok(&["init", "--task", "漢字漢字漢字漢字漢字漢字漢字漢字"]);
    let out = sb.ok(&["prompt", "--width", "10"]);
    let task = out.trim_end();
    assert!(task.ends_with('…'), "{task:?}");
    assert!(UnicodeWidthStr::width(task) <= 10, "{task:?}");
    assert!(UnicodeWidthStr::width(task) >= 9, "{task:?}");
    let emoji = Sandbox::repo();
    emoji.ok(&["init", "--task", "🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀"]);
    let out = emoji.ok(&["prompt"]);
    assert!(UnicodeWidthStr::width(out.trim_end()) <= 32, "{out:?}");
    for width in ["3", "0", "7", "99999999999"] {
        let out = sb.run(&["prompt", "--width", width]);
        assert_eq!(out.status.code(), Some(0), "--width {width}");
        assert!(stderr(&out).is_empty(), "--width {width}: {}", stderr(&out));
        assert!(!stdout(&out).trim().is_empty());
    }
}

#[test]
fn export_hints_name_what_claude_code_reads() {
    let sb = Sandbox::with_session();
    std::fs::create_dir_all(sb.path(".claude")).unwrap();
    for file in ["CLAUDE.local.md", ".claude/CLAUDE.md"] {
        let out = sb.ok(&["export", "--to", "claude", "-o", file]);
        assert!(out.contains(&format!("reads {file}")), "{out}");
        assert!(!out.contains("not this file"), "{out}");
    }
    let out = sb.ok(&["export", "--to", "claude", "-o", "notes.md"]);
    assert!(out.contains("not this file"), "{out}");
}

#[test]
fn a_run_outside_git_says_nothing_is_tracked() {
    let sb = Sandbox::plain();
    sb.ok(&["init", "--task", "t"]);
    let out = sb.run(&["run", "--no-pty", "sh", "-c", "echo x > written.txt"]);
    assert!(out.status.success());
    let err = stderr(&out);
    assert!(err.contains("not tracked here"), "{err}");
    assert!(!err.contains("0 files changed"), "{err}");
}

#[test]
fn a_session_deleted_during_a_run_is_not_recreated() {
    let sb = Sandbox::with_session();
    let out = sb.run(&["run", "--no-pty", "sh", "-c", "rm -rf .pas-agent"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        !sb.path(".pas-agent").exists(),
        "{:?}",
        std::fs::read_dir(sb.path(".pas-agent"))
            .map(|d| d.flatten().map(|e| e.file_name()).collect::<Vec<_>>())
    );
    assert!(stderr(&out).contains("was deleted"), "{}", stderr(&out));
    // One line says so; nothing claims the outcome is kept for a later command.
    assert!(!stderr(&out).contains("is kept in"), "{}", stderr(&out));
}

#[test]
fn values_starting_with_a_dash_get_a_tip_and_run_help_says_how_to_reach_the_agent() {
    let sb = Sandbox::with_session();
    let err = sb.fails(&["update", "--remaining", "-x"], 2);
    assert!(err.contains("'--remaining=-x'"), "{err}");
    let err = sb.fails(&["update", "--next", "--verbose"], 2);
    assert!(err.contains("'--next=--verbose'"), "{err}");
    // A flag that takes no value gets no such tip.
    let err = sb.fails(&["update", "--clear-next", "-x"], 2);
    assert!(!err.contains("tip: to give"), "{err}");
    // The tip is right: the attached form works.
    sb.ok(&["update", "--remaining=-x"]);
    assert_eq!(sb.session()["task"]["remaining"][0], "-x");
    let help = sb.ok(&["run", "codex", "--help"]);
    assert!(help.contains("pas-agent run codex -- --help"), "{help}");
}

/// Every relative link in README.md and docs/*.md leads to a file that exists, and every
/// `#anchor` to a heading of that file (GitHub's slugs).
#[test]
fn links_and_anchors_in_the_docs_resolve() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md")];
    for e in std::fs::read_dir(root.join("docs")).unwrap().flatten() {
        if e.path().extension().is_some_and(|x| x == "md") {
            files.push(e.path());
        }
    }
    let mut broken = Vec::new();
    let mut checked = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for target in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let dest = if path.is_empty() {
                file.clone()
            } else {
                file.parent().unwrap().join(path)
            };
            checked += 1;
            if !dest.exists() {
                broken.push(format!("{}: {target}: no such file", file.display()));
                continue;
            }
            if let Some(anchor) = anchor {
                let dest_text = std::fs::read_to_string(&dest).unwrap_or_default();
                if !slugs(&dest_text).iter().any(|s| s == anchor) {
                    broken.push(format!("{}: {target}: no such heading", file.display()));
                }
            }
        }
    }
    assert!(checked > 10, "only {checked} links found");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// The targets of `[text](target)` links outside code blocks and code spans.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Drop code spans.
        let mut plain = String::new();
        let mut in_code = false;
        for c in line.chars() {
            if c == '`' {
                in_code = !in_code;
            } else if !in_code {
                plain.push(c);
            }
        }
        let mut rest = plain.as_str();
        while let Some(i) = rest.find("](") {
            let after = &rest[i + 2..];
            let Some(end) = after.find(')') else { break };
            let target = after[..end].split_whitespace().next().unwrap_or("");
            if !target.is_empty() {
                out.push(target.to_string());
            }
            rest = &after[end..];
        }
    }
    out
}

/// GitHub's heading anchors: lower case, punctuation but `-` and `_` dropped, spaces to `-`,
/// repeats numbered `-1`, `-2`.
fn slugs(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced || !line.starts_with('#') {
            continue;
        }
        let title = line.trim_start_matches('#').trim();
        let slug: String = title
            .to_lowercase()
            .chars()
            .filter_map(|c| match c {
                ' ' => Some('-'),
                c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                _ => None,
            })
            .collect();
        let n = out
            .iter()
            .filter(|s| *s == &slug || s.starts_with(&format!("{slug}-")))
            .count();
        let base_count = out.iter().filter(|s| **s == slug).count();
        if base_count == 0 {
            out.push(slug);
        } else {
            out.push(format!("{slug}-{n}"));
        }
    }
    out
}

/// What the completion engine offers (`PAS_AGENT_COMPLETE=fish`, one `value<TAB>help` per line) for the
/// words after `pas-agent`.
fn offered(sb: &Sandbox, words: &[&str]) -> Vec<(String, String)> {
    let out = sb
        .cmd()
        .env("PAS_AGENT_COMPLETE", "fish")
        .args(["--", "pas-agent"])
        .args(words)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
        .lines()
        .map(|l| {
            let (v, h) = l.split_once('\t').unwrap_or((l, ""));
            (v.to_string(), h.to_string())
        })
        .collect()
}

/// Item numbers come from the session's lists, export targets from the agents table, and
/// outside a session no number is offered (and nothing is printed on stderr).
#[test]
fn completion_offers_items_targets_and_nothing_outside_a_session() {
    let sb = Sandbox::with_session();
    sb.ok(&[
        "update",
        "--remaining",
        "write docs",
        "--remaining",
        "ship it",
    ]);
    sb.ok(&["update", "--blocker", "CI is red"]);
    let done = offered(&sb, &["update", "--done", ""]);
    assert!(done.contains(&("2".into(), "ship it".into())), "{done:?}");
    assert!(!done.iter().any(|(v, _)| v == "3"), "{done:?}");
    let resolve = offered(&sb, &["update", "--resolve", ""]);
    assert_eq!(resolve, vec![("1".to_string(), "CI is red".to_string())]);
    let targets = offered(&sb, &["export", "--to", "ge"]);
    assert!(targets.iter().any(|(v, _)| v == "gemini"), "{targets:?}");
    let agents = offered(&sb, &["run", "qw"]);
    assert!(agents.iter().any(|(v, _)| v == "qwen"), "{agents:?}");
    let outside = Sandbox::plain();
    let none = offered(&outside, &["show", ""]);
    assert!(none.iter().all(|(v, _)| v.starts_with('-')), "{none:?}");
}

/// A registry entry whose launcher is gone is a problem, and the fix doctor names clears it.
#[test]
fn doctor_names_a_fix_that_clears_a_dead_registry_entry() {
    let sb = Sandbox::with_session();
    let mut child = Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    let reg = sb.home.join(".local/state/pas-agent");
    std::fs::create_dir_all(&reg).unwrap();
    let entry = serde_json::json!({
        "schema_version": 1,
        "runs": [{
            "run_id": "0b4a6a4e-9d7e-4c1e-8f6e-2b1f0f1d2c3a",
            "project": sb.tmp.path().join("gone").to_string_lossy(),
            "session_id": "1c5b7b5f-0e8f-4d2f-9a7f-3c2a1a2e3d4b",
            "agent": "codex",
            "argv": ["codex"],
            "cwd": "/",
            "started_at": "2026-01-01T00:00:00Z",
            "launcher_pid": pid
        }]
    });
    std::fs::write(reg.join("runs.json"), entry.to_string()).unwrap();
    let (code, json) = doctor(&sb, None);
    assert_eq!(code, 1, "{json:#}");
    let dead = problems(&json)
        .into_iter()
        .find(|c| c["name"] == "dead runs")
        .unwrap_or_else(|| panic!("{json:#}"))
        .clone();
    let fix = dead["fix"].as_str().unwrap();
    assert_eq!(fix, "pas-agent runs --all");
    let args: Vec<&str> = fix.split_whitespace().skip(1).collect();
    sb.ok(&args);
    let (_, json) = doctor(&sb, None);
    assert!(
        !json["checks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["name"] == "dead runs"),
        "{json:#}"
    );
}

/// A generic `COMPLETE` in the environment (set for other tools) diverts neither the prompt
/// segment nor an agent's lifecycle hook into answering completions: pas-agent's own variable
/// is `PAS_AGENT_COMPLETE`.
#[test]
fn a_generic_complete_variable_diverts_nothing() {
    let sb = Sandbox::with_session();
    for value in ["1", "bash", "fish"] {
        let out = sb
            .cmd()
            .env("COMPLETE", value)
            .arg("prompt")
            .output()
            .unwrap();
        assert!(out.status.success(), "COMPLETE={value}");
        assert!(out.stderr.is_empty(), "COMPLETE={value}: {out:?}");
        assert!(!String::from_utf8_lossy(&out.stdout).contains("complete"));
        let out = sb
            .cmd()
            .env("COMPLETE", value)
            .args(["lifecycle", "claude", "stop"])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "COMPLETE={value}: {out:?}");
        assert!(out.stdout.is_empty(), "COMPLETE={value}: {out:?}");
        let out = sb
            .cmd()
            .env("COMPLETE", value)
            .arg("status")
            .output()
            .unwrap();
        assert!(out.status.success(), "COMPLETE={value}: {out:?}");
    }
}
