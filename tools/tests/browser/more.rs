//! The rest of Playwright MCP 0.0.83's browser tools, as the page sees them: files and data
//! dropped from outside, emulated media, the mouse pressed and released where it is, the
//! routes listed, the browser offline and online again, value and list checks, generated
//! locators, and the configuration.

use std::collections::HashMap;

use kyro_tools::Failure;
use serde_json::{Value, json};

use super::{Harness, Site, ref_of, serial};

/// One page at `/page` with `body` and the title `More`.
fn page_site(body: &str) -> Site {
    let mut pages = HashMap::new();
    pages.insert(
        "/page",
        (
            200,
            vec![],
            format!("<html><head><title>More</title></head><body style=\"margin:0\">{body}</body></html>"),
        ),
    );
    pages.insert("/api/ping", (200, vec![], "pong".to_owned()));
    Site::start(pages)
}

/// The value a function returns in the page.
fn evaluated(h: &Harness, function: &str) -> Value {
    h.ok("browser_evaluate", json!({ "function": function }))["result"].clone()
}

const DROP_ZONE: &str = r#"<div id="zone" style="width:300px;height:200px;background:#ddd"
 ondragover="event.preventDefault()"
 ondrop="event.preventDefault(); window.drops = (window.drops || 0) + 1;
   const d = event.dataTransfer;
   document.getElementById('got').textContent = 'files ' + Array.from(d.files).map(f => f.name + ':' + f.size).join(',')
     + ' text ' + d.getData('text/plain') + ' uri ' + d.getData('text/uri-list')"></div>
<p id="got">nothing</p>"#;

#[test]
fn drop_hands_workspace_files_and_text_to_the_page_and_refuses_files_outside_it() {
    let Some(_serial) = serial() else { return };
    let site = page_site(DROP_ZONE);
    let h = Harness::local();
    std::fs::write(h._ws.path().join("a.txt"), "12345").unwrap();
    std::fs::write(h._ws.path().join("b.txt"), "b").unwrap();
    h.ok("browser_navigate", json!({ "url": site.url("/page") }));
    let dropped = h.ok(
        "browser_drop",
        json!({
            "element": "the drop zone",
            "target": "#zone",
            "paths": ["a.txt", "b.txt"],
            "data": { "text/plain": "hello", "text/uri-list": "https://example.com/" },
        }),
    );
    assert_eq!(dropped["files"], json!(["a.txt", "b.txt"]), "{dropped}");
    assert_eq!(dropped["types"], json!(["text/plain", "text/uri-list"]), "{dropped}");
    h.ok(
        "browser_wait_for",
        json!({ "text": "files a.txt:5,b.txt:1 text hello uri https://example.com/" }),
    );
    // Data alone.
    h.ok(
        "browser_drop",
        json!({ "target": "#zone", "data": { "text/plain": "only" } }),
    );
    h.ok("browser_wait_for", json!({ "text": "files text only uri" }));
    assert_eq!(evaluated(&h, "() => window.drops"), json!(2));

    // Outside the workspace, or not there: refused before the page sees a drop.
    let outside = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(outside.path(), "secret").unwrap();
    for path in [outside.path().to_str().unwrap(), "../escape.txt"] {
        match h.call(
            "browser_drop",
            json!({ "target": "#zone", "paths": [path], "data": { "text/plain": "leak" } }),
        ) {
            kyro_core::Outcome::Denied { .. } => {}
            other => panic!("{path}: {other:?}"),
        }
    }
    let missing = h.failed("browser_drop", json!({ "target": "#zone", "paths": ["missing.txt"] }));
    assert_eq!(missing.kind(), "not_a_file", "{missing:?}");
    std::fs::create_dir(h._ws.path().join("dir")).unwrap();
    assert_eq!(
        h.failed("browser_drop", json!({ "target": "#zone", "paths": ["dir"] }))
            .kind(),
        "not_a_file"
    );
    assert_eq!(
        evaluated(&h, "() => window.drops"),
        json!(2),
        "the page saw no other drop"
    );
    // Nothing to drop, or nowhere to drop it.
    let empty = h.failed("browser_drop", json!({ "target": "#zone" }));
    assert_eq!(empty.kind(), "invalid_request");
    let nowhere = h.failed(
        "browser_drop",
        json!({ "target": "#absent", "data": { "text/plain": "x" } }),
    );
    assert_eq!(nowhere.kind(), "no_such_element");
}

#[test]
fn emulated_media_flips_prefers_color_scheme_keeps_the_rest_and_null_clears() {
    let Some(_serial) = serial() else { return };
    let site = page_site("<p>media</p>");
    let h = Harness::local();
    h.ok("browser_navigate", json!({ "url": site.url("/page") }));
    let dark = "() => matchMedia('(prefers-color-scheme: dark)').matches";
    let reduced = "() => matchMedia('(prefers-reduced-motion: reduce)').matches";
    assert_eq!(evaluated(&h, dark), json!(false));
    let set = h.ok("browser_emulate_media", json!({ "colorScheme": "dark" }));
    assert_eq!(set["color_scheme"], "dark", "{set}");
    assert_eq!(evaluated(&h, dark), json!(true));
    // Another feature leaves the color scheme as it is.
    let both = h.ok(
        "browser_emulate_media",
        json!({ "reduced_motion": "reduce", "media": "print" }),
    );
    assert_eq!(
        (&both["color_scheme"], &both["reduced_motion"], &both["media"]),
        (&json!("dark"), &json!("reduce"), &json!("print")),
        "{both}"
    );
    assert_eq!(evaluated(&h, dark), json!(true));
    assert_eq!(evaluated(&h, reduced), json!(true));
    assert_eq!(evaluated(&h, "() => matchMedia('print').matches"), json!(true));
    // Kept across a navigation.
    h.ok("browser_navigate", json!({ "url": site.url("/page") }));
    assert_eq!(evaluated(&h, dark), json!(true));
    // null clears one override only.
    let cleared = h.ok("browser_emulate_media", json!({ "colorScheme": null, "media": null }));
    assert_eq!(cleared["color_scheme"], json!(null), "{cleared}");
    assert_eq!(cleared["reduced_motion"], "reduce", "{cleared}");
    assert_eq!(evaluated(&h, dark), json!(false));
    assert_eq!(evaluated(&h, reduced), json!(true));
    assert_eq!(evaluated(&h, "() => matchMedia('print').matches"), json!(false));
    h.ok(
        "browser_emulate_media",
        json!({ "forcedColors": "active", "contrast": "more" }),
    );
    assert_eq!(
        evaluated(
            &h,
            "() => matchMedia('(forced-colors: active)').matches && matchMedia('(prefers-contrast: more)').matches"
        ),
        json!(true)
    );
    // Nothing named, or a value Playwright does not take.
    assert_eq!(h.failed("browser_emulate_media", json!({})).kind(), "invalid_request");
    assert!(matches!(
        h.call("browser_emulate_media", json!({ "colorScheme": "purple" })),
        kyro_core::Outcome::InvalidArguments { .. }
    ));
}

const MOUSE_PAD: &str = r#"<div id="pad" style="position:fixed;left:0;top:0;width:400px;height:300px;background:#eee"
 oncontextmenu="event.preventDefault()"></div>
<script>
window.log = [];
for (const kind of ['mousedown', 'mouseup', 'mousemove']) {
  document.getElementById('pad').addEventListener(kind, (e) =>
    window.log.push(kind + ' ' + e.clientX + ',' + e.clientY + ' button ' + e.button + ' buttons ' + e.buttons));
}
</script>"#;

#[test]
fn mouse_down_and_up_press_where_the_mouse_was_moved_with_the_button_named() {
    let Some(_serial) = serial() else { return };
    let site = page_site(MOUSE_PAD);
    let h = Harness::local();
    h.ok("browser_navigate", json!({ "url": site.url("/page") }));
    h.ok("browser_mouse_move_xy", json!({ "x": 100, "y": 50 }));
    h.ok("browser_mouse_down", json!({}));
    h.ok("browser_mouse_move_xy", json!({ "x": 200, "y": 120 }));
    h.ok("browser_mouse_up", json!({}));
    h.ok("browser_mouse_move_xy", json!({ "x": 30, "y": 40 }));
    h.ok("browser_mouse_down", json!({ "button": "right" }));
    h.ok("browser_mouse_up", json!({ "button": "right" }));
    let log = evaluated(&h, "() => window.log");
    let log: Vec<&str> = log.as_array().unwrap().iter().map(|l| l.as_str().unwrap()).collect();
    assert_eq!(
        log,
        [
            "mousemove 100,50 button 0 buttons 0",
            "mousedown 100,50 button 0 buttons 1",
            "mousemove 200,120 button 0 buttons 1",
            "mouseup 200,120 button 0 buttons 0",
            "mousemove 30,40 button 0 buttons 0",
            "mousedown 30,40 button 2 buttons 2",
            "mouseup 30,40 button 2 buttons 0",
        ]
    );
    assert!(matches!(
        h.call("browser_mouse_down", json!({ "button": "back" })),
        kyro_core::Outcome::InvalidArguments { .. }
    ));
}

#[test]
fn route_list_shows_what_route_added_and_forgets_what_unroute_removed() {
    let Some(_serial) = serial() else { return };
    let h = Harness::local();
    assert_eq!(h.ok("browser_route_list", json!({}))["routes"], json!([]));
    h.ok("browser_route", json!({ "pattern": "**/api/users*", "status": 201 }));
    h.ok("browser_route", json!({ "pattern": "**/*.png", "action": "abort" }));
    assert_eq!(
        h.ok("browser_route_list", json!({}))["routes"],
        json!([
            { "pattern": "**/api/users*", "action": "fulfill", "status": 201 },
            { "pattern": "**/*.png", "action": "abort", "status": null },
        ])
    );
    h.ok("browser_unroute", json!({ "pattern": "**/api/users*" }));
    assert_eq!(
        h.ok("browser_route_list", json!({}))["routes"],
        json!([{ "pattern": "**/*.png", "action": "abort", "status": null }])
    );
    h.ok("browser_unroute", json!({}));
    assert_eq!(h.ok("browser_route_list", json!({}))["routes"], json!([]));
}

#[test]
fn offline_fails_fetches_online_restores_them_and_a_refused_host_stays_refused() {
    let Some(_serial) = serial() else { return };
    let site = page_site("<p>network</p>");
    // Reached as `localhost`, which the policy (127.0.0.1 only) refuses.
    let elsewhere = page_site("<p>elsewhere</p>");
    let port = elsewhere.base.rsplit(':').next().unwrap().to_owned();
    let h = Harness::local();
    h.ok("browser_navigate", json!({ "url": site.url("/page") }));
    let ping = "() => fetch('/api/ping?n=' + Math.random()).then(r => r.text()).catch(() => 'failed')";
    assert_eq!(evaluated(&h, ping), json!("pong"));
    let off = h.ok("browser_network_state_set", json!({ "state": "offline" }));
    assert_eq!(off, json!({ "state": "offline", "pages": 1 }));
    let asked = site.seen.lock().unwrap().len();
    assert_eq!(evaluated(&h, ping), json!("failed"));
    assert_eq!(evaluated(&h, "() => navigator.onLine"), json!(false));
    assert_eq!(
        site.seen.lock().unwrap().len(),
        asked,
        "nothing reached the site offline"
    );
    // A tab opened while offline is offline too.
    h.ok("browser_tabs", json!({ "action": "new" }));
    assert_eq!(evaluated(&h, "() => navigator.onLine"), json!(false));
    h.ok("browser_tabs", json!({ "action": "close" }));
    // Online again: allowed requests go out, refused ones are still refused.
    h.ok("browser_network_state_set", json!({ "state": "online" }));
    assert_eq!(evaluated(&h, ping), json!("pong"));
    let leak =
        format!("() => fetch('http://localhost:{port}/api/ping?leak=1').then(r => r.text()).catch(() => 'failed')");
    let execution = h.execution("browser_evaluate", json!({ "function": leak }));
    match &execution.outcome {
        kyro_core::Outcome::Ok { result, .. } => assert_eq!(result["result"], "failed"),
        other => panic!("{other:?}"),
    }
    assert!(!elsewhere.requested("/api/ping"), "a refused host was reached");
    assert!(
        execution
            .receipt
            .effects
            .iter()
            .any(|e| matches!(e, kyro_core::receipt::ObservedEffect::RefusedRequest { url } if url.contains("leak=1"))),
        "{:?}",
        execution.receipt.effects
    );
    assert!(matches!(
        h.call("browser_network_state_set", json!({ "state": "flaky" })),
        kyro_core::Outcome::InvalidArguments { .. }
    ));
}

const FORM: &str = r#"<form>
<label for="name">Name</label><input id="name" value="Ann">
<label><input type="checkbox" id="agree" checked> Agree</label>
<label><input type="radio" name="size" id="small"> Small</label>
<label><input type="radio" name="size" id="large" checked> Large</label>
<label for="color">Color</label><select id="color"><option value="r">Red</option><option value="g" selected>Green</option></select>
<label for="volume">Volume</label><input type="range" id="volume" min="0" max="100" value="30">
<label for="secret">Secret</label><input type="password" id="secret" value="hunter2">
<p id="plain">Plain text</p>
</form>"#;

#[test]
fn verify_value_passes_and_fails_typed_for_each_kind_of_field() {
    let Some(_serial) = serial() else { return };
    let site = page_site(FORM);
    let h = Harness::local();
    h.ok("browser_navigate", json!({ "url": site.url("/page") }));
    let snapshot = h.ok("browser_snapshot", json!({}));
    let name = ref_of(&snapshot, "textbox \"Name\"");
    let check = |kind: &str, target: &str, value: &str| json!({ "type": kind, "element": "a field", "target": target, "value": value });
    for (kind, target, right, wrong) in [
        ("textbox", name.as_str(), "Ann", "Bob"),
        ("checkbox", "#agree", "true", "false"),
        ("radio", "#small", "false", "true"),
        ("radio", "#large", "true", "false"),
        ("combobox", "#color", "g", "r"),
        ("slider", "#volume", "30", "31"),
    ] {
        let passed = h.ok("browser_verify_value", check(kind, target, right));
        assert_eq!(passed["value"], right, "{kind} {target}");
        let failed = h.failed("browser_verify_value", check(kind, target, wrong));
        assert_eq!(
            Failure::of(&failed),
            Some(Failure::ValueMismatch {
                element: target.to_owned(),
                expected: format!("{wrong:?}"),
                actual: format!("{right:?}"),
            }),
            "{kind} {target}: {failed}"
        );
    }
    // The field changed by the page's user is read as it is now.
    h.ok("browser_type", json!({ "ref": name, "text": "Zoe" }));
    h.ok("browser_verify_value", check("textbox", &name, "Zoe"));
    // A password is compared, never shown.
    h.ok("browser_verify_value", check("textbox", "#secret", "hunter2"));
    let hidden = h.failed("browser_verify_value", check("textbox", "#secret", "guess"));
    assert_eq!(hidden.kind(), "value_mismatch");
    assert!(!hidden.to_string().contains("hunter2"), "{hidden}");
    // A checkbox is "true" or "false"; an element without a value cannot be checked.
    let maybe = h.failed("browser_verify_value", check("checkbox", "#agree", "yes"));
    assert_eq!(maybe.kind(), "invalid_request");
    let plain = h.failed("browser_verify_value", check("textbox", "#plain", "Plain text"));
    assert_eq!(plain.kind(), "not_actionable");
    let not_box = h.failed("browser_verify_value", check("checkbox", "#name", "true"));
    assert_eq!(not_box.kind(), "not_actionable");
    let missing = h.failed("browser_verify_value", check("textbox", "e999", "x"));
    assert_eq!(missing.kind(), "no_such_element");
}

const LISTS: &str = r#"<ul id="fruits"><li>Apples</li><li>Bananas <b>ripe</b></li>
<li style="display:none">Cherries</li><li>Dates</li></ul>
<ol id="empty"></ol>"#;

#[test]
fn verify_list_visible_finds_each_item_in_order_and_names_the_one_that_is_not() {
    let Some(_serial) = serial() else { return };
    let site = page_site(LISTS);
    let h = Harness::local();
    h.ok("browser_navigate", json!({ "url": site.url("/page") }));
    let snapshot = h.ok("browser_snapshot", json!({}));
    assert!(snapshot["snapshot"].as_str().unwrap().contains("- list"), "{snapshot}");
    let list = |items: Value| json!({ "element": "fruit list", "target": "#fruits", "items": items });
    let seen = h.ok(
        "browser_verify_list_visible",
        list(json!(["apples", "Bananas ripe", "Dates"])),
    );
    assert_eq!(seen["items"], json!(["Apples", "Bananas ripe", "Dates"]));
    h.ok("browser_verify_list_visible", list(json!(["Bananas", "Dates"])));
    let reversed = h.failed("browser_verify_list_visible", list(json!(["Dates", "Apples"])));
    assert_eq!(reversed.kind(), "not_visible");
    assert!(
        reversed.to_string().contains("\"Apples\" after \"Dates\""),
        "{reversed}"
    );
    let hidden = h.failed("browser_verify_list_visible", list(json!(["Apples", "Cherries"])));
    assert_eq!(hidden.kind(), "not_visible");
    assert!(hidden.to_string().contains("\"Cherries\" in fruit list"), "{hidden}");
    let elsewhere = h.failed(
        "browser_verify_list_visible",
        json!({ "element": "empty list", "target": "#empty", "items": ["Apples"] }),
    );
    assert_eq!(elsewhere.kind(), "not_visible");
}

#[test]
fn generate_locator_by_role_and_name_then_test_id_text_and_css() {
    let Some(_serial) = serial() else { return };
    let site = page_site(
        r#"<button>Go</button><button>Go on</button><a href="/next">Next page</a>
<label for="q">Query</label><input id="q" placeholder="search">
<div data-testid="card">A card</div><span>Loose words</span><span>Loose words</span>
<div><span></span><span style="display:inline-block;width:5px;height:5px"></span></div>
<input name="zip">"#,
    );
    let h = Harness::local();
    h.ok("browser_navigate", json!({ "url": site.url("/page") }));
    let snapshot = h.ok("browser_snapshot", json!({}));
    let locator = |target: &str| -> String {
        h.ok("browser_generate_locator", json!({ "element": "it", "target": target }))["locator"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(
        locator(&ref_of(&snapshot, "button \"Go\"")),
        "getByRole('button', { name: 'Go', exact: true })"
    );
    assert_eq!(
        locator(&ref_of(&snapshot, "button \"Go on\"")),
        "getByRole('button', { name: 'Go on' })"
    );
    assert_eq!(
        locator(&ref_of(&snapshot, "link \"Next page\"")),
        "getByRole('link', { name: 'Next page' })"
    );
    assert_eq!(
        locator(&ref_of(&snapshot, "textbox \"Query\"")),
        "getByRole('textbox', { name: 'Query' })"
    );
    assert_eq!(locator("[data-testid=card]"), "getByTestId('card')");
    // kyro's own spellings of the target are taken too.
    let by_selector = h.ok("browser_generate_locator", json!({ "selector": "[data-testid=card]" }));
    assert_eq!(by_selector["locator"], "getByTestId('card')");
    let by_ref = h.ok(
        "browser_generate_locator",
        json!({ "ref": ref_of(&snapshot, "link \"Next page\"") }),
    );
    assert_eq!(by_ref["locator"], "getByRole('link', { name: 'Next page' })");
    let twice = h.failed(
        "browser_generate_locator",
        json!({ "selector": "[data-testid=card]", "target": "#q" }),
    );
    assert_eq!(twice.kind(), "not_actionable", "two names for one element");
    assert_eq!(locator("label"), "getByText('Query')");
    // Text that is not unique, and no text: by CSS.
    assert_eq!(locator("span"), "locator('body > span:nth-child(7)')");
    assert_eq!(
        locator("div:last-of-type > span:last-child"),
        "locator('body > div:nth-child(9) > span:nth-child(2)')"
    );
    // A field's `name` attribute is no accessible name.
    assert_eq!(locator("[name=zip]"), "locator('body > input:nth-child(10)')");
    assert_eq!(
        h.failed("browser_generate_locator", json!({ "target": "#none" }))
            .kind(),
        "no_such_element"
    );
}

#[test]
fn get_config_reports_chromium_the_viewport_and_the_policy_without_starting_a_browser() {
    let Some(_serial) = serial() else { return };
    let h = Harness::local();
    let config = h.ok("browser_get_config", json!({}));
    assert_eq!(
        config["chromium"],
        kyro_tools::browser::chromium_path().display().to_string()
    );
    assert_eq!(config["unavailable"], json!(null));
    assert_eq!(config["headless"], true);
    assert_eq!(config["viewport"], json!({ "width": 1280, "height": 800 }));
    assert_eq!(
        config["network"],
        json!({ "allow_hosts": ["127.0.0.1"], "deny_hosts": [], "allow_private": false })
    );
    assert_eq!(
        h.ok("browser_close", json!({}))["closed"],
        false,
        "reading the configuration starts no browser"
    );
}

#[test]
fn generate_locator_and_drop_reach_into_frames_of_either_origin() {
    let Some(_serial) = serial() else { return };
    let zone = |id: &str| {
        format!(
            "<div id='{id}' style='width:200px;height:100px;background:#ddd' ondragover='event.preventDefault()' \
             ondrop=\"event.preventDefault(); this.textContent = 'dropped ' + event.dataTransfer.getData('text/plain')\">zone</div>"
        )
    };
    let mut other = HashMap::new();
    // The zone fills the frame's view, where a drop at the frame's center lands.
    let body = format!(
        "{}<button>Other</button>",
        zone("far").replace("width:200px;height:100px", "width:400px;height:200px")
    );
    other.insert(
        "/secret",
        (
            200,
            vec![],
            format!("<html><body style='margin:0'>{body}</body></html>"),
        ),
    );
    let other = Site::start(other);
    let mut pages = HashMap::new();
    pages.insert(
        "/framed",
        (
            200,
            vec![],
            format!(
                "<html><head><title>Framed</title></head><body style='margin:0'>
<iframe id='in' src='/inner' style='width:400px;height:200px'></iframe>
<iframe id='out' src='{}' style='width:400px;height:200px'></iframe></body></html>",
                other.url("/secret")
            ),
        ),
    );
    // Focusable, so the outline gives it a ref.
    let near = zone("near").replace("<div ", "<div tabindex='0' ");
    let inner = format!("<html><body style='margin:0'><button>Inner</button>{near}</body></html>");
    pages.insert("/inner", (200, vec![], inner));
    let site = Site::start(pages);
    let h = Harness::local();
    h.ok("browser_navigate", json!({ "url": site.url("/framed") }));
    let snapshot = h.ok("browser_snapshot", json!({}));
    let locator = |target: String| h.ok("browser_generate_locator", json!({ "target": target }))["locator"].clone();
    assert_eq!(
        locator(ref_of(&snapshot, "button \"Inner\"")),
        "locator('#in').contentFrame().getByRole('button', { name: 'Inner' })"
    );
    let far = ref_of(&snapshot, "button \"Other\"");
    assert!(far.starts_with("f1e"), "{far}");
    assert_eq!(
        locator(far),
        "locator('#out').contentFrame().getByRole('button', { name: 'Other' })"
    );
    // A drop at an element in a frame lands on that element.
    h.ok(
        "browser_drop",
        json!({ "target": "#out", "data": { "text/plain": "into the frame" } }),
    );
    let found = h.ok("browser_find", json!({ "text": "dropped into the frame" }));
    assert_eq!(found["total"], 1, "{found}");
    // And by ref, in a frame of the page's origin.
    let zone_ref = ref_of(&snapshot, "clickable \"zone\"");
    h.ok(
        "browser_drop",
        json!({ "ref": zone_ref, "data": { "text/plain": "near by ref" } }),
    );
    let found = h.ok("browser_find", json!({ "text": "dropped near by ref" }));
    assert_eq!(found["total"], 1, "{found}");
}
