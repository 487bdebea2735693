//! Runs of several flows: the open-loop flows merged by arrival time with ties to the flow
//! listed first, start and stop times, each closed-loop flow's own depth, and the flow each
//! request carries.

use storsim_blackbox::linear::{LinearCost, LinearDevice, LinearParams};
use storsim_blackbox::SequentialDetect;
use storsim_core::{Completion, Op, SimDuration};
use storsim_engine::{EngineOptions, Flow, Replay, RunInfo, Simulation};
use storsim_workload::{Origin, Pacing, Record, Workload};

/// A device whose every request takes `service_ns` on one of `servers` servers.
fn flat_device(service_ns: u64, servers: usize) -> LinearDevice {
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
        queue_depth: 64,
    })
}

/// A workload of reads at `timestamps_ns`, the `i`th at offset `i` × 4 KiB.
fn workload(timestamps_ns: &[u64]) -> Workload {
    let records: Vec<Record> = timestamps_ns
        .iter()
        .enumerate()
        .map(|(i, &t)| Record {
            timestamp_ns: t,
            op: Op::Read,
            offset_bytes: i as u64 * 4096,
            len_bytes: 4096,
            dev: 0,
            think_ns: 0,
            origin: i as u64 + 1,
        })
        .collect();
    Workload::from_records("flow.trace", records, Pacing::Open, Origin::Line)
}

/// Runs `flows` (workload, replay, start, stop) on `device` and returns the completions in
/// completion order.
fn run_flows(
    device: &mut LinearDevice,
    flows: Vec<(Workload, Option<Replay>, u64, Option<u64>)>,
    options: EngineOptions,
) -> (Vec<Completion>, RunInfo) {
    let phases = vec![0; flows.len()];
    run_phased_flows(device, flows, &phases, options)
}

/// [`run_flows`] with each flow in the phase `phases` gives it.
fn run_phased_flows(
    device: &mut LinearDevice,
    flows: Vec<(Workload, Option<Replay>, u64, Option<u64>)>,
    phases: &[u32],
    options: EngineOptions,
) -> (Vec<Completion>, RunInfo) {
    let mut workloads: Vec<(Workload, Option<Replay>, u64, Option<u64>)> = flows;
    let engine_flows = workloads
        .iter_mut()
        .zip(phases)
        .map(|((workload, replay, start_ns, stop_ns), &phase)| Flow {
            workload,
            replay: *replay,
            start_ns: *start_ns,
            stop_ns: *stop_ns,
            phase,
        })
        .collect();
    let mut out = Vec::new();
    let mut sink = |c: &Completion| out.push(*c);
    let info = Simulation::flows(device, engine_flows, options)
        .sink(&mut sink)
        .run()
        .unwrap();
    (out, info)
}

fn open() -> Option<Replay> {
    Some(Replay::Open { time_scale: 1.0 })
}

#[test]
fn open_flows_merge_by_arrival_and_ties_go_to_the_flow_listed_first() {
    // One server and 1 µs a request: requests complete in the order they were submitted.
    let mut device = flat_device(1_000, 1);
    let (done, info) = run_flows(
        &mut device,
        vec![
            (workload(&[0, 10_000, 20_000]), open(), 0, None),
            (workload(&[100, 5_100, 20_100]), open(), 0, None),
        ],
        EngineOptions::default(),
    );
    // Each flow is rebased to its own first record; flow 1's third record ties with flow 0's.
    let order: Vec<(u16, u64)> = done
        .iter()
        .map(|c| (c.request.flow, c.request.arrival.as_ns()))
        .collect();
    assert_eq!(
        order,
        vec![
            (0, 0),
            (1, 0),
            (1, 5_000),
            (0, 10_000),
            (0, 20_000),
            (1, 20_000)
        ]
    );
    assert_eq!(info.requests_completed, 6);
    // Request ids number the requests in the order they were admitted.
    let ids: Vec<u64> = done.iter().map(|c| c.request.id).collect();
    assert_eq!(ids, vec![0, 1, 2, 3, 4, 5]);
}

#[test]
fn a_flow_starts_at_its_start_and_issues_nothing_from_its_stop() {
    let mut device = flat_device(1_000, 4);
    let (done, _) = run_flows(
        &mut device,
        vec![
            (workload(&[0, 1_000_000, 2_000_000]), open(), 0, None),
            // Starts 5 ms in; its records 1 ms apart; stops before its fourth (8 ms).
            (
                workload(&[7, 1_000_007, 2_000_007, 3_000_007, 4_000_007]),
                open(),
                5_000_000,
                Some(8_000_000),
            ),
        ],
        EngineOptions::default(),
    );
    let flow1: Vec<u64> = done
        .iter()
        .filter(|c| c.request.flow == 1)
        .map(|c| c.request.arrival.as_ns())
        .collect();
    assert_eq!(flow1, vec![5_000_000, 6_000_000, 7_000_000]);
    let flow0 = done.iter().filter(|c| c.request.flow == 0).count();
    assert_eq!(flow0, 3);
}

#[test]
fn a_later_phase_starts_when_the_last_request_of_the_phases_before_it_completes() {
    // One server and 1 µs a request. Phase 0: an open flow of three reads 10 µs apart and a
    // closed flow of two reads; it ends when the open flow's last read (arriving at 20 µs)
    // completes at 21 µs. Phase 1: a closed flow that starts 5 µs into its phase (26 µs), and
    // an open flow whose records, rebased to its first, arrive at its phase's start (21 µs)
    // and 1 µs later, and which stops 1.5 µs into its phase, before its third record.
    let mut device = flat_device(1_000, 1);
    let (done, info) = run_phased_flows(
        &mut device,
        vec![
            (workload(&[0, 10_000, 20_000]), open(), 0, None),
            (
                workload(&[0, 0]),
                Some(Replay::Closed { depth: 1 }),
                0,
                None,
            ),
            (
                workload(&[0]),
                Some(Replay::Closed { depth: 1 }),
                5_000,
                None,
            ),
            (workload(&[40, 1_040, 2_040]), open(), 0, Some(1_500)),
        ],
        &[0, 0, 1, 1],
        EngineOptions::default(),
    );
    let starts = |flow: u16| -> Vec<u64> {
        done.iter()
            .filter(|c| c.request.flow == flow)
            .map(|c| c.request.arrival.as_ns())
            .collect()
    };
    let phase0_end = done
        .iter()
        .filter(|c| c.request.flow < 2)
        .map(|c| c.finish.as_ns())
        .max()
        .unwrap();
    assert_eq!(phase0_end, 21_000);
    assert_eq!(starts(2), vec![26_000]);
    assert_eq!(starts(3), vec![21_000, 22_000]);
    assert!(done
        .iter()
        .filter(|c| c.request.flow >= 2)
        .all(|c| c.request.arrival.as_ns() >= phase0_end));
    assert_eq!(info.requests_completed, 3 + 2 + 1 + 2);
}

#[test]
fn phases_that_skip_numbers_or_hold_an_empty_flow_still_run_in_order() {
    // Phase 3 has a flow with no record: it ends as soon as its phase starts, and phase 7
    // follows at once, after phase 0's only read completes at 1 µs.
    let mut device = flat_device(1_000, 1);
    let (done, _) = run_phased_flows(
        &mut device,
        vec![
            (workload(&[0]), Some(Replay::Closed { depth: 1 }), 0, None),
            (workload(&[]), Some(Replay::Closed { depth: 1 }), 0, None),
            (
                workload(&[0, 0]),
                Some(Replay::Closed { depth: 2 }),
                0,
                None,
            ),
        ],
        &[0, 3, 7],
        EngineOptions::default(),
    );
    let arrivals: Vec<(u16, u64)> = done
        .iter()
        .map(|c| (c.request.flow, c.request.arrival.as_ns()))
        .collect();
    assert_eq!(arrivals, vec![(0, 0), (2, 1_000), (2, 1_000)]);
}

/// The most requests of `flow` outstanding at once.
fn max_outstanding(done: &[Completion], flow: u16) -> usize {
    let mut edges: Vec<(u64, i32)> = done
        .iter()
        .filter(|c| c.request.flow == flow)
        .flat_map(|c| [(c.request.arrival.as_ns(), 1), (c.finish.as_ns(), -1)])
        .collect();
    // A completion at an instant frees its slot before the arrival it lets in.
    edges.sort();
    let mut now = 0i32;
    let mut max = 0;
    for (_, d) in edges {
        now += d;
        max = max.max(now);
    }
    max as usize
}

#[test]
fn each_closed_loop_flow_keeps_its_own_depth_and_a_closed_flow_waits_for_its_start() {
    let mut device = flat_device(10_000, 16);
    let (done, _) = run_flows(
        &mut device,
        vec![
            (
                workload(&[0; 40]),
                Some(Replay::Closed { depth: 1 }),
                0,
                None,
            ),
            (
                workload(&[0; 40]),
                Some(Replay::Closed { depth: 4 }),
                50_000,
                None,
            ),
        ],
        EngineOptions::default(),
    );
    assert_eq!(done.len(), 80);
    assert_eq!(max_outstanding(&done, 0), 1);
    assert_eq!(max_outstanding(&done, 1), 4);
    let first1 = done
        .iter()
        .filter(|c| c.request.flow == 1)
        .map(|c| c.request.arrival.as_ns())
        .min();
    assert_eq!(first1, Some(50_000));
    // With 16 servers nobody waits: depth 4 finishes its 40 in a quarter of depth 1's time.
    let end = |flow: u16| {
        done.iter()
            .filter(|c| c.request.flow == flow)
            .map(|c| c.finish.as_ns())
            .max()
            .unwrap()
    };
    assert_eq!(end(0), 40 * 10_000);
    assert_eq!(end(1), 50_000 + 10 * 10_000);
}

#[test]
fn an_open_flow_and_a_closed_flow_share_the_device_and_the_request_limit_holds_for_the_run() {
    let mut device = flat_device(1_000, 2);
    let (done, info) = run_flows(
        &mut device,
        vec![
            (workload(&[0, 500, 1_000, 1_500]), open(), 0, None),
            (
                workload(&[0; 100]),
                Some(Replay::Closed { depth: 2 }),
                0,
                None,
            ),
        ],
        EngineOptions {
            max_requests: Some(20),
            ..Default::default()
        },
    );
    assert_eq!(info.requests_completed, 20);
    assert_eq!(done.len(), 20);
    assert!(done.iter().any(|c| c.request.flow == 0));
    assert!(done.iter().any(|c| c.request.flow == 1));
}
