//! GitHub's MCP server's `pull_requests` and `actions` toolsets against a local server
//! this test starts: each request exactly as GitHub's REST API (or, for a comment in a
//! pending review, its GraphQL API) takes it, and job logs read from the signed address
//! GitHub redirects to, without the token, under the network policy.

mod common;

use kyro_core::Outcome;
use serde_json::{Value, json};

/// The shared harness: a scripted local server and one runtime per call.
#[path = "github/harness.rs"]
mod harness;

use harness::{failed, get, next, ok, request, run, serve};

fn pr(number: u64) -> Value {
    json!({"number": number, "title": "PR", "state": "open", "body": null, "user": {"login": "bob"},
           "head": {"ref": "feature", "sha": "h1"}, "base": {"ref": "main"}, "merged": false, "draft": true,
           "mergeable_state": "clean", "html_url": "https://x/pr"})
}

fn post(path: &str, body: Value) -> (String, String, Value) {
    ("POST".into(), path.into(), body)
}

// One test: the base URL comes from this process's environment.
#[test]
fn pull_requests_and_actions_speak_githubs_rest() {
    let log: String = (1..=700).map(|n| format!("line {n}\n")).collect();
    // A long log (200,001 lines, about 14 MB) whose last line says why the job failed.
    let failure = "2026-01-02T03:04:59.0000000Z ##[error]Process completed with exit code 101.";
    let mut long: String = (1..=200_000)
        .map(|n| format!("2026-01-02T03:04:05.6789012Z build step output, line {n:06} of the long log\n"))
        .collect();
    long.push_str(failure);
    long.push('\n');
    let (base, seen) = serve(vec![
        // pull_request_read: get (kyro's old name), diff, status (two), reviews
        (200, vec![], pr(3)),
        (200, vec![], json!("diff --git a/x b/x")),
        (200, vec![], pr(3)),
        (
            200,
            vec![],
            json!({"state": "failure", "statuses": [{"context": "ci", "state": "failure", "description": "red"}]}),
        ),
        (
            200,
            next(2),
            json!([{"id": 8, "user": {"login": "ann"}, "state": "APPROVED", "body": "ok", "submitted_at": "t"}]),
        ),
        // list, search
        (200, vec![], json!([pr(3)])),
        (200, vec![], json!({"total_count": 0, "items": []})),
        // create (then reviewers), update (patch, get), update-branch, merge
        (201, vec![], pr(4)),
        (201, vec![], json!({})),
        (200, vec![], pr(4)),
        (200, vec![], pr(4)),
        (
            202,
            vec![],
            json!({"message": "Updating pull request branch.", "url": "u"}),
        ),
        (
            200,
            vec![],
            json!({"merged": true, "sha": "m1", "message": "Pull Request successfully merged"}),
        ),
        // review: create pending; submit (me, reviews, event); delete (me, reviews, delete)
        (
            200,
            vec![],
            json!({"id": 9, "user": {"login": "me"}, "state": "PENDING", "body": ""}),
        ),
        (200, vec![], json!({"login": "me"})),
        (
            200,
            vec![],
            json!([{"id": 5, "user": {"login": "other"}, "state": "PENDING"}, {"id": 9, "user": {"login": "me"}, "state": "PENDING"}]),
        ),
        (
            200,
            vec![],
            json!({"id": 9, "user": {"login": "me"}, "state": "APPROVED", "body": "LGTM"}),
        ),
        (200, vec![], json!({"login": "me"})),
        (
            200,
            vec![],
            json!([{"id": 5, "user": {"login": "other"}, "state": "PENDING"}]),
        ),
        // a comment in the pending review: GraphQL (find it, add the thread)
        (
            200,
            vec![],
            json!({"data": {"viewer": {"login": "me"}, "repository": {"pullRequest": {"reviews": {"nodes": [
            {"id": "PRR_other", "author": {"login": "other"}}, {"id": "PRR_mine", "author": {"login": "me"}}]}}}}}),
        ),
        (
            200,
            vec![],
            json!({"data": {"addPullRequestReviewThread": {"thread": {"id": "PRRT_1"}}}}),
        ),
        // reply
        (201, vec![], json!({"id": 44, "html_url": "https://x/r/44"})),
        // actions: runs (filtered), jobs, get run
        (
            200,
            next(2),
            json!({"total_count": 31, "workflow_runs": [{"id": 77, "name": "CI", "display_title": "Fix", "event": "push",
            "status": "completed", "conclusion": "failure", "head_branch": "main", "head_sha": "h1", "actor": {"login": "ann"}, "html_url": "u"}]}),
        ),
        (
            200,
            vec![],
            json!({"total_count": 2, "jobs": [{"id": 1, "name": "build", "status": "completed", "conclusion": "failure",
            "steps": [{"name": "compile", "conclusion": "failure"}, {"name": "setup", "conclusion": "success"}], "html_url": "u"}]}),
        ),
        (
            200,
            vec![],
            json!({"id": 77, "name": "CI", "actor": {"login": "ann"}, "display_title": "Fix", "event": "push",
                   "status": "completed", "conclusion": "failure", "head_branch": "main", "head_sha": "h1", "html_url": "u"}),
        ),
        // failed job logs: the run's jobs, the job's redirect, the signed address
        (
            200,
            vec![],
            json!({"total_count": 2, "jobs": [{"id": 1, "name": "build", "conclusion": "failure"}, {"id": 2, "name": "lint", "conclusion": "success"}]}),
        ),
        (302, vec![("Location", "/signed/log?sig=abc".into())], json!(null)),
        (
            200,
            vec![("Content-Type", "text/plain".into())],
            Value::String(log.clone()),
        ),
        // one job's long log: the redirect, the signed address
        (302, vec![("Location", "/signed/long?sig=def".into())], json!(null)),
        (
            200,
            vec![("Content-Type", "text/plain".into())],
            Value::String(long.clone()),
        ),
        // a list of workflows that is not a list
        (200, vec![], json!({"total_count": 1, "workflows": {"id": 1}})),
    ]);
    // SAFETY: this binary has this one test; nothing else reads the environment meanwhile.
    unsafe {
        std::env::set_var("KYRO_GITHUB_API_URL", &base);
        std::env::set_var("GITHUB_TOKEN", "t0ken");
    }
    let at = json!({"owner": "o", "repo": "r", "pullNumber": 3});
    let with = |extra: Value| {
        let mut args = at.clone();
        args.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        args
    };

    let got = ok(
        "github_get_pull_request",
        json!({"owner": "o", "repo": "r", "number": 3}),
    );
    assert_eq!(
        (
            got["pull_request"]["head_sha"].clone(),
            got["pull_request"]["draft"].clone()
        ),
        (json!("h1"), json!(true))
    );
    assert_eq!(request(&seen), get("/repos/o/r/pulls/3"));
    let diff = ok("pull_request_read", with(json!({"method": "get_diff"})));
    assert_eq!(diff["diff"], "diff --git a/x b/x");
    let r = seen.recv().unwrap();
    assert_eq!(
        (r.path.as_str(), r.header("accept")),
        ("/repos/o/r/pulls/3", Some("application/vnd.github.diff"))
    );
    let status = ok("pull_request_read", with(json!({"method": "get_status"})));
    assert_eq!(status["status"]["state"], "failure");
    assert_eq!(request(&seen), get("/repos/o/r/pulls/3"));
    assert_eq!(request(&seen), get("/repos/o/r/commits/h1/status"));
    let reviews = ok(
        "pull_request_read",
        with(json!({"method": "get_reviews", "perPage": 1})),
    );
    assert_eq!(
        (reviews["reviews"][0]["state"].clone(), reviews["next_page"].clone()),
        (json!("APPROVED"), json!(2))
    );
    assert_eq!(request(&seen), get("/repos/o/r/pulls/3/reviews?page=1&per_page=1"));

    ok(
        "list_pull_requests",
        json!({"owner": "o", "repo": "r", "state": "all", "base": "main", "sort": "long-running", "direction": "asc"}),
    );
    assert_eq!(
        request(&seen),
        get("/repos/o/r/pulls?state=all&page=1&per_page=30&base=main&sort=long-running&direction=asc")
    );
    ok(
        "search_pull_requests",
        json!({"query": "review:required", "owner": "o", "repo": "r"}),
    );
    assert_eq!(
        request(&seen),
        get("/search/issues?q=is%3Apr%20review%3Arequired%20repo%3Ao%2Fr&page=1&per_page=30")
    );

    let made = ok(
        "create_pull_request",
        json!({"owner": "o", "repo": "r", "title": "New", "head": "feature", "base": "main", "reviewers": ["ann", "acme/core"]}),
    );
    assert_eq!(made["number"], 4);
    assert_eq!(
        request(&seen),
        post(
            "/repos/o/r/pulls",
            json!({"title": "New", "head": "feature", "base": "main", "draft": false, "maintainer_can_modify": false})
        )
    );
    assert_eq!(
        request(&seen),
        post(
            "/repos/o/r/pulls/4/requested_reviewers",
            json!({"reviewers": ["ann"], "team_reviewers": ["core"]})
        )
    );
    ok(
        "update_pull_request",
        json!({"owner": "o", "repo": "r", "pullNumber": 4, "state": "closed"}),
    );
    assert_eq!(
        request(&seen),
        ("PATCH".into(), "/repos/o/r/pulls/4".into(), json!({"state": "closed"}))
    );
    assert_eq!(request(&seen), get("/repos/o/r/pulls/4"));
    let accepted = ok(
        "update_pull_request_branch",
        with(json!({"expectedHeadSha": "a".repeat(40)})),
    );
    assert_eq!(accepted["message"], "Updating pull request branch.");
    assert_eq!(
        request(&seen),
        (
            "PUT".into(),
            "/repos/o/r/pulls/3/update-branch".into(),
            json!({"expected_head_sha": "a".repeat(40)})
        )
    );
    let merged = ok(
        "merge_pull_request",
        with(json!({"merge_method": "squash", "sha": "b".repeat(40)})),
    );
    assert_eq!(merged["sha"], "m1");
    assert_eq!(
        request(&seen),
        (
            "PUT".into(),
            "/repos/o/r/pulls/3/merge".into(),
            json!({"merge_method": "squash", "sha": "b".repeat(40)})
        )
    );

    let pending = ok("pull_request_review_write", with(json!({"method": "create"})));
    assert_eq!(pending["state"], "PENDING");
    assert_eq!(request(&seen), post("/repos/o/r/pulls/3/reviews", json!({})));
    let submitted = ok(
        "pull_request_review_write",
        with(json!({"method": "submit_pending", "event": "APPROVE", "body": "LGTM"})),
    );
    assert_eq!(submitted["state"], "APPROVED");
    assert_eq!(request(&seen), get("/user"));
    assert_eq!(request(&seen), get("/repos/o/r/pulls/3/reviews?per_page=100"));
    assert_eq!(
        request(&seen),
        post(
            "/repos/o/r/pulls/3/reviews/9/events",
            json!({"event": "APPROVE", "body": "LGTM"})
        )
    );
    // Someone else's pending review is not the caller's to delete: refused, nothing deleted.
    match run("pull_request_review_write", with(json!({"method": "delete_pending"}))) {
        Outcome::ExecutionFailed { error, .. } => {
            assert!(error.to_string().contains("me has no pending review here"), "{error}")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(request(&seen), get("/user"));
    assert_eq!(request(&seen), get("/repos/o/r/pulls/3/reviews?per_page=100"));
    let thread = ok(
        "add_comment_to_pending_review",
        with(json!({"path": "src/a.rs", "body": "why?", "subjectType": "LINE", "line": 12, "side": "RIGHT"})),
    );
    assert_eq!(thread["thread_id"], "PRRT_1");
    let (method, path, find) = request(&seen);
    assert_eq!((method.as_str(), path.as_str()), ("POST", "/graphql"));
    assert_eq!(find["variables"], json!({"owner": "o", "repo": "r", "number": 3}));
    let (_, _, add) = request(&seen);
    assert_eq!(
        add["variables"]["input"],
        json!({"pullRequestReviewId": "PRR_mine", "path": "src/a.rs", "body": "why?", "subjectType": "LINE", "line": 12, "side": "RIGHT"})
    );
    let reply = ok(
        "add_reply_to_pull_request_comment",
        with(json!({"commentId": 40, "body": "done"})),
    );
    assert_eq!(reply["id"], 44);
    assert_eq!(
        request(&seen),
        post("/repos/o/r/pulls/3/comments/40/replies", json!({"body": "done"}))
    );
    // Refused before any request.
    for (tool, args, says) in [
        (
            "update_pull_request",
            json!({"owner": "o", "repo": "r", "pullNumber": 4}),
            "give something to change",
        ),
        (
            "pull_request_review_write",
            with(json!({"method": "submit_pending"})),
            "needs an `event`",
        ),
        (
            "add_comment_to_pending_review",
            with(json!({"path": "a", "body": "b", "subjectType": "LINE"})),
            "needs its `line`",
        ),
    ] {
        match run(tool, args.clone()) {
            Outcome::ExecutionFailed { error, .. } => assert!(error.to_string().contains(says), "{tool}: {error}"),
            other => panic!("{tool} {args}: {other:?}"),
        }
    }

    // actions
    let runs = ok(
        "actions_list",
        json!({"method": "list_workflow_runs", "owner": "o", "repo": "r", "resource_id": "ci.yml",
               "workflow_runs_filter": {"branch": "main", "status": "failure"}}),
    );
    assert_eq!(
        (runs["total_count"].clone(), runs["runs"][0]["conclusion"].clone()),
        (json!(31), json!("failure"))
    );
    assert_eq!(
        request(&seen),
        get("/repos/o/r/actions/workflows/ci.yml/runs?page=1&per_page=30&branch=main&status=failure")
    );
    let jobs = ok(
        "actions_list",
        json!({"method": "list_workflow_jobs", "owner": "o", "repo": "r", "resource_id": "77"}),
    );
    assert_eq!(jobs["jobs"][0]["failed_steps"], json!(["compile"]));
    assert_eq!(
        request(&seen),
        get("/repos/o/r/actions/runs/77/jobs?filter=latest&page=1&per_page=30")
    );
    assert_eq!(
        ok(
            "actions_get",
            json!({"method": "get_workflow_run", "owner": "o", "repo": "r", "resource_id": "77"})
        )["run"]["id"],
        77
    );
    assert_eq!(request(&seen), get("/repos/o/r/actions/runs/77"));
    assert!(matches!(
        run(
            "actions_list",
            json!({"method": "list_workflow_jobs", "owner": "o", "repo": "r"})
        ),
        Outcome::ExecutionFailed { .. }
    ));
    // The failed job's log end: the signed address is asked without the token.
    let logs = ok(
        "get_job_logs",
        json!({"owner": "o", "repo": "r", "run_id": 77, "failed_only": true, "tail_lines": 2}),
    );
    assert_eq!(
        logs["logs"],
        json!([{"job_id": 1, "job_name": "build", "content": "line 699\nline 700", "total_lines": 700,
                 "truncated": true, "complete": true, "read_bytes": log.len()}])
    );
    assert_eq!(logs["total_jobs"], 2);
    assert_eq!(
        request(&seen),
        get("/repos/o/r/actions/runs/77/jobs?filter=latest&per_page=100")
    );
    let redirect = seen.recv().unwrap();
    assert_eq!(
        (redirect.path.as_str(), redirect.header("authorization")),
        ("/repos/o/r/actions/jobs/1/logs", Some("Bearer t0ken"))
    );
    let fetched = seen.recv().unwrap();
    assert_eq!(
        (fetched.path.as_str(), fetched.header("authorization")),
        ("/signed/log?sig=abc", None),
        "no token to the signed address"
    );
    // A log longer than any one read is streamed whole: every line counted, the last ones
    // kept, and what was left out said.
    let logs = ok(
        "get_job_logs",
        json!({"owner": "o", "repo": "r", "job_id": 5, "tail_lines": 3}),
    );
    let one = &logs["logs"][0];
    assert!(long.len() > 14_000_000, "{}", long.len());
    assert_eq!(
        one["content"],
        format!(
            "2026-01-02T03:04:05.6789012Z build step output, line 199999 of the long log\n\
             2026-01-02T03:04:05.6789012Z build step output, line 200000 of the long log\n{failure}"
        )
    );
    assert_eq!(
        (
            one["total_lines"].clone(),
            one["truncated"].clone(),
            one["complete"].clone(),
            one["read_bytes"].clone()
        ),
        (json!(200_001), json!(true), json!(true), json!(long.len()))
    );
    assert_eq!(request(&seen), get("/repos/o/r/actions/jobs/5/logs"));
    assert_eq!(request(&seen), get("/signed/long?sig=def"));
    // An answer of another shape is refused, not read as an empty list.
    let (kind, text) = failed(
        "actions_list",
        json!({"method": "list_workflows", "owner": "o", "repo": "r"}),
    );
    assert_eq!(kind, "unexpected_answer", "{text}");
    assert_eq!(request(&seen), get("/repos/o/r/actions/workflows?page=1&per_page=30"));
    assert!(seen.try_recv().is_err(), "no request past those asserted");
}
