//! `browser_close`, `browser_resize`, `browser_handle_dialog` and `browser_evaluate`: the
//! browser itself, its viewport, its dialogs, and scripts of the agent's own.

use kyro_core::policy::SettingsTable;
use kyro_core::{Execute, ToolContext, ToolError, tool};
use serde_json::Value;

use super::page::DialogAnswer;
use super::session::with_page;
use crate::settings::NetworkSettings;

/// Close the browser (the next browser call starts a new one, on a blank page).
#[tool(
    name = "browser_close",
    title = "Close the browser",
    category = "browser",
    effect = "network",
    destructive = true,
    idempotent = true,
    open_world = false
)]
pub struct BrowserClose {}

/// Whether a browser was running.
#[kyro_core::output]
#[derive(Debug)]
pub struct Closed {
    /// True when a browser ran and was closed; false when none ran.
    pub closed: bool,
}

impl Execute for BrowserClose {
    type Output = Closed;

    async fn run(self, cx: &ToolContext) -> Result<Closed, ToolError> {
        Ok(Closed {
            closed: super::session::close(cx).await?,
        })
    }
}

/// Resize the viewport, in CSS pixels; default 1280x800.
#[tool(
    name = "browser_resize",
    title = "Resize the browser",
    category = "browser",
    effect = "network",
    destructive = false,
    idempotent = true
)]
pub struct BrowserResize {
    /// Width.
    #[schemars(range(min = 200, max = 4000))]
    pub width: u32,
    /// Height.
    #[schemars(range(min = 200, max = 4000))]
    pub height: u32,
}

/// The viewport now.
#[kyro_core::output]
#[derive(Debug)]
pub struct Resized {
    /// Width in CSS pixels, as the page sees it.
    pub width: u32,
    /// Height in CSS pixels, as the page sees it.
    pub height: u32,
}

impl Execute for BrowserResize {
    type Output = Resized;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<Resized, ToolError> {
        let (width, height) = (self.width, self.height);
        with_page(cx, move |tab, _| {
            tab.call(super::page::viewport(width, height), "resize the viewport")?;
            let seen = super::script::page_op(tab, "measure the page", "viewport", &serde_json::json!({}))?;
            let size = |k: &str| seen[k].as_u64().unwrap_or_default() as u32;
            Ok(Resized {
                width: size("width"),
                height: size("height"),
            })
        })
        .await
    }
}

/// Set how the page's next dialog (alert, confirm, prompt) is answered; otherwise dialogs are dismissed.
/// Call it before the action that opens one.
#[tool(
    name = "browser_handle_dialog",
    title = "Answer the browser's next dialog",
    category = "browser",
    effect = "network",
    destructive = false,
    idempotent = true,
    open_world = false
)]
pub struct BrowserHandleDialog {
    /// Accept (true) or dismiss.
    pub accept: bool,
    /// Text to answer a prompt with.
    #[schemars(length(max = 10000))]
    pub prompt_text: Option<String>,
}

/// The answer armed.
#[kyro_core::output]
#[derive(Debug)]
pub struct Armed {
    /// True when the next dialog will be accepted.
    pub accept: bool,
}

impl Execute for BrowserHandleDialog {
    type Output = Armed;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<Armed, ToolError> {
        let answer = DialogAnswer {
            accept: self.accept,
            prompt_text: self.prompt_text,
        };
        let accept = answer.accept;
        with_page(cx, move |_, dialogs| {
            dialogs.arm(answer);
            Ok(Armed { accept })
        })
        .await
    }
}

/// Run a JavaScript function in the page and return its result (JSON; promises awaited).
/// Its requests are held to the network policy. Runs code: approval per the `exec` rule.
#[tool(
    name = "browser_evaluate",
    title = "Run JavaScript in the browser",
    category = "browser",
    effect = "exec",
    destructive = true
)]
pub struct BrowserEvaluate {
    /// The function, like `() => document.title`.
    #[schemars(length(min = 1, max = 100000))]
    pub function: String,
}

/// What the function returned.
#[kyro_core::output]
#[derive(Debug)]
pub struct Evaluated {
    /// Its return value as JSON (`null` for undefined, functions and DOM nodes).
    pub result: Value,
}

impl Execute for BrowserEvaluate {
    type Output = Evaluated;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<Evaluated, ToolError> {
        let expression = format!("({})()", self.function);
        with_page(cx, move |tab, _| {
            let value = tab.evaluate_in_page("run the function", expression)?;
            Ok(Evaluated {
                result: value.value.unwrap_or(Value::Null),
            })
        })
        .await
    }
}
