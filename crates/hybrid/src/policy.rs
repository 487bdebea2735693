//! The pluggable flash-management interface of the thesis' hybrid controller (Fig. 3.7:
//! register, update cache, cache cleanup, is in cache), and its LRU and FIFO implementations.
//!
//! A policy only orders blocks. The controller keeps the authoritative map of which host
//! block lives in which flash slot and whether it is dirty, so a policy cannot make a read
//! return stale data: it is asked for victims, and the controller checks each one.

use std::collections::BTreeMap;

/// What happened to a cached block, as reported to [`CachePolicy::update`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheEvent {
    /// The block entered the cache (a write placed it on the flash); it is dirty.
    Inserted,
    /// The block entered the cache because a read missed it (read admission): its copy on
    /// the flash is clean, identical to the disk's.
    Promoted,
    /// A host read was served from the block's flash copy.
    Read,
    /// A host write updated the block's flash copy (it is dirty now).
    Written,
    /// A flush copied the block to the disk (it is clean now, and may be evicted).
    Cleaned,
    /// Flushes of the block failed as often as the controller tries (a child's error): it
    /// stays dirty on the flash but is no flush victim any more, until a host write
    /// (`Written`) gives it new data. A policy need not act on it (the controller filters
    /// victims), but walking past many such blocks for every flush is slow.
    Unflushable,
    /// The block left the cache: evicted once clean, or dropped because a write to the disk
    /// made its flash copy stale (read admission).
    Removed,
}

/// What the controller wants victims for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Victims {
    /// Dirty blocks to flush to the disk.
    Flush,
    /// Clean blocks to drop from the flash, making room.
    Evict,
}

/// A flash-management policy. Blocks are host block numbers (host byte offset divided by the
/// cache block size). Pinned blocks are never reported: they cannot be victims.
pub trait CachePolicy: Send {
    /// A short name for the results.
    fn name(&self) -> &'static str;

    /// Called once when the controller is built: the cache holds at most `capacity_blocks`
    /// blocks that the policy will see.
    fn register(&mut self, capacity_blocks: u64);

    /// A block was inserted (by a write or a read's promotion), read, written, cleaned or
    /// removed.
    fn update(&mut self, block: u64, event: CacheEvent);

    /// Appends up to `count` victims for `purpose` to `victims`, best first, considering only
    /// blocks for which `eligible` returns true. Returning fewer is allowed: the controller
    /// then falls back to the eligible blocks in slot order, so a cleanup always makes
    /// progress.
    fn cleanup(
        &mut self,
        purpose: Victims,
        count: usize,
        eligible: &mut dyn FnMut(u64) -> bool,
        victims: &mut Vec<u64>,
    );

    /// Whether the policy holds `block` (inserted and not removed). The controller asserts
    /// that this agrees with its own map whenever a block enters or leaves the cache.
    fn is_cached(&self, block: u64) -> bool;
}

/// Which of [`StampOrder`]'s orders a block is filed in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Order {
    Dirty,
    Clean,
    /// Dirty but no flush victim ([`CacheEvent::Unflushable`]): in neither order.
    Held,
}

/// Orders blocks by a stamp: LRU refreshes the stamp on every access, FIFO only on insertion.
/// Dirty and clean blocks are kept in separate orders, so that finding the oldest dirty block
/// does not walk past every clean one (and the reverse), and unflushable blocks in neither:
/// ordered maps make every operation O(log n) and the order independent of hashing.
pub struct StampOrder {
    refresh_on_access: bool,
    next_stamp: u64,
    /// Each block's stamp and the order it is filed in.
    stamp_of: BTreeMap<u64, (u64, Order)>,
    dirty_by_stamp: BTreeMap<u64, u64>,
    clean_by_stamp: BTreeMap<u64, u64>,
}

impl StampOrder {
    /// Least recently used.
    pub fn lru() -> Self {
        Self::new(true)
    }

    /// First in, first out.
    pub fn fifo() -> Self {
        Self::new(false)
    }

    fn new(refresh_on_access: bool) -> Self {
        StampOrder {
            refresh_on_access,
            next_stamp: 0,
            stamp_of: BTreeMap::new(),
            dirty_by_stamp: BTreeMap::new(),
            clean_by_stamp: BTreeMap::new(),
        }
    }

    fn remove(&mut self, block: u64) -> Option<(u64, Order)> {
        let (stamp, order) = self.stamp_of.remove(&block)?;
        match order {
            Order::Dirty => self.dirty_by_stamp.remove(&stamp),
            Order::Clean => self.clean_by_stamp.remove(&stamp),
            Order::Held => None,
        };
        Some((stamp, order))
    }

    fn place(&mut self, block: u64, stamp: u64, order: Order) {
        self.stamp_of.insert(block, (stamp, order));
        match order {
            Order::Dirty => self.dirty_by_stamp.insert(stamp, block),
            Order::Clean => self.clean_by_stamp.insert(stamp, block),
            Order::Held => None,
        };
    }

    /// Re-files a block it holds: a new stamp when `refresh`, and its order if given.
    fn touch(&mut self, block: u64, refresh: bool, order: Option<Order>) {
        let Some((stamp, was)) = self.remove(block) else {
            return;
        };
        let stamp = if refresh {
            self.next_stamp += 1;
            self.next_stamp - 1
        } else {
            stamp
        };
        self.place(block, stamp, order.unwrap_or(was));
    }
}

impl CachePolicy for StampOrder {
    fn name(&self) -> &'static str {
        if self.refresh_on_access {
            "lru"
        } else {
            "fifo"
        }
    }

    fn register(&mut self, _capacity_blocks: u64) {}

    fn update(&mut self, block: u64, event: CacheEvent) {
        match event {
            CacheEvent::Inserted | CacheEvent::Promoted => {
                self.remove(block);
                self.next_stamp += 1;
                let order = if event == CacheEvent::Inserted {
                    Order::Dirty
                } else {
                    Order::Clean
                };
                self.place(block, self.next_stamp - 1, order);
            }
            CacheEvent::Read => self.touch(block, self.refresh_on_access, None),
            CacheEvent::Written => self.touch(block, self.refresh_on_access, Some(Order::Dirty)),
            CacheEvent::Cleaned => self.touch(block, false, Some(Order::Clean)),
            CacheEvent::Unflushable => self.touch(block, false, Some(Order::Held)),
            CacheEvent::Removed => {
                self.remove(block);
            }
        }
    }

    fn cleanup(
        &mut self,
        purpose: Victims,
        count: usize,
        eligible: &mut dyn FnMut(u64) -> bool,
        victims: &mut Vec<u64>,
    ) {
        let order = match purpose {
            Victims::Flush => &self.dirty_by_stamp,
            Victims::Evict => &self.clean_by_stamp,
        };
        let mut taken = 0;
        for &block in order.values() {
            if taken == count {
                break;
            }
            if eligible(block) {
                victims.push(block);
                taken += 1;
            }
        }
    }

    fn is_cached(&self, block: u64) -> bool {
        self.stamp_of.contains_key(&block)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flush_victims(policy: &mut StampOrder) -> Vec<u64> {
        let mut victims = Vec::new();
        policy.cleanup(Victims::Flush, 10, &mut |_| true, &mut victims);
        victims
    }

    #[test]
    fn an_unflushable_block_is_no_flush_victim_until_it_is_written() {
        let mut lru = StampOrder::lru();
        for block in [1, 2, 3] {
            lru.update(block, CacheEvent::Inserted);
        }
        lru.update(2, CacheEvent::Unflushable);
        assert_eq!(flush_victims(&mut lru), [1, 3]);
        // Still cached, and a read keeps it out of the flush order.
        lru.update(2, CacheEvent::Read);
        assert!(lru.is_cached(2));
        assert_eq!(flush_victims(&mut lru), [1, 3]);
        lru.update(2, CacheEvent::Written);
        assert_eq!(flush_victims(&mut lru), [1, 3, 2]);
        lru.update(2, CacheEvent::Unflushable);
        lru.update(2, CacheEvent::Removed);
        assert!(!lru.is_cached(2));
    }
}
