//! LinnOS / Heimdall / FlashNet replayer traces: a hand-written sample, a malformed sample, the
//! bad-record policy, and detection against DiskSim's and MQSim's layouts, which the same lines
//! fit.

mod common;

use common::{data, error_for, expect_malformed, options, read_all, record, write_temp};
use storsim_core::Op;
use storsim_workload::trace::{detect, detect_explained, open, TraceFormat};
use storsim_workload::{Origin, Pacing, Record, WorkloadError};

const FORMAT: TraceFormat = TraceFormat::named("linnos");

#[test]
fn sample_parses_to_exact_records() {
    let path = data("linnos_sample.trace");
    assert_eq!(detect(&path).unwrap(), FORMAT);
    let workload = open(&path, &options(FORMAT, false)).unwrap();
    assert_eq!(
        (workload.pacing, workload.origin),
        (Pacing::Open, Origin::Line)
    );
    let records: Vec<Record> = workload.records.map(Result::unwrap).collect();
    assert_eq!(records.len(), 8);
    assert_eq!(records[0], record(0, Op::Read, 4096, 4096, 0, 2));
    assert_eq!(records[1], record(250_000, Op::Write, 8192, 8192, 0, 3));
    assert_eq!(records[2], record(1_125_000, Op::Read, 1 << 20, 4096, 1, 4));
    assert_eq!(records[6], record(4_125_000, Op::Write, 40960, 65536, 0, 8));
}

#[test]
fn the_names_of_the_papers_choose_it() {
    for name in ["heimdall", "FlashNet", "linnos"] {
        assert_eq!(TraceFormat::from_name(name), Some(FORMAT), "{name}");
    }
}

#[test]
fn malformed_record_names_file_line_and_expectation() {
    let path = data("linnos_bad.trace");
    let (items, _) = read_all(&path, &options(FORMAT, false));
    assert_eq!(items.len(), 2);
    expect_malformed(
        &items[1],
        &path,
        "line 2",
        "expected 5 whitespace-separated fields (ts_ms dev offset_bytes size_bytes op), found 4",
    );
    let (items, skipped) = read_all(&path, &options(FORMAT, true));
    let origins: Vec<u64> = items.into_iter().map(|r| r.unwrap().origin).collect();
    assert_eq!(origins, vec![1, 5]);
    assert_eq!(skipped, 3);
}

#[test]
fn field_errors_say_what_was_expected_and_found() {
    assert_eq!(
        error_for(FORMAT, "0.5 0 4096 0 1"),
        "line 1: field 4 (size_bytes): expected a positive number of bytes, found \"0\""
    );
    assert_eq!(
        error_for(FORMAT, "0.5 0 4096 512 2"),
        "line 1: field 5 (op): expected 1 (read) or 0 (write), found \"2\""
    );
    assert_eq!(
        error_for(FORMAT, "-1 0 4096 512 1"),
        "line 1: field 1 (ts_ms): expected a non-negative number of milliseconds, found \"-1\""
    );
}

fn detect_text(text: &str) -> Result<TraceFormat, WorkloadError> {
    detect(&write_temp("linnos-detect", ".trace", text.as_bytes()))
}

/// Eight lines whose sizes are all multiples of 512: byte counts.
const BYTE_LINES: &str = "0.1 0 4096 4096 1\n0.2 0 8192 4096 0\n0.3 0 0 8192 1\n\
    0.4 0 12288 4096 1\n0.5 0 16384 512 0\n0.6 0 4096 4096 1\n0.7 0 8192 4096 1\n\
    0.8 0 20480 1024 0\n";

#[test]
fn byte_sizes_rule_out_the_sector_formats_and_say_so() {
    let path = write_temp("linnos-detect", ".trace", BYTE_LINES.as_bytes());
    let found = detect_explained(&path).unwrap();
    assert_eq!(found.format, FORMAT);
    assert!(
        found.evidence.contains("not disksim-ascii: all 8 sizes"),
        "{}",
        found.evidence
    );
    // Integer milliseconds read as MQSim's nanoseconds are ruled out the same way.
    let integer = BYTE_LINES.replace("0.", "1");
    assert_eq!(detect_text(&integer).unwrap(), FORMAT);
}

#[test]
fn a_sector_count_that_is_not_whole_bytes_rules_it_out() {
    // The case the other way round: DiskSim's sectors are never read as bytes.
    assert_eq!(
        detect_text("0.5 0 4096 8 1\n0.7 0 4104 8 0\n").unwrap(),
        TraceFormat::named("disksim-ascii")
    );
    assert_eq!(
        detect_text("1000 0 303567 7 0\n2000 1 55590 6 1\n").unwrap(),
        TraceFormat::named("mqsim")
    );
}

#[test]
fn a_file_too_short_to_tell_is_refused_naming_the_candidates_and_the_choices() {
    let err = detect_text("0.5 0 4096 4096 1\n0.7 0 8192 4096 0\n").unwrap_err();
    match err {
        WorkloadError::Malformed {
            source,
            position,
            message,
        } => {
            assert!(source.contains("storsim-trace-linnos-detect"), "{source}");
            assert_eq!(position, "line 1");
            assert!(
                message.contains("fits the layouts of disksim-ascii and linnos"),
                "{message}"
            );
            assert!(
                message.contains("--format disksim-ascii or --format linnos"),
                "{message}"
            );
        }
        other => panic!("expected an ambiguity error, got {other:?}"),
    }
    // Naming the format reads it.
    let path = write_temp("linnos-named", ".trace", b"0.5 0 4096 4096 1\n");
    let workload = open(&path, &options(FORMAT, false)).unwrap();
    assert_eq!(workload.detected_from, None);
    let records: Vec<Record> = workload.records.map(Result::unwrap).collect();
    assert_eq!(records, vec![record(500_000, Op::Read, 4096, 4096, 0, 1)]);
}
