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
            Effect::Read => &[Capability::FsRead],
            Effect::Write => &[Capability::FsWrite],
            Effect::Exec => &[Capability::Exec],
            Effect::Network => &[Capability::Network],
            Effect::State => &[Capability::State],
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

/// A permission a caller's scope grants and a tool requires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
pub enum Capability {
    /// Read files inside the workspace roots.
    #[serde(rename = "fs.read")]
    FsRead,
    /// Create, change or delete files inside writable roots.
    #[serde(rename = "fs.write")]
    FsWrite,
    /// Run programs.
    #[serde(rename = "exec")]
    Exec,
    /// Reach other hosts.
    #[serde(rename = "network")]
    Network,
    /// Change a Git repository (commit, checkout, branch).
    #[serde(rename = "git.write")]
    GitWrite,
    /// Change runtime-owned state: memory, graph, tasks.
    #[serde(rename = "state")]
    State,
    /// Run batches and sub-agents.
    #[serde(rename = "orchestrate")]
    Orchestrate,
}

impl Capability {
    /// Every capability, in declaration order.
    pub const ALL: [Capability; 7] = [
        Capability::FsRead,
        Capability::FsWrite,
        Capability::Exec,
        Capability::Network,
        Capability::GitWrite,
        Capability::State,
        Capability::Orchestrate,
    ];

    /// The dotted name used in attributes, policies and descriptors.
    pub const fn as_str(self) -> &'static str {
        match self {
            Capability::FsRead => "fs.read",
            Capability::FsWrite => "fs.write",
            Capability::Exec => "exec",
            Capability::Network => "network",
            Capability::GitWrite => "git.write",
            Capability::State => "state",
            Capability::Orchestrate => "orchestrate",
        }
    }

    /// Looks a capability up by name at compile time; an unknown name fails the build.
    ///
    /// The `#[tool(capabilities = [...])]` expansion calls this in a constant, so a typo is a
    /// compile error that names the known capabilities.
    pub const fn from_name(name: &str) -> Capability {
        let mut i = 0;
        while i < Capability::ALL.len() {
            if crate::catalog::str_eq(Capability::ALL[i].as_str(), name) {
                return Capability::ALL[i];
            }
            i += 1;
        }
        panic!("unknown capability; expected one of fs.read, fs.write, exec, network, git.write, state, orchestrate")
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
