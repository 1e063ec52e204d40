//! [`Server`]: an author's catalog served over MCP, with kyro's boundary in front of every
//! call (validation, authorization, approvals, receipts).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use kyro_core::receipt::JsonlReceiptLog;
use kyro_core::{Observer, Policy, Registry, RegistryError, Runtime, ToolDefinition, ToolEntry, Workspace};

use crate::mcp::{HttpAuth, HttpAuthFlags, KyroServer, TextMode};
use crate::selection::{CatalogFlags, Selection};

/// Why a server could not start or stopped serving.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The catalogs do not register together (a shared name, a schema that does not
    /// compile).
    #[error("the catalog does not register: {0}")]
    Catalog(#[from] RegistryError),
    /// The workspace directory cannot be opened.
    #[error("workspace `{path}`: {message}")]
    Workspace {
        /// The directory.
        path: String,
        /// The system's message.
        message: String,
    },
    /// The policy cannot be read or applied.
    #[error("policy: {0}")]
    Policy(String),
    /// Streamable HTTP is served on loopback addresses only.
    #[error("--http serves on loopback only (127.0.0.1 or [::1]); `{0}` is not")]
    NotLoopback(SocketAddr),
    /// The transport failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The MCP session failed.
    #[error("mcp: {0}")]
    Mcp(String),
    /// The catalog selection names a toolset or tool the catalogs do not have.
    #[error("{0}")]
    Selection(#[from] crate::selection::SelectionError),
}

/// Reads a policy file (TOML; every key optional, see the README).
pub fn load_policy(path: &std::path::Path) -> Result<Policy, ServeError> {
    let text = std::fs::read_to_string(path).map_err(|e| ServeError::Policy(format!("`{}`: {e}", path.display())))?;
    toml::from_str(&text).map_err(|e| ServeError::Policy(format!("`{}`: {e}", path.display())))
}

/// An MCP server for a catalog of tools.
///
/// ```no_run
/// # kyro::catalog! { pub const TOOLS = []; }
/// // Serve on stdio, or Streamable HTTP with `--http 127.0.0.1:PORT`; `--workspace DIR`
/// // and `--policy FILE` as for `kyro mcp`.
/// fn main() -> std::process::ExitCode {
///     kyro::Server::new(TOOLS).run()
/// }
/// ```
pub struct Server {
    catalogs: Vec<&'static [ToolEntry]>,
    workspace: Option<PathBuf>,
    policy: Option<Policy>,
    observers: Vec<Arc<dyn Observer>>,
    http_auth: Option<HttpAuth>,
    catalog_flags: CatalogFlags,
    text: TextMode,
}

impl Server {
    /// A server for `tools` (a [`catalog!`](crate::catalog)), in the current directory,
    /// under the default policy (reads run; writes, exec and network ask).
    pub fn new(tools: &'static [ToolEntry]) -> Server {
        Server {
            catalogs: vec![tools],
            workspace: None,
            policy: None,
            observers: Vec::new(),
            http_auth: None,
            catalog_flags: CatalogFlags::default(),
            text: TextMode::default(),
        }
    }

    /// Adds another catalog (a built-in family, another crate's tools); a name shared
    /// with a tool already served is refused when the server starts.
    pub fn catalog(mut self, more: &'static [ToolEntry]) -> Server {
        self.catalogs.push(more);
        self
    }

    /// The workspace root: where paths resolve, where `.kyro/` keeps receipts and state.
    pub fn workspace(mut self, dir: impl Into<PathBuf>) -> Server {
        self.workspace = Some(dir.into());
        self
    }

    /// The policy: capabilities, roots, approvals, limits.
    pub fn policy(mut self, policy: Policy) -> Server {
        self.policy = Some(policy);
        self
    }

    /// An observer of every call (audit, plugins, learning): it receives the receipt and
    /// the canonical snapshot the policy saw, after the call.
    pub fn observer(mut self, observer: Arc<dyn Observer>) -> Server {
        self.observers.push(observer);
        self
    }

    /// The call runtime this server would serve: the registry of every catalog, the
    /// workspace, the policy, the receipt log in `.kyro/receipts.jsonl` and the observers.
    pub fn runtime(&self) -> Result<Runtime, ServeError> {
        self.runtime_with_log(false)
    }

    /// [`Server::runtime`], its receipt log [batched](JsonlReceiptLog::batched) when served
    /// over stdio (flushed before each write of answers).
    fn runtime_with_log(&self, batched: bool) -> Result<Runtime, ServeError> {
        let registry = Registry::default();
        for catalog in &self.catalogs {
            for entry in *catalog {
                registry.register(ToolDefinition::builtin(entry)?)?;
            }
        }
        let root = self.workspace.clone().unwrap_or_else(|| PathBuf::from("."));
        let workspace = Workspace::new(&root).map_err(|e| ServeError::Workspace {
            path: root.display().to_string(),
            message: e.to_string(),
        })?;
        let log = JsonlReceiptLog::in_workspace(workspace.root());
        let log = Arc::new(if batched { log.batched() } else { log });
        let policy = self.policy.clone().unwrap_or_default();
        let mut runtime = Runtime::new(Arc::new(registry), workspace, &policy)
            .map_err(|e| ServeError::Policy(e.to_string()))?
            .with_observer(log);
        for observer in &self.observers {
            runtime = runtime.with_observer(observer.clone());
        }
        Ok(runtime)
    }

    /// Serves MCP on stdin/stdout until the client closes the stream.
    pub async fn serve_stdio(self) -> Result<(), ServeError> {
        self.mcp_server(true)?.serve_stdio().await
    }

    /// The MCP server over [`Server::runtime`], serving and listing what the policy's
    /// `[catalog]` and the command line's selection flags choose (every toolset by default).
    fn mcp_server(&self, stdio: bool) -> Result<KyroServer, ServeError> {
        let runtime = self.runtime_with_log(stdio)?;
        let policy = self.policy.clone().unwrap_or_default();
        let chosen = self.catalog_flags.over(&policy.catalog);
        let selection = Selection::resolve(&chosen, &runtime, None)?;
        Ok(KyroServer::new(runtime)
            .with_selection(selection)
            .with_text(self.text)
            .search_only(self.catalog_flags.catalog == crate::selection::CatalogMode::Search))
    }

    /// How HTTP clients authenticate: by default a bearer token from `KYRO_HTTP_TOKEN`, or
    /// one kyro makes and prints on stderr; [`HttpAuth::None`] for none (loopback only).
    pub fn http_auth(mut self, auth: HttpAuth) -> Server {
        self.http_auth = Some(auth);
        self
    }

    /// Serves MCP Streamable HTTP at `http://ADDR/mcp` (loopback addresses only), every
    /// request carrying the bearer token (see [`Server::http_auth`]).
    pub async fn serve_http(mut self, addr: SocketAddr) -> Result<(), ServeError> {
        let auth = match self.http_auth.take() {
            Some(auth) => auth,
            None => HttpAuth::from_env_or_new()?,
        };
        self.mcp_server(false)?.serve_http(addr, auth).await
    }

    /// The whole `main` of a tool server: reads `--workspace DIR`, `--policy FILE` and
    /// `--http ADDR` from the command line (as `kyro mcp` does), builds the async runtime
    /// and serves until the client goes; errors are printed and exit non-zero.
    pub fn run(mut self) -> ExitCode {
        let args = match Args::parse(std::env::args().skip(1)) {
            Ok(args) => args,
            Err(message) => {
                eprintln!("{message}");
                return ExitCode::from(2);
            }
        };
        if let Some(dir) = args.workspace {
            self.workspace = Some(dir);
        }
        self.catalog_flags = args.catalog;
        self.text = args.text;
        if args.http.is_some() {
            match args.auth.resolve() {
                Ok(auth) => self.http_auth = Some(auth),
                Err(e) => {
                    eprintln!("--token-file: {e}");
                    return ExitCode::from(2);
                }
            }
        }
        if let Some(file) = args.policy {
            match load_policy(&file) {
                Ok(policy) => self.policy = Some(policy),
                Err(e) => {
                    eprintln!("{e}");
                    return ExitCode::from(2);
                }
            }
        }
        let executor = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
            Ok(executor) => executor,
            Err(e) => {
                eprintln!("cannot start the async runtime: {e}");
                return ExitCode::FAILURE;
            }
        };
        let served = match args.http {
            Some(addr) => executor.block_on(self.serve_http(addr)),
            None => executor.block_on(self.serve_stdio()),
        };
        match served {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("{e}");
                ExitCode::FAILURE
            }
        }
    }
}

/// The flags [`Server::run`] takes.
#[derive(Debug, clap::Parser)]
#[command(about = "An MCP tool server built with kyro")]
struct Args {
    /// The workspace root; default the current directory.
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// A policy file (TOML); default: reads allowed, writes, exec and network need approval.
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// Serve Streamable HTTP on this loopback address (`127.0.0.1:PORT`) instead of stdio.
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    #[command(flatten)]
    auth: HttpAuthFlags,
    #[command(flatten)]
    catalog: CatalogFlags,
    /// The text block of a result: `readable` (the tool's rendering) or `json`.
    #[arg(long, value_enum, value_name = "MODE", default_value = "readable")]
    text: TextMode,
}

impl Args {
    fn parse(args: impl Iterator<Item = String>) -> Result<Args, String> {
        use clap::Parser;
        let program = std::env::args().next().unwrap_or_else(|| "server".into());
        Args::try_parse_from(std::iter::once(program).chain(args)).map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use kyro_core::receipt::CanonicalCall;
    use kyro_core::{Call, Observer, Outcome, Receipt};
    use serde_json::json;

    use super::{ServeError, Server};

    #[derive(Default)]
    struct Recorder(Mutex<Vec<(Receipt, Option<CanonicalCall>, Outcome)>>);

    impl Observer for Recorder {
        fn observe(&self, receipt: &Receipt, call: Option<&CanonicalCall>, outcome: &Outcome) {
            self.0
                .lock()
                .unwrap()
                .push((receipt.clone(), call.cloned(), outcome.clone()));
        }
    }

    #[test]
    fn observers_get_every_receipt_the_canonical_call_and_the_outcome() {
        let ws = tempfile::tempdir().unwrap();
        let recorder = Arc::new(Recorder::default());
        let runtime = Server::new(kyro_tools::catalogs::UTILITIES)
            .catalog(kyro_tools::catalogs::FILES)
            .workspace(ws.path())
            .observer(recorder.clone())
            .runtime()
            .unwrap();
        let executor = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let outcome = executor.block_on(runtime.execute_call(Call::new("calculate", json!({"expression": "6*7"}))));
        assert!(matches!(outcome, Outcome::Ok { .. }), "{outcome:?}");
        executor.block_on(runtime.execute_call(Call::new("list_directory", json!({}))));
        executor.block_on(runtime.execute_call(Call::new("read_file", json!({"path": "missing.txt"}))));
        let seen = recorder.0.lock().unwrap();
        assert_eq!(seen.len(), 3);
        assert_eq!(seen[0].0.tool, "calculate");
        let canonical = seen[0].1.as_ref().unwrap();
        assert_eq!(Some(canonical.fingerprint.clone()), seen[0].0.fingerprint);
        assert!(canonical.canonical.contains("\"expression\":\"6*7\""));
        assert_eq!(seen[0].2, outcome, "the observer sees the result itself");
        match &seen[2].2 {
            Outcome::ExecutionFailed { error, .. } => assert_eq!(error.kind(), "not_found"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn catalogs_sharing_a_name_are_refused_at_start() {
        let ws = tempfile::tempdir().unwrap();
        let refused = Server::new(kyro_tools::catalogs::FILES)
            .catalog(kyro_tools::BUILTINS)
            .workspace(ws.path())
            .runtime();
        assert!(matches!(refused, Err(ServeError::Catalog(_))));
    }
}
