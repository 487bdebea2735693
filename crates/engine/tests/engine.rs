//! The engine's replay modes against hand-computed timelines on the linear model.

use std::cell::Cell;
use std::rc::Rc;
use storsim_blackbox::linear::{LinearCost, LinearDevice, LinearParams};
use storsim_blackbox::SequentialDetect;
use storsim_core::{Completion, Op, SimDuration};
use storsim_engine::{run, EngineError, EngineOptions, OutOfRange, Replay};
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
    Workload {
        name: "test.trace".into(),
        records: Box::new(records.into_iter().map(Ok)),
        pacing,
        origin: Origin::Line,
        duration_ns: None,
        skipped: Rc::new(Cell::new(0)),
        ignored: Rc::new(Cell::new(0)),
        format: None,
        seed: None,
    }
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
