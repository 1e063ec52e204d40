//! `kyro mcp --http` as an OAuth 2.1 resource server, against a local issuer: a JWKS
//! served on loopback with keys the test makes, tokens the test signs. A token is taken
//! only when its signature, issuer, audience and time check out; its subject is the caller
//! and its scopes choose the policy; everything refused runs nothing.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, Ed25519KeyPair, KeyPair};
use serde_json::{Value, json};

use super::{HttpServer, workspace};

/// The resource URI the servers here are started with.
const AUDIENCE: &str = "http://127.0.0.1/mcp";

/// A signing key the issuer publishes (or not).
pub(super) struct Key {
    pub(super) kid: String,
    pub(super) alg: Algorithm,
    pub(super) private: EncodingKey,
    pub(super) jwk: Value,
}

pub(super) fn es256(kid: &str) -> Key {
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).unwrap();
    let point = pair.public_key().as_ref();
    Key {
        kid: kid.into(),
        alg: Algorithm::ES256,
        private: EncodingKey::from_ec_der(pkcs8.as_ref()),
        jwk: json!({"kty": "EC", "crv": "P-256", "x": B64.encode(&point[1..33]), "y": B64.encode(&point[33..]),
                    "kid": kid, "alg": "ES256", "use": "sig"}),
    }
}

fn ed25519(kid: &str) -> Key {
    let pkcs8 = Ed25519KeyPair::generate_pkcs8(&SystemRandom::new()).unwrap();
    let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
    Key {
        kid: kid.into(),
        alg: Algorithm::EdDSA,
        private: EncodingKey::from_ed_der(pkcs8.as_ref()),
        jwk: json!({"kty": "OKP", "crv": "Ed25519", "x": B64.encode(pair.public_key().as_ref()), "kid": kid}),
    }
}

/// A local issuer: its JWKS at `/jwks`, and how many times it was fetched.
struct Issuer {
    url: String,
    keys: Arc<Mutex<Vec<Value>>>,
    fetches: Arc<AtomicUsize>,
}

impl Issuer {
    fn start(keys: &[&Key]) -> Issuer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let published = Arc::new(Mutex::new(keys.iter().map(|k| k.jwk.clone()).collect::<Vec<_>>()));
        let fetches = Arc::new(AtomicUsize::new(0));
        let (keys, count) = (published.clone(), fetches.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).is_ok_and(|n| n == 1) {
                    head.push(byte[0]);
                }
                count.fetch_add(1, Ordering::SeqCst);
                let body = json!({"keys": *keys.lock().unwrap()}).to_string();
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        Issuer {
            url,
            keys: published,
            fetches,
        }
    }

    fn publish(&self, keys: &[&Key]) {
        *self.keys.lock().unwrap() = keys.iter().map(|k| k.jwk.clone()).collect();
    }

    fn fetches(&self) -> usize {
        self.fetches.load(Ordering::SeqCst)
    }

    /// `kyro mcp --http` taking this issuer's tokens for [`AUDIENCE`], with `flags`.
    fn serve(&self, ws: &std::path::Path, flags: &[&str]) -> HttpServer {
        let jwks = format!("{}/jwks", self.url);
        let mut all = vec!["--issuer", &self.url, "--audience", AUDIENCE, "--jwks-uri", &jwks];
        all.extend_from_slice(flags);
        HttpServer::start_with(ws, &all, None)
    }

    /// A token signed with `key` whose claims are the usual ones changed by `changes`
    /// (a `null` removes a claim).
    fn token(&self, key: &Key, changes: Value) -> String {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let mut claims = json!({"iss": self.url, "aud": AUDIENCE, "sub": "alice@example.com",
                                "iat": now, "exp": now + 300});
        for (name, value) in changes.as_object().unwrap() {
            match value {
                Value::Null => drop(claims.as_object_mut().unwrap().remove(name)),
                value => claims[name] = value.clone(),
            }
        }
        let mut header = Header::new(key.alg);
        header.kid = Some(key.kid.clone());
        jsonwebtoken::encode(&header, &claims, &key.private).unwrap()
    }
}

/// One exchange with the server at `url`: the head (lowercased) and the body.
fn exchange(url: &str, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> (String, String) {
    let address = url.trim_start_matches("http://").trim_end_matches("/mcp");
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let mut request = format!("{method} {path} HTTP/1.1\r\n");
    if !headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("host")) {
        request.push_str(&format!("Host: {address}\r\n"));
    }
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str(&format!(
        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    (head.to_lowercase(), body.to_owned())
}

/// A 2026-07-28 request with `token`: the head, and the JSON-RPC answer when one came.
fn request(url: &str, token: &str, method: &str, mut params: Value) -> (String, Value) {
    params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "oauth", "version": "1"}});
    let name = params["name"].as_str().unwrap_or_default().to_owned();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let bearer = format!("Bearer {token}");
    let mut headers = vec![
        ("Authorization", bearer.as_str()),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
    ];
    if !name.is_empty() {
        headers.push(("Mcp-Name", name.as_str()));
    }
    let (head, body) = exchange(url, "POST", "/mcp", &headers, &body);
    let answer = match (body.find('{'), body.rfind('}')) {
        (Some(start), Some(end)) => serde_json::from_str(&body[start..=end]).unwrap_or(Value::Null),
        _ => Value::Null,
    };
    (head, answer)
}

fn read_a(url: &str, token: &str) -> (String, Value) {
    request(
        url,
        token,
        "tools/call",
        json!({"name": "read_file", "arguments": {"path": "a.txt"}}),
    )
}

fn receipts(ws: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(ws.join(".kyro/receipts.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[test]
fn oauth_takes_only_a_valid_token_of_its_issuer_for_this_server_and_its_subject_is_the_caller() {
    let ws = workspace();
    let (key, stranger) = (es256("k1"), es256("k1"));
    let issuer = Issuer::start(&[&key]);
    let server = issuer.serve(ws.path(), &[]);
    // Where to get a token: the metadata, at the resource's path and bare.
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let (head, body) = exchange(&server.url, "GET", path, &[], "");
        assert!(head.starts_with("http/1.1 200"), "{path}: {head}");
        let metadata: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(metadata["resource"], AUDIENCE, "{metadata}");
        assert_eq!(metadata["authorization_servers"], json!([issuer.url]), "{metadata}");
    }
    let (head, _) = exchange(&server.url, "POST", "/mcp", &[], "{}");
    assert!(head.starts_with("http/1.1 401"), "{head}");
    assert!(
        head.contains(
            "www-authenticate: bearer resource_metadata=\"http://127.0.0.1/.well-known/oauth-protected-resource/mcp\""
        ),
        "{head}"
    );
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let header_none = B64.encode(br#"{"alg":"none","typ":"JWT"}"#);
    let claims = B64.encode(
        json!({"iss": issuer.url, "aud": AUDIENCE, "sub": "mallory", "exp": now + 300})
            .to_string()
            .as_bytes(),
    );
    let hs256 = jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &json!({"iss": issuer.url, "aud": AUDIENCE, "sub": "mallory", "exp": now + 300}),
        &EncodingKey::from_secret(key.jwk["x"].as_str().unwrap().as_bytes()).unwrap(),
    )
    .unwrap();
    let refused = [
        (
            "another audience",
            issuer.token(&key, json!({"aud": "http://127.0.0.1/other"})),
        ),
        (
            "another issuer",
            issuer.token(&key, json!({"iss": "http://127.0.0.1:1"})),
        ),
        ("expired", issuer.token(&key, json!({"exp": now - 120}))),
        ("not yet valid", issuer.token(&key, json!({"nbf": now + 600}))),
        ("no subject", issuer.token(&key, json!({"sub": null}))),
        ("no expiry", issuer.token(&key, json!({"exp": null}))),
        ("signed by another key", issuer.token(&stranger, json!({}))),
        ("unknown kid", issuer.token(&es256("k9"), json!({}))),
        (
            "a subject kyro names itself",
            issuer.token(&key, json!({"sub": "local"})),
        ),
        ("alg none", format!("{header_none}.{claims}.")),
        ("HS256 with the public key as secret", hs256),
        ("not a JWT", "kyro-test-token-0123456789".to_owned()),
    ];
    for (why, token) in &refused {
        let (head, answer) = read_a(&server.url, token);
        assert!(head.starts_with("http/1.1 401"), "{why}: {head}");
        assert!(head.contains("error=\"invalid_token\""), "{why}: {head}");
        assert_eq!(answer, Value::Null, "{why}: nothing answered");
    }
    assert!(receipts(ws.path()).is_empty(), "nothing refused reached a tool");
    let (head, answer) = read_a(&server.url, &issuer.token(&key, json!({})));
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    let kept = receipts(ws.path());
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0]["caller"], "alice@example.com");
}

#[test]
fn oauth_answers_401_with_a_fixed_description_when_the_token_holds_cr_lf() {
    let ws = workspace();
    let key = es256("k1");
    let issuer = Issuer::start(&[&key]);
    let server = issuer.serve(ws.path(), &[]);
    // What the token says reached `WWW-Authenticate`, and a CR or LF there made the
    // answer a 500.
    let refused = [
        (
            "a kid holding CR/LF",
            issuer.token(&es256("k1\r\nX-Injected: yes"), json!({})),
        ),
        (
            "a subject holding CR/LF",
            issuer.token(&key, json!({"sub": "eve\r\nX-Injected: yes"})),
        ),
    ];
    for (why, token) in &refused {
        let (head, answer) = read_a(&server.url, token);
        assert!(head.starts_with("http/1.1 401"), "{why}: {head}");
        assert!(
            head.contains(
                "www-authenticate: bearer error=\"invalid_token\", error_description=\"the access token was refused; the response body says why\""
            ),
            "{why}: {head}"
        );
        assert!(!head.contains("x-injected"), "{why}: {head}");
        assert_eq!(answer, Value::Null, "{why}: nothing answered");
    }
    assert!(receipts(ws.path()).is_empty(), "nothing refused reached a tool");
}

#[test]
fn oauth_scopes_choose_the_policy_and_a_token_without_one_gets_403() {
    let ws = workspace();
    let key = ed25519("ed");
    let issuer = Issuer::start(&[&key]);
    let dir = tempfile::tempdir().unwrap();
    let (read, write) = (dir.path().join("read.toml"), dir.path().join("write.toml"));
    std::fs::write(&read, "capabilities = [\"fs.read\"]\n").unwrap();
    std::fs::write(&write, "capabilities = [\"fs.read\", \"fs.write\"]\n").unwrap();
    let read_policy = format!("kyro:read={}", read.display());
    let write_policy = format!("kyro:read kyro:write={}", write.display());
    let server = issuer.serve(
        ws.path(),
        &["--scope-policy", &read_policy, "--scope-policy", &write_policy],
    );
    let (_, metadata) = exchange(&server.url, "GET", "/.well-known/oauth-protected-resource", &[], "");
    let metadata: Value = serde_json::from_str(&metadata).unwrap();
    assert_eq!(metadata["scopes_supported"], json!(["kyro:read", "kyro:write"]));
    let listed = |token: &str| -> Vec<String> {
        let (head, answer) = request(&server.url, token, "tools/list", json!({}));
        assert!(head.starts_with("http/1.1 200"), "{head}");
        answer["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let reader = issuer.token(&key, json!({"scope": "openid kyro:read"}));
    let writer = issuer.token(&key, json!({"sub": "bob", "scp": ["kyro:read", "kyro:write"]}));
    let (for_reader, for_writer) = (listed(&reader), listed(&writer));
    assert!(for_reader.contains(&"read_file".to_owned()), "{for_reader:?}");
    assert!(!for_reader.contains(&"write_file".to_owned()), "{for_reader:?}");
    assert!(for_writer.contains(&"write_file".to_owned()), "{for_writer:?}");
    let write_call = json!({"name": "write_file", "arguments": {"path": "new.txt", "content": "x"}});
    let (_, denied) = request(&server.url, &reader, "tools/call", write_call.clone());
    assert!(
        denied["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("denied"),
        "{denied}"
    );
    assert!(!ws.path().join("new.txt").exists());
    for scopes in [json!({"scope": "openid"}), json!({"scope": "kyro:write"}), json!({})] {
        let (head, answer) = request(
            &server.url,
            &issuer.token(&key, scopes.clone()),
            "tools/call",
            write_call.clone(),
        );
        assert!(head.starts_with("http/1.1 403"), "{scopes}: {head}");
        assert!(
            head.contains("error=\"insufficient_scope\", scope=\"kyro:read\""),
            "{scopes}: {head}"
        );
        assert_eq!(answer, Value::Null);
    }
    let callers: Vec<Value> = receipts(ws.path()).iter().map(|r| r["caller"].clone()).collect();
    assert_eq!(callers, [json!("alice@example.com")], "only the reader's denied write");
}

#[test]
fn oauth_follows_a_key_rotation_and_made_up_kids_fetch_nothing_more_within_ten_seconds() {
    let ws = workspace();
    let (old, new) = (es256("old"), es256("new"));
    let issuer = Issuer::start(&[&old]);
    let server = issuer.serve(ws.path(), &[]);
    let (head, _) = read_a(&server.url, &issuer.token(&old, json!({})));
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert_eq!(issuer.fetches(), 1);
    issuer.publish(&[&new]);
    // Past the window in which a kid the keys lack fetches nothing.
    std::thread::sleep(std::time::Duration::from_millis(10_200));
    let (head, _) = read_a(&server.url, &issuer.token(&new, json!({})));
    assert!(head.starts_with("http/1.1 200"), "a rotated key is fetched: {head}");
    assert_eq!(issuer.fetches(), 2);
    for n in 0..20 {
        let (head, _) = read_a(&server.url, &issuer.token(&es256(&format!("made-up-{n}")), json!({})));
        assert!(head.starts_with("http/1.1 401"), "{head}");
    }
    assert_eq!(issuer.fetches(), 2, "unknown kids within the window fetch nothing");
}

#[test]
fn http_checks_the_host_before_anything_and_serves_other_addresses_only_with_auth_and_allowed_hosts() {
    let ws = workspace();
    let server = HttpServer::start(ws.path());
    for host in ["evil.example", "evil.example:80", "127.0.0.1.evil.example"] {
        let (head, _) = exchange(&server.url, "POST", "/mcp", &[("Host", host)], "{}");
        assert!(head.starts_with("http/1.1 403"), "{host}: {head}");
    }
    let refuse = |flags: &[&str], token: Option<&str>| {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_kyro"));
        command.env_remove("KYRO_HTTP_TOKEN");
        if let Some(token) = token {
            command.env("KYRO_HTTP_TOKEN", token);
        }
        let out = command
            .args(["mcp", "--http", "0.0.0.0:0", "--workspace"])
            .arg(ws.path())
            .args(flags)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{flags:?}");
        let said = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(said.contains("--allow-host"), "{said}");
    };
    refuse(&["--no-auth", "--allow-host", "tools.test"], None);
    refuse(&[], Some(super::TOKEN));
    let exposed = HttpServer::start_any(
        ws.path(),
        "0.0.0.0:0",
        &["--allow-host", "tools.test"],
        Some(super::TOKEN),
    );
    let bearer = format!("Bearer {}", super::TOKEN);
    let (head, _) = exchange(
        &exposed.url,
        "POST",
        "/mcp",
        &[("Host", "evil.example"), ("Authorization", &bearer)],
        "{}",
    );
    assert!(head.starts_with("http/1.1 403"), "{head}");
    let (head, _) = exchange(&exposed.url, "POST", "/mcp", &[("Host", "tools.test:9")], "{}");
    assert!(
        head.starts_with("http/1.1 401"),
        "the name passes, the token is still wanted: {head}"
    );
}
