//! The stdio edge of the MCP server: every line the client sends is checked before rmcp
//! sees it, so a malformed message gets its JSON-RPC error and the server goes on.
//!
//! - more than [`MAX_FRAME`] bytes without a newline: `-32600`, the rest of the line is
//!   skipped without being kept;
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

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rmcp::RoleServer;
use rmcp::model::{JsonRpcMessage, RequestId};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};

/// The longest message accepted, in bytes.
pub const MAX_FRAME: usize = 8 * 1024 * 1024;

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
pub fn guarded_stdio(max_in_flight: usize, hooks: Hooks) -> (Guarded, tokio::task::JoinHandle<()>) {
    guarded(stdin(), stdout(), max_in_flight, hooks)
}

/// What the server does at this edge.
pub struct Hooks {
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

/// Standard input: a pipe is read through the runtime's poller; anything else (a file, a
/// terminal) through tokio's blocking reader.
fn stdin() -> Box<dyn AsyncRead + Send + Unpin> {
    let fd = std::os::fd::AsRawFd::as_raw_fd(&std::io::stdin());
    match dup_pipe(fd).map(tokio::net::unix::pipe::Receiver::from_owned_fd) {
        Some(Ok(pipe)) => Box::new(pipe),
        _ => Box::new(tokio::io::stdin()),
    }
}

/// Standard output, as [`stdin`] reads standard input.
fn stdout() -> Box<dyn AsyncWrite + Send + Unpin> {
    let fd = std::os::fd::AsRawFd::as_raw_fd(&std::io::stdout());
    match dup_pipe(fd).map(tokio::net::unix::pipe::Sender::from_owned_fd) {
        Some(Ok(pipe)) => Box::new(pipe),
        _ => Box::new(tokio::io::stdout()),
    }
}

/// A duplicate of `fd` when it is a pipe, for the runtime's poller (which puts it in
/// non-blocking mode: the pipe is the one the client made for kyro, and what kyro starts
/// never inherits kyro's stdin or stdout).
fn dup_pipe(fd: std::os::fd::RawFd) -> Option<std::os::fd::OwnedFd> {
    use std::os::unix::fs::FileTypeExt;
    // SAFETY: fd 0 and 1 stay open for the life of the process.
    let duplicate = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) }
        .try_clone_to_owned()
        .ok()?;
    let file = std::fs::File::from(duplicate);
    file.metadata()
        .ok()
        .filter(|m| m.file_type().is_fifo())
        .map(|_| file.into())
}

/// [`guarded_stdio`] over any pair of streams.
pub fn guarded(
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
pub struct Guarded {
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
        if let (Some(listing), JsonRpcMessage::Response(response)) = (&self.listing, &item) {
            keep_listing(listing, response);
        }
        // Serialized here, once, into the line that goes out.
        let line = serde_json::to_vec(&item).map(|mut line| {
            line.push(b'\n');
            line
        });
        let lines = self.lines.clone();
        let in_flight = self.in_flight.clone();
        async move {
            let line = line.map_err(std::io::Error::other)?;
            let sent = lines
                .send(line)
                .await
                .map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "stdout is closed"));
            // The request's room is given back once its answer is queued for stdout, not
            // before: answers waiting for a slow reader count against the bound.
            if let Some(id) = answered {
                in_flight.leave(&id);
            }
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
        if batch.capacity() > WRITE_BATCH * 2 {
            batch = Vec::new();
        }
    }
}

/// The requests rmcp holds: one permit each, by id, given back with the answer.
#[derive(Clone)]
struct InFlight {
    permits: Arc<Semaphore>,
    held: Arc<Mutex<HashMap<String, OwnedSemaphorePermit>>>,
}

impl InFlight {
    fn new(max: usize) -> InFlight {
        InFlight {
            permits: Arc::new(Semaphore::new(max.max(1))),
            held: Arc::default(),
        }
    }

    /// Counts `id` in with its permit (a reused id gives back the permit it replaces).
    fn admit(&self, id: String, permit: OwnedSemaphorePermit) {
        self.held.lock().unwrap_or_else(|e| e.into_inner()).insert(id, permit);
    }

    /// Counts `id` out (answered or cancelled); an unknown id is nothing.
    fn leave(&self, id: &str) {
        self.held.lock().unwrap_or_else(|e| e.into_inner()).remove(id);
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
            Frame::Oversized => Err(error(
                Value::Null,
                -32600,
                format!("Invalid Request: the message is over the {MAX_FRAME}-byte limit"),
            )),
            Frame::Line(line) => check(&line).and_then(|(passed, message)| {
                initialized |= message["method"] == "notifications/initialized";
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
                in_flight.leave(&id);
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

/// One line the client sent, or the fact that it was over [`MAX_FRAME`].
enum Frame {
    Line(Vec<u8>),
    Oversized,
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
                    self.oversized = true;
                    self.frame = Vec::new();
                } else {
                    self.frame.extend_from_slice(part);
                }
            }
            self.reader.consume(used);
            if complete {
                return Some(if std::mem::take(&mut self.oversized) {
                    Frame::Oversized
                } else {
                    Frame::Line(std::mem::take(&mut self.frame))
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
mod tests {
    use rmcp::transport::Transport;
    use serde_json::{Value, json};
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    use super::{Guarded, MAX_FRAME, guarded};

    /// Sends `input` through the guard; returns the messages rmcp would receive (as JSON)
    /// and what the client would get back.
    async fn through(input: Vec<u8>) -> (Vec<Value>, Vec<Value>) {
        let (mut client, server_in) = tokio::io::duplex(1024 * 1024);
        let (server_out, client_out) = tokio::io::duplex(1024 * 1024);
        let (mut transport, _writer) = guarded(server_in, server_out, 64, super::Hooks::default());
        let writer = tokio::spawn(async move {
            client.write_all(&input).await.unwrap();
            client.shutdown().await.unwrap();
        });
        let mut passed = Vec::new();
        while let Some(message) = transport.receive().await {
            passed.push(serde_json::to_value(&message).unwrap());
        }
        writer.await.unwrap();
        let mut answers = Vec::new();
        let mut lines = BufReader::new(client_out).lines();
        while let Ok(Ok(Some(line))) =
            tokio::time::timeout(std::time::Duration::from_millis(300), lines.next_line()).await
        {
            answers.push(serde_json::from_str(&line).unwrap());
        }
        (passed, answers)
    }

    /// The id of each message, for comparisons.
    fn ids(messages: &[Value]) -> Vec<Value> {
        messages.iter().map(|m| m["id"].clone()).collect()
    }

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn every_malformed_message_gets_its_error_and_the_next_one_still_passes() {
        rt().block_on(async {
            let good = r#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#;
            let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
            let huge = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"x","params":{{"p":"{}"}}}}"#, "a".repeat(MAX_FRAME + 10));
            let cases: Vec<(String, i64, Value)> = vec![
                (r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":"{\"path\":\"a\"}"}}"#.into(), -32602, json!(1)),
                (r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_file","arguments":["a"]}}"#.into(), -32602, json!(2)),
                (r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_file","name":"write_file","arguments":{}}}"#.into(), -32602, json!(3)),
                (r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"a","arguments":{"path":"x","path":"y"}}}"#.into(), -32602, json!(4)),
                (deep, -32700, Value::Null),
                (r#"{"jsonrpc":"2.0","id":5,"method":"ping","params":{"s":"\ud800"}}"#.into(), -32602, json!(5)),
                (huge, -32600, Value::Null),
                ("[1,2]".into(), -32600, Value::Null),
                (r#"{"jsonrpc":"2.0","id":6,"method":7}"#.into(), -32600, json!(6)),
                ("not json".into(), -32700, Value::Null),
                (r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"a","arguments":{"x":1e400}}}"#.into(), -32602, json!(7)),
                (r#"{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"a","arguments":{"x":-1e999}}}"#.into(), -32602, json!("s")),
            ];
            for (message, code, id) in cases {
                let input = format!("{message}\n{good}\n").into_bytes();
                let (passed, answers) = through(input).await;
                assert_eq!(ids(&passed), [json!(9)], "only the good message reaches rmcp ({code})");
                assert_eq!(passed[0]["method"], "ping");
                assert_eq!(answers.len(), 1, "{answers:?}");
                assert_eq!(answers[0]["error"]["code"], code, "{}", answers[0]);
                assert_eq!(answers[0]["id"], id, "{}", answers[0]);
            }
        });
    }

    /// The next message rmcp receives, read with a deadline (`None`: nothing came in 200 ms).
    async fn next_message(transport: &mut Guarded) -> Option<Value> {
        match tokio::time::timeout(std::time::Duration::from_millis(200), transport.receive()).await {
            Ok(Some(message)) => Some(serde_json::to_value(&message).unwrap()),
            _ => None,
        }
    }

    /// rmcp sends `message` (as JSON) through the transport.
    async fn rmcp_sends(transport: &mut Guarded, message: Value) {
        transport.send(serde_json::from_value(message).unwrap()).await.unwrap();
    }

    #[test]
    fn past_the_bound_requests_wait_while_responses_and_cancellations_pass() {
        rt().block_on(async {
            let (mut client, server_in) = tokio::io::duplex(1024 * 1024);
            let (server_out, _client_out) = tokio::io::duplex(1024 * 1024);
            let (mut rmcp, _writer) = guarded(server_in, server_out, 2, super::Hooks::default());
            let request = |id: u64| format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\"}}\n");
            let mut burst = String::new();
            for id in 1..=3 {
                burst.push_str(&request(id));
            }
            // Behind the held request: the client's answer to one of kyro's requests, and
            // the cancellation of the held request itself.
            burst.push_str("{\"jsonrpc\":\"2.0\",\"id\":\"k1\",\"result\":{}}\n");
            burst.push_str(
                "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":3}}\n",
            );
            for id in 4..=6 {
                burst.push_str(&request(id));
            }
            client.write_all(burst.as_bytes()).await.unwrap();

            assert_eq!(next_message(&mut rmcp).await.unwrap()["id"], 1);
            assert_eq!(next_message(&mut rmcp).await.unwrap()["id"], 2);
            assert_eq!(
                next_message(&mut rmcp).await.unwrap()["id"],
                "k1",
                "a response passes a held request"
            );
            // 3 was cancelled while held: it never reaches rmcp. 4 waits for room, and 5
            // and 6 are not even read.
            assert_eq!(next_message(&mut rmcp).await, None, "two in flight: nothing more");

            rmcp_sends(&mut rmcp, json!({"jsonrpc": "2.0", "id": 1, "result": {}})).await;
            assert_eq!(next_message(&mut rmcp).await.unwrap()["id"], 4);
            assert_eq!(next_message(&mut rmcp).await, None);
            // A notification from rmcp (no id) gives no room back; an answer does.
            rmcp_sends(
                &mut rmcp,
                json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 1}}),
            )
            .await;
            assert_eq!(next_message(&mut rmcp).await, None);
            rmcp_sends(&mut rmcp, json!({"jsonrpc": "2.0", "id": 2, "result": {}})).await;
            assert_eq!(next_message(&mut rmcp).await.unwrap()["id"], 5);
            rmcp_sends(&mut rmcp, json!({"jsonrpc": "2.0", "id": 4, "result": {}})).await;
            assert_eq!(next_message(&mut rmcp).await.unwrap()["id"], 6);
        });
    }

    /// Answers the client does not read count against the bound: rmcp stops getting
    /// requests, however fast it answers them (each answer sent on a task of its own, as
    /// rmcp sends them), instead of answers piling up in memory.
    #[test]
    fn answers_the_client_does_not_read_hold_back_its_requests() {
        rt().block_on(async {
            let (mut client, server_in) = tokio::io::duplex(1024 * 1024);
            let (server_out, _never_read) = tokio::io::duplex(1024);
            let (mut rmcp, _writer) = guarded(server_in, server_out, 2, super::Hooks::default());
            let burst: String = (1..=1000)
                .map(|id| format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\"}}\n"))
                .collect();
            client.write_all(burst.as_bytes()).await.unwrap();
            let mut received = 0;
            let mut sends = tokio::task::JoinSet::new();
            while let Some(message) = next_message(&mut rmcp).await {
                received += 1;
                let answer = json!({"jsonrpc": "2.0", "id": message["id"], "result": {}});
                sends.spawn(rmcp.send(serde_json::from_value(answer).unwrap()));
            }
            assert!(
                received < 300,
                "{received} requests taken while their answers cannot be written"
            );
            assert!(received > 2, "{received}");
        });
    }

    #[test]
    fn an_id_rmcp_could_not_echo_is_refused_here() {
        rt().block_on(async {
            for id in ["1.5", "null", "[1]", "{}", "true"] {
                let input = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\"}}\n").into_bytes();
                let (passed, answers) = through(input).await;
                assert!(passed.is_empty(), "{id}");
                assert_eq!(answers[0]["error"]["code"], -32600, "{id}");
            }
        });
    }

    /// A message as a fuzzer would shape it: JSON-RPC fields present or not, of any type,
    /// params from arbitrary JSON, then the text possibly cut or spliced with noise.
    fn message() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::prelude::*;
        let scalar = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_filter_map("finite", |f| serde_json::Number::from_f64(f).map(Value::Number)),
            "\\PC{0,8}".prop_map(Value::from),
        ];
        let json = scalar.prop_recursive(3, 16, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                prop::collection::btree_map("\\PC{0,5}", inner, 0..3)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        });
        let method = prop_oneof![
            prop::sample::select(vec![
                "ping",
                "tools/call",
                "tools/list",
                "notifications/cancelled",
                "initialize"
            ])
            .prop_map(Value::from),
            json.clone(),
        ];
        (
            proptest::option::of(prop_oneof![Just(json!("2.0")), json.clone()]),
            proptest::option::of(prop_oneof![any::<u32>().prop_map(Value::from), json.clone()]),
            proptest::option::of(method),
            proptest::option::of(json),
            0..4u8,
            prop::collection::vec(any::<u8>(), 0..6),
        )
            .prop_map(|(version, id, method, params, mangle, noise)| {
                let mut object = serde_json::Map::new();
                for (key, value) in [("jsonrpc", version), ("id", id), ("method", method), ("params", params)] {
                    if let Some(value) = value {
                        object.insert(key.into(), value);
                    }
                }
                let mut text = Value::Object(object).to_string().into_bytes();
                let middle = text.len() / 2;
                match mangle {
                    0 => text.truncate(middle),
                    1 => drop(text.splice(middle..middle, noise)),
                    _ => {}
                }
                text.retain(|b| *b != b'\n');
                text
            })
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config { cases: 3000, failure_persistence: None, ..Default::default() })]

        /// The fuzz target over the line handler: whatever a line holds, the check neither
        /// panics nor stays silent about a request: a request with an id rmcp can echo either
        /// passes under that id or is answered here with one JSON-RPC error line carrying it.
        #[test]
        fn fuzz_every_line_is_passed_or_answered_once(line in message()) {
            let parsed: Option<Value> = serde_json::from_slice(&line).ok();
            let request_id = parsed.as_ref().and_then(|m| {
                let id = m.get("id")?;
                (m.get("method").is_some_and(Value::is_string) && (id.is_u64() || id.is_i64() || id.is_string()))
                    .then(|| id.clone())
            });
            match super::check(&line) {
                Ok((super::Passed::Request(key), _)) => {
                    let id = request_id.clone();
                    proptest::prop_assert!(id.is_some(), "passed as a request: {}", String::from_utf8_lossy(&line));
                    proptest::prop_assert_eq!(key, super::id_key(&id.unwrap()));
                }
                Ok(_) => {}
                Err(answer) => {
                    proptest::prop_assert_eq!(answer.iter().filter(|b| **b == b'\n').count(), 1);
                    let answer: Value = serde_json::from_slice(&answer).expect("one JSON line");
                    proptest::prop_assert!(answer["error"]["code"].is_i64());
                    if let Some(id) = &request_id
                        && parsed.as_ref().is_some_and(|m| m["jsonrpc"] == "2.0")
                    {
                        proptest::prop_assert_eq!(&answer["id"], id);
                    }
                }
            }
        }
    }
}
