//! `storsim sweep` end to end: the points a spec gives and their documents (each what its
//! `storsim simulate` command writes), results independent of `--jobs`, resuming, failed and
//! interrupted points, and specs refused before anything runs.

mod common;

use common::experiment::csv_rows;
use common::{stderr, storsim, temp_dir};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A spec of 3 FTLs × 2 seeds on a small SSD, plus one explicit point on a disk.
const SPEC: &str = r#"
name = "three FTLs"
devices = ["flashsim-2009"]
workloads = ["synthetic:rw=randwrite,bs=4k,requests=3000,span=32m"]
seeds = [1, 2]

[grid]
"ssd.ftl" = ["page", "dftl", "fast"]

[options]
window = "off"

[[point]]
device = "hdd-laptop-2007"
workload = "synthetic:rw=randread,bs=4k,requests=300"
label = "plain disk"
seed = 5

[[plot]]
kind = "metric"
x = "ssd.ftl"
y = "device.counters.flash_erases"

[[plot]]
kind = "cdf"
series = ["ssd.ftl"]
where = { seed = 1 }

[[plot]]
kind = "wear"
where = { "ssd.ftl" = "dftl" }

[size.tiny]
seeds = [7]
"#;

fn write_spec(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("spec.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn sweep(spec: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "sweep",
        spec.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ];
    args.extend_from_slice(extra);
    storsim(&args)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The results table as rows of (column, value).
fn results(out: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let text = read(&out.join("results.csv"));
    let mut reader = csv_rows(&text);
    let header = reader.remove(0);
    (header, reader)
}

fn column<'a>(header: &[String], row: &'a [String], name: &str) -> &'a str {
    let i = header
        .iter()
        .position(|c| c == name)
        .unwrap_or_else(|| panic!("no column {name} in {header:?}"));
    &row[i]
}

/// Starts `storsim sweep SPEC --out OUT EXTRA` and returns it once `documents` point
/// documents are written, or `None` if it ended first (its standard error piped).
fn start_until_documents(
    spec: &Path,
    out: &Path,
    extra: &[&str],
    documents: usize,
) -> Option<std::process::Child> {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_storsim"))
        .args(["sweep", spec.to_str().unwrap(), "--quiet", "--out"])
        .arg(out)
        .args(extra)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    while std::fs::read_dir(out.join("points")).map_or(0, |d| d.count()) < documents {
        if child.try_wait().unwrap().is_some() {
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    Some(child)
}

fn points(out: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(out.join("points"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
}

#[test]
fn a_sweep_runs_every_point_and_each_document_is_its_simulate_commands() {
    let tmp = temp_dir("sweep-grid");
    let spec = write_spec(tmp.path(), SPEC);
    let out = tmp.path().join("out");
    let figures = tmp.path().join("figures");
    let o = sweep(
        &spec,
        &out,
        &["--parquet", "--plots", figures.to_str().unwrap()],
    );
    assert!(o.status.success(), "{}", stderr(&o));

    // The report draws the spec's plots: bars per FTL, a CDF per FTL of seed 1, a wear
    // histogram per DFTL point; each also as SVG and PNG.
    let page = read(&out.join("report.html"));
    for id in [
        "sweep-1-metric",
        "sweep-2-cdf",
        "sweep-3-wear-1",
        "sweep-3-wear-2",
    ] {
        assert!(page.contains(&format!("id=\"{id}\"")), "{id} missing");
        assert!(figures.join(format!("{id}.svg")).exists(), "{id}.svg");
        assert!(figures.join(format!("{id}.png")).exists(), "{id}.png");
    }
    assert!(
        !page.contains("sweep-3-wear-3"),
        "only the DFTL points' wear"
    );
    let cdf = read(&figures.join("sweep-2-cdf.svg"));
    for ftl in ["page", "dftl", "fast"] {
        assert!(
            // plotters writes a text element's content on a line of its own.
            cdf.contains(&format!("\n{ftl}\n</text>")),
            "the CDF's legend names {ftl}"
        );
    }

    let (header, rows) = results(&out);
    assert_eq!(rows.len(), 3 * 2 + 1);
    assert_eq!(
        &header[..8],
        ["point", "label", "status", "error", "device", "ssd.ftl", "workload", "seed"]
    );
    let ftls: Vec<&str> = rows.iter().map(|r| column(&header, r, "ssd.ftl")).collect();
    assert_eq!(ftls, ["page", "page", "dftl", "dftl", "fast", "fast", ""]);
    let seeds: Vec<&str> = rows.iter().map(|r| column(&header, r, "seed")).collect();
    assert_eq!(seeds, ["1", "2", "1", "2", "1", "2", "5"]);
    assert_eq!(column(&header, &rows[6], "label"), "plain disk");
    assert_eq!(column(&header, &rows[2], "label"), "ssd.ftl=dftl seed=1");
    assert!(rows.iter().all(|r| column(&header, r, "status") == "ok"));
    // Every point completed its requests, and the FTLs differ where they should: FAST's
    // merges erase more than the page FTL under random writes.
    for row in &rows[..6] {
        assert_eq!(column(&header, row, "summary.requests"), "3000");
    }
    let erases = |row: &[String]| -> f64 {
        column(&header, row, "device.counters.flash_erases")
            .parse()
            .unwrap()
    };
    assert!(
        erases(&rows[4]) > erases(&rows[0]),
        "{} {}",
        erases(&rows[4]),
        erases(&rows[0])
    );
    assert!(
        std::fs::metadata(out.join("results.parquet"))
            .unwrap()
            .len()
            > 0
    );

    // A point's document is what its own command line writes, apart from `point` and the
    // `--json` the command needs.
    let files = points(&out);
    assert_eq!(files.len(), 7);
    for file in [&files[0], &files[6]] {
        let mut doc: Value = serde_json::from_str(&read(file)).unwrap();
        let point = doc.as_object_mut().unwrap().remove("point").unwrap();
        let id = point["id"].as_str().unwrap();
        assert_eq!(file.file_stem().unwrap().to_str().unwrap(), id);
        let row = rows
            .iter()
            .find(|r| column(&header, r, "point") == id)
            .unwrap();
        assert_eq!(point["label"].as_str(), Some(column(&header, row, "label")));
        let line: Vec<String> = doc["command_line"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_string())
            .collect();
        assert_eq!(line[..2], ["storsim", "simulate"]);
        let alone = tmp.path().join("alone.json");
        let mut args: Vec<&str> = line[1..].iter().map(String::as_str).collect();
        args.extend(["--json", alone.to_str().unwrap()]);
        let o = storsim(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        let simulated: Value = serde_json::from_str(&read(&alone)).unwrap();
        assert_eq!(doc, simulated, "{}", file.display());
    }
}

#[test]
fn results_do_not_depend_on_jobs_and_a_second_run_resumes() {
    let tmp = temp_dir("sweep-jobs");
    let spec = write_spec(tmp.path(), SPEC);
    let (one, two) = (tmp.path().join("one"), tmp.path().join("two"));
    assert!(sweep(&spec, &one, &["--jobs", "1"]).status.success());
    let o = sweep(&spec, &two, &["--jobs", "2"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        read(&one.join("results.csv")),
        read(&two.join("results.csv"))
    );
    for (a, b) in points(&one).iter().zip(points(&two)) {
        assert_eq!(read(a), read(&b), "{}", a.display());
    }

    // Again: nothing runs; with one document gone, that point alone runs, and the table is
    // the same.
    let before = read(&two.join("results.csv"));
    let o = storsim(&[
        "sweep",
        spec.to_str().unwrap(),
        "--out",
        two.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("0 points ran, 7 found"),
        "{}",
        stderr(&o)
    );
    std::fs::remove_file(&points(&two)[3]).unwrap();
    let o = storsim(&[
        "sweep",
        spec.to_str().unwrap(),
        "--out",
        two.to_str().unwrap(),
    ]);
    assert!(
        stderr(&o).contains("1 points ran, 6 found"),
        "{}",
        stderr(&o)
    );
    assert_eq!(read(&two.join("results.csv")), before);

    // A size is laid over the spec: one seed, other points.
    let tiny = tmp.path().join("tiny");
    let o = sweep(&spec, &tiny, &["--size", "tiny"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (header, rows) = results(&tiny);
    assert_eq!(rows.len(), 4);
    let seeds: Vec<&str> = rows.iter().map(|r| column(&header, r, "seed")).collect();
    assert_eq!(seeds, ["7", "7", "7", "5"], "the point names its own seed");
}

#[test]
fn a_failed_point_is_reported_and_the_others_run_unless_fail_fast() {
    let tmp = temp_dir("sweep-fail");
    // A trace whose fourth record is malformed: the check (the file exists) passes, the run
    // fails when it reaches the record.
    let trace = tmp.path().join("bad.csv");
    let mut text = String::new();
    for i in 0..3 {
        text.push_str(&format!(
            "{},hm,0,Read,{},4096,100\n",
            128166372000000000u64 + i * 10000,
            i * 4096
        ));
    }
    text.push_str("128166372003000000,hm,0,Read,notanumber,4096,100\n");
    std::fs::write(&trace, text).unwrap();
    let spec = write_spec(
        tmp.path(),
        r#"
        devices = ["stec-zeus"]
        workloads = ["synthetic:rw=randread,requests=200", "bad.csv", "synthetic:rw=read,requests=200"]
        [options]
        format = "msr"
        "#,
    );
    let out = tmp.path().join("out");
    let o = sweep(&spec, &out, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("1 of 3 points failed"),
        "{}",
        stderr(&o)
    );
    let (header, rows) = results(&out);
    let statuses: Vec<&str> = rows.iter().map(|r| column(&header, r, "status")).collect();
    assert_eq!(statuses, ["ok", "failed", "ok"]);
    let error = column(&header, &rows[1], "error");
    assert!(
        error.contains("bad.csv") && error.contains("line 4"),
        "{error}"
    );
    assert_eq!(points(&out).len(), 2, "no document for the failed point");

    let fast = tmp.path().join("fast");
    let o = sweep(&spec, &fast, &["--fail-fast", "--jobs", "1"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let (header, rows) = results(&fast);
    let statuses: Vec<&str> = rows.iter().map(|r| column(&header, r, "status")).collect();
    assert_eq!(statuses, ["ok", "failed", "pending"]);
}

#[test]
fn a_bad_spec_is_refused_before_anything_runs_naming_the_key() {
    let tmp = temp_dir("sweep-refused");
    let cases = [
        (
            "devices = [\"stec-zeus\"]\nworkloads = [\"synthetic:rw=read\"]\nbogus = 3\n",
            "bogus",
        ),
        (
            "devices = [\"stec-zeus\"]\nworkloads = [\"synthetic:rw=read\"]\n[grid]\n\"ssd.ftl\" = [\"page\"]\n",
            "ssd",
        ),
        (
            "devices = [\"flashsim-2009\"]\nworkloads = [\"synthetic:rw=read\"]\n[grid]\n\"ssd.page.bogus_key\" = [1]\n",
            "bogus_key",
        ),
        (
            "devices = [\"stec-zeus\"]\nworkloads = [\"synthetic:rw=read\"]\n[grid]\n\"linear.servers\" = []\n",
            "grid.linear.servers",
        ),
        (
            "devices = [\"stec-zeus\"]\nworkloads = [\"synthetic:rw=read,bs=banana\"]\n",
            "bs",
        ),
        (
            "devices = [\"stec-zeus\"]\nworkloads = [\"missing.csv\"]\n",
            "missing.csv",
        ),
        (
            "devices = [\"stec-zeus\"]\nworkloads = [\"synthetic:rw=read\"]\n[options]\nreplay = \"sideways\"\n",
            "sideways",
        ),
        (
            "devices = [\"stec-zeus\"]\nworkloads = [\"synthetic:rw=read\"]\n[[plot]]\nkind = \"metric\"\nx = \"linear.servers\"\ny = \"summary.all.iops\"\n",
            "plot[0].x",
        ),
    ];
    for (text, key) in cases {
        let spec = write_spec(tmp.path(), text);
        let out = tmp.path().join("out");
        let o = sweep(&spec, &out, &[]);
        assert_eq!(o.status.code(), Some(2), "{text}: {}", stderr(&o));
        assert!(stderr(&o).contains(key), "{text}: {}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
        assert!(!out.join("points").exists(), "{text}: something ran");
    }
}

#[test]
fn ctrl_c_keeps_the_finished_points_and_leaves_no_partial_document() {
    use rustix::process::{kill_process, Pid, Signal};
    let tmp = temp_dir("sweep-ctrl-c");
    // Quick points first, then slow ones that are still running when the signal comes.
    let spec = write_spec(
        tmp.path(),
        r#"
        devices = ["stec-zeus"]
        workloads = ["synthetic:rw=randread,iodepth=4"]
        [workload_grid]
        requests = [100, 200, 40000000000]
        [options]
        window = "off"
        "#,
    );
    let out = tmp.path().join("out");
    // Two documents mean the slow point is running: no sleep a slow machine could outlast.
    let child = start_until_documents(&spec, &out, &["--jobs", "1"], 2)
        .expect("the sweep ended before it was interrupted");
    kill_process(Pid::from_child(&child), Signal::INT).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    let (header, rows) = results(&out);
    let statuses: Vec<&str> = rows.iter().map(|r| column(&header, r, "status")).collect();
    assert_eq!(statuses, ["ok", "ok", "pending"]);
    // Only whole documents: no partial file, and each parses.
    let files = points(&out);
    assert_eq!(files.len(), 2, "{files:?}");
    for file in files {
        let doc: Value = serde_json::from_str(&read(&file)).unwrap();
        assert_eq!(doc["run"]["cancelled"], false);
    }
}

#[test]
fn a_sweep_killed_outright_resumes_to_the_table_of_an_uninterrupted_one() {
    use rustix::process::{kill_process, Pid, Signal};
    let tmp = temp_dir("sweep-kill");
    let spec = write_spec(
        tmp.path(),
        r#"
        devices = ["flashsim-2009"]
        workloads = ["synthetic:rw=randwrite,span=16m,iodepth=4"]
        seeds = [1, 2, 3]
        [workload_grid]
        requests = [2000, 20000]
        [options]
        window = "off"
        "#,
    );
    let (clean, killed) = (tmp.path().join("clean"), tmp.path().join("killed"));
    let o = sweep(&spec, &clean, &[]);
    assert!(o.status.success(), "{}", stderr(&o));

    let child = start_until_documents(&spec, &killed, &[], 2);
    // SIGKILL: no handler runs, whatever was being written stays as it was.
    if let Some(mut child) = child {
        kill_process(Pid::from_child(&child), Signal::KILL).unwrap();
        child.wait().unwrap();
    }
    let o = sweep(&spec, &killed, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        read(&killed.join("results.csv")),
        read(&clean.join("results.csv"))
    );
    let names: Vec<PathBuf> = points(&killed);
    assert_eq!(
        names.len(),
        6,
        "only the documents, no partial file: {names:?}"
    );
}

#[test]
fn the_example_spec_of_docs_sweep_md_runs_as_written() {
    let doc = read(&common::repo_root().join("docs/sweep.md"));
    let start = doc
        .find("```toml\n")
        .expect("docs/sweep.md has a TOML example")
        + 8;
    let example = &doc[start..start + doc[start..].find("```").unwrap()];
    let tmp = temp_dir("sweep-docs");
    let spec = write_spec(tmp.path(), example);
    let out = tmp.path().join("out");
    let o = sweep(&spec, &out, &["--size", "quick"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (header, rows) = results(&out);
    // 3 over-provisioning levels × 2 policies × 2 sizes × 1 seed, and the disk.
    assert_eq!(rows.len(), 13);
    assert!(rows.iter().all(|r| column(&header, r, "status") == "ok"));
    assert_eq!(column(&header, &rows[12], "label"), "plain disk");
    let page = read(&out.join("report.html"));
    for id in ["sweep-1-metric", "sweep-2-cdf"] {
        assert!(page.contains(&format!("<svg id=\"{id}\"")), "{id} missing");
    }
}
