//! The page of a sweep (`storsim sweep`): the spec's plots drawn from the results table and
//! the points' documents, then the table itself. A metric plot draws one column against
//! another, one line (or bar group) per value of a third; a CDF plot overlays the latency CDFs
//! of the points it selects; a wear plot draws each selected point's erase-count histogram.
//! docs/report.md ("Sweep reports") describes them for users.
//!
//! Here: the table as the page reads it, and the page; `metric.rs` the metric plot;
//! `documents.rs` the CDF and wear plots; `tests.rs`.

use crate::html::{self, escape};
use crate::input::Run;
use crate::plots::Plot;
use crate::quantity::Composition;
use crate::Report;
use serde_json::Value;
use std::fmt::Write;
use storsim_sweep::{CdfOp, Cell, PlotSpec, Table};

mod documents;
mod metric;

use documents::{cdf, wear, CdfSpec};
use metric::{metric, MetricSpec};

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

/// The results table: every column, failed rows highlighted, long text cut with the whole
/// in a tooltip.
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
    // Only metric plots label their axes from the device's counters; the others need not
    // read a point's document for it.
    let composition = if plots.iter().any(|p| matches!(p, PlotSpec::Metric { .. })) {
        composition(table, point)
    } else {
        Composition::default()
    };
    for (i, spec) in plots.iter().enumerate() {
        let n = i + 1;
        let (drawn, kind) = draw(spec, n, table, point, &composition);
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

/// What the sweep's device is made of, for labelling its counters: the `device` of the first
/// point whose document is at hand (its model and declared parts), else the first model the
/// table's `device.model` column names.
fn composition(table: &Table, point: &dyn Fn(usize) -> Option<Run>) -> Composition {
    let ok = || (0..table.rows.len()).filter(|&r| table.ok(r));
    if let Some(run) = ok().find_map(point) {
        return Composition::of(run.doc.get("device"));
    }
    let model = table.column("device.model").and_then(|c| {
        ok().find_map(|r| match table.cell(r, c) {
            Cell::Text(m) => Some(m.clone()),
            _ => None,
        })
    });
    Composition::of(model.map(|m| serde_json::json!({ "model": m })).as_ref())
}

/// The `n`-th plot of the spec drawn from `table` (and the points' documents, through
/// `point`), with its kind as its id names it.
fn draw(
    spec: &PlotSpec,
    n: usize,
    table: &Table,
    point: &dyn Fn(usize) -> Option<Run>,
    composition: &Composition,
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
                    composition,
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
mod tests;
