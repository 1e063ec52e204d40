//! `[approvals.notify]`: the review queue's notices, posted to a team's own endpoint (a
//! chat bot, a pager). Each call that starts waiting for review, and each decision on one
//! (approved, denied, expired), is posted once as JSON, signed with HMAC-SHA256 under a
//! secret from the environment:
//!
//! ```text
//! POST <url>
//! X-Kyro-Event: approval.pending            (approval.approved, .denied, .expired)
//! X-Kyro-Delivery: <approval id>.<state>    (the same on every attempt: deduplicate by it)
//! X-Kyro-Timestamp: <unix seconds>
//! X-Kyro-Signature: sha256=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>
//! {"event": "approval.pending", "delivery": "...", "approval": {id, caller, tool, state,
//!  created_at_ms, expires_at_ms, approver?, reason?, decided_at_ms?, inbox?}}
//! ```
//!
//! A notice names the call, never its arguments or summary: the endpoint is often a
//! third party's (a chat), and an argument may be a secret. The inbox page shows them to
//! an approver who signed in.
//!
//! The notices come from the queue itself, read every second: a decision taken in the
//! inbox, on another replica or on the command line is posted too. Replicas sharing the
//! queue claim each notice in it first, so one replica posts it. A notice is tried three
//! times at most (five seconds each, then one and two seconds apart); a notice that never
//! reaches the endpoint is dropped with a line on stderr, never queued without bound.
//! Notices older than ten minutes when first seen (a server started with `notify` on an
//! old queue) are not posted. A call approved and run at once (a waiting task) is posted
//! as approved. The URL is `https`, or `http` to a loopback address.

use std::time::Duration;

use kyro_core::Runtime;

use crate::config::Notify;

/// Posts notices until dropped.
pub(crate) struct Posting(tokio::task::AbortHandle);

impl Drop for Posting {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// How often the queue is read.
#[cfg(feature = "notify")]
const TICK: Duration = Duration::from_secs(1);
/// Attempts at one notice, at most.
#[cfg(feature = "notify")]
const ATTEMPTS: u32 = 3;
/// How long one attempt may take.
#[cfg(feature = "notify")]
const TIMEOUT: Duration = Duration::from_secs(5);
/// Notices posted in one reading of the queue, at most (the rest wait for the next).
#[cfg(feature = "notify")]
const PER_TICK: usize = 32;
/// Notices older than this when first seen are not posted.
#[cfg(feature = "notify")]
const RECENT_MS: u64 = 10 * 60 * 1000;

/// Starts posting the notices `notify` asks for, when it asks; refused when its URL or
/// secret is unusable.
pub(super) fn start(runtime: &Runtime, notify: Option<&Notify>) -> Result<Option<Posting>, String> {
    let Some(notify) = notify else {
        return Ok(None);
    };
    #[cfg(not(feature = "notify"))]
    {
        let _ = (runtime, notify, Duration::ZERO);
        Err("[approvals.notify]: this server was built without the `notify` feature".into())
    }
    #[cfg(feature = "notify")]
    {
        let refused = |why: String| format!("[approvals.notify]: {why}");
        let uri = notify.url.parse::<ureq::http::Uri>().ok();
        let loopback = uri.as_ref().and_then(|u| u.host()).is_some_and(|h| {
            h == "localhost"
                || h.trim_matches(['[', ']'])
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        });
        let https = uri.as_ref().and_then(|u| u.scheme_str()) == Some("https");
        let http = uri.as_ref().and_then(|u| u.scheme_str()) == Some("http");
        if uri.is_none() || !(https || (http && loopback)) {
            return Err(refused(format!(
                "`{}` is not an https URL (http only to a loopback address)",
                notify.url
            )));
        }
        let secret = std::env::var(&notify.secret_env)
            .map_err(|_| refused(format!("set the signing secret in {}", notify.secret_env)))?;
        if secret.len() < 16 {
            return Err(refused(format!("{} must hold 16 bytes or more", notify.secret_env)));
        }
        let Some(store) = runtime.approval_store().cloned() else {
            return Err(refused("this server keeps no approval queue".into()));
        };
        let inbox = runtime.review_inbox().map(str::to_owned);
        let poster = std::sync::Arc::new(Poster {
            seen: std::sync::Mutex::default(),
            inbox,
            url: notify.url.clone(),
            secret: secret.into_bytes(),
            agent: ureq::Agent::config_builder()
                .http_status_as_error(false)
                .max_redirects(0)
                .timeout_global(Some(TIMEOUT))
                .build()
                .into(),
        });
        let task = tokio::spawn(async move {
            loop {
                let (store, poster) = (store.clone(), poster.clone());
                let _ = tokio::task::spawn_blocking(move || poster.post_new(store.as_ref())).await;
                tokio::time::sleep(TICK).await;
            }
        });
        Ok(Some(Posting(task.abort_handle())))
    }
}

#[cfg(feature = "notify")]
struct Poster {
    /// Notices this process claimed or found claimed, of reviews still in the queue: not
    /// asked of the store again.
    seen: std::sync::Mutex<std::collections::HashSet<(String, kyro_core::review::ReviewState)>>,
    /// The inbox page's address, when the server serves one.
    inbox: Option<String>,
    url: String,
    secret: Vec<u8>,
    agent: ureq::Agent,
}

#[cfg(feature = "notify")]
impl Poster {
    /// Posts the notices of the queue not posted yet (by any process sharing it).
    fn post_new(&self, store: &dyn kyro_core::grants::ApprovalStore) {
        use kyro_core::review::ReviewState;
        let now = kyro_core::grants::now_ms();
        let Ok(reviews) = store.reviews(false, now) else {
            return;
        };
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        // Forget what left the queue: the set is never larger than the queue.
        seen.retain(|(id, _)| reviews.iter().any(|r| &r.id == id));
        let due = reviews.into_iter().filter_map(|review| {
            // A call approved and run before a reading is its approval's notice.
            let (state, at) = match review.state {
                ReviewState::Pending => (ReviewState::Pending, review.created_at_ms),
                ReviewState::Approved | ReviewState::Ran => (ReviewState::Approved, review.decided_at_ms?),
                ReviewState::Denied => (ReviewState::Denied, review.decided_at_ms?),
                ReviewState::Expired => (ReviewState::Expired, review.expires_at_ms),
            };
            (now.saturating_sub(at) < RECENT_MS).then_some((state, review))
        });
        let mut tried = 0;
        for (state, review) in due {
            if tried == PER_TICK {
                break;
            }
            if !seen.insert((review.id.clone(), state)) {
                continue;
            }
            tried += 1;
            if store.claim_notice(&review.id, state, now) != Ok(true) {
                continue;
            }
            let event = format!("approval.{}", state.as_str());
            let delivery = format!("{}.{}", review.id, state.as_str());
            let inbox = self.inbox.as_ref().map(|inbox| format!("{inbox}/{}", review.id));
            let approval = serde_json::json!({
                "id": review.id, "caller": review.caller, "tool": review.tool, "state": state.as_str(),
                "created_at_ms": review.created_at_ms, "expires_at_ms": review.expires_at_ms,
                "approver": review.approver, "reason": review.reason, "decided_at_ms": review.decided_at_ms,
                "inbox": inbox,
            });
            let body = serde_json::json!({ "event": event, "delivery": delivery, "approval": approval }).to_string();
            if let Err(why) = self.deliver(&event, &delivery, &body) {
                kyro_core::log::warn(&format!(
                    "the notice {delivery} did not reach [approvals.notify]: {why}"
                ));
            }
        }
    }

    /// One notice, tried [`ATTEMPTS`] times at most while the endpoint fails (no answer,
    /// or 5xx); a 2xx ends it, any other answer too.
    fn deliver(&self, event: &str, delivery: &str, body: &str) -> Result<(), String> {
        let mut last = String::new();
        for attempt in 0..ATTEMPTS {
            if attempt > 0 {
                std::thread::sleep(Duration::from_secs(u64::from(attempt)));
            }
            let timestamp = (kyro_core::grants::now_ms() / 1000).to_string();
            let signature = format!("sha256={}", sign(&self.secret, &format!("{timestamp}.{body}")));
            let sent = self
                .agent
                .post(&self.url)
                .header("Content-Type", "application/json")
                .header("X-Kyro-Event", event)
                .header("X-Kyro-Delivery", delivery)
                .header("X-Kyro-Timestamp", &timestamp)
                .header("X-Kyro-Signature", &signature)
                .send(body);
            match sent {
                Ok(answer) if answer.status().is_server_error() => last = format!("HTTP {}", answer.status()),
                Ok(answer) if answer.status().is_success() => return Ok(()),
                Ok(answer) => return Err(format!("HTTP {}", answer.status())),
                Err(e) => last = e.to_string(),
            }
        }
        Err(last)
    }
}

/// HMAC-SHA256 of `message` under `key`, lowercase hex.
#[cfg(feature = "notify")]
fn sign(key: &[u8], message: &str) -> String {
    use hmac::{KeyInit, Mac};
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(key).expect("HMAC takes a key of any length");
    mac.update(message.as_bytes());
    mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    #[cfg(feature = "notify")]
    #[test]
    fn the_signature_is_rfc_4231s_hmac_sha256() {
        // RFC 4231, test case 2.
        assert_eq!(
            super::sign(b"Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }
}
