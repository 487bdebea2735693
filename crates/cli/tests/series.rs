//! `simulate --window`: the time series' windows as asked, or none, and a width that makes no
//! sense refused as bad input. What the windows hold is checked against the summary in
//! json_schema.rs, and the windowing itself in the stats crate's unit tests.

mod common;

use common::{stderr, storsim, temp_dir};
use serde_json::Value;

const WORKLOAD: &str = "synthetic:rw=randrw,bs=8k,iodepth=4,requests=3000,seed=3";

fn simulate(window: &str) -> Value {
    let dir = temp_dir("series");
    let out = dir.path().join("run.json");
    let o = storsim(&[
        "simulate",
        "--quiet",
        "--device",
        "stec-zeus",
        "--workload",
        WORKLOAD,
        "--window",
        window,
        "--json",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "--window {window}: {}", stderr(&o));
    serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap()
}

#[test]
fn a_fixed_window_gives_one_window_per_width_of_the_run() {
    let run = simulate("2ms");
    let series = &run["series"];
    assert_eq!(series["window_ns"], 2_000_000);
    let end_ns = run["run"]["end_ns"].as_u64().unwrap();
    assert_eq!(series["end_ns"].as_u64(), Some(end_ns));
    assert_eq!(series["windows"].as_u64(), Some(end_ns.div_ceil(2_000_000)));
}

#[test]
fn automatic_windows_are_a_few_hundred() {
    let run = simulate("auto");
    let n = run["series"]["windows"].as_u64().unwrap();
    assert!((256..=512).contains(&n), "{n} windows");
    // Automatic widths are the first width, 2^16 ns, doubled.
    let width = run["series"]["window_ns"].as_u64().unwrap();
    assert!(width >= 1 << 16 && width.is_power_of_two(), "{width}");
}

#[test]
fn window_off_writes_no_series_and_changes_nothing_else() {
    let mut off = simulate("off");
    let mut auto = simulate("auto");
    assert_eq!(off["series"], Value::Null);
    assert!(auto["series"].is_object());
    for run in [&mut off, &mut auto] {
        let object = run.as_object_mut().unwrap();
        object.remove("series");
        object.remove("command_line");
    }
    assert_eq!(off, auto, "recording the series changed the results");
}

#[test]
fn a_window_that_makes_no_sense_is_refused_naming_the_option() {
    for bad in ["0ms", "10", "soon", "-1ms"] {
        let window = format!("--window={bad}");
        let o = storsim(&[
            "simulate",
            "--device",
            "stec-zeus",
            "--workload",
            WORKLOAD,
            &window,
        ]);
        assert_eq!(o.status.code(), Some(2), "--window {bad}");
        let err = stderr(&o);
        assert!(err.contains("--window"), "--window {bad}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn cosim_takes_a_fixed_window_in_virtual_time() {
    let dir = temp_dir("series-cosim");
    let dev = dir.path().join("dev");
    std::fs::create_dir_all(&dev).unwrap();
    let out = dir.path().join("report.json");
    let script = format!(
        "dd if=/dev/zero of={}/f bs=64k count=64 oflag=direct 2>/dev/null",
        dev.display()
    );
    let o = storsim(&[
        "cosim",
        "--device",
        "flashsim-2009",
        "--window",
        "1ms",
        "--dir",
        dev.to_str().unwrap(),
        "--quiet",
        "--cpu-speed",
        "inf",
        "--report",
        out.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        &script,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let run: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(run["series"]["window_ns"], 1_000_000, "{}", run["series"]);
    let end_ns = run["series"]["end_ns"].as_u64().unwrap();
    assert_eq!(
        run["series"]["windows"].as_u64(),
        Some(end_ns.div_ceil(1_000_000))
    );
}

#[test]
fn emulate_takes_a_fixed_window_in_wall_clock_time() {
    use common::system::{emulate_with_qemu_io, have};
    if !have("qemu-io") {
        storsim_testenv::missing("qemu-io not found: the emulate series needs an NBD client");
        return;
    }
    let dir = temp_dir("series-emulate");
    let out = emulate_with_qemu_io(
        dir.path(),
        &["--window", "20ms"],
        &["write 0 1m", "read 0 1m"],
    );
    let run: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(run["series"]["clock"], "wall");
    assert_eq!(run["series"]["window_ns"], 20_000_000, "{}", run["series"]);
}
