//! DiskSim ASCII: a hand-written sample, a malformed sample and the bad-record policy.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use storsim_core::Op;
use storsim_workload::trace::{detect, open, DeviceSelection, TraceFormat, TraceOptions};
use storsim_workload::{Origin, Pacing, Record, WorkloadError};

const FORMAT: TraceFormat = TraceFormat::DiskSimAscii;

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
    let path = std::env::temp_dir().join(format!(
        "storsim-trace-disksim-ascii-{}-{n}",
        std::process::id()
    ));
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
    let path = data("disksim_ascii_sample.trace");
    assert_eq!(detect(&path).unwrap(), FORMAT);
    let workload = open(&path, &options(false)).unwrap();
    assert_eq!(
        (workload.pacing, workload.origin),
        (Pacing::Open, Origin::Line)
    );
    let records: Vec<Record> = workload.records.map(Result::unwrap).collect();
    // Line 1 is a comment; flags are hexadecimal and bit 0 means read.
    assert_eq!(
        records,
        vec![
            record(13_191_135, Op::Read, 0, 5 * 512, 30, 2),
            record(17_829_285, Op::Write, 576_560 * 512, 6 * 512, 20, 3),
            record(25_500_000, Op::Read, 28_601 * 512, 12 * 512, 18, 4),
        ]
    );
}

#[test]
fn malformed_record_names_file_line_and_expectation() {
    let path = data("disksim_ascii_bad.trace");
    let (items, _) = read_all(&path, &options(false));
    assert_eq!(items.len(), 2);
    expect_malformed(
        &items[1],
        &path,
        "line 2",
        "field 1 (arrival_ms): expected a non-negative number of milliseconds, found \"17.82a285\"",
    );
}

#[test]
fn skip_bad_counts_every_bad_line() {
    let (items, skipped) = read_all(&data("disksim_ascii_bad.trace"), &options(true));
    let records: Vec<Record> = items.into_iter().map(Result::unwrap).collect();
    assert_eq!(
        records.iter().map(|r| r.origin).collect::<Vec<_>>(),
        vec![1, 6]
    );
    // Flags 2 has bit 0 clear: a write.
    assert_eq!(records[1].op, Op::Write);
    assert_eq!(skipped, 4);
}

#[test]
fn field_errors_say_what_was_expected_and_found() {
    assert_eq!(
        error_for("1.0 0 0 8"),
        "line 1: expected 5 whitespace-separated fields (arrival_ms devno blkno bcount flags), found 4"
    );
    assert_eq!(
        error_for("1.0 0 0 0 1"),
        "line 1: field 4 (bcount): expected a positive number of sectors, found \"0\""
    );
    assert_eq!(
        error_for("1.0 0 0 8 zz"),
        "line 1: field 5 (flags): expected hexadecimal flags (bit 0 = read), found \"zz\""
    );
}
