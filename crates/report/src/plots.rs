//! Which plots a document gets, and from which of its fields (docs/report.md lists them).
//! A plot is drawn only when the document holds its data, so a run without a time series, a
//! disk without flash or a black-box model simply has fewer plots.

use crate::chart::{self, Axis, Bars, Heat, Histogram, Legend, Line, Style, XyChart};
use crate::input::{Kind, Run};
use serde_json::Value;

/// One rendered plot.
#[derive(Clone, Debug)]
pub struct Plot {
    /// Unique in the page: `run<N>-<name>` for one run's plots, `compare-<name>` for the
    /// overlays of several runs.
    pub id: String,
    /// The plot's title, as drawn.
    pub title: String,
    /// Where its data comes from, for the caption.
    pub source: String,
    /// The plot as a standalone SVG document.
    pub svg: String,
}

/// The operations a summary reports, in the order plots show them.
const OPS: [&str; 4] = ["read", "write", "trim", "flush"];

/// The causes of flash traffic the SSD's counters split by.
const CAUSES: [(&str, &str); 5] = [
    ("host", "host"),
    ("gc", "GC"),
    ("merge", "merge"),
    ("mapping", "mapping"),
    ("wear_level", "wear levelling"),
];

/// The value at `path` as a number.
fn num(v: &Value, path: &[&str]) -> Option<f64> {
    path.iter().try_fold(v, |v, k| v.get(k))?.as_f64()
}

/// The array at `path` as numbers, `None` where an element is null.
fn array(v: &Value, path: &[&str]) -> Option<Vec<Option<f64>>> {
    let a = path.iter().try_fold(v, |v, k| v.get(k))?.as_array()?;
    Some(a.iter().map(Value::as_f64).collect())
}

/// The object holding a run's request figures: `summary`, or an emulator's `model`.
pub(crate) fn summary(run: &Run) -> Option<&Value> {
    match run.kind {
        Kind::Emulate => run.doc.get("model"),
        _ => run.doc.get("summary"),
    }
    .filter(|s| s.is_object())
}

fn counters(run: &Run) -> Option<&serde_json::Map<String, Value>> {
    run.doc.get("device")?.get("counters")?.as_object()
}

/// The time axis of a document's `series`: each window's end, in seconds or milliseconds.
pub(crate) struct Timeline {
    /// Each window's end, in the axis' unit.
    pub ends: Vec<f64>,
    /// Each window's length in seconds (the last may be partial).
    pub lengths_s: Vec<f64>,
    /// Nanoseconds per axis unit.
    unit_ns: f64,
    /// The axis title.
    pub title: String,
}

impl Timeline {
    pub(crate) fn of(series: &Value) -> Option<Timeline> {
        Timeline::in_unit(series, None)
    }

    /// The run's end in nanoseconds, for choosing a unit shared by several runs.
    fn end_ns(series: &Value) -> Option<f64> {
        let window = num(series, &["window_ns"])?;
        let windows = num(series, &["windows"])?;
        Some(num(series, &["end_ns"]).unwrap_or(window * windows))
    }

    /// The time axis in the unit of a run ending at `end_ns` (its own end when `None`), so
    /// that overlaid runs share one axis.
    fn in_unit(series: &Value, shared_end_ns: Option<f64>) -> Option<Timeline> {
        let window = num(series, &["window_ns"])?;
        let windows = num(series, &["windows"])? as usize;
        if window <= 0.0 || windows == 0 {
            return None;
        }
        let end = num(series, &["end_ns"]).unwrap_or(window * windows as f64);
        let clock = series
            .get("clock")
            .and_then(Value::as_str)
            .unwrap_or("simulated");
        let clock = if clock == "wall" {
            "wall-clock"
        } else {
            "simulated"
        };
        let (unit_ns, unit) = if shared_end_ns.unwrap_or(end) >= 2e9 {
            (1e9, "s")
        } else {
            (1e6, "ms")
        };
        let mut ends = Vec::with_capacity(windows);
        let mut lengths_s = Vec::with_capacity(windows);
        for i in 0..windows {
            let start = window * i as f64;
            let stop = (window * (i + 1) as f64).min(end.max(start + 1.0));
            ends.push(stop / unit_ns);
            lengths_s.push((stop - start) / 1e9);
        }
        Some(Timeline {
            ends,
            lengths_s,
            unit_ns,
            title: format!("{clock} time ({unit})"),
        })
    }

    /// Points of `values` over time, leaving out the windows without a value.
    fn points(&self, values: &[Option<f64>], scale: f64) -> Vec<(f64, f64)> {
        self.ends
            .iter()
            .zip(values)
            .filter_map(|(t, v)| v.map(|v| (*t, v * scale)))
            .collect()
    }

    /// The per-second rate of a cumulative counter: the difference of neighbouring windows
    /// over the window's length.
    fn rate(&self, cumulative: &[Option<f64>]) -> Vec<Option<f64>> {
        let mut last = 0.0;
        cumulative
            .iter()
            .zip(&self.lengths_s)
            .map(|(v, len)| {
                let v = (*v)?;
                let r = (v - last) / len;
                last = v;
                Some(r)
            })
            .collect()
    }

    /// The per-window busy fraction from a utilisation since the start of the run: a fraction
    /// of `elapsed_ns` in each window when the model says what its fractions are over (the
    /// SSD's `utilisation_elapsed_ns`, its last host completion), of the window's end otherwise.
    pub(crate) fn window_fraction(
        &self,
        since_start: &[Option<f64>],
        elapsed_ns: Option<&[Option<f64>]>,
    ) -> Vec<Option<f64>> {
        let mut busy_before = 0.0;
        since_start
            .iter()
            .enumerate()
            .zip(self.ends.iter().zip(&self.lengths_s))
            .map(|((i, u), (end, len))| {
                let u = (*u)?;
                let over_s = match elapsed_ns {
                    Some(e) => e.get(i).copied().flatten()? / 1e9,
                    None => end * self.unit_ns / 1e9,
                };
                let busy = u * over_s;
                let f = ((busy - busy_before) / len).clamp(0.0, 1.0);
                busy_before = busy;
                Some(f)
            })
            .collect()
    }
}

/// Whether values span enough decades to want a log axis.
fn spans_decades(values: impl Iterator<Item = f64>) -> bool {
    let (lo, hi) = values
        .filter(|v| *v > 0.0 && v.is_finite())
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    lo.is_finite() && hi / lo >= 100.0
}

fn value_axis(title: &str, lines: &[Line]) -> Axis {
    let values = lines.iter().flat_map(|l| l.points.iter().map(|p| p.1));
    if spans_decades(values) {
        Axis::log(title)
    } else {
        Axis::linear(title)
    }
}

fn line(name: impl Into<String>, points: Vec<(f64, f64)>, colour: usize, style: Style) -> Line {
    Line {
        name: name.into(),
        points,
        colour,
        style,
        ranges: Vec::new(),
    }
}

/// Collects the plots of a page, giving each its id.
/// What [`Plots::counter_bars`] draws.
struct CounterBars<'l> {
    title: String,
    x_title: &'static str,
    y: Axis,
    series: &'static str,
    per_unit: f64,
    bars: Vec<(String, &'l str)>,
}

pub(crate) struct Plots {
    pub list: Vec<Plot>,
    prefix: String,
}

impl Plots {
    pub fn new(prefix: impl Into<String>) -> Plots {
        Plots {
            list: Vec::new(),
            prefix: prefix.into(),
        }
    }

    fn push(&mut self, name: &str, title: &str, source: &str, svg: String) {
        self.list.push(Plot {
            id: format!("{}-{name}", self.prefix),
            title: title.to_string(),
            source: source.to_string(),
            svg,
        });
    }

    fn xy(&mut self, name: &str, source: &str, chart: XyChart) {
        if chart.lines.iter().all(|l| l.points.is_empty()) {
            return;
        }
        let svg = chart::xy(&chart);
        self.push(name, &chart.title, source, svg);
    }

    fn bars(&mut self, name: &str, source: &str, chart: Bars) {
        if chart.series.iter().all(|s| s.1.iter().all(|v| *v == 0.0)) {
            return;
        }
        let svg = chart::bars(&chart);
        self.push(name, &chart.title, source, svg);
    }

    /// A bar for each of `c.bars` (a counter's full name and its category label), one
    /// series named `c.series`, each value divided by `c.per_unit`.
    fn counter_bars(&mut self, name: &str, source: &str, dev: &Device, c: CounterBars) {
        self.bars(
            name,
            source,
            Bars {
                title: c.title,
                x_title: c.x_title.into(),
                y: c.y,
                categories: c.bars.iter().map(|b| b.1.to_string()).collect(),
                series: vec![(
                    c.series.into(),
                    c.bars
                        .iter()
                        .map(|(k, _)| dev.counter(k) / c.per_unit)
                        .collect(),
                )],
                ranges: Vec::new(),
            },
        );
    }
}

/// A unit's name for titles: the device itself or one of its children.
fn unit_title(prefix: &str) -> String {
    let p = prefix.trim_end_matches('_');
    if p.is_empty() {
        String::new()
    } else {
        format!(" ({p})")
    }
}

/// The prefixes under which a device's counters hold a model of one family, found by a counter
/// only that family has: `""` for the device itself, `flash_` in a hybrid, `child0_ssd_` in an
/// array.
fn prefixes(counters: &serde_json::Map<String, Value>, marker: &str) -> Vec<String> {
    counters
        .keys()
        .filter_map(|k| k.strip_suffix(marker).map(str::to_string))
        .collect()
}

/// Every plot of one run.
pub(crate) fn run_plots(run: &Run, index: usize) -> Vec<Plot> {
    let mut plots = Plots::new(format!("run{}", index + 1));
    if run.kind == Kind::Calibrate {
        calibrate(&mut plots, &run.doc);
        return plots.list;
    }
    if run.kind == Kind::Validate {
        validation_cdfs(&mut plots, &run.doc);
        return plots.list;
    }
    if let Some(s) = summary(run) {
        latency_cdf(&mut plots, s, run.kind);
        latency_split(&mut plots, s, run.kind);
    }
    if let Some(flows) = run.doc.get("flows").and_then(Value::as_array) {
        flow_cdfs(&mut plots, flows);
    }
    let series = run.doc.get("series");
    let timeline = series.and_then(Timeline::of);
    if let (Some(series), Some(t)) = (series, &timeline) {
        time_series(&mut plots, series, t);
    }
    if run.kind == Kind::Emulate {
        lateness(&mut plots, &run.doc, timeline.as_ref());
    }
    if run.kind == Kind::Cosim {
        cosim_clock(&mut plots, &run.doc);
    }
    if let Some(c) = counters(run) {
        let device_series = series.and_then(|s| s.get("device"));
        let dev = Device {
            counters: c,
            series: device_series.zip(timeline.as_ref()),
        };
        for prefix in prefixes(c, "flash_programs_host") {
            ssd(&mut plots, &dev, &prefix);
        }
        for prefix in prefixes(c, "mean_seek_cylinders") {
            hdd(&mut plots, &dev, &prefix);
        }
        for prefix in prefixes(c, "host_writes_flash") {
            hybrid(&mut plots, &dev, &prefix);
        }
    }
    if let Some(wear) = run.doc.get("device").and_then(|d| d.get("block_wear")) {
        block_wear(&mut plots, wear);
    }
    plots.list
}

/// A validate document's two response-time CDFs overlaid, simulated and measured: all requests
/// from each side's `cdf` (`validate trace`) or else through its percentiles (`validate
/// disksim`), then reads and writes apart when the document compares them (`per_op`).
fn validation_cdfs(plots: &mut Plots, doc: &Value) {
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
fn validation_side(group: &Value, side: &str) -> Vec<(f64, f64)> {
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
fn validation_chart(title: String, lines: Vec<Line>) -> XyChart {
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

fn us(ns: f64) -> f64 {
    ns / 1e3
}

fn latency_cdf(plots: &mut Plots, s: &Value, kind: Kind) {
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
fn flow_cdfs(plots: &mut Plots, flows: &[Value]) {
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

fn latency_split(plots: &mut Plots, s: &Value, kind: Kind) {
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

fn time_series(plots: &mut Plots, series: &Value, t: &Timeline) {
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

/// A device's counters at the end, and their series when the document has one.
struct Device<'a> {
    counters: &'a serde_json::Map<String, Value>,
    series: Option<(&'a Value, &'a Timeline)>,
}

impl Device<'_> {
    fn counter(&self, name: &str) -> f64 {
        self.counters
            .get(name)
            .and_then(Value::as_f64)
            .unwrap_or(0.0)
    }
    fn series(&self, name: &str) -> Option<(Vec<Option<f64>>, &Timeline)> {
        let (s, t) = self.series?;
        Some((array(s, &[name])?, t))
    }
    /// Counters named `<prefix><family>_<n><suffix>`, by n.
    fn numbered(&self, prefix: &str, family: &str, suffix: &str) -> Vec<(usize, String)> {
        let head = format!("{prefix}{family}_");
        let mut found: Vec<(usize, String)> = self
            .counters
            .keys()
            .filter_map(|k| {
                let n = k.strip_prefix(&head)?.strip_suffix(suffix)?.parse().ok()?;
                Some((n, k.clone()))
            })
            .collect();
        found.sort();
        found
    }
}

fn ssd(plots: &mut Plots, dev: &Device, p: &str) {
    let unit = unit_title(p);
    let tag = p.trim_end_matches('_').replace('_', "-");
    let name = |n: &str| {
        if tag.is_empty() {
            n.to_string()
        } else {
            format!("{n}-{tag}")
        }
    };
    // WAF and GC traffic over time.
    if let Some((waf, t)) = dev.series(&format!("{p}write_amplification")) {
        plots.xy(
            &name("waf-over-time"),
            &format!("series.device.{p}write_amplification"),
            XyChart {
                title: format!("Write amplification over time{unit}"),
                x: Axis::linear(&t.title),
                y: Axis::linear("WAF so far (flash programs / host page writes)"),
                lines: vec![line("WAF", t.points(&waf, 1.0), 0, Style::Solid)],
                legend: Legend::LowerRight,
            },
        );
        let lines: Vec<Line> = CAUSES
            .iter()
            .enumerate()
            .filter_map(|(i, (cause, label))| {
                let (v, t) = dev.series(&format!("{p}flash_programs_{cause}"))?;
                let rate = t.rate(&v);
                let points = t.points(&rate, 1.0);
                points
                    .iter()
                    .any(|q| q.1 > 0.0)
                    .then(|| line(*label, points, i, Style::Solid))
            })
            .collect();
        let y = value_axis("page programs/s", &lines);
        plots.xy(
            &name("gc-traffic-over-time"),
            &format!("series.device.{p}flash_programs_<cause>, per window"),
            XyChart {
                title: format!("Flash programs by cause over time{unit}"),
                x: Axis::linear(&t.title),
                y,
                lines,
                legend: Legend::UpperLeft,
            },
        );
    }
    // Traffic by cause.
    let by = |op: &str| -> Vec<f64> {
        CAUSES
            .iter()
            .map(|(cause, _)| dev.counter(&format!("{p}flash_{op}_{cause}")))
            .collect()
    };
    let series = vec![
        ("reads".to_string(), by("reads")),
        ("programs".to_string(), by("programs")),
        ("erases".to_string(), by("erases")),
    ];
    let all: Vec<f64> = series.iter().flat_map(|s| s.1.clone()).collect();
    let y_title = "flash operations";
    plots.bars(
        &name("traffic-by-cause"),
        &format!("device.counters.{p}flash_{{reads,programs,erases}}_<cause>"),
        Bars {
            title: format!("Flash traffic by cause{unit}"),
            x_title: "cause".into(),
            y: if spans_decades(all.into_iter()) {
                Axis::log(y_title)
            } else {
                Axis::linear(y_title)
            },
            categories: CAUSES.iter().map(|c| c.1.to_string()).collect(),
            series,
            ranges: Vec::new(),
        },
    );
    // Energy by cause.
    let mut causes: Vec<(&str, &str)> = CAUSES.to_vec();
    causes.push(("idle", "idle"));
    plots.counter_bars(
        &name("energy-by-cause"),
        &format!("device.counters.{p}energy_<cause>_uj"),
        dev,
        CounterBars {
            title: format!("Flash energy by cause{unit}"),
            x_title: "cause",
            y: Axis::linear("energy (mJ)"),
            series: "energy",
            per_unit: 1e3,
            bars: causes
                .iter()
                .map(|(c, l)| (format!("{p}energy_{c}_uj"), *l))
                .collect(),
        },
    );
    for (family, label) in [("die", "Die"), ("channel", "Channel")] {
        utilisation(
            plots,
            dev,
            p,
            family,
            label,
            &name(&format!("{family}-utilisation")),
        );
    }
}

/// A family of utilisation counters (dies, channels): a heat map over time when there are
/// many, lines when few, bars of the whole run without a series.
fn utilisation(plots: &mut Plots, dev: &Device, p: &str, family: &str, label: &str, id: &str) {
    let units = dev.numbered(p, family, "_utilisation");
    if units.is_empty() {
        return;
    }
    let unit = unit_title(p);
    let title = format!("{label} utilisation{unit}");
    let source = format!("series.device.{p}{family}_<n>_utilisation");
    let elapsed = dev
        .series(&format!("{p}utilisation_elapsed_ns"))
        .map(|s| s.0);
    let per_window: Option<Vec<Vec<Option<f64>>>> = units
        .iter()
        .map(|(_, k)| {
            dev.series(k)
                .map(|(v, t)| t.window_fraction(&v, elapsed.as_deref()))
        })
        .collect();
    let t = dev.series.map(|s| s.1);
    match (per_window, t) {
        (Some(rows), Some(t)) if units.len() > 8 => {
            // At most about 100 columns, averaging neighbouring windows, to keep the page light.
            let windows = t.ends.len();
            let group = windows.div_ceil(100).max(1);
            let mut edges = vec![0.0];
            let mut cells = vec![Vec::new(); rows.len()];
            for start in (0..windows).step_by(group) {
                let stop = (start + group).min(windows);
                edges.push(t.ends[stop - 1]);
                for (r, row) in rows.iter().enumerate() {
                    let vals: Vec<f64> = row[start..stop].iter().filter_map(|v| *v).collect();
                    cells[r].push(
                        (!vals.is_empty()).then(|| vals.iter().sum::<f64>() / vals.len() as f64),
                    );
                }
            }
            let svg = chart::heat(&Heat {
                title: title.clone(),
                x_title: t.title.clone(),
                y_title: format!("{family} number"),
                x_edges: edges,
                rows: cells,
                value_title: "busy".into(),
            });
            plots.push(id, &title, &source, svg);
        }
        (Some(rows), Some(t)) => {
            let lines = units
                .iter()
                .zip(&rows)
                .enumerate()
                .map(|(i, ((n, _), row))| {
                    line(format!("{family} {n}"), t.points(row, 1.0), i, Style::Solid)
                })
                .collect();
            plots.xy(
                id,
                &source,
                XyChart {
                    title,
                    x: Axis::linear(&t.title),
                    y: Axis::linear("busy fraction in the window"),
                    lines,
                    legend: Legend::UpperRight,
                },
            );
        }
        _ => plots.bars(
            id,
            &format!("device.counters.{p}{family}_<n>_utilisation"),
            Bars {
                title: format!("{title}, whole run"),
                x_title: format!("{family} number"),
                y: Axis::linear("busy fraction of the run"),
                categories: units.iter().map(|(n, _)| n.to_string()).collect(),
                series: vec![(
                    "utilisation".into(),
                    units.iter().map(|(_, k)| dev.counter(k)).collect(),
                )],
                ranges: Vec::new(),
            },
        ),
    }
}

fn hdd(plots: &mut Plots, dev: &Device, p: &str) {
    let unit = unit_title(p);
    let tag = p.trim_end_matches('_').replace('_', "-");
    let name = |n: &str| {
        if tag.is_empty() {
            n.to_string()
        } else {
            format!("{n}-{tag}")
        }
    };
    let outcomes = [
        ("cache_read_hits", "hit"),
        ("cache_read_partial_hits", "partial hit"),
        ("read_ahead_hits", "read-ahead hit"),
        ("cache_read_misses", "miss"),
    ];
    plots.counter_bars(
        &name("hdd-cache"),
        &format!("device.counters.{p}{{cache_read_hits,cache_read_partial_hits,read_ahead_hits,cache_read_misses}}"),
        dev,
        CounterBars {
            title: format!("Disk cache: reads by outcome{unit}"),
            x_title: "outcome",
            y: Axis::linear("reads"),
            series: "reads",
            per_unit: 1.0,
            bars: outcomes.iter().map(|(k, l)| (format!("{p}{k}"), *l)).collect(),
        },
    );
    if let Some((hits, t)) = dev.series(&format!("{p}cache_read_hits")) {
        let rate = |k: &str| dev.series(&format!("{p}{k}")).map(|(v, t)| t.rate(&v));
        let (h, partial, miss) = (
            t.rate(&hits),
            rate("cache_read_partial_hits").unwrap_or_default(),
            rate("cache_read_misses").unwrap_or_default(),
        );
        let ratio: Vec<Option<f64>> = (0..h.len())
            .map(|i| {
                let hit = h[i]?;
                let total = hit
                    + partial.get(i).copied().flatten().unwrap_or(0.0)
                    + miss.get(i).copied().flatten().unwrap_or(0.0);
                (total > 0.0).then(|| hit / total)
            })
            .collect();
        plots.xy(
            &name("hdd-cache-over-time"),
            &format!("series.device.{p}cache_read_{{hits,partial_hits,misses}}, per window"),
            XyChart {
                title: format!("Disk cache hit rate over time{unit}"),
                x: Axis::linear(&t.title),
                y: Axis::linear("read hits / reads in the window"),
                lines: vec![line("hit rate", t.points(&ratio, 1.0), 0, Style::Solid)],
                legend: Legend::UpperRight,
            },
        );
    }
    if let Some((seek, t)) = dev.series(&format!("{p}mean_seek_cylinders")) {
        plots.xy(
            &name("hdd-seek-over-time"),
            &format!("series.device.{p}mean_seek_cylinders"),
            XyChart {
                title: format!("Mean seek distance so far{unit}"),
                x: Axis::linear(&t.title),
                y: Axis::linear("mean seek distance (cylinders)"),
                lines: vec![line("mean seek", t.points(&seek, 1.0), 2, Style::Solid)],
                legend: Legend::UpperRight,
            },
        );
    }
    // The seek-distance histogram's buckets are named by their bounds
    // (`seek_cylinders_hist_4_7`, `..._524288_up`); the JSON sorts them as text.
    let head = format!("{p}seek_cylinders_hist_");
    let mut buckets: Vec<(u64, String, f64)> = dev
        .counters
        .iter()
        .filter_map(|(k, v)| {
            let bounds = k.strip_prefix(&head)?;
            let low: u64 = bounds.split('_').next()?.parse().ok()?;
            // Each bucket by its lower bound, short enough for twenty of them side by side.
            let label = if low >= 1024 {
                format!("{}k", low / 1024)
            } else {
                low.to_string()
            };
            let label = if bounds.ends_with("_up") {
                format!("{label}+")
            } else {
                label
            };
            Some((low, label, v.as_f64()?))
        })
        .collect();
    buckets.sort_by_key(|b| b.0);
    if !buckets.is_empty() {
        plots.bars(
            &name("hdd-seek-distance"),
            &format!("device.counters.{p}seek_cylinders_hist_*"),
            Bars {
                title: format!("Seek distances{unit}"),
                x_title: "distance (cylinders, each bucket from its lower bound; k = 1024)".into(),
                y: Axis::linear("seeks"),
                categories: buckets.iter().map(|b| b.1.clone()).collect(),
                series: vec![("seeks".into(), buckets.iter().map(|b| b.2).collect())],
                ranges: Vec::new(),
            },
        );
    }
    let media = [
        ("seek_ns", "seek"),
        ("rotation_ns", "rotation"),
        ("transfer_ns", "transfer"),
    ];
    if media
        .iter()
        .any(|(k, _)| dev.counters.contains_key(&format!("{p}{k}")))
    {
        plots.counter_bars(
            &name("hdd-service-split"),
            &format!("device.counters.{p}{{seek_ns,rotation_ns,transfer_ns}}"),
            dev,
            CounterBars {
                title: format!("Disk media time: seek, rotation, transfer{unit}"),
                x_title: "part of the media time",
                y: Axis::linear("time (s)"),
                series: "time",
                per_unit: 1e9,
                bars: media.iter().map(|(k, l)| (format!("{p}{k}"), *l)).collect(),
            },
        );
    }
    let states = [
        ("busy_ns", "busy"),
        ("idle_ns", "idle"),
        ("standby_ns", "standby"),
    ];
    plots.counter_bars(
        &name("hdd-time-split"),
        &format!("device.counters.{p}{{busy_ns,idle_ns,standby_ns}}"),
        dev,
        CounterBars {
            title: format!("Disk time by state{unit}"),
            x_title: "state",
            y: Axis::linear("time (s)"),
            series: "time",
            per_unit: 1e9,
            bars: states
                .iter()
                .map(|(k, l)| (format!("{p}{k}"), *l))
                .collect(),
        },
    );
}

fn hybrid(plots: &mut Plots, dev: &Device, p: &str) {
    let unit = unit_title(p);
    let routes = [
        ("flash", "to flash"),
        ("disk", "to disk"),
        ("split", "split"),
    ];
    plots.bars(
        "hybrid-route-split",
        &format!("device.counters.{p}host_{{reads,writes}}_{{flash,disk,split}}"),
        Bars {
            title: format!("Hybrid: where host requests went{unit}"),
            x_title: "operation".into(),
            y: Axis::linear("requests"),
            categories: vec!["reads".into(), "writes".into()],
            series: routes
                .iter()
                .map(|(r, label)| {
                    (
                        label.to_string(),
                        vec![
                            dev.counter(&format!("{p}host_reads_{r}")),
                            dev.counter(&format!("{p}host_writes_{r}")),
                        ],
                    )
                })
                .collect(),
            ranges: Vec::new(),
        },
    );
    let triggers = [
        ("on_demand", "on demand"),
        ("space", "space"),
        ("low_watermark", "low watermark"),
        ("idle", "idle"),
    ];
    let over_time: Vec<Line> = triggers
        .iter()
        .enumerate()
        .filter_map(|(i, (k, label))| {
            let (v, t) = dev.series(&format!("{p}flush_{k}_bytes"))?;
            Some(line(*label, t.points(&t.rate(&v), 1e-6), i, Style::Solid))
        })
        .collect();
    if let (false, Some((_, t))) = (over_time.is_empty(), dev.series) {
        if over_time.iter().any(|l| l.points.iter().any(|q| q.1 > 0.0)) {
            plots.xy(
                "hybrid-flush",
                &format!("series.device.{p}flush_<trigger>_bytes, per window"),
                XyChart {
                    title: format!("Hybrid: flushing to disk over time{unit}"),
                    x: Axis::linear(&t.title),
                    y: Axis::linear("flushed (MB/s)"),
                    lines: over_time,
                    legend: Legend::UpperRight,
                },
            );
            return;
        }
    }
    plots.counter_bars(
        "hybrid-flush",
        &format!("device.counters.{p}flush_<trigger>_bytes"),
        dev,
        CounterBars {
            title: format!("Hybrid: bytes flushed to disk by trigger{unit}"),
            x_title: "trigger",
            y: Axis::linear("flushed (MiB)"),
            series: "flushed",
            per_unit: 1048576.0,
            bars: triggers
                .iter()
                .map(|(k, l)| (format!("{p}flush_{k}_bytes"), *l))
                .collect(),
        },
    );
}

/// One flash unit's wear from `device.block_wear[]`: its name (empty for the device itself)
/// and every block's erase count, least erased first.
pub(crate) struct BlockWear {
    pub unit: String,
    pub counts: Vec<f64>,
}

impl BlockWear {
    /// Every unit of a `device.block_wear` array that has erase counts to draw.
    pub(crate) fn of(wear: &Value) -> Vec<BlockWear> {
        let Some(arrays) = wear.as_array() else {
            return Vec::new();
        };
        arrays
            .iter()
            .filter_map(|w| {
                let counts = w.get("erase_counts_per_block")?.as_array()?;
                // Erase counts are u32 in every document storsim writes; anything else is
                // not drawn.
                let mut counts: Vec<f64> = counts
                    .iter()
                    .filter_map(Value::as_u64)
                    .filter(|&c| c <= u64::from(u32::MAX))
                    .map(|c| c as f64)
                    .collect();
                if counts.is_empty() {
                    return None;
                }
                counts.sort_by(f64::total_cmp);
                let unit = w.get("unit").and_then(Value::as_str).unwrap_or("");
                Some(BlockWear {
                    unit: unit.to_string(),
                    counts,
                })
            })
            .collect()
    }

    /// The unit's part of a plot id: `-<unit>` with dots as dashes, nothing for the device.
    pub(crate) fn tag(&self) -> String {
        if self.unit.is_empty() {
            String::new()
        } else {
            format!("-{}", self.unit.replace('.', "-"))
        }
    }

    /// The unit's part of a plot title: ` (<unit>)`, nothing for the device.
    pub(crate) fn title_unit(&self) -> String {
        if self.unit.is_empty() {
            String::new()
        } else {
            format!(" ({})", self.unit)
        }
    }

    /// The least and greatest erase count.
    pub(crate) fn span(&self) -> (f64, f64) {
        (self.counts[0], self.counts[self.counts.len() - 1])
    }

    /// The histogram of the erase counts, titled `title`, over `span` (the unit's own
    /// [`BlockWear::span`], or one holding it that histograms to be compared share): one
    /// bin per erase count when few, otherwise 50 equal bins.
    pub(crate) fn histogram(&self, title: String, span: (f64, f64)) -> Histogram {
        let counts = &self.counts;
        let (lo, hi) = span;
        // Bins centred on the counts they hold, so that a bar stands over its count.
        let width = if hi - lo < 60.0 {
            1.0
        } else {
            ((hi - lo + 1.0) / 50.0).ceil()
        };
        let bins_n = ((hi - lo) / width).floor() as usize + 1;
        let first = lo - width / 2.0;
        let mut bins: Vec<(f64, f64, f64)> = (0..bins_n)
            .map(|i| {
                (
                    first + i as f64 * width,
                    first + (i + 1) as f64 * width,
                    0.0,
                )
            })
            .collect();
        for c in counts {
            let i = (((c - lo) / width).floor() as usize).min(bins_n - 1);
            bins[i].2 += 1.0;
        }
        Histogram {
            title,
            x_title: "erases of the block".into(),
            y_title: "blocks".into(),
            bins,
            colour: 0,
        }
    }
}

fn block_wear(plots: &mut Plots, wear: &Value) {
    for w in BlockWear::of(wear) {
        let (tag, title_unit) = (w.tag(), w.title_unit());
        let title = format!("Erase counts per block{title_unit}");
        let svg = chart::histogram(&w.histogram(title.clone(), w.span()));
        plots.push(
            &format!("erase-histogram{tag}"),
            &title,
            "device.block_wear[].erase_counts_per_block",
            svg,
        );
        // The wear spread: blocks sorted by erase count, at most 400 points.
        let counts = &w.counts;
        let n = counts.len();
        let hi = counts[n - 1];
        let step = n.div_ceil(400).max(1);
        let mut points: Vec<(f64, f64)> = (0..n)
            .step_by(step)
            .map(|i| (100.0 * i as f64 / n as f64, counts[i]))
            .collect();
        points.push((100.0, hi));
        let mean = counts.iter().sum::<f64>() / n as f64;
        plots.xy(
            &format!("wear-spread{tag}"),
            "device.block_wear[].erase_counts_per_block, sorted",
            XyChart {
                title: format!("Wear spread: blocks by erase count{title_unit}"),
                x: Axis::linear("blocks, least erased first (%)"),
                y: Axis::linear("erases"),
                lines: vec![
                    line("erase count", points, 0, Style::Solid),
                    line("mean", vec![(0.0, mean), (100.0, mean)], 3, Style::Dashed),
                ],
                legend: Legend::UpperLeft,
            },
        );
    }
}

fn calibrate(plots: &mut Plots, doc: &Value) {
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

fn lateness(plots: &mut Plots, doc: &Value, t: Option<&Timeline>) {
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

fn cosim_clock(plots: &mut Plots, doc: &Value) {
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

/// The overlays of several runs: each run one colour, on shared axes.
pub(crate) fn compare_plots(runs: &[Run]) -> Vec<Plot> {
    let mut plots = Plots::new("compare");
    let label = |i: usize| {
        let device = runs[i]
            .doc
            .get("device")
            .and_then(|d| d.get("name"))
            .and_then(Value::as_str);
        match device {
            Some(d) => format!("run {}: {d}", i + 1),
            None => format!("run {}", i + 1),
        }
    };
    // Validations: each run's simulated CDF against the first one's measured CDF, as the
    // hybrid-disk thesis sets several models against one drive.
    let validations: Vec<usize> = (0..runs.len())
        .filter(|&i| runs[i].kind == Kind::Validate)
        .collect();
    if let Some(&first) = validations.first() {
        let mut lines = vec![line(
            format!("measured (run {})", first + 1),
            validation_side(&runs[first].doc, "measured"),
            7,
            Style::Dashed,
        )];
        for &i in &validations {
            lines.push(line(
                label(i),
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
    let mut cdfs = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        let Some(s) = summary(run) else { continue };
        cdfs.push(line(label(i), latency_cdf_points(s), i, Style::Solid));
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
                Some(line(label(i), t.points(&v, scale), i, Style::Solid))
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
    plots.list
}
