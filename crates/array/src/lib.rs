//! RAID-0 striping, RAID-1 mirroring, and RAID-5 and RAID-6 with rotating parity over any
//! child devices (SSDs, disks, black-box models or other arrays, mixed freely). See
//! docs/models/array.md. RAID-0 and RAID-1 are [`ArrayDevice`]; RAID-5 and RAID-6, whose
//! writes read before they write and which rebuild onto a spare, are [`ParityArray`].
//!
//! An [`ArrayDevice`] splits each host request into child requests ("pieces"), hands them to
//! its children and completes the host request when the last piece completes: its finish is
//! the latest piece's finish and its service start the earliest piece's start. The array adds
//! no time of its own; everything it reports comes from the children's models.
//!
//! A child that is full (it refuses with `QueueFull`) gets the piece later: the array keeps it
//! in that child's pending queue, in arrival order, and submits it at the instant the child
//! completes something. Each outstanding host request has at most one piece per child, so a
//! pending queue never holds more than the array's queue depth.
//!
//! A child that fails ends a RAID-0 array (it refuses everything after); a RAID-1 array runs
//! on the surviving copies and fails when none is left. A request is refused whole when its
//! first piece cannot be placed; a later piece that nothing can serve is counted as lost, and
//! the array fails right there, so the run's results say so.
//!
//! A child may also complete a piece with an error (a faults layer over it). RAID-0 has no
//! other copy, so the host request fails. A RAID-1 mirror does what Linux md does: a member
//! that fails a write, trim or flush is marked failed, the host request completes from the
//! copies that succeeded, and the array goes on degraded; a read that fails is read again from
//! another copy. Only the last working member is never marked failed: its errors reach the
//! host, as md keeps its last device.

mod mapping;
mod parity;

pub use parity::{
    MemberFailure, ParityArray, ParityLayout, ParityParams, Role, DEFAULT_REBUILD_RATE_BYTES_PER_S,
    PARITY_COUNTERS, SPARE_COUNTERS,
};

use std::collections::{BTreeMap, HashMap, VecDeque};
use storsim_core::{
    check_range, BlockWear, Completion, CounterDescriptor, Described, Device, DeviceCounter,
    DeviceError, DevicePart, Op, Request, Scope, SimTime, Status, Unit, QUEUE_DEPTH_MAX,
    SECTOR_BYTES,
};

use mapping::{raid0_capacity_bytes, raid0_pieces, Piece};

/// Which child serves a RAID-1 read. Every copy holds the same bytes, so the choice only
/// affects timing; both policies are deterministic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadPolicy {
    /// The surviving child with the fewest pieces outstanding (in the child plus waiting for
    /// it); ties go to the lowest index. Adapts to children of different speeds.
    LeastOutstanding,
    /// The surviving children in turn, starting with child 0.
    RoundRobin,
}

/// The array's organisation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RaidLevel {
    /// Striping: stripe unit k of the array lives on child k mod n, in row k / n.
    Raid0 { stripe_unit_bytes: u64 },
    /// Mirroring: every child holds the whole array; writes go to all, reads to one.
    Raid1 { read_policy: ReadPolicy },
    /// Rotating single parity (P), Linux md's left-symmetric layout: a [`ParityArray`].
    Raid5(ParityParams),
    /// Rotating double parity (P and Q), Linux md's left-symmetric layout: a [`ParityArray`].
    Raid6(ParityParams),
}

impl RaidLevel {
    pub fn name(self) -> &'static str {
        match self {
            RaidLevel::Raid0 { .. } => "raid0",
            RaidLevel::Raid1 { .. } => "raid1",
            RaidLevel::Raid5(_) => "raid5",
            RaidLevel::Raid6(_) => "raid6",
        }
    }
}

/// Everything the array needs besides its children; plain data that the config layer fills in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArrayParams {
    pub level: RaidLevel,
    /// Host requests outstanding at once (accepted and not yet reported complete).
    pub queue_depth: usize,
}

/// One host request in the array, from acceptance until its completion is reported.
struct Parent {
    request: Request,
    /// Acceptance order, which breaks ties between completions at the same instant.
    seq: u64,
    /// Pieces not yet completed, dropped or lost.
    remaining: usize,
    service_start: Option<SimTime>,
    finish: SimTime,
    /// The first error a child completed a piece with. A striped request fails if any piece
    /// failed; a mirrored write, trim or flush fails only if no copy that succeeded is on a
    /// member still in the array when it finishes (`ArrayDevice::ok_members`).
    status: Status,
}

/// A host request whose pieces are all done, waiting for `advance` to report it.
struct Finished {
    seq: u64,
    slot: usize,
    completion: Completion,
}

#[derive(Default)]
pub(crate) struct ChildCounts {
    pub(crate) pieces: u64,
    pub(crate) read_bytes: u64,
    pub(crate) write_bytes: u64,
    pub(crate) trim_bytes: u64,
    pub(crate) flushes: u64,
    pub(crate) queued_pieces: u64,
}

impl ChildCounts {
    /// Every count with its counter's name (after the `child{i}_` prefix), in the order the
    /// arrays list them.
    pub(crate) fn named(&self) -> [(&'static str, u64); 6] {
        [
            ("pieces", self.pieces),
            ("read_bytes", self.read_bytes),
            ("write_bytes", self.write_bytes),
            ("trim_bytes", self.trim_bytes),
            ("flushes", self.flushes),
            ("queued_pieces", self.queued_pieces),
        ]
    }
}

struct Child {
    device: Box<dyn Device>,
    /// Pieces the child refused with `QueueFull`, in the order the array accepted them.
    pending: VecDeque<Request>,
    /// Pieces in the child plus pieces pending for it.
    outstanding: usize,
    /// Why the child failed, once it has.
    failed: Option<String>,
    counts: ChildCounts,
}

#[derive(Clone, Default)]
struct ArrayCounts {
    requests: u64,
    split_requests: u64,
    pieces: u64,
    queued_pieces: u64,
    redirected_reads: u64,
    degraded_pieces: u64,
    lost_pieces: u64,
    member_errors: u64,
    member_failures: u64,
    degraded_writes: u64,
}

/// What to do with a piece its child refused with an error other than `QueueFull`.
enum Recovery {
    /// A RAID-1 read: another surviving copy serves it.
    Redirect(usize),
    /// A RAID-1 write, trim or flush: the surviving copies carry it, this copy is gone.
    Drop,
    /// Nothing can serve the piece.
    Fail,
}

pub struct ArrayDevice {
    level: RaidLevel,
    capacity_bytes: u64,
    children: Vec<Child>,
    /// Host requests by slot; a slot is free from the report of one request to the next
    /// acceptance.
    parents: Vec<Option<Parent>>,
    free_slots: Vec<usize>,
    /// Child request id -> parent slot, for every piece in a child or pending for one.
    pieces: HashMap<u64, usize>,
    next_piece_id: u64,
    next_seq: u64,
    finished: Vec<Finished>,
    round_robin_next: usize,
    /// Why the array accepts no more requests, once it does not.
    failed: Option<String>,
    plan: Vec<Piece>,
    child_done: Vec<Completion>,
    counts: ArrayCounts,
    /// RAID-1 reads that failed on a copy (an error from a faults layer), by piece id: how
    /// many copies they have been sent to again. At most one entry per piece.
    reread: BTreeMap<u64, usize>,
    /// For each parent slot, the members that completed a piece of its mirrored write, trim or
    /// flush without error. Counted when the request finishes, not when each copy does: a
    /// member marked failed in between (by another request's error) no longer holds a copy the
    /// array can read. One list per slot, kept across requests, so counting allocates nothing
    /// once the slots have been used.
    ok_members: Vec<Vec<usize>>,
    /// Whether `counters` lists the counters of members' errors (`member_errors`,
    /// `member_failures`, `degraded_writes`); see [`ArrayDevice::enable_fault_counters`].
    fault_counters: bool,
}

impl ArrayDevice {
    /// An array over `children`, in order. Fails when the parameters cannot describe an array
    /// (no children, a stripe unit that is not a whole number of sectors, a child smaller than
    /// one stripe unit, a queue depth outside 1..=`QUEUE_DEPTH_MAX`).
    pub fn new(params: ArrayParams, children: Vec<Box<dyn Device>>) -> Result<Self, String> {
        if children.is_empty() {
            return Err("an array needs at least one child device".into());
        }
        if params.queue_depth == 0 || params.queue_depth > QUEUE_DEPTH_MAX as usize {
            return Err(format!(
                "queue depth must be 1..={QUEUE_DEPTH_MAX}, got {}",
                params.queue_depth
            ));
        }
        let child_min_bytes = children
            .iter()
            .map(|c| c.capacity_bytes())
            .min()
            .expect("at least one child");
        let capacity_bytes = match params.level {
            RaidLevel::Raid0 { stripe_unit_bytes } => {
                if stripe_unit_bytes == 0 || stripe_unit_bytes % SECTOR_BYTES != 0 {
                    return Err(format!(
                        "the stripe unit must be a positive multiple of {SECTOR_BYTES} bytes, \
                         got {stripe_unit_bytes}"
                    ));
                }
                let capacity =
                    raid0_capacity_bytes(child_min_bytes, stripe_unit_bytes, children.len())
                        .ok_or_else(|| {
                            format!(
                                "{} children of {child_min_bytes} bytes do not fit in a \
                                 64-bit byte count",
                                children.len()
                            )
                        })?;
                if capacity == 0 {
                    return Err(format!(
                        "the smallest child ({child_min_bytes} bytes) holds less than one \
                         stripe unit ({stripe_unit_bytes} bytes)"
                    ));
                }
                capacity
            }
            RaidLevel::Raid1 { .. } => child_min_bytes,
            RaidLevel::Raid5(_) | RaidLevel::Raid6(_) => {
                return Err(format!(
                    "{} is a ParityArray, not an ArrayDevice",
                    params.level.name()
                ))
            }
        };
        let depth = params.queue_depth;
        let n = children.len();
        Ok(ArrayDevice {
            level: params.level,
            capacity_bytes,
            children: children
                .into_iter()
                .map(|device| Child {
                    device,
                    pending: VecDeque::with_capacity(depth),
                    outstanding: 0,
                    failed: None,
                    counts: ChildCounts::default(),
                })
                .collect(),
            parents: (0..depth).map(|_| None).collect(),
            free_slots: (0..depth).rev().collect(),
            pieces: HashMap::with_capacity(depth.saturating_mul(n).min(1 << 20)),
            next_piece_id: 0,
            next_seq: 0,
            finished: Vec::with_capacity(depth),
            round_robin_next: 0,
            failed: None,
            plan: Vec::with_capacity(n),
            child_done: Vec::new(),
            counts: ArrayCounts::default(),
            reread: BTreeMap::new(),
            ok_members: (0..depth).map(|_| Vec::new()).collect(),
            fault_counters: false,
        })
    }

    /// Lists the counters of members' errors among the array's counters. A driver turns them
    /// on when a faults layer sits over a child (the only way a child completes a piece with
    /// an error); an array without one lists the counters it always had, so its results keep
    /// their bytes.
    pub fn enable_fault_counters(&mut self) {
        self.fault_counters = true;
    }

    pub fn level(&self) -> RaidLevel {
        self.level
    }

    /// The children, in array order.
    pub fn children(&self) -> impl Iterator<Item = &dyn Device> {
        self.children.iter().map(|c| c.device.as_ref())
    }

    fn survivors(&self) -> usize {
        self.children.iter().filter(|c| c.failed.is_none()).count()
    }

    /// The array's own counters, with their names, in the order [`Device::counters`] lists
    /// them.
    fn own_counters(&self, f: &mut dyn FnMut(&'static str, f64)) {
        let c = &self.counts;
        let failed_children = (self.children.len() - self.survivors()) as f64;
        for (name, value) in [
            ("children", self.children.len() as f64),
            ("requests", c.requests as f64),
            ("split_requests", c.split_requests as f64),
            ("pieces", c.pieces as f64),
            ("queued_pieces", c.queued_pieces as f64),
            ("redirected_reads", c.redirected_reads as f64),
            ("degraded_pieces", c.degraded_pieces as f64),
            ("lost_pieces", c.lost_pieces as f64),
            ("failed_children", failed_children),
        ] {
            f(name, value);
        }
        if self.fault_counters {
            f("member_errors", c.member_errors as f64);
            f("member_failures", c.member_failures as f64);
            f("degraded_writes", c.degraded_writes as f64);
        }
    }

    /// The child that serves the next RAID-1 read, or `None` when every child has failed.
    fn choose_reader(&mut self, policy: ReadPolicy) -> Option<usize> {
        let n = self.children.len();
        match policy {
            ReadPolicy::LeastOutstanding => (0..n)
                .filter(|&i| self.children[i].failed.is_none())
                .min_by_key(|&i| (self.children[i].outstanding, i)),
            ReadPolicy::RoundRobin => {
                let i = (0..n)
                    .map(|k| (self.round_robin_next + k) % n)
                    .find(|&i| self.children[i].failed.is_none())?;
                self.round_robin_next = (i + 1) % n;
                Some(i)
            }
        }
    }

    /// Fills `self.plan` with the pieces of `request`. `None` when nothing can serve it.
    fn split(&mut self, request: &Request) -> Option<()> {
        self.plan.clear();
        let n = self.children.len();
        let whole = |child| Piece {
            child,
            offset_bytes: request.offset_bytes,
            len_bytes: request.len_bytes,
        };
        match (self.level, request.op) {
            // A flush carries no range: every child makes its own writes durable.
            (_, Op::Flush) => self.plan.extend((0..n).map(|child| Piece {
                child,
                offset_bytes: 0,
                len_bytes: 0,
            })),
            (RaidLevel::Raid0 { stripe_unit_bytes }, _) => {
                let pieces = raid0_pieces(
                    request.offset_bytes,
                    request.len_bytes,
                    stripe_unit_bytes,
                    n,
                );
                self.plan.extend(pieces);
            }
            (RaidLevel::Raid1 { read_policy }, Op::Read) => {
                let child = self.choose_reader(read_policy)?;
                self.plan.push(whole(child));
            }
            (RaidLevel::Raid1 { .. }, Op::Write | Op::Trim) => {
                self.plan.extend((0..n).map(whole));
            }
            (RaidLevel::Raid5(_) | RaidLevel::Raid6(_), _) => {
                unreachable!("ArrayDevice::new refuses parity levels")
            }
        }
        Some(())
    }

    /// Marks child `i` failed and, when the array can no longer serve its whole range, the
    /// array too.
    fn mark_child_failed(&mut self, i: usize, reason: &str) {
        if self.children[i].failed.is_none() {
            self.children[i].failed = Some(reason.to_string());
        }
        let array_fails = match self.level {
            RaidLevel::Raid0 { .. } | RaidLevel::Raid5(_) | RaidLevel::Raid6(_) => true,
            RaidLevel::Raid1 { .. } => self.survivors() == 0,
        };
        if array_fails && self.failed.is_none() {
            self.failed = Some(format!("child {i} failed: {reason}"));
        }
    }

    fn recovery(&mut self, error: &DeviceError, piece: &Request) -> Recovery {
        let DeviceError::Failed { .. } = error else {
            return Recovery::Fail;
        };
        match self.level {
            RaidLevel::Raid1 { read_policy } if self.survivors() > 0 => {
                if piece.op == Op::Read {
                    match self.choose_reader(read_policy) {
                        Some(j) => Recovery::Redirect(j),
                        None => Recovery::Fail,
                    }
                } else {
                    Recovery::Drop
                }
            }
            _ => Recovery::Fail,
        }
    }

    /// Hands `piece` of the host request in `slot` to child `i` at `now`: submitted, or
    /// pending when the child is full. When the child refuses it otherwise, the piece is
    /// redirected or dropped (RAID-1 with survivors) or, when nothing can serve it, either
    /// refused (`refusable`: no piece of its request is accepted yet, so the whole request can
    /// still be refused) or lost, which fails the array. Returns whether the piece was
    /// accepted by a child or a pending queue.
    fn place(
        &mut self,
        now: SimTime,
        mut i: usize,
        mut piece: Request,
        slot: usize,
        refusable: bool,
    ) -> Result<bool, DeviceError> {
        loop {
            piece.arrival = now;
            let child = &mut self.children[i];
            let result = if let Some(reason) = &child.failed {
                Err(DeviceError::Failed {
                    reason: reason.clone(),
                })
            } else if !child.pending.is_empty() {
                // Earlier pieces are waiting for this child: this one goes behind them.
                Err(DeviceError::QueueFull {
                    queue_depth: child.device.queue_depth(),
                })
            } else {
                child.device.submit(now, piece)
            };
            match result {
                Ok(()) => {
                    child.outstanding += 1;
                    count_piece(&mut child.counts, &piece);
                    self.pieces.insert(piece.id, slot);
                    return Ok(true);
                }
                Err(DeviceError::QueueFull { .. }) => {
                    // Each outstanding host request has at most one piece per child, so a
                    // pending queue never outgrows the array's depth.
                    assert!(
                        child.pending.len() < self.parents.len(),
                        "child {i}'s pending queue outgrew the array's queue depth"
                    );
                    child.pending.push_back(piece);
                    child.outstanding += 1;
                    child.counts.queued_pieces += 1;
                    self.counts.queued_pieces += 1;
                    self.pieces.insert(piece.id, slot);
                    return Ok(true);
                }
                Err(error) => {
                    if let DeviceError::Failed { reason } = &error {
                        let reason = reason.clone();
                        self.mark_child_failed(i, &reason);
                    }
                    match self.recovery(&error, &piece) {
                        Recovery::Redirect(j) => {
                            self.counts.redirected_reads += 1;
                            i = j;
                        }
                        Recovery::Drop => {
                            self.counts.degraded_pieces += 1;
                            self.piece_gone(slot, piece.id, now);
                            return Ok(false);
                        }
                        Recovery::Fail if refusable => return Err(error),
                        Recovery::Fail => {
                            if self.failed.is_none() {
                                self.failed = Some(format!(
                                    "child {i} refused part of accepted request {}: {error}",
                                    self.parents[slot].as_ref().map_or(0, |p| p.request.id)
                                ));
                            }
                            self.counts.lost_pieces += 1;
                            self.piece_gone(slot, piece.id, now);
                            return Ok(false);
                        }
                    }
                }
            }
        }
    }

    /// A piece of the request in `slot` is finished (completed at `finish`, or given up then).
    fn piece_gone(&mut self, slot: usize, piece_id: u64, finish: SimTime) {
        self.pieces.remove(&piece_id);
        let parent = self.parents[slot]
            .as_mut()
            .expect("a piece belongs to an outstanding request");
        assert!(
            parent.remaining > 0,
            "a request lost more pieces than it had"
        );
        parent.remaining -= 1;
        parent.finish = parent.finish.max(finish);
        if parent.remaining == 0 {
            self.finish_parent(slot);
        }
    }

    fn finish_parent(&mut self, slot: usize) {
        let parent = self.parents[slot].as_ref().expect("an outstanding request");
        // A mirrored write, trim or flush is done when one copy is: the members that failed
        // it are out of the array, and the copies that succeeded carry it.
        let mirrored =
            matches!(self.level, RaidLevel::Raid1 { .. }) && parent.request.op != Op::Read;
        let ok_copies = self.ok_members[slot]
            .iter()
            .filter(|&&i| self.children[i].failed.is_none())
            .count();
        let status = if mirrored && ok_copies > 0 {
            Status::Ok
        } else {
            parent.status
        };
        if mirrored && status.is_ok() && ok_copies < self.children.len() {
            self.counts.degraded_writes += 1;
        }
        let completion = Completion {
            request: parent.request,
            service_start: parent.service_start.unwrap_or(parent.finish),
            finish: parent.finish,
            status,
        };
        assert!(
            completion.request.arrival <= completion.service_start
                && completion.service_start <= completion.finish,
            "request {} completed out of order",
            completion.request.id
        );
        self.finished.push(Finished {
            seq: parent.seq,
            slot,
            completion,
        });
    }

    /// Submits what waits for child `i`, in order, while it accepts.
    fn drain_pending(&mut self, i: usize, now: SimTime) {
        while let Some(&front) = self.children[i].pending.front() {
            let piece = Request {
                arrival: now,
                ..front
            };
            let child = &mut self.children[i];
            let result = match &child.failed {
                Some(reason) => Err(DeviceError::Failed {
                    reason: reason.clone(),
                }),
                None => child.device.submit(now, piece),
            };
            match result {
                Ok(()) => {
                    child.pending.pop_front();
                    count_piece(&mut child.counts, &piece);
                }
                Err(DeviceError::QueueFull { .. }) => break,
                Err(error) => {
                    child.pending.pop_front();
                    child.outstanding -= 1;
                    let slot = self.pieces[&piece.id];
                    if let DeviceError::Failed { reason } = &error {
                        let reason = reason.clone();
                        self.mark_child_failed(i, &reason);
                    }
                    match self.recovery(&error, &piece) {
                        Recovery::Redirect(j) => {
                            self.counts.redirected_reads += 1;
                            // An accepted request cannot be refused any more, so the result
                            // is always Ok.
                            let _ = self.place(now, j, piece, slot, false);
                        }
                        Recovery::Drop => {
                            self.counts.degraded_pieces += 1;
                            self.piece_gone(slot, piece.id, now);
                        }
                        Recovery::Fail => {
                            if self.failed.is_none() {
                                self.failed = Some(format!(
                                    "child {i} refused part of accepted request: {error}"
                                ));
                            }
                            self.counts.lost_pieces += 1;
                            self.piece_gone(slot, piece.id, now);
                        }
                    }
                }
            }
        }
    }

    /// Moves every child to `now`, one instant at a time, so that a piece waiting for a full
    /// child is submitted at the instant the child completes something rather than later.
    fn step_to(&mut self, now: SimTime) {
        loop {
            let due = self
                .children
                .iter()
                .filter_map(|c| c.device.next_deadline())
                .min();
            let t = match due {
                Some(t) if t <= now => t,
                _ => break,
            };
            for i in 0..self.children.len() {
                let due_now = matches!(self.children[i].device.next_deadline(), Some(d) if d <= t);
                if !due_now {
                    continue;
                }
                let mut done = std::mem::take(&mut self.child_done);
                self.children[i].device.advance(t, &mut done);
                for c in done.drain(..) {
                    self.children[i].outstanding -= 1;
                    let slot = *self
                        .pieces
                        .get(&c.request.id)
                        .expect("a child completed a piece the array gave it");
                    let parent = self.parents[slot]
                        .as_mut()
                        .expect("a piece belongs to an outstanding request");
                    parent.service_start = Some(
                        parent
                            .service_start
                            .map_or(c.service_start, |s| s.min(c.service_start)),
                    );
                    if !c.status.is_ok() {
                        self.counts.member_errors += 1;
                        self.fail_member_on_error(i, &c);
                    }
                    if self.read_other_copy(t, i, &c, slot) {
                        continue;
                    }
                    let parent = self.parents[slot]
                        .as_mut()
                        .expect("a piece belongs to an outstanding request");
                    if c.status.is_ok() {
                        if matches!(self.level, RaidLevel::Raid1 { .. })
                            && parent.request.op != Op::Read
                        {
                            self.ok_members[slot].push(i);
                        }
                    } else if parent.status.is_ok() {
                        parent.status = c.status;
                    }
                    self.reread.remove(&c.request.id);
                    self.piece_gone(slot, c.request.id, c.finish);
                }
                self.child_done = done;
                self.drain_pending(i, t);
            }
        }
    }

    /// A RAID-1 member that completed piece `c` with an error is marked failed, as md marks a
    /// mirror's member faulty, when the error says its copy can no longer be trusted: any
    /// failed write, trim or flush (its copy now differs from the others), or a read that
    /// found the whole device failed. A read's media error or timeout leaves the member in
    /// (the read is served by another copy). The last working member is never marked failed:
    /// the array keeps it, and its errors reach the host.
    fn fail_member_on_error(&mut self, i: usize, c: &Completion) {
        let RaidLevel::Raid1 { .. } = self.level else {
            return;
        };
        let untrusted = c.request.op != Op::Read || c.status == Status::DeviceFailed;
        if !untrusted || self.children[i].failed.is_some() || self.survivors() == 1 {
            return;
        }
        let reason = format!(
            "it completed a {} with {}",
            c.request.op.name(),
            c.status.name()
        );
        self.mark_child_failed(i, &reason);
        self.counts.member_failures += 1;
    }

    /// A RAID-1 read that failed on child `i` (a media error, a timeout, a failed device) is
    /// read from the next copy that has not failed and has not been tried, as a mirror repairs
    /// a bad sector's read; says whether it was. Counted as a redirected read.
    fn read_other_copy(&mut self, now: SimTime, i: usize, c: &Completion, slot: usize) -> bool {
        if !(matches!(self.level, RaidLevel::Raid1 { .. })
            && c.request.op == Op::Read
            && !c.status.is_ok())
        {
            return false;
        }
        let n = self.children.len();
        let tried = self.reread.get(&c.request.id).copied().unwrap_or(0);
        let Some(j) = (1..n - tried)
            .map(|k| (i + k) % n)
            .find(|&j| self.children[j].failed.is_none())
        else {
            return false;
        };
        self.reread.insert(c.request.id, tried + (j + n - i) % n);
        self.counts.redirected_reads += 1;
        // An accepted request cannot be refused any more, so the result is always Ok; a child
        // that refuses it now loses the piece as any other refusal does.
        let _ = self.place(now, j, c.request, slot, false);
        true
    }

    /// Gives back `slot` after a refused request, undoing its registration.
    fn release_slot(&mut self, slot: usize) {
        self.parents[slot] = None;
        self.free_slots.push(slot);
    }
}

pub(crate) fn count_piece(counts: &mut ChildCounts, piece: &Request) {
    counts.pieces += 1;
    match piece.op {
        Op::Read => counts.read_bytes += piece.len_bytes,
        Op::Write => counts.write_bytes += piece.len_bytes,
        Op::Trim => counts.trim_bytes += piece.len_bytes,
        Op::Flush => counts.flushes += 1,
    }
}

/// The array's own counters, in the order `counters` lists them; each child's own follow
/// under `child{i}_{model}_`, described by the child.
pub const COUNTERS: &[CounterDescriptor] = &[
    CounterDescriptor::new(
        "children",
        Unit::Count,
        "Number of children.",
    ),
    CounterDescriptor::new(
        "requests",
        Unit::Count,
        "Host requests accepted.",
    ),
    CounterDescriptor::new(
        "split_requests",
        Unit::Count,
        "Host requests that became more than one piece.",
    ),
    CounterDescriptor::new(
        "pieces",
        Unit::Count,
        "Child requests created.",
    ),
    CounterDescriptor::new(
        "queued_pieces",
        Unit::Count,
        "Pieces that waited in a pending queue because their child was full.",
    ),
    CounterDescriptor::new(
        "redirected_reads",
        Unit::Count,
        "RAID-1 reads moved to another copy because their child had failed or answered with an error.",
    ),
    CounterDescriptor::new(
        "degraded_pieces",
        Unit::Count,
        "Write, trim or flush pieces dropped for a failed child (RAID-1, 5 and 6).",
    ),
    CounterDescriptor::new(
        "lost_pieces",
        Unit::Count,
        "Pieces nothing could serve; the array failed at the first.",
    ),
    CounterDescriptor::new(
        "failed_children",
        Unit::Count,
        "Children that have failed, or were marked failed for an error.",
    ),
    CounterDescriptor::family(
        "child{}_pieces",
        Unit::Count,
        Scope::PerChild,
        "Pieces sent to the child.",
    ),
    CounterDescriptor::family(
        "child{}_read_bytes",
        Unit::Bytes,
        Scope::PerChild,
        "Bytes read from the child.",
    ),
    CounterDescriptor::family(
        "child{}_write_bytes",
        Unit::Bytes,
        Scope::PerChild,
        "Bytes written to the child.",
    ),
    CounterDescriptor::family(
        "child{}_trim_bytes",
        Unit::Bytes,
        Scope::PerChild,
        "Bytes trimmed on the child.",
    ),
    CounterDescriptor::family(
        "child{}_flushes",
        Unit::Count,
        Scope::PerChild,
        "Flushes sent to the child.",
    ),
    CounterDescriptor::family(
        "child{}_queued_pieces",
        Unit::Count,
        Scope::PerChild,
        "Pieces that waited for room in the child's queue.",
    ),
];

/// The counters of children's errors, listed when a child has a faults layer.
pub const FAULT_COUNTERS: &[CounterDescriptor] = &[
    CounterDescriptor::new(
        "member_errors",
        Unit::Count,
        "Pieces a child completed with an error (with faults under a child only).",
    ),
    CounterDescriptor::new(
        "member_failures",
        Unit::Count,
        "RAID-1, 5 or 6 members marked failed for completing a piece with an error (with faults under a child only).",
    ),
    CounterDescriptor::new(
        "degraded_writes",
        Unit::Count,
        "RAID-1, 5 or 6 host writes, trims and flushes that succeeded with a member missing (with faults under a child only).",
    ),
];

impl Device for ArrayDevice {
    fn counter_descriptors(&self) -> Vec<Described> {
        let mut out: Vec<Described> = Described::all(COUNTERS).collect();
        if self.fault_counters {
            out.extend(Described::all(FAULT_COUNTERS));
        }
        for (i, child) in self.children.iter().enumerate() {
            let prefix = format!("child{i}_{}_", child.device.model_name());
            out.extend(
                child
                    .device
                    .counter_descriptors()
                    .iter()
                    .map(|d| d.within(&prefix)),
            );
        }
        out
    }

    fn parts(&self) -> Vec<DevicePart> {
        self.children
            .iter()
            .enumerate()
            .flat_map(|(i, child)| {
                let prefix = format!("child{i}_{}_", child.device.model_name());
                DevicePart::child(prefix, &*child.device)
            })
            .collect()
    }

    fn model_name(&self) -> &'static str {
        "array"
    }

    fn capacity_bytes(&self) -> u64 {
        self.capacity_bytes
    }

    fn queue_depth(&self) -> usize {
        self.parents.len()
    }

    fn submit(&mut self, now: SimTime, request: Request) -> Result<(), DeviceError> {
        // Children may have completed pieces before `now`; their pending pieces go in at
        // those instants, before this request's pieces.
        self.step_to(now);
        if let Some(reason) = &self.failed {
            return Err(DeviceError::Failed {
                reason: reason.clone(),
            });
        }
        if request.op != Op::Flush {
            check_range(&request, self.capacity_bytes)?;
        }
        if self.free_slots.is_empty() {
            return Err(DeviceError::QueueFull {
                queue_depth: self.parents.len(),
            });
        }
        let round_robin_before = self.round_robin_next;
        let counts_before = self.counts.clone();
        if self.split(&request).is_none() {
            let reason = self
                .failed
                .clone()
                .unwrap_or_else(|| "every child has failed".to_string());
            return Err(DeviceError::Failed { reason });
        }
        let slot = self.free_slots.pop().expect("checked above");
        let pieces = std::mem::take(&mut self.plan);
        self.parents[slot] = Some(Parent {
            request,
            seq: self.next_seq,
            remaining: pieces.len(),
            service_start: None,
            finish: now,
            status: Status::Ok,
        });
        self.ok_members[slot].clear();
        let mut accepted = false;
        let mut result = Ok(());
        for piece in &pieces {
            let child_request = Request {
                id: self.next_piece_id,
                op: request.op,
                offset_bytes: piece.offset_bytes,
                len_bytes: piece.len_bytes,
                arrival: now,
                // A piece belongs to its parent's flow, so a host interface in front of a
                // child (or a flow-aware child) still sees whose request it is.
                flow: request.flow,
            };
            self.next_piece_id += 1;
            match self.place(now, piece.child, child_request, slot, !accepted) {
                Ok(placed) => accepted |= placed,
                Err(error) => {
                    result = Err(error);
                    break;
                }
            }
        }
        let piece_count = pieces.len();
        self.plan = pieces;
        if let Err(error) = result {
            // Nothing of the request reached a child: refusing it leaves them as they were.
            self.round_robin_next = round_robin_before;
            self.counts = counts_before;
            self.finished.retain(|f| f.slot != slot);
            self.release_slot(slot);
            return Err(error);
        }
        self.next_seq += 1;
        self.counts.requests += 1;
        self.counts.pieces += piece_count as u64;
        if piece_count > 1 {
            self.counts.split_requests += 1;
        }
        // A request with no pieces (an empty range on a RAID-0) touches nothing and is done.
        if piece_count == 0 {
            self.finish_parent(slot);
        }
        Ok(())
    }

    fn next_deadline(&self) -> Option<SimTime> {
        let children = self
            .children
            .iter()
            .filter_map(|c| c.device.next_deadline());
        let finished = self.finished.iter().map(|f| f.completion.finish);
        children.chain(finished).min()
    }

    fn advance(&mut self, now: SimTime, done: &mut Vec<Completion>) {
        self.step_to(now);
        // Every finished request finished by now: pieces complete no later than the instant
        // their child was advanced to.
        self.finished
            .sort_unstable_by_key(|f| (f.completion.finish, f.seq));
        for f in self.finished.drain(..) {
            assert!(
                f.completion.finish <= now,
                "a request finished in the future"
            );
            done.push(f.completion);
            self.parents[f.slot] = None;
            self.free_slots.push(f.slot);
        }
    }

    fn counters(&self) -> Vec<DeviceCounter> {
        let mut counters = Vec::new();
        self.own_counters(&mut |name, v| counters.push(DeviceCounter::new(name, v)));
        for (i, child) in self.children.iter().enumerate() {
            counters.extend(
                child
                    .counts
                    .named()
                    .iter()
                    .map(|(name, v)| DeviceCounter::new(format!("child{i}_{name}"), *v as f64)),
            );
            counters.extend(child.device.counters().into_iter().map(|d| {
                DeviceCounter::new(
                    format!("child{i}_{}_{}", child.device.model_name(), d.name),
                    d.value,
                )
            }));
        }
        counters
    }

    /// The values of [`Device::counters`] without their names: a time series reads them at
    /// the end of every window, and naming every child's counters each time (a `format!` per
    /// counter of every member) made an array of many SSDs slower than its members.
    fn counter_values(&self, values: &mut Vec<f64>) {
        self.own_counters(&mut |_, v| values.push(v));
        for child in &self.children {
            values.extend(child.counts.named().map(|(_, v)| v as f64));
            child.device.counter_values(values);
        }
    }

    /// Each child's arrays, their units under `child{i}` (as its counters' prefix).
    fn block_wear(&self) -> Vec<BlockWear> {
        self.children
            .iter()
            .enumerate()
            .flat_map(|(i, child)| {
                child
                    .device
                    .block_wear()
                    .into_iter()
                    .map(move |w| w.within(&format!("child{i}")))
            })
            .collect()
    }
}

#[cfg(test)]
mod counter_docs {
    /// The model's page lists exactly these counters (`STORSIM_BLESS_DOCS=1` rewrites it).
    #[test]
    fn the_page_lists_exactly_the_descriptors() {
        let tables = storsim_core::conformance::counter_tables(&[
            ("array", super::COUNTERS),
            ("array-faults", super::FAULT_COUNTERS),
        ]);
        storsim_testenv::check_counter_tables("docs/models/array.md", &tables).unwrap();
    }
}
