//! MQSim / SSDsim ASCII: a hand-written sample, a malformed sample and the bad-record policy.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use storsim_core::Op;
use storsim_workload::trace::{detect, open, DeviceSelection, TraceFormat, TraceOptions};
use storsim_workload::{Origin, Pacing, Record, WorkloadError};

const FORMAT: TraceFormat = TraceFormat::MqsimAscii;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn options(skip_bad: bool) -> TraceOptions {
    TraceOptions {
        format: Some(FORMAT),
        skip_bad,
        devices: DeviceSelection::Overlay,
        ..TraceOptions::default()
    }
}

fn read_all(path: &Path, opts: &TraceOptions) -> (Vec<Result<Record, WorkloadError>>, u64) {
    let workload = open(path, opts).unwrap();
    let skipped = workload.skipped.clone();
    let items = workload.records.collect();
    (items, skipped.get())
}

fn record(
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

/// The position and message of the error that a trace holding `text` produces.
fn error_for(text: &str) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("storsim-trace-mqsim-{}-{n}", std::process::id()));
    std::fs::write(&path, text).unwrap();
    let item = open(&path, &options(false))
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

fn expect_malformed(
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

#[test]
fn sample_parses_to_exact_records() {
    let path = data("mqsim_sample.trace");
    assert_eq!(detect(&path).unwrap(), FORMAT);
    let workload = open(&path, &options(false)).unwrap();
    assert_eq!(
        (workload.pacing, workload.origin),
        (Pacing::Open, Origin::Line)
    );
    let records: Vec<Record> = workload.records.map(Result::unwrap).collect();
    assert_eq!(
        records,
        vec![
            record(0, Op::Write, 303_567 * 512, 7 * 512, 0, 1),
            record(26_214_000, Op::Read, 55_590 * 512, 6 * 512, 1, 2),
            record(78_643_005, Op::Read, 55_596 * 512, 6 * 512, 21, 3),
        ]
    );
}

#[test]
fn ssdsim_is_another_name_for_the_format() {
    assert_eq!(TraceFormat::from_name("ssdsim"), Some(FORMAT));
    assert_eq!(TraceFormat::from_name("mqsim"), Some(FORMAT));
    assert_eq!(FORMAT.name(), "mqsim");
}

#[test]
fn malformed_record_names_file_line_and_expectation() {
    let path = data("mqsim_bad.trace");
    let (items, _) = read_all(&path, &options(false));
    assert_eq!(items.len(), 2);
    expect_malformed(
        &items[1],
        &path,
        "line 2",
        "field 5 (type): expected 1 (read) or 0 (write), found \"2\"",
    );
}

#[test]
fn skip_bad_counts_every_bad_line() {
    let (items, skipped) = read_all(&data("mqsim_bad.trace"), &options(true));
    let origins: Vec<u64> = items.into_iter().map(|r| r.unwrap().origin).collect();
    // The last line has no newline and still counts.
    assert_eq!(origins, vec![1, 7]);
    assert_eq!(skipped, 5);
}

#[test]
fn field_errors_say_what_was_expected_and_found() {
    assert_eq!(
        error_for("1.5 1 55590 6 1"),
        "line 1: field 1 (arrival_ns): expected an integer number of nanoseconds, found \"1.5\""
    );
    assert_eq!(
        error_for("0 4294967296 1 1 1"),
        "line 1: field 2 (device): expected a device number, found \"4294967296\""
    );
    assert_eq!(
        error_for("0 0 1 36028797018963968 1"),
        "line 1: field 4 (size_sectors): 36028797018963968 blocks of 512 bytes overflow a 64-bit byte offset"
    );
}
