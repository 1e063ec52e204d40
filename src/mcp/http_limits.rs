//! What HTTP clients can hold of the server: a number of sessions, and per session a number
//! of requests in flight. Past either, the request is refused at once with an HTTP status
//! and a JSON-RPC error (never queued, so memory stays bounded whatever the clients send);
//! notifications and responses (a cancellation, an elicitation answer) always pass.
//! Bodies past the frame cap get `413`; every message is checked as strictly as on stdio.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use serde_json::{Value, json};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::frames::Passed;

/// The header naming a request's session.
const SESSION: &str = "mcp-session-id";

/// The bounds and what they count.
pub(crate) struct HttpLimits {
    max_sessions: usize,
    max_in_flight: usize,
    max_body: usize,
    sessions: Arc<LocalSessionManager>,
    /// Requests in flight per session id; entries of closed sessions are pruned when a
    /// session opens, so the map stays within the session bound.
    in_flight: Mutex<HashMap<String, Arc<Semaphore>>>,
    /// Held while a session is being opened, so two at once cannot both pass the bound.
    opening: tokio::sync::Mutex<()>,
}

impl HttpLimits {
    pub(crate) fn new(
        sessions: Arc<LocalSessionManager>,
        max_sessions: usize,
        max_in_flight: usize,
        max_body: usize,
    ) -> HttpLimits {
        HttpLimits {
            max_sessions: max_sessions.max(1),
            max_in_flight: max_in_flight.max(1),
            max_body,
            sessions,
            in_flight: Mutex::default(),
            opening: tokio::sync::Mutex::new(()),
        }
    }

    fn counter(&self, session: &str) -> Arc<Semaphore> {
        let mut map = self.in_flight.lock().unwrap_or_else(|e| e.into_inner());
        map.entry(session.to_owned())
            .or_insert_with(|| Arc::new(Semaphore::new(self.max_in_flight)))
            .clone()
    }
}

/// The middleware: bounds sessions (a POST without a session id opens one) and requests in
/// flight per session.
pub(crate) async fn limit(State(limits): State<Arc<HttpLimits>>, request: Request, next: Next) -> Response {
    if request.method() != axum::http::Method::POST {
        return next.run(request).await;
    }
    let session = request
        .headers()
        .get(SESSION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    // Every message is read whole (up to the cap) and checked as strictly as on stdio: a
    // duplicate key or `1e400` in a request's params is answered -32602 with its id, before
    // rmcp's parser collapses or refuses it without an answer.
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, limits.max_body).await {
        Ok(bytes) => bytes,
        Err(error) => {
            let over = std::error::Error::source(&error).is_some_and(|e| e.is::<http_body_util::LengthLimitError>());
            return if over {
                refuse(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    Value::Null,
                    format!("the request body is over {} bytes", limits.max_body),
                )
            } else {
                refuse(
                    StatusCode::BAD_REQUEST,
                    Value::Null,
                    format!("the request body could not be read: {error}"),
                )
            };
        }
    };
    let (passed, message) = match crate::frames::check(&bytes) {
        Ok(checked) => checked,
        Err(line) => {
            let answered = serde_json::from_slice::<Value>(&line).is_ok_and(|v| !v["id"].is_null());
            let status = if answered {
                StatusCode::OK
            } else {
                StatusCode::BAD_REQUEST
            };
            return (status, [(axum::http::header::CONTENT_TYPE, "application/json")], line).into_response();
        }
    };
    let id = match passed {
        Passed::Request(_) => Some(message.get("id").cloned().unwrap_or(Value::Null)),
        Passed::Cancelled(_) | Passed::Other => None,
    };
    let opens_session = session.is_none() && method(&bytes).as_deref() == Some("initialize");
    let request = Request::from_parts(parts, Body::from(bytes));
    if opens_session {
        let _opening = limits.opening.lock().await;
        let open: Vec<String> = limits
            .sessions
            .sessions
            .read()
            .await
            .keys()
            .map(|id| id.to_string())
            .collect();
        limits
            .in_flight
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|id, _| open.contains(id));
        if open.len() >= limits.max_sessions {
            return refuse(
                StatusCode::SERVICE_UNAVAILABLE,
                id.unwrap_or(Value::Null),
                format!(
                    "the server has {} sessions open, its limit ([limits] max_sessions); close one \
                     (DELETE /mcp with its Mcp-Session-Id) or wait until an idle one expires",
                    open.len()
                ),
            );
        }
        // The session is made while `opening` is held.
        return next.run(request).await;
    }
    // Requests without a session (stateless protocol versions) share one bound.
    let session = session.unwrap_or_default();
    // Only requests count; what else a client posts (a cancellation, an answer) passes.
    let Some(id) = id else {
        return next.run(request).await;
    };
    let Ok(permit) = limits.counter(&session).try_acquire_owned() else {
        return refuse(
            StatusCode::TOO_MANY_REQUESTS,
            id,
            format!(
                "this session has {} requests in flight, its limit ([limits] max_in_flight); \
                 send this one again when one is answered",
                limits.max_in_flight
            ),
        );
    };
    // The permit is held until the response (an SSE stream) has been sent to its end.
    next.run(request)
        .await
        .map(|body| Body::new(Holding { body, _permit: permit }))
}

/// The method of a message, if it has one.
fn method(body: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Head {
        method: Option<String>,
    }
    serde_json::from_slice::<Head>(body).ok()?.method
}

/// A refusal: the status, and a JSON-RPC error a client can show.
fn refuse(status: StatusCode, id: Value, message: String) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32000, "message": message}});
    (
        status,
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// A response body that keeps its request's place in flight until it ends.
struct Holding {
    body: Body,
    _permit: OwnedSemaphorePermit,
}

impl http_body::Body for Holding {
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
