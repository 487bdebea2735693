//! Workloads: streaming trace parsers and synthetic generators, both producing [`Record`]s.
//!
//! A workload never sees a device or a clock. It yields records in order; the engine decides
//! when each becomes a request (open loop from the timestamps, or closed loop on completions).

pub mod fiojob;
pub mod flows;
mod record;
pub mod synthetic;
pub mod trace;

pub use record::{Origin, Pacing, Record, Workload, WorkloadError};
