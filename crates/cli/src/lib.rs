//! The `storsim` command: its arguments parsed into the typed options of `storsim-api`, the
//! library every front end calls, and the command's own parts (the progress line, the files
//! it writes, the exit statuses). [`cli_main`] is what the binary calls; programs call
//! `storsim-api` instead.

mod args;
mod calibrate;
mod cosim;
mod counters;
mod destination;
mod emulate;
mod import;
mod inspect;
mod interrupt;
mod power_loss;
mod presets;
mod progress;
mod report_html;
mod simulate;
mod stdout;
mod sweep;
mod validate;
mod workload_arg;

use clap::Parser;
use std::process::ExitCode;

/// Exit status for bad input (malformed trace, bad device file, bad option): the user can fix it.
pub const EXIT_BAD_INPUT: u8 = 2;
/// Exit status when something outside the input failed (for example writing an output file), or
/// a device model broke its contract during a run (a bug in the model, not the user's input).
pub const EXIT_FAILURE: u8 = 1;
/// Exit status when the simulated device failed during the run (wore out): the results up to
/// the failure were still reported.
pub const EXIT_DEVICE_FAILED: u8 = 3;

/// A failure with the exit status it maps to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliError {
    /// What went wrong, as the command prints it after `storsim: error: `.
    pub message: String,
    /// The exit status: [`EXIT_BAD_INPUT`], [`EXIT_FAILURE`], [`EXIT_DEVICE_FAILED`] or 130
    /// for an interrupted run.
    pub status: u8,
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CliError {}

impl CliError {
    /// Bad input, which the user can fix ([`EXIT_BAD_INPUT`]).
    pub fn input(message: impl std::fmt::Display) -> Self {
        CliError {
            message: message.to_string(),
            status: EXIT_BAD_INPUT,
        }
    }
    /// A failure outside the input ([`EXIT_FAILURE`]).
    pub fn failure(message: impl std::fmt::Display) -> Self {
        CliError {
            message: message.to_string(),
            status: EXIT_FAILURE,
        }
    }

    /// A simulation's error: [`CliError::engine`] for the run's, bad input for the rest.
    pub fn sim(error: storsim_sim::SimError, seed: Option<u64>) -> Self {
        storsim_api::ApiError::sim(error, seed).into()
    }

    /// A run's error: a device model's fault is a failure that says it is a bug in the model
    /// and gives the `seed` (when the run had one) to reproduce it; everything else the engine
    /// reports is bad input.
    pub fn engine(error: storsim_engine::EngineError, seed: Option<u64>) -> Self {
        storsim_api::ApiError::engine(error, seed).into()
    }
}

impl From<storsim_api::ApiError> for CliError {
    fn from(e: storsim_api::ApiError) -> Self {
        let status = match e {
            storsim_api::ApiError::Input(_) => EXIT_BAD_INPUT,
            storsim_api::ApiError::Failure(_) | storsim_api::ApiError::ModelFault(_) => {
                EXIT_FAILURE
            }
        };
        CliError {
            message: e.to_string(),
            status,
        }
    }
}

/// The `storsim` command: parses the process's arguments, runs the command and returns its
/// exit status (the message of a failure is printed on standard error).
#[doc(hidden)]
pub fn cli_main() -> ExitCode {
    let cli = args::Cli::parse();
    let result = cli.command.run();
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

#[cfg(test)]
mod tests {
    use super::*;
    use storsim_engine::EngineError;

    fn stall() -> EngineError {
        EngineError::Model {
            device: "ssd".into(),
            at: "1000 ns into the run, with 3 requests completed".into(),
            message: "the device stalled".into(),
        }
    }

    #[test]
    fn a_model_fault_exits_1_saying_it_is_a_model_bug_with_the_seed() {
        let e = CliError::engine(stall(), Some(42));
        assert_eq!(e.status, EXIT_FAILURE);
        assert!(e.message.starts_with("model failure: "), "{}", e.message);
        assert!(
            e.message.contains("bug in the device model"),
            "{}",
            e.message
        );
        assert!(e.message.contains("--seed 42"), "{}", e.message);
        assert!(e.message.contains("the device stalled"), "{}", e.message);
        let e = CliError::engine(stall(), None);
        assert!(!e.message.contains("--seed"), "{}", e.message);
    }

    #[test]
    fn other_engine_errors_are_bad_input() {
        let e = CliError::engine(
            EngineError::Options {
                message: "time scale must be a positive number, got 0".into(),
            },
            Some(42),
        );
        assert_eq!(e.status, EXIT_BAD_INPUT);
        assert!(!e.message.contains("model"), "{}", e.message);
    }
}
