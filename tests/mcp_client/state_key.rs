//! Rotating `KYRO_STATE_KEY`: a replica given the new key as `KYRO_STATE_KEY` and the old
//! one as `KYRO_STATE_KEY_PREVIOUS` opens the approval states and inbox sessions the old
//! key sealed, and seals under the new key only; a replica without the old key, and any
//! replica given a state of an unrelated key, refuses them. The servers share one
//! workspace, whose state database spends each state's nonce once.

use std::process::Command;

use serde_json::{Value, json};

use super::inbox::{exchange, session_cookie, status};
use super::state_tls::refused_before_serving;
use super::{HttpServer, TOKEN, call_as, workspace};

const A: &str = "the-old-state-key-a-of-more-than-32-bytes";
const B: &str = "the-new-state-key-b-of-more-than-32-bytes";
const C: &str = "an-unrelated-state-key-c-of-32-bytes-or-more";

/// A server on `ws` with `KYRO_STATE_KEY` = `key` and, when given, the previous key.
fn keyed(ws: &std::path::Path, flags: &[&str], key: &str, previous: Option<&str>) -> HttpServer {
    let mut vars = vec![("KYRO_STATE_KEY", key)];
    vars.extend(previous.map(|p| ("KYRO_STATE_KEY_PREVIOUS", p)));
    HttpServer::start_env(ws, "127.0.0.1:0", flags, Some(TOKEN), &vars)
}

/// The state of the question `server` asks about `touch NAME`.
fn asked(server: &HttpServer, name: &str) -> Value {
    let asked = call_as(&server.url, TOKEN, json!(["touch", name]), Value::Null);
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    asked["requestState"].clone()
}

/// `touch NAME` again on `server` with a yes under `state`: whether it ran.
fn approved_on(server: &HttpServer, ws: &std::path::Path, name: &str, state: &Value) -> bool {
    let yes = json!({"inputResponses": {"approval": {"action": "accept", "content": {"approve": true}}},
        "requestState": state});
    let answered = call_as(&server.url, TOKEN, json!(["touch", name]), yes);
    let ran = answered["isError"] == false;
    if !ran {
        let text = answered["content"][0]["text"].as_str().unwrap_or_default();
        assert!(text.contains("does not verify"), "{answered}");
    }
    assert_eq!(ran, ws.join(name).exists(), "{answered}");
    ran
}

#[test]
fn a_state_sealed_under_the_previous_key_opens_during_a_rotation_and_no_other_does() {
    let ws = workspace();
    let (old, other) = (keyed(ws.path(), &[], A, None), keyed(ws.path(), &[], C, None));
    let (rotating, new) = (keyed(ws.path(), &[], B, Some(A)), keyed(ws.path(), &[], B, None));
    // Asked before the rotation, answered on a replica that has rotated.
    assert!(approved_on(&rotating, ws.path(), "a", &asked(&old, "a")));
    // Not on one that holds the new key alone.
    assert!(!approved_on(&new, ws.path(), "b", &asked(&old, "b")));
    // A key that is neither opens nothing.
    assert!(!approved_on(&rotating, ws.path(), "c", &asked(&other, "c")));
    // The rotating replica seals under the new key: its state opens where the new key is,
    // and not where only the old one is.
    assert!(!approved_on(&old, ws.path(), "d", &asked(&rotating, "d")));
    assert!(approved_on(&new, ws.path(), "e", &asked(&rotating, "e")));
}

#[test]
fn an_inbox_session_signed_under_the_previous_key_holds_during_a_rotation() {
    let ws = workspace();
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, "bob bob-token-0123456789abcdef00\n").unwrap();
    let flags = ["--token-file", tokens.to_str().unwrap(), "--approvers", "bob"];
    let servers = [
        keyed(ws.path(), &flags, A, None),
        keyed(ws.path(), &flags, B, Some(A)),
        keyed(ws.path(), &flags, B, None),
        keyed(ws.path(), &flags, C, Some(A)),
    ];
    let origin = servers[0].url.trim_end_matches("/mcp").to_owned();
    let headers = [
        ("Content-Type", "application/x-www-form-urlencoded"),
        ("Origin", origin.as_str()),
    ];
    let (head, _) = exchange(
        &servers[0].url,
        "POST",
        "/approvals/sign-in",
        &headers,
        "token=bob-token-0123456789abcdef00",
    );
    assert_eq!(status(&head), 303, "{head}");
    let cookie = session_cookie(&head);
    let signed_in = |server: &HttpServer| {
        let (head, page) = exchange(&server.url, "GET", "/approvals", &[("Cookie", &cookie)], "");
        assert_eq!(status(&head), 200, "{head}");
        page.contains("action=\"/approvals/sign-out\"")
    };
    let held: Vec<bool> = servers.iter().map(signed_in).collect();
    assert_eq!(
        held,
        [true, true, false, true],
        "old key; new + previous; new alone; other + previous"
    );
}

#[test]
fn a_bad_previous_key_is_refused_at_start_naming_it() {
    let ws = workspace();
    for (key, previous, said) in [
        (Some(B), "too-short", "KYRO_STATE_KEY_PREVIOUS: "),
        (None, A, "KYRO_STATE_KEY_PREVIOUS is set without KYRO_STATE_KEY"),
    ] {
        let mut command = Command::new(env!("CARGO_BIN_EXE_kyro"));
        command
            .env_remove("KYRO_STATE_KEY")
            .env("KYRO_STATE_KEY_PREVIOUS", previous)
            .env("KYRO_HTTP_TOKEN", TOKEN);
        if let Some(key) = key {
            command.env("KYRO_STATE_KEY", key);
        }
        command
            .args(["mcp", "--http", "127.0.0.1:0", "--workspace"])
            .arg(ws.path());
        let stderr = refused_before_serving(command);
        assert!(stderr.contains(said), "{stderr}");
    }
}
