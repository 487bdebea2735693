//! Hostile input: random bytes, mutated samples, every sample read as every format. Parsers
//! may reject anything but must never panic, and each stream must end.
//!
//! The inputs come from a seeded generator; the seed is printed so that a failure can be
//! reproduced.

mod common;

use common::{data_dir, temp_path};
use std::path::{Path, PathBuf};
use storsim_core::Prng;
use storsim_workload::trace::{detect, inspect, open, DeviceSelection, TraceFormat, TraceOptions};

const SEED: u64 = 0x5eed_7ace;

/// Reads `path` as every format, with every bad-record policy and device selection, to the end.
fn read_every_way(path: &Path) {
    let _ = detect(path);
    for format in TraceFormat::all() {
        for skip_bad in [false, true] {
            for devices in [
                DeviceSelection::Concat,
                DeviceSelection::Overlay,
                DeviceSelection::only([1]),
            ] {
                let opts = TraceOptions {
                    format: Some(format),
                    skip_bad,
                    devices,
                    ..TraceOptions::default()
                };
                if let Ok(workload) = open(path, &opts) {
                    // A bounded number of items: a stream that never ended would fail here.
                    let n = workload.records.take(100_000).count();
                    assert!(
                        n < 100_000,
                        "{} as {format}: the stream did not end",
                        path.display()
                    );
                }
            }
        }
        let _ = open(
            path,
            &TraceOptions {
                format: Some(format),
                ..TraceOptions::default()
            },
        )
        .map(inspect);
    }
}

fn samples() -> Vec<Vec<u8>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(data_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files.iter().map(|f| std::fs::read(f).unwrap()).collect()
}

#[test]
fn every_sample_as_every_format() {
    for entry in std::fs::read_dir(data_dir()).unwrap() {
        read_every_way(&entry.unwrap().path());
    }
}

#[test]
fn random_and_mutated_inputs_never_panic() {
    eprintln!("seed {SEED:#x}");
    let mut rng = Prng::new(SEED);
    let samples = samples();
    let path = temp_path("hostile", "");
    let interesting: [&[u8]; 13] = [
        b"18446744073709551615",
        b"18446744073709551616",
        b"99999999999999999999999",
        b"-1",
        b"0",
        b".",
        b",",
        b"\n",
        b"\t",
        b"\xff\xfe",
        b"$$TR_IOREC",
        b"fio version 3 iolog\n",
        b"# storsim-record v1\n",
    ];
    for round in 0..2000 {
        let mut bytes = match round % 3 {
            // Pure noise of a random length.
            0 => (0..rng.below(4096)).map(|_| rng.next_u64() as u8).collect(),
            // A sample with random bytes overwritten.
            1 => {
                let mut b = samples[rng.below(samples.len() as u64) as usize].clone();
                for _ in 0..=rng.below(8) {
                    if !b.is_empty() {
                        let at = rng.below(b.len() as u64) as usize;
                        b[at] = rng.next_u64() as u8;
                    }
                }
                b
            }
            // A sample with boundary values spliced in.
            _ => {
                let mut b = samples[rng.below(samples.len() as u64) as usize].clone();
                for _ in 0..=rng.below(4) {
                    let at = rng.below(b.len() as u64 + 1) as usize;
                    let piece = interesting[rng.below(interesting.len() as u64) as usize];
                    b.splice(at..at, piece.iter().copied());
                }
                b
            }
        };
        if round % 7 == 0 {
            // Binary formats see the same kinds of damage in their own layouts.
            let word = rng.next_u64().to_le_bytes();
            bytes.splice(0..0, word);
        }
        std::fs::write(&path, &bytes).unwrap();
        read_every_way(&path);
    }
    std::fs::remove_file(path).unwrap();
}

#[test]
fn a_file_without_newlines_is_one_overlong_line() {
    let path = temp_path("hostile-long", "");
    std::fs::write(&path, vec![b'7'; 200_000]).unwrap();
    let opts = TraceOptions {
        format: Some(TraceFormat::named("mqsim")),
        ..TraceOptions::default()
    };
    let err = open(&path, &opts)
        .err()
        .expect("the sizing pass reports the line");
    assert!(
        err.to_string()
            .ends_with("line 1: line is longer than 65536 bytes"),
        "{err}"
    );
    let opts = TraceOptions {
        skip_bad: true,
        ..opts
    };
    let workload = open(&path, &opts).unwrap();
    let skipped = workload.skipped.clone();
    assert_eq!(workload.records.count(), 0);
    assert_eq!(skipped.get(), 1);
    std::fs::remove_file(path).unwrap();
}
