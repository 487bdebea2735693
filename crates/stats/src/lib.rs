//! Run statistics: latency histograms with bounded relative error, per-operation summaries and
//! the plain-data summary the reporters serialise. Nothing here reads a clock or a file.

mod demerit;
mod histogram;
mod summary;

pub use demerit::{disksim_demerit, Demerit};
pub use histogram::Histogram;
pub use summary::{CdfPoint, Collector, Distribution, OpSummary, Summary};
