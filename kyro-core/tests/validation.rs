//! Validation at the boundary: every violation collected with its pointer, no coercion.

mod common;

use common::{pointers, recorded, run, runtime};
use kyro_core::{ArgumentsError, Outcome, parse_arguments};
use serde_json::json;

#[test]
fn every_violation_is_collected_with_its_pointer() {
    let rt = runtime();
    let outcome = run(
        &rt,
        "record",
        json!({"label": "far too long", "offset": "3", "tags": [1], "extra": true}),
    );
    assert_eq!(pointers(&outcome), ["", "", "/label", "/offset", "/tags/0"]);
}

#[test]
fn coercion_attempts_are_violations() {
    let rt = runtime();
    for (args, pointer) in [
        (json!({"count": "1"}), "/count"),
        (json!({"count": 1.5}), "/count"),
        (json!({"count": 1.0}), "/count"),
        (json!({"count": 1e3}), "/count"),
        (json!({"count": -1}), "/count"),
        (json!({"count": 4294967296u64}), "/count"),
        (json!({"count": null}), "/count"),
        (json!({"count": true}), "/count"),
        (json!({"count": 1, "ratio": "0.5"}), "/ratio"),
        (json!({"count": 1, "mode": "slow"}), "/mode"),
        (json!({"count": 1, "offset": 9223372036854775808u64}), "/offset"),
    ] {
        let outcome = run(&rt, "record", args.clone());
        assert_eq!(pointers(&outcome), [pointer], "{args} {outcome:?}");
    }
}

#[test]
fn a_missing_required_field_is_reported_at_the_object() {
    let outcome = run(&runtime(), "record", json!({}));
    let Outcome::InvalidArguments { violations, .. } = &outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(violations[0].pointer, "");
    assert!(violations[0].message.contains("count"), "{}", violations[0].message);
}

#[test]
fn valid_arguments_run_and_the_result_is_returned() {
    let outcome = run(&runtime(), "rec", json!({"count": 3, "ratio": 1.0, "mode": "fast"}));
    assert_eq!(
        outcome,
        Outcome::Ok {
            tool: "record".into(),
            result: json!({"count": 3}),
            text: None,
        }
    );
}

#[test]
fn nothing_runs_when_the_arguments_are_invalid() {
    let ws = tempfile::tempdir().unwrap();
    let rt = common::runtime_in(ws.path(), &kyro_core::Policy::default());
    let before = recorded(ws.path());
    for args in [
        json!({"count": "x"}),
        json!([1]),
        json!({"count": 1, "n": 2}),
        json!(null),
    ] {
        assert!(matches!(run(&rt, "record", args), Outcome::InvalidArguments { .. }));
    }
    assert!(matches!(
        run(&rt, "no_such_tool", json!({"count": 1})),
        Outcome::UnknownTool { .. }
    ));
    assert_eq!(recorded(ws.path()), before, "the executor ran for a refused call");
}

#[test]
fn an_argument_alias_is_rewritten_and_a_conflict_is_refused() {
    let rt = runtime();
    assert!(matches!(run(&rt, "record", json!({"n": 2})), Outcome::Ok { .. }));
    assert!(matches!(
        run(&rt, "record", json!({"n": 2, "count": 2})),
        Outcome::Ok { .. }
    ));
    assert_eq!(pointers(&run(&rt, "record", json!({"n": 2, "count": 3}))), ["/n"]);
}

#[test]
fn a_non_object_is_refused_with_its_type() {
    let outcome = run(&runtime(), "record", json!([1, 2]));
    let Outcome::InvalidArguments { violations, .. } = outcome else {
        panic!()
    };
    assert!(violations[0].message.contains("an array"));
}

#[test]
fn an_unknown_tool_gets_suggestions() {
    let outcome = run(&runtime(), "recrod", json!({}));
    assert_eq!(
        outcome,
        Outcome::UnknownTool {
            name: "recrod".into(),
            suggestions: vec!["record".into()]
        }
    );
}

#[test]
fn edge_parsing_refuses_duplicates_nonfinite_numbers_and_non_objects() {
    assert!(matches!(
        parse_arguments(r#"{"k": 1, "k": 2}"#),
        Err(ArgumentsError::Syntax { .. })
    ));
    assert!(matches!(
        parse_arguments(r#"{"a": {"k": 1, "k": 1}}"#),
        Err(ArgumentsError::Syntax { .. })
    ));
    assert!(matches!(
        parse_arguments(r#"{"x": 1e400}"#),
        Err(ArgumentsError::Syntax { .. })
    ));
    assert!(matches!(
        parse_arguments(r#"{"x": NaN}"#),
        Err(ArgumentsError::Syntax { .. })
    ));
    assert_eq!(
        parse_arguments("[1]"),
        Err(ArgumentsError::NotAnObject { found: "an array" })
    );
    assert_eq!(
        parse_arguments(r#""s""#),
        Err(ArgumentsError::NotAnObject { found: "a string" })
    );
    assert!(matches!(
        parse_arguments(r#"{"a": 1} trailing"#),
        Err(ArgumentsError::Syntax { .. })
    ));
    let parsed = parse_arguments(r#"{"a": [1, {"b": "|é\r\n"}], "c": 18446744073709551615}"#).unwrap();
    assert_eq!(
        serde_json::Value::Object(parsed),
        json!({"a": [1, {"b": "|é\r\n"}], "c": u64::MAX})
    );
}
