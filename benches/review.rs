//! What a call under `review` costs the boundary, against the same call under `ask`, in
//! one run (`cargo bench --bench review`). Both answer without running the tool: `ask`
//! with `approval_required` (the fingerprint and the summary), `review` with
//! `approval_pending` after the queue in the workspace's SQLite authority database found
//! the call's standing review (the same call asked again) or put a new one in it (a new
//! call each time). Then how long a waiting task takes to run once an approver decided:
//! it reads its review every 500 ms, so about 250 ms at the median is the design.

use std::sync::Arc;
use std::time::{Duration, Instant};

use kyro_core::policy::{ApprovalRule, ApprovalRules};
use kyro_core::review::{Decided, decide};
use kyro_core::{
    Call, Caller, Execute, Outcome, Policy, Registry, Runtime, TaskHook, ToolContext, ToolError, Workspace, tool,
};
use serde_json::json;

const BATCH: usize = 200;
const SAMPLES: usize = 15;

/// Record a note.
#[tool(name = "note", category = "benchmark", effect = "write")]
pub struct Note {
    /// The note.
    pub text: String,
}

/// The note recorded.
#[kyro_core::output]
#[derive(Debug)]
pub struct Noted {
    /// The note.
    pub text: String,
}

impl Execute for Note {
    type Output = Noted;

    async fn run(self, _cx: &ToolContext) -> Result<Noted, ToolError> {
        Ok(Noted { text: self.text })
    }
}

kyro_core::catalog! {
    const BENCH = [Note];
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn runtime(root: &std::path::Path, home: &std::path::Path, write: ApprovalRule) -> Runtime {
    let policy = Policy {
        approvals: ApprovalRules {
            write,
            ..ApprovalRules::default()
        },
        ..Policy::default()
    };
    let registry = Arc::new(Registry::with_catalog(BENCH).unwrap());
    let store = kyro_tools::state::SqliteApprovalStore::with_state_home(root, home);
    Runtime::new(registry, Workspace::new(root).unwrap(), &policy)
        .unwrap()
        .with_approval_store(Arc::new(store))
}

fn main() {
    let (ws, home) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let ask = runtime(ws.path(), home.path(), ApprovalRule::Ask);
    let review = runtime(ws.path(), home.path(), ApprovalRule::Review);
    let executor = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let alice = Caller::named("alice").unwrap();
    let call = |text: &str| Call::new("note", json!({"text": text})).by(alice.clone());
    let time = |rt: &Runtime| {
        executor.block_on(async {
            let start = Instant::now();
            for _ in 0..BATCH {
                let text = "the same note";
                let outcome = rt.execute_call(call(text)).await;
                assert!(
                    matches!(
                        outcome,
                        Outcome::ApprovalRequired { .. } | Outcome::ApprovalPending { .. }
                    ),
                    "{outcome:?}"
                );
            }
            start.elapsed().as_nanos() as f64 / BATCH as f64 / 1000.0
        })
    };
    let (mut asked, mut standing, mut new) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..SAMPLES {
        asked.push(time(&ask));
        standing.push(time(&review));
        // New reviews: at most PENDING_PER_CALLER pending for a caller, so each batch is
        // decided (denied) before the next.
        let mut spent = Duration::ZERO;
        for i in 0..BATCH.min(60) {
            let started = Instant::now();
            let outcome = executor.block_on(review.execute_call(call(&format!("fresh {round} {i}"))));
            spent += started.elapsed();
            let Outcome::ApprovalPending { approval_id, .. } = outcome else {
                panic!("{outcome:?}")
            };
            let no = Decided {
                approve: false,
                approver: Caller::named("bob").unwrap(),
                reason: None,
            };
            let store = review.approval_store().unwrap();
            decide(store.as_ref(), &approval_id, no, kyro_core::grants::now_ms()).unwrap();
        }
        new.push(spent.as_nanos() as f64 / BATCH.min(60) as f64 / 1000.0);
    }
    // A waiting task: from the approver's decision to its outcome.
    let mut waits = Vec::new();
    for round in 0..9 {
        let (hook, told) = TaskHook::new(&format!("t{round}"));
        let rt = review.clone();
        let waiting = executor.spawn({
            let call = call(&format!("task {round}")).as_task(hook);
            async move { rt.execute_call(call).await }
        });
        executor.block_on(told).unwrap();
        let store = review.approval_store().unwrap().clone();
        let pending = store.reviews(true, kyro_core::grants::now_ms()).unwrap();
        let id = pending
            .iter()
            .find(|r| r.arguments["text"] == format!("task {round}"))
            .unwrap()
            .id
            .clone();
        std::thread::sleep(Duration::from_millis(37 * round as u64 % 500));
        let yes = Decided {
            approve: true,
            approver: Caller::named("bob").unwrap(),
            reason: None,
        };
        let decided = Instant::now();
        decide(store.as_ref(), &id, yes, kyro_core::grants::now_ms()).unwrap();
        let outcome = executor.block_on(waiting).unwrap();
        assert!(matches!(outcome, Outcome::Ok { .. }), "{outcome:?}");
        waits.push(decided.elapsed().as_secs_f64() * 1000.0);
    }
    let (a, s, n) = (median(asked), median(standing), median(new));
    println!("review bench: {SAMPLES} samples; SQLite authority database in a temporary state home");
    println!("ask     approval_required                      median {a:>8.1} us/call");
    println!(
        "review  approval_pending, its standing review  median {s:>8.1} us/call  ({:.2}x ask)",
        s / a
    );
    println!(
        "review  approval_pending, a new review         median {n:>8.1} us/call  ({:.2}x ask)",
        n / a
    );
    println!(
        "a waiting task, decision to outcome            median {:>8.1} ms (polls every 500 ms)",
        median(waits)
    );
}
