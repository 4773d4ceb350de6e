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
        let snippet = mcp.snippet(None).map_err(Error::Message)?;
        crate::term::note(mcp.hint);
        crate::term::print(&snippet)?;
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
            .serve(rmcp::transport::stdio())
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
        description = "Read the pas-agent session of this project: the task, objective, next action, the numbered lists (completed, remaining, blockers, decisions, constraints, discoveries), checkpoints and git state. Use the numbers shown here with update_session's `done` and `resolve`.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn read_session(&self) -> Result<CallToolResult, ErrorData> {
        blocking(read).await
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
                    crate::term::clean_output(&e.to_string()).into_owned(),
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
    let message = crate::term::clean_output(&e.to_string()).into_owned();
    let mut result = CallToolResult::error(vec![ContentBlock::text(format!("error: {message}"))]);
    result.structured_content = Some(json!({"error": message, "exit_code": e.exit_code()}));
    result
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

/// `read_session`: the session as text (as `status` shows the task) and as structured content.
fn read() -> Result<CallToolResult> {
    use std::fmt::Write as _;
    let project = prepare()?;
    let session = project.load()?;
    let (_, tree) = live(&project, Detail::Dirty);
    let git = tree.as_ref().map(|t| t.git_ref());
    let mut text = String::new();
    let _ = writeln!(text, "Project:   {}", clean_line(&session.project_name));
    let _ = writeln!(
        text,
        "Root:      {}",
        clean(&project.root.to_string_lossy())
    );
    task_head(&session.task, &mut text);
    task_lists(&session.task, &mut text);
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
                clean_line(&c.message),
                crate::display::minute(&c.timestamp)
            );
        }
    }
    if let Some(git) = &git {
        let _ = writeln!(text, "Git:       {}", git_line(git));
    }
    let value = json!({
        "numbering": "update_session's done and resolve take item numbers: 1 is the first item of a list",
        "root": project.root.to_string_lossy(),
        "session_file": project.session_path().to_string_lossy(),
        "project_name": session.project_name,
        "task": session.task,
        "checkpoints": session.checkpoints.len(),
        "latest_checkpoint": latest.map(|c| json!({
            "number": session.checkpoints.len(),
            "message": c.message,
            "timestamp": c.timestamp,
        })),
        "git": git,
    });
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
