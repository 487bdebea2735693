//! The simulate JSON's shape against its documentation: every key path a run writes is named
//! in docs/json.md, and every path named there is written by one of these runs, so that a new
//! key cannot go undocumented nor a documented one silently go away.
//!
//! docs/json.md's tables under "## The simulate document" whose header begins `| path |` hold
//! one backquoted path per row: keys joined with `.`, `[]` after an array's key for its
//! elements, `{a,b}` for each of several keys, and `<name>` for any key (the device counters).

mod common;

use common::{repo_root, storsim, temp_dir};
use serde_json::Value;
use std::collections::BTreeSet;

/// The documented paths, braces expanded, in the order of the document.
fn documented_paths() -> Vec<String> {
    let doc = std::fs::read_to_string(repo_root().join("docs/json.md")).unwrap();
    let mut paths = Vec::new();
    let mut in_section = false;
    let mut in_path_table = false;
    for line in doc.lines() {
        if line.starts_with("## ") {
            in_section = line == "## The simulate document";
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
        paths.len() > 50,
        "docs/json.md's path tables not found: {paths:?}"
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

/// Whether documented `pattern` names JSON `path`: segment by segment, `<name>` matching any.
fn names(pattern: &str, path: &str) -> bool {
    let (p, q): (Vec<&str>, Vec<&str>) = (pattern.split('.').collect(), path.split('.').collect());
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

fn simulate(name: &str, args: &[&str]) -> Value {
    let dir = temp_dir(name);
    let out = dir.path().join("out.json");
    let mut all = vec!["simulate", "--quiet", "--json", out.to_str().unwrap()];
    all.extend_from_slice(args);
    let o = storsim(&all);
    assert!(o.status.success(), "{name}: {}", common::stderr(&o));
    serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap()
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
    ];
    let documented = documented_paths();
    let mut written = BTreeSet::new();
    for run in &runs {
        assert_eq!(run["schema"], 1);
        key_paths(run, "", &mut written);
    }
    let undocumented: Vec<&String> = written
        .iter()
        .filter(|p| !documented.iter().any(|d| names(d, p)))
        .collect();
    assert!(
        undocumented.is_empty(),
        "keys the simulate JSON writes that docs/json.md does not name: {undocumented:?}"
    );
    let unwritten: Vec<&String> = documented
        .iter()
        .filter(|d| !written.iter().any(|p| names(d, p)))
        .collect();
    assert!(
        unwritten.is_empty(),
        "paths docs/json.md names that no run wrote: {unwritten:?}"
    );
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
