//! What the hdd test files share: a zone with the tests' skews, building a request in blocks,
//! and timing one request alone.

use storsim_core::{Device, Op, Request, SimTime};
use storsim_hdd::{HddDevice, Zone};

/// A request of `n` 512-byte blocks from block `lbn`, arriving at `t` ns.
pub fn req(id: u64, op: Op, lbn: u64, n: u64, t: u64) -> Request {
    Request {
        id,
        op,
        offset_bytes: lbn * 512,
        len_bytes: n * 512,
        arrival: SimTime::from_ns(t),
    }
}

/// Submits `r` to an idle device and returns its latency in ns.
pub fn run_one(d: &mut HddDevice, r: Request) -> u64 {
    let t = r.arrival;
    d.submit(t, r).unwrap();
    let f = d.next_deadline().unwrap();
    let mut done = vec![];
    d.advance(f, &mut done);
    assert_eq!(done.len(), 1);
    f.as_ns() - t.as_ns()
}

/// A zone of cylinders `first..=last` with `spt` sectors per track, skews of 2 (track) and 5
/// (cylinder) sectors, and the given spares and slips.
pub fn zone(first: u32, last: u32, spt: u32, spares: u32, slips: Vec<u64>) -> Zone {
    Zone {
        first_cylinder: first,
        last_cylinder: last,
        sectors_per_track: spt,
        first_block_offset_sectors: 0.0,
        empty_front_sectors: 0,
        track_skew_sectors: 2.0,
        cylinder_skew_sectors: 5.0,
        spares,
        slips,
        defects: vec![],
    }
}
