//! The hybrid model through the `storsim` binary: the example drive in both configurations
//! runs a workload, a bad hybrid file exits 2 with a message naming the file and key, and the
//! hybrid presets pass the acceptance checks (a response-time CDF above the plain
//! disk's on small random writes, nothing on flash for a large sequential write stream) and
//! the Momentus XT caches rereads; over a disk that fails every write, the example drive keeps
//! its dirty blocks on the flash.

mod common;

use common::{counter, fraction_within, simulate_json, stderr, storsim, temp_dir};

#[test]
fn the_example_controller_drive_offloads_small_writes() {
    let v = simulate_json(
        "examples/hybrid/controller.toml",
        "synthetic:rw=randrw,bs=4k,iodepth=4,requests=5000",
        "controller",
    );
    assert_eq!(v["device"]["model"], "hybrid");
    assert_eq!(v["run"]["requests_completed"], 5000);
    let writes = counter(&v, "host_writes_flash") + counter(&v, "host_writes_disk");
    assert!(writes > 0.0);
    assert_eq!(
        counter(&v, "host_writes_disk"),
        0.0,
        "4 KiB writes are small"
    );
    assert!(counter(&v, "flash_host_write_pages") > 0.0);
    assert!(
        counter(&v, "disk_rr_requests") > 0.0,
        "uncached reads go to the disk"
    );
}

#[test]
fn over_a_disk_that_fails_every_write_the_drive_keeps_its_dirty_blocks_on_the_flash() {
    let tmp = temp_dir("hybrid-failing-disk");
    let dir = tmp.path();
    let examples = common::repo_root().join("examples/hybrid");
    for file in ["flash.toml", "controller.toml"] {
        std::fs::copy(examples.join(file), dir.join(file)).unwrap();
    }
    let disk = std::fs::read_to_string(examples.join("disk.toml")).unwrap();
    std::fs::write(
        dir.join("disk.toml"),
        format!("{disk}\n[faults]\n[[faults.rule]]\nkind = \"write_error\"\n"),
    )
    .unwrap();
    let device = dir.join("controller.toml");
    let v = simulate_json(
        device.to_str().unwrap(),
        "synthetic:rw=randwrite,bs=4k,iodepth=4,requests=20000,seed=3",
        "hybrid-failing-disk-run",
    );
    assert_eq!(v["run"]["requests_completed"], 20000);
    // Every flush failed: nothing reached the disk, and each block was tried three times
    // before the flash kept it. Random blocks flush one a job.
    let given_up = counter(&v, "flush_given_up_blocks");
    assert!(given_up > 0.0);
    assert_eq!(counter(&v, "flush_failed_blocks"), 3.0 * given_up);
    for cause in ["on_demand", "space", "low_watermark", "idle"] {
        assert_eq!(counter(&v, &format!("flush_{cause}_bytes")), 0.0, "{cause}");
    }
    assert_eq!(
        counter(&v, "unflushable_blocks"),
        counter(&v, "dirty_blocks")
    );
    // Once those blocks filled the flash, writes went around it to the disk and failed there:
    // those are the host's only errors.
    let bypassed = counter(&v, "bypassed_writes");
    assert!(bypassed > 0.0);
    assert_eq!(counter(&v, "host_writes_disk"), bypassed);
    assert_eq!(
        v["summary"]["errors"]["write_error"].as_f64().unwrap(),
        bypassed
    );
    assert_eq!(v["summary"]["errors"]["total"].as_f64().unwrap(), bypassed);
}

#[test]
fn the_example_host_drive_runs() {
    let v = simulate_json(
        "examples/hybrid/host.toml",
        "synthetic:rw=randread,bs=4k,iodepth=2,requests=2000",
        "host",
    );
    assert_eq!(v["device"]["model"], "hybrid");
    assert_eq!(v["run"]["requests_completed"], 2000);
}

#[test]
fn a_bad_hybrid_file_exits_2_naming_the_key() {
    let tmp = temp_dir("bad");
    let file = tmp.path().join("bad-hybrid.toml");
    std::fs::write(
        &file,
        "model = \"hybrid\"\n[hybrid]\nflash = \"flashsim-2009\"\ndisk = \"missing-disk.toml\"\n",
    )
    .unwrap();
    let o = storsim(&[
        "simulate",
        "--device",
        file.to_str().unwrap(),
        "--workload",
        "synthetic:rw=randread,bs=4k,requests=10",
        "--quiet",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("bad-hybrid.toml") && err.contains("hybrid.disk"),
        "{err}"
    );
}

/// The thesis' Fig. 5.9 finding on the 2007 preset: on small random writes (with some reads)
/// the hybrid completes more requests within 10 ms than its own disk alone, because the
/// writes go to the flash instead of waiting for seeks once the disk's 8 MB cache is full.
#[test]
fn the_2007_hybrid_answers_more_small_random_writes_within_10_ms_than_its_disk() {
    // 50 requests a second: a load the disk sustains (its queue does not grow without bound),
    // so the comparison is of service, not of an overloaded queue.
    let workload = "synthetic:rw=randrw,rwmixread=20,bs=4k,iops=50,requests=6000,seed=2007";
    let hybrid = simulate_json("hybrid-laptop-2007", workload, "cdf-hybrid");
    let disk = simulate_json("hdd-laptop-2007", workload, "cdf-disk");
    for v in [&hybrid, &disk] {
        assert_eq!(v["run"]["requests_completed"], 6000);
    }
    let ten_ms = 10_000_000;
    let (h, d) = (
        fraction_within(&hybrid, ten_ms),
        fraction_within(&disk, ten_ms),
    );
    println!("within 10 ms: hybrid {h:.2}, disk {d:.2}");
    assert!(h > d, "hybrid {h} is not above the disk's {d}");
    // The gain comes from where the writes went, not from anything else in the run.
    assert!(counter(&hybrid, "host_writes_flash") > 0.0);
    assert_eq!(counter(&hybrid, "host_writes_disk"), 0.0);
}

/// A stream of 1 MiB sequential writes, all above the 64 KiB threshold, puts nothing on the
/// flash.
#[test]
fn a_large_sequential_write_stream_bypasses_the_flash() {
    let v = simulate_json(
        "hybrid-laptop-2007",
        "synthetic:rw=write,bs=1m,iodepth=4,requests=400",
        "sequential",
    );
    assert_eq!(v["run"]["requests_completed"], 400);
    assert_eq!(counter(&v, "host_writes_disk"), 400.0);
    for name in [
        "host_writes_flash",
        "host_writes_split",
        "write_blocks_flash",
        "to_flash_host_bytes",
        "flash_host_write_pages",
    ] {
        assert_eq!(counter(&v, name), 0.0, "{name}");
    }
    assert_eq!(counter(&v, "to_disk_host_bytes"), 400.0 * 1048576.0);
}

/// The Momentus XT preset caches reads: rereading a 4 MiB region is served mostly by the
/// flash, and its writes never go there.
#[test]
fn the_momentus_xt_serves_rereads_from_its_flash() {
    let v = simulate_json(
        "momentus-xt",
        "synthetic:rw=randrw,rwmixread=90,bs=4k,span=4m,requests=4000,seed=11",
        "momentus",
    );
    assert_eq!(v["run"]["requests_completed"], 4000);
    assert!(counter(&v, "promoted_blocks") > 0.0);
    let hit = counter(&v, "read_hit_ratio");
    assert!(hit > 0.5, "read hit ratio {hit}");
    assert_eq!(counter(&v, "write_blocks_flash"), 0.0);
    assert!(counter(&v, "host_writes_disk") > 0.0);
    assert!(counter(&v, "invalidated_blocks") > 0.0);
}
