//! The hybrid-disk thesis' erase correction: "A write request for n blocks on a non-clean
//! flash approximately translates to n writes and k erases. Thus, the observed latency
//! L = n·WL + k·EL ... k is the mean number of erases incurred by the write request." The
//! write cost WL comes from the minimum of repeated runs, because any single write may have
//! paid for erases too, and the erase latency EL from published studies (it is an input).

use super::linear::{fit_linear, LinearFit};

/// The mean number of erases per write, by request size.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct EraseCorrection {
    /// EL, the latency of one erase in µs, as given.
    pub erase_latency_us: f64,
    /// (size_bytes, mean k at that size), by increasing size.
    pub per_size: Vec<(u64, f64)>,
    /// Mean of the per-size k, each size weighted equally.
    pub mean_k: f64,
    /// The write cost without erases: the linear fit of each size's minimum latency.
    pub base: LinearFit,
}

/// The mean of finite values; the plain sum is used unless it overflows, and then the
/// pre-divided terms, whose sum cannot.
fn mean(values: &[f64]) -> f64 {
    let n = values.len() as f64;
    let sum: f64 = values.iter().sum();
    if sum.is_finite() {
        sum / n
    } else {
        values.iter().map(|v| v / n).sum()
    }
}

/// Estimates k, the mean number of erases a random write incurs, at each request size.
///
/// `samples` holds, per request size in bytes, every measured random-write latency in µs.
/// Entries of the same size are pooled and sizes without latencies are ignored. The base cost
/// is a linear fit of each size's minimum latency against its size in KiB, so that one size
/// whose every run happened to pay an erase does not set its own base; then
/// k(n) = max(0, mean latency − base(n)) / EL.
///
/// Returns None when fewer than 2 sizes have latencies, when `erase_latency_us` is not a
/// positive finite number, when any latency is not finite, or when the result is not
/// representable.
pub fn erase_correction(
    samples: &[(u64, Vec<f64>)],
    erase_latency_us: f64,
) -> Option<EraseCorrection> {
    if !erase_latency_us.is_finite() || erase_latency_us <= 0.0 {
        return None;
    }
    if samples
        .iter()
        .any(|(_, l)| l.iter().any(|v| !v.is_finite()))
    {
        return None;
    }
    let mut sizes: Vec<u64> = samples
        .iter()
        .filter(|(_, l)| !l.is_empty())
        .map(|&(s, _)| s)
        .collect();
    sizes.sort_unstable();
    sizes.dedup();
    if sizes.len() < 2 {
        return None;
    }
    let pooled: Vec<(u64, Vec<f64>)> = sizes
        .iter()
        .map(|&size| {
            let latencies = samples
                .iter()
                .filter(|(s, _)| *s == size)
                .flat_map(|(_, l)| l.iter().copied())
                .collect();
            (size, latencies)
        })
        .collect();

    let minima: Vec<(f64, f64)> = pooled
        .iter()
        .map(|(size, l)| {
            let min = l.iter().copied().fold(f64::INFINITY, f64::min);
            (*size as f64 / 1024.0, min)
        })
        .collect();
    let base = fit_linear(&minima)?;

    let per_size: Vec<(u64, f64)> = pooled
        .iter()
        .map(|(size, l)| {
            let excess = mean(l) - base.predict_us(*size as f64 / 1024.0);
            (*size, excess.max(0.0) / erase_latency_us)
        })
        .collect();
    if per_size.iter().any(|(_, k)| !k.is_finite()) {
        return None;
    }
    let ks: Vec<f64> = per_size.iter().map(|&(_, k)| k).collect();
    let mean_k = mean(&ks);
    if !mean_k.is_finite() {
        return None;
    }
    Some(EraseCorrection {
        erase_latency_us,
        per_size,
        mean_k,
        base,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fit::assert_close;

    const EL: f64 = 1500.0;

    /// The erase-free cost of an n-byte write: 80 µs plus 0.5 µs per KiB.
    fn write_cost(size_bytes: u64) -> f64 {
        80.0 + 0.5 * size_bytes as f64 / 1024.0
    }

    /// `count` writes of one size in which write i pays `erases(i)` erases on top.
    fn writes(size_bytes: u64, count: usize, erases: impl Fn(usize) -> f64) -> (u64, Vec<f64>) {
        let latencies = (0..count)
            .map(|i| write_cost(size_bytes) + erases(i) * EL)
            .collect();
        (size_bytes, latencies)
    }

    #[test]
    fn known_erase_rates_are_recovered() {
        let samples = vec![
            // Every 8th, 4th and 2nd write pays one erase: k = 1/8, 1/4, 1/2.
            writes(4096, 80, |i| (i % 8 == 7) as u8 as f64),
            writes(16384, 80, |i| (i % 4 == 3) as u8 as f64),
            writes(65536, 80, |i| (i % 2 == 1) as u8 as f64),
            // Writes pay 0, 1, 2, 3 erases in turn: k = 1.5, and the minimum is still erase-free.
            writes(262144, 80, |i| (i % 4) as f64),
        ];
        let c = erase_correction(&samples, EL).unwrap();
        assert_close(c.base.a_us, 80.0, 1e-9);
        assert_close(c.base.b_us_per_kib, 0.5, 1e-12);
        let expected = [(4096, 0.125), (16384, 0.25), (65536, 0.5), (262144, 1.5)];
        assert_eq!(c.per_size.len(), expected.len());
        for (&(size, k), &(want_size, want_k)) in c.per_size.iter().zip(&expected) {
            assert_eq!(size, want_size);
            assert_close(k, want_k, 1e-9);
        }
        assert_close(c.mean_k, (0.125 + 0.25 + 0.5 + 1.5) / 4.0, 1e-9);
        assert_eq!(c.erase_latency_us, EL);
    }

    #[test]
    fn sizes_are_pooled_sorted_and_empty_ones_ignored() {
        let samples = vec![
            writes(65536, 10, |i| (i % 2 == 1) as u8 as f64),
            (8192, Vec::new()),
            writes(4096, 10, |_| 0.0),
            // A second batch of 64 KiB writes, all erase-free: pooled, k = 5/20.
            writes(65536, 10, |_| 0.0),
        ];
        let c = erase_correction(&samples, EL).unwrap();
        let sizes: Vec<u64> = c.per_size.iter().map(|&(s, _)| s).collect();
        assert_eq!(sizes, vec![4096, 65536]);
        assert_close(c.per_size[0].1, 0.0, 1e-9);
        assert_close(c.per_size[1].1, 0.25, 1e-9);
        assert_eq!(c.base.points, 2);
    }

    #[test]
    fn means_below_the_base_give_zero_not_negative_k() {
        // The largest size is cheaper than the line through the others predicts.
        let samples = vec![
            writes(4096, 4, |_| 0.0),
            writes(8192, 4, |_| 0.0),
            (16384, vec![60.0; 4]),
        ];
        let c = erase_correction(&samples, EL).unwrap();
        assert!(c.per_size.iter().all(|&(_, k)| k >= 0.0));
        assert!(c.mean_k >= 0.0);
    }

    #[test]
    fn degenerate_inputs_give_none() {
        let good = vec![writes(4096, 4, |_| 0.0), writes(8192, 4, |_| 0.0)];
        assert!(erase_correction(&good, EL).is_some());
        assert_eq!(erase_correction(&good[..1], EL), None);
        assert_eq!(erase_correction(&[], EL), None);
        assert_eq!(erase_correction(&good, 0.0), None);
        assert_eq!(erase_correction(&good, -5.0), None);
        assert_eq!(erase_correction(&good, f64::NAN), None);
        assert_eq!(erase_correction(&good, f64::INFINITY), None);
        let same_size = vec![writes(4096, 4, |_| 0.0), writes(4096, 4, |_| 1.0)];
        assert_eq!(erase_correction(&same_size, EL), None);
        let mut bad = good.clone();
        bad[1].1.push(f64::NAN);
        assert_eq!(erase_correction(&bad, EL), None);
        let empty_sizes = vec![(4096, Vec::new()), writes(8192, 4, |_| 0.0)];
        assert_eq!(erase_correction(&empty_sizes, EL), None);
    }
}
