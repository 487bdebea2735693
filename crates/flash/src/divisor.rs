//! Division by a divisor fixed at construction, with a multiplication instead of a `div`
//! instruction: the scheduler splits every physical page address into die, channel and page
//! within its block, the NAND array and the FTLs find every page's block, and hardware division
//! would be a good part of their time.

/// A `u32` divisor prepared for fast division (Lemire, Kaser and Kurz, "Faster Remainder by
/// Direct Computation", 2019): with `m = ceil(2^64 / d)`, `n / d` is the high 64 bits of `m × n`
/// and `n % d` the high 64 bits of `(m × n mod 2^64) × d`, exactly, for every `u32` `n`.
#[derive(Clone, Copy, Debug)]
pub struct Divisor {
    d: u32,
    /// `ceil(2^64 / d)`; 0 stands for 2^64 (`d` = 1), which does not fit.
    m: u64,
}

impl Divisor {
    /// Prepares division by `d`, which must not be 0.
    pub fn new(d: u32) -> Self {
        assert!(d > 0, "division by zero");
        Divisor {
            d,
            m: (u64::MAX / d as u64).wrapping_add(1),
        }
    }

    /// `n / d`.
    #[inline]
    pub fn quotient(self, n: u32) -> u32 {
        if self.m == 0 {
            return n;
        }
        ((self.m as u128 * n as u128) >> 64) as u32
    }

    /// `n % d`.
    #[inline]
    pub fn remainder(self, n: u32) -> u32 {
        let low = self.m.wrapping_mul(n as u64);
        ((low as u128 * self.d as u128) >> 64) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use storsim_core::Prng;

    #[test]
    fn matches_hardware_division() {
        let mut rng = Prng::new(7);
        let mut divisors: Vec<u32> = (1..=4200).collect();
        divisors.extend([u32::MAX, u32::MAX - 1, 1 << 31, (1 << 31) + 1, 3 << 30]);
        divisors.extend((0..2000).map(|_| rng.below(u32::MAX as u64) as u32 + 1));
        for &d in &divisors {
            let f = Divisor::new(d);
            let check = |n: u32| {
                assert_eq!(f.quotient(n), n / d, "{n} / {d}");
                assert_eq!(f.remainder(n), n % d, "{n} % {d}");
            };
            for n in [0, 1, d - 1, d, d.saturating_add(1), u32::MAX, u32::MAX - 1] {
                check(n);
            }
            for _ in 0..200 {
                check(rng.below(1 << 32) as u32);
            }
        }
    }
}
