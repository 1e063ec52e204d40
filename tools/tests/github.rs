//! The GitHub tools against a local HTTP server this test starts on 127.0.0.1: the exact
//! requests sent, pagination, and a typed error for every refusing status.

mod common;

#[path = "github/harness.rs"]
mod harness;

use kyro_tools::Failure;
use std::sync::Mutex;
use std::sync::mpsc;

use kyro_core::Outcome;
use kyro_tools::RemoteReason;
use serde_json::{Value, json};

use common::Request as Seen;

/// A scripted answer: status, extra headers, body.
type Answer = (u16, Vec<(&'static str, String)>, String);

/// Serves `answers` in order, one request each, and reports each request.
fn serve(answers: Vec<Answer>) -> (String, mpsc::Receiver<Seen>) {
    let (tx, rx) = mpsc::channel();
    let script = Mutex::new((answers.into_iter(), tx));
    let base = common::serve(move |request| {
        let mut script = script.lock().unwrap();
        let (status, extra, body) = script.0.next().expect("a request past the scripted answers");
        script.1.send(request).unwrap();
        let mut headers = vec![("Content-Type".to_owned(), "application/json".to_owned())];
        headers.extend(extra.into_iter().map(|(k, v)| (k.to_owned(), v)));
        (status, headers, body)
    });
    (base, rx)
}

fn failure(outcome: Outcome) -> Option<Failure> {
    match outcome {
        Outcome::ExecutionFailed { error, .. } => Failure::of(&error),
        _ => None,
    }
}

/// One runtime per call under the harness's policy (loopback allowed, writes named).
fn run(tool: &str, args: Value) -> Outcome {
    harness::run(tool, args)
}

fn ok(tool: &str, args: Value) -> Value {
    match run(tool, args) {
        Outcome::Ok { result, .. } => result,
        other => panic!("{tool}: {other:?}"),
    }
}

fn issue(number: u64) -> Value {
    json!({"number": number, "id": 1000 + number, "title": "Bug | é", "state": "open", "body": "details", "user": {"login": "alice"},
           "labels": [{"name": "bug"}], "comments": 2, "html_url": format!("https://example.invalid/{number}")})
}

// One test: the base URL and token come from this process's environment.
#[test]
fn github_tools_speak_rest_to_the_configured_server() {
    let (base, seen) = serve(vec![
        (200, vec![], issue(7).to_string()),
        (
            200,
            vec![(
                "Link",
                "<http://x/repos/o/r/issues?page=3&per_page=5>; rel=\"next\", <http://x?page=9>; rel=\"last\"".into(),
            )],
            json!([issue(8), issue(9)]).to_string(),
        ),
        (201, vec![], issue(10).to_string()),
        (
            200,
            vec![],
            json!({"number": 3, "title": "PR", "state": "open", "body": null, "user": {"login": "bob"},
                            "head": {"ref": "feature", "sha": "h3"}, "base": {"ref": "main"}, "merged": false, "draft": true,
                            "html_url": "https://example.invalid/pr/3"})
            .to_string(),
        ),
        (
            201,
            vec![],
            json!({"id": 55, "html_url": "https://example.invalid/c/55"}).to_string(),
        ),
        (401, vec![], json!({"message": "Bad credentials"}).to_string()),
        (404, vec![], json!({"message": "Not Found"}).to_string()),
        (422, vec![], json!({"message": "Validation Failed"}).to_string()),
        (
            403,
            vec![
                ("x-ratelimit-remaining", "0".into()),
                ("x-ratelimit-reset", "1700000000".into()),
            ],
            json!({"message": "API rate limit exceeded"}).to_string(),
        ),
        // A redirect toward another host (here a private address): reported, not followed.
        (
            301,
            vec![("Location", "http://10.255.0.1/steal".into())],
            json!({"message": "Moved Permanently"}).to_string(),
        ),
    ]);
    // SAFETY: this binary has this one test; nothing else reads the environment meanwhile.
    unsafe {
        std::env::set_var("KYRO_GITHUB_API_URL", &base);
        std::env::set_var("GITHUB_TOKEN", "t0ken");
    }

    // kyro's earlier name and argument still reach GitHub's `issue_read`.
    let got = ok("github_get_issue", json!({"owner": "o", "repo": "r", "number": 7}));
    let got = &got["issue"];
    assert_eq!(got["id"], 1007);
    assert_eq!(
        (got["title"].clone(), got["author"].clone(), got["labels"].clone()),
        (json!("Bug | é"), json!("alice"), json!(["bug"]))
    );
    let request = seen.recv().unwrap();
    assert_eq!(
        (request.method.as_str(), request.path.as_str()),
        ("GET", "/repos/o/r/issues/7")
    );
    assert_eq!(request.header("authorization"), Some("Bearer t0ken"));
    assert_eq!(request.header("accept"), Some("application/vnd.github+json"));

    let page = ok(
        "github_list_issues",
        json!({"owner": "o", "repo": "r", "state": "all", "labels": ["bug", "ui x"], "page": 2, "per_page": 5}),
    );
    assert_eq!(page["issues"].as_array().unwrap().len(), 2);
    assert_eq!(page["next_page"], 3);
    assert_eq!(
        seen.recv().unwrap().path,
        "/repos/o/r/issues?state=all&page=2&per_page=5&labels=bug%2Cui%20x"
    );

    let created = ok(
        "github_create_issue",
        json!({"owner": "o", "repo": "r", "title": "New", "body": "b", "labels": ["x"]}),
    );
    assert_eq!(created["number"], 10);
    let request = seen.recv().unwrap();
    assert_eq!(
        (request.method.as_str(), request.path.as_str()),
        ("POST", "/repos/o/r/issues")
    );
    assert_eq!(
        serde_json::from_str::<Value>(&request.body).unwrap(),
        json!({"title": "New", "body": "b", "labels": ["x"]})
    );

    let pr = ok(
        "github_get_pull_request",
        json!({"owner": "o", "repo": "r", "number": 3}),
    );
    let pr = &pr["pull_request"];
    assert_eq!(
        (pr["head"].clone(), pr["base"].clone(), pr["draft"].clone()),
        (json!("feature"), json!("main"), json!(true))
    );
    assert_eq!(seen.recv().unwrap().path, "/repos/o/r/pulls/3");

    let comment = ok(
        "github_comment",
        json!({"owner": "o", "repo": "r", "number": 7, "body": "thanks | é"}),
    );
    assert_eq!(comment["id"], 55);
    let request = seen.recv().unwrap();
    assert_eq!(request.path, "/repos/o/r/issues/7/comments");
    assert_eq!(
        serde_json::from_str::<Value>(&request.body).unwrap(),
        json!({"body": "thanks | é"})
    );

    for reason in [
        RemoteReason::Unauthorized,
        RemoteReason::NotFound,
        RemoteReason::Unprocessable,
    ] {
        match failure(run("github_get_issue", json!({"owner": "o", "repo": "r", "number": 1}))) {
            Some(Failure::Remote { reason: got, .. }) => assert_eq!(got, reason),
            other => panic!("{reason:?}: {other:?}"),
        }
        seen.recv().unwrap();
    }
    match failure(run("github_get_issue", json!({"owner": "o", "repo": "r", "number": 1}))) {
        Some(Failure::RateLimited { reset_at, .. }) => assert_eq!(reset_at, 1_700_000_000),
        other => panic!("{other:?}"),
    }
    seen.recv().unwrap();
    match failure(run("github_get_issue", json!({"owner": "o", "repo": "r", "number": 1}))) {
        Some(Failure::Remote {
            status: 301, message, ..
        }) => assert!(message.contains("http://10.255.0.1/steal"), "{message}"),
        other => panic!("{other:?}"),
    }
    seen.recv().unwrap();

    // Names that would change the path never reach the server.
    for (owner, repo) in [
        ("../admin", "r"),
        ("o", "r/../../x"),
        ("o?x=1", "r"),
        ("", "r"),
        ("..", "r"),
        (".", "r"),
        ("o", ".."),
        ("o", "."),
        ("o", "..."),
    ] {
        let outcome = run("github_get_issue", json!({"owner": owner, "repo": repo, "number": 1}));
        assert!(matches!(outcome, Outcome::InvalidArguments { .. }), "{owner}/{repo}");
    }
    assert!(seen.try_recv().is_err(), "no request was sent for refused names");
}
