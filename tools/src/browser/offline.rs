//! `browser_network_state_set`: the browser offline (every page's requests fail as without
//! a network) or back online. The network policy is untouched: online again, every request
//! is checked as before.

use kyro_core::policy::SettingsTable;
use kyro_core::{Execute, ToolContext, ToolError, input, tool};

use super::session::set_offline;
use crate::settings::NetworkSettings;

/// `online` or `offline`.
#[input]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum NetworkState {
    /// Requests go out again, through the policy's checks.
    Online,
    /// Every request fails, as without a network.
    Offline,
}

/// Take the browser offline (all its pages' requests fail, pages opened later too) or back online.
#[tool(
    name = "browser_network_state_set",
    title = "Set the browser's network state",
    category = "browser.network",
    effect = "network",
    destructive = false,
    idempotent = true
)]
pub struct BrowserNetworkStateSet {
    /// `offline` or `online`.
    pub state: NetworkState,
}

/// The network state now.
#[kyro_core::output]
#[derive(Debug)]
pub struct NetworkStateSet {
    /// `online` or `offline`.
    pub state: String,
    /// How many pages (tabs) it applies to now.
    pub pages: u64,
}

impl Execute for BrowserNetworkStateSet {
    type Output = NetworkStateSet;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<NetworkStateSet, ToolError> {
        let offline = self.state == NetworkState::Offline;
        let pages = set_offline(cx, offline).await?;
        Ok(NetworkStateSet {
            state: if offline { "offline" } else { "online" }.into(),
            pages: pages as u64,
        })
    }
}
