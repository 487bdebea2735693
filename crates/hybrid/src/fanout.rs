//! What both configurations share: two child devices, a bounded FIFO of child requests
//! waiting for each child's queue, the child requests in flight, and an optional record of
//! where every child request went.

use std::collections::{BTreeMap, VecDeque};
use storsim_core::{
    BlockWear, Completion, Described, Device, DeviceCounter, DeviceError, DevicePart, Op, Request,
    SimTime, Status,
};

/// Which child a request goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Side {
    Flash,
    Disk,
}

impl Side {
    /// 0 for the flash, 1 for the disk: the row of per-side tables.
    pub(crate) fn index(self) -> usize {
        match self {
            Side::Flash => 0,
            Side::Disk => 1,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Side::Flash => "flash",
            Side::Disk => "disk",
        }
    }
}

/// Why a child request exists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RouteCause {
    /// Part of host request `id`.
    Host { id: u64 },
    /// A flush's read of dirty blocks from the flash.
    FlushRead,
    /// A flush's write of those blocks to the disk.
    FlushWrite,
    /// Read admission: the copy into the flash of whole blocks that host request `id` read
    /// from the disk. The bytes are those that read returned.
    Promote { id: u64 },
}

/// One child request as the controller decided it, in the order of decision (which, per
/// child, is the order of submission). `host_offset_bytes` is where the bytes live in the
/// host's address space; `device_offset_bytes` where they are on the child.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Route {
    pub cause: RouteCause,
    pub op: Op,
    pub side: Side,
    pub host_offset_bytes: u64,
    pub device_offset_bytes: u64,
    pub len_bytes: u64,
}

/// A bounded record of routes, for tests and for users who want to see placement decisions.
/// Off unless enabled; entries past the capacity are counted, not stored.
#[derive(Default)]
pub(crate) struct RouteLog {
    entries: Vec<Route>,
    capacity: usize,
    dropped: u64,
}

impl RouteLog {
    pub(crate) fn enable(&mut self, capacity: usize) {
        self.capacity = capacity;
        self.entries = Vec::with_capacity(capacity.min(1 << 16));
    }

    pub(crate) fn record(&mut self, route: Route) {
        if self.capacity == 0 {
            return;
        }
        if self.entries.len() < self.capacity {
            self.entries.push(route);
        } else {
            self.dropped += 1;
        }
    }

    /// Moves the recorded routes to `out`; returns how many were dropped since the last drain.
    pub(crate) fn drain(&mut self, out: &mut Vec<Route>) -> u64 {
        out.append(&mut self.entries);
        std::mem::take(&mut self.dropped)
    }
}

/// A child request that finished, or that the child refused (then `error` says why and
/// `completion.finish` is the refusal instant).
pub(crate) struct ChildDone<T> {
    pub side: Side,
    pub completion: Completion,
    pub tag: T,
    pub error: Option<DeviceError>,
}

struct Child<T> {
    device: Box<dyn Device>,
    pending: VecDeque<(Request, T)>,
    in_flight: BTreeMap<u64, T>,
    next_id: u64,
}

/// Two children and their bounded queues. `T` says what a child request is for.
pub(crate) struct Fanout<T> {
    children: [Child<T>; 2],
    pending_capacity: usize,
    buf: Vec<Completion>,
    /// Finished or refused child requests, in the order they finished.
    pub done: VecDeque<ChildDone<T>>,
    refusals: u64,
}

impl<T> Fanout<T> {
    /// `pending_capacity` bounds each child's waiting queue.
    pub(crate) fn new(
        flash: Box<dyn Device>,
        disk: Box<dyn Device>,
        pending_capacity: usize,
    ) -> Self {
        let child = |device: Box<dyn Device>| Child {
            device,
            pending: VecDeque::with_capacity(pending_capacity),
            in_flight: BTreeMap::new(),
            next_id: 0,
        };
        Fanout {
            children: [child(flash), child(disk)],
            pending_capacity,
            buf: Vec::new(),
            done: VecDeque::new(),
            refusals: 0,
        }
    }

    pub(crate) fn child(&self, side: Side) -> &dyn Device {
        self.children[side.index()].device.as_ref()
    }

    pub(crate) fn pending_len(&self, side: Side) -> usize {
        self.children[side.index()].pending.len()
    }

    pub(crate) fn refusals(&self) -> u64 {
        self.refusals
    }

    /// Queues a child request and submits whatever the child accepts. The caller must have
    /// checked that there is room.
    pub(crate) fn push(
        &mut self,
        side: Side,
        now: SimTime,
        op: Op,
        offset_bytes: u64,
        len_bytes: u64,
        tag: T,
    ) {
        let child = &mut self.children[side.index()];
        assert!(
            child.pending.len() < self.pending_capacity,
            "the {} child's pending queue overflowed its bound of {}",
            side.name(),
            self.pending_capacity
        );
        let request = Request {
            id: child.next_id,
            op,
            offset_bytes,
            len_bytes,
            arrival: now,
            flow: 0,
        };
        child.next_id += 1;
        child.pending.push_back((request, tag));
        self.pump(now);
    }

    /// Submits waiting child requests, in order, until a child refuses with `QueueFull`.
    pub(crate) fn pump(&mut self, now: SimTime) {
        for side in [Side::Flash, Side::Disk] {
            let child = &mut self.children[side.index()];
            while let Some((request, _)) = child.pending.front() {
                let request = *request;
                match child.device.submit(now, request) {
                    Ok(()) => {
                        let (_, tag) = child.pending.pop_front().expect("front exists");
                        child.in_flight.insert(request.id, tag);
                    }
                    Err(DeviceError::QueueFull { .. }) => break,
                    Err(error) => {
                        // A refusal other than a full queue (a failed child) still ends the
                        // child request, so that its host request completes exactly once.
                        let (_, tag) = child.pending.pop_front().expect("front exists");
                        self.refusals += 1;
                        self.done.push_back(ChildDone {
                            side,
                            completion: Completion {
                                request,
                                service_start: now,
                                finish: now,
                                status: Status::Ok,
                            },
                            tag,
                            error: Some(error),
                        });
                    }
                }
            }
        }
    }

    pub(crate) fn next_deadline(&self) -> Option<SimTime> {
        let a = self.children[0].device.next_deadline();
        let b = self.children[1].device.next_deadline();
        match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Moves both children to `now` and queues what they finished.
    pub(crate) fn advance(&mut self, now: SimTime) {
        for side in [Side::Flash, Side::Disk] {
            let child = &mut self.children[side.index()];
            self.buf.clear();
            child.device.advance(now, &mut self.buf);
            for completion in self.buf.drain(..) {
                // A child completing a request it was never given is its bug, not input.
                let tag = child
                    .in_flight
                    .remove(&completion.request.id)
                    .expect("a child completed a request it was not given");
                self.done.push_back(ChildDone {
                    side,
                    completion,
                    tag,
                    error: None,
                });
            }
        }
    }

    /// Each child's flash arrays' erase counts, their units under the child's side name (as
    /// its counters' prefix).
    pub(crate) fn child_block_wear(&self) -> Vec<BlockWear> {
        [Side::Flash, Side::Disk]
            .into_iter()
            .flat_map(|side| {
                self.children[side.index()]
                    .device
                    .block_wear()
                    .into_iter()
                    .map(move |w| w.within(side.name()))
            })
            .collect()
    }

    /// What each child's counters are, under the side's prefix as [`Fanout::child_counters`]
    /// names them.
    pub(crate) fn child_descriptors(&self, out: &mut Vec<Described>) {
        for side in [Side::Flash, Side::Disk] {
            let prefix = format!("{}_", side.name());
            let child = &self.children[side.index()];
            out.extend(
                child
                    .device
                    .counter_descriptors()
                    .iter()
                    .map(|d| d.within(&prefix)),
            );
        }
    }

    /// Each child's model (and its parts in turn), under the side's prefix as
    /// [`Fanout::child_counters`] names them.
    pub(crate) fn child_parts(&self) -> Vec<DevicePart> {
        [Side::Flash, Side::Disk]
            .into_iter()
            .flat_map(|side| {
                let child = &self.children[side.index()];
                DevicePart::child(format!("{}_", side.name()), &*child.device)
            })
            .collect()
    }

    /// Each child's counters, prefixed with its side.
    pub(crate) fn child_counters(&self, out: &mut Vec<DeviceCounter>) {
        for side in [Side::Flash, Side::Disk] {
            let child = &self.children[side.index()];
            for c in child.device.counters() {
                out.push(DeviceCounter::new(
                    format!("{}_{}", side.name(), c.name),
                    c.value,
                ));
            }
        }
    }
}

/// The checks both configurations make before taking a host request: a failed child has
/// failed the device, the range must lie inside it, and only a flush may be empty.
pub(crate) fn check_submission(
    failed: Option<&str>,
    request: &Request,
    capacity_bytes: u64,
) -> Result<(), DeviceError> {
    if let Some(reason) = failed {
        return Err(DeviceError::Failed {
            reason: reason.to_string(),
        });
    }
    storsim_core::check_range(request, capacity_bytes)?;
    if request.len_bytes == 0 && request.op != Op::Flush {
        return Err(DeviceError::Invalid {
            reason: format!("a zero-length {}", request.op),
        });
    }
    Ok(())
}
