//! The `inspect` document and its text report: a workload's characterisation.

use crate::text::human_bytes;
use serde_json::{json, Map, Value};
use storsim_core::Op;
use storsim_workload::trace::Characterisation;

fn size_label(upper: u64) -> String {
    if upper == u64::MAX {
        return "> 1 MiB".to_string();
    }
    if upper >= 1 << 20 {
        format!("<= {} MiB", upper >> 20)
    } else if upper >= 1 << 10 {
        format!("<= {} KiB", upper >> 10)
    } else {
        format!("<= {upper} B")
    }
}

/// The JSON document of `storsim inspect` of the workload `name`, run as `command_line`.
pub fn inspect_json(name: &str, c: &Characterisation, command_line: &[String]) -> Value {
    let per_op: Map<String, Value> = Op::ALL
        .iter()
        .map(|op| (op.name().to_string(), json!(c.count(*op))))
        .collect();
    let per_device: Map<String, Value> = c
        .per_device
        .iter()
        .map(|(d, n)| (d.to_string(), json!(n)))
        .collect();
    json!({
        "schema": crate::SCHEMA,
        "kind": "inspect",
        "command_line": command_line,
        "version": crate::VERSION,
        "trace": name,
        "requests": c.requests,
        "per_op": per_op,
        "read_percent": c.read_percent,
        "size_histogram": c.size_histogram.iter().map(|(upper, n)| json!({
            "upper_bound_bytes": if *upper == u64::MAX { Value::Null } else { json!(upper) },
            "requests": n,
        })).collect::<Vec<_>>(),
        "sequential_fraction": c.sequential_fraction,
        "random_write_fraction": c.random_write_fraction,
        "mean_interarrival_ns": c.mean_interarrival_ns,
        "span_ns": c.span_ns,
        "address_range_bytes": c.address_range.map(|(lo, hi)| json!({"min_offset": lo, "max_end": hi})),
        "bytes_read": c.bytes_read,
        "bytes_written": c.bytes_written,
        "per_device": per_device,
        "volumes": c.volumes.iter().map(|(d, v)| json!({
            "device": d,
            "requests": v.requests,
            "bytes_read": v.bytes_read,
            "bytes_written": v.bytes_written,
            "min_size_bytes": v.size_range_bytes.map(|(low, _)| low),
            "max_size_bytes": v.size_range_bytes.map(|(_, high)| high),
            "first_ns": v.first_ns,
            "span_ns": v.span_ns(),
        })).collect::<Vec<_>>(),
        "format": c.format,
        "format_detected_from": c.detected_from,
        "skipped_records": c.skipped_records,
        "ignored_records": c.ignored_records,
    })
}

/// The human-readable characterisation printed by `storsim inspect`.
pub fn inspect_text(name: &str, c: &Characterisation) -> String {
    let opt = |v: Option<f64>, scale: f64, unit: &str| match v {
        Some(x) => format!("{:.2}{unit}", x * scale),
        None => "n/a".to_string(),
    };
    let mut out = format!("trace          {name}\n");
    out += &format_line(c);
    out += &format!(
        "requests       {} (read {}, write {}, trim {}, flush {})\n",
        c.requests,
        c.count(Op::Read),
        c.count(Op::Write),
        c.count(Op::Trim),
        c.count(Op::Flush)
    );
    if c.skipped_records > 0 {
        out += &format!(
            "               {} malformed records skipped\n",
            c.skipped_records
        );
    }
    if c.ignored_records > 0 {
        out += &format!(
            "               {} records that are not block requests ignored\n",
            c.ignored_records
        );
    }
    out += &format!(
        "read           {} of reads + writes\n",
        opt(c.read_percent, 1.0, " %")
    );
    out += &format!(
        "sequential     {} (starts where the same device's previous request ended)\n",
        opt(c.sequential_fraction, 100.0, " %")
    );
    out += &format!(
        "random writes  {} of writes (do not start where the same device's previous write ended)\n",
        opt(c.random_write_fraction, 100.0, " %")
    );
    out += &format!(
        "inter-arrival  {} mean\n",
        opt(c.mean_interarrival_ns, 1e-3, " us")
    );
    out += &format!("time span      {:.6} s\n", c.span_ns as f64 / 1e9);
    match c.address_range {
        Some((lo, hi)) => {
            out += &format!(
                "addresses      [{lo}, {hi}) bytes ({})\n",
                human_bytes((hi - lo) as f64)
            )
        }
        None => out += "addresses      n/a\n",
    }
    out += &format!(
        "data           {} read, {} written\n",
        human_bytes(c.bytes_read as f64),
        human_bytes(c.bytes_written as f64)
    );
    out += &sizes_text(c);
    out
}

/// Which format the trace was read as and, when detection chose it, what it saw.
fn format_line(c: &Characterisation) -> String {
    match (c.format, &c.detected_from) {
        (Some(format), Some(evidence)) => {
            format!("format         {format} (detected: {evidence})\n")
        }
        (Some(format), None) => format!("format         {format} (as named)\n"),
        (None, _) => String::new(),
    }
}

/// The request-size histogram's non-empty bins, then the volumes of a trace of several
/// devices: each one's requests, bytes, request sizes and time span.
fn sizes_text(c: &Characterisation) -> String {
    let mut out = "request sizes\n".to_string();
    let with_data: u64 = c.size_histogram.iter().map(|(_, n)| n).sum();
    for (upper, n) in &c.size_histogram {
        if *n > 0 {
            out += &format!(
                "  {:<12}{:>12}  {:5.1} %\n",
                size_label(*upper),
                n,
                100.0 * *n as f64 / with_data.max(1) as f64
            );
        }
    }
    if c.volumes.len() > 1 {
        out += &format!(
            "devices\n  {:<12}{:>12}{:>12}{:>12}{:>24}{:>14}\n",
            "device", "requests", "read", "written", "sizes", "span"
        );
        for (d, v) in &c.volumes {
            let sizes = match v.size_range_bytes {
                Some((low, high)) if low == high => human_bytes(low as f64),
                Some((low, high)) => {
                    format!("{} - {}", human_bytes(low as f64), human_bytes(high as f64))
                }
                None => "n/a".to_string(),
            };
            out += &format!(
                "  {d:<12}{:>12}{:>12}{:>12}{sizes:>24}{:>12.3} s\n",
                v.requests,
                human_bytes(v.bytes_read as f64),
                human_bytes(v.bytes_written as f64),
                v.span_ns() as f64 / 1e9
            );
        }
    }
    out
}
