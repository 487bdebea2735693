//! `storsim validate disksim` and `validate trace` end to end: replays of traces with measured
//! times, the demerit, the side-by-side figures and errors per operation, the CDFs, the report,
//! and refusals of bad input.

mod common;

use common::{stderr, storsim, temp_dir};
use serde_json::Value;
use std::path::Path;

/// A device whose every access takes exactly `a_us`, whatever its size or direction.
fn constant_device(dir: &Path, a_us: f64) -> String {
    let path = dir.join(format!("constant-{a_us}.toml"));
    let pattern = format!("{{ a_us = {a_us}, b_us_per_kib = 0 }}");
    std::fs::write(
        &path,
        format!(
            "model = \"linear\"\ncapacity_bytes = 20_000_000_000\n[linear]\nsr = {pattern}\n\
             sw = {pattern}\nrr = {pattern}\nrw = {pattern}\n"
        ),
    )
    .unwrap();
    path.to_str().unwrap().to_string()
}

fn validate_json(device: &str, trace: &str, dir: &Path) -> Value {
    let out = dir.join("v.json");
    let csv = dir.join("v.csv");
    let o = storsim(&[
        "validate",
        "disksim",
        "--device",
        device,
        "--trace",
        trace,
        "--json",
        out.to_str().unwrap(),
        "--requests-csv",
        csv.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("demerit"), "{text}");
    serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap()
}

/// `storsim import disksim` of DiskSim's HP C2490A into `dir`; returns the device file.
fn import_hp_c2490a(valid: &Path, dir: &Path) -> std::path::PathBuf {
    let toml = dir.join("hp_c2490a.toml");
    let o = storsim(&[
        "import",
        "disksim",
        valid.join("hp_c2490a.parv").to_str().unwrap(),
        "-o",
        toml.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    toml
}

#[test]
fn a_constant_device_against_a_written_trace() {
    let tmp = temp_dir("validate-constant");
    let dir = tmp.path();
    let trace = dir.join("t.trace");
    // Measured access times 1..=9 ms with think times; the model answers 5 ms every time.
    let mut text = String::new();
    for i in 1..=9u32 {
        text += &format!(
            "{} Miss {} 8 {}.0 {}.0\n",
            if i % 2 == 0 { "W" } else { "R" },
            i * 1000,
            i * 1000,
            i * 250
        );
    }
    std::fs::write(&trace, text).unwrap();
    let device = constant_device(dir, 5000.0);
    let v = validate_json(&device, trace.to_str().unwrap(), dir);
    assert_eq!(v["requests"], 9);
    assert!((v["simulated"]["mean_ms"].as_f64().unwrap() - 5.0).abs() < 1e-9);
    assert!((v["measured"]["mean_ms"].as_f64().unwrap() - 5.0).abs() < 1e-9);
    assert_eq!(v["simulated"]["max_ms"].as_f64().unwrap(), 5.0);
    assert_eq!(v["measured"]["max_ms"].as_f64().unwrap(), 9.0);
    // Same mean, different spread: the quantile functions differ by |i - 5| ms over ninths of
    // the fraction axis, so the RMS distance is about sqrt(mean of squares) = sqrt(60/9) ms,
    // less the smoothing of linear interpolation within buckets.
    let demerit = v["demerit_ms"].as_f64().unwrap();
    assert!(
        demerit > 2.0 && demerit < (60.0f64 / 9.0).sqrt() + 0.1,
        "{demerit}"
    );

    let csv = std::fs::read_to_string(dir.join("v.csv")).unwrap();
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows[0], "request,simulated_ms,measured_ms");
    assert_eq!(rows.len(), 10);
    assert_eq!(rows[3], "2,5,3");
}

#[test]
fn the_demerit_bounds_the_difference_of_means_on_a_real_trace() {
    let Some(trace) = storsim_testenv::shared("disksim-valid/cheetah9LP.trace") else {
        return;
    };
    let tmp = temp_dir("validate-real");
    let dir = tmp.path();
    let device = constant_device(dir, 4000.0);
    let v = validate_json(&device, trace.to_str().unwrap(), dir);
    assert_eq!(v["requests"], 10_000);
    // The mean is the integral of the quantile function, so the RMS distance between two
    // quantile functions is at least the difference of the means (up to the 1 % bucketing).
    let gap = (v["simulated"]["mean_ms"].as_f64().unwrap()
        - v["measured"]["mean_ms"].as_f64().unwrap())
    .abs();
    let demerit = v["demerit_ms"].as_f64().unwrap();
    assert!(demerit >= gap * 0.99, "demerit {demerit} < mean gap {gap}");
    assert!(v["measured"]["mean_ms"].as_f64().unwrap() > 1.0);
}

#[test]
fn bad_input_is_refused_with_the_line() {
    let tmp = temp_dir("validate-bad");
    let dir = tmp.path();
    let trace = dir.join("bad.trace");
    std::fs::write(
        &trace,
        "R Miss 100 8 1000.0 10.0\nR Maybe 100 8 1000.0 10.0\n",
    )
    .unwrap();
    let device = constant_device(dir, 100.0);
    let o = storsim(&[
        "validate",
        "disksim",
        "--device",
        &device,
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("line 2") && e.contains("bad.trace"), "{e}");

    let o = storsim(&[
        "validate",
        "disksim",
        "--device",
        "no-such-device",
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no-such-device"));
}

#[test]
fn an_imported_disksim_drive_validates_against_its_trace() {
    let Some(valid) = storsim_testenv::shared("disksim-valid") else {
        return;
    };
    let tmp = temp_dir("validate-import");
    let dir = tmp.path();
    let toml = import_hp_c2490a(&valid, dir);
    let text = std::fs::read_to_string(&toml).unwrap();
    assert!(text.contains("model = \"hdd\""), "{text}");
    let v = validate_json(
        toml.to_str().unwrap(),
        valid.join("hp_c2490a.trace").to_str().unwrap(),
        dir,
    );
    assert_eq!(v["device"]["model"], "hdd");
    // The drive's capacity is its DiskSim block count.
    assert_eq!(v["device"]["capacity_bytes"], 4_165_272u64 * 512);
    // A mechanical model of this drive lands within a millisecond of the measured mean
    // access time (about 12.5 ms); the demerit bars per drive are in the config crate's
    // disksim_validation test.
    let sim = v["simulated"]["mean_ms"].as_f64().unwrap();
    let meas = v["measured"]["mean_ms"].as_f64().unwrap();
    assert!(
        (sim - meas).abs() < 1.0,
        "simulated {sim} ms, measured {meas} ms"
    );
}

#[test]
fn import_refuses_what_is_not_a_disksim_drive() {
    let tmp = temp_dir("import-bad");
    let dir = tmp.path();
    let not_parv = dir.join("x.parv");
    std::fs::write(&not_parv, "disksim_global Global {\n  Init Seed = 42\n}\n").unwrap();
    let out = dir.join("x.toml");
    let o = storsim(&[
        "import",
        "disksim",
        not_parv.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("x.parv"), "{}", stderr(&o));
    assert!(!out.exists());

    std::fs::write(
        &not_parv,
        "disksim_disk D {\n  Model = source gone.model\n}\n",
    )
    .unwrap();
    let o = storsim(&[
        "import",
        "disksim",
        not_parv.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("x.parv:2") && e.contains("gone.model"), "{e}");
}

/// `validate disksim` takes a DiskSim `.parv` file and DiskSim-style overrides, as DiskSim's
/// own command line does (`disk0 "Enable caching in buffer" 0`): the stock file scores what
/// its imported preset scores, and turning the cache off changes the drive's times.
#[test]
fn a_parv_device_validates_with_disksim_overrides() {
    let Some(valid) = storsim_testenv::shared("disksim-valid") else {
        return;
    };
    let tmp = temp_dir("validate-parv-set");
    let dir = tmp.path();
    let parv = valid.join("hp_c2490a.parv");
    let trace = valid.join("hp_c2490a.trace");
    let run = |device: &str, set: &[&str]| -> Value {
        let out = dir.join("set.json");
        let mut args = vec![
            "validate",
            "disksim",
            "--device",
            device,
            "--trace",
            trace.to_str().unwrap(),
            "--json",
            out.to_str().unwrap(),
        ];
        for s in set {
            args.extend(["--set", s]);
        }
        let o = storsim(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap()
    };
    let preset = run("disksim-hp-c2490a", &[]);
    let stock = run(parv.to_str().unwrap(), &[]);
    assert_eq!(stock["demerit_ms"], preset["demerit_ms"]);
    let off = run(
        parv.to_str().unwrap(),
        &["disk0:Enable caching in buffer=0"],
    );
    let name = off["device"]["name"].as_str().unwrap();
    assert!(
        name.ends_with("hp_c2490a.parv [disk0:Enable caching in buffer=0]"),
        "{name}"
    );
    // Without the cache no read hits the buffer: every access pays the media.
    let mean = |v: &Value| v["simulated"]["mean_ms"].as_f64().unwrap();
    assert!(
        mean(&off) > mean(&stock),
        "{} vs {}",
        mean(&off),
        mean(&stock)
    );

    // Overrides name DiskSim's parameters: a storsim device cannot take them.
    let o = storsim(&[
        "validate",
        "disksim",
        "--device",
        "disksim-hp-c2490a",
        "--trace",
        trace.to_str().unwrap(),
        "--set",
        "disk0:Fast write level=0",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("only a .parv device"), "{}", stderr(&o));
    // A malformed override says what the syntax is.
    let o = storsim(&[
        "import",
        "disksim",
        parv.to_str().unwrap(),
        "-o",
        "-",
        "--set",
        "disk0 Fast write level 0",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("COMPONENT:PARAMETER=VALUE"),
        "{}",
        stderr(&o)
    );
    // `import disksim` writes the overridden drive.
    let o = storsim(&[
        "import",
        "disksim",
        parv.to_str().unwrap(),
        "-o",
        "-",
        "--set",
        "disk0:Enable caching in buffer=0",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("[hdd.cache]\nenabled = false"), "{text}");
}

/// Runs `validate trace` with `extra` options and returns the JSON document and the text.
fn validate_trace(device: &str, trace: &Path, extra: &[&str], dir: &Path) -> (Value, String) {
    let out = dir.join("vt.json");
    let mut args = vec![
        "validate",
        "trace",
        "--device",
        device,
        "--trace",
        trace.to_str().unwrap(),
        "--json",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = storsim(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let doc = serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap();
    (doc, text)
}

fn f(v: &Value, pointer: &str) -> f64 {
    v.pointer(pointer)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("{pointer} missing in {v}"))
}

/// Four MSR requests 1 ms apart on a device that takes exactly 125 µs for each, so nothing
/// queues and every simulated time is 0.125 ms. The reads measured 1250 ticks (125 µs, equal),
/// the writes 1875 ticks (187.5 µs, 62.5 µs more).
const MSR_KNOWN: &str = "\
Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime
0,h,0,Read,0,4096,1250
10000,h,0,Write,4096,4096,1875
20000,h,0,Read,8192,4096,1250
30000,h,0,Write,12288,8192,1875
";

#[test]
fn msr_response_times_against_a_device_of_known_latency() {
    let tmp = temp_dir("validate-trace-msr");
    let dir = tmp.path();
    let trace = dir.join("known.csv");
    std::fs::write(&trace, MSR_KNOWN).unwrap();
    let device = constant_device(dir, 125.0);
    let csv = dir.join("requests.csv");
    let (v, text) = validate_trace(
        &device,
        &trace,
        &["--requests-csv", csv.to_str().unwrap()],
        dir,
    );
    assert_eq!(v["kind"], "validate");
    assert_eq!(v["command"], "trace");
    assert_eq!(v["format"], "msr");
    assert_eq!(v["replay"]["mode"], "open");
    assert_eq!(
        (v["requests"].as_u64(), v["requests_simulated"].as_u64()),
        (Some(4), Some(4))
    );
    assert_eq!(v["requests_unmeasured"], 0);
    // Reads: measured equals simulated, so every error and the demerit are 0.
    let read = &v["per_op"]["read"];
    assert_eq!(read["requests"], 2);
    assert_eq!(f(read, "/demerit_ms"), 0.0);
    for k in [
        "mean_ms",
        "p10_ms",
        "p50_ms",
        "p99_ms",
        "max_ms",
        "mean_abs_request_ms",
    ] {
        assert_eq!(f(read, &format!("/error/{k}")), 0.0, "{k}");
    }
    // Writes: simulated 62.5 µs short. The errors are exactly -0.0625 ms. DiskSim's demerit
    // buckets whole µs in buckets 2 µs wide between 100 and 200 µs: 125 µs falls in [124, 126)
    // and 187 µs (187.5 truncated) in [186, 188), so the two CDFs are ramps of the same width
    // 62 µs apart and the demerit is 0.062 ms.
    let write = &v["per_op"]["write"];
    for k in ["mean_ms", "p10_ms", "p50_ms", "p99_ms", "max_ms"] {
        assert!(
            (f(write, &format!("/error/{k}")) + 0.0625).abs() < 1e-12,
            "{k}"
        );
    }
    assert!((f(write, "/error/mean_abs_request_ms") - 0.0625).abs() < 1e-12);
    assert!((f(write, "/error/mean_pct") + 100.0 / 3.0).abs() < 1e-9);
    assert!((f(write, "/demerit_ms") - 0.062).abs() < 1e-9);
    // All four: the mean error halves; the demerit lies between the two.
    let all = &v["per_op"]["all"];
    assert!((f(all, "/error/mean_ms") + 0.03125).abs() < 1e-12);
    assert_eq!(f(all, "/demerit_ms"), f(&v, "/demerit_ms"));
    assert!(f(&v, "/demerit_ms") > 0.0 && f(&v, "/demerit_ms") < 0.062);
    // Both CDFs, at the simulate document's fractions, nearest rank.
    let sim = v["simulated"]["cdf"].as_array().unwrap();
    let meas = v["measured"]["cdf"].as_array().unwrap();
    assert_eq!((sim.len(), meas.len()), (103, 103));
    assert!(sim.iter().all(|p| p["latency_ms"] == 0.125));
    assert_eq!(meas[50]["latency_ms"], 0.125);
    assert_eq!(meas[51]["latency_ms"], 0.1875);
    assert_eq!(meas[102]["fraction"], 1.0);
    // The text gives the errors per operation.
    assert!(text.contains("msr, open loop"), "{text}");
    let write_row = text.lines().find(|l| l.starts_with("write (ms)")).unwrap();
    assert!(write_row.contains("-0.062"), "{text}");
    // The same writes on the device set to take their measured 187.5 µs: no error left.
    let (v, _) = validate_trace(
        &device,
        &trace,
        &[
            "--set",
            "linear.sw.a_us=187.5",
            "--set",
            "linear.rw.a_us=187.5",
        ],
        dir,
    );
    assert_eq!(f(&v, "/demerit_ms"), 0.0);
    assert_eq!(f(&v, "/per_op/write/error/mean_abs_request_ms"), 0.0);
    assert!(v["device"]["name"]
        .as_str()
        .unwrap()
        .ends_with("[linear.sw.a_us=187.5, linear.rw.a_us=187.5]"));
    // The CSV names each request's line and operation.
    let csv = std::fs::read_to_string(csv).unwrap();
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows[0], "request,position,op,simulated_ms,measured_ms");
    assert_eq!(rows[2], "1,3,write,0.125,0.1875");
}

#[test]
fn closed_loop_replay_and_measured_times_equal_to_the_model_give_demerit_zero() {
    let tmp = temp_dir("validate-trace-closed");
    let dir = tmp.path();
    let trace = dir.join("equal.csv");
    // All four requests at the same instant: open loop, one server, they queue; closed loop
    // at depth 1, each takes exactly its 125 µs.
    let text = "0,h,0,Read,0,4096,1250\n0,h,0,Write,4096,4096,1250\n\
                0,h,0,Read,8192,4096,1250\n0,h,0,Write,12288,4096,1250\n";
    std::fs::write(&trace, text).unwrap();
    let device = constant_device(dir, 125.0);
    let (v, _) = validate_trace(
        &device,
        &trace,
        &["--replay", "closed", "--iodepth", "1"],
        dir,
    );
    assert_eq!(v["replay"]["mode"], "closed");
    assert_eq!(v["replay"]["depth"], 1);
    assert_eq!(f(&v, "/demerit_ms"), 0.0);
    assert_eq!(f(&v, "/per_op/all/error/max_ms"), 0.0);
    // Open loop, the same trace: the fourth request waits for three others on one server.
    let (v, _) = validate_trace(&device, &trace, &[], dir);
    assert!((f(&v, "/simulated/max_ms") - 0.5).abs() < 1e-12);
    assert!(f(&v, "/demerit_ms") > 0.1);
}

#[test]
fn blkparse_dispatch_completion_pairs_with_lone_events_counted() {
    let tmp = temp_dir("validate-trace-blkparse");
    let dir = tmp.path();
    let trace = dir.join("known.blkparse");
    // Three dispatches completing 125 µs later, one completing 250 µs later, a completion whose
    // dispatch came before the trace and a dispatch whose completion came after it.
    let text = "\
8,0 0 1 0.000000000 1 C W 99 + 8 [0]
8,0 0 2 0.001000000 1 D R 0 + 8 [a]
8,0 0 3 0.001125000 0 C R 0 + 8 [0]
8,0 0 4 0.002000000 1 D W 8 + 8 [a]
8,0 0 5 0.002125000 0 C W 8 + 8 [0]
8,0 0 6 0.003000000 1 D R 16 + 8 [a]
8,0 0 7 0.003125000 0 C R 16 + 8 [0]
8,0 0 8 0.004000000 1 D W 24 + 8 [a]
8,0 0 9 0.004250000 0 C W 24 + 8 [0]
8,0 0 10 0.005000000 1 D R 32 + 8 [a]
";
    std::fs::write(&trace, text).unwrap();
    let device = constant_device(dir, 125.0);
    let (v, text) = validate_trace(&device, &trace, &[], dir);
    assert_eq!(v["format"], "blkparse");
    assert_eq!(v["requests_simulated"], 5);
    assert_eq!(v["requests"], 4);
    assert_eq!(v["requests_unmeasured"], 1);
    assert_eq!(v["completions_unmatched"], 1);
    assert_eq!(f(&v, "/per_op/read/demerit_ms"), 0.0);
    assert_eq!(f(&v, "/per_op/read/error/max_ms"), 0.0);
    // One write measured 250 µs: nearest-rank p50 of the two writes is the 125 µs one.
    assert!((f(&v, "/per_op/write/error/mean_ms") + 0.0625).abs() < 1e-12);
    assert_eq!(f(&v, "/per_op/write/error/p50_ms"), 0.0);
    assert!((f(&v, "/per_op/write/error/max_ms") + 0.125).abs() < 1e-12);
    assert!(
        text.contains("1  simulated requests without a measured time"),
        "{text}"
    );
    assert!(
        text.contains("1  completions in the trace without their request"),
        "{text}"
    );
}

#[test]
fn an_emulator_recording_is_compared_from_arrival_to_reply() {
    let tmp = temp_dir("validate-trace-record");
    let dir = tmp.path();
    let trace = dir.join("r.rec");
    // Replies that left 125 µs after arrival (one meant 120 µs and left late: what the host
    // saw counts), and a flush, which the constant device answers at once, measured at 0.
    let text = "\
# storsim-record v1
arrival_ns,op,offset_bytes,len_bytes,intended_finish_ns,actual_finish_ns
0,R,0,4096,125000,125000
1000000,W,4096,4096,1120000,1125000
2000000,F,0,0,2000000,2000000
";
    std::fs::write(&trace, text).unwrap();
    let device = constant_device(dir, 125.0);
    let (v, _) = validate_trace(&device, &trace, &[], dir);
    assert_eq!(v["format"], "storsim-record");
    assert_eq!(v["requests"], 3);
    assert_eq!(f(&v, "/demerit_ms"), 0.0);
    assert_eq!(f(&v, "/per_op/all/error/mean_abs_request_ms"), 0.0);
    assert_eq!(f(&v, "/per_op/write/measured/max_ms"), 0.125);
}

#[test]
fn a_disksim_validate_trace_gives_validate_disksims_figures() {
    let Some(valid) = storsim_testenv::shared("disksim-valid") else {
        return;
    };
    let tmp = temp_dir("validate-trace-disksim");
    let dir = tmp.path();
    let toml = import_hp_c2490a(&valid, dir);
    let trace = valid.join("hp_c2490a.trace");
    let disksim = validate_json(toml.to_str().unwrap(), trace.to_str().unwrap(), dir);
    let (v, _) = validate_trace(toml.to_str().unwrap(), &trace, &[], dir);
    // The trace's own pacing is DiskSim's: closed loop, one outstanding.
    assert_eq!(v["replay"]["mode"], "closed");
    assert_eq!(v["requests"], disksim["requests"]);
    assert_eq!(v["simulated"]["mean_ms"], disksim["simulated"]["mean_ms"]);
    // The measured times are read as whole nanoseconds here and as decimal µs there.
    assert!((f(&v, "/demerit_ms") - f(&disksim, "/demerit_ms")).abs() < 1e-6);
}

#[test]
fn the_msr_sample_validates_in_the_documented_form_and_draws_its_cdfs() {
    let Some(trace) = storsim_testenv::shared("traces/msr_hm_0_sample/msr-cambridge1-sample.csv")
    else {
        return;
    };
    let tmp = temp_dir("validate-trace-sample");
    let dir = tmp.path();
    let report = dir.join("v.html");
    let (v, _) = validate_trace(
        "stec-zeus",
        &trace,
        &["--report", report.to_str().unwrap()],
        dir,
    );
    // 1,000 records of disk 0, 508 reads and 492 writes, every one with a response time.
    assert_eq!(v["requests"], 1000);
    assert_eq!(v["requests_unmeasured"], 0);
    assert_eq!(v["per_op"]["read"]["requests"], 508);
    assert_eq!(v["per_op"]["write"]["requests"], 492);
    // The measured side is the trace's own: its mean is the mean ResponseTime column.
    let text = std::fs::read_to_string(&trace).unwrap();
    let ticks: Vec<f64> = text
        .lines()
        .map(|l| l.rsplit(',').next().unwrap().parse().unwrap())
        .collect();
    let mean_ms = ticks.iter().sum::<f64>() / ticks.len() as f64 / 1e4;
    assert!((f(&v, "/measured/mean_ms") - mean_ms).abs() < 1e-9);
    for side in ["simulated", "measured"] {
        let cdf = v[side]["cdf"].as_array().unwrap();
        let xs: Vec<f64> = cdf
            .iter()
            .map(|p| p["latency_ms"].as_f64().unwrap())
            .collect();
        assert!(
            xs.windows(2).all(|w| w[0] <= w[1]),
            "{side} CDF not monotone"
        );
        assert_eq!(xs.last(), Some(&f(&v, &format!("/{side}/max_ms"))));
    }
    let d = f(&v, "/demerit_ms");
    assert!(d.is_finite() && d >= 0.0);
    // The simulated side is the replay `simulate` makes of the trace, collected apart.
    let sim = common::simulate_json("stec-zeus", trace.to_str().unwrap(), "validate-simulate");
    let mean_ns = sim["summary"]["latency_ns"]["mean"].as_f64().unwrap();
    assert_eq!(sim["summary"]["requests"], 1000);
    assert!((f(&v, "/simulated/mean_ms") * 1e6 - mean_ns).abs() < 1e-6 * mean_ns);
    let page = std::fs::read_to_string(report).unwrap();
    for id in [
        "run1-validation-cdf",
        "run1-validation-cdf-read",
        "run1-validation-cdf-write",
    ] {
        assert!(
            page.contains(&format!("id=\"{id}\"")),
            "no plot {id} in the page"
        );
    }
}

/// Runs `validate trace` on `trace`, which it must refuse as bad input (exit 2).
fn refused(device: &str, trace: &Path) -> std::process::Output {
    let o = storsim(&[
        "validate",
        "trace",
        "--device",
        device,
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    o
}

#[test]
fn traces_without_measured_times_and_unmatched_files_are_refused() {
    let tmp = temp_dir("validate-trace-bad");
    let dir = tmp.path();
    let device = constant_device(dir, 125.0);
    // An SPC trace measures nothing.
    let spc = dir.join("t.spc");
    std::fs::write(&spc, "0,0,4096,r,0.000000\n0,8,4096,w,0.001000\n").unwrap();
    let o = refused(&device, &spc);
    assert!(
        stderr(&o).contains("no measured response times"),
        "{}",
        stderr(&o)
    );
    // An MSR line without its ResponseTime is an error naming the line.
    let msr = dir.join("t.csv");
    std::fs::write(&msr, "0,h,0,Read,0,4096,1250\n10,h,0,Read,0,4096,\n").unwrap();
    let o = refused(&device, &msr);
    let e = stderr(&o);
    assert!(e.contains("line 2") && e.contains("ResponseTime"), "{e}");
    // A blkparse trace whose dispatches never complete has nothing to compare.
    let blk = dir.join("t.blkparse");
    std::fs::write(&blk, "8,0 0 1 0.000000000 1 D R 0 + 8 [a]\n").unwrap();
    let o = refused(&device, &blk);
    assert!(
        stderr(&o).contains("none of the 1 simulated requests"),
        "{}",
        stderr(&o)
    );
}
