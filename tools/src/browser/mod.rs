//! Browser: a real headless Chromium, one per workspace, driven over the DevTools protocol.
//!
//! Every request a page makes is paused and checked against the call's network policy
//! (the same rules as `web_fetch`: http(s) only, deny/allow lists, no loopback or private
//! addresses unless allowed); refused requests fail in the page and appear in the receipt.
//! The tools are registered only where Chromium is installed ([`unavailable`]).

mod actions;
mod avi;
mod click;
mod config;
mod devtools;
mod direct;
mod driven;
mod drop;
mod emulate;
mod files;
mod fill_form;
mod find;
mod isolation;
mod keys;
mod launch;
mod logs;
mod manage;
mod memory;
mod navigate;
mod offline;
mod origins;
mod page;
mod proxy;
mod recorder;
mod report;
mod route;
mod routes;
mod run_code;
mod scratch;
mod screenshot;
mod script;
mod select_option;
mod session;
mod snapshot;
mod storage;
mod storage_state;
mod tabs;
mod type_text;
mod verify;
mod video;
mod vision;
mod web_storage;

pub use actions::{
    ActionCursor, ActionPosition, ActionStyle, ActionsShown, BrowserVideoChapter, BrowserVideoHideActions,
    BrowserVideoShowActions, ChapterShown,
};
pub use click::{BrowserClick, Clicked};
pub use config::{BrowserConfig, BrowserGetConfig, ConfiguredNetwork, Viewport};
pub use devtools::{
    BrowserHideHighlight, BrowserHighlight, BrowserStartTracing, BrowserStopTracing, Highlights, TraceSaved,
    TracingStarted,
};
pub use drop::{BrowserDrop, Dropped};
pub use emulate::{
    BrowserEmulateMedia, ColorScheme, Contrast, EmulatedMedia, ForcedColors, MediaOverride, MediaType, ReducedMotion,
};
pub use files::{BrowserDrag, BrowserFileUpload, BrowserPdfSave, PdfSaved, Uploaded};
pub use fill_form::{BrowserFillForm, Filled, FormField};
pub use find::{BrowserFind, BrowserVerifyElementVisible, BrowserVerifyTextVisible, Found, Verified};
pub use keys::{BrowserHover, BrowserNavigateBack, BrowserPressKey, BrowserWaitFor, PageState, Waited};
pub use launch::{CHROMIUM_ENV, DEFAULT_CHROMIUM, chromium_path, unavailable};
pub use logs::{
    BrowserConsoleMessages, BrowserNetworkRequest, BrowserNetworkRequests, ConsoleMessages, Header, NetworkRequest,
    NetworkRequests,
};
pub use manage::{
    Armed, BrowserClose, BrowserEvaluate, BrowserHandleDialog, BrowserResize, Closed, Evaluated, Resized,
};
pub use navigate::{BrowserNavigate, Page};
pub use offline::{BrowserNetworkStateSet, NetworkState, NetworkStateSet};
pub use route::BrowserRouteList;
pub use route::{BrowserRoute, BrowserUnroute, RouteAction, RouteInfo, RouteList};
pub use run_code::BrowserRunCodeUnsafe;
pub use screenshot::{BrowserScreenshot, Screenshot};
pub use select_option::{BrowserSelectOption, Selected};
pub use snapshot::{BrowserSnapshot, PageSnapshot};
pub use storage::{
    BrowserCookie, BrowserCookieClear, BrowserCookieList, BrowserCookieSet, BrowserLocalstorageGet,
    BrowserLocalstorageSet, Cookies, LocalStorage, SameSite, StorageEntry,
};
pub use storage::{BrowserCookieDelete, BrowserCookieGet};
pub use storage_state::{
    BrowserSetStorageState, BrowserStorageState, Skipped, StorageStateRestored, StorageStateSaved,
};
pub use tabs::{BrowserTabs, Tab, Tabs, TabsAction};
pub use type_text::{BrowserType, Typed};
pub use verify::{
    BrowserGenerateLocator, BrowserVerifyListVisible, BrowserVerifyValue, GeneratedLocator, ListVerified, ValueKind,
    ValueVerified,
};
pub use video::{BrowserStartVideo, BrowserStopVideo, VideoSaved, VideoSize, VideoStarted};
pub use vision::{BrowserMouseClickXy, BrowserMouseDragXy, BrowserMouseMoveXy, BrowserMouseWheel};
pub use vision::{BrowserMouseDown, BrowserMouseUp, MouseButtonName};
pub use web_storage::{
    BrowserLocalstorageClear, BrowserLocalstorageDelete, BrowserLocalstorageList, BrowserSessionstorageClear,
    BrowserSessionstorageDelete, BrowserSessionstorageGet, BrowserSessionstorageList, BrowserSessionstorageSet,
    SessionStorage,
};

use crate::Failure;
use kyro_core::ToolError;
use serde_json::{Value, json};

use driven::Driven;
use headless_chrome::browser::tab::point::Point;
use script::{page_op, page_op_in};

/// The cross-origin frame a ref belongs to: `f2e5` is in the snapshot's second one; page
/// refs (`e5`) are in none.
fn frame_index(reference: &str) -> Option<usize> {
    reference.strip_prefix('f')?.split_once('e')?.0.parse().ok()
}

/// Runs one operation of `page.js` about an element, in the frame its ref belongs to;
/// with the frame element's object id when that is a cross-origin frame.
fn element_op(
    page: &Driven,
    operation: &str,
    op: &str,
    target: &Value,
    element: &str,
) -> Result<(Value, Option<String>), ToolError> {
    let Some(index) = target["ref"].as_str().and_then(frame_index) else {
        return Ok((page_op(page, operation, op, target)?, None));
    };
    let Some((object, frame)) = page.frame(index, true, operation)? else {
        return Err(Failure::NoSuchElement {
            element: element.to_owned(),
        }
        .into());
    };
    Ok((page_op_in(page, Some(&frame), operation, op, target)?, Some(object)))
}

/// Where a real mouse event for an element goes: its center, scrolled into view, in the
/// page's viewport (a point in a cross-origin frame moved by the frame's origin); refused
/// as `locate` refuses (hidden, disabled, without size, covered).
fn element_point(page: &Driven, target: &Value, element: &str) -> Result<Point, ToolError> {
    let (answer, frame) = element_op(page, "find the element", "locate", target, element)?;
    element_answer(&answer, element)?;
    let (dx, dy) = match frame {
        Some(frame) => page.content_origin(&frame, "find the element")?,
        None => (0.0, 0.0),
    };
    Ok(Point {
        x: dx + answer["x"].as_f64().unwrap_or_default(),
        y: dy + answer["y"].as_f64().unwrap_or_default(),
    })
}

/// The element an action is for: a ref from `browser_snapshot`, a CSS selector, or
/// Playwright's `target` (a ref when it reads as one, else a selector); exactly one.
fn target(reference: Option<&str>, selector: Option<&str>, either: Option<&str>) -> Result<(Value, String), ToolError> {
    let (reference, selector) = match (reference, selector, either) {
        (None, None, Some(t)) if is_ref(t) => (Some(t), None),
        (None, None, Some(t)) => (None, Some(t)),
        (r, s, None) => (r, s),
        (r, s, Some(t)) => (r.or(s).or(Some(t)), Some(t)),
    };
    match (reference, selector) {
        (Some(r), None) => Ok((json!({ "ref": r }), r.to_owned())),
        (None, Some(s)) => Ok((json!({ "selector": s }), s.to_owned())),
        _ => Err(Failure::NotActionable {
            element: reference.or(selector).unwrap_or_default().to_owned(),
            reason: "give exactly one of `ref` (from browser_snapshot), `selector` and `target`".into(),
        }
        .into()),
    }
}

/// Whether `text` reads as a ref of `browser_snapshot` (`e3`, `f1e3`), not a CSS selector.
fn is_ref(text: &str) -> bool {
    let digits = |s: &str, most: usize| !s.is_empty() && s.len() <= most && s.bytes().all(|b| b.is_ascii_digit());
    let rest = match text.strip_prefix('f') {
        Some(framed) => match framed.split_once('e') {
            Some((frame, rest)) if digits(frame, 4) => rest,
            _ => return false,
        },
        None => match text.strip_prefix('e') {
            Some(rest) => rest,
            None => return false,
        },
    };
    digits(rest, 9)
}

/// Turns a `page.js` answer about an element into a typed error, if it is one.
fn element_answer(answer: &Value, element: &str) -> Result<(), ToolError> {
    if answer.get("missing").is_some() {
        return Err(Failure::NoSuchElement {
            element: element.to_owned(),
        }
        .into());
    }
    if let Some(message) = answer.get("invalid").and_then(Value::as_str) {
        return Err(Failure::InvalidPattern {
            pattern: element.to_owned(),
            message: message.to_owned(),
        }
        .into());
    }
    if let Some(reason) = answer.get("unusable").and_then(Value::as_str) {
        return Err(Failure::NotActionable {
            element: element.to_owned(),
            reason: reason.to_owned(),
        }
        .into());
    }
    Ok(())
}

/// Waits for what an action started (a load of the page) to finish.
fn settle(page: &Driven) {
    page.settle();
}
