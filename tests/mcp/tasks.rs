//! Long calls as tasks, over stdio with a 2026-07-28 client that declared the tasks
//! extension: approval first, then a task id at once; `tasks/get` polled to the result,
//! `tasks/cancel` stopping the work (its process gone), and the receipt naming the task.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::Server;

fn meta(tasks: bool) -> Value {
    let mut capabilities = json!({"elicitation": {"form": {}}});
    if tasks {
        capabilities["extensions"] = json!({"io.modelcontextprotocol/tasks": {}});
    }
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "tasks", "version": "1"}
    })
}

fn script(server: &mut Server, id: u64, script: &str, tasks: bool, retry: Value) -> Value {
    let mut params =
        json!({"name": "run_command", "arguments": {"argv": [script], "shell": true}, "_meta": meta(tasks)});
    if let Value::Object(retry) = retry {
        params.as_object_mut().unwrap().extend(retry);
    }
    server.request(id, "tools/call", params)
}

/// Polls `tasks/get` until the task is no longer working (ten seconds at most).
fn settled(server: &mut Server, id: &mut u64, task: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        *id += 1;
        let got = server.request(*id, "tasks/get", json!({"taskId": task, "_meta": meta(true)}));
        let status = got["result"]["status"]
            .as_str()
            .unwrap_or_else(|| panic!("{got}"))
            .to_owned();
        if status != "working" || Instant::now() > deadline {
            return got["result"].clone();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Processes running `sleep 30.25` (the cancelled task's), zombies aside.
fn sleeping() -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            std::fs::read(e.path().join("cmdline")).is_ok_and(|c| c == b"sleep\x0030.25\x00")
                && std::fs::read_to_string(e.path().join("stat")).is_ok_and(|s| !s.contains(") Z "))
        })
        .count()
}

#[test]
fn a_long_call_is_approved_then_runs_as_a_task_polled_to_its_result_or_cancelled() {
    let ws = tempfile::tempdir().unwrap();
    let mut server = Server::spawn(ws.path(), &[]);
    // Approval comes first: the question, nothing ran, no task.
    let asked = script(&mut server, 1, "sleep 0.3; echo done", true, Value::Null);
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    let yes = json!({
        "inputResponses": {"approval": {"action": "accept", "content": {"approve": true, "remember": "hour"}}},
        "requestState": asked["result"]["requestState"],
    });
    // The approved call answers with a task at once; polling brings its result.
    let started = script(&mut server, 2, "sleep 0.3; echo done", true, yes);
    assert_eq!(started["result"]["resultType"], "task", "{started}");
    assert_eq!(started["result"]["status"], "working", "{started}");
    let task = started["result"]["taskId"].as_str().unwrap().to_owned();
    let mut id = 2;
    let done = settled(&mut server, &mut id, &task);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["structuredContent"]["stdout"], "done\n", "{done}");
    assert_eq!(done["result"]["isError"], false, "{done}");
    // A task is cancelled mid-way: the work is told to stop, and its process is gone.
    let long = script(
        &mut server,
        50,
        "echo started > pid; exec sleep 30.25",
        true,
        Value::Null,
    );
    assert_eq!(
        long["result"]["resultType"], "task",
        "granted, so a task at once: {long}"
    );
    let long_task = long["result"]["taskId"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(10);
    while sleeping() == 0 {
        assert!(Instant::now() < deadline, "the command never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let ack = server.request(51, "tasks/cancel", json!({"taskId": long_task, "_meta": meta(true)}));
    assert!(ack.get("error").is_none(), "{ack}");
    let mut id = 51;
    let cancelled = settled(&mut server, &mut id, &long_task);
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    // Its process group is killed as the task ends; the kernel may take a moment to reap.
    let deadline = Instant::now() + Duration::from_secs(5);
    while sleeping() > 0 {
        assert!(
            Instant::now() < deadline,
            "the cancelled task's process is still running"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // An unknown id is an error; a client without the extension gets the plain result.
    let unknown = server.request(60, "tasks/get", json!({"taskId": "nope", "_meta": meta(true)}));
    assert!(unknown.get("error").is_some(), "{unknown}");
    let plain = script(&mut server, 61, "echo plain", false, Value::Null);
    assert_eq!(plain["result"]["structuredContent"]["stdout"], "plain\n", "{plain}");
    drop(server);
    // The receipts of the two tasks name them; the plain call names none.
    let receipts = super::receipts(ws.path());
    let tasks: Vec<&str> = receipts.iter().filter_map(|r| r["task_id"].as_str()).collect();
    assert_eq!(tasks, [task.as_str(), long_task.as_str()], "{receipts:#?}");
    assert_eq!(receipts.last().unwrap()["outcome"], "ok");
    assert!(receipts.last().unwrap().get("task_id").is_none());
}
