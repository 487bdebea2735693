//! storsim as a typed library: what every front end (the `storsim` command, the Python
//! package, a sweep's runners) calls. A run is described as plain data
//! ([`SimulateOptions`]: the device, the workload, the run options as enums and numbers), run
//! here, and returned as typed results and the document `storsim simulate --json` writes for
//! the same run, byte for byte. Nothing here parses a command line, prints, or installs a
//! signal handler: a run stops when its [`CancelToken`] is cancelled.
//!
//! ```no_run
//! use storsim_api::{CancelToken, DeviceChoice, SimulateOptions, WorkloadChoice};
//! let options = SimulateOptions::new(
//!     DeviceChoice::named("flashsim-2009"),
//!     WorkloadChoice::Named("synthetic:rw=randread,requests=1000".into()),
//! );
//! let run = storsim_api::simulate(&options, true, None, &CancelToken::new())?;
//! assert!(run.document.contains("\"kind\": \"simulate\""));
//! assert_eq!(run.requests.map(|r| r.id.len()), Some(1000));
//! # Ok::<(), storsim_api::ApiError>(())
//! ```
//!
//! The other commands are here the same way, typed options in and typed results out, with
//! the command's documents: [`validate_disksim`] and [`validate_trace`] ([`Validation`]),
//! [`Calibrator`] (checks, opens and plans; the front end measures; [`Calibration`] fits),
//! [`import_disksim`], [`import_mqsim`], [`WriteLog`] (`replay-log`), [`inspect`], [`presets`], [`report`] and
//! sweeps ([`SweepPlan`]).

mod calibrate;
mod import;
mod inspect;
mod power_loss;
mod simulate;
mod sweep;
mod validate;

pub use calibrate::{Baseline, CalibrateOptions, CalibrateTarget, Calibration, Calibrator};
pub use import::{
    import_disksim, import_mqsim, ImportDisksimOptions, ImportMqsimOptions, ImportedDisksim,
    ImportedScenario, MqsimImport, Note,
};
pub use inspect::{inspect, inspect_command_line, open_for_inspect};
pub use power_loss::{ReplayLogOptions, ReplayedLog, WriteLog};
pub use simulate::{
    simulate, RequestColumns, RequestsCsvSink, SeriesColumns, SimulateRun, Simulation, OP_NAMES,
};
pub use storsim_blackbox::AccessPattern;
pub use storsim_calibrate::{FittedModel, Holdout, Statistic};
pub use storsim_config::PreconditionMode;
pub use storsim_engine::{CancelToken, Refused};
pub use storsim_sim::{
    duration_text, precondition_name, DeviceChoice, OptionError, ReplayChoice, SimulateOptions,
    WorkloadChoice,
};
pub use storsim_stats::WindowWidth;
pub use storsim_store::power::{Atomicity, CrashMode, CrashReport};
pub use storsim_store::write_log::ReplayTo;
pub use storsim_workload::trace::{BlkparseEvent, DeviceSelection, TraceOptions};
pub use sweep::{
    csv_bytes, point_document, point_options, run_point, write_outputs, PointResult,
    SimulateRunner, SweepPlan, SweepPoint, TraceCopy,
};
pub use validate::{
    validate_disksim, validate_trace, TraceValidation, ValidateDisksimOptions,
    ValidateTraceOptions, Validation,
};

use std::fmt;
use std::path::{Path, PathBuf};
use storsim_engine::EngineError;
use storsim_report::{Report, Run};
use storsim_sim::SimError;

/// Why a call failed; the message is the one the `storsim` command prints for the same input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApiError {
    /// Bad input the user can fix: an option, a device, a workload, a spec.
    Input(String),
    /// Something outside the input failed, such as writing a file.
    Failure(String),
    /// A device model broke its contract during a run: a bug in the model, not in the input.
    ModelFault(String),
}

impl ApiError {
    /// A simulation's error: a device model's fault says it is a bug in the model and gives
    /// the `seed` (when the run had one) to reproduce it; the rest is bad input.
    pub fn sim(error: SimError, seed: Option<u64>) -> Self {
        match error {
            SimError::Engine(e) => ApiError::engine(e, seed),
            other => ApiError::Input(other.to_string()),
        }
    }

    /// A run's error: [`ApiError::ModelFault`] for [`EngineError::Model`], else bad input.
    pub fn engine(error: EngineError, seed: Option<u64>) -> Self {
        if !matches!(error, EngineError::Model { .. }) {
            return ApiError::Input(error.to_string());
        }
        let seed = match seed {
            Some(seed) => format!(", --seed {seed}"),
            None => String::new(),
        };
        ApiError::ModelFault(format!(
            "model failure: {error}. This is a bug in the device model, not in the input; \
             please report it with the device file, the workload and the options{seed}"
        ))
    }

    /// What went wrong.
    pub fn message(&self) -> &str {
        match self {
            ApiError::Input(m) | ApiError::Failure(m) | ApiError::ModelFault(m) => m,
        }
    }

    /// Whether the user can fix it by changing the input.
    pub fn is_bad_input(&self) -> bool {
        matches!(self, ApiError::Input(_))
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for ApiError {}

/// A built-in device, as `storsim presets` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preset {
    /// The name a [`DeviceChoice`] takes.
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

/// `storsim report RUNS... --out OUT [--plots DIR]`: the run documents drawn as one page,
/// the first the reference the others are compared with.
pub fn report(runs: &[PathBuf], out: &Path, plots: Option<&Path>) -> Result<(), ApiError> {
    let runs = runs
        .iter()
        .map(|path| Run::read(path).map_err(|e| ApiError::Input(e.to_string())))
        .collect::<Result<Vec<_>, _>>()?;
    write_report(&storsim_report::render(&runs), Some(out), plots)
}

/// The error of writing `path`: outside the input, so a failure.
fn written(path: &Path) -> impl Fn(std::io::Error) -> ApiError + '_ {
    move |e| ApiError::Failure(format!("writing {}: {e}", path.display()))
}

/// Writes `report`'s page to `out` if given, and each plot as SVG and PNG into `plots` if
/// given.
pub fn write_report(
    report: &Report,
    out: Option<&Path>,
    plots: Option<&Path>,
) -> Result<(), ApiError> {
    if let Some(path) = out {
        std::fs::write(path, &report.html).map_err(written(path))?;
    }
    if let Some(dir) = plots {
        std::fs::create_dir_all(dir).map_err(written(dir))?;
        for plot in &report.plots {
            let svg = dir.join(format!("{}.svg", plot.id));
            std::fs::write(&svg, storsim_report::plot_svg(plot)).map_err(written(&svg))?;
            let png = dir.join(format!("{}.png", plot.id));
            let bytes =
                storsim_report::plot_png(plot).map_err(|e| ApiError::Failure(e.to_string()))?;
            std::fs::write(&png, bytes).map_err(written(&png))?;
        }
    }
    Ok(())
}
