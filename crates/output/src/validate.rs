//! The `validate` documents (`validate disksim` and `validate trace`): a model's response
//! times beside measured ones, as JSON, text and a per-request CSV.

use crate::json;
use crate::simulate::DeviceFacts;
use crate::text::{self, Table};
use serde_json::{json, Map, Value};
use std::io::Write;
use std::path::Path;
use storsim_core::Op;
use storsim_engine::Replay;
use storsim_stats::Demerit;

/// A validation run: the model's response times beside the measured ones, in trace order.
pub struct ValidationResults<'a> {
    /// The command line that ran it, for the document's `command_line`.
    pub command_line: &'a [String],
    pub device: &'a DeviceFacts,
    pub trace: &'a Path,
    pub simulated_ms: &'a [f64],
    pub measured_ms: &'a [f64],
    pub demerit: Demerit,
    /// What `validate trace` adds: the replay, each request's operation and the counts of
    /// what was not compared. `None` for `validate disksim`, whose document is older.
    pub trace_detail: Option<TraceDetail<'a>>,
}

/// A `validate trace` run's own facts.
pub struct TraceDetail<'a> {
    /// The trace format's name.
    pub format: &'a str,
    pub replay: Replay,
    /// Each compared request's operation, beside `simulated_ms` and `measured_ms`.
    pub ops: &'a [Op],
    /// Each compared request's position in the trace (its line).
    pub positions: &'a [u64],
    /// Requests the device completed.
    pub requests_simulated: u64,
    /// Simulated requests the trace measured no time for (a blkparse D without its C).
    pub requests_unmeasured: u64,
    /// Completions in the trace that match no request in it (a blkparse C without its D).
    pub completions_unmatched: u64,
    /// Reads and writes of zero bytes: nothing to replay or compare.
    pub records_empty: u64,
    /// Malformed records skipped (`--skip-bad`).
    pub records_skipped: u64,
    /// Well-formed records that are not block requests.
    pub records_ignored: u64,
    /// Requests folded back into the device (`--wrap`).
    pub requests_wrapped: u64,
}

/// Percentiles of a sample of access times in ms (nearest rank), for the side-by-side table.
fn percentiles_ms(values: &[f64]) -> [f64; 5] {
    let sorted = sorted_ms(values);
    [0.1, 0.5, 0.9, 0.99, 1.0].map(|q| nearest_rank(&sorted, q))
}

fn sorted_ms(values: &[f64]) -> Vec<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_unstable_by(f64::total_cmp);
    sorted
}

/// The value at fraction `q` of a sorted, non-empty sample, by nearest rank.
fn nearest_rank(sorted: &[f64], q: f64) -> f64 {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// The fractions a validation's CDFs are given at, as the simulate document's `latency_cdf`:
/// 0.00, 0.01, ..., 0.99, 0.999, 0.9999 and 1.
fn cdf_fractions() -> impl Iterator<Item = f64> {
    (0..100)
        .map(|i| i as f64 / 100.0)
        .chain([0.999, 0.9999, 1.0])
}

/// One side's mean and percentiles, as both validate documents give them.
fn side_json(values: &[f64], mean: f64) -> Value {
    let [p10, p50, p90, p99, max] = percentiles_ms(values);
    json!({"mean_ms": mean, "p10_ms": p10, "p50_ms": p50, "p90_ms": p90, "p99_ms": p99, "max_ms": max})
}

/// The mean of the requests' absolute errors, simulated against measured.
fn mean_abs_error_ms(simulated_ms: &[f64], measured_ms: &[f64]) -> f64 {
    simulated_ms
        .iter()
        .zip(measured_ms)
        .map(|(s, m)| (s - m).abs())
        .sum::<f64>()
        / simulated_ms.len() as f64
}

/// The comparison of one group of requests (all, or one operation): both sides with their
/// CDFs, the demerit and the errors (simulated minus measured).
fn comparison_json(simulated_ms: &[f64], measured_ms: &[f64], demerit: &Demerit) -> Value {
    let sim = percentiles_ms(simulated_ms);
    let meas = percentiles_ms(measured_ms);
    let mean_error_ms = demerit.simulated_mean_ms - demerit.measured_mean_ms;
    let mut simulated = side_json(simulated_ms, demerit.simulated_mean_ms);
    simulated["cdf"] = cdf_json(simulated_ms);
    let mut measured = side_json(measured_ms, demerit.measured_mean_ms);
    measured["cdf"] = cdf_json(measured_ms);
    json!({
        "requests": simulated_ms.len(),
        "demerit_ms": demerit.demerit_ms,
        "demerit_pct_of_mean": demerit.demerit_pct_of_mean,
        "simulated": simulated,
        "measured": measured,
        "error": {
            "mean_ms": mean_error_ms,
            "mean_pct": if demerit.measured_mean_ms > 0.0 {
                Value::from(100.0 * mean_error_ms / demerit.measured_mean_ms)
            } else {
                Value::Null
            },
            "p10_ms": sim[0] - meas[0],
            "p50_ms": sim[1] - meas[1],
            "p90_ms": sim[2] - meas[2],
            "p99_ms": sim[3] - meas[3],
            "max_ms": sim[4] - meas[4],
            "mean_abs_request_ms": mean_abs_error_ms(simulated_ms, measured_ms),
        },
    })
}

/// A sample's CDF at [`cdf_fractions`], nearest rank.
fn cdf_json(values: &[f64]) -> Value {
    let sorted = sorted_ms(values);
    Value::Array(
        cdf_fractions()
            .map(|f| json!({"fraction": f, "latency_ms": nearest_rank(&sorted, f)}))
            .collect(),
    )
}

/// The groups a `validate trace` compares: every request, then reads and writes. Each is the
/// requests' simulated and measured times; empty groups are left out.
fn op_groups(r: &ValidationResults, ops: &[Op]) -> Vec<(&'static str, Vec<f64>, Vec<f64>)> {
    let mut groups = vec![("all", r.simulated_ms.to_vec(), r.measured_ms.to_vec())];
    for (name, op) in [("read", Op::Read), ("write", Op::Write)] {
        let (sim, meas): (Vec<f64>, Vec<f64>) = ops
            .iter()
            .zip(r.simulated_ms.iter().zip(r.measured_ms))
            .filter(|(o, _)| **o == op)
            .map(|(_, (s, m))| (*s, *m))
            .unzip();
        if !sim.is_empty() {
            groups.push((name, sim, meas));
        }
    }
    groups
}

/// The JSON document of a validation.
pub fn validation_json(r: &ValidationResults) -> Value {
    let mut doc = json!({
        "schema": crate::SCHEMA,
        "kind": "validate",
        "command_line": r.command_line,
        "version": crate::VERSION,
        "device": {
            "name": r.device.name,
            "model": r.device.model,
            "capacity_bytes": r.device.capacity_bytes,
            "counters": json::counters(&r.device.counters),
        },
        "trace": r.trace.display().to_string(),
        "requests": r.measured_ms.len(),
        "demerit_ms": r.demerit.demerit_ms,
        "demerit_pct_of_mean": r.demerit.demerit_pct_of_mean,
        "simulated": side_json(r.simulated_ms, r.demerit.simulated_mean_ms),
        "measured": side_json(r.measured_ms, r.demerit.measured_mean_ms),
    });
    // As in simulate's document, only a composite device declares its parts.
    if !r.device.parts.is_empty() {
        doc["device"]["parts"] = json::parts(&r.device.parts);
    }
    let Some(t) = &r.trace_detail else {
        return doc;
    };
    doc["command"] = json!("trace");
    doc["format"] = json!(t.format);
    doc["replay"] = json::replay(t.replay);
    doc["requests_simulated"] = json!(t.requests_simulated);
    doc["requests_unmeasured"] = json!(t.requests_unmeasured);
    doc["completions_unmatched"] = json!(t.completions_unmatched);
    doc["records_empty"] = json!(t.records_empty);
    doc["records_skipped"] = json!(t.records_skipped);
    doc["records_ignored"] = json!(t.records_ignored);
    doc["requests_wrapped"] = json!(t.requests_wrapped);
    doc["simulated"]["cdf"] = cdf_json(r.simulated_ms);
    doc["measured"]["cdf"] = cdf_json(r.measured_ms);
    let mut per_op = Map::new();
    for (name, sim, meas) in op_groups(r, t.ops) {
        // The groups are not empty, so there is a demerit.
        if let Some(d) = storsim_stats::disksim_demerit(&sim, &meas) {
            per_op.insert(name.to_string(), comparison_json(&sim, &meas, &d));
        }
    }
    doc["per_op"] = Value::Object(per_op);
    doc
}

/// Milliseconds in a table cell.
fn ms(v: f64) -> String {
    format!("{v:.3}")
}

/// The human-readable validation: both sides' percentiles, the demerit and, for `validate
/// trace`, the errors per operation and what was left out.
pub fn validation_text(r: &ValidationResults) -> String {
    let replay = match &r.trace_detail {
        None => "closed loop, one outstanding".to_string(),
        Some(t) => format!("{}, {}", t.format, text::replay(t.replay)),
    };
    let mut out = format!(
        "device   {} ({})\ntrace    {} ({} requests, {replay})\n\n",
        r.device.name,
        r.device.model,
        r.trace.display(),
        r.measured_ms.len()
    );
    let mut table = Table::new(&[
        "access time (ms)",
        "mean",
        "p10",
        "p50",
        "p90",
        "p99",
        "max",
    ]);
    for (name, values, mean) in [
        ("simulated", r.simulated_ms, r.demerit.simulated_mean_ms),
        ("measured", r.measured_ms, r.demerit.measured_mean_ms),
    ] {
        let mut cells = vec![name.to_string(), ms(mean)];
        cells.extend(percentiles_ms(values).map(ms));
        table.row(cells);
    }
    out += &table.render(&[20, 9, 9, 9, 9, 9, 9]);
    out += &format!(
        "\ndemerit  {:.3} ms ({:.1} % of the measured mean): the RMS horizontal distance between \
         the simulated and measured access-time CDFs, computed as DiskSim does\n",
        r.demerit.demerit_ms, r.demerit.demerit_pct_of_mean
    );
    if let Some(t) = &r.trace_detail {
        out += &trace_detail_text(r, t);
    }
    out
}

/// `validate trace`'s errors per operation and what it left out of the comparison.
fn trace_detail_text(r: &ValidationResults, t: &TraceDetail) -> String {
    let mut table = Table::new(&[
        "error (sim - meas)",
        "requests",
        "demerit",
        "mean",
        "p10",
        "p50",
        "p90",
        "p99",
        "mean |e|",
    ]);
    for (name, sim, meas) in op_groups(r, t.ops) {
        let Some(d) = storsim_stats::disksim_demerit(&sim, &meas) else {
            continue;
        };
        let (ps, pm) = (percentiles_ms(&sim), percentiles_ms(&meas));
        let mut cells = vec![
            format!("{name} (ms)"),
            sim.len().to_string(),
            ms(d.demerit_ms),
            ms(d.simulated_mean_ms - d.measured_mean_ms),
        ];
        cells.extend((0..4).map(|i| ms(ps[i] - pm[i])));
        cells.push(ms(mean_abs_error_ms(&sim, &meas)));
        table.row(cells);
    }
    let mut out = "\n".to_string() + &table.render(&[20, 9, 11, 9, 9, 9, 9, 9, 10]);
    let left_out = [
        (
            t.requests_unmeasured,
            "simulated requests without a measured time",
        ),
        (
            t.completions_unmatched,
            "completions in the trace without their request",
        ),
        (t.records_empty, "empty reads or writes"),
        (t.records_skipped, "malformed records skipped"),
        (t.records_ignored, "records that are not block requests"),
        (t.requests_wrapped, "requests wrapped into the device"),
    ];
    if left_out.iter().any(|(n, _)| *n > 0) {
        out += "\n";
        for (n, what) in left_out.iter().filter(|(n, _)| *n > 0) {
            out += &format!("{n:>9}  {what}\n");
        }
    }
    out
}

/// One line per request in trace order: its simulated and measured access time (and, for
/// `validate trace`, its trace position and operation).
pub fn write_validation_csv(out: &mut impl Write, r: &ValidationResults) -> std::io::Result<()> {
    match &r.trace_detail {
        None => {
            writeln!(out, "request,simulated_ms,measured_ms")?;
            for (i, (s, m)) in r.simulated_ms.iter().zip(r.measured_ms).enumerate() {
                writeln!(out, "{i},{s},{m}")?;
            }
        }
        Some(t) => {
            writeln!(out, "request,position,op,simulated_ms,measured_ms")?;
            let rows = t
                .positions
                .iter()
                .zip(t.ops)
                .zip(r.simulated_ms.iter().zip(r.measured_ms));
            for (i, ((position, op), (s, m))) in rows.enumerate() {
                writeln!(out, "{i},{position},{},{s},{m}", op.name())?;
            }
        }
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> DeviceFacts {
        DeviceFacts {
            name: "disk".into(),
            model: "hdd",
            capacity_bytes: 1 << 30,
            queue_depth: 1,
            parts: Vec::new(),
            counters: Vec::new(),
            descriptors: Vec::new(),
            block_wear: Vec::new(),
        }
    }

    #[test]
    fn numbers_of_a_thousand_ms_and_more_stay_apart_in_the_text() {
        let simulated = [2820.332, 15112.618, 17791.414, 1.0];
        let measured = [2.5, 3.5, 4.5, 5.5];
        let device = facts();
        let demerit = storsim_stats::disksim_demerit(&simulated, &measured).expect("a demerit");
        let r = ValidationResults {
            command_line: &[],
            device: &device,
            trace: Path::new("t.csv"),
            simulated_ms: &simulated,
            measured_ms: &measured,
            demerit,
            trace_detail: Some(TraceDetail {
                format: "msr",
                replay: Replay::Open { time_scale: 1.0 },
                ops: &[Op::Read, Op::Write, Op::Read, Op::Write],
                positions: &[1, 2, 3, 4],
                requests_simulated: 4,
                requests_unmeasured: 0,
                completions_unmatched: 0,
                records_empty: 0,
                records_skipped: 0,
                records_ignored: 0,
                requests_wrapped: 0,
            }),
        };
        let text = validation_text(&r);
        // Every row of both tables has as many whitespace-separated cells as its header: no
        // two numbers ran together.
        let rows: Vec<&str> = text
            .lines()
            .filter(|l| {
                [
                    "simulated",
                    "measured",
                    "all (ms)",
                    "read (ms)",
                    "write (ms)",
                ]
                .iter()
                .any(|p| l.starts_with(p))
            })
            .collect();
        assert_eq!(rows.len(), 5, "{text}");
        for line in rows {
            // "all (ms)" is two words, then eight numbers; a side is one word and six.
            let expected = if line.contains("(ms)") { 10 } else { 7 };
            assert_eq!(line.split_whitespace().count(), expected, "{line}\n{text}");
        }
        assert!(text.contains(" 2820.332 17791.414 "), "{text}");
    }
}
