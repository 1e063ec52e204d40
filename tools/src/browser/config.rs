//! `browser_get_config`: the browser configuration kyro runs with, as this call sees it.

use kyro_core::policy::SettingsTable;
use kyro_core::{Execute, ToolContext, ToolError, tool};
use schemars::JsonSchema;
use serde::Serialize;

use super::launch::{chromium_path, unavailable};
use super::page::VIEWPORT;
use crate::settings::NetworkSettings;

/// Show the browser configuration kyro runs with: the Chromium executable, headless mode, the
/// default viewport, and the network policy every page's request is checked against. Starts nothing.
#[tool(
    name = "browser_get_config",
    title = "Show the browser configuration",
    category = "browser.config",
    effect = "none",
    read_only = true,
    idempotent = true,
    open_world = false
)]
pub struct BrowserGetConfig {}

/// The browser configuration.
#[kyro_core::output]
#[derive(Debug)]
pub struct BrowserConfig {
    /// The Chromium executable (`KYRO_CHROMIUM`, or `/usr/bin/chromium`).
    pub chromium: String,
    /// Why the browser cannot start on this machine; absent when it can.
    pub unavailable: Option<String>,
    /// Always true: no window is shown.
    pub headless: bool,
    /// A page's viewport until browser_resize changes it.
    pub viewport: Viewport,
    /// Whether Chromium runs in a network namespace of its own, reaching nothing but kyro's proxy.
    pub isolated: bool,
    /// The network policy each request of a page is checked against (`[tools.network]`).
    pub network: ConfiguredNetwork,
}

/// A viewport, in CSS pixels.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Viewport {
    /// Width.
    pub width: u32,
    /// Height.
    pub height: u32,
}

/// The network policy as this call sees it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ConfiguredNetwork {
    /// When not empty, the only hosts pages may reach.
    pub allow_hosts: Vec<String>,
    /// Hosts pages may never reach (with their subdomains).
    pub deny_hosts: Vec<String>,
    /// Whether loopback and private addresses are allowed for every host.
    pub allow_private: bool,
}

impl Execute for BrowserGetConfig {
    type Output = BrowserConfig;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<BrowserConfig, ToolError> {
        let policy = cx.scope().settings::<NetworkSettings>()?;
        Ok(BrowserConfig {
            chromium: chromium_path().display().to_string(),
            unavailable: unavailable(),
            headless: true,
            viewport: Viewport {
                width: VIEWPORT.0,
                height: VIEWPORT.1,
            },
            isolated: super::isolation::available(),
            network: ConfiguredNetwork {
                allow_hosts: policy.allow_hosts.clone(),
                deny_hosts: policy.deny_hosts.clone(),
                allow_private: policy.allow_private,
            },
        })
    }
}
