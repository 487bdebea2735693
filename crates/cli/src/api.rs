//! The commands for programs: `simulate`, `inspect`, `presets`, `report` and a sweep's points
//! and table, from the same argument definitions and code as the command line, so that a
//! result is byte for byte what the command writes. Nothing here prints, reads the process's
//! arguments or installs a signal handler: a run stops when its [`CancelToken`] is cancelled.
//!
//! ```no_run
//! use storsim::api::{self, CancelToken};
//! let args = ["--device", "flashsim-2009", "--workload", "synthetic:rw=randread,requests=1000"];
//! let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
//! let run = api::simulate(&args, true, &CancelToken::new())?;
//! assert!(run.document.contains("\"kind\": \"simulate\""));
//! assert_eq!(run.requests.map(|r| r.id.len()), Some(1000));
//! # Ok::<(), storsim::CliError>(())
//! ```

use crate::args::{Cli, Command, ReportArgs};
use crate::sweep::{self, SimulateRunner};
use crate::{inspect, report_html, simulate, CliError};
use clap::Parser;
use std::path::{Path, PathBuf};
use storsim_core::{Completion, Op};
use storsim_engine::CompletionSink;
use storsim_stats::Series;
use storsim_sweep::{Point, Spec, Status};

pub use storsim_engine::CancelToken;

/// A finished `simulate` run.
#[derive(Debug)]
pub struct SimulateRun {
    /// The JSON document, exactly as `simulate --json` writes it for the same arguments.
    pub document: String,
    /// Every completed request in completion order, when asked for.
    pub requests: Option<RequestColumns>,
    /// The run in windows of simulated time (the document's `series`), unless `--window off`.
    pub series: Option<SeriesColumns>,
    /// Why the device failed during the run (it wore out), if it did: the results are those up
    /// to the failure, as the command reports them before exiting with status 3.
    pub device_failed: Option<String>,
    /// Whether the cancel token stopped the run before its end.
    pub cancelled: bool,
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

/// The command line `storsim SUBCOMMAND ARGS...` for clap.
fn line(subcommand: &str, args: &[String]) -> Vec<String> {
    let mut line = vec!["storsim".to_string(), subcommand.to_string()];
    line.extend(args.iter().cloned());
    line
}

/// Runs `storsim simulate ARGS...` (`args` as on the command line after `simulate`, parsed by
/// the same definitions) and returns its document, the time series as columns and, if
/// `requests`, every request as columns. `--requests-csv` is written as the command writes it;
/// the other outputs (`--json`, `--report`, `--plots`) are refused: the document is returned.
/// A refused argument, device or workload is an error with the command's message.
pub fn simulate(
    args: &[String],
    requests: bool,
    cancel: &CancelToken,
) -> Result<SimulateRun, CliError> {
    let line = line("simulate", args);
    let parsed = sweep::parse_simulate(&line).map_err(CliError::input)?;
    for (given, option) in [
        (parsed.json.is_some(), "--json"),
        (parsed.report.is_some(), "--report"),
        (parsed.plots.is_some(), "--plots"),
    ] {
        if given {
            return Err(CliError::input(format!(
                "{option}: the library returns the document instead of writing it"
            )));
        }
    }
    let mut columns = requests.then(RequestColumns::default);
    let options = simulate::options(&parsed)?;
    let done = simulate::execute_into(
        &options,
        parsed.requests_csv.as_deref(),
        cancel.clone(),
        false,
        columns.as_mut().map(|c| c as &mut dyn CompletionSink),
    )?;
    let command_line = storsim_output::document_command_line(line.into_iter().skip(1));
    let document = storsim_output::json::text(&storsim_output::simulation_json(
        &done.results(command_line),
    ));
    let outcome = &done.simulated.outcome;
    Ok(SimulateRun {
        document,
        requests: columns,
        series: outcome.series.as_ref().map(series_columns),
        device_failed: outcome.info.device_failed.clone(),
        cancelled: outcome.info.cancelled,
    })
}

/// Runs `storsim inspect ARGS...` and returns the characterisation's JSON document, as
/// `inspect --json` writes it.
pub fn inspect(args: &[String]) -> Result<String, CliError> {
    let line = line("inspect", args);
    let parsed = Cli::try_parse_from(&line).map_err(clap_error)?;
    let Command::Inspect(parsed) = parsed.command else {
        unreachable!("the line starts with `inspect`")
    };
    let workload = inspect::open(&parsed)?;
    let name = workload.name.clone();
    let c = storsim_workload::trace::inspect(workload).map_err(CliError::input)?;
    // The document records the command this stands for, not the calling process's.
    let command_line = storsim_output::document_command_line(line.into_iter().skip(1));
    Ok(storsim_output::json::text(&storsim_output::inspect_json(
        &name,
        &c,
        &command_line,
    )))
}

/// clap's message without its `error: ` and the usage hint meant for a terminal.
fn clap_error(e: clap::Error) -> CliError {
    let message = e.to_string();
    let first = message.lines().next().unwrap_or_default();
    CliError::input(first.trim_start_matches("error: "))
}

/// A built-in device, as `storsim presets` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preset {
    /// The name `--device` takes.
    pub name: &'static str,
    /// The model it uses (`ssd`, `hdd`, ...).
    pub model: &'static str,
    /// One line about it.
    pub summary: &'static str,
}

/// The built-in devices, in `storsim presets`' order.
pub fn presets() -> Vec<Preset> {
    storsim_config::presets()
        .iter()
        .map(|p| Preset {
            name: p.name,
            model: p.model(),
            summary: p.summary,
        })
        .collect()
}

/// Runs `storsim report RUNS... --out OUT [--plots DIR]`: the run documents drawn as one page.
pub fn report(runs: &[PathBuf], out: &Path, plots: Option<&Path>) -> Result<(), CliError> {
    report_html::run(ReportArgs {
        runs: runs.to_vec(),
        out: out.to_path_buf(),
        plots: plots.map(Path::to_path_buf),
    })
}

/// A sweep spec expanded into points and checked, as `storsim sweep` does before it runs any.
pub struct SweepPlan {
    spec: Spec,
    points: Vec<Point>,
    runner: SimulateRunner,
}

/// One point of a [`SweepPlan`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepPoint {
    /// Its id, which names its document (`points/ID.json`).
    pub id: String,
    /// Its label.
    pub label: String,
    /// Its command line, `storsim simulate ...`, with the spec's relative paths resolved.
    pub command_line: Vec<String>,
    /// Its document's `point` object, as JSON text.
    pub point_json: String,
}

/// How a point of a sweep run elsewhere ended, for [`SweepPlan::table_csv`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PointResult {
    /// It ran now; its document's text.
    Ran(String),
    /// Its document was found from an earlier run; its text.
    Reused(String),
    /// It failed with this message.
    Failed(String),
    /// It did not run.
    Pending,
}

impl SweepPlan {
    /// Reads the spec at `path` (with its `[size.NAME]` table laid over it if `size`),
    /// expands it into points and checks each, as `storsim sweep` does; the error names the
    /// spec and what is wrong.
    pub fn load(path: &Path, size: Option<&str>) -> Result<SweepPlan, CliError> {
        let spec = Spec::load(path, size).map_err(CliError::input)?;
        SweepPlan::expand(spec, path)
    }

    /// [`SweepPlan::load`] of the spec text `text` as if read from `file` (which names it in
    /// messages and whose folder relative paths start from; it need not exist).
    pub fn parse(text: &str, file: &Path, size: Option<&str>) -> Result<SweepPlan, CliError> {
        let spec = Spec::parse(text, file, size).map_err(CliError::input)?;
        SweepPlan::expand(spec, file)
    }

    fn expand(spec: Spec, path: &Path) -> Result<SweepPlan, CliError> {
        let points = storsim_sweep::expand(&spec).map_err(CliError::input)?;
        let runner = SimulateRunner {
            dir: spec.dir().to_path_buf(),
        };
        storsim_sweep::check(&points, &runner)
            .map_err(|e| CliError::input(format!("{}: {e} (nothing was run)", path.display())))?;
        Ok(SweepPlan {
            spec,
            points,
            runner,
        })
    }

    /// The spec's name.
    pub fn name(&self) -> &str {
        &self.spec.name
    }

    /// The points, in the order of the results table.
    pub fn points(&self) -> Vec<SweepPoint> {
        self.points
            .iter()
            .map(|p| {
                let mut command_line = vec!["storsim".to_string()];
                command_line.extend(p.simulate_args(&self.runner.dir));
                SweepPoint {
                    id: p.id.clone(),
                    label: p.label.clone(),
                    command_line,
                    point_json: p.json().to_string(),
                }
            })
            .collect()
    }

    /// Runs the sweep on `jobs` threads into the output folder `out`, as `storsim sweep
    /// --out OUT` does (points found there are not run again; `results.csv` and `report.html`
    /// are written), and returns `results.csv`'s bytes and each point's result. `cancel`
    /// stops it: the points not run are `Pending`.
    pub fn run(
        &self,
        out: &Path,
        jobs: usize,
        cancel: &CancelToken,
    ) -> Result<(Vec<u8>, Vec<PointResult>), CliError> {
        let outcome = storsim_sweep::run(
            &self.points,
            out,
            &self.runner,
            &storsim_sweep::RunOptions {
                jobs: jobs.max(1),
                fail_fast: false,
            },
            cancel,
            &mut Silent,
        )
        .map_err(CliError::failure)?;
        let csv = sweep::write_outputs(&self.spec, &self.points, &outcome.table, out, None)?;
        let results = self
            .points
            .iter()
            .zip(outcome.statuses)
            .map(|(point, status)| {
                let text = || {
                    std::fs::read_to_string(storsim_sweep::point_file(out, point))
                        .unwrap_or_default()
                };
                match status {
                    Status::Ran => PointResult::Ran(text()),
                    Status::Reused => PointResult::Reused(text()),
                    Status::Failed(message) => PointResult::Failed(message),
                    Status::Pending => PointResult::Pending,
                }
            })
            .collect();
        Ok((csv, results))
    }

    /// The document of point `index` found in the output folder `out` from an earlier run,
    /// if it is there and is that point's.
    pub fn existing(&self, out: &Path, index: usize) -> Option<String> {
        let point = self.points.get(index)?;
        storsim_sweep::read_point(out, point)?;
        std::fs::read_to_string(storsim_sweep::point_file(out, point)).ok()
    }

    /// Writes point `index`'s document into the output folder `out` (whole or not at all), as
    /// the sweep does when it has run a point.
    pub fn write_point(&self, out: &Path, index: usize, document: &str) -> Result<(), CliError> {
        let point = self.points.get(index).ok_or_else(|| {
            CliError::input(format!(
                "no point {index} (the sweep has {})",
                self.points.len()
            ))
        })?;
        let path = storsim_sweep::point_file(out, point);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| CliError::failure(format!("{}: {e}", dir.display())))?;
        }
        storsim_sweep::write_whole(&path, document.as_bytes()).map_err(CliError::failure)
    }

    /// The results table (`results.csv`'s bytes) of points that ran elsewhere (on a
    /// cluster): `results` holds each point's, in point order. If `out` is given, the table
    /// and the report page are written there as `storsim sweep` writes them.
    pub fn table_csv(
        &self,
        results: &[PointResult],
        out: Option<&Path>,
    ) -> Result<Vec<u8>, CliError> {
        if results.len() != self.points.len() {
            return Err(CliError::input(format!(
                "{} results for {} points",
                results.len(),
                self.points.len()
            )));
        }
        let mut statuses = Vec::with_capacity(results.len());
        let mut rows = Vec::with_capacity(results.len());
        for result in results {
            let (status, text) = match result {
                PointResult::Ran(text) => (Status::Ran, Some(text)),
                PointResult::Reused(text) => (Status::Reused, Some(text)),
                PointResult::Failed(message) => (Status::Failed(message.clone()), None),
                PointResult::Pending => (Status::Pending, None),
            };
            let row = match text {
                Some(text) => {
                    let doc: serde_json::Value = serde_json::from_str(text).map_err(|e| {
                        CliError::input(format!("a point's document is not JSON: {e}"))
                    })?;
                    Some(storsim_sweep::flatten(&doc))
                }
                None => None,
            };
            statuses.push(status);
            rows.push(row);
        }
        let table = storsim_sweep::results_table(&self.points, &statuses, rows);
        match out {
            Some(out) => sweep::write_outputs(&self.spec, &self.points, &table, out, None),
            None => sweep::csv_bytes(&table),
        }
    }
}

/// A trace a sweep point reads from a copy (shipped to a cluster's worker) rather than from
/// the path its command line names.
#[derive(Debug, Clone, Copy)]
pub struct TraceCopy<'a> {
    /// The path the command line names.
    pub original: &'a str,
    /// The copy's path on this machine.
    pub local: &'a str,
}

/// Runs one sweep point from its command line (`storsim simulate ...`, [`SweepPoint`]'s) and
/// returns its document's text, as `storsim sweep` writes it; `None` when `cancel` stopped
/// it. With `copy`, the trace is read from the copy, and the document (or the error message)
/// is the one reading the original gives (the same command line and workload name).
pub fn run_point(
    command_line: &[String],
    point_json: &str,
    copy: Option<TraceCopy>,
    cancel: &CancelToken,
) -> Result<Option<String>, CliError> {
    let point: serde_json::Value = serde_json::from_str(point_json)
        .map_err(|e| CliError::input(format!("the point's JSON: {e}")))?;
    let Some(copy) = copy else {
        let args = sweep::parse_simulate(command_line).map_err(CliError::input)?;
        let options = simulate::options(&args)?;
        return sweep::point_document(&options, command_line.to_vec(), None, point, cancel);
    };
    let local: Vec<String> = command_line
        .iter()
        .map(|a| match a == copy.original {
            true => copy.local.to_string(),
            false => a.clone(),
        })
        .collect();
    let args = sweep::parse_simulate(&local).map_err(CliError::input)?;
    if args.workload.as_deref() != Some(copy.local) {
        return Err(CliError::input(format!(
            "the point's workload is not the trace {}",
            copy.original
        )));
    }
    let options = simulate::options(&args)?;
    sweep::point_document(
        &options,
        command_line.to_vec(),
        Some(copy.original),
        point,
        cancel,
    )
    .map_err(|e| CliError {
        // A message names the trace as the spec does, whichever copy was read.
        message: e.message.replace(copy.local, copy.original),
        status: e.status,
    })
}

/// The library's sweeps report nothing while they run.
struct Silent;

impl storsim_sweep::Observer for Silent {
    fn planned(&mut self, _to_run: usize) {}
    fn started(&mut self, _index: usize) {}
    fn finished(&mut self, _index: usize, _status: &Status) {}
    fn tick(&mut self) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|a| a.to_string()).collect()
    }

    #[test]
    fn simulate_returns_one_column_entry_per_request_and_the_series() {
        let args = strings(&[
            "--device",
            "flashsim-2009",
            "--workload",
            "synthetic:rw=randrw,requests=500,bs=4k",
        ]);
        let run = simulate(&args, true, &CancelToken::new()).expect("the run");
        let requests = run.requests.expect("asked for");
        assert_eq!(requests.id.len(), 500);
        assert_eq!(requests.finish_ns.len(), 500);
        assert!(
            requests.op.iter().all(|&op| op <= 1),
            "reads and writes only"
        );
        assert!(requests
            .finish_ns
            .iter()
            .zip(&requests.arrival_ns)
            .all(|(f, a)| f >= a));
        let doc: serde_json::Value = serde_json::from_str(&run.document).expect("JSON");
        assert_eq!(doc["run"]["requests_completed"], 500);
        assert_eq!(
            doc["command_line"][1], "simulate",
            "the document records the simulate command"
        );
        let series = run.series.expect("series on by default");
        let windows = doc["series"]["windows"].as_u64().expect("windows") as usize;
        assert!(series.iter().all(|(_, v)| v.len() == windows));
        let total: f64 = series
            .iter()
            .find(|(name, _)| name == "all.requests")
            .expect("all.requests")
            .1
            .iter()
            .sum();
        assert_eq!(total, 500.0);
    }

    #[test]
    fn bad_arguments_are_input_errors_with_the_commands_message() {
        let e = simulate(
            &strings(&["--device", "no-such-device", "--workload", "synthetic:"]),
            false,
            &CancelToken::new(),
        )
        .expect_err("refused");
        assert_eq!(e.status, crate::EXIT_BAD_INPUT);
        assert!(e.message.contains("no-such-device"), "{}", e.message);
        let e = simulate(&strings(&["--bogus"]), false, &CancelToken::new()).expect_err("bogus");
        assert!(e.message.contains("--bogus"), "{}", e.message);
        let e = simulate(
            &strings(&[
                "--device",
                "flashsim-2009",
                "--workload",
                "x",
                "--json",
                "o",
            ]),
            false,
            &CancelToken::new(),
        )
        .expect_err("--json");
        assert!(e.message.starts_with("--json"), "{}", e.message);
    }

    #[test]
    fn a_table_of_points_run_elsewhere_is_the_sweeps_own() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let spec = dir.path().join("spec.toml");
        let text = r#"
            devices = ["flashsim-2009"]
            workloads = ["synthetic:rw=randwrite,bs=4k,requests=300", "missing.trace"]
            seeds = [1, 2]
        "#;
        // The trace is there when the spec is checked, and gone when its points run.
        std::fs::write(dir.path().join("missing.trace"), "0 0 0 8 1\n").expect("the trace");
        let plan = SweepPlan::parse(text, &spec, None).expect("the plan");
        std::fs::remove_file(dir.path().join("missing.trace")).expect("removed");
        let (csv, results) = plan
            .run(&dir.path().join("out"), 2, &CancelToken::new())
            .expect("the sweep");
        assert_eq!(results.len(), 4);
        assert!(matches!(results[2], PointResult::Failed(_)), "{results:?}");
        // Each point run again one by one, as a cluster's worker runs it.
        let elsewhere: Vec<PointResult> = plan
            .points()
            .iter()
            .map(
                |p| match run_point(&p.command_line, &p.point_json, None, &CancelToken::new()) {
                    Ok(Some(text)) => PointResult::Ran(text),
                    Ok(None) => PointResult::Pending,
                    Err(e) => PointResult::Failed(e.message),
                },
            )
            .collect();
        assert_eq!(elsewhere, results);
        assert_eq!(plan.table_csv(&elsewhere, None).expect("the table"), csv);
    }

    #[test]
    fn a_cancelled_token_stops_the_run() {
        let cancel = CancelToken::new();
        cancel.cancel();
        let args = strings(&[
            "--device",
            "flashsim-2009",
            "--workload",
            "synthetic:rw=randread,requests=100000",
        ]);
        let run = simulate(&args, true, &cancel).expect("the run");
        assert!(run.cancelled);
        assert!(run.requests.expect("asked for").id.len() < 100_000);
    }
}
