//! Gzip-compressed traces are recognised by their magic bytes and read like plain ones. The
//! compressed files are written at run time.

use flate2::write::GzEncoder;
use flate2::Compression;
use std::io::Write;
mod common;

use common::data;
use std::path::Path;
use storsim_workload::trace::{
    detect, open, open_reader, DeviceSelection, TraceFormat, TraceOptions,
};
use storsim_workload::Record;

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

fn records(path: &Path, opts: &TraceOptions) -> Vec<Record> {
    open(path, opts)
        .unwrap()
        .records
        .map(Result::unwrap)
        .collect()
}

/// A directory of the test's own, since tests run in parallel, removed when the returned guard
/// drops.
fn temp_dir(test: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!(
            "storsim-trace-gzip-{}-{test}-",
            std::process::id()
        ))
        .tempdir()
        .unwrap()
}

#[test]
fn compressed_text_traces_read_like_plain_ones() {
    let tmp = temp_dir("plain");
    let dir = tmp.path();
    for (file, format) in [
        ("mqsim_sample.trace", TraceFormat::named("mqsim")),
        ("msr_sample.csv", TraceFormat::named("msr")),
        ("blkparse_sample.txt", TraceFormat::named("blkparse")),
        ("validate_sample.trace", TraceFormat::named("validate")),
        ("fio_iolog_v3_sample.log", TraceFormat::named("fio-iolog")),
        (
            "storsim_record_sample.rec",
            TraceFormat::named("storsim-record"),
        ),
    ] {
        let plain = data(file);
        // No `.gz` in the name: the content decides.
        let packed = dir.join(format!("{file}.bin"));
        std::fs::write(&packed, gzip(&std::fs::read(&plain).unwrap())).unwrap();
        assert_eq!(detect(&packed).unwrap(), format, "{file}");
        let opts = TraceOptions::default();
        assert_eq!(records(&packed, &opts), records(&plain, &opts), "{file}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn concatenated_gzip_members_are_all_read() {
    let tmp = temp_dir("members");
    let dir = tmp.path();
    let text = std::fs::read_to_string(data("mqsim_sample.trace")).unwrap();
    let (first, second) = text.split_at(text.find('\n').unwrap() + 1);
    let path = dir.join("two-members.gz");
    std::fs::write(
        &path,
        [gzip(first.as_bytes()), gzip(second.as_bytes())].concat(),
    )
    .unwrap();
    let opts = TraceOptions {
        devices: DeviceSelection::Overlay,
        ..TraceOptions::default()
    };
    assert_eq!(
        records(&path, &opts),
        records(&data("mqsim_sample.trace"), &opts)
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn compressed_streams_are_read_too() {
    let bytes = gzip(&std::fs::read(data("mqsim_sample.trace")).unwrap());
    let opts = TraceOptions {
        format: Some(TraceFormat::named("mqsim")),
        devices: DeviceSelection::Overlay,
        ..TraceOptions::default()
    };
    let workload = open_reader(Box::new(std::io::Cursor::new(bytes)), "stdin", &opts).unwrap();
    assert_eq!(workload.name, "stdin");
    let streamed: Vec<Record> = workload.records.map(Result::unwrap).collect();
    assert_eq!(streamed, records(&data("mqsim_sample.trace"), &opts));
}

#[test]
fn a_corrupt_stream_is_an_io_error() {
    let mut bytes = gzip(&std::fs::read(data("mqsim_sample.trace")).unwrap());
    let middle = bytes.len() / 2;
    bytes[middle..].fill(0xAA);
    let tmp = temp_dir("corrupt");
    let dir = tmp.path();
    let path = dir.join("corrupt.gz");
    std::fs::write(&path, bytes).unwrap();
    let opts = TraceOptions {
        format: Some(TraceFormat::named("mqsim")),
        ..TraceOptions::default()
    };
    let result = open(&path, &opts).and_then(|w| w.records.collect::<Result<Vec<_>, _>>());
    assert!(
        matches!(result, Err(storsim_workload::WorkloadError::Io { .. })),
        "{result:?}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}
