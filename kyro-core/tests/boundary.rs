//! Adversarial tests of the call boundary: paths, approvals, scopes, receipts and limits.
//! Each would fail if the rule it names were removed.

mod common;

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use common::{block_on, execute, recorded, run, runtime_in};
use kyro_core::policy::{
    Access, ApprovalRule, ApprovalRules, Limits, PathDenial, RootSpec, Scope, ScopeError, ScopeRequest,
};
use kyro_core::receipt::{CanonicalCall, Decision, Denial, JsonlReceiptLog, ObservedEffect, Observer, Receipt};
use kyro_core::{ApprovalToken, Call, Capability, Outcome, OutcomeKind, Policy, ToolError, sha256_hex};
use serde_json::{Value, json};

/// A workspace `root` inside a parent holding `root-evil/secret` and `outside/secret`.
struct Tree {
    _parent: tempfile::TempDir,
    parent: PathBuf,
    root: PathBuf,
}

fn tree() -> Tree {
    let parent = tempfile::tempdir().unwrap();
    let base = parent.path().canonicalize().unwrap();
    let root = base.join("root");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::write(root.join(".git/config"), "[core]").unwrap();
    std::fs::write(root.join("inside.txt"), "inside").unwrap();
    std::fs::create_dir_all(base.join("root-evil")).unwrap();
    std::fs::write(base.join("root-evil/secret"), "evil").unwrap();
    std::fs::create_dir_all(base.join("outside")).unwrap();
    std::fs::write(base.join("outside/secret"), "secret").unwrap();
    Tree {
        _parent: parent,
        parent: base,
        root,
    }
}

fn rules(write: ApprovalRule) -> ApprovalRules {
    ApprovalRules {
        write,
        ..ApprovalRules::default()
    }
}

/// Writes allowed without approval, so only confinement decides.
fn open_policy() -> Policy {
    Policy {
        approvals: rules(ApprovalRule::Auto),
        ..Policy::default()
    }
}

fn path_denial(outcome: &Outcome) -> PathDenial {
    match outcome {
        Outcome::Denied {
            reason: Denial::Path { reason, .. },
            ..
        } => reason.clone(),
        other => panic!("expected a path denial, got {other:?}"),
    }
}

fn touch(t: &Tree, path: &str) -> Outcome {
    run(
        &runtime_in(&t.root, &open_policy()),
        "touch",
        json!({"path": path, "content": "x"}),
    )
}

fn peek(t: &Tree, path: &str) -> Outcome {
    run(&runtime_in(&t.root, &open_policy()), "peek", json!({"paths": [path]}))
}

fn assert_nothing_ran(root: &Path, before: u64) {
    assert_eq!(recorded(root), before, "the executor ran for a refused call");
}

// ---- paths ----------------------------------------------------------------------------

#[test]
fn dot_dot_cannot_climb_out() {
    let t = tree();
    let before = recorded(&t.root);
    for path in [
        "../outside/secret",
        "sub/../../outside/secret",
        "./../root-evil/secret",
        "sub/../..",
    ] {
        assert_eq!(path_denial(&peek(&t, path)), PathDenial::OutsideRoots, "{path}");
    }
    assert_nothing_ran(&t.root, before);
}

#[test]
fn an_absolute_path_outside_every_root_is_refused() {
    let t = tree();
    for path in ["/etc/passwd", "/", t.parent.join("outside/secret").to_str().unwrap()] {
        assert_eq!(path_denial(&peek(&t, path)), PathDenial::OutsideRoots, "{path}");
    }
}

#[test]
fn a_sibling_sharing_the_root_prefix_is_not_inside() {
    let t = tree();
    let evil = t.parent.join("root-evil/secret");
    assert_eq!(path_denial(&peek(&t, evil.to_str().unwrap())), PathDenial::OutsideRoots);
    assert_eq!(
        path_denial(&touch(&t, evil.to_str().unwrap())),
        PathDenial::OutsideRoots
    );
    assert_eq!(std::fs::read_to_string(&evil).unwrap(), "evil");
}

#[test]
fn an_absolute_path_inside_the_root_is_accepted() {
    let t = tree();
    let inside = t.root.join("inside.txt");
    let outcome = peek(&t, inside.to_str().unwrap());
    assert!(matches!(outcome, Outcome::Ok { .. }), "{outcome:?}");
}

#[test]
fn a_symlink_to_an_outside_file_is_refused_for_reading_and_writing() {
    let t = tree();
    symlink(t.parent.join("outside/secret"), t.root.join("link")).unwrap();
    assert_eq!(path_denial(&peek(&t, "link")), PathDenial::OutsideRoots);
    assert_eq!(path_denial(&touch(&t, "link")), PathDenial::OutsideRoots);
    assert_eq!(
        std::fs::read_to_string(t.parent.join("outside/secret")).unwrap(),
        "secret"
    );
}

#[test]
fn a_symlinked_directory_pointing_out_is_refused_below_it() {
    let t = tree();
    symlink(t.parent.join("outside"), t.root.join("out")).unwrap();
    assert_eq!(path_denial(&peek(&t, "out/secret")), PathDenial::OutsideRoots);
    assert_eq!(path_denial(&touch(&t, "out/new.txt")), PathDenial::OutsideRoots);
    assert!(!t.parent.join("outside/new.txt").exists());
}

#[test]
fn a_relative_symlink_climbing_out_is_refused() {
    let t = tree();
    symlink("../../outside/secret", t.root.join("sub/rel")).unwrap();
    assert_eq!(path_denial(&peek(&t, "sub/rel")), PathDenial::OutsideRoots);
}

#[test]
fn a_dangling_symlink_is_not_written_through() {
    let t = tree();
    symlink(t.parent.join("outside/created-by-attack"), t.root.join("dangling")).unwrap();
    assert_eq!(path_denial(&touch(&t, "dangling")), PathDenial::OutsideRoots);
    assert!(!t.parent.join("outside/created-by-attack").exists());
}

#[test]
fn a_symlink_that_stays_inside_is_followed() {
    let t = tree();
    symlink("inside.txt", t.root.join("alias")).unwrap();
    symlink("sub", t.root.join("subalias")).unwrap();
    let outcome = peek(&t, "alias");
    assert_eq!(
        outcome,
        Outcome::Ok {
            tool: "peek".into(),
            result: json!({"contents": ["inside"]}),
            text: None,
        }
    );
    assert!(matches!(touch(&t, "subalias/new.txt"), Outcome::Ok { .. }));
    assert!(t.root.join("sub/new.txt").exists());
}

#[test]
fn git_and_kyro_directories_are_read_only_inside_a_writable_root() {
    let t = tree();
    assert_eq!(path_denial(&touch(&t, ".git/config")), PathDenial::Protected);
    assert_eq!(path_denial(&touch(&t, ".git/hooks/pre-commit")), PathDenial::Protected);
    assert_eq!(path_denial(&touch(&t, ".kyro/receipts.jsonl")), PathDenial::Protected);
    assert_eq!(path_denial(&touch(&t, "sub/../.git/config")), PathDenial::Protected);
    assert_eq!(std::fs::read_to_string(t.root.join(".git/config")).unwrap(), "[core]");
    assert!(
        matches!(peek(&t, ".git/config"), Outcome::Ok { .. }),
        "reading .git is allowed"
    );
}

#[test]
fn a_symlink_into_git_does_not_make_it_writable() {
    let t = tree();
    symlink(".git", t.root.join("notgit")).unwrap();
    assert_eq!(path_denial(&touch(&t, "notgit/config")), PathDenial::Protected);
    assert_eq!(std::fs::read_to_string(t.root.join(".git/config")).unwrap(), "[core]");
}

#[test]
fn a_nul_byte_in_a_path_is_malformed() {
    let t = tree();
    assert_eq!(path_denial(&peek(&t, "inside.txt\0/etc/passwd")), PathDenial::Malformed);
}

#[test]
fn an_empty_path_is_invalid_before_authorization() {
    let t = tree();
    let outcome = touch(&t, "");
    assert!(matches!(outcome, Outcome::InvalidArguments { .. }), "{outcome:?}");
}

#[test]
fn one_bad_path_in_a_list_denies_the_call_and_names_it() {
    let t = tree();
    let before = recorded(&t.root);
    let outcome = run(
        &runtime_in(&t.root, &open_policy()),
        "peek",
        json!({"paths": ["inside.txt", "../outside/secret"]}),
    );
    match outcome {
        Outcome::Denied {
            reason: Denial::Path { pointer, .. },
            ..
        } => assert_eq!(pointer, "/paths/1"),
        other => panic!("{other:?}"),
    }
    assert_nothing_ran(&t.root, before);
}

#[test]
fn a_read_only_root_refuses_writes_but_serves_reads() {
    let t = tree();
    let policy = Policy {
        roots: vec![RootSpec {
            path: ".".into(),
            access: Access::Read,
        }],
        ..open_policy()
    };
    let rt = runtime_in(&t.root, &policy);
    let outcome = run(&rt, "touch", json!({"path": "new.txt", "content": "x"}));
    assert_eq!(path_denial(&outcome), PathDenial::ReadOnlyRoot);
    assert!(!t.root.join("new.txt").exists());
    assert!(matches!(
        run(&rt, "peek", json!({"paths": ["inside.txt"]})),
        Outcome::Ok { .. }
    ));
}

#[test]
fn a_second_root_is_reachable_by_absolute_path_only_with_its_access() {
    let t = tree();
    let policy = Policy {
        roots: vec![
            RootSpec {
                path: ".".into(),
                access: Access::ReadWrite,
            },
            RootSpec {
                path: t.parent.join("outside"),
                access: Access::Read,
            },
        ],
        ..open_policy()
    };
    let rt = runtime_in(&t.root, &policy);
    let secret = t.parent.join("outside/secret");
    assert!(matches!(
        run(&rt, "peek", json!({"paths": [secret]})),
        Outcome::Ok { .. }
    ));
    let outcome = run(&rt, "touch", json!({"path": secret, "content": "x"}));
    assert_eq!(path_denial(&outcome), PathDenial::ReadOnlyRoot);
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "secret");
}

#[test]
fn a_symlink_swapped_in_after_authorization_still_cannot_lead_out() {
    let t = tree();
    std::fs::write(t.root.join("sub/file"), "fine").unwrap();
    let scope = Scope::from_policy(&open_policy(), &t.root).unwrap();
    let confined = scope.confine("sub/file", Access::Read).unwrap();
    // The attacker replaces the directory with a symlink to the outside between check and use.
    std::fs::remove_dir_all(t.root.join("sub")).unwrap();
    symlink(t.parent.join("outside"), t.root.join("sub")).unwrap();
    std::fs::write(t.parent.join("outside/file"), "stolen").unwrap();
    let read = confined.read();
    assert!(
        matches!(
            read,
            Err(ToolError::OutsideWorkspace { .. }) | Err(ToolError::Io { .. })
        ),
        "{read:?}"
    );
}

#[test]
fn a_file_used_as_a_directory_is_an_execution_failure_not_an_escape() {
    let t = tree();
    let outcome = peek(&t, "inside.txt/x");
    assert!(matches!(outcome, Outcome::ExecutionFailed { .. }), "{outcome:?}");
}

#[test]
fn unicode_spaces_and_dots_inside_the_root_are_fine() {
    let t = tree();
    for path in ["dir é/ü 😀.txt", "./sub/./a|b.txt", "sub/../c.txt"] {
        let rt = runtime_in(&t.root, &open_policy());
        std::fs::create_dir_all(t.root.join("dir é")).unwrap();
        let outcome = run(&rt, "touch", json!({"path": path, "content": "x"}));
        assert!(matches!(outcome, Outcome::Ok { .. }), "{path}: {outcome:?}");
    }
    assert!(t.root.join("dir é/ü 😀.txt").exists());
    assert!(t.root.join("sub/a|b.txt").exists());
    assert!(t.root.join("c.txt").exists());
}

// ---- approvals ------------------------------------------------------------------------

fn pending(outcome: &Outcome) -> String {
    match outcome {
        Outcome::ApprovalRequired {
            fingerprint, summary, ..
        } => {
            assert!(summary.starts_with("touch\n  "), "{summary}");
            fingerprint.clone()
        }
        other => panic!("expected approval_required, got {other:?}"),
    }
}

#[test]
fn a_write_needs_approval_by_default_and_nothing_runs_before_it() {
    let t = tree();
    let rt = runtime_in(&t.root, &Policy::default());
    let before = recorded(&t.root);
    let outcome = run(&rt, "touch", json!({"path": "a.txt", "content": "x"}));
    assert_eq!(pending(&outcome).len(), 64);
    assert_nothing_ran(&t.root, before);
    assert!(!t.root.join("a.txt").exists());
}

#[test]
fn an_approval_bound_to_the_fingerprint_lets_exactly_that_call_run() {
    let t = tree();
    let rt = runtime_in(&t.root, &Policy::default());
    let args = json!({"path": "a.txt", "content": "x"});
    let fingerprint = pending(&run(&rt, "touch", args.clone()));
    let call = Call::new("touch", args).approved(ApprovalToken::for_fingerprint(&fingerprint.to_uppercase()));
    let done = execute(&rt, call);
    assert!(matches!(done.outcome, Outcome::Ok { .. }), "{:?}", done.outcome);
    assert_eq!(done.receipt.decision, Decision::Approved);
    assert_eq!(std::fs::read_to_string(t.root.join("a.txt")).unwrap(), "x");
}

#[test]
fn an_approval_runs_only_in_its_own_workspace_and_scope() {
    let (a, b) = (tree(), tree());
    let args = json!({"path": "a.txt", "content": "x"});
    let rt_a = runtime_in(&a.root, &Policy::default());
    let rt_b = runtime_in(&b.root, &Policy::default());
    let fingerprint = pending(&run(&rt_a, "touch", args.clone()));
    // The same call in another workspace: the approval does not stand for it.
    let call = Call::new("touch", args.clone()).approved(ApprovalToken::for_fingerprint(&fingerprint));
    let outcome = block_on(rt_b.execute_call(call));
    assert!(
        matches!(
            outcome,
            Outcome::Denied {
                reason: Denial::ApprovalMismatch { .. },
                ..
            }
        ),
        "{outcome:?}"
    );
    assert!(!b.root.join("a.txt").exists());
    // Under a narrower scope (a sub-agent's) in the same workspace: a different fingerprint.
    let child = rt_a.scope().child(&kyro_core::policy::ScopeRequest::default()).unwrap();
    assert_ne!(rt_a.fingerprint("touch", &args, &child).as_str(), fingerprint);
    assert_eq!(rt_a.fingerprint("touch", &args, rt_a.scope()).as_str(), fingerprint);
}

#[test]
fn an_approval_replayed_with_a_changed_argument_is_denied() {
    let t = tree();
    let rt = runtime_in(&t.root, &Policy::default());
    let fingerprint = pending(&run(&rt, "touch", json!({"path": "a.txt", "content": "x"})));
    let before = recorded(&t.root);
    for changed in [
        json!({"path": "a.txt", "content": "y"}),
        json!({"path": "b.txt", "content": "x"}),
        json!({"path": "./a.txt", "content": "x"}),
    ] {
        let call = Call::new("touch", changed).approved(ApprovalToken::for_fingerprint(&fingerprint));
        let outcome = block_on(rt.execute_call(call));
        assert!(
            matches!(
                outcome,
                Outcome::Denied {
                    reason: Denial::ApprovalMismatch { .. },
                    ..
                }
            ),
            "{outcome:?}"
        );
    }
    assert_nothing_ran(&t.root, before);
    assert!(!t.root.join("a.txt").exists() && !t.root.join("b.txt").exists());
}

#[test]
fn an_approval_given_too_long_ago_is_refused_and_runs_nothing() {
    let t = tree();
    let rt = runtime_in(&t.root, &Policy::default());
    let args = json!({"path": "a.txt", "content": "x"});
    let fingerprint = pending(&run(&rt, "touch", args.clone()));
    let lifetime = kyro_core::policy::APPROVAL_LIFETIME + std::time::Duration::from_secs(1);
    // A machine up for less than the lifetime has no instant that old.
    let Some(long_ago) = std::time::Instant::now().checked_sub(lifetime) else {
        return;
    };
    let before = recorded(&t.root);
    let stale =
        block_on(rt.execute_call(Call::new("touch", args).approved(ApprovalToken::given_at(&fingerprint, long_ago))));
    assert!(
        matches!(
            stale,
            Outcome::Denied {
                reason: Denial::ApprovalExpired { .. },
                ..
            }
        ),
        "{stale:?}"
    );
    assert_nothing_ran(&t.root, before);
}

#[test]
fn an_approval_is_single_use() {
    let t = tree();
    let rt = runtime_in(&t.root, &Policy::default());
    let args = json!({"path": "a.txt", "content": "x"});
    let fingerprint = pending(&run(&rt, "touch", args.clone()));
    let token = ApprovalToken::for_fingerprint(&fingerprint);
    let first = block_on(rt.execute_call(Call::new("touch", args.clone()).approved(token.clone())));
    assert!(matches!(first, Outcome::Ok { .. }));
    let replay = block_on(rt.execute_call(Call::new("touch", args.clone()).approved(token)));
    assert!(
        matches!(
            replay,
            Outcome::Denied {
                reason: Denial::ApprovalReused { .. },
                ..
            }
        ),
        "{replay:?}"
    );
    let fresh =
        block_on(rt.execute_call(Call::new("touch", args).approved(ApprovalToken::for_fingerprint(&fingerprint))));
    assert!(
        matches!(fresh, Outcome::Ok { .. }),
        "a new approval of the same call is honoured"
    );
}

#[test]
fn the_fingerprint_ignores_key_order_whitespace_and_aliases() {
    let t = tree();
    let rt = runtime_in(&t.root, &Policy::default());
    let a = pending(&run(&rt, "touch", json!({"path": "a.txt", "content": "x"})));
    let parsed = kyro_core::parse_arguments("{ \"content\" : \"x\",\n \"path\":\"a.txt\" }").unwrap();
    let b = pending(&run(&rt, "touch", Value::Object(parsed)));
    assert_eq!(a, b);
    let by_alias = execute(&rt, Call::new("rec", json!({"n": 2})));
    let by_name = execute(&rt, Call::new("record", json!({"count": 2})));
    assert_eq!(by_alias.receipt.fingerprint, by_name.receipt.fingerprint);
    assert!(by_alias.receipt.fingerprint.is_some());
}

#[test]
fn a_tool_that_requires_approval_asks_even_when_the_policy_would_not() {
    let t = tree();
    let rt = runtime_in(&t.root, &open_policy());
    let before = recorded(&t.root);
    let outcome = run(&rt, "guarded", json!({"value": 1}));
    assert!(matches!(outcome, Outcome::ApprovalRequired { .. }), "{outcome:?}");
    assert_nothing_ran(&t.root, before);
}

#[test]
fn a_deny_rule_refuses_the_effect_even_with_an_approval() {
    let t = tree();
    let policy = Policy {
        approvals: rules(ApprovalRule::Deny),
        ..Policy::default()
    };
    let rt = runtime_in(&t.root, &policy);
    let args = json!({"path": "a.txt", "content": "x"});
    let fingerprint = rt.fingerprint("touch", &args, rt.scope());
    let call = Call::new("touch", args).approved(ApprovalToken::for_fingerprint(fingerprint.as_str()));
    let outcome = block_on(rt.execute_call(call));
    assert!(
        matches!(
            outcome,
            Outcome::Denied {
                reason: Denial::PolicyForbids { .. },
                ..
            }
        ),
        "{outcome:?}"
    );
    assert!(!t.root.join("a.txt").exists());
}

// ---- scopes ---------------------------------------------------------------------------

#[test]
fn a_missing_capability_is_denied_before_anything_runs() {
    let t = tree();
    let policy = Policy {
        capabilities: Some(vec![Capability::FS_READ]),
        ..open_policy()
    };
    let rt = runtime_in(&t.root, &policy);
    let before = recorded(&t.root);
    let outcome = run(&rt, "touch", json!({"path": "a.txt", "content": "x"}));
    assert_eq!(
        outcome,
        Outcome::Denied {
            tool: "touch".into(),
            reason: Denial::MissingCapability {
                capability: Capability::FS_WRITE
            }
        }
    );
    assert_nothing_ran(&t.root, before);
}

fn parent_scope(t: &Tree) -> Scope {
    let policy = Policy {
        capabilities: Some(vec![Capability::FS_READ, Capability::FS_WRITE]),
        max_depth: 2,
        ..open_policy()
    };
    Scope::from_policy(&policy, &t.root).unwrap()
}

#[test]
fn a_child_cannot_widen_its_capabilities() {
    let t = tree();
    let request = ScopeRequest {
        capabilities: Some(vec![Capability::FS_READ, Capability::EXEC]),
        roots: None,
    };
    assert_eq!(
        parent_scope(&t).child(&request).unwrap_err(),
        ScopeError::CapabilityWidening {
            capability: Capability::EXEC
        }
    );
}

#[test]
fn a_child_cannot_take_a_root_outside_its_parent() {
    let t = tree();
    for path in [
        t.parent.join("outside"),
        PathBuf::from("../outside"),
        t.parent.join("root-evil"),
    ] {
        let request = ScopeRequest {
            capabilities: None,
            roots: Some(vec![RootSpec {
                path: path.clone(),
                access: Access::Read,
            }]),
        };
        assert!(
            matches!(parent_scope(&t).child(&request), Err(ScopeError::RootWidening { .. })),
            "{}",
            path.display()
        );
    }
}

#[test]
fn a_child_cannot_escape_through_a_symlinked_root() {
    let t = tree();
    symlink(t.parent.join("outside"), t.root.join("door")).unwrap();
    let request = ScopeRequest {
        capabilities: None,
        roots: Some(vec![RootSpec {
            path: "door".into(),
            access: Access::Read,
        }]),
    };
    assert!(matches!(
        parent_scope(&t).child(&request),
        Err(ScopeError::RootWidening { .. })
    ));
}

#[test]
fn a_child_cannot_gain_write_access_to_a_read_only_root() {
    let t = tree();
    let policy = Policy {
        roots: vec![RootSpec {
            path: ".".into(),
            access: Access::Read,
        }],
        ..open_policy()
    };
    let parent = Scope::from_policy(&policy, &t.root).unwrap();
    let request = ScopeRequest {
        capabilities: None,
        roots: Some(vec![RootSpec {
            path: "sub".into(),
            access: Access::ReadWrite,
        }]),
    };
    assert!(matches!(parent.child(&request), Err(ScopeError::RootWidening { .. })));
}

#[test]
fn nesting_is_depth_limited() {
    let t = tree();
    let parent = parent_scope(&t);
    let child = parent.child(&ScopeRequest::default()).unwrap();
    let grandchild = child.child(&ScopeRequest::default()).unwrap();
    assert_eq!(grandchild.depth(), 2);
    assert_eq!(
        grandchild.child(&ScopeRequest::default()).unwrap_err(),
        ScopeError::TooDeep { depth: 3, max: 2 }
    );
}

#[test]
fn a_narrowed_child_is_held_to_its_narrower_scope() {
    let t = tree();
    let rt = runtime_in(&t.root, &open_policy());
    let child = rt
        .scope()
        .child(&ScopeRequest {
            capabilities: Some(vec![Capability::FS_READ]),
            roots: Some(vec![RootSpec {
                path: "sub".into(),
                access: Access::Read,
            }]),
        })
        .unwrap();
    std::fs::write(t.root.join("sub/ok.txt"), "ok").unwrap();
    let parent = execute(&rt, Call::new("record", json!({"count": 1})));
    let read = block_on(rt.execute_in(
        Call::new("peek", json!({"paths": ["ok.txt"]})),
        &child,
        Some(&parent.receipt.call_id),
    ));
    assert!(matches!(read.outcome, Outcome::Ok { .. }), "{:?}", read.outcome);
    assert_eq!(
        read.receipt.parent_call_id.as_deref(),
        Some(parent.receipt.call_id.as_str())
    );
    let escape = block_on(rt.execute_in(Call::new("peek", json!({"paths": ["../inside.txt"]})), &child, None));
    assert_eq!(path_denial(&escape.outcome), PathDenial::OutsideRoots);
    let write = block_on(rt.execute_in(
        Call::new("touch", json!({"path": "w.txt", "content": "x"})),
        &child,
        None,
    ));
    assert!(matches!(
        write.outcome,
        Outcome::Denied {
            reason: Denial::MissingCapability { .. },
            ..
        }
    ));
    assert!(!t.root.join("sub/w.txt").exists());
}

// ---- receipts and observers -----------------------------------------------------------

#[derive(Default)]
struct Recorder {
    seen: Mutex<Vec<(Receipt, Option<CanonicalCall>)>>,
}

impl Observer for Recorder {
    fn observe(&self, receipt: &Receipt, call: Option<&CanonicalCall>, _outcome: &Outcome) {
        self.seen.lock().unwrap().push((receipt.clone(), call.cloned()));
    }
}

#[test]
fn every_call_gets_a_receipt_refused_ones_included() {
    let t = tree();
    let recorder = Arc::new(Recorder::default());
    let rt = runtime_in(&t.root, &Policy::default()).with_observer(recorder.clone());
    let calls = [
        (Call::new("nope", json!({})), OutcomeKind::UnknownTool, "not_reached"),
        (
            Call::new("record", json!({"count": "x"})),
            OutcomeKind::InvalidArguments,
            "not_reached",
        ),
        (
            Call::new("peek", json!({"paths": ["../x"]})),
            OutcomeKind::Denied,
            "denied",
        ),
        (
            Call::new("touch", json!({"path": "a", "content": "x"})),
            OutcomeKind::ApprovalRequired,
            "approval_required",
        ),
        (Call::new("record", json!({"count": 1})), OutcomeKind::Ok, "allowed"),
    ];
    for (call, kind, decision) in calls {
        let done = execute(&rt, call);
        assert_eq!(done.receipt.outcome, kind);
        assert_eq!(serde_json::to_value(&done.receipt.decision).unwrap()["kind"], decision);
    }
    let seen = recorder.seen.lock().unwrap();
    assert_eq!(seen.len(), 5);
    let ids: std::collections::HashSet<&str> = seen.iter().map(|(r, _)| r.call_id.as_str()).collect();
    assert_eq!(ids.len(), 5, "call ids are unique");
}

#[test]
fn observers_get_the_same_canonical_snapshot_the_fingerprint_hashes() {
    let t = tree();
    let recorder = Arc::new(Recorder::default());
    let rt = runtime_in(&t.root, &Policy::default()).with_observer(recorder.clone());
    let done = execute(&rt, Call::new("rec", json!({"tags": ["b", "a"], "n": 7})));
    let seen = recorder.seen.lock().unwrap();
    let (receipt, call) = &seen[0];
    let call = call.as_ref().unwrap();
    assert_eq!(receipt, &done.receipt);
    assert_eq!(receipt.fingerprint.as_deref(), Some(call.fingerprint.as_str()));
    assert_eq!(sha256_hex(call.canonical.as_bytes()), call.fingerprint);
    let canonical: Value = serde_json::from_str(&call.canonical).unwrap();
    assert_eq!(canonical["arguments"], json!({"count": 7, "tags": ["b", "a"]}));
    assert_eq!(canonical["tool"], "record");
    assert_eq!(canonical["workspace"], t.root.to_str().unwrap());
    assert_eq!(canonical["scope"]["depth"], 0);
    assert!(
        call.canonical
            .starts_with(r#"{"arguments":{"count":7,"tags":["b","a"]},"scope":{"capabilities":["#),
        "{}",
        call.canonical
    );
}

#[test]
fn a_write_records_its_file_effect_with_hashes() {
    let t = tree();
    std::fs::write(t.root.join("a.txt"), "old").unwrap();
    let done = execute(
        &runtime_in(&t.root, &open_policy()),
        Call::new("touch", json!({"path": "a.txt", "content": "new"})),
    );
    assert_eq!(
        done.receipt.effects,
        [ObservedEffect::File {
            path: "a.txt".into(),
            before_sha256: Some(sha256_hex(b"old")),
            after_sha256: Some(sha256_hex(b"new")),
        }]
    );
    let refused = execute(
        &runtime_in(&t.root, &Policy::default()),
        Call::new("touch", json!({"path": "a.txt", "content": "z"})),
    );
    assert!(refused.receipt.effects.is_empty());
}

#[test]
fn the_jsonl_log_appends_one_line_per_receipt() {
    let t = tree();
    let log = Arc::new(JsonlReceiptLog::in_workspace(&t.root));
    let rt = runtime_in(&t.root, &Policy::default()).with_observer(log.clone());
    run(&rt, "record", json!({"count": 1}));
    run(&rt, "nope", json!({}));
    let text = std::fs::read_to_string(log.path()).unwrap();
    let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["outcome"], "ok");
    assert_eq!(lines[1]["outcome"], "unknown_tool");
    assert_eq!(log.path(), Path::new(&t.root).join(".kyro/receipts.jsonl"));
}

// ---- limits ---------------------------------------------------------------------------

#[test]
fn the_runtime_stops_a_tool_past_its_time_limit() {
    let t = tree();
    let policy = Policy {
        limits: Limits {
            timeout_ms: 50,
            ..Limits::default()
        },
        ..Policy::default()
    };
    let rt = runtime_in(&t.root, &policy);
    assert_eq!(
        run(&rt, "nap", json!({"ms": 10_000})),
        Outcome::TimedOut {
            tool: "nap".into(),
            limit_ms: 50
        }
    );
    assert!(matches!(run(&rt, "nap", json!({"ms": 1})), Outcome::Ok { .. }));
}

#[test]
fn the_runtime_refuses_a_result_over_the_output_limit() {
    let t = tree();
    let policy = Policy {
        limits: Limits {
            max_output_bytes: 1000,
            ..Limits::default()
        },
        ..Policy::default()
    };
    let rt = runtime_in(&t.root, &policy);
    let outcome = run(&rt, "big", json!({"size": 2000}));
    assert!(
        matches!(
            outcome,
            Outcome::ExecutionFailed {
                error: ToolError::OutputTooLarge { limit: 1000, .. },
                ..
            }
        ),
        "{outcome:?}"
    );
    assert!(matches!(run(&rt, "big", json!({"size": 10})), Outcome::Ok { .. }));
}

/// A tool that needs a capability of its author's own, besides its effect's.
#[kyro_core::tool(name = "kv_put", category = "testing", effect = "state", capabilities = ["kv.write"])]
pub struct KvPut {}

impl kyro_core::Execute for KvPut {
    type Output = common::Echo;

    async fn run(self, _cx: &kyro_core::ToolContext) -> Result<common::Echo, ToolError> {
        Ok(common::Echo { count: 0 })
    }
}

kyro_core::catalog! {
    const KV_CATALOG = [KvPut];
}

fn kv_runtime(root: &Path, policy: &Policy) -> Result<kyro_core::Runtime, kyro_core::policy::ScopeError> {
    let registry = Arc::new(kyro_core::Registry::with_catalog(KV_CATALOG).unwrap());
    kyro_core::Runtime::new(registry, kyro_core::Workspace::new(root).unwrap(), policy)
}

#[test]
fn the_default_policy_grants_what_the_served_tools_need_and_nothing_they_do_not() {
    let t = tree();
    let rt = kv_runtime(&t.root, &Policy::default()).unwrap();
    let granted = rt.scope().capabilities();
    assert!(granted.contains(&Capability::named("kv.write")), "{granted:?}");
    assert_eq!(run(&rt, "kv_put", json!({})).kind(), OutcomeKind::Ok);
    // A server without git tools or orchestration grants neither.
    for foreign in ["git.write", "orchestrate"] {
        assert!(!granted.contains(&Capability::named(foreign)), "{foreign}: {granted:?}");
    }
    // ... and a policy cannot grant them there: a misspelt or foreign grant is an error.
    let policy = Policy {
        capabilities: Some(vec![Capability::named("git.write")]),
        ..Policy::default()
    };
    assert!(matches!(
        kv_runtime(&t.root, &policy),
        Err(kyro_core::policy::ScopeError::UnknownCapability { .. })
    ));
    // A policy that lists capabilities grants those only.
    let policy = Policy {
        capabilities: Some(vec![Capability::STATE]),
        ..Policy::default()
    };
    let rt = kv_runtime(&t.root, &policy).unwrap();
    assert!(matches!(
        run(&rt, "kv_put", json!({})),
        Outcome::Denied {
            reason: Denial::MissingCapability { .. },
            ..
        }
    ));
}
