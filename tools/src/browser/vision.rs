//! The vision family (Playwright MCP's `--caps vision`): the mouse at coordinates of a
//! screenshot, for pages an outline does not describe (a canvas, a map).

use headless_chrome::browser::tab::point::Point;
use kyro_core::policy::SettingsTable;
use kyro_core::{Execute, ToolContext, ToolError, input, tool};

use super::keys::{PageState, state};
use super::session::with_page;
use crate::settings::NetworkSettings;

/// Click at a point, in CSS pixels from the viewport's top left (as a scale-1 viewport screenshot shows it).
/// Prefer `browser_click` with a ref.
#[tool(
    name = "browser_mouse_click_xy",
    title = "Click at a point in the browser",
    category = "browser.vision",
    effect = "network",
    destructive = true
)]
pub struct BrowserMouseClickXy {
    /// Pixels from the left.
    #[schemars(range(min = 0.0, max = 100000.0))]
    pub x: f64,
    /// Pixels from the top.
    #[schemars(range(min = 0.0, max = 100000.0))]
    pub y: f64,
}

impl Execute for BrowserMouseClickXy {
    type Output = PageState;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<PageState, ToolError> {
        with_page(cx, move |tab, dialogs| {
            let point = Point { x: self.x, y: self.y };
            let action = format!("Click at ({}, {})", self.x, self.y);
            super::actions::announce(tab, &action, None, Some(point));
            tab.click_at(point)?;
            super::settle(tab);
            state(tab, dialogs)
        })
        .await
    }
}

/// Move the mouse to a point (CSS pixels from the viewport's top left); nothing is pressed.
#[tool(
    name = "browser_mouse_move_xy",
    title = "Move the mouse in the browser",
    category = "browser.vision",
    effect = "network",
    destructive = false,
    idempotent = true
)]
pub struct BrowserMouseMoveXy {
    /// Pixels from the left.
    #[schemars(range(min = 0.0, max = 100000.0))]
    pub x: f64,
    /// Pixels from the top.
    #[schemars(range(min = 0.0, max = 100000.0))]
    pub y: f64,
}

impl Execute for BrowserMouseMoveXy {
    type Output = PageState;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<PageState, ToolError> {
        with_page(cx, move |tab, dialogs| {
            let point = Point { x: self.x, y: self.y };
            let action = format!("Move the mouse to ({}, {})", self.x, self.y);
            super::actions::announce(tab, &action, None, Some(point));
            tab.hover_at(point)?;
            state(tab, dialogs)
        })
        .await
    }
}

/// Drag with the left button between two points (CSS pixels from the viewport's top left), in
/// steps.
#[tool(
    name = "browser_mouse_drag_xy",
    title = "Drag between points in the browser",
    category = "browser.vision",
    effect = "network",
    destructive = true
)]
pub struct BrowserMouseDragXy {
    /// Start, from the left.
    #[tool(alias = "startX")]
    #[schemars(range(min = 0.0, max = 100000.0))]
    pub start_x: f64,
    /// Start, from the top.
    #[tool(alias = "startY")]
    #[schemars(range(min = 0.0, max = 100000.0))]
    pub start_y: f64,
    /// End, from the left.
    #[tool(alias = "endX")]
    #[schemars(range(min = 0.0, max = 100000.0))]
    pub end_x: f64,
    /// End, from the top.
    #[tool(alias = "endY")]
    #[schemars(range(min = 0.0, max = 100000.0))]
    pub end_y: f64,
}

impl Execute for BrowserMouseDragXy {
    type Output = PageState;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<PageState, ToolError> {
        with_page(cx, move |tab, dialogs| {
            let from = Point {
                x: self.start_x,
                y: self.start_y,
            };
            let action = format!(
                "Drag from ({}, {}) to ({}, {})",
                self.start_x, self.start_y, self.end_x, self.end_y
            );
            super::actions::announce(tab, &action, None, Some(from));
            tab.drag(
                from,
                Point {
                    x: self.end_x,
                    y: self.end_y,
                },
            )?;
            super::settle(tab);
            state(tab, dialogs)
        })
        .await
    }
}

/// Turn the mouse wheel: the page (or the element under the mouse) scrolls `delta_y` down and
/// `delta_x` right (negative: up, left).
#[tool(
    name = "browser_mouse_wheel",
    title = "Scroll with the mouse wheel in the browser",
    category = "browser.vision",
    effect = "network",
    destructive = false
)]
pub struct BrowserMouseWheel {
    /// Pixels right; default 0.
    #[tool(alias = "deltaX")]
    #[schemars(range(min = -100000.0, max = 100000.0))]
    pub delta_x: Option<f64>,
    /// Pixels down.
    #[tool(alias = "deltaY")]
    #[schemars(range(min = -100000.0, max = 100000.0))]
    pub delta_y: f64,
    /// Mouse position from the left; default the middle.
    #[schemars(range(min = 0.0, max = 100000.0))]
    pub x: Option<f64>,
    /// Mouse position from the top; default the middle.
    #[schemars(range(min = 0.0, max = 100000.0))]
    pub y: Option<f64>,
}

impl Execute for BrowserMouseWheel {
    type Output = PageState;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<PageState, ToolError> {
        with_page(cx, move |tab, dialogs| {
            let at = Point {
                x: self.x.unwrap_or(640.0),
                y: self.y.unwrap_or(400.0),
            };
            let action = format!("Scroll by ({}, {})", self.delta_x.unwrap_or(0.0), self.delta_y);
            super::actions::announce(tab, &action, None, Some(at));
            tab.wheel(at, self.delta_x.unwrap_or(0.0), self.delta_y)?;
            super::settle(tab);
            state(tab, dialogs)
        })
        .await
    }
}

/// A mouse button.
#[input]
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum MouseButtonName {
    /// The main button.
    #[default]
    Left,
    /// The secondary button (context menus).
    Right,
    /// The wheel button.
    Middle,
}

impl MouseButtonName {
    fn devtools(self) -> headless_chrome::protocol::cdp::Input::MouseButton {
        use headless_chrome::protocol::cdp::Input::MouseButton;
        match self {
            MouseButtonName::Left => MouseButton::Left,
            MouseButtonName::Right => MouseButton::Right,
            MouseButtonName::Middle => MouseButton::Middle,
        }
    }
}

/// Press a mouse button where the mouse is (after browser_mouse_move_xy) and hold it; moves drag until
/// browser_mouse_up.
#[tool(
    name = "browser_mouse_down",
    title = "Press the mouse button in the browser",
    category = "browser.vision",
    effect = "network",
    destructive = true
)]
pub struct BrowserMouseDown {
    /// `left` (the default), `right` or `middle`.
    #[serde(default)]
    pub button: MouseButtonName,
}

impl Execute for BrowserMouseDown {
    type Output = PageState;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<PageState, ToolError> {
        with_page(cx, move |tab, dialogs| {
            // No wait for a navigation it may start (as Playwright's): the next call meets it.
            tab.press(self.button.devtools(), true)?;
            state(tab, dialogs)
        })
        .await
    }
}

/// Release a mouse button where the mouse is (a click when it was pressed there).
#[tool(
    name = "browser_mouse_up",
    title = "Release the mouse button in the browser",
    category = "browser.vision",
    effect = "network",
    destructive = true
)]
pub struct BrowserMouseUp {
    /// `left` (the default), `right` or `middle`.
    #[serde(default)]
    pub button: MouseButtonName,
}

impl Execute for BrowserMouseUp {
    type Output = PageState;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<PageState, ToolError> {
        with_page(cx, move |tab, dialogs| {
            // No wait for a navigation it may start (as Playwright's): the next call meets it.
            tab.press(self.button.devtools(), false)?;
            state(tab, dialogs)
        })
        .await
    }
}
