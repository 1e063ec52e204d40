//! The built-in families' policy tables: `[tools.network]` and `[tools.shell]`. Each is read
//! through the call's scope ([`kyro_core::policy::Scope::settings`]) by the tools that
//! declare it, and checked when the policy loads.

use kyro_core::WorkspacePath;
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
/// and the rules for commands: one exact argv (`argv`), or every argv starting so
/// (`argv_prefix`).
///
/// ```toml
/// [tools.shell]
/// pass_env = ["CARGO_HOME"]
/// [[tools.shell.rules]]
/// argv = ["cargo", "test"]   # exactly this command, nothing added
/// decision = "auto"
/// [[tools.shell.rules]]
/// argv_prefix = ["cargo", "fetch"]   # this and anything after it
/// decision = "ask"
/// network = true           # this command may reach the network; nothing else widens
/// [[tools.shell.rules]]
/// argv = ["git", "status"]
/// cwd = "vendor/lib"       # run there; without `cwd`, at the workspace root only
/// decision = "auto"
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ShellSettings {
    /// Variables passed through, besides PATH, HOME, LANG, LC_ALL, LC_CTYPE, TZ, TMPDIR,
    /// USER and TERM; every other variable of kyro's environment is withheld.
    pub pass_env: Vec<EnvName>,
    /// Rules for commands. An exact rule (`argv`) decides for that argv alone; a prefix
    /// rule (`argv_prefix`) for every argv starting with it, whatever follows. An exact
    /// rule wins over every prefix rule, a longer prefix over a shorter one, and on a tie
    /// the strictest decision. A rule lets a call through (`auto`, and its `network` and
    /// `sandbox`) only in its `cwd` (default the workspace root) and when it lists in
    /// `env` every variable the call sets; never a `shell: true` script, an interpreter's
    /// inline code (`sh -c`, `python3 -c`, `perl -e`, ...), or a call setting a variable
    /// that changes which code runs (`LD_PRELOAD`, `PATH`, `GIT_EXTERNAL_DIFF`, `RUSTC`,
    /// ...). A rule that denies or asks holds a call back in any directory, whatever it
    /// sets, and also behind wrappers (`env`, `nice`, `timeout`, ...) and a program's path
    /// (`/bin/rm` is `rm`): a convenience, not a boundary.
    pub rules: Vec<CommandRule>,
}

/// `[[tools.shell.rules]]`: what happens to one command (`argv`) or to every command
/// starting with `argv_prefix`; exactly one of the two.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawCommandRule", into = "RawCommandRule")]
pub struct CommandRule {
    /// The command, whole or as a prefix, compared element by element.
    pub argv: RuleArgv,
    /// The environment variables a call may set and still match (`env = ["RUST_LOG"]`);
    /// none by default. A variable that changes which code runs cannot be listed.
    pub env: Vec<EnvName>,
    /// The working directory the rule lets the command through in, relative to the
    /// workspace root (`vendor/lib`, no `..`); none for the root itself.
    pub cwd: Option<WorkspacePath>,
    /// `auto`, `ask` or `deny`, in place of the policy's `exec` rule (never lifting a
    /// `deny` of the policy's, and against an `[approvals.tools]` rule the stricter holds).
    pub decision: ApprovalRule,
    /// Let these commands reach the network although `[sandbox] network` is off.
    pub network: bool,
    /// Run these commands under a wider sandbox mode than `[sandbox] mode` (never a
    /// narrower one: the wider of the two applies).
    pub sandbox: Option<SandboxMode>,
}

/// The command a rule names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuleArgv {
    /// `argv = [...]`: exactly this argv, no argument more or less.
    Exact(Vec<String>),
    /// `argv_prefix = [...]`: this argv followed by anything at all (options such as
    /// `--config`, `-exec` or `--compress-program` included).
    Prefix(Vec<String>),
}

impl RuleArgv {
    /// The words the rule names.
    pub fn words(&self) -> &[String] {
        match self {
            RuleArgv::Exact(words) | RuleArgv::Prefix(words) => words,
        }
    }

    /// The policy's key for this form: `argv` or `argv_prefix`.
    pub fn key(&self) -> &'static str {
        match self {
            RuleArgv::Exact(_) => "argv",
            RuleArgv::Prefix(_) => "argv_prefix",
        }
    }

    /// Whether `argv` is the command this names.
    pub fn matches(&self, argv: &[String]) -> bool {
        match self {
            RuleArgv::Exact(words) => argv == words.as_slice(),
            RuleArgv::Prefix(words) => argv.starts_with(words),
        }
    }
}

impl CommandRule {
    /// Whether this rule names exactly the command `argv`, run in `cwd` (relative to the
    /// workspace root, without `.` parts: `.` for the root) with the variables `set`.
    pub fn matches<'a>(&self, argv: &[String], cwd: &str, mut set: impl Iterator<Item = &'a str>) -> bool {
        self.argv.matches(argv)
            && self.cwd.as_ref().map_or(".", WorkspacePath::as_str) == cwd
            && set.all(|name| self.env.iter().any(|listed| listed.as_str() == name))
    }
}

/// A working directory as a rule names it: `.` for the workspace root, else the relative
/// path without `.` components or trailing slashes (`./a//b/` is `a/b`); none for one no
/// rule names (absolute, or with `..`, whose place depends on what the tree links).
pub(crate) fn rule_cwd(path: Option<&str>) -> Option<String> {
    let path = path.unwrap_or(".");
    if path.starts_with('/') {
        return None;
    }
    let mut parts = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => return None,
            part => parts.push(part),
        }
    }
    Some(if parts.is_empty() {
        ".".to_owned()
    } else {
        parts.join("/")
    })
}

/// Why a `[[tools.shell.rules]]` rule is refused when the policy loads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    /// Neither `argv` nor `argv_prefix`.
    #[error(
        "a [[tools.shell.rules]] rule needs `argv` (exactly that command) or `argv_prefix` (that and anything after it)"
    )]
    NoArgv,
    /// Both `argv` and `argv_prefix`.
    #[error(
        "a [[tools.shell.rules]] rule has both `argv` and `argv_prefix`; keep one: `argv` for exactly that command, `argv_prefix` to trust anything after it"
    )]
    BothArgv,
    /// An empty `argv` or `argv_prefix`.
    #[error("a [[tools.shell.rules]] rule's `{key}` is empty; it must name at least the program")]
    Empty {
        /// `argv` or `argv_prefix`.
        key: &'static str,
    },
    /// `env` lists a variable that changes which code runs.
    #[error(
        "a [[tools.shell.rules]] rule's `env` lists `{name}`, which changes which code runs; a call setting it matches no rule (it asks)"
    )]
    CodeChangingEnv {
        /// The variable.
        name: String,
    },
    /// `cwd` is absolute or climbs with `..`.
    #[error(
        "a [[tools.shell.rules]] rule's `cwd` is `{cwd}`; write a directory relative to the workspace root, without `..` (leave `cwd` out for the root)"
    )]
    Cwd {
        /// The `cwd` as written.
        cwd: String,
    },
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCommandRule {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    argv: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    argv_prefix: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    env: Vec<EnvName>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cwd: Option<String>,
    decision: ApprovalRule,
    #[serde(default)]
    network: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sandbox: Option<SandboxMode>,
}

impl TryFrom<RawCommandRule> for CommandRule {
    type Error = RuleError;

    fn try_from(raw: RawCommandRule) -> Result<CommandRule, RuleError> {
        let argv = match (raw.argv, raw.argv_prefix) {
            (Some(_), Some(_)) => return Err(RuleError::BothArgv),
            (None, None) => return Err(RuleError::NoArgv),
            (Some(words), None) => RuleArgv::Exact(words),
            (None, Some(words)) => RuleArgv::Prefix(words),
        };
        if argv.words().is_empty() {
            return Err(RuleError::Empty { key: argv.key() });
        }
        if let Some(name) = raw
            .env
            .iter()
            .find(|name| crate::shell::environment::changes_code(name.as_str()))
        {
            return Err(RuleError::CodeChangingEnv {
                name: name.as_str().to_owned(),
            });
        }
        let cwd = match raw.cwd {
            None => None,
            Some(cwd) => match rule_cwd(Some(&cwd)) {
                None => return Err(RuleError::Cwd { cwd }),
                Some(root) if root == "." => None,
                Some(dir) => Some(WorkspacePath::new(dir)),
            },
        };
        Ok(CommandRule {
            argv,
            env: raw.env,
            cwd,
            decision: raw.decision,
            network: raw.network,
            sandbox: raw.sandbox,
        })
    }
}

impl From<CommandRule> for RawCommandRule {
    fn from(rule: CommandRule) -> RawCommandRule {
        let (argv, argv_prefix) = match rule.argv {
            RuleArgv::Exact(words) => (Some(words), None),
            RuleArgv::Prefix(words) => (None, Some(words)),
        };
        RawCommandRule {
            argv,
            argv_prefix,
            env: rule.env,
            cwd: rule.cwd.map(|cwd| cwd.as_str().to_owned()),
            decision: rule.decision,
            network: rule.network,
            sandbox: rule.sandbox,
        }
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
#[cfg(feature = "web")]
pub(crate) const PAST_THE_LIMIT: std::time::Duration = std::time::Duration::from_millis(50);
