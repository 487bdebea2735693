//! `storsim validate disksim` end to end: closed-loop replay of a validate trace, the demerit
//! and the side-by-side figures, and refusals of bad input.

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
    let toml = dir.join("hp_c2490a.toml");
    let o = storsim(&[
        "import",
        "disksim",
        valid.join("hp_c2490a.parv").to_str().unwrap(),
        "-o",
        toml.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
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
