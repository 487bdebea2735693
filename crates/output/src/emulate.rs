//! The `emulate` document (final, or asked for on the control socket) and its text report.

use crate::json;
use crate::text::{self, human_bytes, us};
use serde_json::{json, Value};
use storsim_core::Op;
use storsim_emulate::{Backing, EmulatorReport};

/// The JSON document of an `emulate` run, with the command line that started it. Unlike
/// simulation results it holds wall-clock measurements, so two runs never match byte for byte.
pub fn emulation_json(r: &EmulatorReport, command_line: &[String]) -> Value {
    let l = &r.lateness;
    let mut doc = json!({
        "schema": crate::SCHEMA,
        "kind": "emulate",
        "command_line": command_line,
        "version": crate::VERSION,
        "device": {
            "name": r.device_name,
            "counters": json::counters(&r.device_counters),
            "switches": r.switches,
            "model_failures": r.model_failures,
        },
        "export_bytes": r.export_bytes,
        "backing": backing_name(&r.backing),
        "allocated_bytes": r.allocated_bytes,
        "elapsed_ns": r.elapsed_ns,
        "requests": {
            "replied": l.replies,
            "failed": r.failed,
            "answered_at_once": r.answered_at_once,
            "polled": r.polled,
            "store_thread": r.store_thread_jobs,
            "in_flight": r.in_flight,
            "read": l.replies_by_op[Op::Read.index()],
            "write": l.replies_by_op[Op::Write.index()],
            "trim": l.replies_by_op[Op::Trim.index()],
            "flush": l.replies_by_op[Op::Flush.index()],
        },
        "intake_ns": json::distribution(&r.intake_ns),
        "lateness": {
            "threshold_ns": l.threshold_ns,
            "late": l.late,
            "overran": l.overran,
            "lateness_ns": json::distribution(&l.lateness_ns),
            "cdf": l.cdf.iter()
                .map(|p| json!({"lateness_ns": p.latency_ns, "fraction": p.fraction}))
                .collect::<Vec<_>>(),
            "relative_percent": {
                "replies": l.relative_percent.count,
                "mean": l.relative_percent.mean,
                "p50": l.relative_percent.p50,
                "p90": l.relative_percent.p90,
                "p99": l.relative_percent.p99,
                "max": l.relative_percent.max,
            },
            "relative_cdf": l.relative_cdf.iter()
                .map(|p| json!({"percent": p.percent, "fraction": p.fraction}))
                .collect::<Vec<_>>(),
        },
        "model": json::summary(&r.model),
        "series": json::series(&r.series, "wall"),
    });
    // The device's model and, for a device made of parts, its parts, as simulate's document
    // declares them, so that the report draws the same plots of its counters.
    if let Some(model) = r.device_model {
        doc["device"]["model"] = json!(model);
    }
    if !r.device_parts.is_empty() {
        doc["device"]["parts"] = json::parts(&r.device_parts);
    }
    doc
}

fn backing_name(b: &Backing) -> String {
    match b {
        Backing::Memory => "memory".to_string(),
        Backing::None => "none".to_string(),
        Backing::File(path) => format!("file:{}", path.display()),
    }
}

/// The human-readable emulator report: what was served, how punctually, and the model's view.
pub fn emulation_text(r: &EmulatorReport) -> String {
    let l = &r.lateness;
    let mut out = format!(
        "storsim {}   emulating {} for {:.3} s\n",
        crate::VERSION,
        r.device_name,
        r.elapsed_ns as f64 / 1e9
    );
    out += &format!(
        "export    {} ({} bytes), backing {}, {} held\n",
        human_bytes(r.export_bytes as f64),
        r.export_bytes,
        backing_name(&r.backing),
        human_bytes(r.allocated_bytes as f64)
    );
    if !r.switches.is_empty() {
        out += &format!("switched  to {}\n", r.switches.join(", then "));
    }
    for failure in &r.model_failures {
        out += &format!("FAILED    {failure}: its requests failed with EIO\n");
    }
    out += &format!(
        "requests  {} replied (read {}, write {}, trim {}, flush {}), {} failed, {} in flight\n",
        l.replies,
        l.replies_by_op[Op::Read.index()],
        l.replies_by_op[Op::Write.index()],
        l.replies_by_op[Op::Trim.index()],
        l.replies_by_op[Op::Flush.index()],
        r.failed,
        r.in_flight
    );
    let d = &l.lateness_ns;
    out += &format!(
        "lateness  p50 {} us, p99 {} us, p99.9 {} us, max {} us; {} late (over {} us), {} of them computed after their instant\n",
        us(d.p50 as f64),
        us(d.p99 as f64),
        us(d.p999 as f64),
        us(d.max as f64),
        l.late,
        us(l.threshold_ns as f64),
        l.overran
    );
    out += &format!(
        "intake    p50 {} us, p99 {} us, max {} us from receiving a request to the model seeing it\n\n",
        us(r.intake_ns.p50 as f64),
        us(r.intake_ns.p99 as f64),
        us(r.intake_ns.max as f64)
    );
    out += "the model's response times\n";
    out += &text::latency_table(&r.model);
    if !r.device_counters.is_empty() {
        out += "\ndevice counters\n";
        out += &text::counter_lines(&r.device_counters, &r.device_descriptors);
    }
    out
}
