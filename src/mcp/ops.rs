//! What an operator sees of `kyro mcp --http`: `/healthz` (the process serves), `/readyz`
//! (the receipt log and the approval store answer; a probe is told only a class of what is
//! wrong, stderr the details), Prometheus metrics at `/metrics` (calls by tool and outcome,
//! their latency, requests in flight, refusals by status; by tool only with the token
//! `/mcp` takes) and, with `--log-json`, one JSON line a call on stderr naming its caller
//! and trace.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::AtomicI64;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::http::header::CONTENT_TYPE;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use kyro_core::receipt::{CanonicalCall, Observer, Receipt};
use kyro_core::{Outcome, Runtime};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    tool: String,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabel {
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabel {
    tool: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabel {
    status: String,
}

type Latency = Family<ToolLabel, Histogram, fn() -> Histogram>;

const CALLS: (&str, &str) = ("kyro_calls", "Tool calls by tool and outcome");
const DURATION: (&str, &str) = (
    "kyro_call_duration_seconds",
    "How long tool calls took, from arrival to outcome",
);

/// The server's metrics. Labels are tool names of the catalog and outcome kinds (a name
/// no tool has is counted as `(unknown)`), never callers: what a client sends cannot
/// grow them. The tool names are told only to a request with the token `/mcp` takes; any
/// other scrape gets the same metrics summed over tools.
pub(crate) struct Metrics {
    /// Everything, by tool.
    named: Registry,
    /// The same without the tool label.
    summed: Registry,
    calls: Family<CallLabels, Counter>,
    latency: Latency,
    calls_by_outcome: Family<OutcomeLabel, Counter>,
    latency_of_all: Histogram,
    in_flight: Gauge<i64, AtomicI64>,
    /// POSTs being answered (what a drain waits for; an SSE stream a client keeps open
    /// with GET is not).
    answering: Arc<AtomicI64>,
    refusals: Family<StatusLabel, Counter>,
    /// Calls waiting for an approver's review, and how long the oldest has waited: read
    /// from the shared queue at each scrape (so every replica tells the same).
    pending: Gauge<i64, AtomicI64>,
    oldest_pending: Gauge<i64, AtomicI64>,
    /// The tools the registry had when the metrics were made, and any registered since.
    runtime: std::sync::OnceLock<Runtime>,
}

fn latency_histogram() -> Histogram {
    // 1 ms to about 4.4 minutes.
    Histogram::new(exponential_buckets(0.001, 4.0, 10))
}

impl Metrics {
    pub(crate) fn new() -> Arc<Metrics> {
        let (mut named, mut summed) = (Registry::default(), Registry::default());
        let calls = Family::<CallLabels, Counter>::default();
        let latency: Latency = Family::new_with_constructor(latency_histogram);
        let calls_by_outcome = Family::<OutcomeLabel, Counter>::default();
        let latency_of_all = latency_histogram();
        let in_flight = Gauge::<i64, AtomicI64>::default();
        let refusals = Family::<StatusLabel, Counter>::default();
        let pending = Gauge::<i64, AtomicI64>::default();
        let oldest_pending = Gauge::<i64, AtomicI64>::default();
        named.register(CALLS.0, CALLS.1, calls.clone());
        named.register(DURATION.0, DURATION.1, latency.clone());
        summed.register(CALLS.0, "Tool calls by outcome", calls_by_outcome.clone());
        summed.register(DURATION.0, DURATION.1, latency_of_all.clone());
        for registry in [&mut named, &mut summed] {
            registry.register(
                "kyro_build",
                "The running kyro's version",
                prometheus_client::metrics::info::Info::new(vec![("version", env!("CARGO_PKG_VERSION"))]),
            );
            registry.register(
                "kyro_http_requests_in_flight",
                "MCP requests being answered",
                in_flight.clone(),
            );
            registry.register(
                "kyro_http_refusals",
                "Requests refused before a tool saw them, by HTTP status (401 no or bad token, 403 host, origin or scope, 404 unknown session, 413 too large, 429 too many in flight, 503 no session free)",
                refusals.clone(),
            );
            registry.register(
                "kyro_approvals_pending",
                "Calls waiting for an approver's review (the policy's `review`), in the queue replicas share",
                pending.clone(),
            );
            registry.register(
                "kyro_approvals_oldest_pending_seconds",
                "How long the oldest call waiting for review has waited",
                oldest_pending.clone(),
            );
        }
        Arc::new(Metrics {
            named,
            summed,
            calls,
            latency,
            calls_by_outcome,
            latency_of_all,
            in_flight,
            answering: Arc::default(),
            refusals,
            pending,
            oldest_pending,
            runtime: std::sync::OnceLock::new(),
        })
    }

    /// Names tools by `runtime`'s registry.
    pub(crate) fn watch(&self, runtime: &Runtime) {
        let _ = self.runtime.set(runtime.clone());
    }

    /// The text format, by tool when `named`.
    fn text(&self, named: bool) -> String {
        let mut text = String::new();
        let registry = if named { &self.named } else { &self.summed };
        let _ = prometheus_client::encoding::text::encode(&mut text, registry);
        text
    }
}

impl Observer for Metrics {
    fn observe(&self, _receipt: &Receipt, _call: Option<&CanonicalCall>, _outcome: &Outcome) {}

    /// Counts the call as its client was told it ended.
    fn answered(&self, receipt: &Receipt, _outcome: &Outcome) {
        let known = self
            .runtime
            .get()
            .is_some_and(|r| r.registry().snapshot().get(&receipt.tool).is_some());
        let tool = if known {
            receipt.tool.clone()
        } else {
            "(unknown)".to_owned()
        };
        let outcome = serde_json::to_value(receipt.outcome)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        let seconds = receipt.duration_us as f64 / 1e6;
        self.calls_by_outcome
            .get_or_create(&OutcomeLabel {
                outcome: outcome.clone(),
            })
            .inc();
        self.calls
            .get_or_create(&CallLabels {
                tool: tool.clone(),
                outcome,
            })
            .inc();
        self.latency.get_or_create(&ToolLabel { tool }).observe(seconds);
        self.latency_of_all.observe(seconds);
    }
}

impl Metrics {
    /// Counts a request refused with `status` (the host guard's 403s, the endpoint's).
    pub(crate) fn refused(&self, status: StatusCode) {
        self.refusals
            .get_or_create(&StatusLabel {
                status: status.as_u16().to_string(),
            })
            .inc();
    }
}

/// Counts `/mcp` requests in flight (until their response ends) and refusals by status,
/// and writes a line on stderr for each refusal.
pub(crate) async fn count(State(metrics): State<Arc<Metrics>>, request: Request, next: Next) -> Response {
    metrics.in_flight.inc();
    let posted = request.method() == axum::http::Method::POST;
    if posted {
        metrics.answering.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
    let guard = InFlight(metrics.clone(), posted);
    let trace = trace_id(request.headers());
    let response = next.run(request).await;
    let status = response.status();
    let response = if status.is_client_error() || status == StatusCode::SERVICE_UNAVAILABLE {
        metrics.refused(status);
        let caller = response
            .extensions()
            .get::<kyro_core::Caller>()
            .map(|c| c.name().to_owned());
        // A refusal's body is a short text or JSON-RPC error (kyro's or rmcp's) of known
        // length: read to say why, then sent as it was; any other is left unread.
        use http_body::Body as _;
        let known = response
            .body()
            .size_hint()
            .upper()
            .is_some_and(|n| n <= REFUSAL_READ as u64);
        if known {
            let (parts, body) = response.into_parts();
            match axum::body::to_bytes(body, REFUSAL_READ).await {
                Ok(bytes) => {
                    refusal_line(status, &reason_of(&bytes), caller.as_deref(), trace.as_deref());
                    Response::from_parts(parts, Body::from(bytes))
                }
                Err(e) => {
                    refusal_line(
                        status,
                        &format!("(its body failed: {e})"),
                        caller.as_deref(),
                        trace.as_deref(),
                    );
                    let mut parts = parts;
                    parts.headers.remove(axum::http::header::CONTENT_LENGTH);
                    Response::from_parts(parts, Body::empty())
                }
            }
        } else {
            refusal_line(status, "(a streamed body)", caller.as_deref(), trace.as_deref());
            response
        }
    } else {
        response
    };
    response.map(|body| Body::new(Counted { body, _guard: guard }))
}

/// Most bytes of a refusal's body read for its log line.
const REFUSAL_READ: usize = 64 * 1024;

/// The trace id of a request's W3C `traceparent` header (`00-TRACE-SPAN-FLAGS`).
pub(crate) fn trace_id(headers: &axum::http::HeaderMap) -> Option<String> {
    let value = headers.get("traceparent")?.to_str().ok()?;
    let id = value.split('-').nth(1)?;
    (id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit())).then(|| id.to_owned())
}

/// Why a refusal's body says it was refused: a JSON-RPC error's message, else its text.
fn reason_of(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let reason = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v["error"]["message"].as_str().map(str::to_owned))
        .unwrap_or_else(|| text.trim().trim_start_matches("kyro: ").to_owned());
    reason.chars().take(500).collect()
}

/// One line on stderr for a request refused with `status` before a tool saw it.
pub(crate) fn refusal_line(status: StatusCode, reason: &str, caller: Option<&str>, trace: Option<&str>) {
    use serde_json::Value;
    kyro_core::log::line(
        kyro_core::log::Level::Warn,
        "refused",
        &[
            ("status", status.as_u16().into()),
            ("reason", reason.into()),
            ("caller", caller.map_or(Value::Null, Value::from)),
            ("trace_id", trace.map_or(Value::Null, Value::from)),
        ],
    );
}

/// Who `/metrics` names the tools to: `None` (no gate, `--no-auth`) is anyone.
pub(crate) type Scrapers = (Arc<Metrics>, Option<Arc<super::auth::Gate>>);

/// `GET /metrics`: by tool with the token `/mcp` takes (the labels name every tool and
/// upstream called), summed over tools without.
pub(crate) async fn metrics(State((metrics, gate)): State<Scrapers>, request: Request) -> Response {
    let named = match &gate {
        None => true,
        Some(gate) => super::auth::identify(gate, request.headers()).await.is_ok(),
    };
    if let Some(store) = metrics.runtime.get().and_then(|r| r.approval_store()).cloned() {
        let now = kyro_core::grants::now_ms();
        let read = tokio::task::spawn_blocking(move || store.reviews(true, now)).await;
        if let Ok(Ok(pending)) = read {
            let oldest = pending.iter().map(|r| r.created_at_ms).min().unwrap_or(now);
            metrics.pending.set(pending.len() as i64);
            metrics.oldest_pending.set((now.saturating_sub(oldest) / 1000) as i64);
        }
    }
    (
        [(
            CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        metrics.text(named),
    )
        .into_response()
}

/// Why the server is not ready, as a probe is told: one word, never a path or an error's
/// text, which `/readyz` answers anyone who can reach the port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unready {
    /// A receipt cannot be written (so no call runs).
    Receipts,
    /// The approval store does not answer.
    Approvals,
    /// No key of the OAuth issuer's is held (none could be fetched yet), so no token can
    /// be checked.
    #[cfg_attr(not(feature = "oauth"), allow(dead_code))]
    Issuer,
    /// The check itself did not finish.
    Check,
}

impl Unready {
    fn word(self) -> &'static str {
        match self {
            Unready::Receipts => "receipts",
            Unready::Approvals => "approvals",
            Unready::Issuer => "issuer",
            Unready::Check => "check",
        }
    }
}

/// What `/readyz` checks, whether the server is draining (after SIGTERM), and the last
/// reason it wrote on stderr (so a failing probe every few seconds says it once, until it
/// changes).
pub(crate) struct Readiness {
    runtime: Runtime,
    /// The OAuth issuer's keys, when the server takes its tokens.
    #[cfg(feature = "oauth")]
    pub(crate) issuer: Option<Arc<super::jwt::Verifier>>,
    draining: std::sync::atomic::AtomicBool,
    reported: std::sync::Mutex<Option<String>>,
}

impl Readiness {
    pub(crate) fn new(runtime: Runtime) -> Readiness {
        Readiness {
            runtime,
            #[cfg(feature = "oauth")]
            issuer: None,
            draining: std::sync::atomic::AtomicBool::new(false),
            reported: std::sync::Mutex::default(),
        }
    }

    /// From now on the probes answer 503 `draining` and `/mcp` takes no new request.
    pub(crate) fn drain(&self) {
        self.draining.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    pub(crate) fn draining(&self) -> bool {
        self.draining.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Writes `detail` on stderr unless it was the last written; `None` (ready) forgets it.
    fn report(&self, detail: Option<(Unready, String)>) {
        let mut reported = self.reported.lock().unwrap_or_else(|e| e.into_inner());
        let text = detail.as_ref().map(|(_, d)| d.clone());
        if *reported == text {
            return;
        }
        if let Some((class, detail)) = &detail {
            kyro_core::log::line(
                kyro_core::log::Level::Warn,
                &format!("not ready: {detail}"),
                &[("reason", class.word().into())],
            );
        }
        *reported = text;
    }
}

/// A probe's answer while the server drains.
fn draining() -> Response {
    (StatusCode::SERVICE_UNAVAILABLE, "draining\n").into_response()
}

/// `GET /healthz`: 200 `ok` while the process serves, 503 `draining` after SIGTERM.
pub(crate) async fn healthy(State(readiness): State<Arc<Readiness>>) -> Response {
    if readiness.draining() {
        return draining();
    }
    (StatusCode::OK, "ok\n").into_response()
}

/// `GET /readyz`: 200 `ready` when the receipt log can be written, the approval store
/// answers and (OAuth) a key of the issuer's is held; else 503 `not ready: WORD`
/// (`receipts`, `approvals`, `issuer`), or `draining` after SIGTERM. The details (paths,
/// the store's errors) go to stderr only.
pub(crate) async fn ready(State(readiness): State<Arc<Readiness>>) -> Response {
    if readiness.draining() {
        return draining();
    }
    let runtime = readiness.runtime.clone();
    let checked = tokio::task::spawn_blocking(move || -> Result<(), (Unready, String)> {
        runtime.observers_ready().map_err(|why| (Unready::Receipts, why))?;
        if let Some(store) = runtime.approval_store() {
            store
                .grants(Some(&kyro_core::Caller::anonymous()), kyro_core::grants::now_ms())
                .map_err(|e| (Unready::Approvals, format!("the approval store: {e}")))?;
        }
        Ok(())
    })
    .await
    .unwrap_or_else(|e| Err((Unready::Check, e.to_string())));
    #[cfg(feature = "oauth")]
    let checked = checked.and_then(|()| match &readiness.issuer {
        Some(issuer) if !issuer.keys_held() => Err((
            Unready::Issuer,
            format!("no key of the issuer's is held yet ({})", issuer.last_problem()),
        )),
        _ => Ok(()),
    });
    match checked {
        Ok(()) => {
            readiness.report(None);
            (StatusCode::OK, "ready\n").into_response()
        }
        Err((class, detail)) => {
            let word = class.word();
            readiness.report(Some((class, detail)));
            (StatusCode::SERVICE_UNAVAILABLE, format!("not ready: {word}\n")).into_response()
        }
    }
}

/// Refuses (503) a new `/mcp` request while the server drains: it is sent again to a
/// replica that serves, and nothing of it ran here.
pub(crate) async fn refuse_while_draining(
    State(readiness): State<Arc<Readiness>>,
    request: Request,
    next: Next,
) -> Response {
    // Only a new request is refused: what belongs to one in flight (a pre-2026 session's
    // answer to a question, a cancellation, its close) passes.
    let new = request.method() == axum::http::Method::POST && !request.headers().contains_key("mcp-session-id");
    if readiness.draining() && new && request.uri().path().starts_with("/mcp") {
        refusal_line(
            StatusCode::SERVICE_UNAVAILABLE,
            "draining",
            None,
            trace_id(request.headers()).as_deref(),
        );
        let body = serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32000,
            "message": "this server is shutting down; send the request again (another replica answers it)"}});
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            [
                (CONTENT_TYPE, "application/json"),
                (axum::http::header::CONNECTION, "close"),
            ],
            body.to_string(),
        )
            .into_response();
    }
    next.run(request).await
}

impl Metrics {
    /// How many `/mcp` POSTs are being answered.
    pub(crate) fn answering(&self) -> i64 {
        self.answering.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// One JSON line a call on stderr: when, who, what, how it ended, how long, its trace.
pub(crate) struct JsonLog;

impl Observer for JsonLog {
    fn observe(&self, _receipt: &Receipt, _call: Option<&CanonicalCall>, _outcome: &Outcome) {}

    /// Logs the call as its client was told it ended; a denied call with its reason's kind.
    fn answered(&self, receipt: &Receipt, outcome: &Outcome) {
        let mut line = serde_json::json!({
            "ts_ms": receipt.started_at_ms,
            "level": if matches!(outcome, Outcome::Ok { .. }) { "info" } else { "warn" },
            "msg": "call",
            "caller": receipt.caller,
            "tool": receipt.tool,
            "outcome": receipt.outcome,
            "duration_ms": receipt.duration_us / 1000,
            "call_id": receipt.call_id,
        });
        if let Some(trace) = &receipt.traceparent {
            line["traceparent"] = trace.as_str().into();
            // The trace id of a W3C traceparent (`00-TRACE-SPAN-FLAGS`).
            if let Some(id) = trace.split('-').nth(1) {
                line["trace_id"] = id.into();
            }
        }
        if let Some(kind) = &receipt.error_kind {
            line["error_kind"] = kind.as_str().into();
        }
        if let Outcome::Denied { reason, .. } = outcome
            && let Ok(reason) = serde_json::to_value(reason)
        {
            line["reason_kind"] = reason["kind"].clone();
        }
        kyro_core::log::record(line);
    }
}

/// A request counted in flight (and among the POSTs being answered, when it is one).
struct InFlight(Arc<Metrics>, bool);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.dec();
        if self.1 {
            self.0.answering.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        }
    }
}

/// A response body that keeps its request counted in flight until it ends.
struct Counted {
    body: Body,
    _guard: InFlight,
}

impl http_body::Body for Counted {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}
