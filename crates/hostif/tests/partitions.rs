//! Resource partitions (issue 27): two flows pinned to disjoint channels of an SSD do not slow
//! each other, except through what they still share, the host interface; without partitions
//! the writes of one slow the reads of the other. And the per-flow data cache: a flow whose
//! writes are not cached waits for its programs.

mod support;

use storsim_core::conformance;
use storsim_core::{Completion, Device, Op, Request};
use storsim_flash::Geometry;
use storsim_ftl::FtlConfig;
use storsim_hostif::{HostInterfaceParams, Protocol};
use storsim_ssd::{DataCacheMode, FlowPartition, FlushPolicy, SsdDevice, SsdParams};
use support::request;

/// bench2g's timings and page FTL on two channels of one plane each.
fn two_channel_ssd(partitions: Vec<FlowPartition>) -> SsdParams {
    let mut params = storsim_ssd::presets::bench2g();
    params.geometry = Geometry {
        channels: 2,
        chips_per_channel: 1,
        dies_per_chip: 1,
        planes_per_die: 1,
        blocks_per_plane: 64,
        pages_per_block: 64,
        ..params.geometry
    };
    params.partitions = partitions;
    params
}

fn on_channel(channel: u32) -> FlowPartition {
    FlowPartition {
        channels: vec![channel],
        ..FlowPartition::default()
    }
}

/// Flow 1 writes 64 pages, then reads them back every 100 µs from 100 ms on; flow 0 writes
/// other pages every 50 µs over the same time, every other one 7 ns before a read. Ids are
/// unique, arrivals sorted.
fn workload(with_flow_0: bool) -> Vec<Request> {
    let mut requests = Vec::new();
    for page in 0..64u64 {
        requests.push((page * 1_000_000, Op::Write, page, 1));
    }
    for k in 0..200u64 {
        requests.push((100_000_000 + k * 100_000, Op::Read, k % 64, 1));
    }
    if with_flow_0 {
        for k in 0..400u64 {
            requests.push((100_000_000 + k * 50_000 - 7, Op::Write, 1_000 + k, 0));
        }
    }
    requests.sort_by_key(|&(at, ..)| at);
    requests
        .into_iter()
        .enumerate()
        .map(|(id, (at, op, page, flow))| {
            let mut r = request(id as u64, op, 4096, at, flow);
            r.offset_bytes = page * 4096;
            r
        })
        .collect()
}

/// Flow 1's read latencies in ns, in arrival order.
fn reads_of_flow_1(done: &[Completion]) -> Vec<u64> {
    let mut reads: Vec<&Completion> = done
        .iter()
        .filter(|c| c.request.flow == 1 && c.request.op == Op::Read)
        .collect();
    reads.sort_by_key(|c| c.request.arrival);
    reads.iter().map(|c| c.latency().as_ns()).collect()
}

fn run(device: &mut dyn Device, requests: &[Request]) -> Vec<Completion> {
    conformance::drive(device, requests)
        .unwrap_or_else(|v| panic!("{v}"))
        .completions
}

fn ssd(partitions: Vec<FlowPartition>) -> SsdDevice {
    SsdDevice::new(two_channel_ssd(partitions)).expect("a valid SSD")
}

fn mean(v: &[u64]) -> f64 {
    v.iter().sum::<u64>() as f64 / v.len() as f64
}

#[test]
fn flows_in_disjoint_partitions_do_not_slow_each_other() {
    let partitions = || vec![on_channel(0), on_channel(1)];
    let alone = reads_of_flow_1(&run(&mut ssd(partitions()), &workload(false)));
    let mut shared = ssd(partitions());
    let together = reads_of_flow_1(&run(&mut shared, &workload(true)));
    assert_eq!(alone.len(), 200);
    assert_eq!(
        alone, together,
        "the reads' latencies are exactly those of the flow alone"
    );

    // Flow 0's pages went to channel 0, flow 1's to channel 1 (plane = channel here).
    let g = two_channel_ssd(Vec::new()).geometry;
    let channel_of = |lpn: u64| {
        let ppa = shared.ftl().lookup(lpn).expect("written");
        g.channel_of(g.block_of(ppa))
    };
    assert!((0..64).all(|lpn| channel_of(lpn) == 1));
    assert!((1_000..1_400).all(|lpn| channel_of(lpn) == 0));
}

#[test]
fn without_partitions_one_flow_s_writes_slow_the_other_s_reads() {
    let alone = reads_of_flow_1(&run(&mut ssd(Vec::new()), &workload(false)));
    let together = reads_of_flow_1(&run(&mut ssd(Vec::new()), &workload(true)));
    // Half of flow 0's 750 µs programs land on the die a read needs.
    assert!(
        mean(&together) > mean(&alone) + 50_000.0,
        "alone {} ns, together {} ns",
        mean(&alone),
        mean(&together)
    );
}

#[test]
fn behind_a_host_interface_partitioned_flows_share_only_the_interface() {
    // MQSim's default host (PCIe x4 at 1 GB/s a lane: a 4 KiB page crosses in 1024 ns, 1 µs
    // of controller time a command), one queue pair per flow.
    let interface = HostInterfaceParams {
        queues: 2,
        ..HostInterfaceParams::defaults(Protocol::Nvme)
    };
    let behind = |with_flow_0: bool| {
        let inner = Box::new(ssd(vec![on_channel(0), on_channel(1)]));
        let mut device = support::hostif(interface.clone(), inner);
        reads_of_flow_1(&run(&mut device, &workload(with_flow_0)))
    };
    let alone = behind(false);
    let together = behind(true);
    let extra: Vec<i64> = alone
        .iter()
        .zip(&together)
        .map(|(&a, &t)| t as i64 - a as i64)
        .collect();
    // A read can wait behind a write's entry and controller time (about 1 µs), or its
    // completion on the way back, never behind its flash work (a 750 µs program).
    assert!(extra.iter().all(|&e| (0..5_000).contains(&e)), "{extra:?}");
    assert!(extra.iter().any(|&e| e > 0), "the interface is shared");
}

#[test]
fn partitions_are_checked() {
    let bad = two_channel_ssd(vec![on_channel(2)]);
    let e = SsdDevice::new(bad).err().expect("channel 2 does not exist");
    assert!(e.to_string().contains("channel 2"), "{e}");
    let mut block = two_channel_ssd(vec![on_channel(0)]);
    block.ftl = FtlConfig::default_for("block").expect("registered");
    let e = SsdDevice::new(block)
        .err()
        .expect("the block FTL cannot pin writes");
    assert!(e.to_string().contains("resource partitions"), "{e}");
    // Flows past the list write anywhere: a one-partition device still serves flow 3.
    let mut device = ssd(vec![on_channel(0)]);
    let requests = [request(0, Op::Write, 4096, 0, 3)];
    assert_eq!(run(&mut device, &requests).len(), 1);
}

#[test]
fn a_flow_without_a_write_cache_waits_for_its_programs() {
    let mut params = two_channel_ssd(Vec::new());
    params.flow_data_cache = vec![DataCacheMode::Off, DataCacheMode::Write];
    let mut device = SsdDevice::new(params.clone()).expect("a valid SSD");
    // One write of each flow, far apart, on an idle device.
    let requests = [
        request(0, Op::Write, 4096, 0, 0),
        request(1, Op::Write, 4096, 10_000_000, 1),
        request(2, Op::Write, 4096, 20_000_000, 2),
    ];
    let done = run(&mut device, &requests);
    let latency = |id: u64| {
        done.iter()
            .find(|c| c.request.id == id)
            .expect("completed")
            .latency()
            .as_ns()
    };
    // Flow 0 waits for the 750 µs program; flow 1 (cached) and flow 2 (past the list, so
    // cached) see the buffer's 1 µs.
    assert!(latency(0) >= 750_000, "{}", latency(0));
    assert_eq!(latency(1), 1_000);
    assert_eq!(latency(2), 1_000);

    // Read caching is not something the SSD's buffer does, and a write-back buffer cannot
    // let a flow's writes past it.
    for mode in [DataCacheMode::Read, DataCacheMode::ReadWrite] {
        let mut p = params.clone();
        p.flow_data_cache = vec![mode];
        let e = SsdDevice::new(p).err().expect("refused");
        assert!(e.to_string().contains("caches writes only"), "{e}");
    }
    let mut write_back = params;
    write_back.write_buffer_policy = FlushPolicy::Watermark(Default::default());
    assert!(SsdDevice::new(write_back).is_err());
}
