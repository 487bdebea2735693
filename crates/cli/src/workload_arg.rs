//! Turning the `--workload` or `--flow` arguments and trace options into a [`WorkloadSource`].

use crate::args::{SimulateArgs, Switch, TraceArgs};
use crate::CliError;
use std::path::Path;
use storsim_sim::WorkloadSource;
use storsim_workload::flows;
use storsim_workload::trace::{
    self, BlkparseEvent, DeviceSelection, TraceFormat, TraceOptions, WorkloadFile,
};

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

/// What a `simulate` command runs: its `--flow` arguments as a workload of several flows, or
/// its `--workload`, a flow file read as one.
pub fn simulate_source(args: &SimulateArgs) -> Result<WorkloadSource, CliError> {
    let options = trace_options(&args.trace)?;
    if !args.flow.is_empty() {
        let specs = args
            .flow
            .iter()
            .enumerate()
            .map(|(index, text)| flows::parse_arg(index, text))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| CliError::input(e.to_string()))?;
        return Ok(WorkloadSource::Flows {
            name: args.flow.join(" "),
            flows: specs,
            options,
        });
    }
    let arg = args
        .workload
        .as_deref()
        .ok_or_else(|| CliError::input("--workload or --flow is required"))?;
    if WorkloadSource::is_synthetic(arg) {
        return Ok(WorkloadSource::Synthetic(arg.to_string()));
    }
    // One look at the file tells a flow file from a trace and finds the trace's format, which
    // the run then takes as given rather than looking again.
    let path = Path::new(arg);
    match trace::identify(path, options.format).map_err(CliError::input)? {
        WorkloadFile::Flows => {
            let specs = flows::read_file(path).map_err(|e| CliError::input(e.to_string()))?;
            Ok(WorkloadSource::Flows {
                name: arg.to_string(),
                flows: specs,
                options,
            })
        }
        WorkloadFile::Trace(format) => Ok(WorkloadSource::Trace {
            path: path.to_path_buf(),
            options: TraceOptions {
                format: Some(format),
                ..options
            },
        }),
    }
}

/// Checks what can be checked of a workload before running it: a generator spec parses, a
/// trace file exists; each flow's, for a workload of several. The error says what is wrong.
pub fn check_source(source: &WorkloadSource) -> Result<(), String> {
    let check_one = |workload: &str| -> Result<(), String> {
        if workload.starts_with("synthetic:") {
            storsim_workload::synthetic::parse(workload).map_err(|e| e.to_string())?;
        } else if !WorkloadSource::is_synthetic(workload) {
            std::fs::metadata(workload).map_err(|e| format!("{workload}: {e}"))?;
        }
        Ok(())
    };
    match source {
        WorkloadSource::Synthetic(text) => check_one(text),
        WorkloadSource::Trace { path, .. } => {
            std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
            Ok(())
        }
        WorkloadSource::Flows { flows, .. } => {
            flows.iter().try_for_each(|flow| check_one(&flow.workload))
        }
    }
}
