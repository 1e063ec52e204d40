//! Streamable HTTP: the endpoint at `/mcp`, behind the bounds (sessions, requests in
//! flight, body size), the bearer token and the Origin check.

use std::net::SocketAddr;
use std::sync::Arc;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use super::{HttpAuth, KyroServer, auth, http_limits};

impl KyroServer {
    /// Serves Streamable HTTP at `http://ADDR/mcp` until the process ends. Only loopback
    /// addresses are accepted, and rmcp checks the `Host` header against them (DNS
    /// rebinding); every request must carry `auth`'s bearer token. A request a browser
    /// sends from a page (it carries `Origin`) is answered 403 unless the page is the
    /// server's own origin or one of [`KyroServer::with_allowed_origins`]: with
    /// `--no-auth`, any web page open in the user's browser could otherwise call tools. The
    /// bound address is announced on stderr (so `:0` picks a free port), then the token
    /// when kyro made it.
    pub(crate) async fn serve_http(self, addr: SocketAddr, auth: HttpAuth) -> Result<(), crate::ServeError> {
        if !addr.ip().is_loopback() {
            return Err(crate::ServeError::NotLoopback(addr));
        }
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let bound = listener.local_addr()?;
        let mut origins = own_origins(bound);
        origins.extend(self.allowed_origins.iter().cloned());
        let limits = self.transport;
        let sessions = Arc::new(LocalSessionManager::default());
        let service: StreamableHttpService<KyroServer, LocalSessionManager> = StreamableHttpService::new(
            // Each HTTP session has its own session approvals.
            move || {
                let mut session = self.clone();
                session.approved_for_session = Arc::default();
                Ok(session)
            },
            sessions.clone(),
            StreamableHttpServerConfig::default()
                .with_max_request_body_bytes(crate::frames::MAX_FRAME)
                .with_allowed_origins(origins)
                .enforce_origin_validation(),
        );
        let bounds = Arc::new(http_limits::HttpLimits::new(
            sessions,
            limits.max_sessions as usize,
            limits.max_in_flight as usize,
            crate::frames::MAX_FRAME,
        ));
        let mut router = axum::Router::new()
            .nest_service("/mcp", service)
            .layer(axum::middleware::from_fn_with_state(bounds, http_limits::limit));
        // One write, and a closed stderr is no reason to stop serving.
        let mut announce = format!("kyro: serving MCP on http://{bound}/mcp\n");
        match &auth {
            HttpAuth::Generated(token) => announce.push_str(&format!(
                "kyro: bearer token {token} (send `Authorization: Bearer {token}`)\n"
            )),
            HttpAuth::None => {
                announce.push_str("kyro: --no-auth: any local process can use this server, approvals included\n");
            }
            HttpAuth::Token(_) | HttpAuth::Callers { .. } => {}
        }
        if let Some(tokens) = auth.tokens() {
            router = router.layer(axum::middleware::from_fn_with_state(tokens, auth::require_token));
        }
        {
            use std::io::Write;
            let _ = std::io::stderr().write_all(announce.as_bytes());
        }
        axum::serve(listener, router).await?;
        Ok(())
    }
}

/// The origins of pages the server itself would serve at `bound`: its address as given,
/// and `localhost` for a loopback one.
fn own_origins(bound: SocketAddr) -> Vec<String> {
    let port = bound.port();
    vec![format!("http://{bound}"), format!("http://localhost:{port}")]
}
