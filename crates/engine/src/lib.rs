//! The simulation engine: drives a [`Device`] with a [`Workload`] in virtual time, as fast as
//! the CPU allows, and hands every completion to a sink.
//!
//! The engine jumps from event to event: the next arrival or the device's next deadline,
//! whichever comes first. It holds at most one pending record per free slot, so memory does not
//! grow with the workload; requests that arrive while the device queue is full wait at the host
//! and their wait counts as queueing.

mod lookahead;

use lookahead::Lookahead;
use std::fmt;
use storsim_core::{
    Completion, Device, DeviceError, EventQueue, Request, SimTime, QUEUE_DEPTH_MAX,
};
use storsim_workload::{Origin, Pacing, Record, Workload, WorkloadError};

/// How records become requests.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Replay {
    /// Each record arrives at its timestamp, rebased so the first arrives at 0 and multiplied by
    /// `time_scale` (0.5 replays twice as fast, 2 half as fast).
    Open { time_scale: f64 },
    /// `depth` requests outstanding; each completion admits the next record after its think time.
    Closed { depth: u32 },
    /// Timestamps ignored; the device's queue is kept full (closed loop at its queue depth).
    AsFastAsPossible,
}

impl Replay {
    /// The replay a workload asks for when the user does not choose one.
    pub fn natural(pacing: Pacing) -> Replay {
        match pacing {
            Pacing::Open => Replay::Open { time_scale: 1.0 },
            Pacing::Closed { depth } => Replay::Closed { depth },
        }
    }
}

/// What to do with a request that reaches past the end of the device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OutOfRange {
    /// Stop with an error naming the record.
    #[default]
    Error,
    /// Fold the offset into the device (offset modulo capacity, pulled back to fit), counting it.
    Wrap,
}

/// What to do with a request the device refuses as invalid ([`DeviceError::Invalid`]), such as
/// a program of a page that is not erased on raw flash.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Refused {
    /// Stop with an error naming the record.
    #[default]
    Stop,
    /// Count the request and go on without it, keeping the first [`REFUSED_KEPT`] reasons
    /// ([`RunInfo::refused_requests`], [`RunInfo::first_refused`]). The request is never
    /// issued and never completes; in a closed loop its slot frees at once, as if it had
    /// completed when it was refused.
    Count,
}

/// How many refused requests [`RunInfo::first_refused`] describes; the rest are only counted,
/// so that a trace refused throughout does not grow memory.
pub const REFUSED_KEPT: usize = 10;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EngineOptions {
    pub replay: Replay,
    pub out_of_range: OutOfRange,
    /// What to do when the device refuses a request as invalid. [`DeviceError::OutOfRange`]
    /// follows `out_of_range` instead, and a full queue or a failed device is handled as
    /// always.
    pub on_refused: Refused,
    /// Stop issuing after this many records.
    pub max_requests: Option<u64>,
    /// Stop issuing requests that would arrive at or after this simulated instant.
    pub duration_ns: Option<u64>,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            replay: Replay::Open { time_scale: 1.0 },
            out_of_range: OutOfRange::Error,
            on_refused: Refused::Stop,
            max_requests: None,
            duration_ns: None,
        }
    }
}

/// Receives every completion, in completion order.
pub trait CompletionSink {
    fn completed(&mut self, completion: &Completion);
}

impl<F: FnMut(&Completion)> CompletionSink for F {
    fn completed(&mut self, completion: &Completion) {
        self(completion)
    }
}

/// Facts about the run that are not per-request statistics.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunInfo {
    pub requests_issued: u64,
    pub requests_completed: u64,
    /// Open-loop records whose timestamp was earlier than the previous record's; they were issued
    /// at the previous record's time, since arrivals cannot go back in time.
    pub out_of_order_records: u64,
    /// Requests folded into the device by [`OutOfRange::Wrap`].
    pub wrapped_requests: u64,
    /// Zero-length reads and writes, which were dropped.
    pub empty_requests: u64,
    /// Requests the device refused as invalid under [`Refused::Count`]: not issued, not
    /// completed, not in the statistics.
    pub refused_requests: u64,
    /// The first [`REFUSED_KEPT`] of them, in the order they were refused.
    pub first_refused: Vec<RefusedRequest>,
    /// The device failed ([`DeviceError::Failed`]) at this record: issuing stopped there, the
    /// requests it had accepted completed, and the run ended early. Says where and why.
    pub device_failed: Option<String>,
    pub end_ns: u64,
}

/// A request the device refused, as [`RunInfo::first_refused`] reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefusedRequest {
    /// The request's record in the workload, such as "line 17" or "request 3".
    pub position: String,
    /// The device's reason, which names what was wrong (for raw flash, the page and its block).
    pub reason: String,
}

#[derive(Debug)]
pub enum EngineError {
    Workload(WorkloadError),
    /// The device refused a request: which record (`position`, e.g. "line 17") of `source`.
    Device {
        source: String,
        position: String,
        error: DeviceError,
        /// Whether [`OutOfRange::Wrap`] would have accepted the request, for the message.
        wrap_would_help: bool,
        /// Whether [`Refused::Count`] would have gone on past the request, for the message.
        count_would_help: bool,
    },
    /// A record arrives later than [`SimTime::ARRIVAL_LIMIT`] (after time scaling or think
    /// time).
    ArrivalTooLate {
        source: String,
        position: String,
        arrival_ns: u128,
    },
    Options {
        message: String,
    },
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EngineError::Workload(e) => write!(f, "{e}"),
            EngineError::Device {
                source,
                position,
                error,
                wrap_would_help,
                count_would_help,
            } => {
                write!(f, "{source}: {position}: {error}")?;
                if *wrap_would_help {
                    write!(f, " (use --wrap to fold such requests into the device)")?;
                }
                if *count_would_help {
                    write!(
                        f,
                        " (use --on-refused count to count such requests and go on without them)"
                    )?;
                }
                Ok(())
            }
            EngineError::ArrivalTooLate {
                source,
                position,
                arrival_ns,
            } => write!(
                f,
                "{source}: {position}: the request would arrive {:.3e} s into the run, past the \
                 simulated clock's limit of {:.3e} s (about 146 years); check the timestamps, \
                 --time-scale or the think time",
                *arrival_ns as f64 / 1e9,
                SimTime::ARRIVAL_LIMIT.as_ns() as f64 / 1e9
            ),
            EngineError::Options { message } => write!(f, "{message}"),
        }
    }
}

impl std::error::Error for EngineError {}

impl From<WorkloadError> for EngineError {
    fn from(e: WorkloadError) -> Self {
        EngineError::Workload(e)
    }
}

/// How often (in completions) the progress callback is called.
pub const PROGRESS_INTERVAL: u64 = 1 << 16;

/// Runs `workload` on `device` to completion.
///
/// The engine reads one record ahead of the one it admits and passes it to
/// [`Device::prefetch`]; the run's results are what they would be without it.
pub fn run<D: Device + ?Sized>(
    device: &mut D,
    workload: &mut Workload,
    options: &EngineOptions,
    sink: &mut dyn CompletionSink,
    progress: &mut dyn FnMut(u64, SimTime),
) -> Result<RunInfo, EngineError> {
    let mut lookahead = Lookahead::new();
    let result = run_with(device, workload, options, sink, progress, &mut lookahead);
    lookahead.finish(workload);
    result
}

fn run_with<D: Device + ?Sized>(
    device: &mut D,
    workload: &mut Workload,
    options: &EngineOptions,
    sink: &mut dyn CompletionSink,
    progress: &mut dyn FnMut(u64, SimTime),
    lookahead: &mut Lookahead,
) -> Result<RunInfo, EngineError> {
    let depth = match options.replay {
        Replay::Open { time_scale } => {
            if !(time_scale.is_finite() && time_scale > 0.0) {
                return Err(EngineError::Options {
                    message: format!("time scale must be a positive number, got {time_scale}"),
                });
            }
            1
        }
        Replay::Closed { depth } => {
            if !(1..=QUEUE_DEPTH_MAX).contains(&depth) {
                return Err(EngineError::Options {
                    message: format!(
                        "queue depth must be from 1 to {QUEUE_DEPTH_MAX}, got {depth}"
                    ),
                });
            }
            depth as usize
        }
        Replay::AsFastAsPossible => device.queue_depth().max(1),
    };
    let device_depth = device.queue_depth().max(1);
    let capacity = device.capacity_bytes();
    let origin = workload.origin;

    // Requests admitted by the workload but not yet submitted, ordered by arrival time. In open
    // loop it holds the next record; in closed loop one entry per free slot.
    let mut ready: EventQueue<(Request, u64)> = EventQueue::with_capacity(depth);
    // Closed loop: slots in use (admitted, not yet completed).
    let mut slots_used = 0usize;
    let mut outstanding = 0usize;
    let mut exhausted = false;
    let mut info = RunInfo::default();
    let mut first_timestamp: Option<u64> = None;
    let mut last_timestamp = 0u64;
    let mut last_arrival_ns = 0u64;
    let mut next_id = 0u64;
    let mut now = SimTime::ZERO;
    let mut admit_base = SimTime::ZERO;
    let mut done: Vec<Completion> = Vec::with_capacity(device_depth);

    loop {
        // Admit records while there is room for them.
        while !exhausted && ready.len() < depth && (options.replay_is_open() || slots_used < depth)
        {
            if options.max_requests.is_some_and(|m| next_id >= m) {
                exhausted = true;
                break;
            }
            let Some(record) = lookahead.next(workload) else {
                exhausted = true;
                break;
            };
            let record = record?;
            let Some(record) = prepare(record, capacity, options.out_of_range, &mut info)
                .map_err(|error| device_error(workload, origin, record.origin, error, options))?
            else {
                continue;
            };
            // In u128, so that no timestamp, scale or think time can overflow before the check.
            let arrival_ns: u128 = match options.replay {
                Replay::Open { time_scale } => {
                    let t0 = *first_timestamp.get_or_insert(record.timestamp_ns);
                    if record.timestamp_ns < last_timestamp {
                        info.out_of_order_records += 1;
                    }
                    last_timestamp = record.timestamp_ns;
                    let rel = record.timestamp_ns.saturating_sub(t0);
                    let scaled = if time_scale == 1.0 {
                        rel as u128
                    } else {
                        // A float-to-int cast saturates; the limit check below catches it.
                        (rel as f64 * time_scale).round() as u128
                    };
                    scaled.max(last_arrival_ns as u128)
                }
                Replay::Closed { .. } => admit_base.as_ns() as u128 + record.think_ns as u128,
                Replay::AsFastAsPossible => admit_base.as_ns() as u128,
            };
            if arrival_ns > SimTime::ARRIVAL_LIMIT.as_ns() as u128 {
                return Err(EngineError::ArrivalTooLate {
                    source: workload.name.clone(),
                    position: origin.describe(record.origin),
                    arrival_ns,
                });
            }
            let arrival_ns = arrival_ns as u64;
            if options.duration_ns.is_some_and(|d| arrival_ns >= d) {
                exhausted = true;
                break;
            }
            last_arrival_ns = arrival_ns;
            let request = Request {
                id: next_id,
                op: record.op,
                offset_bytes: record.offset_bytes,
                len_bytes: record.len_bytes,
                arrival: SimTime(arrival_ns),
            };
            next_id += 1;
            slots_used += 1;
            let arrival = request.arrival;
            // `ready` has room: the loop condition checked its length.
            let _ = ready.push(arrival, (request, record.origin));
            let more_to_come = match options.max_requests {
                Some(m) => next_id < m,
                None => true,
            };
            if more_to_come {
                if let Some(next) = lookahead.peek(workload) {
                    device.prefetch(&Request {
                        id: next_id,
                        op: next.op,
                        offset_bytes: next.offset_bytes,
                        len_bytes: next.len_bytes,
                        arrival,
                    });
                }
            }
        }

        // Submit what has arrived, while the device has room. `submitted_any` also covers a
        // refused request: it left `ready` and, in a closed loop, its slot, so the next record
        // may be due now.
        let mut submitted_any = false;
        while outstanding < device_depth && ready.peek_time().is_some_and(|t| t <= now) {
            let (_, (request, record_origin)) = ready.pop().expect("peeked");
            match device.submit(now, request) {
                Ok(()) => {
                    outstanding += 1;
                    info.requests_issued += 1;
                    submitted_any = true;
                }
                Err(DeviceError::QueueFull { .. }) => {
                    // The device has a tighter limit than it advertised; wait for a completion.
                    ready
                        .push(request.arrival, (request, record_origin))
                        .map_err(|_| EngineError::Options {
                            message: "internal: ready queue overflow".into(),
                        })?;
                    break;
                }
                Err(DeviceError::Failed { reason }) => {
                    // The run ends here: nothing more is admitted, what the device accepted
                    // drains, and the caller reports the results up to the failure.
                    info.device_failed = Some(format!(
                        "{}: {}: the device has failed: {reason}",
                        workload.name,
                        origin.describe(record_origin)
                    ));
                    exhausted = true;
                    ready.clear();
                    slots_used = outstanding;
                    break;
                }
                Err(DeviceError::Invalid { reason }) if options.on_refused == Refused::Count => {
                    // The request is done with at `now` without reaching the device. It frees
                    // its slot as a completion would, so a closed loop admits the next record
                    // its think time after now (`admit_base` is `now` here) instead of waiting
                    // for a completion that will never come.
                    slots_used -= 1;
                    submitted_any = true;
                    info.refused_requests += 1;
                    if info.first_refused.len() < REFUSED_KEPT {
                        info.first_refused.push(RefusedRequest {
                            position: origin.describe(record_origin),
                            reason,
                        });
                    }
                }
                Err(error) => {
                    return Err(device_error(
                        workload,
                        origin,
                        record_origin,
                        error,
                        options,
                    ))
                }
            }
        }

        // A submission freed a place in `ready`: admit the next records before time moves, or
        // requests that arrive before the next device event would be issued late.
        if submitted_any && !exhausted {
            continue;
        }

        // The run ends with its last completion. A device may still have work of its own
        // (garbage collection in idle time): simulating it would cost time, count flash work
        // the workload never waited for, and stretch busy time past the run's end.
        if exhausted && ready.is_empty() && outstanding == 0 {
            break;
        }

        // Jump to the next event.
        let next_arrival = if outstanding < device_depth {
            ready.peek_time()
        } else {
            None
        };
        let next = match (next_arrival, device.next_deadline()) {
            (Some(a), Some(d)) => a.min(d),
            (Some(a), None) => a,
            (None, Some(d)) => d,
            (None, None) => {
                if exhausted && ready.is_empty() {
                    break;
                }
                if ready.is_empty() {
                    continue;
                }
                // Requests are waiting but the device neither has room nor will change state.
                return Err(EngineError::Options {
                    message: format!(
                        "device '{}' stalled with {outstanding} requests outstanding and no deadline",
                        device.model_name()
                    ),
                });
            }
        };
        assert!(
            next >= now,
            "the device's next deadline {next} is before now {now}"
        );
        now = next;
        device.advance(now, &mut done);
        for c in done.drain(..) {
            assert!(
                c.request.arrival <= c.service_start
                    && c.service_start <= c.finish
                    && c.finish <= now,
                "device '{}' broke the completion contract for request {}",
                device.model_name(),
                c.request.id
            );
            outstanding -= 1;
            slots_used -= 1;
            info.requests_completed += 1;
            sink.completed(&c);
            if info.requests_completed % PROGRESS_INTERVAL == 0 {
                progress(info.requests_completed, now);
            }
        }
        admit_base = now;
    }
    assert_eq!(
        outstanding, 0,
        "requests left outstanding at the end of the run"
    );
    info.end_ns = now.as_ns();
    Ok(info)
}

impl EngineOptions {
    fn replay_is_open(&self) -> bool {
        matches!(self.replay, Replay::Open { .. })
    }
}

fn device_error(
    workload: &Workload,
    origin: Origin,
    at: u64,
    error: DeviceError,
    options: &EngineOptions,
) -> EngineError {
    let wrap_would_help = match error {
        DeviceError::OutOfRange {
            len_bytes,
            capacity_bytes,
            ..
        } => options.out_of_range == OutOfRange::Error && len_bytes <= capacity_bytes,
        _ => false,
    };
    let count_would_help =
        matches!(error, DeviceError::Invalid { .. }) && options.on_refused == Refused::Stop;
    EngineError::Device {
        source: workload.name.clone(),
        position: origin.describe(at),
        error,
        wrap_would_help,
        count_would_help,
    }
}

/// Applies the out-of-range policy and drops empty reads and writes. `Ok(None)` = skip.
fn prepare(
    mut record: Record,
    capacity: u64,
    policy: OutOfRange,
    info: &mut RunInfo,
) -> Result<Option<Record>, DeviceError> {
    use storsim_core::Op;
    if record.len_bytes == 0 && matches!(record.op, Op::Read | Op::Write) {
        info.empty_requests += 1;
        return Ok(None);
    }
    let fits = record
        .offset_bytes
        .checked_add(record.len_bytes)
        .is_some_and(|e| e <= capacity);
    if fits || record.op == Op::Flush {
        return Ok(Some(record));
    }
    let out_of_range = DeviceError::OutOfRange {
        offset_bytes: record.offset_bytes,
        len_bytes: record.len_bytes,
        capacity_bytes: capacity,
    };
    match policy {
        OutOfRange::Error => Err(out_of_range),
        OutOfRange::Wrap => {
            if record.len_bytes > capacity {
                return Err(out_of_range);
            }
            let mut offset = record.offset_bytes % capacity;
            if offset + record.len_bytes > capacity {
                // Pull it back so it ends at the last whole sector that fits.
                offset = (capacity - record.len_bytes) / 512 * 512;
            }
            record.offset_bytes = offset;
            info.wrapped_requests += 1;
            Ok(Some(record))
        }
    }
}
