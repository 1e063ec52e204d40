//! `kyro mcp` driven by rmcp's own client, over a child process on stdio and over
//! Streamable HTTP on 127.0.0.1; and the same calls through `execute_call` directly, which
//! must give identical outcomes and receipts.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};

use kyro_core::receipt::{CanonicalCall, Observer, Receipt};
use kyro_core::{Call, Policy, Registry, Runtime, Workspace};
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService, ServiceError};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ServiceExt, model::ErrorCode};
use serde_json::{Map, Value, json};

#[path = "mcp_client/compose.rs"]
mod compose;
#[path = "mcp_client/inbox.rs"]
mod inbox;
#[path = "mcp_client/inbox_oauth.rs"]
mod inbox_oauth;
#[path = "mcp_client/inbox_revoked.rs"]
mod inbox_revoked;
#[path = "mcp_client/inbox_task.rs"]
mod inbox_task;
#[path = "mcp_client/oauth.rs"]
mod oauth;
#[path = "mcp_client/operator.rs"]
mod operator;
#[path = "mcp_client/ops.rs"]
mod ops;
#[path = "support/postgres.rs"]
mod postgres;
#[path = "mcp_client/replicas.rs"]
mod replicas;
#[path = "mcp_client/review_link.rs"]
mod review_link;
#[path = "mcp_client/review_replicas.rs"]
mod review_replicas;
#[path = "mcp_client/reviews.rs"]
mod reviews;
#[path = "mcp_client/shared_state.rs"]
mod shared_state;
#[path = "mcp_client/state_key.rs"]
mod state_key;
#[path = "mcp_client/state_tls.rs"]
mod state_tls;
#[path = "mcp_client/store_outage.rs"]
mod store_outage;

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

fn object(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap()
}

async fn stdio_client(workspace: &Path) -> RunningService<RoleClient, ()> {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_kyro"));
    command.arg("mcp").arg("--workspace").arg(workspace);
    let transport = TokioChildProcess::new(command).expect("kyro mcp starts");
    ().serve(transport).await.expect("initialize")
}

/// `kyro mcp --http 127.0.0.1:0`, killed on drop.
struct HttpServer {
    child: Child,
    url: String,
}

impl HttpServer {
    fn start(workspace: &Path) -> HttpServer {
        HttpServer::start_with(workspace, &[], Some(TOKEN))
    }

    fn start_with(workspace: &Path, flags: &[&str], token: Option<&str>) -> HttpServer {
        HttpServer::start_any(workspace, "127.0.0.1:0", flags, token)
    }

    /// A server on `address`, reached through loopback.
    fn start_any(workspace: &Path, address: &str, flags: &[&str], token: Option<&str>) -> HttpServer {
        HttpServer::start_env(workspace, address, flags, token, &[])
    }

    /// A server on `address` with these variables set.
    fn start_env(
        workspace: &Path,
        address: &str,
        flags: &[&str],
        token: Option<&str>,
        vars: &[(&str, &str)],
    ) -> HttpServer {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_kyro"));
        command.env_remove("KYRO_HTTP_TOKEN").env_remove("KYRO_STATE");
        command.envs(vars.iter().copied());
        if let Some(token) = token {
            command.env("KYRO_HTTP_TOKEN", token);
        }
        let mut child = command
            .args(["mcp", "--http", address, "--workspace"])
            .arg(workspace)
            .args(flags)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("kyro mcp --http starts");
        // Lines before the address (what the policy makes unusable) are passed over.
        let mut line = String::new();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        while stderr.read_line(&mut line).unwrap() > 0 && !line.contains("serving MCP on") {
            line.clear();
        }
        let url = line.trim().rsplit(' ').next().unwrap().replace("0.0.0.0", "127.0.0.1");
        assert!(url.starts_with("http://127.0.0.1:"), "{line}");
        HttpServer { child, url }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn exercise(client: &RunningService<RoleClient, ()>) {
    let tools = client.list_all_tools().await.unwrap();
    let default_toolsets = kyro_tools::available(false)
        .0
        .iter()
        .filter(|e| kyro::DEFAULT_TOOLSETS.contains(&e.spec.category))
        .count();
    assert_eq!(tools.len(), default_toolsets, "the default toolsets are listed");
    for tool in &tools {
        assert!(tool.output_schema.is_some(), "{}", tool.name);
        assert!(tool.annotations.is_some(), "{}", tool.name);
        assert_eq!(tool.input_schema.get("type"), Some(&json!("object")));
    }
    let ok: CallToolResult = client
        .call_tool(CallToolRequestParams::new("read_file").with_arguments(object(json!({"path": "a.txt"}))))
        .await
        .unwrap();
    assert_ne!(ok.is_error, Some(true));
    assert_eq!(ok.structured_content.unwrap()["content"], "one|two\r\n");
    let invalid = client
        .call_tool(
            CallToolRequestParams::new("read_file").with_arguments(object(json!({"path": "a.txt", "limit": "9"}))),
        )
        .await
        .unwrap();
    assert_eq!(invalid.is_error, Some(true));
    let write = client
        .call_tool(
            CallToolRequestParams::new("write_file").with_arguments(object(json!({"path": "b.txt", "content": "x"}))),
        )
        .await
        .unwrap();
    assert_eq!(write.is_error, Some(true), "writes need approval by default");
    let unknown = client
        .call_tool(CallToolRequestParams::new("no_such_tool").with_arguments(Map::new()))
        .await;
    match unknown {
        Err(ServiceError::McpError(e)) => assert_eq!(e.code, ErrorCode::INVALID_PARAMS),
        other => panic!("expected invalid params, got {other:?}"),
    }
}

fn workspace() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("a.txt"), "one|two\r\n").unwrap();
    ws
}

#[test]
fn rmcp_client_over_stdio() {
    let ws = workspace();
    block_on(async {
        let client = stdio_client(ws.path()).await;
        assert_eq!(client.peer_info().unwrap().server_info.as_ref().unwrap().name, "kyro");
        exercise(&client).await;
        client.cancel().await.unwrap();
    });
}

#[test]
fn rmcp_client_over_streamable_http() {
    let ws = workspace();
    let server = HttpServer::start(ws.path());
    block_on(async {
        let config = StreamableHttpClientTransportConfig::with_uri(server.url.clone()).auth_header(TOKEN);
        let client = ().serve(StreamableHttpClientTransport::from_config(config)).await.unwrap();
        exercise(&client).await;
        client.cancel().await.unwrap();
    });
}

/// The bearer token the HTTP tests' servers take from KYRO_HTTP_TOKEN.
const TOKEN: &str = "kyro-test-token-0123456789";

/// The body of a raw `initialize`.
const INITIALIZE: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;

/// A raw `initialize` POST to `url` with an optional `Authorization` value: the status line
/// and the headers, lowercased.
fn post_initialize(url: &str, authorization: Option<&str>) -> String {
    let extra: Vec<(&str, &str)> = authorization.map(|a| ("Authorization", a)).into_iter().collect();
    Raw::send(url, &extra, INITIALIZE).head()
}

#[test]
fn http_requires_the_bearer_token() {
    let ws = workspace();
    let server = HttpServer::start(ws.path());
    for refused in [
        None,
        Some("Bearer wrong-token-0123456789"),
        Some(TOKEN),
        Some("Basic a3lybzp4"),
    ] {
        let head = post_initialize(&server.url, refused);
        assert!(head.starts_with("http/1.1 401"), "{refused:?}: {head}");
        assert!(head.contains("www-authenticate: bearer"), "{head}");
    }
    let head = post_initialize(&server.url, Some(&format!("Bearer {TOKEN}")));
    assert!(head.starts_with("http/1.1 200"), "{head}");
}

/// RFC 7235: the scheme is case-insensitive, so `bearer` and `BEARER` carry the token as
/// `Bearer` does; the token itself is compared exactly.
#[test]
fn http_takes_the_bearer_scheme_in_any_case() {
    let ws = workspace();
    let server = HttpServer::start(ws.path());
    for scheme in ["bearer", "BEARER", "bEaReR"] {
        let head = post_initialize(&server.url, Some(&format!("{scheme} {TOKEN}")));
        assert!(head.starts_with("http/1.1 200"), "{scheme}: {head}");
    }
    let upper = TOKEN.to_uppercase();
    let head = post_initialize(&server.url, Some(&format!("bearer {upper}")));
    assert!(head.starts_with("http/1.1 401"), "{head}");
}

#[test]
fn http_without_a_token_set_makes_one_and_no_auth_is_explicit() {
    let ws = workspace();
    // No KYRO_HTTP_TOKEN: kyro makes a token and prints it; without it, 401.
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_kyro"));
    let mut child = command
        .env_remove("KYRO_HTTP_TOKEN")
        .args(["mcp", "--http", "127.0.0.1:0", "--workspace"])
        .arg(ws.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let (mut serving, mut token) = (String::new(), String::new());
    stderr.read_line(&mut serving).unwrap();
    stderr.read_line(&mut token).unwrap();
    let url = serving.trim().rsplit(' ').next().unwrap().to_owned();
    let token = token.split_whitespace().nth(3).unwrap().to_owned();
    assert_eq!(token.len(), 64, "32 random bytes, hex");
    assert!(post_initialize(&url, None).starts_with("http/1.1 401"));
    assert!(post_initialize(&url, Some(&format!("Bearer {token}"))).starts_with("http/1.1 200"));
    let _ = child.kill();
    let _ = child.wait();
    // --no-auth: no token asked, and the server says so.
    let open = HttpServer::start_with(ws.path(), &["--no-auth"], None);
    let head = post_initialize(&open.url, None);
    assert!(head.starts_with("http/1.1 200"), "{head}");
}

/// A web page open in the user's browser can POST to a loopback port; its request carries
/// the page's `Origin`, which the server refuses unless it is its own or allowed.
#[test]
fn http_refuses_a_page_of_a_foreign_origin_even_without_auth() {
    let ws = workspace();
    let origin_of = |url: &str| url.trim_end_matches("/mcp").to_owned();
    let with_origin = |url: &str, origin: &str, auth: Option<&str>| {
        let mut headers = vec![("Origin", origin)];
        headers.extend(auth.map(|a| ("Authorization", a)));
        Raw::send(url, &headers, INITIALIZE).head()
    };
    let open = HttpServer::start_with(
        ws.path(),
        &[
            "--no-auth",
            "--allow-origin",
            "https://app.example:*",
            "--allow-origin",
            "http://docs.example",
        ],
        None,
    );
    let port = open.url.trim_end_matches("/mcp").rsplit(':').next().unwrap().to_owned();
    for foreign in [
        "https://evil.example",
        "http://evil.example:80",
        "null",
        "http://localhost:1",
        "not an origin",
        // Allowed without a port means the scheme's default, not any port.
        "http://docs.example:9999",
    ] {
        let head = with_origin(&open.url, foreign, None);
        assert!(head.starts_with("http/1.1 403"), "{foreign}: {head}");
    }
    for allowed in [
        origin_of(&open.url),
        format!("http://localhost:{port}"),
        "https://app.example:8443".to_owned(),
        "http://docs.example".to_owned(),
    ] {
        let head = with_origin(&open.url, &allowed, None);
        assert!(head.starts_with("http/1.1 200"), "{allowed}: {head}");
    }
    assert!(
        post_initialize(&open.url, None).starts_with("http/1.1 200"),
        "no Origin: not a browser"
    );
    // With a token too: a page that somehow holds it still needs an allowed origin.
    let guarded = HttpServer::start(ws.path());
    let bearer = format!("Bearer {TOKEN}");
    let head = with_origin(&guarded.url, "https://evil.example", Some(&bearer));
    assert!(head.starts_with("http/1.1 403"), "{head}");
    // A malformed --allow-origin is a usage error, before anything is served.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kyro"))
        .args([
            "mcp",
            "--http",
            "127.0.0.1:0",
            "--no-auth",
            "--allow-origin",
            "evil.example",
        ])
        .arg("--workspace")
        .arg(ws.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not an origin"));
}

/// MCP 2026-07-28 over HTTP: one POST a call, no session, the method in a header.
#[test]
fn http_serves_a_current_client_without_a_session_and_still_checks_the_origin() {
    let ws = workspace();
    let server = HttpServer::start(ws.path());
    let bearer = format!("Bearer {TOKEN}");
    let body = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"calculate","arguments":{"expression":"6*7"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let current = |extra: &[(&str, &str)]| {
        let mut headers = vec![
            ("Authorization", bearer.as_str()),
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "calculate"),
        ];
        headers.extend_from_slice(extra);
        Raw::send(&server.url, &headers, body)
    };
    let mut answered = current(&[]);
    let head = answered.head();
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(!head.contains("mcp-session-id"), "stateless: {head}");
    let rest = answered.rest();
    assert!(rest.contains(r#""value":42"#), "{rest}");
    let head = current(&[("Origin", "https://evil.example")]).head();
    assert!(head.starts_with("http/1.1 403"), "{head}");
}

#[test]
fn http_refuses_a_non_loopback_address() {
    let ws = workspace();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kyro"))
        .args(["mcp", "--http", "0.0.0.0:0", "--workspace"])
        .arg(ws.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("loopback"));
}

#[derive(Default)]
struct Recorder(Mutex<Vec<Receipt>>);

impl Observer for Recorder {
    fn observe(&self, receipt: &Receipt, _call: Option<&CanonicalCall>, _outcome: &kyro_core::Outcome) {
        self.0.lock().unwrap().push(receipt.clone());
    }
}

/// The parts of a receipt that do not depend on when or where the call ran.
fn essence(receipt: &Value) -> Value {
    json!({
        "tool": receipt["tool"],
        "fingerprint": receipt["fingerprint"],
        "decision": receipt["decision"],
        "outcome": receipt["outcome"],
        "effects": receipt["effects"],
    })
}

/// The smallest arguments a schema's structure asks for: each required property sampled
/// (the first enum value, one item, a minimum, `"a"`), nothing optional.
fn sample(schema: &Value) -> Value {
    let allows = |t: &str| match schema.get("type") {
        Some(Value::String(s)) => s == t,
        Some(Value::Array(ts)) => ts.iter().any(|x| x == t),
        _ => false,
    };
    if let Some(first) = schema.get("enum").and_then(Value::as_array).and_then(|e| e.first()) {
        return first.clone();
    }
    if allows("object") {
        let required = schema
            .get("required")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let map = required
            .iter()
            .filter_map(Value::as_str)
            .map(|name| (name.to_owned(), sample(&schema["properties"][name])))
            .collect();
        return Value::Object(map);
    }
    if allows("array") {
        let count = schema.get("minItems").and_then(Value::as_u64).unwrap_or(1).max(1);
        return Value::Array((0..count).map(|_| sample(&schema["items"])).collect());
    }
    if allows("string") {
        return json!("a");
    }
    if allows("integer") || allows("number") {
        return json!(schema.get("minimum").and_then(Value::as_i64).unwrap_or(1).max(0));
    }
    if allows("boolean") {
        return json!(true);
    }
    Value::Null
}

/// Runs `calls` over `kyro mcp` (stdio) in `ws`: the results, and the top-level receipts
/// (a batch's or sub-agent's children have receipts of their own).
fn run_over_mcp(ws: &std::path::Path, calls: &[(String, Value)]) -> (Vec<CallToolResult>, Vec<Value>) {
    let results = block_on(async {
        let client = stdio_client(ws).await;
        let mut results = Vec::new();
        for (tool, args) in calls {
            let params = CallToolRequestParams::new(tool.clone()).with_arguments(object(args.clone()));
            results.push(client.call_tool(params).await.unwrap());
        }
        client.cancel().await.unwrap();
        results
    });
    let log = std::fs::read_to_string(ws.join(".kyro/receipts.jsonl")).unwrap();
    let receipts = log
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["parent_call_id"].is_null())
        .collect();
    (results, receipts)
}

/// Runs `calls` through `execute_call` in `ws`, with the catalog `kyro mcp` serves (no
/// mcp_call without upstreams): the outcomes and the top-level receipts.
fn run_directly(ws: &std::path::Path, calls: &[(String, Value)]) -> (Vec<kyro_core::Outcome>, Vec<Value>) {
    let recorder = Arc::new(Recorder::default());
    let registry = Arc::new(Registry::with_catalog(&kyro_tools::available(false).0).unwrap());
    let runtime = Runtime::new(registry, Workspace::new(ws).unwrap(), &Policy::default())
        .unwrap()
        .with_observer(recorder.clone());
    let outcomes = block_on(async {
        let mut outcomes = Vec::new();
        for (tool, args) in calls {
            outcomes.push(runtime.execute_call(Call::new(tool.clone(), args.clone())).await);
        }
        outcomes
    });
    let receipts = recorder
        .0
        .lock()
        .unwrap()
        .iter()
        .map(|r| serde_json::to_value(r).unwrap())
        .filter(|r| r["parent_call_id"].is_null())
        .collect();
    (outcomes, receipts)
}

/// The same call over MCP and directly: the same outcome kind, the same result (through
/// `normalize`), and receipts alike in what does not depend on when the call ran.
fn assert_parity(
    calls: &[(String, Value)],
    ws: &std::path::Path,
    between: impl FnOnce(),
    normalize: fn(&Value) -> Value,
) {
    let (mcp_results, mcp_receipts) = run_over_mcp(ws, calls);
    between();
    let (outcomes, direct_receipts) = run_directly(ws, calls);
    assert_eq!(mcp_receipts.len(), calls.len());
    assert_eq!(direct_receipts.len(), calls.len());
    for (i, outcome) in outcomes.iter().enumerate() {
        let name = &calls[i].0;
        assert_eq!(
            essence(&mcp_receipts[i]),
            essence(&direct_receipts[i]),
            "receipt of call {i} ({name})"
        );
        let over_mcp = &mcp_results[i];
        match outcome {
            kyro_core::Outcome::Ok { result, .. } => {
                assert_ne!(over_mcp.is_error, Some(true), "call {i} ({name})");
                assert_eq!(
                    over_mcp.structured_content.as_ref().map(normalize),
                    Some(normalize(result)),
                    "call {i} ({name})"
                );
            }
            other => {
                assert_eq!(over_mcp.is_error, Some(true), "call {i} ({name})");
                let text = over_mcp.content[0].as_text().unwrap().text.clone();
                let kind = serde_json::to_value(other.kind()).unwrap();
                assert!(text.starts_with(kind.as_str().unwrap()), "call {i} ({name}): {text}");
            }
        }
    }
}

#[test]
fn mcp_and_execute_call_give_identical_outcomes_and_receipts() {
    let mut calls: Vec<(String, Value)> = vec![
        ("read_file".into(), json!({"path": "a.txt"})),
        ("cat".into(), json!({"file_path": "a.txt", "limit": 1})),
        ("read_file".into(), json!({"path": "a.txt", "limit": 0})),
        ("read_file".into(), json!({"path": "../outside"})),
        ("write_file".into(), json!({"path": "b.txt", "content": "x"})),
        ("calculate".into(), json!({"expression": "6 * 7"})),
        ("list_directory".into(), json!({})),
    ];
    // And every other served built-in, with the arguments its schema asks for at least;
    // not the state tools: run twice on one store (over MCP, then directly) their second
    // outcome depends on the first (the next test takes them on fresh stores).
    let served = Registry::with_catalog(&kyro_tools::available(false).0).unwrap();
    for d in served.snapshot().descriptors() {
        if d.effect != kyro_core::Effect::State && !calls.iter().any(|(name, _)| *name == d.name) {
            calls.push((d.name.clone(), sample(&d.input_schema)));
        }
    }
    // The same workspace both ways: a fingerprint binds it.
    let ws = workspace();
    assert_parity(&calls, ws.path(), || {}, Value::clone);
}

/// A result with the values that depend on when it ran (`*_at`, `*_ms`, `call_id`) blanked.
fn timeless(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let blank = k.ends_with("_at") || k.ends_with("_ms") || k == "call_id";
                    (k.clone(), if blank { Value::Null } else { timeless(v) })
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(timeless).collect()),
        other => other.clone(),
    }
}

#[test]
fn state_tools_give_the_same_outcomes_over_mcp_and_execute_call_on_a_fresh_store() {
    // Every state tool in catalog order, twice (the second store, update or delete meets
    // what the first made), on a fresh store each way.
    let served = Registry::with_catalog(&kyro_tools::available(false).0).unwrap();
    let mut calls: Vec<(String, Value)> = Vec::new();
    for d in served.snapshot().descriptors() {
        if d.effect == kyro_core::Effect::State {
            calls.push((d.name.clone(), sample(&d.input_schema)));
        }
    }
    assert!(calls.len() >= 10, "{calls:?}");
    let calls: Vec<(String, Value)> = calls.iter().chain(calls.iter()).cloned().collect();
    let ws = workspace();
    let fresh_store = || {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(ws.path().join(format!(".kyro/state.db{suffix}")));
        }
    };
    assert_parity(&calls, ws.path(), fresh_store, timeless);
}

/// One raw HTTP exchange with `kyro mcp --http`: the request is written, the stream kept.
struct Raw(std::net::TcpStream);

impl Raw {
    /// A POST in `session` (none: a new client).
    fn post(url: &str, session: Option<&str>, body: &[u8]) -> Raw {
        let headers = match session {
            Some(id) => vec![("Mcp-Session-Id", id), ("Mcp-Protocol-Version", "2025-06-18")],
            None => Vec::new(),
        };
        Raw::send(url, &headers, body)
    }

    /// A POST with `headers` besides the usual ones.
    fn send(url: &str, headers: &[(&str, &str)], body: &[u8]) -> Raw {
        use std::io::Write;
        let address = url.trim_start_matches("http://").trim_end_matches("/mcp");
        let mut head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
            body.len()
        );
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        let mut stream = std::net::TcpStream::connect(address).unwrap();
        stream
            .set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .unwrap();
        stream.write_all(head.as_bytes()).unwrap();
        let _ = stream.write_all(body);
        Raw(stream)
    }

    /// The status line and headers, lowercased.
    fn head(&mut self) -> String {
        use std::io::Read;
        let mut answer = Vec::new();
        let mut byte = [0u8; 1];
        while !answer.ends_with(b"\r\n\r\n") {
            match self.0.read(&mut byte) {
                Ok(0) | Err(_) => break,
                Ok(_) => answer.push(byte[0]),
            }
        }
        String::from_utf8_lossy(&answer).to_lowercase()
    }

    /// Everything after the head, to the end of the stream.
    fn rest(&mut self) -> String {
        use std::io::Read;
        let mut rest = String::new();
        let _ = self.0.read_to_string(&mut rest);
        rest
    }
}

/// Opens a session on `url`: its id.
fn open_session(url: &str) -> String {
    let mut init = Raw::post(url, None, INITIALIZE);
    let head = init.head();
    assert!(head.starts_with("http/1.1 200"), "{head}");
    let id = head
        .lines()
        .find_map(|l| l.strip_prefix("mcp-session-id: "))
        .expect("a session id")
        .trim()
        .to_owned();
    let mut ready = Raw::post(
        url,
        Some(&id),
        br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    assert!(ready.head().starts_with("http/1.1 202"));
    id
}

fn limited_server(ws: &Path, limits: &str) -> HttpServer {
    let policy = ws.join("policy.toml");
    std::fs::write(
        &policy,
        format!(
            "[approvals]\nnetwork = \"auto\"\n[limits]\n{limits}\n[tools.network]\nallow_hosts = [\"127.0.0.1\"]\n"
        ),
    )
    .unwrap();
    HttpServer::start_with(ws, &["--no-auth", "--policy", policy.to_str().unwrap()], None)
}

/// A request `body` in `session` with a bearer `token` (none: `--no-auth`): the head.
fn post_in(url: &str, token: Option<&str>, session: Option<&str>, body: &[u8]) -> String {
    let bearer = token.map(|t| format!("Bearer {t}"));
    let mut headers: Vec<(&str, &str)> = bearer.iter().map(|b| ("Authorization", b.as_str())).collect();
    if let Some(id) = session {
        headers.extend([("Mcp-Session-Id", id), ("Mcp-Protocol-Version", "2025-06-18")]);
    }
    Raw::send(url, &headers, body).head()
}

/// Opens a session with `token`: its id.
fn open_session_as(url: &str, token: &str) -> String {
    let head = post_in(url, Some(token), None, INITIALIZE);
    assert!(head.starts_with("http/1.1 200"), "{head}");
    let id = head
        .lines()
        .find_map(|l| l.strip_prefix("mcp-session-id: "))
        .expect("a session id")
        .trim()
        .to_owned();
    let ready = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    assert!(post_in(url, Some(token), Some(&id), ready).starts_with("http/1.1 202"));
    id
}

const PING: &[u8] = br#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#;

/// Sessions never lock a server out: past the bound the least recently used idle session
/// is closed for the new one; only when every session has a request in flight is a new
/// client refused, and stateless requests never count.
#[test]
fn http_makes_room_for_a_session_by_closing_the_oldest_idle_one_and_refuses_only_when_all_are_busy() {
    let ws = workspace();
    let server = limited_server(ws.path(), "max_sessions = 2\ntimeout_ms = 20000");
    let first = open_session(&server.url);
    let second = open_session(&server.url);
    assert!(post_in(&server.url, None, Some(&first), PING).starts_with("http/1.1 200"));
    // `second` is now the least recently used.
    let third = open_session(&server.url);
    assert!(post_in(&server.url, None, Some(&second), PING).starts_with("http/1.1 404"));
    for id in [&first, &third] {
        assert!(post_in(&server.url, None, Some(id), PING).starts_with("http/1.1 200"));
    }
    // Both busy: a call each that waits on a server that never answers.
    let stalled = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/slow", stalled.local_addr().unwrap());
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                      "params": {"name": "web_fetch", "arguments": {"url": url}}});
    let mut busy: Vec<Raw> = [&first, &third]
        .iter()
        .map(|id| Raw::post(&server.url, Some(id), call.to_string().as_bytes()))
        .collect();
    for raw in &mut busy {
        assert!(raw.head().starts_with("http/1.1 200"));
    }
    let mut refused = Raw::post(&server.url, None, INITIALIZE);
    assert!(refused.head().starts_with("http/1.1 503"));
    let error: Value = serde_json::from_str(&refused.rest()).unwrap();
    assert_eq!(error["error"]["code"], -32000);
    assert!(
        error["error"]["message"].as_str().unwrap().contains("max_sessions"),
        "{error}"
    );
    // A current client holds no session and is served meanwhile.
    let listed = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "current", "version": "1"}}}});
    let headers = [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/list")];
    let mut current = Raw::send(&server.url, &headers, listed.to_string().as_bytes());
    assert!(current.head().starts_with("http/1.1 200"));
}

/// One caller's leaked sessions (clients that never send DELETE) close its own oldest,
/// never another caller's; a session answers only to its caller; DELETE is 204.
#[test]
fn http_sessions_are_bounded_per_caller_kept_to_their_caller_and_deleted_with_204() {
    let ws = workspace();
    let dir = tempfile::tempdir().unwrap();
    let (alice, bob) = ("alice-token-0123456789abcdef", "bob-token-0123456789abcdefg");
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, format!("alice {alice}\nbob {bob}\n")).unwrap();
    let policy = dir.path().join("policy.toml");
    std::fs::write(&policy, "[limits]\nmax_sessions = 4\nmax_sessions_per_caller = 2\n").unwrap();
    let server = HttpServer::start_with(
        ws.path(),
        &[
            "--token-file",
            tokens.to_str().unwrap(),
            "--policy",
            policy.to_str().unwrap(),
        ],
        None,
    );
    let bobs: Vec<String> = (0..2).map(|_| open_session_as(&server.url, bob)).collect();
    let alices: Vec<String> = (0..10).map(|_| open_session_as(&server.url, alice)).collect();
    for (n, id) in alices.iter().enumerate() {
        let head = post_in(&server.url, Some(alice), Some(id), PING);
        let alive = n >= 8;
        assert!(
            head.starts_with(if alive { "http/1.1 200" } else { "http/1.1 404" }),
            "{n}: {head}"
        );
    }
    for id in &bobs {
        assert!(post_in(&server.url, Some(bob), Some(id), PING).starts_with("http/1.1 200"));
        // Another caller's session is unknown to alice, for requests and DELETE alike.
        assert!(post_in(&server.url, Some(alice), Some(id), PING).starts_with("http/1.1 404"));
    }
    let delete = |token: &str, id: &str| -> String {
        use std::io::{Read, Write};
        let address = server.url.trim_start_matches("http://").trim_end_matches("/mcp");
        let mut stream = std::net::TcpStream::connect(address).unwrap();
        write!(
            stream,
            "DELETE /mcp HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {token}\r\nMcp-Session-Id: {id}\r\nMcp-Protocol-Version: 2025-06-18\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer);
        answer.to_lowercase()
    };
    assert!(delete(alice, &bobs[0]).starts_with("http/1.1 404"));
    assert!(post_in(&server.url, Some(bob), Some(&bobs[0]), PING).starts_with("http/1.1 200"));
    assert!(delete(bob, &bobs[0]).starts_with("http/1.1 204"));
    assert!(post_in(&server.url, Some(bob), Some(&bobs[0]), PING).starts_with("http/1.1 404"));
}

#[test]
fn http_bounds_requests_in_flight_per_session_and_lets_cancellations_through() {
    let stalled = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/slow", stalled.local_addr().unwrap());
    let ws = workspace();
    let server = limited_server(ws.path(), "max_in_flight = 1\ntimeout_ms = 20000");
    let session = open_session(&server.url);
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                      "params": {"name": "web_fetch", "arguments": {"url": url}}});
    let mut slow = Raw::post(&server.url, Some(&session), call.to_string().as_bytes());
    assert!(slow.head().starts_with("http/1.1 200"));
    // The one place is taken: another request is refused at once, with its id.
    let mut second = Raw::post(
        &server.url,
        Some(&session),
        br#"{"jsonrpc":"2.0","id":8,"method":"ping"}"#,
    );
    assert!(second.head().starts_with("http/1.1 429"));
    let refused: Value = serde_json::from_str(&second.rest()).unwrap();
    assert_eq!(refused["id"], 8);
    assert!(
        refused["error"]["message"].as_str().unwrap().contains("max_in_flight"),
        "{refused}"
    );
    // Another session has its own places.
    let other = open_session(&server.url);
    let mut ping = Raw::post(
        &server.url,
        Some(&other),
        br#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#,
    );
    assert!(ping.head().starts_with("http/1.1 200"));
    // A cancellation is not a request: it passes, and frees the place.
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}});
    let mut cancelled = Raw::post(&server.url, Some(&session), cancel.to_string().as_bytes());
    assert!(cancelled.head().starts_with("http/1.1 202"));
    drop(slow);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let mut again = Raw::post(
            &server.url,
            Some(&session),
            br#"{"jsonrpc":"2.0","id":10,"method":"ping"}"#,
        );
        let head = again.head();
        if head.starts_with("http/1.1 200") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the place was never freed: {head}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn http_refuses_a_body_over_the_cap_with_413() {
    let ws = workspace();
    let server = limited_server(ws.path(), "");
    let session = open_session(&server.url);
    let mut body = br#"{"jsonrpc":"2.0","id":2,"method":"ping","params":{"pad":""#.to_vec();
    body.resize(body.len() + 9 * 1024 * 1024, b'x');
    body.extend_from_slice(br#""}}"#);
    let mut big = Raw::post(&server.url, Some(&session), &body);
    assert!(big.head().starts_with("http/1.1 413"));
    let mut ping = Raw::post(
        &server.url,
        Some(&session),
        br#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#,
    );
    assert!(ping.head().starts_with("http/1.1 200"), "the session goes on");
}

#[test]
fn http_answers_a_duplicate_key_or_an_out_of_range_number_with_its_id() {
    let ws = workspace();
    let server = limited_server(ws.path(), "");
    let session = open_session(&server.url);
    for (id, body) in [
        (
            4,
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"missing.txt","path":"a.txt"}}}"#,
        ),
        (
            5,
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"a.txt","limit":1e400}}}"#,
        ),
    ] {
        let mut answer = Raw::post(&server.url, Some(&session), body.as_bytes());
        assert!(answer.head().starts_with("http/1.1 200"));
        let error: Value = serde_json::from_str(&answer.rest()).unwrap();
        assert_eq!(error["id"], id);
        assert_eq!(error["error"]["code"], -32602, "{error}");
    }
    let mut garbage = Raw::post(&server.url, Some(&session), b"{not json");
    assert!(garbage.head().starts_with("http/1.1 400"));
    assert_eq!(
        serde_json::from_str::<Value>(&garbage.rest()).unwrap()["error"]["code"],
        -32700
    );
}

/// Several rmcp clients over HTTP at once, each with its own session, sending a mix of
/// calls: reads, invalid arguments, unknown tools, calls that run past their time limit and
/// calls cancelled while they run. Every call that is not cancelled gets its one answer and
/// leaves exactly one receipt line (unknown tools included), a cancelled call at most one,
/// and memory stays bounded.
#[test]
fn http_soak_every_call_answered_once_and_receipted_once() {
    use rmcp::model::{CallToolRequest, ClientRequest};
    use rmcp::service::PeerRequestOptions;
    const CLIENTS: usize = 4;
    const CALLS: usize = 300;
    const WAVE: usize = 30;
    let stalled = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let slow_url = format!("http://{}/slow", stalled.local_addr().unwrap());
    // A slow server: it takes every connection and never answers (a listener that never
    // accepted would leave it to the kernel's full backlog, which now and then refuses a
    // connection instead of letting it wait: a failure, not the timeout this test counts).
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in stalled.incoming().flatten() {
            held.push(stream);
        }
    });
    let ws = workspace();
    let server = limited_server(ws.path(), "timeout_ms = 300");
    let started = std::time::Instant::now();
    let tallies = block_on(async {
        let mut clients = tokio::task::JoinSet::new();
        for _ in 0..CLIENTS {
            let (url, slow_url) = (server.url.clone(), slow_url.clone());
            clients.spawn(async move {
                let config = StreamableHttpClientTransportConfig::with_uri(url);
                let client = Arc::new(
                    ().serve(StreamableHttpClientTransport::from_config(config))
                        .await
                        .unwrap(),
                );
                // (answered, calls, cancelled, timed out)
                let mut tally = (0usize, 0usize, 0usize, 0usize);
                for wave in 0..CALLS / WAVE {
                    let mut calls = tokio::task::JoinSet::new();
                    for i in 0..WAVE {
                        let (client, slow_url) = (client.clone(), slow_url.clone());
                        let kind = (wave * WAVE + i) % 20;
                        calls.spawn(async move {
                            let fetch = || {
                                CallToolRequestParams::new("web_fetch").with_arguments(object(json!({"url": slow_url})))
                            };
                            let within = std::time::Duration::from_secs(20);
                            match kind {
                                1 => {
                                    let request = ClientRequest::CallToolRequest(CallToolRequest::new(fetch()));
                                    let handle = client
                                        .send_cancellable_request(request, PeerRequestOptions::no_options())
                                        .await
                                        .unwrap();
                                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                                    handle.cancel(Some("soak".into())).await.unwrap();
                                    (0, 1, 1, 0)
                                }
                                5 => {
                                    let unknown = CallToolRequestParams::new("no_such_tool").with_arguments(Map::new());
                                    let answer = tokio::time::timeout(within, client.call_tool(unknown)).await;
                                    assert!(matches!(answer, Ok(Err(ServiceError::McpError(_)))), "{answer:?}");
                                    (1, 1, 0, 0)
                                }
                                _ => {
                                    let params = match kind {
                                        0 => fetch(),
                                        2..=4 => CallToolRequestParams::new("read_file")
                                            .with_arguments(object(json!({"path": "a.txt", "limit": "x"}))),
                                        _ => CallToolRequestParams::new("read_file")
                                            .with_arguments(object(json!({"path": "a.txt"}))),
                                    };
                                    let answer = tokio::time::timeout(within, client.call_tool(params))
                                        .await
                                        .expect("every call is answered")
                                        .expect("a tool result");
                                    assert_eq!(answer.is_error == Some(true), kind <= 4, "{kind}: {answer:?}");
                                    (1, 1, 0, usize::from(kind == 0))
                                }
                            }
                        });
                    }
                    while let Some(done) = calls.join_next().await {
                        let (a, k, c, t) = done.unwrap();
                        tally = (tally.0 + a, tally.1 + k, tally.2 + c, tally.3 + t);
                    }
                }
                tally
            });
        }
        let mut all = Vec::new();
        while let Some(tally) = clients.join_next().await {
            all.push(tally.unwrap());
        }
        all
    });
    let known: usize = tallies.iter().map(|t| t.1).sum();
    let cancelled: usize = tallies.iter().map(|t| t.2).sum();
    let timed_out: usize = tallies.iter().map(|t| t.3).sum();
    assert_eq!(tallies.iter().map(|t| t.0).sum::<usize>(), CLIENTS * CALLS - cancelled);
    // Receipts of cancelled calls are written once their work stopped.
    let receipts = ws.path().join(".kyro/receipts.jsonl");
    // Settled: every web_fetch receipted, or no new line for a second (a stopped call is
    // receipted within the 250 ms stop grace).
    let (mut last, mut since) = (0, std::time::Instant::now());
    let lines = loop {
        let text = std::fs::read_to_string(&receipts).unwrap_or_default();
        let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let all = lines.iter().filter(|r| r["tool"] == "web_fetch").count() >= timed_out + cancelled;
        if lines.len() != last {
            (last, since) = (lines.len(), std::time::Instant::now());
        }
        if all || since.elapsed() > std::time::Duration::from_secs(1) {
            break lines;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let mut seen = std::collections::BTreeMap::new();
    for r in &lines {
        *seen.entry(format!("{} {}", r["tool"], r["outcome"])).or_insert(0) += 1;
    }
    let ids: std::collections::HashSet<&str> = lines.iter().map(|r| r["call_id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), lines.len(), "no call was receipted twice");
    // rmcp's client aborts the POST of a request it cancels, so a cancelled call may never
    // reach the server; every other call is receipted exactly once.
    let count = |kind: &str| lines.iter().filter(|r| r["outcome"] == kind).count();
    // A fetch of the stalled server ends at the call's time limit, or (when the runtime's
    // timer is late on a loaded machine) at its HTTP client's own timeout a moment after,
    // answered `unreachable`: stopped all the same, and answered and receipted once.
    let late = lines
        .iter()
        .filter(|r| r["tool"] == "web_fetch" && r["outcome"] == "execution_failed" && r["error_kind"] == "unreachable")
        .count();
    let stopped = count("cancelled") + count("timed_out") + late;
    let failed: Vec<&Value> = lines
        .iter()
        .filter(|r| r["outcome"] == "execution_failed")
        .map(|r| &r["error_kind"])
        .collect();
    assert_eq!(
        lines.len() - stopped,
        known - cancelled - timed_out,
        "{seen:?} failed: {failed:?}"
    );
    assert!(
        stopped >= timed_out && stopped <= timed_out + cancelled && count("cancelled") > 0,
        "{seen:?}"
    );
    assert!(late <= timed_out / 10, "most fetches end at the time limit: {seen:?}");
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.child.id())).unwrap();
    let peak_kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    assert!(peak_kib < 256 * 1024, "peak RSS {peak_kib} KiB");
    eprintln!(
        "soak: {} calls from {CLIENTS} clients in {:?}, peak RSS {} MiB",
        CLIENTS * CALLS,
        started.elapsed(),
        peak_kib / 1024
    );
}

#[test]
fn http_asks_a_current_client_by_input_required_and_runs_the_approved_call_once() {
    let ws = workspace();
    let server = HttpServer::start(ws.path());
    let bearer = format!("Bearer {TOKEN}");
    let call = |retry: Value| -> Value {
        let mut params = json!({"name": "run_command", "arguments": {"argv": ["echo ran >> log"], "shell": true},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}}});
        if let Value::Object(retry) = retry {
            params.as_object_mut().unwrap().extend(retry);
        }
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).to_string();
        let headers = [
            ("Authorization", bearer.as_str()),
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "run_command"),
        ];
        let mut answered = Raw::send(&server.url, &headers, body.as_bytes());
        let head = answered.head();
        assert!(head.starts_with("http/1.1 200"), "{head}");
        // The answer is one JSON-RPC message, as JSON or as one server-sent event.
        let rest = answered.rest();
        let start = rest.find('{').expect("a JSON-RPC answer");
        let end = rest.rfind('}').unwrap();
        serde_json::from_str::<Value>(&rest[start..=end]).unwrap()["result"].clone()
    };
    let runs = || {
        std::fs::read_to_string(ws.path().join("log"))
            .unwrap_or_default()
            .lines()
            .count()
    };
    let asked = call(Value::Null);
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let state = asked["requestState"].as_str().expect("a sealed state").to_owned();
    let yes = json!({"inputResponses": {"approval": {"action": "accept", "content": {"approve": true}}}, "requestState": state});
    assert_eq!(runs(), 0);
    let approved = call(yes.clone());
    assert_eq!(approved["isError"], false, "{approved}");
    assert_eq!(runs(), 1);
    let replayed = call(yes);
    assert_eq!(replayed["isError"], true, "{replayed}");
    assert_eq!(runs(), 1);
}

/// One 2026-07-28 request over HTTP with `token` (its `Mcp-Name` from `params.name`,
/// `params.uri` or `params.taskId`); the
/// answer's result.
fn post_as(url: &str, token: &str, method: &str, params: Value) -> Value {
    let name = params
        .get("name")
        .or_else(|| params.get("uri"))
        .or_else(|| params.get("taskId"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let bearer = format!("Bearer {token}");
    let mut headers = vec![
        ("Authorization", bearer.as_str()),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
    ];
    if !name.is_empty() {
        headers.push(("Mcp-Name", name.as_str()));
    }
    let mut answered = Raw::send(url, &headers, body.as_bytes());
    let head = answered.head();
    let rest = answered.rest();
    assert!(head.starts_with("http/1.1 200"), "{head}{rest}");
    let (start, end) = (rest.find('{').expect("a JSON-RPC answer"), rest.rfind('}').unwrap());
    serde_json::from_str::<Value>(&rest[start..=end]).unwrap()["result"].clone()
}

/// One 2026-07-28 `tools/call` of `run_command` over HTTP with `token`; its result.
fn call_as(url: &str, token: &str, argv: Value, retry: Value) -> Value {
    let mut params = json!({"name": "run_command", "arguments": {"argv": argv},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}}});
    if let Value::Object(retry) = retry {
        params.as_object_mut().unwrap().extend(retry);
    }
    post_as(url, token, "tools/call", params)
}

#[test]
fn http_callers_of_a_token_file_are_kept_apart_in_approvals_grants_and_receipts() {
    let ws = workspace();
    let (alice, bob) = ("alice-token-0123456789abcdef", "bob-token-0123456789abcdef00");
    let tokens = ws.path().join("tokens");
    std::fs::write(&tokens, format!("# who may call\nalice {alice}\nbob   {bob}\n")).unwrap();
    let server = HttpServer::start_with(ws.path(), &["--token-file", tokens.to_str().unwrap()], None);
    let touch = |name: &str| json!(["touch", name]);
    // Alice is asked; Bob cannot redeem her state, whatever he answers.
    let asked = call_as(&server.url, alice, touch("a"), Value::Null);
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let state = asked["requestState"].as_str().unwrap().to_owned();
    let yes = json!({"inputResponses": {"approval": {"action": "accept", "content": {"approve": true, "remember": "hour"}}}, "requestState": state});
    let stolen = call_as(&server.url, bob, touch("a"), yes.clone());
    assert_eq!(stolen["isError"], true, "{stolen}");
    assert!(
        stolen["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("does not verify"),
        "{stolen}"
    );
    assert!(!ws.path().join("a").exists());
    // Alice's own answer runs it, and grants her the tool for an hour: not Bob.
    let ran = call_as(&server.url, alice, touch("a"), yes);
    assert_eq!(ran["isError"], false, "{ran}");
    let granted = call_as(&server.url, alice, touch("b"), Value::Null);
    assert_eq!(granted["isError"], false, "{granted}");
    let not_bob = call_as(&server.url, bob, touch("c"), Value::Null);
    assert_eq!(not_bob["resultType"], "input_required", "{not_bob}");
    assert!(!ws.path().join("c").exists());
    // A caller is who the token says, never what the body says.
    let claimed = call_as(
        &server.url,
        bob,
        touch("d"),
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "caller": "alice",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}}}),
    );
    assert_eq!(claimed["resultType"], "input_required", "{claimed}");
    let receipts: Vec<(String, String)> = std::fs::read_to_string(ws.path().join(".kyro/receipts.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|r| {
            (
                r["caller"].as_str().unwrap().to_owned(),
                r["decision"]["kind"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    // One receipt a request: a retry's answer is redeemed inside the one pass.
    let expected = [
        ("alice", "approval_required"),
        ("bob", "denied"),
        ("alice", "approved"),
        ("alice", "granted"),
        ("bob", "approval_required"),
        ("bob", "approval_required"),
    ];
    assert_eq!(receipts, expected.map(|(c, d)| (c.to_owned(), d.to_owned())));
}

#[test]
fn http_refuses_a_current_request_whose_mcp_name_header_contradicts_its_body() {
    let ws = workspace();
    let server = HttpServer::start(ws.path());
    let bearer = format!("Bearer {TOKEN}");
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "write_file", "arguments": {"path": "new.txt", "content": "x"},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}})
    .to_string();
    for (method, name) in [("tools/call", "read_file"), ("tools/list", "write_file")] {
        let headers = [
            ("Authorization", bearer.as_str()),
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", method),
            ("Mcp-Name", name),
        ];
        let mut answered = Raw::send(&server.url, &headers, body.as_bytes());
        let head = answered.head();
        assert!(head.starts_with("http/1.1 400"), "{method} {name}: {head}");
        let rest = answered.rest();
        assert!(rest.contains("does not match"), "{rest}");
        assert!(rest.contains("\"id\":7"), "{rest}");
    }
    assert!(!ws.path().join("new.txt").exists());
}

#[test]
fn http_a_caller_with_its_own_policy_is_listed_and_held_to_it() {
    let ws = workspace();
    let (alice, reader, none) = (
        "alice-token-0123456789abcdef",
        "reader-token-0123456789abcd",
        "none-token-0123456789abcdef",
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("reader.toml"), "capabilities = [\"fs.read\"]\n").unwrap();
    std::fs::write(dir.path().join("none.toml"), "capabilities = []\n").unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::write(
        &tokens,
        format!("alice {alice}\nreader {reader} reader.toml\nnone {none} none.toml\n"),
    )
    .unwrap();
    let server = HttpServer::start_with(ws.path(), &["--token-file", tokens.to_str().unwrap()], None);
    let request = |token: &str, method: &str, mut params: Value| -> Value {
        params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
            "io.modelcontextprotocol/clientInfo": {"name": "policy", "version": "1"}});
        post_as(&server.url, token, method, params)
    };
    let names = |token: &str| -> Vec<String> {
        request(token, "tools/list", json!({}))["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let (listed_alice, listed_reader) = (names(alice), names(reader));
    assert!(listed_alice.contains(&"write_file".to_owned()), "{listed_alice:?}");
    assert!(!listed_reader.contains(&"write_file".to_owned()), "{listed_reader:?}");
    assert!(listed_reader.contains(&"read_file".to_owned()), "{listed_reader:?}");
    let write = json!({"name": "write_file", "arguments": {"path": "new.txt", "content": "x"}});
    let refused = request(reader, "tools/call", write.clone());
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(
        refused["content"][0]["text"].as_str().unwrap().starts_with("denied"),
        "{refused}"
    );
    let asked = request(alice, "tools/call", write);
    assert_eq!(
        asked["resultType"], "input_required",
        "alice keeps the server's policy: {asked}"
    );
    let read = request(
        reader,
        "tools/call",
        json!({"name": "read_file", "arguments": {"path": "a.txt"}}),
    );
    assert_eq!(read["isError"], false, "{read}");
    assert!(!ws.path().join("new.txt").exists());
    // The same policy holds on every path: a caller granted nothing reads no file as a
    // resource either, nor is offered the file template.
    let templates = request(none, "resources/templates/list", json!({}));
    assert_eq!(templates["resourceTemplates"], json!([]), "{templates}");
    let body =
        json!({"jsonrpc": "2.0", "id": 9, "method": "resources/read", "params": {"uri": "kyro://workspace/a.txt",
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "policy", "version": "1"}}}})
        .to_string();
    let bearer = format!("Bearer {none}");
    let headers = [
        ("Authorization", bearer.as_str()),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "resources/read"),
        ("Mcp-Name", "kyro://workspace/a.txt"),
    ];
    let answered = Raw::send(&server.url, &headers, body.as_bytes()).rest();
    assert!(answered.contains("\"error\""), "{answered}");
    assert!(!answered.contains("one|two"), "{answered}");
}
