//! Simulated time in whole nanoseconds. A u64 of nanoseconds covers 584 years, which is more
//! than any trace; arithmetic that would overflow is a bug and panics even in release builds.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// An instant on the simulated clock, in nanoseconds since the start of the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimTime(pub u64);

/// A span of simulated time in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimDuration(pub u64);

impl SimTime {
    pub const ZERO: SimTime = SimTime(0);
    pub const MAX: SimTime = SimTime(u64::MAX);
    /// The latest instant a request may arrive at: 2^62 ns, about 146 years. Drivers refuse
    /// later arrivals, which leaves models three quarters of the clock's range for queueing
    /// and service, so their arithmetic cannot overflow on any accepted workload.
    pub const ARRIVAL_LIMIT: SimTime = SimTime(1 << 62);

    pub const fn from_ns(ns: u64) -> Self {
        SimTime(ns)
    }
    pub const fn as_ns(self) -> u64 {
        self.0
    }
    /// The time elapsed since `earlier`; panics when `earlier` is later, because a negative
    /// duration always means a model completed something before it started it.
    pub fn since(self, earlier: SimTime) -> SimDuration {
        assert!(
            self.0 >= earlier.0,
            "time went backwards: {} ns is before {} ns",
            self.0,
            earlier.0
        );
        SimDuration(self.0 - earlier.0)
    }
    pub fn saturating_since(self, earlier: SimTime) -> SimDuration {
        SimDuration(self.0.saturating_sub(earlier.0))
    }
}

impl SimDuration {
    pub const ZERO: SimDuration = SimDuration(0);

    pub const fn from_ns(ns: u64) -> Self {
        SimDuration(ns)
    }
    pub const fn from_us(us: u64) -> Self {
        SimDuration(us * 1_000)
    }
    pub const fn from_ms(ms: u64) -> Self {
        SimDuration(ms * 1_000_000)
    }
    pub const fn as_ns(self) -> u64 {
        self.0
    }
    /// Converts a non-negative number of microseconds, rounding to the nearest nanosecond.
    /// Device descriptions state times in µs with fractions; the model works in whole ns.
    pub fn from_us_f64(us: f64) -> Self {
        assert!(us.is_finite() && us >= 0.0, "invalid duration {us} µs");
        SimDuration((us * 1_000.0).round() as u64)
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
}

impl Add<SimDuration> for SimTime {
    type Output = SimTime;
    fn add(self, d: SimDuration) -> SimTime {
        SimTime(
            self.0
                .checked_add(d.0)
                .expect("simulated time overflowed u64 nanoseconds"),
        )
    }
}

impl AddAssign<SimDuration> for SimTime {
    fn add_assign(&mut self, d: SimDuration) {
        *self = *self + d;
    }
}

impl Add for SimDuration {
    type Output = SimDuration;
    fn add(self, d: SimDuration) -> SimDuration {
        SimDuration(
            self.0
                .checked_add(d.0)
                .expect("duration overflowed u64 nanoseconds"),
        )
    }
}

impl AddAssign for SimDuration {
    fn add_assign(&mut self, d: SimDuration) {
        *self = *self + d;
    }
}

impl Sub for SimTime {
    type Output = SimDuration;
    fn sub(self, earlier: SimTime) -> SimDuration {
        self.since(earlier)
    }
}

impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}.{:09} s",
            self.0 / 1_000_000_000,
            self.0 % 1_000_000_000
        )
    }
}

impl fmt::Display for SimDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ns", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn microsecond_fractions_round_to_nearest_ns() {
        assert_eq!(SimDuration::from_us_f64(127.5).as_ns(), 127_500);
        assert_eq!(SimDuration::from_us_f64(0.0004).as_ns(), 0);
        assert_eq!(SimDuration::from_us_f64(0.0006).as_ns(), 1);
    }

    #[test]
    #[should_panic(expected = "time went backwards")]
    fn negative_durations_panic() {
        let _ = SimTime(5).since(SimTime(6));
    }

    #[test]
    fn display_is_seconds_with_nanoseconds() {
        assert_eq!(SimTime(1_000_000_123).to_string(), "1.000000123 s");
    }
}
