//! Children that complete pieces with an error (a faults layer over them): a RAID-1 mirror
//! marks a member that fails a write as failed and goes on degraded on the other copies, as
//! Linux md does; the host sees an error only when no copy succeeded. RAID-0, without a second
//! copy, passes the error up.

mod support;

use storsim_array::{ArrayDevice, ArrayParams, RaidLevel, ReadPolicy};
use storsim_core::conformance::counter;
use storsim_core::{Device, Op, Request, Status};
use storsim_faults::{FaultKind, FaultPlan, FaultRule, FaultsDevice};
use support::*;

const CAPACITY: u64 = 1 << 26;

/// A linear child behind a faults layer with `rules`, recorded.
fn faulty(rules: Vec<FaultRule>) -> (Box<dyn Device>, SharedLog) {
    let plan = FaultPlan {
        rules,
        ..FaultPlan::default()
    };
    recorded(Box::new(FaultsDevice::new(
        linear(CAPACITY, 20.0, 2.0, 16),
        &plan,
    )))
}

fn healthy() -> (Box<dyn Device>, SharedLog) {
    recorded(linear(CAPACITY, 20.0, 2.0, 16))
}

fn mirror(children: Vec<Box<dyn Device>>) -> ArrayDevice {
    let mut array = ArrayDevice::new(
        ArrayParams {
            level: RaidLevel::Raid1 {
                read_policy: ReadPolicy::LeastOutstanding,
            },
            queue_depth: 8,
        },
        children,
    )
    .expect("a valid array");
    array.enable_fault_counters();
    array
}

/// `writes` 16 KiB writes 100 µs apart, then as many reads of the same places from 1 s on, one
/// at a time (1 ms apart), so that each read finds both members idle.
fn writes_then_reads(writes: u64) -> Vec<Request> {
    let mut requests = Vec::new();
    for i in 0..writes {
        requests.push(req(i, Op::Write, i * 65536, 16384, i * 100_000));
    }
    for i in 0..writes {
        requests.push(req(
            writes + i,
            Op::Read,
            i * 65536,
            16384,
            1_000_000_000 + i * 1_000_000,
        ));
    }
    requests
}

#[test]
fn a_member_failing_every_write_is_dropped_and_the_mirror_goes_on_degraded() {
    let (bad, bad_log) = faulty(vec![FaultRule::always(FaultKind::WriteError)]);
    let (good, good_log) = healthy();
    let mut array = mirror(vec![bad, good]);
    let requests = writes_then_reads(20);
    let run = drive(&mut array, &requests);
    assert_each_completed_once(&requests, &run);
    // Every host write succeeded: the other copy has it.
    assert!(
        run.completions.iter().all(|c| c.status.is_ok()),
        "{:?}",
        run.completions.iter().find(|c| !c.status.is_ok())
    );
    assert_eq!(counter(&array, "member_failures"), 1.0);
    assert_eq!(counter(&array, "failed_children"), 1.0);
    // Only the writes it was given before it was marked failed reached it and failed; the
    // rest were dropped for it. Every write lacks its copy.
    let errors = counter(&array, "member_errors");
    assert!(errors >= 1.0);
    assert_eq!(
        errors,
        bad_log.lock().unwrap().submitted_count(Op::Write) as f64
    );
    assert_eq!(
        counter(&array, "degraded_pieces"),
        20.0 - errors,
        "the writes after the failure skip the failed member"
    );
    assert_eq!(counter(&array, "degraded_writes"), 20.0);
    // Every read is served by the surviving member, although the least-outstanding policy
    // sends reads that find both idle to child 0 (see the healthy mirror below).
    assert_eq!(bad_log.lock().unwrap().submitted_count(Op::Read), 0);
    assert_eq!(good_log.lock().unwrap().submitted_count(Op::Read), 20);
    assert_eq!(counter(&array, "child0_read_bytes"), 0.0);
    assert_eq!(counter(&array, "child1_read_bytes"), 20.0 * 16384.0);
    assert_eq!(counter(&array, "redirected_reads"), 0.0);

    // The same mirror without the fault: child 0 serves the reads, nothing is degraded.
    let (a, _) = healthy();
    let (b, _) = healthy();
    let mut array = mirror(vec![a, b]);
    let run = drive(&mut array, &requests);
    assert!(run.completions.iter().all(|c| c.status.is_ok()));
    assert_eq!(counter(&array, "child0_read_bytes"), 20.0 * 16384.0);
    for name in ["member_errors", "member_failures", "degraded_writes"] {
        assert_eq!(counter(&array, name), 0.0, "{name}");
    }
}

#[test]
fn when_no_copy_takes_a_write_the_host_write_fails_and_the_last_member_stays() {
    let rule = || vec![FaultRule::always(FaultKind::WriteError)];
    let (a, _) = faulty(rule());
    let (b, b_log) = faulty(rule());
    let mut array = mirror(vec![a, b]);
    let requests = writes_then_reads(10);
    let run = drive(&mut array, &requests);
    assert_each_completed_once(&requests, &run);
    assert_eq!(run.failed_at, None, "the array keeps its last member");
    for c in &run.completions {
        let expected = match c.request.op {
            Op::Write => Status::WriteError,
            _ => Status::Ok,
        };
        assert_eq!(c.status, expected, "{:?}", c.request);
    }
    // One member was dropped; the last one stays and serves every read, its write errors
    // reaching the host.
    assert_eq!(counter(&array, "member_failures"), 1.0);
    assert_eq!(counter(&array, "failed_children"), 1.0);
    assert_eq!(counter(&array, "degraded_writes"), 0.0);
    assert_eq!(b_log.lock().unwrap().submitted_count(Op::Read), 10);
}

#[test]
fn a_failed_trim_or_flush_drops_the_member_too() {
    // A read-only member fails trims and flushes as well as writes.
    for op in [Op::Trim, Op::Flush] {
        let (bad, _) = faulty(vec![FaultRule {
            op: Some(op),
            ..FaultRule::always(FaultKind::ReadOnly)
        }]);
        let (good, _) = healthy();
        let mut array = mirror(vec![bad, good]);
        let (offset, len) = if op == Op::Flush { (0, 0) } else { (0, 8192) };
        let requests = [
            req(0, op, offset, len, 0),
            req(1, Op::Write, 0, 4096, 1_000_000),
        ];
        let run = drive(&mut array, &requests);
        assert!(run.completions.iter().all(|c| c.status.is_ok()), "{op:?}");
        assert_eq!(counter(&array, "member_failures"), 1.0, "{op:?}");
        assert_eq!(counter(&array, "degraded_writes"), 2.0, "{op:?}");
        assert_eq!(counter(&array, "degraded_pieces"), 1.0, "{op:?}");
    }
}

#[test]
fn a_read_that_finds_a_member_failed_drops_it_but_a_media_error_does_not() {
    for (kind, dropped) in [(FaultKind::Fail, true), (FaultKind::ReadError, false)] {
        let (bad, bad_log) = faulty(vec![FaultRule {
            op: Some(Op::Read),
            ..FaultRule::always(kind)
        }]);
        let (good, _) = healthy();
        let mut array = mirror(vec![bad, good]);
        let requests: Vec<Request> = (0..4)
            .map(|i| req(i, Op::Read, i * 4096, 4096, i * 1_000_000))
            .collect();
        let run = drive(&mut array, &requests);
        assert!(run.completions.iter().all(|c| c.status.is_ok()), "{kind:?}");
        let reads_on_bad = bad_log.lock().unwrap().submitted_count(Op::Read);
        if dropped {
            // The first read found it failed and went to the other copy; no read after it
            // goes to the failed member.
            assert_eq!(counter(&array, "member_failures"), 1.0);
            assert_eq!(reads_on_bad, 1);
            assert_eq!(counter(&array, "redirected_reads"), 1.0);
        } else {
            // A bad sector is not a failed device: the member stays, each read tries it first
            // and is read again from the other copy.
            assert_eq!(counter(&array, "member_failures"), 0.0);
            assert_eq!(reads_on_bad, 4);
            assert_eq!(counter(&array, "redirected_reads"), 4.0);
        }
        assert_eq!(counter(&array, "member_errors"), reads_on_bad as f64);
    }
}

#[test]
fn raid0_has_no_other_copy_so_a_member_s_write_error_fails_the_host_write() {
    let (bad, _) = faulty(vec![FaultRule::always(FaultKind::WriteError)]);
    let (good, _) = healthy();
    let mut array = raid0(65536, 8, vec![bad, good]);
    array.enable_fault_counters();
    // Unit 0 is child 0's, unit 1 child 1's.
    let requests = [
        req(0, Op::Write, 0, 4096, 0),
        req(1, Op::Write, 65536, 4096, 1_000_000),
        req(2, Op::Write, 65536 - 4096, 8192, 2_000_000),
    ];
    let run = drive(&mut array, &requests);
    let status = |id| {
        run.completions
            .iter()
            .find(|c| c.request.id == id)
            .unwrap()
            .status
    };
    assert_eq!(status(0), Status::WriteError);
    assert_eq!(status(1), Status::Ok);
    assert_eq!(status(2), Status::WriteError);
    assert_eq!(counter(&array, "member_errors"), 2.0);
    assert_eq!(counter(&array, "member_failures"), 0.0);
    assert_eq!(counter(&array, "failed_children"), 0.0);
}

#[test]
fn the_error_counters_are_listed_only_when_asked_for() {
    let (a, _) = healthy();
    let (b, _) = healthy();
    let array = ArrayDevice::new(
        ArrayParams {
            level: RaidLevel::Raid1 {
                read_policy: ReadPolicy::RoundRobin,
            },
            queue_depth: 4,
        },
        vec![a, b],
    )
    .unwrap();
    assert!(!array.counters().iter().any(|c| [
        "member_errors",
        "member_failures",
        "degraded_writes"
    ]
    .contains(&c.name.as_str())));
}

/// A write's good copies count when it finishes, not when each is made: a copy on a member
/// that another write's error has taken out of the mirror since is no longer in the array.
#[test]
fn a_write_whose_only_good_copy_is_on_a_member_failed_since_fails() {
    // A member that never answers the writes to `sectors`; the host gives up after
    // `timeout_ns`, which takes the member out (or not, if it is the last).
    let hangs = |sectors: (u64, u64), timeout_ns: u64| {
        let plan = FaultPlan {
            rules: vec![FaultRule {
                sectors: Some(sectors),
                ..FaultRule::always(FaultKind::Hang)
            }],
            host_timeout_ns: timeout_ns,
            ..FaultPlan::default()
        };
        recorded(Box::new(FaultsDevice::new(
            linear(CAPACITY, 20.0, 2.0, 16),
            &plan,
        )))
    };
    // Both writes reach both members at once. Member 0 writes the second well within 0.1 ms,
    // then times out on the first at 1 ms and is marked failed; member 1 writes the first
    // well and times out on the second at 2 ms, as the last member, which stays.
    let (a, _) = hangs((0, 32), 1_000_000);
    let (b, _) = hangs((1024, 1056), 2_000_000);
    let mut array = mirror(vec![a, b]);
    let requests = [
        req(0, Op::Write, 0, 16384, 0),
        req(1, Op::Write, 1024 * 512, 16384, 0),
    ];
    let run = drive(&mut array, &requests);
    assert_each_completed_once(&requests, &run);
    let status = |id: u64| {
        run.completions
            .iter()
            .find(|c| c.request.id == id)
            .unwrap()
            .status
    };
    assert_eq!(
        status(0),
        Status::Ok,
        "its copy on member 1 is in the array"
    );
    assert_eq!(
        status(1),
        Status::Timeout,
        "its only good copy is on member 0, out of the array since"
    );
    assert_eq!(counter(&array, "member_failures"), 1.0);
    assert_eq!(counter(&array, "degraded_writes"), 1.0);
}
