//! SNIA SYSTOR '17 traces: a hand-written sample, a malformed sample, the bad-record policy,
//! lines without a type, and the measured response times a validation compares with.

mod common;

use common::{data, error_for, expect_malformed, options, read_all, record};
use storsim_core::Op;
use storsim_workload::trace::{detect, measured_response_times, open, TraceFormat};
use storsim_workload::Record;

const FORMAT: TraceFormat = TraceFormat::named("systor");

const T0_NS: u64 = 1_456_135_200_000_000_000;

#[test]
fn sample_parses_to_exact_records_and_ignores_lines_without_a_type() {
    let path = data("systor_sample.csv");
    assert_eq!(detect(&path).unwrap(), FORMAT);
    let workload = open(&path, &options(FORMAT, false)).unwrap();
    let ignored = workload.ignored.clone();
    let records: Vec<Record> = workload.records.map(Result::unwrap).collect();
    assert_eq!(
        records,
        vec![
            record(T0_NS + 13_118_000, Op::Read, 899_056_122_368, 131_072, 4, 2),
            record(T0_NS + 13_250_000, Op::Write, 4096, 4096, 4, 3),
            record(T0_NS + 113_118_000, Op::Read, 8192, 8192, 4, 5),
            record(T0_NS + 1_000_000_000, Op::Write, 1 << 20, 65536, 4, 6),
        ]
    );
    assert_eq!(ignored.get(), 1);
}

#[test]
fn response_times_are_seconds_keyed_by_line() {
    let m = measured_response_times(&data("systor_sample.csv"), &options(FORMAT, false)).unwrap();
    assert_eq!(m.len(), 4);
    assert_eq!(m.response_ns(2), Some(806_000));
    assert_eq!(m.response_ns(3), Some(212_000));
    // The line without a type is no request and has no measured time.
    assert_eq!(m.response_ns(4), None);
    assert_eq!(m.response_ns(6), Some(10_000_000));
}

#[test]
fn malformed_record_names_file_line_and_expectation() {
    let path = data("systor_bad.csv");
    let (items, _) = read_all(&path, &options(FORMAT, false));
    assert_eq!(items.len(), 2);
    expect_malformed(
        &items[1],
        &path,
        "line 3",
        "field 2 (Response): expected a non-negative number of seconds, found \"fast\"",
    );
    let (items, skipped) = read_all(&path, &options(FORMAT, true));
    let origins: Vec<u64> = items.into_iter().map(|r| r.unwrap().origin).collect();
    assert_eq!(origins, vec![2, 6]);
    assert_eq!(skipped, 3);
    assert_eq!(
        error_for(FORMAT, "1.5,0.1,X,0,0,512"),
        "line 1: field 3 (IOType): expected R, W or nothing, found \"X\""
    );
    assert_eq!(
        error_for(FORMAT, "1.5,0.1,R,0,0"),
        "line 1: expected 6 comma-separated fields (Timestamp,Response,IOType,LUN,Offset,Size), found 5"
    );
}
