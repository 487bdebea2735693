//! Choosing the next request from the drive's queue.

use crate::params::SchedulerKind;

/// What a scheduler knows about a waiting request.
#[derive(Clone, Copy, Debug)]
pub struct Candidate {
    pub cylinder: u32,
    /// Seek plus rotational latency from where the heads will be; only SPTF looks at it.
    pub positioning_ns: f64,
}

/// Index of the request to serve next, among candidates in arrival order; ties go to the
/// earliest arrival, which keeps every policy deterministic. `None` for an empty queue.
pub fn pick(kind: SchedulerKind, head_cylinder: u32, queue: &[Candidate]) -> Option<usize> {
    if queue.is_empty() {
        return None;
    }
    let best_by = |key: &dyn Fn(&Candidate) -> f64| {
        let mut best = 0;
        for (i, c) in queue.iter().enumerate().skip(1) {
            if key(c) < key(&queue[best]) {
                best = i;
            }
        }
        best
    };
    Some(match kind {
        SchedulerKind::Fcfs => 0,
        SchedulerKind::Sstf => best_by(&|c| f64::from(c.cylinder.abs_diff(head_cylinder))),
        SchedulerKind::Sptf => best_by(&|c| c.positioning_ns),
        SchedulerKind::CLook => {
            // The nearest request at or beyond the heads; when none is left in this sweep,
            // the lowest cylinder starts the next one.
            let ahead = queue
                .iter()
                .enumerate()
                .filter(|(_, c)| c.cylinder >= head_cylinder)
                .min_by_key(|(i, c)| (c.cylinder, *i));
            match ahead {
                Some((i, _)) => i,
                None => queue
                    .iter()
                    .enumerate()
                    .min_by_key(|(i, c)| (c.cylinder, *i))
                    .map(|(i, _)| i)
                    .unwrap_or(0),
            }
        }
    })
}

/// SPTF's choice without pricing every candidate: the same index as [`pick`] with
/// [`SchedulerKind::Sptf`] over the candidates' positioning times, given a lower bound on
/// each (`lower_bounds[i] <= price(i)`, both finite). The candidate with the lowest bound is
/// priced first; any other is priced only while its bound could still beat the best so far,
/// ties going to the earlier arrival. `None` for an empty queue.
///
/// A disk's lower bound is the seek (or head switch) alone: rotational latency is never
/// negative, and adding it cannot make a sum of floating-point numbers smaller.
pub fn pick_sptf(lower_bounds: &[f64], mut price: impl FnMut(usize) -> f64) -> Option<usize> {
    if lower_bounds.is_empty() {
        return None;
    }
    let mut first = 0;
    for (i, &b) in lower_bounds.iter().enumerate().skip(1) {
        if b < lower_bounds[first] {
            first = i;
        }
    }
    let mut best = first;
    let mut best_ns = price(first);
    for (i, &b) in lower_bounds.iter().enumerate() {
        // (price, index) is what is minimised; a candidate whose (bound, index) is not below
        // the best's cannot win.
        if i == first || b > best_ns || (b == best_ns && i > best) {
            continue;
        }
        let ns = price(i);
        if ns < best_ns || (ns == best_ns && i < best) {
            best = i;
            best_ns = ns;
        }
    }
    Some(best)
}

#[cfg(test)]
mod tests {
    use super::*;
    use storsim_core::Prng;

    /// Random queues whose prices often tie (coarse values) and whose bounds are often equal
    /// to the price (a request on the track the heads reach at the right angle).
    #[test]
    fn pick_sptf_agrees_with_pricing_every_candidate() {
        let seed = 0x5b7f_0001_u64;
        println!("seed {seed:#x}");
        let mut r = Prng::new(seed);
        for _ in 0..20_000 {
            let n = (r.next_u64() % 40) as usize;
            let coarse = r.next_u64() % 2 == 1;
            let mut bounds = Vec::with_capacity(n);
            let mut prices = Vec::with_capacity(n);
            for _ in 0..n {
                let b = if coarse {
                    (r.next_u64() % 6) as f64
                } else {
                    (r.next_u64() % 1_000_000) as f64 * 0.37
                };
                let extra = match r.next_u64() % 3 {
                    0 => 0.0,
                    _ if coarse => (r.next_u64() % 4) as f64,
                    _ => (r.next_u64() % 1_000_000) as f64 * 0.11,
                };
                bounds.push(b);
                prices.push(b + extra);
            }
            let all: Vec<Candidate> = prices
                .iter()
                .map(|&p| Candidate {
                    cylinder: 0,
                    positioning_ns: p,
                })
                .collect();
            let mut priced = 0;
            let got = pick_sptf(&bounds, |i| {
                priced += 1;
                prices[i]
            });
            assert_eq!(
                got,
                pick(SchedulerKind::Sptf, 0, &all),
                "{bounds:?} {prices:?}"
            );
            assert!(priced <= n);
        }
    }
}
