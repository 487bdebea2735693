//! The conformance kit itself: it passes a correct device and reports each way a deliberately
//! broken one breaks the contract, with the seed and the request in its message.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use storsim_core::conformance::{self, Options, Recorder, ViolationKind};
use storsim_core::{
    check_range, BlockWear, Completion, CounterDescriptor, Described, Device, DeviceCounter,
    DeviceError, Op, Request, SimDuration, SimTime, Status, Unit,
};

/// One way of breaking the contract.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Flaw {
    None,
    /// The 50th completion is reported twice.
    CompletesTwice,
    /// Request 40 finishes 1 ns before it arrives (if it arrives after time zero).
    CompletesBeforeArrival,
    /// The 60th completion reported comes with a request the device never accepted.
    CompletesUnknown,
    /// Request 30's completion carries the request 512 bytes longer.
    AltersRequest,
    /// Request 35's service starts a nanosecond after it finishes.
    StartsAfterFinish,
    /// Completions come out of `advance` without a deadline having announced them: the
    /// announced deadline is a microsecond late.
    DeadlineLate,
    /// `next_deadline()` keeps naming the last completion's instant once the device is empty.
    DeadlineStuck,
    /// `submit` accepts whatever the queue holds.
    IgnoresQueueDepth,
    /// `submit` refuses one request below the queue depth.
    RefusesEarly,
    /// No range check.
    AcceptsPastTheEnd,
    /// Each device built takes a nanosecond longer per request than the one before.
    Nondeterministic,
    /// A refused submission slows the device down.
    RefusalChangesState,
    /// Nothing ever completes, and no deadline is announced.
    Stalls,
    /// `advance(now)` reports completions finishing up to a microsecond after `now`.
    ReportsFuture,
    /// Flushes take no time, so they finish together with the request before them, and
    /// `advance` reports what finished together in reverse.
    ReversesTies,
    /// `block_wear()` lists one erase count fewer than its shape has blocks.
    WearMisshapen,
    /// `block_wear()` counts the devices built before it, as if erases leaked between runs.
    WearNondeterministic,
    /// Request 45 completes with a media error, which only a faults layer may report.
    FailsARequest,
    /// Lists a counter none of its descriptors describes.
    UndescribedCounter,
}

/// The test device's one counter.
static COUNTERS: [CounterDescriptor; 1] = [CounterDescriptor::new(
    "completed_requests",
    Unit::Count,
    "Requests completed.",
)];

/// A single FIFO server: 10 µs plus 1 ns a byte per request, 3 µs a flush.
struct Fifo {
    flaw: Flaw,
    queue_depth: usize,
    queue: VecDeque<Completion>,
    server_free: SimTime,
    completed: u64,
    extra_ns: u64,
    last_finish: Option<SimTime>,
    built: u64,
}

static BUILT: AtomicU64 = AtomicU64::new(0);

const CAPACITY_BYTES: u64 = 64 << 20;

impl Fifo {
    fn new(flaw: Flaw, queue_depth: usize) -> Fifo {
        let built = BUILT.fetch_add(1, Ordering::Relaxed);
        Fifo {
            flaw,
            queue_depth,
            queue: VecDeque::new(),
            server_free: SimTime::ZERO,
            completed: 0,
            extra_ns: if flaw == Flaw::Nondeterministic {
                built
            } else {
                0
            },
            last_finish: None,
            built,
        }
    }
}

impl Device for Fifo {
    fn model_name(&self) -> &'static str {
        "fifo"
    }
    fn capacity_bytes(&self) -> u64 {
        CAPACITY_BYTES
    }
    fn queue_depth(&self) -> usize {
        self.queue_depth
    }
    fn submit(&mut self, now: SimTime, request: Request) -> Result<(), DeviceError> {
        if self.flaw != Flaw::AcceptsPastTheEnd {
            if let Err(e) = check_range(&request, CAPACITY_BYTES) {
                if self.flaw == Flaw::RefusalChangesState {
                    self.extra_ns += 1;
                }
                return Err(e);
            }
        }
        let limit = match self.flaw {
            Flaw::IgnoresQueueDepth => usize::MAX,
            Flaw::RefusesEarly => self.queue_depth - 1,
            _ => self.queue_depth,
        };
        if self.queue.len() >= limit {
            return Err(DeviceError::QueueFull {
                queue_depth: self.queue_depth,
            });
        }
        let service = match request.op {
            Op::Flush if self.flaw == Flaw::ReversesTies => 0,
            Op::Flush => 3_000,
            _ => 10_000 + request.len_bytes,
        } + self.extra_ns;
        let start = now.max(self.server_free);
        let mut finish = start + SimDuration(service);
        if self.flaw == Flaw::CompletesBeforeArrival
            && request.id == 40
            && request.arrival > SimTime::ZERO
        {
            finish = SimTime(request.arrival.as_ns() - 1);
        }
        self.server_free = self.server_free.max(finish);
        let mut completion = Completion {
            request,
            service_start: start.min(finish),
            finish,
            status: Status::Ok,
        };
        match self.flaw {
            Flaw::AltersRequest if request.id == 30 => completion.request.len_bytes += 512,
            Flaw::FailsARequest if request.id == 45 => completion.status = Status::MediaError,
            Flaw::StartsAfterFinish if request.id == 35 => {
                completion.service_start = finish + SimDuration(1);
            }
            _ => {}
        }
        self.queue.push_back(completion);
        Ok(())
    }
    fn next_deadline(&self) -> Option<SimTime> {
        match self.flaw {
            Flaw::Stalls => None,
            Flaw::DeadlineLate => self.queue.front().map(|c| c.finish + SimDuration(1_000)),
            Flaw::DeadlineStuck => self.queue.front().map(|c| c.finish).or(self.last_finish),
            _ => self.queue.front().map(|c| c.finish),
        }
    }
    fn advance(&mut self, now: SimTime, done: &mut Vec<Completion>) {
        if self.flaw == Flaw::Stalls {
            return;
        }
        let horizon = match self.flaw {
            Flaw::ReportsFuture => now + SimDuration(1_000),
            _ => now,
        };
        let from = done.len();
        while self.queue.front().is_some_and(|c| c.finish <= horizon) {
            let c = self.queue.pop_front().expect("front");
            self.completed += 1;
            self.last_finish = Some(c.finish);
            done.push(c);
            if self.flaw == Flaw::CompletesTwice && self.completed == 50 {
                done.push(c);
            }
            if self.flaw == Flaw::CompletesUnknown && self.completed == 60 {
                let mut stranger = c;
                stranger.request.id = 1_000_000;
                done.push(stranger);
            }
        }
        if self.flaw == Flaw::ReversesTies {
            done[from..].reverse();
        }
    }
    fn counters(&self) -> Vec<DeviceCounter> {
        let mut counters = vec![DeviceCounter::new(
            "completed_requests",
            self.completed as f64,
        )];
        if self.flaw == Flaw::UndescribedCounter {
            counters.push(DeviceCounter::new("undescribed", 0.0));
        }
        counters
    }
    fn counter_descriptors(&self) -> Vec<Described> {
        Described::all(&COUNTERS).collect()
    }
    /// A pretend flash array of 2 × 4 blocks, each erased once per 100 completions.
    fn block_wear(&self) -> Vec<BlockWear> {
        let mut erase_counts = vec![(self.completed / 100) as u32; 8];
        match self.flaw {
            Flaw::WearMisshapen => {
                erase_counts.pop();
            }
            Flaw::WearNondeterministic => erase_counts[0] += self.built as u32,
            _ => {}
        }
        vec![BlockWear {
            unit: String::new(),
            channels: 2,
            chips_per_channel: 1,
            dies_per_chip: 1,
            planes_per_die: 1,
            blocks_per_plane: 4,
            pages_per_block: 64,
            erase_counts,
        }]
    }
}

fn options() -> Options {
    Options {
        seed: 7,
        requests: 1_000,
        ..Options::default()
    }
}

#[test]
fn a_correct_device_passes_at_every_queue_depth() {
    for queue_depth in [1, 2, 8, 64] {
        let report = conformance::check(|| Fifo::new(Flaw::None, queue_depth), &options())
            .unwrap_or_else(|v| panic!("queue depth {queue_depth}: {v}"));
        assert_eq!(report.model, "fifo");
        assert_eq!(report.completed, 1_000);
        assert!(report.probes > 0, "the kit probed refusals");
        assert!(report.failed.is_none());
    }
}

#[test]
fn each_broken_device_is_reported_with_its_seed_and_request() {
    let cases = [
        (Flaw::CompletesTwice, ViolationKind::CompletedTwice),
        (Flaw::CompletesBeforeArrival, ViolationKind::BeforeArrival),
        (Flaw::CompletesUnknown, ViolationKind::CompletedUnknown),
        (Flaw::AltersRequest, ViolationKind::CompletionAltered),
        (
            Flaw::StartsAfterFinish,
            ViolationKind::FinishBeforeServiceStart,
        ),
        (Flaw::DeadlineLate, ViolationKind::CompletionWithoutDeadline),
        (Flaw::DeadlineStuck, ViolationKind::DeadlineWithoutProgress),
        (
            Flaw::IgnoresQueueDepth,
            ViolationKind::AcceptedBeyondQueueDepth,
        ),
        (Flaw::RefusesEarly, ViolationKind::QueueFullBelowDepth),
        (Flaw::AcceptsPastTheEnd, ViolationKind::AcceptedOutOfRange),
        (Flaw::Nondeterministic, ViolationKind::Nondeterministic),
        (
            Flaw::RefusalChangesState,
            ViolationKind::ProbesChangedResults,
        ),
        (Flaw::Stalls, ViolationKind::Stalled),
        (Flaw::ReportsFuture, ViolationKind::FinishAfterNow),
        (Flaw::ReversesTies, ViolationKind::OutOfOrder),
        (Flaw::WearMisshapen, ViolationKind::BlockWearShape),
        (Flaw::WearNondeterministic, ViolationKind::Nondeterministic),
        (Flaw::FailsARequest, ViolationKind::ErrorStatus),
        (Flaw::UndescribedCounter, ViolationKind::UndescribedCounter),
    ];
    for (flaw, kind) in cases {
        let options = options();
        let seed = options.effective_seed();
        let violation = conformance::check(|| Fifo::new(flaw, 4), &options)
            .expect_err(&format!("{flaw:?} must be reported"));
        assert_eq!(violation.kind, kind, "{flaw:?}: {violation}");
        assert_eq!(violation.seed, Some(seed));
        let message = violation.to_string();
        assert!(
            message.contains(&format!("seed {seed}")) && message.contains("fifo"),
            "{message}"
        );
        let names_request = !matches!(
            kind,
            ViolationKind::DeadlineWithoutProgress
                | ViolationKind::Nondeterministic
                | ViolationKind::ProbesChangedResults
                | ViolationKind::BlockWearShape
                | ViolationKind::UndescribedCounter
        );
        if names_request {
            let r = violation.request.expect("the request is named");
            assert!(message.contains(&format!("request {}", r.id)), "{message}");
        }
    }
}

#[test]
fn drive_submits_at_arrivals_and_waits_for_room() {
    // Three requests arriving together at a device of depth 2: the third waits for the first.
    let requests: Vec<Request> = (0..3)
        .map(|id| Request {
            id,
            op: Op::Write,
            offset_bytes: id * 4096,
            len_bytes: 4096,
            arrival: SimTime(1_000),
            flow: 0,
        })
        .collect();
    let (mut device, log) = Recorder::new(Fifo::new(Flaw::None, 2));
    let run = conformance::drive(&mut device, &requests).unwrap();
    let service = 10_000 + 4096;
    let finishes: Vec<u64> = run.completions.iter().map(|c| c.finish.as_ns()).collect();
    assert_eq!(
        finishes,
        [1_000 + service, 1_000 + 2 * service, 1_000 + 3 * service]
    );
    let log = log.lock().unwrap();
    let submitted: Vec<(u64, u64)> = log
        .submitted
        .iter()
        .map(|(t, r)| (t.as_ns(), r.id))
        .collect();
    assert_eq!(submitted, [(1_000, 0), (1_000, 1), (1_000 + service, 2)]);
    assert!(
        log.refused.is_empty(),
        "drive never submits to a full device"
    );
    assert_eq!(log.completed, run.completions);
    assert_eq!(run.end, SimTime(1_000 + 3 * service));
}

#[test]
fn drive_reports_a_broken_device_without_a_seed() {
    let requests: Vec<Request> = (0..100)
        .map(|id| Request {
            id,
            op: Op::Read,
            offset_bytes: 0,
            len_bytes: 512,
            arrival: SimTime(id * 100),
            flow: 0,
        })
        .collect();
    let violation = conformance::drive(&mut Fifo::new(Flaw::CompletesTwice, 4), &requests)
        .expect_err("completing twice is reported");
    assert_eq!(violation.kind, ViolationKind::CompletedTwice);
    assert_eq!(violation.seed, None);
    assert_eq!(violation.request.map(|r| r.id), Some(49));
}

#[test]
fn drive_one_at_a_time_submits_each_request_when_the_device_is_idle() {
    let requests = [
        (Op::Write, 0, 4096),
        (Op::Read, 4096, 512),
        (Op::Flush, 0, 0),
    ];
    let done = conformance::drive_one_at_a_time(&mut Fifo::new(Flaw::None, 4), &requests).unwrap();
    let spans: Vec<(u64, u64, u64)> = done
        .iter()
        .map(|c| (c.request.id, c.request.arrival.as_ns(), c.finish.as_ns()))
        .collect();
    let (a, b) = (10_000 + 4096, 10_000 + 512);
    assert_eq!(
        spans,
        [(0, 0, a), (1, a, a + b), (2, a + b, a + b + 3_000)],
        "each request arrives as the one before it finishes, and is served at once"
    );
    let stuck = conformance::drive_one_at_a_time(&mut Fifo::new(Flaw::DeadlineStuck, 4), &requests)
        .expect_err("a deadline that stays put is reported");
    assert_eq!(stuck.kind, ViolationKind::DeadlineWithoutProgress);
}
