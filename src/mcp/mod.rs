//! The registry served over MCP (stdio or Streamable HTTP), through rmcp's server handler.
//!
//! rmcp does the framing, initialization and capability negotiation; this module only maps
//! descriptors to MCP tools and `tools/call` to `Runtime::execute_call`. The `arguments`
//! object is handed over unchanged: no string round trip.

#[cfg(feature = "http")]
mod auth;
mod elicit;
#[cfg(feature = "http")]
mod http;
#[cfg(feature = "http")]
mod http_limits;
#[cfg(feature = "http")]
mod inbox;
#[cfg(feature = "oauth")]
mod jwt;
mod listing;
#[cfg(feature = "oauth")]
mod oauth;
#[cfg(feature = "http")]
mod ops;
mod progress;
mod resources;
mod review_link;
mod search;
#[cfg(all(feature = "http", feature = "postgres"))]
mod session_store;
mod state_key;
mod tasks;
mod text;

pub use text::TextMode;

pub(crate) use elicit::PendingApprovals;
pub(crate) use listing::mcp_tool;
use progress::ProgressForwarder;
use tasks::{Ran, Tasks};
use text::{call_result, tool_error};

#[cfg(feature = "http")]
pub use auth::{HttpAuth, HttpAuthFlags};
#[cfg(feature = "http")]
pub(crate) use http::Access;
#[cfg(feature = "oauth")]
pub use oauth::{OAuth, OAuthFlags, ScopePolicy};
#[cfg(feature = "http")]
pub(crate) use ops::{JsonLog, Metrics};

use std::sync::Arc;

use kyro_core::policy::Scope;
use kyro_core::{Call, Outcome, Runtime, ToolDescriptor};
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, CompleteRequestParams,
    CompleteResult, CompletionInfo, ContentBlock, GetTaskParams, GetTaskResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, ServerCapabilities, ServerConfig, Tool, UpdateTaskParams,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;

/// Tools per `tools/list` page; the cursor is the index of the next tool.
const PAGE: usize = 100;

/// A registry version and the tools listed for it, per policy of callers with their own
/// (`None`: every other caller).
type Listed = std::collections::HashMap<Option<(Arc<str>, u64)>, (u64, Arc<Vec<Tool>>)>;

/// The MCP face of a runtime.
#[derive(Clone)]
pub(crate) struct KyroServer {
    runtime: Runtime,
    /// The MCP tool list of the last snapshot served, rebuilt only when the version changes.
    listed: Arc<std::sync::Mutex<Listed>>,
    /// The MCP tools asked for by name, likewise.
    described: Arc<listing::Described>,
    /// Registry versions, watched from the moment the server exists so that a change made
    /// while a client initializes is still announced.
    changes: tokio::sync::watch::Receiver<u64>,
    /// What `tools/list` shows; `None` lists every tool the policy may allow.
    selection: Option<Arc<crate::selection::Selection>>,
    /// What a successful call's text block holds.
    text: TextMode,
    /// List the discovery tools and `call_tool` only (`--catalog search`).
    search: bool,
    /// Tools the client's user approved for the rest of this session (one MCP session:
    /// the stdio connection, or one HTTP session).
    approved_for_session: Arc<std::sync::Mutex<std::collections::BTreeSet<String>>>,
    /// Browser origins allowed over HTTP besides the server's own (`--allow-origin`).
    #[cfg(feature = "http")]
    allowed_origins: Arc<[String]>,
    /// Requests in flight per session, HTTP sessions at once.
    transport: crate::Transport,
    /// Questions asked by `input_required` (2026-07-28), and the answers redeemed.
    approvals: Option<Arc<PendingApprovals>>,
    /// Long calls running or ended as tasks (MCP tasks extension).
    tasks: Arc<Tasks>,
    /// What an `approval_required` text adds ([`crate::Server::approval_hint`]).
    approval_hint: Option<Arc<str>>,
    /// How long a client may keep a list (tools, resources, templates) as fresh: the
    /// catalog changes only when the registry does, which nothing but an upstream server
    /// does once serving (0, never fresh, with upstreams or for a registry held elsewhere).
    list_ttl_ms: u64,
    /// Who the server says it is.
    identity: Arc<crate::Identity>,
}

impl KyroServer {
    /// A server for `runtime`.
    pub(crate) fn new(runtime: Runtime) -> KyroServer {
        let changes = runtime.registry().subscribe();
        KyroServer {
            runtime,
            changes,
            listed: Arc::default(),
            described: Arc::default(),
            selection: None,
            text: TextMode::default(),
            search: false,
            approved_for_session: Arc::default(),
            #[cfg(feature = "http")]
            allowed_origins: Arc::new([]),
            transport: crate::Transport::default(),
            approvals: None,
            tasks: Arc::default(),
            approval_hint: None,
            list_ttl_ms: 0,
            identity: Arc::new(crate::Identity::of_catalog(&[])),
        }
    }

    pub(crate) fn with_identity(mut self, identity: crate::Identity) -> KyroServer {
        self.identity = Arc::new(identity);
        self
    }

    /// Asks for approvals on 2026-07-28 by `input_required`, sealing their state with
    /// `approvals` (without, such a call gets `approval_required`).
    pub(crate) fn with_approvals(mut self, approvals: PendingApprovals) -> KyroServer {
        self.approvals = Some(Arc::new(approvals));
        self
    }

    /// Lists only the discovery tools and a `call_tool` meta-tool that runs any served tool
    /// by name (`--catalog search`), for a listing of a few kilobytes whatever the catalog.
    pub(crate) fn search_only(mut self, search: bool) -> KyroServer {
        self.search = search;
        self
    }

    /// Browser origins (`https://app.example:443`, `http://localhost:*`) whose pages may
    /// call the HTTP endpoint besides the server's own; see [`KyroServer::serve_http`].
    #[cfg(feature = "http")]
    pub(crate) fn with_allowed_origins(mut self, origins: impl IntoIterator<Item = String>) -> KyroServer {
        self.allowed_origins = origins.into_iter().collect();
        self
    }

    /// The policy key of a request's caller and the reading it is of, when it has a policy
    /// of its own (the HTTP edge set it, with its scope, as it was in force then).
    fn role_of(&self, context: &RequestContext<RoleServer>) -> Option<(Arc<str>, u64)> {
        elicit::role_of(context).map(|(key, reading, _)| (key, reading))
    }

    /// The scope a request's calls run in: its caller's own policy's, or the server's.
    fn scope_of<'a>(&'a self, context: &'a RequestContext<RoleServer>) -> &'a Scope {
        elicit::role_of(context).map_or(self.runtime.scope(), |(_, _, scope)| scope)
    }

    pub(crate) fn with_list_ttl_ms(mut self, ttl_ms: u64) -> KyroServer {
        self.list_ttl_ms = ttl_ms;
        self
    }

    pub(crate) fn with_approval_hint(mut self, hint: Option<String>) -> KyroServer {
        self.approval_hint = hint.map(Into::into);
        self
    }

    pub(crate) fn with_text(mut self, text: TextMode) -> KyroServer {
        self.text = text;
        self
    }

    /// Serves only what `selection` serves (the rest leaves the registry) and lists only
    /// what it lists.
    pub(crate) fn with_selection(mut self, selection: crate::selection::Selection) -> KyroServer {
        selection.apply(&self.runtime);
        // Taking tools out before any client connected is no change to announce.
        self.changes.borrow_and_update();
        self.selection = Some(Arc::new(selection));
        self
    }

    /// The transport's bounds (see [`crate::Transport`]).
    pub(crate) fn with_transport(mut self, transport: crate::Transport) -> KyroServer {
        self.transport = transport;
        self
    }

    fn max_in_flight(&self) -> usize {
        self.transport.max_in_flight as usize
    }

    /// Serves on stdin/stdout until the client closes the stream; the answers rmcp wrote
    /// before it stopped are flushed to stdout (for at most 5 s) before this returns.
    /// Receipts held back by the observers are written before each write of answers, at
    /// the end, and on SIGTERM or SIGINT (which then end the process, status 143 or 130).
    pub(crate) async fn serve_stdio(self) -> Result<(), crate::ServeError> {
        self.serve_lines(None).await
    }

    /// [`KyroServer::serve_stdio`], or over `streams` (input, output) for tests.
    pub(crate) async fn serve_lines(
        self,
        streams: Option<(
            Box<dyn tokio::io::AsyncRead + Send + Unpin>,
            Box<dyn tokio::io::AsyncWrite + Send + Unpin>,
        )>,
    ) -> Result<(), crate::ServeError> {
        let runtime = self.runtime.clone();
        let flusher = runtime.clone();
        let registry = runtime.registry().clone();
        let hooks = crate::frames::Hooks {
            before_write: Box::new(move || flusher.flush_observers()),
            version: Some(Box::new(move || registry.snapshot().version())),
        };
        let (transport, writer) = match streams {
            None => crate::frames::guarded_stdio(self.max_in_flight(), hooks),
            Some((input, output)) => crate::frames::guarded(input, output, self.max_in_flight(), hooks),
        };
        let served = async {
            let running = self
                .serve(transport)
                .await
                .map_err(|e| crate::ServeError::Mcp(e.to_string()))?;
            running
                .waiting()
                .await
                .map_err(|e| crate::ServeError::Mcp(e.to_string()))?;
            // rmcp's side is closed now; the writer ends once it has written what was queued
            // (and once stdin has ended, which holds the other sender).
            let _ = tokio::time::timeout(std::time::Duration::from_secs(5), writer).await;
            Ok(())
        };
        let ended = tokio::select! {
            ended = served => ended,
            status = signalled() => {
                runtime.flush_observers();
                std::process::exit(status);
            }
        };
        runtime.flush_observers();
        ended
    }
}

/// Resolves with the exit status for SIGTERM (143) or SIGINT (130) when one arrives;
/// never when the handlers cannot be installed.
async fn signalled() -> i32 {
    use tokio::signal::unix::{SignalKind, signal};
    match (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) {
        (Ok(mut term), Ok(mut int)) => tokio::select! {
            _ = term.recv() => 143,
            _ = int.recv() => 130,
        },
        _ => std::future::pending().await,
    }
}

impl ServerHandler for KyroServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_resources()
                .enable_completions()
                .enable_tasks()
                .build(),
        )
        .with_server_info(self.identity.implementation())
        .with_instructions(self.identity.instructions(self.search, &|name| {
            self.runtime.registry().snapshot().get(name).is_some()
        }))
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let snapshot = self.runtime.registry().snapshot();
        let all = self.tools_of(&snapshot, &context);
        let start = match request.and_then(|r| r.cursor) {
            None => 0,
            Some(cursor) => cursor
                .parse::<usize>()
                .ok()
                .filter(|&i| i < all.len())
                .ok_or_else(|| ErrorData::invalid_params(format!("unknown cursor `{cursor}`"), None))?,
        };
        let tools: Vec<Tool> = all.iter().skip(start).take(PAGE).cloned().collect();
        let end = start + tools.len();
        let mut page = ListToolsResult::with_all_items(tools);
        if end < all.len() {
            page.next_cursor = Some(end.to_string());
        }
        // What is listed follows the policy, so it is the requesting user's to keep.
        (page.ttl_ms, page.cache_scope) = (Some(self.list_ttl_ms), Some(CacheScope::Private));
        Ok(page)
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.described.get(&self.runtime.registry().snapshot(), name)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        // Registry changes become `notifications/tools/list_changed` for this session, until
        // the client goes away.
        let mut changes = self.changes.clone();
        let peer = context.peer;
        tokio::spawn(async move {
            while changes.changed().await.is_ok() {
                if peer.notify_tool_list_changed().await.is_err() {
                    break;
                }
            }
        });
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let scope = self.scope_of(&context);
        let values = match &request.r#ref {
            rmcp::model::Reference::Resource(template)
                if resources::is_path_completion(&template.uri, &request.argument.name) =>
            {
                resources::complete_path(&self.runtime, scope, &request.argument.value)
            }
            _ => Vec::new(),
        };
        let info = CompletionInfo::new(values).map_err(|e| ErrorData::internal_error(e, None))?;
        Ok(CompleteResult::new(info))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let snapshot = self.runtime.registry().snapshot();
        let mut list = ListResourcesResult::with_all_items(resources::listed(
            &self.tools_of(&snapshot, &context),
            self.runtime.approval_store().is_some(),
        ));
        (list.ttl_ms, list.cache_scope) = (Some(self.list_ttl_ms), Some(CacheScope::Private));
        Ok(list)
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let scope = self.scope_of(&context);
        let mut list = ListResourceTemplatesResult::with_all_items(resources::templates(&self.runtime, scope));
        (list.ttl_ms, list.cache_scope) = (Some(self.list_ttl_ms), Some(CacheScope::Private));
        Ok(list)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let caller = elicit::caller_of(&context);
        let runtime = (&self.runtime, self.scope_of(&context));
        let contents = Box::pin(resources::read(runtime, &request.uri, &caller)).await?;
        Ok(ReadResourceResult::new(vec![contents]).into())
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let task = self
            .tasks
            .get(&request.task_id, &elicit::caller_of(&context), &self.runtime)
            .await?;
        Ok(GetTaskResult::new(task))
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks
            .cancel(&request.task_id, &elicit::caller_of(&context), &self.runtime)
            .await
    }

    /// No task of kyro's asks for input while it runs: a known task takes the answer and
    /// ignores it, as the extension says of keys it did not ask for.
    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks
            .get(&request.task_id, &elicit::caller_of(&context), &self.runtime)
            .await
            .map(drop)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // rmcp spawns this future as a task; boxing the call keeps that task small (an
        // inline boundary future made every spawn copy kilobytes).
        if self.search && request.name == search::CALL_TOOL {
            return match search::unwrap(request.arguments.as_ref()) {
                Ok(mut inner) => {
                    // A 2026-07-28 retry's answer and state belong to the call it stands for.
                    inner.request_state = request.request_state;
                    inner.input_responses = request.input_responses;
                    Box::pin(self.answer(inner, context)).await
                }
                Err(problem) => Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                    "invalid_arguments (call_tool): {problem}"
                ))])
                .into()),
            };
        }
        Box::pin(self.answer(request, context)).await
    }
}

impl KyroServer {
    async fn answer(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let linked = review_link::answered(request.input_responses.as_ref());
        let retry = (request.request_state, request.input_responses);
        let person = Arc::new(elicit::Person::new(
            &context,
            self.approvals.as_ref(),
            &self.approved_for_session,
            retry,
        ));
        let mut call = Call::new(
            request.name.into_owned(),
            Value::Object(request.arguments.unwrap_or_default()),
        )
        .by(elicit::caller_of(&context))
        .asking(person.clone());
        if let Some(Value::String(traceparent)) = context.meta.0.get("traceparent") {
            call = call.in_trace(traceparent);
        }
        if let Some(token) = context.meta.get_progress_token() {
            call = call.with_progress(Arc::new(ProgressForwarder::start(context.peer.clone(), token)));
        }
        // One pass: a person is asked from inside the boundary when the call needs it.
        let ran = self.run_or_task(call, &context).await;
        // The grant the person chose stands once the call it came with passed.
        let passed = match &ran {
            Ran::Task(_) => true,
            Ran::Outcome(o) => !matches!(
                o,
                Outcome::Denied { .. } | Outcome::ApprovalRequired { .. } | Outcome::ApprovalPending { .. }
            ),
        };
        if let (true, Some(grant), Some(approvals)) = (passed, person.grant(), &self.approvals) {
            approvals.keep(grant).await;
        }
        if let Ran::Outcome(pending) = &ran
            && let Some(link) = review_link::to_the_inbox(&context, pending, linked)
        {
            return Ok(CallToolResponse::InputRequired(link));
        }
        match ran {
            Ran::Task(task) => Ok(CallToolResponse::Task(task)),
            Ran::Outcome(outcome @ Outcome::ApprovalRequired { .. }) => match person.question() {
                Some(question) => Ok(CallToolResponse::InputRequired(question)),
                None => self.finish(outcome),
            },
            Ran::Outcome(outcome) => self.finish(outcome),
        }
    }

    /// One pass through the boundary, as a task when the tool allows it and the client
    /// declared the tasks extension (the answer comes once the call is authorized).
    async fn run_or_task(&self, call: Call, context: &RequestContext<RoleServer>) -> Ran {
        let as_task = context.client_capabilities().is_some_and(|c| c.supports_tasks())
            && (self.runtime.registry().snapshot().get(&call.tool)).is_some_and(|t| t.descriptor().task);
        if !as_task {
            return Ran::Outcome(self.run(call, context).await);
        }
        let (text, remote) = (self.text, self.remote(&call.tool));
        let cancel = context.ct.cancelled();
        let scope = self.scope_of(context).clone();
        let answer = move |o| call_result(o, text, remote);
        Box::pin(self.tasks.run((&self.runtime, scope), call, cancel, answer)).await
    }

    /// Whether `tool`'s results are a remote party's text (its effect is `network`).
    fn remote(&self, tool: &str) -> bool {
        let tools = self.runtime.registry().snapshot();
        tools
            .get(tool)
            .is_some_and(|t| t.descriptor().effect == kyro_core::Effect::Network)
    }

    /// The answer to `tools/call` for an outcome.
    fn finish(&self, outcome: Outcome) -> Result<CallToolResponse, ErrorData> {
        match outcome {
            Outcome::Ok { ref tool, .. } | Outcome::ExecutionFailed { ref tool, .. } => {
                let remote = self.remote(tool);
                Ok(call_result(outcome, self.text, remote).into())
            }
            Outcome::UnknownTool { name, suggestions } => Err(ErrorData::invalid_params(
                format!("no tool is named `{name}`"),
                Some(serde_json::json!({ "suggestions": suggestions })),
            )),
            other => {
                let mut answer = tool_error(&other, self.text);
                if let (Outcome::ApprovalRequired { tool, fingerprint, .. }, Some(hint)) = (&other, &self.approval_hint)
                {
                    let hint = hint.replace("{tool}", tool).replace("{fingerprint}", fingerprint);
                    answer.content.push(ContentBlock::text(hint));
                }
                Ok(answer.into())
            }
        }
    }
    /// The MCP tools of a snapshot, built once per registry version.
    fn tools_of(&self, snapshot: &kyro_core::Snapshot, context: &RequestContext<RoleServer>) -> Arc<Vec<Tool>> {
        let own = self.role_of(context);
        let scope = self.scope_of(context);
        let mut listed = self.listed.lock().unwrap_or_else(|p| p.into_inner());
        match listed.get(&own) {
            Some((version, tools)) if *version == snapshot.version() => tools.clone(),
            _ => {
                let shown = |d: &&ToolDescriptor| match &self.selection {
                    _ if self.search => d.category == "discovery" && scope.may_allow(d),
                    Some(selection) => selection.lists(d, scope),
                    None => scope.may_allow(d),
                };
                let mut tools: Vec<Tool> = snapshot.descriptors().filter(shown).map(mcp_tool).collect();
                if self.search {
                    // A few kilobytes whatever the catalog: no output schemas here
                    // (tool_describe gives every tool's).
                    for tool in &mut tools {
                        tool.output_schema = None;
                    }
                    tools.push(search::call_tool());
                }
                let tools = Arc::new(tools);
                listed.insert(own, (snapshot.version(), tools.clone()));
                tools
            }
        }
    }

    /// One pass through the boundary; a client cancellation stops the executor.
    async fn run(&self, call: Call, context: &RequestContext<RoleServer>) -> Outcome {
        let scope = self.scope_of(context);
        Box::pin(self.runtime.execute_until(call, scope, None, context.ct.cancelled()))
            .await
            .outcome
    }
}

#[cfg(test)]
mod tests;
