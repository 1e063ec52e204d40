//! Integration: HTTP to other hosts, guarded against SSRF by the policy's network rules.

mod guard;
mod http_request;
mod web_fetch;

pub(crate) use guard::check_with as check_url;
pub use http_request::{Header, HttpMethod, HttpRequest, HttpResponse};
pub use web_fetch::{Fetched, WebFetch};
