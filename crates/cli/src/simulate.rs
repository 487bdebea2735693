//! `storsim simulate`: the command line around `storsim_sim`'s [`Session`], which loads the
//! device, opens the workload and runs it; here are the options, the progress line, the
//! requests CSV and the reports.

use crate::args::{RefusedArg, ReplayArg, SimulateArgs};
use crate::progress::Progress;
use crate::report::{self, RequestsCsv};
use crate::{workload_arg, CliError};
use storsim_core::Completion;
use storsim_engine::{CompletionSink, EngineOptions, OutOfRange, Refused, Replay};
use storsim_sim::Session;

pub fn run(args: SimulateArgs) -> Result<(), CliError> {
    let source = workload_arg::source(&args.workload, &args.trace)?;
    let mut session = Session::open(&args.device, &source, args.seed)
        .map_err(|e| CliError::sim(e, Some(args.seed)))?;
    let replay = match (args.replay, args.iodepth) {
        (None, None) => Replay::natural(session.workload.pacing),
        (None | Some(ReplayArg::Closed), Some(depth)) => Replay::Closed { depth },
        (Some(ReplayArg::Closed), None) => {
            return Err(CliError::input("--replay closed needs --iodepth N"));
        }
        (Some(ReplayArg::Open), None) => Replay::Open {
            time_scale: args.time_scale,
        },
        (Some(ReplayArg::Afap), None) => Replay::AsFastAsPossible,
        (Some(_), Some(_)) => {
            return Err(CliError::input("--iodepth goes with --replay closed only"));
        }
    };
    let replay = match replay {
        Replay::Open { .. } => Replay::Open {
            time_scale: args.time_scale,
        },
        other => other,
    };
    let options = EngineOptions {
        replay,
        out_of_range: if args.wrap {
            OutOfRange::Wrap
        } else {
            OutOfRange::Error
        },
        on_refused: match args.on_refused {
            RefusedArg::Stop => Refused::Stop,
            RefusedArg::Count => Refused::Count,
        },
        max_requests: args.max_requests,
        duration_ns: session.workload.duration_ns,
    };

    let mut csv = match &args.requests_csv {
        Some(path) => Some(RequestsCsv::create(path)?),
        None => None,
    };
    let mut csv_error: Option<std::io::Error> = None;
    let mut write_csv = |c: &Completion| {
        if let Some(w) = csv.as_mut() {
            if csv_error.is_none() {
                if let Err(e) = w.write(c) {
                    csv_error = Some(e);
                }
            }
        }
    };
    // Without a CSV to write, no sink: the statistics are collected in any case.
    let sink: Option<&mut dyn CompletionSink> = match args.requests_csv {
        Some(_) => Some(&mut write_csv),
        None => None,
    };
    let mut progress = Progress::new(args.quiet, args.max_requests);
    let outcome = session
        .run(&options, sink, &mut |n, t| progress.update(n, t), None)
        .map_err(|e| CliError::sim(e, Some(args.seed)))?;
    let info = outcome.info;
    let wall = progress.finish();
    let cpu = progress.cpu_time();

    if let Some(e) = csv_error {
        return Err(CliError::failure(format!("writing the requests CSV: {e}")));
    }
    if let Some(w) = csv {
        w.finish()
            .map_err(|e| CliError::failure(format!("writing the requests CSV: {e}")))?;
    }

    let results = report::SimulationResults {
        seed: args.seed,
        device_name: &session.device_name,
        device: session.device.as_ref(),
        workload: &session.workload,
        replay,
        info: &info,
        summary: outcome.summary,
    };
    if let Some(path) = &args.json {
        report::write_json(path, &report::simulation_json(&results))?;
    }
    if !args.quiet && args.json.as_deref() != Some(std::path::Path::new("-")) {
        print!("{}", report::simulation_text(&results));
        let cpu = match cpu {
            Some(cpu) => format!(" ({:.3} s of CPU time)", cpu.as_secs_f64()),
            None => String::new(),
        };
        eprintln!(
            "storsim: simulated {} requests in {:.3} s of wall time{cpu}",
            info.requests_completed,
            wall.as_secs_f64()
        );
    }
    match &info.device_failed {
        Some(failure) => Err(CliError {
            message: format!("{failure} (the results up to it were reported)"),
            status: crate::EXIT_DEVICE_FAILED,
        }),
        None => Ok(()),
    }
}

/// Refuses a device whose model state would not fit in the memory available
/// ([`storsim_sim::check_memory`]), as bad input.
pub(crate) fn check_memory(name: &str, spec: &storsim_config::DeviceSpec) -> Result<(), CliError> {
    storsim_sim::check_memory(name, spec).map_err(CliError::input)
}
