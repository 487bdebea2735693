//! Die time by cause (the "GC time" of the statistics) and idle energy, checked against
//! timelines worked out by hand.

use storsim_core::conformance;
use storsim_core::{Device, Op, Request, SimTime};
use storsim_ssd::{Precondition, SsdDevice, SsdParams};

#[allow(dead_code)]
mod support;
use support::{counter, hand_timed, CMD_NS, TPROG_NS, TR_NS, XFER_NS};

/// 4 dies on 2 channels, 4 KiB pages, uniform SLC timing, clean, page FTL.
fn params() -> SsdParams {
    hand_timed(2, 2, 1, 32, 16)
}

/// Submits `op` on `page` at `at` through the conformance kit's checked driver and runs the
/// device until it completes; returns the finish.
fn one(d: &mut SsdDevice, id: u64, op: Op, page: u64, at: u64) -> u64 {
    let r = Request {
        id,
        op,
        offset_bytes: page * 4096,
        len_bytes: 4096,
        arrival: SimTime(at),
        flow: 0,
    };
    let run = conformance::drive(d, &[r]).unwrap_or_else(|v| panic!("{v}"));
    assert_eq!(run.completions.len(), 1);
    run.completions[0].finish.as_ns()
}

#[test]
fn die_time_is_counted_per_cause() {
    let mut d = SsdDevice::new(params()).unwrap();
    // Spaced far apart so that no operation waits: each holds its die for exactly its own time.
    one(&mut d, 0, Op::Write, 0, 0);
    one(&mut d, 1, Op::Read, 0, 10_000_000);
    one(&mut d, 2, Op::Read, 0, 20_000_000);
    let program = CMD_NS + XFER_NS + TPROG_NS;
    let read = CMD_NS + TR_NS + CMD_NS + XFER_NS;
    assert_eq!(counter(&d, "die_time_host_ns"), (program + 2 * read) as f64);
    assert_eq!(counter(&d, "die_time_gc_ns"), 0.0);
}

#[test]
fn garbage_collection_time_is_reported() {
    let mut p = params();
    p.precondition = Precondition::SequentialFill { fraction: 1.0 };
    let mut d = SsdDevice::new(p).unwrap();
    let pages = d.capacity_bytes() / 4096;
    let mut at = 0;
    // Overwrite the full device twice, one page at a time: collection must run.
    for i in 0..2 * pages {
        at = one(&mut d, i, Op::Write, (i * 7) % pages, at);
    }
    let gc_ns = counter(&d, "die_time_gc_ns");
    let gc_programs = counter(&d, "flash_programs_gc");
    assert!(gc_programs > 0.0, "the overwrites must collect garbage");
    // Each copied page holds its die at least for a read and a program.
    assert!(
        gc_ns >= gc_programs * (TR_NS + TPROG_NS) as f64,
        "{gc_ns} ns"
    );
}

#[test]
fn idle_energy_is_drawn_only_by_idle_dies() {
    let mut p = params();
    p.energy.idle_power_w = 1.0;
    let mut d = SsdDevice::new(p).unwrap();
    let finish = one(&mut d, 0, Op::Write, 0, 0);
    // One of four dies was busy for the whole run, the other three idle throughout.
    let expected_uj = 1.0 * 0.75 * finish as f64 / 1e3;
    let got = counter(&d, "energy_idle_uj");
    assert!(
        (got - expected_uj).abs() < 1e-6 * expected_uj,
        "{got} vs {expected_uj}"
    );

    // A second write a long idle gap later: the gap is idle for every die.
    let gap = 100_000_000;
    let second = one(&mut d, 1, Op::Write, 1, finish + gap);
    let busy_total = 2 * finish;
    let expected_uj = (4 * second - busy_total) as f64 / 4.0 / 1e3;
    let got = counter(&d, "energy_idle_uj");
    assert!(
        (got - expected_uj).abs() < 1e-6 * expected_uj,
        "{got} vs {expected_uj}"
    );
}

/// Garbage collection on a full device with copy-back off and on: the FTL makes the same
/// decisions, but with copy-back each same-plane copy holds its die for two commands, tR and
/// tPROG only, and moves nothing over the channel.
#[test]
fn copy_back_moves_gc_copies_off_the_channel() {
    let run = |copyback: bool| {
        let mut p = params();
        p.precondition = Precondition::SequentialFill { fraction: 1.0 };
        p.copyback = copyback;
        let mut d = SsdDevice::new(p).unwrap();
        let pages = d.capacity_bytes() / 4096;
        let mut at = 0;
        for i in 0..2 * pages {
            at = one(&mut d, i, Op::Write, (i * 7) % pages, at);
        }
        d
    };
    let (off, on) = (run(false), run(true));
    for name in ["flash_reads_gc", "flash_programs_gc", "flash_erases_gc"] {
        assert_eq!(counter(&off, name), counter(&on, name), "{name}");
    }
    let copies = counter(&on, "flash_programs_gc");
    let erases = counter(&on, "flash_erases_gc");
    assert!(copies > 0.0);
    let copy_back_ns = (2 * CMD_NS + TR_NS + TPROG_NS) as f64;
    let erase_ns = (CMD_NS + 2_000_000) as f64;
    assert_eq!(
        counter(&on, "die_time_gc_ns"),
        copies * copy_back_ns + erases * erase_ns
    );
    assert!(counter(&off, "die_time_gc_ns") > counter(&on, "die_time_gc_ns"));
    let channel =
        |d: &SsdDevice| counter(d, "channel_0_utilisation") + counter(d, "channel_1_utilisation");
    assert!(channel(&on) < channel(&off));
}
