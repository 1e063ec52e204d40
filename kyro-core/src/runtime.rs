//! The call boundary: every surface calls [`Runtime::execute_call`] (or [`Runtime::execute`]
//! for the receipt too), and nothing else runs a tool.
//!
//! The steps, in order: resolve the name; take the arguments object as sent; rewrite
//! argument aliases; validate; take the canonical snapshot and its fingerprint; authorize
//! (capabilities, paths, approvals); deserialize and execute under the limits; record a
//! receipt; hand it to the observers. No side effect happens before authorization passed.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::catalog::bind_tool_rules;
use crate::context::{Dispatch, Workspace};
use crate::error::ToolError;
use crate::grants::ApprovalStore;
use crate::outcome::{Call, Outcome};
use crate::policy::{Fingerprint, Limits, Policy, Scope, ScopeError, UsedApprovals};
use crate::receipt::{EffectLog, Execution, Observer, Receipt};
use crate::registry::{Registry, Snapshot};
use crate::stop::StopSignal;

/// The runtime: a registry, the workspace, the top-level scope, limits and observers.
/// Cloning it shares them (every call's context holds the runtime it came through).
#[derive(Clone)]
pub struct Runtime {
    shared: Arc<Shared>,
}

#[derive(Clone)]
struct Shared {
    registry: Arc<Registry>,
    workspace: Workspace,
    scope: Scope,
    limits: Limits,
    observers: Vec<Arc<dyn Observer>>,
    used_approvals: Arc<Mutex<UsedApprovals>>,
    approval_store: Option<Arc<dyn ApprovalStore>>,
    /// The inbox page's address (`http://HOST/approvals`), named to a call pending review.
    review_inbox: Option<Arc<str>>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("workspace", &self.shared.workspace)
            .field("scope", &self.shared.scope)
            .finish_non_exhaustive()
    }
}

impl Runtime {
    /// A runtime over `registry` in `workspace` under `policy`. A policy that lists no
    /// capabilities grants every one the registered tools require; a capability it lists
    /// must be an effect's or one a registered tool declares, and an
    /// `[approvals.tools]` key a registered tool's name or alias (an alias stands for its
    /// tool; a namespaced `NAME.tool` key waits for [`Runtime::check_tool_rules`]): a
    /// misspelt grant or rule is an error, not a silent no-op.
    pub fn new(registry: Arc<Registry>, workspace: Workspace, policy: &Policy) -> Result<Runtime, ScopeError> {
        Ok(Runtime {
            shared: Arc::new(Shared {
                scope: bound_scope(&registry.snapshot(), workspace.root(), policy, true)?,
                registry,
                workspace,
                limits: policy.limits,
                observers: Vec::new(),
                used_approvals: Arc::default(),
                approval_store: None,
                review_inbox: None,
            }),
        })
    }

    /// The top-level scope `policy` gives, checked as [`Runtime::new`] checks its own
    /// against the tools registered now (namespaced rules included): one caller's scope
    /// when callers have policies of their own. Limits stay this runtime's.
    pub fn scope_for(&self, policy: &Policy) -> Result<Scope, ScopeError> {
        bound_scope(
            &self.shared.registry.snapshot(),
            self.shared.workspace.root(),
            policy,
            false,
        )
    }

    /// Where grants and spent approvals are kept; without one, no call is granted.
    pub fn with_approval_store(mut self, store: Arc<dyn ApprovalStore>) -> Runtime {
        Arc::make_mut(&mut self.shared).approval_store = Some(store);
        self
    }

    /// The store of grants and spent approvals, when there is one.
    pub fn approval_store(&self) -> Option<&Arc<dyn ApprovalStore>> {
        self.shared.approval_store.as_ref()
    }

    /// Where an approver decides a call pending review (the HTTP server's
    /// `http://HOST/approvals`): named in the call's `approval_pending` answer.
    pub fn with_review_inbox(mut self, inbox: &str) -> Runtime {
        Arc::make_mut(&mut self.shared).review_inbox = Some(inbox.into());
        self
    }

    /// The inbox page's address, when the server serves one.
    pub fn review_inbox(&self) -> Option<&str> {
        self.shared.review_inbox.as_deref()
    }

    /// Adds an observer of every receipt.
    pub fn with_observer(mut self, observer: Arc<dyn Observer>) -> Runtime {
        Arc::make_mut(&mut self.shared).observers.push(observer);
        self
    }

    /// Checks every `[approvals.tools]` key against the tools registered now, namespaced
    /// ones (`NAME.tool`) included: call it once the upstream servers are connected.
    pub fn check_tool_rules(&self) -> Result<(), ScopeError> {
        bind_tool_rules(self.shared.scope.approvals(), &self.shared.registry.snapshot(), false).map(drop)
    }

    /// Whether every observer can record the next call; when one cannot (a receipt log
    /// that is not a regular file, or lost a write), calls are refused before
    /// authorization with `denied` (`receipts_unwritable`), so nothing runs unrecorded.
    pub fn observers_ready(&self) -> Result<(), String> {
        self.shared.observers.iter().try_for_each(|observer| observer.ready())
    }

    /// Has every observer write out what it holds back (a batched receipt log).
    pub fn flush_observers(&self) {
        self.shared.observers.iter().for_each(|o| o.flush());
    }

    /// The registry.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.shared.registry
    }

    /// The fingerprint of a call to `tool` with `arguments` under `scope` in this runtime's
    /// workspace: what an approval of that call is bound to.
    pub fn fingerprint(&self, tool: &str, arguments: &Value, scope: &Scope) -> Fingerprint {
        Fingerprint::of(tool, arguments, scope, self.shared.workspace.root()).1
    }

    /// The approvals spent in this process (each is good once).
    pub(crate) fn used_approvals(&self) -> &Mutex<UsedApprovals> {
        &self.shared.used_approvals
    }

    /// The workspace.
    pub fn workspace(&self) -> &Workspace {
        &self.shared.workspace
    }

    /// The limits every call runs under, and the transports' (requests in flight).
    pub fn limits(&self) -> &Limits {
        &self.shared.limits
    }

    /// The top-level scope.
    pub fn scope(&self) -> &Scope {
        &self.shared.scope
    }

    /// Runs one call in the top-level scope and returns its outcome.
    pub async fn execute_call(&self, call: Call) -> Outcome {
        self.execute(call).await.outcome
    }

    /// Runs one call in the top-level scope; outcome and receipt.
    pub async fn execute(&self, call: Call) -> Execution {
        self.execute_in(call, &self.shared.scope, None).await
    }

    /// Runs one call in `scope` (a child scope for batches and sub-agents), its receipt
    /// linked to `parent_call_id`.
    pub async fn execute_in(&self, call: Call, scope: &Scope, parent_call_id: Option<&str>) -> Execution {
        self.execute_until(call, scope, parent_call_id, std::future::pending())
            .await
    }

    /// Like [`Runtime::execute_in`], stopping the executor when `cancel` completes first
    /// (the outcome is then `cancelled`, with its receipt).
    pub async fn execute_until(
        &self,
        call: Call,
        scope: &Scope,
        parent_call_id: Option<&str>,
        cancel: impl Future<Output = ()>,
    ) -> Execution {
        self.run_call(call, scope, parent_call_id, None, cancel).await
    }

    /// One call; `parent_stop` is the stop signal of the call that made this one.
    async fn run_call(
        &self,
        call: Call,
        scope: &Scope,
        parent_call_id: Option<&str>,
        parent_stop: Option<&StopSignal>,
        cancel: impl Future<Output = ()>,
    ) -> Execution {
        let start = Instant::now();
        let started_at_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let call_id = new_call_id();
        let effects = Arc::new(EffectLog::default());
        let tool_name = call.tool.clone();
        let caller = call.caller.clone();
        let traceparent = call.traceparent.clone();
        let task_id = call.task.as_ref().map(|t| t.id().to_owned());
        let staged = self.stage(call, scope, &call_id, &effects, (parent_stop, cancel)).await;
        let receipt = Receipt {
            call_id,
            parent_call_id: parent_call_id.map(str::to_owned),
            caller,
            traceparent,
            task_id: task_id.filter(|_| staged.decision.let_through()),
            tool: staged.tool.unwrap_or(tool_name),
            fingerprint: staged.canonical.as_ref().map(|c| c.fingerprint.clone()),
            decision: staged.decision,
            outcome: staged.outcome.kind(),
            error_kind: match &staged.outcome {
                Outcome::ExecutionFailed { error, .. } => Some(error.kind()),
                _ => None,
            },
            error_data: match &staged.outcome {
                Outcome::ExecutionFailed { error, .. } => error.data(),
                _ => None,
            },
            work_stopped: staged.work_stopped,
            started_at_ms,
            duration_us: start.elapsed().as_micros() as u64,
            effects: effects.take(),
        };
        for observer in &self.shared.observers {
            observer.observe(&receipt, staged.canonical.as_ref(), &staged.outcome);
        }
        // A call that ran is not acknowledged before its receipt is kept; a refusal (nothing
        // ran) is answered as it is.
        let mut outcome = staged.outcome;
        let mut told = None;
        for observer in &self.shared.observers {
            if let Some(settled) = observer.settled()
                && let Err(why) = settled.await
                && receipt.decision.let_through()
                && !matches!(outcome, Outcome::ExecutionFailed { ref error, .. } if error.kind() == "receipt_unrecorded")
            {
                outcome = unrecorded(outcome, &why);
                told = Some(Receipt {
                    outcome: outcome.kind(),
                    error_kind: Some("receipt_unrecorded".to_owned()),
                    error_data: None,
                    ..receipt.clone()
                });
            }
        }
        for observer in &self.shared.observers {
            observer.answered(told.as_ref().unwrap_or(&receipt), &outcome);
        }
        Execution { outcome, receipt }
    }
}

/// The scope `policy` gives over `snapshot`: every capability it grants must be an
/// effect's or a served tool's, every `[tools.*]` table one a served tool reads, every
/// `[approvals.tools]` key a served tool's (a namespaced one may wait for its upstream
/// when `pending_namespaced`); no capability list grants what the served tools need.
fn bound_scope(
    snapshot: &Snapshot,
    root: &std::path::Path,
    policy: &Policy,
    pending_namespaced: bool,
) -> Result<Scope, ScopeError> {
    if let Some(unknown) = policy.capabilities.iter().flatten().find(|granted| {
        !crate::Capability::OF_EFFECTS.contains(granted)
            && !snapshot.descriptors().any(|d| d.capabilities.contains(granted))
    }) {
        return Err(ScopeError::UnknownCapability {
            capability: unknown.clone(),
        });
    }
    for (table, content) in &policy.tools {
        let readers: Vec<_> = snapshot
            .tools()
            .flat_map(|t| t.settings())
            .filter(|s| s.table == table)
            .collect();
        if readers.is_empty() {
            let mut known: Vec<_> = snapshot.tools().flat_map(|t| t.settings()).map(|s| s.table).collect();
            known.sort_unstable();
            known.dedup();
            return Err(ScopeError::Settings {
                table: table.clone(),
                message: format!(
                    "no served tool reads this table (tables read: {})",
                    if known.is_empty() {
                        "none".to_owned()
                    } else {
                        known.join(", ")
                    }
                ),
            });
        }
        for reader in readers {
            reader.check(content).map_err(|message| ScopeError::Settings {
                table: table.clone(),
                message,
            })?;
        }
    }
    // No list granted: every capability a served tool requires.
    let capabilities = policy.capabilities.clone().unwrap_or_else(|| {
        let mut needed: Vec<_> = crate::Capability::OF_EFFECTS.to_vec();
        needed.extend(snapshot.descriptors().flat_map(|d| d.capabilities.iter().cloned()));
        needed.sort_unstable();
        needed.dedup();
        needed
    });
    let bound = Policy {
        approvals: bind_tool_rules(&policy.approvals, snapshot, pending_namespaced)?,
        capabilities: Some(capabilities),
        ..policy.clone()
    };
    Scope::from_policy(&bound, root)
}

/// A call's id: its start in nanoseconds (ids sort by time), then 64 random bits, so the
/// ids of replicas sharing one receipt store never meet (containers all run as pid 1).
fn new_call_id() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut random = [0u8; 8];
    // The system's random source; should it fail, a counter keeps one process's ids apart.
    if getrandom::fill(&mut random).is_err() {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        random = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed).to_be_bytes();
    }
    format!("{nanos:016x}-{:016x}", u64::from_be_bytes(random))
}

/// The answer to a call whose receipt could not be kept: the call ran (or was refused) as
/// `outcome` says, which the error carries whole, so nobody runs it again believing it
/// failed.
fn unrecorded(outcome: Outcome, why: &str) -> Outcome {
    let ended = outcome.to_json();
    let error = ToolError::custom(
        "receipt_unrecorded",
        format!(
            "the call ended `{}`, but its receipt is not recorded yet ({why}); it is kept and \
             written when the store is back, and no call runs until then. Do not run it again \
             without checking its effect",
            ended["outcome"].as_str().unwrap_or_default()
        ),
    )
    .with_data(serde_json::json!({"ended": ended}));
    Outcome::ExecutionFailed {
        tool: outcome.tool().to_owned(),
        error,
    }
}

impl Dispatch for Runtime {
    fn execute<'a>(
        &'a self,
        call: Call,
        scope: &'a Scope,
        parent: (&'a str, &'a StopSignal),
    ) -> std::pin::Pin<Box<dyn Future<Output = Execution> + Send + 'a>> {
        Box::pin(self.run_call(call, scope, Some(parent.0), Some(parent.1), std::future::pending()))
    }

    fn fingerprint(&self, tool: &str, arguments: &Value, scope: &Scope) -> String {
        Runtime::fingerprint(self, tool, arguments, scope).to_string()
    }

    fn workspace(&self) -> &Workspace {
        &self.shared.workspace
    }
}
