//! Trace parsing throughput and memory.
//!
//! Without arguments, writes MQSim ASCII traces of 10 thousand and 10 million lines to the
//! temporary directory, parses each (devices overlaid, so one pass) and prints lines per second
//! and the process's peak resident set size (VmHWM from /proc/self/status) after each; the
//! small trace runs first because the peak only ever rises. With a path argument, parses that
//! file instead, detecting its format.
//!
//! Run with `cargo run --release -p storsim-workload --example trace_parse_bench [path]`.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;
use storsim_workload::trace::{open, DeviceSelection, TraceFormat, TraceOptions};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(path) = args.first() {
        let opts = TraceOptions {
            devices: DeviceSelection::Overlay,
            parse_thread: false,
            ..TraceOptions::default()
        };
        if let Err(e) = run(Path::new(path), &opts) {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
        return;
    }
    let opts = TraceOptions {
        format: Some(TraceFormat::named("mqsim")),
        devices: DeviceSelection::Overlay,
        // The parser's own speed, on the calling thread.
        parse_thread: false,
        ..TraceOptions::default()
    };
    for lines in [10_000u64, 10_000_000] {
        let path = std::env::temp_dir().join(format!(
            "storsim-bench-{}-{lines}.trace",
            std::process::id()
        ));
        let result = generate(&path, lines)
            .map_err(|e| e.to_string())
            .and_then(|()| run(&path, &opts));
        // Ignoring a failed removal is fine: the file is in the temporary directory.
        let _ = std::fs::remove_file(&path);
        if let Err(e) = result {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}

/// Writes an MQSim trace of `lines` requests spread over 16 devices.
fn generate(path: &PathBuf, lines: u64) -> std::io::Result<()> {
    let mut out = BufWriter::with_capacity(64 << 10, std::fs::File::create(path)?);
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    for i in 0..lines {
        // xorshift: cheap, deterministic addresses.
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let sectors = 8 << (state % 5);
        writeln!(
            out,
            "{} {} {} {} {}",
            i * 12_345,
            state % 16,
            state % 500_000_000,
            sectors,
            (state >> 8) & 1
        )?;
    }
    out.flush()
}

fn run(path: &Path, opts: &TraceOptions) -> Result<(), String> {
    let bytes = std::fs::metadata(path).map_err(|e| e.to_string())?.len();
    let start = Instant::now();
    let workload = open(path, opts).map_err(|e| e.to_string())?;
    let mut requests = 0u64;
    let mut checksum = 0u64;
    for record in workload.records {
        let record = record.map_err(|e| e.to_string())?;
        requests += 1;
        checksum = checksum.wrapping_add(record.offset_bytes ^ record.timestamp_ns);
    }
    let seconds = start.elapsed().as_secs_f64();
    println!(
        "{}: {requests} records, {:.1} MB in {seconds:.3} s: {:.2} M records/s, {:.0} MB/s; peak RSS {} (checksum {checksum:x})",
        path.display(),
        bytes as f64 / 1e6,
        requests as f64 / seconds / 1e6,
        bytes as f64 / seconds / 1e6,
        peak_rss().unwrap_or_else(|| "unknown".to_string()),
    );
    Ok(())
}

/// VmHWM, the peak resident set size, as /proc/self/status states it (Linux only).
fn peak_rss() -> Option<String> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    Some(line.trim_start_matches("VmHWM:").trim().to_string())
}
