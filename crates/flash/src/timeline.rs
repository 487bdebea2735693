//! A channel's busy intervals, with gap filling: FlashSim's channel timeline.
//!
//! A channel is shared by its dies, and a short command may go into an idle gap between
//! reservations made earlier (FlashSim's Fig. 4). Under a deep backlog (a large write buffer
//! under sustained random writes schedules garbage collection seconds ahead) a channel holds
//! hundreds of thousands of future reservations, and new ones land between them, wherever
//! their die's own backlog ends.
//!
//! The structure rests on one fact about how the scheduler uses it: a die runs its operations
//! in order, so each die's reservations come in time order, each starting no earlier than the
//! die's previous one ended (checked on every reservation). The intervals are therefore kept
//! as one append-only list per die (a *stream*), and the channel's busy set is their union.
//! Placing a reservation of one die means finding the first instant at which none of the other
//! streams is busy for its length; since that die's requests only move forward in time, a
//! cursor per pair of streams moves forward too, and each check costs a comparison or two.
//! Nothing is ever inserted in the middle of a list or shifted, which a single sorted list (or
//! sorted chunks, as an earlier version of this module had) pays for on every reservation that
//! lands between others.

/// The most reservations a channel keeps (16 MiB), shared equally by its streams; beyond its
/// share a stream's two earliest merge (their gap counts as busy), which can only delay later
/// operations, never make them early. It is large on purpose: an earlier bound of 512 merged
/// away the gaps near the present under a deep backlog and made such runs report less than
/// half their throughput.
pub(crate) const INTERVALS_MAX: usize = 1 << 20;

/// The timeline forgets past reservations once every this many reservations. Searches ignore
/// the past anyway, so forgetting is only about memory and need not happen on every call.
const PRUNE_EVERY: u32 = 256;

/// Busy intervals `[start, end)` in ns of one stream: disjoint, sorted, never touching (a
/// reservation that starts where the stream's last one ends extends it).
///
/// They live in a ring: interval number `k` (counted from the stream's first reservation, so
/// numbers never change) sits in `slots[k % slots.len()]`, the length a power of two. Forgetting
/// the front only moves `head`, and new intervals reuse the slots it freed, so nothing is ever
/// copied except when the ring grows.
#[derive(Clone, Debug, Default)]
struct Stream {
    slots: Vec<(u64, u64)>,
    /// Intervals `head..tail` are live; those before `head` are forgotten (or merged away by
    /// the bound) and their slots may hold newer intervals.
    head: usize,
    tail: usize,
}

impl Stream {
    /// Interval number `k`, which must be live.
    #[inline]
    fn get(&self, k: usize) -> (u64, u64) {
        debug_assert!(self.head <= k && k < self.tail);
        self.slots[k & (self.slots.len() - 1)]
    }

    #[inline]
    fn get_mut(&mut self, k: usize) -> &mut (u64, u64) {
        let mask = self.slots.len() - 1;
        &mut self.slots[k & mask]
    }

    fn is_empty(&self) -> bool {
        self.head == self.tail
    }

    fn last_end(&self) -> Option<u64> {
        (!self.is_empty()).then(|| self.get(self.tail - 1).1)
    }

    #[cfg(test)]
    fn live(&self) -> Vec<(u64, u64)> {
        (self.head..self.tail).map(|k| self.get(k)).collect()
    }

    /// Forgets the intervals before number `k`, all of them no longer of use to any search,
    /// but never the last one, whose end a reservation of this stream may still extend and the
    /// timeline reports.
    fn forget_before(&mut self, k: usize) {
        self.head = self.head.max(k.min(self.tail.saturating_sub(1)));
    }

    /// Forgets the intervals that ended by `now`; returns the end of the first one left.
    fn prune(&mut self, now: u64) -> Option<u64> {
        while self.head < self.tail && self.get(self.head).1 <= now {
            self.head += 1;
        }
        (!self.is_empty()).then(|| self.get(self.head).1)
    }

    /// Doubles the ring, each live interval moving to its number's slot in the new one.
    fn grow(&mut self) {
        let capacity = (2 * self.slots.len()).max(16);
        let mut slots = vec![(0, 0); capacity];
        for k in self.head..self.tail {
            slots[k & (capacity - 1)] = self.get(k);
        }
        self.slots = slots;
    }

    /// Records `[start, end)` after everything the stream holds; at `bound` intervals, after
    /// pruning up to `horizon`, the two earliest merge first.
    fn append(&mut self, start: u64, end: u64, bound: usize, horizon: u64) {
        if !self.is_empty() {
            let last = self.get_mut(self.tail - 1);
            if last.1 == start {
                last.1 = end;
                return;
            }
        }
        if self.tail - self.head >= bound {
            self.prune(horizon);
        }
        if self.tail - self.head >= bound {
            // The second takes the first's start, and the first leaves as if forgotten.
            // Cursors on it move to the merged interval.
            let first = self.get(self.head).0;
            self.head += 1;
            let head = self.head;
            self.get_mut(head).0 = first;
        }
        if self.tail - self.head == self.slots.len() {
            self.grow();
        }
        let tail = self.tail;
        *self.get_mut(tail) = (start, end);
        self.tail += 1;
    }
}

/// One channel's reservations, kept per die of the channel (its streams).
#[derive(Clone, Debug)]
pub(crate) struct Timeline {
    streams: Vec<Stream>,
    /// `cursors[d * n + e]` (for `n` streams): the index in stream `e` of the first interval
    /// that may end after the start of stream `d`'s latest reservation. Intervals
    /// before it ended by then, and stream `d` never asks about an earlier instant again.
    cursors: Vec<usize>,
    /// Each stream's share of [`INTERVALS_MAX`].
    bound: usize,
    /// No interval ends before this instant: pruning up to an earlier present has nothing to
    /// do.
    min_end: u64,
    /// Reservations since the last pruning.
    since_prune: u32,
}

impl Timeline {
    /// A timeline for a channel shared by `streams` dies.
    pub fn new(streams: usize) -> Self {
        assert!(streams > 0, "a channel has at least one die");
        Timeline {
            streams: vec![Stream::default(); streams],
            cursors: vec![0; streams * streams],
            bound: (INTERVALS_MAX / streams).max(2),
            min_end: u64::MAX,
            since_prune: 0,
        }
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.streams.iter().map(|s| s.live().len()).sum()
    }

    /// When the last reservation ends, if there is one.
    pub fn last_end(&self) -> Option<u64> {
        self.streams.iter().filter_map(Stream::last_end).max()
    }

    /// The channel's busy intervals, in order, touching ones joined: what the timeline means,
    /// whatever the streams.
    #[cfg(test)]
    pub fn intervals(&self) -> Vec<(u64, u64)> {
        let mut all: Vec<(u64, u64)> = self.streams.iter().flat_map(|s| s.live()).collect();
        all.sort_unstable();
        let mut joined: Vec<(u64, u64)> = Vec::new();
        for (s, e) in all {
            match joined.last_mut() {
                Some(last) if last.1 == s => last.1 = e,
                _ => joined.push((s, e)),
            }
        }
        joined
    }

    /// Reserves `len` ns for stream `stream` at the earliest start at or after both `earliest`
    /// and `horizon` (the driver's present: nothing starts in the past) at which no stream is
    /// busy; returns the start. Reservations that ended by `horizon` are forgotten now and
    /// then.
    ///
    /// A stream's reservations must come in time order: each starts no earlier than the end
    /// of the stream's previous one (a die runs one operation at a time). This holds for the
    /// scheduler by construction and is checked, in release builds too, since the search
    /// relies on it.
    pub fn reserve(&mut self, stream: usize, earliest: u64, len: u64, horizon: u64) -> u64 {
        let mut start = self.begin(stream, earliest, horizon);
        if self.streams.len() > 1 {
            // Until a full round over the other streams moves nothing.
            while self.round(stream, &mut start, len, false, 0) {}
        }
        self.append(stream, start, len, horizon);
        start
    }

    /// As [`Timeline::reserve`], but minding only the streams from `first` on: a priority
    /// read's transfers go before the queued operations' (streams below `first`), whose dies
    /// the read delays anyway, and after other priority reads'. Later reservations of every
    /// stream still avoid this one.
    pub fn reserve_among(
        &mut self,
        stream: usize,
        first: usize,
        earliest: u64,
        len: u64,
        horizon: u64,
    ) -> u64 {
        let mut start = self.begin(stream, earliest, horizon);
        while self.round(stream, &mut start, len, false, first) {}
        self.append(stream, start, len, horizon);
        start
    }

    /// Reserves `len` ns (more than none) for stream `stream` from exactly `at` (at or after
    /// `horizon`) if no stream is busy then, and says whether it did. When it did not, any
    /// [`Timeline::reserve`] from `at` on, of any length, gives what it would have given
    /// without the try: the try only moved cursors past intervals that ended by `at`.
    ///
    /// This is how two operations that would follow each other on the channel are placed
    /// with one search instead of two when the channel is free for both: the second one's
    /// search would start where the first ends, so both starting where asked is exactly
    /// "the whole span is free".
    pub fn reserve_exactly(&mut self, stream: usize, at: u64, len: u64, horizon: u64) -> bool {
        assert!(
            len > 0 && at >= horizon,
            "an exact reservation is in the present and takes time"
        );
        let mut start = self.begin(stream, at, horizon);
        if self.streams.len() > 1 && self.round(stream, &mut start, len, true, 0) {
            return false;
        }
        self.append(stream, start, len, horizon);
        true
    }

    /// What every reservation starts with: forgetting the past now and then, and checking
    /// that the stream's reservations come in time order. Returns the first start to try.
    #[inline(always)]
    fn begin(&mut self, stream: usize, earliest: u64, horizon: u64) -> u64 {
        self.since_prune += 1;
        if self.since_prune >= PRUNE_EVERY {
            self.since_prune = 0;
            self.prune(horizon);
        }
        let start = earliest.max(horizon);
        if let Some(own) = self.streams[stream].last_end() {
            assert!(
                start >= own,
                "stream {stream} asked for {start} ns, before its previous reservation's end \
                 {own} ns"
            );
        }
        start
    }

    /// One round of stream `stream`'s search: moves `start` past every other stream's interval
    /// that overlaps `[start, start + len)`, and each cursor past the intervals that ended by
    /// then; returns whether `start` moved. No free start for this length comes before the end
    /// of an interval that overlaps the span asked for, so the search never needs what it moves
    /// past; a shorter one might, so with `stop_at_overlap` the round ends at the first
    /// overlap, and no cursor passes anything that ended after the `start` it was given.
    /// Streams before `first` are not minded.
    #[inline(always)]
    fn round(
        &mut self,
        stream: usize,
        start: &mut u64,
        len: u64,
        stop_at_overlap: bool,
        first: usize,
    ) -> bool {
        let n = self.streams.len();
        let cursors = &mut self.cursors[stream * n..(stream + 1) * n];
        let mut moved = false;
        for (other, (s, cursor)) in self.streams.iter().zip(cursors.iter_mut()).enumerate() {
            if other == stream || other < first {
                continue;
            }
            // A stream's last interval may have grown since the cursor passed it (a
            // reservation that touches it extends it), so the search never starts after it;
            // nor before the stream's first live interval, since the slots of forgotten ones
            // are reused.
            let mut i = (*cursor).min(s.tail.saturating_sub(1)).max(s.head);
            while i < s.tail {
                let (b, e) = s.get(i);
                if e > *start {
                    // A zero-length reservation (a command that takes no time) cannot be
                    // issued while the channel is busy either, nor at the instant a transfer
                    // begins.
                    if b < *start + len || (len == 0 && b <= *start) {
                        *start = e;
                        moved = true;
                    }
                    break;
                }
                i += 1;
            }
            *cursor = i;
            if moved && stop_at_overlap {
                break;
            }
        }
        moved
    }

    /// Records stream `stream`'s reservation `[start, start + len)` (nothing for none).
    #[inline(always)]
    fn append(&mut self, stream: usize, start: u64, len: u64, horizon: u64) {
        if len > 0 {
            let bound = self.bound;
            self.streams[stream].append(start, start + len, bound, horizon);
            self.min_end = self.min_end.min(start + len);
        }
    }

    /// Forgets the reservations that ended by `now`, and those every other stream's searches
    /// have passed for good.
    pub fn prune(&mut self, now: u64) {
        // Under a backlog the dies' searches run far ahead of the present: what they have all
        // passed goes without reading it, where the scan below would read memory written
        // long ago, one interval after another.
        let n = self.streams.len();
        if n > 1 {
            for (e, s) in self.streams.iter_mut().enumerate() {
                let passed = (0..n)
                    .filter(|&d| d != e)
                    .map(|d| self.cursors[d * n + e])
                    .min()
                    .expect("two streams or more");
                s.forget_before(passed);
            }
        }
        if now < self.min_end {
            return;
        }
        let mut min_end = u64::MAX;
        for s in &mut self.streams {
            if let Some(first) = s.prune(now) {
                min_end = min_end.min(first);
            }
        }
        self.min_end = min_end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use storsim_core::Prng;

    /// The timeline's definition, kept as simply as possible: one sorted list searched from
    /// the front, touching intervals joined.
    #[derive(Default)]
    struct Reference(Vec<(u64, u64)>);

    impl Reference {
        fn reserve(&mut self, earliest: u64, len: u64, horizon: u64) -> u64 {
            self.0.retain(|&(_, e)| e > horizon);
            let start = self.first_free(earliest, len, horizon);
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

        /// The start [`Reference::reserve`] would give, without reserving it.
        fn first_free(&self, earliest: u64, len: u64, horizon: u64) -> u64 {
            let mut start = earliest.max(horizon);
            for &(s, e) in self.0.iter().filter(|&&(_, e)| e > horizon) {
                if e <= start {
                    continue;
                }
                if s >= start + len && !(len == 0 && s == start) {
                    break;
                }
                start = start.max(e);
            }
            start
        }
    }

    /// Busy time after `horizon`, touching intervals joined: what remains of the past may
    /// differ (the reference joins across streams before pruning) without changing any answer.
    fn after(intervals: &[(u64, u64)], horizon: u64) -> Vec<(u64, u64)> {
        let mut joined: Vec<(u64, u64)> = Vec::new();
        for &(s, e) in intervals.iter().filter(|&&(_, e)| e > horizon) {
            let s = s.max(horizon);
            match joined.last_mut() {
                Some(last) if last.1 == s => last.1 = e,
                _ => joined.push((s, e)),
            }
        }
        joined
    }

    #[test]
    fn gaps_between_other_streams_are_filled() {
        let mut t = Timeline::new(3);
        assert_eq!(t.reserve(0, 0, 10, 0), 0);
        assert_eq!(t.reserve(0, 30, 5, 0), 30);
        // Stream 1 fits between [0, 10) and [30, 35), from where it asks.
        assert_eq!(t.reserve(1, 5, 10, 0), 10);
        // Stream 2 needs 20: [20, 30) is too short after stream 1's [10, 20); it goes after 35.
        assert_eq!(t.reserve(2, 12, 11, 0), 35);
        // Touching reservations make one busy interval.
        assert_eq!(t.intervals(), [(0, 20), (30, 46)]);
        // A stream's own next reservation extends its last one when it touches it.
        assert_eq!(t.reserve(2, 46, 4, 0), 46);
        assert_eq!(t.streams[2].live(), [(35, 50)]);
        assert_eq!(t.len(), 4);
    }

    #[test]
    fn a_reservation_among_later_streams_ignores_the_earlier_ones() {
        // Streams 0 and 1 are two dies' queued work, 2 and 3 their priority reads.
        let mut t = Timeline::new(4);
        assert_eq!(t.reserve(0, 0, 100, 0), 0);
        assert_eq!(t.reserve(1, 100, 100, 0), 100);
        assert_eq!(t.reserve(3, 50, 20, 0), 200);
        // A priority read minds only streams 2 and 3: it goes at 10, over stream 0's slot,
        // and the next one of stream 2 waits for stream 3's [200, 220).
        assert_eq!(t.reserve_among(2, 2, 10, 10, 0), 10);
        assert_eq!(t.reserve_among(2, 2, 195, 10, 0), 220);
        // Every later reservation minds it.
        assert_eq!(t.reserve(1, 200, 10, 0), 230);
    }

    #[test]
    #[should_panic(expected = "before its previous reservation's end")]
    fn a_stream_cannot_go_back_in_time() {
        let mut t = Timeline::new(2);
        t.reserve(0, 100, 10, 0);
        t.reserve(0, 50, 10, 0);
    }

    #[test]
    fn matches_the_definition_with_one_stream_per_die() {
        // As the scheduler uses it: each die is a stream whose reservations move forward from
        // its own backlog, interleaved with the other streams' on one channel, while the
        // present moves on and prunes.
        for (seed, dies) in [(0u64, 1usize), (1, 2), (2, 4), (3, 4), (4, 8), (5, 3)] {
            eprintln!("timeline seed {seed}, {dies} streams");
            let mut rng = Prng::new(100 + seed);
            let mut t = Timeline::new(dies);
            let mut r = Reference::default();
            let mut horizon = 0u64;
            let mut backlog = vec![0u64; dies];
            // Where each die last searched: no die asks about an earlier instant again, so
            // the timeline may forget what ended before all of them.
            let mut latest = vec![0u64; dies];
            let remembered =
                |latest: &[u64], horizon: u64| horizon.max(*latest.iter().min().expect("a die"));
            for step in 0..20_000 {
                horizon += rng.below(40);
                let die = rng.below(dies as u64) as usize;
                // Some reservations are zero-length probes (a command of no duration), which
                // must not land inside a busy interval either.
                let earliest = backlog[die].max(horizon) + rng.below(100);
                let len = if rng.below(50) == 0 {
                    0
                } else {
                    1 + rng.below(20)
                };
                let a = t.reserve(die, earliest, len, horizon);
                let b = r.reserve(earliest, len, horizon);
                assert_eq!(a, b, "seed {seed} step {step}");
                latest[die] = a;
                backlog[die] = a + len + rng.below(300);
                if step % 64 == 0 {
                    let floor = remembered(&latest, horizon);
                    assert!(
                        after(&t.intervals(), floor) == after(&r.0, floor),
                        "seed {seed} step {step}: the busy times differ"
                    );
                }
            }
            let floor = remembered(&latest, horizon);
            assert_eq!(after(&t.intervals(), floor), after(&r.0, floor));
            let forgotten: usize = t.streams.iter().map(|s| s.head).sum();
            assert!(forgotten > 100, "the test must forget ({forgotten})");
        }
    }

    #[test]
    fn an_exact_reservation_is_a_search_that_does_not_move() {
        // Half the reservations first try their earliest instant exactly for twice their
        // length, as the scheduler does for a read's data out and the program after it: the
        // try must succeed exactly when the definition's search for that span would not move,
        // and a failed try must leave the search for the shorter span that follows it its
        // answer.
        for (seed, dies) in [(10u64, 2usize), (11, 4), (12, 8)] {
            eprintln!("timeline seed {seed}, {dies} streams");
            let mut rng = Prng::new(200 + seed);
            let mut t = Timeline::new(dies);
            let mut r = Reference::default();
            let (mut horizon, mut backlog, mut latest) = (0u64, vec![0u64; dies], vec![0; dies]);
            let (mut taken, mut refused) = (0, 0);
            for step in 0..20_000 {
                horizon += rng.below(40);
                let die = rng.below(dies as u64) as usize;
                let earliest = backlog[die].max(horizon) + rng.below(60);
                let len = 1 + rng.below(30);
                let (start, len) = if rng.below(2) == 0 {
                    (t.reserve(die, earliest, len, horizon), len)
                } else if t.reserve_exactly(die, earliest, 2 * len, horizon) {
                    taken += 1;
                    (earliest, 2 * len)
                } else {
                    refused += 1;
                    let free = r.first_free(earliest, 2 * len, horizon);
                    assert_ne!(
                        free, earliest,
                        "seed {seed} step {step}: refused a free span"
                    );
                    (t.reserve(die, earliest, len, horizon), len)
                };
                assert_eq!(
                    start,
                    r.reserve(earliest, len, horizon),
                    "seed {seed} step {step}"
                );
                latest[die] = start;
                backlog[die] = start + len + rng.below(200);
            }
            assert!(
                taken > 1_000 && refused > 1_000,
                "{taken} taken, {refused} refused"
            );
            // What every die has passed may be forgotten, as in the test above.
            let floor = horizon.max(*latest.iter().min().expect("a die"));
            assert_eq!(after(&t.intervals(), floor), after(&r.0, floor));
        }
    }

    #[test]
    fn forgotten_slots_are_reused_and_cursors_survive_it() {
        // Enough reservations, and a present that moves past them, that the streams' rings
        // go round many times while the other stream's cursors point into them.
        let mut t = Timeline::new(2);
        let mut r = Reference::default();
        let mut next = [0u64; 2];
        let mut horizon = 0;
        let steps = 100_000u64;
        for i in 0..steps {
            let s = (i % 2) as usize;
            horizon = (i * 7).saturating_sub(500);
            let a = t.reserve(s, next[s], 3, horizon);
            assert_eq!(a, r.reserve(next[s], 3, horizon), "step {i}");
            next[s] = a + 3 + (i % 5);
        }
        for s in &t.streams {
            assert!(s.tail as u64 > steps / 4, "{} intervals", s.tail);
            assert!(s.slots.len() <= 1024, "a ring of {} slots", s.slots.len());
        }
        assert_eq!(after(&t.intervals(), horizon), after(&r.0, horizon));
    }

    #[test]
    fn a_backlog_is_forgotten_once_every_stream_has_passed_it() {
        // Two dies far ahead of a present that stays at 0: nothing has ended, but what both
        // have passed can go, and searches give the same answers without it.
        let mut t = Timeline::new(2);
        let mut r = Reference::default();
        let mut next = [0u64; 2];
        let mut latest = [0u64; 2];
        for i in 0..20_000u64 {
            let s = (i % 2) as usize;
            let a = t.reserve(s, next[s], 3, 0);
            assert_eq!(a, r.reserve(next[s], 3, 0), "step {i}");
            latest[s] = a;
            next[s] = a + 3 + (i % 7);
        }
        assert!(t.len() < 1_000, "{} intervals held", t.len());
        let floor = *latest.iter().min().unwrap();
        assert_eq!(after(&t.intervals(), floor), after(&r.0, floor));
        // The present never passed them, so the timeline still reports the last one.
        assert_eq!(t.last_end(), r.0.last().map(|&(_, e)| e));
    }

    #[test]
    fn the_bound_merges_a_streams_earliest_two() {
        let mut t = Timeline::new(1);
        for i in 0..(INTERVALS_MAX as u64 + 1) {
            t.reserve(0, 10 * i, 1, 0);
        }
        assert_eq!(t.len(), INTERVALS_MAX);
        assert_eq!(t.intervals()[..2], [(0, 11), (20, 21)]);
        // Once time has passed them all, pruning forgets them, and reservations prune now and
        // then.
        let last = t.last_end().unwrap();
        for i in 0..PRUNE_EVERY as u64 {
            t.reserve(0, last + 2 * i, 1, last);
        }
        assert_eq!(t.len(), PRUNE_EVERY as usize);
    }
}
