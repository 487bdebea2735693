//! `storsim emulate` end to end, with the real clients users would use: qemu-io / qemu-img,
//! nbdinfo / nbdcopy, fio's nbd engine, a FUSE mount with a loop device and ext4 on it.
//! `.ci/run` installs them; a test whose tool is missing says so and stops (a machine without
//! FUSE or loop devices likewise).

// Some tests here walk a real client through one scenario step by step (a mount, a crash, a
// browser page); split, the steps would read out of order. The limit holds for production code.
#![allow(clippy::too_many_lines)]

mod common;

use common::system::{control, have, run, run_ok, Emulator, Loop, Mounted};
use common::{repo_root, temp_dir};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// A linear device with 20 µs per access plus 0.5 µs per KiB and eight servers: fast enough
/// for mkfs and fio, slow enough that pacing matters.
const FAST_LINEAR: &str = r#"
model = "linear"
capacity_bytes = 1073741824
queue_depth = 64
[linear]
servers = 8
trim_latency_us = 20.0
flush_latency_us = 50.0
[linear.sr]
a_us = 20.0
b_us_per_kib = 0.5
[linear.rr]
a_us = 20.0
b_us_per_kib = 0.5
[linear.sw]
a_us = 30.0
b_us_per_kib = 0.5
[linear.rw]
a_us = 30.0
b_us_per_kib = 0.5
"#;

/// Starts the emulator on `device` with an NBD server on a free loopback port.
fn nbd_emulator(device: &str, size: &str, extra: &[&str]) -> Emulator {
    let mut args = vec!["--device", device, "--size", size, "--nbd", "127.0.0.1:0"];
    args.extend_from_slice(extra);
    Emulator::start(&args)
}

fn device_file(dir: &Path) -> String {
    let path = dir.join("fast.toml");
    std::fs::write(&path, FAST_LINEAR).unwrap();
    path.to_str().unwrap().to_string()
}

fn random_file(path: &Path, len: usize, seed: u64) {
    let mut x = seed | 1;
    let bytes: Vec<u8> = (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn nbd_clients_write_read_and_see_the_export() {
    if !(have("qemu-io") && have("nbdinfo") && have("nbdcopy") && have("qemu-img")) {
        return;
    }
    let tmp = temp_dir("emu-nbd");
    let dir = tmp.path();
    let device = device_file(dir);
    let emu = nbd_emulator(&device, "64m", &["--export-name", "disk0"]);
    let uri = emu.nbd().to_string();
    assert!(uri.ends_with("/disk0"), "{uri}");

    let info = run_ok("nbdinfo", &["--json", &uri]);
    let info: serde_json::Value = serde_json::from_str(&info).unwrap();
    let export = &info["exports"][0];
    assert_eq!(export["export-size"], 64 << 20, "{info}");
    assert_eq!(export["export-name"], "disk0");
    assert_eq!(export["is_read_only"], false);
    for flag in [
        "can_flush",
        "can_fua",
        "can_trim",
        "can_zero",
        "can_multi_conn",
    ] {
        assert_eq!(export[flag], true, "{flag}: {info}");
    }
    let img = run_ok("qemu-img", &["info", "--output=json", "-f", "raw", &uri]);
    let img: serde_json::Value = serde_json::from_str(&img).unwrap();
    assert_eq!(img["virtual-size"], 64 << 20);

    // A pattern written with qemu-io reads back, and the bytes around it stay zero.
    run_ok(
        "qemu-io",
        &[
            "-f",
            "raw",
            &uri,
            "-c",
            "write -P 0xa5 1M 3M",
            "-c",
            "flush",
        ],
    );
    let out = run_ok(
        "qemu-io",
        &[
            "-f",
            "raw",
            &uri,
            "-c",
            "read -P 0xa5 1M 3M",
            "-c",
            "read -P 0 0 1M",
            "-c",
            "read -P 0 4M 1M",
        ],
    );
    assert!(!out.contains("Pattern verification failed"), "{out}");
    let out = run("qemu-io", &["-f", "raw", &uri, "-c", "read -P 0x5a 1M 4k"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("Pattern verification failed"),
        "a wrong pattern must not verify"
    );

    // nbdcopy a random file in and back out, over four connections.
    let input = dir.join("in.bin");
    let output = dir.join("out.bin");
    random_file(&input, 8 << 20, 7);
    run_ok(
        "nbdcopy",
        &["--connections=4", input.to_str().unwrap(), &uri],
    );
    run_ok("nbdcopy", &[&uri, output.to_str().unwrap()]);
    let got = std::fs::read(&output).unwrap();
    assert_eq!(got.len(), 64 << 20);
    assert!(
        got[..8 << 20] == std::fs::read(&input).unwrap()[..],
        "nbdcopy round trip differs"
    );

    let (status, out, _) = emu.stop();
    assert!(status.success(), "{status}: {out}");
    assert!(out.contains("lateness"), "{out}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_read_only_export_refuses_writes_and_unix_sockets_work() {
    if !(have("qemu-io") && have("nbdinfo")) {
        return;
    }
    let tmp = temp_dir("emu-ro");
    let dir = tmp.path();
    let socket = dir.join("nbd.sock");
    let emu = Emulator::start(&[
        "--device",
        "stec-zeus",
        "--size",
        "16m",
        "--nbd-unix",
        socket.to_str().unwrap(),
        "--read-only",
    ]);
    let uri = emu.nbd().to_string();
    assert!(uri.starts_with("nbd+unix://"), "{uri}");
    let info: serde_json::Value =
        serde_json::from_str(&run_ok("nbdinfo", &["--json", &uri])).unwrap();
    assert_eq!(info["exports"][0]["is_read_only"], true, "{info}");
    let out = run("qemu-io", &["-f", "raw", &uri, "-c", "write -P 1 0 4k"]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !out.status.success() || text.contains("failed"),
        "a write succeeded: {text}"
    );
    run_ok(
        "qemu-io",
        &["-r", "-f", "raw", &uri, "-c", "read -P 0 0 64k"],
    );
    let (status, _, _) = emu.stop();
    assert!(status.success());
    std::fs::remove_dir_all(dir).unwrap();
}

/// fio random 4 KiB writes at iodepth 16 with crc32c verification on `target` (engine, file,
/// range); asserts fio succeeded and returns its job object.
fn fio_verify(target: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "--name=verify",
        "--rw=randwrite",
        "--bs=4k",
        "--iodepth=16",
        "--verify=crc32c",
        "--do_verify=1",
        "--verify_fatal=1",
        "--verify_state_save=0",
        "--output-format=json",
    ];
    args.extend_from_slice(target);
    let out = run("fio", &args);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "fio failed: {text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // fio's nbd engine prints a line before the JSON.
    let json: serde_json::Value = serde_json::from_str(&text[text.find('{').unwrap()..]).unwrap();
    let job = json["jobs"][0].clone();
    assert_eq!(job["error"], 0, "{job}");
    job
}

#[test]
fn fio_verifies_through_the_nbd_engine() {
    if !have("fio") {
        return;
    }
    let tmp = temp_dir("emu-fio-nbd");
    let dir = tmp.path();
    let device = device_file(dir);
    let emu = nbd_emulator(&device, "64m", &[]);
    let uri = emu.nbd().to_string();
    let job = fio_verify(&["--ioengine=nbd", &format!("--uri={uri}"), "--size=16m"]);
    assert_eq!(job["write"]["io_bytes"], 16 << 20, "{job}");
    assert_eq!(
        job["read"]["io_bytes"],
        16 << 20,
        "fio did not read back everything: {job}"
    );
    let (status, out, _) = emu.stop();
    assert!(status.success());
    assert!(out.contains("write 4096"), "{out}");
    std::fs::remove_dir_all(dir).unwrap();
}

fn checksums(root: &Path) -> Vec<(String, u64, u64)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            if entry.file_type().unwrap().is_dir() {
                stack.push(path);
            } else if entry.file_type().unwrap().is_file() {
                let bytes = std::fs::read(&path).unwrap();
                // FNV-1a: enough to tell files apart, no dependency.
                let hash = bytes.iter().fold(0xcbf29ce484222325u64, |h, &b| {
                    (h ^ b as u64).wrapping_mul(0x100000001b3)
                });
                let rel = path.strip_prefix(root).unwrap().display().to_string();
                out.push((rel, bytes.len() as u64, hash));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn fuse_loop_and_ext4_keep_a_directory_tree_across_remounts_and_fio_verifies() {
    fuse_loop_ext4_and_fio("dev-fuse");
}

/// The same over FUSE over io_uring: replies committed in batches by the pacing thread, which
/// also finds requests by polling the ring.
#[test]
fn fuse_over_io_uring_loop_and_ext4_keep_a_directory_tree_and_fio_verifies() {
    if let Some(reason) = storsim_fuse::io_uring_unavailable() {
        storsim_testenv::kernel_lacks(&format!(
            "the io_uring transport cannot be tested: {reason}"
        ));
        return;
    }
    fuse_loop_ext4_and_fio("io-uring");
}

/// A FUSE mount with `--fuse-transport transport`, a loop device and ext4 on it: a directory
/// tree copied in survives a remount and fsck, and fio's crc32c verification at iodepth 16
/// passes on the loop device.
fn fuse_loop_ext4_and_fio(transport: &str) {
    let fuse = Path::new("/dev/fuse").exists();
    if !fuse {
        storsim_testenv::missing("no /dev/fuse");
    }
    if !(fuse && have("losetup") && have("mkfs.ext4") && have("e2fsck") && have("fio")) {
        return;
    }
    let tmp = temp_dir(&format!("emu-fuse-{transport}"));
    let dir = tmp.path();
    let device = device_file(dir);
    let mountpoint = dir.join("fuse");
    std::fs::create_dir_all(&mountpoint).unwrap();
    let emu = Emulator::start(&[
        "--device",
        &device,
        "--size",
        "256m",
        "--fuse",
        mountpoint.to_str().unwrap(),
        "--fuse-transport",
        transport,
    ]);
    let disk = emu.fuse_file.clone().unwrap();
    assert_eq!(std::fs::metadata(&disk).unwrap().len(), 256 << 20);
    let Some(lo) = Loop::attach(&disk) else {
        return;
    };
    run_ok("mkfs.ext4", &["-q", "-F", &lo.0]);
    let fs = dir.join("ext4");
    let source = repo_root().join("crates");
    let before = checksums(&source);
    {
        let _m = Mounted::new(&lo.0, &fs);
        run_ok(
            "cp",
            &[
                "-a",
                source.to_str().unwrap(),
                fs.join("tree").to_str().unwrap(),
            ],
        );
        run_ok("sync", &[]);
    }
    {
        let _m = Mounted::new(&lo.0, &fs);
        assert_eq!(
            checksums(&fs.join("tree")),
            before,
            "the tree changed across a remount"
        );
    }
    run_ok("e2fsck", &["-fn", &lo.0]);

    // fio on the loop device, below the file system's region: random writes verified.
    let job = fio_verify(&[
        &format!("--filename={}", lo.0),
        "--ioengine=libaio",
        "--direct=1",
        "--offset=192m",
        "--size=16m",
    ]);
    assert_eq!(job["read"]["io_bytes"], 16 << 20, "{job}");
    drop(lo);
    let (status, out, err) = emu.stop();
    assert!(status.success(), "{status}: {out}{err}");
    let over = match transport {
        "io-uring" => "over io_uring",
        _ => "over /dev/fuse",
    };
    assert!(
        err.contains(over),
        "the mount line does not say `{over}`: {err}"
    );
    assert!(
        !mountpoint.join("disk").exists(),
        "the FUSE mount is still there"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn file_backing_keeps_everything_flushed_before_a_kill_9() {
    if !have("qemu-io") {
        return;
    }
    let tmp = temp_dir("emu-kill");
    let dir = tmp.path();
    let device = device_file(dir);
    let backing = format!("file:{}", dir.join("disk.img").display());
    let emu = nbd_emulator(&device, "64m", &["--backing", &backing]);
    let uri = emu.nbd().to_string();
    run_ok(
        "qemu-io",
        &[
            "-f",
            "raw",
            &uri,
            "-c",
            "write -P 0x11 0 4M",
            "-c",
            "write -P 0x22 4M 4M",
            "-c",
            "flush",
        ],
    );
    // A stream of writes after the flush, killed in the middle.
    let mut stream = Command::new("qemu-io")
        .args(["-f", "raw", &uri])
        .args((0..64).flat_map(|i| {
            [
                "-c".to_string(),
                format!("write -P 0x33 {}M 512k", 8 + i / 2),
            ]
        }))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(30));
    emu.kill_9();
    let _ = stream.wait();

    let emu = nbd_emulator(&device, "64m", &["--backing", &backing]);
    let out = run_ok(
        "qemu-io",
        &[
            "-f",
            "raw",
            emu.nbd(),
            "-c",
            "read -P 0x11 0 4M",
            "-c",
            "read -P 0x22 4M 4M",
        ],
    );
    assert!(
        !out.contains("verification failed"),
        "flushed data lost: {out}"
    );
    // A different size on the same file is refused rather than reinterpreted.
    drop(emu);
    let o = common::storsim(&[
        "emulate",
        "--device",
        &device,
        "--size",
        "32m",
        "--nbd",
        "127.0.0.1:0",
        "--backing",
        &backing,
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", common::stderr(&o));
    std::fs::remove_dir_all(dir).unwrap();
}

/// A storsim-record file's rows, in file order: (received, arrival, op, intended finish).
fn record_rows(path: &Path) -> Vec<(u64, u64, String, u64)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("received_ns"))
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (
                f[0].parse().unwrap(),
                f[1].parse().unwrap(),
                f[2].to_string(),
                f[5].parse().unwrap(),
            )
        })
        .collect()
}

/// fio over two NBD connections at queue depth 16 each, with a flush every eight writes and
/// file backing (the flushes wait in `fdatasync` before the model sees them, so requests
/// received after them reach the model first), on a device with two servers and room for
/// eight requests (the order requests meet the model decides who waits, and some wait at the
/// host): `simulate` of the record warns of nothing and gives every request the response time
/// the model gave it in the emulator.
#[test]
fn the_record_replays_in_simulate_with_the_same_response_times() {
    let tmp = temp_dir("emu-record");
    let device = tmp.path().join("two-servers.toml");
    let contended = FAST_LINEAR
        .replace("servers = 8", "servers = 2")
        .replace("queue_depth = 64", "queue_depth = 8");
    std::fs::write(&device, contended).unwrap();
    record_and_replay(device.to_str().unwrap(), "8m", tmp.path());
}

/// The same on a disk, whose rotational position depends on the instant itself, not only on
/// the time between requests: the emulator starts the model's clock at the first request, as a
/// replay does.
#[test]
fn the_record_of_a_disk_replays_in_simulate_with_the_same_response_times() {
    let tmp = temp_dir("emu-record-disk");
    record_and_replay("hdd-momentus-7200", "1m", tmp.path());
}

/// The same on an SSD with its own background work (garbage collection, destaging).
#[test]
fn the_record_of_an_ssd_replays_in_simulate_with_the_same_response_times() {
    let tmp = temp_dir("emu-record-ssd");
    record_and_replay("tlc-nvme", "4m", tmp.path());
}

/// Records fio's run on `device` (see the linear device's test) and checks its replay in
/// `simulate`, request by request.
fn record_and_replay(device: &str, fio_size: &str, dir: &Path) {
    if !have("fio") {
        return;
    }
    let record = dir.join("run.record");
    let backing = format!("file:{}", dir.join("disk.img").display());
    let emu = nbd_emulator(
        device,
        "64m",
        &["--record", record.to_str().unwrap(), "--backing", &backing],
    );
    let uri = emu.nbd().to_string();
    run_ok(
        "fio",
        &[
            "--name=rec",
            "--ioengine=nbd",
            &format!("--uri={uri}"),
            "--rw=randrw",
            "--bsrange=4k-64k",
            "--iodepth=16",
            "--numjobs=2",
            "--fsync=8",
            &format!("--size={fio_size}"),
            "--randseed=3",
        ],
    );
    let (status, _, _) = emu.stop();
    assert!(status.success());

    let csv = dir.join("sim.csv");
    let json = dir.join("sim.json");
    let o = common::storsim(&[
        "simulate",
        "--device",
        device,
        "--workload",
        record.to_str().unwrap(),
        "--requests-csv",
        csv.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(
        doc["run"]["out_of_order_records"], 0,
        "simulate shifted records: {}",
        doc["run"]
    );

    let rows = record_rows(&record);
    assert!(rows.len() >= 64, "fio's requests: {}", rows.len());
    assert!(rows.iter().any(|r| r.2 == "F"), "fio sent no flush");
    // Rows in the order received; each offered to the model no earlier.
    for pair in rows.windows(2) {
        assert!(pair[1].0 >= pair[0].0, "rows out of order: {pair:?}");
    }
    assert!(rows.iter().all(|r| r.1 >= r.0));
    // The replay meets the requests in the order the model was offered them (file order on
    // ties), which is the order of its request ids.
    let mut by_offer: Vec<_> = rows.iter().enumerate().collect();
    by_offer.sort_by_key(|(line, r)| (r.1, *line));
    let sim = std::fs::read_to_string(&csv).unwrap();
    let mut simulated: Vec<(u64, String, u64)> = sim
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (
                f[0].parse().unwrap(),
                f[1].to_string(),
                f[9].parse().unwrap(),
            )
        })
        .collect();
    simulated.sort();
    assert_eq!(simulated.len(), rows.len());
    let mut mismatched = Vec::new();
    for ((id, op, simulated_ns), (line, row)) in simulated.iter().zip(&by_offer) {
        let emulated_ns = row.3 - row.1;
        if *simulated_ns != emulated_ns {
            mismatched.push(format!(
                "request {id} ({op}, row {line}, {} ns after the first offer): simulated \
                 {simulated_ns} ns, emulated {emulated_ns} ns",
                row.1 - by_offer[0].1 .1
            ));
        }
    }
    assert!(
        mismatched.is_empty(),
        "{} of {} response times differ between emulation and simulation:\n{}",
        mismatched.len(),
        rows.len(),
        mismatched.join("\n")
    );
}

/// The fields of `/sys/block/NAME/stat` this test compares (Documentation/block/stat.rst):
/// reads, read sectors, writes, write sectors, discards, discard sectors, flushes.
fn loop_stat(device: &str) -> [u64; 7] {
    let name = Path::new(device).file_name().unwrap().to_str().unwrap();
    let text = std::fs::read_to_string(format!("/sys/block/{name}/stat")).unwrap();
    let f: Vec<u64> = text
        .split_whitespace()
        .map(|v| v.parse().unwrap())
        .collect();
    assert!(f.len() >= 17, "a kernel without flush counters: {text}");
    [f[0], f[2], f[4], f[6], f[11], f[13], f[15]]
}

/// The emulator's clock now, through its control socket.
fn emulator_now_ns(socket: &Path) -> u64 {
    let report = control(socket, "report");
    report["report"]["elapsed_ns"].as_u64().unwrap()
}

/// mkfs, a directory tree copied in, sqlite inserts (each transaction an fsync), a deletion,
/// fstrim and an unmount on ext4 over FUSE and a loop device: the record of that stretch agrees
/// with the loop device's own counters, `/sys/block/loopN/stat`, in reads, bytes read and
/// written, trims and their bytes, and flushes. Writes agree up to the flushes: the kernel
/// counts a flush issued alone (an fsync with nothing to write) as a write of no sectors too.
#[test]
fn the_record_agrees_with_the_loop_devices_own_counters() {
    let fuse = Path::new("/dev/fuse").exists();
    if !fuse {
        storsim_testenv::missing("no /dev/fuse");
    }
    let tools = ["losetup", "mkfs.ext4", "blkdiscard", "fstrim", "sqlite3"];
    if !(fuse && tools.iter().all(|t| have(t))) {
        return;
    }
    let tmp = temp_dir("emu-loop-stat");
    let dir = tmp.path();
    let device = device_file(dir);
    let mountpoint = dir.join("fuse");
    std::fs::create_dir_all(&mountpoint).unwrap();
    let record = dir.join("run.record");
    let socket = dir.join("control.sock");
    let emu = Emulator::start(&[
        "--device",
        &device,
        "--size",
        "256m",
        "--fuse",
        mountpoint.to_str().unwrap(),
        "--record",
        record.to_str().unwrap(),
        "--control",
        socket.to_str().unwrap(),
    ]);
    let disk = emu.fuse_file.clone().unwrap();
    let Some(lo) = Loop::attach(&disk) else {
        return;
    };
    // The loop device advertises write-zeroes, which the FUSE file refuses (docs/fuse.md): the
    // kernel counts the refused request as written and then stops sending them. Have that
    // happen here, before the measured stretch (the zeros then go as plain writes).
    run_ok("blkdiscard", &["-z", "-l", "65536", &lo.0]);
    let settle = || {
        if have("udevadm") {
            let _ = run("udevadm", &["settle"]);
        }
    };
    settle();
    let (stat_before, from_ns) = (loop_stat(&lo.0), emulator_now_ns(&socket));

    run_ok("mkfs.ext4", &["-q", "-F", &lo.0]);
    let fs = dir.join("ext4");
    {
        let _m = Mounted::new(&lo.0, &fs);
        let source = repo_root().join("crates").join("workload");
        run_ok(
            "cp",
            &[
                "-a",
                source.to_str().unwrap(),
                fs.join("tree").to_str().unwrap(),
            ],
        );
        let db = fs.join("db.sqlite");
        run_ok(
            "sqlite3",
            &[db.to_str().unwrap(), "create table t(k integer, v blob);"],
        );
        for i in 0..20 {
            let insert = format!("insert into t values({i}, randomblob(3000));");
            run_ok("sqlite3", &[db.to_str().unwrap(), &insert]);
        }
        run_ok("sync", &[]);
        std::fs::remove_dir_all(fs.join("tree").join("src")).unwrap();
        run_ok("fstrim", &[fs.to_str().unwrap()]);
    }
    settle();
    let (stat_after, to_ns) = (loop_stat(&lo.0), emulator_now_ns(&socket));
    drop(lo);
    let (status, out, err) = emu.stop();
    assert!(status.success(), "{status}: {out}{err}");

    let stat: Vec<u64> = stat_after
        .iter()
        .zip(stat_before)
        .map(|(after, before)| after - before)
        .collect();
    let (mut reads, mut writes, mut trims, mut flushes) = ([0u64; 2], [0u64; 2], [0u64; 2], 0);
    for row in record_rows_with_lengths(&record) {
        let (received_ns, op, len_bytes) = row;
        if received_ns <= from_ns || received_ns > to_ns {
            continue;
        }
        let counts = match op.as_str() {
            "R" => &mut reads,
            "W" => &mut writes,
            "T" => &mut trims,
            "F" => {
                flushes += 1;
                continue;
            }
            other => panic!("op {other}"),
        };
        counts[0] += 1;
        counts[1] += len_bytes / 512;
    }
    let seen = format!(
        "loop stat (reads, sectors, writes, sectors, discards, sectors, flushes) {stat:?}; \
         record reads {reads:?}, writes {writes:?}, trims {trims:?}, flushes {flushes}"
    );
    assert!(writes[0] > 100 && trims[0] > 0 && flushes > 20, "{seen}");
    assert_eq!([stat[0], stat[1]], reads, "{seen}");
    assert_eq!(stat[3], writes[1], "{seen}");
    assert_eq!([stat[4], stat[5]], trims, "{seen}");
    assert_eq!(stat[6], flushes, "{seen}");
    assert!(
        stat[2] >= writes[0] && stat[2] - writes[0] <= flushes,
        "writes differ by more than the flushes issued alone: {seen}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// A storsim-record file's rows: (received, op, length in bytes).
fn record_rows_with_lengths(path: &Path) -> Vec<(u64, String, u64)> {
    record_rows(path)
        .into_iter()
        .zip(
            std::fs::read_to_string(path)
                .unwrap()
                .lines()
                .filter(|l| !l.starts_with('#') && !l.starts_with("received_ns"))
                .map(|l| l.split(',').nth(4).unwrap().parse::<u64>().unwrap()),
        )
        .map(|((received, _, op, _), len)| (received, op, len))
        .collect()
}

#[test]
fn the_control_socket_reports_changes_parameters_and_switches_devices() {
    if !have("qemu-io") {
        return;
    }
    let tmp = temp_dir("emu-control");
    let dir = tmp.path();
    let device = device_file(dir);
    let socket = dir.join("control.sock");
    let emu = nbd_emulator(&device, "64m", &["--control", socket.to_str().unwrap()]);
    let uri = emu.nbd().to_string();
    run_ok("qemu-io", &["-f", "raw", &uri, "-c", "write -P 7 0 64k"]);
    let report = control(&socket, "report");
    assert_eq!(report["ok"], true, "{report}");
    assert_eq!(report["report"]["requests"]["write"], 1, "{report}");
    // How many requests the pacing thread received from the socket itself depends on whether
    // it was spinning when they came; the count is there either way.
    assert!(
        report["report"]["requests"]["polled"]["nbd"]
            .as_u64()
            .is_some(),
        "{report}"
    );

    // Random reads become 5 ms: the model's response time says so after the change.
    let changed = control(&socket, "set linear.rr.a_us=5000 linear.sr.a_us=5000");
    assert_eq!(changed["ok"], true, "{changed}");
    run_ok("qemu-io", &["-f", "raw", &uri, "-c", "read -P 7 0 64k"]);
    let report = control(&socket, "report");
    assert!(
        report["report"]["model"]["read"]["latency_ns"]["min"]
            .as_u64()
            .unwrap()
            >= 5_000_000,
        "{report}"
    );
    let switched = control(&socket, "device stec-zeus");
    assert_eq!(switched["ok"], true, "{switched}");
    // The data stayed where it was.
    run_ok("qemu-io", &["-f", "raw", &uri, "-c", "read -P 7 0 64k"]);
    let refused = control(&socket, "device no-such-device");
    assert_eq!(refused["ok"], false);
    assert!(
        refused["error"]
            .as_str()
            .unwrap()
            .contains("no-such-device"),
        "{refused}"
    );
    let refused = control(&socket, "set linear.bogus=1");
    assert_eq!(refused["ok"], false);
    assert!(
        refused["error"].as_str().unwrap().contains("bogus"),
        "{refused}"
    );
    assert_eq!(control(&socket, "frobnicate")["ok"], false);

    emu.signal("USR1");
    let (status, out, err) = emu.stop();
    assert!(status.success());
    assert!(err.contains("lateness"), "SIGUSR1 printed no report: {err}");
    assert!(out.contains("stec-zeus"), "{out}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// Reads the JSON document at `path` once it is there and whole (SIGUSR1 writes it from the
/// emulator's signal thread).
fn wait_for_json(path: &Path) -> serde_json::Value {
    for _ in 0..200 {
        if let Ok(text) = std::fs::read_to_string(path) {
            if let Ok(doc) = serde_json::from_str(&text) {
                return doc;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("{} never held a JSON document", path.display());
}

fn numbers(v: &serde_json::Value) -> Vec<Option<u64>> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(serde_json::Value::as_u64)
        .collect()
}

/// The emulate document's series adds up to its replies, lateness has a window wherever
/// replies were (and only there), and the distributions are CDFs. Returns the replies.
fn assert_series_and_lateness_add_up(doc: &serde_json::Value) -> u64 {
    let replied = doc["requests"]["replied"].as_u64().unwrap();
    let series = &doc["series"];
    assert_eq!(series["clock"], "wall");
    let requests = numbers(&series["ops"]["all"]["requests"]);
    let n = series["windows"].as_u64().unwrap() as usize;
    assert_eq!(requests.len(), n);
    assert_eq!(requests.iter().flatten().sum::<u64>(), replied, "{series}");
    assert_eq!(
        doc["model"]["requests"].as_u64().unwrap(),
        replied,
        "the model's summary and the series count the same replies"
    );
    for op in ["read", "write", "trim", "flush"] {
        let per_op = match series["ops"].get(op) {
            Some(figures) => numbers(&figures["requests"]).iter().flatten().sum::<u64>(),
            None => 0,
        };
        assert_eq!(per_op, doc["requests"][op].as_u64().unwrap(), "{op}");
    }
    let end_ns = series["end_ns"].as_u64().unwrap();
    assert!(end_ns <= doc["elapsed_ns"].as_u64().unwrap());
    assert!(series["window_ns"].as_u64().unwrap() * n as u64 >= end_ns);
    for figure in ["mean", "p50", "p99", "max"] {
        let values = &series["lateness_ns"][figure];
        assert_eq!(values.as_array().unwrap().len(), n, "lateness_ns.{figure}");
        for (i, (value, requests)) in values.as_array().unwrap().iter().zip(&requests).enumerate() {
            assert_eq!(
                !value.is_null(),
                requests.unwrap() > 0,
                "window {i}: lateness_ns.{figure} {value} with {requests:?} replies"
            );
        }
    }
    let lateness = &doc["lateness"];
    let cdf: Vec<(f64, u64)> = lateness["cdf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["fraction"].as_f64().unwrap(),
                p["lateness_ns"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(cdf.last().map(|p| p.0), Some(1.0));
    assert!(cdf.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));
    assert_eq!(
        cdf.last().unwrap().1,
        lateness["lateness_ns"]["max"].as_u64().unwrap()
    );
    let relative: Vec<f64> = lateness["relative_cdf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["percent"].as_f64().unwrap())
        .collect();
    assert_eq!(relative.len(), cdf.len());
    assert!(relative.windows(2).all(|w| w[0] <= w[1]));
    // Every read and write takes the model time, so each has a Δt/t; a flush may take none
    // (stec-zeus's), and then has none.
    let timed = lateness["relative_percent"]["replies"].as_u64().unwrap();
    let flushes = doc["requests"]["flush"].as_u64().unwrap();
    assert!((replied - flushes..=replied).contains(&timed), "{lateness}");
    assert!(lateness["relative_percent"]["p50"].as_f64().unwrap() <= relative[relative.len() - 1]);
    replied
}

#[test]
fn the_json_carries_the_series_and_lateness_through_sigusr1_a_switch_and_the_exit() {
    if !have("qemu-io") {
        storsim_testenv::missing("qemu-io not found: the emulate series test needs an NBD client");
        return;
    }
    let tmp = temp_dir("emu-series");
    let dir = tmp.path();
    let device = device_file(dir);
    let socket = dir.join("control.sock");
    let json = dir.join("run.json");
    let emu = nbd_emulator(
        &device,
        "64m",
        &[
            "--control",
            socket.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ],
    );
    let uri = emu.nbd().to_string();
    let writes: Vec<String> = (0..16)
        .map(|i| format!("write -P 7 {}k 64k", i * 64))
        .collect();
    let mut args = vec!["-f", "raw", uri.as_str()];
    for w in &writes {
        args.extend(["-c", w.as_str()]);
    }
    run_ok("qemu-io", &args);

    // A report mid-run: the document so far, the run going on.
    emu.signal("USR1");
    let mid = wait_for_json(&json);
    // The writes, and the flush qemu-io sends before it closes.
    let mid_replied = assert_series_and_lateness_add_up(&mid);
    assert!(mid_replied >= 16, "{mid_replied} replies");
    assert_eq!(mid["requests"]["write"], 16);
    // On the first device every request takes time (flushes 50 µs): each has a Δt/t.
    assert_eq!(mid["lateness"]["relative_percent"]["replies"], mid_replied);

    // After a switch the series goes on, with the same recording.
    let switched = control(&socket, "device stec-zeus");
    assert_eq!(switched["ok"], true, "{switched}");
    run_ok(
        "qemu-io",
        &[
            "-f",
            "raw",
            &uri,
            "-c",
            "read -P 7 0 64k",
            "-c",
            "read -P 7 64k 64k",
            "-c",
            "flush",
        ],
    );
    let (status, _, err) = emu.stop();
    assert!(status.success(), "{err}");
    let end = wait_for_json(&json);
    assert!(assert_series_and_lateness_add_up(&end) >= mid_replied + 3);
    assert_eq!(end["requests"]["write"], 16);
    assert_eq!(end["device"]["switches"][0], "stec-zeus");
    let reads = numbers(&end["series"]["ops"]["read"]["requests"]);
    assert_eq!(reads.iter().flatten().sum::<u64>(), 2);
    // The reads came after the report: the windows they are in end after its series did.
    let window_ns = end["series"]["window_ns"].as_u64().unwrap();
    let first_read = reads.iter().position(|r| r.unwrap() > 0).unwrap() as u64;
    assert!((first_read + 1) * window_ns > mid["series"]["end_ns"].as_u64().unwrap());
}

#[test]
fn hostile_bytes_close_one_connection_and_the_server_serves_on() {
    if !have("qemu-io") {
        return;
    }
    let tmp = temp_dir("emu-hostile");
    let dir = tmp.path();
    let device = device_file(dir);
    let emu = nbd_emulator(&device, "16m", &[]);
    let uri = emu.nbd().to_string();
    run_ok("qemu-io", &["-f", "raw", &uri, "-c", "write -P 3 0 64k"]);
    let addr = uri
        .trim_start_matches("nbd://")
        .split('/')
        .next()
        .unwrap()
        .to_string();
    let mut x = 99u64;
    for _ in 0..20 {
        if let Ok(mut s) = std::net::TcpStream::connect(&addr) {
            let junk: Vec<u8> = (0..4096)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            let _ = s.write_all(&junk);
        }
    }
    let out = run_ok("qemu-io", &["-f", "raw", &uri, "-c", "read -P 3 0 64k"]);
    assert!(!out.contains("verification failed"), "{out}");
    let (status, _, _) = emu.stop();
    assert!(status.success());
    std::fs::remove_dir_all(dir).unwrap();
}

/// The CPUs in a `/proc/.../status` file's `Cpus_allowed_list` line (`0-3,6`).
fn cpus_allowed(status_path: &Path) -> Vec<usize> {
    let status = std::fs::read_to_string(status_path).unwrap();
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim();
    let mut cpus = Vec::new();
    for part in list.split(',') {
        let (first, last) = part.split_once('-').unwrap_or((part, part));
        cpus.extend(first.parse::<usize>().unwrap()..=last.parse::<usize>().unwrap());
    }
    cpus
}

/// `--pacing-cpu` gives the pacing thread that CPU alone and keeps every other thread of the
/// emulator (signals, NBD, the control socket) on the rest.
#[test]
fn the_pacing_thread_runs_on_the_cpu_asked_for_and_the_others_keep_off_it() {
    let allowed = cpus_allowed(Path::new("/proc/self/status"));
    let cpu = *allowed.last().unwrap();
    let tmp = temp_dir("emu-cpu");
    let control = tmp.path().join("control.sock");
    let emu = nbd_emulator(
        "stec-zeus",
        "16m",
        &[
            "--pacing-cpu",
            &cpu.to_string(),
            "--control",
            control.to_str().unwrap(),
        ],
    );
    let others: Vec<usize> = allowed.iter().copied().filter(|&c| c != cpu).collect();
    let mut threads = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{}/task", emu.pid())).unwrap() {
        let task = task.unwrap().path();
        let name = std::fs::read_to_string(task.join("comm")).unwrap();
        threads.push((name.trim().to_string(), cpus_allowed(&task.join("status"))));
    }
    let pacers: Vec<_> = threads
        .iter()
        .filter(|(n, _)| n == "storsim-pacer")
        .collect();
    assert_eq!(pacers.len(), 1, "{threads:?}");
    assert_eq!(pacers[0].1, vec![cpu], "{threads:?}");
    for (name, cpus) in threads.iter().filter(|(n, _)| n != "storsim-pacer") {
        // With only one CPU to use, everything shares it.
        let expected = if others.is_empty() { &allowed } else { &others };
        assert_eq!(cpus, expected, "thread {name}: {threads:?}");
    }
    assert!(threads.len() >= 4, "{threads:?}");
    let (status, _, err) = emu.stop();
    assert!(status.success(), "{err}");
    assert!(
        err.contains(&format!("pacing thread on CPU {cpu}")),
        "{err}"
    );
}

#[test]
fn bad_emulate_arguments_are_refused_with_exit_2() {
    let cases: &[(&[&str], &str)] = &[
        (
            &[
                "--device",
                "stec-zeus",
                "--size",
                "16m",
                "--nbd",
                "0.0.0.0:0",
            ],
            "loopback",
        ),
        (
            &[
                "--device",
                "stec-zeus",
                "--size",
                "1000",
                "--nbd",
                "127.0.0.1:0",
            ],
            "512",
        ),
        (
            &[
                "--device",
                "stec-zeus",
                "--size",
                "1t",
                "--nbd",
                "127.0.0.1:0",
            ],
            "more than",
        ),
        (
            &[
                "--device",
                "stec-zeus",
                "--size",
                "16m",
                "--nbd",
                "127.0.0.1:0",
                "--backing",
                "tape",
            ],
            "--backing",
        ),
        (
            &[
                "--device",
                "no-such",
                "--size",
                "16m",
                "--nbd",
                "127.0.0.1:0",
            ],
            "no-such",
        ),
        (&["--device", "stec-zeus", "--size", "16m"], "--nbd"),
        (
            &[
                "--device",
                "stec-zeus",
                "--size",
                "16m",
                "--nbd",
                "127.0.0.1:0",
                "--fuse-transport",
                "io-uring",
            ],
            "--fuse",
        ),
        (
            &[
                "--device",
                "stec-zeus",
                "--size",
                "16m",
                "--fuse",
                "/nonexistent",
                "--fuse-transport",
                "carrier-pigeon",
            ],
            "--fuse-transport",
        ),
        (
            &[
                "--device",
                "stec-zeus",
                "--size",
                "16m",
                "--nbd",
                "127.0.0.1:0",
                "--pacing-cpu",
                "4096",
            ],
            "--pacing-cpu 4096: this process may run only on CPUs",
        ),
        (
            &[
                "--device",
                "stec-zeus",
                "--size",
                "16m",
                "--nbd",
                "127.0.0.1:0",
                "--pacing-cpu",
                "first",
            ],
            "--pacing-cpu",
        ),
    ];
    for (args, needle) in cases {
        let mut all = vec!["emulate"];
        all.extend_from_slice(args);
        let o = common::storsim(&all);
        let err = common::stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(needle),
            "{args:?}: expected `{needle}` in: {err}"
        );
    }
}
