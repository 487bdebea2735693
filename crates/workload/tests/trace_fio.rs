//! fio iolog versions 2 and 3: a hand-written sample, a malformed sample and the bad-record policy.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use storsim_core::Op;
use storsim_workload::trace::{detect, open, DeviceSelection, TraceFormat, TraceOptions};
use storsim_workload::{Origin, Pacing, Record, WorkloadError};

const FORMAT: TraceFormat = TraceFormat::FioIolog;

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
    let path = std::env::temp_dir().join(format!("storsim-trace-fio-{}-{n}", std::process::id()));
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
fn version_2_sample_parses_to_exact_records() {
    let path = data("fio_v2_sample.log");
    assert_eq!(detect(&path).unwrap(), FORMAT);
    let workload = open(&path, &options(false)).unwrap();
    assert_eq!(
        (workload.pacing, workload.origin),
        (Pacing::Open, Origin::Line)
    );
    let records: Vec<Record> = workload.records.map(Result::unwrap).collect();
    // Devices are files in order of `add`; `wait 5` moves the clock to 5 ms after the start and
    // the later `wait 3` cannot move it back.
    assert_eq!(
        records,
        vec![
            record(0, Op::Write, 0, 4096, 0, 6),
            record(0, Op::Read, 8192, 4096, 1, 7),
            record(5_000_000, Op::Trim, 4096, 65_536, 0, 9),
            record(5_000_000, Op::Flush, 0, 0, 1, 10),
            record(5_000_000, Op::Read, 4096, 512, 0, 12),
        ]
    );
}

#[test]
fn version_3_sample_parses_to_exact_records() {
    let path = data("fio_v3_sample.log");
    assert_eq!(detect(&path).unwrap(), FORMAT);
    let workload = open(&path, &options(false)).unwrap();
    let ignored = workload.ignored.clone();
    let records: Vec<Record> = workload.records.map(Result::unwrap).collect();
    // Timestamps are microseconds; `wait` is not allowed in version 3 and is ignored.
    assert_eq!(
        records,
        vec![
            record(878_000, Op::Write, 0, 16_384, 0, 4),
            record(888_000, Op::Read, 16_384, 16_384, 0, 5),
            record(1_500_000, Op::Flush, 0, 0, 0, 7),
        ]
    );
    assert_eq!(ignored.get(), 1);
}

#[test]
fn malformed_record_names_file_line_and_expectation() {
    let path = data("fio_bad.log");
    let (items, _) = read_all(&path, &options(false));
    assert_eq!(items.len(), 1);
    expect_malformed(
        &items[0],
        &path,
        "line 3",
        "expected `filename action` or `filename action offset length`, found 3 fields",
    );
}

#[test]
fn a_missing_header_is_malformed() {
    let path = data("fio_no_header.log");
    let (items, _) = read_all(&path, &options(false));
    expect_malformed(
        &items[0],
        &path,
        "line 1",
        "expected the header line `fio version 2 iolog` or `fio version 3 iolog`, found \"/dev/sdb add\"",
    );
}

#[test]
fn skip_bad_counts_every_bad_line() {
    let (items, skipped) = read_all(&data("fio_bad.log"), &options(true));
    let origins: Vec<u64> = items.into_iter().map(|r| r.unwrap().origin).collect();
    assert_eq!(origins, vec![7]);
    assert_eq!(skipped, 4);
}

#[test]
fn field_errors_say_what_was_expected_and_found() {
    assert_eq!(
        error_for("fio version 2 iolog\n/dev/sdb add\n/dev/sdb erase 0 4096\n"),
        "line 3: field 2 (action): expected read, write, trim, sync, datasync or wait, found \"erase\""
    );
    assert_eq!(
        error_for("fio version 2 iolog\n/dev/sdx read 0 4096\n"),
        "line 2: file \"/dev/sdx\" is used before a line adds it"
    );
    assert_eq!(
        error_for("fio version 3 iolog\n0 f add\nx f read 0 1\n"),
        "line 3: field 1 (timestamp): expected an integer number of microseconds, found \"x\""
    );
    assert_eq!(
        error_for("fio version 2 iolog\nf add\nf read 0 0\n"),
        "line 3: field 4 (length): expected a positive number of bytes, found \"0\""
    );
}
