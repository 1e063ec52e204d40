//! Signing in to the approvals inbox through the issuer (`--issuer` with
//! `--inbox-client-id`): OAuth 2.1's authorization code with PKCE (S256), the inbox a
//! public client of the issuer. `GET /approvals/oauth/start` sends the browser to the
//! issuer's authorization endpoint with a fresh `state` and code challenge, both kept in a
//! short-lived signed cookie; the issuer sends it back to `/approvals/oauth/callback`,
//! where the state is checked, the code exchanged for an access token at the token
//! endpoint (with the verifier), and the token taken as any bearer token is: the issuer's
//! signature, this resource as its audience, and an approver (`--approvers`, or the scope
//! `kyro:approve`). Then the inbox's own session cookie is set, as a token sign-in sets it.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::header::{LOCATION, SET_COOKIE};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use rmcp::model::SealOptions;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::mcp::inbox::{Inbox, cookie, escape, page};

/// The cookie carrying one sign-in's state and verifier to the callback.
const PKCE_COOKIE: &str = "kyro_inbox_pkce";
/// How long a sign-in at the issuer may take.
const PKCE_LIFETIME: Duration = Duration::from_secs(10 * 60);
/// Associated data of a sealed sign-in: no other sealed value opens as one.
const SEALED_FOR: &[u8] = b"kyro approvals inbox pkce";
/// How long the token endpoint may take.
const TOKEN_TIMEOUT: Duration = Duration::from_secs(10);
/// Sign-ins talking to the issuer at once, at most: the routes answer anyone, and each
/// costs a request to the issuer on a blocking thread.
const AT_ONCE: usize = 4;

/// The issuer's authorization and token endpoints, read from its metadata once.
static ENDPOINTS: tokio::sync::OnceCell<(String, String)> = tokio::sync::OnceCell::const_new();
/// Sign-ins talking to the issuer now.
static TALKING: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(AT_ONCE);

/// The issuer's endpoints, read once (one reading at a time; a failed one is tried again
/// at the next sign-in).
async fn endpoints(issuer: &str) -> Result<(String, String), String> {
    let issuer = issuer.to_owned();
    ENDPOINTS
        .get_or_try_init(|| async move {
            tokio::task::spawn_blocking(move || crate::mcp::jwt::endpoints(&issuer))
                .await
                .map_err(|e| e.to_string())?
        })
        .await
        .cloned()
}

/// Clears the sign-in's cookie: a state is good for one callback.
fn cleared(mut answer: Response) -> Response {
    answer.headers_mut().append(
        SET_COOKIE,
        HeaderValue::from_static("kyro_inbox_pkce=; Path=/approvals/oauth; HttpOnly; SameSite=Lax; Max-Age=0"),
    );
    answer
}

/// One sign-in under way, sealed in its cookie.
#[derive(Serialize, Deserialize)]
struct Pending {
    state: String,
    verifier: String,
}

fn random_hex(bytes: usize) -> Option<String> {
    let mut random = vec![0u8; bytes];
    getrandom::fill(&mut random).ok()?;
    Some(random.iter().map(|b| format!("{b:02x}")).collect())
}

fn failed(message: &str) -> Response {
    page(
        StatusCode::FORBIDDEN,
        "Not signed in",
        &format!(
            "<p>{}</p><p><a href=\"/approvals\">Back to the inbox</a></p>",
            escape(message)
        ),
    )
}

/// `GET /approvals/oauth/start`: to the issuer, with a fresh state and PKCE challenge.
pub(crate) async fn start(State(inbox): State<Arc<Inbox>>, headers: HeaderMap) -> Response {
    let Some(oauth) = &inbox.oauth else {
        return failed("This inbox signs in with tokens only.");
    };
    let (Some(state), Some(verifier)) = (random_hex(16), random_hex(32)) else {
        return failed("No randomness for a sign-in.");
    };
    let challenge = B64.encode(Sha256::digest(verifier.as_bytes()));
    let Ok(_talking) = TALKING.try_acquire() else {
        return failed("Too many sign-ins at once; try again in a moment.");
    };
    let Ok((authorize, _)) = endpoints(&oauth.issuer).await else {
        return failed("The issuer's metadata cannot be read now.");
    };
    let query = form_urlencoded::Serializer::new(String::new())
        .append_pair("response_type", "code")
        .append_pair("client_id", &oauth.client_id)
        .append_pair("redirect_uri", &oauth.redirect_uri)
        .append_pair("scope", crate::mcp::jwt::APPROVE_SCOPE)
        .append_pair("state", &state)
        .append_pair("code_challenge", &challenge)
        .append_pair("code_challenge_method", "S256")
        .append_pair("resource", &oauth.resource)
        .finish();
    let separator = if authorize.contains('?') { '&' } else { '?' };
    let options = SealOptions::new().associated_data(SEALED_FOR).ttl(PKCE_LIFETIME);
    let Ok(sealed) = inbox.codec.seal_json_with(&Pending { state, verifier }, &options) else {
        return failed("The sign-in cannot be signed.");
    };
    // Lax: the issuer's redirect back is a navigation from another site. Secure as the
    // session cookie is.
    let secure = if inbox.serves_https(&headers) { "; Secure" } else { "" };
    let cookie = format!(
        "{PKCE_COOKIE}={sealed}; Path=/approvals/oauth; HttpOnly; SameSite=Lax; Max-Age={}{secure}",
        PKCE_LIFETIME.as_secs()
    );
    let (Ok(location), Ok(cookie)) = (
        HeaderValue::from_str(&format!("{authorize}{separator}{query}")),
        HeaderValue::from_str(&cookie),
    ) else {
        return failed("The issuer's address is not usable.");
    };
    (StatusCode::FOUND, [(LOCATION, location), (SET_COOKIE, cookie)]).into_response()
}

/// `GET /approvals/oauth/callback?code=...&state=...`: the state checked against the
/// sign-in's cookie, the code exchanged with the verifier, the token taken, the session set.
pub(crate) async fn callback(State(inbox): State<Arc<Inbox>>, uri: Uri, headers: HeaderMap) -> Response {
    cleared(signed_in_through_issuer(&inbox, &uri, &headers).await)
}

async fn signed_in_through_issuer(inbox: &Inbox, uri: &Uri, headers: &HeaderMap) -> Response {
    let Some(oauth) = &inbox.oauth else {
        return failed("This inbox signs in with tokens only.");
    };
    let query: Vec<(String, String)> = form_urlencoded::parse(uri.query().unwrap_or_default().as_bytes())
        .into_owned()
        .collect();
    let field = |name: &str| query.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
    let sealed = cookie(headers, PKCE_COOKIE);
    let pending: Option<Pending> = sealed.and_then(|s| inbox.codec.open_json_with(&s, SEALED_FOR).ok());
    let (Some(pending), Some(state), Some(code)) = (pending, field("state"), field("code")) else {
        return failed("This sign-in was not started here, or took too long; start again.");
    };
    if !bool::from(state.as_bytes().ct_eq(pending.state.as_bytes())) {
        return failed("This sign-in was not started here; start again.");
    }
    let exchange = {
        let (issuer, client_id, redirect_uri) = (
            oauth.issuer.clone(),
            oauth.client_id.clone(),
            oauth.redirect_uri.clone(),
        );
        let resource = oauth.resource.clone();
        tokio::task::spawn_blocking(move || {
            let (_, token_endpoint) = crate::mcp::jwt::endpoints(&issuer)?;
            let form = form_urlencoded::Serializer::new(String::new())
                .append_pair("grant_type", "authorization_code")
                .append_pair("code", &code)
                .append_pair("redirect_uri", &redirect_uri)
                .append_pair("client_id", &client_id)
                .append_pair("code_verifier", &pending.verifier)
                .append_pair("resource", &resource)
                .finish();
            token(&token_endpoint, &form)
        })
    };
    let access_token = match exchange.await {
        Ok(Ok(token)) => token,
        Ok(Err(why)) => return failed(&format!("The issuer did not give a token: {why}.")),
        Err(_) => return failed("The issuer did not give a token."),
    };
    let mut bearer = HeaderMap::new();
    let Ok(value) = HeaderValue::from_str(&format!("Bearer {access_token}")) else {
        return failed("The issuer's token is not usable.");
    };
    bearer.insert(axum::http::header::AUTHORIZATION, value);
    let cookie = match inbox.session_for(&bearer, headers).await {
        Ok(cookie) => cookie,
        Err(refusal) => return refusal,
    };
    // A page, not a redirect: the session cookie is `SameSite=Strict`, and a redirect
    // chain that began at the issuer would not carry it to the inbox.
    let mut answer = page(
        StatusCode::OK,
        "Signed in",
        "<p><a href=\"/approvals\" autofocus>Continue to the inbox</a></p>",
    );
    answer.headers_mut().append(SET_COOKIE, cookie);
    answer
}

/// The access token the token endpoint gives for `form`.
fn token(endpoint: &str, form: &str) -> Result<String, String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .timeout_global(Some(TOKEN_TIMEOUT))
        .build()
        .into();
    let mut answer = agent
        .post(endpoint)
        .header("Content-Type", "application/x-www-form-urlencoded")
        .header("Accept", "application/json")
        .send(form)
        .map_err(|e| e.to_string())?;
    let status = answer.status();
    let body = answer
        .body_mut()
        .with_config()
        .limit(64 * 1024)
        .read_to_vec()
        .map_err(|e| e.to_string())?;
    if !status.is_success() {
        return Err(format!("HTTP {status}"));
    }
    let body: serde_json::Value = serde_json::from_slice(&body).map_err(|e| format!("not JSON: {e}"))?;
    body["access_token"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| "no access_token".to_owned())
}
