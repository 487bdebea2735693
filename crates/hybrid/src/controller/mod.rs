//! Configuration 2: the hybrid controller (seed 002, §3.3–3.4, Figs. 4.8 and 4.9). The flash
//! is a cache in front of the disk, managed by the controller; the host sees one device with
//! the disk's capacity. With write admission (the thesis) the flash offloads small writes and
//! holds dirty blocks until they are flushed; with read admission (a first-generation Momentus
//! XT) it holds clean copies of blocks that reads fetched from the disk.
//!
//! Host requests are served in arrival order, one at a time at the head of the controller's
//! queue, as the thesis' request queue does: a write that must wait for flash space holds up
//! everything behind it, which is the cost of a full flush that the thesis measures. A request
//! at the head is split into child requests lazily, a cache block at a time, merging runs of
//! blocks that are contiguous on the same child, so no queue grows with the request's size.

use crate::fanout::{ChildDone, Fanout, Route, RouteCause, RouteLog, Side};
use crate::params::{Admission, FlushPolicy, HybridParams, Replacement};
use crate::parents::Parents;
use crate::policy::{CacheEvent, CachePolicy, StampOrder, Victims};
use std::collections::{BTreeMap, VecDeque};
use storsim_core::{Completion, Device, DeviceCounter, DeviceError, Op, Request, SimTime};

/// Host child requests waiting for one child's queue; the head stops splitting beyond it.
const HOST_PENDING_MAX: usize = 64;
/// Flush jobs in flight at once. Each job has at most one child request waiting at a time,
/// so the pending queues never hold more than `HOST_PENDING_MAX + FLUSH_JOBS_MAX` entries.
const FLUSH_JOBS_MAX: usize = 8;
/// The longest run of blocks one flush job moves (one flash read, one disk write), and one
/// promotion copies (one flash write).
const FLUSH_RUN_BLOCKS_MAX: u64 = 64;
/// Promotions (read admission) in flight on the flash at once, each one flash write. With the
/// flush jobs and host child requests, this bounds the flash's waiting queue.
const PROMOTE_JOBS_MAX: usize = 8;
/// Promotions waiting for one of the `PROMOTE_JOBS_MAX` places. A disk read that finds this
/// queue full does not cache what it read: promotion is an optimisation, never a reason for
/// the host to wait or for memory to grow.
const PROMOTE_WAITING_MAX: usize = 64;

/// What the controller's map says about a host byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location {
    /// Not cached: the disk holds the newest copy.
    Disk,
    /// Cached: the flash holds the newest copy at `flash_offset_bytes`. A clean block's disk
    /// copy is identical; a dirty one's is stale.
    Flash {
        flash_offset_bytes: u64,
        dirty: bool,
        pinned: bool,
    },
}

/// Why a flush ran, for the counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FlushCause {
    /// The on-demand policy's full flush.
    OnDemand,
    /// A write found no space under the watermark or idle policies and flushed what it needed.
    Space,
    LowWatermark,
    Idle,
}

impl FlushCause {
    const ALL: [FlushCause; 4] = [
        FlushCause::OnDemand,
        FlushCause::Space,
        FlushCause::LowWatermark,
        FlushCause::Idle,
    ];

    fn index(self) -> usize {
        self as usize
    }

    fn name(self) -> &'static str {
        match self {
            FlushCause::OnDemand => "on_demand",
            FlushCause::Space => "space",
            FlushCause::LowWatermark => "low_watermark",
            FlushCause::Idle => "idle",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SlotState {
    Free,
    /// A pinned block's slot before its first write: reads still go to the disk.
    Reserved,
    /// A pinned block's slot after writes that have not covered all of it: the bytes written
    /// (`HybridDevice::written`) are read from the flash, the rest still from the disk.
    Partial,
    Clean,
    Dirty,
    /// Read admission: the block was reserved when a read fetched it from the disk, and is
    /// copied into the slot once the disk answers. Reads still go to the disk until then.
    Filling,
    /// Out of the map (a write made its copy stale), but a flash request still uses the slot:
    /// it becomes free when the last one finishes.
    Orphan,
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    block: u64,
    state: SlotState,
    pinned: bool,
    flushing: bool,
    /// Bumped by every host write, so that a flush that raced with a write leaves the block
    /// dirty: only a flush of the newest data may mark it clean.
    generation: u32,
    flush_generation: u32,
    /// Host child requests in flight on this slot; a slot in use is never evicted.
    users: u32,
    /// While `Filling`: the sequence number of the host read whose disk data fills the slot,
    /// so that a slot freed and reserved again is not filled by an older read.
    fill: u64,
    /// A promotion (queued or in flight) writes this slot.
    promoting: bool,
}

const FREE_SLOT: Slot = Slot {
    block: u64::MAX,
    state: SlotState::Free,
    pinned: false,
    flushing: false,
    generation: 0,
    flush_generation: 0,
    users: 0,
    fill: 0,
    promoting: false,
};

/// The parts of a pinned block that writes have reached, while they do not cover all of it:
/// sorted, disjoint, non-adjacent byte ranges relative to the block's start. Ranges rather than
/// a bit per sector, so that requests that are not sector-aligned are exact too.
#[derive(Default)]
struct Written(Vec<(u64, u64)>);

impl Written {
    fn add(&mut self, start: u64, end: u64) {
        let (mut start, mut end) = (start, end);
        self.0.retain(|&(a, b)| {
            let apart = b < start || a > end;
            if !apart {
                start = start.min(a);
                end = end.max(b);
            }
            apart
        });
        let at = self.0.partition_point(|&(a, _)| a < start);
        self.0.insert(at, (start, end));
    }

    fn covers(&self, len: u64) -> bool {
        self.0 == [(0, len)]
    }

    /// Whether the byte at `offset` has been written, and where the stretch of bytes like it
    /// (written or not) that starts there ends, at most at `end`.
    fn stretch(&self, offset: u64, end: u64) -> (bool, u64) {
        for &(a, b) in &self.0 {
            if offset < a {
                return (false, end.min(a));
            }
            if offset < b {
                return (true, end.min(b));
            }
        }
        (false, end)
    }
}

/// Read admission: which part of the host's address space a disk read fetched for promotion.
#[derive(Clone, Copy)]
struct Fill {
    /// The host read's sequence number (`Slot::fill`).
    seq: u64,
    host_id: u64,
    host_offset: u64,
    len: u64,
}

enum Tag {
    Host {
        parent: usize,
        first_slot: u32,
        slots: u32,
        /// A disk read whose whole blocks were reserved for promotion.
        fill: Option<Fill>,
    },
    FlushRead {
        job: usize,
    },
    FlushWrite {
        job: usize,
    },
    Promote {
        job: usize,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Plan {
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

struct Cursor {
    parent: usize,
    plan: Plan,
    next_byte: u64,
    run: Option<Run>,
}

#[derive(Clone, Copy)]
struct Job {
    first_block: u64,
    first_slot: u32,
    count: u32,
    cause: FlushCause,
}

/// Read admission: one flash write copying `count` blocks, contiguous both in the host's
/// address space and in the flash, that host request `host_id` read from the disk.
#[derive(Clone, Copy)]
struct Promotion {
    first_block: u64,
    first_slot: u32,
    count: u32,
    host_id: u64,
}

#[derive(Default)]
struct Counts {
    /// Host requests by op (read, write) and by who served them: flash, disk, both.
    served: [[u64; 3]; 2],
    trims: u64,
    flushes: u64,
    read_blocks: u64,
    read_blocks_hit: u64,
    write_blocks_flash: u64,
    cleanups: [u64; 4],
    flushed_bytes: [u64; 4],
    evicted_blocks: u64,
    promoted_blocks: u64,
    promotion_dropped_blocks: u64,
    invalidated_blocks: u64,
    /// Child requests and bytes: [side][0 = host, 1 = flush, 2 = promote].
    child_requests: [[u64; 3]; 2],
    child_bytes: [[u64; 3]; 2],
}

/// A hybrid drive whose controller manages the flash (configuration 2).
pub struct HybridDevice {
    params: HybridParams,
    block_bytes: u64,
    capacity_bytes: u64,
    fanout: Fanout<Tag>,
    slots: Vec<Slot>,
    /// What has been written of each `Partial` slot. Only pinned slots are ever partial, and
    /// they are fixed at start, so this holds at most one entry per pinned block, each of at
    /// most `cache_block_bytes / 2` ranges.
    written: BTreeMap<u32, Written>,
    map: BTreeMap<u64, u32>,
    free: VecDeque<u32>,
    policy: Box<dyn CachePolicy>,
    unpinned_slots: u64,
    /// Dirty unpinned blocks, including those being flushed.
    dirty: u64,
    /// Clean blocks (never pinned ones): the only candidates for eviction.
    clean: u64,
    flushing_blocks: u64,
    high_blocks: u64,
    low_blocks: u64,
    parents: Parents,
    outstanding: usize,
    cursor: Option<Cursor>,
    jobs: Vec<Option<Job>>,
    jobs_in_flight: usize,
    on_demand_jobs: usize,
    full_flush_remaining: u64,
    watermark_active: bool,
    /// Blocks the head write still lacks, under the watermark and idle policies.
    space_shortfall: Option<u64>,
    idle_since: Option<SimTime>,
    idle_active: bool,
    victims: Vec<u64>,
    promotions: Vec<Option<Promotion>>,
    promotions_in_flight: usize,
    promote_waiting: VecDeque<Promotion>,
    log: RouteLog,
    failed: Option<String>,
    counts: Counts,
}

impl HybridDevice {
    /// Builds the controller over its two children with a built-in replacement policy.
    pub fn new(
        params: HybridParams,
        flash: Box<dyn Device>,
        disk: Box<dyn Device>,
    ) -> Result<Self, String> {
        let policy: Box<dyn CachePolicy> = match params.replacement {
            Replacement::Lru => Box::new(StampOrder::lru()),
            Replacement::Fifo => Box::new(StampOrder::fifo()),
        };
        Self::with_policy(params, flash, disk, policy)
    }

    /// Builds the controller with a policy of the caller's own (`params.replacement` is then
    /// ignored).
    pub fn with_policy(
        params: HybridParams,
        flash: Box<dyn Device>,
        disk: Box<dyn Device>,
        mut policy: Box<dyn CachePolicy>,
    ) -> Result<Self, String> {
        params.validate()?;
        let block_bytes = params.cache_block_bytes;
        let slot_count = flash.capacity_bytes() / block_bytes;
        if slot_count == 0 || slot_count > u32::MAX as u64 {
            return Err(format!(
                "the flash ({} bytes) must hold between 1 and 2^32 - 1 cache blocks of {} bytes",
                flash.capacity_bytes(),
                block_bytes
            ));
        }
        let capacity_bytes = disk.capacity_bytes();
        let mut slots = vec![FREE_SLOT; slot_count as usize];
        let mut map = BTreeMap::new();
        let mut next_slot: u64 = 0;
        for range in &params.pinned {
            if range.end_bytes > capacity_bytes {
                return Err(format!(
                    "pinned range [{}, {}) is past the end of the disk ({capacity_bytes} bytes)",
                    range.start_bytes, range.end_bytes
                ));
            }
            let first = range.start_bytes / block_bytes;
            let end = range.end_bytes.div_ceil(block_bytes);
            for block in first..end {
                if map.contains_key(&block) {
                    continue;
                }
                if next_slot == slot_count {
                    return Err(format!(
                        "the pinned ranges need more than the flash's {slot_count} cache blocks"
                    ));
                }
                slots[next_slot as usize] = Slot {
                    block,
                    state: SlotState::Reserved,
                    pinned: true,
                    ..FREE_SLOT
                };
                map.insert(block, next_slot as u32);
                next_slot += 1;
            }
        }
        let unpinned_slots = slot_count - next_slot;
        policy.register(unpinned_slots);
        let (high_blocks, low_blocks) = match params.flush {
            FlushPolicy::LowWatermark {
                high_fraction,
                low_fraction,
            } => (
                ((high_fraction * unpinned_slots as f64).ceil() as u64).max(1),
                (low_fraction * unpinned_slots as f64).floor() as u64,
            ),
            FlushPolicy::OnDemand | FlushPolicy::Idle { .. } => (u64::MAX, 0),
        };
        let queue_depth = params.queue_depth;
        Ok(HybridDevice {
            block_bytes,
            capacity_bytes,
            fanout: Fanout::new(
                flash,
                disk,
                HOST_PENDING_MAX + FLUSH_JOBS_MAX + PROMOTE_JOBS_MAX,
            ),
            free: (next_slot as u32..slot_count as u32).collect(),
            slots,
            written: BTreeMap::new(),
            map,
            policy,
            unpinned_slots,
            dirty: 0,
            clean: 0,
            flushing_blocks: 0,
            high_blocks,
            low_blocks,
            parents: Parents::new(queue_depth),
            outstanding: 0,
            cursor: None,
            jobs: vec![None; FLUSH_JOBS_MAX],
            jobs_in_flight: 0,
            on_demand_jobs: 0,
            full_flush_remaining: 0,
            watermark_active: false,
            space_shortfall: None,
            idle_since: Some(SimTime::ZERO),
            idle_active: false,
            victims: Vec::new(),
            promotions: vec![None; PROMOTE_JOBS_MAX],
            promotions_in_flight: 0,
            promote_waiting: VecDeque::with_capacity(PROMOTE_WAITING_MAX),
            log: RouteLog::default(),
            failed: None,
            counts: Counts::default(),
            params,
        })
    }

    pub fn params(&self) -> &HybridParams {
        &self.params
    }

    /// One of the two child devices, for its counters and capacity.
    pub fn child(&self, side: Side) -> &dyn Device {
        self.fanout.child(side)
    }

    /// Cache blocks the flash holds, pinned ones included.
    pub fn cache_blocks(&self) -> u64 {
        self.slots.len() as u64
    }

    /// Dirty blocks outside the pinned ranges.
    pub fn dirty_blocks(&self) -> u64 {
        self.dirty
    }

    /// Where the newest copy of host byte `offset_bytes` lives, by the controller's map.
    pub fn locate(&self, offset_bytes: u64) -> Location {
        let block = offset_bytes / self.block_bytes;
        match self.map.get(&block) {
            Some(&s) => {
                let slot = &self.slots[s as usize];
                match slot.state {
                    SlotState::Clean | SlotState::Dirty => Location::Flash {
                        flash_offset_bytes: s as u64 * self.block_bytes
                            + offset_bytes % self.block_bytes,
                        dirty: slot.state == SlotState::Dirty,
                        pinned: slot.pinned,
                    },
                    SlotState::Partial => {
                        let within = offset_bytes % self.block_bytes;
                        if self.written[&s].stretch(within, within + 1).0 {
                            Location::Flash {
                                flash_offset_bytes: s as u64 * self.block_bytes + within,
                                dirty: true,
                                pinned: true,
                            }
                        } else {
                            Location::Disk
                        }
                    }
                    SlotState::Free
                    | SlotState::Reserved
                    | SlotState::Filling
                    | SlotState::Orphan => Location::Disk,
                }
            }
            None => Location::Disk,
        }
    }

    /// Starts recording where child requests go, keeping at most `capacity` routes until
    /// they are drained.
    pub fn enable_route_log(&mut self, capacity: usize) {
        self.log.enable(capacity);
    }

    /// Moves the recorded routes to `out`, in the order they were decided; returns how many
    /// did not fit since the last drain.
    pub fn drain_routes(&mut self, out: &mut Vec<Route>) -> u64 {
        self.log.drain(out)
    }

    fn slot_of(&self, block: u64) -> Option<u32> {
        self.map.get(&block).copied()
    }

    /// Handles finished child requests, dispatches the head, starts flushes, until nothing
    /// more happens at `now`.
    fn work(&mut self, now: SimTime) {
        loop {
            // A child that finished something has room again for what waits for it.
            self.fanout.pump(now);
            while let Some(done) = self.fanout.done.pop_front() {
                self.child_done(now, done);
            }
            self.dispatch(now);
            self.start_flushes(now);
            self.start_promotions(now);
            if self.fanout.done.is_empty() {
                break;
            }
        }
    }

    fn child_done(&mut self, now: SimTime, done: ChildDone<Tag>) {
        if let Some(error) = &done.error {
            if self.failed.is_none() {
                self.failed = Some(format!(
                    "the {} child refused a request: {error}",
                    done.side.name()
                ));
            }
        }
        match done.tag {
            Tag::Host {
                parent,
                first_slot,
                slots,
                fill,
            } => {
                for s in first_slot..first_slot + slots {
                    self.slots[s as usize].users -= 1;
                    self.release_orphan(s);
                }
                let p = self.parents.get_mut(parent);
                p.children_left -= 1;
                p.finish = p.finish.max(done.completion.finish);
                if p.children_left == 0 && p.dispatched {
                    self.complete(parent, now);
                }
                // The host read is complete (or waits only for its other children): copying
                // what it read into the flash happens after, off its critical path.
                if let Some(fill) = fill {
                    self.fill_done(fill, done.error.is_some());
                }
            }
            Tag::Promote { job } => self.promote_done(job, done.error.is_some()),
            Tag::FlushRead { job } => {
                let j = self.jobs[job].expect("live flush job");
                assert!(
                    self.fanout.pending_len(Side::Disk) < HOST_PENDING_MAX + FLUSH_JOBS_MAX,
                    "a flush write found no room in the disk's queue"
                );
                let offset = j.first_block * self.block_bytes;
                let len = j.count as u64 * self.block_bytes;
                self.log.record(Route {
                    cause: RouteCause::FlushWrite,
                    op: Op::Write,
                    side: Side::Disk,
                    host_offset_bytes: offset,
                    device_offset_bytes: offset,
                    len_bytes: len,
                });
                self.counts.child_requests[1][1] += 1;
                self.counts.child_bytes[1][1] += len;
                self.fanout.push(
                    Side::Disk,
                    now,
                    Op::Write,
                    offset,
                    len,
                    Tag::FlushWrite { job },
                );
            }
            Tag::FlushWrite { job } => {
                let j = self.jobs[job].take().expect("live flush job");
                self.jobs_in_flight -= 1;
                if j.cause == FlushCause::OnDemand {
                    self.on_demand_jobs -= 1;
                }
                for i in 0..j.count {
                    let s = (j.first_slot + i) as usize;
                    let slot = &mut self.slots[s];
                    assert!(
                        slot.flushing && slot.block == j.first_block + i as u64,
                        "a flushing block left its slot"
                    );
                    slot.flushing = false;
                    self.flushing_blocks -= 1;
                    if slot.generation == slot.flush_generation {
                        slot.state = SlotState::Clean;
                        self.dirty -= 1;
                        self.clean += 1;
                        self.policy
                            .update(j.first_block + i as u64, CacheEvent::Cleaned);
                    }
                }
                self.counts.flushed_bytes[j.cause.index()] += j.count as u64 * self.block_bytes;
            }
        }
    }

    fn complete(&mut self, parent: usize, now: SimTime) {
        let p = self.parents.complete(parent);
        self.outstanding -= 1;
        let served = p.served_index();
        match p.request.op {
            Op::Read => self.counts.served[0][served] += 1,
            Op::Write => self.counts.served[1][served] += 1,
            Op::Trim => self.counts.trims += 1,
            Op::Flush => self.counts.flushes += 1,
        }
        if self.outstanding == 0 {
            self.idle_since = Some(now);
        }
    }

    /// Moves host requests from the head of the queue to the children, until one must wait.
    fn dispatch(&mut self, now: SimTime) {
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
        let b = self.block_bytes;
        let first = request.offset_bytes / b;
        let last = (request.end_bytes() - 1) / b;
        if self.params.admission == Admission::Reads {
            // Writes never enter a read cache: the disk takes them, and a flash copy of what
            // they overwrite (even in part) is dropped now, before any later read is split, so
            // the flash never answers with stale bytes. Dropping is cheaper than rewriting the
            // copy, and a block that is read again is promoted again.
            self.invalidate_range(first, last);
            let pinned = self.map.range(first..=last).next().is_some();
            return Some(if pinned {
                Plan::Around
            } else {
                Plan::WholeDisk
            });
        }
        let small = request.len_bytes < self.params.small_write_threshold_bytes;
        let on_flash = self.map.range(first..=last).next().is_some();
        if !small && !on_flash {
            return Some(Plan::WholeDisk);
        }
        let full_first = request.offset_bytes.div_ceil(b);
        let full_end = request.end_bytes() / b;
        let covered = full_end.saturating_sub(full_first);
        let cached = if covered == 0 {
            0
        } else {
            self.map.range(full_first..full_end).count() as u64
        };
        let needed = covered - cached;
        if needed > self.unpinned_slots {
            return Some(Plan::Cache { oversize: true });
        }
        if self.full_flush_remaining > 0 || self.on_demand_jobs > 0 {
            return None;
        }
        if self.free.len() as u64 >= needed {
            self.space_shortfall = None;
            return Some(Plan::Cache { oversize: false });
        }
        self.evict(needed - self.free.len() as u64, first, last);
        let free = self.free.len() as u64;
        if free >= needed {
            self.space_shortfall = None;
            return Some(Plan::Cache { oversize: false });
        }
        match self.params.flush {
            FlushPolicy::OnDemand => {
                // The thesis' cleanup: every dirty block goes to the disk before the write.
                self.full_flush_remaining = self.dirty - self.flushing_blocks;
                self.counts.cleanups[FlushCause::OnDemand.index()] += 1;
            }
            FlushPolicy::LowWatermark { .. } | FlushPolicy::Idle { .. } => {
                if self.space_shortfall.is_none() {
                    self.counts.cleanups[FlushCause::Space.index()] += 1;
                }
                self.space_shortfall = Some(needed - free);
            }
        }
        None
    }

    /// Evicts up to `count` clean, unused blocks outside `[first, last]` (the head write's own
    /// blocks), in the policy's order.
    fn evict(&mut self, count: u64, first: u64, last: u64) {
        // Without clean blocks there is nothing to evict; asking would scan the whole cache.
        if self.clean == 0 {
            return;
        }
        let eligible = |slots: &[Slot], map: &BTreeMap<u64, u32>, block: u64| {
            if (first..=last).contains(&block) {
                return false;
            }
            map.get(&block).is_some_and(|&s| {
                let slot = &slots[s as usize];
                slot.state == SlotState::Clean && !slot.pinned && slot.users == 0
            })
        };
        self.victims.clear();
        {
            let (slots, map) = (&self.slots, &self.map);
            self.policy.cleanup(
                Victims::Evict,
                count as usize,
                &mut |block| eligible(slots, map, block),
                &mut self.victims,
            );
        }
        let mut evicted = 0;
        let victims = std::mem::take(&mut self.victims);
        for &block in &victims {
            if evicted == count {
                break;
            }
            if eligible(&self.slots, &self.map, block) {
                self.remove_block(block);
                evicted += 1;
            }
        }
        self.victims = victims;
        if evicted < count {
            // The policy offered too few: take eligible blocks in slot order.
            for s in 0..self.slots.len() {
                if evicted == count {
                    break;
                }
                let block = self.slots[s].block;
                if self.slots[s].state != SlotState::Free && eligible(&self.slots, &self.map, block)
                {
                    self.remove_block(block);
                    evicted += 1;
                }
            }
        }
    }

    fn remove_block(&mut self, block: u64) {
        let s = self.map.remove(&block).expect("evicting a cached block");
        assert_eq!(
            self.slots[s as usize].state,
            SlotState::Clean,
            "only clean blocks are evicted"
        );
        self.clean -= 1;
        self.slots[s as usize] = FREE_SLOT;
        self.free.push_back(s);
        self.policy.update(block, CacheEvent::Removed);
        assert!(
            !self.policy.is_cached(block),
            "the cache policy `{}` still holds evicted block {block}",
            self.policy.name()
        );
        self.counts.evicted_blocks += 1;
    }

    /// Read admission: gives `block`, which the head read (`parent`) fetches whole from the
    /// disk, a slot to be copied into once the disk has answered, evicting a clean block
    /// outside `[first, last]` (the read's own) if no slot is free. Returns false when nothing
    /// can be evicted: the block is then simply not cached, and the read never waits.
    fn reserve(&mut self, block: u64, parent: usize, first: u64, last: u64) -> bool {
        if self.free.is_empty() {
            self.evict(1, first, last);
        }
        let Some(s) = self.free.pop_front() else {
            return false;
        };
        let seq = self.parents.get(parent).seq;
        self.slots[s as usize] = Slot {
            block,
            state: SlotState::Filling,
            fill: seq,
            ..FREE_SLOT
        };
        self.map.insert(block, s);
        true
    }

    /// Read admission: drops the flash copy of every unpinned block in `[first, last]`.
    fn invalidate_range(&mut self, first: u64, last: u64) {
        let mut blocks = std::mem::take(&mut self.victims);
        blocks.clear();
        blocks.extend(
            self.map
                .range(first..=last)
                .filter(|(_, &s)| !self.slots[s as usize].pinned)
                .map(|(&block, _)| block),
        );
        for &block in &blocks {
            self.invalidate(block);
        }
        self.victims = blocks;
    }

    /// Takes `block` out of the map. Its slot is free at once unless a flash request still
    /// uses it (a host read of the old copy, a promotion), in which case it waits as an orphan.
    fn invalidate(&mut self, block: u64) {
        let s = self
            .map
            .remove(&block)
            .expect("invalidating a cached block");
        let slot = self.slots[s as usize];
        match slot.state {
            SlotState::Clean => {
                self.clean -= 1;
                self.policy.update(block, CacheEvent::Removed);
                assert!(
                    !self.policy.is_cached(block),
                    "the cache policy `{}` still holds invalidated block {block}",
                    self.policy.name()
                );
            }
            // The policy learns of a promoted block only once it is clean.
            SlotState::Filling => {}
            state => panic!("read admission invalidated block {block} in state {state:?}"),
        }
        self.counts.invalidated_blocks += 1;
        self.slots[s as usize].state = SlotState::Orphan;
        self.release_orphan(s);
    }

    /// Frees an orphaned slot once no flash request uses it.
    fn release_orphan(&mut self, s: u32) {
        let slot = &self.slots[s as usize];
        if slot.state == SlotState::Orphan && slot.users == 0 && !slot.promoting {
            self.slots[s as usize] = FREE_SLOT;
            self.free.push_back(s);
        }
    }

    /// A disk read with reserved blocks finished: queue the copies of those still reserved
    /// for it (a write may have dropped some), in runs contiguous on both sides. A failed read
    /// fetched nothing, so its reservations are released.
    fn fill_done(&mut self, fill: Fill, failed: bool) {
        let b = self.block_bytes;
        let first = fill.host_offset.div_ceil(b);
        let end = (fill.host_offset + fill.len) / b;
        let mut run: Option<Promotion> = None;
        for block in first..end {
            let Some(s) = self.slot_of(block) else {
                continue;
            };
            let slot = &self.slots[s as usize];
            if slot.state != SlotState::Filling || slot.fill != fill.seq || slot.promoting {
                continue;
            }
            if failed {
                self.cancel_fill(block, s);
                continue;
            }
            match &mut run {
                Some(r)
                    if r.first_block + r.count as u64 == block
                        && r.first_slot + r.count == s
                        && (r.count as u64) < FLUSH_RUN_BLOCKS_MAX =>
                {
                    r.count += 1
                }
                _ => {
                    if let Some(r) = run.take() {
                        self.queue_promotion(r);
                    }
                    run = Some(Promotion {
                        first_block: block,
                        first_slot: s,
                        count: 1,
                        host_id: fill.host_id,
                    });
                }
            }
        }
        if let Some(r) = run {
            self.queue_promotion(r);
        }
    }

    fn queue_promotion(&mut self, p: Promotion) {
        if self.promote_waiting.len() < PROMOTE_WAITING_MAX {
            for s in p.first_slot..p.first_slot + p.count {
                self.slots[s as usize].promoting = true;
            }
            self.promote_waiting.push_back(p);
        } else {
            for i in 0..p.count {
                self.cancel_fill(p.first_block + i as u64, p.first_slot + i);
            }
            self.counts.promotion_dropped_blocks += p.count as u64;
        }
    }

    /// Releases a reservation that will not be filled. Nothing uses a filling slot yet.
    fn cancel_fill(&mut self, block: u64, s: u32) {
        self.map.remove(&block);
        self.slots[s as usize] = FREE_SLOT;
        self.free.push_back(s);
    }

    /// Issues queued promotions while there is a place for them.
    fn start_promotions(&mut self, now: SimTime) {
        while self.promotions_in_flight < PROMOTE_JOBS_MAX {
            let Some(p) = self.promote_waiting.pop_front() else {
                return;
            };
            let slots = p.first_slot..p.first_slot + p.count;
            // Writes dropped every block of this run while it waited: copying bytes nobody
            // will read would only cost flash time.
            if slots
                .clone()
                .all(|s| self.slots[s as usize].state == SlotState::Orphan)
            {
                for s in slots {
                    self.slots[s as usize].promoting = false;
                    self.release_orphan(s);
                }
                continue;
            }
            let job = self
                .promotions
                .iter()
                .position(Option::is_none)
                .expect("a free promotion place");
            self.promotions[job] = Some(p);
            self.promotions_in_flight += 1;
            let len = p.count as u64 * self.block_bytes;
            self.log.record(Route {
                cause: RouteCause::Promote { id: p.host_id },
                op: Op::Write,
                side: Side::Flash,
                host_offset_bytes: p.first_block * self.block_bytes,
                device_offset_bytes: p.first_slot as u64 * self.block_bytes,
                len_bytes: len,
            });
            self.counts.child_requests[0][2] += 1;
            self.counts.child_bytes[0][2] += len;
            self.fanout.push(
                Side::Flash,
                now,
                Op::Write,
                p.first_slot as u64 * self.block_bytes,
                len,
                Tag::Promote { job },
            );
        }
    }

    /// A promotion's flash write finished: its blocks are clean cached copies now, except
    /// those a write dropped meanwhile (orphans, freed here). A failed write cached nothing.
    fn promote_done(&mut self, job: usize, failed: bool) {
        let p = self.promotions[job].take().expect("live promotion");
        self.promotions_in_flight -= 1;
        for i in 0..p.count {
            let s = p.first_slot + i;
            let block = p.first_block + i as u64;
            self.slots[s as usize].promoting = false;
            match self.slots[s as usize].state {
                SlotState::Filling if failed => self.cancel_fill(block, s),
                SlotState::Filling => {
                    assert_eq!(
                        self.slots[s as usize].block, block,
                        "a promoted block left its slot"
                    );
                    self.slots[s as usize].state = SlotState::Clean;
                    self.clean += 1;
                    self.counts.promoted_blocks += 1;
                    self.policy.update(block, CacheEvent::Promoted);
                    assert!(
                        self.policy.is_cached(block),
                        "the cache policy `{}` lost promoted block {block}",
                        self.policy.name()
                    );
                }
                SlotState::Orphan => self.release_orphan(s),
                state => panic!("a promoted slot was {state:?}"),
            }
        }
    }

    /// Emits the cursor's child requests; returns true when the request is fully dispatched,
    /// false when a child's queue is full (the cursor keeps its place).
    fn split(&mut self, now: SimTime, cursor: &mut Cursor) -> bool {
        let request = self.parents.get(cursor.parent).request;
        match cursor.plan {
            Plan::Both => {
                if !self.room(Side::Flash) || !self.room(Side::Disk) {
                    return false;
                }
                for side in [Side::Flash, Side::Disk] {
                    self.emit(
                        now,
                        cursor.parent,
                        request,
                        Run {
                            side,
                            host_offset: 0,
                            device_offset: 0,
                            len: 0,
                            first_slot: 0,
                            slots: 0,
                            fills: false,
                        },
                    );
                }
                return true;
            }
            Plan::WholeDisk => {
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
                return true;
            }
            Plan::Split | Plan::Cache { .. } | Plan::Around => {}
        }
        let (first_block, last_block) = (
            request.offset_bytes / self.block_bytes,
            (request.end_bytes() - 1) / self.block_bytes,
        );
        let b = self.block_bytes;
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
            if !merges {
                if let Some(run) = cursor.run {
                    if !self.room(run.side) {
                        return false;
                    }
                    self.emit(now, cursor.parent, request, run);
                    cursor.run = None;
                }
            }
            let fills = request.op == Op::Read
                && side == Side::Disk
                && self.params.admission == Admission::Reads
                && start == block * b
                && seg_end == (block + 1) * b
                && self.slot_of(block).is_none()
                && self.reserve(block, cursor.parent, first_block, last_block);
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
        match self.slot_of(block) {
            Some(s) if self.slots[s as usize].state == SlotState::Partial => {
                let base = block * self.block_bytes;
                let (written, stop) = self.written[&s].stretch(start - base, end - base);
                if written {
                    (Side::Flash, Some(s), base + stop)
                } else {
                    (Side::Disk, None, base + stop)
                }
            }
            _ => (side, slot, end),
        }
    }

    /// Where one block's part of the head request goes: the flash slot, or the disk.
    fn place(&self, plan: Plan, block: u64, start: u64, end: u64) -> (Side, Option<u32>) {
        let existing = self.slot_of(block);
        match plan {
            Plan::Split => match existing {
                Some(s)
                    if matches!(
                        self.slots[s as usize].state,
                        SlotState::Clean | SlotState::Dirty
                    ) =>
                {
                    (Side::Flash, Some(s))
                }
                _ => (Side::Disk, None),
            },
            // A cached block holds all of its data, so it takes any part of a write. A pinned
            // block takes any part too, and remembers which parts it has (`commit`).
            Plan::Cache { oversize } => match existing {
                Some(s) => (Side::Flash, Some(s)),
                None => {
                    let whole =
                        start == block * self.block_bytes && end == (block + 1) * self.block_bytes;
                    if whole && !oversize {
                        let s = *self.free.front().expect("space was reserved for the write");
                        (Side::Flash, Some(s))
                    } else {
                        // A block enters the flash only whole, so that a cached block always
                        // holds all of its newest data.
                        (Side::Disk, None)
                    }
                }
            },
            Plan::Around => match existing {
                Some(s) if self.slots[s as usize].pinned => (Side::Flash, Some(s)),
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
            Op::Read => {
                if !self.slots[s as usize].pinned {
                    self.policy.update(block, CacheEvent::Read);
                }
            }
            Op::Write => {
                self.counts.write_blocks_flash += 1;
                if self.slots[s as usize].state == SlotState::Free {
                    let popped = self.free.pop_front();
                    assert_eq!(popped, Some(s), "a new block takes the first free slot");
                    // The state becomes dirty just below, with the other writes.
                    self.slots[s as usize] = Slot { block, ..FREE_SLOT };
                    self.map.insert(block, s);
                    self.policy.update(block, CacheEvent::Inserted);
                    assert!(
                        self.policy.is_cached(block),
                        "the cache policy `{}` lost inserted block {block}",
                        self.policy.name()
                    );
                } else if !self.slots[s as usize].pinned {
                    self.policy.update(block, CacheEvent::Written);
                }
                if self.pinned_stays_partial(s, block, start, end) {
                    self.slots[s as usize].users += 1;
                    return Some(s);
                }
                let slot = &mut self.slots[s as usize];
                if slot.state == SlotState::Clean {
                    self.clean -= 1;
                }
                if slot.state != SlotState::Dirty && !slot.pinned {
                    self.dirty += 1;
                }
                slot.state = SlotState::Dirty;
                slot.generation = slot.generation.wrapping_add(1);
                if self.dirty >= self.high_blocks && !self.watermark_active {
                    self.watermark_active = true;
                    self.counts.cleanups[FlushCause::LowWatermark.index()] += 1;
                }
            }
            Op::Trim | Op::Flush => {}
        }
        self.slots[s as usize].users += 1;
        Some(s)
    }

    /// A write of `[start, end)` to pinned slot `s`: before the block's first write its disk
    /// copy is all there is, so the flash holds only the bytes written until they cover the
    /// whole block. Keeps track of them and returns true while the block stays partial; false
    /// once the flash holds the whole block (or always held it), which is then simply dirty.
    /// This is per-sector validity rather than a read-modify-write: a pinned block is never
    /// flushed, so nothing ever needs the whole block on the flash, and no write waits for a
    /// disk read.
    fn pinned_stays_partial(&mut self, s: u32, block: u64, start: u64, end: u64) -> bool {
        let slot = self.slots[s as usize];
        if !slot.pinned || !matches!(slot.state, SlotState::Reserved | SlotState::Partial) {
            return false;
        }
        let base = block * self.block_bytes;
        let written = self.written.entry(s).or_default();
        written.add(start - base, end - base);
        if written.covers(self.block_bytes) {
            self.written.remove(&s);
            return false;
        }
        let slot = &mut self.slots[s as usize];
        slot.state = SlotState::Partial;
        slot.generation = slot.generation.wrapping_add(1);
        true
    }

    fn emit(&mut self, now: SimTime, parent: usize, request: Request, run: Run) {
        let p = self.parents.get_mut(parent);
        p.children_left += 1;
        p.sides[match run.side {
            Side::Flash => 0,
            Side::Disk => 1,
        }] = true;
        let seq = p.seq;
        let side_index = match run.side {
            Side::Flash => 0,
            Side::Disk => 1,
        };
        self.counts.child_requests[side_index][0] += 1;
        self.counts.child_bytes[side_index][0] += run.len;
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

    /// How many more blocks should start flushing now, and why.
    fn flush_demand(&mut self) -> Option<(FlushCause, u64)> {
        let idle_dirty = self.dirty - self.flushing_blocks;
        if self.full_flush_remaining > 0 {
            return Some((FlushCause::OnDemand, self.full_flush_remaining));
        }
        if let Some(short) = self.space_shortfall {
            let more = short.saturating_sub(self.flushing_blocks);
            if more > 0 {
                return Some((FlushCause::Space, more));
            }
        }
        if self.watermark_active {
            let excess = idle_dirty.saturating_sub(self.low_blocks);
            if excess > 0 {
                return Some((FlushCause::LowWatermark, excess));
            }
            self.watermark_active = false;
        }
        if self.idle_active && idle_dirty > 0 {
            return Some((FlushCause::Idle, idle_dirty));
        }
        None
    }

    fn start_flushes(&mut self, now: SimTime) {
        while self.jobs_in_flight < FLUSH_JOBS_MAX {
            let Some((cause, want)) = self.flush_demand() else {
                return;
            };
            let started = self.start_job(now, cause, want);
            if cause == FlushCause::OnDemand {
                self.full_flush_remaining = self.full_flush_remaining.saturating_sub(started);
                if started == 0 {
                    self.full_flush_remaining = 0;
                }
            }
            if started == 0 {
                return;
            }
        }
    }

    /// Starts one flush job for up to `want` blocks: the policy's first dirty victim and the
    /// dirty blocks next to it (contiguous on both the disk and the flash). Returns the
    /// number of blocks in the job.
    fn start_job(&mut self, now: SimTime, cause: FlushCause, want: u64) -> u64 {
        // Every dirty block is already being flushed: asking would scan the whole cache.
        if self.dirty == self.flushing_blocks {
            return 0;
        }
        let flushable = |slots: &[Slot], map: &BTreeMap<u64, u32>, block: u64| {
            map.get(&block).is_some_and(|&s| {
                let slot = &slots[s as usize];
                slot.state == SlotState::Dirty && !slot.pinned && !slot.flushing
            })
        };
        self.victims.clear();
        {
            let (slots, map) = (&self.slots, &self.map);
            self.policy.cleanup(
                Victims::Flush,
                1,
                &mut |block| flushable(slots, map, block),
                &mut self.victims,
            );
        }
        let mut first = self
            .victims
            .iter()
            .copied()
            .find(|&block| flushable(&self.slots, &self.map, block));
        if first.is_none() {
            first = self
                .slots
                .iter()
                .find(|slot| slot.state == SlotState::Dirty && !slot.pinned && !slot.flushing)
                .map(|slot| slot.block);
        }
        let Some(victim) = first else {
            return 0;
        };
        let limit = want.clamp(1, FLUSH_RUN_BLOCKS_MAX);
        let victim_slot = self.slot_of(victim).expect("victim is cached");
        let (mut first_block, mut first_slot, mut count) = (victim, victim_slot, 1u64);
        while count < limit {
            let (b, s) = (first_block + count, first_slot as u64 + count);
            if self.slot_of(b) == Some(s as u32) && flushable(&self.slots, &self.map, b) {
                count += 1;
            } else {
                break;
            }
        }
        while count < limit && first_block > 0 && first_slot > 0 {
            let (b, s) = (first_block - 1, first_slot - 1);
            if self.slot_of(b) == Some(s) && flushable(&self.slots, &self.map, b) {
                first_block = b;
                first_slot = s;
                count += 1;
            } else {
                break;
            }
        }
        for i in 0..count {
            let slot = &mut self.slots[(first_slot as u64 + i) as usize];
            slot.flushing = true;
            slot.flush_generation = slot.generation;
        }
        self.flushing_blocks += count;
        let job = self
            .jobs
            .iter()
            .position(Option::is_none)
            .expect("a free job");
        self.jobs[job] = Some(Job {
            first_block,
            first_slot,
            count: count as u32,
            cause,
        });
        self.jobs_in_flight += 1;
        if cause == FlushCause::OnDemand {
            self.on_demand_jobs += 1;
        }
        let len = count * self.block_bytes;
        self.log.record(Route {
            cause: RouteCause::FlushRead,
            op: Op::Read,
            side: Side::Flash,
            host_offset_bytes: first_block * self.block_bytes,
            device_offset_bytes: first_slot as u64 * self.block_bytes,
            len_bytes: len,
        });
        self.counts.child_requests[0][1] += 1;
        self.counts.child_bytes[0][1] += len;
        self.fanout.push(
            Side::Flash,
            now,
            Op::Read,
            first_slot as u64 * self.block_bytes,
            len,
            Tag::FlushRead { job },
        );
        count
    }

    fn idle_deadline(&self) -> Option<SimTime> {
        let FlushPolicy::Idle { idle } = self.params.flush else {
            return None;
        };
        if self.idle_active || self.dirty == self.flushing_blocks {
            return None;
        }
        self.idle_since.map(|t| t + idle)
    }
}

impl Device for HybridDevice {
    fn model_name(&self) -> &'static str {
        "hybrid"
    }

    fn capacity_bytes(&self) -> u64 {
        self.capacity_bytes
    }

    fn queue_depth(&self) -> usize {
        self.params.queue_depth
    }

    fn submit(&mut self, now: SimTime, request: Request) -> Result<(), DeviceError> {
        crate::fanout::check_submission(self.failed.as_deref(), &request, self.capacity_bytes)?;
        self.parents.admit(now, request)?;
        self.outstanding += 1;
        // A host request ends idleness: idle flushing in flight finishes, no more starts.
        self.idle_since = None;
        self.idle_active = false;
        self.work(now);
        Ok(())
    }

    fn next_deadline(&self) -> Option<SimTime> {
        let finished = self.parents.next_finish();
        [finished, self.fanout.next_deadline(), self.idle_deadline()]
            .into_iter()
            .flatten()
            .min()
    }

    fn advance(&mut self, now: SimTime, done: &mut Vec<Completion>) {
        loop {
            let children = self.fanout.next_deadline();
            let idle = self.idle_deadline();
            let Some(t) = [children, idle].into_iter().flatten().min() else {
                break;
            };
            if t > now {
                break;
            }
            self.fanout.advance(t);
            if idle == Some(t) {
                self.idle_active = true;
                self.counts.cleanups[FlushCause::Idle.index()] += 1;
            }
            self.work(t);
        }
        self.parents.drain(done);
    }

    fn counters(&self) -> Vec<DeviceCounter> {
        let c = &self.counts;
        let mut out = Vec::new();
        let mut push = |name: &str, value: f64| out.push(DeviceCounter::new(name, value));
        for (op, row) in ["read", "write"].iter().zip(c.served.iter()) {
            push(&format!("host_{op}s_flash"), row[0] as f64);
            push(&format!("host_{op}s_disk"), row[1] as f64);
            push(&format!("host_{op}s_split"), row[2] as f64);
        }
        push("host_trims", c.trims as f64);
        push("host_flushes", c.flushes as f64);
        push("read_blocks", c.read_blocks as f64);
        push("read_blocks_hit", c.read_blocks_hit as f64);
        let hit = if c.read_blocks == 0 {
            0.0
        } else {
            c.read_blocks_hit as f64 / c.read_blocks as f64
        };
        push("read_hit_ratio", hit);
        push("write_blocks_flash", c.write_blocks_flash as f64);
        for cause in FlushCause::ALL {
            push(
                &format!("flush_{}_cleanups", cause.name()),
                c.cleanups[cause.index()] as f64,
            );
            push(
                &format!("flush_{}_bytes", cause.name()),
                c.flushed_bytes[cause.index()] as f64,
            );
        }
        push("evicted_blocks", c.evicted_blocks as f64);
        push("promoted_blocks", c.promoted_blocks as f64);
        push(
            "promotion_dropped_blocks",
            c.promotion_dropped_blocks as f64,
        );
        push("invalidated_blocks", c.invalidated_blocks as f64);
        push("cache_blocks", self.slots.len() as f64);
        push("dirty_blocks", self.dirty as f64);
        for (side, s) in [("flash", 0), ("disk", 1)] {
            for (cause, k) in [("host", 0), ("flush", 1), ("promote", 2)] {
                // Only the flash receives promotions.
                if k == 2 && s == 1 {
                    continue;
                }
                push(
                    &format!("to_{side}_{cause}_requests"),
                    c.child_requests[s][k] as f64,
                );
                push(
                    &format!("to_{side}_{cause}_bytes"),
                    c.child_bytes[s][k] as f64,
                );
            }
        }
        push("child_refusals", self.fanout.refusals() as f64);
        self.fanout.child_counters(&mut out);
        out
    }
}
