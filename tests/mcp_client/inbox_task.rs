//! In a real headless Chromium (kyro's own browser tools): a 2026-07-28 client's call that
//! waits for review as a task; the approver signs in, reads the command line it would run,
//! approves it, and the waiting task completes without the client calling again. Needs
//! Chromium (`KYRO_REQUIRE_BROWSER=1` in CI).

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::inbox::{ALICE, BOB, Browser, setup_with};
use super::post_as;

fn meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
           "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}})
}

#[test]
fn http_an_approver_approves_in_a_real_browser_and_the_waiting_task_completes() {
    let Some(browser) = Browser::start() else { return };
    let s = setup_with("[approvals]\nexec = \"review\"\n");
    let url = &s.server.url;
    let started = post_as(
        url,
        ALICE,
        "tools/call",
        json!({"name": "run_command", "arguments": {"argv": ["touch", "approved-in-a-browser"]}, "_meta": meta()}),
    );
    assert_eq!(started["resultType"], "task", "{started}");
    let task = started["taskId"].as_str().unwrap().to_owned();
    let done = s.ws.path().join("approved-in-a-browser");
    browser.sign_in(url, BOB);
    let page = browser.page();
    assert!(page.contains("touch approved-in-a-browser"), "the command line: {page}");
    assert!(!done.exists(), "ran before the decision");
    browser.ok(
        "browser_click",
        json!({ "selector": "form[action$='/approve'] button" }),
    );
    // The task completes by itself.
    let deadline = Instant::now() + Duration::from_secs(15);
    let finished = loop {
        let got = post_as(url, ALICE, "tasks/get", json!({"taskId": task, "_meta": meta()}));
        if got["status"] != "working" || Instant::now() > deadline {
            break got;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(finished["status"], "completed", "{finished}");
    assert!(done.exists(), "the approved task did not run");
}
