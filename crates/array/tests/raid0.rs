//! RAID-0: where the pieces of a host request land, the throughput striping buys, and the
//! requests that cover every child (flush) or only some (trim).

mod support;

use storsim_array::{ArrayDevice, ArrayParams, RaidLevel};
use storsim_blackbox::linear::LinearCost;
use storsim_core::{Device, DeviceError, Op, Prng, Request, SimTime};
use support::*;

/// Where array byte `b` lives, computed one 512-byte sector at a time from the definition
/// (unit k = b / S on child k mod n, row k / n), independently of the array's range splitting.
fn sector_home(b: u64, stripe_unit_bytes: u64, n: u64) -> (usize, u64) {
    let unit = b / stripe_unit_bytes;
    let child = (unit % n) as usize;
    let row = unit / n;
    (child, row * stripe_unit_bytes + b % stripe_unit_bytes)
}

#[test]
fn raid0_request_spanning_several_units_lands_on_the_right_children_at_the_right_offsets() {
    let n = 3u64;
    let stripe = 8 << 10;
    let mut logs = Vec::new();
    let mut children = Vec::new();
    for _ in 0..n {
        let (child, log) = recorded(linear(1 << 30, 10.0, 1.0, 64));
        children.push(child);
        logs.push(log);
    }
    let mut array = raid0(stripe, 64, children);
    // Requests inside one unit, across a unit boundary, over exactly n units, over more than
    // one row (so a child gets consecutive units), unaligned to units but whole sectors.
    let mut cases: Vec<(u64, u64)> = vec![
        (0, 512),
        (stripe - 512, 1024),
        (0, n * stripe),
        (3 * stripe + 1024, 7 * stripe + 2560),
        (5 * stripe, 2 * stripe),
        (stripe / 2, n * stripe * 4 + 512),
    ];
    let mut rng = Prng::new(11);
    for _ in 0..40 {
        let offset = rng.below(4096) * 512;
        let len = (1 + rng.below(200)) * 512;
        cases.push((offset, len));
    }
    for (id, &(offset, len)) in cases.iter().enumerate() {
        for log in &logs {
            log.lock().unwrap().submitted.clear();
        }
        let request = req(id as u64, Op::Read, offset, len, 0);
        let run = drive(&mut array, &[request]);
        assert_each_completed_once(&[request], &run);

        // The independent expectation: each child's sectors, in array order.
        let mut expected: Vec<Vec<u64>> = vec![Vec::new(); n as usize];
        for sector in 0..len / 512 {
            let (child, child_offset) = sector_home(offset + sector * 512, stripe, n);
            expected[child].push(child_offset);
        }
        for (child, log) in logs.iter().enumerate() {
            let log = log.lock().unwrap();
            let got: Vec<u64> = log
                .submitted
                .iter()
                .flat_map(|(_, r)| (0..r.len_bytes / 512).map(move |s| r.offset_bytes + s * 512))
                .collect();
            assert_eq!(
                got, expected[child],
                "request [{offset}, +{len}): child {child}'s sectors"
            );
            // Contiguous pieces on one child are merged: at most one child request each.
            assert!(
                log.submitted.len() <= 1,
                "request [{offset}, +{len}) sent child {child} {} pieces",
                log.submitted.len()
            );
        }
    }
}

#[test]
fn raid0_of_n_identical_linear_children_gives_n_times_the_throughput_of_one() {
    let (a_us, b_us_per_kib) = (50.0, 4.0);
    let cost = LinearCost::from_us(a_us, b_us_per_kib);
    let request_bytes = 1 << 20;
    let requests = 16u64;
    for n in [1u64, 2, 4, 8] {
        let stripe = request_bytes / n;
        let children = (0..n)
            .map(|_| linear(1 << 32, a_us, b_us_per_kib, 64))
            .collect();
        let mut array = raid0(stripe, 64, children);
        // Everything arrives at once, one stripe row per request.
        let stream: Vec<Request> = (0..requests)
            .map(|i| req(i, Op::Read, i * request_bytes, request_bytes, 0))
            .collect();
        let run = drive(&mut array, &stream);
        assert_each_completed_once(&stream, &run);
        // Each child is one FIFO server that serves one `stripe`-byte piece per request, in
        // order; request i is done when piece i is, on every child at the same instant.
        let piece_ns = cost.service(stripe).as_ns();
        for c in &run.completions {
            let expected = (c.request.id + 1) * piece_ns;
            assert_eq!(
                c.finish,
                SimTime(expected),
                "request {} with {n} children",
                c.request.id
            );
        }
        let makespan = run.completions.iter().map(|c| c.finish).max().unwrap();
        let one_child_makespan = requests * cost.service(request_bytes).as_ns();
        let speedup = one_child_makespan as f64 / makespan.as_ns() as f64;
        // The per-request cost A is paid on every child, so the speedup approaches n as the
        // transfer part dominates: here A is under 2 % of a 1 MiB child transfer.
        assert!(
            speedup > 0.9 * n as f64 && speedup <= n as f64 + 1e-9,
            "{n} children: speedup {speedup}"
        );
    }
}

#[test]
fn raid0_flush_reaches_every_child_and_trim_only_the_children_holding_the_range() {
    let stripe = 4096;
    let mut logs = Vec::new();
    let mut children = Vec::new();
    for _ in 0..4 {
        let (child, log) = recorded(linear(1 << 24, 10.0, 1.0, 8));
        children.push(child);
        logs.push(log);
    }
    let mut array = raid0(stripe, 8, children);
    // Units 1 and 2: children 1 and 2.
    let trim = req(0, Op::Trim, stripe, 2 * stripe, 0);
    let flush = req(1, Op::Flush, 0, 0, 1);
    let run = drive(&mut array, &[trim, flush]);
    assert_each_completed_once(&[trim, flush], &run);
    let ops = |i: usize| -> Vec<Op> {
        logs[i]
            .lock()
            .unwrap()
            .submitted
            .iter()
            .map(|(_, r)| r.op)
            .collect()
    };
    assert_eq!(ops(0), [Op::Flush]);
    assert_eq!(ops(1), [Op::Trim, Op::Flush]);
    assert_eq!(ops(2), [Op::Trim, Op::Flush]);
    assert_eq!(ops(3), [Op::Flush]);
    // The flush completes when the slowest child's flush does: each child serves its queue in
    // order, so that is after the trims.
    let flush_done = run.completions.iter().find(|c| c.request.id == 1).unwrap();
    let latest_child_flush = logs
        .iter()
        .flat_map(|l| {
            l.lock()
                .unwrap()
                .completed
                .iter()
                .filter(|c| c.request.op == Op::Flush)
                .map(|c| c.finish)
                .collect::<Vec<_>>()
        })
        .max()
        .unwrap();
    assert_eq!(flush_done.finish, latest_child_flush);
}

#[test]
fn raid0_capacity_is_whole_rows_of_the_smallest_child_and_beyond_it_is_out_of_range() {
    let stripe = 64 << 10;
    // The smallest child holds 3.5 units: 3 whole rows.
    let children = vec![
        linear(stripe * 7 / 2, 10.0, 1.0, 4),
        linear(1 << 30, 10.0, 1.0, 4),
    ];
    let mut array = raid0(stripe, 4, children);
    assert_eq!(array.capacity_bytes(), 2 * 3 * stripe);
    let cap = array.capacity_bytes();
    let past = req(0, Op::Read, cap - 512, 1024, 0);
    assert_eq!(
        array.submit(SimTime(0), past),
        Err(DeviceError::OutOfRange {
            offset_bytes: cap - 512,
            len_bytes: 1024,
            capacity_bytes: cap
        })
    );
    // Refusal leaves the array idle; the last sector is still in range.
    assert_eq!(array.next_deadline(), None);
    let last = req(1, Op::Write, cap - 512, 512, 0);
    let run = drive(&mut array, &[last]);
    assert_each_completed_once(&[last], &run);
}

#[test]
fn raid0_parameters_that_describe_no_array_are_refused() {
    let build = |stripe: u64, depth: usize, children: Vec<Box<dyn Device>>| {
        ArrayDevice::new(
            ArrayParams {
                level: RaidLevel::Raid0 {
                    stripe_unit_bytes: stripe,
                },
                queue_depth: depth,
            },
            children,
        )
        .err()
    };
    assert!(build(4096, 4, Vec::new())
        .unwrap()
        .contains("at least one child"));
    assert!(build(1000, 4, vec![linear(1 << 20, 1.0, 1.0, 1)])
        .unwrap()
        .contains("multiple of 512"));
    assert!(build(0, 4, vec![linear(1 << 20, 1.0, 1.0, 1)])
        .unwrap()
        .contains("multiple of 512"));
    assert!(build(1 << 21, 4, vec![linear(1 << 20, 1.0, 1.0, 1)])
        .unwrap()
        .contains("less than one stripe unit"));
    assert!(build(4096, 0, vec![linear(1 << 20, 1.0, 1.0, 1)])
        .unwrap()
        .contains("queue depth"));
}

#[test]
fn raid0_child_failure_fails_the_array_cleanly() {
    let stripe = 4096;
    // Child 1 accepts two pieces, then fails.
    let children = vec![
        linear(1 << 24, 10.0, 1.0, 8),
        fails_after(linear(1 << 24, 10.0, 1.0, 8), 2),
    ];
    let mut array = raid0(stripe, 8, children);
    // Each request covers both children; the third finds child 1 failed on its second piece,
    // after child 0 took its first: that request is accepted, its lost piece counted, and
    // the array refuses everything after it.
    let requests: Vec<Request> = (0..6)
        .map(|i| req(i, Op::Write, i * 2 * stripe, 2 * stripe, i * 1000))
        .collect();
    let run = drive(&mut array, &requests);
    assert_eq!(run.failed_at, Some(3));
    assert_each_completed_once(&requests, &run);
    let counter = |name: &str| {
        array
            .counters()
            .into_iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("no counter {name}"))
            .value
    };
    assert_eq!(counter("lost_pieces"), 1.0);
    assert_eq!(counter("failed_children"), 1.0);
    assert_eq!(counter("requests"), 3.0);
    assert!(matches!(
        array.submit(SimTime(1 << 30), req(9, Op::Read, 0, 512, 1 << 30)),
        Err(DeviceError::Failed { .. })
    ));
}
