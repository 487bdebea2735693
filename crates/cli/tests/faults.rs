//! Injected faults reach real clients: qemu-io over NBD sees the read error a device file's
//! `[faults]` or the control socket's `fault add` injects, and reads again once it is cleared;
//! `simulate` counts the errors and retries them.

mod common;

use common::system::{control, have, run, run_ok, Emulator, Loop, Mounted};
use common::{repo_root, storsim, temp_dir};

/// qemu-io's output for one command on the export.
fn qemu_io(emu: &Emulator, command: &str) -> String {
    let o = run("qemu-io", &["-f", "raw", emu.nbd(), "-c", command]);
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn qemu_io_sees_a_read_error_injected_through_the_control_socket_until_it_is_cleared() {
    if !have("qemu-io") {
        return;
    }
    let tmp = temp_dir("faults-control");
    let dir = tmp.path();
    let socket = dir.join("control.sock");
    let nbd = dir.join("nbd.sock");
    let emu = Emulator::over_nbd(&nbd, "16m", &["--control", socket.to_str().unwrap()]);
    assert!(qemu_io(&emu, "read 0 4k").contains("read 4096/4096 bytes"));
    let added = control(&socket, "fault add kind=read_error lba_start=0 lba_end=8");
    assert_eq!(added["ok"], true, "{added}");
    assert_eq!(added["faults"][0]["kind"], "read_error");
    let in_force = control(&socket, "report");
    assert_eq!(
        in_force["report"]["device"]["faults"]["rules"][0]["lba_end"],
        8
    );
    let failed = qemu_io(&emu, "read 0 4k");
    assert!(failed.contains("Input/output error"), "{failed}");
    let mut reads_failed = 1;
    if have("qemu-img") {
        reads_failed += 1;
        // qemu-img copying the whole disk meets the bad sectors and says so.
        let copy = dir.join("copy.raw");
        let o = run(
            "qemu-img",
            &[
                "convert",
                "-f",
                "raw",
                "-O",
                "raw",
                emu.nbd(),
                copy.to_str().unwrap(),
            ],
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !o.status.success(),
            "qemu-img copied a disk with bad sectors"
        );
        assert!(err.contains("Input/output error"), "{err}");
    }
    // Outside the range, reads go on.
    assert!(qemu_io(&emu, "read 1M 4k").contains("read 4096/4096 bytes"));
    let refused = control(&socket, "fault add kind=read_error rate_per_million=0");
    assert_eq!(refused["ok"], false);
    assert!(refused["error"]
        .as_str()
        .unwrap()
        .contains("rate_per_million"));
    assert_eq!(control(&socket, "fault clear")["ok"], true);
    assert!(qemu_io(&emu, "read 0 4k").contains("read 4096/4096 bytes"));
    let report = control(&socket, "report");
    let injected = &report["report"]["device"]["counters"]["faults_injected_read_error"];
    assert_eq!(injected, reads_failed);
    let (status, _, err) = emu.stop();
    assert!(status.success(), "{err}");
}

#[test]
fn qemu_io_sees_no_space_from_a_device_files_faults() {
    if !have("qemu-io") {
        return;
    }
    let tmp = temp_dir("faults-file");
    let dir = tmp.path();
    let device = dir.join("full.toml");
    std::fs::write(
        &device,
        "preset = \"stec-zeus\"\n[faults]\n[[faults.rule]]\nkind = \"no_space\"\n",
    )
    .unwrap();
    let nbd = dir.join("nbd.sock");
    let emu = Emulator::start(&[
        "--device",
        device.to_str().unwrap(),
        "--size",
        "16m",
        "--nbd-unix",
        nbd.to_str().unwrap(),
    ]);
    let out = qemu_io(&emu, "write 0 4k");
    assert!(out.contains("No space left on device"), "{out}");
    let (status, _, err) = emu.stop();
    assert!(status.success(), "{err}");
}

#[test]
fn simulate_counts_each_injected_error_and_retries_a_lasting_one_in_vain() {
    let device = repo_root().join("examples/faults/flaky-ssd.toml");
    let workload = "synthetic:rw=randread,bs=4k,iodepth=4,requests=3000,span=16m,seed=3";
    let run_json = |extra: &[&str]| -> serde_json::Value {
        let tmp = temp_dir("faults-simulate");
        let out = tmp.path().join("out.json");
        let mut args = vec![
            "simulate",
            "--quiet",
            "--device",
            device.to_str().unwrap(),
            "--workload",
            workload,
            "--json",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let o = storsim(&args);
        assert!(o.status.success(), "{}", common::stderr(&o));
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap()
    };
    let plain = run_json(&[]);
    let injected = plain["device"]["counters"]["faults_injected_read_error"]
        .as_u64()
        .unwrap();
    // Every read of the first 8 MiB from request 100 on fails: about half of 2900.
    assert!(injected > 1000, "{injected}");
    assert_eq!(plain["summary"]["read"]["errors"]["media_error"], injected);
    assert_eq!(plain["summary"]["latency_includes_failed"], false);
    assert_eq!(plain["run"]["retries"], 0);
    // A media error that stays is retried and fails again: the retries double the injections
    // and the errors stay.
    let retried = run_json(&["--retries", "1"]);
    let errors = retried["summary"]["read"]["errors"]["media_error"]
        .as_u64()
        .unwrap();
    assert_eq!(retried["run"]["retries"], errors);
    assert_eq!(
        retried["device"]["counters"]["faults_injected_read_error"],
        2 * errors
    );
    assert_eq!(retried["summary"]["requests"], plain["summary"]["requests"]);
}

#[test]
fn a_program_under_cosim_gets_the_injected_write_error_as_its_errno() {
    if !have("dd") {
        return;
    }
    let tmp = temp_dir("faults-cosim");
    let dir = tmp.path().join("dev");
    std::fs::create_dir_all(&dir).unwrap();
    let device = tmp.path().join("failing.toml");
    // Writes fail from the third request on: dd's first two direct writes succeed.
    std::fs::write(
        &device,
        "preset = \"stec-zeus\"\n[faults]\n[[faults.rule]]\nkind = \"write_error\"\n\
         from_request = 3\n",
    )
    .unwrap();
    let report = tmp.path().join("report.json");
    let of = format!("of={}", dir.join("out").display());
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_storsim"))
        .args(["cosim", "--device", device.to_str().unwrap(), "--dir"])
        .arg(&dir)
        .args(["--quiet", "--report", report.to_str().unwrap(), "--"])
        .args([
            "dd",
            "if=/dev/zero",
            &of,
            "bs=64k",
            "count=8",
            "oflag=direct",
        ])
        .current_dir(repo_root())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "dd failed: {err}");
    assert!(err.contains("Input/output error"), "{err}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(report["summary"]["write"]["requests"], 3, "{report}");
    assert_eq!(
        report["device"]["faults"]["rules"][0]["kind"],
        "write_error"
    );
    assert_eq!(report["summary"]["write"]["errors"]["write_error"], 1);
    assert_eq!(
        report["device"]["counters"]["faults_injected_write_error"],
        1
    );
}

/// fio over `target` (its engine and file) with random 4 KiB writes that go on past errors;
/// returns its job object.
fn fio_continuing(target: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "--name=errors",
        "--rw=randwrite",
        "--bs=4k",
        "--iodepth=8",
        "--size=4m",
        "--continue_on_error=all",
        "--output-format=json",
    ];
    args.extend_from_slice(target);
    let out = run("fio", &args);
    let text = String::from_utf8_lossy(&out.stdout);
    // fio's nbd engine prints a line before the JSON.
    let json: serde_json::Value = serde_json::from_str(&text[text.find('{').unwrap_or(0)..])
        .unwrap_or_else(|e| panic!("{e}: {text}{}", String::from_utf8_lossy(&out.stderr)));
    json["jobs"][0].clone()
}

#[test]
fn fio_continuing_past_errors_counts_exactly_the_injected_write_errors_over_nbd() {
    if !have("fio") {
        return;
    }
    let tmp = temp_dir("faults-fio");
    let dir = tmp.path();
    let device = dir.join("flaky.toml");
    std::fs::write(
        &device,
        "preset = \"stec-zeus\"\n[faults]\n[[faults.rule]]\nkind = \"write_error\"\n\
         rate_per_million = 100000\n",
    )
    .unwrap();
    let socket = dir.join("control.sock");
    let emu = Emulator::start(&[
        "--device",
        device.to_str().unwrap(),
        "--size",
        "16m",
        "--nbd",
        "127.0.0.1:0",
        "--control",
        socket.to_str().unwrap(),
    ]);
    let uri = emu.nbd().to_string();
    let job = fio_continuing(&["--ioengine=nbd", &format!("--uri={uri}")]);
    let report = control(&socket, "report");
    let injected = report["report"]["device"]["counters"]["faults_injected_write_error"]
        .as_u64()
        .unwrap();
    // About one write in ten of 1024.
    assert!((50..200).contains(&injected), "{injected}");
    assert_eq!(job["total_err"], injected, "{job}");
    let (status, _, err) = emu.stop();
    assert!(status.success(), "{err}");
}

#[test]
fn ext4_on_the_emulated_disk_goes_read_only_after_an_injected_metadata_write_error() {
    let fuse = std::path::Path::new("/dev/fuse").exists();
    if !(fuse && have("losetup") && have("mkfs.ext4") && have("mount")) {
        return;
    }
    let tmp = temp_dir("faults-ext4");
    let dir = tmp.path();
    let socket = dir.join("control.sock");
    let emu = Emulator::over_fuse(dir, "64m", &["--control", socket.to_str().unwrap()]);
    let disk = emu.fuse_file.clone().unwrap();
    let Some(lo) = Loop::attach(&disk) else {
        return;
    };
    run_ok("mkfs.ext4", &["-q", "-F", &lo.0]);
    let fs = dir.join("ext4");
    {
        let _m = Mounted::new(&lo.0, &fs);
        std::fs::write(fs.join("before"), b"written before the fault").unwrap();
        run_ok("sync", &[]);
        // Every write fails from now on: the next journal commit cannot reach the disk.
        let added = control(&socket, "fault add kind=write_error");
        assert_eq!(added["ok"], true, "{added}");
        std::fs::write(fs.join("after"), b"x").unwrap();
        let _ = run("sync", &[]);
        // ext4 aborts its journal and remounts read-only (errors=remount-ro), or reports the
        // error on the next change: either way a new file can no longer be made.
        let refused = std::fs::write(fs.join("later"), b"y");
        let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
        let line = mounts
            .lines()
            .find(|l| l.starts_with(&format!("{} ", lo.0)))
            .unwrap_or("")
            .to_string();
        assert!(
            refused.is_err() || line.contains(" ro,") || line.contains(" ro "),
            "ext4 went on writing: {line}"
        );
        assert_eq!(control(&socket, "fault clear")["ok"], true);
    }
    let report = control(&socket, "report");
    assert!(
        report["report"]["device"]["counters"]["faults_injected_write_error"]
            .as_u64()
            .unwrap()
            > 0
    );
    drop(lo);
    let (status, out, err) = emu.stop();
    assert!(status.success(), "{status}: {out}{err}");
}

#[test]
fn fio_continuing_past_errors_counts_exactly_the_injected_read_errors_through_fuse_and_a_loop() {
    let fuse = std::path::Path::new("/dev/fuse").exists();
    if !(fuse && have("losetup") && have("fio")) {
        return;
    }
    let tmp = temp_dir("faults-fio-fuse");
    let dir = tmp.path();
    let socket = dir.join("control.sock");
    let emu = Emulator::over_fuse(dir, "16m", &["--control", socket.to_str().unwrap()]);
    let disk = emu.fuse_file.clone().unwrap();
    let Some(lo) = Loop::attach(&disk) else {
        return;
    };
    let added = control(&socket, "fault add kind=read_error rate_per_million=100000");
    assert_eq!(added["ok"], true, "{added}");
    let job = {
        let mut args = vec![
            "--name=errors",
            "--rw=randread",
            "--bs=4k",
            "--iodepth=8",
            "--size=4m",
            "--continue_on_error=all",
            "--output-format=json",
            "--ioengine=libaio",
            "--direct=1",
        ];
        let filename = format!("--filename={}", lo.0);
        args.push(&filename);
        let out = run("fio", &args);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let json: serde_json::Value = serde_json::from_str(&text[text.find('{').unwrap()..])
            .unwrap_or_else(|e| panic!("{e}: {text}"));
        json["jobs"][0].clone()
    };
    let report = control(&socket, "report");
    let injected = report["report"]["device"]["counters"]["faults_injected_read_error"]
        .as_u64()
        .unwrap();
    assert!((50..200).contains(&injected), "{injected}");
    assert_eq!(job["total_err"], injected, "{job}");
    drop(lo);
    let (status, out, err) = emu.stop();
    assert!(status.success(), "{status}: {out}{err}");
}

#[test]
fn over_nbd_a_hung_read_times_out_as_eio_and_a_read_only_device_refuses_writes_with_eperm() {
    if !have("qemu-io") {
        return;
    }
    let tmp = temp_dir("faults-hang");
    let dir = tmp.path();
    let device = dir.join("hangs.toml");
    std::fs::write(
        &device,
        "preset = \"stec-zeus\"\n[faults]\nhost_timeout_ms = 200\n\n[[faults.rule]]\n\
         kind = \"hang\"\nop = \"read\"\n\n[[faults.rule]]\nkind = \"read_only\"\n",
    )
    .unwrap();
    let socket = dir.join("control.sock");
    let nbd = dir.join("nbd.sock");
    let emu = Emulator::device_over_nbd(
        device.to_str().unwrap(),
        &nbd,
        "16m",
        &["--control", socket.to_str().unwrap()],
    );
    let read = qemu_io(&emu, "read 0 4k");
    assert!(read.contains("Input/output error"), "{read}");
    let write = qemu_io(&emu, "write 0 4k");
    assert!(write.contains("Operation not permitted"), "{write}");
    let report = control(&socket, "report");
    let counters = &report["report"]["device"]["counters"];
    assert!(
        counters["faults_injected_hang"].as_u64().unwrap() >= 1,
        "{counters}"
    );
    assert!(
        counters["faults_injected_read_only"].as_u64().unwrap() >= 1,
        "{counters}"
    );
    let (status, _, err) = emu.stop();
    assert!(status.success(), "{err}");
}

#[test]
fn a_sweep_varies_the_retries_and_each_point_counts_its_own() {
    let tmp = temp_dir("faults-sweep");
    let dir = tmp.path();
    let spec = dir.join("retries.toml");
    let device = repo_root().join("examples/faults/flaky-ssd.toml");
    std::fs::write(
        &spec,
        format!(
            "devices = [{:?}]\n\
             workloads = [\"synthetic:rw=randread,bs=4k,iodepth=4,requests=1000,span=16m\"]\n\
             [[point]]\ndevice = {:?}\n\
             workload = \"synthetic:rw=randread,bs=4k,iodepth=4,requests=1000,span=16m\"\n\
             label = \"retried\"\noptions = {{ retries = 2, retry_delay = \"1ms\" }}\n",
            device.to_str().unwrap(),
            device.to_str().unwrap()
        ),
    )
    .unwrap();
    let out = dir.join("out");
    let o = storsim(&[
        "sweep",
        spec.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--quiet",
        "--jobs",
        "1",
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let mut retries = Vec::new();
    for entry in std::fs::read_dir(out.join("points")).unwrap() {
        let path = entry.unwrap().path();
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let Ok(doc) = serde_json::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        if doc["kind"] == "simulate" {
            retries.push(doc["run"]["retries"].as_u64().unwrap());
        }
    }
    retries.sort_unstable();
    assert_eq!(retries.len(), 2, "{retries:?}");
    assert_eq!(retries[0], 0);
    assert!(retries[1] > 0);
}

#[test]
fn the_same_seed_strikes_the_same_requests_and_another_seed_others() {
    let tmp = temp_dir("faults-seed");
    let device = tmp.path().join("rate.toml");
    std::fs::write(
        &device,
        "preset = \"stec-zeus\"\n[faults]\n[[faults.rule]]\nkind = \"read_error\"\n\
         rate_per_million = 50000\n",
    )
    .unwrap();
    let run_with = |seed: &str| {
        let o = storsim(&[
            "simulate",
            "--quiet",
            "--device",
            device.to_str().unwrap(),
            "--workload",
            "synthetic:rw=randread,bs=4k,iodepth=4,requests=2000,seed=9",
            "--seed",
            seed,
            "--latency-includes-failed",
            "--json",
            tmp.path()
                .join(format!("run-{seed}.json"))
                .to_str()
                .unwrap(),
        ]);
        assert!(o.status.success(), "{}", common::stderr(&o));
        let doc: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(tmp.path().join(format!("run-{seed}.json"))).unwrap(),
        )
        .unwrap();
        (
            doc["summary"]["read"]["errors"]["media_error"].clone(),
            doc["summary"]["latency_ns"].clone(),
            doc["summary"]["latency_includes_failed"].clone(),
        )
    };
    let a = run_with("1");
    assert_eq!(a, run_with("1"));
    assert_eq!(a.2, true);
    // Both seeds are fixed, so this holds every time: they strike different numbers of reads.
    let b = run_with("2");
    assert_ne!(a.0, b.0, "another seed strikes other requests");
}

#[test]
fn emulate_s_seed_picks_which_reads_fail_the_same_way_every_time() {
    if !have("qemu-io") {
        return;
    }
    let tmp = temp_dir("faults-emulate-seed");
    let dir = tmp.path();
    let device = dir.join("flaky.toml");
    std::fs::write(
        &device,
        "preset = \"stec-zeus\"\n[faults]\n[[faults.rule]]\nkind = \"read_error\"\n\
         rate_per_million = 500000\n",
    )
    .unwrap();
    // Which of 48 reads, one after another, fail under a seed.
    let failures = |seed: &str| -> Vec<bool> {
        let nbd = dir.join(format!("nbd-{seed}.sock"));
        let emu = Emulator::start(&[
            "--device",
            device.to_str().unwrap(),
            "--size",
            "16m",
            "--seed",
            seed,
            "--nbd-unix",
            nbd.to_str().unwrap(),
        ]);
        let mut args = vec!["-f", "raw", emu.nbd()];
        let commands: Vec<String> = (0..48).map(|i| format!("read {}k 4k", i * 4)).collect();
        for c in &commands {
            args.extend(["-c", c.as_str()]);
        }
        let o = run("qemu-io", &args);
        let out = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        let (status, _, err) = emu.stop();
        assert!(status.success(), "{err}");
        // qemu-io answers each command with a line: the bytes read, or the error.
        let answers: Vec<bool> = out
            .lines()
            .filter_map(|l| {
                if l.starts_with("read 4096/4096 bytes") {
                    Some(false)
                } else if l.contains("Input/output error") {
                    Some(true)
                } else {
                    None
                }
            })
            .collect();
        assert_eq!(answers.len(), 48, "{out}");
        answers
    };
    let first = failures("5");
    assert!(first.contains(&true) && first.contains(&false), "{first:?}");
    assert_eq!(failures("5"), first, "the same seed struck other reads");
    assert_ne!(
        failures("6"),
        first,
        "another seed struck the same 48 reads"
    );
}

#[test]
fn a_mirror_member_failed_through_the_control_socket_drops_out_while_qemu_io_writes_on() {
    if !have("qemu-io") {
        return;
    }
    let tmp = temp_dir("faults-child");
    let dir = tmp.path();
    let socket = dir.join("control.sock");
    let nbd = dir.join("nbd.sock");
    let mirror = repo_root().join("examples/raid1-ssd-zeus.toml");
    let emu = Emulator::device_over_nbd(
        mirror.to_str().unwrap(),
        &nbd,
        "16m",
        &["--control", socket.to_str().unwrap()],
    );
    let refused = control(&socket, "fault add child=2 kind=fail");
    assert_eq!(refused["ok"], false, "{refused}");
    let message = refused["error"].as_str().unwrap();
    assert!(
        message.contains("child=2") && message.contains("0, 1"),
        "{message}"
    );
    assert!(qemu_io(&emu, "write -P 0x5a 0 64k").contains("wrote 65536/65536 bytes"));

    let added = control(&socket, "fault add child=1 kind=fail");
    assert_eq!(added["ok"], true, "{added}");
    assert_eq!(
        added["faults"],
        serde_json::json!([]),
        "nothing over the whole mirror"
    );
    assert_eq!(added["child_faults"]["1"][0]["kind"], "fail");
    assert_eq!(added["child_faults"]["0"], serde_json::json!([]));
    // The mirror takes the member out and goes on: the client's writes and reads succeed,
    // and what it wrote before and after reads back.
    let wrote = qemu_io(&emu, "write -P 0xa5 1M 64k");
    assert!(wrote.contains("wrote 65536/65536 bytes"), "{wrote}");
    let read = qemu_io(&emu, "read -P 0x5a 0 64k");
    assert!(read.contains("read 65536/65536 bytes"), "{read}");
    let read = qemu_io(&emu, "read -P 0xa5 1M 64k");
    assert!(read.contains("read 65536/65536 bytes"), "{read}");
    let report = control(&socket, "report");
    let device = &report["report"]["device"];
    assert_eq!(device["counters"]["member_failures"], 1.0, "{device}");
    assert_eq!(device["counters"]["failed_children"], 1.0, "{device}");
    assert_eq!(device["faults"]["children"]["1"][0]["kind"], "fail");
    assert_eq!(report["report"]["requests"]["failed"], 0, "{report}");

    let cleared = control(&socket, "fault clear");
    assert_eq!(
        cleared["child_faults"]["1"],
        serde_json::json!([]),
        "{cleared}"
    );
    let (status, _, err) = emu.stop();
    assert!(status.success(), "{err}");
}
