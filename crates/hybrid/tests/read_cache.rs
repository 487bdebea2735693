//! Configuration 2 with read admission (a first-generation Momentus XT): read misses are
//! promoted into the flash after the disk answers, writes go to the disk and drop any flash
//! copy, replacement orders clean blocks, pinned ranges still live on the flash, and the
//! promotion queue stays bounded under pressure. The randomized shadow-content check for this
//! mode is in `controller.rs` (`every_read_is_served_from_the_newest_copy`).

mod common;

use common::*;
use storsim_core::conformance::counter;
use storsim_core::{Completion, Device, Op, Request, SimTime};
use storsim_hybrid::{
    Admission, ByteRange, HybridDevice, HybridParams, Location, Replacement, Route, RouteCause,
    Side,
};

fn params(admission: Admission, replacement: Replacement) -> HybridParams {
    HybridParams {
        admission,
        replacement,
        ..HybridParams::thesis_defaults()
    }
}

fn read_cache(flash_blocks_count: u64, replacement: Replacement) -> HybridDevice {
    let mut dev = HybridDevice::new(
        params(Admission::Reads, replacement),
        Box::new(flash_blocks(flash_blocks_count, 8)),
        Box::new(disk(8)),
    )
    .unwrap();
    dev.enable_route_log(100_000);
    dev
}

fn routes(dev: &mut HybridDevice) -> Vec<Route> {
    let mut out = Vec::new();
    assert_eq!(dev.drain_routes(&mut out), 0, "the route log overflowed");
    out
}

fn caused(routes: &[Route], cause: RouteCause) -> Vec<Route> {
    routes
        .iter()
        .filter(|r| r.cause == cause)
        .copied()
        .collect()
}

/// Submits one request at `now` (or its arrival, if later) and runs the device until idle.
fn one(dev: &mut HybridDevice, now: &mut SimTime, r: Request) -> Completion {
    let mut done = Vec::new();
    *now = (*now).max(r.arrival);
    dev.advance(*now, &mut done);
    dev.submit(*now, r).unwrap();
    drain(dev, now, &mut done);
    done.into_iter().find(|c| c.request.id == r.id).unwrap()
}

fn later(now: SimTime) -> u64 {
    now.as_ns() + 1_000
}

#[test]
fn a_repeated_read_is_served_by_the_flash() {
    let mut dev = read_cache(64, Replacement::Lru);
    let mut now = SimTime::ZERO;
    // Blocks 10..14 but for block 10's first sector: only 11, 12 and 13 are read whole.
    let (offset, len) = (10 * BLOCK + 512, 4 * BLOCK - 512);
    one(&mut dev, &mut now, req(1, Op::Read, offset, len, 0));
    let log = routes(&mut dev);
    let host = caused(&log, RouteCause::Host { id: 1 });
    assert_eq!(host.len(), 1);
    assert_eq!(host[0].side, Side::Disk);
    let promoted = caused(&log, RouteCause::Promote { id: 1 });
    assert_eq!(
        promoted.len(),
        1,
        "three contiguous blocks, one flash write"
    );
    assert_eq!(promoted[0].side, Side::Flash);
    assert_eq!(promoted[0].op, Op::Write);
    assert_eq!(promoted[0].host_offset_bytes, 11 * BLOCK);
    assert_eq!(promoted[0].len_bytes, 3 * BLOCK);
    assert_eq!(counter(&dev, "promoted_blocks"), 3.0);
    assert_eq!(counter(&dev, "to_flash_promote_requests"), 1.0);
    assert_eq!(counter(&dev, "to_flash_promote_bytes"), (3 * BLOCK) as f64);
    assert_eq!(
        dev.locate(10 * BLOCK),
        Location::Disk,
        "a partial block stays out"
    );
    for b in 11..14 {
        assert!(matches!(
            dev.locate(b * BLOCK),
            Location::Flash {
                dirty: false,
                pinned: false,
                ..
            }
        ));
    }
    assert_eq!(dev.dirty_blocks(), 0);

    let at = later(now);
    one(
        &mut dev,
        &mut now,
        req(2, Op::Read, 11 * BLOCK, 3 * BLOCK, at),
    );
    let log = routes(&mut dev);
    let again = caused(&log, RouteCause::Host { id: 2 });
    assert!(
        !again.is_empty() && again.iter().all(|r| r.side == Side::Flash),
        "{again:?}"
    );
    assert!(caused(&log, RouteCause::Promote { id: 2 }).is_empty());
    assert_eq!(counter(&dev, "host_reads_flash"), 1.0);
    assert_eq!(counter(&dev, "host_reads_disk"), 1.0);
    assert_eq!(counter(&dev, "read_blocks_hit"), 3.0);
    // Nothing was written by the host, so the flash took only the promotion.
    assert_eq!(counter(&dev, "to_flash_host_requests"), 1.0);
    assert_eq!(counter(&dev, "write_blocks_flash"), 0.0);
}

#[test]
fn writes_go_to_the_disk_and_drop_the_cached_copy() {
    let mut dev = read_cache(64, Replacement::Lru);
    let mut now = SimTime::ZERO;
    one(&mut dev, &mut now, req(1, Op::Read, 0, 4 * BLOCK, 0));
    assert_eq!(counter(&dev, "promoted_blocks"), 4.0);
    // A small write (the thesis would send it to the flash) over part of block 1.
    let at = later(now);
    one(&mut dev, &mut now, req(2, Op::Write, BLOCK + 512, 1024, at));
    let at = later(now);
    one(&mut dev, &mut now, req(3, Op::Read, 0, 4 * BLOCK, at));
    let log = routes(&mut dev);
    let write = caused(&log, RouteCause::Host { id: 2 });
    assert_eq!(write.len(), 1);
    assert_eq!(write[0].side, Side::Disk);
    assert_eq!(counter(&dev, "host_writes_disk"), 1.0);
    assert_eq!(counter(&dev, "invalidated_blocks"), 1.0);
    // The reread takes blocks 0, 2, 3 from the flash and block 1 (newest on disk) from the
    // disk, then promotes block 1 again.
    let sides: Vec<(Side, u64)> = caused(&log, RouteCause::Host { id: 3 })
        .iter()
        .map(|r| (r.side, r.host_offset_bytes / BLOCK))
        .collect();
    assert_eq!(
        sides,
        [(Side::Flash, 0), (Side::Disk, 1), (Side::Flash, 2)],
        "block 1's slot is gone, so blocks 2 and 3 stay one flash run"
    );
    assert_eq!(caused(&log, RouteCause::Promote { id: 3 }).len(), 1);
    assert!(check_shadow(&log) > 0);
    assert_eq!(counter(&dev, "to_disk_flush_requests"), 0.0);
}

#[test]
fn a_write_while_the_read_is_in_flight_cancels_its_promotion() {
    let mut dev = read_cache(64, Replacement::Lru);
    let mut done = Vec::new();
    // Both arrive at once: the write is split after the read reserved the blocks, and
    // reaches the disk after the read, so the read's bytes are already stale when it returns.
    dev.submit(SimTime::ZERO, req(1, Op::Read, 0, 2 * BLOCK, 0))
        .unwrap();
    dev.submit(SimTime::ZERO, req(2, Op::Write, BLOCK, BLOCK, 0))
        .unwrap();
    let mut now = SimTime::ZERO;
    drain(&mut dev, &mut now, &mut done);
    assert_eq!(done.len(), 2);
    assert_eq!(counter(&dev, "promoted_blocks"), 1.0, "only block 0");
    assert_eq!(counter(&dev, "invalidated_blocks"), 1.0);
    assert_eq!(dev.locate(BLOCK), Location::Disk);
    assert!(matches!(dev.locate(0), Location::Flash { .. }));
    let at = later(now);
    one(&mut dev, &mut now, req(3, Op::Read, 0, 2 * BLOCK, at));
    let log = routes(&mut dev);
    let sides: Vec<Side> = caused(&log, RouteCause::Host { id: 3 })
        .iter()
        .map(|r| r.side)
        .collect();
    assert_eq!(sides, [Side::Flash, Side::Disk]);
    assert!(check_shadow(&log) > 0);
}

#[test]
fn promotion_does_not_delay_the_host_read() {
    // The same read on a write cache (never promotes) and on a read cache.
    let run = |admission: Admission| {
        let (flash, flash_seen) = record(flash_blocks(64, 8));
        let (disk, disk_seen) = record(disk(8));
        let mut dev = HybridDevice::new(params(admission, Replacement::Lru), flash, disk).unwrap();
        let mut now = SimTime::ZERO;
        let read = one(&mut dev, &mut now, req(1, Op::Read, 0, 16 * BLOCK, 0));
        let promoted = counter(&dev, "promoted_blocks");
        let flash_submits: Vec<SimTime> = flash_seen
            .lock()
            .unwrap()
            .submitted
            .iter()
            .map(|s| s.0)
            .collect();
        let disk_finish = disk_seen.lock().unwrap().completed[0].finish;
        (read.finish, promoted, flash_submits, disk_finish, now)
    };
    let (plain, plain_promoted, plain_flash, _, _) = run(Admission::Writes);
    let (cached, promoted, flash_submits, disk_finish, idle_at) = run(Admission::Reads);
    assert_eq!(plain_promoted, 0.0);
    assert!(plain_flash.is_empty());
    assert_eq!(promoted, 16.0);
    assert_eq!(
        cached, plain,
        "the host read finishes when its disk read does"
    );
    assert_eq!(cached, disk_finish);
    assert_eq!(flash_submits.len(), 1);
    assert!(
        flash_submits[0] >= disk_finish,
        "the copy starts once the disk has answered"
    );
    assert!(idle_at > cached, "the copy takes flash time after the read");
}

/// Reads blocks 0, 2, 4 and 6 into a 4-block cache, reads block 0 again, then reads block 100
/// (one eviction). Returns where blocks 0 and 2 are afterwards.
fn evicted_after_reread(replacement: Replacement) -> (Location, Location) {
    let mut dev = read_cache(4, replacement);
    let mut now = SimTime::ZERO;
    for (i, b) in [0u64, 2, 4, 6].into_iter().enumerate() {
        let at = later(now);
        one(
            &mut dev,
            &mut now,
            req(i as u64 + 1, Op::Read, b * BLOCK, BLOCK, at),
        );
    }
    let at = later(now);
    one(&mut dev, &mut now, req(10, Op::Read, 0, BLOCK, at));
    assert_eq!(counter(&dev, "read_blocks_hit"), 1.0);
    let at = later(now);
    one(
        &mut dev,
        &mut now,
        req(11, Op::Read, 100 * BLOCK, BLOCK, at),
    );
    assert_eq!(counter(&dev, "evicted_blocks"), 1.0);
    assert_eq!(counter(&dev, "promoted_blocks"), 5.0);
    assert!(matches!(dev.locate(100 * BLOCK), Location::Flash { .. }));
    // Clean blocks leave without a flush.
    assert_eq!(counter(&dev, "to_flash_flush_requests"), 0.0);
    assert_eq!(counter(&dev, "to_disk_flush_requests"), 0.0);
    (dev.locate(0), dev.locate(2 * BLOCK))
}

#[test]
fn lru_evicts_the_least_recently_read_and_fifo_the_first_promoted() {
    let (lru0, lru2) = evicted_after_reread(Replacement::Lru);
    assert!(
        matches!(lru0, Location::Flash { dirty: false, .. }),
        "LRU kept the block just read"
    );
    assert_eq!(lru2, Location::Disk);
    let (fifo0, fifo2) = evicted_after_reread(Replacement::Fifo);
    assert_eq!(fifo0, Location::Disk, "FIFO evicts the first block in");
    assert!(matches!(fifo2, Location::Flash { .. }));
}

#[test]
fn pinned_blocks_still_live_on_the_flash() {
    let mut p = params(Admission::Reads, Replacement::Lru);
    p.pinned = vec![ByteRange {
        start_bytes: 0,
        end_bytes: 2 * BLOCK,
    }];
    let mut dev = HybridDevice::new(p, Box::new(flash_blocks(8, 8)), Box::new(disk(8))).unwrap();
    dev.enable_route_log(1000);
    let mut now = SimTime::ZERO;
    // Never written: read from the disk, and not promoted (the slot waits for a write).
    one(&mut dev, &mut now, req(1, Op::Read, 0, 2 * BLOCK, 0));
    assert_eq!(counter(&dev, "promoted_blocks"), 0.0);
    // A large write over the pinned blocks and two more: pinned part to the flash.
    let at = later(now);
    one(&mut dev, &mut now, req(2, Op::Write, 0, 4 * BLOCK, at));
    let at = later(now);
    one(&mut dev, &mut now, req(3, Op::Read, 0, 2 * BLOCK, at));
    let log = routes(&mut dev);
    let write: Vec<(Side, u64)> = caused(&log, RouteCause::Host { id: 2 })
        .iter()
        .map(|r| (r.side, r.len_bytes))
        .collect();
    assert_eq!(write, [(Side::Flash, 2 * BLOCK), (Side::Disk, 2 * BLOCK)]);
    assert!(caused(&log, RouteCause::Host { id: 3 })
        .iter()
        .all(|r| r.side == Side::Flash));
    assert!(matches!(
        dev.locate(0),
        Location::Flash { pinned: true, .. }
    ));
    assert_eq!(
        dev.dirty_blocks(),
        0,
        "pinned blocks are not counted as dirty"
    );
    assert!(check_shadow(&log) > 0);
}

#[test]
fn a_slow_flash_drops_promotions_instead_of_queueing_without_bound() {
    // A flash that takes 200 ms a request behind a disk that reads 1 MiB in about 15 ms:
    // promotions pile up until the bounded queue is full, and the rest are not cached.
    let (flash, flash_seen) = record(linear(64 * 256 * BLOCK, 200_000.0, 0.0, 1));
    let (disk, _) = record(disk(1));
    let mut p = params(Admission::Reads, Replacement::Lru);
    p.queue_depth = 64;
    let mut dev = HybridDevice::new(p, flash, disk).unwrap();
    let requests: Vec<Request> = (0..64u64)
        .map(|i| req(i + 1, Op::Read, i * (1 << 20), 1 << 20, 0))
        .collect();
    let done = drive(&mut dev, &requests);
    assert_eq!(done.len(), 64);
    let promoted = counter(&dev, "promoted_blocks");
    let dropped = counter(&dev, "promotion_dropped_blocks");
    assert!(dropped > 0.0, "the promotion queue never filled");
    assert!(promoted > 0.0);
    // Every whole block read was either promoted or dropped: nothing is left reserved.
    assert_eq!(promoted + dropped, 64.0 * 256.0);
    assert_eq!(counter(&dev, "child_refusals"), 0.0);
    let seen = flash_seen.lock().unwrap();
    assert_eq!(seen.submitted.len(), seen.completed.len());
    // The host reads never waited for the flash: each finished long before the promotions.
    let last_read = done.iter().map(|c| c.finish).max().unwrap();
    let last_copy = seen.completed.iter().map(|c| c.finish).max().unwrap();
    assert!(last_read < last_copy);
}
