//! FIU traces: a hand-written sample, a malformed sample and the bad-record policy.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use storsim_core::Op;
use storsim_workload::trace::{detect, open, DeviceSelection, TraceFormat, TraceOptions};
use storsim_workload::{Origin, Pacing, Record, WorkloadError};

const FORMAT: TraceFormat = TraceFormat::Fiu;

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
    let path = std::env::temp_dir().join(format!("storsim-trace-fiu-{}-{n}", std::process::id()));
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
    let path = data("fiu_sample.blkparse");
    assert_eq!(detect(&path).unwrap(), FORMAT);
    let workload = open(&path, &options(false)).unwrap();
    assert_eq!(
        (workload.pacing, workload.origin),
        (Pacing::Open, Origin::Line)
    );
    let records: Vec<Record> = workload.records.map(Result::unwrap).collect();
    // Devices are numbered by first appearance of major,minor: 6,0 is 0 and 8,16 is 1. The
    // third line's process name has a space in it.
    assert_eq!(
        records,
        vec![
            record(89_966_811_921_625, Op::Write, 488_846_200 * 512, 4096, 0, 1),
            record(89_967_003_980_393, Op::Read, 488_846_208 * 512, 4096, 0, 2),
            record(89_967_004_049_935, Op::Write, 100 * 512, 16 * 512, 1, 3),
        ]
    );
}

#[test]
fn malformed_record_names_file_line_and_expectation() {
    let path = data("fiu_bad.blkparse");
    let (items, _) = read_all(&path, &options(false));
    assert_eq!(items.len(), 2);
    expect_malformed(
        &items[1],
        &path,
        "line 2",
        "field 6 (R|W): expected R or W, found \"X\"",
    );
}

#[test]
fn skip_bad_counts_every_bad_line() {
    let (items, skipped) = read_all(&data("fiu_bad.blkparse"), &options(true));
    let records: Vec<Record> = items.into_iter().map(Result::unwrap).collect();
    assert_eq!(
        records
            .iter()
            .map(|r| (r.origin, r.dev))
            .collect::<Vec<_>>(),
        vec![(1, 0), (5, 1)]
    );
    assert_eq!(skipped, 3);
}

#[test]
fn field_errors_say_what_was_expected_and_found() {
    assert_eq!(
        error_for("1 2 nfsd 3 8 W 6 0"),
        "line 1: expected 9 whitespace-separated fields (ts_ns pid process lba size R|W major minor md5), found 8"
    );
    assert_eq!(
        error_for("1 2 nfsd 3 0 W 6 0 ab"),
        "line 1: field 5 (size): expected a positive number of sectors, found \"0\""
    );
    assert_eq!(
        error_for("x 2 nfsd 3 8 W 6 0 ab"),
        "line 1: field 1 (ts): expected an integer number of nanoseconds, found \"x\""
    );
}
