//! UMass / SPC CSV: a hand-written sample, a malformed sample and the bad-record policy.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use storsim_core::Op;
use storsim_workload::trace::{detect, open, DeviceSelection, TraceFormat, TraceOptions};
use storsim_workload::{Origin, Pacing, Record, WorkloadError};

const FORMAT: TraceFormat = TraceFormat::Spc;

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
    let path = std::env::temp_dir().join(format!("storsim-trace-spc-{}-{n}", std::process::id()));
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
    let path = data("spc_sample.spc");
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
            record(0, Op::Write, 303_567 * 512, 3584, 0, 1),
            record(0, Op::Write, 55_590 * 512, 3072, 1, 2),
            record(26_214_000, Op::Read, 303_574 * 512, 3584, 0, 3),
            record(12_500_000_000, Op::Read, 5120, 512, 3, 4),
        ]
    );
}

#[test]
fn malformed_record_names_file_line_and_expectation() {
    let path = data("spc_bad.spc");
    let (items, _) = read_all(&path, &options(false));
    assert_eq!(items.len(), 2);
    expect_malformed(
        &items[1],
        &path,
        "line 2",
        "expected at least 5 comma-separated fields (ASU,LBA,Size,Opcode,Timestamp), found 4",
    );
}

#[test]
fn skip_bad_counts_every_bad_line() {
    let (items, skipped) = read_all(&data("spc_bad.spc"), &options(true));
    let origins: Vec<u64> = items.into_iter().map(|r| r.unwrap().origin).collect();
    assert_eq!(origins, vec![1, 7]);
    assert_eq!(skipped, 5);
}

#[test]
fn field_errors_say_what_was_expected_and_found() {
    assert_eq!(
        error_for("0,1,512,x,0"),
        "line 1: field 4 (Opcode): expected r or w, found \"x\""
    );
    assert_eq!(
        error_for("0,1,512,r,-1.0"),
        "line 1: field 5 (Timestamp): expected a non-negative number of seconds such as 0.026214, found \"-1.0\""
    );
    assert_eq!(
        error_for("0,36028797018963968,512,r,1"),
        "line 1: field 2 (LBA): 36028797018963968 blocks of 512 bytes overflow a 64-bit byte offset"
    );
    assert_eq!(
        error_for("0,1,512,r,18446744074"),
        "line 1: field 5 (Timestamp): expected a non-negative number of seconds such as 0.026214, found \"18446744074\""
    );
}
