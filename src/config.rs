//! A policy file as a server reads it. One file, two readers: the boundary's part is
//! kyro-core's [`Policy`] (capabilities, roots, approvals, a call's limits, the sandbox,
//! the tools' own tables), and the rest is the server's own, [`ServerSettings`]: which
//! tools it serves and lists (`[catalog]`), its transport's bounds (`[limits]
//! max_in_flight`, `max_sessions`, `max_sessions_per_caller`) and its upstream servers' sandboxes
//! (`[sandbox.upstreams.NAME]`). The core names no server setting.

use std::collections::BTreeMap;

use kyro_core::Policy;
use serde::Deserialize;

use crate::ServeError;
use crate::selection::CatalogSelection;
use crate::upstream::UpstreamSandbox;

/// What a policy file says to the server rather than to the boundary.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerSettings {
    /// Which tools are served and listed (`[catalog]`); the command line's flags take
    /// precedence.
    pub catalog: CatalogSelection,
    /// The transport's bounds.
    pub transport: Transport,
    /// `[sandbox.upstreams.NAME]`: an upstream server's own mode and network, by its
    /// `--upstream` name; one not named runs under `[sandbox]`'s.
    pub upstreams: BTreeMap<String, UpstreamSandbox>,
    /// `[approvals.notify]`: where the review queue's notices are posted.
    pub notify: Option<Notify>,
}

/// `[approvals.notify]`: each call waiting for review, and each decision (approved,
/// denied, expired), posted as JSON to `url`, signed with HMAC-SHA256 under the secret in
/// the environment variable `secret_env`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Notify {
    /// Where notices are posted (`http` or `https`).
    pub url: String,
    /// The variable holding the signing secret (16 bytes or more).
    #[serde(default = "Notify::default_secret_env")]
    pub secret_env: String,
}

impl Notify {
    fn default_secret_env() -> String {
        "KYRO_APPROVALS_SECRET".to_owned()
    }
}

/// The transport's bounds, in the policy file's `[limits]` table beside a call's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Transport {
    /// Requests one MCP session may have in flight; past it the server stops reading
    /// until one is answered, so a burst of any size runs in bounded memory.
    pub max_in_flight: u32,
    /// Pre-2026 MCP sessions open at once over HTTP; past it the least recently used
    /// session with nothing in flight is closed for the new one (a new client gets `503`
    /// only when every session has a request in flight). Idle sessions also expire after
    /// 5 minutes.
    pub max_sessions: u32,
    /// The same bound for the sessions of one caller, whose own least recently used idle
    /// session makes room: one caller's leaked sessions never crowd out another's.
    pub max_sessions_per_caller: u32,
}

impl Default for Transport {
    fn default() -> Transport {
        Transport {
            max_in_flight: 64,
            max_sessions: 64,
            max_sessions_per_caller: 8,
        }
    }
}

/// The keys of `[limits]` that are the transport's.
const TRANSPORT_LIMITS: [&str; 3] = ["max_in_flight", "max_sessions", "max_sessions_per_caller"];

/// Reads a policy file (TOML; every key optional, see the README): the boundary's policy
/// and the server's settings.
pub fn load_policy(path: &std::path::Path) -> Result<(Policy, ServerSettings), ServeError> {
    let text = std::fs::read_to_string(path).map_err(|e| ServeError::Policy(format!("`{}`: {e}", path.display())))?;
    parse_policy(&text).map_err(|e| ServeError::Policy(format!("`{}`: {e}", path.display())))
}

/// [`load_policy`] on the file's text.
pub(crate) fn parse_policy(text: &str) -> Result<(Policy, ServerSettings), String> {
    let mut table: toml::Table = toml::from_str(text).map_err(|e| e.to_string())?;
    let catalog = match table.remove("catalog") {
        Some(catalog) => catalog.try_into().map_err(|e| format!("[catalog]: {e}"))?,
        None => CatalogSelection::default(),
    };
    let mut transport = toml::Table::new();
    if let Some(toml::Value::Table(limits)) = table.get_mut("limits") {
        for key in TRANSPORT_LIMITS {
            if let Some(value) = limits.remove(key) {
                transport.insert(key.to_owned(), value);
            }
        }
    }
    let transport = toml::Value::Table(transport)
        .try_into()
        .map_err(|e| format!("[limits]: {e}"))?;
    let upstreams = match table.get_mut("sandbox") {
        Some(toml::Value::Table(sandbox)) => match sandbox.remove("upstreams") {
            Some(upstreams) => upstreams.try_into().map_err(|e| format!("[sandbox.upstreams]: {e}"))?,
            None => BTreeMap::new(),
        },
        _ => BTreeMap::new(),
    };
    let notify = match table.get_mut("approvals") {
        Some(toml::Value::Table(approvals)) => match approvals.remove("notify") {
            Some(notify) => Some(notify.try_into().map_err(|e| format!("[approvals.notify]: {e}"))?),
            None => None,
        },
        _ => None,
    };
    let policy = toml::Value::Table(table)
        .try_into()
        .map_err(|e: toml::de::Error| e.to_string())?;
    Ok((
        policy,
        ServerSettings {
            catalog,
            transport,
            upstreams,
            notify,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::parse_policy;

    #[test]
    fn one_file_gives_the_boundary_its_part_and_the_server_its_own() {
        let (policy, settings) = parse_policy(
            "[limits]\ntimeout_ms = 5000\nmax_in_flight = 3\n[catalog]\nread_only = true\n[approvals]\nwrite = \"deny\"\n",
        )
        .unwrap();
        assert_eq!(policy.limits.timeout_ms, 5000);
        assert_eq!(
            (
                settings.transport.max_in_flight,
                settings.transport.max_sessions,
                settings.transport.max_sessions_per_caller
            ),
            (3, 64, 8)
        );
        assert!(settings.catalog.read_only);
        assert_eq!(policy.approvals.write, kyro_core::policy::ApprovalRule::Deny);
        // An upstream's own sandbox is the server's; the rest of `[sandbox]` the boundary's.
        let (policy, settings) =
            parse_policy("[sandbox]\nnetwork = true\n[sandbox.upstreams.up]\nmode = \"read-only\"\n").unwrap();
        assert!(policy.sandbox.network);
        assert_eq!(
            settings.upstreams["up"],
            crate::UpstreamSandbox {
                mode: kyro_core::policy::SandboxMode::ReadOnly,
                network: false
            }
        );
        // Unknown keys are refused wherever they are, and the message names them.
        for (text, named) in [
            ("[catalog]\nreadonly = true\n", "readonly"),
            ("[limits]\nmax_inflight = 3\n", "max_inflight"),
            ("capabilites = []\n", "capabilites"),
            ("[limits]\nmax_in_flight = \"many\"\n", "max_in_flight"),
            (
                "[sandbox.upstreams.up]\nmode = \"read-only\"\nnetwrk = true\n",
                "netwrk",
            ),
        ] {
            let error = parse_policy(text).unwrap_err();
            assert!(error.contains(named), "{text}: {error}");
        }
    }
}
