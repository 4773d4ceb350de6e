//! A sandbox per test: a temporary directory with its own HOME, XDG state and git
//! configuration, a work directory (optionally a git repository with one commit), and helpers
//! to run the real `pas-agent` binary and real git in it. Nothing leaks between tests, so they
//! run in parallel.

#![allow(dead_code)]

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

/// Environment variable naming another build of pas-agent to run the suite against (a release
/// build, say); unset, the suite runs the binary cargo built for it.
pub const BIN_ENV: &str = "PAS_AGENT_E2E_BIN";

/// Path of the binary under test.
pub fn bin() -> PathBuf {
    match std::env::var_os(BIN_ENV) {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        _ => PathBuf::from(env!("CARGO_BIN_EXE_pas-agent")),
    }
}

/// One isolated test world.
pub struct Sandbox {
    pub tmp: tempfile::TempDir,
    /// `$HOME`.
    pub home: PathBuf,
    /// The project directory (the git top level when made by [`Sandbox::repo`]).
    pub work: PathBuf,
    /// Extra directory prepended to `PATH` (for stand-in agents).
    pub bin_dir: PathBuf,
    /// Extra environment for every command.
    pub env: Vec<(String, String)>,
}

impl Sandbox {
    /// A sandbox whose work directory is not a git repository.
    pub fn plain() -> Sandbox {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().canonicalize().expect("canonical tempdir");
        let home = root.join("home");
        let work = root.join("work");
        let bin_dir = root.join("bin");
        for d in [&home, &work, &bin_dir] {
            std::fs::create_dir_all(d).expect("mkdir");
        }
        std::fs::write(
            home.join(".gitconfig"),
            "[user]\n\tname = Test User\n\temail = test@example.invalid\n[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n",
        )
        .expect("gitconfig");
        Sandbox {
            tmp,
            home,
            work,
            bin_dir,
            env: Vec::new(),
        }
    }

    /// A sandbox whose work directory is a git repository on `main` with one commit
    /// (`README.md`).
    pub fn repo() -> Sandbox {
        let sb = Sandbox::plain();
        sb.init_repo();
        sb
    }

    /// Makes the work directory a git repository on `main` with one commit (`README.md`), as
    /// [`Sandbox::repo`] has it.
    pub fn init_repo(&self) {
        self.git(&["init", "-q", "-b", "main"]);
        self.write("README.md", "# Project\n");
        self.git(&["add", "README.md"]);
        self.git(&["commit", "-q", "-m", "Initial commit"]);
    }

    /// A sandbox with a repository and a session ("Build the thing").
    pub fn with_session() -> Sandbox {
        let sb = Sandbox::repo();
        sb.ok(&["init", "--task", "Build the thing"]);
        sb
    }

    fn isolate(&self, cmd: &mut Command) {
        for (k, _) in std::env::vars_os() {
            let k = k.to_string_lossy().into_owned();
            if k.starts_with("PAS_AGENT") || k.starts_with("GIT_") || k == "NO_COLOR" {
                cmd.env_remove(&k);
            }
        }
        let path = format!(
            "{}:{}",
            self.bin_dir.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        cmd.env("HOME", &self.home)
            .env("XDG_STATE_HOME", self.home.join(".local/state"))
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .env("GIT_CONFIG_GLOBAL", self.home.join(".gitconfig"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("PATH", path)
            .env("LC_ALL", "C.UTF-8");
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
    }

    /// A `pas-agent` command in the work directory, isolated, with stdin closed.
    pub fn cmd(&self) -> Command {
        let mut cmd = Command::new(bin());
        cmd.current_dir(&self.work).stdin(Stdio::null());
        self.isolate(&mut cmd);
        cmd
    }

    /// Runs pas-agent with `args` in `dir` (relative to the work directory).
    pub fn run_in<S: AsRef<OsStr>>(&self, dir: &str, args: &[S]) -> Output {
        let mut cmd = self.cmd();
        cmd.current_dir(self.work.join(dir)).args(args);
        cmd.output().expect("run pas-agent")
    }

    /// Runs pas-agent with `args` in the work directory.
    pub fn run<S: AsRef<OsStr>>(&self, args: &[S]) -> Output {
        self.run_in("", args)
    }

    /// Runs pas-agent and asserts success; returns stdout.
    pub fn ok<S: AsRef<OsStr>>(&self, args: &[S]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "pas-agent {:?} failed ({:?})\nstdout:\n{}\nstderr:\n{}",
            args.iter()
                .map(|a| a.as_ref().to_string_lossy().into_owned())
                .collect::<Vec<_>>(),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Runs pas-agent, asserts the exit code, returns stderr.
    pub fn fails<S: AsRef<OsStr>>(&self, args: &[S], code: i32) -> String {
        let out = self.run(args);
        assert_eq!(
            out.status.code(),
            Some(code),
            "pas-agent {:?}: expected exit {code}\nstdout:\n{}\nstderr:\n{}",
            args.iter()
                .map(|a| a.as_ref().to_string_lossy().into_owned())
                .collect::<Vec<_>>(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    /// A git command in the work directory with the sandbox's configuration.
    pub fn git_cmd(&self) -> Command {
        let mut cmd = Command::new("git");
        cmd.current_dir(&self.work).stdin(Stdio::null());
        self.isolate(&mut cmd);
        cmd
    }

    /// Runs git and returns trimmed stdout; panics on failure.
    pub fn git(&self, args: &[&str]) -> String {
        let out = self.git_cmd().args(args).output().expect("run git");
        assert!(
            out.status.success(),
            "git {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Absolute path of a work-relative path.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.work.join(rel)
    }

    /// Writes a file (creating parent directories).
    pub fn write(&self, rel: &str, content: impl AsRef<[u8]>) {
        let p = self.path(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(p, content).expect("write");
    }

    /// Reads a file as text.
    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap_or_else(|e| panic!("read {rel}: {e}"))
    }

    /// Reads a file's bytes.
    pub fn bytes(&self, rel: &str) -> Vec<u8> {
        std::fs::read(self.path(rel)).unwrap_or_else(|e| panic!("read {rel}: {e}"))
    }

    /// `.pas-agent/session.json` as JSON.
    pub fn session(&self) -> Value {
        serde_json::from_str(&self.read(".pas-agent/session.json")).expect("session.json is JSON")
    }

    /// Waits (up to 30 s, polling) until a work-relative path exists.
    pub fn wait_for(&self, rel: &str) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !self.path(rel).exists() {
            assert!(std::time::Instant::now() < deadline, "{rel} never appeared");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// Installs a stand-in `codex` that writes a rollout in Codex's session store for the
    /// session id in `$ID`, started now in the current directory (the `session_meta` line
    /// Codex begins a rollout with), then runs `then`.
    pub fn codex_writing_rollout(&self, then: &str) -> PathBuf {
        self.stand_in(
            "codex",
            &format!(
                "day=$(date -u +%Y/%m/%d); dir=\"$HOME/.codex/sessions/$day\"; mkdir -p \"$dir\"\n\
                 printf '{{\"type\":\"session_meta\",\"payload\":{{\"id\":\"%s\",\"timestamp\":\"%s\",\"cwd\":\"%s\"}}}}\\n' \
                   \"$ID\" \"$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)\" \"$(pwd -P)\" > \"$dir/rollout-$ID.jsonl\"\n{then}"
            ),
        )
    }

    /// Installs an executable shell script named `name` on the sandbox's PATH.
    pub fn stand_in(&self, name: &str, script: &str) -> PathBuf {
        let p = self.bin_dir.join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{script}\n")).expect("write script");
        make_executable(&p);
        p
    }
}

/// `chmod 755`.
pub fn make_executable(p: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// stdout as text.
pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// stderr as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `session.json`'s runs, or an empty list (also while the file is missing or being replaced).
pub fn runs(sb: &Sandbox) -> Vec<Value> {
    std::fs::read_to_string(sb.path(".pas-agent/session.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .and_then(|s| s["runs"].as_array().cloned())
        .unwrap_or_default()
}

/// The last run record.
pub fn last_run(sb: &Sandbox) -> Value {
    runs(sb).pop().expect("a run record")
}

/// The paths of a run's (or checkpoint's) `files_changed`.
pub fn changed_paths(record: &Value) -> Vec<&str> {
    record["files_changed"]
        .as_array()
        .expect("files_changed")
        .iter()
        .map(|f| f["path"].as_str().expect("a path"))
        .collect()
}

/// `stale.changed` of a `status --json` document as `path:Status` strings, in its order.
pub fn stale_changed(v: &Value) -> Vec<String> {
    v["stale"]["changed"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|c| {
                    let status = match &c["status"] {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    format!("{}:{status}", c["path"].as_str().unwrap_or("?"))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A repository sandbox with a session, whose caches live under a runtime directory of its
/// own (`XDG_RUNTIME_DIR`, returned beside it).
pub fn session_with_runtime() -> (Sandbox, PathBuf) {
    let mut sb = Sandbox::repo();
    let runtime = sb.tmp.path().join("runtime");
    std::fs::create_dir_all(&runtime).expect("mkdir runtime");
    sb.env.push((
        "XDG_RUNTIME_DIR".into(),
        runtime.to_string_lossy().into_owned(),
    ));
    sb.ok(&["init", "--task", "Build the thing"]);
    (sb, runtime)
}

/// The one file of the summary cache under `runtime` whose name ends with `suffix`
/// (`.prompt.json`, `.3.json`); fails unless there is exactly one.
pub fn one_cache_file(runtime: &Path, suffix: &str) -> PathBuf {
    let dir = runtime.join("pas-agent/summary");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    assert_eq!(found.len(), 1, "one {suffix} file: {found:?}");
    found.pop().expect("one file")
}

/// Every command that reads the session (and the ones that then write it): what a bad file
/// must make each of them do is refuse with exit 5 and leave it alone.
pub fn session_readers() -> Vec<Vec<&'static str>> {
    vec![
        vec!["status"],
        vec!["status", "--json"],
        vec!["list"],
        vec!["show", "1"],
        vec!["runs"],
        vec!["update", "--next", "x"],
        vec!["remove", "remaining", "1"],
        vec!["checkpoint", "m"],
        vec!["export", "--to", "codex"],
    ]
}

/// Every file under `dir`, recursively (none when it is missing).
pub fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}
