//! The page from hand-made documents: every plot a document has data for is there, with data;
//! none is drawn without its data; the compare table's differences; the embedded data.

use super::*;
use serde_json::{json, Value};

/// A series of `windows` windows in SERIES.md's shape, with the given device counters.
fn series(windows: usize, device: Value) -> Value {
    let ramp = |scale: f64| -> Vec<f64> { (0..windows).map(|i| (i + 1) as f64 * scale).collect() };
    let op = json!({
        "requests": vec![10; windows], "bytes": vec![40960; windows],
        "iops": vec![10000.0; windows], "bandwidth_bytes_per_s": vec![4.096e7; windows],
        "latency_mean_ns": ramp(1000.0), "latency_p50_ns": ramp(900.0),
        "latency_p99_ns": ramp(5000.0), "latency_p999_ns": ramp(9000.0),
        "latency_max_ns": ramp(10000.0),
    });
    json!({
        "clock": "simulated", "window_ns": 1_000_000, "windows": windows,
        "end_ns": windows * 1_000_000,
        "ops": {"all": op.clone(), "write": op},
        "queue_depth": {"host_mean": vec![1.5; windows], "device_mean": vec![3.0; windows]},
        "device": device,
    })
}

fn summary(p99_ns: u64) -> Value {
    let dist = json!({"mean": 1000.0, "min": 100, "p50": 900, "p90": 2000, "p99": p99_ns,
                      "p999": 9000, "max": 10000});
    let op = |n: u64| {
        json!({"requests": n, "bytes": n * 4096, "iops": 1.0,
        "bandwidth_bytes_per_s": 1.0, "latency_ns": dist, "queueing_ns": dist, "service_ns": dist})
    };
    let mut s = op(100);
    let obj = s.as_object_mut().unwrap();
    obj.insert("read".into(), op(0));
    obj.insert("write".into(), op(100));
    obj.insert("elapsed_ns".into(), json!(1_000_000));
    obj.insert(
        "latency_cdf".into(),
        json!([{"fraction": 0.0, "latency_ns": 100}, {"fraction": 0.5, "latency_ns": 900},
               {"fraction": 1.0, "latency_ns": 10000}]),
    );
    s
}

fn ssd_doc(dies: usize, with_series: bool) -> Value {
    let windows = 20;
    let mut counters = serde_json::Map::new();
    let mut device_series = serde_json::Map::new();
    for (name, value) in [
        ("flash_programs_host", 1000.0),
        ("flash_programs_gc", 300.0),
        ("flash_reads_host", 500.0),
        ("flash_erases_gc", 20.0),
        ("write_amplification", 1.3),
        ("energy_host_uj", 5000.0),
        ("energy_gc_uj", 1000.0),
    ] {
        counters.insert(name.into(), json!(value));
        let per_window: Vec<f64> = (0..windows)
            .map(|i| value * (i + 1) as f64 / windows as f64)
            .collect();
        device_series.insert(name.into(), json!(per_window));
    }
    for d in 0..dies {
        counters.insert(format!("die_{d}_utilisation"), json!(0.5));
        device_series.insert(format!("die_{d}_utilisation"), json!(vec![0.5; windows]));
    }
    counters.insert("channel_0_utilisation".into(), json!(0.2));
    let mut doc = json!({
        "schema": 1, "version": "0.1.0", "seed": 7,
        "command_line": ["storsim", "simulate", "--device", "bench2g"],
        "device": {"name": "bench2g", "model": "ssd", "counters": counters,
                   "block_wear": [{"unit": "", "erase_counts_per_block": [0, 1, 1, 2, 5, 3]}]},
        "workload": {"name": "synthetic:rw=randwrite"},
        "summary": summary(5000),
    });
    if with_series {
        doc["series"] = series(windows, Value::Object(device_series));
    }
    doc
}

fn run(doc: Value) -> Run {
    Run::from_value("test.json", doc).unwrap()
}

fn ids(report: &Report) -> Vec<String> {
    report.plots.iter().map(|p| p.id.clone()).collect()
}

/// The plot `id` is in the page as an inlined SVG holding drawn data.
fn assert_drawn(report: &Report, id: &str) {
    let plot = report
        .plots
        .iter()
        .find(|p| p.id == id)
        .unwrap_or_else(|| panic!("no plot {id} in {:?}", ids(report)));
    assert!(
        report.html.contains(&format!("<svg id=\"{id}\"")),
        "{id} is not inlined"
    );
    assert!(
        data_marks(&plot.svg) > 0,
        "{id} draws no data: {}",
        plot.svg
    );
}

#[test]
fn an_ssd_run_with_a_series_has_every_plot() {
    let report = render(&[run(ssd_doc(4, true))]);
    for id in [
        "latency-cdf",
        "service-split",
        "latency-over-time",
        "throughput-over-time",
        "iops-over-time",
        "queue-depth-over-time",
        "waf-over-time",
        "gc-traffic-over-time",
        "traffic-by-cause",
        "energy-by-cause",
        "die-utilisation",
        "channel-utilisation",
        "erase-histogram",
        "wear-spread",
    ] {
        assert_drawn(&report, &format!("run1-{id}"));
    }
    // Few dies are lines over time; the one channel without a series is a bar of the run.
    let die = report
        .plots
        .iter()
        .find(|p| p.id == "run1-die-utilisation")
        .unwrap();
    assert!(die.svg.contains("<polyline"), "{}", die.svg);
    // Writes alone: their throughput is that of all requests, drawn once.
    let throughput = report
        .plots
        .iter()
        .find(|p| p.id == "run1-throughput-over-time")
        .unwrap();
    assert_eq!(data_marks(&throughput.svg), 1, "{}", throughput.svg);
    assert!(report.html.contains("storsim simulate --device bench2g"));
    assert!(report.html.contains("<th>seed</th><td>7</td>"));
}

#[test]
fn a_runs_table_names_the_parts_its_document_declares() {
    let mut doc = ssd_doc(4, false);
    doc["device"]["parts"] = json!([{"prefix": "ftl_", "model": "dftl"}]);
    let report = render(&[run(doc)]);
    assert!(
        report
            .html
            .contains("<th>parts</th><td>dftl under ftl_</td>"),
        "the run's FTL is shown"
    );
    // A document that declares no parts has no such row.
    let report = render(&[run(ssd_doc(4, false))]);
    assert!(!report.html.contains("<th>parts</th>"));
}

#[test]
fn many_dies_are_a_heat_map() {
    let report = render(&[run(ssd_doc(32, true))]);
    let die = report
        .plots
        .iter()
        .find(|p| p.id == "run1-die-utilisation")
        .unwrap();
    // 32 rows, each one rectangle: the same utilisation all along is drawn as one.
    let viridis_middle = "fill=\"#21908C\"";
    assert_eq!(die.svg.matches(viridis_middle).count(), 32, "{}", die.svg);
    assert!(die.svg.contains("die number"));
}

#[test]
fn utilisation_per_window_is_over_the_time_the_model_states() {
    // A die busy 0.5 of 10 ms, then 0.75 of 20 ms: 5 ms busy, then 10 ms more in the next
    // 10 ms, all of it. Its utilisation's denominator is not the window's end here.
    let mut doc = ssd_doc(2, true);
    let windows = 20;
    let mut u = vec![0.75; windows];
    u[0] = 0.5;
    let mut elapsed = vec![20_000_000.0; windows];
    elapsed[0] = 10_000_000.0;
    doc["series"]["window_ns"] = json!(10_000_000);
    doc["series"]["end_ns"] = json!(windows * 10_000_000);
    doc["series"]["device"]["die_0_utilisation"] = json!(u);
    doc["series"]["device"]["utilisation_elapsed_ns"] = json!(elapsed);
    let r = run(doc);
    let series = r.doc["series"].clone();
    let t = plots::Timeline::of(&series).unwrap();
    let u: Vec<Option<f64>> = series["device"]["die_0_utilisation"]
        .as_array()
        .unwrap()
        .iter()
        .map(Value::as_f64)
        .collect();
    let e: Vec<Option<f64>> = series["device"]["utilisation_elapsed_ns"]
        .as_array()
        .unwrap()
        .iter()
        .map(Value::as_f64)
        .collect();
    let f = t.window_fraction(&u, Some(&e));
    for (got, want) in f.iter().zip([0.5, 1.0, 0.0]) {
        assert!((got.unwrap() - want).abs() < 1e-9, "{f:?}");
    }
}

#[test]
fn without_a_series_there_are_no_time_plots_but_the_rest_stays() {
    let report = render(&[run(ssd_doc(4, false))]);
    let ids = ids(&report);
    assert!(ids.iter().all(|id| !id.contains("over-time")), "{ids:?}");
    for id in [
        "latency-cdf",
        "traffic-by-cause",
        "erase-histogram",
        "die-utilisation",
    ] {
        assert_drawn(&report, &format!("run1-{id}"));
    }
}

#[test]
fn a_black_box_run_has_no_flash_or_disk_plots() {
    let doc = json!({"schema": 1, "version": "0.1.0", "seed": 1,
        "device": {"name": "stec-zeus", "model": "linear", "counters": {"busy_ns": 5},
                   "block_wear": []},
        "workload": {"name": "w"}, "summary": summary(5000)});
    let report = render(&[run(doc)]);
    assert_eq!(ids(&report), ["run1-latency-cdf", "run1-service-split"]);
}

#[test]
fn hdd_and_hybrid_counters_get_their_plots() {
    let doc = json!({"schema": 1, "version": "0.1.0", "seed": 1,
        "device": {"name": "h", "model": "hybrid", "block_wear": [],
            "parts": [{"prefix": "flash_", "model": "ssd"}, {"prefix": "disk_", "model": "hdd"}],
            "counters": {
            "host_writes_flash": 10, "host_writes_disk": 5, "host_reads_flash": 3,
            "host_reads_disk": 4, "host_reads_split": 0, "host_writes_split": 1,
            "flush_on_demand_bytes": 1048576, "flush_idle_bytes": 0,
            "disk_mean_seek_cylinders": 100.0, "disk_cache_read_hits": 4,
            "disk_cache_read_misses": 6, "disk_busy_ns": 1e9, "disk_idle_ns": 2e9,
            "disk_seek_ns": 3e8, "disk_rotation_ns": 2e8, "disk_transfer_ns": 1e8,
            "disk_seek_cylinders_hist_1": 3, "disk_seek_cylinders_hist_2_3": 0,
            "disk_seek_cylinders_hist_16_31": 5, "disk_seek_cylinders_hist_4_7": 2}},
        "workload": {"name": "w"}, "summary": summary(5000)});
    let report = render(&[run(doc)]);
    for id in [
        "hybrid-route-split",
        "hybrid-flush",
        "hdd-cache-disk",
        "hdd-time-split-disk",
        "hdd-seek-distance-disk",
        "hdd-service-split-disk",
    ] {
        assert_drawn(&report, &format!("run1-{id}"));
    }
}

/// `doc`'s device made an array of `n` of its SSDs: its counters (and their series) under
/// each child's prefix, the parts declared.
fn ssd_array(mut doc: Value, n: usize) -> Value {
    let prefixed = |m: &Value| -> Value {
        let m = m.as_object().unwrap();
        Value::Object(
            (0..n)
                .flat_map(|i| {
                    m.iter()
                        .map(move |(k, v)| (format!("child{i}_ssd_{k}"), v.clone()))
                })
                .collect(),
        )
    };
    doc["device"]["counters"] = prefixed(&doc["device"]["counters"]);
    if doc["series"].is_object() {
        doc["series"]["device"] = prefixed(&doc["series"]["device"]);
    }
    doc["device"]["model"] = json!("array");
    doc["device"]["parts"] = (0..n)
        .map(|i| json!({"prefix": format!("child{i}_ssd_"), "model": "ssd"}))
        .collect();
    doc
}

#[test]
fn the_declared_composition_chooses_the_device_plots() {
    let plot_set = |report: &Report, tag: &str| -> Vec<String> {
        ids(report)
            .into_iter()
            .filter(|id| {
                [
                    "waf-over-time",
                    "traffic-by-cause",
                    "energy-by-cause",
                    "die-utilisation",
                ]
                .iter()
                .any(|p| *id == format!("run1-{p}{tag}"))
            })
            .collect()
    };
    // An array of two SSDs: two SSD plot sets, one per child, none for the array itself.
    let array = render(&[run(ssd_array(ssd_doc(4, true), 2))]);
    assert_eq!(
        plot_set(&array, "-child0-ssd").len(),
        4,
        "{:?}",
        ids(&array)
    );
    assert_eq!(
        plot_set(&array, "-child1-ssd").len(),
        4,
        "{:?}",
        ids(&array)
    );
    assert!(plot_set(&array, "").is_empty(), "{:?}", ids(&array));
    for id in ["waf-over-time-child1-ssd", "energy-by-cause-child0-ssd"] {
        assert_drawn(&array, &format!("run1-{id}"));
    }
    // The same counters with the array's parts undeclared (as no storsim writes an array):
    // no SSD plots, whatever the names look like.
    let mut undeclared = ssd_array(ssd_doc(4, true), 2);
    undeclared["device"]
        .as_object_mut()
        .unwrap()
        .remove("parts");
    let report = render(&[run(undeclared)]);
    assert!(
        plot_set(&report, "-child0-ssd").is_empty(),
        "{:?}",
        ids(&report)
    );
    // A disk whose counters include an SSD's names gets no SSD plots.
    let mut hdd = ssd_doc(4, true);
    hdd["device"]["model"] = json!("hdd");
    let report = render(&[run(hdd)]);
    assert!(plot_set(&report, "").is_empty(), "{:?}", ids(&report));
    // The same document declared an SSD gets them.
    assert_eq!(plot_set(&render(&[run(ssd_doc(4, true))]), "").len(), 4);
}

#[test]
fn counter_axes_are_in_a_readable_unit_from_the_descriptors() {
    let doc = json!({"schema": 1, "version": "0.1.0", "seed": 1,
        "device": {"name": "d", "model": "hdd", "block_wear": [], "counters": {
            "busy_ns": 2.5e9, "idle_ns": 1e9, "standby_ns": 0,
            "seek_ns": 3e6, "rotation_ns": 2e6, "transfer_ns": 1e6}},
        "workload": {"name": "w"}, "summary": summary(5000)});
    let report = render(&[run(doc)]);
    let svg = |id: &str| {
        report
            .plots
            .iter()
            .find(|p| p.id == format!("run1-{id}"))
            .unwrap_or_else(|| panic!("no {id} in {:?}", ids(&report)))
            .svg
            .clone()
    };
    // Seconds for a time of seconds, milliseconds for one of milliseconds: each axis by its
    // largest value, never raw nanoseconds.
    assert!(
        svg("hdd-time-split").contains("\ntime (s)\n"),
        "{}",
        svg("hdd-time-split")
    );
    assert!(svg("hdd-service-split").contains("\ntime (ms)\n"));
    assert!(!svg("hdd-time-split").contains("(ns)"));
}

#[test]
fn calibrate_documents_get_the_fits_and_residuals() {
    let point = |size: u64, value: f64, linear: f64, held: bool| json!({"size_bytes": size, "value_us": value, "linear_us": linear, "held_out": held});
    let doc = json!({"schema": 1, "version": "0.1.0", "plan": {"seed": 3},
        "target": {"name": "bench2g", "kind": "model"},
        "calibration": {"patterns": [{"pattern": "rr",
            "fit": {"a_us": 100.0, "b_us_per_kib": 2.0},
            "points": [point(4096, 108.0, 108.0, false), point(8192, 120.0, 116.0, true),
                       point(16384, 132.0, 132.0, false)]}]}});
    let report = render(&[run(doc)]);
    assert_eq!(
        ids(&report),
        ["run1-calibrate-fit", "run1-calibrate-residuals"]
    );
    assert_drawn(&report, "run1-calibrate-fit");
    let fit = &report.plots[0].svg;
    assert!(fit.contains("rr: 100.0 µs + 2.000 µs/KiB"), "{fit}");
    assert!(fit.contains("held out of the fit"), "{fit}");
    // The held-out point is 120 against 116 predicted: a residual of +3.4 %, above zero.
    assert!(report.plots[1].svg.contains("<circle"));
}

#[test]
fn validate_documents_get_their_two_cdfs_overlaid() {
    let cdf = |scale: f64| {
        json!([{"fraction": 0.0, "latency_ms": 0.1 * scale},
               {"fraction": 0.5, "latency_ms": 0.2 * scale},
               {"fraction": 1.0, "latency_ms": 1.0 * scale}])
    };
    // `validate trace`: the CDFs themselves.
    let doc = json!({"schema": 1, "kind": "validate", "device": {"name": "d"},
        "demerit_ms": 0.25, "simulated": {"mean_ms": 0.4, "cdf": cdf(1.0)},
        "measured": {"mean_ms": 0.5, "cdf": cdf(1.5)}});
    let report = render(&[run(doc)]);
    assert_eq!(ids(&report), ["run1-validation-cdf"]);
    assert_drawn(&report, "run1-validation-cdf");
    let svg = &report.plots[0].svg;
    assert!(
        svg.contains("simulated") && svg.contains("measured"),
        "{svg}"
    );
    assert!(svg.contains("demerit 0.250 ms"), "{svg}");
    // `validate disksim`, which has no kind in older documents and gives percentiles only.
    let side = |m: f64| {
        json!({"mean_ms": m, "p10_ms": m / 2.0, "p50_ms": m, "p90_ms": 2.0 * m,
                               "p99_ms": 3.0 * m, "max_ms": 4.0 * m})
    };
    let doc = json!({"schema": 1, "demerit_ms": 0.5, "simulated": side(10.0),
        "measured": side(11.0)});
    let report = render(&[run(doc.clone())]);
    assert_drawn(&report, "run1-validation-cdf");
    // Two validations compare on their demerits and sides.
    let mut second = doc;
    second["demerit_ms"] = json!(0.75);
    let report = render(&[run(second.clone()), run(second)]);
    let table = &report.html[report.html.find("id=\"compare-table\"").unwrap()..];
    assert!(table.contains("<code>demerit_ms</code>"), "{table}");
    assert!(table.contains("<code>measured.p99_ms</code>"), "{table}");
    // And their simulated CDFs are drawn over the first one's measured CDF (the documents
    // name no device, so the lines are named by run).
    assert_drawn(&report, "compare-validation-cdf");
    let svg = &report
        .plots
        .iter()
        .find(|p| p.id == "compare-validation-cdf")
        .unwrap()
        .svg;
    assert!(
        svg.contains("measured (run 1)") && svg.contains("run 2"),
        "{svg}"
    );
}

#[test]
fn emulate_documents_get_lateness_plots() {
    let mut s = series(10, json!({}));
    s["clock"] = json!("wall");
    s["lateness_ns"] = json!({"mean": vec![2000.0; 10], "p50": vec![1500.0; 10],
                              "p99": vec![9000.0; 10], "max": vec![20000.0; 10]});
    let doc = json!({"schema": 1, "version": "0.1.0",
        "device": {"name": "bench2g", "counters": {}}, "model": summary(4000),
        "lateness": {"threshold_ns": 100000, "late": 0,
            "lateness_ns": {"mean": 2000.0, "min": 10, "p50": 1500, "p90": 3000, "p99": 9000,
                            "p999": 15000, "max": 20000},
            "cdf": [{"lateness_ns": 10, "fraction": 0.0}, {"lateness_ns": 1500, "fraction": 0.5},
                    {"lateness_ns": 20000, "fraction": 1.0}],
            "relative_cdf": [{"percent": 0.1, "fraction": 0.0}, {"percent": 2.0, "fraction": 1.0}]},
        "series": s});
    let r = run(doc);
    assert_eq!(r.kind, Kind::Emulate);
    let report = render(&[r]);
    for id in [
        "lateness-cdf",
        "relative-lateness-cdf",
        "lateness-over-time",
        "latency-cdf",
    ] {
        assert_drawn(&report, &format!("run1-{id}"));
    }
    let over_time = report
        .plots
        .iter()
        .find(|p| p.id == "run1-lateness-over-time")
        .unwrap();
    assert!(
        over_time.svg.contains("wall-clock time"),
        "{}",
        over_time.svg
    );
}

#[test]
fn two_runs_are_compared_with_differences_to_the_first() {
    let report = render(&[run(ssd_doc(4, true)), run(ssd_doc(4, true))]);
    for id in [
        "latency-cdf",
        "p99-over-time",
        "throughput-over-time",
        "queue-depth-over-time",
    ] {
        assert_drawn(&report, &format!("compare-{id}"));
    }
    // A run of 3 s and one of 20 ms share an axis in seconds.
    let mut long = ssd_doc(4, true);
    long["series"]["window_ns"] = json!(150_000_000);
    long["series"]["end_ns"] = json!(3_000_000_000u64);
    let report = render(&[run(ssd_doc(4, true)), run(long)]);
    let p99 = report
        .plots
        .iter()
        .find(|p| p.id == "compare-p99-over-time")
        .unwrap();
    assert!(p99.svg.contains("simulated time (s)"), "{}", p99.svg);
    let mut second = ssd_doc(4, false);
    second["summary"] = summary(5500);
    second["device"]["counters"]["write_amplification"] = json!(2.6);
    let report = render(&[run(ssd_doc(4, false)), run(second)]);
    let table = &report.html[report.html.find("id=\"compare-table\"").unwrap()..];
    let row = |key: &str| {
        let start = table.find(&format!("<code>{key}</code>")).unwrap();
        &table[start..start + table[start..].find("</tr>").unwrap()]
    };
    assert!(
        row("summary.latency_ns.p99").contains("(+10.0 %)"),
        "{}",
        row("summary.latency_ns.p99")
    );
    assert!(row("device.counters.write_amplification").contains("(+100.0 %)"));
    assert!(!row("summary.latency_ns.p50").contains('%'));
    // Per-run plots stay, each run under its own prefix.
    assert!(ids(&report).contains(&"run2-erase-histogram".to_string()));
}

#[test]
fn compare_rows_are_labelled_and_scaled_to_one_unit() {
    let with = |energy_uj: f64, p99_ns: u64| {
        let mut doc = ssd_doc(1, false);
        doc["summary"] = summary(p99_ns);
        doc["device"]["counters"]["energy_host_uj"] = json!(energy_uj);
        doc["device"]["counters"]["mystery_count"] = json!(1_234_567);
        doc
    };
    let report = render(&[run(with(2_000_000.0, 5000)), run(with(3_000_000.0, 20_000))]);
    let table = &report.html[report.html.find("id=\"compare-table\"").unwrap()..];
    let row = |key: &str| {
        let start = table[..table.find(&format!("<code>{key}</code>")).unwrap()]
            .rfind("<tr>")
            .unwrap();
        &table[start..start + table[start..].find("</tr>").unwrap()]
    };
    // The counter's descriptor names it and its unit; both runs are in joules.
    let energy = row("device.counters.energy_host_uj");
    assert!(
        energy.starts_with("<tr><td>Energy of the cause&#39;s flash operations: host (J) <code>"),
        "{energy}"
    );
    assert!(energy.contains("<td class=\"n\">2</td>"), "{energy}");
    assert!(energy.contains("<td class=\"n\">3 <span"), "{energy}");
    assert!(energy.contains("(+50.0 %)"), "{energy}");
    // A summary field is named from the field table, in the unit its largest value needs.
    let p99 = row("summary.latency_ns.p99");
    assert!(p99.contains("latency, p99 (µs)"), "{p99}");
    assert!(
        p99.contains(">5</td>") && p99.contains(">20 <span"),
        "{p99}"
    );
    assert!(p99.contains("(+300.0 %)"), "{p99}");
    // A counter no descriptor knows keeps its name and its raw values.
    let mystery = row("device.counters.mystery_count");
    assert!(
        mystery.starts_with("<tr><td><code>device.counters.mystery_count</code></td>"),
        "{mystery}"
    );
    assert!(mystery.contains(">1234567</td>"), "{mystery}");
}

#[test]
fn runs_of_different_kinds_compare_on_what_they_share() {
    let hdd = json!({"schema": 1, "version": "0.1.0", "seed": 1,
        "device": {"name": "hdd", "model": "hdd", "block_wear": [],
                   "counters": {"mean_seek_cylinders": 5.0, "busy_ns": 7}},
        "workload": {"name": "w"}, "summary": summary(8000)});
    let report = render(&[run(ssd_doc(4, false)), run(hdd)]);
    let table = &report.html[report.html.find("id=\"compare-table\"").unwrap()..];
    let table = &table[..table.find("</table>").unwrap()];
    assert!(table.contains("<code>summary.latency_ns.p99</code>"));
    // A counter only one of them has is not a row.
    assert!(!table.contains("flash_programs_host"));
    assert!(!table.contains("mean_seek_cylinders"));
    assert_drawn(&report, "compare-latency-cdf");
}

#[test]
fn the_page_is_self_contained_and_embeds_the_data() {
    let mut doc = ssd_doc(4, true);
    doc["workload"]["name"] = json!("</script><script>alert(1)</script>");
    let big: Vec<u64> = (0..10_000).map(|i| i % 3).collect();
    doc["device"]["block_wear"][0]["erase_counts_per_block"] = json!(big);
    let report = render(&[run(doc)]);
    // SVG's namespace is a name, never fetched.
    let html = &report
        .html
        .replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
    for outside in ["http://", "https://", "<link", "src=", "@import", "url("] {
        assert!(
            !html.contains(outside),
            "the page refers outside itself: {outside}"
        );
    }
    assert!(
        !html.contains("<script>alert"),
        "markup from a document must be escaped"
    );
    let start = html.find("id=\"storsim-data\">").unwrap() + "id=\"storsim-data\">".len();
    let end = start + html[start..].find("</script>").unwrap();
    let data: Value = serde_json::from_str(&html[start..end]).unwrap();
    assert_eq!(data[0]["kind"], "simulate");
    assert_eq!(data[0]["document"]["seed"], 7);
    // Ten thousand erase counts became their frequencies: 0, 1 and 2, each about a third.
    let wear = &data[0]["document"]["device"]["block_wear"][0];
    assert!(wear.get("erase_counts_per_block").is_none());
    assert_eq!(
        wear["erase_count_blocks"],
        json!([[0, 3334], [1, 3333], [2, 3333]])
    );
}

#[test]
fn data_marks_leave_out_axes_and_legends() {
    let axis = r#"<polyline fill="none" stroke-width="1" points="78,359 83,359 90,1 "/>"#;
    // Everything from the legend's box on is the legend: a solid sample, a dashed one whose
    // dashes are as long as a data line's, a marker and a bar chart's swatch.
    let legend = concat!(
        r##"<rect x="606" opacity="0.85" fill="#FFFFFF" stroke="none"/>"##,
        r#"<polyline fill="none" stroke-width="2" points="1,2 21,2 "/>"#,
        r#"<polyline fill="none" stroke-width="2" points="1,9 9,9 "/>"#,
        r#"<polyline fill="none" stroke-width="2" points="14,9 21,9 "/>"#,
        r#"<circle cx="11" cy="16" r="4"/>"#,
        r##"<rect x="1" fill="#0072B2" stroke="none"/>"##,
    );
    let curve = r#"<polyline fill="none" stroke-width="2" points="1,2 3,4 5,6 "/>"#;
    let level = r#"<polyline fill="none" stroke-width="2" points="1,2 300,2 "/>"#;
    let dash = r#"<polyline fill="none" stroke-width="2" points="1,2 9,2 "/>"#;
    let background = r##"<rect x="0" fill="#FFFFFF" stroke="none"/>"##;
    let bar = r##"<rect x="0" fill="#0072B2" stroke="none"/>"##;
    assert_eq!(data_marks(&format!("{axis}{background}{legend}")), 0);
    let all = format!("{axis}{curve}{level}{dash}{background}{bar}{legend}");
    assert_eq!(data_marks(&all), 4);
    // A chart drawn without data shows no marks.
    let empty = chart::xy(&chart::XyChart {
        title: "t".into(),
        x: chart::Axis::linear("x"),
        y: chart::Axis::linear("y"),
        lines: Vec::new(),
        legend: chart::Legend::UpperLeft,
    });
    assert_eq!(data_marks(&empty), 0, "{empty}");
}

#[test]
fn plots_render_to_png() {
    let report = render(&[run(ssd_doc(4, false))]);
    let png = plot_png(&report.plots[0]).unwrap();
    assert_eq!(&png[1..4], b"PNG");
    // The text is drawn: without its <text> elements the picture differs.
    let mut bare = report.plots[0].clone();
    while let Some(start) = bare.svg.find("<text") {
        let end = start + bare.svg[start..].find("</text>").unwrap() + "</text>".len();
        bare.svg.replace_range(start..end, "");
    }
    if std::path::Path::new("/usr/share/fonts").exists() {
        assert_ne!(png, plot_png(&bare).unwrap(), "the PNG has no text");
    } else {
        storsim_testenv::missing("no fonts in /usr/share/fonts (Debian fonts-dejavu-core)");
    }
    assert!(plot_svg(&report.plots[0]).starts_with("<?xml"));
}

#[test]
fn cosim_documents_get_their_clock() {
    let mut doc = ssd_doc(2, true);
    doc["program"] = json!({"argv": ["dd"]});
    doc["kind"] = json!("cosim");
    doc["clock_series"] = json!({"real_ns": [0, 1_000_000_000, 2_000_000_000],
        "virtual_ns": [0, 500_000_000, 3_000_000_000u64],
        "paused_ns": [0, 0, 0], "skipped_ns": [0, 0, 0]});
    let report = render(&[run(doc)]);
    assert_drawn(&report, "run1-cosim-clock");
    assert!(report.html.contains("<th>program</th><td>dd</td>"));
}

/// Every number of `v` replaced, with probability `p`, by an extreme or wrong-typed value.
fn spoil(v: &Value, rng: &mut storsim_core::Prng, p: u64) -> Value {
    let extremes = [
        json!(0),
        json!(-1),
        json!(1e308),
        json!(-1e308),
        json!(5e-324),
        json!(u64::MAX),
        json!(i64::MIN),
        json!(null),
        json!("x"),
        json!([]),
        json!({}),
        json!(true),
    ];
    match v {
        // The shape's own numbers stay, so that most spoiled documents pass the input checks
        // and reach the plots.
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| match k.as_str() {
                    "schema" | "windows" | "window_ns" => (k.clone(), v.clone()),
                    _ => (k.clone(), spoil(v, rng, p)),
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(|v| spoil(v, rng, p)).collect()),
        Value::Number(_) if rng.below(100) < p => {
            extremes[rng.below(extremes.len() as u64) as usize].clone()
        }
        other => other.clone(),
    }
}

#[test]
fn spoiled_documents_are_refused_or_drawn_never_a_panic() {
    // Each kind of document, its numbers replaced at random by extremes (1e308, -1, huge
    // integers, strings, nulls): the report either refuses it with an error or draws it;
    // a panic, or a loop in the plotting library's tick marks, fails the test.
    let seed = 23;
    let mut rng = storsim_core::Prng::new(seed);
    let mut hdd = ssd_doc(4, true);
    hdd["device"]["counters"] = json!({"seeks": 10, "mean_seek_cylinders": 300.0,
        "seek_cylinders_hist_1": 3, "seek_cylinders_hist_2_3": 7, "busy_ns": 1e9,
        "cache_read_hits": 2, "cache_read_misses": 8, "seek_ns": 1e8, "rotation_ns": 2e8,
        "transfer_ns": 3e7});
    let docs = [ssd_doc(4, true), ssd_doc(32, true), hdd];
    let mut drawn = 0;
    for round in 0..200 {
        let doc = &docs[round % docs.len()];
        let p = [1, 5, 20, 60][round % 4];
        let spoiled = spoil(doc, &mut rng, p);
        if let Ok(run) = Run::from_value("spoiled.json", spoiled) {
            let report = render(&[run, Run::from_value("good.json", doc.clone()).unwrap()]);
            assert!(
                report.html.contains("</html>"),
                "seed {seed}, round {round}"
            );
            drawn += 1;
        }
    }
    assert!(
        drawn > 10,
        "seed {seed}: only {drawn} spoiled documents were drawn"
    );
}

#[test]
fn the_flows_table_shows_each_column_to_its_precision() {
    let flow = |name: &str, iops: f64, bytes_per_s: f64, mean_ns: f64, p99_ns: f64, slowdown| {
        let mut s = summary(0);
        s["requests"] = json!(123_456);
        s["iops"] = json!(iops);
        s["bandwidth_bytes_per_s"] = json!(bytes_per_s);
        s["latency_ns"]["mean"] = json!(mean_ns);
        s["latency_ns"]["p99"] = json!(p99_ns);
        json!({"name": name, "class": "high", "summary": s, "slowdown": slowdown})
    };
    let doc = json!({"schema": 1, "version": "0.1.0", "seed": 1,
        "device": {"name": "stec-zeus", "model": "linear", "counters": {}, "block_wear": []},
        "workload": {"name": "w"}, "summary": summary(5000),
        "flows": [flow("small", 5181.6, 21_225_300.0, 12_345.6, 98_765.4, 1.234_56),
                  flow("large", 123_456.7, 9_999_600.0, 1_234_567.0, 987.0, 12.0)],
        "fairness": 0.102_88});
    let html = render(&[run(doc)]).html;
    let row = |name: &str| {
        let start = html.find(&format!("<td>{name}</td>")).unwrap();
        html[start..start + html[start..].find("</tr>").unwrap()].to_string()
    };
    // Requests whole; IOPS and MB/s to four significant figures (a whole part is never
    // rounded away, a carry adds no figure); latencies in µs to three; slowdown to hundredths.
    assert_eq!(
        row("small"),
        "<td>small</td><td>high</td><td>123456</td><td>5182</td><td>21.23</td>\
         <td>12.3</td><td>98.8</td><td>1.23</td>"
    );
    assert_eq!(
        row("large"),
        "<td>large</td><td>high</td><td>123456</td><td>123457</td><td>10.00</td>\
         <td>1235</td><td>0.987</td><td>12.00</td>"
    );
    assert!(
        html.contains("</th><td>0.103</td></tr>"),
        "the fairness to thousandths"
    );
}

#[test]
fn a_run_of_several_flows_gets_their_table_and_their_cdfs() {
    let flow = |name: &str, p99: u64, slowdown: f64| {
        json!({"name": name, "class": "high", "summary": summary(p99),
               "alone_summary": summary(p99 / 2), "slowdown": slowdown})
    };
    let doc = json!({"schema": 1, "version": "0.1.0", "seed": 1,
        "device": {"name": "stec-zeus", "model": "linear", "counters": {}, "block_wear": []},
        "workload": {"name": "w"}, "summary": summary(5000),
        "flows": [flow("reader<1>", 4000, 1.5), flow("writer", 9000, 3.0)],
        "fairness": 0.5});
    let report = render(&[run(doc)]);
    assert_drawn(&report, "run1-flows-latency-cdf");
    // Each flow shared and alone: four curves, each named in the legend.
    let plot = report
        .plots
        .iter()
        .find(|p| p.id == "run1-flows-latency-cdf")
        .unwrap();
    for label in [
        "reader&lt;1&gt;",
        "reader&lt;1&gt; alone",
        "writer",
        "writer alone",
    ] {
        assert!(plot.svg.contains(label), "{label} missing from the legend");
    }
    assert!(report.html.contains("id=\"run1-flows\""));
    assert!(report.html.contains("<td>reader&lt;1&gt;</td>"));
    assert!(
        report.html.contains("<td>0.500</td>"),
        "the fairness is shown to thousandths"
    );
    // A run of one flow has neither.
    let single = render(&[run(ssd_doc(4, false))]);
    assert!(!single.html.contains("class=\"flows\""));
    assert!(!ids(&single).iter().any(|id| id.contains("flows")));
}
