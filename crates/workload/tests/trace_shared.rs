//! The real traces in `../shared` (beside the repository): each is detected as the right format
//! and parses completely, with no malformed record, to the request counts their provenance
//! notes state. The files are not part of the repository; without them these tests say so on
//! stderr and pass.

use std::path::{Path, PathBuf};
use storsim_core::Op;
use storsim_workload::trace::{
    self, detect, inspect, validate_measured_access_us, BlkparseEvent, DeviceSelection,
    TraceFormat, TraceOptions,
};
use storsim_workload::{Pacing, WorkloadError};

/// `../shared`, when its folder `sub` is there.
fn shared_with(sub: &str) -> Option<PathBuf> {
    // `sub` is one folder, so its parent is ../shared itself.
    storsim_testenv::shared(sub).map(|dir| dir.parent().expect("under ../shared").to_path_buf())
}

fn shared() -> Option<PathBuf> {
    shared_with("traces")
}

/// Other renderings of shared traces, which detection refuses with a hint at what they are.
const REFUSED: [(&str, &str); 2] = [
    (
        "traces/cloudphysics_vscsi/cloudPhysicsIO.csv",
        "libCacheSim",
    ),
    ("traces/fiu_mail_10k/smalltrace.csv", "pandas"),
];

/// Every file in `../shared/traces/*/` is either a trace with stated expectations or a
/// rendering that is refused: a trace added there later fails here until it has either.
#[test]
fn every_shared_trace_file_has_an_expectation() {
    let Some(shared) = shared() else { return };
    let mut files = Vec::new();
    for dir in std::fs::read_dir(shared.join("traces")).unwrap() {
        let dir = dir.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        for file in std::fs::read_dir(&dir).unwrap() {
            let file = file.unwrap().path();
            let name = file.file_name().unwrap().to_str().unwrap().to_string();
            if name.ends_with(".md") {
                continue;
            }
            let rel = file
                .strip_prefix(&shared)
                .unwrap()
                .to_str()
                .unwrap()
                .to_string();
            files.push(rel);
        }
    }
    files.sort();
    assert!(!files.is_empty());
    for rel in &files {
        let known =
            TRACES.iter().any(|e| e.path == rel) || REFUSED.iter().any(|(path, _)| path == rel);
        assert!(
            known,
            "{rel}: a file in ../shared/traces with no expectation; add it to TRACES or REFUSED"
        );
    }
    eprintln!("{} shared trace files, all with expectations", files.len());
}

struct Expect {
    path: &'static str,
    format: TraceFormat,
    requests: u64,
    /// Read percentage from the traces' README, to one decimal.
    read_percent: Option<f64>,
    /// Sequential percentage from the traces' README, to one decimal.
    sequential_percent: Option<f64>,
    /// Mean request size in KiB from the traces' README, to one decimal.
    mean_kib: Option<f64>,
    /// Span from the traces' README, in seconds, and the relative tolerance of its rounding.
    span_s: Option<(f64, f64)>,
}

const TRACES: [Expect; 7] = [
    Expect {
        path: "traces/financial1_ssdsim/Financial1_first10k.ssdsim.ascii",
        format: TraceFormat::named("mqsim"),
        requests: 10_000,
        read_percent: Some(40.8),
        mean_kib: Some(5.4),
        span_s: Some((260.0, 0.01)),
        sequential_percent: Some(45.3),
    },
    Expect {
        path: "traces/tpcc_mqsim/tpcc-small.trace",
        format: TraceFormat::named("mqsim"),
        requests: 6_999,
        read_percent: Some(62.6),
        mean_kib: Some(8.3),
        span_s: Some((0.14, 0.05)),
        sequential_percent: Some(1.2),
    },
    Expect {
        path: "traces/websearch_mqsim/wsrch-small.trace",
        format: TraceFormat::named("mqsim"),
        requests: 24_783,
        read_percent: Some(100.0),
        mean_kib: Some(15.1),
        span_s: Some((60.0, 0.01)),
        sequential_percent: Some(9.6),
    },
    Expect {
        path: "traces/msr_hm_0_sample/msr-cambridge1-sample.csv",
        format: TraceFormat::named("msr"),
        requests: 1_000,
        read_percent: Some(50.8),
        mean_kib: Some(9.5),
        span_s: Some((127.0, 0.01)),
        sequential_percent: Some(3.9),
    },
    Expect {
        path: "traces/cloudphysics_vscsi/cloudPhysicsIO.vscsi",
        format: TraceFormat::named("vscsi"),
        requests: 113_872,
        read_percent: Some(41.3),
        mean_kib: Some(36.1),
        span_s: Some((7200.0, 0.01)),
        sequential_percent: Some(26.0),
    },
    Expect {
        path: "traces/fiu_mail_10k/cheetah.cs.fiu.edu-110108-113008.1.first10k.blkparse",
        format: TraceFormat::named("fiu"),
        requests: 10_000,
        read_percent: Some(89.0),
        mean_kib: Some(4.0),
        span_s: Some((23.0, 0.02)),
        sequential_percent: Some(85.2),
    },
    Expect {
        path: "traces/blkparse_apress_java/blktrace.txt",
        format: TraceFormat::named("blkparse"),
        requests: 170,
        read_percent: None,
        mean_kib: None,
        span_s: None,
        sequential_percent: None,
    },
];

/// Reads a whole trace with the given options and returns (requests, ignored); fails on any
/// malformed record.
fn count(path: &Path, opts: &TraceOptions) -> (u64, u64) {
    let workload = trace::open(path, opts).unwrap_or_else(|e| panic!("{e}"));
    let ignored = workload.ignored.clone();
    let skipped = workload.skipped.clone();
    let mut n = 0;
    for item in workload.records {
        item.unwrap_or_else(|e| panic!("{e}"));
        n += 1;
    }
    assert_eq!(skipped.get(), 0, "{}", path.display());
    (n, ignored.get())
}

#[test]
fn shared_traces_detect_and_parse_completely() {
    let Some(shared) = shared() else { return };
    for expect in &TRACES {
        let path = shared.join(expect.path);
        assert_eq!(
            detect(&path).unwrap_or_else(|e| panic!("{e}")),
            expect.format,
            "{}",
            expect.path
        );
        let opts = TraceOptions {
            skip_bad: false,
            ..TraceOptions::default()
        };
        let (requests, ignored) = count(&path, &opts);
        assert_eq!(requests, expect.requests, "{}", expect.path);
        assert_eq!(ignored, 0, "{}", expect.path);

        // The README's statistics look at offsets as the trace states them, devices overlaid.
        let opts = TraceOptions {
            devices: DeviceSelection::Overlay,
            ..TraceOptions::default()
        };
        let c = inspect(trace::open(&path, &opts).unwrap()).unwrap();
        eprintln!(
            "{}: {} requests, read {:?} %, sequential {:?}, span {} ns, devices {}",
            expect.path,
            c.requests,
            c.read_percent,
            c.sequential_fraction,
            c.span_ns,
            c.per_device.len()
        );
        if let (Some(want), Some(got)) = (expect.read_percent, c.read_percent) {
            assert!(
                (got - want).abs() < 0.05,
                "{}: read {got} % vs {want} %",
                expect.path
            );
        }
        if let Some(want) = expect.mean_kib {
            let got = (c.bytes_read + c.bytes_written) as f64 / c.requests as f64 / 1024.0;
            assert!(
                (got - want).abs() < 0.05,
                "{}: mean {got} KiB vs {want} KiB",
                expect.path
            );
        }
        if let Some((want, tolerance)) = expect.span_s {
            let got = c.span_ns as f64 / 1e9;
            assert!(
                (got - want).abs() <= want * tolerance,
                "{}: span {got} s vs {want} s",
                expect.path
            );
        }
        if let (Some(want), Some(got)) = (expect.sequential_percent, c.sequential_fraction) {
            let got = got * 100.0;
            assert!(
                (got - want).abs() < 0.05,
                "{}: sequential {got} % vs {want} %",
                expect.path
            );
        }
    }
}

#[test]
fn blkparse_queue_events_count_as_stated() {
    let Some(shared) = shared() else { return };
    let path = shared.join("traces/blkparse_apress_java/blktrace.txt");
    let opts = TraceOptions {
        blkparse_event: BlkparseEvent::Queue,
        ..TraceOptions::default()
    };
    assert_eq!(count(&path, &opts), (15_524, 0));
}

#[test]
fn other_renderings_are_refused_with_an_explanation() {
    let Some(shared) = shared() else { return };
    for (file, hint) in REFUSED {
        let path = shared.join(file);
        match detect(&path) {
            Err(WorkloadError::Malformed {
                source,
                position,
                message,
            }) => {
                assert!(source.ends_with(Path::new(file).file_name().unwrap().to_str().unwrap()));
                assert_eq!(position, "line 1");
                assert!(message.contains(hint), "{message}");
            }
            other => panic!("{file}: expected a detection error, got {other:?}"),
        }
    }
}

#[test]
fn disksim_validation_data_detects_and_parses() {
    let Some(shared) = shared_with("disksim-valid") else {
        return;
    };
    let dir = shared.join("disksim-valid");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("trace") {
            continue;
        }
        seen += 1;
        let lines = std::fs::read_to_string(&path).unwrap().lines().count() as u64;
        let expected = if path.file_name().unwrap() == "ascii.trace" {
            TraceFormat::named("disksim-ascii")
        } else {
            TraceFormat::named("validate")
        };
        assert_eq!(detect(&path).unwrap(), expected, "{}", path.display());
        assert_eq!(
            count(&path, &TraceOptions::default()),
            (lines, 0),
            "{}",
            path.display()
        );
        if expected == TraceFormat::named("validate") {
            let workload = trace::open(&path, &TraceOptions::default()).unwrap();
            assert_eq!(workload.pacing, Pacing::Closed { depth: 1 });
            let access: Vec<f64> = validate_measured_access_us(&path)
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            assert_eq!(access.len() as u64, lines);
            assert!(
                access.iter().all(|&us| us > 0.0 && us < 1e6),
                "{}",
                path.display()
            );
        }
    }
    assert_eq!(seen, 12);
}

#[test]
fn hp_srt_week_trace_parses() {
    let Some(shared) = shared_with("disksim-valid") else {
        return;
    };
    let path = shared.join("disksim-valid/ajw.1week.srt");
    assert_eq!(detect(&path).unwrap(), TraceFormat::named("hp-srt"));
    assert_eq!(count(&path, &TraceOptions::default()), (44_519, 0));
    let opts = TraceOptions {
        devices: DeviceSelection::Overlay,
        ..TraceOptions::default()
    };
    let c = inspect(trace::open(&path, &opts).unwrap()).unwrap();
    eprintln!("ajw: {c:?}");
    assert_eq!(c.per_device.keys().copied().collect::<Vec<_>>(), vec![0, 1]);
    assert!(c.count(Op::Read) > 0 && c.count(Op::Write) > 0);
    // Seven days of trace.
    assert!(c.span_ns > 6 * 86_400 * 1_000_000_000 && c.span_ns < 8 * 86_400 * 1_000_000_000);
}
