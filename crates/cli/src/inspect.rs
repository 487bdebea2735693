//! `storsim inspect`.

use crate::args::InspectArgs;
use crate::{destination, workload_arg, CliError};
use storsim_sim::WorkloadSource;
use storsim_workload::synthetic::{self, Limit, Load};
use storsim_workload::Workload;

/// The seed of a generator spec that names none: `simulate`'s default `--seed`, so that
/// `inspect` describes the requests a default `simulate` run issues.
const DEFAULT_SEED: u64 = 1;

pub fn run(args: InspectArgs) -> Result<(), CliError> {
    let workload = open(&args)?;
    let name = workload.name.clone();
    let c = storsim_workload::trace::inspect(workload).map_err(CliError::input)?;
    if let Some(path) = &args.json {
        let doc = storsim_output::inspect_json(&name, &c, &destination::command_line());
        destination::write_json(path, &doc)?;
        if path.as_os_str() == "-" {
            return Ok(());
        }
    }
    crate::stdout::say!("{}", storsim_output::inspect_text(&name, &c));
    Ok(())
}

/// The trace file, or the requests a generator spec describes. `inspect` has no device, so a
/// spec must say where its requests fall (`span`, with `offset`), and must end by itself: a
/// closed loop with a `duration` ends only when a device's pace says so.
pub(crate) fn open(args: &InspectArgs) -> Result<Workload, CliError> {
    let text = args.trace.to_string_lossy();
    if !WorkloadSource::is_synthetic(&text) {
        let options = workload_arg::trace_options(&args.options)?;
        return storsim_workload::trace::open(&args.trace, &options).map_err(CliError::input);
    }
    let spec = synthetic::parse(&text).map_err(CliError::input)?;
    let Some(span_bytes) = spec.span_bytes else {
        return Err(CliError::input(format!(
            "inspect {text}: give span=SIZE: inspect has no device for the requests to fill \
             (vdbench profiles, which always fill the device, need `simulate`)"
        )));
    };
    if let (Limit::Duration { .. }, Load::Closed { .. }) = (spec.limit, spec.load) {
        return Err(CliError::input(format!(
            "inspect {text}: a closed loop with a duration ends when a device's pace says so; \
             give requests=N instead"
        )));
    }
    let capacity_bytes = spec
        .offset_bytes
        .checked_add(span_bytes)
        .ok_or_else(|| CliError::input(format!("inspect {text}: offset + span passes 2^64")))?;
    synthetic::build(&spec, capacity_bytes, DEFAULT_SEED).map_err(CliError::input)
}
