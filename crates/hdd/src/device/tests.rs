//! The scheduler's cached view of the queue against the direct computation, and the
//! read and write paths' overheads.

use super::*;
use crate::params::{
    CacheParams, Geometry, Interface, Mechanics, Overheads, PowerParams, SeekCurve, SparingScheme,
    SurfaceOrder, Zone,
};
use crate::seek::seek_ns;
use storsim_core::Prng;

fn zone(first: u32, last: u32, spt: u32, slips: Vec<u64>) -> Zone {
    Zone {
        first_cylinder: first,
        last_cylinder: last,
        sectors_per_track: spt,
        first_block_offset_sectors: 3.0,
        empty_front_sectors: 0,
        track_skew_sectors: 7.0,
        cylinder_skew_sectors: 11.0,
        spares: 40,
        slips,
        defects: vec![],
    }
}

/// A drive with slips, two zones and a gap between them, a non-monotone extracted seek
/// curve, a head switch and a negative write settle, and the given scheduler.
fn params(scheduler: SchedulerKind, order: SurfaceOrder) -> HddParams {
    HddParams {
        geometry: Geometry {
            surfaces: 3,
            cylinders: 400,
            surface_order: order,
            sparing: SparingScheme::SectorsPerZone,
            sparing_range_cylinders: 1,
            zones: vec![
                zone(0, 199, 50, vec![5, 6, 7, 900, 20_000]),
                zone(201, 399, 37, vec![0, 1000]),
            ],
            block_count: None,
            g4: None,
        },
        mechanics: Mechanics {
            rpm: 7200.0,
            head_switch_ns: 400_000,
            write_settle_ns: -100_000,
            seek: SeekCurve::Extracted {
                points: vec![
                    (1, 800_000),
                    (5, 1_300_000),
                    (6, 1_250_000),
                    (100, 4_000_000),
                    (399, 9_000_000),
                ],
            },
        },
        overheads: Overheads {
            read_miss_after_read_ns: 200_000,
            write_hit_after_read_ns: 100_000,
            ..Overheads::default()
        },
        interface: Interface {
            read_transfer_ns_per_sector: 20_000,
            write_transfer_ns_per_sector: 20_000,
        },
        cache: CacheParams {
            enabled: true,
            segments: 4,
            segment_sectors: 128,
            write_segments: 2,
            dedicated_write_segment: false,
            read_ahead: crate::params::ReadAhead::SegmentEnd,
            min_read_ahead_sectors: 0,
            max_read_ahead_sectors: 64,
            read_ahead_on_idle_hit: false,
            read_hits_on_write_data: true,
            write_back: crate::params::WriteBack::Full,
            combine_sequential_writes: true,
            read_watermark: 0.0,
            watermark_by_request_size: true,
            immediate_read: false,
        },
        queue_depth: 24,
        scheduler,
        power: PowerParams::default(),
    }
}

/// SPTF's choice as the scheduler made it before it cached anything: every queued
/// request mapped afresh, its seek from the curve, its latency from its sector, and
/// every one of them priced.
fn sptf_direct(d: &HddDevice, t: f64) -> usize {
    let start = t.max(d.hda_free_ns);
    let cylinders = d.mech.layout.cylinders();
    let cands: Vec<Candidate> = d
        .queue
        .iter()
        .map(|q| {
            let r = &q.request;
            let p = d
                .mech
                .layout
                .lbn_to_pbn(r.offset_bytes / SECTOR_BYTES)
                .unwrap();
            let seek = seek_ns(
                &d.p.mechanics.seek,
                d.head.0.abs_diff(p.cylinder),
                cylinders,
            );
            let switch = if d.head.1 != p.head {
                d.p.mechanics.head_switch_ns as f64
            } else {
                0.0
            };
            let mut mv = seek.max(switch);
            if mv > 0.0 && r.op == Op::Write {
                mv = (mv + d.p.mechanics.write_settle_ns as f64).max(0.0);
            }
            Candidate {
                cylinder: p.cylinder,
                positioning_ns: mv + d.mech.latency_ns(start + mv, p),
            }
        })
        .collect();
    pick(SchedulerKind::Sptf, d.head.0, &cands).unwrap()
}

/// Random reads and writes, some sequential, kept up to the queue depth: at every
/// decision SPTF picks what pricing every request directly picks, and the cached
/// cylinder is the mapped one (which C-LOOK and SSTF use).
#[test]
fn sptf_with_cached_targets_and_bounds_picks_as_pricing_everything() {
    let seed = 0x5b7f_0002_u64;
    println!("seed {seed:#x}");
    let mut r = Prng::new(seed);
    for order in [SurfaceOrder::Normal, SurfaceOrder::ReverseOnOddCylinder] {
        let mut d = HddDevice::new(params(SchedulerKind::Sptf, order)).unwrap();
        let blocks = d.blocks();
        let mut now = 0u64;
        let mut done = Vec::new();
        let mut next_lbn = 0u64;
        let mut decisions = 0;
        for id in 0..4000u64 {
            let n = 1 + r.next_u64() % 16;
            // One request in four continues the previous one.
            let lbn = if r.next_u64() % 4 == 3 {
                next_lbn.min(blocks - n)
            } else {
                r.next_u64() % (blocks - n)
            };
            next_lbn = lbn + n;
            let op = if r.next_u64() % 2 == 1 {
                Op::Read
            } else {
                Op::Write
            };
            let request = Request {
                id,
                op,
                offset_bytes: lbn * SECTOR_BYTES,
                len_bytes: n * SECTOR_BYTES,
                arrival: SimTime::from_ns(now),
                flow: 0,
            };
            while d.submit(SimTime::from_ns(now), request).is_err() {
                let f = d.next_deadline().unwrap();
                now = now.max(f.as_ns());
                // The decision the completion is about to make.
                for q in &d.queue {
                    let p = d
                        .mech
                        .layout
                        .lbn_to_pbn(q.request.offset_bytes / SECTOR_BYTES)
                        .unwrap();
                    assert_eq!((q.target.cylinder, q.target.head), (p.cylinder, p.head));
                    assert_eq!(q.target.angle, d.mech.layout.sector_angle(p));
                }
                let t = f.as_ns() as f64;
                assert_eq!(d.pick_sptf(t), sptf_direct(&d, t));
                decisions += 1;
                d.advance(f, &mut done);
            }
            now += r.next_u64() % 2_000_000;
        }
        assert!(decisions > 1000, "only {decisions} decisions with a queue");
    }
}

#[test]
fn a_read_takes_the_overheads_of_what_the_drive_did_last() {
    let o = Overheads {
        per_request_ns: 1,
        read_hit_after_read_ns: 10,
        read_hit_after_write_ns: 20,
        read_miss_after_read_ns: 100,
        read_miss_after_write_ns: 200,
        read_disconnect_after_read_ns: 1000,
        read_disconnect_after_write_ns: 2000,
        data_preparation_ns: 10_000,
        ..Overheads::default()
    };
    let after_read = ReadRequest::new(&o, true, 5.0, 8, 4);
    assert_eq!(after_read.end, 12);
    assert_eq!(after_read.command_at_miss(), 106.0);
    assert_eq!(after_read.connect_at_hit(), 10_016.0);
    assert_eq!(after_read.disconnect, 1000.0);
    let after_write = ReadRequest::new(&o, false, 5.0, 8, 4);
    assert_eq!(after_write.command_at_miss(), 206.0);
    assert_eq!(after_write.connect_at_hit(), 10_026.0);
    assert_eq!(after_write.disconnect, 2000.0);
}

/// A write-through drive with HP's extra write disconnect: it takes the extra
/// disconnect only after a write that ended elsewhere, and holds every block back until
/// the gate block is in the buffer either way.
#[test]
fn a_write_takes_the_extra_disconnect_only_after_a_write_elsewhere() {
    let mut p = params(SchedulerKind::Fcfs, SurfaceOrder::Normal);
    p.cache.write_back = crate::params::WriteBack::None;
    p.interface.write_transfer_ns_per_sector = 1000;
    p.overheads = Overheads {
        per_request_ns: 1,
        write_miss_after_read_ns: 10,
        write_miss_after_write_ns: 20,
        data_preparation_ns: 100,
        first_reselect_ns: 10_000,
        extra_write_disconnect: Some(crate::params::ExtraWriteDisconnect {
            command_ns: 200,
            disconnect_ns: 400,
            inter_disconnect_ns: 800,
            second_disconnect_ns: 1600,
            seek_delta_ns: 3200,
        }),
        ..Overheads::default()
    };
    let mut d = HddDevice::new(p).unwrap();

    d.last_was_read = true;
    let after_read = d.write_request(5.0, 100, 12);
    assert!(!after_read.extra_disconnect && !after_read.write_back);
    assert_eq!(after_read.xfer_start, 5.0 + 1.0 + 10.0 + 100.0);
    assert_eq!(after_read.mech_after, 16.0);
    assert_eq!(after_read.gate, 9);
    assert_eq!(after_read.media_ready(0), after_read.arrival(9));
    assert_eq!(after_read.media_ready(11), after_read.arrival(11));
    assert_eq!(after_read.data_done(), 116.0 + 12_000.0);

    d.last_was_read = false;
    d.last_write_end = Some(50);
    let elsewhere = d.write_request(5.0, 100, 50);
    assert!(elsewhere.extra_disconnect);
    assert_eq!(
        elsewhere.xfer_start,
        5.0 + 1.0 + 200.0 + 400.0 + 800.0 + 10_000.0 + 100.0
    );
    assert_eq!(elsewhere.mech_after, 5.0 + 1.0 + 200.0 + 3200.0);
    assert_eq!(elsewhere.gate, 14);

    d.last_write_end = Some(100);
    let sequential = d.write_request(5.0, 100, 3);
    assert!(!sequential.extra_disconnect);
    assert_eq!(sequential.xfer_start, 5.0 + 1.0 + 20.0 + 100.0);
    assert_eq!(sequential.gate, 2);
}
