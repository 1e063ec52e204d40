//! The whole `main` of an author's tool server: [`Server::run`].

use std::process::ExitCode;

use super::failed;
use crate::Server;
use crate::args::ServeArgs;

impl Server {
    /// The whole `main` of a tool server: reads the command line ([`ServeArgs`]: as
    /// `kyro mcp` does) and [serves](Server::serve).
    pub fn run(self) -> ExitCode {
        kyro_core::log::set_program(&self.identity.name);
        #[derive(clap::Parser)]
        struct Command {
            #[command(flatten)]
            args: ServeArgs,
        }
        // The author's server, by its own name: `NAME VERSION`, what it is for.
        let about = self
            .identity
            .description
            .clone()
            .unwrap_or_else(|| format!("The {} MCP tool server", self.identity.name));
        let command = <Command as clap::CommandFactory>::command()
            .name(self.identity.name.clone())
            .version(self.identity.version.clone())
            .about(about)
            .after_help(crate::args::environment_help(false));
        let argv = match crate::args::with_config_file(&command, std::env::args_os().collect()) {
            Ok(argv) => argv,
            Err(e) => {
                if std::env::args().any(|a| a == "--log-json") {
                    kyro_core::log::set_json(true);
                    kyro_core::log::error(&e.to_string());
                } else {
                    eprintln!("{}: {e}", self.identity.name);
                }
                return ExitCode::from(2);
            }
        };
        let parsed = command
            .try_get_matches_from(argv)
            .and_then(|matches| <Command as clap::FromArgMatches>::from_arg_matches(&matches));
        let command = match parsed {
            Ok(command) => command,
            Err(e) => {
                let _ = e.print();
                return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
            }
        };
        match self.args(command.args) {
            Ok(server) => server.serve(),
            Err(e) => failed(&e),
        }
    }
}
