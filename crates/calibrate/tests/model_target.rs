//! The calibration pipeline on device models in virtual time, where the truth is known to the
//! nanosecond: baseline subtraction, the servers the sweep implies, partial runs.

use std::sync::atomic::AtomicBool;
use storsim_blackbox::linear::{LinearCost, LinearDevice, LinearParams};
use storsim_blackbox::{AccessPattern, SequentialDetect};
use storsim_calibrate::{analyse, measure, FitOptions, Holdout, ModelTarget, Plan, Statistic};
use storsim_core::SimDuration;

const CAPACITY: u64 = 1 << 30;

/// A linear device with (A µs, B µs/KiB) for every pattern plus `step_us` times the pattern's
/// index, so that a mix-up between patterns shows.
fn linear(a_us: f64, step_us: f64, b_us_per_kib: f64, servers: usize) -> LinearDevice {
    let mut costs = [LinearCost {
        fixed: SimDuration::ZERO,
        per_kib_ps: 0,
    }; 4];
    for p in AccessPattern::ALL {
        costs[p.index()] = LinearCost::from_us(a_us + step_us * p.index() as f64, b_us_per_kib);
    }
    LinearDevice::new(LinearParams {
        capacity_bytes: CAPACITY,
        costs,
        trim: SimDuration::ZERO,
        flush: SimDuration::ZERO,
        sequential_detect: SequentialDetect::PreviousRequest,
        servers,
        queue_depth: 64,
    })
}

fn plan(iodepths: Vec<u32>) -> Plan {
    Plan {
        zones: 3,
        sizes_bytes: vec![4096, 8192, 16384, 32768, 65536, 131072],
        patterns: storsim_calibrate::PATTERN_ORDER.to_vec(),
        repeats: 2,
        requests_per_run: 4,
        warmup_requests: 2,
        step_run_requests: 0,
        step_size_bytes: 4096,
        iodepths,
        sweep_size_bytes: 4096,
        sweep_requests: 400,
        seed: 3,
    }
}

fn options() -> FitOptions {
    FitOptions {
        statistic: Statistic::Median,
        holdout: Holdout::Alternate,
        erase_latency_us: 1500.0,
        queue_depth: 32,
    }
}

#[test]
fn the_baseline_is_taken_off_exactly_and_reported() {
    let stop = AtomicBool::new(false);
    let p = plan(vec![]);
    // The path costs 30 µs + 0.25 µs/KiB whatever the pattern (a device that takes no time
    // cannot tell sequential from random); the device behind it 100 µs + 10 µs per pattern
    // index + 2 µs/KiB.
    let mut path_and_device = ModelTarget::new("slow", Box::new(linear(130.0, 10.0, 2.25, 1)));
    let mut path_alone = ModelTarget::new("floor", Box::new(linear(30.0, 0.0, 0.25, 1)));
    let m = measure(&p, &mut path_and_device, &stop, &mut |_| {});
    let b = measure(&p, &mut path_alone, &stop, &mut |_| {});
    assert_eq!(m.stopped_early, None);
    let fitted = analyse(&m, Some(&b), CAPACITY, options());
    for (r, pattern) in fitted
        .calibration
        .patterns
        .iter()
        .zip(storsim_calibrate::PATTERN_ORDER)
    {
        let f = r.fit.as_ref().unwrap();
        let a = 100.0 + 10.0 * pattern.index() as f64;
        assert!(
            (f.a_us - a).abs() < 0.01,
            "{}: A {} vs {a}",
            r.pattern,
            f.a_us
        );
        assert!(
            (f.b_us_per_kib - 2.0).abs() < 1e-4,
            "{}: B {}",
            r.pattern,
            f.b_us_per_kib
        );
        let base = r.baseline_fit.as_ref().unwrap();
        assert!(
            (base.a_us - 30.0).abs() < 0.01,
            "{}: baseline A {}",
            r.pattern,
            base.a_us
        );
        let v = r.validation.as_ref().unwrap();
        assert_eq!(v.held_out_sizes, vec![8192, 32768, 131072]);
        assert!(v.linear_mean_error_pct < 0.01, "{v:?}");
    }
    let linear = fitted.linear.unwrap();
    assert_eq!(
        linear.cost(AccessPattern::RandomRead).service(65536),
        SimDuration::from_us(100 + 20 + 2 * 64)
    );
}

#[test]
fn the_sweep_finds_how_many_requests_the_device_serves_at_once() {
    let stop = AtomicBool::new(false);
    let p = plan(vec![1, 4, 16]);
    let mut t = ModelTarget::new("four", Box::new(linear(100.0, 0.0, 1.0, 4)));
    let m = measure(&p, &mut t, &stop, &mut |_| {});
    let reads: Vec<_> = m.sweep.iter().filter(|s| !s.write).collect();
    assert_eq!(reads.len(), 3);
    assert!(reads.iter().all(|s| s.requests == 400));
    // Four servers: depth 4 and 16 both run four times as many requests per second as depth 1.
    let ratio = reads[2].iops / reads[0].iops;
    assert!((ratio - 4.0).abs() < 0.05, "{ratio}");
    let fitted = analyse(&m, None, CAPACITY, options());
    assert_eq!(fitted.calibration.servers, 4);
    assert_eq!(fitted.linear.unwrap().servers, 4);
}

#[test]
fn a_stopped_run_keeps_what_it_measured_and_fits_from_it() {
    let stop = AtomicBool::new(false);
    let p = plan(vec![]);
    let mut t = ModelTarget::new("zeus", Box::new(linear(100.0, 0.0, 1.0, 1)));
    let mut seen = 0;
    let m = measure(&p, &mut t, &stop, &mut |e| {
        seen = e.done;
        // Stop half-way through the random reads.
        if e.stage == "random reads" && e.done > 2 + 2 * 3 * 6 * 4 + 40 {
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    });
    assert_eq!(m.stopped_early.as_deref(), Some("interrupted"));
    assert_eq!(m.requests, seen);
    let fitted = analyse(&m, None, CAPACITY, options());
    let measured: Vec<&str> = fitted
        .calibration
        .patterns
        .iter()
        .map(|p| p.pattern)
        .collect();
    assert_eq!(measured, vec!["sr", "rr"]);
    // Writes were not measured: the model borrows the reads' values and says so.
    let linear = fitted.linear.unwrap();
    assert_eq!(
        linear.cost(AccessPattern::SequentialWrite),
        linear.cost(AccessPattern::SequentialRead)
    );
    assert!(fitted
        .calibration
        .notes
        .iter()
        .any(|n| n.contains("sw was not measured")));
}
