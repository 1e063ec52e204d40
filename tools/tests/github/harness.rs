//! The harness of the GitHub toolset tests: a local server answering a script and
//! reporting each request, and one runtime per call under a policy that allows loopback
//! (job logs are fetched from a signed address on this machine too). Each test binary
//! sets the process environment (`KYRO_GITHUB_API_URL`) once, so each is a binary of its
//! own sharing this file.
#![allow(dead_code)]

use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use kyro_core::policy::{ApprovalRule, ApprovalRules};
use kyro_core::{Call, Outcome, Policy, Registry, Runtime, Workspace};
use serde_json::{Value, json};

use super::common::Request as Seen;

pub type Answer = (u16, Vec<(&'static str, String)>, Value);

pub fn serve(answers: Vec<Answer>) -> (String, mpsc::Receiver<Seen>) {
    let (tx, rx) = mpsc::channel();
    let script = Mutex::new((answers.into_iter(), tx));
    let base = super::common::serve(move |request| {
        let mut script = script.lock().unwrap();
        let (status, extra, body) = script.0.next().expect("a request past the scripted answers");
        script.1.send(request).unwrap();
        let mut headers = vec![("Content-Type".to_owned(), "application/json".to_owned())];
        headers.extend(extra.into_iter().map(|(k, v)| (k.to_owned(), v)));
        // A string is sent as it is (a diff, a log); anything else as JSON.
        let body = match body {
            Value::String(text) => text,
            other => other.to_string(),
        };
        (status, headers, body)
    });
    (base, rx)
}

pub fn run(tool: &str, args: Value) -> Outcome {
    // The logs' signed address is on this machine too: the policy allows loopback.
    // GitHub's writes always ask unless the policy names them: these tests name them all.
    let mut approvals = ApprovalRules::uniform(ApprovalRule::Auto);
    approvals.tools = kyro_tools::BUILTINS
        .iter()
        .map(|t| t.spec.name)
        .filter(|name| name.starts_with("github_"))
        .map(|name| (name.to_owned(), ApprovalRule::Auto))
        .collect();
    let policy = Policy {
        approvals,
        tools: [("network".to_owned(), json!({"allow_hosts": ["127.0.0.1"]}))].into(),
        ..Policy::default()
    };
    let ws = tempfile::tempdir().unwrap();
    let registry = Arc::new(Registry::with_catalog(kyro_tools::BUILTINS).unwrap());
    let runtime = Runtime::new(registry, Workspace::new(ws.path()).unwrap(), &policy).unwrap();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(runtime.execute_call(Call::new(tool, args)))
}

pub fn ok(tool: &str, args: Value) -> Value {
    match run(tool, args.clone()) {
        Outcome::Ok { result, .. } => result,
        other => panic!("{tool} {args}: {other:?}"),
    }
}

pub fn next(page: u32) -> Vec<(&'static str, String)> {
    vec![("Link", format!("<http://x/next?page={page}&per_page=2>; rel=\"next\""))]
}

/// The next request: method, target and JSON body (null when none).
pub fn request(seen: &mpsc::Receiver<Seen>) -> (String, String, Value) {
    let r = seen.recv().unwrap();
    let body = serde_json::from_str(&r.body).unwrap_or(Value::Null);
    (r.method, r.path, body)
}

pub fn get(path: &str) -> (String, String, Value) {
    ("GET".into(), path.into(), Value::Null)
}

/// A call under `policy` (one runtime, a fresh workspace).
pub fn run_under(policy: &Policy, tool: &str, args: Value) -> Outcome {
    let ws = tempfile::tempdir().unwrap();
    let registry = Arc::new(Registry::with_catalog(kyro_tools::BUILTINS).unwrap());
    let runtime = Runtime::new(registry, Workspace::new(ws.path()).unwrap(), policy).unwrap();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(runtime.execute_call(Call::new(tool, args)))
}

/// The failure of an outcome that ran and failed.
pub fn failure(outcome: &Outcome) -> Option<kyro_tools::Failure> {
    match outcome {
        Outcome::ExecutionFailed { error, .. } => kyro_tools::Failure::of(error),
        _ => None,
    }
}

/// The next request, waited for at most ten seconds: a test expecting one that never comes
/// fails rather than hangs.
pub fn request_soon(seen: &mpsc::Receiver<Seen>) -> (String, String, Value) {
    let r = seen
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("a request that was not sent");
    let body = serde_json::from_str(&r.body).unwrap_or(Value::Null);
    (r.method, r.path, body)
}

/// The kind of the failure a call ended with (panics on any other outcome), and its text.
pub fn failed(tool: &str, args: Value) -> (String, String) {
    match run(tool, args.clone()) {
        Outcome::ExecutionFailed { error, .. } => (error.kind().to_owned(), error.to_string()),
        other => panic!("{tool} {args}: expected a failure, got {other:?}"),
    }
}
