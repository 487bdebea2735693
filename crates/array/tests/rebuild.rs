//! RAID-5 and RAID-6 rebuild onto a spare: its finishing time at a rate on an idle array, from
//! the members' cost formula; reads served by the spare once it holds a row; a member failed
//! mid-run by a faults layer rebuilt while host I/O goes on, with no host request failing.

mod support;

use storsim_core::conformance::counter;
use storsim_core::{Device, Op, SimTime};
use support::*;

const CHUNK: u64 = 64 * 1024;
const ROWS: u64 = 16;

/// 1 ms of rebuild per 64 KiB row: 65,536,000 bytes/s.
const RATE: u64 = CHUNK * 1000;

fn member() -> Box<dyn Device> {
    // 50 µs + 2 µs/KiB: a 64 KiB chunk takes 178 µs.
    linear(ROWS * CHUNK, 50.0, 2.0, 16)
}

/// Advances an idle array through its own work until it has none.
fn settle(array: &mut dyn Device) -> SimTime {
    let mut done = Vec::new();
    let mut now = SimTime::ZERO;
    while let Some(t) = array.next_deadline() {
        now = t;
        array.advance(t, &mut done);
    }
    assert!(done.is_empty(), "no host request was made");
    now
}

/// Member 1 of a RAID-5 of 3 fails at 2 ms with a spare standing by. Row k of 16 starts at
/// 2 ms + k ms (the rate), reads its chunk from the two survivors in parallel (178 µs) and
/// then writes the spare (178 µs): each row takes 356 µs, less than the 1 ms between rows,
/// so the last row starts at 17 ms and the rebuild ends at 17.356 ms.
#[test]
fn an_idle_rebuild_ends_when_the_rate_says() {
    for parities in [1, 2] {
        let n = 2 + parities;
        let (spare, spare_log) = recorded(member());
        let mut array = parity_array(
            parities,
            CHUNK,
            8,
            (0..n).map(|_| member()).collect(),
            Some(spare),
            Some((1, 2_000_000)),
            RATE,
        );
        let end = settle(&mut array);
        assert_eq!(
            array.rebuild_end(),
            Some(SimTime(17_356_000)),
            "raid with {parities} parities"
        );
        assert_eq!(end, SimTime(17_356_000));
        assert_eq!(counter(&array, "rebuild_rows"), ROWS as f64);
        assert_eq!(counter(&array, "rebuild_bytes"), (ROWS * CHUNK) as f64);
        assert_eq!(counter(&array, "rebuild_progress"), 1.0);
        assert_eq!(counter(&array, "rebuild_start_ns"), 2_000_000.0);
        assert_eq!(counter(&array, "rebuild_end_ns"), 17_356_000.0);
        // The spare got every row once, in order, and each row's survivors were read once.
        let log = spare_log.lock().unwrap();
        let rows: Vec<(Op, u64, u64)> = log
            .submitted
            .iter()
            .map(|(_, r)| (r.op, r.offset_bytes, r.len_bytes))
            .collect();
        let expected: Vec<(Op, u64, u64)> =
            (0..ROWS).map(|k| (Op::Write, k * CHUNK, CHUNK)).collect();
        assert_eq!(rows, expected);
        assert_eq!(counter(&array, "child0_read_bytes"), (ROWS * CHUNK) as f64);
        assert_eq!(counter(&array, "child1_read_bytes"), 0.0);
    }
}

/// When the members are slower than the rate, they bound the rebuild: at 1 GB/s every row is
/// due at once, and all 16 fit the window (1 MiB a member: 16 chunks of 64 KiB). Each member
/// serves one piece at a time, so a survivor finishes row k's read at (k + 1)·178 µs; the
/// spare writes row k once that read is done and its previous write is, so row k's write ends
/// at (k + 2)·178 µs, the last at 17 · 178 µs = 3.026 ms.
#[test]
fn a_fast_rate_is_bounded_by_the_members() {
    let mut array = parity_array(
        1,
        CHUNK,
        8,
        (0..3).map(|_| member()).collect(),
        Some(member()),
        Some((0, 0)),
        1_000_000_000,
    );
    let end = settle(&mut array);
    assert_eq!(end, SimTime(17 * 178_000));
    assert_eq!(array.rebuild_end(), Some(end));
}

/// Once the rebuild has finished, the failed member's chunks are read from the spare: one
/// read, no reconstruction.
#[test]
fn after_the_rebuild_the_spare_serves_the_member() {
    let (spare, spare_log) = recorded(member());
    let mut array = parity_array(
        1,
        CHUNK,
        8,
        (0..3).map(|_| member()).collect(),
        Some(spare),
        Some((1, 0)),
        RATE,
    );
    let end = settle(&mut array);
    spare_log.lock().unwrap().submitted.clear();
    // Row 0 of a RAID-5 of 3: P on member 2, data 0 on member 0, data 1 on member 1.
    let r = req(0, Op::Read, CHUNK, CHUNK, end.0 + 1000);
    let run = drive(&mut array, &[r]);
    assert!(run.completions[0].status.is_ok());
    let log = spare_log.lock().unwrap();
    assert_eq!(log.submitted.len(), 1);
    assert_eq!(
        (log.submitted[0].1.op, log.submitted[0].1.offset_bytes),
        (Op::Read, 0)
    );
    assert_eq!(counter(&array, "degraded_reads"), 0.0);
}

/// A member behind a faults layer fails (every request from 5 ms on completes with
/// `device_failed`) while a random load runs on a RAID-5 and a RAID-6 with a spare: the array
/// marks it failed, rebuilds onto the spare, and every host request succeeds.
#[test]
fn a_member_failing_mid_run_is_rebuilt_and_no_request_fails() {
    use storsim_faults::{FaultKind, FaultPlan, FaultRule, FaultsDevice};
    for parities in [1, 2] {
        let n = 3 + parities;
        let plan = FaultPlan {
            rules: vec![FaultRule {
                from_ns: 5_000_000,
                ..FaultRule::always(FaultKind::Fail)
            }],
            seed: 7,
            ..FaultPlan::default()
        };
        let members: Vec<Box<dyn Device>> = (0..n)
            .map(|i| {
                if i == 2 {
                    Box::new(FaultsDevice::new(member(), &plan)) as Box<dyn Device>
                } else {
                    member()
                }
            })
            .collect();
        let mut array = parity_array(
            parities,
            CHUNK,
            16,
            members,
            Some(member()),
            None,
            20 * RATE,
        );
        array.enable_fault_counters();
        let capacity = array.capacity_bytes();
        let mut prng = storsim_core::Prng::new(3);
        let requests: Vec<_> = (0..3000u64)
            .map(|i| {
                let len = (1 + prng.below(32)) * 4096;
                let offset = prng.below((capacity - len) / 4096) * 4096;
                let op = if prng.below(2) == 0 {
                    Op::Read
                } else {
                    Op::Write
                };
                req(i, op, offset, len, i * 20_000)
            })
            .collect();
        let run = drive(&mut array, &requests);
        assert_each_completed_once(&requests, &run);
        assert!(
            run.completions.iter().all(|c| c.status.is_ok()),
            "{parities} parities"
        );
        assert_eq!(counter(&array, "member_failures"), 1.0);
        assert_eq!(counter(&array, "failed_children"), 1.0);
        assert!(counter(&array, "degraded_reads") > 0.0);
        let end = array
            .rebuild_end()
            .expect("the rebuild finished during the run");
        assert!(end > SimTime(5_000_000));
        assert_eq!(counter(&array, "rebuild_progress"), 1.0);
    }
}
