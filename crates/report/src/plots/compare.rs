//! The compare view of several runs: each run one colour, on shared axes.

use super::requests::{latency_cdf_points, validation_chart, validation_side};
use super::{array, line, summary, value_axis, Plot, Plots, Timeline};
use crate::chart::{Axis, Legend, Line, Style, XyChart};
use crate::input::{Kind, Run};
use serde_json::Value;

/// The overlays of several runs: each run one colour, on shared axes.
pub(crate) fn compare_plots(runs: &[Run]) -> Vec<Plot> {
    let mut plots = Plots::new("compare");
    validations(&mut plots, runs);
    latency_cdfs(&mut plots, runs);
    series(&mut plots, runs);
    plots.list
}

/// Run `i`'s name in legends: its number, and its device's name when the document has one.
fn label(runs: &[Run], i: usize) -> String {
    let device = runs[i]
        .doc
        .get("device")
        .and_then(|d| d.get("name"))
        .and_then(Value::as_str);
    match device {
        Some(d) => format!("run {}: {d}", i + 1),
        None => format!("run {}", i + 1),
    }
}

/// Validations: each run's simulated CDF against the first one's measured CDF, as the
/// hybrid-disk thesis sets several models against one drive.
fn validations(plots: &mut Plots, runs: &[Run]) {
    let validations: Vec<usize> = (0..runs.len())
        .filter(|&i| runs[i].kind == Kind::Validate)
        .collect();
    let Some(&first) = validations.first() else {
        return;
    };
    let mut lines = vec![line(
        format!("measured (run {})", first + 1),
        validation_side(&runs[first].doc, "measured"),
        7,
        Style::Dashed,
    )];
    for &i in &validations {
        lines.push(line(
            label(runs, i),
            validation_side(&runs[i].doc, "simulated"),
            i,
            Style::Solid,
        ));
    }
    plots.xy(
        "validation-cdf",
        "simulated.cdf of each validate run, measured.cdf of the first",
        validation_chart("Response-time CDFs, simulated and measured".into(), lines),
    );
}

/// Every run's latency CDF of all requests.
fn latency_cdfs(plots: &mut Plots, runs: &[Run]) {
    let mut cdfs = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        let Some(s) = summary(run) else { continue };
        cdfs.push(line(label(runs, i), latency_cdf_points(s), i, Style::Solid));
    }
    plots.xy(
        "latency-cdf",
        "summary.latency_cdf of each run",
        XyChart {
            title: "Latency CDF, all requests".into(),
            x: Axis::log("latency (µs)"),
            y: Axis::linear("fraction of requests"),
            lines: cdfs,
            legend: Legend::LowerRight,
        },
    );
}

/// The runs' time series overlaid: p99 latency, throughput and requests in the device.
fn series(plots: &mut Plots, runs: &[Run]) {
    // Every run's time from its own start, in the unit the longest run needs.
    let longest = runs
        .iter()
        .filter_map(|r| Timeline::end_ns(r.doc.get("series")?))
        .fold(0.0, f64::max);
    let overlay = |key: &[&str], scale: f64| -> (Vec<Line>, Option<String>) {
        let mut title = None;
        let lines = runs
            .iter()
            .enumerate()
            .filter_map(|(i, run)| {
                let series = run.doc.get("series")?;
                let t = Timeline::in_unit(series, Some(longest))?;
                let v = array(series, key)?;
                title.get_or_insert(t.title.clone());
                Some(line(label(runs, i), t.points(&v, scale), i, Style::Solid))
            })
            .collect();
        (lines, title)
    };
    for (name, title, key, y_title, scale) in [
        (
            "p99-over-time",
            "p99 latency over time",
            &["ops", "all", "latency_p99_ns"][..],
            "p99 latency (µs)",
            1e-3,
        ),
        (
            "throughput-over-time",
            "Throughput over time",
            &["ops", "all", "bandwidth_bytes_per_s"][..],
            "throughput (MB/s)",
            1e-6,
        ),
        (
            "queue-depth-over-time",
            "Requests in the device over time",
            &["queue_depth", "device_mean"][..],
            "requests (time-weighted mean)",
            1.0,
        ),
    ] {
        let (lines, t_title) = overlay(key, scale);
        let Some(t_title) = t_title else { continue };
        let y = value_axis(y_title, &lines);
        plots.xy(
            name,
            &format!("series.{} of each run", key.join(".")),
            XyChart {
                title: title.into(),
                x: Axis::linear(t_title),
                y,
                lines,
                legend: Legend::UpperRight,
            },
        );
    }
}
