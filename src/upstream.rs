//! Upstream MCP servers: `--upstream NAME='CMD ARGS'` runs another MCP server as a child
//! process, connects to it as a client (rmcp), and registers each of its tools as the
//! dynamic tool `NAME.tool`.
//!
//! An upstream tool keeps its declared input schema (brought to canonical form as a foreign
//! schema: descriptions optional, draft-07 accepted where it means the same; or refused
//! with the reason) and goes through the same boundary as a built-in: validated,
//! authorized, executed, receipted. Its effect is `exec` whatever the upstream says: the
//! upstream is a program kyro runs, and its annotations are never taken as policy.
//!
//! The catalog selection holds for upstream tools whenever they are listed again: a tool
//! that `--read-only`, `--exclude-tools` or `--toolsets` leaves out is not registered when
//! the upstream says its list changed: the registry admits only what the selection serves
//! ([`Registry::admit_only`](kyro_core::Registry::admit_only)).
//!
//! The process gets only the environment it is given ([`INHERITED`], and what its spec
//! sets or passes), runs in a session and process group of its own, and ends with kyro:
//! its group is killed when the upstream is dropped, when it fails to start and when
//! kyro exits, and the process itself gets SIGKILL if kyro dies first.

#[cfg(feature = "upstream")]
mod client;
#[cfg(feature = "upstream")]
mod spec;

#[cfg(feature = "upstream")]
pub(crate) use client::{Upstream, connect};
#[cfg(feature = "upstream")]
pub use spec::UpstreamSpec;

use kyro_core::policy::SandboxMode;

/// `[sandbox.upstreams.NAME]`: the sandbox of one upstream MCP server.
///
/// ```toml
/// [sandbox.upstreams.fetcher]
/// mode = "read-only"
/// network = true
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpstreamSandbox {
    /// What it may write.
    pub mode: SandboxMode,
    /// Whether it may open network sockets.
    #[serde(default)]
    pub network: bool,
}

/// The category an upstream server's tools are registered under (as `NAME.tool`), a
/// toolset of its own; the built-in `mcp_call` reaches tools of this category only.
pub(crate) const UPSTREAM_CATEGORY: &str = "upstream";

#[cfg(test)]
mod tests {
    #[cfg(feature = "builtins")]
    #[test]
    fn mcp_call_reaches_the_category_upstream_tools_are_registered_under() {
        assert_eq!(super::UPSTREAM_CATEGORY, kyro_tools::integration::UPSTREAM_CATEGORY);
    }
}
