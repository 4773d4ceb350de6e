//! `export`: render the session and splice it into an agent's context file (docs/commands.md, `export`).

pub mod delivery;
pub mod imports;
pub mod render;

use std::path::{Path, PathBuf};

use crate::agents::{Agent, Layout, Private, ReadLimit};
use crate::error::{Error, Result};
use crate::fsutil::{self, Links, Named, ReadError, WriteError, WriteGuard};
use crate::git::{Repo, WorkTree};
use crate::session::Project;
use crate::stale::{self, Stale};

use crate::block;
pub use crate::block::{Outcome, Place};
pub use delivery::{How, Other, RunDelivery, Why};

/// Context files larger than this are not read, and an export that would make one larger is
/// refused (16 MiB, [`crate::limits::CONTEXT_FILE`]).
pub const MAX_CONTEXT_FILE_BYTES: u64 = crate::limits::CONTEXT_FILE.bytes;

/// Where an export goes.
#[derive(Debug, Clone)]
pub struct Target {
    /// The agent it is for.
    pub agent: &'static Agent,
    /// The file to write (absolute).
    pub path: PathBuf,
    /// Whether this is where the delivery rule puts the agent's block (not a file named with
    /// `-o` elsewhere): the other blocks the agent reads are then settled too
    /// ([`delivery::settle`]).
    pub at_default: bool,
    /// The session root: the path must resolve inside it unless the user named it, and `@`
    /// imports between context files are followed inside it.
    pub root: PathBuf,
    /// Who named the path: [`Named::ByUser`] for `-o PATH`, which may lie outside the root as
    /// long as no link inside the root leads there.
    pub named: Named,
    /// How the file is written: a block among other text, or a file pas-agent owns.
    pub layout: Layout,
    /// Why the block goes to this file.
    pub why: Why,
    /// Whether `run` writes it: a block is then never taken out of a file git tracks.
    pub for_run: bool,
}

impl Target {
    /// The target for an agent of `export --to`: where the delivery rule puts its block
    /// ([`delivery::choose`]), or `output` resolved against `cwd` (as every command-line path
    /// is). The agent's own rules file is written in the agent's layout; any other file gets
    /// a block ([`Layout::Block`]), whatever the agent's layout.
    pub fn for_agent(
        project: &Project,
        agent: &'static Agent,
        output: Option<&Path>,
        cwd: &Path,
    ) -> Target {
        let (chosen, why) = delivery::choose(agent, &project.root);
        let (path, why, named) = match output {
            None => (chosen, why, Named::ByUs),
            Some(out) => {
                let path = cwd.join(out);
                let real = canonical(&path);
                let also = agent
                    .also_reads
                    .iter()
                    .any(|f| canonical(&project.root.join(f)) == real);
                let read = delivery::reads(agent, &project.root)
                    .into_iter()
                    .find(|r| r.real == real)
                    .map(|r| r.how)
                    .or_else(|| also.then_some(How::Also));
                match read {
                    _ if real == canonical(&chosen) => (path, why, Named::ByUser),
                    Some(how) if how != How::Own => (path, Why::Holds(how), Named::ByUser),
                    _ => (path, Why::Own, Named::ByUser),
                }
            }
        };
        Target::at(project, agent, path, why, named)
    }

    /// The target of `run` for `agent`, as `delivery` decided ([`delivery::for_run`]); `None`
    /// when no file takes the block.
    pub fn for_run(project: &Project, agent: &'static Agent, d: &RunDelivery) -> Option<Target> {
        let (path, why) = d.file.clone()?;
        let mut t = Target::at(project, agent, path, why, Named::ByUs);
        t.for_run = true;
        Some(t)
    }

    /// A target for the file `path` of `agent`: at the delivery rule's place unless `why` is
    /// [`Why::Own`] for a file other than the agent's own; in the agent's layout only when it
    /// is the agent's own context file.
    pub fn at(
        project: &Project,
        agent: &'static Agent,
        path: PathBuf,
        why: Why,
        named: Named,
    ) -> Target {
        let own = canonical(&path) == canonical(&delivery::own_file(agent, &project.root));
        let at_default = named == Named::ByUs || own || why != Why::Own;
        let layout = if canonical(&path) == canonical(&project.root.join(agent.context_file)) {
            agent.layout
        } else {
            Layout::Block
        };
        Target {
            agent,
            path,
            at_default,
            root: project.root.clone(),
            named,
            layout,
            why,
            for_run: false,
        }
    }

    /// The file as the session root sees it (`CLAUDE.md`, `.cursor/rules/pas-agent.mdc`), or
    /// the whole path when it lies outside.
    pub fn shown(&self) -> String {
        shown(&self.root, &self.path)
    }
}

/// `path` as the session root `root` sees it, or the whole path when it lies outside.
pub fn shown(root: &Path, path: &Path) -> String {
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let real = canonical(path);
    real.strip_prefix(&root)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// What an export did.
#[derive(Debug, Clone)]
pub struct Report {
    /// The file written and the agent it is for.
    pub target: Target,
    /// How the file changed: created, block updated or appended, or overwritten (`--force`).
    pub outcome: Outcome,
    /// Set when the work moved on since the latest checkpoint.
    pub stale: Option<Stale>,
    /// Where the file stands against the agent's read limit, for agents that have one.
    pub limit: Option<LimitReport>,
    /// The other blocks the agent reads ([`delivery::settle`]): each taken out or brought up
    /// to date, or the reason it could not be.
    pub others: Vec<(PathBuf, Other, std::result::Result<(), String>)>,
    /// Agents that still read more than one block, with the files ([`delivery::read_twice`]).
    pub twice: Vec<(&'static str, Vec<PathBuf>)>,
    /// Whether git tracks the file written.
    pub tracked: bool,
    /// Files beside it whose names differ from its name in case only
    /// ([`delivery::case_variants`]).
    pub case_variants: Vec<PathBuf>,
    /// A private file's line in the repository's `info/exclude`: added (true), there or
    /// ignored already (false), or why it could not be added.
    pub excluded: Option<std::result::Result<bool, String>>,
}

/// How a written file measures against the agent's [`ReadLimit`], in the limit's unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitReport {
    /// The agent's limit.
    pub limit: ReadLimit,
    /// The whole file's length.
    pub file: usize,
    /// Where the block ends (just past its end marker line).
    pub block_end: usize,
}

impl Report {
    /// Warnings about what the agent will not read or reads twice, naming the file as `shown`:
    /// other blocks it reads that are some other agent's only one (it receives the session
    /// more than once), blocks that could not be settled, the block (or part of it) past the
    /// agent's read limit or the rest of the file past it, a file whose name differs from the
    /// target's in case only, and a private file git could not be told to ignore.
    pub fn warnings(&self, shown: &str) -> Vec<String> {
        let name = |p: &Path| self::shown(&self.target.root, p);
        let agent = self.target.agent.name;
        let mut out = Vec::new();
        for (reader, files) in &self.twice {
            let needs: Vec<String> = self
                .others
                .iter()
                .filter_map(|(p, o, _)| match o {
                    Other::Refresh(who) if !who.is_empty() && files.contains(p) => Some(format!(
                        "the one in {} is the only one {} reads",
                        name(p),
                        who.join(" and ")
                    )),
                    _ => None,
                })
                .collect();
            let why = if needs.is_empty() {
                String::new()
            } else {
                format!("; none can go: {}", needs.join("; "))
            };
            out.push(format!(
                "{reader} reads pas-agent blocks in {}, so it receives the session {} times; all hold the same content{why}",
                files.iter().map(|f| name(f)).collect::<Vec<_>>().join(" and "),
                files.len()
            ));
        }
        for (file, _, result) in &self.others {
            if let Err(e) = result {
                out.push(format!(
                    "{} holds a pas-agent block that {agent} reads as well, and it could not be settled: {e}",
                    name(file)
                ));
            }
        }
        for v in &self.case_variants {
            out.push(format!(
                "{} is beside {shown}, and the two names differ in case only: on macOS and Windows they are one file, so a checkout with both breaks there; keep one (`git mv`)",
                name(v)
            ));
        }
        if let Some(Err(e)) = &self.excluded {
            out.push(format!(
                "git could not be told to ignore {shown} on this machine ({e}); it may show in `git status`"
            ));
        }
        out.extend(self.limit_warnings(shown));
        out
    }

    /// Every file the export wrote that is the project's own (git may see it), with whether
    /// it was created: the target (unless it is a private file git ignores), and the files
    /// whose blocks were settled.
    pub fn written(&self) -> Vec<(PathBuf, bool)> {
        let mut out = Vec::new();
        if !matches!(self.target.why, Why::Private { .. }) {
            out.push((self.target.path.clone(), self.outcome == Outcome::Created));
        }
        out.extend(
            self.others
                .iter()
                .filter(|(_, _, r)| r.is_ok())
                .map(|(p, _, _)| (p.clone(), false)),
        );
        out
    }

    fn limit_warnings(&self, shown: &str) -> Vec<String> {
        let Some(l) = self.limit else {
            return Vec::new();
        };
        let agent = self.target.agent.name;
        let amount = l.limit.describe(l.limit.amount);
        if l.block_end > l.limit.amount {
            vec![format!(
                "{agent} reads only the first {amount} of {shown}, and the pas-agent block ends at {} of its {}, so {agent} does not see all of it; move the block nearer the top of the file, shorten the text before it, or shorten the session (`pas-agent remove`)",
                l.limit.describe(l.block_end),
                l.limit.describe(l.file),
            )]
        } else if l.file > l.limit.amount {
            let placed = if self.outcome == Outcome::Inserted {
                "the pas-agent block was put at the top of the file, so it is read, "
            } else {
                "the pas-agent block is within them, "
            };
            vec![format!(
                "{shown} is {} long, and {agent} reads only the first {amount}; {placed}but the rest of the file past that point is not read",
                l.limit.describe(l.file)
            )]
        } else {
            Vec::new()
        }
    }
}

/// Renders the session and writes it into `target`, under the session lock (so two exports to
/// one file cannot interleave). `session.json` itself is not rewritten. `now` and `repo` are
/// the live git state, read by the caller before locking.
///
/// Errors: those of [`write`], and session errors from loading.
pub fn export(
    project: &Project,
    target: &Target,
    force: bool,
    now: Option<&WorkTree>,
    repo: Option<&Repo>,
) -> Result<Report> {
    let _guard = project.lock()?;
    // The block names only the latest runs: old ones stay undecoded.
    let session = project.load_recent()?;
    write(&session, target, force, now, repo)
}

/// The Markdown for `session` with the live git state `now` (and the stale report it implies).
pub fn content(
    session: &crate::session::Session,
    now: Option<&WorkTree>,
    repo: Option<&Repo>,
) -> (String, Option<Stale>) {
    content_within(session, now, repo, None)
}

/// [`content`] for an agent that reads only the first `limit` of its context file (see
/// [`render::render_within`]).
pub fn content_within(
    session: &crate::session::Session,
    now: Option<&WorkTree>,
    repo: Option<&Repo>,
    limit: Option<crate::agents::ReadLimit>,
) -> (String, Option<Stale>) {
    let stale = stale::check(session, now, repo);
    let git = now.map(WorkTree::git_ref);
    (
        render::render_within(session, git.as_ref(), stale.as_ref(), limit),
        stale,
    )
}

/// Renders `session` and splices it into `target`, then settles the other blocks the agent
/// reads ([`delivery::settle`]: taken out where every reader has another, else brought up to
/// date). A private file is made one git ignores on this machine; a copy of a tracked context
/// file ([`Private::Shadows`]) is made from that file as it is now. The caller holds the
/// session lock.
///
/// Errors: [`Error::ExportUnsafe`] when the file's markers do not form exactly one block (and
/// `force` is off), the file is read-only (or its directory is), too large (or would be after
/// the export), not a regular file, resolves outside the session root through a link or (not
/// named by the user) at all, or cannot be read or written, or when it does not exist and a
/// file whose name differs in case only does (`agents.md` for `AGENTS.md`) — in every case the
/// file is left as it was.
pub fn write(
    session: &crate::session::Session,
    target: &Target,
    force: bool,
    now: Option<&WorkTree>,
    repo: Option<&Repo>,
) -> Result<Report> {
    let (content, stale) = content_within(session, now, repo, target.agent.read_limit);
    let unsafe_ = |problem: String| unsafe_at(target, problem);
    let refused = |e: WriteError| refusal(target, e);
    let (guard, existing) = open(target)?;
    let case_variants = delivery::case_variants(&target.path);
    if existing.is_none()
        && let Some(other) = case_variants.first()
    {
        let other = shown(&target.root, other);
        return Err(unsafe_(format!(
            "{other} is there, whose name differs from this one in case only: beside it, a new file would break checkouts on macOS and Windows (where the two are one file), and {} reads {}, not {other}; nothing was written\n  hint: rename it (`git mv {other} {}`), or name a file with -o",
            target.agent.name,
            target.shown(),
            target.shown(),
        )));
    }
    let tracked = repo.is_some_and(|r| r.tracked(&target.path).unwrap_or(false));
    if let Layout::Owned { front_matter } = target.layout {
        let mut report = write_owned(
            target,
            &guard,
            existing,
            front_matter,
            &content,
            force,
            stale,
        )?;
        report.tracked = tracked;
        report.case_variants = case_variants;
        return Ok(report);
    }
    if !force
        && let Some(bytes) = &existing
        && let Err(reason) = block::check_text(bytes)
    {
        return Err(unsafe_(format!("{reason}; nothing was written")));
    }
    // A copy of a tracked context file is made from that file as it is now, after a first
    // line that names it as pas-agent's.
    let shadow = match &target.why {
        Why::Private {
            tracked,
            how: Private::Shadows(_),
        } => {
            let text = match fsutil::read_limited(tracked, MAX_CONTEXT_FILE_BYTES) {
                Ok(b) => b.unwrap_or_default(),
                Err(e) => {
                    return Err(unsafe_(format!(
                        "cannot read {} to copy it ({e}); nothing was written",
                        shown(&target.root, tracked)
                    )));
                }
            };
            block::check_text(&text).map_err(|r| {
                unsafe_(format!(
                    "{} cannot be copied: {r}; nothing was written",
                    shown(&target.root, tracked)
                ))
            })?;
            Some(text)
        }
        _ => None,
    };
    let head = if shadow.is_some() {
        format!("{}\n", delivery::SHADOW_HEAD)
    } else {
        String::new()
    };
    let base = shadow.as_deref().or(existing.as_deref());
    // Context files hard-linked to each other (CLAUDE.md and AGENTS.md) stay linked.
    let peers: Vec<PathBuf> = crate::agents::launched()
        .map(|a| target.root.join(a.context_file))
        .chain(std::iter::once(target.path.clone()))
        .collect();
    let limit = target.agent.read_limit;
    let splice = |place| {
        block::splice(base, &content, force, place).map_err(|reason| {
            unsafe_(format!(
                "{reason}; nothing was written\n  hint: fix the file by hand, or replace all of it with the block: `pas-agent export --to {} --force`",
                target.agent.id
            ))
        })
    };
    let (mut bytes, mut outcome) = splice(Place::End)?;
    // An agent that reads only the start of the file would miss a block appended past that
    // point: a new block then goes to the top instead (the file's own text is kept as is).
    if let Some(l) = limit
        && outcome == Outcome::Appended
        && block::block_end(&bytes)
            .is_some_and(|end| l.measure(&bytes[..end]) + l.measure(head.as_bytes()) > l.amount)
    {
        (bytes, outcome) = splice(Place::Top)?;
    }
    if shadow.is_some() {
        bytes.splice(0..0, head.bytes());
        outcome = if existing.is_some() {
            Outcome::Updated
        } else {
            Outcome::Created
        };
    }
    // Never write a file the next export would refuse to read.
    crate::limits::CONTEXT_FILE
        .check_write(bytes.len())
        .map_err(unsafe_)?;
    if existing.is_none()
        && let Some(parent) = target.path.parent()
    {
        create_dir_of(target, &guard, parent)?;
    }
    guard
        .write(&target.path, &bytes, target.named, Links::KeepAmong(&peers))
        .map_err(refused)?;
    let excluded = match (&target.why, repo) {
        (Why::Private { .. }, Some(repo)) => {
            Some(repo.exclude(&target.path).map_err(|e| e.to_string()))
        }
        _ => None,
    };
    let (others, twice) = if force || !target.at_default {
        (Vec::new(), Vec::new())
    } else {
        let others = settle_others(target, &guard, &peers, &content, repo);
        let twice = delivery::read_twice(target.agent, &target.root, &canonical(&target.path));
        (others, twice)
    };
    Ok(Report {
        target: target.clone(),
        outcome,
        stale,
        limit: limit.map(|l| LimitReport::of(l, &bytes)),
        others,
        twice,
        tracked,
        case_variants,
        excluded,
    })
}

/// Step 3 of the delivery rule after `target` was written: each other block the agent reads
/// is taken out (where every reader has another; never from a file git tracks when `run`
/// writes) or brought up to date.
fn settle_others(
    target: &Target,
    guard: &WriteGuard,
    peers: &[PathBuf],
    content: &str,
    repo: Option<&Repo>,
) -> Vec<(PathBuf, Other, std::result::Result<(), String>)> {
    let chosen = canonical(&target.path);
    let mut out = Vec::new();
    if !target.for_run
        && let Some(copy) = delivery::leftover_copy(target.agent, &target.root)
        && canonical(&copy) != chosen
    {
        let result = guard.remove(&copy, Named::ByUs).map_err(|e| e.to_string());
        out.push((copy, Other::Leftover, result));
    }
    out.extend(
        delivery::settle(target.agent, &target.root, &chosen)
            .into_iter()
            .map(|(file, other)| {
                let keep_tracked = target.for_run
                    && other == Other::Remove
                    && repo.is_some_and(|r| r.tracked(&file).unwrap_or(true));
                let other = if keep_tracked {
                    Other::Refresh(Vec::new())
                } else {
                    other
                };
                let result = match other {
                    Other::Remove | Other::Leftover => take_block_out(guard, peers, &file),
                    Other::Refresh(_) => update_block(guard, peers, &file, content),
                };
                (file, other, result)
            }),
    );
    out
}

/// Takes the block out of `path` ([`block::take_out`]); a file left with nothing (or only a
/// byte order mark) is deleted.
fn take_block_out(
    guard: &WriteGuard,
    peers: &[PathBuf],
    path: &Path,
) -> std::result::Result<(), String> {
    guard.check(path, Named::ByUs).map_err(|e| e.to_string())?;
    let bytes = match fsutil::read_limited(path, MAX_CONTEXT_FILE_BYTES) {
        Ok(Some(b)) => b,
        Ok(None) => return Ok(()),
        Err(e) => return Err(e.to_string()),
    };
    block::check_text(&bytes)?;
    let Some(out) = block::take_out(&bytes)? else {
        return Ok(());
    };
    if out.is_empty() || out == b"\xEF\xBB\xBF" {
        guard.remove(path, Named::ByUs).map_err(|e| e.to_string())
    } else {
        guard
            .write(path, &out, Named::ByUs, Links::KeepAmong(peers))
            .map(drop)
            .map_err(|e| e.to_string())
    }
}

/// [`Error::ExportUnsafe`] for `target`.
fn unsafe_at(target: &Target, problem: String) -> Error {
    Error::ExportUnsafe {
        path: target.path.clone(),
        problem,
    }
}

/// Creates the directories up to `parent` for `target`'s file (an editor's rules directory, a
/// `-o` path's), through the guard that decides every write.
///
/// Errors: [`Error::ExportUnsafe`] naming the file, as for the write itself.
fn create_dir_of(target: &Target, guard: &WriteGuard, parent: &Path) -> Result<()> {
    guard
        .create_dir_all(parent, target.named, 0o777)
        .map_err(|e| match e {
            WriteError::Io(e) => unsafe_at(
                target,
                format!("cannot create its directory ({e}); nothing was written"),
            ),
            e => refusal(target, e),
        })
        .map(drop)
}

impl LimitReport {
    /// How much of `bytes`, the file as written, an agent reading only `limit` of it sees:
    /// the whole file, and up to the end of the block (the whole file when it has none).
    fn of(limit: ReadLimit, bytes: &[u8]) -> LimitReport {
        LimitReport {
            limit,
            file: limit.measure(bytes),
            block_end: limit.measure(&bytes[..block::block_end(bytes).unwrap_or(bytes.len())]),
        }
    }
}

/// The error for a write the guard refused.
fn refusal(target: &Target, e: WriteError) -> Error {
    let unsafe_ = |problem: String| unsafe_at(target, problem);
    match e {
        // Never offer the link's target as a command to copy: a stranger chose it.
        WriteError::Outside { link: Some(_), .. } => unsafe_(format!(
            "{e}; nothing was written\n  hint: to export somewhere else, name that file with -o"
        )),
        WriteError::Outside { link: None, .. } => unsafe_(format!(
            "{e}; nothing was written\n  hint: a path outside the project is written only when you name it yourself with -o and no link inside the project leads there"
        )),
        WriteError::ReadOnly => unsafe_(
            "the file is read-only; nothing was written (make it writable, or export elsewhere with -o)".into(),
        ),
        WriteError::NotAFile(kind) => unsafe_(format!("it is {kind}, not a regular file; nothing was written")),
        WriteError::Io(e) => unsafe_(format!("cannot write the file ({e}); it was left as it was")),
        other => unsafe_(format!("{other}; nothing was written")),
    }
}

/// The guard for the session root, with the target checked against it (before anything is
/// read), and the target's bytes (`None` when there is no file).
///
/// Errors: [`Error::ExportUnsafe`]: the root cannot be resolved, the guard refuses the path,
/// or the file is too large, not a regular file, or unreadable.
fn open(target: &Target) -> Result<(WriteGuard, Option<Vec<u8>>)> {
    let unsafe_ = |problem: String| unsafe_at(target, problem);
    // Where the file may be written is decided by the one guard, before anything is read.
    let guard = WriteGuard::new(&target.root).map_err(|e| {
        unsafe_(format!(
            "cannot resolve the session root ({e}); nothing was written"
        ))
    })?;
    guard
        .check(&target.path, target.named)
        .map_err(|e| refusal(target, e))?;
    let existing = match fsutil::read_limited(&target.path, MAX_CONTEXT_FILE_BYTES) {
        Ok(bytes) => bytes,
        Err(ReadError::TooLarge(size)) => {
            return Err(unsafe_(format!(
                "{}; nothing was written",
                crate::limits::CONTEXT_FILE.read_refusal(size)
            )));
        }
        Err(ReadError::NotAFile("a directory")) => {
            return Err(unsafe_(
                "is a directory; give the path of a file to write".into(),
            ));
        }
        Err(ReadError::NotAFile(kind)) => {
            return Err(unsafe_(format!(
                "it is {kind}, not a regular file; nothing was written"
            )));
        }
        Err(ReadError::Io(e)) => {
            return Err(unsafe_(format!(
                "cannot read the file ({e}); nothing was written"
            )));
        }
    };
    Ok((guard, existing))
}

/// Whether the text outside the block (`text[..start]` and `text[end..]`, `text` without a
/// byte order mark) is exactly what pas-agent writes around it in an owned file: the front
/// matter, give or take whitespace and line endings, and nothing else. Only then is the file
/// pas-agent's to replace whole or delete; any other text in it is someone's and is kept.
fn only_ours_around(text: &[u8], start: usize, end: usize, front_matter: &str) -> bool {
    let before = String::from_utf8_lossy(&text[..start]).replace("\r\n", "\n");
    before.trim() == front_matter.trim() && text[end..].trim_ascii().is_empty()
}

/// Writes a file pas-agent owns: front matter and block, replacing the whole file when it
/// holds nothing else (or `force`); when it holds text pas-agent did not write (a rule the
/// user added, a front matter they changed), only the block is replaced, as in a
/// [`Layout::Block`] file. A file of the same name without a block is someone else's and is
/// left alone.
fn write_owned(
    target: &Target,
    guard: &WriteGuard,
    existing: Option<Vec<u8>>,
    front_matter: &str,
    content: &str,
    force: bool,
    stale: Option<Stale>,
) -> Result<Report> {
    let unsafe_ = |problem: String| unsafe_at(target, problem);
    let refused = |e: WriteError| refusal(target, e);
    let mut keep_text = false;
    if !force && let Some(bytes) = &existing {
        block::check_text(bytes).map_err(|r| unsafe_(format!("{r}; nothing was written")))?;
        let text = bytes
            .strip_prefix(b"\xEF\xBB\xBF".as_slice())
            .unwrap_or(bytes);
        match block::scan(text) {
            block::Scan::Block { start, end } => {
                keep_text = !only_ours_around(text, start, end, front_matter);
            }
            block::Scan::NoBlock => {
                return Err(unsafe_(format!(
                    "it holds no pas-agent block, so pas-agent did not write it and will not replace it; nothing was written\n  hint: rename it, or replace it with the block: `pas-agent export --to {} --force`",
                    target.agent.id
                )));
            }
            block::Scan::Broken(reason) => {
                return Err(unsafe_(format!(
                    "the pas-agent markers do not form one block: {reason}; nothing was written\n  hint: replace the whole file with the block: `pas-agent export --to {} --force`",
                    target.agent.id
                )));
            }
        }
    }
    let (bytes, outcome) = if keep_text {
        block::splice(existing.as_deref(), content, false, Place::End)
            .map_err(|reason| unsafe_(format!("{reason}; nothing was written")))?
    } else {
        let outcome = match (&existing, force) {
            (None, _) => Outcome::Created,
            (Some(_), true) => Outcome::Overwritten,
            (Some(_), false) => Outcome::Updated,
        };
        (
            block::owned_file(front_matter, content).into_bytes(),
            outcome,
        )
    };
    crate::limits::CONTEXT_FILE
        .check_write(bytes.len())
        .map_err(unsafe_)?;
    if let Some(parent) = target.path.parent() {
        create_dir_of(target, guard, parent)?;
    }
    guard
        .write(&target.path, &bytes, target.named, Links::Replace)
        .map_err(refused)?;
    let limit = target.agent.read_limit;
    Ok(Report {
        target: target.clone(),
        outcome,
        stale,
        limit: limit.map(|l| LimitReport::of(l, &bytes)),
        others: Vec::new(),
        twice: Vec::new(),
        tracked: false,
        case_variants: Vec::new(),
        excluded: None,
    })
}

/// Sections of the block that describe the live work tree rather than the session (the
/// branch, commit and dirty flag; the changes since the last checkpoint): they change with
/// every commit, so `--check` leaves them out of the comparison.
const LIVE_SECTIONS: &[&str] = &["## Git State", "## Changed Since Last Checkpoint"];

/// The block's body (between the marker lines) with `\n` line ends, without the
/// [`LIVE_SECTIONS`], trailing whitespace trimmed.
fn session_part(block_text: &str) -> String {
    let text = block_text.replace("\r\n", "\n");
    let mut out = String::new();
    let mut skipping = false;
    for line in text.lines() {
        if line.starts_with(block::START_PREFIX) || line == block::END_MARKER {
            continue;
        }
        // A section ends at the next heading, or at the rule before the block's footer.
        if line.starts_with("## ") || line == "---" {
            skipping = LIVE_SECTIONS.contains(&line);
        }
        if !skipping {
            out.push_str(line);
            out.push('\n');
        }
    }
    out.trim_end().to_string()
}

/// Where a target's file stands against the session (`export --check`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Checked {
    /// The file holds the block `export` would write now (apart from the live git state).
    Current,
    /// There is no file, or no block in it.
    Missing(String),
    /// The block differs from what `export` would write now; or the file is one pas-agent
    /// owns and replaces whole (nothing but its front matter around the block), and it is
    /// not byte for byte what `export` would write (the front matter's spacing, a byte order
    /// mark, blank lines after the block).
    Outdated,
}

/// Compares `target`'s block with what `export` would write for `session` now, leaving out
/// the [`LIVE_SECTIONS`] on both sides. Reads only; takes no lock.
///
/// Errors: as [`write`] when the file cannot be read, is not UTF-8 text, or its markers do not
/// form one block.
pub fn check(session: &crate::session::Session, target: &Target) -> Result<Checked> {
    let unsafe_ = |problem: String| unsafe_at(target, problem);
    let (_guard, existing) = open(target)?;
    let Some(bytes) = existing else {
        return Ok(Checked::Missing("there is no file".into()));
    };
    block::check_text(&bytes).map_err(unsafe_)?;
    let text = bytes
        .strip_prefix(b"\xEF\xBB\xBF".as_slice())
        .unwrap_or(&bytes);
    let (start, end) = match block::scan(text) {
        block::Scan::Block { start, end } => (start, end),
        block::Scan::NoBlock => return Ok(Checked::Missing("it holds no pas-agent block".into())),
        block::Scan::Broken(reason) => {
            return Err(unsafe_(format!(
                "the pas-agent markers do not form one block: {reason}"
            )));
        }
    };
    // Export chose how much of the runs' words fit the agent's read limit with the live
    // sections in the block; without them here, any budget from the one that fits now down
    // could be the one it chose.
    let found = session_part(&String::from_utf8_lossy(&text[start..end]));
    if !render::renderings_within(session, target.agent.read_limit)
        .iter()
        .any(|expected| session_part(expected) == found)
    {
        return Ok(Checked::Outdated);
    }
    // A file pas-agent owns is rewritten whole, and so must be exactly what export writes;
    // one that holds text of the user's keeps it, and only its block counts (as export
    // replaces only the block).
    if let Layout::Owned { front_matter } = target.layout
        && only_ours_around(text, start, end, front_matter)
    {
        let before = String::from_utf8_lossy(&text[..start]).replace("\r\n", "\n");
        let after = &text[end..];
        if before != front_matter || !after.trim_ascii().is_empty() || text.len() != bytes.len() {
            return Ok(Checked::Outdated);
        }
    }
    Ok(Checked::Current)
}

/// What `export --remove` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Removed {
    /// The block was taken out; the rest of the file is as it was.
    Block,
    /// The file held nothing but the block (in a file pas-agent owns, the block and its
    /// front matter): it was deleted.
    File,
    /// There was no file, or no block in it: nothing changed.
    Nothing,
}

/// Takes the block out of `target`'s file under the session lock, with the line endings
/// export added around it when it put the block there ([`block::take_out`]): a file export
/// changed gets back the bytes it had, and every other byte stays as it was (byte order mark,
/// line endings, the text before and after, a blank line of someone else's). A file left
/// empty (or holding only a byte order mark), a file pas-agent owns that holds nothing but its
/// front matter and the block, and a copy `run` made of a context file
/// ([`delivery::is_shadow`]) are deleted; text the user added to an owned file stays, with
/// its front matter. Directories export made for the file (an editor's rules directory) go
/// when that leaves them empty.
///
/// Errors: as [`write`]: the guard refuses the path, the file cannot be read or written, is not
/// UTF-8 text, or its markers do not form one block (nothing is changed).
pub fn remove(project: &Project, target: &Target) -> Result<Removed> {
    let _lock = project.lock()?;
    let unsafe_ = |problem: String| unsafe_at(target, problem);
    let (guard, existing) = open(target)?;
    let Some(bytes) = existing else {
        return Ok(Removed::Nothing);
    };
    if delivery::is_shadow(&bytes) {
        guard
            .remove(&target.path, target.named)
            .map_err(|e| refusal(target, e))?;
        return Ok(Removed::File);
    }
    block::check_text(&bytes).map_err(|r| unsafe_(format!("{r}; nothing was changed")))?;
    let text = bytes
        .strip_prefix(b"\xEF\xBB\xBF".as_slice())
        .unwrap_or(&bytes);
    let (start, end) = match block::scan(text) {
        block::Scan::Block { start, end } => (start, end),
        block::Scan::NoBlock => return Ok(Removed::Nothing),
        block::Scan::Broken(reason) => {
            return Err(unsafe_(format!(
                "the pas-agent markers do not form one block: {reason}; nothing was changed"
            )));
        }
    };
    let owned = match target.layout {
        Layout::Owned { front_matter } => only_ours_around(text, start, end, front_matter),
        Layout::Block => false,
    };
    let out = block::take_out(&bytes)
        .map_err(|r| unsafe_(format!("{r}; nothing was changed")))?
        .unwrap_or_default();
    if owned || out.is_empty() || out == b"\xEF\xBB\xBF" {
        guard
            .remove(&target.path, target.named)
            .map_err(|e| refusal(target, e))?;
        remove_empty_dirs(target, &guard);
        return Ok(Removed::File);
    }
    let peers: Vec<PathBuf> = crate::agents::launched()
        .map(|a| target.root.join(a.context_file))
        .chain(std::iter::once(target.path.clone()))
        .collect();
    guard
        .write(&target.path, &out, target.named, Links::KeepAmong(&peers))
        .map_err(|e| refusal(target, e))?;
    Ok(Removed::Block)
}

/// After the file of an agent's own was deleted: the directories of its context file's path
/// (`.windsurf/rules`, then `.windsurf`) that are left empty, which export made for it. Never
/// the session root, never a directory holding anything.
fn remove_empty_dirs(target: &Target, guard: &WriteGuard) {
    let root = canonical(&target.root);
    let own = canonical(&target.root.join(target.agent.context_file));
    if canonical(&target.path) != own {
        return;
    }
    let mut dir = own.parent().map(Path::to_path_buf);
    while let Some(d) = dir {
        if d == root || !d.starts_with(&root) {
            break;
        }
        let empty = std::fs::read_dir(&d).is_ok_and(|mut e| e.next().is_none());
        if !empty || guard.remove_dir(&d, Named::ByUs).is_err() {
            break;
        }
        dir = d.parent().map(Path::to_path_buf);
    }
}

/// A path with its directory made canonical (and the file itself, when it exists).
/// A path with its directory made canonical and its last part kept as it is (a link there is
/// not followed): the path to write through the guard.
pub(crate) fn located(p: &Path) -> PathBuf {
    match (
        p.parent().and_then(|d| d.canonicalize().ok()),
        p.file_name(),
    ) {
        (Some(d), Some(n)) => d.join(n),
        _ => p.to_path_buf(),
    }
}

pub(crate) fn canonical(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| {
        match (
            p.parent().and_then(|d| d.canonicalize().ok()),
            p.file_name(),
        ) {
            (Some(d), Some(n)) => d.join(n),
            _ => p.to_path_buf(),
        }
    })
}

/// Brings the blocks in `files` (files `agent` reads under `root` that hold one) up to date
/// with `session` in place, without the live git state: what the start hook does with an
/// out-of-date block. Only a block already there is rewritten: nothing is created, taken out
/// or moved, so a file git tracks changes only where a block was put on purpose, as `run`
/// keeps it. The caller holds the session lock.
///
/// Errors: the first file that could not be written, and why (the others are still tried).
pub fn refresh_blocks(
    session: &crate::session::Session,
    agent: &'static Agent,
    root: &Path,
    files: &[PathBuf],
) -> std::result::Result<(), String> {
    let (content, _) = content_within(session, None, None, agent.read_limit);
    let guard =
        WriteGuard::new(root).map_err(|e| format!("cannot resolve the session root ({e})"))?;
    let peers: Vec<PathBuf> = crate::agents::launched()
        .map(|a| root.join(a.context_file))
        .collect();
    let mut first = Ok(());
    for file in files {
        if let Err(e) = update_block(&guard, &peers, file, &content)
            && first.is_ok()
        {
            first = Err(format!("{}: {e}", shown(root, file)));
        }
    }
    first
}

/// Replaces the block in `path` (which holds one) with `content`, through the same checks as
/// the target; the reason as a sentence when it cannot.
fn update_block(
    guard: &WriteGuard,
    peers: &[PathBuf],
    path: &Path,
    content: &str,
) -> std::result::Result<(), String> {
    guard.check(path, Named::ByUs).map_err(|e| e.to_string())?;
    let bytes = match fsutil::read_limited(path, MAX_CONTEXT_FILE_BYTES) {
        Ok(Some(b)) => b,
        Ok(None) => return Err("the file disappeared".into()),
        Err(e) => return Err(e.to_string()),
    };
    let (out, _) = block::splice(Some(&bytes), content, false, Place::End)?;
    crate::limits::CONTEXT_FILE.check_write(out.len())?;
    if out != bytes {
        guard
            .write(path, &out, Named::ByUs, Links::KeepAmong(peers))
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(s: &str) -> crate::session::Session {
        let t = "2026-01-01T00:00:00Z";
        let uuid = "3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b";
        serde_json::from_value(serde_json::json!({
            "schema_version": 1, "id": uuid, "project_name": "p", "created_at": t,
            "updated_at": t, "task": { "description": s, "completed": ["a ## Git State"] },
            "git": { "branch": "main", "commit": null, "dirty": false },
            "checkpoints": [], "runs": []
        }))
        .unwrap()
    }

    /// `--check` compares the session's part of the block: the live sections (which render.rs
    /// names) drop out, and nothing else does.
    #[test]
    fn the_live_sections_alone_drop_out_of_the_comparison() {
        let render_rs = include_str!("render.rs");
        for heading in LIVE_SECTIONS {
            assert!(render_rs.contains(&format!("\"{heading}\\n")), "{heading}");
        }
        let s = session("Ship it");
        let git = crate::model::GitRef {
            branch: Some("feature".into()),
            commit: Some("0123456789abcdef".into()),
            dirty: true,
            extra: Default::default(),
        };
        let with_git = block::make_block(&render::render(&s, Some(&git), None), "\r\n");
        let without = render::render(&s, None, None);
        assert!(with_git.contains("## Git State"));
        assert_eq!(session_part(&with_git), session_part(&without));
        assert!(session_part(&with_git).contains("_Exported by pas-agent"));
        let other = render::render(&session("Ship it later"), None, None);
        assert_ne!(session_part(&other), session_part(&without));
    }
}
