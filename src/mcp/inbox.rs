//! The approvals inbox of `kyro mcp --http`: where a named approver decides the calls the
//! policy puts under `review`, outside the client that made them.
//!
//! - `GET /approvals` and `GET /approvals/{id}`: an HTML page (no script; forms only, so
//!   the keyboard does everything) listing each pending call with its caller, age, every
//!   argument and the tool's preview, and approve and deny buttons with a reason.
//! - `GET /approvals.json`, `POST /approvals/{id}/approve` and `/deny` (JSON body
//!   `{"reason": ...}`, optional): for an approver's bearer token.
//! - `POST /approvals/sign-in` (a form with the approver's token) and `/sign-out`: the page
//!   signs an approver in with a cookie signed under the server's key (`KYRO_STATE_KEY`
//!   for replicas; signed, not encrypted), `HttpOnly`, `SameSite=Strict`, `Secure` behind
//!   HTTPS, good for an hour (and no longer than an OAuth token it came from); every form
//!   the page posts carries the session's CSRF token, and a post from another origin is
//!   refused. On plain-HTTP loopback a browser sends the cookie to every port of the
//!   host: sign out when done.
//!
//! An approver is a caller `--approvers` names, or the holder of an OAuth access token
//! with the scope `kyro:approve`; anyone else gets 403. Nobody approves their own call
//! unless the caller's policy said so when the call was made (`[approvals] self_review`).

use std::collections::HashSet;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, COOKIE, LOCATION, SET_COOKIE};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use kyro_core::Caller;
use kyro_core::grants::{ApprovalStore, now_ms};
use kyro_core::review::{DecideError, Decided, Review, clean_reason, decide};
use rmcp::model::{RequestStateCodec, SealOptions};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::auth::{Gate, identify_approving};
use super::state_key::StateKeys;

mod page;

#[cfg(feature = "oauth")]
pub(crate) use page::escape;
pub(crate) use page::page;
use page::{card, sign_in, signed_in};

/// The cookie of a signed-in approver.
const COOKIE_NAME: &str = "kyro_inbox";
/// How long a sign-in lasts at most.
const SESSION: Duration = Duration::from_secs(60 * 60);
/// The most pending calls a page or a list shows (the oldest first; the rest are counted).
const SHOWN: usize = 100;
/// Associated data of a sealed session: no other sealed value opens as one.
const SEALED_FOR: &[u8] = b"kyro approvals inbox session";

/// The inbox's state.
pub(crate) struct Inbox {
    pub store: Arc<dyn ApprovalStore>,
    pub gate: Arc<Gate>,
    /// Callers who may decide (`--approvers`).
    pub approvers: HashSet<Caller>,
    /// Seals sessions.
    pub codec: RequestStateCodec,
    /// The origins a page's post may come from (the server's own).
    pub origins: Vec<String>,
    /// Cookies only over HTTPS (the server is reached by an `https` address).
    pub secure: bool,
    /// Signing in through the issuer (`--inbox-client-id`), besides by token.
    #[cfg(feature = "oauth")]
    pub oauth: Option<InboxOAuth>,
}

#[cfg(feature = "oauth")]
/// The inbox as a public OAuth client of the issuer.
pub(crate) struct InboxOAuth {
    /// The issuer (`--issuer`).
    pub issuer: String,
    /// The inbox's client id there (`--inbox-client-id`).
    pub client_id: String,
    /// This server's resource URI (`--audience`), asked for as the token's audience.
    pub resource: String,
    /// Where the issuer sends the browser back: `{public}/approvals/oauth/callback`.
    pub redirect_uri: String,
}

/// A signed-in approver, signed into their cookie.
#[derive(Serialize, Deserialize)]
struct Session {
    caller: String,
    /// Approver by an OAuth token's scope (checked at sign-in) rather than by name.
    scoped: bool,
    csrf: String,
    /// Signed in with a static token: good only while a token of the caller's is in force
    /// (a line removed from the token file and SIGHUP end it).
    #[serde(default)]
    token: bool,
}

impl Inbox {
    /// The codec that seals sessions: under a key derived from the server's state key
    /// (`KYRO_STATE_KEY`, shared by replicas) so a session is good on each, and never the
    /// key that seals approval states; a session sealed under the key a rotation replaces
    /// (`KYRO_STATE_KEY_PREVIOUS`) still opens.
    pub(crate) fn codec(keys: &StateKeys) -> Result<RequestStateCodec, String> {
        keys.codec(|key| {
            let mut derived = Sha256::new();
            derived.update(b"kyro approvals inbox\0");
            derived.update(key);
            derived.finalize().to_vec()
        })
    }

    fn is_approver(&self, caller: &Caller, scoped: bool) -> bool {
        scoped || self.approvers.contains(caller)
    }

    /// The approver a bearer token names, or the refusal.
    async fn bearer(&self, headers: &HeaderMap) -> Result<Caller, Response> {
        let approving = identify_approving(&self.gate, headers).await?;
        let (caller, scoped) = (approving.caller, approving.scoped);
        if !self.is_approver(&caller, scoped) {
            return Err(refused(StatusCode::FORBIDDEN, &format!("{caller} is not an approver")));
        }
        Ok(caller)
    }

    /// The signed-in approver of a page request's cookie.
    fn session(&self, headers: &HeaderMap) -> Option<(Caller, Session)> {
        let sealed = cookie(headers, COOKIE_NAME)?;
        let session: Session = self.codec.open_json_with(&sealed, SEALED_FOR).ok()?;
        let caller = Caller::named(&session.caller).ok()?;
        if session.token {
            let callers = self.gate.callers();
            let held = callers.tokens.iter().flat_map(|t| t.iter()).any(|(_, c)| *c == caller);
            if !held {
                return None;
            }
        }
        self.is_approver(&caller, session.scoped).then_some((caller, session))
    }

    /// Whether a post came from the server's own pages: no `Origin` (not a browser's page)
    /// or one of the server's, and not marked cross-site.
    fn same_origin(&self, headers: &HeaderMap) -> bool {
        let site = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok());
        if matches!(site, Some("cross-site" | "same-site")) {
            return false;
        }
        match headers.get("origin").map(|v| v.to_str()) {
            None => true,
            Some(Ok(origin)) => self.origins.iter().any(|own| own.eq_ignore_ascii_case(origin)),
            Some(Err(_)) => false,
        }
    }

    /// `work` on the store, off the async threads (a store blocks; PostgreSQL's runs its
    /// own runtime).
    async fn on_store<T: Send + 'static>(
        &self,
        work: impl FnOnce(&dyn ApprovalStore) -> Result<T, DecideError> + Send + 'static,
    ) -> Result<T, DecideError> {
        let store = self.store.clone();
        tokio::task::spawn_blocking(move || work(store.as_ref()))
            .await
            .map_err(|e| DecideError::Store(e.to_string()))?
    }

    async fn reviews(&self) -> Result<Vec<Review>, Response> {
        self.on_store(|store| store.reviews(true, now_ms()).map_err(DecideError::Store))
            .await
            .map_err(|e| refused(StatusCode::SERVICE_UNAVAILABLE, &format!("the approval queue: {e}")))
    }

    async fn review(&self, id: &str) -> Result<Option<Review>, Response> {
        let id = id.to_owned();
        self.on_store(move |store| store.review(&id, now_ms()).map_err(DecideError::Store))
            .await
            .map_err(|e| refused(StatusCode::SERVICE_UNAVAILABLE, &format!("the approval queue: {e}")))
    }

    async fn decide(
        &self,
        id: &str,
        approve: bool,
        approver: Caller,
        reason: Option<&str>,
    ) -> Result<Review, Response> {
        let decided = Decided {
            approve,
            approver,
            reason: clean_reason(reason),
        };
        let id = id.to_owned();
        let decision = self.on_store(move |store| decide(store, &id, decided, now_ms())).await;
        decision.map_err(|e| {
            let status = match &e {
                DecideError::Unknown(_) => StatusCode::NOT_FOUND,
                DecideError::NotPending { .. } => StatusCode::CONFLICT,
                DecideError::OwnCall(_) | DecideError::TooLarge(_) => StatusCode::FORBIDDEN,
                DecideError::Store(_) => StatusCode::SERVICE_UNAVAILABLE,
            };
            refused(status, &e.to_string())
        })
    }
}

impl Inbox {
    /// Whether the page is reached over HTTPS: the public address says so, or a proxy in
    /// front does (`X-Forwarded-Proto`). Cookies are then `Secure`.
    pub(crate) fn serves_https(&self, request: &HeaderMap) -> bool {
        self.secure
            || request
                .get("x-forwarded-proto")
                .and_then(|v| v.to_str().ok())
                .is_some_and(|proto| proto.eq_ignore_ascii_case("https"))
    }

    /// The sign-in page, with the problem of the last attempt; the issuer offered when
    /// the inbox signs in through it.
    pub(crate) fn sign_in_page(&self, status: StatusCode, problem: Option<&str>) -> Response {
        #[cfg(feature = "oauth")]
        let through_issuer = self.oauth.is_some();
        #[cfg(not(feature = "oauth"))]
        let through_issuer = false;
        let title = if status.is_success() {
            "Sign in"
        } else {
            "Not signed in"
        };
        page(status, title, &sign_in(problem, through_issuer))
    }

    /// The session cookie of the approver the credentials in `bearer` name, or the page
    /// refusing them: signed under the inbox's key with a fresh CSRF token (never one the
    /// browser brought), for an hour and no longer than an OAuth token, `Secure` behind
    /// HTTPS (`request`'s `X-Forwarded-Proto`).
    pub(crate) async fn session_for(&self, bearer: &HeaderMap, request: &HeaderMap) -> Result<HeaderValue, Response> {
        let not_one = || self.sign_in_page(StatusCode::FORBIDDEN, Some("That token is not one."));
        let approving = identify_approving(&self.gate, bearer).await.map_err(|_| not_one())?;
        let (caller, scoped) = (approving.caller.clone(), approving.scoped);
        if !self.is_approver(&caller, scoped) {
            return Err(self.sign_in_page(StatusCode::FORBIDDEN, Some("That token's holder is not an approver.")));
        }
        let (Ok(one), Ok(two)) = (kyro_core::review::new_id(), kyro_core::review::new_id()) else {
            return Err(refused(StatusCode::SERVICE_UNAVAILABLE, "no randomness"));
        };
        let session = Session {
            caller: caller.name().to_owned(),
            scoped,
            csrf: format!("{one}{two}"),
            // A static token has no expiry; an OAuth token does.
            token: approving.expires_at_s.is_none(),
        };
        let left = approving
            .expires_at_s
            .map(|at| Duration::from_secs(at.saturating_sub(now_ms() / 1000)));
        let lasting = left.map_or(SESSION, |left| left.min(SESSION));
        if lasting.is_zero() {
            return Err(self.sign_in_page(StatusCode::FORBIDDEN, Some("That token has expired.")));
        }
        let options = SealOptions::new().associated_data(SEALED_FOR).ttl(lasting);
        let sealed = self
            .codec
            .seal_json_with(&session, &options)
            .map_err(|_| refused(StatusCode::SERVICE_UNAVAILABLE, "the session cannot be signed"))?;
        let secure = if self.serves_https(request) { "; Secure" } else { "" };
        let cookie = format!(
            "{COOKIE_NAME}={sealed}; Path=/approvals; HttpOnly; SameSite=Strict; Max-Age={}{secure}",
            lasting.as_secs()
        );
        HeaderValue::from_str(&cookie)
            .map_err(|_| refused(StatusCode::SERVICE_UNAVAILABLE, "the session cannot be set"))
    }
}

/// A refusal as JSON `{"error": ...}`.
fn refused(status: StatusCode, message: &str) -> Response {
    json(status, &serde_json::json!({ "error": message }))
}

/// `value` as a JSON answer.
fn json(status: StatusCode, value: &impl Serialize) -> Response {
    let body = serde_json::to_string(value).unwrap_or_default();
    (
        status,
        [(CONTENT_TYPE, "application/json"), (CACHE_CONTROL, "no-store")],
        body,
    )
        .into_response()
}

/// The value of the cookie `name` in the request's `Cookie` headers.
pub(crate) fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(found, _)| *found == name)
        .map(|(_, value)| value.to_owned())
}

/// The fields of a form body.
fn form(body: &[u8]) -> Vec<(String, String)> {
    form_urlencoded::parse(body).into_owned().collect()
}

fn field<'a>(fields: &'a [(String, String)], name: &str) -> Option<&'a str> {
    fields.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
}

/// `GET /approvals.json`: the pending calls, for an approver's bearer token.
pub(crate) async fn list_json(State(inbox): State<Arc<Inbox>>, headers: HeaderMap) -> Response {
    let approver = match inbox.bearer(&headers).await {
        Ok(approver) => approver,
        Err(refusal) => return refusal,
    };
    match inbox.reviews().await {
        Ok(mut reviews) => {
            let more = reviews.len().saturating_sub(SHOWN);
            reviews.truncate(SHOWN);
            json(
                StatusCode::OK,
                &serde_json::json!({ "approver": approver, "approvals": reviews, "more": more }),
            )
        }
        Err(refusal) => refusal,
    }
}

/// `POST /approvals/{id}/approve` or `/deny`: with a bearer token, a JSON body and a JSON
/// answer; from the page, a form carrying the session's CSRF token, answered by the page.
pub(crate) async fn decide_post(
    State(inbox): State<Arc<Inbox>>,
    Path((id, verb)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let approve = match verb.as_str() {
        "approve" => true,
        "deny" => false,
        _ => {
            return refused(
                StatusCode::NOT_FOUND,
                "post to /approvals/ID/approve or /approvals/ID/deny",
            );
        }
    };
    if headers.contains_key(axum::http::header::AUTHORIZATION) {
        let approver = match inbox.bearer(&headers).await {
            Ok(approver) => approver,
            Err(refusal) => return refusal,
        };
        #[derive(Deserialize, Default)]
        #[serde(deny_unknown_fields)]
        struct Body {
            reason: Option<String>,
        }
        let body: Body = if body.iter().all(u8::is_ascii_whitespace) {
            Body::default()
        } else {
            match serde_json::from_slice(&body) {
                Ok(body) => body,
                Err(e) => {
                    return refused(
                        StatusCode::BAD_REQUEST,
                        &format!("the body must be {{\"reason\": TEXT}}: {e}"),
                    );
                }
            }
        };
        return match inbox.decide(&id, approve, approver, body.reason.as_deref()).await {
            Ok(review) => json(StatusCode::OK, &review),
            Err(refusal) => refusal,
        };
    }
    // From the page: same origin, signed in, the session's CSRF token.
    let Some((approver, session)) = inbox.session(&headers) else {
        return inbox.sign_in_page(StatusCode::FORBIDDEN, None);
    };
    let fields = form(&body);
    if !inbox.same_origin(&headers) || !csrf_ok(&session, field(&fields, "csrf")) {
        return page(
            StatusCode::FORBIDDEN,
            "Refused",
            "<p>This form did not come from this inbox's own page. Nothing was decided.</p>",
        );
    }
    match inbox.decide(&id, approve, approver, field(&fields, "reason")).await {
        Ok(_) => see_other("/approvals"),
        Err(refusal) => {
            let status = refusal.status();
            let message = match status {
                StatusCode::CONFLICT => "It was decided already, ran or expired.",
                StatusCode::NOT_FOUND => "No such approval.",
                StatusCode::FORBIDDEN => {
                    "You made this call, or it is too large to be shown whole; it cannot be approved here."
                }
                _ => "The approval queue cannot be reached now.",
            };
            page(
                status,
                "Not decided",
                &format!("<p>{message}</p><p><a href=\"/approvals\">Back to the inbox</a></p>"),
            )
        }
    }
}

fn csrf_ok(session: &Session, given: Option<&str>) -> bool {
    given.is_some_and(|given| bool::from(given.as_bytes().ct_eq(session.csrf.as_bytes())))
}

/// `POST /approvals/sign-in`: a form with an approver's token; a fresh sealed session in
/// the cookie (never one the browser brought).
pub(crate) async fn sign_in_post(State(inbox): State<Arc<Inbox>>, headers: HeaderMap, body: Bytes) -> Response {
    if !inbox.same_origin(&headers) {
        return page(
            StatusCode::FORBIDDEN,
            "Refused",
            "<p>Sign in from this inbox's own page.</p>",
        );
    }
    let fields = form(&body);
    let token = field(&fields, "token").unwrap_or_default().trim();
    let mut bearer = HeaderMap::new();
    match HeaderValue::from_str(&format!("Bearer {token}")) {
        Ok(value) if !token.is_empty() => bearer.insert(axum::http::header::AUTHORIZATION, value),
        _ => return inbox.sign_in_page(StatusCode::FORBIDDEN, Some("That token is not one.")),
    };
    match inbox.session_for(&bearer, &headers).await {
        Ok(cookie) => {
            let mut answer = see_other("/approvals");
            answer.headers_mut().insert(SET_COOKIE, cookie);
            answer
        }
        Err(refusal) => refusal,
    }
}

/// `POST /approvals/sign-out`: the cookie cleared.
pub(crate) async fn sign_out_post(State(inbox): State<Arc<Inbox>>, headers: HeaderMap, body: Bytes) -> Response {
    let fields = form(&body);
    let valid = inbox
        .session(&headers)
        .is_some_and(|(_, session)| csrf_ok(&session, field(&fields, "csrf")));
    if !inbox.same_origin(&headers) || !valid {
        return page(
            StatusCode::FORBIDDEN,
            "Refused",
            "<p>Sign out from this inbox's own page.</p>",
        );
    }
    let mut answer = see_other("/approvals");
    answer.headers_mut().insert(
        SET_COOKIE,
        HeaderValue::from_static("kyro_inbox=; Path=/approvals; HttpOnly; SameSite=Strict; Max-Age=0"),
    );
    answer
}

/// `GET /approvals`: the pending calls, or the sign-in form.
pub(crate) async fn list_page(State(inbox): State<Arc<Inbox>>, headers: HeaderMap) -> Response {
    let Some((approver, session)) = inbox.session(&headers) else {
        return inbox.sign_in_page(StatusCode::OK, None);
    };
    let reviews = match inbox.reviews().await {
        Ok(reviews) => reviews,
        Err(refusal) => return refusal,
    };
    let mut body = signed_in(&approver, &session.csrf);
    if reviews.is_empty() {
        body.push_str("<p>No calls are waiting for review.</p>");
    }
    for review in reviews.iter().take(SHOWN) {
        body.push_str(&card(review, &approver, &session.csrf));
    }
    if reviews.len() > SHOWN {
        let _ = write!(
            body,
            "<p>{} more calls wait; decide these first.</p>",
            reviews.len() - SHOWN
        );
    }
    page(StatusCode::OK, "Calls waiting for review", &body)
}

/// `GET /approvals/{id}`: one call (the address a waiting call's answer names).
pub(crate) async fn one_page(State(inbox): State<Arc<Inbox>>, Path(id): Path<String>, headers: HeaderMap) -> Response {
    let Some((approver, session)) = inbox.session(&headers) else {
        return inbox.sign_in_page(StatusCode::OK, None);
    };
    match inbox.review(&id).await {
        Ok(Some(review)) => {
            let mut body = signed_in(&approver, &session.csrf);
            body.push_str(&card(&review, &approver, &session.csrf));
            body.push_str("<p><a href=\"/approvals\">Every waiting call</a></p>");
            page(StatusCode::OK, &format!("{} by {}", review.tool, review.caller), &body)
        }
        Ok(None) => page(
            StatusCode::NOT_FOUND,
            "No such approval",
            "<p><a href=\"/approvals\">Back</a></p>",
        ),
        Err(refusal) => refusal,
    }
}

fn see_other(to: &'static str) -> Response {
    (StatusCode::SEE_OTHER, [(LOCATION, to), (CACHE_CONTROL, "no-store")]).into_response()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_session_cookie_is_read_among_others_and_by_its_exact_name() {
        let mut headers = axum::http::HeaderMap::new();
        headers.insert(
            axum::http::header::COOKIE,
            "a=1; kyro_inbox_x=2; kyro_inbox=sealed; b=3".parse().unwrap(),
        );
        assert_eq!(super::cookie(&headers, super::COOKIE_NAME).as_deref(), Some("sealed"));
    }
}
