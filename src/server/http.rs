//! Serving Streamable HTTP: who may reach the endpoint (static bearer tokens, an OAuth
//! resource server), by which host names and from which browser origins, and the policy
//! of each caller or scope set that has its own.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use kyro_core::Runtime;
use kyro_core::policy::Scope;

use crate::config::{ServerSettings, load_policy};
#[cfg(feature = "oauth")]
use crate::mcp::OAuth;
use crate::mcp::{Access, HttpAuth, HttpAuthFlags, JsonLog, Metrics};
use crate::{ServeError, Server, Started};

/// What a server's HTTP endpoint lets in.
#[derive(Default)]
pub(super) struct HttpAccess {
    pub auth: Option<HttpAuth>,
    pub origins: Vec<String>,
    pub hosts: Vec<String>,
    #[cfg(feature = "oauth")]
    pub oauth: Option<OAuth>,
    pub log_json: bool,
    pub approvers: Vec<kyro_core::Caller>,
    /// The token file `--token-file` named, read again on SIGHUP.
    pub token_file: Option<std::path::PathBuf>,
}

impl Server {
    /// How HTTP clients authenticate: by default a bearer token from `KYRO_HTTP_TOKEN`, or
    /// one kyro makes and prints on stderr; [`HttpAuth::None`] for none (loopback only),
    /// or for OAuth access tokens alone when [`Server::oauth`] is set.
    pub fn http_auth(mut self, auth: HttpAuth) -> Server {
        self.http_access.auth = Some(auth);
        self
    }

    /// Browser origins (`https://app.example:443`, `http://localhost:*`) whose pages may
    /// call the HTTP endpoint besides the server's own: a request carrying any other
    /// `Origin` is answered 403 (`--allow-origin` on the command line).
    pub fn allow_origins(mut self, origins: impl IntoIterator<Item = String>) -> Server {
        self.http_access.origins.extend(origins);
        self
    }

    /// Host names (`tools.example.com`, or `HOST:PORT`) clients reach the HTTP endpoint by,
    /// besides loopback's: a request naming any other `Host` is answered 403, and a
    /// non-loopback address is served only with at least one (`--allow-host`).
    pub fn allow_hosts(mut self, hosts: impl IntoIterator<Item = String>) -> Server {
        self.http_access.hosts.extend(hosts);
        self
    }

    /// Takes OAuth 2.1 access tokens (JWTs of `oauth`'s issuer for its resource URI) over
    /// HTTP, besides any static token: the token's subject is the caller, its scopes choose
    /// the policy (`--issuer`, `--audience`, `--jwks-uri`, `--scope-policy`).
    #[cfg(feature = "oauth")]
    pub fn oauth(mut self, oauth: OAuth) -> Server {
        self.http_access.oauth = Some(oauth);
        self
    }

    /// The callers who decide calls the policy puts under `review`, in the HTTP server's
    /// inbox at `/approvals` (`--approvers`): names of the token file, or OAuth subjects.
    pub fn approvers(mut self, approvers: impl IntoIterator<Item = kyro_core::Caller>) -> Server {
        self.http_access.approvers.extend(approvers);
        self
    }

    /// `--http` and its flags.
    pub(super) fn http_args(mut self, http: Option<SocketAddr>, flags: &HttpAuthFlags) -> Result<Server, ServeError> {
        self = self
            .allow_origins(flags.allow_origin.iter().cloned())
            .allow_hosts(flags.allow_host.iter().cloned());
        #[cfg(feature = "oauth")]
        if let Some(oauth) = flags.oauth.resolve().map_err(ServeError::OAuth)? {
            self = self.oauth(oauth);
        }
        self.http_access.log_json |= flags.log_json;
        // Every later line on stderr is JSON, the start's included.
        kyro_core::log::set_json(self.http_access.log_json);
        self = self.approvers(flags.approvers.iter().cloned());
        if http.is_some() {
            self.http = http;
            self.http_access.token_file = flags.token_file.clone();
            self.http_access.auth = Some(flags.resolve().map_err(|e| ServeError::HttpToken(e.to_string()))?);
        }
        Ok(self)
    }

    /// Serves MCP Streamable HTTP at `http://ADDR/mcp`, every request carrying a bearer
    /// token (see [`Server::http_auth`]) or an OAuth access token ([`Server::oauth`]).
    pub async fn serve_http(mut self, addr: SocketAddr) -> Result<(), ServeError> {
        kyro_core::log::set_program(&self.identity.name);
        self.http = Some(addr);
        let auth = match self.http_access.auth.take() {
            Some(auth) => auth,
            #[cfg(feature = "oauth")]
            None if self.http_access.oauth.is_some() => HttpAuth::None,
            None => HttpAuth::from_env_or_new().map_err(|e| ServeError::HttpToken(format!("KYRO_HTTP_TOKEN: {e}")))?,
        };
        let metrics = Metrics::new();
        self.observers.push(metrics.clone());
        if self.http_access.log_json {
            kyro_core::log::set_json(true);
            self.observers.push(Arc::new(JsonLog));
        }
        let access = Access {
            auth,
            hosts: std::mem::take(&mut self.http_access.hosts),
            #[cfg(feature = "oauth")]
            oauth: self.http_access.oauth.take(),
            metrics,
            approvers: std::mem::take(&mut self.http_access.approvers),
            reload: None,
            scopes: HashMap::new(),
        };
        // The upstreams stop when `started` is dropped, after serving.
        let started = self.started(false).await?;
        let Started { runtime, .. } = started;
        let set_aside = self.set_aside.clone();
        #[cfg(feature = "oauth")]
        let oauth = access.oauth.clone();
        let scopes = caller_scopes(
            &set_aside,
            &runtime,
            &access.auth,
            #[cfg(feature = "oauth")]
            oauth.as_ref(),
        )?;
        // SIGHUP reads the token file and every caller's policy again; either all of it
        // is taken or none.
        let token_file = self.http_access.token_file.take();
        let reading = runtime.clone();
        let mut access = access;
        let auth = access.auth.clone();
        access.reload = Some(Box::new(move || {
            let auth = match &token_file {
                Some(file) => {
                    HttpAuth::token_file(file).map_err(|e| format!("--token-file {}: {e}", file.display()))?
                }
                None => auth.clone(),
            };
            let scopes = caller_scopes(
                &set_aside,
                &reading,
                &auth,
                #[cfg(feature = "oauth")]
                oauth.as_ref(),
            )
            .map_err(|e| e.to_string())?;
            Ok((auth, scopes))
        }));
        access.scopes = scopes;
        self.mcp_server(runtime)?.serve_http(addr, access).await
    }
}

/// The scope of each policy of its own: a token file's caller's (`caller:NAME`), an
/// OAuth scope set's (`scopes:...`). Each is a boundary (capabilities, roots,
/// approvals, `[tools.*]`, `[sandbox]`); what only the server has (`[catalog]`,
/// transport limits, `[sandbox.upstreams]`) is refused there.
fn caller_scopes(
    set_aside: &[&'static str],
    runtime: &Runtime,
    auth: &HttpAuth,
    #[cfg(feature = "oauth")] oauth: Option<&OAuth>,
) -> Result<HashMap<Arc<str>, Scope>, ServeError> {
    #[cfg_attr(not(feature = "oauth"), allow(unused_mut))]
    let mut owned: Vec<(Arc<str>, String, &std::path::Path)> = auth
        .caller_policies()
        .iter()
        .map(|(caller, path)| (format!("caller:{caller}").into(), format!("{caller}'s"), path.as_path()))
        .collect();
    #[cfg(feature = "oauth")]
    if let Some(oauth) = oauth {
        for set in oauth.scope_policies() {
            let role = set.role();
            let whose = format!("the {role} tokens'");
            owned.push((role, whose, set.policy()));
        }
    }
    let mut scopes = HashMap::new();
    for (role, whose, path) in owned {
        let (mut policy, settings) = load_policy(path)?;
        let named = |message: String| ServeError::Policy(format!("{whose} policy `{}`: {message}", path.display()));
        if settings != ServerSettings::default() {
            return Err(named(
                "[catalog], transport limits and [sandbox.upstreams] are the server's: set them in its own policy"
                    .into(),
            ));
        }
        for name in set_aside {
            policy.approvals.tools.remove(*name);
        }
        let scope = runtime.scope_for(&policy).map_err(|e| named(e.to_string()))?;
        scopes.insert(role, scope);
    }
    Ok(scopes)
}
