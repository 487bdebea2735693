//! The engine's replay modes against hand-computed timelines on the linear model, and its
//! handling of requests a device refuses, on a fake device that refuses chosen offsets.

use std::collections::VecDeque;
use std::sync::mpsc;
use std::time::Duration;
use storsim_blackbox::linear::{LinearCost, LinearDevice, LinearParams};
use storsim_blackbox::SequentialDetect;
use storsim_core::{
    Completion, Device, DeviceCounter, DeviceError, Op, Request, SimDuration, SimTime, Status,
};
use storsim_engine::{
    run, CancelToken, EngineError, EngineOptions, OutOfRange, Refused, RefusedRequest, Replay,
    Retry, RunInfo, Simulation, CHECK_INTERVAL, PROGRESS_INTERVAL, REFUSED_KEPT,
};
use storsim_workload::{Origin, Pacing, Record, Workload};

/// A device whose every read or write takes exactly `service_ns`, whatever its pattern.
fn flat_device(service_ns: u64, servers: usize, queue_depth: usize) -> LinearDevice {
    let cost = LinearCost {
        fixed: SimDuration(service_ns),
        per_kib_ps: 0,
    };
    LinearDevice::new(LinearParams {
        capacity_bytes: 1 << 30,
        costs: [cost; 4],
        trim: SimDuration(0),
        flush: SimDuration(0),
        sequential_detect: SequentialDetect::PreviousRequest,
        servers,
        queue_depth,
    })
}

fn record(timestamp_ns: u64, offset_bytes: u64, line: u64) -> Record {
    Record {
        timestamp_ns,
        op: Op::Read,
        offset_bytes,
        len_bytes: 4096,
        dev: 0,
        think_ns: 0,
        origin: line,
    }
}

fn workload(records: Vec<Record>, pacing: Pacing) -> Workload {
    Workload::from_records("test.trace", records, pacing, Origin::Line)
}

fn run_all(
    device: &mut LinearDevice,
    mut w: Workload,
    options: EngineOptions,
) -> Result<Vec<Completion>, EngineError> {
    let mut out = Vec::new();
    run(
        device,
        &mut w,
        &options,
        &mut |c: &Completion| out.push(*c),
        &mut |_, _| {},
    )?;
    Ok(out)
}

fn open(time_scale: f64) -> EngineOptions {
    EngineOptions {
        replay: Replay::Open { time_scale },
        ..Default::default()
    }
}

fn timeline(done: &[Completion]) -> Vec<(u64, u64, u64, u64)> {
    done.iter()
        .map(|c| {
            (
                c.request.id,
                c.request.arrival.0,
                c.service_start.0,
                c.finish.0,
            )
        })
        .collect()
}

#[test]
fn open_loop_rebases_timestamps_and_queues_behind_a_busy_device() {
    let mut d = flat_device(100, 1, 32);
    let recs = vec![
        record(5_000, 0, 1),
        record(5_050, 8192, 2),
        record(5_300, 16384, 3),
    ];
    let done = run_all(&mut d, workload(recs, Pacing::Open), open(1.0)).unwrap();
    assert_eq!(
        timeline(&done),
        [(0, 0, 0, 100), (1, 50, 100, 200), (2, 300, 300, 400)]
    );
}

#[test]
fn open_loop_issues_each_request_at_its_arrival_while_others_are_in_service() {
    // Two servers: the second request must start when it arrives, not when the first finishes.
    let mut d = flat_device(100, 2, 32);
    let recs = vec![record(0, 0, 1), record(10, 8192, 2), record(20, 16384, 3)];
    let done = run_all(&mut d, workload(recs, Pacing::Open), open(1.0)).unwrap();
    assert_eq!(
        timeline(&done),
        [(0, 0, 0, 100), (1, 10, 10, 110), (2, 20, 100, 200)]
    );
}

#[test]
fn time_scale_multiplies_inter_arrival_times() {
    let mut d = flat_device(10, 1, 32);
    let recs = vec![
        record(0, 0, 1),
        record(1_000, 8192, 2),
        record(3_000, 16384, 3),
    ];
    let done = run_all(&mut d, workload(recs, Pacing::Open), open(0.5)).unwrap();
    let arrivals: Vec<u64> = done.iter().map(|c| c.request.arrival.0).collect();
    assert_eq!(arrivals, [0, 500, 1_500]);
}

#[test]
fn host_waits_when_the_device_queue_is_full_and_nothing_is_lost() {
    let mut d = flat_device(100, 1, 2);
    let recs: Vec<Record> = (0..10).map(|i| record(0, i * 8192, i + 1)).collect();
    let done = run_all(&mut d, workload(recs, Pacing::Open), open(1.0)).unwrap();
    let mut ids: Vec<u64> = done.iter().map(|c| c.request.id).collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..10).collect::<Vec<_>>());
    let last = done.last().unwrap();
    assert_eq!(last.finish.0, 1_000);
    assert_eq!(last.queueing().0, 900);
}

/// A sink that notes the engine's hooks for a time series: each host wait, and each reading
/// of the device's counters with the instant it was asked for.
#[derive(Default)]
struct Hooks {
    completions: Vec<Completion>,
    waits: Vec<(SimTime, SimTime)>,
    readings: Vec<(SimTime, Vec<f64>, Vec<f64>)>,
    next_reading_after: u64,
}

impl storsim_engine::CompletionSink for Hooks {
    fn completed(&mut self, c: &Completion) {
        self.completions.push(*c);
    }
    fn waited(&mut self, arrival: SimTime, now: SimTime) {
        self.waits.push((arrival, now));
    }
    fn counters_due_after(&self) -> SimTime {
        SimTime(self.next_reading_after)
    }
    fn counters(
        &mut self,
        now: SimTime,
        values: &mut dyn FnMut(&mut Vec<f64>),
        named: &dyn Fn() -> Vec<DeviceCounter>,
    ) {
        let mut read = Vec::new();
        values(&mut read);
        let named: Vec<f64> = named().iter().map(|c| c.value).collect();
        self.readings.push((now, read, named));
        self.next_reading_after = now.as_ns() + 250;
    }
}

#[test]
fn the_sink_hears_of_host_waits_and_reads_the_counters_when_it_asks() {
    // Ten requests at instant 0 on one 100 ns server holding two: the first two go in at
    // once, each later one waits at the host until a completion makes room.
    let mut d = flat_device(100, 1, 2);
    let recs: Vec<Record> = (0..10).map(|i| record(0, i * 8192, i + 1)).collect();
    let mut w = workload(recs, Pacing::Open);
    let mut hooks = Hooks {
        next_reading_after: 150,
        ..Hooks::default()
    };
    Simulation::new(&mut d, &mut w, open(1.0))
        .sink(&mut hooks)
        .run()
        .unwrap();
    // Requests 2..9 waited: request k entered when request k-2 completed, at (k-1)·100.
    let expected: Vec<(SimTime, SimTime)> = (2..10)
        .map(|k| (SimTime(0), SimTime((k - 1) * 100)))
        .collect();
    assert_eq!(hooks.waits, expected);
    // Readings at the first event after 150, then after each reading + 250.
    let instants: Vec<u64> = hooks.readings.iter().map(|r| r.0.as_ns()).collect();
    assert_eq!(instants, [200, 500, 800]);
    for (now, values, named) in &hooks.readings {
        // The values alone are the named counters' values.
        assert_eq!(values, named, "at {now}");
    }
    // And they moved between readings: the device had taken requests in between.
    assert_ne!(hooks.readings[0].1, hooks.readings[2].1);
}

#[test]
fn closed_loop_issues_the_next_request_on_each_completion() {
    let mut d = flat_device(100, 2, 32);
    let recs: Vec<Record> = (0..6).map(|i| record(999_999, i * 8192, i + 1)).collect();
    let opts = EngineOptions {
        replay: Replay::Closed { depth: 2 },
        ..Default::default()
    };
    let done = run_all(&mut d, workload(recs, Pacing::Open), opts).unwrap();
    // Two servers, two outstanding: pairs finish at 100, 200, 300; nobody ever queues.
    let t = timeline(&done);
    assert_eq!(
        t.iter().map(|x| x.3).collect::<Vec<_>>(),
        [100, 100, 200, 200, 300, 300]
    );
    assert!(done.iter().all(|c| c.queueing().0 == 0));
}

#[test]
fn closed_loop_applies_think_time_after_the_completion() {
    let mut d = flat_device(100, 1, 32);
    let mut recs: Vec<Record> = (0..3).map(|i| record(0, i * 8192, i + 1)).collect();
    recs[1].think_ns = 50;
    recs[2].think_ns = 7;
    let done = run_all(
        &mut d,
        workload(recs, Pacing::Closed { depth: 1 }),
        EngineOptions {
            replay: Replay::Closed { depth: 1 },
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(
        timeline(&done),
        [(0, 0, 0, 100), (1, 150, 150, 250), (2, 257, 257, 357)]
    );
}

#[test]
fn as_fast_as_possible_keeps_the_device_queue_full() {
    let mut d = flat_device(10, 1, 4);
    let recs: Vec<Record> = (0..8)
        .map(|i| record(i * 1_000_000, i * 8192, i + 1))
        .collect();
    let opts = EngineOptions {
        replay: Replay::AsFastAsPossible,
        ..Default::default()
    };
    let done = run_all(&mut d, workload(recs, Pacing::Open), opts).unwrap();
    assert_eq!(done.last().unwrap().finish.0, 80);
}

#[test]
fn out_of_range_names_the_record_or_wraps_when_asked() {
    let mut d = flat_device(10, 1, 4);
    let recs = vec![record(0, 0, 1), record(1, (1 << 30) + 4096, 42)];
    let err = run_all(&mut d, workload(recs.clone(), Pacing::Open), open(1.0)).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("test.trace") && msg.contains("line 42"),
        "{msg}"
    );
    assert!(msg.contains("--wrap"), "{msg}");

    let mut d = flat_device(10, 1, 4);
    let opts = EngineOptions {
        out_of_range: OutOfRange::Wrap,
        ..open(1.0)
    };
    let done = run_all(&mut d, workload(recs, Pacing::Open), opts).unwrap();
    assert_eq!(done[1].request.offset_bytes, 4096);
}

/// A trace whose addresses are 512 times too large (byte offsets read as sectors) says by what
/// factor it exceeds the device, whether it stops or wraps.
#[test]
fn addresses_past_the_device_are_reported_with_their_factor() {
    let end = 512u64 << 30;
    let recs = vec![
        record(0, 0, 1),
        record(1, end - 4096, 7),
        record(2, 2 << 30, 8),
    ];
    let mut d = flat_device(10, 1, 4);
    let msg = run_all(&mut d, workload(recs.clone(), Pacing::Open), open(1.0))
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("line 7") && msg.contains("it ends at 512.000 times the device's capacity"),
        "{msg}"
    );
    assert!(msg.contains("--format"), "{msg}");

    let mut d = flat_device(10, 1, 4);
    let mut w = workload(recs, Pacing::Open);
    let opts = EngineOptions {
        out_of_range: OutOfRange::Wrap,
        ..open(1.0)
    };
    let info = run(
        &mut d,
        &mut w,
        &opts,
        &mut |_: &Completion| {},
        &mut |_, _| {},
    )
    .unwrap();
    assert_eq!(info.wrapped_requests, 2);
    assert_eq!(info.highest_wrapped_end_bytes, end);
    assert!(storsim_engine::exceeds_by(u128::from(end), 1 << 30).starts_with("512.000 times"));
    // A small excess is reported without the hint about units.
    assert_eq!(
        storsim_engine::exceeds_by(3 << 29, 1 << 30),
        "1.500 times the device's capacity"
    );
}

#[test]
fn out_of_order_timestamps_are_issued_at_the_previous_time() {
    let mut d = flat_device(10, 1, 4);
    let recs = vec![
        record(100, 0, 1),
        record(300, 8192, 2),
        record(200, 16384, 3),
    ];
    let mut w = workload(recs, Pacing::Open);
    let mut arrivals = Vec::new();
    let info = run(
        &mut d,
        &mut w,
        &open(1.0),
        &mut |c: &Completion| arrivals.push(c.request.arrival.0),
        &mut |_, _| {},
    )
    .unwrap();
    assert_eq!(arrivals, [0, 200, 200]);
    assert_eq!(info.out_of_order_records, 1);
}

#[test]
fn a_record_earlier_than_the_first_counts_as_out_of_order() {
    let mut d = flat_device(10, 1, 4);
    let recs = vec![record(5_000, 0, 1), record(1_000, 8192, 2)];
    let mut w = workload(recs, Pacing::Open);
    let mut arrivals = Vec::new();
    let info = run(
        &mut d,
        &mut w,
        &open(1.0),
        &mut |c: &Completion| arrivals.push(c.request.arrival.0),
        &mut |_, _| {},
    )
    .unwrap();
    assert_eq!(arrivals, [0, 0]);
    assert_eq!(info.out_of_order_records, 1);
}

#[test]
fn duration_and_request_limits_stop_issuing() {
    let recs: Vec<Record> = (0..100)
        .map(|i| record(i * 1_000, i * 8192, i + 1))
        .collect();
    let mut d = flat_device(10, 1, 4);
    let opts = EngineOptions {
        duration_ns: Some(10_000),
        ..open(1.0)
    };
    let done = run_all(&mut d, workload(recs.clone(), Pacing::Open), opts).unwrap();
    assert_eq!(done.len(), 10);
    let mut d = flat_device(10, 1, 4);
    let opts = EngineOptions {
        max_requests: Some(7),
        ..open(1.0)
    };
    assert_eq!(
        run_all(&mut d, workload(recs, Pacing::Open), opts)
            .unwrap()
            .len(),
        7
    );
}

#[test]
fn workload_errors_stop_the_run_with_the_parser_message() {
    let mut d = flat_device(10, 1, 4);
    let mut w = workload(vec![record(0, 0, 1)], Pacing::Open);
    w.records = Box::new(
        vec![
            Ok(record(0, 0, 1)),
            Err(storsim_workload::WorkloadError::Malformed {
                source: "x.csv".into(),
                position: "line 2".into(),
                message: "expected 5 fields".into(),
            }),
        ]
        .into_iter(),
    );
    let err = run(
        &mut d,
        &mut w,
        &open(1.0),
        &mut |_: &Completion| {},
        &mut |_, _| {},
    )
    .unwrap_err();
    assert_eq!(err.to_string(), "x.csv: line 2: expected 5 fields");
}

/// A device taking `service_ns` per request that refuses every request at one of `refuse`
/// offsets as invalid, the way raw flash refuses a program of a page that is not erased. One
/// server, first come first served, unless `parallel`: then every request starts when it is
/// submitted, which shows when the engine submits.
struct RefusingDevice {
    service_ns: u64,
    queue_depth: usize,
    refuse: Vec<u64>,
    parallel: bool,
    queue: VecDeque<Completion>,
    busy_until: SimTime,
}

impl RefusingDevice {
    fn new(service_ns: u64, queue_depth: usize, refuse: &[u64]) -> Self {
        RefusingDevice {
            service_ns,
            queue_depth,
            refuse: refuse.to_vec(),
            parallel: false,
            queue: VecDeque::new(),
            busy_until: SimTime::ZERO,
        }
    }

    fn parallel(self) -> Self {
        RefusingDevice {
            parallel: true,
            ..self
        }
    }
}

impl Device for RefusingDevice {
    fn model_name(&self) -> &'static str {
        "refusing"
    }
    fn capacity_bytes(&self) -> u64 {
        1 << 30
    }
    fn queue_depth(&self) -> usize {
        self.queue_depth
    }
    fn submit(&mut self, now: SimTime, request: Request) -> Result<(), DeviceError> {
        if self.refuse.contains(&request.offset_bytes) {
            return Err(DeviceError::Invalid {
                reason: format!("offset {} is refused", request.offset_bytes),
            });
        }
        if self.queue.len() >= self.queue_depth {
            return Err(DeviceError::QueueFull {
                queue_depth: self.queue_depth,
            });
        }
        let service_start = if self.parallel {
            now
        } else {
            now.max(self.busy_until)
        };
        let finish = service_start + SimDuration(self.service_ns);
        self.busy_until = finish;
        self.queue.push_back(Completion {
            request,
            service_start,
            finish,
            status: Status::Ok,
        });
        Ok(())
    }
    fn next_deadline(&self) -> Option<SimTime> {
        self.queue.front().map(|c| c.finish)
    }
    fn advance(&mut self, now: SimTime, done: &mut Vec<Completion>) {
        while self.queue.front().is_some_and(|c| c.finish <= now) {
            done.extend(self.queue.pop_front());
        }
    }
    fn counters(&self) -> Vec<DeviceCounter> {
        Vec::new()
    }
}

/// Runs `records` (line `i + 1` at offset `i` × 4096) on a [`RefusingDevice`] on another
/// thread, so that an engine that deadlocks fails the test instead of hanging the suite. The
/// minute allowed is a guard against a hang only; no test depends on how long a run takes.
fn run_refusing(
    device: RefusingDevice,
    records: Vec<Record>,
    pacing: Pacing,
    options: EngineOptions,
) -> Result<(Vec<Completion>, RunInfo), String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut device = device;
        let mut w = workload(records, pacing);
        let mut out = Vec::new();
        let result = run(
            &mut device,
            &mut w,
            &options,
            &mut |c: &Completion| out.push(*c),
            &mut |_, _| {},
        );
        let _ = tx.send(result.map(|info| (out, info)).map_err(|e| e.to_string()));
    });
    rx.recv_timeout(Duration::from_secs(60))
        .expect("the engine finished the run instead of hanging")
}

/// `n` records at line `i + 1`, offset `i` × 4096, each `gap_ns` after the previous.
fn numbered(n: u64, gap_ns: u64) -> Vec<Record> {
    (0..n)
        .map(|i| record(i * gap_ns, i * 4096, i + 1))
        .collect()
}

fn offsets(done: &[Completion]) -> Vec<u64> {
    done.iter().map(|c| c.request.offset_bytes / 4096).collect()
}

fn count(replay: Replay) -> EngineOptions {
    EngineOptions {
        replay,
        on_refused: Refused::Count,
        ..Default::default()
    }
}

#[test]
fn a_refused_request_stops_the_run_by_default_naming_the_record() {
    let device = RefusingDevice::new(100, 4, &[2 * 4096]);
    let err = run_refusing(device, numbered(5, 1_000), Pacing::Open, open(1.0)).unwrap_err();
    assert!(
        err.starts_with("test.trace: line 3: invalid request: offset 8192 is refused"),
        "{err}"
    );
    assert!(err.contains("--on-refused count"), "{err}");
    assert!(!err.contains("--wrap"), "{err}");
}

#[test]
fn counting_refused_requests_goes_on_without_them_in_open_loop() {
    let device = RefusingDevice::new(100, 4, &[4096, 4 * 4096]);
    let (done, info) = run_refusing(
        device,
        numbered(6, 1_000),
        Pacing::Open,
        count(Replay::Open { time_scale: 1.0 }),
    )
    .unwrap();
    // The others keep their arrivals and timings, as if the refused ones were not there.
    assert_eq!(offsets(&done), [0, 2, 3, 5]);
    assert_eq!(
        timeline(&done),
        [
            (0, 0, 0, 100),
            (2, 2_000, 2_000, 2_100),
            (3, 3_000, 3_000, 3_100),
            (5, 5_000, 5_000, 5_100)
        ]
    );
    assert_eq!(info.refused_requests, 2);
    assert_eq!(info.requests_issued, 4);
    assert_eq!(info.requests_completed, 4);
    assert_eq!(
        info.first_refused,
        [
            RefusedRequest {
                position: "line 2".into(),
                reason: "offset 4096 is refused".into()
            },
            RefusedRequest {
                position: "line 5".into(),
                reason: "offset 16384 is refused".into()
            }
        ]
    );
    assert_eq!(info.end_ns, 5_100);
}

#[test]
fn a_refused_request_in_open_loop_does_not_delay_the_next_one_arriving_at_once() {
    // Every record arrives at 0 on a device that serves them all at once: the third must be
    // submitted at 0 too, not held back until the first completes.
    let device = RefusingDevice::new(100, 4, &[4096]).parallel();
    let (done, info) = run_refusing(
        device,
        numbered(3, 0),
        Pacing::Open,
        count(Replay::Open { time_scale: 1.0 }),
    )
    .unwrap();
    assert_eq!(timeline(&done), [(0, 0, 0, 100), (2, 0, 0, 100)]);
    assert_eq!(info.refused_requests, 1);
}

#[test]
fn a_refused_request_in_closed_loop_frees_its_slot_at_once() {
    // Depth 1 with think times: a refused request counts as completed when it is refused, so
    // the next record arrives its think time after the refusal.
    let mut recs = numbered(4, 0);
    for r in &mut recs {
        r.think_ns = 50;
    }
    let device = RefusingDevice::new(100, 8, &[4096]);
    let (done, info) = run_refusing(
        device,
        recs,
        Pacing::Closed { depth: 1 },
        count(Replay::Closed { depth: 1 }),
    )
    .unwrap();
    // Line 1 arrives at 50 and finishes at 150; line 2 arrives at 200 and is refused there;
    // line 3 arrives at 250, line 4 at 400.
    assert_eq!(
        timeline(&done),
        [(0, 50, 50, 150), (2, 250, 250, 350), (3, 400, 400, 500)]
    );
    assert_eq!(info.refused_requests, 1);
    assert_eq!(info.first_refused[0].position, "line 2");

    // Depth 2 on a device that serves requests at once, line 2 arriving alone at 10 while
    // line 1 is in service: line 2 is refused at 10, so line 3 takes its slot at 10 rather
    // than when line 1 completes at 100.
    let mut recs = numbered(4, 0);
    recs[1].think_ns = 10;
    let device = RefusingDevice::new(100, 8, &[4096]).parallel();
    let (done, info) = run_refusing(
        device,
        recs,
        Pacing::Open,
        count(Replay::Closed { depth: 2 }),
    )
    .unwrap();
    assert_eq!(
        timeline(&done),
        [(0, 0, 0, 100), (2, 10, 10, 110), (3, 100, 100, 200)]
    );
    assert_eq!(info.refused_requests, 1);
}

#[test]
fn a_closed_loop_issues_every_other_record_when_many_are_refused() {
    // Every other record refused, at depth 1 and at depth 3, ending on a refusal: no slot is
    // lost, so the run neither hangs nor stops early.
    let refuse: Vec<u64> = (0..40).filter(|i| i % 2 == 1).map(|i| i * 4096).collect();
    for depth in [1, 3] {
        let device = RefusingDevice::new(10, 4, &refuse);
        let (done, info) = run_refusing(
            device,
            numbered(40, 0),
            Pacing::Open,
            count(Replay::Closed { depth }),
        )
        .unwrap();
        let mut got = offsets(&done);
        got.sort_unstable();
        assert_eq!(
            got,
            (0..40).filter(|i| i % 2 == 0).collect::<Vec<u64>>(),
            "depth {depth}"
        );
        assert_eq!(info.refused_requests, 20, "depth {depth}");
        assert_eq!(info.requests_completed, 20, "depth {depth}");
        // One server busy back to back: 20 requests of 10 ns.
        assert_eq!(info.end_ns, 200, "depth {depth}");
    }
}

#[test]
fn a_closed_loop_whose_every_request_is_refused_ends() {
    let refuse: Vec<u64> = (0..10).map(|i| i * 4096).collect();
    let device = RefusingDevice::new(10, 4, &refuse);
    let (done, info) = run_refusing(
        device,
        numbered(10, 0),
        Pacing::Open,
        count(Replay::Closed { depth: 2 }),
    )
    .unwrap();
    assert!(done.is_empty());
    assert_eq!(info.refused_requests, 10);
    assert_eq!(info.requests_issued, 0);
    assert_eq!(info.end_ns, 0);
}

#[test]
fn as_fast_as_possible_goes_on_past_refused_requests() {
    let device = RefusingDevice::new(10, 2, &[0, 5 * 4096, 9 * 4096]);
    let (done, info) = run_refusing(
        device,
        numbered(10, 1_000_000),
        Pacing::Open,
        count(Replay::AsFastAsPossible),
    )
    .unwrap();
    assert_eq!(offsets(&done), [1, 2, 3, 4, 6, 7, 8]);
    assert_eq!(info.refused_requests, 3);
    // The queue is kept full from the start: seven requests back to back.
    assert_eq!(info.end_ns, 70);
    assert!(done
        .iter()
        .all(|c| c.request.arrival.0 <= c.service_start.0));
}

#[test]
fn only_the_first_refused_requests_are_described() {
    let refuse: Vec<u64> = (0..25).map(|i| i * 4096).collect();
    let device = RefusingDevice::new(10, 4, &refuse);
    let (done, info) = run_refusing(
        device,
        numbered(30, 100),
        Pacing::Open,
        count(Replay::Open { time_scale: 1.0 }),
    )
    .unwrap();
    assert_eq!(done.len(), 5);
    assert_eq!(info.refused_requests, 25);
    assert_eq!(info.first_refused.len(), REFUSED_KEPT);
    let positions: Vec<&str> = info
        .first_refused
        .iter()
        .map(|r| r.position.as_str())
        .collect();
    let expected: Vec<String> = (1..=REFUSED_KEPT).map(|l| format!("line {l}")).collect();
    assert_eq!(positions, expected);
}

#[test]
fn counting_refused_requests_leaves_out_of_range_to_its_own_policy() {
    // A request past the end still stops the run under Count unless --wrap folds it.
    let device = RefusingDevice::new(10, 4, &[]);
    let recs = vec![record(0, 0, 1), record(1, (1 << 30) + 4096, 2)];
    let err = run_refusing(
        device,
        recs,
        Pacing::Open,
        count(Replay::Open { time_scale: 1.0 }),
    )
    .unwrap_err();
    assert!(err.contains("line 2") && err.contains("--wrap"), "{err}");
    assert!(!err.contains("--on-refused"), "{err}");
}

/// What a [`HintLog`] device saw, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Seen {
    Hint(u64),
    Submit(u64),
}

/// The linear model, logging every prefetch hint and submission by offset (in 4 KiB units).
/// The log is a cell because `prefetch` takes `&self`.
struct HintLog {
    inner: LinearDevice,
    seen: std::cell::RefCell<Vec<Seen>>,
}

impl Device for HintLog {
    fn model_name(&self) -> &'static str {
        "hint-log"
    }
    fn capacity_bytes(&self) -> u64 {
        self.inner.capacity_bytes()
    }
    fn queue_depth(&self) -> usize {
        self.inner.queue_depth()
    }
    fn submit(&mut self, now: SimTime, request: Request) -> Result<(), DeviceError> {
        self.seen
            .get_mut()
            .push(Seen::Submit(request.offset_bytes / 4096));
        self.inner.submit(now, request)
    }
    fn next_deadline(&self) -> Option<SimTime> {
        self.inner.next_deadline()
    }
    fn advance(&mut self, now: SimTime, done: &mut Vec<Completion>) {
        self.inner.advance(now, done)
    }
    fn counters(&self) -> Vec<DeviceCounter> {
        self.inner.counters()
    }
    fn prefetch(&self, request: &Request) {
        self.seen
            .borrow_mut()
            .push(Seen::Hint(request.offset_bytes / 4096));
    }
}

/// Runs `n` numbered records on a [`HintLog`] and returns what it saw.
fn hints_and_submissions(n: u64, options: EngineOptions) -> Vec<Seen> {
    let mut device = HintLog {
        inner: flat_device(100, 1, 4),
        seen: std::cell::RefCell::new(Vec::new()),
    };
    let mut w = workload(numbered(n, 10), Pacing::Open);
    run(
        &mut device,
        &mut w,
        &options,
        &mut |_: &Completion| {},
        &mut |_, _| {},
    )
    .unwrap();
    device.seen.into_inner()
}

#[test]
fn the_device_hears_of_each_request_before_it_is_submitted() {
    for options in [
        open(1.0),
        EngineOptions {
            replay: Replay::Closed { depth: 2 },
            ..Default::default()
        },
        EngineOptions {
            replay: Replay::AsFastAsPossible,
            ..Default::default()
        },
    ] {
        let replay = options.replay;
        let seen = hints_and_submissions(6, options);
        let submits: Vec<u64> = seen
            .iter()
            .filter_map(|s| match s {
                Seen::Submit(o) => Some(*o),
                Seen::Hint(_) => None,
            })
            .collect();
        let hints: Vec<u64> = seen
            .iter()
            .filter_map(|s| match s {
                Seen::Hint(o) => Some(*o),
                Seen::Submit(_) => None,
            })
            .collect();
        assert_eq!(submits, [0, 1, 2, 3, 4, 5], "{replay:?}");
        // Every record but the first is announced once, in order, and before its submission.
        assert_eq!(hints, [1, 2, 3, 4, 5], "{replay:?}");
        for o in 1..6 {
            let hint = seen.iter().position(|s| *s == Seen::Hint(o)).unwrap();
            let submit = seen.iter().position(|s| *s == Seen::Submit(o)).unwrap();
            assert!(hint < submit, "{replay:?}: {seen:?}");
        }
    }
}

#[test]
fn no_hint_goes_past_the_request_limit() {
    let seen = hints_and_submissions(
        6,
        EngineOptions {
            max_requests: Some(3),
            ..open(1.0)
        },
    );
    assert_eq!(
        seen.iter().filter(|s| matches!(s, Seen::Hint(_))).count(),
        2,
        "{seen:?}"
    );
}

/// Reading a record ahead must not count the lines skipped before it when the run ends
/// without reaching it: here a parser that skipped one bad line before every record, and a
/// run stopped by a refused second request.
#[test]
fn records_read_ahead_but_never_reached_leave_the_counters_alone() {
    let records = numbered(5, 1_000);
    let mut w = workload(Vec::new(), Pacing::Open);
    let skipped = w.skipped.clone();
    w.records = Box::new(records.into_iter().map(move |r| {
        skipped.set(skipped.get() + 1);
        Ok(r)
    }));
    let mut device = RefusingDevice::new(10, 4, &[4096]);
    let err = run(
        &mut device,
        &mut w,
        &open(1.0),
        &mut |_: &Completion| {},
        &mut |_, _| {},
    )
    .unwrap_err();
    assert!(err.to_string().contains("line 2"), "{err}");
    assert_eq!(w.skipped.get(), 2, "the lines before records 1 and 2 only");
}

/// What a [`BrokenDevice`] does wrong.
#[derive(Clone, Copy, Debug)]
enum Fault {
    /// Accepts requests and never gives a deadline for them.
    Stall,
    /// Names a deadline just before the last instant it was told.
    DeadlineInThePast,
    /// Completes requests with their service starting after they finished.
    StartAfterFinish,
    /// Completes a request under an id it was never given (the id plus 1000).
    CompletesUnknownId,
    /// Completes requests with a length other than the one they were given.
    AltersRequests,
    /// Once it has been advanced, names the instant it was advanced to as its deadline, for
    /// ever.
    DeadlineStuck,
}

/// A deliberately broken model: the flat linear device with one [`Fault`].
struct BrokenDevice {
    inner: LinearDevice,
    fault: Fault,
    now: SimTime,
}

impl BrokenDevice {
    fn new(fault: Fault) -> Self {
        BrokenDevice {
            inner: flat_device(100, 1, 4),
            fault,
            now: SimTime::ZERO,
        }
    }
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
        let deadline = self.inner.next_deadline();
        match self.fault {
            Fault::Stall => None,
            Fault::DeadlineInThePast if self.now > SimTime::ZERO => {
                deadline.map(|_| SimTime(self.now.0 - 1))
            }
            Fault::DeadlineStuck if self.now > SimTime::ZERO => Some(self.now),
            _ => deadline,
        }
    }
    fn advance(&mut self, now: SimTime, done: &mut Vec<Completion>) {
        self.now = now;
        let first = done.len();
        self.inner.advance(now, done);
        for c in &mut done[first..] {
            match self.fault {
                Fault::StartAfterFinish => c.service_start = c.finish + SimDuration(1),
                Fault::CompletesUnknownId => c.request.id += 1000,
                Fault::AltersRequests => c.request.len_bytes += 512,
                _ => {}
            }
        }
    }
    fn counters(&self) -> Vec<DeviceCounter> {
        Vec::new()
    }
}

/// Runs `f` on another thread, so that an engine that hangs fails the test instead of hanging
/// the suite. The minute allowed guards against a hang only; no test depends on the time.
fn within_a_minute<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(60))
        .expect("the engine finished the run instead of hanging")
}

/// Runs ten numbered records on a [`BrokenDevice`] and returns the model fault's message.
fn model_fault(fault: Fault, replay: Replay) -> String {
    within_a_minute(move || {
        let mut device = BrokenDevice::new(fault);
        let options = EngineOptions {
            replay,
            ..Default::default()
        };
        match run_all_on(
            &mut device,
            workload(numbered(10, 10), Pacing::Open),
            options,
        ) {
            Err(EngineError::Model {
                device, message, ..
            }) => {
                assert_eq!(device, "broken");
                message
            }
            other => panic!("expected a model fault from {fault:?}, got {other:?}"),
        }
    })
}

fn run_all_on<D: Device>(
    device: &mut D,
    mut w: Workload,
    options: EngineOptions,
) -> Result<(Vec<Completion>, RunInfo), EngineError> {
    let mut out = Vec::new();
    let info = run(
        device,
        &mut w,
        &options,
        &mut |c: &Completion| out.push(*c),
        &mut |_, _| {},
    )?;
    Ok((out, info))
}

#[test]
fn a_device_that_stalls_is_a_model_fault_not_a_hang_or_a_panic() {
    // Open loop used to end on a failed assertion, a closed loop used to wait for ever.
    for replay in [
        Replay::Open { time_scale: 1.0 },
        Replay::Closed { depth: 2 },
        Replay::AsFastAsPossible,
    ] {
        let message = model_fault(Fault::Stall, replay);
        assert!(message.contains("stalled"), "{replay:?}: {message}");
    }
}

#[test]
fn a_deadline_before_now_is_a_model_fault() {
    let message = model_fault(Fault::DeadlineInThePast, Replay::Open { time_scale: 1.0 });
    assert!(message.contains("before now"), "{message}");
}

#[test]
fn a_completion_that_breaks_the_contract_is_a_model_fault() {
    let message = model_fault(Fault::StartAfterFinish, Replay::Closed { depth: 1 });
    assert!(message.contains("completion contract"), "{message}");
}

#[test]
fn a_completion_of_a_request_never_given_or_altered_is_a_model_fault() {
    for replay in [Replay::Open { time_scale: 1.0 }, Replay::AsFastAsPossible] {
        let message = model_fault(Fault::CompletesUnknownId, replay);
        assert!(
            message.contains("completed request 1000,") && message.contains("never given"),
            "{replay:?}: {message}"
        );
        let message = model_fault(Fault::AltersRequests, replay);
        assert!(
            message.contains("completed request 0 as another request"),
            "{replay:?}: {message}"
        );
    }
}

#[test]
fn a_deadline_the_device_never_gets_past_is_a_model_fault_not_a_hang() {
    let message = model_fault(Fault::DeadlineStuck, Replay::Closed { depth: 2 });
    assert!(
        message.contains("stalled") && message.contains("never get past"),
        "{message}"
    );
}

#[test]
fn a_model_fault_says_it_is_the_models_and_where_it_happened() {
    let error = within_a_minute(|| {
        let mut device = BrokenDevice::new(Fault::Stall);
        run_all_on(
            &mut device,
            workload(numbered(3, 10), Pacing::Open),
            open(1.0),
        )
        .unwrap_err()
    });
    let text = error.to_string();
    assert!(
        text.contains("device model 'broken'") && text.contains("ns into the run"),
        "{text}"
    );
}

/// `n` numbered records replayed in a closed loop of depth 8 on the flat device.
fn closed_run(n: u64) -> (LinearDevice, Workload, EngineOptions) {
    let options = EngineOptions {
        replay: Replay::Closed { depth: 8 },
        ..Default::default()
    };
    (
        flat_device(100, 1, 32),
        workload(numbered(n, 0), Pacing::Closed { depth: 8 }),
        options,
    )
}

#[test]
fn a_cancelled_run_stops_soon_after_and_reports_what_completed() {
    let total = 20_000;
    let (mut device, mut w, options) = closed_run(total);
    let (whole, whole_info) = run_all_on(&mut device, w, options).unwrap();
    assert_eq!(whole_info.requests_completed, total);
    assert!(!whole_info.cancelled);

    let cancel_at = 3_000;
    (device, w, _) = closed_run(total);
    let token = CancelToken::new();
    let mut out = Vec::new();
    let mut sink = |c: &Completion| {
        out.push(*c);
        if out.len() == cancel_at {
            token.cancel();
        }
    };
    let info = Simulation::new(&mut device, &mut w, options)
        .sink(&mut sink)
        .cancel(token.clone())
        .run()
        .unwrap();
    assert!(info.cancelled);
    // The token is seen at the next check; then at most the loop's 8 requests drain.
    let seen_at = (cancel_at as u64).div_ceil(CHECK_INTERVAL) * CHECK_INTERVAL;
    assert!(
        (seen_at..=seen_at + 8).contains(&info.requests_completed),
        "{} completed",
        info.requests_completed
    );
    assert_eq!(info.requests_issued, info.requests_completed);
    assert_eq!(out.len() as u64, info.requests_completed);
    // What completed is what the whole run reported for the same requests.
    assert_eq!(out[..], whole[..out.len()]);
    assert_eq!(info.end_ns, out.last().unwrap().finish.0);
}

#[test]
fn a_token_never_cancelled_changes_nothing() {
    let (mut device, w, options) = closed_run(5_000);
    let (plain, plain_info) = run_all_on(&mut device, w, options).unwrap();
    let (mut device, mut w, options) = closed_run(5_000);
    let mut out = Vec::new();
    let mut sink = |c: &Completion| out.push(*c);
    let info = Simulation::new(&mut device, &mut w, options)
        .sink(&mut sink)
        .cancel(CancelToken::new())
        .run()
        .unwrap();
    assert_eq!(info, plain_info);
    assert_eq!(out, plain);
}

#[test]
fn a_run_cancelled_before_it_starts_issues_nothing() {
    let (mut device, mut w, options) = closed_run(100);
    let token = CancelToken::new();
    token.cancel();
    let info = Simulation::new(&mut device, &mut w, options)
        .cancel(token)
        .run()
        .unwrap();
    assert!(info.cancelled);
    assert_eq!((info.requests_issued, info.requests_completed), (0, 0));
}

#[test]
fn progress_is_reported_every_progress_interval_completions() {
    let total = 2 * PROGRESS_INTERVAL + 5;
    let (mut device, mut w, options) = closed_run(total);
    let mut calls = Vec::new();
    let mut progress = |completed: u64, now: SimTime| calls.push((completed, now));
    let info = Simulation::new(&mut device, &mut w, options)
        .progress(&mut progress)
        .run()
        .unwrap();
    assert_eq!(info.requests_completed, total);
    let counts: Vec<u64> = calls.iter().map(|&(n, _)| n).collect();
    assert_eq!(counts, [PROGRESS_INTERVAL, 2 * PROGRESS_INTERVAL]);
    // One server at 100 ns a request: the n-th completion is at n × 100 ns.
    assert_eq!(calls[0].1, SimTime(PROGRESS_INTERVAL * 100));
    assert_eq!(calls[1].1, SimTime(2 * PROGRESS_INTERVAL * 100));
}

/// A device serving one request at a time in `service_ns` that fails the request at each
/// offset of `failures` that many times (with a media error) before it succeeds.
struct FailingDevice {
    service_ns: u64,
    failures: Vec<(u64, u32)>,
    queue: VecDeque<Completion>,
    busy_until: SimTime,
    submissions: u64,
}

impl Device for FailingDevice {
    fn model_name(&self) -> &'static str {
        "failing"
    }
    fn capacity_bytes(&self) -> u64 {
        1 << 30
    }
    fn queue_depth(&self) -> usize {
        4
    }
    fn submit(&mut self, now: SimTime, request: Request) -> Result<(), DeviceError> {
        if self.queue.len() >= 4 {
            return Err(DeviceError::QueueFull { queue_depth: 4 });
        }
        self.submissions += 1;
        let status = match self
            .failures
            .iter_mut()
            .find(|(offset, left)| *offset == request.offset_bytes && *left > 0)
        {
            Some((_, left)) => {
                *left -= 1;
                Status::MediaError
            }
            None => Status::Ok,
        };
        let service_start = now.max(self.busy_until);
        let finish = service_start + SimDuration(self.service_ns);
        self.busy_until = finish;
        self.queue.push_back(Completion {
            request,
            service_start,
            finish,
            status,
        });
        Ok(())
    }
    fn next_deadline(&self) -> Option<SimTime> {
        self.queue.front().map(|c| c.finish)
    }
    fn advance(&mut self, now: SimTime, done: &mut Vec<Completion>) {
        while self.queue.front().is_some_and(|c| c.finish <= now) {
            done.extend(self.queue.pop_front());
        }
    }
    fn counters(&self) -> Vec<DeviceCounter> {
        Vec::new()
    }
}

fn failing_run(failures: &[(u64, u32)], retry: Retry) -> (Vec<Completion>, RunInfo, u64) {
    let mut device = FailingDevice {
        service_ns: 1_000,
        failures: failures.to_vec(),
        queue: VecDeque::new(),
        busy_until: SimTime::ZERO,
        submissions: 0,
    };
    let records = (0..4)
        .map(|i| record(i * 10_000, i * 4096, i + 1))
        .collect();
    let mut w = workload(records, Pacing::Open);
    let mut out = Vec::new();
    let options = EngineOptions { retry, ..open(1.0) };
    let info = run(
        &mut device,
        &mut w,
        &options,
        &mut |c: &Completion| out.push(*c),
        &mut |_, _| {},
    )
    .unwrap();
    (out, info, device.submissions)
}

#[test]
fn failed_requests_reach_the_sink_with_their_status_without_retries() {
    let (done, info, submissions) = failing_run(&[(4096, 5)], Retry::default());
    assert_eq!(submissions, 4);
    assert_eq!(info.retries, 0);
    assert_eq!(done.len(), 4);
    let failed: Vec<_> = done.iter().filter(|c| !c.status.is_ok()).collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].request.offset_bytes, 4096);
    assert_eq!(failed[0].status, Status::MediaError);
}

#[test]
fn a_run_of_one_flow_is_the_same_whether_or_not_it_may_retry() {
    // A run of one flow without retries takes the engine's loop for that case, a run that may
    // retry the general one: on a device that never fails, they must agree on every
    // completion and every fact of the run, in each replay and under each limit.
    let mut prng = storsim_core::Prng::new(3);
    let mut t = 0;
    let records: Vec<Record> = (0..2_000)
        .map(|i| {
            t += prng.below(3_000);
            Record {
                think_ns: prng.below(500),
                ..record(t, prng.below(1 << 18) * 4096, i + 1)
            }
        })
        .collect();
    for replay in [
        Replay::Open { time_scale: 1.0 },
        Replay::Open { time_scale: 0.25 },
        Replay::Closed { depth: 3 },
        Replay::AsFastAsPossible,
    ] {
        for (max_requests, duration_ns) in [(None, None), (Some(700), None), (None, Some(900_000))]
        {
            let outcome = |retry| {
                // Two servers of 5 µs for a request every 1.5 µs: requests wait at the host.
                let mut device = flat_device(5_000, 2, 6);
                let options = EngineOptions {
                    replay,
                    max_requests,
                    duration_ns,
                    retry,
                    ..Default::default()
                };
                let mut w = workload(records.clone(), Pacing::Open);
                let mut out = Vec::new();
                let info = run(
                    &mut device,
                    &mut w,
                    &options,
                    &mut |c: &Completion| out.push(*c),
                    &mut |_, _| {},
                )
                .unwrap();
                (out, info)
            };
            let simple = outcome(Retry::default());
            let general = outcome(Retry {
                attempts: 2,
                delay_ns: 1_000,
            });
            assert!(simple.0.len() > 100, "{replay:?}: {}", simple.0.len());
            assert_eq!(
                simple, general,
                "{replay:?}, {max_requests:?}, {duration_ns:?}"
            );
        }
    }
}

#[test]
fn a_retried_request_succeeds_after_its_failures_and_its_latency_counts_them() {
    // Request 1 (arriving at 10 µs) fails twice: 1 µs each, then 2 µs delays.
    let retry = Retry {
        attempts: 3,
        delay_ns: 2_000,
    };
    let (done, info, submissions) = failing_run(&[(4096, 2)], retry);
    assert_eq!(info.retries, 2);
    assert_eq!(submissions, 6);
    assert_eq!(done.len(), 4);
    assert!(done.iter().all(|c| c.status.is_ok()));
    let c = done
        .iter()
        .find(|c| c.request.offset_bytes == 4096)
        .unwrap();
    assert_eq!(c.request.arrival, SimTime(10_000));
    // Fail at 11 µs, resubmit at 13, fail at 14, resubmit at 16, succeed at 17.
    assert_eq!(c.finish, SimTime(17_000));
    assert_eq!(c.latency(), SimDuration(7_000));
}

#[test]
fn a_failure_stands_when_the_attempts_run_out() {
    let retry = Retry {
        attempts: 1,
        delay_ns: 0,
    };
    let (done, info, submissions) = failing_run(&[(0, 10)], retry);
    assert_eq!(info.retries, 1);
    assert_eq!(submissions, 5);
    assert_eq!(info.requests_completed, 4);
    let c = done.iter().find(|c| c.request.offset_bytes == 0).unwrap();
    assert_eq!(c.status, Status::MediaError);
    assert_eq!(c.finish, SimTime(2_000));
}
