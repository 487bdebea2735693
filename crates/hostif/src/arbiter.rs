//! The controller's arbitration: which submission queues one fetch round takes commands from.
//! Pure bookkeeping over the queues' pending counts, so that it can be reasoned about (and
//! tested) apart from time.

use crate::params::{Arbitration, Priority};

/// The classes that share the weighted round robin, in the order a cycle serves them.
const WEIGHTED: [Priority; 3] = [Priority::High, Priority::Medium, Priority::Low];

/// Arbitration state that lasts from round to round: whose turn it is.
pub(crate) struct Arbiter {
    arbitration: Arbitration,
    /// Commands one queue may give in one round (`queue_fetch_size`).
    burst: u32,
    /// Every queue, for round robin.
    all: Vec<u32>,
    /// The queues of each class (indexed by `Priority as usize`), in queue order.
    class_queues: [Vec<u32>; 4],
    /// Where the next turn starts in `all` (round robin).
    next: usize,
    /// Where the next turn starts in each class's list.
    class_next: [usize; 4],
    /// The weighted class being served (index into [`WEIGHTED`]) and each class's commands
    /// left in this cycle.
    class: usize,
    credit: [u32; 3],
    weights: [u32; 3],
    /// Commands taken from each queue in the current round, and which queues those are.
    taken: Vec<u32>,
    touched: Vec<u32>,
}

impl Arbiter {
    /// An arbiter over queues of the given classes.
    pub(crate) fn new(arbitration: Arbitration, burst: u32, priorities: &[Priority]) -> Arbiter {
        let mut class_queues: [Vec<u32>; 4] = Default::default();
        for (q, p) in priorities.iter().enumerate() {
            class_queues[*p as usize].push(q as u32);
        }
        let weights = match arbitration {
            Arbitration::RoundRobin => [1, 1, 1],
            Arbitration::WeightedRoundRobin { high, medium, low } => [high, medium, low],
        };
        Arbiter {
            arbitration,
            burst,
            all: (0..priorities.len() as u32).collect(),
            class_queues,
            next: 0,
            class_next: [0; 4],
            class: 0,
            credit: weights,
            weights,
            taken: vec![0; priorities.len()],
            touched: Vec::new(),
        }
    }

    /// One round: appends `(queue, commands)` to `picks` in the order the controller fetches
    /// them, at most `budget` commands in all, at most the burst from one queue, never more
    /// than a queue's `pending` commands.
    pub(crate) fn round(&mut self, budget: u32, pending: &[u32], picks: &mut Vec<(u32, u32)>) {
        let mut budget = budget;
        match self.arbitration {
            Arbitration::RoundRobin => {
                self.next = self.serve_list(None, &mut budget, pending, picks);
            }
            Arbitration::WeightedRoundRobin { .. } => {
                let urgent = Priority::Urgent as usize;
                self.class_next[urgent] =
                    self.serve_list(Some(urgent), &mut budget, pending, picks);
                self.weighted(&mut budget, pending, picks);
            }
        }
        for q in self.touched.drain(..) {
            self.taken[q as usize] = 0;
        }
    }

    /// How many more commands queue `q` can give in this round.
    fn available(&self, q: u32, pending: &[u32]) -> u32 {
        let taken = self.taken[q as usize];
        pending[q as usize].min(self.burst).saturating_sub(taken)
    }

    /// Takes up to `limit` commands from `q`, returning how many.
    fn take(&mut self, q: u32, limit: u32, pending: &[u32], picks: &mut Vec<(u32, u32)>) -> u32 {
        let k = self.available(q, pending).min(limit);
        if k > 0 {
            if self.taken[q as usize] == 0 {
                self.touched.push(q);
            }
            self.taken[q as usize] += k;
            picks.push((q, k));
        }
        k
    }

    /// One pass over a list of queues (every queue, or one class's) from its turn, each
    /// giving what it can; returns where the next pass starts (after the last queue served).
    fn serve_list(
        &mut self,
        class: Option<usize>,
        budget: &mut u32,
        pending: &[u32],
        picks: &mut Vec<(u32, u32)>,
    ) -> usize {
        let (len, start) = match class {
            None => (self.all.len(), self.next),
            Some(c) => (self.class_queues[c].len(), self.class_next[c]),
        };
        let mut next = start;
        for i in 0..len {
            if *budget == 0 {
                break;
            }
            let at = (start + i) % len;
            let q = match class {
                None => self.all[at],
                Some(c) => self.class_queues[c][at],
            };
            let k = self.take(q, *budget, pending, picks);
            if k > 0 {
                *budget -= k;
                next = (at + 1) % len;
            }
        }
        next
    }

    /// The weighted round robin over the high, medium and low classes: the current class gives
    /// commands until its credit for the cycle is spent or it has nothing to give, then the
    /// next class; when no class that has commands has credit left, a new cycle starts with
    /// every credit restored, from the high class.
    fn weighted(&mut self, budget: &mut u32, pending: &[u32], picks: &mut Vec<(u32, u32)>) {
        while *budget > 0 {
            let ready: [bool; 3] =
                std::array::from_fn(|i| self.class_has_work(WEIGHTED[i] as usize, pending));
            if !ready.iter().any(|&r| r) {
                return;
            }
            if (0..WEIGHTED.len()).all(|i| !ready[i] || self.credit[i] == 0) {
                self.credit = self.weights;
                self.class = 0;
            }
            let i = self.class;
            if !ready[i] || self.credit[i] == 0 {
                self.class = (i + 1) % WEIGHTED.len();
                continue;
            }
            let c = WEIGHTED[i] as usize;
            let list = &self.class_queues[c];
            let len = list.len();
            let start = self.class_next[c];
            let found = (0..len)
                .map(|j| (start + j) % len)
                .find(|&at| self.available(list[at], pending) > 0)
                .expect("a ready class has a queue with commands to give");
            let q = list[found];
            let k = self.take(q, (*budget).min(self.credit[i]), pending, picks);
            *budget -= k;
            self.credit[i] -= k;
            self.class_next[c] = (found + 1) % len;
        }
    }

    /// Whether a class has a queue with commands it can still give in this round.
    fn class_has_work(&self, class: usize, pending: &[u32]) -> bool {
        self.class_queues[class]
            .iter()
            .any(|&q| self.available(q, pending) > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The queues one round picks, one entry per command.
    fn commands(picks: &[(u32, u32)]) -> Vec<u32> {
        picks
            .iter()
            .flat_map(|&(q, k)| std::iter::repeat_n(q, k as usize))
            .collect()
    }

    #[test]
    fn round_robin_takes_each_queue_in_turn_up_to_the_burst() {
        let mut a = Arbiter::new(Arbitration::RoundRobin, 2, &[Priority::Medium; 3]);
        let mut picks = Vec::new();
        a.round(5, &[5, 1, 5], &mut picks);
        assert_eq!(commands(&picks), [0, 0, 1, 2, 2]);
        picks.clear();
        // The next round starts after queue 2, the last served.
        a.round(3, &[3, 0, 3], &mut picks);
        assert_eq!(commands(&picks), [0, 0, 2]);
    }

    #[test]
    fn a_round_takes_no_more_than_the_burst_from_one_queue() {
        let mut a = Arbiter::new(Arbitration::RoundRobin, 4, &[Priority::Medium]);
        let mut picks = Vec::new();
        a.round(100, &[10], &mut picks);
        assert_eq!(commands(&picks), [0; 4]);
    }

    #[test]
    fn weighted_round_robin_serves_classes_by_weight_and_urgent_first() {
        let wrr = Arbitration::WeightedRoundRobin {
            high: 3,
            medium: 1,
            low: 1,
        };
        let classes = [Priority::High, Priority::Medium, Priority::Urgent];
        let mut a = Arbiter::new(wrr, 1, &classes);
        let mut order = Vec::new();
        let mut picks = Vec::new();
        // One command a round, every queue always backlogged; the urgent queue runs dry after
        // two rounds.
        for round in 0..10 {
            picks.clear();
            let urgent = if round < 2 { 5 } else { 0 };
            a.round(1, &[5, 5, urgent], &mut picks);
            order.extend(commands(&picks));
        }
        assert_eq!(order, [2, 2, 0, 0, 0, 1, 0, 0, 0, 1]);
    }
}
