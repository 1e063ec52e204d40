mod tools;

fn main() -> std::process::ExitCode {
    kyro::Server::new(tools::TOOLS).run()
}
