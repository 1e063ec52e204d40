//! The command line: `kyro tools`, `describe`, `call` and `docs`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use std::io::IsTerminal;

use kyro_core::receipt::JsonlReceiptLog;
use kyro_core::{ApprovalToken, Call, Outcome, OutcomeKind, Policy, Registry, Runtime, ToolDescriptor, Workspace};
use serde_json::Value;

use kyro::dialects::{self as providers, Dialect};
use kyro::inventory;
use kyro::text_arguments;
use kyro::upstream::{self, UpstreamSpec};

/// Writes a line to stdout; a closed pipe (`kyro tools | head`) is not an error.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

/// Usage errors exit with 2, like clap's own.
const USAGE: u8 = 2;

/// A compile-time generated catalog of typed tools for AI agents.
#[derive(Debug, Parser)]
#[command(name = "kyro", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List the catalog.
    Tools {
        /// Print an array of descriptors as JSON.
        #[arg(long, conflicts_with = "names")]
        json: bool,
        /// Print the names only, one a line (the flat list older agents expect).
        #[arg(long)]
        names: bool,
        /// With --json: print the definitions a provider expects instead of descriptors.
        #[arg(long, value_enum, requires = "json")]
        dialect: Option<Dialect>,
    },
    /// Show one tool's descriptor.
    Describe {
        /// Tool name or alias.
        name: String,
        /// Print the descriptor as JSON.
        #[arg(long)]
        json: bool,
        /// Print the tool's definition in a provider's dialect (JSON).
        #[arg(long, value_enum)]
        dialect: Option<Dialect>,
    },
    /// Call a tool with a JSON object, or with key=value words.
    Call {
        /// Tool name or alias.
        name: String,
        /// One JSON object (`'{"path": "a.txt"}'`), or key=value words (`path=a.txt limit=5`).
        arguments: Vec<String>,
        #[command(flatten)]
        session: Session,
        /// Ask on the terminal (y/N) when the call needs approval.
        #[arg(long, conflicts_with = "approve_fingerprint")]
        approve: bool,
        /// Approve the call with this fingerprint (from an `approval_required` outcome).
        #[arg(long, value_name = "HEX")]
        approve_fingerprint: Option<String>,
        /// Take the one argument as a provider sent it: an OpenAI `arguments` string, an
        /// Anthropic `tool_use` block, a Gemini `functionCall`, or MCP `arguments`.
        #[arg(long, value_enum, value_name = "DIALECT")]
        from: Option<Dialect>,
    },
    /// Serve the catalog over MCP on stdin/stdout, or Streamable HTTP with --http.
    Mcp {
        #[command(flatten)]
        session: Session,
        #[command(flatten)]
        catalog: kyro::selection::CatalogFlags,
        /// The text block of a result: `readable` (the tool's rendering) or `json`.
        #[arg(long, value_enum, value_name = "MODE", default_value = "readable")]
        text: kyro::mcp::TextMode,
        /// Serve Streamable HTTP on this loopback address (`127.0.0.1:PORT`) instead of stdio.
        #[arg(long, value_name = "ADDR")]
        http: Option<std::net::SocketAddr>,
        #[command(flatten)]
        auth: kyro::mcp::HttpAuthFlags,
    },
    /// Print the tool inventory document, or check the committed copy.
    Docs {
        /// Exit 1 when docs/tool-inventory.md differs from the catalog.
        #[arg(long)]
        check: bool,
        /// Where the committed copy lives.
        #[arg(long, value_name = "FILE", default_value = "docs/tool-inventory.md")]
        path: PathBuf,
    },
}

/// Where calls run and under which policy.
#[derive(Debug, clap::Args)]
struct Session {
    /// The workspace root; default the current directory.
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// A policy file (TOML); default: reads allowed, writes, exec and network need approval.
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// Run another MCP server and serve its tools as `NAME.tool` (repeatable).
    #[arg(long, value_name = "NAME='CMD ARGS'")]
    upstream: Vec<UpstreamSpec>,
}

/// Connects every `--upstream` and registers its tools; refusals are reported on stderr.
fn connect_upstreams(
    executor: &tokio::runtime::Runtime,
    registry: &Arc<Registry>,
    runtime: &Runtime,
    session: &Session,
) -> Result<Vec<upstream::Upstream>, ExitCode> {
    let mut connected = Vec::new();
    for spec in &session.upstream {
        let up = executor
            .block_on(upstream::connect(spec, registry, runtime.scope()))
            .map_err(|e| fail(&e))?;
        eprintln!("kyro: upstream `{}` runs under the sandbox: {}", up.name, up.sandbox);
        for (tool, reason) in &up.refused {
            eprintln!("kyro: upstream `{}`: `{tool}` not registered: {reason}", up.name);
        }
        connected.push(up);
    }
    Ok(connected)
}

/// The built-ins' canonical schemas, prepared by the build script.
const PREPARED_SCHEMAS: &str = include_str!(concat!(env!("OUT_DIR"), "/prepared-schemas.json"));

/// Parses the command line and runs it.
pub fn run() -> ExitCode {
    let cli = Cli::parse();
    // The docs describe the whole catalog; every other command serves what works here.
    let (usable, left_out) = match &cli.command {
        Command::Docs { .. } => (kyro_tools::BUILTINS.to_vec(), Vec::new()),
        Command::Mcp { session, .. } | Command::Call { session, .. } => {
            kyro_tools::available(!session.upstream.is_empty())
        }
        _ => kyro_tools::available(false),
    };
    let registry = match Registry::with_prepared_catalog(&usable, PREPARED_SCHEMAS) {
        Ok(registry) => Arc::new(registry),
        Err(e) => return fail(&format!("the built-in catalog does not register: {e}")),
    };
    match cli.command {
        Command::Tools { names: true, .. } => {
            for name in kyro::compat::available_tools(&registry.snapshot()) {
                out!("{name}");
            }
            ExitCode::SUCCESS
        }
        Command::Tools { json, dialect, .. } => tools(&registry, json, dialect, &left_out),
        Command::Describe { name, json, dialect } => describe(&registry, &name, json, dialect),
        Command::Call {
            name,
            arguments,
            session,
            approve,
            approve_fingerprint,
            from,
        } => call(
            registry,
            &name,
            &arguments,
            &session,
            Approving {
                ask: approve,
                fingerprint: approve_fingerprint,
            },
            from,
        ),
        Command::Docs { check, path } => docs(&registry, check, &path),
        Command::Mcp {
            session,
            catalog,
            text,
            http,
            auth,
        } => mcp(registry, &session, (&catalog, text), http, &auth),
    }
}

fn fail(message: &str) -> ExitCode {
    eprintln!("kyro: {message}");
    ExitCode::FAILURE
}

fn usage(message: &str) -> ExitCode {
    eprintln!("kyro: {message}");
    ExitCode::from(USAGE)
}

fn print_json(value: &impl serde::Serialize) {
    out!(
        "{}",
        serde_json::to_string_pretty(value).expect("descriptors serialize")
    );
}

fn tools(registry: &Registry, json: bool, dialect: Option<Dialect>, left_out: &[kyro_tools::Unavailable]) -> ExitCode {
    let snapshot = registry.snapshot();
    // On stderr with --json, so the JSON stays clean; after the list otherwise.
    let say_left_out = |to_stdout: bool| {
        for u in left_out {
            if to_stdout {
                out!("not registered: {} ({})", u.tool, u.reason);
            } else {
                eprintln!("kyro: not registered: {} ({})", u.tool, u.reason);
            }
        }
    };
    if let Some(dialect) = dialect {
        let mut definitions = Vec::new();
        for d in snapshot.descriptors() {
            match providers::export(d, dialect) {
                Ok(exported) => definitions.push(exported.definition),
                Err(e) => eprintln!("kyro: left out: {e}"),
            }
        }
        print_json(&definitions);
        say_left_out(false);
        return ExitCode::SUCCESS;
    }
    if json {
        print_json(&snapshot.descriptors().collect::<Vec<_>>());
        say_left_out(false);
        return ExitCode::SUCCESS;
    }
    let width = snapshot.descriptors().map(|d| d.name.len()).max().unwrap_or(0);
    for d in snapshot.descriptors() {
        out!(
            "{:width$}  {:13}  {:7}  {}",
            d.name,
            d.category,
            d.effect.as_str(),
            d.description.lines().next().unwrap_or_default()
        );
    }
    say_left_out(true);
    ExitCode::SUCCESS
}

fn describe(registry: &Registry, name: &str, json: bool, dialect: Option<Dialect>) -> ExitCode {
    let snapshot = registry.snapshot();
    let Some(tool) = snapshot.get(name) else {
        return fail(&format!("no tool is named `{name}`; `kyro tools` lists them"));
    };
    let d = tool.descriptor();
    if let Some(dialect) = dialect {
        return match providers::export(d, dialect) {
            Ok(exported) => {
                print_json(&exported);
                ExitCode::SUCCESS
            }
            Err(e) => fail(&e.to_string()),
        };
    }
    if json {
        print_json(d);
    } else {
        print_text(d);
    }
    ExitCode::SUCCESS
}

fn print_text(d: &ToolDescriptor) {
    out!("{} ({}, effect {})", d.name, d.category, d.effect.as_str());
    if !d.aliases.is_empty() {
        out!("aliases: {}", d.aliases.join(", "));
    }
    out!("\n{}\n", d.description);
    let required: Vec<&str> = d
        .input_schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if let Some(properties) = d.input_schema.get("properties").and_then(Value::as_object) {
        out!("arguments:");
        for (name, schema) in properties {
            out!(
                "  {name}{}  {}",
                if required.contains(&name.as_str()) {
                    " (required)"
                } else {
                    ""
                },
                schema.get("description").and_then(Value::as_str).unwrap_or_default()
            );
        }
    }
}

/// The session's policy file, or the default policy.
fn load_policy(session: &Session) -> Result<Policy, ExitCode> {
    match &session.policy {
        None => Ok(Policy::default()),
        Some(file) => {
            let text =
                std::fs::read_to_string(file).map_err(|e| usage(&format!("policy `{}`: {e}", file.display())))?;
            toml::from_str(&text).map_err(|e| usage(&format!("policy `{}`: {e}", file.display())))
        }
    }
}

/// The runtime of a session: workspace, policy and the receipt log under `.kyro/`.
/// A `batched` receipt log holds receipts back until the server's next write of answers.
fn open_runtime(
    registry: Arc<Registry>,
    session: &Session,
    policy: &Policy,
    batched: bool,
) -> Result<Runtime, ExitCode> {
    let root = session.workspace.clone().unwrap_or_else(|| PathBuf::from("."));
    let workspace = Workspace::new(&root).map_err(|e| usage(&format!("workspace `{}`: {e}", root.display())))?;
    let log = JsonlReceiptLog::in_workspace(workspace.root());
    let log = Arc::new(if batched { log.batched() } else { log });
    Runtime::new(registry, workspace, policy)
        .map(|runtime| runtime.with_observer(log))
        .map_err(|e| usage(&format!("policy: {e}")))
}

fn async_runtime() -> Result<tokio::runtime::Runtime, ExitCode> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| fail(&format!("cannot start the async runtime: {e}")))
}

/// Says on stderr when programs will not run under the OS sandbox, and what happens then.
/// The kernel is probed (a child process is started) on a thread of its own when
/// `background`, so that a server answers `initialize` without waiting for it; a call that
/// needs the answer waits for the same probe.
fn say_sandbox(runtime: &Runtime, background: bool) {
    let policy = runtime.scope().sandbox().clone();
    let say = move || {
        if policy.mode == kyro_core::policy::SandboxMode::Full {
            eprintln!("kyro: [sandbox] mode = \"full\": programs tools start run without an OS sandbox");
        } else if let Err(why) = kyro_core::sandbox::support() {
            if policy.allow_unsandboxed {
                eprintln!(
                    "kyro: {why}; programs tools start run WITHOUT an OS sandbox ([sandbox] allow_unsandboxed = true)"
                );
            } else {
                eprintln!(
                    "kyro: {why}; run_command, start_process and upstream servers are refused (set [sandbox] allow_unsandboxed = true to run them without a sandbox); git runs unsandboxed"
                );
            }
        }
    };
    if background {
        std::thread::spawn(say);
    } else {
        say();
    }
}

/// The call runtime, the async executor and the connected upstreams, whose tools are
/// registered by now (keep the upstreams alive as long as their tools are served).
fn start(
    registry: &Arc<Registry>,
    session: &Session,
    (policy, serving, stdio): (&Policy, bool, bool),
) -> Result<(Runtime, tokio::runtime::Runtime, Vec<upstream::Upstream>), ExitCode> {
    let runtime = open_runtime(registry.clone(), session, policy, serving && stdio)?;
    say_sandbox(&runtime, serving);
    let executor = async_runtime()?;
    let upstreams = connect_upstreams(&executor, registry, &runtime, session)?;
    Ok((runtime, executor, upstreams))
}

fn mcp(
    registry: Arc<Registry>,
    session: &Session,
    (catalog, text): (&kyro::selection::CatalogFlags, kyro::mcp::TextMode),
    http: Option<std::net::SocketAddr>,
    auth: &kyro::mcp::HttpAuthFlags,
) -> ExitCode {
    let auth = match http.map(|_| auth.resolve()).transpose() {
        Ok(auth) => auth,
        Err(e) => return fail(&format!("mcp: the HTTP token: {e}")),
    };
    let policy = match load_policy(session) {
        Ok(policy) => policy,
        Err(code) => return code,
    };
    let (runtime, executor, _upstreams) = match start(&registry, session, (&policy, true, http.is_none())) {
        Ok(started) => started,
        Err(code) => return code,
    };
    let mut chosen = catalog.over(&policy.catalog);
    if !session.upstream.is_empty() && chosen.toolsets.is_none() {
        // The upstreams' tools are listed by default, and so is the tool that calls them.
        chosen.tools.push("mcp_call".into());
    }
    let selection =
        match kyro::selection::Selection::resolve(&chosen, &runtime, Some(kyro::selection::DEFAULT_TOOLSETS)) {
            Ok(selection) => selection,
            Err(e) => return usage(&format!("mcp: {e}")),
        };
    let server = kyro::mcp::KyroServer::new(runtime)
        .with_selection(selection)
        .with_text(text)
        .search_only(catalog.catalog == kyro::selection::CatalogMode::Search);
    let served = match (http, auth) {
        (Some(addr), Some(auth)) => executor.block_on(server.serve_http(addr, auth)),
        _ => executor.block_on(server.serve_stdio()),
    };
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&format!("mcp: {e}")),
    }
}

fn call(
    registry: Arc<Registry>,
    name: &str,
    words: &[String],
    session: &Session,
    approving: Approving,
    from: Option<Dialect>,
) -> ExitCode {
    let Approving {
        ask: approve,
        fingerprint: approve_fingerprint,
    } = approving;
    if approve && !std::io::stdin().is_terminal() {
        return usage("--approve asks on a terminal; pass --approve-fingerprint HEX instead");
    }
    // Upstream tools first, so their schemas type the arguments below.
    let policy = match load_policy(session) {
        Ok(policy) => policy,
        Err(code) => return code,
    };
    let (runtime, executor, _upstreams) = match start(&registry, session, (&policy, false, false)) {
        Ok(started) => started,
        Err(code) => return code,
    };
    let snapshot = registry.snapshot();
    let descriptor = snapshot.get(name).map(|t| t.descriptor().clone());
    let arguments = match (from, words) {
        (Some(dialect), [one]) => match provider_arguments(dialect, descriptor.as_ref(), one) {
            Ok(map) => Value::Object(map),
            Err(message) => return usage(&message),
        },
        (Some(_), _) => return usage("--from takes exactly one argument: the provider's payload"),
        (None, [one]) if looks_like_json(one) => match kyro_core::parse_arguments(one) {
            Ok(map) => Value::Object(map),
            Err(e) => return usage(&e.to_string()),
        },
        (None, _) => {
            // The text edge: typed by the tool's schema when the tool exists; an unknown
            // tool is reported by the runtime like any other call.
            let (schema, aliases) = descriptor
                .as_ref()
                .map(|d| (d.input_schema.clone(), d.argument_aliases.clone()))
                .unwrap_or_default();
            match text_arguments::from_words(words, &schema, &aliases) {
                Ok(map) => Value::Object(map),
                Err(e) => return usage(&e.to_string()),
            }
        }
    };
    let mut call = Call::new(name, arguments);
    if let Some(hex) = &approve_fingerprint {
        call = call.approved(ApprovalToken::for_fingerprint(hex));
    }
    let mut execution = executor.block_on(runtime.execute(call.clone()));
    if let Outcome::ApprovalRequired {
        fingerprint, summary, ..
    } = &execution.outcome
        && approve
        && ask(summary, fingerprint)
    {
        let approved = call.approved(ApprovalToken::for_fingerprint(fingerprint));
        execution = executor.block_on(runtime.execute(approved));
    }
    let mut printed = execution.outcome.to_json();
    printed["receipt"] = serde_json::to_value(&execution.receipt).unwrap_or(Value::Null);
    out!("{printed}");
    if execution.outcome.kind() == OutcomeKind::Ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// How the caller approves: on the terminal, or by a fingerprint given up front.
struct Approving {
    ask: bool,
    fingerprint: Option<String>,
}

/// A provider's payload, brought to an arguments object once, at this edge.
fn provider_arguments(
    dialect: Dialect,
    descriptor: Option<&ToolDescriptor>,
    payload: &str,
) -> Result<serde_json::Map<String, Value>, String> {
    let object = |v: Option<&Value>, what: &str| match v {
        Some(Value::Object(map)) => Ok(map.clone()),
        _ => Err(format!("the payload has no `{what}` object")),
    };
    match dialect {
        Dialect::Openai => match descriptor {
            Some(d) => providers::openai::arguments(d, payload).map_err(|e| e.to_string()),
            None => kyro_core::parse_arguments(payload).map_err(|e| e.to_string()),
        },
        Dialect::Mcp => kyro_core::parse_arguments(payload).map_err(|e| e.to_string()),
        Dialect::Anthropic => {
            let block = Value::Object(kyro_core::parse_arguments(payload).map_err(|e| e.to_string())?);
            object(providers::anthropic::arguments(&block), "input")
        }
        Dialect::Gemini => {
            let call = Value::Object(kyro_core::parse_arguments(payload).map_err(|e| e.to_string())?);
            object(providers::gemini::arguments(&call), "args")
        }
    }
}

/// Shows the call and asks y/N on the terminal.
fn ask(summary: &str, fingerprint: &str) -> bool {
    eprint!("kyro: {summary}\nkyro: fingerprint {fingerprint}\nkyro: approve this call? [y/N] ");
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer).is_ok() && matches!(answer.trim(), "y" | "Y" | "yes")
}

/// A single word that opens like JSON other than a bare `key=value` is parsed as JSON.
fn looks_like_json(word: &str) -> bool {
    let t = word.trim_start();
    !word.contains('=') || t.starts_with('{') || t.starts_with('[') || t.starts_with('"')
}

fn docs(registry: &Registry, check: bool, path: &std::path::Path) -> ExitCode {
    let text = inventory::render(&registry.snapshot());
    if !check {
        {
            use std::io::Write;
            let _ = write!(std::io::stdout().lock(), "{text}");
        }
        return ExitCode::SUCCESS;
    }
    match std::fs::read_to_string(path) {
        Ok(committed) if committed == text => ExitCode::SUCCESS,
        Ok(_) => fail(&format!(
            "{} is stale: rebuild (cargo build) to regenerate it, or run `kyro docs > {}`",
            path.display(),
            path.display()
        )),
        Err(e) => fail(&format!("cannot read {}: {e}", path.display())),
    }
}
