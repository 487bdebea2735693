//! Writing results: the text summary, the JSON document and the per-request CSV. Only this
//! module knows output formats; the numbers come as plain data from the stats crate.

use crate::CliError;
use serde_json::{json, Map, Value};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use storsim_config::FaultPlan;
use storsim_core::{BlockWear, Completion, Device, DeviceCounter, Op};
use storsim_cosim::{CosimReport, ProgramExit};
use storsim_emulate::{Backing, EmulatorReport};
use storsim_engine::{Replay, RunInfo};
use storsim_faults::Delay;
use storsim_stats::{Demerit, Distribution, ErrorCounts, OpSummary, Series, Summary};
use storsim_workload::flows::{Extent, FlowSpec};
use storsim_workload::trace::Characterisation;
use storsim_workload::Workload;

pub struct SimulationResults<'a> {
    pub seed: u64,
    /// The document's `command_line`: [`command_line`] for a command, a sweep point's own.
    pub command_line: Vec<String>,
    pub device_name: &'a str,
    pub device: &'a dyn Device,
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

/// Counters are f64 in the model interface; whole numbers are written as JSON integers so that
/// counts read as counts.
fn counter_json(value: f64) -> Value {
    if value.fract() == 0.0 && value.abs() < 9.0e15 {
        json!(value as i64)
    } else {
        json!(value)
    }
}

fn replay_json(replay: Replay) -> Value {
    match replay {
        Replay::Open { time_scale } => json!({"mode": "open", "time_scale": time_scale}),
        Replay::Closed { depth } => json!({"mode": "closed", "depth": depth}),
        Replay::AsFastAsPossible => json!({"mode": "afap"}),
    }
}

fn distribution_json(d: &Distribution) -> Value {
    json!({
        "mean": d.mean, "min": d.min, "p50": d.p50, "p90": d.p90,
        "p99": d.p99, "p999": d.p999, "max": d.max,
    })
}

fn op_json(s: &OpSummary) -> Value {
    json!({
        "requests": s.requests,
        "bytes": s.bytes,
        "iops": s.iops,
        "bandwidth_bytes_per_s": s.bandwidth_bytes_per_s,
        "latency_ns": distribution_json(&s.latency_ns),
        "queueing_ns": distribution_json(&s.queueing_ns),
        "service_ns": distribution_json(&s.service_ns),
    })
}

/// The version of the shape of every JSON document storsim writes (docs/json.md); defined
/// beside the reader that refuses newer documents (`storsim report`), so that there is one.
pub use storsim_report::SCHEMA;

/// The `device` object of `simulate` and `cosim` documents.
fn device_json(name: &str, device: &dyn Device) -> Value {
    json!({
        "name": name,
        "model": device.model_name(),
        "capacity_bytes": device.capacity_bytes(),
        "queue_depth": device.queue_depth(),
        "counters": counters_json(device.counters()),
        "block_wear": device.block_wear().iter().map(block_wear_json).collect::<Vec<_>>(),
    })
}

/// One flash array's per-block erase counts with the shape that places each block.
fn block_wear_json(w: &BlockWear) -> Value {
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

/// The `series` object (docs/json.md): one array per figure, one entry per window.
pub fn series_json(s: &Series, clock: &str) -> Value {
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
                .map(|v| v.map_or(Value::Null, counter_json))
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

/// The JSON document of a `simulate` run. Keys are sorted and nothing in it depends on the wall
/// clock, so the same run always produces the same bytes.
pub fn simulation_json(r: &SimulationResults) -> Value {
    let mut doc = json!({
        "schema": SCHEMA,
        "kind": "simulate",
        "command_line": r.command_line,
        "version": env!("CARGO_PKG_VERSION"),
        "seed": r.seed,
        "device": device_json(r.device_name, r.device),
        "workload": {
            "name": r.workload.name,
            "seed": r.workload.seed,
            "format": r.workload.format,
            "skipped_records": r.workload.skipped.get(),
            "ignored_records": r.workload.ignored.get(),
            "replay": replay_json(r.replay),
        },
        "run": {
            "requests_issued": r.info.requests_issued,
            "requests_completed": r.info.requests_completed,
            "out_of_order_records": r.info.out_of_order_records,
            "wrapped_requests": r.info.wrapped_requests,
            "empty_requests": r.info.empty_requests,
            "refused_requests": r.info.refused_requests,
            "first_refused": r.info.first_refused.iter().map(|f| json!({
                "position": f.position,
                "reason": f.reason,
            })).collect::<Vec<_>>(),
            "end_ns": r.info.end_ns,
            "device_failed": r.info.device_failed,
            "cancelled": r.info.cancelled,
        },
        "summary": summary_json(r.summary),
        "series": r.series.map(|s| series_json(s, "simulated")),
    });
    if let Some(plan) = r.faults {
        doc["device"]["faults"] = faults_json(plan);
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

/// One entry of a document's `flows` (docs/json.md).
fn flow_json((index, f): (usize, &FlowResult)) -> Value {
    let extent = |e: Extent| match e {
        Extent::Bytes(b) => json!({"bytes": b}),
        Extent::Percent(p) => json!({"percent": p}),
    };
    let spec = f.spec;
    json!({
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
        "summary": summary_json(f.summary),
        "alone_summary": f.alone.map(|(a, _)| summary_json(a)),
        "slowdown": f.alone.and_then(|(_, s)| s),
    })
}

/// The options that name where results go, with a value each; [`command_line`] leaves them out.
const OUTPUT_OPTIONS: [&str; 6] = [
    "--json",
    "--requests-csv",
    "--report",
    "--plots",
    "--out",
    "-o",
];

/// The command line that produced a document, for its `command_line` field: the program as
/// `storsim`, then its arguments without the output options, so that the document is
/// byte-identical whichever file it is written to.
pub fn command_line() -> Vec<String> {
    without_outputs(
        std::env::args_os()
            .skip(1)
            .map(|a| a.to_string_lossy().into_owned()),
    )
}

pub(crate) fn without_outputs(args: impl Iterator<Item = String>) -> Vec<String> {
    let mut out = vec!["storsim".to_string()];
    let mut args = args.peekable();
    while let Some(arg) = args.next() {
        if OUTPUT_OPTIONS.contains(&arg.as_str()) {
            args.next();
        } else if !OUTPUT_OPTIONS
            .iter()
            .any(|o| o.starts_with("--") && arg.starts_with(&format!("{o}=")))
        {
            out.push(arg);
        }
    }
    out
}

/// Writes `value` to `path`, or to standard output for `-`.
pub fn write_json(path: &Path, value: &Value) -> Result<(), CliError> {
    let text = json_text(value)?;
    if path == Path::new("-") {
        crate::stdout::say!("{text}");
        return Ok(());
    }
    std::fs::write(path, text)
        .map_err(|e| CliError::failure(format!("writing {}: {e}", path.display())))
}

/// A document's text as every command writes it: pretty-printed, arrays of numbers on one
/// line, and a final newline.
pub fn json_text(value: &Value) -> Result<String, CliError> {
    let mut text =
        inline_number_arrays(&serde_json::to_string_pretty(value).map_err(CliError::failure)?);
    text.push('\n');
    Ok(text)
}

/// Pretty-printed JSON with every array of numbers on one line: a device's per-block erase
/// counts would otherwise take a line per block (65,536 lines for a small SSD). Only the
/// layout changes, never a value: in pretty JSON a line holding nothing but a number (or
/// `null`) is an array element, so the arrays joined are exactly those of numbers only.
fn inline_number_arrays(pretty: &str) -> String {
    let lines: Vec<&str> = pretty.lines().collect();
    let is_number = |line: &str| {
        let t = line.trim().trim_end_matches(',');
        // `null` stands for a number that does not exist (a window without completions).
        !t.is_empty() && (t == "null" || t.parse::<f64>().is_ok())
    };
    let mut out = String::with_capacity(pretty.len());
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        out += line;
        if line.ends_with('[') {
            let numbers = lines[i + 1..].iter().take_while(|l| is_number(l)).count();
            let closes = lines
                .get(i + 1 + numbers)
                .is_some_and(|l| l.trim_start().starts_with(']'));
            if numbers > 0 && closes {
                for (k, l) in lines[i + 1..i + 1 + numbers].iter().enumerate() {
                    if k > 0 {
                        out.push(' ');
                    }
                    out += l.trim();
                }
                out += lines[i + 1 + numbers].trim_start();
                i += numbers + 2;
                out.push('\n');
                continue;
            }
        }
        out.push('\n');
        i += 1;
    }
    out.pop();
    out
}

fn us(ns: f64) -> String {
    let v = ns / 1000.0;
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn human_bytes(b: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KB", "MB", "GB", "TB"];
    let mut v = b;
    let mut i = 0;
    while v >= 1000.0 && i + 1 < UNITS.len() {
        v /= 1000.0;
        i += 1;
    }
    format!("{v:.1} {}", UNITS[i])
}

/// How a run was replayed, in words.
fn replay_text(replay: Replay) -> String {
    match replay {
        Replay::Open { time_scale: 1.0 } => "open loop".to_string(),
        Replay::Open { time_scale } => format!("open loop, time scale {time_scale}"),
        Replay::Closed { depth } => format!("closed loop, depth {depth}"),
        Replay::AsFastAsPossible => "as fast as possible".to_string(),
    }
}

/// The human-readable summary printed after a run.
pub fn simulation_text(r: &SimulationResults) -> String {
    let s = r.summary;
    let mut out = String::new();
    // Each flow of a multi-flow workload is replayed as its own spec says (a closed loop of
    // its own depth, or its own arrivals); the run-wide replay would misname them.
    let replay = match r.flows.len() {
        0 => replay_text(r.replay),
        n => format!("{n} flows, each replayed as its spec says"),
    };
    out += &format!("storsim {}   seed {}\n", env!("CARGO_PKG_VERSION"), r.seed);
    out += &format!(
        "device    {} ({}, {})\n",
        r.device_name,
        r.device.model_name(),
        human_bytes(r.device.capacity_bytes() as f64)
    );
    out += &format!("workload  {} ({replay})\n", r.workload.name);
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
    if r.info.wrapped_requests > 0 {
        out += &format!(
            "          {} requests wrapped into the device\n",
            r.info.wrapped_requests
        );
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
    out += &latency_table(s);
    if !r.flows.is_empty() {
        out += &flows_text(r);
    }
    let counters = r.device.counters();
    if !counters.is_empty() {
        out += "\ndevice counters\n";
        out += &counter_lines(&counters);
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
        out += &latency_table(f.summary);
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

/// The latency table of a summary: one row per operation that occurred, then queueing and
/// service, in microseconds.
fn latency_table(s: &Summary) -> String {
    let mut out = format!(
        "{:<16}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}\n",
        "latency (us)", "requests", "mean", "p50", "p90", "p99", "p99.9", "max"
    );
    let mut row = |name: &str, d: &Distribution, n: u64| {
        if n == 0 {
            return;
        }
        out += &format!(
            "{:<16}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}\n",
            name,
            n,
            us(d.mean),
            us(d.p50 as f64),
            us(d.p90 as f64),
            us(d.p99 as f64),
            us(d.p999 as f64),
            us(d.max as f64)
        );
    };
    row("all", &s.all.latency_ns, s.all.requests);
    row("  read", &s.read.latency_ns, s.read.requests);
    row("  write", &s.write.latency_ns, s.write.requests);
    row("  trim", &s.trim.latency_ns, s.trim.requests);
    row("  flush", &s.flush.latency_ns, s.flush.requests);
    row("queueing", &s.all.queueing_ns, s.all.requests);
    row("service", &s.all.service_ns, s.all.requests);
    if s.errors_counted {
        out += &errors_text(s);
    }
    out
}

/// The failed requests by operation and kind, and whether the latencies above count them.
fn errors_text(s: &Summary) -> String {
    let mut out = format!(
        "errors          {} failed ({} the latencies above)\n",
        s.all.errors.total(),
        if s.latency_includes_failed {
            "counted in"
        } else {
            "left out of"
        }
    );
    for (name, op) in [
        ("read", &s.read),
        ("write", &s.write),
        ("trim", &s.trim),
        ("flush", &s.flush),
    ] {
        let kinds: Vec<String> = op
            .errors
            .iter()
            .filter(|&(_, n)| n > 0)
            .map(|(kind, n)| format!("{n} {kind}"))
            .collect();
        if !kinds.is_empty() {
            out += &format!("  {name:<14}{}\n", kinds.join(", "));
        }
    }
    out
}

/// A summary's error counts (`errors`: the total and each kind) for one operation.
fn errors_json(e: &ErrorCounts) -> Value {
    let mut map: Map<String, Value> = e
        .iter()
        .map(|(k, n)| (k.name().to_string(), json!(n)))
        .collect();
    map.insert("total".into(), json!(e.total()));
    Value::Object(map)
}

/// The faults layer's plan, as the device's `faults` object.
pub fn faults_json(plan: &FaultPlan) -> Value {
    let rules: Vec<Value> = plan
        .rules
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
    json!({
        "host_timeout_ns": plan.host_timeout_ns,
        "seed": plan.seed,
        "rules": rules,
    })
}

/// The summary's JSON object: all operations' figures at the top level, then one object per
/// operation and the latency CDF.
fn summary_json(s: &Summary) -> Value {
    let mut summary = match op_json(&s.all) {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    summary.insert("elapsed_ns".into(), json!(s.elapsed_ns));
    summary.insert("read".into(), op_json(&s.read));
    summary.insert("write".into(), op_json(&s.write));
    summary.insert("trim".into(), op_json(&s.trim));
    summary.insert("flush".into(), op_json(&s.flush));
    // A run that cannot fail reads as before errors were counted.
    if s.errors_counted {
        summary.insert("errors".into(), errors_json(&s.all.errors));
        for (name, op) in [
            ("read", &s.read),
            ("write", &s.write),
            ("trim", &s.trim),
            ("flush", &s.flush),
        ] {
            if let Some(Value::Object(m)) = summary.get_mut(name) {
                m.insert("errors".into(), errors_json(&op.errors));
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

fn counters_json(counters: Vec<DeviceCounter>) -> Value {
    Value::Object(
        counters
            .into_iter()
            .map(|c| (c.name, counter_json(c.value)))
            .collect(),
    )
}

/// The JSON document of an `emulate` run (final, or asked for on the control socket). Unlike
/// simulation results it holds wall-clock measurements, so two runs never match byte for byte.
pub fn emulation_json(r: &EmulatorReport) -> Value {
    let l = &r.lateness;
    json!({
        "schema": SCHEMA,
        "kind": "emulate",
        "command_line": command_line(),
        "version": env!("CARGO_PKG_VERSION"),
        "device": {
            "name": r.device_name,
            "counters": counters_json(r.device_counters.clone()),
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
        "intake_ns": distribution_json(&r.intake_ns),
        "lateness": {
            "threshold_ns": l.threshold_ns,
            "late": l.late,
            "overran": l.overran,
            "lateness_ns": distribution_json(&l.lateness_ns),
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
        "model": summary_json(&r.model),
        "series": series_json(&r.series, "wall"),
    })
}

pub struct CosimResults<'a> {
    pub device_name: &'a str,
    pub device: &'a dyn Device,
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
        "schema": SCHEMA,
        "kind": "cosim",
        "command_line": command_line(),
        "version": env!("CARGO_PKG_VERSION"),
        "device": device_json(r.device_name, r.device),
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
        "summary": summary_json(&t.summary),
        "series": series_json(&t.series, "simulated"),
        "clock_series": {
            "real_ns": t.clock_series.iter().map(|c| c.real_ns).collect::<Vec<_>>(),
            "virtual_ns": t.clock_series.iter().map(|c| c.virtual_ns).collect::<Vec<_>>(),
            "paused_ns": t.clock_series.iter().map(|c| c.paused_real_ns).collect::<Vec<_>>(),
            "skipped_ns": t.clock_series.iter().map(|c| c.skipped_virtual_ns).collect::<Vec<_>>(),
        },
        "warnings": t.warnings,
    });
    if let Some(plan) = r.faults {
        doc["device"]["faults"] = faults_json(plan);
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
        env!("CARGO_PKG_VERSION"),
        r.device_name
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
    out += &latency_table(&t.summary);
    for w in &t.warnings {
        out += &format!("warning: {w}\n");
    }
    if !t.intercepted {
        out += "warning: the program never loaded the cosim library (statically linked, setuid, or LD_PRELOAD cleared): nothing was simulated\n";
    }
    out
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
        env!("CARGO_PKG_VERSION"),
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
    out += &latency_table(&r.model);
    if !r.device_counters.is_empty() {
        out += "\ndevice counters\n";
        out += &counter_lines(&r.device_counters);
    }
    out
}

/// The counters as aligned `name value` lines. Families of per-unit counters
/// (`channel_3_utilisation`, `die_17_utilisation`) would bury the rest on a large device, so
/// each family becomes one line with its mean, minimum and maximum; the JSON keeps them all.
fn counter_lines(counters: &[DeviceCounter]) -> String {
    let mut rows: Vec<(String, String)> = Vec::new();
    let mut families: Vec<(String, Vec<f64>)> = Vec::new();
    for c in counters {
        match per_unit_family(&c.name) {
            Some(family) => match families.iter_mut().find(|(f, _)| *f == family) {
                Some((_, values)) => values.push(c.value),
                None => {
                    // The family's row stands where its first member stood.
                    rows.push((family.clone(), String::new()));
                    families.push((family, vec![c.value]));
                }
            },
            None => rows.push((c.name.clone(), counter_value(c.value))),
        }
    }
    for (family, values) in &families {
        let row = rows.iter_mut().find(|(n, _)| n == family).expect("pushed");
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        row.1 = format!(
            "mean {} min {} max {} ({} units)",
            counter_value(mean),
            counter_value(min),
            counter_value(max),
            values.len()
        );
    }
    let width = rows.iter().map(|(n, _)| n.len()).max().unwrap_or(0) + 2;
    rows.iter()
        .map(|(name, value)| format!("  {name:<width$}{value}\n"))
        .collect()
}

/// The family of a per-unit counter: `die_17_utilisation` belongs to `die_utilisation`.
fn per_unit_family(name: &str) -> Option<String> {
    let mut parts = name.split('_');
    let unit = parts.next()?;
    let index = parts.next()?;
    let rest: Vec<&str> = parts.collect();
    let numbered = !index.is_empty() && index.bytes().all(|b| b.is_ascii_digit());
    (numbered && !rest.is_empty() && matches!(unit, "channel" | "die"))
        .then(|| format!("{unit}_{}", rest.join("_")))
}

/// Whole numbers as integers, others with at least six significant digits.
fn counter_value(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else if v.abs() < 1e-3 {
        format!("{v:.5e}")
    } else {
        let digits = (5 - v.abs().log10().floor() as i32).clamp(0, 8);
        format!("{v:.*}", digits as usize)
    }
}

/// One CSV line per completed request, in completion order (`simulate --requests-csv`).
pub struct RequestsCsv {
    out: BufWriter<File>,
    /// Whether each line ends with the request's flow: only for a workload of several flows,
    /// so that a single flow's CSV stays what it always was.
    flow_column: bool,
}

impl RequestsCsv {
    /// Creates the file at `path` and writes the header, with a `flow` column last when the
    /// workload has more than one of its `flows`.
    pub fn create(path: &Path, flows: usize) -> Result<Self, CliError> {
        let file = File::create(path)
            .map_err(|e| CliError::failure(format!("creating {}: {e}", path.display())))?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        let flow_column = flows > 1;
        writeln!(
            out,
            "id,op,offset_bytes,len_bytes,arrival_ns,service_start_ns,finish_ns,queueing_ns,service_ns,latency_ns{}",
            if flow_column { ",flow" } else { "" }
        )
        .map_err(CliError::failure)?;
        Ok(RequestsCsv { out, flow_column })
    }

    /// Writes the line of one completed request.
    pub fn write(&mut self, c: &Completion) -> std::io::Result<()> {
        let r = &c.request;
        write!(
            self.out,
            "{},{},{},{},{},{},{},{},{},{}",
            r.id,
            r.op,
            r.offset_bytes,
            r.len_bytes,
            r.arrival.as_ns(),
            c.service_start.as_ns(),
            c.finish.as_ns(),
            c.queueing().as_ns(),
            c.service().as_ns(),
            c.latency().as_ns()
        )?;
        // The flow's index, as the library's request columns (Python's `Run.requests`) and
        // the document's `flows[].index` give it.
        if self.flow_column {
            write!(self.out, ",{}", r.flow)?;
        }
        writeln!(self.out)
    }

    /// Flushes what is buffered to the file.
    pub fn finish(mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

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

/// The JSON document of `storsim inspect`.
pub fn inspect_json(name: &str, c: &Characterisation) -> Value {
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
        "schema": SCHEMA,
        "kind": "inspect",
        "command_line": command_line(),
        "version": env!("CARGO_PKG_VERSION"),
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
        "skipped_records": c.skipped_records,
        "ignored_records": c.ignored_records,
    })
}

/// The human-readable characterisation printed by `storsim inspect`.
pub fn inspect_text(name: &str, c: &Characterisation) -> String {
    let mut out = String::new();
    let opt = |v: Option<f64>, scale: f64, unit: &str| match v {
        Some(x) => format!("{:.2}{unit}", x * scale),
        None => "n/a".to_string(),
    };
    out += &format!("trace          {name}\n");
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
    out += "request sizes\n";
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
    if c.per_device.len() > 1 {
        out += "devices\n";
        for (d, n) in &c.per_device {
            out += &format!("  {d:<12}{n:>12}\n");
        }
    }
    out
}

/// A validation run: the model's response times beside the measured ones, in trace order.
pub struct ValidationResults<'a> {
    pub device_name: &'a str,
    pub device: &'a dyn Device,
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

/// The comparison of one group of requests (all, or one operation): both sides with their
/// CDFs, the demerit and the errors (simulated minus measured).
fn comparison_json(simulated_ms: &[f64], measured_ms: &[f64], demerit: &Demerit) -> Value {
    let sim = percentiles_ms(simulated_ms);
    let meas = percentiles_ms(measured_ms);
    let mean_error_ms = demerit.simulated_mean_ms - demerit.measured_mean_ms;
    let mean_abs_ms = simulated_ms
        .iter()
        .zip(measured_ms)
        .map(|(s, m)| (s - m).abs())
        .sum::<f64>()
        / simulated_ms.len() as f64;
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
            "mean_abs_request_ms": mean_abs_ms,
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
fn op_groups<'a>(r: &ValidationResults<'a>, ops: &[Op]) -> Vec<(&'static str, Vec<f64>, Vec<f64>)> {
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

pub fn validation_json(r: &ValidationResults) -> Value {
    let mut doc = json!({
        "schema": SCHEMA,
        "kind": "validate",
        "command_line": command_line(),
        "version": env!("CARGO_PKG_VERSION"),
        "device": {
            "name": r.device_name,
            "model": r.device.model_name(),
            "capacity_bytes": r.device.capacity_bytes(),
            "counters": counters_json(r.device.counters()),
        },
        "trace": r.trace.display().to_string(),
        "requests": r.measured_ms.len(),
        "demerit_ms": r.demerit.demerit_ms,
        "demerit_pct_of_mean": r.demerit.demerit_pct_of_mean,
        "simulated": side_json(r.simulated_ms, r.demerit.simulated_mean_ms),
        "measured": side_json(r.measured_ms, r.demerit.measured_mean_ms),
    });
    let Some(t) = &r.trace_detail else {
        return doc;
    };
    doc["command"] = json!("trace");
    doc["format"] = json!(t.format);
    doc["replay"] = replay_json(t.replay);
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

pub fn validation_text(r: &ValidationResults) -> String {
    let replay = match &r.trace_detail {
        None => "closed loop, one outstanding".to_string(),
        Some(t) => format!("{}, {}", t.format, replay_text(t.replay)),
    };
    let mut out = format!(
        "device   {} ({})\ntrace    {} ({} requests, {replay})\n\n",
        r.device_name,
        r.device.model_name(),
        r.trace.display(),
        r.measured_ms.len()
    );
    out += &format!(
        "{:<20}{:>9}{:>9}{:>9}{:>9}{:>9}{:>9}\n",
        "access time (ms)", "mean", "p10", "p50", "p90", "p99", "max"
    );
    for (name, values, mean) in [
        ("simulated", r.simulated_ms, r.demerit.simulated_mean_ms),
        ("measured", r.measured_ms, r.demerit.measured_mean_ms),
    ] {
        let p = percentiles_ms(values);
        out += &format!(
            "{name:<20}{mean:>9.3}{:>9.3}{:>9.3}{:>9.3}{:>9.3}{:>9.3}\n",
            p[0], p[1], p[2], p[3], p[4]
        );
    }
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
    let mut out = format!(
        "\n{:<20}{:>9}{:>11}{:>9}{:>9}{:>9}{:>9}{:>9}{:>10}\n",
        "error (sim - meas)", "requests", "demerit", "mean", "p10", "p50", "p90", "p99", "mean |e|"
    );
    for (name, sim, meas) in op_groups(r, t.ops) {
        let Some(d) = storsim_stats::disksim_demerit(&sim, &meas) else {
            continue;
        };
        let (ps, pm) = (percentiles_ms(&sim), percentiles_ms(&meas));
        let mean_abs = sim
            .iter()
            .zip(&meas)
            .map(|(s, m)| (s - m).abs())
            .sum::<f64>()
            / sim.len() as f64;
        out += &format!(
            "{:<20}{:>9}{:>11.3}{:>9.3}{:>9.3}{:>9.3}{:>9.3}{:>9.3}{:>10.3}\n",
            format!("{name} (ms)"),
            sim.len(),
            d.demerit_ms,
            d.simulated_mean_ms - d.measured_mean_ms,
            ps[0] - pm[0],
            ps[1] - pm[1],
            ps[2] - pm[2],
            ps[3] - pm[3],
            mean_abs
        );
    }
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
pub fn write_validation_csv(path: &Path, r: &ValidationResults) -> Result<(), CliError> {
    let failed = |e: std::io::Error| CliError::failure(format!("writing {}: {e}", path.display()));
    let mut out = BufWriter::new(File::create(path).map_err(failed)?);
    match &r.trace_detail {
        None => {
            writeln!(out, "request,simulated_ms,measured_ms").map_err(failed)?;
            for (i, (s, m)) in r.simulated_ms.iter().zip(r.measured_ms).enumerate() {
                writeln!(out, "{i},{s},{m}").map_err(failed)?;
            }
        }
        Some(t) => {
            writeln!(out, "request,position,op,simulated_ms,measured_ms").map_err(failed)?;
            let rows = t
                .positions
                .iter()
                .zip(t.ops)
                .zip(r.simulated_ms.iter().zip(r.measured_ms));
            for (i, ((position, op), (s, m))) in rows.enumerate() {
                writeln!(out, "{i},{position},{},{s},{m}", op_name(*op)).map_err(failed)?;
            }
        }
    }
    out.flush().map_err(failed)
}

fn op_name(op: Op) -> &'static str {
    match op {
        Op::Read => "read",
        Op::Write => "write",
        Op::Trim => "trim",
        Op::Flush => "flush",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_unit_counters_fold_into_one_aligned_line() {
        let counters = [
            DeviceCounter::new("flash_reads", 12.0),
            DeviceCounter::new("channel_0_utilisation", 0.25),
            DeviceCounter::new("channel_1_utilisation", 0.75),
            DeviceCounter::new("precondition_steady_state_waf", 7.3140358),
            DeviceCounter::new("die_10_count", 3.0),
        ];
        let text = counter_lines(&counters);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert_eq!(
            lines[0].split_whitespace().collect::<Vec<_>>(),
            ["flash_reads", "12"]
        );
        assert!(lines[1].starts_with("  channel_utilisation "), "{text}");
        assert!(
            lines[1].contains("mean 0.500000 min 0.250000 max 0.750000 (2 units)"),
            "{text}"
        );
        assert!(lines[2].ends_with(" 7.31404"), "{text}");
        assert!(lines[3].starts_with("  die_count "), "{text}");
        // Every value starts in the same column, past the longest name.
        let value_column = |l: &str| {
            let name_end = 2 + l[2..].find(' ').unwrap();
            name_end + l[name_end..].find(|c| c != ' ').unwrap()
        };
        let first = value_column(lines[0]);
        assert!(lines.iter().all(|l| value_column(l) == first), "{text}");
        assert_eq!(first, 2 + "precondition_steady_state_waf".len() + 2);
    }

    #[test]
    fn number_arrays_go_on_one_line_and_keep_their_values() {
        let value = json!({
            "counts": [3, 0, 17],
            "gaps": [null, 2, null],
            "empty": [],
            "mixed": [1, "a"],
            "objects": [{"x": 1}],
            "nested": {"fractions": [0.5, -2.5e-7]},
        });
        let text = inline_number_arrays(&serde_json::to_string_pretty(&value).unwrap());
        assert!(text.contains("\"counts\": [3, 0, 17],\n"), "{text}");
        assert!(text.contains("\"gaps\": [null, 2, null],\n"), "{text}");
        assert!(text.contains("\"fractions\": [0.5, -2.5e-7]\n"), "{text}");
        assert!(text.contains("\"mixed\": [\n"), "{text}");
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), value);
    }

    #[test]
    fn counter_values_are_readable() {
        assert_eq!(counter_value(440736.0), "440736");
        assert_eq!(counter_value(0.0), "0");
        assert_eq!(counter_value(1.5), "1.50000");
        assert_eq!(counter_value(8162666.56), "8162667");
        assert_eq!(counter_value(0.0001), "1.00000e-4");
    }

    #[test]
    fn the_command_line_leaves_out_where_results_go() {
        let args = [
            "simulate",
            "--device",
            "bench2g",
            "--json",
            "out.json",
            "--report=r.html",
            "--window",
            "1ms",
            "--plots",
            "dir",
            "-o",
            "x",
            "--requests-csv",
            "c.csv",
        ];
        assert_eq!(
            without_outputs(args.iter().map(|a| a.to_string())),
            ["storsim", "simulate", "--device", "bench2g", "--window", "1ms"]
        );
    }
}
