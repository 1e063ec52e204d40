//! A client that can open a page for its user (URL-mode elicitation) is sent to the inbox
//! page of its call waiting for review; the link approves nothing, its answer is not asked
//! again, and the call runs once an approver approved it.

use serde_json::{Value, json};

use super::inbox::{ALICE, BOB, exchange, pending_id, setup, status};
use super::post_as;

/// `write_file` by Alice from a 2026-07-28 client that opens URLs, perhaps answering the
/// link.
fn write(url: &str, answer: Option<Value>) -> Value {
    let mut params = json!({"name": "write_file", "arguments": {"path": "out.txt", "content": "hello\n"},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"url": {}}}}});
    if let Some(answer) = answer {
        params["inputResponses"] = json!({ "review": answer });
    }
    post_as(url, ALICE, "tools/call", params)
}

#[test]
fn http_a_client_that_opens_urls_is_sent_to_the_inbox_page_and_its_answer_approves_nothing() {
    let s = setup();
    let url = &s.server.url;
    let out = s.ws.path().join("out.txt");
    let linked = write(url, None);
    assert_eq!(linked["resultType"], "input_required", "{linked}");
    let link = &linked["inputRequests"]["review"];
    let text = link.to_string();
    assert!(
        text.contains("\"mode\":\"url\"") && text.contains("/approvals/"),
        "{link}"
    );
    // The user opened it (or not): the call still waits, and the link is not sent again.
    let accepted = json!({"action": "accept"});
    let still = write(url, Some(accepted.clone()));
    let id = pending_id(&still);
    assert!(text.contains(&format!("/approvals/{id}")), "{link}");
    assert!(!out.exists(), "the link's answer ran the call");
    let (head, body) = exchange(
        url,
        "POST",
        &format!("/approvals/{id}/approve"),
        &[("Authorization", &format!("Bearer {BOB}"))],
        "",
    );
    assert_eq!(status(&head), 200, "{body}");
    let ran = write(url, Some(accepted));
    assert_eq!(ran["isError"], false, "{ran}");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "hello\n");
}
