//! The `calibrate` report: text (the seed's fit-table layout), JSON and plot-ready CSV, and the
//! comment block at the top of the written model.

use serde_json::{json, Value};
use std::fmt::Write;
use std::path::Path;
use storsim_calibrate::analysis::PatternResult;
use storsim_calibrate::{
    Calibration, Fitted, FittedModel, Measurements, Plan, TargetInfo, TargetKind,
};

/// A finished calibration, as its reports give it.
pub struct CalibrationResults<'a> {
    /// The command line that ran it, for the JSON's `command_line`.
    pub command_line: &'a [String],
    pub target: &'a TargetInfo,
    pub baseline: Option<&'a TargetInfo>,
    pub plan: &'a Plan,
    pub measured: &'a Measurements,
    pub fitted: &'a Fitted,
    pub model: FittedModel,
    pub out: &'a Path,
}

fn kind_name(k: TargetKind) -> &'static str {
    match k {
        TargetKind::BlockDevice => "block device",
        TargetKind::RegularFile => "regular file",
        TargetKind::Model => "device model, virtual time",
    }
}

fn describe(t: &TargetInfo) -> String {
    format!(
        "{} ({}, {} bytes, {}-byte blocks{})",
        t.name,
        kind_name(t.kind),
        t.size_bytes,
        t.block_bytes,
        if t.direct_io {
            ", direct I/O"
        } else {
            ", page cache"
        }
    )
}

fn sizes_text(sizes: &[u64]) -> String {
    sizes
        .iter()
        .map(|&s| human(s))
        .collect::<Vec<_>>()
        .join(", ")
}

fn human(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes & ((1 << 20) - 1) == 0 {
        format!("{}M", bytes >> 20)
    } else if bytes >= 1024 && bytes & 1023 == 0 {
        format!("{}K", bytes >> 10)
    } else {
        format!("{bytes}")
    }
}

fn statistic_name(r: &CalibrationResults) -> &'static str {
    match r.fitted.calibration.statistic {
        storsim_calibrate::Statistic::Median => "median",
        storsim_calibrate::Statistic::Min => "minimum",
    }
}

/// Comment lines for the top of the model file: where the numbers come from.
pub fn calibration_model_header(r: &CalibrationResults) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# Written by storsim calibrate from {}, seed {}.",
        describe(r.target),
        r.plan.seed
    );
    let _ = writeln!(
        s,
        "# {} latency per size over {} zones x {} repeats x {} requests per run; sizes {}.",
        statistic_name(r),
        r.plan.zones,
        r.plan.repeats,
        r.plan.requests_per_run,
        sizes_text(&r.plan.sizes_bytes)
    );
    if let Some(b) = r.baseline {
        let _ = writeln!(s, "# Net of the baseline {} (the path's own cost).", b.name);
    }
    for p in &r.fitted.calibration.patterns {
        if let Some(f) = &p.fit {
            let _ = writeln!(
                s,
                "# {}: A = {:.3} us, B = {:.4} us/KiB, r^2 = {:.6}",
                p.pattern, f.a_us, f.b_us_per_kib, f.r_squared
            );
        }
    }
    for note in &r.fitted.calibration.notes {
        let _ = writeln!(s, "# Note: {note}");
    }
    if let Some(reason) = &r.measured.stopped_early {
        let _ = writeln!(
            s,
            "# The measurement stopped early ({reason}): partial data."
        );
    }
    s
}

fn fit_cell(p: &PatternResult, f: impl Fn(&storsim_calibrate::fit::LinearFit) -> String) -> String {
    p.fit.as_ref().map(f).unwrap_or_else(|| "-".to_string())
}

/// The human-readable report: what was measured, the fits and their validation, the points,
/// the erase correction, the steps, the queue-depth sweep, and what was written.
pub fn calibration_text(r: &CalibrationResults, wrote_model: bool) -> String {
    let c = &r.fitted.calibration;
    let mut s = String::new();
    text_preamble(&mut s, r);
    if !c.patterns.is_empty() {
        let columns = PatternColumns(&c.patterns);
        text_linear_fits(&mut s, &columns, r.baseline.is_some());
        if c.patterns.iter().any(|p| p.validation.is_some()) {
            text_validation(&mut s, &columns);
        }
        text_points(&mut s, &c.patterns);
    }
    text_erase_correction(&mut s, c);
    text_steps(&mut s, c);
    text_sweep(&mut s, c);
    text_outcome(&mut s, r, wrote_model);
    s
}

/// The target, the plan, the baseline, and the notes that qualify everything below.
fn text_preamble(s: &mut String, r: &CalibrationResults) {
    let c = &r.fitted.calibration;
    let _ = writeln!(s, "storsim calibrate: {}", describe(r.target));
    let _ = writeln!(
        s,
        "  seed {}, {} zones, {} repeats x {} requests per run, {} warm-up, {} requests issued",
        r.plan.seed,
        r.plan.zones,
        r.plan.repeats,
        r.plan.requests_per_run,
        r.plan.warmup_requests,
        r.measured.requests
    );
    let held: Vec<u64> = c
        .patterns
        .first()
        .map(|p| {
            p.points
                .iter()
                .filter(|p| p.held_out)
                .map(|p| p.size_bytes)
                .collect()
        })
        .unwrap_or_default();
    let _ = writeln!(
        s,
        "  sizes {}; statistic: {}; held out of the fit: {}",
        sizes_text(&r.plan.sizes_bytes),
        statistic_name(r),
        if held.is_empty() {
            "none".to_string()
        } else {
            sizes_text(&held)
        }
    );
    if let Some(b) = r.baseline {
        let _ = writeln!(s, "  baseline: {}", describe(b));
    }
    if let Some(reason) = &r.measured.stopped_early {
        let _ = writeln!(s, "  STOPPED EARLY: {reason}; everything below is partial");
    }
    for note in r.target.notes.iter().chain(&c.notes) {
        let _ = writeln!(s, "  note: {note}");
    }
}

/// A table with one column per access pattern: a 22-character label, then 14 characters per
/// pattern.
struct PatternColumns<'a>(&'a [PatternResult]);

impl PatternColumns<'_> {
    /// A blank line, then the title (on a line of its own when it is wider than the labels)
    /// and the patterns' names.
    fn header(&self, s: &mut String, title: &str) {
        if title.len() > 22 {
            let _ = write!(s, "\n{title}\n{:<22}", "");
        } else {
            let _ = write!(s, "\n{title:<22}");
        }
        for p in self.0 {
            let _ = write!(s, "{:>14}", p.pattern.to_uppercase());
        }
        s.push('\n');
    }

    /// One row: `label`, then `f` of each pattern.
    fn row(&self, s: &mut String, label: &str, f: &dyn Fn(&PatternResult) -> String) {
        let _ = write!(s, "{label:<22}");
        for p in self.0 {
            let _ = write!(s, "{:>14}", f(p));
        }
        s.push('\n');
    }
}

/// The linear fit per pattern and, with a baseline, the measured and baseline fits it is the
/// difference of.
fn text_linear_fits(s: &mut String, columns: &PatternColumns, net_of_baseline: bool) {
    columns.header(
        s,
        if net_of_baseline {
            "Linear fit (net)"
        } else {
            "Linear fit"
        },
    );
    columns.row(s, "A (us)", &|p| fit_cell(p, |f| format!("{:.3}", f.a_us)));
    columns.row(s, "B (us/KiB)", &|p| {
        fit_cell(p, |f| format!("{:.4}", f.b_us_per_kib))
    });
    columns.row(s, "r^2", &|p| {
        fit_cell(p, |f| format!("{:.6}", f.r_squared))
    });
    columns.row(s, "p-value", &|p| {
        fit_cell(p, |f| {
            f.p_value
                .map(|v| format!("{v:.3e}"))
                .unwrap_or_else(|| "-".into())
        })
    });
    columns.row(s, "sizes fitted", &|p| {
        fit_cell(p, |f| f.points.to_string())
    });
    if net_of_baseline {
        let other = |p: &PatternResult, which: bool, a: bool| {
            let fit = if which { &p.raw_fit } else { &p.baseline_fit };
            fit.as_ref()
                .map(|f| {
                    if a {
                        format!("{:.3}", f.a_us)
                    } else {
                        format!("{:.4}", f.b_us_per_kib)
                    }
                })
                .unwrap_or_else(|| "-".into())
        };
        columns.row(s, "A measured (us)", &|p| other(p, true, true));
        columns.row(s, "A baseline (us)", &|p| other(p, false, true));
        columns.row(s, "B measured (us/KiB)", &|p| other(p, true, false));
        columns.row(s, "B baseline (us/KiB)", &|p| other(p, false, false));
    }
}

/// How well the linear and table models predict the sizes held out of the fit.
fn text_validation(s: &mut String, columns: &PatternColumns) {
    columns.header(s, "Validation (mean % error on held-out sizes)");
    let cell = |p: &PatternResult, linear: bool| {
        p.validation
            .as_ref()
            .map(|v| {
                format!(
                    "{:.2}",
                    if linear {
                        v.linear_mean_error_pct
                    } else {
                        v.table_mean_error_pct
                    }
                )
            })
            .unwrap_or_else(|| "-".into())
    };
    columns.row(s, "linear", &|p| cell(p, true));
    columns.row(s, "table", &|p| cell(p, false));
}

/// Every measured size of every pattern, with what the two models predict for it.
fn text_points(s: &mut String, patterns: &[PatternResult]) {
    let _ = writeln!(
        s,
        "\n{:<8}{:>10}{:>10}{:>10}{:>10}{:>10}{:>11}{:>11}",
        "pattern", "size", "samples", "min us", "median us", "p90 us", "linear us", "table us"
    );
    for p in patterns {
        for pt in &p.points {
            let _ = writeln!(
                s,
                "{:<8}{:>10}{:>10}{:>10.1}{:>10.1}{:>10.1}{:>11.1}{:>11.1}{}",
                p.pattern,
                human(pt.size_bytes),
                pt.samples,
                pt.min_us,
                pt.median_us,
                pt.p90_us,
                pt.linear_us,
                pt.table_us,
                if pt.held_out { "  (held out)" } else { "" }
            );
        }
    }
}

/// The erases per random write that the erase correction found, if it ran.
fn text_erase_correction(s: &mut String, c: &Calibration) {
    let Some(e) = &c.erase_correction else {
        return;
    };
    let _ = writeln!(
        s,
        "\nErase correction (L = n*WL + k*EL, EL = {} us): mean k = {:.4} erases per random write",
        e.erase_latency_us, e.mean_k
    );
    let per: Vec<String> = e
        .per_size
        .iter()
        .map(|(size, k)| format!("{} {k:.3}", human(*size)))
        .collect();
    let _ = writeln!(s, "  k by size: {}", per.join(", "));
}

/// The step model's parameters for reads and writes, where measured.
fn text_steps(s: &mut String, c: &Calibration) {
    for st in &c.steps {
        let dir = if st.write { "writes" } else { "reads" };
        match &st.fit {
            Some(f) => {
                let _ = writeln!(
                    s,
                    "\nSteps ({dir}, {} requests of {}): random {:.1} us, sequential {:.1} us, \
                     spike {:.1} us every {:?} requests ({} spikes){}",
                    st.requests,
                    human(st.size_bytes),
                    f.random_us,
                    f.sequential_us,
                    f.spike_us,
                    f.step_interval_requests,
                    f.spikes,
                    if f.compensate_first_request {
                        ", first request compensated"
                    } else {
                        ""
                    }
                );
            }
            None => {
                let _ = writeln!(s, "\nSteps ({dir}): too few requests to detect");
            }
        }
    }
}

/// The queue-depth sweep and the number of servers it points to, if it ran.
fn text_sweep(s: &mut String, c: &Calibration) {
    if c.sweep.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\n{:<8}{:>8}{:>10}{:>14}{:>14}",
        "sweep", "iodepth", "size", "IOPS", "mean us"
    );
    for p in &c.sweep {
        let _ = writeln!(
            s,
            "{:<8}{:>8}{:>10}{:>14.0}{:>14.1}",
            if p.write { "rw" } else { "rr" },
            p.iodepth,
            human(p.size_bytes),
            p.iops,
            p.mean_latency_us
        );
    }
    let _ = writeln!(s, "  servers (reads in flight at once): {}", c.servers);
}

/// Whether a model was written, and where.
fn text_outcome(s: &mut String, r: &CalibrationResults, wrote_model: bool) {
    if wrote_model {
        let _ = writeln!(s, "\nwrote {} ({} model)", r.out.display(), r.model.name());
    } else {
        let _ = writeln!(
            s,
            "\nno {} model written: too little was measured",
            r.model.name()
        );
    }
}

/// The full report as JSON.
pub fn calibration_json(r: &CalibrationResults, wrote_model: bool) -> Value {
    let patterns: Vec<&str> = r.plan.patterns.iter().map(|p| p.short_name()).collect();
    json!({
        "schema": crate::SCHEMA,
        "version": crate::VERSION,
        "kind": "calibrate",
        "command_line": r.command_line,
        "target": r.target,
        "baseline": r.baseline,
        "plan": {
            "seed": r.plan.seed,
            "zones": r.plan.zones,
            "sizes_bytes": r.plan.sizes_bytes,
            "patterns": patterns,
            "repeats": r.plan.repeats,
            "requests_per_run": r.plan.requests_per_run,
            "warmup_requests": r.plan.warmup_requests,
            "step_run_requests": r.plan.step_run_requests,
            "step_size_bytes": r.plan.step_size_bytes,
            "iodepths": r.plan.iodepths,
            "sweep_size_bytes": r.plan.sweep_size_bytes,
            "sweep_requests": r.plan.sweep_requests,
        },
        "requests": r.measured.requests,
        "stopped_early": r.measured.stopped_early,
        "calibration": r.fitted.calibration,
        "model": {
            "kind": r.model.name(),
            "file": if wrote_model { Some(r.out.display().to_string()) } else { None },
        },
    })
}

/// Measured vs predicted, one line per pattern and size.
pub fn calibration_csv(r: &CalibrationResults) -> String {
    let mut s = String::from(
        "pattern,size_bytes,held_out,samples,min_us,median_us,mean_us,p90_us,baseline_us,value_us,linear_us,table_us\n",
    );
    let num = |v: f64| {
        if v.is_finite() {
            format!("{v:.3}")
        } else {
            String::new()
        }
    };
    for p in &r.fitted.calibration.patterns {
        for pt in &p.points {
            let _ = writeln!(
                s,
                "{},{},{},{},{},{},{},{},{},{},{},{}",
                p.pattern,
                pt.size_bytes,
                pt.held_out,
                pt.samples,
                num(pt.min_us),
                num(pt.median_us),
                num(pt.mean_us),
                num(pt.p90_us),
                pt.baseline_us.map(num).unwrap_or_default(),
                num(pt.value_us),
                num(pt.linear_us),
                num(pt.table_us)
            );
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(name: &'static str) -> PatternResult {
        PatternResult {
            pattern: name,
            points: Vec::new(),
            fit: None,
            raw_fit: None,
            baseline_fit: None,
            validation: None,
        }
    }

    #[test]
    fn pattern_columns_align_labels_and_put_long_titles_on_their_own_line() {
        let patterns = [pattern("sr"), pattern("rw")];
        let columns = PatternColumns(&patterns);
        let mut s = String::new();
        columns.header(&mut s, "Linear fit");
        columns.row(&mut s, "A (us)", &|p| {
            fit_cell(p, |f| format!("{:.3}", f.a_us))
        });
        columns.header(&mut s, "Validation (mean % error on held-out sizes)");
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "");
        assert_eq!(
            lines[1],
            format!("{:<22}{:>14}{:>14}", "Linear fit", "SR", "RW")
        );
        // Without a fit, a cell says so rather than showing a number.
        assert_eq!(lines[2], format!("{:<22}{:>14}{:>14}", "A (us)", "-", "-"));
        assert_eq!(lines[3], "");
        assert_eq!(lines[4], "Validation (mean % error on held-out sizes)");
        assert_eq!(lines[5], format!("{:<22}{:>14}{:>14}", "", "SR", "RW"));
    }
}
