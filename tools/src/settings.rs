//! The built-in families' policy tables: `[tools.network]` and `[tools.shell]`. Each is read
//! through the call's scope ([`kyro_core::policy::Scope::settings`]) by the tools that
//! declare it, and checked when the policy loads.

use kyro_core::policy::{ApprovalRule, SandboxMode, Settings};
use serde::{Deserialize, Serialize};

/// `[tools.network]`: which hosts web_fetch, http_request and browser pages may reach.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NetworkSettings {
    /// When not empty, the only hosts allowed; these may also be loopback or private.
    pub allow_hosts: Vec<String>,
    /// Hosts never allowed (a name also covers its subdomains).
    pub deny_hosts: Vec<String>,
    /// Allow loopback, private, link-local and other non-public addresses for every host;
    /// default false (they are refused, against SSRF).
    pub allow_private: bool,
}

impl NetworkSettings {
    /// Whether `host` is refused by name.
    pub fn denies(&self, host: &str) -> bool {
        let host = host.to_ascii_lowercase();
        self.deny_hosts.iter().any(|d| {
            let d = d.to_ascii_lowercase();
            host == d || host.ends_with(&format!(".{d}"))
        }) || (!self.allow_hosts.is_empty() && !self.allows_explicitly(&host))
    }

    /// Whether `host` is on the allow list.
    pub fn allows_explicitly(&self, host: &str) -> bool {
        self.allow_hosts.iter().any(|a| a.eq_ignore_ascii_case(host))
    }
}

/// `[tools.shell]`: what run_command and start_process pass from kyro's own environment,
/// and the rules for commands by argv prefix.
///
/// ```toml
/// [tools.shell]
/// pass_env = ["CARGO_HOME"]
/// [[tools.shell.rules]]
/// argv_prefix = ["cargo", "test"]
/// decision = "auto"
/// [[tools.shell.rules]]
/// argv_prefix = ["cargo", "fetch"]
/// decision = "ask"
/// network = true           # this command may reach the network; nothing else widens
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ShellSettings {
    /// Variables passed through, besides PATH, HOME, LANG, LC_ALL, LC_CTYPE, TZ, TMPDIR,
    /// USER and TERM; every other variable of kyro's environment is withheld.
    pub pass_env: Vec<EnvName>,
    /// Rules for commands by argv prefix (Codex's prefix rules). The rule with the longest
    /// matching prefix decides (on a tie, the strictest); a `shell: true` script, or a
    /// call setting a variable that changes which code runs (`LD_PRELOAD`, `PATH`, ...),
    /// matches none.
    pub rules: Vec<CommandRule>,
}

/// `[[tools.shell.rules]]`: what happens to commands whose argv starts with `argv_prefix`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, try_from = "RawCommandRule")]
pub struct CommandRule {
    /// The program and its first arguments, compared element by element.
    pub argv_prefix: Vec<String>,
    /// `auto`, `ask` or `deny`, in place of the policy's `exec` rule.
    pub decision: ApprovalRule,
    /// Let these commands reach the network although `[sandbox] network` is off.
    pub network: bool,
    /// Run these commands under a wider sandbox mode than `[sandbox] mode` (never a
    /// narrower one: the wider of the two applies).
    pub sandbox: Option<SandboxMode>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCommandRule {
    argv_prefix: Vec<String>,
    decision: ApprovalRule,
    #[serde(default)]
    network: bool,
    #[serde(default)]
    sandbox: Option<SandboxMode>,
}

impl TryFrom<RawCommandRule> for CommandRule {
    type Error = String;

    fn try_from(raw: RawCommandRule) -> Result<CommandRule, String> {
        if raw.argv_prefix.is_empty() {
            return Err("a rule's argv_prefix must name at least the program".into());
        }
        Ok(CommandRule {
            argv_prefix: raw.argv_prefix,
            decision: raw.decision,
            network: raw.network,
            sandbox: raw.sandbox,
        })
    }
}

/// The name of an environment variable: not empty, without `=` or NUL.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct EnvName(String);

impl EnvName {
    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for EnvName {
    type Error = String;

    fn try_from(name: String) -> Result<EnvName, String> {
        if name.is_empty() || name.contains(['=', '\0']) {
            Err(format!(
                "`{}` is not an environment variable name (empty, or holds `=` or NUL)",
                name.escape_debug()
            ))
        } else {
            Ok(EnvName(name))
        }
    }
}

impl From<EnvName> for String {
    fn from(name: EnvName) -> String {
        name.0
    }
}

impl Settings for NetworkSettings {
    const TABLE: &'static str = "network";
}

impl Settings for ShellSettings {
    const TABLE: &'static str = "shell";
}

/// How long past a call's time limit a blocking client's own timeout is set: the runtime's
/// limit fires first (the outcome is `timed_out`), and the blocking work ends soon after,
/// well within the grace the runtime waits for it.
pub(crate) const PAST_THE_LIMIT: std::time::Duration = std::time::Duration::from_millis(50);
