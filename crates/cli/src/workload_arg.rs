//! Turning the `--workload` argument and trace options into a [`WorkloadSource`].

use crate::args::{Switch, TraceArgs};
use crate::CliError;
use std::path::PathBuf;
use storsim_sim::WorkloadSource;
use storsim_workload::trace::{BlkparseEvent, DeviceSelection, TraceFormat, TraceOptions};

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

/// What `--workload` names: a generator spec, or a trace file read with the trace options.
pub fn source(arg: &str, args: &TraceArgs) -> Result<WorkloadSource, CliError> {
    if WorkloadSource::is_synthetic(arg) {
        return Ok(WorkloadSource::Synthetic(arg.to_string()));
    }
    Ok(WorkloadSource::Trace {
        path: PathBuf::from(arg),
        options: trace_options(args)?,
    })
}
