//! A call under `review` over stdio, decided on the command line (`kyro approvals`): a
//! 2026-07-28 client that declared the tasks extension gets its task at once, waiting for
//! the approver, and the task completes when an approver approves; another client gets
//! `approval_pending`, and a denial reaches it with the approver's reason. A decision on the
//! command line names the account that took it (`cli:USER`), never a name given.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::Server;

fn meta(tasks: bool) -> Value {
    let mut capabilities = json!({});
    if tasks {
        capabilities["extensions"] = json!({"io.modelcontextprotocol/tasks": {}});
    }
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    })
}

fn script(server: &mut Server, id: u64, script: &str, tasks: bool) -> Value {
    let params = json!({"name": "run_command", "arguments": {"argv": [script], "shell": true}, "_meta": meta(tasks)});
    server.request(id, "tools/call", params)["result"].clone()
}

/// `kyro approvals ARGS --workspace WS`: whether it succeeded, and what it printed.
fn approvals(ws: &std::path::Path, args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kyro"))
        .arg("approvals")
        .args(args)
        .arg("--workspace")
        .arg(ws)
        .env_remove("KYRO_STATE")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// The approval id in a text that names it (`approval 0123456789abcdef`).
fn id_in(text: &str) -> String {
    let at = text
        .find("approve ")
        .map(|i| i + "approve ".len())
        .expect("an approval id");
    text[at..at + 16].to_owned()
}

#[test]
fn a_reviewed_call_waits_as_a_task_until_an_approver_decides_on_the_command_line() {
    let ws = tempfile::tempdir().unwrap();
    let beside = tempfile::tempdir().unwrap();
    let policy = beside.path().join("policy.toml");
    std::fs::write(&policy, "[approvals]\nexec = \"review\"\n").unwrap();
    let mut server = Server::spawn(ws.path(), &["--policy", policy.to_str().unwrap()]);
    let started = script(&mut server, 1, "echo hi > out", true);
    assert_eq!(started["resultType"], "task", "{started}");
    let task = started["taskId"].as_str().unwrap().to_owned();
    let message = started["statusMessage"].as_str().unwrap_or_default().to_owned();
    assert!(message.contains("waits for an approver's review"), "{started}");
    let id = id_in(&message);
    assert!(!ws.path().join("out").exists(), "ran before the decision");
    let (ok, listed) = approvals(ws.path(), &["list"]);
    assert!(ok && listed.contains(&id) && listed.contains("run_command"), "{listed}");
    let (ok, shown) = approvals(ws.path(), &["show", &id]);
    assert!(ok && shown.contains("echo hi > out"), "{shown}");
    let (ok, refused) = approvals(ws.path(), &["approve", &id, "--as", "bob"]);
    assert!(
        !ok && refused.contains("--as"),
        "an approver's name is not given: {refused}"
    );
    let got = server.request(2, "tasks/get", json!({"taskId": task, "_meta": meta(true)}));
    assert_eq!(got["result"]["status"], "working", "{got}");
    assert!(!ws.path().join("out").exists());
    let (ok, approved) = approvals(ws.path(), &["approve", &id, "--reason", "fine"]);
    assert!(ok, "{approved}");
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut n = 3;
    let done = loop {
        n += 1;
        let got = server.request(n, "tasks/get", json!({"taskId": task, "_meta": meta(true)}));
        if got["result"]["status"] != "working" || Instant::now() > deadline {
            break got["result"].clone();
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(std::fs::read_to_string(ws.path().join("out")).unwrap(), "hi\n");
    // A client without the extension: pending, then denied with the approver's reason.
    let pending = script(&mut server, 100, "echo no > never", false);
    assert_eq!(pending["isError"], true, "{pending}");
    let text = pending["content"][0]["text"].as_str().unwrap().to_owned();
    assert!(text.starts_with("approval_pending (run_command)"), "{text}");
    let second = id_in(&text);
    let (ok, denied) = approvals(ws.path(), &["deny", &second, "--reason", "not now"]);
    assert!(ok, "{denied}");
    let refused = script(&mut server, 101, "echo no > never", false);
    let text = refused["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("denied (run_command)") && text.contains("not now"),
        "{text}"
    );
    assert!(!ws.path().join("never").exists());
    drop(server);
    let receipts = super::receipts(ws.path());
    let reviewed: Vec<&Value> = receipts
        .iter()
        .filter(|r| r["decision"]["kind"] == "reviewed")
        .collect();
    assert_eq!(reviewed.len(), 1, "{receipts:#?}");
    let approver = reviewed[0]["decision"]["approver"].as_str().unwrap();
    assert!(approver.starts_with("cli:"), "{approver}");
    assert_eq!(reviewed[0]["task_id"], task.as_str());
}

/// A pre-2026 client (it initialized) is answered `approval_pending` for a reviewed call,
/// the call is in the queue, and nothing runs.
#[test]
fn a_pre_2026_client_gets_approval_pending_and_the_call_waits_in_the_queue() {
    let ws = tempfile::tempdir().unwrap();
    let beside = tempfile::tempdir().unwrap();
    let policy = beside.path().join("policy.toml");
    std::fs::write(&policy, "[approvals]\nexec = \"review\"\n").unwrap();
    let mut server = Server::start_with(ws.path(), &["--policy", policy.to_str().unwrap()]);
    let answer = server.request(
        7,
        "tools/call",
        json!({"name": "run_command", "arguments": {"argv": ["touch", "never"]}}),
    );
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(text.starts_with("approval_pending (run_command)"), "{answer}");
    let (ok, listed) = approvals(ws.path(), &["list"]);
    assert!(ok && listed.contains(&id_in(&text)), "{listed}");
    assert!(!ws.path().join("never").exists());
}
