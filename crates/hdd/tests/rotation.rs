//! The rotational position over a long run of sectors, far into a simulation.

mod support;
use storsim_core::Op;
use storsim_hdd::*;
use support::{req, run_one, small_drive, zone};

/// The IBM 18ES's rotation and track length: 7200 rpm (a revolution of 8 333 333 1/3 ns) and
/// 374 sectors a track, neither of which floating point holds exactly.
fn params() -> HddParams {
    let mut p = small_drive();
    p.geometry.surfaces = 1;
    p.geometry.cylinders = 4;
    p.geometry.zones = vec![zone(0, 3, 374, 0, vec![])];
    p.mechanics.rpm = 7200.0;
    p.mechanics.seek = SeekCurve::Extracted {
        points: vec![(1, 1_000_000), (3, 2_000_000)],
    };
    p.overheads.read_miss_after_read_ns = 200_000;
    p.interface.read_transfer_ns_per_sector = 0;
    p.interface.write_transfer_ns_per_sector = 0;
    p.cache.segment_sectors = 512;
    p
}

/// A read of track 0, all 374 sectors, arriving 458.3 s into a run. The mechanism starts
/// after the 200 us miss overhead at 458 333 333 333 ns, a third of a nanosecond before the
/// start of revolution 55 000, where sector 0 begins; the track then takes one revolution.
/// The read is done at 458 341 666 666 2/3 ns, reported at the next whole nanosecond:
/// 200 000 + 1/3 + 8 333 333 1/3 ns, rounded up, after the arrival. Summing 374 sector times
/// at this magnitude used to leave the heads a rounding error past the start of some sector
/// and charge a spurious extra revolution (16 866 668 ns in all); consecutive sectors now
/// follow one another exactly, as DiskSim steps from sector to sector.
#[test]
fn a_track_read_late_in_a_run_takes_one_revolution() {
    let mut d = HddDevice::new(params()).unwrap();
    let arrival = 458_333_333_333 - 200_000;
    assert_eq!(
        run_one(&mut d, req(0, Op::Read, 0, 374, arrival)),
        8_533_334
    );
}
