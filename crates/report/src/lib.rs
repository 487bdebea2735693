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
/// other than the white background and legend box. Axes, ticks, grid lines and a line
/// legend's marks are not data. For tests that check, in the
/// page as a browser holds it, that a plot is not empty.
pub fn data_marks(svg: &str) -> usize {
    let lines = svg
        .split("<polyline")
        .skip(1)
        .filter(|element| {
            let element = &element[..element.find("/>").unwrap_or(element.len())];
            // Data lines are drawn 2 px wide, axes and ticks 1 px; a legend's mark is a
            // level line 20 px long.
            let points: Vec<(i64, i64)> = element
                .split("points=\"")
                .nth(1)
                .and_then(|p| p.split('"').next())
                .unwrap_or("")
                .split_whitespace()
                .filter_map(|xy| {
                    let (x, y) = xy.split_once(',')?;
                    Some((x.parse().ok()?, y.parse().ok()?))
                })
                .collect();
            let legend_mark =
                points.len() == 2 && points[0].1 == points[1].1 && points[1].0 - points[0].0 == 20;
            element.contains("stroke-width=\"2\"") && points.len() >= 2 && !legend_mark
        })
        .count();
    let markers = svg.matches("<circle").count();
    let shapes = svg
        .split("<rect")
        .skip(1)
        .filter(|element| {
            let element = &element[..element.find("/>").unwrap_or(element.len())];
            !element.contains("fill=\"#FFFFFF\"") && !element.contains("fill=\"none\"")
        })
        .count();
    lines + markers + shapes
}

#[cfg(test)]
mod tests;
