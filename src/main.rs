//! `kyro`: the built-in catalog on the command line (and, with `kyro mcp`, over MCP). A thin
//! CLI over the `kyro` library.

mod cli;

fn main() -> std::process::ExitCode {
    cli::run()
}
