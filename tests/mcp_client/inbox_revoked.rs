//! An approver signed in to the inbox with a static token is signed out when that token
//! leaves the token file: after SIGHUP the sealed cookie opens nothing, while another
//! approver's still does.

use super::inbox::{ALICE, BOB, exchange, session_cookie, status};
use super::{HttpServer, workspace};

/// Signs `token`'s holder in at the server of `url`: the session cookie.
fn signed_in(url: &str, token: &str) -> String {
    let origin = url.trim_end_matches("/mcp").to_owned();
    let headers = [
        ("Content-Type", "application/x-www-form-urlencoded"),
        ("Origin", origin.as_str()),
    ];
    let (head, _) = exchange(url, "POST", "/approvals/sign-in", &headers, &format!("token={token}"));
    assert_eq!(status(&head), 303, "{head}");
    session_cookie(&head)
}

/// Whether the inbox page shows `cookie`'s holder the queue (signed in) rather than the
/// sign-in form.
fn shows_the_queue(url: &str, cookie: &str) -> bool {
    let (head, page) = exchange(url, "GET", "/approvals", &[("Cookie", cookie)], "");
    assert_eq!(status(&head), 200, "{head}");
    !page.contains("action=\"/approvals/sign-in\"")
}

#[test]
fn http_an_approver_whose_token_is_removed_is_signed_out_of_the_inbox_on_sighup() {
    let ws = workspace();
    let secrets = tempfile::tempdir().unwrap();
    let tokens = secrets.path().join("tokens");
    std::fs::write(&tokens, format!("alice {ALICE}\nbob {BOB}\n")).unwrap();
    let server = HttpServer::start_with(
        ws.path(),
        &["--token-file", tokens.to_str().unwrap(), "--approvers", "bob,alice"],
        None,
    );
    let url = &server.url;
    let (alice, bob) = (signed_in(url, ALICE), signed_in(url, BOB));
    assert!(shows_the_queue(url, &alice) && shows_the_queue(url, &bob));
    std::fs::write(&tokens, format!("bob {BOB}\n")).unwrap();
    // SAFETY: signalling the child this test started.
    unsafe { libc::kill(server.child.id() as i32, libc::SIGHUP) };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while shows_the_queue(url, &alice) {
        assert!(
            std::time::Instant::now() < deadline,
            "alice's cookie still opens the inbox"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(shows_the_queue(url, &bob), "bob's token is still in force");
}
