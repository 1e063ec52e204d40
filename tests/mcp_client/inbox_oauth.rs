//! Signing in to the approvals inbox through the issuer: authorization code with PKCE
//! against a local issuer the test serves (metadata, JWKS, an authorization endpoint that
//! says yes, a token endpoint that checks the verifier and signs a token with a key the
//! test makes). An approver signs in and sees the waiting call; a sign-in whose state was
//! not started here, or whose token's subject is no approver, signs nobody in.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use serde_json::{Value, json};

use super::inbox::{exchange, status};
use super::oauth::{Key, es256};
use super::{HttpServer, post_as, workspace};

const AUDIENCE: &str = "http://127.0.0.1/mcp";
const CLIENT: &str = "kyro-inbox";

/// A local issuer that signs everyone in as `subject` with `scope`.
struct Issuer {
    url: String,
    subject: Arc<Mutex<(String, String)>>,
}

/// `name=value` pairs of a query or a form.
fn pairs(text: &str) -> Vec<(String, String)> {
    text.split('&')
        .filter_map(|p| p.split_once('='))
        .map(|(n, v)| (n.to_owned(), percent_decode(v)))
        .collect()
}

fn percent_decode(value: &str) -> String {
    let bytes = value.replace('+', " ").into_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() + 1 {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap();
            out.push(u8::from_str_radix(hex, 16).unwrap());
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

fn get(pairs: &[(String, String)], name: &str) -> String {
    pairs
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.clone())
        .unwrap_or_default()
}

impl Issuer {
    fn start(key: Key) -> Issuer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let subject = Arc::new(Mutex::new(("bob@example.com".to_owned(), "kyro:approve".to_owned())));
        let (issuer, who) = (url.clone(), subject.clone());
        // Codes handed out: code -> the challenge it was asked with.
        let codes: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
        std::thread::spawn(move || {
            for (n, stream) in listener.incoming().enumerate() {
                let Ok(mut stream) = stream else { continue };
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).is_ok_and(|n| n == 1) {
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head).to_string();
                let target = head.split(' ').nth(1).unwrap_or_default().to_owned();
                let length: usize = head
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length: ")
                            .map(str::to_owned)
                    })
                    .and_then(|l| l.trim().parse().ok())
                    .unwrap_or(0);
                let mut body = vec![0u8; length];
                let _ = stream.read_exact(&mut body);
                let (path, query) = target.split_once('?').unwrap_or((&target, ""));
                let (status, extra, answer) = match path {
                    "/.well-known/oauth-authorization-server" => (
                        "200 OK",
                        String::new(),
                        json!({"issuer": issuer, "jwks_uri": format!("{issuer}/jwks"),
                               "authorization_endpoint": format!("{issuer}/authorize"),
                               "token_endpoint": format!("{issuer}/token"),
                               "code_challenge_methods_supported": ["S256"]})
                        .to_string(),
                    ),
                    "/jwks" => ("200 OK", String::new(), json!({"keys": [key.jwk]}).to_string()),
                    "/authorize" => {
                        let asked = pairs(query);
                        assert_eq!(get(&asked, "client_id"), CLIENT);
                        assert_eq!(get(&asked, "code_challenge_method"), "S256");
                        let code = format!("code-{n}");
                        codes
                            .lock()
                            .unwrap()
                            .push((code.clone(), get(&asked, "code_challenge")));
                        let back = format!(
                            "{}?code={code}&state={}",
                            get(&asked, "redirect_uri"),
                            get(&asked, "state")
                        );
                        ("302 Found", format!("Location: {back}\r\n"), String::new())
                    }
                    "/token" => {
                        let form = pairs(&String::from_utf8_lossy(&body));
                        let challenge = codes
                            .lock()
                            .unwrap()
                            .iter()
                            .find(|(c, _)| *c == get(&form, "code"))
                            .map(|(_, ch)| ch.clone());
                        let verifier = get(&form, "code_verifier");
                        let digest = ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes());
                        if challenge != Some(B64.encode(digest.as_ref())) {
                            (
                                "400 Bad Request",
                                String::new(),
                                json!({"error": "invalid_grant"}).to_string(),
                            )
                        } else {
                            let (sub, scope) = who.lock().unwrap().clone();
                            let now = std::time::SystemTime::now()
                                .duration_since(std::time::UNIX_EPOCH)
                                .unwrap()
                                .as_secs();
                            let claims = json!({"iss": issuer, "aud": AUDIENCE, "sub": sub, "scope": scope,
                                                "iat": now, "exp": now + 300});
                            let mut header = jsonwebtoken::Header::new(key.alg);
                            header.kid = Some(key.kid.clone());
                            let token = jsonwebtoken::encode(&header, &claims, &key.private).unwrap();
                            (
                                "200 OK",
                                String::new(),
                                json!({"access_token": token, "token_type": "Bearer"}).to_string(),
                            )
                        }
                    }
                    _ => ("404 Not Found", String::new(), String::new()),
                };
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status}\r\n{extra}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
                    answer.len()
                );
            }
        });
        Issuer { url, subject }
    }
}

/// The value of the first `Set-Cookie` for `name` in a raw head.
fn cookie_in(head: &str, name: &str) -> Option<String> {
    head.lines()
        .filter_map(|l| l.split_once(": "))
        .filter(|(h, _)| h.eq_ignore_ascii_case("set-cookie"))
        .map(|(_, v)| v.split(';').next().unwrap().to_owned())
        .find(|c| c.starts_with(&format!("{name}=")) && c.len() > name.len() + 1)
}

fn location(head: &str) -> String {
    head.lines()
        .find_map(|l| l.split_once(": ").filter(|(h, _)| h.eq_ignore_ascii_case("location")))
        .map(|(_, v)| v.trim().to_owned())
        .expect("a Location")
}

/// Through the issuer: the inbox's start, the issuer's yes, the callback. The callback's
/// head and page.
fn sign_in(server: &str, tamper_state: bool) -> (String, String) {
    let (head, _) = exchange(server, "GET", "/approvals/oauth/start", &[], "");
    assert_eq!(status(&head), 302, "{head}");
    let pkce = cookie_in(&head, "kyro_inbox_pkce").expect("the sign-in's cookie");
    let authorize = location(&head);
    // The browser at the issuer (another origin): it says yes and sends it back.
    let (issuer, path) = authorize.trim_start_matches("http://").split_once('/').unwrap();
    let mut stream = std::net::TcpStream::connect(issuer).unwrap();
    write!(
        stream,
        "GET /{path} HTTP/1.1\r\nHost: {issuer}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    let mut back = location(&answer);
    if tamper_state {
        back = back.replace("state=", "state=0");
    }
    let callback = back
        .split_once("/approvals")
        .map(|(_, rest)| format!("/approvals{rest}"))
        .unwrap();
    exchange(server, "GET", &callback, &[("Cookie", &pkce)], "")
}

#[test]
fn http_an_approver_signs_in_to_the_inbox_through_the_issuer_with_pkce() {
    let issuer = Issuer::start(es256("k1"));
    let ws = workspace();
    let beside = tempfile::tempdir().unwrap();
    let policy = beside.path().join("policy.toml");
    std::fs::write(&policy, "[approvals]\nwrite = \"review\"\n").unwrap();
    let token = "alice-static-token-0123456789";
    let server = HttpServer::start_env(
        ws.path(),
        "127.0.0.1:0",
        &[
            "--issuer",
            &issuer.url,
            "--audience",
            AUDIENCE,
            "--inbox-client-id",
            CLIENT,
            "--policy",
            policy.to_str().unwrap(),
        ],
        None,
        &[("KYRO_HTTP_TOKEN", token)],
    );
    let url = &server.url;
    let asked = post_as(
        url,
        token,
        "tools/call",
        json!({"name": "write_file", "arguments": {"path": "out.txt", "content": "hi\n"},
               "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                         "io.modelcontextprotocol/clientCapabilities": {}}}),
    );
    let id = asked["_meta"]["kyro/error"]["approval_id"]
        .as_str()
        .expect("pending")
        .to_owned();
    // The sign-in page offers the issuer.
    let (_, page) = exchange(url, "GET", "/approvals", &[], "");
    assert!(page.contains("/approvals/oauth/start"), "{page}");
    // A state not started here signs nobody in.
    let (head, _) = sign_in(url, true);
    assert_eq!(status(&head), 403, "{head}");
    assert!(cookie_in(&head, "kyro_inbox").is_none(), "{head}");
    // Bob's token holds kyro:approve: signed in, he sees the call.
    let (head, _) = sign_in(url, false);
    assert_eq!(status(&head), 200, "{head}");
    let session = cookie_in(&head, "kyro_inbox").expect("a session");
    let (_, listed) = exchange(url, "GET", "/approvals", &[("Cookie", &session)], "");
    assert!(listed.contains("bob@example.com") && listed.contains(&id), "{listed}");
    // A subject without the scope, and not named an approver: nobody signed in.
    *issuer.subject.lock().unwrap() = ("carol@example.com".into(), String::new());
    let (head, body) = sign_in(url, false);
    assert_eq!(status(&head), 403, "{head}{body}");
    assert!(cookie_in(&head, "kyro_inbox").is_none(), "{head}");
    let _: Value = Value::Null;
}
