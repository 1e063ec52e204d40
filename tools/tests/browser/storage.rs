//! Playwright's storage capability: cookies by name, `localStorage` and `sessionStorage` as
//! the page sees them, and the storage state saved to a confined workspace file and
//! restored from an untrusted one only for hosts the network policy allows.

use std::collections::HashMap;

use kyro_core::Outcome;
use kyro_core::policy::{Access, ApprovalRule, ApprovalRules, RootSpec};
use kyro_core::{Policy, ToolError};
use kyro_tools::Failure;
use serde_json::{Value, json};

use super::{Harness, Site, serial};

/// A site whose `/` is a small page.
fn site() -> Site {
    let mut pages = HashMap::new();
    pages.insert(
        "/",
        (
            200,
            vec![],
            "<html><head><title>Store</title></head><body><p>Store</p></body></html>".to_owned(),
        ),
    );
    Site::start(pages)
}

/// What the page's script `body` returns.
fn page(h: &Harness, body: &str) -> Value {
    h.ok("browser_evaluate", json!({ "function": format!("() => {body}") }))["result"].clone()
}

fn names(list: &Value, field: &str) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|c| c[field].as_str().unwrap().to_owned())
        .collect()
}

fn no_such(error: &ToolError, record: &str, key: &str) {
    assert!(
        matches!(Failure::of(error), Some(Failure::NoSuchRecord { record: r, key: k }) if r == record && k == key),
        "{error:?}"
    );
}

#[test]
fn cookies_are_read_and_deleted_by_name_and_listed_by_path() {
    let Some(_serial) = serial() else { return };
    let site = site();
    let h = Harness::local();
    h.ok("browser_navigate", json!({ "url": site.url("/") }));
    h.ok("browser_cookie_set", json!({ "name": "a", "value": "1" }));
    h.ok(
        "browser_cookie_set",
        json!({ "name": "b", "value": "2", "path": "/app" }),
    );
    let got = h.ok("browser_cookie_get", json!({ "name": "a" }));
    assert_eq!(
        (got["cookies"][0]["value"].clone(), got["cookies"][0]["domain"].clone()),
        (json!("1"), json!("127.0.0.1")),
        "{got}"
    );
    assert_eq!(got["cookies"].as_array().unwrap().len(), 1, "{got}");
    let under_app = h.ok("browser_cookie_list", json!({ "path": "/app" }));
    assert_eq!(names(&under_app["cookies"], "name"), ["b"]);
    assert_eq!(page(&h, "document.cookie"), "a=1", "b is for /app only");
    // Deleted by name: the page no longer has it.
    let left = h.ok("browser_cookie_delete", json!({ "name": "a" }));
    assert_eq!(names(&left["cookies"], "name"), ["b"]);
    assert_eq!(page(&h, "document.cookie"), "");
    // Typed refusals for a name the browser has no cookie of.
    no_such(&h.failed("browser_cookie_get", json!({ "name": "a" })), "cookie", "a");
    no_such(
        &h.failed("browser_cookie_delete", json!({ "name": "a" })),
        "cookie",
        "a",
    );
    assert!(matches!(
        h.call("browser_cookie_get", json!({})),
        Outcome::InvalidArguments { .. }
    ));
}

#[test]
fn local_and_session_storage_are_listed_deleted_and_cleared_as_the_page_sees_them() {
    let Some(_serial) = serial() else { return };
    let site = site();
    let h = Harness::local();
    h.ok("browser_navigate", json!({ "url": site.url("/") }));
    // sessionStorage: set by the tool, read by the page; the page's own entry read back.
    let set = h.ok(
        "browser_sessionstorage_set",
        json!({ "key": "tab", "value": "one \"1\"" }),
    );
    assert_eq!(set["origin"], site.url(""));
    assert_eq!(set["entries"], json!([{ "key": "tab", "value": "one \"1\"" }]));
    assert_eq!(page(&h, "sessionStorage.getItem('tab')"), "one \"1\"");
    assert_eq!(
        page(&h, "localStorage.getItem('tab')"),
        Value::Null,
        "the areas are apart"
    );
    page(&h, "sessionStorage.setItem('own', 'x')");
    let listed = h.ok("browser_sessionstorage_list", json!({}));
    assert_eq!(names(&listed["entries"], "key"), ["own", "tab"]);
    let one = h.ok("browser_sessionstorage_get", json!({ "key": "own" }));
    assert_eq!(one["entries"], json!([{ "key": "own", "value": "x" }]));
    assert_eq!(
        h.ok("browser_sessionstorage_get", json!({ "key": "absent" }))["entries"],
        json!([])
    );
    let left = h.ok("browser_sessionstorage_delete", json!({ "key": "tab" }));
    assert_eq!(names(&left["entries"], "key"), ["own"]);
    assert_eq!(page(&h, "sessionStorage.getItem('tab')"), Value::Null);
    no_such(
        &h.failed("browser_sessionstorage_delete", json!({ "key": "tab" })),
        "sessionStorage key",
        "tab",
    );
    assert_eq!(h.ok("browser_sessionstorage_clear", json!({}))["entries"], json!([]));
    assert_eq!(page(&h, "sessionStorage.length"), 0);

    // localStorage: the same shapes.
    h.ok("browser_localstorage_set", json!({ "key": "k1", "value": "v1" }));
    page(&h, "localStorage.setItem('k2', 'v2')");
    let listed = h.ok("browser_localstorage_list", json!({}));
    assert_eq!(
        listed["entries"],
        json!([{ "key": "k1", "value": "v1" }, { "key": "k2", "value": "v2" }])
    );
    let left = h.ok("browser_localstorage_delete", json!({ "key": "k1" }));
    assert_eq!(names(&left["entries"], "key"), ["k2"]);
    assert_eq!(page(&h, "localStorage.getItem('k1')"), Value::Null);
    no_such(
        &h.failed("browser_localstorage_delete", json!({ "key": "k1" })),
        "localStorage key",
        "k1",
    );
    h.ok("browser_localstorage_clear", json!({}));
    assert_eq!(page(&h, "localStorage.length"), 0);
    // A key is required to delete.
    assert!(matches!(
        h.call("browser_localstorage_delete", json!({})),
        Outcome::InvalidArguments { .. }
    ));
    assert!(matches!(
        h.call("browser_sessionstorage_delete", json!({})),
        Outcome::InvalidArguments { .. }
    ));
}

/// A port on 127.0.0.1 where nothing listens.
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn the_storage_state_round_trips_cookies_and_every_origins_local_storage() {
    let Some(_serial) = serial() else { return };
    let (one, two) = (site(), site());
    let h = Harness::local();
    let ws = h._ws.path().to_owned();
    h.ok("browser_navigate", json!({ "url": one.url("/") }));
    h.ok(
        "browser_cookie_set",
        json!({ "name": "sid", "value": "s1", "http_only": true, "same_site": "Lax" }),
    );
    h.ok("browser_localstorage_set", json!({ "key": "who", "value": "one" }));
    h.ok("browser_navigate", json!({ "url": two.url("/") }));
    page(&h, "localStorage.setItem('who', 'two')");
    // The tab now shows the second origin; the first's storage is saved too.
    let saved = h.ok("browser_storage_state", json!({ "filename": "state.json" }));
    assert_eq!(saved["path"], "state.json");
    assert_eq!(saved["cookies"], 1);
    let mut origins = vec![one.url(""), two.url("")];
    origins.sort();
    assert_eq!(saved["origins"], json!(origins));
    let file: Value = serde_json::from_str(&std::fs::read_to_string(ws.join("state.json")).unwrap()).unwrap();
    assert_eq!(saved["bytes"], std::fs::metadata(ws.join("state.json")).unwrap().len());
    // Playwright's shape.
    let cookie = &file["cookies"][0];
    assert_eq!(
        (&cookie["name"], &cookie["value"], &cookie["domain"], &cookie["path"]),
        (&json!("sid"), &json!("s1"), &json!("127.0.0.1"), &json!("/"))
    );
    assert_eq!(
        (
            &cookie["expires"],
            &cookie["httpOnly"],
            &cookie["secure"],
            &cookie["sameSite"]
        ),
        (&json!(-1.0), &json!(true), &json!(false), &json!("Lax"))
    );
    let first = file["origins"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["origin"] == one.url(""))
        .unwrap();
    assert_eq!(first["localStorage"], json!([{ "name": "who", "value": "one" }]));

    // Everything cleared, then restored: the pages see it again.
    h.ok("browser_cookie_clear", json!({}));
    h.ok("browser_localstorage_clear", json!({}));
    h.ok("browser_navigate", json!({ "url": one.url("/") }));
    h.ok("browser_localstorage_clear", json!({}));
    assert_eq!(page(&h, "localStorage.getItem('who')"), Value::Null);
    let restored = h.ok("browser_set_storage_state", json!({ "filename": "state.json" }));
    assert_eq!(restored["cookies"], 1, "{restored}");
    assert_eq!(restored["origins"], json!(origins));
    assert_eq!(restored["skipped"], json!([]));
    h.ok("browser_navigate", json!({ "url": one.url("/") }));
    assert_eq!(page(&h, "localStorage.getItem('who')"), "one");
    let sid = h.ok("browser_cookie_get", json!({ "name": "sid" }));
    assert_eq!(
        (
            sid["cookies"][0]["value"].clone(),
            sid["cookies"][0]["http_only"].clone()
        ),
        (json!("s1"), json!(true))
    );
    assert!(one.requested("/"));
    h.ok("browser_navigate", json!({ "url": two.url("/") }));
    assert_eq!(page(&h, "localStorage.getItem('who')"), "two");

    // An origin no page opened is restored without a request to it (nothing listens
    // there), and saved again after.
    let quiet = format!("http://127.0.0.1:{}", closed_port());
    let planted = json!({ "cookies": [], "origins": [
        { "origin": quiet, "localStorage": [{ "name": "q", "value": "quiet" }] }
    ] });
    std::fs::write(ws.join("quiet.json"), planted.to_string()).unwrap();
    let restored = h.ok("browser_set_storage_state", json!({ "filename": "quiet.json" }));
    assert_eq!(restored["origins"], json!([quiet]));
    let again = h.ok("browser_storage_state", json!({}));
    let path = again["path"].as_str().unwrap();
    assert!(
        path.starts_with("storage-state-") && path.ends_with("Z.json") && !path.contains(':'),
        "{path}"
    );
    let file: Value = serde_json::from_str(&std::fs::read_to_string(ws.join(path)).unwrap()).unwrap();
    assert_eq!(
        file["origins"],
        json!([{ "origin": quiet, "localStorage": [{ "name": "q", "value": "quiet" }] }]),
        "restoring cleared every other origin's localStorage, as Playwright does"
    );
    assert_eq!(file["cookies"], json!([]));
}

#[test]
fn a_storage_state_path_outside_the_writable_roots_is_refused_before_anything_is_written() {
    let Some(_serial) = serial() else { return };
    let h = Harness::local();
    let ws = h._ws.path().to_owned();
    let outside = ws
        .parent()
        .unwrap()
        .join(format!("{}-escape.json", ws.file_name().unwrap().to_string_lossy()));
    for filename in [
        format!("../{}", outside.file_name().unwrap().to_string_lossy()),
        outside.to_string_lossy().into_owned(),
    ] {
        let outcome = h.call("browser_storage_state", json!({ "filename": filename }));
        assert!(matches!(outcome, Outcome::Denied { .. }), "{filename}: {outcome:?}");
        assert!(!outside.exists());
    }
    // A workspace that is read-only: nowhere to write, not even the default file.
    let h = Harness::with_policy(Policy {
        roots: vec![RootSpec {
            path: ".".into(),
            access: Access::Read,
        }],
        approvals: ApprovalRules::uniform(ApprovalRule::Auto),
        tools: [("network".to_owned(), json!({ "allow_hosts": ["127.0.0.1"] }))].into(),
        ..Policy::default()
    });
    let ws = h._ws.path().to_owned();
    for args in [json!({ "filename": "state.json" }), json!({})] {
        let outcome = h.call("browser_storage_state", args.clone());
        assert!(matches!(outcome, Outcome::Denied { .. }), "{args}: {outcome:?}");
    }
    let written: Vec<String> = std::fs::read_dir(&ws)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    assert_eq!(written, Vec::<String>::new(), "nothing was written");
    // Reading a file to restore is a read: refused outside the workspace too.
    assert!(matches!(
        h.call("browser_set_storage_state", json!({ "filename": "../x.json" })),
        Outcome::Denied { .. }
    ));
}

#[test]
fn a_file_that_is_not_a_storage_state_is_refused_with_a_typed_error_and_changes_nothing() {
    let Some(_serial) = serial() else { return };
    let site = site();
    let h = Harness::local();
    let ws = h._ws.path().to_owned();
    h.ok("browser_navigate", json!({ "url": site.url("/") }));
    h.ok("browser_cookie_set", json!({ "name": "kept", "value": "1" }));
    h.ok("browser_localstorage_set", json!({ "key": "kept", "value": "1" }));
    let cookie = |domain: &str| json!({ "name": "n", "value": "v", "domain": domain, "path": "/" });
    let bad: Vec<(&str, String, &str)> = vec![
        ("text.json", "not json".into(), "expected"),
        ("empty.json", "{}".into(), "missing field `cookies`"),
        ("list.json", "[]".into(), "expected struct State"),
        (
            "typed.json",
            json!({ "cookies": [{ "name": 1 }], "origins": [] }).to_string(),
            "invalid type",
        ),
        (
            "domain.json",
            json!({ "cookies": [cookie("127.0.0.1/@evil.example")], "origins": [] }).to_string(),
            "is not a host name",
        ),
        (
            "port.json",
            json!({ "cookies": [cookie("evil.example:80")], "origins": [] }).to_string(),
            "is not a host name",
        ),
        (
            "origin.json",
            json!({ "cookies": [], "origins": [{ "origin": "file:///etc/passwd", "localStorage": [] }] }).to_string(),
            "is not an http(s) origin",
        ),
        (
            "path.json",
            json!({ "cookies": [], "origins": [{ "origin": format!("{}/x", site.url("")), "localStorage": [] }] })
                .to_string(),
            "is not an http(s) origin",
        ),
        ("big.json", " ".repeat((8 << 20) + 1), "over 8 MiB"),
    ];
    for (name, text, why) in &bad {
        std::fs::write(ws.join(name), text).unwrap();
        let refused = h.failed("browser_set_storage_state", json!({ "filename": name }));
        assert!(
            matches!(Failure::of(&refused), Some(Failure::InvalidRequest { message }) if message.contains(why) && message.contains(name)),
            "{name}: {refused:?}"
        );
    }
    std::fs::create_dir(ws.join("dir.json")).unwrap();
    let dir = h.failed("browser_set_storage_state", json!({ "filename": "dir.json" }));
    assert!(matches!(dir, ToolError::NotAFile { .. }), "{dir:?}");
    let missing = h.failed("browser_set_storage_state", json!({ "filename": "absent.json" }));
    assert!(matches!(missing, ToolError::NotFound { .. }), "{missing:?}");
    // Nothing was cleared.
    assert_eq!(page(&h, "document.cookie"), "kept=1");
    assert_eq!(page(&h, "localStorage.getItem('kept')"), "1");
}

#[test]
fn a_planted_storage_state_sets_nothing_for_a_host_the_policy_refuses() {
    let Some(_serial) = serial() else { return };
    let site = site();
    // Only 127.0.0.1 is allowed.
    let h = Harness::local();
    let ws = h._ws.path().to_owned();
    h.ok("browser_navigate", json!({ "url": site.url("/") }));
    let cookie = |name: &str, domain: &str| {
        json!({ "name": name, "value": "stolen", "domain": domain, "path": "/", "expires": -1,
                "httpOnly": false, "secure": false, "sameSite": "Lax" })
    };
    let planted = json!({
        "cookies": [cookie("ok", "127.0.0.1"), cookie("evil", "evil.example"), cookie("wide", ".attacker.test")],
        "origins": [
            { "origin": site.url(""), "localStorage": [{ "name": "ok", "value": "1" }] },
            { "origin": "https://evil.example", "localStorage": [{ "name": "token", "value": "planted" }] }
        ]
    });
    std::fs::write(ws.join("planted.json"), planted.to_string()).unwrap();
    let restored = h.ok("browser_set_storage_state", json!({ "filename": "planted.json" }));
    assert_eq!(restored["cookies"], 1, "{restored}");
    assert_eq!(restored["origins"], json!([site.url("")]));
    let skipped = restored["skipped"].as_array().unwrap();
    let items: Vec<(&str, &str)> = skipped
        .iter()
        .map(|s| (s["kind"].as_str().unwrap(), s["item"].as_str().unwrap()))
        .collect();
    assert_eq!(
        items,
        [
            ("cookie", "`evil` for evil.example"),
            ("cookie", "`wide` for .attacker.test"),
            ("origin", "https://evil.example"),
        ]
    );
    assert!(
        skipped
            .iter()
            .all(|s| s["reason"].as_str().unwrap().contains("not allowed by the policy")),
        "{restored}"
    );
    // The browser holds only the allowed host's cookie.
    let all = h.ok("browser_cookie_list", json!({}));
    assert_eq!(names(&all["cookies"], "domain"), ["127.0.0.1"], "{all}");
    // No localStorage was set for the refused origin: it is not in the saved state.
    let saved = h.ok("browser_storage_state", json!({ "filename": "after.json" }));
    assert_eq!(saved["origins"], json!([site.url("")]));
    h.ok("browser_navigate", json!({ "url": site.url("/") }));
    assert_eq!(page(&h, "localStorage.getItem('ok')"), "1");
}
