//! The command line: `kyro tools`, `describe`, `call` and `docs`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use std::io::IsTerminal;

use kyro_core::{ApprovalToken, Call, Outcome, OutcomeKind, Registry, ToolDescriptor};
use serde_json::Value;

use kyro::dialects::{self, Dialect};
use kyro::inventory;
use kyro::text_arguments;

/// Writes a line to stdout; a closed pipe (`kyro tools | head`) is not an error.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

mod approvals;
mod grants;
mod pending;
mod receipts;

/// What `kyro mcp` adds to an `approval_required` answer: how a person at a terminal lets
/// the calls through.
const MCP_APPROVAL_HINT: &str = "A person can also let this client's calls of {tool} through for an hour, \
     from a terminal in the workspace: `kyro grants add {tool} --for 1h` (a caller of an HTTP token file: add `--caller NAME`).";

/// What `kyro call` adds to an `approval_required` outcome.
const CALL_APPROVAL_HINT: &str = "On the command line: the same `kyro call {tool} ...` with `--approve-fingerprint {fingerprint}`, or `--approve` to be asked.";

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
        session: kyro::SessionArgs,
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
    #[command(after_help = crate::args::environment_help(true))]
    Mcp {
        #[command(flatten)]
        serve: Box<kyro::ServeArgs>,
    },
    /// The calls waiting for a named approver (the policy's `review`): list, show, approve
    /// and deny them.
    Approvals {
        #[command(subcommand)]
        command: Option<approvals::ApprovalsCommand>,
        #[command(flatten)]
        state: StateFlags,
    },
    /// List, add and revoke grants: tools a caller may run without being asked, for a
    /// while (what a person's "allow this tool for an hour" leaves).
    Grants {
        #[command(subcommand)]
        command: Option<grants::GrantsCommand>,
        #[command(flatten)]
        state: StateFlags,
    },
    /// Query the workspace's receipts (by caller, tool, outcome, time) or verify their
    /// hash chain.
    #[command(args_conflicts_with_subcommands = true)]
    Receipts {
        #[command(subcommand)]
        command: Option<receipts::ReceiptsCommand>,
        #[command(flatten)]
        list: receipts::ListArgs,
        #[command(flatten)]
        state: StateFlags,
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

/// Which state a command reads: the workspace's (its database in the user's state
/// directory, its receipt log), or the PostgreSQL state a team's replicas share.
#[derive(Debug, clap::Args)]
struct StateFlags {
    /// The workspace root; default the current directory.
    #[arg(long, global = true, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// The PostgreSQL state a team's replicas share (`kyro mcp --state`), instead of the
    /// workspace's.
    #[arg(
        long,
        global = true,
        value_name = "URL",
        env = "KYRO_STATE",
        hide_env_values = true,
        conflicts_with = "workspace"
    )]
    state: Option<String>,
}

/// The built-ins' canonical schemas, prepared by the build script.
const PREPARED_SCHEMAS: &str = include_str!(concat!(env!("OUT_DIR"), "/prepared-schemas.json"));

/// Parses the command line and runs it.
pub(crate) fn run() -> ExitCode {
    let cli = match mcp_config_file(std::env::args_os().collect()) {
        Ok(argv) => Cli::parse_from(argv),
        Err(message) => return usage(&message),
    };
    // The docs describe the whole catalog; every other command serves what works here.
    let (usable, left_out) = match &cli.command {
        Command::Docs { .. } => (kyro_tools::BUILTINS.to_vec(), Vec::new()),
        Command::Mcp { serve } => kyro_tools::available(!serve.session.upstream.is_empty()),
        Command::Call { session, .. } => kyro_tools::available(!session.upstream.is_empty()),
        _ => kyro_tools::available(false),
    };
    let served = || builtins(&usable, &left_out);
    // What only describes the catalog needs its registry, not a server (which makes its own).
    let registry = || Registry::with_prepared_catalog(&usable, PREPARED_SCHEMAS);
    let registry = match &cli.command {
        Command::Call { .. } | Command::Mcp { .. } | Command::Receipts { .. } | Command::Approvals { .. } => {
            Registry::default()
        }
        _ => match registry() {
            Ok(registry) => registry,
            Err(e) => return fail(&format!("the built-in catalog does not register: {e}")),
        },
    };
    match cli.command {
        Command::Tools { names: true, .. } => {
            for name in dialects::names(&registry.snapshot()) {
                out!("{name}");
            }
            ExitCode::SUCCESS
        }
        Command::Tools { json, dialect, .. } => tools(&registry, json, dialect, &left_out),
        Command::Describe { name, json, dialect } => describe(&registry, &name, json, dialect),
        Command::Docs { check, path } => docs(&registry, check, &path),
        Command::Receipts {
            command,
            list,
            state: StateFlags { workspace, state },
        } => match receipts::run(command, list, receipts::Log::of(workspace, state)) {
            Ok(true) => ExitCode::SUCCESS,
            Ok(false) => ExitCode::FAILURE,
            Err(message) => fail(&message),
        },
        Command::Approvals {
            command,
            state: StateFlags { workspace, state },
        } => match approvals::run(command, workspace, state) {
            Ok(()) => ExitCode::SUCCESS,
            Err(grants::Refused::Usage(message)) => usage(&message),
            Err(grants::Refused::Failed(message)) => fail(&message),
        },
        Command::Grants {
            command,
            state: StateFlags { workspace, state },
        } => match grants::run(command, workspace, state, &registry) {
            Ok(()) => ExitCode::SUCCESS,
            Err(grants::Refused::Usage(message)) => usage(&message),
            Err(grants::Refused::Failed(message)) => fail(&message),
        },
        Command::Call {
            name,
            arguments,
            session,
            approve,
            approve_fingerprint,
            from,
        } => {
            let approving = Approving {
                ask: approve,
                fingerprint: approve_fingerprint,
            };
            call(served(), &name, &arguments, &session, approving, from)
        }
        Command::Mcp { serve } => match served()
            .default_toolsets(kyro::DEFAULT_TOOLSETS)
            .approval_hint(MCP_APPROVAL_HINT)
            .args(*serve)
        {
            Ok(server) => server.serve(),
            Err(e) => crate::server::failed(&e),
        },
    }
}

/// `kyro mcp --config FILE`: the file's flags put before the command line's (the command
/// line wins). `mcp` comes first: `kyro` has no flag of its own that takes a value.
fn mcp_config_file(argv: Vec<std::ffi::OsString>) -> Result<Vec<std::ffi::OsString>, String> {
    let command = <Cli as clap::CommandFactory>::command();
    let (Some(mcp), Some(word)) = (command.find_subcommand("mcp"), argv.get(1)) else {
        return Ok(argv);
    };
    if word != "mcp" {
        return Ok(argv);
    }
    let mut argv = argv.into_iter();
    let program = argv.next();
    let words = crate::args::with_config_file(mcp, argv.collect()).map_err(|e| e.to_string())?;
    Ok(program.into_iter().chain(words).collect())
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
            match dialects::export(d, dialect) {
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
        return match dialects::export(d, dialect) {
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

/// The built-ins that work on this machine, as one server: their schemas prepared at
/// build time, and the `[approvals.tools]` rules for those left out here (the browser tools
/// without Chromium, `mcp_call` without an upstream) set aside, so one policy serves every
/// machine.
fn builtins(usable: &[kyro_core::ToolEntry], left_out: &[kyro_tools::Unavailable]) -> kyro::Server {
    let set_aside = kyro_tools::BUILTINS
        .iter()
        .filter(|entry| left_out.iter().any(|u| u.tool == entry.spec.name))
        .flat_map(|entry| std::iter::once(entry.spec.name).chain(entry.spec.aliases.iter().copied()));
    kyro::Server::new(usable)
        .named("kyro", env!("CARGO_PKG_VERSION"))
        .description(env!("CARGO_PKG_DESCRIPTION"))
        .prepared_schemas(PREPARED_SCHEMAS)
        .set_aside(set_aside)
        .listing_hint("every tool's `capabilities`: `kyro tools --json`")
}

fn call(
    server: kyro::Server,
    name: &str,
    words: &[String],
    session: &kyro::SessionArgs,
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
    let executor = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(executor) => executor,
        Err(e) => return fail(&format!("cannot start the async runtime: {e}")),
    };
    // Upstream tools first, so their schemas type the arguments below.
    let started = match server.session(session) {
        Ok(server) => executor.block_on(server.start()),
        Err(e) => Err(e),
    };
    let started = match started {
        Ok(started) => started,
        Err(e) => return crate::server::failed(&e),
    };
    let runtime = &started.runtime;
    let registry = runtime.registry();
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
    let root = runtime.workspace().root().to_path_buf();
    let mut taken = None;
    if let Some(hex) = &approve_fingerprint {
        // Good once across processes: the request kyro noted is taken (pending.rs).
        let (token, note) = pending::take(&root, hex);
        call = call.approved(token);
        taken = note;
    }
    let mut execution = executor.block_on(runtime.execute(call.clone()));
    if let (
        Outcome::Denied {
            reason: kyro_core::receipt::Denial::ApprovalMismatch { .. },
            ..
        },
        Some(taken),
    ) = (&execution.outcome, taken)
        && let Err(e) = taken.put_back()
    {
        // Refused as another call's: the approval was not used, and stays good for its own.
        eprintln!("kyro: cannot keep the approval for its own call ({e}); ask again");
    }
    if let Outcome::ApprovalRequired {
        fingerprint, summary, ..
    } = &execution.outcome
        && approve
        && ask(summary, fingerprint)
    {
        let approved = call.approved(ApprovalToken::for_fingerprint(fingerprint));
        execution = executor.block_on(runtime.execute(approved));
    }
    if let Outcome::ApprovalRequired { fingerprint, .. } = &execution.outcome
        && let Err(e) = pending::note(&root, fingerprint)
    {
        eprintln!(
            "kyro: cannot note the approval request in kyro's state directory ({e}); --approve-fingerprint will be refused"
        );
    }
    let mut printed = execution.outcome.to_json();
    if let Outcome::ApprovalRequired { tool, fingerprint, .. } = &execution.outcome
        && let Some(message) = printed["error"]["message"].as_str()
    {
        let hint = CALL_APPROVAL_HINT
            .replace("{tool}", tool)
            .replace("{fingerprint}", fingerprint);
        printed["error"]["message"] = Value::String(format!("{message}\n{hint}"));
    }
    printed["receipt"] = serde_json::to_value(&execution.receipt).unwrap_or(Value::Null);
    out!("{printed}");
    runtime.flush_observers();
    if let Err(message) = runtime.observers_ready() {
        // The receipt is printed above, but the log lost it: say so, and fail.
        eprintln!("kyro: the receipt log lost this call's receipt: {message}");
        return ExitCode::FAILURE;
    }
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
            Some(d) => dialects::openai::arguments(d, payload).map_err(|e| e.to_string()),
            None => kyro_core::parse_arguments(payload).map_err(|e| e.to_string()),
        },
        Dialect::Mcp => kyro_core::parse_arguments(payload).map_err(|e| e.to_string()),
        Dialect::Anthropic => {
            let block = Value::Object(kyro_core::parse_arguments(payload).map_err(|e| e.to_string())?);
            object(dialects::anthropic::arguments(&block), "input")
        }
        Dialect::Gemini => {
            let call = Value::Object(kyro_core::parse_arguments(payload).map_err(|e| e.to_string())?);
            object(dialects::gemini::arguments(&call), "args")
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
