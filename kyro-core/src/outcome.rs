//! What a call is (a tool name, its arguments, an approval, a progress sink) and what it
//! comes to: the typed [`Outcome`], its kind, and the receipt beside it.

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Value, json};

use crate::approver::{Approver, ApproverHandle};
use crate::caller::Caller;
use crate::denial::Denial;
use crate::error::ToolError;
use crate::policy::ApprovalToken;
use crate::schema::Violation;

/// A call as every surface hands it over: a tool name and a JSON arguments value.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// Canonical name or alias.
    pub tool: String,
    /// The arguments exactly as the caller sent them; must be an object.
    pub arguments: Value,
    /// An approval bound to this call's fingerprint, when the caller has one.
    pub approval: Option<ApprovalToken>,
    /// Where a long tool's progress goes, when the caller wants it.
    pub progress: Option<ProgressSink>,
    /// Who is asking, as the edge the call came in through established it.
    pub caller: Caller,
    /// The W3C trace context the caller sent (`traceparent`), kept in the receipt.
    pub traceparent: Option<String>,
    /// Set when the call may become a task: told when the call passed authorization.
    pub task: Option<TaskHook>,
    /// Who is asked when the call needs an approval it does not carry.
    pub approver: Option<ApproverHandle>,
}

impl Call {
    /// The same call without its approval and nobody to ask (what a tool's own child
    /// calls become).
    pub fn unapproved(mut self) -> Call {
        self.approval = None;
        self.approver = None;
        self
    }

    /// The same call, asking `approver` when it needs an approval it does not carry.
    pub fn asking(mut self, approver: Arc<dyn Approver>) -> Call {
        self.approver = Some(ApproverHandle(approver));
        self
    }

    /// A call of `tool` with `arguments`.
    pub fn new(tool: impl Into<String>, arguments: Value) -> Call {
        Call {
            tool: tool.into(),
            arguments,
            approval: None,
            progress: None,
            caller: Caller::local(),
            traceparent: None,
            task: None,
            approver: None,
        }
    }

    /// The same call, to run as the task `hook` names once it is authorized.
    pub fn as_task(mut self, hook: TaskHook) -> Call {
        self.task = Some(hook);
        self
    }

    /// The same call in the trace `traceparent` (a W3C `traceparent` value); one that is
    /// not well formed is left out.
    pub fn in_trace(mut self, traceparent: &str) -> Call {
        self.traceparent = well_formed_traceparent(traceparent).then(|| traceparent.to_owned());
        self
    }

    /// The same call made by `caller`.
    pub fn by(mut self, caller: Caller) -> Call {
        self.caller = caller;
        self
    }

    /// The same call reporting progress to `sink`.
    pub fn with_progress(mut self, sink: Arc<dyn Progress>) -> Call {
        self.progress = Some(ProgressSink(sink));
        self
    }

    /// The same call carrying an approval.
    pub fn approved(mut self, token: ApprovalToken) -> Call {
        self.approval = Some(token);
        self
    }
}

/// A call that may run as a task (MCP tasks extension): the runtime tells the hook's
/// receiver the moment the call passed authorization, before the tool runs, so the edge
/// can hand its client a task id while the work goes on; the receipt names the task.
/// A call refused before it ran drops the hook without telling (the receiver then sees
/// its sender gone) and is answered as any call.
#[derive(Clone)]
pub struct TaskHook {
    id: Arc<str>,
    authorized: Arc<std::sync::Mutex<Option<tokio::sync::oneshot::Sender<()>>>>,
    /// What the task waits for before it runs (an approver's review), while it does.
    waiting: TaskWaiting,
}

/// What a task waits for before it runs, while it does: read by the edge that hands out
/// the task (a status message), apart from the hook, whose drop tells a refusal.
#[derive(Clone, Default)]
pub struct TaskWaiting(Arc<std::sync::Mutex<Option<String>>>);

impl TaskWaiting {
    /// What the task waits for, while it waits.
    pub fn now(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn set(&self, what: Option<String>) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = what;
    }
}

impl TaskHook {
    /// A hook for the task `id`, and what hears of the authorization.
    pub fn new(id: &str) -> (TaskHook, tokio::sync::oneshot::Receiver<()>) {
        let (sender, receiver) = tokio::sync::oneshot::channel();
        let hook = TaskHook {
            id: id.into(),
            authorized: Arc::new(std::sync::Mutex::new(Some(sender))),
            waiting: TaskWaiting::default(),
        };
        (hook, receiver)
    }

    /// The task's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// What the task waits for before it runs (`waits for an approver's review ...`),
    /// while it waits: the task's status message. Keep this, not a clone of the hook,
    /// whose drop is what tells a refused call.
    pub fn waiting(&self) -> TaskWaiting {
        self.waiting.clone()
    }

    /// The call becomes its task now, and waits for `what` before it runs.
    pub(crate) fn waits(&self, what: String) {
        self.waiting.set(Some(what));
        self.authorized();
    }

    /// The wait is over: the call runs (or is refused).
    pub(crate) fn waited(&self) {
        self.waiting.set(None);
    }

    /// Tells the receiver the call was authorized (once).
    pub(crate) fn authorized(&self) {
        if let Some(sender) = self.authorized.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = sender.send(());
        }
    }
}

impl std::fmt::Debug for TaskHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TaskHook({})", self.id)
    }
}

impl PartialEq for TaskHook {
    fn eq(&self, other: &TaskHook) -> bool {
        self.id == other.id
    }
}

/// `00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>`, lowercase, ids not all zero,
/// version not `ff` (W3C Trace Context).
fn well_formed_traceparent(value: &str) -> bool {
    let parts: Vec<&str> = value.split('-').collect();
    let hex =
        |s: &str, len: usize| s.len() == len && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    let [version, trace, parent, flags] = parts.as_slice() else {
        return false;
    };
    hex(version, 2)
        && *version != "ff"
        && hex(trace, 32)
        && hex(parent, 16)
        && hex(flags, 2)
        && trace.bytes().any(|b| b != b'0')
        && parent.bytes().any(|b| b != b'0')
}

/// The kind of an outcome, as a stable snake_case word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeKind {
    /// The tool ran and returned a result.
    Ok,
    /// The arguments were refused before anything ran.
    InvalidArguments,
    /// No tool has that name or alias.
    UnknownTool,
    /// Authorization refused the call.
    Denied,
    /// The call needs an approval bound to its fingerprint.
    ApprovalRequired,
    /// The call waits for a named approver's review; nothing ran.
    ApprovalPending,
    /// The tool ran and failed.
    ExecutionFailed,
    /// The tool ran past its time limit and was stopped.
    TimedOut,
    /// The caller cancelled the call while it ran; the executor was stopped.
    Cancelled,
}

/// The typed result of a call.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The tool's result, valid against its output schema.
    Ok {
        /// Canonical tool name.
        tool: String,
        /// The result object.
        result: Value,
        /// The result as text for reading, when the tool renders one
        /// (the tool's `Execute::text`).
        text: Option<String>,
    },
    /// Every reason the arguments were refused.
    InvalidArguments {
        /// Canonical tool name.
        tool: String,
        /// Violations, sorted by pointer.
        violations: Vec<Violation>,
    },
    /// No such tool.
    UnknownTool {
        /// The name asked for.
        name: String,
        /// Names that look close, best first.
        suggestions: Vec<String>,
    },
    /// Authorization refused the call; nothing ran.
    Denied {
        /// Canonical tool name.
        tool: String,
        /// Why.
        reason: Denial,
    },
    /// Nothing ran; an approval of this fingerprint would let it.
    ApprovalRequired {
        /// Canonical tool name.
        tool: String,
        /// The fingerprint to approve.
        fingerprint: String,
        /// What the call would do, for the human.
        summary: String,
    },
    /// Nothing ran; the call waits for a named approver's review, and runs once when the
    /// same call comes again after it was approved.
    ApprovalPending {
        /// Canonical tool name.
        tool: String,
        /// The call's fingerprint.
        fingerprint: String,
        /// The review's id.
        approval_id: String,
        /// Where an approver decides it (the inbox page), when the server serves one.
        inbox: Option<String>,
        /// When the review expires and the call is denied, in milliseconds since the
        /// Unix epoch.
        expires_at_ms: u64,
    },
    /// The executor failed.
    ExecutionFailed {
        /// Canonical tool name.
        tool: String,
        /// What went wrong.
        error: ToolError,
    },
    /// The executor ran past the time limit.
    TimedOut {
        /// Canonical tool name.
        tool: String,
        /// The limit, in milliseconds.
        limit_ms: u64,
    },
    /// The caller cancelled the call; the executor was stopped.
    Cancelled {
        /// Canonical tool name.
        tool: String,
    },
}

impl Outcome {
    /// The outcome's kind.
    pub fn kind(&self) -> OutcomeKind {
        match self {
            Outcome::Ok { .. } => OutcomeKind::Ok,
            Outcome::InvalidArguments { .. } => OutcomeKind::InvalidArguments,
            Outcome::UnknownTool { .. } => OutcomeKind::UnknownTool,
            Outcome::Denied { .. } => OutcomeKind::Denied,
            Outcome::ApprovalRequired { .. } => OutcomeKind::ApprovalRequired,
            Outcome::ApprovalPending { .. } => OutcomeKind::ApprovalPending,
            Outcome::ExecutionFailed { .. } => OutcomeKind::ExecutionFailed,
            Outcome::TimedOut { .. } => OutcomeKind::TimedOut,
            Outcome::Cancelled { .. } => OutcomeKind::Cancelled,
        }
    }

    /// The canonical tool name, or the name asked for when no tool has it.
    pub fn tool(&self) -> &str {
        match self {
            Outcome::Ok { tool, .. }
            | Outcome::InvalidArguments { tool, .. }
            | Outcome::Denied { tool, .. }
            | Outcome::ApprovalRequired { tool, .. }
            | Outcome::ApprovalPending { tool, .. }
            | Outcome::ExecutionFailed { tool, .. }
            | Outcome::TimedOut { tool, .. }
            | Outcome::Cancelled { tool } => tool,
            Outcome::UnknownTool { name, .. } => name,
        }
    }

    /// The wire form: `{"outcome": kind, "tool"?, "result"?, "error"?}`.
    pub fn to_json(&self) -> Value {
        let kind = self.kind();
        match self {
            Outcome::Ok { tool, result, .. } => {
                json!({"outcome": kind, "tool": tool, "result": result})
            }
            Outcome::InvalidArguments { tool, violations } => json!({
                "outcome": kind,
                "tool": tool,
                "error": {"message": invalid_message(violations), "violations": violations},
            }),
            Outcome::UnknownTool { name, suggestions } => json!({
                "outcome": kind,
                "error": {"message": format!("no tool is named `{name}`"), "name": name, "suggestions": suggestions},
            }),
            Outcome::Denied { tool, reason } => json!({
                "outcome": kind,
                "tool": tool,
                "error": {"message": format!("denied: {reason}"), "reason": reason},
            }),
            Outcome::ApprovalRequired {
                tool,
                fingerprint,
                summary,
            } => json!({
                "outcome": kind,
                "tool": tool,
                "error": {
                    "message": format!(
                        "{summary}\nneeds a person's approval of exactly this call (fingerprint {fingerprint}). \
                         Ask the user: a client that can ask (MCP elicitation) shows them this text; \
                         or the policy can allow it without asking: `[approvals.tools] \
                         \"{tool}\" = \"auto\"` for every call of this tool"
                    ),
                    "fingerprint": fingerprint,
                    "summary": summary,
                },
            }),
            Outcome::ApprovalPending {
                tool,
                fingerprint,
                approval_id,
                inbox,
                expires_at_ms,
            } => {
                let place = match inbox {
                    Some(inbox) => format!("at {inbox} or with `kyro approvals approve {approval_id}`"),
                    None => format!("with `kyro approvals approve {approval_id}`"),
                };
                let hours = expires_at_ms
                    .saturating_sub(crate::grants::now_ms())
                    .div_ceil(3_600_000);
                json!({
                    "outcome": kind,
                    "tool": tool,
                    "error": {
                        "message": format!(
                            "`{tool}` waits for an approver's review (approval {approval_id}); nothing ran. \
                             An approver decides it {place}; the user cannot approve it through this client. \
                             Once it is approved, call `{tool}` again with exactly the same arguments: it runs once. \
                             Unless decided within {hours} h it is denied"
                        ),
                        "approval_id": approval_id,
                        "fingerprint": fingerprint,
                        "inbox": inbox,
                        "expires_at_ms": expires_at_ms,
                    },
                })
            }
            Outcome::ExecutionFailed { tool, error } => json!({
                "outcome": kind,
                "tool": tool,
                "error": error.to_json(),
            }),
            Outcome::TimedOut { tool, limit_ms } => json!({
                "outcome": kind,
                "tool": tool,
                "error": {"message": format!("`{tool}` ran past its {limit_ms} ms limit and was stopped"), "limit_ms": limit_ms},
            }),
            Outcome::Cancelled { tool } => json!({
                "outcome": kind,
                "tool": tool,
                "error": {"message": format!("`{tool}` was cancelled by the caller")},
            }),
        }
    }
}

fn invalid_message(violations: &[Violation]) -> String {
    let parts: Vec<String> = violations
        .iter()
        .map(|v| {
            let at = if v.pointer.is_empty() { "arguments" } else { &v.pointer };
            format!("{at}: {}", v.message)
        })
        .collect();
    format!("invalid arguments: {}", parts.join("; "))
}

/// Receives a long tool's progress reports (MCP `notifications/progress` when the client
/// sent a progress token).
pub trait Progress: Send + Sync {
    /// `done` grows with every report; `total` when known.
    fn report(&self, done: f64, total: Option<f64>, message: Option<&str>);
}

/// A shareable progress receiver; compared by identity.
#[derive(Clone)]
pub struct ProgressSink(pub Arc<dyn Progress>);

impl std::fmt::Debug for ProgressSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProgressSink")
    }
}

impl PartialEq for ProgressSink {
    fn eq(&self, other: &ProgressSink) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

#[cfg(test)]
mod tests {
    use super::Call;

    #[test]
    fn a_trace_context_is_kept_only_when_well_formed() {
        let good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        assert_eq!(
            Call::new("t", Default::default()).in_trace(good).traceparent.as_deref(),
            Some(good)
        );
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\ninjected",
        ] {
            assert_eq!(
                Call::new("t", Default::default()).in_trace(bad).traceparent,
                None,
                "{bad:?}"
            );
        }
    }
}

#[cfg(test)]
mod approval_text {
    use super::Outcome;

    #[test]
    fn an_approval_required_text_names_no_program_an_authors_server_lacks() {
        let outcome = Outcome::ApprovalRequired {
            tool: "write_file".into(),
            fingerprint: "ab".into(),
            summary: "write_file {}".into(),
        };
        let message = outcome.to_json()["error"]["message"].as_str().unwrap().to_owned();
        assert!(!message.contains("kyro "), "{message}");
        assert!(message.contains("[approvals.tools]"), "{message}");
    }
}
