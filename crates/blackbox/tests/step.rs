//! The step model against hand-computed sequences from the delay code of seed 000 (Appendix A
//! for writes, Appendix B for reads): random delays, spike positions under the K schedules,
//! the write compensation after a sequential run's misclassified first request, trims and
//! flushes, and refusals.

use storsim_blackbox::step::{wisconsin_usb, StepDevice, StepDirection, StepParams};
use storsim_blackbox::SequentialDetect;
use storsim_core::conformance;
use storsim_core::conformance::counter;
use storsim_core::{Device, DeviceError, Op, Request, SimDuration, SimTime};

const KIB: u64 = 1024;
const US: u64 = 1_000;

/// Round numbers, so that expected services can be written down by hand.
fn params() -> StepParams {
    StepParams {
        capacity_bytes: 1 << 30,
        read: StepDirection {
            random: SimDuration::from_us(100),
            sequential: SimDuration::from_us(2),
            spike: SimDuration::from_us(50),
            step_interval_requests: vec![32, 64, 128, 256],
            compensate_first_request: false,
        },
        write: StepDirection {
            random: SimDuration::from_us(310),
            sequential: SimDuration::from_us(20),
            spike: SimDuration::from_us(500),
            step_interval_requests: vec![195, 256],
            compensate_first_request: true,
        },
        trim: SimDuration::from_us(7),
        flush: SimDuration::from_us(9),
        sequential_detect: SequentialDetect::PreviousSameDirection,
        queue_depth: 4,
    }
}

fn request(id: u64, op: Op, offset_bytes: u64, len_bytes: u64, arrival: SimTime) -> Request {
    Request {
        id,
        op,
        offset_bytes,
        len_bytes,
        arrival,
        flow: 0,
    }
}

/// Runs requests one at a time through the conformance kit's checked driver and returns each
/// one's service time in ns.
fn run_qd1(device: &mut StepDevice, requests: &[(Op, u64, u64)]) -> Vec<u64> {
    let done = conformance::drive_one_at_a_time(device, requests).unwrap_or_else(|v| panic!("{v}"));
    for c in &done {
        assert_eq!(c.queueing(), SimDuration::ZERO);
    }
    done.iter().map(|c| c.service().as_ns()).collect()
}

/// A random request at `start`, then `sequential` requests continuing it, all 4 KiB.
fn run(op: Op, start: u64, sequential: usize) -> Vec<(Op, u64, u64)> {
    (0..=sequential as u64)
        .map(|i| (op, start + i * 4 * KIB, 4 * KIB))
        .collect()
}

#[test]
fn random_requests_cost_the_random_delay_of_their_direction() {
    let mut device = StepDevice::new(params());
    let services = run_qd1(
        &mut device,
        &[
            (Op::Read, 1 << 20, 4 * KIB),
            (Op::Read, 5 << 20, 64 * KIB),
            (Op::Write, 9 << 20, 4 * KIB),
            (Op::Write, 3 << 20, 512),
        ],
    );
    assert_eq!(services, [100 * US, 100 * US, 310 * US, 310 * US]);
    assert_eq!(counter(&device, "rr_requests"), 2.0);
    assert_eq!(counter(&device, "rw_requests"), 2.0);
}

#[test]
fn a_sequential_read_run_spikes_at_32_96_224_480_736() {
    let mut device = StepDevice::new(params());
    let services = run_qd1(&mut device, &run(Op::Read, 0, 800));
    assert_eq!(services[0], 100 * US);
    // The K schedule 32, 64, 128, 256, 256: spikes on sequential reads 32, 32 + 64,
    // 96 + 128, 224 + 256 and 480 + 256 (counted from 1 after the random first read).
    let spikes = [32, 96, 224, 480, 736];
    for (i, &ns) in services.iter().enumerate().skip(1) {
        let expected = if spikes.contains(&i) { 52 * US } else { 2 * US };
        assert_eq!(ns, expected, "sequential read {i}");
    }
    assert_eq!(counter(&device, "read_steps"), 5.0);
    assert_eq!(counter(&device, "sr_requests"), 800.0);
    // Reads do not compensate their first request.
    assert_eq!(counter(&device, "compensation_removed_ns"), 0.0);
}

#[test]
fn the_preset_reproduces_the_appendix_read_code() {
    // Appendix B has no per-request sequential read delay: only the spike.
    let p = wisconsin_usb();
    let (random, spike) = (p.read.random.as_ns(), p.read.spike.as_ns());
    let mut device = StepDevice::new(p);
    let services = run_qd1(&mut device, &run(Op::Read, 0, 300));
    let spikes: Vec<usize> = (1..services.len()).filter(|&i| services[i] > 0).collect();
    assert_eq!(spikes, [32, 96, 224]);
    assert_eq!(services[0], random);
    assert_eq!(services[32], spike);
}

#[test]
fn a_random_read_restarts_the_schedule_at_32() {
    let mut device = StepDevice::new(params());
    let mut requests = run(Op::Read, 0, 40);
    requests.extend(run(Op::Read, 100 << 20, 40));
    let services = run_qd1(&mut device, &requests);
    let spikes: Vec<usize> = (0..services.len())
        .filter(|&i| services[i] == 52 * US)
        .collect();
    // Request 41 is the second run's random read; its 32nd sequential read is request 73.
    assert_eq!(spikes, [32, 73]);
    assert_eq!(services[41], 100 * US);
}

#[test]
fn a_sequential_write_run_spikes_at_195_then_every_256_with_compensation() {
    let mut device = StepDevice::new(params());
    let services = run_qd1(&mut device, &run(Op::Write, 0, 800));
    // The first write was charged 310 µs; a sequential write costs 20 µs, so 290 µs are
    // burned off the next ones: 14 writes pay nothing (280 µs), the 15th pays 10 µs.
    assert_eq!(services[0], 310 * US);
    for (i, &ns) in services.iter().enumerate().skip(1) {
        let base = match i {
            1..=14 => 0,
            15 => 10 * US,
            _ => 20 * US,
        };
        let spike = if [195, 451, 707].contains(&i) {
            500 * US
        } else {
            0
        };
        assert_eq!(ns, base + spike, "sequential write {i}");
    }
    assert_eq!(counter(&device, "write_steps"), 3.0);
    assert_eq!(
        counter(&device, "compensation_removed_ns"),
        (290 * US) as f64
    );
    assert_eq!(counter(&device, "compensation_added_ns"), 0.0);
}

#[test]
fn each_sequential_write_run_starts_its_own_compensation() {
    let mut device = StepDevice::new(params());
    let mut requests = run(Op::Write, 0, 3);
    requests.extend(run(Op::Write, 50 << 20, 3));
    let services = run_qd1(&mut device, &requests);
    assert_eq!(
        services,
        [310 * US, 0, 0, 0, 310 * US, 0, 0, 0],
        "each run starts its own compensation"
    );
    assert_eq!(
        counter(&device, "compensation_removed_ns"),
        (120 * US) as f64
    );
}

#[test]
fn a_random_delay_below_the_sequential_one_is_made_up_on_the_second_write() {
    let mut p = params();
    p.write.random = SimDuration::from_us(5);
    let mut device = StepDevice::new(p);
    let services = run_qd1(&mut device, &run(Op::Write, 0, 3));
    // The first write underpaid by 15 µs; the second pays its 20 µs plus those 15.
    assert_eq!(services, [5 * US, 35 * US, 20 * US, 20 * US]);
    assert_eq!(counter(&device, "compensation_added_ns"), (15 * US) as f64);
}

#[test]
fn without_compensation_every_sequential_write_pays_the_sequential_delay() {
    let mut p = params();
    p.write.compensate_first_request = false;
    let mut device = StepDevice::new(p);
    let services = run_qd1(&mut device, &run(Op::Write, 0, 3));
    assert_eq!(services, [310 * US, 20 * US, 20 * US, 20 * US]);
}

#[test]
fn reads_and_writes_keep_separate_runs_by_default() {
    let mut device = StepDevice::new(params());
    let services = run_qd1(
        &mut device,
        &[
            (Op::Write, 0, 4 * KIB),
            (Op::Read, 1 << 20, 4 * KIB),
            (Op::Write, 4 * KIB, 4 * KIB),
            (Op::Read, (1 << 20) + 4 * KIB, 4 * KIB),
        ],
    );
    assert_eq!(services, [310 * US, 100 * US, 0, 2 * US]);

    let mut p = params();
    p.sequential_detect = SequentialDetect::PreviousRequest;
    let mut device = StepDevice::new(p);
    let services = run_qd1(
        &mut device,
        &[
            (Op::Write, 0, 4 * KIB),
            (Op::Read, 1 << 20, 4 * KIB),
            (Op::Write, 4 * KIB, 4 * KIB),
        ],
    );
    assert_eq!(services, [310 * US, 100 * US, 310 * US]);
}

#[test]
fn trims_and_flushes_cost_their_latency_and_do_not_break_a_run() {
    let mut device = StepDevice::new(params());
    let mut requests = run(Op::Read, 0, 31);
    requests.push((Op::Flush, 0, 0));
    requests.push((Op::Trim, 8 << 20, 4 * KIB));
    requests.push((Op::Read, 32 * 4 * KIB, 4 * KIB));
    let services = run_qd1(&mut device, &requests);
    assert_eq!(services[32], 9 * US);
    assert_eq!(services[33], 7 * US);
    // The read after them is still the run's 32nd sequential read, and spikes.
    assert_eq!(services[34], 52 * US);
    assert_eq!(counter(&device, "flush_requests"), 1.0);
    assert_eq!(counter(&device, "trim_requests"), 1.0);
}

#[test]
fn one_request_is_in_service_at_a_time() {
    let mut device = StepDevice::new(params());
    for id in 0..3 {
        let r = request(id, Op::Read, id << 20, 4 * KIB, SimTime::ZERO);
        device.submit(SimTime::ZERO, r).unwrap();
    }
    let mut done = Vec::new();
    device.advance(SimTime::MAX, &mut done);
    let finishes: Vec<u64> = done.iter().map(|c| c.finish.as_ns()).collect();
    assert_eq!(finishes, [100 * US, 200 * US, 300 * US]);
    assert_eq!(counter(&device, "busy_ns"), (300 * US) as f64);
}

#[test]
fn out_of_range_and_full_queue_are_refused_without_state_change() {
    let mut p = params();
    p.queue_depth = 1;
    let cap = p.capacity_bytes;
    let mut device = StepDevice::new(p);
    let past_end = request(0, Op::Write, cap - 512, 1024, SimTime::ZERO);
    assert!(matches!(
        device.submit(SimTime::ZERO, past_end),
        Err(DeviceError::OutOfRange { .. })
    ));
    let overflow = request(0, Op::Read, u64::MAX, 1, SimTime::ZERO);
    assert!(matches!(
        device.submit(SimTime::ZERO, overflow),
        Err(DeviceError::OutOfRange { .. })
    ));
    assert_eq!(device.next_deadline(), None);
    device
        .submit(
            SimTime::ZERO,
            request(1, Op::Write, 0, 4 * KIB, SimTime::ZERO),
        )
        .unwrap();
    // Refused while full: it must neither start a new run nor count.
    assert_eq!(
        device.submit(
            SimTime::ZERO,
            request(2, Op::Write, 1 << 20, 4 * KIB, SimTime::ZERO)
        ),
        Err(DeviceError::QueueFull { queue_depth: 1 })
    );
    let mut done = Vec::new();
    device.advance(SimTime::MAX, &mut done);
    let now = done[0].finish;
    device
        .submit(now, request(3, Op::Write, 4 * KIB, 4 * KIB, now))
        .unwrap();
    done.clear();
    device.advance(SimTime::MAX, &mut done);
    // Still the run's first sequential write: fully compensated.
    assert_eq!(done[0].service().as_ns(), 0);
    assert_eq!(counter(&device, "rw_requests"), 1.0);
    assert_eq!(counter(&device, "sw_requests"), 1.0);
}

#[test]
fn the_preset_carries_the_seed_schedules_and_capacity() {
    let p = wisconsin_usb();
    assert_eq!(p.capacity_bytes, 32 << 20);
    assert_eq!(p.read.step_interval_requests, [32, 64, 128, 256]);
    assert_eq!(p.write.step_interval_requests, [195, 256]);
    assert!(p.write.compensate_first_request);
    assert!(!p.read.compensate_first_request);
    assert_eq!(p.read.sequential, SimDuration::ZERO);
    assert_eq!(p.sequential_detect, SequentialDetect::PreviousSameDirection);
}
