//! The stdio edge's checks, bound and id bookkeeping, against a transport driven by hand.

use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};

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
    while let Ok(Ok(Some(line))) = tokio::time::timeout(std::time::Duration::from_millis(300), lines.next_line()).await
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
        // Its id behind what is kept of it: unread.
        let huge_id_last = format!(r#"{{"jsonrpc":"2.0","method":"x","params":{{"p":"{}"}},"id":2}}"#, "a".repeat(MAX_FRAME + 10));
        let cases: Vec<(String, i64, Value)> = vec![
            (r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":"{\"path\":\"a\"}"}}"#.into(), -32602, json!(1)),
            (r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_file","arguments":["a"]}}"#.into(), -32602, json!(2)),
            (r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_file","name":"write_file","arguments":{}}}"#.into(), -32602, json!(3)),
            (r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"a","arguments":{"path":"x","path":"y"}}}"#.into(), -32602, json!(4)),
            (deep, -32700, Value::Null),
            (r#"{"jsonrpc":"2.0","id":5,"method":"ping","params":{"s":"\ud800"}}"#.into(), -32602, json!(5)),
            (huge, -32600, json!(1)),
            (huge_id_last, -32600, Value::Null),
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
            prop::collection::btree_map("\\PC{0,5}", inner, 0..3).prop_map(|m| Value::Object(m.into_iter().collect())),
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

/// The next line the client gets, as JSON (within 5 s).
async fn answer(lines: &mut Lines<BufReader<DuplexStream>>) -> Value {
    let line = tokio::time::timeout(std::time::Duration::from_secs(5), lines.next_line())
        .await
        .expect("an answer within 5 s")
        .unwrap()
        .expect("an answer");
    serde_json::from_str(&line).unwrap()
}

/// A request line: `id` as JSON text, `rest` the method and params.
fn request(id: &str, rest: &str) -> String {
    format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},{rest}}}\n")
}

const PING: &str = r#""method":"ping""#;
const LIST: &str = r#""method":"tools/list","params":{}"#;

/// rmcp would run both requests under one id and lose one answer: the second is refused here,
/// at once, and never reaches rmcp; the first runs and is answered, and then the id is free.
#[test]
fn a_request_under_the_id_of_one_in_flight_is_refused_at_once_and_never_runs() {
    rt().block_on(async {
        let (mut client, server_in) = tokio::io::duplex(1024 * 1024);
        let (server_out, client_out) = tokio::io::duplex(1024 * 1024);
        let (mut rmcp, _writer) = guarded(server_in, server_out, 8, super::Hooks::default());
        let mut answers = BufReader::new(client_out).lines();
        // `7` and `"7"` are two ids: only the second request under 7 is refused.
        let burst = [request("7", PING), request("7", LIST), request("\"7\"", LIST)].concat();
        client.write_all(burst.as_bytes()).await.unwrap();
        let first = next_message(&mut rmcp).await.unwrap();
        assert_eq!((&first["id"], &first["method"]), (&json!(7), &json!("ping")));
        let other = next_message(&mut rmcp).await.unwrap();
        assert_eq!((&other["id"], &other["method"]), (&json!("7"), &json!("tools/list")));
        assert_eq!(
            next_message(&mut rmcp).await,
            None,
            "the second request under 7 never reaches rmcp"
        );
        let refused = answer(&mut answers).await;
        assert_eq!((&refused["id"], &refused["error"]["code"]), (&json!(7), &json!(-32600)));
        let message = refused["error"]["message"].as_str().unwrap();
        assert!(message.contains("id 7 is already in flight"), "{message}");
        // The first one is answered, and its id is free again.
        rmcp_sends(&mut rmcp, json!({"jsonrpc": "2.0", "id": 7, "result": {}})).await;
        let answered = answer(&mut answers).await;
        assert_eq!(answered["id"], 7, "{answered}");
        assert!(answered.get("result").is_some(), "{answered}");
        client.write_all(request("7", LIST).as_bytes()).await.unwrap();
        let again = next_message(&mut rmcp).await.unwrap();
        assert_eq!((&again["id"], &again["method"]), (&json!(7), &json!("tools/list")));
    });
}

/// A request waiting for room holds its id; so does one cancelled while rmcp runs it (rmcp
/// drops its answer, and its handler may still be finishing), though its room is free.
#[test]
fn a_held_or_cancelled_request_keeps_its_id_taken() {
    rt().block_on(async {
        let (mut client, server_in) = tokio::io::duplex(1024 * 1024);
        let (server_out, client_out) = tokio::io::duplex(1024 * 1024);
        let (mut rmcp, _writer) = guarded(server_in, server_out, 1, super::Hooks::default());
        let mut answers = BufReader::new(client_out).lines();
        client
            .write_all([request("1", PING), request("2", PING)].concat().as_bytes())
            .await
            .unwrap();
        assert_eq!(next_message(&mut rmcp).await.unwrap()["id"], 1);
        assert_eq!(next_message(&mut rmcp).await, None, "2 waits for room");
        client.write_all(request("2", LIST).as_bytes()).await.unwrap();
        let refused = answer(&mut answers).await;
        assert_eq!((&refused["id"], &refused["error"]["code"]), (&json!(2), &json!(-32600)));

        let cancel = r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#;
        client.write_all(format!("{cancel}\n").as_bytes()).await.unwrap();
        assert_eq!(
            next_message(&mut rmcp).await.unwrap()["method"],
            "notifications/cancelled"
        );
        assert_eq!(next_message(&mut rmcp).await.unwrap()["id"], 2, "1's room went to 2");
        client.write_all(request("1", LIST).as_bytes()).await.unwrap();
        let refused = answer(&mut answers).await;
        assert_eq!((&refused["id"], &refused["error"]["code"]), (&json!(1), &json!(-32600)));
        assert_eq!(next_message(&mut rmcp).await, None);
    });
}
