//! What the hdd test files share: a small drive to start from, a zone with the tests' skews,
//! building a request in blocks, and timing one request alone.

use storsim_core::conformance;
use storsim_core::{Op, Request, SimTime};
use storsim_hdd::{
    CacheParams, Geometry, HddDevice, HddParams, Interface, Mechanics, Overheads, PowerParams,
    ReadAhead, SchedulerKind, SeekCurve, SparingScheme, SurfaceOrder, WriteBack, Zone,
};

/// A request of `n` 512-byte blocks from block `lbn`, arriving at `t` ns.
pub fn req(id: u64, op: Op, lbn: u64, n: u64, t: u64) -> Request {
    Request {
        id,
        op,
        offset_bytes: lbn * 512,
        len_bytes: n * 512,
        arrival: SimTime::from_ns(t),
        flow: 0,
    }
}

/// Submits `r` at its arrival through the conformance kit's checked driver and returns its
/// latency in ns.
pub fn run_one(d: &mut HddDevice, r: Request) -> u64 {
    let run = conformance::drive(d, &[r]).unwrap_or_else(|violation| panic!("{violation}"));
    assert_eq!(run.completions.len(), 1);
    run.completions[0].latency().as_ns()
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

/// The small drive the hand-computed tests start from, each changing what it is about: one
/// zone of 20 cylinders on 2 surfaces with 10 sectors a track (see [`zone`]), 6000 rpm (a
/// sector passes in 1 ms, a turn takes 10 ms), a seek of 1 ms for one cylinder rising to 3 ms
/// across the disk, a 0.5 ms head switch, no command overheads, 10 us a block on the bus, no
/// cache, one request at a time in arrival order.
pub fn small_drive() -> HddParams {
    HddParams {
        geometry: Geometry {
            surfaces: 2,
            cylinders: 20,
            surface_order: SurfaceOrder::Normal,
            sparing: SparingScheme::None,
            sparing_range_cylinders: 1,
            zones: vec![zone(0, 19, 10, 0, vec![])],
            block_count: None,
            g4: None,
        },
        mechanics: Mechanics {
            rpm: 6000.0,
            head_switch_ns: 500_000,
            write_settle_ns: 0,
            seek: SeekCurve::Extracted {
                points: vec![(1, 1_000_000), (10, 2_000_000), (19, 3_000_000)],
            },
        },
        overheads: Overheads::default(),
        interface: Interface {
            read_transfer_ns_per_sector: 10_000,
            write_transfer_ns_per_sector: 10_000,
        },
        cache: CacheParams {
            enabled: false,
            segments: 1,
            segment_sectors: 64,
            write_segments: 1,
            dedicated_write_segment: false,
            read_ahead: ReadAhead::None,
            min_read_ahead_sectors: 0,
            max_read_ahead_sectors: 0,
            read_ahead_on_idle_hit: false,
            read_hits_on_write_data: false,
            write_back: WriteBack::None,
            combine_sequential_writes: false,
            read_watermark: 0.0,
            watermark_by_request_size: true,
            immediate_read: false,
        },
        queue_depth: 1,
        scheduler: SchedulerKind::Fcfs,
        power: PowerParams::default(),
    }
}
