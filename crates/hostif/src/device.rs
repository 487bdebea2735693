//! The host interface as a [`Device`] wrapper: queues, fetch rounds, link, controller.

use crate::arbiter::Arbiter;
use crate::params::{HostInterfaceParams, LinkParams};
use crate::HostIfError;
use std::collections::{HashMap, VecDeque};
use storsim_core::{
    check_range, BlockWear, Completion, CounterDescriptor, Described, Device, DeviceCounter,
    DeviceError, DevicePart, EventQueue, Op, Request, Scope, SimDuration, SimTime, Status, Unit,
};

/// What happens next to a command, or to the controller.
#[derive(Clone, Copy, Debug)]
enum Event {
    /// An arbitration round.
    Round,
    /// The controller has processed the command in this slot: a write's data now crosses the
    /// link, anything else goes to the inner device.
    Processed(u32),
    /// A write's data has arrived: the command goes to the inner device.
    DataIn(u32),
    /// The command's completion entry has reached the host.
    Done(u32),
}

/// One host command, from acceptance to its completion's report.
#[derive(Clone, Copy)]
struct Command {
    request: Request,
    queue: u32,
    /// Acceptance order, which breaks ties between completions at one instant.
    seq: u64,
    /// The round that fetched it: when the device began work on it.
    fetched_at: SimTime,
    /// How the device answered it (ok until it answers).
    status: Status,
}

/// One submission/completion queue pair.
struct Queue {
    /// Commands in the pair: waiting to be fetched, or fetched and not yet completed.
    outstanding: u32,
    /// Slots of the commands whose doorbell has rung, not yet fetched, in order.
    submitted: VecDeque<u32>,
    /// Slots of commands the host holds because the pair is full, in order.
    held: VecDeque<u32>,
    fetched: u64,
}

/// The link's two directions and when each is next free; a half-duplex link has one.
struct Link {
    params: LinkParams,
    /// Host to device (command fetches, write data).
    down_free: SimTime,
    /// Device to host (read data, completion entries); unused when half duplex.
    up_free: SimTime,
    down_busy_ns: u64,
    up_busy_ns: u64,
}

#[derive(Clone, Copy)]
enum Direction {
    Down,
    Up,
}

impl Link {
    /// Reserves the next free stretch of `bytes` in `direction` from `ready`; returns its end.
    fn transfer(&mut self, direction: Direction, ready: SimTime, bytes: u64) -> SimTime {
        let ns = self.params.transfer_ns(bytes);
        let free = match (direction, self.params.full_duplex) {
            (Direction::Up, true) => &mut self.up_free,
            _ => &mut self.down_free,
        };
        let end = ready.max(*free) + SimDuration::from_ns(ns);
        *free = end;
        match direction {
            Direction::Down => self.down_busy_ns += ns,
            Direction::Up => self.up_busy_ns += ns,
        }
        end
    }
}

/// A host interface (NVMe or SATA) in front of another device; see the crate's documentation.
pub struct HostInterfaceDevice {
    inner: Box<dyn Device>,
    params: HostInterfaceParams,
    capacity_bytes: u64,
    /// Commands by slot; `free` lists the empty slots.
    slots: Vec<Option<Command>>,
    free: Vec<u32>,
    queues: Vec<Queue>,
    /// Submitted-and-unfetched commands per queue, as the arbiter reads them.
    pending: Vec<u32>,
    pending_total: u64,
    /// Per flow binding, the index of the queue its next command takes.
    binding_turn: Vec<usize>,
    arbiter: Arbiter,
    picks: Vec<(u32, u32)>,
    events: EventQueue<Event>,
    link: Link,
    controller_free: SimTime,
    controller_busy_ns: u64,
    /// Whether a round is scheduled, and the earliest a new one may start (the end of the
    /// previous round's fetches).
    round_scheduled: bool,
    next_round_at: SimTime,
    /// Commands fetched and not yet completed by the inner device.
    in_device: usize,
    inner_depth: usize,
    /// Inner request id -> slot, for the commands in the inner device.
    in_inner: HashMap<u64, u32>,
    inner_done: Vec<Completion>,
    next_seq: u64,
    /// Why the interface accepts no more requests, once the inner device has failed.
    failed: Option<String>,
    rounds: u64,
    held_commands: u64,
    refused_commands: u64,
}

impl HostInterfaceDevice {
    /// The interface `params` describes in front of `inner`. Fails when the parameters are
    /// inconsistent (see [`HostInterfaceParams::validate`]).
    pub fn new(
        params: HostInterfaceParams,
        inner: Box<dyn Device>,
    ) -> Result<HostInterfaceDevice, HostIfError> {
        params.validate()?;
        let priorities = params.queue_priorities()?;
        let total = params.total_depth() as usize;
        let inner_depth = inner.queue_depth().max(1);
        Ok(HostInterfaceDevice {
            capacity_bytes: inner.capacity_bytes(),
            slots: vec![None; total],
            free: (0..total as u32).rev().collect(),
            queues: (0..params.queues)
                .map(|_| Queue {
                    outstanding: 0,
                    submitted: VecDeque::new(),
                    held: VecDeque::new(),
                    fetched: 0,
                })
                .collect(),
            pending: vec![0; params.queues as usize],
            pending_total: 0,
            binding_turn: vec![0; params.flows.len()],
            arbiter: Arbiter::new(params.arbitration, params.queue_fetch_size, &priorities),
            picks: Vec::new(),
            // Each command has at most one event pending, and there is at most one round.
            events: EventQueue::with_capacity(total + 1),
            link: Link {
                params: params.link,
                down_free: SimTime::ZERO,
                up_free: SimTime::ZERO,
                down_busy_ns: 0,
                up_busy_ns: 0,
            },
            controller_free: SimTime::ZERO,
            controller_busy_ns: 0,
            round_scheduled: false,
            next_round_at: SimTime::ZERO,
            in_device: 0,
            inner_depth,
            in_inner: HashMap::new(),
            inner_done: Vec::new(),
            next_seq: 0,
            failed: None,
            rounds: 0,
            held_commands: 0,
            refused_commands: 0,
            inner,
            params,
        })
    }

    /// The parameters the interface was built with.
    pub fn params(&self) -> &HostInterfaceParams {
        &self.params
    }

    /// The device behind the interface.
    pub fn inner(&self) -> &dyn Device {
        self.inner.as_ref()
    }

    /// The queue a request of `flow` enters next (without taking the turn).
    fn queue_for(&self, flow: u16) -> (u32, Option<usize>) {
        let f = usize::from(flow);
        match self.params.flows.get(f) {
            Some(binding) => (binding.queues[self.binding_turn[f]], Some(f)),
            None => (u32::from(flow) % self.params.queues, None),
        }
    }

    /// Schedules a round if commands wait, the inner device has room and none is scheduled.
    fn maybe_round(&mut self, now: SimTime) {
        if !self.round_scheduled && self.pending_total > 0 && self.in_device < self.inner_depth {
            self.round_scheduled = true;
            self.events
                .push(now.max(self.next_round_at), Event::Round)
                .unwrap_or_else(|_| panic!("the event queue holds one event per command"));
        }
    }

    fn schedule(&mut self, at: SimTime, event: Event) {
        self.events
            .push(at, event)
            .unwrap_or_else(|_| panic!("the event queue holds one event per command"));
    }

    fn command(&self, slot: u32) -> &Command {
        self.slots[slot as usize]
            .as_ref()
            .expect("an event names a live command")
    }

    fn command_mut(&mut self, slot: u32) -> &mut Command {
        self.slots[slot as usize]
            .as_mut()
            .expect("an event names a live command")
    }

    /// One arbitration round at `now`: fetches what the arbiter picks, each command's entry
    /// crossing the link and then the controller.
    fn round(&mut self, now: SimTime) {
        self.round_scheduled = false;
        let room = (self.inner_depth - self.in_device) as u64;
        let budget = room.min(u64::from(self.params.fetch_per_round)) as u32;
        let mut picks = std::mem::take(&mut self.picks);
        picks.clear();
        self.arbiter.round(budget, &self.pending, &mut picks);
        let mut last_fetch = now;
        for &(q, k) in &picks {
            for _ in 0..k {
                let queue = &mut self.queues[q as usize];
                let slot = queue
                    .submitted
                    .pop_front()
                    .expect("the arbiter takes no more than a queue holds");
                queue.fetched += 1;
                self.pending[q as usize] -= 1;
                self.pending_total -= 1;
                self.in_device += 1;
                let fetched =
                    self.link
                        .transfer(Direction::Down, now, u64::from(self.params.command_bytes));
                last_fetch = fetched;
                let start = fetched.max(self.controller_free);
                let processed = start + self.params.command_processing;
                self.controller_free = processed;
                self.controller_busy_ns += self.params.command_processing.as_ns();
                self.slots[slot as usize]
                    .as_mut()
                    .expect("a queued slot holds a command")
                    .fetched_at = now;
                self.schedule(processed, Event::Processed(slot));
            }
        }
        if !picks.is_empty() {
            self.rounds += 1;
        }
        self.picks = picks;
        // Rounds do not overlap: the next begins once this one's entries have arrived.
        self.next_round_at = last_fetch;
        self.maybe_round(now);
    }

    /// Hands the command in `slot` to the inner device at `now`.
    fn hand_over(&mut self, now: SimTime, slot: u32) {
        let mut request = self.command(slot).request;
        // The inner device receives the command when the controller hands it over.
        request.arrival = now;
        match self.inner.submit(now, request) {
            Ok(()) => {
                self.in_inner.insert(request.id, slot);
            }
            Err(e) => {
                // The host was told the command was accepted when it rang the doorbell, so a
                // refusal now completes it at once, counted, as failed; a failed device takes no
                // more.
                self.refused_commands += 1;
                self.in_device -= 1;
                self.command_mut(slot).status = Status::DeviceFailed;
                if let DeviceError::Failed { reason } = e {
                    self.failed.get_or_insert(reason);
                }
                self.schedule(now, Event::Done(slot));
                self.maybe_round(now);
            }
        }
    }

    /// The inner device finished the command in `slot` at `now`: a read's data and the
    /// completion entry cross the link to the host.
    fn inner_finished(&mut self, now: SimTime, slot: u32, status: Status) {
        self.in_device -= 1;
        self.command_mut(slot).status = status;
        let request = self.command(slot).request;
        // A failed read sends no data back, only its completion entry.
        let data = if request.op == Op::Read && status.is_ok() {
            request.len_bytes
        } else {
            0
        };
        // The completion entry follows its data at once: PCIe keeps posted writes in order.
        let end = self.link.transfer(
            Direction::Up,
            now,
            data + u64::from(self.params.completion_bytes),
        );
        self.schedule(end, Event::Done(slot));
        self.maybe_round(now);
    }

    /// The completion of `slot` reached the host at `now`: the queue pair has room for a
    /// command the host held.
    fn finish(&mut self, now: SimTime, slot: u32, out: &mut Vec<(u64, Completion)>) {
        let command = self.slots[slot as usize]
            .take()
            .expect("a completion names a live command");
        self.free.push(slot);
        out.push((
            command.seq,
            Completion {
                request: command.request,
                service_start: command.fetched_at,
                finish: now,
                status: command.status,
            },
        ));
        let q = command.queue as usize;
        let queue = &mut self.queues[q];
        queue.outstanding -= 1;
        if let Some(next) = queue.held.pop_front() {
            queue.outstanding += 1;
            queue.submitted.push_back(next);
            self.pending[q] += 1;
            self.pending_total += 1;
            self.maybe_round(now);
        }
    }
}

/// The interface's own counters, listed after the inner device's.
pub const COUNTERS: &[CounterDescriptor] = &[
    CounterDescriptor::new(
        "hostif_arbitration_rounds",
        Unit::Count,
        "Rounds that fetched at least one command.",
    ),
    CounterDescriptor::new("hostif_fetched_commands", Unit::Count, "Commands fetched."),
    CounterDescriptor::new(
        "hostif_held_commands",
        Unit::Count,
        "Commands the host held because their queue pair was full.",
    ),
    CounterDescriptor::new(
        "hostif_refused_commands",
        Unit::Count,
        "Fetched commands the inner device refused (completed at once, not served).",
    ),
    CounterDescriptor::new(
        "hostif_link_down_busy_ns",
        Unit::Nanoseconds,
        "Time the link carried traffic toward the device.",
    ),
    CounterDescriptor::new(
        "hostif_link_up_busy_ns",
        Unit::Nanoseconds,
        "Time the link carried traffic toward the host.",
    ),
    CounterDescriptor::new(
        "hostif_controller_busy_ns",
        Unit::Nanoseconds,
        "Controller processing time.",
    ),
];

/// The per-queue counters, listed with more than one queue.
pub const QUEUE_COUNTERS: &[CounterDescriptor] = &[CounterDescriptor::family(
    "hostif_queue_{}_fetched_commands",
    Unit::Count,
    Scope::PerQueue,
    "Commands fetched from the queue (only with more than one queue).",
)];

impl Device for HostInterfaceDevice {
    fn counter_descriptors(&self) -> Vec<Described> {
        let mut out = self.inner.counter_descriptors();
        out.extend(Described::all(COUNTERS));
        if self.queues.len() > 1 {
            out.extend(Described::all(QUEUE_COUNTERS));
        }
        out
    }

    fn model_name(&self) -> &'static str {
        self.inner.model_name()
    }

    fn capacity_bytes(&self) -> u64 {
        self.capacity_bytes
    }

    fn queue_depth(&self) -> usize {
        self.slots.len()
    }

    fn submit(&mut self, now: SimTime, request: Request) -> Result<(), DeviceError> {
        if let Some(reason) = &self.failed {
            return Err(DeviceError::Failed {
                reason: reason.clone(),
            });
        }
        check_range(&request, self.capacity_bytes)?;
        if request.len_bytes == 0 && matches!(request.op, Op::Read | Op::Write) {
            // A command moves at least one logical block.
            return Err(DeviceError::Invalid {
                reason: "zero-length read or write".into(),
            });
        }
        let Some(slot) = self.free.pop() else {
            return Err(DeviceError::QueueFull {
                queue_depth: self.slots.len(),
            });
        };
        let (q, binding) = self.queue_for(request.flow);
        if let Some(f) = binding {
            self.binding_turn[f] = (self.binding_turn[f] + 1) % self.params.flows[f].queues.len();
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.slots[slot as usize] = Some(Command {
            request,
            queue: q,
            seq,
            fetched_at: now,
            status: Status::Ok,
        });
        let depth = self.params.queue_depth;
        let queue = &mut self.queues[q as usize];
        if queue.outstanding < depth {
            queue.outstanding += 1;
            queue.submitted.push_back(slot);
            self.pending[q as usize] += 1;
            self.pending_total += 1;
            self.maybe_round(now);
        } else {
            queue.held.push_back(slot);
            self.held_commands += 1;
        }
        Ok(())
    }

    fn next_deadline(&self) -> Option<SimTime> {
        match (self.events.peek_time(), self.inner.next_deadline()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn advance(&mut self, now: SimTime, done: &mut Vec<Completion>) {
        let mut finished: Vec<(u64, Completion)> = Vec::new();
        loop {
            let event_at = self.events.peek_time().filter(|&t| t <= now);
            let inner_at = self.inner.next_deadline().filter(|&t| t <= now);
            match (event_at, inner_at) {
                (Some(t), i) if i.is_none_or(|i| t <= i) => {
                    let (t, event) = self.events.pop().expect("peeked");
                    match event {
                        Event::Round => self.round(t),
                        Event::Processed(slot) => {
                            let request = self.command(slot).request;
                            if request.op == Op::Write {
                                let end = self.link.transfer(Direction::Down, t, request.len_bytes);
                                self.schedule(end, Event::DataIn(slot));
                            } else {
                                self.hand_over(t, slot);
                            }
                        }
                        Event::DataIn(slot) => self.hand_over(t, slot),
                        Event::Done(slot) => self.finish(t, slot, &mut finished),
                    }
                }
                (_, Some(t)) => {
                    let mut inner_done = std::mem::take(&mut self.inner_done);
                    inner_done.clear();
                    self.inner.advance(t, &mut inner_done);
                    for c in &inner_done {
                        let slot = self
                            .in_inner
                            .remove(&c.request.id)
                            .expect("the inner device completes only what it was given");
                        self.inner_finished(t, slot, c.status);
                    }
                    self.inner_done = inner_done;
                }
                _ => break,
            }
        }
        // Completions come out in time order; ties go in submission order.
        finished.sort_by_key(|(seq, c)| (c.finish, *seq));
        done.extend(finished.into_iter().map(|(_, c)| c));
    }

    fn counters(&self) -> Vec<DeviceCounter> {
        let mut counters = self.inner.counters();
        counters.extend(self.own_counters());
        counters
    }

    fn counter_values(&self, values: &mut Vec<f64>) {
        self.inner.counter_values(values);
        values.extend(self.own_counters().into_iter().map(|c| c.value));
    }

    fn prefetch(&self, request: &Request) {
        self.inner.prefetch(request);
    }

    fn parts(&self) -> Vec<DevicePart> {
        self.inner.parts()
    }
    fn block_wear(&self) -> Vec<BlockWear> {
        self.inner.block_wear()
    }
}

impl HostInterfaceDevice {
    /// The interface's own counters, after the inner device's.
    fn own_counters(&self) -> Vec<DeviceCounter> {
        let mut counters = vec![
            DeviceCounter::new("hostif_arbitration_rounds", self.rounds as f64),
            DeviceCounter::new(
                "hostif_fetched_commands",
                self.queues.iter().map(|q| q.fetched).sum::<u64>() as f64,
            ),
            DeviceCounter::new("hostif_held_commands", self.held_commands as f64),
            DeviceCounter::new("hostif_refused_commands", self.refused_commands as f64),
            DeviceCounter::new("hostif_link_down_busy_ns", self.link.down_busy_ns as f64),
            DeviceCounter::new("hostif_link_up_busy_ns", self.link.up_busy_ns as f64),
            DeviceCounter::new("hostif_controller_busy_ns", self.controller_busy_ns as f64),
        ];
        if self.queues.len() > 1 {
            counters.extend(self.queues.iter().enumerate().map(|(q, queue)| {
                DeviceCounter::new(
                    format!("hostif_queue_{q}_fetched_commands"),
                    queue.fetched as f64,
                )
            }));
        }
        counters
    }
}

#[cfg(test)]
mod counter_docs {
    /// The model's page lists exactly these counters (`STORSIM_BLESS_DOCS=1` rewrites it).
    #[test]
    fn the_page_lists_exactly_the_descriptors() {
        let tables = storsim_core::conformance::counter_tables(&[
            ("hostif", super::COUNTERS),
            ("hostif-queues", super::QUEUE_COUNTERS),
        ]);
        storsim_testenv::check_counter_tables("docs/models/host-interface.md", &tables).unwrap();
    }
}
