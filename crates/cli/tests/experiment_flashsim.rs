//! FlashSim's experiments (Kim et al. 2009, seed 004) at their quick size, run as a user runs
//! them: `storsim sweep experiments/flashsim/SPEC.toml --size quick`. Each test asserts the
//! paper's qualitative result on the Financial1 trace, and every point's energy is checked
//! against the paper's Table 2 exactly. docs/experiments.md (FlashSim) shows the numbers.

mod common;

use common::experiment::{points, run_sweep};
use common::{counter, temp_dir};
use serde_json::Value;

/// The Financial1 excerpt the specs replay, under `../shared`.
const TRACE: &str = "traces/financial1_ssdsim/Financial1_first10k.ssdsim.ascii";

/// FlashSim's Table 2 energies in µJ: each NAND operation counter with its energy counter and
/// the energy of one operation.
const TABLE2_UJ: [(&str, &str, f64); 3] = [
    ("flash_reads", "energy_read_uj", 4.72),
    ("flash_programs", "energy_program_uj", 38.04),
    ("flash_erases", "energy_erase_uj", 527.68),
];

/// Runs `spec` (a file name in `experiments/flashsim/`) at its quick size and returns each
/// point's JSON document, or `None` (after a SKIP line) when `../shared` is missing.
fn sweep_quick(spec: &str) -> Option<Vec<Value>> {
    storsim_testenv::shared(TRACE)?;
    let dir = temp_dir(spec.trim_end_matches(".toml"));
    run_sweep(&format!("experiments/flashsim/{spec}"), dir.path());
    Some(points(dir.path()))
}

/// The point whose parameter `key` has the value `value` (a string or a number), which must be
/// the only one.
fn point<'a>(points: &'a [Value], key: &str, value: &Value) -> &'a Value {
    let mut found = points
        .iter()
        .filter(|p| &p["point"]["parameters"][key] == value);
    let p = found
        .next()
        .unwrap_or_else(|| panic!("no point with {key} = {value}"));
    assert!(found.next().is_none(), "two points with {key} = {value}");
    p
}

fn mean_latency_ns(p: &Value) -> f64 {
    p["summary"]["latency_ns"]["mean"].as_f64().unwrap()
}

/// A point's response-time CDF as (fraction, latency in ns) pairs.
fn cdf(p: &Value) -> Vec<(f64, f64)> {
    p["summary"]["latency_cdf"]
        .as_array()
        .expect("a latency CDF")
        .iter()
        .map(|q| {
            (
                q["fraction"].as_f64().unwrap(),
                q["latency_ns"].as_f64().unwrap(),
            )
        })
        .collect()
}

/// Every point's energy is its NAND operations times FlashSim's Table 2 energies, and the
/// total is their sum: the preset carries the paper's numbers and nothing else adds energy
/// (no idle power is set).
fn assert_table2_energies(points: &[Value]) {
    for p in points {
        let label = &p["point"]["label"];
        let mut sum = 0.0;
        for (ops, energy, uj) in TABLE2_UJ {
            let expected = counter(p, ops) * uj;
            let got = counter(p, energy);
            assert!(
                (got - expected).abs() <= 1e-9 * expected.max(1.0),
                "{label}: {energy} = {got}, but {ops} × {uj} µJ = {expected}"
            );
            sum += got;
        }
        assert_eq!(counter(p, "energy_idle_uj"), 0.0, "{label}");
        let total = counter(p, "energy_total_uj");
        assert!(
            (total - sum).abs() <= 1e-9 * sum.max(1.0),
            "{label}: energy_total_uj = {total}, the operations' sum = {sum}"
        );
    }
}

/// Figs 6(a) and 7(a) and the erase counts: on Financial1 DFTL comes close to the page FTL,
/// FAST is far slower and erases and spends most among the three, and the block-mapped FTL,
/// the extreme the hybrids were made to avoid, is worst of all.
#[test]
fn ftls_on_financial1_order_as_flashsim_reports() {
    let Some(points) = sweep_quick("ftls.toml") else {
        return;
    };
    assert_eq!(points.len(), 4, "one point per FTL");
    assert_table2_energies(&points);
    let ftl = |name: &str| point(&points, "ssd.ftl", &Value::from(name));
    let order = ["page", "dftl", "fast", "block"].map(ftl);

    // The starting state is chosen so that every FTL reclaims space during the run.
    for p in &order {
        assert!(
            counter(p, "flash_erases") > 0.0,
            "{}: no erases, so the figure would show no garbage collection",
            p["point"]["label"]
        );
    }

    // Fig 6(a): each FTL's CDF lies at or right of the one before it, at every fraction.
    let cdfs = order.map(cdf);
    for pair in cdfs.windows(2) {
        let (better, worse) = (&pair[0], &pair[1]);
        assert_eq!(better.len(), worse.len());
        for (b, w) in better.iter().zip(worse) {
            assert_eq!(b.0, w.0, "the CDFs share their fractions");
            assert!(b.1 <= w.1, "at fraction {}: {} ns > {} ns", b.0, b.1, w.1);
        }
    }
    let [page, dftl, fast, block] = order.map(mean_latency_ns);
    assert!(page < dftl && dftl < fast && fast < block);
    // "DFTL is able to closely match the performance of the page-based FTL": its gap to the
    // page FTL is a small part of FAST's.
    assert!(
        dftl - page < 0.25 * (fast - page),
        "mean response times: page {page} ns, DFTL {dftl} ns, FAST {fast} ns"
    );
    // The paper: DFTL improves the mean response time by about 78 % over FAST.
    assert!(
        dftl < 0.5 * fast,
        "DFTL's mean ({dftl} ns) must be well below FAST's ({fast} ns)"
    );

    // Erases: FAST erases far more than DFTL (the paper: about 3 times), whose translation
    // pages add a little to the page FTL's; the block FTL erases once per page written.
    let [page, dftl, fast, block] = order.map(|p| counter(p, "flash_erases"));
    assert!(page <= dftl, "page {page}, DFTL {dftl}");
    assert!(fast >= 2.0 * dftl, "FAST {fast}, DFTL {dftl}");
    assert!(block > fast, "block {block}, FAST {fast}");
    assert_eq!(block, counter(order[3], "host_write_pages"));

    // Fig 7(a): DFTL's mapping traffic costs energy the page FTL does not spend; FAST spends
    // the most of the three.
    assert_eq!(counter(order[0], "energy_mapping_uj"), 0.0);
    assert!(counter(order[1], "energy_mapping_uj") > 0.0);
    let [page, dftl, fast, block] = order.map(|p| counter(p, "energy_total_uj"));
    assert!(page < dftl && dftl < fast && fast < block);
}

/// Fig 8: the more of the candidates garbage collection searches for the victim with the
/// fewest valid pages, the fewer pages it copies and the lower the mean response time (and
/// flash energy); 0.0 is a random victim, 1.0 a complete search.
#[test]
fn gc_search_fraction_trades_search_for_copies() {
    let Some(mut points) = sweep_quick("gc-search.toml") else {
        return;
    };
    assert_table2_energies(&points);
    let key = "ssd.dftl.page.gc_fraction_searched";
    let fraction = |p: &Value| p["point"]["parameters"][key].as_f64().unwrap();
    points.sort_by(|a, b| fraction(a).total_cmp(&fraction(b)));
    let fractions: Vec<f64> = points.iter().map(fraction).collect();
    assert_eq!(fractions.first(), Some(&0.0));
    assert_eq!(fractions.last(), Some(&1.0));
    for pair in points.windows(2) {
        let (less, more) = (&pair[0], &pair[1]);
        let (f0, f1) = (fraction(less), fraction(more));
        let copies = |p| counter(p, "flash_programs_gc");
        assert!(
            copies(more) < copies(less),
            "searching {f1} copies {} pages, {f0} copied {}",
            copies(more),
            copies(less)
        );
        assert!(
            mean_latency_ns(more) <= mean_latency_ns(less),
            "searching {f1}: mean {} ns, {f0}: {} ns",
            mean_latency_ns(more),
            mean_latency_ns(less)
        );
        let energy = |p| counter(p, "energy_total_uj");
        assert!(energy(more) < energy(less), "energy at {f1} vs {f0}");
    }
    let (random, complete) = (&points[0], &points[points.len() - 1]);
    assert!(
        mean_latency_ns(random) > 2.0 * mean_latency_ns(complete),
        "a random victim must cost clearly more than a complete search"
    );
}
