//! DiskSim ASCII: a hand-written sample, a malformed sample and the bad-record policy.

mod common;

use common::{data, error_for, expect_malformed, options, read_all, record};
use storsim_core::Op;
use storsim_workload::trace::{detect, open, TraceFormat};
use storsim_workload::{Origin, Pacing, Record};

const FORMAT: TraceFormat = TraceFormat::named("disksim-ascii");

#[test]
fn sample_parses_to_exact_records() {
    let path = data("disksim_ascii_sample.trace");
    assert_eq!(detect(&path).unwrap(), FORMAT);
    let workload = open(&path, &options(FORMAT, false)).unwrap();
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
    let (items, _) = read_all(&path, &options(FORMAT, false));
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
    let (items, skipped) = read_all(&data("disksim_ascii_bad.trace"), &options(FORMAT, true));
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
        error_for(FORMAT, "1.0 0 0 8"),
        "line 1: expected 5 whitespace-separated fields (arrival_ms devno blkno bcount flags), found 4"
    );
    assert_eq!(
        error_for(FORMAT, "1.0 0 0 0 1"),
        "line 1: field 4 (bcount): expected a positive number of sectors, found \"0\""
    );
    assert_eq!(
        error_for(FORMAT, "1.0 0 0 8 zz"),
        "line 1: field 5 (flags): expected hexadecimal flags (bit 0 = read), found \"zz\""
    );
}
