//! A call under the rule `review`: put in the queue every replica shares, and let through
//! only once a named approver approved it, once ([`crate::review`]).

use std::sync::Arc;
use std::time::Duration;

use super::{Checked, Parties};
use crate::grants::{ApprovalStore, now_ms};
use crate::outcome::Outcome;
use crate::policy::Fingerprint;
use crate::receipt::{Decision, Denial};
use crate::review::REVIEW_LIFETIME_S;
use crate::review::{NewReview, Review, ReviewState};
use crate::runtime::Runtime;

/// How often a call waiting as a task reads its review again.
const POLL: Duration = Duration::from_millis(500);

impl Runtime {
    /// The decision on a call under review: its queue entry found or made; approved (and
    /// taken, once) it runs; denied or expired it is denied; pending, a call that may be a
    /// task becomes one and waits for the decision (until the review expires or the task is
    /// cancelled), any other is answered `approval_pending`.
    pub(super) async fn review(
        &self,
        new: NewReview,
        fingerprint: &Fingerprint,
        parties: &Parties<'_>,
    ) -> Result<Decision, (Decision, Outcome)> {
        let decided = self.wait_for_review(new, fingerprint, parties).await;
        if let Some(task) = parties.task {
            task.waited();
        }
        decided
    }

    async fn wait_for_review(
        &self,
        new: NewReview,
        fingerprint: &Fingerprint,
        parties: &Parties<'_>,
    ) -> Result<Decision, (Decision, Outcome)> {
        let tool = new.tool.clone();
        let denied = |reason: Denial| {
            let outcome = Outcome::Denied {
                tool: tool.clone(),
                reason: reason.clone(),
            };
            (Decision::Denied { reason }, outcome)
        };
        let unavailable = |message: String| denied(Denial::ReviewUnavailable { message });
        let Some(store) = self.approval_store().cloned() else {
            return Err(unavailable("this server keeps no approval queue".into()));
        };
        let now = now_ms();
        let mut review = blocking(&store, move |store| store.request_review(new, now))
            .await
            .map_err(unavailable)?;
        let mut told = false;
        loop {
            match review.state {
                ReviewState::Approved => {
                    let id = review.id.clone();
                    let taken = blocking(&store, move |store| store.spend_review(&id, now_ms()))
                        .await
                        .map_err(unavailable)?;
                    if !taken {
                        // Another pass of the same call took it first.
                        return Err(denied(Denial::ApprovalReused {
                            fingerprint: fingerprint.to_string(),
                        }));
                    }
                    let approver = review
                        .approver
                        .as_ref()
                        .map_or_else(String::new, |a| a.name().to_owned());
                    let waited_ms = review
                        .decided_at_ms
                        .unwrap_or(review.created_at_ms)
                        .saturating_sub(review.created_at_ms);
                    return Ok(Decision::Reviewed {
                        approval_id: review.id,
                        approver,
                        reason: review.reason,
                        waited_ms,
                    });
                }
                ReviewState::Denied => {
                    return Err(denied(Denial::ReviewDenied {
                        approval_id: review.id,
                        approver: review.approver.map_or_else(String::new, |a| a.name().to_owned()),
                        reason: review.reason,
                    }));
                }
                ReviewState::Expired => {
                    return Err(denied(Denial::ReviewExpired { approval_id: review.id }));
                }
                ReviewState::Ran => {
                    return Err(denied(Denial::ApprovalReused {
                        fingerprint: fingerprint.to_string(),
                    }));
                }
                ReviewState::Pending => {}
            }
            let Some(task) = parties.task else {
                let outcome = Outcome::ApprovalPending {
                    tool: tool.clone(),
                    fingerprint: fingerprint.to_string(),
                    approval_id: review.id.clone(),
                    inbox: self.review_inbox().map(|inbox| format!("{inbox}/{}", review.id)),
                    expires_at_ms: review.expires_at_ms,
                };
                return Err((Decision::ReviewPending { approval_id: review.id }, outcome));
            };
            if !told {
                // The client has its task now, and polls it while the approver decides.
                let place = self
                    .review_inbox()
                    .map(|inbox| format!(" at {inbox}/{}", review.id))
                    .unwrap_or_else(|| format!(" (`kyro approvals approve {}`)", review.id));
                task.waits(format!(
                    "{tool} waits for an approver's review{place}; it runs once approved"
                ));
                told = true;
            }
            tokio::time::sleep(POLL).await;
            let id = review.id.clone();
            review = match blocking(&store, move |store| store.review(&id, now_ms())).await {
                Ok(Some(read)) => read,
                Ok(None) => return Err(denied(Denial::ReviewExpired { approval_id: review.id })),
                // A store that cannot be read for a moment is read again at the next poll;
                // the review still expires when it would.
                Err(_) => Review {
                    state: review.state_at(now_ms()),
                    ..review
                },
            };
        }
    }
}

impl Runtime {
    /// The queue entry a call under review asks for, made before any wait (the call's
    /// typed arguments are held across waits by value only).
    pub(super) fn review_request(
        &self,
        checked: &Checked,
        fingerprint: &Fingerprint,
        parties: &Parties<'_>,
    ) -> NewReview {
        let lifetime_ms = parties.scope.approvals().review_expiry_s.saturating_mul(1000);
        NewReview {
            caller: parties.caller.clone(),
            tool: checked.name.clone(),
            fingerprint: fingerprint.to_string(),
            arguments: crate::review::kept_arguments(&checked.arguments),
            summary: crate::review::kept_summary(self.approval_summary(checked, parties)),
            self_review: parties.scope.approvals().self_review,
            expires_at_ms: now_ms().saturating_add(lifetime_ms.clamp(1000, REVIEW_LIFETIME_S * 1000 * 30)),
        }
    }
}

/// `work` on the store, off the async threads.
async fn blocking<T: Send + 'static>(
    store: &Arc<dyn ApprovalStore>,
    work: impl FnOnce(&dyn ApprovalStore) -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    let store = store.clone();
    tokio::task::spawn_blocking(move || work(store.as_ref()))
        .await
        .map_err(|e| format!("the approval queue: {e}"))?
}
