//! The REST client: one request under the network policy, typed errors, the `Link`
//! header's next page. Every request passes the checks `web_fetch`'s do (the host by name,
//! every resolved address, private ranges); an answer is parsed into the shape its tool
//! expects or is a typed failure; remote text is made to show as itself; the token never
//! appears in anything kyro writes.

use crate::Failure;
use crate::integration::guard;
use crate::integration::untrusted::shown;
use crate::settings::NetworkSettings;
use kyro_core::policy::SettingsTable;
use kyro_core::receipt::ObservedEffect;
use kyro_core::{ToolContext, ToolError};
use std::io::Read;

use crate::RemoteReason;
use serde::de::DeserializeOwned;
use serde_json::Value;

const SERVICE: &str = "github";
const DEFAULT_BASE: &str = "https://api.github.com";

/// The longest a GitHub request may take.
const TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// The most of a successful answer read (GitHub's own largest JSON answers are a few MiB).
const MAX_BODY: u64 = 10 * 1024 * 1024;

/// The most of a refusing answer read, and the most of its message kept: an error is
/// reported, not relayed.
const MAX_ERROR_BODY: u64 = 64 * 1024;
const MAX_ERROR_CHARS: usize = 2_000;

/// The most JSON values a successful answer may hold: a search page of 100 items holds a
/// few tens of thousands; the bound keeps a 10 MiB body of `[0,0,...]` from taking
/// hundreds of MiB as parsed values.
const MAX_VALUES: usize = 1_000_000;

/// The policy table every GitHub tool reads: `[tools.network]`.
pub(crate) const NETWORK: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

/// A GitHub API endpoint and credentials.
pub(crate) struct GitHub {
    base: String,
    token: Option<String>,
    /// The token as it is written and percent-encoded: what [`GitHub::redact`] takes out,
    /// made once rather than for every string of every answer.
    forms: Vec<String>,
    policy: NetworkSettings,
    agent: ureq::Agent,
}

/// A successful answer.
pub(crate) struct Answer {
    pub body: Value,
    /// The body as sent (a diff, when asked for one), made to show as itself.
    pub raw: String,
    /// The page after this one, from the `Link` header.
    pub next_page: Option<u32>,
    /// Where a redirect pointed, when one was wanted.
    pub location: Option<String>,
    status: u16,
}

impl Answer {
    /// The body as `T`: an answer of another shape (a field missing or of another type) is
    /// an `unexpected_answer` failure naming what came back.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, ToolError> {
        T::deserialize(&self.body).map_err(|e| unexpected(self.status, format!("{e}; it sent {}", sample(&self.body))))
    }

    /// The items of a list answer: anything but an array is an `unexpected_answer`.
    pub fn items(&self) -> Result<&[Value], ToolError> {
        self.body.as_array().map(Vec::as_slice).ok_or_else(|| {
            unexpected(
                self.status,
                format!("a list was expected; it sent {}", sample(&self.body)),
            )
        })
    }
}

/// The API's base URL (`KYRO_GITHUB_API_URL`, default the public API).
fn base() -> String {
    std::env::var("KYRO_GITHUB_API_URL")
        .unwrap_or_else(|_| DEFAULT_BASE.to_owned())
        .trim_end_matches('/')
        .to_owned()
}

/// What an approval shows of where a call goes: `host: api.github.com`.
pub(crate) fn target() -> Option<String> {
    let base = base();
    let host = base.parse::<ureq::http::Uri>().ok()?.authority()?.to_string();
    Some(format!("host: {host} (GitHub API)"))
}

fn unexpected(status: u16, message: String) -> ToolError {
    Failure::UnexpectedAnswer {
        service: SERVICE.into(),
        status,
        message,
    }
    .into()
}

/// A short sample of a JSON value, for a failure's message.
fn sample(value: &Value) -> String {
    let text = value.to_string();
    cut(&text, 200)
}

/// `text` cut at `max` characters, saying how much was left out.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((end, _)) => format!("{}… ({} more bytes)", &text[..end], text.len() - end),
    }
}

impl GitHub {
    /// The endpoint and token from the environment, under the call's network policy.
    pub fn for_call(cx: &ToolContext) -> Result<GitHub, ToolError> {
        let token = std::env::var("GITHUB_TOKEN")
            .or_else(|_| std::env::var("GH_TOKEN"))
            .ok()
            .filter(|t| !t.is_empty());
        let policy = NetworkSettings::clone(&*cx.scope().settings::<NetworkSettings>()?);
        // Redirects are not followed: one would leave the API (and the network policy's
        // reach) with the token; a moved repository is reported with its new address.
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_global(Some(TIMEOUT))
            .build();
        Ok(GitHub {
            base: base(),
            forms: token.iter().flat_map(|t| [t.clone(), encode(t)]).collect(),
            token,
            agent: guard::checked_agent(policy.clone(), config),
            policy,
        })
    }

    /// `text` with the token taken out: nothing kyro writes (a result, an error, a
    /// receipt) carries it, whatever the server reflects.
    fn redact(&self, mut text: String) -> String {
        for form in &self.forms {
            if text.contains(form.as_str()) {
                text = text.replace(form.as_str(), "[token]");
            }
        }
        text
    }

    /// Every string of a parsed answer (keys too) with the token taken out (a JSON escape
    /// such as `\u0067hp_...` is undone by parsing, so this runs after it) and shown as
    /// itself.
    fn tidy(&self, value: &mut Value) {
        match value {
            Value::String(text) => {
                let redacted = self.redact(std::mem::take(text));
                *text = shown(&redacted);
            }
            Value::Array(items) => items.iter_mut().for_each(|item| self.tidy(item)),
            Value::Object(map) => {
                let taken = std::mem::take(map);
                *map = taken
                    .into_iter()
                    .map(|(key, mut item)| {
                        self.tidy(&mut item);
                        (shown(&self.redact(key)), item)
                    })
                    .collect();
            }
            _ => {}
        }
    }

    /// Whether `text` holds the token (in any form [`GitHub::redact`] takes out).
    pub fn carries_token(&self, text: &str) -> bool {
        self.redact(text.to_owned()) != text
    }

    /// Text from a remote party that is not JSON (a decoded file, a diff): the token taken
    /// out and shown as itself.
    pub fn tidy_text(&self, text: &str) -> String {
        shown(&self.redact(text.to_owned()))
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
            unexpected(
                answer.status,
                format!("`{path}` answered without the address it was expected to redirect to"),
            )
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
        // The schema refuses `.` and `..` as owner, repository or path segment; this is
        // the second lock.
        if path.split(['/', '?']).any(|segment| segment == "." || segment == "..") {
            return Err(Failure::InvalidRequest {
                message: format!("`{path}` is not a GitHub API path"),
            }
            .into());
        }
        let url = format!("{}{path}", self.base);
        // The same checks as web_fetch's: the host by name and every address it resolves
        // to, here and again at connection time (the agent's resolver).
        guard::check_with(&self.policy, &url)?;
        let mut request = ureq::http::Request::builder()
            .method(method)
            .uri(&url)
            .header("Accept", accept)
            .header("X-GitHub-Api-Version", "2022-11-28")
            .header("User-Agent", "kyro");
        if let Some(token) = &self.token {
            request = request.header("Authorization", format!("Bearer {token}"));
        }
        let sent = match body {
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
        };
        let mut response = sent.map_err(|e| match e {
            ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::PermissionDenied => {
                guard::transport_error(&url, SERVICE, ureq::Error::Io(io))
            }
            e => Failure::Unreachable {
                service: SERVICE.into(),
                message: self.redact(e.to_string()),
            }
            .into(),
        })?;
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
        let limits = ["x-ratelimit-remaining", "retry-after", "x-ratelimit-reset"].map(header);
        let link = header("link");
        let location = header("location").map(|l| self.redact(l));
        let content_type = header("content-type").unwrap_or_default();
        if redirect_wanted && (300..400).contains(&status) {
            return Ok(Answer {
                body: Value::Null,
                raw: String::new(),
                next_page: None,
                location,
                status,
            });
        }
        if (300..400).contains(&status) {
            return Err(Failure::Remote {
                service: SERVICE.into(),
                status,
                reason: RemoteReason::of(status),
                message: shown(&self.redact(format!(
                    "moved to {}; kyro does not follow API redirects, call again with the new owner and repository",
                    cut(&percent_decoded(&location.unwrap_or_default()), 500)
                ))),
            }
            .into());
        }
        let success = (200..300).contains(&status);
        let limit = if success { MAX_BODY } else { MAX_ERROR_BODY };
        let mut bytes = Vec::new();
        response
            .body_mut()
            .as_reader()
            .take(limit + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| Failure::Unreachable {
                service: SERVICE.into(),
                message: self.redact(e.to_string()),
            })?;
        let over = bytes.len() as u64 > limit;
        bytes.truncate(limit as usize);
        let text = self.redact(String::from_utf8_lossy(&bytes).into_owned());
        if !success {
            let message = shown(&self.redact(cut(&error_message(&text, &content_type), MAX_ERROR_CHARS)));
            if let Some(limited) = rate_limited(status, &limits, &message) {
                return Err(limited.into());
            }
            return Err(Failure::Remote {
                service: SERVICE.into(),
                status,
                reason: RemoteReason::of(status),
                message,
            }
            .into());
        }
        if over {
            return Err(unexpected(
                status,
                format!(
                    "an answer of more than {} MiB, which kyro does not read",
                    MAX_BODY >> 20
                ),
            ));
        }
        let json = accept.ends_with("+json") || accept.ends_with("/json");
        let body = if !json {
            Value::Null
        } else if text.trim().is_empty() {
            // 204 and 205 have no body; any other success without one is not an answer.
            if status != 204 && status != 205 {
                return Err(unexpected(status, "an empty body where JSON was expected".into()));
            }
            Value::Null
        } else if values(&text) > MAX_VALUES {
            return Err(unexpected(
                status,
                format!("an answer of more than {MAX_VALUES} JSON values, which kyro does not parse"),
            ));
        } else {
            let mut body: Value = serde_json::from_str(&text).map_err(|e| {
                unexpected(
                    status,
                    format!(
                        "JSON was expected; it sent {} ({e}): {}",
                        if content_type.is_empty() {
                            "no content type"
                        } else {
                            content_type.as_str()
                        },
                        shown(&cut(&text, 200))
                    ),
                )
            })?;
            self.tidy(&mut body);
            body
        };
        Ok(Answer {
            body,
            raw: if json { String::new() } else { shown(&text) },
            next_page: link.as_deref().and_then(next_page),
            location: None,
            status,
        })
    }
}

/// The message of a refusing answer: GitHub's `message` and its `errors`' messages when it
/// is JSON, else the body's text.
fn error_message(text: &str, content_type: &str) -> String {
    let Ok(body) = serde_json::from_str::<Value>(text) else {
        let kind = if content_type.is_empty() {
            "no content type"
        } else {
            content_type
        };
        return format!("({kind}) {}", text.trim());
    };
    let mut message = body["message"].as_str().map_or_else(|| body.to_string(), str::to_owned);
    let details: Vec<String> = body["errors"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| {
            e["message"].as_str().map(str::to_owned).or_else(|| {
                e["code"]
                    .as_str()
                    .map(|code| format!("{}: {code}", e["field"].as_str().unwrap_or("?")))
            })
        })
        .collect();
    if !details.is_empty() {
        message.push_str(" (");
        message.push_str(&details.join("; "));
        message.push(')');
    }
    message
}

/// A limit the answer reports, with how long to wait: 429, or a 403 with no requests left
/// (the primary limit) or with a `retry-after` and a message that says it is a limit (the
/// secondary one). A 403 that is another refusal (SAML enforcement, a blocked user) stays
/// `remote`, its message kept, whatever headers come with it.
fn rate_limited(status: u16, [remaining, retry_after, reset]: &[Option<String>; 3], message: &str) -> Option<Failure> {
    // A day at most: a wait past that is the server's mistake, not a plan.
    const LONGEST: u64 = 86_400;
    let retry_after: Option<u64> = retry_after
        .as_deref()
        .and_then(|r| r.trim().parse().ok())
        .map(|w: u64| w.min(LONGEST));
    let exhausted = remaining.as_deref() == Some("0");
    let says_limit = message.to_ascii_lowercase().contains("rate limit");
    let limited = status == 429 || (status == 403 && (exhausted || (retry_after.is_some() && says_limit)));
    if !limited {
        return None;
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let reset: Option<u64> = reset.as_deref().and_then(|r| r.trim().parse().ok());
    let wait = retry_after
        .or_else(|| reset.filter(|_| exhausted).map(|r| r.saturating_sub(now).min(LONGEST)))
        .unwrap_or(60);
    Some(Failure::RateLimited {
        service: SERVICE.into(),
        reset_at: reset
            .filter(|_| retry_after.is_none())
            .unwrap_or(now.saturating_add(wait)),
        retry_after_s: wait,
        message: message.to_owned(),
    })
}

/// `text` with its `%XX` escapes undone (for showing an address, never for sending it).
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).copied().and_then(hex),
            bytes.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(hi), Some(lo)) => {
                out.push((hi * 16 + lo) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// About how many JSON values `text` holds (every `,`, `[` and `{`, strings' too: an
/// overcount): parsing builds each, so the count bounds the memory a body can take.
fn values(text: &str) -> usize {
    text.bytes().filter(|b| matches!(b, b',' | b'[' | b'{')).count()
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
            forms: self.forms.clone(),
            policy: self.policy.clone(),
            agent: self.agent.clone(),
        }
        .send(cx, "POST", &endpoint, Some(&body))?;
        if let Some(errors) = answer.body["errors"].as_array().filter(|e| !e.is_empty()) {
            let message: Vec<&str> = errors.iter().filter_map(|e| e["message"].as_str()).collect();
            let message = cut(&message.join("; "), MAX_ERROR_CHARS);
            return Err(Failure::Remote {
                service: SERVICE.into(),
                status: 200,
                reason: RemoteReason::Unprocessable,
                message,
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
