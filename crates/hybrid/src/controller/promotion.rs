//! Read admission's promotion: after a disk read that missed the cache answers, the whole
//! blocks it fetched are copied into the flash slots reserved for them, off the host's
//! critical path, in a bounded number of flash writes.

use super::cache_map::BlockRun;
use super::counters::ChildCause;
use super::places::Places;
use super::{HybridDevice, Tag, FLUSH_RUN_BLOCKS_MAX};
use crate::fanout::{Route, RouteCause, Side};
use std::collections::VecDeque;
use storsim_core::{Op, SimTime};

/// Promotions (read admission) in flight on the flash at once, each one flash write. With the
/// flush jobs and host child requests, this bounds the flash's waiting queue.
pub(super) const PROMOTE_JOBS_MAX: usize = 8;
/// Promotions waiting for one of the `PROMOTE_JOBS_MAX` places. A disk read that finds this
/// queue full does not cache what it read: promotion is an optimisation, never a reason for
/// the host to wait or for memory to grow.
const PROMOTE_WAITING_MAX: usize = 64;

/// Read admission: which part of the host's address space a disk read fetched for promotion.
#[derive(Clone, Copy)]
pub(super) struct Fill {
    /// The host read's sequence number (`Slot::fill`).
    pub(super) seq: u64,
    pub(super) host_id: u64,
    pub(super) host_offset: u64,
    pub(super) len: u64,
}

/// Read admission: one flash write copying a run of blocks that host request `host_id` read
/// from the disk.
#[derive(Clone, Copy)]
struct Promotion {
    run: BlockRun,
    host_id: u64,
}

/// The promotions waiting and in flight, and what became of their blocks.
pub(super) struct Promotions {
    places: Places<Promotion>,
    waiting: VecDeque<Promotion>,
    promoted_blocks: u64,
    dropped_blocks: u64,
    /// Blocks not cached because the disk read fetching them or the flash write copying them
    /// failed.
    failed_blocks: u64,
}

impl Promotions {
    pub(super) fn new() -> Self {
        Promotions {
            places: Places::new(PROMOTE_JOBS_MAX),
            waiting: VecDeque::with_capacity(PROMOTE_WAITING_MAX),
            promoted_blocks: 0,
            dropped_blocks: 0,
            failed_blocks: 0,
        }
    }

    /// Blocks copied into the flash.
    pub(super) fn promoted_blocks(&self) -> u64 {
        self.promoted_blocks
    }

    /// Blocks not copied because the waiting queue was full.
    pub(super) fn dropped_blocks(&self) -> u64 {
        self.dropped_blocks
    }

    /// Blocks not cached because their disk read or their copy into the flash failed.
    pub(super) fn failed_blocks(&self) -> u64 {
        self.failed_blocks
    }

    /// Queues `p` unless the queue is full; returns whether it was queued.
    fn queue(&mut self, p: Promotion) -> bool {
        if self.waiting.len() < PROMOTE_WAITING_MAX {
            self.waiting.push_back(p);
            true
        } else {
            self.dropped_blocks += p.run.count as u64;
            false
        }
    }

    /// The next waiting promotion, if it has a place to run in.
    fn next_to_start(&mut self) -> Option<Promotion> {
        if self.places.is_full() {
            return None;
        }
        self.waiting.pop_front()
    }
}

impl HybridDevice {
    /// A disk read with reserved blocks finished: queue the copies of those still reserved
    /// for it (a write may have dropped some), in runs contiguous on both sides. A failed read
    /// fetched nothing, so its reservations are released.
    pub(super) fn fill_done(&mut self, fill: Fill, failed: bool) {
        let b = self.cache.block_bytes();
        let first = fill.host_offset.div_ceil(b);
        let end = (fill.host_offset + fill.len) / b;
        let mut run: Option<BlockRun> = None;
        for block in first..end {
            let Some(s) = self.cache.filling_for(block, fill.seq) else {
                continue;
            };
            if failed {
                self.cache.cancel_fill(block, s);
                self.promotions.failed_blocks += 1;
                continue;
            }
            match &mut run {
                Some(r) if r.continues_with(block, s, FLUSH_RUN_BLOCKS_MAX) => r.count += 1,
                _ => {
                    if let Some(r) = run.take() {
                        self.queue_promotion(r, fill.host_id);
                    }
                    run = Some(BlockRun::one(block, s));
                }
            }
        }
        if let Some(r) = run {
            self.queue_promotion(r, fill.host_id);
        }
    }

    fn queue_promotion(&mut self, run: BlockRun, host_id: u64) {
        if self.promotions.queue(Promotion { run, host_id }) {
            self.cache.mark_promoting(run);
        } else {
            for i in 0..run.count {
                self.cache
                    .cancel_fill(run.first_block + i as u64, run.first_slot + i);
            }
        }
    }

    /// Issues queued promotions while there is a place for them.
    pub(super) fn start_promotions(&mut self, now: SimTime) {
        while let Some(p) = self.promotions.next_to_start() {
            // Writes dropped every block of this run while it waited: copying bytes nobody
            // will read would only cost flash time.
            if self.cache.drop_orphaned_promotion(p.run) {
                continue;
            }
            let job = self.promotions.places.insert(p);
            let b = self.cache.block_bytes();
            let len = p.run.count as u64 * b;
            self.log.record(Route {
                cause: RouteCause::Promote { id: p.host_id },
                op: Op::Write,
                side: Side::Flash,
                host_offset_bytes: p.run.first_block * b,
                device_offset_bytes: p.run.first_slot as u64 * b,
                len_bytes: len,
            });
            self.counts
                .child_request(Side::Flash, ChildCause::Promote, len);
            self.fanout.push(
                Side::Flash,
                now,
                Op::Write,
                p.run.first_slot as u64 * b,
                len,
                Tag::Promote { job },
            );
        }
    }

    /// A promotion's flash write finished: its blocks are clean cached copies now, except
    /// those a write dropped meanwhile (orphans, freed here). A failed write cached nothing:
    /// the slots may hold anything, so reads keep going to the disk, as a cache does not
    /// admit a block whose copy failed.
    pub(super) fn promote_done(&mut self, job: usize, failed: bool) {
        let p = self.promotions.places.take(job);
        if failed {
            self.promotions.failed_blocks += p.run.count as u64;
        }
        for i in 0..p.run.count {
            let s = p.run.first_slot + i;
            let block = p.run.first_block + i as u64;
            if self.cache.promoted(block, s, failed) {
                self.promotions.promoted_blocks += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn promotion(first_block: u64, count: u32) -> Promotion {
        Promotion {
            run: BlockRun {
                first_block,
                first_slot: 0,
                count,
            },
            host_id: 1,
        }
    }

    #[test]
    fn a_full_waiting_queue_drops_promotions_and_counts_their_blocks() {
        let mut promotions = Promotions::new();
        for i in 0..PROMOTE_WAITING_MAX as u64 {
            assert!(promotions.queue(promotion(i * 10, 2)));
        }
        assert!(!promotions.queue(promotion(9999, 3)));
        assert_eq!(promotions.dropped_blocks(), 3);
        assert_eq!(promotions.waiting.len(), PROMOTE_WAITING_MAX);
    }

    #[test]
    fn promotions_start_in_order_while_a_place_is_free() {
        let mut promotions = Promotions::new();
        for i in 0..PROMOTE_JOBS_MAX as u64 + 2 {
            assert!(promotions.queue(promotion(i, 1)));
        }
        for i in 0..PROMOTE_JOBS_MAX as u64 {
            let p = promotions.next_to_start().expect("a free place");
            assert_eq!(p.run.first_block, i);
            promotions.places.insert(p);
        }
        assert!(promotions.next_to_start().is_none(), "every place is taken");
        promotions.places.take(3);
        let p = promotions.next_to_start().expect("a place came free");
        assert_eq!(p.run.first_block, PROMOTE_JOBS_MAX as u64);
    }
}
