//! Integration: HTTP to other hosts, guarded against SSRF by the policy's network rules;
//! calls to upstream MCP servers' tools.

mod guard;
mod http_request;
mod mcp_call;
mod web_fetch;

pub(crate) use guard::check_with as check_url;
pub(crate) use guard::connect_checked;
pub use http_request::{Header, HttpMethod, HttpRequest, HttpResponse};
pub use mcp_call::{McpCall, McpCallResult, UPSTREAM_CATEGORY};
pub use web_fetch::{Fetched, WebFetch};
