//! The sweep page from hand-made tables and documents: each plot kind draws what its spec
//! selects (lines per series, bars per group, error bars for replicates, a CDF per point, a
//! histogram per point), empty selections become a note, and hostile tables never panic.

use super::*;
use crate::chart::split_at_legend;
use crate::{data_marks, elements, legend_samples, polyline_points, LegendSample};
use serde_json::json;

fn text(s: &str) -> Cell {
    Cell::Text(s.to_string())
}

const FTLS: [&str; 3] = ["page", "dftl", "fast"];
const OPS: [f64; 3] = [0.07, 0.15, 0.28];

/// A sweep's table: 3 FTLs × 3 over-provisionings × 2 block sizes × `seeds` seeds, and one
/// failed point last. The p99 rises with the FTL's index and falls with over-provisioning;
/// each seed adds a little, so that replicates differ.
fn table(seeds: u32) -> Table {
    let columns = [
        "point",
        "label",
        "status",
        "error",
        "device",
        "ssd.ftl",
        "ssd.page.overprovisioning",
        "workload",
        "workload.bs",
        "seed",
        "summary.all.latency_ns.p99",
        "device.counters.flash_erases",
    ];
    let mut rows = Vec::new();
    for (f, ftl) in FTLS.iter().enumerate() {
        for op in OPS {
            for bs in ["4k", "64k"] {
                for seed in 1..=seeds {
                    let id = format!("{:016x}", rows.len());
                    rows.push(vec![
                        text(&id),
                        text(&format!("{ftl} op={op} bs={bs}")),
                        text("ok"),
                        Cell::Empty,
                        text("flashsim-2009"),
                        text(ftl),
                        Cell::Number(op),
                        text("synthetic:rw=randwrite"),
                        text(bs),
                        Cell::Number(f64::from(seed)),
                        Cell::Number(
                            1000.0 * (f as f64 + 1.0) / op * (1.0 + 0.1 * f64::from(seed)),
                        ),
                        Cell::Number(100.0 * (f as f64 + 1.0)),
                    ]);
                }
            }
        }
    }
    let mut failed = vec![Cell::Empty; columns.len()];
    failed[0] = text("ffffffffffffffff");
    failed[2] = text("failed");
    failed[3] = text("the device refused the request");
    failed[5] = text("page");
    failed[6] = Cell::Number(0.07);
    failed[10] = Cell::Number(1e9);
    rows.push(failed);
    Table {
        columns: columns.iter().map(|c| c.to_string()).collect(),
        rows,
    }
}

/// A point's document: a latency CDF and write percentiles scaled by `scale`, and block wear.
fn document(scale: f64, wear: &[u64]) -> Run {
    let dist = json!({"mean": 1000.0 * scale, "min": 100.0 * scale, "p50": 900.0 * scale,
        "p90": 2000.0 * scale, "p99": 5000.0 * scale, "p999": 9000.0 * scale,
        "max": 10000.0 * scale});
    let op = |n: u64| json!({"requests": n, "latency_ns": dist});
    let doc = json!({"schema": 1, "kind": "simulate", "version": "0.1.0", "seed": 1,
        "device": {"name": "flashsim-2009", "counters": {},
                   "block_wear": [{"unit": "", "erase_counts_per_block": wear}]},
        "workload": {"name": "w"},
        "summary": {"requests": 100, "read": op(0), "write": op(100), "latency_ns": dist,
            "latency_cdf": [{"fraction": 0.0, "latency_ns": 100.0 * scale},
                            {"fraction": 0.5, "latency_ns": 900.0 * scale},
                            {"fraction": 1.0, "latency_ns": 10000.0 * scale}]}});
    Run::from_value("point.json", doc).unwrap()
}

/// The documents of `table(seeds)`'s rows: scaled by the FTL, wear spread by it; none for
/// the failed point.
fn points(table: &Table) -> impl Fn(usize) -> Option<Run> + '_ {
    move |row| {
        let ftl = match table.rows.get(row)?.get(5)? {
            Cell::Text(f) => FTLS.iter().position(|x| x == f)?,
            _ => return None,
        };
        if table.rows[row][2] != text("ok") {
            return None;
        }
        let wear: Vec<u64> = (0..64).map(|b| b % (3 + 5 * ftl as u64)).collect();
        Some(document(1.0 + ftl as f64, &wear))
    }
}

fn metric(x: &str, y: &str, series: Option<&str>, filter: Vec<(String, Cell)>) -> PlotSpec {
    PlotSpec::Metric {
        x: x.into(),
        y: y.into(),
        series: series.map(str::to_string),
        filter,
        title: None,
        log_x: false,
        log_y: false,
    }
}

fn bs(value: &str) -> Vec<(String, Cell)> {
    vec![("workload.bs".into(), text(value))]
}

fn plot<'r>(report: &'r Report, id: &str) -> &'r Plot {
    report.plots.iter().find(|p| p.id == id).unwrap_or_else(|| {
        let ids: Vec<&str> = report.plots.iter().map(|p| p.id.as_str()).collect();
        panic!("no plot {id} in {ids:?}")
    })
}

/// The data lines of a line chart: polylines 2 px wide of more than two points (an error
/// bar's stem and caps have two each; the legend is left out).
fn curves(svg: &str) -> Vec<&str> {
    elements(split_at_legend(svg).0, "<polyline")
        .filter(|e| e.contains("stroke-width=\"2\"") && polyline_points(e).len() > 2)
        .collect()
}

/// Whether `svg` has a text element reading `s`.
fn has_text(svg: &str, s: &str) -> bool {
    svg.split("<text").skip(1).any(|e| {
        e.split_once('>')
            .is_some_and(|(_, rest)| rest.split("</text>").next().unwrap().trim() == s)
    })
}

/// The error bars' stems: vertical polylines of two points, 2 px wide.
fn stems(svg: &str) -> usize {
    elements(svg, "<polyline")
        .filter(|e| e.contains("stroke-width=\"2\""))
        .filter(|e| matches!(polyline_points(e)[..], [(x0, y0), (x1, y1)] if x0 == x1 && y0 != y1))
        .count()
}

fn no_points(_: usize) -> Option<Run> {
    None
}

#[test]
fn a_numeric_x_draws_a_line_per_series_with_error_bars_for_replicates() {
    let t = table(3);
    let spec = [metric(
        "ssd.page.overprovisioning",
        "summary.all.latency_ns.p99",
        Some("ssd.ftl"),
        bs("4k"),
    )];
    let report = render_sweep("s", "", &t, &spec, &no_points);
    let p = plot(&report, "sweep-1-metric");
    assert!(data_marks(&p.svg) > 0);
    assert_eq!(curves(&p.svg).len(), FTLS.len(), "{}", p.svg);
    // One error bar per (FTL, over-provisioning): three seeds each.
    assert_eq!(stems(&p.svg), FTLS.len() * OPS.len(), "{}", p.svg);
    for ftl in FTLS {
        assert!(has_text(&p.svg, ftl), "no legend entry {ftl}");
    }
    // The parameter keeps its name; the field is titled by its label, on the axis and in
    // the default title.
    assert!(p.svg.contains("ssd.page.overprovisioning"));
    assert_eq!(p.title, "all latency, p99 vs ssd.page.overprovisioning");
    assert!(report.html.contains("<svg id=\"sweep-1-metric\""));
    let caption = &report.html[report.html.find("id=\"fig-sweep-1-metric\"").unwrap()..];
    assert!(caption.contains("workload.bs = 4k") && caption.contains("replicates"));
    // One seed: no replicates, no error bars, the same lines.
    let single = render_sweep("s", "", &table(1), &spec, &no_points);
    let p = plot(&single, "sweep-1-metric");
    assert_eq!(curves(&p.svg).len(), FTLS.len());
    assert_eq!(stems(&p.svg), 0, "{}", p.svg);
}

#[test]
fn lines_are_sorted_by_x_and_drawn_through_the_mean() {
    // x given out of order, with two replicates at x = 2 (10 and 30: the mean is 20).
    let t = Table {
        columns: vec!["x".into(), "y".into()],
        rows: [(3.0, 30.0), (1.0, 10.0), (2.0, 10.0), (2.0, 30.0)]
            .iter()
            .map(|&(x, y)| vec![Cell::Number(x), Cell::Number(y)])
            .collect(),
    };
    let report = render_sweep("s", "", &t, &[metric("x", "y", None, vec![])], &no_points);
    let svg = &plot(&report, "sweep-1-metric").svg;
    let line = curves(svg)[0];
    let points: Vec<(i64, i64)> = line
        .split("points=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .split_whitespace()
        .map(|p| {
            let (x, y) = p.split_once(',').unwrap();
            (x.parse().unwrap(), y.parse().unwrap())
        })
        .collect();
    assert_eq!(points.len(), 3, "{line}");
    assert!(points.windows(2).all(|w| w[0].0 < w[1].0), "{points:?}");
    // y = 10, 20, 30 at equal steps of x: a straight line, the middle halfway.
    assert!(
        (2 * points[1].1 - points[0].1 - points[2].1).abs() <= 1,
        "{points:?}"
    );
    assert_eq!(stems(svg), 1);
}

#[test]
fn a_text_x_draws_grouped_bars_in_order_of_first_appearance() {
    let t = table(2);
    let spec = [metric(
        "ssd.ftl",
        "device.counters.flash_erases",
        Some("workload.bs"),
        vec![("ssd.page.overprovisioning".into(), Cell::Number(0.15))],
    )];
    let report = render_sweep("s", "", &t, &spec, &no_points);
    let svg = &plot(&report, "sweep-1-metric").svg;
    // Two series (4k, 64k) in each of three groups: six bars (and two legend swatches).
    let bars = svg
        .split("<rect")
        .skip(1)
        .filter(|e| e.contains("fill=\"#0072B2\"") || e.contains("fill=\"#E69F00\""))
        .count();
    assert_eq!(bars, 6 + 2, "{svg}");
    assert!(data_marks(svg) > 0);
    let (page, dftl, fast) = (
        svg.find("\npage\n").unwrap(),
        svg.find("\ndftl\n").unwrap(),
        svg.find("\nfast\n").unwrap(),
    );
    assert!(page < dftl && dftl < fast, "groups out of order");
    // Two seeds with equal erase counts: replicates, whose error bars have no length.
    assert!(report.html.contains("replicates"));
}

#[test]
fn the_filter_keeps_only_matching_rows_numbers_compared_as_numbers() {
    let t = table(1);
    let y = "summary.all.latency_ns.p99";
    let filtered = |filter: Vec<(String, Cell)>| {
        let report = render_sweep(
            "s",
            "",
            &t,
            &[metric(
                "ssd.page.overprovisioning",
                y,
                Some("ssd.ftl"),
                filter,
            )],
            &no_points,
        );
        report.plots.first().map(|p| curves(&p.svg).len())
    };
    assert_eq!(filtered(vec![]), Some(3));
    assert_eq!(filtered(vec![("ssd.ftl".into(), text("dftl"))]), Some(1));
    // The seed column holds 1.0; a filter of 1 (and of "1") selects it.
    assert_eq!(filtered(vec![("seed".into(), Cell::Number(1.0))]), Some(3));
    assert_eq!(filtered(vec![("seed".into(), text("1"))]), Some(3));
    assert_eq!(filtered(vec![("seed".into(), Cell::Number(2.0))]), None);
    assert!(Cell::Bool(true).matches(&text("true")) && text("false").matches(&Cell::Bool(false)));
    assert!(!Cell::Bool(true).matches(&text("1")) && !Cell::Empty.matches(&text("")));
    // Without a filter the failed row (p99 = 1e9) is still left out: the axis stays small.
    let report = render_sweep("s", "", &t, &[metric("seed", y, None, vec![])], &no_points);
    assert!(!plot(&report, "sweep-1-metric").svg.contains("\n1G\n"));
}

#[test]
fn plots_without_data_are_a_note() {
    let t = table(1);
    let spec = [
        metric("seed", "summary.all.latency_ns.p99", None, bs("1m")),
        metric("seed", "no.such.column", None, vec![]),
        metric("seed", "workload", None, vec![]),
        PlotSpec::Cdf {
            op: CdfOp::Read,
            series: vec![],
            filter: vec![],
            title: None,
        },
        PlotSpec::Wear {
            filter: vec![("ssd.ftl".into(), text("none"))],
            title: None,
        },
    ];
    let report = render_sweep("s", "", &t, &spec, &points(&t));
    assert!(report.plots.is_empty(), "{:?}", report.plots[0].id);
    for id in [
        "sweep-1-metric",
        "sweep-2-metric",
        "sweep-3-metric",
        "sweep-4-cdf",
        "sweep-5-wear",
    ] {
        let at = report
            .html
            .find(&format!("<figure id=\"fig-{id}\" class=\"no-data\">"))
            .unwrap_or_else(|| panic!("no note for {id}"));
        let note = &report.html[at..at + report.html[at..].find("</figure>").unwrap()];
        assert!(note.contains("no rows match"), "{note}");
    }
    assert!(report
        .html
        .contains("the table has no column no.such.column"));
    // The documents have no reads: the read CDF says so.
    assert!(report.html.contains("latency CDF of read requests"));
}

#[test]
fn a_metric_plot_without_a_title_is_titled_by_its_axes_labels() {
    let t = Table {
        columns: vec!["workload.requests".into(), "run.end_ns".into()],
        rows: [(100.0, 2e6), (200.0, 4e6)]
            .iter()
            .map(|&(x, y)| vec![Cell::Number(x), Cell::Number(y)])
            .collect(),
    };
    let untitled = metric("workload.requests", "run.end_ns", None, vec![]);
    let report = render_sweep("s", "", &t, &[untitled], &no_points);
    let p = plot(&report, "sweep-1-metric");
    assert_eq!(p.title, "simulated time vs requests in the workload");
    assert!(has_text(&p.svg, "simulated time (ms)"), "{}", p.svg);
    // A title the spec sets is kept as it is.
    let titled = PlotSpec::Metric {
        x: "workload.requests".into(),
        y: "run.end_ns".into(),
        series: None,
        filter: vec![],
        title: Some("run.end_ns vs requests".into()),
        log_x: false,
        log_y: false,
    };
    let report = render_sweep("s", "", &t, &[titled], &no_points);
    assert_eq!(
        plot(&report, "sweep-1-metric").title,
        "run.end_ns vs requests"
    );
}

#[test]
fn a_cdf_plot_draws_one_line_per_selected_point() {
    let t = table(2);
    let spec = [PlotSpec::Cdf {
        op: CdfOp::All,
        series: vec!["ssd.ftl".into(), "workload.bs".into()],
        filter: vec![
            ("seed".into(), Cell::Number(1.0)),
            ("ssd.page.overprovisioning".into(), Cell::Number(0.07)),
        ],
        title: None,
    }];
    let report = render_sweep("s", "", &t, &spec, &points(&t));
    let p = plot(&report, "sweep-1-cdf");
    // 3 FTLs × 2 block sizes; the failed point (over-provisioning 0.07 too) has no seed.
    assert_eq!(curves(&p.svg).len(), 6, "{}", p.svg);
    assert!(
        has_text(&p.svg, "dftl, 64k"),
        "labels join the series columns"
    );
    assert!(p.svg.contains("latency (µs)"));
    // Writes: from the percentiles, one line per point all the same.
    let spec = [PlotSpec::Cdf {
        op: CdfOp::Write,
        series: vec![],
        filter: bs("4k"),
        title: Some("writes".into()),
    }];
    let report = render_sweep("s", "", &t, &spec, &points(&t));
    let p = plot(&report, "sweep-1-cdf");
    // Every line drawn has its legend entry; past the palette's eight colours, the lines
    // and their samples are dashed.
    let samples = legend_samples(&p.svg);
    assert_eq!(samples.len(), CDF_LINES_MAX, "{}", p.svg);
    for (i, sample) in samples.iter().enumerate() {
        let drawn = if i < 8 {
            LegendSample::Solid
        } else {
            LegendSample::Dashed
        };
        assert_eq!(*sample, drawn, "entry {i}");
    }
    // The default label is the label column.
    assert!(has_text(&p.svg, "page op=0.07 bs=4k"), "{}", p.svg);
    // 18 rows selected, 16 drawn: the caption says so.
    assert!(report
        .html
        .contains("only the first 16 of 18 selected points"));
}

#[test]
fn a_wear_plot_draws_a_histogram_per_point_titled_by_its_label() {
    let t = table(1);
    let spec = [PlotSpec::Wear {
        filter: vec![
            ("ssd.page.overprovisioning".into(), Cell::Number(0.28)),
            ("workload.bs".into(), text("4k")),
        ],
        title: None,
    }];
    let report = render_sweep("s", "", &t, &spec, &points(&t));
    let ids: Vec<&str> = report.plots.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids, ["sweep-1-wear-1", "sweep-1-wear-2", "sweep-1-wear-3"]);
    for (p, ftl) in report.plots.iter().zip(FTLS) {
        assert!(data_marks(&p.svg) > 0);
        assert!(
            p.title.ends_with(&format!("{ftl} op=0.28 bs=4k")),
            "{}",
            p.title
        );
        assert!(p.svg.contains("erases of the block"));
        assert!(
            p.source.contains(&format!(" of {ftl} op=0.28 bs=4k;")),
            "{}",
            p.source
        );
    }
    // The points' wear differs: page's counts are 0..2, fast's 0..12.
    assert!(
        report.plots[0].svg.matches("<rect").count() < report.plots[2].svg.matches("<rect").count()
    );
}

#[test]
fn ids_are_unique_and_numbered_in_spec_order() {
    let t = table(2);
    let spec = [
        metric(
            "ssd.page.overprovisioning",
            "summary.all.latency_ns.p99",
            Some("ssd.ftl"),
            vec![],
        ),
        PlotSpec::Wear {
            filter: vec![
                ("seed".into(), Cell::Number(1.0)),
                ("workload.bs".into(), text("4k")),
            ],
            title: Some("Wear".into()),
        },
        PlotSpec::Cdf {
            op: CdfOp::All,
            series: vec![],
            filter: vec![("seed".into(), Cell::Number(2.0))],
            title: None,
        },
        metric("ssd.ftl", "summary.all.latency_ns.p99", None, vec![]),
    ];
    let report = render_sweep("s", "", &t, &spec, &points(&t));
    let mut ids: Vec<&str> = report.plots.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids[0], "sweep-1-metric");
    assert!(ids[1..10].iter().all(|id| id.starts_with("sweep-2-wear-")));
    assert_eq!(ids[10..], ["sweep-3-cdf", "sweep-4-metric"]);
    for p in &report.plots {
        assert!(data_marks(&p.svg) > 0, "{} draws nothing", p.id);
        assert_eq!(
            report
                .html
                .matches(&format!("<svg id=\"{}\"", p.id))
                .count(),
            1
        );
    }
    let n = ids.len();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), n, "ids repeat");
}

#[test]
fn the_page_has_the_title_description_table_and_data() {
    let t = table(1);
    let description = "FlashSim's Figs 6-7 <b>.\n\nA second paragraph.";
    let report = render_sweep("flashsim-ftls", description, &t, &[], &no_points);
    let html = &report.html;
    assert!(html.contains("<h1>flashsim-ftls</h1>"));
    assert!(html.contains("<p class=\"description\">FlashSim&#39;s Figs 6-7 &lt;b&gt;.</p>"));
    assert!(html.contains("<p class=\"description\">A second paragraph.</p>"));
    assert!(html.contains("19 points, 1 of them failed"));
    // The header names every column; every row has a cell per column.
    let table_html = &html[html.find("id=\"results-table\"").unwrap()..];
    let table_html = &table_html[..table_html.find("</table>").unwrap()];
    assert_eq!(table_html.matches("<th ").count(), t.columns.len());
    assert_eq!(
        table_html.matches("<td").count(),
        t.columns.len() * t.rows.len()
    );
    assert_eq!(table_html.matches("<tr class=\"failed\">").count(), 1);
    assert!(table_html.contains("summary.<wbr>all.<wbr>latency_ns.<wbr>p99"));
    // The embedded table reads back.
    let start = html.find("id=\"storsim-sweep\">").unwrap() + "id=\"storsim-sweep\">".len();
    let end = start + html[start..].find("</script>").unwrap();
    let data: Value = serde_json::from_str(&html[start..end]).unwrap();
    assert_eq!(data["columns"][5], "ssd.ftl");
    assert_eq!(data["rows"][0][6], 0.07);
    assert_eq!(data["rows"].as_array().unwrap().len(), t.rows.len());
    // Nothing outside the page.
    for outside in ["http://", "https://", "<link", "src=", "@import", "url("] {
        assert!(
            !html.contains(outside),
            "the page refers outside itself: {outside}"
        );
    }
}

#[test]
fn numbers_are_shown_short() {
    for (v, shown) in [
        (4.0, "4"),
        (-0.0, "0"),
        (0.15, "0.15"),
        (17983850.537342176, "17983851"),
        (0.999229604745, "0.99923"),
        (1.5e-7, "1.5e-7"),
        (1e300, "1e300"),
        (f64::NAN, "NaN"),
        (f64::NEG_INFINITY, "-inf"),
    ] {
        assert_eq!(number_text(v), shown);
    }
    assert_eq!(clip("abcdef", 4), "abc…");
    assert_eq!(clip("abc", 4), "abc");
}

/// Plot specs of every kind over the columns `x` and `y`, series `s`: a plain metric, one
/// with a NaN filter, a huge title and log axes, a CDF and a wear plot.
fn hostile_specs(x: &str, y: &str) -> Vec<PlotSpec> {
    vec![
        metric(x, y, Some("s"), vec![]),
        PlotSpec::Metric {
            x: x.into(),
            y: y.into(),
            series: Some("s".into()),
            filter: vec![("s".into(), Cell::Number(f64::NAN))],
            title: Some("x".repeat(100_000)),
            log_x: true,
            log_y: true,
        },
        PlotSpec::Cdf {
            op: CdfOp::All,
            series: vec!["s".into()],
            filter: vec![],
            title: None,
        },
        PlotSpec::Wear {
            filter: vec![],
            title: None,
        },
    ]
}

/// A point's document of extreme values, varying with `row`: numbers at f64's ends, nulls
/// and text where numbers belong, an erase count past u32.
fn wild_doc(row: usize) -> Option<Run> {
    let v = [
        json!(1e308),
        json!(-1),
        json!(0),
        json!(null),
        json!("x"),
        json!(5e-324),
    ];
    let pick = |k: usize| v[(row * 7 + k) % v.len()].clone();
    let doc = json!({"schema": 1, "kind": "simulate", "device": {"counters": {},
        "block_wear": [{"erase_counts_per_block": [pick(0), pick(1), 4294967296u64]},
                       {"unit": "x.y", "erase_counts_per_block": [pick(2), 3, 5]}]},
        "workload": {}, "summary": {"latency_cdf": [{"latency_ns": pick(3), "fraction": pick(4)},
            {"latency_ns": pick(5), "fraction": 1.0}], "read": {"requests": pick(0)}}});
    Run::from_value("wild.json", doc).ok()
}

#[test]
fn hostile_tables_never_panic() {
    let extremes = [
        Cell::Number(f64::NAN),
        Cell::Number(f64::INFINITY),
        Cell::Number(f64::NEG_INFINITY),
        Cell::Number(-1.0),
        Cell::Number(0.0),
        Cell::Number(1e308),
        Cell::Number(-1e308),
        Cell::Number(5e-324),
        Cell::Empty,
        Cell::Bool(true),
        text(""),
        text(&"<huge>".repeat(2_000)),
    ];
    let mut rng = storsim_core::Prng::new(24);
    let mut pick = || extremes[rng.below(extremes.len() as u64) as usize].clone();
    // An empty table, one without columns, rows shorter and longer than the header.
    let empty = Table::default();
    let report = render_sweep("", "", &empty, &hostile_specs("x", "y"), &no_points);
    assert!(report.html.contains("</html>") && report.plots.is_empty());
    let ragged = Table {
        columns: vec!["x".into(), "y".into(), "s".into()],
        rows: vec![vec![], vec![Cell::Number(1.0)], vec![pick(); 7]],
    };
    render_sweep("t", "d", &ragged, &hostile_specs("x", "y"), &no_points);
    // Thousands of rows of extremes: numeric, text and mixed x, with documents of extremes.
    for round in 0..6 {
        let rows: Vec<Vec<Cell>> = (0..3000)
            .map(|i| match round % 3 {
                0 => vec![pick(), pick(), Cell::Number((i % 250) as f64)],
                1 => vec![text(&format!("{}", i % 300)), pick(), pick()],
                _ => vec![pick(), pick(), pick()],
            })
            .collect();
        let t = Table {
            columns: vec!["x".into(), "y".into(), "s".into()],
            rows,
        };
        let report = render_sweep("t", "d", &t, &hostile_specs("x", "y"), &wild_doc);
        assert!(report.html.contains("</html>"), "round {round}");
    }
}

#[test]
fn huge_cells_and_markup_are_clipped_and_escaped() {
    // Megabytes in one cell of every column.
    let huge = text(&"<x>".repeat(1_000_000));
    let t = Table {
        columns: vec!["x".into(), "y".into(), "s".into(), "label".into()],
        rows: vec![vec![
            huge.clone(),
            Cell::Number(1.0),
            huge.clone(),
            huge.clone(),
        ]],
    };
    let mut spec = hostile_specs("x", "y");
    spec.push(metric(
        "x",
        "y",
        Some("s"),
        vec![("x".into(), huge.clone())],
    ));
    let report = render_sweep("t", "d", &t, &spec, &wild_doc);
    let svg = &plot(&report, "sweep-1-metric").svg;
    assert!(svg.len() < 100_000, "a label drawn in full");
    // The filter matched the huge cell; the caption names it, cut short.
    let figure = &report.html[report.html.find("id=\"fig-sweep-5-metric\"").unwrap()..];
    let caption = &figure[figure.find("<figcaption>").unwrap()..figure.find("</figure>").unwrap()];
    assert!(caption.len() < 10_000, "a filter value shown in full");
    // Columns named like markup are escaped.
    let t = Table {
        columns: vec!["<script>".into(), "y".into()],
        rows: vec![vec![text("</script>"), Cell::Number(1.0)]],
    };
    let report = render_sweep(
        "<t>",
        "",
        &t,
        &[metric("<script>", "y", None, vec![])],
        &no_points,
    );
    assert!(
        !report.html.contains("<script>alert") && !report.html.contains("<th title=\"<script>")
    );
    assert!(report.html.contains("<h1>&lt;t&gt;</h1>"));
}
