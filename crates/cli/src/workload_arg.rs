//! Turning the `--workload` argument and trace options into a [`Workload`].

use crate::args::{Switch, TraceArgs};
use crate::CliError;
use std::path::Path;
use storsim_workload::trace::{self, BlkparseEvent, DeviceSelection, TraceFormat, TraceOptions};
use storsim_workload::{synthetic, Workload};

/// True when the argument is a generator spec rather than a file.
pub fn is_synthetic(arg: &str) -> bool {
    arg.starts_with("synthetic:") || arg.starts_with("vdbench:")
}

pub fn trace_options(args: &TraceArgs) -> Result<TraceOptions, CliError> {
    let format = match &args.format {
        None => None,
        Some(name) => Some(TraceFormat::from_name(name).ok_or_else(|| {
            let known: Vec<&str> = TraceFormat::all().map(TraceFormat::name).collect();
            CliError::input(format!(
                "--format: unknown trace format '{name}' (known: {})",
                known.join(", ")
            ))
        })?),
    };
    let devices = match args.trace_devices.as_str() {
        "concat" => DeviceSelection::Concat,
        "overlay" => DeviceSelection::Overlay,
        n => DeviceSelection::Only(n.parse().map_err(|_| {
            CliError::input(format!(
                "--trace-devices: expected concat, overlay or a device number, got '{n}'"
            ))
        })?),
    };
    let blkparse_event = match args.blkparse_event.as_str() {
        "D" | "d" => BlkparseEvent::Dispatch,
        "Q" | "q" => BlkparseEvent::Queue,
        other => {
            return Err(CliError::input(format!(
                "--blkparse-event: expected D or Q, got '{other}'"
            )))
        }
    };
    Ok(TraceOptions {
        format,
        skip_bad: args.skip_bad,
        devices,
        blkparse_event,
        parse_thread: args.parse_thread == Switch::On,
    })
}

/// Opens a trace file or builds a synthetic workload for a device of `capacity_bytes`.
pub fn open(
    arg: &str,
    args: &TraceArgs,
    capacity_bytes: u64,
    seed: u64,
) -> Result<Workload, CliError> {
    if is_synthetic(arg) {
        let spec = synthetic::parse(arg).map_err(CliError::input)?;
        return synthetic::build(&spec, capacity_bytes, seed).map_err(CliError::input);
    }
    let options = trace_options(args)?;
    trace::open(Path::new(arg), &options).map_err(CliError::input)
}
