//! The device conformance kit: one check of the [`Device`] contract that every model passes,
//! and the shared pieces tests use to drive and watch devices.
//!
//! [`check`] builds a device with the caller's constructor and drives it with a seeded random
//! mixed workload (reads, writes, trims and flushes of random sizes at random and sequential
//! offsets inside the capacity; bursts beyond the queue depth, short and long gaps, idle periods
//! for background work). It checks, on every call:
//!
//! - every accepted request completes exactly once, echoing its request unchanged, with
//!   `arrival <= service_start <= finish <= now` of the `advance` call that reports it;
//! - `advance(now)` reports every request finished by `now`: none shows up in a later call,
//!   and they come in finishing order, ties in submission order;
//! - `next_deadline()` is honest: a completion appears only from an `advance(now)` called when
//!   the announced deadline was at or before `now`, and never finishes before that deadline;
//!   after `advance(now)` the deadline is later than `now` (a driver that advances to each
//!   deadline always gets past it), never in the past after a submission, and never `None`
//!   while accepted requests are outstanding;
//! - queue depth: below `queue_depth()` outstanding requests a valid request is accepted, at
//!   it every submission is refused with `QueueFull`; a request past the end is refused with
//!   `OutOfRange`;
//! - `now` may repeat: the kit calls `advance` twice at the same instant and submits several
//!   requests at one instant, and never goes back in time itself;
//! - identical results for identical input: the run is made twice, once with probes (refused
//!   submissions at a full queue and past the end, prefetch hints, repeated `advance` calls)
//!   and once without, and the completions, counters and per-block erase counts
//!   (`block_wear()`) must be identical, since a refusal and a hint leave the device's state
//!   unchanged. When they differ, a third run with the probes tells whether the device is
//!   nondeterministic or the probes changed it;
//! - `block_wear()` gives each array one erase count per block of its shape, each array under
//!   a unit name of its own;
//! - every counter `counters()` lists matches exactly one of `counter_descriptors()`, every
//!   descriptor has a line of documentation, and every descriptor not marked `sometimes` is
//!   listed; every part a composite declares (`parts()`) lists counters under its prefix
//!   (checked after the run).
//!
//! The first broken promise ends the check with a [`Violation`] naming the seed, the request
//! and what was broken. Every check prints its seed to stderr as it starts; the environment
//! variable `STORSIM_TEST_SEED` replaces the seed of every check, to replay a failure or try
//! new seeds.
//!
//! The same checks back [`drive`], an open-loop driver that submits given requests the way the
//! engine does, and [`drive_one_at_a_time`], which submits each request once the device is idle; [`mixed_requests`] is the kit's workload for other drivers; and [`Recorder`]
//! logs what a wrapped device saw, so that tests of composite
//! devices (arrays, hybrids) need no copies of their own. docs/conformance.md says how a new
//! model runs the kit.

mod monitor;
mod pages;
mod recorder;
mod workload;

pub use pages::{counter_table, counter_tables};
pub use recorder::{Log, Recorder, SharedLog};
pub use workload::{mixed_requests, Mix};

use crate::counter::Described;
use crate::device::{BlockWear, Device, DeviceError};
use crate::prng::Prng;
use crate::request::{Completion, Op, Request};
use crate::time::SimTime;
use monitor::Monitor;
use std::fmt;

/// The value of the device's counter `name`, for a test's assertions; panics naming the
/// counter when the device lists none of that name.
pub fn counter(device: &dyn Device, name: &str) -> f64 {
    device
        .counters()
        .into_iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("the device has no counter {name}"))
        .value
}

/// The environment variable that replaces the seed of every check.
pub const SEED_ENV: &str = "STORSIM_TEST_SEED";

/// The seed `STORSIM_TEST_SEED` asks for, if it is set; an error if it is not a number.
pub fn seed_from_env() -> Result<Option<u64>, String> {
    match std::env::var(SEED_ENV) {
        Ok(v) => v
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| format!("{SEED_ENV}={v:?} is not a seed (an unsigned 64-bit number)")),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(e) => Err(format!("{SEED_ENV}: {e}")),
    }
}

/// How [`check`] runs.
#[derive(Clone, Debug)]
pub struct Options {
    /// The workload's seed; `STORSIM_TEST_SEED` overrides it.
    pub seed: u64,
    /// Requests in the workload. A few thousand exercise queueing, background work and every
    /// operation; large, slow devices may take fewer.
    pub requests: usize,
    /// The largest request, in bytes (rounded down to whole 512-byte sectors).
    pub max_request_bytes: u64,
    /// Whether the device may refuse a valid in-range request with `Invalid` (a raw-flash FTL
    /// refuses to program a page twice). Such requests are counted in [`Report`], not
    /// resubmitted.
    pub allow_invalid: bool,
    /// `advance` calls in a row that may complete nothing while requests are outstanding before
    /// the device counts as stalled.
    pub stall_advances: u64,
    /// Whether a completion may carry an error status. A model completes every request
    /// [`crate::Status::Ok`]; only a layer that injects faults (`storsim-faults`) sets this.
    /// [`drive`] and [`drive_one_at_a_time`] never look at the status.
    pub allow_errors: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            seed: 22,
            requests: 2_000,
            max_request_bytes: 256 * 1024,
            allow_invalid: false,
            stall_advances: 100_000,
            allow_errors: false,
        }
    }
}

impl Options {
    /// The seed a check runs with: `STORSIM_TEST_SEED` if set, else [`Options::seed`].
    ///
    /// # Panics
    /// When `STORSIM_TEST_SEED` is set but not a number: a test run asked for something
    /// impossible.
    pub fn effective_seed(&self) -> u64 {
        seed_from_env()
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or(self.seed)
    }
}

/// What a passing check did, for the caller's own assertions.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// The model's name, as the device gives it.
    pub model: &'static str,
    /// The seed the check ran with.
    pub seed: u64,
    /// Requests the device completed (in one run).
    pub completed: u64,
    /// Requests the device refused with `Invalid` (only with [`Options::allow_invalid`]).
    pub invalid_refusals: u64,
    /// Submissions the kit made to be refused (past the end, at a full queue).
    pub probes: u64,
    /// Why the device failed, if it did; requests after that were not submitted.
    pub failed: Option<String>,
    /// The instant of the last completion.
    pub end: SimTime,
}

/// Which promise of the contract a device broke.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ViolationKind {
    /// A request was reported complete a second time.
    CompletedTwice,
    /// A completion names a request the device never accepted.
    CompletedUnknown,
    /// A completion carries a request other than the one submitted under its id.
    CompletionAltered,
    /// Service started or finished before the request arrived.
    BeforeArrival,
    /// A completion finishes before its service started.
    FinishBeforeServiceStart,
    /// `advance(now)` reported a completion finishing after `now`.
    FinishAfterNow,
    /// A request finished by the time of an `advance` call was only reported by a later one.
    ReportedLate,
    /// Completions were not in finishing order (ties in submission order).
    OutOfOrder,
    /// A completion appeared although `next_deadline()` had not announced a change by then.
    CompletionWithoutDeadline,
    /// After `advance(now)`, `next_deadline()` was still at or before `now`.
    DeadlineWithoutProgress,
    /// `next_deadline()` lay in the past.
    DeadlineInPast,
    /// Accepted requests are outstanding but the device will never complete them.
    Stalled,
    /// The device accepted a request while holding `queue_depth()` requests.
    AcceptedBeyondQueueDepth,
    /// The device refused with `QueueFull` while holding fewer than `queue_depth()` requests.
    QueueFullBelowDepth,
    /// The device accepted a request past its end.
    AcceptedOutOfRange,
    /// The device refused a request with the wrong error, or refused a valid one.
    WrongRefusal,
    /// Two runs of the same input gave different results.
    Nondeterministic,
    /// Refused submissions, prefetch hints or repeated `advance` calls changed the results.
    ProbesChangedResults,
    /// `block_wear()` listed an array whose erase counts do not fill its shape, or two arrays
    /// under the same unit name.
    BlockWearShape,
    /// `counter_values()` differs from the values of `counters()`.
    CounterValues,
    /// A counter matches none of the device's descriptors, or several; a descriptor has no
    /// documentation, or is not `sometimes` and has no counter listed.
    UndescribedCounter,
    /// A completion carried an error status where none is allowed ([`Options::allow_errors`]).
    ErrorStatus,
}

/// A broken promise: which device, which seed, which request, what happened.
#[derive(Clone, Debug, PartialEq)]
pub struct Violation {
    /// The device's model name.
    pub model: &'static str,
    /// The check's seed (`None` for [`drive`], whose requests are the caller's).
    pub seed: Option<u64>,
    /// The request concerned, if one is.
    pub request: Option<Request>,
    /// Which promise.
    pub kind: ViolationKind,
    /// What happened, with the instants and values involved.
    pub detail: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "device `{}` broke the Device contract", self.model)?;
        if let Some(seed) = self.seed {
            write!(f, " (seed {seed}, replay with {SEED_ENV}={seed})")?;
        }
        write!(f, ": {:?}", self.kind)?;
        if let Some(r) = &self.request {
            write!(
                f,
                ": request {} ({} of {} bytes at byte {}, arriving at {})",
                r.id, r.op, r.len_bytes, r.offset_bytes, r.arrival
            )?;
        }
        write!(f, ": {}", self.detail)
    }
}

impl std::error::Error for Violation {}

/// Checks the Device contract on devices from `make_device`, which must build the same device
/// in the same initial state each time it is called (the check builds two, sometimes three).
/// Prints the seed to stderr first. See the module documentation for what is checked.
pub fn check<D, F>(mut make_device: F, options: &Options) -> Result<Report, Violation>
where
    D: Device,
    F: FnMut() -> D,
{
    let seed = options.effective_seed();
    let mut first = make_device();
    let model = first.model_name();
    eprintln!(
        "conformance {model}: seed {seed}, {} requests ({SEED_ENV}={seed} replays it)",
        options.requests
    );
    let root = Prng::new(seed);
    let requests = mixed_requests(
        seed,
        &Mix {
            count: options.requests,
            capacity_bytes: first.capacity_bytes(),
            queue_depth: first.queue_depth(),
            max_request_bytes: options.max_request_bytes,
        },
    );
    let probed_run = |device: &mut D| {
        run(
            device,
            &requests,
            Monitor::new(model, Some(seed), options.stall_advances)
                .with_errors_allowed(options.allow_errors),
            Some(root.fork(2)),
            options.allow_invalid,
            &mut |_, _| {},
        )
    };
    let probed = probed_run(&mut first)?;
    check_counter_values(model, seed, &first)?;
    check_counters_described(&first).map_err(|detail| Violation {
        model,
        seed: Some(seed),
        request: None,
        kind: ViolationKind::UndescribedCounter,
        detail,
    })?;
    drop(first);
    check_block_wear(model, seed, &probed.block_wear)?;
    let plain = run(
        &mut make_device(),
        &requests,
        Monitor::new(model, Some(seed), options.stall_advances)
            .with_errors_allowed(options.allow_errors),
        None,
        options.allow_invalid,
        &mut |_, _| {},
    )?;
    if let Some(difference) = probed.difference(&plain) {
        let again = probed_run(&mut make_device())?;
        let (kind, what, detail) = match probed.difference(&again) {
            Some(d) => (
                ViolationKind::Nondeterministic,
                "two runs of the same input differ",
                d,
            ),
            None => (
                ViolationKind::ProbesChangedResults,
                "refused submissions, prefetch hints or repeated advance calls changed the \
                 results (a run with them differs from one without)",
                difference,
            ),
        };
        return Err(Violation {
            model,
            seed: Some(seed),
            request: detail.request,
            kind,
            detail: format!("{what}: {}", detail.text),
        });
    }
    Ok(Report {
        model,
        seed,
        completed: probed.completions.len() as u64,
        invalid_refusals: probed.invalid_refusals,
        probes: probed.probes,
        failed: probed.failed.map(|(_, reason)| reason),
        end: probed.end,
    })
}

/// `counter_values()` writes exactly the values of `counters()`, in their order (bit for bit,
/// so a NaN must be the same NaN).
fn check_counter_values<D: Device + ?Sized>(
    model: &'static str,
    seed: u64,
    device: &D,
) -> Result<(), Violation> {
    let named: Vec<u64> = device
        .counters()
        .iter()
        .map(|c| c.value.to_bits())
        .collect();
    let mut values = vec![f64::NAN];
    device.counter_values(&mut values);
    let values: Vec<u64> = values[1..].iter().map(|v| v.to_bits()).collect();
    if named == values {
        return Ok(());
    }
    let at = named.iter().zip(&values).position(|(a, b)| a != b);
    Err(Violation {
        model,
        seed: Some(seed),
        request: None,
        kind: ViolationKind::CounterValues,
        detail: format!(
            "counter_values() wrote {} values after what the vector held, counters() has {}; \
             the first difference is at {at:?}",
            values.len(),
            named.len()
        ),
    })
}

/// Every counter the device lists matches exactly one of its descriptors, every descriptor
/// says what it counts, and every descriptor not marked `sometimes` has its counter listed: what `storsim counters`, the reports and the model pages rely on.
/// Public so that a test of a device the kit does not drive (a preset's stack after a run, say)
/// can make the same check; the error names the counter or descriptor at fault.
pub fn check_counters_described<D: Device + ?Sized>(device: &D) -> Result<(), String> {
    let descriptors = device.counter_descriptors();
    if let Some(d) = descriptors
        .iter()
        .find(|d| d.descriptor.doc.trim().is_empty())
    {
        return Err(format!("the descriptor {} has no doc line", d.full_name()));
    }
    let counters = device.counters();
    if let Some(d) = descriptors
        .iter()
        .filter(|d| d.descriptor.always)
        .find(|d| !counters.iter().any(|c| d.matches(&c.name).is_some()))
    {
        return Err(format!(
            "the descriptor {} is listed but no counter of it is",
            d.full_name()
        ));
    }
    // A part declared under a prefix no counter carries would send readers (the report's
    // plots) looking for a model that is not there.
    if let Some(p) = device
        .parts()
        .iter()
        .find(|p| !counters.iter().any(|c| c.name.starts_with(&p.prefix)))
    {
        return Err(format!(
            "the part {} ({}) lists no counter under its prefix",
            p.prefix, p.model
        ));
    }
    for counter in counters {
        let matching: Vec<String> = descriptors
            .iter()
            .filter(|d| d.matches(&counter.name).is_some())
            .map(Described::full_name)
            .collect();
        if matching.len() != 1 {
            return Err(format!(
                "the counter {} matches {} descriptors ({}), not one",
                counter.name,
                matching.len(),
                matching.join(", ")
            ));
        }
    }
    Ok(())
}

/// Each array's erase counts are one per block of its shape, and no two arrays share a unit
/// name (a report could not tell them apart).
fn check_block_wear(model: &'static str, seed: u64, wear: &[BlockWear]) -> Result<(), Violation> {
    for (i, w) in wear.iter().enumerate() {
        let blocks = [
            w.channels,
            w.chips_per_channel,
            w.dies_per_chip,
            w.planes_per_die,
            w.blocks_per_plane,
        ]
        .iter()
        .map(|&n| n as usize)
        .product::<usize>();
        let problem = if blocks != w.erase_counts.len() {
            Some(format!(
                "{} erase counts for a shape of {blocks} blocks",
                w.erase_counts.len()
            ))
        } else if wear[..i].iter().any(|v| v.unit == w.unit) {
            Some("a second array under the same unit".to_string())
        } else {
            None
        };
        if let Some(problem) = problem {
            return Err(Violation {
                model,
                seed: Some(seed),
                request: None,
                kind: ViolationKind::BlockWearShape,
                detail: format!("block_wear() unit {:?}: {problem}", w.unit),
            });
        }
    }
    Ok(())
}

/// How a [`drive`] ended.
#[derive(Clone, Debug, PartialEq)]
pub struct Run {
    /// Every completion, in the order the device reported them.
    pub completions: Vec<Completion>,
    /// The id of the request the device refused with `Failed`, if it did; nothing was
    /// submitted after it, and what it had accepted drained.
    pub failed_at: Option<u64>,
    /// The instant of the last call.
    pub end: SimTime,
}

/// Drives `device` open loop as the engine does: `requests` (sorted by arrival, ids unique) are
/// submitted at their arrival or, when the device is full, at the next instant it has room;
/// between arrivals the device is advanced to its deadlines, until every accepted request has
/// completed. Every call is checked as [`check`] does; a refusal other than `QueueFull` (at a
/// full queue) and `Failed` is a violation.
pub fn drive<D: Device + ?Sized>(device: &mut D, requests: &[Request]) -> Result<Run, Violation> {
    drive_observed(device, requests, |_, _| {})
}

/// [`drive`], calling `before_submit(index, device)` just before `requests[index]` is submitted
/// (for counters as they stood at that point of the run, say).
pub fn drive_observed<D: Device + ?Sized>(
    device: &mut D,
    requests: &[Request],
    mut before_submit: impl FnMut(usize, &D),
) -> Result<Run, Violation> {
    let model = device.model_name();
    let trace = run(
        device,
        requests,
        Monitor::new(model, None, Options::default().stall_advances),
        None,
        false,
        &mut before_submit,
    )?;
    Ok(Run {
        completions: trace.completions,
        failed_at: trace.failed.map(|(id, _)| id),
        end: trace.end,
    })
}

/// How many deadlines [`drive_one_at_a_time`] follows on an idle device before it counts as
/// never settling.
const SETTLE_ADVANCES_MAX: u64 = 1_000_000;

/// Drives `device` at queue depth 1, the way a latency measurement does: request `i` of
/// `requests` (`(op, offset_bytes, len_bytes)`) gets id `i` and arrives once the device has
/// completed request `i - 1` and finished any work of its own (a hybrid's promotions, a
/// background flush), so each one finds the device idle. Returns the completions in order.
/// Every call is checked as [`check`] does; any refusal is a violation.
pub fn drive_one_at_a_time<D: Device + ?Sized>(
    device: &mut D,
    requests: &[(Op, u64, u64)],
) -> Result<Vec<Completion>, Violation> {
    let mut monitor = Monitor::new(device.model_name(), None, Options::default().stall_advances);
    let mut now = SimTime::ZERO;
    let mut done = Vec::new();
    for (id, &(op, offset_bytes, len_bytes)) in requests.iter().enumerate() {
        settle(device, &mut monitor, &mut now, &mut done)?;
        let request = Request {
            id: id as u64,
            op,
            offset_bytes,
            len_bytes,
            arrival: now,
            flow: 0,
        };
        if let Err(e) = monitor.submit(device, now, request)? {
            return Err(monitor.violation(
                ViolationKind::WrongRefusal,
                Some(request),
                format!("refused at {now} by an idle device: {e}"),
            ));
        }
        while monitor.outstanding() > 0 {
            // The monitor has checked that a device with work outstanding has a deadline.
            now = device.next_deadline().expect("checked by the monitor");
            monitor.advance(device, now, &mut done)?;
        }
    }
    settle(device, &mut monitor, &mut now, &mut done)?;
    Ok(done)
}

/// Advances an idle device through its own work until it announces no deadline.
fn settle<D: Device + ?Sized>(
    device: &mut D,
    monitor: &mut Monitor,
    now: &mut SimTime,
    done: &mut Vec<Completion>,
) -> Result<(), Violation> {
    let mut advances = 0;
    while let Some(t) = device.next_deadline() {
        advances += 1;
        if advances > SETTLE_ADVANCES_MAX {
            return Err(monitor.violation(
                ViolationKind::DeadlineWithoutProgress,
                None,
                format!(
                    "with nothing outstanding, the device still announces deadlines after \
                     {SETTLE_ADVANCES_MAX} of them (now {t}): it never becomes idle"
                ),
            ));
        }
        *now = t;
        monitor.advance(device, t, done)?;
    }
    Ok(())
}

/// Everything a run produced that must not depend on how it was driven.
struct Trace {
    completions: Vec<Completion>,
    /// Counters by name with their values' bits, so that equal means identical.
    counters: Vec<(String, u64)>,
    /// Every flash array's erase counts at the end.
    block_wear: Vec<BlockWear>,
    failed: Option<(u64, String)>,
    end: SimTime,
    invalid_refusals: u64,
    probes: u64,
}

/// The first difference between two traces.
struct Difference {
    request: Option<Request>,
    text: String,
}

impl Trace {
    fn difference(&self, other: &Trace) -> Option<Difference> {
        let pairs = self.completions.iter().zip(&other.completions);
        if let Some((k, (a, b))) = pairs.enumerate().find(|(_, (a, b))| a != b) {
            return Some(Difference {
                request: Some(a.request),
                text: format!("completion {k} is {a:?} in one run and {b:?} in the other"),
            });
        }
        if self.completions.len() != other.completions.len() {
            return Some(Difference {
                request: None,
                text: format!(
                    "{} completions in one run, {} in the other",
                    self.completions.len(),
                    other.completions.len()
                ),
            });
        }
        if self.failed != other.failed {
            return Some(Difference {
                request: None,
                text: format!("failure {:?} against {:?}", self.failed, other.failed),
            });
        }
        if self.counters != other.counters {
            let counter = self
                .counters
                .iter()
                .zip(&other.counters)
                .find(|(a, b)| a != b)
                .map_or_else(
                    || "the counters' lists".to_string(),
                    |(a, b)| {
                        format!(
                            "counter {} ({} against {} {})",
                            a.0,
                            f64::from_bits(a.1),
                            b.0,
                            f64::from_bits(b.1)
                        )
                    },
                );
            return Some(Difference {
                request: None,
                text: format!("{counter} differ at the end"),
            });
        }
        if self.block_wear != other.block_wear {
            return Some(Difference {
                request: None,
                text: "the per-block erase counts (block_wear) differ at the end".to_string(),
            });
        }
        None
    }
}

/// One run of `requests` through `device`, every call checked by `monitor`. With `probes`, the
/// run also submits requests the device must refuse, sends prefetch hints (including hostile
/// ones past the end) and repeats `advance` calls at the same instant, all drawn from `probes`.
fn run<D: Device + ?Sized>(
    device: &mut D,
    requests: &[Request],
    mut monitor: Monitor,
    mut probes: Option<Prng>,
    allow_invalid: bool,
    before_submit: &mut dyn FnMut(usize, &D),
) -> Result<Trace, Violation> {
    let capacity = device.capacity_bytes();
    let mut now = SimTime::ZERO;
    let mut next = 0;
    let mut done = Vec::new();
    let mut completions = Vec::new();
    let mut failed = None;
    let mut invalid_refusals = 0;
    let mut probes_made = 0;
    // Probes take ids from the top of the range, far from any workload's.
    let mut probe_id = u64::MAX;
    loop {
        while failed.is_none() && next < requests.len() && requests[next].arrival <= now {
            let request = requests[next];
            if let Some(rng) = probes.as_mut() {
                if rng.below(8) == 0 {
                    let probe = past_the_end(rng, capacity, now, probe_id);
                    probe_id -= 1;
                    device.prefetch(&probe);
                    monitor.probe(device, now, probe, true)?;
                    probes_made += 1;
                }
                device.prefetch(&request);
            }
            if monitor.outstanding() >= device.queue_depth() {
                if probes.is_some() {
                    monitor.probe(device, now, request, false)?;
                    probes_made += 1;
                }
                break;
            }
            before_submit(next, device);
            match monitor.submit(device, now, request)? {
                Ok(()) => {}
                Err(DeviceError::Failed { reason }) => {
                    failed = Some((request.id, reason));
                    break;
                }
                Err(DeviceError::Invalid { .. }) if allow_invalid => invalid_refusals += 1,
                Err(e) => {
                    return Err(monitor.violation(
                        ViolationKind::WrongRefusal,
                        Some(request),
                        format!("refused at {now} with a free queue slot: {e}"),
                    ))
                }
            }
            next += 1;
        }
        let issuing = failed.is_none() && next < requests.len();
        if !issuing && monitor.outstanding() == 0 {
            break;
        }
        let arrival = (issuing && monitor.outstanding() < device.queue_depth())
            .then(|| requests[next].arrival.max(now));
        now = match (arrival, device.next_deadline()) {
            (Some(a), Some(d)) => a.min(d),
            (Some(a), None) => a,
            (None, Some(d)) => d,
            (None, None) => {
                return Err(monitor.violation(
                    ViolationKind::Stalled,
                    None,
                    format!(
                        "at {now}, {} accepted requests are outstanding, the queue is full and \
                         next_deadline() is None",
                        monitor.outstanding()
                    ),
                ))
            }
        };
        monitor.advance(device, now, &mut done)?;
        if let Some(rng) = probes.as_mut() {
            if rng.below(4) == 0 {
                monitor.advance(device, now, &mut done)?;
            }
        }
        completions.append(&mut done);
    }
    Ok(Trace {
        completions,
        counters: device
            .counters()
            .into_iter()
            .map(|c| (c.name, c.value.to_bits()))
            .collect(),
        block_wear: device.block_wear(),
        failed,
        end: now,
        invalid_refusals,
        probes: probes_made,
    })
}

/// A request whose range ends past `capacity_bytes`, in one of the ways a driver could get it
/// wrong: just past the end, far past it, or with an end that overflows.
fn past_the_end(rng: &mut Prng, capacity_bytes: u64, now: SimTime, id: u64) -> Request {
    let (offset_bytes, len_bytes) = match rng.below(3) {
        0 => (capacity_bytes.saturating_sub(512), 1024),
        1 => (capacity_bytes, 4096),
        _ => (u64::MAX - 511, 4096),
    };
    Request {
        id,
        op: [Op::Read, Op::Write, Op::Trim][rng.below(3) as usize],
        offset_bytes,
        len_bytes,
        arrival: now,
        flow: 0,
    }
}
