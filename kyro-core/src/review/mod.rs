//! Reviews: approvals the agent cannot give itself. A call whose rule is `review` runs only
//! after a named approver decides it, in an inbox outside the client (the HTTP server's
//! `/approvals`, `kyro approvals`); the client's own answer never approves it.
//!
//! The queue lives in the [`ApprovalStore`](crate::grants::ApprovalStore) every replica shares. A call is reviewed by
//! its caller and fingerprint: the same call asked again finds its review (pending,
//! approved and not yet run, or denied until the review expires) instead of a new one.
//! An approved review runs once ([`ApprovalStore::spend_review`](crate::grants::ApprovalStore::spend_review) takes it from `approved`
//! to `ran` in one step, whichever process waits for it), and a review nobody decides
//! expires and is then denied: silence is never consent.

use serde::Serialize;
use serde_json::Value;

use crate::caller::Caller;

/// How long a review waits for an approver unless the policy says otherwise
/// (`[approvals] review_expiry_s`): a day.
pub const REVIEW_LIFETIME_S: u64 = 24 * 60 * 60;

/// Reviews pending at once for one caller, at most: a caller past it is refused until an
/// approver catches up.
pub const PENDING_PER_CALLER: usize = 64;

/// Reviews pending at once in a store, at most.
pub const MOST_PENDING: usize = 1024;

/// How long a decided, ran or expired review is kept to be shown, after it expires.
pub const KEPT_AFTER_MS: u64 = 24 * 60 * 60 * 1000;

/// Settled reviews (ran or expired) a store keeps at most: past it the oldest go first, so
/// a caller asking again and again grows no store (receipts keep the record). A denial
/// that still stands is kept until it expires.
pub const MOST_SETTLED: usize = 2048;

/// The most of a call's summary a review keeps (each argument is already cut to 4,000
/// characters; a preview, such as a diff, is cut here).
pub const MOST_SUMMARY_BYTES: usize = 16 * 1024;

/// Arguments larger than this (as JSON) are kept as their size and digest only: the
/// summary shows each of them, and the fingerprint binds the call.
pub const MOST_ARGUMENTS_BYTES: usize = 16 * 1024;

/// How long a claimed notice is remembered: longer than any review is kept.
pub const NOTICES_KEPT_MS: u64 = 32 * 24 * 60 * 60 * 1000;

/// Where a review stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewState {
    /// Waiting for an approver.
    Pending,
    /// Approved; the call runs at its next pass (once).
    Approved,
    /// Denied by an approver.
    Denied,
    /// Approved and run.
    Ran,
    /// Nobody decided it in time (or it was approved and never run): denied.
    Expired,
}

impl ReviewState {
    /// The state's word, as the stores keep it.
    pub fn as_str(self) -> &'static str {
        match self {
            ReviewState::Pending => "pending",
            ReviewState::Approved => "approved",
            ReviewState::Denied => "denied",
            ReviewState::Ran => "ran",
            ReviewState::Expired => "expired",
        }
    }

    /// The state a store's word names.
    pub fn parse(word: &str) -> Option<ReviewState> {
        Some(match word {
            "pending" => ReviewState::Pending,
            "approved" => ReviewState::Approved,
            "denied" => ReviewState::Denied,
            "ran" => ReviewState::Ran,
            "expired" => ReviewState::Expired,
            _ => return None,
        })
    }
}

/// One call waiting for (or decided by) an approver.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Review {
    /// The review's id (`/approvals/{id}`, `kyro approvals approve ID`): 16 random hex
    /// digits.
    pub id: String,
    /// Who made the call.
    pub caller: Caller,
    /// The canonical tool name.
    pub tool: String,
    /// The call's fingerprint.
    pub fingerprint: String,
    /// The call's arguments, canonical keys.
    pub arguments: Value,
    /// What the approver reads: every argument, then the tool's preview (a diff, a command
    /// line).
    pub summary: String,
    /// When it was asked, in milliseconds since the Unix epoch.
    pub created_at_ms: u64,
    /// When it expires unless decided and run, in milliseconds since the Unix epoch.
    pub expires_at_ms: u64,
    /// Where it stands at the time it was read.
    pub state: ReviewState,
    /// Whether the caller's policy lets an approver approve their own call
    /// (`[approvals] self_review` of the scope the call was made in).
    pub self_review: bool,
    /// Who decided it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approver: Option<Caller>,
    /// The approver's reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// When it was decided, in milliseconds since the Unix epoch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided_at_ms: Option<u64>,
}

impl Review {
    /// The state as of `now_ms`: a pending or approved review past its expiry has expired.
    pub fn state_at(&self, now_ms: u64) -> ReviewState {
        match self.state {
            ReviewState::Pending | ReviewState::Approved if now_ms >= self.expires_at_ms => ReviewState::Expired,
            state => state,
        }
    }

    /// Whether the approver cannot see the whole call: its summary was cut, or its
    /// arguments kept as their digest. Such a call is never approved, only denied.
    pub fn cut(&self) -> bool {
        self.summary.ends_with(CUT_MARK) || self.arguments.get("omitted").is_some()
    }

    /// Whether this review still stands for its call at `now_ms`: the same call asked
    /// again finds it instead of a new one (pending, approved not yet run, or denied until
    /// it expires).
    pub fn stands_at(&self, now_ms: u64) -> bool {
        match self.state {
            ReviewState::Pending | ReviewState::Approved | ReviewState::Denied => now_ms < self.expires_at_ms,
            ReviewState::Ran | ReviewState::Expired => false,
        }
    }
}

/// A call to put in the queue (the store gives it its id and state).
#[derive(Debug, Clone, PartialEq)]
pub struct NewReview {
    /// Who made the call.
    pub caller: Caller,
    /// The canonical tool name.
    pub tool: String,
    /// The call's fingerprint.
    pub fingerprint: String,
    /// The call's arguments.
    pub arguments: Value,
    /// What the approver reads.
    pub summary: String,
    /// When it expires, in milliseconds since the Unix epoch.
    pub expires_at_ms: u64,
    /// Whether the caller's policy lets an approver approve their own call.
    pub self_review: bool,
}

impl NewReview {
    /// The review it becomes, pending, with `id`, asked at `now_ms`.
    pub fn into_review(self, id: String, now_ms: u64) -> Review {
        Review {
            id,
            caller: self.caller,
            tool: self.tool,
            fingerprint: self.fingerprint,
            arguments: self.arguments,
            summary: self.summary,
            created_at_ms: now_ms,
            expires_at_ms: self.expires_at_ms,
            state: ReviewState::Pending,
            self_review: self.self_review,
            approver: None,
            reason: None,
            decided_at_ms: None,
        }
    }
}

/// An approver's decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decided {
    /// Approved (true) or denied.
    pub approve: bool,
    /// Who decided.
    pub approver: Caller,
    /// Why, in their words.
    pub reason: Option<String>,
}

/// Why a decision was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecideError {
    /// No review has that id (or it is no longer kept).
    #[error("no approval `{0}` (decided ones are kept a day after they expire)")]
    Unknown(String),
    /// It was decided already, ran or expired.
    #[error("approval `{id}` is {} already; only a pending one can be decided", state.as_str())]
    NotPending {
        /// The review.
        id: String,
        /// Where it stands.
        state: ReviewState,
    },
    /// The call is too large to be shown whole, so it cannot be approved (only denied).
    #[error(
        "approval `{0}` is too large to be shown whole, and cannot be approved: deny it, and make the call in smaller parts"
    )]
    TooLarge(String),
    /// The approver made the call, and the caller's policy does not let approvers review
    /// their own.
    #[error("`{0}` made this call and cannot approve it themselves (the policy's `[approvals] self_review` is off)")]
    OwnCall(Caller),
    /// The store failed.
    #[error("{0}")]
    Store(String),
}

/// A new review id: 16 random hex digits.
pub fn new_id() -> Result<String, String> {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).map_err(|e| format!("no randomness for an approval id: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// `summary` cut to [`MOST_SUMMARY_BYTES`] at a character's boundary, saying so.
pub fn kept_summary(summary: String) -> String {
    if summary.len() <= MOST_SUMMARY_BYTES {
        return summary;
    }
    let mut cut = MOST_SUMMARY_BYTES;
    while !summary.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}\n… ({} bytes more{CUT_MARK}", &summary[..cut], summary.len() - cut)
}

/// How a cut summary ends.
const CUT_MARK: &str = " not shown: too large to approve)";

/// `arguments` as a review keeps them: whole up to [`MOST_ARGUMENTS_BYTES`] of JSON, else
/// their size and SHA-256.
pub fn kept_arguments(arguments: &Value) -> Value {
    let text = arguments.to_string();
    if text.len() <= MOST_ARGUMENTS_BYTES {
        return arguments.clone();
    }
    use sha2::Digest;
    serde_json::json!({
        "omitted": format!("{} bytes of arguments; the summary shows each", text.len()),
        "sha256": crate::confined::hex(&sha2::Sha256::digest(text.as_bytes())),
    })
}

/// The reason a person writes, kept to a line's worth: control characters become spaces,
/// at most 500 characters.
pub fn clean_reason(reason: Option<&str>) -> Option<String> {
    let reason: String = reason?
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(500)
        .collect();
    let reason = reason.trim();
    (!reason.is_empty()).then(|| reason.to_owned())
}

mod decide;

pub use decide::{conformance, decide, settled_bound};
