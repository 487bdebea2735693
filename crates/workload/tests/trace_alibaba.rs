//! Alibaba Cloud block traces (2020): a hand-written sample, a malformed sample, the
//! bad-record policy, and selecting virtual disks.

mod common;

use common::{data, error_for, expect_malformed, options, read_all, record};
use storsim_core::Op;
use storsim_workload::trace::{detect, open, DeviceSelection, TraceFormat, TraceOptions};
use storsim_workload::Record;

const FORMAT: TraceFormat = TraceFormat::named("alibaba");

/// 2020-01-01 00:00:00 +0800 in the sample's microseconds, as nanoseconds.
const T0_NS: u64 = 1_577_808_000_000_000_000;

#[test]
fn sample_parses_to_exact_records() {
    let path = data("alibaba_sample.csv");
    assert_eq!(detect(&path).unwrap(), FORMAT);
    let records: Vec<Record> = open(&path, &options(FORMAT, false))
        .unwrap()
        .records
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        records,
        vec![
            record(T0_NS + 626_000, Op::Read, 126_703_644_672, 4096, 0, 2),
            record(T0_NS + 1_000_000, Op::Write, 8192, 8192, 3, 3),
            record(T0_NS + 2_500_000, Op::Write, 126_703_648_768, 4096, 0, 4),
            record(T0_NS + 10_000_000, Op::Read, 0, 65536, 7, 5),
            record(T0_NS + 10_250_000, Op::Read, 8192, 4096, 3, 6),
        ]
    );
}

#[test]
fn malformed_record_names_file_line_and_expectation() {
    let path = data("alibaba_bad.csv");
    let (items, _) = read_all(&path, &options(FORMAT, false));
    assert_eq!(items.len(), 2);
    expect_malformed(
        &items[1],
        &path,
        "line 2",
        "field 2 (opcode): expected R or W, found \"X\"",
    );
    let (items, skipped) = read_all(&path, &options(FORMAT, true));
    let origins: Vec<u64> = items.into_iter().map(|r| r.unwrap().origin).collect();
    assert_eq!(origins, vec![1, 5]);
    assert_eq!(skipped, 3);
    assert_eq!(
        error_for(FORMAT, "0,R,0,4096"),
        "line 1: expected 5 comma-separated fields (device_id,opcode,offset,length,timestamp), found 4"
    );
    assert_eq!(
        error_for(FORMAT, "0,R,0,0,1"),
        "line 1: field 4 (length): expected a positive number of bytes, found \"0\""
    );
    assert_eq!(
        error_for(FORMAT, "0,R,0,512,18446744073709552"),
        "line 1: field 5 (timestamp): 18446744073709552 microseconds overflow a 64-bit nanosecond clock"
    );
}

#[test]
fn volumes_are_selected_one_or_several() {
    let path = data("alibaba_sample.csv");
    let read = |devices: DeviceSelection| -> Vec<(u32, u64)> {
        let opts = TraceOptions {
            devices,
            ..TraceOptions::default()
        };
        open(&path, &opts)
            .unwrap()
            .records
            .map(|r| r.map(|r| (r.dev, r.offset_bytes)).unwrap())
            .collect()
    };
    assert_eq!(read(DeviceSelection::only([3])), vec![(3, 8192), (3, 8192)]);
    // Two disks are laid out one after another, in disk order, as concat does.
    let both = read(DeviceSelection::only([7, 3]));
    assert_eq!(both, vec![(3, 8192), (7, 1 << 20), (3, 8192)]);
}
