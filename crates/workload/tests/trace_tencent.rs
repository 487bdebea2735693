//! Tencent CBS traces (2018): a hand-written sample, a malformed sample and the bad-record
//! policy.

mod common;

use common::{data, error_for, expect_malformed, options, read_all, record};
use storsim_core::Op;
use storsim_workload::trace::{detect, open, TraceFormat};
use storsim_workload::Record;

const FORMAT: TraceFormat = TraceFormat::named("tencent");

const T0_NS: u64 = 1_538_323_200_000_000_000;

#[test]
fn sample_parses_to_exact_records() {
    let path = data("tencent_sample.csv");
    assert_eq!(detect(&path).unwrap(), FORMAT);
    let records: Vec<Record> = open(&path, &options(FORMAT, false))
        .unwrap()
        .records
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        records,
        vec![
            // IOType 1 is a write and 0 a read, the opposite of MQSim's type.
            record(T0_NS, Op::Write, 3920 * 512, 8 * 512, 1283, 1),
            record(T0_NS, Op::Read, 80 * 512, 16 * 512, 1283, 2),
            record(T0_NS + 1_000_000_000, Op::Write, 1024 * 512, 8 * 512, 77, 3),
            record(
                T0_NS + 1_000_000_000,
                Op::Read,
                3928 * 512,
                8 * 512,
                1283,
                4
            ),
            record(T0_NS + 3_000_000_000, Op::Write, 0, 256 * 512, 77, 5),
        ]
    );
    assert_eq!(TraceFormat::from_name("tencent-cbs"), Some(FORMAT));
}

#[test]
fn malformed_record_names_file_line_and_expectation() {
    let path = data("tencent_bad.csv");
    let (items, _) = read_all(&path, &options(FORMAT, false));
    assert_eq!(items.len(), 2);
    expect_malformed(
        &items[1],
        &path,
        "line 2",
        "field 4 (IOType): expected 0 (read) or 1 (write), found \"2\"",
    );
    let (items, skipped) = read_all(&path, &options(FORMAT, true));
    let origins: Vec<u64> = items.into_iter().map(|r| r.unwrap().origin).collect();
    assert_eq!(origins, vec![1, 5]);
    assert_eq!(skipped, 3);
    assert_eq!(
        error_for(FORMAT, "1,0,0,0,5"),
        "line 1: field 3 (Size): expected a positive number of sectors, found \"0\""
    );
    assert_eq!(
        error_for(FORMAT, "1,36028797018963968,8,0,5"),
        "line 1: field 2 (Offset): 36028797018963968 blocks of 512 bytes overflow a 64-bit byte offset"
    );
}

#[test]
fn a_header_line_is_looked_past() {
    let path = common::write_temp(
        "tencent-header",
        ".csv",
        b"Timestamp,Offset,Size,IOType,VolumeID\n10,8,8,0,3\n",
    );
    assert_eq!(detect(&path).unwrap(), FORMAT);
    let records: Vec<Record> = open(&path, &options(FORMAT, false))
        .unwrap()
        .records
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        records,
        vec![record(10_000_000_000, Op::Read, 4096, 4096, 3, 2)]
    );
}
