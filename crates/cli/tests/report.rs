//! `storsim report` and `simulate --report` through the binary, and the pages as a person sees
//! them: each rendered in headless Chromium, which must log no console error, must have run the
//! page's script over the embedded data, and must show every expected plot with drawn data and
//! its axis titles; a screenshot is taken of each. Bad input exits 2 naming the file.

// Some tests here walk a real client through one scenario step by step (a mount, a crash, a
// browser page); split, the steps would read out of order. The limit holds for production code.
#![allow(clippy::too_many_lines)]

mod common;

use common::system::{emulate_with_qemu_io, have};
use common::{stderr, storsim, temp_dir};
use std::path::{Path, PathBuf};

fn ok(args: &[&str]) {
    let o = storsim(args);
    assert!(o.status.success(), "storsim {args:?}: {}", stderr(&o));
}

/// A simulate run's document, written to `dir/name.json`.
fn simulate(dir: &Path, name: &str, device: &str, workload: &str) -> PathBuf {
    let json = dir.join(format!("{name}.json"));
    ok(&[
        "simulate",
        "-q",
        "--device",
        device,
        "--workload",
        workload,
        "--json",
        json.to_str().unwrap(),
    ]);
    json
}

fn report(runs: &[&Path], out: &Path) {
    let mut args = vec!["report"];
    args.extend(runs.iter().map(|p| p.to_str().unwrap()));
    args.extend(["-o", out.to_str().unwrap()]);
    ok(&args);
}

/// A real emulator's report: the stec-zeus model served over NBD on a Unix socket, driven by
/// qemu-io with writes, reads, a discard and a flush, the document written at its exit. `None`
/// after reporting qemu-io missing.
fn emulate_document(dir: &Path) -> Option<PathBuf> {
    if !have("qemu-io") {
        storsim_testenv::missing("qemu-io not found: the emulate report needs an NBD client");
        return None;
    }
    let mut commands = Vec::new();
    for i in 0..64 {
        commands.push(format!("write -P 0x5a {}k 64k", i * 64));
        commands.push(format!("read -P 0x5a {}k 64k", i * 64));
    }
    commands.push("discard 0 1m".into());
    commands.push("flush".into());
    let commands: Vec<&str> = commands.iter().map(String::as_str).collect();
    Some(emulate_with_qemu_io(dir, &[], &commands))
}

/// Renders `page` in headless Chromium: returns the DOM after the scripts ran and Chromium's
/// log, and writes a screenshot beside the page.
fn render(browser: &str, page: &Path) -> (String, String) {
    let rendered = storsim_testenv::chromium::render(browser, page, (1600, 2400));
    (rendered.dom, rendered.log)
}

/// Checks what a reader sees in `dom`: no console message at all (the page logs nothing, so
/// any is an error), the page's script ran over the embedded data, and each plot of
/// `expected` is there with drawn data and each of its axis titles.
fn check(dom: &str, log: &str, runs: usize, expected: &[Expected]) {
    let console: Vec<&str> = log.lines().filter(|l| l.contains("CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:#?}");
    assert!(
        dom.contains(&format!("data-runs=\"{runs}\"")),
        "the page's script did not read {runs} embedded runs"
    );
    for (id, axes) in expected {
        let start = dom
            .find(&format!("<svg id=\"{id}\""))
            .unwrap_or_else(|| panic!("no plot {id} in the page"));
        let svg = &dom[start..start + dom[start..].find("</svg>").unwrap()];
        assert!(
            storsim_report::data_marks(svg) > 0,
            "plot {id} draws no data"
        );
        for axis in *axes {
            assert!(
                svg.contains(axis),
                "plot {id} lacks the axis title {axis:?}"
            );
        }
    }
}

/// A plot id and the axis titles it must show.
type Expected = (&'static str, &'static [&'static str]);

const CDF: Expected = (
    "run1-latency-cdf",
    &["latency (µs)", "fraction of requests"],
);

#[test]
fn every_kind_of_run_renders_in_chromium() {
    let Some(browser) = storsim_testenv::chromium::browser() else {
        return;
    };
    let dir = temp_dir("report-chromium");
    let d = dir.path();
    const TIME: &str = "simulated time";
    let cases: Vec<(PathBuf, Vec<Expected>)> = vec![
        (
            simulate(
                d,
                "ssd",
                "bench2g",
                "synthetic:rw=randwrite,bs=4k,iodepth=8,requests=4000,span=64m",
            ),
            vec![
                CDF,
                ("run1-latency-over-time", &[TIME, "latency (µs)"]),
                ("run1-throughput-over-time", &[TIME, "throughput (MB/s)"]),
                (
                    "run1-queue-depth-over-time",
                    &[TIME, "requests (time-weighted mean)"],
                ),
                ("run1-waf-over-time", &[TIME, "WAF so far"]),
                ("run1-traffic-by-cause", &["cause", "flash operations"]),
                ("run1-energy-by-cause", &["cause", "energy (mJ)"]),
                ("run1-die-utilisation", &[TIME, "die number"]),
                ("run1-erase-histogram", &["erases of the block", "blocks"]),
                ("run1-wear-spread", &["erases"]),
            ],
        ),
        (
            simulate(
                d,
                "hdd",
                "hdd-laptop-2007",
                "synthetic:rw=randrw,bs=4k,iodepth=4,requests=500",
            ),
            vec![
                CDF,
                ("run1-hdd-cache", &["outcome", "reads"]),
                ("run1-hdd-time-split", &["state", "time (s)"]),
                ("run1-hdd-seek-distance", &["distance (cylinders", "seeks"]),
                (
                    "run1-hdd-service-split",
                    &["part of the media time", "time (s)"],
                ),
                (
                    "run1-hdd-seek-over-time",
                    &[TIME, "mean seek distance (cylinders)"],
                ),
            ],
        ),
        (
            simulate(
                d,
                "hybrid",
                "examples/hybrid/controller.toml",
                "synthetic:rw=randwrite,bs=4k,requests=2000",
            ),
            vec![
                CDF,
                ("run1-hybrid-route-split", &["operation", "requests"]),
                (
                    "run1-traffic-by-cause-flash",
                    &["cause", "flash operations"],
                ),
                ("run1-erase-histogram-flash", &["erases of the block"]),
            ],
        ),
        (
            simulate(
                d,
                "array",
                "examples/raid0-flashsim.toml",
                "synthetic:rw=randwrite,bs=16k,iodepth=8,requests=1000",
            ),
            vec![
                CDF,
                ("run1-traffic-by-cause-child0-ssd", &["cause"]),
                ("run1-traffic-by-cause-child1-ssd", &["cause"]),
                ("run1-erase-histogram-child0", &["erases of the block"]),
            ],
        ),
        (
            simulate(
                d,
                "blackbox",
                "stec-zeus",
                "synthetic:rw=randread,bs=4k,iodepth=4,requests=1000",
            ),
            vec![
                CDF,
                ("run1-service-split", &["operation", "mean time (µs)"]),
            ],
        ),
    ];
    for (json, expected) in &cases {
        let page = json.with_extension("html");
        report(&[json], &page);
        let (dom, log) = render(browser, &page);
        check(&dom, &log, 1, expected);
    }

    // Two runs of different device kinds, compared.
    let page = d.join("compare.html");
    report(&[&cases[0].0, &cases[1].0], &page);
    let (dom, log) = render(browser, &page);
    check(
        &dom,
        &log,
        2,
        &[
            (
                "compare-latency-cdf",
                &["latency (µs)", "fraction of requests"],
            ),
            ("compare-p99-over-time", &[TIME, "p99 latency (µs)"]),
            ("compare-throughput-over-time", &[TIME]),
            ("run1-erase-histogram", &["blocks"]),
            ("run2-hdd-cache", &["reads"]),
        ],
    );
    assert!(dom.contains("id=\"compare-table\""));

    // A calibration of a model, with its fits, held-out sizes and residuals.
    let cal = d.join("calibrate.json");
    ok(&[
        "calibrate",
        "--simulate",
        "hdd-laptop-2007",
        "--sizes",
        "4k,16k,64k,256k",
        "--repeats",
        "1",
        "--zones",
        "3",
        "--quiet",
        "--out",
        d.join("fitted.toml").to_str().unwrap(),
        "--report",
        cal.to_str().unwrap(),
    ]);
    let page = d.join("calibrate.html");
    report(&[&cal], &page);
    let (dom, log) = render(browser, &page);
    check(
        &dom,
        &log,
        1,
        &[
            (
                "run1-calibrate-fit",
                &["request size (KiB)", "latency (µs)", "held out of the fit"],
            ),
            (
                "run1-calibrate-residuals",
                &["request size (KiB)", "fitted (%)"],
            ),
        ],
    );

    // A real emulator's report with its lateness.
    let Some(emulate) = emulate_document(d) else {
        return;
    };
    let page = d.join("emulate.html");
    report(&[&emulate], &page);
    let (dom, log) = render(browser, &page);
    check(
        &dom,
        &log,
        1,
        &[
            (
                "run1-lateness-cdf",
                &["lateness (µs, wall clock)", "fraction of replies"],
            ),
            (
                "run1-lateness-over-time",
                &["wall-clock time", "lateness (µs)"],
            ),
            ("run1-relative-lateness-cdf", &["(%)"]),
            ("run1-latency-over-time", &["wall-clock time"]),
        ],
    );
}

#[test]
fn simulate_writes_the_report_and_the_plot_files() {
    let dir = temp_dir("simulate-report");
    let page = dir.path().join("run.html");
    let plots = dir.path().join("plots");
    ok(&[
        "simulate",
        "-q",
        "--device",
        "bench2g",
        "--workload",
        "synthetic:rw=randwrite,bs=4k,iodepth=4,requests=500",
        "--report",
        page.to_str().unwrap(),
        "--plots",
        plots.to_str().unwrap(),
    ]);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<svg id=\"run1-latency-cdf\""));
    assert!(
        html.contains("<code>storsim simulate"),
        "the header has the command line"
    );
    for ext in ["svg", "png"] {
        let file = plots.join(format!("run1-latency-cdf.{ext}"));
        let bytes = std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        assert!(bytes.len() > 1000, "{} is nearly empty", file.display());
    }
    assert!(std::fs::read_to_string(plots.join("run1-latency-cdf.svg"))
        .unwrap()
        .contains("latency (µs)"));
}

#[test]
fn bad_input_exits_2_naming_the_file() {
    let dir = temp_dir("report-bad");
    let out = dir.path().join("out.html");
    let cases = [
        ("text.json", "hello".to_string(), "not a JSON document"),
        (
            "other.json",
            r#"{"a": 1}"#.to_string(),
            "not a storsim run document",
        ),
        (
            "inspect.json",
            r#"{"schema": 1, "trace": "t", "size_histogram": []}"#.to_string(),
            "inspect",
        ),
        (
            "newer.json",
            r#"{"schema": 99, "summary": {}, "device": {}, "workload": {}}"#.to_string(),
            "schema 99",
        ),
    ];
    for (name, text, message) in cases {
        let file = dir.path().join(name);
        std::fs::write(&file, text).unwrap();
        let o = storsim(&[
            "report",
            file.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(2), "{name}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains(name) && err.contains(message), "{name}: {err}");
    }
    assert!(!out.exists(), "nothing is written for bad input");
    let o = storsim(&[
        "report",
        "/nonexistent/run.json",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}
