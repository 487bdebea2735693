//! The IBM experiments (seed 001, `experiments/ibm/`) at their quick size: the STEC Zeus fit
//! table recovered by calibration, and the % error table of a linear fit to a detailed SSD.

mod common;

use common::experiment::{run_script, run_sweep};
use common::temp_dir;
use std::path::Path;

/// The seed's "Linear Regression Fit Results" for the STEC Zeus, which the `stec-zeus` preset
/// holds: (pattern, A µs, B µs/KiB). The calibration must give these back.
const ZEUS: [(&str, f64, f64); 4] = [
    ("sr", 127.5, 4.005),
    ("rr", 230.6, 3.987),
    ("sw", 2167.0, 4.96),
    ("rw", 770.0, 5.382),
];

/// The model's service time in ns for `n` bytes at (A µs, B µs/KiB): A + n·B, with B held as
/// whole picoseconds per KiB and the product rounded half up to whole nanoseconds.
fn service_ns(a_us: f64, b_us_per_kib: f64, n: u64) -> u64 {
    let a_ns = (a_us * 1000.0).round() as u64;
    let b_ps_per_kib = (b_us_per_kib * 1e6).round() as u64;
    a_ns + (n * b_ps_per_kib + 512_000) / 1_024_000
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A pattern's entry in a calibrate report.
fn pattern<'a>(report: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    report["calibration"]["patterns"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pattern"] == name)
        .unwrap_or_else(|| panic!("no pattern {name}"))
}

#[test]
fn calibration_recovers_the_zeus_fit_table_and_scores_a_detailed_ssd() {
    let dir = temp_dir("ibm-fit");
    run_script("experiments/ibm/fit.sh", dir.path());

    let zeus = json(&dir.path().join("zeus.json"));
    for (name, a_us, b_us_per_kib) in ZEUS {
        let p = pattern(&zeus, name);
        // Every latency measured is the model's A + n·B to the nanosecond.
        for point in p["points"].as_array().unwrap() {
            let n = point["size_bytes"].as_u64().unwrap();
            let expected_ns = service_ns(a_us, b_us_per_kib, n);
            for stat in ["min_us", "median_us", "p90_us"] {
                let got_ns = (point[stat].as_f64().unwrap() * 1000.0).round() as u64;
                assert_eq!(got_ns, expected_ns, "{name} {n} bytes {stat}");
            }
        }
        // The fit gives the table back to its printed digits: the only disturbance is that
        // rounding to whole nanoseconds, at most 0.5 ns per point.
        let fit = &p["fit"];
        let (a, b) = (
            fit["a_us"].as_f64().unwrap(),
            fit["b_us_per_kib"].as_f64().unwrap(),
        );
        assert!((a - a_us).abs() < 1e-3, "{name}: A {a} against {a_us}");
        assert!(
            (b - b_us_per_kib).abs() < 1e-5,
            "{name}: B {b} against {b_us_per_kib}"
        );
        assert!(
            fit["r_squared"].as_f64().unwrap() > 0.999_999,
            "{name}: {fit}"
        );
        assert!(fit["p_value"].as_f64().unwrap() < 1e-20, "{name}: {fit}");
        let error = p["validation"]["linear_mean_error_pct"].as_f64().unwrap();
        assert!(error < 1e-3, "{name}: held-out error {error} %");
    }
    // The written model is the preset's table again.
    let model = std::fs::read_to_string(dir.path().join("zeus.toml")).unwrap();
    assert!(model.contains("model = \"linear\""), "{model}");

    // The detailed SSD is not linear by construction, yet a line describes it closely, as the
    // paper found for the real Zeus (r² ≥ 0.9993, % errors 4.1-6.6): every fit explains all
    // but a thousandth of the variance, and the held-out error is a few percent, not zero and
    // not tens of percent.
    let flash = json(&dir.path().join("flashsim.json"));
    for (name, _, _) in ZEUS {
        let p = pattern(&flash, name);
        let r2 = p["fit"]["r_squared"].as_f64().unwrap();
        assert!(r2 > 0.999, "{name}: r² {r2}");
        let error = p["validation"]["linear_mean_error_pct"].as_f64().unwrap();
        assert!(
            error > 0.5 && error < 15.0,
            "{name}: held-out error {error} %"
        );
    }
    // Writes cost more than reads of the same kind in both A and B, as on the paper's drive.
    let ab = |name| {
        let f = &pattern(&flash, name)["fit"];
        (
            f["a_us"].as_f64().unwrap(),
            f["b_us_per_kib"].as_f64().unwrap(),
        )
    };
    assert!(ab("sw").0 > ab("sr").0 && ab("sw").1 > ab("sr").1);
    assert!(ab("rw").0 > ab("rr").0 && ab("rw").1 > ab("rr").1);
}

#[test]
fn throughput_against_block_size_is_n_over_a_plus_n_b() {
    let dir = temp_dir("ibm-throughput");
    let results = run_sweep("experiments/ibm/throughput.toml", dir.path());
    assert_eq!(results.rows.len(), 4 * 12);
    let mut bandwidth = std::collections::BTreeMap::new();
    for row in 0..results.rows.len() {
        let n = results.number(row, "workload.bs") as u64;
        let requests = results.number(row, "workload.requests") as u64;
        // One request at a time, so the run lasts exactly the sum of the service times: each
        // pattern's count (the device's counters) times its A + n·B.
        let mut expected_ns = 0;
        let mut counted = 0;
        for (name, a_us, b_us_per_kib) in ZEUS {
            let count = results.number(row, &format!("device.counters.{name}_requests")) as u64;
            expected_ns += count * service_ns(a_us, b_us_per_kib, n);
            counted += count;
        }
        assert_eq!(counted, requests, "row {row}");
        let end_ns = results.number(row, "run.end_ns") as u64;
        assert_eq!(end_ns, expected_ns, "row {row}");
        let bw = results.number(row, "summary.bandwidth_bytes_per_s");
        let exact = (requests * n) as f64 / (end_ns as f64 / 1e9);
        assert!(
            (bw / exact - 1.0).abs() < 1e-9,
            "row {row}: {bw} against {exact}"
        );
        bandwidth.insert((results.text(row, "workload.rw").to_string(), n), bw);
    }
    // The paper's curves: throughput rises with block size for every pattern, towards 1/B.
    for rw in ["read", "randread", "write", "randwrite"] {
        let curve: Vec<f64> = bandwidth
            .iter()
            .filter(|((r, _), _)| r == rw)
            .map(|(_, &bw)| bw)
            .collect();
        assert!(curve.windows(2).all(|w| w[1] > w[0]), "{rw}: {curve:?}");
    }
    // What the fit table implies at 4 KiB: sequential reads beat random ones (A_SR < A_RR),
    // and random writes beat sequential ones (the table's A_SW is almost three times A_RW).
    let at_4k = |rw: &str| bandwidth[&(rw.to_string(), 4096)];
    assert!(at_4k("read") > at_4k("randread"));
    assert!(at_4k("randwrite") > at_4k("write"));
}
