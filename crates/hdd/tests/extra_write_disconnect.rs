//! The extra write disconnect of HP drives (DiskSim's "extra write disconnect"), with
//! hand-computed values: which writes take it, and the buffer threshold it puts on writing
//! a request's first sector.

// The shared zone builder goes unused here: the shared drive's zone is the one wanted.
#[allow(dead_code)]
mod support;
use storsim_core::Op;
use storsim_hdd::*;
use support::{req, run_one, small_drive};

fn params() -> HddParams {
    // 6000 rpm and 10 sectors a track: a sector passes in 1 ms, a turn takes 10 ms.
    let mut p = small_drive();
    p.interface.write_transfer_ns_per_sector = 300_000;
    p.cache = CacheParams {
        enabled: true,
        segments: 2,
        dedicated_write_segment: true,
        read_hits_on_write_data: true,
        combine_sequential_writes: true,
        ..p.cache
    };
    p
}

/// A write of blocks 0..n arriving at 9.5 ms, with no overheads: the heads are on track 0
/// and block 0's sector starts at 10 ms; block i is in the buffer 0.3 ms · (i + 1) after
/// the arrival. Without the extra disconnect, block 0 (in at 9.8 ms) is written at 10 ms
/// and the n sectors end at 10 + n ms. With it, no sector is written before min(n, 10)
/// blocks are in: for n = 4 that is 10.7 ms, too late for the sector at 10 ms, so the
/// write waits a turn and ends at 20 + 4 ms; for n = 1 the threshold is block 0 itself.
#[test]
fn extra_write_disconnect_holds_the_media_until_ten_blocks_are_in() {
    let t0 = 9_500_000;
    let mut d = HddDevice::new(params()).unwrap();
    assert_eq!(
        run_one(&mut d, req(0, Op::Write, 0, 4, t0)),
        14_000_000 - t0
    );

    let mut p = params();
    p.overheads.extra_write_disconnect = Some(ExtraWriteDisconnect::default());
    let mut d = HddDevice::new(p.clone()).unwrap();
    assert_eq!(
        run_one(&mut d, req(0, Op::Write, 0, 4, t0)),
        24_000_000 - t0
    );
    let mut d = HddDevice::new(p.clone()).unwrap();
    assert_eq!(
        run_one(&mut d, req(0, Op::Write, 0, 1, t0)),
        11_000_000 - t0
    );
    // Two blocks: block 1 is in at 10.1 ms, after the sector at 10 ms started.
    let mut d = HddDevice::new(p).unwrap();
    assert_eq!(
        run_one(&mut d, req(0, Op::Write, 0, 2, t0)),
        22_000_000 - t0
    );
}

/// Which writes disconnect twice before their data. The disconnects after the data are set
/// to 50 ms so that the media always finishes first and every latency is the sum of the
/// bus phases:
/// - plain: write-miss overhead (100 us after a read, 200 us after a write) + data
///   preparation 10 us + 10 us of data + disconnect 50 ms + first reselect 20 us +
///   completion 5 us;
/// - extra: command 400 us + first disconnect 40 us + delay 600 us + first reselect 20 us +
///   data preparation 10 us + 10 us of data + second disconnect 50 ms + other reselect 30 us
///   + completion 5 us.
#[test]
fn extra_write_disconnect_only_after_a_write_it_does_not_continue() {
    let mut p = params();
    p.interface.write_transfer_ns_per_sector = 10_000;
    p.overheads = Overheads {
        write_miss_after_read_ns: 100_000,
        write_miss_after_write_ns: 200_000,
        data_preparation_ns: 10_000,
        write_disconnect_ns: 50_000_000,
        first_reselect_ns: 20_000,
        other_reselect_ns: 30_000,
        write_completion_ns: 5_000,
        extra_write_disconnect: Some(ExtraWriteDisconnect {
            command_ns: 400_000,
            disconnect_ns: 40_000,
            inter_disconnect_ns: 600_000,
            second_disconnect_ns: 50_000_000,
            seek_delta_ns: 0,
        }),
        ..Overheads::default()
    };
    let plain_after_read = 100_000 + 10_000 + 10_000 + 50_000_000 + 20_000 + 5_000;
    let plain_after_write = 200_000 + 10_000 + 10_000 + 50_000_000 + 20_000 + 5_000;
    let extra = 400_000 + 40_000 + 600_000 + 20_000 + 10_000 + 10_000 + 50_000_000 + 30_000 + 5_000;
    let s = 1_000_000_000;
    let mut d = HddDevice::new(p).unwrap();
    // The first write follows no write.
    assert_eq!(
        run_one(&mut d, req(0, Op::Write, 0, 1, 0)),
        plain_after_read
    );
    // A sequential write continues it.
    assert_eq!(
        run_one(&mut d, req(1, Op::Write, 1, 1, s)),
        plain_after_write
    );
    // A write elsewhere after a write takes the extra disconnect.
    assert_eq!(run_one(&mut d, req(2, Op::Write, 100, 1, 2 * s)), extra);
    // After a read, a write goes straight to its data.
    run_one(&mut d, req(3, Op::Read, 300, 1, 3 * s));
    assert_eq!(
        run_one(&mut d, req(4, Op::Write, 200, 1, 4 * s)),
        plain_after_read
    );
}
