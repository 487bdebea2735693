//! Randomized arrays under randomized load: random level, stripe unit, children (linear, some
//! of them nested arrays, some shallow), queue depths and bursty mixed requests. Every request
//! completes exactly once, never before it arrived, and a second run from the same seed gives
//! exactly the same completions.
//!
//! Seeds are consecutive from a base, each printed before it runs; `STORSIM_TEST_SEED=N` sets
//! the base, so a printed seed replays first.

mod support;

use storsim_array::{ArrayDevice, ArrayParams, RaidLevel, ReadPolicy};
use storsim_core::{Completion, Device, Op, Prng, Request};
use support::*;

const SEEDS: u64 = 24;
const DEFAULT_BASE_SEED: u64 = 20_250_105;

/// The first seed: `STORSIM_TEST_SEED` if set (read as the conformance kit reads it, so a seed
/// that is not a number is an error rather than silently the default).
fn base_seed() -> u64 {
    storsim_core::conformance::seed_from_env()
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or(DEFAULT_BASE_SEED)
}

fn random_level(rng: &mut Prng) -> RaidLevel {
    match rng.below(3) {
        0 => RaidLevel::Raid1 {
            read_policy: ReadPolicy::LeastOutstanding,
        },
        1 => RaidLevel::Raid1 {
            read_policy: ReadPolicy::RoundRobin,
        },
        _ => RaidLevel::Raid0 {
            stripe_unit_bytes: 512 << rng.below(8),
        },
    }
}

fn random_child(rng: &mut Prng, nest: bool) -> Box<dyn Device> {
    if nest && rng.below(4) == 0 {
        return Box::new(random_array(rng, false));
    }
    let capacity = (1 + rng.below(16)) << 20;
    let a_us = 1.0 + rng.below(200) as f64;
    let b_us = rng.below(10) as f64 / 2.0;
    let depth = [1, 2, 4, 32][rng.below(4) as usize];
    linear(capacity, a_us, b_us, depth)
}

fn random_array(rng: &mut Prng, nest: bool) -> ArrayDevice {
    let level = random_level(rng);
    let n = 1 + rng.below(4);
    let children = (0..n).map(|_| random_child(rng, nest)).collect();
    ArrayDevice::new(
        ArrayParams {
            level,
            queue_depth: [1, 3, 8, 64][rng.below(4) as usize],
        },
        children,
    )
    .expect("children of at least 1 MiB hold a stripe unit of at most 64 KiB")
}

fn random_requests(rng: &mut Prng, capacity: u64) -> Vec<Request> {
    let mut t = 0;
    (0..400)
        .map(|id| {
            t += match rng.below(3) {
                0 => 0,
                1 => rng.below(50_000),
                _ => rng.below(5_000_000),
            };
            let op = [Op::Read, Op::Write, Op::Trim, Op::Flush][rng.below(4) as usize];
            let len = ((1 + rng.below(256)) * 512).min(capacity);
            let offset = rng.below((capacity - len) / 512 + 1) * 512;
            match op {
                Op::Flush => req(id, op, 0, 0, t),
                _ => req(id, op, offset, len, t),
            }
        })
        .collect()
}

fn run_seed(seed: u64) -> Vec<Completion> {
    let mut rng = Prng::new(seed);
    let mut array = random_array(&mut rng, true);
    let requests = random_requests(&mut rng, array.capacity_bytes());
    let run = drive(&mut array, &requests);
    assert_eq!(run.failed_at, None);
    assert_each_completed_once(&requests, &run);
    for c in &run.completions {
        assert!(c.finish >= c.request.arrival);
    }
    let counter = |name: &str| {
        array
            .counters()
            .into_iter()
            .find(|c| c.name == name)
            .unwrap()
            .value
    };
    assert_eq!(counter("requests"), requests.len() as f64);
    assert_eq!(counter("lost_pieces"), 0.0);
    run.completions
}

#[test]
fn random_arrays_complete_every_request_once_and_deterministically() {
    let base = base_seed();
    for seed in base..base + SEEDS {
        println!("seed {seed} (STORSIM_TEST_SEED={seed} replays it first)");
        let first = run_seed(seed);
        let second = run_seed(seed);
        assert_eq!(first, second, "seed {seed}: two runs differ");
    }
}
