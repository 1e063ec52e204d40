//! What a video shows besides the page: chapter cards (`browser_video_chapter`) and
//! callouts naming each action (`browser_video_show_actions`, `browser_video_hide_actions`),
//! drawn by `page.js` in kyro's world, over the page, never in its outline. [`announce`] is
//! the hook every pointer and keyboard action tool calls before it acts.

use std::time::Duration;

use headless_chrome::browser::tab::point::Point;
use kyro_core::policy::SettingsTable;
use kyro_core::{Execute, ToolContext, ToolError, tool};
use serde_json::{Value, json};

use super::driven::Driven;
use super::recorder::Annotations;
use super::script::page_op;
use super::session::{with_page, with_studio};
use crate::settings::NetworkSettings;

/// Show a full-screen chapter card (title, description, blurred backdrop) over the page for
/// `duration` ms, so a video being recorded shows it; returns when it is gone.
#[tool(
    name = "browser_video_chapter",
    title = "Video chapter",
    category = "browser.devtools",
    effect = "network",
    read_only = true,
    idempotent = true
)]
pub struct BrowserVideoChapter {
    /// The chapter's title.
    #[schemars(length(min = 1, max = 200))]
    pub title: String,
    /// A line or two under the title.
    #[schemars(length(max = 1000))]
    pub description: Option<String>,
    /// How long the card shows, in milliseconds; default 2000.
    #[schemars(range(min = 0, max = 60000))]
    pub duration: Option<u64>,
}

/// The chapter card shown.
#[kyro_core::output]
#[derive(Debug)]
pub struct ChapterShown {
    /// The chapter's title.
    pub title: String,
    /// How long the card showed, in milliseconds (fading out after).
    pub duration: u64,
}

impl Execute for BrowserVideoChapter {
    type Output = ChapterShown;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<ChapterShown, ToolError> {
        let duration = self.duration.unwrap_or(2000);
        let arg = json!({ "title": self.title, "description": self.description, "duration": duration });
        let shown = with_page(cx, move |tab, _| page_op(tab, "show the chapter card", "chapter", &arg)).await?;
        // The page removes the card itself; the call waits for it (as Playwright's does),
        // without holding the browser (other calls, and the recording, go on).
        let fade = shown["fade"].as_u64().unwrap_or_default();
        tokio::time::sleep(Duration::from_millis(duration + fade)).await;
        Ok(ChapterShown {
            title: self.title,
            duration,
        })
    }
}

/// Where an action's title shows.
#[kyro_core::input]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum ActionPosition {
    /// The top left corner.
    TopLeft,
    /// The middle of the top edge.
    Top,
    /// The top right corner.
    TopRight,
    /// The bottom left corner.
    BottomLeft,
    /// The middle of the bottom edge.
    Bottom,
    /// The bottom right corner.
    BottomRight,
}

impl ActionPosition {
    fn name(self) -> &'static str {
        match self {
            ActionPosition::TopLeft => "top-left",
            ActionPosition::Top => "top",
            ActionPosition::TopRight => "top-right",
            ActionPosition::BottomLeft => "bottom-left",
            ActionPosition::Bottom => "bottom",
            ActionPosition::BottomRight => "bottom-right",
        }
    }
}

/// The cursor drawn for pointer actions.
#[kyro_core::input]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ActionCursor {
    /// No cursor.
    None,
    /// A mouse pointer that travels from the last action point to the next.
    Pointer,
}

/// CSS for the action decorations.
#[kyro_core::input]
#[derive(Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct ActionStyle {
    /// CSS for a zero-sized marker centered on the action point, like `width: 20px;
    /// height: 20px; border-radius: 50%; background: red` (none without it).
    #[schemars(length(max = 1000))]
    pub point: Option<String>,
    /// CSS for a box over the target element, like `outline: 2px solid #333` (none
    /// without it).
    #[schemars(length(max = 1000))]
    pub highlight: Option<String>,
    /// CSS for the action's title, like `font-size: 16px`.
    #[schemars(length(max = 1000))]
    pub title: Option<String>,
}

/// Annotate each later action on the page (click, hover, type, select, drag, fill, key,
/// mouse): a callout naming it, and a cursor moving to its point; useful while recording.
#[tool(
    name = "browser_video_show_actions",
    title = "Show action overlays",
    category = "browser.devtools",
    effect = "network",
    read_only = true,
    idempotent = true
)]
pub struct BrowserVideoShowActions {
    /// How long each annotation stays, in milliseconds; default 500.
    #[schemars(range(min = 0, max = 60000))]
    pub duration: Option<u64>,
    /// Where the action's title shows; default `top-right`.
    pub position: Option<ActionPosition>,
    /// `pointer` (default): a cursor travels to each action point; `none`: no cursor.
    pub cursor: Option<ActionCursor>,
    /// CSS of the decorations.
    pub style: Option<ActionStyle>,
}

/// The annotations after the call.
#[kyro_core::output]
#[derive(Debug)]
pub struct ActionsShown {
    /// Whether later actions are annotated.
    pub annotating: bool,
}

impl Execute for BrowserVideoShowActions {
    type Output = ActionsShown;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<ActionsShown, ToolError> {
        let style = self.style.unwrap_or_default();
        let annotations = Annotations {
            duration: self.duration.unwrap_or(500),
            position: self.position.unwrap_or(ActionPosition::TopRight).name(),
            cursor: self.cursor != Some(ActionCursor::None),
            style: json!({ "point": style.point, "highlight": style.highlight, "title": style.title }),
            last: None,
            by_video: false,
        };
        with_studio(cx, move |page, studio| {
            let mut shown = studio.annotations();
            let last = shown.as_ref().and_then(|a| a.last);
            if !annotations.cursor && last.is_some() {
                hide_cursor(&page.driven());
            }
            *shown = Some(Annotations {
                last: last.filter(|_| annotations.cursor),
                ..annotations
            });
            Ok(ActionsShown { annotating: true })
        })
        .await
    }
}

/// Stop annotating actions on the page (the cursor goes too).
#[tool(
    name = "browser_video_hide_actions",
    title = "Hide action overlays",
    category = "browser.devtools",
    effect = "network",
    read_only = true,
    idempotent = true
)]
pub struct BrowserVideoHideActions {}

impl Execute for BrowserVideoHideActions {
    type Output = ActionsShown;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<ActionsShown, ToolError> {
        with_studio(cx, move |page, studio| {
            if studio.annotations().take().is_some() {
                hide_cursor(&page.driven());
            }
            Ok(ActionsShown { annotating: false })
        })
        .await
    }
}

/// Removes the annotations' cursor from the page (a page that is gone has none).
pub(super) fn hide_cursor(page: &Driven) {
    let _ = page_op(page, "hide the cursor", "hide_cursor", &json!({}));
}

/// The longest a cursor travels before its action (the action waits for it).
const MAX_TRAVEL: u64 = 800;

/// The hook of the action tools: when annotations are on, draws `action` (with the element,
/// `target`, it is done to) at the annotation's place, and the cursor travelling to `point`,
/// waiting for it to arrive. An annotation that cannot be drawn never fails the action.
/// Whether it waited: then the page had time (and, in the overlay, a sign) to move things,
/// and the caller finds its element's point again before acting on it.
pub(super) fn announce(page: &Driven, action: &str, target: Option<&Value>, point: Option<Point>) -> bool {
    let Some(studio) = page.studio() else { return false };
    let Some(annotations) = studio.annotations().clone() else {
        return false;
    };
    let cursor = annotations.cursor && point.is_some();
    let travel = if cursor && annotations.last.is_some() {
        (annotations.duration / 2).min(MAX_TRAVEL)
    } else {
        0
    };
    let arg = json!({
        "title": action,
        "position": annotations.position,
        "duration": annotations.duration,
        "style": annotations.style,
        "target": target.filter(|t| t.get("ref").and_then(Value::as_str).is_none_or(|r| r.starts_with('e'))),
        "point": point.map(|p| [p.x, p.y]),
        "cursor": cursor,
        "last": annotations.last.map(|(x, y)| [x, y]),
        "travel": travel,
    });
    if page_op(page, "annotate the action", "annotate", &arg).is_err() {
        return false;
    }
    if let (true, Some(point)) = (cursor, point) {
        if let Some(shown) = studio.annotations().as_mut() {
            shown.last = Some((point.x, point.y));
        }
        std::thread::sleep(Duration::from_millis(travel));
        return travel > 0;
    }
    false
}

/// An element's name in an annotation: its description when given, else its ref or
/// selector.
pub(super) fn named(action: &str, described: Option<&str>, element: &str) -> String {
    match described.filter(|d| !d.trim().is_empty()) {
        Some(words) => format!("{action} {words}"),
        None => format!("{action} {element}"),
    }
}
