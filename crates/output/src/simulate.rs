//! The `simulate` document and its text report; also what a sweep point writes.

use crate::json;
use crate::text::{self, human_bytes, us};
use serde_json::{json, Value};
use storsim_core::{BlockWear, Described, Device, DeviceCounter, DevicePart};
use storsim_engine::{Replay, RunInfo};
use storsim_faults::FaultPlan;
use storsim_stats::{Series, Summary};
use storsim_workload::flows::{Extent, FlowSpec};
use storsim_workload::Workload;

/// What a document says of the device after a run, read from it once: its counters and its
/// blocks' wear are the device's state at the end.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceFacts {
    /// The name the run gave the device (a preset's, a file's, with its variants).
    pub name: String,
    /// The model (`ssd`, `hdd`, ...).
    pub model: &'static str,
    pub capacity_bytes: u64,
    pub queue_depth: usize,
    /// The models inside a composite device, each with its counters' prefix (none for a
    /// device of one model).
    pub parts: Vec<DevicePart>,
    pub counters: Vec<DeviceCounter>,
    /// What each counter is (for the text report; the JSON holds the counters alone).
    pub descriptors: Vec<Described>,
    /// Each flash array's per-block erase counts (none for a device without flash).
    pub block_wear: Vec<BlockWear>,
}

impl DeviceFacts {
    /// Reads the facts of `device`, named `name`, as it is now: its counters and wear once.
    pub fn read(name: &str, device: &dyn Device) -> DeviceFacts {
        DeviceFacts {
            name: name.to_string(),
            model: device.model_name(),
            capacity_bytes: device.capacity_bytes(),
            queue_depth: device.queue_depth(),
            parts: device.parts(),
            counters: device.counters(),
            descriptors: device.counter_descriptors(),
            block_wear: device.block_wear(),
        }
    }

    /// The `device` object of `simulate` and `cosim` documents.
    pub(crate) fn json(&self) -> Value {
        let mut device = json!({
            "name": self.name,
            "model": self.model,
            "capacity_bytes": self.capacity_bytes,
            "queue_depth": self.queue_depth,
            "counters": json::counters(&self.counters),
            "block_wear": self.block_wear.iter().map(json::block_wear).collect::<Vec<_>>(),
        });
        // Only a device made of parts (a composite's children, an SSD's FTL) writes `parts`,
        // so that other devices' documents stay as they were.
        if !self.parts.is_empty() {
            device["parts"] = json::parts(&self.parts);
        }
        device
    }
}

/// A finished `simulate` run, as its documents report it.
pub struct SimulationResults<'a> {
    pub seed: u64,
    /// The document's `command_line`: the command's own, or a sweep point's.
    pub command_line: Vec<String>,
    pub device: &'a DeviceFacts,
    pub workload: &'a Workload,
    pub replay: Replay,
    pub info: &'a RunInfo,
    pub summary: &'a Summary,
    /// The run in windows of simulated time, unless `--window off`.
    pub series: Option<&'a Series>,
    /// The device's faults layer, if it has one (the device's `faults`).
    pub faults: Option<&'a FaultPlan>,
    /// Each flow of a workload of several flows, in order; empty for a workload of one.
    pub flows: Vec<FlowResult<'a>>,
    /// With `--fairness`: the smallest slowdown over the largest (`None` inside when no flow
    /// has a slowdown).
    pub fairness: Option<Option<f64>>,
}

/// One flow's results: what it was, its statistics in the shared run, and with `--fairness`
/// its statistics alone and its slowdown.
pub struct FlowResult<'a> {
    pub spec: &'a FlowSpec,
    pub summary: &'a Summary,
    pub alone: Option<(&'a Summary, Option<f64>)>,
}

/// What a run that folded requests into the device (`--wrap`) says of them: how many, and by
/// what factor the highest address exceeded the device, which points at a unit mistake.
/// `None` when no request was folded.
pub fn wrapped_warning(info: &RunInfo, capacity_bytes: u64) -> Option<String> {
    (info.wrapped_requests > 0).then(|| {
        format!(
            "{} requests wrapped into the device: the highest ended at {}",
            info.wrapped_requests,
            storsim_engine::exceeds_by(u128::from(info.highest_wrapped_end_bytes), capacity_bytes)
        )
    })
}

/// The JSON document of a `simulate` run. Keys are sorted and nothing in it depends on the wall
/// clock, so the same run always produces the same bytes.
pub fn simulation_json(r: &SimulationResults) -> Value {
    let mut doc = json!({
        "schema": crate::SCHEMA,
        "kind": "simulate",
        "command_line": r.command_line,
        "version": crate::VERSION,
        "seed": r.seed,
        "device": r.device.json(),
        "workload": {
            "name": r.workload.name,
            "seed": r.workload.seed,
            "format": r.workload.format,
            "skipped_records": r.workload.skipped.get(),
            "ignored_records": r.workload.ignored.get(),
            "replay": json::replay(r.replay),
        },
        "run": run_json(r.info),
        "summary": json::summary(r.summary),
        "series": r.series.map(|s| json::series(s, "simulated")),
    });
    if let Some(plan) = r.faults {
        doc["device"]["faults"] = json::faults(plan);
    }
    if r.summary.errors_counted {
        doc["run"]["retries"] = json!(r.info.retries);
    }
    // A workload of one flow writes neither key, so that its document stays as it was.
    if !r.flows.is_empty() {
        doc["flows"] = Value::Array(r.flows.iter().enumerate().map(flow_json).collect());
    }
    if let Some(fairness) = r.fairness {
        doc["fairness"] = json!(fairness);
    }
    doc
}

/// The document's `run` object: what the engine counted of the run itself.
fn run_json(info: &RunInfo) -> Value {
    json!({
        "requests_issued": info.requests_issued,
        "requests_completed": info.requests_completed,
        "out_of_order_records": info.out_of_order_records,
        "wrapped_requests": info.wrapped_requests,
        "empty_requests": info.empty_requests,
        "refused_requests": info.refused_requests,
        "first_refused": info.first_refused.iter().map(|f| json!({
            "position": f.position,
            "reason": f.reason,
        })).collect::<Vec<_>>(),
        "end_ns": info.end_ns,
        "device_failed": info.device_failed,
        "cancelled": info.cancelled,
    })
}

/// One entry of a document's `flows` (docs/json.md).
fn flow_json((index, f): (usize, &FlowResult)) -> Value {
    let extent = |e: Extent| match e {
        Extent::Bytes(b) => json!({"bytes": b}),
        Extent::Percent(p) => json!({"percent": p}),
    };
    let spec = f.spec;
    let mut flow = json!({
        "index": index,
        "name": spec.name,
        "workload": spec.workload,
        "start_ns": spec.start_ns,
        "stop_ns": spec.stop_ns,
        "class": spec.class.name(),
        "queues": spec.queues,
        "iodepth": spec.iodepth,
        "data_cache": spec.data_cache.map(|m| m.name()),
        "lba": spec.lba.map(|l| json!({
            "offset": extent(l.offset),
            "size": l.size.map(extent),
        })),
        "resources": spec.resources.as_ref().map(|r| json!({
            "channels": r.channels,
            "chips": r.chips,
            "dies": r.dies,
            "planes": r.planes,
        })),
        "summary": json::summary(f.summary),
        "alone_summary": f.alone.map(|(a, _)| json::summary(a)),
        "slowdown": f.alone.and_then(|(_, s)| s),
    });
    // What runs of the workload, on what clock, how often: written only when the flow says,
    // so that the documents of flows without them stay as they were.
    if let Some(n) = spec.head {
        flow["head"] = json!(n);
    }
    if let Some(factor) = spec.time_scale {
        flow["time_scale"] = json!(factor);
    }
    if spec.repeat > 1 {
        flow["repeat"] = json!(spec.repeat);
    }
    if spec.phase > 0 {
        flow["phase"] = json!(spec.phase);
    }
    if let Some(format) = spec.format {
        flow["format"] = json!(format.name());
    }
    flow
}

/// The human-readable summary printed after a run.
pub fn simulation_text(r: &SimulationResults) -> String {
    let s = r.summary;
    // Each flow of a multi-flow workload is replayed as its own spec says (a closed loop of
    // its own depth, or its own arrivals); the run-wide replay would misname them.
    let replay = match r.flows.len() {
        0 => text::replay(r.replay),
        n => format!("{n} flows, each replayed as its spec says"),
    };
    let mut out = format!("storsim {}   seed {}\n", crate::VERSION, r.seed);
    out += &format!(
        "device    {} ({}, {})\n",
        r.device.name,
        r.device.model,
        human_bytes(r.device.capacity_bytes as f64)
    );
    out += &format!("workload  {} ({replay})\n", r.workload.name);
    out += &run_notes(r);
    out += &format!(
        "requests  {} (read {}, write {}, trim {}, flush {}) in {:.6} s simulated\n",
        s.all.requests,
        s.read.requests,
        s.write.requests,
        s.trim.requests,
        s.flush.requests,
        s.elapsed_ns as f64 / 1e9
    );
    out += &format!(
        "rate      {:.1} IOPS, {}/s\n\n",
        s.all.iops,
        human_bytes(s.all.bandwidth_bytes_per_s)
    );
    out += &text::latency_table(s);
    if !r.flows.is_empty() {
        out += &flows_text(r);
    }
    if !r.device.counters.is_empty() {
        out += "\ndevice counters\n";
        out += &text::counter_lines(&r.device.counters, &r.device.descriptors);
    }
    out
}

/// The lines under the workload's that say what did not go as the workload said: an early
/// end, skipped, wrapped, refused and out-of-order records.
fn run_notes(r: &SimulationResults) -> String {
    let mut out = String::new();
    if let Some(failure) = &r.info.device_failed {
        out += &format!(
            "          RUN ENDED EARLY: {failure}\n          the results cover the {} requests completed before it\n",
            r.info.requests_completed
        );
    }
    let skipped = r.workload.skipped.get();
    if skipped > 0 {
        out += &format!("          {skipped} malformed records skipped\n");
    }
    if let Some(warning) = wrapped_warning(r.info, r.device.capacity_bytes) {
        out += &format!("          {warning}\n");
    }
    if r.info.refused_requests > 0 {
        out += &refused_lines(r.info);
    }
    if r.info.out_of_order_records > 0 {
        out += &format!(
            "          {} records earlier than their predecessor, issued at its time\n",
            r.info.out_of_order_records
        );
    }
    out
}

/// The flows of a workload of several: a line of figures each, then each flow's latency
/// table, then with `--fairness` the slowdowns and the fairness.
fn flows_text(r: &SimulationResults) -> String {
    let mut out = format!(
        "\n{:<6}{:<16}{:<8}{:>10}{:>12}{:>14}{:>12}{:>12}{:>10}\n",
        "flow",
        "name",
        "class",
        "requests",
        "IOPS",
        "bandwidth/s",
        "mean (us)",
        "p99 (us)",
        "slowdown"
    );
    for (index, f) in r.flows.iter().enumerate() {
        let s = &f.summary.all;
        let slowdown = match f.alone {
            Some((_, Some(x))) => format!("{x:.3}"),
            Some((_, None)) => "-".to_string(),
            None => String::new(),
        };
        out += &format!(
            "{:<6}{:<16}{:<8}{:>10}{:>12.1}{:>14}{:>12}{:>12}{:>10}\n",
            index,
            f.spec.name,
            f.spec.class.name(),
            s.requests,
            s.iops,
            human_bytes(s.bandwidth_bytes_per_s),
            us(s.latency_ns.mean),
            us(s.latency_ns.p99 as f64),
            slowdown
        );
    }
    if let Some(fairness) = r.fairness {
        match fairness {
            Some(f) => out += &format!("fairness  {f:.3} (smallest slowdown over largest)\n"),
            None => out += "fairness  - (no flow completed requests both shared and alone)\n",
        }
    }
    for (index, f) in r.flows.iter().enumerate() {
        out += &format!("\nflow {index} ({})\n", f.spec.name);
        out += &text::latency_table(f.summary);
    }
    out
}

/// The requests the device refused under `--on-refused count`: how many, then the first ones
/// with their records and the device's reasons.
fn refused_lines(info: &RunInfo) -> String {
    let n = info.refused_requests;
    let mut out = format!(
        "          {n} requests refused by the device, not issued and not in the statistics\n"
    );
    for f in &info.first_refused {
        out += &format!("            {}: {}\n", f.position, f.reason);
    }
    let described = info.first_refused.len() as u64;
    if n > described {
        out += &format!("            and {} more\n", n - described);
    }
    out
}
