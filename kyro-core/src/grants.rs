//! Grants and spent approvals: what a person allowed beyond one call, and the one-time
//! approvals already used, kept in a store every replica of a server shares.
//!
//! A grant is a person's "allow this tool from now on" without sessions: a caller, a tool,
//! optionally the arguments a call must begin with, and an expiry. The boundary consults
//! the caller's grants where it would ask for an approval; a covered call runs and its
//! receipt names the grant. A grant never lifts a `deny`, and never reaches another caller.

use std::collections::HashMap;
use std::sync::Mutex;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::caller::Caller;
use crate::review::{DecideError, Decided, MOST_PENDING, NewReview, PENDING_PER_CALLER, Review, ReviewState};

/// A person's standing approval of a tool for one caller, until it expires or is revoked.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Grant {
    /// The store's id (`kyro grants revoke ID`).
    pub id: String,
    /// Who it was given to.
    pub caller: Caller,
    /// The canonical tool name.
    pub tool: String,
    /// What a call's arguments must be, when not the whole tool: the call sends exactly
    /// these keys, each value equal, except that `argv` is a prefix (`{"argv": ["cargo",
    /// "test"]}` covers `cargo test --all`, not `cargo test` with `env` or `cwd` set);
    /// `None` covers every call of the tool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Map<String, Value>>,
    /// When it was given, in milliseconds since the Unix epoch.
    pub created_at_ms: u64,
    /// When it ends, in milliseconds since the Unix epoch.
    pub expires_at_ms: u64,
}

/// The one argument a grant matches by prefix: a command's words.
pub const PREFIX_KEY: &str = "argv";

/// A grant to be stored (the store gives it its id).
#[derive(Debug, Clone, PartialEq)]
pub struct NewGrant {
    /// Who it is for.
    pub caller: Caller,
    /// The canonical tool name.
    pub tool: String,
    /// What a call's arguments must begin with ([`Grant::arguments`]).
    pub arguments: Option<Map<String, Value>>,
    /// When it ends, in milliseconds since the Unix epoch.
    pub expires_at_ms: u64,
}

impl Grant {
    /// Whether this grant lets `caller`'s call of `tool` with `arguments` (canonical keys,
    /// validated) run without asking at `now_ms`.
    pub fn covers(&self, caller: &Caller, tool: &str, arguments: &Value, now_ms: u64) -> bool {
        if &self.caller != caller || self.tool != tool || now_ms >= self.expires_at_ms {
            return false;
        }
        let Some(required) = &self.arguments else {
            return true;
        };
        let Some(given) = arguments.as_object() else {
            return false;
        };
        // No key the grant does not name (an `env`, a `cwd`, `stdin` would change what a
        // command does), and every named one as granted.
        given.keys().all(|key| required.contains_key(key))
            && required
                .iter()
                .all(|(key, want)| match (key.as_str(), want, given.get(key)) {
                    (PREFIX_KEY, Value::Array(prefix), Some(Value::Array(items))) => {
                        !prefix.is_empty() && items.starts_with(prefix)
                    }
                    (_, want, Some(value)) => want == value,
                    (_, _, None) => false,
                })
    }
}

/// Where grants and spent approval nonces live: the state store (SQLite in the workspace,
/// PostgreSQL for replicas), or this process's memory for a server without one. Its
/// methods block; callers run them off the async threads.
pub trait ApprovalStore: Send + Sync + 'static {
    /// Records `nonce` as spent, remembered until `until_ms` (after which the state that
    /// carried it has expired anyway). `Ok(false)` when it was spent before, by any
    /// process sharing the store.
    fn spend_nonce(&self, nonce: &str, until_ms: u64) -> Result<bool, String>;
    /// Stores a grant.
    fn add_grant(&self, grant: NewGrant) -> Result<Grant, String>;
    /// The grants in force at `now_ms`, of `caller` or of everyone, oldest first.
    fn grants(&self, caller: Option<&Caller>, now_ms: u64) -> Result<Vec<Grant>, String>;
    /// Revokes grant `id`; `Ok(false)` when there is none.
    fn revoke_grant(&self, id: &str) -> Result<bool, String>;
    /// The review still standing for `new`'s caller and fingerprint at `now_ms`
    /// ([`Review::stands_at`]), else `new` put in the queue, pending, with a new id
    /// ([`crate::review::new_id`]). Refused when the caller holds
    /// [`crate::review::PENDING_PER_CALLER`] pending reviews, or the store
    /// [`crate::review::MOST_PENDING`]. Reviews expired
    /// [`KEPT_AFTER_MS`](crate::review::KEPT_AFTER_MS) ago may go.
    fn request_review(&self, new: NewReview, now_ms: u64) -> Result<Review, String>;
    /// Review `id`, its state as of `now_ms` ([`Review::state_at`]).
    fn review(&self, id: &str, now_ms: u64) -> Result<Option<Review>, String>;
    /// The reviews kept, oldest first: only those pending at `now_ms` (the inbox), or all.
    fn reviews(&self, pending_only: bool, now_ms: u64) -> Result<Vec<Review>, String>;
    /// Decides review `id` when it is pending at `now_ms` (one decision, whichever process
    /// asks first): the review as decided. Who may decide is checked before
    /// ([`crate::review::decide`]).
    fn decide_review(&self, id: &str, decided: Decided, now_ms: u64) -> Result<Review, DecideError>;
    /// Takes review `id` from approved (and unexpired at `now_ms`) to ran, in one step:
    /// `Ok(true)` for the one process that takes it, `Ok(false)` for any other.
    fn spend_review(&self, id: &str, now_ms: u64) -> Result<bool, String>;
    /// Claims the notice that review `id` is in `state` (`[approvals.notify]`): `Ok(true)`
    /// for the one process, of all sharing the store, that is to send it. Claims are
    /// forgotten [`NOTICES_KEPT_MS`](crate::review::NOTICES_KEPT_MS) after `now_ms`.
    fn claim_notice(&self, id: &str, state: ReviewState, now_ms: u64) -> Result<bool, String>;
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Grants and nonces in this process's memory: for a server without a state store. They
/// end with the process (a grant lasts at most until a restart), and a replica never sees
/// them. At most [`MemoryApprovalStore::MOST_GRANTS`] grants in force per caller; spent nonces
/// are forgotten when their states expire, so they are bounded by the rate at which this
/// server hands out approval questions.
#[derive(Debug, Default)]
pub struct MemoryApprovalStore {
    inner: Mutex<Memory>,
}

#[derive(Debug, Default)]
struct Memory {
    nonces: HashMap<String, u64>,
    grants: Vec<Grant>,
    next: u64,
    reviews: Vec<Review>,
    /// Claimed notices: review id and state, and when.
    notices: HashMap<(String, ReviewState), u64>,
}

impl MemoryApprovalStore {
    /// Grants in force per caller, at most (the SQLite store holds callers to it too).
    pub const MOST_GRANTS: usize = 1000;

    fn lock(&self) -> std::sync::MutexGuard<'_, Memory> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl ApprovalStore for MemoryApprovalStore {
    fn spend_nonce(&self, nonce: &str, until_ms: u64) -> Result<bool, String> {
        let mut memory = self.lock();
        let now = now_ms();
        memory.nonces.retain(|_, until| *until > now);
        Ok(memory.nonces.insert(nonce.to_owned(), until_ms).is_none())
    }

    fn add_grant(&self, grant: NewGrant) -> Result<Grant, String> {
        let mut memory = self.lock();
        let now = now_ms();
        memory.grants.retain(|g| g.expires_at_ms > now);
        if memory.grants.iter().filter(|g| g.caller == grant.caller).count() >= Self::MOST_GRANTS {
            return Err(format!(
                "{} holds {} grants in force already; revoke some first",
                grant.caller,
                Self::MOST_GRANTS
            ));
        }
        memory.next += 1;
        let grant = Grant {
            id: memory.next.to_string(),
            caller: grant.caller,
            tool: grant.tool,
            arguments: grant.arguments,
            created_at_ms: now,
            expires_at_ms: grant.expires_at_ms,
        };
        memory.grants.push(grant.clone());
        Ok(grant)
    }

    fn grants(&self, caller: Option<&Caller>, now_ms: u64) -> Result<Vec<Grant>, String> {
        Ok(self
            .lock()
            .grants
            .iter()
            .filter(|g| g.expires_at_ms > now_ms && caller.is_none_or(|c| &g.caller == c))
            .cloned()
            .collect())
    }

    fn revoke_grant(&self, id: &str) -> Result<bool, String> {
        let mut memory = self.lock();
        let before = memory.grants.len();
        memory.grants.retain(|g| g.id != id);
        Ok(memory.grants.len() != before)
    }

    fn request_review(&self, new: NewReview, now_ms: u64) -> Result<Review, String> {
        let mut memory = self.lock();
        memory
            .reviews
            .retain(|r| r.expires_at_ms.saturating_add(crate::review::KEPT_AFTER_MS) > now_ms);
        // The oldest settled ones go past MOST_SETTLED.
        // A denial still stands: the same call asked again is denied, not queued anew.
        let settled = |r: &Review| !r.stands_at(now_ms);
        let mut excess = memory
            .reviews
            .iter()
            .filter(|r| settled(r))
            .count()
            .saturating_sub(crate::review::MOST_SETTLED);
        memory.reviews.retain(|r| {
            let goes = excess > 0 && settled(r);
            excess -= usize::from(goes);
            !goes
        });
        let standing = memory
            .reviews
            .iter()
            .find(|r| r.caller == new.caller && r.fingerprint == new.fingerprint && r.stands_at(now_ms));
        if let Some(review) = standing {
            let mut review = review.clone();
            review.state = review.state_at(now_ms);
            return Ok(review);
        }
        let pending = |r: &&Review| r.state_at(now_ms) == ReviewState::Pending;
        let mine = memory
            .reviews
            .iter()
            .filter(pending)
            .filter(|r| r.caller == new.caller)
            .count();
        if mine >= PENDING_PER_CALLER {
            return Err(format!(
                "{} has {PENDING_PER_CALLER} calls pending review already; wait for an approver",
                new.caller
            ));
        }
        if memory.reviews.iter().filter(pending).count() >= MOST_PENDING {
            return Err(format!(
                "{MOST_PENDING} calls are pending review already; wait for an approver"
            ));
        }
        let review = new.into_review(crate::review::new_id()?, now_ms);
        memory.reviews.push(review.clone());
        Ok(review)
    }

    fn review(&self, id: &str, now_ms: u64) -> Result<Option<Review>, String> {
        Ok(self.lock().reviews.iter().find(|r| r.id == id).map(|r| {
            let mut review = r.clone();
            review.state = review.state_at(now_ms);
            review
        }))
    }

    fn reviews(&self, pending_only: bool, now_ms: u64) -> Result<Vec<Review>, String> {
        Ok(self
            .lock()
            .reviews
            .iter()
            .map(|r| {
                let mut review = r.clone();
                review.state = review.state_at(now_ms);
                review
            })
            .filter(|r| !pending_only || r.state == ReviewState::Pending)
            .collect())
    }

    fn decide_review(&self, id: &str, decided: Decided, now_ms: u64) -> Result<Review, DecideError> {
        let mut memory = self.lock();
        let Some(review) = memory.reviews.iter_mut().find(|r| r.id == id) else {
            return Err(DecideError::Unknown(id.to_owned()));
        };
        let state = review.state_at(now_ms);
        if state != ReviewState::Pending {
            return Err(DecideError::NotPending {
                id: id.to_owned(),
                state,
            });
        }
        review.state = if decided.approve {
            ReviewState::Approved
        } else {
            ReviewState::Denied
        };
        review.approver = Some(decided.approver);
        review.reason = decided.reason;
        review.decided_at_ms = Some(now_ms);
        Ok(review.clone())
    }

    fn spend_review(&self, id: &str, now_ms: u64) -> Result<bool, String> {
        let mut memory = self.lock();
        let Some(review) = memory.reviews.iter_mut().find(|r| r.id == id) else {
            return Ok(false);
        };
        if review.state_at(now_ms) != ReviewState::Approved {
            return Ok(false);
        }
        review.state = ReviewState::Ran;
        Ok(true)
    }

    fn claim_notice(&self, id: &str, state: ReviewState, now_ms: u64) -> Result<bool, String> {
        let mut memory = self.lock();
        let kept = now_ms.saturating_sub(crate::review::NOTICES_KEPT_MS);
        memory.notices.retain(|_, at| *at > kept);
        Ok(memory.notices.insert((id.to_owned(), state), now_ms).is_none())
    }
}

#[cfg(test)]
mod tests {
    use super::{ApprovalStore, Grant, MemoryApprovalStore, NewGrant, now_ms};
    use crate::Caller;
    use serde_json::json;

    fn grant(arguments: Option<serde_json::Value>) -> Grant {
        Grant {
            id: "1".into(),
            caller: Caller::named("alice").unwrap(),
            tool: "run_command".into(),
            arguments: arguments.map(|a| a.as_object().unwrap().clone()),
            created_at_ms: 0,
            expires_at_ms: 1000,
        }
    }

    #[test]
    fn a_grant_covers_its_callers_calls_of_its_tool_until_it_expires() {
        let alice = Caller::named("alice").unwrap();
        let call = json!({"argv": ["cargo", "test", "--all"]});
        let whole = grant(None);
        assert!(whole.covers(&alice, "run_command", &call, 999));
        assert!(!whole.covers(&alice, "run_command", &call, 1000), "expired");
        assert!(
            !whole.covers(&Caller::local(), "run_command", &call, 0),
            "another caller"
        );
        assert!(!whole.covers(&alice, "write_file", &call, 0), "another tool");
        let prefix = grant(Some(json!({"argv": ["cargo", "test"]})));
        assert!(prefix.covers(&alice, "run_command", &call, 0));
        for other in [
            json!({"argv": ["cargo", "publish"]}),
            json!({"argv": ["cargo"]}),
            json!({"cwd": "."}),
            json!({"argv": "cargo test"}),
            // A key the grant does not name changes what the command does.
            json!({"argv": ["cargo", "test"], "env": [{"name": "RUSTC_WRAPPER", "value": "/tmp/x"}]}),
            json!({"argv": ["cargo", "test"], "cwd": "sub"}),
        ] {
            assert!(!prefix.covers(&alice, "run_command", &other, 0), "{other}");
        }
        // A string is equal or nothing: no path prefix.
        let exact = grant(Some(json!({"cwd": "src"})));
        assert!(exact.covers(&alice, "run_command", &json!({"cwd": "src"}), 0));
        assert!(!exact.covers(&alice, "run_command", &json!({"cwd": "src/../.."}), 0));
        // Only `argv` is a prefix: another list is equal or nothing.
        let list = grant(Some(json!({"entities": ["tmp"]})));
        assert!(!list.covers(&alice, "run_command", &json!({"entities": ["tmp", "customers"]}), 0));
        assert!(!grant(Some(json!({"argv": []}))).covers(&alice, "run_command", &json!({"argv": ["rm"]}), 0));
    }

    #[test]
    fn memory_keeps_the_review_queue_as_every_store_does() {
        crate::review::conformance(&MemoryApprovalStore::default());
    }

    #[test]
    fn memory_keeps_at_most_so_many_settled_reviews_the_oldest_going_first() {
        crate::review::settled_bound(&MemoryApprovalStore::default());
    }

    #[test]
    fn memory_spends_a_nonce_once_and_keeps_grants_apart_by_caller() {
        let store = MemoryApprovalStore::default();
        let later = now_ms() + 60_000;
        assert_eq!(store.spend_nonce("n1", later), Ok(true));
        assert_eq!(store.spend_nonce("n1", later), Ok(false));
        assert_eq!(store.spend_nonce("n2", later), Ok(true));
        let alice = Caller::named("alice").unwrap();
        let given = store
            .add_grant(NewGrant {
                caller: alice.clone(),
                tool: "write_file".into(),
                arguments: None,
                expires_at_ms: later,
            })
            .unwrap();
        assert_eq!(store.grants(Some(&alice), now_ms()).unwrap(), vec![given.clone()]);
        assert!(store.grants(Some(&Caller::local()), now_ms()).unwrap().is_empty());
        assert!(store.grants(None, later).unwrap().is_empty(), "expired at its time");
        assert_eq!(store.revoke_grant(&given.id), Ok(true));
        assert_eq!(store.revoke_grant(&given.id), Ok(false));
        assert!(store.grants(None, now_ms()).unwrap().is_empty());
    }
}
