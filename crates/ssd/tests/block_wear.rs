//! Per-block erase counts at the end of a run (`Device::block_wear`): the unbinned form of the
//! erase counters, so they must agree with them.

#[allow(dead_code)]
mod support;

use storsim_core::{conformance, Device, Op, Prng, Request, SimTime};
use storsim_ftl::FtlConfig;
use storsim_ssd::SsdDevice;
use support::{counter, hand_timed, PAGE};

#[test]
fn per_block_erase_counts_add_up_to_the_erase_counters_after_garbage_collection() {
    // 2 × 2 dies of 2 planes, 32 blocks of 16 pages each; a quarter of the blocks spare, so
    // that random overwrites of the whole logical space keep the collector busy.
    let mut p = hand_timed(2, 2, 2, 32, 16);
    p.ftl = FtlConfig::new(storsim_ftl::page::Params {
        over_provisioning_fraction: 0.25,
        ..storsim_ftl::page::Params::default()
    });
    let mut d = SsdDevice::new(p).unwrap();
    let logical_pages = d.capacity_bytes() / PAGE;
    let mut rng = Prng::new(23);
    let requests: Vec<Request> = (0..4 * logical_pages)
        .map(|id| Request {
            id,
            op: Op::Write,
            offset_bytes: rng.below(logical_pages) * PAGE,
            len_bytes: PAGE,
            arrival: SimTime(id * 100_000),
            flow: 0,
        })
        .collect();
    let run = conformance::drive(&mut d, &requests).unwrap_or_else(|v| panic!("{v}"));
    assert_eq!(run.completions.len(), requests.len());
    assert!(
        counter(&d, "flash_erases_gc") > 0.0,
        "no garbage collection"
    );

    let wear = d.block_wear();
    assert_eq!(wear.len(), 1, "one flash array");
    let w = &wear[0];
    assert_eq!(w.unit, "", "the device's own array");
    assert_eq!(
        (w.channels, w.chips_per_channel, w.dies_per_chip),
        (2, 2, 1)
    );
    assert_eq!(
        (w.planes_per_die, w.blocks_per_plane, w.pages_per_block),
        (2, 32, 16)
    );
    assert_eq!(w.erase_counts.len(), 2 * 2 * 2 * 32);
    let sum: u64 = w.erase_counts.iter().map(|&e| u64::from(e)).sum();
    // The counts are the array's life, so preconditioning's erases (none here) count too.
    assert_eq!(
        sum as f64,
        counter(&d, "flash_erases") + counter(&d, "precondition_erases")
    );
    let max = *w.erase_counts.iter().max().unwrap();
    let min = *w.erase_counts.iter().min().unwrap();
    assert_eq!(f64::from(max), counter(&d, "erase_count_max"));
    assert_eq!(f64::from(min), counter(&d, "erase_count_min"));
    assert!(max > min, "wear that differs between blocks: {min}..{max}");
}
