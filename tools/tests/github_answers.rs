//! A successful status is not a successful answer: a 2xx whose body is not the JSON the
//! tool expects (an HTML proxy page, an empty or truncated body, JSON of another shape, a
//! list that is not a list, a search without its items) is an `unexpected_answer`
//! failure naming what came back, never a result of zeros and empty strings.

mod common;

use std::sync::Mutex;
use std::sync::mpsc;

use kyro_core::Outcome;
use kyro_tools::Failure;
use serde_json::{Value, json};

/// The shared harness: one runtime per call under a policy allowing loopback.
#[path = "github/harness.rs"]
mod harness;

use common::Request as Seen;
use harness::{failure, ok, run};

/// A scripted answer: status, content type, body as sent.
type Scripted = (u16, &'static str, String);

/// Serves `answers` in order, each with its own content type (the harness's sends JSON's).
fn serve(answers: Vec<Scripted>) -> (String, mpsc::Receiver<Seen>) {
    let (tx, rx) = mpsc::channel();
    let script = Mutex::new((answers.into_iter(), tx));
    let base = common::serve(move |request| {
        let mut script = script.lock().unwrap();
        let (status, content_type, body) = script.0.next().expect("a request past the scripted answers");
        script.1.send(request).unwrap();
        (status, vec![("Content-Type".to_owned(), content_type.to_owned())], body)
    });
    (base, rx)
}

const JSON: &str = "application/json";

/// The message of an `unexpected_answer` failure; anything else fails the test.
fn unexpected(outcome: Outcome, case: &str) -> String {
    match failure(&outcome) {
        Some(Failure::UnexpectedAnswer { service, message, .. }) => {
            assert_eq!(service, "github", "{case}");
            message
        }
        _ => panic!("{case}: an unexpected_answer was expected, got {outcome:?}"),
    }
}

fn issue(number: u64) -> Value {
    json!({"number": number, "id": 100 + number, "title": "New", "state": "open", "body": null,
           "user": {"login": "ann"}, "labels": [{"name": "bug"}], "comments": 0, "html_url": "https://x/i"})
}

// One test: the base URL comes from this process's environment.
#[test]
fn answers_of_another_shape_are_typed_failures() {
    let html = "<html><head><title>502 Bad Gateway</title></head><body>proxy</body></html>";
    let (base, seen) = serve(vec![
        // merge: an HTML proxy page, the wrong shape, nothing, then a merge
        (200, "text/html", html.into()),
        (200, JSON, "{}".into()),
        (200, JSON, String::new()),
        (
            200,
            JSON,
            json!({"merged": true, "sha": "m1", "message": "Pull Request successfully merged"}).to_string(),
        ),
        // issue create: no number, a truncated body, then an issue
        (201, JSON, json!({"id": 1}).to_string()),
        (201, JSON, r#"{"number": 5, "tit"#.into()),
        (201, JSON, issue(5).to_string()),
        // get_me: nested past any parser's depth
        (200, JSON, "[".repeat(10_000)),
        // a list answered with an object, then with an item of another shape
        (200, JSON, json!({"message": "ok"}).to_string()),
        (200, JSON, json!([issue(1), {"id": 2}]).to_string()),
        // a search without its items
        (200, JSON, json!({"total_count": 3}).to_string()),
        // GraphQL without its data
        (200, JSON, json!({"data": null}).to_string()),
    ]);
    // SAFETY: this binary has this one test; nothing else reads the environment meanwhile.
    unsafe {
        std::env::set_var("KYRO_GITHUB_API_URL", &base);
        std::env::set_var("GITHUB_TOKEN", "t0ken");
    }
    let merge = json!({"owner": "o", "repo": "r", "pull_number": 3});
    let create = json!({"owner": "o", "repo": "r", "method": "create", "title": "New"});

    let message = unexpected(run("github_merge_pull_request", merge.clone()), "merge: HTML");
    assert!(
        message.contains("text/html") && message.contains("502 Bad Gateway"),
        "{message}"
    );
    let message = unexpected(run("github_merge_pull_request", merge.clone()), "merge: {}");
    assert!(
        message.contains("missing field `merged`") && message.contains("{}"),
        "{message}"
    );
    let message = unexpected(run("github_merge_pull_request", merge.clone()), "merge: empty");
    assert!(message.contains("empty body"), "{message}");
    let merged = ok("github_merge_pull_request", merge);
    assert_eq!(
        merged,
        json!({"merged": true, "sha": "m1", "message": "Pull Request successfully merged"})
    );

    let message = unexpected(run("github_issue_write", create.clone()), "create: no number");
    assert!(
        message.contains("missing field `number`") && message.contains(r#"{"id":1}"#),
        "{message}"
    );
    let message = unexpected(run("github_issue_write", create.clone()), "create: truncated");
    assert!(message.contains("JSON was expected"), "{message}");
    let made = ok("github_issue_write", create);
    assert_eq!(
        (
            made["number"].clone(),
            made["id"].clone(),
            made["title"].clone(),
            made["body"].clone(),
            made["labels"].clone()
        ),
        (json!(5), json!(105), json!("New"), json!(""), json!(["bug"]))
    );

    let message = unexpected(run("github_get_me", json!({})), "get_me: nested");
    assert!(message.contains("recursion limit"), "{message}");

    let list = json!({"owner": "o", "repo": "r"});
    let message = unexpected(run("github_list_issues", list.clone()), "list: an object");
    assert!(
        message.contains("a list was expected") && message.contains(r#"{"message":"ok"}"#),
        "{message}"
    );
    let message = unexpected(run("github_list_issues", list), "list: an item without its number");
    assert!(message.contains("missing field `number`"), "{message}");

    let message = unexpected(
        run("github_search_issues", json!({"query": "crash"})),
        "search: no items",
    );
    assert!(message.contains("missing field `items`"), "{message}");

    let message = unexpected(
        run(
            "github_add_comment_to_pending_review",
            json!({"owner": "o", "repo": "r", "pull_number": 3, "path": "a.rs", "body": "b", "subject_type": "FILE"}),
        ),
        "graphql: no data",
    );
    assert!(message.contains("GraphQL data was null"), "{message}");

    // Each case was one request, and no call sent another.
    assert_eq!(seen.try_iter().count(), 12);
}
