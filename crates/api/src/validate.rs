//! `validate`: a device model against measured response times, DiskSim's validation traces
//! ([`validate_disksim`]) or any trace that carries them ([`validate_trace`]), to a typed
//! [`Validation`] whose documents are the command's.

use crate::ApiError;
use serde_json::Value;
use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use storsim_config::LoadedDevice;
use storsim_core::{Completion, Op};
use storsim_engine::{EngineOptions, OutOfRange, Replay, RunInfo};
use storsim_output::{DeviceFacts, TraceDetail, ValidationResults};
use storsim_sim::{ReplayChoice, Session, WorkloadSource};
use storsim_stats::Demerit;
use storsim_workload::trace::{
    measured_response_times, validate_measured_access_us, TraceFormat, TraceOptions,
};

/// `storsim validate disksim`: a device replayed on a DiskSim validate trace.
#[derive(Clone, Debug, PartialEq)]
pub struct ValidateDisksimOptions {
    /// A preset, a device file, or a DiskSim `.parv` file imported on the way.
    pub device: String,
    /// With a `.parv` device: DiskSim parameter overrides, each `COMPONENT:PARAMETER=VALUE`
    /// as DiskSim's command line gives them; any other device refuses them.
    pub disksim_overrides: Vec<String>,
    /// The trace in DiskSim's validate format.
    pub trace: PathBuf,
}

/// `storsim validate trace`: a device replayed on a trace with measured response times.
#[derive(Clone, Debug, PartialEq)]
pub struct ValidateTraceOptions {
    /// A preset or a device file.
    pub device: String,
    /// Device-file keys set on top of the device, each `KEY=VALUE` with a TOML value.
    pub overrides: Vec<String>,
    /// The trace.
    pub trace: PathBuf,
    /// How to read it.
    pub trace_options: TraceOptions,
    /// How to replay it; `None` for the trace's own pacing.
    pub replay: Option<ReplayChoice>,
    /// Requests outstanding for a closed-loop replay.
    pub iodepth: Option<u32>,
    /// Fold requests past the end of the device back into it instead of stopping.
    pub wrap: bool,
}

/// What `validate trace` adds to a validation: the replay, each compared request's
/// operation and position, and the counts of what was not compared.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceValidation {
    /// The trace format's name.
    pub format: &'static str,
    /// How the trace was replayed.
    pub replay: Replay,
    /// Each compared request's operation.
    pub ops: Vec<Op>,
    /// Each compared request's position in the trace (its line).
    pub positions: Vec<u64>,
    /// Requests the device completed.
    pub requests_simulated: u64,
    /// Simulated requests the trace measured no time for.
    pub requests_unmeasured: u64,
    /// Completions in the trace that match no request in it.
    pub completions_unmatched: u64,
    /// Reads and writes of zero bytes: nothing to replay or compare.
    pub records_empty: u64,
    /// Malformed records skipped.
    pub records_skipped: u64,
    /// Well-formed records that are not block requests.
    pub records_ignored: u64,
    /// Requests folded back into the device.
    pub requests_wrapped: u64,
}

/// A finished validation: the model's response times beside the measured ones, in trace
/// order, and the device's facts after the replay.
pub struct Validation {
    /// The device's counters and wear after the replay.
    pub device: DeviceFacts,
    /// The trace replayed.
    pub trace: PathBuf,
    /// Each compared request's simulated response time, in ms.
    pub simulated_ms: Vec<f64>,
    /// Each compared request's measured response time, in ms.
    pub measured_ms: Vec<f64>,
    /// DiskSim's demerit and the means.
    pub demerit: Demerit,
    /// `validate trace`'s own facts; `None` for `validate disksim`, whose document is older.
    pub detail: Option<TraceValidation>,
}

impl Validation {
    /// The results as the output layer takes them, for documents whose `command_line` is
    /// `command_line`.
    pub fn results<'a>(&'a self, command_line: &'a [String]) -> ValidationResults<'a> {
        ValidationResults {
            command_line,
            device: &self.device,
            trace: &self.trace,
            simulated_ms: &self.simulated_ms,
            measured_ms: &self.measured_ms,
            demerit: self.demerit,
            trace_detail: self.detail.as_ref().map(|d| TraceDetail {
                format: d.format,
                replay: d.replay,
                ops: &d.ops,
                positions: &d.positions,
                requests_simulated: d.requests_simulated,
                requests_unmeasured: d.requests_unmeasured,
                completions_unmatched: d.completions_unmatched,
                records_empty: d.records_empty,
                records_skipped: d.records_skipped,
                records_ignored: d.records_ignored,
                requests_wrapped: d.requests_wrapped,
            }),
        }
    }

    /// The JSON document `--json` writes.
    pub fn document(&self, command_line: &[String]) -> Value {
        storsim_output::validation_json(&self.results(command_line))
    }
}

/// The device `validate disksim` replays: a preset or device file, or a DiskSim `.parv` file
/// imported with its overrides (which only a `.parv` file takes: they name DiskSim's
/// parameters), named with the overrides it was given.
fn disksim_device(options: &ValidateDisksimOptions) -> Result<LoadedDevice, ApiError> {
    let parv = Path::new(&options.device);
    if parv.extension().is_none_or(|e| e != "parv") {
        if !options.disksim_overrides.is_empty() {
            return Err(ApiError::Input(format!(
                "--set names DiskSim parameters, which only a .parv device takes; {} is a \
                 storsim device (import it with `storsim import disksim --set ...` instead)",
                options.device
            )));
        }
        return storsim_config::load_device(&options.device)
            .map_err(|e| ApiError::Input(e.to_string()));
    }
    let drive = crate::import::import(parv, &options.disksim_overrides)?;
    let mut name = options.device.clone();
    if !drive.overrides.is_empty() {
        name = format!("{name} [{}]", drive.overrides.join(", "));
    }
    let spec = storsim_config::parse_device_toml(&drive.device_toml, &name)
        .map_err(|e| ApiError::Input(e.to_string()))?;
    Ok(LoadedDevice { name, spec })
}

/// `storsim validate disksim`: replays the trace closed loop with one request outstanding and
/// the think times it gives, as DiskSim's validate mode does, and compares.
pub fn validate_disksim(options: &ValidateDisksimOptions) -> Result<Validation, ApiError> {
    let input = |e: &dyn std::fmt::Display| ApiError::Input(e.to_string());
    let source = WorkloadSource::Trace {
        path: options.trace.clone(),
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
    } = Session::new(disksim_device(options)?, &source, 0).map_err(|e| ApiError::sim(e, None))?;
    let measured_ms: Vec<f64> = validate_measured_access_us(&options.trace)
        .map_err(|e| input(&e))?
        .map(|us| us.map(|us| us / 1000.0))
        .collect::<Result<_, _>>()
        .map_err(|e| input(&e))?;

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
        return Err(ApiError::Input(format!(
            "{}: {} requests were simulated but the trace measured {} (empty requests are \
             dropped: {})",
            options.trace.display(),
            simulated_ms.len(),
            measured_ms.len(),
            replayed.records_empty
        )));
    }
    let Some(demerit) = storsim_stats::disksim_demerit(&simulated_ms, &measured_ms) else {
        return Err(ApiError::Input(format!(
            "{}: the trace holds no requests",
            options.trace.display()
        )));
    };
    Ok(Validation {
        device: DeviceFacts::read(&device_name, device.as_ref()),
        trace: options.trace.clone(),
        simulated_ms,
        measured_ms,
        demerit,
        detail: None,
    })
}

/// `storsim validate trace`: replays a trace with measured response times and compares each
/// request the trace measured.
pub fn validate_trace(options: &ValidateTraceOptions) -> Result<Validation, ApiError> {
    // The measured times first: a trace that measures nothing is refused before any run.
    let measured = measured_response_times(&options.trace, &options.trace_options)
        .map_err(|e| ApiError::Input(e.to_string()))?;
    let source = WorkloadSource::Trace {
        path: options.trace.clone(),
        options: options.trace_options.clone(),
    };
    // A trace names no seed and the models draw no random numbers of their own.
    let Session {
        device_name,
        mut device,
        mut workload,
        ..
    } = Session::open_with(&options.device, &options.overrides, &source, 0)
        .map_err(|e| ApiError::sim(e, None))?;
    let format = workload.format.unwrap_or("trace");
    let engine_options = EngineOptions {
        replay: storsim_sim::replay(options.replay, options.iodepth, 1.0, workload.pacing)
            .map_err(|e| ApiError::Input(e.to_string()))?,
        out_of_range: if options.wrap {
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
        return Err(ApiError::Input(format!(
            "{}: none of the {} simulated requests has a measured response time in the trace",
            options.trace.display(),
            replayed.requests.len()
        )));
    };
    Ok(Validation {
        device: DeviceFacts::read(&device_name, device.as_ref()),
        trace: options.trace.clone(),
        simulated_ms,
        measured_ms,
        demerit,
        detail: Some(TraceValidation {
            format,
            replay: engine_options.replay,
            ops,
            positions,
            requests_simulated: replayed.requests.len() as u64,
            requests_unmeasured: unmeasured,
            completions_unmatched: measured.unmatched_completions,
            records_empty: replayed.records_empty,
            records_skipped: workload.skipped.get(),
            records_ignored: workload.ignored.get(),
            requests_wrapped: replayed.info.wrapped_requests,
        }),
    })
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
) -> Result<Replayed, ApiError> {
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
        .map_err(|e| ApiError::engine(e, None))?;
    if let Some(failure) = &info.device_failed {
        return Err(ApiError::Input(format!(
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
