//! The SLC write cache through the SSD (docs/models/slc-cache.md): writes at SLC speed until
//! the cache is full and at native speed after, worked out by hand; reads of cached data at
//! SLC speed, and at native speed once idle time folded it; preconditioning that leaves the
//! cache empty; the fold cause's counters only on a device with a cache.

use storsim_core::{Completion, Device, Op, Request, SimDuration, SimTime};
use storsim_flash::CellType;
use storsim_ssd::{Precondition, SlcCacheSpec, SsdDevice, SsdParams, WhenFull};

#[allow(dead_code)]
mod support;
use support::{counter, hand_timed, CMD_NS, PAGE, TPROG_NS, TR_NS, XFER_NS};

const SLC_TR_NS: u64 = 20_000;
const SLC_TPROG_NS: u64 = 100_000;

/// One die of one plane, 64 blocks of 6 pages (2 in SLC mode), TLC cells with the support's
/// uniform times and SLC-mode times of 20 µs and 100 µs; one static cache block and up to two
/// dynamic ones.
fn cached_device(precondition: Precondition) -> SsdParams {
    let mut p = hand_timed(1, 1, 1, 64, 6);
    p.timing.cell = CellType::Tlc;
    p.timing.slc_read = Some(SimDuration(SLC_TR_NS));
    p.timing.slc_program = Some(SimDuration(SLC_TPROG_NS));
    p.endurance = 100_000;
    p.slc_cache = Some(SlcCacheSpec {
        static_bytes: 2 * PAGE,
        dynamic_max_bytes: 4 * PAGE,
        when_full: WhenFull::Direct,
        static_endurance_erases: 100_000,
    });
    p.precondition = precondition;
    p
}

fn request(id: u64, op: Op, page: u64, at: u64) -> Request {
    Request {
        id,
        op,
        offset_bytes: page * PAGE,
        len_bytes: PAGE,
        arrival: SimTime(at),
        flow: 0,
    }
}

/// Submits `r` at its arrival once everything due before it is done, and runs the device
/// until it completes; returns its completion.
fn serve(d: &mut SsdDevice, r: Request) -> Completion {
    let mut done = Vec::new();
    while let Some(t) = d.next_deadline() {
        if t > r.arrival {
            break;
        }
        d.advance(t, &mut done);
    }
    d.advance(r.arrival, &mut done);
    let id = r.id;
    d.submit(r.arrival, r).expect("accepted");
    loop {
        let t = d.next_deadline().expect("the request is pending");
        d.advance(t, &mut done);
        if let Some(c) = done.iter().find(|c| c.request.id == id) {
            return *c;
        }
    }
}

#[test]
fn writes_run_at_slc_speed_until_the_cache_is_full_then_at_native_speed() {
    let mut d = SsdDevice::new(cached_device(Precondition::Clean)).unwrap();
    let slc_write = CMD_NS + XFER_NS + SLC_TPROG_NS;
    let native_write = CMD_NS + XFER_NS + TPROG_NS;
    // Each write arrives 10 µs after the previous one ends: never idle long enough (1 ms) for
    // folding. Two static pages and four dynamic ones take six writes at SLC speed.
    let mut at = 0;
    for page in 0..8 {
        let c = serve(&mut d, request(page, Op::Write, page, at));
        let expected = if page < 6 { slc_write } else { native_write };
        assert_eq!(c.finish.as_ns() - at, expected, "write {page}");
        at = c.finish.as_ns() + 10_000;
    }
    assert_eq!(counter(&d, "ftl_slc_host_pages"), 6.0);
    assert_eq!(counter(&d, "ftl_slc_direct_pages"), 2.0);
    // A read of cached data takes SLC tR, of the direct page native tR.
    let slc_read = CMD_NS + SLC_TR_NS + CMD_NS + XFER_NS;
    let c = serve(&mut d, request(100, Op::Read, 0, at));
    assert_eq!(c.finish.as_ns() - at, slc_read);
    let at = c.finish.as_ns() + 10_000;
    let c = serve(&mut d, request(101, Op::Read, 7, at));
    assert_eq!(c.finish.as_ns() - at, CMD_NS + TR_NS + CMD_NS + XFER_NS);
}

#[test]
fn idle_time_folds_the_cache_and_frees_it_for_the_next_burst() {
    let mut d = SsdDevice::new(cached_device(Precondition::Clean)).unwrap();
    let mut at = 0;
    for page in 0..6 {
        at = serve(&mut d, request(page, Op::Write, page, at))
            .finish
            .as_ns()
            + 10_000;
    }
    assert_eq!(counter(&d, "ftl_slc_cache_pages"), 6.0);
    // A second later the device has been idle for long: everything was folded.
    let later = at + 1_000_000_000;
    let c = serve(&mut d, request(10, Op::Read, 0, later));
    assert_eq!(
        c.finish.as_ns() - later,
        CMD_NS + TR_NS + CMD_NS + XFER_NS,
        "the folded page reads at native speed"
    );
    assert_eq!(counter(&d, "ftl_slc_cache_pages"), 0.0);
    assert_eq!(counter(&d, "ftl_slc_folded_pages"), 6.0);
    assert_eq!(counter(&d, "flash_reads_fold"), 6.0);
    assert_eq!(counter(&d, "flash_programs_fold"), 6.0);
    // The cache takes the next burst at SLC speed again.
    let at = c.finish.as_ns() + 10_000;
    let c = serve(&mut d, request(11, Op::Write, 20, at));
    assert_eq!(c.finish.as_ns() - at, CMD_NS + XFER_NS + SLC_TPROG_NS);
}

#[test]
fn preconditioning_leaves_the_cache_empty() {
    let d = SsdDevice::new(cached_device(Precondition::SequentialFill {
        fraction: 0.5,
    }))
    .unwrap();
    assert_eq!(counter(&d, "ftl_slc_cache_pages"), 0.0);
    assert!(counter(&d, "precondition_ftl_slc_folded_pages") > 0.0);
    assert!(counter(&d, "precondition_ftl_slc_host_pages") > 0.0);
    // The run's own counters start from zero.
    assert_eq!(counter(&d, "ftl_slc_folded_pages"), 0.0);
}

#[test]
fn only_a_device_with_a_cache_lists_folding() {
    let plain = SsdDevice::new(hand_timed(1, 1, 1, 64, 6)).unwrap();
    assert!(!plain.counters().iter().any(|c| c.name.contains("fold")));
    let cached = SsdDevice::new(cached_device(Precondition::Clean)).unwrap();
    for name in ["flash_reads_fold", "energy_fold_uj", "die_time_fold_ns"] {
        counter(&cached, name);
    }
    storsim_core::conformance::check_counters_described(&cached).unwrap();
}

#[test]
fn a_cache_on_slc_cells_is_refused() {
    let mut p = cached_device(Precondition::Clean);
    p.timing.cell = CellType::Slc;
    let e = SsdDevice::new(p).err().expect("refused");
    assert!(e.to_string().contains("more than one bit"), "{e}");
}
