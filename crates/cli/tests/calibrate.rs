//! `storsim calibrate` end to end: models in virtual time, files on tmpfs and on the machine's
//! disk, the refusals, Ctrl-C, and the closed loop through storsim's own emulator over FUSE.

mod common;

use common::system::{have, run_ok, Emulator, Loop, Mounted};
use common::{stderr, storsim, temp_dir};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

/// The closed-loop test measures wall-clock latencies through the emulator; every other test
/// here keeps a core or the disk busy (mkfs, models at full speed, file I/O), so each takes
/// this lock and none runs beside it.
static BUSY: Mutex<()> = Mutex::new(());

fn busy() -> std::sync::MutexGuard<'static, ()> {
    BUSY.lock().unwrap_or_else(|e| e.into_inner())
}

/// A small plan that still has four sizes per pattern to fit and four to hold out.
const SMALL_PLAN: &[&str] = &[
    "--sizes",
    "4k,8k,16k,32k,64k,128k,256k,512k",
    "--zones",
    "3",
    "--repeats",
    "2",
    "--requests-per-run",
    "4",
    "--warmup",
    "4",
];

fn calibrate(args: &[&str]) -> std::process::Output {
    let mut all = vec!["calibrate"];
    all.extend_from_slice(args);
    storsim(&all)
}

fn calibrate_ok(args: &[&str]) -> String {
    let out = calibrate(args);
    assert!(
        out.status.success(),
        "calibrate {args:?} failed ({:?}): {}",
        out.status.code(),
        stderr(&out)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The fit of `pattern` in a JSON report: (A µs, B µs/KiB, r²).
fn fit(report: &serde_json::Value, pattern: &str) -> (f64, f64, f64) {
    let p = report["calibration"]["patterns"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pattern"] == pattern)
        .unwrap_or_else(|| panic!("no {pattern} in {report}"));
    let f = &p["fit"];
    (
        f["a_us"].as_f64().unwrap(),
        f["b_us_per_kib"].as_f64().unwrap(),
        f["r_squared"].as_f64().unwrap(),
    )
}

fn within(actual: f64, truth: f64, share: f64) -> bool {
    (actual - truth).abs() <= share * truth.abs()
}

#[test]
fn a_linear_model_in_virtual_time_is_recovered_and_the_outputs_are_deterministic() {
    let _busy = busy();
    let tmp = temp_dir("cal-model");
    let dir = tmp.path();
    let outputs = |tag: &str| {
        let (model, report, csv) = (
            dir.join(format!("{tag}.toml")),
            dir.join(format!("{tag}.json")),
            dir.join(format!("{tag}.csv")),
        );
        let mut args = vec!["--simulate", "stec-zeus", "--allow-writes"];
        args.extend_from_slice(SMALL_PLAN);
        args.extend_from_slice(&[
            "--out",
            model.to_str().unwrap(),
            "--report",
            report.to_str().unwrap(),
            "--csv",
            csv.to_str().unwrap(),
        ]);
        let text = calibrate_ok(&args);
        (text, model, report, csv)
    };
    let (text, model, report, csv) = outputs("a");
    assert!(text.contains("Linear fit"), "{text}");
    let r = json(&report);
    // The STEC Zeus fit table (seed 001): the model is exact, so the fit is too, up to the
    // model's rounding to whole nanoseconds.
    for (pattern, a, b) in [
        ("sr", 127.5, 4.005),
        ("rr", 230.6, 3.987),
        ("sw", 2167.0, 4.96),
        ("rw", 770.0, 5.382),
    ] {
        let (fa, fb, r2) = fit(&r, pattern);
        assert!(within(fa, a, 1e-4), "{pattern}: A {fa} vs {a}");
        assert!(within(fb, b, 1e-4), "{pattern}: B {fb} vs {b}");
        assert!(r2 > 0.999999, "{pattern}: r² {r2}");
        let p = r["calibration"]["patterns"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["pattern"] == pattern)
            .unwrap();
        let v = &p["validation"];
        assert_eq!(v["held_out_sizes"].as_array().unwrap().len(), 4, "{v}");
        assert!(v["linear_mean_error_pct"].as_f64().unwrap() < 0.01, "{v}");
    }
    // The written model simulates, and a second run is byte-identical.
    let sim = storsim(&[
        "simulate",
        "--device",
        model.to_str().unwrap(),
        "--workload",
        "synthetic:rw=randread,bs=4k,requests=100",
    ]);
    assert!(sim.status.success(), "{}", stderr(&sim));
    let (_, model2, report2, csv2) = outputs("b");
    for (x, y) in [(&model, &model2), (&report, &report2), (&csv, &csv2)] {
        let (x, y) = (std::fs::read(x).unwrap(), std::fs::read(y).unwrap());
        let strip = |b: Vec<u8>| String::from_utf8(b).unwrap().replace("/b.", "/a.");
        assert_eq!(strip(x), strip(y));
    }
    let csv_text = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(csv_text.lines().count(), 1 + 4 * 8, "{csv_text}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn the_table_and_step_models_are_written_from_what_was_measured() {
    let _busy = busy();
    let tmp = temp_dir("cal-table-step");
    let dir = tmp.path();
    let table = dir.join("table.toml");
    let mut args = vec![
        "--simulate",
        "uhs1-sd",
        "--allow-writes",
        "--model",
        "table",
    ];
    args.extend_from_slice(SMALL_PLAN);
    args.extend_from_slice(&["--out", table.to_str().unwrap(), "--holdout", "none"]);
    calibrate_ok(&args);
    let text = std::fs::read_to_string(&table).unwrap();
    assert!(text.contains("model = \"table\""), "{text}");
    assert_eq!(text.matches("[[table.row]]").count(), 8, "{text}");

    let step = dir.join("step.toml");
    let report = dir.join("step.json");
    calibrate_ok(&[
        "--simulate",
        "wisconsin-usb",
        "--allow-writes",
        "--model",
        "step",
        "--sizes",
        "4k,8k",
        "--zones",
        "1",
        "--step-run",
        "800",
        "--out",
        step.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
    ]);
    let text = std::fs::read_to_string(&step).unwrap();
    // The seed's schedules (Appendices A and B) come back from the measured staircase.
    assert!(
        text.contains("step_interval_requests = [32, 64, 128, 256]"),
        "{text}"
    );
    assert!(
        text.contains("step_interval_requests = [195, 256]"),
        "{text}"
    );
    assert!(text.contains("compensate_first_request = true"), "{text}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// docs/calibrate.md's example on an SSD model: the model is preconditioned with a sequential
/// fill first, so its reads find data and cost flash time. On a clean SSD they found none and
/// fitted as free (A = B = 0).
#[test]
fn calibrating_an_ssd_model_preconditions_it_so_reads_cost_flash_time() {
    let _busy = busy();
    let tmp = temp_dir("cal-ssd");
    let dir = tmp.path();
    let model = dir.join("tlc-linear.toml");
    let report = dir.join("tlc.json");
    let text = calibrate_ok(&[
        "--simulate",
        "tlc-nvme",
        "--allow-writes",
        "--out",
        model.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
    ]);
    assert!(text.contains("preconditioned"), "{text}");
    let r = json(&report);
    // tlc-nvme reads a page in 50 to 70 µs (by level) after a 5 µs controller overhead: a
    // read's fixed cost lies within those bounds, plus at most one 4 KiB transfer.
    for pattern in ["sr", "rr"] {
        let (a, b, r2) = fit(&r, pattern);
        assert!((55.0..=100.0).contains(&a), "{pattern}: A {a} µs");
        assert!(b > 0.0, "{pattern}: B {b}");
        assert!(r2 > 0.9, "{pattern}: r² {r2}");
    }
    // A clean start is refused for reads, saying why; a device with no SSD has nothing to
    // precondition.
    let out = model.to_str().unwrap();
    for (args, expected) in [
        (
            vec![
                "--simulate",
                "tlc-nvme",
                "--precondition",
                "clean",
                "--out",
                out,
            ],
            "no flash time",
        ),
        (
            vec![
                "--simulate",
                "stec-zeus",
                "--precondition",
                "fill",
                "--out",
                out,
            ],
            "holds no SSD",
        ),
    ] {
        let o = calibrate(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(expected), "{args:?}: {}", stderr(&o));
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn refusals_name_the_problem_and_exit_2() {
    let _busy = busy();
    let tmp = temp_dir("cal-refuse");
    let dir = tmp.path();
    let file = dir.join("target.img");
    std::fs::write(&file, vec![0u8; 1 << 20]).unwrap();
    let out_model = dir.join("m.toml");
    let out = out_model.to_str().unwrap();
    let target = file.to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--target", target, "--out", out], "--allow-writes"),
        (
            vec![
                "--target",
                "/no/such/file",
                "--patterns",
                "sr",
                "--out",
                out,
            ],
            "cannot open /no/such/file",
        ),
        (
            vec![
                "--target",
                dir.to_str().unwrap(),
                "--patterns",
                "sr",
                "--out",
                out,
            ],
            "is a directory",
        ),
        (
            vec!["--target", target, "--patterns", "sr,rr", "--out", out],
            "needs at least",
        ),
        (
            vec![
                "--target",
                target,
                "--patterns",
                "sr",
                "--zones",
                "4",
                "--out",
                out,
            ],
            "must be odd",
        ),
        (
            vec!["--target", target, "--patterns", "xx", "--out", out],
            "unknown pattern",
        ),
    ];
    for (args, expected) in cases {
        let o = calibrate(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(expected), "{args:?}: {}", stderr(&o));
        assert!(!out_model.exists(), "{args:?} wrote a model");
    }
    // The target was not touched.
    assert!(std::fs::read(&file).unwrap().iter().all(|&b| b == 0));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn writes_to_a_mounted_device_or_a_loop_backing_file_are_refused() {
    let _busy = busy();
    if !(have("losetup") && have("mkfs.ext4") && have("mount")) {
        return;
    }
    let tmp = temp_dir("cal-mounted");
    let dir = tmp.path();
    let image = dir.join("fs.img");
    std::fs::write(&image, vec![0u8; 32 << 20]).unwrap();
    let Some(lo) = Loop::attach(&image) else {
        return;
    };
    let out = dir.join("m.toml");
    let out = out.to_str().unwrap();
    // The file behind a loop device belongs to that device.
    let o = calibrate(&[
        "--target",
        image.to_str().unwrap(),
        "--allow-writes",
        "--out",
        out,
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("backs {}", lo.0)),
        "{}",
        stderr(&o)
    );

    run_ok("mkfs.ext4", &["-q", &lo.0]);
    let mounted = Mounted::new(&lo.0, &dir.join("mnt"));
    let o = calibrate(&["--target", &lo.0, "--allow-writes", "--out", out]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("mounted at {}", mounted.0.display())),
        "{}",
        stderr(&o)
    );
    // Reads of a mounted device are harmless and allowed.
    let mut args = vec![
        "--target",
        lo.0.as_str(),
        "--patterns",
        "sr,rr",
        "--out",
        out,
    ];
    args.extend_from_slice(SMALL_PLAN);
    calibrate_ok(&args);
    drop(mounted);
    drop(lo);
    std::fs::remove_dir_all(dir).unwrap();
}

/// Calibrates a 64 MiB file in `dir` with writes and checks the model simulates.
fn calibrate_a_file(dir: &Path) {
    let file = dir.join("target.img");
    // Sparse on purpose: calibrate writes it once before measuring reads.
    std::fs::File::create(&file)
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
    let model = dir.join("m.toml");
    let report = dir.join("r.json");
    let mut args = vec![
        "--target",
        file.to_str().unwrap(),
        "--allow-writes",
        "--iodepth",
        "1,4",
        "--sweep-requests",
        "200",
        "--out",
        model.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
    ];
    args.extend_from_slice(SMALL_PLAN);
    let text = calibrate_ok(&args);
    assert!(text.contains("Validation"), "{text}");
    let r = json(&report);
    assert!(r["stopped_early"].is_null(), "{r}");
    for pattern in ["sr", "rr", "sw", "rw"] {
        let (_, b, _) = fit(&r, pattern);
        assert!(b.is_finite(), "{pattern}");
    }
    assert_eq!(r["calibration"]["sweep"].as_array().unwrap().len(), 4);
    let sim = storsim(&[
        "simulate",
        "--device",
        model.to_str().unwrap(),
        "--workload",
        "synthetic:rw=randrw,bs=4k,requests=200",
    ]);
    assert!(sim.status.success(), "{}", stderr(&sim));
}

#[test]
fn a_file_on_tmpfs_and_one_on_the_machines_disk_calibrate_to_a_usable_model() {
    let _busy = busy();
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        let tmp = tempfile::Builder::new()
            .prefix(&format!("storsim-cal-{}-", std::process::id()))
            .tempdir_in(shm)
            .unwrap();
        let dir = tmp.path();
        calibrate_a_file(dir);
        std::fs::remove_dir_all(dir).unwrap();
    } else {
        storsim_testenv::missing("no /dev/shm (the tmpfs half of the test)");
    }
    // The build directory is on the machine's own disk, unlike /tmp on some systems.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cal-disk");
    std::fs::create_dir_all(&dir).unwrap();
    calibrate_a_file(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn ctrl_c_stops_cleanly_and_still_writes_what_was_measured() {
    let _busy = busy();
    let tmp = temp_dir("cal-sigint");
    let dir = tmp.path();
    let (model, report) = (dir.join("m.toml"), dir.join("r.json"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_storsim"))
        .args([
            "calibrate",
            "--simulate",
            "stec-zeus",
            "--patterns",
            "sr,rr",
            "--sizes",
            "4k,8k,16k,32k",
            "--repeats",
            "200000",
            "--out",
            model.to_str().unwrap(),
            "--report",
            report.to_str().unwrap(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    run_ok("kill", &["-INT", &child.id().to_string()]);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let r = json(&report);
    assert_eq!(r["stopped_early"], "interrupted", "{r}");
    let (a, b, _) = fit(&r, "sr");
    assert!(within(a, 127.5, 1e-3) && within(b, 4.005, 1e-3), "{a} {b}");
    assert!(std::fs::read_to_string(&model)
        .unwrap()
        .contains("stopped early (interrupted)"));
    std::fs::remove_dir_all(dir).unwrap();
}

/// A linear device with distinct (A, B) per pattern, of the order of a 2007 laptop disk:
/// A of 2-5 ms, 28-50 MB/s. The emulator's path through FUSE costs tens of µs, and not quite
/// additively: behind a slow device a request costs some 10-25 µs more than behind the
/// zero-latency baseline (a CPU woken from idle after the wait, caches gone cold), more on a
/// busy 2-core machine and at sizes above 128 KiB. At this scale that stays inside the 3 % the
/// test asks for.
const TRUTH: &str = r#"
model = "linear"
capacity_bytes = 268435456
[linear.sr]
a_us = 2000.0
b_us_per_kib = 20.0
[linear.rr]
a_us = 3000.0
b_us_per_kib = 24.0
[linear.sw]
a_us = 3500.0
b_us_per_kib = 30.0
[linear.rw]
a_us = 5000.0
b_us_per_kib = 36.0
"#;

/// The same path with a device that takes no time: the path's own floor.
const ZERO: &str = r#"
model = "linear"
capacity_bytes = 268435456
[linear.sr]
a_us = 0.0
b_us_per_kib = 0.0
[linear.rr]
a_us = 0.0
b_us_per_kib = 0.0
[linear.sw]
a_us = 0.0
b_us_per_kib = 0.0
[linear.rw]
a_us = 0.0
b_us_per_kib = 0.0
"#;

/// The linear parameters of [`TRUTH`]: pattern, A in µs, B in µs per KiB.
const TRUTH_FIT: [(&str, f64, f64); 4] = [
    ("sr", 2000.0, 20.0),
    ("rr", 3000.0, 24.0),
    ("sw", 3500.0, 30.0),
    ("rw", 5000.0, 36.0),
];

/// How close a calibration on a quiet machine comes (docs/PERFORMANCE.md records it with
/// `bench/calibrate_closed_loop.sh`).
const QUIET_SHARE: f64 = 0.03;

/// The bound the test holds every attempt to when none meets [`QUIET_SHARE`]. The emulator is
/// only ever late, and a compile on the other core once moved B by 3.8 %; a calibration that
/// misread sizes, patterns or the baseline would be off by far more.
const LOADED_SHARE: f64 = 0.10;

/// Calibrations tried before judging by [`LOADED_SHARE`].
const ATTEMPTS: usize = 3;

/// The least r² of a quiet machine's fits of the linear device, and of a busy one's (seen at a
/// load average of 8 on 2 cores: 0.9989).
const QUIET_R2: f64 = 0.999;
const LOADED_R2: f64 = 0.99;

#[test]
fn closed_loop_through_the_emulator_recovers_a_known_linear_device() {
    let _busy = busy();
    if !Path::new("/dev/fuse").exists() {
        storsim_testenv::missing("no /dev/fuse");
        return;
    }
    let tmp = temp_dir("cal-closed-loop");
    let dir = tmp.path();
    let start = |name: &str, toml: &str| {
        let device = dir.join(format!("{name}.toml"));
        std::fs::write(&device, toml).unwrap();
        let mountpoint = dir.join(name);
        std::fs::create_dir_all(&mountpoint).unwrap();
        Emulator::start(&[
            "--device",
            device.to_str().unwrap(),
            "--fuse",
            mountpoint.to_str().unwrap(),
            "--backing",
            "none",
        ])
    };
    let truth = start("truth", TRUTH);
    let zero = start("zero", ZERO);
    // Each attempt's worst relative error over the four patterns' A and B, and its report.
    let mut attempts: Vec<(f64, serde_json::Value)> = Vec::new();
    for attempt in 1..=ATTEMPTS {
        let (model, report) = (
            dir.join(format!("m{attempt}.toml")),
            dir.join(format!("r{attempt}.json")),
        );
        calibrate_ok(&[
            "--target",
            truth.fuse_file.as_ref().unwrap().to_str().unwrap(),
            "--baseline",
            zero.fuse_file.as_ref().unwrap().to_str().unwrap(),
            "--allow-writes",
            "--sizes",
            "4k,8k,12k,16k,24k,32k,48k,64k,96k,128k",
            "--repeats",
            "5",
            "--requests-per-run",
            "4",
            // The emulator is only ever late, never early: the minimum of the repeats (the
            // thesis' choice) is the device's own time plus the path's.
            "--statistic",
            "min",
            "--out",
            model.to_str().unwrap(),
            "--report",
            report.to_str().unwrap(),
        ]);
        let r = json(&report);
        let mut worst = 0.0f64;
        let mut least_r2 = 1.0f64;
        for (pattern, a, b) in TRUTH_FIT {
            let (fa, fb, r2) = fit(&r, pattern);
            eprintln!(
                "attempt {attempt}: {pattern}: A {fa:.1} µs (truth {a}), B {fb:.3} µs/KiB \
                 (truth {b}), r² {r2:.6}"
            );
            // The fit of a linear device is a line whatever the machine's load; a quiet
            // machine makes it all but exact, a busy one (other builds on both cores) a little
            // less so, which sends the attempt round again like a parameter off the truth.
            assert!(r2 > LOADED_R2, "attempt {attempt}: {pattern}: r² {r2}\n{r}");
            worst = worst.max((fa - a).abs() / a).max((fb - b).abs() / b);
            least_r2 = least_r2.min(r2);
        }
        if worst <= QUIET_SHARE && least_r2 > QUIET_R2 {
            return;
        }
        eprintln!(
            "attempt {attempt}: a parameter is {:.1} % off (a quiet machine: {:.0} %) or the \
             least r² is {least_r2:.6} (a quiet machine: {QUIET_R2}); the machine is probably \
             busy: retrying",
            worst * 100.0,
            QUIET_SHARE * 100.0
        );
        attempts.push((worst, r));
    }
    let (best, report) = attempts
        .iter()
        .min_by(|x, y| x.0.total_cmp(&y.0))
        .expect("at least one attempt");
    assert!(
        *best <= LOADED_SHARE,
        "no attempt came within {:.0} % of the truth (best: {:.1} %): not machine load\n{report}",
        LOADED_SHARE * 100.0,
        best * 100.0
    );
    eprintln!(
        "no attempt met the quiet machine's {:.0} %; the best, {:.1} %, is within the loaded \
         bound of {:.0} %",
        QUIET_SHARE * 100.0,
        best * 100.0,
        LOADED_SHARE * 100.0
    );
}
