//! A hard-disk model after DiskSim 4.0's: zoned layout with skews and sparing (`layout`),
//! DiskSim's seek curves (`seek`), exact rotational position (`mech`), command overheads and
//! an on-disk cache with read-ahead and write-back (`device`), queue schedulers (`sched`) and
//! power states (`power`). See docs/models/hdd.md.

mod device;
mod float;
mod g4;
pub mod layout;
pub mod mech;
mod params;
pub mod power;
pub mod sched;
pub mod seek;
mod speed;

pub use device::{
    HddDevice, BUSY_TIME, CACHE_READ_HITS, CACHE_READ_MISSES, CACHE_READ_PARTIAL_HITS, COUNTERS,
    IDLE_TIME, MEAN_SEEK, READ_AHEAD_HITS, ROTATION_TIME, SEEK_HISTOGRAM, SEEK_TIME, STANDBY_TIME,
    TRANSFER_TIME,
};
pub use params::*;

use std::fmt;

/// Why parameters cannot make a drive.
#[derive(Clone, Debug, PartialEq)]
pub enum HddError {
    Geometry(String),
    Parameter { name: &'static str, message: String },
}

impl fmt::Display for HddError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HddError::Geometry(m) => write!(f, "disk geometry: {m}"),
            HddError::Parameter { name, message } => write!(f, "{name}: {message}"),
        }
    }
}

impl std::error::Error for HddError {}
