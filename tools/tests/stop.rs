//! Work told to stop stops: a walk, a search, a git command and a state query end when
//! the call's caller gives up, and the receipt says the work stopped.

use std::path::Path;
use std::sync::Arc;

use kyro_core::policy::{ApprovalRule, ApprovalRules, Limits};
use kyro_core::{Call, Execution, Outcome, Policy, Registry, Runtime, Workspace};
use serde_json::{Value, json};

fn run(root: &Path, timeout_ms: u64, tool: &str, args: Value) -> Execution {
    let policy = Policy {
        approvals: ApprovalRules::uniform(ApprovalRule::Auto),
        limits: Limits {
            timeout_ms,
            ..Limits::default()
        },
        ..Policy::default()
    };
    let registry = Arc::new(Registry::with_catalog(kyro_tools::BUILTINS).unwrap());
    let runtime = Runtime::new(registry, Workspace::new(root).unwrap(), &policy).unwrap();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(runtime.execute_in(Call::new(tool, args), runtime.scope(), None))
}

/// A tree of 1,000 files.
fn big_tree(root: &Path) {
    let line = "nothing to see here, move along please\n".repeat(200);
    for d in 0..10 {
        let dir = root.join(format!("d{d:02}"));
        std::fs::create_dir(&dir).unwrap();
        for f in 0..100 {
            std::fs::write(dir.join(format!("f{f:03}.txt")), &line).unwrap();
        }
    }
}

#[test]
fn a_search_past_its_limit_stops_walking_and_searching() {
    let ws = tempfile::tempdir().unwrap();
    big_tree(ws.path());
    let whole = run(ws.path(), 60_000, "grep", json!({"pattern": "needle[0-9]+x?y*z"}));
    assert!(matches!(whole.outcome, Outcome::Ok { .. }), "{:?}", whole.outcome);
    assert_eq!(whole.receipt.work_stopped, None);
    let stopped = run(ws.path(), 1, "grep", json!({"pattern": "needle[0-9]+x?y*z"}));
    assert!(
        matches!(stopped.outcome, Outcome::TimedOut { .. }),
        "{:?}",
        stopped.outcome
    );
    assert_eq!(stopped.receipt.work_stopped, Some(true));
    let listed = run(ws.path(), 1, "directory_tree", json!({"path": ".", "max_depth": 5}));
    assert!(
        matches!(listed.outcome, Outcome::TimedOut { .. } | Outcome::Ok { .. }),
        "{:?}",
        listed.outcome
    );
}
