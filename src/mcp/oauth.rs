//! kyro as an OAuth 2.1 resource server (MCP's authorization spec): an access token is a
//! JWT from the team's identity provider, checked against the issuer's JWKS (signature by
//! an asymmetric algorithm of the allow-list, `iss`, `aud` = this server's resource URI as
//! RFC 8707 asks, `exp` and `nbf` with a small leeway); its subject is the caller, its
//! scopes choose the caller's policy. The protected resource metadata (RFC 9728) tells a
//! client where to get a token.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Value, json};

/// One scope set and the policy file of the tokens that hold it.
#[derive(Debug, Clone)]
pub struct ScopePolicy {
    pub(crate) scopes: BTreeSet<String>,
    policy: PathBuf,
}

impl ScopePolicy {
    /// The policy's key among the scopes of a server's callers.
    pub(crate) fn role(&self) -> Arc<str> {
        format!("scopes:{}", self.scopes.iter().cloned().collect::<Vec<_>>().join(" ")).into()
    }

    /// The policy file.
    pub fn policy(&self) -> &std::path::Path {
        &self.policy
    }
}

/// The resource server's settings: who issues tokens, the URI tokens must be meant for,
/// where the issuer's keys are, and a policy per scope set.
#[derive(Debug, Clone)]
pub struct OAuth {
    pub(crate) issuer: String,
    pub(crate) audience: String,
    pub(crate) jwks_uri: Option<String>,
    pub(crate) scope_policies: Vec<ScopePolicy>,
    /// The approvals inbox's client id at the issuer (`--inbox-client-id`): approvers
    /// sign in to the inbox through the issuer.
    pub(crate) inbox_client_id: Option<String>,
}

impl OAuth {
    /// Tokens issued by `issuer` for `audience`, this server's resource URI (the URL
    /// clients reach its endpoint by, `https://tools.example.com/mcp`). Both are absolute
    /// `https` URLs (`http` on a loopback host, for a test); the issuer's keys are found
    /// through its metadata (RFC 8414, else OpenID Connect discovery) unless
    /// [`OAuth::jwks_uri`] names them.
    pub fn new(issuer: &str, audience: &str) -> Result<OAuth, String> {
        checked_url("--issuer", issuer)?;
        checked_url("--audience", audience)?;
        if audience.contains('#') {
            return Err(format!(
                "--audience `{audience}`: a resource URI has no fragment (RFC 8707)"
            ));
        }
        Ok(OAuth {
            issuer: issuer.to_owned(),
            audience: audience.to_owned(),
            jwks_uri: None,
            scope_policies: Vec::new(),
            inbox_client_id: None,
        })
    }

    /// The issuer's JWKS at `uri`.
    pub fn jwks_uri(mut self, uri: &str) -> Result<OAuth, String> {
        checked_url("--jwks-uri", uri)?;
        self.jwks_uri = Some(uri.to_owned());
        Ok(self)
    }

    /// Tokens holding every scope of `scopes` run under the policy in `policy`; a token
    /// holding several such sets takes the largest (the first given among equals), and
    /// once any is set a token holding none is refused (403 `insufficient_scope`).
    pub fn scope_policy(mut self, scopes: &str, policy: PathBuf) -> Result<OAuth, String> {
        let scopes: BTreeSet<String> = scopes.split_whitespace().map(str::to_owned).collect();
        if scopes.is_empty() || scopes.iter().any(|s| !s.bytes().all(scope_byte)) {
            return Err(format!(
                "--scope-policy: `{}` is not a list of scopes (RFC 6749 scope tokens, separated by spaces)",
                scopes.iter().cloned().collect::<Vec<_>>().join(" ")
            ));
        }
        self.scope_policies.push(ScopePolicy { scopes, policy });
        Ok(self)
    }

    /// The resource URI tokens must be meant for.
    pub fn audience(&self) -> &str {
        &self.audience
    }

    /// The policies by scope set.
    pub fn scope_policies(&self) -> &[ScopePolicy] {
        &self.scope_policies
    }

    /// Where the protected resource metadata is: `/.well-known/oauth-protected-resource`
    /// then the resource URI's path, on its origin (RFC 9728 §3.1).
    pub fn metadata_url(&self) -> String {
        let (origin, path) = split_origin(&self.audience);
        format!(
            "{origin}/.well-known/oauth-protected-resource{}",
            path.trim_end_matches('/')
        )
    }

    /// The paths the metadata is served at: with the resource's path appended, and bare.
    pub(crate) fn metadata_paths(&self) -> Vec<String> {
        let (_, path) = split_origin(&self.audience);
        let mut paths = vec!["/.well-known/oauth-protected-resource".to_owned()];
        let path = path.trim_end_matches('/');
        if !path.is_empty() {
            paths.push(format!("/.well-known/oauth-protected-resource{path}"));
        }
        paths
    }

    /// The protected resource metadata document (RFC 9728 §2).
    pub(crate) fn metadata(&self) -> Value {
        let scopes: BTreeSet<&String> = self.scope_policies.iter().flat_map(|p| &p.scopes).collect();
        let mut document = json!({
            "resource": self.audience,
            "authorization_servers": [self.issuer],
            "bearer_methods_supported": ["header"],
            "resource_name": "kyro",
        });
        if !scopes.is_empty() {
            document["scopes_supported"] = json!(scopes);
        }
        document
    }
}

/// A byte of a scope token (RFC 6749 §3.3: `%x21 / %x23-5B / %x5D-7E`).
fn scope_byte(b: u8) -> bool {
    b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b)
}

/// An absolute `https` URL, or `http` to a loopback host.
pub(crate) fn checked_url(flag: &str, url: &str) -> Result<(), String> {
    let uri: axum::http::Uri = url.parse().map_err(|e| format!("{flag} `{url}`: {e}"))?;
    let host = uri.host().unwrap_or_default();
    let loopback = host == "localhost"
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    match uri.scheme_str() {
        Some("https") if !host.is_empty() => Ok(()),
        Some("http") if loopback => Ok(()),
        _ => Err(format!(
            "{flag} `{url}`: an absolute https URL (http only to a loopback host)"
        )),
    }
}

/// `https://host:port` and the path of an absolute URL.
pub(crate) fn split_origin(url: &str) -> (&str, &str) {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    let path_start = url[after_scheme..]
        .find(['/', '?'])
        .map_or(url.len(), |i| after_scheme + i);
    let path = url[path_start..].split('?').next().unwrap_or_default();
    (&url[..path_start], path)
}

/// The flags of the OAuth resource server (`kyro mcp --http`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct OAuthFlags {
    /// With --http: take OAuth access tokens (JWTs) issued by this authorization server;
    /// the token's subject is the caller.
    #[arg(long, value_name = "URL", requires = "audience", conflicts_with = "no_auth")]
    pub issuer: Option<String>,
    /// With --issuer: this server's resource URI, the URL clients reach it by
    /// (`https://tools.example.com/mcp`); a token must be meant for it (`aud`).
    #[arg(long, value_name = "URL", requires = "issuer")]
    pub audience: Option<String>,
    /// With --issuer: the issuer's JWKS (default: found through its metadata).
    #[arg(long, value_name = "URL", requires = "issuer")]
    pub jwks_uri: Option<String>,
    /// With --issuer: tokens holding these scopes run under this policy file
    /// (`'kyro:read=read.toml'`, scopes separated by spaces); repeatable. With any set, a
    /// token holding none of the sets is refused (403).
    #[arg(long, value_name = "'SCOPES=FILE'", requires = "issuer")]
    pub scope_policy: Vec<String>,
    /// With --issuer: the approvals inbox's client id at the issuer (a public client,
    /// redirect URI `{audience's origin}/approvals/oauth/callback`); approvers then sign in
    /// to `/approvals` through the issuer (authorization code with PKCE).
    #[arg(long, value_name = "ID", requires = "issuer")]
    pub inbox_client_id: Option<String>,
}

impl OAuthFlags {
    /// The resource server these flags ask for, if any.
    pub fn resolve(&self) -> Result<Option<OAuth>, String> {
        let (Some(issuer), Some(audience)) = (&self.issuer, &self.audience) else {
            return Ok(None);
        };
        let mut oauth = OAuth::new(issuer, audience)?;
        if let Some(uri) = &self.jwks_uri {
            oauth = oauth.jwks_uri(uri)?;
        }
        for entry in &self.scope_policy {
            let Some((scopes, file)) = entry.split_once('=') else {
                return Err(format!("--scope-policy `{entry}`: write `SCOPES=FILE`"));
            };
            oauth = oauth.scope_policy(scopes, file.into())?;
        }
        oauth.inbox_client_id = self.inbox_client_id.clone();
        Ok(Some(oauth))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metadata_lives_beside_the_resource_s_path() {
        let oauth = OAuth::new("https://id.example", "https://tools.example.com/mcp").unwrap();
        assert_eq!(
            oauth.metadata_url(),
            "https://tools.example.com/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            oauth.metadata_paths(),
            [
                "/.well-known/oauth-protected-resource",
                "/.well-known/oauth-protected-resource/mcp"
            ]
        );
        assert_eq!(oauth.metadata()["resource"], "https://tools.example.com/mcp");
        assert_eq!(oauth.metadata()["authorization_servers"][0], "https://id.example");
    }

    #[test]
    fn urls_are_https_but_for_loopback() {
        assert!(OAuth::new("http://id.example", "https://t.example/mcp").is_err());
        assert!(OAuth::new("https://id.example", "https://t.example/mcp#x").is_err());
        assert!(OAuth::new("id.example", "https://t.example/mcp").is_err());
        assert!(OAuth::new("http://127.0.0.1:9/", "http://localhost:8/mcp").is_ok());
        assert!(OAuth::new("http://[::1]:9/", "http://[::1]:8/mcp").is_ok());
    }
}
