//! Detection of the Wisconsin step model (seed 000) in one long sequential run: random
//! requests pay a fixed delay, sequential requests a small one, and every K-th sequential
//! request of a run also pays a spike, with K following a schedule whose last entry repeats.
//! Optionally the excess the run's first request paid as a random one is taken off the
//! following sequential requests, which makes the start of a run cheaper.

/// The step model's parameters for one direction, as recovered from a run.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct StepFit {
    /// The random-request latency the caller measured separately, passed through.
    pub random_us: f64,
    /// Median latency of the sequential requests that are neither spikes nor in the
    /// compensated start of the run.
    pub sequential_us: f64,
    /// Median spike latency minus `sequential_us`; 0 when the run has no spike.
    pub spike_us: f64,
    /// Spike schedule: gaps between spikes counted in sequential requests, the first gap
    /// counted from the run's first (random) request; the last repeats; never empty,
    /// entries >= 1. A run without spikes gives its number of sequential requests.
    pub step_interval_requests: Vec<u64>,
    /// Number of sequential requests classified as spikes.
    pub spikes: usize,
    /// Latency in µs above which a sequential request counted as a spike.
    pub threshold_us: f64,
    /// The start of the run was cheaper by about `random_us − sequential_us` in total.
    pub compensate_first_request: bool,
}

/// Normal-consistency factor: 1.4826·MAD estimates the standard deviation of normal noise.
const MAD_TO_SIGMA: f64 = 1.4826;

/// A spike lies this many robust standard deviations above the sequential median at least.
const SPIKE_SIGMAS: f64 = 10.0;

/// ... and at least this fraction of the median above it, so that a device whose jitter
/// scales with its latency does not see spikes in its noise.
const SPIKE_RELATIVE: f64 = 0.5;

/// ... and at least this many µs above it. Real paths show outliers of tens of µs (an
/// interrupt, a context switch) while the step model's spikes are milliseconds; with a
/// sequential delay of 0 the median is only the path overhead, and the two terms above are
/// then too small to keep such outliers out.
const SPIKE_ABSOLUTE_US: f64 = 100.0;

/// Once the largest excess is known, anything below this fraction of it is noise rather than
/// a spike: the spikes of one run all have the same size, give or take a few per cent.
const SPIKE_FRACTION_OF_LARGEST: f64 = 0.25;

/// A compensated request lies this many robust standard deviations below the median...
const PREFIX_SIGMAS: f64 = 5.0;

/// ... and at least this fraction of the median below it...
const PREFIX_RELATIVE: f64 = 0.2;

/// ... and at least this many µs below it.
const PREFIX_ABSOLUTE_US: f64 = 10.0;

/// How far the start of the run's total saving may be from random − sequential for it to
/// count as compensation.
const COMPENSATION_TOLERANCE: f64 = 0.3;

/// The median of finite values; 0 for none (callers never pass an empty slice).
fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        sorted[mid]
    } else {
        // Halving first keeps the sum of two values near the f64 limit finite.
        sorted[mid - 1] / 2.0 + sorted[mid] / 2.0
    }
}

/// Turns the gaps between spikes into a schedule whose last entry repeats.
///
/// When the gaps end in a repeated value (a prefix followed by a constant tail), the trailing
/// repeats are dropped: [32, 64, 128, 256, 256, 256] gives [32, 64, 128, 256]. Otherwise a
/// noisy gap may sit at the end (a false spike after the last real one), so the tail value is
/// taken to be the most frequent gap, ties going to the one that occurs last (so that a short
/// run whose gaps are all different keeps every gap), and the schedule is the gaps up to its
/// first occurrence: [195, 256, 256, 17] gives [195, 256]. A noisy gap inside the prefix
/// cannot be told from a genuine schedule entry and is kept.
fn schedule_from_gaps(gaps: &[u64]) -> Vec<u64> {
    let n = gaps.len();
    if n >= 2 && gaps[n - 1] == gaps[n - 2] {
        let mut schedule = gaps.to_vec();
        while schedule.len() >= 2 && schedule[schedule.len() - 1] == schedule[schedule.len() - 2] {
            schedule.pop();
        }
        return schedule;
    }
    // Per gap value: how often it occurs and where it last occurs. The tail value has the
    // largest (count, last occurrence); a map keeps this linear in the number of spikes,
    // which a noisy run can make large.
    let mut seen: std::collections::HashMap<u64, (usize, usize)> = std::collections::HashMap::new();
    for (index, &gap) in gaps.iter().enumerate() {
        let entry = seen.entry(gap).or_insert((0, index));
        entry.0 += 1;
        entry.1 = index;
    }
    let tail = seen
        .iter()
        .max_by_key(|(_, &(count, last))| (count, last))
        .map(|(&gap, _)| gap);
    match tail {
        Some(tail) => {
            let first = gaps.iter().position(|&g| g == tail).unwrap_or(n - 1);
            gaps[..=first].to_vec()
        }
        None => Vec::new(),
    }
}

/// Recovers the step model from the per-request latencies (µs) of one long sequential run.
///
/// `run_us[0]` is the run's first request, which the device sees as random; `run_us[k]` for
/// k ≥ 1 is sequential request number k as the schedule counts them. `random_us` is a
/// separately measured random-request latency (a median).
///
/// Spikes: with m the median and MAD the median absolute deviation of the sequential
/// latencies, a candidate lies more than max(10·1.4826·MAD, 0.5·m, 100 µs) above m, and a
/// spike is a candidate whose excess over m is also more than a quarter of the largest
/// candidate's, so that outliers of tens of µs are not taken for spikes of milliseconds.
/// The medians keep a compensated start of the run, which lies below m, from moving m much.
///
/// Compensated start: the leading sequential requests (spikes skipped) that lie more than
/// max(5·1.4826·MAD, 0.2·m, 10 µs) below m. `compensate_first_request` is true when
/// random_us > sequential_us and their total saving against `sequential_us` is within 30 %
/// of random_us − sequential_us.
///
/// Returns None when `run_us` has fewer than 3 entries, when any input is not finite, or when
/// the values are so large (beyond about 1e307) that the results are not representable.
pub fn detect_steps(run_us: &[f64], random_us: f64) -> Option<StepFit> {
    if run_us.len() < 3 || !random_us.is_finite() || run_us.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let sequential = &run_us[1..];
    let m = median(sequential);
    let deviations: Vec<f64> = sequential.iter().map(|v| (v - m).abs()).collect();
    let sigma = MAD_TO_SIGMA * median(&deviations);

    let floor = (SPIKE_SIGMAS * sigma)
        .max(SPIKE_RELATIVE * m)
        .max(SPIKE_ABSOLUTE_US);
    let largest_excess = sequential
        .iter()
        .map(|v| v - m)
        .filter(|&e| e > floor)
        .fold(f64::NEG_INFINITY, f64::max);
    let cut = floor.max(SPIKE_FRACTION_OF_LARGEST * largest_excess);
    let is_spike: Vec<bool> = run_us
        .iter()
        .enumerate()
        .map(|(k, v)| k >= 1 && v - m > cut)
        .collect();

    // The compensated start: leading sequential requests clearly below m. A spike there
    // does not end it, since compensation and spikes are charged independently.
    let margin = (PREFIX_SIGMAS * sigma)
        .max(PREFIX_RELATIVE * m)
        .max(PREFIX_ABSOLUTE_US);
    let prefix_end = (1..run_us.len())
        .find(|&k| !is_spike[k] && run_us[k] >= m - margin)
        .unwrap_or(run_us.len());

    let steady: Vec<f64> = (prefix_end..run_us.len())
        .filter(|&k| !is_spike[k])
        .map(|k| run_us[k])
        .collect();
    let sequential_us = if steady.is_empty() {
        // Should the compensated start and the spikes cover every request, the median of the
        // whole run is the best estimate left.
        m
    } else {
        median(&steady)
    };

    let spike_indices: Vec<usize> = (1..run_us.len()).filter(|&k| is_spike[k]).collect();
    let (spike_us, step_interval_requests) = if spike_indices.is_empty() {
        (0.0, vec![sequential.len() as u64])
    } else {
        let spike_values: Vec<f64> = spike_indices.iter().map(|&k| run_us[k]).collect();
        let mut gaps = Vec::with_capacity(spike_indices.len());
        let mut previous = 0;
        for &k in &spike_indices {
            gaps.push((k - previous) as u64);
            previous = k;
        }
        (
            median(&spike_values) - sequential_us,
            schedule_from_gaps(&gaps),
        )
    };

    let expected_saving = random_us - sequential_us;
    let saving: f64 = (1..prefix_end)
        .filter(|&k| !is_spike[k])
        .map(|k| sequential_us - run_us[k])
        .sum();
    let compensate_first_request = expected_saving > 0.0
        && prefix_end > 1
        && (saving - expected_saving).abs() <= COMPENSATION_TOLERANCE * expected_saving;

    let fit = StepFit {
        random_us,
        sequential_us,
        spike_us,
        step_interval_requests,
        spikes: spike_indices.len(),
        threshold_us: m + cut,
        compensate_first_request,
    };
    let finite = [fit.sequential_us, fit.spike_us, fit.threshold_us]
        .iter()
        .all(|v| v.is_finite());
    finite.then_some(fit)
}

#[cfg(test)]
mod tests {
    use super::*;
    use storsim_blackbox::step::{wisconsin_usb, StepDevice, StepDirection};
    use storsim_core::{Device, Op, Request, SimTime};

    /// The step rules as the module documentation and seed 000 state them, written out
    /// independently of the blackbox crate.
    struct Rules {
        random: f64,
        sequential: f64,
        spike: f64,
        schedule: Vec<u64>,
        compensate: bool,
    }

    /// Deterministic jitter in [0, 10) µs (xorshift64), standing in for measurement noise.
    struct Jitter(u64);

    impl Jitter {
        fn next(&mut self) -> f64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 >> 11) as f64 / (1u64 << 53) as f64 * 10.0
        }
    }

    const OVERHEAD_US: f64 = 40.0;

    /// Latencies of a `requests`-long run: the first request random, the rest sequential.
    /// Every request also pays `OVERHEAD_US` of path overhead and 0-10 µs of jitter.
    fn generate(rules: &Rules, requests: usize, seed: u64) -> Vec<f64> {
        let mut jitter = Jitter(seed);
        let mut run = vec![rules.random + OVERHEAD_US + jitter.next()];
        let mut excess = if rules.compensate && rules.random > rules.sequential {
            rules.random - rules.sequential
        } else {
            0.0
        };
        let mut since_spike = 0;
        let mut step = 0;
        for _ in 1..requests {
            since_spike += 1;
            let spike = since_spike == rules.schedule[step];
            if spike {
                since_spike = 0;
                step = (step + 1).min(rules.schedule.len() - 1);
            }
            let removed = excess.min(rules.sequential);
            excess -= removed;
            let mut latency = rules.sequential - removed + OVERHEAD_US + jitter.next();
            if spike {
                latency += rules.spike;
            }
            run.push(latency);
        }
        run
    }

    /// The level a measured delay is compared against: the model's delay plus the path
    /// overhead and the jitter's mean.
    fn measured(delay: f64) -> f64 {
        delay + OVERHEAD_US + 5.0
    }

    fn assert_delay(actual: f64, expected: f64) {
        let tolerance = (0.02 * expected.abs()).max(15.0);
        assert!(
            (actual - expected).abs() <= tolerance,
            "{actual} is not within {tolerance} of {expected}"
        );
    }

    fn seed_reads() -> Rules {
        Rules {
            random: 1000.0,
            sequential: 0.0,
            spike: 5000.0,
            schedule: vec![32, 64, 128, 256],
            compensate: false,
        }
    }

    fn seed_writes() -> Rules {
        Rules {
            random: 3000.0,
            sequential: 250.0,
            spike: 20000.0,
            schedule: vec![195, 256],
            compensate: true,
        }
    }

    #[test]
    fn seed_read_schedule_is_recovered() {
        let rules = seed_reads();
        let run = generate(&rules, 1024, 0x9E37_79B9_7F4A_7C15);
        let fit = detect_steps(&run, measured(rules.random)).unwrap();
        assert_eq!(fit.step_interval_requests, vec![32, 64, 128, 256]);
        // Spikes at 32, 96, 224, 480, 736 and 992.
        assert_eq!(fit.spikes, 6);
        assert_delay(fit.sequential_us, measured(rules.sequential));
        assert_delay(fit.spike_us, rules.spike);
        assert_eq!(fit.random_us, measured(rules.random));
        assert!(!fit.compensate_first_request);
        assert!(fit.threshold_us > measured(0.0) && fit.threshold_us < rules.spike);
    }

    #[test]
    fn seed_write_schedule_with_compensation_is_recovered() {
        let rules = seed_writes();
        let run = generate(&rules, 1024, 12345);
        // The first 11 sequential requests are free: 11 · 250 µs = 3000 − 250 µs.
        assert!(run[1..12].iter().all(|&v| v < measured(10.0)));
        let fit = detect_steps(&run, measured(rules.random)).unwrap();
        assert_eq!(fit.step_interval_requests, vec![195, 256]);
        assert_eq!(fit.spikes, 4);
        assert_delay(fit.sequential_us, measured(rules.sequential));
        assert_delay(fit.spike_us, rules.spike);
        assert!(fit.compensate_first_request);
    }

    #[test]
    fn write_schedule_without_compensation_is_not_flagged() {
        let rules = Rules {
            compensate: false,
            ..seed_writes()
        };
        let run = generate(&rules, 1024, 777);
        let fit = detect_steps(&run, measured(rules.random)).unwrap();
        assert_eq!(fit.step_interval_requests, vec![195, 256]);
        assert_delay(fit.sequential_us, measured(rules.sequential));
        assert!(!fit.compensate_first_request);
    }

    #[test]
    fn partial_compensation_is_detected() {
        // 2700 µs to burn at 250 per request: ten free requests and one that pays 50 µs.
        let rules = Rules {
            random: 2950.0,
            ..seed_writes()
        };
        let run = generate(&rules, 1024, 4242);
        let fit = detect_steps(&run, measured(rules.random)).unwrap();
        assert!(fit.compensate_first_request);
        assert_delay(fit.sequential_us, measured(rules.sequential));
    }

    #[test]
    fn run_without_spikes() {
        let rules = Rules {
            random: 800.0,
            sequential: 120.0,
            spike: 0.0,
            schedule: vec![u64::MAX],
            compensate: false,
        };
        let run = generate(&rules, 300, 99);
        let fit = detect_steps(&run, measured(rules.random)).unwrap();
        assert_eq!(fit.spikes, 0);
        assert_eq!(fit.spike_us, 0.0);
        assert_eq!(fit.step_interval_requests, vec![299]);
        assert_delay(fit.sequential_us, measured(rules.sequential));
        assert!(!fit.compensate_first_request);
    }

    #[test]
    fn outliers_of_tens_of_microseconds_are_not_spikes() {
        let rules = seed_reads();
        let mut run = generate(&rules, 1024, 31337);
        for k in (7..run.len()).step_by(53) {
            run[k] += 80.0;
        }
        let fit = detect_steps(&run, measured(rules.random)).unwrap();
        assert_eq!(fit.step_interval_requests, vec![32, 64, 128, 256]);
        assert_eq!(fit.spikes, 6);
        assert_delay(fit.spike_us, rules.spike);

        let flat = Rules {
            spike: 0.0,
            ..seed_reads()
        };
        let mut run = generate(&flat, 500, 5);
        for k in (3..run.len()).step_by(41) {
            run[k] += 80.0;
        }
        let fit = detect_steps(&run, measured(flat.random)).unwrap();
        assert_eq!(fit.spikes, 0);
        assert_eq!(fit.step_interval_requests, vec![499]);
    }

    #[test]
    fn noisy_final_gap_does_not_explode_the_schedule() {
        let rules = seed_writes();
        let mut run = generate(&rules, 1024, 2024);
        // A spike-sized hiccup 17 requests after the last real spike (963).
        run[980] += 20000.0;
        let fit = detect_steps(&run, measured(rules.random)).unwrap();
        assert_eq!(fit.spikes, 5);
        assert_eq!(fit.step_interval_requests, vec![195, 256]);
    }

    #[test]
    fn schedule_rules() {
        assert_eq!(
            schedule_from_gaps(&[32, 64, 128, 256, 256, 256]),
            vec![32, 64, 128, 256]
        );
        assert_eq!(schedule_from_gaps(&[195, 256, 256, 256]), vec![195, 256]);
        assert_eq!(
            schedule_from_gaps(&[10, 10, 10, 20, 20]),
            vec![10, 10, 10, 20]
        );
        assert_eq!(schedule_from_gaps(&[7, 7, 7]), vec![7]);
        // A short run: every gap different, all kept.
        assert_eq!(schedule_from_gaps(&[32, 64, 128]), vec![32, 64, 128]);
        assert_eq!(schedule_from_gaps(&[40]), vec![40]);
        // A noisy final gap.
        assert_eq!(
            schedule_from_gaps(&[32, 64, 128, 256, 256, 100, 156]),
            vec![32, 64, 128, 256]
        );
        assert_eq!(schedule_from_gaps(&[]), Vec::<u64>::new());
    }

    #[test]
    fn degenerate_inputs() {
        assert_eq!(detect_steps(&[], 100.0), None);
        assert_eq!(detect_steps(&[100.0, 10.0], 100.0), None);
        assert_eq!(detect_steps(&[100.0, 10.0, f64::NAN], 100.0), None);
        assert_eq!(detect_steps(&[100.0, 10.0, f64::INFINITY], 100.0), None);
        assert_eq!(detect_steps(&[100.0, 10.0, 10.0], f64::NAN), None);
        // All zeros: a flat run with no delay at all.
        let fit = detect_steps(&[0.0; 10], 0.0).unwrap();
        assert_eq!(fit.sequential_us, 0.0);
        assert_eq!(fit.step_interval_requests, vec![9]);
        assert!(!fit.compensate_first_request);
        // Negative latencies appear once a baseline is subtracted; they must not matter.
        let fit = detect_steps(&[500.0, -3.0, -1.0, -2.0, 4000.0, -2.0], 500.0).unwrap();
        assert_eq!(fit.step_interval_requests, vec![4]);
        assert_eq!(fit.spikes, 1);
        // Values at the edge of the f64 range: no panic, and no non-finite result.
        for run in [
            [f64::MAX, -f64::MAX, f64::MAX, -f64::MAX],
            [0.0, f64::MAX, f64::MAX, -f64::MAX],
            [f64::MAX; 4],
        ] {
            if let Some(fit) = detect_steps(&run, f64::MAX) {
                assert!(fit.sequential_us.is_finite() && fit.threshold_us.is_finite());
            }
        }
    }

    /// Drives the blackbox crate's step device at queue depth 1 through one sequential run,
    /// each request submitted when the previous one completes, and returns the latencies.
    fn device_run(write: bool, requests: u64) -> Vec<f64> {
        let mut device = StepDevice::new(wisconsin_usb());
        let op = if write { Op::Write } else { Op::Read };
        let mut now = SimTime::ZERO;
        let mut done = Vec::new();
        let mut latencies = Vec::new();
        for i in 0..requests {
            let request = Request {
                id: i,
                op,
                offset_bytes: (8 << 20) + i * 4096,
                len_bytes: 4096,
                arrival: now,
                flow: 0,
            };
            device.submit(now, request).unwrap();
            let deadline = device.next_deadline().unwrap();
            device.advance(deadline, &mut done);
            let completion = done.pop().unwrap();
            latencies.push(completion.latency().as_ns() as f64 / 1e3);
            now = completion.finish;
        }
        latencies
    }

    fn check_device_direction(write: bool, direction: &StepDirection) {
        let run = device_run(write, 1024);
        let random_us = direction.random.as_ns() as f64 / 1e3;
        let fit = detect_steps(&run, random_us).unwrap();
        assert_eq!(fit.sequential_us, direction.sequential.as_ns() as f64 / 1e3);
        assert_eq!(fit.spike_us, direction.spike.as_ns() as f64 / 1e3);
        assert_eq!(fit.step_interval_requests, direction.step_interval_requests);
        assert_eq!(
            fit.compensate_first_request,
            direction.compensate_first_request
        );
    }

    #[test]
    fn blackbox_step_device_parameters_are_recovered() {
        let params = wisconsin_usb();
        check_device_direction(false, &params.read);
        check_device_direction(true, &params.write);
    }
}
