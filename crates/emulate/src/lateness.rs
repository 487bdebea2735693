//! How far each reply left after the instant the model gave it.

use storsim_core::Op;
use storsim_stats::{Distribution, Histogram};

/// Lateness of replies (actual − intended departure), and the replies counted late.
///
/// A reply is late when it left more than the threshold after its instant, or when the model
/// only produced its completion after that instant had passed (the model's own computation, or
/// the block store's work, overran the deadline): no sleeping or spinning could have made such
/// a reply punctual, and hiding it would flatter the emulator.
#[derive(Clone)]
pub struct Lateness {
    threshold_ns: u64,
    histogram: Histogram,
    late: u64,
    overran: u64,
    by_op: [u64; 4],
}

/// A snapshot of [`Lateness`] as plain data.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LatenessSummary {
    pub replies: u64,
    pub threshold_ns: u64,
    /// Replies that left more than `threshold_ns` late, or whose completion was computed after
    /// its instant.
    pub late: u64,
    /// Of those, the replies whose completion was computed after its instant.
    pub overran: u64,
    pub lateness_ns: Distribution,
    /// Replies by operation, in the order of `Op::ALL`.
    pub replies_by_op: [u64; 4],
}

impl Lateness {
    pub fn new(threshold_ns: u64) -> Self {
        Lateness {
            threshold_ns,
            histogram: Histogram::new(),
            late: 0,
            overran: 0,
            by_op: [0; 4],
        }
    }

    pub fn record(&mut self, op: Op, lateness_ns: u64, overran: bool) {
        self.histogram.record(lateness_ns);
        self.by_op[op.index()] += 1;
        if overran {
            self.overran += 1;
        }
        if overran || lateness_ns > self.threshold_ns {
            self.late += 1;
        }
    }

    pub fn summary(&self) -> LatenessSummary {
        LatenessSummary {
            replies: self.histogram.count(),
            threshold_ns: self.threshold_ns,
            late: self.late,
            overran: self.overran,
            lateness_ns: Distribution::of(&self.histogram),
            replies_by_op: self.by_op,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn late_counts_threshold_and_overrun_separately() {
        let mut l = Lateness::new(20_000);
        l.record(Op::Read, 5_000, false);
        l.record(Op::Read, 20_000, false);
        l.record(Op::Write, 20_001, false);
        l.record(Op::Write, 0, true);
        let s = l.summary();
        assert_eq!(s.replies, 4);
        assert_eq!(s.late, 2, "one past the threshold, one overran");
        assert_eq!(s.overran, 1);
        assert_eq!(s.replies_by_op, [2, 2, 0, 0]);
        assert_eq!(s.lateness_ns.max, 20_001);
    }
}
