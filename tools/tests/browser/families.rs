//! Playwright MCP's opt-in families and `browser_find`: the mouse at coordinates, cookies
//! and localStorage, checks of what is visible, and finding lines of the outline.

use std::collections::HashMap;

use serde_json::json;

use super::{Harness, Site, serial};

const PAD: &str = r#"<html><head><title>Pad</title></head><body style="margin:0;height:3000px">
<div id="pad" style="position:fixed;left:0;top:0;width:400px;height:300px;background:#eee"
 onclick="document.getElementById('clicked').textContent = 'clicked ' + event.clientX + ',' + event.clientY"
 onmousemove="document.getElementById('moved').textContent = 'moved ' + event.clientX + ',' + event.clientY"
 onmousedown="window.down = event.clientX + ',' + event.clientY"
 onmouseup="document.getElementById('dragged').textContent = 'dragged ' + window.down + ' to ' + event.clientX + ',' + event.clientY"></div>
<p id="clicked" style="position:fixed;top:320px">none</p>
<p id="moved" style="position:fixed;top:360px">none</p>
<p id="dragged" style="position:fixed;top:400px">none</p>
</body></html>"#;

fn pad_site() -> Site {
    let mut pages = HashMap::new();
    pages.insert("/pad", (200, vec![], PAD.to_owned()));
    Site::start(pages)
}

#[test]
fn the_mouse_at_coordinates_clicks_moves_drags_and_scrolls() {
    let Some(_serial) = serial() else { return };
    let site = pad_site();
    let h = Harness::local();
    h.ok("browser_navigate", json!({ "url": site.url("/pad") }));
    h.ok("browser_mouse_click_xy", json!({ "x": 100, "y": 50 }));
    h.ok("browser_verify_text_visible", json!({ "text": "clicked 100,50" }));
    h.ok("browser_mouse_move_xy", json!({ "x": 200, "y": 120 }));
    h.ok("browser_verify_text_visible", json!({ "text": "moved 200,120" }));
    // Playwright's argument names are accepted too.
    h.ok(
        "browser_mouse_drag_xy",
        json!({ "startX": 10, "startY": 20, "endX": 300, "endY": 250 }),
    );
    h.ok(
        "browser_verify_text_visible",
        json!({ "text": "dragged 10,20 to 300,250" }),
    );
    h.ok("browser_mouse_wheel", json!({ "delta_y": 500 }));
    let scrolled = h.ok("browser_evaluate", json!({ "function": "() => window.scrollY" }));
    assert!(scrolled["result"].as_f64().unwrap() > 0.0, "{scrolled}");
    // Outside the schema's range: refused before the page is touched.
    assert!(matches!(
        h.call("browser_mouse_click_xy", json!({ "x": -1, "y": 5 })),
        kyro_core::Outcome::InvalidArguments { .. }
    ));
}

#[test]
fn find_and_verify_answer_from_the_outline() {
    let Some(_serial) = serial() else { return };
    let site = Site::standard();
    let h = Harness::local();
    h.ok("browser_navigate", json!({ "url": site.url("/") }));
    let found = h.ok("browser_find", json!({ "text": "NEXT page" }));
    assert_eq!(found["total"], 1, "{found}");
    assert!(
        found["matches"][0]
            .as_str()
            .unwrap()
            .starts_with("- link \"Next page\" [ref="),
        "{found}"
    );
    let buttons = h.ok("browser_find", json!({ "regex": "^- button \"(Go|Count)\"" }));
    assert_eq!(buttons["total"], 2, "{buttons}");
    let bad = h.failed("browser_find", json!({ "regex": "(" }));
    assert_eq!(bad.kind(), "invalid_pattern");
    assert_eq!(h.failed("browser_find", json!({})).kind(), "invalid_request");
    // Visible text and elements pass; hidden ones are not visible.
    let seen = h.ok("browser_verify_text_visible", json!({ "text": "Hello" }));
    assert_eq!(seen["line"], "- heading \"Hello\" [level=1]");
    let hidden = h.failed("browser_verify_text_visible", json!({ "text": "Hidden" }));
    assert_eq!(hidden.kind(), "not_visible");
    assert!(hidden.to_string().contains("\"Hidden\""), "{hidden}");
    h.ok(
        "browser_verify_element_visible",
        json!({ "role": "button", "accessibleName": "Go" }),
    );
    let missing = h.failed(
        "browser_verify_element_visible",
        json!({ "role": "link", "accessible_name": "Go" }),
    );
    assert_eq!(missing.kind(), "not_visible");
    // browser_take_screenshot is Playwright's name for browser_screenshot.
    let shot = h.ok("browser_take_screenshot", json!({}));
    assert_eq!(shot["mime_type"], "image/png");
}

#[test]
fn cookies_and_local_storage_are_read_and_set_as_the_page_sees_them() {
    let Some(_serial) = serial() else { return };
    let site = Site::standard();
    let h = Harness::local();
    h.ok("browser_navigate", json!({ "url": site.url("/") }));
    let set = h.ok("browser_cookie_set", json!({ "name": "session", "value": "abc" }));
    assert_eq!(set["cookies"][0]["name"], "session");
    assert_eq!(set["cookies"][0]["domain"], "127.0.0.1");
    assert_eq!(set["cookies"][0]["expires"], json!(null));
    h.ok(
        "browser_cookie_set",
        json!({ "name": "hidden", "value": "h", "http_only": true }),
    );
    let seen = h.ok("browser_evaluate", json!({ "function": "() => document.cookie" }));
    assert_eq!(
        seen["result"], "session=abc",
        "an httpOnly cookie is not the page's to read"
    );
    let listed = h.ok("browser_cookie_list", json!({ "domain": "127.0.0.1" }));
    let names: Vec<&str> = listed["cookies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["hidden", "session"]);
    let cleared = h.ok("browser_cookie_clear", json!({ "name": "session" }));
    let left: Vec<&str> = cleared["cookies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(left, ["hidden"]);
    assert_eq!(h.ok("browser_cookie_clear", json!({}))["cookies"], json!([]));
    // localStorage: set from the tool, read by the page, and read back.
    let stored = h.ok(
        "browser_localstorage_set",
        json!({ "key": "theme", "value": "dark \"blue\"" }),
    );
    assert_eq!(stored["origin"], site.url(""));
    assert_eq!(stored["entries"], json!([{ "key": "theme", "value": "dark \"blue\"" }]));
    let read = h.ok(
        "browser_evaluate",
        json!({ "function": "() => { localStorage.setItem('page', '1'); return localStorage.getItem('theme'); }" }),
    );
    assert_eq!(read["result"], "dark \"blue\"");
    let all = h.ok("browser_localstorage_get", json!({}));
    assert_eq!(
        all["entries"],
        json!([{ "key": "page", "value": "1" }, { "key": "theme", "value": "dark \"blue\"" }])
    );
    assert_eq!(
        h.ok("browser_localstorage_get", json!({ "key": "absent" }))["entries"],
        json!([])
    );
}

#[test]
fn routes_answer_or_abort_matching_requests_and_are_removed() {
    let Some(_serial) = serial() else { return };
    let site = users_app("/api/users?x=1");
    let h = Harness::local();
    let routed = h.ok(
        "browser_route",
        json!({ "pattern": "**/api/users*", "status": 201, "body": "[\"ann\"]", "contentType": "application/json" }),
    );
    assert_eq!(
        routed["routes"],
        json!([{ "pattern": "**/api/users*", "action": "fulfill", "status": 201 }])
    );
    h.ok("browser_navigate", json!({ "url": site.url("/app") }));
    h.ok("browser_wait_for", json!({ "text": "201" }));
    h.ok("browser_verify_text_visible", json!({ "text": "201 [\"ann\"]" }));
    assert!(
        !site.requested("/api/users"),
        "a fulfilled request never reaches the server"
    );
    let requests = h.ok("browser_network_requests", json!({}));
    assert!(
        requests["requests"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r.as_str().unwrap().ends_with("(routed: answered 201)")),
        "{requests}"
    );
    // Aborted: the page sees a failed request.
    h.ok(
        "browser_route",
        json!({ "pattern": "**/api/users*", "action": "abort" }),
    );
    h.ok("browser_navigate", json!({ "url": site.url("/app") }));
    h.ok("browser_wait_for", json!({ "text": "failed" }));
    assert!(!site.requested("/api/users"));
    // Removed: the request reaches the server again.
    assert_eq!(h.ok("browser_unroute", json!({}))["routes"], json!([]));
    h.ok("browser_navigate", json!({ "url": site.url("/app") }));
    h.ok("browser_wait_for", json!({ "text": "from the server" }));
    assert!(site.requested("/api/users"));
    let bad = h.failed("browser_route", json!({ "pattern": "[" }));
    assert_eq!(bad.kind(), "invalid_pattern");
}

#[test]
fn a_route_whose_content_type_holds_a_control_character_is_refused_and_the_browser_keeps_answering() {
    let Some(_serial) = serial() else { return };
    let site = users_app("/api/users");
    let h = Harness::local();
    // Chromium refuses to fulfil with such a header, and the request stayed paused: every
    // later browser call timed out.
    for content_type in [
        "text/html\r\nX-Injected: yes",
        "text/plain\n",
        "text/plain\r",
        "a\u{0}b",
        "a\u{7f}",
    ] {
        let outcome = h.call(
            "browser_route",
            json!({ "pattern": "**/api/users*", "contentType": content_type }),
        );
        assert!(
            matches!(outcome, kyro_core::Outcome::InvalidArguments { .. }),
            "{content_type:?}: {outcome:?}"
        );
    }
    assert_eq!(h.ok("browser_unroute", json!({}))["routes"], json!([]));
    h.ok("browser_navigate", json!({ "url": site.url("/app") }));
    h.ok("browser_wait_for", json!({ "text": "200 from the server" }));
    // A parameter and a tab are a header value like any other.
    h.ok(
        "browser_route",
        json!({ "pattern": "**/api/users*", "body": "routed", "contentType": "text/plain;\tcharset=utf-8" }),
    );
    h.ok("browser_navigate", json!({ "url": site.url("/app") }));
    h.ok("browser_wait_for", json!({ "text": "200 routed" }));
}

#[test]
fn one_request_is_read_in_full_by_its_position() {
    let Some(_serial) = serial() else { return };
    let mut pages = HashMap::new();
    pages.insert(
        "/post",
        (
            200,
            vec![],
            r#"<html><head><title>Post</title></head><body><p id="out">waiting</p><script>
fetch('/api/echo', {method: 'POST', headers: {'X-Kyro': 'yes'}, body: 'hello | é'})
  .then(r => r.text()).then(t => document.getElementById('out').textContent = 'got ' + t);
</script></body></html>"#
                .to_owned(),
        ),
    );
    pages.insert(
        "/api/echo",
        (201, vec![("X-Answer", "42".into())], "echoed body".to_owned()),
    );
    let site = Site::start(pages);
    let h = Harness::local();
    h.ok("browser_navigate", json!({ "url": site.url("/post") }));
    h.ok("browser_wait_for", json!({ "text": "got echoed body" }));
    let lines = h.ok("browser_network_requests", json!({}));
    let lines: Vec<&str> = lines["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    let index = lines
        .iter()
        .position(|l| l.starts_with("POST ") && l.contains("/api/echo"))
        .expect("the POST")
        + 1;
    let one = h.ok("browser_network_request", json!({ "index": index }));
    assert_eq!(
        (one["status"].clone(), one["body"].clone()),
        (json!(201), json!("echoed body")),
        "{one}"
    );
    assert_eq!(one["request_body"], "hello | é");
    let has = |list: &serde_json::Value, name: &str, value: &str| {
        list.as_array()
            .unwrap()
            .iter()
            .any(|h| h["name"].as_str().unwrap().eq_ignore_ascii_case(name) && h["value"] == value)
    };
    assert!(has(&one["request_headers"], "X-Kyro", "yes"), "{one}");
    assert!(has(&one["response_headers"], "X-Answer", "42"), "{one}");
    let past = h.failed("browser_network_request", json!({ "index": 999 }));
    assert!(past.to_string().contains("there is no request 999"), "{past}");
}

/// A site whose `/app` page fetches `fetched` and shows the answer (`failed` when the
/// request fails), and whose `/api/users` answers `from the server`.
fn users_app(fetched: &str) -> Site {
    let mut pages = HashMap::new();
    let page = format!(
        r#"<html><head><title>App</title></head><body><p id="out">waiting</p><script>
fetch('{fetched}').then(r => r.text().then(t => document.getElementById('out').textContent = r.status + ' ' + t))
  .catch(e => document.getElementById('out').textContent = 'failed');
</script></body></html>"#
    );
    pages.insert("/app", (200, vec![], page));
    pages.insert("/api/users", (200, vec![], "from the server".to_owned()));
    Site::start(pages)
}
