//! The stdio edge of `kyro mcp`: malformed, oversized and duplicate messages each get
//! their JSON-RPC error and the server goes on; every answer reaches the client.

use std::io::{BufRead, Write};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use super::Server;

#[test]
fn the_server_survives_a_thousand_malformed_lines() {
    let ws = tempfile::tempdir().unwrap();
    let mut server = Server::start(ws.path());
    for i in 0..1000 {
        let line = match i % 4 {
            0 => "not json at all".to_owned(),
            1 => format!("{{\"jsonrpc\": \"2.0\", \"id\": {i}, \"method\": "),
            2 => "[1, 2, 3]".to_owned(),
            _ => "{\"jsonrpc\": \"2.0\", \"method\": 42}".to_owned(),
        };
        server.send(&line);
    }
    let pong = server.request(100_000, "ping", json!({}));
    assert_eq!(pong["result"], json!({}));
    let call = server.request(
        100_001,
        "tools/call",
        json!({"name": "calculate", "arguments": {"expression": "6 * 7"}}),
    );
    assert_eq!(call["result"]["structuredContent"]["value"], 42);
}

#[test]
fn malformed_messages_get_their_json_rpc_errors_and_the_server_goes_on() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("a.txt"), "a\n").unwrap();
    let mut server = Server::start(ws.path());
    // Answered with the request's id.
    for (id, params) in [
        (20, r#"{"name":"read_file","arguments":"{\"path\":\"a.txt\"}"}"#),
        (21, r#"{"name":"read_file","arguments":["a.txt"]}"#),
        (
            22,
            r#"{"name":"read_file","name":"write_file","arguments":{"path":"a.txt"}}"#,
        ),
    ] {
        server.send(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{params}}}"#
        ));
        assert_eq!(server.answer(id)["error"]["code"], -32602, "{params}");
    }
    // A fault inside a request's params (a lone surrogate, a number no double holds) is
    // answered to that request.
    for (id, params) in [
        (23, r#"{"s":"\ud800"}"#),
        (25, r#"{"name":"calculate","arguments":{"expression":"1","x":1e400}}"#),
    ] {
        server.send(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{params}}}"#
        ));
        assert_eq!(server.answer(id)["error"]["code"], -32602, "{params}");
    }
    // Over the size limit: answered under its id when its start names it, else with a null
    // id; and with a null id when the message could not be read far enough to find one.
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":24,"method":"ping","params":{{"p":"{}"}}}}"#,
        "a".repeat(20 << 20)
    );
    let huge_id_last = format!(
        r#"{{"jsonrpc":"2.0","method":"ping","params":{{"p":"{}"}},"id":26}}"#,
        "a".repeat(20 << 20)
    );
    for (frame, id, code) in [
        (deep, Value::Null, -32700),
        (huge, json!(24), -32600),
        (huge_id_last, Value::Null, -32600),
    ] {
        server.send(&frame);
        let mut line = String::new();
        server.stdout.read_line(&mut line).unwrap();
        let answer: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(
            (answer["id"].clone(), answer["error"]["code"].clone()),
            (id, json!(code))
        );
    }
    // And the server still serves.
    let read = server.request(
        25,
        "tools/call",
        json!({"name": "read_file", "arguments": {"path": "a.txt"}}),
    );
    assert_eq!(read["result"]["structuredContent"]["content"], "a\n");
}

/// Two requests under one id while the first runs: the second is refused at once (`-32600`,
/// under that id) and never runs; the first still runs and is answered; then the id is free.
#[test]
fn a_second_request_under_the_id_of_one_in_flight_is_refused_and_never_runs() {
    // The fetch stays in flight until its limit.
    let ws = tempfile::tempdir().unwrap();
    let (mut server, url, _stalled) = super::stalled_fetch(ws.path(), 1000, "write = \"auto\"\n");
    server.send(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "web_fetch", "arguments": {"url": url}}})
        .to_string(),
    );
    server.send(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "write_file", "arguments": {"path": "second.txt", "content": "ran"}}})
        .to_string(),
    );
    let mut answers = Vec::new();
    while answers.len() < 2 {
        let mut line = String::new();
        assert!(server.stdout.read_line(&mut line).unwrap() > 0, "server closed stdout");
        let message: Value = serde_json::from_str(&line).unwrap();
        if message["id"] == 2 {
            answers.push(message);
        }
    }
    assert_eq!(answers[0]["error"]["code"], -32600, "{}", answers[0]);
    let message = answers[0]["error"]["message"].as_str().unwrap();
    assert!(message.contains("already in flight"), "{message}");
    let text = answers[1]["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        text.starts_with("timed_out (web_fetch)"),
        "the first one ran: {}",
        answers[1]
    );
    assert!(!ws.path().join("second.txt").exists(), "the second one never ran");
    let receipts = std::fs::read_to_string(ws.path().join(".kyro/receipts.jsonl")).unwrap();
    assert!(!receipts.contains("write_file"), "{receipts}");
    // Answered, the id is free again.
    let again = server.request(
        2,
        "tools/call",
        json!({"name": "calculate", "arguments": {"expression": "6*7"}}),
    );
    assert_eq!(again["result"]["structuredContent"]["value"], 42, "{again}");
}

#[test]
fn every_answer_is_written_when_the_client_closes_stdin_right_after_its_requests() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("a.txt"), "a\n").unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_kyro"))
        .args(["mcp", "--workspace"])
        .arg(ws.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for line in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}).to_string(),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "read_file", "arguments": {"path": "a.txt"}}}).to_string(),
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_file","arguments":"x"}}"#.to_owned(),
    ] {
        writeln!(stdin, "{line}").unwrap();
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let answers: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut ids: Vec<u64> = answers.iter().filter_map(|a| a["id"].as_u64()).collect();
    ids.sort();
    assert_eq!(ids, [1, 2, 3], "{answers:?}");
}
