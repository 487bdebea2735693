//! Seek time as a function of distance, for each of DiskSim's curve types.

use crate::params::{HplCurve, SeekCurve};

/// Seek time in nanoseconds for a move of `distance` cylinders on a disk of `cylinders`.
/// Distance zero costs nothing; head switches and write settling are added by the mechanics.
pub fn seek_ns(curve: &SeekCurve, distance: u32, cylinders: u32) -> f64 {
    if distance == 0 {
        return 0.0;
    }
    let t = match curve {
        SeekCurve::Constant { time_ns } => *time_ns as f64,
        SeekCurve::ThreePointLine {
            single_ns,
            average_ns,
            full_ns,
        } => three_point_line(
            *single_ns as f64,
            *average_ns as f64,
            *full_ns as f64,
            distance,
            cylinders,
        ),
        SeekCurve::ThreePointCurve {
            single_ns,
            average_ns,
            full_ns,
        } => three_point_curve(
            three_point_curve_coefficients(
                *single_ns as f64,
                *average_ns as f64,
                *full_ns as f64,
                cylinders,
            ),
            distance,
        ),
        SeekCurve::Hpl(h) => hpl(h, distance),
        SeekCurve::HplPlus10 {
            curve,
            first_ten_ns,
        } => {
            if distance <= 10 {
                first_ten_ns[distance as usize - 1] as f64
            } else {
                hpl(curve, distance)
            }
        }
        SeekCurve::Extracted { points } => extracted(points, distance),
    };
    t.max(0.0)
}

fn hpl(h: &HplCurve, distance: u32) -> f64 {
    if distance == 1 {
        if let Some(s) = h.single_ns {
            return s as f64;
        }
    }
    let d = f64::from(distance);
    if distance < h.boundary_cylinders {
        h.a_ns + h.b_ns_per_sqrt_cylinder * d.sqrt()
    } else {
        h.c_ns + h.e_ns_per_cylinder * d
    }
}

/// Piecewise linear through (1, single), (cylinders/3, average) and (cylinders - 1, full).
fn three_point_line(single: f64, average: f64, full: f64, distance: u32, cylinders: u32) -> f64 {
    let third = (f64::from(cylinders) / 3.0).max(2.0);
    let end = f64::from(cylinders.saturating_sub(1)).max(third + 1.0);
    let d = f64::from(distance);
    if d <= third {
        single + (average - single) * (d - 1.0) / (third - 1.0)
    } else {
        average + (full - average) * (d - third) / (end - third)
    }
}

/// The three-point curve with coefficients `(a, b, c)` (from
/// [`three_point_curve_coefficients`]) at a distance of at least one cylinder, before the
/// floor at zero that [`seek_ns`] applies.
pub fn three_point_curve((a, b, c): (f64, f64, f64), distance: u32) -> f64 {
    let x = f64::from(distance) - 1.0;
    a + b * x.sqrt() + c * x
}

/// Solves `t(d) = a + b·sqrt(d-1) + c·(d-1)` through t(1) = single, t(n/3) = average and
/// t(n-1) = full, n being the number of cylinders.
pub fn three_point_curve_coefficients(
    single: f64,
    average: f64,
    full: f64,
    cylinders: u32,
) -> (f64, f64, f64) {
    let a = single;
    let x1 = (f64::from(cylinders) / 3.0 - 1.0).max(1.0);
    let x2 = (f64::from(cylinders) - 2.0).max(x1 + 1.0);
    // Two equations in b and c: b·sqrt(x) + c·x = t - a.
    let (s1, s2) = (x1.sqrt(), x2.sqrt());
    let (r1, r2) = (average - a, full - a);
    let det = s1 * x2 - s2 * x1;
    if det.abs() < 1e-12 {
        return (a, 0.0, r2 / x2);
    }
    let b = (r1 * x2 - r2 * x1) / det;
    let c = (s1 * r2 - s2 * r1) / det;
    (a, b, c)
}

/// Linear interpolation in a table sorted by distance; below the first point the curve runs
/// from zero; beyond the last it extends the last segment.
fn extracted(points: &[(u32, u64)], distance: u32) -> f64 {
    match points {
        [] => 0.0,
        [(d0, t0)] => *t0 as f64 * f64::from(distance) / f64::from((*d0).max(1)),
        _ => {
            let i = points.partition_point(|&(d, _)| d < distance);
            if let Some(&(d, t)) = points.get(i) {
                if d == distance {
                    return t as f64;
                }
            }
            let (lo, hi) = if i == 0 {
                ((0u32, 0u64), points[0])
            } else if i >= points.len() {
                (points[points.len() - 2], points[points.len() - 1])
            } else {
                (points[i - 1], points[i])
            };
            let (d1, t1) = (f64::from(lo.0), lo.1 as f64);
            let (d2, t2) = (f64::from(hi.0), hi.1 as f64);
            if d2 <= d1 {
                return t2;
            }
            t1 + (f64::from(distance) - d1) * (t2 - t1) / (d2 - d1)
        }
    }
}
