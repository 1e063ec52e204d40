//! `browser_press_key`, `browser_hover`, `browser_navigate_back` and `browser_wait_for`:
//! the keyboard, the mouse without a click, history, and waiting for the page.

use std::time::{Duration, Instant};

use kyro_core::policy::SettingsTable;
use kyro_core::{Execute, ToolContext, ToolError, tool};
use serde_json::json;

use super::session::{error, with_page};
use crate::Failure;
use crate::settings::NetworkSettings;

/// The page after an action.
#[kyro_core::output]
#[derive(Debug)]
pub struct PageState {
    /// The page's URL afterwards.
    pub url: String,
    /// The document's title afterwards.
    pub title: String,
    /// Dialogs the page opened meanwhile (`alert: message`, `confirm: ...`), all dismissed.
    pub dialogs: Vec<String>,
}

pub(super) fn state(tab: &super::driven::Driven, dialogs: &super::page::Dialogs) -> Result<PageState, ToolError> {
    let (url, title, _) = super::script::page_info(tab)?;
    Ok(PageState {
        url,
        title,
        dialogs: dialogs.take(),
    })
}

/// Press a key in the focused element; waits for a navigation it starts.
#[tool(
    name = "browser_press_key",
    title = "Press a key in the browser",
    category = "browser",
    effect = "network",
    destructive = true
)]
pub struct BrowserPressKey {
    /// Key name (`Enter`, `Tab`, `Escape`, `Backspace`, `ArrowDown`, `PageDown`, `F5`, ...) or one
    /// character.
    #[schemars(length(min = 1, max = 32))]
    pub key: String,
}

impl Execute for BrowserPressKey {
    type Output = PageState;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<PageState, ToolError> {
        let key = self.key;
        with_page(cx, move |tab, dialogs| {
            super::actions::announce(tab, &format!("Press {key}"), None, None);
            tab.press_key(&key).map_err(|e| {
                let message = e.to_string();
                if message.contains("not found") || message.contains("Key") {
                    ToolError::from(Failure::InvalidRequest {
                        message: format!(
                            "`{key}` is not a key: name one (`Enter`, `Tab`, `Escape`, `ArrowDown`, `PageUp`, `F1`, ...) or give one character"
                        ),
                    })
                } else {
                    error("press a key", message)
                }
            })?;
            super::settle(tab);
            state(tab, dialogs)
        })
        .await
    }
}

/// Move the mouse over an element (menus, tooltips) after scrolling it into view; nothing is clicked.
/// Refused when it is hidden, sizeless or covered.
#[tool(
    name = "browser_hover",
    title = "Hover in the browser",
    category = "browser",
    effect = "network",
    destructive = false,
    idempotent = true
)]
pub struct BrowserHover {
    /// Ref from browser_snapshot, like `e3` or `f1e3`.
    #[schemars(regex(pattern = "^(f[0-9]{1,4})?e[0-9]{1,9}$"))]
    pub r#ref: Option<String>,
    /// CSS selector instead of a ref (first match).
    #[schemars(length(min = 1, max = 1000))]
    pub selector: Option<String>,
    /// Playwright's spelling: a ref or a CSS selector.
    #[schemars(length(min = 1, max = 1000))]
    pub target: Option<String>,
    /// The element in words (Playwright's `element`; shown when asked).
    #[schemars(length(max = 1000))]
    pub element: Option<String>,
}

impl Execute for BrowserHover {
    type Output = PageState;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<PageState, ToolError> {
        let (target, element) = super::target(self.r#ref.as_deref(), self.selector.as_deref(), self.target.as_deref())?;
        let described = self.element;
        with_page(cx, move |tab, dialogs| {
            let mut point = super::element_point(tab, &target, &element)?;
            let action = super::actions::named("Hover over", described.as_deref(), &element);
            if super::actions::announce(tab, &action, Some(&target), Some(point)) {
                point = super::element_point(tab, &target, &element)?;
            }
            tab.hover_at(point)?;
            state(tab, dialogs)
        })
        .await
    }
}

/// Go back in the browser's history; refused with no previous page.
#[tool(
    name = "browser_navigate_back",
    title = "Go back in the browser",
    category = "browser",
    effect = "network"
)]
pub struct BrowserNavigateBack {}

impl Execute for BrowserNavigateBack {
    type Output = PageState;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<PageState, ToolError> {
        with_page(cx, move |tab, dialogs| {
            let history = tab.call(
                headless_chrome::protocol::cdp::Page::GetNavigationHistory(None),
                "read the history",
            )?;
            let current = history.current_index as usize;
            let Some(previous) = current.checked_sub(1).and_then(|i| history.entries.get(i)) else {
                return Err(Failure::InvalidRequest {
                    message: "there is no previous page to go back to".into(),
                }
                .into());
            };
            tab.call(
                headless_chrome::protocol::cdp::Page::NavigateToHistoryEntry { entry_id: previous.id },
                "go back",
            )?;
            super::settle(tab);
            state(tab, dialogs)
        })
        .await
    }
}

/// Wait until `text` appears, `text_gone` disappears, or `time_ms` passes.
/// Checked every 100 ms; past `timeout_ms` it fails with what the page shows.
#[tool(
    name = "browser_wait_for",
    task = "optional",
    title = "Wait for the browser page",
    category = "browser",
    effect = "network",
    read_only = true,
    idempotent = true
)]
pub struct BrowserWaitFor {
    /// Text to wait for.
    #[schemars(length(min = 1, max = 1000))]
    pub text: Option<String>,
    /// Text to wait to disappear.
    #[schemars(length(min = 1, max = 1000))]
    pub text_gone: Option<String>,
    /// Ms to wait (alone, or before checking).
    #[schemars(range(min = 0, max = 60000))]
    pub time_ms: Option<u64>,
    /// Ms before giving up on the text; default 10000.
    #[schemars(range(min = 100, max = 60000))]
    pub timeout_ms: Option<u64>,
}

/// What the wait saw.
#[kyro_core::output]
#[derive(Debug)]
pub struct Waited {
    /// How long it waited, in milliseconds.
    pub waited_ms: u64,
    /// The page's URL at the end.
    pub url: String,
    /// The document's title at the end.
    pub title: String,
}

impl Execute for BrowserWaitFor {
    type Output = Waited;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<Waited, ToolError> {
        if self.text.is_none() && self.text_gone.is_none() && self.time_ms.is_none() {
            return Err(Failure::InvalidRequest {
                message: "give `text`, `text_gone` or `time_ms`".into(),
            }
            .into());
        }
        if self.text.is_some() && self.text_gone.is_some() {
            return Err(Failure::InvalidRequest {
                message: "give one of `text` and `text_gone`".into(),
            }
            .into());
        }
        let stop = cx.stop().clone();
        let timeout = Duration::from_millis(self.timeout_ms.unwrap_or(10_000));
        let BrowserWaitFor {
            text,
            text_gone,
            time_ms,
            ..
        } = self;
        with_page(cx, move |tab, _| {
            let started = Instant::now();
            let pause = |ms: u64| -> Result<(), ToolError> {
                let until = Instant::now() + Duration::from_millis(ms);
                while Instant::now() < until {
                    stop.check()?;
                    std::thread::sleep(Duration::from_millis(20).min(until - Instant::now()));
                }
                Ok(())
            };
            pause(time_ms.unwrap_or(0))?;
            if let Some((needle, present)) = text.map(|t| (t, true)).or(text_gone.map(|t| (t, false))) {
                let waiting_since = Instant::now();
                loop {
                    let shown = super::script::page_op(tab, "read the page", "text", &json!({}))?;
                    let shown = shown["text"].as_str().unwrap_or_default().to_owned();
                    if shown.contains(&needle) == present {
                        break;
                    }
                    if waiting_since.elapsed() >= timeout {
                        let mut excerpt: String = shown.chars().take(300).collect();
                        if excerpt.len() < shown.len() {
                            excerpt.push('…');
                        }
                        let wanted = if present { "to appear" } else { "to go" };
                        return Err(Failure::NotSeen {
                            what: format!("{needle:?} {wanted}"),
                            waited_ms: timeout.as_millis() as u64,
                            shown: format!("{excerpt:?}"),
                        }
                        .into());
                    }
                    pause(100)?;
                }
            }
            let (url, title, _) = super::script::page_info(tab)?;
            Ok(Waited {
                waited_ms: started.elapsed().as_millis() as u64,
                url,
                title,
            })
        })
        .await
    }
}
