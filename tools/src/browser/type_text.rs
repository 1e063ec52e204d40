//! `browser_type`: type text into an editable element, at once or key by key.

use crate::Failure;
use crate::settings::NetworkSettings;
use kyro_core::policy::SettingsTable;
use kyro_core::{Execute, ToolContext, ToolError, tool};

use headless_chrome::protocol::cdp::Input::InsertText;

use super::session::{error, with_page};

/// Type into an editable element, replacing its content (or appending), optionally pressing Enter
/// after; at once like a paste, or key by key with `slowly`. Refused when hidden, disabled or
/// read-only.
#[tool(
    name = "browser_type",
    title = "Type in the browser",
    category = "browser",
    effect = "network",
    destructive = true
)]
pub struct BrowserType {
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
    /// The text.
    #[schemars(length(max = 100000))]
    pub text: String,
    /// Append instead of replacing.
    #[serde(default)]
    pub append: bool,
    /// Press Enter after (submits most forms).
    #[serde(default)]
    pub submit: bool,
    /// One key press per character, for pages reacting to each key.
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
        let (mut target, element) =
            super::target(self.r#ref.as_deref(), self.selector.as_deref(), self.target.as_deref())?;
        target["clear"] = (!self.append).into();
        let BrowserType {
            text, submit, slowly, ..
        } = self;
        let described = self.element.clone();
        with_page(cx, move |tab, dialogs| {
            let action = super::actions::named("Type into", described.as_deref(), &element);
            super::actions::announce(tab, &action, Some(&target), None);
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
