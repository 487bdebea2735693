//! UMass / SPC CSV: a hand-written sample, a malformed sample and the bad-record policy.

mod common;

use common::{data, error_for, expect_malformed, options, read_all, record};
use storsim_core::Op;
use storsim_workload::trace::{detect, open, TraceFormat};
use storsim_workload::{Origin, Pacing, Record};

const FORMAT: TraceFormat = TraceFormat::named("spc");

#[test]
fn sample_parses_to_exact_records() {
    let path = data("spc_sample.spc");
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
    let (items, _) = read_all(&path, &options(FORMAT, false));
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
    let (items, skipped) = read_all(&data("spc_bad.spc"), &options(FORMAT, true));
    let origins: Vec<u64> = items.into_iter().map(|r| r.unwrap().origin).collect();
    assert_eq!(origins, vec![1, 7]);
    assert_eq!(skipped, 5);
}

#[test]
fn field_errors_say_what_was_expected_and_found() {
    assert_eq!(
        error_for(FORMAT, "0,1,512,x,0"),
        "line 1: field 4 (Opcode): expected r or w, found \"x\""
    );
    assert_eq!(
        error_for(FORMAT, "0,1,512,r,-1.0"),
        "line 1: field 5 (Timestamp): expected a non-negative number of seconds such as 0.026214, found \"-1.0\""
    );
    assert_eq!(
        error_for(FORMAT, "0,36028797018963968,512,r,1"),
        "line 1: field 2 (LBA): 36028797018963968 blocks of 512 bytes overflow a 64-bit byte offset"
    );
    assert_eq!(
        error_for(FORMAT, "0,1,512,r,18446744074"),
        "line 1: field 5 (Timestamp): expected a non-negative number of seconds such as 0.026214, found \"18446744074\""
    );
}
