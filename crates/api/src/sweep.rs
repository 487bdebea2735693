//! Sweeps: a spec's points run from their typed options ([`point_options`],
//! [`SimulateRunner`]), in this
//! process ([`SweepPlan::run`]) or one by one elsewhere ([`run_point`], a cluster's workers),
//! into the same documents and results table as `storsim sweep`.

use crate::{simulate::Simulation, ApiError};
use std::path::{Path, PathBuf};
use storsim_engine::CancelToken;
use storsim_sim::{DeviceChoice, OptionError, SimulateOptions, WorkloadChoice};
use storsim_sweep::{OptionValue, Point, PointRunner, Spec, Status, Table};

/// Runs points as the `storsim simulate` runs they stand for.
pub struct SimulateRunner {
    /// The spec's directory, which relative paths in it start from.
    pub dir: PathBuf,
}

impl SimulateRunner {
    /// The point's `storsim simulate` command line, which its document records, and the
    /// options it stands for.
    pub fn arguments(&self, point: &Point) -> Result<(Vec<String>, SimulateOptions), String> {
        let mut line = vec!["storsim".to_string()];
        line.extend(point.simulate_args(&self.dir));
        let options = point_options(point, &self.dir).map_err(|e| e.to_string())?;
        Ok((line, options))
    }
}

/// The run `point` stands for, as typed options: what its command line
/// ([`Point::simulate_args`]) says, with relative paths resolved against `dir` (the spec's
/// directory), each option's text read as the command reads it. The error is the one
/// `storsim simulate` gives for the same option.
pub fn point_options(point: &Point, dir: &Path) -> Result<SimulateOptions, OptionError> {
    let device = DeviceChoice {
        name: point.device_arg(dir),
        overrides: point.overrides(),
        precondition: None,
    };
    let workload = WorkloadChoice::Named(point.workload_arg(dir));
    let mut options = SimulateOptions::new(device, workload);
    options.seed = point.seed;
    for (key, value) in &point.options {
        match value {
            OptionValue::Flag(given) => options.set(key, &given.to_string())?,
            OptionValue::Text(text) => options.set(key, text)?,
        }
    }
    Ok(options)
}

impl PointRunner for SimulateRunner {
    fn check(&self, point: &Point) -> Result<(), String> {
        let (_, options) = self.arguments(point)?;
        options.check().map_err(|e| e.to_string())
    }

    fn run(&self, point: &Point, cancel: &CancelToken) -> Result<Option<String>, String> {
        let (line, options) = self.arguments(point)?;
        point_document(
            &options,
            line,
            None,
            storsim_output::sweep_point_json(point),
            cancel,
        )
        .map_err(|e| e.to_string())
    }
}

/// Runs a sweep point's options and returns its document's text, with `point` as the
/// document's `point` and `command_line` as its `command_line`; `None` when `cancel` stopped
/// it. `workload_name`, if given, is the name the document gives the workload: a trace
/// shipped to a cluster's worker is read from a copy, and the document names the original.
pub fn point_document(
    options: &SimulateOptions,
    command_line: Vec<String>,
    workload_name: Option<&str>,
    point: serde_json::Value,
    cancel: &CancelToken,
) -> Result<Option<String>, ApiError> {
    let run = Simulation::run(options, None, None, &mut |_, _| {}, cancel.clone())?;
    if run.simulated.outcome.info.cancelled {
        return Ok(None);
    }
    let mut doc = run.document(command_line);
    if let Some(name) = workload_name {
        doc["workload"]["name"] = name.into();
    }
    doc["point"] = point;
    Ok(Some(storsim_output::json::text(&doc)))
}

/// `results.csv`'s bytes.
pub fn csv_bytes(table: &Table) -> Result<Vec<u8>, ApiError> {
    let mut csv = Vec::new();
    storsim_output::write_sweep_csv(table, &mut csv)
        .map_err(|e| ApiError::Failure(format!("writing the results: {e}")))?;
    Ok(csv)
}

/// Writes a sweep's `results.csv` and `report.html` (with the plots into `plots` if given)
/// into the output folder `out`; returns `results.csv`'s bytes.
pub fn write_outputs(
    spec: &Spec,
    points: &[Point],
    table: &Table,
    out: &Path,
    plots: Option<&Path>,
) -> Result<Vec<u8>, ApiError> {
    let csv = csv_bytes(table)?;
    storsim_sweep::write_whole(&out.join("results.csv"), &csv)
        .map_err(|e| ApiError::Failure(e.to_string()))?;
    // A document the sweep has just written or read back; one that no longer reads is left
    // out of the plots that need it rather than failing the page.
    let point = |row: usize| {
        let path = storsim_sweep::point_file(out, points.get(row)?);
        storsim_report::Run::read(&path).ok()
    };
    let report =
        storsim_report::render_sweep(&spec.name, &spec.description, table, &spec.plots, &point);
    crate::write_report(&report, Some(&out.join("report.html")), plots)?;
    Ok(csv)
}

/// A sweep spec expanded into points and checked, as `storsim sweep` does before it runs any.
pub struct SweepPlan {
    spec: Spec,
    points: Vec<Point>,
    runner: SimulateRunner,
}

/// One point of a [`SweepPlan`].
#[derive(Debug, Clone, PartialEq)]
pub struct SweepPoint {
    /// Its id, which names its document (`points/ID.json`).
    pub id: String,
    /// Its label.
    pub label: String,
    /// Its command line, `storsim simulate ...`, with the spec's relative paths resolved: what
    /// its document records.
    pub command_line: Vec<String>,
    /// Its document's `point` object, as JSON text.
    pub point_json: String,
    /// The run it stands for.
    pub options: SimulateOptions,
    /// The trace file it reads, if its workload is one (to ship it to a cluster's workers).
    pub trace: Option<String>,
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
    pub fn load(path: &Path, size: Option<&str>) -> Result<SweepPlan, ApiError> {
        let spec = Spec::load(path, size).map_err(|e| ApiError::Input(e.to_string()))?;
        SweepPlan::expand(spec, path)
    }

    /// [`SweepPlan::load`] of the spec text `text` as if read from `file` (which names it in
    /// messages and whose folder relative paths start from; it need not exist).
    pub fn parse(text: &str, file: &Path, size: Option<&str>) -> Result<SweepPlan, ApiError> {
        let spec = Spec::parse(text, file, size).map_err(|e| ApiError::Input(e.to_string()))?;
        SweepPlan::expand(spec, file)
    }

    fn expand(spec: Spec, path: &Path) -> Result<SweepPlan, ApiError> {
        let points = storsim_sweep::expand(&spec).map_err(|e| ApiError::Input(e.to_string()))?;
        let runner = SimulateRunner {
            dir: spec.dir().to_path_buf(),
        };
        storsim_sweep::check(&points, &runner)
            .map_err(|e| ApiError::Input(format!("{}: {e} (nothing was run)", path.display())))?;
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

    /// The points, in the order of the results table. Every point was checked when the plan
    /// was made, so each has its options.
    pub fn points(&self) -> Vec<SweepPoint> {
        self.points
            .iter()
            .map(|p| {
                let (command_line, options) = self
                    .runner
                    .arguments(p)
                    .expect("every point's options were checked");
                let trace = match &options.workload {
                    WorkloadChoice::Named(name)
                        if !storsim_sim::WorkloadSource::is_synthetic(name) =>
                    {
                        Some(name.clone())
                    }
                    _ => None,
                };
                SweepPoint {
                    id: p.id.clone(),
                    label: p.label.clone(),
                    command_line,
                    point_json: storsim_output::sweep_point_json(p).to_string(),
                    options,
                    trace,
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
    ) -> Result<(Vec<u8>, Vec<PointResult>), ApiError> {
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
        .map_err(|e| ApiError::Failure(e.to_string()))?;
        let csv = write_outputs(&self.spec, &self.points, &outcome.table, out, None)?;
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
    pub fn write_point(&self, out: &Path, index: usize, document: &str) -> Result<(), ApiError> {
        let point = self.points.get(index).ok_or_else(|| {
            ApiError::Input(format!(
                "no point {index} (the sweep has {})",
                self.points.len()
            ))
        })?;
        let path = storsim_sweep::point_file(out, point);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| ApiError::Failure(format!("{}: {e}", dir.display())))?;
        }
        storsim_sweep::write_whole(&path, document.as_bytes())
            .map_err(|e| ApiError::Failure(e.to_string()))
    }

    /// The results table (`results.csv`'s bytes) of points that ran elsewhere (on a
    /// cluster): `results` holds each point's, in point order. If `out` is given, the table
    /// and the report page are written there as `storsim sweep` writes them.
    pub fn table_csv(
        &self,
        results: &[PointResult],
        out: Option<&Path>,
    ) -> Result<Vec<u8>, ApiError> {
        if results.len() != self.points.len() {
            return Err(ApiError::Input(format!(
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
                        ApiError::Input(format!("a point's document is not JSON: {e}"))
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
            Some(out) => write_outputs(&self.spec, &self.points, &table, out, None),
            None => csv_bytes(&table),
        }
    }
}

/// A trace a sweep point reads from a copy (shipped to a cluster's worker) rather than from
/// the path its options name.
#[derive(Debug, Clone, Copy)]
pub struct TraceCopy<'a> {
    /// The path the options name.
    pub original: &'a str,
    /// The copy's path on this machine.
    pub local: &'a str,
}

/// Runs one sweep point (a [`SweepPoint`]'s options, command line and `point` object) and
/// returns its document's text, as `storsim sweep` writes it; `None` when `cancel` stopped
/// it. With `copy`, the trace is read from the copy, and the document (or the error message)
/// is the one reading the original gives (the same command line and workload name).
pub fn run_point(
    options: &SimulateOptions,
    command_line: &[String],
    point_json: &str,
    copy: Option<TraceCopy>,
    cancel: &CancelToken,
) -> Result<Option<String>, ApiError> {
    let point: serde_json::Value = serde_json::from_str(point_json)
        .map_err(|e| ApiError::Input(format!("the point's JSON: {e}")))?;
    let Some(copy) = copy else {
        return point_document(options, command_line.to_vec(), None, point, cancel);
    };
    if options.workload != WorkloadChoice::Named(copy.original.to_string()) {
        return Err(ApiError::Input(format!(
            "the point's workload is not the trace {}",
            copy.original
        )));
    }
    let mut local = options.clone();
    local.workload = WorkloadChoice::Named(copy.local.to_string());
    point_document(
        &local,
        command_line.to_vec(),
        Some(copy.original),
        point,
        cancel,
    )
    .map_err(|e| {
        // A message names the trace as the spec does, whichever copy was read.
        let message = e.message().replace(copy.local, copy.original);
        match e {
            ApiError::Input(_) => ApiError::Input(message),
            ApiError::Failure(_) => ApiError::Failure(message),
            ApiError::ModelFault(_) => ApiError::ModelFault(message),
        }
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
