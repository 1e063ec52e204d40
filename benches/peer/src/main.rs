//! The peer: rmcp's idiomatic server, with the same tools over stdio or Streamable HTTP.

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{ServerCapabilities, ServerConfig};
use axum::response::IntoResponse;
use rmcp::{ServerHandler, ServiceExt, tool, tool_handler, tool_router};

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    /// The text.
    text: String,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct AddArgs {
    /// First addend.
    a: i64,
    /// Second addend.
    b: i64,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct ReadArgs {
    /// Path of the file.
    path: String,
    /// First line to return, 1-based; default 1.
    offset: Option<usize>,
    /// Most lines to return; default 2000.
    limit: Option<usize>,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct SlowArgs {
    /// How long to block, in milliseconds.
    ms: u64,
}

#[derive(Debug, Clone)]
struct Peer {
    #[allow(dead_code)]
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Peer {
    #[tool(description = "Echo the text back")]
    async fn echo(&self, Parameters(EchoArgs { text }): Parameters<EchoArgs>) -> String {
        text
    }

    #[tool(description = "Add two integers")]
    async fn add(&self, Parameters(AddArgs { a, b }): Parameters<AddArgs>) -> String {
        (a + b).to_string()
    }

    #[tool(description = "Read lines of a UTF-8 text file")]
    async fn read_file(&self, Parameters(ReadArgs { path, offset, limit }): Parameters<ReadArgs>) -> String {
        match std::fs::read_to_string(path) {
            Ok(text) => text
                .split_inclusive('\n')
                .skip(offset.unwrap_or(1).saturating_sub(1))
                .take(limit.unwrap_or(2000))
                .collect(),
            Err(e) => e.to_string(),
        }
    }

    #[tool(description = "Block the thread for a while (plain blocking code)")]
    async fn slow(&self, Parameters(SlowArgs { ms }): Parameters<SlowArgs>) -> String {
        std::thread::sleep(std::time::Duration::from_millis(ms));
        "done".into()
    }
}

#[tool_handler]
impl ServerHandler for Peer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let [_, flag, addr] = args.as_slice()
        && flag == "--http"
    {
        return http(addr);
    }
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let peer = Peer { tool_router: Peer::tool_router() };
        let running = peer.serve(rmcp::transport::stdio()).await.unwrap();
        let _ = running.waiting().await;
    });
}

/// Streamable HTTP at `http://ADDR/mcp` as rmcp's examples serve it (its default
/// configuration: 2026-07-28 requests stateless, older ones in sessions), every request
/// needing `Authorization: Bearer $PEER_TOKEN`; one runtime thread a core, as kyro's HTTP.
fn http(addr: &str) {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
    let token = std::env::var("PEER_TOKEN").expect("PEER_TOKEN");
    let expected = std::sync::Arc::new(format!("Bearer {token}"));
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(async move {
        let service = StreamableHttpService::new(
            || Ok(Peer { tool_router: Peer::tool_router() }),
            std::sync::Arc::new(LocalSessionManager::default()),
            StreamableHttpServerConfig::default(),
        );
        let router = axum::Router::new().nest_service("/mcp", service).layer(axum::middleware::from_fn(
            move |request: axum::extract::Request, next: axum::middleware::Next| {
                let expected = expected.clone();
                async move {
                    let authorized = request
                        .headers()
                        .get("authorization")
                        .is_some_and(|v| v.as_bytes() == expected.as_bytes());
                    if authorized {
                        next.run(request).await
                    } else {
                        axum::http::StatusCode::UNAUTHORIZED.into_response()
                    }
                }
            },
        ));
        // TCP_NODELAY, as axum documents for a server answering on kept-alive connections.
        use axum::serve::ListenerExt;
        let listener = tokio::net::TcpListener::bind(addr).await.unwrap().tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        axum::serve(listener, router).await.unwrap();
    });
}
