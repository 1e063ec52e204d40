//! `browser_select_option`: choose options of a `<select>`.

use kyro_core::policy::SettingsTable;
use kyro_core::{Execute, ToolContext, ToolError, tool};

use super::session::with_page;
use crate::settings::NetworkSettings;

/// Choose options of a `<select>` by value or visible label, as a person would.
/// Refused when hidden, disabled, lacking the option (the error lists them), or single-choice with
/// several given.
#[tool(
    name = "browser_select_option",
    title = "Choose an option in the browser",
    category = "browser",
    effect = "network",
    destructive = true,
    idempotent = true
)]
pub struct BrowserSelectOption {
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
    /// Options to choose, by value or label; others are unchosen.
    #[schemars(length(min = 1, max = 100))]
    pub values: Vec<String>,
}

/// The `<select>` after the choice.
#[kyro_core::output]
#[derive(Debug)]
pub struct Selected {
    /// The values of the options now chosen.
    pub values: Vec<String>,
    /// The page's URL afterwards.
    pub url: String,
    /// The document's title afterwards.
    pub title: String,
    /// Dialogs the page opened meanwhile (`alert: message`, `confirm: ...`), all dismissed.
    pub dialogs: Vec<String>,
}

impl Execute for BrowserSelectOption {
    type Output = Selected;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<Selected, ToolError> {
        let (mut target, element) =
            super::target(self.r#ref.as_deref(), self.selector.as_deref(), self.target.as_deref())?;
        target["values"] = self.values.into();
        let described = self.element;
        with_page(cx, move |tab, dialogs| {
            let action = super::actions::named("Select an option of", described.as_deref(), &element);
            super::actions::announce(tab, &action, Some(&target), None);
            let (answer, _) = super::element_op(tab, "choose an option", "select", &target, &element)?;
            super::element_answer(&answer, &element)?;
            let values = answer["values"]
                .as_array()
                .map(|v| v.iter().filter_map(|s| s.as_str().map(str::to_owned)).collect())
                .unwrap_or_default();
            super::settle(tab);
            let (url, title, _) = super::script::page_info(tab)?;
            Ok(Selected {
                values,
                url,
                title,
                dialogs: dialogs.take(),
            })
        })
        .await
    }
}
