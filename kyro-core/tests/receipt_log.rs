//! The receipt log cannot be planted: `.kyro` and the log exist from the start, a FIFO,
//! device or symlink at the log's name stalls nothing and serves nothing, and while the
//! log cannot be written no call runs. Each test plants what a program could have, with
//! a bounded wait where the old code blocked.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use common::{recorded, run, runtime_in};
use kyro_core::receipt::{Denial, JsonlReceiptLog, find_receipt, read_receipt_log};
use kyro_core::{Call, Outcome, Policy};
use serde_json::json;

/// A fresh workspace (canonical path) and a directory outside it.
fn places() -> (tempfile::TempDir, PathBuf, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    (dir, root, tempfile::tempdir().unwrap())
}

/// Runs `work` on a thread of its own; fails the test if it takes past 10 s (blocked on a
/// FIFO, say) instead of hanging it.
fn bounded<T: Send + 'static>(what: &str, work: impl FnOnce() -> T + Send + 'static) -> T {
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = sender.send(work());
    });
    receiver
        .recv_timeout(Duration::from_secs(10))
        .unwrap_or_else(|_| panic!("{what} blocked"))
}

/// A call of the counting tool under a workspace log: its outcome and whether it ran.
fn call_with_log(root: &Path) -> (Outcome, bool) {
    let root = root.to_path_buf();
    bounded("a call with a planted receipt log", move || {
        let log = Arc::new(JsonlReceiptLog::in_workspace(&root));
        let runtime = runtime_in(&root, &Policy::default()).with_observer(log);
        let before = recorded(&root);
        let outcome = run(&runtime, "record", json!({"count": 1}));
        (outcome, recorded(&root) > before)
    })
}

fn refused_unrecorded(outcome: &Outcome) -> bool {
    matches!(
        outcome,
        Outcome::Denied {
            reason: Denial::ReceiptsUnwritable { .. },
            ..
        }
    )
}

#[test]
fn kyro_and_its_log_are_made_before_any_call_and_read_back_by_call_id() {
    let (_dir, root, _outside) = places();
    let log = Arc::new(JsonlReceiptLog::in_workspace(&root));
    assert!(root.join(".kyro").symlink_metadata().unwrap().is_dir());
    let meta = root.join(".kyro/receipts.jsonl").symlink_metadata().unwrap();
    assert!(
        meta.is_file() && meta.len() == 0,
        "the log exists, empty, before any call"
    );
    let runtime = runtime_in(&root, &Policy::default()).with_observer(log);
    let done = common::execute(&runtime, Call::new("record", json!({"count": 2})));
    assert!(matches!(done.outcome, Outcome::Ok { .. }), "{:?}", done.outcome);
    let found = find_receipt(&root, &done.receipt.call_id).unwrap().unwrap();
    assert_eq!(found["call_id"], done.receipt.call_id.as_str());
    assert_eq!(found["tool"], "record");
    assert_eq!(find_receipt(&root, "no-such-call").unwrap(), None);
}

#[test]
fn a_fifo_planted_as_the_log_refuses_calls_at_once_and_is_never_read() {
    let (_dir, root, _outside) = places();
    std::fs::create_dir(root.join(".kyro")).unwrap();
    let status = std::process::Command::new("mkfifo")
        .arg(root.join(".kyro/receipts.jsonl"))
        .status()
        .unwrap();
    assert!(status.success());
    let (outcome, ran) = call_with_log(&root);
    assert!(refused_unrecorded(&outcome), "{outcome:?}");
    assert!(!ran, "the tool ran though its receipt could not be written");
    let reader = root.clone();
    let (read, found) = bounded("reading a FIFO receipt log", move || {
        (
            read_receipt_log(&reader).map(drop),
            find_receipt(&reader, "x").map(drop),
        )
    });
    assert!(read.is_err() && found.is_err(), "{read:?} {found:?}");
}

#[test]
fn a_hard_link_planted_as_the_log_is_refused() {
    let (_dir, root, outside) = places();
    let elsewhere = outside.path().join("elsewhere");
    std::fs::write(&elsewhere, "").unwrap();
    std::fs::create_dir(root.join(".kyro")).unwrap();
    std::fs::hard_link(&elsewhere, root.join(".kyro/receipts.jsonl")).unwrap();
    let (outcome, ran) = call_with_log(&root);
    assert!(refused_unrecorded(&outcome) && !ran, "{outcome:?}");
    assert_eq!(
        std::fs::read_to_string(&elsewhere).unwrap(),
        "",
        "receipts appended elsewhere"
    );
    assert!(find_receipt(&root, "x").is_err());
}

#[test]
fn a_symlink_planted_as_the_log_or_as_kyro_is_neither_followed_nor_served() {
    let (_dir, root, outside) = places();
    let secret = outside.path().join("receipts.jsonl");
    let line = "{\"call_id\":\"x\",\"secret\":true}\n";
    std::fs::write(&secret, line).unwrap();
    // The log a symlink to an outside file.
    std::fs::create_dir(root.join(".kyro")).unwrap();
    std::os::unix::fs::symlink(&secret, root.join(".kyro/receipts.jsonl")).unwrap();
    let (outcome, ran) = call_with_log(&root);
    assert!(refused_unrecorded(&outcome) && !ran, "{outcome:?}");
    assert_eq!(
        std::fs::read_to_string(&secret).unwrap(),
        line,
        "written through the link"
    );
    assert!(read_receipt_log(&root).is_err());
    assert!(find_receipt(&root, "x").is_err(), "an outside file served as the log");
    // `.kyro` itself a symlink to the outside directory.
    let (_dir, root, _unused) = places();
    std::os::unix::fs::symlink(outside.path(), root.join(".kyro")).unwrap();
    let (outcome, ran) = call_with_log(&root);
    assert!(refused_unrecorded(&outcome) && !ran, "{outcome:?}");
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), line);
    assert_eq!(
        std::fs::read_dir(outside.path()).unwrap().count(),
        1,
        "nothing made outside"
    );
    assert!(find_receipt(&root, "x").is_err(), "an outside file served as the log");
}

#[test]
fn refusals_before_authorization_are_still_told_apart() {
    // An unknown tool or invalid arguments say so, log or no log: only a call that would be
    // authorized is refused for want of a receipt.
    let (_dir, root, _outside) = places();
    std::os::unix::fs::symlink("/nonexistent", root.join(".kyro")).unwrap();
    let log = Arc::new(JsonlReceiptLog::in_workspace(&root));
    let runtime = runtime_in(&root, &Policy::default()).with_observer(log);
    assert!(matches!(run(&runtime, "nope", json!({})), Outcome::UnknownTool { .. }));
    assert!(refused_unrecorded(&run(&runtime, "record", json!({"count": 1}))));
    assert!(runtime.observers_ready().is_err());
}
