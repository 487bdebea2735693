//! The plots particular to one kind of document: a calibration's fits and residuals, the
//! emulator's lateness, and cosim's virtual clock against the real one.

use super::requests::{op_percentiles, us};
use super::{array, line, num, spans_decades, value_axis, Plots, Timeline};
use crate::chart::{Axis, Legend, Line, Style, XyChart};
use serde_json::Value;

/// A calibration's measured latencies against request size with the linear fits, and the
/// fits' residuals.
pub(super) fn calibrate(plots: &mut Plots, doc: &Value) {
    let Some(patterns) = doc
        .get("calibration")
        .and_then(|c| c.get("patterns"))
        .and_then(Value::as_array)
    else {
        return;
    };
    let mut fit_lines = Vec::new();
    let mut residuals = Vec::new();
    for (i, p) in patterns.iter().enumerate() {
        let name = p.get("pattern").and_then(Value::as_str).unwrap_or("?");
        let points = p
            .get("points")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let kib = |q: &Value| num(q, &["size_bytes"]).map(|b| b / 1024.0);
        let held = |q: &Value| q.get("held_out").and_then(Value::as_bool).unwrap_or(false);
        let measured = |want_held: bool| -> Vec<(f64, f64)> {
            points
                .iter()
                .filter(|q| held(q) == want_held)
                .filter_map(|q| Some((kib(q)?, num(q, &["value_us"])?)))
                .collect()
        };
        fit_lines.push(line("", measured(false), i, Style::Markers));
        fit_lines.push(line("", measured(true), i, Style::HollowMarkers));
        // The fitted line A + n·B across the sizes measured.
        if let (Some(a), Some(b)) = (num(p, &["fit", "a_us"]), num(p, &["fit", "b_us_per_kib"])) {
            let sizes: Vec<f64> = points.iter().filter_map(kib).collect();
            let (lo, hi) = sizes
                .iter()
                .fold((f64::INFINITY, 0.0f64), |(l, h), s| (l.min(*s), h.max(*s)));
            if lo.is_finite() {
                let steps = 40;
                let curve = (0..=steps)
                    .map(|k| {
                        let s = lo * (hi / lo).powf(k as f64 / steps as f64);
                        (s, a + b * s)
                    })
                    .collect();
                fit_lines.push(line(
                    format!("{name}: {a:.1} µs + {b:.3} µs/KiB"),
                    curve,
                    i,
                    Style::Solid,
                ));
            }
        }
        let resid = |want_held: bool| -> Vec<(f64, f64)> {
            points
                .iter()
                .filter(|q| held(q) == want_held)
                .filter_map(|q| {
                    let (v, l) = (num(q, &["value_us"])?, num(q, &["linear_us"])?);
                    let size = kib(q)?;
                    (l > 0.0).then(|| (size, 100.0 * (v - l) / l))
                })
                .collect()
        };
        residuals.push(line(name, resid(false), i, Style::Markers));
        residuals.push(line("", resid(true), i, Style::HollowMarkers));
    }
    // One legend entry for every pattern's hollow points.
    let held_out = || line("held out of the fit", Vec::new(), 7, Style::HollowMarkers);
    fit_lines.push(held_out());
    residuals.push(held_out());
    let log_y = spans_decades(fit_lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)));
    plots.xy(
        "calibrate-fit",
        "calibration.patterns[].points[].{size_bytes,value_us,held_out}; .fit.{a_us,b_us_per_kib}",
        XyChart {
            title: "Latency vs request size, with the linear fits".into(),
            x: Axis::log("request size (KiB)"),
            y: if log_y {
                Axis::log("latency (µs)")
            } else {
                Axis::linear("latency (µs)")
            },
            lines: fit_lines,
            legend: Legend::LowerRight,
        },
    );
    plots.xy(
        "calibrate-residuals",
        "calibration.patterns[].points[].{value_us,linear_us}",
        XyChart {
            title: "Residuals of the linear fits".into(),
            x: Axis::log("request size (KiB)"),
            y: Axis::linear("(measured − fitted) / fitted (%)"),
            lines: residuals,
            legend: Legend::LowerRight,
        },
    );
}

/// The emulator's lateness of the replies: its CDF, its relative CDF and its course over
/// time.
pub(super) fn lateness(plots: &mut Plots, doc: &Value, t: Option<&Timeline>) {
    let Some(l) = doc.get("lateness") else {
        return;
    };
    let mut lines = Vec::new();
    if let Some(cdf) = l.get("cdf").and_then(Value::as_array) {
        let points = cdf
            .iter()
            .filter_map(|p| Some((us(num(p, &["lateness_ns"])?), num(p, &["fraction"])?)))
            .collect();
        lines.push(line("lateness", points, 0, Style::Solid));
    } else if let Some(d) = l.get("lateness_ns") {
        let points = op_percentiles(&serde_json::json!({ "latency_ns": d }));
        lines.push(line("lateness (percentiles)", points, 0, Style::Dashed));
    }
    plots.xy(
        "lateness-cdf",
        "lateness.cdf (or lateness.lateness_ns percentiles)",
        XyChart {
            title: "Lateness of the replies: CDF".into(),
            x: Axis::log("lateness (µs, wall clock)"),
            y: Axis::linear("fraction of replies"),
            lines,
            legend: Legend::LowerRight,
        },
    );
    if let Some(cdf) = l.get("relative_cdf").and_then(Value::as_array) {
        let points = cdf
            .iter()
            .filter_map(|p| Some((num(p, &["percent"])?, num(p, &["fraction"])?)))
            .collect();
        plots.xy(
            "relative-lateness-cdf",
            "lateness.relative_cdf",
            XyChart {
                title: "Relative lateness Δt/t: CDF".into(),
                x: Axis::log("lateness over the model's latency (%)"),
                y: Axis::linear("fraction of replies"),
                lines: vec![line("Δt/t", points, 1, Style::Solid)],
                legend: Legend::LowerRight,
            },
        );
    }
    let (Some(t), Some(series)) = (t, doc.get("series")) else {
        return;
    };
    let lines: Vec<Line> = ["p50", "p99", "max", "mean"]
        .iter()
        .enumerate()
        .filter_map(|(i, k)| {
            let v = array(series, &["lateness_ns", k])?;
            Some(line(*k, t.points(&v, 1e-3), i, Style::Solid))
        })
        .collect();
    let y = value_axis("lateness (µs)", &lines);
    plots.xy(
        "lateness-over-time",
        "series.lateness_ns.{p50,p99,max,mean}",
        XyChart {
            title: "Lateness over time".into(),
            x: Axis::linear(&t.title),
            y,
            lines,
            legend: Legend::UpperRight,
        },
    );
}

/// Cosim's virtual time against real time.
pub(super) fn cosim_clock(plots: &mut Plots, doc: &Value) {
    let Some(c) = doc.get("clock_series") else {
        return;
    };
    let (Some(real), Some(virt)) = (array(c, &["real_ns"]), array(c, &["virtual_ns"])) else {
        return;
    };
    // Seconds for a run of seconds, milliseconds for a shorter one, each axis on its own.
    let unit = |values: &[Option<f64>]| {
        let last = values.iter().flatten().fold(0.0, |a: f64, b| a.max(*b));
        if last >= 2e9 {
            (1e9, "s")
        } else {
            (1e6, "ms")
        }
    };
    let ((real_scale, real_unit), (virt_scale, virt_unit)) = (unit(&real), unit(&virt));
    let points: Vec<(f64, f64)> = real
        .iter()
        .zip(&virt)
        .filter_map(|(r, v)| Some(((*r)? / real_scale, (*v)? / virt_scale)))
        .collect();
    plots.xy(
        "cosim-clock",
        "clock_series.{real_ns,virtual_ns}",
        XyChart {
            title: "Virtual time against real time".into(),
            x: Axis::linear(format!("real time ({real_unit})")),
            y: Axis::linear(format!("virtual time ({virt_unit})")),
            lines: vec![line("virtual clock", points, 0, Style::Solid)],
            legend: Legend::UpperLeft,
        },
    );
}
