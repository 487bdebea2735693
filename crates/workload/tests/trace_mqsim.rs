//! MQSim / SSDsim ASCII: a hand-written sample, a malformed sample and the bad-record policy.

mod common;

use common::{data, error_for, expect_malformed, options, read_all, record};
use storsim_core::Op;
use storsim_workload::trace::{detect, open, TraceFormat};
use storsim_workload::{Origin, Pacing, Record};

const FORMAT: TraceFormat = TraceFormat::named("mqsim");

#[test]
fn sample_parses_to_exact_records() {
    let path = data("mqsim_sample.trace");
    assert_eq!(detect(&path).unwrap(), FORMAT);
    let workload = open(&path, &options(FORMAT, false)).unwrap();
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
    let (items, _) = read_all(&path, &options(FORMAT, false));
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
    let (items, skipped) = read_all(&data("mqsim_bad.trace"), &options(FORMAT, true));
    let origins: Vec<u64> = items.into_iter().map(|r| r.unwrap().origin).collect();
    // The last line has no newline and still counts.
    assert_eq!(origins, vec![1, 7]);
    assert_eq!(skipped, 5);
}

#[test]
fn field_errors_say_what_was_expected_and_found() {
    assert_eq!(
        error_for(FORMAT, "1.5 1 55590 6 1"),
        "line 1: field 1 (arrival_ns): expected an integer number of nanoseconds, found \"1.5\""
    );
    assert_eq!(
        error_for(FORMAT, "0 4294967296 1 1 1"),
        "line 1: field 2 (device): expected a device number, found \"4294967296\""
    );
    assert_eq!(
        error_for(FORMAT, "0 0 1 36028797018963968 1"),
        "line 1: field 4 (size_sectors): 36028797018963968 blocks of 512 bytes overflow a 64-bit byte offset"
    );
}
