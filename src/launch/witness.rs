//! Which files of an agent's session store the agent's own processes hold open while it runs:
//! the strongest evidence of which session is this run's, when two runs of one agent share a
//! work tree and their sessions start at nearly the same time (Codex keeps its rollout file
//! open for the whole session; checked with codex-cli 0.171.0).
//!
//! A background thread looks, every [`INTERVAL`], at the open files (`/proc/<pid>/fd`) of every
//! process descended from the launcher, and keeps those under the store's directory. Linux
//! only; elsewhere nothing is seen and the session is matched by time alone.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often the agent's open files are looked at.
pub const INTERVAL: Duration = Duration::from_millis(300);

/// A running witness; [`Witness::finish`] stops it and says what it saw.
#[derive(Debug)]
pub struct Witness {
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<BTreeSet<PathBuf>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Witness {
    /// Starts watching for open files under `store` (absolute). `None` on systems without
    /// `/proc`, or when the thread cannot start.
    pub fn start(store: PathBuf) -> Option<Witness> {
        if !cfg!(target_os = "linux") || !Path::new("/proc/self/fd").is_dir() {
            return None;
        }
        let store = store.canonicalize().unwrap_or(store);
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(BTreeSet::new()));
        let (stop2, seen2) = (Arc::clone(&stop), Arc::clone(&seen));
        let thread = std::thread::Builder::new()
            .name("pas-agent-witness".into())
            .spawn(move || {
                let me = std::process::id();
                while !stop2.load(Ordering::Relaxed) {
                    let found = open_under(me, &store);
                    if let Ok(mut s) = seen2.lock() {
                        s.extend(found);
                    }
                    std::thread::sleep(INTERVAL);
                }
            })
            .ok()?;
        Some(Witness {
            stop,
            seen,
            thread: Some(thread),
        })
    }

    /// Stops watching (after one last look) and returns every store file seen open.
    pub fn finish(mut self) -> Vec<PathBuf> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.seen
            .lock()
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }
}

/// The files under `store` that descendants of process `root` hold open now (canonical paths,
/// as `/proc` shows them).
pub fn open_under(root: u32, store: &Path) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    for pid in super::process::descendants(root) {
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            if let Ok(target) = std::fs::read_link(fd.path())
                && target.starts_with(store)
            {
                out.insert(target);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn a_child_holding_a_store_file_is_seen() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("rollout-x.jsonl");
        std::fs::write(&file, "{}\n").unwrap();
        let w = Witness::start(dir.path().to_path_buf()).unwrap();
        let mut child = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("exec 3<'{}'; sleep 1", file.display()))
            .spawn()
            .unwrap();
        child.wait().unwrap();
        let seen = w.finish();
        assert_eq!(seen, vec![file.canonicalize().unwrap()]);
    }
}
