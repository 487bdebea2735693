//! The Wu experiments (seed 003, `experiments/wu/`) at their quick size: the ChN-xS devices of
//! Table 5.3 (a sweep), the CPU-speed study of Table 4.10 under `cosim`, and the emulator's
//! timing-error distribution of Figs 4.6-4.7.

mod common;

use common::experiment::{run_script, run_sweep};
use common::system::have;
use common::temp_dir;
use std::path::Path;
use std::sync::Mutex;

/// The CPU-speed study turns real computation into virtual time and the timing-error run
/// spins the emulator's pacing thread: each takes this lock so that neither runs beside the
/// other (their assertions hold either way; the recorded numbers are cleaner).
static BUSY: Mutex<()> = Mutex::new(());

fn busy() -> std::sync::MutexGuard<'static, ()> {
    BUSY.lock().unwrap_or_else(|e| e.into_inner())
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A CSV file's data rows as numbers, after its header.
fn csv_rows(path: &Path) -> Vec<Vec<f64>> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(|c| c.parse().unwrap()).collect())
        .collect()
}

/// Table 5.3's baseline times in ns for the two workloads of the sweep: a random 4 KiB read,
/// and a random and a sequential 64 KiB read (the sequential run's first request is random).
const RR_4K_NS: u64 = 5_700;
const RR_64K_NS: u64 = 15_100;
const SR_64K_NS: u64 = 13_900;

/// The model's service time at speedup S: the baseline time over S, rounded half up to whole
/// nanoseconds (docs/models/table.md).
fn sped_up(ns: u64, speedup: u64) -> u64 {
    (2 * ns + speedup) / (2 * speedup)
}

#[test]
fn n_channels_and_speedup_s_give_exactly_n_times_s_the_baseline() {
    let dir = temp_dir("wu-chn-xs");
    let results = run_sweep("experiments/wu/chn-xs.toml", dir.path());
    assert_eq!(results.rows.len(), 16 * 2);
    let random = "synthetic:rw=randread,bs=4k,align=8k,iodepth=4,requests=1200000";
    let sequential = "synthetic:rw=read,bs=64k,iodepth=4,requests=1200000";
    let cell = |workload: &str, n: u64, s: u64| {
        let rows = results.select(&[
            ("workload", workload),
            ("table.channels", &n.to_string()),
            ("table.speedup", &s.to_string()),
        ]);
        assert_eq!(rows.len(), 1, "{workload} Ch{n}-x{s}");
        rows[0]
    };
    let base_iops = results.number(cell(random, 1, 1), "summary.iops");
    let base_bandwidth = results.number(cell(sequential, 1, 1), "summary.bandwidth_bytes_per_s");
    for n in 1..=4 {
        for s in 1..=4 {
            // Random reads: four outstanding keep all N channels busy, so R requests take
            // R / N service times (R = 1200 is a multiple of every N), and the rate is exactly
            // N·S times the baseline's (5.7 µs divides by 1, 2, 3 and 4).
            let row = cell(random, n, s);
            let requests = results.number(row, "run.requests_completed") as u64;
            assert_eq!(requests, 1200);
            let end_ns = results.number(row, "run.end_ns") as u64;
            assert_eq!(end_ns, requests / n * sped_up(RR_4K_NS, s), "Ch{n}-x{s}");
            let iops = results.number(row, "summary.iops");
            let ratio = iops / base_iops;
            assert!((ratio - (n * s) as f64).abs() < 1e-9, "Ch{n}-x{s}: {ratio}");

            // Sequential reads: the channels' busy time is exactly the first (random) read and
            // the rest sequential, each sped up by S; N channels share it, so the bandwidth is
            // N·S times the baseline's up to that one random read and the rounding.
            let row = cell(sequential, n, s);
            let busy_ns = results.number(row, "device.counters.busy_ns") as u64;
            let expected = sped_up(RR_64K_NS, s) + (requests - 1) * sped_up(SR_64K_NS, s);
            assert_eq!(busy_ns, expected, "Ch{n}-x{s}");
            let end_ns = results.number(row, "run.end_ns") as u64;
            assert!(end_ns >= busy_ns.div_ceil(n), "Ch{n}-x{s}");
            assert!(end_ns <= busy_ns / n + sped_up(RR_64K_NS, s), "Ch{n}-x{s}");
            let bandwidth = results.number(row, "summary.bandwidth_bytes_per_s");
            let ratio = bandwidth / base_bandwidth;
            assert!(
                (ratio / (n * s) as f64 - 1.0).abs() < 1e-3,
                "Ch{n}-x{s}: {ratio}"
            );
        }
    }
}

#[test]
fn a_faster_cpu_turns_the_encoder_from_cpu_bound_to_disk_bound() {
    if !have("cc") || !have("python3") {
        return;
    }
    let _busy = busy();
    let dir = temp_dir("wu-cpu-speed");
    run_script("experiments/wu/cpu-speed.sh", dir.path());

    // cpu_speed, encoding_time_s, speedup, cpu_busy_pct, disk_busy_pct
    let rows = csv_rows(&dir.path().join("cpu-speed.csv"));
    let speeds: Vec<f64> = rows.iter().map(|r| r[0]).collect();
    assert_eq!(speeds, [1.0, 2.0, 4.0, 8.0, 16.0]);
    let (slow, fast) = (&rows[0], rows.last().unwrap());
    // Computation shrinks with the CPU speed, the disk's work does not: the job gets faster,
    // but by far less than 16x, because the disk's time is a floor (Table 4.10 saturates at
    // 4.76x for 20x). The CPU's share of the time falls and the disk's rises.
    assert!(fast[1] < slow[1], "{rows:?}");
    assert!(fast[3] < slow[3], "CPU busy should fall: {rows:?}");
    assert!(fast[4] > slow[4], "disk busy should rise: {rows:?}");
    for r in &rows {
        assert!(r[4] > 0.0 && r[4] <= 100.0 + 1e-6, "disk busy {r:?}");
        assert!(r[3] > 0.0 && r[3] <= 100.0 + 1e-6, "CPU busy {r:?}");
    }
    // The same I/O at every speed: the disk's busy time (share × job time) differs between
    // speeds only by how the encoders' requests interleave, not by the CPU.
    let busy_s: Vec<f64> = rows.iter().map(|r| r[4] / 100.0 * r[1]).collect();
    let (lo, hi) = busy_s
        .iter()
        .fold((f64::MAX, 0f64), |(lo, hi), &b| (lo.min(b), hi.max(b)));
    assert!(hi < 1.5 * lo, "disk busy seconds {busy_s:?}");
    // Every encoder ran and its reads, writes and syncs all reached the model.
    let report = json(&dir.path().join("cpu-speed-16x.json"));
    assert_eq!(
        report["program"]["exit"]["code"], 0,
        "{}",
        report["program"]
    );
    let calls = &report["calls"];
    assert_eq!(calls["flushes"], 12, "{calls}");
    assert!(calls["reads"].as_u64().unwrap() >= 12, "{calls}");
}

#[test]
fn the_emulators_timing_error_has_the_form_of_figs_4_6_and_4_7() {
    if !have("fio") || !have("python3") {
        return;
    }
    let _busy = busy();
    let dir = temp_dir("wu-timing-error");
    run_script("experiments/wu/timing-error.sh", dir.path());

    // Wall-clock lateness depends on the machine, so only the form is checked: both CDFs are
    // there, over the same fractions from 0 to 1, and never decrease.
    let report = json(&dir.path().join("emulate.json"));
    let lateness = &report["lateness"];
    let replies = lateness["relative_percent"]["replies"].as_u64().unwrap();
    assert!(replies > 50, "only {replies} replies");
    assert!(lateness["late"].as_u64().unwrap() <= replies);
    let rows = csv_rows(&dir.path().join("timing-error.csv"));
    assert_eq!(rows.len(), lateness["cdf"].as_array().unwrap().len());
    assert_eq!(rows[0][0], 0.0);
    assert_eq!(rows.last().unwrap()[0], 1.0);
    for pair in rows.windows(2) {
        assert!(pair[1][0] > pair[0][0], "fractions {pair:?}");
        assert!(pair[1][1] >= pair[0][1], "lateness {pair:?}");
        assert!(pair[1][2] >= pair[0][2], "percent {pair:?}");
    }
    // Δt/t divides by a disk's response time (milliseconds), so it is far smaller than Δt in
    // microseconds would suggest: the median Δt in µs over the median Δt/t in % is a median
    // response time of well over 100 µs.
    let median = rows.iter().find(|r| r[0] == 0.5).unwrap();
    assert!(median[1] / (median[2] / 100.0) > 100.0, "{median:?}");
    let summary = std::fs::read_to_string(dir.path().join("timing-error.txt")).unwrap();
    assert!(summary.contains(&format!("replies {replies}")), "{summary}");
    // The report page draws both figures.
    let page = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    for plot in ["lateness-cdf", "relative-lateness-cdf"] {
        assert!(page.contains(plot), "no {plot} in the report");
    }
}
