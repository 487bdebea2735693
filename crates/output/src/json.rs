//! JSON text and the pieces every document shares: summaries, distributions, time series,
//! counters, the replay and the faults plan.

use serde_json::{json, Map, Value};
use storsim_core::{BlockWear, DeviceCounter, DevicePart};
use storsim_engine::Replay;
use storsim_faults::{Delay, FaultPlan, FaultRule};
use storsim_stats::{Distribution, ErrorCounts, OpSummary, Series, Summary};

/// A document's text as every front end writes it: pretty-printed with two-space indents,
/// object keys in order, every array of numbers (or `null`s, which stand for numbers that do
/// not exist) on one line, and a final newline. A device's per-block erase counts would
/// otherwise take a line per block (65,536 lines for a small SSD).
///
/// Written by walking the value once, rather than pretty-printing it and joining lines
/// afterwards; scalars are written by `serde_json`, so numbers and strings read exactly as
/// its own printer writes them.
pub fn text(value: &Value) -> String {
    let mut out = String::with_capacity(4096);
    write_value(&mut out, value, 0);
    out.push('\n');
    out
}

fn indent(out: &mut String, depth: usize) {
    for _ in 0..depth {
        out.push_str("  ");
    }
}

fn write_scalar(out: &mut String, value: &Value) {
    // A scalar (or a key, as a string value) always serialises.
    out.push_str(&serde_json::to_string(value).expect("a JSON scalar serialises"));
}

fn write_value(out: &mut String, value: &Value, depth: usize) {
    match value {
        Value::Array(items) if items.is_empty() => out.push_str("[]"),
        Value::Array(items) if items.iter().all(|v| v.is_number() || v.is_null()) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_scalar(out, item);
            }
            out.push(']');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                out.push_str(if i == 0 { "\n" } else { ",\n" });
                indent(out, depth + 1);
                write_value(out, item, depth + 1);
            }
            out.push('\n');
            indent(out, depth);
            out.push(']');
        }
        Value::Object(map) if map.is_empty() => out.push_str("{}"),
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                out.push_str(if i == 0 { "\n" } else { ",\n" });
                indent(out, depth + 1);
                write_scalar(out, &Value::String(key.clone()));
                out.push_str(": ");
                write_value(out, item, depth + 1);
            }
            out.push('\n');
            indent(out, depth);
            out.push('}');
        }
        scalar => write_scalar(out, scalar),
    }
}

/// Counters are f64 in the model interface; whole numbers are written as JSON integers so that
/// counts read as counts.
pub(crate) fn counter(value: f64) -> Value {
    if value.fract() == 0.0 && value.abs() < 9.0e15 {
        json!(value as i64)
    } else {
        json!(value)
    }
}

/// A device's counters as one object, name to value.
pub(crate) fn counters(counters: &[DeviceCounter]) -> Value {
    Value::Object(
        counters
            .iter()
            .map(|c| (c.name.clone(), counter(c.value)))
            .collect(),
    )
}

pub(crate) fn replay(replay: Replay) -> Value {
    match replay {
        Replay::Open { time_scale } => json!({"mode": "open", "time_scale": time_scale}),
        Replay::Closed { depth } => json!({"mode": "closed", "depth": depth}),
        Replay::AsFastAsPossible => json!({"mode": "afap"}),
    }
}

pub(crate) fn distribution(d: &Distribution) -> Value {
    json!({
        "mean": d.mean, "min": d.min, "p50": d.p50, "p90": d.p90,
        "p99": d.p99, "p999": d.p999, "max": d.max,
    })
}

fn op(s: &OpSummary) -> Value {
    json!({
        "requests": s.requests,
        "bytes": s.bytes,
        "iops": s.iops,
        "bandwidth_bytes_per_s": s.bandwidth_bytes_per_s,
        "latency_ns": distribution(&s.latency_ns),
        "queueing_ns": distribution(&s.queueing_ns),
        "service_ns": distribution(&s.service_ns),
    })
}

/// A device's parts: each model inside it with its counters' prefix, in the device's order.
pub(crate) fn parts(parts: &[DevicePart]) -> Value {
    Value::Array(
        parts
            .iter()
            .map(|p| json!({"prefix": p.prefix, "model": p.model}))
            .collect(),
    )
}

/// One flash array's per-block erase counts with the shape that places each block.
pub(crate) fn block_wear(w: &BlockWear) -> Value {
    json!({
        "unit": w.unit,
        "channels": w.channels,
        "chips_per_channel": w.chips_per_channel,
        "dies_per_chip": w.dies_per_chip,
        "planes_per_die": w.planes_per_die,
        "blocks_per_plane": w.blocks_per_plane,
        "pages_per_block": w.pages_per_block,
        "erase_counts_per_block": w.erase_counts,
    })
}

/// The `series` object (docs/json.md): one array per figure, one entry per window; `clock`
/// names the time the windows are of (`simulated` or `wall`).
pub fn series(s: &Series, clock: &str) -> Value {
    let ops: Map<String, Value> = s
        .ops
        .iter()
        .map(|o| {
            let name = o.op.map_or("all", |op| op.name());
            let figures = json!({
                "requests": o.requests,
                "bytes": o.bytes,
                "iops": o.iops,
                "bandwidth_bytes_per_s": o.bandwidth_bytes_per_s,
                "latency_mean_ns": o.latency_mean_ns,
                "latency_p50_ns": o.latency_p50_ns,
                "latency_p99_ns": o.latency_p99_ns,
                "latency_p999_ns": o.latency_p999_ns,
                "latency_max_ns": o.latency_max_ns,
            });
            (name.to_string(), figures)
        })
        .collect();
    let device: Map<String, Value> = s
        .counters
        .iter()
        .map(|(name, values)| {
            let values = values
                .iter()
                .map(|v| v.map_or(Value::Null, counter))
                .collect();
            (name.clone(), Value::Array(values))
        })
        .collect();
    let mut series = json!({
        "clock": clock,
        "window_ns": s.window_ns,
        "windows": s.windows(),
        "end_ns": s.end_ns,
        "ops": ops,
        "queue_depth": {
            "host_mean": s.host_queue_mean,
            "device_mean": s.device_queue_mean,
        },
        "device": device,
    });
    // A driver's own channels (the emulator's `lateness_ns`) sit beside the figures every
    // series has, under the channel's name; a simulation has none.
    if let Value::Object(map) = &mut series {
        for c in &s.channels {
            map.insert(
                c.name.clone(),
                json!({"mean": c.mean, "p50": c.p50, "p99": c.p99, "max": c.max}),
            );
        }
    }
    series
}

/// A summary's error counts (`errors`: the total and each kind) for one operation.
fn errors(e: &ErrorCounts) -> Value {
    let mut map: Map<String, Value> = e
        .iter()
        .map(|(k, n)| (k.name().to_string(), json!(n)))
        .collect();
    map.insert("total".into(), json!(e.total()));
    Value::Object(map)
}

/// The faults layer's plan, as the device's `faults` object.
pub fn faults(plan: &FaultPlan) -> Value {
    json!({
        "host_timeout_ns": plan.host_timeout_ns,
        "seed": plan.seed,
        "rules": fault_rules(&plan.rules),
    })
}

/// Fault rules as the `faults.rules` array: one object per rule, every key present.
pub(crate) fn fault_rules(rules: &[FaultRule]) -> Value {
    let rules: Vec<Value> = rules
        .iter()
        .map(|r| {
            let delay = r.delay.map(|d| match d {
                Delay::Fixed { ns } => json!({"distribution": "fixed", "ns": ns}),
                Delay::Uniform { min_ns, max_ns } => {
                    json!({"distribution": "uniform", "min_ns": min_ns, "max_ns": max_ns})
                }
                Delay::Exponential { mean_ns } => {
                    json!({"distribution": "exponential", "mean_ns": mean_ns})
                }
            });
            json!({
                "kind": r.kind.name(),
                "op": r.op.map(|op| op.name()),
                "rate_per_million": r.rate_per_million,
                "lba_start": r.sectors.map(|s| s.0),
                "lba_end": r.sectors.map(|s| s.1),
                "from_request": r.from_request,
                "from_ns": r.from_ns,
                "duration_ns": r.duration_ns,
                "delay": delay,
            })
        })
        .collect();
    Value::Array(rules)
}

/// The summary's JSON object: all operations' figures at the top level, then one object per
/// operation and the latency CDF.
pub(crate) fn summary(s: &Summary) -> Value {
    let mut summary = match op(&s.all) {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    summary.insert("elapsed_ns".into(), json!(s.elapsed_ns));
    summary.insert("read".into(), op(&s.read));
    summary.insert("write".into(), op(&s.write));
    summary.insert("trim".into(), op(&s.trim));
    summary.insert("flush".into(), op(&s.flush));
    // A run that cannot fail reads as before errors were counted.
    if s.errors_counted {
        summary.insert("errors".into(), errors(&s.all.errors));
        for (name, op) in [
            ("read", &s.read),
            ("write", &s.write),
            ("trim", &s.trim),
            ("flush", &s.flush),
        ] {
            if let Some(Value::Object(m)) = summary.get_mut(name) {
                m.insert("errors".into(), errors(&op.errors));
            }
        }
        summary.insert(
            "latency_includes_failed".into(),
            json!(s.latency_includes_failed),
        );
    }
    summary.insert(
        "latency_cdf".into(),
        Value::Array(
            s.latency_cdf
                .iter()
                .map(|p| json!({"latency_ns": p.latency_ns, "fraction": p.fraction}))
                .collect(),
        ),
    );
    Value::Object(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The layout the documents have always had: `serde_json`'s pretty printer with every line
    /// of a number array joined (the way documents were written before the walker).
    fn pretty_then_joined(value: &Value) -> String {
        let pretty = serde_json::to_string_pretty(value).expect("serialises");
        let lines: Vec<&str> = pretty.lines().collect();
        let is_number = |line: &str| {
            let t = line.trim().trim_end_matches(',');
            !t.is_empty() && (t == "null" || t.parse::<f64>().is_ok())
        };
        let mut out = String::new();
        let mut i = 0;
        while i < lines.len() {
            out += lines[i];
            if lines[i].ends_with('[') {
                let n = lines[i + 1..].iter().take_while(|l| is_number(l)).count();
                let closes = lines
                    .get(i + 1 + n)
                    .is_some_and(|l| l.trim_start().starts_with(']'));
                if n > 0 && closes {
                    let items: Vec<&str> =
                        lines[i + 1..i + 1 + n].iter().map(|l| l.trim()).collect();
                    out += &items.join(" ");
                    out += lines[i + 1 + n].trim_start();
                    i += n + 2;
                    out.push('\n');
                    continue;
                }
            }
            out.push('\n');
            i += 1;
        }
        out
    }

    #[test]
    fn number_arrays_go_on_one_line_and_keep_their_values() {
        let value = json!({
            "counts": [3, 0, 17],
            "gaps": [null, 2, null],
            "empty": [],
            "none": {},
            "mixed": [1, "a"],
            "objects": [{"x": 1}, {}],
            "nested": {"fractions": [0.5, -2.5e-7], "arrays": [[1, 2], [], [null]]},
            "text": "a \"quoted\" line\n",
            "big": 18446744073709551615u64,
            "negative": -3,
        });
        let written = text(&value);
        assert!(written.contains("\"counts\": [3, 0, 17],\n"), "{written}");
        assert!(
            written.contains("\"gaps\": [null, 2, null],\n"),
            "{written}"
        );
        assert!(
            written.contains("\"fractions\": [0.5, -2.5e-7]\n"),
            "{written}"
        );
        assert!(written.contains("\"mixed\": [\n"), "{written}");
        assert!(written.ends_with("}\n"), "{written}");
        assert_eq!(serde_json::from_str::<Value>(&written).unwrap(), value);
        // Byte for byte the layout documents had before.
        assert_eq!(written, pretty_then_joined(&value));
    }

    #[test]
    fn the_layout_is_the_old_one_on_a_real_document() {
        let wear = BlockWear {
            unit: "ssd".into(),
            channels: 2,
            chips_per_channel: 1,
            dies_per_chip: 1,
            planes_per_die: 1,
            blocks_per_plane: 3,
            pages_per_block: 64,
            erase_counts: vec![0, 5, 7, 1, 1, 0],
        };
        let value = json!({
            "device": {"counters": counters(&[DeviceCounter::new("waf", 1.25), DeviceCounter::new("erases", 14.0)]),
                       "block_wear": [block_wear(&wear)]},
            "summary": summary(&Summary::default()),
            "replay": replay(Replay::Closed { depth: 4 }),
        });
        assert_eq!(text(&value), pretty_then_joined(&value));
    }
}
