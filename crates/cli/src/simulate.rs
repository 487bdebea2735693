//! `storsim simulate`: the command line around `storsim_sim`'s [`Session`], which loads the
//! device, opens the workload and runs it; here are the options, the progress line, the
//! requests CSV and the reports.

use crate::args::{PreconditionArg, RefusedArg, ReplayArg, SimulateArgs};
use crate::progress::Progress;
use crate::{destination, interrupt, report_html, workload_arg, CliError};
use std::path::Path;
use std::time::Duration;
use storsim_core::Completion;
use storsim_engine::{CancelToken, CompletionSink, Refused};
use storsim_output::{DeviceFacts, FlowResult, RequestsCsv, SimulationResults};
use storsim_sim::{DeviceChoice, OptionError, SimulateOptions, Simulated, WorkloadChoice};

/// Runs `storsim simulate`: the run ([`execute`]), the reports, and the exit status of a
/// device that failed mid-run or of a run stopped with Ctrl-C (the reports then hold the
/// requests that completed).
pub fn run(args: SimulateArgs) -> Result<(), CliError> {
    // First, so that Ctrl-C during a long preconditioning or trace scan still ends the
    // process at once (the engine only looks at the token once the run has started).
    let stop = CancelToken::from_flag(interrupt::stop_flag()?);
    let options = options(&args)?;
    let done = execute(&options, args.requests_csv.as_deref(), stop, !args.quiet)?;
    let info = &done.simulated.outcome.info;
    let results = done.results(destination::command_line());
    write_reports(&args, &results, done.wall, done.cpu)?;
    if let Some(failure) = &info.device_failed {
        return Err(CliError {
            message: format!("{failure} (the results up to it were reported)"),
            status: crate::EXIT_DEVICE_FAILED,
        });
    }
    if info.cancelled {
        return Err(CliError {
            message: format!(
                "interrupted after {} requests: the results up to there were reported",
                info.requests_completed
            ),
            status: interrupt::EXIT_INTERRUPTED,
        });
    }
    Ok(())
}

/// A finished simulate run before its reports: the run, the device's facts at the end (its
/// counters and wear, read once), its seed, and its wall and CPU time.
pub(crate) struct Done {
    pub simulated: Simulated,
    device: DeviceFacts,
    seed: u64,
    wall: Duration,
    cpu: Option<Duration>,
}

impl Done {
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
}

/// The run `args` describe, as the library takes it.
pub(crate) fn options(args: &SimulateArgs) -> Result<SimulateOptions, CliError> {
    let workload = match &args.workload {
        _ if !args.flow.is_empty() => WorkloadChoice::Flows(args.flow.clone()),
        Some(name) => WorkloadChoice::Named(name.clone()),
        None => return Err(CliError::input(OptionError::NoWorkload)),
    };
    let mut options = SimulateOptions::new(
        DeviceChoice {
            name: args.device.clone(),
            overrides: args.set.clone(),
            precondition: args.precondition.map(PreconditionArg::mode),
        },
        workload,
    );
    options.trace = workload_arg::trace_options(&args.trace)?;
    options.seed = args.seed;
    options.replay = args.replay.map(ReplayArg::choice);
    options.iodepth = args.iodepth;
    options.time_scale = args.time_scale;
    options.wrap = args.wrap;
    options.on_refused = match args.on_refused {
        RefusedArg::Stop => Refused::Stop,
        RefusedArg::Count => Refused::Count,
    };
    options.max_requests = args.max_requests;
    options.retries = args.retries;
    options.retry_delay_ns = args.retry_delay;
    options.latency_includes_failed = args.latency_includes_failed;
    options.window = args.window.0;
    options.fairness = args.fairness;
    options.jobs = args.jobs;
    Ok(options)
}

/// Runs `options`, with the requests CSV into `requests_csv` if given and the progress line
/// if `progress`; `stop` ends the run early.
pub(crate) fn execute(
    options: &SimulateOptions,
    requests_csv: Option<&Path>,
    stop: CancelToken,
    progress: bool,
) -> Result<Done, CliError> {
    execute_into(options, requests_csv, stop, progress, None)
}

/// [`execute`], also handing every completion to `also` (the library's request columns).
pub(crate) fn execute_into(
    options: &SimulateOptions,
    requests_csv: Option<&Path>,
    stop: CancelToken,
    progress: bool,
    mut also: Option<&mut dyn CompletionSink>,
) -> Result<Done, CliError> {
    let sim_error = |e| CliError::sim(e, Some(options.seed));
    let prepared = storsim_sim::prepare(options).map_err(sim_error)?;
    let flows = prepared.session.flows.len().max(1);
    let mut csv = match requests_csv {
        Some(path) => Some(CsvSink::create(path, flows)?),
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
    let mut line = Progress::new(!progress, options.max_requests);
    let simulated = prepared
        .run(sink, &mut |n, t| line.update(n, t), stop)
        .map_err(sim_error)?;
    let wall = line.finish();
    let cpu = line.cpu_time();
    let session = &simulated.session;
    let device = DeviceFacts::read(&session.device_name, session.device.as_ref());
    if progress {
        warn_unmapped_reads(&device.counters, options.device.precondition.is_none());
    }
    if let Some(csv) = csv {
        csv.finish()?;
    }
    Ok(Done {
        simulated,
        device,
        seed: options.seed,
        wall,
        cpu,
    })
}

/// Reads of pages that hold no data take no flash time, so a run made mostly of them (a trace
/// replayed on a clean SSD) measures nothing of the flash: says so once, with how many and how
/// to precondition. `can_choose`: whether `--precondition` was left to the device file.
fn warn_unmapped_reads(counters: &[storsim_core::DeviceCounter], can_choose: bool) {
    let Some(r) = storsim_sim::unmapped_reads(counters) else {
        return;
    };
    if let Some(message) = unmapped_reads_warning(r, can_choose) {
        eprintln!("storsim: warning: {message}");
    }
}

/// The warning for [`warn_unmapped_reads`], when more than half the pages read held no data.
fn unmapped_reads_warning(r: storsim_sim::UnmappedReads, can_choose: bool) -> Option<String> {
    if r.unmapped_pages * 2 <= r.read_pages {
        return None;
    }
    let advice = if can_choose {
        "; precondition the device with --precondition fill (or steady), or \
         [ssd.precondition] mode = \"sequential-fill\" in its file"
    } else {
        ""
    };
    Some(format!(
        "{} of the {} pages read had never been written (or were trimmed): they took no flash \
         time, so the read latencies measure nothing of the flash{advice}",
        r.unmapped_pages, r.read_pages
    ))
}

/// The requests CSV as the run's completion sink. A write error does not stop the run: the
/// first one is kept and reported when the run ends, and nothing more is written.
struct CsvSink {
    csv: RequestsCsv<std::io::BufWriter<std::fs::File>>,
    error: Option<std::io::Error>,
}

impl CsvSink {
    fn create(path: &Path, flows: usize) -> Result<CsvSink, CliError> {
        Ok(CsvSink {
            csv: RequestsCsv::new(destination::create(path)?, flows)
                .map_err(|e| CliError::failure(format!("writing {}: {e}", path.display())))?,
            error: None,
        })
    }

    /// Flushes the file, or reports the first error writing it.
    fn finish(self) -> Result<(), CliError> {
        let result = match self.error {
            Some(e) => Err(e),
            None => self.csv.finish(),
        };
        result.map_err(|e| CliError::failure(format!("writing the requests CSV: {e}")))
    }
}

impl CompletionSink for CsvSink {
    fn completed(&mut self, completion: &Completion) {
        if self.error.is_none() {
            if let Err(e) = self.csv.write(completion) {
                self.error = Some(e);
            }
        }
    }
}

/// Writes the JSON if asked, and the text report and the run's timing unless quiet or the
/// JSON goes to standard output.
fn write_reports(
    args: &SimulateArgs,
    results: &SimulationResults,
    wall: Duration,
    cpu: Option<Duration>,
) -> Result<(), CliError> {
    if args.json.is_some() || args.report.is_some() || args.plots.is_some() {
        let doc = storsim_output::simulation_json(results);
        if let Some(path) = &args.json {
            destination::write_json(path, &doc)?;
        }
        // Without --json the page names no file.
        let name = args.json.as_deref().unwrap_or(Path::new(""));
        report_html::write_simulation(name, doc, args.report.as_deref(), args.plots.as_deref())?;
    }
    if !args.quiet && args.json.as_deref() != Some(Path::new("-")) {
        crate::stdout::say!("{}", storsim_output::simulation_text(results));
        let cpu = match cpu {
            Some(cpu) => format!(" ({:.3} s of CPU time)", cpu.as_secs_f64()),
            None => String::new(),
        };
        eprintln!(
            "storsim: simulated {} requests in {:.3} s of wall time{cpu}",
            results.info.requests_completed,
            wall.as_secs_f64()
        );
    }
    Ok(())
}

/// Refuses a device whose model state would not fit in the memory available
/// ([`storsim_sim::check_memory`]), as bad input.
pub(crate) fn check_memory(name: &str, spec: &storsim_config::DeviceSpec) -> Result<(), CliError> {
    storsim_sim::check_memory(name, spec).map_err(CliError::input)
}
