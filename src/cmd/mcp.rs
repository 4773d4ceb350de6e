//! `pas-agent mcp`: the session over the Model Context Protocol (stdio), so that an agent reads
//! and records its progress with typed tools (docs/mcp.md); `pas-agent mcp --config AGENT`: the
//! snippet that registers the server in that agent's MCP settings; and the arguments that
//! `run --mcp` gives an agent to use the server for one run.
//!
//! The protocol is rmcp's (the official Rust SDK): it reads JSON-RPC lines on stdin, answers on
//! stdout, and nothing else ever reaches stdout (warnings go to stderr through `crate::term`).
//! Every tool calls the functions the CLI commands call (`update::apply`, `checkpoint::take`,
//! `Project::load`, `export::content`), under the same lock, with the same validation and the
//! same refusals; a failure is a tool error carrying the CLI's message and exit code. Each call
//! finds the session anew, so a session started, repaired or removed while the server runs is
//! seen as it is. The work runs on tokio's blocking pool: a call that waits for the session
//! lock does not stop the server from reading the next message. Nothing runs between calls:
//! no polling, no watcher.
//!
//! tokio and rmcp start only here: the runtime is a current-thread one built by [`run`], so
//! every other command (the prompt segment above all) never touches them.

use std::ffi::OsString;
use std::path::Path;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock, ErrorCode, Implementation, ListResourcesResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    Resource, ResourceContents, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt, schemars, tool, tool_handler};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{cwd, git_line, live, project, task_head, task_lists};
use crate::agents::Agent;
use crate::cli::McpArgs;
use crate::error::{Error, Result};
use crate::git::Detail;
use crate::model::{ListKind, TaskState};
use crate::session::Project;
use crate::session::ops::Update;
use crate::term::{clean, clean_line};

pub use crate::agents::mcp::SERVER_NAME;
/// The URI of the session resource (the Markdown block `export` writes).
pub const SESSION_URI: &str = "pas-agent://session";

/// What the server tells the model in `initialize`.
const INSTRUCTIONS: &str = "pas-agent keeps the portable record of this coding task \
(.pas-agent/session.json): the task, what is done, what remains, decisions, blockers, \
constraints, discoveries and the next action, plus checkpoints. Call read_session first to see \
the task and the item numbers. Record progress as you go with update_session (mark remaining \
items done by number, add items, set the next action) so the next agent or person can pick up \
where you stopped, and take a checkpoint at a milestone.";

pub fn run(args: McpArgs) -> Result<i32> {
    if let Some(name) = args.config {
        let agent = crate::agents::by_name(&name)
            .ok_or_else(|| Error::Usage(format!("unknown agent `{}`", clean(&name))))?;
        let mcp = agent.mcp.ok_or_else(|| {
            Error::Usage(format!(
                "no MCP snippet for {}: pas-agent has them for {} (see docs/mcp.md)",
                agent.name,
                crate::agents::AGENTS
                    .iter()
                    .filter(|a| a.mcp.is_some())
                    .map(|a| a.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
        // `-C DIR` pins the project: the snippet starts `pas-agent -C <root> mcp`, which
        // serves it wherever the agent starts the server (a user-level registration).
        let root = match &args.project {
            Some(_) => {
                let here = cwd()?;
                Some(Project::find_opt(&here).map_or(here, |p| p.root))
            }
            None => None,
        };
        let snippet = mcp.snippet(root.as_deref()).map_err(Error::Message)?;
        crate::term::note(mcp.hint);
        crate::term::print_data(&snippet)?;
        return Ok(0);
    }
    serve()
}

/// Runs the server on stdin/stdout until the client closes stdin.
fn serve() -> Result<i32> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Message(format!("cannot start the MCP server: {e}")))?;
    runtime.block_on(async {
        let service = Server::new()
            .serve((bounded::Stdin::new(tokio::io::stdin()), tokio::io::stdout()))
            .await
            .map_err(|e| Error::Message(format!("MCP session did not start: {e}")))?;
        service
            .waiting()
            .await
            .map_err(|e| Error::Message(format!("MCP server stopped: {e}")))?;
        Ok(0)
    })
}

/// The arguments that make `agent` use `pas-agent mcp` for one run, serving the session at
/// `root`, started as `exe` (this binary), in the agent's own syntax
/// ([`crate::agents::mcp::Mcp::run_args`]). They go before the agent's other arguments.
///
/// Errors: [`Error::Usage`] for an agent without a per-run option (or no agent), with the way
/// to register the server in its settings instead; [`Error::Message`] when a path is not UTF-8
/// (the agents read their configuration as text).
pub fn run_args(agent: Option<&Agent>, exe: &Path, root: &Path) -> Result<Vec<OsString>> {
    let Some(agent) = agent else {
        return Err(Error::Usage(
            "--mcp needs a known agent (`pas-agent run --mcp claude`), not a plain program".into(),
        ));
    };
    match agent.mcp.and_then(|m| m.run_args(exe, root)) {
        Some(args) => args.map_err(|e| Error::Message(format!("--mcp: {e}"))),
        None => {
            let register = if agent.mcp.is_some() {
                format!(
                    "register the server once with `pas-agent mcp --config {}` (docs/mcp.md)",
                    agent.short_name()
                )
            } else {
                "register `pas-agent mcp` as a stdio server in its MCP settings (docs/mcp.md)"
                    .to_string()
            };
            Err(Error::Usage(format!(
                "{} has no option to add an MCP server for one run, so --mcp cannot pass it; {register}",
                agent.name
            )))
        }
    }
}

/// `update_session`'s arguments: every list `pas-agent update` has.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateParams {
    /// Replace the task description (what the whole session is about); rarely needed, not blank.
    #[serde(default)]
    pub task: Option<String>,
    /// Replace the objective (what the task aims at). An empty string clears it.
    #[serde(default)]
    pub objective: Option<String>,
    /// Set the next action: the very next concrete step. An empty string clears it.
    #[serde(default)]
    pub next: Option<String>,
    /// Clear the next action (wins over `next`).
    #[serde(default)]
    pub clear_next: bool,
    /// Numbers of remaining items now done, as read_session shows them (1 is the first); they
    /// move to the completed list.
    #[schemars(
        description = "Numbers of remaining items now done, as read_session shows them (1 is the first remaining item); they move to the completed list.",
        inner(range(min = 1))
    )]
    #[serde(default)]
    pub done: Vec<usize>,
    /// Numbers of blockers that no longer block, as read_session numbers them; they are dropped.
    #[schemars(inner(range(min = 1)))]
    #[serde(default)]
    pub resolve: Vec<usize>,
    /// Items to add to the completed list (work finished that was not a remaining item).
    #[serde(default)]
    pub completed: Vec<String>,
    /// Items to add to the remaining list (work still to do).
    #[serde(default)]
    pub remaining: Vec<String>,
    /// Decisions made, with their reason, that later work must keep.
    #[serde(default)]
    pub decisions: Vec<String>,
    /// What stops progress now.
    #[serde(default)]
    pub blockers: Vec<String>,
    /// Rules the work must respect (requirements, limits).
    #[serde(default)]
    pub constraints: Vec<String>,
    /// Facts learned along the way that the next agent should know.
    #[serde(default)]
    pub discoveries: Vec<String>,
}

impl From<UpdateParams> for Update {
    fn from(p: UpdateParams) -> Self {
        Update {
            task: p.task,
            objective: p.objective,
            next: p.next,
            clear_next: p.clear_next,
            completed: p.completed,
            remaining: p.remaining,
            decisions: p.decisions,
            blockers: p.blockers,
            constraints: p.constraints,
            discoveries: p.discoveries,
            done: p.done,
            resolve: p.resolve,
        }
    }
}

/// `read_session`'s arguments.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadParams {
    /// Which page to read (1 is the first, and the default). A session too large for one
    /// answer is split into pages; each answer says how many there are and what it left out.
    #[schemars(range(min = 1))]
    #[serde(default)]
    pub page: Option<usize>,
}

/// `checkpoint`'s arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckpointParams {
    /// What this checkpoint marks, in a few words ("login flow done"); must not be blank.
    pub message: String,
}

/// The MCP server: the tools and the resource of the session found from the current directory.
#[derive(Debug, Clone)]
pub struct Server {
    tool_router: ToolRouter<Self>,
}

impl Default for Server {
    fn default() -> Self {
        Self::new()
    }
}

#[rmcp::tool_router]
impl Server {
    /// A server with its tools.
    pub fn new() -> Self {
        Self {
            tool_router: Self::tool_router(),
        }
    }

    #[tool(
        name = "read_session",
        description = "Read the pas-agent session of this project: the task, objective, next action, the numbered lists (completed, remaining, blockers, decisions, constraints, discoveries), checkpoints and git state. Use the numbers shown here with update_session's `done` and `resolve`. A large session comes in pages: the answer says which items it left out and which `page` to ask for next.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn read_session(
        &self,
        Parameters(params): Parameters<ReadParams>,
    ) -> Result<CallToolResult, ErrorData> {
        blocking(move || read(params.page.unwrap_or(1))).await
    }

    #[tool(
        name = "update_session",
        description = "Record progress in the pas-agent session, as `pas-agent update` does: mark remaining items done by number, add items to any list (completed, remaining, decisions, blockers, constraints, discoveries), resolve blockers by number, set or clear the next action, change the objective. Numbers refer to the lists as read_session shows them before this call. All or nothing: on an error nothing is changed. Returns the session after the change.",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn update_session(
        &self,
        Parameters(params): Parameters<UpdateParams>,
    ) -> Result<CallToolResult, ErrorData> {
        let update = Update::from(params);
        blocking(move || update_tool(&update)).await
    }

    #[tool(
        name = "checkpoint",
        description = "Take a pas-agent checkpoint, as `pas-agent checkpoint MESSAGE` does: a snapshot of the task and of the files changed in git, so the work can be reviewed or resumed from here. Use it at a milestone.",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn checkpoint(
        &self,
        Parameters(params): Parameters<CheckpointParams>,
    ) -> Result<CallToolResult, ErrorData> {
        blocking(move || checkpoint_tool(&params.message)).await
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
        .with_server_info(Implementation::new(SERVER_NAME, env!("CARGO_PKG_VERSION")))
        .with_instructions(INSTRUCTIONS)
    }

    /// The stand-in request [`bounded::Stdin`] puts in place of a message over
    /// [`bounded::MAX_MESSAGE_BYTES`]: answered with an error that carries the message's own id.
    async fn on_custom_request(
        &self,
        request: rmcp::model::CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CustomResult, ErrorData> {
        if request.method == bounded::TOO_LARGE_METHOD {
            let bytes = request
                .params
                .as_ref()
                .and_then(|p| p.get("bytes"))
                .and_then(Value::as_u64)
                .unwrap_or_default();
            return Err(ErrorData::new(
                ErrorCode::INVALID_REQUEST,
                format!(
                    "the message is {} bytes; pas-agent mcp reads messages of at most {} bytes (16 MiB, docs/mcp.md), so it was not read",
                    bytes,
                    bounded::MAX_MESSAGE_BYTES
                ),
                Some(json!({"bytes": bytes, "limit": bounded::MAX_MESSAGE_BYTES})),
            ));
        }
        Err(ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            request.method,
            None,
        ))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let resource = Resource::new(SESSION_URI, "session")
            .with_title("pas-agent session")
            .with_description(
                "The session of this project as Markdown: the block `pas-agent export` writes into the agents' context files.",
            )
            .with_mime_type("text/markdown");
        Ok(ListResourcesResult::with_all_items(vec![resource]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        if request.uri != SESSION_URI {
            return Err(ErrorData::resource_not_found(
                format!(
                    "no resource {}: pas-agent serves {SESSION_URI}",
                    clean_line(&request.uri)
                ),
                None,
            ));
        }
        let markdown = tokio::task::spawn_blocking(markdown)
            .await
            .map_err(|e| ErrorData::internal_error(format!("the read failed: {e}"), None))?;
        match markdown {
            Ok(text) => Ok(ReadResourceResult::new(vec![
                ResourceContents::text(text, SESSION_URI).with_mime_type("text/markdown"),
            ])
            .into()),
            Err(e) => {
                let code = match e {
                    Error::NoSession { .. } => ErrorCode::RESOURCE_NOT_FOUND,
                    _ => ErrorCode::INTERNAL_ERROR,
                };
                Err(ErrorData::new(
                    code,
                    crate::term::clean_output(&message_of(&e)).into_owned(),
                    Some(json!({"exit_code": e.exit_code()})),
                ))
            }
        }
    }
}

/// Runs `work` on the blocking pool and turns its error into a tool error (a panic too: the
/// server keeps serving).
async fn blocking(
    work: impl FnOnce() -> Result<CallToolResult> + Send + 'static,
) -> Result<CallToolResult, ErrorData> {
    match tokio::task::spawn_blocking(work).await {
        Ok(Ok(result)) => Ok(result),
        Ok(Err(e)) => Ok(tool_error(&e)),
        Err(e) => Ok(CallToolResult::error(vec![ContentBlock::text(format!(
            "pas-agent failed inside this call ({e}); the session was not changed by it unless read_session shows otherwise"
        ))])),
    }
}

/// A tool error with the CLI's message (as `pas-agent` prints it after `error: `) and its exit
/// code (docs/commands.md, "Exit codes") in the structured content.
fn tool_error(e: &Error) -> CallToolResult {
    let message = crate::term::clean_output(&message_of(e)).into_owned();
    let mut result = CallToolResult::error(vec![ContentBlock::text(format!("error: {message}"))]);
    result.structured_content = Some(json!({"error": message, "exit_code": e.exit_code()}));
    result
}

/// The message of `e` for a client: as the CLI says it, except that a session not found says
/// where the server looked and how to point it at the project (`-C`): the agent, not the user,
/// chose the directory it was started in.
fn message_of(e: &Error) -> String {
    match e {
        Error::NoSession { start } => format!(
            "no pas-agent session found in {} (the directory this MCP server was started in) or any parent directory\n  hint: start the server in the project, as `pas-agent -C /path/to/project mcp` (`pas-agent mcp --config AGENT -C /path/to/project` prints a registration that does it); `pas-agent init` there starts a session if it has none",
            start.display()
        ),
        e => e.to_string(),
    }
}

/// What the CLI does before a command that works on a session: close the records of runs
/// whose launcher died, and set up the merge driver where `.gitattributes` asks for it
/// (`cmd::dispatch`). Returns the session's project.
fn prepare() -> Result<Project> {
    if let Ok(dir) = cwd() {
        crate::launch::reconcile::here(&dir);
        if let Some(found) = Project::find_opt(&dir) {
            crate::session::teams::ensure_if_named(&found.root);
        }
    }
    project()
}

/// A tool result: `text` for the model, `value` (strings cleaned as the text is) as the
/// structured content. Some clients give the model only the structured content (Claude Code
/// 2.1.197 does), so `value` carries the outcome in words too (`summary`, `numbering`).
fn result(text: String, value: Value) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(cleaned(value));
    result
}

/// `value` with every string [`clean`]ed: stored text reaches the client without control
/// characters, whatever it prints.
fn cleaned(value: Value) -> Value {
    match value {
        Value::String(s) => Value::String(clean(&s)),
        Value::Array(a) => Value::Array(a.into_iter().map(cleaned).collect()),
        Value::Object(o) => Value::Object(
            o.into_iter()
                .map(|(k, v)| (clean(&k), cleaned(v)))
                .collect(),
        ),
        other => other,
    }
}

/// The most characters of list items one `read_session` answer holds (in its text, and again
/// in its structured content). With the task, objective and next action (each cut to
/// [`SHOWN_CHARS`]) and the other lines, an answer stays under about 20,000 characters of
/// text and as much of structured content: below the 50,000 characters past which Claude Code
/// puts a tool result in a file instead of the conversation, and below the 10,000 tokens
/// (of its 25,000-token `MAX_MCP_OUTPUT_TOKENS` limit) past which it warns
/// (https://code.claude.com/docs/en/mcp, "MCP output limits and warnings").
pub const PAGE_CHARS: usize = 10_000;
/// A task, objective, next action or list item longer than this many characters is cut in a
/// `read_session` answer (the rest is named; `pas-agent status` shows it whole).
pub const SHOWN_CHARS: usize = 2_000;

/// The lists in the order pages fill up: what is left to do and what stops it first.
const PAGE_ORDER: [ListKind; 6] = [
    ListKind::Remaining,
    ListKind::Blockers,
    ListKind::Decisions,
    ListKind::Constraints,
    ListKind::Discoveries,
    ListKind::Completed,
];

/// `text` cut to [`SHOWN_CHARS`], with how many characters were left out; and whether it was
/// cut.
fn shown(text: &str) -> (String, bool) {
    match text.char_indices().nth(SHOWN_CHARS) {
        None => (text.to_string(), false),
        Some((end, _)) => (
            format!(
                "{}… [cut: {} characters in all; `pas-agent status` shows it whole]",
                &text[..end],
                crate::display::thousands(text.chars().count())
            ),
            true,
        ),
    }
}

/// The task's items split into pages of at most [`PAGE_CHARS`] characters (an item counts
/// as shown, cut to [`SHOWN_CHARS`]); every page holds at least one item, and an empty task one
/// empty page. Each page lists `(list, 0-based index)` in [`PAGE_ORDER`].
fn pages(task: &TaskState) -> Vec<Vec<(ListKind, usize)>> {
    let mut pages = vec![Vec::new()];
    let mut used = 0;
    for kind in PAGE_ORDER {
        for (i, item) in task.list(kind).iter().enumerate() {
            let cost = item.chars().count().min(SHOWN_CHARS + 80) + 8;
            let page = pages.last_mut().expect("one page at least");
            if !page.is_empty() && used + cost > PAGE_CHARS {
                pages.push(Vec::new());
                used = 0;
            }
            pages.last_mut().expect("one page at least").push((kind, i));
            used += cost;
        }
    }
    pages
}

/// `read_session`: page `page` (1-based) of the session, as text (as `status` shows the task)
/// and as structured content, bounded ([`PAGE_CHARS`]) with a note of what is on other pages.
fn read(page: usize) -> Result<CallToolResult> {
    use std::fmt::Write as _;
    let project = prepare()?;
    let session = project.load()?;
    let all = pages(&session.task);
    let count = all.len();
    let Some(items) = page.checked_sub(1).and_then(|i| all.get(i)) else {
        return Err(Error::Usage(format!(
            "there is no page {page}: the session has {} (1 is the first)",
            crate::display::count(count, "page", "pages")
        )));
    };
    let (_, tree) = live(&project, Detail::Dirty);
    let git = tree.as_ref().map(|t| t.git_ref());
    let mut cut = 0usize;
    let mut show = |t: &str| {
        let (t, was_cut) = shown(t);
        cut += usize::from(was_cut);
        t
    };
    // The task as this page shows it: the head fields cut, the lists holding this page's items.
    let full = &session.task;
    let mut task = TaskState {
        description: show(&full.description),
        objective: show(&full.objective),
        next_action: full.next_action.as_deref().map(&mut show),
        // Fields a newer pas-agent added are left out: they could be of any size.
        ..TaskState::default()
    };
    let mut first = serde_json::Map::new();
    for &(kind, i) in items {
        let list = task.list_mut(kind);
        if list.is_empty() {
            first.insert(kind.name().into(), json!(i + 1));
        }
        list.push(show(&full.list(kind)[i]));
    }
    let mut text = String::new();
    let _ = writeln!(text, "Project:   {}", clean_line(&session.project_name));
    let _ = writeln!(
        text,
        "Root:      {}",
        clean(&project.root.to_string_lossy())
    );
    task_head(&task, &mut text);
    for kind in ListKind::IN_STATUS_ORDER {
        let title = kind.title();
        let here = task.list(kind);
        if here.is_empty() {
            continue;
        }
        let total = full.list(kind).len();
        let from = first.get(kind.name()).and_then(Value::as_u64).unwrap_or(1) as usize;
        if here.len() == total {
            let _ = writeln!(text, "\n{title} ({total}):");
        } else {
            let _ = writeln!(
                text,
                "\n{title} ({total}; {}–{} here):",
                from,
                from + here.len() - 1
            );
        }
        for (i, item) in here.iter().enumerate() {
            let _ = writeln!(text, "  {:>2}. {}", from + i, clean_line(item));
        }
    }
    text.push('\n');
    let latest = session.checkpoints.last();
    match latest {
        None => text.push_str("Checkpoints: none yet\n"),
        Some(c) => {
            let _ = writeln!(
                text,
                "Checkpoints: {} (latest #{}: {}, {})",
                session.checkpoints.len(),
                session.checkpoints.len(),
                clean_line(&shown(&c.message).0),
                crate::display::minute(&c.timestamp)
            );
        }
    }
    if let Some(git) = &git {
        let _ = writeln!(text, "Git:       {}", git_line(git));
    }
    // What this answer leaves out, in words: the model may see only one of text and
    // structured content.
    let mut left_out = Vec::new();
    if count > 1 {
        let on_page: usize = items.len();
        let total: usize = PAGE_ORDER.iter().map(|k| full.list(*k).len()).sum();
        left_out.push(format!(
            "page {page} of {count}: {on_page} of the {total} list items are here, numbered as in the whole session; {}",
            if page < count {
                format!("call read_session with {{\"page\": {}}} for the next ones", page + 1)
            } else {
                "this is the last page".to_string()
            }
        ));
    }
    if cut > 0 {
        left_out.push(format!(
            "{} cut to {} characters (`pas-agent status` in the project shows them whole)",
            crate::display::count(cut, "text was", "texts were"),
            crate::display::thousands(SHOWN_CHARS)
        ));
    }
    let note = (!left_out.is_empty()).then(|| left_out.join("; "));
    if let Some(note) = &note {
        let _ = writeln!(text, "\nNot all here: {note}.");
    }
    let mut value = json!({
        "numbering": "update_session's done and resolve take item numbers: 1 is the first item of a list",
        "root": project.root.to_string_lossy(),
        "session_file": project.session_path().to_string_lossy(),
        "project_name": session.project_name,
        "task": task,
        "checkpoints": session.checkpoints.len(),
        "latest_checkpoint": latest.map(|c| json!({
            "number": session.checkpoints.len(),
            "message": shown(&c.message).0,
            "timestamp": c.timestamp,
        })),
        "git": git,
    });
    if count > 1 || note.is_some() {
        value["page"] = json!({
            "page": page,
            "pages": count,
            "next": (page < count).then_some(page + 1),
            "first_numbers": first,
            "totals": PAGE_ORDER
                .iter()
                .map(|k| (k.name().to_string(), json!(full.list(*k).len())))
                .collect::<serde_json::Map<_, _>>(),
        });
        value["left_out"] = json!(note);
    }
    Ok(result(text, value))
}

/// `update_session`: [`super::update::apply`], as `pas-agent update` runs it.
fn update_tool(update: &Update) -> Result<CallToolResult> {
    let project = prepare()?;
    let task = super::update::apply(&project, update)?;
    let summary = super::update::summary(&task);
    let mut text = format!("{summary}\n");
    task_head(&task, &mut text);
    task_lists(&task, &mut text);
    Ok(result(text, json!({ "summary": summary, "task": task })))
}

/// `checkpoint`: [`super::checkpoint::take`], as `pas-agent checkpoint` runs it.
fn checkpoint_tool(message: &str) -> Result<CallToolResult> {
    let project = prepare()?;
    let taken = super::checkpoint::take(&project, message)?;
    let value = json!({
        "summary": taken.report.trim_end().replace("\n  ", "; "),
        "number": taken.number,
        "message": taken.message,
        "files_changed": taken.files,
    });
    Ok(result(taken.report, value))
}

/// The session resource: the Markdown of the pas-agent block, with the live git state.
fn markdown() -> Result<String> {
    let project = prepare()?;
    let session = project.load()?;
    let detail = if session.checkpoints.is_empty() {
        Detail::Dirty
    } else {
        Detail::Files
    };
    let (repo, tree) = live(&project, detail);
    Ok(crate::export::content(&session, tree.as_ref(), repo.as_ref()).0)
}

/// The server's stdin, with every message over [`MAX_MESSAGE_BYTES`] answered.
///
/// rmcp's stdio transport drops a line longer than its limit (16 MiB) without a word, so the
/// client waits forever for an answer. Here each line is passed on as it comes (nothing is
/// buffered), while a small scanner follows the JSON to find the message's top-level `"id"`.
/// When a line turns out too long, rmcp drops it as before, and right after its newline a
/// stand-in request with the same id ([`TOO_LARGE_METHOD`]) follows, which the server answers
/// with an error naming the size and the limit. A message whose id cannot be read (not an
/// object, an id of another type, no id: a notification) gets no answer: JSON-RPC has no id
/// to give it.
mod bounded {
    use std::collections::VecDeque;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use tokio::io::{AsyncRead, ReadBuf};

    /// The largest message read: rmcp's own line limit (`DEFAULT_MAX_LINE_LENGTH`, 16 MiB),
    /// newline included.
    pub const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;
    /// The method of the stand-in request for a message that was too large.
    pub const TOO_LARGE_METHOD: &str = "pas-agent/message-too-large";
    /// An id longer than this (as JSON) is not kept.
    const MAX_ID_BYTES: usize = 1024;

    /// Where the scanner is in the JSON of one line: enough to find the value of the top-level
    /// object's `"id"` key, whatever comes before or after it.
    #[derive(Default)]
    struct Scan {
        depth: usize,
        /// The line's value is an object (not a batch array or a scalar).
        object: bool,
        in_string: bool,
        /// The previous byte in a string was a backslash that escapes this one.
        escaped: bool,
        /// At depth 1, the next string is a key.
        key_next: bool,
        /// Reading a depth-1 key; its first bytes (three at most: enough to tell `id`).
        key: Option<Vec<u8>>,
        /// The next value at depth 1 is the id's.
        id_next: bool,
        /// The id's JSON while it is read, and whether it is a string.
        value: Option<(Vec<u8>, bool)>,
        /// The id's JSON, once read.
        id: Option<Vec<u8>>,
    }

    impl Scan {
        fn feed(&mut self, b: u8) {
            // A number or literal id ends at the first delimiter, which is structure too.
            if let Some((v, false)) = &mut self.value {
                if !matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n') {
                    v.push(b);
                    if v.len() > MAX_ID_BYTES {
                        self.value = None;
                    }
                    return;
                }
                self.id = self.value.take().map(|(v, _)| v);
            }
            if self.in_string {
                let end = b == b'"' && !self.escaped;
                self.escaped = b == b'\\' && !self.escaped;
                if let Some((v, true)) = &mut self.value {
                    v.push(b);
                    if v.len() > MAX_ID_BYTES {
                        self.value = None;
                    } else if end {
                        self.id = self.value.take().map(|(v, _)| v);
                    }
                } else if let Some(k) = &mut self.key {
                    if end {
                        self.id_next = k.as_slice() == b"id";
                        self.key = None;
                    } else if k.len() < 3 {
                        k.push(b);
                    }
                }
                if end {
                    self.in_string = false;
                }
                return;
            }
            let top = self.depth == 1 && self.object;
            match b {
                b'"' => {
                    self.in_string = true;
                    self.escaped = false;
                    if top && self.key_next {
                        self.key = Some(Vec::new());
                        self.key_next = false;
                    } else if top && self.id_next {
                        self.id_next = false;
                        if self.id.is_none() {
                            self.value = Some((vec![b'"'], true));
                        }
                    }
                }
                b'{' | b'[' => {
                    if self.depth == 0 {
                        self.object = b == b'{';
                        self.key_next = self.object;
                    }
                    self.id_next = false;
                    self.depth += 1;
                }
                b'}' | b']' => self.depth = self.depth.saturating_sub(1),
                b',' if top => {
                    self.key_next = true;
                    self.id_next = false;
                }
                b':' | b',' | b' ' | b'\t' | b'\r' | b'\n' => {}
                _ if top && self.id_next => {
                    self.id_next = false;
                    if self.id.is_none() {
                        self.value = Some((vec![b], false));
                    }
                }
                _ => {}
            }
        }

        /// The id, when it is a number or a string (the only ids JSON-RPC allows).
        fn id(&self) -> Option<serde_json::Value> {
            let id: serde_json::Value = serde_json::from_slice(self.id.as_deref()?).ok()?;
            (id.is_number() || id.is_string()).then_some(id)
        }
    }

    /// [`tokio::io::Stdin`] (or any reader) with oversized messages answered (see the module).
    pub struct Stdin<R> {
        inner: R,
        /// Bytes read and not yet handed on, stand-in requests included.
        out: VecDeque<u8>,
        /// Bytes of the current line so far.
        line: usize,
        scan: Scan,
    }

    impl<R> Stdin<R> {
        pub fn new(inner: R) -> Self {
            Stdin {
                inner,
                out: VecDeque::new(),
                line: 0,
                scan: Scan::default(),
            }
        }

        /// Takes in `bytes` just read.
        fn take(&mut self, bytes: &[u8]) {
            for &b in bytes {
                self.out.push_back(b);
                self.line += 1;
                if b != b'\n' {
                    self.scan.feed(b);
                    continue;
                }
                if self.line > MAX_MESSAGE_BYTES
                    && let Some(id) = self.scan.id()
                {
                    let stand_in = serde_json::json!({
                        "jsonrpc": "2.0",
                        "id": id,
                        "method": TOO_LARGE_METHOD,
                        "params": {"bytes": self.line},
                    });
                    self.out.extend(stand_in.to_string().into_bytes());
                    self.out.push_back(b'\n');
                }
                self.line = 0;
                self.scan = Scan::default();
            }
        }
    }

    impl<R: AsyncRead + Unpin> AsyncRead for Stdin<R> {
        fn poll_read(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<std::io::Result<()>> {
            let this = &mut *self;
            if this.out.is_empty() {
                let mut chunk = [0u8; 64 * 1024];
                let mut read = ReadBuf::new(&mut chunk);
                match Pin::new(&mut this.inner).poll_read(cx, &mut read) {
                    Poll::Ready(Ok(())) => {
                        let filled = read.filled();
                        if filled.is_empty() {
                            return Poll::Ready(Ok(()));
                        }
                        let filled = filled.to_vec();
                        this.take(&filled);
                    }
                    other => return other,
                }
            }
            let n = buf.remaining().min(this.out.len());
            let (a, b) = this.out.as_slices();
            let from_a = n.min(a.len());
            buf.put_slice(&a[..from_a]);
            buf.put_slice(&b[..n - from_a]);
            this.out.drain(..n);
            Poll::Ready(Ok(()))
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use proptest::prelude::*;

        fn id_of(line: &str) -> Option<serde_json::Value> {
            let mut s = Scan::default();
            for b in line.bytes() {
                s.feed(b);
            }
            s.id()
        }

        #[test]
        fn finds_the_top_level_id_wherever_it_is() {
            assert_eq!(
                id_of(r#"{"jsonrpc":"2.0","id":7,"method":"x"}"#),
                Some(7.into())
            );
            assert_eq!(
                id_of(r#"{"method":"x","params":{"id":1,"a":[{"id":2}]},"id":"abc"}"#),
                Some("abc".into())
            );
            assert_eq!(id_of(r#"{ "id" : 42 , "x": 1}"#), Some(42.into()));
            assert_eq!(id_of(r#"{"id":"a\"b}","x":"}"}"#), Some("a\"b}".into()));
            assert_eq!(
                id_of(r#"{"params":{"text":"\"id\":5"},"id":-3}"#),
                Some((-3).into())
            );
            assert_eq!(id_of(r#"{"params":{"x":"y"}}"#), None);
            assert_eq!(id_of(r#"[{"id":1}]"#), None);
            assert_eq!(id_of(r#"{"id":null}"#), None);
            assert_eq!(id_of(r#"{"id":{"a":1}}"#), None);
        }

        proptest::proptest! {
            /// Whatever else the message holds (nested ids, strings that look like keys), the
            /// scanner finds its own id, as serde_json reads it.
            #[test]
            fn agrees_with_serde(
                id in proptest::prop_oneof![
                    proptest::num::i64::ANY.prop_map(serde_json::Value::from),
                    "[ -~]{0,20}".prop_map(serde_json::Value::from),
                ],
                text in "[ -~]{0,40}",
                before in proptest::bool::ANY,
            ) {
                let params = serde_json::json!({"id": 1, "text": text, "list": [{"id": "x"}]});
                let line = if before {
                    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"m","params":{params}}}"#)
                } else {
                    format!(r#"{{"jsonrpc":"2.0","method":"m","params":{params},"id":{id}}}"#)
                };
                prop_assert_eq!(id_of(&line), Some(id));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[OsString]) -> Vec<String> {
        args.iter()
            .map(|a| a.to_str().unwrap().to_string())
            .collect()
    }

    /// Paths with quotes, backslashes and spaces reach the agents' configuration intact: the
    /// values are JSON (Claude Code) and TOML basic strings and arrays, whose escapes JSON's are.
    #[test]
    fn run_args_quote_paths_for_each_agent() {
        let exe = Path::new("/opt/my \"tools\"\\bin/pas-agent");
        let root = Path::new("/work/a b");
        let claude = strings(&run_args(crate::agents::by_name("claude"), exe, root).unwrap());
        assert_eq!(claude.len(), 1);
        let config: Value =
            serde_json::from_str(claude[0].strip_prefix("--mcp-config=").unwrap()).unwrap();
        let server = &config["mcpServers"]["pas-agent"];
        assert_eq!(server["command"], exe.to_str().unwrap());
        assert_eq!(server["args"], json!(["-C", "/work/a b", "mcp"]));

        let codex = strings(&run_args(crate::agents::by_name("codex"), exe, root).unwrap());
        assert_eq!(codex[0], "-c");
        let command = codex[1]
            .strip_prefix("mcp_servers.pas-agent.command=")
            .unwrap();
        assert_eq!(
            serde_json::from_str::<String>(command).unwrap(),
            exe.to_str().unwrap()
        );
        assert_eq!(codex[2], "-c");
        assert_eq!(
            codex[3],
            r#"mcp_servers.pas-agent.args=["-C","/work/a b","mcp"]"#
        );

        for other in ["gemini", "opencode", "aider", "goose"] {
            let e = run_args(crate::agents::by_name(other), exe, root).unwrap_err();
            assert_eq!(e.exit_code(), crate::error::exit::USAGE, "{other}");
        }
        assert!(run_args(None, exe, root).is_err());
    }

    /// Every agent `--config` accepts has a snippet.
    #[test]
    fn every_config_agent_has_a_snippet() {
        for name in crate::agents::mcp_names() {
            let mcp = crate::agents::by_name(name).unwrap().mcp.unwrap();
            let snippet = mcp.snippet(None).unwrap();
            assert!(
                snippet.contains("pas-agent") && snippet.contains("mcp"),
                "{name}"
            );
            assert!(mcp.hint.starts_with("# "), "{name}");
        }
    }
}
