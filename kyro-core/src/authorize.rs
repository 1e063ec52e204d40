//! Step 6 of the boundary: capabilities, paths, the policy's rules, an approval bound to
//! the fingerprint, and the caller's grants.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::caller::Caller;
use crate::confined::ConfinedPath;
use crate::effect::{Approval, Effect};
use crate::executor::Prepared;
use crate::grants::{ApprovalStore, Grant, now_ms};
use crate::policy::{Access, ApprovalRule, ApprovalToken, Fingerprint, MatchedRule, Scope, UsedApprovals};
use crate::receipt::{Decision, Denial};
use crate::registry::RegisteredTool;

/// The caller's grant that covers this call, read off the async threads. None
/// without a store, and none when the store cannot be read (the call is then asked
/// for, as without a grant).
pub(crate) async fn grant_for(
    store: Option<&Arc<dyn ApprovalStore>>,
    caller: &Caller,
    tool: &str,
    arguments: &Value,
) -> Option<Grant> {
    let store = store?.clone();
    let (caller, tool, arguments) = (caller.clone(), tool.to_owned(), arguments.clone());
    tokio::task::spawn_blocking(move || {
        let now = now_ms();
        store
            .grants(Some(&caller), now)
            .ok()?
            .into_iter()
            .find(|grant| grant.covers(&caller, &tool, &arguments, now))
    })
    .await
    .ok()
    .flatten()
}

pub(crate) fn authorize(
    tool: &RegisteredTool,
    (arguments, prepared): (&Value, &Prepared),
    scope: &Scope,
    fingerprint: &Fingerprint,
    approval: Option<&ApprovalToken>,
    confined: &mut HashMap<String, ConfinedPath>,
    used_approvals: &Mutex<UsedApprovals>,
) -> Result<Decision, Decision> {
    let denied = |reason| Err(Decision::Denied { reason });
    let descriptor = tool.descriptor();
    if let Some(missing) = tool.capabilities().iter().find(|c| !scope.capabilities().contains(c)) {
        return denied(Denial::MissingCapability {
            capability: missing.clone(),
        });
    }
    let access = access_for(descriptor.effect);
    for (pointer, path) in descriptor.paths_in(arguments) {
        match scope.confine(path, access) {
            Ok(handle) => {
                confined.insert(path.to_owned(), handle);
            }
            Err(reason) => {
                return denied(Denial::Path {
                    pointer,
                    path: path.to_owned(),
                    reason,
                });
            }
        }
    }
    let (rule, matched, each_call) = rule_for(tool, prepared, scope);
    match (rule, approval) {
        (ApprovalRule::Auto, _) => Ok(match matched {
            Some(matched) => Decision::AllowedByRule { rule: matched.rule },
            None => Decision::Allowed,
        }),
        (ApprovalRule::Deny, _) => denied(match matched {
            Some(matched) => Denial::RuleForbids { rule: matched.rule },
            None => Denial::PolicyForbids {
                effect: descriptor.effect,
            },
        }),
        // A named approver decides it, in the queue; no answer the call carries does. The
        // queue gives the id ([`crate::boundary`]).
        (ApprovalRule::Review, _) => Err(Decision::ReviewPending {
            approval_id: String::new(),
        }),
        (ApprovalRule::Ask, None) => Err(Decision::ApprovalRequired),
        // A rule naming this call asks a person about these arguments; an approval standing
        // on an earlier answer about the tool (the session's) is no such answer.
        (ApprovalRule::Ask, Some(token)) if each_call && !token.of_these_arguments() => Err(Decision::ApprovalRequired),
        (ApprovalRule::Ask, Some(token)) => match token.refusal() {
            Some(refusal) => denied(refusal.denial(fingerprint.as_str())),
            None if token.fingerprint() != fingerprint.as_str() => denied(Denial::ApprovalMismatch {
                approved: token.fingerprint().to_owned(),
                fingerprint: fingerprint.to_string(),
            }),
            None if token.expired() => denied(Denial::ApprovalExpired {
                fingerprint: fingerprint.to_string(),
                lifetime_s: crate::policy::APPROVAL_LIFETIME.as_secs(),
            }),
            None => {
                let fresh = used_approvals.lock().unwrap_or_else(|p| p.into_inner()).spend(token);
                if fresh {
                    Ok(Decision::Approved)
                } else {
                    denied(Denial::ApprovalReused {
                        fingerprint: fingerprint.to_string(),
                    })
                }
            }
        },
    }
}

/// The rule deciding the call, the rule that matched, and whether that rule names this very
/// call and asks for it (then only an approval of these arguments passes it: not a grant,
/// not the session's standing approval). The tool's own rule, then a rule naming this very
/// call (a command), which never lifts a deny and, against the tool's rule, is held to the
/// stricter of the two.
pub(crate) fn rule_for(
    tool: &RegisteredTool,
    prepared: &Prepared,
    scope: &Scope,
) -> (ApprovalRule, Option<MatchedRule>, bool) {
    let descriptor = tool.descriptor();
    let mut effect_rule = scope.approvals().for_effect(descriptor.effect);
    if descriptor.approval == Some(Approval::Required) && effect_rule == ApprovalRule::Auto {
        effect_rule = ApprovalRule::Ask;
    }
    let call = tool.executor().rule(prepared, scope);
    let (rule, matched) = scope.approvals().decide(&descriptor.name, effect_rule, call.clone());
    let each_call = rule == ApprovalRule::Ask && call.as_ref().is_some_and(|c| c.each_call) && matched == call;
    (rule, matched, each_call)
}

/// The access a tool's path arguments need: write tools write, the rest read.
pub(crate) fn access_for(effect: Effect) -> Access {
    if effect == Effect::Write {
        Access::ReadWrite
    } else {
        Access::Read
    }
}
