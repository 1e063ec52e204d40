//! `browser_tabs`: the browser's pages.

use kyro_core::policy::SettingsTable;
use kyro_core::{Execute, ToolContext, ToolError, tool};

use super::session::{TabAction, tabs};
use crate::integration::check_url;
use crate::settings::NetworkSettings;

/// List, open, choose or close tabs; the other browser tools drive the chosen tab.
/// `new` opens and chooses a tab (at `url`); `select` chooses tab `index`; `close` closes tab
/// `index` (default the chosen; not the last). At most 16 tabs.
#[tool(
    name = "browser_tabs",
    title = "Browser tabs",
    category = "browser",
    effect = "network",
    destructive = true
)]
pub struct BrowserTabs {
    /// `list`, `new`, `select` or `close`.
    pub action: TabsAction,
    /// Tab, from 0 (`select`, `close`).
    #[schemars(range(min = 0, max = 15))]
    pub index: Option<u32>,
    /// URL for `new`; default a blank page.
    #[schemars(length(min = 1, max = 8192), regex(pattern = "^https?://"))]
    pub url: Option<String>,
}

/// What to do with the tabs.
#[kyro_core::input]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum TabsAction {
    /// List them.
    List,
    /// Open one and choose it.
    New,
    /// Choose one.
    Select,
    /// Close one.
    Close,
}

/// One tab.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct Tab {
    /// Its index, from 0.
    pub index: u32,
    /// Its URL.
    pub url: String,
    /// Its document's title.
    pub title: String,
    /// True for the tab the browser tools drive.
    pub current: bool,
}

/// The tabs afterwards.
#[kyro_core::output]
#[derive(Debug)]
pub struct Tabs {
    /// Every open tab, in order.
    pub tabs: Vec<Tab>,
}

impl Execute for BrowserTabs {
    type Output = Tabs;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<Tabs, ToolError> {
        let index = self.index.map(|i| i as usize);
        let action = match self.action {
            TabsAction::List => TabAction::List,
            TabsAction::New => {
                if let Some(url) = &self.url {
                    check_url(&*cx.scope().settings::<NetworkSettings>()?, url)?;
                }
                TabAction::New(self.url)
            }
            TabsAction::Select => TabAction::Select(index.ok_or_else(|| crate::Failure::InvalidRequest {
                message: "`select` needs the tab's `index`".into(),
            })?),
            TabsAction::Close => TabAction::Close(index),
        };
        let listed = tabs(cx, action).await?;
        Ok(Tabs {
            tabs: listed
                .into_iter()
                .map(|(index, url, title, current)| Tab {
                    index: index as u32,
                    url,
                    title,
                    current,
                })
                .collect(),
        })
    }
}
