//! Children and a driver shared by the hybrid tests.
#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use storsim_blackbox::linear::{LinearCost, LinearDevice, LinearParams};
use storsim_blackbox::SequentialDetect;
use storsim_core::conformance::{self, Recorder, SharedLog};
use storsim_core::{Completion, Device, Op, Prng, Request, SimDuration, SimTime};
use storsim_flash::{CellType, Geometry, Timing};
use storsim_ftl::FtlConfig;
use storsim_hybrid::{Route, RouteCause, Side};
use storsim_ssd::{presets, SsdDevice};

pub const BLOCK: u64 = 4096;

/// A small real SSD: 1 channel, 2 dies, 64 blocks of 32 pages of 4 KiB, page FTL.
pub fn ssd(queue_depth: usize) -> SsdDevice {
    let mut p = presets::flashsim_2009(FtlConfig::default_for("page").unwrap());
    p.geometry = Geometry {
        channels: 1,
        chips_per_channel: 2,
        dies_per_chip: 1,
        planes_per_die: 1,
        blocks_per_plane: 64,
        pages_per_block: 32,
        page_bytes: 4096,
        oob_bytes: 0,
    };
    p.timing = Timing::uniform(
        CellType::Slc,
        SimDuration(50_000),
        SimDuration(300_000),
        SimDuration(2_000_000),
        SimDuration(1_000),
        400,
        1,
    );
    p.queue_depth = queue_depth;
    SsdDevice::new(p).unwrap()
}

/// A linear device: `fixed_us` per request plus `per_kib_us` per KiB, one server.
pub fn linear(
    capacity_bytes: u64,
    fixed_us: f64,
    per_kib_us: f64,
    queue_depth: usize,
) -> LinearDevice {
    let cost = LinearCost::from_us(fixed_us, per_kib_us);
    LinearDevice::new(LinearParams {
        capacity_bytes,
        costs: [cost; 4],
        trim: SimDuration::from_us(10),
        flush: SimDuration::from_us(100),
        sequential_detect: SequentialDetect::PreviousRequest,
        servers: 1,
        queue_depth,
    })
}

/// A disk-like linear device: 5 ms a request, 10 µs a KiB, 1 GiB.
pub fn disk(queue_depth: usize) -> LinearDevice {
    linear(1 << 30, 5000.0, 10.0, queue_depth)
}

/// A flash-like linear device with exactly `blocks` cache blocks: 100 µs + 5 µs a KiB.
pub fn flash_blocks(blocks: u64, queue_depth: usize) -> LinearDevice {
    linear(blocks * BLOCK, 100.0, 5.0, queue_depth)
}

/// Wraps a child in the conformance kit's recorder, which logs its traffic.
pub fn record(inner: impl Device + 'static) -> (Box<dyn Device>, SharedLog) {
    Recorder::boxed(inner)
}

pub fn req(id: u64, op: Op, offset_bytes: u64, len_bytes: u64, arrival_ns: u64) -> Request {
    Request {
        id,
        op,
        offset_bytes,
        len_bytes,
        arrival: SimTime(arrival_ns),
        flow: 0,
    }
}

/// Submits `requests` (sorted by arrival) open loop with the conformance kit's driver, waiting
/// whenever the device is full, then drains the device's own work (flushes, promotions). The
/// kit checks the contract on every call: every request completes exactly once, in finishing
/// order, after it arrived, at an instant the device announced.
pub fn drive(device: &mut dyn Device, requests: &[Request]) -> Vec<Completion> {
    let run =
        conformance::drive(device, requests).unwrap_or_else(|violation| panic!("{violation}"));
    assert_eq!(run.failed_at, None, "the device failed");
    let (mut now, mut after) = (run.end, Vec::new());
    drain(device, &mut now, &mut after);
    assert!(
        after.is_empty(),
        "completions after the last one: {after:?}"
    );
    run.completions
}

/// Advances through every deadline until the device is idle.
pub fn drain(device: &mut dyn Device, now: &mut SimTime, done: &mut Vec<Completion>) {
    while let Some(t) = device.next_deadline() {
        *now = (*now).max(t);
        device.advance(*now, done);
    }
}

/// A random workload over a small address range, with partial blocks, concurrency and host
/// flushes, for the shadow test and the determinism test.
pub fn random_requests(seed: u64, count: u64) -> Vec<Request> {
    let mut rng = Prng::new(seed);
    let mut t = 0;
    (0..count)
        .map(|id| {
            t += rng.below(3_000_000);
            let large = rng.below(4) == 0;
            let sectors = 1 + rng.below(if large { 256 } else { 24 });
            let offset = rng.below(4096 - sectors) * 512;
            let op = match rng.below(20) {
                0 => Op::Flush,
                1..=9 => Op::Write,
                _ => Op::Read,
            };
            let (offset, len) = if op == Op::Flush {
                (0, 0)
            } else {
                (offset, sectors * 512)
            };
            req(id + 1, op, offset, len, t)
        })
        .collect()
}

/// What a flash sector holds before anything was written to it: not the disk's data (version
/// 0), so that a read of a never-written flash sector fails the shadow check.
pub const NEVER_WRITTEN: u64 = u64::MAX;

/// Replays the route log against a content model (a version per 512-byte sector on each
/// child) and checks that every host read sees the newest write of every sector. A promotion
/// (read admission) copies into the flash exactly what its host read got from the disk, so a
/// promotion of bytes that a later write overwrote would show up as a stale flash read. The
/// disk starts with version 0 everywhere and the flash with [`NEVER_WRITTEN`].
pub fn check_shadow(log: &[Route]) -> u64 {
    let sector = 512;
    let mut truth: HashMap<u64, u64> = HashMap::new();
    let mut flash: HashMap<u64, u64> = HashMap::new();
    let mut disk: HashMap<u64, u64> = HashMap::new();
    let mut flushing: BTreeMap<(u64, u64), Vec<u64>> = BTreeMap::new();
    // What each host read got from the disk, by (host request, host sector).
    let mut fetched: HashMap<(u64, u64), u64> = HashMap::new();
    let mut checked = 0;
    for r in log {
        let n = r.len_bytes / sector;
        let host = r.host_offset_bytes / sector;
        let dev = r.device_offset_bytes / sector;
        match (r.cause, r.op) {
            (RouteCause::Host { id }, Op::Write) => {
                let target = if r.side == Side::Flash {
                    &mut flash
                } else {
                    &mut disk
                };
                for i in 0..n {
                    target.insert(dev + i, id);
                    truth.insert(host + i, id);
                }
            }
            (RouteCause::Host { id }, Op::Read) => {
                let (source, unwritten) = if r.side == Side::Flash {
                    (&flash, NEVER_WRITTEN)
                } else {
                    (&disk, 0)
                };
                for i in 0..n {
                    let want = truth.get(&(host + i)).copied().unwrap_or(0);
                    let got = source.get(&(dev + i)).copied().unwrap_or(unwritten);
                    assert_eq!(
                        got,
                        want,
                        "read {id} of sector {} from the {:?} got version {got}, newest is {want}",
                        host + i,
                        r.side
                    );
                    if r.side == Side::Disk {
                        fetched.insert((id, host + i), got);
                    }
                    checked += 1;
                }
            }
            (RouteCause::Promote { id }, _) => {
                for i in 0..n {
                    let v = *fetched
                        .get(&(id, host + i))
                        .expect("a promotion copies sectors its read fetched from the disk");
                    flash.insert(dev + i, v);
                }
            }
            (RouteCause::FlushRead, _) => {
                let data = (0..n)
                    .map(|i| flash.get(&(dev + i)).copied().unwrap_or(NEVER_WRITTEN))
                    .collect();
                assert!(flushing
                    .insert((r.host_offset_bytes, r.len_bytes), data)
                    .is_none());
            }
            (RouteCause::FlushWrite, _) => {
                let data = flushing
                    .remove(&(r.host_offset_bytes, r.len_bytes))
                    .expect("a flush write follows its flush read");
                for (i, v) in data.into_iter().enumerate() {
                    disk.insert(dev + i as u64, v);
                }
            }
            _ => {}
        }
    }
    checked
}
