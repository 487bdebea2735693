//! Random start positions: uniform, Zipf and hot/cold samplers over the span's slots, and the
//! permutation that scatters Zipf's popular slots over the span.
//!
//! A slot is a position `align` bytes apart from the previous one, counted from the start of
//! the span; slot `i` starts at `span_start + i * align`. Every sampler here costs O(1) per draw
//! and allocates nothing, because the generator must produce millions of records per second.

use super::spec::AddressDist;
use storsim_core::Prng;

/// Draws a slot in `[0, slots)` from one of the address distributions.
pub(crate) enum Positions {
    Uniform {
        slots: u64,
    },
    /// Slot `order(next)`, then the next; after the last, a new order.
    Permutation {
        order: Permutation,
        slots: u64,
        next: u64,
    },
    Zipf {
        zipf: Zipf,
        scatter: Permutation,
    },
    /// Slots `[0, hot_slots)` are hot; a draw below `hot_below` (out of 2^64) picks one of them.
    HotCold {
        hot_below: u64,
        hot_slots: u64,
        cold_slots: u64,
    },
}

/// 2^64 as a float, to turn a probability into a threshold for a raw 64-bit draw.
const TWO_POW_64: f64 = 18_446_744_073_709_551_616.0;

impl Positions {
    /// `slots` is at least 1. `scatter_key` seeds the Zipf permutation, so that different seeds
    /// put the popular slots in different places.
    pub(crate) fn new(dist: AddressDist, slots: u64, scatter_key: &mut Prng) -> Positions {
        match dist {
            AddressDist::Uniform => Positions::Uniform { slots },
            AddressDist::Permutation => Positions::Permutation {
                order: Permutation::new(slots, scatter_key),
                slots,
                next: 0,
            },
            AddressDist::Zipf { theta } => Positions::Zipf {
                zipf: Zipf::new(slots, theta),
                scatter: Permutation::new(slots, scatter_key),
            },
            AddressDist::HotCold {
                hot_span_fraction,
                hot_access_fraction,
            } => {
                if slots < 2 {
                    // One slot cannot be split into a hot and a cold part.
                    return Positions::Uniform { slots };
                }
                // Both regions keep at least one slot, so that the requested access fraction
                // is honoured even on tiny spans.
                let hot_slots =
                    ((slots as f64 * hot_span_fraction).round() as u64).clamp(1, slots - 1);
                Positions::HotCold {
                    hot_below: (hot_access_fraction * TWO_POW_64) as u64,
                    hot_slots,
                    cold_slots: slots - hot_slots,
                }
            }
        }
    }

    #[inline]
    pub(crate) fn slot(&mut self, rng: &mut Prng) -> u64 {
        match self {
            Positions::Uniform { slots } => rng.below(*slots),
            Positions::Permutation { order, slots, next } => {
                if *next == *slots {
                    // A pass is over: the next visits the slots in a new order.
                    *order = Permutation::new(*slots, rng);
                    *next = 0;
                }
                *next += 1;
                order.apply(*next - 1)
            }
            Positions::Zipf { zipf, scatter } => scatter.apply(zipf.sample(rng) - 1),
            Positions::HotCold {
                hot_below,
                hot_slots,
                cold_slots,
            } => {
                if rng.next_u64() < *hot_below {
                    rng.below(*hot_slots)
                } else {
                    *hot_slots + rng.below(*cold_slots)
                }
            }
        }
    }
}

/// Zipf-distributed ranks in `[1, n]` with `P(k) ∝ k^-exponent`, by rejection-inversion
/// (W. Hörmann and G. Derflinger, "Rejection-inversion to generate variates from monotone
/// discrete distributions", ACM TOMACS 6(3), 1996), following the formulation of Apache Commons
/// RNG's `RejectionInversionZipfSampler`.
///
/// The method inverts the integral of the continuous hat function `h(x) = x^-exponent` and
/// accepts the rounded result almost always, so a draw costs one logarithm and one
/// exponential on average, independent of `n`; there is no table, unlike inversion of the
/// cumulative distribution, which would need O(n) memory for spans of millions of slots.
pub(crate) struct Zipf {
    n: f64,
    n_max: u64,
    exponent: f64,
    one_minus_exponent: f64,
    /// `1 / (1 - exponent)`, so that the hot path multiplies instead of dividing; infinite when
    /// the exponent is exactly 1, where the hot path does not use it.
    inverse_one_minus_exponent: f64,
    h_integral_x1: f64,
    h_integral_n: f64,
    s: f64,
    /// `h_integral(k + 0.5) - h(k)` for ranks `k = 1..=accept_floor.len()`: the popular ranks
    /// are drawn most often and are the ones that need the full acceptance test, so caching it
    /// saves two logarithms and two exponentials on most draws of a skewed distribution.
    accept_floor: Vec<f64>,
}

/// How many of the most popular ranks have their acceptance bound cached.
const CACHED_RANKS: u64 = 1024;

impl Zipf {
    /// `n >= 1` and `exponent > 0` (checked by the spec).
    pub(crate) fn new(n: u64, exponent: f64) -> Zipf {
        let mut zipf = Zipf {
            n: n as f64,
            n_max: n,
            exponent,
            one_minus_exponent: 1.0 - exponent,
            inverse_one_minus_exponent: 1.0 / (1.0 - exponent),
            h_integral_x1: 0.0,
            h_integral_n: 0.0,
            s: 0.0,
            accept_floor: Vec::new(),
        };
        zipf.h_integral_x1 = zipf.h_integral(1.5) - 1.0;
        zipf.h_integral_n = zipf.h_integral(zipf.n + 0.5);
        zipf.s = 2.0 - zipf.h_integral_inverse(zipf.h_integral(2.5) - zipf.h(2.0));
        zipf.accept_floor = (1..=n.min(CACHED_RANKS))
            .map(|k| zipf.accept_floor_uncached(k as f64))
            .collect();
        zipf
    }

    /// A rank in `[1, n]`.
    #[inline]
    pub(crate) fn sample(&self, rng: &mut Prng) -> u64 {
        loop {
            // `u` is uniform in (h_integral_x1, h_integral_n].
            let u = self.h_integral_n + rng.next_f64() * (self.h_integral_x1 - self.h_integral_n);
            let x = self.h_integral_inverse(u);
            // The float-to-integer conversion saturates, and the clamp keeps rounding noise at
            // either end inside the valid ranks.
            let k = ((x + 0.5) as u64).clamp(1, self.n_max);
            let kf = k as f64;
            if kf - x <= self.s {
                return k;
            }
            let floor = match self.accept_floor.get(k as usize - 1) {
                Some(cached) => *cached,
                None => self.accept_floor_uncached(kf),
            };
            if u >= floor {
                return k;
            }
        }
    }

    fn accept_floor_uncached(&self, k: f64) -> f64 {
        self.h_integral(k + 0.5) - self.h(k)
    }

    /// `H(x) = (x^(1-e) - 1) / (1 - e)`, written so that it stays accurate near `e = 1`
    /// (where it tends to `ln x`).
    fn h_integral(&self, x: f64) -> f64 {
        let log_x = x.ln();
        helper2(self.one_minus_exponent * log_x) * log_x
    }

    fn h(&self, x: f64) -> f64 {
        (-self.exponent * x.ln()).exp()
    }

    /// The inverse of `h_integral`: `(1 + t)^(1 / (1 - e))` with `t = x (1 - e)`, which is
    /// `exp(helper1(t) * x)`.
    #[inline]
    fn h_integral_inverse(&self, x: f64) -> f64 {
        // Rounding can push t a little below -1, where the logarithm is undefined.
        let t = (x * self.one_minus_exponent).max(-1.0);
        if t.abs() > 1e-8 {
            // helper1(t) * x = ln(1 + t) / (1 - e); the same value without a division.
            (t.ln_1p() * self.inverse_one_minus_exponent).exp()
        } else {
            (helper1(t) * x).exp()
        }
    }
}

/// `ln(1 + x) / x`, continuous at 0.
#[inline]
fn helper1(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }
}

/// `(e^x - 1) / x`, continuous at 0.
#[inline]
fn helper2(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x))
    }
}

/// A seeded bijection of `[0, n)`: a three-round Feistel network on the smallest power of two
/// that holds `n`, with cycle walking (values that land at `n` or above are permuted again until
/// they fall inside). The domain is less than twice `n`, so a value needs fewer than two
/// passes through the network on average. Used to scatter Zipf ranks: rank 1, 2, 3, ... become unrelated slots
/// spread over the whole span, as hot data would be on a real volume, instead of the first
/// slots of the span.
pub(crate) struct Permutation {
    n: u64,
    /// The network splits a value into a high part of `high_bits` and a low part of `low_bits`.
    high_bits: u32,
    low_bits: u32,
    keys: [u64; FEISTEL_ROUNDS],
}

/// Three rounds make a Feistel network a pseudo-random permutation (Luby and Rackoff), which is
/// more than scattering needs; each round costs one multiplication.
const FEISTEL_ROUNDS: usize = 3;

impl Permutation {
    pub(crate) fn new(n: u64, key_source: &mut Prng) -> Permutation {
        let bits = if n <= 1 {
            0
        } else {
            64 - (n - 1).leading_zeros()
        };
        let low_bits = bits / 2;
        Permutation {
            n,
            high_bits: bits - low_bits,
            low_bits,
            keys: std::array::from_fn(|_| key_source.next_u64()),
        }
    }

    /// The image of `x`, which must be below `n`.
    #[inline]
    pub(crate) fn apply(&self, mut x: u64) -> u64 {
        loop {
            x = self.feistel(x);
            if x < self.n {
                return x;
            }
        }
    }

    #[inline]
    fn feistel(&self, x: u64) -> u64 {
        let (mut left_bits, mut right_bits) = (self.high_bits, self.low_bits);
        let mut left = x >> right_bits;
        let mut right = x & mask(right_bits);
        for key in self.keys {
            // (L, R) -> (R, L ^ F(R)) is invertible whatever F is, so the whole network is a
            // bijection. The halves swap widths every round; the widths are tracked so that the
            // result is reassembled with the split the last round left.
            let mixed = left ^ (round_function(right, key) & mask(left_bits));
            left = right;
            right = mixed;
            std::mem::swap(&mut left_bits, &mut right_bits);
        }
        (left << right_bits) | right
    }
}

#[inline]
fn mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// A keyed hash of a half (at most 32 bits). Bits 32 and up of a product with an odd constant
/// depend on every bit of a 32-bit input, so the upper half of the product is a cheap mix.
#[inline]
fn round_function(half: u64, key: u64) -> u64 {
    ((half ^ key).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ key) >> 32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permutation_is_a_bijection_for_awkward_sizes() {
        let mut key = Prng::new(5);
        for n in [1u64, 2, 3, 5, 7, 8, 100, 1000, 1025, 4097] {
            let p = Permutation::new(n, &mut key);
            let mut hit = vec![false; n as usize];
            for x in 0..n {
                let y = p.apply(x);
                assert!(y < n, "n={n}: {x} -> {y}");
                assert!(!hit[y as usize], "n={n}: {y} hit twice");
                hit[y as usize] = true;
            }
        }
    }

    #[test]
    fn permutation_scatters_the_first_ranks() {
        let mut key = Prng::new(11);
        let n = 1 << 20;
        let p = Permutation::new(n, &mut key);
        let first: Vec<u64> = (0..16).map(|x| p.apply(x)).collect();
        let in_first_percent = first.iter().filter(|&&y| y < n / 100).count();
        assert!(in_first_percent <= 2, "ranks 0..16 map to {first:?}");
    }

    #[test]
    fn zipf_stays_in_range_and_handles_exponent_one() {
        let mut rng = Prng::new(3);
        for (n, theta) in [
            (1u64, 1.2),
            (2, 0.5),
            (10, 1.0),
            (1000, 3.0),
            (1 << 40, 0.99),
        ] {
            let z = Zipf::new(n, theta);
            for _ in 0..10_000 {
                let k = z.sample(&mut rng);
                assert!((1..=n).contains(&k), "n={n} theta={theta}: rank {k}");
            }
        }
    }
}
