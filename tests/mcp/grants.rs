//! Approvals across processes and grants, over stdio with a 2026-07-28 client: the nonce
//! of a redeemed state is spent in the workspace's state database, so a replay to another
//! `kyro mcp` sharing it is refused; "for an hour" leaves a grant that lets the caller's
//! next calls of the tool through without asking, until `kyro grants revoke`.

use std::process::Command;

use serde_json::{Value, json};

use super::Server;

const KEY: &str = "kyro-test-key-of-thirty-two-bytes-or-more";

fn current(workspace: &std::path::Path) -> Server {
    let mut command = Command::new(env!("CARGO_BIN_EXE_kyro"));
    command.env("KYRO_STATE_KEY", KEY);
    Server::spawn_as(command, workspace, &[])
}

fn call(server: &mut Server, id: u64, argv: Value, retry: Value) -> Value {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "current", "version": "1"}
    });
    let mut params = json!({"name": "run_command", "arguments": {"argv": argv}, "_meta": meta});
    if let Value::Object(retry) = retry {
        params.as_object_mut().unwrap().extend(retry);
    }
    server.request(id, "tools/call", params)["result"].clone()
}

fn kyro_grants(workspace: &std::path::Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_kyro"))
        .arg("grants")
        .args(args)
        .arg("--workspace")
        .arg(workspace)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// The decisions of the receipts, in order (`granted`, `approved`, `denied`...).
fn decisions(workspace: &std::path::Path) -> Vec<(String, String)> {
    super::receipts(workspace)
        .iter()
        .map(|r| {
            (
                r["decision"]["kind"].as_str().unwrap().to_owned(),
                r["caller"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn a_replay_to_another_process_is_refused_and_a_grant_lets_the_callers_next_calls_through_until_revoked() {
    let ws = tempfile::tempdir().unwrap();
    let (mut one, mut two) = (current(ws.path()), current(ws.path()));
    let touch = |name: &str| json!(["touch", name]);
    let asked = call(&mut one, 1, touch("a"), Value::Null);
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let remember = &asked["inputRequests"]["approval"]["params"]["requestedSchema"]["properties"]["remember"];
    let choices: Vec<&str> = remember["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["const"].as_str().unwrap())
        .collect();
    assert_eq!(choices, ["once", "hour", "day"], "{asked}");
    let answer = |asked: &Value, remember: &str| {
        json!({
            "inputResponses": {"approval": {"action": "accept", "content": {"approve": true, "remember": remember}}},
            "requestState": asked["requestState"],
        })
    };
    // Redeemed by the other process (same key, same store): it runs, once.
    let once = answer(&asked, "once");
    let ran = call(&mut two, 2, touch("a"), once.clone());
    assert_eq!(ran["isError"], false, "{ran}");
    assert!(ws.path().join("a").exists());
    std::fs::remove_file(ws.path().join("a")).unwrap();
    // The same state to the first process: spent.
    let replayed = call(&mut one, 3, touch("a"), once);
    assert!(
        replayed["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("already used"),
        "{replayed}"
    );
    assert!(!ws.path().join("a").exists(), "the replay ran nothing");
    // "For an hour": the call runs, and the next call of the tool runs without a
    // question, in either process.
    let asked = call(&mut one, 4, touch("b"), Value::Null);
    let ran = call(&mut one, 5, touch("b"), answer(&asked, "hour"));
    assert_eq!(ran["isError"], false, "{ran}");
    let granted = call(&mut two, 6, touch("c"), Value::Null);
    assert_eq!(granted["isError"], false, "{granted}");
    assert!(ws.path().join("c").exists());
    let listed = kyro_grants(ws.path(), &["list"]);
    assert!(listed.contains("local  run_command"), "{listed}");
    let id = listed.split_whitespace().next().unwrap().to_owned();
    assert!(kyro_grants(ws.path(), &["revoke", &id]).contains("revoked"));
    assert!(kyro_grants(ws.path(), &[]).contains("no grants in force"));
    let asked_again = call(&mut two, 7, touch("d"), Value::Null);
    assert_eq!(asked_again["resultType"], "input_required", "revoked: {asked_again}");
    assert!(!ws.path().join("d").exists());
    // A grant from the command line, for calls beginning `echo`: those run, others ask.
    kyro_grants(
        ws.path(),
        &[
            "add",
            "run_command",
            "--for",
            "5m",
            "--arguments",
            r#"{"argv": ["echo"]}"#,
        ],
    );
    let echoed = call(&mut one, 8, json!(["echo", "hi"]), Value::Null);
    assert_eq!(echoed["isError"], false, "{echoed}");
    let other = call(&mut one, 9, touch("e"), Value::Null);
    assert_eq!(other["resultType"], "input_required", "{other}");
    // Each request passes the boundary once: a retry's answer is redeemed inside it, so
    // an approved retry leaves one receipt (`approved`), a replayed one one (`denied`).
    assert_eq!(
        decisions(ws.path()),
        [
            ("approval_required", "local"),
            ("approved", "local"),
            ("denied", "local"),
            ("approval_required", "local"),
            ("approved", "local"),
            ("granted", "local"),
            ("approval_required", "local"),
            ("granted", "local"),
            ("approval_required", "local"),
        ]
        .map(|(d, c)| (d.to_owned(), c.to_owned()))
    );
}

#[test]
fn a_grant_of_the_tool_does_not_pass_a_rule_that_asks_about_one_command() {
    let ws = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.toml");
    std::fs::write(
        &policy,
        "[[tools.shell.rules]]\nargv_prefix = [\"rm\"]\ndecision = \"ask\"\n",
    )
    .unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_kyro"));
    command.env("KYRO_STATE_KEY", KEY);
    let mut server = Server::spawn_as(command, ws.path(), &["--policy", policy.to_str().unwrap()]);
    kyro_grants(ws.path(), &["add", "run_command", "--for", "5m"]);
    let touched = call(&mut server, 1, json!(["touch", "a"]), Value::Null);
    assert_eq!(touched["isError"], false, "the grant passes other commands: {touched}");
    // `rm` is asked about, with no grant on offer, and runs only on the person's answer.
    let asked = call(&mut server, 2, json!(["rm", "a"]), Value::Null);
    assert_eq!(
        asked["resultType"], "input_required",
        "a grant passed the rule: {asked}"
    );
    assert!(ws.path().join("a").exists());
    let properties = &asked["inputRequests"]["approval"]["params"]["requestedSchema"]["properties"];
    assert!(properties.get("remember").is_none(), "{asked}");
    let yes = json!({
        "inputResponses": {"approval": {"action": "accept", "content": {"approve": true, "remember": "day"}}},
        "requestState": asked["requestState"],
    });
    let ran = call(&mut server, 3, json!(["rm", "a"]), yes);
    assert_eq!(ran["isError"], false, "{ran}");
    assert!(!ws.path().join("a").exists());
    // The answer left no grant behind: the next `rm` is asked about again.
    std::fs::write(ws.path().join("b"), "").unwrap();
    let again = call(&mut server, 4, json!(["rm", "b"]), Value::Null);
    assert_eq!(again["resultType"], "input_required", "{again}");
    assert_eq!(kyro_grants(ws.path(), &["list"]).lines().count(), 1);
    assert_eq!(
        decisions(ws.path()),
        [
            ("granted", "local"),
            ("approval_required", "local"),
            ("approved", "local"),
            ("approval_required", "local")
        ]
        .map(|(d, c)| (d.to_owned(), c.to_owned()))
    );
}
