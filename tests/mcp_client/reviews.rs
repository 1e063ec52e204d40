//! The review queue on PostgreSQL (`--state`): the store keeps what every store keeps
//! (`kyro_core::review::conformance`), and replicas sharing the database decide a review
//! once and run it once, whichever of them asks.

use kyro_core::Caller;
use kyro_core::grants::{ApprovalStore, now_ms};
use kyro_core::review::{DecideError, Decided, NewReview, ReviewState};
use kyro_tools::state::PgState;
use serde_json::json;

use super::postgres::Postgres;

#[test]
fn the_review_queue_on_postgres_keeps_what_every_store_keeps() {
    let Some(pg) = Postgres::start() else { return };
    kyro_core::review::conformance(&PgState::new(&pg.url).unwrap());
}

#[test]
fn two_replicas_on_postgres_decide_a_review_once_and_run_it_once() {
    let Some(pg) = Postgres::start() else { return };
    let (one, two) = (PgState::new(&pg.url).unwrap(), PgState::new(&pg.url).unwrap());
    let now = now_ms();
    let asked = NewReview {
        caller: Caller::named("alice").unwrap(),
        tool: "run_command".into(),
        fingerprint: "f1".into(),
        arguments: json!({"argv": ["cargo", "publish"]}),
        summary: "run_command\n  argv: cargo publish".into(),
        expires_at_ms: now + 60_000,
        self_review: false,
    };
    // Asked through both at once: one review.
    let (first, second) = std::thread::scope(|s| {
        let first = s.spawn(|| one.request_review(asked.clone(), now).unwrap());
        let second = s.spawn(|| two.request_review(asked.clone(), now).unwrap());
        (first.join().unwrap(), second.join().unwrap())
    });
    assert_eq!(first.id, second.id, "one review");
    assert_eq!(one.reviews(true, now).unwrap().len(), 1);
    let id = first.id;
    let yes = Decided {
        approve: true,
        approver: Caller::named("bob").unwrap(),
        reason: Some("ship it".into()),
    };
    let decided = one.decide_review(&id, yes.clone(), now).unwrap();
    assert_eq!(decided.state, ReviewState::Approved);
    assert_eq!(
        two.decide_review(&id, yes, now),
        Err(DecideError::NotPending {
            id: id.clone(),
            state: ReviewState::Approved
        })
    );
    assert_eq!(two.review(&id, now).unwrap(), Some(decided));
    // Spent through both at once: run once.
    let spent = std::thread::scope(|s| {
        let first = s.spawn(|| one.spend_review(&id, now));
        let second = s.spawn(|| two.spend_review(&id, now));
        [first.join().unwrap(), second.join().unwrap()]
    });
    assert_eq!(spent.iter().filter(|s| **s == Ok(true)).count(), 1, "{spent:?}");
    assert_eq!(spent.iter().filter(|s| **s == Ok(false)).count(), 1, "{spent:?}");
    assert_eq!(one.review(&id, now).unwrap().unwrap().state, ReviewState::Ran);
}
