//! The command line: `kyro tools`, `describe`, `call` and `docs`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use kyro_core::{Call, OutcomeKind, Registry, Runtime, ToolDescriptor, Workspace};
use serde_json::Value;

use crate::inventory;
use crate::text_arguments;

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
        #[arg(long)]
        json: bool,
    },
    /// Show one tool's descriptor.
    Describe {
        /// Tool name or alias.
        name: String,
        /// Print the descriptor as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Call a tool with a JSON object, or with key=value words.
    Call {
        /// Tool name or alias.
        name: String,
        /// One JSON object (`'{"path": "a.txt"}'`), or key=value words (`path=a.txt limit=5`).
        arguments: Vec<String>,
        /// The workspace root; default the current directory.
        #[arg(long, value_name = "DIR")]
        workspace: Option<PathBuf>,
    },
    /// Serve the catalog over MCP on stdin/stdout.
    Mcp {
        /// The workspace root; default the current directory.
        #[arg(long, value_name = "DIR")]
        workspace: Option<PathBuf>,
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

/// Parses the command line and runs it.
pub fn run() -> ExitCode {
    let cli = Cli::parse();
    let registry = match Registry::with_catalog(kyro_tools::BUILTINS) {
        Ok(registry) => Arc::new(registry),
        Err(e) => return fail(&format!("the built-in catalog does not register: {e}")),
    };
    match cli.command {
        Command::Tools { json } => tools(&registry, json),
        Command::Describe { name, json } => describe(&registry, &name, json),
        Command::Call {
            name,
            arguments,
            workspace,
        } => call(registry, &name, &arguments, workspace),
        Command::Docs { check, path } => docs(&registry, check, &path),
        Command::Mcp { workspace } => mcp(registry, workspace),
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
    println!(
        "{}",
        serde_json::to_string_pretty(value).expect("descriptors serialize")
    );
}

fn tools(registry: &Registry, json: bool) -> ExitCode {
    let snapshot = registry.snapshot();
    if json {
        print_json(&snapshot.descriptors().collect::<Vec<_>>());
        return ExitCode::SUCCESS;
    }
    let width = snapshot
        .descriptors()
        .map(|d| d.name.len())
        .max()
        .unwrap_or(0);
    for d in snapshot.descriptors() {
        println!(
            "{:width$}  {:13}  {:7}  {}",
            d.name,
            d.category,
            d.effect.as_str(),
            d.description.lines().next().unwrap_or_default()
        );
    }
    ExitCode::SUCCESS
}

fn describe(registry: &Registry, name: &str, json: bool) -> ExitCode {
    let snapshot = registry.snapshot();
    let Some(tool) = snapshot.get(name) else {
        return fail(&format!(
            "no tool is named `{name}`; `kyro tools` lists them"
        ));
    };
    let d = tool.descriptor();
    if json {
        print_json(d);
    } else {
        print_text(d);
    }
    ExitCode::SUCCESS
}

fn print_text(d: &ToolDescriptor) {
    println!("{} ({}, effect {})", d.name, d.category, d.effect.as_str());
    if !d.aliases.is_empty() {
        println!("aliases: {}", d.aliases.join(", "));
    }
    println!("\n{}\n", d.description);
    let required: Vec<&str> = d
        .input_schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if let Some(properties) = d.input_schema.get("properties").and_then(Value::as_object) {
        println!("arguments:");
        for (name, schema) in properties {
            println!(
                "  {name}{}  {}",
                if required.contains(&name.as_str()) {
                    " (required)"
                } else {
                    ""
                },
                schema
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
            );
        }
    }
}

fn open_workspace(dir: Option<PathBuf>) -> Result<Workspace, ExitCode> {
    let root = dir.unwrap_or_else(|| PathBuf::from("."));
    Workspace::new(&root).map_err(|e| usage(&format!("workspace `{}`: {e}", root.display())))
}

fn async_runtime() -> Result<tokio::runtime::Runtime, ExitCode> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| fail(&format!("cannot start the async runtime: {e}")))
}

fn mcp(registry: Arc<Registry>, workspace: Option<PathBuf>) -> ExitCode {
    let (workspace, executor) = match (open_workspace(workspace), async_runtime()) {
        (Ok(w), Ok(e)) => (w, e),
        (Err(code), _) | (_, Err(code)) => return code,
    };
    let server = crate::mcp::KyroServer::new(Runtime::new(registry, workspace));
    match executor.block_on(server.serve_stdio()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&format!("mcp: {e}")),
    }
}

fn call(
    registry: Arc<Registry>,
    name: &str,
    words: &[String],
    workspace: Option<PathBuf>,
) -> ExitCode {
    let workspace = match open_workspace(workspace) {
        Ok(w) => w,
        Err(code) => return code,
    };
    let arguments = match words {
        [one] if looks_like_json(one) => match kyro_core::parse_arguments(one) {
            Ok(map) => Value::Object(map),
            Err(e) => return usage(&e.to_string()),
        },
        _ => {
            // The text edge: typed by the tool's schema when the tool exists; an unknown
            // tool is reported by the runtime like any other call.
            let snapshot = registry.snapshot();
            let (schema, aliases) = snapshot
                .get(name)
                .map(|t| {
                    (
                        t.descriptor().input_schema.clone(),
                        t.descriptor().argument_aliases.clone(),
                    )
                })
                .unwrap_or_default();
            match text_arguments::from_words(words, &schema, &aliases) {
                Ok(map) => Value::Object(map),
                Err(e) => return usage(&e.to_string()),
            }
        }
    };
    let runtime = Runtime::new(registry, workspace);
    let executor = match async_runtime() {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    let outcome = executor.block_on(runtime.execute_call(Call::new(name, arguments)));
    println!("{}", outcome.to_json());
    if outcome.kind() == OutcomeKind::Ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// A single word that opens like JSON other than a bare `key=value` is parsed as JSON.
fn looks_like_json(word: &str) -> bool {
    let t = word.trim_start();
    !word.contains('=') || t.starts_with('{') || t.starts_with('[') || t.starts_with('"')
}

fn docs(registry: &Registry, check: bool, path: &std::path::Path) -> ExitCode {
    let text = inventory::render(&registry.snapshot());
    if !check {
        print!("{text}");
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
