fn main() -> std::process::ExitCode {
    kyro::Server::new(kyro_author_example::TOOLS).run()
}
