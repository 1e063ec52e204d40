//! The command line of a server, as clap parses it: [`SessionArgs`] (where calls run) and
//! [`ServeArgs`] (how they are served), shared by `kyro mcp`, `kyro call` and every
//! author's [`Server::run`](crate::Server::run).

#[cfg(feature = "http")]
use std::net::SocketAddr;
use std::path::PathBuf;

#[cfg(feature = "http")]
use crate::mcp::HttpAuthFlags;
use crate::mcp::TextMode;
use crate::selection::CatalogFlags;
#[cfg(feature = "upstream")]
use crate::upstream::UpstreamSpec;

/// Where calls run, as the command line says it (`kyro call`, `kyro mcp`, [`Server::run`](crate::Server::run)).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SessionArgs {
    /// The workspace root; default the current directory.
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// A policy file (TOML); default: reads allowed, writes, exec and network need approval.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Keep grants, spent approvals and receipts in PostgreSQL (`postgres://USER@HOST/DB`),
    /// shared by every kyro serving it, instead of the workspace's `.kyro/`. Give a URL
    /// holding a password in KYRO_STATE rather than on the command line.
    #[cfg(feature = "postgres")]
    #[arg(long, value_name = "URL", env = "KYRO_STATE", hide_env_values = true)]
    pub state: Option<String>,
    /// Run another MCP server and serve its tools as `NAME.tool` (repeatable).
    #[cfg(feature = "upstream")]
    #[arg(long, value_name = "NAME='CMD ARGS'")]
    pub upstream: Vec<UpstreamSpec>,
}

/// The flags of a server (`kyro mcp`, [`Server::run`](crate::Server::run)).
#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub session: SessionArgs,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub catalog: CatalogFlags,
    /// The text block of a result: `readable` (the tool's rendering) or `json`.
    #[arg(long, value_enum, value_name = "MODE", default_value = "readable")]
    pub text: TextMode,
    /// Serve Streamable HTTP on this address instead of stdio: loopback
    /// (`127.0.0.1:PORT`), or any other with authentication and `--allow-host`.
    #[cfg(feature = "http")]
    #[arg(long, value_name = "ADDR")]
    pub http: Option<SocketAddr>,
    #[cfg(feature = "http")]
    #[command(flatten)]
    #[allow(missing_docs)]
    pub auth: HttpAuthFlags,
}
