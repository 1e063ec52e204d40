//! `web_fetch`: a page as readable text.

use crate::Failure;
use crate::settings::NetworkSettings;
use kyro_core::policy::SettingsTable;
use kyro_core::{Execute, ToolContext, ToolError, tool};

use super::guard::send;

const DEFAULT_MAX_CHARS: u64 = 20_000;
const MAX_BYTES: u64 = 5 * 1024 * 1024;

/// Fetch a web page as markdown (HTML converted) or text, a window at a time.
/// http(s) only; hosts policy-checked (loopback and private refused unless allowed); up to 5
/// redirects, each checked; at most 5 MiB read.
#[tool(name = "web_fetch", title = "Fetch a web page", category = "integration", effect = "network", aliases = ["fetch"], task = "optional", read_only = true, idempotent = true)]
pub struct WebFetch {
    /// The URL.
    #[schemars(length(min = 1, max = 8192), regex(pattern = "^https?://"))]
    pub url: String,
    /// Most characters; default 20000.
    #[schemars(range(min = 1, max = 1000000))]
    pub max_chars: Option<u64>,
    /// Character offset to start at (the next window); default 0.
    pub start_index: Option<u64>,
    /// Return the body as is, without converting HTML.
    #[serde(default)]
    pub raw: bool,
}

/// A window of a fetched page.
#[kyro_core::output]
#[derive(Debug)]
pub struct Fetched {
    /// The final URL, after redirects.
    pub url: String,
    /// The HTTP status.
    pub status: u16,
    /// The Content-Type.
    pub content_type: String,
    /// The window of content.
    pub content: String,
    /// True when more content follows the window.
    pub truncated: bool,
    /// The `start_index` of the next window, when truncated.
    pub next_index: Option<u64>,
}

impl Execute for WebFetch {
    type Output = Fetched;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<Fetched, ToolError> {
        let headers = [("User-Agent".to_owned(), "kyro".to_owned())];
        let fetched = send(
            cx,
            "GET",
            &self.url,
            &headers,
            None,
            MAX_BYTES,
            std::time::Duration::from_secs(30),
        )?;
        let content_type = fetched
            .headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("content-type"))
            .map(|(_, v)| v.clone())
            .unwrap_or_default();
        // Remote text shows as itself: no escape sequence, bell, lone CR or override.
        let text = super::untrusted::shown(&String::from_utf8_lossy(&fetched.body));
        let text = if !self.raw && content_type.contains("html") {
            htmd::convert(&text).map_err(|e| Failure::Conversion { message: e.to_string() })?
        } else {
            text
        };
        let start = self.start_index.unwrap_or(0) as usize;
        let max = self.max_chars.unwrap_or(DEFAULT_MAX_CHARS) as usize;
        let total = text.chars().count();
        let window: String = text.chars().skip(start).take(max).collect();
        let end = (start + max).min(total);
        let truncated = end < total || fetched.truncated;
        Ok(Fetched {
            url: fetched.url,
            status: fetched.status,
            content_type,
            content: window,
            truncated,
            next_index: (end < total).then_some(end as u64),
        })
    }
}
