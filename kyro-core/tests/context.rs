//! What a tool's context lets it do, and what it does not: blocking work never stalls the
//! server, child calls carry no approval a tool made itself, and a forwarded call carries
//! a person's approval of the caller's exact arguments once, for the same effect only, and
//! nothing else that let the caller through.

use std::sync::Arc;
use std::time::Duration;

use kyro_core::policy::{ApprovalRule, ApprovalRules, Fingerprint, Limits};
use kyro_core::{
    ApprovalToken, Call, Execute, Outcome, OutcomeKind, Policy, Registry, Runtime, ToolContext, ToolError, Workspace,
    WorkspacePath, tool,
};
use serde_json::{Value, json};

/// Blocks its thread (as a sync client or std I/O would), then answers.
#[tool(name = "block", category = "testing", effect = "none")]
struct Block {
    /// How long, in milliseconds.
    ms: u64,
}

/// Done.
#[kyro_core::output]
struct Done {
    /// Always true.
    done: bool,
}

impl Execute for Block {
    type Output = Done;

    async fn run(self, _cx: &ToolContext) -> Result<Done, ToolError> {
        std::thread::sleep(Duration::from_millis(self.ms));
        Ok(Done { done: true })
    }
}

/// Answers at once.
#[tool(name = "quick", category = "testing", effect = "none")]
struct Quick {}

impl Execute for Quick {
    type Output = Done;

    async fn run(self, _cx: &ToolContext) -> Result<Done, ToolError> {
        Ok(Done { done: true })
    }
}

/// Writes a file (needs approval under the default policy).
#[tool(name = "put", category = "testing", effect = "write")]
struct Put {
    /// Where.
    path: WorkspacePath,
}

impl Execute for Put {
    type Output = Done;

    async fn run(self, cx: &ToolContext) -> Result<Done, ToolError> {
        cx.path(&self.path)?.write_atomic(b"x", None)?;
        Ok(Done { done: true })
    }
}

/// Runs a program (exec: needs approval under the default policy; does nothing here).
#[tool(name = "launch", category = "testing", effect = "exec")]
struct Launch {}

impl Execute for Launch {
    type Output = Done;

    async fn run(self, _cx: &ToolContext) -> Result<Done, ToolError> {
        Ok(Done { done: true })
    }
}

/// A write tool that makes child calls: `put` with an approval it minted itself, then
/// `put` forwarded twice, then `launch` forwarded.
#[tool(name = "relay", category = "testing", effect = "write")]
struct Relay {
    /// How the child calls are made: `self_approved`, `forward_twice`, `forward_exec`.
    how: String,
}

/// The child calls' outcome kinds.
#[kyro_core::output]
struct Relayed {
    /// One per child call.
    outcomes: Vec<String>,
}

impl Execute for Relay {
    type Output = Relayed;

    async fn run(self, cx: &ToolContext) -> Result<Relayed, ToolError> {
        let kind = |o: &Outcome| serde_json::to_value(o.kind()).unwrap().as_str().unwrap().to_owned();
        let mut outcomes = Vec::new();
        match self.how.as_str() {
            "self_approved" => {
                let arguments = json!({"path": "minted.txt"});
                let (_, fingerprint) = Fingerprint::of("put", &arguments, cx.scope(), cx.workspace().root());
                let call = Call::new("put", arguments).approved(ApprovalToken::for_fingerprint(fingerprint.as_str()));
                outcomes.push(kind(&cx.call(call).await.outcome));
            }
            "forward_twice" => {
                for path in ["first.txt", "second.txt"] {
                    outcomes.push(kind(&cx.forward("put", json!({"path": path})).await.outcome));
                }
            }
            _ => outcomes.push(kind(&cx.forward("launch", json!({})).await.outcome)),
        }
        Ok(Relayed { outcomes })
    }
}

/// Tags of `spin` calls that saw their stop signal.
static SAW_STOP: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Blocking work that checks its stop signal every few milliseconds (for 5 s at most).
#[tool(name = "spin", category = "testing", effect = "none")]
struct Spin {
    /// Recorded in `SAW_STOP` when the signal ends the work.
    tag: String,
}

impl Execute for Spin {
    type Output = Done;

    async fn run(self, cx: &ToolContext) -> Result<Done, ToolError> {
        let started = std::time::Instant::now();
        while started.elapsed() < Duration::from_secs(5) {
            if let Err(stopped) = cx.stop().check() {
                SAW_STOP.lock().unwrap().push(self.tag);
                return Err(stopped);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(Done { done: true })
    }
}

/// Calls `spin` and waits for it.
#[tool(name = "nest", category = "testing", effect = "none")]
struct Nest {
    /// Passed to `spin`.
    tag: String,
}

impl Execute for Nest {
    type Output = Done;

    async fn run(self, cx: &ToolContext) -> Result<Done, ToolError> {
        cx.call(Call::new("spin", json!({"tag": self.tag}))).await;
        Ok(Done { done: true })
    }
}

kyro_core::catalog! {
    const CATALOG = [Block, Quick, Put, Launch, Relay, Spin, Nest];
}

fn runtime(root: &std::path::Path, policy: &Policy) -> Runtime {
    let registry = Arc::new(Registry::with_catalog(CATALOG).unwrap());
    Runtime::new(registry, Workspace::new(root).unwrap(), policy).unwrap()
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn a_blocking_executor_does_not_stall_other_calls_on_a_current_thread_runtime() {
    let ws = tempfile::tempdir().unwrap();
    let rt = runtime(ws.path(), &Policy::default());
    let order = current_thread().block_on(async {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let slow = {
            let (rt, tx) = (rt.clone(), tx.clone());
            async move {
                let outcome = rt.execute_call(Call::new("block", json!({"ms": 1500}))).await;
                tx.send(("block", outcome.kind())).unwrap();
            }
        };
        let fast = {
            let (rt, tx) = (rt.clone(), tx.clone());
            async move {
                // Starts after the blocking call is under way.
                tokio::time::sleep(Duration::from_millis(100)).await;
                let outcome = rt.execute_call(Call::new("quick", json!({}))).await;
                tx.send(("quick", outcome.kind())).unwrap();
            }
        };
        tokio::join!(slow, fast);
        drop(tx);
        let mut order = Vec::new();
        while let Some(done) = rx.recv().await {
            order.push(done);
        }
        order
    });
    assert_eq!(
        order,
        [("quick", OutcomeKind::Ok), ("block", OutcomeKind::Ok)],
        "the quick call finished while the blocking one held its thread"
    );
}

#[test]
fn a_blocking_executor_still_times_out() {
    let ws = tempfile::tempdir().unwrap();
    let policy = Policy {
        limits: Limits {
            timeout_ms: 100,
            ..Limits::default()
        },
        ..Policy::default()
    };
    let rt = runtime(ws.path(), &policy);
    let outcome = current_thread().block_on(rt.execute_call(Call::new("block", json!({"ms": 1500}))));
    assert!(
        matches!(outcome, Outcome::TimedOut { limit_ms: 100, .. }),
        "{outcome:?}"
    );
}

fn relay(how: &str, approvals: ApprovalRules) -> (Vec<Value>, tempfile::TempDir) {
    relay_approved_by(how, approvals, Some(ApprovalToken::for_fingerprint))
}

/// `relay` called with the approval `approval` makes of its fingerprint, or none.
fn relay_approved_by(
    how: &str,
    approvals: ApprovalRules,
    approval: Option<fn(&str) -> ApprovalToken>,
) -> (Vec<Value>, tempfile::TempDir) {
    let ws = tempfile::tempdir().unwrap();
    let policy = Policy {
        approvals,
        ..Policy::default()
    };
    let rt = runtime(ws.path(), &policy);
    let arguments = json!({"how": how});
    let fingerprint = rt.fingerprint("relay", &arguments, rt.scope());
    let mut call = Call::new("relay", arguments);
    if let Some(approval) = approval {
        call = call.approved(approval(fingerprint.as_str()));
    }
    match current_thread().block_on(rt.execute_call(call)) {
        Outcome::Ok { result, .. } => (result["outcomes"].as_array().unwrap().clone(), ws),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_tool_cannot_approve_its_own_child_calls() {
    let (outcomes, ws) = relay("self_approved", ApprovalRules::default());
    assert_eq!(outcomes, [json!("approval_required")]);
    assert!(!ws.path().join("minted.txt").exists());
}

#[test]
fn a_forward_carries_the_callers_approval_once() {
    let (outcomes, ws) = relay("forward_twice", ApprovalRules::default());
    assert_eq!(outcomes, [json!("ok"), json!("approval_required")]);
    assert!(ws.path().join("first.txt").exists());
    assert!(!ws.path().join("second.txt").exists());
}

#[test]
fn a_forward_to_another_effect_carries_no_approval() {
    let asks_for_exec = ApprovalRules {
        exec: ApprovalRule::Ask,
        ..ApprovalRules::default()
    };
    let (outcomes, _ws) = relay("forward_exec", asks_for_exec);
    assert_eq!(outcomes, [json!("approval_required")]);
}

#[test]
fn a_forward_carries_nothing_when_a_rule_let_the_call_through() {
    // `relay` runs without asking; `put`, its forwarded tool, is asked by its own rule.
    let put_asks = ApprovalRules {
        write: ApprovalRule::Auto,
        tools: [("put".to_owned(), ApprovalRule::Ask)].into(),
        ..ApprovalRules::default()
    };
    let (outcomes, ws) = relay_approved_by("forward_twice", put_asks, None);
    assert_eq!(outcomes, [json!("approval_required"), json!("approval_required")]);
    assert!(!ws.path().join("first.txt").exists(), "the forward made up an approval");
}

#[test]
fn a_forward_carries_nothing_when_a_standing_approval_let_the_call_through() {
    // Approved for the session, not for these arguments: `put` is asked on its own.
    let (outcomes, ws) = relay_approved_by("forward_twice", ApprovalRules::default(), Some(ApprovalToken::standing));
    assert_eq!(outcomes, [json!("approval_required"), json!("approval_required")]);
    assert!(!ws.path().join("first.txt").exists());
}

fn limited(ms: u64) -> Policy {
    Policy {
        limits: Limits {
            timeout_ms: ms,
            ..Limits::default()
        },
        ..Policy::default()
    }
}

fn saw_stop(tag: &str) -> bool {
    SAW_STOP.lock().unwrap().iter().any(|t| t == tag)
}

#[test]
fn blocking_work_that_checks_its_stop_signal_ends_at_the_limit_and_the_receipt_says_so() {
    let ws = tempfile::tempdir().unwrap();
    let rt = runtime(ws.path(), &limited(100));
    let started = std::time::Instant::now();
    let done = current_thread().block_on(rt.execute_in(Call::new("spin", json!({"tag": "limit"})), rt.scope(), None));
    assert!(matches!(done.outcome, Outcome::TimedOut { .. }), "{:?}", done.outcome);
    assert_eq!(done.receipt.work_stopped, Some(true));
    assert!(saw_stop("limit"));
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
}

#[test]
fn blocking_work_that_ignores_the_signal_is_receipted_as_still_running() {
    let ws = tempfile::tempdir().unwrap();
    let rt = runtime(ws.path(), &limited(100));
    let done = current_thread().block_on(rt.execute_in(Call::new("block", json!({"ms": 1500})), rt.scope(), None));
    assert!(matches!(done.outcome, Outcome::TimedOut { .. }), "{:?}", done.outcome);
    assert_eq!(done.receipt.work_stopped, Some(false));
    let quick = current_thread().block_on(rt.execute_in(Call::new("quick", json!({})), rt.scope(), None));
    assert_eq!(quick.receipt.work_stopped, None, "only stopped calls say it");
}

#[test]
fn a_child_call_is_stopped_with_the_call_that_made_it() {
    let ws = tempfile::tempdir().unwrap();
    let rt = runtime(ws.path(), &limited(10_000));
    let done = current_thread().block_on(rt.execute_until(
        Call::new("nest", json!({"tag": "child"})),
        rt.scope(),
        None,
        async { tokio::time::sleep(Duration::from_millis(200)).await },
    ));
    assert!(matches!(done.outcome, Outcome::Cancelled { .. }), "{:?}", done.outcome);
    // The child's own limit is 10 s away: only the parent's signal can have stopped it.
    let waited = std::time::Instant::now();
    while !saw_stop("child") && waited.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        saw_stop("child"),
        "the child kept running after its parent was cancelled"
    );
}
