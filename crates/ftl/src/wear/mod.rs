//! Wear levelling, shared by the page-mapped FTLs (`page` and `dftl`).
//!
//! - *Dynamic* wear levelling decides which free block a plane opens next: the least-worn one
//!   (a min-heap on erase count, ties to the lower block number) instead of the one erased
//!   longest ago (a FIFO queue). Hot data then lands on young blocks.
//! - *Static* wear levelling notices when the most- and least-worn live blocks drift more than
//!   a threshold apart, and moves the data out of a cold full block (one whose erase count
//!   lags the maximum by more than the threshold) so that the block is erased and reused.
//!   Without it, blocks holding data that is never rewritten are never erased. Moves are
//!   paced: at most one per a given number of erases, so that wear levelling cannot become
//!   most of the device's work, nor feed itself (a move erases a block, and in DFTL rewrites
//!   translation pages, which erases more blocks and widens the spread it tries to close).
//!
//! Retired blocks (the NAND array retires a block on the erase that reaches its endurance)
//! leave both structures for good. See docs/models/wear.md.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};

/// The free blocks of one plane, in the order they will be opened.
pub(crate) enum FreePool {
    /// Dynamic wear levelling: `(erase count, block)`, smallest first.
    LeastWorn(BinaryHeap<Reverse<(u32, u32)>>),
    /// No dynamic wear levelling: the block erased longest ago first.
    Fifo(VecDeque<u32>),
}

impl FreePool {
    pub(crate) fn new(dynamic: bool) -> Self {
        if dynamic {
            FreePool::LeastWorn(BinaryHeap::new())
        } else {
            FreePool::Fifo(VecDeque::new())
        }
    }

    pub(crate) fn push(&mut self, block: u32, erase_count: u32) {
        match self {
            FreePool::LeastWorn(h) => h.push(Reverse((erase_count, block))),
            FreePool::Fifo(q) => q.push_back(block),
        }
    }

    pub(crate) fn pop(&mut self) -> Option<u32> {
        match self {
            FreePool::LeastWorn(h) => h.pop().map(|Reverse((_, b))| b),
            FreePool::Fifo(q) => q.pop_front(),
        }
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        match self {
            FreePool::LeastWorn(h) => h.len(),
            FreePool::Fifo(q) => q.len(),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Tracks the spread of erase counts over live blocks and finds blocks for static wear
/// levelling to move.
pub(crate) struct StaticWl {
    /// `None` turns static wear levelling off (the counts are then not kept).
    threshold: Option<u32>,
    /// Live blocks per erase count, so min and max cost O(log distinct counts).
    counts: BTreeMap<u32, u32>,
    /// Where the next search for a cold block starts, so successive searches sweep the device
    /// instead of rescanning its start.
    cursor: u32,
    /// A full sweep found no movable cold block while the maximum was this; do not sweep again
    /// until the maximum grows.
    blocked_at_max: Option<u32>,
    /// Erases (of any cause) between two moves, at least.
    erases_per_move: u32,
    /// Erases since the last move.
    since_move: u32,
    /// Whether the spread exceeds the threshold and the pacing allows a move (kept current on
    /// every erase).
    pending: bool,
}

impl StaticWl {
    pub(crate) fn new(threshold: Option<u32>, erases_per_move: u32, blocks: u32) -> Self {
        let mut counts = BTreeMap::new();
        if threshold.is_some() && blocks > 0 {
            counts.insert(0, blocks);
        }
        StaticWl {
            threshold,
            counts,
            cursor: 0,
            blocked_at_max: None,
            erases_per_move: erases_per_move.max(1),
            since_move: 0,
            pending: false,
        }
    }

    /// A move was made: the next one waits for `erases_per_move` more erases.
    pub(crate) fn moved(&mut self) {
        self.since_move = 0;
        self.update();
    }

    /// A live block went from `old` erases to `old + 1`, or was retired by that erase.
    pub(crate) fn erased(&mut self, old: u32, retired: bool) {
        if self.threshold.is_none() {
            return;
        }
        let n = self
            .counts
            .get_mut(&old)
            .expect("an erased block was counted at its old erase count");
        *n -= 1;
        if *n == 0 {
            self.counts.remove(&old);
        }
        if !retired {
            *self.counts.entry(old + 1).or_insert(0) += 1;
        }
        self.since_move = self.since_move.saturating_add(1);
        self.update();
    }

    /// A live block at `count` erases leaves the population whose spread is levelled (a block
    /// kept in SLC mode, which wears by a rule of its own).
    pub(crate) fn leave(&mut self, count: u32) {
        if self.threshold.is_none() {
            return;
        }
        let n = self
            .counts
            .get_mut(&count)
            .expect("a leaving block was counted at its erase count");
        *n -= 1;
        if *n == 0 {
            self.counts.remove(&count);
        }
        self.update();
    }

    fn update(&mut self) {
        self.pending = match (self.threshold, self.spread()) {
            (Some(t), Some((min, max))) => {
                max - min > t
                    && self.blocked_at_max != Some(max)
                    && self.since_move >= self.erases_per_move
            }
            _ => false,
        };
    }

    /// (min, max) erase count over live blocks, when static wear levelling is on.
    pub(crate) fn spread(&self) -> Option<(u32, u32)> {
        let min = *self.counts.first_key_value()?.0;
        let max = *self.counts.last_key_value()?.0;
        Some((min, max))
    }

    /// Whether a move is due.
    #[inline]
    pub(crate) fn pending(&self) -> bool {
        self.pending
    }

    /// The next block (from the cursor, cyclically) whose erase count lags the maximum by more
    /// than the threshold and that `movable` accepts. When a whole sweep finds none, no move
    /// is pending again until the maximum grows.
    pub(crate) fn find(
        &mut self,
        erase_counts: &[u32],
        movable: impl Fn(u32) -> bool,
    ) -> Option<u32> {
        let (Some(t), Some((_, max))) = (self.threshold, self.spread()) else {
            return None;
        };
        let blocks = erase_counts.len() as u32;
        for _ in 0..blocks {
            let b = self.cursor;
            self.cursor = if b + 1 == blocks { 0 } else { b + 1 };
            if erase_counts[b as usize] + t < max && movable(b) {
                return Some(b);
            }
        }
        self.blocked_at_max = Some(max);
        self.update();
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn least_worn_pool_pops_by_erase_count_then_block() {
        let mut p = FreePool::new(true);
        for (b, ec) in [(4, 7), (1, 3), (9, 3), (2, 5)] {
            p.push(b, ec);
        }
        let order: Vec<u32> = std::iter::from_fn(|| p.pop()).collect();
        assert_eq!(order, [1, 9, 2, 4]);
        let mut q = FreePool::new(false);
        for (b, ec) in [(4, 7), (1, 3), (9, 3)] {
            q.push(b, ec);
        }
        assert_eq!(q.pop(), Some(4));
    }

    #[test]
    fn static_wl_triggers_above_the_threshold_and_finds_cold_blocks() {
        // Four blocks, threshold 2, a move allowed after every erase.
        let mut wl = StaticWl::new(Some(2), 1, 4);
        let mut ec = [0u32; 4];
        for _ in 0..3 {
            wl.erased(ec[3], false);
            ec[3] += 1;
        }
        // Spread 3 > 2.
        assert!(wl.pending());
        assert_eq!(wl.spread(), Some((0, 3)));
        // Only block 1 is movable (full of data); it lags by 3.
        assert_eq!(wl.find(&ec, |b| b == 1), Some(1));
        // Nothing movable: the search gives up until the maximum grows.
        assert_eq!(wl.find(&ec, |_| false), None);
        assert!(!wl.pending());
        wl.erased(ec[3], false);
        ec[3] += 1;
        assert!(wl.pending());
        // Retiring the worn block removes it from the spread.
        wl.erased(ec[3], true);
        assert_eq!(wl.spread(), Some((0, 0)));
        assert!(!wl.pending());
    }

    #[test]
    fn static_wl_moves_are_paced_by_erases() {
        // Two blocks, threshold 1, at most one move per 3 erases.
        let mut wl = StaticWl::new(Some(1), 3, 2);
        // Block 1 is erased twice: spread 2 > 1, but only 2 erases so far.
        wl.erased(0, false);
        wl.erased(1, false);
        assert!(!wl.pending());
        wl.erased(2, false);
        assert!(wl.pending());
        wl.moved();
        assert!(!wl.pending());
        // The move erased block 0: spread 2, one erase since the move.
        wl.erased(0, false);
        assert!(!wl.pending());
    }
}
