//! `storsim calibrate`: argument checks, targets, Ctrl-C, progress, and the three outputs.

use crate::args::{
    CalibrateArgs, CalibrateHoldout, CalibrateStatistic, CalibratedModel, PreconditionArg,
};
use crate::progress::Progress;
use crate::{interrupt, CliError};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use storsim_blackbox::AccessPattern;
use storsim_calibrate::{
    Access, FileTarget, FitOptions, Holdout, Measurements, ModelTarget, Plan, Statistic, Target,
    TargetInfo, TargetKind, PATTERN_ORDER,
};
use storsim_config::DeviceSpec;
use storsim_output::CalibrationResults;

/// Measures the target (after the baseline, if any), fits the models and writes the report,
/// the CSV and the chosen model: checks the arguments, plans, measures, fits, writes, and
/// says how the run ended.
pub fn run(args: CalibrateArgs) -> Result<(), CliError> {
    let checked = check_args(&args)?;
    let mut target = open_target(&args, checked.access, checked.max_len)?;
    let info = target.info().clone();
    let (plan, notes) = plan(&args, &checked, &info)?;

    let stop = interrupt::stop_flag()?;
    let (baseline, baseline_info) = match &args.baseline {
        Some(path) => {
            let (m, binfo) = measure_baseline(path, &args, &checked, &plan, &info, &stop)?;
            (Some(m), Some(binfo))
        }
        None => (None, None),
    };
    // A stop during the baseline leaves the target unmeasured.
    let measured = match baseline.as_ref().and_then(|b| b.stopped_early.clone()) {
        Some(stopped) => Measurements {
            stopped_early: Some(stopped),
            ..Measurements::default()
        },
        None => {
            if info.kind != TargetKind::Model && !args.quiet {
                eprintln!(
                    "{}: {} requests planned, seed {}; Ctrl-C stops and writes what was measured",
                    info.name,
                    plan.total_requests(),
                    plan.seed
                );
            }
            measure(&plan, target.as_mut(), &stop, args.quiet, "")
        }
    };

    let mut fitted = storsim_calibrate::analyse(
        &measured,
        baseline.as_ref(),
        info.size_bytes,
        fit_options(&args),
    );
    fitted.calibration.notes.splice(0..0, notes);
    let report = CalibrationResults {
        command_line: &crate::destination::command_line(),
        target: &info,
        baseline: baseline_info.as_ref(),
        plan: &plan,
        measured: &measured,
        fitted: &fitted,
        model: args.model.into(),
        out: &args.out,
    };
    let wrote_model = write_outputs(&args, &report)?;
    outcome(&measured, wrote_model, args.model)
}

/// What the arguments say, checked before any target is opened.
struct CheckedArgs {
    patterns: Vec<AccessPattern>,
    access: Access,
    sizes_bytes: Vec<u64>,
    step_run_requests: u32,
    step_size_bytes: u64,
    sweep_size_bytes: u64,
    /// The largest request the plan can make, for the targets' buffers.
    max_len: u64,
}

/// Checks every argument that can be checked without the target, in the order the user is
/// told about them.
fn check_args(args: &CalibrateArgs) -> Result<CheckedArgs, CliError> {
    let patterns = parse_patterns(&args.patterns)?;
    let wants_writes = patterns.iter().any(|p| p.is_write());
    if wants_writes && !args.allow_writes && args.target.is_some() {
        return Err(CliError::input(format!(
            "calibrating writes overwrites {} and destroys what it holds: pass --allow-writes \
             to allow it, or measure reads only with --patterns sr,rr",
            args.target.as_deref().unwrap_or(Path::new("")).display()
        )));
    }
    if !(args.erase_latency_us.is_finite() && args.erase_latency_us > 0.0) {
        return Err(CliError::input(
            "--erase-latency-us must be a positive number",
        ));
    }
    if args.queue_depth == 0 || args.queue_depth > storsim_core::QUEUE_DEPTH_MAX {
        return Err(CliError::input(format!(
            "--queue-depth must be 1..={}",
            storsim_core::QUEUE_DEPTH_MAX
        )));
    }
    if let Some(&d) = args
        .iodepth
        .iter()
        .find(|&&d| d == 0 || d > storsim_core::QUEUE_DEPTH_MAX)
    {
        return Err(CliError::input(format!(
            "--iodepth {d}: each depth must be 1..={}",
            storsim_core::QUEUE_DEPTH_MAX
        )));
    }
    let sizes_bytes = args
        .sizes
        .iter()
        .map(|s| size(s, "--sizes"))
        .collect::<Result<Vec<u64>, _>>()?;
    let step_run_requests = args
        .step_run
        .unwrap_or(if args.model == CalibratedModel::Step {
            1024
        } else {
            0
        });
    if args.model == CalibratedModel::Step && step_run_requests < 2 {
        return Err(CliError::input(
            "--model step needs --step-run of at least 2 requests",
        ));
    }
    let access = if wants_writes {
        Access::ReadWrite
    } else {
        Access::ReadOnly
    };
    let step_size_bytes = size(&args.step_size, "--step-size")?;
    let sweep_size_bytes = size(&args.sweep_size, "--sweep-size")?;
    let max_len = sizes_bytes
        .iter()
        .copied()
        .chain([step_size_bytes, sweep_size_bytes])
        .max()
        .unwrap_or(4096);
    Ok(CheckedArgs {
        patterns,
        access,
        sizes_bytes,
        step_run_requests,
        step_size_bytes,
        sweep_size_bytes,
        max_len,
    })
}

/// The plan for a target of `info`, and the notes the report gives about sizes it dropped.
fn plan(
    args: &CalibrateArgs,
    checked: &CheckedArgs,
    info: &TargetInfo,
) -> Result<(Plan, Vec<String>), CliError> {
    // Sizes below what direct I/O accepts cannot be measured on this target.
    let mut notes = Vec::new();
    let (kept, dropped): (Vec<u64>, Vec<u64>) = checked
        .sizes_bytes
        .iter()
        .partition(|&&s| s >= info.block_bytes);
    if !dropped.is_empty() {
        notes.push(format!(
            "sizes {dropped:?} are below the target's {}-byte block and were not measured",
            info.block_bytes
        ));
    }
    let mut sorted = kept.clone();
    sorted.sort_unstable();
    sorted.dedup();
    if sorted != kept {
        return Err(CliError::input(
            "--sizes must be listed in increasing order without repeats",
        ));
    }
    let plan = Plan {
        zones: args.zones,
        sizes_bytes: kept,
        patterns: checked.patterns.clone(),
        repeats: args.repeats,
        requests_per_run: args.requests_per_run,
        warmup_requests: args.warmup,
        step_run_requests: checked.step_run_requests,
        step_size_bytes: checked.step_size_bytes,
        iodepths: args.iodepth.clone(),
        sweep_size_bytes: checked.sweep_size_bytes,
        sweep_requests: args.sweep_requests,
        seed: args.seed,
    };
    plan.check(info.size_bytes, info.block_bytes)
        .map_err(|e| CliError::input(format!("{}: {e}", info.name)))?;
    Ok((plan, notes))
}

/// Measures the baseline at `path` with the target's plan (without the step run and the depth
/// sweep, which the baseline does not correct), before the target.
fn measure_baseline(
    path: &Path,
    args: &CalibrateArgs,
    checked: &CheckedArgs,
    plan: &Plan,
    info: &TargetInfo,
    stop: &AtomicBool,
) -> Result<(Measurements, TargetInfo), CliError> {
    let mut baseline =
        FileTarget::open(path, checked.access, checked.max_len).map_err(CliError::input)?;
    let binfo = baseline.info().clone();
    if binfo.size_bytes < info.size_bytes {
        return Err(CliError::input(format!(
            "the baseline {} holds {} bytes, less than the target's {}: the same plan must fit \
             on both",
            path.display(),
            binfo.size_bytes,
            info.size_bytes
        )));
    }
    let baseline_plan = Plan {
        step_run_requests: 0,
        iodepths: Vec::new(),
        ..plan.clone()
    };
    eprintln!("measuring the baseline {} first", path.display());
    let m = measure(
        &baseline_plan,
        &mut baseline,
        stop,
        args.quiet,
        "baseline: ",
    );
    Ok((m, binfo))
}

fn fit_options(args: &CalibrateArgs) -> FitOptions {
    FitOptions {
        statistic: match args.statistic {
            CalibrateStatistic::Median => Statistic::Median,
            CalibrateStatistic::Min => Statistic::Min,
        },
        holdout: match args.holdout {
            CalibrateHoldout::Alternate => Holdout::Alternate,
            CalibrateHoldout::None => Holdout::None,
        },
        erase_latency_us: args.erase_latency_us,
        queue_depth: args.queue_depth as usize,
    }
}

/// Writes the model file (when the chosen model was fitted and a device file can state it),
/// the text report, the JSON report and the CSV; returns whether the model was written. A
/// model the device-file format cannot state (a delay over its one-hour limit, say) is an
/// error, but only after the report and the CSV hold what was measured.
fn write_outputs(args: &CalibrateArgs, report: &CalibrationResults) -> Result<bool, CliError> {
    let fitted = report.fitted;
    let model_spec = match args.model {
        CalibratedModel::Linear => fitted.linear.clone().map(DeviceSpec::new),
        CalibratedModel::Table => fitted.table.clone().map(DeviceSpec::new),
        CalibratedModel::Step => fitted.step.clone().map(DeviceSpec::new),
    };
    let model_text = model_spec.as_ref().map(|spec| {
        storsim_config::blackbox_device_toml(spec)
            .map(|body| format!("{}{body}", storsim_output::calibration_model_header(report)))
    });
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

fn open_target(
    args: &CalibrateArgs,
    access: Access,
    max_len: u64,
) -> Result<Box<dyn Target>, CliError> {
    if let Some(path) = &args.target {
        return Ok(Box::new(
            FileTarget::open(path, access, max_len).map_err(CliError::input)?,
        ));
    }
    let name = args
        .simulate
        .as_deref()
        .expect("clap requires --target or --simulate");
    let mut desc = storsim_config::load_device(name).map_err(CliError::input)?;
    // Reads are measured first, so on a clean SSD every one would find no data.
    let measures_reads = parse_patterns(&args.patterns)?
        .iter()
        .any(|p| !p.is_write());
    let note = precondition_model(&mut desc, args.precondition, measures_reads)?;
    crate::simulate::check_memory(&desc.name, &desc.spec)?;
    let device = desc
        .spec
        .build()
        .map_err(|e| CliError::input(format!("{}: {e}", desc.name)))?;
    let target = ModelTarget::new(name, device);
    Ok(Box::new(match note {
        Some(note) => target.with_note(note),
        None => target,
    }))
}

/// Sets the starting state of the model's SSDs before it is measured: `chosen`, or a
/// sequential fill by default. A clean SSD holds no data, so its reads cost no flash time and
/// would fit as free (A = B = 0); a clean start is therefore refused when reads are measured.
/// Returns the note the report gives, or `None` for a model with no SSD (a disk, a black-box
/// model), where only an explicit choice is an error.
fn precondition_model(
    desc: &mut storsim_config::LoadedDevice,
    chosen: Option<PreconditionArg>,
    measures_reads: bool,
) -> Result<Option<String>, CliError> {
    let how = chosen.unwrap_or(PreconditionArg::Fill);
    if storsim_config::precondition_ssds(&mut desc.spec, how.mode()) == 0 {
        return match chosen {
            Some(_) => Err(CliError::input(format!(
                "--precondition: {} holds no SSD to precondition (it applies to `ssd` devices, \
                 and to arrays and hybrids of them)",
                desc.name
            ))),
            None => Ok(None),
        };
    }
    if how == PreconditionArg::Clean && measures_reads {
        return Err(CliError::input(format!(
            "--precondition clean: {} would start with no data, so every read would cost no \
             flash time and fit as free; precondition it with fill or steady, or measure \
             writes only with --patterns sw,rw",
            desc.name
        )));
    }
    Ok(Some(format!(
        "the model's SSDs were preconditioned ({}) before measuring{}",
        match how {
            PreconditionArg::Clean => "clean",
            PreconditionArg::Fill => "a sequential fill of the whole logical space",
            PreconditionArg::Steady => "a fill, then random overwrites to steady state",
        },
        if chosen.is_none() {
            " (the default; --precondition chooses)"
        } else {
            ""
        }
    )))
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

/// Parses `sr,rr,sw,rw` into patterns in measuring order.
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
    Ok(PATTERN_ORDER
        .into_iter()
        .filter(|p| chosen.contains(p))
        .collect())
}

fn size(text: &str, option: &str) -> Result<u64, CliError> {
    storsim_workload::synthetic::parse_size(text.trim())
        .map_err(|e| CliError::input(format!("{option}: {e}")))
}
