//! `browser_console_messages`, `browser_network_requests` and `browser_network_request`:
//! what the page logged and asked for.

use kyro_core::policy::SettingsTable;
use kyro_core::{Execute, ToolContext, ToolError, tool};
use schemars::JsonSchema;
use serde::Serialize;

use super::session::with_page;
use crate::settings::NetworkSettings;

/// The page's console messages (`log: ...`, `error: ...`, uncaught exceptions), oldest first, the
/// newest 1000 at most.
#[tool(
    name = "browser_console_messages",
    title = "Read the browser console",
    category = "browser",
    effect = "network",
    read_only = true,
    idempotent = true
)]
pub struct BrowserConsoleMessages {
    /// Only errors.
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

/// The page's requests since it loaded (`GET url`, and policy refusals), oldest first, the newest
/// 1000 at most.
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

/// Most bytes of a response body returned.
const MAX_BODY: usize = 256 * 1024;

/// One request of the page in full: what was sent (headers, body) and the response (status,
/// headers, body up to 256 KiB).
#[tool(
    name = "browser_network_request",
    title = "Read one browser request",
    category = "browser",
    effect = "network",
    read_only = true,
    idempotent = true
)]
pub struct BrowserNetworkRequest {
    /// Its position in browser_network_requests, 1 the oldest.
    #[schemars(range(min = 1, max = 1000))]
    pub index: u32,
}

/// One request and its response.
#[kyro_core::output]
#[derive(Debug)]
pub struct NetworkRequest {
    /// Its line in browser_network_requests.
    pub request: String,
    /// The headers sent.
    pub request_headers: Vec<Header>,
    /// The body sent, when there was one.
    pub request_body: Option<String>,
    /// The response's status, when one came.
    pub status: Option<u32>,
    /// The status's text.
    pub status_text: Option<String>,
    /// The response's headers.
    pub response_headers: Vec<Header>,
    /// Its media type.
    pub mime_type: Option<String>,
    /// Its body as text, when it is text (cut at 256 KiB).
    pub body: Option<String>,
    /// Its body in base64, when it is not text (cut at 256 KiB).
    pub body_base64: Option<String>,
    /// True when the body was cut.
    pub body_truncated: bool,
}

/// A header.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Header {
    /// Its name.
    pub name: String,
    /// Its value.
    pub value: String,
}

fn headers(pairs: Vec<(String, String)>) -> Vec<Header> {
    pairs.into_iter().map(|(name, value)| Header { name, value }).collect()
}

/// At most [`MAX_BODY`] bytes of `text`, cut at a character boundary.
fn cut(mut text: String) -> (String, bool) {
    if text.len() <= MAX_BODY {
        return (text, false);
    }
    let mut at = MAX_BODY;
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    text.truncate(at);
    (text, true)
}

impl Execute for BrowserNetworkRequest {
    type Output = NetworkRequest;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<NetworkRequest, ToolError> {
        let index = self.index as usize;
        with_page(cx, move |tab, _| {
            let count = tab.requests().len();
            let Some((logged, answered)) = tab.request(index) else {
                return Err(crate::Failure::InvalidRequest {
                    message: format!(
                        "there is no request {index}: the page made {count} (see browser_network_requests)"
                    ),
                }
                .into());
            };
            // Only a response that came has a body (a refused, routed or failed one has none).
            let body = match (&answered, &logged.network_id) {
                (Some(_), Some(id)) => tab.response_body(id).ok(),
                _ => None,
            };
            let (mut text, mut base64, mut truncated) = (None, None, false);
            if let Some((content, encoded)) = body {
                let (content, was_cut) = cut(content);
                truncated = was_cut;
                if encoded {
                    base64 = Some(content)
                } else {
                    text = Some(content)
                }
            }
            Ok(NetworkRequest {
                request: logged.line,
                request_headers: headers(logged.headers),
                request_body: logged.post_data,
                status: answered.as_ref().map(|a| a.status),
                status_text: answered.as_ref().map(|a| a.status_text.clone()),
                response_headers: answered
                    .as_ref()
                    .map(|a| headers(a.headers.clone()))
                    .unwrap_or_default(),
                mime_type: answered.map(|a| a.mime_type),
                body: text,
                body_base64: base64,
                body_truncated: truncated,
            })
        })
        .await
    }
}
