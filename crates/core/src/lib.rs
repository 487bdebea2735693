//! The vocabulary every other storsim crate speaks: simulated time, requests, completions, the
//! [`Device`] contract, a bounded event queue ordered by (time, sequence) and a seeded PRNG.
//!
//! [`conformance`] is the kit that checks a model keeps the [`Device`] contract; [`contract`]
//! is the part of it drivers check as they run (the engine, the emulator's pacing thread).
//!
//! This crate has no dependencies, reads no clock and does no I/O, apart from the conformance
//! kit, a test tool, which prints its seed to stderr and reads `STORSIM_TEST_SEED`.

pub mod cache;
pub mod conformance;
pub mod contract;
mod counter;
mod device;
mod event_queue;
mod prng;
mod request;
mod time;

pub use counter::{describe, CounterDescriptor, Described, Kind, Member, Scope, Unit};
pub use device::{
    check_range, BlockWear, Device, DeviceCounter, DeviceError, DevicePart, QUEUE_DEPTH_MAX,
};
pub use event_queue::{EventQueue, EventQueueFull};
pub use prng::Prng;
pub use request::{Completion, Op, Request, Status, SECTOR_BYTES};
pub use time::{SimDuration, SimTime};
