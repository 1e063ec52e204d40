//! Approval by `elicitation/create`: a client that declared it can ask its user is asked,
//! with the call's summary and fingerprint, whether to run it (once, or for the session).

use rmcp::Peer;
use rmcp::RoleServer;
use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema};
use serde_json::Value;

/// Whether the client declared it can be asked questions (form elicitation).
pub(super) fn asks_for_approval(peer: &Peer<RoleServer>) -> bool {
    peer.peer_info()
        .is_some_and(|info| info.capabilities.elicitation.is_some())
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
