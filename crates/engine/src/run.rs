//! One run of the engine as a state machine with named steps: [`Run::admit`] takes records
//! from the workload, [`Run::submit_ready`] hands the arrived ones to the device,
//! [`Run::next_event`] finds the instant time jumps to, and [`Run::complete`] moves the device
//! there and delivers its completions.
//!
//! Everything a run changes as it goes lives in [`Run`]; the steps are small so that each reads
//! on its own, and `#[inline]` keeps them in one loop, as fast as when they were one function
//! (`#[inline(always)]` for the helpers of admission, which the compiler otherwise leaves as
//! calls once a run has several flows to choose from).

use crate::lookahead::Lookahead;
use crate::{
    CancelToken, CompletionSink, EngineError, EngineOptions, Flow, OutOfRange, Refused,
    RefusedRequest, Replay, RunInfo, CHECK_INTERVAL, FLOWS_MAX, PROGRESS_INTERVAL, REFUSED_KEPT,
};
use std::collections::BTreeMap;
use std::ops::{Index, IndexMut};
use storsim_core::contract::ContractCheck;
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

/// One flow's part of a run: its workload, how it is replayed, and where it has got to.
struct Source<'r> {
    workload: &'r mut Workload,
    lookahead: &'r mut Lookahead,
    replay: Replay,
    /// How many of the flow's records may be admitted and not yet completed in a closed loop;
    /// 1 in open loop, where the flows' next records are merged one at a time.
    depth: usize,
    origin: Origin,
    /// When the flow starts and stops: counted from the start of its phase until the phase
    /// begins, absolute from then on.
    start_ns: u64,
    stop_ns: Option<u64>,
    /// The flow's phase ([`Flow::phase`]): it admits nothing while an earlier phase runs.
    phase: u32,
    /// Open loop: the next record, admitted to `ready` when it is the earliest of the open
    /// flows' next records.
    head: Option<(Request, u64)>,
    /// Closed loop: slots in use (admitted, not yet completed).
    slots_used: usize,
    /// Nothing more will be admitted from this flow.
    exhausted: bool,
    /// Open loop: the first record's timestamp, which becomes instant `start_ns`.
    first_timestamp: Option<u64>,
    last_timestamp: u64,
    last_arrival_ns: u64,
}

impl Source<'_> {
    fn is_open(&self) -> bool {
        matches!(self.replay, Replay::Open { .. })
    }
}

/// The flows of a run, indexed by flow as a slice is: the first apart from the others, so
/// that a run of one flow reaches it, and its lookahead, without going through a vector on the
/// heap. That way the compiler sees that no one else holds them and keeps the records moving
/// through registers and the stack, as it did before runs had flows.
struct Sources<'r> {
    first: Source<'r>,
    others: Vec<Source<'r>>,
}

impl<'r> Sources<'r> {
    fn len(&self) -> usize {
        1 + self.others.len()
    }
}

impl<'r> Index<usize> for Sources<'r> {
    type Output = Source<'r>;

    #[inline(always)]
    fn index(&self, index: usize) -> &Source<'r> {
        match index {
            0 => &self.first,
            _ => &self.others[index - 1],
        }
    }
}

impl IndexMut<usize> for Sources<'_> {
    #[inline(always)]
    fn index_mut(&mut self, index: usize) -> &mut Self::Output {
        match index {
            0 => &mut self.first,
            _ => &mut self.others[index - 1],
        }
    }
}

/// The state of one run between its events.
///
/// `SIMPLE` is decided once per run ([`is_simple`]): a run of one flow that retries no
/// failed request, by far the most common kind. Such a run never chooses among flows, never
/// queues a retry and never counts attempts, so its loop leaves those steps out. It is the
/// same loop compiled twice, not a second copy of it: the multi-flow and retry bookkeeping
/// cost single-flow runs about 10 % of their time when every run paid for it.
pub(crate) struct Run<'r, D: Device + ?Sized, const SIMPLE: bool> {
    device: &'r mut D,
    /// The flows, in the order the run lists them: a request's `flow` is its index here.
    sources: Sources<'r>,
    options: &'r EngineOptions,
    sink: &'r mut dyn CompletionSink,
    progress: &'r mut dyn FnMut(u64, SimTime),
    cancel: Option<&'r CancelToken>,
    device_depth: usize,
    capacity_bytes: u64,
    /// Requests admitted from the workload but not yet submitted, ordered by arrival time, each
    /// with its record's position. It holds the open-loop flows' earliest next record and one
    /// entry per free slot of each closed-loop flow.
    ready: EventQueue<(Request, u64)>,
    /// Whether `ready` holds an open-loop flow's record.
    open_in_ready: bool,
    /// Whether the first flow is replayed in open loop: [`Run::admit_one`] asks at every
    /// event, and a field of the run is nearer at hand than the flow's replay.
    first_open: bool,
    /// Flows that may still admit records.
    live_sources: usize,
    /// The phase running now ([`Flow::phase`]): flows of a later phase wait for it to end.
    phase: u32,
    /// Requests the device accepted and has not completed.
    outstanding: usize,
    /// The device's contract, checked at every submission, completion and deadline: a model
    /// that breaks it is an [`EngineError::Model`], the same rules the emulator applies.
    contract: ContractCheck,
    /// Nothing more will be admitted: every flow ended, a limit was reached, the device
    /// failed or the run was cancelled.
    exhausted: bool,
    /// The device refused a request as full below its advertised depth; nothing is submitted
    /// until its state next changes.
    device_full: bool,
    info: RunInfo,
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

/// Whether a run of `flows` flows with `options` can take the loop for one flow without
/// retries (`Run<_, true>`).
pub(crate) fn is_simple(flows: usize, options: &EngineOptions) -> bool {
    flows == 1 && options.retry.attempts == 0
}

/// Sets up a run and runs it in the loop compiled for `SIMPLE`: a plain function, so that the
/// engine picks one of the two loops once, as a function pointer.
pub(crate) fn set_up_and_run<'r, D: Device + ?Sized, const SIMPLE: bool>(
    device: &'r mut D,
    flows: &'r mut [Flow<'_>],
    options: &'r EngineOptions,
    sink: &'r mut dyn CompletionSink,
    progress: &'r mut dyn FnMut(u64, SimTime),
    cancel: Option<&'r CancelToken>,
    lookaheads: &mut dyn Iterator<Item = &'r mut Lookahead>,
) -> Result<RunInfo, EngineError> {
    Run::<D, SIMPLE>::new(device, flows, options, sink, progress, cancel, lookaheads)
        .and_then(Run::run)
}

impl<'r, D: Device + ?Sized, const SIMPLE: bool> Run<'r, D, SIMPLE> {
    /// Checks the options against the device and sets up an empty run.
    pub(crate) fn new(
        device: &'r mut D,
        flows: &'r mut [Flow<'_>],
        options: &'r EngineOptions,
        sink: &'r mut dyn CompletionSink,
        progress: &'r mut dyn FnMut(u64, SimTime),
        cancel: Option<&'r CancelToken>,
        lookaheads: impl Iterator<Item = &'r mut Lookahead>,
    ) -> Result<Self, EngineError> {
        assert!(
            !SIMPLE || is_simple(flows.len(), options),
            "the loop for one flow without retries was chosen for a run that needs more"
        );
        if flows.is_empty() || flows.len() > FLOWS_MAX {
            return Err(EngineError::Options {
                message: format!(
                    "a run needs from 1 to {FLOWS_MAX} flows, got {}",
                    flows.len()
                ),
            });
        }
        let device_depth = device.queue_depth().max(1);
        let mut sources = Vec::with_capacity(flows.len());
        for (flow, lookahead) in flows.iter_mut().zip(lookaheads) {
            let replay = flow.replay.unwrap_or(options.replay);
            let depth = replay_depth(replay, device_depth)?;
            sources.push(Source {
                origin: flow.workload.origin,
                workload: &mut *flow.workload,
                lookahead,
                replay,
                depth,
                start_ns: flow.start_ns,
                stop_ns: flow.stop_ns,
                phase: flow.phase,
                head: None,
                slots_used: 0,
                exhausted: false,
                first_timestamp: None,
                last_timestamp: 0,
                last_arrival_ns: 0,
            });
        }
        // One open-loop record at a time, and each closed-loop flow's depth.
        let any_open = sources.iter().any(Source::is_open);
        let ready_capacity = usize::from(any_open)
            + sources
                .iter()
                .filter(|s| !s.is_open())
                .map(|s| s.depth)
                .sum::<usize>();
        let capacity_bytes = device.capacity_bytes();
        let counters_due_after = sink.counters_due_after();
        let live_sources = sources.len();
        let phase = sources.iter().map(|s| s.phase).min().unwrap_or(0);
        let mut sources = sources.into_iter();
        let first = sources
            .next()
            .expect("a run has at least one flow (checked above)");
        let first_open = first.is_open();
        let sources = Sources {
            first,
            others: sources.collect(),
        };
        Ok(Run {
            device,
            sources,
            options,
            sink,
            progress,
            cancel,
            device_depth,
            capacity_bytes,
            ready: EventQueue::with_capacity(ready_capacity),
            open_in_ready: false,
            first_open,
            live_sources,
            phase,
            outstanding: 0,
            contract: ContractCheck::new(device_depth),
            exhausted: false,
            device_full: false,
            info: RunInfo::default(),
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

    /// Admits records from the flows while there is room for them: the earliest of the
    /// open-loop flows' next records, and a record per free slot of each closed-loop flow.
    /// When the flows of the running phase have all ended, the next phase starts now and
    /// admits in turn.
    #[inline]
    fn admit(&mut self) -> Result<(), EngineError> {
        if SIMPLE || self.sources.len() == 1 {
            return self.admit_one();
        }
        loop {
            self.admit_running()?;
            if !self.start_next_phase() {
                return Ok(());
            }
        }
    }

    /// Whether flow `index` waits for an earlier phase to end.
    #[inline(always)]
    fn waits(&self, index: usize) -> bool {
        self.sources[index].phase > self.phase
    }

    /// Starts the next phase at `now` if every flow of the running phase (and of those before
    /// it) has ended and its last request completed; says whether it did. The flows of the new
    /// phase count their start and stop from now.
    fn start_next_phase(&mut self) -> bool {
        if self.exhausted {
            return false;
        }
        let mut next: Option<u32> = None;
        for index in 0..self.sources.len() {
            let source = &self.sources[index];
            if source.phase <= self.phase {
                if !source.exhausted || source.slots_used > 0 {
                    return false;
                }
            } else if next.is_none_or(|n| source.phase < n) {
                next = Some(source.phase);
            }
        }
        let Some(next) = next else {
            return false;
        };
        let now = self.now.as_ns();
        for index in 0..self.sources.len() {
            let source = &mut self.sources[index];
            if source.phase == next {
                source.start_ns = source.start_ns.saturating_add(now);
                source.stop_ns = source.stop_ns.map(|s| s.saturating_add(now));
            }
        }
        self.phase = next;
        true
    }

    /// [`Run::admit`] for the flows of the running phase.
    #[inline]
    fn admit_running(&mut self) -> Result<(), EngineError> {
        while !self.exhausted && !self.open_in_ready {
            if self.request_limit_reached() {
                break;
            }
            // The earliest next record of the open-loop flows, the first listed on a tie.
            let mut earliest: Option<(SimTime, usize)> = None;
            for index in 0..self.sources.len() {
                if !self.sources[index].is_open() || self.waits(index) {
                    continue;
                }
                if self.sources[index].head.is_none() && !self.sources[index].exhausted {
                    self.sources[index].head = self.next_request(index)?;
                }
                if let Some((request, _)) = &self.sources[index].head {
                    if earliest.is_none_or(|(t, _)| request.arrival < t) {
                        earliest = Some((request.arrival, index));
                    }
                }
            }
            let Some((_, index)) = earliest else {
                break;
            };
            let (request, origin) = self.sources[index].head.take().expect("chosen");
            self.push_ready(index, request, origin);
            self.open_in_ready = true;
        }
        for index in 0..self.sources.len() {
            if self.sources[index].is_open() || self.waits(index) {
                continue;
            }
            while !self.exhausted
                && !self.sources[index].exhausted
                && self.sources[index].slots_used < self.sources[index].depth
            {
                if self.request_limit_reached() {
                    break;
                }
                let Some((request, origin)) = self.next_request(index)? else {
                    break;
                };
                self.push_ready(index, request, origin);
            }
        }
        Ok(())
    }

    /// [`Run::admit`] for a workload of one flow, the common case: its records go straight to
    /// `ready`, with nothing to merge and no head to hold, while it has room.
    #[inline(always)]
    fn admit_one(&mut self) -> Result<(), EngineError> {
        let open = self.first_open;
        while !self.exhausted
            && (if open {
                !self.open_in_ready
            } else {
                self.sources[0].slots_used < self.sources[0].depth
            })
        {
            if self.request_limit_reached() {
                break;
            }
            let Some((request, origin)) = self.next_request(0)? else {
                break;
            };
            self.push_ready(0, request, origin);
            self.open_in_ready = open;
        }
        Ok(())
    }

    /// Whether `--max-requests` has been reached; if so, nothing more is admitted.
    #[inline(always)]
    fn request_limit_reached(&mut self) -> bool {
        if self.options.max_requests.is_some_and(|m| self.next_id >= m) {
            self.exhaust_all();
            return true;
        }
        false
    }

    /// Flow `index`'s next request, with its arrival time and record position, or `None` when
    /// the flow has ended (it is then marked exhausted).
    #[inline(always)]
    fn next_request(&mut self, index: usize) -> Result<Option<(Request, u64)>, EngineError> {
        loop {
            let source = &mut self.sources[index];
            let Some(record) = source.lookahead.next(source.workload) else {
                self.exhaust(index);
                return Ok(None);
            };
            let record = record?;
            let Some(record) = prepare(
                record,
                self.capacity_bytes,
                self.options.out_of_range,
                &mut self.info,
            )
            .map_err(|error| self.device_error(index, record.origin, error))?
            else {
                continue;
            };
            let arrival_ns = self.arrival_ns(index, &record);
            let source = &self.sources[index];
            if arrival_ns > SimTime::ARRIVAL_LIMIT.as_ns() as u128 {
                return Err(EngineError::ArrivalTooLate {
                    source: source.workload.name.clone(),
                    position: source.origin.describe(record.origin),
                    arrival_ns,
                });
            }
            let arrival_ns = arrival_ns as u64;
            if self.options.duration_ns.is_some_and(|d| arrival_ns >= d) {
                if SIMPLE || self.sources.len() == 1 {
                    self.exhaust_all();
                } else {
                    self.exhaust(index);
                }
                return Ok(None);
            }
            if source.stop_ns.is_some_and(|s| arrival_ns >= s) {
                self.exhaust(index);
                return Ok(None);
            }
            self.sources[index].last_arrival_ns = arrival_ns;
            return Ok(Some((
                Request {
                    id: 0,
                    op: record.op,
                    offset_bytes: record.offset_bytes,
                    len_bytes: record.len_bytes,
                    arrival: SimTime(arrival_ns),
                    flow: index as u16,
                },
                record.origin,
            )));
        }
    }

    /// Puts flow `index`'s request in `ready`, numbering it, and hints the flow's next one.
    #[inline(always)]
    fn push_ready(&mut self, index: usize, mut request: Request, origin: u64) {
        request.id = self.next_id;
        self.next_id += 1;
        self.sources[index].slots_used += 1;
        let arrival = request.arrival;
        // `ready` has room: each open-loop flow's record waits in its head until `ready`
        // holds none, and a closed-loop flow admits only to its free slots. Were that ever
        // wrong, the request would vanish with its slot taken and the results be wrong without
        // a word, so the check stays on in release builds (one branch per request).
        let pushed = self.ready.push(arrival, (request, origin));
        assert!(
            pushed.is_ok(),
            "the engine's queue of admitted requests overflowed"
        );
        self.hint_next(index, arrival);
    }

    /// Flow `index` admits nothing more.
    fn exhaust(&mut self, index: usize) {
        let source = &mut self.sources[index];
        if !source.exhausted {
            source.exhausted = true;
            self.live_sources -= 1;
            if self.live_sources == 0 {
                self.exhausted = true;
            }
        }
    }

    /// No flow admits anything more, including the records waiting in their heads.
    fn exhaust_all(&mut self) {
        for index in 0..self.sources.len() {
            self.sources[index].head = None;
            self.exhaust(index);
        }
    }

    /// When `record` of flow `index` arrives, in u128 so that no timestamp, scale or think
    /// time can overflow before the caller checks it against the arrival limit.
    #[inline(always)]
    fn arrival_ns(&mut self, index: usize, record: &Record) -> u128 {
        let source = &mut self.sources[index];
        match source.replay {
            Replay::Open { time_scale } => {
                let t0 = *source.first_timestamp.get_or_insert(record.timestamp_ns);
                if record.timestamp_ns < source.last_timestamp {
                    self.info.out_of_order_records += 1;
                }
                source.last_timestamp = record.timestamp_ns;
                let rel = record.timestamp_ns.saturating_sub(t0);
                let scaled = if time_scale == 1.0 {
                    rel as u128
                } else {
                    // A float-to-int cast saturates; the caller's limit check catches it.
                    (rel as f64 * time_scale).round() as u128
                };
                (source.start_ns as u128 + scaled).max(source.last_arrival_ns as u128)
            }
            Replay::Closed { .. } => {
                self.admit_base.as_ns().max(source.start_ns) as u128 + record.think_ns as u128
            }
            Replay::AsFastAsPossible => self.admit_base.as_ns().max(source.start_ns) as u128,
        }
    }

    /// Tells the device which request of flow `index` comes after the one just admitted,
    /// unless the request limit means none will.
    #[inline(always)]
    fn hint_next(&mut self, index: usize, arrival: SimTime) {
        let more_to_come = match self.options.max_requests {
            Some(m) => self.next_id < m,
            None => true,
        };
        if more_to_come {
            let source = &mut self.sources[index];
            if let Some(next) = source.lookahead.peek(source.workload) {
                self.device.prefetch(&Request {
                    id: self.next_id,
                    op: next.op,
                    offset_bytes: next.offset_bytes,
                    len_bytes: next.len_bytes,
                    arrival,
                    flow: index as u16,
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
        if !SIMPLE && !self.retrying.is_empty() {
            self.resubmit_due()?;
        }
        while self.outstanding < self.device_depth
            && !self.device_full
            && self.ready.peek_time().is_some_and(|t| t <= self.now)
        {
            let (_, (request, record_origin)) = self.ready.pop().expect("peeked");
            let arrival = request.arrival;
            let index = flow_index::<SIMPLE>(&request);
            // One flow puts `open_in_ready` only for an open-loop record, so it need not look.
            if SIMPLE || self.sources[index].is_open() {
                self.open_in_ready = false;
            }
            match self.device.submit(self.now, request) {
                Ok(()) => {
                    if let Err(broken) = self.contract.submitted(&request) {
                        return Err(self.model_fault(broken.to_string()));
                    }
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
                    if self.sources[index].is_open() {
                        self.open_in_ready = true;
                    }
                    self.device_full = true;
                    break;
                }
                Err(DeviceError::Failed { reason }) => {
                    // The run ends here: nothing more is admitted, what the device accepted
                    // drains, and the caller reports the results up to the failure.
                    let source = &self.sources[index];
                    self.info.device_failed = Some(format!(
                        "{}: {}: the device has failed: {reason}",
                        source.workload.name,
                        source.origin.describe(record_origin)
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
                    self.sources[index].slots_used -= 1;
                    submitted_any = true;
                    self.info.refused_requests += 1;
                    if self.info.first_refused.len() < REFUSED_KEPT {
                        self.info.first_refused.push(RefusedRequest {
                            position: self.sources[index].origin.describe(record_origin),
                            reason,
                        });
                    }
                }
                Err(error) => return Err(self.device_error(index, record_origin, error)),
            }
        }
        Ok(submitted_any)
    }

    /// The instant of the next event: the next arrival the device has room for, or the
    /// device's next deadline, whichever comes first.
    #[inline]
    fn next_event(&mut self) -> Result<SimTime, EngineError> {
        let next_arrival = if self.outstanding < self.device_depth && !self.device_full {
            let retry_due = if SIMPLE {
                None
            } else {
                self.retrying.peek_time()
            };
            match (self.ready.peek_time(), retry_due) {
                (Some(a), Some(r)) => Some(a.min(r)),
                (a, r) => a.or(r),
            }
        } else {
            None
        };
        let deadline = self.device.next_deadline();
        if let Err(broken) = self.contract.deadline(deadline, self.now) {
            return Err(self.model_fault(broken.to_string()));
        }
        // Arrivals still in `ready` are later than now (those due have been submitted, unless
        // the device has no room, and then none is taken), so `next` is never in the past.
        match (next_arrival, deadline) {
            (Some(a), Some(d)) => Ok(a.min(d)),
            (Some(a), None) => Ok(a),
            (None, Some(d)) => Ok(d),
            (None, None) => {
                // The run has not ended, so requests are outstanding or waiting; the device has
                // no room for those waiting and will not change state on its own.
                let stalled = self.contract.stalled(self.ready.len());
                Err(self.model_fault(stalled.to_string()))
            }
        }
    }

    /// Moves the device to `next` and delivers what it completed by then.
    #[inline]
    fn complete(&mut self, next: SimTime) -> Result<(), EngineError> {
        if next > self.counters_due_after {
            self.read_counters(next);
        }
        // Time never goes back: `next_event` refused a deadline in the past, and arrivals in
        // `ready` are later than now. One comparison per event keeps that true in release
        // builds, where a step back would otherwise give wrong latencies without a word.
        assert!(
            next >= self.now,
            "the engine's clock went back from {} to {next}",
            self.now
        );
        self.now = next;
        self.device.advance(self.now, &mut self.done);
        self.contract.advanced(self.now);
        let mut done = std::mem::take(&mut self.done);
        // Each completion is read where the device wrote it rather than moved out first: the
        // copy's wide loads of what the device had just written field by field stalled, and
        // cost more than the rest of the loop's work on it.
        for c in &done {
            if let Err(broken) = self.contract.completed(c, self.now) {
                return Err(self.model_fault(broken.to_string()));
            }
            self.outstanding -= 1;
            if !SIMPLE {
                if !c.status.is_ok() && self.retry(c) {
                    continue;
                }
                if !self.attempts.is_empty() {
                    self.attempts.remove(&c.request.id);
                }
            }
            // The contract check let through only requests the device was given, unaltered,
            // so the flow's index is one of the run's.
            self.sources[flow_index::<SIMPLE>(&c.request)].slots_used -= 1;
            self.info.requests_completed += 1;
            self.sink.completed(c);
            if self.info.requests_completed & (CHECK_INTERVAL - 1) == 0 {
                self.checkpoint();
            }
        }
        done.clear();
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
    fn resubmit_due(&mut self) -> Result<(), EngineError> {
        while self.outstanding < self.device_depth
            && !self.device_full
            && self.retrying.peek_time().is_some_and(|t| t <= self.now)
        {
            let (_, failed) = self.retrying.pop().expect("peeked");
            match self.device.submit(self.now, failed.request) {
                Ok(()) => {
                    if let Err(broken) = self.contract.submitted(&failed.request) {
                        return Err(self.model_fault(broken.to_string()));
                    }
                    self.outstanding += 1;
                }
                Err(DeviceError::QueueFull { .. }) => {
                    // It left the queue just now, so there is room to put it back.
                    let pushed = self.retrying.push(self.now, failed);
                    assert!(pushed.is_ok(), "the engine's retry queue overflowed");
                    self.device_full = true;
                }
                Err(_) => self.give_up(failed),
            }
        }
        Ok(())
    }

    /// A retrying request's last failure stands: it reaches the sink now.
    fn give_up(&mut self, mut failed: Completion) {
        self.attempts.remove(&failed.request.id);
        failed.finish = failed.finish.max(self.now);
        self.sources[usize::from(failed.request.flow)].slots_used -= 1;
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
        self.exhaust_all();
        while let Some((_, (request, _))) = self.ready.pop() {
            self.sources[usize::from(request.flow)].slots_used -= 1;
        }
        self.open_in_ready = false;
        // Requests waiting to be retried are not resubmitted: their last failure stands.
        while let Some((_, failed)) = self.retrying.pop() {
            self.give_up(failed);
        }
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

    fn device_error(&self, index: usize, at: u64, error: DeviceError) -> EngineError {
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
        let source = &self.sources[index];
        EngineError::Device {
            source: source.workload.name.clone(),
            position: source.origin.describe(at),
            error,
            wrap_would_help,
            count_would_help,
        }
    }
}

/// The index in [`Run::sources`] of `request`'s flow: 0 in a run of one flow, where every
/// request's `flow` is 0, so that the loop for it need not read the field.
#[inline(always)]
fn flow_index<const SIMPLE: bool>(request: &Request) -> usize {
    if SIMPLE {
        0
    } else {
        usize::from(request.flow)
    }
}

/// How many of a flow's records may be admitted and not yet completed under `replay`, after
/// checking it: 1 in open loop, the loop's depth in closed loop, the device's as fast as
/// possible.
fn replay_depth(replay: Replay, device_depth: usize) -> Result<usize, EngineError> {
    match replay {
        Replay::Open { time_scale } => {
            if !(time_scale.is_finite() && time_scale > 0.0) {
                return Err(EngineError::Options {
                    message: format!("time scale must be a positive number, got {time_scale}"),
                });
            }
            Ok(1)
        }
        Replay::Closed { depth } => {
            if !(1..=QUEUE_DEPTH_MAX).contains(&depth) {
                return Err(EngineError::Options {
                    message: format!(
                        "queue depth must be from 1 to {QUEUE_DEPTH_MAX}, got {depth}"
                    ),
                });
            }
            Ok(depth as usize)
        }
        Replay::AsFastAsPossible => Ok(device_depth),
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
            info.highest_wrapped_end_bytes = info
                .highest_wrapped_end_bytes
                .max(record.offset_bytes.saturating_add(record.len_bytes));
            record.offset_bytes = offset;
            info.wrapped_requests += 1;
            Ok(Some(record))
        }
    }
}
