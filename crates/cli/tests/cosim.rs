//! `storsim cosim` end to end: real programs (a C probe, dd, date, sleep, python, sqlite3)
//! under the preload library, checked against `storsim simulate` on the recorded stream and
//! against the programs' own clocks. Nothing here reads the wall clock: every time compared is
//! virtual.

mod common;

use common::{repo_root, simulate_json, stderr, temp_dir};
use rustix::process::{kill_process, Pid, Signal};
use serde_json::Value;
use signal_hook::consts::SIGTERM;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard, OnceLock};

/// The programs these tests run take their virtual time from their running time: on a busy
/// machine a program that waits for a processor runs longer in virtual time too, and twelve of
/// them at once on two cores made the timing checks fail. Each test takes this lock, so the
/// programs run one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `storsim cosim --device DEVICE --dir DIR --quiet --report R EXTRA... -- PROGRAM...` and
/// returns the output and the report.
fn cosim(device: &str, dir: &Path, extra: &[&str], program: &[&str]) -> (Output, Value) {
    let report = dir.with_extension("report.json");
    let _ = std::fs::remove_file(&report);
    let o = Command::new(env!("CARGO_BIN_EXE_storsim"))
        .args(["cosim", "--device", device, "--dir"])
        .arg(dir)
        .arg("--quiet")
        .arg("--report")
        .arg(&report)
        .args(extra)
        .arg("--")
        .args(program)
        .current_dir(repo_root())
        .output()
        .expect("storsim runs");
    let json = std::fs::read_to_string(&report)
        .map(|t| serde_json::from_str(&t).unwrap())
        .unwrap_or(Value::Null);
    (o, json)
}

/// A scratch directory for the test called `name` and the empty `dev` directory in it (files
/// named after `dev`, such as `dev.report.json`, land beside it). The directory is removed when
/// the returned guard drops: keep it alive as long as the path is used.
fn fresh_dir(name: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = temp_dir(name);
    let d = tmp.path().join("dev");
    std::fs::create_dir_all(&d).unwrap();
    (tmp, d)
}

/// The C probe (tests/data/cosim_probe.c), compiled once per test run with the system's C
/// compiler (.ci/run installs gcc when it is missing). It lives in Cargo's scratch directory
/// for tests (under the target directory, not /tmp): a static is never dropped, so a temporary
/// directory would outlive the run. It is compiled under a name of this process's own and
/// renamed into place, so concurrent runs never execute a half-written file.
fn probe() -> &'static Path {
    static PROBE: OnceLock<PathBuf> = OnceLock::new();
    PROBE.get_or_init(|| {
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cosim_probe");
        let part = out.with_extension(format!("{}.part", std::process::id()));
        let src = repo_root().join("crates/cli/tests/data/cosim_probe.c");
        let o = Command::new("cc")
            .args(["-O2", "-pthread", "-o"])
            .arg(&part)
            .arg(&src)
            .output()
            .expect("a C compiler (cc) is needed for the cosim tests; .ci/run installs gcc");
        assert!(o.status.success(), "cc failed: {}", stderr(&o));
        std::fs::rename(&part, &out).unwrap();
        out
    })
}

/// One line of the probe's output (op, file offset, bytes, start, latency): what the tests use.
#[derive(Debug)]
struct Call {
    op: String,
    latency_ns: u64,
}

fn probe_calls(o: &Output) -> Vec<Call> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Call {
                op: f[0].to_string(),
                latency_ns: f[4].parse().unwrap(),
            }
        })
        .collect()
}

/// A storsim-record file's rows: (arrival, op, offset, length, finish). In co-simulation a
/// request is received and offered to the model at the same virtual instant.
fn record_rows(path: &Path) -> Vec<(u64, String, u64, u64, u64)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("received_ns"))
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            assert_eq!(
                f[0], f[1],
                "received and offered apart in virtual time: {l}"
            );
            (
                f[1].parse().unwrap(),
                f[2].to_string(),
                f[3].parse().unwrap(),
                f[4].parse().unwrap(),
                f[5].parse().unwrap(),
            )
        })
        .collect()
}

/// Replays a record with `storsim simulate` and returns each request's (arrival, latency) in
/// id order.
fn simulate_record(device: &str, record: &Path) -> Vec<(u64, u64)> {
    let csv = record.with_extension("simulated.csv");
    let o = Command::new(env!("CARGO_BIN_EXE_storsim"))
        .args(["simulate", "--device", device, "--workload"])
        .arg(record)
        .arg("--requests-csv")
        .arg(&csv)
        .arg("--quiet")
        .output()
        .unwrap();
    assert!(o.status.success(), "simulate failed: {}", stderr(&o));
    let mut rows: Vec<(u64, u64, u64)> = std::fs::read_to_string(&csv)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (
                f[0].parse().unwrap(),
                f[4].parse().unwrap(),
                f[9].parse().unwrap(),
            )
        })
        .collect();
    rows.sort();
    rows.into_iter().map(|(_, a, l)| (a, l)).collect()
}

/// A record's (arrival, latency) pairs with the first arrival at 0, as `simulate` replays them.
fn rebased(rows: &[(u64, String, u64, u64, u64)]) -> Vec<(u64, u64)> {
    let first = rows.first().map_or(0, |r| r.0);
    rows.iter().map(|r| (r.0 - first, r.4 - r.0)).collect()
}

fn ns(report: &Value, key: &str) -> u64 {
    report["time"][key]
        .as_u64()
        .unwrap_or_else(|| panic!("no time.{key} in {report}"))
}

/// The device's own time for the run: the sum of its requests' latencies (the summary's mean
/// is the exact sum over the count), independent of how long the program computed.
fn device_ns(report: &Value) -> u64 {
    ["read", "write", "flush", "trim"]
        .iter()
        .map(|op| {
            let s = &report["summary"][op];
            s["requests"].as_f64().unwrap() * s["latency_ns"]["mean"].as_f64().unwrap()
        })
        .sum::<f64>()
        .round() as u64
}

/// At `--cpu-speed 1`, virtual time is the time skipped plus the program's running time, and
/// the clock advances at the real rate only while the program runs: so the virtual time not
/// skipped is at most the real time the clock did not stand still (the rest of which passed
/// before the program's first process announced itself). A wait counted as running time as
/// well as skipped, or a clock advancing faster than real time, breaks this; a busy machine,
/// which lengthens the program's running time on both sides, does not.
fn assert_unskipped_time_is_running_time(report: &Value) {
    let unskipped_v = ns(report, "virtual_elapsed_ns") - ns(report, "skipped_virtual_ns");
    let unpaused_r = ns(report, "real_elapsed_ns") - ns(report, "paused_real_ns");
    assert!(
        unskipped_v <= unpaused_r + 1_000_000,
        "{unskipped_v} ns of virtual time neither skipped nor run ({unpaused_r} ns real): {report}"
    );
}

#[test]
fn a_c_program_sees_exactly_the_latencies_simulate_computes_for_its_recorded_stream() {
    let _serial = serial();
    let (_tmp, dir) = fresh_dir("cosim-probe");
    let record = dir.with_extension("record.csv");
    let file = dir.join("f");
    // Blocks 1 MiB apart, each inside one extent: one device request per call.
    let (o, report) = cosim(
        "disksim-cheetah9lp",
        &dir,
        &["--cpu-speed", "inf", "--record", record.to_str().unwrap()],
        &[
            probe().to_str().unwrap(),
            "seq",
            file.to_str().unwrap(),
            "16",
            "8192",
            "1048576",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let calls = probe_calls(&o);
    let rows = record_rows(&record);
    assert_eq!(calls.len(), 33);
    assert_eq!(rows.len(), 33, "one request per call");
    let ops: String = rows.iter().map(|r| r.1.as_str()).collect();
    assert_eq!(ops, format!("{}F{}", "W".repeat(16), "R".repeat(16)));
    // With computation free, the program's own clock measures the model's latency exactly.
    for (call, row) in calls.iter().zip(&rows) {
        assert_eq!(call.op, row.1);
        assert_eq!(call.latency_ns, row.4 - row.0, "{call:?} vs {row:?}");
        assert!(call.latency_ns > 100_000, "a disk takes time: {call:?}");
    }
    // Replaying the record on the same model gives the same completions, and the same time
    // series: the model's clock starts at the first request in both.
    let simulated = simulate_record("disksim-cheetah9lp", &record);
    assert_eq!(simulated, rebased(&rows));
    let simulated = simulate_json(
        "disksim-cheetah9lp",
        record.to_str().unwrap(),
        "cosim-probe-replay",
    );
    assert_eq!(report["series"]["clock"], "simulated");
    assert_eq!(report["series"], simulated["series"]);
    // The reported virtual time is the calls' latencies end to end (no think time at all).
    let total: u64 = calls.iter().map(|c| c.latency_ns).sum();
    assert_eq!(ns(&report, "virtual_elapsed_ns"), total);
    assert_eq!(report["calls"]["writes"], 16);
    assert_eq!(report["calls"]["flushes"], 1);
    assert_eq!(report["summary"]["read"]["requests"], 16);
    assert_eq!(report["program"]["intercepted"], true);
}

#[test]
fn at_real_cpu_speed_each_call_costs_the_model_latency_plus_a_small_overhead() {
    let _serial = serial();
    let (_tmp, dir) = fresh_dir("cosim-probe-speed1");
    let record = dir.with_extension("record.csv");
    let file = dir.join("f");
    let (o, _) = cosim(
        "hdd-laptop-2007",
        &dir,
        &["--record", record.to_str().unwrap()],
        &[
            probe().to_str().unwrap(),
            "seq",
            file.to_str().unwrap(),
            "40",
            "4096",
            "1048576",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let calls = probe_calls(&o);
    let rows = record_rows(&record);
    assert_eq!(calls.len(), rows.len());
    let mut excess: Vec<u64> = calls
        .iter()
        .zip(&rows)
        .map(|(c, r)| {
            let model = r.4 - r.0;
            assert!(
                c.latency_ns >= model,
                "a call never returns before the device completes: {c:?} {r:?}"
            );
            c.latency_ns - model
        })
        .collect();
    excess.sort();
    // docs/cosim.md: the per-call overhead is the program's own few instructions around the
    // call (typically under 5 us); the median must stay far below the model's latencies.
    assert!(
        excess[excess.len() / 2] < 200_000,
        "median per-call excess {} ns",
        excess[excess.len() / 2]
    );
    assert_eq!(simulate_record("hdd-laptop-2007", &record), rebased(&rows));
}

#[test]
fn dd_with_direct_io_matches_simulate_on_its_record() {
    let _serial = serial();
    let (_tmp, dir) = fresh_dir("cosim-dd");
    let record = dir.with_extension("record.csv");
    let file = dir.join("out");
    let of = format!("of={}", file.display());
    let (o, report) = cosim(
        "disksim-atlas10k",
        &dir,
        &["--record", record.to_str().unwrap()],
        &[
            "dd",
            "if=/dev/zero",
            &of,
            "bs=64k",
            "count=48",
            "oflag=direct",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let rows = record_rows(&record);
    assert_eq!(rows.len(), 48);
    assert!(rows.iter().all(|r| r.1 == "W" && r.3 == 65536));
    // dd writes the file sequentially, so the layout puts it sequentially on the device.
    for w in rows.windows(2) {
        assert_eq!(w[1].2, w[0].2 + 65536);
        assert!(
            w[1].0 >= w[0].4,
            "QD1: each write arrives after the previous completed"
        );
    }
    assert_eq!(simulate_record("disksim-atlas10k", &record), rebased(&rows));
    assert_eq!(report["calls"]["write_bytes"], 48 * 65536);
    assert_eq!(
        std::fs::metadata(&file).unwrap().len(),
        48 * 65536,
        "the real data is written"
    );
    // Read it back with iflag=direct: 48 reads of the same device range.
    let inf = format!("if={}", file.display());
    let (o, report) = cosim(
        "disksim-atlas10k",
        &dir,
        &[],
        &["dd", &inf, "of=/dev/null", "bs=64k", "iflag=direct"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        report["calls"]["reads"], 48,
        "the read that finds the end asks the device for nothing"
    );
    assert_eq!(report["summary"]["read"]["requests"], 48);
}

#[test]
fn the_programs_own_clock_agrees_with_the_reported_virtual_time() {
    let _serial = serial();
    let (_tmp, dir) = fresh_dir("cosim-clock");
    let script = dir.with_extension("w.py");
    std::fs::write(
        &script,
        "import os, sys, time\n\
         t0 = time.perf_counter()\n\
         fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)\n\
         for i in range(100):\n\
         \x20   os.pwrite(fd, b'x' * 4096, (i * 7919 % 100) * 1048576)\n\
         \x20   os.fsync(fd)\n\
         os.close(fd)\n\
         time.sleep(120)\n\
         print(time.perf_counter() - t0)\n",
    )
    .unwrap();
    let data = dir.join("data");
    let cmd = format!(
        "date +%s.%N; python3 {} {}; date +%s.%N",
        script.display(),
        data.display()
    );
    let (o, report) = cosim("hdd-laptop-2007", &dir, &[], &["sh", "-c", &cmd]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let v: Vec<f64> = out.lines().map(|l| l.trim().parse().unwrap()).collect();
    assert_eq!(v.len(), 3, "{out}");
    let virtual_s = ns(&report, "virtual_elapsed_ns") as f64 / 1e9;
    let skipped_s = ns(&report, "skipped_virtual_ns") as f64 / 1e9;
    let device_s = device_ns(&report) as f64 / 1e9;
    let by_date = v[2] - v[0];
    let by_python = v[1];
    // What the printed readings round away.
    let eps = 1e-5;
    // Python's own span holds its 100 writes and syncs, each of which returns only after its
    // request completed, and its 120 s sleep: a clock that is not the virtual one (real time
    // is under a second here) or that missed a skip falls short.
    assert!(
        by_python >= 120.0 + device_s - eps,
        "python {by_python} s, its sleep and {device_s} s of device time"
    );
    // The spans nest: python's inside the two dates', inside the run the report covers.
    assert!(
        by_date >= by_python - eps,
        "date {by_date} s, python {by_python} s"
    );
    assert!(
        virtual_s >= by_date - eps,
        "date {by_date} s, report {virtual_s} s"
    );
    // Time is skipped only to the end of a wait of python's, so all of it lies inside python's
    // span: a skip the report counts and the program did not see (or the reverse) shows here.
    assert!(
        by_python >= skipped_s - eps,
        "python {by_python} s, skipped {skipped_s} s"
    );
    // The rest, outside python's span (sh, date, python's start-up: on a busy machine more
    // than a second), is the programs' running time.
    assert_unskipped_time_is_running_time(&report);
    assert!(
        report["calls"]["processes"].as_u64().unwrap() >= 4,
        "sh, date, python, date"
    );
}

#[test]
fn waiting_for_the_disk_and_sleeping_are_skipped_not_waited() {
    let _serial = serial();
    let (_tmp, dir) = fresh_dir("cosim-skip");
    let script = dir.with_extension("w.py");
    std::fs::write(
        &script,
        "import os, sys\n\
         fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)\n\
         for i in range(200):\n\
         \x20   os.pwrite(fd, b'x' * 4096, (i * 7919 % 200) * 1048576)\n\
         \x20   os.fsync(fd)\n",
    )
    .unwrap();
    let data = dir.join("data");
    let (o, report) = cosim(
        "hdd-laptop-2007",
        &dir,
        &[],
        &["python3", script.to_str().unwrap(), data.to_str().unwrap()],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(report["summary"]["flush"]["requests"], 200);
    // 200 synchronous writes on a 5400 rpm disk, about 10 ms each. (The program's own running
    // time comes on top, and a busy machine lengthens it: it is by design virtual time at
    // --cpu-speed 1, so the bounds are on the device's time.)
    let device = device_ns(&report);
    assert!(
        (1_400_000_000..3_000_000_000).contains(&device),
        "{device} ns"
    );
    let virtual_ns = ns(&report, "virtual_elapsed_ns");
    assert!(
        virtual_ns >= device,
        "each call returns after its request completed: {report}"
    );
    // The program, one thread, waits for each request while nothing else runs: the device's
    // time is skipped rather than waited. (Were the waits counted as running time instead,
    // little would be skipped; a call whose clock the controller could not stop at its entry
    // loses the moments until it read the call.)
    assert!(
        ns(&report, "skipped_virtual_ns") as f64 > 0.95 * device as f64,
        "{report}"
    );
    assert_unskipped_time_is_running_time(&report);
    assert_clock_series_is_consistent(&report);
    // The series, in the model's time, holds every request once.
    let requests: u64 = report["series"]["ops"]["all"]["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(requests, report["summary"]["requests"].as_u64().unwrap());

    let (o, report) = cosim("hdd-laptop-2007", &dir, &[], &["sh", "-c", "sleep 5"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(report["calls"]["sleeps"], 1);
    assert_eq!(report["calls"]["sleep_requested_ns"], 5_000_000_000u64);
    // The whole sleep is skipped, and nothing more: the rest of the virtual time is the
    // programs' running time.
    assert_eq!(ns(&report, "skipped_virtual_ns"), 5_000_000_000, "{report}");
    assert_unskipped_time_is_running_time(&report);
    // Virtual against real time shows the skip as a step: two readings at one real instant,
    // the virtual clock 5 s apart.
    let clock = &report["clock_series"];
    let step =
        |i: usize, key: &str| clock[key][i + 1].as_u64().unwrap() - clock[key][i].as_u64().unwrap();
    let n = assert_clock_series_is_consistent(&report);
    assert!(
        (0..n - 1).any(|i| step(i, "real_ns") == 0 && step(i, "virtual_ns") == 5_000_000_000),
        "no step of 5 s: {clock}"
    );
}

/// The clock series' arrays are readings over the run: one length, bounded, each clock
/// non-decreasing, ending with the report's paused and skipped time, and at every reading the
/// virtual time neither skipped nor run is at most the real time not paused (as
/// [`assert_unskipped_time_is_running_time`] for the whole run, at `--cpu-speed 1`). Returns
/// the number of readings.
fn assert_clock_series_is_consistent(report: &Value) -> usize {
    let clock = &report["clock_series"];
    let column = |key: &str| -> Vec<u64> {
        clock[key]
            .as_array()
            .unwrap_or_else(|| panic!("no clock_series.{key}: {report}"))
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect()
    };
    let (real, virt, paused, skipped) = (
        column("real_ns"),
        column("virtual_ns"),
        column("paused_ns"),
        column("skipped_ns"),
    );
    let n = real.len();
    assert!((2..=1024).contains(&n), "{n} readings");
    for c in [&real, &virt, &paused, &skipped] {
        assert_eq!(c.len(), n);
        assert!(c.windows(2).all(|w| w[0] <= w[1]), "{clock}");
    }
    assert_eq!(skipped[n - 1], ns(report, "skipped_virtual_ns"));
    assert_eq!(paused[n - 1], ns(report, "paused_real_ns"));
    assert!(real[n - 1] <= ns(report, "real_elapsed_ns"));
    assert!(virt[n - 1] <= ns(report, "virtual_elapsed_ns"));
    for i in 0..n {
        assert!(
            virt[i] - skipped[i] <= real[i] - paused[i] + 1_000_000,
            "reading {i}: {clock}"
        );
    }
    n
}

/// Returns the virtual time taken, the database and the guard of the directory it is in.
fn sqlite_run(device: &str, name: &str) -> (u64, PathBuf, tempfile::TempDir) {
    let (tmp, dir) = fresh_dir(name);
    let db = dir.join("db.sqlite");
    let mut sql = String::from("CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT);\n");
    for i in 0..60 {
        sql += &format!("BEGIN; INSERT INTO t(b) VALUES (hex(randomblob(300))); INSERT INTO t(b) VALUES ('row {i}'); COMMIT;\n");
    }
    sql += "PRAGMA integrity_check;\nSELECT count(*) FROM t;\n";
    let script = dir.with_extension("sql");
    std::fs::write(&script, sql).unwrap();
    let cmd = format!("sqlite3 {} < {}", db.display(), script.display());
    let (o, report) = cosim(device, &dir, &[], &["sh", "-c", &cmd]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "ok\n120\n");
    assert!(
        report["calls"]["flushes"].as_u64().unwrap() >= 60,
        "every commit syncs: {report}"
    );
    (ns(&report, "virtual_elapsed_ns"), db, tmp)
}

#[test]
fn sqlite3_completes_intact_and_is_slower_on_a_disk_than_on_flash() {
    let _serial = serial();
    let (hdd_ns, db, _hdd_tmp) = sqlite_run("hdd-laptop-2007", "cosim-sqlite-hdd");
    let (ssd_ns, _, _ssd_tmp) = sqlite_run("flashsim-2009", "cosim-sqlite-ssd");
    assert!(hdd_ns > 3 * ssd_ns, "hdd {hdd_ns} ns, ssd {ssd_ns} ns");
    // The database is intact outside cosim too.
    let o = Command::new("sqlite3")
        .arg(&db)
        .arg("PRAGMA integrity_check; SELECT count(*) FROM t;")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout), "ok\n120\n");
}

#[test]
fn threads_wait_for_their_own_completions_and_idle_time_is_still_skipped() {
    let _serial = serial();
    let (_tmp, dir) = fresh_dir("cosim-threads");
    let record = dir.with_extension("record.csv");
    let file = dir.join("f");
    let (o, report) = cosim(
        "disksim-cheetah9lp",
        &dir,
        &["--record", record.to_str().unwrap()],
        &[
            probe().to_str().unwrap(),
            "threads",
            file.to_str().unwrap(),
            "3",
            "6",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let calls = probe_calls(&o);
    let rows = record_rows(&record);
    let writes: Vec<&Call> = calls.iter().filter(|c| c.op == "W").collect();
    assert_eq!(writes.len(), 18);
    assert_eq!(rows.len(), 18);
    // Requests from the three threads reach the model in virtual-time order.
    assert!(rows.windows(2).all(|w| w[0].0 <= w[1].0));
    // Each thread's writes are its own: a thread never returns before its request completed,
    // so the program measures at least the model's latency for the request at that offset.
    let mut model: Vec<u64> = rows.iter().map(|r| r.4 - r.0).collect();
    let mut measured: Vec<u64> = writes.iter().map(|c| c.latency_ns).collect();
    model.sort();
    measured.sort();
    for (m, p) in model.iter().zip(&measured) {
        assert!(p >= m, "measured {measured:?} model {model:?}");
    }
    let sleeps: Vec<&Call> = calls.iter().filter(|c| c.op == "S").collect();
    assert_eq!(sleeps.len(), 3);
    assert!(sleeps.iter().all(|s| s.latency_ns >= 50_000_000));
    assert_eq!(report["calls"]["threads"], 4);
    // The main thread only joins: once every other thread waits, the clock skips.
    assert!(ns(&report, "skipped_virtual_ns") > 0, "{report}");
}

#[test]
fn runs_repeat_exactly_when_computation_is_free() {
    let _serial = serial();
    let mut seen = Vec::new();
    for run in 0..2 {
        let (_tmp, dir) = fresh_dir(&format!("cosim-repeat-{run}"));
        let record = dir.with_extension("record.csv");
        let file = dir.join("f");
        let (o, report) = cosim(
            "flashsim-2009",
            &dir,
            &["--cpu-speed", "inf", "--record", record.to_str().unwrap()],
            &[
                probe().to_str().unwrap(),
                "seq",
                file.to_str().unwrap(),
                "50",
                "16384",
                "40960",
            ],
        );
        assert!(o.status.success(), "{}", stderr(&o));
        seen.push((
            std::fs::read(&record).unwrap(),
            ns(&report, "virtual_elapsed_ns"),
            report["summary"].clone(),
            report["device"].clone(),
            o.stdout.iter().filter(|&&b| b == b'\n').count(),
        ));
    }
    assert_eq!(seen[0].0, seen[1].0, "the records differ");
    assert_eq!(seen[0].1, seen[1].1);
    assert_eq!(seen[0].2, seen[1].2);
    assert_eq!(seen[0].3, seen[1].3);
}

#[test]
fn bad_arguments_are_refused_and_the_exit_status_is_the_programs() {
    let _serial = serial();
    let (_tmp, dir) = fresh_dir("cosim-bad");
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_storsim"))
            .arg("cosim")
            .args(args)
            .output()
            .unwrap()
    };
    let d = dir.to_str().unwrap();
    let o = run(&["--device", "flashsim-2009", "--", "true"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--dir"), "{}", stderr(&o));
    let o = run(&[
        "--device",
        "flashsim-2009",
        "--dir",
        d,
        "--cpu-speed",
        "0",
        "--",
        "true",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--cpu-speed"), "{}", stderr(&o));
    let o = run(&[
        "--device",
        "flashsim-2009",
        "--dir",
        "/nonexistent/x",
        "--",
        "true",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("/nonexistent/x"), "{}", stderr(&o));
    let o = run(&[
        "--device",
        "flashsim-2009",
        "--dir",
        d,
        "--extent-size",
        "1000",
        "--",
        "true",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let o = run(&["--device", "no-such-device", "--dir", d, "--", "true"]);
    assert_eq!(o.status.code(), Some(2));
    let o = run(&[
        "--device",
        "flashsim-2009",
        "--dir",
        d,
        "--",
        "/nonexistent/program",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("cannot start /nonexistent/program"),
        "{}",
        stderr(&o)
    );
    let o = run(&[
        "--device",
        "flashsim-2009",
        "--dir",
        d,
        "--quiet",
        "--",
        "sh",
        "-c",
        "exit 3",
    ]);
    assert_eq!(o.status.code(), Some(3));
}

#[test]
fn a_malformed_program_is_bad_input_not_a_panic() {
    let (_tmp, dir) = fresh_dir("cosim-bad-elf");
    // An ELF64 executable whose program-header entries claim to be 2 bytes long: the check
    // for static programs used to panic on it.
    let mut elf = vec![0u8; 64 + 2 * 56];
    elf[0..7].copy_from_slice(b"\x7fELF\x02\x01\x01");
    elf[16] = 2;
    elf[32] = 64;
    elf[52] = 64;
    elf[54] = 2;
    elf[56] = 2;
    let program = dir.with_extension("bad-elf");
    std::fs::write(&program, &elf).unwrap();
    std::fs::set_permissions(
        &program,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let (o, _) = cosim("flashsim-2009", &dir, &[], &[program.to_str().unwrap()]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains(program.to_str().unwrap()), "{err}");
    assert!(err.contains("e_phentsize) is 2 bytes"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn what_cannot_be_intercepted_is_reported() {
    let _serial = serial();
    let (_tmp, dir) = fresh_dir("cosim-limits");
    // A statically linked program never loads the library.
    let stat = dir.with_extension("static");
    let src = repo_root().join("crates/cli/tests/data/cosim_probe.c");
    let c = Command::new("cc")
        .args(["-O2", "-static", "-pthread", "-o"])
        .arg(&stat)
        .arg(&src)
        .output()
        .unwrap();
    if c.status.success() {
        let file = dir.join("s");
        let (o, report) = cosim(
            "flashsim-2009",
            &dir,
            &[],
            &[
                stat.to_str().unwrap(),
                "seq",
                file.to_str().unwrap(),
                "2",
                "4096",
                "4096",
            ],
        );
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(stderr(&o).contains("statically linked"), "{}", stderr(&o));
        assert_eq!(report["program"]["intercepted"], false);
        assert_eq!(report["calls"]["writes"], 0);
    } else {
        eprintln!(
            "no static libc here: the static-binary check is skipped ({})",
            stderr(&c)
        );
    }
    // Memory-mapped I/O on a file on the device bypasses the model, and says so.
    let f = dir.join("m");
    std::fs::write(&f, vec![0u8; 8192]).unwrap();
    let py = format!(
        "import mmap\nf = open('{}', 'r+b')\nm = mmap.mmap(f.fileno(), 4096)\nm[0:1] = b'x'\nm.close()\n",
        f.display()
    );
    let (o, report) = cosim("flashsim-2009", &dir, &[], &["python3", "-c", &py]);
    assert!(o.status.success(), "{}", stderr(&o));
    let warnings = report["warnings"].to_string();
    assert!(warnings.contains("mmap"), "{report}");
    assert_eq!(std::fs::read(&f).unwrap()[0], b'x');
}

#[test]
fn an_image_maps_one_to_one_and_unlinked_space_is_reused() {
    let _serial = serial();
    let (_tmp, dir) = fresh_dir("cosim-image");
    let image = dir.with_extension("img");
    std::fs::write(&image, vec![0u8; 4 << 20]).unwrap();
    let record = dir.with_extension("record.csv");
    let of = format!("of={}", image.display());
    let o = Command::new(env!("CARGO_BIN_EXE_storsim"))
        .args(["cosim", "--device", "flashsim-2009", "--quiet", "--image"])
        .arg(&image)
        .arg("--record")
        .arg(&record)
        .args([
            "--",
            "dd",
            "if=/dev/zero",
            &of,
            "bs=4k",
            "seek=100",
            "count=3",
            "conv=notrunc",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let rows = record_rows(&record);
    let offsets: Vec<u64> = rows.iter().map(|r| r.2).collect();
    assert_eq!(
        offsets,
        vec![409_600, 413_696, 417_792],
        "file offset = device offset"
    );
    // An image larger than the device is refused before anything runs.
    let big = dir.with_extension("big.img");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(64 << 30)
        .unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_storsim"))
        .args(["cosim", "--device", "flashsim-2009", "--image"])
        .arg(&big)
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("do not fit"), "{}", stderr(&o));

    // Unlinking a file gives its extents back: the next file written lands where it was.
    let a = dir.join("a");
    let b = dir.join("b");
    let py = format!(
        "import os\n\
         for name in ('{a}', '{b}'):\n\
         \x20   fd = os.open(name, os.O_WRONLY | os.O_CREAT, 0o644)\n\
         \x20   os.pwrite(fd, b'z' * 8192, 0)\n\
         \x20   os.close(fd)\n\
         \x20   if name == '{a}':\n\
         \x20       os.unlink(name)\n",
        a = a.display(),
        b = b.display()
    );
    let record = dir.with_extension("unlink.csv");
    let (o, report) = cosim(
        "flashsim-2009",
        &dir,
        &["--record", record.to_str().unwrap()],
        &["python3", "-c", &py],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let rows = record_rows(&record);
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].2, rows[1].2, "b reuses a's extent: {rows:?}");
    assert_eq!(report["layout"]["allocated_bytes"], 1 << 20);
    assert!(!a.exists() && b.exists());
}

#[test]
fn sigterm_is_passed_to_the_program_and_the_report_still_comes() {
    let _serial = serial();
    let (_tmp, dir) = fresh_dir("cosim-sigterm");
    let file = dir.join("f");
    let report = dir.with_extension("report.json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_storsim"))
        .args(["cosim", "--device", "flashsim-2009", "--quiet", "--dir"])
        .arg(&dir)
        .arg("--report")
        .arg(&report)
        .arg("--")
        .arg(probe())
        .args(["idle", file.to_str().unwrap(), "100000000"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait (without a time limit that could fail a slow machine) until the program has made its
    // second write, far into the file: its first write call, at offset 0, has then come back
    // from the controller, which has counted it. (The file's existence says only that it was
    // opened; on a busy machine the signal then often came before the first write.)
    while std::fs::metadata(&file).map_or(true, |m| m.len() <= 4096) {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    kill_process(Pid::from_child(&child), Signal::TERM).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(128 + SIGTERM));
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(report["program"]["exit"]["signal"], SIGTERM);
    assert!(report["calls"]["writes"].as_u64().unwrap() >= 1, "{report}");
}
