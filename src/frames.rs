//! The stdio edge of the MCP server: every line the client sends is checked before rmcp
//! sees it, so a malformed message gets its JSON-RPC error and the server goes on.
//!
//! - more than [`MAX_FRAME`] bytes without a newline: `-32600`, the rest of the line is
//!   skipped without being kept;
//! - not JSON, a lone surrogate, nesting past 128 levels, a duplicate key: `-32700` (or
//!   `-32602` with the request's id, when the duplicate is inside its `params`);
//! - not a JSON-RPC object (an array, `jsonrpc` not "2.0", `method` not a string, `params`
//!   neither object nor array): `-32600`;
//! - `tools/call` whose `name` is not a string or whose `arguments` is not an object:
//!   `-32602`.
//!
//! Lines that pass go to rmcp unchanged; its answers and these errors are written to
//! stdout one whole line at a time.

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// The longest message accepted, in bytes.
pub const MAX_FRAME: usize = 8 * 1024 * 1024;

/// Lines waiting to be written to stdout (answers and errors); a slow reader of stdout
/// slows the server down instead of growing this.
const OUTPUT_QUEUE: usize = 64;

/// The transport rmcp serves on: stdin checked frame by frame, stdout shared with the
/// errors this edge answers itself; and the writer's task, to await once rmcp is done so
/// that the last answers reach stdout before the process ends.
pub fn guarded_stdio() -> (
    (
        impl AsyncRead + Send + Unpin + 'static,
        impl AsyncWrite + Send + Unpin + 'static,
    ),
    tokio::task::JoinHandle<()>,
) {
    guarded(tokio::io::stdin(), tokio::io::stdout())
}

/// [`guarded_stdio`] over any pair of streams.
pub fn guarded(
    input: impl AsyncRead + Send + Unpin + 'static,
    output: impl AsyncWrite + Send + Unpin + 'static,
) -> (
    (
        impl AsyncRead + Send + Unpin + 'static,
        impl AsyncWrite + Send + Unpin + 'static,
    ),
    tokio::task::JoinHandle<()>,
) {
    let (to_rmcp, rmcp_in) = tokio::io::duplex(64 * 1024);
    let (rmcp_out, from_rmcp) = tokio::io::duplex(64 * 1024);
    let (lines, queue) = mpsc::channel::<Vec<u8>>(OUTPUT_QUEUE);
    let writer = tokio::spawn(write_lines(queue, output));
    tokio::spawn(forward_answers(from_rmcp, lines.clone()));
    tokio::spawn(check_requests(input, to_rmcp, lines));
    ((rmcp_in, rmcp_out), writer)
}

/// Writes whole lines to `output`, in the order they were queued.
async fn write_lines(mut queue: mpsc::Receiver<Vec<u8>>, mut output: impl AsyncWrite + Unpin) {
    while let Some(line) = queue.recv().await {
        if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
            return;
        }
    }
}

/// rmcp's output, cut into lines for the queue.
async fn forward_answers(from_rmcp: impl AsyncRead + Unpin, lines: mpsc::Sender<Vec<u8>>) {
    let mut reader = BufReader::new(from_rmcp);
    loop {
        let mut line = Vec::new();
        match reader.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                if lines.send(line).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// Reads the client's lines, answers the malformed ones, passes the rest to rmcp.
async fn check_requests(
    input: impl AsyncRead + Unpin,
    mut to_rmcp: impl AsyncWrite + Unpin,
    lines: mpsc::Sender<Vec<u8>>,
) {
    let mut reader = BufReader::with_capacity(64 * 1024, input);
    let mut frame = Vec::new();
    let mut oversized = false;
    loop {
        let chunk = match reader.fill_buf().await {
            Ok([]) | Err(_) => return,
            Ok(chunk) => chunk,
        };
        let (part, complete) = match chunk.iter().position(|b| *b == b'\n') {
            Some(i) => (&chunk[..=i], true),
            None => (chunk, false),
        };
        let used = part.len();
        if !oversized {
            if frame.len() + used > MAX_FRAME + 1 {
                oversized = true;
                frame = Vec::new();
            } else {
                frame.extend_from_slice(part);
            }
        }
        reader.consume(used);
        if !complete {
            continue;
        }
        let answer = if std::mem::take(&mut oversized) {
            Some(error(
                Value::Null,
                -32600,
                format!("Invalid Request: the message is over the {MAX_FRAME}-byte limit"),
            ))
        } else {
            let checked = check(&frame);
            if checked.is_none() && to_rmcp.write_all(&frame).await.is_err() {
                return;
            }
            checked
        };
        frame.clear();
        if let Some(answer) = answer
            && lines.send(answer).await.is_err()
        {
            return;
        }
    }
}

/// The error line for a malformed frame, or `None` when it may go to rmcp.
fn check(frame: &[u8]) -> Option<Vec<u8>> {
    let text = match std::str::from_utf8(frame) {
        Ok(text) => text.trim(),
        Err(_) => {
            return Some(error(
                Value::Null,
                -32700,
                "Parse error: the message is not UTF-8".into(),
            ));
        }
    };
    if text.is_empty() {
        return None;
    }
    let message = match kyro_core::parse_strict(text) {
        Ok(message) => message,
        Err(strict) => {
            // A duplicate key inside a request's params: answer that request.
            if let Ok(loose) = serde_json::from_str::<Value>(text)
                && let Some(id) = loose.get("id").filter(|id| id.is_string() || id.is_number())
            {
                return Some(error(id.clone(), -32602, format!("Invalid params: {strict}")));
            }
            return Some(error(Value::Null, -32700, format!("Parse error: {strict}")));
        }
    };
    let Some(object) = message.as_object() else {
        return Some(error(
            Value::Null,
            -32600,
            "Invalid Request: a message is one JSON object (batches are not part of MCP)".into(),
        ));
    };
    let id = object.get("id").cloned().unwrap_or(Value::Null);
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Some(error(id, -32600, "Invalid Request: `jsonrpc` must be \"2.0\"".into()));
    }
    let Some(method) = object.get("method") else {
        return None; // a response to one of kyro's own requests
    };
    let Some(method) = method.as_str() else {
        return Some(error(id, -32600, "Invalid Request: `method` must be a string".into()));
    };
    let params = object.get("params");
    if params.is_some_and(|p| !p.is_object() && !p.is_array()) {
        return Some(error(
            id,
            -32600,
            "Invalid Request: `params` must be an object or an array".into(),
        ));
    }
    if method == "tools/call" {
        let params = params.and_then(Value::as_object);
        let Some(params) = params else {
            return Some(error(id, -32602, "Invalid params: tools/call takes an object".into()));
        };
        if !params.get("name").is_some_and(Value::is_string) {
            return Some(error(id, -32602, "Invalid params: `name` must be a string".into()));
        }
        if params.get("arguments").is_some_and(|a| !a.is_object() && !a.is_null()) {
            return Some(error(
                id,
                -32602,
                "Invalid params: `arguments` must be a JSON object of the tool's arguments".into(),
            ));
        }
    }
    None
}

fn error(id: Value, code: i64, message: String) -> Vec<u8> {
    let mut line = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string();
    line.push('\n');
    line.into_bytes()
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

    use super::{MAX_FRAME, guarded};

    /// Sends `input` through the guard; returns what rmcp would read and what the client
    /// would get back.
    async fn through(input: Vec<u8>) -> (String, Vec<Value>) {
        let (mut client, server_in) = tokio::io::duplex(1024 * 1024);
        let (server_out, client_out) = tokio::io::duplex(1024 * 1024);
        let ((mut rmcp_in, _rmcp_out), _writer) = guarded(server_in, server_out);
        let writer = tokio::spawn(async move {
            client.write_all(&input).await.unwrap();
            client.shutdown().await.unwrap();
        });
        let mut passed = String::new();
        rmcp_in.read_to_string(&mut passed).await.unwrap();
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
                (r#"{"jsonrpc":"2.0","id":5,"method":"ping","params":{"s":"\ud800"}}"#.into(), -32700, Value::Null),
                (huge, -32600, Value::Null),
                ("[1,2]".into(), -32600, Value::Null),
                (r#"{"jsonrpc":"2.0","id":6,"method":7}"#.into(), -32600, json!(6)),
                ("not json".into(), -32700, Value::Null),
            ];
            for (message, code, id) in cases {
                let input = format!("{message}\n{good}\n").into_bytes();
                let (passed, answers) = through(input).await;
                assert_eq!(passed, format!("{good}\n"), "only the good message reaches rmcp ({code})");
                assert_eq!(answers.len(), 1, "{answers:?}");
                assert_eq!(answers[0]["error"]["code"], code, "{}", answers[0]);
                assert_eq!(answers[0]["id"], id, "{}", answers[0]);
            }
        });
    }
}
