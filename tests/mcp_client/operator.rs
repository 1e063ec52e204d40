//! What an operator running `kyro mcp --http` as a service relies on (issue 45): under
//! `--log-json` every stderr line is one JSON object and every refusal is a line with its
//! status, reason, caller and trace; after SIGTERM the probes answer 503 `draining`, `/mcp`
//! takes no new request, the call in flight finishes and the process always ends with 143;
//! SIGHUP reads the token file and the callers' policies again (a bad file keeps the old);
//! a replica whose OAuth issuer cannot be reached is not ready until its keys are fetched.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Duration;

use serde_json::{Value, json};

use super::ops::get;
use super::workspace;

/// `kyro mcp --http` with `flags` (and `KYRO_HTTP_TOKEN` when `token`): the child, its
/// address, and every stderr line, the first included.
fn serve(ws: &std::path::Path, flags: &[&str], token: Option<&str>) -> (Child, String, Receiver<String>) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_kyro"));
    command.env_remove("KYRO_HTTP_TOKEN").env_remove("KYRO_STATE");
    if let Some(token) = token {
        command.env("KYRO_HTTP_TOKEN", token);
    }
    let mut child = command
        .args(["mcp", "--http", "127.0.0.1:0", "--workspace"])
        .arg(ws)
        .args(flags)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    let address = loop {
        let line = rx.recv_timeout(Duration::from_secs(20)).expect("the address on stderr");
        if let Some((_, rest)) = line.split_once("serving MCP on http://") {
            break rest.split('/').next().unwrap().to_owned();
        }
        seen.push(line);
    };
    // The lines before the address are handed back first.
    let (again, rx2) = std::sync::mpsc::channel();
    for line in seen {
        let _ = again.send(line);
    }
    std::thread::spawn(move || {
        for line in rx.iter() {
            if again.send(line).is_err() {
                break;
            }
        }
    });
    (child, address, rx2)
}

/// A POST of a 2026-07-28 `tools/call` with `authorization` (a header's value) and
/// `traceparent`: the head (lowercased) and the body.
fn call(address: &str, authorization: &str, name: &str, arguments: Value, traceparent: &str) -> (String, String) {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": name, "arguments": arguments, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}}})
    .to_string();
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nAuthorization: {authorization}\r\ntraceparent: {traceparent}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: {name}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    (head.to_lowercase(), body.to_owned())
}

const TRACE: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

fn terminate(child: &Child) {
    // SAFETY: signalling the child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
}

fn hang_up(child: &Child) {
    // SAFETY: signalling the child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGHUP) };
}

/// Lines of `stderr` until one satisfies `wanted` (10 s at most): that one.
fn wait_for(stderr: &Receiver<String>, wanted: impl Fn(&str) -> bool) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let line = stderr.recv_timeout(left).expect("the line awaited on stderr");
        if wanted(&line) {
            return line;
        }
    }
}

#[test]
fn under_log_json_every_stderr_line_is_json_and_every_refusal_and_denial_is_a_line() {
    let ws = workspace();
    let policy = ws.path().join("policy.toml");
    std::fs::write(&policy, "[approvals]\nread = \"deny\"\n").unwrap();
    let (mut child, address, stderr) = serve(
        ws.path(),
        &["--log-json", "--policy", policy.to_str().unwrap()],
        Some(super::TOKEN),
    );
    let bearer = format!("Bearer {}", super::TOKEN);
    // No token, a wrong one, a rebound host name, and a call the policy denies.
    let (head, _) = call(&address, "Basic x", "read_file", json!({"path": "a.txt"}), TRACE);
    assert!(head.starts_with("http/1.1 401"), "{head}");
    let (head, _) = call(&address, "Bearer wrong", "read_file", json!({"path": "a.txt"}), TRACE);
    assert!(head.starts_with("http/1.1 401"), "{head}");
    let rebound = {
        let mut stream = std::net::TcpStream::connect(&address).unwrap();
        stream
            .write_all(b"GET /mcp HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer);
        answer
    };
    assert!(rebound.starts_with("HTTP/1.1 403"), "{rebound}");
    let (head, body) = call(&address, &bearer, "read_file", json!({"path": "a.txt"}), TRACE);
    assert!(head.starts_with("http/1.1 200") && body.contains("denied"), "{body}");
    terminate(&child);
    assert_eq!(child.wait().unwrap().code(), Some(143));
    let lines: Vec<String> = stderr.iter().collect();
    let objects: Vec<Value> = lines
        .iter()
        .map(|line| {
            let value: Value = serde_json::from_str(line).unwrap_or_else(|_| panic!("not JSON: {line}"));
            assert!(
                value["ts_ms"].is_u64() && value["level"].is_string() && value["msg"].is_string(),
                "{line}"
            );
            value
        })
        .collect();
    let refusals: Vec<&Value> = objects.iter().filter(|v| v["msg"] == "refused").collect();
    assert_eq!(refusals.len(), 3, "{lines:#?}");
    let unauthorized: Vec<&&Value> = refusals.iter().filter(|r| r["status"] == 401).collect();
    assert_eq!(unauthorized.len(), 2, "{refusals:#?}");
    assert!(
        unauthorized
            .iter()
            .all(|r| r["level"] == "warn" && r["trace_id"] == TRACE.split('-').nth(1).unwrap()),
        "{refusals:#?}"
    );
    assert!(
        unauthorized[0]["reason"]
            .as_str()
            .unwrap()
            .contains("send `Authorization: Bearer")
    );
    assert!(
        unauthorized[1]["reason"]
            .as_str()
            .unwrap()
            .contains("not one this server takes")
    );
    let host = refusals
        .iter()
        .find(|r| r["status"] == 403)
        .expect("the host's refusal");
    assert!(host["reason"].as_str().unwrap().contains("evil.example"), "{host}");
    let denied = objects
        .iter()
        .find(|v| v["msg"] == "call")
        .expect("the denied call's line");
    assert_eq!(denied["outcome"], "denied", "{denied}");
    assert_eq!(denied["reason_kind"], "policy_forbids", "{denied}");
    assert_eq!(denied["caller"], "http", "{denied}");
    assert!(
        objects
            .iter()
            .any(|v| v["msg"].as_str().is_some_and(|m| m.starts_with("draining"))),
        "{lines:#?}"
    );
    // The start names where state is kept and whether approval states have the shared key.
    assert!(
        objects.iter().any(|v| v["msg"]
            .as_str()
            .is_some_and(|m| m.starts_with("state: this machine") && m.contains("KYRO_STATE_KEY is not set"))),
        "{lines:#?}"
    );
}

#[test]
fn after_sigterm_the_probes_say_draining_new_requests_are_refused_and_the_call_in_flight_ends_then_143() {
    let ws = workspace();
    // A page that answers after two seconds.
    let slow = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let page = format!("http://{}/slow", slow.local_addr().unwrap());
    std::thread::spawn(move || {
        if let Ok((mut stream, _)) = slow.accept() {
            let mut head = [0u8; 1024];
            let _ = stream.read(&mut head);
            std::thread::sleep(Duration::from_secs(2));
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\nConnection: close\r\n\r\nslow!",
            );
        }
    });
    let policy = ws.path().join("policy.toml");
    std::fs::write(
        &policy,
        "[approvals]\nnetwork = \"auto\"\n[tools.network]\nallow_hosts = [\"127.0.0.1\"]\n",
    )
    .unwrap();
    let (mut child, address, _stderr) = serve(ws.path(), &["--policy", policy.to_str().unwrap()], Some(super::TOKEN));
    let bearer = format!("Bearer {}", super::TOKEN);
    let in_flight = {
        let (address, bearer) = (address.clone(), bearer.clone());
        std::thread::spawn(move || call(&address, &bearer, "web_fetch", json!({"url": page}), TRACE))
    };
    std::thread::sleep(Duration::from_millis(500));
    terminate(&child);
    std::thread::sleep(Duration::from_millis(300));
    for probe in ["/readyz", "/healthz"] {
        let (head, body) = get(&address, probe);
        assert!(head.starts_with("http/1.1 503"), "{probe}: {head}");
        assert_eq!(body, "draining\n", "{probe}");
    }
    let (head, body) = call(&address, &bearer, "list_allowed_directories", json!({}), TRACE);
    assert!(head.starts_with("http/1.1 503"), "a new request while draining: {head}");
    assert!(body.contains("shutting down"), "{body}");
    let (head, body) = in_flight.join().unwrap();
    assert!(
        head.starts_with("http/1.1 200") && body.contains("slow!"),
        "{head}\n{body}"
    );
    assert_eq!(child.wait().unwrap().code(), Some(143));
    // Idle, at once after the start: 143 every time.
    for _ in 0..6 {
        let (mut child, _address, _stderr) = serve(ws.path(), &[], Some(super::TOKEN));
        terminate(&child);
        assert_eq!(child.wait().unwrap().code(), Some(143));
    }
}

#[test]
fn sighup_reads_the_token_file_and_the_callers_policies_again_and_a_bad_file_keeps_the_old() {
    let ws = workspace();
    std::fs::write(ws.path().join("a.txt"), "hello\n").unwrap();
    let secrets = tempfile::tempdir().unwrap();
    let file = secrets.path().join("tokens");
    let policy = secrets.path().join("alice.toml");
    let (alice, bob) = ("alice-token-0123456789abcdef0123", "bob-token-0123456789abcdef012345");
    std::fs::write(&policy, "[approvals]\nread = \"deny\"\n").unwrap();
    std::fs::write(&file, format!("alice {alice} alice.toml\n")).unwrap();
    let (mut child, address, stderr) = serve(ws.path(), &["--token-file", file.to_str().unwrap()], None);
    let read = |token: &str| {
        call(
            &address,
            &format!("Bearer {token}"),
            "read_file",
            json!({"path": "a.txt"}),
            TRACE,
        )
    };
    let (head, body) = read(alice);
    assert!(
        head.starts_with("http/1.1 200") && body.contains("denied"),
        "alice's policy denies: {body}"
    );
    assert!(read(bob).0.starts_with("http/1.1 401"));
    // Bob in, Alice's policy loosened: in force after SIGHUP, and the server still serves.
    std::fs::write(&policy, "[approvals]\nread = \"auto\"\n").unwrap();
    std::fs::write(&file, format!("alice {alice} alice.toml\nbob {bob}\n")).unwrap();
    hang_up(&child);
    let said = wait_for(&stderr, |l| l.contains("SIGHUP"));
    assert!(said.contains("read again") && said.contains("tokens=2"), "{said}");
    let (head, body) = read(alice);
    assert!(head.starts_with("http/1.1 200") && body.contains("hello"), "{body}");
    assert!(read(bob).0.starts_with("http/1.1 200"));
    // A file that cannot be read as a token file: the old tokens stay, and it says why.
    std::fs::write(&file, format!("bob {bob} one.toml two\n")).unwrap();
    hang_up(&child);
    let said = wait_for(&stderr, |l| l.contains("SIGHUP"));
    assert!(said.contains("stay") && said.contains("line 1"), "{said}");
    assert!(read(bob).0.starts_with("http/1.1 200"));
    assert!(read(alice).0.starts_with("http/1.1 200"));
    // A policy that does not load: the same.
    std::fs::write(&file, format!("alice {alice} alice.toml\n")).unwrap();
    std::fs::write(&policy, "[approvals]\nread = \"sometimes\"\n").unwrap();
    hang_up(&child);
    let said = wait_for(&stderr, |l| l.contains("SIGHUP"));
    assert!(said.contains("stay") && said.contains("alice"), "{said}");
    assert!(read(bob).0.starts_with("http/1.1 200"), "bob stays with the old file");
    // A policy of his own for Bob, narrower than the server's: his next request is under it.
    std::fs::write(&policy, "[approvals]\nread = \"auto\"\n").unwrap();
    std::fs::write(secrets.path().join("bob.toml"), "[approvals]\nread = \"deny\"\n").unwrap();
    std::fs::write(&file, format!("alice {alice} alice.toml\nbob {bob} bob.toml\n")).unwrap();
    hang_up(&child);
    let said = wait_for(&stderr, |l| l.contains("SIGHUP"));
    assert!(said.contains("policies=2"), "{said}");
    let (head, body) = read(bob);
    assert!(
        head.starts_with("http/1.1 200") && body.contains("denied"),
        "bob's own policy: {body}"
    );
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_replica_whose_issuer_cannot_be_reached_is_not_ready_and_says_why_until_the_keys_come() {
    let ws = workspace();
    // The issuer's port, free until the issuer starts there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let issuer = format!("http://127.0.0.1:{port}");
    let jwks = format!("{issuer}/jwks");
    let (mut child, address, stderr) = serve(
        ws.path(),
        &[
            "--issuer",
            &issuer,
            "--audience",
            "http://127.0.0.1/mcp",
            "--jwks-uri",
            &jwks,
        ],
        None,
    );
    let said = wait_for(&stderr, |l| l.contains("the issuer's keys cannot be fetched"));
    assert!(said.contains(&issuer), "{said}");
    let (head, body) = get(&address, "/readyz");
    assert!(head.starts_with("http/1.1 503"), "{head}");
    assert_eq!(body, "not ready: issuer\n");
    // The issuer comes: ready within the next fetch (every 10 s while the keys are missing).
    let key = super::oauth::es256("k1");
    let listener = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
    let published = json!({"keys": [key.jwk]}).to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut head = [0u8; 2048];
            let _ = stream.read(&mut head);
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{published}",
                published.len()
            );
        }
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(25);
    loop {
        let (head, _) = get(&address, "/readyz");
        if head.starts_with("http/1.1 200") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "not ready 25 s after the issuer came"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    let _ = child.kill();
    let _ = child.wait();
}
