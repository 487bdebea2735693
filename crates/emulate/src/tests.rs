use super::*;
use storsim_blackbox::linear::{stec_zeus, LinearDevice};

struct ToChannel(mpsc::Sender<Outcome>);

impl Responder for ToChannel {
    fn respond(self: Box<Self>, outcome: Outcome) {
        let _ = self.0.send(outcome);
    }
}

const EXPORT_BYTES: u64 = 1 << 20;

fn pattern() -> Vec<u8> {
    (0..8192u32).map(|i| (i * 13 % 251) as u8).collect()
}

fn start(backing: &Backing) -> Emulator {
    let store = Arc::new(Store::open(backing, EXPORT_BYTES).unwrap());
    Emulator::start(
        Box::new(LinearDevice::new(stec_zeus())),
        "stec-zeus",
        store,
        EmulatorOptions::new(EXPORT_BYTES),
        None,
    )
    .unwrap()
}

/// Submits `io` as the pacing thread submits a request it received itself from a polled
/// socket or ring, and waits for the reply.
fn submit_as_pacer(emulator: &Emulator, op: HostOp, fua: bool, data: Vec<u8>) -> Outcome {
    let len_bytes = if op == HostOp::Read {
        8192
    } else {
        data.len() as u64
    };
    let (tx, rx) = mpsc::channel();
    ON_PACER.with(|p| p.set(true));
    emulator.submit(
        HostIo {
            op,
            offset_bytes: 4096,
            len_bytes,
            fua,
            data,
        },
        Box::new(ToChannel(tx)),
    );
    ON_PACER.with(|p| p.set(false));
    rx.recv_timeout(Duration::from_secs(30)).unwrap()
}

/// A FUA write, a FLUSH and a read of what was written, each received "by the pacing
/// thread"; returns the final report. The first two sync the store; the read does not.
fn write_flush_read(backing: &Backing) -> EmulatorReport {
    let emulator = start(backing);
    let wrote = submit_as_pacer(&emulator, HostOp::Write, true, pattern());
    assert!(matches!(wrote, Outcome::Done), "{wrote:?}");
    let flushed = submit_as_pacer(&emulator, HostOp::Flush, false, Vec::new());
    assert!(matches!(flushed, Outcome::Done), "{flushed:?}");
    let read = submit_as_pacer(&emulator, HostOp::Read, false, Vec::new());
    assert!(
        matches!(read, Outcome::Data(ref d) if *d == pattern()),
        "{read:?}"
    );
    let report = emulator.shutdown().unwrap();
    assert_eq!(report.lateness.replies, 3);
    assert_eq!(report.failed, 0);
    assert_eq!(report.in_flight, 0);
    report
}

/// Submits `io` from a front end's thread and waits for the reply.
fn submit_and_wait(emulator: &Emulator, op: HostOp, offset_bytes: u64) -> Outcome {
    let (tx, rx) = mpsc::channel();
    let data = if op == HostOp::Write {
        pattern()
    } else {
        Vec::new()
    };
    let len_bytes = if op == HostOp::Flush { 0 } else { 8192 };
    emulator.submit(
        HostIo {
            op,
            offset_bytes,
            len_bytes,
            fua: false,
            data,
        },
        Box::new(ToChannel(tx)),
    );
    rx.recv_timeout(Duration::from_secs(30)).unwrap()
}

fn series_requests(report: &EmulatorReport) -> u64 {
    report.series.ops[0].requests.iter().sum()
}

#[test]
fn the_series_counts_every_reply_and_its_lateness_mid_run_through_a_switch_and_at_the_end() {
    let emulator = start(&Backing::Memory);
    for i in 0..20 {
        let op = if i % 2 == 0 {
            HostOp::Write
        } else {
            HostOp::Read
        };
        submit_and_wait(&emulator, op, i * 8192);
    }
    let mid = emulator.report();
    assert_eq!(mid.lateness.replies, 20);
    assert_eq!(series_requests(&mid), 20);
    assert_eq!(mid.series.channels[0].name, "lateness_ns");
    assert_eq!(mid.series.channels[0].count.iter().sum::<u64>(), 20);
    assert_eq!(
        mid.series.ops[0].latency_max_ns.iter().flatten().max(),
        Some(&mid.model.all.latency_ns.max)
    );
    // The series ends at the report and its last counters are the device's.
    assert!(mid.series.end_ns <= mid.elapsed_ns);
    let last = |report: &EmulatorReport, name: &str| {
        report
            .series
            .counters
            .iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, v)| *v.last().unwrap())
    };
    let first_counter = &mid.device_counters[0];
    assert_eq!(last(&mid, &first_counter.name), Some(first_counter.value));
    // A report changed nothing: the requests after it and a device switch add up with
    // those before.
    emulator
        .replace_device(Box::new(LinearDevice::new(stec_zeus())), "stec-zeus-again")
        .unwrap();
    for i in 0..10 {
        submit_and_wait(&emulator, HostOp::Read, i * 8192);
    }
    submit_and_wait(&emulator, HostOp::Flush, 0);
    let end = emulator.shutdown().unwrap();
    assert_eq!(end.lateness.replies, 31);
    assert_eq!(series_requests(&end), 31);
    assert_eq!(end.series.channels[0].count.iter().sum::<u64>(), 31);
    let flushes = end.series.ops.iter().find(|o| o.op == Some(Op::Flush));
    assert_eq!(flushes.map(|o| o.requests.iter().sum::<u64>()), Some(1));
    // Lateness is recorded where replies were, and only there.
    for (i, requests) in end.series.ops[0].requests.iter().enumerate() {
        assert_eq!(end.series.channels[0].count[i], *requests, "window {i}");
        assert_eq!(end.series.channels[0].max[i].is_some(), *requests > 0);
    }
    assert!(end.series.windows() <= storsim_stats::series::AUTO_WINDOWS_MAX);
    // Every reply the model took time over has a Δt/t; the linear model answers a flush
    // at once, which has none.
    let timed = end.model.all.requests - end.model.flush.requests;
    assert_eq!(end.model.flush.latency_ns.max, 0);
    assert_eq!(end.lateness.relative_percent.count, timed);
}

/// A front end the emulator has never heard of: its replies gather in its own batch type
/// and its requests come from its own poller, with nothing in the pacing thread naming it.
mod third_front_end {
    use super::*;
    use std::sync::atomic::AtomicBool;

    /// Replies delivered by a batch's send, over every batch of this test.
    static DELIVERED_BY_BATCH: AtomicUsize = AtomicUsize::new(0);

    #[derive(Default)]
    struct Batch(Vec<(mpsc::Sender<Outcome>, Outcome)>);

    impl FrontendBatch for Batch {
        fn is_empty(&self) -> bool {
            self.0.is_empty()
        }

        fn send(&mut self, before_write: &mut dyn FnMut(usize)) {
            before_write(0);
            for (tx, outcome) in self.0.drain(..) {
                DELIVERED_BY_BATCH.fetch_add(1, Ordering::Relaxed);
                let _ = tx.send(outcome);
            }
        }
    }

    struct BatchedResponder(mpsc::Sender<Outcome>);

    impl Responder for BatchedResponder {
        fn respond(self: Box<Self>, outcome: Outcome) {
            let _ = self.0.send(outcome);
        }

        fn respond_batched(self: Box<Self>, outcome: Outcome, batch: &mut ReplyBatch) -> Departure {
            batch.add(|b: &mut Batch| {
                b.0.push((self.0, outcome));
                Some(0)
            })
        }
    }

    /// Hands `left` reads to the emulator, one per poll, then closes.
    struct SourcePoller {
        emulator: Arc<Emulator>,
        left: usize,
        replies: mpsc::Sender<Outcome>,
        activated: Arc<AtomicBool>,
    }

    impl Poller for SourcePoller {
        fn frontend(&self) -> &'static str {
            "test"
        }

        fn poll(&mut self) -> Polled {
            if self.left == 0 {
                return Polled {
                    requests: 0,
                    open: false,
                };
            }
            self.left -= 1;
            self.emulator.submit(
                HostIo {
                    op: HostOp::Read,
                    offset_bytes: 4096 * self.left as u64,
                    len_bytes: 4096,
                    fua: false,
                    data: Vec::new(),
                },
                Box::new(BatchedResponder(self.replies.clone())),
            );
            Polled {
                requests: 1,
                open: true,
            }
        }

        fn set_active(&self, active: bool) {
            if active {
                self.activated.store(true, Ordering::Relaxed);
            }
        }
    }

    #[test]
    fn is_served_through_the_batch_and_poller_traits() {
        const READS: usize = 5;
        let emulator = Arc::new(start(&Backing::Memory));
        let (tx, rx) = mpsc::channel();
        let activated = Arc::new(AtomicBool::new(false));
        emulator.attach_poller(Box::new(SourcePoller {
            emulator: Arc::clone(&emulator),
            left: READS,
            replies: tx,
            activated: Arc::clone(&activated),
        }));
        for _ in 0..READS {
            let outcome = rx.recv_timeout(Duration::from_secs(30)).unwrap();
            assert!(
                matches!(outcome, Outcome::Data(ref d) if d.len() == 4096),
                "{outcome:?}"
            );
        }
        let report = emulator.shutdown().unwrap();
        assert!(
            activated.load(Ordering::Relaxed),
            "attached but never activated"
        );
        assert_eq!(report.polled.get("test"), Some(&(READS as u64)));
        assert_eq!(report.lateness.replies, READS as u64);
        assert_eq!(DELIVERED_BY_BATCH.load(Ordering::Relaxed), READS);
    }
}

#[test]
fn with_file_backing_the_pacing_thread_leaves_flushes_and_fua_writes_to_the_store_threads() {
    let dir = tempfile::tempdir().unwrap();
    let report = write_flush_read(&Backing::File(dir.path().join("disk")));
    assert_eq!(report.store_thread_jobs, 2);
}

#[test]
fn with_memory_backing_the_pacing_thread_does_store_work_itself() {
    assert_eq!(write_flush_read(&Backing::Memory).store_thread_jobs, 0);
}

#[test]
fn front_end_threads_keep_their_store_work_with_file_backing() {
    let dir = tempfile::tempdir().unwrap();
    let emulator = start(&Backing::File(dir.path().join("disk")));
    let (tx, rx) = mpsc::channel();
    emulator.submit(
        HostIo {
            op: HostOp::Write,
            offset_bytes: 0,
            len_bytes: 4096,
            fua: true,
            data: vec![7; 4096],
        },
        Box::new(ToChannel(tx)),
    );
    let outcome = rx.recv_timeout(Duration::from_secs(30)).unwrap();
    assert!(matches!(outcome, Outcome::Done), "{outcome:?}");
    assert_eq!(emulator.shutdown().unwrap().store_thread_jobs, 0);
}
