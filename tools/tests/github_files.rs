//! GitHub's file tools against a local server this test starts, where GitHub's answers
//! are not the plain case: a file over 1 MB (its content left out, read through its
//! blob), a content that is not base64, a sha in an answer that is not a sha, answers of
//! another shape, and paths with `.` or `..` segments (refused before any request).

mod common;

use base64::Engine;
use base64::prelude::BASE64_STANDARD;
use kyro_core::Outcome;
use serde_json::{Value, json};

/// The shared harness: a scripted local server and one runtime per call.
#[path = "github/harness.rs"]
mod harness;

use harness::{failed, get, ok, request_soon, run, serve};

const BIG_SHA: &str = "3b18e512dba79e4c8300dd08aeb37f8e728b8dad";

/// Base64 as GitHub sends it: a line break every 60 characters.
fn github_base64(bytes: &[u8]) -> String {
    let encoded = BASE64_STANDARD.encode(bytes);
    encoded
        .as_bytes()
        .chunks(60)
        .map(|c| format!("{}\n", std::str::from_utf8(c).unwrap()))
        .collect()
}

// One test: the base URL comes from this process's environment.
#[test]
fn file_tools_read_whole_contents_encode_answers_and_refuse_dot_segments() {
    let big: String = (1..=120_000).map(|n| format!("line {n}\n")).collect();
    assert!(big.len() > 1_000_000);
    let (base, seen) = serve(vec![
        // get_file_contents of a file over 1 MB: GitHub leaves its content out; its blob
        (
            200,
            vec![],
            json!({"type": "file", "name": "big.txt", "path": "data/big.txt", "sha": BIG_SHA, "size": big.len(),
                   "content": "", "encoding": "none"}),
        ),
        (
            200,
            vec![],
            json!({"sha": BIG_SHA, "node_id": "B_1", "size": big.len(), "url": "u",
                   "content": github_base64(big.as_bytes()), "encoding": "base64"}),
        ),
        // a content that is not base64
        (
            200,
            vec![],
            json!({"type": "file", "name": "bad.txt", "path": "bad.txt", "sha": "b".repeat(40), "size": 5,
                   "content": "!!not base64!!", "encoding": "base64"}),
        ),
        // a path with a dot-led segment
        (
            200,
            vec![],
            json!({"type": "file", "name": "ci.yml", "path": ".github/workflows/ci.yml", "sha": "c".repeat(40),
                   "size": 9, "content": "b246IHB1c2gK\n", "encoding": "base64"}),
        ),
        // push_files: a branch whose sha is not a sha; the commit it names is not found
        (
            200,
            vec![],
            json!({"ref": "refs/heads/main", "node_id": "R_1", "url": "u", "object": {"sha": "../../x?y", "type": "commit", "url": "u"}}),
        ),
        (404, vec![], json!({"message": "Not Found"})),
        // create_or_update_file: not there, then an answer without the file or the commit
        (404, vec![], json!({"message": "Not Found"})),
        (201, vec![], json!({})),
        // list_branches: an object where a list was expected
        (200, vec![], json!({"name": "main", "commit": {"sha": "s1"}})),
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

    // Over 1 MB: the content comes whole from the blob, never empty.
    let file = ok("get_file_contents", with(json!({"path": "data/big.txt"})));
    assert_eq!(
        (file["sha"].clone(), file["size"].clone()),
        (json!(BIG_SHA), json!(big.len()))
    );
    assert!(
        file["content"] == big.as_str(),
        "the content is not the file's whole text"
    );
    assert_eq!(request_soon(&seen), get("/repos/o/r/contents/data/big.txt"));
    assert_eq!(request_soon(&seen), get(&format!("/repos/o/r/git/blobs/{BIG_SHA}")));

    // A content that does not decode is a typed failure, not an empty text.
    let (kind, text) = failed("get_file_contents", with(json!({"path": "bad.txt"})));
    assert_eq!(kind, "unexpected_answer", "{text}");
    assert!(text.contains("not valid base64"), "{text}");
    assert_eq!(request_soon(&seen), get("/repos/o/r/contents/bad.txt"));

    let ci = ok("get_file_contents", with(json!({"path": ".github/workflows/ci.yml"})));
    assert_eq!(ci["content"], "on: push\n");
    assert_eq!(request_soon(&seen), get("/repos/o/r/contents/.github/workflows/ci.yml"));

    // A sha from an answer goes into the next path encoded: one segment, no query.
    let (kind, _) = failed(
        "push_files",
        with(json!({"branch": "main", "message": "m", "files": [{"path": "a.txt", "content": "A"}]})),
    );
    assert_eq!(kind, "remote");
    assert_eq!(request_soon(&seen), get("/repos/o/r/git/ref/heads/main"));
    assert_eq!(request_soon(&seen), get("/repos/o/r/git/commits/..%2F..%2Fx%3Fy"));

    // Answers of another shape are refused.
    let (kind, text) = failed(
        "create_or_update_file",
        with(json!({"path": "docs/new.md", "content": "x", "message": "m", "branch": "main"})),
    );
    assert_eq!(kind, "unexpected_answer", "{text}");
    assert_eq!(request_soon(&seen), get("/repos/o/r/contents/docs/new.md?ref=main"));
    assert_eq!(request_soon(&seen).1, "/repos/o/r/contents/docs/new.md");
    let (kind, text) = failed("list_branches", with(json!({})));
    assert_eq!(kind, "unexpected_answer", "{text}");
    assert!(text.contains("a list was expected"), "{text}");
    assert_eq!(request_soon(&seen), get("/repos/o/r/branches?page=1&per_page=30"));

    // `.` and `..` segments (and, where a file is written, empty ones and a leading `/`)
    // are refused by the schema, before any request.
    let write = |path: &str| json!({"path": path, "content": "x", "message": "m", "branch": "main"});
    let push = |path: &str| json!({"branch": "main", "message": "m", "files": [{"path": path, "content": "x"}]});
    let delete = |path: &str| json!({"path": path, "message": "m", "branch": "main"});
    let mut refused = vec![];
    for path in ["..", "a/../b", ".", "./a", "a/.", "../x", "a/.."] {
        refused.push(("get_file_contents", with(json!({"path": path}))));
        refused.push(("list_commits", with(json!({"path": path}))));
        refused.push(("create_or_update_file", with(write(path))));
        refused.push(("delete_file", with(delete(path))));
        refused.push(("push_files", with(push(path))));
    }
    for path in ["/a", "a//b", "a/", ""] {
        refused.push(("create_or_update_file", with(write(path))));
        refused.push(("delete_file", with(delete(path))));
        refused.push(("push_files", with(push(path))));
    }
    for (tool, args) in refused {
        assert!(
            matches!(run(tool, args.clone()), Outcome::InvalidArguments { .. }),
            "{tool} {args}"
        );
    }
    assert!(
        seen.recv_timeout(std::time::Duration::from_millis(200)).is_err(),
        "no request past those asserted"
    );
}
