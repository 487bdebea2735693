//! Both hybrid configurations keep the Device contract (checked by the conformance kit): the
//! controller with each admission, flush and replacement policy, a pinned range, at queue depths
//! 1 and 32, and over children that fail a share of their requests; the host-tiered device with
//! each placement.

mod common;

use common::*;
use storsim_core::conformance::{self, Options};
use storsim_core::Device;
use storsim_hybrid::{
    Admission, ByteRange, FlushPolicy, HostPlacement, HostTieredDevice, HostTieredParams,
    HybridDevice, HybridParams, Replacement,
};

fn check<D: Device>(name: &str, make: impl FnMut() -> D) {
    eprintln!("{name}");
    let report = conformance::check(make, &Options::default())
        .unwrap_or_else(|violation| panic!("{name}: {violation}"));
    assert_eq!(report.failed, None, "{name}");
}

/// One flush policy of each kind.
fn flush_policies() -> [FlushPolicy; 3] {
    [
        FlushPolicy::OnDemand,
        FlushPolicy::LowWatermark {
            high_fraction: 0.75,
            low_fraction: 0.25,
        },
        FlushPolicy::Idle {
            idle: storsim_core::SimDuration::from_ms(5),
        },
    ]
}

#[test]
fn the_hybrid_controller_keeps_the_device_contract() {
    let flushes = flush_policies();
    for (admission, replacement) in [
        (Admission::Writes, Replacement::Lru),
        (Admission::Reads, Replacement::Fifo),
    ] {
        for flush in flushes {
            for queue_depth in [1, 32] {
                let params = HybridParams {
                    admission,
                    replacement,
                    flush,
                    queue_depth,
                    pinned: vec![ByteRange {
                        start_bytes: 0,
                        end_bytes: 16 * BLOCK,
                    }],
                    ..HybridParams::thesis_defaults()
                };
                check(
                    &format!(
                        "controller {admission:?} {flush:?} {replacement:?} depth {queue_depth}"
                    ),
                    || {
                        HybridDevice::new(
                            params.clone(),
                            Box::new(flash_blocks(256, queue_depth)),
                            Box::new(disk(queue_depth)),
                        )
                        .expect("a valid hybrid")
                    },
                );
            }
        }
    }
}

#[test]
fn the_controller_over_a_real_ssd_keeps_the_device_contract() {
    check("controller over a small SSD", || {
        HybridDevice::new(
            HybridParams::thesis_defaults(),
            Box::new(ssd(32)),
            Box::new(disk(32)),
        )
        .expect("a valid hybrid")
    });
}

#[test]
fn the_host_tiered_device_keeps_the_device_contract() {
    let placements = [
        HostPlacement::Separate,
        HostPlacement::FlashRanges(vec![ByteRange {
            start_bytes: 1 << 20,
            end_bytes: 2 << 20,
        }]),
        HostPlacement::SmallWrites {
            threshold_bytes: 64 << 10,
            block_bytes: BLOCK,
        },
    ];
    for placement in placements {
        for queue_depth in [1, 16] {
            check(&format!("host {placement:?} depth {queue_depth}"), || {
                HostTieredDevice::new(
                    HostTieredParams {
                        placement: placement.clone(),
                        queue_depth,
                    },
                    Box::new(flash_blocks(1024, queue_depth)),
                    Box::new(disk(queue_depth)),
                )
                .expect("a valid host-tiered device")
            });
        }
    }
}

/// With children that fail a share of their requests (a faults layer over each), the
/// controller still keeps the contract under every flush policy: failed flushes retried or
/// given up, writes sent around unflushable blocks, failed promotions.
#[test]
fn the_controller_over_failing_children_keeps_the_device_contract() {
    use storsim_faults::{FaultKind, FaultPlan, FaultRule, FaultsDevice};
    let failing = |inner: Box<dyn Device>, seed: u64| -> Box<dyn Device> {
        let rule = |kind| FaultRule {
            rate_per_million: 200_000,
            ..FaultRule::always(kind)
        };
        let plan = FaultPlan {
            rules: vec![rule(FaultKind::WriteError), rule(FaultKind::ReadError)],
            seed,
            ..FaultPlan::default()
        };
        Box::new(FaultsDevice::new(inner, &plan))
    };
    let flushes = flush_policies();
    for admission in [Admission::Writes, Admission::Reads] {
        for flush in flushes {
            let params = HybridParams {
                admission,
                flush,
                ..HybridParams::thesis_defaults()
            };
            let name = format!("controller over failing children {admission:?} {flush:?}");
            eprintln!("{name}");
            let options = Options {
                allow_errors: true,
                ..Options::default()
            };
            conformance::check(
                || {
                    let mut dev = HybridDevice::new(
                        params.clone(),
                        failing(Box::new(flash_blocks(64, 8)), 1),
                        failing(Box::new(disk(8)), 2),
                    )
                    .expect("a valid hybrid");
                    dev.enable_fault_counters();
                    dev
                },
                &options,
            )
            .unwrap_or_else(|violation| panic!("{name}: {violation}"));
        }
    }
}
