//! `storsim validate`: a device model against measured response times, DiskSim's validation
//! traces (`validate disksim`) or any trace that carries them (`validate trace`).

use crate::args::{ValidateDisksimArgs, ValidateTraceArgs};
use crate::{destination, CliError};
use std::cell::{Cell, RefCell};
use std::path::Path;
use std::rc::Rc;
use storsim_config::disksim::import::{device_toml, import_parv_with};
use storsim_config::LoadedDevice;
use storsim_core::{Completion, Op};
use storsim_engine::{EngineOptions, OutOfRange, Replay, RunInfo};
use storsim_output::{DeviceFacts, TraceDetail, ValidationResults};
use storsim_sim::{Session, WorkloadSource};
use storsim_workload::trace::{
    measured_response_times, validate_measured_access_us, TraceFormat, TraceOptions,
};

/// The device to validate: a preset or device file, or a DiskSim `.parv` file imported with
/// the `--set` overrides (which only a `.parv` file takes: they name DiskSim's parameters).
fn load_device(args: &ValidateDisksimArgs) -> Result<LoadedDevice, CliError> {
    let parv = std::path::Path::new(&args.device);
    if parv.extension().is_none_or(|e| e != "parv") {
        if !args.set.is_empty() {
            return Err(CliError::input(format!(
                "--set names DiskSim parameters, which only a .parv device takes; {} is a \
                 storsim device (import it with `storsim import disksim --set ...` instead)",
                args.device
            )));
        }
        return storsim_config::load_device(&args.device).map_err(CliError::input);
    }
    let overrides = crate::import::overrides(&args.set)?;
    let drive = import_parv_with(parv, &overrides).map_err(CliError::input)?;
    let text = device_toml(&drive).map_err(|e| CliError::input(format!("{}: {e}", args.device)))?;
    let mut name = args.device.clone();
    if !overrides.is_empty() {
        let listed: Vec<String> = overrides.iter().map(ToString::to_string).collect();
        name = format!("{name} [{}]", listed.join(", "));
    }
    let spec = storsim_config::parse_device_toml(&text, &name).map_err(CliError::input)?;
    Ok(LoadedDevice { name, spec })
}

pub fn disksim(args: ValidateDisksimArgs) -> Result<(), CliError> {
    let source = WorkloadSource::Trace {
        path: args.trace.clone(),
        options: TraceOptions {
            format: Some(TraceFormat::named("validate")),
            ..TraceOptions::default()
        },
    };
    // The trace names no seed and the models draw no random numbers of their own.
    let Session {
        device_name,
        mut device,
        mut workload,
        ..
    } = Session::new(load_device(&args)?, &source, 0).map_err(|e| CliError::sim(e, None))?;
    let measured_ms: Vec<f64> = validate_measured_access_us(&args.trace)
        .map_err(CliError::input)?
        .map(|us| us.map(|us| us / 1000.0))
        .collect::<Result<_, _>>()
        .map_err(CliError::input)?;

    // The trace's own pacing: closed loop, one request outstanding, think times from the file.
    let engine_options = EngineOptions {
        replay: Replay::natural(workload.pacing),
        ..EngineOptions::default()
    };
    let replayed = replay(
        &device_name,
        device.as_mut(),
        &mut workload,
        &engine_options,
    )?;
    let simulated_ms: Vec<f64> = replayed.requests.iter().map(|r| r.simulated_ms).collect();
    if simulated_ms.len() != measured_ms.len() {
        return Err(CliError::input(format!(
            "{}: {} requests were simulated but the trace measured {} (empty requests are \
             dropped: {})",
            args.trace.display(),
            simulated_ms.len(),
            measured_ms.len(),
            replayed.records_empty
        )));
    }
    let Some(demerit) = storsim_stats::disksim_demerit(&simulated_ms, &measured_ms) else {
        return Err(CliError::input(format!(
            "{}: the trace holds no requests",
            args.trace.display()
        )));
    };
    let results = ValidationResults {
        command_line: &destination::command_line(),
        device: &DeviceFacts::read(&device_name, device.as_ref()),
        trace: &args.trace,
        simulated_ms: &simulated_ms,
        measured_ms: &measured_ms,
        demerit,
        trace_detail: None,
    };
    write_results(
        &results,
        args.requests_csv.as_deref(),
        args.json.as_deref(),
        None,
    )?;
    Ok(())
}

/// `storsim validate trace`: replays a trace with measured response times and compares.
pub fn trace(args: ValidateTraceArgs) -> Result<(), CliError> {
    let options = crate::workload_arg::trace_options(&args.trace_options)?;
    // The measured times first: a trace that measures nothing is refused before any run.
    let measured = measured_response_times(&args.trace, &options).map_err(CliError::input)?;
    let source = WorkloadSource::Trace {
        path: args.trace.clone(),
        options,
    };
    // A trace names no seed and the models draw no random numbers of their own.
    let Session {
        device_name,
        mut device,
        mut workload,
        ..
    } = Session::open_with(&args.device, &args.set, &source, 0)
        .map_err(|e| CliError::sim(e, None))?;
    let format = workload.format.unwrap_or("trace");
    let engine_options = EngineOptions {
        replay: storsim_sim::replay(
            args.replay.map(crate::args::ReplayArg::choice),
            args.iodepth,
            1.0,
            workload.pacing,
        )
        .map_err(CliError::input)?,
        out_of_range: if args.wrap {
            OutOfRange::Wrap
        } else {
            OutOfRange::Error
        },
        ..EngineOptions::default()
    };
    let replayed = replay(
        &device_name,
        device.as_mut(),
        &mut workload,
        &engine_options,
    )?;
    let (mut simulated_ms, mut measured_ms, mut ops, mut positions) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut unmeasured = 0u64;
    for r in &replayed.requests {
        match measured.response_ns(r.position) {
            Some(ns) => {
                simulated_ms.push(r.simulated_ms);
                measured_ms.push(ns as f64 / 1e6);
                ops.push(r.op);
                positions.push(r.position);
            }
            None => unmeasured += 1,
        }
    }
    let Some(demerit) = storsim_stats::disksim_demerit(&simulated_ms, &measured_ms) else {
        return Err(CliError::input(format!(
            "{}: none of the {} simulated requests has a measured response time in the trace",
            args.trace.display(),
            replayed.requests.len()
        )));
    };
    let results = ValidationResults {
        command_line: &destination::command_line(),
        device: &DeviceFacts::read(&device_name, device.as_ref()),
        trace: &args.trace,
        simulated_ms: &simulated_ms,
        measured_ms: &measured_ms,
        demerit,
        trace_detail: Some(TraceDetail {
            format,
            replay: engine_options.replay,
            ops: &ops,
            positions: &positions,
            requests_simulated: replayed.requests.len() as u64,
            requests_unmeasured: unmeasured,
            completions_unmatched: measured.unmatched_completions,
            records_empty: replayed.records_empty,
            records_skipped: workload.skipped.get(),
            records_ignored: workload.ignored.get(),
            requests_wrapped: replayed.info.wrapped_requests,
        }),
    };
    write_results(
        &results,
        args.requests_csv.as_deref(),
        args.json.as_deref(),
        args.report.as_deref(),
    )
}

/// Writes a validation's outputs where its options say: the per-request CSV, the JSON, the
/// HTML page, and the text unless the JSON goes to standard output.
fn write_results(
    results: &ValidationResults,
    csv: Option<&Path>,
    json: Option<&Path>,
    page: Option<&Path>,
) -> Result<(), CliError> {
    if let Some(path) = csv {
        let failed = |e| CliError::failure(format!("writing {}: {e}", path.display()));
        storsim_output::write_validation_csv(&mut destination::create(path)?, results)
            .map_err(failed)?;
    }
    if json.is_some() || page.is_some() {
        let doc = storsim_output::validation_json(results);
        if let Some(path) = json {
            destination::write_json(path, &doc)?;
        }
        if let Some(out) = page {
            let name = json.unwrap_or(Path::new(""));
            crate::report_html::write_simulation(name, doc, Some(out), None)?;
        }
    }
    if json != Some(Path::new("-")) {
        crate::stdout::say!("{}", storsim_output::validation_text(results));
    }
    Ok(())
}

/// One replayed request: where its record is in the trace, what it was, how long it took.
struct Simulated {
    /// The record's position (its line in a text trace).
    position: u64,
    op: Op,
    /// Completion minus arrival, in ms.
    simulated_ms: f64,
}

/// A validation's replay: every request in trace order with its simulated response time.
struct Replayed {
    requests: Vec<Simulated>,
    /// Reads and writes of zero bytes, left out: there is nothing to replay or compare.
    records_empty: u64,
    info: RunInfo,
}

/// Replays `workload` on `device`, keeping each request's record position and operation beside
/// its simulated response time. The engine numbers requests in the order it takes records, so
/// the records are noted as they are taken; empty reads and writes, which the engine would drop
/// without a number, are left out here so that the numbers and the notes stay aligned.
fn replay(
    device_name: &str,
    device: &mut dyn storsim_core::Device,
    workload: &mut storsim_workload::Workload,
    options: &EngineOptions,
) -> Result<Replayed, CliError> {
    let taken: Rc<RefCell<Vec<(u64, Op)>>> = Rc::default();
    let empty: Rc<Cell<u64>> = Rc::default();
    let records = std::mem::replace(&mut workload.records, Box::new(std::iter::empty()));
    let (note, count_empty) = (taken.clone(), empty.clone());
    workload.records = Box::new(records.filter(move |item| match item {
        Ok(r) if r.len_bytes == 0 && matches!(r.op, Op::Read | Op::Write) => {
            count_empty.set(count_empty.get() + 1);
            false
        }
        Ok(r) => {
            note.borrow_mut().push((r.origin, r.op));
            true
        }
        Err(_) => true,
    }));
    let mut completions: Vec<(u64, f64)> = Vec::new();
    let mut sink = |c: &Completion| {
        completions.push((c.request.id, c.latency().as_ns() as f64 / 1e6));
    };
    let info = storsim_engine::run(device, workload, options, &mut sink, &mut |_, _| {})
        .map_err(|e| CliError::engine(e, None))?;
    if let Some(failure) = &info.device_failed {
        return Err(CliError::input(format!(
            "{device_name}: the device failed during validation: {failure}"
        )));
    }
    // Completions come in the device's order; the request numbers put them in trace order.
    completions.sort_unstable_by_key(|&(id, _)| id);
    let taken = taken.borrow();
    let requests = completions
        .into_iter()
        .map(|(id, simulated_ms)| {
            let (position, op) = taken[id as usize];
            Simulated {
                position,
                op,
                simulated_ms,
            }
        })
        .collect();
    Ok(Replayed {
        requests,
        records_empty: empty.get(),
        info,
    })
}
