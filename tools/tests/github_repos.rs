//! GitHub's MCP server's `repos` toolset against a local server this test starts: each
//! request exactly as GitHub's REST API takes it (several for a commit of many files),
//! each answer trimmed to what a model reads, each refusal made before the write.

mod common;

use kyro_core::Outcome;
use serde_json::{Value, json};

/// The shared harness: a scripted local server and one runtime per call.
#[path = "github/harness.rs"]
mod harness;

use harness::{get, next, ok, request, run, serve};

fn commit(sha: &str) -> Value {
    json!({"sha": sha, "commit": {"message": "Fix it\n\nbody", "author": {"name": "Ann", "date": "2026-01-02T00:00:00Z"}},
           "author": {"login": "ann"}, "html_url": "https://x/c"})
}

fn repo(name: &str) -> Value {
    json!({"full_name": name, "html_url": "https://x/r", "private": true, "default_branch": "main"})
}

fn put(path: &str, body: Value) -> (String, String, Value) {
    ("PUT".into(), path.into(), body)
}

// One test: the base URL comes from this process's environment.
#[test]
fn the_repos_toolset_speaks_githubs_rest() {
    let mut detail = commit("c1");
    detail["stats"] = json!({"additions": 3, "deletions": 1});
    detail["files"] =
        json!([{"filename": "src/a.rs", "status": "modified", "additions": 3, "deletions": 1, "patch": "@@ -1 +1 @@"}]);
    let (base, seen) = serve(vec![
        // get_file_contents: a file, a folder
        (
            200,
            vec![],
            json!({"type": "file", "path": "src/a b.rs", "sha": "b1", "size": 6, "content": "aGVs\nbG8K"}),
        ),
        (
            200,
            vec![],
            json!([{"name": "a.rs", "type": "file", "size": 6}, {"name": "sub", "type": "dir", "size": 0}]),
        ),
        // list_branches, list_tags, list_commits, get_commit
        (
            200,
            next(2),
            json!([{"name": "main", "commit": {"sha": "s1"}, "protected": true}]),
        ),
        (200, vec![], json!([{"name": "v1", "commit": {"sha": "s2"}}])),
        (200, vec![], json!([commit("c1")])),
        (200, vec![], detail),
        // collaborators, releases, latest, by tag, tag (annotated: two requests)
        (200, vec![], json!([{"login": "ann", "role_name": "admin"}])),
        (
            200,
            vec![],
            json!([{"tag_name": "v1", "name": "One", "body": "notes", "draft": false, "prerelease": false,
                               "published_at": "2026-01-03T00:00:00Z", "author": {"login": "ann"}, "html_url": "u",
                               "assets": [{"name": "a.tgz", "size": 10, "browser_download_url": "https://x/a.tgz"}]}]),
        ),
        (
            200,
            vec![],
            json!({"tag_name": "v2", "author": {"login": "bo"}, "assets": [], "draft": false, "prerelease": false,
                   "html_url": "https://x/v2"}),
        ),
        (
            200,
            vec![],
            json!({"tag_name": "v1", "author": {"login": "bo"}, "assets": [], "draft": false, "prerelease": false,
                   "html_url": "https://x/v1"}),
        ),
        (200, vec![], json!({"object": {"type": "tag", "sha": "t1"}})),
        (
            200,
            vec![],
            json!({"message": "Release one", "tagger": {"name": "Ann"}, "object": {"sha": "c9", "type": "commit"}}),
        ),
        // searches
        (
            200,
            vec![],
            json!({"total_count": 1, "items": [{"path": "src/a.rs", "sha": "b1", "repository": {"full_name": "o/r"}}]}),
        ),
        (
            200,
            vec![],
            json!({"total_count": 1, "items": [{"sha": "c1", "commit": {"message": "m", "author": {"name": "Ann", "date": "d"}},
                                                          "author": null, "repository": {"full_name": "o/r"}}]}),
        ),
        (
            200,
            vec![],
            json!({"total_count": 2, "items": [{"full_name": "o/r", "description": null, "language": "Rust",
                                                          "stargazers_count": 5, "html_url": "u"}]}),
        ),
        // create_or_update_file: new (pre-check 404, then PUT), existing without sha (refused)
        (404, vec![], json!({"message": "Not Found"})),
        (
            201,
            vec![],
            json!({"content": {"path": "docs/new.md", "sha": "b2"}, "commit": {"sha": "c2", "html_url": "https://x/c2"}}),
        ),
        (200, vec![], json!({"type": "file", "path": "docs/old.md", "sha": "b3"})),
        // delete_file: its sha, then DELETE
        (200, vec![], json!({"type": "file", "path": "docs/old.md", "sha": "b3"})),
        (
            200,
            vec![],
            json!({"content": null, "commit": {"sha": "c3", "html_url": "https://x/c3"}}),
        ),
        // push_files: ref, commit, tree, commit, ref update
        (200, vec![], json!({"object": {"sha": "h1"}})),
        (200, vec![], json!({"tree": {"sha": "tr1"}})),
        (201, vec![], json!({"sha": "tr2"})),
        (201, vec![], json!({"sha": "c4"})),
        (200, vec![], json!({"object": {"sha": "c4"}})),
        // create_branch from the default branch: repo, ref, new ref
        (200, vec![], repo("o/r")),
        (200, vec![], json!({"object": {"sha": "h1"}})),
        (201, vec![], json!({"ref": "refs/heads/feature"})),
        // create_repository in an org, fork
        (201, vec![], repo("acme/new")),
        (202, vec![], repo("me/r")),
    ]);
    // SAFETY: this binary has this one test; nothing else reads the environment meanwhile.
    unsafe {
        std::env::set_var("KYRO_GITHUB_API_URL", &base);
        std::env::set_var("GITHUB_TOKEN", "t0ken");
    }
    let r = json!({"owner": "o", "repo": "r"});
    let with = |extra: Value| {
        let mut args = r.clone();
        args.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        args
    };

    let file = ok("get_file_contents", with(json!({"path": "/src/a b.rs", "ref": "v1.0"})));
    assert_eq!(
        (file["content"].clone(), file["sha"].clone(), file["kind"].clone()),
        (json!("hello\n"), json!("b1"), json!("file"))
    );
    assert_eq!(request(&seen), get("/repos/o/r/contents/src/a%20b.rs?ref=v1.0"));
    let dir = ok("github_get_file_contents", with(json!({})));
    assert_eq!(dir["entries"][1], json!({"name": "sub", "kind": "dir", "size": 0}));
    assert_eq!(request(&seen), get("/repos/o/r/contents/"));

    let branches = ok("list_branches", with(json!({"perPage": 1})));
    assert_eq!(
        branches["refs"],
        json!([{"name": "main", "sha": "s1", "protected": true}])
    );
    assert_eq!(branches["next_page"], 2);
    assert_eq!(request(&seen), get("/repos/o/r/branches?page=1&per_page=1"));
    ok("list_tags", with(json!({})));
    assert_eq!(request(&seen), get("/repos/o/r/tags?page=1&per_page=30"));
    let commits = ok(
        "list_commits",
        with(json!({"sha": "main", "author": "ann@x.org", "path": "src", "since": "2026-01-01"})),
    );
    assert_eq!(
        commits["commits"][0],
        json!({"sha": "c1", "subject": "Fix it", "author": "Ann", "login": "ann", "date": "2026-01-02T00:00:00Z"})
    );
    assert_eq!(
        request(&seen),
        get("/repos/o/r/commits?page=1&per_page=30&sha=main&author=ann%40x.org&path=src&since=2026-01-01")
    );
    let one = ok("get_commit", with(json!({"sha": "c1", "detail": "full_patch"})));
    assert_eq!(
        (one["additions"].clone(), one["files"][0]["patch"].clone()),
        (json!(3), json!("@@ -1 +1 @@"))
    );
    assert_eq!(request(&seen), get("/repos/o/r/commits/c1"));

    let people = ok("list_repository_collaborators", with(json!({})));
    assert_eq!(people["collaborators"], json!([{"login": "ann", "role": "admin"}]));
    assert_eq!(request(&seen), get("/repos/o/r/collaborators?page=1&per_page=30"));
    let releases = ok("list_releases", with(json!({})));
    assert_eq!(
        releases["releases"][0]["assets"],
        json!([{"name": "a.tgz", "size": 10, "url": "https://x/a.tgz"}])
    );
    assert_eq!(request(&seen), get("/repos/o/r/releases?page=1&per_page=30"));
    assert_eq!(ok("get_latest_release", with(json!({})))["tag_name"], "v2");
    assert_eq!(request(&seen), get("/repos/o/r/releases/latest"));
    ok("get_release_by_tag", with(json!({"tag": "v1"})));
    assert_eq!(request(&seen), get("/repos/o/r/releases/tags/v1"));
    let tag = ok("get_tag", with(json!({"tag": "v1"})));
    assert_eq!(
        tag,
        json!({"tag": "v1", "sha": "c9", "annotated": true, "message": "Release one", "tagger": "Ann"})
    );
    assert_eq!(request(&seen), get("/repos/o/r/git/ref/tags/v1"));
    assert_eq!(request(&seen), get("/repos/o/r/git/tags/t1"));

    let code = ok("search_code", json!({"query": "fn main repo:o/r", "order": "asc"}));
    assert_eq!(
        code["files"],
        json!([{"repository": "o/r", "path": "src/a.rs", "sha": "b1"}])
    );
    assert_eq!(
        request(&seen),
        get("/search/code?q=fn%20main%20repo%3Ao%2Fr&page=1&per_page=30&order=asc")
    );
    let found = ok("search_commits", json!({"query": "fix", "sort": "author-date"}));
    assert_eq!(found["commits"][0]["repository"], "o/r");
    assert_eq!(
        request(&seen),
        get("/search/commits?q=fix&page=1&per_page=30&sort=author-date")
    );
    let repos = ok(
        "search_repositories",
        json!({"query": "kyro language:rust", "sort": "stars"}),
    );
    assert_eq!(repos["repositories"][0]["stars"], 5);
    assert_eq!(
        request(&seen),
        get("/search/repositories?q=kyro%20language%3Arust&page=1&per_page=30&sort=stars")
    );

    // Writes.
    let written = ok(
        "create_or_update_file",
        with(json!({"path": "docs/new.md", "content": "# New | é\n", "message": "Add docs", "branch": "main"})),
    );
    assert_eq!(
        (written["sha"].clone(), written["commit_sha"].clone()),
        (json!("b2"), json!("c2"))
    );
    assert_eq!(request(&seen), get("/repos/o/r/contents/docs/new.md?ref=main"));
    assert_eq!(
        request(&seen),
        put(
            "/repos/o/r/contents/docs/new.md",
            json!({"message": "Add docs", "content": "IyBOZXcgfCDDqQo=", "branch": "main"})
        )
    );
    match run(
        "create_or_update_file",
        with(json!({"path": "docs/old.md", "content": "x", "message": "m", "branch": "main"})),
    ) {
        Outcome::ExecutionFailed { error, .. } => assert!(
            error.to_string().contains("exists on `main` (blob sha b3); pass `sha`"),
            "{error}"
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        request(&seen),
        get("/repos/o/r/contents/docs/old.md?ref=main"),
        "and no PUT followed"
    );
    let deleted = ok(
        "delete_file",
        with(json!({"path": "docs/old.md", "message": "Remove", "branch": "main"})),
    );
    assert_eq!(deleted["commit_sha"], "c3");
    assert_eq!(request(&seen), get("/repos/o/r/contents/docs/old.md?ref=main"));
    assert_eq!(
        request(&seen),
        (
            "DELETE".into(),
            "/repos/o/r/contents/docs/old.md".into(),
            json!({"message": "Remove", "sha": "b3", "branch": "main"})
        )
    );
    let pushed = ok(
        "push_files",
        with(
            json!({"branch": "main", "message": "Two files", "files": [{"path": "a.txt", "content": "A"}, {"path": "b/c.txt", "content": "C"}]}),
        ),
    );
    assert_eq!(pushed["commit_sha"], "c4");
    assert_eq!(request(&seen), get("/repos/o/r/git/ref/heads/main"));
    assert_eq!(request(&seen), get("/repos/o/r/git/commits/h1"));
    assert_eq!(
        request(&seen),
        (
            "POST".into(),
            "/repos/o/r/git/trees".into(),
            json!({"base_tree": "tr1", "tree": [
            {"path": "a.txt", "mode": "100644", "type": "blob", "content": "A"},
            {"path": "b/c.txt", "mode": "100644", "type": "blob", "content": "C"}]})
        )
    );
    assert_eq!(
        request(&seen),
        (
            "POST".into(),
            "/repos/o/r/git/commits".into(),
            json!({"message": "Two files", "tree": "tr2", "parents": ["h1"]})
        )
    );
    assert_eq!(
        request(&seen),
        (
            "PATCH".into(),
            "/repos/o/r/git/refs/heads/main".into(),
            json!({"sha": "c4", "force": false})
        )
    );
    let branch = ok("create_branch", with(json!({"branch": "feature"})));
    assert_eq!(branch, json!({"branch": "feature", "sha": "h1"}));
    assert_eq!(request(&seen), get("/repos/o/r"));
    assert_eq!(request(&seen), get("/repos/o/r/git/ref/heads/main"));
    assert_eq!(
        request(&seen),
        (
            "POST".into(),
            "/repos/o/r/git/refs".into(),
            json!({"ref": "refs/heads/feature", "sha": "h1"})
        )
    );
    let made = ok(
        "create_repository",
        json!({"name": "new", "organization": "acme", "autoInit": true}),
    );
    assert_eq!(made["full_name"], "acme/new");
    assert_eq!(
        request(&seen),
        (
            "POST".into(),
            "/orgs/acme/repos".into(),
            json!({"name": "new", "description": "", "private": true, "auto_init": true})
        )
    );
    let fork = ok("fork_repository", with(json!({})));
    assert_eq!(fork["full_name"], "me/r");
    assert_eq!(request(&seen), ("POST".into(), "/repos/o/r/forks".into(), json!({})));
    // Refused by the schema, before any request: an unknown key in a pushed file, a branch
    // name git would refuse.
    for (tool, args) in [
        (
            "push_files",
            with(json!({"branch": "main", "message": "m", "files": [{"path": "a", "content": "b", "mode": "100755"}]})),
        ),
        ("create_branch", with(json!({"branch": "a b"}))),
    ] {
        assert!(
            matches!(run(tool, args.clone()), Outcome::InvalidArguments { .. }),
            "{tool} {args}"
        );
    }
    assert!(seen.try_recv().is_err(), "no request past those asserted");
}
