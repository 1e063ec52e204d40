//! The MCP server against rmcp's own client, in process.

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

mod each_call;

/// A client that records notifications and answers elicitations as told.
#[derive(Clone)]
struct TestClient {
    events: mpsc::UnboundedSender<String>,
    elicitation: Option<bool>,
    /// Answer "for the rest of the session" with each approval.
    for_session: bool,
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
        if let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = &request
        {
            let session = requested_schema.properties.contains_key("for_session");
            let _ = self
                .events
                .send(format!("asked: {message}{}", [" (once)", ""][usize::from(session)]));
        }
        Ok(match self.elicitation {
            Some(answer) => ElicitResult::new(ElicitationAction::Accept)
                .with_content(json!({"approve": answer, "for_session": self.for_session})),
            None => ElicitResult::new(ElicitationAction::Decline),
        })
    }
}

#[derive(Default)]
struct Receipts(Mutex<Vec<Receipt>>);

impl Observer for Receipts {
    fn observe(&self, receipt: &Receipt, _call: Option<&CanonicalCall>, _outcome: &kyro_core::Outcome) {
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
    connect_with(elicitation, false).await
}

async fn connect_with(elicitation: Option<bool>, for_session: bool) -> Harness {
    connect_under(elicitation, for_session, &Policy::default()).await
}

async fn connect_under(elicitation: Option<bool>, for_session: bool, policy: &Policy) -> Harness {
    let workspace = tempfile::tempdir().unwrap();
    let registry = Arc::new(Registry::with_catalog(kyro_tools::BUILTINS).unwrap());
    let receipts = Arc::new(Receipts::default());
    let runtime = Runtime::new(registry.clone(), Workspace::new(workspace.path()).unwrap(), policy)
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
        for_session,
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

/// A runtime over the built-ins in a workspace of its own (kept while the tempdir lives).
fn built_ins() -> (tempfile::TempDir, Arc<Registry>, Runtime) {
    let workspace = tempfile::tempdir().unwrap();
    let registry = Arc::new(Registry::with_catalog(kyro_tools::BUILTINS).unwrap());
    let runtime = Runtime::new(
        registry.clone(),
        Workspace::new(workspace.path()).unwrap(),
        &Policy::default(),
    )
    .unwrap();
    (workspace, registry, runtime)
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
        assert!(asked.starts_with("asked: Run write_file\n"), "{asked}");
        assert!(
            asked.contains("content: \"yes\"") && asked.contains("+yes"),
            "the content and its diff: {asked}"
        );
        assert!(asked.contains("fingerprint "), "{asked}");
        let receipts = h.receipts.0.lock().unwrap();
        // The person was asked from inside the boundary: one pass, one receipt.
        let kinds: Vec<_> = receipts.iter().map(|r| (r.outcome, r.decision.clone())).collect();
        assert_eq!(kinds, [(OutcomeKind::Ok, kyro_core::receipt::Decision::Approved)]);
    });
}

#[test]
fn an_approval_for_the_session_covers_later_calls_of_that_tool_only() {
    rt().block_on(async {
        for for_session in [true, false] {
            let mut h = connect_with(Some(true), for_session).await;
            for (name, content) in [("a.txt", "one"), ("b.txt", "two")] {
                let args = json!({"path": name, "content": content});
                let result = h
                    .client
                    .call_tool(
                        CallToolRequestParams::new("write_file").with_arguments(args.as_object().unwrap().clone()),
                    )
                    .await
                    .unwrap();
                assert_ne!(result.is_error, Some(true), "{result:?}");
            }
            let dir = json!({"path": "d"});
            let made = h
                .client
                .call_tool(
                    CallToolRequestParams::new("make_directory").with_arguments(dir.as_object().unwrap().clone()),
                )
                .await
                .unwrap();
            assert_ne!(made.is_error, Some(true), "{made:?}");
            let mut asked = Vec::new();
            while let Ok(event) = h.events.try_recv() {
                if let Some(message) = event.strip_prefix("asked: Run ") {
                    asked.push(message.split('\n').next().unwrap().to_owned());
                }
            }
            let expected = if for_session {
                vec!["write_file", "make_directory"]
            } else {
                vec!["write_file", "write_file", "make_directory"]
            };
            assert_eq!(asked, expected, "for_session {for_session}");
            assert_eq!(
                std::fs::read_to_string(h._workspace.path().join("b.txt")).unwrap(),
                "two"
            );
        }
    });
}

/// An upstream tool for `mcp_call` to reach, which notes that it ran.
fn upstream_tool(name: &str, ran: Arc<AtomicBool>) -> ToolDefinition {
    let tool = CustomTool {
        name: name.into(),
        description: "An upstream tool.".into(),
        category: kyro_tools::integration::UPSTREAM_CATEGORY.into(),
        effect: Effect::Exec,
        input_schema: json!({"type": "object"}),
        output_schema: Some(json!({"type": "object"})),
    };
    ToolDefinition::custom(tool, move |_, _| {
        ran.store(true, Ordering::SeqCst);
        Box::pin(async { Ok(json!({})) })
    })
    .unwrap()
}

#[test]
fn an_approval_of_mcp_call_for_the_session_approves_no_upstream_tool() {
    rt().block_on(async {
        let mut h = connect_with(Some(true), true).await;
        let (added, wiped) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
        h.registry.register(upstream_tool("up.add", added.clone())).unwrap();
        h.registry.register(upstream_tool("up.wipe", wiped.clone())).unwrap();
        let forward = |tool: &str| {
            let args = json!({"server": "up", "tool": tool, "arguments": {}});
            CallToolRequestParams::new("mcp_call").with_arguments(args.as_object().unwrap().clone())
        };
        // The person sees this mcp_call and approves it, and every later one, for the session.
        let result = h.client.call_tool(forward("add")).await.unwrap();
        assert_ne!(result.is_error, Some(true), "{result:?}");
        assert!(added.load(Ordering::SeqCst));
        // A later mcp_call runs on that answer, but its arguments were never seen: the
        // upstream tool's own rule (exec asks) decides the call it makes.
        let result = h.client.call_tool(forward("wipe")).await.unwrap();
        assert_eq!(result.is_error, Some(true), "{result:?}");
        let text = result.content[0].as_text().unwrap().text.clone();
        assert!(text.contains("forward_needs_approval"), "{text}");
        assert!(
            !wiped.load(Ordering::SeqCst),
            "a session's approval of mcp_call ran up.wipe"
        );
        let mut asked = 0;
        while let Ok(event) = h.events.try_recv() {
            asked += usize::from(event.starts_with("asked: "));
        }
        assert_eq!(asked, 1);
        let receipts = h.receipts.0.lock().unwrap();
        let decisions: Vec<(String, String)> = receipts
            .iter()
            .map(|r| {
                (
                    r.tool.clone(),
                    serde_json::to_value(&r.decision).unwrap()["kind"].to_string(),
                )
            })
            .collect();
        assert_eq!(
            decisions[decisions.len() - 2..],
            [
                ("up.wipe".to_owned(), "\"approval_required\"".to_owned()),
                ("mcp_call".to_owned(), "\"approved\"".to_owned())
            ]
        );
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
                    input_schema: tool.input_schema.value().clone(),
                    output_schema: Some(tool.output_schema.value().clone()),
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

#[test]
fn an_image_result_carries_its_bytes_once() {
    let data = "iVBORw0KGgoAAAANSUhEUgAAAAE=";
    let result = json!({"mime_type": "image/png", "data": data, "width": 1, "height": 1, "bytes": 20, "scale": 1.0, "url": "http://x/"});
    for mode in [super::TextMode::Readable, super::TextMode::Json] {
        let answer = super::text::ok_result(result.clone(), None, mode);
        let wire = serde_json::to_string(&answer).unwrap();
        assert_eq!(wire.matches(data).count(), 1, "{wire}");
        let image = answer.content[1].as_image().unwrap();
        assert_eq!((image.data.as_str(), image.mime_type.as_str()), (data, "image/png"));
        let structured = answer.structured_content.unwrap();
        assert_eq!(structured["data"], "(the image/png image is the next content block)");
        assert_eq!(structured["width"], 1);
    }
    // Audio (read_media_file) is an audio block the same way.
    let result = json!({"path": "a.mp3", "mime_type": "audio/mpeg", "data": "SUQz", "size": 3});
    let answer = super::text::ok_result(result, None, super::TextMode::Readable);
    let wire = serde_json::to_value(&answer).unwrap();
    assert_eq!(
        wire["content"][1],
        json!({"type": "audio", "data": "SUQz", "mimeType": "audio/mpeg"})
    );
    assert_eq!(
        wire["structuredContent"]["data"],
        "(the audio/mpeg audio is the next content block)"
    );
}

/// Over stdio, `tools/list` without a cursor is answered, after the first time, from the
/// bytes of rmcp's first answer kept for the registry version: they are what the handler
/// lists (asked with a cursor of 0, which only the handler answers), before and after the
/// registry changes.
#[test]
fn the_prepared_listing_is_the_handlers_and_follows_the_registry() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    rt().block_on(async {
        let (_workspace, registry, runtime) = built_ins();
        let (mut client, server_in) = tokio::io::duplex(1 << 20);
        let (server_out, client_out) = tokio::io::duplex(1 << 22);
        tokio::spawn(KyroServer::new(runtime).serve_lines(Some((Box::new(server_in), Box::new(server_out)))));
        let mut lines = tokio::io::BufReader::new(client_out).lines();
        let mut ask = async |id: u64, method: &str, params: Value| -> Value {
            let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
            client.write_all(format!("{message}\n").as_bytes()).await.unwrap();
            if method == "initialize" {
                let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
                client.write_all(format!("{initialized}\n").as_bytes()).await.unwrap();
            }
            loop {
                let line = lines.next_line().await.unwrap().unwrap();
                let answer: Value = serde_json::from_str(&line).unwrap();
                if answer["id"] == id {
                    return answer;
                }
            }
        };
        let init =
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}});
        ask(1, "initialize", init).await;
        let first = ask(2, "tools/list", json!({})).await;
        let prepared = ask(6, "tools/list", json!({})).await;
        assert_eq!(first, json!({"jsonrpc": "2.0", "id": 2, "result": prepared["result"]}));
        let handled = ask(3, "tools/list", json!({"cursor": "0"})).await;
        let keys = |v: &Value| v["result"].as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        assert_eq!(keys(&prepared), keys(&handled));
        let (a, b) = (
            prepared["result"]["tools"].as_array().unwrap(),
            handled["result"]["tools"].as_array().unwrap(),
        );
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert_eq!(x, y, "{}", x["name"]);
        }
        assert_eq!(prepared["result"], handled["result"]);
        // The first page: the whole catalog, or a page of it with the cursor of the next.
        assert_eq!(
            prepared["result"]["tools"].as_array().unwrap().len(),
            kyro_tools::BUILTINS.len().min(super::PAGE)
        );
        assert_eq!(
            prepared["result"]["nextCursor"].is_string(),
            kyro_tools::BUILTINS.len() > super::PAGE
        );
        registry.register(slow_tool(Arc::default())).unwrap();
        ask(7, "tools/list", json!({})).await;
        let prepared = ask(4, "tools/list", json!({})).await;
        let handled = ask(5, "tools/list", json!({"cursor": "0"})).await;
        assert_eq!(prepared["result"], handled["result"]);
        // Every page, the first prepared and the rest from the handler.
        let mut names: Vec<String> = Vec::new();
        let mut page = prepared;
        for id in 8.. {
            names.extend(
                page["result"]["tools"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|t| t["name"].as_str().unwrap().to_owned()),
            );
            let Some(cursor) = page["result"]["nextCursor"].as_str().map(str::to_owned) else {
                break;
            };
            page = ask(id, "tools/list", json!({"cursor": cursor})).await;
        }
        assert!(names.iter().any(|n| n == "slow"), "{names:?}");
    });
}

/// rmcp asks `get_tool` on every 2026-07-28 HTTP call: the answer is built once per
/// registry version, by name or alias, and follows a change.
#[test]
fn a_tool_asked_for_by_name_is_the_listed_one_and_follows_the_registry() {
    use rmcp::ServerHandler;
    let (_workspace, registry, runtime) = built_ins();
    let server = KyroServer::new(runtime);
    let listed = super::mcp_tool(registry.snapshot().get("read_file").unwrap().descriptor());
    assert_eq!(server.get_tool("read_file"), Some(listed.clone()));
    assert_eq!(
        server.get_tool("read_text_file"),
        Some(listed),
        "an alias names its tool"
    );
    assert_eq!(server.get_tool("nothing"), None);
    registry.register(slow_tool(Arc::default())).unwrap();
    assert_eq!(server.get_tool("slow").map(|t| t.name.to_string()), Some("slow".into()));
    registry.remove("slow").unwrap();
    assert_eq!(server.get_tool("slow"), None, "a removed tool is not kept");
}
