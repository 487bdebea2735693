//! `storsim report`: one self-contained HTML page of plots from storsim's JSON run documents
//! (simulate, cosim, emulate, calibrate, validate; docs/report.md lists each plot and its
//! fields).
//!
//! The page needs nothing but itself: plots are inlined SVG drawn with plotters, the styles
//! are inline, and the documents are embedded as JSON for re-plotting. Several runs get a
//! compare view: overlaid CDFs and time series, and a table of every summary figure with its
//! difference to the first run. [`render_sweep`] draws a sweep's page (`storsim sweep`): its
//! metric, CDF and wear plots from the results table and the points' documents, then the
//! table.
//!
//! ```
//! let doc = r#"{"schema": 1, "device": {"name": "d", "counters": {}}, "workload": {},
//!   "summary": {"latency_cdf": [{"fraction": 0.5, "latency_ns": 1000},
//!                               {"fraction": 1.0, "latency_ns": 5000}]}}"#;
//! let run = storsim_report::Run::parse("run.json", doc).unwrap();
//! let report = storsim_report::render(&[run]);
//! assert!(report.html.contains("id=\"run1-latency-cdf\""));
//! ```

mod chart;
mod html;
mod input;
mod plots;
mod quantity;
mod sweep;

pub use input::{Kind, ReportError, Run};
pub use plots::Plot;
pub use sweep::render_sweep;

/// The version of the shape of every JSON document storsim writes (docs/json.md): one number
/// for the whole family, raised when a field of any of them changes meaning or goes away, not
/// when one is added. The writer (the CLI) stamps it; this crate refuses documents newer than it.
pub const SCHEMA: u32 = 1;

/// A rendered report: the page, and each plot on its own for `--plots`.
pub struct Report {
    /// The self-contained HTML page.
    pub html: String,
    /// Every plot in the page, in page order.
    pub plots: Vec<Plot>,
}

/// Renders the page for `runs` (at least one; the first is the reference of the compare view).
pub fn render(runs: &[Run]) -> Report {
    let per_run: Vec<Vec<Plot>> = runs
        .iter()
        .enumerate()
        .map(|(i, run)| plots::run_plots(run, i))
        .collect();
    let compare = if runs.len() > 1 {
        plots::compare_plots(runs)
    } else {
        Vec::new()
    };
    let html = html::page(runs, &per_run, &compare);
    let plots = compare
        .into_iter()
        .chain(per_run.into_iter().flatten())
        .collect();
    Report { html, plots }
}

/// A plot as a standalone SVG file (with the id and accessible name the page gives it).
pub fn plot_svg(plot: &Plot) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n{}\n",
        html::inline_svg(plot)
    )
}

/// A plot rendered as PNG at twice its CSS size (for print), its text set in the system's
/// fonts (DejaVu Sans or Liberation Sans on Debian; without a font the text is left out).
pub fn plot_png(plot: &Plot) -> Result<Vec<u8>, ReportError> {
    use resvg::{tiny_skia, usvg};
    let error = |message: String| ReportError::Png {
        plot: plot.id.clone(),
        message,
    };
    let mut options = usvg::Options::default();
    let fonts = options.fontdb_mut();
    fonts.load_system_fonts();
    // The plots ask for the generic "sans-serif", which fontdb maps to Arial unless told
    // otherwise; Debian has DejaVu or Liberation instead.
    let sans = ["DejaVu Sans", "Liberation Sans", "Noto Sans", "Arial"]
        .into_iter()
        .find(|family| {
            fonts
                .faces()
                .any(|f| f.families.iter().any(|(name, _)| name == family))
        });
    if let Some(family) = sans {
        fonts.set_sans_serif_family(family);
        options.font_family = family.to_string();
    }
    let tree = usvg::Tree::from_str(&plot.svg, &options).map_err(|e| error(e.to_string()))?;
    let size = tree
        .size()
        .to_int_size()
        .scale_by(2.0)
        .ok_or_else(|| error("empty".into()))?;
    let mut pixmap =
        tiny_skia::Pixmap::new(size.width(), size.height()).ok_or_else(|| error("empty".into()))?;
    resvg::render(
        &tree,
        tiny_skia::Transform::from_scale(2.0, 2.0),
        &mut pixmap.as_mut(),
    );
    pixmap.encode_png().map_err(|e| error(e.to_string()))
}

/// How many marks of data an SVG plot of this crate draws: lines, markers, and filled shapes
/// other than the white background. Axes, ticks, grid lines and the legend (its box, marks
/// and names) are not data. For tests that check, in the page as a browser holds it, that a
/// plot is not empty.
pub fn data_marks(svg: &str) -> usize {
    let (data, _legend) = chart::split_at_legend(svg);
    // Data lines are drawn 2 px wide, axes, ticks and grid lines 1 px.
    let lines = elements(data, "<polyline")
        .filter(|e| e.contains("stroke-width=\"2\"") && polyline_points(e).len() >= 2)
        .count();
    let markers = data.matches("<circle").count();
    let shapes = elements(data, "<rect")
        .filter(|e| !e.contains("fill=\"#FFFFFF\"") && !e.contains("fill=\"none\""))
        .count();
    lines + markers + shapes
}

/// The attributes of each `tag ...>` element of `svg` (`tag` is `<rect`, say), in document
/// order: up to its tag's end, which is `/>` as plotters writes it and `>` as a browser
/// serializes it.
fn elements<'s>(svg: &'s str, tag: &'static str) -> impl Iterator<Item = &'s str> {
    svg.split(tag)
        .skip(1)
        .map(|e| &e[..e.find('>').unwrap_or(e.len())])
}

/// The points of a polyline element's attributes, in pixels.
fn polyline_points(element: &str) -> Vec<(i64, i64)> {
    element
        .split("points=\"")
        .nth(1)
        .and_then(|p| p.split('"').next())
        .unwrap_or("")
        .split_whitespace()
        .filter_map(|xy| {
            let (x, y) = xy.split_once(',')?;
            Some((x.parse().ok()?, y.parse().ok()?))
        })
        .collect()
}

/// How a line's legend entry draws its sample.
#[cfg(test)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LegendSample {
    /// One unbroken stroke.
    Solid,
    /// Several strokes with gaps between them along the same level line.
    Dashed,
}

/// The samples of a line chart's legend entries, top to bottom: the level strokes in its
/// legend, grouped by their height (each entry is a row). Marker entries (circles) have no
/// stroke and are left out.
#[cfg(test)]
fn legend_samples(svg: &str) -> Vec<LegendSample> {
    let (_data, legend) = chart::split_at_legend(svg);
    let mut rows: std::collections::BTreeMap<i64, Vec<(i64, i64)>> = Default::default();
    for points in elements(legend, "<polyline").map(polyline_points) {
        if let [(x0, y0), (x1, y1)] = points[..] {
            if y0 == y1 {
                rows.entry(y0).or_default().push((x0, x1));
            }
        }
    }
    rows.into_values()
        .map(|mut strokes| {
            strokes.sort_unstable();
            let width = strokes[strokes.len() - 1].1 - strokes[0].0;
            assert_eq!(width, i64::from(chart::SAMPLE_PX), "a sample {strokes:?}");
            // A dashed sample's strokes leave gaps between each other; strokes that touch
            // would be one solid line drawn in pieces, which this crate does not draw.
            let gaps = strokes.windows(2).all(|w| w[1].0 > w[0].1);
            match strokes.len() {
                1 => LegendSample::Solid,
                _ if gaps => LegendSample::Dashed,
                _ => panic!("a sample of strokes without gaps {strokes:?}"),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
