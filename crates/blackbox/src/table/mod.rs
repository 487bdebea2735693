//! The table model of the co-simulation thesis (seed 003, section 5.6, Table 5.3 and the ChN-xS
//! text after it): the service time of a request is looked up by its transfer size and access
//! pattern in a table of measured times, interpolated linearly between listed sizes. N channels
//! serve N requests at once and a speedup factor S divides every service time.
//! See docs/models/table.md.

use crate::pattern;
use crate::{AccessPattern, FifoServers, SequentialDetect, SequentialTracker};
use storsim_core::{
    check_range, Completion, CounterDescriptor, Described, Device, DeviceCounter, DeviceError, Op,
    Request, SimDuration, SimTime, Unit,
};

/// One listed transfer size with the baseline (S = 1) service time of each access pattern.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableRow {
    pub size_bytes: u64,
    /// Indexed by [`AccessPattern::index`].
    pub service: [SimDuration; 4],
}

impl TableRow {
    /// A row from times in µs, indexed by [`AccessPattern::index`] (SR, SW, RR, RW).
    pub fn from_us(size_bytes: u64, service_us: [f64; 4]) -> Self {
        TableRow {
            size_bytes,
            service: service_us.map(SimDuration::from_us_f64),
        }
    }

    pub fn service(&self, pattern: AccessPattern) -> SimDuration {
        self.service[pattern.index()]
    }
}

/// Everything the table model needs; plain data that the config layer fills in and validates.
#[derive(Clone, Debug, PartialEq)]
pub struct TableParams {
    pub capacity_bytes: u64,
    /// At least one row, sizes strictly increasing.
    pub rows: Vec<TableRow>,
    /// Requests in service at once (the thesis' "number of channels" N).
    pub channels: usize,
    /// The speedup factor S in thousandths (2000 is ×2, 1500 is ×1.5), so that a fractional S
    /// still divides integer nanoseconds exactly and every platform rounds the same way.
    pub speedup_milli: u64,
    /// Baseline trim and flush service times; the speedup divides them too.
    pub trim: SimDuration,
    pub flush: SimDuration,
    pub sequential_detect: SequentialDetect,
    pub queue_depth: usize,
}

impl TableParams {
    /// The speedup factor S as a number, for reports.
    pub fn speedup(&self) -> f64 {
        self.speedup_milli as f64 / 1000.0
    }

    /// The service time of a `len_bytes` request of `pattern`: the table interpolated at
    /// `len_bytes`, divided by S, rounded to the nearest nanosecond (halves round up).
    ///
    /// At or below the smallest listed size the smallest row's time applies, because a
    /// request cannot cost less than the smallest transfer the device was measured at. Above
    /// the largest size the last segment's slope is extended, because large transfers cost in
    /// proportion to their size; the result is clamped at zero should that slope be negative.
    /// A one-row table is constant.
    pub fn service(&self, pattern: AccessPattern, len_bytes: u64) -> SimDuration {
        let (numerator_ns, denominator) = self.interpolate(pattern, len_bytes);
        self.scaled(numerator_ns, denominator)
    }

    /// A baseline time divided by S, rounded to the nearest nanosecond.
    pub fn scale(&self, baseline: SimDuration) -> SimDuration {
        self.scaled(baseline.as_ns() as i128, 1)
    }

    /// The interpolated baseline time as the exact fraction `numerator_ns / denominator`, so
    /// that the only rounding happens once, after the division by S.
    fn interpolate(&self, pattern: AccessPattern, len_bytes: u64) -> (i128, i128) {
        let rows = &self.rows;
        let time = |i: usize| rows[i].service(pattern).as_ns() as i128;
        let size = |i: usize| rows[i].size_bytes as i128;
        if rows.len() == 1 || len_bytes <= rows[0].size_bytes {
            return (time(0), 1);
        }
        // The segment whose upper end is the first listed size at or above the request, or
        // the last segment when the request is larger than every listed size.
        let upper = rows
            .iter()
            .position(|r| r.size_bytes >= len_bytes)
            .unwrap_or(rows.len() - 1);
        let lower = upper - 1;
        let width = size(upper) - size(lower);
        let numerator = time(lower).saturating_mul(width).saturating_add(
            (time(upper) - time(lower)).saturating_mul(len_bytes as i128 - size(lower)),
        );
        (numerator.max(0), width)
    }

    fn scaled(&self, numerator_ns: i128, denominator: i128) -> SimDuration {
        let divisor = denominator.saturating_mul(self.speedup_milli as i128);
        let twice = numerator_ns.saturating_mul(2_000);
        let ns = twice.saturating_add(divisor) / divisor.saturating_mul(2);
        SimDuration(u64::try_from(ns).unwrap_or(u64::MAX))
    }
}

/// Table 5.3 of seed 003 as printed: transfer size, then random read, random write, sequential
/// read, sequential write in ms. The thesis writes "KB"; the sizes are powers of two, so KiB.
const UHS1_SD_TABLE_MS: [(u64, [f64; 4]); 8] = [
    (512, [0.0051, 1.1136, 0.0019, 0.0092]),
    (1 << 10, [0.0053, 1.1123, 0.0020, 0.0095]),
    (2 << 10, [0.0054, 1.1136, 0.0023, 0.0099]),
    (4 << 10, [0.0057, 1.1601, 0.0027, 0.0115]),
    (8 << 10, [0.0063, 1.2853, 0.0033, 0.0136]),
    (16 << 10, [0.0071, 1.2579, 0.0036, 0.0035]),
    (32 << 10, [0.0096, 2.2222, 0.0068, 0.0070]),
    (64 << 10, [0.0151, 2.7027, 0.0139, 0.0137]),
];

/// The baseline device of seed 003 (Table 5.3, measured on a Transcend UHS-I SD card) as
/// configuration Ch1-x1: one channel, no speedup. The emulated device was 400 MB, taken from
/// the 512 MB of the board's memory, so binary megabytes: 400 MiB.
pub fn uhs1_sd() -> TableParams {
    let rows = UHS1_SD_TABLE_MS
        .iter()
        .map(|&(size_bytes, [rr_ms, rw_ms, sr_ms, sw_ms])| {
            let mut us = [0.0; 4];
            us[AccessPattern::RandomRead.index()] = rr_ms * 1000.0;
            us[AccessPattern::RandomWrite.index()] = rw_ms * 1000.0;
            us[AccessPattern::SequentialRead.index()] = sr_ms * 1000.0;
            us[AccessPattern::SequentialWrite.index()] = sw_ms * 1000.0;
            TableRow::from_us(size_bytes, us)
        })
        .collect();
    TableParams {
        capacity_bytes: 400 << 20,
        rows,
        channels: 1,
        speedup_milli: 1000,
        trim: SimDuration::ZERO,
        flush: SimDuration::ZERO,
        sequential_detect: SequentialDetect::PreviousRequest,
        queue_depth: 32,
    }
}

pub struct TableDevice {
    params: TableParams,
    tracker: SequentialTracker,
    servers: FifoServers,
    per_pattern: [u64; 4],
    trims: u64,
    flushes: u64,
}

impl TableDevice {
    /// The parameters must be valid (the config crate checks them and names the bad key);
    /// anything else is a programming error.
    pub fn new(params: TableParams) -> Self {
        assert!(!params.rows.is_empty(), "a table needs at least one row");
        assert!(
            params
                .rows
                .windows(2)
                .all(|w| w[0].size_bytes < w[1].size_bytes),
            "table sizes must be strictly increasing"
        );
        assert!(params.speedup_milli >= 1, "the speedup must be positive");
        TableDevice {
            tracker: SequentialTracker::new(params.sequential_detect),
            servers: FifoServers::new(params.channels, params.queue_depth),
            per_pattern: [0; 4],
            trims: 0,
            flushes: 0,
            params,
        }
    }

    pub fn params(&self) -> &TableParams {
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
        "Sum of service times handed out, over all channels.",
    ),
    CounterDescriptor::new("channels", Unit::Count, "Channels (N)."),
    CounterDescriptor::new(
        "speedup",
        Unit::Factor,
        "Speed-up of N channels over one (S).",
    ),
];

impl Device for TableDevice {
    fn counter_descriptors(&self) -> Vec<Described> {
        Described::all(COUNTERS).collect()
    }

    fn model_name(&self) -> &'static str {
        "table"
    }

    fn capacity_bytes(&self) -> u64 {
        self.params.capacity_bytes
    }

    fn queue_depth(&self) -> usize {
        self.servers.queue_depth()
    }

    fn submit(&mut self, now: SimTime, request: Request) -> Result<(), DeviceError> {
        check_range(&request, self.params.capacity_bytes)?;
        // Checked before classifying, so that a refused request leaves the tracker untouched.
        if !self.servers.has_room() {
            return Err(DeviceError::QueueFull {
                queue_depth: self.servers.queue_depth(),
            });
        }
        let service = match self.tracker.classify(&request) {
            Some(pattern) => {
                self.per_pattern[pattern.index()] += 1;
                self.params.service(pattern, request.len_bytes)
            }
            None if request.op == Op::Trim => {
                self.trims += 1;
                self.params.scale(self.params.trim)
            }
            None => {
                self.flushes += 1;
                self.params.scale(self.params.flush)
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
        counters.push(DeviceCounter::new("channels", self.params.channels as f64));
        counters.push(DeviceCounter::new("speedup", self.params.speedup()));
        counters
    }
}

#[cfg(test)]
mod counter_docs {
    /// The model's page lists exactly these counters (`STORSIM_BLESS_DOCS=1` rewrites it).
    #[test]
    fn the_page_lists_exactly_the_descriptors() {
        let tables = storsim_core::conformance::counter_tables(&[("table", super::COUNTERS)]);
        storsim_testenv::check_counter_tables("docs/models/table.md", &tables).unwrap();
    }
}
