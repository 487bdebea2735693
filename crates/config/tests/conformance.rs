//! Every device model keeps the Device contract: the conformance kit
//! (`storsim_core::conformance`) runs on every preset in the preset table (so a new preset is
//! covered the day it is added), on `flashsim-2009` under every FTL, and on every example device
//! file (the arrays, RAID-0 and RAID-1, and the hybrid drive in both configurations), and on
//! the disk under every scheduler. The array and hybrid crates run it over more shapes of
//! their own (`crates/array/tests/conformance.rs`, `crates/hybrid/tests/conformance.rs`).
//!
//! Each check prints its seed; `STORSIM_TEST_SEED=N` replays one.

use std::path::{Path, PathBuf};
use storsim_config::{load_device, load_device_with, preset_spec, presets, DeviceSpec};
use storsim_core::conformance::{self, Options, Report};

/// Runs the kit on devices built from `spec`, failing the test with the kit's message.
fn check(name: &str, spec: &DeviceSpec, options: &Options) -> Report {
    eprintln!("{name} ({} model)", spec.model_name());
    let report = conformance::check(
        || {
            spec.build()
                .unwrap_or_else(|e| panic!("{name} does not build: {e}"))
        },
        options,
    )
    .unwrap_or_else(|violation| panic!("{name}: {violation}"));
    assert!(report.completed > 0, "{name}: nothing completed");
    report
}

/// A few thousand requests for every device; devices that hold a large state (big SSDs, whose
/// every request walks deep FTL structures in a debug build) take fewer, so that the suite stays
/// quick without leaving any device out. A device with a faults layer (over its model or a
/// child) may complete requests with an error; any other may not.
fn options_for(spec: &DeviceSpec) -> Options {
    let large = spec.state_bytes_bound().unwrap_or(0) > 256 << 20;
    Options {
        requests: if large { 1_000 } else { 2_000 },
        allow_errors: spec.has_faults(),
        ..Options::default()
    }
}

#[test]
fn every_preset_keeps_the_device_contract() {
    let all = presets();
    assert!(!all.is_empty());
    for info in all {
        let spec = preset_spec(info.name)
            .expect("a listed preset resolves")
            .unwrap_or_else(|e| panic!("preset {}: {e}", info.name));
        check(&format!("preset {}", info.name), &spec, &options_for(&spec));
    }
}

/// The presets' host interface variants, and a SATA interface laid over a black-box preset
/// with `--set`-style overrides.
#[test]
fn host_interfaces_keep_the_device_contract() {
    for name in ["tlc-nvme:nvme", "bench2g:nvme"] {
        let spec = load_device(name)
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .spec;
        assert!(spec.host_interface().is_some(), "{name}");
        check(name, &spec, &options_for(&spec));
    }
    let sata = load_device_with("stec-zeus", &["host_interface.protocol=\"sata\"".into()])
        .expect("a SATA interface over stec-zeus")
        .spec;
    check("stec-zeus behind SATA", &sata, &options_for(&sata));
}

#[test]
fn every_ftl_keeps_the_device_contract() {
    for ftl in storsim_ftl::FTLS {
        let name = format!("flashsim-2009:{}", ftl.name);
        let spec = preset_spec(&name)
            .expect("flashsim-2009 is a preset")
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let options = Options {
            // An FTL that does not hide erase-before-write (raw flash) refuses to program a
            // page twice, as NAND does: a valid refusal.
            allow_invalid: !ftl.overwrites,
            ..options_for(&spec)
        };
        check(&name, &spec, &options);
    }
}

/// The disk presets use two of its schedulers; the kit runs each, at depth 1 and 32.
#[test]
fn the_disk_keeps_the_device_contract_under_every_scheduler() {
    for scheduler in ["fcfs", "sstf", "c-look", "sptf"] {
        for queue_depth in [1, 32] {
            let overrides = [
                format!("hdd.scheduler=\"{scheduler}\""),
                format!("hdd.queue_depth={queue_depth}"),
            ];
            let loaded = load_device_with("hdd-laptop-2007", &overrides)
                .unwrap_or_else(|e| panic!("{overrides:?}: {e}"));
            let built = loaded.spec.build().expect("the disk builds");
            assert_eq!(built.queue_depth(), queue_depth, "{overrides:?}");
            check(
                &format!("hdd-laptop-2007 with {overrides:?}"),
                &loaded.spec,
                &options_for(&loaded.spec),
            );
        }
    }
}

/// Every device file under `examples/`, recursively, sorted.
fn example_device_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "toml") {
                out.push(path);
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut files = Vec::new();
    walk(&root, &mut files);
    files.sort();
    files
}

#[test]
fn every_example_device_keeps_the_device_contract() {
    let files = example_device_files();
    let mut models = Vec::new();
    for path in &files {
        let arg = path.to_str().expect("a UTF-8 path");
        let loaded = load_device(arg).unwrap_or_else(|e| panic!("{arg}: {e}"));
        check(arg, &loaded.spec, &options_for(&loaded.spec));
        models.push(loaded.spec.model_name());
    }
    // The examples are where the composite devices are covered: both RAID levels and both
    // hybrid configurations.
    for model in ["array", "hybrid"] {
        assert!(
            models.iter().filter(|&&m| m == model).count() >= 2,
            "the examples hold two {model} devices: {files:?}"
        );
    }
}
