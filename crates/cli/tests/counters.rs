//! `storsim counters`: a device's counters as its models describe them, checked against the
//! counters a run of the same device writes.

mod common;

use common::{stderr, storsim, temp_dir};
use serde_json::Value;

/// The JSON list of `storsim counters ARGS`.
fn counters_json(args: &[&str]) -> Value {
    let mut all = vec!["counters"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--json", "-"]);
    let o = storsim(&all);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Whether `name` is the listed counter or a member of the listed family, as its scope says
/// members go: an index, one of its keys, or a histogram bucket's range.
fn member(listed: &Value, name: &str) -> bool {
    let pattern = listed["name"].as_str().unwrap();
    let Some((before, after)) = pattern.split_once("{}") else {
        return pattern == name;
    };
    let Some(m) = name
        .strip_prefix(before)
        .and_then(|n| n.strip_suffix(after))
    else {
        return false;
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    match listed["scope"].as_str().unwrap() {
        "per key" => listed["keys"].as_array().unwrap().iter().any(|k| k == m),
        "per bucket" => m.split('_').all(|part| digits(part) || part == "up"),
        _ => digits(m),
    }
}

#[test]
fn every_counter_a_run_writes_is_listed_with_a_unit_and_a_meaning() {
    let device = "examples/raid1-ssd-zeus.toml";
    let listed = counters_json(&["--device", device]);
    assert_eq!(listed["kind"], "counters");
    assert_eq!(listed["device"]["model"], "array");
    let listed = listed["counters"].as_array().unwrap();
    for c in listed {
        assert!(!c["doc"].as_str().unwrap().is_empty(), "{c}");
        assert!(!c["unit"].as_str().unwrap().is_empty(), "{c}");
    }
    let dir = temp_dir("counters");
    let out = dir.path().join("run.json");
    let o = storsim(&[
        "simulate",
        "--quiet",
        "--device",
        device,
        "--workload",
        "examples/oltp-sample.msr.csv",
        "--wrap",
        "--json",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let run: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let written = run["device"]["counters"].as_object().unwrap();
    for name in written.keys() {
        let matching = listed.iter().filter(|c| member(c, name)).count();
        assert_eq!(matching, 1, "{name} is listed {matching} times");
    }
}

#[test]
fn the_text_lists_families_with_their_scope_and_set_changes_the_ftl() {
    let o = storsim(&[
        "counters",
        "--device",
        "flashsim-2009",
        "--set",
        "ssd.ftl=\"dftl\"",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    let line = |name: &str| {
        text.lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no line for {name}:\n{text}"))
            .to_string()
    };
    assert!(line("die_{}_utilisation").contains("per die"), "{text}");
    assert!(line("energy_total_uj").contains("µJ"), "{text}");
    // DFTL's own counters are there, under the SSD's prefix for its FTL.
    line("ftl_cmt_hit_rate");
}

#[test]
fn an_unknown_device_is_refused_naming_it() {
    let o = storsim(&["counters", "--device", "no-such-device"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("no-such-device"), "{}", stderr(&o));
}
