//! DEC's read-ahead scheme (DiskSim's "buffer continuous read" 4) and the end of a
//! read-ahead, with hand-computed values.
//!
//! The drive: one zone of 20 cylinders, 2 surfaces, 10 sectors a track, no spares, so track
//! k (cylinder k / 2, surface k % 2) holds blocks 10k..10k+10. A read hit costs the read-hit
//! overhead (50 us) and 10 us a block on the bus; anything that has to come from the media
//! takes over a millisecond (a sector passes in 1 ms at 6000 rpm).

mod support;
use storsim_core::{Op, Request};
use storsim_hdd::layout::Layout;
use storsim_hdd::*;
use support::{req, run_one, small_drive, zone};

fn params(read_ahead: ReadAhead) -> HddParams {
    let mut p = small_drive();
    p.overheads.read_miss_after_read_ns = 200_000;
    p.overheads.read_hit_after_read_ns = 50_000;
    p.cache = CacheParams {
        enabled: true,
        segments: 2,
        read_ahead,
        // DEC's scheme ignores the maximum read-ahead; the tests read beyond it.
        max_read_ahead_sectors: 4,
        read_hits_on_write_data: true,
        write_back: WriteBack::Full,
        combine_sequential_writes: true,
        ..p.cache
    };
    p
}

fn read(id: u64, lbn: u64, n: u64, t: u64) -> Request {
    req(id, Op::Read, lbn, n, t)
}

const SECOND: u64 = 1_000_000_000;
/// 50 us read-hit overhead plus 10 us a block.
const fn hit_ns(n: u64) -> u64 {
    50_000 + n * 10_000
}

#[test]
fn track_bounds_are_the_blocks_a_track_maps() {
    let l = Layout::new(&params(ReadAhead::DecTracks).geometry).unwrap();
    assert_eq!(l.track_bounds(0), Some((0, 10)));
    assert_eq!(l.track_bounds(15), Some((10, 20)));
    assert_eq!(l.track_bounds(399), Some((390, 400)));
    assert_eq!(l.track_bounds(400), None);
    // With a slipped sector (zone-relative sector 4, and 17 on the second track) a track
    // maps one block fewer: 0..9 on the first track, 9..18 on the second.
    let mut g = params(ReadAhead::DecTracks).geometry;
    g.sparing = SparingScheme::SectorsPerZone;
    g.zones = vec![zone(0, 19, 10, 3, vec![4, 17])];
    let l = Layout::new(&g).unwrap();
    assert_eq!(l.track_bounds(3), Some((0, 9)));
    assert_eq!(l.track_bounds(9), Some((9, 18)));
}

/// A read within one track reads ahead to the end of that track only.
#[test]
fn dec_read_ahead_stops_at_the_end_of_the_track() {
    let mut d = HddDevice::new(params(ReadAhead::DecTracks)).unwrap();
    assert!(run_one(&mut d, read(0, 2, 2, 0)) > 1_000_000);
    // Blocks 4..10 were read ahead: a hit.
    assert_eq!(run_one(&mut d, read(1, 8, 2, SECOND)), hit_ns(2));
    // Block 10 starts the next track, which DEC's scheme did not read.
    assert!(run_one(&mut d, read(2, 10, 1, 2 * SECOND)) > 1_000_000);
}

/// A read whose segment started on an earlier track than the block after it reads ahead
/// through that block's track and one more track: blocks 12..30 after a read of 8..12,
/// far beyond the maximum read-ahead of 4 blocks.
#[test]
fn dec_read_ahead_takes_one_more_track_for_a_segment_from_an_earlier_track() {
    let mut d = HddDevice::new(params(ReadAhead::DecTracks)).unwrap();
    assert!(run_one(&mut d, read(0, 8, 4, 0)) > 1_000_000);
    assert_eq!(run_one(&mut d, read(1, 28, 2, SECOND)), hit_ns(2));
    assert!(run_one(&mut d, read(2, 30, 1, 2 * SECOND)) > 1_000_000);
}

/// A read-ahead that reached its limit has released the mechanism. A later hit raises the
/// limit but does not restart it (the drive reads ahead on idle hits only when told to), so
/// the block after the segment is a miss; with read-ahead on idle hits the hit restarts it.
#[test]
fn a_finished_read_ahead_is_not_restarted_by_a_hit() {
    let mut d = HddDevice::new(params(ReadAhead::DecTracks)).unwrap();
    run_one(&mut d, read(0, 2, 2, 0));
    assert_eq!(run_one(&mut d, read(1, 8, 2, SECOND)), hit_ns(2));
    assert!(run_one(&mut d, read(2, 10, 1, 2 * SECOND)) > 1_000_000);

    let mut p = params(ReadAhead::DecTracks);
    p.cache.read_ahead_on_idle_hit = true;
    let mut d = HddDevice::new(p).unwrap();
    run_one(&mut d, read(0, 2, 2, 0));
    assert_eq!(run_one(&mut d, read(1, 8, 2, SECOND)), hit_ns(2));
    assert_eq!(run_one(&mut d, read(2, 10, 1, 2 * SECOND)), hit_ns(1));
}

/// The same holds for the segment-end scheme: after a read of block 0, blocks 1..5 (the
/// maximum read-ahead of 4) are read ahead, and a hit on them long after does not read
/// further.
#[test]
fn a_finished_segment_read_ahead_is_not_restarted_by_a_hit() {
    let mut d = HddDevice::new(params(ReadAhead::SegmentEnd)).unwrap();
    run_one(&mut d, read(0, 0, 1, 0));
    assert_eq!(run_one(&mut d, read(1, 1, 4, SECOND)), hit_ns(4));
    assert!(run_one(&mut d, read(2, 5, 1, 2 * SECOND)) > 1_000_000);
}
