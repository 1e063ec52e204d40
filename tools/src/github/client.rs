//! The REST client: one request, typed errors, the `Link` header's next page.

use crate::Failure;
use kyro_core::receipt::ObservedEffect;
use kyro_core::{ToolContext, ToolError};

use crate::RemoteReason;
use serde_json::Value;

const SERVICE: &str = "github";
const DEFAULT_BASE: &str = "https://api.github.com";

/// The longest a GitHub request may take.
const TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// A GitHub API endpoint and credentials.
pub(crate) struct GitHub {
    base: String,
    token: Option<String>,
    agent: ureq::Agent,
}

/// A successful answer.
pub(crate) struct Answer {
    pub body: Value,
    /// The body as sent (a diff, when asked for one).
    pub raw: String,
    /// The page after this one, from the `Link` header.
    pub next_page: Option<u32>,
    /// Where a redirect pointed, when one was wanted.
    pub location: Option<String>,
}

impl GitHub {
    /// The endpoint and token from the environment.
    pub fn from_env() -> GitHub {
        let base = std::env::var("KYRO_GITHUB_API_URL").unwrap_or_else(|_| DEFAULT_BASE.to_owned());
        let token = std::env::var("GITHUB_TOKEN")
            .or_else(|_| std::env::var("GH_TOKEN"))
            .ok();
        // Redirects are not followed: one would leave the API (and the network policy's
        // reach) with the token; a moved repository is reported with its new address.
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_global(Some(TIMEOUT))
            .build()
            .into();
        GitHub {
            base: base.trim_end_matches('/').to_owned(),
            token,
            agent,
        }
    }

    /// The request, ending by the call's time limit when that comes before the agent's.
    fn within_limit<S: ureq::AsSendBody>(
        &self,
        cx: &ToolContext,
        request: ureq::http::Request<S>,
    ) -> ureq::http::Request<S> {
        match cx.stop().remaining() {
            Some(left) => self
                .agent
                .configure_request(request)
                .timeout_global(Some((left + crate::settings::PAST_THE_LIMIT).min(TIMEOUT)))
                .build(),
            None => request,
        }
    }

    /// Sends one request; a refusing status becomes a typed error.
    pub fn send(&self, cx: &ToolContext, method: &str, path: &str, body: Option<&Value>) -> Result<Answer, ToolError> {
        self.send_accepting(cx, method, path, body, "application/vnd.github+json")
    }

    /// [`GitHub::send`] asking for another media type (`application/vnd.github.diff`).
    pub fn send_accepting(
        &self,
        cx: &ToolContext,
        method: &str,
        path: &str,
        body: Option<&Value>,
        accept: &str,
    ) -> Result<Answer, ToolError> {
        self.request(cx, method, path, body, accept, false)
    }

    /// Where a GET of `path` redirects (a job's logs, a signed address elsewhere), not
    /// followed: the caller fetches it without the token.
    pub fn redirect_target(&self, cx: &ToolContext, path: &str) -> Result<String, ToolError> {
        let answer = self.request(cx, "GET", path, None, "application/vnd.github+json", true)?;
        // A path alone is on the API's own host.
        let origin = self.base.find("://").map_or(self.base.as_str(), |scheme| {
            let host_end = self.base[scheme + 3..]
                .find('/')
                .map_or(self.base.len(), |i| scheme + 3 + i);
            &self.base[..host_end]
        });
        let location = answer
            .location
            .map(|l| if l.starts_with('/') { format!("{origin}{l}") } else { l });
        location.ok_or_else(|| {
            Failure::Remote {
                service: SERVICE.into(),
                status: 200,
                reason: RemoteReason::of(200),
                message: format!("`{path}` answered without the address it was expected to redirect to"),
            }
            .into()
        })
    }

    fn request(
        &self,
        cx: &ToolContext,
        method: &str,
        path: &str,
        body: Option<&Value>,
        accept: &str,
        redirect_wanted: bool,
    ) -> Result<Answer, ToolError> {
        // The schema refuses `.` and `..` as owner or repository; this is the second lock.
        if path.split(['/', '?']).any(|segment| segment == "." || segment == "..") {
            return Err(Failure::InvalidRequest {
                message: format!("`{path}` is not a GitHub API path"),
            }
            .into());
        }
        let url = format!("{}{path}", self.base);
        let unreachable = |e: ureq::Error| Failure::Unreachable {
            service: SERVICE.into(),
            message: e.to_string(),
        };
        let mut request = ureq::http::Request::builder()
            .method(method)
            .uri(&url)
            .header("Accept", accept)
            .header("X-GitHub-Api-Version", "2022-11-28")
            .header("User-Agent", "kyro");
        if let Some(token) = &self.token {
            request = request.header("Authorization", format!("Bearer {token}"));
        }
        let response = match body {
            Some(body) => {
                let request = request
                    .header("Content-Type", "application/json")
                    .body(body.to_string())
                    .map_err(|e| Failure::InvalidRequest { message: e.to_string() })?;
                self.agent.run(self.within_limit(cx, request))
            }
            None => {
                let request = request
                    .body(())
                    .map_err(|e| Failure::InvalidRequest { message: e.to_string() })?;
                self.agent.run(self.within_limit(cx, request))
            }
        }
        .map_err(unreachable)?;
        let status = response.status().as_u16();
        cx.effects().push(ObservedEffect::Request {
            url: url.clone(),
            status: Some(status),
        });
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let remaining = header("x-ratelimit-remaining");
        let reset = header("x-ratelimit-reset").and_then(|r| r.parse().ok()).unwrap_or(0);
        let link = header("link");
        let location = header("location");
        let mut response = response;
        let text = response.body_mut().read_to_string().map_err(unreachable)?;
        let body: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        if (status == 403 || status == 429) && remaining.as_deref() == Some("0") {
            return Err(Failure::RateLimited {
                service: SERVICE.into(),
                reset_at: reset,
            }
            .into());
        }
        if redirect_wanted && (300..400).contains(&status) {
            return Ok(Answer {
                body: Value::Null,
                raw: String::new(),
                next_page: None,
                location,
            });
        }
        if (300..400).contains(&status) {
            return Err(Failure::Remote {
                service: SERVICE.into(),
                status,
                reason: RemoteReason::of(status),
                message: format!(
                    "moved to {}; kyro does not follow API redirects, call again with the new owner and repository",
                    location.unwrap_or_default()
                ),
            }
            .into());
        }
        if !(200..300).contains(&status) {
            return Err(Failure::Remote {
                service: SERVICE.into(),
                status,
                reason: RemoteReason::of(status),
                message: body["message"].as_str().unwrap_or(&text).to_owned(),
            }
            .into());
        }
        Ok(Answer {
            body,
            raw: text,
            next_page: link.as_deref().and_then(next_page),
            location: None,
        })
    }
}

impl GitHub {
    /// One GraphQL request (for what REST cannot do); GraphQL's own errors become a typed
    /// error. The endpoint is `/graphql` beside the REST API (`/api/graphql` for a GitHub
    /// Enterprise base ending in `/api/v3`).
    pub fn graphql(&self, cx: &ToolContext, query: &str, variables: Value) -> Result<Value, ToolError> {
        let endpoint = match self.base.strip_suffix("/api/v3") {
            Some(host) => format!("{host}/api/graphql"),
            None => format!("{}/graphql", self.base),
        };
        let body = serde_json::json!({"query": query, "variables": variables});
        let answer = GitHub {
            base: String::new(),
            token: self.token.clone(),
            agent: self.agent.clone(),
        }
        .send(cx, "POST", &endpoint, Some(&body))?;
        if let Some(errors) = answer.body["errors"].as_array().filter(|e| !e.is_empty()) {
            let message: Vec<&str> = errors.iter().filter_map(|e| e["message"].as_str()).collect();
            return Err(Failure::Remote {
                service: SERVICE.into(),
                status: 200,
                reason: RemoteReason::Unprocessable,
                message: message.join("; "),
            }
            .into());
        }
        Ok(answer.body["data"].clone())
    }
}

/// The `page` of the `rel="next"` link, if any.
fn next_page(link: &str) -> Option<u32> {
    link.split(',')
        .find(|part| part.contains("rel=\"next\""))
        .and_then(|part| {
            let url = part
                .split(';')
                .next()?
                .trim()
                .trim_start_matches('<')
                .trim_end_matches('>');
            url.split(['?', '&'])
                .find_map(|pair| pair.strip_prefix("page="))
                .and_then(|p| p.parse().ok())
        })
}

/// A user's login from a GitHub user object.
pub(crate) fn login(user: &Value) -> String {
    user["login"].as_str().unwrap_or_default().to_owned()
}

pub(crate) fn text(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_owned()
}

/// A request GitHub would refuse, refused before it is sent, saying what to send instead.
pub(crate) fn invalid(message: impl Into<String>) -> ToolError {
    Failure::InvalidRequest {
        message: message.into(),
    }
    .into()
}

/// `text` percent-encoded for a URL's query or path segment.
pub(crate) fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// `?page=P&per_page=N` (GitHub's defaults: page 1, 30 a page).
pub(crate) fn paging(page: Option<u32>, per_page: Option<u32>) -> String {
    format!("page={}&per_page={}", page.unwrap_or(1), per_page.unwrap_or(30))
}

/// The items of a list answer.
pub(crate) fn items(body: &Value) -> &[Value] {
    body.as_array().map(Vec::as_slice).unwrap_or_default()
}
