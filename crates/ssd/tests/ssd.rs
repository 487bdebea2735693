//! The SSD model end to end: channel interleaving, the completion contract, the write buffer,
//! flushes, energy and determinism.

#[allow(dead_code)]
mod support;

use storsim_core::conformance;
use storsim_core::{Completion, Device, Op, Prng, Request, SimTime};
use storsim_engine::{run, EngineOptions, Replay};
use storsim_flash::{CellType, Geometry, Timing};
use storsim_ftl::FtlConfig;
use storsim_ssd::{presets, Precondition, SsdDevice, SsdParams, WriteBuffer};
use storsim_workload::Record;
use support::workload;

fn small(channels: u32, dies_per_channel: u32) -> SsdParams {
    let mut p = presets::flashsim_2009(FtlConfig::default_for("page").unwrap());
    p.geometry = Geometry {
        channels,
        chips_per_channel: dies_per_channel,
        dies_per_chip: 1,
        planes_per_die: 1,
        blocks_per_plane: 64,
        pages_per_block: 32,
        page_bytes: 4096,
        oob_bytes: 0,
    };
    p.timing = Timing::uniform(
        CellType::Slc,
        storsim_core::SimDuration(50_000),
        storsim_core::SimDuration(500_000),
        storsim_core::SimDuration(2_000_000),
        storsim_core::SimDuration(1_000),
        400,
        1,
    );
    p
}

fn rec(i: u64, op: Op, page: u64, pages: u64) -> Record {
    Record {
        timestamp_ns: 0,
        op,
        offset_bytes: page * 4096,
        len_bytes: pages * 4096,
        dev: 0,
        think_ns: 0,
        origin: i,
    }
}

fn run_closed(device: &mut SsdDevice, records: Vec<Record>, depth: u32) -> Vec<Completion> {
    let mut w = workload(records);
    let mut out = Vec::new();
    let opts = EngineOptions {
        replay: Replay::Closed { depth },
        ..Default::default()
    };
    run(
        device,
        &mut w,
        &opts,
        &mut |c: &Completion| out.push(*c),
        &mut |_, _| {},
    )
    .unwrap();
    out
}

#[test]
fn read_throughput_scales_with_channels_exactly_as_timing_implies() {
    // One die per channel: each read holds its die for command + tR + command + transfer.
    let per_read_ns = 1_000 + 50_000 + 1_000 + 10_240; // 4096 B at 400 B/µs = 10.24 µs
    for channels in [1u32, 2, 4, 8] {
        let mut p = small(channels, 1);
        p.precondition = Precondition::SequentialFill { fraction: 1.0 };
        let mut d = SsdDevice::new(p).unwrap();
        // The sequential fill striped consecutive pages over the channels.
        let g = *d.ftl().nand().geometry();
        for lpn in 0..channels as u64 * 4 {
            let ppa = d.ftl().lookup(lpn).unwrap();
            assert_eq!(
                g.channel_of(g.block_of(ppa)),
                (lpn % channels as u64) as u32
            );
        }
        let n = 64 * channels as u64;
        let reads: Vec<Record> = (0..n).map(|i| rec(i, Op::Read, i, 1)).collect();
        let done = run_closed(&mut d, reads, 2 * channels);
        let makespan = done.iter().map(|c| c.finish.as_ns()).max().unwrap();
        assert_eq!(
            makespan,
            (n / channels as u64) * per_read_ns,
            "{channels} channels"
        );
    }
}

#[test]
fn every_request_completes_once_and_never_before_its_physical_minimum() {
    let seed = 77;
    let mut p = small(2, 2);
    p.precondition = Precondition::SequentialFill { fraction: 0.5 };
    let mut d = SsdDevice::new(p).unwrap();
    let logical_pages = d.capacity_bytes() / 4096;
    let mut rng = Prng::new(seed);
    let mut records = Vec::new();
    for i in 0..20_000u64 {
        let op = match rng.below(10) {
            0..=5 => Op::Write,
            6..=8 => Op::Read,
            _ => Op::Trim,
        };
        let pages = 1 + rng.below(4);
        records.push(rec(i, op, rng.below(logical_pages - pages), pages));
    }
    // Which reads find data: the closed loop submits in record order, so replay the records
    // over the preconditioned state (the first half of the pages written, in order).
    let mut has_data: Vec<bool> = (0..logical_pages)
        .map(|lpn| lpn < logical_pages / 2)
        .collect();
    let reads_data: Vec<bool> = records
        .iter()
        .map(|r| {
            let pages =
                (r.offset_bytes / 4096) as usize..(r.offset_bytes + r.len_bytes) as usize / 4096;
            match r.op {
                Op::Read => return has_data[pages].iter().any(|&h| h),
                Op::Write => has_data[pages].fill(true),
                _ => has_data[pages].fill(false),
            }
            false
        })
        .collect();
    let reads_of_data = reads_data.iter().filter(|&&r| r).count();
    assert!(
        reads_of_data > 1_000,
        "only {reads_of_data} reads find data"
    );
    let done = run_closed(&mut d, records, 8);
    let mut seen = vec![false; 20_000];
    let min_read = 1_000 + 50_000 + 1_000 + 10_240;
    let min_write = 1_000 + 10_240 + 500_000;
    for c in &done {
        let id = c.request.id as usize;
        assert!(!seen[id], "seed {seed}: request {id} completed twice");
        seen[id] = true;
        let service = c.finish.as_ns() - c.request.arrival.as_ns();
        if c.request.op == Op::Write {
            assert!(
                service >= min_write,
                "seed {seed}: write {id} took {service} ns"
            );
        }
        // A read of a page that holds data takes at least one flash read, from the moment the
        // device took it; a read that finds no data needs no flash at all.
        if c.request.op == Op::Read {
            let read_time = c.finish.as_ns() - c.service_start.as_ns();
            if reads_data[id] {
                assert!(
                    read_time >= min_read,
                    "seed {seed}: read {id} of written data took {read_time} ns"
                );
            } else {
                assert_eq!(
                    read_time, 0,
                    "seed {seed}: read {id} of no data took {read_time} ns"
                );
            }
        }
    }
    assert!(
        seen.iter().all(|&s| s),
        "seed {seed}: some request never completed"
    );
    let counters = d.counters();
    let get = |n: &str| {
        counters
            .iter()
            .find(|c| c.name == n)
            .map(|c| c.value)
            .unwrap()
    };
    assert!(get("write_amplification") >= 1.0);
    assert!(
        get("flash_erases_gc") > 0.0,
        "the workload must have driven GC"
    );
}

#[test]
fn reads_of_written_pages_take_at_least_one_flash_read() {
    let mut d = SsdDevice::new(small(1, 1)).unwrap();
    let done = run_closed(
        &mut d,
        vec![
            rec(0, Op::Write, 5, 1),
            rec(1, Op::Read, 5, 1),
            rec(2, Op::Read, 6, 1),
        ],
        1,
    );
    let lat = |i: usize| done[i].finish.as_ns() - done[i].request.arrival.as_ns();
    assert_eq!(lat(0), 1_000 + 10_240 + 500_000);
    assert_eq!(lat(1), 1_000 + 50_000 + 1_000 + 10_240);
    assert_eq!(lat(2), 0, "an unwritten page needs no flash access");
}

#[test]
fn write_buffer_hides_program_time_until_it_is_full() {
    let mut p = small(1, 1);
    p.write_buffer = Some(WriteBuffer {
        capacity_bytes: 4 * 4096,
        latency: storsim_core::SimDuration(2_000),
    });
    let mut d = SsdDevice::new(p).unwrap();
    let writes: Vec<Record> = (0..8).map(|i| rec(i, Op::Write, i, 1)).collect();
    let done = run_closed(&mut d, writes, 8);
    let mut finishes: Vec<u64> = done.iter().map(|c| c.finish.as_ns()).collect();
    finishes.sort_unstable();
    // The first four fit in DRAM at once.
    assert_eq!(&finishes[..4], &[2_000; 4]);
    // The fifth waits for the first program to finish and free a page.
    let first_program = 1_000 + 10_240 + 500_000;
    assert_eq!(finishes[4], first_program + 2_000);
}

#[test]
fn flush_waits_for_buffered_programs() {
    let mut p = small(1, 1);
    p.write_buffer = Some(WriteBuffer {
        capacity_bytes: 64 * 4096,
        latency: storsim_core::SimDuration(0),
    });
    let mut d = SsdDevice::new(p).unwrap();
    let mut r = vec![rec(0, Op::Write, 0, 2)];
    r.push(Record {
        op: Op::Flush,
        len_bytes: 0,
        offset_bytes: 0,
        ..rec(1, Op::Flush, 0, 0)
    });
    let done = run_closed(&mut d, r, 2);
    let write = done.iter().find(|c| c.request.op == Op::Write).unwrap();
    let flush = done.iter().find(|c| c.request.op == Op::Flush).unwrap();
    assert_eq!(write.finish.as_ns(), 0);
    // Two programs on one die: the second starts after the first.
    assert_eq!(flush.finish.as_ns(), 2 * (1_000 + 10_240 + 500_000));
}

#[test]
fn energy_is_operations_times_per_operation_energy() {
    let mut d = SsdDevice::new(small(2, 1)).unwrap();
    let records: Vec<Record> = (0..100)
        .map(|i| rec(i, if i % 3 == 0 { Op::Read } else { Op::Write }, i % 40, 1))
        .collect();
    run_closed(&mut d, records, 4);
    let c = d.counters();
    let get = |n: &str| c.iter().find(|x| x.name == n).map(|x| x.value).unwrap();
    let e = storsim_ssd::Energy::default();
    assert!((get("energy_read_uj") - get("flash_reads") * e.read_uj).abs() < 1e-6);
    assert!((get("energy_program_uj") - get("flash_programs") * e.program_uj).abs() < 1e-6);
    assert!((get("energy_erase_uj") - get("flash_erases") * e.erase_uj).abs() < 1e-6);
    let by_cause: f64 = ["host", "gc", "merge", "mapping", "wear_level"]
        .iter()
        .map(|k| get(&format!("energy_{k}_uj")))
        .sum();
    let by_type = get("energy_read_uj") + get("energy_program_uj") + get("energy_erase_uj");
    assert!((by_cause - by_type).abs() < 1e-6);
}

#[test]
fn out_of_range_and_full_queue_are_refused() {
    let mut p = small(1, 1);
    p.queue_depth = 1;
    let mut d = SsdDevice::new(p).unwrap();
    let cap = d.capacity_bytes();
    let r = Request {
        id: 0,
        op: Op::Read,
        offset_bytes: cap,
        len_bytes: 4096,
        arrival: SimTime::ZERO,
        flow: 0,
    };
    assert!(d.submit(SimTime::ZERO, r).is_err());
    let ok = Request {
        offset_bytes: 0,
        ..r
    };
    d.submit(SimTime::ZERO, ok).unwrap();
    assert!(matches!(
        d.submit(SimTime::ZERO, ok),
        Err(storsim_core::DeviceError::QueueFull { .. })
    ));
}

#[test]
fn steady_state_preconditioning_settles_write_amplification() {
    let mut p = small(2, 2);
    p.precondition = Precondition::SteadyState {
        max_overwrite_factor: 8.0,
    };
    let d = SsdDevice::new(p).unwrap();
    let c = d.counters();
    let get = |n: &str| c.iter().find(|x| x.name == n).map(|x| x.value).unwrap();
    assert!(
        get("precondition_steady_state_waf") > 1.0,
        "random overwrites of a full device need GC"
    );
    assert!(get("precondition_erases") > 0.0);
    // The measured run starts from zero.
    assert_eq!(get("flash_programs"), 0.0);
}

/// Drives `requests` (sorted by arrival) through the device with the conformance kit's checked
/// driver, waiting for room when its queue is full, until every request has completed; returns
/// the completions and the counters as they stood just before request `snapshot_at` was
/// submitted.
fn drive(
    d: &mut SsdDevice,
    requests: &[Request],
    snapshot_at: usize,
) -> (Vec<Completion>, Vec<storsim_core::DeviceCounter>) {
    let mut snapshot = Vec::new();
    let run = conformance::drive_observed(d, requests, |index, d| {
        if index == snapshot_at {
            snapshot = d.counters();
        }
    })
    .unwrap_or_else(|violation| panic!("{violation}"));
    assert_eq!(run.failed_at, None, "the device failed");
    (run.completions, snapshot)
}

/// A full device for the idle-gap test: 4 dies, 64 blocks of 32 pages each, every logical
/// page written once, with or without background GC. A quarter of it is spare, so that
/// background GC has room to free blocks ahead of need (16 spare blocks a plane; the
/// collector aims at 8 free ones).
fn idle_gap_device(background: bool) -> SsdDevice {
    let mut p = small(2, 2);
    p.ftl = FtlConfig::new(storsim_ftl::page::Params {
        over_provisioning_fraction: 0.25,
        gc_high_watermark_blocks: 8,
        gc_background: background,
        ..storsim_ftl::page::Params::default()
    });
    p.background_gc = background;
    p.precondition = Precondition::SequentialFill { fraction: 1.0 };
    SsdDevice::new(p).unwrap()
}

/// Runs `requests` (a first burst of `first`, an idle gap, a second burst) on an
/// [`idle_gap_device`], checks what each burst must show, and returns the second burst's
/// foreground GC invocations, mean latency and worst latency.
fn second_burst(background: bool, requests: &[Request], first: u64, seed: u64) -> (f64, f64, u64) {
    let mut d = idle_gap_device(background);
    let (done, before) = drive(&mut d, requests, first as usize);
    assert_eq!(done.len(), requests.len());
    let after = d.counters();
    let get = |c: &[storsim_core::DeviceCounter], n: &str| {
        c.iter()
            .find(|x| x.name == n)
            .unwrap_or_else(|| panic!("no counter {n}"))
            .value
    };
    let first_end = done
        .iter()
        .filter(|c| c.request.id < first)
        .map(|c| c.finish)
        .max()
        .unwrap();
    assert!(
        first_end.as_ns() < 20_000_000_000 - 1_000_000_000,
        "seed {seed}: the first burst must end well before the second ({first_end})"
    );
    assert!(
        get(&before, "ftl_gc_invocations") > 0.0,
        "seed {seed}: the first burst must need foreground GC"
    );
    let units = get(&after, "background_gc_units");
    let victims = get(&after, "ftl_gc_background_victim_blocks");
    let foreground = get(&after, "ftl_gc_invocations") - get(&before, "ftl_gc_invocations");
    let latencies: Vec<u64> = done
        .iter()
        .filter(|c| c.request.id >= first)
        .map(|c| c.latency().as_ns())
        .collect();
    let mean = latencies.iter().sum::<u64>() as f64 / latencies.len() as f64;
    let p_max = *latencies.iter().max().unwrap();
    eprintln!(
        "background GC {background}: {units} units, {victims} background victims, \
         {foreground} foreground GC invocations in the second burst, its mean latency \
         {mean:.0} ns, max {p_max} ns"
    );
    if background {
        assert!(
            units > 0.0 && victims > 0.0,
            "seed {seed}: no background GC"
        );
        // Every unit of idle work was one victim block, and all of it ran before the second
        // burst, which never leaves the device idle for `idle_gc_delay` (1 ms).
        assert_eq!(units, victims, "seed {seed}");
        assert_eq!(get(&before, "background_gc_units"), units, "seed {seed}");
    } else {
        assert_eq!(units, 0.0, "seed {seed}");
        assert_eq!(victims, 0.0, "seed {seed}");
    }
    (foreground, mean, p_max)
}

#[test]
fn background_gc_in_an_idle_gap_spares_the_next_burst_foreground_gc() {
    let seed = 31;
    let logical_pages = idle_gap_device(false).capacity_bytes() / 4096;
    // A burst of random overwrites (arriving faster than the device programs, so it never
    // idles), a 20 s idle gap, then a second, slower burst, small enough for the blocks the
    // background collector frees in the gap (up to 8 free blocks a plane) to take most of it.
    let (first, second) = (4_000u64, 300u64);
    let mut rng = Prng::new(seed);
    let requests: Vec<Request> = (0..first + second)
        .map(|i| {
            let at = if i < first {
                i * 50_000
            } else {
                20_000_000_000 + (i - first) * 1_000_000
            };
            Request {
                id: i,
                op: Op::Write,
                offset_bytes: rng.below(logical_pages) * 4096,
                len_bytes: 4096,
                arrival: SimTime(at),
                flow: 0,
            }
        })
        .collect();
    let results: Vec<(f64, f64, u64)> = [false, true]
        .into_iter()
        .map(|background| second_burst(background, &requests, first, seed))
        .collect();
    let [(fg_off, mean_off, max_off), (fg_on, mean_on, max_on)] = results[..] else {
        unreachable!()
    };
    assert!(
        fg_off > 0.0,
        "seed {seed}: without background GC, the second burst must collect in the foreground"
    );
    assert!(
        fg_on * 4.0 <= fg_off,
        "seed {seed}: background GC left {fg_on} foreground invocations, without it {fg_off}"
    );
    assert!(
        mean_on * 2.0 < mean_off,
        "seed {seed}: the second burst's mean latency: {mean_on:.0} ns with background GC, \
         {mean_off:.0} ns without"
    );
    assert!(
        max_on < max_off,
        "seed {seed}: the second burst's worst latency: {max_on} ns with background GC, \
         {max_off} ns without"
    );
}

/// An SSD behind a wrapper that either swallows the engine's prefetch hints or passes them on
/// together with random and hostile ones of its own before every submission.
struct Hints {
    inner: SsdDevice,
    extra: Option<Prng>,
}

impl Device for Hints {
    fn model_name(&self) -> &'static str {
        self.inner.model_name()
    }
    fn capacity_bytes(&self) -> u64 {
        self.inner.capacity_bytes()
    }
    fn queue_depth(&self) -> usize {
        self.inner.queue_depth()
    }
    fn submit(&mut self, now: SimTime, request: Request) -> Result<(), storsim_core::DeviceError> {
        if let Some(rng) = &mut self.extra {
            let capacity = self.inner.capacity_bytes();
            for _ in 0..3 {
                let op = [Op::Read, Op::Write, Op::Trim, Op::Flush][rng.below(4) as usize];
                let (offset_bytes, len_bytes) = match rng.below(3) {
                    0 => (rng.below(capacity / 4096) * 4096, 4096 * (1 + rng.below(8))),
                    1 => (capacity - 4096, u64::MAX / 2),
                    _ => (u64::MAX - 4096, 4096),
                };
                self.inner.prefetch(&Request {
                    id: u64::MAX,
                    op,
                    offset_bytes,
                    len_bytes,
                    arrival: now,
                    flow: 0,
                });
            }
        }
        self.inner.submit(now, request)
    }
    fn next_deadline(&self) -> Option<SimTime> {
        self.inner.next_deadline()
    }
    fn advance(&mut self, now: SimTime, done: &mut Vec<Completion>) {
        self.inner.advance(now, done)
    }
    fn counters(&self) -> Vec<storsim_core::DeviceCounter> {
        self.inner.counters()
    }
    fn prefetch(&self, request: &Request) {
        if self.extra.is_some() {
            self.inner.prefetch(request);
        }
    }
}

/// A prefetch hint is only a hint: with every FTL, the same run with and without hints
/// (valid ones, and ones past the end of the device) gives the same completions and counters.
#[test]
fn prefetch_hints_change_no_result() {
    for name in ["page", "dftl", "fast"] {
        let mut p = small(2, 2);
        p.ftl = FtlConfig::default_for(name).unwrap();
        p.precondition = Precondition::SequentialFill { fraction: 0.9 };
        let mut rng = Prng::new(7);
        let logical = SsdDevice::new(p.clone()).unwrap().capacity_bytes() / 4096;
        let records: Vec<Record> = (0..3_000)
            .map(|i| {
                let op = match rng.below(10) {
                    0..=5 => Op::Write,
                    6..=8 => Op::Read,
                    _ => Op::Trim,
                };
                let pages = 1 + rng.below(4);
                rec(i, op, rng.below(logical - pages), pages)
            })
            .collect();
        let mut results = Vec::new();
        for extra in [None, Some(Prng::new(11))] {
            let mut d = Hints {
                inner: SsdDevice::new(p.clone()).unwrap(),
                extra,
            };
            let mut w = workload(records.clone());
            let mut done = Vec::new();
            let opts = EngineOptions {
                replay: Replay::Closed { depth: 8 },
                ..Default::default()
            };
            run(
                &mut d,
                &mut w,
                &opts,
                &mut |c: &Completion| done.push(*c),
                &mut |_, _| {},
            )
            .unwrap();
            let counters: Vec<(String, u64)> = d
                .counters()
                .into_iter()
                .map(|c| (c.name, c.value.to_bits()))
                .collect();
            results.push((done, counters));
        }
        assert_eq!(results[0].0.len(), records.len(), "{name}");
        assert!(results[0] == results[1], "{name}: hints changed the run");
    }
}
