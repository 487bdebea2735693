//! The 18 vdbench profiles of the co-simulation thesis: names, defaults, overrides and the
//! statistics each profile promises.

use std::collections::HashSet;
use storsim_core::Op;
use storsim_workload::synthetic::{self, Limit, Load};
use storsim_workload::{Pacing, Record, Workload};

const CAPACITY_BYTES: u64 = 36 << 30;
const KIB: u64 = 1 << 10;

fn build(text: &str, seed: u64) -> Workload {
    let spec = synthetic::parse(text).unwrap_or_else(|e| panic!("`{text}`: {e}"));
    synthetic::build(&spec, CAPACITY_BYTES, seed).unwrap_or_else(|e| panic!("`{text}`: {e}"))
}

fn generate(text: &str, seed: u64) -> Vec<Record> {
    build(text, seed)
        .records
        .map(|r| r.expect("record"))
        .collect()
}

fn continuation_fraction(records: &[Record]) -> f64 {
    let continuations = records
        .windows(2)
        .filter(|w| w[1].offset_bytes == w[0].offset_bytes + w[0].len_bytes)
        .count();
    continuations as f64 / (records.len() - 1) as f64
}

#[test]
fn there_are_18_distinct_profiles_that_all_build() {
    let names = synthetic::vdbench_profiles();
    assert_eq!(names.len(), 18);
    assert_eq!(names.iter().collect::<HashSet<_>>().len(), 18);
    for access in ["random", "mixed"] {
        for rw in ["read", "write", "rw"] {
            for size in ["small", "large", "uniform"] {
                let name = format!("{access}-{rw}-{size}");
                assert!(
                    names.contains(&name.as_str()),
                    "{name} missing from {names:?}"
                );
            }
        }
    }
    for name in names {
        let spec = synthetic::parse(&format!("vdbench:{name}")).expect(name);
        assert_eq!(spec.vdbench.map(|p| p.name()), Some(name));
        let workload = build(&format!("vdbench:{name}"), 1);
        assert_eq!(
            workload.name,
            format!("vdbench:{name},iodepth=8,duration=180s,seed=1")
        );
    }
}

#[test]
fn defaults_are_a_closed_loop_of_depth_8_for_three_minutes() {
    let workload = build("vdbench:random-read-small", 4);
    assert_eq!(workload.pacing, Pacing::Closed { depth: 8 });
    assert_eq!(workload.duration_ns, Some(180_000_000_000));
    assert_eq!(workload.seed, Some(4));
    let first = workload.records.take(1000).map(|r| r.unwrap());
    assert!(first
        .into_iter()
        .all(|r| r.timestamp_ns == 0 && r.think_ns == 0));
}

#[test]
fn overrides_change_only_their_keys() {
    let spec =
        synthetic::parse("VDBENCH:Mixed-RW-Uniform,iodepth=32,requests=1000,seed=3").unwrap();
    assert_eq!(
        spec.load,
        Load::Closed {
            iodepth: 32,
            think_ns: 0
        }
    );
    assert_eq!(spec.limit, Limit::Requests { count: 1000 });
    assert_eq!(spec.seed, Some(3));
    let workload = synthetic::build(&spec, CAPACITY_BYTES, 99).unwrap();
    assert_eq!(
        workload.name,
        "vdbench:mixed-rw-uniform,iodepth=32,requests=1000,seed=3"
    );
    assert_eq!(workload.pacing, Pacing::Closed { depth: 32 });
    assert_eq!(workload.duration_ns, None);
    assert_eq!(workload.records.count(), 1000);

    let spec = synthetic::parse("vdbench:random-write-large,duration=10s").unwrap();
    assert_eq!(
        spec.limit,
        Limit::Duration {
            duration_ns: 10_000_000_000
        }
    );
}

#[test]
fn a_modified_profile_is_named_by_its_full_synthetic_spec() {
    let mut spec = synthetic::parse("vdbench:random-read-small").unwrap();
    spec.offset_bytes = 1 << 20;
    let workload = synthetic::build(&spec, CAPACITY_BYTES, 2).unwrap();
    assert!(
        workload.name.starts_with("synthetic:rw=randread,"),
        "{}",
        workload.name
    );
    assert!(workload.name.contains(",offset=1m,"), "{}", workload.name);
}

#[test]
fn size_classes() {
    let seed = 21;
    for rw in ["read", "write", "rw"] {
        for access in ["random", "mixed"] {
            let small = generate(&format!("vdbench:{access}-{rw}-small,requests=5000"), seed);
            assert!(
                small.iter().all(|r| r.len_bytes == 4 * KIB),
                "{access}-{rw}-small seed {seed}"
            );
            let large = generate(&format!("vdbench:{access}-{rw}-large,requests=5000"), seed);
            assert!(
                large.iter().all(|r| r.len_bytes == 128 * KIB),
                "{access}-{rw}-large seed {seed}"
            );
        }
    }
    let uniform = generate("vdbench:random-read-uniform,requests=320000", seed);
    let mut counts = [0u64; 32];
    for r in &uniform {
        assert_eq!(r.len_bytes % (4 * KIB), 0, "seed {seed}: {r:?}");
        assert!(
            (4 * KIB..=128 * KIB).contains(&r.len_bytes),
            "seed {seed}: {r:?}"
        );
        counts[(r.len_bytes / (4 * KIB) - 1) as usize] += 1;
    }
    // 10000 expected per size, standard deviation about 99.
    for (i, count) in counts.iter().enumerate() {
        assert!(
            (9_500..10_500).contains(count),
            "seed {seed}: {}k drawn {count} times",
            4 * (i + 1)
        );
    }
}

#[test]
fn operation_mix() {
    let seed = 13;
    for access in ["random", "mixed"] {
        let reads = generate(&format!("vdbench:{access}-read-small,requests=10000"), seed);
        assert!(
            reads.iter().all(|r| r.op == Op::Read),
            "{access}-read seed {seed}"
        );
        let writes = generate(
            &format!("vdbench:{access}-write-small,requests=10000"),
            seed,
        );
        assert!(
            writes.iter().all(|r| r.op == Op::Write),
            "{access}-write seed {seed}"
        );
        let mixed = generate(&format!("vdbench:{access}-rw-small,requests=200000"), seed);
        let fraction = mixed.iter().filter(|r| r.op == Op::Read).count() as f64 / 200_000.0;
        assert!(
            (fraction - 0.5).abs() < 0.006,
            "{access}-rw seed {seed}: {fraction} reads"
        );
    }
}

#[test]
fn mixed_profiles_continue_sequentially_a_fifth_of_the_time() {
    let seed = 55;
    for name in ["mixed-read-small", "mixed-write-large", "mixed-rw-uniform"] {
        let records = generate(&format!("vdbench:{name},requests=200000"), seed);
        let fraction = continuation_fraction(&records);
        // The standard error is 0.0009.
        assert!(
            (fraction - 0.2).abs() < 0.005,
            "{name} seed {seed}: {fraction} sequential"
        );
    }
    for name in ["random-read-small", "random-rw-uniform"] {
        let records = generate(&format!("vdbench:{name},requests=200000"), seed);
        let fraction = continuation_fraction(&records);
        assert!(
            fraction < 0.001,
            "{name} seed {seed}: {fraction} sequential"
        );
    }
}

#[test]
fn random_positions_cover_the_whole_device_on_a_4k_grid() {
    let seed = 3;
    let records = generate("vdbench:random-rw-uniform,requests=200000", seed);
    let mut tenths = [0u64; 10];
    for r in &records {
        assert_eq!(r.offset_bytes % (4 * KIB), 0, "seed {seed}: {r:?}");
        assert!(
            r.offset_bytes + r.len_bytes <= CAPACITY_BYTES,
            "seed {seed}: {r:?}"
        );
        tenths[(r.offset_bytes * 10 / CAPACITY_BYTES) as usize] += 1;
    }
    // 20000 expected per tenth of the device, standard deviation about 134.
    for (i, count) in tenths.iter().enumerate() {
        assert!(
            (19_300..20_700).contains(count),
            "seed {seed}: tenth {i} has {count}"
        );
    }
}
