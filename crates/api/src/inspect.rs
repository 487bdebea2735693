//! `inspect`: a trace, or the requests a generator spec describes, characterised.

use crate::ApiError;
use storsim_sim::WorkloadSource;
use storsim_workload::synthetic::{self, Limit, Load};
use storsim_workload::trace::TraceOptions;
use storsim_workload::Workload;

/// The seed of a generator spec that names none: `simulate`'s default seed, so that
/// `inspect` describes the requests a default `simulate` run issues.
const DEFAULT_SEED: u64 = 1;

/// The characterisation of `trace` (a trace file read with `options`, or a `synthetic:` spec
/// that gives `span`) as the JSON document `storsim inspect --json` writes, recording the
/// canonical command line [`inspect_command_line`].
pub fn inspect(trace: &str, options: &TraceOptions) -> Result<String, ApiError> {
    let workload = open_for_inspect(trace, options)?;
    let name = workload.name.clone();
    let c =
        storsim_workload::trace::inspect(workload).map_err(|e| ApiError::Input(e.to_string()))?;
    Ok(storsim_output::json::text(&storsim_output::inspect_json(
        &name,
        &c,
        &inspect_command_line(trace, options),
    )))
}

/// `storsim inspect TRACE` with the trace options that differ from their defaults.
pub fn inspect_command_line(trace: &str, options: &TraceOptions) -> Vec<String> {
    let mut line = vec!["storsim".to_string(), "inspect".into(), trace.into()];
    line.extend(storsim_sim::trace_options_args(options));
    line
}

/// The trace file, or the requests a generator spec describes. `inspect` has no device, so a
/// spec must say where its requests fall (`span`, with `offset`), and must end by itself: a
/// closed loop with a `duration` ends only when a device's pace says so.
pub fn open_for_inspect(trace: &str, options: &TraceOptions) -> Result<Workload, ApiError> {
    let input = |e: &dyn std::fmt::Display| ApiError::Input(e.to_string());
    if !WorkloadSource::is_synthetic(trace) {
        return storsim_workload::trace::open(std::path::Path::new(trace), options)
            .map_err(|e| input(&e));
    }
    let spec = synthetic::parse(trace).map_err(|e| input(&e))?;
    let Some(span_bytes) = spec.span_bytes else {
        return Err(ApiError::Input(format!(
            "inspect {trace}: give span=SIZE: inspect has no device for the requests to fill \
             (vdbench profiles, which always fill the device, need `simulate`)"
        )));
    };
    if let (Limit::Duration { .. }, Load::Closed { .. }) = (spec.limit, spec.load) {
        return Err(ApiError::Input(format!(
            "inspect {trace}: a closed loop with a duration ends when a device's pace says so; \
             give requests=N instead"
        )));
    }
    let capacity_bytes = spec
        .offset_bytes
        .checked_add(span_bytes)
        .ok_or_else(|| ApiError::Input(format!("inspect {trace}: offset + span passes 2^64")))?;
    synthetic::build(&spec, capacity_bytes, DEFAULT_SEED).map_err(|e| input(&e))
}
