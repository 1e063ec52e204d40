//! [`Server`]: the one way a catalog is served over MCP, with kyro's boundary in front of
//! every call (validation, authorization, approvals, receipts). An author's server and the
//! `kyro` binary's `mcp` and `call` are all assembled here, so what one does the others do.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use kyro_core::grants::{ApprovalStore, MemoryApprovalStore};
use kyro_core::receipt::JsonlReceiptLog;
use kyro_core::{Observer, Policy, Registry, RegistryError, Runtime, ToolEntry, Workspace};

use crate::args::{ServeArgs, SessionArgs};
use crate::config::{ServerSettings, Transport, load_policy};
use crate::mcp::{KyroServer, PendingApprovals, TextMode};
use crate::selection::{CatalogFlags, CatalogMode, Selection};
#[cfg(feature = "upstream")]
use crate::upstream::{self, Upstream, UpstreamSpec};

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
    /// A non-loopback address is served only with authentication and the host names
    /// clients reach it by.
    #[error(
        "--http `{0}` is not a loopback address: serving it needs authentication (a token, or --issuer) and the host names clients use (--allow-host NAME)"
    )]
    NotLoopback(SocketAddr),
    /// The HTTP bearer token cannot be read or is not one.
    #[error("{0}")]
    HttpToken(String),
    /// The OAuth resource server's flags are not usable.
    #[error("OAuth: {0}")]
    OAuth(String),
    /// The state store (`--state`) cannot be used.
    #[error("--state: {0}")]
    State(String),
    /// `KYRO_STATE_KEY` cannot seal approval states.
    #[error("{0}")]
    StateKey(String),
    /// An upstream server could not be started or did not answer.
    #[error("{0}")]
    Upstream(String),
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

impl ServeError {
    /// Whether the command line or a file it named is at fault (exit code 2, as for
    /// clap's own usage errors) rather than the machine or a peer (1).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            ServeError::Workspace { .. }
                | ServeError::Policy(_)
                | ServeError::NotLoopback(_)
                | ServeError::OAuth(_)
                | ServeError::Selection(_)
        )
    }
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
    entries: Vec<ToolEntry>,
    prepared: Option<&'static str>,
    set_aside: Vec<&'static str>,
    #[cfg(feature = "upstream")]
    upstreams: Vec<UpstreamSpec>,
    workspace: Option<PathBuf>,
    policy: Option<Policy>,
    settings: ServerSettings,
    observers: Vec<Arc<dyn Observer>>,
    approval_store: Option<Arc<dyn ApprovalStore>>,
    /// Receipts kept elsewhere than the workspace's `.kyro/receipts.jsonl`.
    receipt_log: Option<Arc<dyn Observer>>,
    /// The PostgreSQL state the tools keep memory, graph and tasks in (`--state`).
    #[cfg(feature = "postgres")]
    shared_state: Option<kyro_tools::state::PgState>,
    approval_hint: Option<String>,
    /// Where the start-up line on unusable tools says their whole list is ([`unusable`]).
    listing_hint: Option<&'static str>,
    #[cfg(feature = "http")]
    http: Option<SocketAddr>,
    #[cfg(feature = "http")]
    http_access: http::HttpAccess,
    catalog_flags: CatalogFlags,
    default_toolsets: Option<&'static [&'static str]>,
    text: TextMode,
    identity: Identity,
}

/// A runtime ready for calls, with the upstream servers whose tools it serves (they stop
/// when this is dropped).
pub struct Started {
    /// The call runtime.
    pub runtime: Runtime,
    /// Posts the review queue's notices (`[approvals.notify]`) until dropped.
    _notices: Option<notify::Posting>,
    #[cfg(feature = "upstream")]
    _upstreams: Vec<Upstream>,
}

impl Server {
    /// A server for `tools` (a [`catalog!`](crate::catalog)), in the current directory,
    /// under the default policy (reads run; writes, exec and network ask).
    pub fn new(tools: &[ToolEntry]) -> Server {
        Server {
            entries: tools.to_vec(),
            prepared: None,
            set_aside: Vec::new(),
            #[cfg(feature = "upstream")]
            upstreams: Vec::new(),
            workspace: None,
            policy: None,
            settings: ServerSettings::default(),
            observers: Vec::new(),
            approval_store: None,
            receipt_log: None,
            #[cfg(feature = "postgres")]
            shared_state: None,
            approval_hint: None,
            listing_hint: None,
            #[cfg(feature = "http")]
            http: None,
            #[cfg(feature = "http")]
            http_access: http::HttpAccess::default(),
            catalog_flags: CatalogFlags::default(),
            default_toolsets: None,
            text: TextMode::default(),
            identity: Identity::of_catalog(tools),
        }
    }

    /// Adds another catalog (a built-in family, another crate's tools); a name shared
    /// with a tool already served is refused when the server starts.
    pub fn catalog(mut self, more: &[ToolEntry]) -> Server {
        self.entries.extend_from_slice(more);
        self
    }

    /// The tools' schemas as [`Registry::prepared_schemas`] wrote them at build time for
    /// these entries (the server generates none of them; an entry not named, its own).
    pub fn prepared_schemas(mut self, prepared: &'static str) -> Server {
        self.prepared = Some(prepared);
        self
    }

    /// Names (and aliases) of tools the policy may speak of that this machine does not serve
    /// (a browser tool without Chromium): their `[approvals.tools]` rules are set aside.
    pub fn set_aside(mut self, names: impl IntoIterator<Item = &'static str>) -> Server {
        self.set_aside.extend(names);
        self
    }

    /// Another MCP server to start under the sandbox and serve the tools of as
    /// `NAME.tool` (`--upstream`).
    #[cfg(feature = "upstream")]
    pub fn upstream(mut self, spec: UpstreamSpec) -> Server {
        self.upstreams.push(spec);
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

    /// The transport's bounds: requests in flight per session, HTTP sessions at once
    /// (a policy file's `[limits] max_in_flight` and `max_sessions`).
    pub fn transport(mut self, transport: Transport) -> Server {
        self.settings.transport = transport;
        self
    }

    /// An observer of every call (audit, plugins, learning): it receives the receipt and
    /// the canonical snapshot the policy saw, after the call.
    pub fn observer(mut self, observer: Arc<dyn Observer>) -> Server {
        self.observers.push(observer);
        self
    }

    /// Where grants and spent one-time approvals are kept (by default the workspace's
    /// `.kyro/state.db` with the `state` feature, else this process's memory).
    pub fn approval_store(mut self, store: Arc<dyn ApprovalStore>) -> Server {
        self.approval_store = Some(store);
        self
    }

    /// Where receipts go instead of the workspace's `.kyro/receipts.jsonl`: an observer
    /// that must see every call (its [`Observer::ready`] gates calls).
    pub fn receipt_log(mut self, log: Arc<dyn Observer>) -> Server {
        self.receipt_log = Some(log);
        self
    }

    /// Keeps grants, spent approvals, receipts and the tools' memory, graph and task list
    /// in the PostgreSQL database at `url` (`--state`), shared by every kyro serving it:
    /// replicas behind one proxy resume each other's approvals, honour each other's
    /// grants, write one receipt chain and see the same notes.
    #[cfg(feature = "postgres")]
    pub fn state(mut self, url: &str) -> Result<Server, ServeError> {
        let state = kyro_tools::state::PgState::new(url).map_err(ServeError::State)?;
        self.shared_state = Some(state.clone());
        Ok(self
            .approval_store(Arc::new(state.clone()))
            .receipt_log(Arc::new(state.receipts())))
    }

    /// What is served and listed, as the selection flags say (over the policy's
    /// `[catalog]`).
    pub fn select(mut self, flags: CatalogFlags) -> Server {
        self.catalog_flags = flags;
        self
    }

    /// The toolsets listed when neither the flags nor the policy choose (every toolset
    /// when not set).
    pub fn default_toolsets(mut self, toolsets: &'static [&'static str]) -> Server {
        self.default_toolsets = Some(toolsets);
        self
    }

    /// What an `approval_required` answer adds, after kyro's own words, to tell a person
    /// how your product approves a call (`{tool}` and `{fingerprint}` are filled in).
    /// `kyro mcp` names `kyro grants add`; an author's server says nothing more by default.
    pub fn approval_hint(mut self, hint: impl Into<String>) -> Server {
        self.approval_hint = Some(hint.into());
        self
    }

    /// What the text block of a successful call holds.
    pub fn text(mut self, text: TextMode) -> Server {
        self.text = text;
        self
    }

    /// Where calls run, from the command line: the workspace, the policy file (read now;
    /// its policy and server settings replace those set in code), the upstream servers.
    pub fn session(mut self, args: &SessionArgs) -> Result<Server, ServeError> {
        if let Some(dir) = &args.workspace {
            self.workspace = Some(dir.clone());
        }
        if let Some(file) = &args.policy {
            let (policy, settings) = load_policy(file)?;
            self.policy = Some(policy);
            self.settings = settings;
        }
        #[cfg(feature = "upstream")]
        self.upstreams.extend(args.upstream.iter().cloned());
        #[cfg(feature = "postgres")]
        if let Some(url) = &args.state {
            self = self.state(url)?;
        }
        Ok(self)
    }

    /// Everything the command line says: [`Server::session`], the selection, the text
    /// mode, and `--http` with its authentication and allowed origins.
    pub fn args(self, args: ServeArgs) -> Result<Server, ServeError> {
        let server = self.session(&args.session)?.select(args.catalog).text(args.text);
        #[cfg(feature = "http")]
        let server = server.http_args(args.http, &args.auth)?;
        Ok(server)
    }

    /// The call runtime this server would serve: the registry of every catalog, the
    /// workspace, the policy, the receipt log in `.kyro/receipts.jsonl` and the observers
    /// (no upstream servers: [`Server::start`] connects them).
    pub fn runtime(&self) -> Result<Runtime, ServeError> {
        let runtime = self.bare_runtime(false)?;
        runtime
            .check_tool_rules()
            .map_err(|e| ServeError::Policy(e.to_string()))?;
        Ok(runtime)
    }

    /// The runtime with its upstream servers connected and their tools registered; says on
    /// stderr when programs will not run under the OS sandbox.
    pub async fn start(&self) -> Result<Started, ServeError> {
        let started = self.started(false).await?;
        unusable::say_unusable(&self.identity.name, &started.runtime, &|_| true, self.listing_hint);
        Ok(started)
    }

    /// [`Server::start`] for serving: a `batched` receipt log (flushed before each write
    /// of answers) over stdio, and the sandbox probed in the background so that the first
    /// request is not kept waiting.
    async fn started(&self, serving_stdio: bool) -> Result<Started, ServeError> {
        let runtime = self.bare_runtime(serving_stdio)?;
        unusable::say_left_out(&self.identity.name, &self.entries);
        // A store that cannot be reached refuses the server now, not each call.
        #[cfg(feature = "postgres")]
        if let Some(state) = &self.shared_state {
            state.reach().await.map_err(ServeError::State)?;
            if let Some(warning) = state.tls_warning() {
                kyro_core::log::warn(&format!("--state: {warning}"));
            }
        }
        // Said where programs may run: a tool that runs them, or an upstream server (an
        // author's catalog without either has nothing to say it about).
        let runs_programs = self.has_upstreams()
            || runtime
                .registry()
                .snapshot()
                .descriptors()
                .any(|d| d.effect == kyro_core::Effect::Exec);
        if runs_programs {
            unusable::say_sandbox(&runtime, serving_stdio || self.serves_http());
        }
        #[cfg(feature = "upstream")]
        let mut upstreams = Vec::new();
        #[cfg(feature = "upstream")]
        for spec in &self.upstreams {
            let own = self.settings.upstreams.get(&spec.name);
            let up = upstream::connect(spec, runtime.registry(), runtime.scope(), own)
                .await
                .map_err(ServeError::Upstream)?;
            kyro_core::log::info(&format!(
                "upstream `{}` runs under the sandbox: {}",
                up.name, up.sandbox
            ));
            for (tool, reason) in &up.refused {
                kyro_core::log::warn(&format!("upstream `{}`: `{tool}` not registered: {reason}", up.name));
            }
            upstreams.push(up);
        }
        // Every `[approvals.tools]` key names a served tool, the upstreams' `NAME.tool` too.
        runtime
            .check_tool_rules()
            .map_err(|e| ServeError::Policy(e.to_string()))?;
        let notices = notify::start(&runtime, self.settings.notify.as_ref()).map_err(ServeError::Policy)?;
        Ok(Started {
            _notices: notices,
            runtime,
            #[cfg(feature = "upstream")]
            _upstreams: upstreams,
        })
    }

    fn has_upstreams(&self) -> bool {
        #[cfg(feature = "upstream")]
        return !self.upstreams.is_empty();
        #[cfg(not(feature = "upstream"))]
        false
    }

    fn serves_http(&self) -> bool {
        #[cfg(feature = "http")]
        return self.http.is_some();
        #[cfg(not(feature = "http"))]
        false
    }

    fn bare_runtime(&self, batched: bool) -> Result<Runtime, ServeError> {
        let mut entries = self.entries.clone();
        if self.catalog_flags.catalog == CatalogMode::Search {
            // Search mode lists the discovery tools, which are the framework's: served
            // whatever the author's catalog holds.
            let missing: Vec<ToolEntry> = kyro_core::discovery::CATALOG
                .iter()
                .filter(|d| !entries.iter().any(|e| e.spec.name == d.spec.name))
                .copied()
                .collect();
            entries.extend(missing);
        }
        let registry = Registry::with_prepared_catalog(&entries, self.prepared.unwrap_or_default())?;
        if self.prepared.is_none() && cfg!(debug_assertions) {
            // Debug builds and tests refuse a schema that does not compile now; release
            // compiles nothing before its first answer (each validator at its tool's call).
            registry.compile_all()?;
        }
        let root = self.workspace.clone().unwrap_or_else(|| PathBuf::from("."));
        let workspace = Workspace::new(&root)
            .map_err(|e| e.to_string())
            .and_then(|w| tracked::refuse_tracked_state(w.root()).map(|()| w))
            .map_err(|message| ServeError::Workspace {
                path: root.display().to_string(),
                message,
            })?;
        let workspace_root = workspace.root().to_owned();
        #[cfg(feature = "postgres")]
        if let Some(state) = &self.shared_state {
            let _ = workspace.resource(|| Ok::<_, ()>(state.clone()));
        }
        let log: Arc<dyn Observer> = match &self.receipt_log {
            Some(log) => log.clone(),
            None => {
                let log = JsonlReceiptLog::in_workspace(workspace.root());
                Arc::new(if batched { log.batched() } else { log })
            }
        };
        let mut policy = self.policy.clone().unwrap_or_default();
        for name in &self.set_aside {
            policy.approvals.tools.remove(*name);
        }
        let mut runtime = Runtime::new(Arc::new(registry), workspace, &policy)
            .map_err(|e| ServeError::Policy(e.to_string()))?
            .with_observer(log)
            .with_approval_store(match &self.approval_store {
                Some(store) => store.clone(),
                None => default_approval_store(workspace_root),
            });
        for observer in &self.observers {
            runtime = runtime.with_observer(observer.clone());
        }
        Ok(runtime)
    }

    /// The MCP server over `runtime`, serving and listing what the policy's `[catalog]`
    /// and the selection flags choose.
    fn mcp_server(&self, runtime: Runtime) -> Result<KyroServer, ServeError> {
        let mut chosen = self.catalog_flags.over(&self.settings.catalog);
        if self.has_upstreams() && chosen.toolsets.is_none() && runtime.registry().snapshot().get("mcp_call").is_some()
        {
            // The upstreams' tools are listed by default, and so is the tool that calls them.
            chosen.tools.push("mcp_call".into());
        }
        let selection = Selection::resolve(&chosen, &runtime, self.default_toolsets)?;
        let served = |d: &kyro_core::ToolDescriptor| selection.serves(d);
        unusable::say_unusable(&self.identity.name, &runtime, &served, self.listing_hint);
        let store = runtime
            .approval_store()
            .cloned()
            .unwrap_or_else(|| Arc::new(MemoryApprovalStore::default()));
        let approvals = PendingApprovals::from_env(store).map_err(ServeError::StateKey)?;
        let server = KyroServer::new(runtime)
            .with_approvals(approvals)
            .with_selection(selection)
            .with_text(self.text)
            .with_approval_hint(self.approval_hint.clone())
            .with_list_ttl_ms(if self.has_upstreams() { 0 } else { LIST_TTL_MS })
            .with_transport(self.settings.transport)
            .search_only(self.catalog_flags.catalog == CatalogMode::Search)
            .with_identity(self.identity.clone());
        #[cfg(feature = "http")]
        let server = server.with_allowed_origins(self.http_access.origins.iter().cloned());
        Ok(server)
    }

    /// Serves MCP on stdin/stdout until the client closes the stream.
    pub async fn serve_stdio(self) -> Result<(), ServeError> {
        // The upstreams stop when `started` is dropped, after serving.
        let started = self.started(true).await?;
        let Started { runtime, .. } = started;
        self.mcp_server(runtime)?.serve_stdio().await
    }

    /// Serves on stdio, or on HTTP when [`Server::args`] had `--http`, until the client
    /// goes; an error is printed on stderr and exits 2 (usage) or 1. Stdio has one client
    /// and is served on one thread (tools run on the blocking pool either way); HTTP has
    /// many and gets one thread a core.
    pub fn serve(self) -> ExitCode {
        let executor = if self.serves_http() {
            tokio::runtime::Builder::new_multi_thread().enable_all().build()
        } else {
            tokio::runtime::Builder::new_current_thread().enable_all().build()
        };
        let executor = match executor {
            Ok(executor) => executor,
            Err(e) => return failed(&ServeError::Io(e)),
        };
        #[cfg(feature = "http")]
        if let Some(addr) = self.http {
            return match executor.block_on(self.serve_http(addr)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => failed(&e),
            };
        }
        let served = executor.block_on(self.serve_stdio());
        match served {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => failed(&e),
        }
    }
}

/// Prints `e` after the program's name and gives its exit code.
pub(crate) fn failed(e: &ServeError) -> ExitCode {
    let program = std::env::args_os()
        .next()
        .map(PathBuf::from)
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "server".into());
    // Under --log-json even an error met before the flag was read is a JSON line.
    if kyro_core::log::is_json() || std::env::args().any(|a| a == "--log-json") {
        kyro_core::log::line(
            kyro_core::log::Level::Error,
            &e.to_string(),
            &[("program", program.into())],
        );
    } else {
        eprintln!("{program}: {e}");
    }
    ExitCode::from(if e.is_usage() { 2 } else { 1 })
}

/// How long a list stays fresh for a client when no upstream can change the catalog: 1 h.
const LIST_TTL_MS: u64 = 3_600_000;

/// The store of grants and spent approvals when the author set none: the workspace's
/// database in the user's state directory (`state` feature), else this process's memory.
fn default_approval_store(root: PathBuf) -> Arc<dyn ApprovalStore> {
    #[cfg(feature = "state")]
    return Arc::new(kyro_tools::state::SqliteApprovalStore::in_workspace(&root));
    #[cfg(not(feature = "state"))]
    {
        let _ = root;
        Arc::new(MemoryApprovalStore::default())
    }
}

#[cfg(feature = "http")]
mod http;
mod identity;
mod notify;
mod run;
mod tracked;
mod unusable;

pub use identity::Identity;
#[cfg(test)]
mod tests;
