//! `storsim calibrate`: the arguments as `storsim-api`'s calibrate options, the measurement
//! with its progress line and Ctrl-C, and the three outputs written where the arguments say.
//! Measuring stays here rather than in the library because it is the front end's: it reads
//! the user's Ctrl-C, draws the progress line, and on a real device runs by the wall clock
//! for minutes; the library checks, opens and plans before it and fits after it.

use crate::args::{CalibrateArgs, CalibrateHoldout, CalibrateStatistic, CalibratedModel};
use crate::progress::Progress;
use crate::{interrupt, CliError};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use storsim_api::{
    AccessPattern, CalibrateOptions, CalibrateTarget, Calibration, Calibrator, Holdout, Statistic,
};
use storsim_calibrate::{Measurements, Plan, Target, TargetKind};
use storsim_output::CalibrationResults;

/// Measures the target (after the baseline, if any), fits the models and writes the report,
/// the CSV and the chosen model: checks the arguments, plans, measures, fits, writes, and
/// says how the run ended.
pub fn run(args: CalibrateArgs) -> Result<(), CliError> {
    let mut calibrator = Calibrator::prepare(&options(&args)?)?;
    let stop = interrupt::stop_flag()?;
    let baseline = match (&mut calibrator.baseline, &args.baseline) {
        (Some(baseline), Some(path)) => {
            eprintln!("measuring the baseline {} first", path.display());
            Some(measure(
                &baseline.plan,
                &mut baseline.target,
                &stop,
                args.quiet,
                "baseline: ",
            ))
        }
        _ => None,
    };
    // A stop during the baseline leaves the target unmeasured.
    let measured = match baseline.as_ref().and_then(|b| b.stopped_early.clone()) {
        Some(stopped) => Measurements {
            stopped_early: Some(stopped),
            ..Measurements::default()
        },
        None => {
            let (info, plan) = (&calibrator.info, &calibrator.plan);
            if info.kind != TargetKind::Model && !args.quiet {
                eprintln!(
                    "{}: {} requests planned, seed {}; Ctrl-C stops and writes what was measured",
                    info.name,
                    plan.total_requests(),
                    plan.seed
                );
            }
            measure(
                &calibrator.plan,
                calibrator.target.as_mut(),
                &stop,
                args.quiet,
                "",
            )
        }
    };
    let calibration = calibrator.finish(measured, baseline.as_ref());
    let command_line = crate::destination::command_line();
    let report = calibration.results(&command_line, &args.out);
    let wrote_model = write_outputs(&args, &calibration, &report)?;
    outcome(&calibration.measured, wrote_model, args.model)
}

/// The arguments as the library's options: the words and sizes parsed, the rest as given.
fn options(args: &CalibrateArgs) -> Result<CalibrateOptions, CliError> {
    let target = match (&args.target, &args.simulate) {
        (Some(path), _) => CalibrateTarget::Path(path.clone()),
        (None, Some(device)) => CalibrateTarget::Model {
            device: device.clone(),
            precondition: args.precondition.map(crate::args::PreconditionArg::mode),
        },
        (None, None) => unreachable!("clap requires --target or --simulate"),
    };
    Ok(CalibrateOptions {
        target,
        baseline: args.baseline.clone(),
        allow_writes: args.allow_writes,
        patterns: parse_patterns(&args.patterns)?,
        sizes_bytes: args
            .sizes
            .iter()
            .map(|s| size(s, "--sizes"))
            .collect::<Result<Vec<u64>, _>>()?,
        zones: args.zones,
        repeats: args.repeats,
        requests_per_run: args.requests_per_run,
        warmup_requests: args.warmup,
        step_run_requests: args.step_run,
        step_size_bytes: size(&args.step_size, "--step-size")?,
        iodepths: args.iodepth.clone(),
        sweep_size_bytes: size(&args.sweep_size, "--sweep-size")?,
        sweep_requests: args.sweep_requests,
        seed: args.seed,
        model: args.model.into(),
        statistic: match args.statistic {
            CalibrateStatistic::Median => Statistic::Median,
            CalibrateStatistic::Min => Statistic::Min,
        },
        holdout: match args.holdout {
            CalibrateHoldout::Alternate => Holdout::Alternate,
            CalibrateHoldout::None => Holdout::None,
        },
        erase_latency_us: args.erase_latency_us,
        queue_depth: args.queue_depth,
    })
}

/// Writes the model file (when the chosen model was fitted and a device file can state it),
/// the text report, the JSON report and the CSV; returns whether the model was written. A
/// model the device-file format cannot state (a delay over its one-hour limit, say) is an
/// error, but only after the report and the CSV hold what was measured.
fn write_outputs(
    args: &CalibrateArgs,
    calibration: &Calibration,
    report: &CalibrationResults,
) -> Result<bool, CliError> {
    let model_text = calibration.model_file(report);
    let wrote_model = match &model_text {
        Some(Ok(text)) => {
            std::fs::write(&args.out, text)
                .map_err(|e| CliError::failure(format!("writing {}: {e}", args.out.display())))?;
            true
        }
        _ => false,
    };
    if args.report.as_deref() != Some(Path::new("-")) {
        crate::stdout::say!("{}", storsim_output::calibration_text(report, wrote_model));
    }
    if let Some(path) = &args.report {
        crate::destination::write_json(
            path,
            &storsim_output::calibration_json(report, wrote_model),
        )?;
    }
    if let Some(path) = &args.csv {
        std::fs::write(path, storsim_output::calibration_csv(report))
            .map_err(|e| CliError::failure(format!("writing {}: {e}", path.display())))?;
    }
    if let Some(Err(e)) = model_text {
        return Err(CliError::failure(format!("no model written: {e}")));
    }
    Ok(wrote_model)
}

/// How the run ended: interrupted (exit 130), stopped early, nothing to build the model
/// from, or done.
fn outcome(
    measured: &Measurements,
    wrote_model: bool,
    model: CalibratedModel,
) -> Result<(), CliError> {
    match &measured.stopped_early {
        Some(reason) if reason == "interrupted" => Err(CliError {
            message: "interrupted: the outputs hold what was measured".to_string(),
            status: interrupt::EXIT_INTERRUPTED,
        }),
        Some(reason) => Err(CliError::failure(format!(
            "the measurement stopped early: {reason} (the outputs hold what was measured)"
        ))),
        None if !wrote_model => Err(CliError::failure(format!(
            "nothing was measured that a {model:?} model can be built from; no model written"
        ))),
        None => Ok(()),
    }
}

fn measure(
    plan: &Plan,
    target: &mut dyn Target,
    stop: &AtomicBool,
    quiet: bool,
    prefix: &str,
) -> Measurements {
    // A model in virtual time finishes before a progress line would be worth reading.
    let quiet = quiet || target.info().kind == TargetKind::Model;
    let mut line = Progress::new(quiet, None);
    let m = storsim_calibrate::measure(plan, target, stop, &mut |e| {
        // The estimated duration is the rate so far applied to the whole plan.
        line.draw(|elapsed| {
            let elapsed = elapsed.as_secs_f64();
            let share = e.done as f64 / e.total.max(1) as f64;
            format!(
                "{prefix}{}: {}/{} requests ({:.0} %), {elapsed:.0} s of about {:.0} s",
                e.stage,
                e.done,
                e.total,
                100.0 * share,
                elapsed / share.max(1e-9)
            )
        })
    });
    line.finish();
    m
}

/// Parses `sr,rr,sw,rw` into patterns (the library measures them in its own order).
fn parse_patterns(names: &[String]) -> Result<Vec<AccessPattern>, CliError> {
    let mut chosen = Vec::new();
    for name in names {
        let p = AccessPattern::ALL
            .into_iter()
            .find(|p| p.short_name() == name.trim())
            .ok_or_else(|| {
                CliError::input(format!(
                    "--patterns: unknown pattern `{name}` (sr, rr, sw, rw)"
                ))
            })?;
        chosen.push(p);
    }
    Ok(chosen)
}

fn size(text: &str, option: &str) -> Result<u64, CliError> {
    storsim_workload::synthetic::parse_size(text.trim())
        .map_err(|e| CliError::input(format!("{option}: {e}")))
}
