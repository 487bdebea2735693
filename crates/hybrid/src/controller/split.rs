//! Serving the head of the host queue: deciding how a request is served (Fig. 4.9 for
//! writes), then splitting it lazily, a cache block at a time, into child requests that merge
//! runs of blocks contiguous on the same child, and applying each block's part to the cache map.

use super::cache_map::SlotState;
use super::counters::ChildCause;
use super::promotion::Fill;
use super::{HybridDevice, Tag, HOST_PENDING_MAX};
use crate::fanout::{Route, RouteCause, Side};
use crate::params::Admission;
use storsim_core::{Op, Request, SimTime};

/// How the head request is served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Plan {
    /// Reads and trims: each block from where its newest copy is.
    Split,
    /// A large write with no block on the flash: one disk request.
    WholeDisk,
    /// Read admission: a write that touches pinned blocks. Those go to their flash slots,
    /// the rest to the disk.
    Around,
    /// A write through the cache. With `oversize`, the write needs more new blocks than the
    /// cache has, so its uncached blocks go to the disk instead.
    Cache { oversize: bool },
    /// A host flush: both children flush.
    Both,
}

/// The child request being built: consecutive pieces of the head request that are
/// contiguous on the same child.
#[derive(Clone, Copy)]
struct Run {
    side: Side,
    host_offset: u64,
    device_offset: u64,
    len: u64,
    first_slot: u32,
    slots: u32,
    /// Some of the run's blocks were reserved for promotion.
    fills: bool,
}

impl Run {
    /// A run without bytes or slots, as a host flush sends to each side.
    fn empty(side: Side) -> Self {
        Run {
            side,
            host_offset: 0,
            device_offset: 0,
            len: 0,
            first_slot: 0,
            slots: 0,
            fills: false,
        }
    }
}

/// Where splitting the head request stands.
pub(super) struct Cursor {
    parent: usize,
    plan: Plan,
    next_byte: u64,
    run: Option<Run>,
}

impl HybridDevice {
    /// Moves host requests from the head of the queue to the children, until one must wait.
    pub(super) fn dispatch(&mut self, now: SimTime) {
        loop {
            if self.cursor.is_none() {
                let Some(&parent) = self.parents.waiting.front() else {
                    return;
                };
                let Some(plan) = self.plan(parent) else {
                    return;
                };
                self.parents.waiting.pop_front();
                let p = self.parents.get_mut(parent);
                p.service_start = now;
                self.cursor = Some(Cursor {
                    parent,
                    plan,
                    next_byte: p.request.offset_bytes,
                    run: None,
                });
            }
            let mut cursor = self.cursor.take().expect("cursor set above");
            if !self.split(now, &mut cursor) {
                self.cursor = Some(cursor);
                return;
            }
            let p = self.parents.get_mut(cursor.parent);
            p.dispatched = true;
            if p.children_left == 0 {
                self.complete(cursor.parent, now);
            }
        }
    }

    /// Decides how the head request is served (Fig. 4.9 for writes), or `None` when it must
    /// wait for flash space.
    fn plan(&mut self, parent: usize) -> Option<Plan> {
        let request = self.parents.get(parent).request;
        match request.op {
            Op::Read | Op::Trim => return Some(Plan::Split),
            Op::Flush => return Some(Plan::Both),
            Op::Write => {}
        }
        let b = self.cache.block_bytes();
        let first = request.offset_bytes / b;
        let last = (request.end_bytes() - 1) / b;
        if self.params.admission == Admission::Reads {
            // Writes never enter a read cache: the disk takes them, and a flash copy of what
            // they overwrite (even in part) is dropped now, before any later read is split, so
            // the flash never answers with stale bytes. Dropping is cheaper than rewriting the
            // copy, and a block that is read again is promoted again.
            self.cache.invalidate_range(first, last);
            let pinned = self.cache.any_mapped(first, last);
            return Some(if pinned {
                Plan::Around
            } else {
                Plan::WholeDisk
            });
        }
        let small = request.len_bytes < self.params.small_write_threshold_bytes;
        let on_flash = self.cache.any_mapped(first, last);
        if !small && !on_flash {
            return Some(Plan::WholeDisk);
        }
        let full_first = request.offset_bytes.div_ceil(b);
        let full_end = request.end_bytes() / b;
        let covered = full_end.saturating_sub(full_first);
        let cached = if covered == 0 {
            0
        } else {
            self.cache.mapped_count(full_first, full_end)
        };
        let needed = covered - cached;
        if needed > self.cache.unpinned_slots() {
            return Some(Plan::Cache { oversize: true });
        }
        if self.flush.full_flush_pending() {
            return None;
        }
        if self.cache.free_slots() >= needed {
            self.flush.space_found();
            return Some(Plan::Cache { oversize: false });
        }
        self.cache
            .evict(needed - self.cache.free_slots(), first, last);
        let free = self.cache.free_slots();
        if free >= needed {
            self.flush.space_found();
            return Some(Plan::Cache { oversize: false });
        }
        let idle_dirty = self.cache.flushable_dirty_blocks() - self.cache.flushing_blocks();
        if self.cache.unflushable_blocks() > 0
            && idle_dirty == 0
            && self.cache.flushing_blocks() == 0
        {
            // Blocks that cannot reach the disk hold the space this write needs, and no flush
            // will free it: the write goes around the cache instead (its blocks already cached
            // still take it), as a cache full of dirty data it cannot write back sends writes
            // to the disk. Clean blocks in use by reads might come free later, but waiting
            // for them could be waiting for nothing; this happens only once flushes failed.
            self.counts.bypassed_writes += 1;
            return Some(Plan::Cache { oversize: true });
        }
        self.flush.space_needed(needed - free, idle_dirty);
        None
    }

    /// Emits the cursor's child requests; returns true when the request is fully dispatched,
    /// false when a child's queue is full (the cursor keeps its place).
    fn split(&mut self, now: SimTime, cursor: &mut Cursor) -> bool {
        let request = self.parents.get(cursor.parent).request;
        match cursor.plan {
            Plan::Both | Plan::WholeDisk => return self.emit_whole(now, cursor, request),
            Plan::Split | Plan::Cache { .. } | Plan::Around => {}
        }
        let b = self.cache.block_bytes();
        let (first_block, last_block) = (request.offset_bytes / b, (request.end_bytes() - 1) / b);
        let end = request.end_bytes();
        while cursor.next_byte < end {
            let start = cursor.next_byte;
            let block = start / b;
            let block_end = end.min((block + 1) * b);
            let (side, slot, seg_end) = self.destination(cursor.plan, block, start, block_end);
            // A read block counts once, at its first piece, and as a hit only if the flash
            // serves all of the read's part of it.
            if request.op == Op::Read && (start == request.offset_bytes || start == block * b) {
                self.counts.read_blocks += 1;
                if side == Side::Flash && seg_end == block_end {
                    self.counts.read_blocks_hit += 1;
                }
            }
            let device_offset = match slot {
                Some(s) => s as u64 * b + start % b,
                None => start,
            };
            let merges = cursor
                .run
                .is_some_and(|r| r.side == side && r.device_offset + r.len == device_offset);
            if !merges && !self.emit_run(now, cursor, request) {
                return false;
            }
            let fills = request.op == Op::Read
                && side == Side::Disk
                && self.params.admission == Admission::Reads
                && start == block * b
                && seg_end == (block + 1) * b
                && self.cache.slot_of(block).is_none()
                && self.cache.reserve(
                    block,
                    self.parents.get(cursor.parent).seq,
                    first_block,
                    last_block,
                );
            let slot = self.commit(request.op, block, slot, start, seg_end);
            let len = seg_end - start;
            cursor.run = Some(match cursor.run {
                Some(mut run) => {
                    run.len += len;
                    run.slots += slot.is_some() as u32;
                    run.fills |= fills;
                    run
                }
                None => Run {
                    side,
                    host_offset: start,
                    device_offset,
                    len,
                    first_slot: slot.unwrap_or(0),
                    slots: slot.is_some() as u32,
                    fills,
                },
            });
            cursor.next_byte = seg_end;
        }
        self.emit_run(now, cursor, request)
    }

    /// The plans that send the request whole: a host flush to both sides, or the request to
    /// the disk. Returns true once sent, false when a side it goes to has no room.
    fn emit_whole(&mut self, now: SimTime, cursor: &Cursor, request: Request) -> bool {
        if cursor.plan == Plan::Both {
            if !self.room(Side::Flash) || !self.room(Side::Disk) {
                return false;
            }
            for side in [Side::Flash, Side::Disk] {
                self.emit(now, cursor.parent, request, Run::empty(side));
            }
            return true;
        }
        if !self.room(Side::Disk) {
            return false;
        }
        self.emit(
            now,
            cursor.parent,
            request,
            Run {
                side: Side::Disk,
                host_offset: request.offset_bytes,
                device_offset: request.offset_bytes,
                len: request.len_bytes,
                first_slot: 0,
                slots: 0,
                fills: false,
            },
        );
        true
    }

    /// Emits the run the cursor has gathered, if any; false (the run kept) when its side has
    /// no room.
    #[inline]
    fn emit_run(&mut self, now: SimTime, cursor: &mut Cursor, request: Request) -> bool {
        if let Some(run) = cursor.run {
            if !self.room(run.side) {
                return false;
            }
            self.emit(now, cursor.parent, request, run);
            cursor.run = None;
        }
        true
    }

    fn room(&self, side: Side) -> bool {
        self.fanout.pending_len(side) < HOST_PENDING_MAX
    }

    /// Where the head request's bytes from `start` go, up to `end` (at most the end of
    /// `block`): the flash slot or the disk, and where that piece ends. A read or trim of a
    /// partly written pinned block ends its piece where the written part does.
    fn destination(
        &self,
        plan: Plan,
        block: u64,
        start: u64,
        end: u64,
    ) -> (Side, Option<u32>, u64) {
        let (side, slot) = self.place(plan, block, start, end);
        if plan != Plan::Split {
            return (side, slot, end);
        }
        match self.cache.slot_of(block) {
            Some(s) if self.cache.slot(s).state == SlotState::Partial => {
                let (written, stop) = self.cache.written_stretch(s, block, start, end);
                if written {
                    (Side::Flash, Some(s), stop)
                } else {
                    (Side::Disk, None, stop)
                }
            }
            _ => (side, slot, end),
        }
    }

    /// Where one block's part of the head request goes: the flash slot, or the disk.
    fn place(&self, plan: Plan, block: u64, start: u64, end: u64) -> (Side, Option<u32>) {
        let existing = self.cache.slot_of(block);
        match plan {
            Plan::Split => match existing {
                Some(s)
                    if matches!(
                        self.cache.slot(s).state,
                        SlotState::Clean | SlotState::Dirty
                    ) =>
                {
                    (Side::Flash, Some(s))
                }
                _ => (Side::Disk, None),
            },
            // A cached block holds all of its data, so it takes any part of a write. A pinned
            // block takes any part too, and remembers which parts it has (`CacheMap::write`).
            Plan::Cache { oversize } => match existing {
                Some(s) => (Side::Flash, Some(s)),
                None => {
                    let b = self.cache.block_bytes();
                    let whole = start == block * b && end == (block + 1) * b;
                    if whole && !oversize {
                        let s = self
                            .cache
                            .next_free()
                            .expect("space was reserved for the write");
                        (Side::Flash, Some(s))
                    } else {
                        // A block enters the flash only whole, so that a cached block always
                        // holds all of its newest data.
                        (Side::Disk, None)
                    }
                }
            },
            Plan::Around => match existing {
                Some(s) if self.cache.slot(s).pinned => (Side::Flash, Some(s)),
                _ => (Side::Disk, None),
            },
            Plan::WholeDisk | Plan::Both => unreachable!("not split by blocks"),
        }
    }

    /// Applies the head request's bytes `[start, end)` of `block` to the cache state; returns
    /// their slot.
    fn commit(
        &mut self,
        op: Op,
        block: u64,
        slot: Option<u32>,
        start: u64,
        end: u64,
    ) -> Option<u32> {
        let s = slot?;
        match op {
            Op::Read => self.cache.read(s, block),
            Op::Write => {
                self.counts.write_blocks_flash += 1;
                if self.cache.write(s, block, start, end) {
                    self.flush.dirtied(self.cache.flushable_dirty_blocks());
                }
            }
            Op::Trim | Op::Flush => {}
        }
        self.cache.use_slot(s);
        Some(s)
    }

    /// Sends `run`, a piece of host request `request` (in parent slot `parent`), to its child.
    fn emit(&mut self, now: SimTime, parent: usize, request: Request, run: Run) {
        let p = self.parents.get_mut(parent);
        p.children_left += 1;
        p.sides[run.side.index()] = true;
        let seq = p.seq;
        self.counts
            .child_request(run.side, ChildCause::Host, run.len);
        self.log.record(Route {
            cause: RouteCause::Host { id: request.id },
            op: request.op,
            side: run.side,
            host_offset_bytes: run.host_offset,
            device_offset_bytes: run.device_offset,
            len_bytes: run.len,
        });
        self.fanout.push(
            run.side,
            now,
            request.op,
            run.device_offset,
            run.len,
            Tag::Host {
                parent,
                first_slot: run.first_slot,
                slots: run.slots,
                fill: run.fills.then_some(Fill {
                    seq,
                    host_id: request.id,
                    host_offset: run.host_offset,
                    len: run.len,
                }),
            },
        );
    }
}
