//! The controller's cache map: which host block each flash slot holds and in what state, the
//! free slots in the order they are reused, the replacement policy that orders victims, and the
//! counts of dirty, clean and flushing blocks that the flush and eviction decisions read.
//!
//! Everything here is bookkeeping at one instant: no child request is issued and no time
//! passes, so the map can be tested without any device.

use super::DESTAGE_ATTEMPTS_MAX;
use crate::params::ByteRange;
use crate::policy::{CacheEvent, CachePolicy, Victims};
use std::collections::{BTreeMap, VecDeque};
use std::ops::Range;

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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SlotState {
    Free,
    /// A pinned block's slot before its first write: reads still go to the disk.
    Reserved,
    /// A pinned block's slot after writes that have not covered all of it: the bytes written
    /// (`CacheMap::written`) are read from the flash, the rest still from the disk.
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
pub(super) struct Slot {
    pub(super) block: u64,
    pub(super) state: SlotState,
    pub(super) pinned: bool,
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
    /// Flushes of the block's current data that failed (the flash read or the disk write
    /// answered with an error). At `DESTAGE_ATTEMPTS_MAX` the block is no longer flushed
    /// until a host write gives it new data.
    destage_failures: u8,
}

impl Slot {
    /// A dirty unpinned block that no flush has taken and that may still be flushed.
    fn waits_for_flush(&self) -> bool {
        self.state == SlotState::Dirty
            && !self.pinned
            && !self.flushing
            && self.destage_failures < DESTAGE_ATTEMPTS_MAX
    }
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
    destage_failures: 0,
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

/// `count` blocks contiguous both in the host's address space (from `first_block`) and in the
/// flash (from `first_slot`): what one flush job or one promotion moves in one child request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct BlockRun {
    pub(super) first_block: u64,
    pub(super) first_slot: u32,
    pub(super) count: u32,
}

impl BlockRun {
    /// The run of the one block `block` in slot `slot`.
    pub(super) fn one(block: u64, slot: u32) -> Self {
        BlockRun {
            first_block: block,
            first_slot: slot,
            count: 1,
        }
    }

    /// The run's flash slots.
    pub(super) fn slots(&self) -> Range<u32> {
        self.first_slot..self.first_slot + self.count
    }

    /// Whether `block` in `slot` continues the run on both sides, and the run is shorter
    /// than `max_blocks`.
    pub(super) fn continues_with(&self, block: u64, slot: u32, max_blocks: u64) -> bool {
        self.first_block + self.count as u64 == block
            && self.first_slot + self.count == slot
            && (self.count as u64) < max_blocks
    }
}

/// The flash's slots and the host blocks they hold.
pub(super) struct CacheMap {
    block_bytes: u64,
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
    flushing: u64,
    /// Dirty blocks no longer flushed: their flushes failed `DESTAGE_ATTEMPTS_MAX` times.
    unflushable: u64,
    /// The policy's victims, kept to reuse its memory.
    victims: Vec<u64>,
    evicted_blocks: u64,
    invalidated_blocks: u64,
}

impl CacheMap {
    /// `slot_count` slots of `block_bytes`, the blocks of the `pinned` ranges (of a disk of
    /// `capacity_bytes`) reserved in the first ones; the policy learns how many slots remain.
    pub(super) fn new(
        block_bytes: u64,
        slot_count: u64,
        capacity_bytes: u64,
        pinned: &[ByteRange],
        mut policy: Box<dyn CachePolicy>,
    ) -> Result<Self, String> {
        let mut slots = vec![FREE_SLOT; slot_count as usize];
        let mut map = BTreeMap::new();
        let mut next_slot: u64 = 0;
        for range in pinned {
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
        Ok(CacheMap {
            block_bytes,
            free: (next_slot as u32..slot_count as u32).collect(),
            slots,
            written: BTreeMap::new(),
            map,
            policy,
            unpinned_slots,
            dirty: 0,
            clean: 0,
            flushing: 0,
            unflushable: 0,
            victims: Vec::new(),
            evicted_blocks: 0,
            invalidated_blocks: 0,
        })
    }

    pub(super) fn block_bytes(&self) -> u64 {
        self.block_bytes
    }

    /// Cache blocks the flash holds, pinned ones included.
    pub(super) fn slot_count(&self) -> u64 {
        self.slots.len() as u64
    }

    /// Slots outside the pinned ranges.
    pub(super) fn unpinned_slots(&self) -> u64 {
        self.unpinned_slots
    }

    pub(super) fn free_slots(&self) -> u64 {
        self.free.len() as u64
    }

    /// The slot a new block takes next.
    pub(super) fn next_free(&self) -> Option<u32> {
        self.free.front().copied()
    }

    /// Dirty unpinned blocks, including those being flushed.
    pub(super) fn dirty_blocks(&self) -> u64 {
        self.dirty
    }

    /// Blocks a flush job is moving now.
    pub(super) fn flushing_blocks(&self) -> u64 {
        self.flushing
    }

    /// Dirty blocks whose flushes failed `DESTAGE_ATTEMPTS_MAX` times: they stay in the
    /// flash, which holds their only copy, and are not flushed again until rewritten.
    pub(super) fn unflushable_blocks(&self) -> u64 {
        self.unflushable
    }

    /// Dirty blocks a flush may still take (being flushed or not): the dirty blocks less the
    /// unflushable ones. What the flush policies count.
    pub(super) fn flushable_dirty_blocks(&self) -> u64 {
        self.dirty - self.unflushable
    }

    pub(super) fn evicted_blocks(&self) -> u64 {
        self.evicted_blocks
    }

    pub(super) fn invalidated_blocks(&self) -> u64 {
        self.invalidated_blocks
    }

    pub(super) fn slot(&self, s: u32) -> &Slot {
        &self.slots[s as usize]
    }

    pub(super) fn slot_of(&self, block: u64) -> Option<u32> {
        self.map.get(&block).copied()
    }

    /// Whether any block of `[first, last]` is in the map (pinned, reserved or cached).
    pub(super) fn any_mapped(&self, first: u64, last: u64) -> bool {
        self.map.range(first..=last).next().is_some()
    }

    /// How many blocks of `[first, end)` are in the map.
    pub(super) fn mapped_count(&self, first: u64, end: u64) -> u64 {
        self.map.range(first..end).count() as u64
    }

    /// Where the newest copy of host byte `offset_bytes` lives.
    pub(super) fn locate(&self, offset_bytes: u64) -> Location {
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

    /// For a `Partial` slot `s` holding `block`: whether host byte `start` has been written,
    /// and where the stretch of bytes like it ends, at most at `end`.
    pub(super) fn written_stretch(&self, s: u32, block: u64, start: u64, end: u64) -> (bool, u64) {
        let base = block * self.block_bytes;
        let (written, stop) = self.written[&s].stretch(start - base, end - base);
        (written, base + stop)
    }

    /// A host read of cached `block` in slot `s`.
    pub(super) fn read(&mut self, s: u32, block: u64) {
        if !self.slots[s as usize].pinned {
            self.policy.update(block, CacheEvent::Read);
        }
    }

    /// A host write of `[start, end)` (host bytes) of `block` into slot `s`, which is free
    /// (the first free one: the block enters the cache) or already holds the block. Returns
    /// true when the block is now dirty, false when it is a pinned block that stays partial.
    pub(super) fn write(&mut self, s: u32, block: u64, start: u64, end: u64) -> bool {
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
            return false;
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
        // New data gets its own attempts at reaching the disk.
        if slot.destage_failures >= DESTAGE_ATTEMPTS_MAX {
            self.unflushable -= 1;
        }
        slot.destage_failures = 0;
        true
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

    /// A host child request starts using slot `s`.
    pub(super) fn use_slot(&mut self, s: u32) {
        self.slots[s as usize].users += 1;
    }

    /// A host child request on slot `s` finished.
    pub(super) fn unuse_slot(&mut self, s: u32) {
        self.slots[s as usize].users -= 1;
        self.release_orphan(s);
    }

    /// Marks up to `limit` dirty blocks as flushing: the policy's first dirty victim and the
    /// dirty blocks next to it (contiguous on both the disk and the flash). `None` when no
    /// dirty block waits for a flush.
    pub(super) fn start_flush_run(&mut self, limit: u64) -> Option<BlockRun> {
        // Every dirty block is already being flushed, or no longer flushed: asking would scan
        // the whole cache.
        if self.dirty == self.flushing + self.unflushable {
            return None;
        }
        let flushable = |slots: &[Slot], map: &BTreeMap<u64, u32>, block: u64| {
            map.get(&block)
                .is_some_and(|&s| slots[s as usize].waits_for_flush())
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
                .find(|slot| slot.waits_for_flush())
                .map(|slot| slot.block);
        }
        let victim = first?;
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
        self.flushing += count;
        Some(BlockRun {
            first_block,
            first_slot,
            count: count as u32,
        })
    }

    /// The `i`-th block of `run`'s flush is no longer being flushed; its slot.
    fn end_flushing(&mut self, run: BlockRun, i: u32) -> &mut Slot {
        self.flushing -= 1;
        let slot = &mut self.slots[(run.first_slot + i) as usize];
        assert!(
            slot.flushing && slot.block == run.first_block + u64::from(i),
            "a flushing block left its slot"
        );
        slot.flushing = false;
        slot
    }

    /// A flush of `run` reached the disk: its blocks are clean unless a write came after the
    /// flush read them.
    pub(super) fn flushed(&mut self, run: BlockRun) {
        for i in 0..run.count {
            let slot = self.end_flushing(run, i);
            if slot.generation == slot.flush_generation {
                slot.state = SlotState::Clean;
                self.dirty -= 1;
                self.clean += 1;
                self.policy
                    .update(run.first_block + i as u64, CacheEvent::Cleaned);
            }
        }
    }

    /// A flush of `run` failed (its flash read or its disk write): the blocks stay dirty, and
    /// later flushes take them again until each has failed `DESTAGE_ATTEMPTS_MAX` times, as a
    /// cache keeps a block dirty when its writeback fails. Returns how many blocks became
    /// unflushable. A block written since the flush read it has new data and keeps its
    /// attempts.
    pub(super) fn flush_failed(&mut self, run: BlockRun) -> u64 {
        let mut unflushable = 0;
        for i in 0..run.count {
            let slot = self.end_flushing(run, i);
            if slot.generation == slot.flush_generation {
                slot.destage_failures += 1;
                if slot.destage_failures == DESTAGE_ATTEMPTS_MAX {
                    unflushable += 1;
                    self.policy
                        .update(run.first_block + i as u64, CacheEvent::Unflushable);
                }
            }
        }
        self.unflushable += unflushable;
        unflushable
    }

    /// Evicts up to `count` clean, unused blocks outside `[first, last]` (the head write's own
    /// blocks), in the policy's order.
    pub(super) fn evict(&mut self, count: u64, first: u64, last: u64) {
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
        self.evicted_blocks += 1;
    }

    /// Read admission: gives `block`, which host read number `seq` fetches whole from the
    /// disk, a slot to be copied into once the disk has answered, evicting a clean block
    /// outside `[first, last]` (the read's own) if no slot is free. Returns false when nothing
    /// can be evicted: the block is then simply not cached, and the read never waits.
    pub(super) fn reserve(&mut self, block: u64, seq: u64, first: u64, last: u64) -> bool {
        if self.free.is_empty() {
            self.evict(1, first, last);
        }
        let Some(s) = self.free.pop_front() else {
            return false;
        };
        self.slots[s as usize] = Slot {
            block,
            state: SlotState::Filling,
            fill: seq,
            ..FREE_SLOT
        };
        self.map.insert(block, s);
        true
    }

    /// Read admission: the slot of `block` if it waits to be filled by host read number `seq`
    /// and no promotion has taken it yet.
    pub(super) fn filling_for(&self, block: u64, seq: u64) -> Option<u32> {
        let s = self.slot_of(block)?;
        let slot = &self.slots[s as usize];
        (slot.state == SlotState::Filling && slot.fill == seq && !slot.promoting).then_some(s)
    }

    /// Read admission: drops the flash copy of every unpinned block in `[first, last]`.
    pub(super) fn invalidate_range(&mut self, first: u64, last: u64) {
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
        self.invalidated_blocks += 1;
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

    /// Releases a reservation that will not be filled. Nothing uses a filling slot yet.
    pub(super) fn cancel_fill(&mut self, block: u64, s: u32) {
        self.map.remove(&block);
        self.slots[s as usize] = FREE_SLOT;
        self.free.push_back(s);
    }

    /// Read admission: a promotion of `run` is queued; its slots stay reserved for it.
    pub(super) fn mark_promoting(&mut self, run: BlockRun) {
        for s in run.slots() {
            self.slots[s as usize].promoting = true;
        }
    }

    /// Read admission: when writes dropped every block of a queued promotion's `run`, releases
    /// its slots and returns true.
    pub(super) fn drop_orphaned_promotion(&mut self, run: BlockRun) -> bool {
        if !run
            .slots()
            .all(|s| self.slots[s as usize].state == SlotState::Orphan)
        {
            return false;
        }
        for s in run.slots() {
            self.slots[s as usize].promoting = false;
            self.release_orphan(s);
        }
        true
    }

    /// Read admission: the promotion's flash write of `block` into slot `s` finished (or
    /// `failed`). Returns true when the block is now a clean cached copy; a block a write
    /// dropped meanwhile is freed, and a failed write caches nothing.
    pub(super) fn promoted(&mut self, block: u64, s: u32, failed: bool) -> bool {
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
                self.policy.update(block, CacheEvent::Promoted);
                assert!(
                    self.policy.is_cached(block),
                    "the cache policy `{}` lost promoted block {block}",
                    self.policy.name()
                );
                return true;
            }
            SlotState::Orphan => self.release_orphan(s),
            state => panic!("a promoted slot was {state:?}"),
        }
        false
    }
}

#[cfg(test)]
#[path = "cache_map_tests.rs"]
mod tests;
