//! web_fetch and http_request against local servers this test starts on 127.0.0.1: the
//! network policy (loopback refused by default, allow lists, deny lists), redirects checked
//! hop by hop, HTML to markdown, size caps.

mod common;

use kyro_tools::Failure;
use std::sync::Arc;

use kyro_core::policy::{ApprovalRule, ApprovalRules};
use kyro_core::{Call, Outcome, Policy, Registry, Runtime, Workspace};
use kyro_tools::settings::NetworkSettings;
use serde_json::{Value, json};

/// Serves every connection with `route(method, path, body)` until the test ends.
fn serve(route: fn(&str, &str, &str) -> common::Response) -> String {
    common::serve(move |request| route(&request.method, &request.path, &request.body))
}

fn route(method: &str, path: &str, body: &str) -> (u16, Vec<(String, String)>, String) {
    let html = ("Content-Type".to_owned(), "text/html; charset=utf-8".to_owned());
    match path {
        "/page" => (
            200,
            vec![html],
            "<html><body><h1>Title | é</h1><p>Some <b>bold</b> text.</p><a href=\"/x\">link</a></body></html>".into(),
        ),
        "/moved" => (302, vec![("Location".into(), "/page".into())], String::new()),
        "/loop" => (302, vec![("Location".into(), "/loop".into())], String::new()),
        "/outside" => (
            302,
            vec![("Location".into(), "http://localhost:9/page".into())],
            String::new(),
        ),
        "/big" => (200, vec![], "x".repeat(10_000)),
        "/echo" => (201, vec![("X-Seen".into(), method.to_owned())], body.to_owned()),
        _ => (404, vec![], "missing".into()),
    }
}

fn run(network: NetworkSettings, tool: &str, args: Value) -> Outcome {
    let ws = tempfile::tempdir().unwrap();
    let policy = Policy {
        approvals: ApprovalRules::uniform(ApprovalRule::Auto),
        tools: [("network".to_owned(), serde_json::to_value(&network).unwrap())].into(),
        ..Policy::default()
    };
    let registry = Arc::new(Registry::with_catalog(kyro_tools::BUILTINS).unwrap());
    let runtime = Runtime::new(registry, Workspace::new(ws.path()).unwrap(), &policy).unwrap();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(runtime.execute_call(Call::new(tool, args)))
}

fn local() -> NetworkSettings {
    NetworkSettings {
        allow_hosts: vec!["127.0.0.1".into()],
        ..NetworkSettings::default()
    }
}

fn ok(outcome: Outcome) -> Value {
    match outcome {
        Outcome::Ok { result, .. } => result,
        other => panic!("{other:?}"),
    }
}

fn refused(outcome: Outcome) -> String {
    match outcome {
        Outcome::ExecutionFailed { error, .. } if matches!(Failure::of(&error), Some(Failure::UrlRefused { .. })) => {
            let Some(Failure::UrlRefused { reason, .. }) = Failure::of(&error) else {
                unreachable!()
            };
            reason
        }
        other => panic!("expected a refused URL, got {other:?}"),
    }
}

#[test]
fn loopback_and_private_addresses_are_refused_by_default() {
    let base = serve(route);
    let reason = refused(run(
        NetworkSettings::default(),
        "web_fetch",
        json!({"url": format!("{base}/page")}),
    ));
    assert!(reason.contains("not a public address"), "{reason}");
    for url in [
        "http://localhost:1/",
        "http://10.0.0.1/",
        "http://169.254.169.254/latest",
        "http://[::1]:1/",
        "http://0.0.0.0:1/",
    ] {
        refused(run(NetworkSettings::default(), "http_request", json!({"url": url})));
    }
    let denied = NetworkSettings {
        allow_private: true,
        deny_hosts: vec!["127.0.0.1".into()],
        ..NetworkSettings::default()
    };
    refused(run(denied, "web_fetch", json!({"url": format!("{base}/page")})));
    assert!(matches!(
        run(local(), "web_fetch", json!({"url": "file:///etc/passwd"})),
        Outcome::InvalidArguments { .. }
    ));
}

#[test]
fn a_page_comes_back_as_markdown_a_window_at_a_time() {
    let base = serve(route);
    let page = ok(run(local(), "fetch", json!({"url": format!("{base}/moved")})));
    assert_eq!(page["url"], format!("{base}/page"), "the redirect was followed");
    let content = page["content"].as_str().unwrap();
    assert!(
        content.contains("# Title | é") && content.contains("**bold**"),
        "{content}"
    );
    let window = ok(run(
        local(),
        "web_fetch",
        json!({"url": format!("{base}/page"), "max_chars": 5}),
    ));
    assert_eq!(
        (window["truncated"].clone(), window["next_index"].clone()),
        (json!(true), json!(5))
    );
    let raw = ok(run(
        local(),
        "web_fetch",
        json!({"url": format!("{base}/page"), "raw": true}),
    ));
    assert!(raw["content"].as_str().unwrap().starts_with("<html>"));
}

#[test]
fn redirects_are_bounded_and_checked_at_every_hop() {
    let base = serve(route);
    let reason = refused(run(local(), "web_fetch", json!({"url": format!("{base}/loop")})));
    assert!(reason.contains("redirects"), "{reason}");
    let reason = refused(run(local(), "web_fetch", json!({"url": format!("{base}/outside")})));
    assert!(reason.contains("localhost"), "{reason}");
}

#[test]
fn http_request_sends_method_headers_and_body_and_caps_the_answer() {
    let base = serve(route);
    let answer = ok(run(
        local(),
        "http_request",
        json!({"method": "POST", "url": format!("{base}/echo"), "headers": [{"name": "X-Test", "value": "1"}], "body": "payload | é"}),
    ));
    assert_eq!(
        (answer["status"].clone(), answer["body"].clone()),
        (json!(201), json!("payload | é"))
    );
    assert!(
        answer["headers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["name"] == "x-seen" && h["value"] == "POST")
    );
    let big = ok(run(
        local(),
        "http_request",
        json!({"url": format!("{base}/big"), "max_bytes": 100}),
    ));
    assert_eq!(
        (big["truncated"].clone(), big["body"].as_str().unwrap().len()),
        (json!(true), 100)
    );
    let missing = ok(run(local(), "http_request", json!({"url": format!("{base}/nope")})));
    assert_eq!(missing["status"], 404);
}
