//! DiskSim validate: a hand-written sample, a malformed sample and the bad-record policy.

mod common;

use common::{data, error_for, expect_malformed, options, read_all, record};
use storsim_core::Op;
use storsim_workload::trace::{detect, open, validate_measured_access_us, TraceFormat};
use storsim_workload::{Origin, Pacing, Record, WorkloadError};

const FORMAT: TraceFormat = TraceFormat::named("validate");

#[test]
fn sample_parses_to_exact_records() {
    let path = data("validate_sample.trace");
    assert_eq!(detect(&path).unwrap(), FORMAT);
    let workload = open(&path, &options(FORMAT, false)).unwrap();
    assert_eq!(workload.pacing, Pacing::Closed { depth: 1 });
    assert_eq!(workload.origin, Origin::Line);
    let records: Vec<Record> = workload.records.map(Result::unwrap).collect();
    // Record i+1 carries line i's think time; timestamps follow the measured timeline.
    assert_eq!(
        records,
        vec![
            Record {
                think_ns: 0,
                ..record(0, Op::Read, 4_583_176 * 512, 4 * 512, 0, 1)
            },
            Record {
                think_ns: 45_422_000,
                ..record(
                    663_000 + 45_422_000,
                    Op::Write,
                    4_583_180 * 512,
                    4 * 512,
                    0,
                    2
                )
            },
            Record {
                think_ns: 34_200_250,
                ..record(
                    46_085_000 + 607_500 + 34_200_250,
                    Op::Read,
                    3_962_268 * 512,
                    12 * 512,
                    0,
                    3
                )
            },
        ]
    );
}

#[test]
fn measured_access_times_are_column_five() {
    let access: Vec<f64> = validate_measured_access_us(&data("validate_sample.trace"))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(access, vec![663.0, 607.5, 6657.000001]);
    let mut bad = validate_measured_access_us(&data("validate_bad.trace")).unwrap();
    assert_eq!(bad.next().unwrap().unwrap(), 663.0);
    assert!(matches!(
        bad.next(),
        Some(Err(WorkloadError::Malformed { .. }))
    ));
    assert!(bad.next().is_none());
}

#[test]
fn malformed_record_names_file_line_and_expectation() {
    let path = data("validate_bad.trace");
    let (items, _) = read_all(&path, &options(FORMAT, false));
    assert_eq!(items.len(), 2);
    expect_malformed(
        &items[1],
        &path,
        "line 2",
        "field 1 (R|W): expected R or W, found \"X\"",
    );
}

#[test]
fn skip_bad_counts_every_bad_line() {
    let (items, skipped) = read_all(&data("validate_bad.trace"), &options(FORMAT, true));
    let records: Vec<Record> = items.into_iter().map(Result::unwrap).collect();
    assert_eq!(
        records.iter().map(|r| r.origin).collect::<Vec<_>>(),
        vec![1, 7]
    );
    // Skipped lines do not break the think-time chain.
    assert_eq!(records[1].think_ns, 45_422_000);
    assert_eq!(skipped, 5);
}

#[test]
fn field_errors_say_what_was_expected_and_found() {
    assert_eq!(
        error_for(FORMAT, "R Quad 1 4 1.0 1.0"),
        "line 1: field 2 (buffer action): expected Hit, Miss, Doub or Trip, found \"Quad\""
    );
    assert_eq!(
        error_for(FORMAT, "R Hit 1 4 -1.0 1.0"),
        "line 1: field 5 (access_us): expected a non-negative number of microseconds, found \"-1.0\""
    );
    assert_eq!(
        error_for(FORMAT, "R Hit 1 4 1.0"),
        "line 1: expected 6 whitespace-separated fields (R|W Hit|Miss|Doub|Trip blkno bcount access_us think_us), found 5"
    );
}
