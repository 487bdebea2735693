//! The page of a sweep (`storsim sweep`): the spec's plots drawn from the results table and
//! the points' documents, then the table itself. A metric plot draws one column against
//! another, one line (or bar group) per value of a third; a CDF plot overlays the latency CDFs
//! of the points it selects; a wear plot draws each selected point's erase-count histogram.
//! docs/report.md ("Sweep reports") describes them for users.

use crate::chart::{self, Axis, Bars, Legend, Line, Style, XyChart};
use crate::html::{self, escape};
use crate::input::Run;
use crate::plots::{self, BlockWear, Plot};
use crate::Report;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write;
use storsim_sweep::{CdfOp, Cell, PlotSpec, Table};

/// An operation's name, as the spec and the documents write it.
fn op_name(op: CdfOp) -> &'static str {
    match op {
        CdfOp::All => "all",
        CdfOp::Read => "read",
        CdfOp::Write => "write",
    }
}

/// The most lines (series) a metric plot draws: beyond this a legend hides the plot.
const SERIES_MAX: usize = 16;
/// The most bar groups a metric plot draws: beyond this their labels run into each other.
const CATEGORIES_MAX: usize = 64;
/// The most curves a CDF plot overlays.
const CDF_LINES_MAX: usize = 16;
/// The most points a wear plot draws a histogram of.
const WEAR_POINTS_MAX: usize = 48;
/// The longest label (series value, bar group, title) drawn in a chart, in characters.
const LABEL_CHARS_MAX: usize = 60;
/// The longest text shown in a table cell, in characters; the rest is in its tooltip, up to
/// [`TOOLTIP_CHARS_MAX`].
const CELL_CHARS_MAX: usize = 120;
const TOOLTIP_CHARS_MAX: usize = 4000;
/// The longest caption source (columns and filter values) or note shown, in characters.
const SOURCE_CHARS_MAX: usize = 1000;

/// What the page asks of a cell of the results table.
trait CellView {
    /// The value as a finite number, if it is one.
    fn number(&self) -> Option<f64>;
    /// Whether this cell of the table equals `wanted`, a filter's value.
    fn matches(&self, wanted: &Cell) -> bool;
    /// As the page shows it: whole numbers in full, others to six significant digits, empty
    /// cells as nothing.
    fn shown(&self) -> String;
}

impl CellView for Cell {
    /// The value as a finite number, if it is one.
    fn number(&self) -> Option<f64> {
        match self {
            Cell::Number(v) if v.is_finite() => Some(*v),
            _ => None,
        }
    }

    /// Whether this cell of the table equals `wanted`, a filter's value: numbers compare as
    /// `f64`, also with a text that reads as one (a CSV cell read back, a filter written as a
    /// string), and a flag with the text `true` or `false`.
    fn matches(&self, wanted: &Cell) -> bool {
        let parse = |t: &str| t.trim().parse::<f64>().ok();
        match (self, wanted) {
            (Cell::Number(a), Cell::Number(b)) => a == b,
            (Cell::Number(a), Cell::Text(t)) | (Cell::Text(t), Cell::Number(a)) => {
                parse(t) == Some(*a)
            }
            (Cell::Text(a), Cell::Text(b)) => a == b,
            (Cell::Bool(a), Cell::Bool(b)) => a == b,
            (Cell::Bool(b), Cell::Text(t)) | (Cell::Text(t), Cell::Bool(b)) => {
                t.trim() == b.to_string()
            }
            (Cell::Empty, Cell::Empty) => true,
            _ => false,
        }
    }

    fn shown(&self) -> String {
        match self {
            Cell::Empty => String::new(),
            Cell::Number(v) => number_text(*v),
            Cell::Text(t) => t.clone(),
            Cell::Bool(b) => b.to_string(),
        }
    }
}

/// A number as labels and the table show it: whole numbers in full, others to six
/// significant digits, with an exponent when very large or small.
fn number_text(v: f64) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    if v == v.trunc() && v.abs() < 1e15 {
        return format!("{}", v as i64);
    }
    let trim = |s: String| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    let a = v.abs();
    if (1e-4..1e15).contains(&a) {
        let digits = (5 - a.log10().floor() as i32).max(0) as usize;
        trim(format!("{v:.digits$}"))
    } else {
        let s = format!("{v:.5e}");
        let (mantissa, exponent) = s.split_once('e').unwrap_or((&s, "0"));
        format!("{}e{exponent}", trim(mantissa.to_string()))
    }
}

/// `s` cut to `max` characters, an ellipsis marking the cut.
fn clip(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_string(),
        Some(_) => {
            let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
            out.push('…');
            out
        }
    }
}

/// What the page asks of the results table.
trait TableView {
    /// The cell of `row` in column `col`: empty where the row is short.
    fn cell(&self, row: usize, col: usize) -> &Cell;
    /// Whether `row` holds a result.
    fn ok(&self, row: usize) -> bool;
    /// The rows a plot draws.
    fn select(&self, filter: &[(String, Cell)]) -> Result<Vec<usize>, String>;
    /// A point's name in plots.
    fn label(&self, row: usize) -> String;
}

impl TableView for Table {
    /// The cell of `row` in column `col`: empty where the row is short.
    fn cell(&self, row: usize, col: usize) -> &Cell {
        self.rows
            .get(row)
            .and_then(|r| r.get(col))
            .unwrap_or(&Cell::Empty)
    }

    /// Whether `row` holds a result: its status is `ok` (every row is, in a table without a
    /// status column).
    fn ok(&self, row: usize) -> bool {
        self.column("status")
            .is_none_or(|c| matches!(self.cell(row, c), Cell::Text(s) if s == "ok"))
    }

    /// The rows a plot draws: those holding a result whose cells match every filter; an
    /// error naming a filter's column the table does not have.
    fn select(&self, filter: &[(String, Cell)]) -> Result<Vec<usize>, String> {
        let columns: Vec<(usize, &Cell)> = filter
            .iter()
            .map(|(name, value)| {
                self.column(name)
                    .map(|c| (c, value))
                    .ok_or_else(|| format!("the table has no column {name}"))
            })
            .collect::<Result<_, _>>()?;
        Ok((0..self.rows.len())
            .filter(|&r| self.ok(r))
            .filter(|&r| columns.iter().all(|(c, v)| self.cell(r, *c).matches(v)))
            .collect())
    }

    /// A point's name in plots: the `label` column, else the `point` column (its id), else
    /// its row number.
    fn label(&self, row: usize) -> String {
        ["label", "point"]
            .iter()
            .filter_map(|name| self.column(name))
            .map(|c| self.cell(row, c).shown())
            .find(|s| !s.is_empty())
            .unwrap_or_else(|| format!("row {}", row + 1))
    }
}

/// `filter` as the caption states it: `; where a = 1, b = x`.
fn filter_text(filter: &[(String, Cell)]) -> String {
    if filter.is_empty() {
        return String::new();
    }
    let terms: Vec<String> = filter
        .iter()
        .map(|(name, value)| format!("{name} = {}", value.shown()))
        .collect();
    format!("; where {}", terms.join(", "))
}

/// What one `[[plot]]` became: figures, or the reason there is nothing to draw.
enum Drawn {
    Plots {
        plots: Vec<Plot>,
        /// A remark for the caption (replicates, what was left out).
        note: String,
    },
    Nothing {
        title: String,
        source: String,
        why: String,
    },
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

/// The value a row has on the x axis of a metric plot.
enum XValue {
    Number(f64),
    Text(String),
}

/// A [`PlotSpec::Metric`]'s fields, and its place `n` in the spec.
struct MetricSpec<'a> {
    n: usize,
    x: &'a str,
    y: &'a str,
    series: Option<&'a str>,
    filter: &'a [(String, Cell)],
    title: Option<&'a str>,
    log_x: bool,
    log_y: bool,
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
fn metric(table: &Table, m: &MetricSpec) -> Drawn {
    let title = clip(
        &m.title
            .map_or_else(|| format!("{} vs {}", m.y, m.x), str::to_string),
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
    let data = MetricData {
        title: &title,
        x_title: clip(m.x, LABEL_CHARS_MAX * 2),
        y: if m.log_y {
            Axis::log(clip(m.y, LABEL_CHARS_MAX * 2))
        } else {
            Axis::linear(clip(m.y, LABEL_CHARS_MAX * 2))
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

/// What CDF and wear plots draw of the selected rows' documents, at most `max` of them.
struct Selected<T> {
    /// Each drawn point's label and what was taken from its document.
    points: Vec<(String, T)>,
    /// Selected rows without a document (the sweep returned none) or without the data.
    missing: usize,
    /// Selected rows left out beyond `max`.
    beyond: usize,
}

/// Takes from each of `rows`' documents what `extract` finds in it, up to `max` of them.
/// Only that is kept, not the document: a point's document may be megabytes.
fn from_documents<T>(
    rows: &[usize],
    max: usize,
    label: impl Fn(usize) -> String,
    point: &dyn Fn(usize) -> Option<Run>,
    extract: impl Fn(&Run) -> Option<T>,
) -> Selected<T> {
    let mut selected = Selected {
        points: Vec::new(),
        missing: 0,
        beyond: 0,
    };
    for &r in rows {
        if selected.points.len() == max {
            // Not read at all.
            selected.beyond += 1;
            continue;
        }
        match point(r).as_ref().and_then(&extract) {
            Some(data) => selected.points.push((label(r), data)),
            None => selected.missing += 1,
        }
    }
    selected
}

impl<T> Selected<T> {
    /// The caption's remark on what was left out.
    fn note(&self, what: &str) -> String {
        let mut notes = Vec::new();
        if self.missing > 0 {
            notes.push(format!("{} selected points without {what}", self.missing));
        }
        if self.beyond > 0 {
            notes.push(format!(
                "only the first {} of {} selected points (narrow the plot with where)",
                self.points.len() + self.missing,
                self.points.len() + self.missing + self.beyond
            ));
        }
        notes.join("; ")
    }
}

/// The latency CDF of `op` in a run's summary, latency in µs; none when the run had no such
/// requests.
fn op_cdf(run: &Run, op: CdfOp) -> Option<Vec<(f64, f64)>> {
    let s = plots::summary(run)?;
    let s = match op {
        CdfOp::All => s,
        CdfOp::Read | CdfOp::Write => {
            let o = s.get(op_name(op))?;
            if o.get("requests").and_then(Value::as_f64).unwrap_or(0.0) <= 0.0 {
                return None;
            }
            o
        }
    };
    let points = plots::latency_cdf_points(s);
    // A log axis shows latencies above zero only; a CDF without one draws nothing.
    points
        .iter()
        .any(|p| p.0 > 0.0 && p.0.is_finite())
        .then_some(points)
}

/// A [`PlotSpec::Cdf`]'s fields, and its place `n` in the spec.
struct CdfSpec<'a> {
    n: usize,
    op: CdfOp,
    series: &'a [String],
    filter: &'a [(String, Cell)],
    title: Option<&'a str>,
}

fn cdf(table: &Table, c: &CdfSpec, point: &dyn Fn(usize) -> Option<Run>) -> Drawn {
    let title = clip(
        &c.title.map_or_else(
            || format!("Latency CDF, {} requests", op_name(c.op)),
            str::to_string,
        ),
        LABEL_CHARS_MAX * 2,
    );
    let field = match c.op {
        CdfOp::All => "summary.latency_cdf".to_string(),
        op => format!("summary.{}.latency_cdf (or its percentiles)", op_name(op)),
    };
    let labels = if c.series.is_empty() {
        "label".to_string()
    } else {
        c.series.join(", ")
    };
    let source = format!(
        "{field} of each point, labelled by {labels}{}",
        filter_text(c.filter)
    );
    let nothing = |why: String| Drawn::Nothing {
        title: title.clone(),
        source: source.clone(),
        why,
    };
    let series_cols: Result<Vec<usize>, String> = c
        .series
        .iter()
        .map(|name| {
            table
                .column(name)
                .ok_or_else(|| format!("the table has no column {name}"))
        })
        .collect();
    let (series_cols, rows) = match series_cols.and_then(|s| Ok((s, table.select(c.filter)?))) {
        Ok(v) => v,
        Err(why) => return nothing(why),
    };
    if rows.is_empty() {
        return nothing("no row matches".into());
    }
    let label = |r: usize| {
        if series_cols.is_empty() {
            table.label(r)
        } else {
            let parts: Vec<String> = series_cols
                .iter()
                .map(|&col| table.cell(r, col).shown())
                .collect();
            parts.join(", ")
        }
    };
    let selected = from_documents(&rows, CDF_LINES_MAX, label, point, |run| op_cdf(run, c.op));
    if selected.points.is_empty() {
        return nothing(format!(
            "none of the {} selected points has a latency CDF of {} requests",
            rows.len(),
            op_name(c.op)
        ));
    }
    let lines = selected
        .points
        .iter()
        .enumerate()
        .map(|(i, (label, points))| Line {
            name: clip(label, LABEL_CHARS_MAX),
            points: points.clone(),
            colour: i,
            // Past the palette's eight colours, dashes tell the lines apart.
            style: if i < chart::PALETTE.len() {
                Style::Solid
            } else {
                Style::Dashed
            },
            ranges: Vec::new(),
        })
        .collect();
    let svg = chart::xy(&XyChart {
        title: title.clone(),
        x: Axis::log("latency (µs)"),
        y: Axis::linear("fraction of requests"),
        lines,
        legend: Legend::Auto,
    });
    Drawn::Plots {
        plots: vec![Plot {
            id: format!("sweep-{}-cdf", c.n),
            title,
            source,
            svg,
        }],
        note: selected.note("a latency CDF"),
    }
}

fn block_wear(run: &Run) -> Vec<BlockWear> {
    run.doc
        .get("device")
        .and_then(|d| d.get("block_wear"))
        .map(BlockWear::of)
        .unwrap_or_default()
}

fn wear(
    table: &Table,
    n: usize,
    filter: &[(String, Cell)],
    title: Option<&str>,
    point: &dyn Fn(usize) -> Option<Run>,
) -> Drawn {
    let title = clip(
        title.unwrap_or("Erase counts per block"),
        LABEL_CHARS_MAX * 2,
    );
    let source = format!(
        "device.block_wear[].erase_counts_per_block of each point{}",
        filter_text(filter)
    );
    let nothing = |why: String| Drawn::Nothing {
        title: title.clone(),
        source: source.clone(),
        why,
    };
    let rows = match table.select(filter) {
        Ok(rows) if rows.is_empty() => return nothing("no row matches".into()),
        Ok(rows) => rows,
        Err(why) => return nothing(why),
    };
    let selected = from_documents(
        &rows,
        WEAR_POINTS_MAX,
        |r| table.label(r),
        point,
        |run| Some(block_wear(run)).filter(|w| !w.is_empty()),
    );
    if selected.points.is_empty() {
        return nothing(format!(
            "none of the {} selected points has block wear (an SSD's erase counts)",
            rows.len()
        ));
    }
    // One erase-count axis for all, so that the points' histograms compare at a glance.
    let span = selected
        .points
        .iter()
        .flat_map(|p| &p.1)
        .map(BlockWear::span)
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), (a, b)| {
            (lo.min(a), hi.max(b))
        });
    let mut plots = Vec::new();
    for (k, (label, units)) in selected.points.iter().enumerate() {
        for w in units {
            let plot_title = format!(
                "{title}: {}{}",
                clip(label, LABEL_CHARS_MAX),
                w.title_unit()
            );
            let svg = chart::histogram(&w.histogram(plot_title.clone(), span));
            plots.push(Plot {
                id: format!("sweep-{n}-wear-{}{}", k + 1, w.tag()),
                title: plot_title,
                // The whole label here: the title has room for its start only.
                source: format!(
                    "device.block_wear[].erase_counts_per_block of {label}{}",
                    filter_text(filter)
                ),
                svg,
            });
        }
    }
    Drawn::Plots {
        plots,
        note: selected.note("block wear"),
    }
}

/// The page's own styles: the results table scrolls in both directions under a header that
/// stays, so that 200 columns and thousands of rows stay readable.
const STYLE: &str = ".description{max-width:60em}\
figure.no-data{max-width:760px;padding:.8em 1em;color:#555}\
.results{overflow:auto;max-height:85vh;border:1px solid #ddd}\
.results table{margin:0;border-collapse:separate;border-spacing:0}\
.results td,.results th{border-width:0 1px 1px 0}\
.results th{position:sticky;top:0;z-index:1;cursor:pointer;min-width:5em;max-width:14em;\
vertical-align:bottom;font-weight:normal;font-size:.85em}\
.results td{white-space:nowrap}\
.results th:first-child,.results td:first-child{position:sticky;left:0;z-index:2;background:#f4f4f4}\
.results th:first-child{z-index:3}\
.results tr.failed td{background:#fdecea}\
.results th[data-sort=asc]::after{content:\" \\25B2\"}.results th[data-sort=desc]::after{content:\" \\25BC\"}";

/// Sorting by a column: a click on its name sorts the rows by it (numbers as numbers, empty
/// cells last), a second click reverses.
const SORT_SCRIPT: &str = r#"(() => {
  const table = document.getElementById('results-table');
  if (!table) return;
  const heads = Array.from(table.tHead.rows[0].cells);
  const key = (row, i) => {
    const t = row.cells[i] ? row.cells[i].textContent : '';
    const n = Number(t);
    return t === '' ? null : (Number.isNaN(n) ? t : n);
  };
  heads.forEach((th, i) => th.addEventListener('click', () => {
    const up = th.dataset.sort !== 'asc';
    heads.forEach(h => delete h.dataset.sort);
    th.dataset.sort = up ? 'asc' : 'desc';
    const body = table.tBodies[0];
    const rows = Array.from(body.rows).map(r => [key(r, i), r]);
    rows.sort(([a], [b]) => {
      if (a === null || b === null) return (a === null) - (b === null);
      const d = typeof a === typeof b ? (a < b ? -1 : a > b ? 1 : 0)
                                      : (typeof a === 'number' ? -1 : 1);
      return up ? d : -d;
    });
    rows.forEach(([, r]) => body.appendChild(r));
  }));
})();"#;

fn results_table(out: &mut String, table: &Table) {
    let status = table.column("status");
    out.push_str("<div class=\"results\"><table id=\"results-table\"><thead><tr>");
    for name in &table.columns {
        // A break may fall after each dot of a long name: narrower columns.
        let shown = escape(&clip(name, 200)).replace('.', ".<wbr>");
        let _ = write!(
            out,
            "<th title=\"{}\">{shown}</th>",
            escape(&clip(name, 200))
        );
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for (r, row) in table.rows.iter().enumerate() {
        let failed = status.is_some() && !table.ok(r);
        out.push_str(if failed {
            "<tr class=\"failed\">"
        } else {
            "<tr>"
        });
        for c in 0..table.columns.len() {
            match row.get(c).unwrap_or(&Cell::Empty) {
                Cell::Number(v) => {
                    let _ = write!(out, "<td class=\"n\">{}</td>", number_text(*v));
                }
                Cell::Empty => out.push_str("<td></td>"),
                cell => {
                    let text = cell.shown();
                    let shown = clip(&text, CELL_CHARS_MAX);
                    if shown.len() < text.len() {
                        let _ = write!(
                            out,
                            "<td title=\"{}\">{}</td>",
                            escape(&clip(&text, TOOLTIP_CHARS_MAX)),
                            escape(&shown)
                        );
                    } else {
                        let _ = write!(out, "<td>{}</td>", escape(&shown));
                    }
                }
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table></div>\n");
}

/// The page of a sweep: `title`, `description` (paragraphs split at blank lines), each plot
/// of `plots` (ids `sweep-<n>-<kind>`, `n` from 1 in `plots`' order; a wear plot's
/// histograms `sweep-<n>-wear-<k>`, `k` from 1 per point drawn, with the unit's name for a
/// device of several), and the results table, sortable by any column. `point` gives a
/// point's parsed document by row index, for CDF and wear plots (`None` for failed points).
/// A plot with nothing to draw is a sentence saying why. The table is also embedded as JSON
/// (`script#storsim-sweep`: `{columns, rows}`).
pub fn render_sweep(
    title: &str,
    description: &str,
    table: &Table,
    plots: &[PlotSpec],
    point: &dyn Fn(usize) -> Option<Run>,
) -> Report {
    let mut out = String::with_capacity(1 << 16);
    html::head(&mut out, title, STYLE);
    intro(&mut out, description, table);
    let mut all = Vec::new();
    if !plots.is_empty() {
        out.push_str("<h2 id=\"plots\">Plots</h2>\n<div class=\"plots\">\n");
    }
    for (i, spec) in plots.iter().enumerate() {
        let n = i + 1;
        let (drawn, kind) = draw(spec, n, table, point);
        figures(&mut out, n, kind, drawn, &mut all);
    }
    if !plots.is_empty() {
        out.push_str("</div>\n");
    }
    out.push_str(
        "<h2 id=\"results\">Results</h2>\n<p>One row per point, every parameter and figure \
         (as in <code>results.csv</code>); click a column's name to sort by it.</p>\n",
    );
    results_table(&mut out, table);
    embedded_table(&mut out, table);
    Report {
        html: out,
        plots: all,
    }
}

/// The page's opening: the description's paragraphs, and how many points there are and how
/// many of them failed.
fn intro(out: &mut String, description: &str, table: &Table) {
    for paragraph in description.split("\n\n").filter(|p| !p.trim().is_empty()) {
        let _ = writeln!(
            out,
            "<p class=\"description\">{}</p>",
            escape(paragraph.trim())
        );
    }
    let ok = (0..table.rows.len()).filter(|&r| table.ok(r)).count();
    let _ = writeln!(
        out,
        "<p>{} points{}.</p>",
        table.rows.len(),
        if ok < table.rows.len() {
            format!(
                ", {} of them failed (highlighted in the table)",
                table.rows.len() - ok
            )
        } else {
            String::new()
        }
    );
}

/// The `n`-th plot of the spec drawn from `table` (and the points' documents, through
/// `point`), with its kind as its id names it.
fn draw(
    spec: &PlotSpec,
    n: usize,
    table: &Table,
    point: &dyn Fn(usize) -> Option<Run>,
) -> (Drawn, &'static str) {
    match spec {
        PlotSpec::Metric {
            x,
            y,
            series,
            filter,
            title,
            log_x,
            log_y,
        } => (
            metric(
                table,
                &MetricSpec {
                    n,
                    x,
                    y,
                    series: series.as_deref(),
                    filter,
                    title: title.as_deref(),
                    log_x: *log_x,
                    log_y: *log_y,
                },
            ),
            "metric",
        ),
        PlotSpec::Cdf {
            op,
            series,
            filter,
            title,
        } => (
            cdf(
                table,
                &CdfSpec {
                    n,
                    op: *op,
                    series,
                    filter,
                    title: title.as_deref(),
                },
                point,
            ),
            "cdf",
        ),
        PlotSpec::Wear { filter, title } => {
            (wear(table, n, filter, title.as_deref(), point), "wear")
        }
    }
}

/// The `n`-th plot's figures, captioned with their source and the plot's note, moved into
/// `all`; or, when it has nothing to draw, a figure saying why.
fn figures(out: &mut String, n: usize, kind: &str, drawn: Drawn, all: &mut Vec<Plot>) {
    match drawn {
        Drawn::Plots { plots, note } => {
            for p in &plots {
                let note = if note.is_empty() {
                    String::new()
                } else {
                    format!(" Drawn: {}.", escape(&note))
                };
                let caption = format!(
                    "Plot {n}, from <code>{}</code>.{note}",
                    escape(&clip(&p.source, SOURCE_CHARS_MAX))
                );
                html::figure(out, p, &caption);
            }
            all.extend(plots);
        }
        Drawn::Nothing { title, source, why } => {
            let _ = writeln!(
                out,
                "<figure id=\"fig-sweep-{n}-{kind}\" class=\"no-data\"><p>Plot {n}, \
                 <b>{}</b>: no rows match ({}).</p><figcaption>From <code>{}</code>.\
                 </figcaption></figure>",
                escape(&title),
                escape(&clip(&why, SOURCE_CHARS_MAX)),
                escape(&clip(&source, SOURCE_CHARS_MAX))
            );
        }
    }
}

/// The results table embedded as JSON (`script#storsim-sweep`), the sorting script, and the
/// page's end.
fn embedded_table(out: &mut String, table: &Table) {
    let data = serde_json::json!({
        "columns": table.columns,
        "rows": table
            .rows
            .iter()
            .map(|row| Value::Array(row.iter().map(Cell::json).collect()))
            .collect::<Vec<_>>(),
    });
    let _ = write!(
        out,
        "<p>The table is embedded in this page as JSON (<code>script#storsim-sweep</code>): \
         <code>JSON.parse(document.getElementById('storsim-sweep').textContent)</code>.</p>\n\
         <script type=\"application/json\" id=\"storsim-sweep\">{}</script>\n\
         <script>{SORT_SCRIPT}\ndocument.body.dataset.points = \
         JSON.parse(document.getElementById('storsim-sweep').textContent).rows.length;</script>\n\
         </body></html>\n",
        html::script_json(&data)
    );
}

#[cfg(test)]
#[path = "sweep_tests.rs"]
mod tests;
