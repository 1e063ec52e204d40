//! Approvals the agent cannot give itself (issue 47), over HTTP with a token file: a call
//! under `review` is answered `approval_pending` and nothing runs; only a named approver
//! decides it, through `/approvals.json` with their bearer token or the inbox page with a
//! sealed cookie and its CSRF token; the retry runs once, a second does not; the receipt
//! names the approver; the caller's own approval, another caller's token, a post from
//! another origin or without the CSRF token, and a forged cookie decide nothing.

use super::{HttpServer, post_as, workspace};
use serde_json::{Value, json};

pub(super) const ALICE: &str = "alice-token-0123456789abcdef";
pub(super) const BOB: &str = "bob-token-0123456789abcdef00";
const CAROL: &str = "carol-token-0123456789abcdef0";

/// An HTTP exchange with the server at `url` (`http://ADDR/mcp`): the status line and
/// headers (lowercased), and the body.
pub(super) fn exchange(url: &str, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> (String, String) {
    use std::io::Write;
    let address = url.trim_start_matches("http://").trim_end_matches("/mcp");
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body.as_bytes()).unwrap();
    // The head as sent (a sealed cookie is case-sensitive), then the body.
    let mut answer = String::new();
    let _ = std::io::Read::read_to_string(&mut stream, &mut answer);
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    (format!("{head}\r\n\r\n"), body.to_owned())
}

pub(super) fn status(head: &str) -> u16 {
    head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0)
}

/// `write_file` of `out.txt` by `token`'s caller, a 2026-07-28 request; its result.
pub(super) fn write(url: &str, token: &str) -> Value {
    post_as(
        url,
        token,
        "tools/call",
        json!({"name": "write_file", "arguments": {"path": "out.txt", "content": "hello\n"},
               "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                         "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}}}),
    )
}

pub(super) fn pending_id(result: &Value) -> String {
    assert_eq!(result["isError"], true, "{result}");
    let error = &result["_meta"]["kyro/error"];
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.starts_with("approval_pending (write_file)"), "{text}");
    let id = error["approval_id"].as_str().expect("an approval id").to_owned();
    let inbox = error["inbox"].as_str().unwrap();
    assert!(inbox.ends_with(&format!("/approvals/{id}")), "{inbox}");
    id
}

pub(super) struct Setup {
    pub(super) ws: tempfile::TempDir,
    _policy_dir: tempfile::TempDir,
    pub(super) server: HttpServer,
}

pub(super) fn setup() -> Setup {
    setup_with("[approvals]\nwrite = \"review\"\n")
}

/// The same with the policy `policy`.
pub(super) fn setup_with(policy_text: &str) -> Setup {
    let ws = workspace();
    // Nothing that grants authority comes from the workspace: the policy and the tokens
    // live beside it.
    let policy_dir = tempfile::tempdir().unwrap();
    let policy = policy_dir.path().join("policy.toml");
    std::fs::write(&policy, policy_text).unwrap();
    let tokens = policy_dir.path().join("tokens");
    std::fs::write(&tokens, format!("alice {ALICE}\nbob {BOB}\ncarol {CAROL}\n")).unwrap();
    let server = HttpServer::start_with(
        ws.path(),
        &[
            "--token-file",
            tokens.to_str().unwrap(),
            "--policy",
            policy.to_str().unwrap(),
            "--approvers",
            "bob,alice",
        ],
        None,
    );
    Setup {
        ws,
        _policy_dir: policy_dir,
        server,
    }
}

pub(super) fn receipts(ws: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(ws.join(".kyro/receipts.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn http_a_reviewed_call_runs_once_after_a_named_approver_approves_it_by_token() {
    let s = setup();
    let url = &s.server.url;
    let out = s.ws.path().join("out.txt");
    let id = pending_id(&write(url, ALICE));
    assert!(!out.exists(), "written before the decision");
    // The client's own form answer is not asked for, and its retry changes nothing.
    assert_eq!(pending_id(&write(url, ALICE)), id);
    let bearer = |token: &str| format!("Bearer {token}");
    // Carol is no approver; alice may not approve her own call; nobody without a token.
    let (head, _) = exchange(url, "GET", "/approvals.json", &[("Authorization", &bearer(CAROL))], "");
    assert_eq!(status(&head), 403, "{head}");
    let (head, _) = exchange(url, "GET", "/approvals.json", &[], "");
    assert_eq!(status(&head), 401, "{head}");
    let path = format!("/approvals/{id}/approve");
    let (head, body) = exchange(url, "POST", &path, &[("Authorization", &bearer(ALICE))], "");
    assert_eq!(status(&head), 403, "{head}{body}");
    assert!(body.contains("cannot approve it themselves"), "{body}");
    assert!(!out.exists());
    // The metrics count it, for any scraper.
    let (_, metrics) = exchange(url, "GET", "/metrics", &[], "");
    assert!(metrics.contains("kyro_approvals_pending 1"), "{metrics}");
    assert!(metrics.contains("kyro_approvals_oldest_pending_seconds"), "{metrics}");
    // Bob sees it, with every argument, and approves it with a reason.
    let (head, listed) = exchange(url, "GET", "/approvals.json", &[("Authorization", &bearer(BOB))], "");
    assert_eq!(status(&head), 200, "{head}");
    let listed: Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(listed["approvals"][0]["id"], id.as_str(), "{listed}");
    assert_eq!(listed["approvals"][0]["caller"], "alice");
    assert!(
        listed["approvals"][0]["summary"].as_str().unwrap().contains("hello"),
        "{listed}"
    );
    let (head, body) = exchange(
        url,
        "POST",
        &path,
        &[("Authorization", &bearer(BOB)), ("Content-Type", "application/json")],
        r#"{"reason": "ship it"}"#,
    );
    assert_eq!(status(&head), 200, "{head}{body}");
    assert!(
        !out.exists(),
        "the decision itself runs nothing for a caller that did not wait"
    );
    // Decided once.
    let (head, _) = exchange(url, "POST", &path, &[("Authorization", &bearer(BOB))], "");
    assert_eq!(status(&head), 409, "{head}");
    // The retry runs, once; the next one is a new review.
    let ran = write(url, ALICE);
    assert_eq!(ran["isError"], false, "{ran}");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "hello\n");
    std::fs::remove_file(&out).unwrap();
    let again = pending_id(&write(url, ALICE));
    assert_ne!(again, id);
    assert!(!out.exists(), "ran twice on one approval");
    let decisions: Vec<Value> = receipts(s.ws.path()).iter().map(|r| r["decision"].clone()).collect();
    let reviewed = decisions
        .iter()
        .find(|d| d["kind"] == "reviewed")
        .expect("a reviewed receipt");
    assert_eq!(reviewed["approval_id"], id.as_str());
    assert_eq!(reviewed["approver"], "bob");
    assert_eq!(reviewed["reason"], "ship it");
    assert!(reviewed["waited_ms"].is_u64());
    assert_eq!(
        decisions.iter().filter(|d| d["kind"] == "reviewed").count(),
        1,
        "{decisions:?}"
    );
}

/// The sealed session in a sign-in answer's `Set-Cookie`.
pub(super) fn session_cookie(head: &str) -> String {
    let line = head
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("set-cookie: kyro_inbox="))
        .unwrap_or_else(|| panic!("no session cookie: {head}"));
    let lower = line.to_ascii_lowercase();
    assert!(
        lower.contains("httponly") && lower.contains("samesite=strict"),
        "{line}"
    );
    line["set-cookie: ".len()..].split(';').next().unwrap().to_owned()
}

fn csrf_of(page: &str) -> String {
    let at = page.find("name=\"csrf\" value=\"").expect("a CSRF field") + "name=\"csrf\" value=\"".len();
    page[at..].split('"').next().unwrap().to_owned()
}

#[test]
fn http_the_inbox_page_signs_an_approver_in_and_refuses_csrf_cross_origin_and_forged_sessions() {
    let s = setup();
    let url = &s.server.url;
    let origin = url.trim_end_matches("/mcp").to_owned();
    let out = s.ws.path().join("out.txt");
    let id = pending_id(&write(url, ALICE));
    let form = [("Content-Type", "application/x-www-form-urlencoded")];
    // Signed out: the page is the sign-in form and shows no call.
    let (head, page) = exchange(url, "GET", "/approvals", &[], "");
    assert_eq!(status(&head), 200);
    assert!(
        page.contains("action=\"/approvals/sign-in\"") && !page.contains(&id),
        "{page}"
    );
    assert!(
        head.to_ascii_lowercase()
            .contains("content-security-policy: default-src 'none'"),
        "{head}"
    );
    assert!(!page.contains("<script"), "{page}");
    // A non-approver's token, a wrong token, a sign-in from another origin: no session.
    for (token, from) in [
        (CAROL, origin.as_str()),
        ("nope-0123456789abcdef", origin.as_str()),
        (BOB, "http://evil.example"),
    ] {
        let mut headers = form.to_vec();
        headers.push(("Origin", from));
        let (head, _) = exchange(url, "POST", "/approvals/sign-in", &headers, &format!("token={token}"));
        assert_eq!(status(&head), 403, "{token} from {from}: {head}");
        assert!(!head.to_ascii_lowercase().contains("set-cookie: kyro_inbox="), "{head}");
    }
    // Bob signs in: a fresh sealed session, whatever cookie the browser brought.
    let mut headers = form.to_vec();
    headers.push(("Origin", origin.as_str()));
    headers.push(("Cookie", "kyro_inbox=planted-by-someone"));
    let (head, _) = exchange(url, "POST", "/approvals/sign-in", &headers, &format!("token={BOB}"));
    assert_eq!(status(&head), 303, "{head}");
    let cookie = session_cookie(&head);
    assert_ne!(cookie, "kyro_inbox=planted-by-someone");
    let (head, page) = exchange(url, "GET", "/approvals", &[("Cookie", &cookie)], "");
    assert_eq!(status(&head), 200);
    assert!(
        page.contains(&id) && page.contains("out.txt") && page.contains("hello"),
        "{page}"
    );
    let csrf = csrf_of(&page);
    let approve = format!("/approvals/{id}/approve");
    let with = |cookie: &str, origin: Option<&str>| {
        let mut headers: Vec<(&str, String)> =
            vec![("Content-Type", form[0].1.to_owned()), ("Cookie", cookie.to_owned())];
        if let Some(origin) = origin {
            headers.push(("Origin", origin.to_owned()));
        }
        headers
    };
    let post = |headers: Vec<(&str, String)>, body: String| {
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        exchange(url, "POST", &approve, &headers, &body)
    };
    // Without the CSRF token, with another's, from another origin, with a forged cookie:
    // refused, and nothing decided.
    let refusals = [
        (with(&cookie, Some(&origin)), "reason=x".to_owned()),
        (with(&cookie, Some(&origin)), "csrf=0000&reason=x".to_owned()),
        (with(&cookie, Some("http://evil.example")), format!("csrf={csrf}")),
        (with(&cookie, Some("null")), format!("csrf={csrf}")),
        (with("kyro_inbox=forged", Some(&origin)), format!("csrf={csrf}")),
    ];
    for (headers, body) in refusals {
        let (head, _) = post(headers, body);
        assert_eq!(status(&head), 403, "{head}");
    }
    let (_, listed) = exchange(
        url,
        "GET",
        "/approvals.json",
        &[("Authorization", &format!("Bearer {BOB}"))],
        "",
    );
    assert!(
        listed.contains("\"state\":\"pending\""),
        "decided by a refused post: {listed}"
    );
    // From the page, with its token: approved, and the retry runs.
    let (head, _) = post(with(&cookie, Some(&origin)), format!("csrf={csrf}&reason=fine+by+me"));
    assert_eq!(status(&head), 303, "{head}");
    assert!(!out.exists());
    let ran = write(url, ALICE);
    assert_eq!(ran["isError"], false, "{ran}");
    assert!(out.exists());
    let reviewed = receipts(s.ws.path())
        .into_iter()
        .find(|r| r["decision"]["kind"] == "reviewed")
        .expect("a reviewed receipt");
    assert_eq!(reviewed["decision"]["reason"], "fine by me");
}

#[test]
fn http_arguments_reach_the_page_as_text_never_as_markup() {
    let s = setup();
    let url = &s.server.url;
    let hostile = "<script>alert(1)</script><img src=x onerror=alert(2)>\"'";
    let result = post_as(
        url,
        ALICE,
        "tools/call",
        json!({"name": "write_file", "arguments": {"path": "x.html", "content": hostile},
               "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                         "io.modelcontextprotocol/clientCapabilities": {}}}),
    );
    assert_eq!(result["isError"], true, "{result}");
    let origin = url.trim_end_matches("/mcp").to_owned();
    let (head, _) = exchange(
        url,
        "POST",
        "/approvals/sign-in",
        &[
            ("Content-Type", "application/x-www-form-urlencoded"),
            ("Origin", &origin),
        ],
        &format!("token={BOB}"),
    );
    let cookie = session_cookie(&head);
    let (_, page) = exchange(url, "GET", "/approvals", &[("Cookie", &cookie)], "");
    assert!(page.contains("x.html"), "{page}");
    assert!(
        !page.contains("<script>alert") && !page.contains("<img src=x"),
        "{page}"
    );
    assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "{page}");
}

/// Chromium driven by kyro's own browser tools, in a runtime of their own with loopback
/// allowed; `None` (the test skipped) without Chromium, unless `KYRO_REQUIRE_BROWSER`.
pub(super) struct Browser {
    runtime: kyro_core::Runtime,
    executor: tokio::runtime::Runtime,
    _ws: tempfile::TempDir,
}

impl Browser {
    pub(super) fn start() -> Option<Browser> {
        use kyro_core::policy::{ApprovalRule, ApprovalRules};
        use kyro_core::{Policy, Registry, Runtime, Workspace};
        if let Some(reason) = kyro_tools::browser::unavailable() {
            assert!(
                std::env::var_os("KYRO_REQUIRE_BROWSER").is_none(),
                "KYRO_REQUIRE_BROWSER is set but {reason}"
            );
            eprintln!("skipped: {reason}");
            return None;
        }
        let ws = tempfile::tempdir().unwrap();
        let policy = Policy {
            approvals: ApprovalRules::uniform(ApprovalRule::Auto),
            tools: [("network".to_owned(), json!({ "allow_hosts": ["127.0.0.1"] }))].into(),
            ..Policy::default()
        };
        let registry = std::sync::Arc::new(Registry::with_catalog(kyro_tools::BUILTINS).unwrap());
        Some(Browser {
            runtime: Runtime::new(registry, Workspace::new(ws.path()).unwrap(), &policy).unwrap(),
            executor: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap(),
            _ws: ws,
        })
    }

    /// A browser tool's result.
    pub(super) fn ok(&self, tool: &str, arguments: Value) -> Value {
        let call = kyro_core::Call::new(tool, arguments.clone());
        match self.executor.block_on(self.runtime.execute_call(call)) {
            kyro_core::Outcome::Ok { result, .. } => result,
            other => panic!("{tool} {arguments}: {other:?}"),
        }
    }

    /// The page's outline.
    pub(super) fn page(&self) -> String {
        self.ok("browser_snapshot", json!({}))["snapshot"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// Signs in to the inbox of the server at `url` (`http://ADDR/mcp`) with `token`.
    pub(super) fn sign_in(&self, url: &str, token: &str) {
        let inbox = format!("{}/approvals", url.trim_end_matches("/mcp"));
        self.ok("browser_navigate", json!({ "url": inbox }));
        self.ok(
            "browser_type",
            json!({ "selector": "input[name=token]", "text": token }),
        );
        self.ok(
            "browser_click",
            json!({ "selector": "form[action='/approvals/sign-in'] button" }),
        );
    }
}

/// The inbox page in a real headless Chromium, driven by kyro's own browser tools: an
/// approver signs in with the form, reads the diff of a waiting `write_file`, approves it
/// with a reason by keyboard-reachable buttons, and the call then runs; after signing out,
/// a non-approver's token signs nobody in. Needs Chromium (`KYRO_REQUIRE_BROWSER=1` in CI).
#[test]
fn http_an_approver_decides_in_a_real_browser_and_a_non_approver_cannot_sign_in() {
    let Some(browser) = Browser::start() else { return };
    let s = setup();
    let url = &s.server.url;
    let out = s.ws.path().join("out.txt");
    std::fs::write(&out, "old line\n").unwrap();
    let id = pending_id(&write(url, ALICE));
    let ok = |tool: &str, arguments: Value| browser.ok(tool, arguments);
    let page = || browser.page();
    let inbox = format!("{}/approvals", url.trim_end_matches("/mcp"));
    ok("browser_navigate", json!({ "url": inbox }));
    assert!(page().contains("Sign in"), "{}", page());
    ok("browser_type", json!({ "selector": "input[name=token]", "text": BOB }));
    ok(
        "browser_click",
        json!({ "selector": "form[action='/approvals/sign-in'] button" }),
    );
    let listed = page();
    assert!(listed.contains("Signed in as") && listed.contains("bob"), "{listed}");
    assert!(listed.contains(&id), "{listed}");
    assert!(
        listed.contains("old line") && listed.contains("hello"),
        "the diff of the waiting write_file: {listed}"
    );
    assert!(!out.exists() || std::fs::read_to_string(&out).unwrap() == "old line\n");
    let approve = format!("form[action='/approvals/{id}/approve']");
    ok(
        "browser_type",
        json!({ "selector": format!("{approve} input[name=reason]"), "text": "checked the diff" }),
    );
    ok("browser_click", json!({ "selector": format!("{approve} button") }));
    assert!(page().contains("No calls are waiting for review"), "{}", page());
    let ran = write(url, ALICE);
    assert_eq!(ran["isError"], false, "{ran}");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "hello\n");
    let reviewed = receipts(s.ws.path())
        .into_iter()
        .find(|r| r["decision"]["kind"] == "reviewed")
        .expect("a reviewed receipt");
    assert_eq!(reviewed["decision"]["approver"], "bob");
    assert_eq!(reviewed["decision"]["reason"], "checked the diff");
    // Signed out, Carol's token signs nobody in, and the page shows no call.
    let waiting = pending_id(&write(url, ALICE));
    ok(
        "browser_click",
        json!({ "selector": "form[action='/approvals/sign-out'] button" }),
    );
    assert!(page().contains("Sign in"), "{}", page());
    ok(
        "browser_type",
        json!({ "selector": "input[name=token]", "text": CAROL }),
    );
    ok(
        "browser_click",
        json!({ "selector": "form[action='/approvals/sign-in'] button" }),
    );
    let refused = page();
    assert!(
        refused.contains("not an approver") && !refused.contains(&waiting),
        "{refused}"
    );
}

/// One request a test's receiver took: its headers (lowercased names) and body.
struct Received {
    headers: std::collections::HashMap<String, String>,
    body: String,
}

/// A receiver of notices on 127.0.0.1: answers 500 to the first request and 200 to the
/// rest, and hands each request over.
fn receiver() -> (String, std::sync::mpsc::Receiver<Received>) {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for (n, stream) in listener.incoming().enumerate() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut headers = std::collections::HashMap::new();
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            loop {
                line.clear();
                reader.read_line(&mut line).unwrap();
                let Some((name, value)) = line.trim_end().split_once(": ") else {
                    break;
                };
                headers.insert(name.to_ascii_lowercase(), value.to_owned());
            }
            let length: usize = headers.get("content-length").and_then(|l| l.parse().ok()).unwrap_or(0);
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            let status = if n == 0 { "500 Internal Server Error" } else { "200 OK" };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
            let body = String::from_utf8(body).unwrap();
            if tx.send(Received { headers, body }).is_err() {
                return;
            }
        }
    });
    (url, rx)
}

#[test]
fn http_pending_and_decided_calls_are_posted_signed_once_each_retried_when_the_endpoint_fails() {
    use std::time::Duration;
    let secret = "a-notify-secret-of-32-bytes-or-so";
    let (hook, received) = receiver();
    let ws = workspace();
    let beside = tempfile::tempdir().unwrap();
    let policy = beside.path().join("policy.toml");
    std::fs::write(
        &policy,
        format!("[approvals]\nwrite = \"review\"\n[approvals.notify]\nurl = \"{hook}\"\n"),
    )
    .unwrap();
    let tokens = beside.path().join("tokens");
    std::fs::write(&tokens, format!("alice {ALICE}\nbob {BOB}\n")).unwrap();
    let flags = [
        "--token-file",
        tokens.to_str().unwrap(),
        "--policy",
        policy.to_str().unwrap(),
        "--approvers",
        "bob",
    ];
    let server = HttpServer::start_env(
        ws.path(),
        "127.0.0.1:0",
        &flags,
        None,
        &[("KYRO_APPROVALS_SECRET", secret)],
    );
    let id = pending_id(&write(&server.url, ALICE));
    let next = || received.recv_timeout(Duration::from_secs(10)).expect("a notice");
    let verify = |got: &Received| -> Value {
        let stamp = &got.headers["x-kyro-timestamp"];
        let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret.as_bytes());
        let tag = ring::hmac::sign(&key, format!("{stamp}.{}", got.body).as_bytes());
        let hex: String = tag.as_ref().iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            got.headers["x-kyro-signature"],
            format!("sha256={hex}"),
            "a bad signature"
        );
        serde_json::from_str(&got.body).unwrap()
    };
    // The endpoint fails the first attempt: the same delivery comes again.
    let (first, again) = (next(), next());
    let (first, again) = (verify(&first), verify(&again));
    assert_eq!(first["event"], "approval.pending", "{first}");
    assert_eq!(first["delivery"], again["delivery"]);
    assert_eq!(first["approval"]["id"], id.as_str());
    assert_eq!(first["approval"]["caller"], "alice");
    let named = first["approval"].as_object().unwrap();
    assert!(
        !named.contains_key("arguments") && !named.contains_key("summary"),
        "{first}"
    );
    let (head, body) = exchange(
        &server.url,
        "POST",
        &format!("/approvals/{id}/approve"),
        &[("Authorization", &format!("Bearer {BOB}"))],
        "",
    );
    assert_eq!(status(&head), 200, "{body}");
    let approved = verify(&next());
    assert_eq!(approved["event"], "approval.approved", "{approved}");
    assert_eq!(approved["approval"]["approver"], "bob");
    // Once each: nothing more comes.
    assert!(
        received.recv_timeout(Duration::from_secs(3)).is_err(),
        "a notice came twice"
    );
}
