//! The step model of the Wisconsin flash-drive emulator (seed 000, sections 2.2-2.3 and the
//! delay code of Appendices A and B): random requests pay a fixed delay; sequential requests pay
//! a small per-request delay, and every K-th one of a run also pays a spike, with K following a
//! schedule (reads 32, 64, 128, 256, 256, ...; writes 195, 256, 256, ...). A sequential run's
//! first request was charged as random; optionally the difference to a sequential delay is
//! settled on the following requests of the run. See docs/models/step.md.

use crate::pattern;
use crate::{AccessPattern, FifoServers, SequentialDetect, SequentialTracker};
use storsim_core::{
    check_range, Completion, CounterDescriptor, Described, Device, DeviceCounter, DeviceError, Op,
    Request, SimDuration, SimTime, Unit,
};

/// The delays of one direction (reads or writes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepDirection {
    /// Service time of a random request.
    pub random: SimDuration,
    /// Service time of every sequential request, before compensation.
    pub sequential: SimDuration,
    /// Added to the sequential request that completes a step.
    pub spike: SimDuration,
    /// How many sequential requests each step spans: the k-th spike falls on the sequential
    /// request that is the k-th entry's number after the previous spike (or after the run's
    /// first request). The last entry repeats. Non-empty, every entry at least 1.
    pub step_interval_requests: Vec<u64>,
    /// Settle the difference between `random` and `sequential` that the run's first request
    /// was charged, on the sequential requests that follow (seed 000, section 2.2).
    pub compensate_first_request: bool,
}

/// Everything the step model needs; plain data that the config layer fills in and validates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepParams {
    pub capacity_bytes: u64,
    pub read: StepDirection,
    pub write: StepDirection,
    pub trim: SimDuration,
    pub flush: SimDuration,
    /// The seed keeps one "previous end" for reads and another for writes.
    pub sequential_detect: SequentialDetect,
    pub queue_depth: usize,
}

impl StepParams {
    fn direction(&self, write: bool) -> &StepDirection {
        if write {
            &self.write
        } else {
            &self.read
        }
    }
}

/// The Wisconsin emulator as configured for its 32 MB USB stick (seed 000, section 3): the step
/// schedules and the write compensation are the seed's. The seed prints no delay values (they
/// were set through an ioctl and shown only in figures that did not survive), so the delays
/// here are illustrative values of the right order for a USB flash stick; calibrate your own.
pub fn wisconsin_usb() -> StepParams {
    StepParams {
        capacity_bytes: 32 << 20,
        read: StepDirection {
            random: SimDuration::from_us(1_000),
            // The seed's read path has no per-request sequential delay, only the spike.
            sequential: SimDuration::ZERO,
            spike: SimDuration::from_us(5_000),
            step_interval_requests: vec![32, 64, 128, 256],
            compensate_first_request: false,
        },
        write: StepDirection {
            random: SimDuration::from_us(3_000),
            sequential: SimDuration::from_us(250),
            spike: SimDuration::from_us(20_000),
            step_interval_requests: vec![195, 256],
            compensate_first_request: true,
        },
        trim: SimDuration::ZERO,
        flush: SimDuration::ZERO,
        sequential_detect: SequentialDetect::PreviousSameDirection,
        queue_depth: 32,
    }
}

/// Where one direction's current sequential run stands.
#[derive(Clone, Debug)]
struct RunState {
    /// The previous request of this direction was random (true before the first one, as in
    /// the seed's initial `RANDOMSTATE`).
    previous_random: bool,
    /// Sequential requests since the run's first request or the last spike.
    since_spike: u64,
    /// Index into `step_interval_requests` of the step being counted.
    step: usize,
    /// Delay charged to the run's first request beyond a sequential delay, still to be taken
    /// off later sequential requests ("excess delay to burn" in the seed).
    excess: SimDuration,
}

/// What the step rules decided for one read or write.
struct Charge {
    service: SimDuration,
    spike: bool,
    removed: SimDuration,
    added: SimDuration,
}

impl RunState {
    fn new() -> Self {
        RunState {
            previous_random: true,
            since_spike: 0,
            step: 0,
            excess: SimDuration::ZERO,
        }
    }

    /// The seed's appendix code for one request, as a pure state transition.
    fn charge(&mut self, d: &StepDirection, sequential: bool) -> Charge {
        if !sequential {
            *self = RunState::new();
            return Charge {
                service: d.random,
                spike: false,
                removed: SimDuration::ZERO,
                added: SimDuration::ZERO,
            };
        }
        let first_of_run = self.previous_random;
        self.previous_random = false;
        let compensate = first_of_run && d.compensate_first_request;
        // The run's first request paid `random` where a sequential one costs `sequential`:
        // the overpayment is burned off below, an underpayment is charged now.
        if compensate && d.random > d.sequential {
            self.excess = SimDuration(d.random.as_ns() - d.sequential.as_ns());
        }
        self.since_spike += 1;
        let interval = d.step_interval_requests[self.step];
        let spike = self.since_spike == interval;
        if spike {
            self.since_spike = 0;
            self.step = (self.step + 1).min(d.step_interval_requests.len() - 1);
        }
        let removed = SimDuration(self.excess.as_ns().min(d.sequential.as_ns()));
        self.excess = SimDuration(self.excess.as_ns() - removed.as_ns());
        let added = if compensate && d.random < d.sequential {
            SimDuration(d.sequential.as_ns() - d.random.as_ns())
        } else {
            SimDuration::ZERO
        };
        let mut service = SimDuration(d.sequential.as_ns() - removed.as_ns()) + added;
        if spike {
            service += d.spike;
        }
        Charge {
            service,
            spike,
            removed,
            added,
        }
    }
}

pub struct StepDevice {
    params: StepParams,
    tracker: SequentialTracker,
    /// One request at a time: the seed busy-waits in the submitting thread.
    server: FifoServers,
    /// Indexed by `write as usize`.
    runs: [RunState; 2],
    per_pattern: [u64; 4],
    steps: [u64; 2],
    compensation_removed_ns: u64,
    compensation_added_ns: u64,
    trims: u64,
    flushes: u64,
}

impl StepDevice {
    /// The parameters must be valid (the config crate checks them and names the bad key);
    /// anything else is a programming error.
    pub fn new(params: StepParams) -> Self {
        for d in [&params.read, &params.write] {
            assert!(
                !d.step_interval_requests.is_empty(),
                "a step schedule needs at least one interval"
            );
            assert!(
                d.step_interval_requests.iter().all(|&k| k >= 1),
                "step intervals must be at least one request"
            );
        }
        StepDevice {
            tracker: SequentialTracker::new(params.sequential_detect),
            server: FifoServers::new(1, params.queue_depth),
            runs: [RunState::new(), RunState::new()],
            per_pattern: [0; 4],
            steps: [0; 2],
            compensation_removed_ns: 0,
            compensation_added_ns: 0,
            trims: 0,
            flushes: 0,
            params,
        }
    }

    pub fn params(&self) -> &StepParams {
        &self.params
    }
}

/// The model's counters, in the order `counters` lists them.
pub const COUNTERS: &[CounterDescriptor] = &[
    pattern::PATTERN_REQUESTS,
    CounterDescriptor::new("read_steps", Unit::Count, "Read spikes charged."),
    CounterDescriptor::new("write_steps", Unit::Count, "Write spikes charged."),
    CounterDescriptor::new(
        "compensation_removed_ns",
        Unit::Nanoseconds,
        "Excess taken off sequential delays.",
    ),
    CounterDescriptor::new(
        "compensation_added_ns",
        Unit::Nanoseconds,
        "Shortfall charged to second requests (random faster than sequential).",
    ),
    pattern::TRIM_REQUESTS,
    pattern::FLUSH_REQUESTS,
    CounterDescriptor::new("busy_ns", Unit::Nanoseconds, "Sum of service times."),
];

impl Device for StepDevice {
    fn counter_descriptors(&self) -> Vec<Described> {
        Described::all(COUNTERS).collect()
    }

    fn model_name(&self) -> &'static str {
        "step"
    }

    fn capacity_bytes(&self) -> u64 {
        self.params.capacity_bytes
    }

    fn queue_depth(&self) -> usize {
        self.server.queue_depth()
    }

    fn submit(&mut self, now: SimTime, request: Request) -> Result<(), DeviceError> {
        check_range(&request, self.params.capacity_bytes)?;
        // Checked before classifying, so that a refused request leaves the run state untouched.
        if !self.server.has_room() {
            return Err(DeviceError::QueueFull {
                queue_depth: self.server.queue_depth(),
            });
        }
        // One server serves in submission order, so charging at submission walks the runs in
        // the order the device works through them.
        let service = match self.tracker.classify(&request) {
            Some(pattern) => {
                self.per_pattern[pattern.index()] += 1;
                let write = pattern.is_write();
                let d = self.params.direction(write);
                let charge = self.runs[write as usize].charge(d, pattern.is_sequential());
                self.steps[write as usize] += charge.spike as u64;
                self.compensation_removed_ns += charge.removed.as_ns();
                self.compensation_added_ns += charge.added.as_ns();
                charge.service
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
        self.server.submit(now, request, service)
    }

    fn next_deadline(&self) -> Option<SimTime> {
        self.server.next_deadline()
    }

    fn advance(&mut self, now: SimTime, done: &mut Vec<Completion>) {
        self.server.advance(now, done)
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
        counters.push(DeviceCounter::new("read_steps", self.steps[0] as f64));
        counters.push(DeviceCounter::new("write_steps", self.steps[1] as f64));
        counters.push(DeviceCounter::new(
            "compensation_removed_ns",
            self.compensation_removed_ns as f64,
        ));
        counters.push(DeviceCounter::new(
            "compensation_added_ns",
            self.compensation_added_ns as f64,
        ));
        counters.push(DeviceCounter::new("trim_requests", self.trims as f64));
        counters.push(DeviceCounter::new("flush_requests", self.flushes as f64));
        counters.push(DeviceCounter::new("busy_ns", self.server.busy_ns() as f64));
        counters
    }
}

#[cfg(test)]
mod counter_docs {
    /// The model's page lists exactly these counters (`STORSIM_BLESS_DOCS=1` rewrites it).
    #[test]
    fn the_page_lists_exactly_the_descriptors() {
        let tables = storsim_core::conformance::counter_tables(&[("step", super::COUNTERS)]);
        storsim_testenv::check_counter_tables("docs/models/step.md", &tables).unwrap();
    }
}
