//! Streamable HTTP: the endpoint at `/mcp`, behind the bounds (sessions, requests in
//! flight, body size), the bearer token or OAuth access token, and the Host and Origin
//! checks; the OAuth protected resource metadata beside it.

use std::net::SocketAddr;
use std::sync::Arc;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use super::{HttpAuth, KyroServer, auth, http_limits, ops};

pub(crate) use auth::Scopes;

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
    /// What SIGHUP reads again: the tokens and the callers' own policies.
    pub reload: Option<Reload>,
    /// The scopes of the callers' own policies, as read at start.
    pub scopes: Scopes,
}

/// Reads the tokens and the scopes of the callers' own policies again.
pub(crate) type Reload = Box<dyn Fn() -> Result<(HttpAuth, Scopes), String> + Send + Sync>;

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
    pub(crate) async fn serve_http(mut self, addr: SocketAddr, mut access: Access) -> Result<(), crate::ServeError> {
        let reload = access.reload.take();
        let scopes = std::mem::take(&mut access.scopes);
        let Access { auth, hosts, .. } = &access;
        let gate = auth::Gate::new(
            auth,
            scopes,
            #[cfg(feature = "oauth")]
            access.oauth.clone().map(|o| Arc::new(super::jwt::Verifier::new(o))),
        );
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
        let keys = super::state_key::StateKeys::from_env().map_err(crate::ServeError::StateKey)?;
        let limits = self.transport;
        let runtime = self.runtime.clone();
        let tasks = self.tasks.clone();
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
        let keyless = shared.is_some() && !keys.shared();
        #[cfg(feature = "postgres")]
        let on_postgres = shared.is_some();
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
        let bounds_state = shared.clone();
        #[cfg(feature = "postgres")]
        {
            bounds.shared = shared;
        }
        let bounds = Arc::new(bounds);
        let mut endpoint = axum::Router::new()
            .nest_service("/mcp", service)
            .layer(axum::middleware::from_fn_with_state(bounds, http_limits::limit));
        // Written once the routes are made; a closed stderr is no reason to stop serving.
        use kyro_core::log::Level;
        let mut announce: Vec<(Level, String)> = vec![(Level::Info, format!("serving MCP on http://{bound}/mcp"))];
        #[cfg_attr(not(feature = "postgres"), allow(unused_mut))]
        let mut store =
            "this machine (receipts in the workspace's .kyro/, grants and reviews in the user's state directory)"
                .to_owned();
        #[cfg(feature = "postgres")]
        if let Some(state) = bounds_state.as_ref().filter(|_| keyless || on_postgres) {
            store = format!(
                "PostgreSQL over {}: receipts, grants, reviews and tasks shared by every replica on it",
                state.connection()
            );
        }
        let key = match (keys.shared(), keys.rotating()) {
            (true, false) => "KYRO_STATE_KEY is set",
            (true, true) => "KYRO_STATE_KEY is set, and KYRO_STATE_KEY_PREVIOUS (what it sealed still opens)",
            (false, _) => "KYRO_STATE_KEY is not set (approval states are sealed under a key of this process's)",
        };
        // Said after the address and a token kyro made, which scripts read in that order.
        let state_line = (Level::Info, format!("state: {store}; {key}"));
        #[cfg(feature = "postgres")]
        if keyless {
            announce.push((
                Level::Warn,
                "--state without KYRO_STATE_KEY: an approval asked here can be answered only here; \
                 give every replica the same key"
                    .to_owned(),
            ));
        }
        match auth {
            HttpAuth::Generated(token) => announce.push((
                Level::Info,
                format!("bearer token {token} (send `Authorization: Bearer {token}`)"),
            )),
            HttpAuth::None if gate.is_open() => {
                announce.push((
                    Level::Warn,
                    "--no-auth: any local process can use this server, approvals included".to_owned(),
                ));
            }
            _ => {}
        }
        #[cfg_attr(not(feature = "oauth"), allow(unused_mut))]
        let mut router = axum::Router::new();
        #[cfg(feature = "oauth")]
        if let Some(oauth) = &access.oauth {
            announce.push((
                Level::Info,
                format!(
                    "taking OAuth access tokens for {} (metadata: {})",
                    oauth.audience(),
                    oauth.metadata_url()
                ),
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
            codec: super::inbox::Inbox::codec(&keys).map_err(crate::ServeError::StateKey)?,
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
            announce.push((
                Level::Info,
                format!(
                    "approvals inbox at {public}/approvals (approvers: {})",
                    access.approvers.iter().map(|a| a.name()).collect::<Vec<_>>().join(", ")
                ),
            ));
        }
        let gate = (!gate.is_open()).then_some(gate);
        if let Some(gate) = &gate {
            endpoint = endpoint.layer(axum::middleware::from_fn_with_state(gate.clone(), auth::require_token));
        }
        let metrics = access.metrics.clone();
        endpoint = endpoint.layer(axum::middleware::from_fn_with_state(metrics.clone(), ops::count));
        #[cfg_attr(not(feature = "oauth"), allow(unused_mut))]
        let mut readiness = ops::Readiness::new(runtime.clone());
        // The issuer's keys are fetched now and kept fresh; until one is held the server
        // is not ready.
        #[cfg(feature = "oauth")]
        if let Some(verifier) = gate.as_ref().and_then(|g| g.oauth.clone()) {
            tokio::spawn(verifier.clone().keep_fresh());
            readiness.issuer = Some(verifier);
        }
        let readiness = Arc::new(readiness);
        // The probes answer anyone and say only whether the server serves and is ready;
        // the metrics name tools only to a request /mcp would take.
        let operations = axum::Router::new()
            .route(
                "/healthz",
                axum::routing::get(ops::healthy).with_state(readiness.clone()),
            )
            .route("/readyz", axum::routing::get(ops::ready).with_state(readiness.clone()))
            .route(
                "/metrics",
                axum::routing::get(ops::metrics).with_state((metrics.clone(), gate.clone())),
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
        let router = router
            .merge(endpoint)
            .merge(operations)
            .merge(approvals)
            .layer(axum::middleware::from_fn_with_state(
                readiness.clone(),
                ops::refuse_while_draining,
            ))
            .layer(axum::middleware::from_fn_with_state(
                (Arc::new(allowed_hosts), metrics.clone()),
                guard_host,
            ));
        // The signals are kyro's from before the address is said: a SIGTERM sent as soon
        // as it is read drains and ends with 143, a SIGHUP reloads.
        use tokio::signal::unix::{SignalKind, signal};
        let (mut term, mut int, hangups) = (
            signal(SignalKind::terminate())?,
            signal(SignalKind::interrupt())?,
            signal(SignalKind::hangup())?,
        );
        tokio::spawn(reload_on_hangup(hangups, reload, gate.clone()));
        announce.push(state_line);
        for (level, line) in announce {
            kyro_core::log::line(level, &line, &[]);
        }
        // Over HTTP the start is over once the address is bound: work put off until a first
        // answer (the sandbox probe) runs now, not in the middle of the first requests.
        crate::frames::first_answer::written();
        // SIGTERM or SIGINT: the probes answer 503 `draining` and `/mcp` takes no new
        // request (503) while those in flight have GRACE to finish; then no connection is
        // taken, and after a last 2 s the sessions (and their calls) are cancelled; receipts
        // are written before the process ends with 143 (130 for SIGINT).
        let (signalled_tx, signalled_rx) = tokio::sync::oneshot::channel::<i32>();
        let (drained_tx, drained_rx) = tokio::sync::oneshot::channel::<()>();
        // TCP_NODELAY on every connection: a kept-alive answer goes out at once instead of
        // waiting on Nagle's algorithm and the client's delayed ACK (axum's documented way).
        use axum::serve::ListenerExt;
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let serving = axum::serve(listener, router).with_graceful_shutdown(async move {
            let _ = drained_rx.await;
        });
        tokio::spawn(async move {
            let status = tokio::select! {
                _ = term.recv() => 143,
                _ = int.recv() => 130,
            };
            let _ = signalled_tx.send(status);
        });
        let mut serving = std::pin::pin!(serving.into_future());
        let status = tokio::select! {
            served = &mut serving => {
                runtime.flush_observers();
                return served.map_err(Into::into);
            }
            status = signalled_rx => status.unwrap_or(143),
        };
        readiness.drain();
        kyro_core::log::info("draining: the probes answer 503 and /mcp takes no new request");
        // Requests being answered and tasks running here; zero twice in a row, so that a
        // request let in just before the drain began is counted.
        let drained = async {
            let mut quiet = 0;
            while quiet < 2 {
                tokio::time::sleep(std::time::Duration::from_millis(25)).await;
                quiet = if metrics.answering() == 0 && tasks.working() == 0 {
                    quiet + 1
                } else {
                    0
                };
            }
        };
        let ended = tokio::select! {
            _ = tokio::time::timeout(GRACE, drained) => false,
            _ = &mut serving => true,
        };
        let _ = drained_tx.send(());
        // Tasks still running are told to stop, and have the 2 s to say how they ended
        // (their receipts are written as any call's).
        tasks.stop_all();
        let stopped = async {
            while tasks.working() > 0 {
                tokio::time::sleep(std::time::Duration::from_millis(25)).await;
            }
        };
        if ended {
            let _ = tokio::time::timeout(std::time::Duration::from_secs(2), stopped).await;
        } else {
            let both = async {
                let _ = tokio::join!(stopped, &mut serving);
            };
            if tokio::time::timeout(std::time::Duration::from_secs(2), both)
                .await
                .is_err()
            {
                stop_sessions.cancel();
                let _ = tokio::time::timeout(std::time::Duration::from_secs(2), &mut serving).await;
            }
        }
        runtime.flush_observers();
        std::process::exit(status);
    }
}

/// On each SIGHUP: reads the token file and the callers' own policies again and puts them
/// in force for the next requests, or keeps the old ones when any is wrong; says which on
/// stderr. SIGHUP no longer ends the server.
async fn reload_on_hangup(
    mut hangups: tokio::signal::unix::Signal,
    reload: Option<Reload>,
    gate: Option<Arc<auth::Gate>>,
) {
    let reload = reload.map(Arc::new);
    while hangups.recv().await.is_some() {
        let Some(reload) = reload.clone() else {
            kyro_core::log::info("SIGHUP: nothing to read again (no token file or policy of a caller's)");
            continue;
        };
        match tokio::task::spawn_blocking(move || reload()).await {
            Ok(Ok((auth, read))) => {
                let callers = auth.tokens().map_or(0, |t| t.len());
                let policies = read.len();
                if let Some(gate) = &gate {
                    gate.replace(&auth, read);
                }
                kyro_core::log::line(
                    kyro_core::log::Level::Info,
                    "SIGHUP: the token file and the callers' policies are read again",
                    &[("tokens", callers.into()), ("policies", policies.into())],
                );
            }
            Ok(Err(why)) => kyro_core::log::line(
                kyro_core::log::Level::Warn,
                &format!("SIGHUP: {why}; the tokens and policies in force stay"),
                &[],
            ),
            Err(e) => kyro_core::log::warn(&format!(
                "SIGHUP: the reading failed ({e}); the tokens and policies in force stay"
            )),
        }
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
    let why = "this server is not reached by that host name (start it with --allow-host NAME)";
    ops::refusal_line(
        axum::http::StatusCode::FORBIDDEN,
        &format!("{why}: {}", host.unwrap_or("(none)").escape_debug()),
        None,
        ops::trace_id(request.headers()).as_deref(),
    );
    (axum::http::StatusCode::FORBIDDEN, format!("kyro: {why}\n")).into_response()
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
