//! Approval by a person: a client that declared it can ask its user is asked, with the
//! call's summary and fingerprint, whether to run it. Before 2026-07-28 by
//! `elicitation/create` (once, or for the session); on 2026-07-28 by an `input_required`
//! answer and the retry that brings the person's answer back ([`PendingApprovals`]).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kyro_core::grants::{ApprovalStore, NewGrant, now_ms};
use kyro_core::policy::APPROVAL_LIFETIME;
use kyro_core::{ApprovalToken, Caller};
use kyro_core::{Approver, Asked, BoxFuture};
use rmcp::Peer;
use rmcp::RoleServer;
use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema, EnumSchema, InputRequest,
    InputRequests, InputRequiredResult, InputResponses, PrimitiveSchemaDefinition, RequestStateCodec,
    RequestStateError, SealOptions,
};
use rmcp::service::RequestContext;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::state_key::StateKeys;

/// Whether the client declared it can be asked questions (form elicitation).
fn asks_for_approval(peer: &Peer<RoleServer>) -> bool {
    peer.peer_info()
        .is_some_and(|info| info.capabilities.elicitation.is_some())
}

/// Who is asking: over HTTP, the caller the request's token names (set by the token
/// check; `anonymous` where none is required); over stdio, the local user. Never read
/// from the request's body. An approval's state is sealed for its caller, so one asked
/// over stdio cannot be redeemed over HTTP, nor one asked by a token by another.
pub(super) fn caller_of(context: &RequestContext<RoleServer>) -> Caller {
    #[cfg(feature = "http")]
    if let Some(parts) = context.extensions.get::<axum::http::request::Parts>() {
        return parts
            .extensions
            .get::<Caller>()
            .cloned()
            .unwrap_or_else(Caller::anonymous);
    }
    let _ = context;
    Caller::local()
}

/// The policy the HTTP edge set on a request (a caller with a policy of its own): its key,
/// the reading of the files it is of, and its scope.
pub(super) fn role_of(
    context: &RequestContext<RoleServer>,
) -> Option<(std::sync::Arc<str>, u64, &kyro_core::policy::Scope)> {
    #[cfg(feature = "http")]
    if let Some(parts) = context.extensions.get::<axum::http::request::Parts>() {
        return parts
            .extensions
            .get::<super::auth::Role>()
            .map(|role| (role.key.clone(), role.reading, &*role.scope));
    }
    let _ = context;
    None
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
enum Approval {
    Refused,
    Once,
    /// This call, and every later call of the same tool in this session.
    ForSession,
}

/// Asks the client's user to approve a call, showing its summary and fingerprint, and
/// whether to approve the tool for the rest of the session (not offered for a call a rule
/// asks about each time).
async fn approve(peer: &Peer<RoleServer>, asked: &Asked<'_>) -> Approval {
    let (summary, fingerprint) = (asked.summary, asked.fingerprint);
    let mut builder = ElicitationSchema::builder().required_bool("approve");
    if !asked.each_call {
        builder = builder.optional_bool_with("for_session", |b| {
            b.with_default(false)
                .description("Also approve every later call of this tool in this session, without asking")
        });
    }
    let Ok(schema) = builder.description("Approve this one call").build() else {
        return Approval::Refused;
    };
    let request = ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: format!("Run {summary}\nfingerprint {fingerprint}\nApprove this call?"),
        requested_schema: schema,
    };
    let Ok(result) = peer.create_elicitation(request).await else {
        return Approval::Refused;
    };
    let answer = |key: &str| result.content.as_ref().and_then(|c| c.get(key)) == Some(&Value::Bool(true));
    if result.action != ElicitationAction::Accept || !answer("approve") {
        Approval::Refused
    } else if answer("for_session") && !asked.each_call {
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
/// makes and never writes down; during a rotation a state sealed under
/// `KYRO_STATE_KEY_PREVIOUS` still opens ([`StateKeys`]).
pub(crate) struct PendingApprovals {
    codec: RequestStateCodec,
    /// Where redeemed nonces are recorded (shared by the replicas sharing the store) and
    /// grants kept.
    store: Arc<dyn ApprovalStore>,
    /// How long a state can be redeemed ([`APPROVAL_LIFETIME`]).
    lifetime: Duration,
}

/// The key `requestState` answers under.
const APPROVAL_KEY: &str = "approval";

/// The form's answer that asks for a grant besides this call, and how long each lasts.
const REMEMBER: &str = "remember";
const GRANTS: [(&str, &str, Duration); 3] = [
    ("once", "Only this call", Duration::ZERO),
    (
        "hour",
        "Every call of this tool, for an hour",
        Duration::from_secs(3600),
    ),
    ("day", "Every call of this tool, for a day", Duration::from_secs(86_400)),
];

/// What a retry's state and answer come to.
#[derive(Debug, PartialEq, Eq)]
enum Redeemed {
    /// The person approved this very call (its one-time nonce still to be spent), and
    /// perhaps every call of the tool for a while.
    Approved { nonce: String, grant: Duration },
    /// The state approves another call of the tool (this one's arguments differ): its
    /// fingerprint.
    OtherCall(String),
    /// The person declined, or dismissed the question (the state's nonce, to spend).
    Declined(String),
    /// The state does not verify (changed, another caller's, another key's, another
    /// tool's), or the answer is missing; why.
    Unverified(String),
    /// The state is older than approvals last.
    Lapsed,
}

/// What an approval state carries (signed, not encrypted: nothing secret in it).
#[derive(Serialize, Deserialize)]
struct Sealed {
    tool: String,
    fingerprint: String,
    nonce: String,
}

impl PendingApprovals {
    /// Sealing under `KYRO_STATE_KEY` when it is set, else under a key of this process's,
    /// and opening with `KYRO_STATE_KEY_PREVIOUS` too during a rotation; nonces and
    /// grants in `store`.
    pub(crate) fn from_env(store: Arc<dyn ApprovalStore>) -> Result<PendingApprovals, String> {
        PendingApprovals::with_keys(&StateKeys::from_env()?, store, APPROVAL_LIFETIME)
    }

    fn with_keys(
        keys: &StateKeys,
        store: Arc<dyn ApprovalStore>,
        lifetime: Duration,
    ) -> Result<PendingApprovals, String> {
        Ok(PendingApprovals {
            codec: keys.codec(<[u8]>::to_vec)?,
            store,
            lifetime,
        })
    }

    /// The question about the call: an elicitation form showing `summary` (every argument,
    /// as `Execute::preview` shows it), and the sealed state a retry must bring back.
    pub(crate) fn ask(&self, asked: &Asked<'_>) -> Option<InputRequiredResult> {
        let (caller, tool, fingerprint, summary) = (asked.caller, asked.tool, asked.fingerprint, asked.summary);
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
        let options = SealOptions::new()
            .associated_data(caller.name().as_bytes())
            .ttl(self.lifetime);
        // A state that cannot be sealed asks nothing: the call gets `approval_required`.
        let state = self.codec.seal_json_with(&sealed, &options).ok()?;
        let remember = EnumSchema::builder(GRANTS.iter().map(|g| g.0.to_owned()).collect())
            .enum_titles(GRANTS.iter().map(|g| g.1.to_owned()).collect())
            .and_then(|b| b.with_default(GRANTS[0].0))
            .ok()?
            .title("Allow")
            .description("Also allow every later call of this tool by you, without asking, for a while")
            .build();
        let mut schema = ElicitationSchema::builder().required_bool("approve");
        // A call a rule asks about each time is offered no grant.
        if !asked.each_call {
            schema = schema.property(REMEMBER, PrimitiveSchemaDefinition::Enum(remember));
        }
        let schema = schema.description("Approve this call").build().ok()?;
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
    ///
    /// The nonce is spent in the store first, for a yes and for a no alike (a replay to
    /// any process sharing it is refused, and a "no" stays a no); the grant the person
    /// chose comes back to be recorded once the call has passed the boundary.
    pub(crate) async fn redeem(
        &self,
        caller: &Caller,
        tool: &str,
        fingerprint: &str,
        state: &str,
        responses: Option<&InputResponses>,
    ) -> (ApprovalToken, Option<NewGrant>) {
        let (nonce, grant) = match self.open(caller, tool, fingerprint, state, responses) {
            Redeemed::Approved { nonce, grant } => (nonce, Some(grant)),
            Redeemed::Declined(nonce) => (nonce, None),
            // The runtime refuses the mismatch; the state stays good for its own call.
            Redeemed::OtherCall(approved) => return (ApprovalToken::for_fingerprint(&approved), None),
            Redeemed::Unverified(why) => return (ApprovalToken::unverified(fingerprint, why), None),
            Redeemed::Lapsed => return (ApprovalToken::lapsed(fingerprint), None),
        };
        // Kept well past the state's own expiry, whatever the replicas' clocks say.
        let until = now_ms() + 2 * self.lifetime.as_millis() as u64;
        let store = self.store.clone();
        let spent = tokio::task::spawn_blocking(move || store.spend_nonce(&nonce, until)).await;
        let token = match (spent, &grant) {
            (Ok(Ok(true)), Some(_)) => ApprovalToken::for_fingerprint(fingerprint),
            (Ok(Ok(true)), None) => return (ApprovalToken::declined(fingerprint), None),
            (Ok(Ok(false)), _) => return (ApprovalToken::spent(fingerprint), None),
            (Ok(Err(why)), _) => {
                let why = format!("its use could not be recorded: {why}");
                return (ApprovalToken::unverified(fingerprint, why), None);
            }
            (Err(_), _) => {
                let why = "its use could not be recorded".to_owned();
                return (ApprovalToken::unverified(fingerprint, why), None);
            }
        };
        // No standing grant for a caller nobody authenticated.
        let grant = grant
            .filter(|lasting| !lasting.is_zero() && *caller != Caller::anonymous())
            .map(|lasting| NewGrant {
                caller: caller.clone(),
                tool: tool.to_owned(),
                arguments: None,
                expires_at_ms: now_ms() + lasting.as_millis() as u64,
            });
        (token, grant)
    }

    /// Records `grant` (the call it came with passed the boundary); a grant that cannot
    /// be kept leaves the call's approval as it was.
    pub(crate) async fn keep(&self, grant: NewGrant) {
        let store = self.store.clone();
        let _ = tokio::task::spawn_blocking(move || store.add_grant(grant)).await;
    }

    fn open(
        &self,
        caller: &Caller,
        tool: &str,
        fingerprint: &str,
        state: &str,
        responses: Option<&InputResponses>,
    ) -> Redeemed {
        let sealed: Sealed = match self.codec.open_json_with(state, caller.name().as_bytes()) {
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
        let content = answer.content.as_ref();
        let approved = answer.action == ElicitationAction::Accept
            && content.and_then(|c| c.get("approve")) == Some(&Value::Bool(true));
        if !approved {
            return Redeemed::Declined(sealed.nonce);
        }
        if sealed.fingerprint != fingerprint {
            return Redeemed::OtherCall(sealed.fingerprint);
        }
        let grant = match content.and_then(|c| c.get(REMEMBER)) {
            None => Duration::ZERO,
            Some(chosen) => match GRANTS.iter().find(|g| chosen.as_str() == Some(g.0)) {
                Some(g) => g.2,
                None => {
                    return Redeemed::Unverified(format!("`{REMEMBER}` is {chosen}, not one of the choices offered"));
                }
            },
        };
        Redeemed::Approved {
            nonce: sealed.nonce,
            grant,
        }
    }
}

/// The person behind one `tools/call` request, whom the boundary asks about a call that
/// needs an approval it does not carry ([`kyro_core::Approver`]), so that an approved call
/// passes the boundary once and leaves one receipt. On 2026-07-28, a retry's state is
/// redeemed (its nonce spent), or the question is kept for the `input_required` answer;
/// before it, the session's standing approval, or `elicitation/create` when the client can
/// be asked. Asked only for a call whose receipt can be written.
pub(super) struct Person {
    peer: Peer<RoleServer>,
    /// The request is on 2026-07-28 and the server seals states.
    approvals: Option<Arc<PendingApprovals>>,
    /// The client can be asked by a form (2026-07-28).
    by_form: bool,
    /// The retry's state and answers, redeemed once.
    retry: Mutex<Option<(String, Option<InputResponses>)>>,
    for_session: Arc<Mutex<BTreeSet<String>>>,
    /// The question to send back as `input_required`.
    question: Mutex<Option<InputRequiredResult>>,
    /// The grant the person chose, kept once the call passed.
    grant: Mutex<Option<NewGrant>>,
}

impl Person {
    pub(super) fn new(
        context: &RequestContext<RoleServer>,
        approvals: Option<&Arc<PendingApprovals>>,
        for_session: &Arc<Mutex<BTreeSet<String>>>,
        (request_state, input_responses): (Option<String>, Option<InputResponses>),
    ) -> Person {
        let current = context
            .protocol_version()
            .is_some_and(|v| v >= rmcp::model::ProtocolVersion::V_2026_07_28);
        Person {
            peer: context.peer.clone(),
            approvals: approvals.filter(|_| current).cloned(),
            by_form: asks_by_form(context),
            retry: Mutex::new(request_state.map(|state| (state, input_responses))),
            for_session: for_session.clone(),
            question: Mutex::default(),
            grant: Mutex::default(),
        }
    }

    /// The question to answer the request with, when the person is to be asked.
    pub(super) fn question(&self) -> Option<InputRequiredResult> {
        self.question.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    /// The grant the person chose with their approval.
    pub(super) fn grant(&self) -> Option<NewGrant> {
        self.grant.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    async fn answer(&self, asked: Asked<'_>) -> Option<ApprovalToken> {
        if let Some(approvals) = &self.approvals {
            // 2026-07-28: the question goes back as `input_required`, the answer comes
            // with the retry (no server-to-client request, no session).
            let retry = self.retry.lock().unwrap_or_else(|p| p.into_inner()).take();
            if let Some((state, responses)) = retry {
                let (token, grant) = approvals
                    .redeem(asked.caller, asked.tool, asked.fingerprint, &state, responses.as_ref())
                    .await;
                // A call a rule asks about each time leaves no grant behind (none was offered).
                *self.grant.lock().unwrap_or_else(|p| p.into_inner()) = grant.filter(|_| !asked.each_call);
                return Some(token);
            }
            if self.by_form {
                let question = approvals.ask(&asked);
                *self.question.lock().unwrap_or_else(|p| p.into_inner()) = question;
            }
            return None;
        }
        // The user approved this tool for the session earlier, or approves this call now; a
        // session's approvals are its caller's (one who learns the session id gets none).
        let key = format!("{}\0{}", asked.caller, asked.tool);
        let session = |add: bool| {
            let mut tools = self.for_session.lock().unwrap_or_else(|p| p.into_inner());
            if add {
                tools.insert(key.clone())
            } else {
                tools.contains(&key)
            }
        };
        // A session's approval stands on the person's answer about an earlier call of the
        // tool, not on these arguments: it forwards none (a `mcp_call` approved for the
        // session does not approve every upstream tool).
        if session(false) && !asked.each_call {
            return Some(ApprovalToken::standing(asked.fingerprint));
        }
        if !asks_for_approval(&self.peer) {
            return None;
        }
        match approve(&self.peer, &asked).await {
            Approval::Refused => None,
            Approval::Once => Some(ApprovalToken::for_fingerprint(asked.fingerprint)),
            Approval::ForSession => {
                session(true);
                Some(ApprovalToken::for_fingerprint(asked.fingerprint))
            }
        }
    }
}

impl Approver for Person {
    fn approve<'a>(&'a self, asked: Asked<'a>) -> BoxFuture<'a, Option<ApprovalToken>> {
        Box::pin(self.answer(asked))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::{PendingApprovals, Redeemed};
    use kyro_core::grants::{ApprovalStore, MemoryApprovalStore, now_ms};
    use kyro_core::{Asked, Caller};
    use rmcp::model::InputResponses;
    use serde_json::{Value, json};

    fn answer(action: &str, content: Value) -> InputResponses {
        [("approval".to_owned(), json!({"action": action, "content": content}))].into()
    }

    fn asked(caller: &Caller) -> Asked<'_> {
        Asked {
            caller,
            tool: "write_file",
            fingerprint: "ab",
            summary: "write_file {}",
            each_call: false,
        }
    }

    fn approvals(key: u8, store: &Arc<MemoryApprovalStore>) -> PendingApprovals {
        let keys = crate::mcp::state_key::StateKeys::new(Some(vec![key; 32]), None).unwrap();
        PendingApprovals::with_keys(&keys, store.clone(), Duration::from_secs(1)).unwrap()
    }

    #[test]
    fn a_state_is_redeemed_once_by_its_caller_for_its_call_until_it_lapses() {
        let store = Arc::new(MemoryApprovalStore::default());
        let approvals = approvals(7, &store);
        let (alice, bob) = (Caller::named("alice").unwrap(), Caller::named("bob").unwrap());
        let ask = || {
            approvals
                .ask(&asked(&alice))
                .and_then(|question| question.request_state)
                .unwrap()
        };
        let yes = answer("accept", json!({"approve": true}));
        let state = ask();
        let open = |caller: &Caller, tool: &str, fingerprint: &str, responses: &InputResponses| {
            approvals.open(caller, tool, fingerprint, &state, Some(responses))
        };
        assert!(
            matches!(open(&bob, "write_file", "ab", &yes), Redeemed::Unverified(_)),
            "another caller"
        );
        assert!(
            matches!(open(&alice, "delete_path", "ab", &yes), Redeemed::Unverified(_)),
            "another tool"
        );
        assert_eq!(open(&alice, "write_file", "cd", &yes), Redeemed::OtherCall("ab".into()));
        assert!(matches!(
            self::approvals(8, &store).open(&alice, "write_file", "ab", &state, Some(&yes)),
            Redeemed::Unverified(_)
        ));
        assert!(matches!(
            open(&alice, "write_file", "ab", &answer("accept", json!({"approve": false}))),
            Redeemed::Declined(_)
        ));
        assert!(matches!(
            open(
                &alice,
                "write_file",
                "ab",
                &answer("accept", json!({"approve": "true"}))
            ),
            Redeemed::Declined(_)
        ));
        assert!(matches!(
            open(&alice, "write_file", "ab", &answer("cancel", json!({"approve": true}))),
            Redeemed::Declined(_)
        ));
        assert!(matches!(
            approvals.open(&alice, "write_file", "ab", &state, None),
            Redeemed::Unverified(_)
        ));
        assert!(matches!(
            open(
                &alice,
                "write_file",
                "ab",
                &answer("accept", json!({"approve": true, "remember": "forever"}))
            ),
            Redeemed::Unverified(_)
        ));
        assert!(matches!(
            open(&alice, "write_file", "ab", &answer("accept", json!({"approve": true, "remember": "hour"}))),
            Redeemed::Approved { grant, .. } if grant == Duration::from_secs(3600)
        ));
        let late = ask();
        std::thread::sleep(Duration::from_millis(2100));
        assert_eq!(
            approvals.open(&alice, "write_file", "ab", &late, Some(&yes)),
            Redeemed::Lapsed
        );
    }

    #[tokio::test]
    async fn a_redeemed_state_is_spent_for_every_replica_sharing_the_store_and_a_grant_is_kept() {
        let store = Arc::new(MemoryApprovalStore::default());
        let (one, two) = (approvals(7, &store), approvals(7, &store));
        let alice = Caller::named("alice").unwrap();
        let state = one.ask(&asked(&alice)).unwrap().request_state.unwrap();
        let hour = answer("accept", json!({"approve": true, "remember": "hour"}));
        let (token, grant) = one.redeem(&alice, "write_file", "ab", &state, Some(&hour)).await;
        assert!(!token.is_refusal());
        assert_eq!(token.fingerprint(), "ab");
        one.keep(grant.expect("the hour the person chose")).await;
        let (again, none) = two.redeem(&alice, "write_file", "ab", &state, Some(&hour)).await;
        assert!(again.is_refusal() && none.is_none(), "replayed to another replica");
        // A "no" is final: the same state answered yes afterwards runs nothing.
        let state = one.ask(&asked(&alice)).unwrap().request_state.unwrap();
        let no = answer("decline", json!({}));
        assert!(
            one.redeem(&alice, "write_file", "ab", &state, Some(&no))
                .await
                .0
                .is_refusal()
        );
        assert!(
            two.redeem(&alice, "write_file", "ab", &state, Some(&hour))
                .await
                .0
                .is_refusal()
        );
        let grants = store.grants(Some(&alice), now_ms()).unwrap();
        assert_eq!(grants.len(), 1, "one grant, from the first redemption only");
        assert_eq!(
            (grants[0].tool.as_str(), grants[0].arguments.is_none()),
            ("write_file", true)
        );
        assert!(grants[0].expires_at_ms > now_ms() + 3_500_000);
    }
}
