//! HP SRT binary traces: hand-built records with and without the ASCII header, malformed
//! records and the bad-record policy. The samples are built here byte by byte.

mod common;

use common::{expect_malformed, options, write_temp};
use storsim_core::Op;
use storsim_workload::trace::{detect, open, TraceFormat};
use storsim_workload::{Origin, Pacing, Record};

const FORMAT: TraceFormat = TraceFormat::named("hp-srt");

const HEADER: &[u8] =
    b"$$TR_IOREC-1.3 (test)\x00\nversion = 1.3;\ntracedate = \"Sat May 30 00:03:06 1992\";\n\x0c";

const SHORT_IO: u32 = 1;
const SUSPECT_IO: u32 = 4;

struct Io {
    version: u32,
    kind: u32,
    seconds: u32,
    micros: u32,
    bytes: u32,
    sector: u32,
    device: u32,
    flags: u32,
}

/// Encodes a record as big-endian words, with the optional words its version and type call for.
fn encode(io: &Io) -> Vec<u8> {
    let mut words = vec![
        0,
        io.version << 16 | io.kind,
        io.seconds,
        io.micros,
        0xae,
        0x4ce7,
        io.bytes,
        io.sector,
        io.device,
        4,
        1,
        io.flags,
        0x0007_0000,
    ];
    if io.version == 4 {
        words.push(1);
    }
    if io.kind == SUSPECT_IO {
        words.push(0);
    }
    words[0] = (words.len() * 4) as u32;
    words.iter().flat_map(|w| w.to_be_bytes()).collect()
}

fn io(version: u32, kind: u32, bytes: u32, sector: u32, device: u32, flags: u32) -> Io {
    Io {
        version,
        kind,
        seconds: 2,
        micros: 500,
        bytes,
        sector,
        device,
        flags,
    }
}

fn records_body() -> Vec<u8> {
    [
        encode(&Io {
            seconds: 0,
            micros: 0,
            ..io(4, SHORT_IO, 4096, 270_344, 0x0800_0008, 0x1b)
        }),
        encode(&io(4, SUSPECT_IO, 4096, 1, 0x0800_0008, 0x1b)),
        encode(&io(1, SHORT_IO, 8192, 16, 0x0800_0107, 0x100)),
    ]
    .concat()
}

fn expected(base: u64) -> Vec<Record> {
    vec![
        Record {
            timestamp_ns: 0,
            op: Op::Read,
            offset_bytes: 270_344 * 512,
            len_bytes: 4096,
            dev: 0,
            think_ns: 0,
            origin: base,
        },
        Record {
            timestamp_ns: 2_000_500_000,
            op: Op::Write,
            offset_bytes: 16 * 512,
            len_bytes: 8192,
            dev: 1,
            think_ns: 0,
            origin: base + 56 + 60,
        },
    ]
}

#[test]
fn sample_with_header_parses_to_exact_records() {
    let path = write_temp("hp", ".srt", &[HEADER, &records_body()].concat());
    assert_eq!(detect(&path).unwrap(), TraceFormat::named("hp-srt"));
    let workload = open(&path, &options(FORMAT, false)).unwrap();
    let ignored = workload.ignored.clone();
    assert_eq!(
        (workload.pacing, workload.origin),
        (Pacing::Open, Origin::ByteOffset)
    );
    let records: Vec<Record> = workload.records.map(Result::unwrap).collect();
    // The suspect-I/O record is ignored, as DiskSim skips it.
    assert_eq!(records, expected(HEADER.len() as u64));
    assert_eq!(ignored.get(), 1);
    std::fs::remove_file(path).unwrap();
}

#[test]
fn headerless_hpl2_sample_parses_to_exact_records() {
    let path = write_temp("hp", ".srt", &records_body());
    assert_eq!(detect(&path).unwrap(), TraceFormat::named("hp-srt"));
    let records: Vec<Record> = open(&path, &options(FORMAT, false))
        .unwrap()
        .records
        .map(Result::unwrap)
        .collect();
    assert_eq!(records, expected(0));
    std::fs::remove_file(path).unwrap();
}

fn bad_body() -> Vec<u8> {
    [
        encode(&io(1, SHORT_IO, 4096, 1, 0x0800_0008, 1)),
        encode(&io(1, SHORT_IO, 1000, 1, 0x0800_0008, 1)),
        encode(&io(1, 2, 4096, 1, 0x0800_0008, 1)),
        encode(&io(1, SHORT_IO, 4096, 0x8000_0000, 0x0800_0008, 1)),
        encode(&io(1, SHORT_IO, 512, 9, 0x0800_0008, 0)),
    ]
    .concat()
}

#[test]
fn malformed_record_names_file_byte_and_expectation() {
    let path = write_temp("hp", ".srt", &bad_body());
    let items: Vec<_> = open(&path, &options(FORMAT, false))
        .unwrap()
        .records
        .collect();
    assert_eq!(items.len(), 2);
    expect_malformed(
        &items[1],
        &path,
        "byte 52",
        "expected a positive request size that is a multiple of 512 bytes, found 1000",
    );
    std::fs::remove_file(path).unwrap();
}

#[test]
fn skip_bad_counts_every_bad_record() {
    let path = write_temp("hp", ".srt", &bad_body());
    let workload = open(&path, &options(FORMAT, true)).unwrap();
    let skipped = workload.skipped.clone();
    let origins: Vec<u64> = workload.records.map(|r| r.unwrap().origin).collect();
    // A size that is not a multiple of 512, an unknown record type and a negative sector.
    assert_eq!(origins, vec![0, 208]);
    assert_eq!(skipped.get(), 3);
    std::fs::remove_file(path).unwrap();
}

#[test]
fn unbelievable_sizes_and_unterminated_headers_are_reported() {
    let mut garbage = encode(&io(1, SHORT_IO, 4096, 1, 0x0800_0008, 1));
    garbage.extend_from_slice(&[0xff; 16]);
    let path = write_temp("hp", ".srt", &garbage);
    let items: Vec<_> = open(&path, &options(FORMAT, true))
        .unwrap()
        .records
        .collect();
    assert!(items[0].is_ok());
    let err = items[1].as_ref().unwrap_err().to_string();
    assert!(
        err.contains("byte 52: expected a record version from 1 to 4"),
        "{err}"
    );
    assert!(err.contains("cannot be found"), "{err}");
    std::fs::remove_file(path).unwrap();

    let path = write_temp("hp", ".srt", b"$$TR_IOREC-1.3 no end");
    let err = open(&path, &options(FORMAT, false))
        .unwrap()
        .records
        .next()
        .unwrap()
        .unwrap_err();
    assert!(err.to_string().contains("header never ends"), "{err}");
    std::fs::remove_file(path).unwrap();
}
