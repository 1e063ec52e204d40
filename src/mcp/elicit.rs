//! Approval by a person: a client that declared it can ask its user is asked, with the
//! call's summary and fingerprint, whether to run it. Before 2026-07-28 by
//! `elicitation/create` (once, or for the session); on 2026-07-28 by an `input_required`
//! answer and the retry that brings the person's answer back ([`PendingApprovals`]).

use std::collections::HashMap;
use std::time::Instant;

use kyro_core::ApprovalToken;
use kyro_core::policy::APPROVAL_LIFETIME;
use rmcp::Peer;
use rmcp::RoleServer;
use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema, InputRequest,
    InputRequests, InputRequiredResult, InputResponses, RequestStateCodec, RequestStateError, SealOptions,
};
use rmcp::service::RequestContext;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Whether the client declared it can be asked questions (form elicitation).
pub(super) fn asks_for_approval(peer: &Peer<RoleServer>) -> bool {
    peer.peer_info()
        .is_some_and(|info| info.capabilities.elicitation.is_some())
}

/// Who is asking, as this server knows callers today: the one local user over stdio, the
/// holder of the server's bearer token over HTTP. An approval's state is sealed for its
/// caller, so one asked over stdio cannot be redeemed over HTTP.
pub(super) fn caller_of(context: &RequestContext<RoleServer>) -> String {
    #[cfg(feature = "http")]
    if context.extensions.get::<axum::http::request::Parts>().is_some() {
        return "http:bearer".into();
    }
    let _ = context;
    "local".into()
}

/// Whether a 2026-07-28 request's client can be asked by a form: it declared elicitation,
/// with the form mode (or no mode at all, which means the form).
pub(super) fn asks_by_form(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .and_then(|c| c.elicitation)
        .is_some_and(|e| e.form.is_some() || e.url.is_none())
}

/// What the client's user answered.
pub(super) enum Approval {
    Refused,
    Once,
    /// This call, and every later call of the same tool in this session.
    ForSession,
}

/// Asks the client's user to approve a call, showing its summary and fingerprint, and
/// whether to approve the tool for the rest of the session.
pub(super) async fn approve(peer: &Peer<RoleServer>, summary: &str, fingerprint: &str) -> Approval {
    let Ok(schema) = ElicitationSchema::builder()
        .required_bool("approve")
        .optional_bool_with("for_session", |b| {
            b.with_default(false)
                .description("Also approve every later call of this tool in this session, without asking")
        })
        .description("Approve this one call")
        .build()
    else {
        return Approval::Refused;
    };
    let request = ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: format!("kyro asks to run {summary}\nfingerprint {fingerprint}\nApprove this call?"),
        requested_schema: schema,
    };
    let Ok(result) = peer.create_elicitation(request).await else {
        return Approval::Refused;
    };
    let answer = |key: &str| result.content.as_ref().and_then(|c| c.get(key)) == Some(&Value::Bool(true));
    if result.action != ElicitationAction::Accept || !answer("approve") {
        Approval::Refused
    } else if answer("for_session") {
        Approval::ForSession
    } else {
        Approval::Once
    }
}

/// Approval on the 2026-07-28 revision, which has no server-to-client requests: the
/// answer to `tools/call` is `input_required` with the question (an elicitation form) and
/// a sealed `requestState`; the client asks its user and calls again with the answer and
/// the state. The state binds the call's tool and fingerprint, the caller (as associated
/// data) and a one-time nonce, and lasts [`APPROVAL_LIFETIME`]; it is sealed with
/// HMAC-SHA256 (rmcp's `RequestStateCodec`) under a key from `KYRO_STATE_KEY` (so that
/// replicas sharing the key can open each other's) or, without one, a key this process
/// makes and never writes down.
pub(crate) struct PendingApprovals {
    codec: RequestStateCodec,
    /// Nonces already redeemed, each kept while its state could still be opened.
    redeemed: std::sync::Mutex<HashMap<String, Instant>>,
    /// How long a state can be redeemed ([`APPROVAL_LIFETIME`]).
    lifetime: std::time::Duration,
}

/// The variable holding the key that seals approval states (32 bytes or more).
pub(crate) const STATE_KEY_VARIABLE: &str = "KYRO_STATE_KEY";

/// The key `requestState` answers under.
const APPROVAL_KEY: &str = "approval";

/// What a retry's state and answer come to.
#[derive(Debug, PartialEq, Eq)]
enum Redeemed {
    /// The person approved this very call, and the state was not redeemed before.
    Approved,
    /// The state approves another call of the tool (this one's arguments differ): its
    /// fingerprint.
    OtherCall(String),
    /// The person declined, or dismissed the question.
    Declined,
    /// The state does not verify (changed, another caller's, another key's, another
    /// tool's), or the answer is missing; why.
    Unverified(String),
    /// The state is older than approvals last.
    Lapsed,
    /// The state was redeemed before.
    Spent,
}

/// What an approval state carries (signed, not encrypted: nothing secret in it).
#[derive(Serialize, Deserialize)]
struct Sealed {
    tool: String,
    fingerprint: String,
    nonce: String,
}

impl PendingApprovals {
    /// Sealing under `KYRO_STATE_KEY` when it is set, else under a key of this process's.
    pub(crate) fn from_env() -> Result<PendingApprovals, String> {
        let key = match std::env::var(STATE_KEY_VARIABLE) {
            Ok(key) => key.into_bytes(),
            Err(_) => {
                let mut key = vec![0u8; 32];
                getrandom::fill(&mut key).map_err(|e| format!("cannot make a key for approvals: {e}"))?;
                key
            }
        };
        PendingApprovals::with_key(key, APPROVAL_LIFETIME)
            .map_err(|e| format!("{STATE_KEY_VARIABLE}: {e} (it must hold 32 bytes or more)"))
    }

    fn with_key(key: Vec<u8>, lifetime: std::time::Duration) -> Result<PendingApprovals, RequestStateError> {
        Ok(PendingApprovals {
            codec: RequestStateCodec::try_new(key)?,
            redeemed: std::sync::Mutex::default(),
            lifetime,
        })
    }

    /// The question about the call: an elicitation form showing `summary` (every argument,
    /// as `Execute::preview` shows it), and the sealed state a retry must bring back.
    pub(crate) fn ask(
        &self,
        caller: &str,
        tool: &str,
        fingerprint: &str,
        summary: &str,
    ) -> Option<InputRequiredResult> {
        let mut nonce = [0u8; 16];
        // Without randomness the nonce is still unique in this process (the counter);
        // the seal, not the nonce, is what a forger lacks.
        if getrandom::fill(&mut nonce).is_err() {
            static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
            nonce[..8].copy_from_slice(&NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed).to_le_bytes());
        }
        let sealed = Sealed {
            tool: tool.to_owned(),
            fingerprint: fingerprint.to_owned(),
            nonce: nonce.iter().map(|b| format!("{b:02x}")).collect(),
        };
        let options = SealOptions::new().associated_data(caller.as_bytes()).ttl(self.lifetime);
        // A state that cannot be sealed asks nothing: the call gets `approval_required`.
        let state = self.codec.seal_json_with(&sealed, &options).ok()?;
        let schema = ElicitationSchema::builder()
            .required_bool("approve")
            .description("Approve this one call")
            .build()
            .unwrap_or_else(|_| ElicitationSchema::new(Default::default()));
        let question = ElicitRequest::new(ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: format!("Run {summary}\nfingerprint {fingerprint}\nApprove this call?"),
            requested_schema: schema,
        });
        let mut requests = InputRequests::new();
        requests.insert(APPROVAL_KEY.to_owned(), InputRequest::Elicitation(question));
        Some(InputRequiredResult::new(Some(requests), Some(state)))
    }

    /// The approval a retry brings for the call `tool` whose fingerprint is `fingerprint`:
    /// the token to run it with, which the runtime honours once, or refuses (with the
    /// call's receipt) when the person declined, the state does not verify, is for
    /// another tool, was redeemed before or has expired, or the arguments changed.
    pub(crate) fn redeem(
        &self,
        caller: &str,
        tool: &str,
        fingerprint: &str,
        state: &str,
        responses: Option<&InputResponses>,
    ) -> ApprovalToken {
        match self.open(caller, tool, fingerprint, state, responses) {
            Redeemed::Approved => ApprovalToken::for_fingerprint(fingerprint),
            // The runtime refuses the mismatch; the state stays good for its own call.
            Redeemed::OtherCall(approved) => ApprovalToken::for_fingerprint(&approved),
            Redeemed::Declined => ApprovalToken::declined(fingerprint),
            Redeemed::Unverified(why) => ApprovalToken::unverified(fingerprint, why),
            Redeemed::Lapsed => ApprovalToken::lapsed(fingerprint),
            Redeemed::Spent => ApprovalToken::spent(fingerprint),
        }
    }

    fn open(
        &self,
        caller: &str,
        tool: &str,
        fingerprint: &str,
        state: &str,
        responses: Option<&InputResponses>,
    ) -> Redeemed {
        let sealed: Sealed = match self.codec.open_json_with(state, caller.as_bytes()) {
            Ok(sealed) => sealed,
            Err(RequestStateError::Expired) => return Redeemed::Lapsed,
            Err(e) => return Redeemed::Unverified(e.to_string()),
        };
        if sealed.tool != tool {
            return Redeemed::Unverified(format!("it approves a call of `{}`", sealed.tool));
        }
        let answer = responses
            .and_then(|r| r.get(APPROVAL_KEY))
            .and_then(|answer| serde_json::from_value::<ElicitResult>(answer.clone()).ok());
        let Some(answer) = answer else {
            return Redeemed::Unverified(format!("no answer under `{APPROVAL_KEY}`"));
        };
        let approved = answer.action == ElicitationAction::Accept
            && answer.content.as_ref().and_then(|c| c.get("approve")) == Some(&Value::Bool(true));
        if !approved {
            return Redeemed::Declined;
        }
        if sealed.fingerprint != fingerprint {
            return Redeemed::OtherCall(sealed.fingerprint);
        }
        let mut redeemed = self.redeemed.lock().unwrap_or_else(|p| p.into_inner());
        redeemed.retain(|_, at| at.elapsed() <= self.lifetime);
        if redeemed.insert(sealed.nonce, Instant::now()).is_some() {
            return Redeemed::Spent;
        }
        Redeemed::Approved
    }
}

#[cfg(test)]
mod tests {
    use super::{PendingApprovals, Redeemed};
    use rmcp::model::InputResponses;
    use serde_json::json;

    fn answer(action: &str, approve: bool) -> InputResponses {
        [(
            "approval".to_owned(),
            json!({"action": action, "content": {"approve": approve}}),
        )]
        .into()
    }

    #[test]
    fn a_state_is_redeemed_once_by_its_caller_for_its_call_until_it_lapses() {
        let approvals = PendingApprovals::with_key(vec![7; 32], std::time::Duration::from_secs(1)).unwrap();
        let ask = || {
            approvals
                .ask("alice", "write_file", "ab", "write_file {}")
                .and_then(|question| question.request_state)
                .unwrap()
        };
        let yes = answer("accept", true);
        let state = ask();
        let open = |caller: &str, tool: &str, fingerprint: &str, state: &str| {
            approvals.open(caller, tool, fingerprint, state, Some(&yes))
        };
        assert!(
            matches!(open("bob", "write_file", "ab", &state), Redeemed::Unverified(_)),
            "another caller"
        );
        assert!(
            matches!(open("alice", "delete_path", "ab", &state), Redeemed::Unverified(_)),
            "another tool"
        );
        assert_eq!(
            open("alice", "write_file", "cd", &state),
            Redeemed::OtherCall("ab".into())
        );
        let other_key = PendingApprovals::with_key(vec![8; 32], std::time::Duration::from_secs(1)).unwrap();
        assert!(matches!(
            other_key.open("alice", "write_file", "ab", &state, Some(&yes)),
            Redeemed::Unverified(_)
        ));
        assert_eq!(
            approvals.open("alice", "write_file", "ab", &state, Some(&answer("accept", false))),
            Redeemed::Declined
        );
        assert_eq!(
            approvals.open("alice", "write_file", "ab", &state, Some(&answer("cancel", true))),
            Redeemed::Declined
        );
        assert!(matches!(
            approvals.open("alice", "write_file", "ab", &state, None),
            Redeemed::Unverified(_)
        ));
        assert_eq!(open("alice", "write_file", "ab", &state), Redeemed::Approved);
        assert_eq!(open("alice", "write_file", "ab", &state), Redeemed::Spent);
        // A replica holding the same key opens it too (the used nonces are this process's).
        let replica = PendingApprovals::with_key(vec![7; 32], std::time::Duration::from_secs(1)).unwrap();
        assert_eq!(
            replica.open("alice", "write_file", "ab", &state, Some(&yes)),
            Redeemed::Approved
        );
        let late = ask();
        std::thread::sleep(std::time::Duration::from_millis(2100));
        assert_eq!(open("alice", "write_file", "ab", &late), Redeemed::Lapsed);
    }
}
