//! A call waiting for an approver's review, shown to a client that can open a page for its
//! user (URL-mode elicitation): the call's inbox page. The link changes nothing: only an
//! approver's decision there lets the call run, and the client's answer to the link is
//! never an approval.
//!
//! - A 2026-07-28 client that declared `elicitation.url` gets `input_required` with the
//!   link (under `review`); its retry, with whatever its user answered, is answered as the
//!   call then stands (run once when approved, else `approval_pending` without the link
//!   again).
//! - A client of an earlier revision that declared it gets the link as an
//!   `elicitation/create` request beside the `approval_pending` answer (not waited for).

use rmcp::RoleServer;
use rmcp::model::{
    ElicitRequest, ElicitRequestParams, InputRequest, InputRequests, InputRequiredResult, InputResponses,
};
use rmcp::service::RequestContext;

use kyro_core::Outcome;

/// The key the link goes under in `inputRequests`.
const KEY: &str = "review";

/// Whether a retry brings the answer to the link (so it is not shown again).
pub(super) fn answered(responses: Option<&InputResponses>) -> bool {
    responses.is_some_and(|r| r.contains_key(KEY))
}

/// The `input_required` answer showing a 2026-07-28 client's user the inbox page of the
/// call `outcome` says waits (unless the retry answered it already); for an earlier
/// client, the link sent as a request of its own, and `None`.
pub(super) fn to_the_inbox(
    context: &RequestContext<RoleServer>,
    outcome: &Outcome,
    answered: bool,
) -> Option<InputRequiredResult> {
    let Outcome::ApprovalPending {
        tool,
        approval_id,
        inbox: Some(inbox),
        ..
    } = outcome
    else {
        return None;
    };
    let opens_urls = context
        .client_capabilities()
        .and_then(|c| c.elicitation)
        .is_some_and(|e| e.url.is_some());
    if !opens_urls || answered {
        return None;
    }
    let message = format!(
        "`{tool}` waits for an approver's review (approval {approval_id}). An approver decides it on this page; \
         once approved, the call runs when it is made again."
    );
    let link = ElicitRequestParams::UrlElicitationParams {
        meta: None,
        message,
        url: inbox.clone(),
        elicitation_id: approval_id.clone(),
    };
    let current = context
        .protocol_version()
        .is_some_and(|v| v >= rmcp::model::ProtocolVersion::V_2026_07_28);
    if current {
        let mut requests = InputRequests::new();
        requests.insert(KEY.to_owned(), InputRequest::Elicitation(ElicitRequest::new(link)));
        return Some(InputRequiredResult::new(Some(requests), None));
    }
    // Earlier revisions: a request of the server's own, on the session, not waited for
    // (and not kept past a minute by a client that never answers it); once an approval,
    // however often the call is made again.
    if !first_link(approval_id) {
        return None;
    }
    let peer = context.peer.clone();
    tokio::spawn(async move {
        let _ = tokio::time::timeout(std::time::Duration::from_secs(60), peer.create_elicitation(link)).await;
    });
    None
}

/// Whether the link for `approval_id` is sent for the first time (remembered for the last
/// [`LINKS_KEPT`] approvals this process linked).
fn first_link(approval_id: &str) -> bool {
    static SENT: std::sync::Mutex<std::collections::VecDeque<String>> =
        std::sync::Mutex::new(std::collections::VecDeque::new());
    let mut sent = SENT.lock().unwrap_or_else(|p| p.into_inner());
    if sent.iter().any(|id| id == approval_id) {
        return false;
    }
    if sent.len() == LINKS_KEPT {
        sent.pop_front();
    }
    sent.push_back(approval_id.to_owned());
    true
}

/// Approvals whose link this process remembers sending.
const LINKS_KEPT: usize = 1024;
