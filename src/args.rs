//! The command line of a server, as clap parses it: [`SessionArgs`] (where calls run) and
//! [`ServeArgs`] (how they are served), shared by `kyro mcp`, `kyro call` and every
//! author's [`Server::run`](crate::Server::run); [`ServeArgs`]' flags can also come from a
//! TOML file (`--config FILE`, [`config_file`]).

#[cfg(feature = "http")]
use std::net::SocketAddr;
use std::path::PathBuf;

#[cfg(feature = "http")]
use crate::mcp::HttpAuthFlags;
use crate::mcp::TextMode;
use crate::selection::CatalogFlags;
#[cfg(feature = "upstream")]
use crate::upstream::UpstreamSpec;

mod config_file;

pub(crate) use config_file::with_config_file;

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
    /// Read these flags from a TOML file whose keys are the long flags as written here
    /// (`http = "127.0.0.1:8080"`, `token-file = "/etc/kyro/tokens"`, `allow-host =
    /// ["tools.example.com"]`, `read-only = true`); a flag on the command line, or set by
    /// its environment variable, wins over the file. Relative paths in it are taken from
    /// the current directory, as on the command line. Keep secrets in the environment.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
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

/// The environment a server reads, for its `--help`; `builtins` adds the built-in tools'.
pub(crate) fn environment_help(builtins: bool) -> String {
    let mut help = String::from(
        "Environment (secrets belong here, not on the command line or in --config's file):
  KYRO_STATE_KEY         seals approval states and the approvals inbox's sessions: 32 bytes or more,
                         the same on every replica (without it each process makes its own, and an
                         approval asked of one replica cannot be answered at another)
  KYRO_HTTP_TOKEN        --http's bearer token, when there is no --token-file
  KYRO_STATE_HOME        where a workspace's grants and spent approvals are kept (default
                         $XDG_STATE_HOME/kyro or ~/.local/state/kyro; outside every workspace)
  KYRO_APPROVALS_SECRET  signs [approvals.notify]'s notices (or the variable its secret_env names)
",
    );
    if cfg!(feature = "postgres") {
        help.push_str("  KYRO_STATE             --state's URL, when it holds a password\n");
    }
    if builtins {
        help.push_str(
            "  GITHUB_TOKEN, GH_TOKEN the github tools' token
  KYRO_GITHUB_API_URL    the GitHub API the github tools call (default https://api.github.com)
  KYRO_CHROMIUM          the browser tools' Chromium (default /usr/bin/chromium)
",
        );
    }
    help
}
