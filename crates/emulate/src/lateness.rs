//! How far each reply left after the instant the model gave it.

use storsim_core::Op;
use storsim_stats::{cdf, CdfPoint, Distribution, Histogram};

/// The unit in which Δt/t is kept in its histogram: a millionth of a percent, so that a
/// microsecond late on a ten-second response still counts as more than nothing, and a second
/// late on a nanosecond's response still fits.
const RELATIVE_UNITS_PER_PERCENT: f64 = 1e6;

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
    /// Δt/t (lateness over the model's response time) of each reply with a response time, in
    /// [`RELATIVE_UNITS_PER_PERCENT`].
    relative: Histogram,
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
    /// Lateness's CDF (each point's `latency_ns` is the lateness at its fraction): Wu's
    /// Fig 4.6.
    pub cdf: Vec<CdfPoint>,
    /// Δt/t in percent: each reply's lateness over the response time the model gave it
    /// (intended completion − arrival at the model), the form of Wu's Fig 4.7. Replies the
    /// model answered in no time have no Δt/t and are left out.
    pub relative_percent: PercentDistribution,
    /// Δt/t's CDF, at the fractions of `cdf`.
    pub relative_cdf: Vec<PercentPoint>,
    /// Replies by operation, in the order of `Op::ALL`.
    pub replies_by_op: [u64; 4],
}

/// A distribution of percentages (all 0 when there were none), to within 0.4 %.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PercentDistribution {
    /// How many values it holds.
    pub count: u64,
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

/// One point of a CDF of percentages: `fraction` of the values are at most `percent`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PercentPoint {
    pub percent: f64,
    pub fraction: f64,
}

impl Lateness {
    pub fn new(threshold_ns: u64) -> Self {
        Lateness {
            threshold_ns,
            histogram: Histogram::new(),
            relative: Histogram::new(),
            late: 0,
            overran: 0,
            by_op: [0; 4],
        }
    }

    /// One reply of `op` that left `lateness_ns` after its instant, for a request the model
    /// took `response_ns` over (intended completion − arrival at the model).
    pub fn record(&mut self, op: Op, lateness_ns: u64, response_ns: u64, overran: bool) {
        self.histogram.record(lateness_ns);
        if response_ns > 0 {
            let units = u128::from(lateness_ns) * RELATIVE_UNITS_PER_PERCENT as u128 * 100
                / u128::from(response_ns);
            self.relative
                .record(u64::try_from(units).unwrap_or(u64::MAX));
        }
        self.by_op[op.index()] += 1;
        if overran {
            self.overran += 1;
        }
        if overran || lateness_ns > self.threshold_ns {
            self.late += 1;
        }
    }

    pub fn summary(&self) -> LatenessSummary {
        let percent = |units: u64| units as f64 / RELATIVE_UNITS_PER_PERCENT;
        let d = Distribution::of(&self.relative);
        LatenessSummary {
            cdf: cdf(&self.histogram),
            relative_percent: PercentDistribution {
                count: self.relative.count(),
                mean: d.mean / RELATIVE_UNITS_PER_PERCENT,
                p50: percent(d.p50),
                p90: percent(d.p90),
                p99: percent(d.p99),
                max: percent(d.max),
            },
            relative_cdf: cdf(&self.relative)
                .into_iter()
                .map(|p| PercentPoint {
                    percent: percent(p.latency_ns),
                    fraction: p.fraction,
                })
                .collect(),
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
        l.record(Op::Read, 5_000, 100_000, false);
        l.record(Op::Read, 20_000, 100_000, false);
        l.record(Op::Write, 20_001, 100_000, false);
        l.record(Op::Write, 0, 100_000, true);
        let s = l.summary();
        assert_eq!(s.replies, 4);
        assert_eq!(s.late, 2, "one past the threshold, one overran");
        assert_eq!(s.overran, 1);
        assert_eq!(s.replies_by_op, [2, 2, 0, 0]);
        assert_eq!(s.lateness_ns.max, 20_001);
    }

    #[test]
    fn relative_lateness_is_lateness_over_the_models_response_in_percent() {
        let mut l = Lateness::new(20_000);
        // 1 µs late on 1 ms is 0.1 %, 5 µs on 100 µs is 5 %, 0 on 1 s is 0 %; a reply the
        // model answered in no time has no Δt/t.
        l.record(Op::Read, 1_000, 1_000_000, false);
        l.record(Op::Read, 5_000, 100_000, false);
        l.record(Op::Write, 0, 1_000_000_000, false);
        l.record(Op::Flush, 3_000, 0, false);
        let s = l.summary();
        assert_eq!(s.relative_percent.count, 3);
        assert!((s.relative_percent.max - 5.0).abs() < 1e-9);
        assert!((s.relative_percent.p50 - 0.1).abs() < 0.1 * 0.004);
        assert!((s.relative_percent.mean - 5.1 / 3.0).abs() < 1e-9);
        let fractions: Vec<f64> = s.relative_cdf.iter().map(|p| p.fraction).collect();
        assert_eq!(
            fractions,
            s.cdf.iter().map(|p| p.fraction).collect::<Vec<_>>()
        );
        assert_eq!(s.relative_cdf.first().unwrap().percent, 0.0);
        assert!((s.relative_cdf.last().unwrap().percent - 5.0).abs() < 1e-9);
        assert_eq!(s.cdf.last().unwrap().latency_ns, 5_000);
        assert!(s.cdf.windows(2).all(|w| w[0].latency_ns <= w[1].latency_ns));
    }

    #[test]
    fn no_replies_no_cdf() {
        let s = Lateness::new(1).summary();
        assert!(s.cdf.is_empty() && s.relative_cdf.is_empty());
        assert_eq!(s.relative_percent, PercentDistribution::default());
    }
}
