//! A bounded priority queue of events ordered by (time, sequence number). The sequence number
//! is assigned at insertion, so events due at the same instant come out in the order they were
//! scheduled: ties never depend on heap internals, which keeps runs deterministic.

use crate::time::SimTime;
use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::fmt;

struct Entry<T> {
    time: SimTime,
    seq: u64,
    payload: T,
}

impl<T> PartialEq for Entry<T> {
    fn eq(&self, other: &Self) -> bool {
        self.time == other.time && self.seq == other.seq
    }
}
impl<T> Eq for Entry<T> {}
impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Entry<T> {
    // BinaryHeap is a max-heap; reversing the comparison pops the earliest event first.
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .time
            .cmp(&self.time)
            .then_with(|| other.seq.cmp(&self.seq))
    }
}

/// Returned when pushing into a full queue; carries the rejected payload back.
#[derive(Debug, PartialEq, Eq)]
pub struct EventQueueFull<T>(pub T);

impl<T> fmt::Display for EventQueueFull<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("event queue is full")
    }
}

/// Events with a capacity fixed at construction.
pub struct EventQueue<T> {
    heap: BinaryHeap<Entry<T>>,
    next_seq: u64,
    capacity: usize,
}

impl<T> EventQueue<T> {
    pub fn with_capacity(capacity: usize) -> Self {
        assert!(
            capacity > 0,
            "an event queue needs room for at least one event"
        );
        EventQueue {
            heap: BinaryHeap::with_capacity(capacity),
            next_seq: 0,
            capacity,
        }
    }

    pub fn push(&mut self, time: SimTime, payload: T) -> Result<(), EventQueueFull<T>> {
        if self.heap.len() >= self.capacity {
            return Err(EventQueueFull(payload));
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Entry { time, seq, payload });
        Ok(())
    }

    /// The time of the earliest event.
    pub fn peek_time(&self) -> Option<SimTime> {
        self.heap.peek().map(|e| e.time)
    }

    /// Removes and returns the earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, T)> {
        // The only event needs no sifting. An open-loop run's queue of waiting requests holds
        // one at a time, and taking it this way stays inlined in the engine's loop, where
        // `BinaryHeap::pop`, sifting and all, was left as a call that cost about 2 % of
        // a simulation's time.
        let entry = if self.heap.len() == 1 {
            self.heap.drain().next()
        } else {
            self.heap.pop()
        };
        entry.map(|e| (e.time, e.payload))
    }

    /// Removes and returns the earliest event if it is due at or before `now`.
    pub fn pop_due(&mut self, now: SimTime) -> Option<(SimTime, T)> {
        if self.peek_time()? <= now {
            self.pop()
        } else {
            None
        }
    }

    /// Drops every pending event.
    pub fn clear(&mut self) {
        self.heap.clear();
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
    pub fn capacity(&self) -> usize {
        self.capacity
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Prng;

    #[test]
    fn equal_times_pop_in_insertion_order() {
        let mut q = EventQueue::with_capacity(8);
        q.push(SimTime(5), "b").unwrap();
        q.push(SimTime(1), "a").unwrap();
        q.push(SimTime(5), "c").unwrap();
        q.push(SimTime(5), "d").unwrap();
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).map(|(_, p)| p).collect();
        assert_eq!(order, ["a", "b", "c", "d"]);
    }

    #[test]
    fn is_bounded() {
        let mut q = EventQueue::with_capacity(2);
        q.push(SimTime(1), 1).unwrap();
        q.push(SimTime(2), 2).unwrap();
        assert_eq!(q.push(SimTime(3), 3), Err(EventQueueFull(3)));
        assert_eq!(q.len(), 2);
    }

    #[test]
    fn pop_due_respects_now() {
        let mut q = EventQueue::with_capacity(4);
        q.push(SimTime(10), 'x').unwrap();
        assert_eq!(q.pop_due(SimTime(9)), None);
        assert_eq!(q.pop_due(SimTime(10)), Some((SimTime(10), 'x')));
    }

    #[test]
    fn random_pushes_come_out_sorted_by_time_then_seq() {
        let seed = 0x5eed;
        let mut rng = Prng::new(seed);
        let mut q = EventQueue::with_capacity(1000);
        for i in 0..1000u32 {
            q.push(SimTime(rng.below(50)), i).unwrap();
        }
        let mut last = (SimTime(0), 0u32);
        let mut first = true;
        while let Some((t, i)) = q.pop() {
            if !first {
                assert!(
                    t > last.0 || (t == last.0 && i > last.1),
                    "seed {seed}: order broken"
                );
            }
            first = false;
            last = (t, i);
        }
    }
}
