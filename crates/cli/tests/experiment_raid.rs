//! The RAID rebuild experiment (issue 42 §3, `experiments/raid/`) at its quick size, run as a
//! user runs it: `storsim sweep experiments/raid/SPEC.toml --size quick`. The rebuild's end
//! at a rate the disks can give is size / rate, derived here from the disk's capacity; above
//! what they give, the disks set it; a failed member costs the host IOPS on every level.

mod common;

use common::experiment::run_sweep;
use common::temp_dir;

/// DiskSim's HP C2247A, the disk members: its capacity in bytes.
const HDD_BYTES: u64 = 1_052_090_368;
const CHUNK: u64 = 65536;

#[test]
fn a_disk_rebuild_ends_at_size_over_rate_until_the_disks_bound_it() {
    let dir = temp_dir("raid-rate-hdd");
    let results = run_sweep("experiments/raid/rate-hdd.toml", dir.path());
    let end_s = |rate: &str| {
        let rows = results.select(&[("array.rebuild_rate_mb_per_s", rate)]);
        assert_eq!(rows.len(), 1, "one point at {rate} MB/s");
        assert_eq!(
            results.number(rows[0], "device.counters.rebuild_progress"),
            1.0
        );
        results.number(rows[0], "device.counters.rebuild_end_ns") / 1e9
    };
    // At 1 MB/s: the member's 16,053 rows of 64 KiB start every 65.536 ms from the failure
    // (at 0), the last at 16,052 × 65.536 ms; it ends a read and a write later (well under 1 s
    // on an idle disk).
    let rows = HDD_BYTES / CHUNK;
    let last_start_s = (rows - 1) as f64 * CHUNK as f64 / 1e6;
    let slow = end_s("1");
    assert!(
        (last_start_s..last_start_s + 1.0).contains(&slow),
        "{slow} s against the last row's start at {last_start_s} s"
    );
    // At 8 MB/s the rate would take 131.5 s; the disks take far longer, and still less than
    // at 1 MB/s.
    let fast = end_s("8");
    assert!(fast > 2.0 * (rows * CHUNK) as f64 / 8e6, "{fast} s");
    assert!(fast < slow, "{fast} s at 8 MB/s, {slow} s at 1 MB/s");
}

#[test]
fn an_ssd_rebuild_ends_at_size_over_rate_and_no_sooner() {
    let dir = temp_dir("raid-rate-ssd");
    let results = run_sweep("experiments/raid/rate-ssd.toml", dir.path());
    let row = |rate: &str| results.select(&[("array.rebuild_rate_mb_per_s", rate)])[0];
    let slow = results.number(row("50"), "device.counters.rebuild_end_ns") / 1e9;
    let fast = results.number(row("800"), "device.counters.rebuild_end_ns") / 1e9;
    // 50 MB/s sets the time (the member's capacity / 50 MB/s, within a row's time); 800 MB/s
    // is more than the spare writes, so the rebuild takes longer than 800 MB/s would say.
    let capacity = results.number(row("50"), "device.capacity_bytes") / 3.0;
    let rate_s =
        |mb_per_s: f64| (capacity / CHUNK as f64).floor() * CHUNK as f64 / (mb_per_s * 1e6);
    assert!(
        (slow - rate_s(50.0)).abs() < 0.1,
        "{slow} s against {} s",
        rate_s(50.0)
    );
    assert!(fast > 2.0 * rate_s(800.0), "{fast} s");
    assert!(fast < slow);
}

#[test]
fn a_missing_member_costs_the_host_on_every_level() {
    let dir = temp_dir("raid-latency");
    let results = run_sweep("experiments/raid/latency.toml", dir.path());
    let row = |label: &str| {
        let rows = results.select(&[("label", label)]);
        assert_eq!(rows.len(), 1, "{label}");
        rows[0]
    };
    for (whole, missing) in [
        ("RAID-1 HDD optimal", "RAID-1 HDD degraded"),
        ("RAID-5 HDD optimal", "RAID-5 HDD rebuilding"),
        ("RAID-6 HDD optimal", "RAID-6 HDD rebuilding"),
    ] {
        let (a, b) = (row(whole), row(missing));
        assert!(
            results.number(b, "summary.iops") < results.number(a, "summary.iops"),
            "{missing} against {whole}"
        );
    }
    for label in [
        "RAID-5 SSD rebuilding",
        "RAID-6 SSD rebuilding",
        "RAID-5 HDD rebuilding",
    ] {
        let r = row(label);
        assert!(
            results.number(r, "device.counters.degraded_reads") > 0.0,
            "{label}"
        );
        let progress = results.number(r, "device.counters.rebuild_progress");
        assert!(progress > 0.0 && progress < 1.0, "{label}: {progress}");
        // `errors` is written only when a request failed or a faults layer is in place.
        let errors = results.text(r, "summary.errors.total");
        assert!(
            errors.is_empty() || errors == "0",
            "{label}: {errors} errors"
        );
    }
}
