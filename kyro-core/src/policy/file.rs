//! The policy file (`--policy FILE`, TOML) and its parts.

use std::collections::BTreeMap;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::denial::Access;
use crate::effect::{Capability, Effect};

/// What happens to a call of a given effect once capabilities and paths allow it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalRule {
    /// Runs without asking.
    Auto,
    /// Needs an approval bound to the call's fingerprint.
    Ask,
    /// Runs only after a named approver decides it (`--approvers`, the inbox); the
    /// client's own answer never approves it.
    Review,
    /// Never runs.
    Deny,
}

impl ApprovalRule {
    /// The stricter of two rules: `deny` over `review` over `ask` over `auto`.
    pub fn strictest(self, other: ApprovalRule) -> ApprovalRule {
        if self.rank() >= other.rank() { self } else { other }
    }

    /// How strict the rule is: `auto` 0, `ask` 1, `review` 2, `deny` 3.
    pub fn rank(self) -> u8 {
        match self {
            ApprovalRule::Auto => 0,
            ApprovalRule::Ask => 1,
            ApprovalRule::Review => 2,
            ApprovalRule::Deny => 3,
        }
    }
}

/// A decision from the policy's own rules for one tool (`Execute::rule`, a command rule),
/// which replaces the rule of the tool's effect for that call but never lifts a `deny`
/// (see [`ApprovalRules::decide`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchedRule {
    /// What happens to the call.
    pub decision: ApprovalRule,
    /// The rule, as the receipt and a refusal name it (`[tools.shell] rule argv_prefix
    /// ["cargo", "test"]`).
    pub rule: String,
    /// Whether its `ask` is about this one call, so that only a person's look at these
    /// arguments passes it, not a grant of the tool or a session's approval (a command
    /// rule; not the rule a forwarding tool borrows from the tool it reaches, whose own call
    /// meets that tool's rule and grants again).
    pub each_call: bool,
}

/// The approval rule for each effect, and for tools named one by one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ApprovalRules {
    /// Reads inside the roots.
    pub read: ApprovalRule,
    /// Writes inside writable roots.
    pub write: ApprovalRule,
    /// Running programs.
    pub exec: ApprovalRule,
    /// Reaching other hosts.
    pub network: ApprovalRule,
    /// Runtime-owned state.
    pub state: ApprovalRule,
    /// Pure computation.
    pub none: ApprovalRule,
    /// Rules for single tools (`[approvals.tools] git_commit = "auto"`), in place of their
    /// effect's rule. A key may be a tool's alias (`bash` is `run_command`); a key naming
    /// no tool is refused when the policy is bound to the registry. A tool family's own
    /// argument rules (`[[tools.shell.rules]]`) decide within them: see
    /// [`ApprovalRules::decide`].
    pub tools: BTreeMap<String, ApprovalRule>,
    /// How long a call under `review` waits for an approver before it is denied, in
    /// seconds (default a day).
    pub review_expiry_s: u64,
    /// Whether an approver may approve their own call under `review` (default not).
    pub self_review: bool,
}

impl Default for ApprovalRules {
    /// Safe defaults: reads, state and computation run; writes, exec and network ask.
    fn default() -> ApprovalRules {
        ApprovalRules {
            read: ApprovalRule::Auto,
            write: ApprovalRule::Ask,
            exec: ApprovalRule::Ask,
            network: ApprovalRule::Ask,
            state: ApprovalRule::Auto,
            none: ApprovalRule::Auto,
            tools: BTreeMap::new(),
            review_expiry_s: crate::review::REVIEW_LIFETIME_S,
            self_review: false,
        }
    }
}

impl ApprovalRules {
    /// The same rule for every effect (`uniform(ApprovalRule::Auto)` for trusted automation
    /// and tests).
    pub fn uniform(rule: ApprovalRule) -> ApprovalRules {
        ApprovalRules {
            read: rule,
            write: rule,
            exec: rule,
            network: rule,
            state: rule,
            none: rule,
            tools: BTreeMap::new(),
            ..ApprovalRules::default()
        }
    }

    /// The rule `[approvals.tools]` gives the tool `name`, if it names it.
    pub fn for_tool(&self, name: &str) -> Option<MatchedRule> {
        self.tools.get(name).map(|&decision| MatchedRule {
            decision,
            rule: format!("[approvals.tools] rule for `{name}`"),
            each_call: false,
        })
    }

    /// The rule for `effect`.
    pub fn for_effect(&self, effect: Effect) -> ApprovalRule {
        match effect {
            Effect::Read => self.read,
            Effect::Write => self.write,
            Effect::Exec => self.exec,
            Effect::Network => self.network,
            Effect::State => self.state,
            Effect::None => self.none,
        }
    }

    /// The stricter rule of the two for every effect (children never loosen approvals).
    pub fn stricter(&self, other: &ApprovalRules) -> ApprovalRules {
        ApprovalRules {
            read: self.read.strictest(other.read),
            write: self.write.strictest(other.write),
            exec: self.exec.strictest(other.exec),
            network: self.network.strictest(other.network),
            state: self.state.strictest(other.state),
            none: self.none.strictest(other.none),
            tools: {
                let mut tools = self.tools.clone();
                for (name, &rule) in &other.tools {
                    let mine = tools.get(name).copied().unwrap_or(rule);
                    tools.insert(name.clone(), mine.strictest(rule));
                }
                tools
            },
            review_expiry_s: self.review_expiry_s.min(other.review_expiry_s),
            self_review: self.self_review && other.self_review,
        }
    }

    /// How a call is decided, and by which rule (none: the effect's). The tool's
    /// `[approvals.tools]` rule stands in place of its effect's (`effect`); a rule naming
    /// this very call (`call`: a `[[tools.shell.rules]]` command rule) stands in place of
    /// both, except that it never lifts a `deny` (the effect's or the tool's), and against
    /// a tool rule the stricter of the two holds (`deny` over `review` over `ask` over
    /// `auto`). An effect's `ask` or `auto` is the default a command rule exists to replace;
    /// its `review` is not: a rule naming the call may make it `deny`, never looser (a
    /// tool's own rule, such as `git_stash`'s for a drop, would otherwise hand a reviewed
    /// call back to the client's approval).
    pub fn decide(
        &self,
        tool: &str,
        effect: ApprovalRule,
        call: Option<MatchedRule>,
    ) -> (ApprovalRule, Option<MatchedRule>) {
        let (base, named) = match self.for_tool(tool) {
            Some(rule) => (rule.decision, Some(rule)),
            None => (effect, None),
        };
        let Some(call) = call else {
            return (base, named);
        };
        let loosens = base.strictest(call.decision) != call.decision;
        let lifted = base == ApprovalRule::Deny || ((named.is_some() || base == ApprovalRule::Review) && loosens);
        if lifted {
            (base, named)
        } else {
            (call.decision, Some(call))
        }
    }
}

/// A root the policy grants, relative to the workspace unless absolute.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RootSpec {
    /// The directory.
    pub path: PathBuf,
    /// Read, or read and write.
    pub access: Access,
}

/// Limits the runtime enforces on every executor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Wall-clock time of one call, in milliseconds.
    pub timeout_ms: u64,
    /// Size of one serialized result, in bytes.
    pub max_output_bytes: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            timeout_ms: 120_000,
            max_output_bytes: 4 * 1024 * 1024,
        }
    }
}

/// The policy file (`--policy FILE`, TOML) as the boundary reads it. Every field has a safe
/// default. A server reads the same file for its own settings (which tools it serves, its
/// transport's bounds) and hands the rest to this.
///
/// ```toml
/// capabilities = ["fs.read", "fs.write"]
/// max_depth = 2
/// [approvals]
/// write = "auto"
/// [[roots]]
/// path = "."
/// access = "read_write"
/// [limits]
/// timeout_ms = 30000
/// [tools.shell]              # a tool family's own table, checked by the tools that read it
/// pass_env = ["CARGO_HOME"]
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Policy {
    /// Capabilities granted to the top-level caller; when not given, every capability the
    /// served tools require (their effects' and their own), computed when the runtime
    /// starts.
    pub capabilities: Option<Vec<Capability>>,
    /// Roots; the first is where relative paths resolve. Default: the workspace, read-write.
    pub roots: Vec<RootSpec>,
    /// Approval rule per effect.
    pub approvals: ApprovalRules,
    /// How deep sub-agents may nest.
    pub max_depth: u32,
    /// Time and output limits.
    pub limits: Limits,
    /// The OS sandbox programs run under (`[sandbox]`): `run_command`, `start_process`,
    /// git's own processes and upstream MCP servers.
    pub sandbox: SandboxPolicy,
    /// Each tool family's own table (`[tools.shell]`, `[tools.network]`), checked at load
    /// against the [`Settings`](super::Settings) the registered tools declare; a table no tool reads is an
    /// error.
    pub tools: BTreeMap<String, serde_json::Value>,
}

impl Default for Policy {
    fn default() -> Policy {
        Policy {
            capabilities: None,
            roots: vec![RootSpec {
                path: PathBuf::from("."),
                access: Access::ReadWrite,
            }],
            approvals: ApprovalRules::default(),
            max_depth: 3,
            limits: Limits::default(),
            sandbox: SandboxPolicy::default(),
            tools: BTreeMap::new(),
        }
    }
}

/// What a program started by a tool may touch, enforced by the kernel (Landlock for the
/// file system and TCP, seccomp for every other socket) for the program and everything it
/// starts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Reads as `read` says; writes nowhere but a private temporary directory.
    ReadOnly,
    /// Writes beneath the writable roots (their `.git` and `.kyro` read-only), the
    /// policy's `writable` paths and a private temporary directory.
    #[default]
    WorkspaceWrite,
    /// No sandbox: the program may do whatever the kyro user may.
    Full,
}

impl SandboxMode {
    /// The mode's name, as the policy spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::Full => "full",
        }
    }
}

/// Where a sandboxed program may read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxRead {
    /// The whole file system (as the kyro user may).
    #[default]
    Everywhere,
    /// Only the roots, the system's directories (`/usr`, `/etc`, `/dev`, `/proc`, ...),
    /// the policy's `readable` paths and the private temporary directory.
    Roots,
}

/// `[sandbox]`: the OS sandbox for programs tools start.
///
/// ```toml
/// [sandbox]
/// mode = "workspace-write"   # "read-only", "workspace-write" (default) or "full"
/// network = false            # programs may not open network sockets (default)
/// read = "everywhere"        # or "roots"
/// readable = ["/opt/toolchain"]
/// writable = ["~/.cargo/registry"]
/// allow_unsandboxed = false  # where the kernel cannot sandbox: refuse (default) or run bare
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SandboxPolicy {
    /// What programs may write.
    pub mode: SandboxMode,
    /// Whether programs may open network sockets (anything but Unix sockets).
    pub network: bool,
    /// Where programs may read.
    pub read: SandboxRead,
    /// Paths readable besides the roots when `read = "roots"` (absolute, `~/...` beneath
    /// the home directory, or relative to the workspace).
    pub readable: Vec<PathBuf>,
    /// Paths writable besides the writable roots under `workspace-write` (absolute,
    /// `~/...` beneath the home directory, or relative to the workspace).
    pub writable: Vec<PathBuf>,
    /// Where the kernel cannot enforce the sandbox (no Landlock, no mount namespace): run
    /// programs without it (true) or refuse to run them (false, the default). Either way
    /// kyro says so at start-up and in every receipt.
    pub allow_unsandboxed: bool,
}
