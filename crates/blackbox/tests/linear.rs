//! The linear model against its definition: at queue depth 1 every request's service time is
//! exactly A + n·B of its pattern, for the STEC Zeus fit table of seed 001.

use storsim_blackbox::linear::{stec_zeus, LinearDevice};
use storsim_blackbox::{AccessPattern, SequentialDetect};
use storsim_core::conformance;
use storsim_core::{Completion, Device, DeviceError, Op, Request, SimTime};

/// The fit table of seed 001 as printed, (A µs, B µs/KB), independent of the preset code.
fn zeus_table(pattern: AccessPattern) -> (f64, f64) {
    match pattern {
        AccessPattern::SequentialRead => (127.5, 4.005),
        AccessPattern::RandomRead => (230.6, 3.987),
        AccessPattern::SequentialWrite => (2167.0, 4.96),
        AccessPattern::RandomWrite => (770.0, 5.382),
    }
}

/// A + n·B to the nearest nanosecond (halves up), in integers: A is a whole number of ns and
/// B a whole number of ps per KiB, so only n·B is rounded and no float tie can go either way.
fn expected_ns(pattern: AccessPattern, len_bytes: u64) -> u64 {
    let (a_us, b_us) = zeus_table(pattern);
    let a_ns = (a_us * 1e3).round() as u64;
    let b_ps_per_kib = (b_us * 1e6).round() as u64;
    a_ns + (len_bytes * b_ps_per_kib + 512_000) / 1_024_000
}

/// Runs requests one at a time (QD1) through the conformance kit's checked driver and returns
/// each completion.
fn run_qd1(device: &mut LinearDevice, requests: &[(Op, u64, u64)]) -> Vec<Completion> {
    conformance::drive_one_at_a_time(device, requests).unwrap_or_else(|v| panic!("{v}"))
}

#[test]
fn zeus_service_is_exactly_a_plus_n_b_for_every_pattern_and_size() {
    // Powers of two from 4 KiB to 1 MiB, and sizes between them (n need not be a power of
    // two, nor a whole number of KiB: 4.5 KiB is nine sectors).
    let mut sizes: Vec<u64> = (2..=10).map(|k| 1024u64 << k).collect();
    sizes.extend([4608, 6 << 10, 100 << 10, 777 * 512, 1000 << 10]);
    sizes.sort_unstable();
    assert_eq!(*sizes.first().unwrap(), 4096);
    assert_eq!(*sizes.last().unwrap(), 1 << 20);
    for &len in &sizes {
        for op in [Op::Read, Op::Write] {
            let mut device = LinearDevice::new(stec_zeus());
            // Random, then sequential (continues the first), then random again (far away).
            let reqs = [
                (op, 1 << 30, len),
                (op, (1 << 30) + len, len),
                (op, 5 << 30, len),
            ];
            let done = run_qd1(&mut device, &reqs);
            let write = op == Op::Write;
            let patterns = [
                AccessPattern::new(write, false),
                AccessPattern::new(write, true),
                AccessPattern::new(write, false),
            ];
            for (c, p) in done.iter().zip(patterns) {
                assert_eq!(c.queueing().as_ns(), 0);
                assert_eq!(
                    c.service().as_ns(),
                    expected_ns(p, len),
                    "{p:?} at {len} bytes"
                );
            }
        }
    }
}

#[test]
fn one_request_in_service_at_a_time_by_default() {
    let mut device = LinearDevice::new(stec_zeus());
    for id in 0..3 {
        let r = Request {
            id,
            op: Op::Read,
            offset_bytes: id * (1 << 30),
            len_bytes: 4096,
            arrival: SimTime::ZERO,
            flow: 0,
        };
        device.submit(SimTime::ZERO, r).unwrap();
    }
    let mut done = Vec::new();
    device.advance(SimTime::MAX, &mut done);
    let rr = expected_ns(AccessPattern::RandomRead, 4096);
    let finishes: Vec<u64> = done.iter().map(|c| c.finish.as_ns()).collect();
    assert_eq!(finishes, [rr, 2 * rr, 3 * rr]);
    assert_eq!(done[2].queueing().as_ns(), 2 * rr);
}

#[test]
fn same_direction_option_keeps_interleaved_streams_sequential() {
    let mut params = stec_zeus();
    params.sequential_detect = SequentialDetect::PreviousSameDirection;
    let mut device = LinearDevice::new(params);
    let reqs = [
        (Op::Read, 0, 4096),
        (Op::Write, 1 << 30, 4096),
        (Op::Read, 4096, 4096),
        (Op::Write, (1 << 30) + 4096, 4096),
    ];
    let done = run_qd1(&mut device, &reqs);
    assert_eq!(
        done[2].service().as_ns(),
        expected_ns(AccessPattern::SequentialRead, 4096)
    );
    assert_eq!(
        done[3].service().as_ns(),
        expected_ns(AccessPattern::SequentialWrite, 4096)
    );

    let mut default_device = LinearDevice::new(stec_zeus());
    let done = run_qd1(&mut default_device, &reqs);
    assert_eq!(
        done[2].service().as_ns(),
        expected_ns(AccessPattern::RandomRead, 4096)
    );
}

#[test]
fn out_of_range_and_full_queue_are_refused_without_state_change() {
    let mut params = stec_zeus();
    params.queue_depth = 1;
    let cap = params.capacity_bytes;
    let mut device = LinearDevice::new(params);
    let past_end = Request {
        id: 0,
        op: Op::Read,
        offset_bytes: cap - 512,
        len_bytes: 1024,
        arrival: SimTime::ZERO,
        flow: 0,
    };
    assert!(matches!(
        device.submit(SimTime::ZERO, past_end),
        Err(DeviceError::OutOfRange { .. })
    ));
    let overflow = Request {
        offset_bytes: u64::MAX,
        ..past_end
    };
    assert!(matches!(
        device.submit(SimTime::ZERO, overflow),
        Err(DeviceError::OutOfRange { .. })
    ));
    assert_eq!(device.next_deadline(), None);
    let ok = Request {
        offset_bytes: 0,
        len_bytes: 512,
        ..past_end
    };
    device.submit(SimTime::ZERO, ok).unwrap();
    assert_eq!(
        device.submit(SimTime::ZERO, ok),
        Err(DeviceError::QueueFull { queue_depth: 1 })
    );
}
