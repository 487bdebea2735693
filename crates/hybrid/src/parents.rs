//! The host requests a hybrid holds, shared by both configurations: a fixed pool of slots (the
//! device's queue depth), the order they wait to be dispatched in, and the completions ready
//! for the next `advance`.

use std::collections::VecDeque;
use storsim_core::{Completion, DeviceError, Request, SimTime, Status};

/// One host request and the child requests it became.
pub(crate) struct Parent {
    pub(crate) request: Request,
    /// Submission order, which breaks ties between completions at the same instant.
    pub(crate) seq: u64,
    pub(crate) service_start: SimTime,
    pub(crate) children_left: u32,
    /// Every child request has been issued; the parent completes with its last child.
    pub(crate) dispatched: bool,
    /// Whether the flash (0) and the disk (1) served part of it.
    pub(crate) sides: [bool; 2],
    pub(crate) finish: SimTime,
    /// The first error a child request of it completed with; the host request fails if any
    /// of its parts did.
    pub(crate) status: Status,
}

impl Parent {
    /// 0 when only the flash served it, 1 when only the disk did, 2 when both did (or neither,
    /// as for an empty flush).
    pub(crate) fn served_index(&self) -> usize {
        match self.sides {
            [true, false] => 0,
            [false, true] => 1,
            _ => 2,
        }
    }
}

pub(crate) struct Parents {
    slots: Vec<Option<Parent>>,
    free: Vec<usize>,
    next_seq: u64,
    /// Slots accepted but not yet dispatched, in arrival order.
    pub(crate) waiting: VecDeque<usize>,
    /// (finish, seq, completion) of the requests completed since the last `drain`.
    finished: Vec<(SimTime, u64, Completion)>,
}

impl Parents {
    pub(crate) fn new(queue_depth: usize) -> Self {
        Parents {
            slots: (0..queue_depth).map(|_| None).collect(),
            free: (0..queue_depth).rev().collect(),
            next_seq: 0,
            waiting: VecDeque::with_capacity(queue_depth),
            finished: Vec::new(),
        }
    }

    /// Takes a host request into a free slot and queues it for dispatch.
    pub(crate) fn admit(&mut self, now: SimTime, request: Request) -> Result<usize, DeviceError> {
        let Some(slot) = self.free.pop() else {
            return Err(DeviceError::QueueFull {
                queue_depth: self.slots.len(),
            });
        };
        self.slots[slot] = Some(Parent {
            request,
            seq: self.next_seq,
            service_start: now,
            children_left: 0,
            dispatched: false,
            sides: [false; 2],
            finish: now,
            status: Status::Ok,
        });
        self.next_seq += 1;
        self.waiting.push_back(slot);
        Ok(slot)
    }

    pub(crate) fn get(&self, slot: usize) -> &Parent {
        self.slots[slot].as_ref().expect("a live parent")
    }

    pub(crate) fn get_mut(&mut self, slot: usize) -> &mut Parent {
        self.slots[slot].as_mut().expect("a live parent")
    }

    /// Frees the slot and records its completion; returns the parent for the caller's counts.
    pub(crate) fn complete(&mut self, slot: usize) -> Parent {
        let p = self.slots[slot].take().expect("a live parent");
        self.free.push(slot);
        let finish = p.finish.max(p.service_start);
        self.finished.push((
            finish,
            p.seq,
            Completion {
                request: p.request,
                service_start: p.service_start,
                finish,
                status: p.status,
            },
        ));
        p
    }

    /// The earliest completion not yet handed out.
    pub(crate) fn next_finish(&self) -> Option<SimTime> {
        self.finished.iter().map(|f| f.0).min()
    }

    /// Hands out the completions in finishing order, ties in submission order.
    pub(crate) fn drain(&mut self, done: &mut Vec<Completion>) {
        self.finished.sort_by_key(|f| (f.0, f.1));
        done.extend(self.finished.drain(..).map(|f| f.2));
    }
}
