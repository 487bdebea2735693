//! What to measure, and the exact request sequence that measures it.
//!
//! The plan is pure data: the same plan and seed give the same offsets on every run, so two
//! calibrations of one device differ only by what the device did.

use storsim_blackbox::AccessPattern;
use storsim_core::Prng;

/// The order patterns are measured in: reads first, so that a run interrupted before the
/// writes has still measured everything that does not change the target.
pub const PATTERN_ORDER: [AccessPattern; 4] = [
    AccessPattern::SequentialRead,
    AccessPattern::RandomRead,
    AccessPattern::SequentialWrite,
    AccessPattern::RandomWrite,
];

/// Random offsets are aligned to this many bytes (or the request size when smaller, but never
/// below the target's block size), as a file system would place them.
pub const RANDOM_ALIGN_BYTES: u64 = 4096;

/// The most requests one plan may issue: every latency is kept, 8 bytes each.
pub const MAX_PLAN_REQUESTS: u64 = 100_000_000;

/// What the user asked to be measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// Zones spread evenly over the target; odd, as the IBM method asks, so that no zone
    /// boundary falls on the middle of the target and the zones do not pair up symmetrically.
    pub zones: u32,
    /// Request sizes, strictly increasing, each a multiple of the target's block size.
    pub sizes_bytes: Vec<u64>,
    /// Patterns to measure, in [`PATTERN_ORDER`].
    pub patterns: Vec<AccessPattern>,
    /// Runs per (pattern, size, zone).
    pub repeats: u32,
    /// Requests in one run. A sequential run's first request does not count (to the device it
    /// is a random one), so a sequential run yields one sample fewer.
    pub requests_per_run: u32,
    /// Requests issued and discarded before each pattern.
    pub warmup_requests: u32,
    /// Length of the long sequential run per direction for step detection (0: none).
    pub step_run_requests: u32,
    /// Request size of the step runs.
    pub step_size_bytes: u64,
    /// Queue depths of the throughput sweep (empty: no sweep).
    pub iodepths: Vec<u32>,
    /// Request size of the sweep.
    pub sweep_size_bytes: u64,
    /// Requests per sweep point.
    pub sweep_requests: u32,
    pub seed: u64,
}

/// Why a plan cannot run on a target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlanError {
    EvenZones(u32),
    NoSizes,
    SizeNotAligned {
        size_bytes: u64,
        block_bytes: u64,
    },
    SizesNotIncreasing,
    /// Each zone must hold one sequential run of the largest size.
    TargetTooSmall {
        target_bytes: u64,
        needed_bytes: u64,
    },
    Zero(&'static str),
    /// Every latency is kept (8 bytes each), so the plan's length is bounded.
    TooLong {
        requests: u128,
    },
}

impl std::fmt::Display for PlanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PlanError::EvenZones(z) => write!(
                f,
                "--zones {z}: the number of zones must be odd (the IBM method: an odd number of \
                 zones avoids correlations between them)"
            ),
            PlanError::NoSizes => write!(f, "--sizes: no request size left to measure"),
            PlanError::SizeNotAligned {
                size_bytes,
                block_bytes,
            } => write!(
                f,
                "--sizes: {size_bytes} bytes is not a multiple of the target's \
                 {block_bytes}-byte block size"
            ),
            PlanError::SizesNotIncreasing => {
                write!(f, "--sizes: sizes must be listed without repeats")
            }
            PlanError::TargetTooSmall {
                target_bytes,
                needed_bytes,
            } => write!(
                f,
                "the target holds {target_bytes} bytes but the plan needs at least \
                 {needed_bytes} (each zone must hold one sequential run of the largest size); \
                 use fewer --zones, smaller --sizes or fewer --requests-per-run"
            ),
            PlanError::Zero(what) => write!(f, "{what} must be at least 1"),
            PlanError::TooLong { requests } => write!(
                f,
                "the plan issues {requests} requests, more than the {MAX_PLAN_REQUESTS} whose \
                 latencies calibrate keeps; use fewer --repeats, --zones or --sizes"
            ),
        }
    }
}

impl std::error::Error for PlanError {}

/// One timed request of the plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlannedIo {
    pub write: bool,
    pub offset_bytes: u64,
    pub len_bytes: u64,
    /// Where the sample goes: `None` for warm-up and run-opening requests, which are issued
    /// but not kept.
    pub sample: Option<SampleSlot>,
}

/// The (pattern, size) series a sample belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SampleSlot {
    pub pattern: AccessPattern,
    pub size_index: usize,
}

impl Plan {
    /// Checks the plan against a target of `target_bytes` with `block_bytes` blocks.
    pub fn check(&self, target_bytes: u64, block_bytes: u64) -> Result<(), PlanError> {
        if self.zones == 0 {
            return Err(PlanError::Zero("--zones"));
        }
        if self.zones & 1 == 0 {
            return Err(PlanError::EvenZones(self.zones));
        }
        if self.repeats == 0 {
            return Err(PlanError::Zero("--repeats"));
        }
        // A sequential run needs two requests to yield one sample.
        if self.requests_per_run < 2 {
            return Err(PlanError::Zero("--requests-per-run minus one"));
        }
        if self.sizes_bytes.is_empty() {
            return Err(PlanError::NoSizes);
        }
        if self.sizes_bytes.windows(2).any(|w| w[0] >= w[1]) {
            return Err(PlanError::SizesNotIncreasing);
        }
        let sizes = self
            .sizes_bytes
            .iter()
            .chain(std::iter::once(&self.step_size_bytes))
            .chain(std::iter::once(&self.sweep_size_bytes));
        for &size in sizes {
            if size == 0 || size % block_bytes != 0 {
                return Err(PlanError::SizeNotAligned {
                    size_bytes: size,
                    block_bytes,
                });
            }
        }
        let per_pattern = self.warmup_requests as u128
            + self.repeats as u128
                * self.zones as u128
                * self.sizes_bytes.len() as u128
                * self.requests_per_run as u128;
        let requests = per_pattern * self.patterns.len() as u128
            + 2 * (self.step_run_requests as u128 + 1)
            + 2 * self.iodepths.len() as u128 * self.sweep_requests as u128;
        if requests > MAX_PLAN_REQUESTS as u128 {
            return Err(PlanError::TooLong { requests });
        }
        let needed_bytes = (self.zones as u64).saturating_mul(self.zone_need_bytes());
        if target_bytes < needed_bytes {
            return Err(PlanError::TargetTooSmall {
                target_bytes,
                needed_bytes,
            });
        }
        Ok(())
    }

    /// The longest stretch one zone must hold: a sequential run of the largest size, or a step
    /// run.
    fn zone_need_bytes(&self) -> u64 {
        let largest = *self.sizes_bytes.last().unwrap_or(&0);
        (self.requests_per_run as u64)
            .saturating_mul(largest)
            .max((self.step_run_requests as u64).saturating_mul(self.step_size_bytes))
            .max(self.sweep_size_bytes)
    }

    /// Number of timed requests the plan issues (warm-up, run openers, step runs and sweep
    /// included), for the progress display. Exact for a plan that passed [`Plan::check`].
    pub fn total_requests(&self) -> u64 {
        let per_pattern = self.warmup_requests as u64
            + self.repeats as u64
                * self.zones as u64
                * self.sizes_bytes.len() as u64
                * self.requests_per_run as u64;
        let writes = self.patterns.iter().any(|p| p.is_write());
        let directions = if writes { 2 } else { 1 };
        per_pattern * self.patterns.len() as u64
            + directions * (self.step_run_requests as u64 + (self.step_run_requests > 0) as u64)
            + directions * self.iodepths.len() as u64 * self.sweep_requests as u64
    }

    /// The requests of one pattern, in the order they are issued: warm-up at the middle size,
    /// then for each repeat every (size, zone) run in an order shuffled per repeat, so that slow
    /// drifts of the device (temperature, background work) do not line up with size. Generated
    /// lazily: a plan of any length runs in constant memory.
    pub fn pattern_requests(
        &self,
        pattern: AccessPattern,
        target_bytes: u64,
    ) -> PatternRequests<'_> {
        PatternRequests {
            plan: self,
            pattern,
            zones: Zones::new(target_bytes, self.zones),
            rng: Prng::new(self.seed).fork(pattern.index() as u64 + 1),
            previous_end: u64::MAX,
            warmup_left: self.warmup_requests,
            repeats_left: self.repeats,
            runs: Vec::new(),
            run_pos: 0,
            cursor: vec![0; self.zones as usize],
            current: None,
        }
    }

    /// The step run of one direction: one opening request at the end of the middle zone, then
    /// a long sequential run from that zone's start. The opener guarantees that the run's first
    /// request is, to any sequential detector, the start of a new run; it is not part of the
    /// run's samples.
    pub fn step_run(&self, write: bool, target_bytes: u64) -> (PlannedIo, Vec<PlannedIo>) {
        let zones = Zones::new(target_bytes, self.zones);
        let mid = self.zones / 2;
        let start = zones.start(mid);
        let io = |offset_bytes| PlannedIo {
            write,
            offset_bytes,
            len_bytes: self.step_size_bytes,
            sample: None,
        };
        let opener = io(zones.end(mid) - self.step_size_bytes);
        let run = (0..self.step_run_requests as u64)
            .map(|i| io(start + i * self.step_size_bytes))
            .collect();
        (opener, run)
    }

    /// Offsets for one sweep point: random, aligned, over all zones.
    pub fn sweep_offsets(&self, write: bool, depth: u32, target_bytes: u64) -> Vec<u64> {
        let zones = Zones::new(target_bytes, self.zones);
        let stream = 16 + depth as u64 * 2 + write as u64;
        let mut rng = Prng::new(self.seed).fork(stream);
        let mut previous_end = u64::MAX;
        (0..self.sweep_requests)
            .map(|_| {
                let zone = rng.below(self.zones as u64) as u32;
                let offset =
                    random_offset(&mut rng, &zones, zone, self.sweep_size_bytes, previous_end);
                previous_end = offset + self.sweep_size_bytes;
                offset
            })
            .collect()
    }
}

/// The lazily generated requests of one pattern (see [`Plan::pattern_requests`]).
pub struct PatternRequests<'a> {
    plan: &'a Plan,
    pattern: AccessPattern,
    zones: Zones,
    rng: Prng,
    previous_end: u64,
    warmup_left: u32,
    repeats_left: u32,
    /// This repeat's (size index, zone) runs, shuffled; `run_pos` is the next one.
    runs: Vec<(usize, u32)>,
    run_pos: usize,
    cursor: Vec<u64>,
    /// The run being issued: (size index, zone, its start for sequential runs, requests issued).
    current: Option<(usize, u32, u64, u32)>,
}

impl Iterator for PatternRequests<'_> {
    type Item = PlannedIo;

    fn next(&mut self) -> Option<PlannedIo> {
        let plan = self.plan;
        let write = self.pattern.is_write();
        if self.warmup_left > 0 {
            self.warmup_left -= 1;
            let mid = plan.sizes_bytes[plan.sizes_bytes.len() / 2];
            let zone = self.rng.below(plan.zones as u64) as u32;
            let offset = random_offset(&mut self.rng, &self.zones, zone, mid, self.previous_end);
            self.previous_end = offset + mid;
            return Some(PlannedIo {
                write,
                offset_bytes: offset,
                len_bytes: mid,
                sample: None,
            });
        }
        loop {
            if let Some((size_index, zone, start, issued)) = self.current {
                if issued < plan.requests_per_run {
                    let size = plan.sizes_bytes[size_index];
                    let slot = Some(SampleSlot {
                        pattern: self.pattern,
                        size_index,
                    });
                    self.current = Some((size_index, zone, start, issued + 1));
                    let (offset, sample) = if self.pattern.is_sequential() {
                        // The run's first request opens it; to the device it is random.
                        let sample = if issued == 0 { None } else { slot };
                        (start + issued as u64 * size, sample)
                    } else {
                        let o = random_offset(
                            &mut self.rng,
                            &self.zones,
                            zone,
                            size,
                            self.previous_end,
                        );
                        (o, slot)
                    };
                    self.previous_end = offset + size;
                    return Some(PlannedIo {
                        write,
                        offset_bytes: offset,
                        len_bytes: size,
                        sample,
                    });
                }
                self.current = None;
            }
            if self.run_pos == self.runs.len() {
                if self.repeats_left == 0 {
                    return None;
                }
                self.repeats_left -= 1;
                self.runs = (0..plan.sizes_bytes.len())
                    .flat_map(|s| (0..plan.zones).map(move |z| (s, z)))
                    .collect();
                shuffle(&mut self.runs, &mut self.rng);
                self.run_pos = 0;
            }
            let (size_index, zone) = self.runs[self.run_pos];
            self.run_pos += 1;
            let span = plan.sizes_bytes[size_index] * plan.requests_per_run as u64;
            let start = if self.pattern.is_sequential() {
                self.zones
                    .sequential_start(zone, span, &mut self.cursor[zone as usize])
            } else {
                0
            };
            self.current = Some((size_index, zone, start, 0));
        }
    }
}

/// The target cut into equal zones (the last absorbs the remainder).
struct Zones {
    target_bytes: u64,
    count: u32,
}

impl Zones {
    fn new(target_bytes: u64, count: u32) -> Self {
        Zones {
            target_bytes,
            count,
        }
    }

    /// First byte of `zone`, aligned down to [`RANDOM_ALIGN_BYTES`].
    fn start(&self, zone: u32) -> u64 {
        let raw = (self.target_bytes as u128 * zone as u128 / self.count as u128) as u64;
        raw - raw % RANDOM_ALIGN_BYTES
    }

    fn end(&self, zone: u32) -> u64 {
        if zone + 1 == self.count {
            self.target_bytes
        } else {
            self.start(zone + 1)
        }
    }

    /// Start of the next sequential run of `span` bytes in `zone`, advancing the zone's cursor
    /// and wrapping to the zone's start when the run would not fit before its end.
    fn sequential_start(&self, zone: u32, span: u64, cursor: &mut u64) -> u64 {
        let start = self.start(zone);
        let len = self.end(zone) - start;
        if *cursor + span > len {
            *cursor = 0;
        }
        let at = start + *cursor;
        *cursor += span;
        at
    }
}

/// A random offset for an `len`-byte request inside `zone`, aligned, and never where the
/// previous request ended (that would be a sequential request to the device).
fn random_offset(rng: &mut Prng, zones: &Zones, zone: u32, len: u64, previous_end: u64) -> u64 {
    let align = RANDOM_ALIGN_BYTES.min(len);
    let start = zones.start(zone);
    let end = zones.end(zone);
    // `check` guarantees every zone holds at least one request of any planned size.
    let slots = ((end - start - len) / align + 1).max(1);
    let mut offset = start + rng.below(slots) * align;
    if offset == previous_end {
        offset = if offset >= start + align {
            offset - align
        } else {
            offset + align
        };
        if offset + len > end {
            // A zone with room for exactly one request: the repeat is unavoidable.
            offset = start;
        }
    }
    offset
}

/// Fisher-Yates with the plan's generator.
fn shuffle<T>(items: &mut [T], rng: &mut Prng) {
    for i in (1..items.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        items.swap(i, j);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> Plan {
        Plan {
            zones: 5,
            sizes_bytes: vec![512, 4096, 65536],
            patterns: PATTERN_ORDER.to_vec(),
            repeats: 3,
            requests_per_run: 8,
            warmup_requests: 4,
            step_run_requests: 0,
            step_size_bytes: 4096,
            iodepths: vec![],
            sweep_size_bytes: 4096,
            sweep_requests: 0,
            seed: 7,
        }
    }

    const TARGET: u64 = 64 << 20;

    #[test]
    fn every_request_is_inside_the_target_and_aligned() {
        let p = plan();
        for pattern in PATTERN_ORDER {
            for io in p.pattern_requests(pattern, TARGET) {
                assert!(io.offset_bytes + io.len_bytes <= TARGET);
                assert_eq!(io.offset_bytes % 512, 0);
                assert_eq!(io.write, pattern.is_write());
            }
        }
    }

    #[test]
    fn sample_counts_match_the_plan() {
        let p = plan();
        for pattern in PATTERN_ORDER {
            let reqs: Vec<_> = p.pattern_requests(pattern, TARGET).collect();
            let per_run = if pattern.is_sequential() { 7 } else { 8 };
            for size_index in 0..3 {
                let n = reqs
                    .iter()
                    .filter(|r| r.sample.map(|s| s.size_index) == Some(size_index))
                    .count();
                assert_eq!(n, 3 * 5 * per_run, "{pattern:?} size {size_index}");
            }
            assert_eq!(reqs.len() as u64, 4 + 3 * 5 * 3 * 8);
        }
    }

    #[test]
    fn sequential_samples_continue_the_previous_request_and_random_ones_do_not() {
        let p = plan();
        for pattern in PATTERN_ORDER {
            let reqs: Vec<_> = p.pattern_requests(pattern, TARGET).collect();
            for w in reqs.windows(2) {
                let continues = w[1].offset_bytes == w[0].offset_bytes + w[0].len_bytes;
                if w[1].sample.is_some() {
                    assert_eq!(continues, pattern.is_sequential(), "{pattern:?} {w:?}");
                }
            }
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_requests_and_another_seed_others() {
        let p = plan();
        let requests = |p: &Plan| -> Vec<_> {
            p.pattern_requests(AccessPattern::RandomRead, TARGET)
                .collect()
        };
        assert_eq!(requests(&p), requests(&p));
        assert_ne!(requests(&p), requests(&Plan { seed: 8, ..plan() }));
    }

    #[test]
    fn every_zone_is_visited() {
        let p = plan();
        let reqs: Vec<_> = p
            .pattern_requests(AccessPattern::RandomRead, TARGET)
            .collect();
        let zone_len = TARGET / 5;
        let mut seen = [false; 5];
        for r in reqs.iter().filter(|r| r.sample.is_some()) {
            seen[(r.offset_bytes / zone_len).min(4) as usize] = true;
        }
        assert_eq!(seen, [true; 5]);
    }

    #[test]
    fn checks_name_what_is_wrong() {
        let p = plan();
        assert_eq!(
            Plan { zones: 4, ..plan() }.check(TARGET, 512),
            Err(PlanError::EvenZones(4))
        );
        assert!(matches!(
            p.check(1 << 20, 512),
            Err(PlanError::TargetTooSmall {
                target_bytes: 1048576,
                needed_bytes: 2621440
            })
        ));
        assert_eq!(
            p.check(TARGET, 4096),
            Err(PlanError::SizeNotAligned {
                size_bytes: 512,
                block_bytes: 4096
            })
        );
        assert_eq!(p.check(TARGET, 512), Ok(()));
    }

    #[test]
    fn the_step_run_is_sequential_from_a_zone_start() {
        let p = Plan {
            step_run_requests: 100,
            ..plan()
        };
        let (opener, run) = p.step_run(false, TARGET);
        assert_eq!(run.len(), 100);
        assert_ne!(opener.offset_bytes + 4096, run[0].offset_bytes);
        assert!(run
            .windows(2)
            .all(|w| w[1].offset_bytes == w[0].offset_bytes + 4096));
        assert!(run.last().unwrap().offset_bytes + 4096 <= TARGET);
    }
}
