//! MSR Cambridge CSV: a hand-written sample, a malformed sample and the bad-record policy.

mod common;

use common::{data, error_for, expect_malformed, options, read_all};
use storsim_core::Op;
use storsim_workload::trace::{detect, open, TraceFormat};
use storsim_workload::{Origin, Pacing, Record};

const FORMAT: TraceFormat = TraceFormat::named("msr");

#[test]
fn sample_parses_to_exact_records() {
    let path = data("msr_sample.csv");
    assert_eq!(detect(&path).unwrap(), TraceFormat::named("msr"));
    let workload = open(&path, &options(FORMAT, false)).unwrap();
    assert_eq!(workload.name, path.display().to_string());
    assert_eq!(workload.pacing, Pacing::Open);
    assert_eq!(workload.origin, Origin::Line);
    let records: Vec<Record> = workload.records.map(Result::unwrap).collect();
    assert_eq!(
        records,
        vec![
            Record {
                timestamp_ns: 12_816_637_200_306_162_900,
                op: Op::Read,
                offset_bytes: 383_496_192,
                len_bytes: 32_768,
                dev: 1,
                think_ns: 0,
                origin: 2,
            },
            Record {
                timestamp_ns: 12_816_637_201_638_215_500,
                op: Op::Write,
                offset_bytes: 3_154_674_176,
                len_bytes: 4096,
                dev: 0,
                think_ns: 0,
                origin: 3,
            },
            Record {
                timestamp_ns: 12_816_637_202_638_224_500,
                op: Op::Write,
                offset_bytes: 2_000_000_000,
                len_bytes: 512,
                dev: 0,
                think_ns: 0,
                origin: 5,
            },
        ]
    );
}

#[test]
fn malformed_record_names_file_line_and_expectation() {
    let path = data("msr_bad.csv");
    let (items, _) = read_all(&path, &options(FORMAT, false));
    assert_eq!(items.len(), 2, "the stream stops at the first error");
    assert_eq!(items[0].as_ref().unwrap().origin, 1);
    expect_malformed(
        &items[1],
        &path,
        "line 2",
        "expected 7 comma-separated fields (Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime), found 4",
    );
}

#[test]
fn skip_bad_counts_every_bad_line() {
    let (items, skipped) = read_all(&data("msr_bad.csv"), &options(FORMAT, true));
    let origins: Vec<u64> = items.into_iter().map(|r| r.unwrap().origin).collect();
    // Line 2 is short, 3 has an unknown type, 4 a zero size, 5 a timestamp that overflows.
    assert_eq!(origins, vec![1, 6]);
    assert_eq!(skipped, 4);
}

#[test]
fn field_errors_say_what_was_expected_and_found() {
    assert_eq!(
        error_for(FORMAT, "1,hm,1,Erase,0,512,1"),
        "line 1: field 4 (Type): expected Read or Write, found \"Erase\""
    );
    assert_eq!(
        error_for(FORMAT, "1,hm,1,Read,0,0,1"),
        "line 1: field 6 (Size): expected a positive number of bytes, found \"0\""
    );
    assert_eq!(
        error_for(FORMAT, "999999999999999999,hm,1,Read,0,512,1"),
        "line 1: field 1 (Timestamp): 999999999999999999 ticks of 100 ns overflow a 64-bit nanosecond clock"
    );
    assert_eq!(
        error_for(FORMAT, "1,hm,1,Read,18446744073709551615,512,1"),
        "line 1: the request at byte offset 18446744073709551615 with length 512 ends beyond 2^64 bytes"
    );
    assert_eq!(
        error_for(FORMAT, "1,hm,x,Read,0,512,1"),
        "line 1: field 3 (DiskNumber): expected a disk number, found \"x\""
    );
}
