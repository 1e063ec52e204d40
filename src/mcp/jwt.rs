//! Checking an access token: its signature against the issuer's JWKS (fetched, cached and
//! fetched again on an unknown `kid` at a bounded rate), its claims against the resource
//! server's settings, its scopes against the policies by scope set.

use std::collections::BTreeSet;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::Value;

use super::oauth::{OAuth, ScopePolicy, checked_url, split_origin};

/// The algorithms a token may be signed with: asymmetric ones only. A JWKS publishes public
/// keys, and an `HS256` token checked with one as its secret could be made by anyone who
/// read the JWKS; `none` is not an algorithm jsonwebtoken accepts at all.
const ALGORITHMS: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// Clock skew tolerated on `exp` and `nbf`, in seconds.
const LEEWAY_S: u64 = 30;
/// How long fetched keys are used before the next token makes kyro fetch them again.
const KEYS_FRESH: Duration = Duration::from_secs(15 * 60);
/// An unknown `kid` (the issuer rotated its keys) fetches the JWKS again, at most this often
/// whatever the tokens sent: a flood of made-up `kid`s costs the issuer six requests a
/// minute, and a key first used within this long of the last fetch waits that long.
const REFETCH_AT_MOST_EVERY: Duration = Duration::from_secs(10);
/// A JWKS or metadata document is read up to this size.
const MOST_BYTES: u64 = 256 * 1024;
/// A fetch from the issuer ends after this long.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a request's token is not taken.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// No `Authorization: Bearer` at all.
    Missing,
    /// A token that is not a valid access token for this server (401 `invalid_token`).
    Invalid(String),
    /// A valid token without the scopes of any policy (403 `insufficient_scope`).
    Scope(String),
    /// The issuer's keys could not be fetched (503).
    Unavailable(String),
}

/// The OAuth scope that makes a token's subject an approver (the approvals inbox).
pub(crate) const APPROVE_SCOPE: &str = "kyro:approve";

/// A token taken: its subject and the policy its scopes chose (`None`: the server's).
pub(crate) struct Verified {
    pub subject: String,
    pub role: Option<Arc<str>>,
    /// The token holds the scope `kyro:approve`: its subject decides calls under review.
    pub approves: bool,
    /// When the token expires, in seconds since the Unix epoch.
    pub expires_at_s: u64,
}

/// The claims kyro reads; `iss`, `aud`, `exp` and `nbf` are checked by jsonwebtoken.
#[derive(serde::Deserialize)]
struct Claims {
    sub: String,
    /// When the token expires, in seconds since the Unix epoch (required, checked).
    exp: u64,
    /// Space-separated scopes (RFC 8693, RFC 9068).
    #[serde(default)]
    scope: Option<String>,
    /// Scopes as some providers send them (Okta, Microsoft): a list, or one string.
    #[serde(default)]
    scp: Option<Scp>,
}

#[derive(serde::Deserialize)]
#[serde(untagged)]
enum Scp {
    List(Vec<String>),
    Text(String),
}

/// The issuer's keys as last fetched.
#[derive(Default)]
struct Keys {
    keys: Vec<Key>,
    fetched: Option<Instant>,
    /// Why the last fetch failed, when it did.
    problem: Option<String>,
}

#[derive(Clone)]
struct Key {
    kid: Option<String>,
    alg: Option<Algorithm>,
    key: DecodingKey,
}

/// Checks access tokens: the settings and the issuer's keys.
pub(crate) struct Verifier {
    config: OAuth,
    keys: RwLock<Arc<Keys>>,
    /// The last fetch attempt; held while fetching, so one fetch runs at a time.
    fetching: tokio::sync::Mutex<Option<Instant>>,
}

impl Verifier {
    pub(crate) fn new(config: OAuth) -> Verifier {
        Verifier {
            config,
            keys: RwLock::default(),
            fetching: tokio::sync::Mutex::new(None),
        }
    }

    pub(crate) fn config(&self) -> &OAuth {
        &self.config
    }

    /// The subject and policy of `token`, or why it is refused.
    pub(crate) async fn verify(&self, token: &str) -> Result<Verified, Refusal> {
        let header =
            jsonwebtoken::decode_header(token).map_err(|e| Refusal::Invalid(format!("not a signed JWT ({e})")))?;
        if !ALGORITHMS.contains(&header.alg) {
            return Err(Refusal::Invalid(format!(
                "the token is signed with {:?}; accepted: RS, PS and ES algorithms and EdDSA",
                header.alg
            )));
        }
        let key = self.key_for(header.kid.as_deref(), header.alg).await?;
        let mut validation = Validation::new(header.alg);
        validation.leeway = LEEWAY_S;
        validation.validate_nbf = true;
        validation.set_issuer(&[&self.config.issuer]);
        validation.set_audience(&[&self.config.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        let claims = jsonwebtoken::decode::<Claims>(token, &key, &validation)
            .map_err(|e| Refusal::Invalid(reason(&e, &self.config.audience, &self.config.issuer)))?
            .claims;
        let mut scopes: BTreeSet<String> = claims
            .scope
            .as_deref()
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        match claims.scp {
            Some(Scp::List(list)) => scopes.extend(list),
            Some(Scp::Text(text)) => scopes.extend(text.split_whitespace().map(str::to_owned)),
            None => {}
        }
        let role = self.role_for(&scopes)?;
        Ok(Verified {
            subject: claims.sub,
            role,
            approves: scopes.contains(APPROVE_SCOPE),
            expires_at_s: claims.exp,
        })
    }

    /// The policy of the largest scope set the token holds (the first given among equals);
    /// with no scope policies, the server's.
    fn role_for(&self, held: &BTreeSet<String>) -> Result<Option<Arc<str>>, Refusal> {
        let policies = &self.config.scope_policies;
        if policies.is_empty() {
            return Ok(None);
        }
        let mut best: Option<&ScopePolicy> = None;
        for policy in policies.iter().filter(|p| p.scopes.is_subset(held)) {
            if best.is_none_or(|b| policy.scopes.len() > b.scopes.len()) {
                best = Some(policy);
            }
        }
        match best {
            Some(policy) => Ok(Some(policy.role())),
            None => {
                let smallest = policies.iter().min_by_key(|p| p.scopes.len()).expect("not empty");
                Err(Refusal::Scope(
                    smallest.scopes.iter().cloned().collect::<Vec<_>>().join(" "),
                ))
            }
        }
    }

    /// The key for a token's `kid` and algorithm: from the keys held while fresh, else
    /// fetched again (at most every [`REFETCH_AT_MOST_EVERY`], one fetch at a time).
    async fn key_for(&self, kid: Option<&str>, alg: Algorithm) -> Result<DecodingKey, Refusal> {
        let held = self.held();
        let fresh = held.fetched.is_some_and(|at| at.elapsed() < KEYS_FRESH);
        // A key held for this kid serves without waiting: fresh, or the last the issuer
        // gave while it cannot be reached (the refresher keeps trying meanwhile).
        if (fresh || held.problem.is_some())
            && let Some(key) = pick(&held, kid, alg)
        {
            return Ok(key);
        }
        let mut last = self.fetching.lock().await;
        // Another request may have fetched them while this one waited.
        let held = self.held();
        if held.fetched.is_some_and(|at| at.elapsed() < KEYS_FRESH)
            && let Some(key) = pick(&held, kid, alg)
        {
            return Ok(key);
        }
        if last.is_none_or(|at| at.elapsed() >= REFETCH_AT_MOST_EVERY) {
            *last = Some(Instant::now());
            match self.fetch().await {
                Ok(keys) => {
                    *self.keys.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(keys);
                }
                // Keys fetched before stay in use while the issuer is unreachable.
                Err(problem) if held.keys.is_empty() => return Err(Refusal::Unavailable(problem)),
                Err(_) => {}
            }
        }
        drop(last);
        pick(&self.held(), kid, alg).ok_or_else(|| {
            Refusal::Invalid(match kid {
                Some(kid) => format!(
                    "no key of the issuer's JWKS has kid `{}` for {alg:?}",
                    kid.escape_debug()
                ),
                None => "the token names no kid and the issuer's JWKS has not exactly one key for it".to_owned(),
            })
        })
    }

    /// Whether a key of the issuer's is held, so that tokens can be checked.
    pub(crate) fn keys_held(&self) -> bool {
        !self.held().keys.is_empty()
    }

    /// Why the last fetch of the keys failed (or that none was tried yet).
    pub(crate) fn last_problem(&self) -> String {
        self.held()
            .problem
            .clone()
            .unwrap_or_else(|| "not fetched yet".to_owned())
    }

    /// Fetches the issuer's keys at start and again before they go stale (every
    /// [`KEYS_FRESH`]), or every [`REFETCH_AT_MOST_EVERY`] while they cannot be had, each
    /// failure a line on stderr; keys fetched before stay in use meanwhile. Runs until the
    /// process ends.
    pub(crate) async fn keep_fresh(self: Arc<Self>) {
        loop {
            let wait = {
                let mut last = self.fetching.lock().await;
                *last = Some(Instant::now());
                match self.fetch().await {
                    Ok(keys) => {
                        *self.keys.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(keys);
                        // Fetched again before they go stale.
                        KEYS_FRESH / 2
                    }
                    Err(problem) => {
                        let held = self.held();
                        kyro_core::log::line(
                            kyro_core::log::Level::Warn,
                            &format!("the issuer's keys cannot be fetched: {problem}"),
                            &[
                                ("issuer", self.config.issuer.as_str().into()),
                                ("keys_held", held.keys.len().into()),
                            ],
                        );
                        *self.keys.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(Keys {
                            keys: held.keys.clone(),
                            fetched: held.fetched,
                            problem: Some(problem),
                        });
                        REFETCH_AT_MOST_EVERY
                    }
                }
            };
            tokio::time::sleep(wait).await;
        }
    }

    fn held(&self) -> Arc<Keys> {
        self.keys.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The issuer's keys, fetched now (found through its metadata when no JWKS URI was
    /// given).
    async fn fetch(&self) -> Result<Keys, String> {
        let (issuer, jwks_uri) = (self.config.issuer.clone(), self.config.jwks_uri.clone());
        let fetched = tokio::task::spawn_blocking(move || -> Result<Value, String> {
            let uri = match jwks_uri {
                Some(uri) => uri,
                None => discover(&issuer)?,
            };
            get_json(&uri)
        })
        .await
        .map_err(|e| e.to_string())??;
        let listed = fetched
            .get("keys")
            .and_then(Value::as_array)
            .ok_or("the issuer's JWKS has no `keys` list")?;
        let keys: Vec<Key> = listed.iter().filter_map(usable).collect();
        if keys.is_empty() {
            return Err("the issuer's JWKS has no public signing key kyro can use".into());
        }
        Ok(Keys {
            keys,
            fetched: Some(Instant::now()),
            problem: None,
        })
    }
}

/// A JWK kyro can check signatures with: a public RSA, EC or OKP key for signing. A
/// symmetric (`oct`) key never is, nor a key marked for encryption.
fn usable(value: &Value) -> Option<Key> {
    let jwk: Jwk = serde_json::from_value(value.clone()).ok()?;
    if matches!(jwk.common.public_key_use, Some(ref u) if *u != PublicKeyUse::Signature) {
        return None;
    }
    if !matches!(
        jwk.algorithm,
        AlgorithmParameters::RSA(_) | AlgorithmParameters::EllipticCurve(_) | AlgorithmParameters::OctetKeyPair(_)
    ) {
        return None;
    }
    let alg = match jwk.common.key_algorithm {
        Some(alg) => Some(alg.to_string().parse::<Algorithm>().ok()?),
        None => None,
    };
    Some(Key {
        kid: jwk.common.key_id.clone(),
        alg,
        key: DecodingKey::from_jwk(&jwk).ok()?,
    })
}

/// The key for `kid` (or, without one, the only key), when its own algorithm (if it names
/// one) is the token's.
fn pick(keys: &Keys, kid: Option<&str>, alg: Algorithm) -> Option<DecodingKey> {
    let fits = |k: &&Key| k.alg.is_none_or(|a| a == alg);
    match kid {
        Some(kid) => keys.keys.iter().filter(fits).find(|k| k.kid.as_deref() == Some(kid)),
        None if keys.keys.len() == 1 => keys.keys.iter().find(fits),
        None => None,
    }
    .map(|k| k.key.clone())
}

/// The JWKS URI of `issuer`'s metadata.
fn discover(issuer: &str) -> Result<String, String> {
    let (url, metadata) = metadata(issuer)?;
    match metadata["jwks_uri"].as_str() {
        Some(uri) => checked_url("jwks_uri", uri).map(|()| uri.to_owned()),
        None => Err(format!("{url} names no jwks_uri")),
    }
}

/// The authorization and token endpoints of `issuer`'s metadata (the approvals inbox's
/// sign-in through the issuer).
pub(crate) fn endpoints(issuer: &str) -> Result<(String, String), String> {
    let (url, metadata) = metadata(issuer)?;
    let endpoint = |name: &str| match metadata[name].as_str() {
        Some(uri) => checked_url(name, uri).map(|()| uri.to_owned()),
        None => Err(format!("{url} names no {name}")),
    };
    Ok((endpoint("authorization_endpoint")?, endpoint("token_endpoint")?))
}

/// `issuer`'s metadata, and where it was found: RFC 8414's well-known URI (inserted before
/// the issuer's path), else OpenID Connect discovery's (appended). The metadata must name
/// the same issuer (RFC 8414 §3.3).
fn metadata(issuer: &str) -> Result<(String, Value), String> {
    let (origin, path) = split_origin(issuer);
    let path = path.trim_end_matches('/');
    let candidates = [
        format!("{origin}/.well-known/oauth-authorization-server{path}"),
        format!("{origin}{path}/.well-known/openid-configuration"),
    ];
    let mut problems = Vec::new();
    for url in candidates {
        match get_json(&url) {
            Ok(metadata) if metadata["issuer"].as_str() == Some(issuer) => return Ok((url, metadata)),
            Ok(_) => problems.push(format!("{url} names another issuer")),
            Err(problem) => problems.push(problem),
        }
    }
    Err(format!("the issuer's metadata: {}", problems.join("; ")))
}

/// A JSON document by GET, within [`FETCH_TIMEOUT`] and [`MOST_BYTES`], redirects not
/// followed.
fn get_json(url: &str) -> Result<Value, String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .timeout_global(Some(FETCH_TIMEOUT))
        .build()
        .into();
    let mut response = agent.get(url).call().map_err(|e| format!("{url}: {e}"))?;
    if response.status() != 200 {
        return Err(format!("{url}: HTTP {}", response.status()));
    }
    let body = response
        .body_mut()
        .with_config()
        .limit(MOST_BYTES)
        .read_to_vec()
        .map_err(|e| format!("{url}: {e}"))?;
    serde_json::from_slice(&body).map_err(|e| format!("{url}: not JSON ({e})"))
}

/// The `error_description` of every `invalid_token` challenge: fixed, since the reason may
/// quote the token; the response body gives the reason.
const INVALID_TOKEN: &str = "the access token was refused; the response body says why";

/// The answer to a refused request: 401 with a `Bearer` challenge naming the resource
/// metadata (and `invalid_token` when a token came), 403 `insufficient_scope` naming the
/// scopes wanted, or 503 while the issuer's keys cannot be had.
pub(crate) fn refused(config: &OAuth, refusal: Refusal) -> axum::response::Response {
    use axum::http::StatusCode;
    use axum::http::header::WWW_AUTHENTICATE;
    use axum::response::IntoResponse;
    let metadata = format!("resource_metadata=\"{}\"", config.metadata_url());
    let (status, challenge, message) = match refusal {
        Refusal::Missing => (
            StatusCode::UNAUTHORIZED,
            format!("Bearer {metadata}"),
            format!(
                "kyro: send `Authorization: Bearer <access token>` from {} (see {})",
                config.issuer,
                config.metadata_url()
            ),
        ),
        // Why a token was refused may quote the token (its `kid`, its subject): it goes in
        // the body only, never in a header, where a CR or LF would turn the 401 into a 500.
        Refusal::Invalid(why) => (
            StatusCode::UNAUTHORIZED,
            format!("Bearer error=\"invalid_token\", error_description=\"{INVALID_TOKEN}\", {metadata}"),
            format!("kyro: {why}"),
        ),
        Refusal::Scope(needed) => (
            StatusCode::FORBIDDEN,
            format!("Bearer error=\"insufficient_scope\", scope=\"{needed}\", {metadata}"),
            format!("kyro: the token holds none of the scope sets this server serves; ask for `{needed}`"),
        ),
        Refusal::Unavailable(why) => {
            let message = format!("kyro: the issuer's keys cannot be fetched now: {why}");
            return (StatusCode::SERVICE_UNAVAILABLE, message + "\n").into_response();
        }
    };
    (status, [(WWW_AUTHENTICATE, challenge)], message + "\n").into_response()
}

/// Why jsonwebtoken refused a token, in words a client's developer can act on.
fn reason(error: &jsonwebtoken::errors::Error, audience: &str, issuer: &str) -> String {
    use jsonwebtoken::errors::ErrorKind as K;
    match error.kind() {
        K::ExpiredSignature => "the token has expired".into(),
        K::ImmatureSignature => "the token is not valid yet (nbf)".into(),
        K::InvalidAudience => format!("the token is not meant for this server: its `aud` must name {audience}"),
        K::InvalidIssuer => format!("the token is from another issuer: its `iss` must be {issuer}"),
        K::InvalidSignature => "the token's signature does not verify".into(),
        K::MissingRequiredClaim(claim) => format!("the token has no `{claim}` claim"),
        K::InvalidAlgorithm => "the token's algorithm does not fit the key".into(),
        other => format!("the token is not valid ({other:?})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_for_another_audience_or_issuer_is_told_the_one_this_server_takes() {
        use jsonwebtoken::errors::{Error, ErrorKind};
        let (audience, issuer) = ("https://tools.example/mcp", "https://id.example");
        let said = |kind: ErrorKind| reason(&Error::from(kind), audience, issuer);
        assert!(said(ErrorKind::InvalidAudience).ends_with("its `aud` must name https://tools.example/mcp"));
        assert!(said(ErrorKind::InvalidIssuer).ends_with("its `iss` must be https://id.example"));
    }

    #[test]
    fn a_token_takes_the_policy_of_the_largest_scope_set_it_holds() {
        let oauth = OAuth::new("https://id.example", "https://t.example/mcp")
            .unwrap()
            .scope_policy("kyro:read", "read.toml".into())
            .unwrap()
            .scope_policy("kyro:write kyro:read", "write.toml".into())
            .unwrap();
        assert!(oauth.clone().scope_policy("", "x.toml".into()).is_err());
        assert!(oauth.clone().scope_policy("a\"b", "x.toml".into()).is_err());
        let verifier = Verifier::new(oauth);
        let held = |s: &str| s.split_whitespace().map(str::to_owned).collect::<BTreeSet<_>>();
        let role = |s: &str| verifier.role_for(&held(s)).map(|r| r.unwrap().to_string());
        assert_eq!(role("kyro:read openid").unwrap(), "scopes:kyro:read");
        assert_eq!(role("kyro:read kyro:write").unwrap(), "scopes:kyro:read kyro:write");
        assert!(matches!(role("kyro:write"), Err(Refusal::Scope(s)) if s == "kyro:read"));
        assert!(matches!(role(""), Err(Refusal::Scope(_))));
    }
}
