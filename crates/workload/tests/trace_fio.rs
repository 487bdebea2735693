//! fio iolog versions 2 and 3: a hand-written sample, a malformed sample and the bad-record policy.

mod common;

use common::{data, error_for, expect_malformed, options, read_all, record};
use storsim_core::Op;
use storsim_workload::trace::{detect, open, TraceFormat};
use storsim_workload::{Origin, Pacing, Record};

const FORMAT: TraceFormat = TraceFormat::named("fio-iolog");

#[test]
fn version_2_sample_parses_to_exact_records() {
    let path = data("fio_iolog_v2_sample.log");
    assert_eq!(detect(&path).unwrap(), FORMAT);
    let workload = open(&path, &options(FORMAT, false)).unwrap();
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
    let path = data("fio_iolog_v3_sample.log");
    assert_eq!(detect(&path).unwrap(), FORMAT);
    let workload = open(&path, &options(FORMAT, false)).unwrap();
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
    let (items, _) = read_all(&path, &options(FORMAT, false));
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
    let (items, _) = read_all(&path, &options(FORMAT, false));
    expect_malformed(
        &items[0],
        &path,
        "line 1",
        "expected the header line `fio version 2 iolog` or `fio version 3 iolog`, found \"/dev/sdb add\"",
    );
}

#[test]
fn skip_bad_counts_every_bad_line() {
    let (items, skipped) = read_all(&data("fio_bad.log"), &options(FORMAT, true));
    let origins: Vec<u64> = items.into_iter().map(|r| r.unwrap().origin).collect();
    assert_eq!(origins, vec![7]);
    assert_eq!(skipped, 4);
}

#[test]
fn field_errors_say_what_was_expected_and_found() {
    assert_eq!(
        error_for(FORMAT, "fio version 2 iolog\n/dev/sdb add\n/dev/sdb erase 0 4096\n"),
        "line 3: field 2 (action): expected read, write, trim, sync, datasync or wait, found \"erase\""
    );
    assert_eq!(
        error_for(FORMAT, "fio version 2 iolog\n/dev/sdx read 0 4096\n"),
        "line 2: file \"/dev/sdx\" is used before a line adds it"
    );
    assert_eq!(
        error_for(FORMAT, "fio version 3 iolog\n0 f add\nx f read 0 1\n"),
        "line 3: field 1 (timestamp): expected an integer number of microseconds, found \"x\""
    );
    assert_eq!(
        error_for(FORMAT, "fio version 2 iolog\nf add\nf read 0 0\n"),
        "line 3: field 4 (length): expected a positive number of bytes, found \"0\""
    );
}
