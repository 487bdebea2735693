//! Writing to standard output. A reader that stops early (`storsim presets | head -3`) closes
//! the pipe; Rust ignores SIGPIPE, so the next write fails with `BrokenPipe`, and `print!`
//! would panic. [`say!`] ends the process quietly with success instead, as SIGPIPE's default
//! action ends a C program, without restoring that action for the whole process, where it
//! would also make a write to a vanished NBD client's socket kill the emulator.

use std::fmt;
use std::io::{ErrorKind, Write};

/// Writes `args` to standard output and flushes it; on a closed pipe the process exits with
/// status 0, on any other failure with a message and status 1.
pub fn write(args: fmt::Arguments) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.flush()) {
        if e.kind() == ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        let _ = writeln!(
            std::io::stderr(),
            "storsim: error: writing to standard output: {e}"
        );
        std::process::exit(i32::from(crate::EXIT_FAILURE));
    }
}

/// `print!` that survives a reader closing the pipe ([`write()`]).
macro_rules! say {
    ($($arg:tt)*) => { $crate::stdout::write(format_args!($($arg)*)) };
}

/// `println!` that survives a reader closing the pipe ([`write()`]).
macro_rules! sayln {
    ($($arg:tt)*) => { $crate::stdout::write(format_args!("{}\n", format_args!($($arg)*))) };
}

pub(crate) use {say, sayln};
