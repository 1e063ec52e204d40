//! What HTTP clients can hold of the server: pre-2026 sessions, a number in all and per
//! caller, and per session (or, for stateless requests, per caller) a number of requests
//! in flight. Past a session bound the least recently used idle session (nothing in
//! flight) is closed to make room, the caller's own first, so clients that never send
//! `DELETE` cannot lock others out; only when every session is busy is a new one refused.
//! Past the in-flight bound the request is refused at once with an HTTP status and a
//! JSON-RPC error (never queued, so memory stays bounded whatever the clients send);
//! notifications and responses (a cancellation, an elicitation answer) always pass. A
//! session answers only to the caller that opened it. Bodies past the frame cap get `413`;
//! every message is checked as strictly as on stdio.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use kyro_core::Caller;
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use serde_json::{Value, json};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::frames::Passed;

/// The header naming a request's session.
const SESSION: &str = "mcp-session-id";
/// Stateless callers whose in-flight counters are kept before idle ones are dropped.
const MOST_STATELESS_CALLERS: usize = 1024;

/// An open pre-2026 session as the bounds see it.
struct Open {
    caller: Caller,
    last_used: Instant,
    in_flight: Arc<Semaphore>,
}

/// The bounds and what they count.
pub(crate) struct HttpLimits {
    max_sessions: usize,
    max_per_caller: usize,
    max_in_flight: usize,
    max_body: usize,
    sessions: Arc<LocalSessionManager>,
    /// The sessions opened through these bounds; entries of sessions rmcp closed (expired)
    /// are pruned when a session opens, so the map stays within the session bound.
    open: Mutex<HashMap<String, Open>>,
    /// Requests in flight of each caller's stateless (2026-07-28) requests.
    stateless: Mutex<HashMap<Caller, Arc<Semaphore>>>,
    /// Held while a session is being opened, so two at once cannot both pass the bound.
    opening: tokio::sync::Mutex<()>,
    /// The state replicas share: whose each session is, so that a session another
    /// replica opened is taken over here for its own caller only.
    #[cfg(feature = "postgres")]
    pub(crate) shared: Option<kyro_tools::state::PgState>,
}

impl HttpLimits {
    pub(crate) fn new(sessions: Arc<LocalSessionManager>, transport: crate::Transport, max_body: usize) -> HttpLimits {
        HttpLimits {
            max_sessions: (transport.max_sessions as usize).max(1),
            max_per_caller: (transport.max_sessions_per_caller as usize).max(1),
            max_in_flight: (transport.max_in_flight as usize).max(1),
            max_body,
            sessions,
            open: Mutex::default(),
            stateless: Mutex::default(),
            opening: tokio::sync::Mutex::new(()),
            #[cfg(feature = "postgres")]
            shared: None,
        }
    }

    /// Makes room for one more session of `caller` (closing the least recently used idle
    /// one if need be), with `opening` held.
    async fn make_room(&self, caller: &Caller) -> Result<(), String> {
        let alive: std::collections::HashSet<String> = self
            .sessions
            .sessions
            .read()
            .await
            .keys()
            .map(|id| id.to_string())
            .collect();
        self.open().retain(|id, _| alive.contains(id));
        if let Some(oldest) = self.room_for(caller)? {
            self.open().remove(&oldest);
            let _ = self.sessions.close_session(&oldest.clone().into()).await;
            #[cfg(feature = "postgres")]
            if let Some(shared) = &self.shared {
                let _ = shared.session_delete(&oldest).await;
            }
        }
        Ok(())
    }

    /// Counts `id`, now open here, as `caller`'s.
    fn opened(&self, id: &str, caller: Caller) -> Arc<Semaphore> {
        let in_flight = Arc::new(Semaphore::new(self.max_in_flight));
        let open = Open {
            caller,
            last_used: Instant::now(),
            in_flight: in_flight.clone(),
        };
        self.open().insert(id.to_owned(), open);
        in_flight
    }

    /// A session this replica does not hold, which another may have opened: taken over
    /// (counted here, and rmcp restores it from the store) when it is `caller`'s; `Err`
    /// when it is another's or nobody's. `Ok(None)`: the store does not know it either.
    #[cfg(feature = "postgres")]
    async fn adopt(&self, id: &str, caller: &Caller) -> Result<Option<Arc<Semaphore>>, Response> {
        let Some(shared) = &self.shared else {
            return Ok(None);
        };
        let unknown = || refuse(StatusCode::NOT_FOUND, Value::Null, "no such session".into());
        let _opening = self.opening.lock().await;
        if let Some(open) = self.open().get(id) {
            return if open.caller == *caller {
                Ok(Some(open.in_flight.clone()))
            } else {
                Err(unknown())
            };
        }
        match shared.session_load(id).await {
            Ok(None) => Ok(None),
            Ok(Some((Some(owner), Some(_)))) if owner == caller.name() => {
                self.make_room(caller)
                    .await
                    .map_err(|message| refuse(StatusCode::SERVICE_UNAVAILABLE, Value::Null, message))?;
                Ok(Some(self.opened(id, caller.clone())))
            }
            Ok(Some(_)) => Err(unknown()),
            Err(e) => Err(refuse(StatusCode::SERVICE_UNAVAILABLE, Value::Null, e)),
        }
    }

    fn open(&self) -> std::sync::MutexGuard<'_, HashMap<String, Open>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The in-flight counter of `caller`'s stateless requests.
    fn stateless_counter(&self, caller: &Caller) -> Arc<Semaphore> {
        let mut map = self.stateless.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= MOST_STATELESS_CALLERS && !map.contains_key(caller) {
            let full = self.max_in_flight;
            map.retain(|_, counter| counter.available_permits() < full);
        }
        map.entry(caller.clone())
            .or_insert_with(|| Arc::new(Semaphore::new(self.max_in_flight)))
            .clone()
    }

    /// Makes room for a session of `caller`: nothing to do, a session to close first, or
    /// the refusal when every session that would have to go is busy.
    fn room_for(&self, caller: &Caller) -> Result<Option<String>, String> {
        let open = self.open();
        let idle = |o: &&Open| o.in_flight.available_permits() == self.max_in_flight;
        let oldest_idle = |mine: bool| {
            open.iter()
                .filter(|(_, o)| !mine || o.caller == *caller)
                .filter(|(_, o)| idle(o))
                .min_by_key(|(_, o)| o.last_used)
                .map(|(id, _)| id.clone())
        };
        let mine = open.values().filter(|o| o.caller == *caller).count();
        if mine >= self.max_per_caller {
            return oldest_idle(true).map(Some).ok_or_else(|| {
                format!(
                    "this caller has {mine} sessions open and each has a request in flight, its limit \
                     ([limits] max_sessions_per_caller); close one (DELETE /mcp with its Mcp-Session-Id)"
                )
            });
        }
        if open.len() >= self.max_sessions {
            return oldest_idle(false).map(Some).ok_or_else(|| {
                format!(
                    "the server has {} sessions open and each has a request in flight, its limit \
                     ([limits] max_sessions); try again when one is answered",
                    open.len()
                )
            });
        }
        Ok(None)
    }
}

/// The middleware: bounds sessions (a POST without a session id opens one) and requests in
/// flight per session, keeps each session to its caller, and answers a `DELETE` that
/// closed a session `204 No Content`.
pub(crate) async fn limit(State(limits): State<Arc<HttpLimits>>, request: Request, next: Next) -> Response {
    let session = request
        .headers()
        .get(SESSION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let caller = request
        .extensions()
        .get::<Caller>()
        .cloned()
        .unwrap_or_else(Caller::anonymous);
    // A session answers to the caller that opened it only; to anyone else it is unknown.
    let counter = match &session {
        Some(id) => {
            let held = match limits.open().get_mut(id) {
                Some(o) if o.caller != caller => {
                    return refuse(StatusCode::NOT_FOUND, Value::Null, "no such session".into());
                }
                Some(o) => {
                    o.last_used = Instant::now();
                    Some(o.in_flight.clone())
                }
                None => None,
            };
            #[cfg(feature = "postgres")]
            let held = match held {
                Some(held) => Some(held),
                None => match limits.adopt(id, &caller).await {
                    Ok(adopted) => adopted,
                    Err(refused) => return refused,
                },
            };
            held
        }
        None => None,
    };
    if request.method() == axum::http::Method::DELETE {
        let response = next.run(request).await;
        if response.status() != StatusCode::ACCEPTED {
            return response;
        }
        if let Some(id) = &session {
            limits.open().remove(id);
        }
        // The official clients take 200 or 204 as "terminated" (202 logs a failure).
        return StatusCode::NO_CONTENT.into_response();
    }
    if request.method() != axum::http::Method::POST {
        return next.run(request).await;
    }
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
        if let Err(message) = limits.make_room(&caller).await {
            return refuse(StatusCode::SERVICE_UNAVAILABLE, id.unwrap_or(Value::Null), message);
        }
        // The session is made while `opening` is held.
        let response = next.run(request).await;
        if let Some(opened) = response.headers().get(SESSION).and_then(|v| v.to_str().ok()) {
            // Whose it is, for the replicas that may be asked to take it over.
            #[cfg(feature = "postgres")]
            if let Some(shared) = &limits.shared
                && let Err(e) = shared.session_own(opened, caller.name()).await
            {
                kyro_core::log::warn(&format!("session {opened} cannot be taken over by other replicas: {e}"));
            }
            limits.opened(opened, caller);
        }
        return response;
    }
    // Only requests count; what else a client posts (a cancellation, an answer) passes.
    let Some(id) = id else {
        return next.run(request).await;
    };
    // Requests without a session (stateless protocol versions) count per caller.
    let (counter, whose) = match counter {
        Some(counter) => (counter, "this session"),
        None => (limits.stateless_counter(&caller), "this caller"),
    };
    let Ok(permit) = counter.try_acquire_owned() else {
        return refuse(
            StatusCode::TOO_MANY_REQUESTS,
            id,
            format!(
                "{whose} has {} requests in flight, its limit ([limits] max_in_flight); \
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
