//! `storsim`: the command. Everything it does is in the library (`lib.rs`), which the Python
//! package drives too.

// Split in the cli restructuring (issue 37); remove then.
#![allow(clippy::too_many_lines)]

fn main() -> std::process::ExitCode {
    storsim::cli_main()
}
