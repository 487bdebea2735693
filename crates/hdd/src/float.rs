//! `floor` and `ceil` that give exactly what `f64::floor` and `f64::ceil` give, without a
//! library call. The default x86-64 target has no rounding instruction (SSE4.1), so the
//! standard functions call into libm; the mechanics round a turn count or an angle for
//! every repositioning and SPTF does so for every queued request at every decision.

/// 2^52: every `f64` of at least this magnitude is a whole number.
const WHOLE: f64 = 4_503_599_627_370_496.0;

/// The largest whole number not above `x`, bit for bit as [`f64::floor`] (the sign of a
/// zero result included).
#[inline]
pub fn floor(x: f64) -> f64 {
    if x.abs() < WHOLE {
        // Below 2^52 the conversion to an integer and back is exact; it truncates toward
        // zero, one too high for a negative fraction. The sign of x is the sign of its
        // floor, which also makes the floor of -0.0 -0.0.
        let t = x as i64 as f64;
        let f = if t > x { t - 1.0 } else { t };
        f.copysign(x)
    } else {
        x.floor()
    }
}

/// The smallest whole number not below `x`, bit for bit as [`f64::ceil`].
#[inline]
pub fn ceil(x: f64) -> f64 {
    -floor(-x)
}

#[cfg(test)]
mod tests {
    use super::*;
    use storsim_core::Prng;

    fn same(a: f64, b: f64) -> bool {
        a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
    }

    #[test]
    fn floor_and_ceil_match_the_standard_ones_bit_for_bit() {
        let edges = [
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.0,
            -1.0,
            1.0 - f64::EPSILON,
            -1.0 + f64::EPSILON / 2.0,
            f64::MIN_POSITIVE,
            -f64::MIN_POSITIVE,
            WHOLE - 0.5,
            -(WHOLE - 0.5),
            WHOLE,
            -WHOLE,
            WHOLE * 2.0 + 2.0,
            1e300,
            -1e300,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ];
        for x in edges {
            assert!(same(floor(x), x.floor()), "floor {x:e}");
            assert!(same(ceil(x), x.ceil()), "ceil {x:e}");
        }
        let seed = 0xf100_0c11_u64;
        println!("seed {seed:#x}");
        let mut r = Prng::new(seed);
        for i in 0..1_000_000u64 {
            // Any bit pattern half the time; otherwise magnitudes where the rounding is
            // interesting (fractions of a turn, turn counts, nanosecond instants).
            let x = if i % 2 == 0 {
                f64::from_bits(r.next_u64())
            } else {
                let scale = [1.0, 1e3, 1e9, 1e15, 4e15][(r.next_u64() % 5) as usize];
                (r.next_u64() as f64 / u64::MAX as f64 - 0.5) * 2.0 * scale
            };
            assert!(
                same(floor(x), x.floor()),
                "floor {x:e} ({:#x})",
                x.to_bits()
            );
            assert!(same(ceil(x), x.ceil()), "ceil {x:e} ({:#x})", x.to_bits());
        }
    }
}
