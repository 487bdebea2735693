//! The JSON documents' shapes against their documentation: for each documented document kind,
//! every key path its runs write is named in docs/json.md, and every path named there is written
//! by one of these runs, so that a new key cannot go undocumented nor a documented one silently
//! go away.
//!
//! docs/json.md's tables under a document's `## The ... document` heading whose header begins
//! `| path |` hold one backquoted path per row: keys joined with `.`, `[]` after an array's key
//! for its elements, `{a,b}` for each of several keys, and `<name>` for any key (the device
//! counters).

// Some tests here walk a real client through one scenario step by step (a mount, a crash, a
// browser page); split, the steps would read out of order. The limit holds for production code.
#![allow(clippy::too_many_lines)]

mod common;

use common::system::{emulate_with_qemu_io, have, run_ok, Emulator};
use common::{repo_root, storsim, temp_dir};
use serde_json::Value;
use std::collections::BTreeSet;

/// The `schema` every document carries (docs/json.md's schema table). Written out here rather
/// than read from the binary so that raising it without this test is a failure to look at.
const SCHEMA: u64 = 1;

/// The paths documented under `heading` (a `## ` line of docs/json.md), braces expanded, in the
/// order of the document.
fn documented_paths(heading: &str) -> Vec<String> {
    let doc = std::fs::read_to_string(repo_root().join("docs/json.md")).unwrap();
    let mut paths = Vec::new();
    let mut in_section = false;
    let mut in_path_table = false;
    for line in doc.lines() {
        if line.starts_with("## ") {
            in_section = line == heading;
            continue;
        }
        if !in_section {
            continue;
        }
        if !line.starts_with('|') {
            in_path_table = false;
            continue;
        }
        let first = line.split('|').nth(1).unwrap_or("").trim();
        if first == "path" {
            in_path_table = true;
            continue;
        }
        if !in_path_table || first.starts_with("---") {
            continue;
        }
        let path = first
            .strip_prefix('`')
            .and_then(|p| p.strip_suffix('`'))
            .filter(|p| !p.contains('`'))
            .unwrap_or_else(|| panic!("a path row's first cell is one backquoted path: {line}"));
        paths.extend(expand(path));
    }
    assert!(
        !paths.is_empty(),
        "docs/json.md has no path table under {heading:?}"
    );
    paths
}

/// Shell-like brace expansion: `a.{b,c}.d` is `a.b.d` and `a.c.d`.
fn expand(path: &str) -> Vec<String> {
    match (path.find('{'), path.find('}')) {
        (Some(open), Some(close)) if open < close => path[open + 1..close]
            .split(',')
            .flat_map(|alt| expand(&format!("{}{alt}{}", &path[..open], &path[close + 1..])))
            .collect(),
        _ => vec![path.to_string()],
    }
}

/// Whether documented `pattern` names JSON `path`: segment by segment, `<name>` matching any;
/// a `<name>` that ends the pattern matches the rest of the path, dots and all (a sweep
/// point's parameters are device-file keys such as `ssd.ftl`).
fn names(pattern: &str, path: &str) -> bool {
    let (p, mut q): (Vec<&str>, Vec<&str>) =
        (pattern.split('.').collect(), path.split('.').collect());
    let placeholder = |s: &str| s.starts_with('<') && s.ends_with('>');
    if p.last().is_some_and(|last| placeholder(last)) && q.len() > p.len() {
        q.truncate(p.len());
    }
    p.len() == q.len()
        && p.iter()
            .zip(&q)
            .all(|(a, b)| a == b || (a.starts_with('<') && a.ends_with('>')))
}

/// Every leaf's key path in `v`.
fn key_paths(v: &Value, prefix: &str, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(map) => {
            for (k, x) in map {
                let p = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                key_paths(x, &p, out);
            }
        }
        // An array of objects (or an empty one, which names nothing) stands for its elements;
        // an array of numbers, such as the erase counts, is one field.
        Value::Array(items) if items.iter().all(|x| x.is_object()) => {
            for x in items {
                key_paths(x, &format!("{prefix}[]"), out);
            }
        }
        _ => {
            out.insert(prefix.to_string());
        }
    }
}

/// Checks `runs` (documents of one kind) against the paths docs/json.md documents under
/// `heading`: each carries `schema`, each key path written is named, and each named path is
/// written by at least one run, except those in `unwritable`: documented paths that no run a
/// test can make writes (each caller says why).
fn assert_documented(heading: &str, runs: &[Value], unwritable: &[&str]) {
    assert_documented_paths(heading, &documented_paths(heading), runs, unwritable);
}

/// [`assert_documented`] against the paths `documented`, gathered from under `heading` and
/// wherever else the document's page refers to.
fn assert_documented_paths(
    heading: &str,
    documented: &[String],
    runs: &[Value],
    unwritable: &[&str],
) {
    let mut written = BTreeSet::new();
    for run in runs {
        assert_eq!(run["schema"], SCHEMA, "{heading}");
        assert_read_by_its_declared_kind(heading, run);
        key_paths(run, "", &mut written);
    }
    let undocumented: Vec<&String> = written
        .iter()
        .filter(|p| !documented.iter().any(|d| names(d, p)))
        .collect();
    assert!(
        undocumented.is_empty(),
        "keys written that docs/json.md does not name under {heading:?}: {undocumented:?}"
    );
    let unwritten: Vec<&String> = documented
        .iter()
        .filter(|d| !unwritable.contains(&d.as_str()))
        .filter(|d| !written.iter().any(|p| names(d, p)))
        .collect();
    assert!(
        unwritten.is_empty(),
        "paths docs/json.md names under {heading:?} that no run wrote: {unwritten:?}"
    );
}

/// Every document storsim writes declares its `kind`, and the report reads a run document by
/// that declaration: the whole document, and its `schema` and `kind` alone (which hold none
/// of the keys the report's guess for documents without `kind` looks for), read as the kind
/// declared. Documents that hold no run (inspect, counters, replay-log) are refused naming
/// their kind.
fn assert_read_by_its_declared_kind(heading: &str, run: &Value) {
    let kind = run["kind"]
        .as_str()
        .unwrap_or_else(|| panic!("{heading}: a document without `kind`"));
    let bare = serde_json::json!({"schema": run["schema"], "kind": kind});
    for doc in [run.clone(), bare] {
        match storsim_report::Run::from_value(heading, doc) {
            Ok(read) => assert_eq!(read.kind.name(), kind, "{heading}"),
            Err(e) => assert!(
                ["inspect", "counters", "replay-log"].contains(&kind)
                    && e.to_string().contains(&format!("\"{kind}\"")),
                "{heading}: {e}"
            ),
        }
    }
}

/// Runs `storsim ARGS JSON_FLAG FILE` and returns the document it wrote to FILE.
fn run_json(name: &str, args: &[&str], json_flag: &str) -> Value {
    let dir = temp_dir(name);
    let out = dir.path().join("out.json");
    let mut all = args.to_vec();
    all.extend_from_slice(&[json_flag, out.to_str().unwrap()]);
    let o = storsim(&all);
    assert!(o.status.success(), "{name}: {}", common::stderr(&o));
    serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap()
}

fn simulate(name: &str, args: &[&str]) -> Value {
    let mut all = vec!["simulate", "--quiet"];
    all.extend_from_slice(args);
    run_json(name, &all, "--json")
}

#[test]
fn every_key_of_the_simulate_json_is_documented_and_every_documented_key_is_written() {
    let synthetic = "synthetic:rw=randrw,rwmixread=50,bs=16k,iodepth=8,requests=2000,seed=5";
    let runs = [
        // An SSD on a trace, open loop, with requests refused (raw flash takes no overwrite).
        simulate(
            "ssd",
            &[
                "--device",
                "flashsim-2009:raw",
                "--workload",
                "examples/oltp-sample.msr.csv",
                "--wrap",
                "--on-refused",
                "count",
            ],
        ),
        simulate(
            "hdd",
            &["--device", "hdd-laptop-2007", "--workload", synthetic],
        ),
        simulate(
            "hybrid",
            &[
                "--device",
                "examples/hybrid/controller.toml",
                "--workload",
                synthetic,
            ],
        ),
        simulate(
            "array",
            &[
                "--device",
                "examples/raid0-flashsim.toml",
                "--workload",
                synthetic,
            ],
        ),
        // Several flows, each way an LBA partition and a resource partition can be stated,
        // with the alone runs of --fairness.
        simulate(
            "flows-fairness",
            &[
                "--device",
                "bench2g",
                "--fairness",
                "--flow",
                "synthetic:rw=randread,bs=4k,iodepth=4,requests=300,name=r,class=high,\
                 lba_offset=1m,lba_size=25%,channels=0-1,chips=0,dies=0,planes=0-1,queues=1,\
                 data_cache=off",
                "--flow",
                "synthetic:rw=randwrite,bs=4k,iodepth=2,requests=200,start=1ms,stop=1s,\
                 lba_offset=50%,lba_size=64m",
                "--flow",
                "synthetic:rw=randread,bs=4k,requests=100,lba_offset=75%,head=80,time_scale=2,\
                 repeat=2,phase=1",
            ],
        ),
        // Several flows without --fairness and without partitions.
        simulate(
            "flows",
            &[
                "--device",
                "stec-zeus",
                "--flow",
                "synthetic:rw=randread,bs=4k,iodepth=4,requests=300",
                "--flow",
                "synthetic:rw=randwrite,bs=4k,iodepth=2,requests=200",
                "--flow",
                "examples/oltp-sample.msr.csv,format=msr,iodepth=1",
            ],
        ),
        // A faults layer: the plan, the error counts and the retries appear.
        simulate(
            "faults",
            &[
                "--device",
                "examples/faults/flaky-ssd.toml",
                "--workload",
                synthetic,
                "--retries",
                "1",
            ],
        ),
    ];
    // The example's one latency spike draws from an exponential; the other delay shapes write
    // their own keys, which the faults tests cover.
    assert_documented(
        "## The simulate document",
        &runs,
        &[
            "device.faults.rules[].delay.ns",
            "device.faults.rules[].delay.min_ns",
            "device.faults.rules[].delay.max_ns",
        ],
    );
    for run in &runs {
        assert_series_matches_the_run(run);
    }
    // The SSD's per-block wear: one array, its blocks as its shape says.
    let wear = &runs[0]["device"]["block_wear"];
    assert_eq!(wear.as_array().unwrap().len(), 1);
    let shape: u64 = [
        "channels",
        "chips_per_channel",
        "dies_per_chip",
        "planes_per_die",
        "blocks_per_plane",
    ]
    .iter()
    .map(|k| wear[0][k].as_u64().unwrap())
    .product();
    assert_eq!(
        wear[0]["erase_counts_per_block"].as_array().unwrap().len() as u64,
        shape
    );
    // A disk has no flash; a hybrid's and an array's flash children are named as their
    // counters' prefixes name them.
    let units = |run: &Value| -> Vec<String> {
        run["device"]["block_wear"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["unit"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(units(&runs[1]).is_empty());
    assert_eq!(units(&runs[2]), ["flash"]);
    assert_eq!(units(&runs[3]), ["child0", "child1"]);
    // A composite declares its parts, and an SSD its FTL, as its counters' prefixes name them;
    // a device of one model writes no `parts`, so that its document stays as it was.
    let parts = |run: &Value| -> Vec<(String, String)> {
        run["device"]["parts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                let s = |k: &str| p[k].as_str().unwrap().to_string();
                (s("prefix"), s("model"))
            })
            .collect()
    };
    let pair = |p: &str, m: &str| (p.to_string(), m.to_string());
    // The SSD runs the FTL its `:raw` variant chose, which its preset's name alone would not say.
    assert_eq!(parts(&runs[0]), [pair("ftl_", "raw")]);
    assert_eq!(parts(&runs[4]), [pair("ftl_", "page")]);
    assert!(
        runs[1]["device"].get("parts").is_none(),
        "{}",
        runs[1]["device"]["parts"]
    );
    // The example hybrid's disk is a black-box linear model: a part is whatever its device
    // says it is.
    assert_eq!(runs[2]["device"]["model"], "hybrid");
    assert_eq!(
        parts(&runs[2]),
        [
            pair("flash_", "ssd"),
            pair("flash_ftl_", "page"),
            pair("disk_", "linear")
        ]
    );
    assert_eq!(runs[3]["device"]["model"], "array");
    assert_eq!(
        parts(&runs[3]),
        [
            pair("child0_ssd_", "ssd"),
            pair("child0_ssd_ftl_", "dftl"),
            pair("child1_ssd_", "ssd"),
            pair("child1_ssd_ftl_", "dftl")
        ]
    );
    // Each part's prefix is its counters': the array's children's SSD counters are there, and
    // their FTLs' (DFTL's mapping cache is its own).
    let counters = runs[3]["device"]["counters"].as_object().unwrap();
    for (prefix, model) in parts(&runs[3]) {
        let own = if model == "ssd" {
            "write_amplification"
        } else {
            "cmt_hits"
        };
        assert!(
            counters.contains_key(&format!("{prefix}{own}")),
            "{prefix}{own}"
        );
    }
}

/// The time series of a simulate or cosim document adds up to its summary, every array has one
/// entry per window, and the counters' last values are the device's final counters.
fn assert_series_matches_the_run(run: &Value) {
    assert_series_matches(run, &run["summary"]);
}

/// [`assert_series_matches_the_run`] with the summary the series must add up to given (an
/// emulate document's is `model`).
fn assert_series_matches(run: &Value, summary: &Value) {
    let s = &run["series"];
    let n = s["windows"].as_u64().expect("series.windows") as usize;
    assert!(n >= 1, "a run with requests has windows");
    let window_ns = s["window_ns"].as_u64().unwrap();
    let end_ns = s["end_ns"].as_u64().unwrap();
    assert!(window_ns * (n as u64 - 1) < end_ns && end_ns <= window_ns * n as u64);
    let sum = |v: &Value| -> u64 {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap())
            .sum()
    };
    for (op, figures) in s["ops"].as_object().unwrap() {
        let summary = if op == "all" { summary } else { &summary[op] };
        assert_eq!(
            sum(&figures["requests"]),
            summary["requests"].as_u64().unwrap(),
            "{op}"
        );
        assert_eq!(
            sum(&figures["bytes"]),
            summary["bytes"].as_u64().unwrap(),
            "{op}"
        );
        for (figure, values) in figures.as_object().unwrap() {
            assert_eq!(
                values.as_array().unwrap().len(),
                n,
                "series.ops.{op}.{figure}"
            );
        }
        // The longest latency of any window is the run's.
        let max = figures["latency_max_ns"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_u64)
            .max();
        assert_eq!(max, summary["latency_ns"]["max"].as_u64(), "{op}");
    }
    let counters = run["device"]["counters"].as_object().unwrap();
    let sampled = s["device"].as_object().unwrap();
    assert_eq!(
        sampled.keys().collect::<Vec<_>>(),
        counters.keys().collect::<Vec<_>>()
    );
    for (name, values) in sampled {
        let values = values.as_array().unwrap();
        assert_eq!(values.len(), n, "series.device.{name}");
        assert_eq!(
            values[n - 1],
            counters[name],
            "series.device.{name} ends as the counter"
        );
    }
}

#[test]
fn a_sweep_points_document_is_a_simulate_document_with_its_point_documented() {
    let dir = temp_dir("json-sweep");
    let spec = dir.path().join("spec.toml");
    std::fs::write(
        &spec,
        "devices = [\"stec-zeus\"]\nworkloads = [\"synthetic:rw=randrw,requests=200\"]\n\
         [workload_grid]\nbs = [\"4k\", \"8k\"]\n[grid]\n\"linear.servers\" = [1]\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let o = storsim(&[
        "sweep",
        spec.to_str().unwrap(),
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let runs: Vec<Value> = std::fs::read_dir(out.join("points"))
        .unwrap()
        .map(|e| {
            serde_json::from_str(&std::fs::read_to_string(e.unwrap().path()).unwrap()).unwrap()
        })
        .collect();
    assert_eq!(runs.len(), 2);
    let point = documented_paths("## A sweep point's document");
    let mut documented = documented_paths("## The simulate document");
    documented.extend(point.iter().cloned());
    let written = |path: &str| runs.iter().any(|r| r.pointer(path).is_some());
    assert!(
        written("/point/parameters/linear.servers") && written("/point/parameters/workload.bs")
    );
    // Only the point's own paths must all be written here: the simulate test covers the rest.
    let simulate_paths: Vec<&str> = documented
        .iter()
        .filter(|p| !point.contains(p))
        .map(String::as_str)
        .collect();
    assert_documented_paths("sweep point", &documented, &runs, &simulate_paths);
}

#[test]
fn every_key_of_the_validate_disksim_json_is_documented_and_every_documented_key_is_written() {
    let Some(valid) = storsim_testenv::shared("disksim-valid") else {
        return;
    };
    // The smallest of DiskSim's validated drives, imported and run over its measured trace.
    let tmp = temp_dir("schema-validate");
    let toml = tmp.path().join("hp_c2490a.toml");
    let o = storsim(&[
        "import",
        "disksim",
        valid.join("hp_c2490a.parv").to_str().unwrap(),
        "-o",
        toml.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let run = run_json(
        "validate",
        &[
            "validate",
            "disksim",
            "--device",
            toml.to_str().unwrap(),
            "--trace",
            valid.join("hp_c2490a.trace").to_str().unwrap(),
        ],
        "--json",
    );
    // A disk is of one model: it declares no parts (the simulate document's test reads a
    // composite's).
    assert_documented(
        "## The validate disksim document",
        &[run],
        &["device.parts[].prefix", "device.parts[].model"],
    );
}

#[test]
fn every_key_of_the_validate_trace_json_is_documented_and_every_documented_key_is_written() {
    let tmp = temp_dir("schema-validate-trace");
    let device = tmp.path().join("constant.toml");
    let pattern = "{ a_us = 125, b_us_per_kib = 0 }";
    std::fs::write(
        &device,
        format!(
            "model = \"linear\"\ncapacity_bytes = 1_000_000_000\n[linear]\nsr = {pattern}\n\
             sw = {pattern}\nrr = {pattern}\nrw = {pattern}\n"
        ),
    )
    .unwrap();
    let trace = tmp.path().join("t.csv");
    std::fs::write(
        &trace,
        "0,h,0,Read,0,4096,1250\n10000,h,0,Write,4096,4096,1875\n20000,h,0,Read,8192,4096,900\n",
    )
    .unwrap();
    let args = [
        "validate",
        "trace",
        "--device",
        device.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
    ];
    // Open and closed loop: each writes its own replay keys.
    let open = run_json("validate-trace", &args, "--json");
    let mut closed_args = args.to_vec();
    closed_args.extend_from_slice(&["--replay", "closed", "--iodepth", "2"]);
    let closed = run_json("validate-trace-closed", &closed_args, "--json");
    // A linear model is of one model: it declares no parts (the simulate document's test
    // reads a composite's).
    assert_documented(
        "## The validate trace document",
        &[open, closed],
        &["device.parts[].prefix", "device.parts[].model"],
    );
}

#[test]
fn every_key_of_the_inspect_json_is_documented_and_every_documented_key_is_written() {
    let run = run_json(
        "inspect",
        &["inspect", "examples/oltp-sample.msr.csv"],
        "--json",
    );
    // The histogram's last bucket has no upper bound.
    let buckets = run["size_histogram"].as_array().unwrap();
    assert!(buckets.last().unwrap()["upper_bound_bytes"].is_null());
    assert_documented("## The inspect document", &[run], &[]);
}

#[test]
fn every_key_of_the_counters_json_is_documented_and_every_documented_key_is_written() {
    let run = run_json(
        "counters",
        &["counters", "--device", "tlc-nvme:nvme"],
        "--json",
    );
    assert_documented("## The counters document", &[run], &[]);
}

/// A calibration of a preset in virtual time (`--simulate`) with the small plan of
/// crates/cli/tests/calibrate.rs, plus `extra`.
fn calibrate(name: &str, extra: &[&str]) -> Value {
    let dir = temp_dir(name);
    let model = dir.path().join("model.toml");
    let mut args = vec![
        "calibrate",
        "--simulate",
        "stec-zeus",
        "--allow-writes",
        "--zones",
        "3",
        "--repeats",
        "2",
        "--requests-per-run",
        "4",
        "--warmup",
        "4",
        "--out",
        model.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    run_json(name, &args, "--report")
}

#[test]
fn every_key_of_the_calibrate_report_is_documented_and_every_documented_key_is_written() {
    let runs = [
        // All four patterns at eight sizes: every other size held out, the erase correction
        // from the random writes.
        calibrate(
            "calibrate-linear",
            &["--sizes", "4k,8k,16k,32k,64k,128k,256k,512k"],
        ),
        // Two patterns at three sizes: none held out (with a note), no erase correction; a
        // step run and a depth sweep.
        calibrate(
            "calibrate-step",
            &[
                "--patterns",
                "sr,sw",
                "--sizes",
                "4k,8k,16k",
                "--model",
                "step",
                "--step-run",
                "64",
                "--iodepth",
                "1,4",
                "--sweep-requests",
                "200",
            ],
        ),
    ];
    assert!(runs[0]["calibration"]["erase_correction"].is_object());
    assert!(runs[1]["calibration"]["erase_correction"].is_null());
    assert_eq!(runs[1]["calibration"]["sweep"].as_array().unwrap().len(), 4);
    // A model's measurement has nothing to note, so `target.notes` is always empty here (a
    // file that refuses O_DIRECT fills it). Only a real file or device can be a baseline, so
    // the baseline's fields are the nulls their rows name.
    assert_documented("## The calibrate document", &runs, &["target.notes"]);
}

/// Runs `sh -c SCRIPT` under `storsim cosim` on a flash preset with free computation, `DEV` in
/// the script standing for the device's directory, and returns the report.
fn cosim(name: &str, script: &str) -> Value {
    let dir = temp_dir(name);
    let dev = dir.path().join("dev");
    std::fs::create_dir_all(&dev).unwrap();
    let out = dir.path().join("report.json");
    let script = script.replace("DEV", dev.to_str().unwrap());
    let o = storsim(&[
        "cosim",
        "--device",
        "flashsim-2009",
        "--dir",
        dev.to_str().unwrap(),
        "--quiet",
        "--cpu-speed",
        "inf",
        "--report",
        out.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        &script,
    ]);
    // The exit status is the program's, which one run sets on purpose: the report is what
    // is checked.
    assert!(out.exists(), "{name}: no report: {}", common::stderr(&o));
    serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap()
}

#[test]
fn every_key_of_the_cosim_report_is_documented_and_every_documented_key_is_written() {
    let runs = [
        // Direct writes and a read of a file on the device, then the shell kills itself: the
        // exit is a signal.
        cosim(
            "cosim-signal",
            "dd if=/dev/zero of=DEV/f bs=4k count=10 oflag=direct 2>/dev/null; \
             cat DEV/f >/dev/null; kill -TERM $$",
        ),
        // Memory-mapped I/O on a file on the device bypasses the model and is warned about;
        // the exit is a code.
        cosim(
            "cosim-warning",
            "head -c 8192 /dev/zero >DEV/m && python3 -c \"import mmap; f = open('DEV/m', 'r+b'); \
             m = mmap.mmap(f.fileno(), 4096); m[0:1] = b'x'; m.close()\"",
        ),
    ];
    assert_eq!(runs[0]["program"]["exit"]["signal"], 15);
    assert_eq!(runs[1]["program"]["exit"]["code"], 0, "{}", runs[1]);
    assert!(runs[1]["warnings"].to_string().contains("mmap"));
    // The device, the summary and the series are the simulate document's objects, documented
    // there.
    let mut documented = documented_paths("## The cosim document");
    documented.extend(
        documented_paths("## The simulate document")
            .into_iter()
            .filter(|p| {
                p.starts_with("device.") || p.starts_with("summary.") || p.starts_with("series.")
            })
            .filter(|p| !with_faults_only(p)),
    );
    // Its device is of one model, which declares no parts (the simulate test reads a
    // composite's).
    assert_documented_paths(
        "## The cosim document",
        &documented,
        &runs,
        &["device.parts[].prefix", "device.parts[].model"],
    );
    assert_eq!(runs[0]["series"]["clock"], "simulated");
    assert_series_matches_the_run(&runs[0]);
}

#[test]
fn every_key_of_the_emulate_json_is_documented_and_every_documented_key_is_written() {
    if !have("qemu-io") {
        storsim_testenv::missing("qemu-io not found: the emulate JSON's check needs an NBD client");
        return;
    }
    let tmp = temp_dir("schema-emulate");
    // Every operation once, so that each has its replies and the latency CDF has points.
    let out = emulate_with_qemu_io(
        tmp.path(),
        &[],
        &[
            "write -P 0xa5 0 64k",
            "read -P 0xa5 0 64k",
            "discard 64k 64k",
            "flush",
        ],
    );
    let run: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    for op in ["read", "write", "trim", "flush"] {
        assert!(run["requests"][op].as_u64().unwrap() > 0, "{op}: {run}");
    }
    // The model's summary and the series are the simulate document's, documented there.
    let mut documented = documented_paths("## The emulate document");
    documented.extend(
        documented_paths("## The simulate document")
            .into_iter()
            .filter(|p| !with_faults_only(p))
            .filter_map(|p| {
                p.strip_prefix("summary.")
                    .map(|rest| format!("model.{rest}"))
                    .or_else(|| p.starts_with("series.").then_some(p))
            }),
    );
    assert_eq!(run["series"]["clock"], "wall");
    assert_series_matches(&run, &run["model"]);
    // A switch needs a `set` on the control socket, a model failure a broken model, and
    // whether the pacing thread polls a front end depends on timing: these may be missing
    // from a run. This run has no
    // faults, so its list of rules is empty (tests/faults.rs reads the rules of runs that do);
    // its device has no children, so no children's rules (tests/faults.rs reads a mirror's).
    let mut unwritable = vec![
        "device.switches",
        "device.model_failures",
        "requests.polled.<front_end>",
        "device.faults.children",
        // Its device is of one model: it declares no parts (the simulate document's test
        // reads a composite's).
        "device.parts[].prefix",
        "device.parts[].model",
    ];
    unwritable.extend(
        documented
            .iter()
            .filter(|p| p.starts_with("device.faults.rules[]."))
            .map(String::as_str),
    );
    assert_eq!(run["device"]["faults"]["rules"], serde_json::json!([]));
    assert!(run["device"]["faults"].get("children").is_none());
    // Without power loss the document has no `power_loss`; a run with it and a crash writes
    // every key of it (a torn crash after the first write, every option given).
    assert!(run.get("power_loss").is_none(), "{}", run["power_loss"]);
    let dir = tmp.path().join("power-loss");
    std::fs::create_dir_all(&dir).unwrap();
    let crash_log = dir.join("crash.jsonl");
    let write_log = dir.join("writes.log");
    let out = emulate_with_qemu_io(
        &dir,
        &[
            "--crash-after-writes",
            "1",
            "--crash-at",
            "1h",
            "--torn",
            "page",
            "--crash-log",
            crash_log.to_str().unwrap(),
            "--write-log",
            write_log.to_str().unwrap(),
        ],
        &["write -P 0xa5 0 64k", "write -P 0x5a 64k 64k"],
    );
    let crashed: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(crashed["power_loss"]["crashes"][0]["crash"], 1, "{crashed}");
    assert_documented_paths(
        "## The emulate document",
        &documented,
        &[run, crashed],
        &unwritable,
    );
}

/// The simulate document's paths written only with a faults layer (docs/faults.md), which the
/// cosim and emulate runs here have not; crates/cli/tests/faults.rs reads them from those.
fn with_faults_only(path: &str) -> bool {
    path.starts_with("device.faults.")
        || path.starts_with("summary.errors.")
        || path.contains(".errors.")
        || path.ends_with("latency_includes_failed")
}

#[test]
fn every_key_of_the_replay_log_json_is_documented_and_every_documented_key_is_written() {
    if !have("qemu-io") {
        return;
    }
    let tmp = temp_dir("json-replay-log");
    let dir = tmp.path();
    let log = dir.join("writes.log");
    let socket = dir.join("nbd.sock");
    let emu = Emulator::over_nbd(&socket, "16m", &["--write-log", log.to_str().unwrap()]);
    // Through a write-back cache the write is no FUA: replayed to it, before the flush of
    // qemu-io's close, it is at risk.
    let uri = emu.nbd().to_string();
    run_ok(
        "qemu-io",
        &[
            "-t",
            "writeback",
            "-f",
            "raw",
            &uri,
            "-c",
            "write -P 9 0 64k",
        ],
    );
    let (status, _, err) = emu.stop();
    assert!(status.success(), "{err}");
    let log = log.to_str().unwrap();
    let image = dir.join("replayed.img");
    let image = image.to_str().unwrap();
    let torn = run_json(
        "json-replay-log-torn",
        &[
            "replay-log",
            log,
            "--to-write",
            "1",
            "--torn",
            "page",
            "--seed",
            "4",
            "--out",
            image,
        ],
        "--json",
    );
    assert_eq!(torn["crash"]["volatile_writes"], 1);
    let whole = run_json(
        "json-replay-log-whole",
        &["replay-log", log, "--out", image],
        "--json",
    );
    assert_eq!(whole["crash"]["volatile_writes"], 0);
    assert_documented("## The replay-log document", &[torn, whole], &[]);
}

#[test]
fn brace_expansion_and_placeholders_name_what_they_should() {
    assert_eq!(
        expand("a.{b,c}.{d,e}"),
        ["a.b.d", "a.b.e", "a.c.d", "a.c.e"]
    );
    assert!(names(
        "device.counters.<counter>",
        "device.counters.flash_erases"
    ));
    assert!(!names("device.counters.<counter>", "device.counters"));
    assert!(!names("device.name", "device.name2"));
}
