//! A sweep's page in headless Chromium, as a reader sees it: no console message, the page's
//! script ran over the embedded table, every plot is there with drawn data and its axis
//! titles, a plot without data is a note, and a screenshot is taken (beside the page, in a
//! scratch folder).

use serde_json::json;
use storsim_report::{data_marks, render_sweep, Run};
use storsim_sweep::{CdfOp, Cell, PlotSpec, Table};

fn text(s: &str) -> Cell {
    Cell::Text(s.to_string())
}

const FTLS: [&str; 2] = ["page", "fast"];

/// Two FTLs × three over-provisionings × two seeds, a failed point, and 200 more columns of
/// figures (a sweep's table is that wide).
fn table() -> Table {
    let mut columns: Vec<String> = [
        "point",
        "label",
        "status",
        "error",
        "ssd.ftl",
        "ssd.page.overprovisioning",
        "seed",
        "summary.all.latency_ns.p99",
    ]
    .iter()
    .map(|c| c.to_string())
    .collect();
    columns.extend((0..200).map(|i| format!("device.counters.figure_{i}")));
    let mut rows = Vec::new();
    for (f, ftl) in FTLS.iter().enumerate() {
        for op in [0.07, 0.15, 0.28] {
            for seed in [1.0, 2.0] {
                let mut row = vec![
                    text(&format!("{:016x}", rows.len())),
                    text(&format!("{ftl} op={op}")),
                    text("ok"),
                    Cell::Empty,
                    text(ftl),
                    Cell::Number(op),
                    Cell::Number(seed),
                    Cell::Number(1e5 * (f as f64 + 1.0) / op * (1.0 + seed / 10.0)),
                ];
                row.extend((0..200).map(|i| Cell::Number(f64::from(i) * seed)));
                rows.push(row);
            }
        }
    }
    // A failed point's row: only its id, label, status and error (the rest is missing).
    rows.push(vec![
        text("ffffffffffffffff"),
        text("broken"),
        text("failed"),
        text("the device file has no key ssd.x"),
    ]);
    Table { columns, rows }
}

/// Row `row`'s document: a latency CDF and block wear growing with the FTL (and the CDF
/// with the row); none for the failed point.
fn document(row: usize) -> Option<Run> {
    if row >= 12 {
        return None;
    }
    let ftl = (row / 6) as f64;
    let cdf: Vec<_> = (0..=10)
        .map(|i| {
            json!({"fraction": f64::from(i) / 10.0,
                   "latency_ns": 1e4 * (1.0 + ftl + row as f64 / 4.0) * f64::from(i * i + 1)})
        })
        .collect();
    let wear: Vec<u64> = (0..512).map(|b| (b % 7) * (1 + row as u64 / 6)).collect();
    let doc = json!({"schema": 1, "kind": "simulate", "device": {"name": "d", "counters": {},
        "block_wear": [{"unit": "", "erase_counts_per_block": wear}]},
        "workload": {"name": "w"}, "summary": {"latency_cdf": cdf}});
    Some(Run::from_value("point.json", doc).unwrap())
}

#[test]
fn a_sweep_page_renders_in_chromium() {
    let Some(browser) = storsim_testenv::chromium::browser() else {
        return;
    };
    let t = table();
    let seed_1 = vec![("seed".to_string(), Cell::Number(1.0))];
    let plots = [
        PlotSpec::Metric {
            x: "ssd.page.overprovisioning".into(),
            y: "summary.all.latency_ns.p99".into(),
            series: Some("ssd.ftl".into()),
            filter: vec![],
            title: Some("p99 latency vs over-provisioning".into()),
            log_x: false,
            log_y: true,
        },
        PlotSpec::Metric {
            x: "ssd.ftl".into(),
            y: "summary.all.latency_ns.p99".into(),
            series: Some("ssd.page.overprovisioning".into()),
            filter: vec![],
            title: None,
            log_x: false,
            log_y: false,
        },
        PlotSpec::Cdf {
            op: CdfOp::All,
            series: vec!["ssd.ftl".into(), "ssd.page.overprovisioning".into()],
            filter: seed_1.clone(),
            title: None,
        },
        PlotSpec::Wear {
            filter: vec![
                ("seed".to_string(), Cell::Number(1.0)),
                ("ssd.page.overprovisioning".to_string(), Cell::Number(0.15)),
            ],
            title: None,
        },
        PlotSpec::Cdf {
            op: CdfOp::Write,
            series: vec![],
            filter: seed_1,
            title: None,
        },
    ];
    let report = render_sweep(
        "flashsim-ftls",
        "Two FTLs, three over-provisionings.",
        &t,
        &plots,
        &document,
    );
    let dir = tempfile::Builder::new()
        .prefix("storsim-report-sweep-")
        .tempdir()
        .unwrap();
    let page = dir.path().join("sweep.html");
    std::fs::write(&page, &report.html).unwrap();
    let rendered = storsim_testenv::chromium::render(browser, &page, (1600, 2400));
    assert!(
        rendered.console().is_empty(),
        "console messages: {:#?}",
        rendered.console()
    );
    let dom = &rendered.dom;
    assert!(
        dom.contains(&format!("data-points=\"{}\"", t.rows.len())),
        "the page's script did not read the embedded table"
    );
    let expected: [(&str, &[&str]); 5] = [
        // A parameter's column keeps its name; a document field is titled from the field
        // table, in a readable unit.
        (
            "sweep-1-metric",
            &["ssd.page.overprovisioning", "all latency, p99 (ms)"],
        ),
        ("sweep-2-metric", &["ssd.ftl", "all latency, p99 (ms)"]),
        ("sweep-3-cdf", &["latency (µs)", "fraction of requests"]),
        ("sweep-4-wear-1", &["erases of the block", "blocks"]),
        ("sweep-4-wear-2", &["erases of the block", "blocks"]),
    ];
    for (id, axes) in expected {
        let start = dom
            .find(&format!("<svg id=\"{id}\""))
            .unwrap_or_else(|| panic!("no plot {id} in the page"));
        let svg = &dom[start..start + dom[start..].find("</svg>").unwrap()];
        assert!(data_marks(svg) > 0, "plot {id} draws no data");
        for axis in axes {
            assert!(
                svg.contains(axis),
                "plot {id} lacks the axis title {axis:?}"
            );
        }
    }
    // The documents hold no write figures: the write CDF is a note.
    assert!(dom.contains("id=\"fig-sweep-5-cdf\" class=\"no-data\""));
    // Every row and column is in the table, the failed row marked.
    let table_html = &dom[dom.find("id=\"results-table\"").unwrap()..];
    let table_html = &table_html[..table_html.find("</table>").unwrap()];
    assert_eq!(table_html.matches("<tr").count(), t.rows.len() + 1);
    assert_eq!(table_html.matches("<th ").count(), t.columns.len());
    assert_eq!(table_html.matches("class=\"failed\"").count(), 1);
    assert!(page.with_extension("png").exists());
}
