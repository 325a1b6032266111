//! The `handlestore` binary: server (`node`, `dev`) and admin CLI.

fn main() -> std::process::ExitCode {
    handlestore_node::cli::main()
}
