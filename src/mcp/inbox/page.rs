//! The inbox's HTML: whole pages (no script, nothing loaded from elsewhere, never framed
//! or cached), the card of one call, the sign-in form; every value escaped.

use std::fmt::Write as _;

use axum::http::StatusCode;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};
use kyro_core::Caller;
use kyro_core::grants::now_ms;
use kyro_core::review::Review;

/// What the page's forms may do, and that nothing loads from anywhere.
const CSP: &str =
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
/// Who is signed in, and the form that signs them out.
pub(super) fn signed_in(approver: &Caller, csrf: &str) -> String {
    format!(
        "<form class=\"who\" method=\"post\" action=\"/approvals/sign-out\">Signed in as <b>{}</b> \
         <input type=\"hidden\" name=\"csrf\" value=\"{}\"><button>Sign out</button></form>",
        escape(approver.name()),
        escape(csrf)
    )
}

/// One call: who, what, how long ago, its summary, and the forms that decide it.
pub(super) fn card(review: &Review, approver: &Caller, csrf: &str) -> String {
    let now = now_ms();
    let id = escape(&review.id);
    let mut html = String::new();
    let _ = write!(
        html,
        "<section aria-labelledby=\"h-{id}\"><h2 id=\"h-{id}\"><code>{}</code> by {}</h2>\
         <p class=\"meta\">Asked {} min ago; {}; approval <code>{id}</code></p><pre>{}</pre>",
        escape(&review.tool),
        escape(review.caller.name()),
        now.saturating_sub(review.created_at_ms) / 60_000,
        match review.state_at(now) {
            kyro_core::review::ReviewState::Pending => format!(
                "denied unless decided within {} h",
                review.expires_at_ms.saturating_sub(now).div_ceil(3_600_000)
            ),
            state => state.as_str().to_owned(),
        },
        escape(&review.summary),
    );
    let pending = review.state_at(now) == kyro_core::review::ReviewState::Pending;
    if pending && &review.caller == approver && !review.self_review {
        html.push_str("<p>You made this call: another approver decides it.</p>");
    } else if pending {
        let verbs: &[(&str, &str)] = if review.cut() {
            html.push_str("<p>This call is too large to be shown whole: it can only be denied.</p>");
            &[("deny", "Deny")]
        } else {
            &[("approve", "Approve"), ("deny", "Deny")]
        };
        for &(verb, label) in verbs {
            let _ = write!(
                html,
                "<form method=\"post\" action=\"/approvals/{id}/{verb}\">\
                 <input type=\"hidden\" name=\"csrf\" value=\"{}\">\
                 <label>Reason <input name=\"reason\" maxlength=\"500\" autocomplete=\"off\"></label> \
                 <button class=\"{verb}\">{label}</button></form>",
                escape(csrf)
            );
        }
    }
    html.push_str("</section>");
    html
}

/// The sign-in form, with the problem of the last attempt; and the way through the issuer
/// when the inbox has one.
pub(super) fn sign_in(problem: Option<&str>, through_issuer: bool) -> String {
    let problem = problem
        .map(|p| format!("<p role=\"alert\">{}</p>", escape(p)))
        .unwrap_or_default();
    let issuer = if through_issuer {
        "<p><a href=\"/approvals/oauth/start\">Sign in through your identity provider</a></p>"
    } else {
        ""
    };
    format!(
        "{problem}{issuer}<form method=\"post\" action=\"/approvals/sign-in\">\
         <label>Approver's token <input type=\"password\" name=\"token\" autocomplete=\"off\" required autofocus></label> \
         <button>Sign in</button></form>"
    )
}

/// A whole page: no script, nothing loaded from elsewhere, never framed or cached.
pub(crate) fn page(status: StatusCode, title: &str, body: &str) -> Response {
    let html = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{} · kyro approvals</title><style>{STYLE}</style></head>\
         <body><h1>{}</h1>{body}</body></html>",
        escape(title),
        escape(title)
    );
    (
        status,
        [
            (CONTENT_TYPE, "text/html; charset=utf-8"),
            (CACHE_CONTROL, "no-store"),
            (axum::http::header::CONTENT_SECURITY_POLICY, CSP),
            (axum::http::header::X_FRAME_OPTIONS, "DENY"),
            // Not `no-referrer`: a browser then sends `Origin: null` with the page's own
            // posts, which could not be told from another origin's.
            (axum::http::header::REFERRER_POLICY, "same-origin"),
            (axum::http::header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        html,
    )
        .into_response()
}

const STYLE: &str = "body{font:16px/1.4 system-ui,sans-serif;max-width:60rem;margin:1rem auto;padding:0 1rem}\
pre{white-space:pre-wrap;background:#f4f4f4;padding:.5rem;overflow-x:auto}\
section{border-top:1px solid #ccc;padding:.5rem 0}form{display:inline-block;margin:.25rem .5rem .25rem 0}\
.who{display:block}.meta{color:#555}button.approve{font-weight:bold}\
button:focus,input:focus{outline:3px solid #1a73e8}";

/// `text` for HTML text and attribute values.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn escaping_leaves_no_markup() {
        let hostile = "<script>alert(1)</script>\"' onmouseover=x &amp;";
        let escaped = super::escape(hostile);
        assert!(!escaped.contains(['<', '>', '"', '\'']), "{escaped}");
        assert_eq!(
            escaped,
            "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39; onmouseover=x &amp;amp;"
        );
    }
}
