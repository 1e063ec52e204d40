//! `http_request`: one HTTP request with method, headers and body.

use kyro_core::policy::SettingsTable;
use kyro_core::{Execute, ToolContext, ToolError, tool};
use serde::Serialize;

use super::guard::send;
use super::untrusted::shown;
use crate::settings::NetworkSettings;

/// Send an HTTP request and return status, headers and body (text, capped).
/// Network rules as `web_fetch`: http(s) only, hosts policy-checked, redirects checked per hop.
#[tool(
    name = "http_request",
    title = "HTTP request",
    category = "integration",
    effect = "network",
    destructive = true
)]
pub struct HttpRequest {
    /// `GET` (default), `POST`, `PUT`, `PATCH`, `DELETE` or `HEAD`.
    #[serde(default)]
    pub method: HttpMethod,
    /// The URL.
    #[schemars(length(min = 1, max = 8192), regex(pattern = "^https?://"))]
    pub url: String,
    /// Request headers.
    #[serde(default)]
    #[schemars(length(max = 100))]
    pub headers: Vec<Header>,
    /// Request body.
    #[schemars(length(max = 4194304))]
    pub body: Option<String>,
    /// Most response body bytes kept; default 1048576.
    #[schemars(range(min = 1, max = 8388608))]
    pub max_bytes: Option<u64>,
    /// Time limit in ms; default 30000.
    #[schemars(range(min = 100, max = 120000))]
    pub timeout_ms: Option<u64>,
}

/// An HTTP method.
#[kyro_core::input]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[serde(rename_all = "UPPERCASE")]
pub enum HttpMethod {
    /// GET.
    #[default]
    Get,
    /// POST.
    Post,
    /// PUT.
    Put,
    /// PATCH.
    Patch,
    /// DELETE.
    Delete,
    /// HEAD.
    Head,
}

/// A header.
#[kyro_core::input]
#[derive(Debug, Clone, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Header {
    /// Its name.
    #[schemars(regex(pattern = "^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$"))]
    pub name: String,
    /// Its value.
    #[schemars(length(max = 8192))]
    pub value: String,
}

/// The response.
#[kyro_core::output]
#[derive(Debug)]
pub struct HttpResponse {
    /// The final URL, after redirects.
    pub url: String,
    /// The status.
    pub status: u16,
    /// Response headers.
    pub headers: Vec<Header>,
    /// The body as text (lossy UTF-8), capped; control, bidi and invisible characters
    /// are shown as pictures or escapes (remote text drives nothing).
    pub body: String,
    /// True when the body was cut at `max_bytes`.
    pub truncated: bool,
}

impl Execute for HttpRequest {
    type Output = HttpResponse;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<HttpResponse, ToolError> {
        let method = match self.method {
            HttpMethod::Get => "GET",
            HttpMethod::Post => "POST",
            HttpMethod::Put => "PUT",
            HttpMethod::Patch => "PATCH",
            HttpMethod::Delete => "DELETE",
            HttpMethod::Head => "HEAD",
        };
        let headers: Vec<(String, String)> = self.headers.iter().map(|h| (h.name.clone(), h.value.clone())).collect();
        let fetched = send(
            cx,
            method,
            &self.url,
            &headers,
            self.body.as_deref(),
            self.max_bytes.unwrap_or(1024 * 1024),
            std::time::Duration::from_millis(self.timeout_ms.unwrap_or(30_000)),
        )?;
        Ok(HttpResponse {
            url: fetched.url,
            status: fetched.status,
            headers: fetched
                .headers
                .into_iter()
                .map(|(name, value)| Header {
                    name,
                    value: shown(&value),
                })
                .collect(),
            body: shown(&String::from_utf8_lossy(&fetched.body)),
            truncated: fetched.truncated,
        })
    }
}
