//! Where the session reaches an agent at startup: the one rule every export, `run` and the
//! start hook follow (docs/commands.md, "Where the block goes").
//!
//! 1. **What the agent reads**: its own file (its context file, or the first of the files it
//!    reads instead that exists), the files that one imports (`@AGENTS.md`, for agents that
//!    follow imports), and the files it reads as well ([`Agent::also_reads`]) with theirs.
//! 2. **Where the block goes**, the first that applies:
//!    1. a file the agent reads that already holds a pas-agent block (its own file first),
//!       so a block is kept where it is: `AGENTS.md` behind `CLAUDE.md`'s `@AGENTS.md`,
//!       `AGENTS.md` for Qwen Code, `CLAUDE.local.md`;
//!    2. when its own file imports another agent's context file (`CLAUDE.md` holding
//!       `@AGENTS.md`), that file: one block, read through the import;
//!    3. for `run`, when that file is tracked by git: the agent's private way in
//!       ([`Private`]), so that `git status` stays as it was; an agent without one gets the
//!       session from its start hook when installed, else not at all, and `run` says so;
//!    4. its own file.
//! 3. **Other blocks the agent reads** ([`settle`]): a block every one of whose readers also
//!    reads another block is taken out; any other is some agent's only block, so it is
//!    brought up to date, and the agent that reads both is warned that it receives the
//!    session twice.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{MAX_CONTEXT_FILE_BYTES, canonical, imports, located};
use crate::agents::{self, Agent, Private};
use crate::block;
use crate::fsutil;
use crate::git::Repo;

/// A file an agent reads at startup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Read {
    /// The file, its directory canonical (the file itself need not exist: an agent's own file
    /// is listed even when missing; a link is not followed, so a write goes through the guard
    /// that decides where links may lead).
    pub path: PathBuf,
    /// The same file with every link followed: two reads of one file (`CLAUDE.md` a link to
    /// `AGENTS.md`) have the same `real`.
    pub real: PathBuf,
    /// How the agent comes to read it.
    pub how: How,
}

/// How an agent comes to read a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum How {
    /// Its own file: its context file, or the first of [`Agent::reads_first`] that exists.
    Own,
    /// A file it reads as well ([`Agent::also_reads`]).
    Also,
    /// Through an `@` import in `by`.
    Imported {
        /// The importing file.
        by: PathBuf,
    },
}

/// The first line of the copy of a context file that `run` writes for an agent that reads a
/// file instead of its tracked context file ([`Private::Shadows`]): it names the copy as
/// pas-agent's, so that one a killed run left behind is recognised, made again from the
/// context file as it is now, and deleted.
pub const SHADOW_HEAD: &str = "<!-- pas-agent: a copy of the context file with the session, for one run; git ignores it and the run deletes it -->";

/// Whether `bytes` are a copy `run` wrote ([`SHADOW_HEAD`]).
pub fn is_shadow(bytes: &[u8]) -> bool {
    bytes.starts_with(SHADOW_HEAD.as_bytes())
}

/// The files matching one entry of [`Agent::also_reads`] under `root`: the file itself, or for
/// an entry whose last part holds one `*` (`.qwen/rules/*.md`), the files in that directory
/// whose names match, sorted.
fn expand(root: &Path, entry: &str) -> Vec<PathBuf> {
    let path = root.join(entry);
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return Vec::new();
    };
    let Some((pre, post)) = name.split_once('*') else {
        return vec![path];
    };
    let (pre, post) = (pre.to_string(), post.to_string());
    let Some(dir) = path.parent() else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            e.file_name().to_str().is_some_and(|n| {
                n.len() >= pre.len() + post.len() && n.starts_with(&pre) && n.ends_with(&post)
            })
        })
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

fn is_file(p: &Path) -> bool {
    p.metadata().is_ok_and(|m| m.is_file())
}

/// The agent's own file under `root` where a block goes: the first of [`Agent::reads_first`]
/// that exists as a file and is not a copy `run` made ([`is_shadow`]), else its context file.
pub fn own_file(agent: &Agent, root: &Path) -> PathBuf {
    own(agent, root, false)
}

/// The first of [`Agent::reads_first`] that exists as a file (skipping `run`'s copies unless
/// `shadows`), else the context file.
fn own(agent: &Agent, root: &Path, shadows: bool) -> PathBuf {
    agent
        .reads_first
        .iter()
        .map(|f| root.join(f))
        .find(|p| is_file(p) && (shadows || !read(p).is_some_and(|b| is_shadow(&b))))
        .unwrap_or_else(|| root.join(agent.context_file))
}

/// Every file `agent` reads at startup under `root`, in the order it reads them: its own file
/// (listed even when it does not exist; a copy `run` made counts, as the agent reads it), the
/// files it imports, then the files it reads as well that exist, each followed by its imports.
/// A file is listed once.
pub fn reads(agent: &Agent, root: &Path) -> Vec<Read> {
    reads_of(agent, root, true)
}

/// [`reads`], with a copy `run` made counted only when `shadows` (without them: what the
/// agent reads once the copy is gone).
pub fn reads_of(agent: &Agent, root: &Path, shadows: bool) -> Vec<Read> {
    let mut out: Vec<Read> = Vec::new();
    let push = |path: PathBuf, how: How, out: &mut Vec<Read>| {
        let real = canonical(&path);
        if out.iter().any(|r| r.real == real) {
            return false;
        }
        out.push(Read {
            path: located(&path),
            real,
            how,
        });
        true
    };
    let own = own(agent, root, shadows);
    let also = agent
        .also_reads
        .iter()
        .flat_map(|e| expand(root, e))
        .filter(|p| is_file(p));
    for (file, how) in std::iter::once((own, How::Own)).chain(also.map(|p| (p, How::Also))) {
        if !push(file.clone(), how, &mut out) {
            continue;
        }
        if agent.at_imports {
            let by = located(&file);
            for imported in imports::imported_files(&file, root, None) {
                push(imported, How::Imported { by: by.clone() }, &mut out);
            }
        }
    }
    out
}

/// The bytes of a context file, `None` when it is missing, too large or unreadable.
fn read(path: &Path) -> Option<Vec<u8>> {
    fsutil::read_limited(path, MAX_CONTEXT_FILE_BYTES)
        .ok()
        .flatten()
}

/// Whether the file holds exactly one pas-agent block.
pub fn holds_block(path: &Path) -> bool {
    read(path).is_some_and(|b| block::has_block(&b))
}

/// Why the block goes where it goes for an agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Why {
    /// The agent's own file, or a file named with `-o`.
    Own,
    /// A file the agent reads that already holds the block.
    Holds(How),
    /// The agent's own file (`by`) imports this context file: one block, read through it.
    Bridge {
        /// The importing file.
        by: PathBuf,
    },
    /// The agent's own file, `tracked`, is tracked by git and holds no block: this file is
    /// the agent's private way in, which git ignores ([`Private`]).
    Private {
        /// The tracked file left as it was.
        tracked: PathBuf,
        /// The way in.
        how: Private,
    },
}

/// Where the block goes for `agent` under `root`, as `export` chooses (steps 2.1, 2.2 and
/// 2.4 of the rule): the file and why.
pub fn choose(agent: &Agent, root: &Path) -> (PathBuf, Why) {
    // A copy a killed run left is not where a block goes: `run` makes it again, `export`
    // deletes it ([`leftover_copy`]).
    let reads = reads_of(agent, root, false);
    if let Some(r) = reads.iter().find(|r| holds_block(&r.path)) {
        let why = match &r.how {
            How::Own => Why::Own,
            how => Why::Holds(how.clone()),
        };
        return (r.path.clone(), why);
    }
    let own = &reads[0].path;
    if agent.at_imports {
        let context_files: Vec<PathBuf> = agents::AGENTS
            .iter()
            .map(|a| canonical(&root.join(a.context_file)))
            .collect();
        if let Some(r) = reads.iter().find(|r| {
            matches!(&r.how, How::Imported { by } if by == own) && context_files.contains(&r.real)
        }) {
            return (r.path.clone(), Why::Bridge { by: own.clone() });
        }
    }
    (own.clone(), Why::Own)
}

/// How `run` gives an agent the session.
#[derive(Debug, Clone)]
pub struct RunDelivery {
    /// The file the block goes to and why; `None` when no file can take it (the agent's own
    /// file is tracked and it has no private way in).
    pub file: Option<(PathBuf, Why)>,
    /// Arguments for the agent's command line, before the user's ([`Agent::context_args`]
    /// with `{context}` as the file's path).
    pub args: Vec<std::ffi::OsString>,
    /// Environment for the agent ([`Private::ConfigEnv`]).
    pub env: Vec<(&'static str, String)>,
    /// Files to delete when the run ends (a copy of the context file, the run's own file).
    pub cleanup: Vec<PathBuf>,
    /// The run's own file, when the block goes there.
    pub run_file: Option<PathBuf>,
    /// The tracked file the session was kept out of, when it was.
    pub tracked: Option<PathBuf>,
}

/// Where `run` puts the session for `agent` (the whole rule, step 2.3 included): `repo` tells
/// which files git tracks; `run_file` is a file of the run's own, ignored by git (for agents
/// that take the file's path: [`Agent::context_args`], [`Private::ConfigEnv`]).
pub fn for_run(agent: &Agent, root: &Path, repo: Option<&Repo>, run_file: &Path) -> RunDelivery {
    let (file, why) = choose(agent, root);
    let mut out = RunDelivery {
        file: None,
        args: Vec::new(),
        env: Vec::new(),
        cleanup: Vec::new(),
        run_file: None,
        tracked: None,
    };
    // A block already in a tracked file was put there on purpose (a team that commits it):
    // it is kept current there. Only a new block is kept out of a tracked file.
    let tracked = !holds_block(&file) && repo.is_some_and(|r| r.tracked(&file).unwrap_or(false));
    let file = if !tracked {
        Some((file, why))
    } else {
        out.tracked = Some(file.clone());
        let private = |how| Why::Private {
            tracked: file.clone(),
            how,
        };
        match agent.private {
            _ if !agent.context_args.is_empty() => {
                Some((run_file.to_path_buf(), private(Private::None)))
            }
            Private::AlsoReads(name) => Some((located(&root.join(name)), private(agent.private)))
                .filter(|(p, _)| !repo.is_some_and(|r| r.tracked(p).unwrap_or(true))),
            // Only a file that is not there, or is a copy a killed run left: never the
            // user's own (a tracked `AGENTS.override.md` is the tracked file itself).
            Private::Shadows(name) => {
                let shadow = located(&root.join(name));
                let free = !shadow.exists() || read(&shadow).is_some_and(|b| is_shadow(&b));
                free.then(|| {
                    out.cleanup.push(shadow.clone());
                    (shadow, private(agent.private))
                })
            }
            Private::ConfigEnv { var, key } => {
                out.env.push((var, config_env(var, key, run_file)));
                Some((run_file.to_path_buf(), private(agent.private)))
            }
            Private::None => None,
        }
    };
    if let Some((path, _)) = &file {
        if path == run_file {
            out.cleanup.push(run_file.to_path_buf());
            out.run_file = Some(run_file.to_path_buf());
        }
        out.args = agent
            .context_args
            .iter()
            .map(|a| a.replace("{context}", &path.to_string_lossy()).into())
            .collect();
    }
    out.file = file;
    out
}

/// A copy `run` made of `agent`'s context file ([`Private::Shadows`]) that is still there
/// when no run is writing it (a run that was killed): the agent reads it instead of its
/// context file, so an explicit export deletes it.
pub fn leftover_copy(agent: &Agent, root: &Path) -> Option<PathBuf> {
    let Private::Shadows(name) = agent.private else {
        return None;
    };
    let path = located(&root.join(name));
    read(&path).is_some_and(|b| is_shadow(&b)).then_some(path)
}

/// Deletes what `run` made for one run only ([`RunDelivery::cleanup`]): the run's own file,
/// and a copy of a context file, which is deleted only while it is still the copy pas-agent
/// wrote ([`is_shadow`]). Never follows a link; what cannot be deleted stays (it is ignored by
/// git, and the next run makes it again).
pub fn clean_up(d: &RunDelivery) {
    for path in &d.cleanup {
        let Ok(meta) = std::fs::symlink_metadata(path) else {
            continue;
        };
        // The run's own file is the run's; a copy only while it is still the one written.
        let ours = Some(path) == d.run_file.as_ref() || read(path).is_some_and(|b| is_shadow(&b));
        if meta.is_file() && ours {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// The value of `var` for a run: the JSON object already in it (when it holds one) with the
/// run's file added to its array `key`, else an object holding only that.
fn config_env(var: &str, key: &str, file: &Path) -> String {
    let mut config = std::env::var(var)
        .ok()
        .and_then(|v| serde_json::from_str::<serde_json::Value>(&v).ok())
        .filter(serde_json::Value::is_object)
        .unwrap_or_else(|| serde_json::json!({}));
    let path = serde_json::Value::from(file.to_string_lossy().into_owned());
    match config
        .get_mut(key)
        .and_then(serde_json::Value::as_array_mut)
    {
        Some(list) => list.push(path),
        None => config[key] = serde_json::Value::Array(vec![path]),
    }
    config.to_string()
}

/// The pas-agent blocks in the files `agent` reads under `root`, weighed against `session`
/// (its live git sections aside, as `export --check` compares). Reads files only: no git, no
/// lock.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Held {
    /// Whether some file holds a block that is current.
    pub current: bool,
    /// The files holding a block that is out of date, in the order the agent reads them.
    pub stale: Vec<PathBuf>,
}

/// What the files `agent` reads under `root` hold ([`Held`]).
pub fn held(agent: &Agent, root: &Path, session: &crate::session::Session) -> Held {
    let expected: Vec<String> = super::render::renderings_within(session, agent.read_limit)
        .iter()
        .map(|r| super::session_part(r))
        .collect();
    let mut out = Held::default();
    for r in reads(agent, root) {
        let Some(bytes) = read(&r.path) else {
            continue;
        };
        let text = bytes
            .strip_prefix(b"\xEF\xBB\xBF".as_slice())
            .unwrap_or(&bytes);
        if let block::Scan::Block { start, end } = block::scan(text) {
            let found = super::session_part(&String::from_utf8_lossy(&text[start..end]));
            if expected.contains(&found) {
                out.current = true;
            } else {
                out.stale.push(r.path);
            }
        }
    }
    out
}

/// The other files in the directory of `path` whose names differ from its name in ASCII case
/// only (`agents.md` or `Agents.md` beside `AGENTS.md`, `Claude.md`): two such names are one
/// file on macOS and Windows, so a checkout holding both breaks there, and an agent that
/// looks for one name does not read the other on Linux. The file itself (under another
/// spelling, on a file system that ignores case) is not counted. For `export` and `doctor`.
pub fn case_variants(path: &Path) -> Vec<PathBuf> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) else {
        return Vec::new();
    };
    let same = |other: &Path| -> bool {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            match (path.metadata(), other.metadata()) {
                (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
                _ => false,
            }
        }
        #[cfg(not(unix))]
        {
            path.canonicalize().ok() == other.canonicalize().ok() && path.exists()
        }
    };
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n != name && n.eq_ignore_ascii_case(name))
        })
        .map(|e| e.path())
        .filter(|p| !same(p))
        .collect();
    out.sort();
    out
}

/// Every agent whose files under `root` include `real` (a path with every link followed): the
/// agents [`settle`] weighs a block against.
fn readers(root: &Path, real: &Path, cache: &mut Reads) -> Vec<&'static Agent> {
    agents::AGENTS
        .iter()
        .copied()
        .filter(|a| cache.of(a, root).iter().any(|r| r.real == real))
        .collect()
}

/// What each agent reads, worked out once per [`settle`] (files change only where settle
/// takes a block out, which changes no agent's list of files).
#[derive(Default)]
struct Reads(BTreeMap<&'static str, Vec<Read>>);

impl Reads {
    fn of(&mut self, agent: &'static Agent, root: &Path) -> &[Read] {
        self.0.entry(agent.id).or_insert_with(|| reads(agent, root))
    }
}

/// What to do with another block an agent reads beside the one it gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Other {
    /// Every agent that reads it reads another block as well: take it out.
    Remove,
    /// A copy of the context file a killed run left ([`leftover_copy`]): deleted.
    Leftover,
    /// It is the only block of the agents named: keep it, and current.
    Refresh(Vec<&'static str>),
}

/// Step 3 of the rule for `agent`, whose block is in `chosen` (already written): the other
/// files holding a block that it, or any agent that reads `chosen`, reads as well, each with
/// what to do. A file is weighed as if the ones before it in the list had been handled.
pub fn settle(agent: &'static Agent, root: &Path, chosen: &Path) -> Vec<(PathBuf, Other)> {
    let chosen = canonical(chosen);
    let mut cache = Reads::default();
    let mut removed: Vec<PathBuf> = Vec::new();
    let mut concerned = vec![agent];
    for a in readers(root, &chosen, &mut cache) {
        if !concerned.iter().any(|c| c.id == a.id) {
            concerned.push(a);
        }
    }
    let mut others: Vec<Read> = Vec::new();
    for a in &concerned {
        for r in cache.of(a, root) {
            if r.real != chosen && !others.iter().any(|o| o.real == r.real) && holds_block(&r.path)
            {
                others.push(r.clone());
            }
        }
    }
    let mut out = Vec::new();
    for file in others {
        let mut alone = Vec::new();
        for reader in readers(root, &file.real, &mut cache) {
            let elsewhere = cache.of(reader, root).iter().any(|r| {
                r.real != file.real
                    && !removed.contains(&r.real)
                    && (r.real == chosen || holds_block(&r.path))
            });
            if !elsewhere {
                alone.push(reader.name);
            }
        }
        if alone.is_empty() {
            removed.push(file.real.clone());
            out.push((file.path, Other::Remove));
        } else {
            out.push((file.path, Other::Refresh(alone)));
        }
    }
    out
}

/// The agents among `agent` and those that read `chosen` that read more than one file holding
/// a block under `root` (as the files are now; one file read under two names counts once),
/// each with those files: they receive the session more than once.
pub fn read_twice(
    agent: &'static Agent,
    root: &Path,
    chosen: &Path,
) -> Vec<(&'static str, Vec<PathBuf>)> {
    let chosen = canonical(chosen);
    let mut cache = Reads::default();
    let mut concerned = vec![agent];
    for a in readers(root, &chosen, &mut cache) {
        if !concerned.iter().any(|c| c.id == a.id) {
            concerned.push(a);
        }
    }
    concerned
        .into_iter()
        .filter_map(|a| {
            let files: Vec<PathBuf> = cache
                .of(a, root)
                .iter()
                .filter(|r| holds_block(&r.path))
                .map(|r| r.path.clone())
                .collect();
            (files.len() > 1).then_some((a.name, files))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(name: &str) -> &'static Agent {
        agents::export_agent(name).unwrap()
    }

    #[test]
    fn the_block_goes_to_a_file_that_holds_one_then_through_a_bridge_then_home() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let block = block::make_block("x", "\n");
        // Nothing there: the agent's own file.
        assert_eq!(
            choose(agent("claude"), &root),
            (root.join("CLAUDE.md"), Why::Own)
        );
        // CLAUDE.md imports AGENTS.md: the block goes there.
        std::fs::write(root.join("CLAUDE.md"), "@AGENTS.md\n").unwrap();
        std::fs::write(root.join("AGENTS.md"), "# Rules\n").unwrap();
        assert_eq!(
            choose(agent("claude"), &root),
            (
                root.join("AGENTS.md"),
                Why::Bridge {
                    by: root.join("CLAUDE.md")
                }
            )
        );
        // A block in a file the agent reads as well wins.
        std::fs::write(root.join("CLAUDE.local.md"), &block).unwrap();
        assert_eq!(
            choose(agent("claude"), &root),
            (root.join("CLAUDE.local.md"), Why::Holds(How::Also))
        );
        // OpenCode reads CLAUDE.md when there is no AGENTS.md.
        std::fs::remove_file(root.join("AGENTS.md")).unwrap();
        assert_eq!(choose(agent("opencode"), &root).0, root.join("CLAUDE.md"));
        // A copy a killed run left is not Codex's own file.
        std::fs::write(
            root.join("AGENTS.override.md"),
            format!("{SHADOW_HEAD}\n{block}"),
        )
        .unwrap();
        assert_eq!(choose(agent("codex"), &root).0, root.join("AGENTS.md"));
        std::fs::write(root.join("AGENTS.override.md"), "mine\n").unwrap();
        assert_eq!(
            choose(agent("codex"), &root).0,
            root.join("AGENTS.override.md")
        );
    }

    #[test]
    fn a_block_everyone_also_reads_elsewhere_goes_and_an_only_block_stays() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let block = block::make_block("x", "\n");
        for f in ["CLAUDE.md", "AGENTS.md"] {
            std::fs::write(root.join(f), &block).unwrap();
        }
        // Claude Code reads only CLAUDE.md: its block stays for it.
        let copilot = agent("copilot");
        if copilot.also_reads.contains(&"CLAUDE.md") {
            let s = settle(copilot, &root, &root.join("AGENTS.md"));
            assert!(
                matches!(&s[..], [(p, Other::Refresh(who))] if p.ends_with("CLAUDE.md") && who.contains(&"Claude Code")),
                "{s:?}"
            );
        }
        // With CLAUDE.md importing AGENTS.md, Claude Code reads that one too: CLAUDE.md's
        // block goes.
        std::fs::write(root.join("CLAUDE.md"), format!("@AGENTS.md\n\n{block}")).unwrap();
        let s = settle(agent("claude"), &root, &root.join("AGENTS.md"));
        assert_eq!(s, [(root.join("CLAUDE.md"), Other::Remove)]);
    }

    #[test]
    fn case_variants_are_found_and_the_file_itself_is_not() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("agents.md"), "x").unwrap();
        let target = dir.path().join("AGENTS.md");
        let found = case_variants(&target);
        // On a file system that ignores case, agents.md *is* AGENTS.md.
        if !target.exists() {
            assert_eq!(found, [dir.path().join("agents.md")]);
            std::fs::write(&target, "y").unwrap();
            assert_eq!(case_variants(&target), [dir.path().join("agents.md")]);
        } else {
            assert!(found.is_empty());
        }
        assert!(case_variants(&dir.path().join("GEMINI.md")).is_empty());
    }

    #[test]
    fn the_run_file_joins_what_the_variable_already_holds() {
        let v = config_env(
            "PAS_AGENT_TEST_NEVER_SET",
            "instructions",
            Path::new("/r/c.md"),
        );
        assert_eq!(v, r#"{"instructions":["/r/c.md"]}"#);
    }
}
