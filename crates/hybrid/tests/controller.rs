//! Configuration 2: the hybrid controller's placement, splitting, flushing, replacement,
//! pinning, pluggable policy, back-pressure and determinism.

mod common;

use common::*;
use storsim_core::conformance::counter;
use storsim_core::{Completion, Device, Op, Request, SimDuration, SimTime};
use storsim_hybrid::{
    Admission, ByteRange, CacheEvent, CachePolicy, FlushPolicy, HybridDevice, HybridParams,
    Location, Replacement, Route, RouteCause, Side, Victims,
};

fn params(flush: FlushPolicy, replacement: Replacement) -> HybridParams {
    HybridParams {
        admission: Admission::Writes,
        small_write_threshold_bytes: 64 << 10,
        cache_block_bytes: BLOCK,
        flush,
        replacement,
        pinned: Vec::new(),
        queue_depth: 32,
    }
}

fn routes(dev: &mut HybridDevice) -> Vec<Route> {
    let mut out = Vec::new();
    assert_eq!(dev.drain_routes(&mut out), 0, "the route log overflowed");
    out
}

fn host_routes(routes: &[Route], id: u64) -> Vec<Route> {
    routes
        .iter()
        .filter(|r| r.cause == RouteCause::Host { id })
        .copied()
        .collect()
}

/// Submits one request and runs the device until it is idle.
fn one(dev: &mut HybridDevice, now: &mut SimTime, r: Request) -> Completion {
    let mut done = Vec::new();
    *now = (*now).max(r.arrival);
    dev.advance(*now, &mut done);
    dev.submit(*now, r).unwrap();
    drain(dev, now, &mut done);
    done.into_iter().find(|c| c.request.id == r.id).unwrap()
}

#[test]
fn small_writes_land_on_flash_and_large_writes_on_disk() {
    let mut dev = HybridDevice::new(
        params(FlushPolicy::OnDemand, Replacement::Lru),
        Box::new(ssd(32)),
        Box::new(disk(32)),
    )
    .unwrap();
    dev.enable_route_log(1000);
    let requests = [
        req(1, Op::Write, 0, 4 * BLOCK, 0),
        req(2, Op::Write, 100 * BLOCK, 64 << 10, 1_000),
        req(3, Op::Write, 400 * BLOCK, 1 << 20, 2_000),
    ];
    drive(&mut dev, &requests);
    let log = routes(&mut dev);
    let small = host_routes(&log, 1);
    assert!(small.iter().all(|r| r.side == Side::Flash) && !small.is_empty());
    for id in [2, 3] {
        let large = host_routes(&log, id);
        assert_eq!(large.len(), 1);
        assert_eq!(large[0].side, Side::Disk);
        assert_eq!(
            large[0].device_offset_bytes,
            requests[id as usize - 1].offset_bytes
        );
    }
    assert_eq!(counter(&dev, "host_writes_flash"), 1.0);
    assert_eq!(counter(&dev, "host_writes_disk"), 2.0);
    assert_eq!(dev.dirty_blocks(), 4);
    assert!(matches!(
        dev.locate(BLOCK),
        Location::Flash { dirty: true, .. }
    ));
    assert_eq!(dev.locate(100 * BLOCK), Location::Disk);
    // The flash child saw exactly the small write's pages.
    assert_eq!(counter(&dev, "flash_host_write_pages"), 4.0);
}

#[test]
fn a_large_write_over_a_cached_block_goes_to_flash() {
    let mut dev = HybridDevice::new(
        params(FlushPolicy::OnDemand, Replacement::Lru),
        Box::new(ssd(32)),
        Box::new(disk(32)),
    )
    .unwrap();
    dev.enable_route_log(1000);
    drive(
        &mut dev,
        &[
            req(1, Op::Write, 10 * BLOCK, BLOCK, 0),
            req(2, Op::Write, 0, 32 * BLOCK, 1_000),
        ],
    );
    let log = routes(&mut dev);
    let large = host_routes(&log, 2);
    assert!(large.iter().all(|r| r.side == Side::Flash), "{large:?}");
    assert_eq!(large.iter().map(|r| r.len_bytes).sum::<u64>(), 32 * BLOCK);
    for b in 0..32 {
        assert!(matches!(
            dev.locate(b * BLOCK),
            Location::Flash { dirty: true, .. }
        ));
    }
    assert_eq!(dev.dirty_blocks(), 32);
}

#[test]
fn a_split_read_completes_when_its_later_child_does() {
    let (flash, flash_seen) = record(ssd(32));
    let (disk, disk_seen) = record(disk(32));
    let mut dev =
        HybridDevice::new(params(FlushPolicy::OnDemand, Replacement::Lru), flash, disk).unwrap();
    dev.enable_route_log(1000);
    let mut now = SimTime::ZERO;
    one(&mut dev, &mut now, req(1, Op::Write, 2 * BLOCK, BLOCK, 0));
    routes(&mut dev);
    let (flash_before, disk_before) = (
        flash_seen.lock().unwrap().completed.len(),
        disk_seen.lock().unwrap().completed.len(),
    );
    let at = now.as_ns() + 1_000;
    let read = one(&mut dev, &mut now, req(2, Op::Read, 0, 4 * BLOCK, at));
    let log = host_routes(&routes(&mut dev), 2);
    let sides: Vec<Side> = log.iter().map(|r| r.side).collect();
    assert_eq!(sides, [Side::Disk, Side::Flash, Side::Disk]);
    let flash_done = flash_seen.lock().unwrap().completed[flash_before..].to_vec();
    let disk_done = disk_seen.lock().unwrap().completed[disk_before..].to_vec();
    assert_eq!((flash_done.len(), disk_done.len()), (1, 2));
    let latest = flash_done
        .iter()
        .chain(&disk_done)
        .map(|c| c.finish)
        .max()
        .unwrap();
    assert_eq!(read.finish, latest);
    assert_ne!(
        flash_done[0].finish, latest,
        "the children finish at different times"
    );
    assert_eq!(counter(&dev, "host_reads_split"), 1.0);
    assert_eq!(counter(&dev, "read_blocks"), 4.0);
    assert_eq!(counter(&dev, "read_blocks_hit"), 1.0);
}

/// Runs `random_requests` through a 48-block cache and checks every read against the shadow
/// model; returns the completions and the counters by name.
pub fn shadow_run(
    seed: u64,
    admission: Admission,
    flush: FlushPolicy,
    replacement: Replacement,
) -> (Vec<Completion>, Vec<(String, f64)>) {
    // 48 cache blocks over a 2 MiB range: the cache overflows all the time.
    let mut p = params(flush, replacement);
    p.admission = admission;
    p.small_write_threshold_bytes = 32 << 10;
    p.pinned = vec![ByteRange {
        start_bytes: 8 * BLOCK,
        end_bytes: 10 * BLOCK,
    }];
    let mut dev = HybridDevice::new(p, Box::new(flash_blocks(48, 4)), Box::new(disk(4))).unwrap();
    dev.enable_route_log(1 << 20);
    let requests = random_requests(seed, 3000);
    let done = drive(&mut dev, &requests);
    let log = routes(&mut dev);
    let checked = check_shadow(&log);
    assert!(checked > 10_000, "only {checked} sectors were read");
    let counters = dev
        .counters()
        .into_iter()
        .map(|c| (c.name.to_string(), c.value))
        .collect();
    (done, counters)
}

#[test]
fn every_read_is_served_from_the_newest_copy() {
    let seed = std::env::var("STORSIM_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_0002);
    println!("seed {seed:#x} (set STORSIM_SEED to repeat)");
    let policies = [
        FlushPolicy::OnDemand,
        FlushPolicy::LowWatermark {
            high_fraction: 0.75,
            low_fraction: 0.25,
        },
        FlushPolicy::Idle {
            idle: SimDuration::from_ms(2),
        },
    ];
    for (i, flush) in policies.into_iter().enumerate() {
        for replacement in [Replacement::Lru, Replacement::Fifo] {
            shadow_run(seed + i as u64, Admission::Writes, flush, replacement);
        }
    }
    // Read admission: promotions, hits on promoted blocks and writes that drop them all
    // happen in this workload, and no read may see a stale promoted copy.
    for replacement in [Replacement::Lru, Replacement::Fifo] {
        let (_, counters) = shadow_run(seed, Admission::Reads, FlushPolicy::OnDemand, replacement);
        let get = |name: &str| counters.iter().find(|c| c.0 == name).unwrap().1;
        for name in [
            "promoted_blocks",
            "invalidated_blocks",
            "evicted_blocks",
            "read_blocks_hit",
        ] {
            assert!(get(name) > 0.0, "{name} is 0 under {replacement:?}");
        }
        assert_eq!(
            get("flush_on_demand_cleanups"),
            0.0,
            "a read cache never flushes"
        );
    }
}

#[test]
fn runs_are_deterministic() {
    let flush = FlushPolicy::LowWatermark {
        high_fraction: 0.5,
        low_fraction: 0.2,
    };
    for admission in [Admission::Writes, Admission::Reads] {
        let a = shadow_run(7, admission, flush, Replacement::Lru);
        let b = shadow_run(7, admission, flush, Replacement::Lru);
        assert_eq!(a.0, b.0);
        assert_eq!(a.1, b.1);
    }
}

/// Writes blocks `blocks` one at a time, each after the previous finished.
fn write_blocks(
    dev: &mut HybridDevice,
    now: &mut SimTime,
    blocks: impl IntoIterator<Item = u64>,
    first_id: u64,
) {
    for (i, b) in blocks.into_iter().enumerate() {
        let r = req(
            first_id + i as u64,
            Op::Write,
            b * BLOCK,
            BLOCK,
            now.as_ns() + 1_000,
        );
        one(dev, now, r);
    }
}

fn flushed_blocks(log: &[Route]) -> Vec<u64> {
    let mut blocks: Vec<u64> = log
        .iter()
        .filter(|r| r.cause == RouteCause::FlushWrite)
        .flat_map(|r| (r.host_offset_bytes / BLOCK)..(r.host_offset_bytes + r.len_bytes) / BLOCK)
        .collect();
    blocks.sort_unstable();
    blocks
}

#[test]
fn on_demand_flushes_everything_only_when_the_flash_is_full() {
    let mut dev = HybridDevice::new(
        params(FlushPolicy::OnDemand, Replacement::Lru),
        Box::new(flash_blocks(16, 8)),
        Box::new(disk(8)),
    )
    .unwrap();
    dev.enable_route_log(1000);
    let mut now = SimTime::ZERO;
    // Every other block, so that each flush job moves one block.
    write_blocks(&mut dev, &mut now, (0..16).map(|i| 2 * i), 1);
    assert_eq!(counter(&dev, "flush_on_demand_cleanups"), 0.0);
    assert!(flushed_blocks(&routes(&mut dev)).is_empty());
    assert_eq!(dev.dirty_blocks(), 16);
    write_blocks(&mut dev, &mut now, [1000], 100);
    let log = routes(&mut dev);
    assert_eq!(counter(&dev, "flush_on_demand_cleanups"), 1.0);
    assert_eq!(
        flushed_blocks(&log),
        (0..16).map(|i| 2 * i).collect::<Vec<_>>()
    );
    assert_eq!(counter(&dev, "flush_on_demand_bytes"), (16 * BLOCK) as f64);
    // The write waited for the whole flush: its route comes after every flush write.
    let write_at = log
        .iter()
        .position(|r| r.cause == RouteCause::Host { id: 100 })
        .unwrap();
    let last_flush = log
        .iter()
        .rposition(|r| r.cause == RouteCause::FlushWrite)
        .unwrap();
    assert!(write_at > last_flush);
    assert_eq!(dev.dirty_blocks(), 1);
    assert_eq!(counter(&dev, "evicted_blocks"), 1.0);
}

#[test]
fn low_watermark_flushes_from_the_high_mark_down_to_the_low_mark() {
    let flush = FlushPolicy::LowWatermark {
        high_fraction: 0.5,
        low_fraction: 0.25,
    };
    let mut dev = HybridDevice::new(
        params(flush, Replacement::Lru),
        Box::new(flash_blocks(32, 8)),
        Box::new(disk(8)),
    )
    .unwrap();
    dev.enable_route_log(1000);
    let mut now = SimTime::ZERO;
    write_blocks(&mut dev, &mut now, (0..15).map(|i| 2 * i), 1);
    assert!(
        flushed_blocks(&routes(&mut dev)).is_empty(),
        "below the high mark nothing flushes"
    );
    assert_eq!(dev.dirty_blocks(), 15);
    write_blocks(&mut dev, &mut now, [30], 50);
    let log = routes(&mut dev);
    assert_eq!(counter(&dev, "flush_low_watermark_cleanups"), 1.0);
    // 16 dirty reached the high mark (50 % of 32); flushing stops at 8 (25 %), oldest first.
    assert_eq!(dev.dirty_blocks(), 8);
    assert_eq!(
        flushed_blocks(&log),
        (0..8).map(|i| 2 * i).collect::<Vec<_>>()
    );
    assert_eq!(
        counter(&dev, "flush_low_watermark_bytes"),
        (8 * BLOCK) as f64
    );
}

#[test]
fn idle_flush_waits_for_the_idle_period_and_yields_to_the_host() {
    let idle = SimDuration::from_ms(50);
    let mut dev = HybridDevice::new(
        params(FlushPolicy::Idle { idle }, Replacement::Lru),
        Box::new(flash_blocks(64, 8)),
        Box::new(disk(8)),
    )
    .unwrap();
    dev.enable_route_log(1000);
    let mut now = SimTime::ZERO;
    let mut done = Vec::new();
    // Write 20 scattered blocks back to back, so the device is never idle long between them.
    for i in 0..20u64 {
        dev.submit(
            now,
            req(i + 1, Op::Write, 2 * i * BLOCK, BLOCK, now.as_ns()),
        )
        .unwrap();
        while done.len() as u64 <= i {
            let t = dev.next_deadline().unwrap();
            now = t;
            dev.advance(now, &mut done);
        }
    }
    assert!(routes(&mut dev).is_empty() || flushed_blocks(&routes(&mut dev)).is_empty());
    let last_finish = done.last().unwrap().finish;
    assert_eq!(dev.next_deadline(), Some(last_finish + idle));
    dev.advance(last_finish + SimDuration(idle.as_ns() - 1), &mut done);
    assert!(
        routes(&mut dev).is_empty(),
        "no flush before the idle period"
    );
    now = last_finish + idle;
    dev.advance(now, &mut done);
    let started = routes(&mut dev);
    let reads = started
        .iter()
        .filter(|r| r.cause == RouteCause::FlushRead)
        .count();
    assert!(
        reads > 0,
        "the idle flush starts at the end of the idle period"
    );
    // A host request arrives at once: the flushes in flight finish, no new ones start.
    dev.submit(now, req(100, Op::Read, 5000 * BLOCK, BLOCK, now.as_ns()))
        .unwrap();
    let mut host_done = None;
    while host_done.is_none() {
        now = dev.next_deadline().unwrap();
        dev.advance(now, &mut done);
        host_done = done.iter().find(|c| c.request.id == 100).map(|c| c.finish);
    }
    let during = routes(&mut dev);
    assert_eq!(
        during
            .iter()
            .filter(|r| r.cause == RouteCause::FlushRead)
            .count(),
        0
    );
    assert_eq!(
        during
            .iter()
            .filter(|r| r.cause == RouteCause::FlushWrite)
            .count(),
        reads
    );
    let resumed = host_done.unwrap() + idle;
    dev.advance(SimTime(resumed.as_ns() - 1), &mut done);
    assert!(routes(&mut dev)
        .iter()
        .all(|r| r.cause != RouteCause::FlushRead));
    drain(&mut dev, &mut now, &mut done);
    assert!(now >= resumed);
    assert_eq!(
        dev.dirty_blocks(),
        0,
        "idle time eventually flushes everything"
    );
    assert_eq!(counter(&dev, "flush_idle_bytes"), (20 * BLOCK) as f64);
}

/// Fills a 4-block cache, reads block 0, then forces one eviction.
fn evicted_after_reread(replacement: Replacement) -> (Location, Location) {
    let mut dev = HybridDevice::new(
        params(FlushPolicy::OnDemand, replacement),
        Box::new(flash_blocks(4, 8)),
        Box::new(disk(8)),
    )
    .unwrap();
    let mut now = SimTime::ZERO;
    write_blocks(&mut dev, &mut now, [0, 2, 4, 6], 1);
    let at = now.as_ns() + 1;
    one(&mut dev, &mut now, req(10, Op::Read, 0, BLOCK, at));
    write_blocks(&mut dev, &mut now, [100], 20);
    assert_eq!(counter(&dev, "evicted_blocks"), 1.0);
    (dev.locate(0), dev.locate(2 * BLOCK))
}

#[test]
fn lru_evicts_the_least_recent_and_fifo_the_oldest() {
    let (lru0, lru2) = evicted_after_reread(Replacement::Lru);
    assert!(
        matches!(lru0, Location::Flash { dirty: false, .. }),
        "LRU kept the block just read"
    );
    assert_eq!(lru2, Location::Disk);
    let (fifo0, fifo2) = evicted_after_reread(Replacement::Fifo);
    assert_eq!(
        fifo0,
        Location::Disk,
        "FIFO evicts the first block in, read or not"
    );
    assert!(matches!(fifo2, Location::Flash { .. }));
}

#[test]
fn pinned_blocks_go_to_flash_and_are_never_flushed_or_evicted() {
    let mut p = params(FlushPolicy::OnDemand, Replacement::Lru);
    p.pinned = vec![ByteRange {
        start_bytes: 0,
        end_bytes: 4 * BLOCK,
    }];
    let mut dev = HybridDevice::new(p, Box::new(flash_blocks(12, 8)), Box::new(disk(8))).unwrap();
    dev.enable_route_log(10_000);
    let mut now = SimTime::ZERO;
    // Before its first write a pinned block is read from the disk.
    assert_eq!(dev.locate(0), Location::Disk);
    // A large write of the pinned range still goes to the flash.
    one(&mut dev, &mut now, req(1, Op::Write, 0, 128 << 10, 0));
    assert!(host_routes(&routes(&mut dev), 1)
        .iter()
        .any(|r| r.side == Side::Flash));
    write_blocks(&mut dev, &mut now, (10..60).map(|i| 2 * i), 10);
    let log = routes(&mut dev);
    assert!(counter(&dev, "evicted_blocks") > 0.0);
    assert!(
        flushed_blocks(&log).iter().all(|&b| b >= 4),
        "pinned blocks are never flushed"
    );
    for b in 0..4 {
        assert!(matches!(
            dev.locate(b * BLOCK),
            Location::Flash { pinned: true, .. }
        ));
    }
}

/// Submits a request 1 µs after `now` and runs the device until it is idle.
fn after(dev: &mut HybridDevice, now: &mut SimTime, id: u64, op: Op, offset: u64, len: u64) {
    let at = now.as_ns() + 1_000;
    one(dev, now, req(id, op, offset, len, at));
}

/// (side, host offset, length) of each of host request `id`'s child requests.
fn pieces(log: &[Route], id: u64) -> Vec<(Side, u64, u64)> {
    host_routes(log, id)
        .iter()
        .map(|r| (r.side, r.host_offset_bytes, r.len_bytes))
        .collect()
}

#[test]
fn a_partial_write_to_a_never_written_pinned_block_leaves_the_rest_on_the_disk() {
    // Under both admissions a pinned block takes its writes on the flash; before its first
    // write the disk holds all of it, and a 512-byte write makes only those bytes newer on the
    // flash. Pinned blocks are never flushed, so nothing else ever brings the rest over.
    for admission in [Admission::Writes, Admission::Reads] {
        let mut p = params(FlushPolicy::OnDemand, Replacement::Lru);
        p.admission = admission;
        p.pinned = vec![ByteRange {
            start_bytes: 0,
            end_bytes: 2 * BLOCK,
        }];
        let mut dev =
            HybridDevice::new(p, Box::new(flash_blocks(8, 8)), Box::new(disk(8))).unwrap();
        dev.enable_route_log(1000);
        let mut now = SimTime::ZERO;
        after(&mut dev, &mut now, 1, Op::Write, 512, 512);
        assert!(
            matches!(dev.locate(512), Location::Flash { pinned: true, .. }),
            "{admission:?}"
        );
        for offset in [0, 1024, BLOCK - 512] {
            assert_eq!(dev.locate(offset), Location::Disk, "{admission:?} {offset}");
        }
        // The whole block and the next one (pinned, never written): the written sector from
        // the flash, the rest from the disk.
        after(&mut dev, &mut now, 2, Op::Read, 0, 2 * BLOCK);
        // A write that leaves a gap, then one that fills the block's first sector: the block
        // is whole on the flash only when every byte of it has been written.
        after(&mut dev, &mut now, 3, Op::Write, 2048, 1024);
        after(&mut dev, &mut now, 4, Op::Read, 0, BLOCK);
        after(&mut dev, &mut now, 5, Op::Write, 0, 512);
        after(&mut dev, &mut now, 6, Op::Write, 1024, 1024);
        after(&mut dev, &mut now, 7, Op::Write, 3072, 1024);
        after(&mut dev, &mut now, 8, Op::Read, 0, BLOCK);
        let log = routes(&mut dev);
        assert_eq!(
            pieces(&log, 2),
            [
                (Side::Disk, 0, 512),
                (Side::Flash, 512, 512),
                (Side::Disk, 1024, 2 * BLOCK - 1024),
            ],
            "{admission:?}"
        );
        assert_eq!(
            pieces(&log, 4),
            [
                (Side::Disk, 0, 512),
                (Side::Flash, 512, 512),
                (Side::Disk, 1024, 1024),
                (Side::Flash, 2048, 1024),
                (Side::Disk, 3072, 1024),
            ],
            "{admission:?}"
        );
        assert_eq!(pieces(&log, 8), [(Side::Flash, 0, BLOCK)], "{admission:?}");
        for offset in (0..BLOCK).step_by(512) {
            assert!(
                matches!(dev.locate(offset), Location::Flash { pinned: true, .. }),
                "{admission:?} {offset}"
            );
        }
        assert_eq!(dev.locate(BLOCK), Location::Disk, "{admission:?}");
        assert!(check_shadow(&log) > 0);
        // A block counts as a hit only when the read's part of it came from the flash alone:
        // blocks 0 and 1 of read 2 and block 0 of read 4 missed, block 0 of read 8 hit.
        assert_eq!(counter(&dev, "read_blocks"), 4.0, "{admission:?}");
        assert_eq!(counter(&dev, "read_blocks_hit"), 1.0, "{admission:?}");
    }
}

#[test]
fn a_partial_small_write_to_an_uncached_block_goes_to_the_disk() {
    let mut dev = HybridDevice::new(
        params(FlushPolicy::OnDemand, Replacement::Lru),
        Box::new(flash_blocks(8, 8)),
        Box::new(disk(8)),
    )
    .unwrap();
    dev.enable_route_log(1000);
    let mut now = SimTime::ZERO;
    // Small, but covering no block whole: nothing enters the flash.
    one(
        &mut dev,
        &mut now,
        req(1, Op::Write, 5 * BLOCK + 512, 512, 0),
    );
    // Whole blocks 5 and 6 plus half of 7: the whole blocks enter the flash, the rest of 7 and
    // the partial write stay where they are, on the disk.
    let at = now.as_ns() + 1_000;
    one(
        &mut dev,
        &mut now,
        req(2, Op::Write, 5 * BLOCK, 2 * BLOCK + 2048, at),
    );
    let at = now.as_ns() + 1_000;
    one(
        &mut dev,
        &mut now,
        req(3, Op::Read, 4 * BLOCK, 4 * BLOCK, at),
    );
    let log = routes(&mut dev);
    assert_eq!(pieces(&log, 1), [(Side::Disk, 5 * BLOCK + 512, 512)]);
    assert_eq!(
        pieces(&log, 2),
        [
            (Side::Flash, 5 * BLOCK, 2 * BLOCK),
            (Side::Disk, 7 * BLOCK, 2048)
        ]
    );
    assert_eq!(
        pieces(&log, 3),
        [
            (Side::Disk, 4 * BLOCK, BLOCK),
            (Side::Flash, 5 * BLOCK, 2 * BLOCK),
            (Side::Disk, 7 * BLOCK, BLOCK),
        ]
    );
    assert_eq!(dev.locate(7 * BLOCK), Location::Disk);
    assert!(check_shadow(&log) > 0);
}

/// A policy that evicts and flushes the highest block number first.
#[derive(Default)]
struct HighestFirst {
    blocks: std::collections::BTreeSet<u64>,
    registered: u64,
}

impl CachePolicy for HighestFirst {
    fn name(&self) -> &'static str {
        "highest-first"
    }
    fn register(&mut self, capacity_blocks: u64) {
        self.registered = capacity_blocks;
    }
    fn update(&mut self, block: u64, event: CacheEvent) {
        match event {
            CacheEvent::Inserted | CacheEvent::Promoted => {
                self.blocks.insert(block);
            }
            CacheEvent::Removed => {
                self.blocks.remove(&block);
            }
            CacheEvent::Read
            | CacheEvent::Written
            | CacheEvent::Cleaned
            | CacheEvent::Unflushable => {}
        }
    }
    fn cleanup(
        &mut self,
        _purpose: Victims,
        count: usize,
        eligible: &mut dyn FnMut(u64) -> bool,
        victims: &mut Vec<u64>,
    ) {
        victims.extend(
            self.blocks
                .iter()
                .rev()
                .copied()
                .filter(|&b| eligible(b))
                .take(count),
        );
    }
    fn is_cached(&self, block: u64) -> bool {
        self.blocks.contains(&block)
    }
}

#[test]
fn a_custom_policy_chooses_the_victims() {
    let flush = FlushPolicy::LowWatermark {
        high_fraction: 0.5,
        low_fraction: 0.25,
    };
    let mut dev = HybridDevice::with_policy(
        params(flush, Replacement::Lru),
        Box::new(flash_blocks(16, 8)),
        Box::new(disk(8)),
        Box::new(HighestFirst::default()),
    )
    .unwrap();
    dev.enable_route_log(1000);
    let mut now = SimTime::ZERO;
    write_blocks(&mut dev, &mut now, [14, 0, 10, 2, 12, 4, 8, 6], 1);
    // The high mark (8 of 16) was reached; the policy flushed the 4 highest blocks.
    assert_eq!(flushed_blocks(&routes(&mut dev)), [8, 10, 12, 14]);
    assert_eq!(dev.dirty_blocks(), 4);
}

#[test]
fn shallow_children_push_back_without_losing_requests() {
    let (flash, flash_seen) = record(flash_blocks(64, 1));
    let (disk, disk_seen) = record(disk(1));
    let mut p = params(FlushPolicy::OnDemand, Replacement::Lru);
    p.queue_depth = 64;
    let mut dev = HybridDevice::new(p, flash, disk).unwrap();
    // 64 requests at the same instant: small and large writes, then reads of both.
    let mut requests = Vec::new();
    for i in 0..32u64 {
        requests.push(req(
            i + 1,
            Op::Write,
            i * 3 * BLOCK,
            if i % 2 == 0 { BLOCK } else { 128 << 10 },
            0,
        ));
    }
    for i in 0..32u64 {
        requests.push(req(i + 33, Op::Read, i * 3 * BLOCK, 2 * BLOCK, 0));
    }
    let done = drive(&mut dev, &requests);
    assert_eq!(done.len(), 64);
    assert_eq!(counter(&dev, "child_refusals"), 0.0);
    for seen in [&flash_seen, &disk_seen] {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.submitted.len(), seen.completed.len());
    }
    // With one slot per child the queue really was full: children ran back to back.
    let disk_done = &disk_seen.lock().unwrap().completed;
    assert!(disk_done
        .windows(2)
        .all(|w| w[1].service_start >= w[0].finish));
}

#[test]
fn bad_parameters_are_errors_not_panics() {
    let mut p = params(FlushPolicy::OnDemand, Replacement::Lru);
    p.cache_block_bytes = 1000;
    assert!(HybridDevice::new(p, Box::new(flash_blocks(4, 1)), Box::new(disk(1))).is_err());
    let mut p = params(FlushPolicy::OnDemand, Replacement::Lru);
    p.pinned = vec![ByteRange {
        start_bytes: 0,
        end_bytes: 10 * BLOCK,
    }];
    let e = HybridDevice::new(p, Box::new(flash_blocks(4, 1)), Box::new(disk(1)))
        .err()
        .unwrap();
    assert!(e.contains("pinned"), "{e}");
    let mut dev = HybridDevice::new(
        params(FlushPolicy::OnDemand, Replacement::Lru),
        Box::new(flash_blocks(4, 1)),
        Box::new(disk(1)),
    )
    .unwrap();
    assert!(dev
        .submit(SimTime::ZERO, req(1, Op::Read, 1 << 30, BLOCK, 0))
        .is_err());
    assert!(dev
        .submit(SimTime::ZERO, req(2, Op::Write, 0, 0, 0))
        .is_err());
}
