//! `browser_type`: type text into an editable element, at once or key by key.

use crate::Failure;
use crate::settings::NetworkSettings;
use kyro_core::policy::SettingsTable;
use kyro_core::{Execute, ToolContext, ToolError, tool};

use headless_chrome::protocol::cdp::Input::InsertText;

use super::session::{error, with_page};

/// Type text into an input, textarea or editable element of the browser page, replacing
/// its content (or appending) and optionally pressing Enter after.
///
/// The text goes in at once, as input events (like a paste); with `slowly`, one real key
/// press per character, for pages that react to each key (slower).
///
/// Name the element by `ref` from the latest browser_snapshot, or by a CSS `selector`.
/// Refused when the element is hidden, disabled, read-only or does not take text.
#[tool(
    name = "browser_type",
    title = "Type in the browser",
    category = "browser",
    effect = "network",
    destructive = true
)]
pub struct BrowserType {
    /// The element's ref from browser_snapshot, like `e3` (or `f1e3` in a cross-origin frame).
    #[schemars(regex(pattern = "^(f[0-9]{1,4})?e[0-9]{1,9}$"))]
    pub r#ref: Option<String>,
    /// A CSS selector instead of a ref; the first match is used.
    #[schemars(length(min = 1, max = 1000))]
    pub selector: Option<String>,
    /// The text to type.
    #[schemars(length(max = 100000))]
    pub text: String,
    /// Add to the element's current content instead of replacing it; default false.
    #[serde(default)]
    pub append: bool,
    /// Press Enter after typing (submits most forms); default false.
    #[serde(default)]
    pub submit: bool,
    /// Press a key per character (keydown, keypress, keyup) instead of inserting the text at
    /// once; default false.
    #[serde(default)]
    pub slowly: bool,
}

/// The element and page after typing.
#[kyro_core::output]
#[derive(Debug)]
pub struct Typed {
    /// The element's value after typing (before a submit navigates away).
    pub value: String,
    /// The page's URL afterwards.
    pub url: String,
    /// The document's title afterwards.
    pub title: String,
    /// Dialogs the page opened meanwhile (`alert: message`, `confirm: ...`), all dismissed.
    pub dialogs: Vec<String>,
}

impl Execute for BrowserType {
    type Output = Typed;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<Typed, ToolError> {
        let (mut target, element) = super::target(self.r#ref.as_deref(), self.selector.as_deref())?;
        target["clear"] = (!self.append).into();
        let BrowserType {
            text, submit, slowly, ..
        } = self;
        with_page(cx, move |tab, dialogs| {
            let (answer, _) = super::element_op(tab, "find the element", "focus", &target, &element)?;
            super::element_answer(&answer, &element)?;
            if answer["focused"] != true {
                return Err(Failure::NotActionable {
                    element,
                    reason: "it did not take the focus".into(),
                }
                .into());
            }
            if slowly {
                tab.type_str(&text).map_err(|e| error("type", e))?;
            } else {
                tab.call(InsertText { text }, "type")?;
            }
            let (value, _) = super::element_op(tab, "read the element", "value", &target, &element)?;
            let value = value["value"].as_str().unwrap_or_default().to_owned();
            if submit {
                tab.press_key("Enter").map_err(|e| error("press Enter", e))?;
                super::settle(tab);
            }
            let (url, title, _) = super::script::page_info(tab)?;
            Ok(Typed {
                value,
                url,
                title,
                dialogs: dialogs.take(),
            })
        })
        .await
    }
}
