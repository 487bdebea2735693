//! Black-box device models: timing from a handful of measured parameters, with no internal
//! structure. They are what the IBM, Wisconsin and co-simulation papers built their emulators
//! on, and what `storsim calibrate` fits.
//!
//! - [`linear`]: service = A + n·B per access pattern (IBM).
//! - [`table`]: service looked up by size and pattern, N channels, speedup S (co-simulation thesis).
//! - [`step`]: fixed random delays and stepped sequential delays (Wisconsin RAM-disk emulator).

pub mod linear;
mod pattern;
mod servers;
pub mod step;
pub mod table;

pub use pattern::{AccessPattern, SequentialDetect, SequentialTracker};
pub use servers::FifoServers;
