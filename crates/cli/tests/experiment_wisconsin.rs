//! The Wisconsin experiments (seed 000, `experiments/wisconsin/`) at their quick size: time
//! against amount on `wisconsin-usb` for sequential and random reads and writes (Figs 1-4).

mod common;

use common::experiment::{run_sweep, Results};
use common::temp_dir;

/// (amount in requests, run time in ns) for one pattern, in increasing amount.
fn curve(results: &Results, rw: &str) -> Vec<(u64, u64)> {
    let mut points: Vec<(u64, u64)> = results
        .select(&[("workload.rw", rw)])
        .into_iter()
        .map(|row| {
            (
                results.number(row, "workload.requests") as u64,
                results.number(row, "run.end_ns") as u64,
            )
        })
        .collect();
    points.sort();
    assert!(points.len() > 50, "{rw}: {} amounts", points.len());
    points
}

/// The run time at `amount` requests.
fn at(curve: &[(u64, u64)], amount: u64) -> u64 {
    curve
        .iter()
        .find(|(n, _)| *n == amount)
        .unwrap_or_else(|| panic!("no amount {amount} in the sweep"))
        .1
}

/// How many steps (spikes) a run of `amount` requests pays: the first request is random, and
/// the spikes fall on the sequential requests the seed's schedule counts off, the intervals
/// `schedule` lists, the last one repeating.
fn steps(amount: u64, schedule: &[u64]) -> u64 {
    let sequential = amount.saturating_sub(1);
    let (mut at, mut count) = (0, 0);
    for i in 0.. {
        at += schedule[i.min(schedule.len() - 1)];
        if at > sequential {
            return count;
        }
        count += 1;
    }
    unreachable!()
}

/// The seed's step schedules: Appendix B (reads: the threshold starts at 32 and doubles while
/// below 256) and Appendix A (writes: 195, then 256).
const READ_SCHEDULE: [u64; 4] = [32, 64, 128, 256];
const WRITE_SCHEDULE: [u64; 2] = [195, 256];

#[test]
fn sequential_runs_climb_the_seeds_staircases() {
    let dir = temp_dir("wisconsin-sequential");
    let results = run_sweep("experiments/wisconsin/sequential.toml", dir.path());

    // Reads (Fig 1): flat between steps (no per-request sequential delay in the seed), a jump
    // of one spike exactly where the schedule puts a step and nowhere else.
    let reads = curve(&results, "read");
    let random = at(&reads, 1);
    let spike = at(&reads, 33) - at(&reads, 32);
    assert!(spike > 0, "no step after 32 sequential reads: {reads:?}");
    for &(n, t) in &reads {
        assert_eq!(t, random + spike * steps(n, &READ_SCHEDULE), "read {n}");
    }
    // The steps the quick grid brackets: after 32, 96, 224 and 480 sequential reads.
    for n in [33, 97, 225, 481] {
        assert_eq!(at(&reads, n) - at(&reads, n - 1), spike, "read step at {n}");
    }

    // Writes (Fig 3): a slope between steps, steps after 195 and then every 256 sequential
    // writes, and the compensation: the run's first write paid the random delay, so the
    // excess over a sequential write is taken off the writes that follow until used up.
    let writes = curve(&results, "write");
    let random = at(&writes, 1);
    let sequential = (at(&writes, 40) - at(&writes, 32)) / 8;
    let spike = at(&writes, 196) - at(&writes, 195) - sequential;
    assert!(
        sequential > 0 && spike > 0 && random > sequential,
        "{writes:?}"
    );
    assert_eq!(
        at(&writes, 2),
        random,
        "the second write is free: compensation"
    );
    let excess = random - sequential;
    for &(n, t) in &writes {
        let paid = ((n - 1) * sequential).saturating_sub(excess);
        let expected = random + paid + spike * steps(n, &WRITE_SCHEDULE);
        assert_eq!(t, expected, "write {n}");
    }
    for n in [196, 452] {
        assert_eq!(
            at(&writes, n) - at(&writes, n - 1),
            sequential + spike,
            "write step at {n}"
        );
    }
    // Writes cost more than reads at every amount, as on the paper's stick.
    for (&(n, r), &(_, w)) in reads.iter().zip(&writes) {
        assert!(w > r, "amount {n}");
    }
}

#[test]
fn random_requests_grow_linearly() {
    let dir = temp_dir("wisconsin-random");
    let results = run_sweep("experiments/wisconsin/random.toml", dir.path());
    // Figs 2 and 4: every request pays the random delay, so time is proportional to amount.
    let reads = curve(&results, "randread");
    let writes = curve(&results, "randwrite");
    for curve in [&reads, &writes] {
        let one = at(curve, 1);
        for &(n, t) in curve.iter() {
            assert_eq!(t, n * one, "amount {n}");
        }
    }
    assert!(at(&writes, 1) > at(&reads, 1));
    // No random request was taken for sequential: the device counted none.
    for row in 0..results.rows.len() {
        for counter in ["sr_requests", "sw_requests"] {
            let name = format!("device.counters.{counter}");
            assert_eq!(results.number(row, &name), 0.0, "row {row}");
        }
    }
}
