//! Arrays over children of different kinds: a flash SSD next to a linear black box, and an
//! array inside an array. Each host request is checked against what its children did.

mod support;

use storsim_array::{ArrayDevice, ArrayParams, RaidLevel, ReadPolicy};
use storsim_core::{Completion, Device, Op, Prng, Request};
use storsim_flash::Geometry;
use storsim_ftl::FtlConfig;
use storsim_ssd::{presets, SsdDevice};
use support::*;

/// FlashSim 2009's timing on a geometry small enough to build quickly: 2 × 2 dies, 64 blocks
/// of 32 pages of 2 KiB each (16 MiB raw).
fn small_ssd(queue_depth: usize) -> Box<dyn Device> {
    let mut p = presets::flashsim_2009(FtlConfig::default_for("page").unwrap());
    p.geometry = Geometry {
        channels: 2,
        chips_per_channel: 1,
        dies_per_chip: 2,
        planes_per_die: 1,
        blocks_per_plane: 64,
        pages_per_block: 32,
        page_bytes: 2048,
        oob_bytes: 64,
    };
    p.queue_depth = queue_depth;
    Box::new(SsdDevice::new(p).expect("the SSD builds"))
}

/// Issues requests one at a time, far apart, and checks each host completion against the
/// pieces its children completed meanwhile: finish is the latest piece's finish, service
/// start the earliest piece's start.
fn one_at_a_time(array: &mut ArrayDevice, logs: &[SharedLog], requests: &[Request]) {
    for r in requests {
        let before: Vec<usize> = logs
            .iter()
            .map(|l| l.lock().unwrap().completed.len())
            .collect();
        let run = drive(array, std::slice::from_ref(r));
        assert_each_completed_once(std::slice::from_ref(r), &run);
        let host = run.completions[0];
        let pieces: Vec<Completion> = logs
            .iter()
            .zip(&before)
            .flat_map(|(l, &from)| l.lock().unwrap().completed[from..].to_vec())
            .collect();
        assert!(!pieces.is_empty(), "request {} reached no child", r.id);
        assert_eq!(host.finish, pieces.iter().map(|c| c.finish).max().unwrap());
        assert_eq!(
            host.service_start,
            pieces.iter().map(|c| c.service_start).min().unwrap()
        );
    }
}

fn spaced_requests(seed: u64, count: u64, capacity: u64) -> Vec<Request> {
    let mut rng = Prng::new(seed);
    (0..count)
        .map(|id| {
            let op = [Op::Read, Op::Write, Op::Write, Op::Trim][rng.below(4) as usize];
            let len = (1 + rng.below(48)) * 2048;
            let offset = rng.below((capacity - len) / 2048) * 2048;
            // Far enough apart that each request finds the array idle.
            req(id, op, offset, len, id * 1_000_000_000)
        })
        .collect()
}

#[test]
fn an_ssd_and_a_linear_child_stripe_and_mirror_together() {
    for level in [
        RaidLevel::Raid0 {
            stripe_unit_bytes: 16 << 10,
        },
        RaidLevel::Raid1 {
            read_policy: ReadPolicy::LeastOutstanding,
        },
    ] {
        let (ssd, ssd_log) = recorded(small_ssd(8));
        let (lin, lin_log) = recorded(linear(1 << 30, 100.0, 5.0, 8));
        let ssd_bytes = ssd.capacity_bytes();
        let mut array = ArrayDevice::new(
            ArrayParams {
                level,
                queue_depth: 8,
            },
            vec![ssd, lin],
        )
        .unwrap();
        match level {
            RaidLevel::Raid0 { stripe_unit_bytes } => assert_eq!(
                array.capacity_bytes(),
                2 * (ssd_bytes / stripe_unit_bytes * stripe_unit_bytes)
            ),
            RaidLevel::Raid1 { .. } => assert_eq!(array.capacity_bytes(), ssd_bytes),
            RaidLevel::Raid5(_) | RaidLevel::Raid6(_) => unreachable!("only RAID-0 and RAID-1"),
        }
        let requests = spaced_requests(3, 60, array.capacity_bytes());
        one_at_a_time(&mut array, &[ssd_log.clone(), lin_log.clone()], &requests);
        // Both kinds did work, and the SSD's own counters appear under its child prefix.
        assert!(!ssd_log.lock().unwrap().submitted.is_empty());
        assert!(!lin_log.lock().unwrap().submitted.is_empty());
        let names: Vec<String> = array.counters().into_iter().map(|c| c.name).collect();
        assert!(
            names.iter().any(|n| n.starts_with("child0_ssd_")),
            "{names:?}"
        );
        assert!(
            names.iter().any(|n| n.starts_with("child1_linear_")),
            "{names:?}"
        );
    }
}

#[test]
fn a_mirror_of_a_stripe_and_an_ssd_nests() {
    let (s0, l0) = recorded(linear(8 << 20, 40.0, 2.0, 4));
    let (s1, l1) = recorded(linear(8 << 20, 40.0, 2.0, 4));
    let stripe = ArrayDevice::new(
        ArrayParams {
            level: RaidLevel::Raid0 {
                stripe_unit_bytes: 8192,
            },
            queue_depth: 4,
        },
        vec![s0, s1],
    )
    .unwrap();
    let (ssd, ls) = recorded(small_ssd(4));
    let mut mirror = ArrayDevice::new(
        ArrayParams {
            level: RaidLevel::Raid1 {
                read_policy: ReadPolicy::RoundRobin,
            },
            queue_depth: 4,
        },
        vec![Box::new(stripe), ssd],
    )
    .unwrap();
    let requests = spaced_requests(9, 40, mirror.capacity_bytes());
    let writes = requests.iter().filter(|r| r.op == Op::Write).count();
    // The SSD is one copy, so its log shows every write; the stripe's children are below
    // the nested array, whose pieces the leaf logs show.
    one_at_a_time(&mut mirror, &[l0, l1, ls.clone()], &requests);
    let ssd_writes = ls
        .lock()
        .unwrap()
        .submitted
        .iter()
        .filter(|(_, r)| r.op == Op::Write)
        .count();
    assert_eq!(ssd_writes, writes);
    let names: Vec<String> = mirror.counters().into_iter().map(|c| c.name).collect();
    assert!(
        names.contains(&"child0_array_child1_linear_busy_ns".to_string()),
        "{names:?}"
    );
}

#[test]
fn an_array_reports_each_flash_childs_block_wear_under_its_name() {
    // RAID-0 over an SSD, a linear black box (no flash) and a mirror of two SSDs: the wear of
    // child 0 and of both halves of child 2, each agreeing with that child's erase counter.
    let ssd_bytes = small_ssd(8).capacity_bytes();
    let mirror = ArrayDevice::new(
        ArrayParams {
            level: RaidLevel::Raid1 {
                read_policy: ReadPolicy::LeastOutstanding,
            },
            queue_depth: 8,
        },
        vec![small_ssd(8), small_ssd(8)],
    )
    .expect("a valid mirror");
    let mut array = raid0(
        16 << 10,
        16,
        vec![
            small_ssd(8),
            linear(ssd_bytes, 10.0, 1.0, 8),
            Box::new(mirror),
        ],
    );
    // Random 4 KiB writes over twice the array's capacity: the SSDs collect garbage.
    let pages = array.capacity_bytes() / 4096;
    let mut rng = Prng::new(41);
    let requests: Vec<Request> = (0..2 * pages)
        .map(|id| req(id, Op::Write, rng.below(pages) * 4096, 4096, id * 50_000))
        .collect();
    let run = drive(&mut array, &requests);
    assert_each_completed_once(&requests, &run);

    let wear = array.block_wear();
    let units: Vec<&str> = wear.iter().map(|w| w.unit.as_str()).collect();
    assert_eq!(units, ["child0", "child2.child0", "child2.child1"]);
    let counters = array.counters();
    let counter = |name: &str| {
        counters
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("no counter {name}"))
            .value
    };
    for (w, prefix) in wear.iter().zip([
        "child0_ssd_",
        "child2_array_child0_ssd_",
        "child2_array_child1_ssd_",
    ]) {
        let sum: u64 = w.erase_counts.iter().map(|&e| u64::from(e)).sum();
        assert!(sum > 0, "{}: no erases", w.unit);
        assert_eq!(
            sum as f64,
            counter(&format!("{prefix}flash_erases"))
                + counter(&format!("{prefix}precondition_erases")),
            "{}",
            w.unit
        );
        let max = w.erase_counts.iter().max().copied().unwrap_or(0);
        assert_eq!(f64::from(max), counter(&format!("{prefix}erase_count_max")));
    }
}
