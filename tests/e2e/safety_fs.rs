//! File-system safety: a cloned repository cannot make pas-agent write outside its
//! session root (links in `.pas-agent/`, context files, `-o` paths, `runs/`), a lock never
//! truncates a file, temp files of killed writers are cleaned up under the lock, a replaced
//! file keeps its owner, a read-only directory is respected as root, special files where the
//! session should be are reported by name, hard-linked context files stay linked, and an empty
//! or half-written run registry reads as empty.

use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};

use crate::common::{Sandbox, stderr, stdout};

/// A directory beside the work tree, outside the session root, with one file `name` holding
/// `content`. Returns the file's path.
fn outside_file(sb: &Sandbox, name: &str, content: &str) -> PathBuf {
    let dir = sb.work.parent().unwrap().join("outside");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, content).unwrap();
    path
}

fn outside_dir(sb: &Sandbox) -> PathBuf {
    let dir = sb.work.parent().unwrap().join("outside");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

const BASHRC: &str = "# my shell\nexport PATH=$HOME/bin:$PATH\n";
const KEYS: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKeep user@host\n";

/// Every command that writes, for a session whose store is hostile.
fn writers() -> Vec<Vec<&'static str>> {
    vec![
        vec!["update", "--next", "write tests"],
        vec!["checkpoint", "cp"],
        vec!["export", "--to", "claude"],
        vec!["run", "--no-pty", "--", "true"],
    ]
}

/// The exit code a refused write gives: 6, or for `run` the agent's own (`true`: 0), since
/// the agent starts anyway, without a record, and a warning says why (nothing is written).
fn refused(args: &[&str]) -> i32 {
    if args[0] == "run" { 0 } else { 6 }
}

#[test]
fn a_session_lock_linked_outside_is_never_written() {
    for relative in [false, true] {
        let sb = Sandbox::with_session();
        let victim = outside_file(&sb, ".bashrc", BASHRC);
        let lock = sb.path(".pas-agent/session.lock");
        let _ = std::fs::remove_file(&lock);
        if relative {
            symlink("../../outside/.bashrc", &lock).unwrap();
        } else {
            symlink(&victim, &lock).unwrap();
        }
        for args in writers() {
            let err = sb.fails(&args, refused(&args));
            assert!(err.contains("session.lock"), "{args:?}: {err}");
            assert_eq!(
                std::fs::read_to_string(&victim).unwrap(),
                BASHRC,
                "{args:?}"
            );
        }
        // Readers still work.
        sb.ok(&["status"]);
        assert!(
            std::fs::symlink_metadata(&lock)
                .unwrap()
                .file_type()
                .is_symlink()
        );
    }
}

#[test]
fn a_lock_file_with_content_or_a_hard_link_is_never_truncated() {
    let sb = Sandbox::with_session();
    let lock = sb.path(".pas-agent/session.lock");
    std::fs::remove_file(&lock).unwrap();
    sb.write(".pas-agent/session.lock", "committed notes, keep me\n");
    sb.ok(&["update", "--next", "a"]);
    assert_eq!(
        sb.read(".pas-agent/session.lock"),
        "committed notes, keep me\n"
    );

    // A hard link to a file outside (a tarball can carry one).
    let victim = outside_file(&sb, "profile", BASHRC);
    std::fs::remove_file(&lock).unwrap();
    std::fs::hard_link(&victim, &lock).unwrap();
    sb.ok(&["update", "--next", "b"]);
    sb.ok(&["export", "--to", "codex"]);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), BASHRC);

    // A lock that only ever held a pid is pas-agent's own and keeps working.
    std::fs::remove_file(&lock).unwrap();
    sb.write(".pas-agent/session.lock", "12\n");
    sb.ok(&["update", "--next", "c"]);
    assert!(
        sb.read(".pas-agent/session.lock")
            .trim()
            .parse::<u32>()
            .is_ok()
    );
}

#[test]
fn a_state_directory_or_session_file_linked_outside_is_refused() {
    // `.pas-agent` itself a link to a directory outside holding a session.
    let sb = Sandbox::with_session();
    let out = outside_dir(&sb).join("state");
    std::fs::rename(sb.path(".pas-agent"), &out).unwrap();
    symlink(&out, sb.path(".pas-agent")).unwrap();
    let before = std::fs::read(out.join("session.json")).unwrap();
    let listing = |d: &Path| {
        let mut v: Vec<_> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        v.sort();
        v
    };
    let names = listing(&out);
    for args in writers() {
        let err = sb.fails(&args, refused(&args));
        assert!(err.contains(&out.display().to_string()), "{args:?}: {err}");
    }
    assert_eq!(std::fs::read(out.join("session.json")).unwrap(), before);
    assert_eq!(listing(&out), names);

    // session.json a link out of the root.
    let sb = Sandbox::with_session();
    let victim = outside_file(&sb, "session.json", &sb.read(".pas-agent/session.json"));
    let before = std::fs::read(&victim).unwrap();
    std::fs::remove_file(sb.path(".pas-agent/session.json")).unwrap();
    symlink(&victim, sb.path(".pas-agent/session.json")).unwrap();
    let err = sb.fails(&["update", "--next", "x"], 6);
    assert!(err.contains(&victim.display().to_string()), "{err}");
    assert_eq!(std::fs::read(&victim).unwrap(), before);
    let leftovers: Vec<_> = std::fs::read_dir(victim.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers.len(), 1, "{leftovers:?}");

    // session.json hard-linked to a file outside: replaced, never written through.
    let sb = Sandbox::with_session();
    let victim = outside_file(&sb, "linked.json", &sb.read(".pas-agent/session.json"));
    let before = std::fs::read(&victim).unwrap();
    std::fs::remove_file(sb.path(".pas-agent/session.json")).unwrap();
    std::fs::hard_link(&victim, sb.path(".pas-agent/session.json")).unwrap();
    sb.ok(&["update", "--next", "y"]);
    assert_eq!(std::fs::read(&victim).unwrap(), before);
    assert!(sb.read(".pas-agent/session.json").contains("\"y\""));

    // `init` where `.pas-agent` is a committed link to a directory outside.
    let sb = Sandbox::repo();
    let out = outside_dir(&sb).join("empty-state");
    std::fs::create_dir_all(&out).unwrap();
    symlink(&out, sb.path(".pas-agent")).unwrap();
    let err = sb.fails(&["init", "--task", "t"], 6);
    assert!(err.contains(&out.display().to_string()), "{err}");
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0);
}

#[test]
fn a_dangling_gitignore_link_creates_nothing_outside() {
    let sb = Sandbox::with_session();
    let target = outside_dir(&sb).join("planted");
    std::fs::remove_file(sb.path(".pas-agent/.gitignore")).unwrap();
    symlink(&target, sb.path(".pas-agent/.gitignore")).unwrap();
    sb.ok(&["update", "--next", "x"]);
    assert!(!target.exists());
    assert!(std::fs::symlink_metadata(target).is_err());

    // In a fresh project too: `init` with a committed dangling link.
    let sb = Sandbox::repo();
    let target = outside_dir(&sb).join("planted2");
    std::fs::create_dir(sb.path(".pas-agent")).unwrap();
    symlink(&target, sb.path(".pas-agent/.gitignore")).unwrap();
    sb.ok(&["init", "--task", "t"]);
    assert!(std::fs::symlink_metadata(target).is_err());
}

#[test]
fn a_runs_directory_linked_outside_gets_no_capture() {
    let sb = Sandbox::with_session();
    let out = outside_dir(&sb).join("runs");
    std::fs::create_dir_all(&out).unwrap();
    symlink(&out, sb.path(".pas-agent/runs")).unwrap();
    // `script` gives the launcher a terminal, so it runs the agent on a pseudo-terminal and
    // captures its output.
    let Ok(script) = which::which("script") else {
        return;
    };
    let mut cmd = std::process::Command::new(script);
    cmd.args(["-qec"])
        .arg(format!(
            "{} run -- echo captured-text",
            crate::common::bin().display()
        ))
        .arg("/dev/null");
    copy_env(&sb, &mut cmd);
    let out = cmd.current_dir(&sb.work).output().unwrap();
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("captured-text"), "{}", stdout(&out));
    assert!(stdout(&out).contains("not captured"), "{}", stdout(&out));
    assert_eq!(std::fs::read_dir(out_dir(&sb)).unwrap().count(), 0);
}

fn out_dir(sb: &Sandbox) -> PathBuf {
    outside_dir(sb).join("runs")
}

/// Gives `cmd` the sandbox's isolated environment.
fn copy_env(sb: &Sandbox, cmd: &mut std::process::Command) {
    let probe = sb.cmd();
    for (k, v) in probe.get_envs() {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    cmd.stdin(std::process::Stdio::null());
}

#[test]
fn a_context_file_linked_outside_is_refused_by_export() {
    let sb = Sandbox::with_session();
    sb.ok(&["update", "--next", "ssh-ed25519 AAAAattacker evil@host"]);
    let keys = outside_file(&sb, "authorized_keys", KEYS);
    symlink(&keys, sb.path("CLAUDE.md")).unwrap();
    let err = sb.fails(&["export", "--to", "claude"], 6);
    assert!(err.contains(&keys.display().to_string()), "{err}");
    // Naming the link with -o does not make it explicit.
    sb.fails(&["export", "--to", "claude", "-o", "CLAUDE.md"], 6);
    let abs = sb.path("CLAUDE.md");
    sb.fails(
        &["export", "--to", "claude", "-o", abs.to_str().unwrap()],
        6,
    );
    assert_eq!(std::fs::read_to_string(&keys).unwrap(), KEYS);
    // Nor does a relative link, a chain, or a link in the path's parents.
    std::fs::remove_file(sb.path("CLAUDE.md")).unwrap();
    symlink("../outside/authorized_keys", sb.path("AGENTS.md")).unwrap();
    sb.fails(&["export", "--to", "codex"], 6);
    symlink("AGENTS.md", sb.path("GEMINI.md")).unwrap();
    sb.fails(&["export", "--to", "gemini"], 6);
    assert_eq!(std::fs::read_to_string(&keys).unwrap(), KEYS);
    symlink(keys.parent().unwrap(), sb.path("docs")).unwrap();
    sb.fails(&["export", "--to", "claude", "-o", "docs/x.md"], 6);
    sb.fails(
        &["export", "--to", "claude", "-o", "docs/../outside/y.md"],
        6,
    );
    std::fs::create_dir(sb.path("sub")).unwrap();
    sb.fails(&["export", "--to", "claude", "-o", "sub/../docs/z.md"], 6);
    symlink("../outside/new.md", sb.path("CLAUDE.md")).unwrap();
    sb.fails(&["export", "--to", "claude"], 6);
    let listing: Vec<_> = std::fs::read_dir(keys.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(listing.len(), 1, "{listing:?}");
    assert_eq!(std::fs::read_to_string(&keys).unwrap(), KEYS);
    // Nor into git's own directory, even though it is inside the root.
    symlink(".git/config", sb.path("QWEN.md")).unwrap();
    let config = sb.bytes(".git/config");
    let err = sb.fails(&["export", "--to", "qwen"], 6);
    assert!(err.contains("git directory"), "{err}");
    sb.fails(
        &["export", "--to", "claude", "-o", ".git/hooks/pre-commit"],
        6,
    );
    assert_eq!(sb.bytes(".git/config"), config);
    assert!(!sb.path(".git/hooks/pre-commit").exists());
    // The user naming the real outside file is asking for it.
    let mine = keys.parent().unwrap().join("notes.md");
    sb.ok(&["export", "--to", "claude", "-o", mine.to_str().unwrap()]);
    assert!(
        std::fs::read_to_string(&mine)
            .unwrap()
            .contains("pas-agent")
    );
}

#[test]
fn run_and_the_hooked_claude_leave_a_linked_outside_context_file_alone() {
    let sb = Sandbox::with_session();
    let keys = outside_file(&sb, "authorized_keys", KEYS);
    symlink(&keys, sb.path("CLAUDE.md")).unwrap();
    sb.stand_in("claude", "echo agent-ran; exit 0");
    let out = sb.run(&["run", "--no-pty", "claude"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("agent-ran"));
    assert!(
        stderr(&out).contains(&keys.display().to_string()),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read_to_string(&keys).unwrap(), KEYS);

    if which::which("bash").is_ok() {
        let out = crate::hooks::shell(
            &sb,
            "bash",
            &["--norc", "--noprofile", "-i"],
            "eval \"$PAS_HOOK\"; PAS_AGENT_NO_PTY=1 claude; echo rc=$?",
        );
        assert!(stdout(&out).contains("agent-ran"), "{}", stderr(&out));
        assert!(stdout(&out).contains("rc=0"), "{}", stdout(&out));
        assert_eq!(std::fs::read_to_string(&keys).unwrap(), KEYS);
    }
}

#[test]
fn links_inside_the_root_keep_working() {
    let sb = Sandbox::with_session();
    sb.write("CLAUDE.md", "# Mine\n");
    symlink("CLAUDE.md", sb.path("AGENTS.md")).unwrap();
    sb.ok(&["export", "--to", "codex"]);
    assert!(
        std::fs::symlink_metadata(sb.path("AGENTS.md"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let text = sb.read("CLAUDE.md");
    assert!(
        text.starts_with("# Mine\n") && text.contains("Build the thing"),
        "{text}"
    );
    // A link into a subdirectory, and the state directory as a link inside the root.
    std::fs::create_dir(sb.path("ctx")).unwrap();
    symlink("ctx/GEMINI.md", sb.path("GEMINI.md")).unwrap();
    sb.ok(&["export", "--to", "gemini"]);
    assert!(sb.read("ctx/GEMINI.md").contains("Build the thing"));
    std::fs::rename(sb.path(".pas-agent"), sb.path("state")).unwrap();
    symlink("state", sb.path(".pas-agent")).unwrap();
    sb.ok(&["update", "--next", "inside link"]);
    assert!(sb.read("state/session.json").contains("inside link"));
}

#[test]
fn stale_temp_files_are_removed_under_the_lock() {
    let sb = Sandbox::with_session();
    let stale = [
        ".pas-agent/.session.json.a1B2c3.tmp",
        ".pas-agent/.session.json.zzzzzz.tmp",
    ];
    for s in stale {
        sb.write(s, "{ half a session");
    }
    sb.write(".CLAUDE.md.Ab12Cd.tmp", "half a context file");
    let keep = [
        ".pas-agent/notes.tmp",
        ".pas-agent/.session.json.tmp",
        "x.tmp",
        ".editor.Ab12Cd.tmp",
        ".CLAUDE.md.Ab12Cd.bak",
    ];
    for k in keep {
        sb.write(k, "mine");
    }
    sb.ok(&["update", "--next", "x"]);
    for s in stale {
        assert!(!sb.path(s).exists(), "{s} is still there");
    }
    for k in keep {
        assert_eq!(sb.read(k), "mine");
    }
    assert!(!sb.path(".CLAUDE.md.Ab12Cd.tmp").exists());

    // Writers killed mid-save, for real: each leaves its temp file only if killed between
    // creating and renaming it; whatever they left is gone after the next write.
    let mut children: Vec<std::process::Child> = (0..20)
        .map(|i| {
            sb.cmd()
                .args(["update", "--next", &format!("w{i}")])
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in &mut children {
        let _ = c.kill();
        let _ = c.wait();
    }
    sb.ok(&["update", "--next", "after"]);
    let temps: Vec<_> = std::fs::read_dir(sb.path(".pas-agent"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| {
            n.ends_with(".tmp") && n.starts_with(".session.json.") && n != ".session.json.tmp"
        })
        .collect();
    assert!(temps.is_empty(), "{temps:?}");

    // The machine's run registry.
    let reg = sb.home.join(".local/state/pas-agent");
    std::fs::create_dir_all(&reg).unwrap();
    std::fs::write(reg.join(".runs.json.Qw3rt9.tmp"), "{\"runs\": [").unwrap();
    sb.ok(&["run", "--no-pty", "--", "true"]);
    assert!(!reg.join(".runs.json.Qw3rt9.tmp").exists());
}

#[test]
fn root_keeps_owners_and_gives_new_files_to_the_directory_owner() {
    if !is_root() {
        return;
    }
    let sb = Sandbox::with_session();
    sb.write("CLAUDE.md", "# Theirs\n");
    let chown = |p: &Path, id: u32| std::os::unix::fs::chown(p, Some(id), Some(id)).unwrap();
    for p in [".pas-agent/session.json", "CLAUDE.md"] {
        chown(&sb.path(p), 12345);
        std::fs::set_permissions(sb.path(p), std::fs::Permissions::from_mode(0o640)).unwrap();
    }
    sb.ok(&["update", "--next", "as root"]);
    sb.ok(&["export", "--to", "claude"]);
    for p in [".pas-agent/session.json", "CLAUDE.md"] {
        let meta = std::fs::metadata(sb.path(p)).unwrap();
        assert_eq!((meta.uid(), meta.gid()), (12345, 12345), "{p}");
        assert_eq!(meta.mode() & 0o7777, 0o640, "{p}");
    }
    assert!(sb.read("CLAUDE.md").contains("as root"));

    // New files in directories the user owns are the user's.
    chown(&sb.work, 12346);
    chown(&sb.path(".pas-agent"), 12346);
    sb.ok(&["export", "--to", "codex"]);
    sb.ok(&["export", "--to", "gemini", "-o", "docs/ctx/GEMINI.md"]);
    for p in ["AGENTS.md", "docs", "docs/ctx", "docs/ctx/GEMINI.md"] {
        assert_eq!(std::fs::metadata(sb.path(p)).unwrap().uid(), 12346, "{p}");
    }
    std::fs::remove_file(sb.path(".pas-agent/.gitignore")).unwrap();
    sb.ok(&["update", "--next", "again"]);
    assert_eq!(
        std::fs::metadata(sb.path(".pas-agent/.gitignore"))
            .unwrap()
            .uid(),
        12346
    );
}

#[test]
fn a_read_only_directory_is_respected_as_root_too() {
    let sb = Sandbox::with_session();
    sb.write("CLAUDE.md", "# Mine\n");
    let set = |p: &Path, mode: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap()
    };
    set(&sb.work, 0o555);
    let err = sb.fails(&["export", "--to", "codex"], 6);
    assert!(err.contains("read-only"), "{err}");
    assert!(!sb.path("AGENTS.md").exists());
    // Replacing an existing file is a rename in the directory: refused as well.
    sb.fails(&["export", "--to", "claude"], 6);
    assert_eq!(sb.read("CLAUDE.md"), "# Mine\n");
    set(&sb.work, 0o755);

    let state = sb.path(".pas-agent");
    let before = sb.bytes(".pas-agent/session.json");
    set(&state, 0o555);
    let err = sb.fails(&["update", "--next", "x"], 1);
    assert!(
        err.contains("read-only") && err.contains(".pas-agent"),
        "{err}"
    );
    set(&state, 0o755);
    assert_eq!(sb.bytes(".pas-agent/session.json"), before);

    // `init` in a read-only project directory creates nothing.
    let fresh = Sandbox::plain();
    set(&fresh.work, 0o555);
    let err = fresh.fails(&["init", "--task", "t"], 1);
    assert!(err.contains("read-only"), "{err}");
    assert!(!fresh.path(".pas-agent").exists());
    set(&fresh.work, 0o755);

    // A read-only file stays read-only for root.
    set(&sb.path("CLAUDE.md"), 0o444);
    sb.fails(&["export", "--to", "claude"], 6);
    assert_eq!(sb.read("CLAUDE.md"), "# Mine\n");
}

/// Runs pas-agent under `timeout`, so that a hang fails the test instead of stalling it.
fn bounded(sb: &Sandbox, dir: &str, args: &[&str]) -> std::process::Output {
    let mut cmd = std::process::Command::new("timeout");
    cmd.arg("120").arg(crate::common::bin()).args(args);
    copy_env(sb, &mut cmd);
    cmd.current_dir(sb.work.join(dir)).output().unwrap()
}

#[test]
fn special_files_where_the_session_should_be_are_reported_by_name() {
    type Make = Box<dyn Fn(&Path)>;
    let kinds: Vec<(&str, Make)> = vec![
        (
            "FIFO",
            Box::new(|p: &Path| {
                let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
                // SAFETY: a valid path; mkfifo only creates a node.
                assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
            }),
        ),
        (
            "directory",
            Box::new(|p: &Path| std::fs::create_dir(p).unwrap()),
        ),
        (
            "dangling",
            Box::new(|p: &Path| symlink("gone.json", p).unwrap()),
        ),
        (
            "socket",
            Box::new(|p: &Path| {
                let l = std::os::unix::net::UnixListener::bind(p).unwrap();
                std::mem::forget(l);
            }),
        ),
    ];
    for (what, make) in kinds {
        // A parent directory with a good session, and a child project with the bad file.
        let sb = Sandbox::with_session();
        std::fs::create_dir_all(sb.path("child/.pas-agent")).unwrap();
        let bad = sb.path("child/.pas-agent/session.json");
        make(&bad);
        for args in [
            vec!["status"],
            vec!["update", "--next", "x"],
            vec!["export", "--to", "claude"],
            vec!["list"],
            vec!["show", "1"],
        ] {
            let out = bounded(&sb, "child", &args);
            assert_eq!(
                out.status.code(),
                Some(5),
                "{what} {args:?}: {}",
                stderr(&out)
            );
            assert!(
                stderr(&out).contains(&bad.display().to_string()),
                "{what} {args:?}: {}",
                stderr(&out)
            );
        }
        assert!(!sb.path("child/CLAUDE.md").exists());
        assert!(!sb.path("CLAUDE.md").exists());
        // The prompt never hangs either.
        let out = bounded(&sb, "child", &["prompt"]);
        assert_ne!(out.status.code(), Some(124), "{what} prompt hung");

        // `init` where the bad file stands reports it and replaces nothing.
        let sb = Sandbox::repo();
        std::fs::create_dir_all(sb.path(".pas-agent")).unwrap();
        let bad = sb.path(".pas-agent/session.json");
        make(&bad);
        let out = bounded(&sb, "", &["init", "--task", "t"]);
        assert_eq!(out.status.code(), Some(5), "{what} init: {}", stderr(&out));
        assert!(
            stderr(&out).contains(&bad.display().to_string()),
            "{}",
            stderr(&out)
        );
        assert!(!bad.is_file());
    }
}

#[test]
fn a_context_file_that_is_a_fifo_is_refused_without_hanging() {
    let sb = Sandbox::with_session();
    let p = sb.path("AGENTS.md");
    let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
    // SAFETY: a valid path; mkfifo only creates a node.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let out = bounded(&sb, "", &["export", "--to", "codex"]);
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    assert!(stderr(&out).contains("FIFO"), "{}", stderr(&out));
}

#[test]
fn hard_linked_context_files_stay_linked() {
    let sb = Sandbox::with_session();
    sb.write("CLAUDE.md", "# Shared notes\n");
    std::fs::hard_link(sb.path("CLAUDE.md"), sb.path("AGENTS.md")).unwrap();
    let ino = |p: &str| std::fs::metadata(sb.path(p)).unwrap().ino();
    sb.ok(&["export", "--to", "claude"]);
    sb.ok(&["update", "--next", "second"]);
    sb.ok(&["export", "--to", "codex"]);
    assert_eq!(ino("CLAUDE.md"), ino("AGENTS.md"));
    let text = sb.read("AGENTS.md");
    assert!(
        text.starts_with("# Shared notes\n") && text.contains("second"),
        "{text}"
    );
    assert_eq!(text.matches("<!-- pas-agent:start").count(), 1, "{text}");
    let leftovers: Vec<_> = std::fs::read_dir(&sb.work)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".bak") || n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    // A hard link to a file outside the root is not written through.
    let sb = Sandbox::with_session();
    let keys = outside_file(&sb, "authorized_keys", KEYS);
    std::fs::hard_link(&keys, sb.path("CLAUDE.md")).unwrap();
    sb.ok(&["export", "--to", "claude"]);
    assert_eq!(std::fs::read_to_string(&keys).unwrap(), KEYS);
    assert!(sb.read("CLAUDE.md").contains("Build the thing"));
}

#[test]
fn an_empty_or_half_written_registry_reads_as_empty() {
    for content in [
        "",
        "\n",
        "{\"schema_version\": 1, \"runs\": [{\"run_id\": \"12",
        "\0\0\0\0\0\0\0\0",
        "{\"schema_version\": 1, \"ru\0\0\0\0",
    ] {
        let sb = Sandbox::with_session();
        let reg = sb.home.join(".local/state/pas-agent");
        std::fs::create_dir_all(&reg).unwrap();
        std::fs::write(reg.join("runs.json"), content).unwrap();
        let out = sb.ok(&["runs", "--all"]);
        assert!(out.contains("No agent runs"), "{content:?}: {out}");
        sb.ok(&["runs", "--all", "--json"]);
        let out = sb.run(&["run", "--no-pty", "--", "true"]);
        assert_eq!(out.status.code(), Some(0), "{content:?}: {}", stderr(&out));
        assert!(
            !stderr(&out).contains("registry"),
            "{content:?}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn a_user_who_cannot_keep_the_owner_is_told_what_to_do() {
    // Needs root to set the scene and `setpriv` to act as another user.
    let Ok(setpriv) = which::which("setpriv") else {
        return;
    };
    if !is_root() {
        return;
    }
    let sb = Sandbox::plain();
    sb.ok(&["init", "--task", "shared"]);
    let set = |p: &Path, mode: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap()
    };
    set(sb.tmp.path(), 0o755);
    set(&sb.work, 0o777);
    set(&sb.path(".pas-agent"), 0o777);
    let session = sb.path(".pas-agent/session.json");
    set(&session, 0o666);
    set(&sb.path(".pas-agent/session.lock"), 0o666);
    std::os::unix::fs::chown(&session, Some(12346), Some(12346)).unwrap();
    let before = std::fs::read(&session).unwrap();
    let mut cmd = std::process::Command::new(setpriv);
    cmd.args(["--reuid", "12345", "--regid", "12345", "--clear-groups"])
        .arg(crate::common::bin())
        .args(["update", "--next", "as someone else"]);
    copy_env(&sb, &mut cmd);
    let out = cmd.current_dir(&sb.work).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("uid 12346"), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("run the command as that user"),
        "{}",
        stderr(&out)
    );
    let meta = std::fs::metadata(&session).unwrap();
    assert_eq!((meta.uid(), meta.gid()), (12346, 12346));
    assert_eq!(std::fs::read(&session).unwrap(), before);
}

/// A refusal never offers a committed link's target as a command to copy (a newcomer's trial:
/// the hint for `CLAUDE.md -> ~/.bashrc` was `export … -o ~/.bashrc`); it says how to get rid of
/// the link instead, for the context file, the state directory and the session file alike.
#[test]
fn refusals_never_suggest_writing_where_a_committed_link_leads() {
    let sb = Sandbox::with_session();
    let target = outside_file(&sb, "victim-rc", "# the user's start-up file\n");
    let target_text = target.to_string_lossy().into_owned();
    symlink(&target, sb.path("CLAUDE.md")).unwrap();
    let err = sb.fails(&["export", "--to", "claude"], 6);
    assert!(err.contains("rm CLAUDE.md"), "{err}");
    assert!(
        !err.contains(&format!("-o {target_text}")),
        "the hint offers the link's target: {err}"
    );
    let outside = outside_dir(&sb);
    std::fs::rename(sb.path(".pas-agent"), outside.join("state")).unwrap();
    symlink(outside.join("state"), sb.path(".pas-agent")).unwrap();
    let err = sb.fails(&["update", "--next", "x"], 6);
    assert!(err.contains("rm .pas-agent"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        "# the user's start-up file\n"
    );
}
