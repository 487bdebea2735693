//! The page: a header per run, its plots inlined as SVG, the compare table, and the data.

use crate::input::{Kind, Run};
use crate::plots::Plot;
use crate::quantity::{self, Composition, Scale};
use serde_json::Value;
use std::fmt::Write;

/// Escapes text for HTML content and attribute values.
pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str =
    "body{font-family:sans-serif;margin:1.5em auto;max-width:1600px;padding:0 1em;color:#222}\
h1{font-size:1.6em}h2{font-size:1.3em;margin-top:2em;border-bottom:1px solid #ccc}\
table{border-collapse:collapse;font-size:.9em;margin:.5em 0}\
td,th{border:1px solid #ddd;padding:.2em .6em;text-align:left;vertical-align:top}\
td.n{text-align:right;font-variant-numeric:tabular-nums}th{background:#f4f4f4}\
.plots{display:flex;flex-wrap:wrap;gap:1em}\
figure{margin:0;border:1px solid #e4e4e4;padding:.4em;background:#fff}\
figure svg{max-width:100%;height:auto;display:block}\
figcaption{font-size:.8em;color:#555;max-width:760px}code{font-size:.95em}\
.up{color:#b35900}.down{color:#0a6ebd}";

/// A run's one-line description for headers and table columns.
pub(crate) fn run_name(run: &Run) -> String {
    let device = run
        .doc
        .get("device")
        .and_then(|d| d.get("name"))
        .or_else(|| run.doc.get("target").and_then(|t| t.get("name")))
        .and_then(Value::as_str)
        .unwrap_or("?");
    format!("{} on {device}", run.kind.name())
}

fn header(out: &mut String, run: &Run, index: usize) {
    let d = &run.doc;
    fn text(v: Option<&Value>) -> String {
        match v {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Null) | None => String::new(),
            // An argument list, as a command line.
            Some(Value::Array(items)) => items
                .iter()
                .map(|i| text(Some(i)))
                .collect::<Vec<_>>()
                .join(" "),
            Some(other) => other.to_string(),
        }
    }
    let mut rows: Vec<(&str, String)> =
        vec![("file", run.file.clone()), ("kind", run.kind.name().into())];
    let device = d.get("device");
    if let Some(dev) = device {
        rows.push(("device", text(dev.get("name"))));
        rows.push(("model", text(dev.get("model"))));
        // The models inside it (a composite's children, an SSD's FTL), as the document
        // declares them: which FTL an SSD ran is said nowhere else.
        if let Some(parts) = dev.get("parts").and_then(Value::as_array) {
            let listed: Vec<String> = parts
                .iter()
                .map(|p| format!("{} under {}", text(p.get("model")), text(p.get("prefix"))))
                .collect();
            rows.push(("parts", listed.join(", ")));
        }
    }
    if let Some(target) = d.get("target") {
        rows.push((
            "target",
            format!(
                "{} ({})",
                text(target.get("name")),
                text(target.get("kind"))
            ),
        ));
    }
    if let Some(w) = d.get("workload") {
        rows.push(("workload", text(w.get("name"))));
    }
    if let Some(p) = d.get("program") {
        rows.push(("program", text(p.get("argv"))));
    }
    let seed = d
        .get("seed")
        .or_else(|| d.get("plan").and_then(|p| p.get("seed")));
    rows.push(("seed", text(seed)));
    rows.push(("storsim version", text(d.get("version"))));
    rows.push(("command line", text(d.get("command_line"))));
    let _ = write!(
        out,
        "<h2 id=\"run{n}\">Run {n}: {}</h2>\n<table class=\"run-header\">",
        escape(&run_name(run)),
        n = index + 1
    );
    for (k, v) in rows.iter().filter(|(_, v)| !v.is_empty()) {
        let v = if *k == "command line" {
            format!("<code>{}</code>", escape(v))
        } else {
            escape(v)
        };
        let _ = write!(out, "<tr><th>{k}</th><td>{v}</td></tr>");
    }
    out.push_str("</table>\n");
}

/// A run of several flows: a row per flow (its class, requests, IOPS, bandwidth, mean and
/// 99th percentile latency, and with `--fairness` its slowdown), then the fairness.
fn flows_table(out: &mut String, run: &Run, index: usize) {
    let Some(flows) = run.doc.get("flows").and_then(Value::as_array) else {
        return;
    };
    let _ = write!(
        out,
        "<table class=\"flows\" id=\"run{}-flows\"><tr><th>flow</th><th>name</th><th>class</th>\
         <th>requests</th><th>IOPS</th><th>MB/s</th><th>mean latency (µs)</th>\
         <th>p99 latency (µs)</th><th>slowdown</th></tr>",
        index + 1
    );
    let num = |v: &Value, path: &[&str]| path.iter().try_fold(v, |v, k| v.get(k))?.as_f64();
    // Each column to the precision its figure has: a count whole, rates to four significant
    // figures, latencies (in µs, as the plots show them) to three, a slowdown to hundredths.
    let show = |v: Option<f64>, format: fn(f64) -> String| v.map_or_else(String::new, format);
    let count = |v: f64| format!("{v:.0}");
    let rate = |v: f64| significant(v, 4);
    let latency = |v: f64| significant(v, 3);
    let slowdown = |v: f64| format!("{v:.2}");
    for (i, flow) in flows.iter().enumerate() {
        let s = flow.get("summary").unwrap_or(&Value::Null);
        let name = flow.get("name").and_then(Value::as_str).unwrap_or("");
        let class = flow.get("class").and_then(Value::as_str).unwrap_or("");
        let _ = write!(
            out,
            "<tr><td>{i}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td></tr>",
            escape(name),
            escape(class),
            show(num(s, &["requests"]), count),
            show(num(s, &["iops"]), rate),
            show(num(s, &["bandwidth_bytes_per_s"]).map(|b| b / 1e6), rate),
            show(num(s, &["latency_ns", "mean"]).map(|ns| ns / 1e3), latency),
            show(num(s, &["latency_ns", "p99"]).map(|ns| ns / 1e3), latency),
            show(num(flow, &["slowdown"]), slowdown),
        );
    }
    // The fairness, between 0 and 1, to thousandths: near 1 is where runs differ.
    if let Some(fairness) = run.doc.get("fairness").and_then(Value::as_f64) {
        let _ = write!(
            out,
            "<tr><th colspan=\"8\">fairness (smallest slowdown over largest)</th><td>{fairness:.3}</td></tr>"
        );
    }
    out.push_str("</table>\n");
}

/// Inlines `plots` as figures.
fn figures(out: &mut String, plots: &[Plot]) {
    if plots.is_empty() {
        out.push_str("<p>No data to plot in this document.</p>\n");
        return;
    }
    out.push_str("<div class=\"plots\">\n");
    for p in plots {
        figure(out, p, &format!("From <code>{}</code>.", escape(&p.source)));
    }
    out.push_str("</div>\n");
}

/// One plot as a figure, its caption the plot's title and then `caption_html` (markup).
pub(crate) fn figure(out: &mut String, p: &Plot, caption_html: &str) {
    let _ = writeln!(
        out,
        "<figure id=\"fig-{id}\">{svg}<figcaption>{title}. {caption_html}</figcaption></figure>",
        id = p.id,
        svg = inline_svg(p),
        title = escape(&p.title),
    );
}

/// The start of a page, up to and including its `<h1>`: the title, the shared styles and
/// `extra_style` (CSS of the page's own elements).
pub(crate) fn head(out: &mut String, title: &str, extra_style: &str) {
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{t}</title><style>{STYLE}{extra_style}</style></head>\n<body>\n<h1>{t}</h1>\n",
        t = escape(title)
    );
}

/// JSON to embed in a `<script>` element: a "<" in a string could end the element early
/// ("</script>") or open a comment; JSON's "\u003c" means the same character and cannot.
pub(crate) fn script_json(v: &Value) -> String {
    serde_json::to_string(v)
        .unwrap_or_default()
        .replace('<', "\\u003c")
}

/// The plot's SVG with its id and an accessible name, ready to inline.
pub(crate) fn inline_svg(p: &Plot) -> String {
    let svg = p
        .svg
        .trim_start_matches("<?xml version=\"1.0\" encoding=\"UTF-8\"?>")
        .trim();
    svg.replacen(
        "<svg ",
        &format!(
            "<svg id=\"{}\" class=\"plot\" role=\"img\" aria-label=\"{}\" ",
            p.id,
            escape(&p.title)
        ),
        1,
    )
}

/// Every number in `v`, by its path, leaving out the CDF (drawn, not tabulated).
fn flatten(prefix: &str, v: &Value, out: &mut Vec<(String, f64)>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                if k == "latency_cdf" {
                    continue;
                }
                let path = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&path, v, out);
            }
        }
        Value::Number(n) => out.push((prefix.to_string(), n.as_f64().unwrap_or(0.0))),
        _ => {}
    }
}

/// A figure of the compare table: each run's value, and after the first its difference to the
/// first run.
pub(crate) fn cell(value: Option<f64>, first: Option<f64>) -> String {
    let Some(v) = value else {
        return "<td class=\"n\">—</td>".into();
    };
    let shown = format_number(v);
    let diff = match first {
        Some(f) if f != 0.0 && f != v => {
            let class = if v > f { "up" } else { "down" };
            // A ratio reads better than a percentage once the runs differ tenfold.
            let ratio = v / f;
            let diff = if ratio >= 10.0 {
                format!("×{ratio:.0}")
            } else if ratio > 0.0 && ratio <= 0.1 {
                format!("×{ratio:.2e}")
            } else {
                format!("{:+.1} %", 100.0 * (v - f) / f.abs())
            };
            format!(" <span class=\"{class}\">({diff})</span>")
        }
        Some(f) if f == 0.0 && v != 0.0 => {
            format!(" <span class=\"up\">(+{})</span>", format_number(v))
        }
        _ => String::new(),
    };
    format!("<td class=\"n\">{shown}{diff}</td>")
}

/// `v` to `figures` significant figures, but never rounding a whole part away (12345 to three
/// figures is "12345", not "12300"): 21.2253 to four is "21.23", 0.012345 to three "0.0123".
fn significant(v: f64, figures: i32) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let mut decimals = (figures - 1 - v.abs().log10().floor() as i32).max(0);
    // Rounding can carry into a new leading digit (9.9996 to four figures is "10.00").
    if decimals > 0 && (v.abs() * 10f64.powi(decimals)).round() >= 10f64.powi(figures) {
        decimals -= 1;
    }
    format!("{v:.0$}", decimals as usize)
}

/// A compare-table figure: whole numbers whole, others to four significant figures without
/// trailing zeros (a scaled 5.5 ms reads "5.5", not "5.5000").
fn format_number(v: f64) -> String {
    if v == v.trunc() && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else {
        let text = significant(v, 4);
        if text.contains('.') {
            text.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            text
        }
    }
}

/// The compare table: every summary figure (and every device counter the runs share) side by
/// side, with each run's difference to the first; figures that are zero in every run are left
/// out.
pub(crate) fn compare_table(runs: &[Run]) -> String {
    let mut columns: Vec<Vec<(String, f64)>> = Vec::new();
    for run in runs {
        let mut figures = Vec::new();
        let summary = match run.kind {
            Kind::Emulate => run.doc.get("model"),
            _ => run.doc.get("summary"),
        };
        if let Some(s) = summary {
            flatten("summary", s, &mut figures);
        }
        // A validation's figures: its demerit, both sides and the errors per operation (the
        // CDFs, arrays, are left out as the summaries' are).
        if run.kind == Kind::Validate {
            for key in ["demerit_ms", "simulated", "measured", "per_op"] {
                if let Some(v) = run.doc.get(key) {
                    flatten(key, v, &mut figures);
                }
            }
        }
        if let Some(c) = run.doc.get("device").and_then(|d| d.get("counters")) {
            flatten("device.counters", c, &mut figures);
        }
        columns.push(figures);
    }
    // Rows in the first run's order, then any the others add; counters only when every run
    // has them (runs of different models share few), summary figures always.
    let mut rows: Vec<String> = Vec::new();
    for col in &columns {
        for (k, _) in col {
            if !rows.contains(k) {
                rows.push(k.clone());
            }
        }
    }
    let value = |c: &Vec<(String, f64)>, k: &str| c.iter().find(|(n, _)| n == k).map(|p| p.1);
    rows.retain(|k| {
        let shared = k.starts_with("summary.") || columns.iter().all(|c| value(c, k).is_some());
        // A figure that is zero in every run (an operation none of them had) says nothing.
        shared
            && columns
                .iter()
                .any(|c| value(c, k).is_some_and(|v| v != 0.0))
    });
    let compositions: Vec<Composition> = runs
        .iter()
        .map(|r| Composition::of(r.doc.get("device")))
        .collect();
    let mut out = String::from("<table id=\"compare-table\"><tr><th>figure</th>");
    for (i, run) in runs.iter().enumerate() {
        let _ = write!(out, "<th>run {}: {}</th>", i + 1, escape(&run_name(run)));
    }
    out.push_str("</tr>\n");
    for row in &rows {
        let get = |c: &Vec<(String, f64)>| c.iter().find(|(n, _)| n == row).map(|p| p.1);
        let (head, scale) = row_unit(row, &compositions, columns.iter().filter_map(get));
        let shown =
            |c: &Vec<(String, f64)>| get(c).map(|v| scale.as_ref().map_or(v, |s| s.apply(v)));
        let first = columns.first().and_then(shown);
        let _ = write!(out, "<tr><td>{head}</td>");
        for (i, c) in columns.iter().enumerate() {
            out.push_str(&cell(shown(c), if i == 0 { None } else { first }));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    out
}

/// A compare-table row's heading (markup) and the unit its values are shown in: what the
/// row measures, from the documents' field table or from the counter's descriptor (found
/// through the first run whose declared device describes it), with one readable unit chosen
/// from all the runs' `values` so that they compare, and then the row's path. A row neither
/// knows is its path alone, its values as they are.
fn row_unit(
    row: &str,
    compositions: &[Composition],
    values: impl Iterator<Item = f64>,
) -> (String, Option<Scale>) {
    let path = format!("<code>{}</code>", escape(row));
    let known = compositions.iter().find_map(|c| quantity::column(row, c));
    match known {
        Some((q, label)) => {
            // The unit of the row's smallest figure, so that no run's figure reads 0.4589 ms
            // beside another's 1.929 ms: a row compares runs, and whole numbers compare best.
            let smallest = values
                .filter(|v| v.is_finite() && *v != 0.0)
                .fold(f64::INFINITY, |m, v| m.min(v.abs()));
            let scale = Scale::of(q, if smallest.is_finite() { smallest } else { 0.0 });
            let head = format!("{} {path}", escape(&scale.title(&label)));
            (head, Some(scale))
        }
        None => (path, None),
    }
}

/// The data embedded for re-plotting. Arrays of per-block erase counts beyond this length are
/// replaced by their frequencies (lossless for any wear histogram) to keep the page light, and
/// the series' fractions are rounded ([`round_floats`]).
const EMBED_BLOCKS_MAX: usize = 4096;

fn embedded(run: &Run) -> Value {
    let mut doc = run.doc.clone();
    if let Some(Value::Array(wear)) = doc.pointer_mut("/device/block_wear") {
        for w in wear {
            let Some(Value::Array(counts)) = w.get("erase_counts_per_block") else {
                continue;
            };
            if counts.len() <= EMBED_BLOCKS_MAX {
                continue;
            }
            let mut freq = std::collections::BTreeMap::<u64, u64>::new();
            for c in counts {
                *freq.entry(c.as_u64().unwrap_or(0)).or_default() += 1;
            }
            let pairs: Vec<Value> = freq
                .into_iter()
                .map(|(e, n)| serde_json::json!([e, n]))
                .collect();
            if let Some(obj) = w.as_object_mut() {
                obj.remove("erase_counts_per_block");
                obj.insert("erase_count_blocks".into(), Value::Array(pairs));
            }
        }
    }
    if let Some(series) = doc.get_mut("series") {
        round_floats(series);
    }
    serde_json::json!({"file": run.file, "kind": run.kind.name(), "document": doc})
}

/// Rounds every fraction in `v` to six significant digits: a run's series holds every device
/// counter per window (a two-SSD array has 200 of them), and their full 17 digits would make
/// up most of the page while no plot can show more than three.
fn round_floats(v: &mut Value) {
    match v {
        Value::Array(items) => items.iter_mut().for_each(round_floats),
        Value::Object(map) => map.values_mut().for_each(round_floats),
        Value::Number(n) if n.is_f64() => {
            let x = n.as_f64().unwrap_or(0.0);
            if x != 0.0 && x.is_finite() {
                let digits = 5 - x.abs().log10().floor() as i32;
                let rounded = if digits >= 0 {
                    let scale = 10f64.powi(digits);
                    (x * scale).round() / scale
                } else {
                    let scale = 10f64.powi(-digits);
                    (x / scale).round() * scale
                };
                if let Some(r) = serde_json::Number::from_f64(rounded) {
                    *n = r;
                }
            }
        }
        _ => {}
    }
}

/// The whole page.
pub(crate) fn page(runs: &[Run], per_run: &[Vec<Plot>], compare: &[Plot]) -> String {
    let mut out = String::with_capacity(1 << 16);
    let title = if runs.len() == 1 {
        format!("storsim report: {}", run_name(&runs[0]))
    } else {
        format!("storsim report: {} runs compared", runs.len())
    };
    head(&mut out, &title, "");
    if runs.len() > 1 {
        out.push_str("<h2 id=\"compare\">Compared</h2>\n<p>Run 1 is the reference: each other run's figure shows its difference to run 1 in brackets.</p>\n");
        figures(&mut out, compare);
        out.push_str(&compare_table(runs));
    }
    for (i, (run, plots)) in runs.iter().zip(per_run).enumerate() {
        header(&mut out, run, i);
        flows_table(&mut out, run, i);
        figures(&mut out, plots);
    }
    let data: Vec<Value> = runs.iter().map(embedded).collect();
    let json = script_json(&Value::Array(data));
    let _ = write!(
        out,
        "<p>The documents drawn here are embedded in this page as JSON \
         (<code>script#storsim-data</code>): <code>JSON.parse(document.getElementById('storsim-data').textContent)</code>.</p>\n\
         <script type=\"application/json\" id=\"storsim-data\">{json}</script>\n\
         <script>document.body.dataset.runs = JSON.parse(document.getElementById('storsim-data').textContent).length;</script>\n\
         </body></html>\n"
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compare_figures_drop_trailing_zeros_but_keep_four_figures() {
        assert_eq!(format_number(5.5), "5.5");
        assert_eq!(format_number(0.012345), "0.01235");
        assert_eq!(format_number(21.2253), "21.23");
        assert_eq!(format_number(3.0), "3");
        assert_eq!(format_number(1234.56), "1234.6");
        assert_eq!(format_number(-0.25), "-0.25");
    }

    #[test]
    fn cells_show_the_difference_to_the_first_run() {
        assert_eq!(cell(Some(5.0), None), "<td class=\"n\">5</td>");
        assert!(cell(Some(110.0), Some(100.0)).contains("(+10.0 %)"));
        assert!(cell(Some(50.0), Some(100.0)).contains("(-50.0 %)"));
        assert!(cell(Some(2000.0), Some(100.0)).contains("(×20)"));
        assert!(cell(Some(1.0), Some(1000.0)).contains("(×1.00e-3)"));
        assert!(!cell(Some(100.0), Some(100.0)).contains('%'));
        assert!(cell(None, Some(1.0)).contains('—'));
    }

    #[test]
    fn fractions_keep_six_significant_digits() {
        let mut v = serde_json::json!([0.9992296047450339, 123456.789, 1.0e-7 / 3.0, 5, 0.0]);
        round_floats(&mut v);
        assert_eq!(
            v,
            serde_json::json!([0.99923, 123457.0, 3.33333e-8, 5, 0.0])
        );
    }

    #[test]
    fn escaping_covers_markup() {
        assert_eq!(
            escape("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }
}
