//! `storsim`: the command. Everything it does is in the library (`lib.rs`), which the Python
//! package drives too.

fn main() -> std::process::ExitCode {
    storsim::cli_main()
}
