//! Playwright MCP's `devtools` tools a headless browser can serve, and
//! `browser_run_code_unsafe`: highlights over elements, a performance trace written to the
//! workspace, and model-written code that is always asked about.

use kyro_core::Outcome;
use kyro_core::policy::{ApprovalRule, ApprovalRules};
use serde_json::json;

use super::{Harness, Site, serial};

#[test]
fn highlights_outline_elements_until_hidden_and_never_enter_the_outline() {
    let Some(_serial) = serial() else { return };
    let site = Site::standard();
    let h = Harness::local();
    h.ok("browser_navigate", json!({ "url": site.url("/") }));
    let before = h.ok("browser_snapshot", json!({}))["snapshot"].clone();
    let shown = h.ok("browser_highlight", json!({ "selector": "#counter" }));
    assert_eq!(shown, json!({ "shown": 1, "removed": 0 }));
    let styled = h.ok(
        "browser_highlight",
        json!({ "selector": "h1", "style": "outline: 3px dashed red" }),
    );
    assert_eq!(styled["shown"], 2, "{styled}");
    // The page sees two overlays where the elements are; the second in its own style.
    let seen = h.ok(
        "browser_evaluate",
        json!({ "function": "() => { const marks = [...document.querySelectorAll('div[aria-hidden=true]')]; const h1 = document.querySelector('h1').getBoundingClientRect(); const last = marks[marks.length - 1].getBoundingClientRect(); return [marks.length, marks[marks.length - 1].style.outline, Math.round(last.top - h1.top), Math.round(last.width - h1.width)]; }" }),
    );
    assert_eq!(seen["result"], json!([2, "red dashed 3px", 0, 0]), "{seen}");
    assert_eq!(
        h.ok("browser_snapshot", json!({}))["snapshot"],
        before,
        "a highlight entered the outline"
    );
    // Highlighting again replaces; hiding one, then all.
    assert_eq!(
        h.ok("browser_highlight", json!({ "selector": "h1" })),
        json!({ "shown": 2, "removed": 1 })
    );
    assert_eq!(
        h.ok("browser_hide_highlight", json!({ "selector": "#counter" })),
        json!({ "shown": 1, "removed": 1 })
    );
    assert_eq!(
        h.ok("browser_hide_highlight", json!({})),
        json!({ "shown": 0, "removed": 1 })
    );
    let left = h.ok(
        "browser_evaluate",
        json!({ "function": "() => document.querySelectorAll('div[aria-hidden=true]').length" }),
    );
    assert_eq!(left["result"], 0);
    assert_eq!(
        h.failed("browser_highlight", json!({ "selector": "#nowhere" })).kind(),
        "no_such_element"
    );
    assert_eq!(
        h.failed("browser_highlight", json!({ "selector": "#hidden" })).kind(),
        "not_actionable"
    );
}

#[test]
fn a_trace_is_recorded_between_start_and_stop_and_written_inside_the_workspace() {
    let Some(_serial) = serial() else { return };
    let site = Site::standard();
    let h = Harness::local();
    h.ok("browser_navigate", json!({ "url": site.url("/") }));
    assert_eq!(h.failed("browser_stop_tracing", json!({})).kind(), "invalid_request");
    h.ok("browser_start_tracing", json!({}));
    assert_eq!(h.failed("browser_start_tracing", json!({})).kind(), "invalid_request");
    h.ok("browser_navigate", json!({ "url": site.url("/next") }));
    h.ok("browser_navigate", json!({ "url": site.url("/") }));
    h.ok("browser_click", json!({ "selector": "#counter" }));
    // A file outside the workspace is refused before the trace ends; it still records.
    let outside = h.call("browser_stop_tracing", json!({ "filename": "../trace.json" }));
    assert!(matches!(outside, Outcome::Denied { .. }), "{outside:?}");
    let saved = h.ok("browser_stop_tracing", json!({ "filename": "trace.json" }));
    assert_eq!(saved["path"], "trace.json");
    let bytes = std::fs::read(h._ws.path().join("trace.json")).unwrap();
    assert_eq!(saved["bytes"], bytes.len() as u64);
    let trace: serde_json::Value = serde_json::from_slice(&bytes).expect("the trace is JSON");
    let events = trace["traceEvents"].as_array().expect("trace events");
    assert!(
        events.iter().any(|e| e["name"] == "ResourceSendRequest"),
        "the navigation's request is in the trace"
    );
    // Without a name: `trace-<ms>.json` in the root.
    h.ok("browser_start_tracing", json!({}));
    let named = h.ok("browser_stop_tracing", json!({}));
    let name = named["path"].as_str().unwrap();
    assert!(name.starts_with("trace-") && name.ends_with(".json"), "{named}");
    assert!(h._ws.path().join(name).is_file());
}

#[test]
fn code_from_the_model_is_asked_about_even_where_exec_is_auto_and_runs_in_the_page() {
    let Some(_serial) = serial() else { return };
    let site = Site::standard();
    let network = json!({ "allow_hosts": ["127.0.0.1"] });
    let auto = ApprovalRules::uniform(ApprovalRule::Auto);
    let h = Harness::with_policy(kyro_core::Policy {
        approvals: auto.clone(),
        tools: [("network".to_owned(), network.clone())].into(),
        ..kyro_core::Policy::default()
    });
    h.ok("browser_navigate", json!({ "url": site.url("/") }));
    let code = "async () => { document.querySelector('#counter').click(); return [document.title, window.clicks]; }";
    let asked = h.call("browser_run_code_unsafe", json!({ "code": code }));
    assert!(matches!(asked, Outcome::ApprovalRequired { .. }), "{asked:?}");
    // Only a policy naming the tool lets it run unasked.
    let mut named = auto;
    named.tools.insert("browser_run_code_unsafe".into(), ApprovalRule::Auto);
    let h = Harness::with_policy(kyro_core::Policy {
        approvals: named,
        tools: [("network".to_owned(), network)].into(),
        ..kyro_core::Policy::default()
    });
    h.ok("browser_navigate", json!({ "url": site.url("/") }));
    let ran = h.ok("browser_run_code_unsafe", json!({ "code": code }));
    assert_eq!(ran["result"], json!(["Kyro test", 1]), "the page's own globals");
    std::fs::write(
        h._ws.path().join("script.js"),
        "async () => document.querySelector('h1').textContent;\n",
    )
    .unwrap();
    // Code from a file is asked about each time, whatever the policy says of the tool, and
    // the question shows the file's code (the arguments name only the file).
    match h.call(
        "browser_run_code_unsafe",
        json!({ "filename": "script.js", "code": "() => 0" }),
    ) {
        Outcome::ApprovalRequired { summary, .. } => {
            assert!(
                summary.contains("document.querySelector('h1').textContent"),
                "{summary}"
            )
        }
        other => panic!("code from a file ran unasked: {other:?}"),
    }
    assert_eq!(h.failed("browser_run_code_unsafe", json!({})).kind(), "invalid_request");
    let outside = h.call("browser_run_code_unsafe", json!({ "filename": "/etc/passwd" }));
    assert!(matches!(outside, Outcome::Denied { .. }), "{outside:?}");
    // Its requests are the page's: held to the network policy.
    let fetched = h.ok(
        "browser_run_code_unsafe",
        json!({ "code": "async () => { try { await fetch('http://10.255.255.1/'); return 'reached'; } catch (e) { return 'refused'; } }" }),
    );
    assert_eq!(fetched["result"], "refused");
}

#[test]
fn playwrights_target_and_element_spellings_reach_the_same_elements() {
    let Some(_serial) = serial() else { return };
    let site = Site::standard();
    let h = Harness::local();
    h.ok("browser_navigate", json!({ "url": site.url("/") }));
    // `target` as a selector, and as a ref read off the outline.
    h.ok(
        "browser_click",
        json!({ "element": "Count button", "target": "#counter" }),
    );
    let snapshot = h.ok("browser_snapshot", json!({}));
    let count = super::ref_of(&snapshot, "Clicked 1");
    h.ok("browser_click", json!({ "element": "Count button", "target": count }));
    let clicks = h.ok("browser_evaluate", json!({ "function": "() => window.clicks" }));
    assert_eq!(clicks["result"], 2);
    h.ok(
        "browser_type",
        json!({ "element": "Query field", "target": "#q", "text": "typed" }),
    );
    let filled = h.ok(
        "browser_fill_form",
        json!({ "fields": [{ "name": "Query", "type": "textbox", "target": "#q", "value": "filled" }] }),
    );
    assert_eq!(filled["values"], json!(["filled"]));
    let shot = h.ok(
        "browser_take_screenshot",
        json!({ "type": "jpeg", "scale": "css", "element": "heading", "target": "h1" }),
    );
    assert_eq!(shot["mime_type"], "image/jpeg", "{}", shot["mime_type"]);
    // Two ways to name one element at once is a typed refusal, not a guess.
    let both = h.failed("browser_click", json!({ "selector": "#counter", "target": "#q" }));
    assert_eq!(both.kind(), "not_actionable");
}
