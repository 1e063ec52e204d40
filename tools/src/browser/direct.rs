//! A second DevTools connection to the page, for the commands on the hot path (evaluating
//! `page.js`, mouse events, screenshots, inserting text).
//!
//! `headless_chrome` 1.0.22 sends a command only when its reader thread lets go of the
//! WebSocket's lock, which it holds through a blocking read with a 100 ms timeout: every
//! command waits up to 100 ms (measured: one command fewer took 107 ms off a snapshot).
//! Here the socket's two directions are apart: a reader thread owns the reading half, a
//! command writes on the other half at once and waits for its answer by id. The reader
//! also answers the requests the page pauses for the network policy (`Fetch` is enabled
//! here), at once; the other events (dialogs, loads, the console) stay on
//! `headless_chrome`'s connection, which enabled them.

use std::collections::HashMap;
use std::net::TcpStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use headless_chrome::protocol::cdp::Fetch::events::RequestPausedEventParams;
use headless_chrome::protocol::cdp::types::Method;
use serde::Serialize;
use serde_json::{Value, json};
use tungstenite::protocol::{Role, WebSocketConfig};
use tungstenite::{Message, WebSocket};

/// Answers waited for, by command id: the result, or the browser's error message.
type Pending = Arc<Mutex<HashMap<u64, mpsc::Sender<Result<Value, String>>>>>;

/// Decides a paused request: true lets it continue, false fails it with `BlockedByClient`.
pub(crate) type Interceptor = Box<dyn Fn(&RequestPausedEventParams) -> super::routes::Decision + Send>;

/// The interceptor the reader thread consults (none: every paused request fails).
type InterceptorSlot = Arc<Mutex<Option<Interceptor>>>;

/// The writing half, shared by the commands and the reader thread's answers to paused
/// requests.
type Writer = Arc<Mutex<WebSocket<TcpStream>>>;

/// The page's own DevTools connection.
pub(crate) struct Direct {
    writer: Writer,
    pending: Pending,
    next: Arc<AtomicU64>,
    interceptor: InterceptorSlot,
    /// Shut down on drop, which ends the reader thread.
    stream: TcpStream,
}

impl Direct {
    /// Connects to the page target `target` of the browser whose DevTools WebSocket is
    /// `browser_url` (`ws://127.0.0.1:PORT/devtools/browser/ID`).
    pub(crate) fn connect(browser_url: &str, target: &str, reach: &super::isolation::Reach) -> Result<Direct, String> {
        let address = browser_url
            .strip_prefix("ws://")
            .and_then(|rest| rest.split('/').next())
            .ok_or_else(|| format!("not a DevTools address: {browser_url}"))?;
        let url = format!("ws://{address}/devtools/page/{target}");
        let stream = reach.connect(address).map_err(|e| e.to_string())?;
        let config = WebSocketConfig::default().max_message_size(None).max_frame_size(None);
        let (reader, _) = tungstenite::client::client_with_config(
            url.as_str(),
            stream.try_clone().map_err(|e| e.to_string())?,
            Some(config),
        )
        .map_err(|e| e.to_string())?;
        let writer: Writer = Arc::new(Mutex::new(WebSocket::from_raw_socket(
            stream.try_clone().map_err(|e| e.to_string())?,
            Role::Client,
            Some(config),
        )));
        let pending = Pending::default();
        let next = Arc::new(AtomicU64::new(1));
        let interceptor = InterceptorSlot::default();
        let side = Side {
            pending: pending.clone(),
            writer: writer.clone(),
            next: next.clone(),
            interceptor: interceptor.clone(),
        };
        std::thread::Builder::new()
            .name("kyro-cdp-reader".into())
            .spawn(move || read_answers(reader, &side))
            .map_err(|e| e.to_string())?;
        Ok(Direct {
            writer,
            pending,
            next,
            interceptor,
            stream,
        })
    }

    /// Has the reader thread decide each request the page pauses (after `Fetch.enable` on
    /// this connection) with `interceptor`, answering at once on this connection.
    pub(crate) fn intercept(&self, interceptor: Interceptor) {
        *self.interceptor.lock().unwrap_or_else(|e| e.into_inner()) = Some(interceptor);
    }

    /// Sends `method` and waits for its answer, `timeout` at most.
    pub(crate) fn call<M: Method + Serialize>(&self, method: M, timeout: Duration) -> Result<M::ReturnObject, String> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (answer, answered) = mpsc::channel();
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, answer);
        let mut message = json!({ "id": id, "method": M::NAME });
        let params = serde_json::to_value(&method).map_err(|e| e.to_string())?;
        if !params.is_null() {
            message["params"] = params;
        }
        let sent = self
            .writer
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .send(Message::text(message.to_string()));
        if let Err(e) = sent {
            self.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
            return Err(e.to_string());
        }
        match answered.recv_timeout(timeout) {
            Ok(Ok(result)) => serde_json::from_value(result).map_err(|e| e.to_string()),
            Ok(Err(message)) => Err(message),
            Err(_) => {
                self.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
                Err(format!("{} got no answer in {} s", M::NAME, timeout.as_secs()))
            }
        }
    }
}

impl Drop for Direct {
    fn drop(&mut self) {
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
    }
}

/// What the reader thread shares with the commands.
struct Side {
    pending: Pending,
    writer: Writer,
    next: Arc<AtomicU64>,
    interceptor: InterceptorSlot,
}

/// Hands each answer to the command waiting for it, and decides each paused request; when
/// the connection ends, every waiting command is told.
fn read_answers(mut reader: WebSocket<TcpStream>, side: &Side) {
    // The fulfils sent and not yet answered, by command id: the request each answers.
    let mut fulfilling: HashMap<u64, String> = HashMap::new();
    while let Ok(message) = reader.read() {
        let Message::Text(text) = message else {
            continue;
        };
        let Ok(answer) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        if answer.get("method").and_then(Value::as_str) == Some("Fetch.requestPaused") {
            if let Some((id, request_id)) = decide(side, &answer["params"]) {
                fulfilling.insert(id, request_id);
            }
            continue;
        }
        let Some(id) = answer.get("id").and_then(Value::as_u64) else {
            continue;
        };
        if let Some(request_id) = fulfilling.remove(&id) {
            // A fulfil Chromium refused leaves its request paused, and the page (and every
            // later command waiting on it) with it: fail the request instead.
            if answer.get("error").is_some() {
                send(side, "Fetch.failRequest", fail_params(&request_id));
            }
            continue;
        }
        let Some(waiting) = side.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(&id) else {
            continue;
        };
        let result = match answer.get("error") {
            Some(error) => Err(error["message"]
                .as_str()
                .unwrap_or("the browser refused the command")
                .to_owned()),
            None => Ok(answer.get("result").cloned().unwrap_or(Value::Null)),
        };
        let _ = waiting.send(result);
    }
    for (_, waiting) in side.pending.lock().unwrap_or_else(|e| e.into_inner()).drain() {
        let _ = waiting.send(Err("the browser's connection closed".into()));
    }
}

/// Continues, fails or fulfils one paused request, as the interceptor decides (fails it
/// when there is none, or the request cannot be read). The answer to that command is not
/// waited for; a fulfil's command id and request are returned, for its answer to be checked.
fn decide(side: &Side, params: &Value) -> Option<(u64, String)> {
    let request_id = params.get("requestId").and_then(Value::as_str)?;
    use super::routes::Decision;
    let decision = serde_json::from_value::<RequestPausedEventParams>(params.clone())
        .ok()
        .and_then(|paused| {
            let interceptor = side.interceptor.lock().unwrap_or_else(|e| e.into_inner());
            interceptor.as_ref().map(|decide| decide(&paused))
        })
        .unwrap_or(Decision::Fail);
    match decision {
        Decision::Continue => {
            send(side, "Fetch.continueRequest", json!({ "requestId": request_id }));
            None
        }
        Decision::Fail => {
            send(side, "Fetch.failRequest", fail_params(request_id));
            None
        }
        Decision::Fulfill {
            status,
            content_type,
            body,
        } => {
            let params = json!({
                "requestId": request_id, "responseCode": status,
                "responseHeaders": [{ "name": "Content-Type", "value": content_type }], "body": body,
            });
            Some((send(side, "Fetch.fulfillRequest", params), request_id.to_owned()))
        }
    }
}

/// Fails `request_id` as blocked.
fn fail_params(request_id: &str) -> Value {
    json!({ "requestId": request_id, "errorReason": "BlockedByClient" })
}

/// Sends `method` with `params` without waiting for its answer; its command id.
fn send(side: &Side, method: &str, params: Value) -> u64 {
    let id = side.next.fetch_add(1, Ordering::Relaxed);
    let command = json!({ "id": id, "method": method, "params": params });
    let _ = side
        .writer
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .send(Message::text(command.to_string()));
    id
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// The next command kyro sends on `socket`.
    fn command(socket: &mut WebSocket<TcpStream>) -> Value {
        loop {
            if let Message::Text(text) = socket.read().expect("a command within the read timeout") {
                return serde_json::from_str(&text).unwrap();
            }
        }
    }

    #[test]
    fn a_fulfil_the_browser_refuses_fails_its_request_instead_of_leaving_it_paused() {
        // A DevTools page server on loopback playing Chromium: it pauses a request, refuses
        // the fulfil kyro sends for it (as Chromium refuses a header holding CR/LF), and
        // reports what kyro sends next.
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("ws://{}/devtools/browser/test", listener.local_addr().unwrap());
        let (intercepting, intercepted) = mpsc::channel::<()>();
        let chromium = std::thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let mut socket = tungstenite::accept(stream).unwrap();
            intercepted.recv().unwrap();
            let paused = json!({ "method": "Fetch.requestPaused", "params": {
                "requestId": "interception-job-1.0", "frameId": "F", "resourceType": "Fetch",
                "request": { "url": "http://site.test/api", "method": "GET", "headers": {},
                             "initialPriority": "High", "referrerPolicy": "no-referrer" },
            } });
            socket.send(Message::text(paused.to_string())).unwrap();
            let fulfil = command(&mut socket);
            let refused = json!({ "id": fulfil["id"], "error": { "code": -32602, "message": "Invalid header" } });
            socket.send(Message::text(refused.to_string())).unwrap();
            let next = command(&mut socket);
            (fulfil, next)
        });
        let direct = Direct::connect(&url, "page", &super::super::isolation::Reach::Host).unwrap();
        direct.intercept(Box::new(|_| super::super::routes::Decision::Fulfill {
            status: 200,
            content_type: "text/plain".into(),
            body: String::new(),
        }));
        intercepting.send(()).unwrap();
        let (fulfil, next) = chromium.join().unwrap();
        assert_eq!(fulfil["method"], "Fetch.fulfillRequest", "{fulfil}");
        assert_eq!(next["method"], "Fetch.failRequest", "{next}");
        assert_eq!(next["params"]["requestId"], "interception-job-1.0", "{next}");
    }
}
