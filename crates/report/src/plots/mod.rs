//! Which plots a document gets, and from which of its fields (docs/report.md lists them).
//! A plot is drawn only when the document holds its data, so a run without a time series, a
//! disk without flash or a black-box model simply has fewer plots.
//!
//! Here: the plot list, the time axis and what every plot shares, and one run's plots in
//! order. The plots of each part live beside it: `requests.rs` (latency CDFs, validation,
//! time series), `device.rs` (SSD, disk and hybrid counters), `wear.rs` (erase counts),
//! `kinds.rs` (calibrate, emulate and cosim documents), `compare.rs` (several runs overlaid).

use crate::chart::{self, Axis, Bars, Line, Style, XyChart};
use crate::input::{Kind, Run};
use crate::quantity::{Composition, Model, Quantity, Scale};
use serde_json::Value;
use storsim_core::Unit;

mod compare;
mod device;
mod kinds;
mod requests;
mod wear;

pub(crate) use compare::compare_plots;
use device::{hdd, hybrid, ssd, Device};
use kinds::{calibrate, cosim_clock, lateness};
pub(crate) use requests::latency_cdf_points;
use requests::{flow_cdfs, latency_cdf, latency_split, time_series, validation_cdfs};
use wear::block_wear;
pub(crate) use wear::BlockWear;

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

/// What [`Plots::counter_bars`] draws: a bar per counter, labelled, with the counters' unit.
struct CounterBars {
    title: String,
    x_title: &'static str,
    /// The value axis' title, before its unit.
    y_label: &'static str,
    /// The one series' name.
    series: &'static str,
    /// The unit the counters are declared in; the axis shows them in a readable one.
    unit: Unit,
    /// Each bar's category label and value.
    bars: Vec<(String, f64)>,
}

/// Collects the plots of a page, giving each its id.
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

    /// A bar for each of `c.bars`, one series named `c.series`, in the readable unit of the
    /// largest value (nanoseconds as ms or s, bytes as MiB or GiB).
    fn counter_bars(&mut self, name: &str, source: &str, c: CounterBars) {
        let scale = Scale::fitting(Quantity::Of(c.unit), c.bars.iter().map(|b| b.1));
        self.bars(
            name,
            source,
            Bars {
                title: c.title,
                x_title: c.x_title.into(),
                y: Axis::linear(scale.title(c.y_label)),
                categories: c.bars.iter().map(|b| b.0.clone()).collect(),
                series: vec![(
                    c.series.into(),
                    c.bars.iter().map(|b| scale.apply(b.1)).collect(),
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
        // The families drawn are the models the document declares, never guessed from the
        // counters' names.
        let composition = Composition::of(run.doc.get("device"));
        for prefix in composition.prefixes(Model::Ssd) {
            ssd(&mut plots, &dev, prefix);
        }
        for prefix in composition.prefixes(Model::Hdd) {
            hdd(&mut plots, &dev, prefix);
        }
        for prefix in composition.prefixes(Model::Hybrid) {
            hybrid(&mut plots, &dev, prefix);
        }
    }
    if let Some(wear) = run.doc.get("device").and_then(|d| d.get("block_wear")) {
        block_wear(&mut plots, wear);
    }
    plots.list
}
