//! Why something was refused: a call at authorization ([`Denial`]), a path
//! ([`PathDenial`]), a scope ([`ScopeError`]). Below everything that refuses, so that errors,
//! receipts, outcomes and the policy can all name a refusal without naming each other.

use serde::{Deserialize, Serialize};

use crate::effect::{Capability, Effect};

/// How a root may be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    /// Read only.
    Read,
    /// Read and write.
    ReadWrite,
}

/// Why a scope could not be built or narrowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ScopeError {
    /// A root that cannot be opened.
    #[error("root `{path}` cannot be opened: {message}")]
    Root {
        /// The root as given.
        path: String,
        /// The system's message.
        message: String,
    },
    /// The policy grants a capability no registered tool declares and kyro does not define.
    #[error(
        "capability `{capability}` is granted but no tool declares it (kyro's own: fs.read, fs.write, exec, network, git.write, state, orchestrate)"
    )]
    UnknownCapability {
        /// The capability.
        capability: Capability,
    },
    /// A `[tools.*]` table no registered tool reads, or one its reader refuses.
    #[error("policy table [tools.{table}]: {message}")]
    Settings {
        /// The table's name.
        table: String,
        /// What is wrong with it.
        message: String,
    },
    /// `[approvals.tools]` names no tool this registry serves (by name or alias): a typo, or
    /// a tool the rule was never going to reach.
    #[error("[approvals.tools] names `{key}`, which is no served tool's name or alias{}", did_you_mean(.closest))]
    UnknownToolRule {
        /// The key as the policy spells it.
        key: String,
        /// The canonical name of the closest tool, when one is close.
        closest: Option<String>,
    },
    /// A child asked for a capability its parent does not hold.
    #[error("capability `{capability}` is not held by the parent scope")]
    CapabilityWidening {
        /// The capability.
        capability: Capability,
    },
    /// A child asked for a root outside its parent's roots, or more access than the parent.
    #[error("root `{path}` is not inside a parent root with {access:?} access")]
    RootWidening {
        /// The root asked for.
        path: String,
        /// The access asked for.
        access: Access,
    },
    /// Nesting deeper than the policy allows.
    #[error("sub-agent depth {depth} exceeds the maximum {max}")]
    TooDeep {
        /// The depth the child would have.
        depth: u32,
        /// The policy's maximum.
        max: u32,
    },
}

fn did_you_mean(closest: &Option<String>) -> String {
    match closest {
        Some(name) => format!("; did you mean `{name}`?"),
        None => " (`kyro tools` lists them)".to_owned(),
    }
}

/// Why a path argument is refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PathDenial {
    /// It resolves outside every root (by `..`, an absolute path or a symlink).
    OutsideRoots,
    /// Writing into a read-only root.
    ReadOnlyRoot,
    /// Writing into `.git` or `.kyro`.
    Protected,
    /// Writing into a directory git would take for a repository's own (`HEAD` beside
    /// `objects/`, `refs/`, `commondir` or `gitdir`, or `objects/` beside `refs/`), or making
    /// one.
    GitDirectory,
    /// Empty, or containing a NUL byte.
    Malformed,
}

/// Why a call was refused at authorization.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Denial {
    /// The scope lacks a capability the tool needs.
    MissingCapability {
        /// The capability.
        capability: Capability,
    },
    /// A path argument is refused.
    Path {
        /// The argument's JSON pointer.
        pointer: String,
        /// The path as given.
        path: String,
        /// Why.
        reason: PathDenial,
    },
    /// The policy denies this effect outright.
    PolicyForbids {
        /// The effect.
        effect: Effect,
    },
    /// A rule of the policy's that names this call denies it.
    RuleForbids {
        /// The rule.
        rule: String,
    },
    /// The call would start a program, the kernel cannot sandbox it, and the policy does
    /// not allow running without the sandbox.
    SandboxUnavailable {
        /// Why, and what to change.
        message: String,
    },
    /// The approval presented is for another call.
    ApprovalMismatch {
        /// The fingerprint the approval names.
        approved: String,
        /// This call's fingerprint.
        fingerprint: String,
    },
    /// The approval was already used once.
    ApprovalReused {
        /// This call's fingerprint.
        fingerprint: String,
    },
    /// The approval was given longer ago than approvals last.
    ApprovalExpired {
        /// This call's fingerprint.
        fingerprint: String,
        /// How long approvals last, in seconds.
        lifetime_s: u64,
    },
    /// The person asked to approve this call declined it (or dismissed the question):
    /// nothing ran, and asking again is asking them again.
    Declined {
        /// This call's fingerprint.
        fingerprint: String,
    },
    /// The approval came back in a state kyro cannot verify: changed on the way, sealed
    /// for another caller or by another server, or malformed.
    ApprovalUnverified {
        /// This call's fingerprint.
        fingerprint: String,
        /// What did not verify.
        message: String,
    },
    /// The call's receipt could not be recorded (the receipt log is not a regular file in
    /// a real `.kyro` directory, or a write to it failed): kyro runs no call it cannot
    /// record.
    ReceiptsUnwritable {
        /// What is wrong with the log.
        message: String,
    },
    /// An approver denied the reviewed call.
    ReviewDenied {
        /// The review's id.
        approval_id: String,
        /// Who denied it.
        approver: String,
        /// Their reason.
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// Nobody decided the reviewed call in time (or its approval was not used in time).
    ReviewExpired {
        /// The review's id.
        approval_id: String,
    },
    /// The call needs a review the server cannot keep now (no queue, the queue full or
    /// unreadable).
    ReviewUnavailable {
        /// Why.
        message: String,
    },
    /// A sub-agent asked for a scope wider than its caller's, or nested too deep.
    Scope {
        /// Why.
        error: ScopeError,
    },
}

impl std::fmt::Display for Denial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Denial::Scope { error } => write!(f, "the sub-agent's scope is refused: {error}"),
            Denial::MissingCapability { capability } => {
                write!(f, "the caller's scope does not grant `{capability}`")
            }
            Denial::Path { path, reason, .. } => match reason {
                PathDenial::OutsideRoots => write!(f, "`{path}` is outside the workspace roots"),
                PathDenial::ReadOnlyRoot => write!(f, "`{path}` is in a read-only root"),
                PathDenial::Protected => write!(
                    f,
                    "`{path}` is inside `.git`, `.kyro` or kyro's state directory, which tools may not write"
                ),
                PathDenial::GitDirectory => write!(
                    f,
                    "`{path}` is in, or would make, a git directory (`HEAD` beside `objects/`, `refs/`, `commondir` or `gitdir`), which tools may not write"
                ),
                PathDenial::Malformed => write!(f, "`{path}` is not a usable path"),
            },
            Denial::PolicyForbids { effect } => write!(f, "the policy denies `{effect}` tools"),
            Denial::RuleForbids { rule } => write!(f, "the policy's {rule} denies this call"),
            Denial::SandboxUnavailable { message } => write!(f, "{message}"),
            Denial::ReceiptsUnwritable { message } => write!(
                f,
                "the call's receipt cannot be recorded ({message}); kyro runs no call it cannot record"
            ),
            Denial::ApprovalMismatch { approved, fingerprint } => write!(
                f,
                "the approval is for call {approved}, not this call {fingerprint}; arguments changed since approval"
            ),
            Denial::ApprovalReused { fingerprint } => {
                write!(
                    f,
                    "the approval for {fingerprint} was already used; approvals are single-use"
                )
            }
            Denial::Declined { fingerprint } => write!(
                f,
                "the person declined this call ({fingerprint}); nothing ran. Do not retry it unless they ask for it"
            ),
            Denial::ReviewDenied {
                approval_id,
                approver,
                reason,
            } => {
                write!(f, "{approver} denied this call (approval {approval_id})")?;
                match reason {
                    Some(reason) => write!(f, ": {reason}"),
                    None => Ok(()),
                }?;
                write!(f, "; nothing ran. Do not retry it")
            }
            Denial::ReviewExpired { approval_id } => write!(
                f,
                "nobody approved this call in time (approval {approval_id} expired); nothing ran. Calling it again asks anew"
            ),
            Denial::ReviewUnavailable { message } => {
                write!(
                    f,
                    "this call needs an approver's review, which cannot be asked now: {message}"
                )
            }
            Denial::ApprovalUnverified { fingerprint, message } => write!(
                f,
                "the approval for {fingerprint} does not verify ({message}); nothing ran. Call again to be asked anew"
            ),
            Denial::ApprovalExpired {
                fingerprint,
                lifetime_s,
            } => {
                write!(
                    f,
                    "the approval for {fingerprint} has expired (approvals last {lifetime_s} s); ask again"
                )
            }
        }
    }
}
