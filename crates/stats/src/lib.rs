//! Run statistics: latency histograms with bounded relative error, per-operation summaries,
//! the run's time series in windows (`series`) and the plain data the reporters serialise. Nothing here reads a clock or a file.

mod demerit;
mod histogram;
pub mod series;
mod summary;

pub use demerit::{disksim_demerit, Demerit};
pub use histogram::Histogram;
pub use series::{ChannelId, ChannelSeries, Observed, Series, SeriesRecorder, WindowWidth};
pub use summary::{
    cdf, CdfPoint, Collector, CollectorOptions, Distribution, ErrorCounts, OpSummary, Summary,
};
