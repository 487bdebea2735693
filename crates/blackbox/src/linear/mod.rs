//! The IBM linear model (seed 001): the service time of an n-byte request is A + n·B, with one
//! (A, B) pair for each of sequential read, sequential write, random read and random write.
//! A captures per-request overheads (command, OS, controller), B the per-byte transfer cost.
//! See docs/models/linear.md.

use crate::pattern;
use crate::{AccessPattern, FifoServers, SequentialDetect, SequentialTracker};
use storsim_core::{
    check_range, Completion, CounterDescriptor, Described, Device, DeviceCounter, DeviceError, Op,
    Request, SimDuration, SimTime, Unit,
};

/// One pattern's (A, B). B is kept in picoseconds per KiB so that the fit table's three
/// decimals of µs/KiB survive exactly and the arithmetic stays in integers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinearCost {
    pub fixed: SimDuration,
    pub per_kib_ps: u64,
}

impl LinearCost {
    /// From the fit table's units: A in µs, B in µs per KiB.
    pub fn from_us(a_us: f64, b_us_per_kib: f64) -> Self {
        assert!(
            b_us_per_kib.is_finite() && b_us_per_kib >= 0.0,
            "invalid B {b_us_per_kib}"
        );
        LinearCost {
            fixed: SimDuration::from_us_f64(a_us),
            per_kib_ps: (b_us_per_kib * 1e6).round() as u64,
        }
    }

    /// A + n·B, rounded to the nearest nanosecond.
    pub fn service(&self, len_bytes: u64) -> SimDuration {
        let transfer_ps = len_bytes as u128 * self.per_kib_ps as u128;
        let transfer_ns = (transfer_ps + 512_000) / 1_024_000;
        SimDuration(self.fixed.as_ns() + transfer_ns as u64)
    }
}

/// Everything the linear model needs; plain data that the config layer fills in.
#[derive(Clone, Debug, PartialEq)]
pub struct LinearParams {
    pub capacity_bytes: u64,
    /// Indexed by [`AccessPattern::index`].
    pub costs: [LinearCost; 4],
    pub trim: SimDuration,
    pub flush: SimDuration,
    pub sequential_detect: SequentialDetect,
    /// Requests in service at once. The IBM simulator serves one at a time.
    pub servers: usize,
    pub queue_depth: usize,
}

impl LinearParams {
    pub fn cost(&self, pattern: AccessPattern) -> LinearCost {
        self.costs[pattern.index()]
    }
}

/// The STEC Zeus fit from seed 001 ("Linear Regression Fit Results"): A in µs and B in µs/KB
/// for SR / RR / SW / RW. The drive is the 70 GB Zeus of the paper's test system.
pub fn stec_zeus() -> LinearParams {
    let mut costs = [LinearCost {
        fixed: SimDuration::ZERO,
        per_kib_ps: 0,
    }; 4];
    costs[AccessPattern::SequentialRead.index()] = LinearCost::from_us(127.5, 4.005);
    costs[AccessPattern::RandomRead.index()] = LinearCost::from_us(230.6, 3.987);
    costs[AccessPattern::SequentialWrite.index()] = LinearCost::from_us(2167.0, 4.96);
    costs[AccessPattern::RandomWrite.index()] = LinearCost::from_us(770.0, 5.382);
    LinearParams {
        capacity_bytes: 70_000_000_000,
        costs,
        trim: SimDuration::ZERO,
        flush: SimDuration::ZERO,
        sequential_detect: SequentialDetect::PreviousRequest,
        servers: 1,
        queue_depth: 32,
    }
}

pub struct LinearDevice {
    params: LinearParams,
    tracker: SequentialTracker,
    servers: FifoServers,
    per_pattern: [u64; 4],
    trims: u64,
    flushes: u64,
}

impl LinearDevice {
    pub fn new(params: LinearParams) -> Self {
        LinearDevice {
            tracker: SequentialTracker::new(params.sequential_detect),
            servers: FifoServers::new(params.servers, params.queue_depth),
            per_pattern: [0; 4],
            trims: 0,
            flushes: 0,
            params,
        }
    }

    pub fn params(&self) -> &LinearParams {
        &self.params
    }
}

/// The model's counters, in the order `counters` lists them.
pub const COUNTERS: &[CounterDescriptor] = &[
    pattern::PATTERN_REQUESTS,
    pattern::TRIM_REQUESTS,
    pattern::FLUSH_REQUESTS,
    CounterDescriptor::new(
        "busy_ns",
        Unit::Nanoseconds,
        "Sum of service times handed out, over all servers.",
    ),
];

impl Device for LinearDevice {
    fn counter_descriptors(&self) -> Vec<Described> {
        Described::all(COUNTERS).collect()
    }

    fn model_name(&self) -> &'static str {
        "linear"
    }

    fn capacity_bytes(&self) -> u64 {
        self.params.capacity_bytes
    }

    fn queue_depth(&self) -> usize {
        self.servers.queue_depth()
    }

    fn submit(&mut self, now: SimTime, request: Request) -> Result<(), DeviceError> {
        check_range(&request, self.params.capacity_bytes)?;
        if !self.servers.has_room() {
            return Err(DeviceError::QueueFull {
                queue_depth: self.servers.queue_depth(),
            });
        }
        let service = match self.tracker.classify(&request) {
            Some(pattern) => {
                self.per_pattern[pattern.index()] += 1;
                self.params.cost(pattern).service(request.len_bytes)
            }
            None if request.op == Op::Trim => {
                self.trims += 1;
                self.params.trim
            }
            None => {
                self.flushes += 1;
                self.params.flush
            }
        };
        self.servers.submit(now, request, service)
    }

    fn next_deadline(&self) -> Option<SimTime> {
        self.servers.next_deadline()
    }

    fn advance(&mut self, now: SimTime, done: &mut Vec<Completion>) {
        self.servers.advance(now, done)
    }

    fn counters(&self) -> Vec<DeviceCounter> {
        let mut counters: Vec<DeviceCounter> = AccessPattern::ALL
            .iter()
            .map(|p| {
                DeviceCounter::new(
                    format!("{}_requests", p.short_name()),
                    self.per_pattern[p.index()] as f64,
                )
            })
            .collect();
        counters.push(DeviceCounter::new("trim_requests", self.trims as f64));
        counters.push(DeviceCounter::new("flush_requests", self.flushes as f64));
        counters.push(DeviceCounter::new("busy_ns", self.servers.busy_ns() as f64));
        counters
    }
}

#[cfg(test)]
mod counter_docs {
    /// The model's page lists exactly these counters (`STORSIM_BLESS_DOCS=1` rewrites it).
    #[test]
    fn the_page_lists_exactly_the_descriptors() {
        let tables = storsim_core::conformance::counter_tables(&[("linear", super::COUNTERS)]);
        storsim_testenv::check_counter_tables("docs/models/linear.md", &tables).unwrap();
    }
}
