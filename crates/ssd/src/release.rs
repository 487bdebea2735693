//! When the write buffer's slots come free: pages held until their programs finish, by
//! release time.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use storsim_core::SimTime;
use storsim_flash::{Scheduler, Ticket};

/// The write buffer's releases: in a [`ReleaseQueue`] when every finish is final (FIFO dies),
/// or, when dies reorder operations, in a heap of releases with the tickets they resolve by:
/// a priority read placed after a release was pushed may delay the program it waits for, so
/// a release that comes due is re-checked and, if its program moved, pushed back at its
/// actual time (shifts only ever delay, so nothing is released early).
pub(crate) enum Releases {
    Final(ReleaseQueue),
    Moving(MovingReleases),
}

/// A release: when (as placed, or as last resolved), its push's sequence number, its pages and
/// the ticket its program's finish resolves by.
type Moving = (SimTime, u64, u64, Ticket);

/// Releases whose programs may still move, earliest first; ties in the order pushed.
///
/// As in [`ReleaseQueue`], most releases arrive in order per lane, so each lane is a FIFO and
/// only the lanes' fronts sit in a heap (one entry per lane, which stays in cache); a release
/// earlier than its lane's latest, and one whose program moved, go to a second heap. One heap
/// of every release held (a quarter of a million for a large buffer) was a fifth of a run's
/// time under `suspend`, each pop a chain of cache misses. The order popped is the same: by
/// time, then by push.
#[derive(Default)]
pub(crate) struct MovingReleases {
    lanes: Vec<VecDeque<Moving>>,
    /// (time, sequence, lane) of every non-empty lane's front.
    fronts: BinaryHeap<Reverse<(SimTime, u64, usize)>>,
    others: BinaryHeap<Reverse<Moving>>,
    pushed: u64,
}

impl Releases {
    /// Holds `pages` until `release` (the program's finish as placed, moving as `ticket`
    /// says), in lane `lane` (see [`ReleaseQueue::push`]); refuses what would exceed the
    /// capacity.
    #[inline]
    pub fn push(
        &mut self,
        release: SimTime,
        pages: u64,
        lane: usize,
        ticket: Ticket,
    ) -> Result<(), ()> {
        match self {
            Releases::Final(q) => q.push(release, pages, lane),
            Releases::Moving(m) => {
                m.push(release, pages, lane, ticket);
                Ok(())
            }
        }
    }

    /// Removes the earliest release (at its actual time) and returns its time and pages.
    #[inline]
    pub fn pop(&mut self, scheduler: &Scheduler) -> Option<(SimTime, u64)> {
        match self {
            Releases::Final(q) => q.pop(),
            Releases::Moving(m) => m.pop_due(SimTime(u64::MAX), scheduler),
        }
    }

    /// Removes a release due by `now`, if any, and returns its time and pages.
    #[inline]
    pub fn pop_due(&mut self, now: SimTime, scheduler: &Scheduler) -> Option<(SimTime, u64)> {
        match self {
            Releases::Final(q) => q.pop_due(now),
            Releases::Moving(m) => m.pop_due(now, scheduler),
        }
    }
}

impl MovingReleases {
    fn push(&mut self, release: SimTime, pages: u64, lane: usize, ticket: Ticket) {
        self.pushed += 1;
        let entry = (release, self.pushed, pages, ticket);
        if lane >= self.lanes.len() {
            self.lanes.resize_with(lane + 1, VecDeque::new);
        }
        let q = &mut self.lanes[lane];
        match q.back() {
            Some(last) if last.0 > release => self.others.push(Reverse(entry)),
            _ => {
                if q.is_empty() {
                    self.fronts.push(Reverse((release, self.pushed, lane)));
                }
                q.push_back(entry);
            }
        }
    }

    /// Takes the earliest release (by time, then push) out of whichever holds it.
    fn take_earliest(&mut self) -> Option<Moving> {
        let lane_first = self.fronts.peek().map(|r| (r.0 .0, r.0 .1));
        let other_first = self.others.peek().map(|r| (r.0 .0, r.0 .1));
        let from_lane = match (lane_first, other_first) {
            (None, None) => return None,
            (Some(l), Some(o)) => l < o,
            (l, _) => l.is_some(),
        };
        if !from_lane {
            return self.others.pop().map(|Reverse(e)| e);
        }
        let Reverse((_, _, lane)) = self.fronts.pop().expect("peeked");
        let q = &mut self.lanes[lane];
        let entry = q.pop_front().expect("a lane in the heap holds a release");
        if let Some(next) = q.front() {
            self.fronts.push(Reverse((next.0, next.1, lane)));
        }
        Some(entry)
    }

    /// The earliest release's time, by time then push, without taking it.
    fn earliest(&self) -> Option<SimTime> {
        let lane = self.fronts.peek().map(|r| r.0 .0);
        let other = self.others.peek().map(|r| r.0 .0);
        match (lane, other) {
            (Some(l), Some(o)) => Some(l.min(o)),
            (l, o) => l.or(o),
        }
    }

    fn pop_due(&mut self, now: SimTime, scheduler: &Scheduler) -> Option<(SimTime, u64)> {
        loop {
            if self.earliest()? > now {
                return None;
            }
            let (at, seq, pages, ticket) = self.take_earliest().expect("one is due");
            let actual = scheduler.resolve(at, ticket);
            if actual == at {
                return Some((at, pages));
            }
            self.others.push(Reverse((actual, seq, pages, ticket)));
        }
    }
}

/// Bits of a release time per level of the radix heap, and the buckets that gives: one per
/// value of a 4-bit digit at each of the 16 digits of a `u64`.
const DIGIT_BITS: u32 = 4;
const DIGITS: usize = 1 << DIGIT_BITS;
const BUCKETS: usize = DIGITS * (64 / DIGIT_BITS as usize);

/// Releases per storage block, and "no block".
const BLOCK: usize = 32;
const NO_BLOCK: u32 = u32::MAX;

/// How far ahead of a lane's front its entries are prefetched: one 64-byte line of them.
const LINE_AHEAD: usize = 4;

/// Pages held in the buffer, by the instant they are released.
///
/// Most releases come in order per *lane*: the caller names one with each push (the SSD
/// names the die of the write's last flash operation, and a die runs its operations in order,
/// so its programs finish in the order they were placed). A lane is a FIFO, and the lanes'
/// first releases sit in a small binary heap, so a push in order is an append and a pop
/// touches the front of one lane and a heap of one entry per lane: memory that stays in
/// cache however many releases are held. The lane is only a hint: a release earlier than its
/// lane's latest goes to a radix heap instead, so every order of pushes is served.
///
/// The radix heap (Ahuja, Mehlhorn, Orlin and Tarjan, 1990), in base 16, relies on the
/// buffer's time moving forward only: no release is pushed earlier than one already popped,
/// since a page is released when its program finishes and the buffer pops releases only up
/// to its present. Then a push is an append to one of 256 buckets, chosen by the highest
/// digit in which the release differs from the last one it popped, and a pop sorts out only
/// the lowest bucket, each release moving down a digit or more. Under a large buffer's
/// backlog (a quarter of a million entries for 1 GiB of 4 KiB pages, seconds ahead) a release
/// moves down some eight times before it is popped, each a cold cache line, which is why the
/// lanes come first.
///
/// The lanes and the buckets share one pool of fixed-size blocks, each a list of them, so the
/// memory follows the releases held (a vector per bucket or lane would keep each one's
/// largest size, together several times the releases held).
///
/// Bounded: every entry holds at least one page and the pages held never exceed the buffer's
/// capacity, which `push` enforces.
pub(crate) struct ReleaseQueue {
    /// The pool: blocks in use belong to one bucket's or lane's list, the others to the free
    /// list.
    blocks: Vec<Block>,
    /// The first free block, or [`NO_BLOCK`].
    free: u32,
    lanes: Vec<Lane>,
    /// The first release of each non-empty lane, with the lane.
    lane_fronts: BinaryHeap<Reverse<(SimTime, u32)>>,
    /// Per bucket, the block its releases are appended to, which starts its list (or
    /// [`NO_BLOCK`]). Bucket 0 holds releases at exactly `radix_last`; bucket `16 × d + v`
    /// those whose highest (base 16) digit differing from `radix_last` is digit `d`, of value
    /// `v` (above `radix_last`'s). So every release in a bucket is earlier than every release
    /// in a higher one.
    heads: Vec<u32>,
    /// The earliest release in each non-empty bucket.
    earliest: Vec<SimTime>,
    /// Bit `i % 64` of word `i / 64` is set when bucket `i` is not empty.
    occupied: [u64; BUCKETS / 64],
    /// The last release the radix heap popped (zero before the first): its buckets are
    /// relative to it.
    radix_last: SimTime,
    /// The last release popped (zero before the first): no release earlier than it is pushed.
    last: SimTime,
    pages: u64,
    capacity_pages: u64,
    /// Pushes that went to the radix heap, for the tests.
    #[cfg(test)]
    out_of_lane: u64,
}

/// A lane's releases, in order, as a list of blocks: popped from `head` at `pos`, appended to
/// `tail`.
#[derive(Clone, Copy)]
struct Lane {
    head: u32,
    tail: u32,
    pos: u32,
    /// The latest release pushed (meaningful while the lane is not empty).
    latest: SimTime,
}

struct Block {
    entries: [(SimTime, u64); BLOCK],
    len: u32,
    /// The next block of the same list, or [`NO_BLOCK`].
    next: u32,
}

impl ReleaseQueue {
    /// A queue of at most `capacity_pages` pages, with `lanes` lanes (at least one).
    pub fn new(capacity_pages: u64, lanes: usize) -> Self {
        let empty = Lane {
            head: NO_BLOCK,
            tail: NO_BLOCK,
            pos: 0,
            latest: SimTime::ZERO,
        };
        ReleaseQueue {
            blocks: Vec::new(),
            free: NO_BLOCK,
            lanes: vec![empty; lanes.max(1)],
            lane_fronts: BinaryHeap::new(),
            heads: vec![NO_BLOCK; BUCKETS],
            earliest: vec![SimTime::ZERO; BUCKETS],
            occupied: [0; BUCKETS / 64],
            radix_last: SimTime::ZERO,
            last: SimTime::ZERO,
            pages: 0,
            capacity_pages,
            #[cfg(test)]
            out_of_lane: 0,
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

    /// Holds `pages` until `release`, in lane `lane` if it comes in that lane's order (any
    /// lane number is accepted: it is only a hint); refuses (returning `Err`) what would
    /// exceed the capacity, which the caller makes room for first.
    pub fn push(&mut self, release: SimTime, pages: u64, lane: usize) -> Result<(), ()> {
        if pages == 0 || self.pages + pages > self.capacity_pages {
            return Err(());
        }
        assert!(
            release >= self.last,
            "write buffer: a release at {release:?} pushed after one at {:?} was popped",
            self.last
        );
        self.pages += pages;
        let l = lane % self.lanes.len();
        let Lane { tail, latest, .. } = self.lanes[l];
        if tail == NO_BLOCK {
            let b = self.new_block(NO_BLOCK);
            self.lanes[l] = Lane {
                head: b,
                tail: b,
                pos: 0,
                latest: release,
            };
            self.lane_fronts.push(Reverse((release, l as u32)));
        } else if release >= latest {
            if self.blocks[tail as usize].len as usize == BLOCK {
                let b = self.new_block(NO_BLOCK);
                self.blocks[tail as usize].next = b;
                self.lanes[l].tail = b;
            }
            self.lanes[l].latest = release;
        } else {
            #[cfg(test)]
            {
                self.out_of_lane += 1;
            }
            self.radix_put(release, pages);
            return Ok(());
        }
        let block = &mut self.blocks[self.lanes[l].tail as usize];
        block.entries[block.len as usize] = (release, pages);
        block.len += 1;
        Ok(())
    }

    #[inline]
    fn radix_put(&mut self, release: SimTime, pages: u64) {
        let i = Self::bucket(self.radix_last, release);
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

    /// The radix heap's lowest non-empty bucket, if any.
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

    /// Removes the radix heap's earliest release, from its lowest bucket `i`; returns the
    /// pages of every push at that instant.
    fn radix_pop(&mut self, i: usize) -> u64 {
        if i > 0 {
            // The lowest bucket's releases move down relative to its earliest release, which
            // becomes the last popped: they all land in lower buckets, its earliest in bucket 0.
            self.radix_last = self.earliest[i];
            let mut b = self.take_bucket(i);
            while b != NO_BLOCK {
                let block = &self.blocks[b as usize];
                let (len, next) = (block.len as usize, block.next);
                for k in 0..len {
                    let (release, pages) = self.blocks[b as usize].entries[k];
                    self.radix_put(release, pages);
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
        pages
    }

    /// Removes lane `l`'s first release; returns its pages and the lane's next release, if
    /// any.
    fn lane_pop(&mut self, l: usize) -> (u64, Option<SimTime>) {
        let lane = &mut self.lanes[l];
        let block = &self.blocks[lane.head as usize];
        let pages = block.entries[lane.pos as usize].1;
        lane.pos += 1;
        if lane.pos == block.len {
            let (done, next) = (lane.head, block.next);
            if next == NO_BLOCK {
                // The tail block, emptied: the lane is empty.
                lane.head = NO_BLOCK;
                lane.tail = NO_BLOCK;
            } else {
                lane.head = next;
            }
            lane.pos = 0;
            self.free_block(done);
        }
        let lane = self.lanes[l];
        if lane.head == NO_BLOCK {
            return (pages, None);
        }
        let block = &self.blocks[lane.head as usize];
        // A lane's front was written long before (a deep backlog holds a quarter of a million
        // releases across the lanes), so its next cache line is loaded ahead of its turn.
        storsim_core::cache::prefetch(&block.entries, lane.pos as usize + LINE_AHEAD);
        (pages, Some(block.entries[lane.pos as usize].0))
    }

    /// The earliest release held, and the radix heap's lowest bucket.
    #[inline]
    fn earliest_release(&self) -> Option<(SimTime, Option<usize>)> {
        let lanes = self.lane_fronts.peek().map(|Reverse((t, _))| *t);
        let radix = self.lowest();
        let in_radix = radix.map(|i| self.earliest[i]);
        let first = match (lanes, in_radix) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b)?,
        };
        Some((first, radix))
    }

    /// Removes the earliest release and returns its time and pages (those of every push at
    /// that instant).
    pub fn pop(&mut self) -> Option<(SimTime, u64)> {
        let (first, radix) = self.earliest_release()?;
        Some(self.pop_at(first, radix))
    }

    /// Removes every release at `first`, the earliest held; `radix` is the radix heap's
    /// lowest bucket.
    fn pop_at(&mut self, first: SimTime, radix: Option<usize>) -> (SimTime, u64) {
        let mut pages = 0;
        while let Some(&Reverse((t, l))) = self.lane_fronts.peek() {
            if t != first {
                break;
            }
            let (p, next) = self.lane_pop(l as usize);
            pages += p;
            match next {
                // The lane's next release replaces its last in place: one pass down the heap.
                Some(front) => {
                    if let Some(mut top) = self.lane_fronts.peek_mut() {
                        *top = Reverse((front, l));
                    }
                }
                None => {
                    self.lane_fronts.pop();
                }
            }
        }
        if let Some(i) = radix {
            if self.earliest[i] == first {
                pages += self.radix_pop(i);
            }
        }
        self.last = first;
        self.pages -= pages;
        (first, pages)
    }

    /// Removes the earliest release if it is due at or before `now`.
    pub fn pop_due(&mut self, now: SimTime) -> Option<(SimTime, u64)> {
        let (first, radix) = self.earliest_release()?;
        if first <= now {
            Some(self.pop_at(first, radix))
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
        let mut q = ReleaseQueue::new(10, 2);
        q.push(SimTime(30), 2, 0).unwrap();
        // Earlier than its lane's latest: held outside the lanes, and still in order.
        q.push(SimTime(10), 1, 0).unwrap();
        q.push(SimTime(30), 3, 1).unwrap();
        assert!(q.push(SimTime(5), 5, 1).is_err(), "over the capacity");
        assert_eq!(q.out_of_lane, 1);
        assert_eq!(q.pop_due(SimTime(9)), None);
        assert_eq!(q.pop_due(SimTime(10)), Some((SimTime(10), 1)));
        assert_eq!(q.pop(), Some((SimTime(30), 5)));
        assert_eq!(q.pop(), None);
        // Any lane number will do.
        q.push(SimTime(30), 10, 7).unwrap();
        assert_eq!(q.pop(), Some((SimTime(30), 10)));
    }

    /// The queue's definition: pages summed by release time in a sorted map.
    #[test]
    fn matches_a_sorted_map_under_random_use() {
        for seed in 0..12u64 {
            let mut rng = Prng::new(seed);
            let capacity = 1 + rng.below(5_000);
            // Lanes as the SSD uses them: each lane's releases in order (a die's programs),
            // some pushes out of their lane's order, and with seeds 8 and up lanes named at
            // random.
            let lanes = 1 + rng.below(8) as usize;
            let ordered = seed < 8;
            eprintln!("release queue seed {seed}: {lanes} lanes, ordered {ordered}");
            let mut q = ReleaseQueue::new(capacity, lanes);
            let mut lane_next = vec![0u64; lanes];
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
                        let lane = rng.below(lanes as u64 + 2) as usize;
                        let release = if ordered && lane < lanes && rng.below(10) != 0 {
                            let spread_bits = rng.below(24);
                            let r = lane_next[lane].max(now) + rng.below(1 << spread_bits);
                            lane_next[lane] = r;
                            r
                        } else {
                            let spread_bits = rng.below(40);
                            now + rng.below(1 << spread_bits)
                        };
                        let release = SimTime(release);
                        let fits = held + pages <= capacity;
                        assert_eq!(
                            q.push(release, pages, lane).is_ok(),
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
            // Both ways of holding a release were used.
            assert!(q.out_of_lane > 1000, "seed {seed}: {}", q.out_of_lane);
            assert!(
                q.out_of_lane < 30_000,
                "seed {seed}: lanes unused ({})",
                q.out_of_lane
            );
        }
    }
}
