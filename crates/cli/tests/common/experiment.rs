//! What the experiments' tests share (`experiments/NAME/`, `tests/experiment_NAME.rs`): running
//! a script or a sweep spec at the quick size with the debug binary, and reading a sweep's
//! `results.csv` by column.

use super::{repo_root, stderr, storsim};
use std::path::Path;
use std::process::Command;

/// Runs an experiment script (a path from the repository root) at the quick size into `out`,
/// with this build's binary as `STORSIM`.
pub fn run_script(script: &str, out: &Path) {
    let o = Command::new("bash")
        .arg(repo_root().join(script))
        .arg("quick")
        .arg(out)
        .env("STORSIM", env!("CARGO_BIN_EXE_storsim"))
        .output()
        .expect("bash runs");
    assert!(
        o.status.success(),
        "{script} failed: {}\n{}",
        String::from_utf8_lossy(&o.stdout),
        stderr(&o)
    );
}

/// Runs a sweep spec (a path from the repository root) at the quick size into `out` and
/// returns its results table; every point must have succeeded and the report page (the spec's
/// plots) must be there.
pub fn run_sweep(spec: &str, out: &Path) -> Results {
    let o = storsim(&[
        "sweep",
        spec,
        "--size",
        "quick",
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(o.status.success(), "sweep {spec} failed: {}", stderr(&o));
    assert!(out.join("report.html").is_file(), "{spec}: no report.html");
    let text = std::fs::read_to_string(out.join("results.csv")).unwrap();
    let mut rows = csv_rows(&text);
    let header = rows.remove(0);
    let results = Results { header, rows };
    for row in 0..results.rows.len() {
        assert_eq!(results.text(row, "status"), "ok", "{spec}: row {row}");
    }
    results
}

/// The documents in a sweep's `out/points/` (what results.csv leaves out: CDFs, wear), in the
/// order of their point IDs.
pub fn points(out: &Path) -> Vec<serde_json::Value> {
    let mut points: Vec<serde_json::Value> = std::fs::read_dir(out.join("points"))
        .expect("the sweep wrote its points")
        .map(|entry| {
            let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
            serde_json::from_str(&text).unwrap()
        })
        .collect();
    points.sort_by_key(|p| p["point"]["id"].as_str().unwrap().to_string());
    points
}

/// CSV rows, with quoted fields (workloads and error messages hold commas).
pub fn csv_rows(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => row.push(std::mem::take(&mut field)),
            ('\n', false) => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
            }
            (c, _) => field.push(c),
        }
    }
    rows
}

/// A sweep's `results.csv`: its column names and its rows, in point order.
pub struct Results {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Results {
    /// The cell of `row` (an index) in column `name`.
    pub fn text(&self, row: usize, name: &str) -> &str {
        let i = self
            .header
            .iter()
            .position(|c| c == name)
            .unwrap_or_else(|| panic!("no column {name} in {:?}", self.header));
        &self.rows[row][i]
    }

    /// The cell of `row` in column `name`, as a number.
    pub fn number(&self, row: usize, name: &str) -> f64 {
        let cell = self.text(row, name);
        cell.parse()
            .unwrap_or_else(|_| panic!("{name} in row {row} is not a number: {cell:?}"))
    }

    /// The indices of the rows whose columns hold the given values, in point order.
    pub fn select(&self, filter: &[(&str, &str)]) -> Vec<usize> {
        (0..self.rows.len())
            .filter(|&row| {
                filter
                    .iter()
                    .all(|(name, value)| self.text(row, name) == *value)
            })
            .collect()
    }
}
