//! vscsi binary traces: hand-built version 1 and version 2 records, malformed records and the
//! bad-record policy. The samples are built here byte by byte rather than checked in.

mod common;

use common::{expect_malformed, write_temp};
use storsim_core::Op;
use storsim_workload::trace::{detect, open, DeviceSelection, TraceFormat, TraceOptions};
use storsim_workload::{Origin, Pacing, Record};

const READ_10: u16 = 0x28;
const WRITE_16: u16 = 0x8a;
const INQUIRY: u16 = 0x12;

/// One version 1 record: `u32 serial, u32 len, u32 sg, u16 opcode, u16 version, u64 lbn, u64 ts_us`.
fn v1(opcode: u16, len_bytes: u32, lbn: u64, ts_us: u64) -> Vec<u8> {
    let mut r = Vec::with_capacity(32);
    r.extend_from_slice(&7u32.to_le_bytes());
    r.extend_from_slice(&len_bytes.to_le_bytes());
    r.extend_from_slice(&1u32.to_le_bytes());
    r.extend_from_slice(&opcode.to_le_bytes());
    r.extend_from_slice(&0x0100u16.to_le_bytes());
    r.extend_from_slice(&lbn.to_le_bytes());
    r.extend_from_slice(&ts_us.to_le_bytes());
    r
}

/// One version 2 record: `u16 opcode, u16 version, u32 serial, u32 len, u32 sg, u64 lbn,
/// u64 ts_us, u64 response`.
fn v2(opcode: u16, len_bytes: u32, lbn: u64, ts_us: u64) -> Vec<u8> {
    let mut r = Vec::with_capacity(40);
    r.extend_from_slice(&opcode.to_le_bytes());
    r.extend_from_slice(&0x0200u16.to_le_bytes());
    r.extend_from_slice(&7u32.to_le_bytes());
    r.extend_from_slice(&len_bytes.to_le_bytes());
    r.extend_from_slice(&1u32.to_le_bytes());
    r.extend_from_slice(&lbn.to_le_bytes());
    r.extend_from_slice(&ts_us.to_le_bytes());
    r.extend_from_slice(&250u64.to_le_bytes());
    r
}

fn options(skip_bad: bool) -> TraceOptions {
    TraceOptions {
        format: Some(TraceFormat::named("vscsi")),
        skip_bad,
        ..TraceOptions::default()
    }
}

fn record(timestamp_ns: u64, op: Op, offset_bytes: u64, len_bytes: u64, origin: u64) -> Record {
    Record {
        timestamp_ns,
        op,
        offset_bytes,
        len_bytes,
        dev: 0,
        think_ns: 0,
        origin,
    }
}

fn sample(build: fn(u16, u32, u64, u64) -> Vec<u8>) -> Vec<u8> {
    [
        build(READ_10, 4096, 100, 5_000_000),
        build(INQUIRY, 36, 0, 5_000_001),
        build(READ_10, 0, 100, 5_000_002),
        build(WRITE_16, 8192, 1 << 40, 6_000_000),
    ]
    .concat()
}

#[test]
fn version_1_sample_parses_to_exact_records() {
    let path = write_temp("vscsi", ".vscsi", &sample(v1));
    assert_eq!(detect(&path).unwrap(), TraceFormat::named("vscsi"));
    let workload = open(&path, &options(false)).unwrap();
    let ignored = workload.ignored.clone();
    assert_eq!(
        (workload.pacing, workload.origin),
        (Pacing::Open, Origin::ByteOffset)
    );
    let records: Vec<Record> = workload.records.map(Result::unwrap).collect();
    // The INQUIRY and the zero-length read are ignored, not malformed.
    assert_eq!(
        records,
        vec![
            record(5_000_000_000, Op::Read, 51_200, 4096, 0),
            record(6_000_000_000, Op::Write, (1 << 40) * 512, 8192, 96),
        ]
    );
    assert_eq!(ignored.get(), 2);
    std::fs::remove_file(path).unwrap();
}

#[test]
fn version_2_sample_parses_to_exact_records() {
    let path = write_temp("vscsi", ".vscsi", &sample(v2));
    assert_eq!(detect(&path).unwrap(), TraceFormat::named("vscsi"));
    let workload = open(&path, &options(false)).unwrap();
    let ignored = workload.ignored.clone();
    let records: Vec<Record> = workload.records.map(Result::unwrap).collect();
    assert_eq!(
        records,
        vec![
            record(5_000_000_000, Op::Read, 51_200, 4096, 0),
            record(6_000_000_000, Op::Write, (1 << 40) * 512, 8192, 120),
        ]
    );
    assert_eq!(ignored.get(), 2);
    std::fs::remove_file(path).unwrap();
}

fn bad_sample() -> Vec<u8> {
    let mut mixed_version = v1(READ_10, 512, 1, 2);
    mixed_version[15] = 2;
    [
        v1(READ_10, 512, 1, 1),
        mixed_version,
        v1(READ_10, 512, u64::MAX, 3),
        v1(WRITE_16, 512, 8, 4),
        v1(READ_10, 512, 9, 5)[..20].to_vec(),
    ]
    .concat()
}

#[test]
fn malformed_record_names_file_byte_and_expectation() {
    let path = write_temp("vscsi", ".vscsi", &bad_sample());
    let items: Vec<_> = open(&path, &options(false)).unwrap().records.collect();
    assert_eq!(items.len(), 2);
    expect_malformed(
        &items[1],
        &path,
        "byte 32",
        "expected a version 1 record (version field 0x01xx) like the first record, found version field 0x0200",
    );
    std::fs::remove_file(path).unwrap();
}

#[test]
fn skip_bad_counts_every_bad_record() {
    let path = write_temp("vscsi", ".vscsi", &bad_sample());
    let workload = open(&path, &options(true)).unwrap();
    let skipped = workload.skipped.clone();
    let origins: Vec<u64> = workload.records.map(|r| r.unwrap().origin).collect();
    // The mixed version, the overflowing block number and the truncated tail are skipped.
    assert_eq!(origins, vec![0, 96]);
    assert_eq!(skipped.get(), 3);
    std::fs::remove_file(path).unwrap();
}

#[test]
fn overflow_and_truncation_are_reported() {
    let path = write_temp(
        "vscsi",
        ".vscsi",
        &[
            v1(READ_10, 512, u64::MAX, 3),
            v1(READ_10, 512, 1, 1)[..20].to_vec(),
        ]
        .concat(),
    );
    let opts = TraceOptions {
        devices: DeviceSelection::Overlay,
        ..options(false)
    };
    let err = open(&path, &opts)
        .unwrap()
        .records
        .next()
        .unwrap()
        .unwrap_err();
    assert!(
        err.to_string()
            .ends_with("byte 0: block number 18446744073709551615 overflows a 64-bit byte offset"),
        "{err}"
    );
    std::fs::remove_file(&path).unwrap();

    let path = write_temp(
        "vscsi",
        ".vscsi",
        &[
            v1(READ_10, 512, 1, 1),
            v1(READ_10, 512, 1, 1)[..20].to_vec(),
        ]
        .concat(),
    );
    let items: Vec<_> = open(&path, &opts).unwrap().records.collect();
    assert!(items[0].is_ok());
    let err = items[1].as_ref().unwrap_err();
    assert!(
        err.to_string()
            .ends_with("byte 32: truncated record: 20 of 32 bytes at the end of the file"),
        "{err}"
    );
    std::fs::remove_file(path).unwrap();
}
