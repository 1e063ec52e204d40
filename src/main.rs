//! `kyro`: the built-in catalog on the command line (and, with `kyro mcp`, over MCP). A thin
//! CLI over the `kyro` library, whose `cli` module it runs.

fn main() -> std::process::ExitCode {
    kyro::__main()
}
