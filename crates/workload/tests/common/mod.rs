//! Helpers shared by the trace test files: sample paths, temporary files, options, expected
//! records and malformed-record checks.

// Each test binary compiles its own copy of this module and uses only some of the helpers.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use storsim_core::Op;
use storsim_workload::trace::{open, DeviceSelection, TraceFormat, TraceOptions};
use storsim_workload::{Record, WorkloadError};
use tempfile::TempPath;

/// The folder of checked-in samples.
pub fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// The checked-in sample called `name`.
pub fn data(name: &str) -> PathBuf {
    data_dir().join(name)
}

/// A new empty file in the temporary directory, named
/// `storsim-trace-{tag}-{process id}-{random}{suffix}` and removed when the returned path drops
/// (at the end of the test, passed or failed). Each call gets a file of its own, since tests
/// run in parallel.
pub fn temp_path(tag: &str, suffix: &str) -> TempPath {
    tempfile::Builder::new()
        .prefix(&format!("storsim-trace-{tag}-{}-", std::process::id()))
        .suffix(suffix)
        .tempfile()
        .unwrap()
        .into_temp_path()
}

/// Writes `bytes` to a new file from [`temp_path`] and returns its path, which removes the file
/// when dropped.
pub fn write_temp(tag: &str, suffix: &str, bytes: &[u8]) -> TempPath {
    let path = temp_path(tag, suffix);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// Options that read `format` with the given bad-record policy, devices overlaid.
pub fn options(format: TraceFormat, skip_bad: bool) -> TraceOptions {
    TraceOptions {
        format: Some(format),
        skip_bad,
        devices: DeviceSelection::Overlay,
        ..TraceOptions::default()
    }
}

/// Reads a whole trace and returns every item, good or bad, and the skipped count.
pub fn read_all(path: &Path, opts: &TraceOptions) -> (Vec<Result<Record, WorkloadError>>, u64) {
    let workload = open(path, opts).unwrap();
    let skipped = workload.skipped.clone();
    let items = workload.records.collect();
    (items, skipped.get())
}

/// A record with no think time.
pub fn record(
    timestamp_ns: u64,
    op: Op,
    offset_bytes: u64,
    len_bytes: u64,
    dev: u32,
    origin: u64,
) -> Record {
    Record {
        timestamp_ns,
        op,
        offset_bytes,
        len_bytes,
        dev,
        think_ns: 0,
        origin,
    }
}

/// The position and message of the first error that a `format` trace holding `text` produces.
pub fn error_for(format: TraceFormat, text: &str) -> String {
    let path = write_temp(format.name(), "", text.as_bytes());
    let item = open(&path, &options(format, false))
        .unwrap()
        .records
        .find(Result::is_err);
    std::fs::remove_file(&path).unwrap();
    match item {
        Some(Err(WorkloadError::Malformed {
            position, message, ..
        })) => format!("{position}: {message}"),
        other => panic!("expected a malformed-record error, got {other:?}"),
    }
}

/// Asserts that `item` is a malformed-record error from `path` at `position` saying `message`.
pub fn expect_malformed(
    item: &Result<Record, WorkloadError>,
    path: &Path,
    position: &str,
    message: &str,
) {
    match item {
        Err(WorkloadError::Malformed {
            source,
            position: p,
            message: m,
        }) => {
            assert_eq!(source, &path.display().to_string());
            assert_eq!(p, position);
            assert_eq!(m, message);
        }
        other => panic!("expected a malformed-record error, got {other:?}"),
    }
}
