//! The SSD model through the `storsim` binary: a preset with an FTL variant, a device file
//! written from scratch, the presets listing, a bad SSD file's exit status and message, and
//! raw flash refusing overwrites (`--on-refused`).

mod common;

use common::{counter, simulate_json, stderr, storsim, temp_dir};
use serde_json::Value;

#[test]
fn flashsim_2009_with_dftl_runs_a_synthetic_workload() {
    let v = simulate_json(
        "flashsim-2009:dftl",
        "synthetic:rw=randwrite,bs=4k,iodepth=8,requests=20000",
        "dftl",
    );
    assert_eq!(v["device"]["model"], "ssd");
    assert_eq!(v["device"]["name"], "flashsim-2009:dftl");
    assert_eq!(v["run"]["requests_completed"], 20000);
    // Two 2 KiB flash pages per 4 KiB write; DFTL adds its translation-page traffic.
    assert_eq!(counter(&v, "host_write_pages"), 40000.0);
    assert!(counter(&v, "write_amplification") >= 1.0);
    assert!(counter(&v, "flash_erases_gc") >= 0.0);
    assert!(counter(&v, "ftl_cmt_hits") >= 0.0);
    assert!(counter(&v, "ftl_cmt_misses") > 0.0);
}

#[test]
fn a_device_file_written_from_scratch_runs() {
    let tmp = temp_dir("scratch");
    let file = tmp.path().join("tiny-ssd.toml");
    std::fs::write(
        &file,
        r#"
model = "ssd"
queue_depth = 16

[ssd]
ftl = "page"

[ssd.geometry]
channels = 2
chips_per_channel = 1
dies_per_chip = 2
planes_per_die = 1
blocks_per_plane = 64
pages_per_block = 32
page_bytes = 4096

[ssd.timing]
cell = "mlc"
read_us_by_level = [40, 60]
program_us_by_level = [300, 900]
erase_us = 3000
channel_mts = 400

[ssd.page]
gc_policy = "d-choices"
gc_fraction_searched = 0.25
"#,
    )
    .unwrap();
    // 20,000 random 4 KiB writes over a 30 MiB device overwrite it several times: garbage
    // collection has to run.
    let v = simulate_json(
        file.to_str().unwrap(),
        "synthetic:rw=randwrite,bs=4k,iodepth=4,requests=20000",
        "scratch",
    );
    assert_eq!(v["device"]["model"], "ssd");
    assert_eq!(v["device"]["queue_depth"], 16);
    assert_eq!(v["device"]["capacity_bytes"], 7618 * 4096);
    assert!(counter(&v, "flash_erases_gc") > 0.0);
    assert!(counter(&v, "write_amplification") > 1.0);
}

#[test]
fn presets_lists_the_ssds() {
    let o = storsim(&["presets"]);
    assert!(o.status.success());
    let text = String::from_utf8(o.stdout).unwrap();
    for name in ["flashsim-2009", "bench2g", "sandisk-usb-anand", "tlc-nvme"] {
        let line = text
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("{name} missing from:\n{text}"));
        assert!(line.contains(" ssd "), "{line}");
    }
}

#[test]
fn bad_ssd_files_exit_2_naming_the_key() {
    let tmp = temp_dir("bad");
    let dir = tmp.path();
    for (text, needle) in [
        (
            "preset = \"bench2g\"\ncapacity_bytes = 1000000\n",
            "capacity_bytes",
        ),
        (
            "preset = \"bench2g\"\n[ssd.geometry]\npages_per_block = 0\n",
            "ssd.geometry.pages_per_block",
        ),
        (
            "preset = \"bench2g\"\n[ssd.fast]\nlog_fraction = 0.1\n",
            "ssd.fast",
        ),
        // Valid keys, but the page FTL finds no spare space: a build error, still exit 2.
        (
            "preset = \"bench2g\"\n[ssd.page]\nover_provisioning_fraction = 0.0\n",
            "spare space",
        ),
    ] {
        let file = dir.join("dev.toml");
        std::fs::write(&file, text).unwrap();
        let o = storsim(&[
            "simulate",
            "--device",
            file.to_str().unwrap(),
            "--workload",
            "synthetic:rw=randread,bs=4k,requests=10",
        ]);
        assert_eq!(o.status.code(), Some(2), "{text}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains("dev.toml") && err.contains(needle), "{err}");
    }
}

/// A device that wears out mid-run is a result, not bad input: the run ends there, the summary
/// of what completed is printed and written, and the exit status (3) tells scripts.
#[test]
fn a_device_that_wears_out_ends_the_run_with_its_results() {
    let tmp = temp_dir("wearout");
    let dir = tmp.path();
    let file = dir.join("fragile.toml");
    std::fs::write(
        &file,
        "preset = \"flashsim-2009:page\"\n[ssd]\nendurance_erases = 3\n\
         [ssd.geometry]\nchannels = 2\nchips_per_channel = 1\ndies_per_chip = 1\n\
         planes_per_die = 1\nblocks_per_plane = 64\npages_per_block = 32\n",
    )
    .unwrap();
    let json = dir.join("out.json");
    let o = storsim(&[
        "simulate",
        "--device",
        file.to_str().unwrap(),
        "--workload",
        "synthetic:rw=randwrite,bs=4k,iodepth=4,requests=200000",
        "--json",
        json.to_str().unwrap(),
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(
        err.contains("the device has failed") && !err.contains("panicked"),
        "{err}"
    );
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("RUN ENDED EARLY"), "{text}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let failure = v["run"]["device_failed"]
        .as_str()
        .expect("device_failed is set");
    assert!(failure.contains("request "), "{failure}");
    let completed = v["run"]["requests_completed"].as_u64().unwrap();
    assert!(completed > 0 && completed < 200_000, "{completed}");
    assert_eq!(v["summary"]["requests"].as_u64().unwrap(), completed);
    assert!(counter(&v, "retired_blocks") > 0.0);
}

/// A geometry whose maps cannot fit in memory is refused with a message before anything is
/// allocated (4.2 billion physical pages need up to 67 GB).
#[test]
fn a_device_too_large_for_memory_is_refused() {
    let available_kib: Option<u64> = std::fs::read_to_string("/proc/meminfo").ok().and_then(|t| {
        let line = t
            .lines()
            .find(|l| l.starts_with("MemAvailable:"))?
            .to_string();
        line.split_whitespace().nth(1)?.parse().ok()
    });
    match available_kib {
        None => {
            storsim_testenv::missing("no /proc/meminfo here");
            return;
        }
        Some(kib) if kib * 1024 > 60 << 30 => {
            storsim_testenv::missing("a machine with at most 60 GiB free (this one has more)");
            return;
        }
        Some(_) => {}
    }
    let tmp = temp_dir("huge");
    let file = tmp.path().join("huge.toml");
    std::fs::write(
        &file,
        "preset = \"flashsim-2009:page\"\n[ssd.geometry]\nchannels = 8\nchips_per_channel = 4\n\
         dies_per_chip = 2\nplanes_per_die = 2\nblocks_per_plane = 128000\npages_per_block = 256\n",
    )
    .unwrap();
    let o = storsim(&[
        "simulate",
        "--device",
        file.to_str().unwrap(),
        "--workload",
        "synthetic:rw=randread,bs=4k,requests=10",
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("huge.toml") && err.contains("of memory is available"),
        "{err}"
    );
}

/// A raw-flash device (no FTL) refuses a second write of a page until its block is erased. By
/// default that ends the run naming the record; `--on-refused count` reports each such request
/// and goes on with the rest.
#[test]
fn raw_flash_overwrites_stop_the_run_or_are_counted() {
    let tmp = temp_dir("raw-refused");
    let dir = tmp.path();
    let device = dir.join("raw.toml");
    std::fs::write(
        &device,
        "preset = \"sandisk-usb-anand\"\n[ssd]\nftl = \"raw\"\n",
    )
    .unwrap();
    // DiskSim ASCII: arrival (ms), device, first sector, sectors, flags (1 = read). Pages are
    // 2 KiB, four sectors: lines 4, 6 and 8 write pages 1, 2 and 0 a second time.
    let trace = dir.join("overwrites.trace");
    std::fs::write(
        &trace,
        "0.0 0 0 4 0\n\
         1.0 0 4 4 0\n\
         2.0 0 8 4 0\n\
         3.0 0 4 4 0\n\
         4.0 0 0 4 1\n\
         5.0 0 8 4 0\n\
         6.0 0 12 4 0\n\
         7.0 0 0 4 0\n",
    )
    .unwrap();
    let base = [
        "simulate",
        "--device",
        device.to_str().unwrap(),
        "--workload",
        trace.to_str().unwrap(),
        "--format",
        "disksim-ascii",
    ];

    let o = storsim(&base);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("overwrites.trace: line 4:")
            && err.contains("page 1 (block 0, page 1) is not erased")
            && err.contains("--on-refused count"),
        "{err}"
    );

    let refused = [
        ("line 4", "page 1 (block 0, page 1) is not erased"),
        ("line 6", "page 2 (block 0, page 2) is not erased"),
        ("line 8", "page 0 (block 0, page 0) is not erased"),
    ];
    for replay in [
        &[][..],
        &["--replay", "closed", "--iodepth", "2"],
        &["--replay", "afap"],
    ] {
        let json = dir.join("out.json");
        let mut args = base.to_vec();
        args.extend_from_slice(&["--on-refused", "count", "--json", json.to_str().unwrap()]);
        args.extend_from_slice(replay);
        let o = storsim(&args);
        assert_eq!(o.status.code(), Some(0), "{replay:?}: {}", stderr(&o));
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let run = &v["run"];
        assert_eq!(run["refused_requests"], 3, "{replay:?}: {run}");
        assert_eq!(run["requests_issued"], 5, "{replay:?}: {run}");
        assert_eq!(run["requests_completed"], 5, "{replay:?}: {run}");
        assert_eq!(v["summary"]["requests"], 5, "{replay:?}");
        assert_eq!(v["summary"]["write"]["requests"], 4, "{replay:?}");
        assert_eq!(v["summary"]["read"]["requests"], 1, "{replay:?}");
        assert_eq!(counter(&v, "ftl_rejected_programs"), 3.0, "{replay:?}");
        let first = run["first_refused"].as_array().unwrap();
        assert_eq!(first.len(), 3, "{replay:?}: {run}");
        for (f, (line, page)) in first.iter().zip(refused) {
            assert_eq!(f["position"], line, "{replay:?}: {f}");
            let reason = f["reason"].as_str().unwrap();
            assert!(reason.contains(page), "{replay:?}: {reason}");
        }
        // The text summary says the same.
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(
            text.contains("3 requests refused by the device")
                && text.contains("line 4: flash translation layer: raw flash: page 1 ")
                && text.contains("line 8: flash translation layer: raw flash: page 0 "),
            "{replay:?}: {text}"
        );
    }

    // Nothing refused: the JSON still has the fields, and the text says nothing about them.
    std::fs::write(&trace, "0.0 0 0 4 0\n1.0 0 4 4 0\n").unwrap();
    let json = dir.join("clean.json");
    let mut args = base.to_vec();
    args.extend_from_slice(&["--on-refused", "count", "--json", json.to_str().unwrap()]);
    let o = storsim(&args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["run"]["refused_requests"], 0);
    assert_eq!(v["run"]["first_refused"], Value::Array(Vec::new()));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(!text.contains("refused by the device"), "{text}");
}

/// Runs `simulate` on the MSR sample trace (wrapped onto the device) with `extra` options,
/// not quietly (the warning is for a person at the terminal); returns the report and stderr.
fn msr_sample_on(device: &str, extra: &[&str], name: &str) -> (Value, String) {
    let dir = temp_dir(name);
    let out = dir.path().join("out.json");
    let trace = common::repo_root().join("examples/oltp-sample.msr.csv");
    let mut args = vec![
        "simulate",
        "--device",
        device,
        "--workload",
        trace.to_str().unwrap(),
        "--wrap",
        "--json",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = storsim(&args);
    assert!(o.status.success(), "storsim failed: {}", stderr(&o));
    let v = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    (v, stderr(&o))
}

#[test]
fn reads_of_a_clean_device_warn_once_and_precondition_fill_gives_them_flash_time() {
    let (clean, err) = msr_sample_on("flashsim-2009", &[], "unmapped-clean");
    let read = counter(&clean, "host_read_pages");
    let unmapped = counter(&clean, "host_read_unmapped_pages");
    assert!(unmapped * 2.0 > read, "{unmapped} of {read}");
    // The sample is replayed with --wrap, which warns of its own (the factor the addresses
    // reached); the unmapped reads are warned of once.
    assert_eq!(err.matches("had never been written").count(), 1, "{err}");
    let expected = format!("{unmapped} of the {read} pages read had never been written");
    assert!(err.contains(&expected), "{err}");
    assert!(err.contains("--precondition fill"), "{err}");

    // The same device filled once, chosen on the command line without editing a file: every
    // page read holds data, each read costs flash time, and nothing is said.
    let (filled, err) = msr_sample_on(
        "flashsim-2009",
        &["--precondition", "fill"],
        "unmapped-fill",
    );
    assert_eq!(
        filled["device"]["name"],
        "flashsim-2009 [precondition=fill]"
    );
    assert_eq!(counter(&filled, "host_read_unmapped_pages"), 0.0);
    assert!(counter(&filled, "precondition_host_writes") > 0.0);
    assert!(
        filled["summary"]["read"]["service_ns"]["min"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    assert!(!err.contains("never been written"), "{err}");
}

#[test]
fn precondition_reaches_every_ssd_of_an_array_and_is_refused_without_one() {
    let dir = common::repo_root().join("examples/raid0-flashsim.toml");
    let (v, err) = msr_sample_on(
        dir.to_str().unwrap(),
        &["--precondition", "fill"],
        "raid0-fill",
    );
    assert!(!err.contains("never been written"), "{err}");
    let counters = v["device"]["counters"].as_object().unwrap();
    let filled: Vec<_> = counters
        .iter()
        .filter(|(k, _)| k.ends_with("precondition_host_writes"))
        .collect();
    assert!(filled.len() >= 2, "{filled:?}");
    assert!(
        filled.iter().all(|(_, x)| x.as_f64().unwrap() > 0.0),
        "{filled:?}"
    );

    let o = storsim(&[
        "simulate",
        "--device",
        "stec-zeus",
        "--precondition",
        "steady",
        "--workload",
        "synthetic:rw=randread,bs=4k,requests=10",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("holds no SSD"), "{}", stderr(&o));
}
