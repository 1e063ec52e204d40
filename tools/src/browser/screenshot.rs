//! `browser_screenshot`: the page as a PNG image.

use base64::Engine;
use base64::prelude::BASE64_STANDARD;
use headless_chrome::protocol::cdp::Page::{CaptureScreenshot, CaptureScreenshotFormatOption};
use kyro_core::policy::SettingsTable;
use kyro_core::{Execute, ToolContext, ToolError, tool};

use super::session::{error, with_page};
use crate::settings::NetworkSettings;

/// Take a PNG screenshot of the browser page: the viewport (1280x800), or the whole page.
///
/// The image comes back base64-encoded (and as an MCP image content block).
#[tool(
    name = "browser_screenshot",
    title = "Screenshot the browser page",
    category = "browser",
    effect = "network",
    read_only = true,
    idempotent = true
)]
pub struct BrowserScreenshot {
    /// Capture the whole scrollable page instead of the viewport; default false.
    #[serde(default)]
    pub full_page: bool,
}

/// A PNG image.
#[kyro_core::output]
#[derive(Debug)]
pub struct Screenshot {
    /// Always `image/png`.
    pub mime_type: String,
    /// The PNG, base64-encoded.
    pub data: String,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Size of the PNG in bytes.
    pub bytes: u64,
    /// The page's URL.
    pub url: String,
}

impl Execute for BrowserScreenshot {
    type Output = Screenshot;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<Screenshot, ToolError> {
        let full_page = self.full_page;
        with_page(cx, move |tab, _| {
            let (url, _, _) = super::page_info(tab)?;
            let data = tab
                .call_method(CaptureScreenshot {
                    format: Some(CaptureScreenshotFormatOption::Png),
                    quality: None,
                    clip: None,
                    from_surface: Some(true),
                    capture_beyond_viewport: Some(full_page),
                    optimize_for_speed: None,
                })
                .map_err(|e| error("take a screenshot", e))?
                .data;
            let png = BASE64_STANDARD
                .decode(&data)
                .map_err(|e| error("take a screenshot", e))?;
            let (width, height) =
                png_size(&png).ok_or_else(|| error("take a screenshot", "Chromium returned no PNG"))?;
            Ok(Screenshot {
                mime_type: "image/png".into(),
                bytes: png.len() as u64,
                data,
                width,
                height,
                url,
            })
        })
        .await
    }
}

/// Width and height from a PNG's IHDR chunk.
fn png_size(png: &[u8]) -> Option<(u32, u32)> {
    if png.len() < 24 || &png[..8] != b"\x89PNG\r\n\x1a\n" || &png[12..16] != b"IHDR" {
        return None;
    }
    let width = u32::from_be_bytes(png[16..20].try_into().ok()?);
    let height = u32::from_be_bytes(png[20..24].try_into().ok()?);
    Some((width, height))
}
