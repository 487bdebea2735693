//! One run of the engine as a state machine with named steps: [`Run::admit`] takes records
//! from the workload, [`Run::submit_ready`] hands the arrived ones to the device,
//! [`Run::next_event`] finds the instant time jumps to, and [`Run::complete`] moves the device
//! there and delivers its completions.
//!
//! Everything a run changes as it goes lives in [`Run`]; the steps are small so that each reads
//! on its own, and `#[inline]` keeps them in one loop, as fast as when they were one function.

use crate::lookahead::Lookahead;
use crate::{
    CancelToken, CompletionSink, EngineError, EngineOptions, OutOfRange, Refused, RefusedRequest,
    Replay, RunInfo, CHECK_INTERVAL, PROGRESS_INTERVAL, REFUSED_KEPT,
};
use std::collections::BTreeMap;
use storsim_core::{
    Completion, Device, DeviceError, EventQueue, Request, SimTime, QUEUE_DEPTH_MAX,
};
use storsim_workload::{Origin, Record, Workload};

// Both intervals are tested with a mask, and a progress point is always a check point.
const _: () = assert!(
    CHECK_INTERVAL.is_power_of_two()
        && PROGRESS_INTERVAL.is_power_of_two()
        && CHECK_INTERVAL <= PROGRESS_INTERVAL
);

/// The state of one run between its events.
pub(crate) struct Run<'r, D: Device + ?Sized> {
    device: &'r mut D,
    workload: &'r mut Workload,
    options: &'r EngineOptions,
    sink: &'r mut dyn CompletionSink,
    progress: &'r mut dyn FnMut(u64, SimTime),
    cancel: Option<&'r CancelToken>,
    lookahead: &'r mut Lookahead,
    /// How many records may be admitted and not yet completed: 1 in open loop (the next
    /// record), the loop's depth in closed loop.
    depth: usize,
    device_depth: usize,
    capacity_bytes: u64,
    origin: Origin,
    /// Requests admitted from the workload but not yet submitted, ordered by arrival time, each
    /// with its record's position. In open loop it holds the next record; in closed loop one
    /// entry per free slot.
    ready: EventQueue<(Request, u64)>,
    /// Closed loop: slots in use (admitted, not yet completed).
    slots_used: usize,
    /// Requests the device accepted and has not completed.
    outstanding: usize,
    /// Nothing more will be admitted: the workload ended, a limit was reached, the device
    /// failed or the run was cancelled.
    exhausted: bool,
    /// The device refused a request as full below its advertised depth; nothing is submitted
    /// until its state next changes.
    device_full: bool,
    info: RunInfo,
    /// Open loop: the first record's timestamp, which becomes instant 0.
    first_timestamp: Option<u64>,
    last_timestamp: u64,
    last_arrival_ns: u64,
    next_id: u64,
    now: SimTime,
    /// Closed loop: the instant think times count from (the last event).
    admit_base: SimTime,
    /// The completions of one `advance`, reused so that no event allocates.
    done: Vec<Completion>,
    /// The sink wants the device's counters at the first event after this instant.
    counters_due_after: SimTime,
    /// Failed requests waiting to be resubmitted ([`EngineOptions::retry`]), each with its
    /// last failed completion, keyed by the instant they are due. They came from the device,
    /// so there are at most `device_depth` of them; each keeps its slot meanwhile.
    retrying: EventQueue<Completion>,
    /// How many times each request now retrying or resubmitted has been resubmitted, by id;
    /// at most `device_depth` entries, removed when the request's last attempt completes.
    attempts: BTreeMap<u64, u32>,
}

impl<'r, D: Device + ?Sized> Run<'r, D> {
    /// Checks the options against the device and sets up an empty run.
    pub(crate) fn new(
        device: &'r mut D,
        workload: &'r mut Workload,
        options: &'r EngineOptions,
        sink: &'r mut dyn CompletionSink,
        progress: &'r mut dyn FnMut(u64, SimTime),
        cancel: Option<&'r CancelToken>,
        lookahead: &'r mut Lookahead,
    ) -> Result<Self, EngineError> {
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
        let capacity_bytes = device.capacity_bytes();
        let counters_due_after = sink.counters_due_after();
        let origin = workload.origin;
        Ok(Run {
            device,
            workload,
            options,
            sink,
            progress,
            cancel,
            lookahead,
            depth,
            device_depth,
            capacity_bytes,
            origin,
            ready: EventQueue::with_capacity(depth),
            slots_used: 0,
            outstanding: 0,
            exhausted: false,
            device_full: false,
            info: RunInfo::default(),
            first_timestamp: None,
            last_timestamp: 0,
            last_arrival_ns: 0,
            next_id: 0,
            now: SimTime::ZERO,
            admit_base: SimTime::ZERO,
            done: Vec::with_capacity(device_depth),
            counters_due_after,
            // An event queue holds at least one event; without retries it stays empty.
            retrying: EventQueue::with_capacity(if options.retry.attempts > 0 {
                device_depth
            } else {
                1
            }),
            attempts: BTreeMap::new(),
        })
    }

    /// Runs to the last completion (or the first error).
    pub(crate) fn run(mut self) -> Result<RunInfo, EngineError> {
        if self.cancel.is_some_and(CancelToken::is_cancelled) {
            self.cancelled();
        }
        loop {
            self.admit()?;
            // A submission freed a place in `ready`: admit the next records before time moves,
            // or requests that arrive before the next device event would be issued late.
            if self.submit_ready()? && !self.exhausted {
                continue;
            }
            // The run ends with its last completion. A device may still have work of its own
            // (garbage collection in idle time): simulating it would cost time, count flash
            // work the workload never waited for, and stretch busy time past the run's end.
            if self.exhausted
                && self.ready.is_empty()
                && self.outstanding == 0
                && self.retrying.is_empty()
            {
                break;
            }
            let next = self.next_event()?;
            self.complete(next)?;
        }
        assert_eq!(
            self.outstanding, 0,
            "requests left outstanding at the end of the run"
        );
        self.info.end_ns = self.now.as_ns();
        Ok(self.info)
    }

    /// Admits records from the workload while there is room for them: turns each into a
    /// request with its arrival time and puts it in `ready`.
    #[inline]
    fn admit(&mut self) -> Result<(), EngineError> {
        while !self.exhausted
            && self.ready.len() < self.depth
            && (self.options.replay_is_open() || self.slots_used < self.depth)
        {
            if self.options.max_requests.is_some_and(|m| self.next_id >= m) {
                self.exhausted = true;
                break;
            }
            let Some(record) = self.lookahead.next(self.workload) else {
                self.exhausted = true;
                break;
            };
            let record = record?;
            let Some(record) = prepare(
                record,
                self.capacity_bytes,
                self.options.out_of_range,
                &mut self.info,
            )
            .map_err(|error| self.device_error(record.origin, error))?
            else {
                continue;
            };
            let arrival_ns = self.arrival_ns(&record);
            if arrival_ns > SimTime::ARRIVAL_LIMIT.as_ns() as u128 {
                return Err(EngineError::ArrivalTooLate {
                    source: self.workload.name.clone(),
                    position: self.origin.describe(record.origin),
                    arrival_ns,
                });
            }
            let arrival_ns = arrival_ns as u64;
            if self.options.duration_ns.is_some_and(|d| arrival_ns >= d) {
                self.exhausted = true;
                break;
            }
            self.last_arrival_ns = arrival_ns;
            let request = Request {
                id: self.next_id,
                op: record.op,
                offset_bytes: record.offset_bytes,
                len_bytes: record.len_bytes,
                arrival: SimTime(arrival_ns),
                flow: 0,
            };
            self.next_id += 1;
            self.slots_used += 1;
            let arrival = request.arrival;
            // `ready` has room: the loop condition checked its length.
            let _ = self.ready.push(arrival, (request, record.origin));
            self.hint_next(arrival);
        }
        Ok(())
    }

    /// When `record` arrives, in u128 so that no timestamp, scale or think time can overflow
    /// before the caller checks it against the arrival limit.
    #[inline]
    fn arrival_ns(&mut self, record: &Record) -> u128 {
        match self.options.replay {
            Replay::Open { time_scale } => {
                let t0 = *self.first_timestamp.get_or_insert(record.timestamp_ns);
                if record.timestamp_ns < self.last_timestamp {
                    self.info.out_of_order_records += 1;
                }
                self.last_timestamp = record.timestamp_ns;
                let rel = record.timestamp_ns.saturating_sub(t0);
                let scaled = if time_scale == 1.0 {
                    rel as u128
                } else {
                    // A float-to-int cast saturates; the caller's limit check catches it.
                    (rel as f64 * time_scale).round() as u128
                };
                scaled.max(self.last_arrival_ns as u128)
            }
            Replay::Closed { .. } => self.admit_base.as_ns() as u128 + record.think_ns as u128,
            Replay::AsFastAsPossible => self.admit_base.as_ns() as u128,
        }
    }

    /// Tells the device which request comes after the one just admitted, unless the request
    /// limit means none will.
    #[inline]
    fn hint_next(&mut self, arrival: SimTime) {
        let more_to_come = match self.options.max_requests {
            Some(m) => self.next_id < m,
            None => true,
        };
        if more_to_come {
            if let Some(next) = self.lookahead.peek(self.workload) {
                self.device.prefetch(&Request {
                    id: self.next_id,
                    op: next.op,
                    offset_bytes: next.offset_bytes,
                    len_bytes: next.len_bytes,
                    arrival,
                    flow: 0,
                });
            }
        }
    }

    /// Submits what has arrived by now, while the device has room. Returns whether a request
    /// left `ready`: also true for a refused request, which left `ready` and, in a closed loop,
    /// its slot, so the next record may be due now.
    #[inline]
    fn submit_ready(&mut self) -> Result<bool, EngineError> {
        let mut submitted_any = false;
        if !self.retrying.is_empty() {
            self.resubmit_due();
        }
        while self.outstanding < self.device_depth
            && !self.device_full
            && self.ready.peek_time().is_some_and(|t| t <= self.now)
        {
            let (_, (request, record_origin)) = self.ready.pop().expect("peeked");
            let arrival = request.arrival;
            match self.device.submit(self.now, request) {
                Ok(()) => {
                    self.outstanding += 1;
                    self.info.requests_issued += 1;
                    submitted_any = true;
                    if arrival < self.now {
                        self.sink.waited(arrival, self.now);
                    }
                }
                Err(DeviceError::QueueFull { .. }) => {
                    // The device has a tighter limit than it advertised; wait for it to change
                    // state. The request just left `ready`, so there is room to put it back.
                    if self
                        .ready
                        .push(request.arrival, (request, record_origin))
                        .is_err()
                    {
                        return Err(self.model_fault(
                            "the engine's queue of waiting requests overflowed after the device \
                             refused a request as full"
                                .into(),
                        ));
                    }
                    self.device_full = true;
                    break;
                }
                Err(DeviceError::Failed { reason }) => {
                    // The run ends here: nothing more is admitted, what the device accepted
                    // drains, and the caller reports the results up to the failure.
                    self.info.device_failed = Some(format!(
                        "{}: {}: the device has failed: {reason}",
                        self.workload.name,
                        self.origin.describe(record_origin)
                    ));
                    self.stop_issuing();
                    break;
                }
                Err(DeviceError::Invalid { reason })
                    if self.options.on_refused == Refused::Count =>
                {
                    // The request is done with at `now` without reaching the device. It frees
                    // its slot as a completion would, so a closed loop admits the next record
                    // its think time after now (`admit_base` is `now` here) instead of waiting
                    // for a completion that will never come.
                    self.slots_used -= 1;
                    submitted_any = true;
                    self.info.refused_requests += 1;
                    if self.info.first_refused.len() < REFUSED_KEPT {
                        self.info.first_refused.push(RefusedRequest {
                            position: self.origin.describe(record_origin),
                            reason,
                        });
                    }
                }
                Err(error) => return Err(self.device_error(record_origin, error)),
            }
        }
        Ok(submitted_any)
    }

    /// The instant of the next event: the next arrival the device has room for, or the
    /// device's next deadline, whichever comes first.
    #[inline]
    fn next_event(&mut self) -> Result<SimTime, EngineError> {
        let next_arrival = if self.outstanding < self.device_depth && !self.device_full {
            match (self.ready.peek_time(), self.retrying.peek_time()) {
                (Some(a), Some(r)) => Some(a.min(r)),
                (a, r) => a.or(r),
            }
        } else {
            None
        };
        let next = match (next_arrival, self.device.next_deadline()) {
            (Some(a), Some(d)) => a.min(d),
            (Some(a), None) => a,
            (None, Some(d)) => d,
            (None, None) => {
                // The run has not ended, so requests are outstanding or waiting; the device has
                // no room for those waiting and will not change state on its own.
                return Err(self.model_fault(format!(
                    "the device stalled: {} requests outstanding, {} waiting, and no deadline",
                    self.outstanding,
                    self.ready.len()
                )));
            }
        };
        if next < self.now {
            return Err(self.model_fault(format!(
                "the device's next deadline {next} is before now {}",
                self.now
            )));
        }
        Ok(next)
    }

    /// Moves the device to `next` and delivers what it completed by then.
    #[inline]
    fn complete(&mut self, next: SimTime) -> Result<(), EngineError> {
        if next > self.counters_due_after {
            self.read_counters(next);
        }
        self.now = next;
        self.device.advance(self.now, &mut self.done);
        let mut done = std::mem::take(&mut self.done);
        for c in done.drain(..) {
            if !(c.request.arrival <= c.service_start
                && c.service_start <= c.finish
                && c.finish <= self.now)
            {
                return Err(self.model_fault(format!(
                    "request {} broke the completion contract: arrival {}, service start {}, \
                     finish {}, now {}",
                    c.request.id, c.request.arrival, c.service_start, c.finish, self.now
                )));
            }
            if self.outstanding == 0 {
                return Err(self.model_fault(format!(
                    "the device completed request {} with no request outstanding",
                    c.request.id
                )));
            }
            self.outstanding -= 1;
            if !c.status.is_ok() && self.retry(&c) {
                continue;
            }
            if !self.attempts.is_empty() {
                self.attempts.remove(&c.request.id);
            }
            self.slots_used -= 1;
            self.info.requests_completed += 1;
            self.sink.completed(&c);
            if self.info.requests_completed & (CHECK_INTERVAL - 1) == 0 {
                self.checkpoint();
            }
        }
        self.done = done;
        self.admit_base = self.now;
        self.device_full = false;
        Ok(())
    }

    /// Puts the failed request of `failed` up for resubmission if it has attempts left and
    /// the run goes on; says whether it did.
    fn retry(&mut self, failed: &Completion) -> bool {
        if self.exhausted && (self.info.cancelled || self.info.device_failed.is_some()) {
            return false;
        }
        let done = self.attempts.get(&failed.request.id).copied().unwrap_or(0);
        if done >= self.options.retry.attempts {
            return false;
        }
        let due = self.now + storsim_core::SimDuration(self.options.retry.delay_ns);
        if self.retrying.push(due, *failed).is_err() {
            // More requests failed at once than the device holds: impossible, as each came
            // from it; let the failure stand rather than lose the request.
            return false;
        }
        self.attempts.insert(failed.request.id, done + 1);
        self.info.retries += 1;
        true
    }

    /// Resubmits the failed requests due by now, while the device has room. A request the
    /// device refuses now (it has failed since) ends with its last failure.
    fn resubmit_due(&mut self) {
        while self.outstanding < self.device_depth
            && !self.device_full
            && self.retrying.peek_time().is_some_and(|t| t <= self.now)
        {
            let (_, failed) = self.retrying.pop().expect("peeked");
            match self.device.submit(self.now, failed.request) {
                Ok(()) => self.outstanding += 1,
                Err(DeviceError::QueueFull { .. }) => {
                    let _ = self.retrying.push(self.now, failed);
                    self.device_full = true;
                }
                Err(_) => self.give_up(failed),
            }
        }
    }

    /// A retrying request's last failure stands: it reaches the sink now.
    fn give_up(&mut self, mut failed: Completion) {
        self.attempts.remove(&failed.request.id);
        failed.finish = failed.finish.max(self.now);
        self.slots_used -= 1;
        self.info.requests_completed += 1;
        self.sink.completed(&failed);
    }

    /// The device's counters for the sink, before anything happens at `next`.
    #[cold]
    fn read_counters(&mut self, next: SimTime) {
        let device = &*self.device;
        self.sink
            .counters(next, &mut |values| device.counter_values(values), &|| {
                device.counters()
            });
        self.counters_due_after = self.sink.counters_due_after();
    }

    /// Every [`CHECK_INTERVAL`] completions: the progress callback and the cancel token.
    #[cold]
    fn checkpoint(&mut self) {
        if self.info.requests_completed & (PROGRESS_INTERVAL - 1) == 0 {
            (self.progress)(self.info.requests_completed, self.now);
        }
        if !self.info.cancelled && self.cancel.is_some_and(CancelToken::is_cancelled) {
            self.cancelled();
        }
    }

    /// The run was cancelled: it stops issuing and ends when what the device holds completes.
    fn cancelled(&mut self) {
        self.info.cancelled = true;
        self.stop_issuing();
    }

    /// Nothing more is admitted or submitted; what the device accepted drains.
    fn stop_issuing(&mut self) {
        self.exhausted = true;
        self.ready.clear();
        // Requests waiting to be retried are not resubmitted: their last failure stands.
        while let Some((_, failed)) = self.retrying.pop() {
            self.give_up(failed);
        }
        self.slots_used = self.outstanding;
    }

    fn model_fault(&self, message: String) -> EngineError {
        EngineError::Model {
            device: self.device.model_name().to_string(),
            at: format!(
                "{} ns into the run, with {} requests completed",
                self.now.as_ns(),
                self.info.requests_completed
            ),
            message,
        }
    }

    fn device_error(&self, at: u64, error: DeviceError) -> EngineError {
        let wrap_would_help = match error {
            DeviceError::OutOfRange {
                len_bytes,
                capacity_bytes,
                ..
            } => self.options.out_of_range == OutOfRange::Error && len_bytes <= capacity_bytes,
            _ => false,
        };
        let count_would_help = matches!(error, DeviceError::Invalid { .. })
            && self.options.on_refused == Refused::Stop;
        EngineError::Device {
            source: self.workload.name.clone(),
            position: self.origin.describe(at),
            error,
            wrap_would_help,
            count_would_help,
        }
    }
}

impl EngineOptions {
    fn replay_is_open(&self) -> bool {
        matches!(self.replay, Replay::Open { .. })
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
