//! `calibrate`: the options checked and the target opened and planned ([`Calibrator::prepare`]),
//! and the measurements fitted into a [`Calibration`] whose documents and model file are the
//! command's. Measuring itself is `storsim_calibrate::measure` over the [`Calibrator`]'s
//! targets and plans, called by the front end: it takes the front end's stop flag (Ctrl-C)
//! and progress callback, and on a real device it runs for minutes by the wall clock.

use crate::ApiError;
use std::path::{Path, PathBuf};
use storsim_blackbox::AccessPattern;
use storsim_calibrate::{
    Access, FileTarget, FitOptions, Fitted, FittedModel, Holdout, Measurements, ModelTarget, Plan,
    Statistic, Target, TargetInfo,
};
use storsim_config::{DeviceSpec, LoadedDevice, PreconditionMode};
use storsim_output::CalibrationResults;

/// What to measure.
#[derive(Clone, Debug, PartialEq)]
pub enum CalibrateTarget {
    /// A block device or regular file, measured with direct I/O.
    Path(PathBuf),
    /// A device model (preset or device file) measured in virtual time, its SSDs first
    /// preconditioned as `precondition` says (a sequential fill when `None`).
    Model {
        /// The preset or device file.
        device: String,
        /// The state its SSDs start in.
        precondition: Option<PreconditionMode>,
    },
}

/// `storsim calibrate`: what to measure, how, and which model to fit.
#[derive(Clone, Debug, PartialEq)]
pub struct CalibrateOptions {
    /// The target.
    pub target: CalibrateTarget,
    /// A path measured first with the same plan, whose cost is taken off the fits.
    pub baseline: Option<PathBuf>,
    /// Whether writes to a path target are allowed (they destroy its contents).
    pub allow_writes: bool,
    /// The access patterns to measure, in any order (they are measured in
    /// `PATTERN_ORDER`).
    pub patterns: Vec<AccessPattern>,
    /// Request sizes, increasing.
    pub sizes_bytes: Vec<u64>,
    /// Zones spread over the target.
    pub zones: u32,
    /// Runs per pattern, size and zone.
    pub repeats: u32,
    /// Requests per run.
    pub requests_per_run: u32,
    /// Requests issued and discarded before each pattern.
    pub warmup_requests: u32,
    /// Requests of the long sequential run per direction for step detection; `None` for
    /// 1024 with the step model, none otherwise.
    pub step_run_requests: Option<u32>,
    /// Request size of the step runs.
    pub step_size_bytes: u64,
    /// Queue depths of the throughput sweep.
    pub iodepths: Vec<u32>,
    /// Request size of the sweep.
    pub sweep_size_bytes: u64,
    /// Requests per sweep point.
    pub sweep_requests: u32,
    /// Seed of the random offsets.
    pub seed: u64,
    /// The model to write.
    pub model: FittedModel,
    /// The per-size statistic the fits use.
    pub statistic: Statistic,
    /// Sizes kept out of the fit to validate it.
    pub holdout: Holdout,
    /// The flash erase latency of the erase correction, in µs.
    pub erase_latency_us: f64,
    /// The queue depth written into the model.
    pub queue_depth: u32,
}

/// The baseline: a path measured before the target with the target's plan less the step
/// run and the depth sweep, which the baseline does not correct.
pub struct Baseline {
    /// The opened path.
    pub target: FileTarget,
    /// What it is.
    pub info: TargetInfo,
    /// Its plan.
    pub plan: Plan,
}

/// A calibration ready to measure: the target opened, its plan checked, the baseline opened.
pub struct Calibrator {
    /// The target.
    pub target: Box<dyn Target>,
    /// What it is.
    pub info: TargetInfo,
    /// Its plan.
    pub plan: Plan,
    /// The baseline, if the options name one.
    pub baseline: Option<Baseline>,
    /// The notes the report gives about the plan (sizes the target cannot take).
    notes: Vec<String>,
    fit: FitOptions,
    model: FittedModel,
}

/// A finished calibration: what was measured and what was fitted to it.
pub struct Calibration {
    /// The target measured.
    pub target: TargetInfo,
    /// The baseline measured, if any.
    pub baseline: Option<TargetInfo>,
    /// The target's plan.
    pub plan: Plan,
    /// What the target's measurement gave.
    pub measured: Measurements,
    /// The fits.
    pub fitted: Fitted,
    /// The model to write.
    pub model: FittedModel,
}

/// What `checked` keeps of the options once they are known good.
struct Checked {
    access: Access,
    step_run_requests: u32,
    /// The largest request the plan can make, for the targets' buffers.
    max_len: u64,
}

/// Checks every option that can be checked without the target, in the order the command
/// reports them.
fn check(options: &CalibrateOptions) -> Result<Checked, ApiError> {
    let input = |m: String| Err(ApiError::Input(m));
    let wants_writes = options.patterns.iter().any(|p| p.is_write());
    if let (CalibrateTarget::Path(path), true, false) =
        (&options.target, wants_writes, options.allow_writes)
    {
        return input(format!(
            "calibrating writes overwrites {} and destroys what it holds: pass --allow-writes \
             to allow it, or measure reads only with --patterns sr,rr",
            path.display()
        ));
    }
    if !(options.erase_latency_us.is_finite() && options.erase_latency_us > 0.0) {
        return input("--erase-latency-us must be a positive number".into());
    }
    let depth_max = storsim_core::QUEUE_DEPTH_MAX;
    if options.queue_depth == 0 || options.queue_depth > depth_max {
        return input(format!("--queue-depth must be 1..={depth_max}"));
    }
    if let Some(&d) = options.iodepths.iter().find(|&&d| d == 0 || d > depth_max) {
        return input(format!("--iodepth {d}: each depth must be 1..={depth_max}"));
    }
    let step = options.model == FittedModel::Step;
    let step_run_requests = options
        .step_run_requests
        .unwrap_or(if step { 1024 } else { 0 });
    if step && step_run_requests < 2 {
        return input("--model step needs --step-run of at least 2 requests".into());
    }
    let max_len = options
        .sizes_bytes
        .iter()
        .copied()
        .chain([options.step_size_bytes, options.sweep_size_bytes])
        .max()
        .unwrap_or(4096);
    Ok(Checked {
        access: if wants_writes {
            Access::ReadWrite
        } else {
            Access::ReadOnly
        },
        step_run_requests,
        max_len,
    })
}

impl Calibrator {
    /// Checks the options, opens the target, plans its measurement and opens the baseline;
    /// the error is the command's for the same options.
    pub fn prepare(options: &CalibrateOptions) -> Result<Calibrator, ApiError> {
        let checked = check(options)?;
        let target = open_target(options, &checked)?;
        let info = target.info().clone();
        let (plan, notes) = plan(options, &checked, &info)?;
        let baseline = match &options.baseline {
            Some(path) => Some(open_baseline(path, &checked, &plan, &info)?),
            None => None,
        };
        Ok(Calibrator {
            target,
            info,
            plan,
            baseline,
            notes,
            fit: FitOptions {
                statistic: options.statistic,
                holdout: options.holdout,
                erase_latency_us: options.erase_latency_us,
                queue_depth: options.queue_depth as usize,
            },
            model: options.model,
        })
    }

    /// Fits the models to what the target's measurement gave (less the baseline's, if
    /// measured).
    pub fn finish(self, measured: Measurements, baseline: Option<&Measurements>) -> Calibration {
        let mut fitted =
            storsim_calibrate::analyse(&measured, baseline, self.info.size_bytes, self.fit);
        fitted.calibration.notes.splice(0..0, self.notes);
        Calibration {
            target: self.info,
            baseline: self.baseline.map(|b| b.info),
            plan: self.plan,
            measured,
            fitted,
            model: self.model,
        }
    }
}

impl Calibration {
    /// The results as the output layer takes them, for documents whose `command_line` is
    /// `command_line` and a model written to `out`.
    pub fn results<'a>(
        &'a self,
        command_line: &'a [String],
        out: &'a Path,
    ) -> CalibrationResults<'a> {
        CalibrationResults {
            command_line,
            target: &self.target,
            baseline: self.baseline.as_ref(),
            plan: &self.plan,
            measured: &self.measured,
            fitted: &self.fitted,
            model: self.model,
            out,
        }
    }

    /// The model file's text: the chosen model as a device file under a header saying
    /// where its numbers come from; `None` when the chosen model was not fitted, an error
    /// when a device file cannot state it (a delay over its one-hour limit, say).
    pub fn model_file(&self, results: &CalibrationResults) -> Option<Result<String, String>> {
        let fitted = &self.fitted;
        let spec = match self.model {
            FittedModel::Linear => fitted.linear.clone().map(DeviceSpec::new),
            FittedModel::Table => fitted.table.clone().map(DeviceSpec::new),
            FittedModel::Step => fitted.step.clone().map(DeviceSpec::new),
        }?;
        Some(storsim_config::blackbox_device_toml(&spec).map(|body| {
            format!(
                "{}{body}",
                storsim_output::calibration_model_header(results)
            )
        }))
    }
}

/// The plan for a target of `info`, and the notes the report gives about sizes it dropped.
fn plan(
    options: &CalibrateOptions,
    checked: &Checked,
    info: &TargetInfo,
) -> Result<(Plan, Vec<String>), ApiError> {
    // Sizes below what direct I/O accepts cannot be measured on this target.
    let mut notes = Vec::new();
    let (kept, dropped): (Vec<u64>, Vec<u64>) = options
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
        return Err(ApiError::Input(
            "--sizes must be listed in increasing order without repeats".into(),
        ));
    }
    let plan = Plan {
        zones: options.zones,
        sizes_bytes: kept,
        patterns: storsim_calibrate::PATTERN_ORDER
            .into_iter()
            .filter(|p| options.patterns.contains(p))
            .collect(),
        repeats: options.repeats,
        requests_per_run: options.requests_per_run,
        warmup_requests: options.warmup_requests,
        step_run_requests: checked.step_run_requests,
        step_size_bytes: options.step_size_bytes,
        iodepths: options.iodepths.clone(),
        sweep_size_bytes: options.sweep_size_bytes,
        sweep_requests: options.sweep_requests,
        seed: options.seed,
    };
    plan.check(info.size_bytes, info.block_bytes)
        .map_err(|e| ApiError::Input(format!("{}: {e}", info.name)))?;
    Ok((plan, notes))
}

/// Opens the baseline at `path`, which must hold at least the target's bytes, with the
/// target's plan less the step run and the depth sweep.
fn open_baseline(
    path: &Path,
    checked: &Checked,
    plan: &Plan,
    info: &TargetInfo,
) -> Result<Baseline, ApiError> {
    let target = FileTarget::open(path, checked.access, checked.max_len)
        .map_err(|e| ApiError::Input(e.to_string()))?;
    let binfo = target.info().clone();
    if binfo.size_bytes < info.size_bytes {
        return Err(ApiError::Input(format!(
            "the baseline {} holds {} bytes, less than the target's {}: the same plan must fit \
             on both",
            path.display(),
            binfo.size_bytes,
            info.size_bytes
        )));
    }
    Ok(Baseline {
        target,
        info: binfo,
        plan: Plan {
            step_run_requests: 0,
            iodepths: Vec::new(),
            ..plan.clone()
        },
    })
}

fn open_target(options: &CalibrateOptions, checked: &Checked) -> Result<Box<dyn Target>, ApiError> {
    let input = |e: &dyn std::fmt::Display| ApiError::Input(e.to_string());
    let (name, precondition) = match &options.target {
        CalibrateTarget::Path(path) => {
            let target =
                FileTarget::open(path, checked.access, checked.max_len).map_err(|e| input(&e))?;
            return Ok(Box::new(target));
        }
        CalibrateTarget::Model {
            device,
            precondition,
        } => (device, *precondition),
    };
    let mut desc = storsim_config::load_device(name).map_err(|e| input(&e))?;
    // Reads are measured first, so on a clean SSD every one would find no data.
    let measures_reads = options.patterns.iter().any(|p| !p.is_write());
    let note = precondition_model(&mut desc, precondition, measures_reads)?;
    storsim_sim::check_memory(&desc.name, &desc.spec).map_err(|e| input(&e))?;
    let device = desc
        .spec
        .build()
        .map_err(|e| ApiError::Input(format!("{}: {e}", desc.name)))?;
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
    desc: &mut LoadedDevice,
    chosen: Option<PreconditionMode>,
    measures_reads: bool,
) -> Result<Option<String>, ApiError> {
    let how = chosen.unwrap_or(PreconditionMode::SequentialFill);
    if storsim_config::precondition_ssds(&mut desc.spec, how) == 0 {
        return match chosen {
            Some(_) => Err(ApiError::Input(format!(
                "--precondition: {} holds no SSD to precondition (it applies to `ssd` devices, \
                 and to arrays and hybrids of them)",
                desc.name
            ))),
            None => Ok(None),
        };
    }
    if how == PreconditionMode::Clean && measures_reads {
        return Err(ApiError::Input(format!(
            "--precondition clean: {} would start with no data, so every read would cost no \
             flash time and fit as free; precondition it with fill or steady, or measure \
             writes only with --patterns sw,rw",
            desc.name
        )));
    }
    Ok(Some(format!(
        "the model's SSDs were preconditioned ({}) before measuring{}",
        match how {
            PreconditionMode::Clean => "clean",
            PreconditionMode::SequentialFill => "a sequential fill of the whole logical space",
            PreconditionMode::SteadyState => "a fill, then random overwrites to steady state",
        },
        if chosen.is_none() {
            " (the default; --precondition chooses)"
        } else {
            ""
        }
    )))
}
