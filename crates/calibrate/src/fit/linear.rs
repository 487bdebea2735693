//! Ordinary least squares of latency on request size, as in the IBM paper: one fit per access
//! pattern giving A (µs, the intercept), B (µs per KiB, the slope), r² and the slope's p-value.

use super::pvalue::student_t_two_sided_p;

/// latency ≈ A + B · size, fitted by least squares.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct LinearFit {
    /// Intercept A in µs: the per-request cost that does not depend on size.
    pub a_us: f64,
    /// Slope B in µs per KiB.
    pub b_us_per_kib: f64,
    /// Coefficient of determination 1 − SS_res/SS_tot, in [0, 1]. When every latency is the
    /// same (SS_tot = 0) the line fits them exactly and r² is 1.
    pub r_squared: f64,
    /// Two-sided p-value of the slope (t-test, n − 2 degrees of freedom); None with fewer
    /// than 3 points. An exact fit (all residuals 0) gives Some(0.0) for a non-zero slope and
    /// Some(1.0) for a zero slope, which is then known exactly to be zero.
    pub p_value: Option<f64>,
    /// Number of (size, latency) points fitted.
    pub points: usize,
    /// Standard error of A; None with fewer than 3 points.
    pub a_stderr_us: Option<f64>,
    /// Standard error of B; None with fewer than 3 points.
    pub b_stderr_us_per_kib: Option<f64>,
}

impl LinearFit {
    /// A + B · size: the fitted latency in µs of a request of `size_kib` KiB.
    pub fn predict_us(&self, size_kib: f64) -> f64 {
        self.a_us + self.b_us_per_kib * size_kib
    }
}

/// The mean of `values`, falling back to summing pre-divided terms when the plain sum
/// overflows: each term is then at most the largest value, so the sum stays finite.
fn mean(values: impl Iterator<Item = f64> + Clone, n: f64) -> f64 {
    let sum: f64 = values.clone().sum();
    if sum.is_finite() {
        sum / n
    } else {
        values.map(|v| v / n).sum()
    }
}

/// Fits latency (µs) against size (KiB) by ordinary least squares. `points` are
/// (size in KiB, latency in µs).
///
/// Returns None with fewer than 2 points, fewer than 2 distinct sizes, any non-finite value,
/// or when the inputs are so large (beyond about 1e300) that the fitted values themselves are
/// not representable.
pub fn fit_linear(points: &[(f64, f64)]) -> Option<LinearFit> {
    let count = points.len();
    if count < 2 {
        return None;
    }
    if points
        .iter()
        .any(|&(x, y)| !x.is_finite() || !y.is_finite())
    {
        return None;
    }
    let first_x = points[0].0;
    if points.iter().all(|&(x, _)| x == first_x) {
        return None;
    }
    let n = count as f64;
    let mean_x = mean(points.iter().map(|p| p.0), n);
    let mean_y = mean(points.iter().map(|p| p.1), n);

    // Centring first avoids the catastrophic cancellation of Σx² − n·x̄² when the sizes are
    // large and close together. Scaling the centred values into [−1, 1] then keeps the sums
    // of squares finite for inputs of any magnitude; the scales are put back at the end.
    let scale_x = points
        .iter()
        .map(|p| (p.0 - mean_x).abs())
        .fold(0.0, f64::max);
    let scale_y = points
        .iter()
        .map(|p| (p.1 - mean_y).abs())
        .fold(0.0, f64::max);
    if !scale_x.is_finite() || !scale_y.is_finite() || scale_x == 0.0 {
        return None;
    }
    // With every latency equal, the centred values are all zero; any positive scale works.
    let scale_y = if scale_y == 0.0 { 1.0 } else { scale_y };
    let u = |x: f64| (x - mean_x) / scale_x;
    let v = |y: f64| (y - mean_y) / scale_y;
    let suu: f64 = points.iter().map(|p| u(p.0) * u(p.0)).sum();
    let suv: f64 = points.iter().map(|p| u(p.0) * v(p.1)).sum();
    let svv: f64 = points.iter().map(|p| v(p.1) * v(p.1)).sum();
    if suu <= 0.0 {
        return None;
    }
    let slope_scaled = suv / suu;
    // The residuals are summed directly rather than as SS_tot − B·S_xy, which could come
    // out slightly negative or lose the small residuals of a near-perfect fit.
    let ss_res_scaled: f64 = points
        .iter()
        .map(|p| {
            let r = v(p.1) - slope_scaled * u(p.0);
            r * r
        })
        .sum();

    let b = slope_scaled * (scale_y / scale_x);
    let a = mean_y - b * mean_x;
    let r_squared = if svv > 0.0 {
        (1.0 - ss_res_scaled / svv).clamp(0.0, 1.0)
    } else {
        // All latencies are equal: the flat line through them leaves no residual.
        1.0
    };
    if !a.is_finite() || !b.is_finite() || !r_squared.is_finite() {
        return None;
    }

    let (p_value, a_stderr_us, b_stderr_us_per_kib) = if count >= 3 {
        let dof = n - 2.0;
        // Residual variance in scaled units; the standard errors follow from the textbook
        // formulas s²/S_xx and s²·(1/n + x̄²/S_xx) with the scales restored.
        let s2 = ss_res_scaled / dof;
        let b_se_scaled = (s2 / suu).sqrt();
        let b_se = b_se_scaled * (scale_y / scale_x);
        let mean_x_scaled = mean_x / scale_x;
        let a_se = (s2 * (1.0 / n + mean_x_scaled * mean_x_scaled / suu)).sqrt() * scale_y;
        let p = if ss_res_scaled == 0.0 {
            if slope_scaled == 0.0 {
                1.0
            } else {
                0.0
            }
        } else {
            student_t_two_sided_p(slope_scaled / b_se_scaled, dof)
        };
        (
            Some(p).filter(|p| p.is_finite()),
            Some(a_se).filter(|s| s.is_finite()),
            Some(b_se).filter(|s| s.is_finite()),
        )
    } else {
        (None, None, None)
    };

    Some(LinearFit {
        a_us: a,
        b_us_per_kib: b,
        r_squared,
        p_value,
        points: count,
        a_stderr_us,
        b_stderr_us_per_kib,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fit::assert_close;

    #[test]
    fn exact_line_is_recovered() {
        // The IBM STEC Zeus random-read row's shape: A = 150 µs, B = 0.25 µs/KiB.
        let points: Vec<(f64, f64)> = [4.0, 8.0, 16.0, 64.0, 128.0, 512.0]
            .iter()
            .map(|&x| (x, 150.0 + 0.25 * x))
            .collect();
        let fit = fit_linear(&points).unwrap();
        assert_close(fit.a_us, 150.0, 1e-9);
        assert_close(fit.b_us_per_kib, 0.25, 1e-12);
        assert_close(fit.r_squared, 1.0, 1e-12);
        assert_eq!(fit.points, 6);
        assert!(fit.p_value.unwrap() < 1e-20);
        assert!(fit.b_stderr_us_per_kib.unwrap() < 1e-9);
        assert_close(fit.predict_us(32.0), 158.0, 1e-9);
    }

    #[test]
    fn exactly_representable_line_has_zero_p_value() {
        let points = [(0.0, 1.0), (1.0, 3.0), (2.0, 5.0), (3.0, 7.0)];
        let fit = fit_linear(&points).unwrap();
        assert_eq!(fit.a_us, 1.0);
        assert_eq!(fit.b_us_per_kib, 2.0);
        assert_eq!(fit.r_squared, 1.0);
        assert_eq!(fit.p_value, Some(0.0));
        assert_eq!(fit.b_stderr_us_per_kib, Some(0.0));
    }

    #[test]
    fn hand_computed_small_dataset() {
        // x̄ = 3, ȳ = 4, S_xx = 10, S_xy = 6, SS_tot = 6, SS_res = 2.4, s² = 0.8.
        let points = [(1.0, 2.0), (2.0, 4.0), (3.0, 5.0), (4.0, 4.0), (5.0, 5.0)];
        let fit = fit_linear(&points).unwrap();
        assert_close(fit.b_us_per_kib, 0.6, 1e-12);
        assert_close(fit.a_us, 2.2, 1e-12);
        assert_close(fit.r_squared, 0.6, 1e-12);
        // se(B) = √(0.8/10), se(A) = √(0.8·(1/5 + 9/10)); t = 0.6/se(B) = 2.1213, 3 dof.
        assert_close(fit.b_stderr_us_per_kib.unwrap(), (0.08f64).sqrt(), 1e-12);
        assert_close(fit.a_stderr_us.unwrap(), (0.88f64).sqrt(), 1e-12);
        assert_close(fit.p_value.unwrap(), 0.1240, 1e-4);
    }

    #[test]
    fn two_points_have_no_p_value() {
        let fit = fit_linear(&[(1.0, 10.0), (3.0, 20.0)]).unwrap();
        assert_close(fit.b_us_per_kib, 5.0, 1e-12);
        assert_close(fit.a_us, 5.0, 1e-12);
        assert_eq!(fit.r_squared, 1.0);
        assert_eq!(fit.p_value, None);
        assert_eq!(fit.a_stderr_us, None);
        assert_eq!(fit.b_stderr_us_per_kib, None);
    }

    #[test]
    fn flat_latencies_fit_exactly_with_zero_slope() {
        let fit = fit_linear(&[(1.0, 7.0), (2.0, 7.0), (4.0, 7.0)]).unwrap();
        assert_eq!(fit.b_us_per_kib, 0.0);
        assert_eq!(fit.a_us, 7.0);
        assert_eq!(fit.r_squared, 1.0);
        assert_eq!(fit.p_value, Some(1.0));
    }

    #[test]
    fn large_offsets_do_not_cancel() {
        // Sizes near 1e9 KiB that differ by a few KiB: the uncentred normal equations lose
        // every digit here.
        let points: Vec<(f64, f64)> = (0..5)
            .map(|i| {
                let x = 1e9 + i as f64;
                (x, 3.0 + 0.5 * (x - 1e9))
            })
            .collect();
        let fit = fit_linear(&points).unwrap();
        assert_close(fit.b_us_per_kib, 0.5, 1e-9);
        assert_close(fit.predict_us(1e9 + 2.0), 4.0, 1e-6);
        assert_close(fit.r_squared, 1.0, 1e-12);
    }

    #[test]
    fn huge_values_do_not_overflow() {
        let points = [(1e200, 1e300), (2e200, 1.5e300), (3e200, 2e300)];
        let fit = fit_linear(&points).unwrap();
        assert_close(fit.b_us_per_kib / 5e99, 1.0, 1e-12);
        assert_close(fit.r_squared, 1.0, 1e-12);
        // Values spanning the whole f64 range still fit...
        let wide = fit_linear(&[(-1e308, -1e308), (1e308, 1e308)]).unwrap();
        assert_close(wide.b_us_per_kib, 1.0, 1e-12);
        // ...but a slope beyond it cannot be represented.
        assert_eq!(fit_linear(&[(0.0, 0.0), (1e-300, 1e300)]), None);
    }

    #[test]
    fn degenerate_inputs_give_none() {
        assert_eq!(fit_linear(&[]), None);
        assert_eq!(fit_linear(&[(1.0, 2.0)]), None);
        assert_eq!(fit_linear(&[(4.0, 2.0), (4.0, 3.0), (4.0, 9.0)]), None);
        assert_eq!(fit_linear(&[(1.0, 2.0), (2.0, f64::NAN)]), None);
        assert_eq!(fit_linear(&[(1.0, 2.0), (f64::INFINITY, 3.0)]), None);
        assert_eq!(fit_linear(&[(f64::NAN, 2.0), (1.0, 3.0), (2.0, 4.0)]), None);
    }
}
