//! GitHub's MCP server's context, issues and users tools, under their names and GitHub's
//! bare names, against a local server this test starts: each request exactly as GitHub's
//! REST API takes it, each answer trimmed to what a model reads, and each refusal made
//! before any request.

mod common;

use kyro_core::Outcome;
use serde_json::{Value, json};

/// The shared harness: a scripted local server and one runtime per call.
#[path = "github/harness.rs"]
mod harness;

use harness::{get, next, ok, request, run, serve};

fn issue(number: u64) -> Value {
    json!({"number": number, "id": 9000 + number, "title": "T", "state": "open", "body": "b",
           "user": {"login": "alice"}, "labels": [], "comments": 0, "html_url": "https://x/i"})
}

// One test: the base URL comes from this process's environment.
#[test]
fn context_issues_and_users_speak_githubs_rest() {
    let (base, seen) = serve(vec![
        (
            200,
            vec![],
            json!({"login": "me", "id": 1, "name": "Me Myself", "email": null, "bio": "",
                              "company": "@acme", "html_url": "https://x/me", "public_repos": 3, "followers": 9}),
        ),
        (
            200,
            next(2),
            json!([{"name": "Core", "slug": "core", "description": "d", "organization": {"login": "acme"}}]),
        ),
        (200, vec![], json!([{"login": "ann"}, {"login": "bo"}])),
        (
            200,
            next(3),
            json!([{"id": 5, "user": {"login": "bo"}, "body": "hi", "created_at": "2026-01-01T00:00:00Z", "html_url": "u"}]),
        ),
        (200, vec![], json!([issue(11)])),
        (
            200,
            vec![],
            json!([{"name": "bug", "color": "d73a4a", "description": "Broken"}]),
        ),
        (201, vec![], issue(12)),
        (200, vec![], issue(12)),
        (201, vec![], json!({"id": 77, "html_url": "https://x/c/77"})),
        (200, next(2), json!([issue(13)])),
        (200, next(4), json!({"total_count": 41, "items": [issue(14)]})),
        (
            200,
            vec![],
            json!({"name": "good first issue", "color": "7057ff", "description": "Easy"}),
        ),
        (201, vec![], issue(1)),
        (200, vec![], issue(1)),
        (200, vec![], issue(1)),
        (
            200,
            vec![],
            json!([{"id": 3, "name": "Bug", "description": "Something broken"}]),
        ),
        (
            200,
            vec![],
            json!({"total_count": 1, "items": [{"login": "ann", "type": "User", "html_url": "https://x/ann"}]}),
        ),
    ]);
    // SAFETY: this binary has this one test; nothing else reads the environment meanwhile.
    unsafe {
        std::env::set_var("KYRO_GITHUB_API_URL", &base);
        std::env::set_var("GITHUB_TOKEN", "t0ken");
    }

    // context
    let me = ok("get_me", json!({}));
    assert_eq!(
        (me["login"].clone(), me["name"].clone(), me["bio"].clone()),
        (json!("me"), json!("Me Myself"), json!(null))
    );
    assert_eq!(request(&seen), get("/user"));
    let teams = ok("github_get_teams", json!({"perPage": 2}));
    assert_eq!(
        teams["teams"],
        json!([{"org": "acme", "slug": "core", "name": "Core", "description": "d"}])
    );
    assert_eq!(teams["next_page"], 2);
    assert_eq!(request(&seen), get("/user/teams?page=1&per_page=2"));
    let members = ok("get_team_members", json!({"org": "acme", "team_slug": "core"}));
    assert_eq!(members["members"], json!(["ann", "bo"]));
    assert_eq!(request(&seen), get("/orgs/acme/teams/core/members?page=1&per_page=30"));

    // issues: read by method
    let at = json!({"owner": "o", "repo": "r", "issue_number": 7});
    let with = |extra: Value| {
        let mut args = at.clone();
        args.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        args
    };
    let comments = ok(
        "issue_read",
        with(json!({"method": "get_comments", "page": 2, "perPage": 1})),
    );
    assert_eq!(comments["comments"][0]["author"], "bo");
    assert_eq!(
        (comments["next_page"].clone(), comments["issue"].clone()),
        (json!(3), json!(null))
    );
    assert_eq!(request(&seen), get("/repos/o/r/issues/7/comments?page=2&per_page=1"));
    let subs = ok("github_issue_read", with(json!({"method": "get_sub_issues"})));
    assert_eq!(subs["sub_issues"][0]["id"], 9011);
    assert_eq!(request(&seen), get("/repos/o/r/issues/7/sub_issues?page=1&per_page=30"));
    let labels = ok("github_issue_read", with(json!({"method": "get_labels"})));
    assert_eq!(
        labels["labels"],
        json!([{"name": "bug", "color": "d73a4a", "description": "Broken"}])
    );
    assert_eq!(request(&seen), get("/repos/o/r/issues/7/labels?page=1&per_page=30"));

    // issues: write (kyro's old name creates; update sends only what changes)
    ok(
        "github_create_issue",
        json!({"owner": "o", "repo": "r", "title": "New", "labels": ["x"], "type": "Bug"}),
    );
    assert_eq!(
        request(&seen),
        (
            "POST".into(),
            "/repos/o/r/issues".into(),
            json!({"title": "New", "labels": ["x"], "type": "Bug"})
        )
    );
    ok(
        "issue_write",
        with(json!({"method": "update", "state": "closed", "state_reason": "not_planned"})),
    );
    assert_eq!(
        request(&seen),
        (
            "PATCH".into(),
            "/repos/o/r/issues/7".into(),
            json!({"state": "closed", "state_reason": "not_planned"})
        )
    );
    let comment = ok("add_issue_comment", with(json!({"body": "thanks | é"})));
    assert_eq!(comment["id"], 77);
    assert_eq!(
        request(&seen),
        (
            "POST".into(),
            "/repos/o/r/issues/7/comments".into(),
            json!({"body": "thanks | é"})
        )
    );
    // Refused before any request: what GitHub would refuse, said clearly.
    for (tool, args, says) in [
        (
            "issue_write",
            json!({"owner": "o", "repo": "r"}),
            "create needs a `title`",
        ),
        (
            "issue_write",
            with(json!({"method": "update"})),
            "update needs a field to change",
        ),
        (
            "issue_write",
            json!({"owner": "o", "repo": "r", "method": "update", "title": "x"}),
            "update needs the `issue_number`",
        ),
        (
            "issue_write",
            with(json!({"title": "x", "state": "closed"})),
            "create takes no",
        ),
        (
            "sub_issue_write",
            with(json!({"method": "reprioritize", "sub_issue_id": 2})),
            "one of `after_id` or `before_id`",
        ),
    ] {
        match run(tool, args.clone()) {
            Outcome::ExecutionFailed { error, .. } => {
                assert_eq!(error.kind(), "invalid_request", "{tool} {args}");
                assert!(error.to_string().contains(says), "{tool} {args}: {error}");
            }
            other => panic!("{tool} {args}: {other:?}"),
        }
    }
    assert!(matches!(
        run("issue_read", json!({"owner": "../x", "repo": "r", "issue_number": 1})),
        Outcome::InvalidArguments { .. }
    ));

    // issues: list, search, labels, sub-issues, types
    let page = ok("list_issues", json!({"owner": "o", "repo": "r", "perPage": 2}));
    assert_eq!(page["next_page"], 2);
    assert_eq!(request(&seen), get("/repos/o/r/issues?state=open&page=1&per_page=2"));
    let found = ok(
        "search_issues",
        json!({"query": "crash label:bug", "owner": "o", "repo": "r", "sort": "updated", "order": "asc", "page": 3}),
    );
    assert_eq!(
        (found["total_count"].clone(), found["next_page"].clone()),
        (json!(41), json!(4))
    );
    assert_eq!(
        request(&seen),
        get(
            "/search/issues?q=crash%20label%3Abug%20is%3Aissue%20repo%3Ao%2Fr&page=3&per_page=30&sort=updated&order=asc"
        )
    );
    let label = ok(
        "get_label",
        json!({"owner": "o", "repo": "r", "name": "good first issue"}),
    );
    assert_eq!(label["description"], "Easy");
    assert_eq!(request(&seen), get("/repos/o/r/labels/good%20first%20issue"));
    ok(
        "sub_issue_write",
        with(json!({"method": "add", "sub_issue_id": 9011, "replace_parent": true})),
    );
    assert_eq!(
        request(&seen),
        (
            "POST".into(),
            "/repos/o/r/issues/7/sub_issues".into(),
            json!({"sub_issue_id": 9011, "replace_parent": true})
        )
    );
    ok(
        "sub_issue_write",
        with(json!({"method": "remove", "sub_issue_id": 9011})),
    );
    assert_eq!(
        request(&seen),
        (
            "DELETE".into(),
            "/repos/o/r/issues/7/sub_issue".into(),
            json!({"sub_issue_id": 9011})
        )
    );
    ok(
        "sub_issue_write",
        with(json!({"method": "reprioritize", "sub_issue_id": 9011, "after_id": 9012})),
    );
    assert_eq!(
        request(&seen),
        (
            "PATCH".into(),
            "/repos/o/r/issues/7/sub_issues/priority".into(),
            json!({"sub_issue_id": 9011, "after_id": 9012})
        )
    );
    let types = ok("list_issue_types", json!({"owner": "acme"}));
    assert_eq!(
        types["types"],
        json!([{"id": 3, "name": "Bug", "description": "Something broken"}])
    );
    assert_eq!(request(&seen), get("/orgs/acme/issue-types"));

    // users
    let users = ok("search_users", json!({"query": "location:Lisbon", "sort": "followers"}));
    assert_eq!(
        users["users"],
        json!([{"login": "ann", "kind": "User", "html_url": "https://x/ann"}])
    );
    assert_eq!(
        request(&seen),
        get("/search/users?q=type%3Auser%20location%3ALisbon&page=1&per_page=30&sort=followers")
    );
    assert!(seen.try_recv().is_err(), "no request past those asserted");
}
