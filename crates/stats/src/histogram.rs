//! A log-linear histogram of u64 nanosecond values. Values below 512 are exact; above, each
//! power-of-two range is split into 256 equal buckets, so any recorded value is known to within
//! 1/256 (0.4 %) of itself. Recording is a few integer instructions and never allocates.
//!
//! The bucketing is generic over the number of buckets per power of two (`2^SUB_BITS`), so that
//! the time series' per-window histograms (`series.rs`) share it at a coarser precision.

const SUB_BITS: u32 = 8;
/// Enough buckets for every u64: groups 1..=56 of 256 buckets each after the exact range.
const BUCKETS: usize = buckets(SUB_BITS);

/// How many buckets cover every u64 with `2^sub_bits` buckets per power of two: the exact
/// range below `2^(sub_bits + 1)`, then one group for each higher power of two.
pub(crate) const fn buckets(sub_bits: u32) -> usize {
    (64 - sub_bits as usize) * (1 << sub_bits) + (1 << sub_bits)
}

#[derive(Clone)]
pub struct Histogram {
    counts: Box<[u64]>,
    total: u64,
    sum: u128,
    min: u64,
    max: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

/// The bucket of `v` with `2^SUB_BITS` buckets per power of two; values below
/// `2^(SUB_BITS + 1)` get a bucket each.
#[inline]
pub(crate) fn bucket_of<const SUB_BITS: u32>(v: u64) -> usize {
    let sub = 1usize << SUB_BITS;
    if v < 2 * sub as u64 {
        return v as usize;
    }
    let e = 63 - v.leading_zeros(); // >= SUB_BITS + 1
    let shift = e - SUB_BITS;
    // (v >> shift) is in [sub, 2*sub); group `shift` starts at (shift + 1) * sub.
    shift as usize * sub + (v >> shift) as usize
}

/// The smallest and largest value that land in bucket `i` of [`bucket_of`].
pub(crate) fn bucket_bounds<const SUB_BITS: u32>(i: usize) -> (u64, u64) {
    let sub = 1usize << SUB_BITS;
    if i < 2 * sub {
        return (i as u64, i as u64);
    }
    let shift = (i / sub - 1) as u32;
    let s = (i - shift as usize * sub) as u64;
    let low = s << shift;
    let high = low + ((1u64 << shift) - 1);
    (low, high)
}

/// The value a quantile falling in bucket `i` reports: the bucket's middle, within half a
/// bucket of every value in it.
pub(crate) fn bucket_middle<const SUB_BITS: u32>(i: usize) -> u64 {
    let (low, high) = bucket_bounds::<SUB_BITS>(i);
    low + (high - low) / 2
}

impl Histogram {
    pub fn new() -> Self {
        Histogram {
            counts: vec![0; BUCKETS].into_boxed_slice(),
            total: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }

    #[inline]
    pub fn record(&mut self, v: u64) {
        self.counts[bucket_of::<SUB_BITS>(v)] += 1;
        self.total += 1;
        self.sum += v as u128;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    pub fn count(&self) -> u64 {
        self.total
    }

    /// Exact sum of the recorded values.
    pub fn sum(&self) -> u128 {
        self.sum
    }

    /// Exact mean, 0 when empty.
    pub fn mean(&self) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            self.sum as f64 / self.total as f64
        }
    }

    /// Exact minimum and maximum; 0 when empty.
    pub fn min(&self) -> u64 {
        if self.total == 0 {
            0
        } else {
            self.min
        }
    }
    pub fn max(&self) -> u64 {
        self.max
    }

    /// The value at quantile `q` in [0, 1] by nearest rank: the smallest recorded value with at
    /// least `q` of the samples at or below it. Reported as the middle of its bucket, clamped
    /// to the exact minimum and maximum, so it is within 0.4 % of a value that was recorded.
    pub fn quantile(&self, q: f64) -> u64 {
        assert!((0.0..=1.0).contains(&q), "quantile {q} outside [0, 1]");
        if self.total == 0 {
            return 0;
        }
        let rank = ((q * self.total as f64).ceil() as u64).clamp(1, self.total);
        // The extremes are known exactly.
        if rank == 1 {
            return self.min;
        }
        if rank == self.total {
            return self.max;
        }
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return bucket_middle::<SUB_BITS>(i).clamp(self.min, self.max);
            }
        }
        self.max
    }

    /// Quantiles for several fractions in one pass; `qs` must be ascending.
    pub fn quantiles(&self, qs: &[f64]) -> Vec<u64> {
        qs.iter().map(|&q| self.quantile(q)).collect()
    }

    /// Adds another histogram's samples to this one.
    pub fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a += b;
        }
        self.total += other.total;
        self.sum += other.sum;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use storsim_core::Prng;

    #[test]
    fn buckets_are_contiguous_and_cover_u64() {
        let mut expected_low = 0u64;
        for i in 0..BUCKETS {
            let (low, high) = bucket_bounds::<SUB_BITS>(i);
            assert_eq!(low, expected_low, "bucket {i}");
            assert!(high >= low);
            assert_eq!(bucket_of::<SUB_BITS>(low), i);
            assert_eq!(bucket_of::<SUB_BITS>(high), i);
            if high == u64::MAX {
                assert_eq!(i, BUCKETS - 1);
                return;
            }
            expected_low = high + 1;
        }
        panic!("buckets end before u64::MAX");
    }

    #[test]
    fn relative_error_is_bounded() {
        let seed = 11;
        let mut rng = Prng::new(seed);
        for _ in 0..100_000 {
            let v = rng.next_u64() >> rng.below(64);
            let (low, high) = bucket_bounds::<SUB_BITS>(bucket_of::<SUB_BITS>(v));
            assert!(low <= v && v <= high);
            assert!(
                (high - low) as f64 <= (low as f64 / 256.0).max(0.0),
                "seed {seed}: {v}"
            );
        }
    }

    #[test]
    fn quantiles_by_nearest_rank() {
        let mut h = Histogram::new();
        for v in 1..=100 {
            h.record(v);
        }
        assert_eq!(h.quantile(0.5), 50);
        assert_eq!(h.quantile(0.99), 99);
        assert_eq!(h.quantile(1.0), 100);
        assert_eq!(h.quantile(0.0), 1);
        assert_eq!(h.mean(), 50.5);
    }

    #[test]
    fn constant_values_are_reported_exactly() {
        let mut h = Histogram::new();
        for _ in 0..10 {
            h.record(143_520);
        }
        assert_eq!(h.quantile(0.5), 143_520);
        assert_eq!(h.quantile(0.999), 143_520);
    }

    #[test]
    fn large_value_quantiles_are_within_bucket_precision() {
        let mut h = Histogram::new();
        let mut rng = Prng::new(3);
        let mut values: Vec<u64> = (0..10_000).map(|_| 1_000 + rng.below(10_000_000)).collect();
        for &v in &values {
            h.record(v);
        }
        values.sort_unstable();
        for q in [0.5, 0.9, 0.99, 0.999] {
            let exact = values[((q * values.len() as f64).ceil() as usize) - 1];
            let approx = h.quantile(q);
            let err = (approx as f64 - exact as f64).abs() / exact as f64;
            assert!(err < 0.004, "q {q}: {approx} vs {exact}");
        }
    }

    #[test]
    fn merge_adds_samples() {
        let mut a = Histogram::new();
        let mut b = Histogram::new();
        a.record(10);
        b.record(1_000_000);
        a.merge(&b);
        assert_eq!(a.count(), 2);
        assert_eq!(a.max(), 1_000_000);
        assert_eq!(a.min(), 10);
    }
}
