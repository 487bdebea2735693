//! The distribution of an array's erase counts, kept up to date erase by erase, so that reading
//! it (the counters, read at the end of every window of a run's time series) costs the same
//! for a thousand blocks as for a million.

/// Buckets of [`EraseStats::power_of_two_histogram`]: 0, 1, 2-3, 4-7, ... up to 2^31-(2^32-1).
pub const POWER_OF_TWO_BUCKETS: usize = 33;

/// The bucket of `count` in [`EraseStats::power_of_two_histogram`].
pub fn power_of_two_bucket(count: u32) -> usize {
    (32 - count.leading_zeros()) as usize
}

/// Erase counts' spread over every block of an array.
#[derive(Clone, Debug)]
pub struct EraseStats {
    blocks: u64,
    total: u64,
    sum_of_squares: u128,
    /// `blocks_with[c]`: how many blocks have been erased exactly `c` times, for `c` up to the
    /// highest count; it finds the lowest count when its last block is erased again.
    blocks_with: Vec<u64>,
    min: u32,
    histogram: [u64; POWER_OF_TWO_BUCKETS],
}

impl EraseStats {
    /// `blocks` blocks, none erased.
    pub fn new(blocks: u64) -> Self {
        let mut histogram = [0; POWER_OF_TWO_BUCKETS];
        histogram[0] = blocks;
        EraseStats {
            blocks,
            total: 0,
            sum_of_squares: 0,
            blocks_with: vec![blocks],
            min: 0,
            histogram,
        }
    }

    /// A block erased `before` times was erased once more.
    #[inline]
    pub fn erased(&mut self, before: u32) {
        let b = before as usize;
        assert!(
            self.blocks_with.get(b).is_some_and(|&n| n > 0),
            "no block had {before} erases"
        );
        self.blocks_with[b] -= 1;
        if b + 1 == self.blocks_with.len() {
            self.blocks_with.push(0);
        }
        self.blocks_with[b + 1] += 1;
        while self.blocks_with[self.min as usize] == 0 {
            self.min += 1;
        }
        self.total += 1;
        // (c + 1)^2 - c^2 = 2c + 1.
        self.sum_of_squares += 2 * u128::from(before) + 1;
        self.histogram[power_of_two_bucket(before)] -= 1;
        self.histogram[power_of_two_bucket(before + 1)] += 1;
    }

    /// Erases of every block together.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The fewest erases of any block (0 for an array without blocks).
    pub fn min(&self) -> u32 {
        if self.blocks == 0 {
            0
        } else {
            self.min
        }
    }

    /// The most erases of any block.
    pub fn max(&self) -> u32 {
        (self.blocks_with.len() - 1) as u32
    }

    /// The mean erases per block.
    pub fn mean(&self) -> f64 {
        self.total as f64 / self.blocks.max(1) as f64
    }

    /// The population standard deviation of the blocks' erase counts, from exact integer sums.
    pub fn stddev(&self) -> f64 {
        let n = u128::from(self.blocks.max(1));
        let total = u128::from(self.total);
        // n² · variance = n · Σc² - (Σc)², exact in integers and never negative.
        let scaled = n * self.sum_of_squares - total * total;
        (scaled as f64).sqrt() / n as f64
    }

    /// How many blocks have 0 erases, 1, 2-3, 4-7, ..., bucket `i > 0` holding
    /// `[2^(i-1), 2^i - 1]`.
    pub fn power_of_two_histogram(&self) -> &[u64; POWER_OF_TWO_BUCKETS] {
        &self.histogram
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use storsim_core::Prng;

    #[test]
    fn kept_figures_match_the_counts_computed_afresh() {
        let seed = 8;
        let mut rng = Prng::new(seed);
        let blocks = 300;
        let mut counts = vec![0u32; blocks];
        let mut stats = EraseStats::new(blocks as u64);
        for step in 0..20_000 {
            // Skewed wear: low blocks are erased far more often.
            let b = (rng.below(blocks as u64) * rng.below(blocks as u64) / blocks as u64) as usize;
            stats.erased(counts[b]);
            counts[b] += 1;
            if step % 997 != 0 {
                continue;
            }
            let n = blocks as f64;
            let mean = counts.iter().map(|&c| f64::from(c)).sum::<f64>() / n;
            let var = counts
                .iter()
                .map(|&c| (f64::from(c) - mean).powi(2))
                .sum::<f64>()
                / n;
            assert_eq!(
                stats.total(),
                counts.iter().map(|&c| u64::from(c)).sum::<u64>()
            );
            assert_eq!(stats.min(), *counts.iter().min().unwrap(), "seed {seed}");
            assert_eq!(stats.max(), *counts.iter().max().unwrap(), "seed {seed}");
            assert_eq!(stats.mean(), mean);
            assert!((stats.stddev() - var.sqrt()).abs() <= 1e-9 * var.sqrt().max(1.0));
            let mut histogram = [0u64; POWER_OF_TWO_BUCKETS];
            for &c in &counts {
                histogram[power_of_two_bucket(c)] += 1;
            }
            assert_eq!(stats.power_of_two_histogram(), &histogram);
        }
    }

    #[test]
    fn an_array_without_blocks_reads_as_zeros() {
        let stats = EraseStats::new(0);
        assert_eq!((stats.min(), stats.max(), stats.total()), (0, 0, 0));
        assert_eq!(stats.mean(), 0.0);
        assert_eq!(stats.stddev(), 0.0);
    }
}
