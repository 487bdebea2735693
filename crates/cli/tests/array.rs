//! Arrays through the `storsim` binary: the bundled RAID-0 example, a RAID-1 file whose
//! children are files beside it, a mirror with a member that fails writes, a bad array
//! file's exit status and message, and a RAID-5 emulated over NBD that loses a member while
//! qemu-io writes and reads, rebuilds onto its spare and reads back every byte.

mod common;

use common::{counter, simulate_json, stderr, storsim, temp_dir};

#[test]
fn the_raid0_example_stripes_large_reads_over_both_ssds() {
    let requests = 2000;
    let workload = format!("synthetic:rw=read,bs=256k,iodepth=8,requests={requests}");
    let v = simulate_json("examples/raid0-flashsim.toml", &workload, "raid0");
    assert_eq!(v["device"]["model"], "array");
    assert_eq!(v["run"]["requests_completed"], requests);
    // Capacity: two SSDs, the smaller in whole 64 KiB rows.
    let one = simulate_json(
        "flashsim-2009",
        "synthetic:rw=read,bs=4k,requests=1",
        "raid0-one",
    );
    let ssd_bytes = one["device"]["capacity_bytes"].as_u64().unwrap();
    assert_eq!(
        v["device"]["capacity_bytes"].as_u64().unwrap(),
        2 * (ssd_bytes / 65536 * 65536)
    );
    // A 256 KiB read aligned to its size covers four 64 KiB units, two on each child, which
    // merge into one 128 KiB piece per child.
    let n = requests as f64;
    assert_eq!(counter(&v, "requests"), n);
    assert_eq!(counter(&v, "split_requests"), n);
    assert_eq!(counter(&v, "pieces"), 2.0 * n);
    for child in 0..2 {
        assert_eq!(counter(&v, &format!("child{child}_pieces")), n);
        assert_eq!(
            counter(&v, &format!("child{child}_read_bytes")),
            n * 131072.0
        );
        // The SSD's own counters, under the child's prefix: 64 pages of 2 KiB per piece.
        assert_eq!(
            counter(&v, &format!("child{child}_ssd_host_read_pages")),
            n * 64.0
        );
    }
}

#[test]
fn a_raid1_file_with_children_beside_it_runs_from_another_directory() {
    let tmp = temp_dir("raid1");
    let dir = tmp.path();
    std::fs::write(
        dir.join("lin.toml"),
        r#"
model = "linear"
capacity_bytes = 1_000_000_000
[linear]
sr = { a_us = 10.0, b_us_per_kib = 1.0 }
sw = { a_us = 20.0, b_us_per_kib = 2.0 }
rr = { a_us = 30.0, b_us_per_kib = 1.0 }
rw = { a_us = 40.0, b_us_per_kib = 2.0 }
"#,
    )
    .unwrap();
    let array = dir.join("mirror.toml");
    std::fs::write(
        &array,
        r#"
model = "array"
[array]
level = "raid1"
read_policy = "round-robin"
queue_depth = 8
children = ["lin.toml", "stec-zeus"]
"#,
    )
    .unwrap();
    let requests = 3000;
    let v = simulate_json(
        array.to_str().unwrap(),
        &format!("synthetic:rw=randrw,bs=4k,iodepth=4,requests={requests}"),
        "raid1-run",
    );
    assert_eq!(v["run"]["requests_completed"], requests);
    assert_eq!(v["device"]["capacity_bytes"], 1_000_000_000u64);
    // Every write reaches both copies; every read one, alternating.
    let writes = counter(&v, "child0_write_bytes") / 4096.0;
    assert_eq!(counter(&v, "child1_write_bytes"), writes * 4096.0);
    let reads0 = counter(&v, "child0_read_bytes") / 4096.0;
    let reads1 = counter(&v, "child1_read_bytes") / 4096.0;
    assert_eq!(reads0 + reads1 + writes, requests as f64);
    assert!((reads0 - reads1).abs() <= 1.0, "{reads0} vs {reads1}");
}

#[test]
fn a_mirror_drops_the_member_that_fails_writes_and_the_host_sees_no_error() {
    let device = "examples/faults/raid1-failing-member.toml";
    let workload = "synthetic:rw=randrw,bs=16k,iodepth=8,requests=20000,seed=3";
    let v = simulate_json(device, workload, "raid1-failing");
    assert_eq!(v["run"]["requests_completed"], 20000);
    // A faults layer sits below, so the summary counts errors: there are none.
    assert_eq!(v["summary"]["errors"]["total"], 0);
    assert_eq!(counter(&v, "member_failures"), 1.0);
    assert_eq!(counter(&v, "failed_children"), 1.0);
    // Child 0 failed the writes it was given from 50 ms until it was marked failed, and no
    // more: the writes after it skip it, each completed from child 1 alone.
    let injected = counter(&v, "child0_linear_faults_injected_write_error");
    assert!(injected >= 1.0);
    assert_eq!(counter(&v, "member_errors"), injected);
    assert!(counter(&v, "degraded_writes") > 1000.0);
    // Reads stop reaching child 0 once it is out: its read bytes stay put in every window
    // starting after the failure, while child 1's go on growing.
    let series = &v["series"];
    let window_ns = series["window_ns"].as_u64().unwrap();
    let bytes = |child: &str| -> Vec<f64> {
        series["device"][child]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect()
    };
    let (child0, child1) = (bytes("child0_read_bytes"), bytes("child1_read_bytes"));
    let after = (60_000_000u64.div_ceil(window_ns)) as usize;
    assert!(child0[0] > 0.0, "child 0 served reads before it failed");
    assert!(child0[after..]
        .iter()
        .all(|&b| b == counter(&v, "child0_read_bytes")));
    assert!(child1[after] < *child1.last().unwrap());
    // The same run again gives the same results.
    let again = simulate_json(device, workload, "raid1-failing-again");
    assert_eq!(again["device"], v["device"]);
    assert_eq!(again["summary"], v["summary"]);
}

#[test]
fn bad_array_files_exit_2_naming_the_file_and_key() {
    let tmp = temp_dir("array-bad");
    let dir = tmp.path();
    let cycle = dir.join("cycle.toml");
    std::fs::write(
        &cycle,
        "model = \"array\"\n[array]\nlevel = \"raid1\"\nchildren = [\"cycle.toml\"]\n",
    )
    .unwrap();
    let missing = dir.join("missing.toml");
    std::fs::write(
        &missing,
        "model = \"array\"\n[array]\nlevel = \"raid0\"\nchildren = [\"stec-zeus\"]\n",
    )
    .unwrap();
    for (file, needles) in [
        (&cycle, ["array.children", "contains itself"]),
        (&missing, ["array.stripe_unit_bytes", "required for raid0"]),
    ] {
        let o = storsim(&[
            "simulate",
            "--device",
            file.to_str().unwrap(),
            "--workload",
            "synthetic:rw=read,bs=4k,requests=10",
            "--quiet",
        ]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains(file.to_str().unwrap()), "{err}");
        for needle in needles {
            assert!(err.contains(needle), "{needle} missing from {err}");
        }
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// What the NBD client wrote must read back whatever happens to a member: a RAID-5 of four
/// 8 MiB members emulated over NBD is filled by qemu-io, member 1 fails through the control
/// socket, and the disk is read back (and partly rewritten) while the array runs degraded and
/// rebuilds onto its spare at 2 MB/s (128 rows of 64 KiB: about 4 s), then read back again once
/// the rebuild has finished. No request fails and every byte is what was last written. The
/// model holds no bytes, so this checks that a member's failure never reaches the client as an
/// error and that the array stays whole through the rebuild.
#[test]
fn a_raid5_over_nbd_loses_a_member_rebuilds_and_reads_back_every_byte() {
    use common::system::{control, have, run, Emulator};
    if !have("qemu-io") {
        return;
    }
    let tmp = temp_dir("raid5-nbd");
    let dir = tmp.path();
    let array = raid5_with_spare(dir);
    let socket = dir.join("control.sock");
    let emu = Emulator::device_over_nbd(
        array.to_str().unwrap(),
        &dir.join("nbd.sock"),
        "24m",
        &["--control", socket.to_str().unwrap()],
    );
    // Each of qemu-io's commands, run in one connection; its output.
    let qemu_io = |commands: &[String]| -> String {
        let mut args = vec!["-f", "raw", emu.nbd()];
        for c in commands {
            args.extend(["-c", c.as_str()]);
        }
        let o = run("qemu-io", &args);
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    };
    const MIB: usize = 1 << 20;
    let mut pattern: Vec<u8> = (0..24).map(|i| 0x10 + i as u8).collect();
    let writes = |regions: &[usize], pattern: &[u8]| -> Vec<String> {
        regions
            .iter()
            .map(|&i| format!("write -P {} {} 1M", pattern[i], i * MIB))
            .collect()
    };
    let read_all = |pattern: &[u8], order: &mut dyn Iterator<Item = usize>| -> Vec<String> {
        order
            .map(|i| format!("read -P {} {} 1M", pattern[i], i * MIB))
            .collect()
    };
    let all: Vec<usize> = (0..24).collect();
    let out = qemu_io(&writes(&all, &pattern));
    assert_eq!(
        out.matches("wrote 1048576/1048576 bytes").count(),
        24,
        "{out}"
    );

    let added = control(&socket, "fault add child=1 kind=fail");
    assert_eq!(added["ok"], true, "{added}");
    // Read from the end, where the rebuild (which starts at row 0 once the array notices the
    // failure) arrives last, so that these reads are served degraded; rewrite two regions.
    let mut commands = read_all(&pattern, &mut (0..24).rev());
    pattern[0] = 0xa0;
    pattern[23] = 0xa3;
    commands.extend(writes(&[0, 23], &pattern));
    commands.extend(read_all(&pattern, &mut [0, 23].into_iter()));
    let out = qemu_io(&commands);
    assert_eq!(
        out.matches("read 1048576/1048576 bytes").count(),
        26,
        "{out}"
    );
    assert_eq!(
        out.matches("wrote 1048576/1048576 bytes").count(),
        2,
        "{out}"
    );
    assert!(!out.contains("fail") && !out.contains("error"), "{out}");

    let report = control(&socket, "report");
    assert_eq!(report_counter(&report, "member_failures"), 1.0, "{report}");
    assert!(report_counter(&report, "degraded_reads") > 0.0, "{report}");
    // The rebuild goes on in real time: wait for it (a few seconds at 2 MB/s).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let report = loop {
        let report = control(&socket, "report");
        if report_counter(&report, "rebuild_progress") == 1.0 {
            break report;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the rebuild did not finish: {report}"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    assert_eq!(report_counter(&report, "rebuild_bytes"), 8.0 * MIB as f64);
    let out = qemu_io(&read_all(&pattern, &mut all.iter().copied()));
    assert_eq!(
        out.matches("read 1048576/1048576 bytes").count(),
        24,
        "{out}"
    );
    let report = control(&socket, "report");
    assert_eq!(report["report"]["requests"]["failed"], 0, "{report}");
    assert_eq!(report_counter(&report, "lost_pieces"), 0.0);
    let (status, _, err) = emu.stop();
    assert!(status.success(), "{err}");
}

/// Writes a RAID-5 of four 8 MiB linear members with a spare, rebuilt at 2 MB/s, into `dir`;
/// returns the array file's path.
fn raid5_with_spare(dir: &std::path::Path) -> std::path::PathBuf {
    std::fs::write(
        dir.join("member.toml"),
        "model = \"linear\"\ncapacity_bytes = 8_388_608\n[linear]\n\
         sr = { a_us = 20.0, b_us_per_kib = 0.5 }\nsw = { a_us = 20.0, b_us_per_kib = 0.5 }\n\
         rr = { a_us = 20.0, b_us_per_kib = 0.5 }\nrw = { a_us = 20.0, b_us_per_kib = 0.5 }\n",
    )
    .unwrap();
    let array = dir.join("raid5.toml");
    std::fs::write(
        &array,
        "model = \"array\"\n[array]\nlevel = \"raid5\"\nstripe_unit_bytes = 65536\n\
         children = [\"member.toml\", \"member.toml\", \"member.toml\", \"member.toml\"]\n\
         spare = \"member.toml\"\nrebuild_rate_mb_per_s = 2\n",
    )
    .unwrap();
    array
}

/// A counter of the device in a control socket's `report` answer.
fn report_counter(report: &serde_json::Value, name: &str) -> f64 {
    report["report"]["device"]["counters"][name]
        .as_f64()
        .unwrap_or_else(|| panic!("no counter {name}: {report}"))
}
