//! blkparse text output: a hand-written sample, a malformed sample and the bad-record policy.

mod common;

use common::{data, error_for, expect_malformed, options, read_all, record};
use std::path::Path;
use storsim_core::Op;
use storsim_workload::trace::{
    detect, open, BlkparseEvent, DeviceSelection, TraceFormat, TraceOptions,
};
use storsim_workload::{Origin, Pacing, Record};

const FORMAT: TraceFormat = TraceFormat::named("blkparse");

/// Reads a whole trace and returns the records and the ignored count.
fn read_ignored(path: &Path, opts: &TraceOptions) -> (Vec<Record>, u64) {
    let workload = open(path, opts).unwrap();
    let ignored = workload.ignored.clone();
    let records = workload.records.map(Result::unwrap).collect();
    (records, ignored.get())
}

const SECTOR: u64 = 512;

#[test]
fn dispatch_events_become_requests() {
    let path = data("blkparse_sample.txt");
    assert_eq!(detect(&path).unwrap(), FORMAT);
    let workload = open(&path, &options(FORMAT, false)).unwrap();
    assert_eq!(
        (workload.pacing, workload.origin),
        (Pacing::Open, Origin::Line)
    );
    let (records, ignored) = read_ignored(&path, &options(FORMAT, false));
    // 8,16 appears first (device 0), then 8,0 (device 1). FWS without sectors is a flush, the
    // discard a trim. The N event without data and the SCSI pass-through event are ignored;
    // A, Q, G, C and m lines and the summary block are skipped.
    assert_eq!(
        records,
        vec![
            record(31_865, Op::Read, 1_444_645_666 * SECTOR, 256 * SECTOR, 0, 5),
            record(200_000, Op::Write, 2048 * SECTOR, 8 * SECTOR, 1, 7),
            record(300_000, Op::Flush, 0, 0, 1, 8),
            record(400_000, Op::Trim, 4096 * SECTOR, 2048 * SECTOR, 0, 9),
        ]
    );
    assert_eq!(ignored, 2);
}

#[test]
fn queue_events_can_be_selected() {
    let opts = TraceOptions {
        blkparse_event: BlkparseEvent::Queue,
        ..options(FORMAT, false)
    };
    let (records, ignored) = read_ignored(&data("blkparse_sample.txt"), &opts);
    assert_eq!(
        records,
        vec![
            record(1_850, Op::Read, 1_444_645_666 * SECTOR, 256 * SECTOR, 0, 2),
            record(100_000, Op::Write, 2048 * SECTOR, 8 * SECTOR, 1, 6),
        ]
    );
    assert_eq!(ignored, 0);
}

#[test]
fn one_device_can_be_selected() {
    let opts = TraceOptions {
        devices: DeviceSelection::only([1]),
        ..options(FORMAT, false)
    };
    let (records, _) = read_ignored(&data("blkparse_sample.txt"), &opts);
    assert_eq!(
        records.iter().map(|r| r.origin).collect::<Vec<_>>(),
        vec![7, 8]
    );
}

#[test]
fn malformed_record_names_file_line_and_expectation() {
    let path = data("blkparse_bad.txt");
    let (items, _) = read_all(&path, &options(FORMAT, false));
    assert_eq!(items.len(), 2);
    expect_malformed(
        &items[1],
        &path,
        "line 2",
        "expected an event line starting with the device as major,minor (like `8,16 5 6 0.000031865 18615 D R 1444645666 + 256 [java]`), found \"this\"",
    );
}

#[test]
fn skip_bad_counts_every_bad_line() {
    let (items, skipped) = read_all(&data("blkparse_bad.txt"), &options(FORMAT, true));
    let origins: Vec<u64> = items.into_iter().map(|r| r.unwrap().origin).collect();
    assert_eq!(origins, vec![1, 6]);
    assert_eq!(skipped, 4);
}

#[test]
fn field_errors_say_what_was_expected_and_found() {
    assert_eq!(
        error_for(FORMAT, "8,0 1 1 0.5x 1 D R 0 + 8 [p]"),
        "line 1: field 4 (time): expected seconds with a fraction such as 0.000031865, found \"0.5x\""
    );
    assert_eq!(
        error_for(FORMAT, "8,0 1 1 0.5 1 D R 0 + y [p]"),
        "line 1: field 10 (sectors): expected a number of sectors, found \"y\""
    );
    assert_eq!(
        error_for(FORMAT, "8,0 1 1"),
        "line 1: expected at least 7 whitespace-separated fields (maj,min cpu sequence time pid action rwbs), found 3"
    );
}
