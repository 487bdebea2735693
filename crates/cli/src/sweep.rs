//! `storsim sweep`: the command line around `storsim_sweep`, whose points run through
//! `storsim-api`'s runner as the `storsim simulate` runs they stand for (their typed options,
//! `storsim_api::point_options`), so a point's document is what that command writes; here are
//! the progress line and the exit status.

use crate::args::SweepArgs;
use crate::progress::Progress;
use crate::{interrupt, CliError};
use std::time::{Duration, Instant};
use storsim_api::{write_outputs, SimulateRunner};
use storsim_engine::CancelToken;
use storsim_sweep::{Observer, Point, RunOptions, Spec, Status};

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
        let bytes = storsim_output::sweep_parquet(&outcome.table)
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
    use crate::args::{Cli, Command, SimulateArgs};
    use crate::simulate;
    use clap::Parser;
    use std::path::Path;

    /// `line` (`storsim simulate ...`) parsed as the command parses it; the error is clap's
    /// message without its `error: ` and the usage hint meant for a terminal.
    fn parse_simulate(line: &[String]) -> Result<SimulateArgs, String> {
        let parsed = Cli::try_parse_from(line).map_err(|e| {
            let message = e.to_string();
            let first = message.lines().next().unwrap_or_default();
            first.trim_start_matches("error: ").to_string()
        })?;
        match parsed.command {
            Command::Simulate(args) => Ok(args),
            _ => panic!("not a simulate command: {}", line.join(" ")),
        }
    }

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
