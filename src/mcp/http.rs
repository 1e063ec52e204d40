//! Streamable HTTP: the endpoint at `/mcp`, behind the bounds (sessions, requests in
//! flight, body size), the bearer token or OAuth access token, and the Host and Origin
//! checks; the OAuth protected resource metadata beside it.

use std::net::SocketAddr;
use std::sync::Arc;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use super::{HttpAuth, KyroServer, auth, http_limits, ops};

#[cfg(feature = "oauth")]
mod inbox_oauth;

/// Who may reach the HTTP endpoint and by which names.
pub(crate) struct Access {
    /// The static bearer tokens.
    pub auth: HttpAuth,
    /// Host names besides loopback's that requests may name (`--allow-host`).
    pub hosts: Vec<String>,
    /// The OAuth resource server.
    #[cfg(feature = "oauth")]
    pub oauth: Option<super::oauth::OAuth>,
    /// The metrics `/metrics` serves, observing the runtime's calls.
    pub metrics: Arc<super::ops::Metrics>,
    /// Who decides calls under `review` in the inbox (`--approvers`).
    pub approvers: Vec<kyro_core::Caller>,
}

/// How long in-flight requests may take to finish after SIGTERM before they are cancelled.
const GRACE: std::time::Duration = std::time::Duration::from_secs(10);

impl KyroServer {
    /// Serves Streamable HTTP at `http://ADDR/mcp` until the process ends. A non-loopback
    /// address needs authentication and the host names clients use (`--allow-host`);
    /// every request's `Host` is checked against them and loopback's (DNS rebinding), and
    /// must carry a static bearer token or an OAuth access token. A request a browser
    /// sends from a page (it carries `Origin`) is answered 403 unless the page is the
    /// server's own origin or one of [`KyroServer::with_allowed_origins`]: with
    /// `--no-auth`, any web page open in the user's browser could otherwise call tools. The
    /// bound address is announced on stderr (so `:0` picks a free port), then the token
    /// when kyro made it.
    pub(crate) async fn serve_http(mut self, addr: SocketAddr, access: Access) -> Result<(), crate::ServeError> {
        let Access { auth, hosts, .. } = &access;
        let gate = auth::Gate {
            tokens: auth.tokens(),
            own_policies: auth.caller_policies().iter().map(|(c, _)| c.clone()).collect(),
            #[cfg(feature = "oauth")]
            oauth: access.oauth.clone().map(|o| Arc::new(super::jwt::Verifier::new(o))),
        };
        if !addr.ip().is_loopback() && (gate.is_open() || hosts.is_empty()) {
            return Err(crate::ServeError::NotLoopback(addr));
        }
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let bound = listener.local_addr()?;
        // Where an approver decides a call under review: the address clients reach the
        // server by (the OAuth resource's origin), else the bound one.
        #[cfg_attr(not(feature = "oauth"), allow(unused_mut))]
        let mut public = format!("http://{bound}");
        #[cfg(feature = "oauth")]
        if let Some(origin) = access.oauth.as_ref().and_then(|o| origin_of(o.audience())) {
            public = origin;
        }
        self.runtime = self.runtime.clone().with_review_inbox(&format!("{public}/approvals"));
        let mut page_origins = own_origins(bound);
        page_origins.push(public.clone());
        for host in hosts {
            page_origins.push(format!("https://{host}"));
            page_origins.push(format!("http://{host}"));
        }
        let mut origins = own_origins(bound);
        origins.extend(self.allowed_origins.iter().cloned());
        let mut allowed_hosts: Vec<String> = ["localhost", "127.0.0.1", "[::1]"].map(String::from).into();
        allowed_hosts.extend(hosts.iter().cloned());
        let limits = self.transport;
        let runtime = self.runtime.clone();
        access.metrics.watch(&runtime);
        #[allow(unused_mut)]
        let mut config = StreamableHttpServerConfig::default();
        let stop_sessions = config.cancellation_token.clone();
        let sessions = Arc::new(LocalSessionManager::default());
        // On the state replicas share, a pre-2026 session can be taken over by any of them.
        #[cfg(feature = "postgres")]
        let shared = runtime
            .workspace()
            .resource::<kyro_tools::state::PgState, ()>(|| Err(()))
            .ok()
            .map(|state| (*state).clone());
        #[cfg(feature = "postgres")]
        let keyless = shared.is_some() && std::env::var_os(super::elicit::STATE_KEY_VARIABLE).is_none();
        #[cfg(feature = "postgres")]
        if let Some(state) = &shared {
            config.session_store = Some(Arc::new(super::session_store::SharedSessions(state.clone())));
        }
        let service: StreamableHttpService<KyroServer, LocalSessionManager> = StreamableHttpService::new(
            // Each HTTP session has its own session approvals.
            move || {
                let mut session = self.clone();
                session.approved_for_session = Arc::default();
                Ok(session)
            },
            sessions.clone(),
            config
                .with_max_request_body_bytes(crate::frames::MAX_FRAME)
                .with_allowed_hosts(allowed_hosts.clone())
                .with_allowed_origins(origins)
                .enforce_origin_validation(),
        );
        #[allow(unused_mut)]
        let mut bounds = http_limits::HttpLimits::new(sessions, limits, crate::frames::MAX_FRAME);
        #[cfg(feature = "postgres")]
        {
            bounds.shared = shared;
        }
        let bounds = Arc::new(bounds);
        let mut endpoint = axum::Router::new()
            .nest_service("/mcp", service)
            .layer(axum::middleware::from_fn_with_state(bounds, http_limits::limit));
        // One write, and a closed stderr is no reason to stop serving.
        let mut announce = format!("kyro: serving MCP on http://{bound}/mcp\n");
        #[cfg(feature = "postgres")]
        if keyless {
            announce.push_str(
                "kyro: --state without KYRO_STATE_KEY: an approval asked here can be answered only here; \
                 give every replica the same key\n",
            );
        }
        match auth {
            HttpAuth::Generated(token) => announce.push_str(&format!(
                "kyro: bearer token {token} (send `Authorization: Bearer {token}`)\n"
            )),
            HttpAuth::None if gate.is_open() => {
                announce.push_str("kyro: --no-auth: any local process can use this server, approvals included\n");
            }
            _ => {}
        }
        #[cfg_attr(not(feature = "oauth"), allow(unused_mut))]
        let mut router = axum::Router::new();
        #[cfg(feature = "oauth")]
        if let Some(oauth) = &access.oauth {
            announce.push_str(&format!(
                "kyro: taking OAuth access tokens for {} (metadata: {})\n",
                oauth.audience(),
                oauth.metadata_url()
            ));
            let document = oauth.metadata().to_string();
            for path in oauth.metadata_paths() {
                let document = document.clone();
                router = router.route(
                    &path,
                    axum::routing::get(move || async move {
                        ([(axum::http::header::CONTENT_TYPE, "application/json")], document)
                    }),
                );
            }
        }
        let gate = Arc::new(gate);
        let inbox = Arc::new(super::inbox::Inbox {
            store: runtime
                .approval_store()
                .cloned()
                .unwrap_or_else(|| Arc::new(kyro_core::grants::MemoryApprovalStore::default())),
            gate: gate.clone(),
            approvers: access.approvers.iter().cloned().collect(),
            codec: super::inbox::Inbox::codec(
                std::env::var(super::elicit::STATE_KEY_VARIABLE)
                    .ok()
                    .as_deref()
                    .map(str::as_bytes),
            )
            .map_err(crate::ServeError::StateKey)?,
            origins: page_origins,
            secure: public.starts_with("https://"),
            #[cfg(feature = "oauth")]
            oauth: access.oauth.as_ref().and_then(|o| {
                let client_id = o.inbox_client_id.clone()?;
                Some(super::inbox::InboxOAuth {
                    issuer: o.issuer.clone(),
                    client_id,
                    resource: o.audience().to_owned(),
                    redirect_uri: format!("{public}/approvals/oauth/callback"),
                })
            }),
        });
        if !access.approvers.is_empty() {
            announce.push_str(&format!(
                "kyro: approvals inbox at {public}/approvals (approvers: {})\n",
                access.approvers.iter().map(|a| a.name()).collect::<Vec<_>>().join(", ")
            ));
        }
        let gate = (!gate.is_open()).then_some(gate);
        if let Some(gate) = &gate {
            endpoint = endpoint.layer(axum::middleware::from_fn_with_state(gate.clone(), auth::require_token));
        }
        let metrics = access.metrics.clone();
        endpoint = endpoint.layer(axum::middleware::from_fn_with_state(metrics.clone(), ops::count));
        // The probes answer anyone and say only whether the server serves and is ready;
        // the metrics name tools only to a request /mcp would take.
        let operations = axum::Router::new()
            .route("/healthz", axum::routing::get(|| async { "ok\n" }))
            .route(
                "/readyz",
                axum::routing::get(ops::ready).with_state(ops::Readiness::new(runtime.clone())),
            )
            .route(
                "/metrics",
                axum::routing::get(ops::metrics).with_state((metrics.clone(), gate)),
            );
        use super::inbox;
        let approvals = axum::Router::new()
            .route("/approvals", axum::routing::get(inbox::list_page))
            .route("/approvals.json", axum::routing::get(inbox::list_json))
            .route("/approvals/sign-in", axum::routing::post(inbox::sign_in_post))
            .route("/approvals/sign-out", axum::routing::post(inbox::sign_out_post))
            .route("/approvals/{id}", axum::routing::get(inbox::one_page))
            .route("/approvals/{id}/{verb}", axum::routing::post(inbox::decide_post));
        #[cfg(feature = "oauth")]
        let approvals = approvals
            .route("/approvals/oauth/start", axum::routing::get(inbox_oauth::start))
            .route("/approvals/oauth/callback", axum::routing::get(inbox_oauth::callback));
        let approvals = approvals
            .layer(axum::extract::DefaultBodyLimit::max(64 * 1024))
            .with_state(inbox);
        let router =
            router
                .merge(endpoint)
                .merge(operations)
                .merge(approvals)
                .layer(axum::middleware::from_fn_with_state(
                    (Arc::new(allowed_hosts), metrics),
                    guard_host,
                ));
        {
            use std::io::Write;
            let _ = std::io::stderr().write_all(announce.as_bytes());
        }
        // Over HTTP the start is over once the address is bound: work put off until a first
        // answer (the sandbox probe) runs now, not in the middle of the first requests.
        crate::frames::first_answer::written();
        // SIGTERM or SIGINT: no new connection is taken, requests in flight have GRACE to
        // finish, then the sessions (and their calls) are cancelled; receipts are written
        // before the process ends.
        let (signalled_tx, signalled_rx) = tokio::sync::oneshot::channel::<i32>();
        // TCP_NODELAY on every connection: a kept-alive answer goes out at once instead of
        // waiting on Nagle's algorithm and the client's delayed ACK (axum's documented way).
        use axum::serve::ListenerExt;
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let serving = axum::serve(listener, router).with_graceful_shutdown(async move {
            let _ = signalled_tx.send(super::signalled().await);
        });
        let mut serving = std::pin::pin!(serving.into_future());
        let status = tokio::select! {
            served = &mut serving => {
                runtime.flush_observers();
                return served.map_err(Into::into);
            }
            status = signalled_rx => status.unwrap_or(143),
        };
        if tokio::time::timeout(GRACE, &mut serving).await.is_err() {
            stop_sessions.cancel();
            let _ = tokio::time::timeout(std::time::Duration::from_secs(2), &mut serving).await;
        }
        runtime.flush_observers();
        std::process::exit(status);
    }
}

/// Refuses (403) a request whose `Host` is not one of `allowed` (an entry without a port
/// admits any port), before anything else looks at it: a page of another site whose name
/// was rebound to this address names that site.
async fn guard_host(
    axum::extract::State((allowed, metrics)): axum::extract::State<(Arc<Vec<String>>, Arc<ops::Metrics>)>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let host = request
        .headers()
        .get(axum::http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| request.uri().authority().map(|a| a.as_str()));
    if host.is_some_and(|host| host_allowed(host, &allowed)) {
        return next.run(request).await;
    }
    metrics.refused(axum::http::StatusCode::FORBIDDEN);
    (
        axum::http::StatusCode::FORBIDDEN,
        "kyro: this server is not reached by that host name (start it with --allow-host NAME)\n",
    )
        .into_response()
}

/// Whether `host` (a `Host` header: a name or address, perhaps a port) is one of `allowed`.
fn host_allowed(host: &str, allowed: &[String]) -> bool {
    let split = |value: &str| -> (String, Option<String>) {
        let value = value.to_ascii_lowercase();
        let cut = match value.rfind(']') {
            Some(end) => value[end..].find(':').map(|i| end + i),
            None if value.matches(':').count() == 1 => value.find(':'),
            None => None,
        };
        match cut {
            Some(i) => (value[..i].to_owned(), Some(value[i + 1..].to_owned())),
            None => (value, None),
        }
    };
    let (name, port) = split(host);
    allowed.iter().any(|entry| {
        let (allowed_name, allowed_port) = split(entry);
        allowed_name == name && allowed_port.is_none_or(|p| Some(p) == port)
    })
}

/// The origin (`https://tools.example.com`) of an address (`https://tools.example.com/mcp`).
#[cfg(feature = "oauth")]
fn origin_of(address: &str) -> Option<String> {
    let (scheme, rest) = address.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    (!authority.is_empty()).then(|| format!("{scheme}://{authority}"))
}

/// The origins of pages the server itself would serve at `bound`: its address as given,
/// and `localhost` for a loopback one.
fn own_origins(bound: SocketAddr) -> Vec<String> {
    let port = bound.port();
    vec![format!("http://{bound}"), format!("http://localhost:{port}")]
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_host_matches_by_name_and_by_port_when_the_entry_has_one() {
        let allowed: Vec<String> = ["localhost", "127.0.0.1", "[::1]", "tools.example.com:8443"]
            .map(String::from)
            .into();
        for host in [
            "localhost",
            "LOCALHOST:9",
            "127.0.0.1:80",
            "[::1]:8",
            "tools.example.com:8443",
        ] {
            assert!(super::host_allowed(host, &allowed), "{host}");
        }
        for host in [
            "evil.example",
            "tools.example.com",
            "tools.example.com:443",
            "127.0.0.2",
            "::1",
            "localhost.evil",
        ] {
            assert!(!super::host_allowed(host, &allowed), "{host}");
        }
    }
}
