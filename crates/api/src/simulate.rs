//! `simulate`: a run from its [`SimulateOptions`], to its typed results, its document, the
//! request columns and the series columns.

use crate::ApiError;
use std::path::Path;
use storsim_core::{Completion, Op, SimTime};
use storsim_engine::{CancelToken, CompletionSink};
use storsim_output::{DeviceFacts, FlowResult, RequestsCsv, SimulationResults};
use storsim_sim::{SimulateOptions, Simulated};
use storsim_stats::Series;

/// A finished run: what the simulation gave, the device's facts at the end (its counters and
/// wear, read once) and the seed, from which its documents are made.
pub struct Simulation {
    /// The session, the replay, the outcome and the fairness runs.
    pub simulated: Simulated,
    /// The device's counters and wear after the run.
    pub device: DeviceFacts,
    seed: u64,
}

impl Simulation {
    /// Runs `options`, every completion also handed to `sink` (a requests CSV, request
    /// columns), with the requests CSV into `requests_csv` if given (one line per request,
    /// as `--requests-csv` writes it), `progress` called as the engine says, and `cancel`
    /// stopping the run early.
    pub fn run(
        options: &SimulateOptions,
        requests_csv: Option<&Path>,
        mut also: Option<&mut dyn CompletionSink>,
        progress: &mut dyn FnMut(u64, SimTime),
        cancel: CancelToken,
    ) -> Result<Simulation, ApiError> {
        let sim_error = |e| ApiError::sim(e, Some(options.seed));
        let prepared = storsim_sim::prepare(options).map_err(sim_error)?;
        // The CSV is created once the input is known good, so that a refused run leaves no
        // file behind.
        let flows = prepared.session.flows.len().max(1);
        let mut csv = match requests_csv {
            Some(path) => Some(RequestsCsvSink::create(path, flows)?),
            None => None,
        };
        // Without a CSV to write or columns to fill, no sink: the statistics are collected in
        // any case.
        let mut both;
        let sink = match (csv.as_mut(), also.as_mut()) {
            (Some(csv), Some(also)) => {
                both = |c: &Completion| {
                    csv.completed(c);
                    also.completed(c);
                };
                Some(&mut both as &mut dyn CompletionSink)
            }
            (Some(csv), None) => Some(csv as &mut dyn CompletionSink),
            (None, Some(also)) => Some(&mut **also as &mut dyn CompletionSink),
            (None, None) => None,
        };
        let simulated = prepared.run(sink, progress, cancel).map_err(sim_error)?;
        let session = &simulated.session;
        let device = DeviceFacts::read(&session.device_name, session.device.as_ref());
        if let Some(csv) = csv {
            csv.finish()?;
        }
        Ok(Simulation {
            simulated,
            device,
            seed: options.seed,
        })
    }

    /// The results to report, for a document whose `command_line` is `command_line`.
    pub fn results(&self, command_line: Vec<String>) -> SimulationResults<'_> {
        let Simulated {
            session,
            replay,
            outcome,
            alone,
        } = &self.simulated;
        SimulationResults {
            seed: self.seed,
            command_line,
            device: &self.device,
            workload: &session.workload,
            replay: *replay,
            info: &outcome.info,
            summary: &outcome.summary,
            series: outcome.series.as_ref(),
            flows: session
                .flows
                .iter()
                .zip(&outcome.flows)
                .enumerate()
                .map(|(index, (flow, summary))| FlowResult {
                    spec: &flow.spec,
                    summary,
                    alone: alone
                        .as_ref()
                        .map(|(alone, fairness)| (&alone[index], fairness.slowdowns[index])),
                })
                .collect(),
            fairness: alone.as_ref().map(|(_, f)| f.fairness),
            faults: session.faults.as_ref(),
        }
    }

    /// The JSON document, recording `command_line`.
    pub fn document(&self, command_line: Vec<String>) -> serde_json::Value {
        storsim_output::simulation_json(&self.results(command_line))
    }
}

/// A finished `simulate` run, for programs.
#[derive(Debug)]
pub struct SimulateRun {
    /// The JSON document, exactly as `storsim simulate --json` writes it when given the
    /// options' canonical command line ([`SimulateOptions::command_line`]), which it records.
    pub document: String,
    /// Every completed request in completion order, when asked for.
    pub requests: Option<RequestColumns>,
    /// The run in windows of simulated time (the document's `series`), unless the options
    /// record no series.
    pub series: Option<SeriesColumns>,
    /// Why the device failed during the run (it wore out), if it did: the results are those up
    /// to the failure, as the command reports them before exiting with status 3.
    pub device_failed: Option<String>,
    /// Whether the cancel token stopped the run before its end.
    pub cancelled: bool,
}

/// Runs `options` and returns its document, the time series as columns and, if `requests`,
/// every request as columns; the requests CSV is written into `requests_csv` if given.
pub fn simulate(
    options: &SimulateOptions,
    requests: bool,
    requests_csv: Option<&Path>,
    cancel: &CancelToken,
) -> Result<SimulateRun, ApiError> {
    let mut columns = requests.then(RequestColumns::default);
    let run = Simulation::run(
        options,
        requests_csv,
        columns.as_mut().map(|c| c as &mut dyn CompletionSink),
        &mut |_, _| {},
        cancel.clone(),
    )?;
    let document = storsim_output::json::text(&run.document(options.command_line()));
    let outcome = &run.simulated.outcome;
    Ok(SimulateRun {
        document,
        requests: columns,
        series: outcome.series.as_ref().map(series_columns),
        device_failed: outcome.info.device_failed.clone(),
        cancelled: outcome.info.cancelled,
    })
}

/// The requests CSV as a run's completion sink. A write error does not stop the run: the
/// first one is kept and reported when the run ends, and nothing more is written.
pub struct RequestsCsvSink {
    csv: RequestsCsv<std::io::BufWriter<std::fs::File>>,
    error: Option<std::io::Error>,
}

impl RequestsCsvSink {
    /// Creates the CSV at `path` for a run of `flows` flows (a `flow` column with more than
    /// one).
    pub fn create(path: &Path, flows: usize) -> Result<RequestsCsvSink, ApiError> {
        let file = std::fs::File::create(path)
            .map_err(|e| ApiError::Failure(format!("creating {}: {e}", path.display())))?;
        let file = std::io::BufWriter::with_capacity(1 << 20, file);
        Ok(RequestsCsvSink {
            csv: RequestsCsv::new(file, flows)
                .map_err(|e| ApiError::Failure(format!("writing {}: {e}", path.display())))?,
            error: None,
        })
    }

    /// Flushes the file, or reports the first error writing it.
    pub fn finish(self) -> Result<(), ApiError> {
        let result = match self.error {
            Some(e) => Err(e),
            None => self.csv.finish(),
        };
        result.map_err(|e| ApiError::Failure(format!("writing the requests CSV: {e}")))
    }
}

impl CompletionSink for RequestsCsvSink {
    fn completed(&mut self, completion: &Completion) {
        if self.error.is_none() {
            if let Err(e) = self.csv.write(completion) {
                self.error = Some(e);
            }
        }
    }
}

/// Completed requests as columns, one entry per request, in completion order: the columns of
/// `simulate --requests-csv`, and the request's flow.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct RequestColumns {
    /// The request's id (its position in the workload).
    pub id: Vec<u64>,
    /// The operation, as its index in [`OP_NAMES`].
    pub op: Vec<u8>,
    /// The workload flow the request belongs to (0 for a workload of one flow).
    pub flow: Vec<u16>,
    /// The first byte addressed.
    pub offset_bytes: Vec<u64>,
    /// The length in bytes.
    pub len_bytes: Vec<u64>,
    /// When the request arrived at the host.
    pub arrival_ns: Vec<u64>,
    /// When the device began serving it.
    pub service_start_ns: Vec<u64>,
    /// When it completed.
    pub finish_ns: Vec<u64>,
}

/// The names of the operations in [`RequestColumns::op`], by index.
pub const OP_NAMES: [&str; 4] = ["read", "write", "trim", "flush"];

impl RequestColumns {
    fn push(&mut self, c: &Completion) {
        let r = &c.request;
        self.id.push(r.id);
        self.op.push(op_index(r.op));
        self.flow.push(r.flow);
        self.offset_bytes.push(r.offset_bytes);
        self.len_bytes.push(r.len_bytes);
        self.arrival_ns.push(r.arrival.as_ns());
        self.service_start_ns.push(c.service_start.as_ns());
        self.finish_ns.push(c.finish.as_ns());
    }
}

fn op_index(op: Op) -> u8 {
    let index = Op::ALL
        .iter()
        .position(|o| *o == op)
        .expect("Op::ALL lists every operation");
    debug_assert_eq!(OP_NAMES[index], op.name());
    index as u8
}

impl CompletionSink for RequestColumns {
    fn completed(&mut self, completion: &Completion) {
        self.push(completion);
    }
}

/// A run's time series as named columns of equal length, one entry per window: the window's
/// start and end (`window_start_ns`, `window_end_ns`), each operation's figures
/// (`all.iops`, `read.latency_p99_ns`, ...), the queue depths (`host_queue_mean`,
/// `device_queue_mean`) and each device counter at the window's end (`device.NAME`). A
/// figure a window lacks (no completions, a counter not yet there) is NaN.
pub type SeriesColumns = Vec<(String, Vec<f64>)>;

fn series_columns(s: &Series) -> SeriesColumns {
    let windows = s.windows();
    let start: Vec<f64> = (0..windows)
        .map(|i| (i as u64 * s.window_ns) as f64)
        .collect();
    let end: Vec<f64> = (0..windows)
        .map(|i| ((i as u64 + 1) * s.window_ns).min(s.end_ns) as f64)
        .collect();
    let mut columns = vec![
        ("window_start_ns".to_string(), start),
        ("window_end_ns".to_string(), end),
    ];
    let whole = |v: &[u64]| v.iter().map(|&x| x as f64).collect::<Vec<f64>>();
    let maybe = |v: &[Option<u64>]| {
        v.iter()
            .map(|x| x.map_or(f64::NAN, |x| x as f64))
            .collect::<Vec<f64>>()
    };
    for o in &s.ops {
        let op = o.op.map_or("all", |op| op.name());
        let mean = o.latency_mean_ns.iter().map(|x| x.unwrap_or(f64::NAN));
        columns.extend([
            (format!("{op}.requests"), whole(&o.requests)),
            (format!("{op}.bytes"), whole(&o.bytes)),
            (format!("{op}.iops"), o.iops.clone()),
            (
                format!("{op}.bandwidth_bytes_per_s"),
                o.bandwidth_bytes_per_s.clone(),
            ),
            (format!("{op}.latency_mean_ns"), mean.collect()),
            (format!("{op}.latency_p50_ns"), maybe(&o.latency_p50_ns)),
            (format!("{op}.latency_p99_ns"), maybe(&o.latency_p99_ns)),
            (format!("{op}.latency_p999_ns"), maybe(&o.latency_p999_ns)),
            (format!("{op}.latency_max_ns"), maybe(&o.latency_max_ns)),
        ]);
    }
    columns.push(("host_queue_mean".to_string(), s.host_queue_mean.clone()));
    columns.push(("device_queue_mean".to_string(), s.device_queue_mean.clone()));
    for (name, values) in &s.counters {
        let values = values.iter().map(|v| v.unwrap_or(f64::NAN)).collect();
        columns.push((format!("device.{name}"), values));
    }
    columns
}
