//! Parsing on a second thread changes nothing a caller can see: for every checked-in sample
//! and every shared trace, under each bad-record policy and device selection, the threaded and
//! the single-thread reader yield the same records and errors in the same order, with the same
//! skipped and ignored counts after every item, and `open` fails (or not) with the same
//! message. A workload dropped before its end does not hang.

mod common;

use common::{data, data_dir, write_temp};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;
use storsim_workload::trace::{open, BlkparseEvent, DeviceSelection, TraceOptions};
use storsim_workload::Record;
use tempfile::TempPath;

/// What a caller can observe of one read of a trace: either `open`'s error, or each item (a
/// record or an error's message) with the skipped and ignored counts just after it, and the
/// counts after the end.
#[derive(Debug, PartialEq)]
enum Observed {
    OpenFailed(String),
    Read {
        items: Vec<(Result<Record, String>, u64, u64)>,
        end: (u64, u64),
    },
}

fn observe(path: &Path, opts: &TraceOptions) -> Observed {
    let workload = match open(path, opts) {
        Ok(w) => w,
        Err(e) => return Observed::OpenFailed(e.to_string()),
    };
    let (skipped, ignored) = (workload.skipped.clone(), workload.ignored.clone());
    let mut items = Vec::new();
    for item in workload.records {
        items.push((
            item.map_err(|e| e.to_string()),
            skipped.get(),
            ignored.get(),
        ));
    }
    Observed::Read {
        items,
        end: (skipped.get(), ignored.get()),
    }
}

/// Reads `path` both ways under each option set and asserts that they agree. Returns how many
/// option sets yielded at least one error item or failed to open, so that callers can check
/// that the errors were exercised at all.
fn compare(path: &Path, option_sets: &[TraceOptions]) -> usize {
    let mut with_errors = 0;
    for opts in option_sets {
        let single = observe(
            path,
            &TraceOptions {
                parse_thread: false,
                ..opts.clone()
            },
        );
        let threaded = observe(
            path,
            &TraceOptions {
                parse_thread: true,
                ..opts.clone()
            },
        );
        assert_eq!(
            threaded,
            single,
            "{} with {opts:?}: threaded and single-thread reads differ",
            path.display()
        );
        match &single {
            Observed::OpenFailed(_) => with_errors += 1,
            Observed::Read { items, .. } => {
                if items.iter().any(|(item, _, _)| item.is_err()) {
                    with_errors += 1;
                }
            }
        }
    }
    with_errors
}

/// Every combination of bad-record policy, device selection and blkparse event.
fn all_option_sets() -> Vec<TraceOptions> {
    let mut sets = Vec::new();
    for skip_bad in [false, true] {
        for devices in [
            DeviceSelection::Concat,
            DeviceSelection::Overlay,
            DeviceSelection::only([0]),
            DeviceSelection::only([1]),
            DeviceSelection::only([0, 1]),
        ] {
            for blkparse_event in [BlkparseEvent::Dispatch, BlkparseEvent::Queue] {
                sets.push(TraceOptions {
                    skip_bad,
                    devices: devices.clone(),
                    blkparse_event,
                    ..TraceOptions::default()
                });
            }
        }
    }
    sets
}

fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && p.extension().is_none_or(|e| e != "md"))
        .collect();
    files.sort();
    files
}

#[test]
fn the_samples_read_the_same_on_one_thread_and_two() {
    let files = files_in(&data_dir());
    assert!(files.len() >= 18, "{files:?}");
    for file in &files {
        let with_errors = compare(file, &all_option_sets());
        let name = file.file_name().unwrap().to_str().unwrap();
        if name.contains("_bad") {
            // Without skip_bad, at least the overlaid read meets the bad records.
            assert!(with_errors > 0, "{name}: no option set produced an error");
        }
    }
}

#[test]
fn the_shared_traces_read_the_same_on_one_thread_and_two() {
    let Some(dir) = storsim_testenv::shared("traces") else {
        return;
    };
    let option_sets: Vec<TraceOptions> = [
        (false, DeviceSelection::Concat),
        (true, DeviceSelection::Concat),
        (false, DeviceSelection::Overlay),
        (false, DeviceSelection::only([1])),
    ]
    .into_iter()
    .map(|(skip_bad, devices)| TraceOptions {
        skip_bad,
        devices,
        ..TraceOptions::default()
    })
    .collect();
    let mut count = 0;
    let mut subdirs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    subdirs.sort();
    for sub in subdirs {
        for file in files_in(&sub) {
            compare(&file, &option_sets);
            count += 1;
        }
    }
    assert!(count > 0, "no trace files in {}", dir.display());
    eprintln!("{count} shared trace files read the same on one thread and two");
}

/// An MQSim trace of `lines` requests over four devices, large enough that the parse thread
/// fills the channel and waits. The file is removed when the returned path drops.
fn generated(lines: u64) -> TempPath {
    let mut text = String::new();
    for i in 0..lines {
        text += &format!(
            "{} {} {} 8 {}\n",
            i * 1000,
            i % 4,
            (i * 7919) % 1_000_000,
            i % 2
        );
    }
    write_temp("parse-thread", ".trace", text.as_bytes())
}

/// Runs `f` on a thread of its own and fails if it has not finished within a minute, so that a
/// hang is a failure rather than a test that never ends.
fn within_a_minute(what: &str, f: impl FnOnce() + Send + 'static) {
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || {
        f();
        done.send(()).unwrap();
    });
    match finished.recv_timeout(Duration::from_secs(60)) {
        Ok(()) => {}
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{what}: still running after a minute"),
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("{what}: panicked"),
    }
}

#[test]
fn dropping_a_workload_early_does_not_hang() {
    let big = generated(200_000);
    let mut cases: Vec<(PathBuf, TraceOptions)> = Vec::new();
    for devices in [
        DeviceSelection::Concat,
        DeviceSelection::Overlay,
        // A device that never appears: the thread reads to the end without sending a batch.
        DeviceSelection::only([99]),
    ] {
        cases.push((
            big.to_path_buf(),
            TraceOptions {
                devices,
                ..TraceOptions::default()
            },
        ));
    }
    for name in ["msr_sample.csv", "msr_bad.csv", "blkparse_sample.txt"] {
        // Overlaid, since concatenating the bad sample fails in `open`'s sizing pass.
        let opts = TraceOptions {
            devices: DeviceSelection::Overlay,
            ..TraceOptions::default()
        };
        cases.push((data(name), opts));
    }
    for (path, opts) in cases {
        for take in [0, 3, 5000] {
            let (p, o) = (path.clone(), opts.clone());
            within_a_minute(&format!("{} take({take})", path.display()), move || {
                let workload = open(&p, &o).unwrap();
                let first: Vec<_> = workload.records.take(take).collect();
                assert!(first.len() <= take);
                // Dropping the iterator here stops and joins the parse thread.
            });
        }
        // Opened and dropped without reading anything.
        let (p, o) = (path.clone(), opts.clone());
        within_a_minute(&format!("{} unread", path.display()), move || {
            drop(open(&p, &o).unwrap());
        });
    }
    // The first records are the same as a single-thread read's.
    let threaded: Vec<_> = open(&big, &TraceOptions::default())
        .unwrap()
        .records
        .take(3)
        .map(Result::unwrap)
        .collect();
    let single: Vec<_> = open(
        &big,
        &TraceOptions {
            parse_thread: false,
            ..TraceOptions::default()
        },
    )
    .unwrap()
    .records
    .take(3)
    .map(Result::unwrap)
    .collect();
    assert_eq!(threaded, single);
    std::fs::remove_file(&big).unwrap();
}

#[test]
fn a_generated_multi_device_trace_reads_the_same_on_one_thread_and_two() {
    // Many batches, four devices laid out one after another.
    let path = generated(50_000);
    compare(&path, &all_option_sets());
    std::fs::remove_file(&path).unwrap();
}
