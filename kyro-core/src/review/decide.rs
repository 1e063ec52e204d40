//! Deciding a review, held to the rules the edges share; and the behaviour every store's
//! queue keeps.

use super::{DecideError, Decided, NewReview, PENDING_PER_CALLER, REVIEW_LIFETIME_S, Review, ReviewState};
use crate::caller::Caller;
use crate::grants::ApprovalStore;

/// Decides review `id` in `store` at `now_ms`: refused when it is not pending, and when the
/// approver made the call unless the caller's policy allowed it when the call was asked
/// ([`Review::self_review`]). The approver's right to decide at all is the edge's to check
/// (`--approvers`, the `kyro:approve` scope).
pub fn decide(store: &dyn ApprovalStore, id: &str, decided: Decided, now_ms: u64) -> Result<Review, DecideError> {
    let review = store
        .review(id, now_ms)
        .map_err(DecideError::Store)?
        .ok_or_else(|| DecideError::Unknown(id.to_owned()))?;
    if decided.approve && review.cut() {
        return Err(DecideError::TooLarge(id.to_owned()));
    }
    if review.caller == decided.approver && !review.self_review {
        return Err(DecideError::OwnCall(decided.approver));
    }
    store.decide_review(id, decided, now_ms)
}

/// The behaviour every store's queue keeps, run by each store's tests against a store of
/// its own (`conformance(&store)`): asked twice, one review; decided once; run once;
/// expiry; bounds.
#[doc(hidden)]
pub fn conformance(store: &dyn ApprovalStore) {
    let now = crate::grants::now_ms();
    let alice = Caller::named("alice").unwrap();
    let bob = Caller::named("bob").unwrap();
    let new = |caller: &Caller, fingerprint: &str, expires: u64| NewReview {
        caller: caller.clone(),
        tool: "write_file".into(),
        fingerprint: fingerprint.into(),
        arguments: serde_json::json!({"path": "a.txt", "content": "x"}),
        summary: "write_file\n  path: a.txt".into(),
        expires_at_ms: expires,
        self_review: fingerprint == "f4",
    };
    let day = now + REVIEW_LIFETIME_S * 1000;
    // Asked twice: one review; another caller's same fingerprint is another review.
    let one = store.request_review(new(&alice, "f1", day), now).unwrap();
    assert_eq!(one.state, ReviewState::Pending);
    assert_eq!(one.id.len(), 16, "{}", one.id);
    let again = store.request_review(new(&alice, "f1", day), now + 1).unwrap();
    assert_eq!(again.id, one.id, "the same call finds its review");
    let bobs = store.request_review(new(&bob, "f1", day), now).unwrap();
    assert_ne!(bobs.id, one.id);
    assert_eq!(store.review(&one.id, now).unwrap().as_ref(), Some(&one));
    assert_eq!(store.review("0000000000000000", now).unwrap(), None);
    let pending = store.reviews(true, now).unwrap();
    assert_eq!(pending.iter().map(|r| &r.id).collect::<Vec<_>>(), [&one.id, &bobs.id]);
    // Not spent while pending; decided once; an approval is spent once.
    assert!(!store.spend_review(&one.id, now).unwrap());
    let yes = |who: &Caller| Decided {
        approve: true,
        approver: who.clone(),
        reason: Some("looks right".into()),
    };
    assert_eq!(
        decide(store, &one.id, yes(&alice), now),
        Err(DecideError::OwnCall(alice.clone())),
        "nobody approves their own call unless the policy says so"
    );
    let approved = decide(store, &one.id, yes(&bob), now + 5).unwrap();
    assert_eq!(approved.state, ReviewState::Approved);
    assert_eq!(approved.approver.as_ref(), Some(&bob));
    assert_eq!(approved.reason.as_deref(), Some("looks right"));
    assert_eq!(approved.decided_at_ms, Some(now + 5));
    assert_eq!(
        decide(store, &one.id, yes(&bob), now + 6),
        Err(DecideError::NotPending {
            id: one.id.clone(),
            state: ReviewState::Approved
        })
    );
    assert_eq!(
        store.request_review(new(&alice, "f1", day), now + 7).unwrap().id,
        one.id,
        "approved and not yet run, it still stands"
    );
    assert!(store.spend_review(&one.id, now + 8).unwrap());
    assert!(!store.spend_review(&one.id, now + 9).unwrap(), "run once");
    assert_eq!(store.review(&one.id, now + 9).unwrap().unwrap().state, ReviewState::Ran);
    let fresh = store.request_review(new(&alice, "f1", day), now + 10).unwrap();
    assert_ne!(
        fresh.id, one.id,
        "a ran review no longer stands: the call is asked anew"
    );
    // Denied: it stands (denied) until it expires.
    let no = Decided {
        approve: false,
        approver: alice.clone(),
        reason: None,
    };
    let denied = decide(store, &bobs.id, no, now + 11).unwrap();
    assert_eq!(denied.state, ReviewState::Denied);
    assert_eq!(
        store.request_review(new(&bob, "f1", day), now + 12).unwrap().id,
        bobs.id
    );
    assert!(!store.spend_review(&bobs.id, now + 12).unwrap());
    // Expiry: pending past its time reads as expired, cannot be decided, and the call is
    // asked anew.
    let short = store.request_review(new(&bob, "f2", now + 100), now).unwrap();
    assert_eq!(
        store.review(&short.id, now + 100).unwrap().unwrap().state,
        ReviewState::Expired
    );
    assert!(matches!(
        decide(store, &short.id, yes(&alice), now + 100),
        Err(DecideError::NotPending {
            state: ReviewState::Expired,
            ..
        })
    ));
    assert!(!store.reviews(true, now + 100).unwrap().iter().any(|r| r.id == short.id));
    assert_ne!(
        store.request_review(new(&bob, "f2", now + 200), now + 101).unwrap().id,
        short.id
    );
    // An approval not run in time expires too.
    let late = store.request_review(new(&bob, "f3", now + 100), now).unwrap();
    decide(store, &late.id, yes(&alice), now + 1).unwrap();
    assert!(!store.spend_review(&late.id, now + 100).unwrap());
    // Self-review when the policy allows it.
    let own = store.request_review(new(&alice, "f4", day), now).unwrap();
    assert_eq!(
        decide(store, &own.id, yes(&alice), now).unwrap().state,
        ReviewState::Approved
    );
    // Bounded: a caller holds at most PENDING_PER_CALLER pending.
    let carol = Caller::named("carol").unwrap();
    for i in 0..PENDING_PER_CALLER {
        store.request_review(new(&carol, &format!("c{i}"), day), now).unwrap();
    }
    let refused = store.request_review(new(&carol, "one-more", day), now).unwrap_err();
    assert!(refused.contains("pending"), "{refused}");
    assert!(
        store.request_review(new(&carol, "c0", day), now).is_ok(),
        "asked again, not anew"
    );
    // A notice is claimed once per review and state.
    assert!(store.claim_notice(&one.id, ReviewState::Pending, now).unwrap());
    assert!(!store.claim_notice(&one.id, ReviewState::Pending, now + 1).unwrap());
    assert!(store.claim_notice(&one.id, ReviewState::Approved, now + 1).unwrap());
    assert!(store.claim_notice(&bobs.id, ReviewState::Pending, now + 1).unwrap());
}

/// A store keeps at most [`MOST_SETTLED`](super::MOST_SETTLED) settled reviews, the oldest
/// going first, and never a pending or approved one for it.
#[doc(hidden)]
pub fn settled_bound(store: &dyn ApprovalStore) {
    let now = crate::grants::now_ms();
    let bob = Caller::named("bob").unwrap();
    let new = |caller: &Caller, fingerprint: String| NewReview {
        caller: caller.clone(),
        tool: "write_file".into(),
        fingerprint,
        arguments: serde_json::json!({}),
        summary: String::new(),
        expires_at_ms: now + 60_000,
        self_review: false,
    };
    let keep = store.request_review(new(&bob, "kept".into()), now).unwrap();
    let carol = Caller::named("carol").unwrap();
    let refused = store.request_review(new(&carol, "refused".into()), now).unwrap();
    let no = Decided {
        approve: false,
        approver: bob.clone(),
        reason: None,
    };
    store.decide_review(&refused.id, no, now).unwrap();
    for i in 0..super::MOST_SETTLED + 8 {
        let caller = Caller::named(&format!("c{}", i % 16)).unwrap();
        let review = store.request_review(new(&caller, format!("s{i}")), now).unwrap();
        let yes = Decided {
            approve: true,
            approver: bob.clone(),
            reason: None,
        };
        store.decide_review(&review.id, yes, now).unwrap();
        assert!(store.spend_review(&review.id, now).unwrap());
    }
    store.request_review(new(&bob, "last".into()), now).unwrap();
    let all = store.reviews(false, now).unwrap();
    let ran = all.iter().filter(|r| r.state == ReviewState::Ran).count();
    assert!(ran <= super::MOST_SETTLED, "{ran} settled reviews kept");
    assert!(all.iter().any(|r| r.id == keep.id), "a pending review went");
    assert!(all.iter().any(|r| r.id == refused.id), "a standing denial went");
    assert!(!all.iter().any(|r| r.fingerprint == "s0"), "the oldest settled stayed");
}
