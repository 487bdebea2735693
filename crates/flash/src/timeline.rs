//! A channel's busy intervals, with gap filling: FlashSim's channel timeline.
//!
//! Under a deep backlog (a large write buffer under sustained random writes schedules garbage
//! collection seconds ahead) a channel holds hundreds of thousands of future reservations, and
//! new ones land between them, wherever their die's own backlog ends. One sorted vector would
//! shift half its entries on every such insertion, and a B-tree costs more on the common case
//! (appending). So the intervals live in short sorted chunks, in order, and inserting shifts at
//! most one chunk. Finding a place starts from where the same die's last reservation went (a
//! [`Cursor`]), a few intervals away as a rule, rather than from the whole timeline.

use std::collections::VecDeque;

/// The most reservations a channel keeps (16 MiB); beyond it the two earliest merge (their gap
/// counts as busy), which can only delay later operations, never make them early. It is large
/// on purpose: an earlier bound of 512 merged away the gaps near the present under a deep
/// backlog and made such runs report less than half their throughput.
pub(crate) const INTERVALS_MAX: usize = 1 << 20;

/// A chunk splits in two when it grows past this many intervals.
const CHUNK_MAX: usize = 128;

/// How far a search within a chunk looks from its cursor, one interval at a time, before it
/// searches by halves instead.
const SCAN_MAX: usize = 8;

/// Busy intervals `[start, end)` in ns: disjoint, sorted, and never touching (a reservation
/// that ends where another begins joins it).
#[derive(Clone, Debug, Default)]
pub(crate) struct Timeline {
    /// Non-empty sorted chunks, in order.
    chunks: VecDeque<Chunk>,
    /// Emptied chunks kept for reuse, so that a timeline that moves along (appending at one
    /// end, pruning at the other) stops allocating.
    spare: Vec<Vec<(u64, u64)>>,
    len: usize,
    /// Chunks pruned from the front so far. A [`Cursor`] counts chunks from the first one the
    /// timeline ever had, so that pruning does not move what it points at.
    pruned_chunks: usize,
    /// No interval ends before this instant (the first one's end, or less): pruning up to an
    /// earlier present has nothing to do, which spares a look at the first chunk on most
    /// reservations.
    min_end: u64,
}

/// A run of consecutive intervals.
#[derive(Clone, Debug)]
struct Chunk {
    /// Never empty.
    items: Vec<(u64, u64)>,
    /// The end of the last item, kept next to the chunk's handle so that searching among the
    /// chunks reads the chunks' handles only, not one cold item per chunk visited.
    last_end: u64,
}

impl Chunk {
    fn new(items: Vec<(u64, u64)>) -> Self {
        let last_end = items.last().expect("chunks are not empty").1;
        Chunk { items, last_end }
    }

    /// Re-reads the end of the last item after a change.
    #[inline]
    fn sync(&mut self) {
        if let Some(&(_, e)) = self.items.last() {
            self.last_end = e;
        }
    }
}

/// Where one stream of reservations (one die's, on its channel) last went: the search for the
/// stream's next reservation starts there. Under a deep backlog each die's reservations land at
/// the end of its own backlog, which moves forward steadily but may lie thousands of
/// reservations before the channel's last one; starting from the cursor finds the place in a
/// few steps where a binary search over every chunk touches a dozen cold ones. A cursor is
/// only a hint: a search from a stale one (after chunks split or emptied) takes longer but
/// finds the same place.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Cursor {
    /// The chunk, counted from the first one the timeline ever had.
    chunk: usize,
    /// The interval's index in its chunk.
    index: usize,
}

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
    #[inline]
    pub fn last_end(&self) -> Option<u64> {
        self.chunks.back().map(|c| c.last_end)
    }

    #[cfg(test)]
    pub fn intervals(&self) -> Vec<(u64, u64)> {
        for c in &self.chunks {
            assert!(!c.items.is_empty(), "an empty chunk");
            assert_eq!(c.last_end, c.items.last().unwrap().1, "a stale chunk end");
        }
        self.chunks.iter().flat_map(|c| &c.items).copied().collect()
    }

    /// Reserves `len` ns at the earliest start >= `earliest` that fits; returns the start.
    /// Reservations that ended by `horizon` (the driver's present) are forgotten first. The
    /// search starts from `cursor`, which is left where this reservation went.
    pub fn reserve(&mut self, earliest: u64, len: u64, horizon: u64, cursor: &mut Cursor) -> u64 {
        self.prune(horizon);
        if len > 0 {
            // The new interval ends no earlier than this.
            self.min_end = self.min_end.min(earliest + len);
        }
        // Most reservations start after everything reserved so far: append them directly.
        if self.last_end().is_none_or(|e| e <= earliest) {
            if len > 0 {
                self.append(earliest, earliest + len);
            }
            let last = self.chunks.len().saturating_sub(1);
            *cursor = Cursor {
                chunk: self.pruned_chunks + last,
                index: self.chunks.get(last).map_or(0, |c| c.items.len() - 1),
            };
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
        *cursor = Cursor {
            chunk: self.pruned_chunks + at.chunk,
            index: at.index,
        };
        if len > 0 {
            self.place(at, start, len);
        }
        start
    }

    /// [`Timeline::place`] at the end, the common case, without the general bookkeeping.
    fn append(&mut self, start: u64, end: u64) {
        if let Some(chunk) = self.chunks.back_mut() {
            let last = chunk.items.last_mut().expect("chunks are not empty");
            if last.1 == start {
                last.1 = end;
                chunk.last_end = end;
                return;
            }
        }
        self.len += 1;
        match self.chunks.back_mut() {
            Some(chunk) if chunk.items.len() < CHUNK_MAX => {
                chunk.items.push((start, end));
                chunk.last_end = end;
            }
            _ => {
                let mut items = self.new_items();
                items.push((start, end));
                self.chunks.push_back(Chunk::new(items));
            }
        }
        if self.len > INTERVALS_MAX {
            self.merge_first_two();
        }
    }

    fn get(&self, at: Pos) -> Option<(u64, u64)> {
        self.chunks.get(at.chunk)?.items.get(at.index).copied()
    }

    fn next(&self, at: Pos) -> Pos {
        if at.index + 1 < self.chunks[at.chunk].items.len() {
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
    /// from `cursor`, first among the chunks, then within the chunk. The answer does not
    /// depend on the cursor.
    fn first_ending_after(&self, t: u64, cursor: Cursor) -> Pos {
        let n = self.chunks.len();
        let guess = cursor.chunk.saturating_sub(self.pruned_chunks);
        // A chunk has ended by `t` when its last interval has: true for a prefix of the chunks.
        let chunk = partition_from(n, guess, |i| self.chunks[i].last_end <= t);
        match self.chunks.get(chunk) {
            Some(c) => {
                let items = &c.items;
                let ended = |i: usize| items[i].1 <= t;
                // The cursor's index only helps in the chunk it was taken in. There the answer
                // is nearly always a few intervals after it (the die's last reservation, then
                // those of other dies that end before this one's start): a short scan finds it
                // with fewer mispredicted branches than a search.
                let index = if chunk == guess {
                    let from = cursor.index.min(items.len() - 1);
                    let mut i = from;
                    if ended(i) {
                        while i < items.len() && i < from + SCAN_MAX && ended(i) {
                            i += 1;
                        }
                    } else {
                        while i > 0 && i + SCAN_MAX > from && !ended(i - 1) {
                            i -= 1;
                        }
                    }
                    let boundary = (i == 0 || ended(i - 1)) && (i == items.len() || !ended(i));
                    if boundary {
                        i
                    } else {
                        partition_from(items.len(), i, ended)
                    }
                } else {
                    partition_from(items.len(), items.len() / 2, ended)
                };
                Pos { chunk, index }
            }
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
                index: self.chunks[chunk].items.len() - 1,
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
                self.set_end(p, next_end);
                self.remove(n);
            }
            (Some(p), None) => self.set_end(p, end),
            (None, Some(n)) => self.chunks[n.chunk].items[n.index].0 = start,
            (None, None) => {
                self.insert(at, (start, end));
                if self.len > INTERVALS_MAX {
                    self.merge_first_two();
                }
            }
        }
    }

    fn set_end(&mut self, at: Pos, end: u64) {
        let chunk = &mut self.chunks[at.chunk];
        chunk.items[at.index].1 = end;
        chunk.sync();
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
            let mut items = self.new_items();
            items.push(interval);
            self.chunks.push_back(Chunk::new(items));
            return;
        }
        let chunk = &mut self.chunks[at.chunk];
        chunk.items.insert(at.index, interval);
        chunk.sync();
        if chunk.items.len() > CHUNK_MAX {
            // Split just after the new interval (within bounds that keep chunks at least a
            // quarter full): a die's next reservations usually follow its last one, and then
            // go at the end of the lower chunk instead of shifting the rest of a full one.
            let split = (at.index + 1).clamp(CHUNK_MAX / 4, CHUNK_MAX - CHUNK_MAX / 4);
            let mut upper = self.new_items();
            let chunk = &mut self.chunks[at.chunk];
            upper.extend(chunk.items.drain(split..));
            chunk.sync();
            self.chunks.insert(at.chunk + 1, Chunk::new(upper));
        }
    }

    fn new_items(&mut self) -> Vec<(u64, u64)> {
        self.spare
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(CHUNK_MAX + 1))
    }

    fn recycle(&mut self, chunk: Chunk) {
        // A few spares suffice: chunks are emptied about as fast as they are filled.
        if self.spare.len() < 8 {
            let mut items = chunk.items;
            items.clear();
            self.spare.push(items);
        }
    }

    fn remove(&mut self, at: Pos) {
        self.len -= 1;
        let chunk = &mut self.chunks[at.chunk];
        chunk.items.remove(at.index);
        if chunk.items.is_empty() {
            let chunk = self.chunks.remove(at.chunk).expect("exists");
            self.recycle(chunk);
        } else {
            chunk.sync();
        }
    }

    /// Past the bound the two earliest reservations merge: their gap counts as busy.
    fn merge_first_two(&mut self) {
        let first = Pos { chunk: 0, index: 0 };
        let (s0, _) = self.get(first).expect("over the bound");
        self.remove(first);
        self.chunks[0].items[0].0 = s0;
    }

    /// Forgets the reservations that ended by `now`.
    pub fn prune(&mut self, now: u64) {
        if now < self.min_end {
            return;
        }
        while let Some(chunk) = self.chunks.front_mut() {
            let items = &mut chunk.items;
            if items[0].1 > now {
                self.min_end = items[0].1;
                return;
            }
            let ended = items.partition_point(|&(_, e)| e <= now);
            self.len -= ended;
            if ended == items.len() {
                let chunk = self.chunks.pop_front().expect("exists");
                self.pruned_chunks += 1;
                self.recycle(chunk);
            } else {
                items.drain(..ended);
                self.min_end = items[0].1;
                return;
            }
        }
        self.min_end = u64::MAX;
    }
}

/// The first `i` in `0..n` for which `ended(i)` is false, given that it is true for a prefix
/// (`n` if it is true for all): a binary search that starts at `guess` and gallops outwards,
/// doubling its step, to bracket the answer first. Its cost grows with the logarithm of the
/// distance from `guess` to the answer, not of `n`, and near answers touch nearby memory.
fn partition_from(n: usize, guess: usize, ended: impl Fn(usize) -> bool) -> usize {
    if n == 0 {
        return 0;
    }
    let guess = guess.min(n - 1);
    let mut step = 1;
    // The answer is in `lo..=hi`.
    let (mut lo, mut hi);
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
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if ended(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
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
    fn partition_from_finds_the_boundary_from_any_guess() {
        for n in 0..40 {
            for answer in 0..=n {
                for guess in 0..n + 3 {
                    assert_eq!(
                        partition_from(n, guess, |i| i < answer),
                        answer,
                        "n {n} answer {answer} guess {guess}"
                    );
                }
            }
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
                // A few land in the past, which no driver asks for but the timeline allows.
                let earliest = (horizon + rng.below(50_000)).saturating_sub(500);
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
