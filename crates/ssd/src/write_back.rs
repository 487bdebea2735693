//! The dirty pages of a write-back buffer: which logical pages sit in DRAM and in which order
//! they leave. A `HashMap` answers "is this page dirty?" and is never iterated; the destage
//! order is a `BTreeMap` keyed by a sequence number, so results never depend on hashing.

use crate::params::DestageOrder;
use std::collections::{BTreeMap, HashMap};

pub(crate) struct DirtyPages {
    order_policy: DestageOrder,
    /// Logical page -> its key in `order`.
    seq_of: HashMap<u64, u64>,
    /// Destage order (oldest first) -> logical page.
    order: BTreeMap<u64, u64>,
    next_seq: u64,
}

impl DirtyPages {
    pub fn new(order_policy: DestageOrder, capacity_pages: u64) -> Self {
        DirtyPages {
            order_policy,
            // Bounded by the buffer's capacity (at most 4 Mi pages, checked by the config).
            seq_of: HashMap::with_capacity(capacity_pages as usize),
            order: BTreeMap::new(),
            next_seq: 0,
        }
    }

    pub fn len(&self) -> u64 {
        self.order.len() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    pub fn contains(&self, lpn: u64) -> bool {
        self.seq_of.contains_key(&lpn)
    }

    /// A write of `lpn`: `true` if it was dirty already (the write is absorbed; under LRU the
    /// page becomes the most recent), `false` if it is newly dirty (the caller found a slot).
    pub fn write(&mut self, lpn: u64) -> bool {
        let seq = self.next_seq;
        if let Some(old) = self.seq_of.get_mut(&lpn) {
            if self.order_policy == DestageOrder::Lru {
                self.order.remove(old);
                *old = seq;
                self.order.insert(seq, lpn);
                self.next_seq += 1;
            }
            return true;
        }
        self.seq_of.insert(lpn, seq);
        self.order.insert(seq, lpn);
        self.next_seq += 1;
        false
    }

    /// Drops `lpn` (a trim, or newer data that bypasses the buffer); `true` if it was dirty.
    pub fn remove(&mut self, lpn: u64) -> bool {
        match self.seq_of.remove(&lpn) {
            Some(seq) => {
                self.order.remove(&seq);
                true
            }
            None => false,
        }
    }

    /// The page to destage next, without removing it.
    pub fn peek_oldest(&self) -> Option<u64> {
        self.order.first_key_value().map(|(_, &lpn)| lpn)
    }

    /// Removes and returns the page to destage next.
    pub fn pop_oldest(&mut self) -> Option<u64> {
        let (_, lpn) = self.order.pop_first()?;
        self.seq_of.remove(&lpn);
        Some(lpn)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifo_keeps_the_first_write_order() {
        let mut d = DirtyPages::new(DestageOrder::Fifo, 8);
        assert!(!d.write(5));
        assert!(!d.write(3));
        assert!(d.write(5));
        assert_eq!(d.len(), 2);
        assert_eq!(d.pop_oldest(), Some(5));
        assert_eq!(d.pop_oldest(), Some(3));
        assert!(d.is_empty());
    }

    #[test]
    fn lru_moves_a_rewrite_to_the_back() {
        let mut d = DirtyPages::new(DestageOrder::Lru, 8);
        d.write(5);
        d.write(3);
        assert!(d.write(5));
        assert_eq!(d.peek_oldest(), Some(3));
        assert!(d.remove(3));
        assert!(!d.remove(3));
        assert_eq!(d.pop_oldest(), Some(5));
        assert_eq!(d.pop_oldest(), None);
    }
}
