//! `model = "hybrid"` device files: both configurations, both admission modes, children
//! relative to the file, errors that name the file and the key, and the hybrid presets.

use storsim_config::{load_device, presets, ConfigError, DeviceSpec, HybridConfiguration};
use storsim_core::conformance;
use storsim_core::conformance::counter;
use storsim_core::{Completion, Device, Op};
use storsim_hybrid::{Admission, FlushPolicy, HostPlacement, HybridParams, Replacement};

/// A scratch directory holding `disk.toml`, removed when the returned guard drops.
fn dir(name: &str) -> tempfile::TempDir {
    let d = tempfile::Builder::new()
        .prefix(&format!(
            "storsim-hybrid-config-{}-{name}-",
            std::process::id()
        ))
        .tempdir()
        .unwrap();
    std::fs::write(
        d.path().join("disk.toml"),
        "model = \"linear\"\ncapacity_bytes = 1_000_000_000\n[linear]\n\
         sr = { a_us = 100, b_us_per_kib = 10 }\nsw = { a_us = 100, b_us_per_kib = 10 }\n\
         rr = { a_us = 8000, b_us_per_kib = 10 }\nrw = { a_us = 8000, b_us_per_kib = 10 }\n",
    )
    .unwrap();
    d
}

fn load(name: &str, hybrid_section: &str) -> Result<DeviceSpec, ConfigError> {
    let tmp = dir(name);
    let d = tmp.path();
    let file = d.join("hybrid.toml");
    std::fs::write(
        &file,
        format!("model = \"hybrid\"\n[hybrid]\n{hybrid_section}"),
    )
    .unwrap();
    load_device(file.to_str().unwrap()).map(|l| l.spec)
}

fn invalid_key(e: ConfigError) -> (String, String) {
    match e {
        ConfigError::Invalid { file, key, .. } => (file, key),
        other => panic!("expected an invalid key, got {other}"),
    }
}

#[test]
fn a_controller_file_loads_and_builds() {
    let spec = load(
        "controller",
        "flash = \"flashsim-2009\"\ndisk = \"disk.toml\"\nflush = \"low-watermark\"\n\
         high_watermark = 0.6\nlow_watermark = 0.2\nreplacement = \"fifo\"\n\
         pinned = [[0, 65536]]\nqueue_depth = 8\n",
    )
    .unwrap();
    let Some(h) = spec.params::<storsim_config::HybridSpec>() else {
        panic!("not a hybrid: {spec:?}")
    };
    let HybridConfiguration::Controller(p) = &h.configuration else {
        panic!("not configuration 2")
    };
    assert_eq!(
        p.flush,
        FlushPolicy::LowWatermark {
            high_fraction: 0.6,
            low_fraction: 0.2
        }
    );
    assert_eq!(p.replacement, Replacement::Fifo);
    assert_eq!(p.queue_depth, 8);
    assert_eq!(h.flash.spec.model_name(), "ssd");
    assert_eq!(h.disk.spec.model_name(), "linear");
    assert_eq!(spec.state_bytes_bound(), h.flash.spec.state_bytes_bound());
    let device = spec.build().unwrap();
    assert_eq!(device.model_name(), "hybrid");
    assert_eq!(device.capacity_bytes(), 1_000_000_000);
}

#[test]
fn a_host_file_loads_with_its_placement() {
    let spec = load(
        "host",
        "configuration = \"host\"\nflash = \"flashsim-2009\"\ndisk = \"disk.toml\"\n\
         placement = \"flash-ranges\"\nflash_ranges = [[0, 1048576]]\n",
    )
    .unwrap();
    let Some(h) = spec.params::<storsim_config::HybridSpec>() else {
        panic!()
    };
    let HybridConfiguration::Host(p) = &h.configuration else {
        panic!("not configuration 1")
    };
    assert!(matches!(&p.placement, HostPlacement::FlashRanges(r) if r.len() == 1));
    assert_eq!(spec.build().unwrap().capacity_bytes(), 1_000_000_000);
}

#[test]
fn an_unknown_key_is_a_syntax_error_naming_the_file_and_key() {
    let e = load(
        "unknown",
        "flash = \"flashsim-2009\"\ndisk = \"disk.toml\"\nflush_policy = \"idle\"\n",
    )
    .unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("hybrid.toml") && text.contains("flush_policy"),
        "{text}"
    );
}

#[test]
fn a_bad_enum_names_its_key() {
    let e = load(
        "enum",
        "flash = \"flashsim-2009\"\ndisk = \"disk.toml\"\nreplacement = \"mru\"\n",
    )
    .unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("replacement") && text.contains("mru"),
        "{text}"
    );
}

#[test]
fn a_missing_child_file_names_the_key_and_the_path() {
    let e = load(
        "missing",
        "flash = \"no-such-flash.toml\"\ndisk = \"disk.toml\"\n",
    )
    .unwrap_err();
    let text = e.to_string();
    let (file, key) = invalid_key(e);
    assert!(file.ends_with("hybrid.toml"));
    assert_eq!(key, "hybrid.flash");
    assert!(text.contains("no-such-flash.toml"), "{text}");
}

#[test]
fn keys_of_the_other_configuration_or_policy_are_refused() {
    let e = load(
        "other",
        "flash = \"flashsim-2009\"\ndisk = \"disk.toml\"\nplacement = \"separate\"\n",
    )
    .unwrap_err();
    assert_eq!(invalid_key(e).1, "hybrid.placement");
    let e = load(
        "watermark",
        "flash = \"flashsim-2009\"\ndisk = \"disk.toml\"\nhigh_watermark = 0.5\n",
    )
    .unwrap_err();
    assert_eq!(invalid_key(e).1, "hybrid.high_watermark");
    let e = load(
        "order",
        "flash = \"flashsim-2009\"\ndisk = \"disk.toml\"\nflush = \"low-watermark\"\n\
         high_watermark = 0.3\nlow_watermark = 0.6\n",
    )
    .unwrap_err();
    assert_eq!(invalid_key(e).1, "hybrid.low_watermark");
    let e = load(
        "capacity",
        "flash = \"flashsim-2009\"\ndisk = \"disk.toml\"\ncache_block_bytes = 1000\n",
    )
    .unwrap_err();
    assert_eq!(invalid_key(e).1, "hybrid.cache_block_bytes");
}

/// Configuration 1 refuses configuration 2's keys and the keys of the placements it does not
/// use, naming the first such key and where it applies, and needs its placement stated.
#[test]
fn host_files_refuse_keys_that_do_not_apply_and_need_a_placement() {
    let host = "configuration = \"host\"\nflash = \"flashsim-2009\"\ndisk = \"disk.toml\"\n";
    let refused = |name: &str, rest: &str| {
        let e = load(name, &format!("{host}{rest}")).unwrap_err();
        match e {
            ConfigError::Invalid { key, message, .. } => (key, message),
            other => panic!("expected an invalid key, got {other}"),
        }
    };
    let (key, message) = refused(
        "host-controller-keys",
        "placement = \"separate\"\nreplacement = \"fifo\"\nflush = \"idle\"\n",
    );
    // Both keys are configuration 2's; the first in the order checked is named.
    assert_eq!(key, "hybrid.flush");
    assert!(
        message.contains("configuration = \"controller\""),
        "{message}"
    );

    let (key, message) = refused("host-no-placement", "");
    assert_eq!(key, "hybrid.placement");
    assert!(message.contains("is required"), "{message}");

    let (key, message) = refused(
        "host-ranges",
        "placement = \"separate\"\nflash_ranges = [[0, 4096]]\n",
    );
    assert_eq!(key, "hybrid.flash_ranges");
    assert!(
        message.contains("placement = \"flash-ranges\""),
        "{message}"
    );

    let (key, message) = refused(
        "host-remap",
        "placement = \"flash-ranges\"\nflash_ranges = [[0, 4096]]\n\
         small_write_threshold_bytes = 8192\n",
    );
    assert_eq!(key, "hybrid.small_write_threshold_bytes");
    assert!(
        message.contains("placement = \"small-writes\""),
        "{message}"
    );

    let (key, _) = refused("host-empty-ranges", "placement = \"flash-ranges\"\n");
    assert_eq!(key, "hybrid.flash_ranges");
}

/// Configuration 2 names the flush policy a key belongs to.
#[test]
fn a_flush_key_of_another_policy_names_its_policy() {
    let e = load(
        "idle-key",
        "flash = \"flashsim-2009\"\ndisk = \"disk.toml\"\nflush = \"low-watermark\"\n\
         idle_time_us = 10\n",
    )
    .unwrap_err();
    match e {
        ConfigError::Invalid { key, message, .. } => {
            assert_eq!(key, "hybrid.idle_time_us");
            assert!(message.contains("flush = \"idle\""), "{message}");
        }
        other => panic!("expected an invalid key, got {other}"),
    }
}

#[test]
fn a_hybrid_child_is_refused() {
    let tmp = dir("nested");
    let d = tmp.path();
    std::fs::write(
        d.join("inner.toml"),
        "model = \"hybrid\"\n[hybrid]\nflash = \"flashsim-2009\"\ndisk = \"disk.toml\"\n",
    )
    .unwrap();
    let file = d.join("outer.toml");
    std::fs::write(
        &file,
        "model = \"hybrid\"\n[hybrid]\nflash = \"inner.toml\"\ndisk = \"disk.toml\"\n",
    )
    .unwrap();
    let e = load_device(file.to_str().unwrap()).unwrap_err();
    assert_eq!(invalid_key(e).1, "hybrid.flash");
}

fn controller_params(spec: &DeviceSpec) -> &HybridParams {
    let Some(h) = spec.params::<storsim_config::HybridSpec>() else {
        panic!("not a hybrid: {spec:?}")
    };
    let HybridConfiguration::Controller(p) = &h.configuration else {
        panic!("not configuration 2")
    };
    p
}

#[test]
fn admission_defaults_to_writes_and_reads_is_accepted() {
    let spec = load(
        "writes",
        "flash = \"flashsim-2009\"\ndisk = \"disk.toml\"\n",
    )
    .unwrap();
    assert_eq!(controller_params(&spec).admission, Admission::Writes);
    let spec = load(
        "reads",
        "flash = \"flashsim-2009\"\ndisk = \"disk.toml\"\nadmission = \"reads\"\n\
         replacement = \"fifo\"\npinned = [[0, 4096]]\n",
    )
    .unwrap();
    let p = controller_params(&spec);
    assert_eq!(p.admission, Admission::Reads);
    assert_eq!(p.replacement, Replacement::Fifo);
    assert_eq!(spec.build().unwrap().model_name(), "hybrid");
}

#[test]
fn write_cache_keys_are_refused_with_read_admission() {
    for (name, key) in [
        ("threshold", "small_write_threshold_bytes = 4096"),
        ("flush", "flush = \"idle\""),
    ] {
        let e = load(
            name,
            &format!(
                "flash = \"flashsim-2009\"\ndisk = \"disk.toml\"\nadmission = \"reads\"\n{key}\n"
            ),
        )
        .unwrap_err();
        let text = e.to_string();
        let key_name = key.split(' ').next().unwrap();
        assert_eq!(invalid_key(e).1, format!("hybrid.{key_name}"));
        assert!(text.contains("admission = \"writes\""), "{text}");
    }
    let e = load(
        "host-admission",
        "configuration = \"host\"\nflash = \"flashsim-2009\"\ndisk = \"disk.toml\"\n\
         placement = \"separate\"\nadmission = \"reads\"\n",
    )
    .unwrap_err();
    assert_eq!(invalid_key(e).1, "hybrid.admission");
    let e = load(
        "bad-admission",
        "flash = \"flashsim-2009\"\ndisk = \"disk.toml\"\nadmission = \"both\"\n",
    )
    .unwrap_err();
    assert!(e.to_string().contains("admission"), "{e}");
}

/// Submits `requests` one after another, each once the device has finished everything
/// before it (background promotions included), through the conformance kit's checked driver;
/// returns the completions.
fn run_one_by_one(device: &mut dyn Device, requests: &[(Op, u64, u64)]) -> Vec<Completion> {
    conformance::drive_one_at_a_time(device, requests).unwrap_or_else(|v| panic!("{v}"))
}

#[test]
fn every_hybrid_preset_builds_and_serves_requests() {
    let hybrids: Vec<&str> = presets()
        .iter()
        .filter(|p| p.model() == "hybrid")
        .map(|p| p.name)
        .collect();
    assert_eq!(
        hybrids,
        [
            "hybrid-laptop-2007",
            "hybrid-cheetah15k5",
            "hybrid-cheetah15k5-host",
            "momentus-xt"
        ]
    );

    // The 2007 drive: a small write lands on the flash, a 1 MiB one on the disk; the cache is
    // the 256 MiB module less ANAND's spare blocks.
    let loaded = load_device("hybrid-laptop-2007").unwrap();
    let p = controller_params(&loaded.spec);
    assert_eq!(p.admission, Admission::Writes);
    assert_eq!(p.flush, FlushPolicy::OnDemand);
    assert_eq!(p.small_write_threshold_bytes, 64 << 10);
    let Some(h) = loaded.spec.params::<storsim_config::HybridSpec>() else {
        unreachable!()
    };
    assert_eq!(
        (h.flash.name.as_str(), h.disk.name.as_str()),
        ("hybrid-2007-flash", "hdd-laptop-2007")
    );
    let mut dev = loaded.spec.build().unwrap();
    assert_eq!(
        dev.capacity_bytes(),
        312_581_808 * 512,
        "the disk's capacity"
    );
    let cache_bytes = counter(dev.as_ref(), "cache_blocks") * 4096.0;
    assert!(
        (200 << 20) as f64 <= cache_bytes && cache_bytes <= (256 << 20) as f64,
        "{cache_bytes}"
    );
    let done = run_one_by_one(
        dev.as_mut(),
        &[
            (Op::Write, 1 << 30, 4096),
            (Op::Write, 2 << 30, 1 << 20),
            (Op::Read, 1 << 30, 4096),
        ],
    );
    assert_eq!(done.len(), 3);
    assert_eq!(counter(dev.as_ref(), "host_writes_flash"), 1.0);
    assert_eq!(counter(dev.as_ref(), "host_writes_disk"), 1.0);
    assert_eq!(counter(dev.as_ref(), "host_reads_flash"), 1.0);

    // The Momentus XT: a read misses, is promoted, and is read from the flash next time; a
    // write goes to the disk and drops the copy.
    let loaded = load_device("momentus-xt").unwrap();
    assert_eq!(controller_params(&loaded.spec).admission, Admission::Reads);
    let mut dev = loaded.spec.build().unwrap();
    assert_eq!(dev.capacity_bytes(), 976_773_168 * 512);
    let cache_bytes = counter(dev.as_ref(), "cache_blocks") * 4096.0;
    assert!(
        (3584u64 << 20) as f64 <= cache_bytes && cache_bytes <= (4096u64 << 20) as f64,
        "{cache_bytes}"
    );
    let done = run_one_by_one(
        dev.as_mut(),
        &[
            (Op::Read, 5 << 30, 64 << 10),
            (Op::Read, 5 << 30, 64 << 10),
            (Op::Write, 5 << 30, 4096),
            (Op::Read, 5 << 30, 4096),
        ],
    );
    assert_eq!(done.len(), 4);
    assert_eq!(counter(dev.as_ref(), "promoted_blocks"), 17.0);
    assert_eq!(counter(dev.as_ref(), "host_reads_flash"), 1.0);
    assert_eq!(counter(dev.as_ref(), "host_reads_disk"), 2.0);
    assert_eq!(counter(dev.as_ref(), "host_writes_disk"), 1.0);
    assert_eq!(counter(dev.as_ref(), "invalidated_blocks"), 1.0);
    assert!(done[1].finish - done[1].service_start < done[0].finish - done[0].service_start);
}

/// The hybrid-disk thesis' own drive (its SCSI disk, a Cheetah 15K.5) in both configurations:
/// configuration 2 caches small writes in 256 MiB of flash in front of the disk's 146 GB;
/// configuration 1 shows the disk's blocks and then the 1 GB stick's.
#[test]
fn the_cheetah_15k5_hybrids_put_the_thesis_flash_beside_the_disk() {
    let disk_bytes = 286_749_487 * 512;
    let loaded = load_device("hybrid-cheetah15k5").unwrap();
    let p = controller_params(&loaded.spec);
    assert_eq!(p.admission, Admission::Writes);
    assert_eq!(p.flush, FlushPolicy::OnDemand);
    let mut dev = loaded.spec.build().unwrap();
    assert_eq!(dev.capacity_bytes(), disk_bytes);
    let done = run_one_by_one(
        dev.as_mut(),
        &[
            (Op::Write, 1 << 30, 4096),
            (Op::Write, 100 << 30, 1 << 20),
            (Op::Read, 1 << 30, 4096),
        ],
    );
    assert_eq!(done.len(), 3);
    assert_eq!(counter(dev.as_ref(), "host_writes_flash"), 1.0);
    assert_eq!(counter(dev.as_ref(), "host_writes_disk"), 1.0);

    let mut host = load_device("hybrid-cheetah15k5-host")
        .unwrap()
        .spec
        .build()
        .unwrap();
    let flash_bytes = load_device("sandisk-usb-anand")
        .unwrap()
        .spec
        .build()
        .unwrap()
        .capacity_bytes();
    assert_eq!(host.capacity_bytes(), disk_bytes + flash_bytes);
    // A request past the disk's end is the flash's first block.
    let done = run_one_by_one(
        host.as_mut(),
        &[(Op::Write, disk_bytes, 4096), (Op::Write, 0, 4096)],
    );
    assert_eq!(done.len(), 2);
}
