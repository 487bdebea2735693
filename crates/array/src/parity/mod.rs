//! RAID-5 and RAID-6: data in chunks over the members with one (P) or two (P and Q) parity
//! chunks per row, rotating as Linux md's left-symmetric layout does ([`ParityLayout`]). See
//! docs/models/array.md.
//!
//! Each host request becomes one *row operation* per row it touches. A row operation has up
//! to two phases: member reads (the old data and parity a small write needs, or the survivors
//! a degraded read reconstructs from), then member writes, which start when every read of the
//! row has completed, as a stripe's writes wait for its reads in md. The host request
//! completes when its last row operation does. The array adds no time of its own and holds no
//! bytes: parity is computed in no time, and only its member I/Os are modelled.
//!
//! A member fails when it refuses a piece with `Failed` (or any refusal other than
//! `QueueFull`), when it completes a piece with `device_failed` or a write with any error (as
//! md kicks a member whose write failed), or at the instant the device file's
//! `failed_member` names. With a spare, the rebuild then starts at once: row by row, paced to
//! the configured rate, it reads the row's survivors and writes the rebuilt chunk to the spare;
//! rows it has finished are served by the spare, the others degraded. A RAID-5 survives one
//! missing member, a RAID-6 two; one more fails the array.

mod layout;

pub use layout::{ParityLayout, Role};

use crate::{count_piece, ArrayParams, ChildCounts, RaidLevel, COUNTERS, FAULT_COUNTERS};
use layout::{rows, spans_in_row, ChunkSpan};
use std::collections::{BTreeSet, VecDeque};
use storsim_core::{
    check_range, BlockWear, Completion, CounterDescriptor, Described, Device, DeviceCounter,
    DeviceError, DevicePart, Op, Request, SimTime, Status, Unit, QUEUE_DEPTH_MAX, SECTOR_BYTES,
};

/// What the rebuild keeps in flight on each member: md's default stripe cache, 256 stripes
/// of one 4 KiB page per member. The rebuild has max(1, this / chunk) rows in flight at once
/// (16 of 64 KiB), so that the members, not a short window, bound it when the rate asks more
/// than they give.
const REBUILD_BYTES_IN_FLIGHT: u64 = 256 * 4096;

/// The rebuild rate when the device file gives none: md's default `speed_limit_max`, 200,000
/// KiB/s.
pub const DEFAULT_REBUILD_RATE_BYTES_PER_S: u64 = 200_000 * 1024;

/// A member the device file fails at an instant of the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemberFailure {
    pub member: usize,
    pub at: SimTime,
}

/// What a RAID-5 or RAID-6 array needs besides its members and spare.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParityParams {
    /// Bytes of one chunk: what each member holds of one row.
    pub stripe_unit_bytes: u64,
    /// A member to fail at an instant, as a pulled disk.
    pub failed_member: Option<MemberFailure>,
    /// How fast the rebuild writes the spare, in bytes per second of simulated time.
    pub rebuild_rate_bytes_per_s: u64,
}

/// Where a member I/O goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    Member(usize),
    Spare,
}

/// One member I/O of a row operation: bytes [start, end) of the row's chunk on member `slot`
/// (the spare, when `spare`, which stands in for `slot`). A `helper` read is one of those
/// that reconstruct another member's chunk.
#[derive(Clone, Copy, Debug)]
struct Io {
    slot: usize,
    spare: bool,
    helper: bool,
    op: Op,
    start: u64,
    end: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Owner {
    /// The host request in this slot.
    Host(usize),
    Rebuild,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Reads,
    Writes,
}

/// One row's share of a host request, or one row of the rebuild.
struct RowOp {
    owner: Owner,
    row: u64,
    flow: u16,
    phase: Phase,
    /// The reads, issued when the operation starts.
    reads: Vec<Io>,
    /// The writes, issued once every read has completed.
    writes: Vec<Io>,
    /// Member I/Os of the current phase not yet completed.
    outstanding: usize,
}

/// A member I/O in a member (or waiting for one).
struct PieceInfo {
    row_op: usize,
    io: Io,
}

/// The pieces in members or waiting for them. A piece's id carries its slot here in its low
/// `SLOT_BITS` bits and a count of pieces above them, so ids stay unique over the run and a
/// completion finds its piece without hashing (a hash map's insert and remove were a tenth of
/// the array's own time over 24 SSDs).
struct Pieces {
    slots: Vec<Option<(u64, PieceInfo)>>,
    free: Vec<usize>,
    issued: u64,
}

impl Pieces {
    const SLOT_BITS: u32 = 24;

    fn new() -> Pieces {
        Pieces {
            slots: Vec::new(),
            free: Vec::new(),
            issued: 0,
        }
    }

    /// Keeps `info` and returns the id its piece goes out with.
    fn insert(&mut self, info: PieceInfo) -> u64 {
        let slot = self.free.pop().unwrap_or_else(|| {
            self.slots.push(None);
            self.slots.len() - 1
        });
        assert!(
            slot < 1 << Self::SLOT_BITS,
            "more than 2^24 pieces outstanding"
        );
        let id = (self.issued << Self::SLOT_BITS) | slot as u64;
        self.issued += 1;
        self.slots[slot] = Some((id, info));
        id
    }

    /// The piece with `id`, which is no longer kept.
    fn take(&mut self, id: u64) -> PieceInfo {
        let slot = (id & ((1 << Self::SLOT_BITS) - 1)) as usize;
        match self.slots.get_mut(slot).and_then(Option::take) {
            Some((kept, info)) if kept == id => {
                self.free.push(slot);
                info
            }
            _ => panic!("piece {id} is not one the array gave out"),
        }
    }
}

struct Parent {
    request: Request,
    seq: u64,
    row_ops: usize,
    service_start: Option<SimTime>,
    finish: SimTime,
    status: Status,
    degraded: bool,
}

struct Finished {
    seq: u64,
    slot: usize,
    completion: Completion,
}

struct Member {
    device: Box<dyn Device>,
    /// Pieces the member refused with `QueueFull`, in the order they were issued. Bounded by
    /// the member I/Os of the outstanding host requests' rows and the rebuild's rows.
    pending: VecDeque<Request>,
    failed: Option<String>,
    counts: ChildCounts,
    /// The device's `next_deadline`, read again after each call that can change it, so that
    /// finding the next event does not ask every member each time.
    deadline: Option<SimTime>,
}

impl Member {
    fn new(device: Box<dyn Device>) -> Member {
        let deadline = device.next_deadline();
        Member {
            device,
            pending: VecDeque::new(),
            failed: None,
            counts: ChildCounts::default(),
            deadline,
        }
    }
}

struct Rebuild {
    /// The member whose chunks the spare receives.
    slot: usize,
    start: SimTime,
    next_row: u64,
    in_flight: u64,
    /// Every row below it is rebuilt.
    done_prefix: u64,
    /// Rebuilt rows above `done_prefix` (rows finish out of order by at most the window).
    done_above: BTreeSet<u64>,
    end: Option<SimTime>,
}

#[derive(Clone, Default)]
struct Counts {
    requests: u64,
    split_requests: u64,
    pieces: u64,
    queued_pieces: u64,
    degraded_pieces: u64,
    lost_pieces: u64,
    member_errors: u64,
    member_failures: u64,
    degraded_writes: u64,
    rmw_writes: u64,
    reconstruct_writes: u64,
    full_stripe_writes: u64,
    parity_writes: u64,
    degraded_reads: u64,
    degraded_row_writes: u64,
    rebuild_rows: u64,
    rebuild_bytes: u64,
}

/// A RAID-5 or RAID-6 array over any member devices, with an optional spare.
pub struct ParityArray {
    level: RaidLevel,
    layout: ParityLayout,
    rows: u64,
    capacity_bytes: u64,
    members: Vec<Member>,
    spare: Option<Member>,
    parents: Vec<Option<Parent>>,
    free_slots: Vec<usize>,
    row_ops: Vec<RowOp>,
    free_row_ops: Vec<usize>,
    /// What each piece in a member (or pending for one) is, by its id.
    pieces: Pieces,
    next_seq: u64,
    finished: Vec<Finished>,
    failed: Option<String>,
    scheduled_failure: Option<MemberFailure>,
    rebuild_rate_bytes_per_s: u64,
    rebuild: Option<Rebuild>,
    counts: Counts,
    fault_counters: bool,
    /// The latest instant the array has been moved to.
    clock: SimTime,
    child_done: Vec<Completion>,
    spans: Vec<ChunkSpan>,
    /// The row operations of the request being planned, reused across requests.
    planned: Vec<usize>,
}

impl ParityArray {
    /// A RAID-5 or RAID-6 array over `members`, in order, with `spare` standing by. Fails when
    /// the parameters cannot describe one (a level without parity, too few members for the
    /// level, a stripe unit that is not a whole number of sectors, a member smaller than one
    /// chunk, a spare smaller than a member's used part, a failed member that is not there, a
    /// queue depth outside 1..=`QUEUE_DEPTH_MAX`, a zero rebuild rate).
    pub fn new(
        params: ArrayParams,
        members: Vec<Box<dyn Device>>,
        spare: Option<Box<dyn Device>>,
    ) -> Result<ParityArray, String> {
        let (parities, parity) = match params.level {
            RaidLevel::Raid5(p) => (1, p),
            RaidLevel::Raid6(p) => (2, p),
            other => return Err(format!("{} has no parity", other.name())),
        };
        // md's own minimums: a RAID-5 of two members is a mirror with parity, a RAID-6 needs
        // two data members.
        let members_min = 2 * parities;
        if members.len() < members_min {
            return Err(format!(
                "{} needs at least {members_min} members, got {}",
                params.level.name(),
                members.len()
            ));
        }
        if params.queue_depth == 0 || params.queue_depth > QUEUE_DEPTH_MAX as usize {
            return Err(format!(
                "queue depth must be 1..={QUEUE_DEPTH_MAX}, got {}",
                params.queue_depth
            ));
        }
        let s = parity.stripe_unit_bytes;
        if s == 0 || s % SECTOR_BYTES != 0 {
            return Err(format!(
                "the stripe unit must be a positive multiple of {SECTOR_BYTES} bytes, got {s}"
            ));
        }
        if parity.rebuild_rate_bytes_per_s == 0 {
            return Err("the rebuild rate must be positive".into());
        }
        let layout = ParityLayout::new(members.len(), parities, s).expect("checked above");
        let member_min_bytes = members
            .iter()
            .map(|m| m.capacity_bytes())
            .min()
            .expect("at least two members");
        let rows = member_min_bytes / s;
        if rows == 0 {
            return Err(format!(
                "the smallest member ({member_min_bytes} bytes) holds less than one stripe \
                 unit ({s} bytes)"
            ));
        }
        let capacity_bytes = rows.checked_mul(layout.row_data_bytes()).ok_or_else(|| {
            "the array's capacity does not fit in a 64-bit byte count".to_string()
        })?;
        if let Some(spare) = &spare {
            if spare.capacity_bytes() < rows * s {
                return Err(format!(
                    "the spare ({} bytes) is smaller than the part of each member the array \
                     uses ({} bytes)",
                    spare.capacity_bytes(),
                    rows * s
                ));
            }
        }
        if let Some(f) = parity.failed_member {
            if f.member >= members.len() {
                return Err(format!(
                    "failed member {} is not one of the {} members (numbered from 0)",
                    f.member,
                    members.len()
                ));
            }
        }
        let depth = params.queue_depth;
        Ok(ParityArray {
            level: params.level,
            layout,
            rows,
            capacity_bytes,
            members: members.into_iter().map(Member::new).collect(),
            spare: spare.map(Member::new),
            parents: (0..depth).map(|_| None).collect(),
            free_slots: (0..depth).rev().collect(),
            row_ops: Vec::new(),
            free_row_ops: Vec::new(),
            pieces: Pieces::new(),
            next_seq: 0,
            finished: Vec::with_capacity(depth),
            failed: None,
            scheduled_failure: parity.failed_member,
            rebuild_rate_bytes_per_s: parity.rebuild_rate_bytes_per_s,
            rebuild: None,
            counts: Counts::default(),
            fault_counters: false,
            clock: SimTime::ZERO,
            child_done: Vec::new(),
            spans: Vec::new(),
            planned: Vec::new(),
        })
    }

    /// Lists the counters of members' errors, as [`crate::ArrayDevice::enable_fault_counters`].
    pub fn enable_fault_counters(&mut self) {
        self.fault_counters = true;
    }

    pub fn layout(&self) -> ParityLayout {
        self.layout
    }

    /// The instant the rebuild finished, once it has.
    pub fn rebuild_end(&self) -> Option<SimTime> {
        self.rebuild.as_ref().and_then(|r| r.end)
    }

    fn spare_usable(&self) -> bool {
        self.spare.as_ref().is_some_and(|s| s.failed.is_none())
    }

    /// Where member `slot`'s chunk of `row` is now: the member, the spare once the rebuild
    /// has written that row, or nowhere.
    fn target(&self, slot: usize, row: u64) -> Option<Target> {
        if self.members[slot].failed.is_none() {
            return Some(Target::Member(slot));
        }
        match &self.rebuild {
            Some(r) if r.slot == slot && row < r.done_prefix && self.spare_usable() => {
                Some(Target::Spare)
            }
            _ => None,
        }
    }

    /// Members whose chunks are not all readable: failed and not (yet) rebuilt.
    fn missing_members(&self) -> usize {
        (0..self.members.len())
            .filter(|&i| self.target(i, self.rows - 1).is_none())
            .count()
    }

    fn device_mut(&mut self, t: Target) -> &mut Member {
        match t {
            Target::Member(i) => &mut self.members[i],
            Target::Spare => self.spare.as_mut().expect("a spare target has a spare"),
        }
    }

    /// Takes `t` out of the array for `reason` at `now`: a member fails (and, with a spare
    /// standing by, its rebuild starts), or the spare does (and the rebuild stops). The array
    /// fails when more members are missing than it has parity chunks per row.
    fn fail_target(&mut self, now: SimTime, t: Target, reason: &str) {
        match t {
            Target::Member(i) => {
                if self.members[i].failed.is_some() {
                    return;
                }
                self.members[i].failed = Some(reason.to_string());
                if self.rebuild.is_none() && self.spare_usable() {
                    self.rebuild = Some(Rebuild {
                        slot: i,
                        start: now,
                        next_row: 0,
                        in_flight: 0,
                        done_prefix: 0,
                        done_above: BTreeSet::new(),
                        end: None,
                    });
                }
            }
            Target::Spare => {
                let spare = self.spare.as_mut().expect("a spare target has a spare");
                if spare.failed.is_none() {
                    spare.failed = Some(reason.to_string());
                }
            }
        }
        if self.failed.is_none() && self.missing_members() > self.layout.parities() {
            self.failed = Some(format!(
                "{} members are missing, more than {} tolerates (the last: {reason})",
                self.missing_members(),
                self.level.name()
            ));
        }
    }

    fn new_row_op(&mut self, owner: Owner, row: u64, flow: u16) -> usize {
        let op = RowOp {
            owner,
            row,
            flow,
            phase: Phase::Reads,
            reads: Vec::new(),
            writes: Vec::new(),
            outstanding: 0,
        };
        match self.free_row_ops.pop() {
            Some(i) => {
                // The freed operation's lists keep their room, so a run in its steady state
                // allocates nothing per request.
                let reads = std::mem::take(&mut self.row_ops[i].reads);
                let writes = std::mem::take(&mut self.row_ops[i].writes);
                self.row_ops[i] = RowOp {
                    reads,
                    writes,
                    ..op
                };
                i
            }
            None => {
                self.row_ops.push(op);
                self.row_ops.len() - 1
            }
        }
    }

    /// Hands `piece` to `t` at `now`: submitted, or pending when the member is full. Returns
    /// the member's reason when it refuses otherwise.
    fn place(&mut self, now: SimTime, t: Target, piece: Request) -> Result<(), String> {
        let member = self.device_mut(t);
        let result = if !member.pending.is_empty() {
            // Earlier pieces wait for this member: this one goes behind them.
            Err(DeviceError::QueueFull { queue_depth: 0 })
        } else {
            member.device.submit(now, piece)
        };
        match result {
            Ok(()) => {
                count_piece(&mut member.counts, &piece);
                member.deadline = member.device.next_deadline();
                Ok(())
            }
            Err(DeviceError::QueueFull { .. }) => {
                member.pending.push_back(piece);
                member.counts.queued_pieces += 1;
                self.counts.queued_pieces += 1;
                Ok(())
            }
            Err(error) => Err(error.to_string()),
        }
    }

    /// Issues `io` of row operation `op` at `now`. An I/O whose chunk has no target is
    /// reconstructed (a read) or dropped (a write, trim or flush: the survivors carry it).
    fn issue(&mut self, now: SimTime, op: usize, io: Io) {
        let row = self.row_ops[op].row;
        let target = if io.spare {
            self.spare_usable().then_some(Target::Spare)
        } else {
            self.target(io.slot, row)
        };
        let Some(t) = target else {
            if io.helper {
                self.helper_missing(op, false);
            } else if io.op == Op::Read {
                self.reconstruct(now, op, io);
            } else {
                self.counts.degraded_pieces += 1;
            }
            return;
        };
        let piece = Request {
            id: self.pieces.insert(PieceInfo { row_op: op, io }),
            op: io.op,
            offset_bytes: if io.op == Op::Flush {
                0
            } else {
                row * self.layout.chunk_bytes() + io.start
            },
            len_bytes: io.end - io.start,
            arrival: now,
            flow: self.row_ops[op].flow,
        };
        match self.place(now, t, piece) {
            Ok(()) => {
                self.counts.pieces += 1;
                if io.op == Op::Write && matches!(self.layout.role(row, io.slot), Role::Parity(_)) {
                    self.counts.parity_writes += 1;
                }
                self.row_ops[op].outstanding += 1;
            }
            Err(reason) => {
                self.pieces.take(piece.id);
                self.fail_target(now, t, &reason);
                // The target is gone now: the I/O is reconstructed or dropped.
                self.issue(now, op, io);
            }
        }
    }

    /// A read helping to reconstruct a chunk of row operation `op` found its member missing,
    /// or failed (`present`: the member is still in the array, a media error). The other
    /// helpers still suffice while no more members of the row are out than there are parity
    /// chunks; otherwise the reconstructed read is lost.
    fn helper_missing(&mut self, op: usize, present: bool) {
        let row = self.row_ops[op].row;
        let missing = (0..self.members.len())
            .filter(|&s| self.target(s, row).is_none())
            .count()
            + usize::from(present);
        if missing > self.layout.parities() {
            self.lose(op, row, missing);
        }
    }

    /// Nothing can serve a read of row operation `op`: its host request fails, and so does
    /// the array, since a row it holds is unreadable.
    fn lose(&mut self, op: usize, row: u64, missing: usize) {
        self.counts.lost_pieces += 1;
        if let Owner::Host(slot) = self.row_ops[op].owner {
            let parent = self.parents[slot].as_mut().expect("an outstanding request");
            parent.status = Status::DeviceFailed;
        }
        if self.failed.is_none() {
            self.failed = Some(format!(
                "row {row} cannot be read: {missing} of its members are missing"
            ));
        }
    }

    /// Serves a read of member `io.slot`'s chunk range from the row's other members (every one
    /// that has a target), as md reconstructs a missing chunk from the whole stripe. When too
    /// few are left, the read is lost and its host request fails.
    fn reconstruct(&mut self, now: SimTime, op: usize, io: Io) {
        let row = self.row_ops[op].row;
        let others: Vec<usize> = (0..self.members.len())
            .filter(|&s| s != io.slot && self.target(s, row).is_some())
            .collect();
        if others.len() < self.layout.data_members() {
            self.lose(op, row, self.members.len() - others.len());
            return;
        }
        if let Owner::Host(slot) = self.row_ops[op].owner {
            self.counts.degraded_reads += 1;
            self.parents[slot]
                .as_mut()
                .expect("an outstanding request")
                .degraded = true;
        }
        for s in others {
            self.issue(
                now,
                op,
                Io {
                    slot: s,
                    spare: false,
                    helper: true,
                    op: Op::Read,
                    ..io
                },
            );
        }
    }

    /// Moves row operation `op` on once its current phase has no I/O outstanding: its writes
    /// go out after its reads, and it is done after its writes.
    fn progress(&mut self, now: SimTime, op: usize) {
        loop {
            if self.row_ops[op].outstanding > 0 {
                return;
            }
            if self.row_ops[op].phase == Phase::Reads {
                self.row_ops[op].phase = Phase::Writes;
                let writes = std::mem::take(&mut self.row_ops[op].writes);
                for io in &writes {
                    self.issue(now, op, *io);
                }
                self.row_ops[op].writes = writes;
                continue;
            }
            self.row_op_done(now, op);
            return;
        }
    }

    fn row_op_done(&mut self, now: SimTime, op: usize) {
        let (owner, row) = (self.row_ops[op].owner, self.row_ops[op].row);
        self.row_ops[op].reads.clear();
        self.row_ops[op].writes.clear();
        self.free_row_ops.push(op);
        match owner {
            Owner::Host(slot) => {
                let parent = self.parents[slot].as_mut().expect("an outstanding request");
                assert!(
                    parent.row_ops > 0,
                    "a request finished more rows than it had"
                );
                parent.row_ops -= 1;
                parent.finish = parent.finish.max(now);
                if parent.row_ops == 0 {
                    self.finish_parent(slot);
                }
            }
            Owner::Rebuild => {
                let spare_ok = self.spare_usable();
                let r = self.rebuild.as_mut().expect("a rebuild row has a rebuild");
                r.in_flight -= 1;
                if spare_ok {
                    self.counts.rebuild_rows += 1;
                    self.counts.rebuild_bytes += self.layout.chunk_bytes();
                }
                r.done_above.insert(row);
                while r.done_above.remove(&r.done_prefix) {
                    r.done_prefix += 1;
                }
                if r.done_prefix == self.rows && r.end.is_none() && spare_ok {
                    r.end = Some(now);
                }
            }
        }
    }

    fn finish_parent(&mut self, slot: usize) {
        let parent = self.parents[slot].as_ref().expect("an outstanding request");
        if parent.degraded && parent.request.op != Op::Read && parent.status.is_ok() {
            self.counts.degraded_writes += 1;
        }
        let completion = Completion {
            request: parent.request,
            service_start: parent.service_start.unwrap_or(parent.finish),
            finish: parent.finish,
            status: parent.status,
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

    /// Starts row operation `op`: its reads go out, or its writes when it has none.
    fn start_row_op(&mut self, now: SimTime, op: usize) {
        let reads = std::mem::take(&mut self.row_ops[op].reads);
        for io in &reads {
            self.issue(now, op, *io);
        }
        self.row_ops[op].reads = reads;
        self.progress(now, op);
    }

    /// Plans the row operations of host request `request` (in `slot`), then starts them, so
    /// that the request knows how many it has before the first can finish.
    fn plan(&mut self, now: SimTime, slot: usize, request: &Request) {
        let layout = self.layout;
        let s = layout.chunk_bytes();
        let mut spans = std::mem::take(&mut self.spans);
        let mut ops = std::mem::take(&mut self.planned);
        ops.clear();
        if request.op == Op::Flush {
            let op = self.new_row_op(Owner::Host(slot), 0, request.flow);
            let flush = |slot, spare| Io {
                slot,
                spare,
                helper: false,
                op: Op::Flush,
                start: 0,
                end: 0,
            };
            let mut writes = std::mem::take(&mut self.row_ops[op].writes);
            writes.extend(
                (0..self.members.len())
                    .filter(|&i| self.members[i].failed.is_none())
                    .map(|i| flush(i, false)),
            );
            if let Some(r) = &self.rebuild {
                writes.push(flush(r.slot, true));
            }
            self.row_ops[op].writes = writes;
            ops.push(op);
        }
        for row in rows(&layout, request.offset_bytes, request.len_bytes) {
            spans_in_row(
                &layout,
                request.offset_bytes,
                request.len_bytes,
                row,
                &mut spans,
            );
            let full = spans.len() == layout.data_members()
                && spans.iter().all(|c| c.start == 0 && c.end == s);
            // md discards whole stripes only (parity included); the rest of a trim is left
            // alone, as a device may ignore a discard.
            if request.op == Op::Trim && !full {
                continue;
            }
            let op = self.new_row_op(Owner::Host(slot), row, request.flow);
            let mut reads = std::mem::take(&mut self.row_ops[op].reads);
            let mut writes = std::mem::take(&mut self.row_ops[op].writes);
            match request.op {
                Op::Read => reads.extend(spans.iter().map(|c| Io {
                    slot: layout.data_member(row, c.data_index),
                    spare: false,
                    helper: false,
                    op: Op::Read,
                    start: c.start,
                    end: c.end,
                })),
                Op::Trim => writes.extend((0..layout.members()).map(|m| Io {
                    slot: m,
                    spare: false,
                    helper: false,
                    op: Op::Trim,
                    start: 0,
                    end: s,
                })),
                Op::Write => {
                    let degraded = self.plan_write(row, &spans, full, &mut reads, &mut writes);
                    if degraded {
                        self.parents[slot]
                            .as_mut()
                            .expect("an outstanding request")
                            .degraded = true;
                    }
                }
                Op::Flush => unreachable!("a flush has no range"),
            }
            self.row_ops[op].reads = reads;
            self.row_ops[op].writes = writes;
            ops.push(op);
        }
        self.spans = spans;
        self.parents[slot]
            .as_mut()
            .expect("an outstanding request")
            .row_ops = ops.len();
        if ops.is_empty() {
            // Nothing to do (an empty range, a trim of no whole row): done at once.
            self.finish_parent(slot);
        }
        for &op in &ops {
            self.start_row_op(now, op);
        }
        self.planned = ops;
    }

    /// Plans the write of `spans` to `row` into `reads` and `writes`, choosing how parity is
    /// made (docs/models/array.md, Writes); says whether a member of the row is missing.
    ///
    /// A full row writes data and parity without reads. Otherwise parity covers the range U
    /// the write spans within the chunk (the union of its chunk ranges), and either
    /// - read-modify-write reads the old data it overwrites and the old parity over U, or
    /// - reconstruct-write reads, over U, the data the write leaves in place,
    ///
    /// whichever needs fewer member reads, reconstruct-write on a tie (md's rule: it uses
    /// read-modify-write only when that reads strictly less). A method that would read a
    /// missing member is out; when both are, every surviving member of the row is read over
    /// U. A row whose parity members are all missing is written without reads.
    fn plan_write(
        &mut self,
        row: u64,
        spans: &[ChunkSpan],
        full: bool,
        reads: &mut Vec<Io>,
        writes: &mut Vec<Io>,
    ) -> bool {
        let layout = self.layout;
        let s = layout.chunk_bytes();
        let d = layout.data_members();
        let io = |slot, op, start, end| Io {
            slot,
            spare: false,
            helper: false,
            op,
            start,
            end,
        };
        let present = |array: &Self, slot| array.target(slot, row).is_some();
        let degraded = (0..layout.members()).any(|m| !present(self, m));
        if degraded {
            self.counts.degraded_row_writes += 1;
        }
        let (u_start, u_end) = if full {
            (0, s)
        } else {
            (
                spans
                    .iter()
                    .map(|c| c.start)
                    .min()
                    .expect("a write covers a chunk"),
                spans
                    .iter()
                    .map(|c| c.end)
                    .max()
                    .expect("a write covers a chunk"),
            )
        };
        writes.extend(spans.iter().map(|c| {
            io(
                layout.data_member(row, c.data_index),
                Op::Write,
                c.start,
                c.end,
            )
        }));
        writes.extend(
            (0..layout.parities())
                .map(|k| io(layout.parity_member(row, k), Op::Write, u_start, u_end)),
        );
        if full {
            self.counts.full_stripe_writes += 1;
            return degraded;
        }
        let parities_left = (0..layout.parities())
            .filter(|&k| present(self, layout.parity_member(row, k)))
            .count();
        if parities_left == 0 {
            return degraded;
        }
        // The part of data chunk i over U that the write leaves in place: all of U for a
        // chunk it does not touch; for a touched chunk at most one piece, since only the first
        // chunk can start late (then it runs to the chunk's end, and U starts at 0) and only
        // the last can end early.
        let kept = |i: usize| -> Option<(u64, u64)> {
            match spans.iter().find(|c| c.data_index == i) {
                None => Some((u_start, u_end)),
                Some(c) if c.start > u_start => Some((u_start, c.start)),
                Some(c) if c.end < u_end => Some((c.end, u_end)),
                Some(_) => None,
            }
        };
        let rmw_possible = spans
            .iter()
            .all(|c| present(self, layout.data_member(row, c.data_index)));
        let rmw_reads = spans.len() + parities_left;
        let rcw_possible =
            (0..d).all(|i| kept(i).is_none() || present(self, layout.data_member(row, i)));
        let rcw_reads = (0..d).filter(|&i| kept(i).is_some()).count();
        if rmw_possible && (!rcw_possible || rmw_reads < rcw_reads) {
            self.counts.rmw_writes += 1;
            reads.extend(spans.iter().map(|c| {
                io(
                    layout.data_member(row, c.data_index),
                    Op::Read,
                    c.start,
                    c.end,
                )
            }));
            self.parity_reads(row, (u_start, u_end), reads);
        } else {
            self.counts.reconstruct_writes += 1;
            reads.extend((0..d).filter_map(|i| {
                let (a, b) = kept(i)?;
                Some(io(layout.data_member(row, i), Op::Read, a, b))
            }));
            if !rcw_possible {
                // Neither method's reads are all there: read every survivor of the row, the
                // parity included, and rebuild what is missing before writing.
                reads.retain(|r| present(self, r.slot));
                self.parity_reads(row, (u_start, u_end), reads);
            }
        }
        degraded
    }

    /// Reads of the row's parity members still there over `range` of the chunk.
    fn parity_reads(&self, row: u64, range: (u64, u64), reads: &mut Vec<Io>) {
        reads.extend(
            (0..self.layout.parities())
                .map(|k| self.layout.parity_member(row, k))
                .filter(|&m| self.target(m, row).is_some())
                .map(|slot| Io {
                    slot,
                    spare: false,
                    helper: false,
                    op: Op::Read,
                    start: range.0,
                    end: range.1,
                }),
        );
    }

    /// When rebuild row `row` may start: rows go out evenly at the configured rate from the
    /// rebuild's start, one chunk of spare writes each.
    fn release_time(&self, r: &Rebuild, row: u64) -> SimTime {
        let bytes = row as u128 * self.layout.chunk_bytes() as u128;
        let rate = self.rebuild_rate_bytes_per_s as u128;
        let ns = (bytes * 1_000_000_000).div_ceil(rate);
        SimTime(r.start.0.saturating_add(ns.min(u64::MAX as u128) as u64))
    }

    /// The next instant a rebuild row is due, if the rebuild has a row to send and room for
    /// it; never before `self`'s latest step, since a row held back by the window goes out
    /// when one finishes.
    fn rebuild_due(&self) -> Option<SimTime> {
        let r = self.rebuild.as_ref()?;
        let window = (REBUILD_BYTES_IN_FLIGHT / self.layout.chunk_bytes()).max(1);
        let more = r.next_row < self.rows && r.in_flight < window;
        (more && self.spare_usable() && self.failed.is_none())
            .then(|| self.release_time(r, r.next_row).max(self.clock))
    }

    /// Starts every rebuild row due by `now` that the window has room for.
    fn release_rebuild(&mut self, now: SimTime) {
        while let Some(due) = self.rebuild_due() {
            if due > now {
                return;
            }
            let r = self.rebuild.as_mut().expect("a due row has a rebuild");
            let (row, slot) = (r.next_row, r.slot);
            r.next_row += 1;
            r.in_flight += 1;
            let op = self.new_row_op(Owner::Rebuild, row, 0);
            let s = self.layout.chunk_bytes();
            let chunk = |slot, spare, op| Io {
                slot,
                spare,
                helper: false,
                op,
                start: 0,
                end: s,
            };
            let mut reads = std::mem::take(&mut self.row_ops[op].reads);
            reads.extend(
                (0..self.members.len())
                    .filter(|&m| m != slot && self.target(m, row).is_some())
                    .map(|m| chunk(m, false, Op::Read)),
            );
            self.row_ops[op].reads = reads;
            self.row_ops[op].writes.push(chunk(slot, true, Op::Write));
            self.start_row_op(now, op);
        }
    }

    /// The earliest instant the array's own state changes: a member's or the spare's deadline,
    /// the device file's member failure, a rebuild row.
    fn next_event(&self) -> Option<SimTime> {
        let members = self
            .members
            .iter()
            .chain(self.spare.as_ref())
            .filter_map(|m| m.deadline);
        let failure = self.scheduled_failure.map(|f| f.at);
        members.chain(failure).chain(self.rebuild_due()).min()
    }

    /// Moves the members and the spare to `now`, one instant at a time, so that a phase's
    /// writes, a pending piece and a rebuild row go out at the instant they may rather than
    /// later.
    fn step_to(&mut self, now: SimTime) {
        while let Some(t) = self.next_event().filter(|&t| t <= now) {
            self.clock = t;
            if let Some(f) = self.scheduled_failure.filter(|f| f.at <= t) {
                self.scheduled_failure = None;
                let reason = format!("failed by the device file at {}", f.at);
                self.fail_target(t, Target::Member(f.member), &reason);
            }
            let targets = (0..self.members.len())
                .map(Target::Member)
                .chain(self.spare.is_some().then_some(Target::Spare));
            for target in targets {
                let due = matches!(self.device_mut(target).deadline, Some(d) if d <= t);
                if due {
                    self.advance_target(target, t);
                }
            }
            self.release_rebuild(t);
        }
        self.clock = self.clock.max(now);
    }

    /// Advances `target` to `t` and moves on the row operations whose pieces it completed.
    fn advance_target(&mut self, target: Target, t: SimTime) {
        let mut done = std::mem::take(&mut self.child_done);
        let member = self.device_mut(target);
        member.device.advance(t, &mut done);
        member.deadline = member.device.next_deadline();
        for c in done.drain(..) {
            let info = self.pieces.take(c.request.id);
            let op = info.row_op;
            if let Owner::Host(slot) = self.row_ops[op].owner {
                let parent = self.parents[slot].as_mut().expect("an outstanding request");
                parent.service_start = Some(
                    parent
                        .service_start
                        .map_or(c.service_start, |s| s.min(c.service_start)),
                );
            }
            if !c.status.is_ok() {
                self.member_error(t, target, &info, &c);
            }
            self.row_ops[op].outstanding -= 1;
            self.progress(t, op);
        }
        self.child_done = done;
        self.drain_pending(target, t);
    }

    /// A member completed `info`'s piece with an error. A failed device, or a failed write,
    /// trim or flush, takes the member out (md kicks a member whose write failed: its chunk
    /// no longer matches the parity); a read's media error or timeout leaves it in. A failed
    /// read is served from the rest of the row; a failed write is carried by the survivors.
    fn member_error(&mut self, t: SimTime, target: Target, info: &PieceInfo, c: &Completion) {
        self.counts.member_errors += 1;
        if c.status == Status::DeviceFailed || info.io.op != Op::Read {
            let reason = format!(
                "it completed a {} with {}",
                info.io.op.name(),
                c.status.name()
            );
            let newly = match target {
                Target::Member(i) => self.members[i].failed.is_none(),
                Target::Spare => self.spare_usable(),
            };
            self.fail_target(t, target, &reason);
            if newly {
                self.counts.member_failures += 1;
            }
        }
        if info.io.helper {
            let present = match target {
                Target::Member(i) => self.members[i].failed.is_none(),
                Target::Spare => self.spare_usable(),
            };
            self.helper_missing(info.row_op, present);
        } else if info.io.op == Op::Read {
            self.reconstruct(t, info.row_op, info.io);
        }
    }

    /// Submits what waits for `target`, in order, while it accepts. A piece it refuses
    /// otherwise takes it out, and the piece is reconstructed or dropped.
    fn drain_pending(&mut self, target: Target, now: SimTime) {
        loop {
            let member = self.device_mut(target);
            let Some(&front) = member.pending.front() else {
                return;
            };
            let piece = Request {
                arrival: now,
                ..front
            };
            let result = match &member.failed {
                Some(reason) => Err(reason.clone()),
                None => match member.device.submit(now, piece) {
                    Ok(()) => Ok(()),
                    Err(DeviceError::QueueFull { .. }) => return,
                    Err(e) => Err(e.to_string()),
                },
            };
            member.pending.pop_front();
            match result {
                Ok(()) => {
                    count_piece(&mut member.counts, &piece);
                    member.deadline = member.device.next_deadline();
                }
                Err(reason) => {
                    self.fail_target(now, target, &reason);
                    let info = self.pieces.take(piece.id);
                    let op = info.row_op;
                    // Reissued, it finds no target and is reconstructed or dropped.
                    self.issue(now, op, info.io);
                    self.row_ops[op].outstanding -= 1;
                    self.progress(now, op);
                }
            }
        }
    }

    /// The array's own counters (not its members'), in the order `counters` lists them.
    fn own_counters(&self, each: &mut dyn FnMut(&'static str, f64)) {
        let c = &self.counts;
        let failed_members = self.members.iter().filter(|m| m.failed.is_some()).count();
        let progress = self
            .rebuild
            .as_ref()
            .map_or(0.0, |r| r.done_prefix as f64 / self.rows as f64);
        let listed = [
            ("children", self.members.len() as f64),
            ("requests", c.requests as f64),
            ("split_requests", c.split_requests as f64),
            ("pieces", c.pieces as f64),
            ("queued_pieces", c.queued_pieces as f64),
            ("degraded_pieces", c.degraded_pieces as f64),
            ("lost_pieces", c.lost_pieces as f64),
            ("failed_children", failed_members as f64),
            ("rmw_writes", c.rmw_writes as f64),
            ("reconstruct_writes", c.reconstruct_writes as f64),
            ("full_stripe_writes", c.full_stripe_writes as f64),
            ("parity_writes", c.parity_writes as f64),
            ("degraded_reads", c.degraded_reads as f64),
            ("degraded_row_writes", c.degraded_row_writes as f64),
            ("rebuild_rows", c.rebuild_rows as f64),
            ("rebuild_bytes", c.rebuild_bytes as f64),
            ("rebuild_progress", progress),
        ];
        for (name, v) in listed {
            each(name, v);
        }
        if let Some(r) = &self.rebuild {
            each("rebuild_start_ns", r.start.0 as f64);
            if let Some(end) = r.end {
                each("rebuild_end_ns", end.0 as f64);
            }
        }
        if self.fault_counters {
            each("member_errors", c.member_errors as f64);
            each("member_failures", c.member_failures as f64);
            each("degraded_writes", c.degraded_writes as f64);
        }
    }
}

/// A member's counters as the array lists them under `prefix`: what the array handed it, then
/// its own under `{prefix}_{model}_`.
fn per_member_counters(prefix: &str, member: &Member, out: &mut Vec<DeviceCounter>) {
    out.extend(
        member
            .counts
            .named()
            .iter()
            .map(|(name, v)| DeviceCounter::new(format!("{prefix}_{name}"), *v as f64)),
    );
    out.extend(member.device.counters().into_iter().map(|d| {
        DeviceCounter::new(
            format!("{prefix}_{}_{}", member.device.model_name(), d.name),
            d.value,
        )
    }));
}

/// A RAID-5 or RAID-6 array's own counters, after the array counters it shares with RAID-0
/// and RAID-1 ([`COUNTERS`] but `redirected_reads`).
pub const PARITY_COUNTERS: &[CounterDescriptor] = &[
    CounterDescriptor::new(
        "rmw_writes",
        Unit::Count,
        "Row writes by read-modify-write: old data and parity read, then data and parity written.",
    ),
    CounterDescriptor::new(
        "reconstruct_writes",
        Unit::Count,
        "Row writes by reconstruct-write: the data left in place read, then data and parity written.",
    ),
    CounterDescriptor::new(
        "full_stripe_writes",
        Unit::Count,
        "Row writes that covered every data chunk: data and parity written without reads.",
    ),
    CounterDescriptor::new(
        "parity_writes",
        Unit::Count,
        "Parity chunk writes (P and Q) sent to members.",
    ),
    CounterDescriptor::new(
        "degraded_reads",
        Unit::Count,
        "Chunk reads served from the rest of the row because their member was missing or failed the read.",
    ),
    CounterDescriptor::new(
        "degraded_row_writes",
        Unit::Count,
        "Row writes planned while a member of the row was missing.",
    ),
    CounterDescriptor::new(
        "rebuild_rows",
        Unit::Count,
        "Rows the rebuild has written to the spare.",
    ),
    CounterDescriptor::new(
        "rebuild_bytes",
        Unit::Bytes,
        "Bytes the rebuild has written to the spare.",
    ),
    CounterDescriptor::new(
        "rebuild_progress",
        Unit::Ratio,
        "Share of the failed member's rows rebuilt onto the spare (0 before a rebuild).",
    ),
    CounterDescriptor::new(
        "rebuild_start_ns",
        Unit::Nanoseconds,
        "When the rebuild started (listed once it has).",
    )
    .sometimes(),
    CounterDescriptor::new(
        "rebuild_end_ns",
        Unit::Nanoseconds,
        "When the rebuild finished and the array was whole again (listed once it has).",
    )
    .sometimes(),
];

/// The spare's counters, listed when the array has one; its own model's follow under
/// `spare_{model}_`.
pub const SPARE_COUNTERS: &[CounterDescriptor] = &[
    CounterDescriptor::new("spare_pieces", Unit::Count, "Pieces sent to the spare."),
    CounterDescriptor::new(
        "spare_read_bytes",
        Unit::Bytes,
        "Bytes read from the spare.",
    ),
    CounterDescriptor::new(
        "spare_write_bytes",
        Unit::Bytes,
        "Bytes written to the spare, the rebuild's included.",
    ),
    CounterDescriptor::new(
        "spare_trim_bytes",
        Unit::Bytes,
        "Bytes trimmed on the spare.",
    ),
    CounterDescriptor::new("spare_flushes", Unit::Count, "Flushes sent to the spare."),
    CounterDescriptor::new(
        "spare_queued_pieces",
        Unit::Count,
        "Pieces that waited for room in the spare's queue.",
    ),
];

/// The shared counters a parity array lists: all of [`COUNTERS`] but RAID-1's redirected
/// reads.
fn shared_counters() -> impl Iterator<Item = &'static CounterDescriptor> {
    COUNTERS.iter().filter(|d| d.name != "redirected_reads")
}

impl Device for ParityArray {
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
        self.step_to(now);
        if let Some(reason) = &self.failed {
            return Err(DeviceError::Failed {
                reason: reason.clone(),
            });
        }
        if request.op != Op::Flush {
            check_range(&request, self.capacity_bytes)?;
        }
        let Some(slot) = self.free_slots.pop() else {
            return Err(DeviceError::QueueFull {
                queue_depth: self.parents.len(),
            });
        };
        self.parents[slot] = Some(Parent {
            request,
            seq: self.next_seq,
            row_ops: 0,
            service_start: None,
            finish: now,
            status: Status::Ok,
            degraded: false,
        });
        self.next_seq += 1;
        self.counts.requests += 1;
        let pieces_before = self.counts.pieces;
        self.plan(now, slot, &request);
        if self.counts.pieces - pieces_before > 1 {
            self.counts.split_requests += 1;
        }
        Ok(())
    }

    fn next_deadline(&self) -> Option<SimTime> {
        let finished = self.finished.iter().map(|f| f.completion.finish);
        self.next_event().into_iter().chain(finished).min()
    }

    fn advance(&mut self, now: SimTime, done: &mut Vec<Completion>) {
        self.step_to(now);
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
        let mut names = Vec::new();
        let mut values = Vec::new();
        self.own_counters(&mut |name, v| {
            names.push(name);
            values.push(v)
        });
        let mut out: Vec<DeviceCounter> = names
            .into_iter()
            .zip(values)
            .map(|(n, v)| DeviceCounter::new(n, v))
            .collect();
        for (i, member) in self.members.iter().enumerate() {
            per_member_counters(&format!("child{i}"), member, &mut out);
        }
        if let Some(spare) = &self.spare {
            per_member_counters("spare", spare, &mut out);
        }
        out
    }

    /// The values of [`Device::counters`] without their names, which a time series reads at
    /// every window's end: formatting two dozen members' names each time cost more than
    /// simulating their requests.
    fn counter_values(&self, values: &mut Vec<f64>) {
        self.own_counters(&mut |_, v| values.push(v));
        for member in self.members.iter().chain(&self.spare) {
            values.extend(member.counts.named().map(|(_, v)| v as f64));
            member.device.counter_values(values);
        }
    }

    fn counter_descriptors(&self) -> Vec<Described> {
        let mut out: Vec<Described> = shared_counters().map(Described::own).collect();
        out.extend(Described::all(PARITY_COUNTERS));
        if self.fault_counters {
            out.extend(Described::all(FAULT_COUNTERS));
        }
        if let Some(spare) = &self.spare {
            out.extend(Described::all(SPARE_COUNTERS));
            let prefix = format!("spare_{}_", spare.device.model_name());
            out.extend(
                spare
                    .device
                    .counter_descriptors()
                    .iter()
                    .map(|d| d.within(&prefix)),
            );
        }
        for (i, member) in self.members.iter().enumerate() {
            let prefix = format!("child{i}_{}_", member.device.model_name());
            out.extend(
                member
                    .device
                    .counter_descriptors()
                    .iter()
                    .map(|d| d.within(&prefix)),
            );
        }
        out
    }

    fn parts(&self) -> Vec<DevicePart> {
        let members = self.members.iter().enumerate().flat_map(|(i, m)| {
            DevicePart::child(format!("child{i}_{}_", m.device.model_name()), &*m.device)
        });
        let spare = self.spare.iter().flat_map(|m| {
            DevicePart::child(format!("spare_{}_", m.device.model_name()), &*m.device)
        });
        members.chain(spare).collect()
    }

    /// Each member's arrays under `child{i}`, then the spare's under `spare`.
    fn block_wear(&self) -> Vec<BlockWear> {
        let members = self.members.iter().enumerate().flat_map(|(i, m)| {
            m.device
                .block_wear()
                .into_iter()
                .map(move |w| w.within(&format!("child{i}")))
        });
        let spare = self
            .spare
            .iter()
            .flat_map(|m| m.device.block_wear().into_iter().map(|w| w.within("spare")));
        members.chain(spare).collect()
    }
}

#[cfg(test)]
mod counter_docs {
    /// The model's page lists exactly these counters (`STORSIM_BLESS_DOCS=1` rewrites it).
    #[test]
    fn the_page_lists_exactly_the_parity_descriptors() {
        let tables = storsim_core::conformance::counter_tables(&[
            ("array-parity", super::PARITY_COUNTERS),
            ("array-spare", super::SPARE_COUNTERS),
        ]);
        storsim_testenv::check_counter_tables("docs/models/array.md", &tables).unwrap();
    }
}
