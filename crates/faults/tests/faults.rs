//! The faults layer over a linear model: the Device contract with faults off and on, exact
//! strikes by range and request number, timeouts, spikes, determinism and run-time changes.

use storsim_blackbox::linear::{LinearCost, LinearDevice, LinearParams};
use storsim_blackbox::SequentialDetect;
use storsim_core::conformance::{self, drive, mixed_requests, Mix, Options};
use storsim_core::{Completion, Device, Op, Request, SimDuration, SimTime, Status};
use storsim_faults::{Delay, FaultControl, FaultKind, FaultPlan, FaultRule, FaultsDevice};

const CAPACITY: u64 = 1 << 30;
const DEPTH: usize = 8;

fn model() -> Box<dyn Device> {
    let cost = LinearCost {
        fixed: SimDuration(50_000),
        per_kib_ps: 1_000_000,
    };
    Box::new(LinearDevice::new(LinearParams {
        capacity_bytes: CAPACITY,
        costs: [cost; 4],
        trim: SimDuration(1_000),
        flush: SimDuration(10_000),
        sequential_detect: SequentialDetect::PreviousRequest,
        servers: 2,
        queue_depth: DEPTH,
    }))
}

fn plan(rules: Vec<FaultRule>) -> FaultPlan {
    FaultPlan {
        rules,
        host_timeout_ns: 2_000_000,
        seed: 9,
        control: None,
    }
}

fn requests(count: usize) -> Vec<Request> {
    mixed_requests(
        5,
        &Mix {
            count,
            capacity_bytes: CAPACITY,
            queue_depth: DEPTH,
            max_request_bytes: 64 * 1024,
        },
    )
}

fn run(plan: &FaultPlan, requests: &[Request]) -> Vec<Completion> {
    let mut device = FaultsDevice::new(model(), plan);
    drive(&mut device, requests).unwrap().completions
}

#[test]
fn the_layer_keeps_the_device_contract_with_faults_off_and_on() {
    let off = plan(Vec::new());
    conformance::check(|| FaultsDevice::new(model(), &off), &Options::default()).unwrap();
    let on = plan(vec![
        FaultRule {
            rate_per_million: 100_000,
            ..FaultRule::always(FaultKind::ReadError)
        },
        FaultRule {
            rate_per_million: 50_000,
            ..FaultRule::always(FaultKind::Hang)
        },
        FaultRule {
            rate_per_million: 200_000,
            delay: Some(Delay::Exponential { mean_ns: 300_000 }),
            ..FaultRule::always(FaultKind::LatencySpike)
        },
        FaultRule {
            from_request: 1500,
            ..FaultRule::always(FaultKind::ReadOnly)
        },
    ]);
    let errors_allowed = Options {
        allow_errors: true,
        ..Options::default()
    };
    conformance::check(|| FaultsDevice::new(model(), &on), &errors_allowed).unwrap();
    // A layer that only delays keeps the rule that every request completes ok.
    let spikes_only = FaultPlan {
        host_timeout_ns: 1_000_000_000,
        ..plan(vec![FaultRule {
            rate_per_million: 200_000,
            delay: Some(Delay::Uniform {
                min_ns: 1_000,
                max_ns: 900_000,
            }),
            ..FaultRule::always(FaultKind::LatencySpike)
        }])
    };
    conformance::check(
        || FaultsDevice::new(model(), &spikes_only),
        &Options::default(),
    )
    .unwrap();
}

#[test]
fn with_no_rules_the_layer_changes_no_completion() {
    let requests = requests(500);
    let mut bare = model();
    let alone = drive(bare.as_mut(), &requests).unwrap().completions;
    let wrapped = run(&plan(Vec::new()), &requests);
    assert_eq!(alone, wrapped);
}

#[test]
fn a_range_rule_fails_exactly_the_reads_that_touch_it() {
    let requests = requests(2_000);
    let range = (0u64, CAPACITY / 512 / 4);
    let rule = FaultRule {
        sectors: Some(range),
        ..FaultRule::always(FaultKind::ReadError)
    };
    let done = run(&plan(vec![rule]), &requests);
    let touches = |r: &Request| {
        r.op == Op::Read && r.offset_bytes / 512 < range.1 && r.end_bytes().div_ceil(512) > range.0
    };
    let expected = requests.iter().filter(|r| touches(r)).count();
    assert!(expected > 50, "the workload reads the range");
    let failed: Vec<_> = done.iter().filter(|c| !c.status.is_ok()).collect();
    assert_eq!(failed.len(), expected);
    assert!(failed
        .iter()
        .all(|c| c.status == Status::MediaError && touches(&c.request)));
}

#[test]
fn from_the_nth_request_for_a_duration() {
    let requests = requests(2_000);
    let start = requests[999].arrival;
    let rule = FaultRule {
        from_request: 1000,
        duration_ns: Some(1_000_000),
        ..FaultRule::always(FaultKind::Fail)
    };
    let done = run(&plan(vec![rule]), &requests);
    for c in &done {
        let inside = c.request.id >= 999 && c.request.arrival < start + SimDuration(1_000_000);
        assert_eq!(c.status.is_ok(), !inside, "request {}", c.request.id);
        if inside {
            assert_eq!(c.status, Status::DeviceFailed);
            assert_eq!(c.finish, c.request.arrival.max(c.service_start));
        }
    }
}

#[test]
fn a_hung_request_times_out_after_the_host_timeout_and_holds_a_slot_until_then() {
    let requests = requests(300);
    let rule = FaultRule {
        op: Some(Op::Write),
        ..FaultRule::always(FaultKind::Hang)
    };
    let done = run(&plan(vec![rule]), &requests);
    assert_eq!(done.len(), requests.len());
    for c in done.iter().filter(|c| c.request.op == Op::Write) {
        assert_eq!(c.status, Status::Timeout);
        assert_eq!(c.finish, c.service_start + SimDuration(2_000_000));
    }
    assert!(done
        .iter()
        .filter(|c| c.request.op != Op::Write)
        .all(|c| c.status.is_ok()));
}

#[test]
fn rates_are_deterministic_from_the_seed_and_near_their_value() {
    let requests = requests(4_000);
    let rules = vec![FaultRule {
        rate_per_million: 250_000,
        ..FaultRule::always(FaultKind::WriteError)
    }];
    let a = run(&plan(rules.clone()), &requests);
    let b = run(&plan(rules.clone()), &requests);
    assert_eq!(a, b);
    let other = run(
        &FaultPlan {
            seed: 10,
            ..plan(rules)
        },
        &requests,
    );
    assert_ne!(a, other);
    let writes = requests.iter().filter(|r| r.op == Op::Write).count() as f64;
    let failed = a.iter().filter(|c| c.status == Status::WriteError).count() as f64;
    let share = failed / writes;
    assert!((0.2..0.3).contains(&share), "{share}");
}

#[test]
fn a_spike_delays_completions_and_is_counted() {
    let requests = requests(500);
    let rule = FaultRule {
        delay: Some(Delay::Fixed { ns: 10_000_000 }),
        ..FaultRule::always(FaultKind::LatencySpike)
    };
    let patient = FaultPlan {
        host_timeout_ns: 1_000_000_000,
        ..plan(vec![rule])
    };
    let mut device = FaultsDevice::new(model(), &patient);
    let done = drive(&mut device, &requests).unwrap().completions;
    assert!(done.iter().all(|c| c.status.is_ok()));
    assert!(done.iter().all(|c| c.latency() >= SimDuration(10_000_000)));
    assert_eq!(device.injected(FaultKind::LatencySpike), 500);
    let counters = device.counters();
    let spike = counters
        .iter()
        .find(|c| c.name == "faults_injected_latency_spike")
        .unwrap();
    assert_eq!(spike.value, 500.0);
}

#[test]
fn rules_added_and_cleared_through_the_control_reach_the_device() {
    let control = FaultControl::new();
    let mut device = FaultsDevice::new(
        model(),
        &FaultPlan {
            control: Some(control.clone()),
            ..plan(Vec::new())
        },
    );
    let read = |id, at| Request {
        id,
        op: Op::Read,
        offset_bytes: 0,
        len_bytes: 4096,
        arrival: SimTime(at),
        flow: 0,
    };
    let one = |device: &mut FaultsDevice, r: Request| {
        device.submit(r.arrival, r).unwrap();
        let mut done = Vec::new();
        while done.is_empty() {
            let t = device.next_deadline().unwrap();
            device.advance(t, &mut done);
        }
        done[0].status
    };
    assert_eq!(one(&mut device, read(0, 0)), Status::Ok);
    control.add(FaultRule::always(FaultKind::ReadError));
    assert_eq!(one(&mut device, read(1, 10_000_000)), Status::MediaError);
    control.clear();
    assert_eq!(one(&mut device, read(2, 20_000_000)), Status::Ok);
    assert_eq!(device.injected(FaultKind::ReadError), 1);
}

#[test]
fn bad_rules_are_refused_naming_the_key() {
    let check = |rule: FaultRule| rule.check().unwrap_err().key;
    assert_eq!(
        check(FaultRule {
            rate_per_million: 2_000_000,
            ..FaultRule::always(FaultKind::ReadError)
        }),
        "rate_per_million"
    );
    assert_eq!(
        check(FaultRule {
            op: Some(Op::Write),
            ..FaultRule::always(FaultKind::ReadError)
        }),
        "op"
    );
    assert_eq!(check(FaultRule::always(FaultKind::LatencySpike)), "delay");
    assert_eq!(
        check(FaultRule {
            sectors: Some((10, 10)),
            ..FaultRule::always(FaultKind::ReadError)
        }),
        "lba_end"
    );
}

#[test]
fn a_spike_past_the_host_timeout_ends_in_a_timeout_at_the_timeout() {
    // Reads 10 ms apart, so each is submitted at its arrival into an idle device.
    let requests: Vec<Request> = (0..20)
        .map(|i| Request {
            id: i,
            op: if i % 2 == 0 { Op::Read } else { Op::Write },
            offset_bytes: i * 4096,
            len_bytes: 4096,
            arrival: SimTime(i * 10_000_000),
            flow: 0,
        })
        .collect();
    let rule = FaultRule {
        op: Some(Op::Read),
        delay: Some(Delay::Fixed { ns: 5_000_000 }),
        ..FaultRule::always(FaultKind::LatencySpike)
    };
    // The plan's host timeout is 2 ms: every read's 5 ms spike outlasts it, and the host
    // sees a timeout 2 ms after it submitted the read.
    let done = run(&plan(vec![rule]), &requests);
    for c in &done {
        if c.request.op == Op::Read {
            assert_eq!(c.status, Status::Timeout, "{:?}", c.request);
            assert_eq!(c.latency(), SimDuration(2_000_000), "{:?}", c.request);
        } else {
            assert_eq!(c.status, Status::Ok);
            assert!(c.latency() < SimDuration(1_000_000));
        }
    }
}
