//! A newcomer's first hour: the set-up script, the manual pages, links that lead somewhere, the
//! version, `integrate --remove` giving back what was there, lists that fit 80 columns,
//! completions that load every documented way in real shells, and `doctor` checking every
//! integration (against the real Codex's own verdict on its hooks' approval).
#![allow(clippy::disallowed_macros)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;
use unicode_width::UnicodeWidthStr;

use crate::common::{Sandbox, bin, stderr, stdout, walk};
use crate::hooks::require;
use crate::launcher_support::{Tmux, sh_quote};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Copies the binary to `to` and waits until it can be started: while another test's child,
/// forked before the copy's file was closed, has not yet started its own program, starting the
/// copy fails with "text file busy" (ETXTBSY).
fn copy_binary(to: &Path) {
    std::fs::copy(bin(), to).unwrap();
    for _ in 0..200 {
        match Command::new(to).arg("--version").output() {
            Err(e) if e.raw_os_error() == Some(26) => {
                std::thread::sleep(std::time::Duration::from_millis(25))
            }
            _ => return,
        }
    }
}

// ---------------------------------------------------------------------------------------
// scripts/demo.sh

/// The demo finds the binary cargo names (here a stand-in `cargo` that names it in a folder
/// of its own choosing, as `CARGO_TARGET_DIR` would), runs the main job, and leaves nothing
/// behind in its temporary folder; `--keep` keeps the scratch repository and says where.
#[test]
fn the_demo_finds_the_binary_where_cargo_put_it_and_cleans_up() {
    let sb = Sandbox::plain();
    let target = sb.tmp.path().join("elsewhere/release");
    std::fs::create_dir_all(&target).unwrap();
    copy_binary(&target.join("pas-agent"));
    // cargo's own message shapes (`--message-format=json-render-diagnostics`): one artifact
    // line per target built, then `build-finished`.
    sb.stand_in(
        "cargo",
        &format!(
            "case \"$*\" in *--message-format=json-render-diagnostics*) ;; *) echo \"unexpected: $*\" >&2; exit 9;; esac\n\
             echo '{{\"reason\":\"compiler-artifact\",\"package_id\":\"path+file:///x#pas-agent@0.4.0\",\"target\":{{\"kind\":[\"lib\"],\"name\":\"pas_agent\"}},\"filenames\":[\"/x/libpas_agent.rlib\"],\"executable\":null,\"fresh\":true}}'\n\
             echo '{{\"reason\":\"compiler-artifact\",\"package_id\":\"path+file:///x#pas-agent@0.4.0\",\"target\":{{\"kind\":[\"bin\"],\"name\":\"pas-agent\"}},\"filenames\":[\"{exe}\"],\"executable\":\"{exe}\",\"fresh\":true}}'\n\
             echo '{{\"reason\":\"build-finished\",\"success\":true}}'\n\
             echo '    Finished `release` profile [optimized] target(s) in 0.05s' >&2",
            exe = target.join("pas-agent").display()
        ),
    );
    let tmpdir = sb.tmp.path().join("tmp");
    std::fs::create_dir_all(&tmpdir).unwrap();
    let run = |args: &[&str]| {
        let mut cmd = Command::new("bash");
        cmd.arg(root().join("scripts/demo.sh"))
            .args(args)
            .env(
                "PATH",
                format!(
                    "{}:{}",
                    sb.bin_dir.display(),
                    std::env::var("PATH").unwrap()
                ),
            )
            .env("TMPDIR", &tmpdir)
            .env("HOME", &sb.home)
            .stdin(Stdio::null());
        cmd.output().unwrap()
    };
    let out = run(&[]);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}\n{}", stderr(&out));
    for want in [
        "Started a pas-agent session.",
        "demo-agent: wrote greet.py and committed it",
        "finished",
        "Test greet()",
    ] {
        assert!(text.contains(want), "{want}:\n{text}");
    }
    assert!(
        text.contains(&target.join("pas-agent").display().to_string()),
        "{text}"
    );
    assert_eq!(
        std::fs::read_dir(&tmpdir).unwrap().count(),
        0,
        "the scratch folder is removed"
    );
    // Nothing of the user's home was touched: the demo keeps its own.
    assert!(walk(&sb.home).iter().all(|p| p.ends_with(".gitconfig")));
    let out = run(&["--keep"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let kept: Vec<_> = std::fs::read_dir(&tmpdir).unwrap().flatten().collect();
    assert_eq!(kept.len(), 1);
    assert!(stdout(&out).contains("The scratch repository is"));
    assert!(kept[0].path().join("repo/greet.py").is_file());
    assert!(!run(&["--bogus"]).status.success());
}

// ---------------------------------------------------------------------------------------
// pas-agent man --dir

fn man_cmd(sb: &Sandbox, path: &str) -> Command {
    let mut cmd = Command::new(require("man"));
    cmd.env_clear()
        .env("HOME", &sb.home)
        .env("PATH", path)
        .env("LC_ALL", "C.UTF-8")
        .env("MANPAGER", "cat")
        .stdin(Stdio::null());
    cmd
}

/// A fresh account: `man --dir ~/.local/share/man/man1` creates the folder, writes the pages,
/// and says that `man` will not look there when no `~/.local/bin` is on PATH (and what to
/// set, which then works); beside a `bin` folder on PATH (`cargo install`'s `~/.cargo/bin`,
/// `~/.local/bin`) man-db finds them with nothing set, and nothing is said.
#[test]
fn man_dir_creates_the_folder_and_says_when_man_will_not_find_it() {
    require("manpath");
    let sb = Sandbox::plain();
    let cargo_bin = sb.home.join(".cargo/bin");
    std::fs::create_dir_all(&cargo_bin).unwrap();
    copy_binary(&cargo_bin.join("pas-agent"));
    let system = "/usr/local/bin:/usr/bin:/bin";
    let pas = |path: &str, dir: &Path| {
        Command::new(cargo_bin.join("pas-agent"))
            .env_clear()
            .env("HOME", &sb.home)
            .env("PATH", path)
            .args(["man", "--dir"])
            .arg(dir)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let local = sb.home.join(".local/share/man/man1");
    let out = pas(system, &local);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(local.join("pas-agent.1").is_file() && local.join("pas-agent-run.1").is_file());
    let said = stderr(&out);
    assert!(said.contains("will not find"), "{said}");
    assert!(said.contains("export MANPATH="), "{said}");
    // Not found as it is; found with the MANPATH the note gives.
    let found = |cmd: &mut Command| cmd.args(["-w", "pas-agent-run"]).output().unwrap();
    assert!(!found(&mut man_cmd(&sb, system)).status.success());
    let manpath = format!("{}:", sb.home.join(".local/share/man").display());
    let out = found(man_cmd(&sb, system).env("MANPATH", &manpath));
    assert!(out.status.success(), "{}", stderr(&out));

    // With ~/.local/bin on PATH, man-db looks in ~/.local/share/man by itself.
    std::fs::create_dir_all(sb.home.join(".local/bin")).unwrap();
    let with_local = format!("{}:{system}", sb.home.join(".local/bin").display());
    let out = pas(&with_local, &local);
    assert!(!stderr(&out).contains("will not find"), "{}", stderr(&out));
    assert!(found(&mut man_cmd(&sb, &with_local)).status.success());

    // `cargo install`: ~/.cargo/bin on PATH, pages in ~/.cargo/share/man/man1 (README).
    let with_cargo = format!("{}:{system}", cargo_bin.display());
    let pages = sb.home.join(".cargo/share/man/man1");
    let out = pas(&with_cargo, &pages);
    assert!(out.status.success() && !stderr(&out).contains("will not find"));
    let out = found(&mut man_cmd(&sb, &with_cargo));
    assert!(out.status.success(), "{}", stderr(&out));
    // The note for a folder man does not read pages from.
    let out = pas(system, &sb.home.join("pages"));
    assert!(stderr(&out).contains("man1"), "{}", stderr(&out));
}

// ---------------------------------------------------------------------------------------
// Links and the version

/// The repository's URL, as Cargo.toml names it.
fn repository() -> String {
    let toml = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    toml.lines()
        .find_map(|l| l.strip_prefix("repository = \""))
        .and_then(|l| l.strip_suffix('"'))
        .expect("Cargo.toml names its repository")
        .to_string()
}

/// Every `https://…` and `http://…` in `text`, up to the first character a URL does not hold
/// here (space, quote, bracket, backtick), without a final `.`, `,` or `;`.
fn urls(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for start in ["https://", "http://"] {
        let mut rest = text;
        while let Some(i) = rest.find(start) {
            let tail = &rest[i..];
            let end = tail
                .find(|c: char| c.is_whitespace() || "\"'<>()[]`\\".contains(c) || c.is_control())
                .unwrap_or(tail.len());
            out.push(
                tail[..end]
                    .trim_end_matches(['.', ',', ';', ':'])
                    .to_string(),
            );
            rest = &tail[end..];
        }
    }
    out
}

/// Where a link into the repository leads in the tree: `…/blob/main/docs/x.md#a` →
/// (`docs/x.md`, `Some("a")`); `None` for a link that names no file of the tree.
fn in_tree(url: &str, repo: &str) -> Option<(PathBuf, Option<String>)> {
    let rest = url.strip_prefix(repo)?;
    let rest = rest
        .strip_prefix("/blob/main/")
        .or_else(|| rest.strip_prefix("/tree/main/"))?;
    let (path, anchor) = match rest.split_once('#') {
        Some((p, a)) => (p, Some(a.to_string())),
        None => (rest, None),
    };
    Some((root().join(path.trim_end_matches('/')), anchor))
}

/// GitHub's heading anchors of a Markdown file.
fn anchors(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced || !line.starts_with('#') {
            continue;
        }
        let slug: String = line
            .trim_start_matches('#')
            .trim()
            .to_lowercase()
            .chars()
            .filter_map(|c| match c {
                ' ' => Some('-'),
                c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                _ => None,
            })
            .collect();
        out.push(slug);
    }
    out
}

/// Checks every link to the repository in `text` (from `source`) against the tree, and that
/// no link points to a page of pas-agent elsewhere (it is published nowhere else); also every
/// `docs/<file>.md` named in it (not one inside a longer path: another repository's). Returns how many were checked.
fn check_links(source: &str, text: &str, repo: &str, broken: &mut Vec<String>) -> usize {
    let mut n = 0;
    for url in urls(text) {
        if let Some((path, anchor)) = in_tree(&url, repo) {
            n += 1;
            if !path.exists() {
                broken.push(format!("{source}: {url}: no {}", path.display()));
            } else if let Some(a) = anchor
                && !anchors(&path).contains(&a)
            {
                broken.push(format!("{source}: {url}: no heading #{a}"));
            }
        } else if url.contains("pas-agent") && !url.starts_with(repo) {
            broken.push(format!("{source}: {url}: pas-agent is not published there"));
        }
    }
    let mut rest = text;
    while let Some(i) = rest.find("docs/") {
        let tail = &rest[i..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || "/._-".contains(c)))
            .unwrap_or(tail.len());
        let name = tail[..end].trim_end_matches('.');
        // A `docs/` inside a longer path is another repository's (a cited source).
        let inside = text[..text.len() - rest.len() + i].ends_with('/');
        if name.ends_with(".md") && !inside {
            n += 1;
            if !root().join(name).is_file() {
                broken.push(format!("{source}: {name}: no such file"));
            }
        }
        rest = &tail[end.max(1)..];
    }
    n
}

/// Every link the binary prints — every command's help, the manual pages, the hints of
/// `init` and of an unmerged session, `doctor` — and every link compiled into it, and every
/// link in README.md, CHANGELOG.md and docs/, leads to a file of this tree (a heading of it
/// for an anchor).
#[test]
fn every_link_the_binary_prints_or_the_docs_hold_leads_to_a_file_in_the_tree() {
    let repo = repository();
    let mut broken = Vec::new();
    let mut checked = 0;
    let sb = Sandbox::repo();
    // Help texts, long and short, of pas-agent and each command (the completion engine lists
    // them, as in ecosystem.rs).
    let listed = sb
        .cmd()
        .env("PAS_AGENT_COMPLETE", "fish")
        .args(["--", "pas-agent", ""])
        .output()
        .unwrap();
    let mut commands: Vec<String> = stdout(&listed)
        .lines()
        .filter_map(|l| l.split('\t').next())
        .filter(|w| !w.starts_with('-'))
        .map(String::from)
        .collect();
    assert!(commands.len() > 15, "{commands:?}");
    commands.push(String::new());
    for c in &commands {
        for flag in ["--help", "-h"] {
            let mut args: Vec<&str> = c.split_whitespace().collect();
            args.push(flag);
            let out = sb.run(&args);
            checked += check_links(&format!("{c} {flag}"), &stdout(&out), &repo, &mut broken);
        }
    }
    // The manual pages.
    let pages = sb.tmp.path().join("man1");
    sb.ok(&["man", "--dir", pages.to_str().unwrap()]);
    for page in std::fs::read_dir(&pages).unwrap().flatten() {
        let text = std::fs::read_to_string(page.path())
            .unwrap()
            .replace("\\-", "-");
        checked += check_links(
            &page.path().display().to_string(),
            &text,
            &repo,
            &mut broken,
        );
    }
    // Hints: init's, an unmerged session's, doctor's.
    let init = sb.ok(&["init", "--task", "t"]);
    assert!(init.contains(&repo), "{init}");
    checked += check_links("init", &init, &repo, &mut broken);
    checked += check_links("doctor", &sb.ok(&["doctor"]), &repo, &mut broken);
    let session = sb.read(".pas-agent/session.json");
    sb.write(
        ".pas-agent/session.json",
        format!("<<<<<<< HEAD\n{session}=======\n{session}>>>>>>> other\n"),
    );
    let unmerged = sb.fails(&["status"], 7);
    assert!(unmerged.contains(&repo), "{unmerged}");
    checked += check_links("unmerged session", &unmerged, &repo, &mut broken);
    // Every link compiled into the binary, whatever prints it. Its strings are not ended by a
    // NUL, so each link must *begin* the bytes after the repository's URL: `/blob/main/` and a
    // file of the tree, or `/tree/main/` and a folder.
    let bytes = std::fs::read(bin()).unwrap();
    let text = String::from_utf8_lossy(&bytes);
    let mut files: Vec<String> = vec!["README.md".into(), "CHANGELOG.md".into()];
    for e in std::fs::read_dir(root().join("docs")).unwrap().flatten() {
        files.push(format!("docs/{}", e.file_name().to_string_lossy()));
    }
    let mut compiled = 0;
    for (i, _) in text.match_indices(repo.as_str()) {
        let after = &text[i + repo.len()..];
        compiled += 1;
        let ok = if let Some(path) = after.strip_prefix("/blob/main/") {
            files.iter().any(|f| path.starts_with(f.as_str()))
        } else if let Some(path) = after.strip_prefix("/tree/main/") {
            path.starts_with("docs/")
        } else {
            // The repository itself (Cargo.toml's `repository`, kept by a crate).
            true
        };
        if !ok {
            let shown: String = after.chars().take(60).collect();
            broken.push(format!(
                "the binary: {repo}{shown}…: names no file of the tree"
            ));
        }
    }
    assert!(compiled >= 2, "{compiled} links in the binary");
    checked += compiled;
    // The documents, links in them and URLs of the repository alike.
    let mut docs = vec![root().join("README.md"), root().join("CHANGELOG.md")];
    for e in std::fs::read_dir(root().join("docs")).unwrap().flatten() {
        docs.push(e.path());
    }
    for doc in docs {
        let text = std::fs::read_to_string(&doc).unwrap();
        for url in urls(&text) {
            if url.contains("docs.rs/crate/pas-agent") || url.contains("crates.io/crates/pas-agent")
            {
                broken.push(format!("{}: {url}: not published there", doc.display()));
            }
        }
        checked += check_links(&doc.display().to_string(), &text, &repo, &mut broken);
    }
    assert!(checked > 50, "only {checked} links checked");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// The binary, the manual pages, CHANGELOG.md, README.md and the docs' example of an export
/// name the same version.
#[test]
fn the_binary_readme_changelog_and_docs_agree_on_the_version() {
    let version = env!("CARGO_PKG_VERSION");
    let sb = Sandbox::plain();
    assert_eq!(sb.ok(&["--version"]).trim(), format!("pas-agent {version}"));
    assert!(sb.ok(&["man"]).contains(&format!("pas-agent {version}")));
    let changelog = std::fs::read_to_string(root().join("CHANGELOG.md")).unwrap();
    let first = changelog
        .lines()
        .filter_map(|l| l.strip_prefix("## ["))
        .find(|l| !l.starts_with("Unreleased"))
        .unwrap();
    assert!(first.starts_with(&format!("{version}]")), "{first}");
    assert!(changelog.contains("keepachangelog.com"));
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    assert!(
        readme.contains(&format!("pas-agent {version}")) && readme.contains("CHANGELOG.md"),
        "README.md names the version and the changelog"
    );
    let handoff = std::fs::read_to_string(root().join("docs/handoff.md")).unwrap();
    assert!(handoff.contains(&format!("_Exported by pas-agent {version}._")));
}

// ---------------------------------------------------------------------------------------
// integrate --remove

/// Every file and folder under `dir` (but `.git`), with the bytes of each file.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Option<Vec<u8>>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.file_name().is_some_and(|n| n == ".git") {
                continue;
            }
            if p.is_dir() {
                stack.push(p.clone());
                out.push((p, None));
            } else {
                let bytes = std::fs::read(&p).ok();
                out.push((p, bytes));
            }
        }
    }
    out.sort();
    out
}

/// Every agent `integrate` installs into (`pas-agent integrate --help`).
const EVERY_HOOKED: [&str; 7] = [
    "claude", "codex", "gemini", "copilot", "qwen", "droid", "pi",
];

/// `integrate` then `integrate --remove`, at both levels, for every agent, gives back the
/// project and the home folder as they were: files and folders it created go, files it
/// changed come back byte for byte — whatever their layout — and a file the user had, even
/// an empty `{}`, stays. A file changed since keeps the change.
#[test]
fn integrate_remove_gives_back_what_was_there() {
    let mut sb = Sandbox::with_session();
    let codex_home = sb.home.join(".codex");
    sb.env
        .push(("CODEX_HOME".into(), codex_home.to_string_lossy().into()));
    // Nothing there before: all of it goes again.
    let before_work = snapshot(&sb.work);
    let before_home = snapshot(&sb.home);
    for agent in EVERY_HOOKED {
        sb.ok(&["integrate", agent]);
        sb.ok(&["integrate", agent, "--user"]);
    }
    for (dir, user) in [
        (".claude", ".claude"),
        (".codex", ".codex"),
        (".gemini", ".gemini"),
        (".github/hooks", ".copilot/hooks"),
        (".qwen", ".qwen"),
        (".factory", ".factory"),
        (".pi/extensions", ".pi/agent/extensions"),
    ] {
        assert!(
            sb.path(dir).is_dir() && sb.home.join(user).is_dir(),
            "{dir} {user}"
        );
    }
    for agent in EVERY_HOOKED {
        let out = sb.ok(&["integrate", agent, "--remove"]);
        assert!(out.contains("removed"), "{out}");
        sb.ok(&["integrate", agent, "--user", "--remove"]);
    }
    let state = sb.home.join(".local/state");
    // pas-agent's own state and caches (the record of installs) are not the user's files.
    let local = sb.home.join(".local");
    let without_state = |v: Vec<(PathBuf, Option<Vec<u8>>)>| {
        v.into_iter()
            .filter(|(p, _)| {
                !p.starts_with(&state) && *p != local && !p.starts_with(sb.home.join(".cache"))
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(snapshot(&sb.work), before_work);
    assert_eq!(
        without_state(snapshot(&sb.home)),
        without_state(before_home)
    );

    // Files the user had, in layouts the parsers would write otherwise, and folders with other
    // files: all given back as they were.
    sb.write(".claude/settings.json", "{\"model\":\"opus\"}");
    sb.write(".claude/agents/reviewer.md", "x\n");
    sb.write(".gemini/settings.json", "{ }");
    sb.write(".codex/config.toml", "[hooks]\r\nmodel = \"o3\"");
    std::fs::create_dir_all(sb.home.join(".claude")).unwrap();
    std::fs::write(sb.home.join(".claude/settings.json"), "{}").unwrap();
    let before_work = snapshot(&sb.work);
    let before_home = without_state(snapshot(&sb.home));
    for agent in ["claude", "codex", "gemini"] {
        sb.ok(&["integrate", agent]);
    }
    sb.ok(&["integrate", "claude", "--user"]);
    assert_ne!(snapshot(&sb.work), before_work);
    for agent in ["claude", "codex", "gemini"] {
        sb.ok(&["integrate", agent, "--remove"]);
    }
    sb.ok(&["integrate", "claude", "--user", "--remove"]);
    assert_eq!(snapshot(&sb.work), before_work);
    assert_eq!(without_state(snapshot(&sb.home)), before_home);

    // Changed after the install: pas-agent's entries go, the change stays.
    sb.ok(&["integrate", "claude"]);
    let installed = sb.read(".claude/settings.json");
    let changed = installed.replacen("{", "{\n  \"theme\": \"dark\",", 1);
    sb.write(".claude/settings.json", &changed);
    sb.ok(&["integrate", "claude", "--remove"]);
    let v: Value = serde_json::from_str(&sb.read(".claude/settings.json")).unwrap();
    assert_eq!(v["theme"], "dark");
    assert_eq!(v["model"], "opus");
    assert!(v.get("hooks").is_none(), "{v}");

    // Rewritten without the hooks (as an agent may), installed again, removed: the rewrite is
    // what comes back, not the file before the first install.
    sb.write(".claude/settings.json", "{\"model\":\"opus\"}");
    sb.ok(&["integrate", "claude"]);
    sb.write(
        ".claude/settings.json",
        "{\"model\":\"sonnet\",\"theme\":\"light\"}",
    );
    sb.ok(&["integrate", "claude"]);
    sb.ok(&["integrate", "claude", "--remove"]);
    assert_eq!(
        sb.read(".claude/settings.json"),
        "{\"model\":\"sonnet\",\"theme\":\"light\"}"
    );
}

// ---------------------------------------------------------------------------------------
// runs

/// Adds runs to the session as the launcher records them, with the widest values the list
/// meets: a long agent id, `abandoned`, a signal, hours, a UUID v7 session id.
fn wide_runs(sb: &Sandbox) {
    sb.stand_in("agent", "exit 0");
    sb.ok(&["run", "--no-pty", "--no-checkpoint", "--no-export", "agent"]);
    let path = sb.path(".pas-agent/session.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let first = v["runs"][0].clone();
    let runs = v["runs"].as_array_mut().unwrap();
    for i in 0..120 {
        let mut r = first.clone();
        r["id"] = Value::from(uuid_like(i));
        r["agent"] = Value::from(if i % 2 == 0 {
            "cursor-agent"
        } else {
            "claude-code"
        });
        r["state"] = Value::from(if i % 3 == 0 { "abandoned" } else { "finished" });
        if i % 3 == 0 {
            r["exit_code"] = Value::Null;
            r["signal"] = Value::from(15);
        }
        r["duration_ms"] = Value::from(43_800_000);
        r["agent_session_id"] = Value::from(format!("0199c6e0-3f9a-7c12-8d2e-5cbd5220{i:04}"));
        if i == 0 {
            r["started_at"] = Value::from("2024-03-01T10:00:00Z");
        }
        runs.push(r);
    }
    std::fs::write(&path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
}

fn uuid_like(i: usize) -> String {
    format!("00000000-0000-4000-8000-{i:012}")
}

fn widest(text: &str) -> usize {
    text.lines().map(UnicodeWidthStr::width).max().unwrap_or(0)
}

/// `runs` fits 80 columns with the widest values it meets (session ids shortened to their
/// end, the year only for other years); `--wide` shows them whole.
#[test]
fn runs_fits_80_columns_and_wide_shows_everything() {
    let sb = Sandbox::with_session();
    wide_runs(&sb);
    let list = sb.ok(&["runs"]);
    assert_eq!(list.lines().count(), 122, "{list}");
    assert!(widest(&list) <= 80, "{} columns:\n{list}", widest(&list));
    let last = list.lines().last().unwrap();
    assert!(last.ends_with("…2200119"), "{last}");
    assert!(list.contains("2024-03-01"), "{list}");
    let wide = sb.ok(&["runs", "--wide"]);
    assert!(
        wide.contains("0199c6e0-3f9a-7c12-8d2e-5cbd52200119"),
        "{wide}"
    );
    assert!(wide.contains("2024-03-01 10:00 UTC"), "{wide}");
    assert!(widest(&wide) > 80);
    // The columns still line up: each header starts where its cells do.
    let header = list.lines().next().unwrap();
    let state_at = header.find("state").unwrap();
    for line in list.lines().skip(1) {
        let cells = &line[state_at..];
        assert!(
            cells.starts_with("finished") || cells.starts_with("abandoned"),
            "{line}"
        );
    }
}

/// `runs --all` fits 80 columns however deep the project is (its path cut from the left, as
/// `~/…` under the home folder); `--wide` shows it whole.
#[test]
fn runs_all_fits_80_columns() {
    let sb = Sandbox::plain();
    let deep = "a-rather-long-folder-name/another-long-folder-name/and-one-more-level-of-it";
    std::fs::create_dir_all(sb.path(deep)).unwrap();
    let git = sb
        .git_cmd()
        .current_dir(sb.path(deep))
        .args(["init", "-q"])
        .output()
        .unwrap();
    assert!(git.status.success());
    let out = sb.run_in(deep, &["init", "--task", "t"]);
    assert!(out.status.success(), "{}", stderr(&out));
    sb.stand_in("sleeper", "touch started; sleep 30");
    let mut child = sb
        .cmd()
        .current_dir(sb.path(deep))
        .args([
            "run",
            "--no-pty",
            "--no-checkpoint",
            "--no-export",
            "sleeper",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    sb.wait_for(&format!("{deep}/started"));
    let list = sb.ok(&["runs", "--all"]);
    let wide = sb.ok(&["runs", "--all", "--wide"]);
    let _ = child.kill();
    let _ = child.wait();
    assert!(list.contains("sleeper"), "{list}");
    assert!(widest(&list) <= 80, "{list}");
    assert!(list.contains('…'), "{list}");
    assert!(wide.contains(deep), "{wide}");
}

// ---------------------------------------------------------------------------------------
// Completions in real shells

/// A session with two checkpoints and `pas-agent` on PATH (as a user types it).
fn completion_world() -> Sandbox {
    let sb = Sandbox::with_session();
    sb.ok(&["checkpoint", "first mark"]);
    sb.ok(&["checkpoint", "second mark"]);
    std::os::unix::fs::symlink(bin(), sb.bin_dir.join("pas-agent")).unwrap();
    sb
}

/// `pas-agent completions <shell>`, as the user's shell would run it.
fn script(sb: &Sandbox, shell: &str) -> String {
    let out = Command::new(sb.bin_dir.join("pas-agent"))
        .args(["completions", shell])
        .env(
            "PATH",
            format!(
                "{}:{}",
                sb.bin_dir.display(),
                std::env::var("PATH").unwrap()
            ),
        )
        .output()
        .unwrap();
    assert!(out.status.success());
    stdout(&out)
}

/// In a shell started by `line` in `sb` (waiting for `prompt`), loading raised no error, and
/// the first Tab completes `pas-agent run cod` to `codex`, then `pas-agent show <Tab><Tab>`
/// offers the session's checkpoints 1 and 2.
fn first_tab_completes(sb: &Sandbox, line: &str, prompt: &str, what: &str) {
    let term = Tmux::start_shell(sb, line, 160, 40);
    let screen = term.wait_screen(prompt);
    for bad in ["error", "command not found", "not found", "No such"] {
        assert!(
            !screen.contains(bad),
            "{what}: loading said {bad:?}:\n{screen}"
        );
    }
    term.keys(&["-l", "pas-agent run cod"]);
    term.keys(&["Tab"]);
    term.wait_screen("pas-agent run codex");
    term.keys(&["C-u"]);
    term.keys(&["-l", "pas-agent show "]);
    term.keys(&["Tab"]);
    term.keys(&["Tab"]);
    let screen = term.wait_screen("--json");
    let offered: Vec<&str> = screen
        .lines()
        .skip_while(|l| !l.contains("pas-agent show"))
        .skip(1)
        .flat_map(str::split_whitespace)
        .collect();
    assert!(
        offered.contains(&"1") && offered.contains(&"2") && !offered.contains(&"3"),
        "{what}: the checkpoints 1 and 2 were not offered:\n{screen}"
    );
}

/// zsh: the script sourced *before* compinit (no "command not found: compdef"; registered at
/// the first prompt), and loaded from `fpath` as `_pas-agent` (the first Tab completes).
#[test]
fn zsh_completions_load_before_compinit_and_from_fpath() {
    require("zsh");
    let sb = completion_world();
    std::fs::write(
        sb.home.join(".zshrc"),
        "PROMPT='READY%% '\nsource <(pas-agent completions zsh)\nautoload -U compinit && compinit -u\n",
    )
    .unwrap();
    let line = format!(
        "ZDOTDIR={} exec zsh -i",
        sh_quote(&sb.home.to_string_lossy())
    );
    first_tab_completes(&sb, &line, "READY%", "zsh, sourced before compinit");

    let sb = completion_world();
    let zfunc = sb.home.join(".zfunc");
    std::fs::create_dir_all(&zfunc).unwrap();
    std::fs::write(zfunc.join("_pas-agent"), script(&sb, "zsh")).unwrap();
    std::fs::write(
        sb.home.join(".zshrc"),
        "PROMPT='READY%% '\nfpath=(~/.zfunc $fpath)\nautoload -U compinit && compinit -u\n",
    )
    .unwrap();
    let line = format!(
        "ZDOTDIR={} exec zsh -i",
        sh_quote(&sb.home.to_string_lossy())
    );
    first_tab_completes(&sb, &line, "READY%", "zsh, from fpath");
    // And sourced after compinit, as before.
    let sb = completion_world();
    std::fs::write(
        sb.home.join(".zshrc"),
        "PROMPT='READY%% '\nautoload -U compinit && compinit -u\nsource <(pas-agent completions zsh)\n",
    )
    .unwrap();
    let line = format!(
        "ZDOTDIR={} exec zsh -i",
        sh_quote(&sb.home.to_string_lossy())
    );
    first_tab_completes(&sb, &line, "READY%", "zsh, sourced after compinit");
}

/// fish: the documented install, a file in `~/.config/fish/completions/`, loads by itself; a
/// sourced script erases older definitions first.
#[test]
fn fish_completions_load_from_the_autoload_folder() {
    require("fish");
    let sb = completion_world();
    let dir = sb.home.join(".config/fish/completions");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("pas-agent.fish"), script(&sb, "fish")).unwrap();
    let fish_config = sb.home.join(".config/fish");
    std::fs::write(
        fish_config.join("config.fish"),
        "function fish_prompt; echo -n 'READY> '; end\n",
    )
    .unwrap();
    first_tab_completes(&sb, "exec fish -i", "READY>", "fish, autoload folder");
    assert!(script(&sb, "fish").contains("complete --erase --command pas-agent"));
}

/// bash without bash-completion (the line in ~/.bashrc) and with it: the line, and a file in
/// bash-completion's folder loaded on the first Tab.
#[test]
fn bash_completions_load_with_and_without_bash_completion() {
    require("bash");
    let loader = Path::new("/usr/share/bash-completion/bash_completion");
    assert!(
        loader.is_file(),
        "bash-completion is not installed: apt-get install bash-completion (as .ci/run does)"
    );
    for (what, rc, file) in [
        (
            "without bash-completion",
            "PS1='READY$ '\nsource <(pas-agent completions bash)\n",
            false,
        ),
        (
            "bash-completion and the line",
            "PS1='READY$ '\nsource /usr/share/bash-completion/bash_completion\nsource <(pas-agent completions bash)\n",
            false,
        ),
        (
            "bash-completion's folder",
            "PS1='READY$ '\nsource /usr/share/bash-completion/bash_completion\n",
            true,
        ),
    ] {
        let sb = completion_world();
        if file {
            let dir = sb.home.join(".local/share/bash-completion/completions");
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("pas-agent"), script(&sb, "bash")).unwrap();
        }
        let rc_path = sb.home.join("rc.bash");
        std::fs::write(&rc_path, rc).unwrap();
        let line = format!(
            "exec bash --noprofile --rcfile {} -i",
            sh_quote(&rc_path.to_string_lossy())
        );
        first_tab_completes(&sb, &line, "READY$", what);
    }
}

// ---------------------------------------------------------------------------------------
// doctor

fn doctor_json(sb: &Sandbox) -> (i32, Value) {
    let out = sb.cmd().args(["doctor", "--json"]).output().unwrap();
    let json: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", stdout(&out), stderr(&out)));
    (out.status.code().unwrap(), json)
}

/// The checks named `name`.
fn named<'a>(json: &'a Value, name: &str) -> Vec<&'a Value> {
    json["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["name"] == name)
        .collect()
}

fn one<'a>(json: &'a Value, name: &str) -> &'a Value {
    let found = named(json, name);
    assert_eq!(found.len(), 1, "{name}: {json:#}");
    found[0]
}

/// An ordinary commit since the last checkpoint is worth knowing, not a problem: `doctor`
/// exits 0 and says how to take a checkpoint. Its text fits 80 columns.
#[test]
fn doctor_says_head_moved_without_failing() {
    let sb = Sandbox::with_session();
    sb.ok(&["checkpoint", "start"]);
    sb.write("a.txt", "a\n");
    sb.git(&["add", "a.txt"]);
    sb.git(&["commit", "-qm", "work"]);
    let (code, json) = doctor_json(&sb);
    assert_eq!(code, 0, "{json:#}");
    let c = one(&json, "checkpoint");
    assert_eq!(c["level"], "info", "{c}");
    assert!(c["fix"].as_str().unwrap().contains("pas-agent checkpoint"));
    let text = sb.ok(&["doctor"]);
    assert!(text.contains("All well."), "{text}");
    for line in text.lines() {
        // A path longer than the line is the only thing that may stick out.
        assert!(
            UnicodeWidthStr::width(line) <= 80 || !line.trim().contains(' '),
            "{line}"
        );
    }
}

/// `doctor` speaks of the shells installed here: with only bash on PATH, no zsh, fish or
/// PowerShell advice (and none for PowerShell without pwsh); a shell not installed whose
/// start-up file already holds pas-agent's line is still reported.
#[test]
fn doctor_speaks_of_the_shells_that_exist() {
    let sb = Sandbox::with_session();
    let only = sb.tmp.path().join("only");
    std::fs::create_dir_all(&only).unwrap();
    for program in ["git", "bash", "sh"] {
        std::os::unix::fs::symlink(which::which(program).unwrap(), only.join(program)).unwrap();
    }
    let run = |sb: &Sandbox| {
        let out = sb
            .cmd()
            .env("PATH", &only)
            .args(["doctor", "--json"])
            .output()
            .unwrap();
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let json = run(&sb);
    assert_eq!(one(&json, "bash hook")["level"], "info");
    for gone in [
        "zsh hook",
        "fish hook",
        "powershell hook",
        "powershell completions",
    ] {
        assert!(named(&json, gone).is_empty(), "{gone}: {json:#}");
    }
    std::fs::create_dir_all(sb.home.join(".config/fish")).unwrap();
    std::fs::write(
        sb.home.join(".config/fish/config.fish"),
        "pas-agent hook fish | source\n",
    )
    .unwrap();
    let json = run(&sb);
    assert_eq!(named(&json, "fish hook").len(), 1, "{json:#}");
}

/// A completion file a shell loads by itself that differs from what this binary prints (an
/// older pas-agent's) is a problem, with the command that writes the current one; after it,
/// all is well.
#[test]
fn doctor_reports_a_completion_file_that_is_not_current() {
    require("fish");
    let sb = completion_world();
    let file = sb.home.join(".config/fish/completions/pas-agent.fish");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(
        &file,
        "complete --command pas-agent --arguments \"(PAS_AGENT_COMPLETE=fish /old/pas-agent -- (commandline --current-process --tokenize --cut-at-cursor) (commandline --current-token))\"\n",
    )
    .unwrap();
    let (code, json) = doctor_json(&sb);
    assert_eq!(code, 1, "{json:#}");
    let c = one(&json, "fish completions");
    assert_eq!(c["level"], "problem");
    let fix = c["fix"].as_str().unwrap();
    assert!(
        fix.starts_with("pas-agent completions fish > ~/.config/fish/completions/pas-agent.fish"),
        "{fix}"
    );
    // The fix, as the user's shell runs it.
    let out = Command::new("sh")
        .arg("-c")
        .arg(fix)
        .env("HOME", &sb.home)
        .env(
            "PATH",
            format!(
                "{}:{}",
                sb.bin_dir.display(),
                std::env::var("PATH").unwrap()
            ),
        )
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let (_, json) = doctor_json(&sb);
    assert_eq!(one(&json, "fish completions")["level"], "ok", "{json:#}");
}

/// pas-agent's hooks: all there is ok; rewritten without them, with one event missing, or
/// starting a pas-agent that is gone, each is a problem whose fix is `integrate` again, and
/// that fix works.
#[test]
fn doctor_finds_hooks_gone_incomplete_or_starting_nothing() {
    let sb = Sandbox::with_session();
    sb.ok(&["integrate", "claude"]);
    sb.ok(&["integrate", "gemini", "--user"]);
    let (code, json) = doctor_json(&sb);
    assert_eq!(code, 0, "{json:#}");
    assert_eq!(one(&json, "claude hooks")["level"], "ok");
    assert_eq!(one(&json, "gemini hooks (user)")["level"], "ok");
    let installed = sb.read(".claude/settings.json");

    // The agent rewrote its settings without them.
    sb.write(".claude/settings.json", "{\n  \"model\": \"opus\"\n}\n");
    let (code, json) = doctor_json(&sb);
    assert_eq!(code, 1);
    let c = one(&json, "claude hooks");
    assert!(c["detail"].as_str().unwrap().contains("gone"), "{c}");
    assert_eq!(c["fix"], "pas-agent integrate claude");

    // One event missing.
    let mut v: Value = serde_json::from_str(&installed).unwrap();
    v["hooks"].as_object_mut().unwrap().remove("SessionEnd");
    sb.write(
        ".claude/settings.json",
        serde_json::to_string_pretty(&v).unwrap(),
    );
    let (_, json) = doctor_json(&sb);
    let c = one(&json, "claude hooks");
    assert!(c["detail"].as_str().unwrap().contains("SessionEnd"), "{c}");

    // Starting a pas-agent that is not there.
    sb.write(
        ".claude/settings.json",
        installed.replace(&*bin().to_string_lossy(), "/gone/pas-agent"),
    );
    let (_, json) = doctor_json(&sb);
    let c = one(&json, "claude hooks");
    assert_eq!(c["level"], "problem", "{c}");
    assert!(
        c["detail"].as_str().unwrap().contains("/gone/pas-agent"),
        "{c}"
    );

    // The fix.
    sb.ok(&["integrate", "claude"]);
    let (code, json) = doctor_json(&sb);
    assert_eq!(code, 0, "{json:#}");
}

/// One `codex app-server` conversation: `hooks/list` for the work directory; returns the
/// hooks Codex lists there (its keys, `currentHash` and `trustStatus`).
fn codex_hooks(sb: &Sandbox, codex_home: &Path) -> Vec<Value> {
    let codex = which::which("codex").unwrap();
    let mut child = crate::hooks::isolated(sb, &codex)
        .arg("app-server")
        .env("CODEX_HOME", codex_home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for line in [
        r#"{"id":1,"method":"initialize","params":{"clientInfo":{"name":"pas-agent-test","version":"1"}}}"#.to_string(),
        r#"{"method":"initialized"}"#.to_string(),
        format!(
            r#"{{"id":2,"method":"hooks/list","params":{{"cwds":[{}]}}}}"#,
            Value::from(sb.work.to_string_lossy().into_owned())
        ),
    ] {
        writeln!(stdin, "{line}").unwrap();
    }
    let reader = BufReader::new(child.stdout.take().unwrap());
    let mut hooks = None;
    for line in reader.lines() {
        let Ok(line) = line else { break };
        let Ok(v) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if v["id"] == 2 {
            hooks = Some(
                v["result"]["data"][0]["hooks"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default(),
            );
            break;
        }
    }
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    hooks.expect("codex app-server answered hooks/list")
}

/// Codex's approval, as doctor sees it and as Codex itself does: untrusted project and
/// unapproved hooks are problems; once the project is trusted and each hook's `trusted_hash`
/// is the one Codex computes (read from the real Codex's `hooks/list`), doctor says ok, and
/// Codex says `trusted`; a hash from an earlier version of the entry is a problem again, as
/// Codex reports it `modified`.
#[test]
fn doctor_knows_codex_approval_as_codex_does() {
    crate::mock_model::require_agent("codex", "@openai/codex");
    let mut sb = Sandbox::with_session();
    let codex_home = sb.home.join(".codex");
    std::fs::create_dir_all(&codex_home).unwrap();
    sb.env
        .push(("CODEX_HOME".into(), codex_home.to_string_lossy().into()));
    let config = codex_home.join("config.toml");
    std::fs::write(&config, "check_for_update_on_startup = false\n").unwrap();
    sb.ok(&["integrate", "codex"]);
    let (code, json) = doctor_json(&sb);
    assert_eq!(code, 1, "{json:#}");
    let found = named(&json, "codex hooks");
    let details: Vec<&str> = found
        .iter()
        .map(|c| c["detail"].as_str().unwrap())
        .collect();
    assert!(
        details.iter().any(|d| d.contains("does not trust")),
        "{details:?}"
    );
    assert!(
        details.iter().any(|d| d.contains("has not approved")),
        "{details:?}"
    );

    // Trust the project as Codex records it; Codex then lists the hooks, untrusted.
    std::fs::write(
        &config,
        format!(
            "check_for_update_on_startup = false\n[projects.{}]\ntrust_level = \"trusted\"\n",
            Value::from(sb.work.to_string_lossy().into_owned())
        ),
    )
    .unwrap();
    let listed = codex_hooks(&sb, &codex_home);
    let ours: Vec<&Value> = listed
        .iter()
        .filter(|h| {
            h["command"]
                .as_str()
                .unwrap_or("")
                .contains("lifecycle codex")
        })
        .collect();
    assert_eq!(ours.len(), 3, "{listed:#?}");
    assert!(ours.iter().all(|h| h["trustStatus"] == "untrusted"));
    let (_, json) = doctor_json(&sb);
    let found = named(&json, "codex hooks");
    assert_eq!(found.len(), 1, "{json:#}");
    assert!(
        found[0]["detail"]
            .as_str()
            .unwrap()
            .contains("has not approved")
    );

    // Approve them as `/hooks` does: their key and Codex's own hash.
    let mut text = std::fs::read_to_string(&config).unwrap();
    for h in &ours {
        text.push_str(&format!(
            "\n[hooks.state.{}]\ntrusted_hash = {}\n",
            h["key"], h["currentHash"]
        ));
    }
    std::fs::write(&config, &text).unwrap();
    let listed = codex_hooks(&sb, &codex_home);
    assert!(
        listed
            .iter()
            .filter(|h| h["command"]
                .as_str()
                .unwrap_or("")
                .contains("lifecycle codex"))
            .all(|h| h["trustStatus"] == "trusted"),
        "{listed:#?}"
    );
    let (code, json) = doctor_json(&sb);
    assert_eq!(code, 0, "{json:#}");
    assert_eq!(one(&json, "codex hooks")["level"], "ok");

    // An approval of an earlier entry: Codex calls it modified, doctor a problem.
    let first = ours[0]["currentHash"].as_str().unwrap();
    std::fs::write(&config, text.replace(first, "sha256:0000")).unwrap();
    let listed = codex_hooks(&sb, &codex_home);
    assert!(
        listed.iter().any(|h| h["trustStatus"] == "modified"),
        "{listed:#?}"
    );
    let (code, json) = doctor_json(&sb);
    assert_eq!(code, 1);
    assert!(
        one(&json, "codex hooks")["detail"]
            .as_str()
            .unwrap()
            .contains("changed since"),
        "{json:#}"
    );
}

/// MCP registrations written by the agents' own `mcp add` commands: pointing at this binary
/// is ok; at a pas-agent that is gone, a problem whose fix prints the entry to write.
#[test]
fn doctor_checks_the_mcp_registrations_the_agents_wrote() {
    crate::mock_model::require_agent("claude", "@anthropic-ai/claude-code");
    crate::mock_model::require_agent("codex", "@openai/codex");
    let mut sb = Sandbox::with_session();
    let codex_home = sb.home.join(".codex");
    std::fs::create_dir_all(&codex_home).unwrap();
    sb.env
        .push(("CODEX_HOME".into(), codex_home.to_string_lossy().into()));
    let me = bin().to_string_lossy().into_owned();
    let add = |program: &str, args: &[&str]| {
        let out = crate::hooks::isolated(&sb, &which::which(program).unwrap())
            .args(args)
            .env("CODEX_HOME", &codex_home)
            .env("DISABLE_AUTOUPDATER", "1")
            .output()
            .unwrap();
        assert!(out.status.success(), "{program}: {}", stderr(&out));
    };
    add("claude", &["mcp", "add", "pas-agent", "--", &me, "mcp"]);
    add(
        "codex",
        &["mcp", "add", "pas-agent", "--", "/gone/pas-agent", "mcp"],
    );
    let (code, json) = doctor_json(&sb);
    assert_eq!(code, 1, "{json:#}");
    let claude = one(&json, "claude mcp");
    assert_eq!(claude["level"], "ok", "{claude}");
    assert!(claude["detail"].as_str().unwrap().contains(".claude.json"));
    let codex = one(&json, "codex mcp (user)");
    assert_eq!(codex["level"], "problem", "{codex}");
    assert!(
        codex["fix"]
            .as_str()
            .unwrap()
            .contains("pas-agent mcp --config codex")
    );
}

/// The hooks of the agents whose settings pas-agent edits (droid, Qwen Code) or whose file it
/// writes whole (Copilot's hooks file, pi's extension) are checked as Claude Code's: ok when
/// there, a problem when gone or (a whole file) edited by hand, with a fix that works.
#[test]
fn doctor_checks_every_agents_hooks_edited_or_owned() {
    let sb = Sandbox::with_session();
    sb.ok(&["integrate", "copilot"]);
    sb.ok(&["integrate", "droid"]);
    sb.ok(&["integrate", "qwen", "--user"]);
    sb.ok(&["integrate", "pi", "--user"]);
    let (code, json) = doctor_json(&sb);
    assert_eq!(code, 0, "{json:#}");
    for name in [
        "copilot hooks",
        "droid hooks",
        "qwen hooks (user)",
        "pi hooks (user)",
    ] {
        let c = one(&json, name);
        assert_eq!(c["level"], "ok", "{c}");
    }
    assert!(
        one(&json, "copilot hooks")["detail"]
            .as_str()
            .unwrap()
            .contains("sessionStart, agentStop, sessionEnd")
    );

    // Copilot's file edited by hand: pas-agent leaves it, and says how to get its own back.
    let file = ".github/hooks/pas-agent.json";
    let installed = sb.read(file);
    sb.write(
        file,
        installed.replace("\"timeoutSec\": 30", "\"timeoutSec\": 5"),
    );
    let (code, json) = doctor_json(&sb);
    assert_eq!(code, 1);
    let c = one(&json, "copilot hooks");
    assert_eq!(c["level"], "problem", "{c}");
    let fix = c["fix"].as_str().unwrap();
    assert!(
        fix.starts_with("rm -- ") && fix.ends_with("pas-agent integrate copilot"),
        "{c}"
    );
    assert!(
        sb.fails(&["integrate", "copilot"], 6)
            .contains("does not edit it")
    );
    std::fs::remove_file(sb.path(file)).unwrap();
    sb.ok(&["integrate", "copilot"]);
    assert_eq!(sb.read(file), installed);

    // Droid's entries taken out by an editor; pi's extension deleted.
    sb.write(".factory/settings.json", "{}\n");
    std::fs::remove_file(sb.home.join(".pi/agent/extensions/pas-agent.ts")).unwrap();
    let (code, json) = doctor_json(&sb);
    assert_eq!(code, 1);
    let droid = one(&json, "droid hooks");
    assert!(
        droid["detail"].as_str().unwrap().contains("gone"),
        "{droid}"
    );
    assert_eq!(droid["fix"], "pas-agent integrate droid");
    let pi = one(&json, "pi hooks (user)");
    assert!(pi["detail"].as_str().unwrap().contains("is gone"), "{pi}");
    assert_eq!(pi["fix"], "pas-agent integrate pi --user");
    sb.ok(&["integrate", "droid"]);
    sb.ok(&["integrate", "pi", "--user"]);
    let (code, json) = doctor_json(&sb);
    assert_eq!(code, 0, "{json:#}");
}

/// The MCP registrations Copilot, Qwen Code and droid write with their own `mcp add`: each is
/// found where the agent put it; this binary is ok, a pas-agent that is gone a problem.
#[test]
fn doctor_checks_the_mcp_registrations_of_copilot_qwen_and_droid() {
    crate::mock_model::require_agent("copilot", "@github/copilot");
    crate::mock_model::require_agent("qwen", "@qwen-code/qwen-code");
    crate::mock_model::require_agent("droid", "@factory/cli-linux-x64");
    let sb = Sandbox::with_session();
    let me = bin().to_string_lossy().into_owned();
    let add = |program: &str, args: &[&str]| {
        let out = crate::hooks::isolated(&sb, &which::which(program).unwrap())
            .args(args)
            .env("COPILOT_AUTO_UPDATE", "false")
            .output()
            .unwrap();
        assert!(out.status.success(), "{program}: {}", stderr(&out));
    };
    add("copilot", &["mcp", "add", "pas-agent", "--", &me, "mcp"]);
    add("qwen", &["mcp", "add", "pas-agent", &me, "mcp"]);
    add("droid", &["mcp", "add", "pas-agent", "/gone/pas-agent mcp"]);
    let (code, json) = doctor_json(&sb);
    assert_eq!(code, 1, "{json:#}");
    let copilot = one(&json, "copilot-cli mcp (user)");
    assert_eq!(copilot["level"], "ok", "{copilot}");
    assert!(
        copilot["detail"]
            .as_str()
            .unwrap()
            .contains("mcp-config.json")
    );
    let qwen = one(&json, "qwen mcp (user)");
    assert_eq!(qwen["level"], "ok", "{qwen}");
    let droid = one(&json, "factory-droid mcp (user)");
    assert_eq!(droid["level"], "problem", "{droid}");
    assert!(
        droid["detail"]
            .as_str()
            .unwrap()
            .contains("/gone/pas-agent")
    );
    assert!(
        droid["fix"]
            .as_str()
            .unwrap()
            .contains("pas-agent mcp --config factory-droid")
    );
}

#[test]
fn doctor_reads_mcp_settings_with_comments_as_the_agents_do() {
    crate::mock_model::require_agent("qwen", "@qwen-code/qwen-code");
    crate::mock_model::require_agent("opencode", "opencode-ai");
    let sb = Sandbox::with_session();
    let me = bin().to_string_lossy().into_owned();
    let agent = |program: &str, args: &[&str]| {
        let out = crate::hooks::isolated(&sb, &which::which(program).unwrap())
            .args(args)
            .env("OPENCODE_DISABLE_AUTOUPDATE", "1")
            .output()
            .unwrap();
        assert!(out.status.success(), "{program}: {}", stderr(&out));
        format!("{}{}", stdout(&out), stderr(&out))
    };
    agent("qwen", &["mcp", "add", "pas-agent", &me, "mcp"]);
    // A comment of the user's own: Qwen Code reads the file still.
    let settings = sb.home.join(".qwen/settings.json");
    let text = std::fs::read_to_string(&settings).unwrap();
    let text = text.replacen('{', "{\n  // kept by hand\n", 1);
    std::fs::write(&settings, &text).unwrap();
    assert!(
        agent("qwen", &["mcp", "list"]).contains("pas-agent"),
        "{text}"
    );
    // OpenCode's own file, with a block comment.
    sb.write(
        "opencode.json",
        format!(
            "{{\n  /* servers */\n  \"mcp\": {{ \"pas-agent\": {{ \"type\": \"local\", \"command\": [{me:?}, \"mcp\"] }} }}\n}}\n"
        ),
    );
    assert!(agent("opencode", &["mcp", "list"]).contains("pas-agent"));
    let (_, json) = doctor_json(&sb);
    for name in ["qwen mcp (user)", "opencode mcp"] {
        let check = one(&json, name);
        assert_eq!(check["level"], "ok", "{name}: {check}");
    }
}
