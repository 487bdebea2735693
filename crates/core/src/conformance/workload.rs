//! The kit's random mixed workload: reads, writes, trims and flushes of random sizes at random
//! and sequential offsets, arriving in bursts larger than the queue, at short and long gaps, and
//! after idle periods long enough for a device's background work.

use crate::prng::Prng;
use crate::request::{Op, Request, SECTOR_BYTES};
use crate::time::SimTime;

/// The shape of a [`mixed_requests`] workload: how many requests, and what it needs to know
/// about the device.
#[derive(Clone, Copy, Debug)]
pub struct Mix {
    /// How many requests.
    pub count: usize,
    /// The device's capacity: every request lies inside it.
    pub capacity_bytes: u64,
    /// The device's queue depth: bursts reach up to twice it (at most 512 requests).
    pub queue_depth: usize,
    /// The largest request, rounded down to whole 512-byte sectors.
    pub max_request_bytes: u64,
}

/// The kit's random mixed workload for `seed`: `mix.count` requests with ids `0..count`, sorted
/// by arrival. About 45 % reads, 40 % writes, 8 % trims and 7 % flushes (which carry no range);
/// sizes from one sector to `max_request_bytes`, a third of them continuing the previous
/// request; arrivals in bursts, at gaps from nothing to 50 µs, 5 ms and 55 ms, and after idle
/// periods of up to two seconds. The same seed and shape give the same requests.
pub fn mixed_requests(seed: u64, mix: &Mix) -> Vec<Request> {
    generate(&mut Prng::new(seed).fork(1), mix)
}

/// [`mixed_requests`] drawing from `rng`.
fn generate(rng: &mut Prng, shape: &Mix) -> Vec<Request> {
    let capacity_sectors = shape.capacity_bytes / SECTOR_BYTES;
    let max_sectors = (shape.max_request_bytes / SECTOR_BYTES)
        .clamp(1, capacity_sectors.max(1))
        .min(capacity_sectors);
    // Bursts reach past the queue so that the driver meets `QueueFull`, but stay small enough
    // for a device with a deep queue not to take the whole run in one burst.
    let burst_max = (shape.queue_depth as u64).clamp(1, 256) * 2;
    let mut requests = Vec::with_capacity(shape.count);
    let mut t = 0u64;
    let mut burst_left = 0u64;
    let mut previous_end_sectors = 0u64;
    for id in 0..shape.count as u64 {
        if burst_left > 0 {
            burst_left -= 1;
        } else {
            t += match rng.below(100) {
                0..=4 => {
                    burst_left = rng.below(burst_max);
                    0
                }
                5..=29 => 0,
                30..=79 => rng.below(50_000),
                80..=94 => rng.below(5_000_000),
                95..=98 => 5_000_000 + rng.below(50_000_000),
                // An idle period: background garbage collection, flushing and spin-down run.
                _ => 200_000_000 + rng.below(2_000_000_000),
            };
        }
        let op = match rng.below(100) {
            0..=44 => Op::Read,
            45..=84 => Op::Write,
            85..=92 => Op::Trim,
            _ => Op::Flush,
        };
        // A device smaller than a sector can only be flushed.
        let (offset_bytes, len_bytes) = if op == Op::Flush || max_sectors == 0 {
            (0, 0)
        } else {
            let sectors = match rng.below(4) {
                0 => 1 + rng.below(8.min(max_sectors)),
                1 | 2 => (8 * (1 + rng.below(8))).min(max_sectors),
                _ => 1 + rng.below(max_sectors),
            };
            let offset_sectors = match rng.below(3) {
                0 if previous_end_sectors + sectors <= capacity_sectors => previous_end_sectors,
                0 | 1 => rng.below(capacity_sectors - sectors + 1),
                _ => rng.below((capacity_sectors - sectors) / 8 + 1) * 8,
            };
            previous_end_sectors = offset_sectors + sectors;
            (offset_sectors * SECTOR_BYTES, sectors * SECTOR_BYTES)
        };
        let op = if len_bytes == 0 { Op::Flush } else { op };
        requests.push(Request {
            id,
            op,
            offset_bytes,
            len_bytes,
            arrival: SimTime(t),
            flow: 0,
        });
    }
    requests
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_stay_inside_the_device_and_arrive_in_order() {
        for (capacity_bytes, queue_depth) in [(1 << 30, 32), (4096, 1), (513, 4), (100, 2)] {
            let shape = Mix {
                count: 3_000,
                capacity_bytes,
                queue_depth,
                max_request_bytes: 1 << 20,
            };
            let requests = mixed_requests(5, &shape);
            assert_eq!(requests.len(), 3_000);
            for w in requests.windows(2) {
                assert!(w[0].arrival <= w[1].arrival);
            }
            for r in &requests {
                assert!(
                    r.end_bytes() <= capacity_bytes,
                    "{r:?} past {capacity_bytes}"
                );
                assert_eq!(r.op == Op::Flush, r.len_bytes == 0, "{r:?}");
            }
            let ops = |op| requests.iter().filter(|r| r.op == op).count();
            if capacity_bytes >= 512 {
                assert!(Op::ALL.iter().all(|&op| ops(op) > 50), "every op appears");
            }
            let bursts = requests
                .windows(2)
                .filter(|w| w[0].arrival == w[1].arrival)
                .count();
            assert!(bursts > 500, "requests arrive together");
        }
    }
}
