//! Two-sided p-values of Student's t distribution, for the significance of a fitted slope.
//!
//! The IBM fit table reports p-values such as 5.21e-26 and 1.45e-15, so the tail probability
//! is computed directly, never as one minus a cumulative probability (which would round to
//! zero below about 1e-16): as a regularized incomplete beta function below 1e4 degrees of
//! freedom, and through Hill's normal expansion and the upper incomplete gamma function
//! above, where the beta function's continued fraction loses accuracy.

/// Relative accuracy at which the continued fraction stops.
const CF_EPSILON: f64 = 1e-15;

/// Stand-in for zero in the modified Lentz algorithm, which must never divide by zero.
const CF_TINY: f64 = 1e-300;

/// From this many degrees of freedom on, the t-distribution is mapped to the normal one by
/// Hill's expansion instead of the incomplete beta function. The continued fraction loses
/// about dof·1e-16 relative accuracy there (its terms nearly cancel when x = dof/(dof + t²) is
/// close to one), while the expansion's error is below 1e-12 relative from 1e4 on (checked
/// against 50-digit values across the representable tail).
const ASYMPTOTIC_DOF: f64 = 1e4;

/// Continued-fraction and series steps before giving up. The beta fraction needs roughly
/// √max(a, b) steps where it converges slowest, so this bound covers shape parameters up to
/// about 1e9 (the t-test uses it only below `ASYMPTOTIC_DOF`); beyond that the last, less
/// accurate, approximation is returned rather than looping for seconds.
const CF_MAX_STEPS: usize = 100_000;

/// ln Γ(x) for x > 0, by the Lanczos approximation (g = 7, nine coefficients), which is good
/// to about 1e-15 relative in Γ. Smaller arguments go through the reflection formula so that
/// the series is only evaluated where it is accurate.
///
/// Returns NaN for x ≤ 0 or NaN (the callers only need positive arguments), +∞ for +∞.
pub fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const COEFFICIENTS: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x.is_nan() || x <= 0.0 {
        return f64::NAN;
    }
    if x == f64::INFINITY {
        return f64::INFINITY;
    }
    if x < 0.5 {
        // Γ(x)Γ(1 − x) = π / sin(πx); sin(πx) > 0 on (0, 0.5).
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let z = x - 1.0;
    let mut sum = COEFFICIENTS[0];
    for (i, &c) in COEFFICIENTS.iter().enumerate().skip(1) {
        sum += c / (z + i as f64);
    }
    let t = z + G + 0.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (z + 0.5) * t.ln() - t + sum.ln()
}

/// The Stirling remainder δ(x) = ln Γ(x) − [(x − ½) ln x − x + ½ ln 2π] for x ≥ 10, where
/// seven terms of the asymptotic series are accurate to better than 1e-16.
fn stirling_remainder(x: f64) -> f64 {
    let inv = 1.0 / x;
    let inv2 = inv * inv;
    inv * (1.0 / 12.0
        - inv2
            * (1.0 / 360.0
                - inv2
                    * (1.0 / 1260.0
                        - inv2
                            * (1.0 / 1680.0
                                - inv2
                                    * (1.0 / 1188.0
                                        - inv2 * (691.0 / 360_360.0 - inv2 * (1.0 / 156.0)))))))
}

/// ln B(a, b) = ln Γ(a) + ln Γ(b) − ln Γ(a + b) for a, b > 0.
///
/// With a large shape parameter (a t-test with many degrees of freedom has a = dof/2) the
/// three log-gammas are huge and nearly cancel, losing all precision; there the difference
/// ln Γ(h) − ln Γ(h + l) is taken from Stirling's series in a form that never subtracts two
/// large numbers.
fn ln_beta(a: f64, b: f64) -> f64 {
    let (lo, hi) = if a < b { (a, b) } else { (b, a) };
    if hi < 10.0 {
        return ln_gamma(a) + ln_gamma(b) - ln_gamma(a + b);
    }
    let difference =
        -lo * hi.ln() - (hi + lo - 0.5) * (lo / hi).ln_1p() + lo + stirling_remainder(hi)
            - stirling_remainder(hi + lo);
    ln_gamma(lo) + difference
}

/// The continued fraction of I_x(a, b) (Numerical Recipes' `betacf`), evaluated by the
/// modified Lentz algorithm. It converges quickly for x < (a + 1)/(a + b + 2).
fn beta_continued_fraction(a: f64, b: f64, x: f64) -> f64 {
    let qab = a + b;
    let qap = a + 1.0;
    let qam = a - 1.0;
    let guard = |v: f64| if v.abs() < CF_TINY { CF_TINY } else { v };
    let mut c = 1.0;
    let mut d = 1.0 / guard(1.0 - qab * x / qap);
    let mut h = d;
    for m in 1..=CF_MAX_STEPS {
        let m = m as f64;
        let m2 = 2.0 * m;
        // Even step of the fraction. The coefficients are grouped as ratios of similar sizes
        // so that a shape parameter near the top of the f64 range cannot overflow them.
        let aa = (m / (qam + m2)) * ((b - m) / (a + m2)) * x;
        d = 1.0 / guard(1.0 + aa * d);
        c = guard(1.0 + aa / c);
        h *= d * c;
        // Odd step of the fraction.
        let aa = -((a + m) / (a + m2)) * ((qab + m) / (qap + m2)) * x;
        d = 1.0 / guard(1.0 + aa * d);
        c = guard(1.0 + aa / c);
        let delta = d * c;
        h *= delta;
        if (delta - 1.0).abs() < CF_EPSILON {
            break;
        }
    }
    h
}

/// I_x(a, b) given x, y = 1 − x and their logarithms, each computed by the caller without
/// cancellation: near x = 1, forming 1 − x here would lose exactly the digits a far-tail
/// p-value is made of.
fn regularized_beta_parts(a: f64, b: f64, x: f64, y: f64, ln_x: f64, ln_y: f64) -> f64 {
    // The logarithms decide the end points: x itself may have underflowed to zero while
    // ln x, and so the result, is still representable.
    if ln_x == f64::NEG_INFINITY {
        return 0.0;
    }
    if ln_y == f64::NEG_INFINITY {
        return 1.0;
    }
    if x < (a + 1.0) / (a + b + 2.0) {
        let front = (a * ln_x + b * ln_y - ln_beta(a, b)).exp();
        front * beta_continued_fraction(a, b, x) / a
    } else {
        // Symmetry I_x(a, b) = 1 − I_{1−x}(b, a): the fraction converges on the other side.
        // The result is then at least about one half, so the subtraction loses nothing.
        let front = (b * ln_y + a * ln_x - ln_beta(a, b)).exp();
        1.0 - front * beta_continued_fraction(b, a, y) / b
    }
}

/// The regularized incomplete beta function I_x(a, b) for a, b > 0 and 0 ≤ x ≤ 1.
///
/// Returns NaN when an argument is outside that domain or not finite.
pub fn regularized_incomplete_beta(x: f64, a: f64, b: f64) -> f64 {
    let valid = x.is_finite() && a.is_finite() && b.is_finite();
    if !valid || !(0.0..=1.0).contains(&x) || a <= 0.0 || b <= 0.0 {
        return f64::NAN;
    }
    let y = 1.0 - x;
    regularized_beta_parts(a, b, x, y, x.ln(), y.ln())
}

/// Q(a, x) = Γ(a, x)/Γ(a), the regularized upper incomplete gamma function, for a > 0 and
/// x ≥ 0: by its series below x = a + 1 (where Q is not small, so 1 − P is safe) and by its
/// continued fraction (modified Lentz) above, where the tail is computed directly.
fn regularized_gamma_q(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 1.0;
    }
    if x == f64::INFINITY {
        return 0.0;
    }
    let ln_front = -x + a * x.ln() - ln_gamma(a);
    if x < a + 1.0 {
        let mut term = 1.0 / a;
        let mut sum = term;
        let mut ap = a;
        for _ in 0..CF_MAX_STEPS {
            ap += 1.0;
            term *= x / ap;
            sum += term;
            if term.abs() < sum.abs() * CF_EPSILON {
                break;
            }
        }
        1.0 - sum * ln_front.exp()
    } else {
        let guard = |v: f64| if v.abs() < CF_TINY { CF_TINY } else { v };
        let mut b = x + 1.0 - a;
        let mut c = 1.0 / CF_TINY;
        let mut d = 1.0 / b;
        let mut h = d;
        for i in 1..=CF_MAX_STEPS {
            let i = i as f64;
            let an = -i * (i - a);
            b += 2.0;
            d = 1.0 / guard(an * d + b);
            c = guard(b + an / c);
            let delta = d * c;
            h *= delta;
            if (delta - 1.0).abs() < CF_EPSILON {
                break;
            }
        }
        ln_front.exp() * h
    }
}

/// Two-sided p-value for `dof` ≥ [`ASYMPTOTIC_DOF`] by Hill's asymptotic expansion (G. W.
/// Hill, "Algorithm 395: Student's t-distribution", CACM 13(10), 1970), which maps t to a
/// normal deviate z; the normal tail is then Q(1/2, z²/2), computed directly. `ln_1p_r2` is
/// ln(1 + t²/dof).
fn hill_two_sided_p(dof: f64, ln_1p_r2: f64) -> f64 {
    let a = dof - 0.5;
    let b = 48.0 * a * a;
    let y = a * ln_1p_r2;
    // z² is about y, so beyond this the p-value is below the smallest subnormal; stopping
    // here also keeps the cubic below from overflowing.
    if y > 1600.0 {
        return 0.0;
    }
    let correction = (((-0.4 * y - 3.3) * y - 24.0) * y - 85.5) / (0.8 * y * y + 100.0 + b);
    let z = ((correction + y + 3.0) / b + 1.0) * y.sqrt();
    regularized_gamma_q(0.5, 0.5 * z * z)
}

/// The two-sided p-value P(|T| ≥ |t|) of Student's t distribution with `dof` degrees of
/// freedom: I_{dof/(dof+t²)}(dof/2, 1/2) below 1e4 degrees of freedom, Hill's normal
/// expansion from there on. Either way the tail is computed directly, so p-values far below
/// 1e-16 keep their relative accuracy (about 1e-12 or better).
///
/// `dof` may be any positive real. Returns 1 for t = 0 and 0 for infinite t. Returns NaN,
/// which callers treat as "unknown", when t is NaN or `dof` is not a positive finite number.
pub fn student_t_two_sided_p(t: f64, dof: f64) -> f64 {
    if t.is_nan() || !dof.is_finite() || dof <= 0.0 {
        return f64::NAN;
    }
    if t.is_infinite() {
        return 0.0;
    }
    // As dof shrinks to zero the tails hold all the mass; a dof whose half underflows is
    // treated as that limit.
    if t == 0.0 || 0.5 * dof == 0.0 {
        return 1.0;
    }
    // r² = t²/dof, formed as (t/√dof)² so that it overflows only when the ratio itself does.
    let r = t.abs() / dof.sqrt();
    let r2 = r * r;
    // ln r² is needed even when r² over- or underflows: the p-value for an enormous t is tiny
    // but representable, and its logarithm is what the prefactor is built from.
    let ln_r2 = if r2.is_finite() && r2 > 0.0 {
        r2.ln()
    } else {
        2.0 * (t.abs().ln() - 0.5 * dof.ln())
    };
    let ln_1p_r2 = if r2.is_finite() { r2.ln_1p() } else { ln_r2 };
    // x = 1/(1 + r²) and y = 1 − x = r²/(1 + r²), each without subtracting from one.
    let x = 1.0 / (1.0 + r2);
    let y = if r2.is_finite() { r2 / (1.0 + r2) } else { 1.0 };
    let ln_x = -ln_1p_r2;
    let ln_y = ln_r2 - ln_1p_r2;
    if dof >= ASYMPTOTIC_DOF {
        return hill_two_sided_p(dof, ln_1p_r2).clamp(0.0, 1.0);
    }
    let p = regularized_beta_parts(0.5 * dof, 0.5, x, y, ln_x, ln_y);
    p.clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fit::assert_close;

    fn assert_relative(actual: f64, expected: f64, relative: f64) {
        assert!(
            ((actual - expected) / expected).abs() <= relative,
            "{actual} is not within {relative} relative of {expected}"
        );
    }

    #[test]
    fn ln_gamma_matches_factorials_and_half_integers() {
        // Γ(n) = (n − 1)!
        let mut factorial: f64 = 1.0;
        for n in 1..30 {
            assert_relative(ln_gamma(n as f64).exp(), factorial, 1e-13);
            factorial *= n as f64;
        }
        // Γ(1/2) = √π, Γ(3/2) = √π / 2.
        let sqrt_pi = std::f64::consts::PI.sqrt();
        assert_relative(ln_gamma(0.5).exp(), sqrt_pi, 1e-14);
        assert_relative(ln_gamma(1.5).exp(), sqrt_pi / 2.0, 1e-14);
        assert!(ln_gamma(0.0).is_nan());
        assert!(ln_gamma(-1.5).is_nan());
        assert!(ln_gamma(f64::NAN).is_nan());
    }

    #[test]
    fn ln_beta_for_large_shapes_agrees_with_log_gammas() {
        // At a moderate size the direct formula is still accurate enough to compare against.
        let a = 40.0;
        let b = 0.5;
        let direct = ln_gamma(a) + ln_gamma(b) - ln_gamma(a + b);
        assert_close(ln_beta(a, b), direct, 1e-12);
        // B(a, 1) = 1/a exactly.
        assert_relative(ln_beta(1e7, 1.0), -(1e7f64).ln(), 1e-14);
    }

    #[test]
    fn incomplete_beta_simple_cases() {
        // I_x(1, 1) = x and I_x(a, 1) = x^a.
        assert_close(regularized_incomplete_beta(0.3, 1.0, 1.0), 0.3, 1e-14);
        assert_close(regularized_incomplete_beta(0.7, 3.0, 1.0), 0.343, 1e-14);
        assert_eq!(regularized_incomplete_beta(0.0, 2.0, 3.0), 0.0);
        assert_eq!(regularized_incomplete_beta(1.0, 2.0, 3.0), 1.0);
        assert!(regularized_incomplete_beta(1.5, 2.0, 3.0).is_nan());
        assert!(regularized_incomplete_beta(0.5, 0.0, 3.0).is_nan());
    }

    #[test]
    fn student_t_matches_table_values() {
        assert_close(student_t_two_sided_p(12.706, 1.0), 0.05, 1e-4);
        assert_close(student_t_two_sided_p(-12.706, 1.0), 0.05, 1e-4);
        assert_close(student_t_two_sided_p(2.228, 10.0), 0.05, 2e-4);
        assert_close(student_t_two_sided_p(2.0, 1e6), 0.0455, 2e-4);
        assert_close(student_t_two_sided_p(2.1213203435596424, 3.0), 0.1240, 1e-4);
        assert_eq!(student_t_two_sided_p(0.0, 5.0), 1.0);
    }

    #[test]
    fn student_t_matches_high_precision_values() {
        // I_{dof/(dof+t²)}(dof/2, 1/2) evaluated with mpmath at 50 significant digits, on both
        // sides of the switch to Hill's expansion at 1e4 degrees of freedom.
        let cases = [
            (2.0, 1.7, 0.231_233_426_201_571_22),
            (30.0, 1.7, 0.099_477_875_588_516_88),
            (30.0, 30.0, 6.251_791_630_608_888e-24),
            (30.0, 100.0, 1.984_611_796_727_025e-39),
            (1000.0, 10.0, 1.667_070_295_860_006_6e-22),
            (1000.0, 30.0, 1.537_468_744_404_348_2e-141),
            (1e4, 1.7, 0.089_162_022_727_705_04),
            (1e4, 30.0, 2.044_327_047_425_570_7e-189),
            (1e6, 5.0, 5.733_997_870_890_742e-7),
            (1e6, 30.0, 1.202_009_423_366_343_8e-197),
            (1e12, 5.0, 5.733_031_438_550_245e-7),
        ];
        for (dof, t, expected) in cases {
            assert_relative(student_t_two_sided_p(t, dof), expected, 1e-11);
        }
    }

    #[test]
    fn student_t_near_one_and_monotone() {
        let mut previous = 1.0;
        for i in 1..200 {
            let p = student_t_two_sided_p(i as f64 * 0.05, 7.0);
            assert!(p < previous && p > 0.0, "p({}) = {p}", i as f64 * 0.05);
            previous = p;
        }
        assert!(student_t_two_sided_p(1e-200, 3.0) > 0.999_999);
    }

    #[test]
    fn student_t_far_tail_one_degree_of_freedom_is_cauchy() {
        // With one degree of freedom the t distribution is Cauchy, whose two-sided tail is
        // (2/π)·atan(1/|t|).
        for t in [1e3_f64, 1e6, 1e100, 1e200] {
            let expected = std::f64::consts::FRAC_2_PI * (1.0 / t).atan();
            assert_relative(student_t_two_sided_p(t, 1.0), expected, 1e-9);
        }
    }

    #[test]
    fn student_t_far_tail_two_degrees_of_freedom() {
        // With two degrees of freedom p = 1 − |t|/√(2 + t²), rewritten without cancellation.
        for t in [10.0_f64, 1e5, 1e50] {
            let s = (2.0 + t * t).sqrt();
            let expected = 2.0 / (s * (t + s));
            assert_relative(student_t_two_sided_p(t, 2.0), expected, 1e-9);
        }
    }

    #[test]
    fn student_t_far_tail_many_degrees_of_freedom_is_tiny_not_zero() {
        // The IBM table's kind of value: far below what 1 − CDF could resolve.
        let p = student_t_two_sided_p(30.0, 50.0);
        assert!(p > 0.0 && p < 1e-30, "p = {p}");
        // With large dof the tail approaches the normal one: P(|Z| ≥ 5) = 5.733e-7.
        assert_relative(
            student_t_two_sided_p(5.0, 1e8),
            5.733_031_437_583_892e-7,
            1e-5,
        );
    }

    #[test]
    fn student_t_degenerate_arguments() {
        assert!(student_t_two_sided_p(f64::NAN, 3.0).is_nan());
        assert!(student_t_two_sided_p(1.0, 0.0).is_nan());
        assert!(student_t_two_sided_p(1.0, -2.0).is_nan());
        assert!(student_t_two_sided_p(1.0, f64::NAN).is_nan());
        assert!(student_t_two_sided_p(1.0, f64::INFINITY).is_nan());
        assert_eq!(student_t_two_sided_p(f64::INFINITY, 3.0), 0.0);
        assert_eq!(student_t_two_sided_p(f64::NEG_INFINITY, 3.0), 0.0);
        assert_eq!(student_t_two_sided_p(2.0, 5e-324), 1.0);
        for (t, dof) in [(1e300, 1e300), (1e300, 1e5), (1e-300, 1e300), (2.0, 1e300)] {
            let p = student_t_two_sided_p(t, dof);
            assert!((0.0..=1.0).contains(&p), "p({t}, {dof}) = {p}");
        }
        assert_close(student_t_two_sided_p(2.0, 1e300), 0.0455, 2e-4);
    }
}
