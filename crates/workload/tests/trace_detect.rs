//! Format detection on hand-written samples: content decides, never the file name.

mod common;

use common::{data, write_temp};
use std::path::Path;
use storsim_workload::trace::{detect, open_reader, TraceFormat, TraceOptions};
use storsim_workload::WorkloadError;

fn detect_text(text: &str) -> Result<TraceFormat, WorkloadError> {
    let path = write_temp("detect", "-sample", text.as_bytes());
    let result = detect(&path);
    std::fs::remove_file(path).unwrap();
    result
}

#[test]
fn every_sample_is_recognised() {
    for (file, format) in [
        ("msr_sample.csv", TraceFormat::named("msr")),
        ("msr_bad.csv", TraceFormat::named("msr")),
        ("spc_sample.spc", TraceFormat::named("spc")),
        (
            "disksim_ascii_sample.trace",
            TraceFormat::named("disksim-ascii"),
        ),
        ("mqsim_sample.trace", TraceFormat::named("mqsim")),
        ("blkparse_sample.txt", TraceFormat::named("blkparse")),
        ("blkparse_bad.txt", TraceFormat::named("blkparse")),
        ("fio_iolog_v2_sample.log", TraceFormat::named("fio-iolog")),
        ("fio_iolog_v3_sample.log", TraceFormat::named("fio-iolog")),
        ("fiu_sample.blkparse", TraceFormat::named("fiu")),
        ("validate_sample.trace", TraceFormat::named("validate")),
        (
            "storsim_record_sample.rec",
            TraceFormat::named("storsim-record"),
        ),
        (
            "storsim_record_bad.rec",
            TraceFormat::named("storsim-record"),
        ),
    ] {
        assert_eq!(
            detect(&data(file)).unwrap_or_else(|e| panic!("{e}")),
            format,
            "{file}"
        );
    }
}

#[test]
fn the_file_name_does_not_matter() {
    let text = std::fs::read(data("msr_sample.csv")).unwrap();
    let path = write_temp("detect", "-looks-like.spc", &text);
    assert_eq!(detect(&path).unwrap(), TraceFormat::named("msr"));
    std::fs::remove_file(path).unwrap();
}

#[test]
fn disksim_and_mqsim_ascii_are_told_apart_by_their_values() {
    // Integer nanoseconds advancing by thousands: MQSim.
    assert_eq!(
        detect_text("938513000 4 264719034 16 0\n938828000 3 197570570 16 1\n").unwrap(),
        TraceFormat::named("mqsim")
    );
    // All arrivals at the same instant: nothing says milliseconds, so MQSim.
    assert_eq!(
        detect_text("0 0 303567 7 0\n0 1 55590 6 0\n").unwrap(),
        TraceFormat::named("mqsim")
    );
    // Fractional times, tabs, or flags other than 0 and 1: DiskSim.
    assert_eq!(
        detect_text("13.191135 30 0 5 1\n").unwrap(),
        TraceFormat::named("disksim-ascii")
    );
    assert_eq!(
        detect_text("13\t30\t0\t5\t1\n").unwrap(),
        TraceFormat::named("disksim-ascii")
    );
    assert_eq!(
        detect_text("0 0 0 8 0\n4 0 8 8 9\n").unwrap(),
        TraceFormat::named("disksim-ascii")
    );
    // Integer times a few units apart: DiskSim's milliseconds.
    assert_eq!(
        detect_text("10 0 0 8 1\n12 0 8 8 0\n17 0 16 8 1\n").unwrap(),
        TraceFormat::named("disksim-ascii")
    );
}

#[test]
fn headers_and_comments_are_looked_past() {
    assert_eq!(
        detect_text("# exported\n\nTimestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n1,h,0,Read,0,512,1\n").unwrap(),
        TraceFormat::named("msr")
    );
    assert_eq!(
        detect_text("\u{feff}0,1,512,r,0.5\r\n").unwrap(),
        TraceFormat::named("spc")
    );
}

#[test]
fn unrecognised_content_is_a_clear_error() {
    match detect_text("\n\nhello world\n") {
        Err(WorkloadError::Malformed {
            source,
            position,
            message,
        }) => {
            assert!(source.contains("storsim-trace-detect"));
            assert_eq!(position, "line 3");
            assert!(
                message.starts_with("cannot recognise the trace format"),
                "{message}"
            );
            let names: Vec<&str> = TraceFormat::all().map(TraceFormat::name).collect();
            assert!(message.contains(&names.join(", ")), "{message}");
        }
        other => panic!("expected a detection error, got {other:?}"),
    }
    let err = detect_text("").unwrap_err().to_string();
    assert!(err.ends_with("byte 0: the file is empty"), "{err}");
    let path = write_temp(
        "detect",
        "-binary",
        &[0u8, 1, 2, 3, 4, 5, 6, 7, 0, 0, 0, 0, 0, 0, 0, 0],
    );
    let err = detect(&path).unwrap_err().to_string();
    assert!(err.contains("binary"), "{err}");
    std::fs::remove_file(path).unwrap();
    let err = detect(Path::new("/nonexistent/trace")).unwrap_err();
    assert!(matches!(err, WorkloadError::Io { .. }), "{err:?}");
}

#[test]
fn a_stream_needs_its_format_named() {
    let reader = Box::new(std::io::Cursor::new(b"0 0 1 1 1\n".to_vec()));
    let err = open_reader(reader, "stdin", &TraceOptions::default())
        .err()
        .unwrap();
    assert!(err.to_string().contains("must be named"), "{err}");
    let reader = Box::new(std::io::Cursor::new(b"0 0 1 1 1\n".to_vec()));
    let opts = TraceOptions {
        format: Some(TraceFormat::named("mqsim")),
        ..TraceOptions::default()
    };
    let err = open_reader(reader, "stdin", &opts).err().unwrap();
    assert!(err.to_string().contains("two passes"), "{err}");
}
