//! When the write buffer's slots come free: pages held until their programs finish, by
//! release time.

use std::collections::BTreeMap;
use storsim_core::SimTime;

/// Pages held in the buffer, summed by the instant they are released. A B-tree rather than a
/// binary heap: with a large buffer (a quarter of a million entries for 1 GiB of 4 KiB pages)
/// a heap's every pop walks a path of cache misses from root to leaf, where a B-tree touches a
/// few wide nodes; and writes released at the same instant share one entry.
///
/// Bounded: every entry holds at least one page and the pages held never exceed the buffer's
/// capacity, which `push` enforces.
pub(crate) struct ReleaseQueue {
    by_time: BTreeMap<SimTime, u64>,
    pages: u64,
    capacity_pages: u64,
}

impl ReleaseQueue {
    pub fn new(capacity_pages: u64) -> Self {
        ReleaseQueue {
            by_time: BTreeMap::new(),
            pages: 0,
            capacity_pages,
        }
    }

    /// Holds `pages` until `release`; refuses (returning `Err`) what would exceed the
    /// capacity, which the caller makes room for first.
    pub fn push(&mut self, release: SimTime, pages: u64) -> Result<(), ()> {
        if pages == 0 || self.pages + pages > self.capacity_pages {
            return Err(());
        }
        self.pages += pages;
        *self.by_time.entry(release).or_insert(0) += pages;
        Ok(())
    }

    /// Removes the earliest release and returns its time and pages.
    pub fn pop(&mut self) -> Option<(SimTime, u64)> {
        let (release, pages) = self.by_time.pop_first()?;
        self.pages -= pages;
        Some((release, pages))
    }

    /// Removes the earliest release if it is due at or before `now`.
    pub fn pop_due(&mut self, now: SimTime) -> Option<(SimTime, u64)> {
        if *self.by_time.first_key_value()?.0 <= now {
            self.pop()
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_come_out_in_time_order_summed_by_instant() {
        let mut q = ReleaseQueue::new(10);
        q.push(SimTime(30), 2).unwrap();
        q.push(SimTime(10), 1).unwrap();
        q.push(SimTime(30), 3).unwrap();
        assert!(q.push(SimTime(5), 5).is_err(), "over the capacity");
        assert_eq!(q.pop_due(SimTime(9)), None);
        assert_eq!(q.pop_due(SimTime(10)), Some((SimTime(10), 1)));
        assert_eq!(q.pop(), Some((SimTime(30), 5)));
        assert_eq!(q.pop(), None);
        q.push(SimTime(5), 10).unwrap();
    }
}
