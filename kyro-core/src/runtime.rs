//! The call boundary: every surface calls [`Runtime::execute_call`] (or [`Runtime::execute`]
//! for the receipt too), and nothing else runs a tool.
//!
//! The steps, in order: resolve the name; take the arguments object as sent; rewrite
//! argument aliases; validate; take the canonical snapshot and its fingerprint; authorize
//! (capabilities, paths, approvals); deserialize and execute under the limits; record a
//! receipt; hand it to the observers. No side effect happens before authorization passed.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};

use crate::arguments::{json_type, rewrite_aliases};
use crate::authorize::{access_for, authorize, grant_for};
use crate::caller::Caller;
use crate::catalog::bind_tool_rules;
use crate::context::{CallParts, Dispatch, ToolContext, Workspace};
use crate::error::ToolError;
use crate::grants::ApprovalStore;
use crate::offload::{Offloaded, first_of};
use crate::outcome::{Call, Outcome};
use crate::policy::{Access, ApprovalToken, Fingerprint, Limits, Policy, Scope, ScopeError, UsedApprovals, summarize};
use crate::receipt::{CanonicalCall, Decision, Denial, EffectLog, Execution, Observer, Receipt};
use crate::registry::{RegisteredTool, Registry, Snapshot};
use crate::schema::Violation;
use crate::stop::StopSignal;

/// The runtime: a registry, the workspace, the top-level scope, limits and observers.
#[derive(Clone)]
pub struct Runtime {
    registry: Arc<Registry>,
    workspace: Workspace,
    scope: Scope,
    limits: Limits,
    observers: Vec<Arc<dyn Observer>>,
    used_approvals: Arc<Mutex<UsedApprovals>>,
    approval_store: Option<Arc<dyn ApprovalStore>>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("workspace", &self.workspace)
            .field("scope", &self.scope)
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
            scope: bound_scope(&registry.snapshot(), workspace.root(), policy, true)?,
            registry,
            workspace,
            limits: policy.limits,
            observers: Vec::new(),
            used_approvals: Arc::default(),
            approval_store: None,
        })
    }

    /// The top-level scope `policy` gives, checked as [`Runtime::new`] checks its own
    /// against the tools registered now (namespaced rules included): one caller's scope
    /// when callers have policies of their own. Limits stay this runtime's.
    pub fn scope_for(&self, policy: &Policy) -> Result<Scope, ScopeError> {
        bound_scope(&self.registry.snapshot(), self.workspace.root(), policy, false)
    }

    /// Where grants and spent approvals are kept; without one, no call is granted.
    pub fn with_approval_store(mut self, store: Arc<dyn ApprovalStore>) -> Runtime {
        self.approval_store = Some(store);
        self
    }

    /// The store of grants and spent approvals, when there is one.
    pub fn approval_store(&self) -> Option<&Arc<dyn ApprovalStore>> {
        self.approval_store.as_ref()
    }

    /// Adds an observer of every receipt.
    pub fn with_observer(mut self, observer: Arc<dyn Observer>) -> Runtime {
        self.observers.push(observer);
        self
    }

    /// Checks every `[approvals.tools]` key against the tools registered now, namespaced
    /// ones (`NAME.tool`) included: call it once the upstream servers are connected.
    pub fn check_tool_rules(&self) -> Result<(), ScopeError> {
        bind_tool_rules(self.scope.approvals(), &self.registry.snapshot(), false).map(drop)
    }

    /// Whether every observer can record the next call; when one cannot (a receipt log
    /// that is not a regular file, or lost a write), calls are refused before
    /// authorization with `denied` (`receipts_unwritable`), so nothing runs unrecorded.
    pub fn observers_ready(&self) -> Result<(), String> {
        self.observers.iter().try_for_each(|observer| observer.ready())
    }

    /// Has every observer write out what it holds back (a batched receipt log).
    pub fn flush_observers(&self) {
        self.observers.iter().for_each(|o| o.flush());
    }

    /// The registry.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// The fingerprint of a call to `tool` with `arguments` under `scope` in this runtime's
    /// workspace: what an approval of that call is bound to.
    pub fn fingerprint(&self, tool: &str, arguments: &Value, scope: &Scope) -> Fingerprint {
        Fingerprint::of(tool, arguments, scope, self.workspace.root()).1
    }

    /// The text a person approves: every argument, then the tool's own preview (a diff, a
    /// command line), computed under a context that can read and never write.
    fn approval_summary(
        &self,
        tool: &RegisteredTool,
        name: &str,
        arguments: &Value,
        scope: &Scope,
        snapshot: &Arc<Snapshot>,
        (call_id, caller): (&str, &Caller),
    ) -> String {
        let mut summary = summarize(name, arguments);
        let cx = ToolContext::new(
            CallParts {
                scope: scope.clone(),
                catalog: snapshot.clone(),
                effect: tool.descriptor().effect,
                access: Access::Read,
                effects: Arc::new(EffectLog::default()),
                call_id: call_id.to_owned(),
                caller: caller.clone(),
                progress: None,
                confined: HashMap::new(),
                approved_exactly: false,
                stop: StopSignal::default(),
                output_limit: self.limits.max_output_bytes,
                text: Arc::default(),
            },
            Arc::new(self.clone()),
        );
        if let Some(preview) = tool.executor().preview(arguments, &cx) {
            summary.push('\n');
            summary.push_str(&crate::policy::escape_invisible(&preview));
        }
        summary
    }

    /// The workspace.
    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// The limits every call runs under, and the transports' (requests in flight).
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The top-level scope.
    pub fn scope(&self) -> &Scope {
        &self.scope
    }

    /// Runs one call in the top-level scope and returns its outcome.
    pub async fn execute_call(&self, call: Call) -> Outcome {
        self.execute(call).await.outcome
    }

    /// Runs one call in the top-level scope; outcome and receipt.
    pub async fn execute(&self, call: Call) -> Execution {
        self.execute_in(call, &self.scope, None).await
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
        for observer in &self.observers {
            observer.observe(&receipt, staged.canonical.as_ref(), &staged.outcome);
        }
        // A call that ran is not acknowledged before its receipt is kept; a refusal (nothing
        // ran) is answered as it is.
        let mut outcome = staged.outcome;
        for observer in &self.observers {
            if let Some(settled) = observer.settled()
                && let Err(why) = settled.await
                && receipt.decision.let_through()
                && !matches!(outcome, Outcome::ExecutionFailed { ref error, .. } if error.kind() == "receipt_unrecorded")
            {
                outcome = unrecorded(outcome, &why);
            }
        }
        Execution { outcome, receipt }
    }

    async fn stage(
        &self,
        call: Call,
        scope: &Scope,
        call_id: &str,
        effects: &Arc<EffectLog>,
        (parent_stop, cancel): (Option<&StopSignal>, impl Future<Output = ()>),
    ) -> Staged {
        // 1. Resolve the name against one snapshot, used to the end.
        let snapshot = self.registry.snapshot();
        let Some(tool) = snapshot.get(&call.tool).cloned() else {
            return Staged::refused(Outcome::UnknownTool {
                suggestions: crate::closest::suggest(&call.tool, snapshot.descriptors().map(|d| d.name.as_str())),
                name: call.tool,
            });
        };
        let descriptor = tool.descriptor();
        let name = descriptor.name.clone();
        // 2. The arguments object, as sent.
        let mut arguments: Map<String, Value> = match call.arguments {
            Value::Object(map) => map,
            other => {
                return Staged::refused(Outcome::InvalidArguments {
                    tool: name.clone(),
                    violations: vec![Violation::new(
                        "",
                        format!("arguments must be a JSON object, found {}", json_type(&other)),
                    )],
                })
                .of(name);
            }
        };
        // 3. Argument aliases, then 4. validation.
        let mut violations = rewrite_aliases(&mut arguments, &descriptor.argument_aliases);
        let arguments = Value::Object(arguments);
        if violations.is_empty() {
            match crate::checked::violations(&tool, &arguments) {
                Ok(found) => violations = found,
                Err(error) => {
                    return Staged::refused(Outcome::ExecutionFailed {
                        tool: name.clone(),
                        error: error.into(),
                    })
                    .of(name);
                }
            }
        }
        if !violations.is_empty() {
            return Staged::refused(Outcome::InvalidArguments {
                tool: name.clone(),
                violations,
            })
            .of(name);
        }
        // 5. Canonical snapshot and fingerprint.
        let (canonical, fingerprint) = Fingerprint::of(&name, &arguments, scope, self.workspace().root());
        let canonical = CanonicalCall {
            tool: name.clone(),
            canonical,
            fingerprint: fingerprint.to_string(),
        };
        // 6. Authorization, only for a call that can be recorded: no approval is spent and
        // nothing runs while the receipt log cannot be written.
        if let Err(message) = self.observers_ready() {
            let reason = Denial::ReceiptsUnwritable { message };
            return Staged {
                tool: Some(name.clone()),
                canonical: Some(canonical),
                decision: Decision::Denied { reason: reason.clone() },
                outcome: Outcome::Denied { tool: name, reason },
                work_stopped: None,
            };
        }
        let mut confined = HashMap::new();
        let authorized = authorize(
            &tool,
            &arguments,
            scope,
            &fingerprint,
            call.approval.as_ref(),
            &mut confined,
            &self.used_approvals,
        );
        // Asked for, unless the person granted this caller the tool (never past a deny).
        let authorized = match authorized {
            Err(Decision::ApprovalRequired) => {
                match grant_for(self.approval_store.as_ref(), &call.caller, &name, &arguments).await {
                    Some(grant) => Ok(Decision::Granted { grant: grant.id }),
                    None => Err(Decision::ApprovalRequired),
                }
            }
            other => other,
        };
        let decision = match authorized {
            Ok(decision) => decision,
            Err(refusal) => {
                let outcome = match &refusal {
                    Decision::Denied { reason } => Outcome::Denied {
                        tool: name.clone(),
                        reason: reason.clone(),
                    },
                    _ => Outcome::ApprovalRequired {
                        tool: name.clone(),
                        fingerprint: fingerprint.to_string(),
                        summary: self.approval_summary(
                            &tool,
                            &name,
                            &arguments,
                            scope,
                            &snapshot,
                            (call_id, &call.caller),
                        ),
                    },
                };
                return Staged {
                    tool: Some(name),
                    canonical: Some(canonical),
                    decision: refusal,
                    outcome,
                    work_stopped: None,
                };
            }
        };
        // A call that may become a task becomes one now, before the tool runs.
        if let Some(task) = &call.task {
            task.authorized();
        }
        // 7. Deserialize and execute, under the limits, off the caller's thread.
        let limit = Duration::from_millis(self.limits.timeout_ms);
        let stop = StopSignal::new(parent_stop, limit);
        let text: Arc<Mutex<Option<String>>> = Arc::default();
        let cx = ToolContext::new(
            CallParts {
                scope: scope.clone(),
                catalog: snapshot.clone(),
                effect: descriptor.effect,
                access: access_for(descriptor.effect),
                effects: effects.clone(),
                call_id: call_id.to_owned(),
                caller: call.caller,
                progress: call.progress,
                confined,
                approved_exactly: decision == Decision::Approved
                    && call.approval.as_ref().is_some_and(ApprovalToken::of_these_arguments),
                stop: stop.clone(),
                output_limit: self.limits.max_output_bytes,
                text: text.clone(),
            },
            Arc::new(self.clone()),
        );
        let mut work = Offloaded::start(tool.clone(), arguments, cx);
        let cancelled = async {
            first_of(cancel, stop.stopped()).await;
        };
        let ended = first_of(tokio::time::timeout(limit, work.finish()), cancelled).await;
        let mut work_stopped = None;
        let outcome = match ended {
            None => {
                work_stopped = Some(work.stop(&stop).await);
                Outcome::Cancelled { tool: name.clone() }
            }
            Some(Err(_)) => {
                work_stopped = Some(work.stop(&stop).await);
                Outcome::TimedOut {
                    tool: name.clone(),
                    limit_ms: self.limits.timeout_ms,
                }
            }
            Some(Ok(Err(ToolError::Denied { reason }))) => Outcome::Denied {
                tool: name.clone(),
                reason,
            },
            Some(Ok(Err(error))) => Outcome::ExecutionFailed {
                tool: name.clone(),
                error,
            },
            // Checked against the output limit and schema on the executor's thread.
            Some(Ok(Ok(result))) => Outcome::Ok {
                tool: name.clone(),
                result,
                text: text.lock().unwrap_or_else(|e| e.into_inner()).take(),
            },
        };
        Staged {
            tool: Some(name),
            canonical: Some(canonical),
            decision,
            outcome,
            work_stopped,
        }
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

struct Staged {
    tool: Option<String>,
    canonical: Option<CanonicalCall>,
    decision: Decision,
    outcome: Outcome,
    work_stopped: Option<bool>,
}

impl Staged {
    fn refused(outcome: Outcome) -> Staged {
        Staged {
            tool: None,
            canonical: None,
            decision: Decision::NotReached,
            outcome,
            work_stopped: None,
        }
    }

    fn of(mut self, tool: String) -> Staged {
        self.tool = Some(tool);
        self
    }
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
        &self.workspace
    }
}
