//! `storsim simulate`: the command line around `storsim_sim`'s [`Session`], which loads the
//! device, opens the workload and runs it; here are the options, the progress line, the
//! requests CSV and the reports.

use crate::args::{PreconditionArg, RefusedArg, ReplayArg, SimulateArgs};
use crate::progress::Progress;
use crate::{destination, interrupt, report_html, workload_arg, CliError};
use std::path::Path;
use std::time::Duration;
use storsim_api::Simulation;
use storsim_engine::{CancelToken, Refused};
use storsim_output::SimulationResults;
use storsim_sim::{DeviceChoice, OptionError, SimulateOptions, WorkloadChoice};

/// Runs `storsim simulate`: the run ([`execute`]), the reports, and the exit status of a
/// device that failed mid-run or of a run stopped with Ctrl-C (the reports then hold the
/// requests that completed).
pub fn run(args: SimulateArgs) -> Result<(), CliError> {
    // First, so that Ctrl-C during a long preconditioning or trace scan still ends the
    // process at once (the engine only looks at the token once the run has started).
    let stop = CancelToken::from_flag(interrupt::stop_flag()?);
    let options = options(&args)?;
    let done = execute(&options, args.requests_csv.as_deref(), stop, !args.quiet)?;
    let info = &done.run.simulated.outcome.info;
    let results = done.run.results(destination::command_line());
    if !args.quiet {
        say_detected_format(results.workload);
    }
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

/// A finished simulate run before its reports: the library's run, and its wall and CPU
/// time.
pub(crate) struct Done {
    pub run: Simulation,
    wall: Duration,
    cpu: Option<Duration>,
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
    let mut line = Progress::new(!progress, options.max_requests);
    let run = Simulation::run(
        options,
        requests_csv,
        None,
        &mut |n, t| line.update(n, t),
        stop,
    )?;
    let wall = line.finish();
    let cpu = line.cpu_time();
    if progress {
        // How the workload was read (an fio job file's options without effect here).
        for note in &run.simulated.session.notes {
            eprintln!("storsim: note: {note}");
        }
        warn_unmapped_reads(&run.device, options.device.precondition.is_none());
        let info = &run.simulated.outcome.info;
        if let Some(warning) = storsim_output::wrapped_warning(info, run.device.capacity_bytes) {
            eprintln!("storsim: warning: {warning}");
        }
    }
    Ok(Done { run, wall, cpu })
}

/// Says on standard error which format detection chose for the trace and from what, so that a
/// trace read with another format's units does not go unseen (the JSON document's
/// `workload.format` names the format; a format named with `--format` is not repeated).
fn say_detected_format(workload: &storsim_workload::Workload) {
    if let (Some(format), Some(evidence)) = (workload.format, &workload.detected_from) {
        eprintln!(
            "storsim: {}: read as {format} (detected: {evidence})",
            workload.name
        );
    }
}

/// Reads of pages that hold no data take no flash time, so a run made mostly of them (a trace
/// replayed on a clean SSD) measures nothing of the flash: says so once, with how many and how
/// to precondition. `can_choose`: whether `--precondition` was left to the device file.
fn warn_unmapped_reads(device: &storsim_output::DeviceFacts, can_choose: bool) {
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
    if let Some(path) = &args.mqsim_xml {
        std::fs::write(path, storsim_output::mqsim_results_xml(results))
            .map_err(|e| CliError::failure(format!("writing {}: {e}", path.display())))?;
    }
    if let Some(path) = &args.fio_json {
        std::fs::write(path, storsim_output::fio_json(results))
            .map_err(|e| CliError::failure(format!("writing {}: {e}", path.display())))?;
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

    /// The run `storsim simulate ARGS...` describes.
    fn simulate_options(args: &[&str]) -> SimulateOptions {
        let cli =
            crate::args::Cli::try_parse_from(["storsim", "simulate"].iter().chain(args).copied())
                .unwrap();
        match cli.command {
            crate::args::Command::Simulate(args) => options(&args).unwrap(),
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
        let options = simulate_options(&[
            "--device",
            device.to_str().unwrap(),
            "--workload",
            "synthetic:rw=randwrite,bs=4k,requests=100,iodepth=4,seed=3",
            "--seed",
            &seed,
        ]);
        let done = execute(&options, None, CancelToken::new(), false).unwrap();
        done.run
            .device
            .counters
            .iter()
            .filter(|c| c.name.starts_with("precondition_"))
            .map(|c| (c.name.clone(), c.value))
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
        let options = simulate_options(&["--device", "stec-zeus", "--workload", trace]);
        let before = storsim_workload::trace::files_opened();
        let done = execute(&options, None, CancelToken::new(), false).unwrap();
        assert_eq!(done.run.simulated.outcome.info.requests_completed, 3);
        assert_eq!(storsim_workload::trace::files_opened() - before, 2);
    }
}
