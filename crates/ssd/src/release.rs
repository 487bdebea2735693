//! When the write buffer's slots come free: pages held until their programs finish, by
//! release time.

use storsim_core::SimTime;

/// Bits of a release time per level of the radix heap, and the buckets that gives: one per
/// value of a 4-bit digit at each of the 16 digits of a `u64`.
const DIGIT_BITS: u32 = 4;
const DIGITS: usize = 1 << DIGIT_BITS;
const BUCKETS: usize = DIGITS * (64 / DIGIT_BITS as usize);

/// Releases per storage block, and "no block".
const BLOCK: usize = 32;
const NO_BLOCK: u32 = u32::MAX;

/// Pages held in the buffer, by the instant they are released: a radix heap (Ahuja, Mehlhorn,
/// Orlin and Tarjan, 1990) in base 16. It relies on the buffer's time moving forward only: no
/// release is pushed earlier than one already popped, since a page is released when its
/// program finishes and the buffer pops releases only up to its present. Then a push is an
/// append to one of 256 buckets, chosen by the highest digit in which the release differs
/// from the last one popped, and a pop sorts out only the lowest bucket, each release moving
/// down a digit or more. With a large buffer (a quarter of a million entries for 1 GiB of
/// 4 KiB pages) this touches a few cache lines per operation, where a B-tree walks from its
/// root on every push and a binary heap on every pop.
///
/// The buckets share one pool of fixed-size blocks, each bucket a list of them, so the
/// memory follows the releases held (a vector per bucket would keep each bucket's largest
/// size, together several times the releases held).
///
/// Bounded: every entry holds at least one page and the pages held never exceed the buffer's
/// capacity, which `push` enforces.
pub(crate) struct ReleaseQueue {
    /// The pool: blocks in use belong to one bucket's list, the others to the free list.
    blocks: Vec<Block>,
    /// The first free block, or [`NO_BLOCK`].
    free: u32,
    /// Per bucket, the block its releases are appended to, which starts its list (or
    /// [`NO_BLOCK`]). Bucket 0 holds releases at exactly `last`; bucket `16 × d + v` those
    /// whose highest (base 16) digit differing from `last` is digit `d`, of value `v` (above
    /// `last`'s). So every release in a bucket is earlier than every release in a higher one.
    heads: Vec<u32>,
    /// The earliest release in each non-empty bucket.
    earliest: Vec<SimTime>,
    /// Bit `i % 64` of word `i / 64` is set when bucket `i` is not empty.
    occupied: [u64; BUCKETS / 64],
    /// The last release popped (zero before the first): no release earlier than it is pushed.
    last: SimTime,
    pages: u64,
    capacity_pages: u64,
}

struct Block {
    entries: [(SimTime, u64); BLOCK],
    len: u32,
    /// The next block of the same list, or [`NO_BLOCK`].
    next: u32,
}

impl ReleaseQueue {
    pub fn new(capacity_pages: u64) -> Self {
        ReleaseQueue {
            blocks: Vec::new(),
            free: NO_BLOCK,
            heads: vec![NO_BLOCK; BUCKETS],
            earliest: vec![SimTime::ZERO; BUCKETS],
            occupied: [0; BUCKETS / 64],
            last: SimTime::ZERO,
            pages: 0,
            capacity_pages,
        }
    }

    /// The bucket of `release` relative to `last`.
    #[inline]
    fn bucket(last: SimTime, release: SimTime) -> usize {
        let differ = release.as_ns() ^ last.as_ns();
        if differ == 0 {
            return 0;
        }
        let digit = (63 - differ.leading_zeros()) / DIGIT_BITS;
        let value = (release.as_ns() >> (digit * DIGIT_BITS)) as usize & (DIGITS - 1);
        digit as usize * DIGITS + value
    }

    /// A block from the free list, or a new one, heading a list that continues at `next`.
    fn new_block(&mut self, next: u32) -> u32 {
        let b = if self.free != NO_BLOCK {
            let b = self.free;
            self.free = self.blocks[b as usize].next;
            b
        } else {
            self.blocks.push(Block {
                entries: [(SimTime::ZERO, 0); BLOCK],
                len: 0,
                next: NO_BLOCK,
            });
            (self.blocks.len() - 1) as u32
        };
        let block = &mut self.blocks[b as usize];
        block.len = 0;
        block.next = next;
        b
    }

    fn free_block(&mut self, b: u32) {
        self.blocks[b as usize].next = self.free;
        self.free = b;
    }

    #[inline]
    fn put(&mut self, release: SimTime, pages: u64) {
        let i = Self::bucket(self.last, release);
        let bit = 1 << (i % 64);
        let word = &mut self.occupied[i / 64];
        if *word & bit == 0 || release < self.earliest[i] {
            self.earliest[i] = release;
        }
        *word |= bit;
        let mut head = self.heads[i];
        if head == NO_BLOCK || self.blocks[head as usize].len as usize == BLOCK {
            head = self.new_block(head);
            self.heads[i] = head;
        }
        let block = &mut self.blocks[head as usize];
        block.entries[block.len as usize] = (release, pages);
        block.len += 1;
    }

    /// Holds `pages` until `release`; refuses (returning `Err`) what would exceed the
    /// capacity, which the caller makes room for first.
    pub fn push(&mut self, release: SimTime, pages: u64) -> Result<(), ()> {
        if pages == 0 || self.pages + pages > self.capacity_pages {
            return Err(());
        }
        assert!(
            release >= self.last,
            "write buffer: a release at {release:?} pushed after one at {:?} was popped",
            self.last
        );
        self.pages += pages;
        self.put(release, pages);
        Ok(())
    }

    /// The lowest non-empty bucket, if any.
    #[inline]
    fn lowest(&self) -> Option<usize> {
        let (w, word) = self
            .occupied
            .iter()
            .enumerate()
            .find(|&(_, &word)| word != 0)?;
        Some(w * 64 + word.trailing_zeros() as usize)
    }

    /// Takes bucket `i`'s list out of it, leaving it empty.
    fn take_bucket(&mut self, i: usize) -> u32 {
        self.occupied[i / 64] &= !(1 << (i % 64));
        std::mem::replace(&mut self.heads[i], NO_BLOCK)
    }

    /// Removes the earliest release and returns its time and pages (those of every push at
    /// that instant).
    pub fn pop(&mut self) -> Option<(SimTime, u64)> {
        let i = self.lowest()?;
        let first = self.earliest[i];
        if i > 0 {
            // The lowest bucket's releases move down relative to its earliest release, which
            // becomes the last popped: they all land in lower buckets, its earliest in bucket 0.
            self.last = first;
            let mut b = self.take_bucket(i);
            while b != NO_BLOCK {
                let block = &self.blocks[b as usize];
                let (len, next) = (block.len as usize, block.next);
                for k in 0..len {
                    let (release, pages) = self.blocks[b as usize].entries[k];
                    self.put(release, pages);
                }
                self.free_block(b);
                b = next;
            }
        }
        let mut pages = 0;
        let mut b = self.take_bucket(0);
        while b != NO_BLOCK {
            let block = &self.blocks[b as usize];
            pages += block.entries[..block.len as usize]
                .iter()
                .map(|&(_, p)| p)
                .sum::<u64>();
            let next = block.next;
            self.free_block(b);
            b = next;
        }
        self.pages -= pages;
        Some((first, pages))
    }

    /// Removes the earliest release if it is due at or before `now`.
    pub fn pop_due(&mut self, now: SimTime) -> Option<(SimTime, u64)> {
        let i = self.lowest()?;
        if self.earliest[i] <= now {
            self.pop()
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use storsim_core::Prng;

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
        q.push(SimTime(30), 10).unwrap();
    }

    /// The queue's definition: pages summed by release time in a sorted map.
    #[test]
    fn matches_a_sorted_map_under_random_use() {
        for seed in 0..8u64 {
            let mut rng = Prng::new(seed);
            let capacity = 1 + rng.below(5_000);
            let mut q = ReleaseQueue::new(capacity);
            let mut map: BTreeMap<SimTime, u64> = BTreeMap::new();
            let mut held = 0;
            let mut now = 0u64;
            for step in 0..50_000 {
                // The present moves on; releases land ahead of it, up to a spread that varies
                // so that every bucket is used.
                let step_bits = rng.below(20);
                now += rng.below(1 << step_bits);
                let at = SimTime(now);
                match rng.below(3) {
                    0 | 1 => {
                        let pages = 1 + rng.below(4);
                        let spread_bits = rng.below(40);
                        let release = SimTime(now + rng.below(1 << spread_bits));
                        let fits = held + pages <= capacity;
                        assert_eq!(
                            q.push(release, pages).is_ok(),
                            fits,
                            "seed {seed} step {step}"
                        );
                        if fits {
                            *map.entry(release).or_insert(0) += pages;
                            held += pages;
                        }
                    }
                    _ => {
                        let expected = match map.first_key_value() {
                            Some((&t, _)) if t <= at => map.pop_first(),
                            _ => None,
                        };
                        assert_eq!(q.pop_due(at), expected, "seed {seed} step {step}");
                        if let Some((t, pages)) = expected {
                            held -= pages;
                            now = now.max(t.as_ns());
                        }
                        if rng.below(8) == 0 {
                            // As a full buffer does: wait for the earliest release.
                            let expected = map.pop_first();
                            assert_eq!(q.pop(), expected, "seed {seed} step {step}");
                            if let Some((t, pages)) = expected {
                                held -= pages;
                                now = now.max(t.as_ns());
                            }
                        }
                    }
                }
            }
        }
    }
}
