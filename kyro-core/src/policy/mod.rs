//! Authorization: what a caller may do. The policy file, the scope derived from it (and
//! narrowed for children), and approvals bound to a call's fingerprint.

mod approval;
mod file;
mod scope;
mod settings;

pub use crate::denial::{Access, PathDenial, ScopeError};
pub(crate) use approval::UsedApprovals;
pub use approval::{APPROVAL_LIFETIME, ApprovalToken, Fingerprint, escape_invisible, invisible, summarize};
pub use file::{
    ApprovalRule, ApprovalRules, Limits, MatchedRule, Policy, RootSpec, SandboxMode, SandboxPolicy, SandboxRead,
};
pub use scope::{RootGrant, Scope, ScopeRequest};
pub use settings::{Settings, SettingsTable};
