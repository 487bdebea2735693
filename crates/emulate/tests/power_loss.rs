//! Power loss through the emulator's own API: what a crash keeps and loses of acknowledged
//! writes, the crash after the N-th write, a disk left off, and the write log agreeing with the
//! emulator's crash.

use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;
use storsim_blackbox::linear::{stec_zeus, LinearCost, LinearDevice};
use storsim_core::SimDuration;
use storsim_emulate::power::{
    AfterCrash, Atomicity, Crash, CrashMode, CrashTrigger, PowerLossOptions,
};
use storsim_emulate::{
    Backing, Emulator, EmulatorOptions, HostIo, HostOp, IoFailure, Outcome, Responder, Store,
};
use storsim_store::write_log::{replay, ReplayTo, WriteLogWriter};

const EXPORT_BYTES: u64 = 1 << 20;

struct ToChannel(mpsc::Sender<Outcome>);

impl Responder for ToChannel {
    fn respond(self: Box<Self>, outcome: Outcome) {
        let _ = self.0.send(outcome);
    }
}

fn start(options: PowerLossOptions) -> Emulator {
    start_with(LinearDevice::new(stec_zeus()), options)
}

fn start_with(device: LinearDevice, options: PowerLossOptions) -> Emulator {
    let store = Arc::new(Store::open(&Backing::Memory, EXPORT_BYTES).unwrap());
    let emulator = Emulator::start(
        Box::new(device),
        "stec-zeus",
        store,
        EmulatorOptions::new(EXPORT_BYTES),
        None,
    )
    .unwrap();
    emulator.enable_power_loss(options).unwrap();
    emulator
}

fn io(emulator: &Emulator, op: HostOp, offset_bytes: u64, data: Vec<u8>, fua: bool) -> Outcome {
    send(emulator, op, offset_bytes, data, fua)
        .recv_timeout(Duration::from_secs(30))
        .unwrap()
}

/// Submits a request and returns where its outcome will arrive, without waiting for it.
fn send(
    emulator: &Emulator,
    op: HostOp,
    offset_bytes: u64,
    data: Vec<u8>,
    fua: bool,
) -> mpsc::Receiver<Outcome> {
    let len_bytes = match op {
        HostOp::Read => 4096,
        HostOp::Flush => 0,
        _ => data.len() as u64,
    };
    let (tx, rx) = mpsc::channel();
    emulator.submit(
        HostIo {
            op,
            offset_bytes,
            len_bytes,
            fua,
            data,
        },
        Box::new(ToChannel(tx)),
    );
    rx
}

fn write(emulator: &Emulator, offset_bytes: u64, byte: u8, fua: bool) {
    let outcome = io(emulator, HostOp::Write, offset_bytes, vec![byte; 4096], fua);
    assert!(matches!(outcome, Outcome::Done), "{outcome:?}");
}

fn read(emulator: &Emulator, offset_bytes: u64) -> Vec<u8> {
    match io(emulator, HostOp::Read, offset_bytes, Vec::new(), false) {
        Outcome::Data(d) => d,
        other => panic!("read: {other:?}"),
    }
}

fn flush(emulator: &Emulator) {
    let outcome = io(emulator, HostOp::Flush, 0, Vec::new(), false);
    assert!(matches!(outcome, Outcome::Done), "{outcome:?}");
}

#[test]
fn a_crash_keeps_flushed_and_fua_writes_and_loses_the_rest() {
    let emulator = start(PowerLossOptions::new());
    write(&emulator, 0, 1, false);
    flush(&emulator);
    write(&emulator, 4096, 2, false);
    write(&emulator, 8192, 3, true);
    write(&emulator, 0, 4, false);
    // Before the crash the host reads what it wrote.
    assert_eq!(read(&emulator, 0), vec![4; 4096]);
    let crash = emulator.crash(CrashTrigger::Command).unwrap();
    assert_eq!(crash.number, 1);
    let lost: Vec<u64> = crash.report.volatile.iter().map(|w| w.index).collect();
    assert_eq!(lost, vec![2, 4]);
    assert_eq!(read(&emulator, 0), vec![1; 4096]);
    assert_eq!(read(&emulator, 4096), vec![0; 4096]);
    assert_eq!(read(&emulator, 8192), vec![3; 4096]);
    // The disk goes on serving the post-crash image.
    write(&emulator, 4096, 5, false);
    assert_eq!(read(&emulator, 4096), vec![5; 4096]);
    // The report keeps the crash in a few numbers, and the cache as it is now: the write after
    // the crash is in it.
    let report = emulator.shutdown().unwrap();
    let power = report.power_loss.expect("power loss is on");
    assert_eq!(power.crashes, vec![crash.summary()]);
    let summary = &power.crashes[0];
    assert_eq!(summary.trigger, CrashTrigger::Command);
    assert_eq!((summary.writes, summary.volatile_writes), (4, 2));
    assert_eq!(
        (summary.volatile_bytes, summary.dropped_bytes),
        (8192, 8192)
    );
    assert_eq!(summary.dropped_writes, 2);
    assert_eq!((power.writes, power.volatile_writes), (5, 1));
    assert!(!power.powered_off);
    assert_eq!(power.after_crash, AfterCrash::Serve);
    assert_eq!(power.mode, CrashMode::DropAll);
    assert!(!power.write_log);
}

#[test]
fn after_the_nth_write_the_disk_crashes_and_stays_off_when_asked() {
    let crashes = Arc::new(Mutex::new(Vec::<Crash>::new()));
    let seen = Arc::clone(&crashes);
    let emulator = start(PowerLossOptions {
        crash_after_writes: Some(3),
        after_crash: AfterCrash::Stop,
        on_crash: Some(Box::new(move |c: &Crash| {
            seen.lock().unwrap().push(c.clone())
        })),
        ..PowerLossOptions::new()
    });
    write(&emulator, 0, 1, false);
    flush(&emulator);
    write(&emulator, 4096, 2, false);
    // The third write sets the crash off and is never acknowledged; nothing later is served.
    for (op, data) in [
        (HostOp::Write, vec![3; 4096]),
        (HostOp::Read, Vec::new()),
        (HostOp::Write, vec![4; 4096]),
    ] {
        let outcome = io(&emulator, op, 8192, data, false);
        assert!(
            matches!(outcome, Outcome::Failed(IoFailure::DeviceFailed(ref m)) if m.contains("powered off")),
            "{op:?}: {outcome:?}"
        );
    }
    let crashes = crashes.lock().unwrap();
    assert_eq!(crashes.len(), 1);
    assert_eq!(crashes[0].trigger, CrashTrigger::Writes);
    assert_eq!(crashes[0].report.writes, 3);
    let lost: Vec<u64> = crashes[0].report.volatile.iter().map(|w| w.index).collect();
    assert_eq!(lost, vec![2, 3]);
    let image = emulator.store();
    let mut buf = vec![0u8; 12288];
    image.read(0, &mut buf).unwrap();
    assert!(buf[..4096].iter().all(|&b| b == 1));
    assert!(buf[4096..].iter().all(|&b| b == 0));
    let report = emulator.shutdown().unwrap();
    assert_eq!(report.failed, 3);
    let power = report.power_loss.expect("power loss is on");
    assert!(power.powered_off);
    assert_eq!(power.crash_after_writes, Some(3));
    assert_eq!(power.crashes, vec![crashes[0].summary()]);
}

/// A disk whose every request takes the model 300 ms, so that one submitted just before a crash
/// is still in flight at it.
fn slow_disk() -> LinearDevice {
    let mut params = stec_zeus();
    params.costs = [LinearCost {
        fixed: SimDuration::from_ms(300),
        per_kib_ps: 0,
    }; 4];
    params.flush = SimDuration::from_ms(300);
    LinearDevice::new(params)
}

fn powered_off(outcome: &Outcome) -> bool {
    matches!(outcome, Outcome::Failed(IoFailure::DeviceFailed(m)) if m.contains("powered off"))
}

#[test]
fn requests_in_flight_at_a_crash_fail_when_the_disk_stays_off_and_not_when_it_serves() {
    for after_crash in [AfterCrash::Stop, AfterCrash::Serve] {
        let emulator = start_with(
            slow_disk(),
            PowerLossOptions {
                after_crash,
                ..PowerLossOptions::new()
            },
        );
        write(&emulator, 0, 1, false);
        // Stored (or read) and handed to the model, not yet answered: the model takes 300 ms
        // each.
        let in_flight = [
            send(&emulator, HostOp::Write, 4096, vec![2; 4096], false),
            send(&emulator, HostOp::Read, 0, Vec::new(), false),
        ];
        let crash = emulator.crash(CrashTrigger::Command).unwrap();
        // The write in flight was stored, so the crash counts it among those it lost.
        let lost: Vec<u64> = crash.report.volatile.iter().map(|w| w.index).collect();
        assert_eq!(lost, vec![1, 2], "{after_crash:?}");
        for (k, rx) in in_flight.into_iter().enumerate() {
            let outcome = rx.recv_timeout(Duration::from_secs(30)).unwrap();
            if k == 0 {
                // One reply left (failed or not), the read is still in flight: once the reply
                // is counted, the report says so (a failed reply counts once).
                let deadline = std::time::Instant::now() + Duration::from_secs(10);
                let mut report = emulator.report();
                while report.lateness.replies < 2 && std::time::Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(1));
                    report = emulator.report();
                }
                assert_eq!(report.lateness.replies, 2, "{after_crash:?}");
                assert_eq!(report.in_flight, 1, "{after_crash:?}");
            }
            match after_crash {
                AfterCrash::Stop => assert!(powered_off(&outcome), "{outcome:?}"),
                AfterCrash::Serve => assert!(
                    matches!(outcome, Outcome::Done | Outcome::Data(_)),
                    "{outcome:?}"
                ),
            }
        }
        let report = emulator.shutdown().unwrap();
        let failed = if after_crash == AfterCrash::Stop {
            2
        } else {
            0
        };
        assert_eq!(report.failed, failed, "{after_crash:?}");
        // Failed at their instant, they are replies too, and nothing is left in flight.
        assert_eq!(report.lateness.replies, 3);
        assert_eq!(report.in_flight, 0);
    }
}

#[test]
fn without_power_loss_a_crash_is_refused() {
    let store = Arc::new(Store::open(&Backing::Memory, EXPORT_BYTES).unwrap());
    let emulator = Emulator::start(
        Box::new(LinearDevice::new(stec_zeus())),
        "stec-zeus",
        store,
        EmulatorOptions::new(EXPORT_BYTES),
        None,
    )
    .unwrap();
    let e = emulator.crash(CrashTrigger::Command).unwrap_err();
    assert!(e.to_string().contains("power loss is off"), "{e}");
    assert!(emulator.report().power_loss.is_none());
}

/// A torn crash after write 40 of a seeded workload: the image and what was dropped.
fn torn_run(seed: u64, log: Option<&std::path::Path>) -> (Vec<u8>, Crash) {
    let mode = CrashMode::Torn {
        atomicity: Atomicity::Sector,
        seed,
    };
    let write_log = log.map(|p| {
        WriteLogWriter::create(
            p,
            EXPORT_BYTES,
            storsim_emulate::power::DEFAULT_WRITE_CACHE_BYTES,
        )
        .unwrap()
    });
    let crashes = Arc::new(Mutex::new(Vec::<Crash>::new()));
    let seen = Arc::clone(&crashes);
    let emulator = start(PowerLossOptions {
        mode,
        crash_after_writes: Some(40),
        write_log,
        on_crash: Some(Box::new(move |c: &Crash| {
            seen.lock().unwrap().push(c.clone())
        })),
        ..PowerLossOptions::new()
    });
    for i in 0..40u64 {
        write(&emulator, (i * 5 % 64) * 4096, i as u8 + 1, i % 11 == 5);
        if i % 16 == 15 {
            flush(&emulator);
        }
    }
    let store = Arc::clone(emulator.store());
    emulator.shutdown().unwrap();
    let mut image = vec![0u8; EXPORT_BYTES as usize];
    store.read(0, &mut image).unwrap();
    let crash = crashes
        .lock()
        .unwrap()
        .pop()
        .expect("crashed after write 40");
    (image, crash)
}

#[test]
fn the_same_seed_drops_the_same_writes_and_the_write_log_replays_to_the_same_image() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("writes.log");
    let (image, crash) = torn_run(11, Some(&log));
    let (again, crash_again) = torn_run(11, None);
    assert_eq!(crash.report, crash_again.report);
    assert_eq!(image, again);
    let dropped = crash.report.dropped_bytes();
    assert!(
        dropped > 0,
        "a torn crash of 7 volatile writes dropped nothing"
    );
    let (_, other) = torn_run(12, None);
    assert_ne!(crash.report.volatile, other.report.volatile);
    // The log rebuilds the disk as the crash left it.
    let mode = crash.report.mode;
    let replayed = replay(&log, ReplayTo::Write(40), mode).unwrap();
    assert_eq!(replayed.crash, crash.report);
    let mut rebuilt = vec![0u8; EXPORT_BYTES as usize];
    replayed.store.read(0, &mut rebuilt).unwrap();
    assert_eq!(rebuilt, image);
    // Replayed to the end, the log's own crash record is applied as it happened and nothing
    // after it is lost.
    let end = replay(&log, ReplayTo::End, CrashMode::DropAll).unwrap();
    assert!(end.crash.volatile.is_empty());
    let mut at_end = vec![0u8; EXPORT_BYTES as usize];
    end.store.read(0, &mut at_end).unwrap();
    assert_eq!(at_end, image);
}
