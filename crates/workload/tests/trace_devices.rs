//! Multi-device traces: concatenation, overlay and selecting one device.

mod common;

use common::{data, write_temp};
use std::path::Path;
use storsim_core::Op;
use storsim_workload::trace::{open, DeviceSelection, TraceFormat, TraceOptions};
use storsim_workload::{Record, WorkloadError};

const MIB: u64 = 1 << 20;

fn read(path: &Path, devices: DeviceSelection) -> Vec<Record> {
    let opts = TraceOptions {
        devices,
        ..TraceOptions::default()
    };
    open(path, &opts)
        .unwrap()
        .records
        .map(Result::unwrap)
        .collect()
}

fn offsets(records: &[Record]) -> Vec<(u32, u64)> {
    records.iter().map(|r| (r.dev, r.offset_bytes)).collect()
}

/// Device 0 ends at sector 303574 (148.2 MiB, so a 149 MiB region), device 1 at sector 55596
/// (27.1 MiB, a 28 MiB region); device 21 follows them.
#[test]
fn concat_lays_devices_out_in_number_order() {
    let path = data("mqsim_sample.trace");
    let base_1 = 149 * MIB;
    let base_21 = base_1 + 28 * MIB;
    assert_eq!(
        offsets(&read(&path, DeviceSelection::Concat)),
        vec![
            (0, 303_567 * 512),
            (1, base_1 + 55_590 * 512),
            (21, base_21 + 55_596 * 512)
        ]
    );
    assert_eq!(
        offsets(&read(&path, DeviceSelection::Overlay)),
        vec![(0, 303_567 * 512), (1, 55_590 * 512), (21, 55_596 * 512)]
    );
    assert_eq!(
        offsets(&read(&path, DeviceSelection::only([21]))),
        vec![(21, 55_596 * 512)]
    );
    // A device the trace never names is an error listing those it does, not an empty run.
    let opts = TraceOptions {
        devices: DeviceSelection::only([7]),
        ..TraceOptions::default()
    };
    let results: Vec<Result<Record, WorkloadError>> = open(&path, &opts).unwrap().records.collect();
    assert_eq!(results.len(), 1);
    match &results[0] {
        Err(WorkloadError::Spec { message }) => assert!(
            message.contains("device 7 does not appear") && message.contains("0, 1, 21"),
            "{message}"
        ),
        other => panic!("expected an error, got {other:?}"),
    }
}

/// Several selected devices are laid out one after another, as concat lays out all of them;
/// every selected device that never appears is named at the end, with the ones that do.
#[test]
fn a_list_of_devices_keeps_those_laid_out_in_number_order() {
    let path = data("mqsim_sample.trace");
    assert_eq!(
        offsets(&read(&path, DeviceSelection::only([21, 0]))),
        vec![(0, 303_567 * 512), (21, 149 * MIB + 55_596 * 512)]
    );
    // Repeats and order do not matter.
    assert_eq!(
        DeviceSelection::only([21, 0, 21]),
        DeviceSelection::Only(vec![0, 21])
    );
    let opts = TraceOptions {
        devices: DeviceSelection::only([0, 5, 9]),
        ..TraceOptions::default()
    };
    // The sizing pass meets the missing devices first, so open reports them.
    let message = match open(&path, &opts) {
        Err(WorkloadError::Spec { message }) => message,
        Err(other) => panic!("expected a selection error, got {other:?}"),
        Ok(_) => panic!("devices 5 and 9 are not in the trace"),
    };
    assert!(
        message.contains("devices 5, 9 do not appear")
            && message.contains("other devices are 1, 21"),
        "{message}"
    );
    // A stream cannot be sized, so only one device of it can be selected.
    let reader = Box::new(std::io::Cursor::new(std::fs::read(&path).unwrap()));
    let stream_opts = TraceOptions {
        format: Some(TraceFormat::named("mqsim")),
        devices: DeviceSelection::only([0, 1]),
        ..TraceOptions::default()
    };
    let err = storsim_workload::trace::open_reader(reader, "stdin", &stream_opts)
        .err()
        .unwrap();
    assert!(err.to_string().contains("two passes"), "{err}");
}

#[test]
fn concat_does_not_depend_on_record_order() {
    let text = std::fs::read_to_string(data("mqsim_sample.trace")).unwrap();
    let reversed: Vec<&str> = text.lines().rev().collect();
    let path = write_temp("devices", "", reversed.join("\n").as_bytes());
    let mut forward = offsets(&read(&data("mqsim_sample.trace"), DeviceSelection::Concat));
    let mut backward = offsets(&read(&path, DeviceSelection::Concat));
    forward.sort_unstable();
    backward.sort_unstable();
    assert_eq!(forward, backward);
    std::fs::remove_file(path).unwrap();
}

#[test]
fn flushes_keep_no_range_when_concatenated() {
    let records = read(&data("fio_iolog_v2_sample.log"), DeviceSelection::Concat);
    let flush = records.iter().find(|r| r.op == Op::Flush).unwrap();
    assert_eq!((flush.dev, flush.offset_bytes, flush.len_bytes), (1, 0, 0));
    // /dev/sdb (device 0) ends at 69632 bytes: one 1 MiB region before /dev/sdc.
    let read_on_sdc = records
        .iter()
        .find(|r| r.dev == 1 && r.op == Op::Read)
        .unwrap();
    assert_eq!(read_on_sdc.offset_bytes, MIB + 8192);
}

#[test]
fn concat_reports_bad_records_when_opening() {
    let opts = TraceOptions {
        format: Some(TraceFormat::named("mqsim")),
        ..TraceOptions::default()
    };
    match open(&data("mqsim_bad.trace"), &opts) {
        Err(WorkloadError::Malformed { position, .. }) => assert_eq!(position, "line 2"),
        Err(other) => panic!("expected a malformed-record error, got {other:?}"),
        Ok(_) => panic!("expected the sizing pass to fail"),
    }
    // With skip_bad the sizing pass skips them too, and only the real pass counts them.
    let opts = TraceOptions {
        skip_bad: true,
        ..opts
    };
    let workload = open(&data("mqsim_bad.trace"), &opts).unwrap();
    let skipped = workload.skipped.clone();
    assert_eq!(workload.records.count(), 2);
    assert_eq!(skipped.get(), 5);
}

#[test]
fn too_many_devices_to_concatenate_is_an_error() {
    let mut text = String::new();
    for dev in 0..=65_536u32 {
        text.push_str(&format!("0 {dev} 0 1 0\n"));
    }
    let path = write_temp("devices", "", text.as_bytes());
    let opts = TraceOptions {
        format: Some(TraceFormat::named("mqsim")),
        ..TraceOptions::default()
    };
    match open(&path, &opts) {
        Err(WorkloadError::Malformed {
            position, message, ..
        }) => {
            assert_eq!(position, "line 65537");
            assert!(message.contains("65536 devices"), "{message}");
        }
        Err(other) => panic!("expected a device-count error, got {other:?}"),
        Ok(_) => panic!("expected a device-count error"),
    }
    // Overlaying needs no per-device state, so any number of devices is fine.
    let opts = TraceOptions {
        devices: DeviceSelection::Overlay,
        ..opts
    };
    assert_eq!(open(&path, &opts).unwrap().records.count(), 65_537);
    std::fs::remove_file(path).unwrap();
}

/// A trace of several devices laid out one after another takes a pass to detect its format, a
/// scan of its device column, a pass to size each device and the pass of the records: four
/// passes, over one open of the file (it used to be opened for each). A look that tells a flow
/// file from a trace and detects the format opens it once more, and hands the format on.
#[test]
fn a_trace_is_opened_once_whatever_the_passes_over_it() {
    let path = data("mqsim_sample.trace");
    let before = storsim_workload::trace::files_opened();
    let records = read(&path, DeviceSelection::Concat);
    assert_eq!(records.len(), 3);
    assert_eq!(storsim_workload::trace::files_opened() - before, 1);
    let before = storsim_workload::trace::files_opened();
    let found = storsim_workload::trace::identify(&path, None).unwrap();
    assert_eq!(
        found,
        storsim_workload::trace::WorkloadFile::Trace(TraceFormat::named("mqsim"))
    );
    assert_eq!(storsim_workload::trace::files_opened() - before, 1);
    // Gzip too: each pass rewinds the file and decompresses it again.
    let text = std::fs::read(&path).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, &text).unwrap();
    let zipped = write_temp("opened-once", ".trace.gz", &gz.finish().unwrap());
    let before = storsim_workload::trace::files_opened();
    assert_eq!(
        offsets(&read(&zipped, DeviceSelection::Concat)),
        offsets(&records)
    );
    assert_eq!(storsim_workload::trace::files_opened() - before, 1);
}
