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
    fn observe(&self, receipt: &Receipt, _call: Option<&CanonicalCall>, _outcome: &Outcome) {
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

/// Counts `/mcp` requests in flight (until their response ends) and refusals by status.
pub(crate) async fn count(State(metrics): State<Arc<Metrics>>, request: Request, next: Next) -> Response {
    metrics.in_flight.inc();
    let guard = InFlight(metrics.clone());
    let response = next.run(request).await;
    let status = response.status();
    if status.is_client_error() || status == StatusCode::SERVICE_UNAVAILABLE {
        metrics.refused(status);
    }
    response.map(|body| Body::new(Counted { body, _guard: guard }))
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

/// Why the server is not ready, as a probe is told: a class, never a path or an error's
/// text, which `/readyz` answers anyone who can reach the port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unready {
    /// A receipt cannot be written (so no call runs).
    Receipts,
    /// The approval store does not answer.
    ApprovalStore,
    /// The check itself did not finish.
    Check,
}

impl Unready {
    fn reason(self) -> &'static str {
        match self {
            Unready::Receipts => "receipts cannot be written",
            Unready::ApprovalStore => "the approval store does not answer",
            Unready::Check => "the check did not finish",
        }
    }
}

/// What `/readyz` checks, and the last reason it wrote on stderr (so a failing probe every
/// few seconds says it once, until it changes).
pub(crate) struct Readiness {
    runtime: Runtime,
    reported: std::sync::Mutex<Option<String>>,
}

impl Readiness {
    pub(crate) fn new(runtime: Runtime) -> Arc<Readiness> {
        Arc::new(Readiness {
            runtime,
            reported: std::sync::Mutex::default(),
        })
    }

    /// Writes `detail` on stderr unless it was the last written; `None` (ready) forgets it.
    fn report(&self, detail: Option<String>) {
        use std::io::Write;
        let mut reported = self.reported.lock().unwrap_or_else(|e| e.into_inner());
        if *reported == detail {
            return;
        }
        if let Some(detail) = &detail {
            let _ = std::io::stderr().write_all(format!("kyro: not ready: {detail}\n").as_bytes());
        }
        *reported = detail;
    }
}

/// `GET /readyz`: 200 `ready` when the receipt log can be written and the approval store
/// answers, else 503 with the class of what is wrong; the details (paths, the store's
/// errors) go to stderr only.
pub(crate) async fn ready(State(readiness): State<Arc<Readiness>>) -> Response {
    let runtime = readiness.runtime.clone();
    let checked = tokio::task::spawn_blocking(move || -> Result<(), (Unready, String)> {
        runtime.observers_ready().map_err(|why| (Unready::Receipts, why))?;
        if let Some(store) = runtime.approval_store() {
            store
                .grants(Some(&kyro_core::Caller::anonymous()), kyro_core::grants::now_ms())
                .map_err(|e| (Unready::ApprovalStore, format!("the approval store: {e}")))?;
        }
        Ok(())
    })
    .await
    .unwrap_or_else(|e| Err((Unready::Check, e.to_string())));
    match checked {
        Ok(()) => {
            readiness.report(None);
            (StatusCode::OK, "ready\n").into_response()
        }
        Err((class, detail)) => {
            readiness.report(Some(detail));
            (
                StatusCode::SERVICE_UNAVAILABLE,
                format!("not ready: {}\n", class.reason()),
            )
                .into_response()
        }
    }
}

/// One JSON line a call on stderr: when, who, what, how it ended, how long, its trace.
pub(crate) struct JsonLog;

impl Observer for JsonLog {
    fn observe(&self, receipt: &Receipt, _call: Option<&CanonicalCall>, outcome: &Outcome) {
        use std::io::Write;
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
        let mut text = line.to_string();
        text.push('\n');
        let _ = std::io::stderr().write_all(text.as_bytes());
    }
}

struct InFlight(Arc<Metrics>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.dec();
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
