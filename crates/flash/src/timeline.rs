//! A channel's busy intervals, with gap filling: FlashSim's channel timeline.
//!
//! Under a deep backlog (a large write buffer under sustained random writes schedules garbage
//! collection seconds ahead) a channel holds hundreds of thousands of future reservations, and
//! new ones land between them, wherever their die's own backlog ends. One sorted vector would
//! shift half its entries on every such insertion, and a B-tree costs more on the common case
//! (appending). So the intervals live in short sorted chunks, in order: finding a place is two
//! binary searches, and inserting shifts at most one chunk.

use std::collections::VecDeque;

/// The most reservations a channel keeps (16 MiB); beyond it the two earliest merge (their gap
/// counts as busy), which can only delay later operations, never make them early. It is large
/// on purpose: an earlier bound of 512 merged away the gaps near the present under a deep
/// backlog and made such runs report less than half their throughput.
pub(crate) const INTERVALS_MAX: usize = 1 << 20;

/// A chunk splits in two when it grows past this many intervals.
const CHUNK_MAX: usize = 128;

/// Busy intervals `[start, end)` in ns: disjoint, sorted, and never touching (a reservation
/// that ends where another begins joins it).
#[derive(Clone, Debug, Default)]
pub(crate) struct Timeline {
    /// Non-empty sorted chunks, in order.
    chunks: VecDeque<Vec<(u64, u64)>>,
    /// Emptied chunks kept for reuse, so that a timeline that moves along (appending at one
    /// end, pruning at the other) stops allocating.
    spare: Vec<Vec<(u64, u64)>>,
    len: usize,
    /// Chunks pruned from the front so far. A [`Cursor`] counts chunks from the first one the
    /// timeline ever had, so that pruning does not move what it points at.
    pruned_chunks: usize,
}

/// Where one stream of reservations (one die's, on its channel) last went: the search for the
/// stream's next reservation starts there. Under a deep backlog each die's reservations land at
/// the end of its own backlog, which moves forward steadily but may lie thousands of
/// reservations before the channel's last one; starting from the cursor finds the place in a
/// few steps where a binary search over every chunk touches a dozen cold ones. A cursor is
/// only a hint: a search from a stale one (after chunks split or emptied) takes longer but
/// finds the same place.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Cursor(usize);

/// Where an interval is, or would go: chunk and index within it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Pos {
    chunk: usize,
    index: usize,
}

impl Timeline {
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// When the last reservation ends, if there is one.
    pub fn last_end(&self) -> Option<u64> {
        self.chunks.back().and_then(|c| c.last()).map(|&(_, e)| e)
    }

    #[cfg(test)]
    pub fn intervals(&self) -> Vec<(u64, u64)> {
        self.chunks.iter().flatten().copied().collect()
    }

    /// Reserves `len` ns at the earliest start >= `earliest` that fits; returns the start.
    /// Reservations that ended by `horizon` (the driver's present) are forgotten first. The
    /// search starts from `cursor`, which is left where this reservation went.
    pub fn reserve(&mut self, earliest: u64, len: u64, horizon: u64, cursor: &mut Cursor) -> u64 {
        self.prune(horizon);
        // Most reservations start after everything reserved so far: append them directly.
        if self.last_end().is_none_or(|e| e <= earliest) {
            if len > 0 {
                self.append(earliest, earliest + len);
            }
            *cursor = Cursor(self.pruned_chunks + self.chunks.len().saturating_sub(1));
            return earliest;
        }
        // Ends are sorted like starts: skip every interval that ended by `earliest`.
        let mut at = self.first_ending_after(earliest, *cursor);
        let mut start = earliest;
        while let Some((s, e)) = self.get(at) {
            if s >= start + len {
                break;
            }
            start = start.max(e);
            at = self.next(at);
        }
        *cursor = Cursor(self.pruned_chunks + at.chunk);
        if len > 0 {
            self.place(at, start, len);
        }
        start
    }

    /// [`Timeline::place`] at the end, the common case, without the general bookkeeping.
    fn append(&mut self, start: u64, end: u64) {
        if let Some(last) = self.chunks.back_mut().and_then(|c| c.last_mut()) {
            if last.1 == start {
                last.1 = end;
                return;
            }
        }
        self.len += 1;
        match self.chunks.back_mut() {
            Some(chunk) if chunk.len() < CHUNK_MAX => chunk.push((start, end)),
            _ => {
                let mut chunk = self.new_chunk();
                chunk.push((start, end));
                self.chunks.push_back(chunk);
            }
        }
        if self.len > INTERVALS_MAX {
            self.merge_first_two();
        }
    }

    fn get(&self, at: Pos) -> Option<(u64, u64)> {
        self.chunks.get(at.chunk)?.get(at.index).copied()
    }

    fn next(&self, at: Pos) -> Pos {
        if at.index + 1 < self.chunks[at.chunk].len() {
            Pos {
                chunk: at.chunk,
                index: at.index + 1,
            }
        } else {
            Pos {
                chunk: at.chunk + 1,
                index: 0,
            }
        }
    }

    fn end_pos(&self) -> Pos {
        Pos {
            chunk: self.chunks.len(),
            index: 0,
        }
    }

    /// The position of the first interval ending after `t` (or the end), found by galloping
    /// from `cursor` to bracket the chunk, then binary searches within the bracket and the
    /// chunk. The answer does not depend on the cursor.
    fn first_ending_after(&self, t: u64, cursor: Cursor) -> Pos {
        let n = self.chunks.len();
        // Whether every interval of chunk `i` ended by `t`: true for a prefix of the chunks.
        let ended = |i: usize| self.chunks[i].last().expect("chunks are not empty").1 <= t;
        // Bracket the first chunk that has not ended in `lo..=hi`.
        let (mut lo, mut hi) = (0, n);
        if n > 0 {
            let guess = cursor.0.saturating_sub(self.pruned_chunks).min(n - 1);
            let mut step = 1;
            if ended(guess) {
                lo = guess + 1;
                while lo + step - 1 < n && ended(lo + step - 1) {
                    lo += step;
                    step *= 2;
                }
                hi = (lo + step - 1).min(n);
            } else {
                hi = guess;
                while hi >= step && !ended(hi - step) {
                    hi -= step;
                    step *= 2;
                }
                lo = hi.saturating_sub(step - 1);
            }
        }
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if ended(mid) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let chunk = lo;
        match self.chunks.get(chunk) {
            Some(c) => Pos {
                chunk,
                index: c.partition_point(|&(_, e)| e <= t),
            },
            None => self.end_pos(),
        }
    }

    /// The interval just before position `at`, if any.
    fn previous(&self, at: Pos) -> Option<Pos> {
        if at.index > 0 {
            Some(Pos {
                chunk: at.chunk,
                index: at.index - 1,
            })
        } else if at.chunk > 0 {
            let chunk = at.chunk - 1;
            Some(Pos {
                chunk,
                index: self.chunks[chunk].len() - 1,
            })
        } else {
            None
        }
    }

    /// Records `[start, start + len)` just before position `at` (it overlaps nothing). A
    /// reservation that touches a neighbour extends it instead: the busy time is the same, and
    /// back-to-back transfers then cost one interval, not one each.
    fn place(&mut self, at: Pos, start: u64, len: u64) {
        let end = start + len;
        let previous = self
            .previous(at)
            .filter(|&p| self.get(p).expect("exists").1 == start);
        let next = self.get(at).filter(|&(s, _)| s == end).map(|_| at);
        match (previous, next) {
            (Some(p), Some(n)) => {
                let (_, next_end) = self.get(n).expect("exists");
                self.chunks[p.chunk][p.index].1 = next_end;
                self.remove(n);
            }
            (Some(p), None) => self.chunks[p.chunk][p.index].1 = end,
            (None, Some(n)) => self.chunks[n.chunk][n.index].0 = start,
            (None, None) => {
                self.insert(at, (start, end));
                if self.len > INTERVALS_MAX {
                    self.merge_first_two();
                }
            }
        }
    }

    fn insert(&mut self, at: Pos, interval: (u64, u64)) {
        self.len += 1;
        // At a chunk boundary the interval goes at the end of the chunk before.
        let at = match self.previous(at) {
            Some(p) if at.index == 0 => Pos {
                chunk: p.chunk,
                index: p.index + 1,
            },
            _ => at,
        };
        if at.chunk == self.chunks.len() {
            let mut chunk = self.new_chunk();
            chunk.push(interval);
            self.chunks.push_back(chunk);
            return;
        }
        self.chunks[at.chunk].insert(at.index, interval);
        if self.chunks[at.chunk].len() > CHUNK_MAX {
            let mut upper = self.new_chunk();
            upper.extend(self.chunks[at.chunk].drain(CHUNK_MAX / 2..));
            self.chunks.insert(at.chunk + 1, upper);
        }
    }

    fn new_chunk(&mut self) -> Vec<(u64, u64)> {
        self.spare
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(CHUNK_MAX + 1))
    }

    fn recycle(&mut self, mut chunk: Vec<(u64, u64)>) {
        // A few spares suffice: chunks are emptied about as fast as they are filled.
        if self.spare.len() < 8 {
            chunk.clear();
            self.spare.push(chunk);
        }
    }

    fn remove(&mut self, at: Pos) {
        self.len -= 1;
        let chunk = &mut self.chunks[at.chunk];
        chunk.remove(at.index);
        if chunk.is_empty() {
            let chunk = self.chunks.remove(at.chunk).expect("exists");
            self.recycle(chunk);
        }
    }

    /// Past the bound the two earliest reservations merge: their gap counts as busy.
    fn merge_first_two(&mut self) {
        let first = Pos { chunk: 0, index: 0 };
        let (s0, _) = self.get(first).expect("over the bound");
        self.remove(first);
        self.chunks[0][0].0 = s0;
    }

    /// Forgets the reservations that ended by `now`.
    pub fn prune(&mut self, now: u64) {
        while let Some(chunk) = self.chunks.front_mut() {
            // Usually nothing has ended since the last call: one comparison says so.
            if chunk[0].1 > now {
                return;
            }
            let ended = chunk.partition_point(|&(_, e)| e <= now);
            self.len -= ended;
            if ended == chunk.len() {
                let chunk = self.chunks.pop_front().expect("exists");
                self.pruned_chunks += 1;
                self.recycle(chunk);
            } else {
                chunk.drain(..ended);
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use storsim_core::Prng;

    /// The timeline's definition, kept as simply as possible: a sorted list searched from the
    /// front, touching intervals joined.
    #[derive(Default)]
    struct Reference(Vec<(u64, u64)>);

    impl Reference {
        fn reserve(&mut self, earliest: u64, len: u64, horizon: u64) -> u64 {
            self.0.retain(|&(_, e)| e > horizon);
            let mut start = earliest;
            for &(s, e) in &self.0 {
                if e <= start {
                    continue;
                }
                if s >= start + len {
                    break;
                }
                start = start.max(e);
            }
            if len > 0 {
                let at = self.0.partition_point(|&(s, _)| s < start);
                self.0.insert(at, (start, start + len));
                let mut joined: Vec<(u64, u64)> = Vec::new();
                for &(s, e) in &self.0 {
                    match joined.last_mut() {
                        Some(last) if last.1 == s => last.1 = e,
                        _ => joined.push((s, e)),
                    }
                }
                self.0 = joined;
            }
            start
        }
    }

    #[test]
    fn back_to_back_reservations_share_one_interval() {
        let mut t = Timeline::default();
        let mut c = Cursor::default();
        assert_eq!(t.reserve(0, 10, 0, &mut c), 0);
        assert_eq!(t.reserve(0, 10, 0, &mut c), 10);
        assert_eq!(t.reserve(30, 5, 0, &mut c), 30);
        // Fills the gap [20, 30) exactly: all three become one.
        assert_eq!(t.reserve(15, 10, 0, &mut c), 20);
        assert_eq!(t.intervals(), [(0, 35)]);
        // A reservation that ends where the next begins joins it.
        assert_eq!(t.reserve(40, 5, 0, &mut c), 40);
        assert_eq!(t.reserve(37, 3, 0, &mut c), 37);
        assert_eq!(t.intervals(), [(0, 35), (37, 45)]);
        assert_eq!(t.len(), 2);
    }

    #[test]
    fn matches_the_definition_under_random_reservations() {
        for seed in 0..6u64 {
            eprintln!("timeline seed {seed}");
            let mut rng = Prng::new(seed);
            let mut t = Timeline::default();
            let mut r = Reference::default();
            let mut horizon = 0u64;
            let mut chunks_max = 0;
            // Cursors picked at random are mostly far from where the search ends: the answer
            // must not depend on them.
            let mut cursors = [Cursor::default(); 4];
            for step in 0..2_000 {
                // Reservations land anywhere in a window ahead of the present, so chunks fill,
                // split and empty; the present moves on now and then.
                if rng.below(10) == 0 {
                    horizon += rng.below(200);
                }
                let earliest = horizon + rng.below(50_000);
                let len = rng.below(30);
                let c = &mut cursors[rng.below(4) as usize];
                let a = t.reserve(earliest, len, horizon, c);
                let b = r.reserve(earliest, len, horizon);
                assert_eq!(a, b, "seed {seed} step {step}");
                assert_eq!(t.intervals(), r.0, "seed {seed} step {step}");
                assert_eq!(t.len(), r.0.len());
                chunks_max = chunks_max.max(t.chunks.len());
            }
            assert!(chunks_max > 4, "the test must exercise several chunks");
        }
    }

    #[test]
    fn matches_the_definition_with_one_cursor_per_stream() {
        // As the scheduler uses it: each die is a stream whose reservations move forward from
        // its own backlog, interleaved with the other streams' on one channel, while the
        // present moves on and prunes whole chunks.
        for seed in 0..4u64 {
            let mut rng = Prng::new(100 + seed);
            let mut t = Timeline::default();
            let mut r = Reference::default();
            let mut horizon = 0u64;
            let mut backlog = [0u64; 4];
            let mut cursors = [Cursor::default(); 4];
            let mut pruned_max = 0;
            for step in 0..20_000 {
                horizon += rng.below(40);
                let die = rng.below(4) as usize;
                let earliest = backlog[die].max(horizon) + rng.below(100);
                let len = 1 + rng.below(20);
                let a = t.reserve(earliest, len, horizon, &mut cursors[die]);
                let b = r.reserve(earliest, len, horizon);
                assert_eq!(a, b, "seed {seed} step {step}");
                backlog[die] = a + len + rng.below(300);
                if step % 64 == 0 {
                    assert_eq!(t.intervals(), r.0, "seed {seed} step {step}");
                }
                pruned_max = pruned_max.max(t.pruned_chunks);
            }
            assert_eq!(t.intervals(), r.0);
            assert!(pruned_max > 4, "the test must prune whole chunks");
        }
    }

    #[test]
    fn the_bound_merges_the_earliest_two() {
        let mut t = Timeline::default();
        let mut c = Cursor::default();
        for i in 0..(INTERVALS_MAX as u64 + 1) {
            t.reserve(10 * i, 1, 0, &mut c);
        }
        assert_eq!(t.len(), INTERVALS_MAX);
        assert_eq!(t.intervals()[..2], [(0, 11), (20, 21)]);
        // Once time has passed them all, the next reservation forgets them.
        let last = t.last_end().unwrap();
        t.reserve(last, 1, last, &mut c);
        assert_eq!(t.len(), 1);
    }
}
