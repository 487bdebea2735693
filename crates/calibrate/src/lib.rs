//! `storsim calibrate`: the IBM paper's method (microbenchmarks over an odd number of zones,
//! a least-squares fit per access pattern with r² and p-value, % error per pattern) and the
//! hybrid-disk thesis' extraction (minimum of repeated runs, the erase correction k) as a tool.
//!
//! The pipeline is plan -> measure -> analyse:
//!
//! - [`plan`]: what to measure and the exact, seeded request sequence (pure data);
//! - [`target`]: what is measured: a block device or file (O_DIRECT, wall clock), or a device
//!   model in virtual time;
//! - [`probe`]: runs the plan on a target and keeps every latency; stops cleanly on request;
//! - [`analysis`] and [`fit`]: statistics, fits, the `linear` / `table` / `step` models and
//!   their validation on held-out sizes. No I/O, no clocks.
//!
//! See docs/calibrate.md.

pub mod analysis;
pub mod fit;
pub mod plan;
pub mod probe;
pub mod target;

pub use analysis::{analyse, Calibration, FitOptions, Fitted, FittedModel, Holdout, Statistic};
pub use plan::{Plan, PlanError, PATTERN_ORDER};
pub use probe::{measure, Measurements, ProgressEvent};
pub use target::{Access, FileTarget, ModelTarget, Target, TargetError, TargetInfo, TargetKind};
