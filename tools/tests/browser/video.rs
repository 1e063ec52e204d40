//! Playwright MCP's video tools on a real headless Chromium: a screencast written as a
//! Motion-JPEG AVI inside the workspace (read back here chunk by chunk), and the chapter
//! cards and action callouts a video shows, present in the page while shown, gone after,
//! never in the outline.

use std::time::Duration;

use kyro_core::{Call, Outcome};
use serde_json::{Value, json};

use super::{Harness, Site, serial};

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap())
}

/// What an AVI file says of itself: (total frames in avih, width, height, the sizes of the
/// movi's '00dc' chunks, idx1 entries). Every chunk must hold a JPEG.
fn read_avi(avi: &[u8]) -> (u32, u32, u32, Vec<usize>, usize) {
    assert_eq!(&avi[..4], b"RIFF");
    assert_eq!(u32_at(avi, 4) as usize, avi.len() - 8, "the RIFF size is the file's");
    assert_eq!(&avi[8..12], b"AVI ");
    assert_eq!(&avi[12..16], b"LIST");
    assert_eq!(&avi[20..24], b"hdrl");
    assert_eq!(&avi[24..28], b"avih");
    let (total, width, height) = (u32_at(avi, 48), u32_at(avi, 64), u32_at(avi, 68));
    let strh = avi.windows(4).position(|w| w == b"strh").unwrap();
    assert_eq!(&avi[strh + 8..strh + 16], b"vidsMJPG");
    assert_eq!(u32_at(avi, strh + 8 + 32), total, "the stream's length");
    let movi = avi.windows(4).position(|w| w == b"movi").unwrap();
    let mut at = movi + 4;
    let mut chunks = Vec::new();
    while &avi[at..at + 4] == b"00dc" {
        let size = u32_at(avi, at + 4) as usize;
        assert_eq!(
            &avi[at + 8..at + 10],
            &[0xFF, 0xD8],
            "chunk {} is not a JPEG",
            chunks.len()
        );
        chunks.push(size);
        at += 8 + size + size % 2;
    }
    assert_eq!(&avi[at..at + 4], b"idx1");
    let entries = u32_at(avi, at + 4) as usize / 16;
    assert_eq!(at + 8 + entries * 16, avi.len(), "the index ends the file");
    (total, width, height, chunks, entries)
}

#[test]
fn a_video_of_the_page_is_written_as_motion_jpeg_avi_inside_the_workspace() {
    let Some(_serial) = serial() else { return };
    let site = Site::standard();
    let h = Harness::local();
    h.ok("browser_navigate", json!({ "url": site.url("/") }));
    assert_eq!(h.failed("browser_stop_video", json!({})).kind(), "invalid_request");
    // Refused before anything is recorded: outside the workspace, a missing directory.
    let outside = h.call("browser_start_video", json!({ "filename": "../escape.avi" }));
    assert!(matches!(outside, Outcome::Denied { .. }), "{outside:?}");
    assert_eq!(
        h.failed("browser_start_video", json!({ "filename": "clips/run.avi" }))
            .kind(),
        "not_found"
    );
    assert_eq!(h.failed("browser_stop_video", json!({})).kind(), "invalid_request");
    assert!(!h._ws.path().join("escape.avi").exists());

    std::fs::create_dir(h._ws.path().join("clips")).unwrap();
    let started = h.ok(
        "browser_start_video",
        json!({ "filename": "clips/run.avi", "fps": 10, "size": { "width": 640, "height": 640 } }),
    );
    assert_eq!(started, json!({ "path": "clips/run.avi", "fps": 10.0 }));
    assert_eq!(h.failed("browser_start_video", json!({})).kind(), "invalid_request");
    for _ in 0..3 {
        h.ok("browser_click", json!({ "selector": "#counter" }));
        std::thread::sleep(Duration::from_millis(300));
    }
    h.ok("browser_navigate", json!({ "url": site.url("/next") }));
    std::thread::sleep(Duration::from_millis(500));
    let saved = h.ok("browser_stop_video", json!({}));
    assert_eq!(saved["path"], "clips/run.avi", "{saved}");
    assert_eq!(saved["cut"], Value::Null, "{saved}");
    let frames = saved["frames"].as_u64().unwrap();
    let duration = saved["duration"].as_f64().unwrap();
    assert!((15..=200).contains(&frames), "{saved}");
    assert!((duration - frames as f64 / 10.0).abs() < 0.01, "{saved}");
    // The viewport (1280 x 800) fit in 640 x 640.
    assert_eq!(
        (saved["width"].as_u64(), saved["height"].as_u64()),
        (Some(640), Some(400))
    );

    let avi = std::fs::read(h._ws.path().join("clips/run.avi")).unwrap();
    assert_eq!(avi.len() as u64, saved["bytes"].as_u64().unwrap());
    let (total, width, height, chunks, entries) = read_avi(&avi);
    assert_eq!(u64::from(total), frames);
    assert_eq!((width, height), (640, 400));
    assert_eq!(chunks.len() as u64, frames);
    assert_eq!(entries as u64, frames);
    // Stopped: nothing is recording now; a new recording may start (default file name).
    assert_eq!(h.failed("browser_stop_video", json!({})).kind(), "invalid_request");
    let again = h.ok("browser_start_video", json!({ "cursor": true }));
    let name = again["path"].as_str().unwrap().to_owned();
    assert!(name.starts_with("video-") && name.ends_with(".avi"), "{again}");
    // Its `cursor`: a pointer goes to each action point, with no title shown.
    h.ok("browser_click", json!({ "selector": "p" }));
    let cursor = "() => [!!document.querySelector('[data-kyro-overlay=cursor]'), \
        (document.querySelector('[data-kyro-overlay=action]') || { shadowRoot: document }).shadowRoot.getElementById('title')?.style.display]";
    let drawn = h.ok("browser_evaluate", json!({ "function": cursor }));
    assert_eq!(drawn["result"], json!([true, "none"]), "{drawn}");
    let second = h.ok("browser_stop_video", json!({}));
    let gone = h.ok("browser_evaluate", json!({ "function": cursor }));
    assert_eq!(gone["result"][0], false, "the video's cursor goes with it: {gone}");
    assert_eq!(second["path"], name.as_str());
    assert_eq!(second["width"], 800, "the default size: the viewport fit in 800 x 800");
    let (total, ..) = read_avi(&std::fs::read(h._ws.path().join(&name)).unwrap());
    assert_eq!(u64::from(total), second["frames"].as_u64().unwrap());
}

/// What the page's own scripts see of kyro's video overlays: `kind` -> its text (its
/// shadow root's, styles left out), or null when there is none.
const OVERLAYS: &str = "() => Object.fromEntries(['chapter', 'action', 'cursor'].map((kind) => { \
    const host = document.querySelector('[data-kyro-overlay=' + kind + ']'); \
    if (!host) return [kind, null]; \
    const text = [...host.shadowRoot.querySelectorAll('div')].map((d) => d.textContent).join('|'); \
    return [kind, host.getAttribute('aria-hidden') + ':' + text]; }))";

#[test]
fn chapter_cards_and_action_callouts_show_in_the_page_while_shown_and_go_after() {
    let Some(_serial) = serial() else { return };
    let site = Site::standard();
    let h = Harness::local();
    h.ok("browser_navigate", json!({ "url": site.url("/") }));
    let outline = h.ok("browser_snapshot", json!({}))["snapshot"].clone();

    // The chapter call lasts as long as its card (durations leave room for a loaded machine);
    // the page is read meanwhile.
    let chapter = json!({ "title": "Part one", "description": "Counting", "duration": 2500 });
    let (shown, during, snapshot) = h.executor.block_on(async {
        let card = h.runtime.execute(Call::new("browser_video_chapter", chapter));
        let look = async {
            tokio::time::sleep(Duration::from_millis(600)).await;
            let seen = h
                .runtime
                .execute(Call::new("browser_evaluate", json!({ "function": OVERLAYS })))
                .await;
            let snapshot = h.runtime.execute(Call::new("browser_snapshot", json!({}))).await;
            (seen, snapshot)
        };
        let (card, (seen, snapshot)) = tokio::join!(card, look);
        (card, seen, snapshot)
    });
    let result = |outcome: Outcome| match outcome {
        Outcome::Ok { result, .. } => result,
        other => panic!("{other:?}"),
    };
    assert_eq!(result(shown.outcome), json!({ "title": "Part one", "duration": 2500 }));
    assert_eq!(
        result(during.outcome)["result"],
        json!({ "chapter": "true:Part oneCounting|Part oneCounting|Part one|Counting", "action": null, "cursor": null })
    );
    assert_eq!(
        result(snapshot.outcome)["snapshot"],
        outline,
        "the card entered the outline"
    );
    let after = h.ok("browser_evaluate", json!({ "function": OVERLAYS }));
    assert_eq!(after["result"]["chapter"], Value::Null, "{after}");

    // Action callouts: each action names itself, the cursor goes to its point; neither
    // stands in the way of the click.
    let on = h.ok(
        "browser_video_show_actions",
        json!({ "duration": 3000, "position": "bottom-left", "style": { "point": "width: 8px; height: 8px; background: red" } }),
    );
    assert_eq!(on, json!({ "annotating": true }));
    // The button's center before the click (its label, and width, change with it).
    let center = h.ok(
        "browser_evaluate",
        json!({ "function": "() => { const b = document.getElementById('counter').getBoundingClientRect(); return [b.left + b.width / 2, b.top + b.height / 2]; }" }),
    )["result"]
        .clone();
    h.ok("browser_click", json!({ "selector": "#counter" }));
    let seen = h.ok("browser_evaluate", json!({ "function": OVERLAYS }))["result"].clone();
    assert_eq!(seen["action"], "true:Click #counter|", "{seen}");
    assert_eq!(seen["cursor"], "true:", "{seen}");
    let counted = h.ok("browser_evaluate", json!({ "function": "() => window.clicks" }));
    assert_eq!(counted["result"], 1, "the click went through the overlays");
    let marker = h.ok(
        "browser_evaluate",
        json!({ "function": "() => { const p = document.querySelector('[data-kyro-overlay=action]').shadowRoot.getElementById('point').getBoundingClientRect(); \
            return [p.left + p.width / 2, p.top + p.height / 2, p.width]; }" }),
    )["result"]
        .clone();
    let near = |a: &Value, b: &Value| (a.as_f64().unwrap() - b.as_f64().unwrap()).abs() < 1.0;
    assert!(
        near(&marker[0], &center[0]) && near(&marker[1], &center[1]) && marker[2] == 8,
        "the point marker is where the click was: {marker} {center}"
    );
    let outline = h.ok("browser_snapshot", json!({}))["snapshot"].clone();
    assert!(
        !outline.as_str().unwrap().contains("Click #counter"),
        "the callout entered the outline: {outline}"
    );
    std::thread::sleep(Duration::from_millis(3300));
    let later = h.ok("browser_evaluate", json!({ "function": OVERLAYS }))["result"].clone();
    assert_eq!(later["action"], Value::Null, "{later}");
    assert_eq!(later["cursor"], "true:", "the cursor stays where the last action was");
    h.ok("browser_press_key", json!({ "key": "Tab" }));
    let keyed = h.ok("browser_evaluate", json!({ "function": OVERLAYS }))["result"].clone();
    assert_eq!(keyed["action"], "true:Press Tab", "{keyed}");

    assert_eq!(
        h.ok("browser_video_hide_actions", json!({})),
        json!({ "annotating": false })
    );
    let off = h.ok("browser_evaluate", json!({ "function": OVERLAYS }))["result"].clone();
    assert_eq!(off["cursor"], Value::Null, "{off}");
    std::thread::sleep(Duration::from_millis(3300));
    h.ok("browser_click", json!({ "selector": "#counter" }));
    let none = h.ok("browser_evaluate", json!({ "function": OVERLAYS }))["result"].clone();
    assert_eq!(none, json!({ "chapter": null, "action": null, "cursor": null }));
}
