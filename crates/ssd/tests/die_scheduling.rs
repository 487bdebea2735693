//! The die scheduling policies through the SSD: a write's completion that a later read
//! delays, worked out by hand; the policy's counters per operation kind, listed only when the
//! policy is not FIFO; reads faster under the policies that favour them.

use storsim_core::{Completion, Device, Op, Prng, Request, SimDuration, SimTime};
use storsim_flash::{DieScheduling, SuspendKinds, Suspension};
use storsim_ssd::{SsdDevice, SsdParams, WriteBuffer};

#[allow(dead_code)]
mod support;
use support::{counter, hand_timed, CMD_NS, PAGE, TPROG_NS, TR_NS, XFER_NS};

/// A page program on an idle die: command + data in, then tPROG (511,240 ns).
const PROGRAM_NS: u64 = CMD_NS + XFER_NS + TPROG_NS;
/// A page read on an idle die: command, tR, command + data out (62,240 ns).
const READ_NS: u64 = CMD_NS + TR_NS + CMD_NS + XFER_NS;

fn suspension() -> Suspension {
    Suspension {
        kinds: SuspendKinds::ProgramErase,
        program_latency: SimDuration(5_000),
        erase_latency: SimDuration(10_000),
        resume_overhead: SimDuration(5_000),
        max_suspensions: 4,
        min_run: SimDuration::ZERO,
    }
}

/// Submits `requests` (arrival, op, page) in order of arrival, collecting completions as the
/// device announces them; returns every completion, in the order they came.
fn drive(d: &mut SsdDevice, requests: &[(u64, Op, u64)]) -> Vec<Completion> {
    let mut done = Vec::new();
    let drain = |d: &mut SsdDevice, until: Option<SimTime>, done: &mut Vec<Completion>| {
        while let Some(t) = d.next_deadline() {
            if until.is_some_and(|u| t > u) {
                break;
            }
            d.advance(t, done);
        }
    };
    for (id, &(at, op, page)) in requests.iter().enumerate() {
        let now = SimTime(at);
        drain(d, Some(now), &mut done);
        d.advance(now, &mut done);
        let request = Request {
            id: id as u64,
            op,
            offset_bytes: page * PAGE,
            len_bytes: PAGE,
            arrival: now,
            flow: 0,
        };
        d.submit(now, request).expect("accepted");
    }
    drain(d, None, &mut done);
    done
}

fn finish_of(done: &[Completion], id: u64) -> u64 {
    done.iter()
        .find(|c| c.request.id == id)
        .expect("completed")
        .finish
        .as_ns()
}

/// Two writes at 0 on a one-die device without a buffer (the second queued behind the
/// first), a read of the first's page at 100 µs: the three finishes.
fn two_writes_and_a_read(policy: DieScheduling) -> (u64, u64, u64) {
    let mut p = hand_timed(1, 1, 1, 64, 8);
    p.die_scheduling = policy;
    let mut d = SsdDevice::new(p).unwrap();
    let done = drive(
        &mut d,
        &[(0, Op::Write, 0), (0, Op::Write, 1), (100_000, Op::Read, 0)],
    );
    (
        finish_of(&done, 0),
        finish_of(&done, 1),
        finish_of(&done, 2),
    )
}

#[test]
fn a_later_read_delays_the_queued_write_that_it_passes() {
    // FIFO: the programs run back to back (511,240 and 1,022,480); the read follows them.
    let fifo = two_writes_and_a_read(DieScheduling::Fifo);
    assert_eq!(fifo, (PROGRAM_NS, 2 * PROGRAM_NS, 2 * PROGRAM_NS + READ_NS));
    // Read priority: the first program runs to its end; the read follows at once (its
    // transfers go before the second program's) and ends at 511,240 + 62,240 = 573,480. The
    // second program, placed to start at 511,240, starts then instead, and its write completes
    // 62,240 ns later than placed, at 1,084,720.
    let (first, second, read) = two_writes_and_a_read(DieScheduling::ReadPriority);
    assert_eq!(first, PROGRAM_NS);
    assert_eq!(read, PROGRAM_NS + READ_NS);
    assert_eq!(second, 2 * PROGRAM_NS + READ_NS);
    // Suspend: the first program pauses 5 µs after the read arrives; the read runs from
    // 105,000 to 167,240; the program resumes 5 µs later, 67,240 ns behind its placed
    // finish, and the second write moves as much.
    let (first, second, read) = two_writes_and_a_read(DieScheduling::Suspend(suspension()));
    assert_eq!(read, 105_000 + READ_NS);
    assert_eq!(first, PROGRAM_NS + READ_NS + 5_000);
    assert_eq!(second, 2 * PROGRAM_NS + READ_NS + 5_000);
}

/// A small two-die device under random overwrites (garbage collection erases) with reads
/// among them, under `policy`: the device and the mean read latency in ns.
fn mixed(policy: DieScheduling) -> (SsdDevice, f64) {
    mixed_with(policy, false, false)
}

/// As [`mixed`], with garbage collection's reads first when `gc_first`, and with `buffered`
/// a DRAM buffer and copies through the controller.
fn mixed_with(policy: DieScheduling, gc_first: bool, buffered: bool) -> (SsdDevice, f64) {
    let mut p: SsdParams = hand_timed(1, 2, 1, 32, 8);
    p.die_scheduling = policy;
    p.gc_reads_priority = gc_first;
    p.queue_depth = 64;
    if buffered {
        // Copies through the controller, so that garbage collection reads pages (a copy-back
        // keeps its read inside the plane, never a priority read), and a DRAM buffer, so that
        // writes queue programs on the dies ahead of the garbage collection that later writes
        // start with.
        p.copyback = false;
        p.queue_depth = 4096;
        p.write_buffer = Some(WriteBuffer {
            capacity_bytes: 64 * PAGE,
            latency: SimDuration(2_000),
        });
    }
    // With the buffer, writes spread over most of the space, so that victims hold valid
    // pages that garbage collection reads.
    let logical = if buffered { 400 } else { 160 };
    let mut d = SsdDevice::new(p).unwrap();
    let mut rng = Prng::new(38);
    let mut requests = Vec::new();
    let mut at = 0;
    for _ in 0..3_000 {
        at += rng.below(1_200_000);
        let op = if rng.below(3) == 0 {
            Op::Read
        } else {
            Op::Write
        };
        requests.push((at, op, rng.below(logical)));
    }
    let done = drive(&mut d, &requests);
    assert_eq!(done.len(), requests.len());
    let reads: Vec<u64> = done
        .iter()
        .filter(|c| c.request.op == Op::Read)
        .map(|c| c.finish.as_ns() - c.request.arrival.as_ns())
        .collect();
    let mean = reads.iter().sum::<u64>() as f64 / reads.len() as f64;
    (d, mean)
}

fn listed(d: &SsdDevice, name: &str) -> bool {
    d.counters().iter().any(|c| c.name == name)
}

#[test]
fn counters_per_kind_and_only_off_fifo() {
    let (fifo, fifo_read) = mixed(DieScheduling::Fifo);
    for name in [
        "die_reads_ahead",
        "die_program_suspensions",
        "die_erase_suspensions",
    ] {
        assert!(!listed(&fifo, name), "{name} listed under fifo");
    }
    let (priority, priority_read) = mixed(DieScheduling::ReadPriority);
    assert!(counter(&priority, "die_reads_ahead") > 0.0);
    assert_eq!(counter(&priority, "die_program_suspensions"), 0.0);
    assert_eq!(counter(&priority, "die_erase_suspensions"), 0.0);
    let (suspend, suspend_read) = mixed(DieScheduling::Suspend(suspension()));
    assert!(counter(&suspend, "die_program_suspensions") > 0.0);
    assert!(counter(&suspend, "die_erase_suspensions") > 0.0);
    assert!(counter(&suspend, "die_suspended_ns") > 0.0);
    assert!(
        counter(&fifo, "flash_erases_gc") > 0.0,
        "the run must collect garbage"
    );
    // Programs only: no erase is ever suspended.
    let programs = Suspension {
        kinds: SuspendKinds::Program,
        ..suspension()
    };
    let (only_programs, _) = mixed(DieScheduling::Suspend(programs));
    assert!(counter(&only_programs, "die_program_suspensions") > 0.0);
    assert_eq!(counter(&only_programs, "die_erase_suspensions"), 0.0);
    // Reads gain from each step.
    assert!(
        suspend_read < priority_read && priority_read < fifo_read,
        "mean read latency: suspend {suspend_read}, read-priority {priority_read}, fifo {fifo_read}"
    );
}

#[test]
fn garbage_collection_reads_go_first_when_asked() {
    // Garbage collection's reads going first too: more reads go before queued work than with
    // host reads alone, and every request still completes (checked in `mixed_with`).
    let (host_only, _) = mixed_with(DieScheduling::ReadPriority, false, true);
    let (with_gc, _) = mixed_with(DieScheduling::ReadPriority, true, true);
    assert!(counter(&with_gc, "flash_reads_gc") > 0.0);
    assert!(
        counter(&with_gc, "die_reads_ahead") > counter(&host_only, "die_reads_ahead"),
        "{} reads ahead with garbage collection's, {} without",
        counter(&with_gc, "die_reads_ahead"),
        counter(&host_only, "die_reads_ahead")
    );
}
