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
//!
//! The parts, one concern each: `cache_map` (which block each flash slot holds, and in what
//! state), `split` (how the head request is served and split), `flush` (when dirty blocks go
//! to the disk, and the jobs that move them), `promotion` (read admission's copies into the
//! flash), `places` (the fixed places background work runs in) and `counters`. This file
//! holds the device itself and routes each child's completion to the part that sent it.

mod cache_map;
pub(crate) mod counters;
mod flush;
mod places;
mod promotion;
mod split;

pub use cache_map::Location;

use crate::fanout::{ChildDone, Fanout, Route, RouteLog, Side};
use crate::params::{HybridParams, Replacement};
use crate::parents::Parents;
use crate::policy::{CachePolicy, StampOrder};
use cache_map::CacheMap;
use counters::Counts;
use flush::Flushing;
use promotion::{Fill, Promotions, PROMOTE_JOBS_MAX};
use split::Cursor;
use storsim_core::{
    BlockWear, Completion, Described, Device, DeviceCounter, DeviceError, DevicePart, Request,
    SimTime,
};

/// Host child requests waiting for one child's queue; the head stops splitting beyond it.
const HOST_PENDING_MAX: usize = 64;
/// Flush jobs in flight at once. Each job has at most one child request waiting at a time,
/// so the pending queues never hold more than `HOST_PENDING_MAX + FLUSH_JOBS_MAX` entries.
const FLUSH_JOBS_MAX: usize = 8;
/// The longest run of blocks one flush job moves (one flash read, one disk write), and one
/// promotion copies (one flash write).
const FLUSH_RUN_BLOCKS_MAX: u64 = 64;
/// Flushes of a dirty block's data that may fail (an error from the flash read or the disk
/// write) before the controller stops trying. Each failure leaves the block dirty and the
/// next flush takes it again; after this many the flash keeps the block's only copy, still
/// served to reads, until a host write gives it new data. A bound, so that a disk that
/// refuses every write costs a few attempts per block rather than endless traffic.
const DESTAGE_ATTEMPTS_MAX: u8 = 3;

/// What a child request is for, so that its completion reaches the right concern.
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

/// A hybrid drive whose controller manages the flash (configuration 2).
pub struct HybridDevice {
    params: HybridParams,
    capacity_bytes: u64,
    fanout: Fanout<Tag>,
    cache: CacheMap,
    flush: Flushing,
    promotions: Promotions,
    parents: Parents,
    outstanding: usize,
    /// The head request while it is being split.
    cursor: Option<Cursor>,
    log: RouteLog,
    failed: Option<String>,
    counts: Counts,
    /// Whether `counters` lists the counters of children's errors; see
    /// [`HybridDevice::enable_fault_counters`].
    fault_counters: bool,
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
        policy: Box<dyn CachePolicy>,
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
        let cache = CacheMap::new(
            block_bytes,
            slot_count,
            capacity_bytes,
            &params.pinned,
            policy,
        )?;
        let flush = Flushing::new(params.flush, cache.unpinned_slots());
        Ok(HybridDevice {
            capacity_bytes,
            fanout: Fanout::new(
                flash,
                disk,
                HOST_PENDING_MAX + FLUSH_JOBS_MAX + PROMOTE_JOBS_MAX,
            ),
            cache,
            flush,
            promotions: Promotions::new(),
            parents: Parents::new(params.queue_depth),
            outstanding: 0,
            cursor: None,
            log: RouteLog::default(),
            failed: None,
            counts: Counts::default(),
            fault_counters: false,
            params,
        })
    }

    /// Lists the counters of children's errors in background work (failed flushes and
    /// promotions, unflushable blocks, writes sent around them) among the drive's counters. A
    /// driver turns them on when a faults layer sits over a child (the only way a child
    /// completes a request with an error); a drive without one lists the counters it always
    /// had, so its results keep their bytes.
    pub fn enable_fault_counters(&mut self) {
        self.fault_counters = true;
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
        self.cache.slot_count()
    }

    /// Dirty blocks outside the pinned ranges.
    pub fn dirty_blocks(&self) -> u64 {
        self.cache.dirty_blocks()
    }

    /// Where the newest copy of host byte `offset_bytes` lives, by the controller's map.
    pub fn locate(&self, offset_bytes: u64) -> Location {
        self.cache.locate(offset_bytes)
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
        // Refused, or completed with an error: either way the child did not do it.
        let failed = done.error.is_some() || !done.completion.status.is_ok();
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
                    self.cache.unuse_slot(s);
                }
                let p = self.parents.get_mut(parent);
                p.children_left -= 1;
                if p.status.is_ok() {
                    p.status = done.completion.status;
                }
                p.finish = p.finish.max(done.completion.finish);
                if p.children_left == 0 && p.dispatched {
                    self.complete(parent, now);
                }
                // The host read is complete (or waits only for its other children): copying
                // what it read into the flash happens after, off its critical path.
                if let Some(fill) = fill {
                    self.fill_done(fill, failed);
                }
            }
            Tag::Promote { job } => self.promote_done(job, failed),
            // A flush whose flash read failed has nothing to write to the disk.
            Tag::FlushRead { job } | Tag::FlushWrite { job } if failed => self.flush_failed(job),
            Tag::FlushRead { job } => self.flush_read_done(now, job),
            Tag::FlushWrite { job } => self.flush_write_done(job),
        }
    }

    fn complete(&mut self, parent: usize, now: SimTime) {
        let p = self.parents.complete(parent);
        self.outstanding -= 1;
        self.counts.host_done(p.request.op, p.served_index());
        if self.outstanding == 0 {
            self.flush.host_idle(now);
        }
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
        self.flush.host_arrived();
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
                self.flush.idle_reached();
            }
            self.work(t);
        }
        self.parents.drain(done);
    }

    fn counters(&self) -> Vec<DeviceCounter> {
        self.counter_list()
    }

    fn counter_descriptors(&self) -> Vec<Described> {
        let mut out: Vec<Described> = Described::all(counters::COUNTERS).collect();
        if self.fault_counters {
            out.extend(Described::all(counters::FAULT_COUNTERS));
        }
        self.fanout.child_descriptors(&mut out);
        out
    }

    fn parts(&self) -> Vec<DevicePart> {
        self.fanout.child_parts()
    }

    fn block_wear(&self) -> Vec<BlockWear> {
        self.fanout.child_block_wear()
    }
}
