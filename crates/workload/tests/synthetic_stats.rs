//! Statistical and structural properties of generated synthetic workloads over large samples.
//! Every assertion message names the seed, so that a failure can be reproduced exactly.

use storsim_core::Op;
use storsim_workload::synthetic;
use storsim_workload::{Pacing, Record, Workload};

const GIB: u64 = 1 << 30;
const MIB: u64 = 1 << 20;
const KIB: u64 = 1 << 10;

fn build(text: &str, capacity: u64, seed: u64) -> Workload {
    let spec = synthetic::parse(text).unwrap_or_else(|e| panic!("`{text}`: {e}"));
    synthetic::build(&spec, capacity, seed).unwrap_or_else(|e| panic!("`{text}`: {e}"))
}

fn generate(text: &str, capacity: u64, seed: u64) -> Vec<Record> {
    build(text, capacity, seed)
        .records
        .map(|r| r.expect("record"))
        .collect()
}

#[test]
fn same_seed_same_records_different_seed_different_records() {
    for text in [
        "rw=randrw,bs=4k-64k,dist=zipf:1.1,iops=5000,requests=5000",
        "rw=randwrite,dist=hotcold:0.2:0.8,percentage_random=70,requests=5000",
        "rw=rw,bs=4k-16k,iops=100,arrival=poisson,requests=5000",
    ] {
        let a = generate(text, GIB, 7);
        let b = generate(text, GIB, 7);
        let c = generate(text, GIB, 8);
        assert_eq!(a.len(), 5000);
        assert_eq!(a, b, "`{text}` with seed 7 twice");
        assert_ne!(a, c, "`{text}` with seeds 7 and 8");
        // A seed in the spec overrides the caller's default seed.
        let d = generate(&format!("{text},seed=7"), GIB, 12345);
        assert_eq!(a, d, "`{text},seed=7` with default seed 12345");
    }
}

#[test]
fn records_are_numbered_and_on_device_zero() {
    let records = generate("rw=randrw,iodepth=4,thinktime=50us,requests=1000", GIB, 1);
    for (i, r) in records.iter().enumerate() {
        assert_eq!(r.origin, i as u64);
        assert_eq!(r.dev, 0);
        assert_eq!(r.think_ns, 50_000);
        assert_eq!(
            r.timestamp_ns, 0,
            "closed-loop records carry no arrival time"
        );
    }
    let open = generate("rw=randread,iops=1000,requests=10", GIB, 1);
    assert!(open.iter().all(|r| r.think_ns == 0));
}

#[test]
fn read_fraction_matches_rwmixread() {
    let seed = 31;
    for (text, expected) in [
        ("rw=randrw,rwmixread=70,requests=200000", 0.70),
        ("rw=randrw,requests=200000", 0.50),
        ("rw=rw,rwmixread=30,requests=200000", 0.30),
        ("rw=randrw,rwmixread=3,requests=200000", 0.03),
    ] {
        let records = generate(text, GIB, seed);
        let reads = records.iter().filter(|r| r.op == Op::Read).count();
        let fraction = reads as f64 / records.len() as f64;
        // The standard error is at most 0.0012; 0.006 is five of them.
        assert!(
            (fraction - expected).abs() < 0.006,
            "`{text}` seed {seed}: read fraction {fraction}, expected {expected}"
        );
    }
    for (text, op) in [
        ("rw=randread", Op::Read),
        ("rw=write", Op::Write),
        ("rw=rw,rwmixread=100", Op::Read),
    ] {
        let records = generate(&format!("{text},requests=10000"), GIB, seed);
        assert!(
            records.iter().all(|r| r.op == op),
            "`{text}` seed {seed}: not all {op}"
        );
    }
}

#[test]
fn offsets_are_aligned_inside_the_span_and_sizes_are_multiples_of_the_lower_bound() {
    let seed = 5;
    let (start, span) = (MIB, 64 * MIB);
    let text = "rw=randrw,bs=4k-64k,offset=1m,span=64m,percentage_random=90,requests=200000";
    let records = generate(text, GIB, seed);
    let mut size_counts = [0u64; 16];
    for r in &records {
        assert_eq!(
            r.offset_bytes % (4 * KIB),
            0,
            "seed {seed}: {r:?} not 4k aligned"
        );
        assert!(
            r.offset_bytes >= start && r.offset_bytes + r.len_bytes <= start + span,
            "seed {seed}: {r:?} outside [1m, 65m)"
        );
        assert!(
            (4 * KIB..=64 * KIB).contains(&r.len_bytes),
            "seed {seed}: {r:?} size out of range"
        );
        assert_eq!(
            r.len_bytes % (4 * KIB),
            0,
            "seed {seed}: {r:?} size not a multiple of 4k"
        );
        size_counts[(r.len_bytes / (4 * KIB) - 1) as usize] += 1;
    }
    // 16 equally likely sizes: 12500 each, standard deviation about 108.
    for (i, count) in size_counts.iter().enumerate() {
        assert!(
            (11_900..13_100).contains(count),
            "seed {seed}: size {}k drawn {count} times, expected about 12500",
            4 * (i + 1)
        );
    }
}

#[test]
fn align_smaller_than_the_block_size() {
    let seed = 9;
    let records = generate(
        "rw=randread,bs=8k,align=512,span=1m,requests=20000",
        GIB,
        seed,
    );
    assert!(
        records.iter().all(|r| r.offset_bytes % 512 == 0),
        "seed {seed}"
    );
    let unaligned_to_bs = records
        .iter()
        .filter(|r| r.offset_bytes % (8 * KIB) != 0)
        .count();
    assert!(
        unaligned_to_bs > 15_000,
        "seed {seed}: only {unaligned_to_bs} offsets off the 8k grid"
    );
    assert!(
        records.iter().all(|r| r.offset_bytes + 8 * KIB <= MIB),
        "seed {seed}"
    );
}

#[test]
fn uniform_offsets_are_flat() {
    let seed = 77;
    let span = 64 * MIB;
    let records = generate("rw=randwrite,bs=4k,span=64m,requests=640000", GIB, seed);
    let mut buckets = [0u64; 64];
    for r in &records {
        buckets[(r.offset_bytes / (span / 64)) as usize] += 1;
    }
    // 10000 expected per bucket, standard deviation 100.
    let chi_square: f64 = buckets
        .iter()
        .map(|&c| (c as f64 - 10_000.0).powi(2) / 10_000.0)
        .sum();
    for (i, count) in buckets.iter().enumerate() {
        assert!(
            (9_500..10_500).contains(count),
            "seed {seed}: bucket {i} has {count}"
        );
    }
    // 63 degrees of freedom: the 99.9th percentile is about 104.
    assert!(
        chi_square < 104.0,
        "seed {seed}: chi-square {chi_square} over 64 buckets"
    );
    // The last slot where a 4k request fits must be reachable.
    let last = records.iter().map(|r| r.offset_bytes).max().unwrap();
    assert_eq!(last, span - 4 * KIB, "seed {seed}");
}

/// `1 / sum_{k=1..n} k^-theta`: the probability of the most popular of `n` Zipf ranks.
fn zipf_top_probability(n: u64, theta: f64) -> f64 {
    1.0 / (1..=n).map(|k| (k as f64).powf(-theta)).sum::<f64>()
}

#[test]
fn zipf_rank_frequencies_match_theory() {
    let seed = 4242;
    let samples = 500_000u64;
    // span 4m / bs 4k = 1024 slots.
    for theta in [0.8, 1.0, 1.2, 2.0] {
        let text = format!("rw=randread,bs=4k,span=4m,dist=zipf:{theta},requests={samples}");
        let records = generate(&text, GIB, seed);
        let mut counts = vec![0u64; 1024];
        for r in &records {
            counts[(r.offset_bytes / (4 * KIB)) as usize] += 1;
        }
        let mut sorted = counts.clone();
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        let p1 = zipf_top_probability(1024, theta);
        for rank in 1..=3u64 {
            let expected = p1 * (rank as f64).powf(-theta);
            let observed = sorted[rank as usize - 1] as f64 / samples as f64;
            let sigma = (expected * (1.0 - expected) / samples as f64).sqrt();
            assert!(
                (observed - expected).abs() < 5.0 * sigma + 1e-4,
                "zipf:{theta} seed {seed}: rank {rank} frequency {observed}, theory {expected}"
            );
        }
        // The popular slots are scattered, not the first slots of the span.
        let mut top: Vec<usize> = (0..1024).collect();
        top.sort_by_key(|&i| std::cmp::Reverse(counts[i]));
        let top_in_first_tenth = top[..8].iter().filter(|&&slot| slot < 102).count();
        assert!(
            top_in_first_tenth <= 3,
            "zipf:{theta} seed {seed}: the 8 hottest slots {:?} cluster at the start",
            &top[..8]
        );
    }
}

#[test]
fn zipf_hot_slots_depend_on_the_seed() {
    let hottest = |seed: u64| {
        let records = generate(
            "rw=randread,span=1g,dist=zipf:1.5,requests=20000",
            GIB,
            seed,
        );
        let mut counts = std::collections::HashMap::new();
        for r in &records {
            *counts.entry(r.offset_bytes).or_insert(0u64) += 1;
        }
        counts
            .into_iter()
            .max_by_key(|&(offset, count)| (count, offset))
            .unwrap()
            .0
    };
    assert_ne!(
        hottest(1),
        hottest(2),
        "seeds 1 and 2 have the same hottest block"
    );
}

#[test]
fn hotcold_hot_region_gets_the_requested_share() {
    let seed = 123;
    let span = 100 * MIB;
    for (hot_span, hot_accesses) in [(0.2, 0.8), (0.05, 0.5), (0.5, 0.9)] {
        let text = format!(
            "rw=randrw,bs=4k,span=100m,dist=hotcold:{hot_span}:{hot_accesses},requests=200000"
        );
        let records = generate(&text, GIB, seed);
        let hot_end = (span as f64 * hot_span) as u64;
        let hot: Vec<&Record> = records
            .iter()
            .filter(|r| r.offset_bytes < hot_end)
            .collect();
        let fraction = hot.len() as f64 / records.len() as f64;
        assert!(
            (fraction - hot_accesses).abs() < 0.006,
            "`{text}` seed {seed}: hot fraction {fraction}, expected {hot_accesses}"
        );
        // Inside the hot region, the two halves are about equally popular.
        let lower = hot.iter().filter(|r| r.offset_bytes < hot_end / 2).count() as f64;
        let balance = lower / hot.len() as f64;
        assert!(
            (balance - 0.5).abs() < 0.01,
            "`{text}` seed {seed}: hot halves {balance}"
        );
    }
}

#[test]
fn poisson_arrivals_have_the_requested_mean_and_look_exponential() {
    let seed = 99;
    let n = 200_000;
    let records = generate(&format!("rw=randread,iops=10000,requests={n}"), GIB, seed);
    let gaps: Vec<f64> = records
        .windows(2)
        .map(|w| (w[1].timestamp_ns - w[0].timestamp_ns) as f64)
        .collect();
    let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
    let variance = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
    let cv = variance.sqrt() / mean;
    assert!(
        (mean - 100_000.0).abs() < 1_000.0,
        "seed {seed}: mean gap {mean} ns, expected 1e5"
    );
    assert!(
        (cv - 1.0).abs() < 0.02,
        "seed {seed}: coefficient of variation {cv}, expected 1"
    );
    // For an exponential, P(gap > mean) = 1/e.
    let above = gaps.iter().filter(|&&g| g > 100_000.0).count() as f64 / gaps.len() as f64;
    assert!(
        (above - (-1.0f64).exp()).abs() < 0.006,
        "seed {seed}: P(gap > mean) = {above}"
    );
    assert_eq!(records[0].timestamp_ns, 0);
    // Carrying fractions keeps the total on the rate: n gaps sum to about n * mean.
    let total = records.last().unwrap().timestamp_ns as f64;
    let expected = (n - 1) as f64 * 100_000.0;
    assert!(
        (total - expected).abs() < 5.0 * 100_000.0 * (n as f64).sqrt(),
        "seed {seed}: {total}"
    );
}

#[test]
fn fixed_arrivals_are_exact_and_do_not_drift() {
    for iops in [3u64, 7, 1000, 999_983, 3_000_000_000] {
        let records = generate(
            &format!("rw=write,iops={iops},arrival=fixed,requests=100000"),
            GIB,
            1,
        );
        for (k, r) in records.iter().enumerate() {
            let exact = (k as u128 * 1_000_000_000 / iops as u128) as u64;
            assert_eq!(r.timestamp_ns, exact, "iops={iops}: request {k}");
        }
    }
}

#[test]
fn sequential_requests_are_contiguous_and_wrap_at_the_span_end() {
    let records = generate("rw=write,bs=4k,offset=8k,span=64k,requests=40", GIB, 1);
    for (i, r) in records.iter().enumerate() {
        assert_eq!(
            r.offset_bytes,
            8 * KIB + (i as u64 % 16) * 4 * KIB,
            "request {i}"
        );
    }
    let seed = 17;
    let (start, end) = (MIB, MIB + 100 * KIB);
    let records = generate(
        "rw=rw,bs=4k-16k,offset=1m,span=100k,requests=5000",
        GIB,
        seed,
    );
    assert_eq!(records[0].offset_bytes, start);
    let mut wraps = 0;
    for w in records.windows(2) {
        let previous_end = w[0].offset_bytes + w[0].len_bytes;
        if previous_end + w[1].len_bytes <= end {
            assert_eq!(
                w[1].offset_bytes, previous_end,
                "seed {seed}: {:?} after {:?}",
                w[1], w[0]
            );
        } else {
            assert_eq!(
                w[1].offset_bytes, start,
                "seed {seed}: {:?} after {:?}",
                w[1], w[0]
            );
            wraps += 1;
        }
        assert!(
            w[1].offset_bytes + w[1].len_bytes <= end,
            "seed {seed}: {:?}",
            w[1]
        );
    }
    assert!(wraps > 100, "seed {seed}: only {wraps} wraps");
}

#[test]
fn percentage_random_controls_sequential_continuations() {
    let seed = 8;
    let records = generate(
        "rw=randwrite,percentage_random=75,requests=100000",
        GIB,
        seed,
    );
    let continuations = records
        .windows(2)
        .filter(|w| w[1].offset_bytes == w[0].offset_bytes + w[0].len_bytes)
        .count();
    let fraction = continuations as f64 / (records.len() - 1) as f64;
    assert!(
        (fraction - 0.25).abs() < 0.007,
        "seed {seed}: {fraction} continuations, expected 0.25"
    );
    let fully_sequential = generate(
        "rw=randwrite,percentage_random=0,span=1m,requests=1000",
        GIB,
        seed,
    );
    assert!(fully_sequential.windows(2).all(|w| {
        w[1].offset_bytes == w[0].offset_bytes + w[0].len_bytes || w[1].offset_bytes == 0
    }));
}

#[test]
fn duration_sets_duration_ns_and_bounds_open_loops() {
    let closed = build("rw=randread,iodepth=4,duration=10s", GIB, 1);
    assert_eq!(closed.duration_ns, Some(10_000_000_000));
    assert_eq!(closed.pacing, Pacing::Closed { depth: 4 });
    // A closed loop's pace is up to the device: the stream does not end on its own.
    assert_eq!(closed.records.take(300_000).count(), 300_000);

    let fixed = generate("rw=randread,iops=1000,arrival=fixed,duration=1s", GIB, 1);
    assert_eq!(fixed.len(), 1000);
    assert_eq!(fixed.last().unwrap().timestamp_ns, 999_000_000);

    let seed = 6;
    let poisson = build("rw=randread,iops=20000,duration=5s", GIB, seed);
    assert_eq!(poisson.duration_ns, Some(5_000_000_000));
    let records: Vec<Record> = poisson.records.map(|r| r.unwrap()).collect();
    assert!(records.iter().all(|r| r.timestamp_ns < 5_000_000_000));
    // 100000 expected arrivals, standard deviation about 316.
    assert!(
        (98_500..101_500).contains(&records.len()),
        "seed {seed}: {} arrivals",
        records.len()
    );
}

#[test]
fn bounded_workloads_report_their_length() {
    let workload = build("rw=randread,requests=1234", GIB, 1);
    assert_eq!(workload.records.size_hint(), (1234, Some(1234)));
}

/// Counts the requests of each size in `sizes` (bytes), failing on a size outside it.
fn size_counts(records: &[&Record], sizes: &[u64], what: &str) -> Vec<u64> {
    let mut counts = vec![0u64; sizes.len()];
    for r in records {
        let i = sizes
            .iter()
            .position(|&s| s == r.len_bytes)
            .unwrap_or_else(|| panic!("{what}: {r:?} has a size outside the split"));
        counts[i] += 1;
    }
    counts
}

/// Asserts that each size's observed frequency is within five standard errors of its expected
/// fraction: a binomial count of `n` draws with probability `p` has standard error
/// `sqrt(p (1 - p) / n)`, so a correct generator leaves that band with probability below 1e-6
/// per size, while a share off by a whole percentage point is caught at the sample sizes used.
fn assert_mix(counts: &[u64], expected: &[f64], what: &str) {
    let n: u64 = counts.iter().sum();
    assert!(n > 0, "{what}: no requests");
    for (i, (&count, &p)) in counts.iter().zip(expected).enumerate() {
        let observed = count as f64 / n as f64;
        let bound = 5.0 * (p * (1.0 - p) / n as f64).sqrt();
        assert!(
            (observed - p).abs() <= bound,
            "{what}: size #{i} drawn with frequency {observed:.5}, expected {p} ± {bound:.5}"
        );
    }
}

#[test]
fn bssplit_sizes_follow_their_percentages() {
    let seed = 57;
    let text = "rw=randwrite,bssplit=4k/10:64k/50:32k/40,requests=200000";
    let records = generate(text, GIB, seed);
    let all: Vec<&Record> = records.iter().collect();
    let what = format!("`{text}` seed {seed}");
    let counts = size_counts(&all, &[4 * KIB, 64 * KIB, 32 * KIB], &what);
    assert_mix(&counts, &[0.10, 0.50, 0.40], &what);
    // Random offsets are aligned to the smallest size and leave room for the largest.
    assert!(all
        .iter()
        .all(|r| r.offset_bytes % (4 * KIB) == 0 && r.offset_bytes + r.len_bytes <= GIB));

    // The thesis' Table 5.3 Firefox column, in 512-byte sectors: sizes from 0.5 % to 62 %.
    let text = "rw=write,bssplit=8k/62:16k/10:32k/10:64k/12:128k/4:256k/1:512k/1,requests=400000";
    let records = generate(text, GIB, seed);
    let all: Vec<&Record> = records.iter().collect();
    let what = format!("`{text}` seed {seed}");
    let sizes = [8, 16, 32, 64, 128, 256, 512].map(|k| k * KIB);
    let counts = size_counts(&all, &sizes, &what);
    assert_mix(&counts, &[0.62, 0.10, 0.10, 0.12, 0.04, 0.01, 0.01], &what);
}

#[test]
fn bssplit_sizes_without_a_percentage_share_the_rest_equally() {
    let seed = 3;
    let text = "rw=randread,bssplit=4k/40:8k/:16k:32k/0:64k/,requests=300000";
    let records = generate(text, GIB, seed);
    let all: Vec<&Record> = records.iter().collect();
    let what = format!("`{text}` seed {seed}");
    let counts = size_counts(
        &all,
        &[4 * KIB, 8 * KIB, 16 * KIB, 32 * KIB, 64 * KIB],
        &what,
    );
    assert_eq!(counts[3], 0, "{what}: a size with 0 % was drawn");
    assert_mix(&counts, &[0.40, 0.20, 0.20, 0.0, 0.20], &what);
}

#[test]
fn bssplit_per_operation_draws_reads_and_writes_from_their_own_parts() {
    let seed = 12;
    let text = "rw=randrw,rwmixread=30,bssplit=4k/50:8k/50;64k/20:128k/80,requests=300000";
    let records = generate(text, GIB, seed);
    let what = format!("`{text}` seed {seed}");
    let reads: Vec<&Record> = records.iter().filter(|r| r.op == Op::Read).collect();
    let writes: Vec<&Record> = records.iter().filter(|r| r.op == Op::Write).collect();
    let counts = size_counts(&reads, &[4 * KIB, 8 * KIB], &format!("{what}, reads"));
    assert_mix(&counts, &[0.5, 0.5], &format!("{what}, reads"));
    let counts = size_counts(&writes, &[64 * KIB, 128 * KIB], &format!("{what}, writes"));
    assert_mix(&counts, &[0.2, 0.8], &format!("{what}, writes"));
}

#[test]
fn bssplit_is_deterministic_and_draws_from_the_size_stream_only() {
    let text = "rw=randrw,bssplit=4k/70:16k/20:1m/10,requests=20000";
    let a = generate(text, GIB, 7);
    assert_eq!(a, generate(text, GIB, 7), "`{text}` seed 7 twice");
    assert_ne!(a, generate(text, GIB, 8), "`{text}` seeds 7 and 8");
    // Another split changes the sizes (and, through the largest size, the slots random offsets
    // fall in), but not which requests are reads: operations draw from their own stream.
    let other = generate("rw=randrw,bssplit=8k/50:32k/50,requests=20000", GIB, 7);
    let ops = |records: &[Record]| records.iter().map(|r| r.op).collect::<Vec<_>>();
    assert_eq!(ops(&a), ops(&other), "the split changed the operations");
    // And the read mix does not change the sizes of a split shared by reads and writes.
    let more_reads = generate(
        "rw=randrw,rwmixread=90,bssplit=4k/70:16k/20:1m/10,requests=20000",
        GIB,
        7,
    );
    let sizes = |records: &[Record]| records.iter().map(|r| r.len_bytes).collect::<Vec<_>>();
    assert_eq!(sizes(&a), sizes(&more_reads), "rwmixread changed the sizes");
}

#[test]
fn fsync_puts_a_flush_after_every_nth_write_at_its_arrival() {
    for seed in [1, 2, 3] {
        let records = generate(
            "rw=randrw,rwmixread=60,fsync=3,iops=1000,arrival=fixed,requests=3000",
            GIB,
            seed,
        );
        let data = records.iter().filter(|r| r.op != Op::Flush).count();
        let writes = records.iter().filter(|r| r.op == Op::Write).count();
        let flushes: Vec<usize> = (0..records.len())
            .filter(|&i| records[i].op == Op::Flush)
            .collect();
        // Flushes are extra requests: the count limit is of reads and writes.
        assert_eq!(data, 3000, "seed {seed}");
        // One after every third write, except a write that ends the stream.
        let ends_on_a_third_write = writes % 3 == 0 && records.last().unwrap().op == Op::Write;
        assert_eq!(
            flushes.len(),
            writes / 3 - usize::from(ends_on_a_third_write),
            "seed {seed}"
        );
        for (k, &i) in flushes.iter().enumerate() {
            let before = &records[i - 1];
            assert_eq!(before.op, Op::Write, "seed {seed}: flush {k}");
            assert_eq!(before.timestamp_ns, records[i].timestamp_ns, "seed {seed}");
            assert_eq!((records[i].offset_bytes, records[i].len_bytes), (0, 0));
            let writes_before = records[..i].iter().filter(|r| r.op == Op::Write).count();
            assert_eq!(writes_before, 3 * (k + 1), "seed {seed}: flush {k}");
        }
        // Records keep consecutive positions, flushes included.
        assert!(records
            .iter()
            .enumerate()
            .all(|(i, r)| r.origin == i as u64));
    }
}

#[test]
fn permutation_visits_every_slot_once_per_pass_in_a_new_order_each_pass() {
    for seed in [1, 2, 3] {
        // 1000 slots of 4 KiB, three passes.
        let records = generate(
            "rw=randwrite,dist=permutation,span=4000k,requests=3000",
            GIB,
            seed,
        );
        let passes: Vec<Vec<u64>> = records
            .chunks(1000)
            .map(|pass| pass.iter().map(|r| r.offset_bytes / 4096).collect())
            .collect();
        for pass in &passes {
            let mut sorted = pass.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..1000).collect::<Vec<u64>>(), "seed {seed}");
        }
        assert_ne!(
            passes[0], passes[1],
            "seed {seed}: a pass repeats the order before it"
        );
        // Not the identity either: the first pass is shuffled.
        assert_ne!(passes[0], (0..1000).collect::<Vec<u64>>(), "seed {seed}");
    }
}

#[test]
fn trimwrite_writes_each_trimmed_range_next_and_counts_the_pair_once() {
    let records = generate(
        "rw=randtrimwrite,bs=4k-64k,bytes=8m,iops=100,arrival=fixed",
        GIB,
        4,
    );
    assert_eq!(records.len() % 2, 0);
    let mut trimmed = 0;
    for pair in records.chunks(2) {
        let (trim, write) = (&pair[0], &pair[1]);
        assert_eq!((trim.op, write.op), (Op::Trim, Op::Write));
        assert_eq!(
            (trim.offset_bytes, trim.len_bytes, trim.timestamp_ns),
            (write.offset_bytes, write.len_bytes, write.timestamp_ns)
        );
        trimmed += trim.len_bytes;
    }
    // The amount counts the trims (each pair once), as fio's size does.
    assert!(trimmed >= 8 * MIB && trimmed - records[records.len() - 2].len_bytes < 8 * MIB);
    // Pairs are 10 ms apart at 100 a second.
    assert!(records
        .chunks(2)
        .enumerate()
        .all(|(i, p)| p[0].timestamp_ns == i as u64 * 10_000_000));
    let trims = generate("rw=trim,bs=8k,requests=10", GIB, 1);
    assert!(trims.iter().all(|r| r.op == Op::Trim));
    let offsets: Vec<u64> = trims.iter().map(|r| r.offset_bytes).collect();
    assert_eq!(offsets, (0..10).map(|i| i * 8192).collect::<Vec<_>>());
}

#[test]
fn bytes_ends_the_stream_once_the_requests_add_up_to_it() {
    for seed in [1, 2, 3, 4] {
        let records = generate("rw=randread,bssplit=4k/50:64k/50,bytes=10m", GIB, seed);
        let total: u64 = records.iter().map(|r| r.len_bytes).sum();
        let before_last = total - records.last().unwrap().len_bytes;
        assert!(total >= 10 * MIB, "seed {seed}: {total}");
        assert!(before_last < 10 * MIB, "seed {seed}: {before_last}");
    }
    // A fixed size that divides the limit gives exactly limit / size requests.
    assert_eq!(generate("rw=write,bs=16k,bytes=1m", GIB, 1).len(), 64);
    // bytes=span is one pass over the span: a sequential pass covers it exactly once.
    let pass = generate("rw=read,bs=64k,bytes=span,offset=1m,span=4m", GIB, 1);
    let offsets: Vec<u64> = pass.iter().map(|r| r.offset_bytes).collect();
    let expected: Vec<u64> = (0..64).map(|i| MIB + i * 64 * KIB).collect();
    assert_eq!(offsets, expected);
    let named = build("rw=read,bs=64k,bytes=span,span=4m", GIB, 1).name;
    assert!(named.contains(",bytes=4m,"), "{named}");
}
