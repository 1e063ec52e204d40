//! `browser_console_messages` and `browser_network_requests`: what the page logged and
//! asked for.

use kyro_core::policy::SettingsTable;
use kyro_core::{Execute, ToolContext, ToolError, tool};

use super::session::with_page;
use crate::settings::NetworkSettings;

/// The browser page's console messages so far (`log: ...`, `error: ...`, uncaught
/// exceptions), oldest first, the newest 1000 at most.
#[tool(
    name = "browser_console_messages",
    title = "Read the browser console",
    category = "browser",
    effect = "network",
    read_only = true,
    idempotent = true
)]
pub struct BrowserConsoleMessages {
    /// Only errors (`error: ...`); default false.
    #[serde(default)]
    pub only_errors: bool,
}

/// Console lines.
#[kyro_core::output]
#[derive(Debug)]
pub struct ConsoleMessages {
    /// `kind: text`, oldest first.
    pub messages: Vec<String>,
}

impl Execute for BrowserConsoleMessages {
    type Output = ConsoleMessages;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<ConsoleMessages, ToolError> {
        let only_errors = self.only_errors;
        with_page(cx, move |tab, _| {
            let mut messages = tab.console_messages()?;
            if only_errors {
                messages.retain(|m| m.starts_with("error: "));
            }
            Ok(ConsoleMessages { messages })
        })
        .await
    }
}

/// The requests the current browser page made since it loaded (`GET url`, and the network
/// policy's refusals), oldest first, the newest 1000 at most.
#[tool(
    name = "browser_network_requests",
    title = "List the browser's requests",
    category = "browser",
    effect = "network",
    read_only = true,
    idempotent = true
)]
pub struct BrowserNetworkRequests {}

/// Request lines.
#[kyro_core::output]
#[derive(Debug)]
pub struct NetworkRequests {
    /// `METHOD url`, with `(refused: why)` for those the policy refused.
    pub requests: Vec<String>,
}

impl Execute for BrowserNetworkRequests {
    type Output = NetworkRequests;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<NetworkRequests, ToolError> {
        with_page(cx, move |tab, _| {
            Ok(NetworkRequests {
                requests: tab.requests(),
            })
        })
        .await
    }
}
