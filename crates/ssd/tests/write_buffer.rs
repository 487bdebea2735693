//! The DRAM write buffer's flush policies: `eager` (programs start at once; the buffer only
//! acknowledges early and bounds what is not yet programmed) and `watermark` (write-back:
//! coalescing, read hits, watermark, flush and idle destaging). Expected times are worked out
//! by hand from the timing below, not taken from the model.

use storsim_core::{Completion, Device, Op, Prng, Request, SimDuration, SimTime};
use storsim_engine::{run, EngineOptions, Replay};
use storsim_ftl::FtlConfig;
use storsim_ssd::{
    presets, DestageOrder, FlushPolicy, SsdDevice, SsdParams, WriteBack, WriteBuffer,
};
use storsim_workload::Record;

#[allow(dead_code)]
mod support;
use support::{counter, hand_timed, workload, CMD_NS, PAGE, TPROG_NS, TR_NS, XFER_NS};

/// A page program on an idle die: command + data in on the channel, then tPROG.
const PROGRAM_NS: u64 = CMD_NS + XFER_NS + TPROG_NS;
/// A page read on an idle die: command, tR, command + data out.
const READ_NS: u64 = CMD_NS + TR_NS + CMD_NS + XFER_NS;
/// The buffer's DRAM latency.
const LATENCY_NS: u64 = 2_000;
const IDLE_DELAY_NS: u64 = 1_000_000;

/// One channel with `dies` dies, 4 KiB pages, uniform SLC timing, page FTL, clean, no
/// controller overhead, no background GC, no buffer.
fn small(dies: u32) -> SsdParams {
    let mut p = hand_timed(1, dies, 1, 64, 32);
    p.background_gc = false;
    p.idle_gc_delay = SimDuration(IDLE_DELAY_NS);
    p.write_buffer_policy = FlushPolicy::Eager;
    p
}

fn with_buffer(mut p: SsdParams, pages: u64, policy: FlushPolicy) -> SsdParams {
    p.write_buffer = Some(WriteBuffer {
        capacity_bytes: pages * PAGE,
        latency: SimDuration(LATENCY_NS),
    });
    p.write_buffer_policy = policy;
    p
}

fn watermark(high: f64, low: f64, order: DestageOrder, idle: bool) -> FlushPolicy {
    FlushPolicy::Watermark(WriteBack {
        high_watermark_fraction: high,
        low_watermark_fraction: low,
        order,
        destage_when_idle: idle,
    })
}

/// A write-back buffer of `pages` pages with the watermarks out of the way (0.99 / 0.5) and no
/// idle destaging: pages leave only when a test says so.
fn write_back(dies: u32, pages: u64) -> SsdDevice {
    SsdDevice::new(with_buffer(
        small(dies),
        pages,
        watermark(0.99, 0.5, DestageOrder::Fifo, false),
    ))
    .unwrap()
}

fn has_counter(d: &SsdDevice, name: &str) -> bool {
    d.counters().iter().any(|c| c.name == name)
}

/// A request at `at_ns`: `(at_ns, op, first page, pages)`.
type Step = (u64, Op, u64, u64);

/// Drives the device through the Device contract by hand: each request is submitted at its
/// instant (after every deadline before it), then the device runs until it has no deadline.
/// Checks that every request completes exactly once, with arrival <= service start <= finish
/// <= the advance instant. Returns the completions by request id.
fn drive(d: &mut SsdDevice, steps: &[Step]) -> Vec<Completion> {
    let mut out: Vec<Option<Completion>> = vec![None; steps.len()];
    let mut done = Vec::new();
    let mut now = SimTime::ZERO;
    let mut advance = |d: &mut SsdDevice, now: SimTime, out: &mut Vec<Option<Completion>>| {
        d.advance(now, &mut done);
        for c in done.drain(..) {
            assert!(
                c.request.arrival <= c.service_start
                    && c.service_start <= c.finish
                    && c.finish <= now,
                "contract broken by {c:?} at {now}"
            );
            let slot = &mut out[c.request.id as usize];
            assert!(slot.is_none(), "request {} completed twice", c.request.id);
            *slot = Some(c);
        }
    };
    for (id, &(at, op, page, pages)) in steps.iter().enumerate() {
        let at = SimTime(at);
        while let Some(t) = d.next_deadline() {
            if t > at {
                break;
            }
            assert!(t >= now, "deadline {t} before now {now}");
            now = t;
            advance(d, now, &mut out);
        }
        assert!(at >= now, "steps must be in time order");
        now = at;
        advance(d, now, &mut out);
        let request = Request {
            id: id as u64,
            op,
            offset_bytes: page * PAGE,
            len_bytes: pages * PAGE,
            arrival: at,
            flow: 0,
        };
        d.submit(now, request).unwrap();
    }
    let mut rounds = 0;
    while let Some(t) = d.next_deadline() {
        assert!(t >= now, "deadline {t} before now {now}");
        now = t;
        advance(d, now, &mut out);
        rounds += 1;
        assert!(rounds < 1_000_000, "the device never goes quiet");
    }
    out.into_iter()
        .enumerate()
        .map(|(i, c)| c.unwrap_or_else(|| panic!("request {i} never completed")))
        .collect()
}

fn finish(c: &Completion) -> u64 {
    c.finish.as_ns()
}

#[test]
fn rewrites_of_a_buffered_page_coalesce_into_one_program() {
    let mut steps: Vec<Step> = (0..10).map(|i| (i * 1_000, Op::Write, 7, 1)).collect();
    steps.push((20_000, Op::Flush, 0, 0));
    let mut d = write_back(1, 64);
    let done = drive(&mut d, &steps);
    for (i, c) in done[..10].iter().enumerate() {
        assert_eq!(finish(c), i as u64 * 1_000 + LATENCY_NS, "write {i}");
    }
    // The flush sends the one dirty page: one program on an idle die.
    assert_eq!(finish(&done[10]), 20_000 + PROGRAM_NS);
    assert_eq!(counter(&d, "host_write_pages"), 10.0);
    assert_eq!(counter(&d, "flash_programs"), 1.0);
    assert_eq!(counter(&d, "buffer_write_hit_pages"), 9.0);
    assert_eq!(counter(&d, "buffer_flush_destaged_pages"), 1.0);
    assert_eq!(counter(&d, "buffer_destaged_pages"), 1.0);
    assert_eq!(counter(&d, "buffer_dirty_pages"), 0.0);
    assert_eq!(counter(&d, "write_amplification"), 0.1);
    assert!(d.ftl().lookup(7).is_some());

    // The eager policy programs every rewrite.
    let mut e = SsdDevice::new(with_buffer(small(1), 64, FlushPolicy::Eager)).unwrap();
    drive(&mut e, &steps);
    assert_eq!(counter(&e, "flash_programs"), 10.0);
}

#[test]
fn a_read_of_a_buffered_page_is_served_from_dram() {
    let mut d = write_back(1, 64);
    let done = drive(
        &mut d,
        &[
            (0, Op::Write, 3, 1),
            (0, Op::Write, 4, 1),
            (5_000, Op::Read, 3, 1),
            // Both pages go to flash; reading them afterwards takes the die.
            (10_000, Op::Flush, 0, 0),
            (10_000 + PROGRAM_NS * 2, Op::Read, 3, 2),
        ],
    );
    // Hit: the buffer's latency, no flash read.
    assert_eq!(finish(&done[2]) - 5_000, LATENCY_NS);
    assert_eq!(counter(&d, "buffer_read_hit_pages"), 1.0);
    // The flush destaged both pages; later reads of them are flash reads on an idle die
    // (serialised on the one die).
    assert_eq!(finish(&done[3]), 10_000 + 2 * PROGRAM_NS);
    assert_eq!(finish(&done[4]) - (10_000 + 2 * PROGRAM_NS), 2 * READ_NS);
    assert_eq!(counter(&d, "flash_reads"), 2.0);
    assert_eq!(counter(&d, "buffer_read_hit_pages"), 1.0);
}

#[test]
fn a_read_hit_costs_no_flash_read() {
    let mut d = write_back(1, 64);
    let done = drive(&mut d, &[(0, Op::Write, 9, 4), (100, Op::Read, 9, 4)]);
    assert_eq!(finish(&done[1]), 100 + LATENCY_NS);
    assert_eq!(counter(&d, "flash_reads"), 0.0);
    assert_eq!(counter(&d, "flash_programs"), 0.0);
    assert_eq!(counter(&d, "buffer_read_hit_pages"), 4.0);
    assert_eq!(counter(&d, "host_read_pages"), 4.0);
}

/// Capacity 10 pages, high 0.5 (5 pages), low 0.2 (2 pages): the sixth distinct page sends the
/// four oldest to flash.
fn watermark_run(order: DestageOrder, steps: &[Step]) -> SsdDevice {
    let mut d =
        SsdDevice::new(with_buffer(small(2), 10, watermark(0.5, 0.2, order, false))).unwrap();
    drive(&mut d, steps);
    d
}

#[test]
fn crossing_the_high_watermark_destages_the_oldest_pages_down_to_the_low_one() {
    let steps: Vec<Step> = (0..6).map(|i| (i * 1_000, Op::Write, i, 1)).collect();
    let d = watermark_run(DestageOrder::Fifo, &steps);
    assert_eq!(counter(&d, "buffer_watermark_destaged_pages"), 4.0);
    assert_eq!(counter(&d, "flash_programs"), 4.0);
    assert_eq!(counter(&d, "buffer_dirty_pages"), 2.0);
    assert_eq!(counter(&d, "buffer_dirty_pages_max"), 5.0);
    for lpn in 0..4 {
        assert!(d.ftl().lookup(lpn).is_some(), "page {lpn} was destaged");
    }
    for lpn in 4..6 {
        assert!(d.ftl().lookup(lpn).is_none(), "page {lpn} is still dirty");
    }

    // FIFO keeps a rewritten page's place; LRU moves it to the back.
    let mut steps: Vec<Step> = (0..5).map(|i| (i * 1_000, Op::Write, i, 1)).collect();
    steps.push((5_000, Op::Write, 0, 1));
    steps.push((6_000, Op::Write, 5, 1));
    let fifo = watermark_run(DestageOrder::Fifo, &steps);
    let lru = watermark_run(DestageOrder::Lru, &steps);
    let mapped =
        |d: &SsdDevice| -> Vec<u64> { (0..6).filter(|&l| d.ftl().lookup(l).is_some()).collect() };
    assert_eq!(mapped(&fifo), vec![0, 1, 2, 3]);
    assert_eq!(mapped(&lru), vec![1, 2, 3, 4]);
    assert_eq!(counter(&lru, "buffer_write_hit_pages"), 1.0);
}

#[test]
fn dirty_pages_never_exceed_the_high_watermark() {
    // 32 pages, high 0.75 (24 pages), low 0.25 (8 pages), random writes over 200 pages.
    let mut d = SsdDevice::new(with_buffer(
        small(2),
        32,
        watermark(0.75, 0.25, DestageOrder::Lru, false),
    ))
    .unwrap();
    let mut rng = Prng::new(7);
    let mut now = SimTime::ZERO;
    let mut done = Vec::new();
    for id in 0..2_000u64 {
        now += SimDuration(rng.below(200_000));
        while let Some(t) = d.next_deadline() {
            // Past deadlines, and future ones while the queue is full.
            if t > now && (id - done.len() as u64) < d.queue_depth() as u64 {
                break;
            }
            now = now.max(t);
            d.advance(now, &mut done);
        }
        let pages = 1 + rng.below(3);
        let page = rng.below(200 - pages);
        let request = Request {
            id,
            op: Op::Write,
            offset_bytes: page * PAGE,
            len_bytes: pages * PAGE,
            arrival: now,
            flow: 0,
        };
        d.submit(now, request).unwrap();
        assert!(counter(&d, "buffer_dirty_pages") <= 24.0);
    }
    assert!(counter(&d, "buffer_dirty_pages_max") <= 24.0);
    assert!(counter(&d, "buffer_dirty_pages_max") > 8.0);
    assert!(counter(&d, "buffer_watermark_destaged_pages") > 0.0);
}

#[test]
fn a_write_that_finds_the_buffer_full_waits_for_the_earliest_program() {
    // 4 pages, high 1.0 (4 pages), low 0.5 (2 pages), one die. Writes 0-3 fill the buffer at
    // once. Write 4 finds every slot dirty: pages 0 and 1 go to flash at 0 (programs finish at
    // PROGRAM_NS and 2 × PROGRAM_NS on the one die) and the write waits for the first.
    let mut d = SsdDevice::new(with_buffer(
        small(1),
        4,
        watermark(1.0, 0.5, DestageOrder::Fifo, false),
    ))
    .unwrap();
    let steps: Vec<Step> = (0..6).map(|i| (0, Op::Write, i, 1)).collect();
    let done = drive(&mut d, &steps);
    let f: Vec<u64> = done.iter().map(finish).collect();
    assert_eq!(&f[..4], &[LATENCY_NS; 4]);
    assert_eq!(f[4], PROGRAM_NS + LATENCY_NS);
    assert_eq!(done[4].service_start.as_ns(), PROGRAM_NS);
    // Write 5: dirty 2-4 plus page 1 still programming fill the buffer: it waits for page 1.
    assert_eq!(f[5], 2 * PROGRAM_NS + LATENCY_NS);
    assert_eq!(counter(&d, "buffer_full_waits"), 2.0);
    // Admission is FIFO: no write is admitted before an earlier one.
    assert!(f.windows(2).all(|w| w[0] <= w[1]));
}

#[test]
fn a_flush_completes_when_every_program_has_finished() {
    // Four dirty pages on one die: the flush sends them at 10 µs, and they program one after
    // another.
    let mut d = write_back(1, 64);
    let mut steps: Vec<Step> = (0..4).map(|i| (0, Op::Write, i, 1)).collect();
    steps.push((10_000, Op::Flush, 0, 0));
    // A second flush with nothing dirty still waits for the programs in flight.
    steps.push((20_000, Op::Flush, 0, 0));
    let done = drive(&mut d, &steps);
    assert_eq!(finish(&done[4]), 10_000 + 4 * PROGRAM_NS);
    assert_eq!(finish(&done[5]), 10_000 + 4 * PROGRAM_NS);
    assert_eq!(counter(&d, "buffer_flush_destaged_pages"), 4.0);
    assert_eq!(counter(&d, "flash_programs"), 4.0);
    assert_eq!(counter(&d, "buffer_dirty_pages"), 0.0);
}

#[test]
fn idle_time_destages_every_dirty_page() {
    let steps: Vec<Step> = (0..5).map(|i| (i * 1_000, Op::Write, 10 + i, 1)).collect();
    let idle = with_buffer(small(2), 64, watermark(0.9, 0.5, DestageOrder::Fifo, true));
    let mut d = SsdDevice::new(idle.clone()).unwrap();
    drive(&mut d, &steps);
    assert_eq!(counter(&d, "buffer_dirty_pages"), 0.0);
    assert_eq!(counter(&d, "buffer_idle_destaged_pages"), 5.0);
    assert_eq!(counter(&d, "flash_programs"), 5.0);
    for lpn in 10..15 {
        assert!(d.ftl().lookup(lpn).is_some());
    }

    // Idle work waits for the idle delay and yields to a host request: a read arriving just
    // before the delay is a hit, and pushes the destaging back.
    let mut d = SsdDevice::new(idle.clone()).unwrap();
    let last_write = 4_000 + LATENCY_NS;
    let mut with_read = steps.clone();
    with_read.push((last_write + IDLE_DELAY_NS - 1, Op::Read, 12, 1));
    let done = drive(&mut d, &with_read);
    assert_eq!(
        finish(&done[5]),
        last_write + IDLE_DELAY_NS - 1 + LATENCY_NS
    );
    assert_eq!(counter(&d, "flash_reads"), 0.0);
    assert_eq!(counter(&d, "buffer_idle_destaged_pages"), 5.0);

    // Without idle destaging the pages stay in DRAM and the device has nothing to do.
    let mut off = idle;
    off.write_buffer_policy = watermark(0.9, 0.5, DestageOrder::Fifo, false);
    let mut d = SsdDevice::new(off).unwrap();
    drive(&mut d, &steps);
    assert_eq!(d.next_deadline(), None);
    assert_eq!(counter(&d, "buffer_dirty_pages"), 5.0);
    assert_eq!(counter(&d, "flash_programs"), 0.0);
}

#[test]
fn a_trim_drops_a_dirty_page() {
    let mut d = write_back(1, 64);
    drive(
        &mut d,
        &[
            (0, Op::Write, 2, 2),
            (1_000, Op::Trim, 2, 1),
            (2_000, Op::Flush, 0, 0),
        ],
    );
    assert_eq!(counter(&d, "buffer_trimmed_pages"), 1.0);
    assert_eq!(counter(&d, "flash_programs"), 1.0);
    assert!(d.ftl().lookup(2).is_none());
    assert!(d.ftl().lookup(3).is_some());
}

#[test]
fn a_write_larger_than_the_buffer_goes_straight_to_flash() {
    let mut d = write_back(1, 4);
    let done = drive(
        &mut d,
        &[
            (0, Op::Write, 0, 1),
            (1_000, Op::Write, 0, 6),
            (2_000, Op::Flush, 0, 0),
        ],
    );
    // Six programs from 1 µs on the one die; the stale dirty copy of page 0 is dropped.
    assert_eq!(finish(&done[1]), 1_000 + 6 * PROGRAM_NS);
    assert_eq!(counter(&d, "buffer_write_through_pages"), 6.0);
    assert_eq!(counter(&d, "buffer_flush_destaged_pages"), 0.0);
    assert_eq!(counter(&d, "flash_programs"), 6.0);
    assert_eq!(finish(&done[2]), 1_000 + 6 * PROGRAM_NS);
}

#[test]
fn whole_request_ftls_destage_runs_of_pages() {
    let mut p = small(2);
    p.ftl = FtlConfig::default_for("page-static").unwrap();
    let mut d = SsdDevice::new(with_buffer(
        p,
        64,
        watermark(0.5, 0.25, DestageOrder::Fifo, true),
    ))
    .unwrap();
    let steps: Vec<Step> = (0..40).map(|i| (i * 1_000, Op::Write, i, 1)).collect();
    drive(&mut d, &steps);
    assert_eq!(counter(&d, "buffer_dirty_pages"), 0.0);
    assert_eq!(counter(&d, "buffer_destaged_pages"), 40.0);
    for lpn in 0..40 {
        assert!(d.ftl().lookup(lpn).is_some(), "page {lpn}");
    }
}

#[test]
fn the_eager_policy_keeps_its_behaviour() {
    // Eight single-page writes at 0 on one die, buffer of 4 pages: every program is scheduled
    // at once (finishing at k × PROGRAM_NS), and the buffer releases a page when its program
    // finishes, so write k >= 4 is admitted when program k - 3 finishes.
    let mut d = SsdDevice::new(with_buffer(small(1), 4, FlushPolicy::Eager)).unwrap();
    let mut steps: Vec<Step> = (0..8).map(|i| (0, Op::Write, i, 1)).collect();
    steps.push((0, Op::Flush, 0, 0));
    steps.push((1_000, Op::Read, 0, 1));
    let done = drive(&mut d, &steps);
    let f: Vec<u64> = done.iter().map(finish).collect();
    assert_eq!(&f[..4], &[LATENCY_NS; 4]);
    for k in 4..8u64 {
        assert_eq!(
            f[k as usize],
            (k - 3) * PROGRAM_NS + LATENCY_NS,
            "write {k}"
        );
    }
    assert_eq!(f[8], 8 * PROGRAM_NS);
    // The read is not served from the buffer: page 0 is read once the die has finished the
    // eight programs.
    assert_eq!(f[9], 8 * PROGRAM_NS + READ_NS);
    assert_eq!(counter(&d, "flash_programs"), 8.0);
    assert_eq!(counter(&d, "flash_reads"), 1.0);
    assert_eq!(counter(&d, "host_write_pages"), 8.0);
    // Eager devices report no write-back counters, so their results are as before.
    assert!(!has_counter(&d, "buffer_read_hit_pages"));
    assert_eq!(d.params().write_buffer_policy, FlushPolicy::Eager);
    assert_eq!(presets::bench2g().write_buffer_policy, FlushPolicy::Eager);
    assert_eq!(presets::tlc_nvme().write_buffer_policy, FlushPolicy::Eager);
}

#[test]
fn without_a_buffer_the_policy_means_nothing() {
    let mut p = small(1);
    p.write_buffer_policy = watermark(0.9, 0.5, DestageOrder::Fifo, true);
    let mut d = SsdDevice::new(p).unwrap();
    let done = drive(&mut d, &[(0, Op::Write, 0, 1)]);
    assert_eq!(finish(&done[0]), PROGRAM_NS);
    assert!(!has_counter(&d, "buffer_destaged_pages"));
}

#[test]
fn bad_watermarks_are_refused() {
    for (high, low) in [
        (0.5, 0.5),
        (0.5, 0.6),
        (1.1, 0.5),
        (0.5, -0.1),
        (f64::NAN, 0.1),
    ] {
        let p = with_buffer(small(1), 8, watermark(high, low, DestageOrder::Fifo, true));
        assert!(SsdDevice::new(p).is_err(), "high {high}, low {low}");
    }
}

/// A mixed random workload (reads, writes, trims, flushes over a hot range) with random gaps,
/// run through the engine, which asserts the completion contract.
fn random_run(p: SsdParams, seed: u64) -> (Vec<Completion>, Vec<(String, f64)>) {
    let mut rng = Prng::new(seed);
    let mut t = 0u64;
    let records: Vec<Record> = (0..3_000)
        .map(|i| {
            t += rng.below(400_000);
            let op = match rng.below(20) {
                0 => Op::Flush,
                1 => Op::Trim,
                2..=8 => Op::Read,
                _ => Op::Write,
            };
            let pages = if op == Op::Flush { 0 } else { 1 + rng.below(4) };
            let page = rng.below(300);
            Record {
                timestamp_ns: t,
                op,
                offset_bytes: page * PAGE,
                len_bytes: pages * PAGE,
                dev: 0,
                think_ns: 0,
                origin: i,
            }
        })
        .collect();
    let mut d = SsdDevice::new(p).unwrap();
    let mut w = workload(records);
    let mut out = Vec::new();
    let opts = EngineOptions {
        replay: Replay::Open { time_scale: 1.0 },
        ..Default::default()
    };
    run(
        &mut d,
        &mut w,
        &opts,
        &mut |c: &Completion| out.push(*c),
        &mut |_, _| {},
    )
    .unwrap();
    assert_eq!(out.len(), 3_000);
    let counters = d
        .counters()
        .into_iter()
        .map(|c| (c.name, c.value))
        .collect();
    (out, counters)
}

#[test]
fn write_back_runs_are_deterministic_and_keep_the_contract() {
    let mut configs = Vec::new();
    for (pages, high, low, order, idle, gc) in [
        (16, 0.75, 0.25, DestageOrder::Lru, true, true),
        (8, 1.0, 0.0, DestageOrder::Fifo, true, false),
        (4, 0.5, 0.25, DestageOrder::Fifo, false, true),
        (64, 0.9, 0.8, DestageOrder::Lru, false, false),
    ] {
        let mut p = with_buffer(small(2), pages, watermark(high, low, order, idle));
        p.background_gc = gc;
        // Fewer blocks, so that a random run garbage-collects.
        p.geometry.blocks_per_plane = 32;
        p.geometry.pages_per_block = 16;
        configs.push(p);
    }
    for (i, p) in configs.into_iter().enumerate() {
        let (a, ca) = random_run(p.clone(), 11 + i as u64);
        let (b, cb) = random_run(p, 11 + i as u64);
        assert_eq!(
            a, b,
            "config {i}: completions differ between identical runs"
        );
        assert_eq!(ca, cb, "config {i}: counters differ between identical runs");
        let get = |name: &str| ca.iter().find(|(n, _)| n == name).unwrap().1;
        assert!(get("buffer_read_hit_pages") > 0.0, "config {i}");
        assert!(get("buffer_destaged_pages") > 0.0, "config {i}");
    }
}
