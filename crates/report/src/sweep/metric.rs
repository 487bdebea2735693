//! The metric plot: one column against another, a line (numeric x) or a group of bars (other
//! x) per value of a third, replicates drawn as their mean with their range.

use super::{
    clip, filter_text, number_text, CellView, Drawn, TableView, CATEGORIES_MAX, LABEL_CHARS_MAX,
    SERIES_MAX,
};
use crate::chart::{self, Axis, Bars, Legend, Line, Style, XyChart};
use crate::plots::Plot;
use crate::quantity::{self, Composition, Scale};
use std::collections::BTreeMap;
use storsim_sweep::{Cell, Table};

/// The value a row has on the x axis of a metric plot.
enum XValue {
    Number(f64),
    Text(String),
}

/// A [`PlotSpec::Metric`]'s fields, and its place `n` in the spec.
pub(super) struct MetricSpec<'a> {
    pub(super) n: usize,
    pub(super) x: &'a str,
    pub(super) y: &'a str,
    pub(super) series: Option<&'a str>,
    pub(super) filter: &'a [(String, Cell)],
    pub(super) title: Option<&'a str>,
    pub(super) log_x: bool,
    pub(super) log_y: bool,
    /// What the sweep's device is made of, for finding its counters' descriptors.
    pub(super) composition: &'a Composition,
}

/// What a metric chart draws, whichever its shape: its title, its axes' titles, its series'
/// names, and the samples, each tagged with its series' index.
struct MetricData<'a> {
    title: &'a str,
    x_title: String,
    y: Axis,
    names: Vec<String>,
    samples: Vec<(usize, XValue, f64)>,
}

/// A metric plot drawn: its SVG and whether any point is the mean of replicates; or why
/// there is nothing to draw.
type MetricDrawing = Result<(String, bool), String>;

/// The metric plot `m` of `table`: lines when every x value is a number, bars otherwise.
pub(super) fn metric(table: &Table, m: &MetricSpec) -> Drawn {
    let title = clip(
        &m.title.map_or_else(|| default_title(m), str::to_string),
        LABEL_CHARS_MAX * 2,
    );
    let source = format!(
        "x = {}, y = {}{}{}",
        m.x,
        m.y,
        m.series
            .map_or(String::new(), |s| format!(", series = {s}")),
        filter_text(m.filter)
    );
    let nothing = |why: String| Drawn::Nothing {
        title: title.clone(),
        source: source.clone(),
        why,
    };
    let column = |name: &str| {
        table
            .column(name)
            .ok_or_else(|| format!("the table has no column {name}"))
    };
    let columns = (|| {
        let series = m.series.map(column).transpose()?;
        Ok::<_, String>((column(m.x)?, column(m.y)?, series, table.select(m.filter)?))
    })();
    let (x_col, y_col, series_col, rows) = match columns {
        Ok(c) => c,
        Err(why) => return nothing(why),
    };
    let (mut series_names, mut samples) = metric_samples(table, rows, x_col, y_col, series_col);
    if samples.is_empty() {
        return nothing(format!(
            "no row has a value in {} and a number in {}",
            m.x, m.y
        ));
    }
    let mut notes = Vec::new();
    if series_names.len() > SERIES_MAX {
        notes.push(format!(
            "the first {SERIES_MAX} of {} series",
            series_names.len()
        ));
        samples.retain(|s| s.0 < SERIES_MAX);
        series_names.truncate(SERIES_MAX);
    }
    let names: Vec<String> = series_names
        .iter()
        .map(|n| {
            if n.is_empty() && m.series.is_some() {
                "(none)".to_string()
            } else {
                clip(n, LABEL_CHARS_MAX)
            }
        })
        .collect();
    let numeric = samples.iter().all(|s| matches!(s.1, XValue::Number(_)));
    let (x_title, y_title) = scale_samples(m, &mut samples, numeric);
    let data = MetricData {
        title: &title,
        x_title: clip(&x_title, LABEL_CHARS_MAX * 2),
        y: if m.log_y {
            Axis::log(clip(&y_title, LABEL_CHARS_MAX * 2))
        } else {
            Axis::linear(clip(&y_title, LABEL_CHARS_MAX * 2))
        },
        names,
        samples,
    };
    let drawing = if numeric {
        metric_lines(m, data)
    } else {
        metric_bars(m, data, &mut notes)
    };
    let (svg, replicated) = match drawing {
        Ok(d) => d,
        Err(why) => return nothing(why),
    };
    if replicated {
        notes.insert(
            0,
            "each point the mean of the rows sharing its x and series (replicates), the error \
             bars their least and greatest value"
                .into(),
        );
    }
    Drawn::Plots {
        plots: vec![Plot {
            id: format!("sweep-{}-metric", m.n),
            title,
            source,
            svg,
        }],
        note: notes.join("; "),
    }
}

/// A metric plot's title when its spec sets none: what its columns measure, "y vs x", each
/// by its label (without a unit, which the axes show) or, for a column neither the field table
/// nor the descriptors know, by its name.
fn default_title(m: &MetricSpec) -> String {
    let label = |name: &str| {
        quantity::column(name, m.composition).map_or_else(|| name.to_string(), |(_, l)| l)
    };
    format!("{} vs {}", label(m.y), label(m.x))
}

/// The axes' titles of a metric plot, from what their columns measure, with `samples` put in
/// the axes' readable units; a text x axis (`numeric` false) shows its values as they are.
fn scale_samples(
    m: &MetricSpec,
    samples: &mut [(usize, XValue, f64)],
    numeric: bool,
) -> (String, String) {
    let (y_title, y_scale) = axis(m.y, m.composition, samples.iter().map(|s| s.2));
    let (x_title, x_scale) = if numeric {
        let xs = samples.iter().filter_map(|s| match s.1 {
            XValue::Number(v) => Some(v),
            XValue::Text(_) => None,
        });
        axis(m.x, m.composition, xs)
    } else {
        (m.x.to_string(), None)
    };
    for s in samples.iter_mut() {
        if let Some(scale) = &y_scale {
            s.2 = scale.apply(s.2);
        }
        if let (Some(scale), XValue::Number(v)) = (&x_scale, &mut s.1) {
            *v = scale.apply(*v);
        }
    }
    (x_title, y_title)
}

/// An axis' title and the unit its values are drawn in, for the column `name` holding
/// `values`: from the documents' field table or the counter's descriptor; a column neither
/// knows keeps its name as its title and its values as they are.
fn axis(
    name: &str,
    composition: &Composition,
    values: impl Iterator<Item = f64>,
) -> (String, Option<Scale>) {
    match quantity::column(name, composition) {
        Some((q, label)) => {
            let scale = Scale::fitting(q, values);
            (scale.title(&label), Some(scale))
        }
        None => (name.to_string(), None),
    }
}

/// The samples of a metric plot: each of `rows` with a number in `y_col` and a value in
/// `x_col`, tagged with its series (its value in `series_col`), and the series' names in
/// order of first appearance.
fn metric_samples(
    table: &Table,
    rows: Vec<usize>,
    x_col: usize,
    y_col: usize,
    series_col: Option<usize>,
) -> (Vec<String>, Vec<(usize, XValue, f64)>) {
    let mut series_names = Vec::new();
    let mut series_index = BTreeMap::new();
    let mut samples = Vec::new();
    for r in rows {
        let Some(y) = table.cell(r, y_col).number() else {
            continue;
        };
        let x = match table.cell(r, x_col) {
            Cell::Empty => continue,
            Cell::Number(v) if !v.is_finite() => continue,
            Cell::Number(v) => XValue::Number(*v),
            other => XValue::Text(other.shown()),
        };
        let name = series_col.map_or(String::new(), |c| table.cell(r, c).shown());
        let s = index_of(&mut series_names, &mut series_index, name);
        samples.push((s, x, y));
    }
    (series_names, samples)
}

/// A metric plot of numeric x values: a line per series, each point the mean of the samples
/// sharing its x, with their range as error bars.
fn metric_lines(m: &MetricSpec, data: MetricData) -> MetricDrawing {
    let mut replicated = false;
    let mut lines = Vec::new();
    for (s, name) in data.names.iter().enumerate() {
        let mut xy: Vec<(f64, f64)> = data
            .samples
            .iter()
            .filter(|p| p.0 == s)
            .filter_map(|p| match p.1 {
                XValue::Number(x) => Some((x, p.2)),
                XValue::Text(_) => None,
            })
            .collect();
        xy.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut points = Vec::new();
        let mut ranges = Vec::new();
        for group in xy.chunk_by(|a, b| a.0 == b.0) {
            let ys: Vec<f64> = group.iter().map(|p| p.1).collect();
            let (mean, lo, hi) = spread(&ys);
            points.push((group[0].0, mean));
            if ys.len() > 1 {
                replicated = true;
                ranges.push((group[0].0, lo, hi));
            }
        }
        lines.push(Line {
            name: name.clone(),
            points,
            colour: s,
            style: Style::SolidMarkers,
            ranges,
        });
    }
    let shown = |v: f64, log: bool| !log || v > 0.0;
    if !lines
        .iter()
        .flat_map(|l| &l.points)
        .any(|p| shown(p.0, m.log_x) && shown(p.1, m.log_y))
    {
        return Err("no row has values the log axes can show".into());
    }
    let svg = chart::xy(&XyChart {
        title: data.title.to_string(),
        x: if m.log_x {
            Axis::log(data.x_title)
        } else {
            Axis::linear(data.x_title)
        },
        y: data.y,
        lines,
        legend: Legend::Auto,
    });
    Ok((svg, replicated))
}

/// A metric plot of x values that are not all numbers: a group of bars per x value (the
/// first [`CATEGORIES_MAX`], noted in `notes` when there are more), a bar per series, each
/// the mean of its samples with their range as error bars.
fn metric_bars(m: &MetricSpec, data: MetricData, notes: &mut Vec<String>) -> MetricDrawing {
    let mut replicated = false;
    let mut categories = Vec::new();
    let mut category_index = BTreeMap::new();
    let mut cells: BTreeMap<(usize, usize), Vec<f64>> = BTreeMap::new();
    for (s, x, y) in &data.samples {
        let x = match x {
            XValue::Number(v) => number_text(*v),
            XValue::Text(t) => t.clone(),
        };
        let c = index_of(&mut categories, &mut category_index, x);
        cells.entry((*s, c)).or_default().push(*y);
    }
    if categories.len() > CATEGORIES_MAX {
        notes.push(format!(
            "the first {CATEGORIES_MAX} of {} values of {}",
            categories.len(),
            m.x
        ));
        categories.truncate(CATEGORIES_MAX);
    }
    let mut series = Vec::new();
    let mut ranges = Vec::new();
    for (s, name) in data.names.iter().enumerate() {
        let mut values = Vec::new();
        let mut whiskers = Vec::new();
        for c in 0..categories.len() {
            match cells.get(&(s, c)) {
                Some(ys) => {
                    let (mean, lo, hi) = spread(ys);
                    values.push(mean);
                    replicated |= ys.len() > 1;
                    whiskers.push((ys.len() > 1).then_some((lo, hi)));
                }
                None => {
                    values.push(f64::NAN);
                    whiskers.push(None);
                }
            }
        }
        series.push((name.clone(), values));
        ranges.push(whiskers);
    }
    if m.log_y && !series.iter().flat_map(|s| &s.1).any(|v| *v > 0.0) {
        return Err("no row has a value the log axis can show".into());
    }
    let svg = chart::bars(&Bars {
        title: data.title.to_string(),
        x_title: data.x_title,
        y: data.y,
        categories: categories
            .iter()
            .map(|c| clip(c, LABEL_CHARS_MAX))
            .collect(),
        series,
        ranges,
    });
    Ok((svg, replicated))
}

/// The mean, least and greatest of `values` (not empty).
fn spread(values: &[f64]) -> (f64, f64, f64) {
    let n = values.len() as f64;
    // Each term divided first, so that a sum of huge values cannot overflow.
    let mean = values.iter().map(|v| v / n).sum();
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (mean, lo, hi)
}

/// The index of `key` in `order`, adding it at the end when new.
fn index_of(order: &mut Vec<String>, index: &mut BTreeMap<String, usize>, key: String) -> usize {
    *index.entry(key.clone()).or_insert_with(|| {
        order.push(key);
        order.len() - 1
    })
}
