//! The pacing thread: owns the device model, submits requests at the wall clock's "now",
//! waits for the model's deadlines and replies when completions fall due.
//!
//! The model is driven as the simulation engine would drive it through the same requests, so
//! that `storsim simulate` on the record reproduces every response time: its clock starts at
//! the first request (a replay rebases its first arrival to 0), it is advanced to each of its
//! deadlines in turn (not to the wall clock, which is a little past them by the time the pacing
//! thread gets there), requests waiting at the host are given to it at the deadline that made
//! room, and a new request is submitted after the model has been moved to its instant. Offers
//! are strictly increasing, so their order is their instants' order, which a replay follows.

use crate::clock::{lower_timer_slack, WallClock};
use crate::{
    BatchWrite, Departure, IoFailure, Outcome, Poller, RecordTarget, ReplyBatch, Responder, Shared,
};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::Write;
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc};
use std::time::Duration;
use storsim_core::contract::{ContractCheck, ContractError};
use storsim_core::{
    Completion, Described, Device, DeviceCounter, DeviceError, DevicePart, Op, Request, SimTime,
    Status,
};
use storsim_stats::series::{ChannelId, SeriesRecorder, WindowWidth};
use storsim_workload::trace::{RecordWriter, RecordedIo};

/// What front ends and the control socket send the pacing thread.
pub(crate) enum Message {
    Io(Submission),
    /// Sequence number `seq` ended before reaching the model (refused, failed in the store, or
    /// empty); the recorder must not wait for it.
    Skip {
        seq: u64,
    },
    Replace {
        device: Box<dyn Device>,
        name: String,
        done: mpsc::Sender<()>,
    },
    /// The current device's counters and the time series so far, wanted by a report.
    Snapshot {
        reply: mpsc::Sender<Snapshot>,
    },
    /// A front end's source of requests (a FUSE mount's ring, an NBD connection's socket), to
    /// be polled while spinning.
    Poller(Box<dyn Poller>),
    Shutdown,
}

/// A host I/O on its way to the model.
pub(crate) struct Submission {
    pub seq: u64,
    /// When the front end received it.
    pub received: SimTime,
    pub op: Op,
    pub offset_bytes: u64,
    pub len_bytes: u64,
    pub fua: bool,
    /// A read's bytes, read from the store on arrival and sent at completion.
    pub read_data: Option<Vec<u8>>,
    pub responder: Box<dyn Responder>,
}

/// What a report needs from the pacing thread: the model lives there, and so does the time
/// series' recording, which the pacing thread only copies (a bounded cost: a few hundred
/// windows) and the asker turns into figures.
#[derive(Clone)]
pub(crate) struct Snapshot {
    /// The current device's model and its parts, if it is a composite.
    pub model: &'static str,
    pub parts: Vec<DevicePart>,
    pub counters: Vec<DeviceCounter>,
    /// What each counter is, for reports that fold or label them.
    pub descriptors: Vec<Described>,
    pub series: SeriesRecorder,
    /// The emulator's time when the copy was taken: where the series ends.
    pub now: SimTime,
}

/// The name of the series' channel of lateness (docs/json.md: `series.lateness_ns`).
pub(crate) const LATENESS_CHANNEL: &str = "lateness_ns";

/// Which part of a host I/O the model is working on: a FUA write is the write, then a flush.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stage {
    Main,
    FuaFlush,
}

/// A host I/O inside the pacer, with what is known of its progress.
struct InFlight {
    io: Submission,
    stage: Stage,
    /// When the pacing thread took the request and offered it to the model: its arrival as the
    /// model sees it, and as the record gives it, so that a replay of the record meets the model
    /// as it was met here. It is later than `received` by the front end's and the store's work
    /// (the intake). A request the model has no room for waits at the host from this instant.
    offered: SimTime,
    /// When the model began the first stage.
    service_start: Option<SimTime>,
    /// When the model had been told of this stage: a completion due before it was computed too
    /// late to be punctual.
    known_at: SimTime,
    /// Which device (by generation) holds this stage.
    generation: u64,
}

/// A reply whose instant has come, held until every reply due in the same round is ready so
/// that they leave together.
struct Due {
    /// The reply itself; taken when it is sent.
    reply: Option<(Box<dyn Responder>, Outcome)>,
    seq: u64,
    /// When the front end received the request.
    received: SimTime,
    /// The request as the host sees it, with the model's service start and finish (the
    /// intended departure).
    host_view: Completion,
    /// The completion was computed after its instant.
    overran: bool,
}

/// When a due reply left: already known, or at this write of the batch.
#[derive(Clone, Copy)]
enum Left {
    At(SimTime),
    Write(BatchWrite),
}

struct Slot {
    device: Box<dyn Device>,
    generation: u64,
    /// The device's contract, checked at every call as the engine checks it; it also counts
    /// the requests the device holds.
    contract: ContractCheck,
    /// The device broke its contract: it is never called again, the requests it held have
    /// failed, and, while it is the current device, so does every new request.
    broken: bool,
}

impl Slot {
    fn new(device: Box<dyn Device>, generation: u64) -> Slot {
        Slot {
            contract: ContractCheck::new(device.queue_depth()),
            device,
            generation,
            broken: false,
        }
    }
}

/// Writes the record in arrival order although completions come in finishing order: rows wait
/// here until every earlier sequence number has completed or been skipped. At most one entry
/// per request in the emulator, so it is bounded like the inbox.
struct Recorder {
    writer: RecordWriter<Box<dyn Write + Send>>,
    next_seq: u64,
    ready: BTreeMap<u64, Option<RecordedIo>>,
}

impl Recorder {
    fn settle(&mut self, seq: u64, row: Option<RecordedIo>) -> std::io::Result<()> {
        self.ready.insert(seq, row);
        while let Some(entry) = self.ready.first_entry() {
            if *entry.key() != self.next_seq {
                break;
            }
            if let Some(row) = entry.remove() {
                self.writer.write(&row)?;
            }
            self.next_seq += 1;
        }
        Ok(())
    }

    /// Writes what is left, across gaps: requests refused during shutdown never settle.
    fn finish(mut self) -> std::io::Result<()> {
        for row in std::mem::take(&mut self.ready).into_values().flatten() {
            self.writer.write(&row)?;
        }
        self.writer.finish()?.flush()
    }
}

pub(crate) struct Pacer {
    shared: Arc<Shared>,
    clock: WallClock,
    /// The current device is the last; earlier ones finish what they hold and are dropped.
    slots: Vec<Slot>,
    in_flight: HashMap<u64, InFlight>,
    /// Host I/Os the current device had no queue room for, in arrival order.
    host_queue: VecDeque<InFlight>,
    next_id: u64,
    last_now: SimTime,
    /// The last offer's instant: each offer is later than the one before.
    last_offer: Option<SimTime>,
    /// The emulator's instant that is the models' time zero: the first offer, as a replay's
    /// clock starts at its first request. `None` until then; the models are not moved before.
    model_origin: Option<SimTime>,
    /// The instant the models were last advanced to (emulator time), `None` before the first.
    model_now: Option<SimTime>,
    done: Vec<Completion>,
    /// Replies due this round; `left` says when each one went. Both are emptied every round,
    /// so they hold at most the requests in the emulator.
    due: Vec<Due>,
    left: Vec<Left>,
    /// When each write of the round's batch began (a handful per round: one per connection
    /// and mount).
    write_times: Vec<(BatchWrite, SimTime)>,
    batch: ReplyBatch,
    /// The inbox's messages, taken in one swap per round (the buffer is reused).
    incoming: VecDeque<Message>,
    /// Sources of requests this thread serves while it spins (FUSE rings, NBD sockets): a
    /// request found there reaches the model without waking any thread. Made inactive while
    /// this thread sleeps, so that the front end's own thread serves them meanwhile; dropped
    /// when their source closes.
    pollers: Vec<Box<dyn Poller>>,
    recorder: Option<Recorder>,
    device_failed: Option<String>,
    shutting_down: bool,
    /// The first error writing the record; the run goes on without it and reports it at the end.
    record_error: Option<String>,
    /// The run in windows of the emulator's time: the replies as the model timed them, the
    /// host queue, the current device's counters, and lateness ([`Pacer::lateness_channel`]).
    /// It outlives device switches: the counters are whichever device is current.
    series: SeriesRecorder,
    lateness_channel: ChannelId,
}

impl Pacer {
    pub(crate) fn new(
        shared: Arc<Shared>,
        device: Box<dyn Device>,
        record: Option<RecordTarget>,
    ) -> std::io::Result<Pacer> {
        let recorder = match record {
            Some(target) => Some(Recorder {
                writer: RecordWriter::new(target.out, &target.header)?,
                next_seq: 0,
                ready: BTreeMap::new(),
            }),
            None => None,
        };
        let mut series = SeriesRecorder::new(shared.options.window);
        let lateness_channel = series.add_channel(LATENESS_CHANNEL);
        Ok(Pacer {
            clock: shared.clock,
            shared,
            slots: vec![Slot::new(device, 0)],
            in_flight: HashMap::new(),
            host_queue: VecDeque::new(),
            next_id: 0,
            last_now: SimTime::ZERO,
            last_offer: None,
            model_origin: None,
            model_now: None,
            done: Vec::new(),
            due: Vec::new(),
            left: Vec::new(),
            write_times: Vec::new(),
            batch: ReplyBatch::default(),
            incoming: VecDeque::new(),
            pollers: Vec::new(),
            recorder,
            device_failed: None,
            shutting_down: false,
            record_error: None,
            series,
            lateness_channel,
        })
    }

    pub(crate) fn run(mut self) -> Result<(), String> {
        lower_timer_slack();
        crate::ON_PACER.with(|p| p.set(true));
        loop {
            let mut incoming = self.wait_for_work();
            for message in incoming.drain(..) {
                self.handle(message);
            }
            self.incoming = incoming;
            // Replies that fell due while the models were moved to the new requests' instants.
            self.send_due();
            self.pace();
            if self.shutting_down && self.in_flight.is_empty() && self.host_queue.is_empty() {
                break;
            }
        }
        let final_snapshot = Snapshot {
            model: self.current().model_name(),
            parts: self.current().parts(),
            counters: self.current().counters(),
            descriptors: self.current().counter_descriptors(),
            series: std::mem::replace(&mut self.series, SeriesRecorder::new(WindowWidth::Auto)),
            now: self.now(),
        };
        self.shared.tally().final_snapshot = Some(final_snapshot);
        if let Some(recorder) = self.recorder.take() {
            if let Err(e) = recorder.finish() {
                self.record_error
                    .get_or_insert(format!("writing the record: {e}"));
            }
        }
        match self.record_error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn current(&self) -> &dyn Device {
        self.slots
            .last()
            .expect("there is always a current device")
            .device
            .as_ref()
    }

    /// The models' next deadline, in emulator time; none before the models' clock has started.
    fn next_deadline(&self) -> Option<SimTime> {
        self.model_origin?;
        self.slots
            .iter()
            .filter(|s| !s.broken)
            .filter_map(|s| s.device.next_deadline())
            .min()
            .map(|t| self.emulator_time(t))
    }

    /// An emulator instant on the models' clock.
    fn model_time(&self, t: SimTime) -> SimTime {
        let origin = self
            .model_origin
            .expect("the models are driven only once their clock has started");
        SimTime::from_ns(t.as_ns() - origin.as_ns())
    }

    /// An instant of the models' clock in emulator time.
    fn emulator_time(&self, t: SimTime) -> SimTime {
        let origin = self
            .model_origin
            .expect("the models are driven only once their clock has started");
        SimTime::from_ns(t.as_ns() + origin.as_ns())
    }

    /// Blocks until there are messages, or until a margin before the model's next deadline;
    /// returns the messages.
    fn wait_for_work(&mut self) -> VecDeque<Message> {
        let margin_ns = self.shared.options.spin_margin_ns;
        let deadline = self.next_deadline();
        self.idle_spin(deadline);
        let mut inbox = self.shared.inbox.lock().unwrap_or_else(|p| p.into_inner());
        while inbox.items.is_empty() {
            match deadline {
                None if self.shutting_down => break,
                None => {
                    inbox.pacer_asleep = true;
                    self.set_pollers_active(false);
                    inbox = self
                        .shared
                        .work
                        .wait(inbox)
                        .unwrap_or_else(|p| p.into_inner());
                    self.set_pollers_active(true);
                    inbox.pacer_asleep = false;
                }
                Some(d) => {
                    let wake_ns = d.as_ns().saturating_sub(margin_ns);
                    let now_ns = self.clock.now().as_ns();
                    if now_ns >= wake_ns {
                        break;
                    }
                    inbox.pacer_asleep = true;
                    self.set_pollers_active(false);
                    inbox = self
                        .shared
                        .work
                        .wait_timeout(inbox, Duration::from_nanos(wake_ns - now_ns))
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                    self.set_pollers_active(true);
                    inbox.pacer_asleep = false;
                }
            }
        }
        let mut messages = std::mem::take(&mut self.incoming);
        std::mem::swap(&mut messages, &mut inbox.items);
        self.shared.waiting.store(0, Ordering::Release);
        let wake = inbox.blocked > 0;
        drop(inbox);
        if wake {
            self.shared.space.notify_all();
        }
        messages
    }

    /// Polls the inbox for a short while before sleeping: a host at queue depth 1 sends its next
    /// request a few microseconds after a reply, and catching it spinning saves the wake-up of
    /// a sleeping thread (several microseconds) on every request.
    fn idle_spin(&mut self, deadline: Option<SimTime>) {
        let budget_ns = self.shared.options.idle_spin_ns;
        let start = self.clock.now().as_ns();
        let until = match deadline {
            Some(d) => (start + budget_ns).min(d.as_ns()),
            None => start + budget_ns,
        };
        while self.shared.waiting.load(Ordering::Acquire) == 0 && self.clock.now().as_ns() < until {
            self.poll_rings();
            std::hint::spin_loop();
        }
    }

    /// Serves requests waiting in the sources this thread polls. They go through the front
    /// end into the inbox, where the next round takes them.
    fn poll_rings(&mut self) {
        let shared = &self.shared;
        self.pollers.retain_mut(|poller| {
            let polled = poller.poll();
            if polled.requests > 0 {
                *shared
                    .polled
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .entry(poller.frontend())
                    .or_default() += polled.requests as u64;
            }
            polled.open
        });
    }

    fn set_pollers_active(&self, active: bool) {
        for poller in &self.pollers {
            poller.set_active(active);
        }
    }

    fn handle(&mut self, message: Message) {
        match message {
            Message::Io(io) => {
                let offered = self.offer_instant();
                let intake_ns = offered.as_ns().saturating_sub(io.received.as_ns());
                self.shared.tally().intake.record(intake_ns);
                self.model_origin.get_or_insert(offered);
                // As the engine does before an arrival: everything due by then, then the
                // model moved to the instant itself.
                self.catch_up(offered);
                if self.model_now.is_none_or(|t| t < offered) {
                    self.advance_models(offered);
                }
                self.submit(
                    InFlight {
                        io,
                        stage: Stage::Main,
                        offered,
                        service_start: None,
                        known_at: offered,
                        generation: 0,
                    },
                    offered,
                )
            }
            Message::Skip { seq } => self.settle_record(seq, None),
            Message::Replace { device, name, done } => {
                let generation = self.slots.last().map_or(0, |s| s.generation + 1);
                self.slots.push(Slot::new(device, generation));
                self.retire_idle_devices();
                // A new model is a fresh start: it has not failed.
                self.device_failed = None;
                let mut tally = self.shared.tally();
                tally.device_name = name.clone();
                tally.switches.push(name);
                drop(tally);
                // The requester may have gone; the switch stands either way.
                let _ = done.send(());
                if self.model_origin.is_some() {
                    let now = self.now();
                    self.drain_host_queue(now);
                }
            }
            Message::Snapshot { reply } => {
                let now = self.now();
                self.sample_counters(now);
                // The asker may have given up waiting.
                let _ = reply.send(Snapshot {
                    model: self.current().model_name(),
                    parts: self.current().parts(),
                    counters: self.current().counters(),
                    descriptors: self.current().counter_descriptors(),
                    series: self.series.clone(),
                    now,
                });
            }
            Message::Poller(poller) => {
                // This thread is awake, so the poller serves its source from now on.
                poller.set_active(true);
                // The report names every front end polled, with 0 until a poll finds work.
                self.shared
                    .polled
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .entry(poller.frontend())
                    .or_default();
                self.pollers.push(poller);
            }
            Message::Shutdown => self.shutting_down = true,
        }
    }

    /// The wall clock, never earlier than an instant the models were already given.
    fn now(&mut self) -> SimTime {
        self.last_now = self.last_now.max(self.clock.now());
        self.last_now
    }

    /// The instant of a new offer: now, or a nanosecond after the previous offer if the clock
    /// has not moved past it, so that a replay, which orders equal instants by file position,
    /// cannot put two offers in another order than the model met them.
    fn offer_instant(&mut self) -> SimTime {
        let mut t = self.now();
        if let Some(last) = self.last_offer {
            if t <= last {
                t = SimTime::from_ns(last.as_ns() + 1);
                self.last_now = t;
            }
        }
        self.last_offer = Some(t);
        t
    }

    /// Sleeps off nothing: spins to the next deadline when it is within the margin (leaving
    /// early when new work arrives, so that it reaches the model first), then advances.
    fn pace(&mut self) {
        let Some(deadline) = self.next_deadline() else {
            return;
        };
        let margin_ns = self.shared.options.spin_margin_ns;
        let mut now = self.clock.now();
        if now.as_ns().saturating_add(margin_ns) < deadline.as_ns() {
            return;
        }
        while now < deadline {
            if self.shared.waiting.load(Ordering::Acquire) > 0 {
                return;
            }
            self.poll_rings();
            std::hint::spin_loop();
            now = self.clock.now();
        }
        self.advance()
    }

    /// Gives the series the current device's counters at the ends of the windows that time
    /// has passed, before anything happens at `now`.
    #[inline]
    fn sample_counters(&mut self, now: SimTime) {
        if self.series.counters_due(now) {
            let counters = self.current().counters();
            self.series.sample(now, counters);
        }
    }

    /// Advances the models through every deadline up to the wall clock and sends the replies.
    fn advance(&mut self) {
        let now = self.now();
        self.catch_up(now);
        self.send_due();
    }

    /// Advances the models to each of their deadlines at or before `until`, one after the
    /// other, giving the requests waiting at the host to the model at the deadline that made
    /// room for them, as the engine does: the model meets the instants it named, however late
    /// the pacing thread is. The replies go to `due`.
    fn catch_up(&mut self, until: SimTime) {
        while let Some(deadline) = self.next_deadline().filter(|&d| d <= until) {
            self.advance_models(deadline);
        }
    }

    /// Advances every model to `at` (emulator time), completes what finished, and then gives
    /// the waiting requests to the current model at `at`.
    fn advance_models(&mut self, at: SimTime) {
        // The models' time never goes back: deadlines before the last advance are refused by
        // the contract check, and offers are strictly increasing. A step back would hand a
        // model an earlier `now` than it has seen, which no model is written to survive.
        assert!(
            self.model_now.is_none_or(|t| at >= t),
            "the emulator's model clock went back to {at}"
        );
        self.model_now = Some(at);
        self.sample_counters(at);
        let model_at = self.model_time(at);
        for index in 0..self.slots.len() {
            if self.slots[index].broken {
                continue;
            }
            let mut done = std::mem::take(&mut self.done);
            self.slots[index].device.advance(model_at, &mut done);
            self.slots[index].contract.advanced(model_at);
            let generation = self.slots[index].generation;
            let mut broken = None;
            for completion in done.drain(..) {
                // Once the device has broken its contract (here, or in the submission of a FUA
                // write's flush that a completion led to), the rest of what it reported is not
                // to be trusted either: the requests it held fail together.
                if broken.is_some() || self.slots[index].broken {
                    continue;
                }
                let checked = self.slots[index].contract.completed(&completion, model_at);
                broken = checked
                    .and_then(|()| self.complete(completion, generation, at))
                    .err();
            }
            self.done = done;
            let broken = match broken {
                Some(error) => Some(error),
                None if self.slots[index].broken => None,
                None => self.check_deadline(index, model_at).err(),
            };
            if let Some(error) = broken {
                self.model_broke(index, error);
            }
        }
        self.retire_idle_devices();
        self.drain_host_queue(at);
    }

    /// Drops replaced devices that hold nothing more.
    fn retire_idle_devices(&mut self) {
        let current = self.slots.len() - 1;
        let mut index = 0;
        self.slots.retain(|slot| {
            let keep = index == current || (!slot.broken && slot.contract.outstanding() > 0);
            index += 1;
            keep
        });
    }

    /// Gives the current device a stage of a request at `now` (emulator time), or leaves it
    /// waiting at the host behind those already waiting.
    fn submit(&mut self, request: InFlight, now: SimTime) {
        if !self.host_queue.is_empty() {
            self.host_queue.push_back(request);
            return;
        }
        if let Err(request) = self.try_submit(request, now) {
            self.host_queue.push_back(*request);
        }
    }

    /// Gives the current device one stage of a request at `now` (emulator time). Hands the
    /// request back when the device's queue is full; answers it at once when the device
    /// refuses it.
    fn try_submit(&mut self, mut request: InFlight, now: SimTime) -> Result<(), Box<InFlight>> {
        if let Some(reason) = &self.device_failed {
            let failure = IoFailure::DeviceFailed(reason.clone());
            self.fail(request, failure);
            return Ok(());
        }
        self.sample_counters(now);
        let id = self.next_id;
        let (op, offset_bytes, len_bytes) = match request.stage {
            Stage::Main => (request.io.op, request.io.offset_bytes, request.io.len_bytes),
            Stage::FuaFlush => (Op::Flush, 0, 0),
        };
        let arrival = match request.stage {
            Stage::Main => request.offered,
            Stage::FuaFlush => now,
        };
        let (model_now, model_arrival) = (self.model_time(now), self.model_time(arrival));
        let current = self.slots.len() - 1;
        let slot = &mut self.slots[current];
        let given = Request {
            id,
            op,
            offset_bytes,
            len_bytes,
            arrival: model_arrival,
            flow: 0,
        };
        let outcome = slot.device.submit(model_now, given);
        match outcome {
            Ok(()) => {
                self.series.submitted(arrival, now);
                self.next_id += 1;
                request.generation = slot.generation;
                request.known_at = self.clock.now();
                self.in_flight.insert(id, request);
                let checked = slot.contract.submitted(&given);
                if let Err(error) = checked.and_then(|()| self.check_deadline(current, model_now)) {
                    self.model_broke(current, error);
                }
                Ok(())
            }
            Err(DeviceError::QueueFull { .. }) => Err(Box::new(request)),
            Err(DeviceError::Failed { reason }) => {
                self.device_failed = Some(reason.clone());
                self.fail(request, IoFailure::DeviceFailed(reason));
                Ok(())
            }
            Err(DeviceError::OutOfRange { .. }) => {
                self.fail(request, IoFailure::OutOfRange);
                Ok(())
            }
            Err(DeviceError::Invalid { reason }) => {
                self.fail(
                    request,
                    IoFailure::Store(format!("the model refused it: {reason}")),
                );
                Ok(())
            }
        }
    }

    /// Gives the waiting requests to the current device at `now`, in arrival order, while it
    /// has room.
    fn drain_host_queue(&mut self, now: SimTime) {
        while let Some(request) = self.host_queue.pop_front() {
            if let Err(request) = self.try_submit(request, now) {
                self.host_queue.push_front(*request);
                break;
            }
        }
    }

    fn fail(&mut self, request: InFlight, failure: IoFailure) {
        self.shared.tally().failed += 1;
        let seq = request.io.seq;
        request.io.responder.respond(Outcome::Failed(failure));
        self.settle_record(seq, None);
    }

    /// Checks the deadline device `index` announces at `model_now` (the models' clock) after
    /// a call: in the past, stuck at the instant it was just advanced to, or missing while it
    /// holds requests, the device would leave them unanswered for ever, or the pacing thread
    /// spinning.
    fn check_deadline(&self, index: usize, model_now: SimTime) -> Result<(), ContractError> {
        let slot = &self.slots[index];
        let deadline = slot.device.next_deadline();
        slot.contract.deadline(deadline, model_now)?;
        if deadline.is_none() && slot.contract.outstanding() > 0 {
            return Err(slot.contract.stalled(self.host_queue.len()));
        }
        Ok(())
    }

    /// Device `index` broke its contract: it is not called again, the requests it held fail
    /// (EIO to the host), and while it is the current device so does every new request, until
    /// the control socket switches to another. The emulator goes on serving; the failure is
    /// said on standard error at once and kept for the report.
    #[cold]
    fn model_broke(&mut self, index: usize, error: ContractError) {
        let slot = &mut self.slots[index];
        if slot.broken {
            return;
        }
        slot.broken = true;
        let generation = slot.generation;
        let message = format!(
            "the device model '{}' broke the device contract: {error}",
            slot.device.model_name()
        );
        let current = index == self.slots.len() - 1;
        eprintln!(
            "storsim: {message}; the requests it held fail with EIO{}",
            if current {
                ", and so does every new request until the device is switched"
            } else {
                ""
            }
        );
        self.shared.tally().model_failures.push(message.clone());
        // In id order, so that the replies' order does not depend on the map's.
        let mut held: Vec<u64> = self
            .in_flight
            .iter()
            .filter(|(_, r)| r.generation == generation)
            .map(|(&id, _)| id)
            .collect();
        held.sort_unstable();
        for id in held {
            if let Some(request) = self.in_flight.remove(&id) {
                self.fail(request, IoFailure::DeviceFailed(message.clone()));
            }
        }
        if current {
            while let Some(request) = self.host_queue.pop_front() {
                self.fail(request, IoFailure::DeviceFailed(message.clone()));
            }
            self.device_failed = Some(message);
        }
    }

    /// Takes a completion the model gave when advanced to `now` (emulator time): the reply
    /// falls due, or a FUA write's flush stage goes to the model. The contract check has made
    /// sure the device held the request; a request the pacing thread does not hold is the
    /// device's fault all the same.
    fn complete(
        &mut self,
        completion: Completion,
        generation: u64,
        now: SimTime,
    ) -> Result<(), ContractError> {
        let id = completion.request.id;
        let held = self
            .in_flight
            .get(&id)
            .is_some_and(|r| r.generation == generation);
        let Some(mut request) = held.then(|| self.in_flight.remove(&id)).flatten() else {
            return Err(ContractError::UnknownCompletion {
                id,
                outstanding: self.slots.iter().map(|s| s.contract.outstanding()).sum(),
            });
        };
        let service_start = self.emulator_time(completion.service_start);
        request.service_start.get_or_insert(service_start);
        // A FUA write that failed is answered at once: there is nothing to make durable.
        if request.stage == Stage::Main
            && request.io.fua
            && request.io.op == Op::Write
            && completion.status.is_ok()
        {
            request.stage = Stage::FuaFlush;
            self.submit(request, now);
            return Ok(());
        }
        let intended = self.emulator_time(completion.finish);
        let overran = intended < request.known_at;
        let arrival = request.offered;
        let io = request.io;
        let outcome = match (completion.status, io.read_data) {
            (Status::Ok, Some(data)) => Outcome::Data(data),
            (Status::Ok, None) => Outcome::Done,
            (status, _) => {
                let mut tally = self.shared.tally();
                tally.failed += 1;
                tally.failed_replies += 1;
                Outcome::Failed(IoFailure::Injected(status))
            }
        };
        self.due.push(Due {
            reply: Some((io.responder, outcome)),
            seq: io.seq,
            received: io.received,
            host_view: Completion {
                request: Request {
                    id,
                    op: io.op,
                    offset_bytes: io.offset_bytes,
                    len_bytes: io.len_bytes,
                    arrival,
                    flow: 0,
                },
                service_start: request.service_start.unwrap_or(arrival),
                finish: intended,
                status: completion.status,
            },
            overran,
        });
        Ok(())
    }

    /// Sends the replies that fell due in this round: those a front end batches leave with
    /// one write per NBD connection and one `io_uring_enter` per FUSE mount, the others one by
    /// one. Each reply's departure is the moment its write began, and its lateness is measured
    /// from there.
    fn send_due(&mut self) {
        if self.due.is_empty() {
            return;
        }
        let mut due = std::mem::take(&mut self.due);
        let mut left = std::mem::take(&mut self.left);
        let mut write_times = std::mem::take(&mut self.write_times);
        let clock = self.clock;
        for (responder, outcome) in due.iter_mut().filter_map(|d| d.reply.take()) {
            // A disk a crash left off answers nothing more: a request it held at the crash
            // (stored, not yet answered) fails at its instant rather than being acknowledged.
            let outcome = match outcome {
                Outcome::Data(_) | Outcome::Done if self.shared.powered_off() => {
                    let mut tally = self.shared.tally();
                    tally.failed += 1;
                    tally.failed_replies += 1;
                    Outcome::Failed(crate::powered_off())
                }
                outcome => outcome,
            };
            let at = clock.now();
            left.push(match responder.respond_batched(outcome, &mut self.batch) {
                Departure::Sent => Left::At(at),
                Departure::Batched(write) => Left::Write(write),
            });
        }
        if !self.batch.is_empty() {
            self.batch
                .send(|write| write_times.push((write, clock.now())));
        }
        let actual_of = |left: Left| match left {
            Left::At(at) => at,
            // A batch names only writes it made; the fallback is the latest possible
            // departure, which can only overstate lateness.
            Left::Write(write) => write_times
                .iter()
                .find(|(w, _)| *w == write)
                .map(|&(_, at)| at)
                .unwrap_or_else(|| clock.now()),
        };
        {
            let mut tally = self.shared.tally();
            for (reply, &left) in due.iter().zip(&left) {
                let actual = actual_of(left);
                let lateness_ns = actual
                    .as_ns()
                    .saturating_sub(reply.host_view.finish.as_ns());
                let response_ns = reply.host_view.latency().as_ns();
                tally.lateness.record(
                    reply.host_view.request.op,
                    lateness_ns,
                    response_ns,
                    reply.overran,
                );
                tally.model.record(&reply.host_view);
            }
        }
        for (reply, &left) in due.iter().zip(&left) {
            let lateness_ns = actual_of(left)
                .as_ns()
                .saturating_sub(reply.host_view.finish.as_ns());
            self.series.completed(&reply.host_view);
            self.series
                .record(self.lateness_channel, reply.host_view.finish, lateness_ns);
        }
        for (reply, &left) in due.iter().zip(&left) {
            let request = &reply.host_view.request;
            let row = RecordedIo {
                received_ns: reply.received.as_ns(),
                arrival_ns: request.arrival.as_ns(),
                op: request.op,
                offset_bytes: request.offset_bytes,
                len_bytes: request.len_bytes,
                intended_finish_ns: reply.host_view.finish.as_ns(),
                actual_finish_ns: actual_of(left).as_ns(),
            };
            self.settle_record(reply.seq, Some(row));
        }
        due.clear();
        left.clear();
        write_times.clear();
        self.due = due;
        self.left = left;
        self.write_times = write_times;
    }

    fn settle_record(&mut self, seq: u64, row: Option<RecordedIo>) {
        if let Some(recorder) = self.recorder.as_mut() {
            if let Err(e) = recorder.settle(seq, row) {
                self.record_error
                    .get_or_insert(format!("writing the record: {e}"));
                // Without a working writer there is no record to keep in order.
                self.recorder = None;
            }
        }
    }
}
