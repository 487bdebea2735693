//! The host interface keeps the Device contract (checked by the conformance kit) in front of
//! devices shallower and deeper than itself, for NVMe with round robin and weighted round robin,
//! SATA, and requests spread over several flows and queues.

mod support;

use storsim_core::conformance::{self, mixed_requests, Mix, Options};
use storsim_core::Device;
use storsim_hostif::{Arbitration, FlowBinding, HostInterfaceParams, Priority, Protocol};
use support::*;

fn check(name: &str, params: &HostInterfaceParams, inner_depth: usize) {
    eprintln!("{name}");
    conformance::check(
        || hostif(params.clone(), fixed(30.0, 4, inner_depth)),
        &Options::default(),
    )
    .unwrap_or_else(|v| panic!("{name}: {v}"));
}

fn small_nvme() -> HostInterfaceParams {
    HostInterfaceParams {
        queues: 3,
        queue_depth: 4,
        fetch_per_round: 2,
        queue_fetch_size: 1,
        ..HostInterfaceParams::defaults(Protocol::Nvme)
    }
}

fn weighted(mut params: HostInterfaceParams) -> HostInterfaceParams {
    params.arbitration = Arbitration::WeightedRoundRobin {
        high: 4,
        medium: 2,
        low: 1,
    };
    params.flows = vec![
        FlowBinding {
            queues: vec![0],
            priority: Priority::Urgent,
        },
        FlowBinding {
            queues: vec![1, 2],
            priority: Priority::High,
        },
    ];
    params
}

#[test]
fn nvme_keeps_the_device_contract() {
    let mut defaults = HostInterfaceParams::defaults(Protocol::Nvme);
    defaults.queue_depth = 64;
    for inner_depth in [1, 8, 256] {
        check(
            &format!("nvme defaults over depth {inner_depth}"),
            &defaults,
            inner_depth,
        );
        check(
            &format!("small nvme over depth {inner_depth}"),
            &small_nvme(),
            inner_depth,
        );
        check(
            &format!("weighted nvme over depth {inner_depth}"),
            &weighted(small_nvme()),
            inner_depth,
        );
    }
}

#[test]
fn sata_keeps_the_device_contract() {
    for inner_depth in [1, 32] {
        check(
            &format!("sata over depth {inner_depth}"),
            &HostInterfaceParams::defaults(Protocol::Sata),
            inner_depth,
        );
    }
}

/// The kit's workload spread over five flows (three bound, two by default), driven open loop
/// with every call checked; the same run twice gives the same completions.
#[test]
fn several_flows_keep_the_contract_and_repeat_exactly() {
    let params = weighted(small_nvme());
    let run = || {
        let mut device = hostif(params.clone(), fixed(30.0, 4, 8));
        let mut requests = mixed_requests(
            7,
            &Mix {
                count: 2_000,
                capacity_bytes: device.capacity_bytes(),
                queue_depth: device.queue_depth(),
                max_request_bytes: 128 << 10,
            },
        );
        for r in &mut requests {
            r.flow = (r.id % 5) as u16;
        }
        let run = conformance::drive(&mut device, &requests).unwrap_or_else(|v| panic!("{v}"));
        assert_eq!(run.completions.len(), requests.len());
        (run.completions, device.counters())
    };
    let (first, counters) = run();
    assert_eq!(first, run().0);
    let fetched = |q: usize| {
        counters
            .iter()
            .find(|c| c.name == format!("hostif_queue_{q}_fetched_commands"))
            .map(|c| c.value)
            .expect("a counter per queue")
    };
    // Flow 0 (and flow 3, by default q0) use queue 0; flows 1 (alternating q1, q2), 2 and 4
    // (by default q2 and q1) the others: every queue fetched something.
    assert!((0..3).all(|q| fetched(q) > 0.0));
    assert_eq!((0..3).map(fetched).sum::<f64>(), 2_000.0);
}
