//! The plots drawn from the points' documents rather than the table: overlaid latency CDFs
//! and per-point erase-count histograms.

use super::{
    clip, filter_text, op_name, CellView, Drawn, TableView, CDF_LINES_MAX, LABEL_CHARS_MAX,
    WEAR_POINTS_MAX,
};
use crate::chart::{self, Axis, Legend, Line, Style, XyChart};
use crate::input::Run;
use crate::plots::{self, BlockWear, Plot};
use serde_json::Value;
use storsim_sweep::{CdfOp, Cell, Table};

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
pub(super) struct CdfSpec<'a> {
    pub(super) n: usize,
    pub(super) op: CdfOp,
    pub(super) series: &'a [String],
    pub(super) filter: &'a [(String, Cell)],
    pub(super) title: Option<&'a str>,
}

/// The CDF plot `c`: the latency CDFs of the points it selects, overlaid, labelled by its
/// series columns (or each point's label).
pub(super) fn cdf(table: &Table, c: &CdfSpec, point: &dyn Fn(usize) -> Option<Run>) -> Drawn {
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

/// Every flash unit's erase counts in a point's document.
fn block_wear(run: &Run) -> Vec<BlockWear> {
    run.doc
        .get("device")
        .and_then(|d| d.get("block_wear"))
        .map(BlockWear::of)
        .unwrap_or_default()
}

/// The `n`-th plot, a wear plot: each selected point's erase-count histogram per flash unit,
/// on one erase-count axis; `title` replaces the default title.
pub(super) fn wear(
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
