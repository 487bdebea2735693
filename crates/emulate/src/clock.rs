//! The wall clock as the model sees it: nanoseconds since the emulator started.

use std::num::NonZeroU64;
use std::time::Instant;
use storsim_core::SimTime;

/// Converts between `Instant`s and the `SimTime` the model is driven with. The epoch is the
/// emulator's start, so recorded traces begin near zero.
#[derive(Clone, Copy, Debug)]
pub struct WallClock {
    epoch: Instant,
}

impl WallClock {
    pub fn start() -> Self {
        WallClock {
            epoch: Instant::now(),
        }
    }

    pub fn now(&self) -> SimTime {
        // A u64 of nanoseconds lasts 584 years; saturating keeps a wrapped value impossible.
        let ns = self.epoch.elapsed().as_nanos();
        SimTime::from_ns(u64::try_from(ns).unwrap_or(u64::MAX))
    }
}

/// Lowers this thread's timer slack to 1 ns so that timed waits wake when asked rather than up
/// to 50 µs later (Linux's default slack), which would otherwise be most of a flash read.
pub fn lower_timer_slack() {
    // A kernel that refuses leaves the default slack: waits then end late, never wrong.
    let _ = rustix::thread::set_current_timer_slack(Some(NonZeroU64::MIN));
}
