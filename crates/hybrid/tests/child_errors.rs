//! Configuration 2's background work when a child answers with an error (a faults layer over
//! it): a failed flush keeps its blocks dirty and is retried, a bounded number of times; a
//! cache full of blocks that cannot be flushed sends writes around it; a failed promotion
//! caches nothing.

mod common;

use common::*;
use storsim_core::conformance::counter;
use storsim_core::conformance::SharedLog;
use storsim_core::{Completion, Device, Op, Request, SimDuration, Status};
use storsim_faults::{FaultKind, FaultPlan, FaultRule, FaultsDevice};
use storsim_hybrid::{Admission, FlushPolicy, HybridDevice, HybridParams, Location, Replacement};

fn params(admission: Admission, flush: FlushPolicy) -> HybridParams {
    HybridParams {
        admission,
        small_write_threshold_bytes: 64 << 10,
        cache_block_bytes: BLOCK,
        flush,
        replacement: Replacement::Lru,
        pinned: Vec::new(),
        queue_depth: 32,
    }
}

fn idle_flush() -> FlushPolicy {
    FlushPolicy::Idle {
        idle: SimDuration::from_ms(1),
    }
}

/// `inner` behind a faults layer with `rules`, recorded.
fn faulty(inner: impl Device + 'static, rules: Vec<FaultRule>) -> (Box<dyn Device>, SharedLog) {
    let plan = FaultPlan {
        rules,
        ..FaultPlan::default()
    };
    record(FaultsDevice::new(Box::new(inner), &plan))
}

fn hybrid(params: HybridParams, flash: Box<dyn Device>, disk: Box<dyn Device>) -> HybridDevice {
    let mut dev = HybridDevice::new(params, flash, disk).unwrap();
    dev.enable_fault_counters();
    dev
}

/// Four small writes of blocks 0..4, 100 µs apart.
fn four_small_writes() -> Vec<Request> {
    (0..4)
        .map(|i| req(i, Op::Write, i * BLOCK, BLOCK, i * 100_000))
        .collect()
}

fn all_ok(done: &[Completion]) -> bool {
    done.iter().all(|c| c.status.is_ok())
}

fn is_dirty_on_flash(dev: &HybridDevice, block: u64) -> bool {
    matches!(
        dev.locate(block * BLOCK),
        Location::Flash { dirty: true, .. }
    )
}

#[test]
fn a_flush_whose_disk_write_fails_keeps_its_blocks_dirty_and_is_retried() {
    // The disk fails every write for 8 ms from the first it is given, then recovers.
    let (disk, disk_log) = faulty(
        disk(8),
        vec![FaultRule {
            duration_ns: Some(8_000_000),
            ..FaultRule::always(FaultKind::WriteError)
        }],
    );
    let (flash, _) = record(flash_blocks(64, 8));
    let mut dev = hybrid(params(Admission::Writes, idle_flush()), flash, disk);
    let done = drive(&mut dev, &four_small_writes());
    assert!(all_ok(&done), "the host's writes went to the flash");
    let failed_jobs = counter(&dev, "flush_failed_jobs");
    assert!(failed_jobs >= 1.0, "the first flush fell in the window");
    // Each failed attempt carried the four blocks, and the next one took them again, until
    // one reached the disk: the blocks are clean now, flushed once.
    assert_eq!(counter(&dev, "flush_failed_blocks"), 4.0 * failed_jobs);
    assert_eq!(
        disk_log.lock().unwrap().submitted_count(Op::Write) as f64,
        failed_jobs + 1.0
    );
    assert_eq!(counter(&dev, "flush_idle_bytes"), 4.0 * BLOCK as f64);
    assert_eq!(dev.dirty_blocks(), 0);
    assert_eq!(counter(&dev, "flush_given_up_blocks"), 0.0);
    assert_eq!(counter(&dev, "unflushable_blocks"), 0.0);
}

#[test]
fn blocks_the_disk_never_takes_stay_dirty_on_the_flash_after_three_attempts() {
    let (disk, disk_log) = faulty(disk(8), vec![FaultRule::always(FaultKind::WriteError)]);
    let (flash, _) = record(flash_blocks(64, 8));
    let mut dev = hybrid(params(Admission::Writes, idle_flush()), flash, disk);
    let done = drive(&mut dev, &four_small_writes());
    assert!(all_ok(&done));
    // Three attempts, then the controller stops: the flash keeps the only copy, dirty.
    assert_eq!(counter(&dev, "flush_failed_jobs"), 3.0);
    assert_eq!(disk_log.lock().unwrap().submitted_count(Op::Write), 3);
    assert_eq!(counter(&dev, "flush_given_up_blocks"), 4.0);
    assert_eq!(counter(&dev, "unflushable_blocks"), 4.0);
    assert_eq!(
        counter(&dev, "flush_idle_bytes"),
        0.0,
        "nothing was flushed"
    );
    assert_eq!(dev.dirty_blocks(), 4);
    assert!((0..4).all(|b| is_dirty_on_flash(&dev, b)));
    // Reads of them are served by the flash, which has their newest data.
    let t = 1_000_000_000;
    let reads: Vec<Request> = (0..4)
        .map(|i| req(10 + i, Op::Read, i * BLOCK, BLOCK, t + i * 1_000_000))
        .collect();
    let done = drive(&mut dev, &reads);
    assert!(all_ok(&done));
    assert_eq!(counter(&dev, "host_reads_flash"), 4.0);
    // A host write gives block 0 new data, and with it three new attempts.
    let done = drive(&mut dev, &[req(20, Op::Write, 0, BLOCK, 2 * t)]);
    assert!(all_ok(&done));
    assert_eq!(counter(&dev, "flush_failed_jobs"), 6.0);
    assert_eq!(counter(&dev, "flush_given_up_blocks"), 5.0);
    assert_eq!(counter(&dev, "unflushable_blocks"), 4.0);
}

#[test]
fn a_flush_whose_flash_read_fails_writes_nothing_to_the_disk() {
    let (flash, _) = faulty(
        flash_blocks(64, 8),
        vec![FaultRule::always(FaultKind::ReadError)],
    );
    let (disk, disk_log) = record(disk(8));
    let mut dev = hybrid(params(Admission::Writes, idle_flush()), flash, disk);
    let done = drive(&mut dev, &four_small_writes());
    assert!(all_ok(&done));
    // The bytes could not be read, so nothing went to the disk; the blocks stay dirty.
    assert_eq!(disk_log.lock().unwrap().submitted_count(Op::Write), 0);
    assert_eq!(counter(&dev, "flush_failed_jobs"), 3.0);
    assert_eq!(counter(&dev, "unflushable_blocks"), 4.0);
    assert_eq!(dev.dirty_blocks(), 4);
}

#[test]
fn a_write_goes_around_a_cache_full_of_blocks_that_cannot_be_flushed() {
    // The disk cannot write its first eight blocks (64 sectors); the flash holds eight.
    let (disk, _) = faulty(
        disk(8),
        vec![FaultRule {
            sectors: Some((0, 8 * BLOCK / 512)),
            ..FaultRule::always(FaultKind::WriteError)
        }],
    );
    let (flash, _) = record(flash_blocks(8, 8));
    let mut dev = hybrid(
        params(Admission::Writes, FlushPolicy::OnDemand),
        flash,
        disk,
    );
    dev.enable_route_log(1000);
    let mut requests: Vec<Request> = (0..8)
        .map(|i| req(i, Op::Write, i * BLOCK, BLOCK, i * 100_000))
        .collect();
    // The ninth small write finds the flash full of dirty blocks: the on-demand full flush
    // fails three times, then the write goes to the disk instead of waiting for ever.
    requests.push(req(8, Op::Write, 100 * BLOCK, BLOCK, 1_000_000));
    let done = drive(&mut dev, &requests);
    assert!(all_ok(&done), "{done:?}");
    assert_eq!(counter(&dev, "flush_failed_jobs"), 3.0);
    assert_eq!(counter(&dev, "unflushable_blocks"), 8.0);
    assert_eq!(counter(&dev, "bypassed_writes"), 1.0);
    assert_eq!(counter(&dev, "host_writes_disk"), 1.0);
    assert_eq!(dev.locate(100 * BLOCK), Location::Disk);
    // Rewriting a cached block still goes to the flash.
    let done = drive(
        &mut dev,
        &[req(9, Op::Write, 3 * BLOCK, BLOCK, 1_000_000_000)],
    );
    assert!(all_ok(&done));
    assert_eq!(counter(&dev, "host_writes_flash"), 9.0);
}

/// A read cache over `flash` and `disk`; reads blocks 10..14 twice, 10 ms apart.
fn read_twice(flash: Box<dyn Device>, disk: Box<dyn Device>) -> (HybridDevice, Vec<Completion>) {
    let mut dev = hybrid(params(Admission::Reads, FlushPolicy::OnDemand), flash, disk);
    let requests = [
        req(1, Op::Read, 10 * BLOCK, 4 * BLOCK, 0),
        req(2, Op::Read, 10 * BLOCK, 4 * BLOCK, 10_000_000),
    ];
    let done = drive(&mut dev, &requests);
    (dev, done)
}

#[test]
fn a_promotion_whose_flash_write_fails_caches_nothing() {
    let (flash, _) = faulty(
        flash_blocks(64, 8),
        vec![FaultRule::always(FaultKind::WriteError)],
    );
    let (disk, disk_log) = record(disk(8));
    let (dev, done) = read_twice(flash, disk);
    assert!(all_ok(&done), "the host's reads came from the disk");
    // Each read missed and tried to promote the four blocks.
    assert_eq!(counter(&dev, "promotion_failed_blocks"), 8.0);
    assert_eq!(counter(&dev, "promoted_blocks"), 0.0);
    // The second read misses again: nothing was cached.
    assert_eq!(counter(&dev, "host_reads_disk"), 2.0);
    assert_eq!(counter(&dev, "read_blocks_hit"), 0.0);
    assert_eq!(disk_log.lock().unwrap().submitted_count(Op::Read), 2);
    assert!((10..14).all(|b| dev.locate(b * BLOCK) == Location::Disk));
}

#[test]
fn a_disk_read_that_fails_promotes_nothing() {
    let (flash, flash_log) = record(flash_blocks(64, 8));
    let (disk, _) = faulty(disk(8), vec![FaultRule::always(FaultKind::ReadError)]);
    let (dev, done) = read_twice(flash, disk);
    assert!(done.iter().all(|c| c.status == Status::MediaError));
    // The read fetched nothing, so nothing was copied into the flash.
    assert_eq!(flash_log.lock().unwrap().submitted_count(Op::Write), 0);
    assert_eq!(counter(&dev, "promotion_failed_blocks"), 8.0);
    assert_eq!(counter(&dev, "promoted_blocks"), 0.0);
    assert!((10..14).all(|b| dev.locate(b * BLOCK) == Location::Disk));
}

#[test]
fn the_error_counters_are_listed_only_when_asked_for() {
    let dev = HybridDevice::new(
        params(Admission::Writes, FlushPolicy::OnDemand),
        Box::new(flash_blocks(8, 8)),
        Box::new(disk(8)),
    )
    .unwrap();
    let names: Vec<String> = dev.counters().into_iter().map(|c| c.name).collect();
    assert!(!names.iter().any(|n| n == "flush_failed_jobs"
        || n == "unflushable_blocks"
        || n == "promotion_failed_blocks"));
}
