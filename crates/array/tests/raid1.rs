//! RAID-1: writes reach every copy, reads one; the read policies; running on after a child
//! fails.

mod support;

use storsim_array::{ArrayDevice, ArrayParams, RaidLevel, ReadPolicy};
use storsim_core::conformance::counter;
use storsim_core::{Device, DeviceError, Op, Request, SimTime};
use support::*;

fn raid1(policy: ReadPolicy, queue_depth: usize, children: Vec<Box<dyn Device>>) -> ArrayDevice {
    ArrayDevice::new(
        ArrayParams {
            level: RaidLevel::Raid1 {
                read_policy: policy,
            },
            queue_depth,
        },
        children,
    )
    .expect("a valid array")
}

fn recorded_children(capacities: &[u64]) -> (Vec<Box<dyn Device>>, Vec<SharedLog>) {
    capacities
        .iter()
        .map(|&c| recorded(linear(c, 20.0, 2.0, 16)))
        .unzip()
}

#[test]
fn raid1_writes_reach_every_child_and_reads_exactly_one() {
    let (children, logs) = recorded_children(&[1 << 24, 1 << 26, 1 << 25]);
    let mut array = raid1(ReadPolicy::LeastOutstanding, 16, children);
    // The mirror is as large as its smallest copy.
    assert_eq!(array.capacity_bytes(), 1 << 24);
    let write = req(0, Op::Write, 8192, 16384, 0);
    let read = req(1, Op::Read, 8192, 4096, 1_000_000);
    let run = drive(&mut array, &[write, read]);
    assert_each_completed_once(&[write, read], &run);
    let mut readers = 0;
    for log in &logs {
        let log = log.lock().unwrap();
        let writes: Vec<&Request> = log
            .submitted
            .iter()
            .map(|(_, r)| r)
            .filter(|r| r.op == Op::Write)
            .collect();
        assert_eq!(writes.len(), 1);
        assert_eq!((writes[0].offset_bytes, writes[0].len_bytes), (8192, 16384));
        readers += log
            .submitted
            .iter()
            .filter(|(_, r)| r.op == Op::Read)
            .count();
    }
    assert_eq!(readers, 1, "a read goes to one copy");
    // The write is done when the slowest copy is.
    let write_done = run.completions.iter().find(|c| c.request.id == 0).unwrap();
    let latest = logs
        .iter()
        .map(|l| {
            l.lock()
                .unwrap()
                .completed
                .iter()
                .filter(|c| c.request.op == Op::Write)
                .map(|c| c.finish)
                .max()
                .unwrap()
        })
        .max()
        .unwrap();
    assert_eq!(write_done.finish, latest);
}

#[test]
fn least_outstanding_spreads_simultaneous_reads_over_every_copy() {
    let (children, logs) = recorded_children(&[1 << 24; 3]);
    let mut array = raid1(ReadPolicy::LeastOutstanding, 16, children);
    let reads: Vec<Request> = (0..9)
        .map(|i| req(i, Op::Read, i * 4096, 4096, 0))
        .collect();
    let run = drive(&mut array, &reads);
    assert_each_completed_once(&reads, &run);
    let per_child: Vec<usize> = logs
        .iter()
        .map(|l| l.lock().unwrap().submitted.len())
        .collect();
    // With all nine outstanding at once, each pick goes to a least-loaded copy.
    assert_eq!(per_child, [3, 3, 3]);
    // Three copies serve in parallel: the last read finishes after three services, not nine.
    let one = logs[0].lock().unwrap().completed[0].service().as_ns();
    let makespan = run.completions.iter().map(|c| c.finish).max().unwrap();
    assert_eq!(makespan, SimTime(3 * one));
}

#[test]
fn least_outstanding_prefers_the_idle_copy_over_the_busy_one() {
    let (children, logs) = recorded_children(&[1 << 24; 2]);
    let mut array = raid1(ReadPolicy::LeastOutstanding, 16, children);
    // A long read occupies child 0 (ties go to the lowest index); the short reads that arrive
    // while it runs all go to child 1 one at a time, because each finishes before the next
    // arrives and child 0 still holds the long one.
    let mut requests = vec![req(0, Op::Read, 0, 1 << 20, 0)];
    requests.extend((1..5).map(|i| req(i, Op::Read, 0, 512, i * 30_000)));
    let run = drive(&mut array, &requests);
    assert_each_completed_once(&requests, &run);
    assert_eq!(logs[0].lock().unwrap().submitted.len(), 1);
    assert_eq!(logs[1].lock().unwrap().submitted.len(), 4);
}

#[test]
fn round_robin_alternates_between_copies() {
    let (children, logs) = recorded_children(&[1 << 24; 2]);
    let mut array = raid1(ReadPolicy::RoundRobin, 16, children);
    // One at a time, so that load cannot be what spreads them.
    let reads: Vec<Request> = (0..6)
        .map(|i| req(i, Op::Read, i * 512, 512, i * 1_000_000))
        .collect();
    let run = drive(&mut array, &reads);
    assert_each_completed_once(&reads, &run);
    for (i, log) in logs.iter().enumerate() {
        let starts: Vec<SimTime> = log
            .lock()
            .unwrap()
            .submitted
            .iter()
            .map(|(t, _)| *t)
            .collect();
        let expected: Vec<SimTime> = reads.iter().skip(i).step_by(2).map(|r| r.arrival).collect();
        assert_eq!(starts, expected, "child {i}");
    }
}

#[test]
fn raid1_runs_on_the_survivor_after_a_child_fails_and_fails_when_none_is_left() {
    // Child 0 accepts three pieces, then fails; child 1 accepts eight.
    let (c0, log0) = recorded(fails_after(linear(1 << 24, 20.0, 2.0, 16), 3));
    let (c1, log1) = recorded(fails_after(linear(1 << 24, 20.0, 2.0, 16), 8));
    let mut array = raid1(ReadPolicy::LeastOutstanding, 16, vec![c0, c1]);
    // R W R R, then W R alternately, one at a time: with nothing outstanding every read goes
    // to child 0 while it lives (ties go to the lowest index).
    let ops = [Op::Read, Op::Write, Op::Read, Op::Read];
    let requests: Vec<Request> = (0..20u64)
        .map(|i| {
            let op = match ops.get(i as usize) {
                Some(&op) => op,
                None if i % 2 == 0 => Op::Write,
                None => Op::Read,
            };
            req(i, op, i * 4096, 4096, i * 1_000_000)
        })
        .collect();
    let run = drive(&mut array, &requests);
    assert_each_completed_once(&requests, &run);
    // Child 0 takes R0, W1 and R2, then fails on R3, which is redirected to child 1. From
    // then on child 1 serves everything until its own eight are used up (W1 R3 W4 R5 W6 R7
    // W8 R9); the writes W4, W6 and W8 are degraded (one copy), and W10 finds no copy left.
    assert_eq!(log0.lock().unwrap().submitted.len(), 3);
    assert_eq!(log1.lock().unwrap().submitted.len(), 8);
    assert_eq!(run.failed_at, Some(10));
    assert_eq!(counter(&array, "redirected_reads"), 1.0);
    assert_eq!(counter(&array, "degraded_pieces"), 3.0);
    assert_eq!(counter(&array, "failed_children"), 2.0);
    assert_eq!(counter(&array, "lost_pieces"), 0.0);
    assert!(matches!(
        array.submit(SimTime(1 << 40), req(99, Op::Read, 0, 512, 1 << 40)),
        Err(DeviceError::Failed { .. })
    ));
}

#[test]
fn raid1_out_of_range_is_refused_with_out_of_range() {
    let (children, _) = recorded_children(&[1 << 20, 1 << 21]);
    let mut array = raid1(ReadPolicy::LeastOutstanding, 4, children);
    let r = req(0, Op::Write, (1 << 20) - 4096, 8192, 0);
    assert_eq!(
        array.submit(SimTime(0), r),
        Err(DeviceError::OutOfRange {
            offset_bytes: r.offset_bytes,
            len_bytes: r.len_bytes,
            capacity_bytes: 1 << 20
        })
    );
    assert_eq!(array.next_deadline(), None);
}
