//! The steps of one call through the boundary, in order: resolve the name; check the
//! arguments (aliases, the tool's check, one deserialization into its type); fingerprint
//! the canonical arguments; authorize (capabilities, paths, rules, a grant, the person
//! asked); run under the limits. [`Runtime`] records the receipt of what they decided.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value};

use crate::approver::{ApproverHandle, Asked};
use crate::arguments::{json_type, rewrite_aliases};
use crate::authorize::{access_for, authorize, grant_for};
use crate::caller::Caller;
use crate::checked::Verdict;
use crate::confined::ConfinedPath;
use crate::context::{CallParts, ToolContext};
use crate::error::ToolError;
use crate::executor::Prepared;
use crate::offload::{Offloaded, first_of};
use crate::outcome::{Call, Outcome};
use crate::policy::{Access, ApprovalToken, Fingerprint, Scope, summarize};
use crate::receipt::{CanonicalCall, Decision, Denial, EffectLog};
use crate::registry::{RegisteredTool, Snapshot};
use crate::runtime::Runtime;
use crate::schema::Violation;
use crate::stop::StopSignal;

mod reviewed;

/// What the steps decided: the receipt's facts and the answer.
pub(crate) struct Staged {
    pub(crate) tool: Option<String>,
    pub(crate) canonical: Option<CanonicalCall>,
    pub(crate) decision: Decision,
    pub(crate) outcome: Outcome,
    pub(crate) work_stopped: Option<bool>,
}

impl Staged {
    /// Refused before authorization: nothing was decided and nothing ran.
    fn refused(tool: Option<String>, outcome: Outcome) -> Staged {
        Staged {
            tool,
            canonical: None,
            decision: Decision::NotReached,
            outcome,
            work_stopped: None,
        }
    }

    /// Denied at authorization for `reason`.
    fn denied(name: String, canonical: CanonicalCall, reason: Denial) -> Staged {
        let outcome = Outcome::Denied {
            tool: name.clone(),
            reason: reason.clone(),
        };
        Staged::decided(name, canonical, Decision::Denied { reason }, outcome)
    }

    /// Refused at authorization.
    fn decided(name: String, canonical: CanonicalCall, decision: Decision, outcome: Outcome) -> Staged {
        Staged {
            tool: Some(name),
            canonical: Some(canonical),
            decision,
            outcome,
            work_stopped: None,
        }
    }
}

/// A call past its check, against the one snapshot it resolved in.
struct Checked {
    tool: Arc<RegisteredTool>,
    snapshot: Arc<Snapshot>,
    name: String,
    /// The arguments as JSON: what the fingerprint, the paths and the grants read.
    arguments: Value,
    /// The arguments as the executor takes them.
    prepared: Prepared,
}

/// A call let through, with what its context needs.
struct Authorized {
    decision: Decision,
    confined: HashMap<String, ConfinedPath>,
    approved_exactly: bool,
}

/// Who the call is, beside its tool and arguments.
struct Parties<'a> {
    scope: &'a Scope,
    call_id: &'a str,
    caller: &'a Caller,
    /// The task the call may become: one waiting for a review becomes it at once.
    task: Option<&'a crate::outcome::TaskHook>,
}

impl Runtime {
    /// Every step of one call, up to the receipt.
    pub(crate) async fn stage(
        &self,
        call: Call,
        scope: &Scope,
        call_id: &str,
        effects: &Arc<EffectLog>,
        (parent_stop, cancel): (Option<&StopSignal>, impl Future<Output = ()>),
    ) -> Staged {
        let Call {
            tool,
            arguments,
            approval,
            progress,
            caller,
            task,
            approver,
            traceparent: _,
        } = call;
        // 1. and 2. The name, then the arguments.
        let checked = match self.check(tool, arguments) {
            Ok(checked) => checked,
            Err(refused) => return *refused,
        };
        // 3. The canonical arguments and their fingerprint.
        let name = checked.name.clone();
        let (canonical, fingerprint) = Fingerprint::of(&name, &checked.arguments, scope, self.workspace().root());
        let canonical = CanonicalCall {
            tool: name.clone(),
            canonical,
            fingerprint: fingerprint.to_string(),
        };
        // 4. Authorization, only for a call that can be recorded: no approval is spent, no
        // person asked and nothing run while the receipt log cannot be written.
        if let Err(message) = self.observers_ready() {
            return Staged::denied(name, canonical, Denial::ReceiptsUnwritable { message });
        }
        let parties = Parties {
            scope,
            call_id,
            caller: &caller,
            task: task.as_ref(),
        };
        // The caller may go while a grant is looked up or a person is asked: then nothing
        // runs, whatever the person answers later.
        let mut cancel = std::pin::pin!(cancel);
        let authorizing = self.authorize(checked, &fingerprint, approval, approver.as_ref(), &parties);
        let Some((checked, authorized)) = first_of(authorizing, cancel.as_mut()).await else {
            let outcome = Outcome::Cancelled { tool: name.clone() };
            return Staged::decided(name, canonical, Decision::NotReached, outcome);
        };
        let authorized = match authorized {
            Ok(authorized) => authorized,
            Err((decision, outcome)) => return Staged::decided(name, canonical, decision, outcome),
        };
        // A person may have taken minutes: the receipt log must still take the receipt, and
        // the caller must still be there, before anything runs.
        if let Err(message) = self.observers_ready() {
            return Staged::denied(name, canonical, Denial::ReceiptsUnwritable { message });
        }
        if settled(cancel.as_mut()).await {
            let outcome = Outcome::Cancelled { tool: name.clone() };
            return Staged::decided(name, canonical, authorized.decision, outcome);
        }
        // A call that may become a task becomes one now, before the tool runs.
        if let Some(task) = &task {
            task.authorized();
        }
        // 5. Run, under the limits, off the caller's thread.
        let limit = Duration::from_millis(self.limits().timeout_ms);
        let stop = StopSignal::new(parent_stop, limit);
        let text: Arc<Mutex<Option<String>>> = Arc::default();
        let Checked {
            tool,
            snapshot,
            prepared,
            arguments,
            ..
        } = checked;
        let descriptor = tool.descriptor();
        let cx = ToolContext::new(
            CallParts {
                scope: scope.clone(),
                catalog: snapshot,
                effect: descriptor.effect,
                access: access_for(descriptor.effect),
                effects: effects.clone(),
                call_id: call_id.to_owned(),
                caller,
                progress,
                confined: authorized.confined,
                approved_exactly: authorized.approved_exactly,
                stop: stop.clone(),
                output_limit: self.limits().max_output_bytes,
                text: text.clone(),
            },
            Arc::new(self.clone()),
        );
        let cancelled = async {
            first_of(cancel.as_mut(), stop.stopped()).await;
        };
        let (ended, work_stopped) = if tool.executor().inline() {
            // Never blocks: run here; stopping it is dropping it.
            let run = async {
                let result = tool.executor().run(prepared, arguments, &cx).await?;
                crate::offload::checked(&tool, result, cx.output_limit())
            };
            let ended = first_of(tokio::time::timeout(limit, run), cancelled).await;
            let stopped = (!matches!(ended, Some(Ok(_)))).then_some(true);
            (ended, stopped)
        } else {
            let mut work = Offloaded::start(tool.clone(), (prepared, arguments), cx);
            let ended = first_of(tokio::time::timeout(limit, work.finish()), cancelled).await;
            let stopped = match ended {
                Some(Ok(_)) => None,
                _ => Some(work.stop(&stop).await),
            };
            (ended, stopped)
        };
        let outcome = match ended {
            None => Outcome::Cancelled { tool: name.clone() },
            Some(Err(_)) => Outcome::TimedOut {
                tool: name.clone(),
                limit_ms: self.limits().timeout_ms,
            },
            Some(Ok(Err(ToolError::Denied { reason }))) => Outcome::Denied {
                tool: name.clone(),
                reason,
            },
            Some(Ok(Err(error))) => Outcome::ExecutionFailed {
                tool: name.clone(),
                error,
            },
            // Checked against the output limit (and in debug its schema) on the executor's
            // thread.
            Some(Ok(Ok(result))) => Outcome::Ok {
                tool: name.clone(),
                result,
                text: text.lock().unwrap_or_else(|e| e.into_inner()).take(),
            },
        };
        Staged {
            tool: Some(name),
            canonical: Some(canonical),
            decision: authorized.decision,
            outcome,
            work_stopped,
        }
    }

    /// Resolves the name against one snapshot, used to the end, and checks the arguments:
    /// an object, aliases rewritten, the tool's check (its schema's validator when it has
    /// none), then deserialized once into the tool's type.
    fn check(&self, tool: String, arguments: Value) -> Result<Checked, Box<Staged>> {
        let snapshot = self.registry().snapshot();
        let Some(registered) = snapshot.get(&tool).cloned() else {
            let suggestions = crate::closest::suggest(&tool, snapshot.descriptors().map(|d| d.name.as_str()));
            return Err(Box::new(Staged::refused(
                None,
                Outcome::UnknownTool {
                    suggestions,
                    name: tool,
                },
            )));
        };
        let descriptor = registered.descriptor();
        let name = descriptor.name.clone();
        let invalid = |violations| {
            Box::new(Staged::refused(
                Some(name.clone()),
                Outcome::InvalidArguments {
                    tool: name.clone(),
                    violations,
                },
            ))
        };
        let failed = |error: ToolError| {
            Box::new(Staged::refused(
                Some(name.clone()),
                Outcome::ExecutionFailed {
                    tool: name.clone(),
                    error,
                },
            ))
        };
        let mut arguments: Map<String, Value> = match arguments {
            Value::Object(map) => map,
            other => {
                return Err(invalid(vec![Violation::new(
                    "",
                    format!("arguments must be a JSON object, found {}", json_type(&other)),
                )]));
            }
        };
        let violations = rewrite_aliases(&mut arguments, &descriptor.argument_aliases);
        if !violations.is_empty() {
            return Err(invalid(violations));
        }
        let arguments = Value::Object(arguments);
        let by_serde = match crate::checked::verdict(&registered, &arguments) {
            Ok(Verdict::Typed(typed)) => Ok(Prepared::Typed(typed)),
            Ok(Verdict::Refused(violations)) => return Err(invalid(violations)),
            Ok(Verdict::Valid) => Err(false),
            Ok(Verdict::BySerde) => Err(true),
            Err(error) => return Err(failed(error.into())),
        };
        let prepared = match by_serde {
            Ok(prepared) => prepared,
            Err(by_serde) => match registered.executor().prepare(&arguments) {
                Ok(prepared) => prepared,
                // Checked by nothing else: serde's refusal is the arguments' fault; after
                // the schema's validator, the schema and the type disagree.
                Err(ToolError::ArgumentsDisagree { message }) if by_serde => {
                    return Err(invalid(vec![Violation::new("", message)]));
                }
                Err(error) => return Err(failed(error)),
            },
        };
        Ok(Checked {
            tool: registered,
            snapshot,
            name,
            arguments,
            prepared,
        })
    }

    /// Capabilities, paths, the policy's rules and an approval bound to the fingerprint;
    /// then, for a call that needs an approval, the caller's grant or the person, asked
    /// through the call's approver. Refused: the decision and the answer. The call is held
    /// by value across the waits (a tool's type need not be `Sync`) and handed back.
    async fn authorize(
        &self,
        checked: Checked,
        fingerprint: &Fingerprint,
        approval: Option<ApprovalToken>,
        approver: Option<&ApproverHandle>,
        parties: &Parties<'_>,
    ) -> (Checked, Result<Authorized, (Decision, Outcome)>) {
        let mut confined = HashMap::new();
        let mut token = approval;
        let mut decided = self.decide(&checked, parties.scope, fingerprint, token.as_ref(), &mut confined);
        if let Err(Decision::ReviewPending { .. }) = decided {
            let request = self.review_request(&checked, fingerprint, parties);
            let reviewed = self.review(request, fingerprint, parties).await;
            return (
                checked,
                reviewed.map(|decision| Authorized {
                    decision,
                    confined,
                    approved_exactly: false,
                }),
            );
        }
        // Whether a rule naming this call asks a person about it each time: no grant passes it.
        let each_call = decided == Err(Decision::ApprovalRequired)
            && crate::authorize::rule_for(&checked.tool, &checked.prepared, parties.scope).2;
        if decided == Err(Decision::ApprovalRequired) && !each_call {
            // Asked for, unless the person granted this caller the tool (never past a deny).
            let (name, arguments) = (checked.name.clone(), checked.arguments.clone());
            if let Some(grant) = grant_for(self.approval_store(), parties.caller, &name, &arguments).await {
                decided = Ok(Decision::Granted { grant: grant.id });
            }
        }
        let mut summary = None;
        if decided == Err(Decision::ApprovalRequired) {
            let text = self.approval_summary(&checked, parties);
            if let (None, Some(approver)) = (&token, approver) {
                let asked = Asked {
                    caller: parties.caller,
                    tool: &checked.name,
                    fingerprint: fingerprint.as_str(),
                    summary: &text,
                    each_call,
                };
                // Nobody is waited for longer than an approval lasts.
                let asking = tokio::time::timeout(crate::policy::APPROVAL_LIFETIME, approver.0.approve(asked));
                let answer = asking.await.ok().flatten();
                if let Some(answer) = answer {
                    confined.clear();
                    decided = self.decide(&checked, parties.scope, fingerprint, Some(&answer), &mut confined);
                    token = Some(answer);
                }
            }
            summary = Some(text);
        }
        let decided = match decided {
            Ok(decision) => Ok(Authorized {
                approved_exactly: decision == Decision::Approved
                    && token.as_ref().is_some_and(ApprovalToken::of_these_arguments),
                decision,
                confined,
            }),
            Err(Decision::Denied { reason }) => {
                let outcome = Outcome::Denied {
                    tool: checked.name.clone(),
                    reason: reason.clone(),
                };
                Err((Decision::Denied { reason }, outcome))
            }
            Err(refusal) => {
                let outcome = Outcome::ApprovalRequired {
                    tool: checked.name.clone(),
                    fingerprint: fingerprint.to_string(),
                    summary: summary.unwrap_or_else(|| self.approval_summary(&checked, parties)),
                };
                Err((refusal, outcome))
            }
        };
        (checked, decided)
    }

    /// The decision of the boundary's rules alone (no grant, nobody asked).
    fn decide(
        &self,
        checked: &Checked,
        scope: &Scope,
        fingerprint: &Fingerprint,
        approval: Option<&ApprovalToken>,
        confined: &mut HashMap<String, ConfinedPath>,
    ) -> Result<Decision, Decision> {
        authorize(
            &checked.tool,
            (&checked.arguments, &checked.prepared),
            scope,
            fingerprint,
            approval,
            confined,
            self.used_approvals(),
        )
    }

    /// The text a person approves: every argument, then the tool's own preview (a diff, a
    /// command line), computed under a context that can read and never write.
    fn approval_summary(&self, checked: &Checked, parties: &Parties<'_>) -> String {
        let mut summary = summarize(&checked.name, &checked.arguments);
        let cx = ToolContext::new(
            CallParts {
                scope: parties.scope.clone(),
                catalog: checked.snapshot.clone(),
                effect: checked.tool.descriptor().effect,
                access: Access::Read,
                effects: Arc::new(EffectLog::default()),
                call_id: parties.call_id.to_owned(),
                caller: parties.caller.clone(),
                progress: None,
                confined: HashMap::new(),
                approved_exactly: false,
                stop: StopSignal::default(),
                output_limit: self.limits().max_output_bytes,
                text: Arc::default(),
            },
            Arc::new(self.clone()),
        );
        if let Some(preview) = checked.tool.executor().preview(&checked.prepared, &cx) {
            summary.push('\n');
            summary.push_str(&crate::policy::escape_invisible(&preview));
        }
        summary
    }
}

/// Whether `future` has completed, polled once without waiting.
async fn settled(mut future: std::pin::Pin<&mut impl Future<Output = ()>>) -> bool {
    std::future::poll_fn(|cx| std::task::Poll::Ready(future.as_mut().poll(cx).is_ready())).await
}
