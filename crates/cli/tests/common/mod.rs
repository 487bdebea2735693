//! What the binary's end-to-end tests share: running `storsim` from the repository root, a
//! scratch directory per test, and its standard error as text.

use std::path::{Path, PathBuf};

// Not every test binary drives external tools or runs experiments; those that do not leave
// these unused.
#[allow(dead_code)]
pub mod experiment;
#[allow(dead_code)]
pub mod system;
use std::process::{Command, Output};

/// Runs the `storsim` binary from the repository root, so relative paths like
/// `examples/...` resolve.
pub fn storsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_storsim"))
        .args(args)
        .current_dir(repo_root())
        .output()
        .expect("the storsim binary runs")
}

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// A fresh scratch directory named after the test binary's process and `name`, removed with
/// everything in it when the returned guard drops (at the end of the test, passed or failed):
/// keep the guard alive for as long as its path is used.
pub fn temp_dir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("storsim-cli-{}-{name}-", std::process::id()))
        .tempdir()
        .unwrap()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

// The helpers below serve the model test files (ssd, array, hybrid); each test binary compiles
// this module whole, and those that do not run `simulate` leave them unused.

/// Runs `simulate` with `--json` into a scratch directory called `name` and returns the report.
#[allow(dead_code)]
pub fn simulate_json(device: &str, workload: &str, name: &str) -> serde_json::Value {
    let dir = temp_dir(name);
    let out = dir.path().join("out.json");
    let o = storsim(&[
        "simulate",
        "--device",
        device,
        "--workload",
        workload,
        "--json",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(o.status.success(), "storsim failed: {}", stderr(&o));
    serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap()
}

/// A device counter from a `simulate` report.
#[allow(dead_code)]
pub fn counter(v: &serde_json::Value, name: &str) -> f64 {
    v["device"]["counters"][name]
        .as_f64()
        .unwrap_or_else(|| panic!("no counter {name} in {}", v["device"]["counters"]))
}

/// The fraction of requests that completed within `limit_ns`, read off a run's response-time
/// CDF (steps of 0.01): the largest fraction whose latency is at most the limit.
#[allow(dead_code)]
pub fn fraction_within(v: &serde_json::Value, limit_ns: u64) -> f64 {
    v["summary"]["latency_cdf"]
        .as_array()
        .expect("a latency CDF")
        .iter()
        .filter(|p| p["latency_ns"].as_u64().unwrap() <= limit_ns)
        .map(|p| p["fraction"].as_f64().unwrap())
        .fold(0.0, f64::max)
}
