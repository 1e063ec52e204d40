//! Calls under the rule `review` (issue 47): nothing runs until a named approver decides,
//! the client's own answer, a grant or a session approval never approves it, an approval
//! runs the call once, a denial and silence deny it, and a call that may be a task waits
//! for the decision. Each test would fail without its rule.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::{block_on, recorded};
use kyro_core::grants::{ApprovalStore, MemoryApprovalStore, NewGrant, now_ms};
use kyro_core::policy::{ApprovalRule, ApprovalRules};
use kyro_core::receipt::{CanonicalCall, Decision, Denial, Observer, Receipt};
use kyro_core::review::{DecideError, Decided, ReviewState, decide};
use kyro_core::{
    ApprovalToken, Approver, Asked, BoxFuture, Call, Caller, Outcome, Policy, Registry, Runtime, TaskHook, Workspace,
};
use serde_json::json;

/// Receipts' decisions, in order.
#[derive(Default)]
struct Decisions(std::sync::Mutex<Vec<Decision>>);

impl Observer for Decisions {
    fn observe(&self, receipt: &Receipt, _: Option<&CanonicalCall>, _: &Outcome) {
        self.0.lock().unwrap().push(receipt.decision.clone());
    }
}

/// A client that answers every question "yes", and counts them.
#[derive(Default)]
struct Yes(AtomicUsize);

impl Approver for Yes {
    fn approve<'a>(&'a self, asked: Asked<'a>) -> BoxFuture<'a, Option<ApprovalToken>> {
        self.0.fetch_add(1, Ordering::SeqCst);
        let token = ApprovalToken::for_fingerprint(asked.fingerprint);
        Box::pin(async move { Some(token) })
    }
}

/// `record` (effect `none`) under `none`'s rule, and the tools' own rules.
fn reviewing(none: ApprovalRule, tools: &[(&str, ApprovalRule)]) -> Policy {
    Policy {
        approvals: ApprovalRules {
            none,
            tools: tools.iter().map(|(t, r)| (t.to_string(), *r)).collect(),
            ..ApprovalRules::default()
        },
        ..Policy::default()
    }
}

struct Setup {
    _ws: tempfile::TempDir,
    root: std::path::PathBuf,
    rt: Runtime,
    store: Arc<MemoryApprovalStore>,
    decisions: Arc<Decisions>,
}

fn setup(policy: &Policy) -> Setup {
    let ws = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryApprovalStore::default());
    let decisions = Arc::new(Decisions::default());
    let registry = Arc::new(Registry::with_catalog(common::TEST_CATALOG).unwrap());
    let rt = Runtime::new(registry, Workspace::new(ws.path()).unwrap(), policy)
        .unwrap()
        .with_approval_store(store.clone())
        .with_review_inbox("http://127.0.0.1:9/approvals")
        .with_observer(decisions.clone());
    Setup {
        root: ws.path().to_owned(),
        _ws: ws,
        rt,
        store,
        decisions,
    }
}

fn alice() -> Caller {
    Caller::named("alice").unwrap()
}

fn bob() -> Caller {
    Caller::named("bob").unwrap()
}

fn record(caller: Caller) -> Call {
    Call::new("record", json!({"count": 1})).by(caller)
}

fn pending_id(outcome: &Outcome) -> String {
    match outcome {
        Outcome::ApprovalPending { approval_id, inbox, .. } => {
            assert_eq!(
                inbox.as_deref(),
                Some(format!("http://127.0.0.1:9/approvals/{approval_id}").as_str())
            );
            approval_id.clone()
        }
        other => panic!("expected approval_pending, got {other:?}"),
    }
}

fn approve(store: &MemoryApprovalStore, id: &str, approver: Caller) {
    let decided = Decided {
        approve: true,
        approver,
        reason: Some("fine".into()),
    };
    decide(store, id, decided, now_ms()).unwrap();
}

#[test]
fn a_reviewed_call_waits_runs_once_when_approved_and_the_receipt_names_the_approver() {
    let s = setup(&reviewing(ApprovalRule::Review, &[]));
    let yes = Arc::new(Yes::default());
    let first = block_on(s.rt.execute_call(record(alice()).asking(yes.clone())));
    let id = pending_id(&first);
    assert_eq!(recorded(&s.root), 0, "ran before the decision");
    assert_eq!(
        yes.0.load(Ordering::SeqCst),
        0,
        "the client was asked to approve a reviewed call"
    );
    // Asked again before the decision: the same review, still nothing run.
    let again = block_on(s.rt.execute_call(record(alice())));
    assert_eq!(pending_id(&again), id);
    assert_eq!(s.store.reviews(true, now_ms()).unwrap().len(), 1);
    // Approving one's own call is refused.
    let own = Decided {
        approve: true,
        approver: alice(),
        reason: None,
    };
    assert_eq!(
        decide(s.store.as_ref(), &id, own, now_ms()),
        Err(DecideError::OwnCall(alice()))
    );
    approve(&s.store, &id, bob());
    let ran = block_on(s.rt.execute_call(record(alice())));
    assert!(matches!(ran, Outcome::Ok { .. }), "{ran:?}");
    assert_eq!(recorded(&s.root), 1);
    // The second retry does not run on that approval: it is a new review.
    let second = block_on(s.rt.execute_call(record(alice())));
    assert_ne!(pending_id(&second), id);
    assert_eq!(recorded(&s.root), 1, "ran twice on one approval");
    let decisions = s.decisions.0.lock().unwrap().clone();
    assert!(
        matches!(&decisions[2], Decision::Reviewed { approval_id, approver, reason, .. }
            if *approval_id == id && approver == "bob" && reason.as_deref() == Some("fine")),
        "{decisions:?}"
    );
    assert!(matches!(&decisions[0], Decision::ReviewPending { approval_id } if *approval_id == id));
}

#[test]
fn the_clients_approval_a_grant_or_another_callers_approval_never_passes_a_review() {
    let s = setup(&reviewing(ApprovalRule::Ask, &[("record", ApprovalRule::Review)]));
    let first = block_on(s.rt.execute_call(record(alice())));
    let id = pending_id(&first);
    // A token the client minted for the exact fingerprint.
    let fingerprint = match &first {
        Outcome::ApprovalPending { fingerprint, .. } => fingerprint.clone(),
        _ => unreachable!(),
    };
    let token = block_on(s.rt.execute_call(record(alice()).approved(ApprovalToken::for_fingerprint(&fingerprint))));
    assert_eq!(pending_id(&token), id);
    // A grant of the tool to the caller.
    s.store
        .add_grant(NewGrant {
            caller: alice(),
            tool: "record".into(),
            arguments: None,
            expires_at_ms: now_ms() + 60_000,
        })
        .unwrap();
    assert_eq!(pending_id(&block_on(s.rt.execute_call(record(alice())))), id);
    // Bob's call is bob's review: approving it does not run alice's.
    let bobs = pending_id(&block_on(s.rt.execute_call(record(bob()))));
    assert_ne!(bobs, id);
    approve(&s.store, &bobs, alice());
    assert_eq!(pending_id(&block_on(s.rt.execute_call(record(alice())))), id);
    assert_eq!(recorded(&s.root), 0);
    // A stricter review rule over a tool's `auto` holds too; `deny` holds over `review`.
    let denying = setup(&reviewing(ApprovalRule::Review, &[("record", ApprovalRule::Deny)]));
    let denied = block_on(denying.rt.execute_call(record(alice())));
    assert!(matches!(denied, Outcome::Denied { .. }), "{denied:?}");
}

#[test]
fn a_denial_and_silence_deny_the_call_and_nothing_runs() {
    let s = setup(&reviewing(ApprovalRule::Review, &[]));
    let id = pending_id(&block_on(s.rt.execute_call(record(alice()))));
    let no = Decided {
        approve: false,
        approver: bob(),
        reason: Some("not today".into()),
    };
    decide(s.store.as_ref(), &id, no, now_ms()).unwrap();
    let denied = block_on(s.rt.execute_call(record(alice())));
    match &denied {
        Outcome::Denied {
            reason:
                Denial::ReviewDenied {
                    approval_id,
                    approver,
                    reason,
                },
            ..
        } => {
            assert_eq!(
                (approval_id, approver.as_str(), reason.as_deref()),
                (&id, "bob", Some("not today"))
            );
            assert!(denied.to_json().to_string().contains("not today"));
        }
        other => panic!("{other:?}"),
    }
    // Silence: a one-second review expires and is denied.
    let mut short = reviewing(ApprovalRule::Review, &[]);
    short.approvals.review_expiry_s = 1;
    let s2 = setup(&short);
    let id = pending_id(&block_on(s2.rt.execute_call(record(alice()))));
    std::thread::sleep(Duration::from_millis(1100));
    assert_eq!(
        s2.store.review(&id, now_ms()).unwrap().unwrap().state,
        ReviewState::Expired
    );
    let late = Decided {
        approve: true,
        approver: bob(),
        reason: None,
    };
    assert!(matches!(
        decide(s2.store.as_ref(), &id, late, now_ms()),
        Err(DecideError::NotPending { .. })
    ));
    // Asked again after it expired: a new review, and still nothing ran.
    assert_ne!(pending_id(&block_on(s2.rt.execute_call(record(alice())))), id);
    assert_eq!(recorded(&s.root) + recorded(&s2.root), 0);
}

#[test]
fn a_call_that_may_be_a_task_becomes_one_at_once_and_runs_when_approved() {
    let s = setup(&reviewing(ApprovalRule::Review, &[]));
    let rt = s.rt.clone();
    let store = s.store.clone();
    let root = s.root.clone();
    block_on(async move {
        let (hook, told) = TaskHook::new("t1");
        let call = record(alice()).as_task(hook);
        let work = tokio::spawn({
            let rt = rt.clone();
            async move { rt.execute_call(call).await }
        });
        // The task is handed out while the call waits for its approver.
        tokio::time::timeout(Duration::from_secs(5), told)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(recorded(&root), 0);
        let pending = store.reviews(true, now_ms()).unwrap();
        assert_eq!(pending.len(), 1);
        approve(&store, &pending[0].id, bob());
        let outcome = tokio::time::timeout(Duration::from_secs(5), work)
            .await
            .unwrap()
            .unwrap();
        assert!(matches!(outcome, Outcome::Ok { .. }), "{outcome:?}");
        assert_eq!(recorded(&root), 1);
        assert_eq!(
            store.review(&pending[0].id, now_ms()).unwrap().unwrap().state,
            ReviewState::Ran
        );
    });
}

#[test]
fn without_a_queue_a_reviewed_call_is_denied_not_run() {
    let ws = tempfile::tempdir().unwrap();
    let registry = Arc::new(Registry::with_catalog(common::TEST_CATALOG).unwrap());
    let policy = reviewing(ApprovalRule::Review, &[]);
    let rt = Runtime::new(registry, Workspace::new(ws.path()).unwrap(), &policy).unwrap();
    let outcome = block_on(rt.execute_call(record(alice())));
    assert!(
        matches!(
            &outcome,
            Outcome::Denied {
                reason: Denial::ReviewUnavailable { .. },
                ..
            }
        ),
        "{outcome:?}"
    );
    assert_eq!(recorded(ws.path()), 0);
}

#[test]
fn a_policy_file_says_review_wherever_it_says_ask() {
    let policy: Policy = toml::from_str(
        "[approvals]\nexec = \"review\"\nreview_expiry_s = 3600\nself_review = true\n[approvals.tools]\nrecord = \"review\"\n",
    )
    .unwrap();
    assert_eq!(policy.approvals.exec, ApprovalRule::Review);
    assert_eq!(policy.approvals.tools["record"], ApprovalRule::Review);
    assert_eq!(policy.approvals.review_expiry_s, 3600);
    assert!(policy.approvals.self_review);
    assert_eq!(ApprovalRule::Ask.strictest(ApprovalRule::Review), ApprovalRule::Review);
    assert_eq!(ApprovalRule::Deny.strictest(ApprovalRule::Review), ApprovalRule::Deny);
}

#[test]
fn a_rule_naming_the_call_may_tighten_a_review_but_never_loosen_it() {
    use kyro_core::policy::MatchedRule;
    let rule = |decision| {
        Some(MatchedRule {
            decision,
            rule: "a command rule".into(),
            each_call: true,
        })
    };
    let effect_review = ApprovalRules::default();
    for loose in [ApprovalRule::Auto, ApprovalRule::Ask] {
        let (decided, _) = effect_review.decide("record", ApprovalRule::Review, rule(loose));
        assert_eq!(decided, ApprovalRule::Review, "{loose:?} lifted the effect's review");
    }
    let (decided, _) = effect_review.decide("record", ApprovalRule::Review, rule(ApprovalRule::Deny));
    assert_eq!(decided, ApprovalRule::Deny);
    // An `ask` effect is still the default a command rule replaces, `review` included.
    let (decided, _) = effect_review.decide("record", ApprovalRule::Ask, rule(ApprovalRule::Review));
    assert_eq!(decided, ApprovalRule::Review);
    let (decided, _) = effect_review.decide("record", ApprovalRule::Ask, rule(ApprovalRule::Auto));
    assert_eq!(decided, ApprovalRule::Auto);
    let named = reviewing(ApprovalRule::Auto, &[("record", ApprovalRule::Review)]).approvals;
    let (decided, _) = named.decide("record", ApprovalRule::Auto, rule(ApprovalRule::Ask));
    assert_eq!(decided, ApprovalRule::Review);
}

#[test]
fn whether_a_caller_may_approve_their_own_call_is_their_policys_when_they_call() {
    let mut own = reviewing(ApprovalRule::Review, &[]);
    own.approvals.self_review = true;
    let s = setup(&own);
    let id = pending_id(&block_on(s.rt.execute_call(record(alice()))));
    assert!(s.store.review(&id, now_ms()).unwrap().unwrap().self_review);
    approve(&s.store, &id, alice());
    let ran = block_on(s.rt.execute_call(record(alice())));
    assert!(matches!(ran, Outcome::Ok { .. }), "{ran:?}");
    // A call made under a policy without it keeps that, whatever the server's says later.
    let strict = setup(&reviewing(ApprovalRule::Review, &[]));
    let id = pending_id(&block_on(strict.rt.execute_call(record(alice()))));
    assert!(!strict.store.review(&id, now_ms()).unwrap().unwrap().self_review);
    let own = Decided {
        approve: true,
        approver: alice(),
        reason: None,
    };
    assert_eq!(
        decide(strict.store.as_ref(), &id, own, now_ms()),
        Err(DecideError::OwnCall(alice()))
    );
}

#[test]
fn a_review_keeps_a_bounded_summary_and_large_arguments_as_their_digest() {
    let s = setup(&reviewing(ApprovalRule::Review, &[]));
    let big = "x".repeat(40_000);
    let call = Call::new("record", json!({"count": 1, "tags": [big.clone(), big.clone()]})).by(alice());
    let id = pending_id(&block_on(s.rt.execute_call(call)));
    let review = s.store.review(&id, now_ms()).unwrap().unwrap();
    assert!(
        review.summary.len() <= kyro_core::review::MOST_SUMMARY_BYTES + 100,
        "{}",
        review.summary.len()
    );
    assert!(review.arguments["sha256"].is_string(), "{}", review.arguments);
    // What an approver cannot see whole is never approved, only denied.
    let yes = Decided {
        approve: true,
        approver: bob(),
        reason: None,
    };
    assert_eq!(
        decide(s.store.as_ref(), &id, yes, now_ms()),
        Err(DecideError::TooLarge(id.clone()))
    );
    let no = Decided {
        approve: false,
        approver: bob(),
        reason: None,
    };
    assert!(decide(s.store.as_ref(), &id, no, now_ms()).is_ok());
}
