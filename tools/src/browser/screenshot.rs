//! `browser_screenshot`: the page, or one element, as a PNG or JPEG image that fits the
//! call's output limit.

use base64::Engine;
use base64::prelude::BASE64_STANDARD;
use headless_chrome::protocol::cdp::Page::{
    CaptureScreenshot, CaptureScreenshotFormatOption, GetLayoutMetrics, Viewport,
};
use kyro_core::policy::SettingsTable;
use kyro_core::{Execute, ToolContext, ToolError, tool};

use super::driven::Driven;
use super::session::{error, with_page};
use crate::settings::NetworkSettings;

/// Screenshot the viewport (1280x800), the whole page or one element, as PNG or JPEG; scaled down
/// (`scale`) when larger than the output allows.
#[tool(
    name = "browser_screenshot",
    title = "Screenshot the browser page",
    category = "browser",
    effect = "network",
    read_only = true,
    idempotent = true,
    aliases = ["browser_take_screenshot"]
)]
pub struct BrowserScreenshot {
    /// The whole scrollable page.
    #[serde(default)]
    #[tool(alias = "fullPage")]
    pub full_page: bool,
    /// Only this element (its ref, like `e3`).
    #[schemars(regex(pattern = "^e[0-9]{1,9}$"))]
    pub r#ref: Option<String>,
    /// Only the first element matching this CSS selector.
    #[schemars(length(min = 1, max = 1000))]
    pub selector: Option<String>,
    /// Playwright's spelling: a ref or a CSS selector.
    #[schemars(length(min = 1, max = 1000))]
    pub target: Option<String>,
    /// The element in words (Playwright's `element`).
    #[schemars(length(max = 1000))]
    pub element: Option<String>,
    /// `png` (default) or `jpeg`.
    #[serde(default)]
    #[tool(alias = "type")]
    pub format: ImageFormat,
    /// Playwright's `css` or `device` pixels: the same here (one device pixel per CSS pixel).
    pub scale: Option<PixelScale>,
    /// JPEG quality; default 80.
    #[schemars(range(min = 1, max = 100))]
    pub quality: Option<u8>,
}

/// Playwright's pixel scale of a screenshot.
#[kyro_core::input]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum PixelScale {
    /// CSS pixels.
    Css,
    /// Device pixels.
    Device,
}

/// An image format.
#[kyro_core::input]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ImageFormat {
    /// Lossless.
    #[default]
    Png,
    /// Smaller, with a quality.
    Jpeg,
}

/// An image.
#[kyro_core::output]
#[derive(Debug)]
pub struct Screenshot {
    /// `image/png` or `image/jpeg`.
    pub mime_type: String,
    /// The image, base64-encoded (over MCP: in the image content block, and this field
    /// says so instead of repeating it).
    pub data: String,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Size of the image in bytes.
    pub bytes: u64,
    /// 1 when captured at full size; less when scaled down to fit the output limit.
    pub scale: f64,
    /// The page's URL.
    pub url: String,
}

impl Execute for BrowserScreenshot {
    type Output = Screenshot;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<Screenshot, ToolError> {
        let element = match (&self.r#ref, &self.selector, &self.target) {
            (None, None, None) => None,
            _ => Some(super::target(
                self.r#ref.as_deref(),
                self.selector.as_deref(),
                self.target.as_deref(),
            )?),
        };
        // The base64 text and the rest of the result must fit the output limit.
        let budget = (cx.output_limit().saturating_sub(4096) / 4 * 3) as usize;
        let BrowserScreenshot {
            full_page,
            format,
            quality,
            ..
        } = self;
        with_page(cx, move |tab, _| {
            let (url, _, _) = super::script::page_info(tab)?;
            let region = match &element {
                Some((target, name)) => {
                    let (answer, _) = super::element_op(tab, "find the element", "box", target, name)?;
                    super::element_answer(&answer, name)?;
                    let f = |k: &str| answer[k].as_f64().unwrap_or_default();
                    Some((f("x"), f("y"), f("width"), f("height")))
                }
                None if full_page => {
                    let size = tab.call(GetLayoutMetrics(None), "measure the page")?.css_content_size;
                    Some((0.0, 0.0, size.width, size.height))
                }
                None => None,
            };
            let mut scale = 1.0;
            for _ in 0..5 {
                let image = capture(tab, format, quality, region, scale)?;
                if image.len() <= budget {
                    let (width, height) =
                        image_size(&image).ok_or_else(|| error("take a screenshot", "Chromium returned no image"))?;
                    return Ok(Screenshot {
                        mime_type: match format {
                            ImageFormat::Png => "image/png",
                            ImageFormat::Jpeg => "image/jpeg",
                        }
                        .into(),
                        bytes: image.len() as u64,
                        data: BASE64_STANDARD.encode(&image),
                        width,
                        height,
                        scale,
                        url,
                    });
                }
                // The size goes with the area: shrink both sides by the square root, and a
                // little more.
                scale *= (budget as f64 / image.len() as f64).sqrt() * 0.9;
            }
            Err(error(
                "take a screenshot that fits the output limit",
                "the image stays too large even scaled down; capture one element, or the viewport",
            ))
        })
        .await
    }
}

/// One capture: the viewport, or `region` (x, y, width, height in page pixels), at `scale`.
fn capture(
    tab: &Driven,
    format: ImageFormat,
    quality: Option<u8>,
    region: Option<(f64, f64, f64, f64)>,
    scale: f64,
) -> Result<Vec<u8>, ToolError> {
    let region = match (region, scale < 1.0) {
        (Some(r), _) => Some(r),
        // The viewport, scaled: as a region in page coordinates.
        (None, true) => {
            let view = tab
                .call(GetLayoutMetrics(None), "measure the page")?
                .css_visual_viewport;
            Some((view.page_x, view.page_y, view.client_width, view.client_height))
        }
        (None, false) => None,
    };
    let data = tab
        .call(
            CaptureScreenshot {
                format: Some(match format {
                    ImageFormat::Png => CaptureScreenshotFormatOption::Png,
                    ImageFormat::Jpeg => CaptureScreenshotFormatOption::Jpeg,
                }),
                quality: (format == ImageFormat::Jpeg).then(|| u32::from(quality.unwrap_or(80))),
                clip: region.map(|(x, y, width, height)| Viewport {
                    x,
                    y,
                    width: width.max(1.0),
                    height: height.max(1.0),
                    scale,
                }),
                from_surface: Some(true),
                capture_beyond_viewport: Some(region.is_some()),
                optimize_for_speed: None,
            },
            "take a screenshot",
        )?
        .data;
    BASE64_STANDARD.decode(&data).map_err(|e| error("take a screenshot", e))
}

/// Width and height from a PNG's IHDR chunk or a JPEG's start-of-frame segment.
fn image_size(image: &[u8]) -> Option<(u32, u32)> {
    if image.len() >= 24 && &image[..8] == b"\x89PNG\r\n\x1a\n" && &image[12..16] == b"IHDR" {
        let width = u32::from_be_bytes(image[16..20].try_into().ok()?);
        let height = u32::from_be_bytes(image[20..24].try_into().ok()?);
        return Some((width, height));
    }
    if image.starts_with(&[0xFF, 0xD8]) {
        let mut at = 2;
        while at + 9 < image.len() {
            if image[at] != 0xFF {
                return None;
            }
            let marker = image[at + 1];
            let length = usize::from(u16::from_be_bytes([image[at + 2], image[at + 3]]));
            // SOF0-SOF15, but DHT (C4), JPG (C8) and DAC (CC).
            if (0xC0..=0xCF).contains(&marker) && ![0xC4, 0xC8, 0xCC].contains(&marker) {
                let height = u16::from_be_bytes([image[at + 5], image[at + 6]]);
                let width = u16::from_be_bytes([image[at + 7], image[at + 8]]);
                return Some((u32::from(width), u32::from(height)));
            }
            at += 2 + length;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::image_size;

    #[test]
    fn sizes_are_read_from_png_and_jpeg_headers() {
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
        png.extend_from_slice(&640u32.to_be_bytes());
        png.extend_from_slice(&480u32.to_be_bytes());
        assert_eq!(image_size(&png), Some((640, 480)));
        // SOI, an APP0 segment of 4 bytes, then SOF0: length, precision, height 300, width 200.
        let jpeg = [
            0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x04, 0x00, 0x00, 0xFF, 0xC0, 0x00, 0x11, 0x08, 0x01, 0x2C, 0x00, 0xC8, 0x03,
        ];
        assert_eq!(image_size(&jpeg), Some((200, 300)));
        assert_eq!(image_size(b"not an image"), None);
    }
}
