//! A `simulate` run in the shape of fio's `--output-format=json`, so that scripts written for
//! fio's results read storsim's (docs/workloads/fio-jobs.md, "Results in fio's shape"): one
//! entry of `jobs` per flow (per job clone of an fio job file), each with its `read`, `write`
//! and `sync` figures under fio's keys and in fio's units (`bw` in KiB/s, `runtime` in
//! milliseconds, latencies in nanoseconds, percentiles keyed `"99.000000"`).
//!
//! Only what storsim measures is written: a latency's min, max, mean, count and the
//! percentiles 50, 90, 99 and 99.9 (fio writes more, and a standard deviation); no CPU,
//! context-switch or timestamp keys (a timestamp would make the document depend on the wall
//! clock). storsim submits a request in no time, so its response time is both fio's `clat_ns`
//! (completion latency) and `lat_ns` (total latency).

use crate::simulate::SimulationResults;
use serde_json::{json, Map, Value};
use storsim_stats::{Distribution, OpSummary, Summary};

/// The document, laid out as every storsim JSON document is.
pub fn fio_json(r: &SimulationResults) -> String {
    let jobs: Vec<Value> = if r.flows.is_empty() {
        vec![job(&r.workload.name, 0, &r.workload.name, r.summary)]
    } else {
        r.flows
            .iter()
            .map(|f| job(&f.spec.name, f.spec.phase, &f.spec.workload, f.summary))
            .collect()
    };
    let doc = json!({
        "fio version": format!("storsim-{}", crate::VERSION),
        "global options": {},
        "jobs": jobs,
    });
    crate::json::text(&doc)
}

/// One flow as one of fio's jobs; its phase is its reporting group, as a `stonewall` starts a
/// new one in fio.
fn job(name: &str, group: u32, workload: &str, s: &Summary) -> Value {
    json!({
        "jobname": name,
        "groupid": group,
        "error": 0,
        "job options": {"storsim_workload": workload},
        "read": direction(&s.read, s.elapsed_ns),
        "write": direction(&s.write, s.elapsed_ns),
        "trim": direction(&s.trim, s.elapsed_ns),
        "sync": {
            "total_ios": s.flush.requests,
            "lat_ns": latency(&s.flush.latency_ns, s.flush.requests),
        },
        "job_runtime": s.elapsed_ns / 1_000_000,
    })
}

/// One direction's figures under fio's keys.
fn direction(op: &OpSummary, elapsed_ns: u64) -> Value {
    let lat = latency(&op.latency_ns, op.requests);
    json!({
        "io_bytes": op.bytes,
        "io_kbytes": op.bytes / 1024,
        "bw_bytes": op.bandwidth_bytes_per_s.round() as u64,
        "bw": (op.bandwidth_bytes_per_s / 1024.0).round() as u64,
        "iops": op.iops,
        "runtime": if op.requests > 0 { elapsed_ns / 1_000_000 } else { 0 },
        "total_ios": op.requests,
        "short_ios": 0,
        "drop_ios": 0,
        "clat_ns": lat,
        "lat_ns": lat,
    })
}

/// A latency distribution as fio writes one: all zero when no request was measured.
fn latency(d: &Distribution, n: u64) -> Value {
    let mut value = json!({
        "min": if n > 0 { d.min } else { 0 },
        "max": if n > 0 { d.max } else { 0 },
        "mean": if n > 0 { d.mean } else { 0.0 },
        "N": n,
    });
    if n > 0 {
        let mut percentile = Map::new();
        for (key, ns) in [
            ("50.000000", d.p50),
            ("90.000000", d.p90),
            ("99.000000", d.p99),
            ("99.900000", d.p999),
        ] {
            percentile.insert(key.to_string(), json!(ns));
        }
        value["percentile"] = Value::Object(percentile);
    }
    value
}
