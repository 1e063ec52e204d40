//! `kyro mcp`: the registry served over MCP on stdio, through rmcp's server handler.
//!
//! rmcp does the framing, initialization and capability negotiation; this module only maps
//! descriptors to MCP tools and `tools/call` to `Runtime::execute_call`. The `arguments`
//! object is handed over unchanged: no string round trip.

use std::net::SocketAddr;
use std::sync::Arc;

use kyro_core::{Call, Outcome, Runtime, ToolDescriptor};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Map, Value};

/// The MCP face of a runtime.
#[derive(Clone)]
pub struct KyroServer {
    runtime: Runtime,
}

impl KyroServer {
    /// A server for `runtime`.
    pub fn new(runtime: Runtime) -> KyroServer {
        KyroServer { runtime }
    }

    /// Serves on stdin/stdout until the client closes the stream.
    pub async fn serve_stdio(self) -> anyhow::Result<()> {
        let running = self.serve(rmcp::transport::stdio()).await?;
        running.waiting().await?;
        Ok(())
    }

    /// Serves Streamable HTTP at `http://ADDR/mcp` until the process ends. Only loopback
    /// addresses are accepted, and rmcp checks the `Host` header against them (DNS
    /// rebinding). The bound address is announced on stderr, so `:0` picks a free port.
    pub async fn serve_http(self, addr: SocketAddr) -> anyhow::Result<()> {
        anyhow::ensure!(
            addr.ip().is_loopback(),
            "--http serves on loopback only (127.0.0.1 or [::1]); `{addr}` is not"
        );
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

/// A model-readable failure: text for the model, `isError: true`, no structured content
/// (it would not match the output schema).
fn tool_error(outcome: &Outcome) -> CallToolResult {
    let json = outcome.to_json();
    let message = json["error"]["message"]
        .as_str()
        .unwrap_or("the call failed")
        .to_owned();
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
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let snapshot = self.runtime.registry().snapshot();
        Ok(ListToolsResult::with_all_items(
            snapshot.descriptors().map(mcp_tool).collect(),
        ))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        let snapshot = self.runtime.registry().snapshot();
        snapshot.get(name).map(|t| mcp_tool(t.descriptor()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let outcome = self
            .runtime
            .execute_call(Call::new(request.name.into_owned(), arguments))
            .await;
        match outcome {
            Outcome::Ok { result, .. } => Ok(CallToolResult::structured(result).into()),
            Outcome::UnknownTool { name, suggestions } => Err(ErrorData::invalid_params(
                format!("no tool is named `{name}`"),
                Some(serde_json::json!({ "suggestions": suggestions })),
            )),
            other => Ok(tool_error(&other).into()),
        }
    }
}
