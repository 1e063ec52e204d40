//! Who may use `kyro mcp --http`: the holder of a bearer token. Any local process can
//! reach a loopback port, and a client that can call `run_command` and answer its own
//! approval prompt could run anything; the token keeps the server to the client it was
//! given to. `--no-auth` opts out, loopback only, and says so.

use std::path::Path;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::http::header::{AUTHORIZATION, WWW_AUTHENTICATE};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

/// The environment variable a token can come from.
pub const TOKEN_VARIABLE: &str = "KYRO_HTTP_TOKEN";

/// How HTTP requests are authenticated.
#[derive(Clone)]
pub enum HttpAuth {
    /// `Authorization: Bearer <token>` on every request.
    Token(Arc<str>),
    /// The same, with a token kyro made: the server prints it on stderr at start.
    Generated(Arc<str>),
    /// No check: any process that can reach the loopback port is a client.
    None,
}

impl std::fmt::Debug for HttpAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            HttpAuth::Token(_) => "HttpAuth::Token(..)",
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

    /// The token in `file` (surrounding whitespace trimmed).
    pub fn token_file(file: &Path) -> std::io::Result<HttpAuth> {
        HttpAuth::token(std::fs::read_to_string(file)?)
    }

    /// A given token; refused when empty or not one header-safe word.
    pub fn token(token: impl AsRef<str>) -> std::io::Result<HttpAuth> {
        let token = token.as_ref().trim();
        if token.len() < 16 || !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "an HTTP token must be at least 16 printable ASCII characters, without spaces",
            ));
        }
        Ok(HttpAuth::Token(token.into()))
    }
}

/// The flags that choose [`HttpAuth`] on the command line (`kyro mcp`, [`Server::run`]).
///
/// [`Server::run`]: crate::Server::run
#[derive(Debug, Clone, Default, clap::Args)]
pub struct HttpAuthFlags {
    /// With --http: read the bearer token from this file (default: KYRO_HTTP_TOKEN, else a
    /// new one printed on stderr).
    #[arg(long, value_name = "FILE", conflicts_with = "no_auth")]
    pub token_file: Option<std::path::PathBuf>,
    /// With --http: accept requests without a token (loopback only; any local process can
    /// then call tools and answer approvals).
    #[arg(long)]
    pub no_auth: bool,
}

impl HttpAuthFlags {
    /// The authentication these flags ask for.
    pub fn resolve(&self) -> std::io::Result<HttpAuth> {
        match (&self.token_file, self.no_auth) {
            (_, true) => Ok(HttpAuth::None),
            (Some(file), false) => HttpAuth::token_file(file),
            (None, false) => HttpAuth::from_env_or_new(),
        }
    }
}

/// Lets a request through when it carries the token (compared in constant time); answers
/// 401 with `WWW-Authenticate: Bearer` otherwise.
pub(crate) async fn require_token(State(token): State<Arc<str>>, request: Request, next: Next) -> Response {
    let given = request
        .headers()
        .get(AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "));
    match given {
        Some(given) if bool::from(given.as_bytes().ct_eq(token.as_bytes())) => next.run(request).await,
        _ => (
            StatusCode::UNAUTHORIZED,
            [(WWW_AUTHENTICATE, "Bearer realm=\"kyro\"")],
            "kyro: send `Authorization: Bearer <token>` (the token kyro printed at start, or KYRO_HTTP_TOKEN)\n",
        )
            .into_response(),
    }
}
