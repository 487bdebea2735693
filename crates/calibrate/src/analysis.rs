//! From measurements to fitted models and the report's tables: per-size statistics, the
//! baseline taken off, least-squares fits on the fit sizes, the `table` model, step detection,
//! the erase correction, the servers the sweep implies, and the validation of each model on
//! the sizes held out of the fit.

use crate::fit::{detect_steps, erase_correction, fit_linear, EraseCorrection, LinearFit, StepFit};
use crate::probe::{Measurements, Series};
use crate::target::SweepPoint;
use serde::Serialize;
use storsim_blackbox::linear::{LinearCost, LinearParams};
use storsim_blackbox::step::{StepDirection, StepParams};
use storsim_blackbox::table::{TableParams, TableRow};
use storsim_blackbox::{AccessPattern, SequentialDetect};
use storsim_core::SimDuration;

/// Which per-size statistic the fits use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Statistic {
    /// The median latency: what a typical request costs (the default).
    Median,
    /// The minimum latency: the thesis' choice ("the minimum observed latency ... most
    /// probably directly resolved to the target page"), robust to interference.
    Min,
}

/// Which of the fitted black-box models a calibration writes as a device file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FittedModel {
    /// IBM's A + n·B per access pattern (`linear`).
    Linear,
    /// Measured times by size and pattern, interpolated (`table`).
    Table,
    /// The Wisconsin step model (`step`).
    Step,
}

impl FittedModel {
    /// The model's name, as device files and reports write it.
    pub fn name(self) -> &'static str {
        match self {
            FittedModel::Linear => "linear",
            FittedModel::Table => "table",
            FittedModel::Step => "step",
        }
    }
}

/// Which sizes are kept out of the fit to validate it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Holdout {
    /// Every second size (the 2nd, 4th, ...): the models are fitted on the others and scored
    /// on these. Needs at least four measured sizes.
    Alternate,
    /// Fit on every size; no validation table.
    None,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FitOptions {
    pub statistic: Statistic,
    pub holdout: Holdout,
    /// The erase latency EL of the thesis' erase correction, "taken from published studies".
    pub erase_latency_us: f64,
    /// The queue depth written into the models.
    pub queue_depth: usize,
}

/// One (pattern, size) of the measurement.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SizePoint {
    pub size_bytes: u64,
    pub samples: usize,
    pub min_us: f64,
    pub median_us: f64,
    pub mean_us: f64,
    pub p90_us: f64,
    /// The baseline's statistic at this size (the path's own cost), when one was measured.
    pub baseline_us: Option<f64>,
    /// The statistic the fits use, net of the baseline.
    pub value_us: f64,
    pub held_out: bool,
    /// The written models' predictions for this size.
    pub linear_us: f64,
    pub table_us: f64,
}

/// Mean absolute % error of each model on the held-out sizes.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Validation {
    pub held_out_sizes: Vec<u64>,
    pub linear_mean_error_pct: f64,
    pub table_mean_error_pct: f64,
}

/// One access pattern's results.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PatternResult {
    /// `sr`, `rr`, `sw` or `rw`.
    pub pattern: &'static str,
    pub points: Vec<SizePoint>,
    /// The fit the linear model uses: of `value_us` on the fit sizes.
    pub fit: Option<LinearFit>,
    /// With a baseline: the fit before the baseline was taken off, and the baseline's own fit
    /// (IBM's A "captures OS overheads"; this is how much of it the path alone explains).
    pub raw_fit: Option<LinearFit>,
    pub baseline_fit: Option<LinearFit>,
    pub validation: Option<Validation>,
}

/// Step detection on one direction's long sequential run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StepResult {
    pub write: bool,
    pub size_bytes: u64,
    pub requests: usize,
    /// The path's floor taken off the delays (the baseline's median random latency).
    pub baseline_us: Option<f64>,
    pub fit: Option<StepFit>,
}

/// Everything the report shows.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Calibration {
    pub statistic: Statistic,
    pub holdout: Holdout,
    pub patterns: Vec<PatternResult>,
    pub erase_correction: Option<EraseCorrection>,
    pub steps: Vec<StepResult>,
    pub sweep: Vec<SweepPoint>,
    /// Requests the device serves at once, from the sweep: reads per second at the deepest
    /// queue over reads per second at depth 1, rounded (1 without a sweep).
    pub servers: usize,
    pub notes: Vec<String>,
}

/// The calibration and the models it yields. A model is None when nothing was measured that
/// it could be built from.
#[derive(Clone, Debug, PartialEq)]
pub struct Fitted {
    pub calibration: Calibration,
    pub linear: Option<LinearParams>,
    pub table: Option<TableParams>,
    pub step: Option<StepParams>,
}

/// Per-size statistics of one series, in µs.
struct Stats {
    samples: usize,
    min: f64,
    median: f64,
    mean: f64,
    p90: f64,
}

fn stats(latencies_ns: &[u64]) -> Option<Stats> {
    if latencies_ns.is_empty() {
        return None;
    }
    let mut v: Vec<f64> = latencies_ns.iter().map(|&ns| ns as f64 / 1e3).collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    // Nearest rank.
    let p90 = v[((n as f64 * 0.9).ceil() as usize).clamp(1, n) - 1];
    Some(Stats {
        samples: n,
        min: v[0],
        median,
        mean: v.iter().sum::<f64>() / n as f64,
        p90,
    })
}

impl Stats {
    fn pick(&self, statistic: Statistic) -> f64 {
        match statistic {
            Statistic::Median => self.median,
            Statistic::Min => self.min,
        }
    }
}

/// Fits and scores everything in `m`; `baseline` is the same plan measured on the path
/// serving a device that takes no time.
pub fn analyse(
    m: &Measurements,
    baseline: Option<&Measurements>,
    capacity_bytes: u64,
    opts: FitOptions,
) -> Fitted {
    let mut notes = Vec::new();
    let servers = servers_from_sweep(&m.sweep);
    let mut patterns = Vec::new();
    for pattern in crate::plan::PATTERN_ORDER {
        let series: Vec<&Series> = m
            .series
            .iter()
            .filter(|s| s.pattern == pattern && !s.latencies_ns.is_empty())
            .collect();
        if series.is_empty() {
            continue;
        }
        let result = pattern_result(pattern, &series, baseline, opts, &mut notes);
        patterns.push((pattern, result));
    }

    let linear = linear_model(
        &patterns,
        capacity_bytes,
        servers,
        opts.queue_depth,
        &mut notes,
    );
    let table = table_model(&patterns, capacity_bytes, servers, opts.queue_depth);
    for (pattern, result) in &mut patterns {
        score(*pattern, result, linear.as_ref(), table.as_ref());
    }

    let erase = random_write_erase_correction(m, opts.erase_latency_us);
    let steps: Vec<StepResult> = m
        .step_runs
        .iter()
        .map(|run| step_result(run, m, baseline))
        .collect();
    let step = step_model(&steps, capacity_bytes, opts.queue_depth);

    Fitted {
        calibration: Calibration {
            statistic: opts.statistic,
            holdout: opts.holdout,
            patterns: patterns.into_iter().map(|(_, r)| r).collect(),
            erase_correction: erase,
            steps,
            sweep: m.sweep.clone(),
            servers,
            notes,
        },
        linear,
        table,
        step,
    }
}

/// One pattern's per-size statistics (every second size held out if asked and possible)
/// and its fits, the models' predictions still to come; what it could not do goes to
/// `notes`.
fn pattern_result(
    pattern: AccessPattern,
    series: &[&Series],
    baseline: Option<&Measurements>,
    opts: FitOptions,
    notes: &mut Vec<String>,
) -> PatternResult {
    let holding_out = opts.holdout == Holdout::Alternate && series.len() >= 4;
    if opts.holdout == Holdout::Alternate && !holding_out {
        notes.push(format!(
            "{}: only {} sizes measured, too few to hold any out; fitted on all of them",
            pattern.short_name(),
            series.len()
        ));
    }
    let mut points = Vec::new();
    for (i, s) in series.iter().enumerate() {
        let st = stats(&s.latencies_ns).expect("non-empty series");
        let baseline_us = baseline.and_then(|b| path_floor(b, pattern, s.size_bytes, opts));
        let raw = st.pick(opts.statistic);
        points.push(SizePoint {
            size_bytes: s.size_bytes,
            samples: st.samples,
            min_us: st.min,
            median_us: st.median,
            mean_us: st.mean,
            p90_us: st.p90,
            baseline_us,
            value_us: raw - baseline_us.unwrap_or(0.0),
            held_out: holding_out && i % 2 == 1,
            linear_us: f64::NAN,
            table_us: f64::NAN,
        });
    }
    if baseline.is_some() && points.iter().any(|p| p.baseline_us.is_none()) {
        notes.push(format!(
            "{}: the baseline lacks some sizes; those are not corrected",
            pattern.short_name()
        ));
    }
    let fit_on = |value: &dyn Fn(&SizePoint) -> Option<f64>| {
        let xy: Vec<(f64, f64)> = points
            .iter()
            .filter(|p| !p.held_out)
            .filter_map(|p| value(p).map(|v| (p.size_bytes as f64 / 1024.0, v)))
            .collect();
        fit_linear(&xy)
    };
    let fit = fit_on(&|p| Some(p.value_us));
    let (raw_fit, baseline_fit) = if baseline.is_some() {
        (
            fit_on(&|p| Some(p.value_us + p.baseline_us.unwrap_or(0.0))),
            fit_on(&|p| p.baseline_us),
        )
    } else {
        (None, None)
    };
    PatternResult {
        pattern: pattern.short_name(),
        points,
        fit,
        raw_fit,
        baseline_fit,
        validation: None,
    }
}

/// Fills in each size's predictions by the written models and, with both models and sizes
/// held out, their mean error on those sizes.
fn score(
    pattern: AccessPattern,
    result: &mut PatternResult,
    linear: Option<&LinearParams>,
    table: Option<&TableParams>,
) {
    for p in &mut result.points {
        if let Some(l) = linear {
            p.linear_us = l.cost(pattern).service(p.size_bytes).as_ns() as f64 / 1e3;
        }
        if let Some(t) = table {
            p.table_us = t.service(pattern, p.size_bytes).as_ns() as f64 / 1e3;
        }
    }
    let held: Vec<&SizePoint> = result.points.iter().filter(|p| p.held_out).collect();
    if !held.is_empty() && linear.is_some() && table.is_some() {
        let error = |predict: fn(&SizePoint) -> f64| {
            held.iter()
                .map(|p| 100.0 * (predict(p) - p.value_us).abs() / p.value_us.abs().max(1e-9))
                .sum::<f64>()
                / held.len() as f64
        };
        result.validation = Some(Validation {
            held_out_sizes: held.iter().map(|p| p.size_bytes).collect(),
            linear_mean_error_pct: error(|p| p.linear_us),
            table_mean_error_pct: error(|p| p.table_us),
        });
    }
}

/// The erase correction from the random writes' latencies, every size measured.
fn random_write_erase_correction(
    m: &Measurements,
    erase_latency_us: f64,
) -> Option<EraseCorrection> {
    let erase = m
        .series
        .iter()
        .filter(|s| s.pattern == AccessPattern::RandomWrite && !s.latencies_ns.is_empty())
        .map(|s| {
            let us = s.latencies_ns.iter().map(|&ns| ns as f64 / 1e3).collect();
            (s.size_bytes, us)
        })
        .collect::<Vec<_>>();
    erase_correction(&erase, erase_latency_us)
}

/// The path's own cost for a request of `pattern` and `size_bytes`: the smaller of the
/// baseline's statistic for the sequential and the random pattern of the same direction.
/// A device that takes no time cannot tell the two apart, so whatever separates them in the
/// baseline is disturbance of the path (another process, a late wake-up), never the floor.
fn path_floor(
    baseline: &Measurements,
    pattern: AccessPattern,
    size_bytes: u64,
    opts: FitOptions,
) -> Option<f64> {
    [true, false]
        .into_iter()
        .filter_map(|sequential| {
            let p = AccessPattern::new(pattern.is_write(), sequential);
            let series = baseline.series(p, size_bytes)?;
            stats(&series.latencies_ns).map(|st| st.pick(opts.statistic))
        })
        .reduce(f64::min)
}

/// Reads per second at the deepest queue over reads per second at depth 1.
fn servers_from_sweep(sweep: &[SweepPoint]) -> usize {
    let reads: Vec<&SweepPoint> = sweep.iter().filter(|p| !p.write).collect();
    let Some(qd1) = reads.iter().find(|p| p.iodepth == 1 && p.iops > 0.0) else {
        return 1;
    };
    let best = reads.iter().map(|p| p.iops).fold(qd1.iops, f64::max);
    ((best / qd1.iops).round() as usize).clamp(1, storsim_core::QUEUE_DEPTH_MAX as usize)
}

/// For a pattern that was not measured, the measured pattern that stands in for it: the other
/// direction with the same sequentiality first (reads for writes when writes were not allowed).
fn stand_in(pattern: AccessPattern, measured: &[AccessPattern]) -> Option<AccessPattern> {
    let other_direction = AccessPattern::new(!pattern.is_write(), pattern.is_sequential());
    let other_order = AccessPattern::new(pattern.is_write(), !pattern.is_sequential());
    [pattern, other_direction, other_order]
        .into_iter()
        .chain(AccessPattern::ALL)
        .find(|p| measured.contains(p))
}

fn linear_model(
    patterns: &[(AccessPattern, PatternResult)],
    capacity_bytes: u64,
    servers: usize,
    queue_depth: usize,
    notes: &mut Vec<String>,
) -> Option<LinearParams> {
    let fitted: Vec<AccessPattern> = patterns
        .iter()
        .filter(|(_, r)| r.fit.is_some())
        .map(|(p, _)| *p)
        .collect();
    let mut costs = [LinearCost {
        fixed: SimDuration::ZERO,
        per_kib_ps: 0,
    }; 4];
    for pattern in AccessPattern::ALL {
        let source = stand_in(pattern, &fitted)?;
        let fit = patterns
            .iter()
            .find(|(p, _)| *p == source)
            .and_then(|(_, r)| r.fit.as_ref())?;
        if source != pattern {
            notes.push(format!(
                "{} was not measured: the models use the {} values for it",
                pattern.short_name(),
                source.short_name()
            ));
        }
        if source == pattern && (fit.a_us < 0.0 || fit.b_us_per_kib < 0.0) {
            notes.push(format!(
                "{}: the fit has a negative {} ({:.3}); the model uses 0",
                pattern.short_name(),
                if fit.a_us < 0.0 { "A" } else { "B" },
                fit.a_us.min(fit.b_us_per_kib)
            ));
        }
        costs[pattern.index()] = LinearCost::from_us(fit.a_us.max(0.0), fit.b_us_per_kib.max(0.0));
    }
    Some(LinearParams {
        capacity_bytes,
        costs,
        trim: SimDuration::ZERO,
        flush: SimDuration::ZERO,
        sequential_detect: SequentialDetect::PreviousRequest,
        servers,
        queue_depth,
    })
}

/// The `table` model: one row per fit size, each pattern's value there.
fn table_model(
    patterns: &[(AccessPattern, PatternResult)],
    capacity_bytes: u64,
    channels: usize,
    queue_depth: usize,
) -> Option<TableParams> {
    let measured: Vec<AccessPattern> = patterns.iter().map(|(p, _)| *p).collect();
    let sources: Vec<&PatternResult> = AccessPattern::ALL
        .iter()
        .map(|&p| {
            let s = stand_in(p, &measured)?;
            patterns.iter().find(|(q, _)| *q == s).map(|(_, r)| r)
        })
        .collect::<Option<_>>()?;
    // Sizes fitted in every source pattern (a run stopped early may lack some).
    let sizes: Vec<u64> = sources[0]
        .points
        .iter()
        .filter(|p| !p.held_out)
        .map(|p| p.size_bytes)
        .filter(|&size| {
            sources
                .iter()
                .all(|r| r.points.iter().any(|p| p.size_bytes == size && !p.held_out))
        })
        .collect();
    if sizes.is_empty() {
        return None;
    }
    let rows = sizes
        .iter()
        .map(|&size| {
            let mut us = [0.0; 4];
            for pattern in AccessPattern::ALL {
                let r = sources[pattern.index()];
                let p = r
                    .points
                    .iter()
                    .find(|p| p.size_bytes == size)
                    .expect("size");
                us[pattern.index()] = p.value_us.max(0.0);
            }
            TableRow::from_us(size, us)
        })
        .collect();
    Some(TableParams {
        capacity_bytes,
        rows,
        channels,
        speedup_milli: 1000,
        trim: SimDuration::ZERO,
        flush: SimDuration::ZERO,
        sequential_detect: SequentialDetect::PreviousRequest,
        queue_depth,
    })
}

/// Step detection on one run. The random delay is the median random latency at the run's
/// size in the main measurement, or the run's own first request when that size was not
/// measured; the baseline's median random latency (the path's floor) is taken off every
/// delay but the spike, which is a difference already.
fn step_result(
    run: &crate::probe::StepRun,
    m: &Measurements,
    baseline: Option<&Measurements>,
) -> StepResult {
    let random = AccessPattern::new(run.write, false);
    let median = |m: &Measurements| {
        m.series(random, run.size_bytes)
            .and_then(|s| stats(&s.latencies_ns))
            .map(|s| s.median)
    };
    let floor = baseline.and_then(median);
    let shift = floor.unwrap_or(0.0);
    let us: Vec<f64> = run
        .latencies_ns
        .iter()
        .map(|&ns| ns as f64 / 1e3 - shift)
        .collect();
    let random_us = median(m).map(|r| r - shift).or(us.first().copied());
    StepResult {
        write: run.write,
        size_bytes: run.size_bytes,
        requests: run.latencies_ns.len(),
        baseline_us: floor,
        fit: random_us.and_then(|r| detect_steps(&us, r)),
    }
}

fn step_model(steps: &[StepResult], capacity_bytes: u64, queue_depth: usize) -> Option<StepParams> {
    let direction = |write: bool| {
        steps
            .iter()
            .find(|s| s.write == write)
            .and_then(|s| s.fit.as_ref())
            .map(|f| StepDirection {
                random: SimDuration::from_us_f64(f.random_us.max(0.0)),
                sequential: SimDuration::from_us_f64(f.sequential_us.max(0.0)),
                spike: SimDuration::from_us_f64(f.spike_us.max(0.0)),
                step_interval_requests: f.step_interval_requests.clone(),
                compensate_first_request: f.compensate_first_request,
            })
    };
    let read = direction(false)?;
    let write = direction(true).unwrap_or_else(|| read.clone());
    Some(StepParams {
        capacity_bytes,
        read,
        write,
        trim: SimDuration::ZERO,
        flush: SimDuration::ZERO,
        sequential_detect: SequentialDetect::PreviousSameDirection,
        queue_depth,
    })
}
