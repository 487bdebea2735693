//! `storsim`: argument parsing and glue. Everything that computes lives in the library crates.

mod args;
mod calibrate;
mod calibrate_report;
mod cosim;
mod emulate;
mod import;
mod inspect;
mod progress;
mod report;
mod simulate;
mod validate;
mod workload_arg;

use clap::Parser;
use std::process::ExitCode;

/// Exit status for bad input (malformed trace, bad device file, bad option): the user can fix it.
const EXIT_BAD_INPUT: u8 = 2;
/// Exit status when something outside the input failed (for example writing an output file).
const EXIT_FAILURE: u8 = 1;
/// Exit status when the simulated device failed during the run (wore out): the results up to
/// the failure were still reported.
pub const EXIT_DEVICE_FAILED: u8 = 3;

/// A failure with the exit status it maps to.
pub struct CliError {
    pub message: String,
    pub status: u8,
}

impl CliError {
    pub fn input(message: impl std::fmt::Display) -> Self {
        CliError {
            message: message.to_string(),
            status: EXIT_BAD_INPUT,
        }
    }
    pub fn failure(message: impl std::fmt::Display) -> Self {
        CliError {
            message: message.to_string(),
            status: EXIT_FAILURE,
        }
    }
}

fn main() -> ExitCode {
    let cli = args::Cli::parse();
    let result = match cli.command {
        args::Command::Simulate(a) => simulate::run(a),
        args::Command::Inspect(a) => inspect::run(a),
        args::Command::Emulate(a) => emulate::run(a),
        args::Command::Import(args::ImportCommand::Disksim(a)) => import::disksim(a),
        args::Command::Validate(args::ValidateCommand::Disksim(a)) => validate::disksim(a),
        args::Command::Calibrate(a) => calibrate::run(a),
        args::Command::Cosim(a) => cosim::run(a),
        args::Command::Presets => {
            for p in storsim_config::presets() {
                println!("{:<18} {:<8} {}", p.name, p.model(), p.summary);
            }
            Ok(())
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // Not eprintln!: with standard error closed it would panic instead of exiting.
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "storsim: error: {}", e.message);
            ExitCode::from(e.status)
        }
    }
}
