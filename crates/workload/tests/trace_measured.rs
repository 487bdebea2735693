//! The response times traces measured, read beside their records: MSR's ResponseTime column,
//! blkparse's D->C pairs, storsim's recordings and DiskSim's validation traces.

mod common;

use common::{data, options, read_all, write_temp};
use storsim_workload::trace::{measured_response_times, BlkparseEvent, TraceFormat, TraceOptions};

const MSR: TraceFormat = TraceFormat::named("msr");
const BLKPARSE: TraceFormat = TraceFormat::named("blkparse");

#[test]
fn msr_response_times_are_in_100_ns_ticks_and_keyed_by_line() {
    let text = "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n\
                1000,h,0,Read,0,4096,25\n\
                2000,h,0,Write,4096,512,0\n";
    let path = write_temp("measured-msr", ".csv", text.as_bytes());
    let m = measured_response_times(&path, &options(MSR, false)).unwrap();
    assert_eq!(m.len(), 2);
    assert_eq!(m.response_ns(1), None, "the header is no record");
    assert_eq!(m.response_ns(2), Some(2_500));
    assert_eq!(m.response_ns(3), Some(0));
    // The keys are the records' own positions.
    let (records, _) = read_all(&path, &options(MSR, false));
    let origins: Vec<u64> = records.iter().map(|r| r.as_ref().unwrap().origin).collect();
    assert_eq!(origins, [2, 3]);
}

#[test]
fn an_msr_record_without_a_response_time_is_an_error_naming_its_line_or_a_counted_skip() {
    let text = "1000,h,0,Read,0,4096,25\n2000,h,0,Write,4096,512,\n";
    let path = write_temp("measured-msr-bad", ".csv", text.as_bytes());
    let e = measured_response_times(&path, &options(MSR, false)).unwrap_err();
    let message = e.to_string();
    assert!(
        message.contains("line 2") && message.contains("ResponseTime"),
        "{message}"
    );
    // With skip_bad the line is skipped, as the record parser skips it.
    let m = measured_response_times(&path, &options(MSR, true)).unwrap();
    assert_eq!((m.len(), m.response_ns(1)), (1, Some(2_500)));
}

#[test]
fn blkparse_pairs_each_dispatch_with_the_completion_of_its_sector() {
    // The shared sample: the read dispatched at 0.000031865 s completes at 0.000356669 s. The
    // other dispatches have no completion in the file.
    let m =
        measured_response_times(&data("blkparse_sample.txt"), &options(BLKPARSE, false)).unwrap();
    assert_eq!(m.response_ns(5), Some(356_669 - 31_865));
    assert_eq!(m.len(), 1);
    assert_eq!(m.unmatched_completions, 0);
}

#[test]
fn blkparse_pairs_in_dispatch_order_counts_completions_without_dispatch_and_leaves_lone_dispatches_unmeasured(
) {
    let text = "\
8,0 0 1 0.000000000 1 C W 500 + 8 [0]
8,0 0 2 0.000100000 1 D W 1000 + 8 [a]
8,0 0 3 0.000200000 1 D W 1000 + 8 [a]
8,16 0 4 0.000250000 1 D R 1000 + 8 [b]
8,0 0 5 0.000300000 1 D R 2000 + 16 [a]
8,0 0 6 0.000400000 0 C W 1000 + 8 [0]
8,16 0 7 0.000450000 0 C R 1000 + 8 [0]
8,0 0 8 0.000700000 0 C W 1000 + 8 [0]
";
    let path = write_temp("measured-blkparse", ".txt", text.as_bytes());
    let m = measured_response_times(&path, &options(BLKPARSE, false)).unwrap();
    // Two writes to sector 1000 of 8,0 complete in the order they were dispatched; the read of
    // the same sector on 8,16 is another device's.
    assert_eq!(m.response_ns(2), Some(300_000));
    assert_eq!(m.response_ns(3), Some(500_000));
    assert_eq!(m.response_ns(4), Some(200_000));
    // The read of sector 2000 never completes in the trace.
    assert_eq!(m.response_ns(5), None);
    // The completion on line 1 belongs to a request dispatched before the trace started.
    assert_eq!(m.unmatched_completions, 1);
    assert_eq!(m.len(), 3);
}

#[test]
fn a_blkparse_completion_before_its_dispatch_is_an_error_and_queue_events_are_refused() {
    let text = "\
8,0 0 1 0.000500000 1 D W 1000 + 8 [a]
8,0 0 2 0.000400000 0 C W 1000 + 8 [0]
";
    let path = write_temp("measured-blkparse-bad", ".txt", text.as_bytes());
    let e = measured_response_times(&path, &options(BLKPARSE, false))
        .unwrap_err()
        .to_string();
    assert!(e.contains("line 2") && e.contains("line 1"), "{e}");
    let queue = TraceOptions {
        blkparse_event: BlkparseEvent::Queue,
        ..options(BLKPARSE, false)
    };
    let e = measured_response_times(&path, &queue)
        .unwrap_err()
        .to_string();
    assert!(e.contains("D events"), "{e}");
}

#[test]
fn a_recording_measures_from_arrival_to_the_reply_and_a_validate_trace_its_access_time() {
    let m = measured_response_times(&data("storsim_record_sample.rec"), &TraceOptions::default())
        .unwrap();
    // Rows 4 to 7: `0,W,...,35000,35012` and `120000,R,...,180000,180004`, ...
    assert_eq!(m.response_ns(4), Some(35_012));
    assert_eq!(m.response_ns(5), Some(60_004));
    let text = "R Miss 100 8 1234.5 10.0\nW Hit 200 8 0.001 0\n";
    let path = write_temp("measured-validate", ".trace", text.as_bytes());
    let m = measured_response_times(&path, &TraceOptions::default()).unwrap();
    assert_eq!(m.response_ns(1), Some(1_234_500));
    assert_eq!(m.response_ns(2), Some(1));
}

#[test]
fn a_format_without_measured_times_is_refused_naming_those_with_them() {
    let e = measured_response_times(&data("spc_sample.spc"), &TraceOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("spc") && e.contains("msr") && e.contains("blkparse"),
        "{e}"
    );
}

#[test]
fn every_format_that_measures_reads_times_from_its_sample_and_the_others_refuse() {
    for format in TraceFormat::all() {
        let prefix = format!("{}_sample", format.name().replace('-', "_"));
        let samples: Vec<_> = std::fs::read_dir(common::data_dir())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with(&prefix)
            })
            .collect();
        // Every measuring format has its sample under the registry's name; a few others name
        // theirs by version (fio's), and are checked where their sample is found.
        assert!(
            !samples.is_empty() || !format.measures_response_times(),
            "no sample for {format}"
        );
        for sample in samples {
            let opts = TraceOptions {
                format: Some(format),
                ..TraceOptions::default()
            };
            let measured = measured_response_times(&sample, &opts);
            if format.measures_response_times() {
                let m = measured.unwrap_or_else(|e| panic!("{}: {e}", sample.display()));
                assert!(!m.is_empty(), "{}: no measured time", sample.display());
            } else {
                assert!(measured.is_err(), "{format} measured times");
            }
        }
    }
}
