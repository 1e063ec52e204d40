//! The browser tools driving a real headless Chromium against pages this test serves on
//! 127.0.0.1: navigation, the outline with refs, real clicks and typing, PNG screenshots,
//! typed refusals, the network policy applied to every request a page makes, and the
//! browser's lifetime (one per workspace, gone with the runtime).
//!
//! Needs Chromium (`/usr/bin/chromium` or `KYRO_CHROMIUM`); `.ci/run` installs it and sets
//! `KYRO_REQUIRE_BROWSER=1`, so CI fails rather than skips when it is missing.

mod common;

/// Playwright's opt-in families and `browser_find`, under the same harness.
#[path = "browser/families.rs"]
mod families;

/// The rest of Playwright MCP 0.0.83's tools, under the same harness.
#[path = "browser/more.rs"]
mod more;

/// Highlights, traces and `browser_run_code_unsafe`.
#[path = "browser/devtools.rs"]
mod devtools;

/// Playwright's storage capability: cookies by name, Web Storage, the storage state.
#[path = "browser/storage.rs"]
mod storage;

/// The video tools: a screencast written as an AVI, chapter cards, action callouts.
#[path = "browser/video.rs"]
mod video;

use kyro_tools::Failure;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use kyro_core::policy::{ApprovalRule, ApprovalRules};
use kyro_core::receipt::ObservedEffect;
use kyro_core::{Call, Execution, Outcome, Policy, Registry, Runtime, ToolError, Workspace};
use kyro_tools::settings::NetworkSettings;
use serde_json::{Value, json};

/// Browser tests run one at a time: each starts a Chromium, and the lifetime test counts them.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> Option<MutexGuard<'static, ()>> {
    if let Some(reason) = kyro_tools::browser::unavailable() {
        assert!(
            std::env::var_os("KYRO_REQUIRE_BROWSER").is_none(),
            "KYRO_REQUIRE_BROWSER is set but {reason}"
        );
        eprintln!("skipped: {reason}");
        return None;
    }
    Some(SERIAL.lock().unwrap_or_else(|e| e.into_inner()))
}

const INDEX: &str = r#"<html><head><title>Kyro test</title></head><body>
<h1>Hello</h1><p>Some <b>bold</b> text.</p>
<a href="/next?from=link">Next page</a>
<form action="/next"><label for="q">Query</label><input id="q" name="q" placeholder="search">
<button type="submit">Go</button></form>
<button id="counter" onclick="this.textContent = 'Clicked ' + (++window.clicks)">Count</button>
<script>window.clicks = 0;</script>
<button id="alerter" onclick="alert('Saved!'); this.textContent = confirm('Sure?') ? 'Agreed' : 'Declined'">Ask</button>
<div style="display:none"><button id="hidden">Hidden</button></div>
<div style="position:relative"><button id="under">Under</button>
<div id="cover" style="position:absolute;left:0;top:0;width:300px;height:60px;background:white"></div></div>
<button disabled id="off">Off</button>
<input id="ro" readonly value="fixed">
</body></html>"#;

/// Path to (status, extra headers, body).
type Pages = HashMap<&'static str, (u16, Vec<(&'static str, String)>, String)>;

/// A local site; records every request path it is asked for.
struct Site {
    base: String,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Site {
    fn start(pages: Pages) -> Site {
        Site::start_on("127.0.0.1", pages)
    }

    fn start_on(ip: &str, pages: Pages) -> Site {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let base = common::serve_on(ip, move |request| {
            log.lock().unwrap().push(request.path.clone());
            let path = request.path.split('?').next().unwrap_or("");
            let (status, extra, body) = pages.get(path).cloned().unwrap_or((404, vec![], "missing".into()));
            let mut headers = vec![("Content-Type".to_owned(), "text/html; charset=utf-8".to_owned())];
            headers.extend(extra.into_iter().map(|(k, v)| (k.to_owned(), v)));
            (status, headers, body)
        });
        Site { base, seen }
    }

    fn standard() -> Site {
        let mut pages = HashMap::new();
        pages.insert("/", (200, vec![], INDEX.to_owned()));
        pages.insert(
            "/next",
            (
                200,
                vec![],
                "<html><head><title>Next</title></head><body><p>Arrived</p></body></html>".into(),
            ),
        );
        pages.insert(
            "/keys",
            (
                200,
                vec![],
                "<html><head><title>Keys</title></head><body>
<input id='keyed' placeholder='keyed' onkeydown=\"document.getElementById('keys').textContent = 'keys ' + (++window.keys)\">
<p id='keys'>keys 0</p><script>window.keys = 0;</script></body></html>"
                    .into(),
            ),
        );
        Site::start(pages)
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn requested(&self, prefix: &str) -> bool {
        self.seen.lock().unwrap().iter().any(|p| p.starts_with(prefix))
    }
}

/// A runtime over a fresh workspace, kept across calls (the browser lives with it).
struct Harness {
    runtime: Runtime,
    executor: tokio::runtime::Runtime,
    _ws: tempfile::TempDir,
}

impl Harness {
    fn new(network: NetworkSettings) -> Harness {
        Harness::with_policy(Policy {
            approvals: ApprovalRules::uniform(ApprovalRule::Auto),
            tools: [("network".to_owned(), serde_json::to_value(&network).unwrap())].into(),
            ..Policy::default()
        })
    }

    fn with_policy(policy: Policy) -> Harness {
        let ws = tempfile::tempdir().unwrap();
        let registry = Arc::new(Registry::with_catalog(kyro_tools::BUILTINS).unwrap());
        let runtime = Runtime::new(registry, Workspace::new(ws.path()).unwrap(), &policy).unwrap();
        let executor = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        Harness {
            runtime,
            executor,
            _ws: ws,
        }
    }

    /// Loopback allowed, and results over `bytes` refused.
    fn with_output_limit(bytes: u64) -> Harness {
        Harness::with_policy(Policy {
            approvals: ApprovalRules::uniform(ApprovalRule::Auto),
            tools: [("network".to_owned(), json!({ "allow_hosts": ["127.0.0.1"] }))].into(),
            limits: kyro_core::policy::Limits {
                max_output_bytes: bytes,
                ..Default::default()
            },
            ..Policy::default()
        })
    }

    /// Loopback allowed: the test site runs there.
    fn local() -> Harness {
        Harness::new(NetworkSettings {
            allow_hosts: vec!["127.0.0.1".into()],
            ..NetworkSettings::default()
        })
    }

    fn execution(&self, tool: &str, args: Value) -> Execution {
        self.executor.block_on(self.runtime.execute(Call::new(tool, args)))
    }

    fn call(&self, tool: &str, args: Value) -> Outcome {
        self.execution(tool, args).outcome
    }

    fn ok(&self, tool: &str, args: Value) -> Value {
        match self.call(tool, args.clone()) {
            Outcome::Ok { result, .. } => result,
            other => panic!("{tool} {args}: {other:?}"),
        }
    }

    fn failed(&self, tool: &str, args: Value) -> ToolError {
        match self.call(tool, args.clone()) {
            Outcome::ExecutionFailed { error, .. } => error,
            other => panic!("{tool} {args}: expected a failure, got {other:?}"),
        }
    }
}

/// The ref of the first outline line containing `needle`.
fn ref_of(snapshot: &Value, needle: &str) -> String {
    let text = snapshot["snapshot"].as_str().unwrap();
    let line = text
        .lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?} in\n{text}"));
    let start = line.find("[ref=").unwrap_or_else(|| panic!("no ref on {line:?}")) + 5;
    line[start..line[start..].find(']').unwrap() + start].to_owned()
}

#[test]
fn navigate_and_snapshot_outline_the_page_with_refs() {
    let Some(_serial) = serial() else { return };
    let site = Site::standard();
    let h = Harness::local();
    let page = h.ok("browser_navigate", json!({ "url": site.url("/") }));
    assert_eq!(page["title"], "Kyro test");
    assert_eq!(page["status"], 200);
    assert_eq!(page["url"], site.url("/"));

    let snap = h.ok("browser_snapshot", json!({}));
    let text = snap["snapshot"].as_str().unwrap();
    assert!(text.contains("- heading \"Hello\" [level=1]"), "{text}");
    assert!(text.contains("- text: \"bold\""), "{text}");
    assert!(text.contains("- link \"Next page\" [ref="), "{text}");
    assert!(text.contains("[url=/next?from=link]"), "{text}");
    assert!(text.contains("- textbox \"Query\" [ref="), "{text}");
    assert!(text.contains("- button \"Go\" [ref="), "{text}");
    assert!(text.contains("- button \"Off\" [disabled] [ref="), "{text}");
    assert!(!text.contains("Hidden"), "hidden elements are left out: {text}");
    assert!(snap["refs"].as_u64().unwrap() >= 6);
    assert_eq!(snap["truncated"], false);

    let short = h.ok("browser_snapshot", json!({ "max_chars": 100 }));
    assert_eq!(short["truncated"], true);
    assert!(short["snapshot"].as_str().unwrap().len() <= 100);
}

#[test]
fn click_by_ref_and_selector_use_real_clicks() {
    let Some(_serial) = serial() else { return };
    let site = Site::standard();
    let h = Harness::local();
    h.ok("browser_navigate", json!({ "url": site.url("/") }));
    let snap = h.ok("browser_snapshot", json!({}));
    let counter = ref_of(&snap, "button \"Count\"");
    h.ok("browser_click", json!({ "ref": counter }));
    h.ok("browser_click", json!({ "selector": "#counter" }));
    let after = h.ok("browser_snapshot", json!({}));
    assert!(
        after["snapshot"].as_str().unwrap().contains("button \"Clicked 2\""),
        "{after}"
    );

    // Dialogs do not block the page: each is dismissed and reported.
    let asked = h.ok("browser_click", json!({ "selector": "#alerter" }));
    assert_eq!(asked["dialogs"], json!(["alert: Saved!", "confirm: Sure?"]), "{asked}");
    let after = h.ok("browser_snapshot", json!({}));
    assert!(
        after["snapshot"].as_str().unwrap().contains("button \"Declined\""),
        "{after}"
    );
    assert_eq!(
        h.ok("browser_click", json!({ "ref": ref_of(&after, "Declined") }))["dialogs"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );

    // A link click navigates, and the call waits for it.
    let link = ref_of(&after, "link \"Next page\"");
    let clicked = h.ok("browser_click", json!({ "ref": link }));
    assert_eq!(clicked["url"], site.url("/next?from=link"));
    assert_eq!(clicked["title"], "Next");
    assert!(site.requested("/next?from=link"));
}

#[test]
fn type_replaces_appends_and_submits() {
    let Some(_serial) = serial() else { return };
    let site = Site::standard();
    let h = Harness::local();
    h.ok("browser_navigate", json!({ "url": site.url("/") }));
    let snap = h.ok("browser_snapshot", json!({}));
    let query = ref_of(&snap, "textbox \"Query\"");
    let typed = h.ok("browser_type", json!({ "ref": query, "text": "héllo wörld" }));
    assert_eq!(typed["value"], "héllo wörld");
    let typed = h.ok("browser_type", json!({ "ref": query, "text": "!", "append": true }));
    assert_eq!(typed["value"], "héllo wörld!");
    let typed = h.ok(
        "browser_type",
        json!({ "selector": "#q", "text": "kyro", "submit": true }),
    );
    assert_eq!(typed["value"], "kyro");
    assert_eq!(typed["title"], "Next");
    assert!(site.requested("/next?q=kyro"), "{:?}", site.seen.lock().unwrap());

    // At once by default (no key events); key by key with `slowly`.
    h.ok("browser_navigate", json!({ "url": site.url("/keys") }));
    let typed = h.ok("browser_type", json!({ "selector": "#keyed", "text": "abc" }));
    assert_eq!(typed["value"], "abc");
    let text = h.ok("browser_snapshot", json!({}))["snapshot"].to_string();
    assert!(text.contains("keys 0"), "{text}");
    let typed = h.ok(
        "browser_type",
        json!({ "selector": "#keyed", "text": "xyz", "slowly": true }),
    );
    assert_eq!(typed["value"], "xyz");
    let text = h.ok("browser_snapshot", json!({}))["snapshot"].to_string();
    assert!(text.contains("keys 3"), "{text}");
}

#[test]
fn actions_on_missing_or_unusable_elements_are_typed_refusals() {
    let Some(_serial) = serial() else { return };
    let site = Site::standard();
    let h = Harness::local();
    h.ok("browser_navigate", json!({ "url": site.url("/") }));
    h.ok("browser_snapshot", json!({}));

    let stale = h.failed("browser_click", json!({ "ref": "e999" }));
    assert!(
        matches!(Failure::of(&stale), Some(Failure::NoSuchElement { element }) if element == "e999"),
        "{stale:?}"
    );
    let no_frame = h.failed("browser_click", json!({ "ref": "f9e1" }));
    assert!(
        matches!(Failure::of(&no_frame), Some(Failure::NoSuchElement { element }) if element == "f9e1"),
        "{no_frame:?}"
    );
    let missing = h.failed("browser_click", json!({ "selector": "#nope" }));
    assert!(
        matches!(Failure::of(&missing), Some(Failure::NoSuchElement { .. })),
        "{missing:?}"
    );
    let bad = h.failed("browser_click", json!({ "selector": "button[" }));
    assert!(
        matches!(Failure::of(&bad), Some(Failure::InvalidPattern { .. })),
        "{bad:?}"
    );
    for (selector, why) in [
        ("#hidden", "hidden"),
        ("#off", "disabled"),
        ("#under", "covered by <div#cover>"),
    ] {
        let refused = h.failed("browser_click", json!({ "selector": selector }));
        assert!(
            matches!(Failure::of(&refused), Some(Failure::NotActionable { reason, .. }) if reason.contains(why)),
            "{selector}: {refused:?}"
        );
    }
    for (selector, why) in [("#counter", "does not take text"), ("#ro", "not editable")] {
        let refused = h.failed("browser_type", json!({ "selector": selector, "text": "x" }));
        assert!(
            matches!(Failure::of(&refused), Some(Failure::NotActionable { reason, .. }) if reason.contains(why)),
            "{selector}: {refused:?}"
        );
    }
    let neither = h.failed("browser_click", json!({}));
    assert!(
        matches!(Failure::of(&neither), Some(Failure::NotActionable { .. })),
        "{neither:?}"
    );
    let both = h.failed("browser_click", json!({ "ref": "e1", "selector": "#q" }));
    assert!(
        matches!(Failure::of(&both), Some(Failure::NotActionable { .. })),
        "{both:?}"
    );
    // Refs are checked by the schema before the page is touched.
    assert!(matches!(
        h.call("browser_click", json!({ "ref": "#counter" })),
        Outcome::InvalidArguments { .. }
    ));
    // After a navigation, old refs are gone.
    let snap = h.ok("browser_snapshot", json!({}));
    let go = ref_of(&snap, "button \"Go\"");
    h.ok("browser_navigate", json!({ "url": site.url("/next") }));
    assert!(matches!(
        Failure::of(&h.failed("browser_click", json!({ "ref": go }))),
        Some(Failure::NoSuchElement { .. })
    ));
}

#[test]
fn iframes_of_any_origin_are_part_of_the_outline_with_refs_and_real_clicks() {
    let Some(_serial) = serial() else { return };
    let mut other = HashMap::new();
    other.insert(
        "/secret",
        (
            200,
            vec![],
            "<html><body style='margin:0'><p>Top secret words</p>
<button style='margin:5px 30px' onclick=\"this.textContent = 'Other clicked'\">Other</button>
<input placeholder='other field'></body></html>"
                .to_owned(),
        ),
    );
    let other = Site::start(other);
    let mut pages = HashMap::new();
    // A frame-local point that is not moved into the page's coordinates lands on the decoy.
    pages.insert(
        "/framed",
        (
            200,
            vec![],
            format!(
                "<html><head><title>Framed</title></head><body style='margin:0'>
<button id='decoy' style='position:absolute;left:0;top:0;width:600px;height:150px' onclick=\"this.textContent='Decoy hit'\">Decoy</button>
<iframe title='inner' src='/inner' style='position:absolute;left:300px;top:200px;width:400px;height:200px;border:7px solid black;padding:5px'></iframe>
<iframe title='other' src='{}' style='position:absolute;left:0;top:450px'></iframe>
</body></html>",
                other.url("/secret")
            ),
        ),
    );
    pages.insert(
        "/inner",
        (
            200,
            vec![],
            "<html><body style='margin:0'><button style='margin:10px 20px' onclick=\"this.textContent = 'Inner ' + (++window.n)\">Inner</button>
<script>window.n = 0;</script><input placeholder='inner field'></body></html>"
                .into(),
        ),
    );
    let site = Site::start(pages);
    let h = Harness::local();
    h.ok("browser_navigate", json!({ "url": site.url("/framed") }));
    let snap = h.ok("browser_snapshot", json!({}));
    let text = snap["snapshot"].as_str().unwrap();
    assert!(
        text.contains("- iframe \"inner\" [url=/inner]\n  - button \"Inner\" [ref="),
        "{text}"
    );
    // The cross-origin frame is read in a world of its own; its refs say which frame.
    assert!(
        text.contains("- iframe \"other\" [url=") && text.contains("[frame=f1]\n  - text: \"Top secret words\""),
        "{text}"
    );
    assert!(text.contains("- button \"Other\" [ref=f1e"), "{text}");
    assert!(other.requested("/secret"));

    h.ok("browser_click", json!({ "ref": ref_of(&snap, "button \"Inner\"") }));
    h.ok(
        "browser_type",
        json!({ "ref": ref_of(&snap, "textbox \"inner field\""), "text": "in a frame" }),
    );
    h.ok("browser_click", json!({ "ref": ref_of(&snap, "button \"Other\"") }));
    let typed = h.ok(
        "browser_type",
        json!({ "ref": ref_of(&snap, "textbox \"other field\""), "text": "across origins" }),
    );
    assert_eq!(typed["value"], "across origins");
    let after = h.ok("browser_snapshot", json!({}));
    let text = after["snapshot"].as_str().unwrap();
    assert!(text.contains("button \"Inner 1\""), "{text}");
    assert!(text.contains("button \"Other clicked\""), "{text}");
    assert!(
        text.contains("button \"Decoy\""),
        "the click went to the frame's button: {text}"
    );
    assert!(
        text.contains("textbox \"inner field\"") && text.contains(": \"in a frame\""),
        "{text}"
    );
}

#[test]
fn cross_site_frames_workers_and_websockets_are_held_to_the_policy_too() {
    let Some(_serial) = serial() else { return };
    // Requests the page's Fetch interception may not see: a cross-site frame's (Chromium
    // would give it a process and DevTools target of its own), a worker's, a WebSocket's.
    // Each goes through kyro's proxy and is refused there. 127.0.0.2 is loopback but not on
    // the allow list. (Fails without the proxy: the WebSocket handshake reaches the host.)
    let denied = Site::start_on("127.0.0.2", HashMap::new());
    let mut framed = HashMap::new();
    framed.insert(
        "/frame",
        (
            200,
            vec![],
            format!(
                "<html><body><p>Framed content</p><img src='{}'>
<script>fetch('{}').catch(() => {{}})</script></body></html>",
                denied.url("/leak-img"),
                denied.url("/leak-fetch")
            ),
        ),
    );
    let framed = Site::start(framed);
    let mut pages = HashMap::new();
    pages.insert(
        "/",
        (
            200,
            vec![],
            format!(
                "<html><body><iframe title='x' src='{}'></iframe><script>
new Worker(URL.createObjectURL(new Blob([\"fetch('{}').catch(() => {{}})\"])));
try {{ new WebSocket('{}'); }} catch (_) {{}}
</script></body></html>",
                framed.url("/frame"),
                denied.url("/leak-worker"),
                denied.url("/leak-ws").replace("http:", "ws:")
            ),
        ),
    );
    // The top page is on `localhost`, the frame on 127.0.0.1: two sites.
    let top = Site::start(pages);
    let h = Harness::new(NetworkSettings {
        allow_hosts: vec!["127.0.0.1".into(), "localhost".into()],
        ..NetworkSettings::default()
    });
    let execution = h.execution(
        "browser_navigate",
        json!({ "url": top.url("/").replace("127.0.0.1", "localhost") }),
    );
    assert!(
        matches!(execution.outcome, Outcome::Ok { .. }),
        "{:?}",
        execution.outcome
    );
    assert!(framed.requested("/frame"));
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        denied.seen.lock().unwrap().is_empty(),
        "{:?}",
        denied.seen.lock().unwrap()
    );
}

#[test]
fn a_page_cannot_forge_the_outline_or_steer_clicks() {
    let Some(_serial) = serial() else { return };
    let mut pages = HashMap::new();
    // The page patches what a script in its own world would rely on: every box reported
    // is the decoy's, every JSON answer is forged.
    pages.insert(
        "/tamper",
        (
            200,
            vec![],
            "<html><head><title>Tamper</title></head><body style='margin:0'>
<button id='decoy' style='position:absolute;left:0;top:0;width:200px;height:50px' onclick=\"this.textContent='Decoy hit'\">Decoy</button>
<button id='real' style='position:absolute;left:400px;top:300px' onclick=\"this.textContent='Real hit'\">Real</button>
<script>
const decoy = document.getElementById('decoy');
const box = Element.prototype.getBoundingClientRect;
Element.prototype.getBoundingClientRect = function () { return box.call(decoy); };
JSON.stringify = () => '{\"snapshot\": \"- button forged\", \"refs\": 0, \"truncated\": false, \"title\": \"forged\"}';
</script></body></html>"
                .into(),
        ),
    );
    let site = Site::start(pages);
    let h = Harness::local();
    h.ok("browser_navigate", json!({ "url": site.url("/tamper") }));
    let snap = h.ok("browser_snapshot", json!({}));
    let text = snap["snapshot"].as_str().unwrap();
    assert!(!text.contains("forged") && text.contains("button \"Real\""), "{text}");
    h.ok("browser_click", json!({ "selector": "#real" }));
    let after = h.ok("browser_snapshot", json!({}))["snapshot"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        after.contains("button \"Real hit\"") && after.contains("button \"Decoy\""),
        "{after}"
    );
}

#[test]
fn chromium_itself_asks_for_nothing_off_the_machine() {
    let Some(_serial) = serial() else { return };
    // Sign-in, component updates, network time, autofill predictions: Chromium's own
    // requests would reach the proxy, and be refused here and reported.
    let site = Site::standard();
    let h = Harness::local();
    let mut refused = Vec::new();
    let mut collect = |execution: Execution| {
        assert!(
            matches!(execution.outcome, Outcome::Ok { .. }),
            "{:?}",
            execution.outcome
        );
        refused.extend(execution.receipt.effects.into_iter().filter_map(|e| match e {
            ObservedEffect::RefusedRequest { url } => Some(url),
            _ => None,
        }));
    };
    collect(h.execution("browser_navigate", json!({ "url": site.url("/") })));
    std::thread::sleep(Duration::from_secs(3));
    collect(h.execution("browser_navigate", json!({ "url": site.url("/next") })));
    collect(h.execution("browser_snapshot", json!({})));
    assert!(refused.is_empty(), "{refused:?}");
}

#[test]
fn screenshots_are_png_of_the_viewport_or_the_whole_page() {
    let Some(_serial) = serial() else { return };
    let mut pages = HashMap::new();
    pages.insert(
        "/tall",
        (
            200,
            vec![],
            "<html><body style='margin:0'><div id='box' style='width:200px;height:100px;background:green'></div>
<div style='height:2900px;background:repeating-linear-gradient(45deg,red 0 3px,blue 3px 7px,yellow 7px 9px)'>tall</div></body></html>".into(),
        ),
    );
    let site = Site::start(pages);
    let h = Harness::local();
    h.ok("browser_navigate", json!({ "url": site.url("/tall") }));
    let shot = h.ok("browser_screenshot", json!({}));
    assert_eq!(shot["mime_type"], "image/png");
    assert_eq!(
        (shot["width"].as_u64(), shot["height"].as_u64()),
        (Some(1280), Some(800))
    );
    let png = base64_decode(shot["data"].as_str().unwrap());
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert_eq!(png.len() as u64, shot["bytes"].as_u64().unwrap());
    let full = h.ok("browser_screenshot", json!({ "full_page": true }));
    assert_eq!(full["height"].as_u64(), Some(3000), "{}", full["height"]);
    assert_eq!(full["scale"], 1.0);

    // One element, as JPEG.
    let element = h.ok(
        "browser_screenshot",
        json!({ "selector": "#box", "format": "jpeg", "quality": 50 }),
    );
    assert_eq!(element["mime_type"], "image/jpeg");
    assert_eq!(
        (element["width"].as_u64(), element["height"].as_u64()),
        (Some(200), Some(100)),
        "{}",
        element["height"]
    );
    let jpeg = base64_decode(element["data"].as_str().unwrap());
    assert_eq!(&jpeg[..2], &[0xFF, 0xD8]);
    let missing = h.failed("browser_screenshot", json!({ "selector": "#nothing" }));
    assert!(
        matches!(Failure::of(&missing), Some(Failure::NoSuchElement { .. })),
        "{missing:?}"
    );

    // A whole page over the output limit is scaled down until it fits.
    let small = Harness::with_output_limit(96 * 1024);
    small.ok("browser_navigate", json!({ "url": site.url("/tall") }));
    let fitted = small.ok("browser_screenshot", json!({ "full_page": true }));
    let scale = fitted["scale"].as_f64().unwrap();
    assert!(scale < 1.0, "{scale}");
    assert!(fitted["bytes"].as_u64().unwrap() <= 72 * 1024, "{}", fitted["bytes"]);
    let height = fitted["height"].as_u64().unwrap();
    assert!(
        height < 3000 && height.abs_diff((3000.0 * scale) as u64) <= 2,
        "{height} at {scale}"
    );
}

fn base64_decode(text: &str) -> Vec<u8> {
    use base64::Engine;
    base64::prelude::BASE64_STANDARD.decode(text).unwrap()
}

#[test]
fn the_default_policy_refuses_loopback_before_the_browser_starts() {
    let Some(_serial) = serial() else { return };
    let site = Site::standard();
    let h = Harness::new(NetworkSettings::default());
    let refused = h.failed("browser_navigate", json!({ "url": site.url("/") }));
    assert!(
        matches!(Failure::of(&refused), Some(Failure::UrlRefused { .. })),
        "{refused:?}"
    );
    assert!(site.seen.lock().unwrap().is_empty());
    for url in ["file:///etc/passwd", "chrome://settings", "javascript:alert(1)"] {
        assert!(
            matches!(
                h.call("browser_navigate", json!({ "url": url })),
                Outcome::InvalidArguments { .. }
            ),
            "{url}"
        );
    }
}

#[test]
fn requests_a_page_makes_are_checked_against_the_policy() {
    let Some(_serial) = serial() else { return };
    // The page is on 127.0.0.2 (allowed); a second server on 127.0.0.1, reached as
    // `localhost`, is denied (by its addresses) and logs anything that gets through.
    let listener_site = Site::start(HashMap::new());
    let port = listener_site.base.rsplit(':').next().unwrap().to_owned();
    let denied = format!("http://localhost:{port}");
    let mut pages = HashMap::new();
    pages.insert(
        "/leaky",
        (
            200,
            vec![],
            format!(
                "<html><head><title>Leaky</title></head><body><img src='{denied}/img.png'>\
                 <script>fetch('{denied}/exfil?x=1').catch(() => {{}});</script></body></html>"
            ),
        ),
    );
    pages.insert(
        "/redirect",
        (302, vec![("Location", format!("{denied}/landing"))], String::new()),
    );
    pages.insert("/hop", (302, vec![("Location", "/fine".into())], String::new()));
    pages.insert("/fine", (200, vec![], "<title>Fine</title>".into()));
    let site = Site::start_on("127.0.0.2", pages);
    let h = Harness::new(NetworkSettings {
        allow_private: true,
        deny_hosts: vec!["localhost".into()],
        ..NetworkSettings::default()
    });
    let leaky = site.url("/leaky");
    let execution = h.execution("browser_navigate", json!({ "url": leaky }));
    assert!(
        matches!(execution.outcome, Outcome::Ok { .. }),
        "{:?}",
        execution.outcome
    );
    // Give the page's script time to try.
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(!listener_site.requested("/img.png"), "the denied image was fetched");
    assert!(
        !listener_site.requested("/exfil"),
        "the page's fetch() reached a denied host"
    );
    let refused: Vec<String> = execution
        .receipt
        .effects
        .iter()
        .filter_map(|e| match e {
            ObservedEffect::RefusedRequest { url } => Some(url.clone()),
            _ => None,
        })
        .collect();
    assert!(refused.iter().any(|u| u.ends_with("/img.png")), "{refused:?}");

    // A redirect to a denied host is refused like a direct request, and never reaches it.
    let redirect = h.failed("browser_navigate", json!({ "url": site.url("/redirect") }));
    assert!(
        matches!(Failure::of(&redirect), Some(Failure::UrlRefused { url, .. }) if url.ends_with("/landing")),
        "{redirect:?}"
    );
    assert!(!listener_site.requested("/landing"));
    // A redirect within allowed hosts is followed.
    let hop = h.ok("browser_navigate", json!({ "url": site.url("/hop") }));
    assert_eq!(hop["title"], "Fine");
}

#[test]
fn one_browser_per_workspace_gone_with_the_runtime() {
    let Some(_serial) = serial() else { return };
    let site = Site::standard();
    let descriptors = || std::fs::read_dir("/proc/self/fd").unwrap().count();
    let before = descriptors();
    let h = Harness::local();
    h.ok("browser_navigate", json!({ "url": site.url("/") }));
    // A later call sees the page an earlier call opened.
    let snap = h.ok("browser_snapshot", json!({}));
    assert_eq!(snap["title"], "Kyro test");
    let ours = chromium_children();
    assert!(!ours.is_empty(), "no Chromium is running for this runtime");

    // A second workspace gets its own browser on its own page.
    let other = Harness::local();
    other.ok("browser_navigate", json!({ "url": site.url("/next") }));
    assert_eq!(h.ok("browser_snapshot", json!({}))["title"], "Kyro test");
    assert_eq!(other.ok("browser_snapshot", json!({}))["title"], "Next");
    assert_eq!(chromium_children().len(), 2 * ours.len());

    drop(h);
    drop(other);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !chromium_children().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(chromium_children().is_empty(), "Chromium outlived its runtime");
    for pid in ours {
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "process {pid} is left (a zombie?)"
        );
    }
    // Nor does kyro keep what it held for them (the proxy's listener, the sockets made in
    // Chromium's namespace, the relay): a few descriptors of other tests may come and go.
    let deadline = Instant::now() + Duration::from_secs(5);
    while descriptors() > before + 6 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        descriptors() <= before + 6,
        "{} descriptors before, {} after",
        before,
        descriptors()
    );
}

#[test]
fn the_browser_is_out_of_reach_of_other_processes_and_downloads_nothing() {
    let Some(_serial) = serial() else { return };
    let name = format!("kyro-download-{}.bin", std::process::id());
    let disposition = format!("attachment; filename=\"{name}\"");
    let site = Site::start(HashMap::from([
        (
            "/",
            (
                200,
                vec![],
                "<title>Home</title><a id=\"get\" href=\"/file\">Get</a>".to_owned(),
            ),
        ),
        (
            "/file",
            (200, vec![("Content-Disposition", disposition)], "payload".to_owned()),
        ),
    ]));
    let h = Harness::local();
    h.ok("browser_navigate", json!({ "url": site.url("/") }));
    let snap = h.ok("browser_snapshot", json!({}));
    h.ok("browser_click", json!({ "ref": ref_of(&snap, "Get") }));
    std::thread::sleep(Duration::from_millis(500));
    assert!(site.requested("/file"), "the download was never asked for");
    // Nothing written where a browser puts downloads (kyro's HOME, or Chromium's).
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from).unwrap();
    assert!(
        !home.join("Downloads").join(&name).exists(),
        "the page downloaded into $HOME"
    );

    let chromium = chromium_children();
    assert!(!chromium.is_empty());
    if kyro_core::sandbox::support().is_ok() {
        // In a network namespace of its own ...
        let ns = |pid: &str| std::fs::read_link(format!("/proc/{pid}/ns/net")).unwrap();
        assert_ne!(ns(&chromium[0].to_string()), ns("self"));
        // Its root holds the system's directories and the roots, nothing else of the
        // host's: not this test's files outside the workspace, not `/run` or `/home`.
        let root = std::path::PathBuf::from(format!("/proc/{}/root", chromium[0]));
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        assert!(root.join("usr/lib").is_dir(), "{}", root.display());
        let ws = h.runtime.workspace().root().to_owned();
        assert!(
            root.join(ws.strip_prefix("/").unwrap()).is_dir(),
            "the workspace is there"
        );
        for gone in [outside.path().join("secret"), "/run".into(), "/home".into()] {
            assert!(
                !root.join(gone.strip_prefix("/").unwrap()).exists(),
                "{} is there",
                gone.display()
            );
        }
        // ... so nothing listening on this host's loopback drives it for another process
        // (kyro's own relay serves kyro only).
        let probe = r#"
import socket, sys
for port in sys.argv[1:]:
    try:
        s = socket.create_connection(("127.0.0.1", int(port)), timeout=1)
        s.sendall(b"GET /json/version HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        s.settimeout(1)
        answer = b""
        while len(answer) < 4096:
            part = s.recv(4096)
            if not part:
                break
            answer += part
        if b"webSocketDebuggerUrl" in answer:
            print("devtools on", port)
    except OSError:
        pass
"#;
        let ports: Vec<String> = loopback_listeners().iter().map(u16::to_string).collect();
        assert!(!ports.is_empty(), "kyro's relay at least listens");
        let out = std::process::Command::new("python3")
            .arg("-c")
            .arg(probe)
            .args(&ports)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "",
            "another process drives the browser"
        );
    }
}

/// Ports listening on this network namespace's IPv4 loopback (or every address).
fn loopback_listeners() -> Vec<u16> {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap();
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (address, port) = fields.get(1)?.split_once(':')?;
            let listening = fields.get(3) == Some(&"0A");
            let reachable = address == "0100007F" || address == "00000000";
            (listening && reachable)
                .then(|| u16::from_str_radix(port, 16).ok())
                .flatten()
        })
        .collect()
}

/// Chromium processes this test process started (their parent is us).
fn chromium_children() -> Vec<u32> {
    let me = std::process::id().to_string();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid ...
        let Some(after) = stat.rsplit_once(')').map(|(_, rest)| rest) else {
            continue;
        };
        let fields: Vec<&str> = after.split_whitespace().collect();
        if fields.get(1) != Some(&me.as_str()) {
            continue;
        }
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains("kyro-chromium-") {
            found.push(pid);
        }
    }
    found
}

const FORM: &str = r#"<html><head><title>Order</title></head><body>
<label for="size">Size</label>
<select id="size" onchange="document.getElementById('said').textContent = 'size ' + this.value">
<option value="s">Small</option><option value="m" selected>Medium</option><option value="l">Large</option>
<option value="x" disabled>Extra</option></select>
<p id="said">size m</p>
<label for="extras">Extras</label>
<select id="extras" multiple><option value="a">Apples</option><option value="b">Bread</option></select>
<input id="keyed" placeholder="keyed" onkeydown="document.getElementById('keys').textContent = 'key ' + event.key">
<p id="keys">no key</p>
<button id="menu" onmouseover="document.getElementById('tip').textContent = 'menu open'">Menu</button>
<p id="tip">menu closed</p>
<input type="checkbox" id="agree"><label for="agree">Agree</label>
<textarea id="note" oninput="document.getElementById('noted').textContent = 'noted ' + this.value.length"></textarea>
<p id="noted">noted 0</p>
<p id="late"></p>
<script>setTimeout(() => { document.getElementById('late').textContent = 'Arrived late'; }, 700);</script>
<a href="/second">Second</a>
</body></html>"#;

#[test]
fn select_keys_hover_history_and_waiting() {
    let Some(_serial) = serial() else { return };
    let mut pages: Pages = HashMap::new();
    pages.insert("/form", (200, vec![], FORM.into()));
    pages.insert(
        "/second",
        (
            200,
            vec![],
            "<html><head><title>Second</title></head><body>two</body></html>".into(),
        ),
    );
    let site = Site::start(pages);
    let h = Harness::local();
    h.ok("browser_navigate", json!({ "url": site.url("/form") }));
    let snap = h.ok("browser_snapshot", json!({}));
    let size = ref_of(&snap, "combobox \"Size\"");

    // Parts of the outline: one element's lines, lines with a text, the top levels.
    let part = h.ok("browser_snapshot", json!({ "ref": size }));
    let text = part["snapshot"].as_str().unwrap();
    assert!(text.starts_with("- combobox \"Size\""), "{text}");
    assert!(!text.contains("button"), "{text}");
    let found = h.ok("browser_snapshot", json!({ "find": "MENU" }));
    let text = found["snapshot"].as_str().unwrap();
    assert!(
        text.contains("button \"Menu\"") && text.contains("menu closed"),
        "{text}"
    );
    assert!(!text.contains("combobox"), "{text}");
    let top = h.ok("browser_snapshot", json!({ "depth": 0 }));
    assert!(
        top["snapshot"].as_str().unwrap().lines().all(|l| l.starts_with("- ")),
        "{top}"
    );
    let gone = h.failed("browser_snapshot", json!({ "ref": "e999" }));
    assert!(
        matches!(Failure::of(&gone), Some(Failure::NoSuchElement { .. })),
        "{gone:?}"
    );
    let size = ref_of(&h.ok("browser_snapshot", json!({})), "combobox \"Size\"");

    // A <select> takes an option by label or by value, and the page hears the change.
    let chosen = h.ok("browser_select_option", json!({ "ref": size, "values": ["Large"] }));
    assert_eq!(chosen["values"], json!(["l"]), "{chosen}");
    let chosen = h.ok("browser_select_option", json!({ "selector": "#size", "values": ["s"] }));
    assert_eq!(chosen["values"], json!(["s"]));
    let after = h.ok("browser_snapshot", json!({}));
    assert!(after["snapshot"].as_str().unwrap().contains("size s"), "{after}");
    let many = h.ok(
        "browser_select_option",
        json!({ "selector": "#extras", "values": ["Apples", "b"] }),
    );
    assert_eq!(many["values"], json!(["a", "b"]));
    for (args, reason) in [
        (
            json!({ "ref": size, "values": ["Huge"] }),
            "no option \"Huge\" (its options: \"Small\", \"Medium\", \"Large\", \"Extra\")",
        ),
        (
            json!({ "ref": size, "values": ["Extra"] }),
            "option \"Extra\" is disabled",
        ),
        (
            json!({ "ref": size, "values": ["s", "m"] }),
            "takes one option and 2 were given",
        ),
        (
            json!({ "selector": "#keyed", "values": ["s"] }),
            "not a <select> (<input>)",
        ),
    ] {
        let refused = h.failed("browser_select_option", args.clone());
        assert!(
            matches!(Failure::of(&refused), Some(Failure::NotActionable { reason: r, .. }) if r.contains(reason)),
            "{args}: {refused:?}"
        );
    }

    // Keys go to the focused element; a name that is no key is refused.
    h.ok("browser_click", json!({ "selector": "#keyed" }));
    h.ok("browser_press_key", json!({ "key": "ArrowDown" }));
    let text = h.ok("browser_snapshot", json!({}))["snapshot"].to_string();
    assert!(text.contains("key ArrowDown"), "{text}");
    let refused = h.failed("browser_press_key", json!({ "key": "NoSuchKey" }));
    assert!(
        matches!(Failure::of(&refused), Some(Failure::InvalidRequest { .. })),
        "{refused:?}"
    );

    // Hover moves the mouse without clicking.
    h.ok("browser_hover", json!({ "selector": "#menu" }));
    let text = h.ok("browser_snapshot", json!({}))["snapshot"].to_string();
    assert!(text.contains("menu open"), "{text}");

    // Waiting: for late text, for text to go, for a time; in vain, with what the page shows.
    let waited = h.ok(
        "browser_wait_for",
        json!({ "text": "Arrived late", "timeout_ms": 5000 }),
    );
    assert!(waited["waited_ms"].as_u64().unwrap() < 5000, "{waited}");
    h.ok("browser_wait_for", json!({ "text_gone": "menu closed" }));
    let slept = h.ok("browser_wait_for", json!({ "time_ms": 300 }));
    assert!(slept["waited_ms"].as_u64().unwrap() >= 300, "{slept}");
    let missed = h.failed("browser_wait_for", json!({ "text": "Never shown", "timeout_ms": 300 }));
    assert!(
        matches!(Failure::of(&missed), Some(Failure::NotSeen { shown, .. }) if shown.contains("Arrived late")),
        "{missed:?}"
    );
    let nothing = h.failed("browser_wait_for", json!({}));
    assert!(
        matches!(Failure::of(&nothing), Some(Failure::InvalidRequest { .. })),
        "{nothing:?}"
    );

    // History: forward by a link, back to the form; nothing before the first page.
    h.ok("browser_click", json!({ "selector": "a" }));
    let back = h.ok("browser_navigate_back", json!({}));
    assert_eq!(back["title"], "Order", "{back}");
    let h2 = Harness::local();
    h2.ok("browser_navigate", json!({ "url": site.url("/second") }));
    let first = h2.call("browser_navigate_back", json!({}));
    // The first page of a fresh browser has about:blank before it, or nothing.
    if let Outcome::ExecutionFailed { error, .. } = first {
        assert!(
            matches!(Failure::of(&error), Some(Failure::InvalidRequest { .. })),
            "{error:?}"
        );
    }
}

#[test]
fn dialogs_answered_as_asked_resize_evaluate_and_close() {
    let Some(_serial) = serial() else { return };
    let mut pages: Pages = HashMap::new();
    pages.insert(
        "/ask",
        (
            200,
            vec![],
            "<html><head><title>Ask</title></head><body>
<button id='name' onclick=\"document.getElementById('said').textContent = 'name ' + prompt('Your name?', 'x')\">Name</button>
<p id='said'>nothing yet</p><script>window.answer = 41;</script></body></html>"
                .into(),
        ),
    );
    let site = Site::start(pages);
    let h = Harness::local();
    h.ok("browser_navigate", json!({ "url": site.url("/ask") }));

    // Unarmed, a prompt is dismissed (null); armed, it is answered with the text, once.
    let clicked = h.ok("browser_click", json!({ "selector": "#name" }));
    assert_eq!(clicked["dialogs"], json!(["prompt: Your name?"]), "{clicked}");
    h.ok("browser_wait_for", json!({ "text": "name null", "timeout_ms": 3000 }));
    h.ok("browser_handle_dialog", json!({ "accept": true, "prompt_text": "Ada" }));
    let clicked = h.ok("browser_click", json!({ "selector": "#name" }));
    assert_eq!(
        clicked["dialogs"],
        json!(["prompt: Your name? (accepted with \"Ada\")"]),
        "{clicked}"
    );
    h.ok("browser_wait_for", json!({ "text": "name Ada", "timeout_ms": 3000 }));
    let clicked = h.ok("browser_click", json!({ "selector": "#name" }));
    assert_eq!(
        clicked["dialogs"],
        json!(["prompt: Your name?"]),
        "the answer held once"
    );

    // The viewport, as the page sees it.
    let resized = h.ok("browser_resize", json!({ "width": 500, "height": 400 }));
    assert_eq!(
        (resized["width"].clone(), resized["height"].clone()),
        (json!(500), json!(400))
    );
    let shot = h.ok("browser_screenshot", json!({}));
    assert_eq!(
        (shot["width"].as_u64(), shot["height"].as_u64()),
        (Some(500), Some(400))
    );

    // The page's own globals, a promise awaited, an exception as a typed failure.
    let value = h.ok("browser_evaluate", json!({ "function": "() => window.answer + 1" }));
    assert_eq!(value["result"], 42);
    let value = h.ok(
        "browser_evaluate",
        json!({ "function": "async () => ({ title: document.title, n: [1, 2] })" }),
    );
    assert_eq!(value["result"], json!({ "title": "Ask", "n": [1, 2] }));
    let thrown = h.failed(
        "browser_evaluate",
        json!({ "function": "() => { throw new Error('nope') }" }),
    );
    assert!(thrown.to_string().contains("nope"), "{thrown}");

    // Closing ends Chromium; the next call starts a fresh browser on a blank page.
    assert_eq!(h.ok("browser_close", json!({})), json!({ "closed": true }));
    assert_eq!(h.ok("browser_close", json!({})), json!({ "closed": false }));
    let fresh = h.ok("browser_evaluate", json!({ "function": "() => location.href" }));
    assert_eq!(fresh["result"], "about:blank");
}

#[test]
fn a_form_is_filled_in_one_call_and_a_field_that_cannot_be_is_named() {
    let Some(_serial) = serial() else { return };
    let mut pages: Pages = HashMap::new();
    pages.insert("/form", (200, vec![], FORM.into()));
    let site = Site::start(pages);
    let h = Harness::local();
    h.ok("browser_navigate", json!({ "url": site.url("/form") }));
    let snap = h.ok("browser_snapshot", json!({}));
    let filled = h.ok(
        "browser_fill_form",
        json!({ "fields": [
            { "ref": ref_of(&snap, "textbox \"keyed\""), "value": "typed over" },
            { "selector": "#agree", "value": "true" },
            { "selector": "#size", "value": "Large" },
            { "selector": "#note", "value": "four" },
        ] }),
    );
    assert_eq!(filled["values"], json!(["typed over", "true", "l", "four"]), "{filled}");
    let text = h.ok("browser_snapshot", json!({}))["snapshot"].to_string();
    assert!(
        text.contains("size l") && text.contains("noted 4"),
        "the page heard the changes: {text}"
    );
    assert!(text.contains("checkbox") && text.contains("[checked]"), "{text}");
    // Setting a field to what it holds changes nothing.
    let again = h.ok(
        "browser_fill_form",
        json!({ "fields": [{ "selector": "#agree", "value": "true" }] }),
    );
    assert_eq!(again["values"], json!(["true"]));
    for (field, reason) in [
        (
            json!({ "selector": "#agree", "value": "yes" }),
            "its value is \"true\" or \"false\"",
        ),
        (
            json!({ "selector": "#menu", "value": "x" }),
            "does not take text (<button>)",
        ),
        (json!({ "selector": "#size", "value": "Huge" }), "no option \"Huge\""),
    ] {
        let refused = h.failed("browser_fill_form", json!({ "fields": [field.clone()] }));
        assert!(
            matches!(Failure::of(&refused), Some(Failure::NotActionable { reason: r, .. }) if r.contains(reason)),
            "{field}: {refused:?}"
        );
    }
}

#[test]
fn console_messages_and_requests_of_the_page() {
    let Some(_serial) = serial() else { return };
    let mut pages: Pages = HashMap::new();
    pages.insert(
        "/noisy",
        (
            200,
            vec![],
            "<html><head><title>Noisy</title><link rel='stylesheet' href='/style.css'></head><body>
<script>console.log('hello', 42, {a: 1}); console.error('bad thing');</script>
<img src='http://10.0.0.1/pixel.png'>
<button id='later' onclick=\"console.warn('clicked'); throw new Error('boom')\">Later</button></body></html>"
                .into(),
        ),
    );
    pages.insert("/style.css", (200, vec![], "body { color: black }".into()));
    let site = Site::start(pages);
    let h = Harness::local();
    h.ok("browser_navigate", json!({ "url": site.url("/noisy") }));
    // Logged before the first read: the browser replays them.
    let logged = h.ok("browser_console_messages", json!({}));
    assert_eq!(
        logged["messages"],
        json!(["log: hello 42 Object", "error: bad thing"]),
        "{logged}"
    );
    h.ok("browser_click", json!({ "selector": "#later" }));
    let logged = h.ok("browser_console_messages", json!({ "only_errors": true }));
    let errors = logged["messages"].as_array().unwrap();
    assert_eq!(errors.len(), 2, "{logged}");
    assert!(
        errors[1].as_str().unwrap().starts_with("error: Error: boom"),
        "{logged}"
    );

    let requests = h.ok("browser_network_requests", json!({}));
    let lines: Vec<&str> = requests["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert!(
        lines.iter().any(|l| *l == format!("GET {}", site.url("/noisy"))),
        "{lines:?}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with("GET ") && l.ends_with("/style.css")),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("GET http://10.0.0.1/pixel.png (refused: ")),
        "{lines:?}"
    );
}

#[test]
fn files_into_the_page_the_page_into_a_pdf_and_a_drag() {
    let Some(_serial) = serial() else { return };
    let mut pages: Pages = HashMap::new();
    pages.insert(
        "/files",
        (
            200,
            vec![],
            "<html><head><title>Files</title></head><body style='margin:0'>
<input type='file' id='one' onchange=\"document.getElementById('got').textContent = 'got ' + this.files[0].name + ' ' + this.files[0].size\">
<input type='file' id='many' multiple><p id='got'>nothing</p>
<div id='from' style='position:absolute;left:20px;top:100px;width:60px;height:60px;background:red'
 onmousedown=\"window.dragging = true\"></div>
<div id='to' style='position:absolute;left:300px;top:100px;width:60px;height:60px;background:blue'
 onmouseup=\"if (window.dragging) document.getElementById('got').textContent = 'dropped'\"></div>
</body></html>"
                .into(),
        ),
    );
    let site = Site::start(pages);
    let h = Harness::local();
    std::fs::write(h._ws.path().join("report.txt"), "12345").unwrap();
    std::fs::write(h._ws.path().join("b.txt"), "b").unwrap();
    h.ok("browser_navigate", json!({ "url": site.url("/files") }));

    let uploaded = h.ok(
        "browser_file_upload",
        json!({ "selector": "#one", "paths": ["report.txt"] }),
    );
    assert_eq!(uploaded["files"], json!(["report.txt"]));
    h.ok(
        "browser_wait_for",
        json!({ "text": "got report.txt 5", "timeout_ms": 3000 }),
    );
    let many = h.ok(
        "browser_file_upload",
        json!({ "selector": "#many", "paths": ["report.txt", "b.txt"] }),
    );
    assert_eq!(many["files"], json!(["report.txt", "b.txt"]));
    let refused = h.failed(
        "browser_file_upload",
        json!({ "selector": "#one", "paths": ["report.txt", "b.txt"] }),
    );
    assert!(
        matches!(Failure::of(&refused), Some(Failure::NotActionable { reason, .. }) if reason.contains("takes one file")),
        "{refused:?}"
    );
    let not_input = h.failed("browser_file_upload", json!({ "selector": "#got", "paths": ["b.txt"] }));
    assert!(
        matches!(Failure::of(&not_input), Some(Failure::NotActionable { .. })),
        "{not_input:?}"
    );
    // Only workspace files: a path outside is refused before the page is touched.
    match h.call(
        "browser_file_upload",
        json!({ "selector": "#one", "paths": ["../outside.txt"] }),
    ) {
        Outcome::Denied { .. } => {}
        other => panic!("{other:?}"),
    }

    // A drag with the mouse, pressed on one element and released on the other.
    h.ok(
        "browser_drag",
        json!({ "start_selector": "#from", "end_selector": "#to" }),
    );
    h.ok("browser_wait_for", json!({ "text": "dropped", "timeout_ms": 3000 }));

    // The page as a PDF file in the workspace, with its receipt's file effect.
    let saved = h.execution("browser_pdf_save", json!({ "path": "page.pdf" }));
    let Outcome::Ok { result, .. } = &saved.outcome else {
        panic!("{:?}", saved.outcome)
    };
    let pdf = std::fs::read(h._ws.path().join("page.pdf")).unwrap();
    assert!(pdf.starts_with(b"%PDF-"), "{result}");
    assert_eq!(result["bytes"].as_u64(), Some(pdf.len() as u64));
    assert!(
        saved
            .receipt
            .effects
            .iter()
            .any(|e| matches!(e, ObservedEffect::File { path, .. } if path == "page.pdf")),
        "{:?}",
        saved.receipt.effects
    );
}

#[test]
fn two_tabs_each_with_its_page_and_refs() {
    let Some(_serial) = serial() else { return };
    let site = Site::standard();
    let h = Harness::local();
    h.ok("browser_navigate", json!({ "url": site.url("/") }));
    let listed = h.ok("browser_tabs", json!({ "action": "list" }));
    assert_eq!(listed["tabs"].as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(listed["tabs"][0]["title"], "Kyro test");

    let opened = h.ok("browser_tabs", json!({ "action": "new", "url": site.url("/next") }));
    assert_eq!(opened["tabs"][1]["title"], "Next", "{opened}");
    assert_eq!(opened["tabs"][1]["current"], true);
    assert_eq!(opened["tabs"][0]["current"], false);
    let second = h.ok("browser_snapshot", json!({}));
    assert!(second["snapshot"].as_str().unwrap().contains("Arrived"), "{second}");

    // Back to the first: its page, and its refs.
    h.ok("browser_tabs", json!({ "action": "select", "index": 0 }));
    let first = h.ok("browser_snapshot", json!({}));
    assert_eq!(first["title"], "Kyro test");
    h.ok("browser_click", json!({ "ref": ref_of(&first, "button \"Count\"") }));
    let after = h.ok("browser_snapshot", json!({}));
    assert!(after["snapshot"].as_str().unwrap().contains("Clicked 1"), "{after}");

    // Refusals: a URL the policy refuses, a tab that does not exist, the last tab.
    let refused = h.failed("browser_tabs", json!({ "action": "new", "url": "http://10.0.0.1/" }));
    assert!(
        matches!(Failure::of(&refused), Some(Failure::UrlRefused { .. })),
        "{refused:?}"
    );
    let missing = h.failed("browser_tabs", json!({ "action": "select", "index": 5 }));
    assert!(
        matches!(Failure::of(&missing), Some(Failure::InvalidRequest { .. })),
        "{missing:?}"
    );
    let closed = h.ok("browser_tabs", json!({ "action": "close", "index": 1 }));
    assert_eq!(closed["tabs"].as_array().unwrap().len(), 1, "{closed}");
    assert_eq!(closed["tabs"][0]["current"], true);
    let last = h.failed("browser_tabs", json!({ "action": "close" }));
    assert!(
        matches!(Failure::of(&last), Some(Failure::InvalidRequest { message }) if message.contains("browser_close")),
        "{last:?}"
    );
}
