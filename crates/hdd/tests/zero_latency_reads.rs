//! Zero-latency reads (DiskSim's "immediate buffer read"), with hand-computed values.
//!
//! The drive: one zone of 20 cylinders, 2 surfaces, 8 sectors a track, no spares, so track
//! k (cylinder k / 2, surface k % 2) holds blocks 8k..8k+8, and at 6000 rpm a revolution takes
//! 10 ms and a sector 1.25 ms (values that floating point holds exactly). Track 0's sector s
//! starts at angle s/8: at 5 ms the heads are at the start of sector 4. Track 1 is skewed by
//! two sectors, so its sector s starts at angle (2 + s)/8. A read miss costs 200 us before
//! the mechanism starts; no cache, no read-ahead, and the bus takes 10 us a block, so the
//! media sets the pace. The first block's arrival reconnects the bus (watermark of one
//! block); blocks go to the host in order.

mod support;
use storsim_core::Op;
use storsim_hdd::*;
use support::{req, run_one, small_drive, zone};

fn params(immediate_read: bool) -> HddParams {
    let mut p = small_drive();
    p.geometry.zones = vec![zone(0, 19, 8, 0, vec![])];
    p.overheads.read_miss_after_read_ns = 200_000;
    p.overheads.read_hit_after_read_ns = 50_000;
    p.cache.immediate_read = immediate_read;
    p
}

/// Arrival of every request below: the mechanism starts 200 us later, at 5 ms, at the start
/// of track 0's sector 4 (the heads rest on track 0 at first).
const ARRIVAL: u64 = 4_800_000;

fn read_latency(p: HddParams, lbn: u64, n: u64) -> u64 {
    let mut d = HddDevice::new(p).unwrap();
    run_one(&mut d, req(0, Op::Read, lbn, n, ARRIVAL))
}

/// A whole track never waits for rotation: the heads take sectors 4..8 (done 6.25..10 ms),
/// then 0..4 (done 11.25..15 ms), so the track is read one revolution after the heads
/// arrived. Block 0 reconnects the bus at 11.25 ms; block 3 goes at 15.01 ms and blocks 4..8
/// follow at 10 us each: done at 15.05 ms, 10.25 ms after the arrival. Without zero latency
/// the heads wait 5 ms for sector 0 and read 0..8 by 20 ms: done at 20.01 ms.
#[test]
fn a_whole_track_is_read_one_revolution_after_the_heads_arrive() {
    assert_eq!(read_latency(params(true), 0, 8), 10_250_000);
    assert_eq!(read_latency(params(false), 0, 8), 15_210_000);
}

/// Blocks 2..6 (sectors 2..6) with the heads arriving at sector 4: sectors 4 and 5 are read
/// at once (done 6.25 and 7.5 ms), sectors 2 and 3 on the next pass (done 13.75 and 15 ms).
/// The bus sends block 2 at 13.76 ms, block 3 at 15.01 ms and blocks 4 and 5 right after:
/// done at 15.03 ms. In order, the heads wait for sector 2 until 12.5 ms and read the four
/// by 17.5 ms: done at 17.51 ms. The saving is the part read on the first pass, less the bus
/// time it still costs.
#[test]
fn a_partial_track_waits_only_for_the_sectors_it_still_needs() {
    assert_eq!(read_latency(params(true), 2, 4), 10_230_000);
    assert_eq!(read_latency(params(false), 2, 4), 12_710_000);
}

/// When the heads arrive outside the request's sectors, they wait for its first sector
/// either way: blocks 5..7 are read from 6.25 to 8.75 ms (done 8.76 ms), blocks 1..3 on the
/// next revolution, from 11.25 to 13.75 ms (done 13.76 ms).
#[test]
fn heads_outside_the_request_wait_for_its_first_sector_either_way() {
    for immediate in [true, false] {
        assert_eq!(read_latency(params(immediate), 5, 2), 3_960_000);
        assert_eq!(read_latency(params(immediate), 1, 2), 8_960_000);
    }
}

/// A bus slower than the media hides the order the media reads in: at 2 ms a block, blocks
/// 2..6 leave at 15.75, 17.75, 19.75 and 21.75 ms whether sectors 4 and 5 came first or
/// last (the bus waits for block 2 at 13.75 ms in both cases).
#[test]
fn a_bus_slower_than_the_media_hides_the_reading_order() {
    for immediate in [true, false] {
        let mut p = params(immediate);
        p.interface.read_transfer_ns_per_sector = 2_000_000;
        assert_eq!(read_latency(p, 2, 4), 16_950_000);
    }
}

/// Each track of a request is read in any order. Blocks 6..12: sectors 6 and 7 of track 0
/// (done 8.75 and 10 ms), then a head switch of 3 ms to track 1, arriving at 13 ms, inside
/// track 1's sector 0 (angles 0.25..0.375). Sectors 1..3 (blocks 9..11) start at the next
/// sector boundary, 13.75 ms, and are done at 15, 16.25 and 17.5 ms; sector 0 (block 8) comes
/// round at 22.5 ms and is done at 23.75 ms. The bus sends blocks 6 and 7 by 10.01 ms, waits
/// for block 8 and sends 8..12: done at 23.79 ms. In order, sector 0 at 22.5 ms starts a run
/// of four sectors done at 27.5 ms: done at 27.51 ms.
#[test]
fn every_track_of_a_request_is_read_in_any_order() {
    for (immediate, latency) in [(true, 18_990_000), (false, 22_710_000)] {
        let mut p = params(immediate);
        p.mechanics.head_switch_ns = 3_000_000;
        assert_eq!(read_latency(p, 6, 6), latency);
    }
}
