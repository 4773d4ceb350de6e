//! Performance work must not change answers: the status fast paths (HEAD → index skipped when
//! the index's cache-tree proves it empty) against the full computation and against git itself,
//! the prompt's own argument reader against clap's, and the bare launcher's durable writes
//! counted with strace.

use std::process::Command;

use crate::common::{Sandbox, stale_changed};

/// `status --json` three ways: as shipped (fast paths on), with the fast paths off
/// (`PAS_AGENT_FULL_STATUS=1`, the full HEAD → index comparison) and through the git CLI.
fn status_three_ways(sb: &Sandbox, state: &str) -> serde_json::Value {
    let run = |env: &[(&str, &str)]| {
        let mut cmd = sb.cmd();
        cmd.args(["status", "--json"]);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().expect("run pas-agent");
        assert!(
            out.status.success(),
            "{state}: status {env:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("status --json")
    };
    let fast = run(&[]);
    let full = run(&[("PAS_AGENT_FULL_STATUS", "1")]);
    let cli = run(&[("PAS_AGENT_GIT", "cli")]);
    assert_eq!(
        fast, full,
        "{state}: the fast path differs from the full computation"
    );
    assert_eq!(
        fast, cli,
        "{state}: the in-process status differs from git's"
    );
    fast
}

/// Replaces the index with the same entries but no extensions (no cache-tree), as an index
/// written by a tool that does not keep one would be.
fn drop_cache_tree(sb: &Sandbox) {
    let entries = sb.git(&["ls-files", "-s"]);
    std::fs::remove_file(sb.path(".git/index")).unwrap();
    let mut child = sb
        .git_cmd()
        .args(["update-index", "--index-info"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(entries.as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success());
    // Refresh the stat data, so that the index stays "clean" for unchanged files.
    sb.git(&["update-index", "-q", "--refresh"]);
}

/// Whether the index file holds a cache-tree (`TREE`) extension at all.
fn has_cache_tree(sb: &Sandbox) -> bool {
    let bytes = std::fs::read(sb.path(".git/index")).unwrap();
    bytes.windows(4).any(|w| w == b"TREE")
}

#[test]
fn status_fast_paths_give_the_full_answer() {
    let sb = Sandbox::with_session();
    for d in ["a", "b", "c/d"] {
        for f in 0..5 {
            sb.write(&format!("{d}/f{f}.txt"), format!("{d} {f}\n"));
        }
    }
    sb.git(&["add", "-A"]);
    sb.git(&["commit", "-q", "-m", "files"]);
    sb.ok(&["checkpoint", "baseline"]);

    // A fresh commit: the cache-tree names HEAD's tree; only work-tree changes and untracked
    // files, which the fast path still reads.
    assert!(has_cache_tree(&sb));
    sb.write("a/f0.txt", "changed\n");
    sb.write("new.txt", "new\n");
    sb.write("c/d/new.txt", "new\n");
    std::fs::remove_file(sb.path("b/f1.txt")).unwrap();
    let v = status_three_ways(&sb, "work-tree changes only");
    let got = stale_changed(&v);
    for want in [
        "a/f0.txt:Modified",
        "new.txt:Untracked",
        "c/d/new.txt:Untracked",
        "b/f1.txt:Deleted",
    ] {
        assert!(got.iter().any(|g| g == want), "{want} missing from {got:?}");
    }

    // Staged changes of every kind: the cache-tree is invalidated along their paths.
    sb.git(&["add", "a/f0.txt", "new.txt"]);
    sb.git(&["rm", "-q", "--cached", "b/f2.txt"]);
    sb.git(&["mv", "c/d/f3.txt", "c/d/moved.txt"]);
    sb.git(&["add", "-N", "c/d/new.txt"]);
    let v = status_three_ways(&sb, "staged changes");
    let got = stale_changed(&v);
    for want in ["a/f0.txt:Modified", "new.txt:Added", "b/f2.txt:Untracked"] {
        assert!(got.iter().any(|g| g == want), "{want} missing from {got:?}");
    }

    // A valid cache-tree that is not HEAD's: commit, then move HEAD back without touching
    // the index. The index differs from HEAD although its cache-tree is whole.
    sb.git(&["commit", "-q", "-m", "second"]);
    sb.git(&["reset", "-q", "--soft", "HEAD~1"]);
    assert!(has_cache_tree(&sb));
    let v = status_three_ways(&sb, "cache-tree of another commit");
    let got = stale_changed(&v);
    for want in ["a/f0.txt:Modified", "new.txt:Added", "b/f2.txt:Untracked"] {
        assert!(got.iter().any(|g| g == want), "{want} missing from {got:?}");
    }

    // No cache-tree at all, with and then without staged changes.
    drop_cache_tree(&sb);
    assert!(!has_cache_tree(&sb));
    status_three_ways(&sb, "no cache-tree, staged changes");
    sb.git(&["commit", "-q", "-m", "third"]);
    drop_cache_tree(&sb);
    assert!(!has_cache_tree(&sb));
    sb.write("a/f4.txt", "changed again\n");
    let v = status_three_ways(&sb, "no cache-tree, nothing staged");
    assert!(
        stale_changed(&v).iter().any(|g| g == "a/f4.txt:Modified"),
        "{v}"
    );

    // A cache-tree rebuilt by git (read-tree primes it) after a staged change was committed.
    sb.git(&["read-tree", "HEAD"]);
    assert!(has_cache_tree(&sb));
    status_three_ways(&sb, "cache-tree primed by read-tree");

    // An index taken from an older commit, cache-tree included.
    sb.git(&["read-tree", "HEAD~2"]);
    assert!(has_cache_tree(&sb));
    status_three_ways(&sb, "index of an older commit");
}

#[test]
fn status_fast_paths_on_an_unborn_branch_and_a_conflict() {
    // Nothing committed yet: HEAD is the empty tree.
    let sb = Sandbox::plain();
    sb.git(&["init", "-q", "-b", "main"]);
    sb.ok(&["init", "--task", "t"]);
    sb.write("a.txt", "a\n");
    sb.write("b.txt", "b\n");
    sb.git(&["add", "a.txt"]);
    status_three_ways(&sb, "unborn branch");

    // An unmerged path.
    let sb = Sandbox::with_session();
    sb.write("c.txt", "base\n");
    sb.git(&["add", "c.txt"]);
    sb.git(&["commit", "-q", "-m", "base"]);
    sb.git(&["checkout", "-q", "-b", "other"]);
    sb.write("c.txt", "other\n");
    sb.git(&["commit", "-q", "-am", "other"]);
    sb.git(&["checkout", "-q", "main"]);
    sb.write("c.txt", "main\n");
    sb.git(&["commit", "-q", "-am", "main"]);
    let merge = sb
        .git_cmd()
        .args(["merge", "-q", "other"])
        .output()
        .unwrap();
    assert!(!merge.status.success(), "the merge should conflict");
    status_three_ways(&sb, "unmerged path");
}

/// The prompt reads its own arguments (no clap) only in the forms clap reads the same way:
/// the output is the same as through clap (`-C .` takes clap's path), and what clap rejects is
/// still rejected.
#[test]
fn prompt_reads_its_arguments_as_clap_does() {
    let sb = Sandbox::with_session();
    sb.ok(&["update", "--next", "write the tests"]);
    for args in [
        &["--width", "12"][..],
        &["--width=12", "--hook", "7"],
        &["--hook=7", "--notice"],
        &["--notice", "--hook", "7", "--width", "9"],
    ] {
        let fast: Vec<&str> = std::iter::once("prompt")
            .chain(args.iter().copied())
            .collect();
        let slow: Vec<&str> = ["-C", ".", "prompt"]
            .into_iter()
            .chain(args.iter().copied())
            .collect();
        assert_eq!(sb.ok(&fast), sb.ok(&slow), "{args:?}");
    }
    for bad in [&["prompt", "--notice"][..], &["prompt", "--hook"]] {
        let err = sb.fails(bad, 2);
        assert!(!err.is_empty(), "{bad:?}");
    }
}

/// `pas-agent run --no-checkpoint --no-export`: before the program starts, the session's
/// `running` record with its file `fsync`ed but not its directory (a provisional save: a power
/// cut may lose the rename, never the file); after it, one durable write (the file's `fsync`
/// and its directory's). Counted as the `fsync`s of the whole process tree, before and after
/// the program's `execve`.
#[test]
fn bare_run_syncs_its_record_once_before_and_durably_after() {
    let Ok(probe) = Command::new("strace").arg("-V").output() else {
        panic!("strace is needed for this test (apt-get install strace; .ci/run installs it)");
    };
    assert!(probe.status.success());
    let sb = Sandbox::with_session();
    sb.write("dirty.txt", "x\n");
    // A first run creates the run registry's directory and files.
    sb.ok(&[
        "run",
        "--no-checkpoint",
        "--no-export",
        "--no-pty",
        "--",
        "true",
    ]);
    let trace = sb.path("strace.txt");
    // The sandbox's environment, through a pas-agent command's.
    let mut cmd = crate::launcher_support::isolated(&sb, "strace");
    cmd.args([
        "-f",
        "-qq",
        "-e",
        "trace=fsync,fdatasync,sync_file_range,syncfs,execve",
        "-o",
    ])
    .arg(&trace)
    .arg(crate::common::bin())
    .args([
        "run",
        "--no-checkpoint",
        "--no-export",
        "--no-pty",
        "--",
        "true",
    ]);
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&trace).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let program = lines
        .iter()
        .position(|l| l.contains("execve(") && l.contains("/true\", ["))
        .unwrap_or_else(|| panic!("the program's execve is not in the trace:\n{text}"));
    let syncs = |ls: &[&str]| {
        ls.iter()
            .filter(|l| l.contains("sync") && !l.contains("exited with"))
            .count()
    };
    assert_eq!(
        syncs(&lines[..program]),
        1,
        "expected one fsync before the program (the running record's file):\n{text}"
    );
    // The durable write after it is the temp file's fsync and its directory's.
    assert_eq!(
        syncs(&lines[program..]),
        2,
        "expected one durable write after the program (2 fsyncs):\n{text}"
    );
    let runs = sb.session()["runs"].as_array().unwrap().len();
    assert_eq!(runs, 2);
}

/// The fingerprint cache's one file for the sandbox's work tree, under the `XDG_RUNTIME_DIR`
/// the test set.
fn fingerprint_cache(runtime: &std::path::Path) -> Option<std::path::PathBuf> {
    let dir = runtime.join("pas-agent/fingerprints");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .ok()?
        .map(|e| e.unwrap().path())
        .collect();
    assert!(files.len() <= 1, "one cache file per work tree: {files:?}");
    files.pop()
}

/// Where the 16-digit content fingerprint of `path`'s row starts in a fingerprint cache file
/// (the binary rows of `src/fingerprint/cache.rs`: the path with its 4-byte length, 60 bytes of
/// stat data, then the content fingerprint as a present-tag, a 4-byte length and its text).
fn content_at(cache: &[u8], path: &str) -> Option<usize> {
    let mut key = (path.len() as u32).to_le_bytes().to_vec();
    key.extend_from_slice(path.as_bytes());
    let row = cache.windows(key.len()).position(|w| w == key.as_slice())?;
    let tag = row + key.len() + 60;
    (cache.get(tag..tag + 5)? == [1, 16, 0, 0, 0]).then_some(tag + 5)
}

/// The fingerprint `status --json` gives `path` (fast paths and caches on).
fn fingerprint_of(sb: &Sandbox, path: &str) -> Option<String> {
    let out = sb.ok(&["status", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    v["stale"]["changed"]
        .as_array()?
        .iter()
        .find(|c| c["path"] == path)?["fingerprint"]
        .as_str()
        .map(str::to_owned)
}

/// Sets `path`'s modification time to exactly `time` (its change time moves to now: no program
/// can set that back).
fn set_mtime(path: &std::path::Path, time: std::time::SystemTime) {
    let f = std::fs::File::options().write(true).open(path).unwrap();
    f.set_modified(time).unwrap();
}

/// The stat-keyed fingerprint cache never changes an answer: `status --json` with the cache
/// cold, warm and stale equals the full computation (`PAS_AGENT_FULL_STATUS=1`, no cache) and
/// git's; a warm cache is really used; a file rewritten with the same size and modification
/// time (a racy rewrite, as within one second) is read again.
#[test]
fn fingerprint_cache_cold_warm_and_stale_give_the_full_answer() {
    let mut sb = Sandbox::with_session();
    let runtime = sb.tmp.path().join("runtime");
    std::fs::create_dir_all(&runtime).unwrap();
    sb.env
        .push(("XDG_RUNTIME_DIR".into(), runtime.display().to_string()));
    for d in ["a", "b/c"] {
        for f in 0..4 {
            sb.write(&format!("{d}/f{f}.txt"), format!("{d} {f}\n"));
        }
    }
    sb.git(&["add", "-A"]);
    sb.git(&["commit", "-q", "-m", "files"]);
    sb.ok(&["checkpoint", "baseline"]);
    sb.write("a/f0.txt", "edit one\n");
    sb.write("b/c/f1.txt", "edit two\n");
    sb.write("b/c/new.txt", "new\n");
    sb.write("untracked/deep/x.txt", "x\n");
    sb.git(&["add", "b/c/f1.txt"]);
    #[cfg(unix)]
    std::os::unix::fs::symlink("a/f1.txt", sb.path("link")).unwrap();

    // Racy: the files were written this second, so the first status reads them all and may
    // not keep them (a second may have ticked meanwhile: then it keeps them, which is fine).
    status_three_ways(&sb, "racy files, cold cache");
    // Cold: no cache at all.
    if let Some(f) = fingerprint_cache(&runtime) {
        std::fs::remove_file(f).unwrap();
    }
    // Past the racy margin (the two whole seconds before the current one, see the cache).
    std::thread::sleep(std::time::Duration::from_millis(3100));
    let cold = status_three_ways(&sb, "cold cache");
    let file = fingerprint_cache(&runtime).expect("status writes the cache");
    let cached = std::fs::read(&file).unwrap();
    for path in [
        "a/f0.txt",
        "b/c/f1.txt",
        "b/c/new.txt",
        "untracked/deep/x.txt",
    ] {
        assert!(
            content_at(&cached, path).is_some(),
            "{path} not cached: {}",
            String::from_utf8_lossy(&cached)
        );
    }
    // Warm: the same answer.
    let warm = status_three_ways(&sb, "warm cache");
    assert_eq!(cold, warm);

    // The warm cache is what the fast path reads: a cached value is believed while the file's
    // stat data is the recorded one (shown by planting a value no file has) ...
    let planted = "0123456789abcdef";
    let mut poisoned = cached.clone();
    let at = content_at(&cached, "a/f0.txt").unwrap();
    poisoned[at..at + planted.len()].copy_from_slice(planted.as_bytes());
    std::fs::write(&file, &poisoned).unwrap();
    assert_eq!(fingerprint_of(&sb, "a/f0.txt").as_deref(), Some(planted));

    // ... and never once the file is rewritten, even with the same size and the same
    // modification time to the nanosecond: its change time moved.
    let mtime = std::fs::metadata(sb.path("a/f0.txt"))
        .unwrap()
        .modified()
        .unwrap();
    sb.write("a/f0.txt", "edit ONE\n");
    set_mtime(&sb.path("a/f0.txt"), mtime);
    let stale = status_three_ways(&sb, "stale cache (same size and mtime)");
    let fp = |v: &serde_json::Value, path: &str| {
        v["stale"]["changed"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["path"] == path)
            .map(|c| c["fingerprint"].clone())
    };
    assert_ne!(fp(&stale, "a/f0.txt"), fp(&warm, "a/f0.txt"));
    assert_ne!(
        fp(&stale, "a/f0.txt"),
        Some(serde_json::Value::from(planted))
    );

    // A file changed within the same second as the cache write: read again.
    sb.ok(&["status"]);
    sb.write("b/c/new.txt", "NEW\n");
    status_three_ways(&sb, "file changed in the second of the cache write");

    // A checkpoint of a warm cache records what the full computation sees.
    // Past the racy margin (the two whole seconds before the current one, see the cache).
    std::thread::sleep(std::time::Duration::from_millis(3100));
    sb.ok(&["status"]);
    let warm = status_three_ways(&sb, "warm again");
    sb.ok(&["checkpoint", "warm"]);
    let last = sb.session()["checkpoints"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    let files = last["files_changed"]
        .as_array()
        .expect("checkpoint files")
        .clone();
    for c in warm["stale"]["changed"].as_array().unwrap() {
        assert!(
            files
                .iter()
                .any(|f| f["path"] == c["path"] && f["fingerprint"] == c["fingerprint"]),
            "{c} not in the checkpoint's files {files:?}"
        );
    }
}

/// A small deterministic generator (xorshift64*), so that each seed builds the same work tree
/// on every machine.
struct Dice(u64);

impl Dice {
    fn roll(&mut self, sides: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % sides
    }
}

/// Runs pas-agent in `dir` (relative to the work directory) with `PAS_AGENT_STATUS_TRACE=1`,
/// requires success, and returns its stderr: the trace says which path answered each status.
fn traced(sb: &Sandbox, dir: &str, args: &[&str]) -> String {
    let out = sb
        .cmd()
        .current_dir(sb.path(dir))
        .args(args)
        .env("PAS_AGENT_STATUS_TRACE", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Which path answered `status` (`PAS_AGENT_STATUS_TRACE=1`): "fast", or a gix path (the
/// fast path's line on the directory cache, [`cache_use`], left aside).
fn status_path(sb: &Sandbox) -> String {
    traced(sb, ".", &["status", "--json"])
        .lines()
        .filter_map(|l| l.strip_prefix("pas-agent: status: "))
        .find(|l| !l.starts_with("directories: "))
        .unwrap_or("none")
        .to_string()
}

/// Sets every file's (and link's) times under the work tree to 2020, as files that were last
/// touched long before the index was written: no entry is then racily clean.
fn age_files(sb: &Sandbox) {
    let status = Command::new("find")
        .arg(sb.path("."))
        .args([
            "-path",
            "*/.git",
            "-prune",
            "-o",
            "-exec",
            "touch",
            "-h",
            "-d",
            "2020-01-01 00:00:00",
            "{}",
            "+",
        ])
        .status()
        .unwrap();
    assert!(status.success());
}

/// The fast work-tree pass (`src/git/fast.rs`) against gix's full status and git's, on work
/// trees built from seeds: every kind of change to tracked files (content with and without a
/// new size, deletion, executable bit, file ↔ symbolic link, file → directory, a directory
/// deleted, replaced by a file or by a link to another directory) and of untracked paths
/// (new files and directories, ignored ones at several levels with negations, a nested
/// repository, an empty directory, a link, names with spaces and non-ASCII). Where no entry
/// needs its content read, the fast path must be the one that answered.
#[test]
fn status_fast_pass_matches_gix_and_git_on_generated_work_trees() {
    for seed in 1..=10u64 {
        let sb = Sandbox::with_session();
        let mut dice = Dice(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        sb.write(".gitignore", "*.log\n!keep.log\nbuild/\n/top-only.txt\n");
        sb.write("d1/.gitignore", "secret*\n!secret-kept.txt\n");
        let mut tracked = Vec::new();
        for d in [
            "d0", "d1", "d1/e0", "d1/e1", "d2", "d2/e0/f0", "sp ace", "ünï",
        ] {
            for f in 0..4 {
                let path = format!("{d}/f{f}.txt");
                sb.write(&path, format!("{path} {seed}\n"));
                tracked.push(path);
            }
        }
        sb.write("top.sh", "#!/bin/sh\n");
        // Enough entries for several threads, so that directories straddle their shares.
        for d in 0..30 {
            for f in 0..40 {
                let path = format!("many/m{d:02}/f{f:02}.txt");
                sb.write(&path, format!("{path}\n"));
            }
        }
        // A tracked file inside a directory the ignore rules name.
        sb.write("build/tracked.txt", "tracked although build/ is ignored\n");
        sb.git(&["add", "-f", "build/tracked.txt"]);
        std::os::unix::fs::symlink("d0/f0.txt", sb.path("link")).unwrap();
        tracked.push("link".into());
        age_files(&sb);
        sb.git(&["add", "-A"]);
        sb.git(&["commit", "-q", "-m", "files"]);
        sb.git(&["update-index", "-q", "--refresh"]);
        sb.ok(&["checkpoint", "baseline"]);
        assert!(has_cache_tree(&sb));

        // Changes to tracked files, one roll each (same-size edits only for odd seeds: they
        // need the content read, so the fast pass gives way to gix there).
        let mut needs_content = false;
        for path in &tracked {
            let p = sb.path(path);
            match dice.roll(12) {
                0 => sb.write(path, "a longer new content\n"),
                1 => {
                    let _ = std::fs::remove_file(&p);
                }
                2 if p.is_file() && !p.is_symlink() => {
                    use std::os::unix::fs::PermissionsExt;
                    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
                }
                3 => {
                    let _ = std::fs::remove_file(&p);
                    std::os::unix::fs::symlink("elsewhere", &p).unwrap();
                }
                4 => {
                    let _ = std::fs::remove_file(&p);
                    sb.write(&format!("{path}/inside.txt"), "now a directory\n");
                }
                5 if seed % 2 == 1 && p.is_file() && !p.is_symlink() => {
                    let mut bytes = std::fs::read(&p).unwrap();
                    bytes[0] ^= 0x20;
                    std::fs::write(&p, bytes).unwrap();
                    needs_content = true;
                }
                _ => {}
            }
        }
        if p_exists(&sb, "link") && dice.roll(2) == 0 {
            std::fs::remove_file(sb.path("link")).unwrap();
            sb.write("link", "a file now\n");
        }
        // Whole directories.
        match dice.roll(4) {
            0 => std::fs::remove_dir_all(sb.path("d2/e0")).unwrap(),
            1 => {
                std::fs::remove_dir_all(sb.path("d2/e0")).unwrap();
                sb.write("d2/e0", "a file where a directory was\n");
            }
            2 => {
                std::fs::remove_dir_all(sb.path("d1/e1")).unwrap();
                std::os::unix::fs::symlink("../d0", sb.path("d1/e1")).unwrap();
            }
            _ => {}
        }
        // Untracked paths.
        sb.write("new.txt", "new\n");
        sb.write("d0/new dir/a.txt", "new\n");
        sb.write("d0/new dir/b.log", "ignored\n");
        sb.write("d0/keep.log", "kept by a negation\n");
        sb.write("build/out.o", "ignored directory\n");
        sb.write("top-only.txt", "ignored at the top only\n");
        sb.write("d1/top-only.txt", "not ignored here\n");
        sb.write("d1/secret.txt", "ignored by d1/.gitignore\n");
        sb.write("d1/secret-kept.txt", "kept by a negation\n");
        sb.write("d1/e0/secret.txt", "ignored below d1 too\n");
        sb.write("only-ignored/x.log", "a directory of ignored files\n");
        std::fs::create_dir_all(sb.path("empty/dir")).unwrap();
        std::os::unix::fs::symlink("d0", sb.path("untracked-link")).unwrap();
        for d in 0..30 {
            if dice.roll(3) == 0 {
                sb.write(&format!("many/m{d:02}/untracked.txt"), "new\n");
            }
            if dice.roll(5) == 0 {
                sb.write(&format!("many/m{d:02}/new/deep/er/file.txt"), "new\n");
            }
        }
        sb.write("many/zz-new.txt", "after the last entry\n");
        sb.write(
            "build/new.o",
            "untracked in an ignored directory with a tracked file\n",
        );
        sb.write("fake-repo/.git", "not a repository\n");
        sb.write(
            "fake-repo/file.txt",
            "inside a directory whose .git is not a repository\n",
        );
        let fifo = Command::new("mkfifo")
            .arg(sb.path("d0/a-fifo"))
            .status()
            .unwrap();
        assert!(fifo.success());
        if dice.roll(2) == 0 {
            sb.write("nested/file.txt", "inside a nested repository\n");
            let out = Command::new("git")
                .args(["init", "-q"])
                .current_dir(sb.path("nested"))
                .output()
                .unwrap();
            assert!(out.status.success());
        }
        if dice.roll(2) == 0 {
            // The work tree's ignore rules changed without being staged.
            sb.write(".gitignore", "*.log\nbuild/\n");
        }

        let v = status_three_ways(&sb, &format!("seed {seed}"));
        assert!(!stale_changed(&v).is_empty(), "seed {seed}: {v}");
        let path = status_path(&sb);
        if needs_content {
            assert_ne!(path, "none", "seed {seed}: no trace");
        } else {
            assert_eq!(path, "fast", "seed {seed}: the fast pass was not taken");
        }
    }
}

fn p_exists(sb: &Sandbox, rel: &str) -> bool {
    sb.path(rel).symlink_metadata().is_ok()
}

/// `update` only asks whether the work tree is dirty: the fast pass ends at the first change in
/// the session's part of the tree, and must still give the right answer — clean, dirty by a
/// change near the end of the index, dirty by one untracked file, and clean for a session in a
/// subdirectory whose only change is elsewhere.
#[test]
fn fast_dirty_check_gives_the_right_answer() {
    let sb = Sandbox::repo();
    for d in 0..12 {
        for f in 0..100 {
            sb.write(&format!("sub/m{d:02}/f{f:02}.txt"), format!("{d} {f}\n"));
        }
    }
    sb.write("other/file.txt", "outside the session\n");
    age_files(&sb);
    sb.git(&["add", "-A"]);
    sb.git(&["commit", "-q", "-m", "files"]);
    sb.git(&["update-index", "-q", "--refresh"]);
    let round = std::cell::Cell::new(0);
    let update = |dir: &str| {
        round.set(round.get() + 1);
        let next = format!("look again ({})", round.get());
        let trace = traced(&sb, dir, &["update", "--next", &next]);
        let session: serde_json::Value = serde_json::from_slice(
            &std::fs::read(sb.path(&format!("{dir}/.pas-agent/session.json"))).unwrap(),
        )
        .unwrap();
        (session["git"]["dirty"].as_bool().unwrap(), trace)
    };
    // A session in `sub/` (as one made there by an older build, or moved there): its own
    // files are its part of the tree.
    traced(&sb, ".", &["init", "--task", "t"]);
    std::fs::rename(sb.path(".pas-agent"), sb.path("sub/.pas-agent")).unwrap();
    sb.git(&["add", "-A"]);
    sb.git(&["commit", "-q", "-m", "session"]);
    age_files(&sb);
    sb.git(&["update-index", "-q", "--refresh"]);
    let (dirty, trace) = update("sub");
    assert!(!dirty, "a clean tree is dirty: {trace}");
    assert!(trace.contains("status: fast"), "{trace}");
    sb.write("other/file.txt", "changed, outside the session\n");
    sb.write("other/new.txt", "untracked, outside the session\n");
    let (dirty, trace) = update("sub");
    assert!(
        !dirty,
        "a change outside the session made it dirty: {trace}"
    );
    sb.write("sub/m11/f99.txt", "the last entry, changed\n");
    let (dirty, trace) = update("sub");
    assert!(dirty, "a change to the last entry was missed: {trace}");
    assert!(trace.contains("status: fast"), "{trace}");
    sb.git(&["checkout", "--", "sub/m11/f99.txt"]);
    sb.write("sub/m05/new.txt", "untracked\n");
    let (dirty, trace) = update("sub");
    assert!(dirty, "an untracked file was missed: {trace}");
}

/// Entries git says not to look at (skip-worktree, assume-unchanged) are not compared, but
/// their directories are still read for untracked names, also where such an entry is the
/// directory's first or only one. And a `.gitignore` that a sparse checkout keeps out of the
/// work tree still counts, read from the index as git reads it: the fast pass gives gix's
/// exclude stack the index whenever an entry is skip-worktree, an empty one only when none is.
#[test]
fn a_skip_worktree_gitignore_is_read_from_the_index() {
    let sb = Sandbox::repo();
    sb.write("sub/.gitignore", "*.log\n");
    sb.write("sub/keep.txt", "k\n");
    sb.write("other/a.txt", "a\n");
    sb.write("other/b.txt", "b\n");
    sb.write("only/one.txt", "1\n");
    sb.git(&["add", "-A"]);
    sb.git(&["commit", "-q", "-m", "sub"]);
    sb.ok(&["init", "--task", "t"]);
    sb.ok(&["checkpoint", "base"]);
    age_files(&sb);
    sb.git(&["update-index", "-q", "--refresh"]);
    sb.git(&["update-index", "--skip-worktree", "sub/.gitignore"]);
    sb.git(&["update-index", "--assume-unchanged", "other/a.txt"]);
    sb.git(&["update-index", "--skip-worktree", "only/one.txt"]);
    // `write-tree` puts the cache-tree back, so that the fast pass applies.
    sb.git(&["write-tree"]);
    std::fs::remove_file(sb.path("sub/.gitignore")).unwrap();
    sb.write("sub/noise.log", "x\n");
    sb.write("sub/new.txt", "n\n");
    sb.write("other/u.txt", "u\n");
    sb.write("only/u.txt", "u\n");
    let v = status_three_ways(&sb, "a skip-worktree .gitignore");
    let c = stale_changed(&v);
    for new in ["sub/new.txt", "other/u.txt", "only/u.txt"] {
        assert!(c.contains(&format!("{new}:Untracked")), "{new}: {c:?}");
    }
    assert!(!c.iter().any(|p| p.contains("noise.log")), "{c:?}");
    let trace = traced(&sb, "", &["status"]);
    assert!(trace.contains("status: fast"), "{trace}");
}

/// What the directory cache did in each status of one command (`PAS_AGENT_STATUS_TRACE=1`):
/// (directories read, directories answered from the cache).
fn cache_use(trace: &str) -> Vec<(usize, usize)> {
    trace
        .lines()
        .filter_map(|l| l.strip_prefix("pas-agent: status: directories: "))
        .map(|rest| {
            let (read, kept) = rest.split_once(" read, ").expect("trace shape");
            let kept = kept.strip_suffix(" from the cache").expect("trace shape");
            (read.parse().unwrap(), kept.parse().unwrap())
        })
        .collect()
}

/// The directory cache (`src/git/dircache.rs`): `status --json` with it is byte for byte the
/// full computation's and git's, whether the cache is missing, warm, stale (a name added,
/// removed or renamed in a nested directory; a directory whose modification time is put back
/// to the recorded one; a name that became tracked while its directory did not change),
/// damaged, or written by another version; with git's own untracked cache on. And a warm
/// status reads no directory at all.
#[test]
fn status_directory_cache_matches_the_full_computation() {
    let (sb, runtime) = crate::common::session_with_runtime();
    sb.git(&["config", "core.untrackedCache", "true"]);
    sb.write(".gitignore", "*.log\n");
    for dir in ["a/b/c", "a/b/d", "e/f", "g"] {
        sb.write(&format!("{dir}/tracked.txt"), "t\n");
    }
    sb.git(&["add", "-A", ":!.pas-agent"]);
    sb.git(&["commit", "-q", "-m", "tree"]);
    for file in [
        "a/b/c/new.txt",
        "a/b/d/later.txt",
        "a/b/d/kept.txt",
        "e/f/u/v/w/deep.txt",
        "e/f/u/v/gone.txt",
        "e/f/u/v/name.txt",
        "g/only.log",
        "g/ignored-only/x.log",
        "top.txt",
    ] {
        sb.write(file, "u\n");
    }
    age_files(&sb);
    sb.git(&["update-index", "-q", "--refresh"]);
    sb.git(&["status", "--porcelain"]); // git's untracked cache, written into the index
    // A checkpoint, so that `status` lists every change (without one it only asks "dirty?").
    sb.ok(&["checkpoint", "base"]);
    // Rows are recorded only for directories whose times are two whole seconds old.
    std::thread::sleep(std::time::Duration::from_millis(3100));
    let compare = |state: &str| -> Vec<(usize, usize)> {
        let run = |env: &[(&str, &str)]| {
            let mut cmd = sb.cmd();
            cmd.args(["status", "--json"])
                .env("PAS_AGENT_STATUS_TRACE", "1");
            for (k, v) in env {
                cmd.env(k, v);
            }
            let out = cmd.output().expect("run pas-agent");
            assert!(out.status.success(), "{state}: {out:?}");
            (
                out.stdout,
                String::from_utf8_lossy(&out.stderr).into_owned(),
            )
        };
        let (cached, trace) = run(&[]);
        let (full, _) = run(&[("PAS_AGENT_FULL_STATUS", "1")]);
        let (cli, _) = run(&[("PAS_AGENT_GIT", "cli")]);
        assert!(trace.contains("status: fast"), "{state}: {trace}");
        assert_eq!(
            String::from_utf8_lossy(&cached),
            String::from_utf8_lossy(&full),
            "{state}: with the directory cache differs from the full computation"
        );
        assert_eq!(
            String::from_utf8_lossy(&cached),
            String::from_utf8_lossy(&cli),
            "{state}: differs from git's"
        );
        let used = cache_use(&trace);
        assert!(!used.is_empty(), "{state}: {trace}");
        used
    };
    let file = || {
        let dir = runtime.join("pas-agent/directories");
        let files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(files.len(), 1, "{files:?}");
        files[0].clone()
    };

    // Missing: every directory read, then recorded.
    let cold = compare("no cache");
    assert!(cold.iter().all(|&(_, kept)| kept == 0), "{cold:?}");
    let (read, _) = cold[cold.len() - 1];
    assert!(read >= 12, "{cold:?}");
    // Warm: no directory read (`.pas-agent/` is written by each command, and ignored below).
    let warm = compare("warm");
    let (read_warm, kept) = warm[warm.len() - 1];
    assert!(
        read_warm <= 1 && kept + read_warm == read,
        "{warm:?} after {cold:?}"
    );

    // Stale, one directory at a time.
    sb.write("a/b/c/added.txt", "n\n");
    compare("a file added in a nested directory");
    std::fs::remove_file(sb.path("e/f/u/v/w/deep.txt")).unwrap();
    compare("the only file of a nested untracked directory removed");
    // Renamed, then the directory's modification time put back to the recorded one: its change
    // time still moves.
    let v = sb.path("e/f/u/v");
    let mtime = std::fs::metadata(&v).unwrap().modified().unwrap();
    std::fs::rename(v.join("name.txt"), v.join("renamed.txt")).unwrap();
    std::fs::File::open(&v)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    assert_eq!(std::fs::metadata(&v).unwrap().modified().unwrap(), mtime);
    compare("a file renamed, its directory's mtime unchanged");
    // A name that became tracked: its directory did not change, the index did.
    sb.git(&["add", "a/b/d/later.txt"]);
    sb.git(&["commit", "-q", "-m", "later"]);
    sb.git(&["update-index", "-q", "--refresh"]);
    compare("an untracked file committed");
    sb.git(&["rm", "-q", "--cached", "g/tracked.txt"]);
    sb.git(&["commit", "-q", "-m", "untrack"]);
    compare("a tracked file removed from the index only");

    // Damaged: garbage, a torn file; from another version: none of it is used.
    let good = std::fs::read(file()).unwrap();
    for (state, bytes) in [
        ("garbage", b"\x00\xffnot a cache at all".repeat(50)),
        ("torn", good[..good.len() / 2].to_vec()),
        ("another version", {
            let version = env!("CARGO_PKG_VERSION").as_bytes();
            let at = good
                .windows(version.len())
                .position(|w| w == version)
                .expect("the version in the cache");
            let mut other = good.clone();
            other[at] = if other[at] == b'9' { b'8' } else { b'9' };
            other
        }),
    ] {
        std::fs::write(file(), &bytes).unwrap();
        let used = compare(state);
        assert!(used.iter().all(|&(_, kept)| kept == 0), "{state}: {used:?}");
    }
}

/// The syscalls of `pas-agent run <args> -- <program>` and its children, as strace wrote them,
/// split where `program` is executed: (before, after).
fn traced_run(sb: &Sandbox, args: &[&str], program: &std::path::Path) -> (String, String) {
    let trace = sb.tmp.path().join("run-strace.txt");
    let mut cmd = crate::launcher_support::isolated(sb, "strace");
    cmd.args(["-f", "-qq", "-s", "256", "-o"])
        .arg(&trace)
        .arg(crate::common::bin())
        .arg("run")
        .args(args)
        .args(["--no-pty", "--"])
        .arg(program);
    let out = cmd.output().expect("strace is needed for this test");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&trace).unwrap();
    let exec = format!("execve(\"{}\"", program.display());
    let at = text
        .find(&exec)
        .unwrap_or_else(|| panic!("the program's execve is not in the trace:\n{text}"));
    (text[..at].to_string(), text[at..].to_string())
}

/// `run --no-checkpoint --no-export` does not scan the work tree before its program starts
/// (it reads HEAD only); it scans once after. The full `run` scans before (for the checkpoint
/// and the baseline), which shows the trace would see a scan. Seen as the syscalls that name
/// the work tree's files (their names are distinctive) before and after the program's `execve`.
#[test]
fn a_bare_run_reads_no_file_of_the_work_tree_before_its_program_starts() {
    let Ok(probe) = Command::new("strace").arg("-V").output() else {
        panic!("strace is needed for this test (apt-get install strace; .ci/run installs it)");
    };
    assert!(probe.status.success());
    let sb = Sandbox::with_session();
    for d in ["a", "b"] {
        for i in 0..5 {
            sb.write(&format!("tree/{d}/scanme-{i}.txt"), format!("{d} {i}\n"));
        }
    }
    sb.git(&["add", "tree"]);
    sb.git(&["commit", "-q", "-m", "tree"]);
    sb.write("tree/a/scanme-0.txt", "dirty\n");
    sb.write("tree/b/scanme-untracked.txt", "new\n");
    let program = sb.stand_in("program-under-trace", "echo made > tree/a/made.txt");
    // A first run of each kind makes the launcher's own files (registry, caches).
    for args in [&["--no-checkpoint", "--no-export"][..], &[]] {
        let mut all = args.to_vec();
        all.extend(["--no-pty", "--", "true"]);
        sb.ok(&[&["run"][..], &all].concat());
    }

    let (before, after) = traced_run(&sb, &["--no-checkpoint", "--no-export"], &program);
    let named: Vec<&str> = before.lines().filter(|l| l.contains("scanme")).collect();
    assert!(
        named.is_empty(),
        "the bare run read the work tree before its program started:\n{}",
        named.join("\n")
    );
    assert!(
        after.contains("scanme"),
        "the bare run scans the work tree after its program:\n{after}"
    );
    let run = crate::common::last_run(&sb);
    assert_eq!(
        crate::common::changed_paths(&run),
        vec!["tree/a/made.txt"],
        "{run:#}"
    );

    let (before, after) = traced_run(&sb, &[], &program);
    assert!(
        before.contains("scanme") && after.contains("scanme"),
        "the full run scans before and after its program"
    );
    let run = crate::common::last_run(&sb);
    assert!(crate::common::changed_paths(&run).is_empty(), "{run:#}");
}
