//! Multi-plane commands end to end: the pages of one request (or of one destage) that the FTL
//! puts on different planes of a die share one array operation, with times worked out by hand.

use storsim_core::conformance;
use storsim_core::{Completion, Op, Request, SimDuration, SimTime};
use storsim_flash::MultiPlane;
use storsim_ssd::{DestageOrder, FlushPolicy, SsdDevice, SsdParams, WriteBack, WriteBuffer};

#[allow(dead_code)]
mod support;
use support::{counter, hand_timed, CMD_NS, PAGE, TPROG_NS, TR_NS, XFER_NS};

/// One channel of `dies` dies with two planes each (see [`hand_timed`]).
fn device(dies: u32, rule: MultiPlane) -> SsdParams {
    let mut p = hand_timed(1, dies, 2, 32, 32);
    p.multi_plane = rule;
    p
}

/// Submits one request at `at` through the conformance kit's checked driver and runs the device
/// until it completes; returns its completion.
fn one(d: &mut SsdDevice, at: SimTime, op: Op, page: u64, pages: u64) -> Completion {
    let request = Request {
        id: 0,
        op,
        offset_bytes: page * PAGE,
        len_bytes: pages * PAGE,
        arrival: at,
        flow: 0,
    };
    let run = conformance::drive(d, &[request]).unwrap_or_else(|v| panic!("{v}"));
    assert_eq!(run.completions.len(), 1);
    run.completions[0]
}

#[test]
fn a_two_page_write_and_its_read_use_both_planes_at_once() {
    // Striped allocation puts the two pages on planes 0 and 1 of the only die, page 0 of each
    // plane's first block: the same page address, as the same-page rule requires.
    let mut d = SsdDevice::new(device(1, MultiPlane::SamePage)).unwrap();
    let w = one(&mut d, SimTime::ZERO, Op::Write, 0, 2);
    assert_eq!(w.finish.as_ns(), 2 * (CMD_NS + XFER_NS) + TPROG_NS);
    let r = one(&mut d, w.finish, Op::Read, 0, 2);
    assert_eq!(
        r.finish.as_ns() - w.finish.as_ns(),
        2 * CMD_NS + TR_NS + 2 * (CMD_NS + XFER_NS)
    );
    assert_eq!(counter(&d, "multi_plane_commands"), 2.0);
    assert_eq!(counter(&d, "flash_programs_host"), 2.0);
    assert_eq!(counter(&d, "flash_reads_host"), 2.0);
    // Die time is shared out among a command's pages, not counted once per page: the die
    // was busy from 0 to the read's end, and the host's die time is exactly that.
    assert_eq!(counter(&d, "die_time_host_ns"), r.finish.as_ns() as f64);

    // Without multi-plane commands the die runs the pages one after the other.
    let mut d = SsdDevice::new(device(1, MultiPlane::Off)).unwrap();
    let w = one(&mut d, SimTime::ZERO, Op::Write, 0, 2);
    assert_eq!(w.finish.as_ns(), 2 * (CMD_NS + XFER_NS + TPROG_NS));
    let r = one(&mut d, w.finish, Op::Read, 0, 2);
    assert_eq!(
        r.finish.as_ns() - w.finish.as_ns(),
        2 * (2 * CMD_NS + TR_NS + XFER_NS)
    );
    assert_eq!(counter(&d, "multi_plane_commands"), 0.0);
}

#[test]
fn destaging_a_write_back_buffer_forms_multi_plane_programs() {
    // Single-page writes sit in DRAM; a flush sends them to flash together, where the pages
    // striped to the two planes of each die pair up.
    let run = |rule: MultiPlane| {
        let mut p = device(2, rule);
        p.write_buffer = Some(WriteBuffer {
            capacity_bytes: 256 * PAGE,
            latency: SimDuration(2_000),
        });
        p.write_buffer_policy = FlushPolicy::Watermark(WriteBack {
            high_watermark_fraction: 0.99,
            low_watermark_fraction: 0.5,
            order: DestageOrder::Fifo,
            destage_when_idle: false,
        });
        let mut d = SsdDevice::new(p).unwrap();
        let mut now = SimTime::ZERO;
        for i in 0..64 {
            now = one(&mut d, now, Op::Write, (i * 37) % 512, 1).finish;
        }
        let flushed = one(&mut d, now, Op::Flush, 0, 0).finish;
        let map: Vec<_> = (0..512).map(|l| d.ftl().lookup(l)).collect();
        (flushed.as_ns() - now.as_ns(), map, d)
    };
    let (off_ns, off_map, off) = run(MultiPlane::Off);
    let (on_ns, on_map, on) = run(MultiPlane::SamePage);
    // The FTL decides where pages go without knowing time: the same placement either way.
    assert_eq!(on_map, off_map);
    assert_eq!(counter(&off, "multi_plane_commands"), 0.0);
    // 64 pages over 2 dies x 2 planes: each die programs 32 pages, in 16 pairs.
    assert_eq!(counter(&on, "multi_plane_commands"), 32.0);
    assert_eq!(counter(&on, "flash_programs"), 64.0);
    // Each die: 32 programs one by one, or 16 pairs sharing a tPROG. The channel is shared by
    // the two dies, but the array time dominates.
    assert!(off_ns >= 32 * TPROG_NS, "{off_ns}");
    assert!(on_ns < 17 * TPROG_NS + 64 * (CMD_NS + XFER_NS), "{on_ns}");
}
