//! The upstream this test binary serves (`upstream serve`): an rmcp server on stdio, its
//! behaviour set by the variables its spec gives it (see the test binary's root).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Map, Value, json};

fn object(v: Value) -> Arc<Map<String, Value>> {
    Arc::new(v.as_object().cloned().unwrap())
}

/// The upstream's tools: six that register and three that must be refused; after `grow`,
/// `extra` appears and `wipe` is gone.
fn upstream_tools(grown: bool) -> Vec<Tool> {
    let add_input = json!({
        "type": "object",
        "properties": {
            "a": { "type": "integer", "description": "First addend." },
            "b": { "type": "integer", "description": "Second addend." }
        },
        "required": ["a", "b"]
    });
    let text_input = json!({
        "type": "object",
        "properties": { "text": { "type": "string", "description": "What to say." } },
        "required": ["text"]
    });
    let mut tools = vec![
        Tool::new("grow", "Change the tool list.", object(json!({ "type": "object" }))),
        Tool::new("add", "Add two integers.", object(add_input.clone())).with_raw_output_schema(object(json!({
            "type": "object",
            "properties": { "sum": { "type": "integer" } },
            "required": ["sum"]
        }))),
        Tool::new("echo", "Say the text back.", object(text_input.clone())),
        Tool::new("fail", "Always fails.", object(json!({ "type": "object" }))),
        // Claims to be read-only; kyro must not believe it.
        Tool::new("wipe", "Claims to be harmless.", object(json!({ "type": "object" })))
            .with_annotations(ToolAnnotations::new().read_only(true).destructive(false)),
        Tool::new("BadName", "Uppercase name.", object(json!({ "type": "object" }))),
        Tool::new(
            "refs",
            "Uses $ref.",
            object(json!({
                "type": "object",
                "properties": { "x": { "$ref": "#/$defs/X", "description": "An x." } },
                "$defs": { "X": { "type": "string" } }
            })),
        ),
        Tool::new(
            "nodesc",
            "A property without a description.",
            object(json!({ "type": "object", "properties": { "x": { "type": "string" } } })),
        ),
        // What the reference servers (zod-to-json-schema) emit: draft-07, no descriptions.
        Tool::new(
            "draft7",
            "An older dialect.",
            object(json!({
                "$schema": "http://json-schema.org/draft-07/schema#",
                "type": "object",
                "properties": { "path": { "type": "string" } },
                "required": ["path"],
                "additionalProperties": false
            })),
        ),
        // Tuple-form `items` means something else in 2020-12.
        Tool::new(
            "tuple7",
            "A draft-07 tuple.",
            object(json!({
                "$schema": "http://json-schema.org/draft-07/schema#",
                "type": "object",
                "properties": { "pair": { "type": "array", "items": [{ "type": "string" }, { "type": "integer" }] } }
            })),
        ),
        Tool::new(
            "draft4",
            "A dialect too old.",
            object(json!({ "$schema": "http://json-schema.org/draft-04/schema#", "type": "object" })),
        ),
    ];
    tools.push(Tool::new(
        "env",
        "Its environment, a NAME=VALUE line each.",
        object(json!({ "type": "object" })),
    ));
    tools.push(Tool::new(
        "spawn",
        "Start `sleep MARKER` in the background and return.",
        object(json!({
            "type": "object",
            "properties": { "marker": { "type": "string", "description": "sleep's argument." } },
            "required": ["marker"]
        })),
    ));
    if grown {
        tools.retain(|t| t.name != "wipe");
        tools.push(Tool::new("extra", "Appeared later.", object(text_input)));
    }
    tools
}

struct Upstream {
    log: Option<PathBuf>,
    lists: Option<PathBuf>,
    grown: Arc<AtomicBool>,
    /// What `spawn` started, never waited for: they run until something kills them.
    started: Mutex<Vec<Child>>,
}

/// Appends `line` to `path`, when there is one (and it can be written).
fn append(path: Option<&Path>, line: &str) -> bool {
    let Some(path) = path else { return true };
    let Ok(mut file) = std::fs::OpenOptions::new().create(true).append(true).open(path) else {
        return false;
    };
    writeln!(file, "{line}").is_ok()
}

impl ServerHandler for Upstream {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        append(self.lists.as_deref(), "list");
        Ok(ListToolsResult::with_all_items(upstream_tools(
            self.grown.load(Ordering::SeqCst),
        )))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = Value::Object(request.arguments.clone().unwrap_or_default());
        // Under a read-only sandbox the log cannot be written; the call still answers.
        if !append(self.log.as_deref(), &format!("{} {args}", request.name)) {
            return Ok(CallToolResult::success(vec![ContentBlock::text("unlogged")]).into());
        }
        let result = match request.name.as_ref() {
            "add" => {
                let sum = args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0);
                CallToolResult::structured(json!({ "sum": sum }))
            }
            "echo" => CallToolResult::success(vec![ContentBlock::text(args["text"].as_str().unwrap_or(""))]),
            "fail" => CallToolResult::error(vec![ContentBlock::text("boom")]),
            "wipe" => CallToolResult::success(vec![ContentBlock::text("wiped")]),
            "extra" => CallToolResult::success(vec![ContentBlock::text("extra")]),
            "env" => {
                let vars: Vec<String> = std::env::vars().map(|(k, v)| format!("{k}={v}")).collect();
                CallToolResult::success(vec![ContentBlock::text(vars.join("\n"))])
            }
            "spawn" => {
                let marker = args["marker"].as_str().unwrap_or("1");
                let started = Command::new("sleep")
                    .arg(marker)
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn();
                match started {
                    Ok(child) => {
                        self.started.lock().unwrap().push(child);
                        CallToolResult::success(vec![ContentBlock::text("spawned")])
                    }
                    Err(e) => CallToolResult::error(vec![ContentBlock::text(format!("sleep: {e}"))]),
                }
            }
            "grow" => {
                self.grown.store(true, Ordering::SeqCst);
                let _ = context.peer.notify_tool_list_changed().await;
                CallToolResult::success(vec![ContentBlock::text("grown")])
            }
            "draft7" => CallToolResult::success(vec![ContentBlock::text(args["path"].as_str().unwrap_or(""))]),
            other => return Err(ErrorData::invalid_params(format!("no tool {other}"), None)),
        };
        Ok(result.into())
    }
}

pub(super) fn serve() {
    let path = |name: &str| std::env::var_os(name).map(PathBuf::from);
    let millis = |name: &str| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .map(Duration::from_millis)
    };
    let grown = Arc::new(AtomicBool::new(false));
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let running = Upstream {
                log: path("UPSTREAM_LOG"),
                lists: path("UPSTREAM_LIST_LOG"),
                grown: grown.clone(),
                started: Mutex::default(),
            }
            .serve(rmcp::transport::stdio())
            .await
            .unwrap();
            if let Some(signal) = path("UPSTREAM_GROW_WHEN") {
                let peer = running.peer().clone();
                tokio::spawn(async move {
                    while !signal.exists() {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                    grown.store(true, Ordering::SeqCst);
                    let _ = peer.notify_tool_list_changed().await;
                });
            }
            let _ = running.waiting().await;
        });
    // A server that does not end when its client goes: only a signal ends it.
    if let Some(linger) = millis("UPSTREAM_LINGER_MS") {
        std::thread::sleep(linger);
    }
}
