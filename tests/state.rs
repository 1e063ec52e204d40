//! The state database across processes: notes survive a restart, two processes writing at
//! once lose nothing, and sub-agent receipts link to their parent call.

use std::process::{Command, Output};

use serde_json::{Value, json};

fn kyro(workspace: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kyro"))
        .args(args)
        .current_dir(workspace)
        .output()
        .unwrap()
}

fn outcome(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)))
}

#[test]
fn a_note_survives_a_restart() {
    let ws = tempfile::tempdir().unwrap();
    let stored = kyro(
        ws.path(),
        &["call", "memory_store", r#"{"key": "k", "value": "v | é"}"#],
    );
    assert_eq!(outcome(&stored)["outcome"], "ok");
    let got = kyro(ws.path(), &["call", "memory_get", "key=k"]);
    assert_eq!(outcome(&got)["result"]["value"], "v | é");
    assert!(ws.path().join(".kyro/state.db").exists());
}

#[test]
fn two_processes_writing_at_once_lose_nothing() {
    let ws = tempfile::tempdir().unwrap();
    let batch = |writer: usize, round: usize| {
        let calls: Vec<Value> = (0..25)
            .map(|i| json!({"tool": "memory_store", "arguments": {"key": format!("w{writer}-r{round}-{i}"), "value": "x"}}))
            .collect();
        json!({"calls": calls, "mode": "parallel"}).to_string()
    };
    for round in 0..2 {
        let children: Vec<_> = (0..2)
            .map(|writer| {
                Command::new(env!("CARGO_BIN_EXE_kyro"))
                    .args(["call", "run_batch", &batch(writer, round)])
                    .current_dir(ws.path())
                    .stdout(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for child in children {
            let out = child.wait_with_output().unwrap();
            let result = outcome(&out);
            let oks = result["result"]["results"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|r| r["outcome"] == "ok")
                .count();
            assert_eq!(oks, 25, "{result}");
        }
    }
    for writer in 0..2 {
        for round in 0..2 {
            for i in [0, 12, 24] {
                let key = format!("key=w{writer}-r{round}-{i}");
                assert_eq!(
                    outcome(&kyro(ws.path(), &["call", "memory_get", &key]))["outcome"],
                    "ok",
                    "{key}"
                );
            }
        }
    }
    let found = kyro(ws.path(), &["call", "memory_search", r#"{"query": "x", "limit": 100}"#]);
    assert_eq!(outcome(&found)["result"]["results"].as_array().unwrap().len(), 100);
}

#[test]
fn sub_agent_receipts_link_to_the_parent_call() {
    let ws = tempfile::tempdir().unwrap();
    let args = json!({"description": "compute", "capabilities": ["fs.read"], "calls": [
        {"tool": "calculate", "arguments": {"expression": "1 + 1"}},
        {"tool": "memory_store", "arguments": {"key": "k", "value": "v"}}
    ]});
    let out = outcome(&kyro(ws.path(), &["call", "spawn_subagent", &args.to_string()]));
    assert_eq!(out["outcome"], "ok");
    let results = out["result"]["results"].as_array().unwrap();
    assert_eq!(results[0]["outcome"], "ok");
    assert_eq!(
        results[1]["outcome"], "denied",
        "the child dropped the state capability"
    );
    let parent = out["receipt"]["call_id"].as_str().unwrap();
    let log = std::fs::read_to_string(ws.path().join(".kyro/receipts.jsonl")).unwrap();
    let children: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["parent_call_id"] == parent)
        .collect();
    assert_eq!(children.len(), 2);
    assert_eq!(children[0]["tool"], "calculate");
}
