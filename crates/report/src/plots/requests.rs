//! The plots of a run's requests: latency CDFs (all requests, per operation, per flow), the
//! latency split into queueing and service, the time series of latency, throughput and queue
//! depth, and a validate document's simulated and measured CDFs.

use super::{array, line, num, spans_decades, value_axis, Plots, Timeline, OPS};
use crate::chart::{Axis, Bars, Legend, Line, Style, XyChart};
use crate::input::Kind;
use serde_json::Value;

/// A validate document's two response-time CDFs overlaid, simulated and measured: all requests
/// from each side's `cdf` (`validate trace`) or else through its percentiles (`validate
/// disksim`), then reads and writes apart when the document compares them (`per_op`).
pub(super) fn validation_cdfs(plots: &mut Plots, doc: &Value) {
    validation_cdf(plots, doc, "validation-cdf", "", "all requests");
    for op in ["read", "write"] {
        if let Some(group) = doc.get("per_op").and_then(|p| p.get(op)) {
            let field = format!("per_op.{op}.");
            validation_cdf(
                plots,
                group,
                &format!("validation-cdf-{op}"),
                &field,
                &format!("{op}s"),
            );
        }
    }
}

/// One group's two CDFs: `group` holds `simulated`, `measured` and `demerit_ms`, which the
/// document names with `field` before them.
fn validation_cdf(plots: &mut Plots, group: &Value, name: &str, field: &str, what: &str) {
    let lines = vec![
        line(
            "simulated",
            validation_side(group, "simulated"),
            0,
            Style::Solid,
        ),
        line(
            "measured",
            validation_side(group, "measured"),
            1,
            Style::Dashed,
        ),
    ];
    let title = match num(group, &["demerit_ms"]) {
        Some(d) => format!("Response-time CDFs, {what} (demerit {d:.3} ms)"),
        None => format!("Response-time CDFs, {what}"),
    };
    plots.xy(
        name,
        &format!("{field}simulated.cdf and {field}measured.cdf (or their percentiles)"),
        validation_chart(title, lines),
    );
}

/// One side (`simulated` or `measured`) of a validation group as CDF points in ms: its `cdf`,
/// or else its percentiles.
pub(super) fn validation_side(group: &Value, side: &str) -> Vec<(f64, f64)> {
    let Some(s) = group.get(side) else {
        return Vec::new();
    };
    match s.get("cdf").and_then(Value::as_array) {
        Some(cdf) => cdf
            .iter()
            .filter_map(|p| Some((num(p, &["latency_ms"])?, num(p, &["fraction"])?)))
            .collect(),
        None => [
            ("p10_ms", 0.1),
            ("p50_ms", 0.5),
            ("p90_ms", 0.9),
            ("p99_ms", 0.99),
            ("max_ms", 1.0),
        ]
        .iter()
        .filter_map(|(k, f)| Some((num(s, &[k])?, *f)))
        .collect(),
    }
}

/// Response-time CDFs in ms, on a log axis when they span decades.
pub(super) fn validation_chart(title: String, lines: Vec<Line>) -> XyChart {
    let xs = || lines.iter().flat_map(|l| l.points.iter().map(|p| p.0));
    let x = if xs().all(|x| x > 0.0) && spans_decades(xs()) {
        Axis::log("response time (ms)")
    } else {
        Axis::linear("response time (ms)")
    };
    XyChart {
        title,
        x,
        y: Axis::linear("fraction of requests"),
        lines,
        legend: Legend::LowerRight,
    }
}

/// Nanoseconds in microseconds.
pub(super) fn us(ns: f64) -> f64 {
    ns / 1e3
}

/// The latency CDF of all requests, with each operation's through its percentiles.
pub(super) fn latency_cdf(plots: &mut Plots, s: &Value, kind: Kind) {
    let field = if kind == Kind::Emulate {
        "model"
    } else {
        "summary"
    };
    let mut lines = Vec::new();
    if let Some(cdf) = s.get("latency_cdf").and_then(Value::as_array) {
        lines.push(line("all", cdf_points(cdf), 7, Style::Solid));
    }
    for (i, op) in OPS.iter().enumerate() {
        if num(s, &[op, "requests"]).unwrap_or(0.0) == 0.0 {
            continue;
        }
        let points = op_percentiles(s.get(*op).unwrap_or(&Value::Null));
        // Flushes that took no time have nothing a log axis can show, nor a legend entry.
        if points.iter().any(|p| p.0 > 0.0) {
            lines.push(line(
                format!("{op} (percentiles)"),
                points,
                i,
                Style::Dashed,
            ));
        }
    }
    plots.xy(
        "latency-cdf",
        &format!("{field}.latency_cdf; {field}.<op>.latency_ns percentiles"),
        XyChart {
            title: "Latency CDF".into(),
            x: Axis::log("latency (µs)"),
            y: Axis::linear("fraction of requests"),
            lines,
            legend: Legend::LowerRight,
        },
    );
}

/// Each flow's latency CDF on one pair of axes, and with `--fairness` each flow's CDF when it
/// ran alone, dashed in the same colour: the gap between the two is the flow's slowdown.
pub(super) fn flow_cdfs(plots: &mut Plots, flows: &[Value]) {
    let mut lines = Vec::new();
    for (i, flow) in flows.iter().enumerate() {
        let name = flow.get("name").and_then(Value::as_str).unwrap_or("?");
        for (field, label, style) in [
            ("summary", name.to_string(), Style::Solid),
            ("alone_summary", format!("{name} alone"), Style::Dashed),
        ] {
            let Some(s) = flow.get(field).filter(|s| s.is_object()) else {
                continue;
            };
            if num(s, &["requests"]).unwrap_or(0.0) > 0.0 {
                lines.push(line(label, latency_cdf_points(s), i, style));
            }
        }
    }
    if lines.is_empty() {
        return;
    }
    plots.xy(
        "flows-latency-cdf",
        "flows[].summary.latency_cdf; flows[].alone_summary.latency_cdf",
        XyChart {
            title: "Latency CDF per flow".into(),
            x: Axis::log("latency (µs)"),
            y: Axis::linear("fraction of requests"),
            lines,
            // Flows sharing a device can stretch any corner: a flow held up far to the right
            // runs along the bottom, where a CDF's legend usually has room.
            legend: Legend::Auto,
        },
    );
}

/// The points of a `latency_cdf` (`[{fraction, latency_ns}]`), latency in µs.
fn cdf_points(cdf: &[Value]) -> Vec<(f64, f64)> {
    cdf.iter()
        .filter_map(|p| Some((us(num(p, &["latency_ns"])?), num(p, &["fraction"])?)))
        .collect()
}

/// The latency CDF of a summary (or of one operation in it), latency in µs: its
/// `latency_cdf` when it has one, otherwise through its percentiles.
pub(crate) fn latency_cdf_points(s: &Value) -> Vec<(f64, f64)> {
    match s.get("latency_cdf").and_then(Value::as_array) {
        Some(cdf) => cdf_points(cdf),
        None => op_percentiles(s),
    }
}

/// An operation's CDF from the percentiles its summary gives: min, p50, p90, p99, p99.9, max.
pub(crate) fn op_percentiles(op: &Value) -> Vec<(f64, f64)> {
    [
        ("min", 0.0),
        ("p50", 0.5),
        ("p90", 0.9),
        ("p99", 0.99),
        ("p999", 0.999),
        ("max", 1.0),
    ]
    .iter()
    .filter_map(|(k, f)| Some((us(num(op, &["latency_ns", k])?), *f)))
    .collect()
}

/// Each operation's mean latency as bars of its two parts, queueing and service.
pub(super) fn latency_split(plots: &mut Plots, s: &Value, kind: Kind) {
    let field = if kind == Kind::Emulate {
        "model"
    } else {
        "summary"
    };
    let ops: Vec<&str> = OPS
        .iter()
        .copied()
        .filter(|op| num(s, &[op, "requests"]).unwrap_or(0.0) > 0.0)
        .collect();
    let part = |what: &str| -> Vec<f64> {
        ops.iter()
            .map(|op| us(num(s, &[op, what, "mean"]).unwrap_or(0.0)))
            .collect()
    };
    let series = vec![
        ("queueing".to_string(), part("queueing_ns")),
        ("service".to_string(), part("service_ns")),
    ];
    // A write buffer answers in a microsecond after a millisecond's wait: both must show.
    let all = series.iter().flat_map(|s| s.1.iter().copied());
    let y = if spans_decades(all) {
        Axis::log("mean time (µs)")
    } else {
        Axis::linear("mean time (µs)")
    };
    plots.bars(
        "service-split",
        &format!("{field}.<op>.{{queueing_ns,service_ns}}.mean"),
        Bars {
            title: "Mean latency: queueing and service".into(),
            x_title: "operation".into(),
            y,
            categories: ops.iter().map(|s| s.to_string()).collect(),
            series,
            ranges: Vec::new(),
        },
    );
}

/// The run's time series: latency percentiles, throughput, requests per second and queue
/// depth over time.
pub(super) fn time_series(plots: &mut Plots, series: &Value, t: &Timeline) {
    let mut ops: Vec<&str> = ["all", "read", "write", "trim", "flush"]
        .into_iter()
        .filter(|op| series.get("ops").and_then(|o| o.get(op)).is_some())
        .collect();
    // With one operation only, its line is the line of all requests and would hide it.
    if ops.len() == 2 {
        ops.truncate(1);
    }
    let mut lines = Vec::new();
    for (i, (key, name)) in [
        ("latency_p50_ns", "p50"),
        ("latency_p99_ns", "p99"),
        ("latency_p999_ns", "p99.9"),
        ("latency_mean_ns", "mean"),
    ]
    .iter()
    .enumerate()
    {
        if let Some(v) = array(series, &["ops", "all", key]) {
            lines.push(line(*name, t.points(&v, 1e-3), i, Style::Solid));
        }
    }
    let y = value_axis("latency (µs)", &lines);
    plots.xy(
        "latency-over-time",
        "series.ops.all.latency_{p50,p99,p999,mean}_ns",
        XyChart {
            title: "Latency percentiles over time (all requests)".into(),
            x: Axis::linear(&t.title),
            y,
            lines,
            legend: Legend::UpperRight,
        },
    );
    let per_op = |key: &str, scale: f64| -> Vec<Line> {
        ops.iter()
            .filter_map(|op| {
                let v = array(series, &["ops", op, key])?;
                // Each operation keeps its colour of the latency CDF; all requests are black.
                let colour = OPS.iter().position(|o| o == op).unwrap_or(7);
                Some(line(*op, t.points(&v, scale), colour, Style::Solid))
            })
            .collect()
    };
    let lines = per_op("bandwidth_bytes_per_s", 1e-6);
    let y = value_axis("throughput (MB/s)", &lines);
    plots.xy(
        "throughput-over-time",
        "series.ops.<op>.bandwidth_bytes_per_s",
        XyChart {
            title: "Throughput over time".into(),
            x: Axis::linear(&t.title),
            y,
            lines,
            legend: Legend::UpperRight,
        },
    );
    let lines = per_op("iops", 1.0);
    let y = value_axis("requests/s", &lines);
    plots.xy(
        "iops-over-time",
        "series.ops.<op>.iops",
        XyChart {
            title: "Requests per second over time".into(),
            x: Axis::linear(&t.title),
            y,
            lines,
            legend: Legend::UpperRight,
        },
    );
    let lines: Vec<Line> = [
        ("host_mean", "host (waiting)"),
        ("device_mean", "in the device"),
    ]
    .iter()
    .enumerate()
    .filter_map(|(i, (key, name))| {
        let v = array(series, &["queue_depth", key])?;
        Some(line(*name, t.points(&v, 1.0), i, Style::Solid))
    })
    .collect();
    plots.xy(
        "queue-depth-over-time",
        "series.queue_depth.{host_mean,device_mean}",
        XyChart {
            title: "Queue depth over time".into(),
            x: Axis::linear(&t.title),
            y: Axis::linear("requests (time-weighted mean)"),
            lines,
            legend: Legend::UpperRight,
        },
    );
}
