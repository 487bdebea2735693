//! A request that stops the read-ahead while the heads are switching to its next track, as
//! DiskSim 4.0 has it: the heads end up on the new track, a read's seek waits for the rest of
//! the switch on top of its command overhead, and a write's only until the switch ends.
//!
//! The drive is the tests' small drive (10 sectors a track, a sector passes in 1 ms) with a
//! 0.4 ms head switch. A read of blocks 8..10, the end of track 0, starting at t = 0 with the
//! heads over sector 0, has its data at 10 ms; the read-ahead then switches to track 1, from
//! 10 to 10.4 ms. The second request arrives at 10.2 ms, mid-switch, and wants block 1 on
//! track 0, whose sector passes from 11 to 12 ms (and again from 21 to 22 ms).

// The shared helpers include `run_one`, which this file does not use.
#[allow(dead_code)]
mod support;
use storsim_core::conformance;
use storsim_core::{Op, Request};
use storsim_hdd::*;
use support::{req, small_drive};

const MS: u64 = 1_000_000;
/// When the second request arrives: 0.2 ms into the read-ahead's head switch.
const SECOND_AT: u64 = 10 * MS + 200_000;

fn params(write_overhead_ns: u64) -> HddParams {
    let mut p = small_drive();
    p.mechanics.head_switch_ns = 400_000;
    p.overheads.read_miss_after_read_ns = 250_000;
    p.overheads.write_miss_after_read_ns = write_overhead_ns;
    p.cache = CacheParams {
        enabled: true,
        segments: 2,
        read_ahead: ReadAhead::SegmentEnd,
        max_read_ahead_sectors: 20,
        ..p.cache
    };
    p
}

/// The second request's latency in ns, after the read of blocks 8..10 at t = 0.
fn second_latency_ns(p: HddParams, second: Request) -> u64 {
    let mut d = HddDevice::new(p).unwrap();
    let first = req(0, Op::Read, 8, 2, 0);
    let run = conformance::drive(&mut d, &[first, second]).unwrap_or_else(|v| panic!("{v}"));
    assert_eq!(run.completions.len(), 2);
    let c = run.completions.iter().find(|c| c.request.id == 1).unwrap();
    c.latency().as_ns()
}

fn assert_near(got_ns: u64, want_ns: u64) {
    assert!(
        got_ns.abs_diff(want_ns) < 1_000,
        "{got_ns} ns, expected {want_ns} ns"
    );
}

/// The read's seek starts after its 0.25 ms overhead plus the 0.2 ms left of the switch, at
/// 10.65 ms, on track 1; switching back ends at 11.05 ms, just after sector 1 began, so the
/// sector is read on the next turn, done at 22 ms, and sent in 10 us. Starting from track 0
/// at 10.45 ms, or waiting only until the switch ended, would catch it at 11 ms.
#[test]
fn a_read_waits_for_the_rest_of_the_switch_on_top_of_its_overhead() {
    let second = req(1, Op::Read, 1, 1, SECOND_AT);
    assert_near(
        second_latency_ns(params(250_000), second),
        22 * MS + 10_000 - SECOND_AT,
    );
}

/// A write with the same 0.25 ms overhead waits only until the switch ends (10.4 ms is before
/// its overhead ends, 10.45 ms) and is back on track 0 at 10.85 ms, in time for sector 1.
#[test]
fn a_write_waits_only_until_the_switch_ends() {
    let second = req(1, Op::Write, 1, 1, SECOND_AT);
    assert_near(
        second_latency_ns(params(250_000), second),
        12 * MS - SECOND_AT,
    );
}

/// The heads are on track 1 when the write's 0.7 ms overhead ends at 10.9 ms, so switching
/// back (to 11.3 ms) misses sector 1: the write is done at 22 ms. From track 0 it would
/// have caught sector 1 at 11 ms.
#[test]
fn the_heads_are_on_the_read_aheads_next_track() {
    let second = req(1, Op::Write, 1, 1, SECOND_AT);
    assert_near(
        second_latency_ns(params(700_000), second),
        22 * MS - SECOND_AT,
    );
}
