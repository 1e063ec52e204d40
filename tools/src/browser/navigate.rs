//! `browser_navigate`: open a URL in the workspace's browser page.

use kyro_core::policy::SettingsTable;
use kyro_core::{Execute, ToolContext, ToolError, tool};

use super::session::with_page;
use crate::integration::check_url;
use crate::settings::NetworkSettings;

/// Open an http(s) URL (headless Chromium, started on first use) and wait for the load.
/// The URL and the page's requests must pass the network policy (loopback and private addresses
/// refused unless allowed).
#[tool(
    name = "browser_navigate",
    title = "Open a URL in the browser",
    category = "browser",
    effect = "network"
)]
pub struct BrowserNavigate {
    /// The URL.
    #[schemars(length(min = 1, max = 8192), regex(pattern = "^https?://"))]
    pub url: String,
}

/// The page after loading.
#[kyro_core::output]
#[derive(Debug)]
pub struct Page {
    /// The page's URL, after redirects.
    pub url: String,
    /// The document's title.
    pub title: String,
    /// The HTTP status of the document, when Chromium reports it.
    pub status: Option<u16>,
    /// Dialogs the page opened meanwhile (`alert: message`, `confirm: ...`), all dismissed.
    pub dialogs: Vec<String>,
}

impl Execute for BrowserNavigate {
    type Output = Page;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<Page, ToolError> {
        // Refused before the browser is even started.
        check_url(&*cx.scope().settings::<NetworkSettings>()?, &self.url)?;
        let url = self.url;
        with_page(cx, move |tab, dialogs| {
            tab.navigate(&url)?;
            let (url, title, status) = super::script::page_info(tab)?;
            Ok(Page {
                url,
                title,
                status,
                dialogs: dialogs.take(),
            })
        })
        .await
    }
}
