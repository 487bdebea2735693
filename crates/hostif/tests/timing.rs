//! Hand-timed cases: link transfer times of known requests, fetch limits, weighted round robin
//! seen in the completion order, the urgent class ahead of a backlog, a half-duplex link.

mod support;

use storsim_core::conformance;
use storsim_core::conformance::counter;
use storsim_core::{Completion, Device, Op, Request, SimDuration};
use storsim_hostif::{
    Arbitration, Encoding, FlowBinding, HostInterfaceDevice, HostInterfaceParams, LinkParams,
    Priority, Protocol,
};
use support::*;

/// PCIe 3.0 ×4 (8 GT/s, 128b/130b): 4096 bytes take exactly 1040 ns (4096 × 130 / 512), so
/// a 64-byte entry takes 16.25 ns, rounded up to 17, and 16 bytes 4.0625, rounded up to 5.
fn gen3_x4() -> HostInterfaceParams {
    HostInterfaceParams {
        link: LinkParams {
            lanes: 4,
            gigatransfers_per_s: 8.0,
            encoding: Encoding::E128b130b,
            full_duplex: true,
        },
        command_processing: SimDuration::from_us(1),
        ..HostInterfaceParams::defaults(Protocol::Nvme)
    }
}

fn drive(device: &mut HostInterfaceDevice, requests: &[Request]) -> Vec<Completion> {
    conformance::drive(device, requests)
        .unwrap_or_else(|v| panic!("{v}"))
        .completions
}

#[test]
fn the_link_times_a_known_read_and_write() {
    assert_eq!(gen3_x4().link.transfer_ns(4096), 1040);
    // Read: entry 0..17, controller 17..1017, device 1017..51017, data and completion entry
    // (4112 bytes, 1044.06 ns) 51017..52062.
    let mut device = hostif(gen3_x4(), fixed(50.0, 1, 8));
    let done = drive(&mut device, &[request(0, Op::Read, 4096, 0, 0)]);
    assert_eq!(done[0].service_start.as_ns(), 0);
    assert_eq!(done[0].finish.as_ns(), 52_062);
    assert_eq!(counter(&device, "hostif_link_down_busy_ns"), 17.0);
    assert_eq!(counter(&device, "hostif_link_up_busy_ns"), 1045.0);
    assert_eq!(counter(&device, "hostif_controller_busy_ns"), 1000.0);

    // Write: entry 0..17, controller 17..1017, data 1017..2057, device 2057..52057, completion
    // entry 52057..52062.
    let mut device = hostif(gen3_x4(), fixed(50.0, 1, 8));
    let done = drive(&mut device, &[request(0, Op::Write, 4096, 0, 0)]);
    assert_eq!(done[0].finish.as_ns(), 52_062);
    assert_eq!(counter(&device, "hostif_link_down_busy_ns"), 17.0 + 1040.0);
    assert_eq!(counter(&device, "hostif_link_up_busy_ns"), 5.0);
}

#[test]
fn rounds_fetch_no_more_than_their_limits() {
    // Two queues of four commands, three commands a round, two from one queue: round 1 (at 0)
    // takes q0, q0, q1; its entries end at 51 ns, when round 2 takes q0, q0, q1 (the turn
    // starts after q1, the last served); round 3 (at 102) takes q1's last two.
    let params = HostInterfaceParams {
        queues: 2,
        queue_depth: 4,
        fetch_per_round: 3,
        queue_fetch_size: 2,
        ..gen3_x4()
    };
    let requests: Vec<Request> = (0..8)
        .map(|i| request(i, Op::Read, 4096, 0, (i / 4) as u16))
        .collect();
    let mut device = hostif(params.clone(), fixed(50.0, 64, 64));
    let mut done = drive(&mut device, &requests);
    done.sort_by_key(|c| c.request.id);
    let starts: Vec<u64> = done.iter().map(|c| c.service_start.as_ns()).collect();
    assert_eq!(starts, [0, 0, 51, 51, 0, 51, 102, 102]);
    assert_eq!(counter(&device, "hostif_arbitration_rounds"), 3.0);
    assert_eq!(counter(&device, "hostif_queue_0_fetched_commands"), 4.0);

    // A device that holds one command is given one at a time: a round per command, each at
    // the completion of the one before, in the queues' turns.
    let mut device = hostif(params, fixed(50.0, 1, 1));
    let done = drive(&mut device, &requests);
    assert_eq!(counter(&device, "hostif_arbitration_rounds"), 8.0);
    let order: Vec<u64> = done.iter().map(|c| c.request.id).collect();
    assert_eq!(order, [0, 4, 1, 5, 2, 6, 3, 7]);
    // Each fetch is at the instant the device finished the one before, whose data and
    // completion entry then take 1045 ns to reach the host.
    for pair in done.windows(2) {
        assert_eq!(
            pair[1].service_start.as_ns() + 1_045,
            pair[0].finish.as_ns()
        );
    }
}

/// Two backlogged flows, one command fetched at a time by a device that serves one at a time:
/// the completion order is the arbitration order.
fn completion_flows(arbitration: Arbitration) -> Vec<u16> {
    let params = HostInterfaceParams {
        queues: 2,
        queue_depth: 8,
        fetch_per_round: 1,
        queue_fetch_size: 1,
        arbitration,
        flows: vec![
            FlowBinding {
                queues: vec![0],
                priority: Priority::High,
            },
            FlowBinding {
                queues: vec![1],
                priority: Priority::Low,
            },
        ],
        ..gen3_x4()
    };
    let requests: Vec<Request> = (0..16)
        .map(|i| request(i, Op::Read, 4096, 0, (i % 2) as u16))
        .collect();
    let mut device = hostif(params, fixed(10.0, 1, 1));
    drive(&mut device, &requests)
        .iter()
        .map(|c| c.request.flow)
        .collect()
}

#[test]
fn weighted_round_robin_weights_show_in_the_completion_order() {
    // High weight 3, low weight 1: three of flow 0 for each of flow 1 while both have work;
    // flow 0 runs out after its eighth, and flow 1 takes the rest.
    let order = completion_flows(Arbitration::WeightedRoundRobin {
        high: 3,
        medium: 1,
        low: 1,
    });
    assert_eq!(order, [0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 1, 1, 1, 1, 1, 1]);
    // Round robin ignores the classes.
    let order = completion_flows(Arbitration::RoundRobin);
    assert_eq!(order, [0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1]);
}

#[test]
fn an_urgent_command_goes_before_a_backlog() {
    // Flow 0 (medium) has six commands at 0; the device serves one at a time in 10 µs, and a
    // command is fetched at each completion (rounds at 0, 11017, 22034, 33051 ns ...). Flow 1's
    // urgent command arrives at 25 µs and is the next one fetched.
    let params = HostInterfaceParams {
        queues: 2,
        queue_depth: 8,
        arbitration: Arbitration::WeightedRoundRobin {
            high: 8,
            medium: 8,
            low: 8,
        },
        flows: vec![
            FlowBinding {
                queues: vec![0],
                priority: Priority::Medium,
            },
            FlowBinding {
                queues: vec![1],
                priority: Priority::Urgent,
            },
        ],
        ..gen3_x4()
    };
    let mut requests: Vec<Request> = (0..6).map(|i| request(i, Op::Read, 512, 0, 0)).collect();
    requests.push(request(6, Op::Read, 512, 25_000, 1));
    let mut device = hostif(params, fixed(10.0, 1, 1));
    let done = drive(&mut device, &requests);
    let order: Vec<u64> = done.iter().map(|c| c.request.id).collect();
    assert_eq!(order, [0, 1, 2, 6, 3, 4, 5]);
    assert_eq!(done[3].service_start.as_ns(), 33_051);
}

#[test]
fn a_half_duplex_link_carries_one_direction_at_a_time() {
    // SATA at 6 Gb/s with 8b/10b: 0.6 bytes a ns. A read's 20-byte command takes 34 ns, the
    // controller 2 µs, the device 50 µs (done at 52034); its 4096 bytes and 8-byte completion
    // take 6840 ns. A write arriving at 49966 has its data ready at 52000 and holds the
    // half-duplex link until 58827, so the read finishes at 65667 instead of 58874.
    let requests = [
        request(0, Op::Read, 4096, 0, 0),
        request(1, Op::Write, 4096, 49_966, 0),
    ];
    let sata = HostInterfaceParams::defaults(Protocol::Sata);
    let mut device = hostif(sata.clone(), fixed(50.0, 2, 32));
    let done = drive(&mut device, &requests);
    let read = done.iter().find(|c| c.request.id == 0).expect("completed");
    assert_eq!(read.finish.as_ns(), 65_667);

    let mut full = sata;
    full.link.full_duplex = true;
    let mut device = hostif(full, fixed(50.0, 2, 32));
    let done = drive(&mut device, &requests);
    let read = done.iter().find(|c| c.request.id == 0).expect("completed");
    assert_eq!(read.finish.as_ns(), 58_874);
}

#[test]
fn a_full_queue_pair_holds_commands_in_the_host() {
    // Two pairs of two; every command is flow 0's, so queue 0 takes two and the host holds two
    // until it has room.
    let params = HostInterfaceParams {
        queues: 2,
        queue_depth: 2,
        ..gen3_x4()
    };
    let mut device = hostif(params, fixed(10.0, 4, 4));
    assert_eq!(device.queue_depth(), 4);
    let requests: Vec<Request> = (0..4).map(|i| request(i, Op::Read, 512, 0, 0)).collect();
    let done = drive(&mut device, &requests);
    assert_eq!(counter(&device, "hostif_held_commands"), 2.0);
    assert_eq!(counter(&device, "hostif_queue_1_fetched_commands"), 0.0);
    let first_finish = done[0].finish;
    assert!(done[2..].iter().all(|c| c.service_start >= first_finish));
}

/// A change that makes parameters invalid.
type Breaker = fn(&mut HostInterfaceParams);

#[test]
fn inconsistent_parameters_are_refused_naming_the_parameter() {
    let cases: [(&str, Breaker); 6] = [
        ("queues", |p| p.queues = 0),
        ("queue_depth", |p| {
            p.queues = 2;
            p.queue_depth = 40_000
        }),
        ("fetch_per_round", |p| p.fetch_per_round = 0),
        ("weight_low", |p| {
            p.arbitration = Arbitration::WeightedRoundRobin {
                high: 1,
                medium: 1,
                low: 300,
            }
        }),
        ("gigatransfers_per_s", |p| p.link.gigatransfers_per_s = 0.0),
        ("flows", |p| {
            p.flows = vec![FlowBinding {
                queues: vec![3],
                priority: Priority::High,
            }]
        }),
    ];
    for (param, break_it) in cases {
        let mut params = HostInterfaceParams::defaults(Protocol::Nvme);
        break_it(&mut params);
        let e = HostInterfaceDevice::new(params, fixed(1.0, 1, 1))
            .err()
            .unwrap_or_else(|| panic!("{param}: accepted"));
        assert_eq!(e.param, param, "{e}");
    }
    let mut sata = HostInterfaceParams::defaults(Protocol::Sata);
    sata.queue_depth = 33;
    assert_eq!(sata.validate().unwrap_err().param, "queue_depth");
    let mut shared = HostInterfaceParams::defaults(Protocol::Nvme);
    shared.flows = vec![
        FlowBinding {
            queues: vec![0],
            priority: Priority::High,
        },
        FlowBinding {
            queues: vec![0],
            priority: Priority::Low,
        },
    ];
    assert!(shared
        .validate()
        .unwrap_err()
        .message
        .contains("share queue 0"));
}
