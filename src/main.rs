//! `kyro`: the typed tool catalog on the command line (and, with `kyro mcp`, over MCP).

mod cli;
mod frames;
mod inventory;
mod mcp;
mod providers;
mod text_arguments;
mod upstream;

fn main() -> std::process::ExitCode {
    cli::run()
}
