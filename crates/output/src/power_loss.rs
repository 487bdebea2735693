//! The power-loss documents: emulate's `power_loss` object, a crash's report (the crash log's
//! lines, the control socket's `crash` answer) and `storsim replay-log`'s document.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use storsim_emulate::power::{AfterCrash, CrashMode, CrashReport, CrashSummary, PowerLossReport};

/// A crash mode as the JSON says it: `mode`, `atomicity` and `seed` (null unless torn).
fn mode_json(mode: CrashMode) -> (&'static str, Option<String>, Option<u64>) {
    match mode {
        CrashMode::DropAll => ("drop-all", None, None),
        CrashMode::Torn { atomicity, seed } => ("torn", Some(atomicity.to_string()), Some(seed)),
    }
}

/// What a crash log line and `replay-log --json` say of a crash.
pub fn crash_json(report: &CrashReport) -> Value {
    let (mode, atomicity, seed) = mode_json(report.mode);
    let lost: Vec<Value> = report
        .volatile
        .iter()
        .map(|w| {
            json!({
                "write": w.index,
                "offset_bytes": w.offset_bytes,
                "len_bytes": w.len_bytes,
                "dropped": w.dropped.iter().map(|&(o, l)| json!([o, l])).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({
        "writes": report.writes,
        "mode": mode,
        "atomicity": atomicity,
        "seed": seed,
        "volatile_writes": report.volatile.len(),
        "volatile_bytes": report.volatile_bytes(),
        "dropped_writes": report.dropped_writes(),
        "dropped_bytes": report.dropped_bytes(),
        "volatile": lost,
    })
}

/// What emulate's JSON says of a crash: its crash log line without the writes one by one.
pub fn crash_summary_json(crash: &CrashSummary) -> Value {
    let (mode, atomicity, seed) = mode_json(crash.mode);
    json!({
        "crash": crash.number,
        "trigger": crash.trigger.name(),
        "at_ns": crash.at.as_ns(),
        "writes": crash.writes,
        "mode": mode,
        "atomicity": atomicity,
        "seed": seed,
        "volatile_writes": crash.volatile_writes,
        "volatile_bytes": crash.volatile_bytes,
        "dropped_writes": crash.dropped_writes,
        "dropped_bytes": crash.dropped_bytes,
    })
}

/// Power loss's settings that only the front end knows (the emulator's report holds the
/// rest), for emulate's JSON.
#[derive(Clone, Debug, Default)]
pub struct PowerLossSettings {
    /// When the `--crash-at` timer fires, in ns from the start.
    pub crash_at_ns: Option<u64>,
    /// Where the write log goes.
    pub write_log: Option<PathBuf>,
    /// Where the crash log goes.
    pub crash_log: Option<PathBuf>,
}

/// Emulate's JSON `power_loss` (docs/json.md): the options in force, the cache now and a
/// summary of each crash.
pub fn power_loss_json(report: &PowerLossReport, options: &PowerLossSettings) -> Value {
    let (mode, atomicity, seed) = mode_json(report.mode);
    let path = |p: &Option<PathBuf>| p.as_ref().map(|p| p.display().to_string());
    json!({
        "write_cache_bytes": report.write_cache_bytes,
        "mode": mode,
        "atomicity": atomicity,
        "seed": seed,
        "crash_after_writes": report.crash_after_writes,
        "crash_at_ns": options.crash_at_ns,
        "after_crash": match report.after_crash {
            AfterCrash::Serve => "serve",
            AfterCrash::Stop => "stop",
        },
        "write_log": path(&options.write_log),
        "crash_log": path(&options.crash_log),
        "writes": report.writes,
        "volatile_writes": report.volatile_writes,
        "powered_off": report.powered_off,
        "crashes": report.crashes.iter().map(crash_summary_json).collect::<Vec<_>>(),
    })
}

/// The JSON document of `storsim replay-log`: the log replayed, how far, and what the crash
/// at that point lost.
pub fn replay_log_json(
    command_line: &[String],
    log: &Path,
    log_writes: u64,
    writes: u64,
    crash: &CrashReport,
) -> Value {
    json!({
        "schema": crate::SCHEMA,
        "version": crate::VERSION,
        "kind": "replay-log",
        "command_line": command_line,
        "log": log.display().to_string(),
        "log_writes": log_writes,
        "writes": writes,
        "crash": crash_json(crash),
    })
}

/// What `storsim replay-log --list` prints: the log's writes and the flush points a crash
/// can be replayed at.
pub fn replay_log_points_text(log_writes: u64, flushes_after_writes: &[u64]) -> String {
    let points: Vec<String> = flushes_after_writes.iter().map(u64::to_string).collect();
    format!(
        "writes: {log_writes}\nflushes after writes: {}\n",
        points.join(" ")
    )
}

/// What `storsim replay-log` prints when the image is written: how far the log was replayed
/// and what the crash there lost.
pub fn replay_log_text(log_writes: u64, writes: u64, image: &Path, crash: &CrashReport) -> String {
    format!(
        "replayed {writes} of {log_writes} writes into {}; the crash lost {} bytes of {} writes \
         not durable ({})\n",
        image.display(),
        crash.dropped_bytes(),
        crash.volatile.len(),
        crash.mode
    )
}
