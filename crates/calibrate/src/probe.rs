//! Runs a plan on a target and keeps every latency.

use crate::plan::{Plan, PlannedIo};
use crate::target::{SweepPoint, Target, TargetError};
use std::sync::atomic::{AtomicBool, Ordering};
use storsim_blackbox::AccessPattern;

/// Every latency of one (pattern, size), in the order measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub pattern: AccessPattern,
    pub size_bytes: u64,
    pub latencies_ns: Vec<u64>,
}

/// The latencies of one long sequential run, first request (the run's opener) included.
#[derive(Clone, Debug, PartialEq)]
pub struct StepRun {
    pub write: bool,
    pub size_bytes: u64,
    pub latencies_ns: Vec<u64>,
}

/// Everything a calibration measured.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Measurements {
    /// One per measured pattern and planned size, possibly empty when the run stopped early.
    pub series: Vec<Series>,
    pub step_runs: Vec<StepRun>,
    pub sweep: Vec<SweepPoint>,
    /// Requests issued, warm-up and fill included.
    pub requests: u64,
    /// Why the measurement ended before the plan did: Ctrl-C, or an I/O error's message.
    pub stopped_early: Option<String>,
}

impl Measurements {
    pub fn series(&self, pattern: AccessPattern, size_bytes: u64) -> Option<&Series> {
        self.series
            .iter()
            .find(|s| s.pattern == pattern && s.size_bytes == size_bytes)
    }
}

/// Where the measurement is, for a progress display.
#[derive(Clone, Copy, Debug)]
pub struct ProgressEvent<'a> {
    pub stage: &'a str,
    pub done: u64,
    pub total: u64,
}

/// Runs `plan` on `target`. When the target wants it (a sparse file), the whole target is
/// first written sequentially, untimed, so that reads reach the device. Stops between two requests
/// once `stop` is set; an I/O error also stops the run. Either way what was measured is
/// returned, with the reason in [`Measurements::stopped_early`].
pub fn measure(
    plan: &Plan,
    target: &mut dyn Target,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(ProgressEvent),
) -> Measurements {
    let size = target.info().size_bytes;
    let fill = target.wants_fill();
    let fill_requests = if fill {
        size.div_ceil(fill_len(plan))
    } else {
        0
    };
    let total = plan.total_requests() + fill_requests;
    let mut m = Measurements::default();
    for &pattern in &plan.patterns {
        for &size_bytes in &plan.sizes_bytes {
            m.series.push(Series {
                pattern,
                size_bytes,
                latencies_ns: Vec::new(),
            });
        }
    }
    let result = run(
        plan,
        target,
        fill,
        stop,
        &mut |stage, m_requests| {
            progress(ProgressEvent {
                stage,
                done: m_requests,
                total,
            })
        },
        &mut m,
    );
    match result {
        Ok(()) if stop.load(Ordering::Relaxed) => {
            m.stopped_early = Some("interrupted".to_string());
        }
        Ok(()) => {}
        Err(e) => m.stopped_early = Some(e.to_string()),
    }
    m
}

fn run(
    plan: &Plan,
    target: &mut dyn Target,
    fill: bool,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(&str, u64),
    m: &mut Measurements,
) -> Result<(), TargetError> {
    let size = target.info().size_bytes;
    let stopped = || stop.load(Ordering::Relaxed);
    if fill {
        let mut offset = 0;
        while offset < size && !stopped() {
            let len = fill_len(plan).min(size - offset);
            let len = len - len % target.info().block_bytes;
            if len == 0 {
                break;
            }
            target.io(&PlannedIo {
                write: true,
                offset_bytes: offset,
                len_bytes: len,
                sample: None,
            })?;
            offset += len;
            m.requests += 1;
            progress("filling", m.requests);
        }
    }
    for (pattern_index, &pattern) in plan.patterns.iter().enumerate() {
        let stage = stage_name(pattern);
        // `measure` laid the series out pattern by pattern, each with every planned size.
        let first_series = pattern_index * plan.sizes_bytes.len();
        for io in plan.pattern_requests(pattern, size) {
            if stopped() {
                return Ok(());
            }
            let ns = target.io(&io)?;
            m.requests += 1;
            if let Some(slot) = io.sample {
                m.series[first_series + slot.size_index]
                    .latencies_ns
                    .push(ns);
            }
            progress(stage, m.requests);
        }
    }
    let writes = plan.patterns.iter().any(|p| p.is_write());
    let directions: &[bool] = if writes { &[false, true] } else { &[false] };
    if plan.step_run_requests > 0 {
        for &write in directions {
            let (opener, run) = plan.step_run(write, size);
            if stopped() {
                return Ok(());
            }
            target.io(&opener)?;
            m.requests += 1;
            let mut latencies_ns = Vec::with_capacity(run.len());
            for io in &run {
                if stopped() {
                    break;
                }
                latencies_ns.push(target.io(io)?);
                m.requests += 1;
                progress("step runs", m.requests);
            }
            m.step_runs.push(StepRun {
                write,
                size_bytes: plan.step_size_bytes,
                latencies_ns,
            });
        }
    }
    for &write in directions {
        for &depth in &plan.iodepths {
            if stopped() {
                return Ok(());
            }
            let offsets = plan.sweep_offsets(write, depth, size);
            let point = target.sweep(write, plan.sweep_size_bytes, depth, &offsets, stop)?;
            m.requests += point.requests;
            m.sweep.push(point);
            progress("iodepth sweep", m.requests);
        }
    }
    Ok(())
}

/// The untimed writes that fill a sparse file are the plan's largest requests.
fn fill_len(plan: &Plan) -> u64 {
    plan.sizes_bytes.iter().copied().max().unwrap_or(4096)
}

fn stage_name(pattern: AccessPattern) -> &'static str {
    match pattern {
        AccessPattern::SequentialRead => "sequential reads",
        AccessPattern::RandomRead => "random reads",
        AccessPattern::SequentialWrite => "sequential writes",
        AccessPattern::RandomWrite => "random writes",
    }
}
