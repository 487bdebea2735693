//! `storsim sweep`: the command line around `storsim_sweep`. Each point runs as the
//! `storsim simulate` command it stands for (its typed options, `Point::simulate_options`,
//! run by the same code), so a point's document is what that command writes; here are also
//! the progress line, the output files and the exit status.

use crate::args::{Cli, Command, SimulateArgs, SweepArgs};
use crate::progress::Progress;
use crate::{interrupt, report_html, simulate, CliError};
use clap::Parser;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use storsim_engine::CancelToken;
use storsim_sim::SimulateOptions;
use storsim_sweep::{Observer, Point, PointRunner, RunOptions, Spec, Status, Table};

/// Runs `storsim sweep SPEC --out DIR`.
pub fn run(args: SweepArgs) -> Result<(), CliError> {
    let stop = CancelToken::from_flag(interrupt::stop_flag()?);
    let spec = Spec::load(&args.spec, args.size.as_deref()).map_err(CliError::input)?;
    let points = storsim_sweep::expand(&spec).map_err(CliError::input)?;
    let runner = SimulateRunner {
        dir: spec.dir().to_path_buf(),
    };
    storsim_sweep::check(&points, &runner)
        .map_err(|e| CliError::input(format!("{}: {e} (nothing was run)", args.spec.display())))?;
    let jobs = match args.jobs {
        Some(0) => return Err(CliError::input("--jobs: at least 1")),
        Some(jobs) => jobs,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    if !args.quiet {
        eprintln!(
            "storsim: sweep {}: {} points on {jobs} threads into {}",
            spec.name,
            points.len(),
            args.out.display()
        );
    }
    let mut observer = Line::new(&points, args.quiet);
    let outcome = storsim_sweep::run(
        &points,
        &args.out,
        &runner,
        &RunOptions {
            jobs,
            fail_fast: args.fail_fast,
        },
        &stop,
        &mut observer,
    )
    .map_err(CliError::failure)?;
    observer.progress.finish();

    write_outputs(
        &spec,
        &points,
        &outcome.table,
        &args.out,
        args.plots.as_deref(),
    )?;
    if args.parquet {
        let bytes = outcome
            .table
            .parquet()
            .map_err(|e| CliError::failure(format!("writing results.parquet: {e}")))?;
        storsim_sweep::write_whole(&args.out.join("results.parquet"), &bytes)
            .map_err(CliError::failure)?;
    }

    let count = |wanted: fn(&Status) -> bool| outcome.statuses.iter().filter(|s| wanted(s)).count();
    let ran = count(|s| *s == Status::Ran);
    let reused = count(|s| *s == Status::Reused);
    let failed = count(|s| matches!(s, Status::Failed(_)));
    let pending = count(|s| *s == Status::Pending);
    if !args.quiet {
        eprintln!(
            "storsim: sweep: {ran} points ran, {reused} found from an earlier run, {failed} \
             failed, {pending} not run; results in {}",
            args.out.join("results.csv").display()
        );
    }
    if stop.is_cancelled() {
        return Err(CliError {
            message: format!(
                "interrupted: {pending} points not run; run the sweep again to finish it"
            ),
            status: interrupt::EXIT_INTERRUPTED,
        });
    }
    if failed > 0 {
        return Err(CliError::failure(format!(
            "{failed} of {} points failed (their errors are in results.csv's `error` column)",
            points.len()
        )));
    }
    Ok(())
}

/// `results.csv`'s bytes.
pub(crate) fn csv_bytes(table: &Table) -> Result<Vec<u8>, CliError> {
    let mut csv = Vec::new();
    table
        .write_csv(&mut csv)
        .map_err(|e| CliError::failure(format!("writing the results: {e}")))?;
    Ok(csv)
}

/// Writes a sweep's `results.csv` and `report.html` (with the plots into `plots` if given)
/// into the output folder `out`; returns `results.csv`'s bytes.
pub(crate) fn write_outputs(
    spec: &Spec,
    points: &[Point],
    table: &Table,
    out: &Path,
    plots: Option<&Path>,
) -> Result<Vec<u8>, CliError> {
    let csv = csv_bytes(table)?;
    storsim_sweep::write_whole(&out.join("results.csv"), &csv).map_err(CliError::failure)?;
    report_html::write_sweep(spec, points, table, out, plots)?;
    Ok(csv)
}

/// Runs points as `storsim simulate` commands.
pub(crate) struct SimulateRunner {
    /// The spec's directory, which relative paths in it start from.
    pub dir: PathBuf,
}

impl SimulateRunner {
    /// The point's `storsim simulate` command line, which its document records, and the
    /// options it stands for.
    pub(crate) fn arguments(
        &self,
        point: &Point,
    ) -> Result<(Vec<String>, SimulateOptions), String> {
        let mut line = vec!["storsim".to_string()];
        line.extend(point.simulate_args(&self.dir));
        let options = point
            .simulate_options(&self.dir)
            .map_err(|e| e.to_string())?;
        Ok((line, options))
    }
}

/// `line` (`storsim simulate ...`) parsed as the command parses it; the error is clap's
/// message without its `error: ` and the usage hint meant for a terminal.
pub(crate) fn parse_simulate(line: &[String]) -> Result<SimulateArgs, String> {
    let parsed = Cli::try_parse_from(line).map_err(|e| {
        let message = e.to_string();
        let first = message.lines().next().unwrap_or_default();
        first.trim_start_matches("error: ").to_string()
    })?;
    match parsed.command {
        Command::Simulate(args) => Ok(args),
        _ => Err(format!(
            "expected the arguments of `storsim simulate`, got `{}`",
            line.join(" ")
        )),
    }
}

/// Runs a sweep point's `storsim simulate` and returns its document's text, with `point` as
/// the document's `point` and `command_line` as its `command_line`; `None` when `cancel`
/// stopped it. `workload_name`, if given, is the name the document gives the workload: a
/// trace shipped to a cluster's worker is read from a copy, and the document names the
/// original.
pub(crate) fn point_document(
    options: &SimulateOptions,
    command_line: Vec<String>,
    workload_name: Option<&str>,
    point: serde_json::Value,
    cancel: &CancelToken,
) -> Result<Option<String>, CliError> {
    let done = simulate::execute(options, None, cancel.clone(), false)?;
    if done.simulated.outcome.info.cancelled {
        return Ok(None);
    }
    let mut doc = storsim_output::simulation_json(&done.results(command_line));
    if let Some(name) = workload_name {
        doc["workload"]["name"] = name.into();
    }
    doc["point"] = point;
    Ok(Some(storsim_output::json::text(&doc)))
}

impl PointRunner for SimulateRunner {
    fn check(&self, point: &Point) -> Result<(), String> {
        let (_, options) = self.arguments(point)?;
        options.check().map_err(|e| e.to_string())
    }

    fn run(&self, point: &Point, cancel: &CancelToken) -> Result<Option<String>, String> {
        let (line, options) = self.arguments(point)?;
        point_document(&options, line, None, point.json(), cancel).map_err(|e| e.message)
    }
}

/// The progress line: points done of all, the time left at the rate so far, and the point
/// that has been running longest.
struct Line<'a> {
    points: &'a [Point],
    progress: Progress,
    started: Instant,
    running: Vec<(usize, Instant)>,
    /// Points to run (those not found from an earlier run), and those of them ended.
    to_run: usize,
    ended: usize,
}

impl<'a> Line<'a> {
    fn new(points: &'a [Point], quiet: bool) -> Self {
        Line {
            points,
            progress: Progress::new(quiet, None),
            started: Instant::now(),
            running: Vec::new(),
            to_run: points.len(),
            ended: 0,
        }
    }

    fn draw(&mut self) {
        let total = self.to_run;
        let ended = self.ended;
        let elapsed = self.started.elapsed();
        let slowest = self
            .running
            .iter()
            .min_by_key(|(_, since)| *since)
            .map(|&(i, since)| {
                format!(
                    ", slowest running: {} ({:.0} s)",
                    self.points[i].label,
                    since.elapsed().as_secs_f64()
                )
            })
            .unwrap_or_default();
        self.progress.draw(|_| {
            let left = if ended == 0 {
                "?".to_string()
            } else {
                let seconds = elapsed.as_secs_f64() / ended as f64 * (total - ended) as f64;
                human_duration(Duration::from_secs_f64(seconds))
            };
            format!("{ended}/{total} points, {left} left{slowest}")
        });
    }
}

impl Observer for Line<'_> {
    fn planned(&mut self, to_run: usize) {
        self.to_run = to_run;
    }

    fn started(&mut self, index: usize) {
        self.running.push((index, Instant::now()));
        self.draw();
    }

    fn finished(&mut self, index: usize, status: &Status) {
        self.running.retain(|&(i, _)| i != index);
        self.ended += 1;
        if let Status::Failed(message) = status {
            let point = &self.points[index];
            eprintln!(
                "\rstorsim: point {} ({}) failed: {message}",
                point.id, point.label
            );
        }
        self.draw();
    }

    fn tick(&mut self) {
        self.draw();
    }
}

fn human_duration(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {} min", s / 3600, s % 3600 / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A point's typed options are what its recorded command line gives the command: the
    /// document's `command_line` reruns the point.
    #[test]
    fn a_points_options_are_those_its_command_line_parses_to() {
        let spec = Spec::parse(
            r#"
            devices = ["flashsim-2009", "devices/mine.toml"]
            workloads = ["synthetic:rw=randwrite,requests=100", "traces/t.disksim"]
            seeds = [3]
            [grid]
            "ssd.ftl" = ["page", "dftl"]
            [options]
            replay = "closed"
            iodepth = 4
            time_scale = 0.5
            wrap = true
            on_refused = "count"
            max_requests = 50
            window = "10ms"
            format = "disksim-ascii"
            skip_bad = true
            trace_devices = 2
            blkparse_event = "Q"
            parse_thread = "off"
            precondition = "steady"
            retries = 2
            retry_delay = "1ms"
            latency_includes_failed = true
            fairness = false
            "#,
            Path::new("/specs/all.toml"),
            None,
        )
        .expect("the spec");
        let points = storsim_sweep::expand(&spec).expect("the points");
        assert_eq!(points.len(), 8);
        let runner = SimulateRunner {
            dir: spec.dir().to_path_buf(),
        };
        for point in &points {
            let (line, typed) = runner.arguments(point).expect("typed");
            let parsed = simulate::options(&parse_simulate(&line).expect("parsed"))
                .expect("the command's options");
            assert_eq!(typed, parsed, "{}", line.join(" "));
        }
        let bad = Spec::parse(
            "devices = [\"flashsim-2009\"]\nworkloads = [\"synthetic:rw=read\"]\n\
             [options]\nreplay = \"sideways\"\n",
            Path::new("bad.toml"),
            None,
        )
        .expect("the spec");
        let point = &storsim_sweep::expand(&bad).expect("the points")[0];
        let mut line = vec!["storsim".to_string()];
        line.extend(point.simulate_args(Path::new("")));
        let Err(clap) = parse_simulate(&line) else {
            panic!("--replay sideways parsed");
        };
        assert_eq!(runner.arguments(point).err(), Some(clap));
    }
}
