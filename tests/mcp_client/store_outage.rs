//! A replica whose PostgreSQL fails under it: the call in flight is answered
//! `receipt_unrecorded` (what it did carried whole), no call runs and `/readyz` says so
//! while its receipt waits, an approval state sent meanwhile is not spent, and once the
//! store is back the waiting receipt is written (once) and calls run again, with no
//! restart. Two failures: inserts refused by a trigger, then the server stopped.

use serde_json::{Value, json};

use super::postgres::Postgres;
use super::replicas::{ALICE, replica};
use super::{call_as, post_as, workspace};

/// `GET /readyz`: whether it answered 200.
fn ready(url: &str) -> bool {
    let address = url.trim_start_matches("http://").trim_end_matches("/mcp");
    super::ops::get(address, "/readyz").0.starts_with("http/1.1 200")
}

/// Waits (20 s at most) for the replica to be ready again.
fn ready_again(url: &str) {
    for _ in 0..200 {
        if ready(url) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("the replica was not ready 20 s after its store came back");
}

/// Alice's stateless `read_file` of a.txt.
fn read(url: &str) -> Value {
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}});
    post_as(
        url,
        ALICE,
        "tools/call",
        json!({"name": "read_file", "arguments": {"path": "a.txt"}, "_meta": meta}),
    )
}

/// The text of an error answer.
fn error_of(answer: &Value) -> String {
    assert_eq!(answer["isError"], true, "{answer}");
    answer["content"][0]["text"].as_str().unwrap().to_owned()
}

const UNRECORDED: &str =
    "execution_failed (read_file): receipt_unrecorded: the call ended `ok`, but its receipt is not recorded yet";
const REFUSED: &str = "the call's receipt cannot be recorded";

#[test]
fn a_replica_whose_store_fails_holds_calls_until_their_receipts_are_written() {
    let Some(pg) = Postgres::start() else { return };
    let ws = workspace();
    let tokens = ws.path().join("tokens");
    std::fs::write(&tokens, format!("alice {ALICE}\n")).unwrap();
    let server = replica(ws.path(), &pg.url, &["--token-file", tokens.to_str().unwrap()], None);
    assert_eq!(read(&server.url)["isError"], false);
    // Asked before the failure; answered during it.
    let asked = call_as(&server.url, ALICE, json!(["touch", "t"]), Value::Null);
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let yes = json!({"inputResponses": {"approval": {"action": "accept", "content": {"approve": true, "remember": "once"}}},
        "requestState": asked["requestState"]});

    // 1. Receipts cannot be inserted: the call ran, and says so, but is not acknowledged.
    pg.sql(
        "CREATE FUNCTION kyro_test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'receipts refused by the test'; END $$;
         CREATE TRIGGER kyro_test_refuse BEFORE INSERT ON kyro_receipts FOR EACH ROW EXECUTE FUNCTION kyro_test_refuse();",
    );
    let unrecorded = error_of(&read(&server.url));
    assert!(unrecorded.starts_with(UNRECORDED), "{unrecorded}");
    assert!(
        unrecorded.contains("receipts refused by the test"),
        "the server's own words: {unrecorded}"
    );
    assert!(!ready(&server.url));
    // Nothing runs meanwhile, approved or not, and the approval is not spent.
    let held = error_of(&call_as(&server.url, ALICE, json!(["touch", "t"]), yes.clone()));
    assert!(held.contains(REFUSED), "{held}");
    assert!(!ws.path().join("t").exists());
    assert!(error_of(&read(&server.url)).contains(REFUSED));
    // Back: the waiting receipts are written without a restart, and the state redeems.
    pg.sql("DROP TRIGGER kyro_test_refuse ON kyro_receipts");
    ready_again(&server.url);
    let ran = call_as(&server.url, ALICE, json!(["touch", "t"]), yes);
    assert_eq!(ran["isError"], false, "{ran}");
    assert!(ws.path().join("t").exists());

    // 2. The server itself goes away, and comes back on the same address.
    pg.pause();
    let gone = error_of(&read(&server.url));
    assert!(gone.starts_with(UNRECORDED), "{gone}");
    assert!(!ready(&server.url));
    pg.resume();
    ready_again(&server.url);
    assert_eq!(read(&server.url)["isError"], false);

    // Every call's receipt, once, in one intact chain: a read, the question, the read
    // answered unrecorded, 2 refusals, the approved touch (its answer redeemed in its one
    // pass), the read answered unrecorded while the server was away, a read.
    let (ok, listed) = super::replicas::kyro(&["receipts", "--json", "--limit", "100"], &pg.url);
    assert!(ok, "{listed}");
    let receipts: Vec<Value> = listed.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let outcomes: Vec<&str> = receipts.iter().map(|r| r["outcome"].as_str().unwrap()).collect();
    assert_eq!(
        outcomes,
        ["ok", "approval_required", "ok", "denied", "denied", "ok", "ok", "ok"],
        "{listed}"
    );
    let mut ids: Vec<&str> = receipts.iter().map(|r| r["call_id"].as_str().unwrap()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), receipts.len(), "one receipt a call: {listed}");
    let (intact, report) = super::replicas::kyro(&["receipts", "verify"], &pg.url);
    assert!(intact && report.contains("8 receipts"), "{report}");
    // The metrics count each call as its client was told it ended: the two reads answered
    // `receipt_unrecorded` are no `ok` there.
    let address = server.url.trim_start_matches("http://").trim_end_matches("/mcp");
    let (_, metrics) = super::ops::get(address, "/metrics");
    assert!(
        metrics.contains(r#"kyro_calls_total{outcome="execution_failed"} 2"#)
            && metrics.contains(r#"kyro_calls_total{outcome="ok"} 3"#),
        "{metrics}"
    );
}
