//! A person asked from inside the boundary: a call that needs an approval it does not carry
//! is put to the call's [`Approver`] (an MCP client's form, a 2026-07-28 `input_required`
//! answer the retry brought), and what the person answered is authorized in the same pass,
//! so an approved call passes the boundary once and leaves one receipt.

use std::sync::Arc;

use crate::caller::Caller;
use crate::policy::ApprovalToken;

/// What the person is asked about: the call's tool and fingerprint, and the text they
/// read (every argument, then the tool's preview).
#[derive(Debug, Clone, Copy)]
pub struct Asked<'a> {
    /// Who is calling.
    pub caller: &'a Caller,
    /// The tool's canonical name.
    pub tool: &'a str,
    /// The fingerprint an approval must be bound to.
    pub fingerprint: &'a str,
    /// The text to approve.
    pub summary: &'a str,
    /// A rule naming this very call (a `[[tools.shell.rules]]` command rule, a tool's own
    /// rule such as `git_stash`'s for a drop) asks for it: only the person's look at these
    /// arguments passes it, so an approver offers no "for the session" or lasting grant,
    /// and an approval standing on an earlier answer about the tool does not pass it.
    pub each_call: bool,
}

/// Asks a person about a call that needs an approval; asked only after the capabilities,
/// paths and rules let the call be asked for, and only while its receipt can be written.
pub trait Approver: Send + Sync {
    /// The person's answer as a token bound to the call's fingerprint (a refusal is a
    /// token too), or `None`: nobody could be asked now, and the call is answered
    /// `approval_required`.
    fn approve<'a>(
        &'a self,
        asked: Asked<'a>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Option<ApprovalToken>> + Send + 'a>>;
}

/// A call's approver; compared by identity.
#[derive(Clone)]
pub struct ApproverHandle(pub Arc<dyn Approver>);

impl std::fmt::Debug for ApproverHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApproverHandle")
    }
}

impl PartialEq for ApproverHandle {
    fn eq(&self, other: &ApproverHandle) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}
