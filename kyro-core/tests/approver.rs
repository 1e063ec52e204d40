//! The person asked from inside the boundary (`Call::asking`): asked only about a call the
//! rules let be asked for, never by a child call, answered only for the call's own
//! fingerprint once, and never letting a call run that its caller left or whose receipt
//! can no longer be written. Each test would fail without its rule (an adversarial
//! review's attacks on the first version, three of which ran the call).

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Touch, block_on, recorded};
use kyro_core::policy::{ApprovalRule, ApprovalRules, Limits};
use kyro_core::receipt::{CanonicalCall, Decision, Observer, Receipt};
use kyro_core::{
    ApprovalToken, Approver, Asked, BoxFuture, Call, Execute, Outcome, Policy, Registry, Runtime, ToolContext,
    ToolError, Workspace, tool,
};
use serde_json::json;

/// How a test's person answers a question.
type Answer = Box<dyn Fn(&Asked<'_>) -> Option<ApprovalToken> + Send + Sync>;

/// An approver that counts its questions and answers with `answer`.
struct Person {
    asked: AtomicUsize,
    answer: Answer,
    /// Never answers.
    silent: bool,
}

impl Person {
    fn new(answer: impl Fn(&Asked<'_>) -> Option<ApprovalToken> + Send + Sync + 'static) -> Arc<Person> {
        Arc::new(Person {
            asked: AtomicUsize::new(0),
            answer: Box::new(answer),
            silent: false,
        })
    }
    fn yes() -> Arc<Person> {
        Person::new(|a| Some(ApprovalToken::for_fingerprint(a.fingerprint)))
    }
    fn asked(&self) -> usize {
        self.asked.load(Ordering::SeqCst)
    }
}

impl Approver for Person {
    fn approve<'a>(&'a self, asked: Asked<'a>) -> BoxFuture<'a, Option<ApprovalToken>> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        if self.silent {
            return Box::pin(std::future::pending());
        }
        let answer = (self.answer)(&asked);
        Box::pin(async move { answer })
    }
}

/// A receipt log whose file can be taken away.
#[derive(Default)]
struct Log {
    broken: AtomicBool,
    seen: Mutex<Vec<String>>,
}

impl Observer for Log {
    fn observe(&self, receipt: &Receipt, _: Option<&CanonicalCall>, _: &Outcome) {
        if !self.broken.load(Ordering::SeqCst) {
            self.seen.lock().unwrap().push(receipt.tool.clone());
        }
    }
    fn ready(&self) -> Result<(), String> {
        if self.broken.load(Ordering::SeqCst) {
            Err("the log's disk is full".into())
        } else {
            Ok(())
        }
    }
}

/// Calls `touch` as its child (through `cx.call`), answering the child's outcome kind.
#[tool(name = "parent", category = "testing", effect = "none")]
pub struct Parent {
    /// The child's path.
    pub path: String,
}

/// The child's outcome.
#[kyro_core::output]
#[derive(Debug)]
pub struct Child {
    /// Its kind.
    pub kind: String,
}

impl Execute for Parent {
    type Output = Child;

    async fn run(self, cx: &ToolContext) -> Result<Child, ToolError> {
        let child = cx
            .call(Call::new("touch", json!({"path": self.path, "content": "child"})))
            .await;
        Ok(Child {
            kind: format!("{:?}", child.outcome.kind()),
        })
    }
}

kyro_core::catalog! {
    pub const ATTACK = [Parent, Touch];
}

fn runtime(root: &std::path::Path, policy: &Policy) -> Runtime {
    let registry = Arc::new(Registry::with_catalog(ATTACK).unwrap());
    Runtime::new(registry, Workspace::new(root).unwrap(), policy).unwrap()
}

fn touch() -> Call {
    Call::new("touch", json!({"path": "a", "content": "x"}))
}

/// A receipt log lost while the person thinks stops the approved call: it would run
/// unrecorded.
#[test]
fn a_log_lost_while_the_person_is_asked_stops_the_approved_call() {
    let ws = tempfile::tempdir().unwrap();
    let log = Arc::new(Log::default());
    let rt = runtime(ws.path(), &Policy::default()).with_observer(log.clone());
    let broken = log.clone();
    let person = Person::new(move |a| {
        // The disk fills while the question is open.
        broken.broken.store(true, Ordering::SeqCst);
        Some(ApprovalToken::for_fingerprint(a.fingerprint))
    });
    let outcome = block_on(rt.execute_call(touch().asking(person.clone())));
    assert_eq!(person.asked(), 1);
    assert!(
        matches!(outcome, Outcome::Denied { .. }),
        "ran with the receipt log unwritable: {outcome:?}, file written: {}",
        ws.path().join("a").exists()
    );
}

/// A caller that leaves while a person who never answers is asked is answered at once.
#[test]
fn a_person_who_never_answers_does_not_hold_a_cancelled_call() {
    let ws = tempfile::tempdir().unwrap();
    let policy = Policy {
        limits: Limits {
            timeout_ms: 200,
            ..Limits::default()
        },
        ..Policy::default()
    };
    let rt = runtime(ws.path(), &policy);
    let silent = Arc::new(Person {
        asked: AtomicUsize::new(0),
        answer: Box::new(|_| None),
        silent: true,
    });
    let call = touch().asking(silent.clone());
    let ended = block_on(async {
        // Cancelled at once.
        let run = rt.execute_until(call, rt.scope(), None, std::future::ready(()));
        tokio::time::timeout(Duration::from_secs(3), run).await
    });
    assert_eq!(silent.asked(), 1);
    assert!(
        ended.is_ok(),
        "cancelled at once with a 200 ms limit, and still waiting on the person after 3 s"
    );
}

/// The person is asked only once capabilities, paths and rules let the call be asked
/// for; a child call never asks the parent's person nor uses its answer.
#[test]
fn nobody_is_asked_about_a_call_refused_before_and_children_ask_nobody() {
    let ws = tempfile::tempdir().unwrap();
    let rt = runtime(ws.path(), &Policy::default());
    let person = Person::yes();
    for path in ["../out", "/etc/passwd", ".git/config"] {
        let call = Call::new("touch", json!({"path": path, "content": "x"})).asking(person.clone());
        let outcome = block_on(rt.execute_call(call));
        assert!(matches!(outcome, Outcome::Denied { .. }), "{path}: {outcome:?}");
    }
    let denying = Policy {
        approvals: ApprovalRules {
            write: ApprovalRule::Deny,
            ..ApprovalRules::default()
        },
        ..Policy::default()
    };
    let outcome = block_on(runtime(ws.path(), &denying).execute_call(touch().asking(person.clone())));
    assert!(matches!(outcome, Outcome::Denied { .. }), "{outcome:?}");
    assert_eq!(person.asked(), 0, "asked about a refused call");
    // Receipts unwritable: nobody asked.
    let log = Arc::new(Log::default());
    log.broken.store(true, Ordering::SeqCst);
    let rt2 = runtime(ws.path(), &Policy::default()).with_observer(log);
    let outcome = block_on(rt2.execute_call(touch().asking(person.clone())));
    assert!(matches!(outcome, Outcome::Denied { .. }), "{outcome:?}");
    assert_eq!(person.asked(), 0);
    // A child of an asking call.
    let parent = Call::new("parent", json!({"path": "c"})).asking(person.clone());
    let outcome = block_on(rt.execute_call(parent));
    let Outcome::Ok { result, .. } = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(result["kind"], "ApprovalRequired", "{result}");
    assert_eq!(person.asked(), 0, "the child asked the parent's person");
    assert!(!ws.path().join("c").exists());
}

/// An answer bound to other arguments, a refusal, or a token reused is refused.
#[test]
fn an_answer_is_honoured_only_for_its_own_fingerprint_once() {
    let ws = tempfile::tempdir().unwrap();
    let rt = runtime(ws.path(), &Policy::default());
    let elsewhere = Person::new(|_| Some(ApprovalToken::for_fingerprint(&"0".repeat(64))));
    let outcome = block_on(rt.execute(touch().asking(elsewhere)));
    assert!(
        matches!(outcome.receipt.decision, Decision::Denied { .. }),
        "{:?}",
        outcome.outcome
    );
    let no = Person::new(|a| Some(ApprovalToken::declined(a.fingerprint)));
    assert!(matches!(
        block_on(rt.execute_call(touch().asking(no))),
        Outcome::Denied { .. }
    ));
    // One token presented by the caller and also handed back by an approver: spent once.
    let fingerprint = rt.fingerprint("touch", &json!({"path": "a", "content": "x"}), rt.scope());
    let token = ApprovalToken::for_fingerprint(fingerprint.as_str());
    let again = token.clone();
    assert!(matches!(
        block_on(rt.execute_call(touch().approved(token))),
        Outcome::Ok { .. }
    ));
    let replay = Person::new(move |_| Some(again.clone()));
    let outcome = block_on(rt.execute_call(touch().asking(replay)));
    assert!(matches!(outcome, Outcome::Denied { .. }), "{outcome:?}");
    assert_eq!(recorded(ws.path()), 1);
}

/// A call its caller cancelled while the person was asked does not run on their yes.
#[test]
fn a_call_cancelled_while_the_person_is_asked_does_not_run_on_their_yes() {
    let ws = tempfile::tempdir().unwrap();
    let rt = runtime(ws.path(), &Policy::default());
    let person = Person::yes();
    let outcome = block_on(rt.execute_until(touch().asking(person.clone()), rt.scope(), None, std::future::ready(())));
    std::thread::sleep(Duration::from_millis(300));
    assert!(matches!(outcome.outcome, Outcome::Cancelled { .. }), "{outcome:?}");
    assert_eq!(person.asked(), 1);
    assert_eq!(recorded(ws.path()), 0, "the cancelled call ran: {outcome:?}");
}
