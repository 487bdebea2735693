//! `storsim sweep` as a library: a spec (devices, a grid of device-file overrides, workloads
//! with a grid of generator keys, seeds, options, plots; docs/sweep.md) checked and expanded
//! into points, each one `storsim simulate` run, run in parallel into an output folder that a
//! second run resumes, and one results table of every point's parameters and results.
//!
//! The crate runs nothing itself: a [`PointRunner`] (`storsim-api`'s, on `storsim_sim`) runs each
//! point and returns its JSON document. Each point is deterministic and independent of the
//! others, so the results do not depend on `jobs` or on the order points finish in.
//!
//! ```
//! use storsim_sweep::{expand, Spec};
//! let spec = Spec::parse(
//!     r#"
//!     devices = ["flashsim-2009"]
//!     workloads = ["synthetic:rw=randwrite,requests=1000"]
//!     seeds = [1, 2]
//!     [grid]
//!     "ssd.ftl" = ["page", "dftl"]
//!     "#,
//!     std::path::Path::new("ftls.toml"),
//!     None,
//! )?;
//! let points = expand(&spec)?;
//! assert_eq!(points.len(), 4);
//! assert_eq!(points[3].label, "ssd.ftl=dftl seed=2");
//! assert_eq!(
//!     points[0].simulate_args(spec.dir()).join(" "),
//!     "simulate --device flashsim-2009 --set ssd.ftl=\"page\" \
//!      --workload synthetic:rw=randwrite,requests=1000 --seed 1"
//! );
//! # Ok::<(), storsim_sweep::SweepError>(())
//! ```

mod options;
mod point;
mod runner;
mod spec;
mod table;

pub use options::OptionValue;
pub use point::{expand, parameter_columns, Point};
pub use runner::{
    check, point_file, read_point, results_table, run, write_whole, Observer, Outcome, PointRunner,
    RunOptions, Status,
};
pub use spec::{CdfOp, ExplicitPoint, PlotSpec, Spec};
pub use table::{flatten, Cell, Table};

use std::fmt;
use std::path::PathBuf;

/// The folder of the output folder that holds each point's document.
pub const POINTS_DIR: &str = "points";

/// Why a sweep could not start or finish.
#[derive(Debug)]
pub enum SweepError {
    /// The spec is wrong: a key unknown, a value refused, a grid empty.
    Spec {
        /// The spec file.
        file: PathBuf,
        /// The key, as a dotted path into the spec (empty for a syntax error, whose message
        /// gives the line).
        key: String,
        /// What is wrong.
        message: String,
    },
    /// A point cannot run (found before any ran): its device, overrides or workload.
    Point {
        /// Its number, from 1 in point order.
        index: usize,
        /// Its label.
        label: String,
        /// What is wrong.
        message: String,
    },
    /// Reading the spec or writing the outputs failed.
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        message: String,
    },
}

impl fmt::Display for SweepError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SweepError::Spec { file, key, message } if key.is_empty() => {
                write!(f, "{}: {message}", file.display())
            }
            SweepError::Spec { file, key, message } => {
                write!(f, "{}: key `{key}`: {message}", file.display())
            }
            SweepError::Point {
                index,
                label,
                message,
            } => write!(f, "point {index} ({label}): {message}"),
            SweepError::Io { path, message } => write!(f, "{}: {message}", path.display()),
        }
    }
}

impl std::error::Error for SweepError {}
