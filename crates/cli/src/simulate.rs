//! `storsim simulate`.

use crate::args::{RefusedArg, ReplayArg, SimulateArgs};
use crate::progress::Progress;
use crate::report::{self, RequestsCsv};
use crate::{workload_arg, CliError};
use storsim_core::Completion;
use storsim_engine::{EngineOptions, OutOfRange, Refused, Replay};
use storsim_stats::Collector;

pub fn run(args: SimulateArgs) -> Result<(), CliError> {
    let device_desc = storsim_config::load_device(&args.device).map_err(CliError::input)?;
    check_memory(&device_desc.name, &device_desc.spec)?;
    let mut device = device_desc
        .spec
        .build()
        .map_err(|e| CliError::input(format!("{}: {e}", device_desc.name)))?;
    let mut workload = workload_arg::open(
        &args.workload,
        &args.trace,
        device.capacity_bytes(),
        args.seed,
    )?;

    let replay = match (args.replay, args.iodepth) {
        (None, None) => Replay::natural(workload.pacing),
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
        duration_ns: workload.duration_ns,
    };

    let mut collector = Collector::new();
    let mut csv = match &args.requests_csv {
        Some(path) => Some(RequestsCsv::create(path)?),
        None => None,
    };
    let mut csv_error: Option<std::io::Error> = None;
    let mut sink = |c: &Completion| {
        collector.record(c);
        if let Some(w) = csv.as_mut() {
            if csv_error.is_none() {
                if let Err(e) = w.write(c) {
                    csv_error = Some(e);
                }
            }
        }
    };
    let mut progress = Progress::new(args.quiet, args.max_requests);
    let info = storsim_engine::run(
        &mut device,
        &mut workload,
        &options,
        &mut sink,
        &mut |n, t| progress.update(n, t),
    )
    .map_err(CliError::input)?;
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
        device_name: &device_desc.name,
        device: device.as_ref(),
        workload: &workload,
        replay,
        info: &info,
        summary: collector.summary(),
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

/// Refuses a device whose model state would not fit in the memory available, with a message
/// that says so, instead of letting the allocation abort the process.
pub(crate) fn check_memory(name: &str, spec: &storsim_config::DeviceSpec) -> Result<(), CliError> {
    let (Some(need), Some(available)) = (spec.state_bytes_bound(), mem_available_bytes()) else {
        return Ok(());
    };
    if need <= available {
        return Ok(());
    }
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    Err(CliError::input(format!(
        "{name}: the model's state may need up to {:.1} GiB ({} bytes for each physical page) \
         but {:.1} GiB of memory is available; use fewer blocks or larger pages",
        gib(need),
        storsim_config::SSD_STATE_BYTES_PER_PAGE,
        gib(available)
    )))
}

/// `MemAvailable` from /proc/meminfo, where there is one.
fn mem_available_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}
