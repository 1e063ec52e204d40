//! A call under `review` on two replicas sharing PostgreSQL (issue 47): asked on one,
//! approved through the other's inbox, run once wherever it is called again (two retries
//! racing on both replicas: one runs, the other is refused); a task waiting on one
//! completes when the approver decides on the other. PostgreSQL is a real server.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::postgres::Postgres;
use super::replicas::{ALICE, kyro, replica};
use super::{HttpServer, post_as, workspace};

const BOB: &str = "bob-token-0123456789abcdef00";

fn touch(url: &str, name: &str, tasks: bool) -> Value {
    let mut capabilities = json!({});
    if tasks {
        capabilities["extensions"] = json!({"io.modelcontextprotocol/tasks": {}});
    }
    post_as(
        url,
        ALICE,
        "tools/call",
        json!({"name": "run_command", "arguments": {"argv": ["touch", name]},
               "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                         "io.modelcontextprotocol/clientCapabilities": capabilities}}),
    )
}

fn pending_id(result: &Value) -> String {
    let error = &result["_meta"]["kyro/error"];
    assert!(error["approval_id"].is_string(), "not pending: {result}");
    error["approval_id"].as_str().unwrap().to_owned()
}

/// Bob approves `id` through the inbox of the replica at `url`.
fn approve(url: &str, id: &str) {
    let status = ureq_like_post(url, &format!("/approvals/{id}/approve"), BOB);
    assert_eq!(status, 200, "approving {id}");
}

/// A POST with a bearer token and no body: the status.
fn ureq_like_post(url: &str, path: &str, token: &str) -> u16 {
    use std::io::{Read, Write};
    let address = url.trim_start_matches("http://").trim_end_matches("/mcp");
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {token}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0)
}

fn replicas(ws: &std::path::Path, beside: &std::path::Path, url: &str) -> (HttpServer, HttpServer) {
    let tokens = beside.join("tokens");
    std::fs::write(&tokens, format!("alice {ALICE}\nbob {BOB}\n")).unwrap();
    let policy = beside.join("policy.toml");
    std::fs::write(&policy, "[approvals]\nexec = \"review\"\n").unwrap();
    let flags = [
        "--token-file",
        tokens.to_str().unwrap(),
        "--policy",
        policy.to_str().unwrap(),
        "--approvers",
        "bob",
    ];
    (replica(ws, url, &flags, None), replica(ws, url, &flags, None))
}

#[test]
fn replicas_on_postgres_share_one_review_queue_and_run_an_approved_call_once() {
    let Some(pg) = Postgres::start() else { return };
    let ws = workspace();
    let beside = tempfile::tempdir().unwrap();
    let (one, two) = replicas(ws.path(), beside.path(), &pg.url);
    let a = ws.path().join("a");
    // Asked on one, approved on the other, run where it is called again; once.
    let id = pending_id(&touch(&one.url, "a", false));
    assert_eq!(pending_id(&touch(&two.url, "a", false)), id, "one queue");
    approve(&two.url, &id);
    assert!(!a.exists(), "the decision ran nothing");
    let ran = touch(&two.url, "a", false);
    assert_eq!(ran["isError"], false, "{ran}");
    assert!(a.exists());
    std::fs::remove_file(&a).unwrap();
    assert_ne!(pending_id(&touch(&one.url, "a", false)), id, "ran twice");
    assert!(!a.exists());
    // Two retries racing on both replicas: exactly one runs.
    let b = pending_id(&touch(&one.url, "b", false));
    approve(&one.url, &b);
    let (u1, u2) = (one.url.clone(), two.url.clone());
    let racing = [
        std::thread::spawn(move || touch(&u1, "b", false)),
        std::thread::spawn(move || touch(&u2, "b", false)),
    ];
    let results: Vec<Value> = racing.into_iter().map(|t| t.join().unwrap()).collect();
    let ran = results.iter().filter(|r| r["isError"] == false).count();
    assert_eq!(ran, 1, "{results:#?}");
    // A task waiting on one completes when Bob approves on the other.
    let started = touch(&one.url, "c", true);
    assert_eq!(started["resultType"], "task", "{started}");
    let task = started["taskId"].as_str().unwrap().to_owned();
    let (ok, listed) = kyro(&["approvals", "list", "--json"], &pg.url);
    assert!(ok, "{listed}");
    let listed: Value = serde_json::from_str(&listed).unwrap();
    let c = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["arguments"]["argv"] == json!(["touch", "c"]))
        .expect("the task's call is pending")["id"]
        .as_str()
        .unwrap()
        .to_owned();
    approve(&two.url, &c);
    let deadline = Instant::now() + Duration::from_secs(15);
    let done = loop {
        let got = post_as(
            &one.url,
            ALICE,
            "tasks/get",
            json!({"taskId": task, "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}}),
        );
        if got["status"] != "working" || Instant::now() > deadline {
            break got;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(done["status"], "completed", "{done}");
    assert!(ws.path().join("c").exists());
    // The receipts in the shared chain name Bob on every reviewed call: three ran.
    let (ok, receipts) = kyro(&["receipts", "--json", "--limit", "1000"], &pg.url);
    assert!(ok, "{receipts}");
    let reviewed: Vec<Value> = receipts
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["decision"]["kind"] == "reviewed")
        .collect();
    assert_eq!(reviewed.len(), 3, "{reviewed:#?}");
    assert!(reviewed.iter().all(|r| r["decision"]["approver"] == "bob"));
}
