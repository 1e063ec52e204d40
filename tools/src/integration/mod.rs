//! Integration: HTTP to other hosts, guarded against SSRF by the policy's network rules;
//! calls to upstream MCP servers' tools.

#[cfg(feature = "web")]
pub(crate) mod guard;
#[cfg(feature = "web")]
mod http_request;
mod mcp_call;
#[cfg(feature = "web")]
pub(crate) mod untrusted;
#[cfg(feature = "web")]
mod web_fetch;

#[cfg(feature = "browser")]
pub(crate) use guard::check_with as check_url;
#[cfg(feature = "browser")]
pub(crate) use guard::connect_checked;
#[cfg(feature = "browser")]
pub(crate) use guard::name_refusal;
#[cfg(feature = "web")]
pub use http_request::{Header, HttpMethod, HttpRequest, HttpResponse};
pub use mcp_call::{McpCall, McpCallResult, UPSTREAM_CATEGORY};
#[cfg(feature = "web")]
pub use web_fetch::{Fetched, WebFetch};
