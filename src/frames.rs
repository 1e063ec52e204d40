//! The stdio edge of the MCP server: every line the client sends is checked before rmcp
//! sees it, so a malformed message gets its JSON-RPC error and the server goes on.
//!
//! - more than [`MAX_FRAME`] bytes without a newline: `-32600`, the rest of the line is
//!   skipped without being kept; answered under the request's id when its first bytes
//!   name it ([`oversized`]), `null` otherwise;
//! - a request whose id is that of a request still in flight: `-32600` at once, and it
//!   never runs (rmcp would run both and lose one answer; see [`in_flight`]);
//! - not JSON, a lone surrogate, nesting past 128 levels, a duplicate key, a number out of
//!   range (`1e400`): `-32700`, or `-32602` with the request's id when its `id` and
//!   `method` can still be read (the fault is inside its `params`), so that every request
//!   gets its one answer;
//! - not a JSON-RPC object (an array, `jsonrpc` not "2.0", `method` not a string, `params`
//!   neither object nor array): `-32600`;
//! - `tools/call` whose `name` is not a string or whose `arguments` is not an object:
//!   `-32602`.
//!
//! Lines that pass go to rmcp unchanged; its answers and these errors are written to
//! stdout one whole line at a time.
//!
//! Backpressure: at most `max_in_flight` requests are with rmcp at once (forwarded and not
//! yet answered or cancelled). When that many are, this edge stops reading stdin, so a
//! burst of any size waits in the client's pipe instead of in kyro's memory (rmcp starts a
//! task per request it reads). Responses and notifications from the client never wait
//! behind that bound while a request is held: one request is read ahead at most.

pub(crate) mod first_answer;
mod in_flight;
mod oversized;
mod stdio;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rmcp::RoleServer;
use rmcp::model::{JsonRpcMessage, RequestId};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use in_flight::InFlight;

/// The longest message accepted, in bytes.
pub(crate) const MAX_FRAME: usize = 8 * 1024 * 1024;

/// Lines waiting to be written to stdout (answers and errors); a slow reader of stdout
/// slows the server down instead of growing this.
const OUTPUT_QUEUE: usize = 64;

/// Checked messages waiting for rmcp's loop to take them.
const INPUT_QUEUE: usize = 16;

/// The most bytes written to stdout in one write: the answers queued by then, together.
const WRITE_BATCH: usize = 1024 * 1024;

/// The transport rmcp serves on: messages the client sent, each checked and parsed once
/// (rmcp gets its typed message, not text to parse again), and answers serialized once
/// straight into the lines written to stdout; and the writer's task, to await once rmcp
/// is done so that the last answers reach stdout before the process ends.
pub(crate) fn guarded_stdio(max_in_flight: usize, hooks: Hooks) -> (Guarded, tokio::task::JoinHandle<()>) {
    guarded(stdio::stdin(), stdio::stdout(), max_in_flight, hooks)
}

/// What the server does at this edge.
pub(crate) struct Hooks {
    /// Runs before each write of answers (the server writes out the receipts it holds back
    /// there, so a receipt is in its log before the answer leaves).
    pub before_write: Box<dyn Fn() + Send + Sync>,
    /// The registry's version. With it, the answer rmcp gave to `tools/list` without a
    /// cursor is kept, serialized, and a later such request of the same version is answered
    /// here with those bytes instead of being listed and serialized again.
    pub version: Option<Box<dyn Fn() -> u64 + Send + Sync>>,
}

impl Default for Hooks {
    fn default() -> Hooks {
        Hooks {
            before_write: Box::new(|| ()),
            version: None,
        }
    }
}

/// The registry's version and the kept `tools/list` answer, as the reader sees them.
type Kept = (Box<dyn Fn() -> u64 + Send + Sync>, Arc<Mutex<Listing>>);

/// The kept `tools/list` answer.
#[derive(Default)]
struct Listing {
    /// Requests for the first page passed to rmcp, by id, with the registry version then.
    asked: HashMap<String, u64>,
    /// The `result` of the first page answered last, serialized, and its version.
    kept: Option<(u64, Arc<Vec<u8>>)>,
}

/// [`guarded_stdio`] over any pair of streams.
pub(crate) fn guarded(
    input: impl AsyncRead + Send + Unpin + 'static,
    output: impl AsyncWrite + Send + Unpin + 'static,
    max_in_flight: usize,
    hooks: Hooks,
) -> (Guarded, tokio::task::JoinHandle<()>) {
    let (incoming, received) = mpsc::channel(INPUT_QUEUE);
    let (lines, queue) = mpsc::channel::<Vec<u8>>(OUTPUT_QUEUE);
    let writer = tokio::spawn(write_lines(queue, output, hooks.before_write));
    let in_flight = InFlight::new(max_in_flight);
    let listing = hooks.version.map(|version| (version, Arc::<Mutex<Listing>>::default()));
    let kept = listing.as_ref().map(|(_, kept)| kept.clone());
    tokio::spawn(check_requests(
        input,
        incoming,
        (lines.clone(), listing),
        in_flight.clone(),
    ));
    let transport = Guarded {
        received,
        lines,
        in_flight,
        listing: kept,
    };
    (transport, writer)
}

/// The stdio transport rmcp's service loop drives.
pub(crate) struct Guarded {
    received: mpsc::Receiver<RxJsonRpcMessage<RoleServer>>,
    lines: mpsc::Sender<Vec<u8>>,
    in_flight: InFlight,
    listing: Option<Arc<Mutex<Listing>>>,
}

impl rmcp::transport::Transport<RoleServer> for Guarded {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), std::io::Error>> + Send + 'static {
        let answered = match &item {
            JsonRpcMessage::Response(response) => Some(typed_key(&response.id)),
            JsonRpcMessage::Error(error) => error.id.as_ref().map(typed_key),
            _ => None,
        };
        // The id is free again from here, before the answer can reach the client; the
        // request's room is given back once its answer is queued for stdout, not before:
        // answers waiting for a slow reader count against the bound.
        let room = answered.and_then(|id| self.in_flight.answered(&id));
        if let (Some(listing), JsonRpcMessage::Response(response)) = (&self.listing, &item) {
            keep_listing(listing, response);
        }
        // Serialized here, once, into the line that goes out.
        let line = serde_json::to_vec(&item).map(|mut line| {
            line.push(b'\n');
            line
        });
        let lines = self.lines.clone();
        async move {
            let line = line.map_err(std::io::Error::other)?;
            let sent = lines
                .send(line)
                .await
                .map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "stdout is closed"));
            drop(room);
            sent
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleServer>>> + Send {
        self.received.recv()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), std::io::Error>> + Send {
        self.received.close();
        std::future::ready(Ok(()))
    }
}

/// Writes whole lines to `output`, in the order they were queued; the lines queued while
/// one write was under way go out together in the next.
async fn write_lines(
    mut queue: mpsc::Receiver<Vec<u8>>,
    mut output: impl AsyncWrite + Unpin,
    before_write: Box<dyn Fn() + Send + Sync>,
) {
    let mut batch: Vec<u8> = Vec::new();
    while let Some(line) = queue.recv().await {
        batch.clear();
        batch.extend_from_slice(&line);
        while batch.len() < WRITE_BATCH
            && let Ok(line) = queue.try_recv()
        {
            batch.extend_from_slice(&line);
        }
        before_write();
        if output.write_all(&batch).await.is_err() || output.flush().await.is_err() {
            return;
        }
        first_answer::written();
        if batch.capacity() > WRITE_BATCH * 2 {
            batch = Vec::new();
        }
    }
}

/// A message's `id` and whether it has a `method`, read with everything else skipped
/// unconverted (so a params value no strict parse accepts, `1e400`, does not hide them).
fn head(line: &[u8]) -> Option<(Option<Value>, bool)> {
    #[derive(serde::Deserialize)]
    struct Head {
        id: Option<Value>,
        method: Option<serde::de::IgnoredAny>,
    }
    let head: Head = serde_json::from_slice(line).ok()?;
    Some((head.id, head.method.is_some()))
}

/// The id of a request whose params do not parse strictly (a duplicate key, `1e400`).
pub(crate) fn request_id(text: &str) -> Option<Value> {
    match head(text.as_bytes())? {
        (Some(id), true) if id.is_string() || id.is_i64() || id.is_u64() => Some(id),
        _ => None,
    }
}

/// A request id as a map key: numbers and strings kept apart (`1` is not `"1"`).
fn id_key(id: &Value) -> String {
    id.to_string()
}

/// [`id_key`] of rmcp's typed id (the same JSON text).
fn typed_key(id: &RequestId) -> String {
    serde_json::to_string(id).unwrap_or_default()
}

/// Reads the client's lines, answers the malformed ones, passes the rest to rmcp, holding
/// requests back while rmcp has the maximum in flight.
async fn check_requests(
    input: impl AsyncRead + Unpin,
    to_rmcp: mpsc::Sender<RxJsonRpcMessage<RoleServer>>,
    (lines, listing): (mpsc::Sender<Vec<u8>>, Option<Kept>),
    in_flight: InFlight,
) {
    type Message = RxJsonRpcMessage<RoleServer>;
    let mut reader = Frames::new(input);
    let mut initialized = false;
    // A request read while rmcp holds the maximum: it waits here (one at most) while the
    // messages behind it that need no room (responses, notifications) still pass.
    let mut held: Option<(String, Message)> = None;
    loop {
        let frame = match held.take() {
            None => reader.next().await,
            Some((id, request)) => {
                tokio::select! {
                    biased;
                    permit = in_flight.permits.clone().acquire_owned() => {
                        let Ok(permit) = permit else { return };
                        in_flight.admit(id, permit);
                        if to_rmcp.send(request).await.is_err() {
                            return;
                        }
                        continue;
                    }
                    frame = reader.next() => {
                        held = Some((id, request));
                        frame
                    }
                }
            }
        };
        let Some(frame) = frame else { return };
        let passed = match frame {
            Frame::Oversized(start) => Err(error(
                oversized::request_id(&start).unwrap_or(Value::Null),
                -32600,
                format!("Invalid Request: the message is over the {MAX_FRAME}-byte limit"),
            )),
            Frame::Line(line) => check(&line).and_then(|(passed, message)| {
                initialized |= message["method"] == "notifications/initialized";
                if let Passed::Request(id) = &passed
                    && (in_flight.taken(id) || held.as_ref().is_some_and(|(held_id, _)| held_id == id))
                {
                    return Err(error(
                        message["id"].clone(),
                        -32600,
                        format!(
                            "Invalid Request: a request with id {id} is already in flight; an id may be used again once its request is answered"
                        ),
                    ));
                }
                if let (true, Some((version, kept))) = (initialized, &listing)
                    && let Some(answer) = listed(&passed, &message, version(), kept)
                {
                    return Err(answer);
                }
                typed(passed, message)
            }),
        };
        let (passed, message) = match passed {
            Ok((passed, Some(message))) => (passed, message),
            Ok((_, None)) => continue,
            Err(answer) => {
                if lines.send(answer).await.is_err() {
                    return;
                }
                continue;
            }
        };
        match passed {
            Passed::Request(id) => {
                if let Some((held_id, request)) = held.take() {
                    // A second request while one is held: wait for room for the first.
                    let Ok(permit) = in_flight.permits.clone().acquire_owned().await else {
                        return;
                    };
                    in_flight.admit(held_id, permit);
                    if to_rmcp.send(request).await.is_err() {
                        return;
                    }
                }
                match in_flight.permits.clone().try_acquire_owned() {
                    Ok(permit) => in_flight.admit(id, permit),
                    Err(_) => {
                        held = Some((id, message));
                        continue;
                    }
                }
            }
            Passed::Cancelled(id) => {
                if held.as_ref().is_some_and(|(held_id, _)| *held_id == id) {
                    // Cancelled before rmcp saw it: it never runs, and needs no answer.
                    held = None;
                    continue;
                }
                in_flight.cancelled(&id);
            }
            Passed::Other => {}
        }
        if to_rmcp.send(message).await.is_err() {
            return;
        }
    }
}

/// The answer to a `tools/list` request without a cursor from the kept bytes, when they are
/// of the registry's `version`; otherwise the request is noted, to keep rmcp's answer.
fn listed(passed: &Passed, message: &Value, version: u64, listing: &Mutex<Listing>) -> Option<Vec<u8>> {
    let first_page = message
        .get("params")
        .and_then(|p| p.get("cursor"))
        .is_none_or(Value::is_null);
    let Passed::Request(key) = passed else { return None };
    if message["method"] != "tools/list" || !first_page {
        return None;
    }
    let mut listing = listing.lock().unwrap_or_else(|p| p.into_inner());
    let result = match &listing.kept {
        Some((kept, result)) if *kept == version => result.clone(),
        _ => {
            if listing.asked.len() < 1024 {
                listing.asked.insert(key.clone(), version);
            }
            return None;
        }
    };
    let id = serde_json::to_vec(message.get("id")?).ok()?;
    let mut line = Vec::with_capacity(result.len() + id.len() + 40);
    line.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    line.extend_from_slice(&id);
    line.extend_from_slice(b",\"result\":");
    line.extend_from_slice(&result);
    line.extend_from_slice(b"}\n");
    Some(line)
}

/// Keeps rmcp's answer to a noted `tools/list` request, with the version noted (a list
/// made after a later change is kept under the earlier version, so it is never served:
/// versions only grow).
fn keep_listing(listing: &Mutex<Listing>, response: &rmcp::model::JsonRpcResponse<rmcp::model::ServerResult>) {
    let mut listing = listing.lock().unwrap_or_else(|p| p.into_inner());
    let Some(version) = listing.asked.remove(&typed_key(&response.id)) else {
        return;
    };
    if let rmcp::model::ServerResult::ListToolsResult(result) = &response.result
        && result.next_cursor.is_none()
        && let Ok(bytes) = serde_json::to_vec(&response.result)
    {
        listing.kept = Some((version, Arc::new(bytes)));
    }
}

/// A checked message as rmcp's typed message. A request whose params do not have the shape
/// its method takes is answered here (`-32602`, with its id); a notification or response
/// of no shape rmcp knows is dropped, as rmcp's own stdio transport drops it.
fn typed(passed: Passed, message: Value) -> Result<(Passed, Option<RxJsonRpcMessage<RoleServer>>), Vec<u8>> {
    if message.is_null() {
        return Ok((passed, None)); // a blank line
    }
    let id = match &passed {
        Passed::Request(_) => message.get("id").cloned(),
        _ => None,
    };
    match serde_json::from_value(message) {
        Ok(typed) => Ok((passed, Some(typed))),
        Err(e) => match id {
            Some(id) => Err(error(id, -32602, format!("Invalid params: {e}"))),
            None => Ok((passed, None)),
        },
    }
}

/// One line the client sent, or the fact that it was over [`MAX_FRAME`], with its first
/// bytes (at most [`oversized::HEAD`]).
enum Frame {
    Line(Vec<u8>),
    Oversized(Vec<u8>),
}

/// The client's stream cut into lines; `next` is cancel-safe (a partial line stays here).
struct Frames<R> {
    reader: BufReader<R>,
    frame: Vec<u8>,
    oversized: bool,
}

impl<R: AsyncRead + Unpin> Frames<R> {
    fn new(input: R) -> Frames<R> {
        Frames {
            reader: BufReader::with_capacity(64 * 1024, input),
            frame: Vec::new(),
            oversized: false,
        }
    }

    /// The next whole line; `None` at the end of the stream.
    async fn next(&mut self) -> Option<Frame> {
        loop {
            let chunk = match self.reader.fill_buf().await {
                Ok([]) | Err(_) => return None,
                Ok(chunk) => chunk,
            };
            let (part, complete) = match chunk.iter().position(|b| *b == b'\n') {
                Some(i) => (&chunk[..=i], true),
                None => (chunk, false),
            };
            let used = part.len();
            if !self.oversized {
                if self.frame.len() + used > MAX_FRAME + 1 {
                    // Only the start is kept, to look for the id in.
                    self.oversized = true;
                    let room = oversized::HEAD.saturating_sub(self.frame.len());
                    self.frame.extend_from_slice(&part[..room.min(used)]);
                    self.frame.truncate(oversized::HEAD);
                    self.frame.shrink_to_fit();
                } else {
                    self.frame.extend_from_slice(part);
                }
            }
            self.reader.consume(used);
            if complete {
                let frame = std::mem::take(&mut self.frame);
                return Some(if std::mem::take(&mut self.oversized) {
                    Frame::Oversized(frame)
                } else {
                    Frame::Line(frame)
                });
            }
        }
    }
}

/// What a frame that may go to rmcp is.
#[derive(Debug, PartialEq)]
pub(crate) enum Passed {
    /// A request: rmcp answers it (keyed by [`id_key`]).
    Request(String),
    /// `notifications/cancelled` for a request (no answer will come).
    Cancelled(String),
    /// A notification, a response to kyro's own request, or a blank line.
    Other,
}

/// The error line for a malformed frame, or what the frame is when it may go to rmcp, with
/// the message (read once: the strict parse that checks it also says what it is; `null`
/// for a blank line).
pub(crate) fn check(frame: &[u8]) -> Result<(Passed, Value), Vec<u8>> {
    let text = match std::str::from_utf8(frame) {
        Ok(text) => text.trim(),
        Err(_) => {
            return Err(error(
                Value::Null,
                -32700,
                "Parse error: the message is not UTF-8".into(),
            ));
        }
    };
    if text.is_empty() {
        return Ok((Passed::Other, Value::Null));
    }
    let message = match kyro_core::parse_strict(text) {
        Ok(message) => message,
        Err(strict) => {
            // A duplicate key or a number out of range inside a request's params: answer
            // that request, so that every request gets its one answer.
            if let Some(id) = request_id(text) {
                return Err(error(id, -32602, format!("Invalid params: {strict}")));
            }
            return Err(error(Value::Null, -32700, format!("Parse error: {strict}")));
        }
    };
    let Some(object) = message.as_object() else {
        return Err(error(
            Value::Null,
            -32600,
            "Invalid Request: a message is one JSON object (batches are not part of MCP)".into(),
        ));
    };
    let id = object.get("id").cloned().unwrap_or(Value::Null);
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(error(id, -32600, "Invalid Request: `jsonrpc` must be \"2.0\"".into()));
    }
    let Some(method) = object.get("method") else {
        return Ok((Passed::Other, message)); // a response to one of kyro's own requests
    };
    let Some(method) = method.as_str() else {
        return Err(error(id, -32600, "Invalid Request: `method` must be a string".into()));
    };
    if object.contains_key("id") && !(id.is_string() || id.is_i64() || id.is_u64()) {
        return Err(error(
            Value::Null,
            -32600,
            "Invalid Request: `id` must be a string or an integer".into(),
        ));
    }
    let params = object.get("params");
    if params.is_some_and(|p| !p.is_object() && !p.is_array()) {
        return Err(error(
            id,
            -32600,
            "Invalid Request: `params` must be an object or an array".into(),
        ));
    }
    if method == "tools/call" {
        let params = params.and_then(Value::as_object);
        let Some(params) = params else {
            return Err(error(id, -32602, "Invalid params: tools/call takes an object".into()));
        };
        if !params.get("name").is_some_and(Value::is_string) {
            return Err(error(id, -32602, "Invalid params: `name` must be a string".into()));
        }
        if params.get("arguments").is_some_and(|a| !a.is_object() && !a.is_null()) {
            return Err(error(
                id,
                -32602,
                "Invalid params: `arguments` must be a JSON object of the tool's arguments".into(),
            ));
        }
    }
    let passed = match (method, object.get("id")) {
        ("notifications/cancelled", None) => params
            .and_then(|p| p.get("requestId"))
            .map_or(Passed::Other, |id| Passed::Cancelled(id_key(id))),
        (_, Some(id)) => Passed::Request(id_key(id)),
        _ => Passed::Other,
    };
    Ok((passed, message))
}

fn error(id: Value, code: i64, message: String) -> Vec<u8> {
    let mut line = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string();
    line.push('\n');
    line.into_bytes()
}

#[cfg(test)]
mod tests;
