//! The git tools against the real `git`: structured results, and every way an argument
//! could become an option refused.

use kyro_tools::Failure;
use std::path::Path;
use std::sync::Arc;

use kyro_core::policy::{ApprovalRule, ApprovalRules};
use kyro_core::{Call, Outcome, Policy, Registry, Runtime, ToolError, Workspace};
use serde_json::{Value, json};

/// Hostile repositories, under the same helpers.
#[path = "git/hostile.rs"]
mod hostile;

fn call(root: &Path, tool: &str, args: Value) -> Outcome {
    let policy = Policy {
        approvals: ApprovalRules::uniform(ApprovalRule::Auto),
        ..Policy::default()
    };
    let registry = Arc::new(Registry::with_catalog(kyro_tools::BUILTINS).unwrap());
    let runtime = Runtime::new(registry, Workspace::new(root).unwrap(), &policy).unwrap();
    let executor = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // git_commit and git_checkout always ask: the test plays the approving human.
    match executor.block_on(runtime.execute_call(Call::new(tool, args.clone()))) {
        Outcome::ApprovalRequired { fingerprint, .. } => executor.block_on(
            runtime
                .execute_call(Call::new(tool, args).approved(kyro_core::ApprovalToken::for_fingerprint(&fingerprint))),
        ),
        other => other,
    }
}

fn ok(root: &Path, tool: &str, args: Value) -> Value {
    match call(root, tool, args) {
        Outcome::Ok { result, .. } => result,
        other => panic!("{tool}: {other:?}"),
    }
}

fn git_init(dir: &Path) {
    let status = std::process::Command::new("git")
        .args(["init", "--quiet", "--initial-branch=main"])
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .status()
        .unwrap();
    assert!(status.success());
}

fn repo_with_history() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    git_init(ws.path());
    std::fs::write(ws.path().join("a.txt"), "one\ntwo | é\nthree\n").unwrap();
    ok(ws.path(), "git_add", json!({"paths": ["a.txt"]}));
    ok(ws.path(), "git_commit", json!({"message": "first\n\nbody line"}));
    std::fs::write(ws.path().join("a.txt"), "one\nTWO | é\nthree\n").unwrap();
    ok(ws.path(), "git_add", json!({"paths": ["."]}));
    ok(ws.path(), "git_commit", json!({"message": "second"}));
    ws
}

#[test]
fn status_reports_branch_and_every_kind_of_change() {
    let ws = repo_with_history();
    std::fs::write(ws.path().join("a.txt"), "changed\n").unwrap();
    std::fs::write(ws.path().join("new file.txt"), "x").unwrap();
    std::fs::write(ws.path().join("staged.txt"), "s").unwrap();
    ok(ws.path(), "git_add", json!({"paths": ["staged.txt"]}));
    let status = ok(ws.path(), "git_status", json!({}));
    assert_eq!(status["branch"], "main");
    assert_eq!(status["head"].as_str().unwrap().len(), 40);
    let entries: Vec<String> = status["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            format!(
                "{}{} {}",
                e["index"].as_str().unwrap(),
                e["worktree"].as_str().unwrap(),
                e["path"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(entries, [".M a.txt", "A. staged.txt", "?? new file.txt"]);
}

#[test]
fn log_show_diff_and_blame_are_structured() {
    let ws = repo_with_history();
    let log = ok(ws.path(), "git_log", json!({"max_count": 5}));
    let commits = log["commits"].as_array().unwrap();
    assert_eq!(commits.len(), 2);
    assert_eq!(commits[0]["subject"], "second");
    assert_eq!(commits[0]["author"], "kyro");
    let first = commits[1]["sha"].as_str().unwrap().to_owned();
    let shown = ok(ws.path(), "git_show", json!({"revision": first}));
    assert_eq!(shown["message"], "first\n\nbody line");
    assert_eq!(shown["files"][0]["old_path"], Value::Null, "added in the first commit");
    let diff = ok(ws.path(), "git_diff", json!({"base": first, "target": "HEAD"}));
    let hunk = &diff["files"][0]["hunks"][0];
    assert_eq!(hunk["old_start"], 1);
    assert!(hunk["lines"].as_array().unwrap().contains(&json!("+TWO | é")));
    std::fs::write(ws.path().join("a.txt"), "one\nTWO | é\nthree\nfour\n").unwrap();
    let work = ok(ws.path(), "git_diff", json!({"context": 0}));
    assert_eq!(work["files"][0]["hunks"][0]["lines"], json!(["+four"]));
    let blame = ok(
        ws.path(),
        "git_blame",
        json!({"path": "a.txt", "revision": "HEAD", "start_line": 2, "end_line": 3}),
    );
    let lines = blame["lines"].as_array().unwrap();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["content"], "TWO | é");
    assert_eq!(lines[1]["sha"], first);
}

#[test]
fn branches_are_listed_created_switched_and_deleted() {
    let ws = repo_with_history();
    let created = ok(ws.path(), "git_create_branch", json!({"name": "feature/x"}));
    let names: Vec<&str> = created["branches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["feature/x", "main"]);
    let switched = ok(ws.path(), "git_checkout", json!({"branch": "feature/x"}));
    assert_eq!(switched["branch"], "feature/x");
    assert_eq!(ok(ws.path(), "git_status", json!({}))["branch"], "feature/x");
    ok(ws.path(), "git_checkout", json!({"branch": "topic", "create": true}));
    ok(ws.path(), "git_checkout", json!({"branch": "main"}));
    let deleted = ok(ws.path(), "git_delete_branch", json!({"name": "topic"}));
    assert_eq!(deleted["current"], "main");
    assert_eq!(deleted["branches"].as_array().unwrap().len(), 2);
    let listed = ok(ws.path(), "git_branch", json!({}));
    assert_eq!(listed["branches"], deleted["branches"]);
}

#[test]
fn option_shaped_revisions_are_refused_before_git_runs() {
    let ws = repo_with_history();
    let marker = ws.path().join("pwned");
    let upload = format!("--upload-pack=touch {}", marker.display());
    let output = format!("--output={}", marker.display());
    for (tool, args) in [
        ("git_diff", json!({"base": upload})),
        ("git_diff", json!({"base": output})),
        ("git_log", json!({"revision": "-c"})),
        ("git_log", json!({"revision": "--output=/tmp/x"})),
        ("git_show", json!({"revision": "--output=x"})),
        ("git_blame", json!({"path": "a.txt", "revision": "-L1"})),
        ("git_create_branch", json!({"name": "-D"})),
        ("git_create_branch", json!({"name": "x", "start_point": "--orphan"})),
        ("git_delete_branch", json!({"name": "--force"})),
        // The rule that a change names its branch lives in the schema now.
        ("git_create_branch", json!({})),
        ("git_delete_branch", json!({})),
        ("git_branch", json!({"action": "delete", "name": "main"})),
        ("git_checkout", json!({"branch": "--detach"})),
        ("git_checkout", json!({"branch": "a b"})),
    ] {
        let outcome = call(ws.path(), tool, args.clone());
        assert!(
            matches!(outcome, Outcome::InvalidArguments { .. }),
            "{tool} {args}: {outcome:?}"
        );
    }
    assert!(!marker.exists());
}

#[test]
fn paths_after_the_separator_are_never_options() {
    let ws = repo_with_history();
    let marker = ws.path().join("pwned");
    for path in ["--force", "-c", &format!("--output={}", marker.display())] {
        let outcome = call(ws.path(), "git_add", json!({"paths": [path]}));
        assert!(
            matches!(
                &outcome,
                Outcome::ExecutionFailed { error, .. } if matches!(Failure::of(error), Some(Failure::Git { .. }))
            ),
            "{path}: {outcome:?}"
        );
    }
    let log = ok(ws.path(), "git_log", json!({"paths": ["--output=x"]}));
    assert_eq!(log["commits"], json!([]));
    assert!(!marker.exists() && !ws.path().join("x").exists());
}

#[test]
fn hooks_never_run() {
    let ws = repo_with_history();
    let hook = ws.path().join(".git/hooks/pre-commit");
    std::fs::write(
        &hook,
        format!("#!/bin/sh\ntouch {}\n", ws.path().join("hooked").display()),
    )
    .unwrap();
    std::process::Command::new("chmod")
        .args(["+x"])
        .arg(&hook)
        .status()
        .unwrap();
    ok(
        ws.path(),
        "git_commit",
        json!({"message": "empty", "allow_empty": true}),
    );
    assert!(!ws.path().join("hooked").exists());
}

#[test]
fn a_repository_above_the_workspace_is_refused() {
    let outer = tempfile::tempdir().unwrap();
    git_init(outer.path());
    std::fs::create_dir(outer.path().join("inner")).unwrap();
    let outcome = call(&outer.path().join("inner"), "git_status", json!({}));
    assert!(
        matches!(
            outcome,
            Outcome::ExecutionFailed {
                error: ToolError::OutsideWorkspace { .. },
                ..
            }
        ),
        "{outcome:?}"
    );
}

#[test]
fn commit_and_checkout_need_approval_by_default() {
    let ws = repo_with_history();
    let registry = Arc::new(Registry::with_catalog(kyro_tools::BUILTINS).unwrap());
    let runtime = Runtime::new(
        registry,
        Workspace::new(ws.path()).unwrap(),
        &Policy {
            approvals: ApprovalRules {
                write: ApprovalRule::Auto,
                ..ApprovalRules::default()
            },
            ..Policy::default()
        },
    )
    .unwrap();
    let block = |tool: &str, args: Value| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(runtime.execute_call(Call::new(tool, args)))
    };
    assert!(matches!(
        block("git_commit", json!({"message": "m", "allow_empty": true})),
        Outcome::ApprovalRequired { .. }
    ));
    assert!(matches!(
        block("git_checkout", json!({"branch": "main"})),
        Outcome::ApprovalRequired { .. }
    ));
    assert!(matches!(block("git_add", json!({"paths": ["."]})), Outcome::Ok { .. }));
}

/// A call under a policy whose write rule is auto, with no approval given.
fn unapproved(root: &Path, tool: &str, args: Value) -> Outcome {
    let registry = Arc::new(Registry::with_catalog(kyro_tools::BUILTINS).unwrap());
    let policy = Policy {
        approvals: ApprovalRules {
            write: ApprovalRule::Auto,
            ..ApprovalRules::default()
        },
        ..Policy::default()
    };
    let runtime = Runtime::new(registry, Workspace::new(root).unwrap(), &policy).unwrap();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(runtime.execute_call(Call::new(tool, args)))
}

fn git_out(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

#[test]
fn stash_push_list_pop_and_drop_keep_the_changes_and_ask_before_losing_them() {
    let ws = repo_with_history();
    std::fs::write(ws.path().join("a.txt"), "stashed one\n").unwrap();
    std::fs::write(ws.path().join("untracked.txt"), "u").unwrap();
    let pushed = ok(
        ws.path(),
        "git_stash",
        json!({"action": "push", "message": "work in progress", "include_untracked": true}),
    );
    assert_eq!(pushed["stashes"][0]["index"], 0);
    assert!(
        pushed["stashes"][0]["message"]
            .as_str()
            .unwrap()
            .ends_with("work in progress")
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("a.txt")).unwrap(),
        "one\nTWO | é\nthree\n"
    );
    assert!(!ws.path().join("untracked.txt").exists());
    // Nothing left to stash: a typed refusal, no empty stash.
    match unapproved(ws.path(), "git_stash", json!({"action": "push"})) {
        Outcome::ExecutionFailed { error, .. } => assert_eq!(error.kind(), "invalid_request"),
        other => panic!("{other:?}"),
    }
    std::fs::write(ws.path().join("a.txt"), "stashed two\n").unwrap();
    ok(ws.path(), "git_stash", json!({"action": "push"}));
    let listed = ok(ws.path(), "git_stash", json!({"action": "list"}));
    assert_eq!(listed["stashes"].as_array().unwrap().len(), 2);
    // Pop the older one (index 1): its changes come back, the newer stays.
    let popped = ok(ws.path(), "git_stash", json!({"action": "pop", "index": 1}));
    assert_eq!(popped["done"], "popped stash@{1}");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("a.txt")).unwrap(),
        "stashed one\n"
    );
    assert_eq!(std::fs::read_to_string(ws.path().join("untracked.txt")).unwrap(), "u");
    assert_eq!(popped["stashes"].as_array().unwrap().len(), 1);
    match unapproved(ws.path(), "git_stash", json!({"action": "pop", "index": 5})) {
        Outcome::ExecutionFailed { error, .. } => assert!(error.to_string().contains("no stash@{5}: 1 stashes")),
        other => panic!("{other:?}"),
    }
    // A drop loses the stash: asked even where writes are automatic; push and pop were not.
    assert!(matches!(
        unapproved(ws.path(), "git_stash", json!({"action": "drop"})),
        Outcome::ApprovalRequired { .. }
    ));
    assert_eq!(
        git_out(ws.path(), &["stash", "list"]).lines().count(),
        1,
        "nothing dropped unasked"
    );
    let dropped = ok(ws.path(), "git_stash", json!({"action": "drop"}));
    assert_eq!(dropped["stashes"], json!([]));
}

#[test]
fn reset_unstages_freely_and_asks_before_moving_head() {
    let ws = repo_with_history();
    let head = git_out(ws.path(), &["rev-parse", "HEAD"]);
    let first = git_out(ws.path(), &["rev-parse", "HEAD~1"]);
    std::fs::write(ws.path().join("a.txt"), "edited\n").unwrap();
    std::fs::write(ws.path().join("b.txt"), "b").unwrap();
    ok(ws.path(), "git_add", json!({"paths": ["."]}));
    // Unstaging one path: index only, under the write rule (auto here), no approval.
    let reset = match unapproved(ws.path(), "git_reset", json!({"paths": ["b.txt"]})) {
        Outcome::Ok { result, .. } => result,
        other => panic!("{other:?}"),
    };
    assert_eq!(reset["staged"], json!(["a.txt"]));
    assert_eq!(
        (reset["head"].clone(), reset["head_before"].clone()),
        (json!(head), json!(head))
    );
    assert_eq!(std::fs::read_to_string(ws.path().join("a.txt")).unwrap(), "edited\n");
    // Unstaging everything is the same.
    assert!(matches!(
        unapproved(ws.path(), "git_reset", json!({})),
        Outcome::Ok { .. }
    ));
    // Moving HEAD, or a hard reset even to HEAD, is asked, and nothing moves unasked.
    for args in [
        json!({"target": "HEAD~1", "mode": "soft"}),
        json!({"mode": "hard"}),
        json!({"target": "HEAD~1"}),
    ] {
        assert!(
            matches!(
                unapproved(ws.path(), "git_reset", args.clone()),
                Outcome::ApprovalRequired { .. }
            ),
            "{args}"
        );
    }
    assert_eq!(git_out(ws.path(), &["rev-parse", "HEAD"]), head);
    assert_eq!(std::fs::read_to_string(ws.path().join("a.txt")).unwrap(), "edited\n");
    // Approved: a hard reset to the first commit moves HEAD and the work tree.
    let hard = ok(ws.path(), "git_reset", json!({"target": first, "mode": "hard"}));
    assert_eq!(hard["head"], json!(first));
    assert_eq!(
        std::fs::read_to_string(ws.path().join("a.txt")).unwrap(),
        "one\ntwo | é\nthree\n"
    );
    // Paths with another mode: refused before git runs.
    match unapproved(ws.path(), "git_reset", json!({"paths": ["a.txt"], "mode": "soft"})) {
        Outcome::ApprovalRequired { .. } => {}
        other => panic!("{other:?}"),
    }
    match call(ws.path(), "git_reset", json!({"paths": ["a.txt"], "mode": "soft"})) {
        Outcome::ExecutionFailed { error, .. } => assert!(error.to_string().contains("mixed mode only"), "{error}"),
        other => panic!("{other:?}"),
    }
    // A target that reads as an option is refused by the schema.
    assert!(matches!(
        unapproved(ws.path(), "git_reset", json!({"target": "--hard"})),
        Outcome::InvalidArguments { .. }
    ));
}

#[test]
fn tags_are_created_lightweight_or_annotated_and_listed_in_version_order() {
    let ws = repo_with_history();
    let head = git_out(ws.path(), &["rev-parse", "HEAD"]);
    let first = git_out(ws.path(), &["rev-parse", "HEAD~1"]);
    ok(
        ws.path(),
        "git_tag",
        json!({"action": "create", "name": "v1.10", "message": "release 1.10\n\nnotes"}),
    );
    let created = ok(
        ws.path(),
        "git_tag",
        json!({"action": "create", "name": "v1.9", "target": first}),
    );
    assert_eq!(created["created"], "v1.9");
    let tags = ok(ws.path(), "git_tag", json!({"pattern": "v1.*"}));
    assert_eq!(
        tags["tags"],
        json!([
            {"name": "v1.9", "sha": first, "subject": "first", "annotated": false},
            {"name": "v1.10", "sha": head, "subject": "release 1.10", "annotated": true},
        ])
    );
    // An existing tag is never moved.
    match call(ws.path(), "git_tag", json!({"action": "create", "name": "v1.9"})) {
        Outcome::ExecutionFailed { error, .. } => assert!(error.to_string().contains("already exists"), "{error}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(git_out(ws.path(), &["rev-parse", "v1.9"]), first);
    match call(ws.path(), "git_tag", json!({"action": "create"})) {
        Outcome::ExecutionFailed { error, .. } => assert_eq!(error.kind(), "invalid_request"),
        other => panic!("{other:?}"),
    }
}

/// Unstaging everything leaves a merge in progress as it is: a plain `git reset` would
/// drop MERGE_HEAD and the merge message without the approval a HEAD move needs.
#[test]
fn unstaging_everything_keeps_a_merge_in_progress() {
    let ws = repo_with_history();
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@x"])
            .args(args)
            .current_dir(ws.path())
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .unwrap()
    };
    git(&["checkout", "-q", "-b", "side", "HEAD~1"]);
    std::fs::write(ws.path().join("a.txt"), "one\nSIDE\nthree\n").unwrap();
    git(&["commit", "-q", "-am", "side"]);
    git(&["checkout", "-q", "main"]);
    git(&["merge", "side"]);
    assert!(ws.path().join(".git/MERGE_HEAD").exists(), "a conflicted merge");
    assert!(matches!(
        unapproved(ws.path(), "git_reset", json!({})),
        Outcome::Ok { .. }
    ));
    assert!(
        ws.path().join(".git/MERGE_HEAD").exists(),
        "the merge is still in progress"
    );
}

/// A tool's own rule never hands a reviewed call back to the client: under `write =
/// "review"` a stash drop (which `git_stash` itself asks for) waits for an approver too,
/// and nothing is dropped.
#[test]
fn a_tools_own_ask_rule_does_not_loosen_the_policys_review() {
    let ws = repo_with_history();
    let registry = Arc::new(Registry::with_catalog(kyro_tools::BUILTINS).unwrap());
    let policy = Policy {
        approvals: ApprovalRules {
            write: ApprovalRule::Review,
            ..ApprovalRules::default()
        },
        ..Policy::default()
    };
    let store = Arc::new(kyro_core::grants::MemoryApprovalStore::default());
    let runtime = Runtime::new(registry, Workspace::new(ws.path()).unwrap(), &policy)
        .unwrap()
        .with_approval_store(store);
    let run = |args: Value| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(runtime.execute_call(Call::new("git_stash", args)))
    };
    let git = |args: &[&str]| git_out(ws.path(), args);
    std::fs::write(ws.path().join("a.txt"), "keep me\n").unwrap();
    ok(ws.path(), "git_stash", json!({"action": "push", "message": "keep"}));
    assert!(git(&["stash", "list"]).contains("keep"));
    for args in [json!({"action": "list"}), json!({"action": "drop", "index": 0})] {
        let outcome = run(args.clone());
        assert!(
            matches!(outcome, Outcome::ApprovalPending { .. }),
            "{args}: {outcome:?}"
        );
    }
    assert!(git(&["stash", "list"]).contains("keep"), "dropped without a review");
}
