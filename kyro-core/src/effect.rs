//! What a tool does to the world, and the capabilities and approvals that follow from it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The kind of side effect a tool has. Policy keys off this, never off annotations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    /// Reads workspace state, changes nothing.
    Read,
    /// Changes files inside the workspace.
    Write,
    /// Runs a program.
    Exec,
    /// Talks to another host.
    Network,
    /// Changes runtime-owned state (memory, graph, tasks).
    State,
    /// Pure computation: no state is read or changed.
    None,
}

impl Effect {
    /// Every effect, in declaration order.
    pub const ALL: [Effect; 6] = [
        Effect::Read,
        Effect::Write,
        Effect::Exec,
        Effect::Network,
        Effect::State,
        Effect::None,
    ];

    /// The lowercase name used in `#[tool(effect = "...")]` and in descriptors.
    pub const fn as_str(self) -> &'static str {
        match self {
            Effect::Read => "read",
            Effect::Write => "write",
            Effect::Exec => "exec",
            Effect::Network => "network",
            Effect::State => "state",
            Effect::None => "none",
        }
    }

    /// The capability a tool of this effect needs when it declares none itself.
    pub const fn default_capabilities(self) -> &'static [Capability] {
        match self {
            Effect::Read => DEFAULT_READ,
            Effect::Write => DEFAULT_WRITE,
            Effect::Exec => DEFAULT_EXEC,
            Effect::Network => DEFAULT_NETWORK,
            Effect::State => DEFAULT_STATE,
            Effect::None => &[],
        }
    }
}

/// Whether a call needs a human's approval before it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Approval {
    /// Runs without asking once authorized.
    Auto,
    /// Always asks, whatever the policy says for its effect.
    Required,
}

const DEFAULT_READ: &[Capability] = &[Capability::FS_READ];
const DEFAULT_WRITE: &[Capability] = &[Capability::FS_WRITE];
const DEFAULT_EXEC: &[Capability] = &[Capability::EXEC];
const DEFAULT_NETWORK: &[Capability] = &[Capability::NETWORK];
const DEFAULT_STATE: &[Capability] = &[Capability::STATE];

/// A permission a caller's scope grants and a tool requires: an open, dotted lowercase
/// name (`fs.read`, `git.write`, `greet.send`). kyro's own are constants here; a tool author
/// declares theirs in `#[tool(capabilities = [...])]` and a policy grants them by name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Capability(std::borrow::Cow<'static, str>);

/// Why a capability name is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a capability name: lowercase words joined by dots (`fs.read`, `greet.send`)")]
pub struct CapabilityNameError(pub String);

impl Capability {
    /// Read files inside the workspace roots.
    pub const FS_READ: Capability = Capability::named("fs.read");
    /// Create, change or delete files inside writable roots.
    pub const FS_WRITE: Capability = Capability::named("fs.write");
    /// Run programs.
    pub const EXEC: Capability = Capability::named("exec");
    /// Reach other hosts.
    pub const NETWORK: Capability = Capability::named("network");
    /// Change runtime-owned state (the `state` effect's).
    pub const STATE: Capability = Capability::named("state");

    /// The capabilities the effects imply: any policy may grant them, served tools or not.
    /// Every other capability is a tool's own (`git.write`, `orchestrate`, `kv.write`),
    /// declared in `#[tool(capabilities = [...])]`.
    pub const OF_EFFECTS: [Capability; 5] = [
        Capability::FS_READ,
        Capability::FS_WRITE,
        Capability::EXEC,
        Capability::NETWORK,
        Capability::STATE,
    ];

    /// The capability called `name`; a malformed name fails the build when called in a
    /// constant (as `#[tool(capabilities = [...])]` does).
    pub const fn named(name: &'static str) -> Capability {
        if !well_formed(name.as_bytes()) {
            panic!("a capability name is lowercase words joined by dots, like `fs.read` or `greet.send`");
        }
        Capability(std::borrow::Cow::Borrowed(name))
    }

    /// The dotted name used in attributes, policies and descriptors.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// `^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$`, at most 64 bytes.
const fn well_formed(name: &[u8]) -> bool {
    if name.is_empty() || name.len() > 64 {
        return false;
    }
    let mut i = 0;
    let mut word_start = true;
    while i < name.len() {
        let c = name[i];
        let ok = if word_start {
            c.is_ascii_lowercase()
        } else {
            c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_' || c == b'.'
        };
        if !ok {
            return false;
        }
        word_start = c == b'.';
        i += 1;
    }
    !word_start
}

impl TryFrom<String> for Capability {
    type Error = CapabilityNameError;
    fn try_from(name: String) -> Result<Capability, CapabilityNameError> {
        if well_formed(name.as_bytes()) {
            Ok(Capability(std::borrow::Cow::Owned(name)))
        } else {
            Err(CapabilityNameError(name))
        }
    }
}

impl From<Capability> for String {
    fn from(capability: Capability) -> String {
        capability.0.into_owned()
    }
}

impl JsonSchema for Capability {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Capability".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "pattern": "^[a-z][a-z0-9_]*(\\.[a-z][a-z0-9_]*)*$",
            "maxLength": 64
        })
    }
}

impl std::fmt::Display for Capability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Display for Effect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
