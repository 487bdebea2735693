//! `storsim simulate`: the command line around `storsim_sim`'s [`Session`], which loads the
//! device, opens the workload and runs it; here are the options, the progress line, the
//! requests CSV and the reports.

use crate::args::{PreconditionArg, RefusedArg, ReplayArg, SimulateArgs};
use crate::progress::Progress;
use crate::{destination, interrupt, report_html, workload_arg, CliError};
use std::path::Path;
use std::time::Duration;
use storsim_core::Completion;
use storsim_engine::{
    CancelToken, CompletionSink, EngineOptions, OutOfRange, Refused, Replay, Retry,
};
use storsim_output::{DeviceFacts, FlowResult, RequestsCsv, SimulationResults};
use storsim_sim::{Fairness, Session, WorkloadSource};
use storsim_stats::Summary;
use storsim_workload::{Pacing, Workload};

/// Runs `storsim simulate`: the run ([`execute`]), the reports, and the exit status of a
/// device that failed mid-run or of a run stopped with Ctrl-C (the reports then hold the
/// requests that completed).
pub fn run(args: SimulateArgs) -> Result<(), CliError> {
    // First, so that Ctrl-C during a long preconditioning or trace scan still ends the
    // process at once (the engine only looks at the token once the run has started).
    let stop = CancelToken::from_flag(interrupt::stop_flag()?);
    let done = execute(&args, stop, !args.quiet)?;
    let info = &done.outcome.info;
    let results = done.results(&args, destination::command_line());
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

/// A finished simulate run before its reports: the session, the device's facts at the end
/// (its counters and wear, read once), the options it ran with, what it gave, and its wall and
/// CPU time.
pub(crate) struct Done {
    session: Session,
    device: DeviceFacts,
    replay: Replay,
    pub outcome: storsim_sim::Outcome,
    /// With `--fairness`, each flow's statistics alone on the device and the fairness.
    alone: Option<(Vec<Summary>, Fairness)>,
    wall: Duration,
    cpu: Option<Duration>,
}

impl Done {
    /// The results to report, for a document whose `command_line` is `command_line`.
    pub fn results(&self, args: &SimulateArgs, command_line: Vec<String>) -> SimulationResults<'_> {
        SimulationResults {
            seed: args.seed,
            command_line,
            device: &self.device,
            workload: &self.session.workload,
            replay: self.replay,
            info: &self.outcome.info,
            summary: &self.outcome.summary,
            series: self.outcome.series.as_ref(),
            flows: self
                .session
                .flows
                .iter()
                .zip(&self.outcome.flows)
                .enumerate()
                .map(|(index, (flow, summary))| FlowResult {
                    spec: &flow.spec,
                    summary,
                    alone: self
                        .alone
                        .as_ref()
                        .map(|(alone, fairness)| (&alone[index], fairness.slowdowns[index])),
                })
                .collect(),
            fairness: self.alone.as_ref().map(|(_, f)| f.fairness),
            faults: self.session.faults.as_ref(),
        }
    }
}

/// Loads the device (with `--set`'s keys), opens the workload and runs it, with the requests
/// CSV if asked and the progress line if `progress`; `stop` ends the run early.
pub(crate) fn execute(
    args: &SimulateArgs,
    stop: CancelToken,
    progress: bool,
) -> Result<Done, CliError> {
    execute_into(args, stop, progress, None)
}

/// [`execute`], also handing every completion to `also` (the library's request columns).
pub(crate) fn execute_into(
    args: &SimulateArgs,
    stop: CancelToken,
    progress: bool,
    mut also: Option<&mut dyn CompletionSink>,
) -> Result<Done, CliError> {
    let source = workload_arg::simulate_source(args)?;
    let mut device = storsim_sim::load_device(&args.device, &args.set)
        .map_err(|e| CliError::sim(e, Some(args.seed)))?;
    if let Some(how) = args.precondition {
        precondition(&mut device, how)?;
    }
    let alone_device = args.fairness.then(|| device.clone());
    let mut session =
        Session::new(device, &source, args.seed).map_err(|e| CliError::sim(e, Some(args.seed)))?;
    let options = engine_options(args, &session.workload)?;
    session.window = args.window.0;
    session.collector.latency_includes_failed = args.latency_includes_failed;
    let flows = match &source {
        WorkloadSource::Flows { flows, .. } => flows.len(),
        _ => 1,
    };
    let mut csv = match &args.requests_csv {
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
    let mut line = Progress::new(!progress, args.max_requests);
    let outcome = session
        .run(&options, sink, &mut |n, t| line.update(n, t), Some(stop))
        .map_err(|e| CliError::sim(e, Some(args.seed)))?;
    let wall = line.finish();
    let cpu = line.cpu_time();
    let device = DeviceFacts::read(&session.device_name, session.device.as_ref());
    if progress {
        warn_unmapped_reads(&device, args.precondition.is_none());
    }
    if let Some(csv) = csv {
        csv.finish()?;
    }
    let alone = match (alone_device, &source) {
        (
            Some(device),
            WorkloadSource::Flows {
                flows,
                options: trace,
                ..
            },
        ) => {
            let jobs = args.jobs.unwrap_or_else(|| {
                std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
            });
            let alone = storsim_sim::run_alone(&device, flows, trace, args.seed, &options, jobs)
                .map_err(|e| CliError::sim(e, Some(args.seed)))?;
            let fairness = storsim_sim::fairness(&outcome.flows, &alone);
            Some((alone, fairness))
        }
        (Some(_), _) => {
            return Err(CliError::input(
                "--fairness compares flows: give a flow file or --flow arguments",
            ))
        }
        (None, _) => None,
    };
    Ok(Done {
        session,
        device,
        replay: options.replay,
        outcome,
        alone,
        wall,
        cpu,
    })
}

/// Sets every SSD of `device` to start as `how` says (`--precondition`), and says so in its
/// name; refuses a device with no SSD, where the option would do nothing.
pub(crate) fn precondition(
    device: &mut storsim_config::LoadedDevice,
    how: PreconditionArg,
) -> Result<(), CliError> {
    if storsim_config::precondition_ssds(&mut device.spec, how.mode()) == 0 {
        return Err(CliError::input(format!(
            "--precondition: {} holds no SSD to precondition (it applies to `ssd` devices, \
             and to arrays and hybrids of them)",
            device.name
        )));
    }
    device.name = format!("{} [precondition={}]", device.name, how.name());
    Ok(())
}

/// Reads of pages that hold no data take no flash time, so a run made mostly of them (a trace
/// replayed on a clean SSD) measures nothing of the flash: says so once, with how many and how
/// to precondition. `can_choose`: whether `--precondition` was left to the device file.
fn warn_unmapped_reads(device: &DeviceFacts, can_choose: bool) {
    let Some(r) = storsim_sim::unmapped_reads(&device.counters, &device.descriptors) else {
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

/// The engine's options from the command line and the workload's pacing and duration.
fn engine_options(args: &SimulateArgs, workload: &Workload) -> Result<EngineOptions, CliError> {
    Ok(EngineOptions {
        replay: replay(args.replay, args.iodepth, args.time_scale, workload.pacing)?,
        out_of_range: if args.wrap {
            OutOfRange::Wrap
        } else {
            OutOfRange::Error
        },
        on_refused: match args.on_refused {
            RefusedArg::Stop => Refused::Stop,
            RefusedArg::Count => Refused::Count,
        },
        max_requests: args.max_requests,
        duration_ns: workload.duration_ns,
        retry: Retry {
            attempts: args.retries,
            delay_ns: args.retry_delay,
        },
    })
}

/// How the workload is replayed: `--replay` and `--iodepth`, or else the workload's own
/// pacing; an open-loop replay, chosen or natural, takes `--time-scale`.
pub(crate) fn replay(
    chosen: Option<ReplayArg>,
    iodepth: Option<u32>,
    time_scale: f64,
    pacing: Pacing,
) -> Result<Replay, CliError> {
    let replay = match (chosen, iodepth) {
        (None, None) => Replay::natural(pacing),
        (None | Some(ReplayArg::Closed), Some(depth)) => Replay::Closed { depth },
        (Some(ReplayArg::Closed), None) => {
            return Err(CliError::input("--replay closed needs --iodepth N"));
        }
        (Some(ReplayArg::Open), None) => Replay::Open { time_scale },
        (Some(ReplayArg::Afap), None) => Replay::AsFastAsPossible,
        (Some(_), Some(_)) => {
            return Err(CliError::input("--iodepth goes with --replay closed only"));
        }
    };
    Ok(match replay {
        Replay::Open { .. } => Replay::Open { time_scale },
        other => other,
    })
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, Parser};

    /// The arguments of `storsim simulate ARGS...`.
    fn simulate_args(args: &[&str]) -> SimulateArgs {
        let cli =
            crate::args::Cli::try_parse_from(["storsim", "simulate"].iter().chain(args).copied())
                .unwrap();
        match cli.command {
            crate::args::Command::Simulate(args) => args,
            _ => unreachable!("a simulate command line"),
        }
    }

    /// The `precondition_*` counters of a run of `storsim simulate --seed SEED` on a small SSD
    /// preconditioned to steady state whose file says `[ssd] seed = FILE_SEED`.
    fn preconditioning(seed: u64, file_seed: u64) -> Vec<(String, f64)> {
        let dir = tempfile::tempdir().unwrap();
        let device = dir.path().join("ssd.toml");
        std::fs::write(
            &device,
            format!(
                "model = \"ssd\"\n[ssd]\nftl = \"page\"\nseed = {file_seed}\n\
                 [ssd.precondition]\nmode = \"steady-state\"\n\
                 [ssd.geometry]\nchannels = 2\nchips_per_channel = 1\ndies_per_chip = 2\n\
                 planes_per_die = 1\nblocks_per_plane = 32\npages_per_block = 16\n\
                 page_bytes = 4096\n[ssd.timing]\ncell = \"mlc\"\n\
                 read_us_by_level = [40, 60]\nprogram_us_by_level = [300, 900]\n\
                 erase_us = 3000\nchannel_mts = 400\n"
            ),
        )
        .unwrap();
        let seed = seed.to_string();
        let args = simulate_args(&[
            "--device",
            device.to_str().unwrap(),
            "--workload",
            "synthetic:rw=randwrite,bs=4k,requests=100,iodepth=4,seed=3",
            "--seed",
            &seed,
        ]);
        let done = execute(&args, CancelToken::new(), false).unwrap();
        done.session
            .device
            .counters()
            .into_iter()
            .filter(|c| c.name.starts_with("precondition_"))
            .map(|c| (c.name, c.value))
            .collect()
    }

    #[test]
    fn the_seed_leaves_preconditioning_to_the_device_files_seed_as_its_help_says() {
        let help = crate::args::Cli::command()
            .find_subcommand_mut("simulate")
            .expect("a simulate command")
            .render_long_help()
            .to_string();
        assert!(
            help.contains("Not an SSD's preconditioning") && help.contains("`[ssd] seed`"),
            "{help}"
        );
        let default = preconditioning(1, 1);
        assert!(
            default
                .iter()
                .any(|(name, v)| name == "precondition_erases" && *v > 0.0),
            "{default:?}"
        );
        assert_eq!(
            preconditioning(2, 1),
            default,
            "--seed changed preconditioning"
        );
        assert_ne!(
            preconditioning(1, 2),
            default,
            "the file's seed did not reach it"
        );
    }

    #[test]
    fn a_run_opens_its_trace_once_to_look_at_it_and_once_to_run_it() {
        // A trace of three devices, laid out one after another: the look at it (flow file or
        // trace, and which format), then one open for the run's passes (its device scan, the
        // sizing pass, the records), which used to open it three more times.
        let trace = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../workload/tests/data/mqsim_sample.trace"
        );
        let args = simulate_args(&["--device", "stec-zeus", "--workload", trace, "--quiet"]);
        let before = storsim_workload::trace::files_opened();
        let done = execute(&args, CancelToken::new(), false).unwrap();
        assert_eq!(done.outcome.info.requests_completed, 3);
        assert_eq!(storsim_workload::trace::files_opened() - before, 2);
    }

    #[test]
    fn replay_follows_the_options_or_else_the_workload() {
        let open = Pacing::Open;
        let closed = Pacing::Closed { depth: 8 };
        // The workload's own pacing, with the time scale for an open loop.
        assert_eq!(
            replay(None, None, 0.5, open).ok(),
            Some(Replay::Open { time_scale: 0.5 })
        );
        assert_eq!(
            replay(None, None, 0.5, closed).ok(),
            Some(Replay::Closed { depth: 8 })
        );
        // --iodepth alone means a closed loop at that depth, whatever the workload's pacing.
        assert_eq!(
            replay(None, Some(3), 1.0, open).ok(),
            Some(Replay::Closed { depth: 3 })
        );
        assert_eq!(
            replay(Some(ReplayArg::Closed), Some(3), 1.0, closed).ok(),
            Some(Replay::Closed { depth: 3 })
        );
        assert_eq!(
            replay(Some(ReplayArg::Open), None, 2.0, closed).ok(),
            Some(Replay::Open { time_scale: 2.0 })
        );
        assert_eq!(
            replay(Some(ReplayArg::Afap), None, 2.0, open).ok(),
            Some(Replay::AsFastAsPossible)
        );
    }

    #[test]
    fn replay_refuses_a_depth_without_a_closed_loop_and_a_closed_loop_without_one() {
        let Err(e) = replay(Some(ReplayArg::Closed), None, 1.0, Pacing::Open) else {
            panic!("--replay closed without --iodepth accepted");
        };
        assert_eq!(e.status, crate::EXIT_BAD_INPUT);
        assert!(e.message.contains("needs --iodepth"), "{}", e.message);
        for chosen in [ReplayArg::Open, ReplayArg::Afap] {
            let Err(e) = replay(Some(chosen), Some(4), 1.0, Pacing::Open) else {
                panic!("--iodepth accepted without --replay closed");
            };
            assert_eq!(e.status, crate::EXIT_BAD_INPUT);
            assert!(e.message.contains("--replay closed only"), "{}", e.message);
        }
    }
}
