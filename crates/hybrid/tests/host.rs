//! Configuration 1: the host places data on two exposed devices.

mod common;

use common::*;
use storsim_core::conformance::counter;
use storsim_core::{Device, Op};
use storsim_hybrid::{
    ByteRange, HostPlacement, HostTieredDevice, HostTieredParams, Route, RouteCause, Side,
};

fn device(placement: HostPlacement) -> HostTieredDevice {
    let mut dev = HostTieredDevice::new(
        HostTieredParams {
            placement,
            queue_depth: 16,
        },
        Box::new(ssd(16)),
        Box::new(disk(16)),
    )
    .unwrap();
    dev.enable_route_log(1000);
    dev
}

fn routes_of(dev: &mut HostTieredDevice, id: u64) -> Vec<Route> {
    let mut out = Vec::new();
    assert_eq!(dev.drain_routes(&mut out), 0);
    out.retain(|r| r.cause == RouteCause::Host { id });
    out
}

#[test]
fn separate_devices_add_their_capacities_and_split_at_the_boundary() {
    let mut dev = device(HostPlacement::Separate);
    let disk_bytes = 1u64 << 30;
    let flash_bytes = dev.child(Side::Flash).capacity_bytes();
    assert_eq!(dev.capacity_bytes(), disk_bytes + flash_bytes);
    drive(
        &mut dev,
        &[req(1, Op::Write, disk_bytes - BLOCK, 2 * BLOCK, 0)],
    );
    let r = routes_of(&mut dev, 1);
    assert_eq!(r.len(), 2);
    assert_eq!(
        (r[0].side, r[0].device_offset_bytes),
        (Side::Disk, disk_bytes - BLOCK)
    );
    assert_eq!((r[1].side, r[1].device_offset_bytes), (Side::Flash, 0));
    assert_eq!(counter(&dev, "host_writes_split"), 1.0);
}

#[test]
fn a_metadata_range_lives_on_the_flash() {
    let meta = ByteRange {
        start_bytes: 1 << 20,
        end_bytes: 2 << 20,
    };
    let mut dev = device(HostPlacement::FlashRanges(vec![meta]));
    assert_eq!(dev.capacity_bytes(), 1 << 30);
    drive(
        &mut dev,
        &[
            req(1, Op::Write, (1 << 20) + BLOCK, 128 << 10, 0),
            req(2, Op::Read, (2 << 20) - BLOCK, 2 * BLOCK, 1_000),
        ],
    );
    let mut all = Vec::new();
    dev.drain_routes(&mut all);
    let w: Vec<_> = all
        .iter()
        .filter(|r| r.cause == RouteCause::Host { id: 1 })
        .collect();
    assert_eq!(w.len(), 1);
    assert_eq!((w[0].side, w[0].device_offset_bytes), (Side::Flash, BLOCK));
    let r: Vec<_> = all
        .iter()
        .filter(|r| r.cause == RouteCause::Host { id: 2 })
        .collect();
    assert_eq!(r.len(), 2);
    assert_eq!(
        (r[0].side, r[0].device_offset_bytes),
        (Side::Flash, (1 << 20) - BLOCK)
    );
    assert_eq!((r[1].side, r[1].device_offset_bytes), (Side::Disk, 2 << 20));
}

#[test]
fn small_writes_are_remapped_to_flash_and_large_rewrites_move_them_back() {
    let mut dev = device(HostPlacement::SmallWrites {
        threshold_bytes: 64 << 10,
        block_bytes: BLOCK,
    });
    drive(
        &mut dev,
        &[
            req(1, Op::Write, 100 * BLOCK, 2 * BLOCK, 0),
            req(2, Op::Read, 99 * BLOCK, 4 * BLOCK, 1_000),
            req(3, Op::Write, 96 * BLOCK, 16 * BLOCK + 512, 2_000),
            req(4, Op::Read, 100 * BLOCK, BLOCK, 3_000),
        ],
    );
    let mut all = Vec::new();
    dev.drain_routes(&mut all);
    let of = |id| -> Vec<(Side, u64)> {
        all.iter()
            .filter(|r| r.cause == RouteCause::Host { id })
            .map(|r| (r.side, r.device_offset_bytes))
            .collect()
    };
    assert_eq!(of(1), [(Side::Flash, 0)]);
    assert_eq!(
        of(2),
        [
            (Side::Disk, 99 * BLOCK),
            (Side::Flash, 0),
            (Side::Disk, 102 * BLOCK)
        ]
    );
    // The large rewrite covers both remapped blocks whole: the host drops them from flash.
    assert_eq!(of(3), [(Side::Disk, 96 * BLOCK)]);
    assert_eq!(of(4), [(Side::Disk, 100 * BLOCK)]);
    assert_eq!(counter(&dev, "remapped_blocks"), 0.0);
    assert_eq!(counter(&dev, "remap_releases"), 2.0);
}
