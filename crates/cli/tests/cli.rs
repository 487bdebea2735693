//! The `storsim` binary end to end: the quick-start command, determinism, the JSON schema users
//! script against, and the exit status and message for bad input.

mod common;

use common::{stderr, storsim, temp_dir};
use serde_json::Value;
use std::process::Output;

fn simulate_json(device: &str, workload: &str, extra: &[&str]) -> (Value, String) {
    let tmp = temp_dir("json");
    let dir = tmp.path();
    let out = dir.join(format!("{}.json", workload.len() + extra.len()));
    let out_s = out.to_str().unwrap();
    let mut args = vec![
        "simulate",
        "--device",
        device,
        "--workload",
        workload,
        "--json",
        out_s,
        "--quiet",
    ];
    args.extend_from_slice(extra);
    let o = storsim(&args);
    assert!(o.status.success(), "storsim failed: {}", stderr(&o));
    let text = std::fs::read_to_string(&out).unwrap();
    (serde_json::from_str(&text).unwrap(), text)
}

#[test]
fn quick_start_runs_the_bundled_example() {
    let o = storsim(&[
        "simulate",
        "--device",
        "stec-zeus",
        "--workload",
        "examples/oltp-sample.msr.csv",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("requests  5000 (read"), "{text}");
    assert!(text.contains("seed 1"), "the seed must be printed: {text}");
}

#[test]
fn quick_start_report_of_the_bundled_example() {
    // The README's second command: the same run, as a page of plots.
    let dir = temp_dir("quick-start-report");
    let page = dir.path().join("report.html");
    let o = storsim(&[
        "simulate",
        "--device",
        "stec-zeus",
        "--workload",
        "examples/oltp-sample.msr.csv",
        "--report",
        page.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let html = std::fs::read_to_string(&page).unwrap();
    for id in [
        "run1-latency-cdf",
        "run1-latency-over-time",
        "run1-throughput-over-time",
    ] {
        assert!(
            html.contains(&format!("id=\"{id}\"")),
            "{id} missing from the page"
        );
    }
}

#[test]
fn same_command_gives_byte_identical_json() {
    for workload in [
        "examples/oltp-sample.msr.csv",
        "synthetic:rw=randrw,bs=4k-64k,iodepth=16,requests=20000,dist=zipf:1.1",
        "synthetic:rw=randwrite,bs=8k,iops=5000,requests=20000",
    ] {
        let (_, a) = simulate_json("stec-zeus", workload, &["--seed", "7"]);
        let (_, b) = simulate_json("stec-zeus", workload, &["--seed", "7"]);
        assert_eq!(a, b, "{workload}");
    }
    let (_, a) = simulate_json(
        "stec-zeus",
        "synthetic:rw=randrw,bs=4k,iodepth=4,requests=5000",
        &["--seed", "1"],
    );
    let (_, b) = simulate_json(
        "stec-zeus",
        "synthetic:rw=randrw,bs=4k,iodepth=4,requests=5000",
        &["--seed", "2"],
    );
    assert_ne!(
        a, b,
        "a different seed must change a random workload's results"
    );
}

#[test]
fn json_has_the_documented_fields() {
    let (v, _) = simulate_json(
        "stec-zeus",
        "synthetic:rw=randrw,bs=4k,iodepth=2,requests=3000",
        &["--seed", "5"],
    );
    assert_eq!(v["seed"], 5);
    assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
    // Run facts are always present, zero or empty when nothing happened.
    let run = &v["run"];
    assert_eq!(run["requests_completed"], 3000);
    assert_eq!(run["refused_requests"], 0);
    assert_eq!(run["first_refused"], Value::Array(Vec::new()));
    assert_eq!(run["wrapped_requests"], 0);
    let s = &v["summary"];
    assert_eq!(s["requests"], 3000);
    for key in ["iops", "bandwidth_bytes_per_s"] {
        assert!(s[key].as_f64().unwrap() > 0.0, "{key}");
    }
    for part in [
        &s["latency_ns"],
        &s["read"]["latency_ns"],
        &s["write"]["latency_ns"],
    ] {
        let get = |k: &str| part[k].as_f64().unwrap_or_else(|| panic!("missing {k}"));
        assert!(get("p50") <= get("p90") && get("p90") <= get("p99"));
        assert!(get("p99") <= get("p999") && get("p999") <= get("max"));
        assert!(get("mean") > 0.0);
    }
    let reads = s["read"]["requests"].as_u64().unwrap();
    let writes = s["write"]["requests"].as_u64().unwrap();
    assert_eq!(reads + writes, 3000);
    let cdf = s["latency_cdf"].as_array().unwrap();
    assert!(cdf.len() > 10);
    let fractions: Vec<f64> = cdf
        .iter()
        .map(|p| p["fraction"].as_f64().unwrap())
        .collect();
    assert!(fractions.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(*fractions.last().unwrap(), 1.0);
    assert_eq!(v["device"]["model"], "linear");
    let c = &v["device"]["counters"];
    assert_eq!(
        c["rr_requests"].as_u64().unwrap() + c["sr_requests"].as_u64().unwrap(),
        reads
    );
}

#[test]
fn requests_csv_has_one_line_per_request_with_consistent_times() {
    let tmp = temp_dir("csv");
    let dir = tmp.path();
    let csv = dir.join("requests.csv");
    let o = storsim(&[
        "simulate",
        "--device",
        "stec-zeus",
        "--workload",
        "examples/oltp-sample.msr.csv",
        "--requests-csv",
        csv.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    // A workload of one flow has no flow column (the CSV of a workload of several has).
    assert_eq!(
        lines.next().unwrap(),
        "id,op,offset_bytes,len_bytes,arrival_ns,service_start_ns,finish_ns,queueing_ns,\
         service_ns,latency_ns"
    );
    let mut n = 0;
    for line in lines {
        let f: Vec<u64> = line.split(',').filter_map(|x| x.parse().ok()).collect();
        // id, offset, len, arrival, start, finish, queueing, service, latency (op is text).
        let (arrival, start, finish) = (f[3], f[4], f[5]);
        assert!(arrival <= start && start <= finish, "{line}");
        assert_eq!(f[6], start - arrival);
        assert_eq!(f[7], finish - start);
        assert_eq!(f[8], finish - arrival);
        n += 1;
    }
    assert_eq!(n, 5000);
}

#[test]
fn malformed_trace_names_file_and_line_and_exits_2() {
    let tmp = temp_dir("bad");
    let dir = tmp.path();
    let trace = dir.join("bad.msr.csv");
    std::fs::write(
        &trace,
        "128166385295514663,hm,0,Write,9056014336,2048,2833\n128166385295514878,hm,0,Write,notanumber,512,2617\n",
    )
    .unwrap();
    let o = storsim(&[
        "simulate",
        "--device",
        "stec-zeus",
        "--workload",
        trace.to_str().unwrap(),
        "--format",
        "msr",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("bad.msr.csv") && err.contains("line 2"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");

    let o = storsim(&[
        "simulate",
        "--device",
        "stec-zeus",
        "--workload",
        trace.to_str().unwrap(),
        "--format",
        "msr",
        "--skip-bad",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("1 malformed records skipped"));
}

#[test]
fn unknown_device_key_names_key_and_file_and_exits_2() {
    let tmp = temp_dir("cfg");
    let dir = tmp.path();
    let file = dir.join("dev.toml");
    std::fs::write(
        &file,
        "preset = \"stec-zeus\"\n[linear]\nservers = 1\nlatency = 3\n",
    )
    .unwrap();
    let o = storsim(&[
        "simulate",
        "--device",
        file.to_str().unwrap(),
        "--workload",
        "examples/oltp-sample.msr.csv",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("dev.toml") && err.contains("latency") && err.contains("line 4"),
        "{err}"
    );
}

#[test]
fn requests_past_the_device_end_fail_clearly_or_wrap() {
    let tmp = temp_dir("range");
    let dir = tmp.path();
    let trace = dir.join("far.msr.csv");
    // 100 GB offset on a 400 MiB device.
    std::fs::write(&trace, "128166385295514663,hm,0,Read,100000000000,4096,1\n").unwrap();
    let o = storsim(&[
        "simulate",
        "--device",
        "uhs1-sd",
        "--workload",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("far.msr.csv") && err.contains("line 1") && err.contains("past the end"),
        "{err}"
    );
    let o = storsim(&[
        "simulate",
        "--device",
        "uhs1-sd",
        "--workload",
        trace.to_str().unwrap(),
        "--wrap",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn bad_options_exit_2_without_panicking() {
    for args in [
        vec![
            "simulate",
            "--device",
            "no-such-device",
            "--workload",
            "examples/oltp-sample.msr.csv",
        ],
        vec![
            "simulate",
            "--device",
            "stec-zeus",
            "--workload",
            "synthetic:rw=sideways",
        ],
        vec![
            "simulate",
            "--device",
            "stec-zeus",
            "--workload",
            "/nonexistent/trace.csv",
        ],
        vec![
            "simulate",
            "--device",
            "stec-zeus",
            "--workload",
            "examples/oltp-sample.msr.csv",
            "--format",
            "nope",
        ],
        vec![
            "simulate",
            "--device",
            "stec-zeus",
            "--workload",
            "examples/oltp-sample.msr.csv",
            "--time-scale",
            "-1",
        ],
        vec![
            "simulate",
            "--device",
            "stec-zeus",
            "--workload",
            "examples/oltp-sample.msr.csv",
            "--replay",
            "closed",
        ],
        vec!["inspect", "/nonexistent/trace.csv"],
    ] {
        let o = storsim(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("error"), "{args:?}");
        assert!(!stderr(&o).contains("panicked"), "{args:?}");
    }
}

/// Inputs that push the simulated clock or the engine's queues past their limits: each is a
/// clear error with exit status 2 that names the record, never a panic or an abort.
#[test]
fn clock_and_depth_overflows_are_errors_not_crashes() {
    let tmp = temp_dir("overflow");
    let dir = tmp.path();
    let late = dir.join("late.trace");
    // MQSim convention: ns timestamps; the second record is 584 years in.
    std::fs::write(&late, "0 0 0 8 1\n18446744073709551000 0 8 8 1\n").unwrap();
    let late = late.to_str().unwrap();
    let synthetic_late = "synthetic:rw=randread,bs=4k,thinktime=18446744073709551615ns,requests=10";
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec![
                "--workload",
                "examples/oltp-sample.msr.csv",
                "--time-scale",
                "1e12",
            ],
            "clock's limit",
        ),
        (vec!["--workload", late, "--format", "mqsim"], "line 2"),
        (
            vec!["--workload", synthetic_late],
            "request 0: the request would arrive",
        ),
        (
            vec![
                "--workload",
                "examples/oltp-sample.msr.csv",
                "--replay",
                "closed",
                "--iodepth",
                "4294967295",
            ],
            "queue depth",
        ),
        (
            vec![
                "--workload",
                "synthetic:rw=randread,bs=4k,iodepth=4294967295",
            ],
            "queue depth",
        ),
    ];
    for (extra, expected) in cases {
        let mut args = vec!["simulate", "--device", "stec-zeus", "--quiet"];
        args.extend_from_slice(&extra);
        let o = storsim(&args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(expected),
            "{args:?}: expected {expected:?} in {err}"
        );
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

/// Under test stderr is a pipe, not a terminal: a run long enough to draw progress many times
/// over leaves only the closing line there.
#[test]
fn progress_is_silent_when_stderr_is_not_a_terminal() {
    let o = storsim(&[
        "simulate",
        "--device",
        "stec-zeus",
        "--workload",
        "synthetic:rw=randread,bs=4k,iodepth=4,requests=1500000",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(!err.contains('\r'), "{err:?}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{err:?}");
    assert!(
        lines[0].starts_with("storsim: simulated 1500000 requests in "),
        "{err:?}"
    );
}

#[test]
fn a_device_missing_from_the_trace_is_named() {
    let tmp = temp_dir("devices");
    let dir = tmp.path();
    let trace = dir.join("two.trace");
    std::fs::write(&trace, "0 3 0 8 1\n1000 5 8 8 0\n").unwrap();
    let trace = trace.to_str().unwrap();
    for command in ["simulate", "inspect"] {
        let mut args = vec![command];
        if command == "simulate" {
            args.extend(["--device", "stec-zeus", "--workload"]);
        }
        args.extend([trace, "--format", "mqsim", "--trace-devices", "4"]);
        let o = storsim(&args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{command}: {err}");
        assert!(
            err.contains("device 4 does not appear") && err.contains("its devices are 3, 5"),
            "{command}: {err}"
        );
    }
    let (v, _) = simulate_json(
        "stec-zeus",
        trace,
        &["--format", "mqsim", "--trace-devices", "5"],
    );
    assert_eq!(v["summary"]["requests"], 1);
}

#[test]
fn a_past_the_end_request_larger_than_the_device_does_not_suggest_wrap() {
    let tmp = temp_dir("huge");
    let dir = tmp.path();
    let trace = dir.join("huge.trace");
    std::fs::write(&trace, "0 0 0 999999999999 1\n").unwrap();
    let o = storsim(&[
        "simulate",
        "--device",
        "stec-zeus",
        "--workload",
        trace.to_str().unwrap(),
        "--format",
        "mqsim",
        "--wrap",
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("line 1") && !err.contains("--wrap"), "{err}");
}

#[test]
fn inspect_reports_skipped_records() {
    let bad = "crates/workload/tests/data/msr_bad.csv";
    let o = storsim(&["inspect", bad, "--skip-bad"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    let line = text
        .lines()
        .find(|l| l.contains("malformed records skipped"))
        .unwrap_or_else(|| panic!("no skipped line in {text}"));
    let skipped: u64 = line.split_whitespace().next().unwrap().parse().unwrap();
    assert!(skipped > 0);
    let tmp = temp_dir("inspect-skip");
    let json = tmp.path().join("c.json");
    let o = storsim(&[
        "inspect",
        bad,
        "--skip-bad",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["skipped_records"], skipped);
}

#[test]
fn inspect_reports_the_fraction_of_random_writes() {
    // MQSim: time_ns dev sector sectors type(0 = write, 1 = read). Four writes: the first
    // (random: it continues nothing), one that continues it across a read elsewhere, one that
    // jumps (random), one that continues that.
    let tmp = temp_dir("inspect-random-writes");
    let trace = tmp.path().join("writes.mqsim");
    std::fs::write(
        &trace,
        "0 0 0 8 0\n1 0 900 8 1\n2 0 8 8 0\n3 0 64 8 0\n4 0 72 8 0\n",
    )
    .unwrap();
    let json = tmp.path().join("c.json");
    let trace = trace.to_str().unwrap();
    let o = storsim(&["inspect", trace, "--json", json.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["random_write_fraction"], 0.5);
    let text = String::from_utf8_lossy(&o.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with("random writes"))
        .unwrap_or_else(|| panic!("no random-write line in {text}"));
    assert!(line.contains("50.00 % of writes"), "{line}");
}

/// A synthetic spec with a span is inspected as the requests it generates: a bssplit's sizes
/// and percentage_random's random writes show in the characterisation.
#[test]
fn inspect_characterises_the_requests_of_a_synthetic_spec() {
    let tmp = temp_dir("inspect-synthetic");
    let json = tmp.path().join("c.json");
    let spec = "synthetic:rw=randwrite,bssplit=4k/30:64k/70,percentage_random=40,span=1g,\
                requests=20000,seed=5";
    let o = storsim(&["inspect", spec, "--json", json.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["requests"], 20000);
    assert!(v["trace"]
        .as_str()
        .unwrap()
        .contains("bssplit=4k/30:64k/70"));
    let bucket = |bytes: u64| {
        v["size_histogram"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["upper_bound_bytes"] == bytes)
            .unwrap()["requests"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(bucket(4096) + bucket(65536), 20000);
    // Binomial counts of 20000 draws: standard errors 0.0032 and 0.0035; 0.02 is about six.
    let small = bucket(4096) as f64 / 20000.0;
    assert!((small - 0.3).abs() < 0.02, "4 KiB share {small}");
    let random = v["random_write_fraction"].as_f64().unwrap();
    assert!((random - 0.4).abs() < 0.02, "random writes {random}");

    // Without a span there is nothing for the requests to fill; a closed loop with a duration
    // has no end without a device.
    for (spec, key) in [
        ("synthetic:rw=randwrite,requests=10", "span"),
        ("synthetic:rw=randwrite,span=1g,duration=1s", "requests"),
        ("vdbench:random-read-small", "span"),
    ] {
        let o = storsim(&["inspect", spec]);
        assert_eq!(o.status.code(), Some(2), "{spec}: {}", stderr(&o));
        assert!(stderr(&o).contains(key), "{spec}: {}", stderr(&o));
    }
}

#[test]
fn closed_loop_replay_of_a_trace_overrides_its_timestamps() {
    let (v, _) = simulate_json(
        "stec-zeus",
        "examples/oltp-sample.msr.csv",
        &["--replay", "closed", "--iodepth", "1"],
    );
    let s = &v["summary"];
    // At depth 1 nothing ever waits, so latency equals service.
    assert_eq!(s["queueing_ns"]["max"], 0);
    assert_eq!(v["workload"]["replay"]["mode"], "closed");
    let busy = v["device"]["counters"]["busy_ns"].as_f64().unwrap();
    assert_eq!(
        s["elapsed_ns"].as_f64().unwrap(),
        busy,
        "back-to-back service fills the run"
    );
}

#[test]
fn inspect_reports_the_characterisation_as_json() {
    let tmp = temp_dir("inspect");
    let dir = tmp.path();
    let out = dir.join("c.json");
    let o = storsim(&[
        "inspect",
        "examples/oltp-sample.msr.csv",
        "--json",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(v["requests"], 5000);
    let reads = v["per_op"]["read"].as_u64().unwrap();
    let writes = v["per_op"]["write"].as_u64().unwrap();
    assert_eq!(reads + writes, 5000);
    let pct = v["read_percent"].as_f64().unwrap();
    assert!((pct - 100.0 * reads as f64 / 5000.0).abs() < 1e-9);
    let hist: u64 = v["size_histogram"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["requests"].as_u64().unwrap())
        .sum();
    assert_eq!(hist, 5000);
    // The document says which format the trace was read as and what detection saw.
    assert_eq!(v["format"], "msr");
    let evidence = v["format_detected_from"].as_str().unwrap();
    assert!(evidence.contains("fits the layout of msr"), "{evidence}");
    let per_volume: u64 = v["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|volume| volume["requests"].as_u64().unwrap())
        .sum();
    assert_eq!(per_volume, 5000);
}

/// A trace of the workload crate's samples, by absolute path.
fn workload_sample(name: &str) -> String {
    format!(
        "{}/../workload/tests/data/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// simulate says on standard error which format it detected and from what; a file that two
/// formats fit stops with exit status 2 naming the --format values; --volume selects.
#[test]
fn simulate_says_what_it_detected_and_refuses_to_guess() {
    let linnos = workload_sample("linnos_sample.trace");
    let o = storsim(&["simulate", "--device", "stec-zeus", "--workload", &linnos]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(
            "read as linnos (detected: line 2 fits the layout of disksim-ascii, mqsim, linnos"
        ),
        "{err}"
    );
    // Named, it is not announced.
    let o = storsim(&[
        "simulate",
        "--device",
        "stec-zeus",
        "--workload",
        &linnos,
        "--format",
        "linnos",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("detected"), "{}", stderr(&o));

    let tmp = temp_dir("ambiguous");
    let short = tmp.path().join("short.trace");
    std::fs::write(&short, "0.5 0 4096 4096 1\n0.7 0 8192 4096 0\n").unwrap();
    let o = storsim(&[
        "simulate",
        "--device",
        "stec-zeus",
        "--workload",
        short.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--format disksim-ascii or --format linnos"),
        "{}",
        stderr(&o)
    );

    let alibaba = workload_sample("alibaba_sample.csv");
    let json = tmp.path().join("volumes.json");
    let o = storsim(&[
        "inspect",
        &alibaba,
        "--volume",
        "3,7",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let devices: Vec<u64> = v["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|volume| volume["device"].as_u64().unwrap())
        .collect();
    assert_eq!(devices, vec![3, 7]);
    assert_eq!(v["requests"], 3);
}

#[test]
fn presets_lists_every_builtin_device() {
    let o = storsim(&["presets"]);
    assert!(o.status.success());
    let text = String::from_utf8(o.stdout).unwrap();
    for name in ["stec-zeus", "uhs1-sd", "wisconsin-usb"] {
        assert!(
            text.lines().any(|l| l.starts_with(name)),
            "{name} missing from:\n{text}"
        );
    }
}

/// `--device`'s help is built from the model table, so a new model is listed without an edit
/// to the argument definitions; every preset is listed by `storsim presets` with its model.
#[test]
fn device_help_lists_every_model_and_presets_every_preset() {
    for command in ["simulate", "emulate", "cosim"] {
        let o = storsim(&[command, "--help"]);
        assert!(o.status.success(), "{}", stderr(&o));
        let text = String::from_utf8(o.stdout).unwrap();
        for model in storsim_config::models() {
            assert!(
                text.contains(model.name),
                "{command} --help does not list {}:\n{text}",
                model.name
            );
        }
    }
    let o = storsim(&["presets"]);
    let text = String::from_utf8(o.stdout).unwrap();
    for p in storsim_config::presets() {
        assert!(
            text.lines()
                .any(|l| l.split_whitespace().take(2).eq([p.name, p.model()])),
            "{} missing from:\n{text}",
            p.name
        );
    }
}

/// `--format`'s help is built from the format table, so a new format is listed without an
/// edit to the argument definitions.
#[test]
fn format_help_lists_every_trace_format() {
    for command in ["simulate", "inspect"] {
        let o = storsim(&[command, "--help"]);
        assert!(o.status.success(), "{}", stderr(&o));
        let text = String::from_utf8(o.stdout).unwrap();
        for format in storsim_workload::trace::TraceFormat::all() {
            assert!(
                text.contains(format.name()),
                "{command} --help does not list {format}:\n{text}"
            );
        }
    }
}

/// Runs `args` with `--parse-thread on` and `--parse-thread off` and returns both outputs and,
/// when `json` is set, the JSON each wrote to a file of its own.
fn both_ways(args: &[&str], json: bool) -> [(Output, Option<String>); 2] {
    let tmp = temp_dir("parse-thread");
    let dir = tmp.path();
    let tag = args.join(" ").len();
    ["on", "off"].map(|mode| {
        let out = dir.join(format!("{tag}-{}-{mode}.json", args.len()));
        let out_s = out.to_str().unwrap().to_string();
        let mut full: Vec<&str> = args.to_vec();
        full.extend_from_slice(&["--parse-thread", mode]);
        if json {
            full.extend_from_slice(&["--json", &out_s]);
        }
        let o = storsim(&full);
        let text = json.then(|| without_command_line(&out, mode));
        (o, text)
    })
}

/// The JSON document at `path` as it was written, except for its `command_line`, which names
/// `--parse-thread MODE` and so differs between the two ways by design; empty if none was
/// written.
fn without_command_line(path: &std::path::Path, mode: &str) -> String {
    let Ok(text) = std::fs::read_to_string(path) else {
        return String::new();
    };
    let mut doc: Value = serde_json::from_str(&text).unwrap();
    let command = doc.as_object_mut().unwrap().remove("command_line").unwrap();
    let words: Vec<&str> = command
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert!(
        words.windows(2).any(|w| w == ["--parse-thread", mode]),
        "{words:?}"
    );
    serde_json::to_string_pretty(&doc).unwrap()
}

#[test]
fn the_parse_thread_changes_no_byte_of_the_results() {
    let data = "crates/workload/tests/data";
    let msr_bad = format!("{data}/msr_bad.csv");
    let mqsim = format!("{data}/mqsim_sample.trace");
    let blkparse = format!("{data}/blkparse_sample.txt");
    let runs: Vec<Vec<&str>> = vec![
        vec!["--workload", "examples/oltp-sample.msr.csv"],
        // Stopping early: the counters reported are those of the records read so far.
        vec![
            "--workload",
            "examples/oltp-sample.msr.csv",
            "--max-requests",
            "1234",
        ],
        vec!["--workload", &msr_bad, "--skip-bad", "--wrap"],
        vec![
            "--workload",
            &msr_bad,
            "--skip-bad",
            "--wrap",
            "--max-requests",
            "2",
        ],
        // Several devices laid out one after another.
        vec!["--workload", &mqsim, "--wrap"],
        vec!["--workload", &blkparse, "--wrap"],
        vec!["--workload", &blkparse, "--wrap", "--blkparse-event", "Q"],
    ];
    for run in runs {
        let mut args = vec!["simulate", "--device", "stec-zeus", "--quiet"];
        args.extend_from_slice(&run);
        let [(on, on_json), (off, off_json)] = both_ways(&args, true);
        assert!(on.status.success(), "{run:?}: {}", stderr(&on));
        assert!(off.status.success(), "{run:?}: {}", stderr(&off));
        let (on_json, off_json) = (on_json.unwrap(), off_json.unwrap());
        assert!(on_json.contains("\"summary\""), "{run:?}: {on_json}");
        assert_eq!(on_json, off_json, "{run:?}");
    }
    let v: Value = serde_json::from_str(
        &both_ways(
            &[
                "simulate",
                "--device",
                "stec-zeus",
                "--quiet",
                "--workload",
                &msr_bad,
                "--skip-bad",
                "--wrap",
            ],
            true,
        )[0]
        .1
        .clone()
        .unwrap(),
    )
    .unwrap();
    assert!(
        v["workload"]["skipped_records"].as_u64().unwrap() > 0,
        "{v}"
    );

    // The same message and exit status for a malformed trace, with and without the sizing pass.
    for devices in ["concat", "overlay"] {
        let args = [
            "simulate",
            "--device",
            "stec-zeus",
            "--workload",
            &msr_bad,
            "--trace-devices",
            devices,
        ];
        let [(on, _), (off, _)] = both_ways(&args, false);
        assert_eq!(on.status.code(), Some(2), "{}", stderr(&on));
        assert_eq!(off.status.code(), Some(2), "{}", stderr(&off));
        assert_eq!(stderr(&on), stderr(&off));
        assert!(
            stderr(&on).contains("msr_bad.csv: line 2"),
            "{}",
            stderr(&on)
        );
    }

    // inspect reads through the same path.
    for extra in [&[][..], &["--skip-bad"][..]] {
        let mut args = vec!["inspect", &msr_bad, "--trace-devices", "overlay"];
        args.extend_from_slice(extra);
        let [(on, on_json), (off, off_json)] = both_ways(&args, true);
        assert_eq!(on.status.code(), off.status.code());
        assert_eq!(stderr(&on), stderr(&off));
        assert_eq!(on_json, off_json);
    }
}

/// Ctrl-C stops a simulation cleanly: the engine's cancel token, set by the signal, ends the
/// run after the requests in flight, the reports hold what completed and say the run was
/// cancelled, and the exit status is 130.
#[test]
fn ctrl_c_stops_a_simulation_and_reports_what_completed() {
    use rustix::process::{kill_process, Pid, Signal};
    let tmp = temp_dir("sim-ctrl-c");
    let (json, csv) = (tmp.path().join("run.json"), tmp.path().join("requests.csv"));
    let requests: u64 = 1 << 40;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_storsim"))
        .args(["simulate", "--device", "stec-zeus", "--quiet", "--workload"])
        .arg(format!(
            "synthetic:rw=randread,bs=4k,iodepth=4,requests={requests}"
        ))
        .arg("--json")
        .arg(&json)
        .arg("--requests-csv")
        .arg(&csv)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Requests written to the CSV mean the run has started, and with it the handler (installed
    // first thing): no sleep of a length that a slow machine could outlast.
    while std::fs::metadata(&csv).map_or(true, |m| m.len() < 4096) {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the simulation ended before it was interrupted"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    kill_process(Pid::from_child(&child), Signal::INT).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("interrupted after"),
        "{}",
        stderr(&out)
    );
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let completed = report["run"]["requests_completed"].as_u64().unwrap();
    assert_eq!(report["run"]["cancelled"], true, "{report}");
    assert!(completed > 0 && completed < requests, "{completed}");
    assert_eq!(report["run"]["requests_issued"].as_u64(), Some(completed));
    assert_eq!(report["summary"]["requests"].as_u64(), Some(completed));
    // The CSV holds one line per completed request, after its header.
    let lines = std::fs::read_to_string(&csv).unwrap().lines().count() as u64;
    assert_eq!(lines, completed + 1);
}

#[test]
fn a_reader_that_stops_early_ends_the_output_quietly() {
    // `storsim presets | head -1`, `storsim simulate ... | head`: the reader closes the pipe
    // before storsim writes. The write fails with EPIPE; storsim stops with success, as a
    // program killed by SIGPIPE would stop, and never panics.
    for args in [
        vec!["presets"],
        vec![
            "simulate",
            "--device",
            "stec-zeus",
            "--workload",
            "synthetic:rw=randread,requests=100",
        ],
    ] {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_storsim"))
            .args(&args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let o = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert_eq!(o.status.code(), Some(0), "{args:?}: {err}");
    }
}
