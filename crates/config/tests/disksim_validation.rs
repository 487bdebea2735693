//! Imports DiskSim's validated drives, replays each drive's measured trace through the engine
//! exactly as `storsim validate disksim` does (closed loop, one request outstanding, the next
//! issued its think time after the previous completes), and scores the simulated access times
//! against the measured ones with `storsim_stats::disksim_demerit`, the number the CLI prints.
//!
//! The data lives outside the repository (../shared/disksim-valid); without it the test says
//! so and passes.

use std::path::Path;
use storsim_config::disksim::import::import_parv;
use storsim_core::Completion;
use storsim_engine::{EngineOptions, Replay};
use storsim_workload::trace::{self, validate_measured_access_us, TraceFormat, TraceOptions};

/// What a drive's demerit must not exceed.
#[derive(Clone, Copy)]
enum Bar {
    /// DiskSim's own demerit on the drive (the acceptance bar of issue 5).
    DiskSim(f64),
    /// runvalid's rounded "about" value (the first), which DiskSim 4.0 itself does not reach
    /// on this trace, and the demerit of DiskSim 4.0's own output for it, scored by DiskSim's
    /// `rms` (the second): the bar.
    DiskSimOwn(f64, f64),
    /// Reported only; DiskSim's value is given for the table.
    Report(f64),
}

/// (parv and trace stem, bar). DiskSim's values are from its stock `valid/runvalid`; Cheetah
/// 4LP's 0.318 ms only happens to look like 1/π to the linter.
#[allow(clippy::approx_constant)]
const DRIVES: [(&str, Bar); 10] = [
    ("cheetah9LP", Bar::DiskSim(0.107)),
    // storsim reaches 0.1354 ms here. DiskSim 4.0's own output for this trace (the stock
    // `valid/ibm18es.outv`) scores 0.1359 ms by DiskSim's `rms` (0.1361 ms by this
    // computation), so runvalid's "about 0.135" is below what DiskSim itself reaches (see
    // docs/VALIDATION.md).
    ("ibm18es", Bar::DiskSimOwn(0.135, 0.1359)),
    ("hp_c2247a", Bar::DiskSim(0.090)),
    ("atlas10k", Bar::DiskSim(0.268)),
    ("atlas_III", Bar::Report(0.378)),
    ("barracuda", Bar::Report(0.349)),
    ("cheetah4LP", Bar::Report(0.318)),
    ("hp_c3323a", Bar::Report(0.306)),
    ("hp_c2490a", Bar::Report(0.254)),
    // This is runvalid's value; DiskSim 4.0's own output for this trace, with its
    // zero-latency reads, scores 0.438 ms (see docs/models/hdd.md, "Validation").
    ("dec_rz26", Bar::Report(0.340)),
];

/// Replays `trace` on the device file's drive through the engine; returns (simulated,
/// measured) access times in ms, in trace order.
fn replay(device: &storsim_config::LoadedDevice, trace: &Path) -> (Vec<f64>, Vec<f64>) {
    let mut dev = device.spec.build().expect("buildable drive");
    let options = TraceOptions {
        format: Some(TraceFormat::named("validate")),
        ..TraceOptions::default()
    };
    let mut workload = trace::open(trace, &options).expect("readable trace");
    let measured: Vec<f64> = validate_measured_access_us(trace)
        .expect("readable trace")
        .map(|us| us.expect("measured time") / 1000.0)
        .collect();
    let engine_options = EngineOptions {
        replay: Replay::natural(workload.pacing),
        ..EngineOptions::default()
    };
    let mut done: Vec<(u64, f64)> = Vec::with_capacity(measured.len());
    let mut sink = |c: &Completion| done.push((c.request.id, c.latency().as_ns() as f64 / 1e6));
    let info = storsim_engine::run(
        &mut dev,
        &mut workload,
        &engine_options,
        &mut sink,
        &mut |_, _| {},
    )
    .expect("replay runs");
    assert!(info.device_failed.is_none());
    done.sort_unstable_by_key(|&(id, _)| id);
    let simulated: Vec<f64> = done.into_iter().map(|(_, ms)| ms).collect();
    assert_eq!(simulated.len(), measured.len());
    (simulated, measured)
}

#[test]
fn disksim_validation_drives() {
    let Some(dir) = storsim_testenv::shared("disksim-valid") else {
        return;
    };
    let only = std::env::var("STORSIM_VALIDATE_ONLY").ok();
    let tmp = tempfile::Builder::new()
        .prefix(&format!("storsim-hdd-validate-{}-", std::process::id()))
        .tempdir()
        .expect("temp dir");
    let out = tmp.path();
    let mut failures = Vec::new();
    println!("| drive | storsim demerit ms | DiskSim ms | simulated mean ms | measured mean ms |");
    println!("|---|---|---|---|---|");
    for (stem, bar) in DRIVES {
        if only.as_deref().is_some_and(|o| o != stem) {
            continue;
        }
        // Through a device file, as `storsim import disksim` and `storsim validate` do.
        let drive = import_parv(&dir.join(format!("{stem}.parv")))
            .unwrap_or_else(|e| panic!("importing {stem}: {e}"));
        let toml = out.join(format!("{stem}.toml"));
        std::fs::write(
            &toml,
            storsim_config::disksim::import::device_toml(&drive).expect("writes"),
        )
        .expect("writable");
        let device =
            storsim_config::load_device(toml.to_str().expect("utf-8 path")).expect("loads");
        let (sim, measured) = replay(&device, &dir.join(format!("{stem}.trace")));
        let dm = storsim_stats::disksim_demerit(&sim, &measured).expect("requests");
        let d = dm.demerit_ms;
        let (disksim, limit) = match bar {
            Bar::DiskSim(b) => (b, Some(b)),
            Bar::DiskSimOwn(b, own) => (b, Some(own)),
            Bar::Report(b) => (b, None),
        };
        println!(
            "| {stem} | {d:.4} | {disksim:.3} | {:.3} | {:.3} |",
            dm.simulated_mean_ms, dm.measured_mean_ms
        );
        if let Some(limit) = limit {
            if d > limit {
                failures.push(format!("{stem}: demerit {d:.4} ms > {limit:.4} ms"));
            }
        }
    }
    std::fs::remove_dir_all(out).ok();
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Every drive imports, writes as a device file, and reads back to the same parameters.
#[test]
fn imported_drives_round_trip_through_toml() {
    let Some(dir) = storsim_testenv::shared("disksim-valid") else {
        return;
    };
    let tmp = tempfile::Builder::new()
        .prefix(&format!("storsim-hdd-roundtrip-{}-", std::process::id()))
        .tempdir()
        .expect("temp dir");
    let out = tmp.path();
    for (parv, _) in DRIVES {
        let drive = import_parv(&dir.join(format!("{parv}.parv"))).expect("imports");
        let text = storsim_config::disksim::import::device_toml(&drive).expect("writes");
        let path = out.join(format!("{parv}.toml"));
        std::fs::write(&path, &text).expect("writable");
        let loaded = storsim_config::load_device(path.to_str().expect("utf-8 path"))
            .unwrap_or_else(|e| panic!("{parv}: {e}"));
        assert_eq!(
            loaded.spec,
            storsim_config::DeviceSpec::new(drive.params.clone()),
            "{parv}"
        );
        assert_eq!(loaded.spec.model_name(), "hdd");
        let dev = loaded.spec.build().expect("builds");
        assert_eq!(
            dev.capacity_bytes(),
            drive.params.geometry.block_count.unwrap() * 512
        );
    }
    std::fs::remove_dir_all(out).ok();
}
