//! `browser_click`: a real mouse click on an element.

use kyro_core::policy::SettingsTable;
use kyro_core::{Execute, ToolContext, ToolError, tool};

use super::session::with_page;
use crate::settings::NetworkSettings;

/// Click an element's center with a real mouse click, after scrolling it into view; waits for a navigation it starts.
/// Refused when hidden, disabled, sizeless or covered.
#[tool(
    name = "browser_click",
    title = "Click in the browser",
    category = "browser",
    effect = "network",
    destructive = true
)]
pub struct BrowserClick {
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

/// The page after the click.
#[kyro_core::output]
#[derive(Debug)]
pub struct Clicked {
    /// The page's URL after the click.
    pub url: String,
    /// The document's title after the click.
    pub title: String,
    /// Dialogs the page opened meanwhile (`alert: message`, `confirm: ...`), all dismissed.
    pub dialogs: Vec<String>,
}

impl Execute for BrowserClick {
    type Output = Clicked;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<Clicked, ToolError> {
        let (target, element) = super::target(self.r#ref.as_deref(), self.selector.as_deref(), self.target.as_deref())?;
        let described = self.element;
        with_page(cx, move |tab, dialogs| {
            let mut point = super::element_point(tab, &target, &element)?;
            let action = super::actions::named("Click", described.as_deref(), &element);
            if super::actions::announce(tab, &action, Some(&target), Some(point)) {
                // The page had the cursor's travel to move another element under it.
                point = super::element_point(tab, &target, &element)?;
            }
            tab.click_at(point)?;
            super::settle(tab);
            let (url, title, _) = super::script::page_info(tab)?;
            Ok(Clicked {
                url,
                title,
                dialogs: dialogs.take(),
            })
        })
        .await
    }
}
