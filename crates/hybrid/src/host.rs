//! Configuration 1: the OS manages the flash (seed 002, §3.2). The flash and the disk are two
//! devices to the host; a host-side placement policy, not a drive controller, decides where
//! each byte lives. Unlike configuration 2 there is no cache: data placed on the flash lives
//! there (no dirty state, no flush, no eviction), and the host may drop a flash copy whenever
//! it rewrites the data elsewhere, because the file system knows the data is superseded.
//!
//! Requests are split in arrival order at the head of one queue, as in configuration 2, so a
//! read always sees the placement of every write that arrived before it.

use crate::fanout::{ChildDone, Fanout, Route, RouteCause, RouteLog, Side};
use crate::params::{ByteRange, HostPlacement, HostTieredParams};
use crate::parents::Parents;
use std::collections::{BTreeMap, VecDeque};
use storsim_core::{
    BlockWear, Completion, CounterDescriptor, Described, Device, DeviceCounter, DeviceError,
    DevicePart, Op, Request, Scope, SimTime, Unit,
};

/// Child requests waiting for one child's queue.
const PENDING_MAX: usize = 64;

#[derive(Clone, Copy)]
struct Run {
    side: Side,
    host_offset: u64,
    device_offset: u64,
    len: u64,
}

struct Cursor {
    parent: usize,
    next_byte: u64,
    run: Option<Run>,
}

/// A change to the remap table that placing one block makes.
#[derive(Clone, Copy)]
enum Remap {
    Keep,
    /// The block moves to this free flash block.
    Allocate(u64),
    /// The block leaves the flash.
    Release,
}

/// The small-write placement's host remap table.
struct RemapTable {
    threshold_bytes: u64,
    block_bytes: u64,
    map: BTreeMap<u64, u64>,
    free: VecDeque<u64>,
}

/// A hybrid drive whose flash the host manages (configuration 1).
pub struct HostTieredDevice {
    params: HostTieredParams,
    capacity_bytes: u64,
    disk_capacity_bytes: u64,
    fanout: Fanout<usize>,
    /// Flash ranges, sorted by start, with where each begins on the flash.
    ranges: Vec<(ByteRange, u64)>,
    remap: Option<RemapTable>,
    parents: Parents,
    cursor: Option<Cursor>,
    log: RouteLog,
    failed: Option<String>,
    served: [[u64; 3]; 4],
    remapped_blocks_total: u64,
    released_blocks: u64,
}

impl HostTieredDevice {
    pub fn new(
        params: HostTieredParams,
        flash: Box<dyn Device>,
        disk: Box<dyn Device>,
    ) -> Result<Self, String> {
        params.validate()?;
        let disk_capacity_bytes = disk.capacity_bytes();
        let flash_capacity_bytes = flash.capacity_bytes();
        let mut ranges = Vec::new();
        let mut remap = None;
        let capacity_bytes = match &params.placement {
            HostPlacement::Separate => disk_capacity_bytes
                .checked_add(flash_capacity_bytes)
                .ok_or("the two capacities overflow a u64")?,
            HostPlacement::FlashRanges(list) => {
                let mut sorted = list.clone();
                sorted.sort();
                let mut flash_at = 0u64;
                for r in sorted {
                    if r.end_bytes > disk_capacity_bytes {
                        return Err(format!(
                            "flash range [{}, {}) is past the end of the disk ({} bytes)",
                            r.start_bytes, r.end_bytes, disk_capacity_bytes
                        ));
                    }
                    ranges.push((r, flash_at));
                    flash_at += r.len_bytes();
                }
                if flash_at > flash_capacity_bytes {
                    return Err(format!(
                        "the flash ranges total {flash_at} bytes, more than the flash's \
                         {flash_capacity_bytes}"
                    ));
                }
                disk_capacity_bytes
            }
            HostPlacement::SmallWrites {
                threshold_bytes,
                block_bytes,
            } => {
                let blocks = flash_capacity_bytes / block_bytes;
                if blocks == 0 {
                    return Err(format!(
                        "the flash ({flash_capacity_bytes} bytes) holds no {block_bytes}-byte block"
                    ));
                }
                remap = Some(RemapTable {
                    threshold_bytes: *threshold_bytes,
                    block_bytes: *block_bytes,
                    map: BTreeMap::new(),
                    free: (0..blocks).collect(),
                });
                disk_capacity_bytes
            }
        };
        let queue_depth = params.queue_depth;
        Ok(HostTieredDevice {
            capacity_bytes,
            disk_capacity_bytes,
            fanout: Fanout::new(flash, disk, PENDING_MAX),
            ranges,
            remap,
            parents: Parents::new(queue_depth),
            cursor: None,
            log: RouteLog::default(),
            failed: None,
            served: [[0; 3]; 4],
            remapped_blocks_total: 0,
            released_blocks: 0,
            params,
        })
    }

    pub fn params(&self) -> &HostTieredParams {
        &self.params
    }

    /// One of the two child devices, for its counters and capacity.
    pub fn child(&self, side: Side) -> &dyn Device {
        self.fanout.child(side)
    }

    /// Starts recording where child requests go (see [`crate::HybridDevice::enable_route_log`]).
    pub fn enable_route_log(&mut self, capacity: usize) {
        self.log.enable(capacity);
    }

    pub fn drain_routes(&mut self, out: &mut Vec<Route>) -> u64 {
        self.log.drain(out)
    }

    /// Where host byte `pos` of a request `[.., end)` goes: the side, the child's offset,
    /// where this piece ends, and the remap change placing it makes.
    fn destination(&self, request: &Request, pos: u64, end: u64) -> (Side, u64, u64, Remap) {
        match &self.params.placement {
            HostPlacement::Separate => {
                if pos < self.disk_capacity_bytes {
                    (
                        Side::Disk,
                        pos,
                        end.min(self.disk_capacity_bytes),
                        Remap::Keep,
                    )
                } else {
                    (
                        Side::Flash,
                        pos - self.disk_capacity_bytes,
                        end,
                        Remap::Keep,
                    )
                }
            }
            HostPlacement::FlashRanges(_) => {
                let i = self.ranges.partition_point(|(r, _)| r.end_bytes <= pos);
                match self.ranges.get(i) {
                    Some((r, at)) if r.start_bytes <= pos => (
                        Side::Flash,
                        at + pos - r.start_bytes,
                        end.min(r.end_bytes),
                        Remap::Keep,
                    ),
                    Some((r, _)) => (Side::Disk, pos, end.min(r.start_bytes), Remap::Keep),
                    None => (Side::Disk, pos, end, Remap::Keep),
                }
            }
            HostPlacement::SmallWrites { .. } => {
                let t = self
                    .remap
                    .as_ref()
                    .expect("small-write placement has a table");
                let b = t.block_bytes;
                let block = pos / b;
                let seg_end = end.min((block + 1) * b);
                let whole = pos == block * b && seg_end == (block + 1) * b;
                let mapped = t.map.get(&block).copied();
                let on_flash = |fb: u64| (Side::Flash, fb * b + pos % b, seg_end, Remap::Keep);
                match (request.op, mapped) {
                    (Op::Write, Some(_)) if whole && request.len_bytes >= t.threshold_bytes => {
                        (Side::Disk, pos, seg_end, Remap::Release)
                    }
                    (_, Some(fb)) => on_flash(fb),
                    (Op::Write, None) if whole && request.len_bytes < t.threshold_bytes => {
                        match t.free.front() {
                            Some(&fb) => (Side::Flash, fb * b, seg_end, Remap::Allocate(fb)),
                            None => (Side::Disk, pos, seg_end, Remap::Keep),
                        }
                    }
                    _ => (Side::Disk, pos, seg_end, Remap::Keep),
                }
            }
        }
    }

    fn apply(&mut self, pos: u64, change: Remap) {
        let Some(t) = self.remap.as_mut() else {
            return;
        };
        let block = pos / t.block_bytes;
        match change {
            Remap::Keep => {}
            Remap::Allocate(fb) => {
                let popped = t.free.pop_front();
                assert_eq!(popped, Some(fb), "a block takes the first free flash block");
                t.map.insert(block, fb);
                self.remapped_blocks_total += 1;
            }
            Remap::Release => {
                let fb = t.map.remove(&block).expect("released block was mapped");
                t.free.push_back(fb);
                self.released_blocks += 1;
            }
        }
    }

    fn work(&mut self, now: SimTime) {
        loop {
            // A child that finished something has room again for what waits for it.
            self.fanout.pump(now);
            while let Some(done) = self.fanout.done.pop_front() {
                self.child_done(now, done);
            }
            self.dispatch(now);
            if self.fanout.done.is_empty() {
                break;
            }
        }
    }

    fn child_done(&mut self, now: SimTime, done: ChildDone<usize>) {
        if let Some(error) = &done.error {
            if self.failed.is_none() {
                self.failed = Some(format!(
                    "the {} child refused a request: {error}",
                    done.side.name()
                ));
            }
        }
        let parent = done.tag;
        let p = self.parents.get_mut(parent);
        p.children_left -= 1;
        if p.status.is_ok() {
            p.status = done.completion.status;
        }
        p.finish = p.finish.max(done.completion.finish);
        if p.children_left == 0 && p.dispatched {
            self.complete(parent, now);
        }
    }

    fn complete(&mut self, parent: usize, _now: SimTime) {
        let p = self.parents.complete(parent);
        self.served[p.request.op.index()][p.served_index()] += 1;
    }

    fn dispatch(&mut self, now: SimTime) {
        loop {
            if self.cursor.is_none() {
                let Some(parent) = self.parents.waiting.pop_front() else {
                    return;
                };
                let p = self.parents.get_mut(parent);
                p.service_start = now;
                self.cursor = Some(Cursor {
                    parent,
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

    fn split(&mut self, now: SimTime, cursor: &mut Cursor) -> bool {
        let request = self.parents.get(cursor.parent).request;
        if request.op == Op::Flush {
            if self.fanout.pending_len(Side::Flash) >= PENDING_MAX
                || self.fanout.pending_len(Side::Disk) >= PENDING_MAX
            {
                return false;
            }
            for side in [Side::Flash, Side::Disk] {
                let run = Run {
                    side,
                    host_offset: 0,
                    device_offset: 0,
                    len: 0,
                };
                self.emit(now, cursor.parent, request, run);
            }
            return true;
        }
        let end = request.end_bytes();
        while cursor.next_byte < end {
            let pos = cursor.next_byte;
            let (side, device_offset, seg_end, change) = self.destination(&request, pos, end);
            let merges = cursor
                .run
                .is_some_and(|r| r.side == side && r.device_offset + r.len == device_offset);
            if !merges {
                if let Some(run) = cursor.run.take() {
                    if self.fanout.pending_len(run.side) >= PENDING_MAX {
                        cursor.run = Some(run);
                        return false;
                    }
                    self.emit(now, cursor.parent, request, run);
                }
            }
            self.apply(pos, change);
            let len = seg_end - pos;
            cursor.run = Some(match cursor.run {
                Some(mut run) => {
                    run.len += len;
                    run
                }
                None => Run {
                    side,
                    host_offset: pos,
                    device_offset,
                    len,
                },
            });
            cursor.next_byte = seg_end;
        }
        if let Some(run) = cursor.run {
            if self.fanout.pending_len(run.side) >= PENDING_MAX {
                return false;
            }
            self.emit(now, cursor.parent, request, run);
            cursor.run = None;
        }
        true
    }

    fn emit(&mut self, now: SimTime, parent: usize, request: Request, run: Run) {
        let p = self.parents.get_mut(parent);
        p.children_left += 1;
        p.sides[(run.side == Side::Disk) as usize] = true;
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
            parent,
        );
    }
}

/// The request kinds as the per-kind counters name them: `host_{op}s_{side}`, a flush's
/// being `flushs`.
const HOST_OPS: &[&str] = &["reads", "writes", "trims", "flushs"];

/// The device's own counters, in `counters`' order; each child's follow under `flash_` and
/// `disk_`, described by the child.
pub const COUNTERS: &[CounterDescriptor] = &[
    CounterDescriptor::family(
        "host_{}_flash",
        Unit::Count,
        Scope::PerKey(HOST_OPS),
        "Host requests of the kind the flash served.",
    ),
    CounterDescriptor::family(
        "host_{}_disk",
        Unit::Count,
        Scope::PerKey(HOST_OPS),
        "Host requests of the kind the disk served.",
    ),
    CounterDescriptor::family(
        "host_{}_split",
        Unit::Count,
        Scope::PerKey(HOST_OPS),
        "Host requests of the kind split between the two.",
    ),
    CounterDescriptor::new(
        "child_refusals",
        Unit::Count,
        "Child requests a child refused with an error other than a full queue (a failed child).",
    ),
];

/// The remap table's counters (`small-writes` only).
pub const REMAP_COUNTERS: &[CounterDescriptor] = &[
    CounterDescriptor::new(
        "remapped_blocks",
        Unit::Blocks,
        "Blocks remapped to the flash now (with a remap table only).",
    ),
    CounterDescriptor::new(
        "remap_allocations",
        Unit::Blocks,
        "Blocks ever remapped to the flash (with a remap table only).",
    ),
    CounterDescriptor::new(
        "remap_releases",
        Unit::Blocks,
        "Remapped blocks released (with a remap table only).",
    ),
];

impl Device for HostTieredDevice {
    fn counter_descriptors(&self) -> Vec<Described> {
        let mut out: Vec<Described> = Described::all(COUNTERS).collect();
        if self.remap.is_some() {
            out.extend(Described::all(REMAP_COUNTERS));
        }
        self.fanout.child_descriptors(&mut out);
        out
    }

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
        self.work(now);
        Ok(())
    }

    fn next_deadline(&self) -> Option<SimTime> {
        let finished = self.parents.next_finish();
        [finished, self.fanout.next_deadline()]
            .into_iter()
            .flatten()
            .min()
    }

    fn advance(&mut self, now: SimTime, done: &mut Vec<Completion>) {
        while let Some(t) = self.fanout.next_deadline() {
            if t > now {
                break;
            }
            self.fanout.advance(t);
            self.work(t);
        }
        self.parents.drain(done);
    }

    fn counters(&self) -> Vec<DeviceCounter> {
        let mut out = Vec::new();
        for op in Op::ALL {
            let row = self.served[op.index()];
            for (k, by) in ["flash", "disk", "split"].iter().enumerate() {
                out.push(DeviceCounter::new(
                    format!("host_{op}s_{by}"),
                    row[k] as f64,
                ));
            }
        }
        if let Some(t) = &self.remap {
            out.push(DeviceCounter::new("remapped_blocks", t.map.len() as f64));
            out.push(DeviceCounter::new(
                "remap_allocations",
                self.remapped_blocks_total as f64,
            ));
            out.push(DeviceCounter::new(
                "remap_releases",
                self.released_blocks as f64,
            ));
        }
        out.push(DeviceCounter::new(
            "child_refusals",
            self.fanout.refusals() as f64,
        ));
        self.fanout.child_counters(&mut out);
        out
    }

    fn parts(&self) -> Vec<DevicePart> {
        self.fanout.child_parts()
    }

    fn block_wear(&self) -> Vec<BlockWear> {
        self.fanout.child_block_wear()
    }
}

#[cfg(test)]
mod counter_docs {
    /// The model's page lists exactly these counters (`STORSIM_BLESS_DOCS=1` rewrites it).
    #[test]
    fn the_page_lists_exactly_the_descriptors() {
        let tables = storsim_core::conformance::counter_tables(&[
            ("hybrid-host", super::COUNTERS),
            ("hybrid-host-remap", super::REMAP_COUNTERS),
        ]);
        storsim_testenv::check_counter_tables("docs/models/hybrid.md", &tables).unwrap();
    }
}
