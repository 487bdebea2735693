//! `hdd.speed_factor`: a drive whose mechanical and overhead times are all divided by one
//! factor serves the same requests in that fraction of the time; a factor of 1 is the drive
//! itself, exactly.

use storsim_config::{load_device, load_device_with, presets};
use storsim_core::conformance::drive_one_at_a_time;
use storsim_core::{Completion, Op, Prng};

/// The disk presets, each a different drive (DiskSim's validated ones and the hybrids' disks).
fn disk_presets() -> Vec<String> {
    presets()
        .iter()
        .filter(|p| p.model() == "hdd")
        .map(|p| p.name.to_string())
        .collect()
}

/// Random 4 KiB reads over the whole drive at queue depth 1: each request's service time.
fn qd1_random_reads(device: &str, overrides: &[String]) -> Vec<u64> {
    let loaded = if overrides.is_empty() {
        load_device(device)
    } else {
        load_device_with(device, overrides)
    }
    .unwrap_or_else(|e| panic!("{device}: {e}"));
    let mut d = loaded.spec.build().unwrap();
    let blocks = d.capacity_bytes() / 4096;
    let mut rng = Prng::new(25);
    let requests: Vec<(Op, u64, u64)> = (0..300)
        .map(|_| (Op::Read, rng.below(blocks) * 4096, 4096))
        .collect();
    let done: Vec<Completion> =
        drive_one_at_a_time(d.as_mut(), &requests).unwrap_or_else(|v| panic!("{device}: {v}"));
    done.iter()
        .map(|c| c.finish.since(c.request.arrival).as_ns())
        .collect()
}

#[test]
fn a_factor_of_ten_makes_every_qd1_random_read_ten_times_shorter() {
    let presets = disk_presets();
    assert!(presets.len() >= 10, "{presets:?}");
    for preset in presets {
        let base = qd1_random_reads(&preset, &[]);
        let fast = qd1_random_reads(&preset, &["hdd.speed_factor=10".to_string()]);
        let (sum_base, sum_fast) = (base.iter().sum::<u64>(), fast.iter().sum::<u64>());
        let ratio = sum_base as f64 / sum_fast as f64;
        assert!((ratio - 10.0).abs() < 0.01, "{preset}: total ratio {ratio}");
        for (i, (&b, &f)) in base.iter().zip(&fast).enumerate() {
            // Each scaled time is rounded to the nanosecond (the model's unit), and so is every
            // instant the model works out: a request may differ from a tenth by a nanosecond
            // or two.
            let expected = b as f64 / 10.0;
            assert!(
                (f as f64 - expected).abs() <= 2.0,
                "{preset}: request {i}: {f} ns where {b} ns / 10 = {expected}"
            );
        }
    }
}

#[test]
fn a_factor_of_one_is_the_drive_itself() {
    for preset in disk_presets() {
        let base = load_device(&preset).unwrap();
        let same = load_device_with(&preset, &["hdd.speed_factor=1".to_string()]).unwrap();
        assert_eq!(base.spec, same.spec, "{preset}");
        assert_eq!(
            qd1_random_reads(&preset, &[]),
            qd1_random_reads(&preset, &["hdd.speed_factor=1.0".to_string()]),
            "{preset}"
        );
    }
}

#[test]
fn a_speed_factor_out_of_range_names_the_key() {
    for bad in ["0", "-2", "1e9", "nan"] {
        let e = load_device_with("hdd-laptop-2007", &[format!("hdd.speed_factor={bad}")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("hdd.speed_factor"), "{bad}: {e}");
    }
}
