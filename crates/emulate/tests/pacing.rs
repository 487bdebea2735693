//! The emulator core without a front end: host I/Os submitted directly, replies collected on a
//! channel. Timing checks are lower bounds only (a reply may never leave before the model's
//! instant); how punctual replies are on this machine is a benchmark, not a test.

use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};
use storsim_blackbox::linear::{stec_zeus, LinearCost, LinearDevice, LinearParams};
use storsim_blackbox::AccessPattern;
use storsim_core::{Completion, Device, DeviceCounter, DeviceError, Request, SimDuration, SimTime};
use storsim_emulate::{
    Backing, Emulator, EmulatorOptions, HostIo, HostOp, IoFailure, Outcome, RecordTarget,
    Responder, Store,
};

/// A linear device whose every access takes `fixed_us` plus nothing per byte.
fn flat_device(fixed_us: f64, capacity_bytes: u64, queue_depth: usize) -> LinearDevice {
    let mut p: LinearParams = stec_zeus();
    p.capacity_bytes = capacity_bytes;
    p.costs = [LinearCost::from_us(fixed_us, 0.0); 4];
    p.trim = SimDuration::from_us(fixed_us as u64);
    p.flush = SimDuration::from_us(fixed_us as u64);
    p.queue_depth = queue_depth;
    p.servers = 1;
    LinearDevice::new(p)
}

struct ToChannel(mpsc::Sender<(Outcome, Instant)>);

impl Responder for ToChannel {
    fn respond(self: Box<Self>, outcome: Outcome) {
        let _ = self.0.send((outcome, Instant::now()));
    }
}

fn start(device: LinearDevice, export_bytes: u64) -> Emulator {
    start_boxed(Box::new(device), export_bytes)
}

fn start_boxed(device: Box<dyn Device>, export_bytes: u64) -> Emulator {
    let store = Arc::new(Store::open(&Backing::Memory, export_bytes).unwrap());
    Emulator::start(
        device,
        "flat",
        store,
        EmulatorOptions::new(export_bytes),
        None,
    )
    .unwrap()
}

fn io(op: HostOp, offset_bytes: u64, len_bytes: u64, data: Vec<u8>) -> HostIo {
    HostIo {
        op,
        offset_bytes,
        len_bytes,
        fua: false,
        data,
    }
}

/// Submits one I/O and waits for its reply; returns the outcome and the time it took.
fn roundtrip(emulator: &Emulator, host_io: HostIo) -> (Outcome, Duration) {
    let (tx, rx) = mpsc::channel();
    let start = Instant::now();
    emulator.submit(host_io, Box::new(ToChannel(tx)));
    let (outcome, at) = rx.recv_timeout(Duration::from_secs(30)).unwrap();
    (outcome, at - start)
}

#[test]
fn data_round_trips_and_replies_wait_for_the_model() {
    let emulator = start(flat_device(3000.0, 1 << 30, 32), 1 << 20);
    let pattern: Vec<u8> = (0..8192u32).map(|i| (i * 7 % 251) as u8).collect();
    let (outcome, took) = roundtrip(&emulator, io(HostOp::Write, 4096, 8192, pattern.clone()));
    assert!(matches!(outcome, Outcome::Done), "{outcome:?}");
    assert!(
        took >= Duration::from_micros(3000),
        "write replied after {took:?}"
    );
    let (outcome, took) = roundtrip(&emulator, io(HostOp::Read, 4096, 8192, Vec::new()));
    match outcome {
        Outcome::Data(bytes) => assert_eq!(bytes, pattern),
        other => panic!("read gave {other:?}"),
    }
    assert!(
        took >= Duration::from_micros(3000),
        "read replied after {took:?}"
    );
    let report = emulator.shutdown().unwrap();
    assert_eq!(report.lateness.replies, 2);
    assert_eq!(report.in_flight, 0);
    assert_eq!(report.model.all.requests, 2);
    // The model's own response time is its 3 ms, whatever the wall clock did.
    assert!(
        report.model.all.latency_ns.min >= 3_000_000,
        "{:?}",
        report.model
    );
}

#[test]
fn out_of_range_requests_fail_without_touching_the_store() {
    let emulator = start(flat_device(10.0, 1 << 30, 32), 1 << 20);
    let (outcome, _) = roundtrip(
        &emulator,
        io(HostOp::Write, (1 << 20) - 512, 1024, vec![1; 1024]),
    );
    assert!(
        matches!(outcome, Outcome::Failed(IoFailure::OutOfRange)),
        "{outcome:?}"
    );
    let (outcome, _) = roundtrip(&emulator, io(HostOp::Read, u64::MAX - 10, 512, Vec::new()));
    assert!(
        matches!(outcome, Outcome::Failed(IoFailure::OutOfRange)),
        "{outcome:?}"
    );
    assert_eq!(emulator.store().allocated_bytes(), 0);
    let report = emulator.shutdown().unwrap();
    assert_eq!(report.failed, 2);
    assert_eq!(report.lateness.replies, 0);
}

#[test]
fn a_full_device_queue_holds_requests_at_the_host_and_all_complete() {
    // Queue depth 1 and one server: eight writes take at least eight service times.
    let emulator = Arc::new(start(flat_device(1000.0, 1 << 30, 1), 1 << 20));
    let (tx, rx) = mpsc::channel();
    let start = Instant::now();
    for i in 0..8u64 {
        let data = vec![i as u8; 4096];
        emulator.submit(
            io(HostOp::Write, i * 4096, 4096, data),
            Box::new(ToChannel(tx.clone())),
        );
    }
    let mut last = start;
    for _ in 0..8 {
        let (outcome, at) = rx.recv_timeout(Duration::from_secs(30)).unwrap();
        assert!(matches!(outcome, Outcome::Done), "{outcome:?}");
        last = last.max(at);
    }
    assert!(
        last - start >= Duration::from_micros(8000),
        "{:?}",
        last - start
    );
    for i in 0..8u64 {
        let (outcome, _) = roundtrip(&emulator, io(HostOp::Read, i * 4096, 4096, Vec::new()));
        match outcome {
            Outcome::Data(bytes) => assert!(bytes.iter().all(|&b| b == i as u8)),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(emulator.shutdown().unwrap().in_flight, 0);
}

#[test]
fn shutdown_answers_everything_accepted() {
    let emulator = start(flat_device(20_000.0, 1 << 30, 64), 1 << 20);
    let (tx, rx) = mpsc::channel();
    for i in 0..16u64 {
        emulator.submit(
            io(HostOp::Write, i * 512, 512, vec![9; 512]),
            Box::new(ToChannel(tx.clone())),
        );
    }
    let report = emulator.shutdown().unwrap();
    drop(tx);
    let outcomes: Vec<Outcome> = rx.iter().map(|(o, _)| o).collect();
    assert_eq!(outcomes.len(), 16);
    assert!(
        outcomes.iter().all(|o| matches!(o, Outcome::Done)),
        "{outcomes:?}"
    );
    assert_eq!(report.lateness.replies, 16);
    // After shutdown nothing more is taken.
    let (outcome, _) = roundtrip(&emulator, io(HostOp::Read, 0, 512, Vec::new()));
    assert!(
        matches!(outcome, Outcome::Failed(IoFailure::ShuttingDown)),
        "{outcome:?}"
    );
}

#[test]
fn switching_devices_keeps_data_and_in_flight_requests() {
    let emulator = Arc::new(start(flat_device(50_000.0, 1 << 30, 64), 1 << 20));
    let (tx, rx) = mpsc::channel();
    // In flight on the slow device when the switch happens.
    emulator.submit(
        io(HostOp::Write, 0, 4096, vec![5; 4096]),
        Box::new(ToChannel(tx)),
    );
    emulator
        .replace_device(Box::new(flat_device(100.0, 1 << 30, 64)), "fast")
        .unwrap();
    let (outcome, took) = roundtrip(&emulator, io(HostOp::Read, 0, 4096, Vec::new()));
    match outcome {
        Outcome::Data(bytes) => assert!(bytes.iter().all(|&b| b == 5)),
        other => panic!("{other:?}"),
    }
    assert!(took >= Duration::from_micros(100));
    let (outcome, _) = rx.recv_timeout(Duration::from_secs(30)).unwrap();
    assert!(
        matches!(outcome, Outcome::Done),
        "the old device's write was lost: {outcome:?}"
    );
    // A device smaller than the export is refused and the current one stays.
    let err = emulator
        .replace_device(Box::new(flat_device(100.0, 4096, 64)), "tiny")
        .unwrap_err()
        .to_string();
    assert!(err.contains("tiny"), "{err}");
    let report = emulator.shutdown().unwrap();
    assert_eq!(report.device_name, "fast");
    assert_eq!(report.switches, vec!["fast".to_string()]);
    assert_eq!(report.lateness.replies, 2);
}

#[test]
fn the_record_lists_requests_in_arrival_order_and_replays() {
    let tmp = tempfile::Builder::new()
        .prefix(&format!("storsim-emulate-record-{}-", std::process::id()))
        .tempdir()
        .unwrap();
    let dir = tmp.path();
    let path = dir.join("run.record");
    let store = Arc::new(Store::open(&Backing::Memory, 1 << 20).unwrap());
    let record = RecordTarget {
        out: Box::new(std::fs::File::create(&path).unwrap()),
        header: vec![("device".into(), "flat".into())],
    };
    // Four servers, reads faster than writes: completions come out of arrival order.
    let mut p = stec_zeus();
    p.capacity_bytes = 1 << 30;
    p.costs = [LinearCost::from_us(4000.0, 0.0); 4];
    p.costs[AccessPattern::SequentialRead.index()] = LinearCost::from_us(200.0, 0.0);
    p.costs[AccessPattern::RandomRead.index()] = LinearCost::from_us(200.0, 0.0);
    p.servers = 4;
    let device = LinearDevice::new(p);
    let emulator = Emulator::start(
        Box::new(device),
        "flat",
        store,
        EmulatorOptions::new(1 << 20),
        Some(record),
    )
    .unwrap();
    let (tx, rx) = mpsc::channel();
    let mut sent = Vec::new();
    for i in 0..12u64 {
        let (op, data) = if i % 3 == 0 {
            (HostOp::Write, vec![1; 4096])
        } else {
            (HostOp::Read, Vec::new())
        };
        sent.push((op, i * 4096));
        emulator.submit(
            io(op, i * 4096, 4096, data),
            Box::new(ToChannel(tx.clone())),
        );
    }
    for _ in 0..12 {
        rx.recv_timeout(Duration::from_secs(30)).unwrap();
    }
    emulator.shutdown().unwrap();

    let text = std::fs::read_to_string(&path).unwrap();
    let rows: Vec<Vec<u64>> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("received_ns"))
        .map(|l| {
            l.split(',')
                .filter(|f| f.parse::<u64>().is_ok())
                .map(|f| f.parse().unwrap())
                .collect()
        })
        .collect();
    assert_eq!(rows.len(), 12, "{text}");
    let mut previous_received = 0;
    for (row, (op, offset)) in rows.iter().zip(&sent) {
        let (received, arrival, offset_bytes, len, intended, actual) =
            (row[0], row[1], row[2], row[3], row[4], row[5]);
        assert!(
            received >= previous_received,
            "rows out of arrival order:\n{text}"
        );
        previous_received = received;
        assert!(arrival >= received, "{text}");
        assert_eq!(offset_bytes, *offset, "{text}");
        assert_eq!(len, 4096);
        let service = if *op == HostOp::Write {
            4_000_000
        } else {
            200_000
        };
        assert!(intended >= arrival + service, "{text}");
        assert!(actual >= intended, "{text}");
    }
    // The file is a trace `simulate` reads: the same requests in the same order.
    let workload = storsim_workload::trace::open(&path, &Default::default()).unwrap();
    let records: Vec<_> = workload.records.map(|r| r.unwrap()).collect();
    assert_eq!(records.len(), 12);
    std::fs::remove_dir_all(dir).unwrap();
}

/// Records the response time the model gave each request, by the request's position in the
/// replay (its records in the order the reader hands them over).
struct Responses(Vec<(u64, u64)>);

impl storsim_engine::CompletionSink for Responses {
    fn completed(&mut self, c: &storsim_core::Completion) {
        self.0.push((c.request.id, c.latency().as_ns()));
    }
}

/// Several host threads at once, with file backing so that FLUSHes wait in `fdatasync` on
/// their front end's thread and reach the model after requests received later, on a device
/// with two servers and room for four requests (the order requests meet the model decides who
/// waits, and some wait at the host): replaying the record with the simulation engine gives
/// every request the response time the model gave it in the emulator.
#[test]
fn a_replay_of_the_record_gives_every_request_the_response_time_the_model_gave() {
    const THREADS: u64 = 6;
    const PER_THREAD: u64 = 120;
    let tmp = tempfile::Builder::new()
        .prefix(&format!("storsim-emulate-replay-{}-", std::process::id()))
        .tempdir()
        .unwrap();
    let dir = tmp.path();
    let path = dir.join("run.record");
    let export_bytes = 64 << 20;
    let store = Arc::new(Store::open(&Backing::File(dir.join("disk")), export_bytes).unwrap());
    let device = || {
        let mut p = stec_zeus();
        p.capacity_bytes = 1 << 30;
        p.costs = [LinearCost::from_us(60.0, 0.5); 4];
        p.costs[AccessPattern::SequentialRead.index()] = LinearCost::from_us(25.0, 0.25);
        p.costs[AccessPattern::RandomRead.index()] = LinearCost::from_us(30.0, 0.25);
        p.flush = SimDuration::from_us(15);
        p.servers = 2;
        p.queue_depth = 4;
        LinearDevice::new(p)
    };
    let record = RecordTarget {
        out: Box::new(std::io::BufWriter::new(
            std::fs::File::create(&path).unwrap(),
        )),
        header: Vec::new(),
    };
    let emulator = Arc::new(
        Emulator::start(
            Box::new(device()),
            "two-servers",
            store,
            EmulatorOptions::new(export_bytes),
            Some(record),
        )
        .unwrap(),
    );
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let emulator = Arc::clone(&emulator);
            std::thread::spawn(move || {
                let (tx, rx) = mpsc::channel();
                for i in 0..PER_THREAD {
                    let offset = ((t * PER_THREAD + i) * 7919 % 4096) * 16384;
                    let host_io = match i % 8 {
                        0 => io(HostOp::Flush, 0, 0, Vec::new()),
                        1 | 4 => io(HostOp::Write, offset, 16384, vec![t as u8; 16384]),
                        _ => io(HostOp::Read, offset, 4096 << (i % 3), Vec::new()),
                    };
                    emulator.submit(host_io, Box::new(ToChannel(tx.clone())));
                    let (outcome, _) = rx.recv_timeout(Duration::from_secs(30)).unwrap();
                    assert!(!matches!(outcome, Outcome::Failed(_)), "{outcome:?}");
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    let report = emulator.shutdown().unwrap();
    assert_eq!(report.lateness.replies, THREADS * PER_THREAD);

    let recorded: Vec<_> = storsim_workload::trace::recorded_ios(&path)
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(recorded.len() as u64, THREADS * PER_THREAD);
    for pair in recorded.windows(2) {
        assert!(pair[1].received_ns >= pair[0].received_ns, "{pair:?}");
    }
    // The replay meets the requests in the order the model did: by offer, file order on ties.
    let mut by_offer: Vec<_> = recorded.iter().enumerate().collect();
    by_offer.sort_by_key(|(line, io)| (io.arrival_ns, *line));
    let first_offer_ns = by_offer[0].1.arrival_ns;

    let mut workload = storsim_workload::trace::open(&path, &Default::default()).unwrap();
    let mut replayed = device();
    let mut responses = Responses(Vec::new());
    let info = storsim_engine::run(
        &mut replayed,
        &mut workload,
        &storsim_engine::EngineOptions::default(),
        &mut responses,
        &mut |_, _| {},
    )
    .unwrap();
    assert_eq!(info.out_of_order_records, 0);
    assert_eq!(info.requests_completed, THREADS * PER_THREAD);
    let mut simulated = responses.0;
    simulated.sort();
    for ((id, simulated_ns), (line, io)) in simulated.iter().zip(&by_offer) {
        let emulated_ns = io.intended_finish_ns - io.arrival_ns;
        assert_eq!(
            *simulated_ns, emulated_ns,
            "request {id} (row {line}, offered {} ns after the first): simulated {simulated_ns} ns, \
             the model gave {emulated_ns} ns",
            io.arrival_ns - first_offer_ns
        );
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// What a [`BrokenDevice`] does wrong.
#[derive(Clone, Copy, Debug)]
enum Fault {
    /// Reports each completion under an id it was never given (the id plus 1000).
    CompletesUnknownId,
    /// Once its clock has moved, names a deadline just before the last instant it was told.
    DeadlineInThePast,
    /// Never names a deadline, however many requests it holds.
    Stall,
}

/// A deliberately broken model: a flat linear device with one [`Fault`].
struct BrokenDevice {
    inner: LinearDevice,
    fault: Fault,
    now: SimTime,
}

impl Device for BrokenDevice {
    fn model_name(&self) -> &'static str {
        "broken"
    }
    fn capacity_bytes(&self) -> u64 {
        self.inner.capacity_bytes()
    }
    fn queue_depth(&self) -> usize {
        self.inner.queue_depth()
    }
    fn submit(&mut self, now: SimTime, request: Request) -> Result<(), DeviceError> {
        self.now = now;
        self.inner.submit(now, request)
    }
    fn next_deadline(&self) -> Option<SimTime> {
        match self.fault {
            Fault::Stall => None,
            Fault::DeadlineInThePast if self.now > SimTime::ZERO => Some(SimTime(self.now.0 - 1)),
            _ => self.inner.next_deadline(),
        }
    }
    fn advance(&mut self, now: SimTime, done: &mut Vec<Completion>) {
        self.now = now;
        let first = done.len();
        self.inner.advance(now, done);
        if let Fault::CompletesUnknownId = self.fault {
            for c in &mut done[first..] {
                c.request.id += 1000;
            }
        }
    }
    fn counters(&self) -> Vec<DeviceCounter> {
        Vec::new()
    }
}

#[test]
fn a_model_that_breaks_its_contract_fails_its_requests_and_the_emulator_goes_on_serving() {
    for fault in [
        Fault::CompletesUnknownId,
        Fault::DeadlineInThePast,
        Fault::Stall,
    ] {
        let emulator = start_boxed(
            Box::new(BrokenDevice {
                inner: flat_device(200.0, 1 << 30, 8),
                fault,
                now: SimTime::ZERO,
            }),
            1 << 20,
        );
        // The pacing thread used to panic (an unknown id), spin for ever (a deadline in the
        // past) or leave the request unanswered (a stall). Each fault shows within the first
        // two requests: the second is the first to meet the broken device's moved clock.
        let mut failed_at = None;
        for i in 0..2u64 {
            let (outcome, _) =
                roundtrip(&emulator, io(HostOp::Write, i * 4096, 4096, vec![7; 4096]));
            match outcome {
                Outcome::Done => {}
                Outcome::Failed(IoFailure::DeviceFailed(why)) => {
                    assert!(
                        why.contains("'broken' broke the device contract"),
                        "{fault:?}: {why}"
                    );
                    failed_at = Some(i);
                    break;
                }
                other => panic!("{fault:?}: {other:?}"),
            }
        }
        assert!(failed_at.is_some(), "{fault:?}: no request failed");
        // The emulator goes on answering: with EIO while the broken device is current ...
        let (outcome, _) = roundtrip(&emulator, io(HostOp::Read, 0, 4096, Vec::new()));
        assert!(
            matches!(outcome, Outcome::Failed(IoFailure::DeviceFailed(_))),
            "{fault:?}: {outcome:?}"
        );
        // ... and normally once the control socket's switch brings a working device.
        emulator
            .replace_device(Box::new(flat_device(100.0, 1 << 30, 8)), "flat")
            .unwrap();
        let (outcome, _) = roundtrip(&emulator, io(HostOp::Write, 8192, 4096, vec![3; 4096]));
        assert!(matches!(outcome, Outcome::Done), "{fault:?}: {outcome:?}");
        let (outcome, _) = roundtrip(&emulator, io(HostOp::Read, 8192, 4096, Vec::new()));
        match outcome {
            Outcome::Data(bytes) => assert!(bytes.iter().all(|&b| b == 3), "{fault:?}"),
            other => panic!("{fault:?}: {other:?}"),
        }
        let report = emulator.shutdown().unwrap();
        assert_eq!(
            report.model_failures.len(),
            1,
            "{fault:?}: {:?}",
            report.model_failures
        );
        let expected = match fault {
            Fault::CompletesUnknownId => "never given",
            Fault::DeadlineInThePast => "before now",
            Fault::Stall => "stalled",
        };
        assert!(
            report.model_failures[0].contains(expected),
            "{fault:?}: {:?}",
            report.model_failures
        );
        assert_eq!(report.in_flight, 0, "{fault:?}");
        // The request that met the broken device and the read while it was current.
        assert_eq!(report.failed, 2, "{fault:?}");
    }
}
