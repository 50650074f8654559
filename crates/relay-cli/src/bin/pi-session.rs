//! `pi-session [pi options] -- @/abs/launch.md "request"`: see `relay_cli::session`.
fn main() -> std::process::ExitCode {
    relay_cli::session::run(std::env::args_os().skip(1).collect())
}
