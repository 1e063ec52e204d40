//! Who may use `kyro mcp --http`: the holder of a bearer token. Any local process can
//! reach a loopback port, and a client that can call `run_command` and answer its own
//! approval prompt could run anything; the token keeps the server to the client it was
//! given to. `--no-auth` opts out, loopback only, and says so.

use std::path::Path;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header::{AUTHORIZATION, WWW_AUTHENTICATE};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use kyro_core::Caller;
use subtle::ConstantTimeEq;

/// The environment variable a token can come from.
pub(super) const TOKEN_VARIABLE: &str = "KYRO_HTTP_TOKEN";

/// Tokens accepted, each with the caller it names.
pub(super) type Tokens = Arc<[(Arc<str>, Caller)]>;

/// How HTTP requests are authenticated.
#[derive(Clone)]
pub enum HttpAuth {
    /// `Authorization: Bearer <token>` on every request; its caller is `http`.
    Token(Arc<str>),
    /// One of several tokens, each naming its caller (a token file of `NAME TOKEN` lines),
    /// some callers with a policy of their own (`NAME TOKEN POLICY`).
    Callers {
        /// Each token and its caller.
        tokens: Arc<[(Arc<str>, Caller)]>,
        /// The policy file of each caller that has one.
        policies: Arc<[(Caller, std::path::PathBuf)]>,
    },
    /// The same, with a token kyro made: the server prints it on stderr at start.
    Generated(Arc<str>),
    /// No static token: with an OAuth resource server ([`crate::Server::oauth`]) only its
    /// access tokens pass; without, no check, and any process that can reach the loopback
    /// port is a client.
    None,
}

impl std::fmt::Debug for HttpAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            HttpAuth::Token(_) => "HttpAuth::Token(..)",
            HttpAuth::Callers { .. } => "HttpAuth::Callers(..)",
            HttpAuth::Generated(_) => "HttpAuth::Generated(..)",
            HttpAuth::None => "HttpAuth::None",
        })
    }
}

impl HttpAuth {
    /// The token in `KYRO_HTTP_TOKEN` when set, else a new random one (announced on stderr
    /// by the server).
    pub fn from_env_or_new() -> std::io::Result<HttpAuth> {
        match std::env::var(TOKEN_VARIABLE) {
            Ok(token) => HttpAuth::token(token),
            Err(_) => {
                let mut bytes = [0u8; 32];
                getrandom::fill(&mut bytes).map_err(std::io::Error::other)?;
                Ok(HttpAuth::Generated(
                    bytes.iter().map(|b| format!("{b:02x}")).collect::<String>().into(),
                ))
            }
        }
    }

    /// The token in `file` (surrounding whitespace trimmed), or its callers: a file of
    /// lines `NAME TOKEN` (blank lines and `#` comments skipped) gives each token its
    /// caller, whom receipts, approvals and grants then name; `NAME TOKEN POLICY` also
    /// gives that caller the policy in the file `POLICY` (relative to the token file).
    pub fn token_file(file: &Path) -> std::io::Result<HttpAuth> {
        let text = std::fs::read_to_string(file)?;
        let lines: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .collect();
        if let [only] = lines.as_slice()
            && !only.contains(char::is_whitespace)
        {
            return HttpAuth::token(only);
        }
        let invalid = |message: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, message);
        let mut callers: Vec<(Arc<str>, Caller)> = Vec::new();
        let mut policies: Vec<(Caller, std::path::PathBuf)> = Vec::new();
        for (n, line) in lines.iter().enumerate() {
            let mut words = line.split_whitespace();
            let (Some(name), Some(token), policy, None) = (words.next(), words.next(), words.next(), words.next())
            else {
                return Err(invalid(format!(
                    "{}: line {} is not `NAME TOKEN` or `NAME TOKEN POLICY`",
                    file.display(),
                    n + 1
                )));
            };
            let caller = Caller::named(name).map_err(invalid)?;
            if Caller::is_reserved(name) {
                return Err(invalid(format!(
                    "{}: `{name}` is a name kyro gives callers itself ({}, cli:...); choose another",
                    file.display(),
                    Caller::RESERVED.join(", ")
                )));
            }
            let token = checked(token)?;
            if callers.iter().any(|(t, c)| *t == token || *c == caller) {
                return Err(invalid(format!(
                    "{}: `{name}` or its token appears twice",
                    file.display()
                )));
            }
            if let Some(policy) = policy {
                let beside = file.parent().unwrap_or(Path::new("."));
                policies.push((caller.clone(), beside.join(policy)));
            }
            callers.push((token, caller));
        }
        if callers.is_empty() {
            return Err(invalid(format!("{}: no token in it", file.display())));
        }
        Ok(HttpAuth::Callers {
            tokens: callers.into(),
            policies: policies.into(),
        })
    }

    /// The policy file of each caller that has one of its own.
    pub fn caller_policies(&self) -> &[(Caller, std::path::PathBuf)] {
        match self {
            HttpAuth::Callers { policies, .. } => policies,
            _ => &[],
        }
    }

    /// The tokens accepted, each with its caller.
    pub(super) fn tokens(&self) -> Option<Tokens> {
        let http = Caller::http;
        match self {
            HttpAuth::Token(token) | HttpAuth::Generated(token) => Some(vec![(token.clone(), http())].into()),
            HttpAuth::Callers { tokens, .. } => Some(tokens.clone()),
            HttpAuth::None => None,
        }
    }

    /// A given token; refused when shorter than 16 or not one header-safe word.
    pub fn token(token: impl AsRef<str>) -> std::io::Result<HttpAuth> {
        checked(token.as_ref()).map(HttpAuth::Token)
    }
}

/// A token, refused when shorter than 16 or not one header-safe word.
fn checked(token: &str) -> std::io::Result<Arc<str>> {
    let token = token.trim();
    if token.len() < 16 || !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "an HTTP token must be at least 16 printable ASCII characters, without spaces",
        ));
    }
    Ok(token.into())
}

/// The flags that choose [`HttpAuth`] on the command line (`kyro mcp`, [`Server::run`]).
///
/// [`Server::run`]: crate::Server::run
#[derive(Debug, Clone, Default, clap::Args)]
pub struct HttpAuthFlags {
    /// With --http: read the bearer token from this file, or several as `NAME TOKEN [POLICY]`
    /// lines, each naming its caller and perhaps its own policy file (default:
    /// KYRO_HTTP_TOKEN, else a new one printed on stderr).
    #[arg(long, value_name = "FILE", conflicts_with = "no_auth")]
    pub token_file: Option<std::path::PathBuf>,
    /// With --http: accept requests without a token (loopback only; any local process can
    /// then call tools and answer approvals).
    #[arg(long)]
    pub no_auth: bool,
    /// With --http: a browser origin (`https://app.example:443`, `http://localhost:*`)
    /// whose pages may call the server besides its own; repeatable. Requests from any
    /// other page are refused (403).
    #[arg(long = "allow-origin", value_name = "ORIGIN", value_parser = origin)]
    pub allow_origin: Vec<String>,
    /// With --http: a host name clients reach the server by (`tools.example.com`, or
    /// `HOST:PORT` for one port), besides loopback's; repeatable, and needed to serve a
    /// non-loopback address. A request naming any other `Host` is refused (403): DNS
    /// rebinding.
    #[arg(long = "allow-host", value_name = "HOST", value_parser = host)]
    pub allow_host: Vec<String>,
    /// With --http: log each call on stderr as one JSON line (time, caller, tool, outcome,
    /// duration, call id, trace id).
    #[arg(long)]
    pub log_json: bool,
    /// With --http: the callers who decide calls the policy puts under `review`, in the
    /// inbox at `/approvals` (names of the token file, or OAuth subjects; a token with the
    /// scope `kyro:approve` makes its subject one too).
    #[arg(long, value_name = "NAME,...", value_delimiter = ',', value_parser = approver)]
    pub approvers: Vec<kyro_core::Caller>,
    #[cfg(feature = "oauth")]
    #[command(flatten)]
    #[allow(missing_docs)]
    pub oauth: super::oauth::OAuthFlags,
}

/// An approver's name: a caller's.
fn approver(value: &str) -> Result<kyro_core::Caller, String> {
    kyro_core::Caller::named(value)
}

/// A host name or address as a `Host` header names it, with or without a port.
fn host(value: &str) -> Result<String, String> {
    let fits = !value.is_empty()
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-.:[]_".contains(&b))
        && value.parse::<axum::http::uri::Authority>().is_ok();
    if !fits {
        return Err(format!(
            "`{value}` is not a host: write `tools.example.com` or `tools.example.com:8443`"
        ));
    }
    Ok(value.to_ascii_lowercase())
}

/// An origin as browsers send it, `http` or `https`, `://`, a host and a port, or `:*`
/// for any port; or `null`. Without a port it is the scheme's default (rmcp would match
/// any port), so `http://localhost` admits port 80 only.
fn origin(value: &str) -> Result<String, String> {
    if value == "null" {
        return Ok(value.to_owned());
    }
    let refused = || {
        format!("`{value}` is not an origin: write `https://HOST`, `http://HOST:PORT` or `http://HOST:*` (any port)")
    };
    let (scheme, authority) = value.split_once("://").ok_or_else(refused)?;
    let scheme = scheme.to_ascii_lowercase();
    let default_port = match scheme.as_str() {
        "http" => "80",
        "https" => "443",
        _ => return Err(refused()),
    };
    // The host, and what follows it: `[v6]` keeps its colons.
    let host_end = match authority.strip_prefix('[') {
        Some(v6) => v6.find(']').map(|end| end + 2).ok_or_else(refused)?,
        None => authority.find(':').unwrap_or(authority.len()),
    };
    let (host, rest) = authority.split_at(host_end);
    let port = match rest.strip_prefix(':') {
        None if rest.is_empty() => default_port.to_owned(),
        Some("*") => "*".to_owned(),
        Some(port) if port.bytes().all(|b| b.is_ascii_digit()) => match port.parse::<u16>() {
            Ok(port) if port > 0 => port.to_string(),
            _ => return Err(refused()),
        },
        _ => return Err(refused()),
    };
    let host_ok = !host.is_empty()
        && host.bytes().all(|b| b.is_ascii_graphic())
        && !host.contains(['/', '?', '#', '@', '*', '\\'])
        && (host.starts_with('[') || !host.contains(':'));
    if !host_ok {
        return Err(refused());
    }
    Ok(format!("{scheme}://{}:{port}", host.to_ascii_lowercase()))
}

impl HttpAuthFlags {
    /// The authentication these flags ask for.
    /// With OAuth and neither a token file nor `KYRO_HTTP_TOKEN`, no static token is taken
    /// ([`HttpAuth::None`]: only access tokens pass).
    pub fn resolve(&self) -> std::io::Result<HttpAuth> {
        #[cfg(feature = "oauth")]
        let oauth_only = self.oauth.issuer.is_some() && std::env::var_os(TOKEN_VARIABLE).is_none();
        #[cfg(not(feature = "oauth"))]
        let oauth_only = false;
        // The error names where the token came from, so the person fixes the right one.
        let from = |place: String| move |e: std::io::Error| std::io::Error::new(e.kind(), format!("{place}: {e}"));
        match (&self.token_file, self.no_auth) {
            (_, true) => Ok(HttpAuth::None),
            (Some(file), false) => {
                let auth = HttpAuth::token_file(file).map_err(from(format!("--token-file {}", file.display())))?;
                if let Some(warning) = readable_by_others(file) {
                    kyro_core::log::warn(&warning);
                }
                Ok(auth)
            }
            (None, false) if oauth_only => Ok(HttpAuth::None),
            (None, false) => HttpAuth::from_env_or_new().map_err(from(TOKEN_VARIABLE.to_owned())),
        }
    }
}

/// A warning when others than its owner may read or change the token file (mode `& 0o077`):
/// its tokens are anyone's who can read it. Said at start, not refused as ssh refuses such a
/// private key: a deployment that already runs with the file (a group shared with a sidecar)
/// keeps running, and the warning says how to close it.
pub(crate) fn readable_by_others(file: &Path) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(file).ok()?.permissions().mode() & 0o777;
    (mode & 0o077 != 0).then(|| {
        format!(
            "warning: the token file {} is mode {mode:04o}: users other than its owner may read or change its tokens; `chmod 600 {}`",
            file.display(),
            file.display()
        )
    })
}

/// The credentials of an `Authorization` value in the `Bearer` scheme, which RFC 7235
/// compares without regard to case (`bearer`, `BEARER`); one or more spaces follow it.
fn bearer(value: &str) -> Option<&str> {
    let (scheme, credentials) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| credentials.trim_start_matches(' '))
}

/// A caller's own policy, set on the request beside the [`Caller`]: its key among the
/// scopes of a server's callers (`caller:NAME` for a token file's caller with a policy of
/// its own, `scopes:...` for an OAuth scope set's policy), the scope itself as it was in
/// force when the request came, and which reading of the files it is of (SIGHUP makes a
/// new one).
#[derive(Clone)]
pub(crate) struct Role {
    pub key: Arc<str>,
    pub scope: Arc<kyro_core::policy::Scope>,
    pub reading: u64,
}

/// Who may pass: the static tokens, the OAuth resource server, or both.
pub(crate) struct Gate {
    /// The static tokens and the callers' own policies, replaced together when the files
    /// are read again (SIGHUP).
    callers: std::sync::RwLock<Arc<Callers>>,
    #[cfg(feature = "oauth")]
    pub oauth: Option<Arc<super::jwt::Verifier>>,
}

/// The scopes of callers with policies of their own, by their key.
pub(crate) type Scopes = std::collections::HashMap<Arc<str>, kyro_core::policy::Scope>;

/// The static tokens, their callers, and the scopes of the policies callers have of their
/// own (by key).
pub(crate) struct Callers {
    pub tokens: Option<Tokens>,
    scopes: std::collections::HashMap<Arc<str>, Arc<kyro_core::policy::Scope>>,
    reading: u64,
}

impl Callers {
    fn of(auth: &HttpAuth, scopes: Scopes, reading: u64) -> Callers {
        Callers {
            tokens: auth.tokens(),
            scopes: scopes.into_iter().map(|(key, scope)| (key, Arc::new(scope))).collect(),
            reading,
        }
    }

    /// The policy of `key`, when it has one in force. A key without one (a reading that
    /// lost it) is no policy of the server's: the caller is refused.
    fn role(&self, key: Arc<str>) -> Result<Role, Arc<str>> {
        match self.scopes.get(&key) {
            Some(scope) => Ok(Role {
                key,
                scope: scope.clone(),
                reading: self.reading,
            }),
            None => Err(key),
        }
    }
}

/// The answer to a caller whose policy key has no policy in force.
fn not_in_force(key: Arc<str>) -> Response {
    (
        StatusCode::FORBIDDEN,
        format!("kyro: the policy of `{key}` is not in force on this server\n"),
    )
        .into_response()
}

impl Gate {
    /// The gate of `auth`'s tokens and the callers' own policies' `scopes` (and `oauth`'s
    /// access tokens).
    pub(crate) fn new(
        auth: &HttpAuth,
        scopes: Scopes,
        #[cfg(feature = "oauth")] oauth: Option<Arc<super::jwt::Verifier>>,
    ) -> Gate {
        Gate {
            callers: std::sync::RwLock::new(Arc::new(Callers::of(auth, scopes, 0))),
            #[cfg(feature = "oauth")]
            oauth,
        }
    }

    /// The tokens and policies in force.
    pub(crate) fn callers(&self) -> Arc<Callers> {
        self.callers.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// From the next request on, `auth`'s tokens and these policies are the ones in force,
    /// both at once.
    pub(crate) fn replace(&self, auth: &HttpAuth, scopes: Scopes) {
        let mut held = self.callers.write().unwrap_or_else(|e| e.into_inner());
        let reading = held.reading + 1;
        *held = Arc::new(Callers::of(auth, scopes, reading));
    }

    /// Whether any request is let through unchecked (`--no-auth`).
    pub(crate) fn is_open(&self) -> bool {
        #[cfg(feature = "oauth")]
        if self.oauth.is_some() {
            return false;
        }
        self.callers().tokens.is_none()
    }

    /// The caller of a token's subject: a name kyro can keep, not one it gives callers
    /// itself, and not a name of the token file (whose grants it would share).
    #[cfg(feature = "oauth")]
    fn subject(&self, subject: &str) -> Result<Caller, String> {
        let caller = Caller::named(subject).map_err(|why| format!("the token's subject: {why}"))?;
        let taken = self
            .callers()
            .tokens
            .iter()
            .flat_map(|tokens| tokens.iter())
            .any(|(_, c)| *c == caller);
        if Caller::is_reserved(subject) || taken {
            return Err(format!(
                "the token's subject `{subject}` is a caller kyro names otherwise (a token file's, or its own)"
            ));
        }
        Ok(caller)
    }
}

/// The caller of a static token, when `given` is one (each compared in constant time, all
/// of them every time).
fn token_caller(tokens: &Tokens, given: &str) -> Option<Caller> {
    tokens.iter().fold(None, |found, (token, caller)| {
        let same = bool::from(given.as_bytes().ct_eq(token.as_bytes()));
        if same { Some(caller.clone()) } else { found }
    })
}

/// Lets a request through when it carries one of the tokens, or an access token the OAuth
/// resource server takes; its caller (and policy key) set on the request for the server
/// to see. Otherwise 401 with `WWW-Authenticate: Bearer` (naming the resource metadata
/// with OAuth), or 403 `insufficient_scope`.
pub(crate) async fn require_token(State(gate): State<Arc<Gate>>, mut request: Request, next: Next) -> Response {
    match identify(&gate, request.headers()).await {
        Ok((caller, role)) => {
            if let Some(role) = role {
                request.extensions_mut().insert(role);
            }
            request.extensions_mut().insert(caller.clone());
            let mut response = next.run(request).await;
            // Who was refused, for the refusal's log line (`ops::count`).
            response.extensions_mut().insert(caller);
            response
        }
        Err(refused) => refused,
    }
}

/// The caller the credentials in `headers` name (and the policy key they give), or the
/// answer refusing them.
pub(crate) async fn identify(gate: &Gate, headers: &HeaderMap) -> Result<(Caller, Option<Role>), Response> {
    identified(gate, headers).await.map(|(caller, role, _)| (caller, role))
}

/// The caller the credentials in `headers` name, as the approvals inbox sees them.
pub(crate) struct Approving {
    pub caller: Caller,
    /// An OAuth token of theirs holds the scope `kyro:approve`.
    pub scoped: bool,
    /// When an OAuth token expires (seconds since the Unix epoch); a static token does not.
    pub expires_at_s: Option<u64>,
}

/// Who the credentials in `headers` name, for the approvals inbox.
pub(crate) async fn identify_approving(gate: &Gate, headers: &HeaderMap) -> Result<Approving, Response> {
    identified(gate, headers)
        .await
        .map(|(caller, _, (scoped, expires_at_s))| Approving {
            caller,
            scoped,
            expires_at_s,
        })
}

/// The caller, their policy key, and (OAuth) whether they may approve and until when.
type Identified = (Caller, Option<Role>, (bool, Option<u64>));

async fn identified(gate: &Gate, headers: &HeaderMap) -> Result<Identified, Response> {
    let given = headers
        .get(AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(bearer)
        .map(str::to_owned);
    let callers = gate.callers();
    let known = given
        .as_deref()
        .zip(callers.tokens.as_ref())
        .and_then(|(given, tokens)| token_caller(tokens, given));
    if let Some(caller) = known {
        let key: Arc<str> = format!("caller:{caller}").into();
        let role = match callers.scopes.contains_key(&key) {
            true => Some(callers.role(key).map_err(not_in_force)?),
            false => None,
        };
        return Ok((caller, role, (false, None)));
    }
    #[cfg(feature = "oauth")]
    if let Some(verifier) = &gate.oauth {
        use super::jwt::Refusal;
        let refusal = match given.as_deref() {
            None => Refusal::Missing,
            Some(token) => match verifier.verify(token).await {
                Ok(verified) => match gate.subject(&verified.subject) {
                    Ok(caller) => {
                        let approving = (verified.approves, Some(verified.expires_at_s));
                        let role = match verified.role {
                            Some(key) => Some(callers.role(key).map_err(not_in_force)?),
                            None => None,
                        };
                        return Ok((caller, role, approving));
                    }
                    Err(why) => Refusal::Invalid(why),
                },
                Err(refusal) => refusal,
            },
        };
        return Err(super::jwt::refused(verifier.config(), refusal));
    }
    let why = if given.is_some() {
        "kyro: the bearer token is not one this server takes (the token kyro printed at start, KYRO_HTTP_TOKEN, or a line of --token-file)\n"
    } else {
        "kyro: send `Authorization: Bearer <token>` (the token kyro printed at start, or KYRO_HTTP_TOKEN)\n"
    };
    Err((
        StatusCode::UNAUTHORIZED,
        [(WWW_AUTHENTICATE, "Bearer realm=\"kyro\"")],
        why,
    )
        .into_response())
}

#[cfg(test)]
mod tests;
