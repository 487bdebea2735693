//! The `cosim` document and its text report.

use crate::json;
use crate::simulate::DeviceFacts;
use crate::text::{self, human_bytes};
use serde_json::{json, Value};
use storsim_cosim::{CosimReport, ProgramExit};
use storsim_faults::FaultPlan;

/// A finished `cosim` run, as its documents report it.
pub struct CosimResults<'a> {
    /// The command line that started it, for the document's `command_line`.
    pub command_line: &'a [String],
    pub device: &'a DeviceFacts,
    pub program: &'a [std::ffi::OsString],
    pub extent_bytes: u64,
    pub report: &'a CosimReport,
    /// The device's faults layer, if it has one (the device's `faults`, as in simulate).
    pub faults: Option<&'a FaultPlan>,
}

fn cpu_speed_json(speed: f64) -> Value {
    if speed.is_finite() {
        json!(speed)
    } else {
        json!("inf")
    }
}

/// The JSON document of a `cosim` run: the program's times, the calls it made, and the device
/// as `simulate` reports it (`device` and `summary` have the same shape).
pub fn cosim_json(r: &CosimResults) -> Value {
    let c = &r.report.calls;
    let t = r.report;
    let mut doc = json!({
        "schema": crate::SCHEMA,
        "kind": "cosim",
        "command_line": r.command_line,
        "version": crate::VERSION,
        "device": r.device.json(),
        "program": {
            "argv": r.program.iter().map(|a| a.to_string_lossy().into_owned()).collect::<Vec<_>>(),
            "exit": match t.exit {
                ProgramExit::Code(code) => json!({"code": code}),
                ProgramExit::Signal(signal) => json!({"signal": signal}),
            },
            "intercepted": t.intercepted,
        },
        "cpu_speed": cpu_speed_json(t.cpu_speed),
        "time": {
            "virtual_elapsed_ns": t.virtual_elapsed_ns,
            "real_elapsed_ns": t.real_elapsed_ns,
            "speedup": t.speedup(),
            "paused_real_ns": t.paused_real_ns,
            "skipped_virtual_ns": t.skipped_virtual_ns,
        },
        "calls": {
            "reads": c.reads, "writes": c.writes, "flushes": c.flushes,
            "read_bytes": c.read_bytes, "write_bytes": c.write_bytes,
            "opens": c.opens, "sleeps": c.sleeps, "sleep_requested_ns": c.sleep_requested_ns,
            "failed": c.failed, "processes": c.processes, "threads": c.threads,
        },
        "layout": {
            "extent_bytes": r.extent_bytes,
            "files": t.files,
            "allocated_bytes": t.allocated_bytes,
        },
        "summary": json::summary(&t.summary),
        "series": json::series(&t.series, "simulated"),
        "clock_series": {
            "real_ns": t.clock_series.iter().map(|c| c.real_ns).collect::<Vec<_>>(),
            "virtual_ns": t.clock_series.iter().map(|c| c.virtual_ns).collect::<Vec<_>>(),
            "paused_ns": t.clock_series.iter().map(|c| c.paused_real_ns).collect::<Vec<_>>(),
            "skipped_ns": t.clock_series.iter().map(|c| c.skipped_virtual_ns).collect::<Vec<_>>(),
        },
        "warnings": t.warnings,
    });
    if let Some(plan) = r.faults {
        doc["device"]["faults"] = json::faults(plan);
    }
    doc
}

/// The human-readable cosim report (written to standard error: standard output is the
/// program's).
pub fn cosim_text(r: &CosimResults) -> String {
    let t = r.report;
    let c = &t.calls;
    let speed = if t.cpu_speed.is_finite() {
        format!("{}x", t.cpu_speed)
    } else {
        "infinite (computation is free)".to_string()
    };
    let mut out = format!(
        "storsim {}   cosim on {}, CPU speed {speed}\n",
        crate::VERSION,
        r.device.name
    );
    out += &format!(
        "time      {:.6} s virtual in {:.6} s real ({:.2}x real time); {:.6} s skipped, {:.6} s real paused\n",
        t.virtual_elapsed_ns as f64 / 1e9,
        t.real_elapsed_ns as f64 / 1e9,
        t.speedup(),
        t.skipped_virtual_ns as f64 / 1e9,
        t.paused_real_ns as f64 / 1e9
    );
    out += &format!(
        "calls     {} reads ({}), {} writes ({}), {} flushes, {} opens, {} sleeps, {} failed; {} processes, {} more threads\n",
        c.reads,
        human_bytes(c.read_bytes as f64),
        c.writes,
        human_bytes(c.write_bytes as f64),
        c.flushes,
        c.opens,
        c.sleeps,
        c.failed,
        c.processes,
        c.threads
    );
    out += &format!(
        "layout    {} files in {} extents of {}, {} on the device\n\n",
        t.files,
        t.allocated_bytes / r.extent_bytes.max(1),
        human_bytes(r.extent_bytes as f64),
        human_bytes(t.allocated_bytes as f64)
    );
    out += "the device's response times\n";
    out += &text::latency_table(&t.summary);
    for w in &t.warnings {
        out += &format!("warning: {w}\n");
    }
    if !t.intercepted {
        out += "warning: the program never loaded the cosim library (statically linked, setuid, or LD_PRELOAD cleared): nothing was simulated\n";
    }
    out
}
