//! Fits from measurements to model parameters. Pure arithmetic: no I/O, no clocks.
//!
//! - [`linear`]: least squares of latency on size with r², standard errors and p-value (IBM);
//! - [`pvalue`]: Student's t tail probabilities, accurate far into the tail;
//! - [`step`]: the Wisconsin step model recovered from one long sequential run;
//! - [`erase`]: the hybrid-disk thesis' mean number of erases per write.

pub mod erase;
pub mod linear;
pub mod pvalue;
pub mod step;

pub use erase::{erase_correction, EraseCorrection};
pub use linear::{fit_linear, LinearFit};
pub use pvalue::student_t_two_sided_p;
pub use step::{detect_steps, StepFit};

/// The fits' tests compare floating-point results with an absolute tolerance.
#[cfg(test)]
pub(crate) fn assert_close(actual: f64, expected: f64, tolerance: f64) {
    assert!(
        (actual - expected).abs() <= tolerance,
        "{actual} is not within {tolerance} of {expected}"
    );
}
