//! The chart shapes the report uses, drawn with plotters' SVG backend: line charts (with
//! optional log axes), grouped bars, histograms and heat maps. Every chart has a title, axis
//! titles with units and, with more than one series, a legend; colours come from the
//! Okabe–Ito palette, which stays distinguishable with the common colour-vision deficiencies.

use plotters::chart::MeshStyle;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;

/// Okabe & Ito's eight colours, in the order series take them (yellow, hard to see on white,
/// last but one).
pub(crate) const PALETTE: [RGBColor; 8] = [
    RGBColor(0x00, 0x72, 0xB2), // blue
    RGBColor(0xE6, 0x9F, 0x00), // orange
    RGBColor(0x00, 0x9E, 0x73), // bluish green
    RGBColor(0xD5, 0x5E, 0x00), // vermillion
    RGBColor(0xCC, 0x79, 0xA7), // reddish purple
    RGBColor(0x56, 0xB4, 0xE9), // sky blue
    RGBColor(0xF0, 0xE4, 0x42), // yellow
    RGBColor(0x00, 0x00, 0x00), // black
];

/// The size of every chart, in CSS pixels.
pub(crate) const SIZE: (u32, u32) = (760, 420);

fn colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// One axis: its title (with the unit) and whether it is logarithmic.
pub(crate) struct Axis {
    pub title: String,
    pub log: bool,
}

impl Axis {
    pub fn linear(title: impl Into<String>) -> Axis {
        Axis {
            title: title.into(),
            log: false,
        }
    }
    pub fn log(title: impl Into<String>) -> Axis {
        Axis {
            title: title.into(),
            log: true,
        }
    }
}

/// A dashed line's dashes and the gaps between them, in pixels: the same in the chart and in
/// its legend, whose [`SAMPLE_PX`] wide sample then shows two dashes and a gap.
const DASH_PX: i32 = 8;
const GAP_PX: i32 = 5;

/// The width of a line's sample in the legend, in pixels: in the 30 px plotters leaves for it.
pub(crate) const SAMPLE_PX: i32 = 20;

/// How a series is drawn.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    Solid,
    Dashed,
    /// Points only: measurements rather than a curve.
    Markers,
    /// Hollow points: measurements set apart (held out of a fit).
    HollowMarkers,
    /// A line through measured points, each point marked: a figure measured at a few
    /// settings (a sweep's), where the line only guides the eye.
    SolidMarkers,
}

/// One series of a line chart.
pub(crate) struct Line {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub colour: usize,
    pub style: Style,
    /// Error bars in the line's colour, each `(x, low, high)`: the spread of replicates
    /// whose mean is the point at `x`.
    pub ranges: Vec<(f64, f64, f64)>,
}

/// Where the legend goes, out of the data's way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Legend {
    UpperLeft,
    UpperRight,
    LowerRight,
    LowerLeft,
    /// The corner where the legend covers the least data: for charts whose data's shape
    /// is not known in advance (a sweep's).
    Auto,
}

impl Legend {
    fn position(self) -> SeriesLabelPosition {
        match self {
            Legend::UpperLeft => SeriesLabelPosition::UpperLeft,
            Legend::UpperRight | Legend::Auto => SeriesLabelPosition::UpperRight,
            Legend::LowerRight => SeriesLabelPosition::LowerRight,
            Legend::LowerLeft => SeriesLabelPosition::LowerLeft,
        }
    }
}

/// The size of a legend box of `names` as fractions of the plotting area's width and height
/// (about 650 × 310 px in a chart of [`SIZE`]): each entry 17 px high, the box 45 px plus
/// 7 px a character wide, in 13 px sans-serif.
fn legend_box<'a>(names: impl Iterator<Item = &'a str>) -> (f64, f64) {
    let (entries, longest) = names.fold((0usize, 0usize), |(n, w), name| {
        (n + 1, w.max(name.chars().count()))
    });
    (
        ((longest * 7 + 45) as f64 / 650.0).min(1.0),
        ((entries * 17 + 14) as f64 / 310.0).min(1.0),
    )
}

/// Where `v` falls along an axis from `lo` to `hi`, 0 to 1.
fn fraction(v: f64, (lo, hi): (f64, f64), log: bool) -> f64 {
    if log {
        (v.log10() - lo.log10()) / (hi.log10() - lo.log10())
    } else {
        (v - lo) / (hi - lo)
    }
}

/// The end of an axis from `lo` to `hi` stretched so that `hi` falls at `1 - by` of it.
fn stretch((lo, hi): (f64, f64), by: f64, log: bool) -> f64 {
    let keep = (1.0 - by).max(0.2);
    if log {
        10f64.powf(lo.log10() + (hi.log10() - lo.log10()) / keep)
    } else {
        lo + (hi - lo) / keep
    }
}

/// Where an [`Legend::Auto`] legend goes on a line chart with axes `x` and `y`, and the
/// axes' ends that make room for it: a corner whose legend box would cover no data (the
/// points, and the lines between them sampled along their length), in the order upper
/// right, upper left, lower right, lower left; else the upper right, the axis that needs
/// the least stretching (x to the right, or y upwards) stretched until the data ends clear
/// of the box.
fn free_corner(
    chart: &XyChart,
    x: (f64, f64),
    y: (f64, f64),
    keep: impl Fn(&(f64, f64)) -> bool,
) -> (Legend, f64, f64) {
    let (w, h) = legend_box(
        chart
            .lines
            .iter()
            .filter(|l| !l.name.is_empty())
            .map(|l| l.name.as_str()),
    );
    let at = |p: &(f64, f64)| (fraction(p.0, x, chart.x.log), fraction(p.1, y, chart.y.log));
    let mut samples = Vec::new();
    for line in &chart.lines {
        let points: Vec<(f64, f64)> = line.points.iter().filter(|p| keep(p)).map(at).collect();
        samples.extend(points.iter().copied());
        if matches!(line.style, Style::Markers | Style::HollowMarkers) {
            continue;
        }
        const STEPS: usize = 16;
        for pair in points.windows(2) {
            let ((x0, y0), (x1, y1)) = (pair[0], pair[1]);
            samples.extend((1..STEPS).map(|k| {
                let t = k as f64 / STEPS as f64;
                (x0 + (x1 - x0) * t, y0 + (y1 - y0) * t)
            }));
        }
        for &(rx, lo, hi) in &line.ranges {
            if keep(&(rx, lo)) && keep(&(rx, hi)) {
                samples.extend([at(&(rx, lo)), at(&(rx, hi))]);
            }
        }
    }
    let corners = [
        (Legend::UpperRight, (1.0 - w, 1.0), (1.0 - h, 1.0)),
        (Legend::UpperLeft, (0.0, w), (1.0 - h, 1.0)),
        (Legend::LowerRight, (1.0 - w, 1.0), (0.0, h)),
        (Legend::LowerLeft, (0.0, w), (0.0, h)),
    ];
    let covered = |(xs, ys): ((f64, f64), (f64, f64))| {
        samples
            .iter()
            .filter(|(px, py)| (xs.0..=xs.1).contains(px) && (ys.0..=ys.1).contains(py))
            .count()
    };
    if let Some(corner) = corners.iter().find(|(_, xs, ys)| covered((*xs, *ys)) == 0) {
        return (corner.0, x.1, y.1);
    }
    if w <= h {
        (Legend::UpperRight, stretch(x, w, chart.x.log), y.1)
    } else {
        (Legend::UpperRight, x.1, stretch(y, h, chart.y.log))
    }
}

/// A chart of lines and points over two numeric axes.
pub(crate) struct XyChart {
    pub title: String,
    pub x: Axis,
    pub y: Axis,
    pub lines: Vec<Line>,
    pub legend: Legend,
}

/// A bar chart: one group of bars per category, one bar per series in each.
pub(crate) struct Bars {
    pub title: String,
    pub x_title: String,
    pub y: Axis,
    pub categories: Vec<String>,
    /// Each series' name and its value per category.
    pub series: Vec<(String, Vec<f64>)>,
    /// Error bars: per series, per category, the `(low, high)` spread of the replicates the
    /// bar is the mean of. Empty, or shorter than `series`, where there are none.
    pub ranges: Vec<Vec<Option<(f64, f64)>>>,
}

/// A histogram over a numeric axis: bins of `[lo, hi)` with a count each.
pub(crate) struct Histogram {
    pub title: String,
    pub x_title: String,
    pub y_title: String,
    pub bins: Vec<(f64, f64, f64)>,
    pub colour: usize,
}

/// A heat map: rows (dies, channels) over columns (time windows), each cell a fraction 0..1.
pub(crate) struct Heat {
    pub title: String,
    pub x_title: String,
    pub y_title: String,
    /// The columns' edges on the x axis: one more than columns.
    pub x_edges: Vec<f64>,
    /// `rows[r][c]`: the value of row `r` in column `c`, `None` where unknown.
    pub rows: Vec<Vec<Option<f64>>>,
    /// What the colour means, with its unit.
    pub value_title: String,
}

/// A tick label: short, without trailing zeros, with k/M/G for large values.
pub(crate) fn tick(v: f64) -> String {
    let a = v.abs();
    let (scaled, suffix) = if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e4 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let digits = if scaled.abs() >= 100.0 || scaled == scaled.round() {
        0
    } else if scaled.abs() >= 10.0 {
        1
    } else if scaled.abs() >= 0.1 {
        2
    } else {
        4
    };
    let mut s = format!("{scaled:.digits$}");
    if s.contains('.') {
        s = s.trim_end_matches('0').trim_end_matches('.').to_string();
    }
    format!("{s}{suffix}")
}

type Root<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// Renders `draw` into an SVG string of [`SIZE`].
fn svg(draw: impl FnOnce(&Root) -> Result<(), String>) -> String {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, SIZE).into_drawing_area();
        // The SVG backend writes to a String, which cannot fail; a drawing error is a bug here.
        root.fill(&WHITE).expect("drawing into a string");
        draw(&root).expect("drawing into a string");
        root.present().expect("drawing into a string");
    }
    out
}

fn title_font() -> TextStyle<'static> {
    ("sans-serif", 20).into_font().into()
}

/// A range that shows every value with a little room, and is never empty.
fn padded(lo: f64, hi: f64, log: bool) -> (f64, f64) {
    if log {
        // Whole decades, so that the axis always has labelled powers of ten.
        let lo = 10f64.powf(lo.log10().floor());
        let hi = 10f64.powf(hi.log10().ceil());
        if hi <= lo {
            // Every value is the same power of ten: a decade on each side, so that the line
            // is in the middle rather than on the frame.
            (lo / 10.0, lo * 10.0)
        } else {
            (lo, hi)
        }
    } else if hi <= lo && lo >= 0.0 {
        (0.0, lo + 1.0)
    } else if hi <= lo {
        (lo - 1.0, hi + 1.0)
    } else {
        let pad = (hi - lo) * 0.05;
        (
            if lo >= 0.0 && lo - pad < 0.0 {
                0.0
            } else {
                lo - pad
            },
            hi + pad,
        )
    }
}

/// The most decades a log axis spans: enough for any latency or size storsim reports (1 ns to
/// hours in µs is 13), and a bound on the tick marks a hostile document could ask for.
const LOG_DECADES_MAX: f64 = 15.0;

/// The largest magnitude an axis shows: far beyond any real figure, and small enough that
/// the axis' arithmetic (padding, tick steps) stays finite.
const MAGNITUDE_MAX: f64 = 1e100;

/// Whether an axis shows `v`: a finite value of a sane magnitude, above zero on a log axis.
fn shown(v: f64, log: bool) -> bool {
    v.is_finite() && v.abs() <= MAGNITUDE_MAX && (!log || v >= 1.0 / MAGNITUDE_MAX)
}

fn bounds<'a>(values: impl Iterator<Item = &'a f64>, log: bool) -> (f64, f64) {
    let (lo, mut hi) = values
        .filter(|v| shown(**v, log))
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(*v), hi.max(*v))
        });
    if lo > hi {
        return if log { (1.0, 10.0) } else { (0.0, 1.0) };
    }
    let mut lo = lo;
    if log {
        // Values more than LOG_DECADES_MAX below the largest fall off the axis's bottom.
        lo = lo.max(hi / 10f64.powf(LOG_DECADES_MAX));
        hi = hi.max(lo);
    }
    padded(lo, hi, log)
}

/// Draws an [`XyChart`]. Points a log axis cannot show (zero or below) are left out.
pub(crate) fn xy(chart: &XyChart) -> String {
    let keep = |(x, y): &(f64, f64)| shown(*x, chart.x.log) && shown(*y, chart.y.log);
    // The error bars' ends are points the axes must show too.
    let all_points = || {
        chart.lines.iter().flat_map(|l| {
            l.points
                .iter()
                .copied()
                .chain(l.ranges.iter().flat_map(|&(x, lo, hi)| [(x, lo), (x, hi)]))
        })
    };
    let xs: Vec<f64> = all_points().filter(|p| keep(p)).map(|p| p.0).collect();
    let ys: Vec<f64> = all_points().filter(|p| keep(p)).map(|p| p.1).collect();
    let (x0, x1) = bounds(xs.iter(), chart.x.log);
    let (y0, y1) = bounds(ys.iter(), chart.y.log);
    let named = chart.lines.iter().filter(|l| !l.name.is_empty()).count();
    let (legend, x1, y1) = match chart.legend {
        Legend::Auto if named > 1 => free_corner(chart, (x0, x1), (y0, y1), keep),
        fixed => (fixed, x1, y1),
    };
    svg(|root| match (chart.x.log, chart.y.log) {
        (false, false) => xy_in(root, chart, x0..x1, y0..y1, keep, legend),
        (true, false) => xy_in(root, chart, (x0..x1).log_scale(), y0..y1, keep, legend),
        (false, true) => xy_in(root, chart, x0..x1, (y0..y1).log_scale(), keep, legend),
        (true, true) => xy_in(
            root,
            chart,
            (x0..x1).log_scale(),
            (y0..y1).log_scale(),
            keep,
            legend,
        ),
    })
}

fn xy_in<X, Y>(
    root: &Root,
    chart: &XyChart,
    x: X,
    y: Y,
    keep: impl Fn(&(f64, f64)) -> bool,
    legend: Legend,
) -> Result<(), String>
where
    X: AsRangedCoord<Value = f64>,
    Y: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let mut ctx = ChartBuilder::on(root)
        .caption(&chart.title, title_font())
        .margin(12)
        .margin_right(28)
        .x_label_area_size(48)
        .y_label_area_size(72)
        .build_cartesian_2d(x, y)
        .map_err(|e| e.to_string())?;
    let mut mesh = ctx.configure_mesh();
    common_mesh(&mut mesh, &chart.x.title, &chart.y.title);
    mesh.x_label_formatter(&|v| tick(*v))
        .y_label_formatter(&|v| tick(*v))
        .draw()
        .map_err(|e| e.to_string())?;
    for line in &chart.lines {
        let c = colour(line.colour);
        let points: Vec<(f64, f64)> = line.points.iter().copied().filter(&keep).collect();
        let whiskers = line
            .ranges
            .iter()
            .filter(|&&(x, lo, hi)| keep(&(x, lo)) && keep(&(x, hi)))
            .copied();
        draw_error_bars(&mut ctx, whiskers, c)?;
        let drawn = match line.style {
            Style::Solid => ctx.draw_series(LineSeries::new(points, c.stroke_width(2))),
            Style::Dashed => ctx.draw_series(DashedLineSeries::new(
                points,
                DASH_PX,
                GAP_PX,
                c.stroke_width(2),
            )),
            Style::Markers => {
                ctx.draw_series(points.into_iter().map(|p| Circle::new(p, 4, c.filled())))
            }
            Style::HollowMarkers => ctx.draw_series(
                points
                    .into_iter()
                    .map(|p| Circle::new(p, 5, c.stroke_width(2))),
            ),
            Style::SolidMarkers => {
                ctx.draw_series(LineSeries::new(points.clone(), c.stroke_width(2)))
                    .map_err(|e| e.to_string())?;
                ctx.draw_series(points.into_iter().map(|p| Circle::new(p, 4, c.filled())))
            }
        }
        .map_err(|e| e.to_string())?;
        // A series without a name stays out of the legend (one legend entry can stand for
        // several series, as "held out" for every pattern's hollow points).
        if line.name.is_empty() {
            continue;
        }
        let style = line.style;
        drawn.label(&line.name).legend(move |(lx, ly)| {
            // The sample is drawn as the series is, so that a dashed series and a solid
            // one of the same colour ("reader alone" and "reader") tell apart.
            let (line, mid) = (
                vec![(lx, ly), (lx + SAMPLE_PX, ly)],
                (lx + SAMPLE_PX / 2, ly),
            );
            match style {
                // A line with markers shows its line only: an element composed of a line
                // and a marker names the backend's type, whose borrow of the page is shorter
                // than plotters' legend asks of its elements ('static).
                Style::Solid | Style::SolidMarkers => {
                    PathElement::new(line, c.stroke_width(2)).into_dyn()
                }
                Style::Dashed => {
                    DashedPathElement::new(line, DASH_PX, GAP_PX, c.stroke_width(2)).into_dyn()
                }
                Style::Markers => Circle::new(mid, 4, c.filled()).into_dyn(),
                Style::HollowMarkers => Circle::new(mid, 5, c.stroke_width(2)).into_dyn(),
            }
        });
    }
    if chart.lines.iter().filter(|l| !l.name.is_empty()).count() > 1 {
        draw_legend(&mut ctx, legend.position())?;
    }
    Ok(())
}

/// What every chart's axes share: their titles, the fonts, and faint grid lines. The caller
/// adds its label formatters (and what it leaves out) and draws.
fn common_mesh<X: Ranged, Y: Ranged>(
    mesh: &mut MeshStyle<'_, '_, X, Y, SVGBackend<'_>>,
    x_title: &str,
    y_title: &str,
) {
    mesh.x_desc(x_title)
        .y_desc(y_title)
        .axis_desc_style(("sans-serif", 15))
        .label_style(("sans-serif", 13))
        .light_line_style(RGBColor(0, 0, 0).mix(0.04))
        .bold_line_style(RGBColor(0, 0, 0).mix(0.12));
}

/// Draws error bars in colour `c`, each `(x, low, high)`: a vertical line with a cap at
/// either end.
fn draw_error_bars<'a, CT>(
    ctx: &mut ChartContext<'a, SVGBackend<'a>, CT>,
    bars: impl Iterator<Item = (f64, f64, f64)> + Clone,
    c: RGBColor,
) -> Result<(), String>
where
    CT: CoordTranslate<From = (f64, f64)>,
{
    let style = c.stroke_width(2);
    ctx.draw_series(
        bars.clone()
            .map(|(x, lo, hi)| PathElement::new(vec![(x, lo), (x, hi)], style)),
    )
    .map_err(|e| e.to_string())?;
    // The caps are 10 px wide whatever the axis' scale: an offset from the bar's end.
    let cap =
        |at: (f64, f64)| EmptyElement::at(at) + PathElement::new(vec![(-5, 0), (5, 0)], style);
    ctx.draw_series(bars.flat_map(|(x, lo, hi)| [cap((x, lo)), cap((x, hi))]))
        .map_err(|e| e.to_string())?;
    Ok(())
}

/// The opacity of the legend box's white background: enough to read the legend over data
/// lines, which still show through.
const LEGEND_OPACITY: f64 = 0.85;

/// The legend box of the labelled series, the same in every chart.
fn draw_legend<'a, CT: CoordTranslate>(
    ctx: &mut ChartContext<'a, SVGBackend<'a>, CT>,
    position: SeriesLabelPosition,
) -> Result<(), String> {
    ctx.configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(LEGEND_OPACITY))
        .border_style(RGBColor(0, 0, 0).mix(0.3))
        .label_font(("sans-serif", 13))
        .draw()
        .map_err(|e| e.to_string())
}

/// A chart's SVG split where its legend box begins: what is drawn before (the data, axes and
/// grid) and the legend (its box, marks and names), which every chart draws last. A chart
/// without a legend is all before.
pub(crate) fn split_at_legend(svg: &str) -> (&str, &str) {
    let background = format!("opacity=\"{LEGEND_OPACITY}\" fill=\"#FFFFFF\"");
    let legend_box = svg.match_indices("<rect").map(|(at, _)| at).find(|&at| {
        let rect = &svg[at..];
        rect[..rect.find('>').unwrap_or(rect.len())].contains(&background)
    });
    match legend_box {
        Some(at) => svg.split_at(at),
        None => (svg, ""),
    }
}

/// Draws [`Bars`]: the categories along x, a group of bars in each.
pub(crate) fn bars(chart: &Bars) -> String {
    let values: Vec<f64> = chart
        .series
        .iter()
        .flat_map(|s| s.1.iter().copied())
        .chain(
            chart
                .ranges
                .iter()
                .flatten()
                .flatten()
                .flat_map(|r| [r.0, r.1]),
        )
        .collect();
    let (mut y0, mut y1) = bounds(values.iter(), chart.y.log);
    if !chart.y.log {
        y0 = y0.min(0.0);
    }
    let legend = if chart.series.len() > 1 {
        let (legend, top) = bars_legend(chart, (y0, y1));
        y1 = top;
        legend
    } else {
        Legend::UpperRight
    };
    svg(|root| {
        if chart.y.log {
            bars_in(root, chart, (y0..y1).log_scale(), y0, legend)
        } else {
            bars_in(root, chart, y0..y1, 0.0, legend)
        }
    })
}

/// Where a bar chart's legend goes, and the y axis' top that leaves room for it: an upper
/// corner no bar (or error bar) reaches into, else the upper right over an axis raised until
/// the bars end below the legend.
fn bars_legend(chart: &Bars, (y0, y1): (f64, f64)) -> (Legend, f64) {
    let (w, h) = legend_box(chart.series.iter().map(|s| s.0.as_str()));
    let n = chart.categories.len().max(1) as f64;
    let width = 0.8 / chart.series.len().max(1) as f64;
    // Each bar's extent across the axis (0 to 1) and its top (0 to 1, and beyond for a
    // value the axis would not show).
    let mut tops = Vec::new();
    for (s, (_, values)) in chart.series.iter().enumerate() {
        for (i, v) in values.iter().enumerate() {
            let range_top = chart
                .ranges
                .get(s)
                .and_then(|r| r.get(i).copied().flatten())
                .map_or(f64::NEG_INFINITY, |r| r.1);
            let top = v.max(range_top);
            if !shown(top, chart.y.log) {
                continue;
            }
            let left = (i as f64 - 0.4 + width * s as f64 + 0.5) / n;
            tops.push((left, left + width / n, fraction(top, (y0, y1), chart.y.log)));
        }
    }
    let free = |(from, to): (f64, f64)| {
        !tops
            .iter()
            .any(|&(l, r, t)| l < to && r > from && t > 1.0 - h)
    };
    if free((1.0 - w, 1.0)) {
        return (Legend::UpperRight, y1);
    }
    if free((0.0, w)) {
        return (Legend::UpperLeft, y1);
    }
    (Legend::UpperRight, stretch((y0, y1), h, chart.y.log))
}

fn bars_in<Y>(root: &Root, chart: &Bars, y: Y, base: f64, legend: Legend) -> Result<(), String>
where
    Y: AsRangedCoord<Value = f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    // Category i is centred on x = i; the ticks fall on whole numbers, which name categories.
    let n = chart.categories.len();
    let mut ctx = ChartBuilder::on(root)
        .caption(&chart.title, title_font())
        .margin(12)
        .margin_right(28)
        .x_label_area_size(48)
        .y_label_area_size(72)
        .build_cartesian_2d(-0.5..n as f64 - 0.5, y)
        .map_err(|e| e.to_string())?;
    let names = &chart.categories;
    let mut mesh = ctx.configure_mesh();
    common_mesh(&mut mesh, &chart.x_title, &chart.y.title);
    mesh.disable_x_mesh()
        .x_labels(n)
        .x_label_formatter(&|v| {
            let i = v.round();
            if (v - i).abs() < 1e-6 && i >= 0.0 {
                names.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_label_formatter(&|v| tick(*v))
        .draw()
        .map_err(|e| e.to_string())?;
    let groups = chart.series.len().max(1) as f64;
    let width = 0.8 / groups;
    for (s, (name, values)) in chart.series.iter().enumerate() {
        let c = colour(s);
        let rects = values
            .iter()
            .enumerate()
            // A log axis has no room below its base; a linear one draws negative bars down.
            .filter(|(_, v)| {
                shown(**v, chart.y.log) && if chart.y.log { **v > base } else { **v != base }
            })
            .map(|(i, v)| {
                let x0 = i as f64 - 0.4 + width * s as f64;
                Rectangle::new([(x0, base), (x0 + width, *v)], c.filled())
            });
        ctx.draw_series(rects)
            .map_err(|e| e.to_string())?
            .label(name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 14, y + 6)], c.filled()));
    }
    // Error bars over the bars, in black: a bar's own colour would vanish against it.
    let whiskers: Vec<(f64, f64, f64)> = chart
        .ranges
        .iter()
        .enumerate()
        .flat_map(|(s, per_category)| {
            per_category.iter().enumerate().filter_map(move |(i, r)| {
                let (lo, hi) = (*r)?;
                let centre = i as f64 - 0.4 + width * (s as f64 + 0.5);
                let drawn = |v: f64| shown(v, chart.y.log) && (!chart.y.log || v > base);
                (drawn(lo) && drawn(hi)).then_some((centre, lo, hi))
            })
        })
        .collect();
    draw_error_bars(&mut ctx, whiskers.into_iter(), PALETTE[7])?;
    if chart.series.len() > 1 {
        draw_legend(&mut ctx, legend.position())?;
    }
    Ok(())
}

/// Draws a [`Histogram`].
pub(crate) fn histogram(chart: &Histogram) -> String {
    let finite = |v: f64, default: f64| if v.is_finite() { v } else { default };
    let lo = finite(chart.bins.first().map_or(0.0, |b| b.0), 0.0);
    let hi = finite(chart.bins.last().map_or(1.0, |b| b.1), lo + 10.0).max(lo + 10.0);
    let top = finite(chart.bins.iter().map(|b| b.2).fold(0.0, f64::max), 1.0).max(1.0) * 1.08;
    let c = colour(chart.colour);
    svg(|root| {
        let mut ctx = ChartBuilder::on(root)
            .caption(&chart.title, title_font())
            .margin(12)
            .margin_right(28)
            .x_label_area_size(48)
            .y_label_area_size(72)
            .build_cartesian_2d(lo..hi, 0.0..top)
            .map_err(|e| e.to_string())?;
        let mut mesh = ctx.configure_mesh();
        common_mesh(&mut mesh, &chart.x_title, &chart.y_title);
        mesh.disable_x_mesh()
            .x_label_formatter(&|v| tick(*v))
            .y_label_formatter(&|v| tick(*v))
            .draw()
            .map_err(|e| e.to_string())?;
        ctx.draw_series(
            chart
                .bins
                .iter()
                .filter(|b| b.2 > 0.0)
                .map(|&(a, b, n)| Rectangle::new([(a, 0.0), (b, n)], c.filled())),
        )
        .map_err(|e| e.to_string())?;
        Ok(())
    })
}

/// Viridis, sampled: a sequential scale readable in grey and by colour-blind readers.
const VIRIDIS: [(u8, u8, u8); 5] = [
    (0x44, 0x01, 0x54),
    (0x3B, 0x52, 0x8B),
    (0x21, 0x90, 0x8C),
    (0x5D, 0xC8, 0x63),
    (0xFD, 0xE7, 0x25),
];

/// The colour of `t` in 0..1, in 64 steps (finer steps no reader tells apart).
fn viridis(t: f64) -> RGBColor {
    let t = (t.clamp(0.0, 1.0) * 64.0).round() / 64.0 * (VIRIDIS.len() - 1) as f64;
    let i = (t.floor() as usize).min(VIRIDIS.len() - 2);
    let f = t - i as f64;
    let mix = |a: u8, b: u8| (f64::from(a) + (f64::from(b) - f64::from(a)) * f).round() as u8;
    let (a, b) = (VIRIDIS[i], VIRIDIS[i + 1]);
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// Draws a [`Heat`] map, with a colour bar on the right.
pub(crate) fn heat(chart: &Heat) -> String {
    let x0 = chart.x_edges.first().copied().unwrap_or(0.0);
    let x1 = chart.x_edges.last().copied().unwrap_or(1.0).max(x0 + 1.0);
    let rows = chart.rows.len().max(1);
    svg(|root| {
        let (plot, bar) = root.split_horizontally(SIZE.0 - 90);
        let mut ctx = ChartBuilder::on(&plot)
            .caption(&chart.title, title_font())
            .margin(12)
            .margin_right(28)
            .x_label_area_size(48)
            .y_label_area_size(72)
            .build_cartesian_2d(x0..x1, 0.0..rows as f64)
            .map_err(|e| e.to_string())?;
        let mut mesh = ctx.configure_mesh();
        common_mesh(&mut mesh, &chart.x_title, &chart.y_title);
        mesh.disable_mesh()
            .x_label_formatter(&|v| tick(*v))
            .y_label_formatter(&|v| format!("{}", v.floor()))
            .y_labels(rows.min(16))
            .draw()
            .map_err(|e| e.to_string())?;
        // Neighbouring cells of a row with the same colour are drawn as one rectangle: a busy
        // die is one bar rather than a hundred, which keeps the page light.
        let mut cells = Vec::new();
        for (r, row) in chart.rows.iter().enumerate() {
            let mut c = 0;
            while c < row.len() {
                let Some(v) = row[c] else {
                    c += 1;
                    continue;
                };
                let colour = viridis(v);
                let mut end = c + 1;
                while end < row.len() && row[end].map(viridis) == Some(colour) {
                    end += 1;
                }
                let (a, b) = (chart.x_edges[c], chart.x_edges[end]);
                cells.push(Rectangle::new(
                    [(a, r as f64), (b, r as f64 + 1.0)],
                    colour.filled(),
                ));
                c = end;
            }
        }
        ctx.draw_series(cells).map_err(|e| e.to_string())?;
        // The colour bar: 0 at the bottom, 1 at the top.
        let (top, bottom, steps) = (60, SIZE.1 as i32 - 70, 40);
        for i in 0..steps {
            let t = i as f64 / f64::from(steps - 1);
            let y = bottom - ((bottom - top) * i) / steps;
            let h = (bottom - top) / steps + 1;
            bar.draw(&Rectangle::new([(10, y - h), (30, y)], viridis(t).filled()))
                .map_err(|e| e.to_string())?;
        }
        for (label, y) in [("1", top), ("0.5", (top + bottom) / 2), ("0", bottom)] {
            bar.draw(&Text::new(label, (34, y - 8), ("sans-serif", 13)))
                .map_err(|e| e.to_string())?;
        }
        bar.draw(&Text::new(
            chart.value_title.clone(),
            (4, top - 30),
            ("sans-serif", 13),
        ))
        .map_err(|e| e.to_string())?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_short() {
        assert_eq!(tick(0.0), "0");
        assert_eq!(tick(1.5), "1.5");
        assert_eq!(tick(250.0), "250");
        assert_eq!(tick(12_000.0), "12k");
        assert_eq!(tick(2_500_000.0), "2.5M");
        assert_eq!(tick(0.001), "0.001");
    }

    #[test]
    fn an_auto_legend_finds_a_free_corner_or_makes_room() {
        let chart = |lines: [Vec<(f64, f64)>; 2]| XyChart {
            title: "T".into(),
            x: Axis::linear("x"),
            y: Axis::linear("y"),
            lines: lines
                .into_iter()
                .zip(["a", "b"])
                .map(|(points, name)| Line {
                    name: name.into(),
                    points,
                    colour: 0,
                    style: Style::Solid,
                    ranges: Vec::new(),
                })
                .collect(),
            legend: Legend::Auto,
        };
        let keep = |_: &(f64, f64)| true;
        let axes = ((0.0, 10.0), (0.0, 10.0));
        // Rising lines cover the upper right and the lower left.
        let rising = chart([
            vec![(0.0, 0.0), (10.0, 10.0)],
            vec![(0.0, 1.0), (10.0, 9.0)],
        ]);
        assert_eq!(
            free_corner(&rising, axes.0, axes.1, keep),
            (Legend::UpperLeft, 10.0, 10.0)
        );
        // Lines along the top and the bottom cover every corner: the x axis (the legend is
        // narrower than tall) grows to the right, the legend beyond the data.
        let flat = chart([
            vec![(0.0, 10.0), (10.0, 10.0)],
            vec![(0.0, 0.0), (10.0, 0.0)],
        ]);
        let (legend, x1, y1) = free_corner(&flat, axes.0, axes.1, keep);
        assert_eq!((legend, y1), (Legend::UpperRight, 10.0));
        assert!(x1 > 10.5, "{x1}");
        let svg = xy(&flat);
        assert!(svg.contains("<polyline"), "{svg}");
    }

    #[test]
    fn a_bar_charts_legend_goes_where_the_bars_are_low() {
        let chart = |values: [f64; 2]| Bars {
            title: "T".into(),
            x_title: "x".into(),
            y: Axis::linear("y"),
            categories: vec!["a".into(), "b".into()],
            series: vec![("s".into(), values.to_vec()), ("t".into(), values.to_vec())],
            ranges: Vec::new(),
        };
        assert_eq!(
            bars_legend(&chart([1.0, 10.0]), (0.0, 10.0)),
            (Legend::UpperLeft, 10.0)
        );
        assert_eq!(
            bars_legend(&chart([10.0, 1.0]), (0.0, 10.0)),
            (Legend::UpperRight, 10.0)
        );
        // Tall on both sides: the axis grows until the bars end below the legend.
        let (legend, top) = bars_legend(&chart([10.0, 10.0]), (0.0, 10.0));
        assert_eq!(legend, Legend::UpperRight);
        assert!(top > 11.0, "{top}");
    }

    #[test]
    fn a_legend_draws_each_lines_sample_as_the_line_is_drawn() {
        let line = |name: &str, style| Line {
            name: name.into(),
            points: vec![(0.0, 0.0), (1.0, 0.5), (10.0, 1.0)],
            colour: 0,
            style,
            ranges: Vec::new(),
        };
        // A flow shared and alone: the same colour, told apart by the dashes alone.
        let svg = xy(&XyChart {
            title: "T".into(),
            x: Axis::linear("x"),
            y: Axis::linear("y"),
            lines: vec![
                line("reader", Style::Solid),
                line("reader alone", Style::Dashed),
                line("measured", Style::Markers),
                line("fitted", Style::SolidMarkers),
            ],
            legend: Legend::LowerRight,
        });
        use crate::LegendSample::{Dashed, Solid};
        assert_eq!(crate::legend_samples(&svg), [Solid, Dashed, Solid], "{svg}");
        // The dashed sample's dashes and gaps are the line's.
        let (_, legend) = split_at_legend(&svg);
        let dashes: Vec<Vec<(i64, i64)>> = crate::elements(legend, "<polyline")
            .map(crate::polyline_points)
            .filter(|p| p[1].0 - p[0].0 < SAMPLE_PX.into())
            .collect();
        assert_eq!(dashes.len(), 2, "{legend}");
        assert_eq!(dashes[0][1].0 - dashes[0][0].0, i64::from(DASH_PX));
        assert_eq!(dashes[1][0].0 - dashes[0][1].0, i64::from(GAP_PX));
        // The markers' entry is its marker, not a line.
        assert_eq!(legend.matches("<circle").count(), 1, "{legend}");
    }

    #[test]
    fn a_line_chart_has_its_title_axes_and_a_path_per_series() {
        let s = xy(&XyChart {
            title: "T".into(),
            x: Axis::log("latency (µs)"),
            y: Axis::linear("fraction"),
            lines: vec![
                Line {
                    name: "a".into(),
                    points: vec![(0.0, 0.0), (1.0, 0.5), (10.0, 1.0)],
                    colour: 0,
                    style: Style::Solid,
                    ranges: Vec::new(),
                },
                Line {
                    name: "b".into(),
                    points: vec![(2.0, 0.5), (20.0, 1.0)],
                    colour: 1,
                    style: Style::Markers,
                    ranges: Vec::new(),
                },
            ],
            legend: Legend::LowerRight,
        });
        assert!(s.starts_with("<svg"), "{s}");
        assert!(s.contains("latency (µs)") && s.contains("fraction"));
        assert!(s.contains("<polyline"), "{s}");
        assert!(s.contains("<circle"), "{s}");
    }
}
