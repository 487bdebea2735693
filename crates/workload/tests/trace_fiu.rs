//! FIU traces: a hand-written sample, a malformed sample and the bad-record policy.

mod common;

use common::{data, error_for, expect_malformed, options, read_all, record};
use storsim_core::Op;
use storsim_workload::trace::{detect, open, TraceFormat};
use storsim_workload::{Origin, Pacing, Record};

const FORMAT: TraceFormat = TraceFormat::named("fiu");

#[test]
fn sample_parses_to_exact_records() {
    let path = data("fiu_sample.blkparse");
    assert_eq!(detect(&path).unwrap(), FORMAT);
    let workload = open(&path, &options(FORMAT, false)).unwrap();
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
    let (items, _) = read_all(&path, &options(FORMAT, false));
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
    let (items, skipped) = read_all(&data("fiu_bad.blkparse"), &options(FORMAT, true));
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
        error_for(FORMAT, "1 2 nfsd 3 8 W 6 0"),
        "line 1: expected 9 whitespace-separated fields (ts_ns pid process lba size R|W major minor md5), found 8"
    );
    assert_eq!(
        error_for(FORMAT, "1 2 nfsd 3 0 W 6 0 ab"),
        "line 1: field 5 (size): expected a positive number of sectors, found \"0\""
    );
    assert_eq!(
        error_for(FORMAT, "x 2 nfsd 3 8 W 6 0 ab"),
        "line 1: field 1 (ts): expected an integer number of nanoseconds, found \"x\""
    );
}
