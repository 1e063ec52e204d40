//! Replicas of `kyro mcp --http` on one PostgreSQL (`--state`), as a team runs them behind
//! a load balancer: an approval asked by one is answered on the other, once; a grant
//! given through one holds on the other until `kyro grants --state` revokes it; every
//! call of either has one receipt in one hash chain, which `kyro receipts verify --state`
//! checks, even with a replica killed under load. PostgreSQL is a real server.

use std::io::{Read, Write};
use std::process::Command;

use serde_json::{Value, json};

use super::{HttpServer, TOKEN, call_as, post_as, workspace};

use super::postgres::Postgres;

/// What replicas share besides the database: the key sealing approval states.
pub(super) const STATE_KEY: &str = "a-team-wide-state-key-of-more-than-32-bytes";

pub(super) fn replica(ws: &std::path::Path, url: &str, flags: &[&str], token: Option<&str>) -> HttpServer {
    let mut all = vec!["--state", url];
    all.extend_from_slice(flags);
    HttpServer::start_env(ws, "127.0.0.1:0", &all, token, &[("KYRO_STATE_KEY", STATE_KEY)])
}

/// The token file's two callers.
pub(super) const ALICE: &str = "alice-token-0123456789abcdef";
const BOB: &str = "bob-token-0123456789abcdef00";

/// Two replicas on `url` taking the tokens of Alice and Bob.
fn alice_and_bobs_replicas(ws: &std::path::Path, url: &str) -> (HttpServer, HttpServer) {
    let tokens = ws.join("tokens");
    std::fs::write(&tokens, format!("alice {ALICE}\nbob {BOB}\n")).unwrap();
    let flags = ["--token-file", tokens.to_str().unwrap()];
    (replica(ws, url, &flags, None), replica(ws, url, &flags, None))
}

/// `kyro ARGS --state URL`: exit status and stdout.
pub(super) fn kyro(args: &[&str], url: &str) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kyro"))
        .env_remove("KYRO_STATE")
        .args(args)
        .args(["--state", url])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.is_empty() || !out.status.success(), "{stderr}");
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The receipts in the store, in chain order: (caller, decision) of each.
fn decisions(url: &str) -> Vec<(String, String)> {
    let (ok, listed) = kyro(&["receipts", "--json", "--limit", "1000"], url);
    assert!(ok, "{listed}");
    listed
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|r| {
            (
                r["caller"].as_str().unwrap().to_owned(),
                r["decision"]["kind"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn replicas_on_postgres_share_approvals_grants_and_one_receipt_chain() {
    let Some(pg) = Postgres::start() else { return };
    let ws = workspace();
    let (alice, bob) = (ALICE, BOB);
    let (one, two) = alice_and_bobs_replicas(ws.path(), &pg.url);
    let touch = |name: &str| json!(["touch", name]);
    let yes = |asked: &Value, remember: &str| {
        assert_eq!(asked["resultType"], "input_required", "{asked}");
        json!({"inputResponses": {"approval": {"action": "accept", "content": {"approve": true, "remember": remember}}},
            "requestState": asked["requestState"]})
    };
    // Asked by one replica, answered on the other, and only once.
    let once = yes(&call_as(&one.url, alice, touch("a"), Value::Null), "once");
    let ran = call_as(&two.url, alice, touch("a"), once.clone());
    assert_eq!(ran["isError"], false, "{ran}");
    assert!(ws.path().join("a").exists());
    std::fs::remove_file(ws.path().join("a")).unwrap();
    let replayed = call_as(&one.url, alice, touch("a"), once);
    assert_eq!(
        replayed["isError"], true,
        "a state is redeemed once across replicas: {replayed}"
    );
    assert!(!ws.path().join("a").exists());
    // A grant given through the second replica holds on the first, for Alice alone.
    let hour = yes(&call_as(&one.url, alice, touch("b"), Value::Null), "hour");
    assert_eq!(call_as(&two.url, alice, touch("b"), hour)["isError"], false);
    let granted = call_as(&one.url, alice, touch("c"), Value::Null);
    assert_eq!(granted["isError"], false, "{granted}");
    let not_bob = call_as(&two.url, bob, touch("e"), Value::Null);
    assert_eq!(not_bob["resultType"], "input_required", "{not_bob}");
    // The command line sees and revokes it in the store; both replicas ask again.
    let (ok, listed) = kyro(&["grants", "list", "--json"], &pg.url);
    assert!(ok, "{listed}");
    let grants: Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(grants.as_array().unwrap().len(), 1, "{grants}");
    assert_eq!(grants[0]["caller"], "alice");
    let id = grants[0]["id"].as_str().unwrap().to_owned();
    assert!(kyro(&["grants", "revoke", &id], &pg.url).0);
    let asked_again = call_as(&two.url, alice, touch("d"), Value::Null);
    assert_eq!(asked_again["resultType"], "input_required", "{asked_again}");
    assert!(!ws.path().join("d").exists());
    // One chain of every receipt of both, in the store, none in the workspace.
    // (A retry is asked about first, then approved or denied by its answer.)
    // One receipt a request: a retry's answer is redeemed inside the one pass.
    let expected = [
        ("alice", "approval_required"),
        ("alice", "approved"),
        ("alice", "denied"),
        ("alice", "approval_required"),
        ("alice", "approved"),
        ("alice", "granted"),
        ("bob", "approval_required"),
        ("alice", "approval_required"),
    ];
    assert_eq!(decisions(&pg.url), expected.map(|(c, d)| (c.to_owned(), d.to_owned())));
    assert!(!ws.path().join(".kyro/receipts.jsonl").exists());
    // A caller reads its own receipts from either replica as resources; not another's.
    let (_, listed) = kyro(&["receipts", "--json", "--caller", "bob"], &pg.url);
    let bobs: Value = serde_json::from_str(listed.trim()).unwrap();
    let uri = format!("kyro://receipts/{}", bobs["call_id"].as_str().unwrap());
    let read = post_as(&one.url, bob, "resources/read", read_params(&uri));
    let text = read["contents"][0]["text"].as_str().expect("bob reads his receipt");
    assert!(text.contains("\"caller\": \"bob\""), "{text}");
    let refused = post_as(&two.url, alice, "resources/read", read_params(&uri));
    assert!(refused.is_null(), "alice reads bob's receipt: {refused}");
    let (intact, report) = kyro(&["receipts", "verify"], &pg.url);
    assert!(intact, "{report}");
    assert!(
        report.contains("8 receipts") && report.contains("the chain is intact"),
        "{report}"
    );
    let head = report
        .split("head ")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned();
    // An altered receipt and receipts cut from the end are both found.
    pg.sql("UPDATE kyro_receipts SET line = replace(line, '\"bob\"', '\"eve\"') WHERE caller = 'bob'");
    let (intact, report) = kyro(&["receipts", "verify", "--head", &head], &pg.url);
    assert!(!intact && report.contains("broken at receipt 8"), "{report}");
    pg.sql("DELETE FROM kyro_receipts WHERE seq >= (SELECT max(seq) - 1 FROM kyro_receipts)");
    let (intact, report) = kyro(&["receipts", "verify", "--head", &head], &pg.url);
    assert!(!intact && report.contains("removed from its end"), "{report}");
    // Without the head from before: the store's own head tells.
    let (intact, report) = kyro(&["receipts", "verify"], &pg.url);
    assert!(!intact && report.contains("but the store's head is"), "{report}");
}

/// A 2026-07-28 `resources/read` of `uri`.
fn read_params(uri: &str) -> Value {
    json!({"uri": uri, "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}})
}

/// A stateless `read_file` call: the result, or `None` when the replica is not there.
fn read_call(url: &str, path: &str) -> Option<Value> {
    tool_call(url, "read_file", json!({"path": path}))
}

/// A stateless (2026-07-28) call of `name` with the test token: the result, or `None` when
/// the replica is not there.
pub(super) fn tool_call(url: &str, name: &str, arguments: Value) -> Option<Value> {
    let address = url.trim_start_matches("http://").trim_end_matches("/mcp");
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": name, "arguments": arguments,
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}}})
    .to_string();
    let mut stream = std::net::TcpStream::connect(address).ok()?;
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .unwrap();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: {name}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    let rest = answer.split_once("\r\n\r\n")?.1;
    let (start, end) = (rest.find('{')?, rest.rfind('}')?);
    Some(serde_json::from_str::<Value>(&rest[start..=end]).ok()?["result"].clone())
}

#[test]
fn replicas_under_load_write_one_receipt_a_call_in_one_chain_even_when_one_is_killed() {
    let Some(pg) = Postgres::start() else { return };
    let ws = workspace();
    let one = replica(ws.path(), &pg.url, &[], Some(TOKEN));
    let two = replica(ws.path(), &pg.url, &[], Some(TOKEN));
    const CLIENTS: usize = 6;
    const CALLS: usize = 40;
    let urls = [one.url.clone(), two.url.clone()];
    let one = std::sync::Mutex::new(Some(one));
    let answered = std::sync::atomic::AtomicUsize::new(0);
    let lost = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for client in 0..CLIENTS {
            let (urls, answered, lost, one) = (&urls, &answered, &lost, &one);
            scope.spawn(move || {
                for call in 0..CALLS {
                    // Halfway through, the first client kills the first replica (SIGKILL).
                    if client == 0 && call == CALLS / 2 {
                        drop(one.lock().unwrap().take());
                    }
                    match read_call(&urls[(client + call) % 2], "a.txt") {
                        Some(result) => {
                            assert_eq!(result["isError"], false, "{result}");
                            assert_eq!(result["structuredContent"]["content"], "one|two\r\n");
                            answered.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                        None => {
                            lost.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                    }
                }
            });
        }
    });
    let (answered, lost) = (answered.into_inner(), lost.into_inner());
    assert_eq!(answered + lost, CLIENTS * CALLS);
    assert!(
        lost > 0 && answered > CLIENTS * CALLS / 2,
        "answered {answered}, lost {lost}"
    );
    // Every answered call has its receipt (written before the answer); a call killed with
    // its replica may have one too, at most one a client.
    let receipts: usize = pg.sql("SELECT count(*) FROM kyro_receipts").parse().unwrap();
    assert!(
        (answered..=answered + CLIENTS).contains(&receipts),
        "answered {answered}, receipts {receipts}"
    );
    let distinct: usize = pg
        .sql("SELECT count(DISTINCT call_id) FROM kyro_receipts")
        .parse()
        .unwrap();
    assert_eq!(distinct, receipts, "one receipt a call");
    let (intact, report) = kyro(&["receipts", "verify"], &pg.url);
    assert!(intact, "{report}");
    // The survivor still serves and receipts.
    assert!(read_call(&urls[1], "a.txt").is_some());
    let after: usize = pg.sql("SELECT count(*) FROM kyro_receipts").parse().unwrap();
    assert_eq!(after, receipts + 1);
}

/// A POST in pre-2026 session `id` with `token`: the head (lowercased) and the rest.
fn in_session(url: &str, token: &str, id: &str, body: &[u8]) -> (String, String) {
    let bearer = format!("Bearer {token}");
    let headers = [
        ("Authorization", bearer.as_str()),
        ("Mcp-Session-Id", id),
        ("Mcp-Protocol-Version", "2025-06-18"),
    ];
    let mut answered = super::Raw::send(url, &headers, body);
    (answered.head(), answered.rest())
}

#[test]
fn a_pre_2026_session_opened_on_one_replica_is_taken_over_by_another_for_its_caller_only() {
    let Some(pg) = Postgres::start() else { return };
    let ws = workspace();
    let (alice, bob) = (ALICE, BOB);
    let (one, two) = alice_and_bobs_replicas(ws.path(), &pg.url);
    let id = super::open_session_as(&one.url, alice);
    let call =
        br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"a.txt"}}}"#;
    // Another caller naming it is told there is no such session, on either replica.
    for url in [&two.url, &one.url] {
        let (head, _) = in_session(url, bob, &id, call);
        assert!(head.starts_with("http/1.1 404"), "{head}");
    }
    // Its own caller is served by the replica that did not open it, and by the one that did.
    for url in [&two.url, &one.url, &two.url] {
        let (head, rest) = in_session(url, alice, &id, call);
        assert!(head.starts_with("http/1.1 200"), "{head}");
        assert!(rest.contains("one|two"), "{rest}");
    }
    let (head, _) = in_session(&two.url, bob, &id, call);
    assert!(head.starts_with("http/1.1 404"), "{head}");
    let (head, _) = in_session(&two.url, alice, "no-such-session", call);
    assert!(head.starts_with("http/1.1 404"), "{head}");
    // Deleted by its client, it is gone from the store.
    let address = two
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let mut stream = std::net::TcpStream::connect(&address).unwrap();
    use std::io::Write;
    write!(
        stream,
        "DELETE /mcp HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {alice}\r\nMcp-Session-Id: {id}\r\nMcp-Protocol-Version: 2025-06-18\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 204"), "{answer}");
    assert_eq!(
        pg.sql(&format!("SELECT count(*) FROM kyro_sessions WHERE id = '{id}'")),
        "0"
    );
}

/// A 2026-07-28 request's `_meta` from a client that declared the tasks extension.
fn tasks_meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}})
}

/// Polls `tasks/get` on `url` until the task is no longer working (ten seconds at most).
fn task_settled(url: &str, token: &str, task: &str) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let got = post_as(url, token, "tasks/get", json!({"taskId": task, "_meta": tasks_meta()}));
        if got["status"] != "working" || std::time::Instant::now() > deadline {
            return got;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

#[test]
fn an_mcp_task_run_by_one_replica_is_polled_and_cancelled_through_another() {
    let Some(pg) = Postgres::start() else { return };
    let ws = workspace();
    let (alice, bob) = (ALICE, BOB);
    let (one, two) = alice_and_bobs_replicas(ws.path(), &pg.url);
    assert!(
        kyro(
            &["grants", "add", "run_command", "--caller", "alice", "--for", "1h"],
            &pg.url
        )
        .0
    );
    let start = |script: &str| -> String {
        let params =
            json!({"name": "run_command", "arguments": {"argv": [script], "shell": true}, "_meta": tasks_meta()});
        let started = post_as(&one.url, alice, "tools/call", params);
        assert_eq!(started["resultType"], "task", "{started}");
        started["taskId"].as_str().unwrap().to_owned()
    };
    // Run on the first, its result read through the second; another caller is told nothing.
    let task = start("sleep 0.3; echo done");
    let done = task_settled(&two.url, alice, &task);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["structuredContent"]["stdout"], "done\n", "{done}");
    let theirs = post_as(
        &two.url,
        bob,
        "tasks/get",
        json!({"taskId": task, "_meta": tasks_meta()}),
    );
    assert!(theirs.is_null(), "bob reads alice's task: {theirs}");
    // Cancelled through the second: the first stops the work on its next beat.
    let long = start("exec sleep 30.5");
    let refused = post_as(
        &two.url,
        bob,
        "tasks/cancel",
        json!({"taskId": long, "_meta": tasks_meta()}),
    );
    assert!(refused.is_null(), "bob cancels alice's task: {refused}");
    post_as(
        &two.url,
        alice,
        "tasks/cancel",
        json!({"taskId": long, "_meta": tasks_meta()}),
    );
    let cancelled = task_settled(&two.url, alice, &long);
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    // A replica that dies with a task working: once it has been silent for 30 seconds (its
    // beats set back here), the task is reported failed instead of working forever.
    let orphan = start("exec sleep 30.5");
    drop(one);
    pg.sql("UPDATE kyro_mcp_tasks SET heartbeat_at = heartbeat_at - 31000 WHERE ended_at IS NULL");
    let failed = post_as(
        &two.url,
        alice,
        "tasks/get",
        json!({"taskId": orphan, "_meta": tasks_meta()}),
    );
    assert_eq!(failed["status"], "failed", "{failed}");
    assert!(
        failed["error"]["message"].as_str().unwrap().contains("stopped"),
        "{failed}"
    );
}
