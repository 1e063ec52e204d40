//! The registry served over MCP (stdio or Streamable HTTP), through rmcp's server handler.
//!
//! rmcp does the framing, initialization and capability negotiation; this module only maps
//! descriptors to MCP tools and `tools/call` to `Runtime::execute_call`. The `arguments`
//! object is handed over unchanged: no string round trip.

use std::net::SocketAddr;
use std::sync::Arc;

use kyro_core::{ApprovalToken, Call, Outcome, Runtime, ToolDescriptor};
use rmcp::Peer;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitRequestParams, ElicitationAction,
    ElicitationSchema, Implementation, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ProgressToken, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Map, Value};

/// Tools per `tools/list` page; the cursor is the index of the next tool.
const PAGE: usize = 100;

/// A registry version and its MCP tools.
type Listed = (u64, Arc<Vec<Tool>>);

/// The MCP face of a runtime.
#[derive(Clone)]
pub struct KyroServer {
    runtime: Runtime,
    /// The MCP tool list of the last snapshot served, rebuilt only when the version changes.
    listed: Arc<std::sync::Mutex<Option<Listed>>>,
    /// Registry versions, watched from the moment the server exists so that a change made
    /// while a client initializes is still announced.
    changes: tokio::sync::watch::Receiver<u64>,
}

impl KyroServer {
    /// A server for `runtime`.
    pub fn new(runtime: Runtime) -> KyroServer {
        let changes = runtime.registry().subscribe();
        KyroServer {
            runtime,
            changes,
            listed: Arc::default(),
        }
    }

    /// Serves on stdin/stdout until the client closes the stream.
    pub async fn serve_stdio(self) -> Result<(), crate::ServeError> {
        let running = self
            .serve(crate::frames::guarded_stdio())
            .await
            .map_err(|e| crate::ServeError::Mcp(e.to_string()))?;
        running
            .waiting()
            .await
            .map_err(|e| crate::ServeError::Mcp(e.to_string()))?;
        Ok(())
    }

    /// Serves Streamable HTTP at `http://ADDR/mcp` until the process ends. Only loopback
    /// addresses are accepted, and rmcp checks the `Host` header against them (DNS
    /// rebinding). The bound address is announced on stderr, so `:0` picks a free port.
    pub async fn serve_http(self, addr: SocketAddr) -> Result<(), crate::ServeError> {
        if !addr.ip().is_loopback() {
            return Err(crate::ServeError::NotLoopback(addr));
        }
        let service: StreamableHttpService<KyroServer, LocalSessionManager> = StreamableHttpService::new(
            move || Ok(self.clone()),
            Default::default(),
            StreamableHttpServerConfig::default(),
        );
        let router = axum::Router::new().nest_service("/mcp", service);
        let listener = tokio::net::TcpListener::bind(addr).await?;
        eprintln!("kyro: serving MCP on http://{}/mcp", listener.local_addr()?);
        axum::serve(listener, router).await?;
        Ok(())
    }
}

/// The MCP tool for a descriptor: same name, description, schemas; annotations from the effect.
pub fn mcp_tool(d: &ToolDescriptor) -> Tool {
    let a = d.annotations;
    let mut annotations = ToolAnnotations::new()
        .read_only(a.read_only_hint)
        .destructive(a.destructive_hint)
        .idempotent(a.idempotent_hint)
        .open_world(a.open_world_hint);
    annotations.title = d.title.clone();
    let mut tool = Tool::new(d.name.clone(), d.description.clone(), Arc::new(object(&d.input_schema)))
        .with_raw_output_schema(Arc::new(object(&d.output_schema)))
        .with_annotations(annotations);
    if let Some(title) = &d.title {
        tool = tool.with_title(title.clone());
    }
    tool
}

fn object(schema: &Value) -> Map<String, Value> {
    schema.as_object().cloned().unwrap_or_default()
}

/// A successful result: structured content with its JSON text; an image result
/// (`mime_type: image/*` with base64 `data`, as browser_screenshot returns) also comes as
/// an image content block, and its text names the image instead of repeating it.
fn ok_result(result: Value) -> CallToolResult {
    let image = result
        .get("mime_type")
        .and_then(Value::as_str)
        .filter(|m| m.starts_with("image/"))
        .zip(result.get("data").and_then(Value::as_str))
        .map(|(mime, data)| (mime.to_owned(), data.to_owned()));
    let Some((mime, data)) = image else {
        return CallToolResult::structured(result);
    };
    let mut text = result.clone();
    text["data"] = Value::String(format!("(the {mime} image is the next content block)"));
    let mut answer = CallToolResult::structured(result);
    answer.content = vec![ContentBlock::text(text.to_string()), ContentBlock::image(data, mime)];
    answer
}

/// A model-readable failure: text for the model, `isError: true`, no structured content
/// (it would not match the output schema).
fn tool_error(outcome: &Outcome) -> CallToolResult {
    let json = outcome.to_json();
    let message = match outcome {
        // An author's own kind goes first, as the model reads it: `empty_text: ...`.
        Outcome::ExecutionFailed {
            error: error @ kyro_core::ToolError::Custom { .. },
            ..
        } => error.to_string(),
        _ => json["error"]["message"]
            .as_str()
            .unwrap_or("the call failed")
            .to_owned(),
    };
    let mut text = format!(
        "{} ({}): {message}",
        json["outcome"].as_str().unwrap_or_default(),
        outcome.tool()
    );
    if let Some(violations) = json["error"]["violations"].as_array() {
        text.push_str("\nFix the arguments and call again; violations (JSON pointer: problem):");
        for v in violations {
            let pointer = v["pointer"]
                .as_str()
                .filter(|p| !p.is_empty())
                .unwrap_or("(the whole object)");
            text.push_str(&format!("\n- {pointer}: {}", v["message"].as_str().unwrap_or_default()));
        }
    }
    CallToolResult::error(vec![ContentBlock::text(text)])
}

impl ServerHandler for KyroServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new("kyro", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "kyro serves a catalog of typed tools over the workspace. Use tool_search to find a tool \
             and tool_describe for its full schema; arguments are validated against the schema and \
             violations come back as tool errors naming the field.",
        )
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let snapshot = self.runtime.registry().snapshot();
        let all = self.tools_of(&snapshot);
        let start = match request.and_then(|r| r.cursor) {
            None => 0,
            Some(cursor) => cursor
                .parse::<usize>()
                .ok()
                .filter(|&i| i < snapshot.descriptors().len())
                .ok_or_else(|| ErrorData::invalid_params(format!("unknown cursor `{cursor}`"), None))?,
        };
        let tools: Vec<Tool> = all.iter().skip(start).take(PAGE).cloned().collect();
        let end = start + tools.len();
        let mut page = ListToolsResult::with_all_items(tools);
        if end < snapshot.descriptors().len() {
            page.next_cursor = Some(end.to_string());
        }
        Ok(page)
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        let snapshot = self.runtime.registry().snapshot();
        snapshot.get(name).map(|t| mcp_tool(t.descriptor()))
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

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // rmcp spawns this future as a task; boxing the call keeps that task small (an
        // inline boundary future made every spawn copy kilobytes).
        Box::pin(self.answer(request, context)).await
    }
}

impl KyroServer {
    async fn answer(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let mut call = Call::new(
            request.name.into_owned(),
            Value::Object(request.arguments.unwrap_or_default()),
        );
        if let Some(token) = context.meta.get_progress_token() {
            call = call.with_progress(Arc::new(ProgressForwarder::start(context.peer.clone(), token)));
        }
        let mut outcome = self.run(call.clone(), &context).await;
        if let Outcome::ApprovalRequired {
            fingerprint, summary, ..
        } = &outcome
            && asks_for_approval(&context.peer)
            && approve(&context.peer, summary, fingerprint).await
        {
            outcome = self
                .run(call.approved(ApprovalToken::for_fingerprint(fingerprint)), &context)
                .await;
        }
        match outcome {
            Outcome::Ok { result, .. } => Ok(ok_result(result).into()),
            Outcome::UnknownTool { name, suggestions } => Err(ErrorData::invalid_params(
                format!("no tool is named `{name}`"),
                Some(serde_json::json!({ "suggestions": suggestions })),
            )),
            other => Ok(tool_error(&other).into()),
        }
    }
    /// The MCP tools of a snapshot, built once per registry version.
    fn tools_of(&self, snapshot: &kyro_core::Snapshot) -> Arc<Vec<Tool>> {
        let mut listed = self.listed.lock().unwrap_or_else(|p| p.into_inner());
        match listed.as_ref() {
            Some((version, tools)) if *version == snapshot.version() => tools.clone(),
            _ => {
                let tools = Arc::new(snapshot.descriptors().map(mcp_tool).collect::<Vec<_>>());
                *listed = Some((snapshot.version(), tools.clone()));
                tools
            }
        }
    }

    /// One pass through the boundary; a client cancellation stops the executor.
    async fn run(&self, call: Call, context: &RequestContext<RoleServer>) -> Outcome {
        Box::pin(
            self.runtime
                .execute_until(call, self.runtime.scope(), None, context.ct.cancelled()),
        )
        .await
        .outcome
    }
}

/// Whether the client declared it can be asked questions (form elicitation).
fn asks_for_approval(peer: &Peer<RoleServer>) -> bool {
    peer.peer_info()
        .is_some_and(|info| info.capabilities.elicitation.is_some())
}

/// Asks the client's user to approve a call, showing its summary and fingerprint.
async fn approve(peer: &Peer<RoleServer>, summary: &str, fingerprint: &str) -> bool {
    let Ok(schema) = ElicitationSchema::builder()
        .required_bool("approve")
        .description("Approve this one call")
        .build()
    else {
        return false;
    };
    let request = ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: format!("kyro asks to run {summary}\nfingerprint {fingerprint}\nApprove this call?"),
        requested_schema: schema,
    };
    match peer.create_elicitation(request).await {
        Ok(result) => {
            result.action == ElicitationAction::Accept
                && result.content.as_ref().and_then(|c| c.get("approve")) == Some(&Value::Bool(true))
        }
        Err(_) => false,
    }
}

/// Forwards progress reports to the client in order, as `notifications/progress`.
struct ProgressForwarder {
    reports: tokio::sync::mpsc::UnboundedSender<(f64, Option<f64>, Option<String>)>,
}

impl ProgressForwarder {
    fn start(peer: Peer<RoleServer>, token: ProgressToken) -> ProgressForwarder {
        let (reports, mut queue) = tokio::sync::mpsc::unbounded_channel::<(f64, Option<f64>, Option<String>)>();
        tokio::spawn(async move {
            while let Some((progress, total, message)) = queue.recv().await {
                let mut param = ProgressNotificationParam::new(token.clone(), progress);
                param.total = total;
                param.message = message;
                if peer.notify_progress(param).await.is_err() {
                    break;
                }
            }
        });
        ProgressForwarder { reports }
    }
}

impl kyro_core::Progress for ProgressForwarder {
    fn report(&self, done: f64, total: Option<f64>, message: Option<&str>) {
        let _ = self.reports.send((done, total, message.map(str::to_owned)));
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use kyro_core::receipt::{CanonicalCall, Observer, Receipt};
    use kyro_core::{
        CustomTool, Effect, OutcomeKind, Policy, Registry, Runtime, ToolContext, ToolDefinition, ToolError, Workspace,
    };
    use rmcp::model::{
        CallToolRequest, CallToolRequestParams, ClientCapabilities, ClientConfig, ClientRequest, ElicitRequestParams,
        ElicitResult, ElicitationAction, Implementation, ProgressNotificationParam, RequestMetaObject,
    };
    use rmcp::service::{NotificationContext, PeerRequestOptions, RequestContext, RunningService};
    use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
    use serde_json::{Value, json};
    use tokio::sync::mpsc;

    use super::KyroServer;

    /// A client that records notifications and answers elicitations as told.
    #[derive(Clone)]
    struct TestClient {
        events: mpsc::UnboundedSender<String>,
        elicitation: Option<bool>,
    }

    impl ClientHandler for TestClient {
        fn get_info(&self) -> ClientConfig {
            let capabilities = if self.elicitation.is_some() {
                ClientCapabilities::builder().enable_elicitation().build()
            } else {
                ClientCapabilities::default()
            };
            ClientConfig::new(capabilities, Implementation::new("test-client", "1"))
        }

        async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
            let _ = self.events.send("list_changed".into());
        }

        async fn on_progress(&self, params: ProgressNotificationParam, _context: NotificationContext<RoleClient>) {
            let _ = self.events.send(format!("progress {}", params.progress));
        }

        async fn create_elicitation(
            &self,
            request: ElicitRequestParams,
            _context: RequestContext<RoleClient>,
        ) -> Result<ElicitResult, ErrorData> {
            if let ElicitRequestParams::FormElicitationParams { message, .. } = &request {
                let _ = self.events.send(format!("asked: {message}"));
            }
            Ok(match self.elicitation {
                Some(answer) => ElicitResult::new(ElicitationAction::Accept).with_content(json!({"approve": answer})),
                None => ElicitResult::new(ElicitationAction::Decline),
            })
        }
    }

    #[derive(Default)]
    struct Receipts(Mutex<Vec<Receipt>>);

    impl Observer for Receipts {
        fn observe(&self, receipt: &Receipt, _call: Option<&CanonicalCall>) {
            self.0.lock().unwrap().push(receipt.clone());
        }
    }

    struct Harness {
        registry: Arc<Registry>,
        receipts: Arc<Receipts>,
        client: RunningService<RoleClient, TestClient>,
        events: mpsc::UnboundedReceiver<String>,
        _workspace: tempfile::TempDir,
    }

    async fn connect(elicitation: Option<bool>) -> Harness {
        let workspace = tempfile::tempdir().unwrap();
        let registry = Arc::new(Registry::with_catalog(kyro_tools::BUILTINS).unwrap());
        let receipts = Arc::new(Receipts::default());
        let runtime = Runtime::new(
            registry.clone(),
            Workspace::new(workspace.path()).unwrap(),
            &Policy::default(),
        )
        .unwrap()
        .with_observer(receipts.clone());
        let (server_io, client_io) = tokio::io::duplex(1 << 16);
        tokio::spawn(async move {
            if let Ok(running) = KyroServer::new(runtime).serve(server_io).await {
                let _ = running.waiting().await;
            }
        });
        let (tx, events) = mpsc::unbounded_channel();
        let client = TestClient {
            events: tx,
            elicitation,
        }
        .serve(client_io)
        .await
        .unwrap();
        Harness {
            registry,
            receipts,
            client,
            events,
            _workspace: workspace,
        }
    }

    fn slow_tool(dropped: Arc<AtomicBool>) -> ToolDefinition {
        struct Guard(Arc<AtomicBool>);
        impl Drop for Guard {
            fn drop(&mut self) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        ToolDefinition::custom(
            CustomTool {
                name: "slow".into(),
                description: "Report progress three times, then wait for `ms` milliseconds.".into(),
                category: "testing".into(),
                effect: Effect::None,
                input_schema: json!({"type": "object", "properties": {"ms": {"type": "integer", "description": "How long."}}, "required": ["ms"]}),
                output_schema: Some(json!({"type": "object"})),
            },
            move |args: Value, cx: &ToolContext| -> kyro_core::BoxFuture<'_, Result<Value, ToolError>> {
                let guard = Guard(dropped.clone());
                Box::pin(async move {
                    for step in 1..=3 {
                        cx.report_progress(f64::from(step), Some(3.0), Some("working"));
                    }
                    tokio::time::sleep(Duration::from_millis(args["ms"].as_u64().unwrap_or(0))).await;
                    drop(guard);
                    Ok(json!({}))
                })
            },
        )
        .unwrap()
    }

    async fn next(events: &mut mpsc::UnboundedReceiver<String>) -> String {
        tokio::time::timeout(Duration::from_secs(10), events.recv())
            .await
            .expect("an event")
            .unwrap()
    }

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn a_registry_change_notifies_the_client_and_the_list_follows() {
        rt().block_on(async {
            let mut h = connect(None).await;
            h.registry.register(slow_tool(Arc::default())).unwrap();
            assert_eq!(next(&mut h.events).await, "list_changed");
            let tools = h.client.list_all_tools().await.unwrap();
            assert!(tools.iter().any(|t| t.name == "slow"));
            h.registry.remove("slow").unwrap();
            assert_eq!(next(&mut h.events).await, "list_changed");
            assert!(
                !h.client
                    .list_all_tools()
                    .await
                    .unwrap()
                    .iter()
                    .any(|t| t.name == "slow")
            );
        });
    }

    #[test]
    fn progress_reaches_a_client_that_sent_a_token() {
        rt().block_on(async {
            let mut h = connect(None).await;
            h.registry.register(slow_tool(Arc::default())).unwrap();
            assert_eq!(next(&mut h.events).await, "list_changed");
            let mut meta = RequestMetaObject::default();
            meta.set_progress_token(rmcp::model::ProgressToken(rmcp::model::NumberOrString::Number(7)));
            let mut params =
                CallToolRequestParams::new("slow").with_arguments(json!({"ms": 0}).as_object().unwrap().clone());
            params.meta = Some(meta);
            let result = h.client.call_tool(params).await.unwrap();
            assert_ne!(result.is_error, Some(true));
            for step in 1..=3 {
                assert_eq!(next(&mut h.events).await, format!("progress {step}"));
            }
        });
    }

    #[test]
    fn a_cancelled_call_stops_the_executor_and_is_receipted() {
        rt().block_on(async {
            let mut h = connect(None).await;
            let dropped = Arc::new(AtomicBool::new(false));
            h.registry.register(slow_tool(dropped.clone())).unwrap();
            assert_eq!(next(&mut h.events).await, "list_changed");
            // A progress token lets the test see the executor start before it cancels.
            let mut meta = RequestMetaObject::default();
            meta.set_progress_token(rmcp::model::ProgressToken(rmcp::model::NumberOrString::Number(9)));
            let mut params =
                CallToolRequestParams::new("slow").with_arguments(json!({"ms": 60_000}).as_object().unwrap().clone());
            params.meta = Some(meta);
            let handle = h
                .client
                .peer()
                .send_cancellable_request(
                    ClientRequest::CallToolRequest(CallToolRequest::new(params)),
                    PeerRequestOptions::no_options(),
                )
                .await
                .unwrap();
            assert_eq!(next(&mut h.events).await, "progress 1");
            handle.cancel(Some("user pressed stop".into())).await.unwrap();
            for _ in 0..100 {
                if h.receipts.0.lock().unwrap().iter().any(|r| r.tool == "slow") {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            let receipts = h.receipts.0.lock().unwrap();
            let receipt = receipts
                .iter()
                .find(|r| r.tool == "slow")
                .expect("a receipt for the cancelled call");
            assert_eq!(receipt.outcome, OutcomeKind::Cancelled);
            assert!(dropped.load(Ordering::SeqCst), "the executor was stopped");
        });
    }

    async fn write(h: &Harness) -> rmcp::model::CallToolResult {
        let args = json!({"path": "approved.txt", "content": "yes"});
        h.client
            .call_tool(CallToolRequestParams::new("write_file").with_arguments(args.as_object().unwrap().clone()))
            .await
            .unwrap()
    }

    #[test]
    fn an_approval_is_asked_of_a_client_that_can_answer() {
        rt().block_on(async {
            let mut h = connect(Some(true)).await;
            let result = write(&h).await;
            assert_ne!(result.is_error, Some(true), "{result:?}");
            let asked = next(&mut h.events).await;
            assert!(asked.starts_with("asked: kyro asks to run write_file\n"), "{asked}");
            assert!(
                asked.contains("content: \"yes\"") && asked.contains("+yes"),
                "the content and its diff: {asked}"
            );
            assert!(asked.contains("fingerprint "), "{asked}");
            let receipts = h.receipts.0.lock().unwrap();
            let kinds: Vec<OutcomeKind> = receipts.iter().map(|r| r.outcome).collect();
            assert_eq!(kinds, [OutcomeKind::ApprovalRequired, OutcomeKind::Ok]);
        });
    }

    #[test]
    fn a_refused_or_unasked_approval_runs_nothing() {
        rt().block_on(async {
            for answer in [Some(false), None] {
                let h = connect(answer).await;
                let result = write(&h).await;
                assert_eq!(result.is_error, Some(true));
                let text = result.content[0].as_text().unwrap().text.clone();
                assert!(text.starts_with("approval_required"), "{text}");
                assert!(!h._workspace.path().join("approved.txt").exists());
            }
        });
    }

    #[test]
    fn a_long_list_is_paginated_and_a_bad_cursor_is_refused() {
        rt().block_on(async {
            let h = connect(None).await;
            for i in 0..150 {
                let mut tool = slow_tool(Arc::default()).descriptor().clone();
                tool.name = format!("slow_{i:03}");
                let definition = ToolDefinition::custom(
                    CustomTool {
                        name: tool.name.clone(),
                        description: tool.description.clone(),
                        category: "testing".into(),
                        effect: Effect::None,
                        input_schema: tool.input_schema.clone(),
                        output_schema: Some(tool.output_schema.clone()),
                    },
                    |_args: Value, _cx: &ToolContext| -> kyro_core::BoxFuture<'_, Result<Value, ToolError>> {
                        Box::pin(async { Ok(json!({})) })
                    },
                )
                .unwrap();
                h.registry.register(definition).unwrap();
            }
            let first = h.client.list_tools(None).await.unwrap();
            assert_eq!(first.tools.len(), super::PAGE);
            assert_eq!(first.next_cursor.as_deref(), Some("100"));
            let all = h.client.list_all_tools().await.unwrap();
            assert_eq!(all.len(), 150 + kyro_tools::BUILTINS.len());
            let bad = h
                .client
                .list_tools(Some(
                    rmcp::model::PaginatedRequestParams::default().with_cursor(Some("zz".into())),
                ))
                .await;
            assert!(bad.is_err());
        });
    }
}
